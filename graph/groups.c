/* graph/groups.c: GNNAdvisor's neighbour-group table of a graph.
 *
 * `group(e, G)` on the in-edge loop of a vertex loop (passes/group.c) turns
 * the pair into `for g in groups(G) { for e in group_edges(g) }`: one
 * iteration per row of a table listing, for every destination v, its
 * in-edges (the CSR by destination) cut into ceil(deg(v) / G) runs of at
 * most G edges, none crossing a destination. A row holds the destination,
 * the first CSR position and the end (exclusive); edge ids are
 * in_eid[first..end), in the order in_edges(v) visits them.
 *
 * Rows come destination by destination, each destination's rows together
 * and in CSR order. Which destination comes first is the table's order
 * (GraphGroups.order): where GNNAdvisor's AES rule says the graph's
 * numbering scatters its neighbourhoods (graph_aes_rule: ogbn-arxiv,
 * musae-facebook), the destinations go in the community order that
 * `--reorder community` would renumber by (graph/reorder.c), else in
 * destination order; GOP_GROUP_ORDER=dst or =community forces one (auto,
 * the rule, is the default). Nothing is renumbered: inputs and outputs
 * keep the user's numbering, only the order in which warps take the groups
 * changes, so that warps running at the same time gather overlapping
 * source rows and L2 keeps them. On the H100 (bench/NOTES.md, 2026-11-26,
 * run 10) the community order made ogbn-arxiv's aggregation at F = 128-256
 * 1.12-1.19x faster and musae-facebook's 1.12-1.17x; on cnr-2000, whose
 * numbering is already local (the rule says no), it was 0.93x. The order
 * costs what the community order costs (0.3 s on ogbn-arxiv, once per
 * graph); where it cannot be computed (more than 2^30 edges, no memory)
 * the table keeps destination order.
 *
 * That order is changed again when the loop is interleaved
 * (passes/interleave.c, MGG): then each destination, and so each of its
 * rows, falls into one of K classes by in-degree, and the rows are taken
 * `distance` at a time from each class in turn (round robin, skipping the
 * classes that ran out), keeping destination order within a class, so
 * that consecutive warps mix the classes. Classes are numbered heaviest
 * first. K = 2 is MGG's split: heavy destinations (in-degree above a
 * threshold: the schedule's, else the mean degree |E| / |V| rounded up)
 * and light ones, and the light class leads, as it always has. K from 3 to
 * 8 takes quantiles of the rows' destination degrees: a degree with `above`
 * rows of heavier destinations goes to class K * above / n (n rows), so
 * each class holds about n / K rows and a degree is never split; a degree
 * holding many rows can leave the classes after it empty. There the
 * heaviest class leads, so the longest groups start first. The permutation
 * is a pure function of the graph and the parameters: runs are
 * reproducible.
 *
 * For the second stage of a deterministic segmented reduction
 * (passes/segment.c: `for r in group_rows(v, G)`), the table also lists
 * each destination's rows in table order: vrow[vptr[v] .. vptr[v + 1]).
 * Without interleaving they are consecutive; with it they are not, but a
 * destination belongs to one class and a class keeps its order, so its
 * rows still come in CSR order. Those two arrays go to the device only
 * when a kernel reads them (rt_devgraph_group_rows).
 *
 * A table is built once per graph and (G, distance, classes, threshold)
 * and kept on the host graph (Graph.groups) until graph_free; the
 * interpreter and the GPU runtime (runtime/exec.c, which uploads it once
 * as well) share it. A graph built on the device has no host CSR: its
 * tables are built on the device, to this file's rules and bit for bit
 * equal to what it would build in destination order (gop.graph's
 * build_groups, which runtime/devgraph.c asks for through the graph's
 * builder).
 * The cache is filled through a const graph pointer: it is a memo of a pure
 * function of the graph, and a graph is used by one thread at a time.
 *
 * CSR positions and row numbers (first, end, vptr, vrow, n) are int64, as
 * the CSR's offsets are, so a graph past 2^31 edges has tables too; the
 * device takes them in the graph's index width (docs/index64.md).
 */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

static void groups_free(GraphGroups *t) {
  free(t->dst);
  free(t->first);
  free(t->end);
  free(t->vptr);
  free(t->unowned);
  free(t->vrow);
  free(t);
}

