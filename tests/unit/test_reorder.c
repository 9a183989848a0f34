/* tests/unit/test_reorder.c: vertex orders (graph/reorder.c) and their
 * transparency in the run API (api/run.c).
 *
 * The orders are checked for what each promises on graphs small enough to
 * know the answer (a shuffled path for RCM, two cliques for community and
 * METIS, degrees for degree), every order for being a permutation whose
 * edge map carries every arc, and every representative operator of the
 * standard library for giving the caller the same results, in the
 * caller's numbering, with and without each order, on a skewed R-MAT, a
 * grid and cora.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gop.h"
#include "graph/graph.h"
#include "lang/lang.h"
#include "testutil.h"

static const char *methods[] = {"degree", "rcm", "metis", "community", "auto", "none"};
enum { NMETHODS = sizeof methods / sizeof methods[0] };

static Graph *from_arcs(int64_t nv, int64_t ne, const int64_t *src, const int64_t *dst) {
  Diag d;
  ir_diag_init(&d, stderr);
  Graph *g = graph_from_coo(nv, ne, src, dst, "test", &d, (Loc){0});
  ck_assert_ptr_nonnull(g);
  ir_diag_free(&d);
  return g;
}

/* graph_reorder that must succeed (metis only where built with METIS). */
static Graph *reorder(const Graph *g, const char *method) {
  Diag d;
  ir_diag_init(&d, stderr);
  Graph *r = graph_reorder(g, method, &d);
  ck_assert_msg(r != NULL, "%s: %s", method, d.buf ? d.buf : "");
  ir_diag_free(&d);
  return r;
}

static bool skip(const char *method) {
  return strncmp(method, "metis", 5) == 0 && !graph_have_metis();
}

/* r is g renumbered: a bijection on vertices and edges carrying every arc. */
static void check_permutation(const Graph *g, const Graph *r) {
  ck_assert_ptr_nonnull(r->perm);
  ck_assert_int_eq(r->nv, g->nv);
  ck_assert_int_eq(r->ne, g->ne);
  const GraphPerm *p = r->perm;
  char *seen = calloc((size_t)g->nv + (size_t)g->ne + 1, 1);
  for (int32_t v = 0; v < g->nv; v++) {
    int32_t n = p->new_of_old[v];
    ck_assert(n >= 0 && n < g->nv && !seen[n]);
    seen[n] = 1;
    ck_assert_int_eq(p->old_of_new[n], v);
  }
  for (int32_t e = 0; e < r->ne; e++) {
    int32_t o = p->edge_old[e];
    ck_assert(o >= 0 && o < g->ne && !seen[g->nv + o]);
    seen[g->nv + o] = 1;
    ck_assert_int_eq(r->src[e], p->new_of_old[g->src[o]]);
    ck_assert_int_eq(r->dst[e], p->new_of_old[g->dst[o]]);
    if (e > 0) ck_assert_int_le(r->dst[e - 1], r->dst[e]); /* sorted by destination */
  }
  free(seen);
}

/* A random permutation of 0..n-1 (Fisher-Yates on the test LCG). */
static void shuffle(int64_t *label, int64_t n, uint64_t seed) {
  for (int64_t i = 0; i < n; i++) label[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)(tu_lcg(&seed) % (uint64_t)(i + 1));
    int64_t t = label[i];
    label[i] = label[j];
    label[j] = t;
  }
}

