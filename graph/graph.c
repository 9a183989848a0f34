/* graph/graph.c: building host graphs from arcs, and their statistics.
 *
 * Every way of obtaining a graph (files, generators, the C API) ends here:
 * graph_from_coo checks the arcs, copies them, and derives the two
 * adjacency formats that schedules iterate over, CSR by destination and CSC
 * by source, with counting sorts so that loading stays linear in |V| + |E|.
 * Both keep edge ids in input order within a vertex (the sort is stable),
 * which makes edge tensors and per-vertex reductions deterministic. Arrays
 * are plain malloc (or a .gopg file's memory map, graph/gopg.c): a graph
 * outlives the arenas of the compilations that use it, and graph_free
 * releases all of it.
 *
 * Every pass over the edges runs on all cores (graph/par.c) and gives what
 * one thread gives, bit for bit: the counting sort counts each part's keys
 * apart and places each part's arcs in its own precomputed slots; sums are
 * exact integers over parts fixed by |E|, not by the thread count.
 */
#include <inttypes.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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
  graph_free(g->transposed);
  graph_groups_free(g);
  graph_panels_free(g);
  graph_perm_free(g->perm);
  free(g->name);
  if (g->map) { /* the arrays are the file's (gopg.c) */
    munmap(g->map, g->map_bytes);
    free(g);
    return;
  }
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

/* Refuses sizes that the indices cannot hold (int32 vertex ids) or the
 * host's memory; the arcs themselves are checked while they are copied. */
static bool check_sizes(int64_t nv, int64_t ne, Diag *d, Loc loc) {
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
  return graph_size_ok(nv, ne, 0, d, loc);
}

/* ---- passes over the edges, in parallel ---- */

/* Edges a part takes at least: below that, threads cost more than they
 * save. */
#define MIN_PART ((int64_t)1 << 16)

static int64_t part_lo(int64_t n, int p, int np) { return (int64_t)((__int128)n * p / np); }

typedef struct Narrow {
  int64_t nv, ne;
  const int64_t *src, *dst;
  int32_t *src32, *dst32;
  int64_t *bad; /* by part: the first arc out of range, or ne */
} Narrow;

static void narrow_part(void *arg, int p, int np) {
  Narrow *w = arg;
  int64_t lo = part_lo(w->ne, p, np), hi = part_lo(w->ne, p + 1, np);
  w->bad[p] = w->ne;
  for (int64_t e = lo; e < hi; e++) {
    int64_t s = w->src[e], t = w->dst[e];
    if (s < 0 || s >= w->nv || t < 0 || t >= w->nv) {
      w->bad[p] = e;
      return;
    }
    w->src32[e] = (int32_t)s;
    w->dst32[e] = (int32_t)t;
  }
}

/* Copies the arcs into int32 arrays; false after reporting the first one
 * out of 0..nv-1. */
static bool narrow_arcs(int64_t nv, int64_t ne, const int64_t *src, const int64_t *dst,
                        int32_t *src32, int32_t *dst32, Diag *d, Loc loc) {
  int np = graph_par_parts(ne, MIN_PART);
  int64_t bad[GRAPH_MAX_THREADS];
  Narrow w = {nv, ne, src, dst, src32, dst32, bad};
  graph_parallel(np, narrow_part, &w);
  for (int p = 0; p < np; p++) {
    if (bad[p] == ne) continue;
    int64_t e = bad[p];
    ir_error(d, loc,
             "edge %" PRId64 " (%" PRId64 " -> %" PRId64 ") is out of "
             "range: vertices are 0..%" PRId64, e, src[e], dst[e], nv - 1);
    return false;
  }
  return true;
}

/* Groups the arcs by key[e] (their destination for CSR, their source for
 * CSC): ptr[v]..ptr[v+1] lists the arcs of v in edge-id order, with their
 * ids in eid and their other endpoint in nbr. A counting sort over parts of
 * the edges: part p counts its keys into cnt[p], the counts become each
 * part's first slot for each key
 * (key-major, then part: the serial order), and part p places its arcs
 * there. Keys already in order (arcs sorted by source, as every generator
 * writes them) skip the sort: the ids are the positions. */
