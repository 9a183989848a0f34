/* ir/build.c: constructors for the IR.
 *
 * Every node is made here so that `type` is always set consistently: the
 * front end, the scheduling passes and the tests all build IR through these
 * functions rather than filling structs by hand.
 */
#include <string.h>

#include "ir.h"

/* Growable arrays of pointers in the arena: doubling, old storage left to
 * the arena (it is freed with everything else). */
static void **grow(Arena *a, void **items, int n) {
  if (n == 0 || (n & (n - 1)) != 0) return items; /* capacity is a power of 2 */
  void **bigger = ir_alloc(a, sizeof(void *) * (size_t)n * 2);
  if (items) memcpy(bigger, items, sizeof(void *) * (size_t)n);
  return bigger;
}

#define PUSH(a, arr, n, x)                                              \
  do {                                                                  \
    if ((n) == 0) (arr) = ir_alloc((a), sizeof(void *));                \
    else (arr) = (void *)grow((a), (void **)(arr), (n));                \
    (arr)[(n)++] = (x);                                                 \
  } while (0)

IrModule *ir_module_new(Arena *a) {
  IrModule *m = IR_NEW(a, IrModule);
  m->arena = a;
  return m;
}

void ir_module_add_op(IrModule *m, IrOp *op) { PUSH(m->arena, m->ops, m->nops, op); }

void ir_module_add_sched(IrModule *m, IrSchedDef *s) {
  if (!s->module) s->module = m; /* added to a second module too: keeps the first */
  PUSH(m->arena, m->scheds, m->nscheds, s);
}

IrOp *ir_module_find_op(const IrModule *m, const char *name) {
  for (int i = 0; i < m->nops; i++)
    if (strcmp(m->ops[i]->name, name) == 0) return m->ops[i];
  return NULL;
}

IrSchedDef *ir_module_find_sched(const IrModule *m, const char *name) {
  for (int i = 0; i < m->nscheds; i++)
    if (strcmp(m->scheds[i]->name, name) == 0) return m->scheds[i];
  return NULL;
}

IrOp *ir_op_new(Arena *a, const char *name, Loc loc) {
  IrOp *op = IR_NEW(a, IrOp);
  op->name = ir_strdup(a, name);
  op->loc = loc;
  return op;
}

IrSym *ir_op_sym(Arena *a, IrOp *op, const char *name, Loc loc) {
  for (int i = 0; i < op->nsyms; i++)
    if (strcmp(op->syms[i]->name, name) == 0) return op->syms[i];
  IrSym *s = IR_NEW(a, IrSym);
  s->name = ir_strdup(a, name);
  s->loc = loc;
  s->id = op->nsyms;
  PUSH(a, op->syms, op->nsyms, s);
  return s;
}

IrTensor *ir_op_add_tensor(Arena *a, IrOp *op, const char *name, Loc loc,
                           IrDType dt, IrDomain dom, IrRole role) {
  IrTensor *t = IR_NEW(a, IrTensor);
  t->name = ir_strdup(a, name);
  t->loc = loc;
  t->dtype = dt;
  t->domain = dom;
  t->role = role;
  t->id = op->ntensors;
  PUSH(a, op->tensors, op->ntensors, t);
  if (role == IR_ROLE_IN) op->ninputs++;
  if (role == IR_ROLE_OUT) op->noutputs++;
  return t;
}

IrVar *ir_op_add_var(Arena *a, IrOp *op, const char *name, Loc loc,
                     IrVarKind kind) {
  IrVar *v = IR_NEW(a, IrVar);
  v->name = ir_strdup(a, name);
  v->loc = loc;
  v->kind = kind;
  v->dtype = kind == IR_VAR_LOCAL ? IR_DT_F32 : IR_DT_I32;
  v->id = op->nvars;
  PUSH(a, op->vars, op->nvars, v);
  return v;
}

IrTensor *ir_op_find_tensor(const IrOp *op, const char *name) {
  for (int i = 0; i < op->ntensors; i++)
    if (strcmp(op->tensors[i]->name, name) == 0) return op->tensors[i];
  return NULL;
}

static IrNode *node(Arena *a, IrKind kind, Loc loc, IrType type) {
  IrNode *n = IR_NEW(a, IrNode);
  n->kind = kind;
  n->loc = loc;
  n->type = type;
  return n;
}

IrNode *ir_loop(Arena *a, Loc loc, IrVar *var, IrLoopKind kind,
                IrNode *extent, IrNode *of, IrNode *body) {
  IrNode *n = node(a, IR_LOOP, loc, IR_TY_VOID);
  n->loop.var = var;
  n->loop.kind = kind;
  n->loop.extent = extent;
  n->loop.of = of;
  n->loop.body = body;
  return n;
}

static void set_access(IrNode *n, IrTensor *t, int nidx, IrNode **idx) {
  if (nidx > IR_MAX_IDX) unreachable("too many indices");
  n->acc.tensor = t;
  n->acc.nidx = nidx;
  for (int i = 0; i < nidx; i++) n->acc.idx[i] = idx[i];
}

IrNode *ir_store(Arena *a, Loc loc, IrTensor *t, int nidx, IrNode **idx,
                 IrRed red, IrNode *value) {
  IrNode *n = node(a, IR_STORE, loc, IR_TY_VOID);
  set_access(n, t, nidx, idx);
  n->acc.red = red;
  n->acc.value = value;
  return n;
}

IrNode *ir_let(Arena *a, Loc loc, IrVar *var, IrNode *init) {
  IrNode *n = node(a, IR_LET, loc, IR_TY_VOID);
  n->let.var = var;
  n->let.init = init;
  return n;
}

