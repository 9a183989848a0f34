/* api/partition.c: graphs split over parts, and operators run on the parts
 * (include/gop.h, "partitions"; docs/multigpu.md).
 *
 * gop_graph_partition splits a graph's destinations over P parts
 * (graph/partition.c); gop_partition_graph gives part k as a graph of its
 * own, its vertices numbered own rows first, then its halo. A multi-GPU run
 * (python/gop/distributed.py) puts part k on GPU k and brings the halo rows
 * over before the kernels read them. gop_run_exec_partitioned is that run
 * simulated on the reference interpreter in one process: each part's
 * inputs are gathered from the caller's whole tensors (the halo exchange,
 * in memory), the operator runs on every part's graph, and the parts'
 * outputs are put back, so that CI checks with no GPU that a partitioned
 * run computes what the unpartitioned operator computes.
 *
 * What may run on parts: an operator whose every output row is produced by
 * the edges of one destination. A part holds all in-edges of its own
 * vertices but only some out-edges of a source, and |V|, |E| are its own,
 * so an operator that reads out_degree, num_vertices or num_edges is
 * refused; so is an output on the sources (src) unless every store into it
 * adds (a gradient's adjoint: each part adds its edges' share, and the
 * shares are summed, as the reverse halo exchange does), and a dense
 * output (a reduction over the whole graph).
 */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "api/api.h"

struct GopPartition {
  GopContext *ctx;
  const GopGraph *graph;
  GraphPartition *rt;
  GopGraph **parts; /* part graphs, made on first use (the context owns them) */
};

const char *gop_partition_method_problem(const char *method) {
  GraphPartMethod m;
  return graph_partition_method_problem(method, &m);
}

GopPartition *gop_graph_partition(GopContext *ctx, const GopGraph *g, int parts,
                                  const char *method) {
  if (!g) {
    ir_error(&ctx->diag, api_loc, "gop_graph_partition: the graph is NULL");
    return NULL;
  }
  if (!api_host_graph(ctx, g, "gop_graph_partition")) return NULL;
  GraphPartMethod m = GRAPH_PART_EDGES;
  const char *why = method ? graph_partition_method_problem(method, &m) : NULL;
  if (why) {
    ir_error(&ctx->diag, api_loc, "gop_graph_partition: '%s': %s", method, why);
    return NULL;
  }
  if (g->rt->perm) {
    ir_error(&ctx->diag, api_loc,
             "gop_graph_partition: %s is reordered (by %s): runs on it take tensors in the "
             "original order, which its parts would not; partition the graph itself",
             g->rt->name, g->rt->perm->method);
    return NULL;
  }
  GraphPartition *rt = graph_partition(g->rt, parts, m, &ctx->diag);
  if (!rt) return NULL;
  GopPartition *p = calloc(1, sizeof *p);
  if (p) p->parts = calloc((size_t)parts, sizeof(GopGraph *));
  if (!p || !p->parts) {
    free(p);
    graph_partition_free(rt);
    ir_error(&ctx->diag, api_loc, "out of memory");
    return NULL;
  }
  p->ctx = ctx;
  p->graph = g;
  p->rt = rt;
  return p;
}

void gop_partition_free(GopPartition *p) {
  if (!p) return;
  graph_partition_free(p->rt);
  free(p->parts);
  free(p);
}

int gop_partition_parts(const GopPartition *p) { return p->rt->parts; }

int64_t gop_partition_cut(const GopPartition *p) { return p->rt->cut; }

const int32_t *gop_partition_owner(const GopPartition *p) { return p->rt->owner; }

void gop_partition_print(const GopPartition *p, FILE *out) {
  graph_partition_print(out, p->graph->rt, p->rt);
}

int gop_partition_part(const GopPartition *p, int k, GopPartInfo *out) {
  if (k < 0 || k >= p->rt->parts) {
    ir_error(&p->ctx->diag, api_loc, "gop_partition_part: no part %d (parts 0..%d)", k,
             p->rt->parts - 1);
    return -1;
  }
  const GraphPart *pt = &p->rt->part[k];
  *out = (GopPartInfo){.num_own = pt->nown,
                       .num_halo = pt->nhalo,
                       .num_edges = pt->ne,
                       .num_remote_edges = pt->ne_remote,
                       .rows = pt->rows,
                       .eids = pt->eids,
                       .halo_from = pt->halo_from};
  return 0;
}

