/* tests/unit/test_gopc.c: gopc end to end.
 *
 * Runs the built gopc (GOP_GOPC) on tests/data/tiny.mtx, whose results are
 * worked out by hand below, with inputs and outputs in .npy files, and
 * checks every error path a user can reach from the command line: each
 * must exit with the documented status and name the flag or file at fault.
 *
 * tiny.mtx, 0-based: e0 0->1, e1 0->2, e2 1->2, e3 2->0, e4 3->2; vertex 3
 * has no in-edges.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gop.h"
#include "codegen/codegen.h"
#include "lang/lang.h"
#include "graph/graph.h"
#include "runtime/runtime.h"
#include "tune/tune.h"
#include "testutil.h"

static char output[1 << 16];

/* Runs `gopc ARGS` in the temporary directory; returns the exit status and
 * leaves stdout+stderr in `output`. */
static int gopc(const char *args) { return tu_gopc("", args, output, sizeof output); }

#define ASSERT_OUTPUT_HAS(s) \
  ck_assert_msg(strstr(output, (s)) != NULL, "expected '%s' in:\n%s", (s), output)

static const char *tiny(void) { return tu_source("tests/data/tiny.mtx"); }

static void write_npy(const char *name, int ndim, const int64_t *shape,
                      const float *data) {
  NpyArray a = {.dtype = IR_DT_F32, .ndim = ndim, .data = (void *)data};
  for (int i = 0; i < ndim; i++) a.shape[i] = shape[i];
  Diag d;
  ir_diag_init(&d, stderr);
  char path[512];
  snprintf(path, sizeof path, "%s/%s", tu_tmpdir(), name);
  ck_assert_int_eq(npy_write(path, &a, &d), 0);
  ir_diag_free(&d);
}

static void check_npy(const char *name, int ndim, const int64_t *shape,
                      const float *want) {
  NpyArray a;
  Diag d;
  ir_diag_init(&d, stderr);
  char path[512];
  snprintf(path, sizeof path, "%s/%s", tu_tmpdir(), name);
  ck_assert_int_eq(npy_read(path, &a, &d), 0);
  ck_assert_int_eq(a.dtype, IR_DT_F32);
  ck_assert_int_eq(a.ndim, ndim);
  for (int i = 0; i < ndim; i++) ck_assert_int_eq(a.shape[i], shape[i]);
  const float *got = a.data;
  for (int64_t i = 0; i < npy_numel(&a); i++)
    ck_assert_msg(got[i] == want[i], "%s[%lld] = %g, want %g", name, (long long)i,
                  got[i], want[i]);
  npy_free(&a);
  ir_diag_free(&d);
}

static const float X[8] = {1, 2, 3, 4, 5, 6, 7, 8};
static const float W[5] = {1, 2, 3, 4, 5};
static const int64_t shape_v2[2] = {4, 2}, shape_e[1] = {5};

START_TEST(run_copy_u_sum) {
  write_npy("x.npy", 2, shape_v2, X);
  char args[1024];
  snprintf(args, sizeof args,
           "run stdlib:copy_u_sum --graph %s --F 2 --in X=x.npy --out Y=y.npy", tiny());
  ck_assert_int_eq(gopc(args), 0);
  ASSERT_OUTPUT_HAS("copy_u_sum on");
  ASSERT_OUTPUT_HAS("|V| 4, |E| 5");
  const float want[8] = {5, 6, 1, 2, 11, 14, 0, 0};
  check_npy("y.npy", 2, shape_v2, want);
}
END_TEST

/* --dtype: copy_u_sum in bf16 reads and writes '<V2' bfloat16 bits, f16
 * reads '<f2'; a file whose dtype is not the tensor's is refused, naming
 * both; emit --dtype shows the instance's types. */
