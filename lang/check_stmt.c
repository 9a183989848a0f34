/* lang/check_stmt.c: the checker's statements (lang/check.h).
 *
 * A block, and each statement in it: locals, stores to tensor elements and
 * assignments to locals (with the rules on reductions and on races between
 * the iterations of the loops around them), IR text's guards, and loops,
 * whose headers check_loop.c checks.
 */
#include <string.h>

#include "lang/check.h"

/* ===========================================================================
 * Statements
 */

/* Marks the variables that `e` pins down in `covered` (by IrVar.id): a
 * variable used anywhere in the index; an edge variable also pins the vertex
 * its loop runs over, and dst(e) of `in_edges(v)` (src(e) of
 * `out_edges(u)`) pins that vertex, not the edge. */
static const LoopCtx *loop_of(const Checker *c, const IrVar *v) {
  for (int i = 0; i < c->nloops; i++)
    if (c->loops[i].var == v) return &c->loops[i];
  return NULL;
}

static void cover(const Checker *c, const IrNode *e, bool *covered) {
  if (!e) return;
  switch (e->kind) {
  case IR_VAR: {
    covered[e->var->id] = true;
    const LoopCtx *l = loop_of(c, e->var);
    if (l && l->of) cover(c, l->of, covered);
    return;
  }
  case IR_SRC:
  case IR_DST: {
    const IrNode *edge = e->endpoint.e;
    const LoopCtx *l = edge->kind == IR_VAR ? loop_of(c, edge->var) : NULL;
    if (l && l->of &&
        ((e->kind == IR_DST && l->kind == IR_LOOP_IN_EDGES) ||
         (e->kind == IR_SRC && l->kind == IR_LOOP_OUT_EDGES)))
      cover(c, l->of, covered);
    return;
  }
  case IR_BIN:
    cover(c, e->bin.a, covered);
    cover(c, e->bin.b, covered);
    return;
  case IR_UN: cover(c, e->un.a, covered); return;
  default: return;
  }
}

/* A plain `=` store must write a different element on every iteration of
 * every loop around it, or the iterations race. */
static void check_race(Checker *c, const IrTensor *t, IrNode **idx, int nidx,
                       Loc loc) {
  bool *covered = IR_NEW_ARRAY(c->a, bool, c->op->nvars + 1);
  for (int i = 0; i < nidx; i++) cover(c, idx[i], covered);
  for (int i = 0; i < c->nloops; i++) {
    const IrVar *v = c->loops[i].var;
    if (!covered[v->id]) {
      check_error(c, loc, "plain `=` to `%s` races: the iterations of loop "
                  "`%s` write the same element (its index does not use `%s`); "
                  "use a reduction such as `+=`", t->name, v->name, v->name);
      return;
    }
  }
}

static bool in_edge_loop(const Checker *c) {
  for (int i = 0; i < c->nloops; i++) {
    IrLoopKind k = c->loops[i].kind;
    if (k == IR_LOOP_IN_EDGES || k == IR_LOOP_OUT_EDGES || k == IR_LOOP_EDGES)
      return true;
  }
  return false;
}

/* IR text: `plain` or `atomic` before a store (docs/gpu-ir.md). Returns
 * false if refused. */
static bool check_how(Checker *c, const LangNode *s, IrHow *how) {
  *how = IR_HOW_AUTO;
  const char *name = s->assign.how;
  if (!name) return true;
  if (!c->ir) {
    check_error(c, s->loc, "`%s` stores are only allowed in IR text; the "
                "conflict analysis decides how a reduction is done", name);
    return false;
  }
  for (int h = 0; h < IR_HOW_COUNT; h++)
    if (!strcmp(ir_how_name((IrHow)h), name)) {
      *how = (IrHow)h;
      return true;
    }
  check_error(c, s->loc, "unknown store kind `%s`; expected plain or atomic",
              name);
  return false;
}

/* T[idx] op= value */
static IrNode *check_store(Checker *c, const LangNode *s, IrTensor *t,
                           const LangNode *idx) {
  IrRed red = s->assign.red;
  const LangNode *target = s->assign.target;
  IrHow how;
  bool ok = check_how(c, s, &how);
  if (t->role == IR_ROLE_IN) {
    check_error(c, target->loc, "cannot write to `%s`: it is an input of op "
                "`%s`", t->name, c->op->name);
    ok = false;
  }
  IrNode *ix[IR_MAX_IDX];
  int nidx = lang_list_len(idx);
  ok &= check_access(c, t, target, idx, ix);
  IrNode *value = check_value_expr(c, s->assign.value);
  TensorState *ts = &c->ts[t->id];
  ts->written = true;
  if (red != IR_RED_ASSIGN) {
    if (ts->red != IR_RED_ASSIGN && ts->red != red) {
      check_error(c, s->loc, "`%s` is the target of both `%s` (at %d:%d) and "
                  "`%s`; a tensor has one kind of reduction", t->name,
                  ir_red_name(ts->red), ts->red_loc.line, ts->red_loc.col,
                  ir_red_name(red));
      ok = false;
    } else if (ts->red == IR_RED_ASSIGN) {
      ts->red = red;
      ts->red_loc = s->loc;
    }
  }
  if (red == IR_RED_MEAN) {
    if (t->domain != IR_DOM_SRC && t->domain != IR_DOM_DST) {
      check_error(c, s->loc, "mean= target `%s` must live on src or dst "
                  "vertices, not on %s", t->name, check_domain_rows(t->domain));
      ok = false;
    } else if (!in_edge_loop(c)) {
      check_error(c, s->loc, "mean= must be inside an edge loop: it averages "
                  "over the edges of a vertex");
      ok = false;
    }
  }
  if (!ok || !value) return NULL;
  /* IR text: a `plain =` is lowering's decision (promote.c marks the store
   * of a group that is its destination's only one, under a guard) */
  if (red == IR_RED_ASSIGN && how != IR_HOW_PLAIN) check_race(c, t, ix, nidx, s->loc);
  IrNode *store = ir_store(c->a, s->loc, t, nidx, ix, red, value);
  store->acc.how = how;
  return store;
}

