/* graph/graph.c: building host graphs from arcs, and their statistics.
 *
 * Every way of obtaining a graph (files, generators, the C API) ends here:
 * graph_from_coo checks the arcs, copies them, and derives the two
 * adjacency formats that schedules iterate over, CSR by destination and CSC
 * by source, with counting sorts so that loading stays linear in |V| + |E|.
 * Both keep edge ids in input order within a vertex (the sort is stable),
 * which makes edge tensors and per-vertex reductions deterministic. Arrays
 * are plain malloc: a graph outlives the arenas of the compilations that
 * use it, and graph_free releases all of it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

/* malloc(0) may return NULL, which would read as a failure for empty graphs. */
static int32_t *alloc_i32(int64_t n) {
  return malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
}
static int64_t *alloc_i64(int64_t n) {
  return malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
}

void graph_free(Graph *g) {
  if (!g) return;
  /* what was derived from it outside graph/ (its device copy) must not
   * outlive it */
  if (g->on_free) g->on_free(g);
  graph_groups_free(g);
  graph_perm_free(g->perm);
  free(g->name);
  free(g->src);
  free(g->dst);
  free(g->in_ptr);
  free(g->in_eid);
  free(g->in_src);
  free(g->out_ptr);
  free(g->out_eid);
  free(g->out_dst);
  free(g);
}

bool graph_size_ok(int64_t nv, int64_t ne, int64_t extra, Diag *d, Loc loc) {
  /* the graph's own arrays: four int32 arrays of |E| (COO, CSR sources,
   * CSC destinations), two int64 arrays of |E| (edge ids) and two of
   * |V| + 1 (offsets) */
  int64_t bytes = nv < 0 || ne < 0 || nv > INT32_MAX || ne > GRAPH_MAX_EDGES
                      ? -1
                      : 32 * ne + 16 * (nv + 1) + (extra > 0 ? extra : 0);
  char what[160];
  snprintf(what, sizeof what, "a graph of %" PRId64 " vertices and %" PRId64 " edges needs",
           nv, ne);
  return ir_limit_check(IR_LIMIT_HOST_BYTES, bytes, d, loc, what);
}

/* Refuses sizes that the indices cannot hold (int32 vertex ids), and arcs
 * that point outside 0..nv-1. */
static bool check_coo(int64_t nv, int64_t ne, const int64_t *src,
                      const int64_t *dst, Diag *d, Loc loc) {
  if (nv < 0 || ne < 0) {
    ir_error(d, loc, "negative graph size (|V| %" PRId64 ", |E| %" PRId64 ")",
             nv, ne);
    return false;
  }
  if (nv > INT32_MAX) {
    ir_error(d, loc,
             "%" PRId64 " vertices: vertex ids are 32-bit, graphs with more "
             "than 2^31-1 vertices are not supported (docs/index64.md)", nv);
    return false;
  }
  if (ne > GRAPH_MAX_EDGES) {
    ir_error(d, loc, "%" PRId64 " edges: more than the %" PRId64 " a graph may hold",
             ne, (int64_t)GRAPH_MAX_EDGES);
    return false;
  }
  if (!graph_size_ok(nv, ne, 0, d, loc)) return false;
  for (int64_t e = 0; e < ne; e++) {
    if (src[e] < 0 || src[e] >= nv || dst[e] < 0 || dst[e] >= nv) {
      ir_error(d, loc,
               "edge %" PRId64 " (%" PRId64 " -> %" PRId64 ") is out of "
               "range: vertices are 0..%" PRId64, e, src[e], dst[e], nv - 1);
      return false;
    }
  }
  return true;
}

/* Groups the arcs by key[e] (their destination for CSR, their source for
 * CSC): ptr[v]..ptr[v+1] lists the arcs of v in edge-id order, with their
 * ids in eid and their other endpoint in nbr. */
static void build_index(int32_t nv, int64_t ne, const int32_t *key,
                        const int32_t *other, int64_t *ptr, int64_t *eid,
                        int32_t *nbr) {
  memset(ptr, 0, sizeof(int64_t) * ((size_t)nv + 1));
  for (int64_t e = 0; e < ne; e++) ptr[key[e] + 1]++;
  for (int32_t v = 0; v < nv; v++) ptr[v + 1] += ptr[v];
  /* ptr[v] serves as v's insertion cursor, which leaves it pointing at the
   * start of v+1; shifting by one restores the starts without a second
   * array. */
  for (int64_t e = 0; e < ne; e++) {
    int64_t k = ptr[key[e]]++;
    eid[k] = e;
    nbr[k] = other[e];
  }
  memmove(ptr + 1, ptr, sizeof(int64_t) * (size_t)nv);
  ptr[0] = 0;
}

void graph_perm_free(GraphPerm *p) {
  if (!p) return;
  free(p->new_of_old);
  free(p->old_of_new);
  free(p->edge_old);
  free(p);
}