START_TEST(every_order_is_a_permutation) {
  const char *specs[] = {"rmat:9:8", "grid:7x5"};
  for (int s = 0; s < 2; s++) {
    Diag d;
    ir_diag_init(&d, stderr);
    Graph *g = graph_open(specs[s], &d);
    ck_assert_ptr_nonnull(g);
    for (int m = 0; m < NMETHODS; m++) {
      if (skip(methods[m])) continue;
      Graph *r = reorder(g, methods[m]);
      check_permutation(g, r);
      /* reordering a reordered graph maps back to the first numbering */
      Graph *r2 = reorder(r, "rcm");
      check_permutation(g, r2);
      graph_free(r2);
      graph_free(r);
    }
    graph_free(g);
    ir_diag_free(&d);
  }
  /* empty graphs and graphs without edges */
  for (int nv = 0; nv <= 3; nv += 3) {
    Graph *g = from_arcs(nv, 0, NULL, NULL);
    for (int m = 0; m < NMETHODS; m++) {
      if (skip(methods[m])) continue;
      Graph *r = reorder(g, methods[m]);
      check_permutation(g, r);
      graph_free(r);
    }
    graph_free(g);
  }
}
END_TEST

START_TEST(degree_sorts_in_degree_descending) {
  Diag d;
  ir_diag_init(&d, stderr);
  Graph *g = graph_open("rmat:9:8", &d);
  Graph *r = reorder(g, "degree");
  for (int32_t v = 1; v < r->nv; v++) {
    int32_t a = r->in_ptr[v] - r->in_ptr[v - 1], b = r->in_ptr[v + 1] - r->in_ptr[v];
    ck_assert_int_ge(a, b);
    /* ties keep the original order */
    if (a == b) ck_assert_int_lt(r->perm->old_of_new[v - 1], r->perm->old_of_new[v]);
  }
  graph_free(r);
  graph_free(g);
  ir_diag_free(&d);
}
END_TEST

START_TEST(rcm_recovers_a_shuffled_path) {
  enum { N = 200 };
  int64_t label[N], src[2 * (N - 1)], dst[2 * (N - 1)];
  shuffle(label, N, 7);
  for (int i = 0; i + 1 < N; i++) {
    src[2 * i] = label[i], dst[2 * i] = label[i + 1];
    src[2 * i + 1] = label[i + 1], dst[2 * i + 1] = label[i];
  }
  Graph *g = from_arcs(N, 2 * (N - 1), src, dst);
  ck_assert_double_gt(g->stats.aes, 10);
  Graph *r = reorder(g, "rcm");
  ck_assert_double_eq(r->stats.aes, 1.0); /* bandwidth 1: the path again */
  /* a pseudo-peripheral start: an end of the path comes first or last */
  int32_t first = r->perm->old_of_new[0];
  ck_assert(first == label[0] || first == label[N - 1]);
  graph_free(r);
  graph_free(g);
}
END_TEST

/* Two 8-cliques, members interleaved (even ids one, odd the other), one
 * edge between them: a good order makes each clique contiguous. */
static Graph *two_cliques(void) {
  int64_t src[2 * 56 + 2], dst[2 * 56 + 2];
  int n = 0;
  for (int c = 0; c < 2; c++)
    for (int i = 0; i < 8; i++)
      for (int j = 0; j < 8; j++)
        if (i != j) src[n] = 2 * i + c, dst[n++] = 2 * j + c;
  src[n] = 0, dst[n++] = 1;
  src[n] = 1, dst[n++] = 0;
  return from_arcs(16, n, src, dst);
}

static void check_cliques_contiguous(const Graph *r) {
  int32_t lo[2] = {99, 99}, hi[2] = {-1, -1};
  for (int32_t v = 0; v < 16; v++) {
    int32_t n = r->perm->new_of_old[v];
    if (n < lo[v % 2]) lo[v % 2] = n;
    if (n > hi[v % 2]) hi[v % 2] = n;
  }
  ck_assert_int_eq(hi[0] - lo[0], 7);
  ck_assert_int_eq(hi[1] - lo[1], 7);
}

START_TEST(community_and_metis_group_cliques) {
  Graph *g = two_cliques();
  Graph *r = reorder(g, "community");
  check_cliques_contiguous(r);
  ck_assert_double_lt(r->stats.aes, g->stats.aes);
  graph_free(r);
  Diag d;
  ir_diag_init(&d, NULL);
  r = graph_reorder(g, "metis:2", &d);
  if (graph_have_metis()) {
    ck_assert_ptr_nonnull(r);
    check_cliques_contiguous(r);
    ck_assert_str_eq(r->perm->method, "metis:2");
    graph_free(r);
  } else {
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(d.buf, "gop was built without METIS"));
  }
  ir_diag_free(&d);
  graph_free(g);
}
END_TEST