GopGraph *gop_partition_graph(const GopPartition *p, int k) {
  if (k < 0 || k >= p->rt->parts) {
    ir_error(&p->ctx->diag, api_loc, "gop_partition_graph: no part %d (parts 0..%d)", k,
             p->rt->parts - 1);
    return NULL;
  }
  if (!p->parts[k]) {
    Graph *rt = graph_partition_graph(p->graph->rt, p->rt, k, &p->ctx->diag);
    if (!rt) return NULL;
    p->parts[k] = api_adopt_graph(p->ctx, rt);
  }
  return p->parts[k];
}

/* ---- running on the parts (the interpreter) ---- */

/* Records the first node reading a value a part does not see whole. */
static bool whole_graph_value(const IrNode *n, void *ctx) {
  if (n->kind != IR_OUTDEG && n->kind != IR_NV && n->kind != IR_NE) return false;
  *(const IrNode **)ctx = n;
  return true;
}

typedef struct StoreInto {
  const IrTensor *t;
  const IrNode *bad; /* a store into t that does not add */
} StoreInto;

static bool non_adding_store(const IrNode *n, void *ctx) {
  StoreInto *s = ctx;
  if (n->kind == IR_STORE && n->acc.tensor == s->t && n->acc.red != IR_RED_ADD) {
    s->bad = n;
    return true;
  }
  return false;
}

static const char *domain_name(IrDomain d) {
  switch (d) {
  case IR_DOM_SRC: return "src";
  case IR_DOM_DST: return "dst";
  case IR_DOM_EDGE: return "edge";
  case IR_DOM_DENSE: return "dense";
  default: return "groups";
  }
}

/* Whether `op` may run on parts; reports why not at the construct. */
static bool partitionable(GopContext *ctx, const IrOp *op) {
  const IrNode *n = NULL;
  if (ir_any(op->body, whole_graph_value, &n)) {
    ir_error(&ctx->diag, n->loc,
             "operator %s reads %s, which a part of a partitioned graph does not see "
             "whole (a part holds the in-edges of its own vertices only)",
             op->name, n->kind == IR_OUTDEG ? "out_degree" : n->kind == IR_NV
                                                             ? "num_vertices"
                                                             : "num_edges");
    return false;
  }
  for (int i = 0; i < op->ntensors; i++) {
    const IrTensor *t = op->tensors[i];
    if (t->role == IR_ROLE_TEMP) continue;
    if (t->domain == IR_DOM_GROUPS || (t->role == IR_ROLE_OUT && t->domain == IR_DOM_DENSE)) {
      ir_error(&ctx->diag, t->loc,
               "operator %s: %s %s is on the %s domain, which parts do not split (outputs "
               "on dst, edge or src are split)",
               op->name, t->role == IR_ROLE_OUT ? "output" : "input", t->name,
               domain_name(t->domain));
      return false;
    }
    if (t->role == IR_ROLE_OUT && t->domain == IR_DOM_SRC) {
      StoreInto s = {.t = t};
      if (ir_any(op->body, non_adding_store, &s)) {
        ir_error(&ctx->diag, s.bad->loc,
                 "operator %s: output %s is on the sources, and this store does not add "
                 "(+=): parts hold only some out-edges of a source, so their shares can be "
                 "combined only by adding",
                 op->name, t->name);
        return false;
      }
    }
  }
  return true;
}

/* Copies rows `rows[0..n)` (NULL: 0..n-1) of `from` into `to`, `row` bytes
 * each; gather: to[i] = from[rows[i]], else to[rows[i]] = from[i]. */
static void move_rows(char *to, const char *from, int64_t n, size_t row, const int32_t *rows32,
                      const int64_t *rows64, bool gather) {
  for (int64_t i = 0; i < n; i++) {
    int64_t r = rows32 ? rows32[i] : rows64[i];
    if (gather)
      memcpy(to + (size_t)i * row, from + (size_t)r * row, row);
    else
      memcpy(to + (size_t)r * row, from + (size_t)i * row, row);
  }
}

static void add_rows(void *to, const void *from, const int32_t *rows, int64_t n, int64_t width,
                     IrDType dt) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < width; j++) {
      int64_t a = (int64_t)rows[i] * width + j, b = i * width + j;
      if (dt == IR_DT_F64)
        ((double *)to)[a] += ((const double *)from)[b];
      else
        ((float *)to)[a] += ((const float *)from)[b];
    }
}

