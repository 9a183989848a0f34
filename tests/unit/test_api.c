/* tests/unit/test_api.c: the public C API (include/gop.h), as a framework
 * embedding gop uses it: compile, find operators, open graphs, bind
 * buffers, run, and get clear errors for every misuse. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gop.h"
#include "testutil.h"

static const char *weighted =
    "op wsum(X: f32[src, F], W: f32[edge]) -> Y: f32[dst, F] {\n"
    "  for v in dst {\n"
    "    for e in in_edges(v) {\n"
    "      for f in 0..F {\n"
    "        Y[v, f] += X[src(e), f] * W[e]\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

#define ASSERT_DIAG_HAS(ctx, s)                                         \
  ck_assert_msg(strstr(gop_diagnostics(ctx), (s)) != NULL,             \
                "expected '%s' in diagnostics:\n%s", (s), gop_diagnostics(ctx))

START_TEST(compile_and_run_from_string) {
  GopContext *ctx = gop_context_new();
  GopModule *m = gop_compile_string(ctx, "w.gop", weighted);
  ck_assert_ptr_nonnull(m);
  ck_assert_int_eq(gop_module_num_ops(m), 1);
  GopOp *op = gop_module_find_op(m, "wsum");
  ck_assert_ptr_nonnull(op);
  ck_assert_str_eq(gop_op_signature(op),
                   "wsum(X: f32[src, F], W: f32[edge]) -> Y: f32[dst, F]");
  GopGraph *g = gop_graph_open(ctx, tu_source("tests/data/tiny.mtx"));
  ck_assert_ptr_nonnull(g);
  GopGraphInfo info;
  gop_graph_info(g, &info);
  ck_assert_int_eq(info.num_vertices, 4);
  ck_assert_int_eq(info.num_edges, 5);

  GopRun *r = gop_run_new(ctx, op, g);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(gop_run_num_tensors(r), 3);
  ck_assert_str_eq(gop_run_tensor_name(r, 2), "Y");
  ck_assert(gop_run_tensor_is_output(r, 2));
  int64_t shape[8];
  ck_assert_int_eq(gop_run_tensor_shape(r, 0, shape), -1); /* F not set yet */
  ck_assert_int_eq(gop_run_set_extent(r, "F", 2), 0);
  ck_assert_int_eq(gop_run_tensor_shape(r, 0, shape), 2);
  ck_assert_int_eq(shape[0], 4);
  ck_assert_int_eq(shape[1], 2);
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, w[5] = {1, 2, 3, 4, 5}, y[8];
  ck_assert_int_eq(gop_run_bind(r, "X", x, 8), 0);
  ck_assert_int_eq(gop_run_bind(r, "W", w, 5), 0);
  ck_assert_int_eq(gop_run_bind(r, "Y", y, 8), 0);
  ck_assert_int_eq(gop_run_exec(r), 0);
  const float want[8] = {20, 24, 1, 2, 46, 56, 0, 0};
  for (int i = 0; i < 8; i++) ck_assert_float_eq(y[i], want[i]);
  ck_assert_int_eq(gop_error_count(ctx), 0);
  gop_context_free(ctx);
}
END_TEST

