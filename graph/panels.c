/* graph/panels.c: the panel pair table of a graph.
 *
 * `panel(g, P)` on a neighbour-groups loop (passes/panel.c) makes one warp
 * sum P consecutive destinations together: it loads each source row that
 * those destinations share once per pair instead of once per edge, and
 * adds it into every destination that has the edge. On a web crawl, whose
 * neighbouring pages link to the same pages, that saves gathers: on
 * cnr-2000 the pairs are 0.65 of the edges at P = 4
 * (bench/results/2026-11-30-H200-panel-probe); where the numbering shares
 * nothing (ogbn-arxiv) they are all of them, and graph_panel_ratio tells.
 *
 * Destinations are cut into panels of P: panel p covers [p * P,
 * min((p + 1) * P, |V|)). A panel's pairs are the distinct sources of its
 * in-edges, in increasing order; pair q holds the source src[q], a mask
 * whose bit s says that destination p * P + s has an in-edge from it, and
 * for each slot s the CSR position of that edge, pos[q * P + s]. A clear
 * slot repeats the position of the pair's lowest set slot, so a kernel may
 * load every slot's edge without a branch and mask the sum. In a multigraph
 * a source that reaches one destination twice gets a second pair for the
 * second occurrence (a third for the third ...): pairs come by source, then
 * by occurrence, and the j-th occurrence in a slot is the j-th in CSR
 * order. Every CSR position is in exactly one set slot of one pair.
 *
 * A panel's pairs are then cut into rows of at most G consecutive pairs,
 * one warp's work; a panel without pairs still gets one (empty) row, so
 * that its destinations are written. A row that is its panel's only one
 * owns its outputs and stores them; the rows of a panel cut in several add
 * into theirs atomically, so those destinations (`unowned`) are zero-filled
 * first.
 *
 * Like the neighbour-group tables (groups.c), a table is built once per
 * graph and (G, P) and kept on the host graph (Graph.panels) until
 * graph_free, filled through a const graph pointer: a memo of a pure
 * function of the graph. The GPU runtime uploads it, the interpreter walks
 * it. A graph built on the device has no host CSR and is refused. CSR
 * positions and pair and row numbers are int64 as the CSR's offsets are.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

#define PANELS_MAX_P 8
#define PANELS_MAX_G (1 << 20)

static void panels_free(GraphPanels *t) {
  free(t->dst);
  free(t->first);
  free(t->end);
  free(t->own);
  free(t->src);
  free(t->mask);
  free(t->pos);
  free(t->unowned);
  free(t);
}

void graph_panels_free(Graph *g) {
  GraphPanels *t = g->panels;
  while (t) {
    GraphPanels *next = t->next;
    panels_free(t);
    t = next;
  }
  g->panels = NULL;
}

/* p resized to n elements of `size` bytes (at least one); NULL, leaving p
 * as it was, when out of memory or the size overflows. */
static void *resize(void *p, int64_t n, size_t size) {
  size_t bytes;
  if (n < 0 || __builtin_mul_overflow((size_t)(n > 0 ? n : 1), size, &bytes)) return NULL;
  return realloc(p, bytes);
}

/* Room for n pairs in t's pair arrays (fewer: gives back the rest); false
 * when out of memory, the arrays kept (each at its old or new size, and
 * freed with t either way). */
static bool pairs_room(GraphPanels *t, int64_t n) {
  int32_t *src = resize(t->src, n, sizeof *src);
  if (src) t->src = src;
  int32_t *mask = resize(t->mask, n, sizeof *mask);
  if (mask) t->mask = mask;
  int64_t *pos = resize(t->pos, n, (size_t)t->P * sizeof *pos);
  if (pos) t->pos = pos;
  return src && mask && pos;
}

/* One in-edge of a panel: its source, slot and CSR position. */
typedef struct Triple {
  int32_t src, slot;
  int64_t pos;
} Triple;

/* By source, then position: positions grow with the slot, so a source's
 * edges come slot by slot, each slot's in CSR order. */