int gop_run_exec_partitioned(GopRun *r, const GopPartition *p) {
  GopContext *ctx = r->ctx;
  const IrOp *op = r->op->ir;
  if (!p || p->graph != r->graph) {
    ir_error(&ctx->diag, api_loc, "gop_run_exec_partitioned: %s",
             p ? "the partition is of another graph than the run's" : "the partition is NULL");
    return -1;
  }
  if (!partitionable(ctx, op)) return -1;
  int nt = gop_run_num_tensors(r);
  for (int i = 0; i < op->nsyms; i++)
    if (!r->ext_set[i]) {
      ir_error(&ctx->diag, api_loc, "extent %s is not set", op->syms[i]->name);
      return -1;
    }
  for (int i = 0; i < nt; i++) {
    const IrTensor *t = op->tensors[i];
    if (!r->data[i]) {
      ir_error(&ctx->diag, api_loc, "tensor %s is not bound (partitioned runs take host "
               "arrays: gop_run_bind)", t->name);
      return -1;
    }
    if (t->role == IR_ROLE_OUT && t->domain == IR_DOM_SRC && t->dtype != IR_DT_F32 &&
        t->dtype != IR_DT_F64) {
      ir_error(&ctx->diag, t->loc, "output %s: shares on the sources are added in f32 or "
               "f64 only, and it is %s", t->name, ir_dtype_name(t->dtype));
      return -1;
    }
  }
  /* outputs on the sources start at zero: every part adds its share */
  for (int i = 0; i < nt; i++) {
    const IrTensor *t = op->tensors[i];
    if (t->role == IR_ROLE_OUT && t->domain == IR_DOM_SRC)
      memset(r->data[i], 0, (size_t)r->numel[i] * (size_t)ir_dtype_bytes(t->dtype));
  }
  void **buf = calloc((size_t)nt, sizeof(void *));
  if (!buf) {
    ir_error(&ctx->diag, api_loc, "out of memory");
    return -1;
  }
  int status = -1;
  GopCompileOptions o = {.schedule = r->schedule, .target = r->target};
  for (int k = 0; k < p->rt->parts; k++) {
    const GraphPart *pt = &p->rt->part[k];
    GopGraph *pg = gop_partition_graph(p, k);
    if (!pg) goto done;
    GopRun *s = gop_run_new(ctx, r->op, pg);
    if (!s) goto done;
    gop_run_set_device(s, GOP_DEVICE_INTERP);
    if ((r->schedule || r->target) && gop_run_set_compile(s, &o) != 0) goto done;
    for (int i = 0; i < op->nsyms; i++)
      if (gop_run_set_extent(s, op->syms[i]->name, r->ext.value[i]) != 0) goto done;
    for (int i = 0; i < nt; i++) {
      const IrTensor *t = op->tensors[i];
      int64_t numel = graph_tensor_numel(t, pg->rt, &s->ext);
      size_t el = (size_t)ir_dtype_bytes(t->dtype);
      int64_t rows = t->domain == IR_DOM_DENSE ? 1
                                                : t->domain == IR_DOM_EDGE ? pt->ne
                                                                           : pt->nown + pt->nhalo;
      size_t row = rows ? (size_t)(numel / rows) * el : 0;
      free(buf[i]);
      buf[i] = malloc((size_t)numel * el + 1);
      if (!buf[i]) {
        ir_error(&ctx->diag, api_loc, "out of memory");
        goto done;
      }
      if (t->role == IR_ROLE_IN) { /* the halo exchange, in memory */
        if (t->domain == IR_DOM_DENSE)
          memcpy(buf[i], r->data[i], (size_t)numel * el);
        else if (t->domain == IR_DOM_EDGE)
          move_rows(buf[i], r->data[i], pt->ne, row, NULL, pt->eids, true);
        else
          move_rows(buf[i], r->data[i], rows, row, pt->rows, NULL, true);
      }
      if (gop_run_bind(s, t->name, buf[i], numel) != 0) goto done;
    }
    if (gop_run_exec(s) != 0) goto done;
    for (int i = 0; i < nt; i++) {
      const IrTensor *t = op->tensors[i];
      if (t->role != IR_ROLE_OUT) continue;
      size_t el = (size_t)ir_dtype_bytes(t->dtype);
      int64_t numel = graph_tensor_numel(t, pg->rt, &s->ext);
      int64_t rows = t->domain == IR_DOM_EDGE ? pt->ne : pt->nown + pt->nhalo;
      int64_t width = rows ? numel / rows : 0;
      if (t->domain == IR_DOM_EDGE)
        move_rows(r->data[i], buf[i], pt->ne, (size_t)width * el, NULL, pt->eids, false);
      else if (t->domain == IR_DOM_DST) /* its own rows; halo rows are others' */
        move_rows(r->data[i], buf[i], pt->nown, (size_t)width * el, pt->rows, NULL, false);
      else /* src: this part's share of its own and halo rows */
        add_rows(r->data[i], buf[i], pt->rows, rows, width, t->dtype);
    }
  }
  status = 0;
done:
  for (int i = 0; i < nt; i++) free(buf[i]);
  free(buf);
  return status;
}