START_TEST(auto_follows_the_aes_rule) {
  /* self-loops only: AES 0, below |V| / 10^4: the original order */
  int64_t loops[5] = {0, 1, 2, 3, 4};
  Graph *g = from_arcs(5, 5, loops, loops);
  ck_assert(!graph_aes_rule(g));
  Graph *r = reorder(g, "auto");
  ck_assert_str_eq(r->perm->method, "auto=none");
  for (int v = 0; v < 5; v++) ck_assert_int_eq(r->perm->new_of_old[v], v);
  graph_free(r);
  graph_free(g);
  /* two shuffled cliques: AES far above the threshold, and the community
   * order shortens it */
  g = two_cliques();
  ck_assert(graph_aes_rule(g));
  r = reorder(g, "auto");
  ck_assert_str_eq(r->perm->method, "auto=community");
  check_cliques_contiguous(r);
  graph_free(r);
  graph_free(g);
  /* auto never loses locality: on a grid in row order the community
   * order would (slightly), on a shuffled R-MAT it gains */
  Diag d;
  ir_diag_init(&d, stderr);
  const char *specs[] = {"grid:300x300", "rmat:14:8"};
  const char *want[] = {"auto=none", "auto=community"};
  for (int s = 0; s < 2; s++) {
    g = graph_open(specs[s], &d);
    ck_assert(graph_aes_rule(g));
    Graph *c = reorder(g, "community");
    r = reorder(g, "auto");
    ck_assert_str_eq(r->perm->method, want[s]);
    ck_assert(graph_order_gains(g, c) == (s == 1));
    ck_assert_double_ge(r->stats.locality, g->stats.locality);
    graph_free(c);
    graph_free(r);
    graph_free(g);
  }
  ir_diag_free(&d);
}
END_TEST

START_TEST(locality_measure) {
  Diag d;
  ir_diag_init(&d, stderr);
  Graph *g = graph_open("grid:256x256", &d);
  /* a 256-wide grid in row order: the sources of 32 consecutive
   * destinations span a few blocks, hit nearly always */
  ck_assert_double_gt(g->stats.locality, 0.9);
  int32_t *shuffled = malloc(sizeof(int32_t) * (size_t)g->nv);
  int64_t *label = malloc(sizeof(int64_t) * (size_t)g->nv);
  shuffle(label, g->nv, 3);
  for (int32_t v = 0; v < g->nv; v++) shuffled[v] = (int32_t)label[v];
  Graph *s = graph_permute(g, shuffled, "shuffle", &d);
  ck_assert_double_lt(s->stats.locality, 0.5);
  Graph *r = reorder(s, "rcm");
  ck_assert_double_gt(r->stats.locality, 0.9);
  graph_free(r);
  graph_free(s);
  free(label);
  free(shuffled);
  graph_free(g);
  ir_diag_free(&d);
}
END_TEST

START_TEST(bad_methods_are_refused) {
  const char *bad[][2] = {
      {"bogus", "reordering 'bogus': unknown method: choose none, degree, rcm, "
                "metis[:PARTS], community or auto"},
      {"", "reordering '': empty method"},
      {"metis:1", "reordering 'metis:1': PARTS must be an integer from 2 to 1000000"},
      {"metis:x", "reordering 'metis:x': PARTS must be"},
      {"metis:", "reordering 'metis:': PARTS must be"},
      {"rcm:4", "reordering 'rcm:4': only metis takes an argument"},
      {"RCM", "reordering 'RCM': unknown method"},
  };
  Graph *g = two_cliques();
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    Diag d;
    ir_diag_init(&d, NULL);
    ck_assert_ptr_null(graph_reorder(g, bad[i][0], &d));
    ck_assert_msg(d.buf && strstr(d.buf, bad[i][1]), "%s: %s", bad[i][0], d.buf);
    ir_diag_free(&d);
  }
  graph_free(g);
}
END_TEST

