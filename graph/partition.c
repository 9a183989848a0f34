/* graph/partition.c: a graph's destinations over P parts (docs/multigpu.md).
 *
 * MGG's and DGL's layout for full-graph training on several GPUs: part k
 * owns a set of destinations and keeps their in-edges, so that every
 * output row is computed where it lives and nothing is reduced across
 * parts; the source rows those edges read that another part owns form the
 * part's halo. Two ways to choose the owners:
 *   edges  contiguous ranges of destinations, cut where the running sum of
 *          (in-degree + 1) crosses k/P of the total: each part gets about
 *          the same number of in-edges (the +1 keeps a graph with few
 *          edges from piling its vertices onto one part)
 *   metis  METIS k-way parts of the symmetrised graph (fewer cut edges on
 *          graphs with community structure; parts need not be contiguous)
 * Everything here is deterministic: every process of a multi-GPU run
 * computes the same partition from the same graph and needs no exchange to
 * agree on it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph.h"

static const Loc no_loc = {0};

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *graph_partition_method_problem(const char *spec, GraphPartMethod *method) {
  if (!spec || !*spec) return "empty method: choose edges or metis";
  if (strcmp(spec, "edges") == 0) {
    *method = GRAPH_PART_EDGES;
    return NULL;
  }
  if (strcmp(spec, "metis") == 0) {
    *method = GRAPH_PART_METIS;
    return NULL;
  }
  return "unknown method: choose edges or metis";
}

/* Contiguous ranges balanced by in-degree + 1. */
static void ranges_by_edges(const Graph *g, int parts, int32_t *lo, int32_t *owner) {
  int64_t total = g->ne + g->nv;
  int32_t v = 0;
  lo[0] = 0;
  for (int k = 1; k < parts; k++) {
    /* the first v whose prefix weight in_ptr[v] + v reaches k/P of it */
    int64_t want = (total * k + parts / 2) / parts;
    while (v < g->nv && g->in_ptr[v] + v < want) v++;
    lo[k] = v;
  }
  lo[parts] = g->nv;
  for (int k = 0; k < parts; k++)
    for (int32_t u = lo[k]; u < lo[k + 1]; u++) owner[u] = k;
}

void graph_partition_free(GraphPartition *p) {
  if (!p) return;
  if (p->part)
    for (int k = 0; k < p->parts; k++) {
      free(p->part[k].rows);
      free(p->part[k].eids);
      free(p->part[k].halo_from);
    }
  free(p->part);
  free(p->owner);
  free(p->lo);
  free(p);
}

/* Fills part k's rows, edges and halo; `mark` is |V| entries of -1 on
 * entry and on return (its scratch). -1 if out of memory. */
static int build_part(const Graph *g, GraphPartition *p, int k, int32_t *mark) {
  GraphPart *pt = &p->part[k];
  int P = p->parts;
  int32_t nown = 0;
  int64_t ne = 0;
  for (int32_t v = 0; v < g->nv; v++)
    if (p->owner[v] == k) {
      nown++;
      ne += g->in_ptr[v + 1] - g->in_ptr[v];
    }
  pt->nown = nown;
  pt->ne = ne;
  pt->halo_from = calloc((size_t)P + 1, sizeof(int32_t));
  pt->eids = malloc(sizeof(int64_t) * (size_t)(ne ? ne : 1));
  int32_t *own = malloc(sizeof(int32_t) * (size_t)(nown ? nown : 1));
  if (!pt->halo_from || !pt->eids || !own) {
    free(own);
    return -1;
  }
  /* own vertices in increasing id; halo sources counted per owner */
  int32_t n = 0;
  int64_t nh = 0;
  for (int32_t v = 0; v < g->nv; v++)
    if (p->owner[v] == k) {
      own[n] = v;
      mark[v] = n++;
    }
  /* its edges in global id order, and the halo rows they read */
  int64_t m = 0, remote = 0;
  for (int64_t e = 0; e < g->ne; e++) {
    if (p->owner[g->dst[e]] != k) continue;
    int32_t u = g->src[e];
    pt->eids[m++] = e;
    if (p->owner[u] != k) {
      remote++;
      if (mark[u] == -1) { /* first sight of a halo row: -2 - owner */
        mark[u] = -2 - p->owner[u];
        pt->halo_from[p->owner[u] + 1]++;
        nh++;
      }
    }
  }
  pt->nhalo = (int32_t)nh;
  pt->ne_remote = remote;
  for (int q = 0; q < P; q++) pt->halo_from[q + 1] += pt->halo_from[q];
  pt->rows = malloc(sizeof(int32_t) * (size_t)(nown + nh ? nown + nh : 1));
  if (!pt->rows) {
    free(own);
    for (int32_t v = 0; v < g->nv; v++) mark[v] = -1;
    return -1;
  }
  memcpy(pt->rows, own, sizeof(int32_t) * (size_t)nown);
  /* halo by owner, then id: a pass over the vertices in id order places
   * each in its owner's slot */
  int32_t *fill = malloc(sizeof(int32_t) * (size_t)P);
  if (!fill) {
    free(own);
    for (int32_t v = 0; v < g->nv; v++) mark[v] = -1;
    return -1;
  }
  memcpy(fill, pt->halo_from, sizeof(int32_t) * (size_t)P);
  for (int32_t u = 0; u < g->nv; u++)
    if (mark[u] <= -2) pt->rows[nown + fill[-2 - mark[u]]++] = u;
  free(fill);
  for (int32_t i = 0; i < nown; i++) mark[own[i]] = -1;
  for (int32_t h = 0; h < pt->nhalo; h++) mark[pt->rows[nown + h]] = -1;
  free(own);
  return 0;
}