void graph_groups_free(Graph *g) {
  GraphGroups *t = g->groups;
  while (t) {
    GraphGroups *next = t->next;
    groups_free(t);
    t = next;
  }
  g->groups = NULL;
  free(g->community);
  g->community = NULL;
  g->community_tried = false;
}

int32_t graph_groups_threshold(const Graph *g, int thr) {
  if (thr > 0) return thr;
  if (g->nv == 0) return 1;
  int64_t t = ((int64_t)g->ne + g->nv - 1) / g->nv;
  return t < 1 ? 1 : (int32_t)t;
}

int graph_groups_class(const GraphGroups *t, int64_t deg) {
  for (int c = 0; c < t->ncls - 1; c++)
    if (deg >= t->cls_min[c]) return c;
  return t->ncls - 1;
}

/* Appends the rows of vertex v to t (row `*k` onwards). */
static void add_rows(GraphGroups *t, const Graph *g, int32_t v, int64_t *k) {
  for (int64_t p = g->in_ptr[v]; p < g->in_ptr[v + 1]; p += t->G) {
    int64_t end = g->in_ptr[v + 1] - p > t->G ? p + t->G : g->in_ptr[v + 1];
    t->dst[*k] = v;
    t->first[*k] = p;
    t->end[*k] = end;
    (*k)++;
  }
}

/* The order asked of a non-interleaved table: GRAPH_GROUPS_COMMUNITY where
 * GOP_GROUP_ORDER asks for it, GRAPH_GROUPS_AUTO where it is unset or
 * `auto` (add_ordered decides), else destination order; -1 after
 * reporting a value of GOP_GROUP_ORDER it does not know. */
static int table_order(Diag *d) {
  const char *env = getenv("GOP_GROUP_ORDER");
  if (!env || !*env || strcmp(env, "auto") == 0) return GRAPH_GROUPS_AUTO;
  if (strcmp(env, "dst") == 0) return GRAPH_GROUPS_DST;
  if (strcmp(env, "community") == 0) return GRAPH_GROUPS_COMMUNITY;
  ir_error(d, (Loc){0}, "GOP_GROUP_ORDER=%s: the order of neighbour groups is auto "
           "(GNNAdvisor's AES rule), dst or community", env);
  return -1;
}

/* The community order of g, computed once per graph (a memo on it, like
 * the tables); NULL where it cannot be had (no vertices, more than 2^30
 * edges, no memory: a failure only costs the order, not the table). */
static const int32_t *community_of(const Graph *g) {
  Graph *mg = (Graph *)g; /* the memo: see the top of the file */
  if (g->community || g->community_tried || g->nv == 0) return g->community;
  mg->community_tried = true;
  int32_t *seq = malloc((size_t)g->nv * sizeof *seq);
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  if (seq && graph_community_order(g, seq, &quiet) == 0) mg->community = seq;
  else free(seq);
  ir_diag_free(&quiet);
  return g->community;
}

/* The rows of a non-interleaved table: every destination's, in the
 * community order when `order` asks for it, or is GRAPH_GROUPS_AUTO and
 * GNNAdvisor's AES rule holds and walking the destinations in that order
 * gathers more from recently gathered source blocks than destination order
 * does (graph_block_locality_in: what `--reorder auto` asks of a
 * renumbering); else in destination order, also when the community order
 * cannot be had. Returns the order used. */
static int add_ordered(GraphGroups *t, const Graph *g, int order) {
  int64_t k = 0;
  bool want = order == GRAPH_GROUPS_COMMUNITY || (order == GRAPH_GROUPS_AUTO && graph_aes_rule(g));
  const int32_t *seq = want ? community_of(g) : NULL;
  bool ok = seq != NULL;
  if (ok && order == GRAPH_GROUPS_AUTO)
    ok = graph_block_locality_in(g, seq) > g->stats.locality;
  if (ok) {
    order = GRAPH_GROUPS_COMMUNITY;
    for (int32_t i = 0; i < g->nv; i++) add_rows(t, g, seq[i], &k);
  } else {
    order = GRAPH_GROUPS_DST;
    for (int32_t v = 0; v < g->nv; v++) add_rows(t, g, v, &k);
  }
  return order;
}

/* The classes of an interleaved table: t->cls_min, then t->cls_rows. Two
 * classes split at the threshold t->thr; more take quantiles of the rows'
 * destination degrees (see the top of the file). -1 when out of memory. */
