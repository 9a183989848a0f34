/* runtime/devgraph.c: graphs on the device.
 *
 * A device graph holds a host graph's formats, each uploaded the first time
 * a kernel asks for it and then kept: most schedules need only one or two
 * of COO, CSR, CSC and the degree arrays, and a graph of 100M edges costs
 * 800 MB per format. Neighbour-group tables (graph/groups.c builds them on
 * the host) are uploaded the same way, once per table. A graph built on
 * the device (rt_devgraph_adopt) has no host CSR: its tables are built on
 * the device by the graph's builder (groups_build: gop.Graph's, with torch
 * in the caller's stream), and kept here like uploaded ones.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda.def"

static const Loc no_loc = {0};

/* One array of a format: where it goes and what it holds (int32, or
 * int64 when `wide`: offsets and edge ids, uploaded in dg->index_bits). */
typedef struct Part {
  RtDevTensor *t;
  const void *host;
  int64_t n;
  const char *name;
  bool wide;
} Part;

/* The arrays of format `f`; returns how many. The degree arrays have no
 * host copy (host is NULL): load_format computes them. */
static int parts_of(RtDevGraph *dg, RtGraphFormat f, Part out[3]) {
  const Graph *g = dg->host;
  int64_t nv = dg->nv, ne = dg->ne;
  switch (f) {
  case RT_FMT_COO:
    out[0] = (Part){&dg->src, g->src, ne, "graph coo src", false};
    out[1] = (Part){&dg->dst, g->dst, ne, "graph coo dst", false};
    return 2;
  case RT_FMT_CSR:
    out[0] = (Part){&dg->in_ptr, g->in_ptr, nv + 1, "graph csr in_ptr", true};
    out[1] = (Part){&dg->in_eid, g->in_eid, ne, "graph csr in_eid", true};
    out[2] = (Part){&dg->in_src, g->in_src, ne, "graph csr in_src", false};
    return 3;
  case RT_FMT_CSC:
    out[0] = (Part){&dg->out_ptr, g->out_ptr, nv + 1, "graph csc out_ptr", true};
    out[1] = (Part){&dg->out_eid, g->out_eid, ne, "graph csc out_eid", true};
    out[2] = (Part){&dg->out_dst, g->out_dst, ne, "graph csc out_dst", false};
    return 3;
  case RT_FMT_DEG:
    out[0] = (Part){&dg->in_deg, NULL, nv, "graph in_deg", false};
    out[1] = (Part){&dg->out_deg, NULL, nv, "graph out_deg", false};
    return 2;
  case RT_FMT_COUNT: break;
  }
  unreachable("bad graph format");
}

const char *rt_graph_format_name(RtGraphFormat f) {
  static const char *names[RT_FMT_COUNT] = {"coo", "csr", "csc", "deg"};
  return (unsigned)f < RT_FMT_COUNT ? names[f] : "?";
}

void rt_devgraph_init(RtDevGraph *dg, const Graph *g) {
  memset(dg, 0, sizeof *dg);
  dg->host = g;
  dg->nv = g->nv;
  dg->ne = g->ne;
  dg->index_bits = 32;
}

void rt_devgraph_adopt(RtDevGraph *dg, const Graph *g, int index_bits, const RtDevPtr ptrs[10]) {
  rt_devgraph_init(dg, g);
  dg->index_bits = index_bits == 64 ? 64 : 32;
  dg->borrowed = true;
  RtDevTensor *t[10] = {&dg->src, &dg->dst, &dg->in_ptr, &dg->in_eid, &dg->in_src,
                        &dg->out_ptr, &dg->out_eid, &dg->out_dst, &dg->in_deg, &dg->out_deg};
  for (int f = 0, k = 0; f < RT_FMT_COUNT; f++) {
    Part parts[3];
    int n = parts_of(dg, (RtGraphFormat)f, parts);
    for (int i = 0; i < n; i++, k++) {
      size_t esize = parts[i].wide && dg->index_bits == 64 ? 8 : 4;
      t[k]->ptr = ptrs[k];
      t[k]->bytes = esize * (size_t)parts[i].n;
      t[k]->epoch = rt_cuda_epoch();
      snprintf(t[k]->name, sizeof t[k]->name, "%s", parts[i].name);
    }
  }
  dg->loaded = RT_FMT_ALL;
}