typedef struct Index {
  int32_t nv;
  int64_t ne;
  const int32_t *key, *other;
  int64_t *ptr, *eid;
  int32_t *nbr;
  int64_t **cnt;   /* by part: nv counters, then cursors */
  int64_t *sums;   /* by part: a partial sum */
  int np;
  bool *unsorted;  /* by part */
} Index;

static void sorted_part(void *arg, int p, int np) {
  Index *x = arg;
  int64_t lo = part_lo(x->ne, p, np), hi = part_lo(x->ne, p + 1, np);
  x->unsorted[p] = false;
  for (int64_t e = lo > 0 ? lo : 1; e < hi; e++)
    if (x->key[e] < x->key[e - 1]) {
      x->unsorted[p] = true;
      return;
    }
}

static void identity_part(void *arg, int p, int np) {
  Index *x = arg;
  int64_t lo = part_lo(x->ne, p, np), hi = part_lo(x->ne, p + 1, np);
  for (int64_t e = lo; e < hi; e++) {
    x->eid[e] = e;
    x->nbr[e] = x->other[e];
    /* the last arc of its key closes the key's range, and every key up to
     * the next one's is empty: each ptr entry is written by one arc */
    int64_t k = x->key[e], next = e + 1 < x->ne ? x->key[e + 1] : x->nv;
    for (int64_t v = k + 1; v <= next; v++) x->ptr[v] = e + 1;
  }
  if (p == 0)
    for (int64_t v = 0; v <= (x->ne ? x->key[0] : x->nv); v++) x->ptr[v] = 0;
}

static void count_part(void *arg, int p, int np) {
  Index *x = arg;
  int64_t lo = part_lo(x->ne, p, np), hi = part_lo(x->ne, p + 1, np);
  int64_t *c = x->cnt[p];
  memset(c, 0, sizeof(int64_t) * (size_t)x->nv);
  for (int64_t e = lo; e < hi; e++) c[x->key[e]]++;
}

/* Vertices [lo, hi) of part p: the sum of their counts over all parts. */
static void total_part(void *arg, int p, int np) {
  Index *x = arg;
  int64_t lo = part_lo(x->nv, p, np), hi = part_lo(x->nv, p + 1, np);
  int64_t s = 0;
  for (int64_t v = lo; v < hi; v++)
    for (int q = 0; q < x->np; q++) s += x->cnt[q][v];
  x->sums[p] = s;
}

/* Turns the counts of vertices [lo, hi) into slots, starting at the sum of
 * every count before them (sums[p], made a prefix by the caller). */
static void slot_part(void *arg, int p, int np) {
  Index *x = arg;
  int64_t lo = part_lo(x->nv, p, np), hi = part_lo(x->nv, p + 1, np);
  int64_t at = x->sums[p];
  for (int64_t v = lo; v < hi; v++) {
    x->ptr[v] = at;
    for (int q = 0; q < x->np; q++) {
      int64_t c = x->cnt[q][v];
      x->cnt[q][v] = at;
      at += c;
    }
  }
}

static void place_part(void *arg, int p, int np) {
  Index *x = arg;
  int64_t lo = part_lo(x->ne, p, np), hi = part_lo(x->ne, p + 1, np);
  int64_t *cur = x->cnt[p];
  for (int64_t e = lo; e < hi; e++) {
    int64_t k = cur[x->key[e]]++;
    x->eid[k] = e;
    x->nbr[k] = x->other[e];
  }
}