START_TEST(run_dtypes) {
  /* X with values bf16 holds exactly; Y's 11 + 0.0625 is rounded */
  const float x[8] = {1, 2, 3, 4, 5, 6.0625f, 7, 8};
  uint16_t xb[8];
  for (int i = 0; i < 8; i++) xb[i] = ir_bf16_from_float(x[i]);
  NpyArray a = {.dtype = IR_DT_BF16, .ndim = 2, .shape = {4, 2}, .data = xb};
  Diag d;
  ir_diag_init(&d, stderr);
  char path[512];
  snprintf(path, sizeof path, "%s/xb.npy", tu_tmpdir());
  ck_assert_int_eq(npy_write(path, &a, &d), 0);
  char args[1024];
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --F 2 --dtype bf16 "
           "--in X=xb.npy --out Y=yb.npy --check", tiny());
  ck_assert_msg(gopc(args) == 0, "%s", output);
  ASSERT_OUTPUT_HAS("check: every output agrees with the interpreter");
  snprintf(path, sizeof path, "%s/yb.npy", tu_tmpdir());
  NpyArray y;
  ck_assert_int_eq(npy_read(path, &y, &d), 0);
  ck_assert_int_eq(y.dtype, IR_DT_BF16);
  /* Y[2] = X[0] + X[1] + X[3] = (1, 2) + (3, 4) + (7, 8); Y[0] = X[2] */
  const float want[8] = {5, 6.0625f, 1, 2, 11, 14, 0, 0};
  for (int i = 0; i < 8; i++)
    ck_assert_msg(ir_bf16_to_float(((uint16_t *)y.data)[i]) == ir_round_to(IR_DT_BF16, want[i]),
                  "Y[%d] = %g", i, ir_bf16_to_float(((uint16_t *)y.data)[i]));
  npy_free(&y);
  /* the f32 file for a bf16 tensor, and the other way round */
  write_npy("x.npy", 2, shape_v2, X);
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --F 2 --dtype f16 "
           "--in X=x.npy", tiny());
  ck_assert_int_eq(gopc(args), 2);
  ASSERT_OUTPUT_HAS("--in X=x.npy: the file holds f32 but X is f16 in operator copy_u_sum");
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --F 2 --in X=xb.npy", tiny());
  ck_assert_int_eq(gopc(args), 2);
  ASSERT_OUTPUT_HAS("the file holds bf16 but X is f32 in operator copy_u_sum (instantiate "
                    "it in that type with --dtype)");
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --F 2 --dtype f33", tiny());
  ck_assert_int_eq(gopc(args), 2);
  ASSERT_OUTPUT_HAS("unknown dtype 'f33'");
  ck_assert_int_eq(gopc("emit stdlib:u_mul_e_sum --dtype f64"), 0);
  ASSERT_OUTPUT_HAS("op u_mul_e_sum(X: f64[src, F], W: f64[edge]) -> Y: f64[dst, F] {");
  ck_assert_int_eq(gopc("emit stdlib:u_mul_e_sum --dtype bf16 --stage ptx --schedule 'warp_vertex(1, 1)'"), 0);
  ASSERT_OUTPUT_HAS("ld.global.nc.u16");
  ir_diag_free(&d);
}
END_TEST

/* codegen/loop.c group_prologue: a neighbour group's row (its bounds, its
 * destination and that destination's two in_ptr offsets) is loaded at the
 * top of the group, once, before the edge loop; the degree's subtraction
 * (inline asm, so that LLVM does not hoist it back to the top, where the
 * warp would wait for it) comes after the edge loop, where the store tests
 * whether the group owns its row. */
START_TEST(emit_group_row_at_top) {
  ck_assert_int_eq(gopc("emit stdlib:copy_u_sum --stage llvm --schedule 'spmm_groups(64, 4)'"),
                   0);
  const char *fn = strstr(output, "define void @copy_u_sum_s1(");
  ck_assert_msg(fn, "no groups kernel in:\n%s", output);
  const char *edges = strstr(fn, "\nei.preheader:");
  ck_assert_msg(edges, "no edge loop in:\n%s", fn);
  static const char *const row[] = {"%gbeg = load", "%gend = load", "%gdst = load",
                                    "%dbeg = load", "%dend = load"};
  for (size_t i = 0; i < sizeof row / sizeof *row; i++) {
    const char *at = strstr(fn, row[i]);
    ck_assert_msg(at && at < edges, "'%s' not before the edge loop:\n%s", row[i], fn);
    ck_assert_msg(!strstr(at + 1, row[i]), "'%s' twice:\n%s", row[i], fn);
  }
  const char *sub = strstr(fn, "asm sideeffect \"sub.s32 $0, $1, $2;\"");
  ck_assert_msg(sub && sub > edges, "the degree not subtracted after the edge loop:\n%s", fn);
}
END_TEST

START_TEST(run_u_mul_e_sum_from_file) {
  write_npy("x.npy", 2, shape_v2, X);
  write_npy("w.npy", 1, shape_e, W);
  char args[1024];
  snprintf(args, sizeof args,
           "run %s --op u_mul_e_sum --graph %s --dim F=2 --in X=x.npy --in W=w.npy "
           "--out Y=y.npy",
           tu_source("stdlib/aggregate.gop"), tiny());
  ck_assert_int_eq(gopc(args), 0);
  const float want[8] = {20, 24, 1, 2, 46, 56, 0, 0};
  check_npy("y.npy", 2, shape_v2, want);
}
END_TEST

START_TEST(run_max_and_mean_empty_neighbourhood) {
  write_npy("x.npy", 2, shape_v2, X);
  char args[1024];
  snprintf(args, sizeof args,
           "run stdlib:copy_u_max --graph %s --F 2 --in X=x.npy --out Y=max.npy", tiny());
  ck_assert_int_eq(gopc(args), 0);
  const float want_max[8] = {5, 6, 1, 2, 7, 8, 0, 0};
  check_npy("max.npy", 2, shape_v2, want_max);
  snprintf(args, sizeof args,
           "run stdlib:copy_u_mean --graph %s --F 2 --in X=x.npy --out Y=mean.npy", tiny());
  ck_assert_int_eq(gopc(args), 0);
  const float want_mean[8] = {5, 6, 1, 2, 11.0f / 3, 14.0f / 3, 0, 0};
  check_npy("mean.npy", 2, shape_v2, want_mean);
}
END_TEST

