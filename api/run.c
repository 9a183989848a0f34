/* api/run.c: graphs, runs and arrays.
 *
 * A run binds an operator to a graph, extents and caller buffers, and
 * executes it on the GPU (runtime/exec.c) or on the reference interpreter;
 * gop_run_check recomputes on the interpreter and compares. On a reordered
 * graph (gop_graph_reorder) the caller's buffers stay in the original
 * numbering: vertex and edge tensors are permuted into scratch buffers
 * before the kernels and the outputs permuted back after them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "lang/lang.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "runtime/runtime.h"

#include "api/api.h"

/* ---- graphs ---- */

GopGraph *gop_graph_open(GopContext *ctx, const char *spec) {
  API_LOCK(ctx);
  if (!spec || !*spec) {
    ir_error(&ctx->diag, api_loc, "gop_graph_open: empty graph spec");
    return NULL;
  }
  Graph *rt = graph_open(spec, &ctx->diag);
  if (!rt) return NULL;
  GopGraph *g = calloc(1, sizeof *g);
  if (!g) {
    graph_free(rt);
    return NULL;
  }
  g->rt = rt;
  g->next = ctx->graphs;
  ctx->graphs = g;
  return g;
}

void gop_graph_info(const GopGraph *g, GopGraphInfo *info) {
  const Graph *r = g->rt;
  *info = (GopGraphInfo){
      .num_vertices = r->nv,
      .num_edges = r->ne,
      .degree_mean = r->stats.deg_mean,
      .in_degree_std = r->stats.in_deg_std,
      .in_degree_max = r->stats.in_deg_max,
      .out_degree_max = r->stats.out_deg_max,
      .isolated = r->stats.isolated,
      .self_loops = r->stats.self_loops,
      .aes = r->stats.aes,
      .locality = r->stats.locality,
      .csr_edges = r->csr_edges,
  };
}

void gop_graph_print(const GopGraph *g, FILE *out) { graph_print_stats(out, g->rt); }

int gop_graph_free(GopContext *ctx, GopGraph *g) {
  if (!g) return 0;
  API_LOCK(ctx);
  int runs = 0;
  for (const GopRun *r = ctx->runs; r; r = r->next) runs += r->graph == g;
  if (runs) {
    ir_error(&ctx->diag, api_loc,
             "gop_graph_free: %d run%s on this graph still exist%s: free %s first (gop_run_free)",
             runs, runs == 1 ? "" : "s", runs == 1 ? "s" : "", runs == 1 ? "it" : "them");
    return -1;
  }
  GopGraph **at = &ctx->graphs;
  while (*at && *at != g) at = &(*at)->next;
  if (!*at) {
    ir_error(&ctx->diag, api_loc, "gop_graph_free: the graph is not this context's");
    return -1;
  }
  for (const GopGraph *o = ctx->graphs; o; o = o->next)
    if (o->reversed == g) {
      ir_error(&ctx->diag, api_loc, "gop_graph_free: this graph is the reversed graph of %s: "
               "free that one first, or take it away (gop_graph_set_reversed(ctx, g, NULL))",
               o->rt->name ? o->rt->name : "another graph");
      return -1;
    }
  *at = g->next;
  api_graph_free_device(g); /* its device copies and group tables */
  graph_free(g->rt); /* and a host-copy run's cached copy (Graph.on_free) */
  free(g);
  return 0;
}

GopGraph *api_adopt_graph(GopContext *ctx, Graph *rt) {
  GopGraph *g = calloc(1, sizeof *g);
  if (!g) {
    graph_free(rt);
    ir_error(&ctx->diag, api_loc, "out of memory");
    return NULL;
  }
  g->rt = rt;
  g->next = ctx->graphs;
  ctx->graphs = g;
  return g;
}

bool api_host_graph(GopContext *ctx, const GopGraph *g, const char *what) {
  if (!g->rt->device_only) return true;
  ir_error(&ctx->diag, api_loc, "%s needs the arcs on the host, but %s was built on the "
           "device (gop_graph_from_device) and lives only there", what,
           g->rt->name ? g->rt->name : "the graph");
  return false;
}

GopGraph *gop_graph_reorder(GopContext *ctx, const GopGraph *g, const char *method) {
  API_LOCK(ctx);
  if (!g) {
    ir_error(&ctx->diag, api_loc, "gop_graph_reorder: the graph is NULL");
    return NULL;
  }
  if (!api_host_graph(ctx, g, "gop_graph_reorder")) return NULL;
  const char *why = graph_order_problem(method, NULL);
  if (why) { /* with the API's location */
    ir_error(&ctx->diag, api_loc, "gop_graph_reorder: '%s': %s", method ? method : "", why);
    return NULL;
  }
  Graph *rt = graph_reorder(g->rt, method, &ctx->diag);
  return rt ? api_adopt_graph(ctx, rt) : NULL;
}

const char *gop_reorder_method_problem(const char *method) {
  return graph_order_problem(method, NULL);
}

const char *gop_graph_order(const GopGraph *g) {
  return g->rt->perm ? g->rt->perm->method : NULL;
}

