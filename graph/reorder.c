/* graph/reorder.c: vertex orders of a host graph, and applying them.
 *
 * A reordering renumbers the vertices so that the rows of X that a kernel
 * gathers for neighbouring destinations lie close together in memory (the
 * same cache lines, the same L2 sets), without changing what the operator
 * computes. Five orders (docs/reordering.md says when each helps):
 *
 *   degree     in-degree descending, ties by original id: heavy rows first,
 *              so the rows a warp-per-row schedule balances sit together
 *   rcm        reverse Cuthill-McKee on the symmetrised pattern: a BFS from
 *              a pseudo-peripheral vertex of each component (George-Liu),
 *              neighbours taken in increasing degree, the whole sequence
 *              reversed; minimises the bandwidth (max |src - dst|)
 *   metis[:K]  METIS_PartGraphKway into K parts on the symmetrised graph,
 *              vertices ordered by part, then by original id (needs gop
 *              built with Debian's libmetis-dev)
 *   community  gop's own community order in the spirit of Rabbit order:
 *              one level of Louvain local moving (modularity gain, vertices
 *              visited in id order, until fewer than 1% move), communities
 *              by size (largest first), vertices within a community by a
 *              BFS from its highest-degree member
 *   auto       GNNAdvisor's rule: reorder (community) only when
 *              sqrt(AES) > sqrt(|V|) / 100, and keep the community order
 *              only if it raises the block locality (at equal locality:
 *              lowers the AES); else the original order
 *
 * graph_permute applies a permutation: the new graph's edges are its CSR
 * by (new) destination, in-edges of a vertex in their original order, and
 * the graph keeps the maps (Graph.perm) that carry vertex and edge tensors
 * between the two numberings (api/run.c does so around every run).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef GOP_HAVE_METIS
#include <metis.h>
#endif

#include "graph/graph.h"

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int32_t *alloc_i32(int64_t n) {
  return malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
}

static const Loc no_loc = {0};

static void oom(Diag *d, const char *what) {
  ir_error(d, no_loc, "out of memory computing the %s order", what);
}

/* ---- the method spec ---- */

const char *graph_order_problem(const char *spec, GraphOrderSpec *out) {
  GraphOrderSpec dummy;
  if (!out) out = &dummy;
  memset(out, 0, sizeof *out);
  if (!spec || !*spec) return "empty method: choose none, degree, rcm, metis[:PARTS], "
                              "community or auto";
  static const struct { const char *name; GraphOrderKind kind; } names[] = {
      {"none", GRAPH_ORDER_NONE},   {"degree", GRAPH_ORDER_DEGREE},
      {"rcm", GRAPH_ORDER_RCM},     {"metis", GRAPH_ORDER_METIS},
      {"community", GRAPH_ORDER_COMMUNITY}, {"auto", GRAPH_ORDER_AUTO},
  };
  const char *colon = strchr(spec, ':');
  size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (strlen(names[i].name) != len || strncmp(spec, names[i].name, len) != 0) continue;
    out->kind = names[i].kind;
    if (!colon) return NULL;
    if (out->kind != GRAPH_ORDER_METIS) return "only metis takes an argument (metis:PARTS)";
    char *end;
    long long k = strtoll(colon + 1, &end, 10);
    if (!colon[1] || *end || k < 2 || k > 1000000)
      return "PARTS must be an integer from 2 to 1000000";
    out->parts = (int32_t)k;
    return NULL;
  }
  return "unknown method: choose none, degree, rcm, metis[:PARTS], community or auto";
}

bool graph_have_metis(void) {
#ifdef GOP_HAVE_METIS
  return true;
#else
  return false;
#endif
}

/* ---- the symmetrised pattern ---- */

/* Undirected neighbours of every vertex, without self-loops or repeats:
 * adj[ptr[v] .. ptr[v+1]). */
typedef struct Sym {
  int32_t *ptr, *adj;
} Sym;

static void sym_free(Sym *s) {
  free(s->ptr);
  free(s->adj);
}

