/* tests/unit/test_groups.c: neighbour groups and interleaving (GNNAdvisor,
 * MGG) on real graphs: the group table's invariants (in two to eight
 * classes too, on skewed graphs and on small ones with ties), and the
 * lowered IR of every gnnadvisor setting, and of interleave in more than
 * two classes, interpreting to the unscheduled result on a skewed graph
 * (blogcatalog) and a balanced one (delaunay_n16), with group sizes that
 * do not divide the degrees and worker counts that do not divide F. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "lang/lang.h"
#include "passes/passes.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "testutil.h"

/* Every in-edge of every destination in exactly one row, rows of at most G
 * edges of one destination. Without interleaving each destination's rows
 * are consecutive, in CSR order, and the destinations come in destination
 * order or (t->order, graph/groups.c) some other order; interleaved, each row's class is its destination's
 * (two classes: above the threshold or not; more: K * (rows of heavier
 * destinations) / n), rows of one class keep destination order, and the
 * classes take turns `ilv` rows at a time, skipping those that ran out
 * (two: the light class first; more: the heaviest). */
static const GraphGroups *check_table(const Graph *g, int G, int ilv, int K) {
  Diag d;
  ir_diag_init(&d, stderr);
  const GraphGroups *t = graph_groups(g, G, ilv, K, 0, &d);
  ck_assert_msg(t != NULL, "%s", d.buf);
  ck_assert_ptr_eq(graph_groups(g, G, ilv, K, 0, &d), t); /* cached */
  ck_assert_int_eq(t->ncls, K);
  /* above[deg]: the rows of destinations of in-degree above deg */
  int32_t maxdeg = 0;
  for (int32_t v = 0; v < g->nv; v++)
    if (g->in_ptr[v + 1] - g->in_ptr[v] > maxdeg) maxdeg = g->in_ptr[v + 1] - g->in_ptr[v];
  int64_t *above = calloc((size_t)maxdeg + 2, sizeof *above);
  for (int32_t v = 0; v < g->nv; v++) {
    int32_t deg = g->in_ptr[v + 1] - g->in_ptr[v];
    above[deg] += (deg + G - 1) / G; /* for now: the rows at deg */
  }
  int64_t heavier = 0, tie = 0; /* tie: the most rows of one degree */
  for (int32_t deg = maxdeg; deg >= 0; deg--) {
    int64_t at = above[deg];
    above[deg] = heavier;
    heavier += at;
    if (at > tie) tie = at;
  }
  ck_assert_int_eq(heavier, t->n);
  /* the destinations no group owns: in-degree 0 or over G, ascending */
  int32_t nun = 0;
  for (int32_t v = 0; v < g->nv; v++) {
    int32_t deg = g->in_ptr[v + 1] - g->in_ptr[v];
    if (deg > 0 && deg <= G) continue;
    ck_assert_int_lt(nun, t->nunowned);
    ck_assert_int_eq(t->unowned[nun], v);
    nun++;
  }
  ck_assert_int_eq(nun, t->nunowned);
  /* quantiles: a class overshoots n / K by less than a degree's rows */
  for (int c = 0; c < K && K > 2; c++)
    ck_assert_msg(t->cls_rows[c] <= t->n / K + tie, "%s G %d, %d classes: class %d has %lld "
                  "of %lld rows", g->name, G, K, c, (long long)t->cls_rows[c], (long long)t->n);
  if (K == 2) ck_assert_int_eq(t->thr, graph_groups_threshold(g, 0));
  char *seen = calloc((size_t)g->ne + 1, 1);
  char *done = calloc((size_t)g->nv + 1, 1); /* destinations whose rows ended */
  bool any_order = !ilv && t->order != GRAPH_GROUPS_DST;
  if (ilv) ck_assert_int_eq(t->order, GRAPH_GROUPS_DST);
  int64_t edges = 0, rows[IR_MAX_CLASSES] = {0}, left[IR_MAX_CLASSES], sum = 0;
  int32_t last[IR_MAX_CLASSES]; /* the last row of each class */
  for (int c = 0; c < IR_MAX_CLASSES; c++) {
    left[c] = c < K ? t->cls_rows[c] : 0;
    sum += left[c];
    last[c] = -1;
  }
  ck_assert_int_eq(sum, ilv ? t->n : 0);
  /* a ck_assert per row would write to check's pipe a million times */
#define ROW_CHECK(cond)                                                       \
  if (!(cond))                                                                \
  ck_abort_msg("%s, G %d, distance %d, %d classes: row %d: %s", g->name, G, \
               ilv, K, r, #cond)
  int turn = K == 2 ? 1 : 0, taken = 0; /* the class whose turn it is */
  for (int32_t r = 0; r < t->n; r++) {
    int32_t v = t->dst[r];
    ROW_CHECK(v >= 0 && v < g->nv);
    ROW_CHECK(t->first[r] >= g->in_ptr[v] && t->end[r] <= g->in_ptr[v + 1]);
    ROW_CHECK(t->end[r] > t->first[r] && t->end[r] - t->first[r] <= G);
    for (int32_t p = t->first[r]; p < t->end[r]; p++) {
      ROW_CHECK(!seen[p]);
      seen[p] = 1;
      edges++;
    }
    int32_t deg = g->in_ptr[v + 1] - g->in_ptr[v];
    int c = ilv ? graph_groups_class(t, deg) : 0;
    if (ilv) ROW_CHECK(c == (K == 2 ? deg <= t->thr : K * above[deg] / t->n));
    if (any_order) { /* a destination's rows together, in CSR order */
      bool same = last[c] >= 0 && t->dst[last[c]] == v;
      ROW_CHECK(same ? t->end[last[c]] == t->first[r] : !done[v] && t->first[r] == g->in_ptr[v]);
      if (last[c] >= 0 && !same) done[t->dst[last[c]]] = 1;
    } else if (last[c] >= 0) { /* destination order within a class */
      ROW_CHECK(t->dst[last[c]] < v ||
                (t->dst[last[c]] == v && t->end[last[c]] == t->first[r]));
    }
    last[c] = r;
    if (!ilv) continue;
    rows[c]++;
    if (taken == ilv || left[turn] == 0) {
      turn = (turn + 1) % K;
      taken = 0;
    }
    while (left[turn] == 0) turn = (turn + 1) % K; /* rows remain: some has */
    ROW_CHECK(c == turn);
    left[turn]--;
    taken++;
  }
#undef ROW_CHECK
  ck_assert_int_eq(edges, g->ne);
  for (int c = 0; c < K; c++) ck_assert_int_eq(rows[c], t->cls_rows[c]);
  free(above);
  free(seen);
  free(done);
  ir_diag_free(&d);
  return t;
}

/* A small graph whose vertex v has in-degree deg[v] (less than nv), from
 * v + 1, v + 2, ... mod nv. */
static Graph *graph_of_degrees(const int *deg, int nv, const char *name) {
  int64_t src[256], dst[256], ne = 0;
  for (int v = 0; v < nv; v++)
    for (int i = 0; i < deg[v]; i++) {
      ck_assert(ne < 256 && deg[v] < nv);
      src[ne] = (v + 1 + i) % nv;
      dst[ne++] = v;
    }
  return tu_graph_coo(nv, ne, src, dst, name);
}

START_TEST(test_table_order) {
  /* The community order where GNNAdvisor's AES rule holds and it gathers
   * more from recent source blocks (ogbn-arxiv), destination order where
   * the numbering is local already (cnr-2000); GOP_GROUP_ORDER forces
   * either, and is part of the cache key. */
  unsetenv("GOP_GROUP_ORDER");
  Graph *arxiv = tu_graph("ogbn-arxiv.mtx.gz");
  Graph *cnr = tu_graph("cnr-2000.mtx.gz");
  const GraphGroups *t = check_table(arxiv, 32, 0, 0);
  ck_assert_int_eq(t->order, GRAPH_GROUPS_COMMUNITY);
  ck_assert_int_eq(check_table(cnr, 32, 0, 0)->order, GRAPH_GROUPS_DST);
  /* the order walked: more reuse than destination order */
  int32_t *seq = malloc(sizeof *seq * (size_t)arxiv->nv);
  for (int32_t i = 0; i < arxiv->nv; i++) seq[i] = -1;
  for (int32_t r = 0, n = 0; r < t->n; r++)
    if (r == 0 || t->dst[r - 1] != t->dst[r]) seq[n++] = t->dst[r];
  int32_t filled = 0;
  for (int32_t i = 0; i < arxiv->nv; i++) filled += seq[i] >= 0;
  if (filled == arxiv->nv) /* every vertex has in-edges: the whole order */
    ck_assert(graph_block_locality_in(arxiv, seq) > arxiv->stats.locality);
  free(seq);
  setenv("GOP_GROUP_ORDER", "community", 1);
  const GraphGroups *c = check_table(cnr, 32, 0, 0);
  ck_assert_int_eq(c->order, GRAPH_GROUPS_COMMUNITY);
  setenv("GOP_GROUP_ORDER", "dst", 1);
  ck_assert_int_eq(check_table(arxiv, 32, 0, 0)->order, GRAPH_GROUPS_DST);
  /* interleaved tables keep destination order within their classes */
  setenv("GOP_GROUP_ORDER", "community", 1);
  ck_assert_int_eq(check_table(arxiv, 32, 2, 2)->order, GRAPH_GROUPS_DST);
  setenv("GOP_GROUP_ORDER", "nearest", 1);
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_ptr_null(graph_groups(cnr, 8, 0, 0, 0, &d));
  ck_assert_msg(d.buf && strstr(d.buf, "GOP_GROUP_ORDER=nearest: the order of neighbour "
                                       "groups is auto (GNNAdvisor's AES rule), dst or community"),
                "%s", d.buf ? d.buf : "");
  ir_diag_free(&d);
  unsetenv("GOP_GROUP_ORDER");
  graph_free(arxiv);
  graph_free(cnr);
}
END_TEST

START_TEST(test_tables) {
  /* skewed graphs: blogcatalog (in-degrees 1..3992), cnr-2000 (1..18234) */
  static const char *graphs[] = {"blogcatalog.mtx.gz", "cnr-2000.mtx.gz"};
  for (int gi = 0; gi < 2; gi++) {
    Graph *g = tu_graph(graphs[gi]);
    check_table(g, 1, 0, 0);
    check_table(g, 7, 0, 0);
    check_table(g, 5, 3, 2);
    const GraphGroups *two = check_table(g, 4, 2, 2);
    for (int K = 3; K <= IR_MAX_CLASSES; K++) {
      const GraphGroups *t = check_table(g, 4, 2, K);
      ck_assert_ptr_ne(t, two); /* the classes are part of the cache key */
      ck_assert(t->cls_rows[0] > 0 && t->cls_rows[1] > 0);
      check_table(g, 3, K + 5, K);
    }
    graph_free(g);
  }
  /* one in-degree: every row in the heaviest class, the others empty, and
   * the table in destination order whatever the distance */
  static const int equal[] = {3, 3, 3, 3, 3, 3, 3, 0};
  Graph *g = graph_of_degrees(equal, 8, "equal");
  const GraphGroups *plain = check_table(g, 2, 0, 0);
  ck_assert_int_eq(plain->n, 14);
  for (int K = 2; K <= IR_MAX_CLASSES; K++)
    for (int D = 1; D <= 3; D++) {
      const GraphGroups *t = check_table(g, 2, D, K);
      ck_assert_int_eq(t->cls_rows[K == 2 ? 1 : 0], 14); /* 2: not above the mean */
      ck_assert_mem_eq(t->dst, plain->dst, 14 * sizeof(int32_t));
      ck_assert_mem_eq(t->first, plain->first, 14 * sizeof(int64_t));
      ck_assert_mem_eq(t->vrow, plain->vrow, 14 * sizeof(int64_t));
    }
  graph_free(g);
  /* a tie across three quantiles empties the classes in the middle: 24
   * rows of G 1, a sixth each; degree 4 has none above it (class 0),
   * degree 2 four (class 1), degree 1 twenty (class 5) */
  static const int tie[] = {1, 2, 2, 2, 2, 4, 2, 2, 1, 2, 2, 1, 1, 0};
  g = graph_of_degrees(tie, 14, "tie");
  for (int D = 1; D <= 3; D++) {
    const GraphGroups *t = check_table(g, 1, D, 6);
    static const int64_t want[6] = {4, 16, 0, 0, 0, 4};
    ck_assert_mem_eq(t->cls_rows, want, sizeof want);
    /* heaviest first, D rows a class: vertex 5, then 1 (class 1), then 0 */
    ck_assert_int_eq(t->dst[0], 5);
    ck_assert_int_eq(t->dst[D], 1);
    ck_assert_int_eq(t->dst[2 * D], 0);
  }
  graph_free(g);
}
END_TEST

/* The interpreter's result of `op` scheduled by `sched` (NULL: none). */
static float *run(const IrModule *lib, const char *opname, const char *sched,
                  const Graph *g, int64_t F, float *x, float *w, Arena *a) {
  Diag d;
  ir_diag_init(&d, NULL);
  IrOp *op = tu_lowered(lib, ir_module_find_op(lib, opname), sched, a, &d);
  ck_assert_msg(op != NULL, "%s: %s", sched, d.buf);
  float *in[16] = {x, w}, *out[16] = {0};
  ck_assert_msg(tu_interp(op, g, F, in, out, &d) == 0, "%s: %s", sched, d.buf);
  ir_diag_free(&d);
  return out[op->ninputs]; /* Y */
}


/* Features X (|V| x F) and edge weights W of the semantics tests: fixed
 * values in [-1, 1], none of them special. */
static void inputs(const Graph *g, int64_t F, float **x, float **w) {
  *x = malloc(sizeof(float) * (size_t)g->nv * (size_t)F);
  *w = malloc(sizeof(float) * ((size_t)g->ne + 1));
  for (int64_t i = 0; i < g->nv * F; i++) (*x)[i] = (float)((i * 7919 % 2001) - 1000) / 1000.0f;
  for (int64_t i = 0; i < g->ne; i++) (*w)[i] = (float)((i * 104729 % 2001) - 1000) / 1000.0f;
}
/* y against the unscheduled result: equal for max (exact), else within a
 * relative L2 error of `tol` (sums rounded in another order). */
static void check_within(const float *y, const float *ref, int64_t n, bool exact, double tol,
                         const char *graph, const char *op, const char *sched) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) {
    ck_assert_msg(!isnan(y[i]), "%s %s %s: NaN at %lld", graph, op, sched, (long long)i);
    if (exact)
      ck_assert_msg(y[i] == ref[i], "%s %s %s differs at %lld", graph, op, sched, (long long)i);
    num += ((double)y[i] - ref[i]) * ((double)y[i] - ref[i]);
    den += (double)ref[i] * ref[i];
  }
  ck_assert_msg(sqrt(num) <= tol * sqrt(den) + 1e-30, "%s %s %s: rel L2 %g", graph, op,
                sched, sqrt(num / (den + 1e-30)));
}

