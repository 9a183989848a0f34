/* passes/nest.c: loop-nest helpers shared by the primitives and passes.
 *
 * Finding loops by name with the statements that enclose them, copying an
 * operator to try a change on, substituting an expression for a variable,
 * and building integer index expressions that fold constants as they are
 * made (so that a split by 1 or a tile of 1 does not leave `x * 1 + 0`
 * behind). Nothing here refuses anything: the primitives decide legality.
 */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

/* ---- finding loops ---- */

typedef struct Walk {
  const char *name;     /* loops with this variable name, or */
  const IrNode *target; /* this statement */
  PassSite *out;
  int max, n;
  PassSite cur;
} Walk;

static void walk(Walk *w, IrNode **slot, int stage) {
  bool top = w->cur.depth == 0; /* each top-level statement is a stage */
  for (IrNode **p = slot; *p; p = &(*p)->next, stage += top) {
    IrNode *s = *p;
    bool hit = w->target ? s == w->target
                         : s->kind == IR_LOOP && s->loop.var &&
                               strcmp(s->loop.var->name, w->name) == 0;
    if (hit) {
      if (w->n < w->max) {
        PassSite *o = &w->out[w->n];
        *o = w->cur;
        o->slot = p;
        o->node = s;
        o->stage = stage;
      }
      w->n++;
    }
    IrNode **inner = s->kind == IR_LOOP ? &s->loop.body
                     : s->kind == IR_IF ? &s->ifs.then
                                        : NULL;
    if (inner && w->cur.depth < PASS_MAX_DEPTH) {
      w->cur.path[w->cur.depth++] = s;
      walk(w, inner, stage);
      w->cur.depth--;
    }
  }
}

int pass_find_loops(IrOp *op, const char *name, PassSite *out, int max) {
  Walk w = {.name = name, .out = out, .max = max};
  walk(&w, &op->body, 0);
  return w.n;
}

bool pass_find_node(IrOp *op, const IrNode *node, PassSite *out) {
  Walk w = {.target = node, .out = out, .max = 1};
  walk(&w, &op->body, 0);
  return w.n > 0;
}

int pass_stage_count(const IrOp *op) {
  int n = 0;
  for (const IrNode *s = op->body; s; s = s->next) n++;
  return n;
}

static bool stores_to(const IrNode *n, void *t) {
  return n->kind == IR_STORE && n->acc.tensor == t;
}

bool pass_stage_stores(const IrNode *stage, const IrTensor *t) {
  /* ir_any walks a statement and all that follows it: detach the stage */
  IrNode *s = (IrNode *)stage, *saved = s->next;
  s->next = NULL;
  bool hit = ir_any(s, stores_to, (void *)t);
  s->next = saved;
  return hit;
}

static bool mark_stored(const IrNode *n, void *ctx) {
  if (n->kind == IR_STORE) ((bool *)ctx)[n->acc.tensor->id] = true;
  return false;
}

void pass_stored_tensors(const IrNode *stage, bool *stored) {
  IrNode one = *stage;
  one.next = NULL;
  ir_any(&one, mark_stored, stored);
}

int pass_tensor_stage(IrOp *op, const char *prim, const char *tensor, const char *first,
                      IrTensor **t, Loc loc, Diag *d) {
  *t = ir_op_find_tensor(op, tensor);
  if (!*t) {
    ir_error(d, loc, "%s: operator %s has no tensor '%s'", prim, op->name, tensor);
    return -1;
  }
  const IrNode *stage = op->body;
  if (!stage || stage->next || stage->kind != IR_LOOP || !pass_stage_stores(stage, *t))
    return 1;
  if (pass_stage_bound(stage)) {
    ir_error(d, loc, "%s: the stage that stores into '%s' is already mapped to workers; "
             "%s before binding its loops", prim, tensor, first);
    return -1;
  }
  return 0;
}

