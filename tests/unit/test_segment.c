/* tests/unit/test_segment.c: deterministic() neighbour groups, the
 * segmented reduction of passes/segment.c.
 *
 * Every representative stdlib operator under `deterministic(); gnnadvisor`
 * and `deterministic(); gnnadvisor_mgg` (group sizes that divide few
 * degrees, lane counts that do not divide F or exceed 32), lowered and run
 * by the interpreter on real graphs (cora and the skewed blogcatalog), must
 *   - be accepted wherever the same schedule without deterministic() is,
 *   - hold no atomic store, and a group_rows stage wherever the plain
 *     schedule had atomics,
 *   - give the unscheduled result (exactly for max= and min= operators),
 *   - give bitwise the same outputs when run twice.
 * Then: the group table's rows by destination, the IR text round trip of
 * the new loop and domain, the kernel pack of a segmented program, and
 * the refusals that remain.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "lang/lang.h"
#include "passes/passes.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "testutil.h"

/* Whether every reduction into an output is max= or min=: then the
 * segmented result must be exact (max of maxima is the max). */
static bool exact_list(const IrNode *s, bool *any) {
  for (; s; s = s->next) {
    if (s->kind == IR_LOOP && !exact_list(s->loop.body, any)) return false;
    if (s->kind == IR_IF && !exact_list(s->ifs.then, any)) return false;
    if (s->kind == IR_STORE && s->acc.tensor->role == IR_ROLE_OUT) {
      if (s->acc.red != IR_RED_MAX && s->acc.red != IR_RED_MIN) return false;
      *any = true;
    }
  }
  return true;
}

static bool has_text(const IrOp *op, const char *needle) {
  char *s = ir_op_to_string(op);
  bool r = strstr(s, needle) != NULL;
  free(s);
  return r;
}

