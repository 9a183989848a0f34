/* tests/unit/test_transpose.c: transpose(), an operator on the reversed
 * graph (passes/transpose.c, graph_transposed).
 *
 * - Semantics: the sums' derived gradients (which walk out-edges) and
 *   forward operators of every kind, under transpose() alone and followed
 *   by the forward's schedules (neighbour groups, teams, rows, MGG's
 *   interleaving, deterministic()), interpreted on directed graphs whose
 *   in- and out-degrees differ (a star of out-edges, R-MAT, wiki-Vote),
 *   give the unscheduled result; and the flag is what makes them right
 *   (the same lowered operator without it, on the graph as given, does
 *   not).
 * - The reversed graph: arcs turned round, edge ids kept, a memo; a graph
 *   built on the device is refused with the way out.
 * - Refusals: transpose() after a loop is bound or grouped, with
 *   arguments; `graph reversed` in a .gop source. Its IR text round trip.
 * - The program: compiled to load edge ids, `graph reversed` in its pack,
 *   through ptxas.
 * - The search space: an operator walking out-edges gets points on the
 *   reversed graph, the choice drops them for a graph built on the
 *   device.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "grad/grad.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "lang/lang.h"
#include "passes/passes.h"
#include "tune/tune.h"
#include "testutil.h"

/* A directed star: vertex 0 -> every other (one vertex of out-degree
 * n - 1, the rest of in-degree 1), plus a ring, so every vertex has an
 * in-edge and an out-edge and the degrees differ. */
static Graph *star(int n, Diag *d) {
  int64_t ne = 2 * (int64_t)(n - 1);
  int64_t *s = malloc(sizeof *s * (size_t)ne), *t = malloc(sizeof *t * (size_t)ne);
  int64_t k = 0;
  for (int v = 1; v < n; v++) s[k] = 0, t[k++] = v;
  for (int v = 1; v < n; v++) s[k] = v, t[k++] = v % (n - 1) + 1;
  Graph *g = graph_from_coo(n, ne, s, t, "star", d, (Loc){0});
  free(s);
  free(t);
  ck_assert_msg(g != NULL, "%s", d->buf ? d->buf : "");
  return g;
}

/* The operator of `name`, or its gradient by `wrt` (NULL: the forward). */
static IrOp *the_op(IrModule *lib, const char *name, const char *wrt, Arena *a, Diag *d) {
  IrOp *op = ir_module_find_op(lib, name);
  ck_assert_msg(op != NULL, "no op %s", name);
  if (!wrt) return op;
  IrOp *g = grad_derive(a, op, wrt, d);
  ck_assert_msg(g != NULL, "%s d%s: %s", name, wrt, d->buf ? d->buf : "");
  return g;
}

static void fill_inputs(const IrOp *op, const Graph *g, int64_t F, float **in, uint64_t *seed) {
  IrExtents ext = tu_extents(op, F);
  for (int i = 0; i < op->ntensors; i++) {
    if (op->tensors[i]->role != IR_ROLE_IN) continue;
    int64_t n = graph_tensor_numel(op->tensors[i], g, &ext);
    in[i] = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t k = 0; k < n; k++) {
      uint64_t r = tu_lcg(seed);
      in[i][k] = (float)((r >> 1) % 1000000) / 1e6f + 0.5f;
      if (r & 1) in[i][k] = -in[i][k];
    }
  }
}

/* The relative L2 distance between the outputs of `op` in `a` and `b`;
 * aborts on a NaN. */
static double distance(const IrOp *op, const Graph *g, int64_t F, float **x, float **y) {
  IrExtents ext = tu_extents(op, F);
  double num = 0, den = 0;
  for (int i = 0; i < op->ntensors; i++) {
    if (op->tensors[i]->role != IR_ROLE_OUT) continue;
    int64_t n = graph_tensor_numel(op->tensors[i], g, &ext);
    for (int64_t k = 0; k < n; k++) {
      if (isnan(x[i][k]) || isnan(y[i][k])) ck_abort_msg("%s: NaN at %lld", op->name, (long long)k);
      num += ((double)x[i][k] - y[i][k]) * ((double)x[i][k] - y[i][k]);
      den += (double)y[i][k] * y[i][k];
    }
  }
  return sqrt(num / (den + 1e-30));
}

static void free_all(float **b) {
  for (int i = 0; i < 16; i++) free(b[i]), b[i] = NULL;
}