GraphPartition *graph_partition(const Graph *g, int parts, GraphPartMethod method, Diag *d) {
  if (parts < 1 || parts > GRAPH_MAX_PARTS) {
    ir_error(d, no_loc, "cannot split %s into %d parts: give 1 to %d", g->name, parts,
             GRAPH_MAX_PARTS);
    return NULL;
  }
  if (g->nv > 0 && parts > g->nv) {
    ir_error(d, no_loc, "cannot split %s into %d parts: it has only %d vertices", g->name,
             parts, (int)g->nv);
    return NULL;
  }
  double t0 = now_seconds();
  GraphPartition *p = calloc(1, sizeof *p);
  int32_t *mark = NULL;
  if (!p) goto oom;
  p->parts = parts;
  p->method = method;
  p->owner = malloc(sizeof(int32_t) * ((size_t)g->nv + 1));
  p->part = calloc((size_t)parts, sizeof(GraphPart));
  mark = malloc(sizeof(int32_t) * ((size_t)g->nv + 1));
  if (!p->owner || !p->part || !mark) goto oom;
  if (method == GRAPH_PART_EDGES) {
    p->lo = malloc(sizeof(int32_t) * ((size_t)parts + 1));
    if (!p->lo) goto oom;
    ranges_by_edges(g, parts, p->lo, p->owner);
  } else if (parts == 1) {
    for (int32_t v = 0; v < g->nv; v++) p->owner[v] = 0;
  } else if (graph_metis_parts(g, parts, p->owner, d) != 0) {
    free(mark);
    graph_partition_free(p);
    return NULL;
  }
  for (int32_t v = 0; v < g->nv; v++) mark[v] = -1;
  for (int k = 0; k < parts; k++)
    if (build_part(g, p, k, mark) != 0) goto oom;
  for (int64_t e = 0; e < g->ne; e++) p->cut += p->owner[g->src[e]] != p->owner[g->dst[e]];
  free(mark);
  p->seconds = now_seconds() - t0;
  return p;
oom:
  free(mark);
  graph_partition_free(p);
  ir_error(d, no_loc, "out of memory splitting %s into %d parts", g->name, parts);
  return NULL;
}

Graph *graph_partition_graph(const Graph *g, const GraphPartition *p, int k, Diag *d) {
  if (k < 0 || k >= p->parts) {
    ir_error(d, no_loc, "no part %d: %s has parts 0..%d", k, g->name, p->parts - 1);
    return NULL;
  }
  const GraphPart *pt = &p->part[k];
  int32_t nloc = pt->nown + pt->nhalo;
  int32_t *local = malloc(sizeof(int32_t) * ((size_t)g->nv + 1));
  int64_t *src = malloc(sizeof(int64_t) * (size_t)(pt->ne ? pt->ne : 1));
  int64_t *dst = malloc(sizeof(int64_t) * (size_t)(pt->ne ? pt->ne : 1));
  char *name = malloc(strlen(g->name) + 32);
  Graph *out = NULL;
  if (!local || !src || !dst || !name) {
    ir_error(d, no_loc, "out of memory building part %d of %s", k, g->name);
    goto done;
  }
  for (int32_t i = 0; i < nloc; i++) local[pt->rows[i]] = i;
  for (int64_t i = 0; i < pt->ne; i++) {
    int64_t e = pt->eids[i];
    src[i] = local[g->src[e]];
    dst[i] = local[g->dst[e]];
  }
  sprintf(name, "%s#%d/%d", g->name, k, (int)p->parts);
  out = graph_from_coo(nloc, pt->ne, src, dst, name, d, no_loc);
done:
  free(local), free(src), free(dst), free(name);
  return out;
}

void graph_partition_print(FILE *out, const Graph *g, const GraphPartition *p) {
  fprintf(out, "partition into %d parts by %s in %.3f s: edge cut %lld of %lld (%.1f%%)\n",
          (int)p->parts, p->method == GRAPH_PART_EDGES ? "edges" : "metis", p->seconds,
          (long long)p->cut, (long long)g->ne,
          g->ne ? 100.0 * (double)p->cut / (double)g->ne : 0.0);
  int64_t max_e = 0, sum_h = 0, max_h = 0;
  for (int k = 0; k < p->parts; k++) {
    const GraphPart *pt = &p->part[k];
    fprintf(out, "  part %d: %d vertices", k, (int)pt->nown);
    if (p->lo) fprintf(out, " [%d, %d)", (int)p->lo[k], (int)p->lo[k + 1]);
    fprintf(out, ", %lld in-edges (%lld from the halo), halo %d rows (%.1f%% of its vertices)\n",
            (long long)pt->ne, (long long)pt->ne_remote, (int)pt->nhalo,
            pt->nown ? 100.0 * pt->nhalo / pt->nown : 0.0);
    if (pt->ne > max_e) max_e = pt->ne;
    if (pt->nhalo > max_h) max_h = pt->nhalo;
    sum_h += pt->nhalo;
  }
  double mean_e = (double)g->ne / p->parts;
  fprintf(out, "  balance: largest part %.3fx the mean in-edges; halo %lld rows in all, "
          "largest %lld\n",
          mean_e > 0 ? (double)max_e / mean_e : 1.0, (long long)sum_h, (long long)max_h);
}
