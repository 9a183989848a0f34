/* ir/verify.c: structural invariants of the IR, checked after every pass.
 *
 * Passes rewrite trees in place and by cloning; a pass that forgets to make
 * a fresh loop variable, leaves a `VAR` pointing at a variable that is no
 * longer bound, or builds a store with the wrong number of indices would
 * otherwise surface much later as a wrong kernel. The verifier walks the
 * whole operator once and reports every broken invariant it finds, each as
 * `IR verification failed after PASS: ...` at the node's location, so that
 * the failing pass is named. It checks structure and types only; the rules
 * of the language (domains of indices, races) are the checker's.
 *
 * Scope is tracked with one flag per variable of the operator: a loop
 * variable is in scope in its loop's body, a local from its `var` to the end
 * of the enclosing block.
 */
#include <stdlib.h>

#include "ir.h"

typedef struct Verifier {
  const IrOp *op;
  Diag *d;
  const char *after;
  bool ok;
  bool *in_scope; /* by var id */
  bool *bound;    /* by var id: already bound by some loop or `var` */
  int *let_lanes; /* by var id: @lane loops around the local's `var` */
  int lanes;      /* @lane loops around the statement being checked */
  const IrVar *group_var; /* the variable of the enclosing groups loop */
  int group_panel;        /* its @panel(P), 0 without */
  int pair_panel;         /* inside `for q in pairs(g)`: g's P, else 0 */
  const IrVar *pair_var;  /* and q */
  bool in_shared;         /* ... and it is @shared */
  int team;               /* the enclosing @warp loop's @team, 0: none */
  bool tiles_only;        /* every loop around the statement is an unbound
                             range loop holding only it (a feature-tile
                             loop around a groups loop) */
  Loc at;         /* the statement being checked, for missing operands */
} Verifier;