/* 0, or -1 when out of memory. */
static int build_index(int32_t nv, int64_t ne, const int32_t *key,
                       const int32_t *other, int64_t *ptr, int64_t *eid,
                       int32_t *nbr) {
  Index x = {nv, ne, key, other, ptr, eid, nbr, NULL, NULL, 0, NULL};
  bool unsorted[GRAPH_MAX_THREADS] = {false};
  int64_t sums[GRAPH_MAX_THREADS];
  x.unsorted = unsorted;
  x.sums = sums;
  int np = graph_par_parts(ne, MIN_PART);
  graph_parallel(np, sorted_part, &x);
  bool sorted = true;
  for (int p = 0; p < np; p++) sorted = sorted && !unsorted[p];
  if (sorted) {
    graph_parallel(np, identity_part, &x);
    return 0;
  }
  /* each part's counters take 8 bytes a vertex: at most as many parts as
   * keep them below the 16 bytes an arc the two output arrays take (and
   * one part, whatever the graph) */
  int64_t most = nv > 0 ? 2 * ne / nv : np;
  if (np > most) np = most < 1 ? 1 : (int)most;
  int64_t *cnt[GRAPH_MAX_THREADS];
  x.cnt = cnt;
  x.np = np;
  for (int p = 0; p < np; p++) {
    cnt[p] = malloc(sizeof(int64_t) * ((size_t)nv + 1));
    if (!cnt[p]) {
      for (int q = 0; q < p; q++) free(cnt[q]);
      return -1;
    }
  }
  graph_parallel(np, count_part, &x);
  int nvp = graph_par_parts(nv, MIN_PART);
  graph_parallel(nvp, total_part, &x);
  int64_t at = 0;
  for (int p = 0; p < nvp; p++) {
    int64_t s = sums[p];
    sums[p] = at;
    at += s;
  }
  graph_parallel(nvp, slot_part, &x);
  ptr[nv] = ne;
  graph_parallel(np, place_part, &x);
  for (int p = 0; p < np; p++) free(cnt[p]);
  return 0;
}

void graph_perm_free(GraphPerm *p) {
  if (!p) return;
  free(p->new_of_old);
  free(p->old_of_new);
  free(p->edge_old);
  free(p);
}

/* The block locality over parts of the destinations walked: a part
 * starting at step i0 first walks the 32 steps before it without counting,
 * which leaves `last` as the serial walk has it for every block that can
 * still hit (a hit needs a step less than 32 back), so the parts' hits add
 * up to the serial count exactly. */
typedef struct Locality {
  const Graph *g;
  const int32_t *seq;
  int32_t nb;
  int64_t *hits; /* by part; -1: no memory */
} Locality;

static void locality_part(void *arg, int p, int np) {
  Locality *w = arg;
  const Graph *g = w->g;
  int64_t lo = part_lo(g->nv, p, np), hi = part_lo(g->nv, p + 1, np);
  int32_t *last = malloc(sizeof(int32_t) * (size_t)(w->nb > 0 ? w->nb : 1));
  if (!last) {
    w->hits[p] = -1;
    return;
  }
  for (int32_t b = 0; b < w->nb; b++) last[b] = INT32_MIN;
  int64_t hits = 0;
  for (int64_t i = lo >= 32 ? lo - 32 : 0; i < hi; i++) {
    int32_t v = w->seq ? w->seq[i] : (int32_t)i;
    for (int64_t k = g->in_ptr[v]; k < g->in_ptr[v + 1]; k++) {
      int32_t b = g->in_src[k] >> 5;
      if (i >= lo && last[b] != INT32_MIN && i - last[b] < 32) hits++;
      last[b] = (int32_t)i;
    }
  }
  free(last);
  w->hits[p] = hits;
}

double graph_block_locality_in(const Graph *g, const int32_t *seq) {
  /* Walks the in-edges destination by destination (seq[i], else i: the
   * order a vertex-parallel kernel gathers them): an edge hits when its
   * source's 32-vertex block was gathered by an edge of one of the last 32
   * destinations walked. */
  if (g->ne == 0) return 0;
  int64_t hits[GRAPH_MAX_THREADS];
  /* each part has a `last` of |V| / 32 entries and walks 32 destinations
   * twice: parts of at least 2^14 destinations */
  int np = graph_par_parts(g->ne, MIN_PART);
  int nvp = graph_par_parts(g->nv, (int64_t)1 << 14);
  if (np > nvp) np = nvp;
  Locality w = {g, seq, (g->nv + 31) / 32, hits};
  graph_parallel(np, locality_part, &w);
  int64_t sum = 0;
  for (int p = 0; p < np; p++) {
    if (hits[p] < 0) return -1;
    sum += hits[p];
  }
  return (double)sum / g->ne;
}

double graph_block_locality(const Graph *g) { return graph_block_locality_in(g, NULL); }

/* The spans |src - dst| and self-loops over fixed chunks of 2^24 edges (a
 * chunk's spans sum below 2^55), added exactly: the same for any number of
 * threads. */
#define SPAN_CHUNK ((int64_t)1 << 24)