START_TEST(run_random_inputs_on_generators) {
  ck_assert_int_eq(gopc("run stdlib:u_mul_e_sum --graph rmat:8:4 --F 8 --seed 7"), 0);
  ASSERT_OUTPUT_HAS("Y [256, 8]");
  /* The same seed gives the same numbers (the result line; the first line
   * holds the run's wall time, which varies). */
  char *first = strdup(strstr(output, "  Y ["));
  ck_assert_int_eq(gopc("run stdlib:u_mul_e_sum --graph rmat:8:4 --F 8 --seed 7"), 0);
  ck_assert_str_eq(first, strstr(output, "  Y ["));
  free(first);
  ck_assert_int_eq(gopc("run stdlib:edge_softmax --graph grid:8x8"), 0);
  ASSERT_OUTPUT_HAS("A [224]");
}
END_TEST

START_TEST(run_errors) {
  char args[1024];
  ck_assert_int_eq(gopc("run stdlib:copy_u_sum --F 2"), 2);
  ASSERT_OUTPUT_HAS("--graph");
  snprintf(args, sizeof args, "run stdlib:nope --graph %s --F 2", tiny());
  ck_assert_int_eq(gopc(args), 1);
  ASSERT_OUTPUT_HAS("no operator named 'nope'");
  ASSERT_OUTPUT_HAS("copy_u_sum");
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --F sixty", tiny());
  ck_assert_int_eq(gopc(args), 2);
  ASSERT_OUTPUT_HAS("--F sixty: not an integer");
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --F 0", tiny());
  ck_assert_int_eq(gopc(args), 2);
  ASSERT_OUTPUT_HAS("extent F = 0 is out of range");
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s", tiny());
  ck_assert_int_eq(gopc(args), 2);
  ASSERT_OUTPUT_HAS("extent F of tensor X is not set");
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --G 3 --F 2", tiny());
  ck_assert_int_eq(gopc(args), 2);
  ASSERT_OUTPUT_HAS("no extent named 'G'");
  ck_assert_int_eq(gopc("run stdlib:copy_u_sum --graph /no/such.mtx --F 2"), 1);
  ASSERT_OUTPUT_HAS("/no/such.mtx");
  ck_assert_int_eq(gopc("run stdlib:copy_u_sum --graph rmat:x:1 --F 2"), 1);
  ASSERT_OUTPUT_HAS("rmat:x:1");

  write_npy("w.npy", 1, shape_e, W);
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --F 2 --in X=w.npy", tiny());
  ck_assert_int_eq(gopc(args), 2);
  ASSERT_OUTPUT_HAS("--in X=w.npy: shape [5] does not match X's [4, 2]");
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --F 2 --in Q=w.npy", tiny());
  ck_assert_int_eq(gopc(args), 2);
  ASSERT_OUTPUT_HAS("--in Q=w.npy: the operator has no input of that name");
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --F 2 --out X=x.npy", tiny());
  ck_assert_int_eq(gopc(args), 2);
  ASSERT_OUTPUT_HAS("--out X=x.npy: the operator has no output of that name");
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --F 2 --in X", tiny());
  ck_assert_int_eq(gopc(args), 2);
  ASSERT_OUTPUT_HAS("--in needs NAME=VALUE");
  tu_write("junk.npy", "this is not numpy");
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --F 2 --in X=junk.npy", tiny());
  ck_assert_int_eq(gopc(args), 1);
  ASSERT_OUTPUT_HAS("junk.npy");
  snprintf(args, sizeof args,
           "run stdlib:copy_u_sum --graph %s --F 2 --out Y=/no/such/dir/y.npy", tiny());
  ck_assert_int_eq(gopc(args), 1);
  ASSERT_OUTPUT_HAS("/no/such/dir/y.npy");
}
END_TEST

/* Issue 17: the interpreter runs the operator as scheduled. A schedule
 * that gopc emit refuses is refused by gopc run --interp with the same
 * message and status; one that applies runs, is named, and gives the
 * worked-out result. */
START_TEST(run_interp_applies_the_schedule) {
  static const char *const bad[] = {"bogus_sched(1)", "gnnadvisor(0, 0)", "warp_edge(1)",
                                    "warp_edge(1, 2, 3)", "split(nope, 2) -> (a, b)"};
  char args[1024];
  static char emitted[sizeof output];
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(args, sizeof args, "emit stdlib:copy_u_sum --stage lowered --schedule '%s'",
             bad[i]);
    int emit_rc = gopc(args);
    ck_assert_msg(emit_rc == 1, "emit %s: %d\n%s", bad[i], emit_rc, output);
    snprintf(emitted, sizeof emitted, "%s", output);
    snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --F 2 --interp --schedule '%s'",
             tiny(), bad[i]);
    ck_assert_msg(gopc(args) == emit_rc, "run %s:\n%s", bad[i], output);
    ck_assert_msg(strcmp(output, emitted) == 0, "run %s says:\n%s\nemit says:\n%s", bad[i],
                  output, emitted);
  }
  write_npy("x.npy", 2, shape_v2, X);
  static const char *const good[] = {"warp_edge(2, 2)", "gnnadvisor(2, 1)", "thread_vertex(1, 1)"};
  const float want[8] = {5, 6, 1, 2, 11, 14, 0, 0};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    snprintf(args, sizeof args,
             "run stdlib:copy_u_sum --graph %s --F 2 --in X=x.npy --out Y=y.npy --interp "
             "--schedule '%s' --check", tiny(), good[i]);
    ck_assert_msg(gopc(args) == 0, "%s:\n%s", good[i], output);
    char says[128];
    snprintf(says, sizeof says, "interpreter, schedule %s,", good[i]);
    ASSERT_OUTPUT_HAS(says);
    ASSERT_OUTPUT_HAS("check: every output agrees");
    check_npy("y.npy", 2, shape_v2, want);
  }
}
END_TEST