static int triple_cmp(const void *a, const void *b) {
  const Triple *x = a, *y = b;
  if (x->src != y->src) return x->src < y->src ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Appends the pairs of the panel whose edges are e[0..k), sorted, to t
 * (pair t->npairs onwards; the arrays have room for k more). */
static void add_pairs(GraphPanels *t, const Triple *e, int64_t k) {
  int P = t->P;
  for (int64_t a = 0; a < k;) {
    int64_t b = a;
    while (b < k && e[b].src == e[a].src) b++;
    /* e[a..b): one source; its j-th edge in a slot goes to pair base + j */
    int64_t base = t->npairs, occ = 0, most = 0;
    for (int64_t i = a; i < b; i++) {
      occ = i > a && e[i].slot == e[i - 1].slot ? occ + 1 : 0;
      if (occ + 1 > most) {
        most = occ + 1;
        t->src[base + occ] = e[a].src;
        t->mask[base + occ] = 0;
      }
      t->mask[base + occ] |= 1 << e[i].slot;
      t->pos[(base + occ) * P + e[i].slot] = e[i].pos;
    }
    for (int64_t q = base; q < base + most; q++) {
      int low = __builtin_ctz((unsigned)t->mask[q]);
      for (int s = 0; s < P; s++)
        if (!(t->mask[q] >> s & 1)) t->pos[q * P + s] = t->pos[q * P + low];
    }
    t->npairs += most;
    a = b;
  }
}

/* The pairs of every panel: t->src, mask, pos and npairs, and where each
 * panel's pairs start, ptr[p] (npanels + 1 entries). -1 when out of
 * memory. */
static int build_pairs(GraphPanels *t, const Graph *g, int64_t npanels, int64_t *ptr) {
  int P = t->P;
  int64_t most = 0; /* the most in-edges of a panel */
  for (int64_t p = 0; p < npanels; p++) {
    int64_t v1 = (p + 1) * P < g->nv ? (p + 1) * P : g->nv;
    int64_t k = g->in_ptr[v1] - g->in_ptr[p * P];
    if (k > most) most = k;
  }
  Triple *e = resize(NULL, most, sizeof *e);
  if (!e) return -1;
  int64_t cap = 0;
  ptr[0] = 0;
  for (int64_t p = 0; p < npanels; p++) {
    int64_t v0 = p * P, v1 = v0 + P < g->nv ? v0 + P : g->nv;
    int64_t k = 0;
    for (int64_t v = v0; v < v1; v++)
      for (int64_t i = g->in_ptr[v]; i < g->in_ptr[v + 1]; i++)
        e[k++] = (Triple){g->in_src[i], (int32_t)(v - v0), i};
    /* at most one pair per edge: make room for k more */
    if (t->npairs + k > cap) {
      int64_t want = cap * 2 > t->npairs + k ? cap * 2 : t->npairs + k;
      if (want > g->ne) want = g->ne;
      if (!pairs_room(t, want)) {
        free(e);
        return -1;
      }
      cap = want;
    }
    qsort(e, (size_t)k, sizeof *e, triple_cmp);
    add_pairs(t, e, k);
    ptr[p + 1] = t->npairs;
  }
  free(e);
  /* give back what the estimate left over (keeping it if that fails) */
  pairs_room(t, t->npairs);
  return 0;
}

/* The rows of every panel (their count first), and the destinations of the
 * panels cut in several. -1 when out of memory. */
static int build_rows(GraphPanels *t, const Graph *g, int64_t npanels, const int64_t *ptr) {
  int64_t G = t->G, P = t->P, n = 0, nun = 0;
  for (int64_t p = 0; p < npanels; p++) {
    int64_t rows = (ptr[p + 1] - ptr[p] + G - 1) / G;
    n += rows > 1 ? rows : 1;
    if (rows > 1) nun += (p + 1) * P < g->nv ? P : g->nv - p * P;
  }
  t->dst = resize(NULL, n, sizeof *t->dst);
  t->first = resize(NULL, n, sizeof *t->first);
  t->end = resize(NULL, n, sizeof *t->end);
  t->own = resize(NULL, n, sizeof *t->own);
  t->unowned = resize(NULL, nun, sizeof *t->unowned);
  if (!t->dst || !t->first || !t->end || !t->own || !t->unowned) return -1;
  for (int64_t p = 0; p < npanels; p++) {
    bool alone = ptr[p + 1] - ptr[p] <= G;
    int64_t q = ptr[p];
    do {
      t->dst[t->n] = (int32_t)(p * P);
      t->first[t->n] = q;
      q = ptr[p + 1] - q > G ? q + G : ptr[p + 1];
      t->end[t->n] = q;
      t->own[t->n++] = alone;
    } while (q < ptr[p + 1]);
    for (int64_t v = p * P; !alone && v < (p + 1) * P && v < g->nv; v++)
      t->unowned[t->nunowned++] = (int32_t)v;
  }
  return 0;
}

const GraphPanels *graph_panels(const Graph *g, int G, int P, Diag *d) {
  if (P < 2 || P > PANELS_MAX_P) {
    ir_error(d, (Loc){0}, "panels of %d destinations: a panel holds 2 to %d "
             "destinations (a pair's mask is a byte)", P, PANELS_MAX_P);
    return NULL;
  }
  if (G < 1 || G > PANELS_MAX_G) {
    ir_error(d, (Loc){0}, "panel rows of %d pairs: a row holds 1 to %d pairs", G,
             PANELS_MAX_G);
    return NULL;
  }
  if (g->device_only) {
    ir_error(d, (Loc){0}, "panels of %d destinations: %s was built on the device and "
             "has no host CSR; panels need a graph with its arrays on the host", P,
             g->name ? g->name : "the graph");
    return NULL;
  }
  for (const GraphPanels *t = g->panels; t; t = t->next)
    if (t->G == G && t->P == P) return t;

  int64_t npanels = ((int64_t)g->nv + P - 1) / P;
  GraphPanels *t = calloc(1, sizeof *t);
  int64_t *ptr = resize(NULL, npanels + 1, sizeof *ptr);
  bool ok = t && ptr;
  if (ok) {
    t->G = G;
    t->P = P;
    ok = build_pairs(t, g, npanels, ptr) == 0 && build_rows(t, g, npanels, ptr) == 0;
  }
  free(ptr);
  if (!ok) {
    if (t) panels_free(t);
    ir_error(d, (Loc){0}, "out of memory building the panel table (G %d, P %d) of %s",
             G, P, g->name ? g->name : "the graph");
    return NULL;
  }
  /* what the device copy takes at 32-bit indices: dst, first, end and own
   * by row, src, mask and P positions by pair, and the list */
  t->bytes = t->n * 4 * 4 + t->npairs * (4 + 4 + 4 * (int64_t)P) +
             (int64_t)t->nunowned * 4;
  t->rows = (GraphGroups){.G = G, .n = t->n, .dst = t->dst, .first = t->first,
                          .end = t->end, .bytes = t->bytes, .unowned = t->unowned,
                          .nunowned = t->nunowned};
  Graph *mg = (Graph *)g; /* the memo: see the top of the file */
  t->next = mg->panels;
  mg->panels = t;
  return t;
}

double graph_panel_ratio(const Graph *g, int P, Diag *d) {
  const GraphPanels *t = graph_panels(g, PANELS_MAX_G, P, d);
  if (!t) return -1;
  return g->ne > 0 ? (double)t->npairs / (double)g->ne : 1.0;
}