static int set_classes(GraphGroups *t, const Graph *g) {
  int K = t->ncls;
  if (K == 2) {
    t->cls_min[0] = t->thr + 1; /* heavy: in-degree above the threshold */
    t->cls_min[1] = 0;
  } else {
    /* rows by in-degree, then from the heaviest degree down: a degree with
     * `above` rows of heavier destinations goes to class K * above / n,
     * the least degree seen last */
    /* a degree past 2^31 - 1 (one vertex of more in-edges) is refused:
     * class bounds are int32 */
    int64_t maxdeg = 0;
    for (int32_t v = 0; v < g->nv; v++)
      if (g->in_ptr[v + 1] - g->in_ptr[v] > maxdeg) maxdeg = g->in_ptr[v + 1] - g->in_ptr[v];
    if (maxdeg > INT32_MAX) return -1;
    int64_t *rows = calloc((size_t)maxdeg + 1, sizeof *rows);
    if (!rows) return -1;
    for (int32_t v = 0; v < g->nv; v++) {
      int64_t deg = g->in_ptr[v + 1] - g->in_ptr[v];
      rows[deg] += (deg + t->G - 1) / t->G;
    }
    for (int c = 0; c < K; c++) t->cls_min[c] = -1;
    int64_t above = 0;
    for (int32_t deg = (int32_t)maxdeg; deg >= 1; deg--) {
      if (!rows[deg]) continue;
      t->cls_min[(int64_t)((__int128)above * K / t->n)] = deg;
      above += rows[deg];
    }
    free(rows);
    /* an empty class repeats the least degree of the one before, so that
     * graph_groups_class never picks it (none at all: no rows to place) */
    for (int c = 0; c < K; c++)
      if (t->cls_min[c] < 0) t->cls_min[c] = c ? t->cls_min[c - 1] : INT32_MAX;
  }
  for (int32_t v = 0; v < g->nv; v++) {
    int64_t deg = g->in_ptr[v + 1] - g->in_ptr[v];
    t->cls_rows[graph_groups_class(t, deg)] += (deg + t->G - 1) / t->G;
  }
  return 0;
}

/* The rows of an interleaved table: `ilv` rows of one class, then of the
 * next that has rows left, and so on; one cursor per class walks the
 * vertices in order. */
static void add_interleaved(GraphGroups *t, const Graph *g) {
  int K = t->ncls;
  int32_t cur[IR_MAX_CLASSES] = {0};
  int64_t pos[IR_MAX_CLASSES] = {0}; /* next CSR position inside cur[c] */
  int64_t left[IR_MAX_CLASSES];
  for (int c = 0; c < K; c++) left[c] = t->cls_rows[c];
  int c = K == 2 ? 1 : 0; /* see the top of the file: who leads */
  for (int64_t k = 0; k < t->n; c = (c + 1) % K) {
    while (left[c] == 0) c = (c + 1) % K; /* rows remain: some class has them */
    for (int64_t r = 0; r < t->ilv && left[c] > 0; r++) {
      /* the next vertex of class c with rows left */
      for (;;) {
        int32_t v = cur[c];
        int64_t deg = g->in_ptr[v + 1] - g->in_ptr[v];
        if (pos[c] < deg && graph_groups_class(t, deg) == c) break;
        cur[c]++;
        pos[c] = 0;
      }
      int32_t v = cur[c];
      int64_t p = g->in_ptr[v] + pos[c];
      int64_t end = g->in_ptr[v + 1] - p > t->G ? p + t->G : g->in_ptr[v + 1];
      t->dst[k] = v;
      t->first[k] = p;
      t->end[k] = end;
      k++;
      pos[c] += end - p;
      left[c]--;
    }
  }
}

bool graph_groups_valid(int G, int ilv, int ncls, int thr, Diag *d) {
  /* passes/interleave.c refuses what the table does not know */
  if (G < 1 || ilv < 0 || thr < 0 ||
      (ilv ? ncls < 2 || ncls > IR_MAX_CLASSES || (thr && ncls != 2)
           : ncls != 0 || thr != 0)) {
    ir_error(d, (Loc){0}, "neighbour groups of size %d, interleaving distance "
             "%d, %d classes, threshold %d: sizes must be positive, and an "
             "interleaved table has 2 to %d classes (a threshold for 2 only)",
             G, ilv, ncls, thr, IR_MAX_CLASSES);
    return false;
  }
  return true;
}

