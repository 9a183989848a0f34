/* tests/unit/test_prefetch.c: prefetch(e), the per-edge scalars of an edge
 * loop loaded 32 edges at a time and broadcast through warp shuffles
 * (passes/prefetch.c, codegen/loop.c).
 *
 *   - semantics: the prefetching named schedules, lowered and run by the
 *     interpreter, give the unscheduled operator's result on a skewed
 *     R-MAT graph (in-degrees above and below 32, vertices with none) and
 *     a grid (degrees 2..4), at F = 40 (a feature tail: some lanes idle)
 *     and F = 128;
 *   - refusals, each naming the loop and the reason;
 *   - code: the PTX has the activemask, the shuffles and no per-lane load
 *     of the edge's index or weight in the edge loop, for sm_80 and sm_90.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "lang/lang.h"
#include "passes/passes.h"
#include "testutil.h"

static IrModule *lib_of(Arena *a) {
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *m = lang_stdlib(a, &d);
  ck_assert_msg(m != NULL, "%s", d.buf);
  ir_diag_free(&d);
  return m;
}

/* The interpreter's outputs of `opname` under `sched` (NULL: none), by
 * tensor id; inputs from `in` (by tensor id). */
static float *run(const IrModule *lib, const char *opname, const char *sched, const Graph *g,
                  int64_t F, float **in, Arena *a) {
  Diag d;
  ir_diag_init(&d, NULL);
  IrOp *op = tu_lowered(lib, ir_module_find_op(lib, opname), sched, a, &d);
  ck_assert_msg(op != NULL, "%s: %s", sched, d.buf);
  if (sched) {
    char *text = ir_op_to_string(op);
    ck_assert_msg(strstr(text, "@prefetch") != NULL, "%s: no @prefetch", sched);
    free(text);
  }
  float *out[16] = {0};
  ck_assert_msg(tu_interp(op, g, F, in, out, &d) == 0, "%s: %s", sched, d.buf);
  ir_diag_free(&d);
  return out[op->ninputs]; /* the one output */
}

START_TEST(test_semantics) {
  static const char *graphs[] = {"rmat:9:16:7", "grid:12x9"};
  static const char *ops[] = {"u_mul_e_sum", "copy_u_sum", "copy_u_mean", "copy_u_max"};
  static const char *scheds[] = {"spmm_vec4p(4)",     "spmm_vec4p(1)", "spmm_groupsp(32, 4)",
                                 "spmm_groupsp(7, 2)", "gnnadvisorp(16, 32)",
                                 "gnnadvisorp(5, 3)"};
  static const int64_t widths[] = {40, 128};
  Arena *a = ir_arena_new();
  IrModule *lib = lib_of(a);
  uint64_t seed = 99;
  for (int gi = 0; gi < 2; gi++) {
    Diag d;
    ir_diag_init(&d, stderr);
    Graph *g = graph_generate(graphs[gi], &d);
    ck_assert_msg(g != NULL, "%s: %s", graphs[gi], d.buf);
    ir_diag_free(&d);
    if (gi == 0) { /* the cases the chunks of 32 edges must cover */
      int above = 0, below = 0, none = 0;
      for (int v = 0; v < g->nv; v++) {
        int deg = g->in_ptr[v + 1] - g->in_ptr[v];
        above += deg > 32;
        below += deg > 0 && deg < 32;
        none += deg == 0;
      }
      ck_assert_msg(above && below && none, "rmat: %d above 32, %d below, %d none", above,
                    below, none);
    }
    for (int wi = 0; wi < 2; wi++) {
      int64_t F = widths[wi];
      for (size_t oi = 0; oi < sizeof ops / sizeof *ops; oi++) {
        IrOp *op = ir_module_find_op(lib, ops[oi]);
        IrExtents ext = tu_extents(op, F);
        float *in[8] = {0};
        for (int i = 0; i < op->ntensors; i++) {
          if (op->tensors[i]->role != IR_ROLE_IN) continue;
          int64_t n = graph_tensor_numel(op->tensors[i], g, &ext);
          in[i] = malloc(sizeof(float) * (size_t)n);
          for (int64_t k = 0; k < n; k++)
            in[i][k] = (float)(tu_lcg(&seed) % 2000000) / 1e6f - 1.0f;
        }
        float *ref = run(lib, ops[oi], NULL, g, F, in, a);
        int64_t n = (int64_t)g->nv * F;
        for (size_t si = 0; si < sizeof scheds / sizeof *scheds; si++) {
          float *y = run(lib, ops[oi], scheds[si], g, F, in, a);
          double num = 0, den = 0;
          for (int64_t k = 0; k < n; k++) {
            ck_assert_msg(!isnan(y[k]), "%s %s %s F=%lld: NaN", graphs[gi], ops[oi],
                          scheds[si], (long long)F);
            if (strstr(ops[oi], "max"))
              ck_assert_msg(y[k] == ref[k], "%s %s %s F=%lld: differs at %lld", graphs[gi],
                            ops[oi], scheds[si], (long long)F, (long long)k);
            num += ((double)y[k] - ref[k]) * ((double)y[k] - ref[k]);
            den += (double)ref[k] * ref[k];
          }
          ck_assert_msg(sqrt(num) <= 1e-5 * sqrt(den) + 1e-30, "%s %s %s F=%lld: rel L2 %g",
                        graphs[gi], ops[oi], scheds[si], (long long)F,
                        sqrt(num / (den + 1e-30)));
          free(y);
        }
        free(ref);
        for (int i = 0; i < 8; i++) free(in[i]);
      }
    }
    graph_free(g);
  }
  ir_arena_free(a);
}
END_TEST