/* Forgets a borrowed tensor: the memory is the caller's. */
static void drop(const RtDevGraph *dg, RtDevTensor *t) {
  if (dg->borrowed) memset(t, 0, sizeof *t);
  else rt_tensor_free(t);
}

void rt_devgraph_set_index_bits(RtDevGraph *dg, int bits) {
  bits = bits == 64 ? 64 : 32;
  if (bits == dg->index_bits) return;
  /* a borrowed graph cannot be uploaded again: its CSR and CSC are
   * forgotten, and a load of them then refuses (load_format) */
  for (int f = RT_FMT_CSR; f <= RT_FMT_CSC; f++) {
    Part parts[3];
    int n = parts_of(dg, (RtGraphFormat)f, parts);
    for (int i = 0; i < n; i++) drop(dg, parts[i].t);
    dg->loaded &= ~RT_FMT_BIT(f);
  }
  dg->index_bits = bits;
  rt_devgraph_groups_free(dg); /* their CSR positions change width too */
  dg->groups_gen++; /* prepared launches holding the old addresses redo theirs */
}

/* Degrees from a pointer array: ptr[v+1] - ptr[v] (int32: a degree past
 * 2^31 is refused by load_format). Malloc'ed, or NULL. */
static int32_t *degrees(const int64_t *ptr, int32_t nv) {
  int32_t *deg = malloc(sizeof *deg * (size_t)(nv > 0 ? nv : 1));
  if (deg)
    for (int32_t v = 0; v < nv; v++) deg[v] = (int32_t)(ptr[v + 1] - ptr[v]);
  return deg;
}

/* Uploads a part; int64 host arrays go as int32 (converted a chunk at a
 * time, so the host never holds a second copy) unless the device graph
 * holds 64-bit indices. */
static RtStatus upload_part(const RtDevGraph *dg, const Part *p, Diag *d) {
  bool as64 = p->wide && dg->index_bits == 64;
  size_t esize = as64 ? sizeof(int64_t) : sizeof(int32_t);
  size_t bytes = esize * (size_t)p->n;
  RtStatus s = rt_tensor_alloc(p->t, bytes, p->name, d);
  if (s) return s;
  if (!p->wide || as64) return rt_tensor_upload(p->t, p->host, bytes, d);
  enum { CHUNK = 1 << 22 };
  int32_t *buf = malloc(sizeof(int32_t) * (size_t)(p->n < CHUNK ? (p->n > 0 ? p->n : 1) : CHUNK));
  if (!buf) {
    ir_error(d, no_loc, "out of host memory uploading %s", p->name);
    return RT_ERR;
  }
  const int64_t *h = p->host;
  for (int64_t at = 0; at < p->n && s == RT_OK; at += CHUNK) {
    int64_t n = p->n - at < CHUNK ? p->n - at : CHUNK;
    for (int64_t i = 0; i < n; i++) buf[i] = (int32_t)h[at + i];
    s = rt_tensor_upload_at(p->t, (size_t)at * sizeof(int32_t), buf,
                            (size_t)n * sizeof(int32_t), d);
  }
  free(buf);
  return s;
}