START_TEST(test_semantics) {
  /* blogcatalog (skewed: interleaving matters) with the interleaved
   * schedule alone, to keep the run short */
  static const struct {
    const char *file;
    int64_t F;
    size_t nscheds;
  } graphs[] = {{"cora.mtx.gz", 20, 3}, {"blogcatalog.mtx.gz", 5, 1}};
  /* G 3, 5, 7 divide few degrees; T 3 does not divide 20 or 5, 40 > 32 */
  static const char *scheds[] = {"gnnadvisor_mgg(5, 3, 2)", "gnnadvisor(3, 3)",
                                 "gnnadvisor(7, 40)"};
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  ck_assert_ptr_nonnull(lib);
  int segmented = 0, compared = 0;
  uint64_t seed = 777;
  /* a quick run (tu_quick: the sanitized build) keeps cora */
  size_t ngraphs = tu_quick() ? 1 : sizeof graphs / sizeof graphs[0];
  for (size_t gi = 0; gi < ngraphs; gi++) {
    Graph *g = tu_graph(graphs[gi].file);
    int64_t F = graphs[gi].F;
    for (int oi = 0; oi < lib->nops; oi++) {
      const IrOp *base = lib->ops[oi];
      if (!lang_ops_representative(base->name)) continue;
      ck_assert(base->ntensors <= 16);
      float *in[16] = {0}, *ref[16] = {0};
      IrExtents ext = tu_extents(base, F);
      for (int i = 0; i < base->ntensors; i++) {
        if (base->tensors[i]->role != IR_ROLE_IN) continue;
        int64_t n = graph_tensor_numel(base->tensors[i], g, &ext);
        in[i] = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
        /* magnitudes in [0.5, 1.5), either sign: the division operators
         * stay finite */
        for (int64_t k = 0; k < n; k++) {
          uint64_t r = tu_lcg(&seed);
          in[i][k] = (float)((r >> 1) % 1000000) / 1e6f + 0.5f;
          if (r & 1) in[i][k] = -in[i][k];
        }
      }
      ck_assert_msg(tu_interp(base, g, F, in, ref, &d) == 0, "%s: %s", base->name, d.buf);
      bool any = false;
      bool exact = exact_list(base->body, &any) && any;
      for (size_t si = 0; si < graphs[gi].nscheds; si++) {
        char det[96];
        snprintf(det, sizeof det, "deterministic(); %s", scheds[si]);
        Diag dp, dd;
        ir_diag_init(&dp, NULL);
        ir_diag_init(&dd, NULL);
        IrOp *plain = tu_lowered(lib, base, scheds[si], a, &dp);
        IrOp *op = tu_lowered(lib, base, det, a, &dd);
        /* deterministic() refuses nothing the plain schedule accepts */
        ck_assert_msg(!plain || op, "%s %s: refused:\n%s", base->name, det, dd.buf);
        if (op) {
          ck_assert_msg(!has_text(op, "atomic "), "%s %s: atomics left", base->name, det);
          if (has_text(plain, "atomic ")) {
            ck_assert_msg(has_text(op, "group_rows("), "%s %s: not segmented", base->name,
                          det);
            segmented++;
          }
          float *y1[16] = {0}, *y2[16] = {0};
          ck_assert_msg(tu_interp(op, g, F, in, y1, &d) == 0, "%s %s: %s", base->name, det,
                        d.buf);
          ck_assert_msg(tu_interp(op, g, F, in, y2, &d) == 0, "%s %s: %s", base->name, det,
                        d.buf);
          for (int i = 0; i < op->ntensors; i++) {
            const IrTensor *t = op->tensors[i];
            if (t->role != IR_ROLE_OUT) continue;
            int64_t n = graph_tensor_numel(t, g, &ext);
            ck_assert_msg(memcmp(y1[i], y2[i], sizeof(float) * (size_t)n) == 0,
                          "%s %s on %s: two runs differ", base->name, det, graphs[gi].file);
            /* per element, plain tests: a Check assertion writes to its log
             * file each time, passing or not */
            double num = 0, den = 0;
            for (int64_t k = 0; k < n; k++) {
              double x = y1[i][k], y = ref[i][k];
              if (isnan(x) || isnan(y))
                ck_abort_msg("%s %s: NaN at %lld", base->name, det, (long long)k);
              if (exact && x != y)
                ck_abort_msg("%s %s on %s: %s[%lld] = %.9g, want exactly %.9g", base->name,
                             det, graphs[gi].file, t->name, (long long)k, x, y);
              num += (x - y) * (x - y);
              den += y * y;
            }
            ck_assert_msg(sqrt(num) <= 1e-5 * sqrt(den) + 1e-30,
                          "%s %s on %s: relative L2 error %g", base->name, det,
                          graphs[gi].file, sqrt(num / (den + 1e-30)));
          }
          for (int i = 0; i < 16; i++) {
            free(y1[i]);
            free(y2[i]);
          }
          compared++;
        }
        ir_diag_free(&dp);
        ir_diag_free(&dd);
      }
      for (int i = 0; i < 16; i++) {
        free(in[i]);
        free(ref[i]);
      }
    }
    graph_free(g);
  }
  fprintf(stderr, "segment: %d deterministic runs compared, %d of them segmented\n",
          compared, segmented);
  /* sum, max, min, mean, the edge-softmax reductions, heads, on 2 graphs */
  ck_assert_int_ge(segmented, 20);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* The rows by destination list every row once, in table order. */
START_TEST(test_rows_by_destination) {
  Graph *g = tu_graph("blogcatalog.mtx.gz");
  Diag d;
  ir_diag_init(&d, stderr);
  /* G, distance, classes */
  static const int settings[][3] = {{3, 0, 0}, {5, 2, 2}, {1, 7, 2}, {2, 3, 5}, {4, 1, 8}};
  for (int s = 0; s < 5; s++) {
    const GraphGroups *t = graph_groups(g, settings[s][0], settings[s][1], settings[s][2],
                                        0, &d);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->vptr[0], 0);
    ck_assert_int_eq(t->vptr[g->nv], t->n);
    char *seen = calloc((size_t)t->n + 1, 1);
    for (int32_t v = 0; v < g->nv; v++) {
      int32_t deg = g->in_ptr[v + 1] - g->in_ptr[v];
      ck_assert_int_eq(t->vptr[v + 1] - t->vptr[v], (deg + t->G - 1) / t->G);
      int32_t pos = g->in_ptr[v];
      for (int32_t k = t->vptr[v]; k < t->vptr[v + 1]; k++) {
        int32_t r = t->vrow[k];
        ck_assert(r >= 0 && r < t->n && !seen[r]);
        seen[r] = 1;
        ck_assert_int_eq(t->dst[r], v);
        ck_assert_int_eq(t->first[r], pos); /* CSR order, even interleaved */
        if (k > t->vptr[v]) ck_assert_int_gt(r, t->vrow[k - 1]); /* table order */
        pos = t->end[r];
      }
      ck_assert_int_eq(pos, g->in_ptr[v + 1]);
    }
    free(seen);
  }
  ir_diag_free(&d);
  graph_free(g);
}
END_TEST