long gop_graph_permutation(const GopGraph *g, const int32_t **new_of_old,
                           const int64_t **edge_old) {
  const GraphPerm *p = g->rt->perm;
  if (new_of_old) *new_of_old = p ? p->new_of_old : NULL;
  if (edge_old) *edge_old = p ? p->edge_old : NULL;
  return p ? g->rt->nv : -1;
}

double gop_graph_reorder_seconds(const GopGraph *g) {
  return g->rt->perm ? g->rt->perm->seconds : 0;
}

int gop_graph_write_mtx(GopContext *ctx, const GopGraph *g, const char *path) {
  API_LOCK(ctx);
  if (!path || !*path) {
    ir_error(&ctx->diag, api_loc, "gop_graph_write_mtx: empty path");
    return -1;
  }
  if (!api_host_graph(ctx, g, "gop_graph_write_mtx")) return -1;
  return graph_write_mtx(g->rt, path, &ctx->diag);
}

int gop_graph_write_gopg(GopContext *ctx, const GopGraph *g, const char *path) {
  if (!path || !*path) {
    ir_error(&ctx->diag, api_loc, "gop_graph_write_gopg: empty path");
    return -1;
  }
  if (!api_host_graph(ctx, g, "gop_graph_write_gopg")) return -1;
  return graph_write_gopg(g->rt, path, &ctx->diag);
}

/* ---- runs ---- */

static bool extents_set(const GopRun *r, const IrTensor *t, bool report);

GopRun *gop_run_new(GopContext *ctx, const GopOp *op, const GopGraph *g) {
  API_LOCK(ctx);
  if (!op || !g) {
    ir_error(&ctx->diag, api_loc, "gop_run_new: %s is NULL", op ? "graph" : "operator");
    return NULL;
  }
  const IrOp *ir = op->ir;
  if (ir->nsyms > (int)(sizeof ((IrExtents *)0)->value / sizeof(int64_t))) {
    ir_error(&ctx->diag, ir->loc, "operator %s has too many extents (%d)", ir->name,
             ir->nsyms);
    return NULL;
  }
  /* malloc'ed, not the arena's: a job that makes a run per step frees it
   * (gop_run_free) */
  GopRun *r = calloc(1, sizeof *r);
  if (!r) {
    ir_error(&ctx->diag, api_loc, "out of memory");
    return NULL;
  }
  r->ctx = ctx;
  r->op = op;
  r->graph = g;
  r->ext.n = ir->nsyms;
  size_t nt = (size_t)ir->ntensors + 1;
  r->ext_set = calloc((size_t)ir->nsyms + 1, sizeof *r->ext_set);
  r->data = calloc(nt, sizeof *r->data);
  r->numel = calloc(nt, sizeof *r->numel);
  r->dptr = calloc(nt, sizeof *r->dptr);
  r->dptr_checked = calloc(nt, sizeof *r->dptr_checked);
  r->dnumel = calloc(nt, sizeof *r->dnumel);
  if (!r->ext_set || !r->data || !r->numel || !r->dptr || !r->dptr_checked || !r->dnumel) {
    api_run_destroy(r);
    ir_error(&ctx->diag, api_loc, "out of memory");
    return NULL;
  }
  r->device = GOP_DEVICE_AUTO;
  r->warmup = 3;
  r->reps = 20;
  r->next = ctx->runs;
  ctx->runs = r;
  return r;
}

void api_run_destroy(GopRun *r) {
  rt_devexec_free(&r->dx);
  cg_program_free(&r->prog);
  free(r->ext_set);
  free(r->data);
  free(r->numel);
  free(r->dptr);
  free(r->dptr_checked);
  free(r->dnumel);
  free(r->schedule);
  free(r->target);
  ir_arena_free(r->arena);
  free(r);
}

void gop_run_free(GopRun *r) {
  if (!r) return;
  GopContext *ctx = r->ctx;
  API_LOCK(ctx);
  for (GopRun **at = &ctx->runs; *at; at = &(*at)->next)
    if (*at == r) {
      *at = r->next;
      api_run_destroy(r);
      return;
    }
  ir_error(&ctx->diag, api_loc, "gop_run_free: the run is not on its context's list");
}

void gop_run_set_device(GopRun *r, GopDevice dev) { r->device = dev; }
const GopOp *gop_run_op(const GopRun *r) { return r->op; }
const GopGraph *gop_run_graph(const GopRun *r) { return r->graph; }

int gop_run_set_compile(GopRun *r, const GopCompileOptions *o) {
  API_LOCK(r->ctx);
  if (r->from_pack) {
    ir_error(&r->ctx->diag, api_loc, "a kernel pack is already compiled: "
             "its schedule and target cannot change");
    return -1;
  }
  if (o && o->target && cg_target_check(o->target, &r->ctx->diag) != 0) return -1;
  char *schedule = o && o->schedule ? strdup(o->schedule) : NULL;
  char *target = o && o->target ? strdup(o->target) : NULL;
  if ((o && o->schedule && !schedule) || (o && o->target && !target)) {
    free(schedule);
    free(target);
    ir_error(&r->ctx->diag, api_loc, "out of memory");
    return -1;
  }
  free(r->schedule);
  free(r->target);
  r->schedule = schedule;
  r->target = target;
  if (r->have_prog) cg_program_free(&r->prog);
  r->have_prog = false;
  r->cached = NULL; /* a device run looks its kernels up again */
  r->lowered = NULL;
  ir_arena_free(r->arena); /* the old schedule's lowered copy */
  r->arena = NULL;
  return 0;
}