/* NAME op= value: a local, or a scalar tensor by its bare name. */
static IrNode *check_set(Checker *c, const LangNode *s) {
  const LangNode *target = s->assign.target;
  const char *name = target->name;
  Binding *b = check_lookup(c, name);
  if (!b) {
    if (check_is_bad_tensor(c, name)) return NULL;
    IrTensor *t = ir_op_find_tensor(c->op, name);
    if (t && t->domain == IR_DOM_DENSE && t->ndims == 0)
      return check_store(c, s, t, NULL);
    IrNode *value = check_value_expr(c, s->assign.value);
    (void)value;
    if (t)
      check_error(c, target->loc, "`%s` is %s: write to an element %s[...]",
                  name, check_type_string(c, t), name);
    else if (check_find_sym(c->op, name))
      check_error(c, target->loc, "cannot assign to extent symbol `%s`", name);
    else
      check_unknown_name(c, name, target->loc);
    return NULL;
  }
  IrNode *value = check_value_expr(c, s->assign.value);
  if (!b->var) return NULL;
  if (b->var->kind != IR_VAR_LOCAL) {
    check_error(c, target->loc, "cannot assign to %s `%s`: loop variables are "
                "read only", ir_varkind_name(b->var->kind), name);
    return NULL;
  }
  if (s->assign.red == IR_RED_MEAN) {
    check_error(c, s->loc, "mean= needs a tensor element as target");
    return NULL;
  }
  /* IR text: `shuffle s += x`, a cross-lane reduction (docs/gpu-ir.md) */
  IrHow how = IR_HOW_AUTO;
  if (s->assign.how && c->ir && !strcmp(s->assign.how, ir_how_name(IR_HOW_SHUFFLE)) &&
      s->assign.red != IR_RED_ASSIGN) {
    how = IR_HOW_SHUFFLE;
  } else if (s->assign.how) {
    check_error(c, s->loc, "`%s` applies to tensor stores, not to local `%s`%s",
          s->assign.how, name,
          c->ir ? " (a local's reduction may only be `shuffle`)" : "");
    return NULL;
  }
  /* IR text: scheduling may move accumulators; races are its concern */
  for (int i = b->nloops; i < c->nloops && !c->ir; i++) {
    IrLoopKind k = c->loops[i].kind;
    if (k == IR_LOOP_DST_V || k == IR_LOOP_SRC_V || k == IR_LOOP_EDGES) {
      check_error(c, s->loc, "local `%s` is declared outside %s `%s` and "
                  "cannot be written inside it: each iteration of a stage has "
                  "its own locals; reduce into a tensor instead", name,
                  check_loop_word(k), c->loops[i].var->name);
      return NULL;
    }
  }
  if (s->assign.red == IR_RED_ASSIGN && !c->ir && b->nloops < c->nloops) {
    check_error(c, s->loc, "plain `=` to local `%s` races: it is declared "
                "outside loop `%s`, whose iterations all write it; declare it "
                "inside the loop or use a reduction", name,
                c->loops[b->nloops].var->name);
    return NULL;
  }
  if (!value) return NULL;
  IrNode *set = ir_set(c->a, s->loc, b->var, s->assign.red, value);
  set->set.how = how;
  return set;
}

static IrNode *check_stmt(Checker *c, const LangNode *s) {
  switch (s->kind) {
  case LANG_TENSOR: return NULL; /* declared (or refused) by declare_temps */
  case LANG_VAR: {
    c->pending = s->var.name;
    IrNode *init = check_value_expr(c, s->var.init);
    c->pending = NULL;
    IrVar *var = NULL;
    if (check_new_name(c, s->var.name, s->loc, "local"))
      var = ir_op_add_var(c->a, c->op, s->var.name, s->loc, IR_VAR_LOCAL);
    check_bind(c, s->var.name, var, s->loc);
    return var && init ? ir_let(c->a, s->loc, var, init) : NULL;
  }
  case LANG_ASSIGN: {
    const LangNode *target = s->assign.target;
    if (target->kind == LANG_NAME) return check_set(c, s);
    IrTensor *t = check_find_tensor(c, target->elem.name, target->loc);
    if (!t) {
      check_value_expr(c, s->assign.value); /* still report its mistakes */
      return NULL;
    }
    return check_store(c, s, t, target->elem.idx);
  }
  case LANG_FOR: return check_loop(c, s);
  case LANG_IF: {
    if (!c->ir) {
      check_error(c, s->loc, "`if` guards are only allowed in IR text");
      check_block(c, s->ifs.then);
      return NULL;
    }
    IrNode *cond = check_cond_expr(c, s->ifs.cond);
    IrNode *then = check_block(c, s->ifs.then);
    return cond ? ir_if(c->a, s->loc, cond, then) : NULL;
  }
  default: break;
  }
  unreachable("not a statement");
}

IrNode *check_block(Checker *c, const LangNode *list) {
  int mark = c->nbinds;
  IrNode *head = NULL, **tail = &head;
  for (const LangNode *s = list; s; s = s->next) {
    IrNode *n = check_stmt(c, s);
    if (n) {
      *tail = n;
      tail = &n->next;
    }
  }
  c->nbinds = mark;
  return head;
}