static RtStatus load_format(RtDevGraph *dg, RtGraphFormat f, Diag *d) {
  Part parts[3];
  int n = parts_of(dg, f, parts);
  const char *name = dg->host->name ? dg->host->name : "the graph";
  if (dg->borrowed) { /* only a change of index width gets here: the width
                         built is the other one */
    ir_error(d, no_loc, "%s was built on the device with %d-bit offsets and edge ids; a "
             "kernel of %d-bit indices cannot read its %s format (GOP_INDEX64 changed "
             "since it was built?): build it again", name, dg->index_bits == 64 ? 32 : 64,
             dg->index_bits,
             rt_graph_format_name(f));
    return RT_ERR;
  }
  if (dg->host->device_only) {
    ir_error(d, no_loc, "%s was built on the device and has no host copy to upload its %s "
             "format from: run it on device memory (gop_run_launch_ptrs)", name,
             rt_graph_format_name(f));
    return RT_ERR;
  }
  int32_t *deg[2] = {NULL, NULL};
  if (f == RT_FMT_DEG) {
    deg[0] = degrees(dg->host->in_ptr, dg->nv);
    deg[1] = degrees(dg->host->out_ptr, dg->nv);
    if (!deg[0] || !deg[1]) {
      free(deg[0]);
      free(deg[1]);
      ir_error(d, no_loc, "out of host memory computing the degrees of %s",
               dg->host->name ? dg->host->name : "the graph");
      return RT_ERR;
    }
    parts[0].host = deg[0];
    parts[1].host = deg[1];
  }
  RtStatus s = RT_OK;
  if (f == RT_FMT_DEG && (dg->host->stats.in_deg_max > INT32_MAX ||
                          dg->host->stats.out_deg_max > INT32_MAX)) {
    ir_error(d, no_loc, "a vertex of %s has more than 2^31-1 edges: its degree does not "
             "fit the int32 degree arrays", dg->host->name ? dg->host->name : "the graph");
    s = RT_ERR;
  }
  for (int i = 0; i < n && s == RT_OK; i++) s = upload_part(dg, &parts[i], d);
  if (s) /* nothing half-built: a format is held whole or not at all */
    for (int i = 0; i < n; i++) rt_tensor_free(parts[i].t);
  free(deg[0]);
  free(deg[1]);
  return s;
}

RtStatus rt_devgraph_load(RtDevGraph *dg, unsigned formats, Diag *d) {
  for (int f = 0; f < RT_FMT_COUNT; f++) {
    if (!(formats & RT_FMT_BIT(f)) || (dg->loaded & RT_FMT_BIT(f))) continue;
    RtStatus s = load_format(dg, (RtGraphFormat)f, d);
    if (s) {
      ir_note(d, no_loc, "while putting the %s format of graph %s on the GPU",
              rt_graph_format_name((RtGraphFormat)f),
              dg->host->name ? dg->host->name : "(unnamed)");
      return s;
    }
    dg->loaded |= RT_FMT_BIT(f);
  }
  return RT_OK;
}

size_t rt_devgraph_bytes(const RtDevGraph *dg, RtGraphFormat f) {
  if ((unsigned)f >= RT_FMT_COUNT || !(dg->loaded & RT_FMT_BIT(f))) return 0;
  Part parts[3];
  /* parts_of only takes addresses; it does not change the graph */
  int n = parts_of((RtDevGraph *)dg, f, parts);
  size_t bytes = 0;
  for (int i = 0; i < n; i++) bytes += parts[i].t->bytes;
  return bytes;
}

void rt_devgraph_print(FILE *out, const RtDevGraph *dg) {
  char buf[32];
  size_t total = 0;
  fprintf(out, "device graph %s: |V| = %d, |E| = %lld, %d-bit indices\n",
          dg->host && dg->host->name ? dg->host->name : "(unnamed)", dg->nv,
          (long long)dg->ne, dg->index_bits);
  for (int f = 0; f < RT_FMT_COUNT; f++) {
    if (!(dg->loaded & RT_FMT_BIT(f))) continue;
    size_t b = rt_devgraph_bytes(dg, (RtGraphFormat)f);
    total += b;
    fprintf(out, "  %-4s %s\n", rt_graph_format_name((RtGraphFormat)f),
            rt_format_bytes(b, buf));
  }
  fprintf(out, "  total %s\n", rt_format_bytes(total, buf));
}

void rt_devgraph_free(RtDevGraph *dg) {
  for (int f = 0; f < RT_FMT_COUNT; f++) {
    Part parts[3];
    int n = parts_of(dg, (RtGraphFormat)f, parts);
    for (int i = 0; i < n; i++) drop(dg, parts[i].t);
  }
  dg->loaded = 0;
}