double graph_block_locality_in(const Graph *g, const int32_t *seq) {
  /* Walks the in-edges destination by destination (seq[i], else i: the
   * order a vertex-parallel kernel gathers them): an edge hits when its
   * source's 32-vertex block was gathered by an edge of one of the last 32
   * destinations walked. */
  if (g->ne == 0) return 0;
  int32_t nb = (g->nv + 31) / 32;
  int32_t *last = alloc_i32(nb);
  if (!last) return -1;
  for (int32_t b = 0; b < nb; b++) last[b] = INT32_MIN;
  int64_t hits = 0;
  for (int32_t i = 0; i < g->nv; i++) {
    int32_t v = seq ? seq[i] : i;
    for (int64_t k = g->in_ptr[v]; k < g->in_ptr[v + 1]; k++) {
      int32_t b = g->in_src[k] >> 5;
      if (last[b] != INT32_MIN && i - last[b] < 32) hits++;
      last[b] = i;
    }
  }
  free(last);
  return (double)hits / g->ne;
}

double graph_block_locality(const Graph *g) { return graph_block_locality_in(g, NULL); }

void graph_compute_stats(Graph *g) {
  GraphStats *s = &g->stats;
  memset(s, 0, sizeof *s);
  if (g->nv > 0) s->deg_mean = (double)g->ne / g->nv;
  double var = 0;
  for (int32_t v = 0; v < g->nv; v++) {
    int64_t in = g->in_ptr[v + 1] - g->in_ptr[v];
    int64_t out = g->out_ptr[v + 1] - g->out_ptr[v];
    if (in > s->in_deg_max) s->in_deg_max = in;
    if (out > s->out_deg_max) s->out_deg_max = out;
    if (in == 0 && out == 0) s->isolated++;
    var += (in - s->deg_mean) * (in - s->deg_mean);
  }
  if (g->nv > 0) s->in_deg_std = sqrt(var / g->nv);
  /* Spans are below 2^31 and there may be 2^34 of them (GRAPH_MAX_EDGES):
   * summed in double, exact below 2^53. */
  double span = 0;
  for (int64_t e = 0; e < g->ne; e++) {
    int64_t diff = (int64_t)g->src[e] - g->dst[e];
    span += diff < 0 ? -diff : diff;
    if (diff == 0) s->self_loops++;
  }
  if (g->ne > 0) s->aes = span / (double)g->ne;
  s->locality = graph_block_locality(g);
}

Graph *graph_from_coo(int64_t nv, int64_t ne, const int64_t *src,
                           const int64_t *dst, const char *name, Diag *d,
                           Loc loc) {
  if (!check_coo(nv, ne, src, dst, d, loc)) return NULL;
  Graph *g = calloc(1, sizeof *g);
  if (!g) goto oom;
  g->nv = (int32_t)nv;
  g->ne = ne;
  g->name = strdup(name ? name : "<graph>");
  g->src = alloc_i32(ne);
  g->dst = alloc_i32(ne);
  g->in_ptr = alloc_i64(nv + 1);
  g->in_eid = alloc_i64(ne);
  g->in_src = alloc_i32(ne);
  g->out_ptr = alloc_i64(nv + 1);
  g->out_eid = alloc_i64(ne);
  g->out_dst = alloc_i32(ne);
  if (!g->name || !g->src || !g->dst || !g->in_ptr || !g->in_eid ||
      !g->in_src || !g->out_ptr || !g->out_eid || !g->out_dst)
    goto oom;
  for (int64_t e = 0; e < ne; e++) {
    g->src[e] = (int32_t)src[e];
    g->dst[e] = (int32_t)dst[e];
  }
  build_index(g->nv, g->ne, g->dst, g->src, g->in_ptr, g->in_eid, g->in_src);
  build_index(g->nv, g->ne, g->src, g->dst, g->out_ptr, g->out_eid,
              g->out_dst);
  g->csr_edges = true;
  for (int64_t k = 0; k < ne && g->csr_edges; k++) g->csr_edges = g->in_eid[k] == k;
  graph_compute_stats(g);
  return g;

oom:
  graph_free(g);
  ir_error(d, loc,
           "out of memory building a graph with %" PRId64 " vertices and "
           "%" PRId64 " edges", nv, ne);
  return NULL;
}

void graph_print_stats(FILE *out, const Graph *g) {
  const GraphStats *s = &g->stats;
  fprintf(out,
          "graph %s: |V| %" PRId32 ", |E| %" PRId64 ", degree mean %.2f std "
          "%.2f max in %" PRId64 " out %" PRId64 ", isolated %" PRId32
          ", self-loops %" PRId64 ", AES %.1f\n",
          g->name, g->nv, g->ne, s->deg_mean, s->in_deg_std, s->in_deg_max,
          s->out_deg_max, s->isolated, s->self_loops, s->aes);
}
