/* examples/embed/embed.c: a program that embeds gop through the installed
 * library only (gop.h and libgop.so), as a framework would.
 *
 * It compiles an operator of its own next to the standard library's, runs
 * both on a small graph made from its own arrays, and checks the results
 * by hand. With a GPU the runs go there; without one they run on the
 * reference interpreter, so the program works (and is tested in CI) on
 * any machine. Build it with pkg-config or CMake (see README.md here). */
#include <gop.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *my_ops =
    "# Y[v] = 2 * the largest X[src(e)] over v's in-edges.\n"
    "op twice_max(X: f32[src, F]) -> Y: f32[dst, F] {\n"
    "  tensor M: f32[dst, F]\n"
    "  for v in dst { for e in in_edges(v) { for f in 0..F {\n"
    "    M[v, f] max= X[src(e), f] } } }\n"
    "  for v in dst { for f in 0..F { Y[v, f] = 2.0 * M[v, f] } }\n"
    "}\n";

/* Runs `op` with one input X [4, 2] and one output Y [4, 2]. */
static int run(GopContext *ctx, GopOp *op, GopGraph *g, float *x, float *y) {
  GopRun *r = gop_run_new(ctx, op, g);
  if (!r || gop_run_set_extent(r, "F", 2) != 0 || gop_run_bind(r, "X", x, 8) != 0 ||
      gop_run_bind(r, "Y", y, 8) != 0)
    return -1;
  gop_run_set_timing(r, 0, 0);
  if (gop_run_exec(r) != 0) return -1;
  printf("%s ran on %s\n", gop_op_name(op), gop_run_stats(r)->device);
  return 0;
}

int main(void) {
  printf("gop %s\n", GOP_VERSION);
  GopContext *ctx = gop_context_new();
  /* a 4-cycle 0 -> 1 -> 2 -> 3 -> 0, plus 0 -> 2 */
  int64_t src[] = {0, 1, 2, 3, 0}, dst[] = {1, 2, 3, 0, 2};
  GopGraph *g = gop_graph_from_arcs(ctx, 4, 5, src, dst, "cycle");
  GopModule *std = gop_stdlib(ctx);
  GopModule *mine = gop_compile_string(ctx, "my_ops.gop", my_ops);
  if (!g || !std || !mine) {
    fputs(gop_diagnostics(ctx), stderr);
    return 1;
  }
  GopOp *sum = gop_module_find_op(std, "copy_u_sum");
  GopOp *twice = gop_module_find_op(mine, "twice_max");
  printf("%s\n%s\n", gop_op_signature(sum), gop_op_signature(twice));
  float x[8] = {1, 10, 2, 20, 3, 30, 4, 40}, y[8], z[8];
  if (run(ctx, sum, g, x, y) != 0 || run(ctx, twice, g, x, z) != 0) {
    fputs(gop_diagnostics(ctx), stderr);
    return 1;
  }
  /* in-neighbours: 0 <- 3; 1 <- 0; 2 <- 1, 0; 3 <- 2 */
  const float want_sum[8] = {4, 40, 1, 10, 3, 30, 3, 30};
  const float want_twice[8] = {8, 80, 2, 20, 4, 40, 6, 60};
  int bad = 0;
  for (int i = 0; i < 8; i++) {
    bad += fabsf(y[i] - want_sum[i]) > 1e-6f;
    bad += fabsf(z[i] - want_twice[i]) > 1e-6f;
  }
  char dev[256], key[17];
  int status = gop_device_status(dev, sizeof dev);
  printf("GPU: %s\n", status == 0 ? dev : "none");
  if (gop_kernel_key(sum, NULL, key) == 0) printf("kernel cache key of %s: %s\n", gop_op_name(sum), key);
  printf("%s\n", bad ? "WRONG RESULTS" : "results ok");
  gop_context_free(ctx);
  return bad ? 1 : 0;
}