/* Issue 17: what an input asks for is checked against the host-memory
 * limit (GOP_MAX_HOST_BYTES, default the machine's memory) before
 * anything is allocated, with a message naming the limit. */
START_TEST(limits_refused_before_allocating) {
  ck_assert_int_eq(gopc("run stdlib:copy_u_sum --graph grid:2x2 --F 1e9"), 2);
  ASSERT_OUTPUT_HAS("--F 1e9: not an integer");
  ck_assert_int_eq(gopc("run stdlib:copy_u_sum --graph grid:2x2 --F 1000000000"), 2);
  ASSERT_OUTPUT_HAS("extent F = 1000000000 is out of range (1 to 16777216)");
  setenv("GOP_MAX_HOST_BYTES", "1000000", 1);
  ck_assert_int_eq(gopc("graph rmat:16:16"), 1);
  ASSERT_OUTPUT_HAS("rmat:16:16: error: a graph of 65536 vertices and 1048576 edges needs: "
                    "68681744 bytes, over the limit of 1000000 (set GOP_MAX_HOST_BYTES");
  ck_assert_int_eq(gopc("graph grid:1000x1000"), 1);
  ASSERT_OUTPUT_HAS("over the limit of 1000000 (set GOP_MAX_HOST_BYTES");
  ck_assert_int_eq(gopc("run stdlib:copy_u_sum --graph rmat:10:4 --F 1000"), 2);
  ASSERT_OUTPUT_HAS("extent F = 1000 makes tensor X need: 4096000 bytes, over the limit of "
                    "1000000");
  /* a Matrix Market header that claims 2^31-1 vertices */
  tu_write("big.mtx", "%%MatrixMarket matrix coordinate pattern general\n"
                      "2147483647 2147483647 1\n1 1\n");
  ck_assert_int_eq(gopc("graph big.mtx"), 1);
  ASSERT_OUTPUT_HAS("big.mtx:2: error: a graph of 2147483647 vertices and 1 edges needs: "
                    "34359738416 bytes, over the limit");
  setenv("GOP_MAX_HOST_BYTES", "junk", 1);
  ck_assert_int_eq(gopc("graph grid:2x2"), 1);
  ASSERT_OUTPUT_HAS("GOP_MAX_HOST_BYTES=junk: not a positive integer");
  unsetenv("GOP_MAX_HOST_BYTES");
  /* 2^40 entries */
  tu_write("big2.mtx", "%%MatrixMarket matrix coordinate pattern general\n"
                       "4 4 1099511627776\n1 1\n");
  ck_assert_int_eq(gopc("graph big2.mtx"), 1);
  ASSERT_OUTPUT_HAS("big2.mtx:2: error: 1099511627776 entries");
  /* an .npy header that claims a 2^20 x 2^20 shape */
  static const char npy_head[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': "
                                 "False, 'shape': (1048576, 1048576), }";
  char npy[128 + 16];
  memset(npy, ' ', sizeof npy);
  memcpy(npy, npy_head, sizeof npy_head - 1);
  npy[127] = '\n';
  memset(npy + 128, 0, 16);
  char path[512];
  snprintf(path, sizeof path, "%s/huge.npy", tu_tmpdir());
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  fwrite(npy, 1, sizeof npy, f);
  fclose(f);
  setenv("GOP_MAX_HOST_BYTES", "1000000000", 1);
  ck_assert_int_eq(gopc("run stdlib:copy_u_sum --graph grid:4x4 --F 2 --in X=huge.npy"), 1);
  ASSERT_OUTPUT_HAS("huge.npy: error: the array's data needs: 4398046511104 bytes, over the "
                    "limit of 1000000000");
  unsetenv("GOP_MAX_HOST_BYTES");
  /* a kernel pack that claims a huge section */
  tu_write("a.pack", "gop-pack 1\nptx 9223372036854775807\nx\n");
  ck_assert_int_eq(gopc("run --pack a.pack --graph grid:2x2"), 1);
  ASSERT_OUTPUT_HAS("a.pack:2: error: the ptx block is truncated: 9223372036854775807 bytes "
                    "announced, 2 left");
}
END_TEST

START_TEST(output_file_survives_a_failed_run) {
  char *keep = strdup(tu_write("keep.npy", "precious"));
  char args[1024];
  snprintf(args, sizeof args,
           "run stdlib:copy_u_sum --graph %s --F 2 --in X=junk_missing.npy --out Y=keep.npy",
           tiny());
  ck_assert_int_eq(gopc(args), 1);
  char *text = tu_read_file(keep, NULL);
  ck_assert_str_eq(text, "precious");
  free(text);
  free(keep);
}
END_TEST

START_TEST(check_emit_ops_graph) {
  char args[1024];
  snprintf(args, sizeof args, "check %s %s", tu_source("stdlib/aggregate.gop"),
           tu_source("stdlib/softmax.gop"));
  ck_assert_int_eq(gopc(args), 0);
  tu_write("bad.gop", "op f(X: f32[src, F]) -> Y: f32[dst, F] {\n  Y[v, f] += 1.0\n}\n");
  ck_assert_int_eq(gopc("check bad.gop"), 1);
  ASSERT_OUTPUT_HAS("bad.gop:2:");
  ck_assert_int_eq(gopc("check /no/such.gop"), 1);
  ASSERT_OUTPUT_HAS("/no/such.gop");

  ck_assert_int_eq(gopc("emit stdlib:u_mul_e_sum --stage ir"), 0);
  ASSERT_OUTPUT_HAS("op u_mul_e_sum(X: f32[src, F], W: f32[edge]) -> Y: f32[dst, F] {");
  ASSERT_OUTPUT_HAS("Y[v, f] += X[src(e), f] * W[e]");
  ck_assert_int_eq(gopc("emit stdlib:u_mul_e_sum --stage ast"), 0);
  ASSERT_OUTPUT_HAS("u_mul_e_sum");
  ck_assert_int_eq(gopc("emit stdlib:u_mul_e_sum --stage sass"), 2);
  ASSERT_OUTPUT_HAS("--stage sass: unknown stage");
  snprintf(args, sizeof args, "emit %s --op nope", tu_source("stdlib/aggregate.gop"));
  ck_assert_int_eq(gopc(args), 1);
  ASSERT_OUTPUT_HAS("no operator named 'nope'");

  ck_assert_int_eq(gopc("ops"), 0);
  ASSERT_OUTPUT_HAS("copy_u_sum(X: f32[src, F]) -> Y: f32[dst, F]");
  ASSERT_OUTPUT_HAS("edge_softmax(S: f32[edge]) -> A: f32[edge]");
  ck_assert_int_eq(gopc("graph grid:4x3"), 0);
  ASSERT_OUTPUT_HAS("|V| 12");
  ASSERT_OUTPUT_HAS("|E| 34");
}
END_TEST

/* The tuning database's key of copy_u_sum on tiny.mtx at F = 2 on `gpu`
 * (compute capability `cc`; "none" and 0 on this machine): what gopc
 * looks up. `gpu` must outlive the key. */
static TuneKey tiny_key(const char *gpu, int cc) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *lib = lang_stdlib(a, &d);
  Graph *g = graph_read(tiny(), &d);
  ck_assert(lib && g);
  TuneKey k = {.op_hash = tune_op_hash(ir_module_find_op(lib, "copy_u_sum")),
               .F = 2, .dtype = "f32", .gpu = gpu, .cc = cc, .compiler = GOP_VERSION};
  tune_graph_sig(g, &k.graph);
  graph_free(g);
  ir_diag_free(&d);
  ir_arena_free(a);
  return k;
}