/* ... within 1e-5, for f32 */
static void check_close(const float *y, const float *ref, int64_t n, bool exact,
                        const char *graph, const char *op, const char *sched) {
  check_within(y, ref, n, exact, 1e-5, graph, op, sched);
}

/* The operators whose rows neighbour groups own: a sum, a weighted sum, a
 * mean (finished in the owned store) and a max (last, exact). */
static const char *owned_ops[] = {"copy_u_sum", "u_mul_e_sum", "copy_u_mean", "copy_u_max"};

static int nstages(const IrOp *op) {
  int n = 0;
  for (const IrNode *s = op->body; s; s = s->next) n++;
  return n;
}

/* A bf16 tensor's bits as floats. */
static float *bf16_floats(const void *bits, int64_t n) {
  float *f = malloc(sizeof *f * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) f[i] = ir_bf16_to_float(((const uint16_t *)bits)[i]);
  return f;
}

/* Neighbour groups own the rows with 1..G in-edges (a plain store; a mean
 * divided and a max finished there); the op's own first stage gives the
 * other rows (empty and heavy ones) their initial value (passes/fill.c),
 * and the compiled program tells the runtime not to fill Y. wiki-Vote has
 * both kinds of rows: 4,734 of its 7,115 destinations have no in-edge. The
 * interpreter starts a filled tensor as NaN, so a forgotten row fails. */