typedef struct Spans {
  const Graph *g;
  int64_t nchunks;
  unsigned __int128 *span; /* by part */
  int64_t *loops;
} Spans;

static void span_part(void *arg, int p, int np) {
  Spans *w = arg;
  const Graph *g = w->g;
  unsigned __int128 total = 0;
  int64_t loops = 0;
  for (int64_t c = part_lo(w->nchunks, p, np), end = part_lo(w->nchunks, p + 1, np); c < end;
       c++) {
    int64_t lo = c * SPAN_CHUNK, hi = lo + SPAN_CHUNK < g->ne ? lo + SPAN_CHUNK : g->ne;
    int64_t span = 0;
    for (int64_t e = lo; e < hi; e++) {
      int64_t diff = (int64_t)g->src[e] - g->dst[e];
      span += diff < 0 ? -diff : diff;
      loops += diff == 0;
    }
    total += (unsigned __int128)span;
  }
  w->span[p] = total;
  w->loops[p] = loops;
}

void graph_compute_stats(Graph *g) {
  GraphStats *s = &g->stats;
  memset(s, 0, sizeof *s);
  if (g->nv > 0) s->deg_mean = (double)g->ne / g->nv;
  /* a sum of doubles, whose value depends on its order: one thread, over
   * |V| (a tenth of the edge passes' work on R-MAT) */
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
  unsigned __int128 span[GRAPH_MAX_THREADS];
  int64_t loops[GRAPH_MAX_THREADS];
  Spans w = {g, (g->ne + SPAN_CHUNK - 1) / SPAN_CHUNK, span, loops};
  int np = graph_par_parts(g->ne, MIN_PART);
  graph_parallel(np, span_part, &w);
  unsigned __int128 total = 0;
  for (int p = 0; p < np; p++) {
    total += span[p];
    s->self_loops += loops[p];
  }
  if (g->ne > 0) s->aes = (double)total / (double)g->ne;
  s->locality = graph_block_locality(g);
}

typedef struct CsrEdges {
  const Graph *g;
  bool *other; /* by part: some in_eid[k] != k */
} CsrEdges;

static void csr_edges_part(void *arg, int p, int np) {
  CsrEdges *w = arg;
  int64_t lo = part_lo(w->g->ne, p, np), hi = part_lo(w->g->ne, p + 1, np);
  w->other[p] = false;
  for (int64_t k = lo; k < hi; k++)
    if (w->g->in_eid[k] != k) {
      w->other[p] = true;
      return;
    }
}

/* Builds the CSR and CSC of g from its COO and its statistics; false when
 * out of memory. */
static bool index_graph(Graph *g) {
  if (build_index(g->nv, g->ne, g->dst, g->src, g->in_ptr, g->in_eid, g->in_src) < 0 ||
      build_index(g->nv, g->ne, g->src, g->dst, g->out_ptr, g->out_eid, g->out_dst) < 0)
    return false;
  bool other[GRAPH_MAX_THREADS];
  CsrEdges w = {g, other};
  int np = graph_par_parts(g->ne, MIN_PART);
  graph_parallel(np, csr_edges_part, &w);
  g->csr_edges = true;
  for (int p = 0; p < np; p++) g->csr_edges = g->csr_edges && !other[p];
  graph_compute_stats(g);
  return true;
}

/* A graph with room for its arrays, the COO given (NULL: allocated). */
static Graph *graph_alloc(int64_t nv, int64_t ne, int32_t *src, int32_t *dst,
                          const char *name) {
  Graph *g = calloc(1, sizeof *g);
  if (!g) {
    free(src);
    free(dst);
    return NULL;
  }
  g->nv = (int32_t)nv;
  g->ne = ne;
  g->name = strdup(name ? name : "<graph>");
  g->src = src ? src : alloc_i32(ne);
  g->dst = dst ? dst : alloc_i32(ne);
  g->in_ptr = alloc_i64(nv + 1);
  g->in_eid = alloc_i64(ne);
  g->in_src = alloc_i32(ne);
  g->out_ptr = alloc_i64(nv + 1);
  g->out_eid = alloc_i64(ne);
  g->out_dst = alloc_i32(ne);
  if (!g->name || !g->src || !g->dst || !g->in_ptr || !g->in_eid ||
      !g->in_src || !g->out_ptr || !g->out_eid || !g->out_dst) {
    graph_free(g);
    return NULL;
  }
  return g;
}

