/* api/grad.c: gradient operators derived in the IR (grad/), as modules of
 * the public API.
 *
 * Each requested input gets its own derivation in the context's arena;
 * the operators are wrapped like a compiled file's, so every other API
 * function (emit, run, pack, tune) takes them unchanged.
 */
#include <stdlib.h>
#include <string.h>

#include "grad/grad.h"
#include "interp/interp.h"

#include "api/api.h"

/* The next name of the comma-separated list at *p, copied into the arena;
 * NULL at the end. */
static const char *next_name(GopContext *ctx, const char **p) {
  const char *s = *p;
  while (*s == ' ' || *s == ',') s++;
  if (!*s) return NULL;
  const char *e = s;
  while (*e && *e != ',') e++;
  const char *end = e;
  while (end > s && end[-1] == ' ') end--;
  *p = e;
  return ir_strndup(ctx->arena, s, (size_t)(end - s));
}

/* The inputs to differentiate against: those named in `wrt`, else every
 * floating-point input. Their count, or -1 after reporting. */
static int wrt_names(const GopOp *op, const char *wrt, const char **names, int cap) {
  GopContext *ctx = op->module->ctx;
  const IrOp *fw = op->ir;
  int n = 0;
  if (wrt && *wrt) {
    const char *p = wrt;
    for (const char *x; (x = next_name(ctx, &p));) {
      if (n == cap) {
        ir_error(&ctx->diag, api_loc, "gop_grad: more than %d inputs named", cap);
        return -1;
      }
      for (int i = 0; i < n; i++)
        if (!strcmp(names[i], x)) {
          ir_error(&ctx->diag, fw->loc, "input %s is named twice in the inputs to "
                   "differentiate against", x);
          return -1;
        }
      names[n++] = x;
    }
    if (n == 0) ir_error(&ctx->diag, api_loc, "gop_grad: no input named in '%s'", wrt);
    return n ? n : -1;
  }
  for (int i = 0; i < fw->ninputs && n < cap; i++)
    if (grad_differentiable(fw->tensors[i])) names[n++] = fw->tensors[i]->name;
  if (n == 0)
    ir_error(&ctx->diag, fw->loc, "op %s has no floating-point input to differentiate "
             "against", fw->name);
  return n ? n : -1;
}

/* Wraps the derived operators as a module of `op`'s context. */
static GopModule *wrap(const GopOp *op, IrModule *ir, const char ***adj) {
  GopContext *ctx = op->module->ctx;
  /* the forward's file's named schedules apply to its gradients too (its
   * own schedules for them: gat_grad_groups in layers.gop) */
  const IrModule *fw = op->module->ir;
  for (int i = 0; i < fw->nscheds; i++)
    if (!ir_module_find_sched(ir, fw->scheds[i]->name)) ir_module_add_sched(ir, fw->scheds[i]);
  GopModule *m = api_wrap_module(ctx, ir, op->module->file, op->module->text);
  if (!m) return NULL;
  for (int i = 0; i < ir->nops; i++) {
    m->ops[i]->grad_of = op;
    m->ops[i]->adjoints = adj[i];
    m->ops[i]->doc = ir_sprintf(ctx->arena, "The gradient of %s (%s, derived by gop_grad).",
                                op->ir->name, ir->ops[i]->name);
  }
  return m;
}

/* What gop_grad and gop_grad_joint start from: the inputs `wrt` names, an
 * empty module for the derived operators, and the adjoint tables of
 * `nops` operators (one per input, or one joint). */
typedef struct GradStart {
  GopContext *ctx;
  const IrOp *fw;
  const char *names[64];
  int n;
  IrModule *ir;
  const char ***adj;
} GradStart;

/* 0, or -1 after reporting (no operator, or a bad `wrt`). */
static int grad_start(const GopOp *op, const char *wrt, bool joint, GradStart *s) {
  if (!op) return -1;
  s->ctx = op->module->ctx;
  s->fw = op->ir;
  s->n = wrt_names(op, wrt, s->names, 64);
  if (s->n < 0) return -1;
  int nops = joint ? 1 : s->n;
  s->ir = ir_module_new(s->ctx->arena);
  s->adj = IR_NEW_ARRAY(s->ctx->arena, const char **, nops);
  for (int i = 0; i < nops; i++)
    s->adj[i] = IR_NEW_ARRAY(s->ctx->arena, const char *, s->fw->ntensors + 1);
  return 0;
}

GopModule *gop_grad(const GopOp *op, const char *wrt) {
  API_LOCK(op ? op->module->ctx : NULL);
  GradStart s;
  if (grad_start(op, wrt, false, &s) != 0) return NULL;
  for (int i = 0; i < s.n; i++) {
    IrOp *g = grad_derive_named(s.ctx->arena, s.fw, s.names[i], s.adj[i], &s.ctx->diag);
    if (!g) return NULL;
    ir_module_add_op(s.ir, g);
  }
  return wrap(op, s.ir, s.adj);
}

GopModule *gop_grad_joint(const GopOp *op, const char *wrt) {
  API_LOCK(op ? op->module->ctx : NULL);
  GradStart s;
  if (grad_start(op, wrt, true, &s) != 0) return NULL;
  IrOp *g = grad_derive_joint(s.ctx->arena, s.fw, s.names, s.n, s.adj[0], &s.ctx->diag);
  if (!g) return NULL;
  ir_module_add_op(s.ir, g);
  return wrap(op, s.ir, s.adj);
}