int pass_store_stages(const IrOp *op, const IrTensor *t) {
  int n = 0;
  for (const IrNode *s = op->body; s; s = s->next) n += pass_stage_stores(s, t);
  return n;
}

/* ---- names ---- */

typedef struct Names {
  Arena *a;
  const char *list;
  const char *seen[256];
  int n;
} Names;

static void collect_names(Names *ns, const IrNode *list) {
  for (const IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_LOOP) {
      const char *name = s->loop.var->name;
      bool dup = false;
      for (int i = 0; i < ns->n; i++) dup |= strcmp(ns->seen[i], name) == 0;
      if (!dup && ns->n < 256) {
        ns->seen[ns->n++] = name;
        ns->list = ns->list ? ir_sprintf(ns->a, "%s, %s", ns->list, name) : name;
      }
      collect_names(ns, s->loop.body);
    } else if (s->kind == IR_IF) {
      collect_names(ns, s->ifs.then);
    }
  }
}

const char *pass_loop_names(const IrOp *op, Arena *a) {
  Names ns = {.a = a};
  collect_names(&ns, op->body);
  return ns.list ? ns.list : "none";
}

bool pass_binds_name(const IrNode *list, const char *name) {
  for (const IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_LOOP) {
      if (strcmp(s->loop.var->name, name) == 0) return true;
      if (pass_binds_name(s->loop.body, name)) return true;
    } else if (s->kind == IR_LET) {
      if (strcmp(s->let.var->name, name) == 0) return true;
    } else if (s->kind == IR_IF) {
      if (pass_binds_name(s->ifs.then, name)) return true;
    }
  }
  return false;
}

bool pass_name_taken(const IrOp *op, const char *name) {
  if (ir_op_find_tensor(op, name)) return true;
  for (int i = 0; i < op->nsyms; i++)
    if (strcmp(op->syms[i]->name, name) == 0) return true;
  return pass_binds_name(op->body, name);
}

const char *pass_fresh_name(const IrOp *op, Arena *a, const char *base) {
  const char *name = base;
  for (int i = 1; pass_name_taken(op, name); i++) name = ir_sprintf(a, "%s%d", base, i);
  return name;
}

/* ---- copying an operator ---- */

/* build.c grows arrays by doubling at powers of two, so a copied array needs
 * the capacity its length implies. */
static void **copy_array(Arena *a, void *const *items, int n) {
  int cap = 1;
  while (cap < n) cap *= 2;
  void **c = ir_alloc(a, sizeof(void *) * (size_t)cap);
  if (n > 0) memcpy(c, items, sizeof(void *) * (size_t)n);
  return c;
}

IrOp *pass_op_copy(const IrOp *op, Arena *a) {
  IrOp *c = IR_NEW(a, IrOp);
  *c = *op;
  c->tensors = (IrTensor **)copy_array(a, (void *const *)op->tensors, op->ntensors);
  c->syms = (IrSym **)copy_array(a, (void *const *)op->syms, op->nsyms);
  c->vars = (IrVar **)copy_array(a, (void *const *)op->vars, op->nvars);
  IrNode *head = NULL, **tail = &head;
  for (const IrNode *s = op->body; s; s = s->next) {
    *tail = ir_clone(a, s);
    tail = &(*tail)->next;
  }
  c->body = head;
  return c;
}

typedef struct {
  const IrTensor *from;
  IrTensor *to;
} Retarget;

static void retarget_slot(IrNode **slot, void *ctx) {
  IrNode *e = *slot;
  if (!e) return;
  const Retarget *r = ctx;
  if (e->kind == IR_LOAD && e->acc.tensor == r->from) e->acc.tensor = r->to;
  ir_each_operand(e, retarget_slot, ctx);
}

static void retarget_expr(IrNode *e, const IrTensor *from, IrTensor *to) {
  Retarget r = {from, to};
  retarget_slot(&e, &r);
}