void gop_run_set_timing(GopRun *r, int warmup, int reps) {
  API_LOCK(r->ctx);
  r->warmup = warmup < 0 ? 0 : warmup;
  r->reps = reps < 0 ? 0 : reps;
}

GopRun *gop_run_from_pack(GopContext *ctx, const char *path, const GopGraph *g) {
  API_LOCK(ctx);
  CgProgram p = {0};
  if (!path || cg_pack_read(path, &p, &ctx->diag) != 0) return NULL;
  const char *file = ir_strdup(ctx->arena, path);
  IrModule *ir = p.ir ? lang_parse_ir(ctx->arena, &ctx->diag, file, ir_strdup(ctx->arena, p.ir))
                      : NULL;
  if (!ir || ir->nops != 1) {
    if (ir || !p.ir)
      ir_error(&ctx->diag, (Loc){file, 0, 0},
               "the kernel pack does not carry its operator's IR");
    cg_program_free(&p);
    return NULL;
  }
  GopModule *m = api_wrap_module(ctx, ir, file, NULL);
  const IrOp *op = ir->ops[0];
  /* The kernels name tensors and extents by id: the IR must agree. */
  bool same = p.ntensors >= op->ntensors && p.nsyms == op->nsyms;
  for (int i = 0; same && i < op->ntensors; i++) same = strcmp(p.tensors[i].name, op->tensors[i]->name) == 0;
  for (int i = 0; same && i < op->nsyms; i++) same = strcmp(p.syms[i], op->syms[i]->name) == 0;
  if (!same) {
    ir_error(&ctx->diag, (Loc){file, 0, 0},
             "the kernels of this pack do not match the operator it carries");
    cg_program_free(&p);
    return NULL;
  }
  /* a pack of the other index width is refused before anything runs */
  if (g && rt_check_layout(&p, g->rt, &ctx->diag) != RT_OK) {
    ir_note(&ctx->diag, (Loc){file, 0, 0}, "in this kernel pack");
    cg_program_free(&p);
    return NULL;
  }
  GopRun *r = gop_run_new(ctx, m->ops[0], g);
  if (!r) {
    cg_program_free(&p);
    return NULL;
  }
  r->prog = p;
  r->have_prog = r->from_pack = true;
  r->target = r->prog.target ? strdup(r->prog.target) : NULL;
  return r;
}

int gop_run_set_extent(GopRun *r, const char *sym, int64_t value) {
  API_LOCK(r->ctx);
  const IrOp *ir = r->op->ir;
  for (int i = 0; i < ir->nsyms; i++) {
    if (strcmp(ir->syms[i]->name, sym) != 0) continue;
    if (value <= 0 || value > (1 << 24)) {
      ir_error(&r->ctx->diag, api_loc,
               "extent %s = %lld is out of range (1 to 16777216)", sym,
               (long long)value);
      return -1;
    }
    int64_t was = r->ext.value[i];
    bool was_set = r->ext_set[i];
    r->ext.value[i] = value;
    r->ext_set[i] = true;
    /* every tensor the extents now size must fit in host memory, checked
     * before any caller allocates it */
    for (int k = 0; k < ir->ntensors; k++) {
      const IrTensor *t = ir->tensors[k];
      if (!extents_set(r, t, false)) continue;
      int64_t shape[IR_MAX_IDX], n = 1;
      int rank = graph_tensor_shape(t, r->graph->rt, &r->ext, shape);
      bool known = true;
      for (int j = 0; j < rank; j++) {
        known &= shape[j] >= 0;
        if (n >= 0 && shape[j] >= 0 && __builtin_mul_overflow(n, shape[j], &n)) n = -1;
      }
      if (!known) continue; /* a domain the graph has no table for yet */
      char what[200];
      snprintf(what, sizeof what, "extent %s = %lld makes tensor %s need", sym,
               (long long)value, t->name);
      if (!ir_limit_check(IR_LIMIT_HOST_BYTES, n < 0 ? -1 : ir_bytes_of(n, sizeof(float)),
                          &r->ctx->diag, api_loc, what)) {
        r->ext.value[i] = was;
        r->ext_set[i] = was_set;
        return -1;
      }
    }
    return 0;
  }
  ir_error(&r->ctx->diag, api_loc, "operator %s has no extent named '%s'",
           ir->name, sym);
  return -1;
}

/* The tensors a caller binds are the inputs and outputs, which come first
 * in IrOp.tensors. */
int gop_run_num_tensors(const GopRun *r) { return r->op->ir->ninputs + r->op->ir->noutputs; }

static const IrTensor *bindable(const GopRun *r, int i) {
  return i >= 0 && i < gop_run_num_tensors(r) ? r->op->ir->tensors[i] : NULL;
}