START_TEST(misuse_is_reported) {
  GopContext *ctx = gop_context_new();
  ck_assert_ptr_null(gop_compile_string(ctx, "bad.gop", "op (\n"));
  ck_assert_int_gt(gop_error_count(ctx), 0);
  ASSERT_DIAG_HAS(ctx, "bad.gop:1:");
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_error_count(ctx), 0);
  ck_assert_str_eq(gop_diagnostics(ctx), "");

  ck_assert_ptr_null(gop_compile_string(ctx, "n.gop", NULL));
  ASSERT_DIAG_HAS(ctx, "source is NULL");
  ck_assert_ptr_null(gop_compile_file(ctx, "/no/such/file.gop"));
  ASSERT_DIAG_HAS(ctx, "/no/such/file.gop");
  ck_assert_ptr_null(gop_graph_open(ctx, ""));
  ck_assert_ptr_null(gop_graph_open(ctx, NULL));

  GopModule *m = gop_compile_string(ctx, "w.gop", weighted);
  ck_assert_ptr_nonnull(m);
  ck_assert_ptr_null(gop_module_find_op(m, "nope"));
  ASSERT_DIAG_HAS(ctx, "no operator named 'nope' (there is: wsum)");
  ck_assert_ptr_null(gop_module_op(m, 5));
  ck_assert_ptr_null(gop_run_new(ctx, gop_module_op(m, 0), NULL));

  GopGraph *g = gop_graph_open(ctx, "grid:3x3");
  GopRun *r = gop_run_new(ctx, gop_module_op(m, 0), g);
  float buf[1000];
  ck_assert_int_eq(gop_run_bind(r, "X", buf, 18), -1); /* F unset */
  ASSERT_DIAG_HAS(ctx, "extent F of tensor X is not set");
  ck_assert_int_eq(gop_run_set_extent(r, "H", 2), -1);
  ASSERT_DIAG_HAS(ctx, "no extent named 'H'");
  ck_assert_int_eq(gop_run_set_extent(r, "F", -1), -1);
  ck_assert_int_eq(gop_run_set_extent(r, "F", 2), 0);
  ck_assert_int_eq(gop_run_bind(r, "X", buf, 17), -1);
  ASSERT_DIAG_HAS(ctx, "tensor X needs 18 elements on this graph, got 17");
  ck_assert_int_eq(gop_run_bind(r, "Q", buf, 17), -1);
  ASSERT_DIAG_HAS(ctx, "no input or output named 'Q'");
  ck_assert_int_eq(gop_run_bind(r, "X", NULL, 18), -1);
  ck_assert_int_eq(gop_run_exec(r), -1); /* nothing bound */
  ASSERT_DIAG_HAS(ctx, "input X is not bound");
  ck_assert_int_eq(gop_run_bind(r, "X", buf, 18), 0);
  ck_assert_int_eq(gop_run_bind(r, "W", buf + 100, 24), 0);
  ck_assert_int_eq(gop_run_exec(r), -1);
  ASSERT_DIAG_HAS(ctx, "output Y is not bound");
  /* Changing an extent after binding invalidates the old buffers. */
  ck_assert_int_eq(gop_run_bind(r, "Y", buf + 200, 18), 0);
  ck_assert_int_eq(gop_run_set_extent(r, "F", 3), 0);
  ck_assert_int_eq(gop_run_exec(r), -1);
  ASSERT_DIAG_HAS(ctx, "is not bound with its current shape");
  gop_context_free(ctx);
}
END_TEST

START_TEST(stdlib_and_emit) {
  GopContext *ctx = gop_context_new();
  GopModule *m = gop_stdlib(ctx);
  ck_assert_ptr_nonnull(m);
  ck_assert_int_ge(gop_module_num_ops(m), 8);
  const char *required[] = {"copy_u_sum", "u_mul_e_sum", "copy_u_max", "copy_u_mean",
                            "u_dot_v",    "u_add_v",     "e_mul_u",    "edge_softmax"};
  for (int i = 0; i < 8; i++) {
    GopOp *op = gop_module_find_op(m, required[i]);
    ck_assert_msg(op != NULL, "stdlib lacks %s", required[i]);
    char *ir = gop_emit(op, GOP_STAGE_IR);
    ck_assert_ptr_nonnull(ir);
    ck_assert(strstr(ir, required[i]) != NULL);
    free(ir);
    char *ast = gop_emit(op, GOP_STAGE_AST);
    ck_assert_ptr_nonnull(ast);
    free(ast);
  }
  ck_assert_int_eq(gop_stage_lookup("ir"), GOP_STAGE_IR);
  ck_assert_int_eq(gop_stage_lookup("ptx-ish"), -1);
  gop_context_free(ctx);
}
END_TEST

START_TEST(npy_through_the_api) {
  GopContext *ctx = gop_context_new();
  float data[6] = {1, -2, 3.5f, 4, 5, 6};
  GopArray a = {.ndim = 2, .shape = {2, 3}, .data = data};
  char path[512];
  snprintf(path, sizeof path, "%s/a.npy", tu_tmpdir());
  ck_assert_int_eq(gop_array_write(ctx, path, &a), 0);
  GopArray b;
  ck_assert_int_eq(gop_array_read(ctx, path, &b), 0);
  ck_assert_int_eq(b.ndim, 2);
  ck_assert_int_eq(b.shape[1], 3);
  ck_assert_float_eq(b.data[2], 3.5f);
  gop_array_free(&b);
  ck_assert_int_eq(gop_array_read(ctx, "/no/such.npy", &b), -1);
  ck_assert_ptr_null(b.data);
  gop_context_free(ctx);
}
END_TEST

