/* tests/unit/test_panels.c: the panel pair table (graph/panels.c): a hand
 * graph whose pairs are written out (a multigraph arc, unsorted sources, a
 * panel without edges, one cut by G, |V| not a multiple of P), and the
 * table's invariants on generated graphs, skewed (R-MAT), balanced (grid)
 * and a random multigraph, for several P and G; the ratio, the cache and
 * the refusals. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "testutil.h"


/* The destination whose in-edge range holds CSR position k. */
static int32_t dst_of(const Graph *g, int64_t k) {
  int32_t lo = 0, hi = g->nv - 1;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo + 1) / 2;
    if (g->in_ptr[mid] <= k) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* Every CSR position in exactly one set slot, of a pair of the right
 * source and destination; clear slots repeat the lowest set one; a panel's
 * pairs by source, a source's later pairs (its repeated arcs) holding a
 * subset of the earlier one's slots at later positions, so there are as
 * many as its most repeated arc needs and no more; rows of at most G
 * pairs, at least one per panel, in panel order, covering the pairs; own
 * and unowned as the rows say. Returns the table. */
static const GraphPanels *check_panels(const Graph *g, int G, int P) {
  Diag d;
  ir_diag_init(&d, stderr);
  const GraphPanels *t = graph_panels(g, G, P, &d);
  ck_assert_msg(t != NULL, "%s", d.buf);
  ck_assert_ptr_eq(graph_panels(g, G, P, &d), t); /* cached */
  ck_assert_int_eq(t->G, G);
  ck_assert_int_eq(t->P, P);
  ck_assert_int_eq(d.nerrors, 0);
  ir_diag_free(&d);
  int64_t npanels = ((int64_t)g->nv + P - 1) / P;
  int64_t *panel_pairs = calloc((size_t)npanels + 1, sizeof *panel_pairs);
  int64_t *panel_rows = calloc((size_t)npanels + 1, sizeof *panel_rows);
  char *seen = calloc((size_t)g->ne + 1, 1);
  int64_t *pair_panel = calloc((size_t)t->npairs + 1, sizeof *pair_panel);
  int bad = 0; /* one ck_assert per pair would flood check's pipe */
#define PCHECK(cond)                                                          \
  if (!(cond) && bad++ < 5)                                                   \
    fprintf(stderr, "%s G %d P %d pair %lld: %s\n", g->name, G, P, (long long)q, #cond)
  /* rows: in panel order, consecutive pairs, at most G each */
  int64_t next = 0;
  for (int64_t r = 0; r < t->n; r++) {
    ck_assert_int_eq(t->dst[r] % P, 0);
    int64_t p = t->dst[r] / P;
    ck_assert_int_lt(p, npanels);
    if (r > 0) ck_assert_int_le(t->dst[r - 1], t->dst[r]);
    if (r > 0 && t->dst[r - 1] != t->dst[r]) ck_assert_int_eq(t->dst[r - 1] + P, t->dst[r]);
    if (r == 0) ck_assert_int_eq(t->dst[r], 0);
    ck_assert_int_eq(t->first[r], next);
    ck_assert_int_le(t->first[r], t->end[r]);
    ck_assert_int_le(t->end[r] - t->first[r], G);
    for (int64_t q = t->first[r]; q < t->end[r]; q++) pair_panel[q] = p;
    next = t->end[r];
    panel_rows[p]++;
    panel_pairs[p] += t->end[r] - t->first[r];
  }
  ck_assert_int_eq(next, t->npairs);
  if (t->n > 0) ck_assert_int_eq(t->dst[t->n - 1], (npanels - 1) * P);
  /* each panel: ceil(pairs / G) rows, at least one; an empty row only alone */
  int64_t nun = 0;
  for (int64_t p = 0; p < npanels; p++) {
    int64_t want = (panel_pairs[p] + G - 1) / G;
    ck_assert_int_eq(panel_rows[p], want > 1 ? want : 1);
    if (panel_rows[p] > 1)
      for (int64_t v = p * P; v < (p + 1) * P && v < g->nv; v++) {
        ck_assert_int_lt(nun, t->nunowned);
        ck_assert_int_eq(t->unowned[nun++], v);
      }
  }
  ck_assert_int_eq(nun, t->nunowned);
  for (int64_t r = 0; r < t->n; r++) {
    ck_assert_int_eq(t->own[r], panel_rows[t->dst[r] / P] == 1);
    if (t->first[r] == t->end[r]) ck_assert_int_eq(t->own[r], 1);
  /* the rows seen as a group table are the same arrays */
  ck_assert_int_eq(t->rows.n, t->n);
  ck_assert_int_eq(t->rows.G, t->G);
  ck_assert_ptr_eq(t->rows.dst, t->dst);
  ck_assert_ptr_eq(t->rows.first, t->first);
  ck_assert_ptr_eq(t->rows.end, t->end);
  ck_assert_ptr_eq(t->rows.unowned, t->unowned);
  ck_assert_int_eq(t->rows.nunowned, t->nunowned);
  }
  /* pairs */
  for (int64_t q = 0; q < t->npairs; q++) {
    int64_t p = pair_panel[q];
    int32_t m = t->mask[q];
    PCHECK(m != 0 && (m >> P) == 0);
    if (!m) continue;
    int low = __builtin_ctz((unsigned)m);
    for (int s = 0; s < P; s++) {
      int64_t k = t->pos[q * P + s];
      PCHECK(k >= 0 && k < g->ne);
      if (k < 0 || k >= g->ne) continue;
      if (!(m >> s & 1)) {
        PCHECK(k == t->pos[q * P + low]);
        continue;
      }
      PCHECK(p * P + s < g->nv);
      PCHECK(dst_of(g, k) == p * P + s);
      PCHECK(g->in_src[k] == t->src[q]);
      PCHECK(!seen[k]);
      seen[k] = 1;
    }
    if (q > 0 && pair_panel[q - 1] == p) {
      PCHECK(t->src[q - 1] <= t->src[q]);
      if (t->src[q - 1] == t->src[q]) {
        /* a repeated arc's next occurrence: a subset, later in CSR order */
        PCHECK((m & ~t->mask[q - 1]) == 0);
        for (int s = 0; s < P; s++)
          if (m >> s & 1) PCHECK(t->pos[q * P + s] > t->pos[(q - 1) * P + s]);
      }
    }
  }
  for (int64_t k = 0; k < g->ne; k++)
    if (!seen[k] && bad++ < 5) fprintf(stderr, "%s G %d P %d: position %lld in no pair\n",
                                       g->name, G, P, (long long)k);
#undef PCHECK
  ck_assert_msg(bad == 0, "%s G %d P %d: %d bad pairs or positions", g->name, G, P, bad);
  ck_assert_int_eq(t->bytes, t->n * 16 + t->npairs * (8 + 4 * (int64_t)P) + t->nunowned * 4);
  free(panel_pairs);
  free(panel_rows);
  free(seen);
  free(pair_panel);
  return t;
}

START_TEST(test_hand) {
  /* arcs by edge id (src -> dst); the CSR by destination, positions:
   *   dst 0: 0 = 5, 1 = 1       dst 1: 2 = 1      dst 2: 3 = 7, 4 = 1
   *   dst 3: 5 = 5, 6 = 5, 7 = 9 (5 -> 3 twice)  dst 4..7: none
   *   dst 8: 8 = 0              dst 9: 9 = 2, 10 = 0 */
  static const int64_t src[] = {2, 5, 1, 1, 7, 5, 1, 5, 9, 0, 0};
  static const int64_t dst[] = {9, 0, 0, 1, 2, 3, 2, 3, 3, 8, 9};
  Graph *g = tu_graph_coo(10, 11, src, dst, "hand");
  const GraphPanels *t = check_panels(g, 2, 4);
  /* panel 0: 1 in slots 0-2, 5 in 0 and 3 then again in 3, 7 in 2, 9 in 3;
   * panel 2: 0 in slots 0 and 1, 2 in 1 */
  static const int32_t psrc[] = {1, 5, 5, 7, 9, 0, 2};
  static const int32_t pmask[] = {0x7, 0x9, 0x8, 0x4, 0x8, 0x3, 0x2};
  static const int64_t ppos[] = {1, 2, 4, 1,  0, 0, 0, 5,  6, 6, 6, 6,  3, 3, 3, 3,
                                 7, 7, 7, 7,  8, 10, 8, 8,  9, 9, 9, 9};
  ck_assert_int_eq(t->npairs, 7);
  ck_assert_mem_eq(t->src, psrc, sizeof psrc);
  ck_assert_mem_eq(t->mask, pmask, sizeof pmask);
  ck_assert_mem_eq(t->pos, ppos, sizeof ppos);
  /* panel 0 cut in three rows by G 2, panel 1 one empty row, panel 2 one */
  static const int32_t rdst[] = {0, 0, 0, 4, 8};
  static const int64_t rfirst[] = {0, 2, 4, 5, 5}, rend[] = {2, 4, 5, 5, 7};
  static const int32_t rown[] = {0, 0, 0, 1, 1};
  static const int32_t un[] = {0, 1, 2, 3};
  ck_assert_int_eq(t->n, 5);
  ck_assert_mem_eq(t->dst, rdst, sizeof rdst);
  ck_assert_mem_eq(t->first, rfirst, sizeof rfirst);
  ck_assert_mem_eq(t->end, rend, sizeof rend);
  ck_assert_mem_eq(t->own, rown, sizeof rown);
  ck_assert_int_eq(t->nunowned, 4);
  ck_assert_mem_eq(t->unowned, un, sizeof un);
  ck_assert_int_eq(t->bytes, 5 * 16 + 7 * 24 + 4 * 4);
  /* G 5: every panel in one row, nothing unowned; another table */
  const GraphPanels *wide = check_panels(g, 5, 4);
  ck_assert_ptr_ne(wide, t);
  ck_assert_int_eq(wide->n, 3);
  ck_assert_int_eq(wide->nunowned, 0);
  ck_assert_mem_eq(wide->src, psrc, sizeof psrc);
  ck_assert_mem_eq(wide->pos, ppos, sizeof ppos);
  ck_assert_ptr_eq(check_panels(g, 2, 4), t);
  /* P 2: panel 0 has 1 and 5, panel 1 1, 5 twice, 7 and 9, panel 4 0 and
   * 2; P 3: the last panel short of P (dst 9 alone) */
  const GraphPanels *two = check_panels(g, 1, 2);
  ck_assert_int_eq(two->npairs, 9);
  const GraphPanels *three = check_panels(g, 3, 3);
  ck_assert_int_eq(three->dst[three->n - 1], 9);
  Diag d;
  ir_diag_init(&d, stderr);
  ck_assert(graph_panel_ratio(g, 4, &d) == 7.0 / 11.0);
  ck_assert(graph_panel_ratio(g, 2, &d) == 9.0 / 11.0);
  ck_assert_int_eq(d.nerrors, 0);
  ir_diag_free(&d);
  graph_free(g);
}
END_TEST

START_TEST(test_generated) {
  static const char *specs[] = {"rmat:10:8", "rmat:12:16:7", "grid:23x17"};
  static const int Ps[] = {2, 3, 4, 5, 8}, Gs[] = {1, 3, 32, 1 << 20};
  for (int i = 0; i < 3; i++) {
    Diag d;
    ir_diag_init(&d, stderr);
    Graph *g = graph_generate(specs[i], &d);
    ck_assert_msg(g != NULL, "%s", d.buf);
    for (int pi = 0; pi < 5; pi++) {
      for (int gi = 0; gi < 4; gi++) check_panels(g, Gs[gi], Ps[pi]);
      const GraphPanels *t = graph_panels(g, 1 << 20, Ps[pi], &d);
      double ratio = graph_panel_ratio(g, Ps[pi], &d);
      ck_assert(ratio == (double)t->npairs / (double)g->ne);
      ck_assert(ratio > 0 && ratio <= 1);
    }
    /* a grid's neighbouring rows share sources: fewer pairs than edges */
    if (i == 2) ck_assert(graph_panel_ratio(g, 4, &d) < 0.95);
    ck_assert_int_eq(d.nerrors, 0);
    ir_diag_free(&d);
    graph_free(g);
  }
}
END_TEST

START_TEST(test_multigraph) {
  /* many repeated arcs from few sources, in no order */
  enum { NV = 37, NE = 600 };
  int64_t src[NE], dst[NE];
  uint64_t s = 12345;
  for (int e = 0; e < NE; e++) {
    src[e] = (int64_t)(tu_lcg(&s) % 9);
    dst[e] = (int64_t)(tu_lcg(&s) % (NV - 5)); /* the last panels empty */
  }
  Graph *g = tu_graph_coo(NV, NE, src, dst, "multi");
  for (int P = 2; P <= 8; P++)
    for (int G = 1; G <= 12; G += 5) {
      const GraphPanels *t = check_panels(g, G, P);
      /* pairs: per panel and source, the most arcs to one destination */
      int64_t want = 0;
      for (int32_t v0 = 0; v0 < NV; v0 += P)
        for (int u = 0; u < 9; u++) {
          int64_t most = 0;
          for (int32_t v = v0; v < v0 + P && v < NV; v++) {
            int64_t c = 0;
            for (int e = 0; e < NE; e++) c += src[e] == u && dst[e] == v;
            if (c > most) most = c;
          }
          want += most;
        }
      ck_assert_int_eq(t->npairs, want);
    }
  graph_free(g);
}
END_TEST

START_TEST(test_empty) {
  Graph *g = tu_graph_coo(5, 0, NULL, NULL, "no edges");
  const GraphPanels *t = check_panels(g, 4, 2);
  ck_assert_int_eq(t->npairs, 0);
  ck_assert_int_eq(t->n, 3);
  ck_assert_int_eq(t->nunowned, 0);
  Diag d;
  ir_diag_init(&d, stderr);
  ck_assert(graph_panel_ratio(g, 3, &d) == 1.0);
  graph_free(g);
  g = tu_graph_coo(0, 0, NULL, NULL, "nothing");
  t = check_panels(g, 1, 8);
  ck_assert_int_eq(t->n, 0);
  ck_assert_int_eq(t->npairs, 0);
  ck_assert(graph_panel_ratio(g, 8, &d) == 1.0);
  ck_assert_int_eq(d.nerrors, 0);
  ir_diag_free(&d);
  graph_free(g);
}
END_TEST

/* Fails unless graph_panels(g, G, P) is refused with a message holding
 * `want`, leaving no table behind. */
static void refused(Graph *g, int G, int P, const char *want) {
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_ptr_null(graph_panels(g, G, P, &d));
  ck_assert_int_eq(d.nerrors, 1);
  ck_assert_msg(strstr(d.buf, want) != NULL, "G %d P %d: %s", G, P, d.buf);
  ir_diag_free(&d);
  ck_assert_ptr_null(g->panels);
}

START_TEST(test_refused) {
  static const int64_t src[] = {0, 1}, dst[] = {1, 0};
  Graph *g = tu_graph_coo(2, 2, src, dst, "pair");
  refused(g, 4, 1, "panels of 1 destinations");
  refused(g, 4, 9, "panels of 9 destinations");
  refused(g, 4, 0, "2 to 8");
  refused(g, 0, 4, "rows of 0 pairs");
  refused(g, 1048577, 4, "rows of 1048577 pairs");
  refused(g, -3, 4, "1 to 1048576");
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert(graph_panel_ratio(g, 9, &d) == -1);
  ck_assert(strstr(d.buf, "panels of 9") != NULL);
  ir_diag_free(&d);
  /* a graph built on the device has no host CSR (the flag alone is enough:
   * it is checked before anything is read) */
  g->device_only = true;
  refused(g, 4, 4, "on the host");
  g->device_only = false;
  check_panels(g, 1048576, 8);
  graph_free(g);
}
END_TEST

int main(void) {
  Suite *s = suite_create("panels");
  TCase *tc = tcase_create("panels");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_hand);
  tcase_add_test(tc, test_generated);
  tcase_add_test(tc, test_multigraph);
  tcase_add_test(tc, test_empty);
  tcase_add_test(tc, test_refused);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