const char *gop_run_tensor_name(const GopRun *r, int i) {
  const IrTensor *t = bindable(r, i);
  return t ? t->name : NULL;
}

bool gop_run_tensor_is_output(const GopRun *r, int i) {
  const IrTensor *t = bindable(r, i);
  return t && t->role == IR_ROLE_OUT;
}

/* Reports the first extent of `t` that is still unset; true if all set. */
static bool extents_set(const GopRun *r, const IrTensor *t, bool report) {
  for (int d = 0; d < t->ndims; d++) {
    const IrSym *s = t->dims[d].sym;
    if (s && !r->ext_set[s->id]) {
      if (report)
        ir_error(&r->ctx->diag, api_loc,
                 "extent %s of tensor %s is not set (e.g. --%s 64)", s->name,
                 t->name, s->name);
      return false;
    }
  }
  return true;
}

int gop_run_tensor_shape(const GopRun *r, int i, int64_t shape[8]) {
  const IrTensor *t = bindable(r, i);
  if (!t || !extents_set(r, t, false)) return -1;
  int64_t s[IR_MAX_IDX];
  int rank = graph_tensor_shape(t, r->graph->rt, &r->ext, s);
  for (int k = 0; k < rank; k++) shape[k] = s[k];
  return rank;
}

const char *gop_run_tensor_dtype(const GopRun *r, int i) {
  const IrTensor *t = bindable(r, i);
  return t ? ir_dtype_name(t->dtype) : NULL;
}

int gop_run_bind(GopRun *r, const char *name, void *data, int64_t numel) {
  API_LOCK(r->ctx);
  const IrOp *ir = r->op->ir;
  for (int i = 0; i < gop_run_num_tensors(r); i++) {
    const IrTensor *t = ir->tensors[i];
    if (strcmp(t->name, name) != 0) continue;
    if (!extents_set(r, t, true)) return -1;
    int64_t want = graph_tensor_numel(t, r->graph->rt, &r->ext);
    /* an empty tensor may have no memory (torch's data_ptr() of an empty
     * tensor is 0): a placeholder no loop reads stands for it, as numpy's
     * empty arrays' pointers do */
    static _Alignas(16) char no_elements[16];
    if (!data && numel == 0 && want == 0) data = no_elements;
    if (numel != want || !data) {
      ir_error(&r->ctx->diag, api_loc,
               "tensor %s needs %lld elements on this graph, got %lld%s", name,
               (long long)want, (long long)numel, data ? "" : " (NULL data)");
      return -1;
    }
    r->data[i] = data;
    r->numel[i] = numel;
    return 0;
  }
  ir_error(&r->ctx->diag, api_loc, "operator %s has no input or output named '%s'",
           ir->name, name);
  return -1;
}

/* Checks that every extent is set and every input and output is bound
 * with its current shape. */
static int check_bound(GopRun *r) {
  const IrOp *ir = r->op->ir;
  for (int i = 0; i < ir->nsyms; i++)
    if (!r->ext_set[i]) {
      ir_error(&r->ctx->diag, api_loc, "extent %s is not set (e.g. --%s 64)",
               ir->syms[i]->name, ir->syms[i]->name);
      return -1;
    }
  for (int i = 0; i < gop_run_num_tensors(r); i++) {
    const IrTensor *t = ir->tensors[i];
    if (!r->data[i] || r->numel[i] != graph_tensor_numel(t, r->graph->rt, &r->ext)) {
      ir_error(&r->ctx->diag, api_loc, "%s %s is not bound%s",
               t->role == IR_ROLE_OUT ? "output" : "input", t->name,
               r->data[i] ? " with its current shape" : "");
      return -1;
    }
  }
  return 0;
}

/* ---- reordered graphs: the caller's numbering in, and back out ---- */

/* How tensor `t` moves between numberings: 'v' by vertex rows, 'e' by edge
 * rows, 0 not at all (dense tensors); -1 after reporting one that cannot
 * (a tensor on neighbour groups: its rows are the reordered graph's). */
static int permuted_by(GopRun *r, const IrTensor *t) {
  switch (t->domain) {
  case IR_DOM_SRC:
  case IR_DOM_DST: return 'v';
  case IR_DOM_EDGE: return 'e';
  case IR_DOM_DENSE:
  case IR_DOM_COUNT: return 0;
  case IR_DOM_GROUPS: break;
  }
  ir_error(&r->ctx->diag, api_loc,
           "tensor %s lives on neighbour groups, whose rows follow the graph's own "
           "numbering: it cannot be bound on a reordered graph", t->name);
  return -1;
}

/* Copies rows: to[map ? map[i] : i] = from[i], or (gather) to[i] =
 * from[map[i]], each row `w` bytes. */
/* `map` is int32 (vertices) or, with `map64`, int64 (edge ids). */
static void move_rows(void *to, const void *from, const void *map, bool map64, int64_t rows,
                      int64_t w, bool gather) {
  for (int64_t i = 0; i < rows; i++) {
    int64_t m = map64 ? ((const int64_t *)map)[i] : ((const int32_t *)map)[i];
    int64_t a = gather ? i : m, b = gather ? m : i;
    memcpy((char *)to + a * w, (const char *)from + b * w, (size_t)w);
  }
}