/* What the REPL needs: named schedules, loop names, saving a schedule. */
START_TEST(repl_support) {
  GopContext *ctx = gop_context_new();
  char src[1024];
  snprintf(src, sizeof src, "%sschedule mine(A) {\n  split(f, A)\n}\n", weighted);
  GopModule *m = gop_compile_string(ctx, "w.gop", src);
  ck_assert_ptr_nonnull(m);
  GopOp *wsum = gop_module_op(m, 0);
  ck_assert_str_eq(gop_op_schedule_signature(wsum, 0), "mine(A)"); /* its file's first */
  ck_assert_int_eq(gop_op_num_schedules(wsum), 1 + gop_op_num_schedules(
                                                       gop_module_op(gop_stdlib(ctx), 0)));
  GopOp *op = gop_module_find_op(gop_stdlib(ctx), "copy_u_sum");
  ck_assert_ptr_nonnull(op);
  int n = gop_op_num_schedules(op);
  ck_assert_int_ge(n, 6);
  ck_assert_str_eq(gop_op_schedule_signature(op, 1), "warp_vertex(G, T)");
  ck_assert_ptr_null(gop_op_schedule_signature(op, n));

  char *loops = gop_op_loop_names(op, NULL);
  ck_assert_str_eq(loops, "v e f");
  free(loops);
  loops = gop_op_loop_names(op, "split(f, 32) -> (fo, fi); fuse(v, e)");
  ck_assert_str_eq(loops, "e fo fi");
  free(loops);
  ck_assert_ptr_null(gop_op_loop_names(op, "split(q, 2)"));
  ASSERT_DIAG_HAS(ctx, "loop 'q' does not exist");

  /* Appends, keeps what was there, refuses what would not compile. */
  char path[512];
  snprintf(path, sizeof path, "%s/saved.gop", tu_tmpdir());
  remove(path);
  ck_assert_int_eq(gop_save_schedule(ctx, path, "first", "split(f, 32); fuse(v, e)"), 0);
  ck_assert_int_eq(gop_save_schedule(ctx, path, "second", "gas()"), 0);
  gop_clear_diagnostics(ctx);
  ck_assert_int_eq(gop_save_schedule(ctx, path, "first", "gar()"), -1);
  ASSERT_DIAG_HAS(ctx, "duplicate schedule");
  ck_assert_int_eq(gop_save_schedule(ctx, path, "2nd", "gar()"), -1);
  ck_assert_int_eq(gop_save_schedule(ctx, path, "empty", " ; "), -1);
  ck_assert_int_eq(gop_save_schedule(ctx, "/no/such/dir/x.gop", "x", "gas()"), -1);
  GopModule *back = gop_compile_file(ctx, path);
  ck_assert_ptr_nonnull(back);
  FILE *f = fopen(path, "r");
  char text[512] = "";
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = 0;
  ck_assert_str_eq(text, "schedule first() {\n  split(f, 32)\n  fuse(v, e)\n}\n\n"
                         "schedule second() {\n  gas()\n}\n");
  gop_context_free(ctx);
}
END_TEST

/* gop_choose_schedule: a pick for an aggregation; for an operator no named
 * schedule or strategy applies to, GOP_NO_SCHEDULE with nothing reported
 * (models.c and the Python package run the default mapping on it, and
 * tell it from a real error by this return alone). */
/* An edgeless graph's edge tensor has no elements, and may come without
 * memory (torch's empty tensors have data_ptr() 0): bound as NULL, the run
 * gives the sum of no edges; NULL for a tensor with elements is refused. */