static void fail(Verifier *v, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(Verifier *v, Loc loc, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ir_error(v->d, loc, "IR verification failed after %s: %s", v->after, msg);
  v->ok = false;
}

static const char *type_name(IrType t) {
  switch (t) {
  case IR_TY_VOID: return "void";
  case IR_TY_FLOAT: return "float";
  case IR_TY_INT: return "int";
  case IR_TY_BOOL: return "bool";
  }
  return "invalid";
}

static bool kind_ok(IrKind k) { return (unsigned)k < IR_NODE_COUNT; }

/* A variable of this operator: the same pointer at its id. */
static bool var_of_op(Verifier *v, const IrVar *var) {
  return var && var->id >= 0 && var->id < v->op->nvars &&
         v->op->vars[var->id] == var;
}

static bool tensor_of_op(Verifier *v, const IrTensor *t) {
  return t && t->id >= 0 && t->id < v->op->ntensors &&
         v->op->tensors[t->id] == t;
}

static int tensor_rank(const IrTensor *t) {
  return t->ndims + (t->domain == IR_DOM_DENSE ? 0 : 1);
}

static void check_expr(Verifier *v, const IrNode *e, const char *where);

/* Checks `e` and that it has type `want`. */
static void check_typed(Verifier *v, const IrNode *e, IrType want,
                        const char *where) {
  if (!e) {
    fail(v, v->at, "missing %s", where);
    return;
  }
  check_expr(v, e, where);
  if (kind_ok(e->kind) && e->type != want)
    fail(v, e->loc, "%s `%s` has type %s, expected %s", where,
         ir_kind_name(e->kind), type_name(e->type), type_name(want));
}

static void check_access(Verifier *v, const IrNode *n) {
  const IrTensor *t = n->acc.tensor;
  if (!tensor_of_op(v, t)) {
    fail(v, n->loc, "%s of tensor %s that is not a tensor of op %s",
         ir_kind_name(n->kind), t ? t->name : "(null)", v->op->name);
    return;
  }
  int rank = tensor_rank(t);
  if (n->acc.nidx != rank) {
    fail(v, n->loc, "%s of %s has %d indices, its rank is %d",
         ir_kind_name(n->kind), t->name, n->acc.nidx, rank);
    return;
  }
  for (int i = 0; i < n->acc.nidx; i++)
    check_typed(v, n->acc.idx[i], IR_TY_INT, "index");
}

/* The type build.c gives a binary node with these operands, or VOID when
 * the operands make no sense together. */
static IrType bin_type(IrBinOp op, IrType a, IrType b) {
  switch (op) {
  case IR_OP_OR: case IR_OP_AND:
    return a == IR_TY_BOOL && b == IR_TY_BOOL ? IR_TY_BOOL : IR_TY_VOID;
  case IR_OP_EQ: case IR_OP_NE: case IR_OP_LT: case IR_OP_LE: case IR_OP_GT:
  case IR_OP_GE: case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV:
  case IR_OP_MOD: {
    bool num_a = a == IR_TY_INT || a == IR_TY_FLOAT;
    bool num_b = b == IR_TY_INT || b == IR_TY_FLOAT;
    if (!num_a || !num_b) return IR_TY_VOID;
    bool compare = op == IR_OP_EQ || op == IR_OP_NE || op == IR_OP_LT ||
                   op == IR_OP_LE || op == IR_OP_GT || op == IR_OP_GE;
    if (compare) return IR_TY_BOOL;
    return a == IR_TY_INT && b == IR_TY_INT ? IR_TY_INT : IR_TY_FLOAT;
  }
  case IR_BINOP_COUNT: break;
  }
  return IR_TY_VOID;
}

static void check_expr(Verifier *v, const IrNode *e, const char *where) {
  if (!kind_ok(e->kind)) {
    fail(v, e->loc, "node kind %d is not a valid kind", (int)e->kind);
    return;
  }
  switch (e->kind) {
  case IR_FCONST:
    if (e->type != IR_TY_FLOAT) fail(v, e->loc, "fconst has type %s", type_name(e->type));
    break;
  case IR_ICONST:
    if (e->type != IR_TY_INT) fail(v, e->loc, "iconst has type %s", type_name(e->type));
    break;
  case IR_VAR: {
    const IrVar *var = e->var;
    if (!var_of_op(v, var)) {
      fail(v, e->loc, "variable %s is not a variable of op %s",
           var ? var->name : "(null)", v->op->name);
      break;
    }
    if (!v->in_scope[var->id])
      fail(v, e->loc, "variable %s used out of its scope", var->name);
    IrType want = var->kind == IR_VAR_LOCAL ? IR_TY_FLOAT : IR_TY_INT;
    if (e->type != want)
      fail(v, e->loc, "variable %s has type %s, expected %s", var->name,
           type_name(e->type), type_name(want));
    break;
  }
  case IR_SYM: {
    const IrSym *s = e->sym;
    if (!s || s->id < 0 || s->id >= v->op->nsyms || v->op->syms[s->id] != s)
      fail(v, e->loc, "extent %s is not a symbol of op %s", s ? s->name : "(null)",
           v->op->name);
    else if (e->type != IR_TY_INT)
      fail(v, e->loc, "extent %s has type %s", s->name, type_name(e->type));
    break;
  }
  case IR_LOAD:
    check_access(v, e);
    if (e->type != IR_TY_FLOAT) fail(v, e->loc, "load has type %s", type_name(e->type));
    break;
  case IR_BIN: {
    if ((unsigned)e->bin.op >= IR_BINOP_COUNT) {
      fail(v, e->loc, "binary operator %d is not valid", (int)e->bin.op);
      break;
    }
    if (!e->bin.a || !e->bin.b) {
      fail(v, e->loc, "binary `%s` lacks an operand", ir_binop_name(e->bin.op));
      break;
    }
    check_expr(v, e->bin.a, "operand");
    check_expr(v, e->bin.b, "operand");
    if (!kind_ok(e->bin.a->kind) || !kind_ok(e->bin.b->kind)) break;
    IrType want = bin_type(e->bin.op, e->bin.a->type, e->bin.b->type);
    if (want == IR_TY_VOID)
      fail(v, e->loc, "binary `%s` applied to %s and %s", ir_binop_name(e->bin.op),
           type_name(e->bin.a->type), type_name(e->bin.b->type));
    else if (e->type != want)
      fail(v, e->loc, "binary `%s` has type %s, expected %s",
           ir_binop_name(e->bin.op), type_name(e->type), type_name(want));
    break;
  }
  case IR_UN: {
    if ((unsigned)e->un.op >= IR_UNOP_COUNT) {
      fail(v, e->loc, "unary operator %d is not valid", (int)e->un.op);
      break;
    }
    if (!e->un.a) {
      fail(v, e->loc, "unary `%s` lacks its operand", ir_unop_name(e->un.op));
      break;
    }
    check_expr(v, e->un.a, "operand");
    if (!kind_ok(e->un.a->kind)) break;
    IrType at = e->un.a->type;
    bool good = e->un.op == IR_UN_NOT ? at == IR_TY_BOOL
                                      : (at == IR_TY_INT || at == IR_TY_FLOAT);
    if (!good)
      fail(v, e->loc, "unary `%s` applied to %s", ir_unop_name(e->un.op), type_name(at));
    else if (e->type != at)
      fail(v, e->loc, "unary `%s` has type %s, expected %s", ir_unop_name(e->un.op),
           type_name(e->type), type_name(at));
    break;
  }
  case IR_CALL:
    if ((unsigned)e->call.fn >= IR_FN_COUNT) {
      fail(v, e->loc, "function %d is not valid", (int)e->call.fn);
      break;
    }
    if (e->call.nargs != ir_fn_nargs(e->call.fn)) {
      fail(v, e->loc, "%s takes %d arguments, the call has %d", ir_fn_name(e->call.fn),
           ir_fn_nargs(e->call.fn), e->call.nargs);
      break;
    }
    for (int i = 0; i < e->call.nargs; i++)
      check_typed(v, e->call.args[i], IR_TY_FLOAT, "argument");
    if (e->type != IR_TY_FLOAT)
      fail(v, e->loc, "call of %s has type %s", ir_fn_name(e->call.fn), type_name(e->type));
    break;
  case IR_SRC: case IR_DST: case IR_INDEG: case IR_OUTDEG: {
    bool endpoint = e->kind == IR_SRC || e->kind == IR_DST;
    check_typed(v, e->endpoint.e, IR_TY_INT, endpoint ? "edge" : "vertex");
    IrType want = endpoint ? IR_TY_INT : IR_TY_FLOAT;
    if (e->type != want)
      fail(v, e->loc, "%s has type %s, expected %s", ir_kind_name(e->kind),
           type_name(e->type), type_name(want));
    break;
  }
  case IR_NV: case IR_NE:
    if (e->type != IR_TY_INT)
      fail(v, e->loc, "%s has type %s", ir_kind_name(e->kind), type_name(e->type));
    break;
  case IR_OWNS: /* passes/panel.c: of the enclosing @panel groups loop's row */
    if (!e->endpoint.e || e->endpoint.e->kind != IR_VAR || !v->group_var ||
        e->endpoint.e->var != v->group_var || !v->group_panel)
      fail(v, e->loc, "owns() is not of the variable of an enclosing @panel "
           "groups loop");
    if (e->type != IR_TY_BOOL)
      fail(v, e->loc, "owns has type %s", type_name(e->type));
    break;
  case IR_LOOP: case IR_STORE: case IR_LET: case IR_SET: case IR_IF:
    fail(v, e->loc, "statement `%s` where an expression (%s) is expected",
         ir_kind_name(e->kind), where);
    break;
  case IR_NODE_COUNT:
    break;
  }
}

static void check_stmts(Verifier *v, const IrNode *list, bool top);

/* The kind of variable each loop binds. */
static bool loop_var_fits(IrLoopKind k, IrVarKind vk) {
  switch (k) {
  case IR_LOOP_SRC_V: return vk == IR_VAR_SRC_V;
  case IR_LOOP_DST_V: return vk == IR_VAR_DST_V;
  case IR_LOOP_IN_EDGES: case IR_LOOP_OUT_EDGES: case IR_LOOP_EDGES:
    return vk == IR_VAR_EDGE;
  case IR_LOOP_RANGE: return vk != IR_VAR_LOCAL;
  case IR_LOOP_GROUPS: return vk == IR_VAR_INDEX;
  case IR_LOOP_GROUP_EDGES: return vk == IR_VAR_EDGE;
  case IR_LOOP_GROUP_ROWS: return vk == IR_VAR_INDEX;
  case IR_LOOP_UNOWNED: return vk == IR_VAR_DST_V;
  case IR_LOOP_PAIRS: return vk == IR_VAR_PAIR;
  case IR_LOOP_PAIR_EDGE: return vk == IR_VAR_EDGE;
  case IR_LOOP_COUNT: break;
  }
  return false;
}

static void check_loop(Verifier *v, const IrNode *s, bool top) {
  IrLoopKind k = s->loop.kind;
  if ((unsigned)k >= IR_LOOP_COUNT) {
    fail(v, s->loc, "loop kind %d is not valid", (int)k);
    return;
  }
  bool wants_of = k == IR_LOOP_IN_EDGES || k == IR_LOOP_OUT_EDGES ||
                  k == IR_LOOP_GROUP_ROWS;
  bool wants_extent = k == IR_LOOP_RANGE;
  const char *kn = ir_loopkind_name(k);
  if (wants_of) check_typed(v, s->loop.of, IR_TY_INT, "vertex of the edge loop");
  else if (k == IR_LOOP_GROUP_EDGES) {
    /* docs/gpu-ir.md: the edges of a row of the table its groups loop reads */
    if (!s->loop.of || s->loop.of->kind != IR_VAR || !v->group_var ||
        s->loop.of->var != v->group_var)
      fail(v, s->loc, "group_edges loop %s is not over the variable of an "
           "enclosing groups loop", s->loop.var ? s->loop.var->name : "?");
  } else if (k == IR_LOOP_PAIRS) {
    /* passes/panel.c: the pairs of a row of the panel table */
    if (!s->loop.of || s->loop.of->kind != IR_VAR || !v->group_var ||
        s->loop.of->var != v->group_var || !v->group_panel)
      fail(v, s->loc, "pairs loop %s is not over the variable of an enclosing "
           "@panel groups loop", s->loop.var ? s->loop.var->name : "?");
  } else if (k == IR_LOOP_PAIR_EDGE) {
    if (!s->loop.of || s->loop.of->kind != IR_VAR || !v->pair_var ||
        s->loop.of->var != v->pair_var)
      fail(v, s->loc, "pair_edge loop %s is not over the variable of an "
           "enclosing pairs loop", s->loop.var ? s->loop.var->name : "?");
    else if (s->loop.slot < 0 || s->loop.slot >= v->pair_panel)
      fail(v, s->loc, "pair_edge loop %s has slot %d of a panel of %d",
           s->loop.var ? s->loop.var->name : "?", s->loop.slot, v->pair_panel);
  } else if (s->loop.of) fail(v, s->loc, "%s loop has a vertex (`of`)", kn);
  if (k == IR_LOOP_GROUPS) {
    if (s->loop.group < 1)
      fail(v, s->loc, "groups loop has group size %d", s->loop.group);
    if (!top && !v->tiles_only)
      fail(v, s->loc, "groups loop %s is neither a stage's outermost loop nor "
           "inside unbound range loops alone", s->loop.var ? s->loop.var->name : "?");
    if (s->loop.shared && s->loop.bind != IR_BIND_WARP)
      fail(v, s->loc, "@shared groups loop %s is not bound to warp: the "
           "accumulator rows are per warp", s->loop.var ? s->loop.var->name : "?");
  } else if (k == IR_LOOP_GROUP_ROWS) {
    /* passes/segment.c: the rows of one destination in a table */
    if (s->loop.group < 1)
      fail(v, s->loc, "group_rows loop has group size %d", s->loop.group);
    if (s->loop.shared) fail(v, s->loc, "group_rows loop is @shared");
  } else if (k == IR_LOOP_UNOWNED) {
    /* passes/lower_mean.c: the rows G-groups do not own */
    if (s->loop.group < 1)
      fail(v, s->loc, "unowned loop has group size %d", s->loop.group);
    if (!top) fail(v, s->loc, "unowned loop %s is not a stage's outermost loop",
                   s->loop.var ? s->loop.var->name : "?");
    if (s->loop.shared || s->loop.ilv || s->loop.ilv_cls || s->loop.ilv_thr)
      fail(v, s->loc, "unowned loop %s has @shared or interleaving",
           s->loop.var ? s->loop.var->name : "?");
  } else if (s->loop.group || s->loop.ilv || s->loop.ilv_cls || s->loop.ilv_thr ||
             s->loop.shared) {
    fail(v, s->loc, "%s loop has a group size or interleaving", kn);
  }
  if (s->loop.panel &&
      (s->loop.panel < IR_PANEL_MIN || s->loop.panel > IR_PANEL_MAX ||
       (k != IR_LOOP_GROUPS && k != IR_LOOP_UNOWNED) || s->loop.ilv || s->loop.shared))
    fail(v, s->loc, "%s loop has @panel(%d): panels of %d to %d destinations "
         "are for groups and unowned loops without interleaving or @shared", kn,
         s->loop.panel, IR_PANEL_MIN, IR_PANEL_MAX);
  if (s->loop.slot && k != IR_LOOP_PAIR_EDGE)
    fail(v, s->loc, "%s loop has a slot", kn);
  /* passes/interleave.c: 2..8 classes when interleaved, none otherwise; a
   * degree threshold splits two classes only */
  if (s->loop.ilv < 0 || s->loop.ilv_thr < 0 || (s->loop.ilv_thr && !s->loop.ilv) ||
      (s->loop.ilv ? s->loop.ilv_cls < 2 || s->loop.ilv_cls > IR_MAX_CLASSES
                   : s->loop.ilv_cls != 0) ||
      (s->loop.ilv_thr && s->loop.ilv_cls != 2))
    fail(v, s->loc, "groups loop has interleaving distance %d, %d classes, "
         "threshold %d", s->loop.ilv, s->loop.ilv_cls, s->loop.ilv_thr);
  if (wants_extent) check_typed(v, s->loop.extent, IR_TY_INT, "extent of the range loop");
  else if (s->loop.extent) fail(v, s->loc, "%s loop has an extent", kn);
  if ((unsigned)s->loop.bind >= IR_BIND_COUNT)
    fail(v, s->loc, "loop binding %d is not valid", (int)s->loop.bind);
  if (s->loop.unroll < 0)
    fail(v, s->loc, "loop unroll factor %d is negative", s->loop.unroll);
  if (s->loop.vec < 0) fail(v, s->loc, "loop vector width %d is negative", s->loop.vec);
  /* docs/gpu-ir.md: a stage's block size, a multiple of 32 up to 1024. */
  if (s->loop.threads != 0) {
    if (s->loop.threads < 0 || s->loop.threads > 1024 || s->loop.threads % 32 != 0)
      fail(v, s->loc, "loop threads %d is not a multiple of 32 up to 1024",
           s->loop.threads);
    else if (!top)
      fail(v, s->loc, "loop threads %d on a loop that is not a stage",
           s->loop.threads);
  }

  /* docs/gpu-ir.md: a stage's occupancy, threads per SM, a multiple of 32
   * up to 2048 (passes/occupancy.c). */
  if (s->loop.occ != 0) {
    if (s->loop.occ < IR_OCC_MIN || s->loop.occ > IR_OCC_MAX || s->loop.occ % 32 != 0)
      fail(v, s->loc, "loop occupancy %d is not a multiple of 32 from %d to %d",
           s->loop.occ, IR_OCC_MIN, IR_OCC_MAX);
    else if (!top)
      fail(v, s->loc, "loop occupancy %d on a loop that is not a stage", s->loop.occ);
  }

  /* docs/gpu-ir.md: a team of T lanes per iteration of a @warp loop; the
   * warp-wide forms (shared accumulators, prefetch's shuffles) need the
   * whole warp on one iteration */
  if (s->loop.team != 0) {
    if (s->loop.team < 1 || s->loop.team > 16 || (s->loop.team & (s->loop.team - 1)))
      fail(v, s->loc, "loop team %d is not a power of two below 32", s->loop.team);
    else if (s->loop.bind != IR_BIND_WARP)
      fail(v, s->loc, "loop team %d on a loop not bound to warp", s->loop.team);
    else if (s->loop.shared)
      fail(v, s->loc, "@shared groups loop with a team: the accumulator rows "
           "are per warp");
  }
  if (s->loop.prefetch && v->team)
    fail(v, s->loc, "@prefetch loop inside a @team(%d) loop: its shuffles "
         "broadcast across the whole warp", v->team);

  const IrVar *var = s->loop.var;
  bool var_good = var_of_op(v, var);
  if (!var_good) {
    fail(v, s->loc, "loop variable %s is not a variable of op %s",
         var ? var->name : "(null)", v->op->name);
  } else {
    if (!loop_var_fits(k, var->kind))
      fail(v, s->loc, "%s loop binds %s, a %s variable", kn, var->name,
           ir_varkind_name(var->kind));
    if (v->bound[var->id])
      fail(v, s->loc, "loop variable %s is bound by more than one loop", var->name);
    v->bound[var->id] = true;
    v->in_scope[var->id] = true;
  }
  v->lanes += s->loop.bind == IR_BIND_LANE;
  const IrVar *saved_group = v->group_var;
  const IrVar *saved_pair = v->pair_var;
  int saved_gpanel = v->group_panel, saved_ppanel = v->pair_panel;
  bool saved_shared = v->in_shared;
  if (k == IR_LOOP_GROUPS && var_good) {
    v->group_var = var;
    v->group_panel = s->loop.panel;
  }
  if (k == IR_LOOP_PAIRS && var_good) {
    v->pair_var = var;
    v->pair_panel = v->group_panel;
  }
  if (k == IR_LOOP_GROUPS) v->in_shared = s->loop.shared;
  int saved_team = v->team;
  if (s->loop.team) v->team = s->loop.team;
  bool saved_tiles = v->tiles_only;
  v->tiles_only = (top || v->tiles_only) && k == IR_LOOP_RANGE &&
                  s->loop.bind == IR_BIND_NONE && s->loop.body && !s->loop.body->next;
  check_stmts(v, s->loop.body, false);
  v->tiles_only = saved_tiles;
  v->team = saved_team;
  v->group_var = saved_group;
  v->group_panel = saved_gpanel;
  v->pair_var = saved_pair;
  v->pair_panel = saved_ppanel;
  v->in_shared = saved_shared;
  v->lanes -= s->loop.bind == IR_BIND_LANE;
  if (var_good) v->in_scope[var->id] = false;
}

static void check_stmt(Verifier *v, const IrNode *s, bool top) {
  if (!kind_ok(s->kind)) {
    fail(v, s->loc, "node kind %d is not a valid kind", (int)s->kind);
    return;
  }
  v->at = s->loc;
  if ((s->kind == IR_LOOP || s->kind == IR_STORE || s->kind == IR_LET ||
       s->kind == IR_SET || s->kind == IR_IF) && s->type != IR_TY_VOID)
    fail(v, s->loc, "statement `%s` has type %s", ir_kind_name(s->kind),
         type_name(s->type));
  switch (s->kind) {
  case IR_LOOP: check_loop(v, s, top); break;
  case IR_STORE:
    check_access(v, s);
    if (s->acc.tensor && tensor_of_op(v, s->acc.tensor) &&
        s->acc.tensor->role == IR_ROLE_IN)
      fail(v, s->loc, "store to %s, an input", s->acc.tensor->name);
    if ((unsigned)s->acc.red >= IR_RED_COUNT)
      fail(v, s->loc, "reduction %d is not valid", (int)s->acc.red);
    if ((unsigned)s->acc.how >= IR_HOW_COUNT)
      fail(v, s->loc, "store kind %d is not valid", (int)s->acc.how);
    else if (s->acc.how == IR_HOW_SHUFFLE)
      fail(v, s->loc, "store kind shuffle is for reductions into locals, not "
           "into tensor %s", s->acc.tensor ? s->acc.tensor->name : "?");
    else if (s->acc.how == IR_HOW_SHUFFLE)
      fail(v, s->loc, "store to %s is `shuffle`, which is for locals",
           s->acc.tensor ? s->acc.tensor->name : "?");
    else if (s->acc.how == IR_HOW_SHARED && !v->in_shared)
      fail(v, s->loc, "`shared` store to %s is in no @shared groups loop",
           s->acc.tensor ? s->acc.tensor->name : "?");
    check_typed(v, s->acc.value, IR_TY_FLOAT, "stored value");
    break;
  case IR_LET: {
    const IrVar *var = s->let.var;
    /* The initialiser is checked before the local comes into scope. */
    check_typed(v, s->let.init, IR_TY_FLOAT, "initialiser");
    if (!var_of_op(v, var)) {
      fail(v, s->loc, "local %s is not a variable of op %s", var ? var->name : "(null)",
           v->op->name);
      break;
    }
    if (var->kind != IR_VAR_LOCAL)
      fail(v, s->loc, "`var %s` declares a %s variable, not a local", var->name,
           ir_varkind_name(var->kind));
    if (v->in_scope[var->id])
      fail(v, s->loc, "local %s is declared again while in scope", var->name);
    v->in_scope[var->id] = true;
    v->bound[var->id] = true;
    v->let_lanes[var->id] = v->lanes;
    break;
  }
  case IR_SET: {
    const IrVar *var = s->set.var;
    if (!var_of_op(v, var))
      fail(v, s->loc, "assignment to %s, not a variable of op %s",
           var ? var->name : "(null)", v->op->name);
    else if (var->kind != IR_VAR_LOCAL)
      fail(v, s->loc, "assignment to %s, a %s variable, not a local", var->name,
           ir_varkind_name(var->kind));
    else if (!v->in_scope[var->id])
      fail(v, s->loc, "assignment to local %s out of its scope", var->name);
    if ((unsigned)s->set.red >= IR_RED_COUNT)
      fail(v, s->loc, "reduction %d is not valid", (int)s->set.red);
    /* docs/gpu-ir.md: a local's reduction is its worker's own, or combined
     * across the lanes of a warp from inside a @lane loop its `var` is
     * outside of (passes/conflicts.c checks the rest). */
    if (s->set.how != IR_HOW_AUTO && s->set.how != IR_HOW_SHUFFLE)
      fail(v, s->loc, "assignment kind %d is not valid for local %s", (int)s->set.how,
           var_of_op(v, var) ? var->name : "?");
    else if (s->set.how == IR_HOW_SHUFFLE) {
      if (s->set.red != IR_RED_ADD && s->set.red != IR_RED_MAX &&
          s->set.red != IR_RED_MIN)
        fail(v, s->loc, "shuffle reduction into a local must be +=, max= or min=");
      else if (var_of_op(v, var) && v->in_scope[var->id] &&
               v->lanes <= v->let_lanes[var->id])
        fail(v, s->loc, "shuffle reduction into local %s is in no @lane loop "
             "that its `var` is outside of", var->name);
    }
    check_typed(v, s->set.value, IR_TY_FLOAT, "assigned value");
    break;
  }
  case IR_IF: {
    check_typed(v, s->ifs.cond, IR_TY_BOOL, "condition");
    bool saved_tiles = v->tiles_only; /* a guard is not a tile loop */
    v->tiles_only = false;
    check_stmts(v, s->ifs.then, false);
    v->tiles_only = saved_tiles;
    break;
  }
  case IR_FCONST: case IR_ICONST: case IR_VAR: case IR_SYM: case IR_LOAD:
  case IR_BIN: case IR_UN: case IR_CALL: case IR_SRC: case IR_DST:
  case IR_INDEG: case IR_OUTDEG: case IR_NV: case IR_NE: case IR_OWNS:
    fail(v, s->loc, "expression `%s` where a statement is expected",
         ir_kind_name(s->kind));
    break;
  case IR_NODE_COUNT:
    break;
  }
}

/* A block: the locals it declares go out of scope at its end. `top`: the
 * op's body, whose statements are the stages. */
static void check_stmts(Verifier *v, const IrNode *list, bool top) {
  for (const IrNode *s = list; s; s = s->next) check_stmt(v, s, top);
  for (const IrNode *s = list; s; s = s->next)
    if (kind_ok(s->kind) && s->kind == IR_LET && var_of_op(v, s->let.var))
      v->in_scope[s->let.var->id] = false;
}

static void check_tensors(Verifier *v) {
  const IrOp *op = v->op;
  int nin = 0, nout = 0, ntemp = 0;
  IrRole prev = IR_ROLE_IN;
  if (op->acc != IR_DT_F32 && op->acc != IR_DT_F64)
    fail(v, op->loc, "op %s has accumulator type %s: only f32 and f64 are", op->name,
         (unsigned)op->acc < IR_DT_COUNT ? ir_dtype_name(op->acc) : "invalid");
  for (int i = 0; i < op->ntensors; i++) {
    const IrTensor *t = op->tensors[i];
    if (!t) {
      fail(v, op->loc, "tensor %d of op %s is missing", i, op->name);
      continue;
    }
    if (t->id != i) fail(v, t->loc, "tensor %s has id %d at position %d", t->name, t->id, i);
    if ((unsigned)t->role > IR_ROLE_TEMP) {
      fail(v, t->loc, "tensor %s has an invalid role %d", t->name, (int)t->role);
      continue;
    }
    if (t->role < prev)
      fail(v, t->loc, "tensor %s is out of order: inputs, then outputs, then "
           "temporaries", t->name);
    prev = t->role;
    nin += t->role == IR_ROLE_IN;
    nout += t->role == IR_ROLE_OUT;
    ntemp += t->role == IR_ROLE_TEMP;
    if ((unsigned)t->dtype >= IR_DT_COUNT)
      fail(v, t->loc, "tensor %s has an invalid dtype %d", t->name, (int)t->dtype);
    else if (t->dtype == IR_DT_F64 && op->acc != IR_DT_F64)
      fail(v, t->loc, "tensor %s is f64 but op %s accumulates in %s", t->name,
           op->name, ir_dtype_name(op->acc));
    if ((unsigned)t->domain >= IR_DOM_COUNT)
      fail(v, t->loc, "tensor %s has an invalid domain %d", t->name, (int)t->domain);
    /* passes/segment.c: a row per row of a group table, only as a temporary */
    if (t->domain == IR_DOM_GROUPS && (t->group < 1 || t->role != IR_ROLE_TEMP))
      fail(v, t->loc, "tensor %s on the rows of a group table has group size "
           "%d and is not a temporary", t->name, t->group);
    else if (t->domain != IR_DOM_GROUPS && t->group)
      fail(v, t->loc, "tensor %s has a group size but is not on group rows", t->name);
    /* promote(t, shared): every kernel copies it whole into shared memory */
    if (t->shared && (t->role != IR_ROLE_IN || t->domain != IR_DOM_DENSE))
      fail(v, t->loc, "tensor %s is @shared but is not a dense input", t->name);
    if (t->ndims < 0 || t->ndims > IR_MAX_DIMS) {
      fail(v, t->loc, "tensor %s has %d dimensions (at most %d)", t->name, t->ndims,
           IR_MAX_DIMS);
      continue;
    }
    for (int j = 0; j < t->ndims; j++) {
      const IrSym *s = t->dims[j].sym;
      if (s && (s->id < 0 || s->id >= op->nsyms || op->syms[s->id] != s))
        fail(v, t->loc, "dimension %d of %s is extent %s, not a symbol of op %s", j,
             t->name, s->name, op->name);
      else if (!s && t->dims[j].value <= 0)
        fail(v, t->loc, "dimension %d of %s is %lld, not positive", j, t->name,
             (long long)t->dims[j].value);
    }
  }
  if (nin != op->ninputs || nout != op->noutputs)
    fail(v, op->loc, "op %s counts %d inputs and %d outputs but holds %d and %d",
         op->name, op->ninputs, op->noutputs, nin, nout);
  if (op->ninputs + op->noutputs + ntemp != op->ntensors)
    fail(v, op->loc, "op %s: %d inputs + %d outputs + %d temporaries != %d tensors",
         op->name, op->ninputs, op->noutputs, ntemp, op->ntensors);
  for (int i = 0; i < op->nsyms; i++)
    if (!op->syms[i] || op->syms[i]->id != i)
      fail(v, op->loc, "extent %d of op %s has the wrong id", i, op->name);
  for (int i = 0; i < op->nvars; i++)
    if (!op->vars[i] || op->vars[i]->id != i)
      fail(v, op->loc, "variable %d of op %s has the wrong id", i, op->name);
}

bool ir_verify_op(const IrOp *op, Diag *d, const char *after) {
  Verifier v = {.op = op, .d = d, .after = after ? after : "?", .ok = true};
  size_t n = op->nvars > 0 ? (size_t)op->nvars : 1;
  v.in_scope = calloc(n, sizeof(bool));
  v.bound = calloc(n, sizeof(bool));
  v.let_lanes = calloc(n, sizeof(int));
  if (!v.in_scope || !v.bound || !v.let_lanes) {
    free(v.in_scope);
    free(v.bound);
    free(v.let_lanes);
    ir_error(d, op->loc, "out of memory verifying op %s", op->name);
    return false;
  }
  check_tensors(&v);
  check_stmts(&v, op->body, true);
  free(v.in_scope);
  free(v.bound);
  free(v.let_lanes);
  return v.ok;
}