/* Stores `sched` in the tuning database `db` as measured for copy_u_sum on
 * tiny.mtx at F = 2 on no GPU (the key gopc looks up on this machine). */
static void store_measured(const char *db, const char *sched) {
  TuneKey k = tiny_key("none", 0);
  TuneRecord r = {.time_ms = 0.5};
  snprintf(r.schedule, sizeof r.schedule, "%s", sched);
  Diag d;
  ir_diag_init(&d, stderr);
  TuneDb *t = tune_db_open(db, &d);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(tune_db_put(t, &k, &r, &d), 0);
  tune_db_close(t);
  ir_diag_free(&d);
}

/* --reorder auto with a tuning database that measured vertex orders
 * (gopc tune --orders stores them through gop_tune_store_order), on the
 * stand-in driver (a GPU for the key; its launches are not run): the
 * fastest order is taken and said; with none stored for this width, the
 * AES rule as before; a stored order gop would not take is an error that
 * names the file. The API's refusals too. */
START_TEST(run_reorder_auto_takes_the_measured_order) {
  const char *fake = getenv("GOP_FAKE_CUDA");
  ck_assert_ptr_nonnull(fake);
  setenv("GOP_CUDA_LIBRARY", fake, 1);
  unsetenv("GOP_TUNE_DB");
  char db[512], env[1024], args[2048];
  snprintf(db, sizeof db, "%s/orders.db", tu_tmpdir());
  unlink(db);
  GopContext *ctx = gop_context_new();
  GopOp *op = gop_module_find_op(gop_stdlib(ctx), "copy_u_sum");
  GopGraph *g = gop_graph_open(ctx, tiny());
  ck_assert(op && g);
  ck_assert_int_eq(gop_tune_store_order(op, g, 2, db, "none", "gar()", 3.0), 0);
  ck_assert_int_eq(gop_tune_store_order(op, g, 2, db, "rcm", "gar()", 2.0), 0);
  ck_assert_int_eq(gop_tune_store_order(op, g, 2, db, "degree", "gar()", 2.5), 0);
  ck_assert_int_eq(gop_tune_store_order(op, g, 2, db, "rcm", "thread_edge(1, 1)", 2.2), 0);
  GopOrderChoice oc;
  ck_assert_int_eq(gop_choose_order(op, g, 2, db, &oc), 1);
  ck_assert_str_eq(oc.order, "rcm");
  ck_assert_str_eq(oc.schedule, "gar()");
  ck_assert(oc.time_ms == 2.0 && oc.own_ms == 3.0);
  ck_assert_int_eq(oc.orders, 3);
  ck_assert_int_eq(gop_choose_order(op, g, 4, db, &oc), 0); /* another width */
  /* what the API refuses, each with a message */
  ck_assert_int_eq(gop_tune_store_order(op, g, 2, db, "auto", "gar()", 1.0), -1);
  ck_assert_int_eq(gop_tune_store_order(op, g, 2, db, "rcm", "gar()", 0), -1);
  ck_assert_int_eq(gop_tune_store_order(op, g, 2, db, "spiral", "gar()", 1.0), -1);
  ck_assert_int_eq(gop_tune_store_order(op, g, 2, NULL, "rcm", "gar()", 1.0), -1);
  const char *msg = gop_diagnostics(ctx);
  ck_assert_msg(msg && strstr(msg, "auto picks an order by a rule") && strstr(msg, "not a measurement") &&
                    strstr(msg, "spiral") && strstr(msg, "the database path is NULL"),
                "%s", msg ? msg : "");
  gop_context_free(ctx);

  snprintf(env, sizeof env, "GOP_CUDA_LIBRARY='%s'", fake);
  snprintf(args, sizeof args,
           "run stdlib:copy_u_sum --graph %s --F 2 --reorder auto --db '%s' --reps 1", tiny(),
           db);
  ck_assert_int_eq(tu_gopc(env, args, output, sizeof output), 0);
  ASSERT_OUTPUT_HAS("vertex order: rcm, the fastest of 3 measured in the tuning database "
                    "(2.0000 ms; its own order 3.0000 ms)\n");
  ASSERT_OUTPUT_HAS("reordered by rcm in ");
  snprintf(args, sizeof args,
           "run stdlib:copy_u_sum --graph %s --F 4 --reorder auto --db '%s' --reps 1", tiny(),
           db);
  ck_assert_int_eq(tu_gopc(env, args, output, sizeof output), 0);
  ck_assert_ptr_null(strstr(output, "vertex order:"));
  ASSERT_OUTPUT_HAS("reordered by auto=");
  /* none measured fastest: the graph's own vertex order with its edges
   * numbered in CSR order, as gopc tune --orders measured it */
  ctx = gop_context_new();
  op = gop_module_find_op(gop_stdlib(ctx), "copy_u_sum");
  g = gop_graph_open(ctx, tiny());
  ck_assert_int_eq(gop_tune_store_order(op, g, 8, db, "none", "gar()", 1.0), 0);
  ck_assert_int_eq(gop_tune_store_order(op, g, 8, db, "rcm", "gar()", 2.0), 0);
  gop_context_free(ctx);
  snprintf(args, sizeof args,
           "run stdlib:copy_u_sum --graph %s --F 8 --reorder auto --db '%s' --reps 1", tiny(),
           db);
  ck_assert_int_eq(tu_gopc(env, args, output, sizeof output), 0);
  ASSERT_OUTPUT_HAS("vertex order: the graph's own, the fastest of 2 measured in the tuning "
                    "database (1.0000 ms)\n");
  ASSERT_OUTPUT_HAS("reordered by none in ");

  /* a file that says something gop would not do */
  Diag d;
  ir_diag_init(&d, stderr);
  ck_assert_int_eq(rt_cuda_open(&d), RT_OK);
  TuneKey k = tiny_key(rt_cuda_device_name(), rt_cuda_cc());
  TuneOrder bad = {.order = "rcm; rm -rf", .schedule = "gar()", .time_ms = 0.5};
  TuneDb *t = tune_db_open(db, &d);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(tune_db_put_order(t, &k, &bad, &d), 0);
  tune_db_close(t);
  ir_diag_free(&d);
  snprintf(args, sizeof args,
           "run stdlib:copy_u_sum --graph %s --F 2 --reorder auto --db '%s' --reps 1", tiny(),
           db);
  ck_assert_int_eq(tu_gopc(env, args, output, sizeof output), 1);
  ASSERT_OUTPUT_HAS("tuning database: the vertex order 'rcm; rm -rf' stored for copy_u_sum on "
                    "this graph is not one gop takes");
  ASSERT_OUTPUT_HAS(db);

  /* gopc tune --orders on the stand-in driver: a tune per order, each on
   * its renumbering; its launches compute nothing, so no candidate is
   * verified, each order says so and none is stored */
  char db2[512];
  snprintf(db2, sizeof db2, "%s/orders2.db", tu_tmpdir());
  unlink(db2);
  snprintf(args, sizeof args,
           "tune stdlib:copy_u_sum --graph %s --F 2 --orders none,rcm,degree --max 2 "
           "--budget-s 3 --reps 1 --db '%s'", tiny(), db2);
  ck_assert_int_eq(tu_gopc(env, args, output, sizeof output), 0);
  ASSERT_OUTPUT_HAS("order none: the graph's own, its edges numbered in CSR order in ");
  ASSERT_OUTPUT_HAS("order rcm: renumbered in ");
  ASSERT_OUTPUT_HAS("order degree: renumbered in ");
  ASSERT_OUTPUT_HAS("vertex orders, fastest first:\n");
  ASSERT_OUTPUT_HAS("  rcm            nothing verified\n");
  /* a graph whose edges are already in CSR order (arcs sorted by
   * destination) is tuned as it is under `none`, not copied */
  char csr[512];
  snprintf(csr, sizeof csr, "%s/csr.mtx", tu_tmpdir());
  FILE *cf = fopen(csr, "w");
  ck_assert_ptr_nonnull(cf);
  fputs("%%MatrixMarket matrix coordinate pattern general\n3 3 4\n2 1\n3 1\n1 2\n1 3\n", cf);
  fclose(cf);
  snprintf(args, sizeof args,
           "tune stdlib:copy_u_sum --graph %s --F 2 --orders none --max 2 --budget-s 3 "
           "--reps 1 --db '%s'", csr, db2);
  ck_assert_int_eq(tu_gopc(env, args, output, sizeof output), 0);
  ASSERT_OUTPUT_HAS("order none: the graph's own, its edges already in CSR order\n");
  /* a graph past --check-edges is checked on the proxy graph first; a
   * renumbered graph's edge ids are in CSR order and its candidates are
   * compiled so: the proxy graph must be numbered alike, not refused */
  snprintf(args, sizeof args,
           "tune stdlib:copy_u_sum --graph %s --F 2 --orders rcm --max 2 --check-edges 1 "
           "--budget-s 3 --reps 1 --db '%s'", tiny(), db2);
  ck_assert_int_eq(tu_gopc(env, args, output, sizeof output), 0);
  ASSERT_OUTPUT_HAS("on a proxy graph");
  ck_assert_msg(!strstr(output, "compiled for edge ids in CSR order"), "%s", output);
  ctx = gop_context_new();
  op = gop_module_find_op(gop_stdlib(ctx), "copy_u_sum");
  g = gop_graph_open(ctx, tiny());
  ck_assert_int_eq(gop_choose_order(op, g, 2, db2, &oc), 0);
  gop_context_free(ctx);
  unsetenv("GOP_CUDA_LIBRARY");
}
END_TEST