/* The buffers a run on the reordered graph sees: inputs permuted in,
 * outputs fresh; `user` itself when the graph is not reordered. NULL after
 * reporting. Free with unpermute. */
static void **permute_in(GopRun *r, void **user, int esize) {
  const Graph *g = r->graph->rt;
  if (!g->perm) return user;
  const IrOp *ir = r->op->ir;
  int n = gop_run_num_tensors(r);
  /* by tensor id, temporaries NULL, as r->data */
  void **in = calloc((size_t)ir->ntensors + 1, sizeof *in);
  if (!in) goto oom;
  for (int i = 0; i < n; i++) {
    const IrTensor *t = ir->tensors[i];
    int how = permuted_by(r, t);
    if (how < 0) goto fail;
    if (how == 0) {
      in[i] = user[i];
      continue;
    }
    int64_t rows = how == 'v' ? g->nv : g->ne;
    int64_t numel = graph_tensor_numel(t, g, &r->ext);
    int64_t es = esize ? esize : ir_dtype_bytes(t->dtype);
    in[i] = malloc((size_t)es * (size_t)(numel > 0 ? numel : 1));
    if (!in[i]) goto oom;
    if (t->role == IR_ROLE_OUT || rows == 0) continue;
    /* vertex v's row goes to new_of_old[v]; edge e here takes edge_old[e] */
    if (how == 'v')
      move_rows(in[i], user[i], g->perm->new_of_old, false, rows, numel / rows * es, false);
    else
      move_rows(in[i], user[i], g->perm->edge_old, true, rows, numel / rows * es, true);
  }
  return in;
oom:
  ir_error(&r->ctx->diag, api_loc, "out of memory permuting tensors for the reordered graph");
fail:
  if (in)
    for (int i = 0; i < n; i++)
      if (in[i] != user[i]) free(in[i]);
  free(in);
  return NULL;
}

/* Permutes the outputs of `in` back into `user` (if `ok`) and frees it. */
static void unpermute(GopRun *r, void **user, void **in, bool ok, int esize) {
  const Graph *g = r->graph->rt;
  if (in == user) return;
  const IrOp *ir = r->op->ir;
  int n = gop_run_num_tensors(r);
  for (int i = 0; i < n; i++) {
    if (in[i] == user[i]) continue;
    const IrTensor *t = ir->tensors[i];
    if (ok && t->role == IR_ROLE_OUT) {
      int how = t->domain == IR_DOM_EDGE ? 'e' : 'v';
      int64_t rows = how == 'v' ? g->nv : g->ne;
      int64_t numel = graph_tensor_numel(t, g, &r->ext);
      int64_t es = esize ? esize : ir_dtype_bytes(t->dtype);
      /* the row of vertex v is at new_of_old[v]; edge e here is edge_old[e] */
      if (rows > 0 && how == 'v')
        move_rows(user[i], in[i], g->perm->new_of_old, false, rows, numel / rows * es, true);
      else if (rows > 0)
        move_rows(user[i], in[i], g->perm->edge_old, true, rows, numel / rows * es, false);
    }
    free(in[i]);
  }
  free(in);
}

static int interpret(GopRun *r, void **data, InterpMode mode, InterpTerms *terms) {
  InterpArgs args = {
      .graph = r->graph->rt,
      .extents = r->ext,
      .mode = mode,
      .buffers = data,
      .terms = terms,
  };
  return interp_run(r->op->ir, &args, &r->ctx->diag);
}

/* Runs the operator as scheduled on the interpreter: the schedule is
 * applied and lowered exactly as for the GPU (so a schedule that `gopc
 * emit` refuses is refused here too), and the lowered IR is interpreted.
 * A pack's run interprets the operator it carries, as written. */
static int interpret_scheduled(GopRun *r, void **data) {
  GopRunStats *st = &r->stats;
  snprintf(st->device, sizeof st->device, "interpreter");
  if (r->from_pack) {
    snprintf(st->schedule, sizeof st->schedule, "none (the pack's operator as written)");
    return interpret(r, data, INTERP_NATIVE, NULL);
  }
  snprintf(st->schedule, sizeof st->schedule, "%s", r->schedule ? r->schedule : "default");
  if (!r->lowered) {
    GopCompileOptions o = {.schedule = r->schedule};
    if (!r->arena && !(r->arena = ir_arena_new())) {
      ir_error(&r->ctx->diag, api_loc, "out of memory");
      return -1;
    }
    r->lowered = api_schedule_op_in(r->op, &o, true, r->arena);
    if (!r->lowered) return -1;
    r->stats.compile = r->ctx->times;
  }
  /* Lowering may add temporaries after the bound tensors: the interpreter
   * allocates those (NULL here). malloc'ed, not the arena's: a run called
   * a million times must not grow the context. */
  void **buf = calloc((size_t)r->lowered->ntensors + 1, sizeof *buf);
  if (!buf) {
    ir_error(&r->ctx->diag, api_loc, "out of memory");
    return -1;
  }
  for (int i = 0; i < gop_run_num_tensors(r); i++) buf[i] = data[i];
  InterpArgs args = {
      .graph = r->graph->rt,
      .extents = r->ext,
      .mode = INTERP_NATIVE,
      .buffers = buf,
  };
  int rc = interp_run(r->lowered, &args, &r->ctx->diag);
  free(buf);
  return rc;
}