/* ---- neighbour-group tables ---- */

static void devgroups_free(struct RtDevGroups *x) {
  if (x->own) { /* the builder's memory: forgotten, not freed */
    free(x->own);
    memset(x, 0, sizeof *x);
    return;
  }
  rt_tensor_free(&x->dst);
  rt_tensor_free(&x->first);
  rt_tensor_free(&x->end);
  rt_tensor_free(&x->unowned);
  rt_tensor_free(&x->vptr);
  rt_tensor_free(&x->vrow);
  rt_tensor_free(&x->own_row);
  rt_tensor_free(&x->pair_src);
  rt_tensor_free(&x->pair_mask);
  rt_tensor_free(&x->pair_pos);
  memset(x, 0, sizeof *x);
}

void rt_devgraph_groups_free(RtDevGraph *dg) {
  for (int i = 0; i < dg->ngroups; i++) devgroups_free(&dg->groups[i]);
  dg->ngroups = 0;
  dg->groups_gen++;
}

/* Least recently used first: a table found moves to the end, so that
 * the one dropped for a fifth is never one that an earlier kernel of the
 * launches being prepared has just taken. (Dropping the oldest upload
 * instead freed, in a program of two tables — an interleaved groups
 * stage and the plain table whose unowned(G) list its row stages walk —
 * the table its first kernel had taken, once four others were cached:
 * the GPU suite met NaN rows and an illegal address on 2026-11-27.)
 * Moving an entry frees nothing, so prepared launches keep their
 * addresses and groups_gen stays. Returns entry i, now the last. */
static struct RtDevGroups *touch(RtDevGraph *dg, int i) {
  struct RtDevGroups hit = dg->groups[i];
  memmove(&dg->groups[i], &dg->groups[i + 1],
          sizeof dg->groups[0] * (size_t)(dg->ngroups - 1 - i));
  dg->groups[dg->ngroups - 1] = hit;
  return &dg->groups[dg->ngroups - 1];
}

/* An empty entry for a new table, the least recently used dropped when
 * all four are taken. */
static struct RtDevGroups *free_slot(RtDevGraph *dg) {
  enum { MAX = sizeof dg->groups / sizeof dg->groups[0] };
  if (dg->ngroups == MAX) {
    devgroups_free(&dg->groups[0]);
    dg->groups_gen++; /* prepared launches holding its addresses redo theirs */
    memmove(&dg->groups[0], &dg->groups[1], sizeof dg->groups[0] * (MAX - 1));
    memset(&dg->groups[MAX - 1], 0, sizeof dg->groups[0]);
    dg->ngroups--;
  }
  return &dg->groups[dg->ngroups];
}

/* Uploads the n parts of table entry x; on a failure frees what x holds
 * and returns the failure's status after reporting. */
static RtStatus upload_parts(const RtDevGraph *dg, struct RtDevGroups *x, const Part *parts,
                             size_t n, Diag *d) {
  for (size_t i = 0; i < n; i++) {
    RtStatus s = upload_part(dg, &parts[i], d);
    if (s != RT_OK) {
      devgroups_free(x);
      return s;
    }
  }
  return RT_OK;
}

/* A device tensor on the builder's memory (RtDevGroups.own). */
static RtStatus adopt_table_part(RtDevTensor *t, RtDevPtr p, size_t bytes, const char *name,
                                 Diag *d) {
  char what[96];
  snprintf(what, sizeof what, "the group table's %s", name);
  if (bytes && !p) {
    ir_error(d, no_loc, "%s: NULL device pointer for %zu bytes", what, bytes);
    return RT_ERR;
  }
  if (bytes && rt_pointer_check(p, bytes, what, d) != RT_OK) return RT_ERR;
  t->ptr = p;
  t->bytes = bytes;
  t->epoch = rt_cuda_epoch();
  snprintf(t->name, sizeof t->name, "graph %s", name);
  return RT_OK;
}

/* The table of a graph built on the device: asked of its builder once,
 * checked (sizes in range, device memory large enough) and kept. */