/* The proxy graph is laid out as the tuned graph, whose candidates it
 * runs: CSR edge ids when its are, 64-bit indices when its need them (a
 * graph past 2^31 edges: here a small one flagged so), and a kernel of
 * the other width is refused with the reason. */
START_TEST(proxy_graph_takes_the_layout) {
  Diag d;
  ir_diag_init(&d, stderr);
  Graph *g = graph_open(tiny(), &d);
  ck_assert_ptr_nonnull(g);
  Graph *p = tune_proxy_graph(g, &d);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(rt_index_bits(p), 32);
  ck_assert_int_eq(rt_csr_edges(p), rt_csr_edges(g));
  graph_free(p);
  g->index64 = true;
  ck_assert_int_eq(rt_index_bits(g), 64);
  p = tune_proxy_graph(g, &d);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(rt_index_bits(p), 64);
  char opname[] = "copy_u_sum";
  CgProgram prog = {.op = opname, .index_bits = 64};
  ck_assert_int_eq(rt_check_layout(&prog, p, &d), RT_OK);
  prog.index_bits = 32;
  char *msg = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&msg, &len);
  Diag d2;
  ir_diag_init(&d2, f);
  ck_assert_int_eq(rt_check_layout(&prog, p, &d2), RT_ERR);
  fclose(f);
  ck_assert_msg(strstr(msg, "stands in for a graph past 2^31 edges"), "%s", msg);
  free(msg);
  ir_diag_free(&d2);
  graph_free(p);
  graph_free(g);
  ir_diag_free(&d);
}
END_TEST

