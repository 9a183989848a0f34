/* tests/unit/test_groups.c: neighbour groups and interleaving (GNNAdvisor,
 * MGG) on real graphs: the group table's invariants, and the lowered IR of
 * every gnnadvisor setting interpreting to the unscheduled result on a
 * skewed graph (blogcatalog) and a balanced one (delaunay_n16), with group
 * sizes that do not divide the degrees and worker counts that do not
 * divide F. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "lang/lang.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "testutil.h"

static RtGraph *open_graph(const char *file) {
  Diag d;
  ir_diag_init(&d, stderr);
  RtGraph *g = rt_graph_read(tu_dataset(file), &d);
  ck_assert_msg(g != NULL, "%s: %s", file, d.buf);
  ir_diag_free(&d);
  return g;
}

/* Every in-edge of every destination in exactly one row, rows of at most G
 * edges of one destination; interleaved tables alternate classes. */
static void check_table(const RtGraph *g, int G, int ilv) {
  Diag d;
  ir_diag_init(&d, stderr);
  const RtGroups *t = rt_graph_groups(g, G, ilv, 0, &d);
  ck_assert_ptr_nonnull(t);
  ck_assert_ptr_eq(rt_graph_groups(g, G, ilv, 0, &d), t); /* cached */
  char *seen = calloc((size_t)g->ne + 1, 1);
  int64_t edges = 0;
  for (int32_t r = 0; r < t->n; r++) {
    int32_t v = t->dst[r];
    ck_assert(v >= 0 && v < g->nv);
    ck_assert(t->first[r] >= g->in_ptr[v] && t->end[r] <= g->in_ptr[v + 1]);
    ck_assert(t->end[r] > t->first[r] && t->end[r] - t->first[r] <= G);
    for (int32_t p = t->first[r]; p < t->end[r]; p++) {
      ck_assert(!seen[p]);
      seen[p] = 1;
      edges++;
    }
    if (ilv && t->nheavy >= ilv && t->n - t->nheavy >= ilv && r < 2 * ilv) {
      /* light rows first, then heavy ones, `ilv` at a time */
      int heavy = g->in_ptr[v + 1] - g->in_ptr[v] > t->thr;
      ck_assert_int_eq(heavy, r >= ilv);
    }
  }
  ck_assert_int_eq(edges, g->ne);
  free(seen);
  ir_diag_free(&d);
}

START_TEST(test_tables) {
  RtGraph *g = open_graph("blogcatalog.mtx.gz");
  check_table(g, 1, 0);
  check_table(g, 7, 0);
  check_table(g, 5, 3);
  rt_graph_free(g);
}
END_TEST

/* The interpreter's result of `op` scheduled by `sched` (NULL: none). */
static float *run(const IrModule *lib, const char *opname, const char *sched,
                  const RtGraph *g, int64_t F, float *x, float *w, Arena *a) {
  Diag d;
  ir_diag_init(&d, stderr);
  IrOp *op = pass_op_copy(ir_module_find_op(lib, opname), a);
  if (sched) {
    ck_assert_msg(pass_schedule_text(op, lib, sched, a, &d) == 0, "%s: %s", sched, d.buf);
    ck_assert_msg(pass_lower(op, a, &d, NULL, NULL) == 0, "%s: %s", sched, d.buf);
  }
  float *y = calloc((size_t)g->nv * (size_t)F, sizeof(float));
  void *bufs[3] = {x, w, y};
  if (op->ninputs == 1) bufs[1] = y;
  IrInterpArgs args = {.graph = g, .mode = IR_INTERP_F32, .buffers = bufs};
  args.extents.n = op->nsyms;
  for (int i = 0; i < op->nsyms; i++) args.extents.value[i] = F;
  ck_assert_msg(ir_interp_run(op, &args, &d) == 0, "%s: %s", sched, d.buf);
  ir_diag_free(&d);
  return y;
}