static int sym_build(const Graph *g, Sym *s, Diag *d, const char *what) {
  int32_t nv = g->nv;
  s->ptr = alloc_i32((int64_t)nv + 1);
  s->adj = alloc_i32(2 * (int64_t)g->ne);
  int32_t *mark = alloc_i32(nv);
  if (!s->ptr || !s->adj || !mark) {
    free(mark);
    sym_free(s);
    oom(d, what);
    return -1;
  }
  for (int32_t v = 0; v < nv; v++) mark[v] = -1;
  int64_t n = 0;
  for (int32_t v = 0; v < nv; v++) {
    s->ptr[v] = (int32_t)n;
    mark[v] = v; /* no self-loops */
    for (int64_t k = g->in_ptr[v]; k < g->in_ptr[v + 1]; k++) {
      int32_t u = g->in_src[k];
      if (mark[u] != v) {
        mark[u] = v;
        s->adj[n++] = u;
      }
    }
    for (int64_t k = g->out_ptr[v]; k < g->out_ptr[v + 1]; k++) {
      int32_t u = g->out_dst[k];
      if (mark[u] != v) {
        mark[u] = v;
        s->adj[n++] = u;
      }
    }
  }
  s->ptr[nv] = (int32_t)n; /* at most 2|E| <= 2^32 - 2: see graph_reorder */
  free(mark);
  return 0;
}

static int32_t sdeg(const Sym *s, int32_t v) { return s->ptr[v + 1] - s->ptr[v]; }

/* ---- degree ---- */

static int order_degree(const Graph *g, int32_t *order) {
  /* graph_reorder refuses graphs of more than 2^30 edges */
  int32_t nv = g->nv, maxd = (int32_t)g->stats.in_deg_max;
  int32_t *count = calloc((size_t)maxd + 2, sizeof *count);
  if (!count) return -1;
  /* a counting sort on maxd - deg: descending degree, stable in id */
  for (int32_t v = 0; v < nv; v++) count[maxd - (int32_t)(g->in_ptr[v + 1] - g->in_ptr[v]) + 1]++;
  for (int32_t k = 0; k <= maxd; k++) count[k + 1] += count[k];
  for (int32_t v = 0; v < nv; v++) order[count[maxd - (int32_t)(g->in_ptr[v + 1] - g->in_ptr[v])]++] = v;
  free(count);
  return 0;
}

/* ---- RCM ---- */

typedef struct DegId {
  int32_t deg, id;
} DegId;