START_TEST(matrix_market_round_trip) {
  Diag d;
  ir_diag_init(&d, stderr);
  Graph *g = graph_open("rmat:7:4", &d);
  Graph *r = reorder(g, "community");
  char path[512];
  snprintf(path, sizeof path, "%s/r.mtx", tu_tmpdir());
  ck_assert_int_eq(graph_write_mtx(r, path, &d), 0);
  Graph *back = graph_read(path, &d);
  ck_assert_ptr_nonnull(back);
  ck_assert_int_eq(back->nv, r->nv);
  ck_assert_int_eq(back->ne, r->ne);
  for (int32_t e = 0; e < r->ne; e++) {
    ck_assert_int_eq(back->src[e], r->src[e]);
    ck_assert_int_eq(back->dst[e], r->dst[e]);
  }
  graph_free(back);
  graph_free(r);
  graph_free(g);
  ir_diag_free(&d);
}
END_TEST

/* ---- transparency ---- */

/* Runs `op` (whose IR is `ir`, for its extents' names) on the interpreter
 * on `g` with inputs from `seed`, every extent 3; returns the outputs
 * concatenated (malloc'ed, *n floats). */
static float *run_op(GopContext *ctx, GopOp *op, const IrOp *ir, const GopGraph *g,
                     uint64_t seed, int64_t *n) {
  GopRun *r = gop_run_new(ctx, op, g);
  ck_assert_ptr_nonnull(r);
  gop_run_set_device(r, GOP_DEVICE_INTERP);
  for (int i = 0; i < ir->nsyms; i++)
    ck_assert_int_eq(gop_run_set_extent(r, ir->syms[i]->name, 3), 0);
  int nt = gop_run_num_tensors(r);
  float **data = calloc((size_t)nt, sizeof *data);
  int64_t total = 0;
  for (int i = 0; i < nt; i++) {
    int64_t shape[8], numel = 1;
    int rank = gop_run_tensor_shape(r, i, shape);
    ck_assert_int_ge(rank, 0);
    for (int k = 0; k < rank; k++) numel *= shape[k];
    data[i] = malloc(sizeof(float) * (size_t)(numel ? numel : 1));
    uint64_t s = seed + (uint64_t)i;
    for (int64_t k = 0; k < numel; k++)
      data[i][k] = (float)((int64_t)(tu_lcg(&s) >> 40) % 2001 - 1000) / 1000.0f;
    if (gop_run_tensor_is_output(r, i)) total += numel;
    ck_assert_int_eq(gop_run_bind(r, gop_run_tensor_name(r, i), data[i], numel), 0);
  }
  ck_assert_msg(gop_run_exec(r) == 0, "%s: %s", gop_op_name(op), gop_diagnostics(ctx));
  double worst;
  ck_assert_msg(gop_run_check(r, &worst) == 0, "%s: %s", gop_op_name(op),
                gop_diagnostics(ctx));
  float *out = malloc(sizeof(float) * (size_t)(total ? total : 1));
  int64_t at = 0;
  for (int i = 0; i < nt; i++) {
    if (gop_run_tensor_is_output(r, i)) {
      int64_t shape[8], numel = 1;
      int rank = gop_run_tensor_shape(r, i, shape);
      for (int k = 0; k < rank; k++) numel *= shape[k];
      memcpy(out + at, data[i], sizeof(float) * (size_t)numel);
      at += numel;
    }
    free(data[i]);
  }
  free(data);
  *n = total;
  return out;
}