START_TEST(test_fill_unowned_rows) {
  const char **ops = owned_ops;
  const int64_t F = 6;
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *lib = lang_stdlib(a, &d);
  Graph *g = tu_graph("wiki-Vote.mtx.gz");
  float *x, *w;
  inputs(g, F, &x, &w);
  for (int oi = 0; oi < 4; oi++) {
    IrOp *op = tu_lowered(lib, ir_module_find_op(lib, ops[oi]), "spmm_groups(8, 2)", a, &d);
    ck_assert_msg(op != NULL, "%s: %s", "spmm_groups(8, 2)", d.buf);
    const IrTensor *y = ir_op_find_tensor(op, "Y");
    ck_assert_msg(y->filled && y->owner_group == 8, "%s", ops[oi]);
    /* the fill first: a team per destination no group owns (the list of
     * graph/groups.c), guarded by its degree */
    const IrNode *fill = op->body;
    ck_assert(fill->kind == IR_LOOP && fill->loop.kind == IR_LOOP_UNOWNED &&
              fill->loop.group == 8 && fill->loop.bind == IR_BIND_WARP &&
              fill->loop.body->kind == IR_IF);
    char *text = ir_op_to_string(op);
    ck_assert_msg(strstr(text, "for v_fin in unowned(8) @warp @team(8)"), "%s", text);
    ck_assert_msg(strstr(text, "in_degree(v_fin) == 0.0 || in_degree(v_fin) > 8.0"), "%s", text);
    ck_assert_msg(strstr(text, "plain Y[dst(eo)"), "%s", text);
    /* a mean and a max still finish the rows they do not own, only those */
    ck_assert_int_eq(nstages(op), oi >= 2 ? 3 : 2);
    free(text);
    CgProgram p = {0};
    ck_assert_msg(cg_compile(op, "sm_90", &p, &d) == 0, "%s", d.buf);
    ck_assert_int_eq(p.tensors[y->id].red, IR_RED_ASSIGN); /* no fill by the runtime */
    cg_program_free(&p);
    float *ref = run(lib, ops[oi], NULL, g, F, x, w, a);
    float *got = run(lib, ops[oi], "spmm_groups(8, 2)", g, F, x, w, a);
    check_close(got, ref, g->nv * F, oi == 3, "wiki-Vote", ops[oi], "spmm_groups(8, 2)");
    free(ref);
    free(got);
  }
  free(x);
  free(w);
  graph_free(g);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* A bf16 output whose rows neighbour groups own: the heavy rows add with
 * f32 atomics into the output's f32 twin (promote.c: a 16-bit atomic would
 * round every addition, and code generation refuses it), the last stage
 * rounds them into Y once. On wiki-Vote (heavy and empty rows) each op
 * compiles for sm_90 with no atomic into Y and equals the unscheduled bf16
 * op: a max exactly, sums within bf16's rounding (one rounding each, of
 * f32 sums added in another order). */