static int cmp_degid(const void *a, const void *b) {
  const DegId *x = a, *y = b;
  if (x->deg != y->deg) return x->deg < y->deg ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* A BFS from `root` over the vertices not yet placed, marking seen[v] =
 * stamp: fills queue[0..*n), sets *last_begin to where its deepest level
 * starts there, and returns the depth (levels - 1). */
static int32_t bfs_depth(const Sym *s, int32_t root, const uint8_t *placed, int32_t *seen,
                         int32_t stamp, int32_t *queue, int32_t *last_begin, int32_t *n) {
  int32_t head = 0, tail = 0, depth = 0, level_end = 1;
  queue[tail++] = root;
  seen[root] = stamp;
  *last_begin = 0;
  while (head < tail) {
    if (head == level_end) {
      depth++;
      *last_begin = level_end;
      level_end = tail;
    }
    int32_t v = queue[head++];
    for (int32_t k = s->ptr[v]; k < s->ptr[v + 1]; k++) {
      int32_t u = s->adj[k];
      if (placed[u] || seen[u] == stamp) continue;
      seen[u] = stamp;
      queue[tail++] = u;
    }
  }
  *n = tail;
  return depth;
}

static int order_rcm(const Graph *g, int32_t *order, Diag *d) {
  int32_t nv = g->nv;
  Sym s;
  if (sym_build(g, &s, d, "rcm") != 0) return -1;
  uint8_t *placed = calloc((size_t)nv + 1, 1);
  int32_t *seen = alloc_i32(nv), *queue = alloc_i32(nv);
  DegId *buf = malloc(sizeof(DegId) * (size_t)(nv > 0 ? nv : 1));
  if (!placed || !seen || !queue || !buf) {
    free(placed), free(seen), free(queue), free(buf);
    sym_free(&s);
    oom(d, "rcm");
    return -1;
  }
  for (int32_t v = 0; v < nv; v++) seen[v] = -1;
  int32_t stamp = 0, n = 0;
  for (int32_t start = 0; start < nv; start++) {
    if (placed[start]) continue;
    /* George-Liu: BFS, move to a least-degree vertex of the deepest
     * level while that deepens the level structure (at most 8 rounds). */
    int32_t root = start, last, reached;
    int32_t depth = bfs_depth(&s, root, placed, seen, stamp++, queue, &last, &reached);
    for (int round = 0; round < 8 && reached > 1; round++) {
      int32_t best = queue[last];
      for (int32_t k = last + 1; k < reached; k++) {
        int32_t u = queue[k];
        if (sdeg(&s, u) < sdeg(&s, best) || (sdeg(&s, u) == sdeg(&s, best) && u < best))
          best = u;
      }
      int32_t l2, r2;
      int32_t d2 = bfs_depth(&s, best, placed, seen, stamp++, queue, &l2, &r2);
      if (d2 <= depth) break;
      root = best;
      depth = d2;
      last = l2;
    }
    /* Cuthill-McKee from root: neighbours by increasing degree. */
    int32_t head = n;
    order[n++] = root;
    placed[root] = 1;
    while (head < n) {
      int32_t v = order[head++];
      int32_t m = 0;
      for (int32_t k = s.ptr[v]; k < s.ptr[v + 1]; k++) {
        int32_t u = s.adj[k];
        if (placed[u]) continue;
        placed[u] = 1;
        buf[m++] = (DegId){sdeg(&s, u), u};
      }
      qsort(buf, (size_t)m, sizeof *buf, cmp_degid);
      for (int32_t k = 0; k < m; k++) order[n++] = buf[k].id;
    }
  }
  /* reverse */
  for (int32_t i = 0, j = nv - 1; i < j; i++, j--) {
    int32_t t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  free(placed), free(seen), free(queue), free(buf);
  sym_free(&s);
  return 0;
}

/* ---- METIS ---- */

int32_t graph_metis_default_parts(int32_t nv) {
  int32_t k = (nv + 1023) / 1024;
  if (k < 2) k = 2;
  if (k > 4096) k = 4096;
  return k;
}

int graph_metis_parts(const Graph *g, int32_t parts, int32_t *part_of, Diag *d) {
#ifndef GOP_HAVE_METIS
  (void)g, (void)parts, (void)part_of;
  ir_error(d, no_loc,
           "metis needs METIS, and gop was built without METIS (install "
           "libmetis-dev and rebuild; static builds leave it out)");
  return -1;
#else
  int32_t nv = g->nv;
  if (parts > nv) parts = nv;
  if (nv == 0 || parts < 2 || g->ne == 0) { /* nothing to partition */
    for (int32_t v = 0; v < nv; v++) part_of[v] = 0;
    return 0;
  }
  Sym s;
  if (sym_build(g, &s, d, "metis") != 0) return -1;
  idx_t *part = malloc(sizeof(idx_t) * (size_t)nv);
  if (!part) {
    sym_free(&s);
    oom(d, "metis");
    return -1;
  }
  idx_t n = nv, ncon = 1, np = parts, objval = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = 1; /* reproducible orders */
  options[METIS_OPTION_NUMBERING] = 0;
  int rc = s.ptr[nv] == 0 ? METIS_OK
                          : METIS_PartGraphKway(&n, &ncon, s.ptr, s.adj, NULL, NULL, NULL,
                                                &np, NULL, NULL, options, &objval, part);
  if (s.ptr[nv] == 0)
    for (int32_t v = 0; v < nv; v++) part[v] = 0;
  sym_free(&s);
  if (rc != METIS_OK) {
    free(part);
    ir_error(d, no_loc, "METIS_PartGraphKway failed (%s) on %s with %d parts",
             rc == METIS_ERROR_MEMORY ? "out of memory" : rc == METIS_ERROR_INPUT
                                                              ? "input error"
                                                              : "error",
             g->name, (int)parts);
    return -1;
  }
  for (int32_t v = 0; v < nv; v++) part_of[v] = (int32_t)part[v];
  free(part);
  return 0;
#endif
}

static int order_metis(const Graph *g, int32_t parts, int32_t *order, Diag *d) {
  int32_t nv = g->nv;
  if (parts <= 0) parts = graph_metis_default_parts(nv);
  if (parts > nv) parts = nv;
  int32_t *part = malloc(sizeof(int32_t) * ((size_t)nv + 1));
  int32_t *count = calloc((size_t)(parts > 0 ? parts : 1) + 1, sizeof *count);
  if (!part || !count) {
    free(part), free(count);
    oom(d, "metis");
    return -1;
  }
  if (graph_metis_parts(g, parts, part, d) != 0) {
    free(part), free(count);
    return -1;
  }
  for (int32_t v = 0; v < nv; v++) count[part[v] + 1]++;
  for (int32_t p = 0; p < parts; p++) count[p + 1] += count[p];
  for (int32_t v = 0; v < nv; v++) order[count[part[v]]++] = v;
  free(part), free(count);
  return 0;
}

/* ---- community ---- */

typedef struct CommRank {
  int32_t size, first, id;
} CommRank;

static int cmp_comm(const void *a, const void *b) {
  const CommRank *x = a, *y = b;
  if (x->size != y->size) return x->size > y->size ? -1 : 1;
  return x->first < y->first ? -1 : x->first > y->first;
}

static int order_community(const Graph *g, int32_t *order, Diag *d) {
  int32_t nv = g->nv;
  Sym s;
  if (sym_build(g, &s, d, "community") != 0) return -1;
  int32_t *comm = alloc_i32(nv), *touched = alloc_i32(nv), *members = alloc_i32(nv),
          *start = alloc_i32((int64_t)nv + 1), *queue = alloc_i32(nv);
  int64_t *tot = malloc(sizeof(int64_t) * (size_t)(nv > 0 ? nv : 1));
  double *w = calloc((size_t)nv + 1, sizeof *w);
  uint8_t *done = calloc((size_t)nv + 1, 1);
  CommRank *rank = malloc(sizeof(CommRank) * (size_t)(nv > 0 ? nv : 1));
  int status = -1;
  if (!comm || !touched || !members || !start || !queue || !tot || !w || !done || !rank) {
    oom(d, "community");
    goto out;
  }
  /* Louvain's local moving, one level, unit weights on the symmetrised
   * pattern: a vertex joins the neighbouring community C that maximises
   * w(v, C) - tot(C) k_v / 2m (the modularity gain up to a constant). */
  double m2 = (double)s.ptr[nv];
  for (int32_t v = 0; v < nv; v++) {
    comm[v] = v;
    tot[v] = sdeg(&s, v);
  }
  for (int pass = 0; pass < 16 && m2 > 0; pass++) {
    int64_t moved = 0;
    for (int32_t v = 0; v < nv; v++) {
      int32_t kv = sdeg(&s, v);
      if (kv == 0) continue;
      int32_t own = comm[v], nt = 0;
      tot[own] -= kv;
      for (int32_t k = s.ptr[v]; k < s.ptr[v + 1]; k++) {
        int32_t c = comm[s.adj[k]];
        if (w[c] == 0) touched[nt++] = c;
        w[c] += 1;
      }
      int32_t best = own;
      double best_gain = w[own] - (double)tot[own] * kv / m2;
      for (int32_t i = 0; i < nt; i++) {
        int32_t c = touched[i];
        double gain = w[c] - (double)tot[c] * kv / m2;
        if (gain > best_gain + 1e-12) { /* ties: stay, else the first seen */
          best = c;
          best_gain = gain;
        }
      }
      for (int32_t i = 0; i < nt; i++) w[touched[i]] = 0;
      w[own] = 0;
      tot[best] += kv;
      if (best != own) {
        comm[v] = best;
        moved++;
      }
    }
    if (moved * 100 < nv) break;
  }
  /* members of each community, in id order */
  memset(start, 0, sizeof(int32_t) * ((size_t)nv + 1));
  for (int32_t v = 0; v < nv; v++) start[comm[v] + 1]++;
  for (int32_t c = 0; c < nv; c++) start[c + 1] += start[c];
  for (int32_t v = 0; v < nv; v++) members[start[comm[v]]++] = v;
  memmove(start + 1, start, sizeof(int32_t) * (size_t)nv);
  start[0] = 0;
  int32_t ncomm = 0;
  for (int32_t c = 0; c < nv; c++)
    if (start[c + 1] > start[c])
      rank[ncomm++] = (CommRank){start[c + 1] - start[c], members[start[c]], c};
  qsort(rank, (size_t)ncomm, sizeof *rank, cmp_comm);
  /* within a community: BFS from its highest-degree member, staying in
   * the community; members a BFS cannot reach start their own (id order) */
  int32_t n = 0;
  for (int32_t r = 0; r < ncomm; r++) {
    int32_t c = rank[r].id;
    int32_t root = members[start[c]];
    for (int32_t k = start[c] + 1; k < start[c + 1]; k++)
      if (sdeg(&s, members[k]) > sdeg(&s, root)) root = members[k];
    int32_t scan = start[c];
    for (;;) {
      int32_t head = n;
      order[n++] = root;
      done[root] = 1;
      while (head < n) {
        int32_t v = order[head++];
        for (int32_t k = s.ptr[v]; k < s.ptr[v + 1]; k++) {
          int32_t u = s.adj[k];
          if (done[u] || comm[u] != c) continue;
          done[u] = 1;
          order[n++] = u;
        }
      }
      while (scan < start[c + 1] && done[members[scan]]) scan++;
      if (scan == start[c + 1]) break;
      root = members[scan];
    }
  }
  status = n == nv ? 0 : -1;
  if (status) ir_error(d, no_loc, "internal error: the community order lost vertices");
out:
  free(comm), free(touched), free(members), free(start), free(queue), free(tot), free(w);
  free(done), free(rank);
  sym_free(&s);
  return status;
}

/* ---- applying a permutation ---- */

Graph *graph_permute(const Graph *g, const int32_t *new_of_old, const char *method, Diag *d) {
  int32_t nv = g->nv;
  int64_t ne = g->ne;
  GraphPerm *p = calloc(1, sizeof *p);
  int64_t *src = malloc(sizeof(int64_t) * (size_t)(ne > 0 ? ne : 1));
  int64_t *dst = malloc(sizeof(int64_t) * (size_t)(ne > 0 ? ne : 1));
  char *name = NULL;
  Graph *out = NULL;
  if (!p || !src || !dst) goto oom;
  p->new_of_old = alloc_i32(nv);
  p->old_of_new = alloc_i32(nv);
  p->edge_old = malloc(sizeof(int64_t) * (size_t)(ne > 0 ? ne : 1));
  if (!p->new_of_old || !p->old_of_new || !p->edge_old) goto oom;
  for (int32_t v = 0; v < nv; v++) p->old_of_new[v] = -1;
  for (int32_t v = 0; v < nv; v++) {
    int32_t nw = new_of_old[v];
    if (nw < 0 || nw >= nv || p->old_of_new[nw] >= 0) {
      ir_error(d, no_loc, "the %s order is not a permutation (vertex %" PRId32 " -> %" PRId32
               ")", method, v, nw);
      goto fail;
    }
    p->old_of_new[nw] = v;
  }
  /* new edge ids: the CSR by new destination, in-edges in input order */
  int64_t e = 0;
  for (int32_t nd = 0; nd < nv; nd++) {
    int32_t v = p->old_of_new[nd];
    for (int64_t k = g->in_ptr[v]; k < g->in_ptr[v + 1]; k++) {
      int64_t old = g->in_eid[k];
      p->edge_old[e] = old;
      src[e] = new_of_old[g->src[old]];
      dst[e] = nd;
      e++;
    }
  }
  if (asprintf(&name, "%s [%s]", g->name, method) < 0) {
    name = NULL;
    goto oom;
  }
  out = graph_from_coo(nv, ne, src, dst, name, d, no_loc);
  if (!out) goto fail;
  for (int32_t v = 0; v < nv; v++) p->new_of_old[v] = new_of_old[v];
  /* a reordered graph reordered again: the maps go to the first numbering */
  if (g->perm) {
    for (int32_t v = 0; v < nv; v++) p->new_of_old[v] = new_of_old[g->perm->new_of_old[v]];
    for (int32_t v = 0; v < nv; v++) p->old_of_new[p->new_of_old[v]] = v;
    for (int64_t k = 0; k < ne; k++) p->edge_old[k] = g->perm->edge_old[p->edge_old[k]];
  }
  snprintf(p->method, sizeof p->method, "%s", method);
  out->perm = p;
  free(src), free(dst), free(name);
  return out;
oom:
  ir_error(d, no_loc, "out of memory reordering %s", g->name);
fail:
  graph_perm_free(p);
  free(src), free(dst), free(name);
  return NULL;
}

/* ---- the entry point ---- */

int graph_community_order(const Graph *g, int32_t *order, Diag *d) {
  if (2 * (int64_t)g->ne > INT32_MAX) {
    ir_error(d, no_loc, "%s: a community order of more than 2^30 edges is not supported",
             g->name);
    return -1;
  }
  return order_community(g, order, d);
}

bool graph_aes_rule(const Graph *g) {
  /* GNNAdvisor (param.py): reorder when sqrt(AES) > sqrt(|V|) / 100 */
  return g->ne > 0 && g->stats.aes * 10000.0 > (double)g->nv;
}

bool graph_order_gains(const Graph *before, const Graph *after) {
  double a = before->stats.locality, b = after->stats.locality;
  if (b != a) return b > a;
  return after->stats.aes < before->stats.aes;
}

Graph *graph_reorder(const Graph *g, const char *method, Diag *d) {
  GraphOrderSpec spec;
  const char *why = graph_order_problem(method, &spec);
  if (why) {
    ir_error(d, no_loc, "reordering '%s': %s", method ? method : "", why);
    return NULL;
  }
  if (2 * (int64_t)g->ne > INT32_MAX) {
    ir_error(d, no_loc, "%s: reordering graphs with more than 2^30 edges is not supported",
             g->name);
    return NULL;
  }
  double t0 = now_seconds();
  int32_t *order = alloc_i32(g->nv), *new_of_old = calloc((size_t)g->nv + 1, sizeof(int32_t));
  if (!order || !new_of_old) {
    free(order), free(new_of_old);
    oom(d, method);
    return NULL;
  }
  int rc = 0;
  char name[40];
  snprintf(name, sizeof name, "%s", method);
  switch (spec.kind) {
  case GRAPH_ORDER_NONE:
    for (int32_t v = 0; v < g->nv; v++) order[v] = v;
    break;
  case GRAPH_ORDER_DEGREE:
    rc = order_degree(g, order);
    if (rc) oom(d, "degree");
    break;
  case GRAPH_ORDER_RCM: rc = order_rcm(g, order, d); break;
  case GRAPH_ORDER_METIS:
    rc = order_metis(g, spec.parts, order, d);
    snprintf(name, sizeof name, "metis:%d",
             (int)(spec.parts ? spec.parts : graph_metis_default_parts(g->nv)));
    break;
  case GRAPH_ORDER_COMMUNITY: rc = order_community(g, order, d); break;
  case GRAPH_ORDER_AUTO:
    if (graph_aes_rule(g)) {
      rc = order_community(g, order, d);
      snprintf(name, sizeof name, "auto=community");
    } else {
      for (int32_t v = 0; v < g->nv; v++) order[v] = v;
      snprintf(name, sizeof name, "auto=none");
    }
    break;
  }
  Graph *out = NULL;
  if (rc == 0) {
    for (int32_t i = 0; i < g->nv; i++) new_of_old[order[i]] = i;
    out = graph_permute(g, new_of_old, name, d);
  }
  if (out && spec.kind == GRAPH_ORDER_AUTO && strcmp(name, "auto=community") == 0 &&
      !graph_order_gains(g, out)) {
    /* the community order did not improve locality: keep the original */
    graph_free(out);
    for (int32_t v = 0; v < g->nv; v++) new_of_old[v] = v;
    out = graph_permute(g, new_of_old, "auto=none", d);
  }
  free(order), free(new_of_old);
  if (out) out->perm->seconds = now_seconds() - t0;
  return out;
}

/* ---- writing Matrix Market ---- */

static void write_mtx(FILE *f, const void *ctx) {
  const Graph *g = ctx;
  fprintf(f, "%%%%MatrixMarket matrix coordinate pattern general\n");
  fprintf(f, "%% %s, written by gop (row = source, column = destination, 1-based)\n",
          g->name);
  if (g->perm)
    fprintf(f, "%% vertices renumbered by the %s order (docs/reordering.md)\n",
            g->perm->method);
  fprintf(f, "%" PRId32 " %" PRId32 " %" PRId64 "\n", g->nv, g->nv, g->ne);
  for (int64_t e = 0; e < g->ne; e++)
    fprintf(f, "%" PRId32 " %" PRId32 "\n", g->src[e] + 1, g->dst[e] + 1);
}

int graph_write_mtx(const Graph *g, const char *path, Diag *d) {
  return ir_write_file(path, "a Matrix Market graph", write_mtx, g, d);
}