/* Opens the GPU for a run. On failure AUTO runs fall back to the
 * interpreter with a note; GPU runs report the driver's message. */
static RtStatus open_gpu(GopRun *r) {
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  RtStatus s = rt_cuda_open(&quiet);
  if (s != RT_OK) {
    const char *msg = rt_reason(&quiet, s); /* said again below */
    if (r->device == GOP_DEVICE_GPU) {
      ir_error(&r->ctx->diag, api_loc, "cannot run on the GPU: %s", msg);
    } else {
      size_t n = strcspn(msg, "\n");
      snprintf(r->stats.note, sizeof r->stats.note,
               "no GPU (%.*s): ran on the reference interpreter", (int)(n > 180 ? 180 : n), msg);
    }
  }
  ir_diag_free(&quiet);
  return s;
}

static int run_gpu(GopRun *r, void **data) {
  GopContext *ctx = r->ctx;
  if (!r->have_prog) {
    GopCompileOptions o = api_run_options(r);
    if (api_compile_op(r->op, &o, &r->prog) != 0) return -1;
    r->have_prog = true;
    r->stats.compile = ctx->times;
  }
  /* The program may hold temporaries the lowering added: bind by id
   * (malloc'ed: per call, so not the arena's). */
  void **host = calloc((size_t)r->prog.ntensors + 1, sizeof *host);
  if (!host) {
    ir_error(&ctx->diag, api_loc, "out of memory");
    return -1;
  }
  for (int i = 0; i < gop_run_num_tensors(r); i++) host[i] = data[i];
  /* timed as the benchmarks time: replays of a captured CUDA graph (with
   * events where a capture fails), so that short runs are not the host's */
  RtExecOptions opt = {.warmup = r->warmup, .reps = r->reps, .timing = RT_TIME_GRAPH,
                       .events_fallback = true};
  RtStatus s = rt_exec_program(&r->prog, r->graph->rt, r->ext.value, host, &opt, &r->exec,
                               &ctx->diag);
  free(host);
  if (s != RT_OK) {
    r->stats.gpu_status = s;
    return -1;
  }
  GopRunStats *st = &r->stats;
  st->on_gpu = true;
  snprintf(st->device, sizeof st->device, "%s", rt_cuda_device_name());
  snprintf(st->target, sizeof st->target, "%s", r->prog.target);
  snprintf(st->schedule, sizeof st->schedule, "%s",
           r->from_pack ? "from the kernel pack" : r->schedule ? r->schedule : "default");
  st->median_ms = r->exec.timing.median_ms;
  st->min_ms = r->exec.timing.min_ms;
  st->timed_calls = r->exec.timing.calls;
  if (r->exec.graph_failed)
    snprintf(st->note, sizeof st->note, "timed with events: the CUDA graph capture failed (%.200s)",
             r->exec.graph_note);
  st->fewest_bytes = r->exec.fewest_bytes;
  st->gbps = r->exec.gbps;
  st->copy_gbps = r->exec.copy_gbps;
  st->bound_fraction = st->copy_gbps > 0 ? st->gbps / st->copy_gbps : 0;
  return 0;
}

int gop_run_exec(GopRun *r) {
  API_LOCK(r->ctx);
  if (!api_host_graph(r->ctx, r->graph, "a run on host buffers (gop_run_exec)")) return -1;
  if (check_bound(r) != 0) return -1;
  GopCompileTimes keep = r->stats.compile;
  memset(&r->stats, 0, sizeof r->stats);
  r->stats.compile = keep;
  memset(&r->exec, 0, sizeof r->exec);
  double t0 = rt_wall_seconds();
  int rc;
  void **data = permute_in(r, r->data, 0);
  if (!data) return -1;
  RtStatus gpu = r->device == GOP_DEVICE_INTERP ? RT_ERR : open_gpu(r);
  if (r->device != GOP_DEVICE_INTERP && gpu == RT_OK) {
    rc = run_gpu(r, data);
  } else if (r->device == GOP_DEVICE_GPU) {
    r->stats.gpu_status = gpu;
    rc = -1;
  } else {
    rc = interpret_scheduled(r, data);
  }
  unpermute(r, r->data, data, rc == 0, 0);
  r->seconds = rt_wall_seconds() - t0;
  return rc;
}

const GopRunStats *gop_run_stats(const GopRun *r) { return &r->stats; }

void gop_run_print_memory(const GopRun *r, FILE *out) {
  if (r->stats.on_gpu) rt_exec_print_memory(out, &r->exec);
}

void gop_run_print_kernels(const GopRun *r, FILE *out) {
  if (r->stats.on_gpu) rt_exec_print_kernels(out, &r->exec);
}