START_TEST(run_schedule_source) {
  write_npy("x.npy", 2, shape_v2, X);
  const float want[8] = {5, 6, 1, 2, 11, 14, 0, 0};
  char args[2048];
  /* No schedule, no database: the built-in predictor's, said in one line;
   * with it off, the cost model's, and a note says why. */
  unsetenv("GOP_TUNE_DB");
  snprintf(args, sizeof args,
           "run stdlib:copy_u_sum --graph %s --F 2 --in X=x.npy --out Y=y.npy", tiny());
  ck_assert_int_eq(gopc(args), 0);
  ASSERT_OUTPUT_HAS("  schedule: ");
  ASSERT_OUTPUT_HAS(" (from the built-in predictor)\n");
  check_npy("y.npy", 2, shape_v2, want);
  setenv("GOP_PREDICTOR", "off", 1);
  ck_assert_int_eq(gopc(args), 0);
  ASSERT_OUTPUT_HAS(" (from the cost model)\n");
  ASSERT_OUTPUT_HAS("  note: predictor off (GOP_PREDICTOR=off)\n");
  check_npy("y.npy", 2, shape_v2, want);
  setenv("GOP_PREDICTOR", "on", 1);
  ck_assert_int_eq(gopc(args), 1);
  ASSERT_OUTPUT_HAS("GOP_PREDICTOR: error: 'on' is neither 'builtin'");
  unsetenv("GOP_PREDICTOR");
  /* An operator no named schedule applies to (GOP_NO_SCHEDULE): the
   * default mapping, said so, not an error. */
  snprintf(args, sizeof args, "run %s --op bias --graph %s --F 2",
           tu_source("examples/models/layers.gop"), tiny());
  ck_assert_int_eq(gopc(args), 0);
  ASSERT_OUTPUT_HAS("  schedule: the default mapping (no named schedule applies)\n");
  /* A schedule given: no such line. */
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --F 2 --schedule 'gar()'",
           tiny());
  ck_assert_int_eq(gopc(args), 0);
  ck_assert_ptr_null(strstr(output, "schedule:"));
  /* A database that has this key: its schedule; by --db or GOP_TUNE_DB. */
  char db[600];
  snprintf(db, sizeof db, "%s/tune.db", tu_tmpdir());
  store_measured(db, "warp_vertex(2, 2)");
  snprintf(args, sizeof args,
           "run stdlib:copy_u_sum --graph %s --F 2 --in X=x.npy --out Y=y.npy --db %s", tiny(),
           db);
  ck_assert_int_eq(gopc(args), 0);
  ASSERT_OUTPUT_HAS("  schedule: warp_vertex(2, 2) (from the database)\n");
  check_npy("y.npy", 2, shape_v2, want);
  setenv("GOP_TUNE_DB", db, 1);
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --F 2", tiny());
  ck_assert_int_eq(gopc(args), 0);
  ASSERT_OUTPUT_HAS("(from the database)");
  /* Another F is another key: back to the predictor. */
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --F 3", tiny());
  ck_assert_int_eq(gopc(args), 0);
  ASSERT_OUTPUT_HAS("(from the built-in predictor)");
  unsetenv("GOP_TUNE_DB");
  /* A file that is not a database is an error, and is left alone. */
  const char *junk = tu_write("junk.db", "not a database at all");
  snprintf(args, sizeof args, "run stdlib:copy_u_sum --graph %s --F 2 --db %s", tiny(), junk);
  ck_assert_int_eq(gopc(args), 1);
  ASSERT_OUTPUT_HAS("file is not a database");
  char *text = tu_read_file(junk, NULL);
  ck_assert_str_eq(text, "not a database at all");
  free(text);
}
END_TEST