void pass_retarget(IrNode *list, const IrTensor *from, IrTensor *to) {
  for (IrNode *s = list; s; s = s->next) {
    switch (s->kind) {
    case IR_LOOP:
      retarget_expr(s->loop.extent, from, to);
      retarget_expr(s->loop.of, from, to);
      pass_retarget(s->loop.body, from, to);
      break;
    case IR_IF:
      retarget_expr(s->ifs.cond, from, to);
      pass_retarget(s->ifs.then, from, to);
      break;
    case IR_STORE:
      if (s->acc.tensor == from) s->acc.tensor = to;
      for (int i = 0; i < s->acc.nidx; i++) retarget_expr(s->acc.idx[i], from, to);
      retarget_expr(s->acc.value, from, to);
      break;
    case IR_LET: retarget_expr(s->let.init, from, to); break;
    case IR_SET: retarget_expr(s->set.value, from, to); break;
    default: break;
    }
  }
}

IrTensor *pass_own_tensor(IrOp *op, IrTensor *t, Arena *a) {
  IrTensor *nt = IR_NEW(a, IrTensor);
  *nt = *t;
  op->tensors[t->id] = nt;
  pass_retarget(op->body, t, nt);
  return nt;
}

IrVar *pass_new_var(IrOp *op, Arena *a, const char *name, IrVarKind kind,
                    Loc loc) {
  return ir_op_add_var(a, op, name, loc, kind);
}

/* ---- substitution and uses ---- */

typedef struct {
  Arena *a;
  const IrVar *v;
  const IrNode *with;
} Subst;

static void subst_slot(IrNode **slot, void *ctx) {
  IrNode *e = *slot;
  if (!e) return;
  const Subst *s = ctx;
  if (e->kind == IR_VAR) {
    if (e->var == s->v) {
      IrNode *c = ir_clone(s->a, s->with);
      c->loc = e->loc;
      *slot = c;
    }
    return;
  }
  ir_each_operand(e, subst_slot, ctx);
}

static void subst_expr(Arena *a, IrNode **slot, const IrVar *v,
                       const IrNode *with) {
  Subst s = {a, v, with};
  subst_slot(slot, &s);
}

void pass_subst_stmts(Arena *a, IrNode *list, const IrVar *v,
                      const IrNode *with) {
  for (IrNode *s = list; s; s = s->next) {
    switch (s->kind) {
    case IR_LOOP:
      subst_expr(a, &s->loop.extent, v, with);
      subst_expr(a, &s->loop.of, v, with);
      pass_subst_stmts(a, s->loop.body, v, with);
      break;
    case IR_STORE:
      for (int i = 0; i < s->acc.nidx; i++) subst_expr(a, &s->acc.idx[i], v, with);
      subst_expr(a, &s->acc.value, v, with);
      break;
    case IR_LET: subst_expr(a, &s->let.init, v, with); break;
    case IR_SET: subst_expr(a, &s->set.value, v, with); break;
    case IR_IF:
      subst_expr(a, &s->ifs.cond, v, with);
      pass_subst_stmts(a, s->ifs.then, v, with);
      break;
    default: break;
    }
  }
}

typedef struct {
  bool (*ok)(const IrVar *, void *);
  void *ctx;
} VarTest;

static bool var_fails(const IrNode *n, void *ctx) {
  const VarTest *t = ctx;
  return n->kind == IR_VAR && !t->ok(n->var, t->ctx);
}

bool pass_expr_vars_all(const IrNode *e, bool (*ok)(const IrVar *, void *),
                        void *ctx) {
  VarTest t = {ok, ctx};
  return !ir_any(e, var_fails, &t);
}