IrNode *ir_set(Arena *a, Loc loc, IrVar *var, IrRed red, IrNode *value) {
  IrNode *n = node(a, IR_SET, loc, IR_TY_VOID);
  n->set.var = var;
  n->set.red = red;
  n->set.value = value;
  return n;
}

IrNode *ir_if(Arena *a, Loc loc, IrNode *cond, IrNode *then) {
  IrNode *n = node(a, IR_IF, loc, IR_TY_VOID);
  n->ifs.cond = cond;
  n->ifs.then = then;
  return n;
}

IrNode *ir_fconst(Arena *a, Loc loc, double f) {
  IrNode *n = node(a, IR_FCONST, loc, IR_TY_FLOAT);
  n->f = f;
  return n;
}

IrNode *ir_iconst(Arena *a, Loc loc, int64_t i) {
  IrNode *n = node(a, IR_ICONST, loc, IR_TY_INT);
  n->i = i;
  return n;
}

IrNode *ir_var(Arena *a, Loc loc, IrVar *v) {
  IrNode *n = node(a, IR_VAR, loc, v->kind == IR_VAR_LOCAL ? IR_TY_FLOAT : IR_TY_INT);
  n->var = v;
  return n;
}

IrNode *ir_symref(Arena *a, Loc loc, IrSym *s) {
  IrNode *n = node(a, IR_SYM, loc, IR_TY_INT);
  n->sym = s;
  return n;
}

IrNode *ir_load(Arena *a, Loc loc, IrTensor *t, int nidx, IrNode **idx) {
  IrNode *n = node(a, IR_LOAD, loc, IR_TY_FLOAT);
  set_access(n, t, nidx, idx);
  return n;
}

IrNode *ir_bin(Arena *a, Loc loc, IrBinOp op, IrNode *x, IrNode *y) {
  IrType ty;
  switch (op) {
  case IR_OP_OR: case IR_OP_AND: case IR_OP_EQ: case IR_OP_NE:
  case IR_OP_LT: case IR_OP_LE: case IR_OP_GT: case IR_OP_GE:
    ty = IR_TY_BOOL;
    break;
  default:
    ty = (x->type == IR_TY_INT && y->type == IR_TY_INT) ? IR_TY_INT : IR_TY_FLOAT;
  }
  IrNode *n = node(a, IR_BIN, loc, ty);
  n->bin.op = op;
  n->bin.a = x;
  n->bin.b = y;
  return n;
}

IrNode *ir_un(Arena *a, Loc loc, IrUnOp op, IrNode *x) {
  IrNode *n = node(a, IR_UN, loc, op == IR_UN_NOT ? IR_TY_BOOL : x->type);
  n->un.op = op;
  n->un.a = x;
  return n;
}

IrNode *ir_call(Arena *a, Loc loc, IrFn fn, int nargs, IrNode **args) {
  if (nargs > 2) unreachable("calls take at most two arguments");
  IrNode *n = node(a, IR_CALL, loc, IR_TY_FLOAT);
  n->call.fn = fn;
  n->call.nargs = nargs;
  for (int i = 0; i < nargs; i++) n->call.args[i] = args[i];
  return n;
}

IrNode *ir_endpoint(Arena *a, Loc loc, IrKind kind, IrNode *e) {
  IrType ty = (kind == IR_INDEG || kind == IR_OUTDEG) ? IR_TY_FLOAT : IR_TY_INT;
  IrNode *n = node(a, kind, loc, ty);
  n->endpoint.e = e;
  return n;
}

IrNode *ir_graph_size(Arena *a, Loc loc, IrKind kind) {
  return node(a, kind, loc, IR_TY_INT);
}

void ir_append(IrNode **list, IrNode *s) {
  while (*list) list = &(*list)->next;
  *list = s;
}

static IrNode *clone_list(Arena *a, const IrNode *n) {
  IrNode *head = NULL, **tail = &head;
  for (; n; n = n->next) {
    *tail = ir_clone(a, n);
    tail = &(*tail)->next;
  }
  return head;
}

IrNode *ir_clone(Arena *a, const IrNode *n) {
  if (!n) return NULL;
  IrNode *c = IR_NEW(a, IrNode);
  *c = *n;
  c->next = NULL;
  switch (n->kind) {
  case IR_LOOP:
    c->loop.extent = ir_clone(a, n->loop.extent);
    c->loop.of = ir_clone(a, n->loop.of);
    c->loop.body = clone_list(a, n->loop.body);
    break;
  case IR_STORE:
  case IR_LOAD:
    for (int i = 0; i < n->acc.nidx; i++) c->acc.idx[i] = ir_clone(a, n->acc.idx[i]);
    c->acc.value = ir_clone(a, n->acc.value);
    break;
  case IR_LET: c->let.init = ir_clone(a, n->let.init); break;
  case IR_SET: c->set.value = ir_clone(a, n->set.value); break;
  case IR_IF:
    c->ifs.cond = ir_clone(a, n->ifs.cond);
    c->ifs.then = clone_list(a, n->ifs.then);
    break;
  case IR_BIN:
    c->bin.a = ir_clone(a, n->bin.a);
    c->bin.b = ir_clone(a, n->bin.b);
    break;
  case IR_UN: c->un.a = ir_clone(a, n->un.a); break;
  case IR_CALL:
    for (int i = 0; i < n->call.nargs; i++) c->call.args[i] = ir_clone(a, n->call.args[i]);
    break;
  case IR_SRC: case IR_DST: case IR_INDEG: case IR_OUTDEG: case IR_OWNS:
    c->endpoint.e = ir_clone(a, n->endpoint.e);
    break;
  case IR_FCONST: case IR_ICONST: case IR_VAR: case IR_SYM: case IR_NV: case IR_NE:
    break;
  case IR_NODE_COUNT: unreachable("bad node kind");
  }
  return c;
}