/* The lowered IR prints and parses back; the verifier refuses bad uses of
 * the new loop and domain. */
START_TEST(test_ir_text) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  IrOp *op = tu_lowered(lib, ir_module_find_op(lib, "u_div_e_mean_heads"),
                        "deterministic(); gnnadvisor_mgg(4, 8, 3)", a, &d);
  ck_assert_msg(op != NULL, "%s", d.buf);
  char *s = ir_op_to_string(op);
  ck_assert_msg(strstr(s, "tensor Y_seg: f32[groups(4), H, F]") &&
                    strstr(s, "group_rows(v_seg, 4) @interleave(3)"),
                "%s", s);
  IrModule *back = lang_parse_ir(a, &d, "<segment>", s);
  ck_assert_msg(back && back->nops == 1, "%s\ndoes not parse back:\n%s", s, d.buf);
  char *again = ir_op_to_string(back->ops[0]);
  ck_assert_str_eq(again, s);
  free(again);
  free(s);
  static const struct {
    const char *text, *error;
  } bad[] = {
      {"op a(X: f32[src]) -> Y: f32[dst] {\n  for v in dst {\n"
       "    for r in group_rows(v) {\n    }\n  }\n}\n",
       "needs a vertex and a group size"},
      {"op b(X: f32[src]) -> Y: f32[dst] {\n  for v in dst {\n"
       "    for r in in_edges(v, 3) {\n    }\n  }\n}\n",
       "takes one argument"},
      {"op c(X: f32[groups(2)]) -> Y: f32[dst] {\n  for v in dst {\n"
       "    Y[v] = 1.0\n  }\n}\n",
       "not a temporary"},
      {"op d(X: f32[src]) -> Y: f32[dst] {\n  for v in dst {\n"
       "    for r in group_rows(v, 2) @shared {\n    }\n  }\n}\n",
       "belong on a groups loop"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) tu_ir_refused(bad[i].text, bad[i].error);
  /* a groups-domain tensor is refused in .gop source */
  Diag e;
  ir_diag_init(&e, NULL);
  ck_assert(!lang_compile(a, &e, "<src>",
                          "op s(X: f32[src, F]) -> Y: f32[dst, F] {\n"
                          "  tensor P: f32[groups(2), F]\n}\n"));
  ck_assert_msg(strstr(e.buf, "IR text only"), "%s", e.buf);
  ir_diag_free(&e);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* Code generation: the second stage reads the rows by destination, and a
 * pack keeps the temporary's domain and group size. */
START_TEST(test_codegen_pack) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *lib = lang_stdlib(a, &d);
  IrOp *op = tu_lowered(lib, ir_module_find_op(lib, "copy_u_max"),
                        "deterministic(); gnnadvisor_mgg(4, 32, 2)", a, &d);
  ck_assert_ptr_nonnull(op);
  CgProgram p = {0}, q = {0};
  ck_assert_msg(cg_compile(op, "sm_90", &p, &d) == 0, "%s", d.buf);
  ck_assert_int_eq(p.nkernels, 3); /* rows, destinations, empty rule */
  const CgKernel *k = &p.kernels[1];
  ck_assert_int_eq(k->group, 4);
  ck_assert_int_eq(k->group_ilv, 2);
  bool vptr = false, vrow = false;
  for (int i = 0; i < k->nparams; i++) {
    vptr |= k->params[i].kind == CG_PARAM_GRP_VPTR;
    vrow |= k->params[i].kind == CG_PARAM_GRP_VROW;
  }
  ck_assert(vptr && vrow);
  ck_assert_msg(!strstr(p.ptx, "atom."), "atomics in the PTX");
  const IrTensor *part = ir_op_find_tensor(op, "Y_seg");
  ck_assert_ptr_nonnull(part);
  ck_assert_int_eq(p.tensors[part->id].domain, IR_DOM_GROUPS);
  ck_assert_int_eq(p.tensors[part->id].group, 4);
  const char *path = tu_write("segment.pack", "");
  ck_assert_int_eq(cg_pack_write(&p, path, &d), 0);
  ck_assert_msg(cg_pack_read(path, &q, &d) == 0, "%s", d.buf);
  ck_assert_int_eq(q.tensors[part->id].domain, IR_DOM_GROUPS);
  ck_assert_int_eq(q.tensors[part->id].group, 4);
  ck_assert_int_eq(q.tensors[part->id].role, IR_ROLE_TEMP);
  ck_assert_int_eq(q.kernels[1].group, 4);
  /* reduced edge by edge into its rows (feature loops inside the edge
   * loop): the runtime gives it the identity first */
  ck_assert(!part->filled && !q.tensors[part->id].filled);
  ck_assert_int_eq(q.tensors[part->id].red, IR_RED_MAX);
  cg_program_free(&p);
  cg_program_free(&q);
  /* summed in a register and stored once per row (spmm_groups): the op
   * writes every row itself, and the runtime gives it no start value */
  IrOp *op2 = tu_lowered(lib, ir_module_find_op(lib, "copy_u_sum"),
                         "deterministic(); spmm_groups(16, 4)", a, &d);
  ck_assert_ptr_nonnull(op2);
  const IrTensor *part2 = ir_op_find_tensor(op2, "Y_seg");
  ck_assert(part2 && part2->filled);
  ck_assert_msg(cg_compile(op2, "sm_90", &p, &d) == 0, "%s", d.buf);
  ck_assert(p.tensors[part2->id].filled && p.tensors[part2->id].red == IR_RED_ASSIGN);
  cg_program_free(&p);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* What deterministic() still refuses, each with its reason. */
START_TEST(test_refusals) {
  static const struct {
    const char *op, *sched, *error;
  } cases[] = {
      {"copy_u_sum", "deterministic(); thread_edge(2, 2)",
       "or use neighbour groups (`deterministic(); gnnadvisor(G, T)`)"},
      {"copy_u_sum", "deterministic(); gas()", "or use neighbour groups"},
      {"copy_u_sum", "deterministic(); gnnadvisor_shared(2, 4, 4)",
       "leave out promote(g, shared)"},
      /* lanes on a group's edges with the features inside them */
      {"copy_u_sum", "deterministic(); group(e, 3) -> (eo, ei); bind(eo, warp); "
                     "bind(ei, lane)",
       "whose edges are on lanes"},
  };
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Diag e;
    ir_diag_init(&e, NULL);
    ck_assert_msg(!tu_lowered(lib, ir_module_find_op(lib, cases[i].op), cases[i].sched, a, &e),
                  "%s was accepted", cases[i].sched);
    ck_assert_msg(e.buf && strstr(e.buf, cases[i].error), "%s: want `%s`, got:\n%s",
                  cases[i].sched, cases[i].error, e.buf ? e.buf : "");
    ir_diag_free(&e);
  }
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

int main(void) {
  Suite *s = suite_create("segment");
  TCase *tc = tcase_create("segment");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_rows_by_destination);
  tcase_add_test(tc, test_ir_text);
  tcase_add_test(tc, test_codegen_pack);
  tcase_add_test(tc, test_refusals);
  tcase_add_test(tc, test_semantics);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