START_TEST(semantics) {
  static const struct {
    const char *op, *wrt;
  } ops[] = {{"u_mul_e_sum", "X"}, {"copy_u_sum", "X"},  {"copy_u_mean", "X"},
             {"u_mul_e_mean", "X"}, {"u_mul_e_sum", "W"}, {"copy_u_sum", NULL},
             {"u_mul_e_sum", NULL}, {"copy_u_max", NULL}, {"u_dot_v", NULL},
             {"edge_softmax", NULL}};
  static const char *scheds[] = {
      "transpose()", "transpose(); spmm_teams(4, 8)", "transpose(); spmm_groups(3, 4)",
      "transpose(); spmm_rows(2, 4)", "transpose(); gnnadvisor_mgg(5, 3, 2)",
      "transpose(); deterministic(); spmm_groups(3, 4)", "transpose(); spmm_teams8(32, 4)",
      "transpose(); transpose(); spmm_rows(2, 4)", "transpose(); softmax_rows(4)"};
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  ck_assert_ptr_nonnull(lib);
  Graph *graphs[3] = {star(200, &d), graph_generate("rmat:10:8", &d),
                      tu_quick() ? NULL : tu_graph("wiki-Vote.mtx.gz")};
  ck_assert(graphs[0] && graphs[1]);
  uint64_t seed = 99;
  int accepted = 0, grouped = 0;
  for (int gi = 0; gi < 3 && graphs[gi]; gi++) {
    const Graph *g = graphs[gi];
    int64_t F = gi == 2 ? 5 : 12;
    for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
      IrOp *base = the_op(lib, ops[oi].op, ops[oi].wrt, a, &d);
      ck_assert(base->ntensors <= 16);
      float *in[16] = {0}, *ref[16] = {0};
      fill_inputs(base, g, F, in, &seed);
      ck_assert_msg(tu_interp(base, g, F, in, ref, &d) == 0, "%s: %s", base->name, d.buf);
      for (size_t si = 0; si < sizeof scheds / sizeof scheds[0]; si++) {
        Diag why;
        ir_diag_init(&why, NULL);
        IrOp *op = tu_lowered(lib, base, scheds[si], a, &why);
        if (op) {
          accepted++;
          char *text = ir_op_to_string(op);
          bool reversed = strstr(text, " graph reversed {") != NULL;
          ck_assert_msg(reversed == (tu_count(scheds[si], "transpose()") % 2 == 1),
                        "%s %s: the flag is %d", base->name, scheds[si], reversed);
          grouped += ops[oi].wrt && strstr(text, "groups(") != NULL;
          free(text);
          float *y[16] = {0};
          ck_assert_msg(tu_interp(op, g, F, in, y, &d) == 0, "%s %s: %s", base->name,
                        scheds[si], d.buf);
          double e = distance(base, g, F, y, ref);
          ck_assert_msg(e <= 1e-5, "%s %s on %s: relative L2 error %g", base->name,
                        scheds[si], g->name, e);
          free_all(y);
        }
        ir_diag_free(&why);
      }
      free_all(in);
      free_all(ref);
    }
  }
  /* the gradients took the forward's neighbour groups */
  ck_assert_msg(grouped >= 20, "only %d grouped gradients", grouped);
  ck_assert_msg(accepted >= 80, "only %d accepted", accepted);
  for (int gi = 0; gi < 3; gi++) graph_free(graphs[gi]);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* The lowered operator without its flag, run on the graph as given, is
 * wrong: the interpreter's answer rests on running the reversed graph. */
START_TEST(flag_matters) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  Graph *g = star(64, &d);
  IrOp *base = the_op(lib, "u_mul_e_sum", "X", a, &d);
  IrOp *op = tu_lowered(lib, base, "transpose(); spmm_groups(3, 4)", a, &d);
  ck_assert_msg(op && op->transposed, "%s", d.buf ? d.buf : "");
  uint64_t seed = 5;
  float *in[16] = {0}, *ref[16] = {0}, *y[16] = {0}, *z[16] = {0};
  fill_inputs(base, g, 8, in, &seed);
  ck_assert_int_eq(tu_interp(base, g, 8, in, ref, &d), 0);
  ck_assert_int_eq(tu_interp(op, g, 8, in, y, &d), 0);
  ck_assert_double_le(distance(base, g, 8, y, ref), 1e-6);
  IrOp plain = *op;
  plain.transposed = false;
  ck_assert_int_eq(tu_interp(&plain, g, 8, in, z, &d), 0);
  ck_assert_double_gt(distance(base, g, 8, z, ref), 0.1);
  free_all(in), free_all(ref), free_all(y), free_all(z);
  graph_free(g);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