static const struct RtDevGroups *device_groups(RtDevGraph *dg, int G, int ilv, int ncls,
                                               int thr, Diag *d) {
  const Graph *g = dg->host;
  if (!graph_groups_valid(G, ilv, ncls, thr, d)) return NULL;
  int32_t t_res = ilv && ncls == 2 ? graph_groups_threshold(g, thr) : 0;
  for (int i = 0; i < dg->ngroups; i++) {
    const GraphGroups *t = dg->groups[i].host;
    if (t->G == G && t->ilv == ilv && t->ncls == ncls && t->thr == t_res) return touch(dg, i);
  }
  const char *name = g->name ? g->name : "the graph";
  if (!dg->groups_build) {
    ir_error(d, no_loc, "neighbour groups of size %d: %s was built on the device and has "
             "no builder of group tables (gop_graph_set_group_builder; gop.Graph."
             "from_edge_index gives one): use a schedule without neighbour groups on it, "
             "or build it on the host (docs/graph-format.md)", G, name);
    return NULL;
  }
  GraphGroups *t = calloc(1, sizeof *t);
  if (!t) {
    ir_error(d, no_loc, "out of host memory for a group table of %s", name);
    return NULL;
  }
  *t = (GraphGroups){.G = G, .ilv = ilv, .ncls = ncls, .thr = t_res,
                     .order = GRAPH_GROUPS_DST, .asked = GRAPH_GROUPS_DST};
  RtDevPtr p[6] = {0};
  if (dg->groups_build(dg->groups_user, dg, t, p, d) != RT_OK) {
    ir_note(d, no_loc, "while building the neighbour-group table (G %d, distance %d, %d "
            "classes) of %s on the device", G, ilv, ncls, name);
    free(t);
    return NULL;
  }
  /* what comes back is the builder's: checked before a kernel reads it */
  int64_t maxrows = g->ne;
  if (t->n < 0 || t->n > maxrows || t->nunowned < 0 || t->nunowned > g->nv ||
      t->order != GRAPH_GROUPS_DST) {
    ir_error(d, no_loc, "the group table (G %d) built for %s has %lld rows and %d "
             "destinations unowned, in order %d: a graph of %d vertices and %lld edges has "
             "at most %lld rows, in destination order (0)", G, name, (long long)t->n,
             t->nunowned, t->order, g->nv, (long long)g->ne, (long long)maxrows);
    free(t);
    return NULL;
  }
  size_t ib = (size_t)dg->index_bits / 8, rows = (size_t)t->n, nv = (size_t)g->nv;
  struct RtDevGroups *x = free_slot(dg);
  memset(x, 0, sizeof *x);
  if (adopt_table_part(&x->dst, p[0], 4 * rows, "grp_dst", d) != RT_OK ||
      adopt_table_part(&x->first, p[1], ib * rows, "grp_first", d) != RT_OK ||
      adopt_table_part(&x->end, p[2], ib * rows, "grp_end", d) != RT_OK ||
      adopt_table_part(&x->unowned, p[3], 4 * (size_t)t->nunowned, "grp_unowned", d) !=
          RT_OK ||
      adopt_table_part(&x->vptr, p[4], ib * (nv + 1), "grp_vptr", d) != RT_OK ||
      adopt_table_part(&x->vrow, p[5], ib * rows, "grp_vrow", d) != RT_OK) {
    memset(x, 0, sizeof *x);
    free(t);
    return NULL;
  }
  /* as graph_groups counts them, at 32-bit indices */
  int64_t cnt = t->n > 0 ? t->n : 1;
  t->bytes = (cnt * 3 + (t->nunowned > 0 ? t->nunowned : 1)) * (int64_t)sizeof(int32_t);
  t->seg_bytes = ((int64_t)g->nv + 1 + cnt) * (int64_t)sizeof(int32_t);
  x->host = x->own = t;
  dg->ngroups++;
  return x;
}