bool pass_expr_equal(const IrNode *x, const IrNode *y) {
  if (x == y) return true;
  if (!x || !y || x->kind != y->kind) return false;
  switch (x->kind) {
  case IR_FCONST: return x->f == y->f;
  case IR_ICONST: return x->i == y->i;
  case IR_VAR: return x->var == y->var;
  case IR_SYM: return x->sym == y->sym;
  case IR_NV: case IR_NE: return true;
  case IR_LOAD:
    if (x->acc.tensor != y->acc.tensor || x->acc.nidx != y->acc.nidx) return false;
    for (int i = 0; i < x->acc.nidx; i++)
      if (!pass_expr_equal(x->acc.idx[i], y->acc.idx[i])) return false;
    return true;
  case IR_BIN:
    return x->bin.op == y->bin.op && pass_expr_equal(x->bin.a, y->bin.a) &&
           pass_expr_equal(x->bin.b, y->bin.b);
  case IR_UN: return x->un.op == y->un.op && pass_expr_equal(x->un.a, y->un.a);
  case IR_CALL:
    if (x->call.fn != y->call.fn || x->call.nargs != y->call.nargs) return false;
    for (int i = 0; i < x->call.nargs; i++)
      if (!pass_expr_equal(x->call.args[i], y->call.args[i])) return false;
    return true;
  case IR_SRC: case IR_DST: case IR_INDEG: case IR_OUTDEG: case IR_OWNS:
    return pass_expr_equal(x->endpoint.e, y->endpoint.e);
  default: return false;
  }
}

IrNode *pass_loop_extent(Arena *a, const IrNode *loop) {
  switch (loop->loop.kind) {
  case IR_LOOP_RANGE: return ir_clone(a, loop->loop.extent);
  case IR_LOOP_SRC_V:
  case IR_LOOP_DST_V: return ir_graph_size(a, loop->loc, IR_NV);
  case IR_LOOP_EDGES: return ir_graph_size(a, loop->loc, IR_NE);
  default: return NULL;
  }
}

const char *pass_describe_stmts(Arena *a, const IrNode *list,
                                const IrNode *except) {
  const char *parts[8];
  int n = 0;
  for (const IrNode *s = list; s && n < 8; s = s->next) {
    if (s == except) continue;
    switch (s->kind) {
    case IR_LOOP: parts[n++] = ir_sprintf(a, "a loop '%s'", s->loop.var->name); break;
    case IR_STORE: parts[n++] = ir_sprintf(a, "a store to '%s'", s->acc.tensor->name); break;
    case IR_LET: parts[n++] = ir_sprintf(a, "a local '%s'", s->let.var->name); break;
    case IR_SET: parts[n++] = ir_sprintf(a, "an update of local '%s'", s->set.var->name); break;
    case IR_IF: parts[n++] = "a guard"; break;
    default: break;
    }
  }
  if (n == 0) return "nothing";
  const char *out = parts[0];
  for (int i = 1; i < n; i++)
    out = ir_sprintf(a, "%s%s%s", out, i == n - 1 ? " and " : ", ", parts[i]);
  return out;
}

/* ---- folding constructors ---- */

static bool is_const(const IrNode *e, int64_t v) {
  return e->kind == IR_ICONST && e->i == v;
}

IrNode *pass_add(Arena *a, Loc loc, IrNode *x, IrNode *y) {
  if (x->kind == IR_ICONST && y->kind == IR_ICONST) return ir_iconst(a, loc, x->i + y->i);
  if (is_const(y, 0)) return x;
  if (is_const(x, 0)) return y;
  return ir_bin(a, loc, IR_OP_ADD, x, y);
}

IrNode *pass_mul(Arena *a, Loc loc, IrNode *x, IrNode *y) {
  if (x->kind == IR_ICONST && y->kind == IR_ICONST) return ir_iconst(a, loc, x->i * y->i);
  if (is_const(y, 1)) return x;
  if (is_const(x, 1)) return y;
  if (is_const(x, 0) || is_const(y, 0)) return ir_iconst(a, loc, 0);
  return ir_bin(a, loc, IR_OP_MUL, x, y);
}

