/* tests/unit/test_sddmm.c: the row-based SDDMM schedules (issue 37).
 *
 * sddmm_rows(T), sddmm_rows_reg(T), sddmm_groups(G, T) and
 * sddmm_groups_reg(G, T) on every message and attention operator of the
 * standard library they apply to, run by the interpreter (scheduled and
 * lowered) on a skewed R-MAT graph and a balanced grid, against the
 * unscheduled operator; the operators they cannot lower are refused with
 * the rule. Each scheduled kernel also compiles for sm_90 (tests/ptxas
 * assembles every stdlib operator under them). Then the tuner's side: the
 * candidates of u_dot_v and u_add_v include them, and the lane model reads
 * the destination row once per row.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "graph/graph.h"
#include "lang/lang.h"
#include "passes/passes.h"
#include "testutil.h"
#include "tune/tune.h"

/* The message and attention operators: dot products (a per-edge local
 * reduced over lanes), per-feature messages, edge-scalar scaling, and
 * edge_softmax (no feature loop). */
static const char *const ops[] = {"u_dot_v", "v_dot_u", "e_dot_v", "u_dot_e",
                                  "u_add_v", "u_mul_v", "v_sub_u", "e_add_v",
                                  "e_mul_v", "e_mul_u", "edge_softmax"};
enum { NOPS = sizeof ops / sizeof ops[0] };

/* T = 2 and 8 leave a tail at F = 20 (passes of 8 and 32 features), G = 3
 * and 5 divide few degrees. */
static const char *const scheds[] = {"sddmm_rows(2)",        "sddmm_rows(8)",
                                     "sddmm_rows_reg(2)",    "sddmm_rows_reg(8)",
                                     "sddmm_groups(3, 2)",   "sddmm_groups(5, 8)",
                                     "sddmm_groups_reg(3, 2)", "sddmm_groups_reg(5, 8)"};
enum { NSCHEDS = sizeof scheds / sizeof scheds[0] };

/* Why sched cannot lower op, or NULL. */
static const char *refusal(const char *op, const char *sched) {
  bool reg = strstr(sched, "_reg(") != NULL;
  if (!reg) return NULL;
  if (strstr(op, "_dot_")) return "only perfectly nested loops can be reordered";
  if (strcmp(op, "edge_softmax") == 0) return "does not exist in operator edge_softmax";
  /* the row it holds is the destination's, Y */
  if (strcmp(op, "e_mul_u") == 0) return "loop 'Y' does not exist";
  return NULL;
}

static float *input(int64_t n, uint64_t *seed) {
  float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  for (int64_t k = 0; k < n; k++) x[k] = (float)(tu_lcg(seed) % 2000000) / 1e6f - 1.0f;
  return x;
}

/* Relative L2 of every output of `op`. */
static double worst_error(const IrOp *op, const Graph *g, int64_t F, float **got,
                          float **want) {
  IrExtents ext = tu_extents(op, F);
  double worst = 0;
  for (int i = 0; i < op->ntensors; i++) {
    const IrTensor *t = op->tensors[i];
    if (t->role != IR_ROLE_OUT) continue;
    int64_t n = graph_tensor_numel(t, g, &ext);
    double diff = 0, norm = 0;
    for (int64_t k = 0; k < n; k++) {
      double x = got[i][k], y = want[i][k];
      diff += (x - y) * (x - y);
      norm += y * y;
    }
    double rel = sqrt(diff) / (norm > 0 ? sqrt(norm) : 1);
    if (!(rel <= worst)) worst = rel; /* NaN stays */
  }
  return worst;
}