START_TEST(reversed_graph) {
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = star(10, &d);
  const Graph *t = graph_transposed(g, &d, (Loc){0});
  ck_assert_ptr_nonnull(t);
  ck_assert_ptr_eq(graph_transposed(g, &d, (Loc){0}), t); /* a memo */
  ck_assert_int_eq(t->nv, g->nv);
  ck_assert_int_eq(t->ne, g->ne);
  for (int64_t e = 0; e < g->ne; e++) {
    ck_assert_int_eq(t->src[e], g->dst[e]);
    ck_assert_int_eq(t->dst[e], g->src[e]);
  }
  for (int32_t v = 0; v <= g->nv; v++) ck_assert_int_eq(t->in_ptr[v], g->out_ptr[v]);
  for (int64_t k = 0; k < g->ne; k++) {
    ck_assert_int_eq(t->in_eid[k], g->out_eid[k]);
    ck_assert_int_eq(t->in_src[k], g->out_dst[k]);
  }
  ck_assert_int_eq(t->stats.in_deg_max, g->stats.out_deg_max);
  ck_assert_int_eq(t->stats.in_deg_max, 9);
  bool csr = true; /* its edge ids are its CSR positions only where so */
  for (int64_t k = 0; k < t->ne; k++) csr = csr && t->in_eid[k] == k;
  ck_assert(t->csr_edges == csr);
  /* a graph built on the device has no arcs here to turn round */
  Graph dev = {.name = "edge_index", .nv = 4, .ne = 3, .device_only = true};
  ck_assert_ptr_null(graph_transposed(&dev, &d, (Loc){"api", 0, 0}));
  ck_assert_msg(d.buf && strstr(d.buf, "edge_index was built on the device") &&
                    strstr(d.buf, "build the graph on the host"),
                "%s", d.buf ? d.buf : "");
  graph_free(g);
  ir_diag_free(&d);
}
END_TEST

static void refused(IrModule *lib, IrOp *op, const char *sched, const char *want) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_msg(tu_lowered(lib, op, sched, a, &d) == NULL, "`%s` was not refused", sched);
  ck_assert_msg(d.buf && strstr(d.buf, want), "`%s`: expected\n  %s\nin\n%s", sched, want,
                d.buf ? d.buf : "");
  ir_diag_free(&d);
  ir_arena_free(a);
}

START_TEST(refusals_and_text) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  IrOp *sum = the_op(lib, "copy_u_sum", NULL, a, &d);
  refused(lib, sum, "bind(v, warp); transpose()",
          "transpose: loop 'v' is already bound to warp; transpose it before binding it");
  refused(lib, sum, "group(e, 4); transpose()",
          "transpose: loop 'eo' is already a groups loop; transpose the operator before "
          "any other directive");
  refused(lib, sum, "transpose(1)", "transpose takes no arguments");
  refused(lib, sum, "unroll(e, 2); transpose()", "transpose: loop 'e' is marked @unroll");
  /* the forward's schedules on the gradient without it: refused, and the
   * message says how */
  refused(lib, the_op(lib, "copy_u_sum", "X", a, &d), "spmm_teams(4, 8)",
          "or transpose() the operator first");
  /* in a .gop source the flag is refused; in IR text it round-trips */
  const char *src =
      "op s(X: f32[dst, F]) -> Y: f32[src, F] graph reversed {\n"
      "  for u in src {\n    for e in out_edges(u) {\n      for f in 0..F {\n"
      "        Y[u, f] += X[dst(e), f]\n      }\n    }\n  }\n}\n";
  ck_assert_ptr_null(lang_compile(a, &d, "s.gop", src));
  ck_assert_msg(d.buf && strstr(d.buf, "s.gop:1:40: error: `graph reversed` after the "
                                       "results of op `s` is IR text"),
                "%s", d.buf ? d.buf : "");
  ir_diag_free(&d);
  ir_diag_init(&d, NULL);
  IrModule *m = lang_parse_ir(a, &d, "s.ir", src);
  ck_assert_msg(m && m->nops == 1 && m->ops[0]->transposed, "%s", d.buf ? d.buf : "");
  char *text = ir_op_to_string(m->ops[0]);
  ck_assert_str_eq(text, src);
  free(text);
  ck_assert_ptr_null(lang_parse_ir(a, &d, "t.ir", "op t(X: f32[src, F]) -> Y: f32[dst, F] "
                                                  "graph sideways { }\n"));
  ck_assert_msg(d.buf && strstr(d.buf, "found `graph sideways`"), "%s", d.buf ? d.buf : "");
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