IrNode *pass_div(Arena *a, Loc loc, IrNode *x, IrNode *y) {
  if (x->kind == IR_ICONST && y->kind == IR_ICONST && y->i > 0)
    return ir_iconst(a, loc, x->i / y->i);
  if (is_const(y, 1)) return x;
  return ir_bin(a, loc, IR_OP_DIV, x, y);
}

IrNode *pass_mod(Arena *a, Loc loc, IrNode *x, IrNode *y) {
  if (x->kind == IR_ICONST && y->kind == IR_ICONST && y->i > 0)
    return ir_iconst(a, loc, x->i % y->i);
  if (is_const(y, 1)) return ir_iconst(a, loc, 0);
  return ir_bin(a, loc, IR_OP_MOD, x, y);
}

IrNode *pass_ceildiv(Arena *a, Loc loc, IrNode *x, int64_t k) {
  if (k == 1) return x;
  if (x->kind == IR_ICONST) return ir_iconst(a, loc, (x->i + k - 1) / k);
  return pass_div(a, loc, pass_add(a, loc, x, ir_iconst(a, loc, k - 1)),
                  ir_iconst(a, loc, k));
}

/* ---- what every primitive checks first ---- */

bool pass_find_loop(IrOp *op, const char *prim, const char *name,
                    PassSite *site, Loc loc, Arena *a, Diag *d) {
  int n = pass_find_loops(op, name, site, 1);
  if (n == 1) return true;
  if (n == 0)
    ir_error(d, loc, "%s: loop '%s' does not exist in operator %s (loops: %s)",
             prim, name, op->name, pass_loop_names(op, a));
  else
    ir_error(d, loc, "%s: %d loops of operator %s are called '%s'; directives "
             "apply stage by stage, and within a stage a loop name must be "
             "unique", prim, n, op->name, name);
  return false;
}

bool pass_check_new_name(const IrOp *op, const char *prim, const char *name,
                         const char *role, const char *replaced, Loc loc,
                         Diag *d) {
  if (replaced && strcmp(name, replaced) == 0) return true;
  if (!pass_name_taken(op, name)) return true;
  ir_error(d, loc, "%s: the name '%s' for the %s is already taken in operator "
           "%s; give the new loops other names", prim, name, role, op->name);
  return false;
}

bool pass_check_unscheduled(const IrNode *l, const char *prim, const char *name, Loc loc,
                            Diag *d) {
  if (l->loop.bind != IR_BIND_NONE) {
    ir_error(d, loc, "%s: loop '%s' is already bound to %s; %s it before binding it", prim,
             name, ir_bind_name(l->loop.bind), prim);
    return false;
  }
  if (l->loop.unroll || l->loop.vec) {
    ir_error(d, loc, "%s: loop '%s' is marked @%s; %s it before that", prim, name,
             l->loop.unroll ? "unroll" : "vec", prim);
    return false;
  }
  return true;
}

bool pass_new_loop_names(const IrOp *op, const char *prim, const char *loop,
                         const char *const roles[2], const char *suffixes, const char **outer,
                         const char **inner, Loc loc, Arena *a, Diag *d) {
  if (!*outer) *outer = ir_sprintf(a, "%s%c", loop, suffixes[0]);
  if (!*inner) *inner = ir_sprintf(a, "%s%c", loop, suffixes[1]);
  if (strcmp(*outer, *inner) == 0) {
    ir_error(d, loc, "%s: the %s and the %s of '%s' need two different names, not '%s' "
             "twice", prim, roles[0], roles[1], loop, *outer);
    return false;
  }
  return pass_check_new_name(op, prim, *outer, roles[0], loop, loc, d) &&
         pass_check_new_name(op, prim, *inner, roles[1], loop, loc, d);
}

const char *pass_expr_string(Arena *a, const IrNode *e) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return "?";
  ir_print_expr(f, e);
  fclose(f);
  const char *s = ir_strdup(a, buf ? buf : "?");
  free(buf);
  return s;
}