/* The reduction that targets tensor `t` anywhere in `list`, or ASSIGN. */
static IrRed reduction_of(const IrNode *list, const IrTensor *t) {
  for (const IrNode *n = list; n; n = n->next) {
    if (n->kind == IR_STORE && n->acc.tensor == t && n->acc.red != IR_RED_ASSIGN)
      return n->acc.red;
    const IrNode *inner = n->kind == IR_LOOP ? n->loop.body : n->kind == IR_IF ? n->ifs.then : NULL;
    IrRed r = inner ? reduction_of(inner, t) : IR_RED_ASSIGN;
    if (r != IR_RED_ASSIGN) return r;
  }
  return IR_RED_ASSIGN;
}

/* Whether `op` is all f32 (its tensors and its accumulator). */
static bool all_f32(const IrOp *op) {
  for (int i = 0; i < op->ntensors; i++)
    if (op->tensors[i]->dtype != IR_DT_F32) return false;
  return op->acc == IR_DT_F32;
}

int gop_run_check(GopRun *r, double *worst) {
  API_LOCK(r->ctx);
  GopContext *ctx = r->ctx;
  const IrOp *ir = r->op->ir;
  if (worst) *worst = 0;
  if (check_bound(r) != 0) return -1;
  int n = gop_run_num_tensors(r);
  /* An all-f32 op is checked against the interpreter in f32, the rounding
   * the GPU does; any other against the f64 oracle run on the inputs as
   * they are (already rounded to their dtype), within the limit of each
   * output's dtype. */
  bool f64 = !all_f32(ir);
  /* malloc'ed, not the arena's: a check per step must not grow the context */
  size_t nt = (size_t)ir->ntensors + 1;
  void **ref = calloc(nt, sizeof *ref); /* by id: temporaries NULL */
  float **allow = calloc(nt, sizeof *allow);
  InterpTerms *terms = calloc(nt, sizeof *terms);
  if (!ref || !allow || !terms) {
    free(ref);
    free(allow);
    free(terms);
    ir_error(&ctx->diag, api_loc, "out of memory for the check");
    return -1;
  }
  int status = 0;
  for (int i = 0; i < n && status == 0; i++) {
    const IrTensor *t = ir->tensors[i];
    if (t->role != IR_ROLE_OUT && !f64) {
      ref[i] = r->data[i];
      continue;
    }
    size_t es = f64 ? sizeof(double) : (size_t)ir_dtype_bytes(t->dtype);
    ref[i] = malloc(es * (size_t)(r->numel[i] ? r->numel[i] : 1));
    if (!ref[i]) {
      ir_error(&ctx->diag, api_loc, "out of memory for the reference of %s", t->name);
      status = -1;
      break;
    }
    if (t->role != IR_ROLE_OUT)
      for (int64_t k = 0; k < r->numel[i]; k++)
        ((double *)ref[i])[k] = ir_elem_get(t->dtype, r->data[i], k);
  }
  /* the rounding allowance of each output element that is a sum, from the
   * interpreter's count and absolute sum of its terms (in the reordered
   * numbering, then moved back as the outputs are) */
  /* unpermute frees the reordered array: malloc'ed, not the arena's */
  float **allow_in = r->graph->rt->perm ? calloc((size_t)ir->ntensors + 1, sizeof(float *))
                                        : allow;
  if (!allow_in) {
    ir_error(&ctx->diag, api_loc, "out of memory for the check");
    allow_in = allow;
    status = -1;
  }
  /* the allowance is for sums the GPU adds in f32; an op that accumulates
   * in f64 gets f64's (u = 2^-53) */
  double acc_scale = ir->acc == IR_DT_F64 ? 0x1p-29 : 1;
  for (int i = 0; status == 0 && i < n; i++) {
    if (ir->tensors[i]->role != IR_ROLE_OUT) continue;
    size_t m = (size_t)(r->numel[i] ? r->numel[i] : 1);
    allow[i] = malloc(sizeof(float) * m);
    if (allow_in != allow) allow_in[i] = malloc(sizeof(float) * m);
    terms[i].n = malloc(sizeof(uint32_t) * m);
    terms[i].abs = malloc(sizeof(double) * m);
    if (!allow[i] || !allow_in[i] || !terms[i].n || !terms[i].abs) {
      ir_error(&ctx->diag, api_loc, "out of memory for the check of %s", ir->tensors[i]->name);
      status = -1;
    }
  }
  if (status == 0) {
    void **data = permute_in(r, ref, f64 ? 8 : 0);
    if (!data || interpret(r, data, f64 ? INTERP_F64 : INTERP_NATIVE, terms) != 0) status = -1;
    if (data) unpermute(r, ref, data, status == 0, f64 ? 8 : 0);
  }
  for (int i = 0; i < n; i++) {
    if (ir->tensors[i]->role != IR_ROLE_OUT) continue;
    for (int64_t k = 0; status == 0 && k < r->numel[i]; k++)
      allow_in[i][k] = (float)(acc_scale * interp_sum_allowance(terms[i].n[k], terms[i].abs[k]));
    free(terms[i].n);
    free(terms[i].abs);
  }
  if (allow_in != allow)
    unpermute(r, (void **)allow, (void **)allow_in, status == 0, (int)sizeof(float));
  for (int i = 0; status >= 0 && i < n; i++) {
    const IrTensor *t = ir->tensors[i];
    if (t->role != IR_ROLE_OUT) continue;
    IrDType rt = f64 ? IR_DT_F64 : t->dtype;
    bool exact = !f64 && (reduction_of(ir->body, t) == IR_RED_MAX ||
                          reduction_of(ir->body, t) == IR_RED_MIN);
    double limit = ir_check_limit(t->dtype);
    double diff2 = 0, over2 = 0, ref2 = 0, worst_abs = -1;
    int64_t worst_at = -1, nan_at = -1;
    for (int64_t k = 0; k < r->numel[i]; k++) {
      double a = ir_elem_get(t->dtype, r->data[i], k), b = ir_elem_get(rt, ref[i], k);
      if (isnan(a) || isnan(b)) {
        if (nan_at < 0) nan_at = k;
        continue;
      }
      double dd = fabs(a - b);
      /* what summing in another order cannot explain */
      double over = exact ? dd : fmax(0, dd - allow[i][k]);
      diff2 += dd * dd;
      over2 += over * over;
      ref2 += b * b;
      if (over > worst_abs) {
        worst_abs = over;
        worst_at = k;
      }
    }
    double raw = ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2);
    double rel = ref2 > 0 ? sqrt(over2 / ref2) : sqrt(over2);
    if (worst && rel > *worst) *worst = rel;
    if (nan_at >= 0) {
      ir_error(&ctx->diag, api_loc, "check failed: %s[%lld] is NaN (got %g, reference %g)",
               t->name, (long long)nan_at, ir_elem_get(t->dtype, r->data[i], nan_at),
               ir_elem_get(rt, ref[i], nan_at));
      status = 1;
    } else if (exact ? worst_abs > 0 : rel >= limit) {
      char what[96] = "", why[96];
      if (!exact && raw != rel)
        snprintf(what, sizeof what, " beyond the %s summation allowance (%.3g in all)",
                 ir_dtype_name(ir->acc), raw);
      if (exact) snprintf(why, sizeof why, ", max/min must match exactly");
      else snprintf(why, sizeof why, ", limit %g for %s%s", limit, ir_dtype_name(t->dtype),
                    f64 ? " against the f64 oracle" : "");
      ir_error(&ctx->diag, api_loc,
               "check failed: %s differs from the interpreter (relative L2 %.3g%s%s); "
               "worst at element %lld: got %.9g, reference %.9g",
               t->name, rel, what, why, (long long)worst_at,
               ir_elem_get(t->dtype, r->data[i], worst_at), ir_elem_get(rt, ref[i], worst_at));
      status = 1;
    }
  }
  for (int i = 0; i < n; i++)
    if (ir->tensors[i]->role == IR_ROLE_OUT || f64) {
      free(ref[i]);
      free(allow[i]);
    }
  free(ref);
  free(allow);
  free(terms);
  return status;
}