START_TEST(program_and_pack) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  IrOp *grad = the_op(lib, "u_mul_e_sum", "X", a, &d);
  IrOp *op = tu_lowered(lib, grad, "transpose(); spmm_teams(64, 8)", a, &d);
  ck_assert_msg(op != NULL, "%s", d.buf ? d.buf : "");
  CgProgram p, back;
  /* asked for CSR edge ids, compiled to load them: the reversed graph's
   * edge ids are the graph's */
  ck_assert_msg(cg_compile_layout(op, "sm_90", (CgLayout){32, true}, &p, &d) == 0, "%s",
                d.buf ? d.buf : "");
  ck_assert(p.transposed && !p.csr_edges);
  int eids = 0;
  for (int k = 0; k < p.nkernels; k++)
    for (int i = 0; i < p.kernels[k].nparams; i++)
      eids += p.kernels[k].params[i].kind == CG_PARAM_IN_EID;
  ck_assert_int_gt(eids, 0);
  char *log = tu_assemble(p.ptx, "sm_90", "transpose_teams");
  free(log);
  char path[512];
  snprintf(path, sizeof path, "%s/transposed.pack", tu_tmpdir());
  ck_assert_int_eq(cg_pack_write(&p, path, &d), 0);
  char *text = tu_read_file(path, NULL);
  ck_assert_ptr_nonnull(strstr(text, "\ngraph reversed\n"));
  free(text);
  ck_assert_msg(cg_pack_read(path, &back, &d) == 0, "%s", d.buf ? d.buf : "");
  ck_assert(back.transposed && !back.csr_edges);
  cg_program_free(&back);
  cg_program_free(&p);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

START_TEST(search_space) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  IrOp *grad = the_op(lib, "copy_u_sum", "X", a, &d);
  TunePoint *pts = NULL;
  int n = tune_space_named(grad, lib, a, &pts, &d);
  ck_assert_int_gt(n, 0);
  int grouped = 0;
  for (int i = 0; i < n; i++) {
    bool prefixed = strncmp(pts[i].text, TUNE_TRANSPOSE, strlen(TUNE_TRANSPOSE)) == 0;
    ck_assert_msg(prefixed == pts[i].reversed, "%s", pts[i].text);
    grouped += pts[i].reversed && pts[i].groups;
  }
  ck_assert_int_gt(grouped, 10);
  free(pts);
  /* a forward walks in-edges: no reversed point */
  n = tune_space_named(the_op(lib, "copy_u_sum", NULL, a, &d), lib, a, &pts, &d);
  for (int i = 0; i < n; i++) ck_assert_msg(!pts[i].reversed, "%s", pts[i].text);
  free(pts);
  /* the choice's candidates, and none for a graph built on the device */
  n = tune_space_choice(grad, lib, false, false, a, &pts, &d);
  int lanes_reversed = 0;
  for (int i = 0; i < n; i++) lanes_reversed += pts[i].reversed && pts[i].lanes;
  ck_assert_int_gt(lanes_reversed, 0);
  free(pts);
  n = tune_space_choice(grad, lib, false, true, a, &pts, &d);
  ck_assert_int_gt(n, 0);
  for (int i = 0; i < n; i++) ck_assert_msg(!pts[i].reversed, "%s", pts[i].text);
  free(pts);
  /* a reversed point's text is parsed back as the tuning database keeps it */
  TunePoint q;
  ck_assert_int_eq(tune_point_make(grad, lib, "transpose(); spmm_teams(64, 8)", a, &q, NULL), 0);
  ck_assert(q.reversed && q.lanes && q.egroup == 64 && q.team == 8);
  ck_assert_int_eq(tune_point_make(grad, lib, "deterministic(); transpose(); spmm_groups(8, 4)",
                                   a, &q, NULL), 0);
  ck_assert(q.reversed && q.groups);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

int main(void) {
  Suite *s = suite_create("transpose");
  TCase *tc = tcase_create("transpose");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, semantics);
  tcase_add_test(tc, flag_matters);
  tcase_add_test(tc, reversed_graph);
  tcase_add_test(tc, refusals_and_text);
  tcase_add_test(tc, program_and_pack);
  tcase_add_test(tc, search_space);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