START_TEST(empty_tensor_without_memory) {
  GopContext *ctx = gop_context_new();
  GopGraph *g = gop_graph_from_arcs(ctx, 3, 0, NULL, NULL, "edgeless");
  ck_assert_msg(g != NULL, "%s", gop_diagnostics(ctx));
  GopRun *r = gop_run_new(ctx, gop_module_find_op(gop_stdlib(ctx), "u_mul_e_sum"), g);
  gop_run_set_device(r, GOP_DEVICE_INTERP);
  ck_assert_int_eq(gop_run_set_extent(r, "F", 2), 0);
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {9, 9, 9, 9, 9, 9};
  ck_assert_int_eq(gop_run_bind(r, "X", x, 6), 0);
  ck_assert_msg(gop_run_bind(r, "W", NULL, 0) == 0, "%s", gop_diagnostics(ctx));
  ck_assert_int_eq(gop_run_bind(r, "Y", y, 6), 0);
  ck_assert_msg(gop_run_exec(r) == 0, "%s", gop_diagnostics(ctx));
  for (int i = 0; i < 6; i++) ck_assert_float_eq(y[i], 0.0f);
  ck_assert_int_eq(gop_run_bind(r, "X", NULL, 6), -1);
  ck_assert_ptr_nonnull(strstr(gop_diagnostics(ctx), "(NULL data)"));
  gop_context_free(ctx);
}
END_TEST

START_TEST(choose_schedule_status) {
  GopContext *ctx = gop_context_new();
  GopGraph *g = gop_graph_open(ctx, tu_source("tests/data/tiny.mtx"));
  ck_assert_ptr_nonnull(g);
  GopScheduleChoice c;
  ck_assert_int_eq(gop_choose_schedule(gop_module_find_op(gop_stdlib(ctx), "u_mul_e_sum"), g,
                                       32, NULL, &c),
                   0);
  ck_assert_int_gt(c.candidates, 0);
  ck_assert_ptr_nonnull(strchr(c.schedule, '('));
  ck_assert_int_eq(c.source, GOP_SCHEDULE_FROM_BUILTIN); /* an operator it was trained on */
  GopModule *m = gop_compile_string(ctx, "twice.gop",
                                    "op twice(X: f32[dst, F]) -> Y: f32[dst, F] {\n"
                                    "  for v in dst {\n    for f in 0..F {\n"
                                    "      Y[v, f] = 2.0 * X[v, f]\n    }\n  }\n}\n");
  ck_assert_ptr_nonnull(m);
  ck_assert_int_eq(gop_choose_schedule(gop_module_find_op(m, "twice"), g, 8, NULL, &c),
                   GOP_NO_SCHEDULE);
  ck_assert_int_eq(c.candidates, 0);
  ck_assert_int_eq(c.source, GOP_SCHEDULE_NONE);
  ck_assert_str_eq(c.schedule, "");
  ck_assert_str_eq(gop_schedule_source_name(c.source), "default mapping");
  ck_assert_int_eq(gop_error_count(ctx), 0);
  ck_assert_str_eq(gop_diagnostics(ctx), "");
  /* a real error stays -1, reported: a database that cannot be opened */
  ck_assert_int_eq(gop_choose_schedule(gop_module_find_op(gop_stdlib(ctx), "copy_u_sum"), g,
                                       8, "/nonexistent/dir/db.sqlite", &c),
                   -1);
  ck_assert_int_gt(gop_error_count(ctx), 0);
  gop_context_free(ctx);
}
END_TEST

/* Edge softmax, whose stages fuse: one kernel (softmax_rows) on a graph of
 * small in-degrees; the default mapping, said why, where one destination
 * has so many in-edges that its team would outlast the default's atomics
 * (a star of 3,000 sources); neighbour groups on a large skewed graph
 * whose edge ids are in CSR order; teams of 4 lanes on a ring. An
 * operator of stages that do not fuse: the default mapping too (the
 * general model is not calibrated for it). */