/* Refusals name the loop and the reason, and change nothing. */
START_TEST(test_refusals) {
  static const char *src =
      "op wide(X: f32[src, F], W: f32[edge, F]) -> Y: f32[dst, F] {\n"
      "  for v in dst {\n    for e in in_edges(v) {\n      for f in 0..F {\n"
      "        Y[v, f] += X[src(e), f] * W[e, f]\n      }\n    }\n  }\n}\n";
  static const struct {
    const char *op, *sched, *want;
  } cases[] = {
      {"copy_u_sum", "spmm_rows(4, 4); prefetch(e)",
       "prefetch: the edges of loop 'e' (of vo * 4 + ln / 8) depend on lane loop 'ln'"},
      {"copy_u_sum", "thread_vertex(1, 1); prefetch(e)",
       "prefetch: loop 'e' is not in a warp"},
      {"copy_u_sum", "bind(v, warp); prefetch(e)",
       "prefetch: the lanes of warp loop 'v' are not on a loop around 'e'"},
      {"copy_u_sum", "group(v, 32) -> (vo, vi); bind(vo, warp); bind(vi, lane); prefetch(e)",
       "prefetch: the edges of loop 'e' (of vo * 32 + vi) depend on lane loop 'vi'"},
      {"copy_u_sum", "prefetch(v)", "prefetch: loop 'v' is a dst loop; only the edge loop"},
      {"copy_u_sum", "prefetch(e); prefetch(e)", "prefetch: loop 'e' is already prefetched"},
      {"copy_u_sum", "group(e, 4) -> (eo, ei); bind(eo, warp); bind(ei, lane); prefetch(ei)",
       "prefetch: loop 'ei' is bound to lane"},
      {"copy_u_sum", "prefetch(x)", "prefetch: loop 'x' does not exist"},
      {"wide", "spmm_vec4p(4)",
       "prefetch: W[e, fo * 128 + (fl * 4 + fv)] in loop 'e' depends on more than the edge"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    Arena *a = ir_arena_new();
    IrModule *lib = lib_of(a);
    Diag d;
    ir_diag_init(&d, NULL);
    IrOp *op = ir_module_find_op(lib, cases[i].op);
    if (!op) {
      IrModule *m = lang_compile(a, &d, "wide.gop", src);
      ck_assert_msg(m != NULL, "%s", d.buf);
      op = m->ops[0];
    }
    op = pass_op_copy(op, a);
    char *before = ir_op_to_string(op);
    int rc = pass_schedule_text(op, lib, cases[i].sched, a, &d);
    if (rc == 0) rc = pass_lower(op, a, &d, NULL, NULL);
    ck_assert_msg(rc != 0, "`%s` was not refused", cases[i].sched);
    ck_assert_msg(d.buf && strstr(d.buf, cases[i].want), "`%s`: expected\n  %s\nin\n%s",
                  cases[i].sched, cases[i].want, d.buf);
    char *after = ir_op_to_string(op);
    ck_assert_msg(strcmp(before, after) == 0, "`%s`: the refusal changed the op",
                  cases[i].sched);
    free(before);
    free(after);
    ir_diag_free(&d);
    ir_arena_free(a);
  }
}
END_TEST

/* IR text: @prefetch reads back, and lowering checks it there too. */
START_TEST(test_ir_text) {
  static const char *bad =
      "op s(X: f32[src, F]) -> Y: f32[dst, F] {\n"
      "  for v in dst @thread {\n    for f in 0..F {\n"
      "      var acc = 0.0\n      for e in in_edges(v) @prefetch {\n"
      "        acc += X[src(e), f]\n      }\n      Y[v, f] = acc\n    }\n  }\n}\n";
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *m = lang_parse_ir(a, &d, "bad.ir", bad);
  ck_assert_msg(m != NULL, "%s", d.buf);
  ck_assert_int_ne(pass_lower(m->ops[0], a, &d, NULL, NULL), 0);
  ck_assert_msg(strstr(d.buf, "bad.ir:5:7: error: prefetch: loop 'e' is not in a warp"), "%s",
                d.buf);
  static const char *twice = "op s(X: f32[src, F]) -> Y: f32[dst, F] {\n"
                             "  for v in dst {\n    for e in in_edges(v) @prefetch @prefetch {\n"
                             "      for f in 0..F {\n        Y[v, f] += X[src(e), f]\n"
                             "      }\n    }\n  }\n}\n";
  Diag q;
  ir_diag_init(&q, NULL);
  ck_assert_ptr_null(lang_parse_ir(a, &q, "twice.ir", twice));
  ck_assert_msg(strstr(q.buf, "`@prefetch` takes no argument and is given once"), "%s", q.buf);
  ir_diag_free(&q);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* The PTX: one activemask per prefetched loop emission, index and weight
 * shuffles, and no warning (LLVM unrolls the loop of whole chunks). */
START_TEST(test_ptx) {
  static const char *targets[] = {"sm_80", "sm_90"};
  static const struct {
    const char *op, *sched;
    int f32_shfl; /* weights broadcast: u_mul_e_sum's W[e] */
  } cases[] = {
      {"u_mul_e_sum", "spmm_vec4p(4)", 1},
      {"copy_u_sum", "spmm_vec4p(4)", 0},
      {"u_mul_e_sum", "spmm_groupsp(32, 4)", 1},
      {"copy_u_mean", "gnnadvisorp(16, 32)", 0},
  };
  for (int ti = 0; ti < 2; ti++)
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
      Arena *a = ir_arena_new();
      IrModule *lib = lib_of(a);
      Diag d;
      ir_diag_init(&d, NULL);
      IrOp *op = pass_op_copy(ir_module_find_op(lib, cases[i].op), a);
      ck_assert_int_eq(pass_schedule_text(op, lib, cases[i].sched, a, &d), 0);
      ck_assert_int_eq(pass_lower(op, a, &d, NULL, NULL), 0);
      CgProgram p = {0};
      ck_assert_msg(cg_compile(op, targets[ti], &p, &d) == 0, "%s", d.buf);
      ck_assert_msg(d.nwarnings == 0 && (!d.buf || !strstr(d.buf, "warning")), "%s %s: %s",
                    cases[i].op, cases[i].sched, d.buf);
      ck_assert_msg(tu_count(p.ptx, "activemask.b32") >= 1, "%s", p.ptx);
      ck_assert_msg(tu_count(p.ptx, "shfl.sync.idx.b32") >= 2, "%s", p.ptx);
      /* the source index comes from a shuffle, the weight too: in the
       * weighted op every edge loop broadcasts both */
      if (cases[i].f32_shfl)
        ck_assert_msg(tu_count(p.ptx, "shfl.sync.idx.b32\t%f") >= 2, "%s", p.ptx);
      else
        ck_assert_msg(tu_count(p.ptx, "shfl.sync.idx.b32\t%f") == 0, "%s", p.ptx);
      free(tu_assemble(p.ptx, targets[ti], "prefetch"));
      cg_program_free(&p);
      ir_diag_free(&d);
      ir_arena_free(a);
    }
}
END_TEST

/* A chunk with fewer than 32 edges (a short group, or F = 32, where 8
 * lanes are active) is unrolled as @unroll(U) says, U copies at a time and
 * the r < U left straight-line (codegen/loop.c chunk_edges, through
 * `unrolled`), so its rows are in flight together: under spmm_groupsp(32, 4) the
 * vector body's 16-byte gathers are the whole chunk's 4, the partial
 * chunk's 4 and its tails' 3 + 2 + 1 (rolled, the partial chunk had one). */
START_TEST(test_partial_chunk_unrolled) {
  Arena *a = ir_arena_new();
  IrModule *lib = lib_of(a);
  Diag d;
  ir_diag_init(&d, NULL);
  IrOp *op = pass_op_copy(ir_module_find_op(lib, "copy_u_sum"), a);
  ck_assert_int_eq(pass_schedule_text(op, lib, "spmm_groupsp(32, 4)", a, &d), 0);
  ck_assert_int_eq(pass_lower(op, a, &d, NULL, NULL), 0);
  CgProgram p = {0};
  ck_assert_msg(cg_compile(op, "sm_90", &p, &d) == 0, "%s", d.buf);
  int gathers = tu_count(p.ptx, "ld.global.nc.v4.f32");
  ck_assert_msg(gathers >= 4 + 4 + 3 + 2 + 1, "%d 16-byte gathers:\n%s", gathers, p.ptx);
  free(tu_assemble(p.ptx, "sm_90", "prefetch"));
  cg_program_free(&p);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

int main(void) {
  Suite *s = suite_create("prefetch");
  TCase *tc = tcase_create("prefetch");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_semantics);
  tcase_add_test(tc, test_refusals);
  tcase_add_test(tc, test_ir_text);
  tcase_add_test(tc, test_ptx);
  tcase_add_test(tc, test_partial_chunk_unrolled);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