const GraphGroups *graph_groups(const Graph *g, int G, int ilv, int ncls,
                                int thr, Diag *d) {
  if (!graph_groups_valid(G, ilv, ncls, thr, d)) return NULL;
  if (g->device_only) {
    /* its tables are built on the device (runtime/devgraph.c asks the
     * graph's builder); the host has no CSR to build one from */
    ir_error(d, (Loc){0}, "neighbour groups of size %d: %s was built on the device and "
             "has no host CSR to build a group table from: its tables are built on the "
             "device (rt_devgraph_groups), which needs a GPU", G,
             g->name ? g->name : "the graph");
    return NULL;
  }
  int32_t t_res = ilv && ncls == 2 ? graph_groups_threshold(g, thr) : 0;
  int order = ilv ? GRAPH_GROUPS_DST : table_order(d);
  if (order < 0) return NULL;
  for (const GraphGroups *t = g->groups; t; t = t->next)
    if (t->G == G && t->ilv == ilv && t->ncls == ncls && t->thr == t_res &&
        t->asked == order)
      return t;

  int64_t n = 0;
  for (int32_t v = 0; v < g->nv; v++) {
    int64_t deg = g->in_ptr[v + 1] - g->in_ptr[v];
    n += (deg + G - 1) / G;
  }
  GraphGroups *t = calloc(1, sizeof *t);
  size_t cnt = n > 0 ? (size_t)n : 1;
  if (t) {
    t->G = G;
    t->ilv = ilv;
    t->ncls = ncls;
    t->thr = t_res;
    t->n = n; /* at most |E| rows */
    t->dst = malloc(cnt * sizeof(int32_t));
    t->first = malloc(cnt * sizeof(int64_t));
    t->end = malloc(cnt * sizeof(int64_t));
    t->vptr = calloc((size_t)g->nv + 1, sizeof(int64_t));
    t->vrow = malloc(cnt * sizeof(int64_t));
    t->unowned = calloc(g->nv > 0 ? (size_t)g->nv : 1, sizeof(int32_t));
  }
  if (!t || !t->dst || !t->first || !t->end || !t->vptr || !t->vrow || !t->unowned ||
      (ilv && set_classes(t, g) < 0)) {
    if (t) groups_free(t);
    ir_error(d, (Loc){0}, "out of memory building the neighbour-group table "
             "(G %d) of %s", G, g->name ? g->name : "the graph");
    return NULL;
  }
  t->seg_bytes = ((int64_t)g->nv + 1 + (int64_t)cnt) * (int64_t)sizeof(int32_t);
  t->asked = order;
  if (!ilv) {
    t->order = add_ordered(t, g, order);
  } else {
    t->order = GRAPH_GROUPS_DST;
    add_interleaved(t, g);
  }
  /* each destination's rows in table order: a counting sort by dst,
   * stable in the row index */
  for (int64_t r = 0; r < n; r++) t->vptr[t->dst[r] + 1]++;
  for (int32_t v = 0; v < g->nv; v++) t->vptr[v + 1] += t->vptr[v];
  for (int64_t r = 0; r < n; r++) {
    /* vptr[v] walks up to vptr[v + 1] as the rows are placed ... */
    t->vrow[t->vptr[t->dst[r]]++] = r;
  }
  /* ... so afterwards vptr[v] holds the old vptr[v + 1]: shift back */
  for (int32_t v = g->nv; v > 0; v--) t->vptr[v] = t->vptr[v - 1];
  t->vptr[0] = 0;
  for (int32_t v = 0; v < g->nv; v++) {
    int64_t deg = g->in_ptr[v + 1] - g->in_ptr[v];
    if (deg == 0 || deg > G) t->unowned[t->nunowned++] = v;
  }
  /* what the device copy takes: the three arrays and the list (rt_devgraph_groups) */
  t->bytes = ((int64_t)cnt * 3 + (t->nunowned > 0 ? t->nunowned : 1)) * (int64_t)sizeof(int32_t);
  Graph *mg = (Graph *)g; /* the memo: see the top of the file */
  t->next = mg->groups;
  mg->groups = t;
  return t;
}