START_TEST(choose_fused_stages) {
  GopContext *ctx = gop_context_new();
  GopOp *op = gop_module_find_op(gop_stdlib(ctx), "edge_softmax");
  GopGraph *g = gop_graph_open(ctx, tu_source("tests/data/tiny.mtx"));
  ck_assert_ptr_nonnull(g);
  GopScheduleChoice c;
  ck_assert_int_eq(gop_choose_schedule(op, g, 0, NULL, &c), 0);
  ck_assert_msg(strncmp(c.schedule, "softmax_rows(", 13) == 0, "%s", c.schedule);
  ck_assert_int_eq(c.source, GOP_SCHEDULE_FROM_MODEL);
  ck_assert_ptr_nonnull(strstr(c.note, "3 stages fused into one kernel"));
  enum { N = 3000 };
  static int64_t src[N], dst[N];
  for (int i = 0; i < N; i++) src[i] = i + 1, dst[i] = 0;
  GopGraph *star = gop_graph_from_arcs(ctx, N + 1, N, src, dst, "star");
  ck_assert_msg(star != NULL, "%s", gop_diagnostics(ctx));
  ck_assert_int_eq(gop_choose_schedule(op, star, 0, NULL, &c), GOP_NO_SCHEDULE);
  ck_assert_int_eq(c.source, GOP_SCHEDULE_NONE);
  ck_assert_str_eq(c.schedule, "");
  ck_assert_int_gt(c.candidates, 0);
  ck_assert_msg(strstr(c.note, "the default mapping: fused, with the heaviest destination's "
                               "3000 in-edges") != NULL, "%s", c.note);
  /* a skewed graph of a million edges (R-MAT 16/16, in-degrees up to
   * ~3,000): in CSR edge order, neighbour groups on teams of lanes, a
   * kernel a stage (softmax_teams); in the generator's random edge order, where a
   * group's scores would be gathered by edge id, the default mapping */
  GopGraph *rm = gop_graph_open(ctx, "rmat:16:16:3");
  ck_assert_msg(rm != NULL, "%s", gop_diagnostics(ctx));
  GopGraph *rmc = gop_graph_reorder(ctx, rm, "none");
  ck_assert_msg(rmc != NULL, "%s", gop_diagnostics(ctx));
  ck_assert_int_eq(gop_choose_schedule(op, rmc, 0, NULL, &c), 0);
  ck_assert_str_eq(c.schedule, "softmax_teams(32, 4)");
  ck_assert_msg(strstr(c.note, "neighbour groups of") != NULL, "%s", c.note);
  ck_assert_int_eq(gop_choose_schedule(op, rm, 0, NULL, &c), GOP_NO_SCHEDULE);
  ck_assert_str_eq(c.schedule, "");
  /* a ring of degree 16 (every destination alike, 3.2M edges): teams of 4
   * lanes, which read a quarter of the sectors a thread per destination
   * does (on an H200 18.7 us against 67.3 at T = 1:
   * bench/results/2026-11-29-H200-edge-softmax-fused-model) */
  GopGraph *ring = gop_graph_open(ctx, "ring:200000:16");
  ck_assert_msg(ring != NULL, "%s", gop_diagnostics(ctx));
  ck_assert_int_eq(gop_choose_schedule(op, ring, 0, NULL, &c), 0);
  ck_assert_str_eq(c.schedule, "softmax_rows(4)");
  /* stages that do not fuse (the second runs over sources): the default
   * mapping, said why, not the general model's pick */
  GopModule *m = gop_compile_string(
      ctx, "chain.gop",
      "op chain(X: f32[src, F]) -> (Y: f32[dst, F], Z: f32[src, F]) {\n"
      "  for v in dst {\n    for e in in_edges(v) {\n      for f in 0..F {\n"
      "        Y[v, f] += X[src(e), f]\n      }\n    }\n  }\n"
      "  for u in src {\n    for e in out_edges(u) {\n      for f in 0..F {\n"
      "        Z[u, f] += Y[dst(e), f]\n      }\n    }\n  }\n}\n");
  ck_assert_msg(m != NULL, "%s", gop_diagnostics(ctx));
  ck_assert_int_eq(gop_choose_schedule(gop_module_find_op(m, "chain"), g, 8, NULL, &c),
                   GOP_NO_SCHEDULE);
  ck_assert_int_eq(c.source, GOP_SCHEDULE_NONE);
  ck_assert_int_gt(c.candidates, 0);
  ck_assert_msg(strstr(c.note, "not calibrated for operators of 2 stages") != NULL, "%s",
                c.note);
  ck_assert_int_eq(gop_error_count(ctx), 0);
  gop_context_free(ctx);
}
END_TEST

/* A stage a schedule leaves unbound gets the default mapping before
 * lowering, not one thread for the whole loop (GAT's backward with only
 * its first stages scheduled took 10 s instead of 1 ms on an H100); the
 * sched stage still shows the schedule as written. And the forward file's
 * named schedules apply to its derived gradients. */