START_TEST(test_wide_twin) {
  const char **ops = owned_ops;
  static const char *scheds[] = {"spmm_groups(8, 2)", "spmm_teams8(16, 4)"};
  const int64_t F = 12;
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *lib = lang_stdlib(a, &d);
  Graph *g = tu_graph("wiki-Vote.mtx.gz");
  float *x, *w;
  inputs(g, F, &x, &w);
  /* the interpreter takes a 16-bit tensor's own bits (interp.h) */
  uint16_t *xb = malloc(sizeof *xb * (size_t)(g->nv * F)), *wb = malloc(sizeof *wb * (size_t)(g->ne + 1));
  for (int64_t i = 0; i < g->nv * F; i++) xb[i] = ir_bf16_from_float(x[i]);
  for (int64_t i = 0; i < g->ne; i++) wb[i] = ir_bf16_from_float(w[i]);
  for (int oi = 0; oi < 4; oi++) {
    IrOp *base = pass_op_copy(ir_module_find_op(lib, ops[oi]), a);
    for (int i = 0; i < base->ntensors; i++) pass_own_tensor(base, base->tensors[i], a);
    ir_op_retype(base, IR_DT_BF16);
    float *ref[16] = {0}, *in[16] = {(float *)xb, (float *)wb};
    ck_assert_int_eq(tu_interp(base, g, F, in, ref, &d), 0);
    float *want = bf16_floats(ref[base->ninputs], g->nv * F);
    for (int si = 0; si < 2; si++) {
      IrOp *op = tu_lowered(lib, base, scheds[si], a, &d);
      ck_assert_msg(op != NULL, "%s %s: %s", ops[oi], scheds[si], d.buf);
      const IrTensor *y = ir_op_find_tensor(op, "Y");
      const IrTensor *wide = ir_op_find_tensor(op, "Y_wide");
      ck_assert_msg(wide && wide->dtype == IR_DT_F32 && wide->role == IR_ROLE_TEMP &&
                    wide->filled && y->dtype == IR_DT_BF16, "%s %s", ops[oi], scheds[si]);
      char *text = ir_op_to_string(op);
      ck_assert_msg(!strstr(text, "atomic Y[") && strstr(text, "atomic Y_wide[") &&
                    strstr(text, "plain Y[dst(eo)"), "%s", text);
      /* fill the twin, the groups, finish Y from the twin: three stages */
      ck_assert_int_eq(nstages(op), 3);
      /* the twin is filled and read on the heavy rows only; the empty rows
       * of Y get 0.0 directly, 16 bytes a lane (8 bf16) */
      ck_assert_msg(!strstr(text, "in_degree(v_fin) == 0.0 ||") &&
                    strstr(text, "if (in_degree(v_fin) == 0.0) {") &&
                    strstr(text, "for fv_fin1 in 0..8 @vec(8)") &&
                    strstr(text, "+ fv_fin1] = 0.0"), "%s", text);
      free(text);
      CgProgram p = {0};
      ck_assert_msg(cg_compile(op, "sm_90", &p, &d) == 0, "%s %s: %s", ops[oi], scheds[si],
                    d.buf);
      cg_program_free(&p);
      float *out[16] = {0};
      ck_assert_int_eq(tu_interp(op, g, F, in, out, &d), 0);
      float *got = bf16_floats(out[op->ninputs], g->nv * F);
      check_within(got, want, g->nv * F, oi == 3, 8e-3, "wiki-Vote", ops[oi], scheds[si]);
      free(got);
      free(out[op->ninputs]);
    }
    free(want);
    free(ref[base->ninputs]);
  }
  free(xb);
  free(wb);
  free(x);
  free(w);
  graph_free(g);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* Every op of `ops` under every schedule of `scheds` on every graph of
 * `graphs` (the interpreter runs the scheduled, lowered IR) equals the
 * unscheduled op: within 1e-5 relative L2, max and min exactly. */
static void check_schedules(const IrModule *lib, const char *const *graphs, int ng,
                            const char *const *ops, int no, const char *const *scheds,
                            int ns, int64_t F, Arena *a) {
  for (int gi = 0; gi < ng; gi++) {
    Graph *g = tu_graph(graphs[gi]);
    float *x, *w;
    inputs(g, F, &x, &w);
    for (int oi = 0; oi < no; oi++) {
      float *ref = run(lib, ops[oi], NULL, g, F, x, w, a);
      for (int si = 0; si < ns; si++) {
        float *y = run(lib, ops[oi], scheds[si], g, F, x, w, a);
        check_close(y, ref, g->nv * F, strstr(ops[oi], "max") || strstr(ops[oi], "min"),
                    graphs[gi], ops[oi], scheds[si]);
        free(y);
      }
      free(ref);
    }
    free(x);
    free(w);
    graph_free(g);
  }
}

/* Teams (team(eo, T), spmm_teams): 32 / T neighbour groups side by side in
 * a warp. The interpreter runs the scheduled IR (the teams change no
 * semantics) on a skewed graph (wiki-Vote: heavy and empty rows) and a
 * balanced one (proteins), with F = 6 so that every lane split has a tail;
 * the compiled kernel launches 256 / T groups per block and the fill stage
 * runs in teams of 8. */
START_TEST(test_teams) {
  static const char *ops[] = {"copy_u_sum", "u_mul_e_sum", "copy_u_mean", "copy_u_max"};
  static const char *graphs[] = {"wiki-Vote.mtx.gz", "proteins.mtx.gz"};
  static const char *scheds[] = {"spmm_teams(5, 4)", "spmm_teams8(8, 2)"};
  static const int teams[] = {4, 2};
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *lib = lang_stdlib(a, &d);
  for (int oi = 0; oi < 4; oi++)
    for (int si = 0; si < 2; si++) {
      IrOp *op = tu_lowered(lib, ir_module_find_op(lib, ops[oi]), scheds[si], a, &d);
      ck_assert_msg(op != NULL, "%s: %s", scheds[si], d.buf);
      const IrNode *fill = op->body, *groups = fill->next;
      ck_assert_int_eq(fill->loop.team, 8);
      ck_assert(groups->loop.kind == IR_LOOP_GROUPS && groups->loop.bind == IR_BIND_WARP);
      ck_assert_int_eq(groups->loop.team, teams[si]);
      CgProgram p = {0};
      ck_assert_msg(cg_compile(op, "sm_90", &p, &d) == 0, "%s", d.buf);
      ck_assert_int_eq(p.kernels[1].launch.per_block, p.kernels[1].threads / teams[si]);
      ck_assert_int_eq(p.kernels[0].launch.per_block, p.kernels[0].threads / 8);
      cg_program_free(&p);
    }
  check_schedules(lib, graphs, 2, ops, 4, scheds, 2, 6, a);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* Feature tiles outside the groups (spmm_tiles(G, T)): the tile loop is
 * an unbound range loop around the groups loop, run inside the kernel
 * (a grid-stride groups loop, launched to fill the GPU), so that every
 * warp finishes a tile before any starts the next. The interpreter runs
 * the scheduled IR on a skewed and a balanced graph with F = 6 (tiles of
 * 4 features: a tail tile; of 8: one tile with a tail); deterministic()
 * refuses the nest with the reason. */
START_TEST(test_tiles) {
  static const char *ops[] = {"copy_u_sum", "u_mul_e_sum", "copy_u_mean", "copy_u_max"};
  static const char *graphs[] = {"wiki-Vote.mtx.gz", "proteins.mtx.gz"};
  static const char *scheds[] = {"spmm_tiles(5, 1)", "spmm_tiles(8, 2)"};
  static const int teams[] = {1, 2};
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *lib = lang_stdlib(a, &d);
  for (int oi = 0; oi < 4; oi++)
    for (int si = 0; si < 2; si++) {
      IrOp *op = tu_lowered(lib, ir_module_find_op(lib, ops[oi]), scheds[si], a, &d);
      ck_assert_msg(op != NULL, "%s: %s", scheds[si], d.buf);
      const IrNode *tiles = op->body->next, *groups = tiles->loop.body;
      ck_assert(tiles->loop.kind == IR_LOOP_RANGE && tiles->loop.bind == IR_BIND_NONE);
      ck_assert(groups->loop.kind == IR_LOOP_GROUPS && groups->loop.bind == IR_BIND_WARP);
      ck_assert_int_eq(groups->loop.team, teams[si]);
      CgProgram p = {0};
      ck_assert_msg(cg_compile(op, "sm_90", &p, &d) == 0, "%s", d.buf);
      ck_assert_int_eq(p.kernels[1].launch.kind, CG_LAUNCH_FILL);
      ck_assert_int_eq(p.kernels[1].group, si ? 8 : 5);
      cg_program_free(&p);
    }
  check_schedules(lib, graphs, 2, ops, 4, scheds, 2, 6, a);
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  ck_assert_ptr_null(tu_lowered(lib, ir_module_find_op(lib, "copy_u_sum"),
                                "deterministic(); spmm_tiles(5, 1)", a, &quiet));
  ck_assert_ptr_nonnull(strstr(quiet.buf, "is inside feature-tile loop 'fo'"));
  ir_diag_free(&quiet);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* Panels (panel(eo, P), spmm_panels): P consecutive destinations a row of
 * the panel table, each pair's source row read once (passes/panel.c). The
 * interpreter runs the lowered IR on a skewed graph (wiki-Vote: panels
 * split over rows, empty destinations) and a balanced one (proteins),
 * F = 6; the groups kernel reads the panel table and its fill stage walks
 * the split panels' destinations; what panels cannot take is refused with
 * the reason. */
START_TEST(test_panels_lowered) {
  static const char *ops[] = {"copy_u_sum", "u_mul_e_sum"};
  static const char *graphs[] = {"wiki-Vote.mtx.gz", "proteins.mtx.gz"};
  static const char *scheds[] = {"spmm_panels(5, 4, 3)", "spmm_panel_teams(8, 3, 4)"};
  static const int panel[] = {4, 3};
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *lib = lang_stdlib(a, &d);
  for (int oi = 0; oi < 2; oi++)
    for (int si = 0; si < 2; si++) {
      IrOp *op = tu_lowered(lib, ir_module_find_op(lib, ops[oi]), scheds[si], a, &d);
      ck_assert_msg(op != NULL, "%s: %s", scheds[si], d.buf);
      const IrNode *fill = op->body, *groups = fill->next;
      ck_assert(fill->loop.kind == IR_LOOP_UNOWNED && fill->loop.panel == panel[si]);
      ck_assert(groups->loop.kind == IR_LOOP_GROUPS && groups->loop.panel == panel[si]);
      CgProgram p = {0};
      ck_assert_msg(cg_compile(op, "sm_90", &p, &d) == 0, "%s", d.buf);
      ck_assert_int_eq(p.kernels[0].group_panel, panel[si]);
      ck_assert_int_eq(p.kernels[1].group_panel, panel[si]);
      bool pairs = false;
      for (int i = 0; i < p.kernels[1].nparams; i++)
        pairs |= p.kernels[1].params[i].kind == CG_PARAM_PAIR_SRC;
      ck_assert(pairs);
      /* a slot's sums are predicated on its bit (loop.c, pair_edge), the
       * weighted one an fma: no branch and no select per slot */
      ck_assert_msg(strstr(p.ptx, oi ? "@p fma.rn.f32" : "@p add.rn.f32"), "%s %s",
                    ops[oi], scheds[si]);
      ck_assert_ptr_null(strstr(p.ptx, "selp.f32"));
      /* a kernel pack keeps the panel table's P; one that lost it (a pack
       * written by hand) is refused, not run over the group table */
      char path[512], word[16];
      snprintf(path, sizeof path, "%s/panels.pack", tu_tmpdir());
      ck_assert_msg(cg_pack_write(&p, path, &d) == 0, "%s", d.buf);
      CgProgram q = {0};
      ck_assert_msg(cg_pack_read(path, &q, &d) == 0, "%s", d.buf);
      ck_assert_int_eq(q.kernels[1].group_panel, panel[si]);
      ck_assert_int_eq(q.kernels[0].group_panel, panel[si]);
      cg_program_free(&q);
      char *text = tu_read_file(path, NULL), *at, *sum = strstr(text, "\nsum ");
      if (sum) memmove(sum, strchr(sum + 1, '\n'), strlen(strchr(sum + 1, '\n')) + 1);
      snprintf(word, sizeof word, " panel %d", panel[si]);
      while ((at = strstr(text, word))) memmove(at, at + strlen(word), strlen(at + strlen(word)) + 1);
      Diag quiet;
      ir_diag_init(&quiet, NULL);
      ck_assert_int_ne(cg_pack_read(tu_write("nopanel.pack", text), &q, &quiet), 0);
      ck_assert_msg(strstr(quiet.buf, "reads a panel table's pairs but names no `panel P`"),
                    "%s", quiet.buf);
      ir_diag_free(&quiet);
      free(text);
      cg_program_free(&p);
    }
  check_schedules(lib, graphs, 2, ops, 2, scheds, 2, 6, a);
  static const struct { const char *op, *sched, *want; } bad[] = {
      {"copy_u_sum", "optional(f); split(f, 4) -> (fo, fi); panel(fo, 4)",
       "is a range loop; panels are cut from a neighbour-groups loop"},
      {"copy_u_sum", "group(e, 8) -> (eo, ei); panel(eo, 9)", "must be an integer from 2 to 8, not 9"},
      {"copy_u_sum", "group(e, 8) -> (eo, ei); panel(eo, 2); panel(eo, 4)", "already has panels of 2"},
      {"copy_u_max", "spmm_panels(8, 4, 2)", "holds a reduction other than +="},
      {"copy_u_sum", "deterministic(); spmm_panels(8, 4, 2)", "deterministic() needs a fixed order"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    Diag quiet;
    ir_diag_init(&quiet, NULL);
    ck_assert_ptr_null(tu_lowered(lib, ir_module_find_op(lib, bad[i].op), bad[i].sched, a, &quiet));
    ck_assert_msg(strstr(quiet.buf, bad[i].want), "%s: %s", bad[i].sched, quiet.buf);
    ir_diag_free(&quiet);
  }
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

START_TEST(test_semantics) {
  static const char *graphs[] = {"blogcatalog.mtx.gz", "delaunay_n16.mtx.gz"};
  static const char *ops[] = {"u_mul_e_sum", "copy_u_max"};
  /* G 3, 5, 8 divide few degrees; T 2 and 3 do not divide F, 32 exceeds it */
  static const char *scheds[] = {"gnnadvisor(3, 2)", "gnnadvisor_mgg(5, 3, 2)",
                                 "gnnadvisor_shared(8, 32, 4)"};
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *lib = lang_stdlib(a, &d);
  ck_assert_ptr_nonnull(lib);
  /* a quick run (tu_quick: the sanitized build) keeps delaunay_n16;
   * test_semantics_classes below covers blogcatalog there */
  int first = tu_quick() ? 1 : 0;
  check_schedules(lib, graphs + first, 2 - first, ops, 2, scheds, 3, 5, a);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* interleave(eo, K, D) for K = 3..8, alone, with the shared accumulator and
 * under deterministic(), on the skewed blogcatalog (every class filled):
 * the unscheduled result; and under deterministic() bit for bit the result
 * without interleaving, since each destination's rows still come in CSR
 * order, whatever the classes and the distance. */
START_TEST(test_semantics_classes) {
  static const char *ops[] = {"u_mul_e_sum", "copy_u_max"};
  static const struct {
    const char *sched, *plain; /* plain: deterministic, not interleaved */
  } scheds[] = {
      {"gnnadvisor(3, 2); interleave(eo, 3, 2)", NULL},
      {"gnnadvisor_shared(4, 32, 2); interleave(eo, 4, 1)", NULL},
      {"gnnadvisor(1, 3); interleave(eo, 7, 5)", NULL},
      {"deterministic(); gnnadvisor(2, 3); interleave(eo, 5, 3)",
       "deterministic(); gnnadvisor(2, 3)"},
      {"deterministic(); gnnadvisor(4, 2); interleave(eo, 6, 1)",
       "deterministic(); gnnadvisor(4, 2)"},
      {"deterministic(); gnnadvisor(5, 32); interleave(eo, 8, 4)",
       "deterministic(); gnnadvisor(5, 32)"},
  };
  const int64_t F = 5;
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *lib = lang_stdlib(a, &d);
  ck_assert_ptr_nonnull(lib);
  Graph *g = tu_graph("blogcatalog.mtx.gz");
  float *x, *w;
  inputs(g, F, &x, &w);
  for (int oi = 0; oi < 2; oi++) {
    float *ref = run(lib, ops[oi], NULL, g, F, x, w, a);
    for (size_t si = 0; si < sizeof scheds / sizeof scheds[0]; si++) {
      float *y = run(lib, ops[oi], scheds[si].sched, g, F, x, w, a);
      check_close(y, ref, g->nv * F, strstr(ops[oi], "max") != NULL, "blogcatalog", ops[oi],
                  scheds[si].sched);
      if (scheds[si].plain) {
        float *p = run(lib, ops[oi], scheds[si].plain, g, F, x, w, a);
        ck_assert_msg(memcmp(y, p, sizeof(float) * (size_t)(g->nv * F)) == 0,
                      "%s: `%s` and `%s` differ", ops[oi], scheds[si].sched, scheds[si].plain);
        free(p);
      }
      free(y);
    }
    free(ref);
  }
  free(x);
  free(w);
  graph_free(g);
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
      {"op f(X: f32[src]) -> Y: f32[dst] {\n"
       "  for g in groups(2) @interleave(2) @classes(9) {\n  }\n}\n",
       "`@classes(K)` takes 2 to 8 classes, not 9"},
      {"op g(X: f32[src]) -> Y: f32[dst] {\n"
       "  for g in groups(2) @interleave(2) @classes(3) @threshold(8) {\n  }\n}\n",
       "`@threshold(N)` splits two classes"},
      {"op h(X: f32[src]) -> Y: f32[dst] {\n"
       "  for g in groups(2) @classes(3) {\n  }\n}\n",
       "belong on a groups loop"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) tu_ir_refused(bad[i].text, bad[i].error);
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
  ck_assert_int_eq(q.kernels[0].group_cls, 2);
  /* two classes: the `kernel` line keeps its four numbers of the table */
  char *text = tu_read_file(path, NULL);
  const char *line = strstr(text, "\nkernel ");
  ck_assert_ptr_nonnull(line);
  char kline[256];
  ck_assert_int_eq(sscanf(line + 1, "%255[^\n]", kline), 1);
  int words = 0;
  for (char *w = strtok(kline, " "); w; w = strtok(NULL, " ")) words++;
  ck_assert_msg(words == 9, "%s", line + 1);
  free(text);
  cg_program_free(&p);
  cg_program_free(&q);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* More than two classes reach the runtime through a kernel pack, on both
 * stages of a deterministic segmented reduction; a pack that gives classes
 * with a degree threshold is refused. */
START_TEST(test_codegen_pack_classes) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *lib = lang_stdlib(a, &d);
  IrOp *op = pass_op_copy(ir_module_find_op(lib, "copy_u_sum"), a);
  ck_assert_int_eq(pass_schedule_text(op, lib, "deterministic(); gnnadvisor(4, 8); "
                                      "interleave(eo, 5, 3)", a, &d), 0);
  ck_assert_int_eq(pass_lower(op, a, &d, NULL, NULL), 0);
  CgProgram p = {0}, q = {0};
  ck_assert_msg(cg_compile(op, "sm_90", &p, &d) == 0, "%s", d.buf);
  ck_assert_int_eq(p.nkernels, 2); /* each group into its row; the rows */
  const char *path = tu_write("classes.pack", "");
  ck_assert_int_eq(cg_pack_write(&p, path, &d), 0);
  ck_assert_msg(cg_pack_read(path, &q, &d) == 0, "%s", d.buf);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(p.kernels[i].group_cls, 5);
    ck_assert_int_eq(q.kernels[i].group, 4);
    ck_assert_int_eq(q.kernels[i].group_ilv, 3);
    ck_assert_int_eq(q.kernels[i].group_cls, 5);
    ck_assert_int_eq(q.kernels[i].group_thr, 0);
  }
  cg_program_free(&q);
  char *text = tu_read_file(path, NULL);
  char *at = strstr(text, " 4 3 0 -1 5\n");
  ck_assert_ptr_nonnull(at);
  memcpy(at, " 4 3 9 -1 5\n", 12);
  const char *bad = tu_write("classes_thr.pack", text);
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  CgProgram r = {0};
  ck_assert_int_ne(cg_pack_read(bad, &r, &quiet), 0);
  ck_assert_msg(strstr(quiet.buf, "5 classes with a degree threshold"), "%s", quiet.buf);
  cg_program_free(&r);
  ir_diag_free(&quiet);
  free(text);
  cg_program_free(&p);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

int main(void) {
  Suite *s = suite_create("groups");
  TCase *tc = tcase_create("groups");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_tables);
tcase_add_test(tc, test_table_order);
  tcase_add_test(tc, test_ir_text);
  tcase_add_test(tc, test_codegen_pack);
  tcase_add_test(tc, test_codegen_pack_classes);
  tcase_add_test(tc, test_fill_unowned_rows);
  tcase_add_test(tc, test_wide_twin);
  tcase_add_test(tc, test_teams);
  tcase_add_test(tc, test_panels_lowered);
  tcase_add_test(tc, test_tiles);
  tcase_add_test(tc, test_semantics);
  tcase_add_test(tc, test_semantics_classes);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