static void same_results_reordered(const char *spec) {
  GopContext *ctx = gop_context_new();
  GopModule *lib = gop_stdlib(ctx);
  Arena *arena = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *irlib = lang_stdlib(arena, &d); /* the same operators, for their extents */
  ck_assert_ptr_nonnull(irlib);
  GopGraph *g = gop_graph_open(ctx, spec);
  ck_assert_msg(g != NULL, "%s", gop_diagnostics(ctx));
  GopGraph *r[NMETHODS + 1];
  int nr = 0;
  for (int m = 0; m < NMETHODS; m++) {
    if (skip(methods[m])) continue;
    r[nr] = gop_graph_reorder(ctx, g, methods[m]);
    ck_assert_msg(r[nr] != NULL, "%s", gop_diagnostics(ctx));
    ck_assert_ptr_nonnull(gop_graph_order(r[nr]));
    nr++;
  }
  /* twice reordered: still the caller's numbering */
  r[nr] = gop_graph_reorder(ctx, r[0], "rcm");
  ck_assert_ptr_nonnull(r[nr]);
  nr++;
  ck_assert_ptr_null(gop_graph_order(g));
  int tested = 0;
  for (int i = 0; i < gop_module_num_ops(lib); i++) {
    GopOp *op = gop_module_op(lib, i);
    if (!gop_op_representative(op)) continue;
    tested++;
    const IrOp *ir = ir_module_find_op(irlib, gop_op_name(op));
    ck_assert_ptr_nonnull(ir);
    int64_t n, n2;
    float *want = run_op(ctx, op, ir, g, 11, &n);
    for (int k = 0; k < nr; k++) {
      float *got = run_op(ctx, op, ir, r[k], 11, &n2);
      ck_assert_int_eq(n, n2);
      for (int64_t j = 0; j < n; j++) {
        bool ok = (isnan(want[j]) && isnan(got[j])) || want[j] == got[j] ||
                  fabsf(want[j] - got[j]) <= 1e-4f * (1.0f + fabsf(want[j]));
        ck_assert_msg(ok, "%s on %s [%s]: element %lld is %.9g, %.9g in the original order",
                      gop_op_name(op), spec, gop_graph_order(r[k]), (long long)j, got[j],
                      want[j]);
      }
      free(got);
    }
    free(want);
  }
  ck_assert_int_ge(tested, 10);
  gop_context_free(ctx);
  ir_diag_free(&d);
  ir_arena_free(arena);
}

START_TEST(same_results_on_rmat) { same_results_reordered("rmat:9:8"); }
END_TEST

START_TEST(same_results_on_grid) { same_results_reordered("grid:12x10"); }
END_TEST

START_TEST(same_results_on_cora) { same_results_reordered(tu_dataset("cora.mtx.gz")); }
END_TEST

START_TEST(api_maps_and_errors) {
  GopContext *ctx = gop_context_new();
  GopGraph *g = gop_graph_open(ctx, "grid:4x4");
  ck_assert_int_eq(gop_graph_permutation(g, NULL, NULL), -1);
  ck_assert_double_eq(gop_graph_reorder_seconds(g), 0);
  GopGraph *r = gop_graph_reorder(ctx, g, "rcm");
  const int32_t *vp;
  const int64_t *ep;
  ck_assert_int_eq(gop_graph_permutation(r, &vp, &ep), 16);
  ck_assert_str_eq(gop_graph_order(r), "rcm");
  const int32_t *src, *dst;
  long ne = gop_graph_arcs(r, &src, &dst);
  const int32_t *osrc, *odst;
  gop_graph_arcs(g, &osrc, &odst);
  for (long e = 0; e < ne; e++) {
    ck_assert_int_eq(src[e], vp[osrc[ep[e]]]);
    ck_assert_int_eq(dst[e], vp[odst[ep[e]]]);
  }
  GopGraphInfo info;
  gop_graph_info(r, &info);
  ck_assert_double_ge(info.locality, 0);
  ck_assert_ptr_null(gop_graph_reorder(ctx, g, "sideways"));
  ck_assert_ptr_nonnull(
      strstr(gop_diagnostics(ctx), "gop: error: gop_graph_reorder: 'sideways': unknown method"));
  ck_assert_str_eq(gop_reorder_method_problem("metis:0"),
                   "PARTS must be an integer from 2 to 1000000");
  ck_assert_ptr_null(gop_reorder_method_problem("metis:64"));
  ck_assert_ptr_null(gop_graph_reorder(ctx, NULL, "rcm"));
  ck_assert_int_eq(gop_graph_write_mtx(ctx, r, "/nonexistent-dir/x.mtx"), -1);
  gop_context_free(ctx);
}
END_TEST