const struct RtDevGroups *rt_devgraph_groups(RtDevGraph *dg, int G, int ilv,
                                             int ncls, int thr, Diag *d) {
  if (dg->host->device_only) return device_groups(dg, G, ilv, ncls, thr, d);
  const GraphGroups *t = graph_groups(dg->host, G, ilv, ncls, thr, d);
  if (!t) return NULL;
  for (int i = 0; i < dg->ngroups; i++)
    if (dg->groups[i].host == t) return touch(dg, i);
  struct RtDevGroups *x = free_slot(dg);
  int64_t rows = t->n > 0 ? t->n : 1;
  /* CSR positions (wide) in the graph's index width, like its offsets */
  const Part parts[] = {
      {&x->dst, t->dst, rows, "graph grp_dst", false},
      {&x->first, t->first, rows, "graph grp_first", true},
      {&x->end, t->end, rows, "graph grp_end", true},
      {&x->unowned, t->unowned, t->nunowned > 0 ? t->nunowned : 1, "graph grp_unowned", false},
  };
  if (upload_parts(dg, x, parts, sizeof parts / sizeof parts[0], d) != RT_OK) return NULL;
  x->host = t;
  dg->ngroups++;
  return x;
}

const struct RtDevGroups *rt_devgraph_panels(RtDevGraph *dg, int G, int P, Diag *d) {
  const Graph *g = dg->host;
  if (g->device_only) {
    ir_error(d, no_loc, "panels of %d destinations: %s was built on the device, and "
             "panel tables are cut from a graph's CSR on the host (graph/panels.c): use "
             "a schedule without panel(), or build the graph on the host", P,
             g->name ? g->name : "the graph");
    return NULL;
  }
  const GraphPanels *t = graph_panels(g, G, P, d);
  if (!t) return NULL;
  for (int i = 0; i < dg->ngroups; i++)
    if (dg->groups[i].panels == t) return touch(dg, i);
  struct RtDevGroups *x = free_slot(dg);
  int64_t rows = t->n > 0 ? t->n : 1, pairs = t->npairs > 0 ? t->npairs : 1;
  /* int32 by row, by pair and the list; pair indices and CSR positions
   * (wide) in the graph's index width */
  const Part parts[] = {
      {&x->dst, t->dst, rows, "graph panel dst", false},
      {&x->first, t->first, rows, "graph panel first", true},
      {&x->end, t->end, rows, "graph panel end", true},
      {&x->own_row, t->own, rows, "graph panel own", false},
      {&x->unowned, t->unowned, t->nunowned > 0 ? t->nunowned : 1, "graph panel unowned", false},
      {&x->pair_src, t->src, pairs, "graph pair_src", false},
      {&x->pair_mask, t->mask, pairs, "graph pair_mask", false},
      {&x->pair_pos, t->pos, pairs * t->P, "graph pair_pos", true},
  };
  if (upload_parts(dg, x, parts, sizeof parts / sizeof parts[0], d) != RT_OK) return NULL;
  x->host = &t->rows;
  x->panels = t;
  dg->ngroups++;
  return x;
}

const struct RtDevGroups *rt_devgraph_group_rows(RtDevGraph *dg, int G,
                                                 int ilv, int ncls, int thr,
                                                 Diag *d) {
  const struct RtDevGroups *c = rt_devgraph_groups(dg, G, ilv, ncls, thr, d);
  if (!c || c->vptr.ptr) return c;
  struct RtDevGroups *x = (struct RtDevGroups *)c; /* one of dg->groups */
  const GraphGroups *t = x->host;
  /* row numbers, in the graph's index width */
  Part vptr = {&x->vptr, t->vptr, (int64_t)dg->host->nv + 1, "graph grp_vptr", true};
  Part vrow = {&x->vrow, t->vrow, t->n > 0 ? t->n : 1, "graph grp_vrow", true};
  RtStatus s;
  if ((s = upload_part(dg, &vptr, d)) != RT_OK || (s = upload_part(dg, &vrow, d)) != RT_OK) {
    rt_tensor_free(&x->vptr);
    rt_tensor_free(&x->vrow);
    return NULL;
  }
  return x;
}