START_TEST(test_semantics) {
  static const char *graphs[] = {"blogcatalog.mtx.gz", "delaunay_n16.mtx.gz"};
  static const char *ops[] = {"u_mul_e_sum", "copy_u_max"};
  /* G 3, 5, 8 divide few degrees; T 2 and 3 do not divide F, 32 exceeds it */
  static const char *scheds[] = {"gnnadvisor(3, 2)", "gnnadvisor_mgg(5, 3, 2)",
                                 "gnnadvisor_shared(8, 32, 4)"};
  const int64_t F = 5;
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *lib = lang_stdlib(a, &d);
  ck_assert_ptr_nonnull(lib);
  for (int gi = 0; gi < 2; gi++) {
    RtGraph *g = open_graph(graphs[gi]);
    float *x = malloc(sizeof(float) * (size_t)g->nv * F);
    float *w = malloc(sizeof(float) * ((size_t)g->ne + 1));
    for (int64_t i = 0; i < g->nv * F; i++) x[i] = (float)((i * 7919 % 2001) - 1000) / 1000.0f;
    for (int64_t i = 0; i < g->ne; i++) w[i] = (float)((i * 104729 % 2001) - 1000) / 1000.0f;
    for (int oi = 0; oi < 2; oi++) {
      float *ref = run(lib, ops[oi], NULL, g, F, x, w, a);
      for (int si = 0; si < 3; si++) {
        float *y = run(lib, ops[oi], scheds[si], g, F, x, w, a);
        double num = 0, den = 0;
        bool exact = strstr(ops[oi], "max") != NULL;
        for (int64_t i = 0; i < g->nv * F; i++) {
          ck_assert_msg(!isnan(y[i]), "%s %s %s: NaN at %lld", graphs[gi], ops[oi],
                        scheds[si], (long long)i);
          if (exact) ck_assert_msg(y[i] == ref[i], "%s %s %s differs at %lld", graphs[gi],
                                   ops[oi], scheds[si], (long long)i);
          num += ((double)y[i] - ref[i]) * ((double)y[i] - ref[i]);
          den += (double)ref[i] * ref[i];
        }
        ck_assert_msg(sqrt(num) <= 1e-5 * sqrt(den) + 1e-30, "%s %s %s: rel L2 %g",
                      graphs[gi], ops[oi], scheds[si], sqrt(num / (den + 1e-30)));
        free(y);
      }
      free(ref);
    }
    free(x);
    free(w);
    rt_graph_free(g);
  }
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* The IR text of neighbour groups: what the verifier refuses. */
START_TEST(test_ir_text) {
  static const struct {
    const char *text, *error;
  } bad[] = {
      {"op a(X: f32[src]) -> Y: f32[dst] {\n"
       "  for g in groups(2) {\n    for v in dst {\n    }\n  }\n}\n",
       "nested"},
      {"op b(X: f32[src]) -> Y: f32[dst] {\n"
       "  for v in dst @interleave(2) {\n  }\n}\n",
       "belong on a groups loop"},
      {"op c(X: f32[src]) -> Y: f32[dst] {\n"
       "  for v in dst {\n    for e in group_edges(v) {\n    }\n  }\n}\n",
       "`group_edges` takes the variable of an enclosing"},
      {"op d(X: f32[src]) -> Y: f32[dst] {\n"
       "  for g in groups(2) @thread @shared {\n    for e in group_edges(g) {\n"
       "      shared Y[dst(e)] += X[src(e)]\n    }\n  }\n}\n",
       "is not bound to warp"},
      {"op e(X: f32[src]) -> Y: f32[dst] {\n"
       "  for g in groups(2) @warp {\n    for e in group_edges(g) {\n"
       "      shared Y[dst(e)] += X[src(e)]\n    }\n  }\n}\n",
       "in no @shared groups loop"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    Arena *a = ir_arena_new();
    Diag d;
    ir_diag_init(&d, NULL);
    IrModule *m = lang_parse_ir(a, &d, "<test>", bad[i].text);
    if (m)
      for (int k = 0; k < m->nops; k++) ir_verify_op(m->ops[k], &d, "test");
    ck_assert_msg(d.nerrors > 0 && strstr(d.buf, bad[i].error), "%zu: want `%s`, got:\n%s",
                  i, bad[i].error, d.buf);
    ir_diag_free(&d);
    ir_arena_free(a);
  }
}
END_TEST

/* Code generation of a @shared stage: the launch metadata the runtime needs
 * (group table, shared tensor) survives a kernel pack. */
START_TEST(test_codegen_pack) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *lib = lang_stdlib(a, &d);
  IrOp *op = pass_op_copy(ir_module_find_op(lib, "copy_u_sum"), a);
  ck_assert_int_eq(pass_schedule_text(op, lib, "gnnadvisor_shared(3, 16, 4); "
                                      "interleave(eo, 2, 2)", a, &d), 0);
  ck_assert_int_eq(pass_lower(op, a, &d, NULL, NULL), 0);
  CgProgram p = {0}, q = {0};
  ck_assert_msg(cg_compile(op, "sm_90", &p, &d) == 0, "%s", d.buf);
  ck_assert_int_eq(p.nkernels, 1);
  const CgKernel *k = &p.kernels[0];
  ck_assert_int_eq(k->group, 3);
  ck_assert_int_eq(k->group_ilv, 2);
  ck_assert_int_eq(k->shared_tensor, ir_op_find_tensor(op, "Y")->id);
  ck_assert_int_eq(k->threads, 128);
  ck_assert_int_eq(k->launch.kind, CG_LAUNCH_FILL);
  bool has_table = false;
  for (int i = 0; i < k->nparams; i++) has_table |= k->params[i].kind == CG_PARAM_NGROUPS;
  ck_assert(has_table);
  ck_assert(strstr(p.ptx, "bar.sync") && strstr(p.ptx, ".extern .shared"));
  const char *path = tu_write("groups.pack", "");
  ck_assert_int_eq(cg_pack_write(&p, path, &d), 0);
  ck_assert_msg(cg_pack_read(path, &q, &d) == 0, "%s", d.buf);
  ck_assert_int_eq(q.kernels[0].group, 3);
  ck_assert_int_eq(q.kernels[0].group_ilv, 2);
  ck_assert_int_eq(q.kernels[0].group_thr, 0);
  ck_assert_int_eq(q.kernels[0].shared_tensor, k->shared_tensor);
  cg_program_free(&p);
  cg_program_free(&q);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

int main(void) {
  Suite *s = suite_create("groups");
  TCase *tc = tcase_create("groups");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_tables);
  tcase_add_test(tc, test_ir_text);
  tcase_add_test(tc, test_codegen_pack);
  tcase_add_test(tc, test_semantics);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