START_TEST(usage_and_help) {
  ck_assert_int_eq(gopc(""), 2);
  ASSERT_OUTPUT_HAS("usage: gopc COMMAND");
  ck_assert_int_eq(gopc("frobnicate"), 2);
  ASSERT_OUTPUT_HAS("unknown command 'frobnicate'");
  const char *cmds[] = {"check", "emit", "run", "ops", "graph"};
  for (int i = 0; i < 5; i++) {
    char args[64];
    snprintf(args, sizeof args, "%s --help", cmds[i]);
    ck_assert_int_eq(gopc(args), 0);
    ASSERT_OUTPUT_HAS("usage: gopc");
  }
  ck_assert_int_eq(gopc("--help"), 0);
  ck_assert_int_eq(gopc("run stdlib:copy_u_sum --graph"), 2);
  ASSERT_OUTPUT_HAS("--graph needs a value");
  ck_assert_int_eq(gopc("emit --bogus x.gop"), 2);
  ASSERT_OUTPUT_HAS("unknown option --bogus");
}
END_TEST

int main(void) {
  Suite *s = suite_create("gopc");
  TCase *tc = tcase_create("gopc");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, run_copy_u_sum);
  tcase_add_test(tc, run_dtypes);
  tcase_add_test(tc, run_u_mul_e_sum_from_file);
  tcase_add_test(tc, emit_group_row_at_top);
  tcase_add_test(tc, run_max_and_mean_empty_neighbourhood);
  tcase_add_test(tc, run_random_inputs_on_generators);
  tcase_add_test(tc, run_errors);
  tcase_add_test(tc, run_interp_applies_the_schedule);
  tcase_add_test(tc, limits_refused_before_allocating);
  tcase_add_test(tc, output_file_survives_a_failed_run);
  tcase_add_test(tc, check_emit_ops_graph);
  tcase_add_test(tc, run_schedule_source);
  tcase_add_test(tc, run_reorder_auto_takes_the_measured_order);
  tcase_add_test(tc, proxy_graph_takes_the_layout);
  tcase_add_test(tc, usage_and_help);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