double gop_run_seconds(const GopRun *r) { return r->seconds; }

/* ---- .npy arrays ---- */

int gop_array_read(GopContext *ctx, const char *path, GopArray *out) {
  API_LOCK(ctx);
  memset(out, 0, sizeof *out);
  NpyArray a;
  if (npy_read(path, &a, &ctx->diag) != 0) return -1;
  int64_t n = npy_numel(&a);
  if (a.dtype != IR_DT_F32 && a.dtype != IR_DT_F64) {
    ir_error(&ctx->diag, (Loc){path, 0, 0},
             "tensor data must be float32 (or float64), not %s",
             ir_dtype_name(a.dtype));
    npy_free(&a);
    return -1;
  }
  float *data = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  if (!data) {
    ir_error(&ctx->diag, (Loc){path, 0, 0}, "out of memory reading %lld values",
             (long long)n);
    npy_free(&a);
    return -1;
  }
  for (int64_t i = 0; i < n; i++)
    data[i] = a.dtype == IR_DT_F32 ? ((float *)a.data)[i] : (float)((double *)a.data)[i];
  out->ndim = a.ndim;
  for (int d = 0; d < a.ndim; d++) out->shape[d] = a.shape[d];
  out->data = data;
  npy_free(&a);
  return 0;
}

int gop_array_write(GopContext *ctx, const char *path, const GopArray *a) {
  API_LOCK(ctx);
  NpyArray r = {.dtype = IR_DT_F32, .ndim = a->ndim, .data = a->data};
  for (int d = 0; d < a->ndim; d++) r.shape[d] = a->shape[d];
  return npy_write(path, &r, &ctx->diag);
}

void gop_array_free(GopArray *a) {
  free(a->data);
  a->data = NULL;
}

long gop_graph_arcs(const GopGraph *g, const int32_t **src, const int32_t **dst) {
  *src = g->rt->src;
  *dst = g->rt->dst;
  return g->rt->device_only ? -1 : g->rt->ne;
}

GopGraph *gop_graph_from_arcs(GopContext *ctx, int64_t nv, int64_t ne, const int64_t *src,
                              const int64_t *dst, const char *name) {
  API_LOCK(ctx);
  Graph *rt = graph_from_coo(nv, ne, src, dst, name, &ctx->diag, api_loc);
  return rt ? api_adopt_graph(ctx, rt) : NULL;
}