/* gopc: the same outputs with --reorder; graph -o writes what it prints */
START_TEST(gopc_end_to_end) {
  static char out[1 << 15];
  char args[1024];
  const char *cora = tu_dataset("cora.mtx.gz");
  const char *order[] = {"", "--reorder community", "--reorder degree"};
  for (int i = 0; i < 3; i++) {
    snprintf(args, sizeof args,
             "run stdlib:u_mul_e_sum --graph %s --F 5 --interp --out Y=y%d.npy %s", cora, i,
             order[i]);
    ck_assert_msg(tu_gopc("", args, out, sizeof out) == 0, "%s", out);
    if (i) ck_assert_ptr_nonnull(strstr(out, "reordered by"));
  }
  char p0[512], p[512];
  snprintf(p0, sizeof p0, "%s/y0.npy", tu_tmpdir());
  size_t n0, n;
  char *want = tu_read_file(p0, &n0);
  for (int i = 1; i < 3; i++) {
    snprintf(p, sizeof p, "%s/y%d.npy", tu_tmpdir(), i);
    char *got = tu_read_file(p, &n);
    ck_assert_ptr_nonnull(got);
    ck_assert_int_eq(n, n0);
    /* the header is the same; values agree up to summation order */
    const float *a = (const float *)(want + 128), *b = (const float *)(got + 128);
    ck_assert_int_eq(memcmp(want, got, 128), 0);
    for (size_t k = 0; k < (n - 128) / 4; k++)
      ck_assert_msg(fabsf(a[k] - b[k]) <= 1e-4f * (1 + fabsf(a[k])), "Y[%zu]: %g vs %g", k,
                    b[k], a[k]);
    free(got);
  }
  free(want);
  snprintf(args, sizeof args, "graph %s --reorder rcm -o r.mtx", cora);
  ck_assert_int_eq(tu_gopc("", args, out, sizeof out), 0);
  ck_assert_ptr_nonnull(strstr(out, "reordered by rcm in"));
  ck_assert_ptr_nonnull(strstr(out, "[rcm]: |V| 2708, |E| 10556"));
  ck_assert_ptr_nonnull(strstr(out, "written to r.mtx"));
  ck_assert_int_eq(tu_gopc("", "graph r.mtx", out, sizeof out), 0);
  ck_assert_ptr_nonnull(strstr(out, "|V| 2708, |E| 10556"));
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("reorder");
  TCase *tc = tcase_create("orders");
  tcase_add_test(tc, every_order_is_a_permutation);
  tcase_add_test(tc, degree_sorts_in_degree_descending);
  tcase_add_test(tc, rcm_recovers_a_shuffled_path);
  tcase_add_test(tc, community_and_metis_group_cliques);
  tcase_add_test(tc, auto_follows_the_aes_rule);
  tcase_add_test(tc, locality_measure);
  tcase_add_test(tc, bad_methods_are_refused);
  tcase_add_test(tc, matrix_market_round_trip);
  suite_add_tcase(s, tc);
  TCase *tr = tcase_create("transparency");
  tcase_add_test(tr, same_results_on_rmat);
  tcase_add_test(tr, same_results_on_grid);
  tcase_add_test(tr, same_results_on_cora);
  tcase_add_test(tr, api_maps_and_errors);
  tcase_add_test(tr, gopc_end_to_end);
  suite_add_tcase(s, tr);
  return s;
}

int main(void) { return tu_run(suite()); }