START_TEST(test_semantics) {
  static const char *graphs[] = {"rmat:9:8", "grid:24x20"};
  static const int64_t widths[] = {6, 20};
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  ck_assert_ptr_nonnull(lib);
  int ran[NSCHEDS] = {0}, refused = 0;
  for (int gi = 0; gi < 2; gi++) {
    Graph *g = graph_open(graphs[gi], &d);
    ck_assert_msg(g != NULL, "%s: %s", graphs[gi], d.buf);
    for (int oi = 0; oi < NOPS; oi++)
      for (int wi = 0; wi < 2; wi++) {
        int64_t F = widths[wi];
        const IrOp *base = ir_module_find_op(lib, ops[oi]);
        ck_assert_msg(base != NULL, "no stdlib operator %s", ops[oi]);
        IrExtents ext = tu_extents(base, F);
        uint64_t seed = 7 + (uint64_t)oi;
        float *in[8] = {0}, *ref[8] = {0};
        for (int i = 0; i < base->ntensors; i++)
          if (base->tensors[i]->role == IR_ROLE_IN)
            in[i] = input(graph_tensor_numel(base->tensors[i], g, &ext), &seed);
        IrOp *plain = tu_lowered(lib, base, NULL, a, &d);
        ck_assert_msg(plain && tu_interp(plain, g, F, in, ref, &d) == 0, "%s", d.buf);
        for (int si = 0; si < NSCHEDS; si++) {
          const char *why = refusal(ops[oi], scheds[si]);
          ir_diag_free(&d);
          ir_diag_init(&d, NULL);
          IrOp *op = tu_lowered(lib, base, scheds[si], a, &d);
          if (why) {
            ck_assert_msg(op == NULL && d.buf && strstr(d.buf, why),
                          "%s under %s: expected a refusal with \"%s\", got:\n%s", ops[oi],
                          scheds[si], why, d.buf ? d.buf : "(accepted)");
            refused++;
            continue;
          }
          ck_assert_msg(op != NULL, "%s under %s refused:\n%s", ops[oi], scheds[si], d.buf);
          float *out[8] = {0};
          ck_assert_msg(tu_interp(op, g, F, in, out, &d) == 0, "%s", d.buf);
          double err = worst_error(op, g, F, out, ref);
          ck_assert_msg(err <= 1e-5, "%s under %s on %s, F = %lld: relative L2 %.3g", ops[oi],
                        scheds[si], graphs[gi], (long long)F, err);
          for (int i = 0; i < 8; i++) free(out[i]);
          if (gi == 0 && wi == 0) { /* the kernels compile */
            CgProgram p = {0};
            ck_assert_msg(cg_compile(op, "sm_90", &p, &d) == 0, "%s under %s: %s", ops[oi],
                          scheds[si], d.buf);
            cg_program_free(&p);
          }
          ran[si]++;
        }
        for (int i = 0; i < 8; i++) free(in[i]), free(ref[i]);
      }
    graph_free(g);
  }
  /* each schedule ran on every operator it is for: rows and groups on all
   * eleven, the register forms on the five per-feature messages with a Y */
  for (int si = 0; si < NSCHEDS; si++)
    ck_assert_int_eq(ran[si], 2 * 2 * (strstr(scheds[si], "_reg(") ? 5 : NOPS));
  ck_assert_int_eq(refused, 2 * 2 * 4 * 6);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* The lowered forms: sddmm_rows_reg loads the row before the edge loop,
 * once, as a local of the @vec loop; sddmm_rows keeps the dot product's
 * shuffle within the team. */
START_TEST(test_lowered_forms) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  IrOp *op = tu_lowered(lib, ir_module_find_op(lib, "u_add_v"), "sddmm_rows_reg(4)", a, &d);
  ck_assert_msg(op != NULL, "%s", d.buf);
  char *text = ir_op_to_string(op);
  ck_assert_int_eq(tu_count(text, "var Y_reg = Y[v, "), 1);
  ck_assert_int_eq(tu_count(text, "+ Y_reg"), 1);
  ck_assert_int_eq(tu_count(text, "Y[v"), 1);  /* read nowhere else */
  ck_assert(strstr(text, "@team(4)") != NULL);
  ck_assert(strstr(strstr(text, "var Y_reg"), "for e in in_edges(v) @unroll(4)") != NULL);
  free(text);
  op = tu_lowered(lib, ir_module_find_op(lib, "u_dot_v"), "sddmm_rows(4)", a, &d);
  ck_assert_msg(op != NULL, "%s", d.buf);
  text = ir_op_to_string(op);
  ck_assert(strstr(text, "shuffle s += ") != NULL);
  free(text);
  CgProgram p = {0};
  ck_assert_msg(cg_compile(op, "sm_90", &p, &d) == 0, "%s", d.buf);
  /* a team of 4: a butterfly of offsets 2 and 1 only */
  ck_assert_int_eq(tu_count(p.ptx, "shfl.sync.bfly.b32"), 2);
  cg_program_free(&p);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* The tuner: tune_space_named (what `gopc tune` measures) and the untuned
 * choice's candidates hold the new schedules for u_dot_v and u_add_v; the
 * lane model charges sddmm_rows the destination rows once per row, where
 * an edge-parallel point reads them once per edge. */
START_TEST(test_tuner_covers) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *lib = lang_stdlib(a, &d);
  Graph *g = graph_open("rmat:10:8", &d);
  ck_assert_ptr_nonnull(g);
  TuneGraphSig sig;
  tune_graph_sig(g, &sig);
  static const struct {
    const char *op;
    const char *named[4];
  } want[] = {{"u_dot_v", {"sddmm_rows(8)", "sddmm_groups(16, 8)", NULL}},
              {"u_add_v",
               {"sddmm_rows(8)", "sddmm_rows_reg(8)", "sddmm_groups_reg(16, 8)",
                "sddmm_groups(16, 8)"}}};
  for (int k = 0; k < 2; k++) {
    const IrOp *op = ir_module_find_op(lib, want[k].op);
    TunePoint *pts = NULL, *choice = NULL;
    int n = tune_space_named(op, lib, a, &pts, &d);
    int m = tune_space_choice(op, lib, false, false, a, &choice, &d);
    ck_assert(n > 0 && m > 0);
    for (int j = 0; j < 4 && want[k].named[j]; j++) {
      bool named = false, chosen = false;
      for (int i = 0; i < n; i++) named |= strcmp(pts[i].text, want[k].named[j]) == 0;
      for (int i = 0; i < m; i++)
        chosen |= strcmp(choice[i].text, want[k].named[j]) == 0 && choice[i].lanes;
      ck_assert_msg(named && chosen, "%s: %s named %d, a lane-model candidate %d", want[k].op,
                    want[k].named[j], named, chosen);
    }
    free(pts);
    free(choice);
  }
  /* bytes: u_dot_v at F = 32 reads X per edge and Y once per row */
  const IrOp *udv = ir_module_find_op(lib, "u_dot_v");
  TuneOpShape shape;
  tune_op_shape(udv, &shape);
  ck_assert_int_eq(shape.edge_rows, 2);
  ck_assert_int_eq(shape.edge_dst_rows, 1);
  TunePoint rows, edge;
  ck_assert_int_eq(tune_point_make(udv, lib, "sddmm_rows(8)", a, &rows, NULL), 0);
  ck_assert(rows.lanes && rows.shuffle && rows.rows == 1 && rows.team == 8 && rows.fpp == 32);
  ck_assert_int_eq(tune_point_make(udv, lib, "warp_edge(1, 1)", a, &edge, NULL), 0);
  TuneCost cr, ce;
  tune_model_cost(&shape, &rows, &sig, 32, &cr);
  tune_model_cost(&shape, &edge, &sig, 32, &ce);
  double row = 32 * 4, E = (double)sig.ne, V = (double)sig.nv;
  ck_assert_double_eq_tol(cr.bytes, E * (row + 4 + 4) + V * row, 1.0);
  ck_assert(ce.bytes >= E * 2 * row);
  /* the untuned choice for u_dot_v is one of them */
  TunePoint *choice = NULL;
  int m = tune_space_choice(udv, lib, false, false, a, &choice, &d);
  tune_model_rank(&shape, choice, m, &sig, 32);
  ck_assert_msg(strncmp(choice[0].text, "sddmm_", 6) == 0, "u_dot_v at F = 32: %s",
                choice[0].text);
  free(choice);
  graph_free(g);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sddmm");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_semantics);
  tcase_add_test(tc, test_lowered_forms);
  tcase_add_test(tc, test_tuner_covers);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