static Graph *oom(Graph *g, int64_t nv, int64_t ne, Diag *d, Loc loc) {
  graph_free(g);
  ir_error(d, loc,
           "out of memory building a graph with %" PRId64 " vertices and "
           "%" PRId64 " edges", nv, ne);
  return NULL;
}

Graph *graph_from_coo(int64_t nv, int64_t ne, const int64_t *src,
                           const int64_t *dst, const char *name, Diag *d,
                           Loc loc) {
  if (!check_sizes(nv, ne, d, loc)) return NULL;
  Graph *g = graph_alloc(nv, ne, NULL, NULL, name);
  if (!g) return oom(g, nv, ne, d, loc);
  if (!narrow_arcs(nv, ne, src, dst, g->src, g->dst, d, loc)) {
    graph_free(g);
    return NULL;
  }
  return index_graph(g) ? g : oom(g, nv, ne, d, loc);
}

typedef struct Range {
  int64_t nv, ne;
  const int32_t *src, *dst;
  int64_t *bad; /* by part */
} Range;

static void range_part(void *arg, int p, int np) {
  Range *w = arg;
  int64_t lo = part_lo(w->ne, p, np), hi = part_lo(w->ne, p + 1, np);
  w->bad[p] = w->ne;
  for (int64_t e = lo; e < hi; e++)
    if (w->src[e] < 0 || w->src[e] >= w->nv || w->dst[e] < 0 || w->dst[e] >= w->nv) {
      w->bad[p] = e;
      return;
    }
}

Graph *graph_from_arcs(int64_t nv, int64_t ne, int32_t *src, int32_t *dst,
                       const char *name, Diag *d, Loc loc) {
  if (!check_sizes(nv, ne, d, loc)) {
    free(src);
    free(dst);
    return NULL;
  }
  if (ne > 0 && (!src || !dst)) { /* the caller's allocation failed */
    free(src);
    free(dst);
    return oom(NULL, nv, ne, d, loc);
  }
  int64_t bad[GRAPH_MAX_THREADS];
  Range w = {nv, ne, src, dst, bad};
  int np = graph_par_parts(ne, MIN_PART);
  graph_parallel(np, range_part, &w);
  for (int p = 0; p < np; p++) {
    if (bad[p] == ne) continue;
    int64_t e = bad[p];
    ir_error(d, loc,
             "edge %" PRId64 " (%" PRId32 " -> %" PRId32 ") is out of "
             "range: vertices are 0..%" PRId64, e, src[e], dst[e], nv - 1);
    free(src);
    free(dst);
    return NULL;
  }
  Graph *g = graph_alloc(nv, ne, src, dst, name);
  if (!g) return oom(g, nv, ne, d, loc);
  return index_graph(g) ? g : oom(g, nv, ne, d, loc);
}

const Graph *graph_transposed(const Graph *g, Diag *d, Loc loc) {
  if (g->transposed) return g->transposed;
  if (g->device_only) {
    ir_error(d, loc, "%s was built on the device: an operator scheduled with transpose() "
             "runs on the reversed graph, which gop builds from the host's arrays; build "
             "the graph on the host, or schedule the operator without transpose()",
             g->name ? g->name : "the graph");
    return NULL;
  }
  int32_t *src = alloc_i32(g->ne), *dst = alloc_i32(g->ne);
  if (src && g->ne > 0) memcpy(src, g->dst, sizeof *src * (size_t)g->ne);
  if (dst && g->ne > 0) memcpy(dst, g->src, sizeof *dst * (size_t)g->ne);
  char name[256];
  snprintf(name, sizeof name, "%s, reversed", g->name ? g->name : "<graph>");
  /* g's arcs, already checked: only the index is built */
  Graph *t = src && dst ? graph_alloc(g->nv, g->ne, src, dst, name) : NULL;
  if (!src || !dst) free(src), free(dst);
  if (!t || !index_graph(t)) return oom(t, g->nv, g->ne, d, loc);
  t->index64 = g->index64;
  ((Graph *)g)->transposed = t; /* a memo: see graph.h */
  return t;
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