const char *gop_grad_adjoint(const GopOp *grad, const char *forward_tensor) {
  if (!grad || !grad->grad_of || !forward_tensor) return NULL;
  const IrOp *fw = grad->grad_of->ir;
  for (int i = 0; i < fw->ntensors; i++)
    if (!strcmp(fw->tensors[i]->name, forward_tensor)) return grad->adjoints[i];
  return NULL;
}

const GopOp *gop_grad_forward(const GopOp *grad) { return grad ? grad->grad_of : NULL; }

static char *copy(const char *s) {
  size_t n = strlen(s) + 1;
  char *c = malloc(n);
  if (c) memcpy(c, s, n);
  return c;
}

/* `f32[edge, H]` */
static const char *edge_type(GopContext *ctx, const IrTensor *t) {
  const char *s = ir_sprintf(ctx->arena, "%s[edge", ir_dtype_name(t->dtype));
  for (int i = 0; i < t->ndims; i++)
    s = t->dims[i].sym ? ir_sprintf(ctx->arena, "%s, %s", s, t->dims[i].sym->name)
                       : ir_sprintf(ctx->arena, "%s, %lld", s, (long long)t->dims[i].value);
  return ir_sprintf(ctx->arena, "%s]", s);
}

/* `|E|·H`: the elements of one pass, as a product of extents */
static const char *edge_elems(GopContext *ctx, const IrTensor *t) {
  const char *s = "|E|";
  int64_t k = 1;
  for (int i = 0; i < t->ndims; i++) {
    if (t->dims[i].sym) s = ir_sprintf(ctx->arena, "%s·%s", s, t->dims[i].sym->name);
    else k *= t->dims[i].value;
  }
  return k == 1 ? s : ir_sprintf(ctx->arena, "%lld·%s", (long long)k, s);
}

char *gop_edge_traffic(const GopOp *op) {
  if (!op) return NULL;
  GopContext *ctx = op->module->ctx;
  enum { MAX = 64 };
  GradEdgeTraffic tr[MAX];
  int n = grad_edge_traffic(op->ir, tr, MAX);
  if (n > MAX) n = MAX;
  if (n == 0)
    return copy(ir_sprintf(ctx->arena, "edge traffic of %s: none (no tensor on the "
                           "edges is read or written)\n", op->ir->name));
  const char *s = ir_sprintf(ctx->arena, "edge traffic of %s:\n", op->ir->name);
  /* the total in bytes, grouped by the elements of a pass */
  const char *key[MAX];
  int64_t bytes[MAX];
  int nk = 0;
  for (int i = 0; i < n; i++) {
    const IrTensor *t = tr[i].t;
    s = ir_sprintf(ctx->arena, "%s  %s: %s, read by %d stage%s, written by %d\n", s, t->name,
                   edge_type(ctx, t), tr[i].reads, tr[i].reads == 1 ? "" : "s", tr[i].writes);
    const char *k = edge_elems(ctx, t);
    int j = 0;
    while (j < nk && strcmp(key[j], k)) j++;
    if (j == nk) key[nk] = k, bytes[nk++] = 0;
    bytes[j] += (int64_t)(tr[i].reads + tr[i].writes) * ir_dtype_bytes(t->dtype);
  }
  s = ir_sprintf(ctx->arena, "%s  total:", s);
  for (int j = 0; j < nk; j++)
    s = ir_sprintf(ctx->arena, "%s%s %lld·%s", s, j ? " +" : "", (long long)bytes[j], key[j]);
  return copy(ir_sprintf(ctx->arena, "%s bytes\n", s));
}

/* ---- double precision on the interpreter (checks of gradients) ---- */

int gop_run_exec_f64(GopRun *r, double *const *data, int n) {
  API_LOCK(r ? r->ctx : NULL);
  if (!r) return -1;
  GopContext *ctx = r->ctx;
  const IrOp *ir = r->op->ir;
  int nt = gop_run_num_tensors(r);
  if (n != nt || !data) {
    ir_error(&ctx->diag, api_loc, "gop_run_exec_f64: operator %s has %d inputs and outputs, "
             "got %d buffers%s", ir->name, nt, n, data ? "" : " (NULL)");
    return -1;
  }
  if (!api_host_graph(ctx, r->graph, "gop_run_exec_f64")) return -1;
  if (r->graph->rt->perm) {
    ir_error(&ctx->diag, api_loc, "gop_run_exec_f64: graph %s is reordered; f64 runs take "
             "a graph in its own numbering", r->graph->rt->name ? r->graph->rt->name : "");
    return -1;
  }
  for (int i = 0; i < ir->nsyms; i++)
    if (!r->ext_set[i]) {
      ir_error(&ctx->diag, api_loc, "gop_run_exec_f64: extent %s is not set", ir->syms[i]->name);
      return -1;
    }
  for (int i = 0; i < nt; i++) {
    int64_t shape[8];
    if (gop_run_tensor_shape(r, i, shape) < 0) {
      ir_error(&ctx->diag, api_loc, "gop_run_exec_f64: an extent of tensor %s is not set",
               ir->tensors[i]->name);
      return -1;
    }
    if (!data[i]) {
      ir_error(&ctx->diag, api_loc, "gop_run_exec_f64: tensor %s has no buffer",
               ir->tensors[i]->name);
      return -1;
    }
  }
  /* the interpreter allocates the temporaries (NULL slots after these) */
  void **buf = IR_NEW_ARRAY(ctx->arena, void *, ir->ntensors + 1);
  for (int i = 0; i < nt; i++) buf[i] = data[i];
  InterpArgs args = {
      .graph = r->graph->rt,
      .extents = r->ext,
      .mode = INTERP_F64,
      .buffers = buf,
  };
  return interp_run(ir, &args, &ctx->diag);
}