START_TEST(unbound_stages_and_grad_schedules) {
  GopContext *ctx = gop_context_new();
  static const char *two =
      "op two(X: f32[src, F], B: f32[dst, F]) -> (Y: f32[dst, F], Z: f32[dst, F]) {\n"
      "  for v in dst {\n    for e in in_edges(v) {\n      for f in 0..F {\n"
      "        Y[v, f] += X[src(e), f]\n      }\n    }\n  }\n"
      "  for v in dst {\n    for f in 0..F {\n      Z[v, f] = 2.0 * B[v, f]\n    }\n  }\n}\n"
      "schedule first_only() {\n  stages(1)\n  bind(v, thread)\n}\n";
  GopModule *m = gop_compile_string(ctx, "two.gop", two);
  ck_assert_ptr_nonnull(m);
  GopOp *op = gop_module_find_op(m, "two");
  GopCompileOptions o = {.schedule = "first_only()"};
  char *sched = gop_emit_with(op, GOP_STAGE_SCHED, &o);
  ck_assert_msg(sched != NULL, "%s", gop_diagnostics(ctx));
  ck_assert_ptr_nonnull(strstr(sched, "  for v in dst {\n    for f in 0..F {")); /* as written */
  char *low = gop_emit_with(op, GOP_STAGE_LOWERED, &o);
  ck_assert_ptr_nonnull(low);
  /* every stage of the lowered op is bound: no top-level loop without one */
  for (const char *p = low; (p = strstr(p, "\n  for ")); p++) {
    const char *eol = strchr(p + 1, '\n');
    const char *at = strstr(p + 1, " @");
    ck_assert_msg(at && at < eol, "an unbound stage:\n%s", low);
  }
  free(sched);
  free(low);
  /* with no schedule, the edge stage gets the edge-parallel default and
   * the vertex stage a vertex mapping (the edge mappings do not fit a
   * stage without edges; once that refusal left both a warp per vertex) */
  low = gop_emit_with(op, GOP_STAGE_LOWERED, NULL);
  ck_assert_ptr_nonnull(low);
  ck_assert_msg(strstr(low, "\n  for w in 0..num_edges() @warp {") != NULL, "%s", low);
  ck_assert_msg(strstr(low, "\n  for v in dst @") != NULL, "%s", low);
  free(low);
  /* the gradient of the first stage's op uses its file's schedules */
  static const char *gat =
      "op agg(X: f32[src, F]) -> Y: f32[dst, F] {\n"
      "  for v in dst {\n    for e in in_edges(v) {\n      for f in 0..F {\n"
      "        Y[v, f] += X[src(e), f]\n      }\n    }\n  }\n}\n"
      "schedule mine(T) {\n  bind(v, warp)\n  team(v, T)\n  bind(f, lane)\n}\n";
  GopModule *g = gop_compile_string(ctx, "agg.gop", gat);
  ck_assert_ptr_nonnull(g);
  GopModule *d = gop_grad(gop_module_find_op(g, "agg"), "X");
  ck_assert_ptr_nonnull(d);
  GopOp *dx = gop_module_op(d, 0);
  ck_assert_str_eq(gop_op_schedule_signature(dx, 0), "mine(T)");
  GopCompileOptions og = {.schedule = "mine(8)"};
  char *glow = gop_emit_with(dx, GOP_STAGE_LOWERED, &og);
  ck_assert_msg(glow != NULL, "%s", gop_diagnostics(ctx));
  ck_assert_ptr_nonnull(strstr(glow, "@team(8)"));
  free(glow);
  gop_context_free(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("api");
  TCase *tc = tcase_create("api");
  tcase_add_test(tc, compile_and_run_from_string);
  tcase_add_test(tc, misuse_is_reported);
  tcase_add_test(tc, stdlib_and_emit);
  tcase_add_test(tc, npy_through_the_api);
  tcase_add_test(tc, repl_support);
  tcase_add_test(tc, choose_schedule_status);
  tcase_add_test(tc, choose_fused_stages);
  tcase_add_test(tc, empty_tensor_without_memory);
  tcase_add_test(tc, unbound_stages_and_grad_schedules);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
