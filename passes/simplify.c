/* passes/simplify.c: index simplification, constant folding, dead code.
 *
 * Contract: requires nothing; breaks nothing. Scheduling writes index
 * arithmetic mechanically (a split by 1 leaves a loop of one iteration, a
 * fuse of a tile of 1 leaves `w / 1`); this pass puts it in the form a
 * reader and the conflict analysis expect:
 *
 *   - integer constants fold; x + 0, x * 1, x / 1 become x; x % 1 and x * 0
 *     become 0;
 *   - (p * c + q) / c becomes p and (p * c + q) % c becomes q when q is
 *     known to lie in [0, c) (a loop variable of extent c, or r % c);
 *   - a sequential loop of one iteration is replaced by its body with the
 *     variable set to 0;
 *   - a guard that always holds goes (a constant comparison, `i < N` inside
 *     `for i in 0..N`, or a repeat of an enclosing guard);
 *   - empty loops and guards go, and locals that are never read.
 *
 * It runs to a fixed point; each rule only ever shrinks the tree.
 */
#include <string.h>

#include "passes/passes.h"

typedef struct Simp {
  Arena *a;
  IrOp *op;
  bool changed;
  const IrNode *loops[PASS_MAX_DEPTH * 2]; /* enclosing loops */
  int nloops;
  const IrNode *guards[PASS_MAX_DEPTH * 2]; /* enclosing guard conditions */
  int nguards;
} Simp;

static const IrNode *loop_of(const Simp *s, const IrVar *v) {
  for (int i = s->nloops - 1; i >= 0; i--)
    if (s->loops[i]->loop.var == v) return s->loops[i];
  return NULL;
}

/* Whether q is known to lie in [0, c). */
static bool below(const Simp *s, const IrNode *q, const IrNode *c) {
  if (q->kind == IR_ICONST)
    return c->kind == IR_ICONST && q->i >= 0 && q->i < c->i;
  if (q->kind == IR_VAR) {
    const IrNode *l = loop_of(s, q->var);
    if (!l || l->loop.kind != IR_LOOP_RANGE) return false;
    const IrNode *ext = l->loop.extent;
    if (pass_expr_equal(ext, c)) return true;
    return ext->kind == IR_ICONST && c->kind == IR_ICONST && ext->i <= c->i;
  }
  if (q->kind == IR_BIN && q->bin.op == IR_OP_MOD) return pass_expr_equal(q->bin.b, c);
  return false;
}

/* x as p * c + q with q in [0, c): fills p and q. */
static bool split_form(const Simp *s, const IrNode *x, const IrNode *c,
                       IrNode **p, IrNode **q) {
  if (x->kind != IR_BIN || x->bin.op != IR_OP_ADD) return false;
  for (int side = 0; side < 2; side++) {
    IrNode *m = side ? x->bin.b : x->bin.a;
    IrNode *r = side ? x->bin.a : x->bin.b;
    if (m->kind == IR_BIN && m->bin.op == IR_OP_MUL && pass_expr_equal(m->bin.b, c) &&
        below(s, r, c)) {
      *p = m->bin.a;
      *q = r;
      return true;
    }
  }
  return false;
}

static void simp_expr(Simp *s, IrNode **slot);

static void simp_operand(IrNode **slot, void *s) { simp_expr(s, slot); }

static void replace(Simp *s, IrNode **slot, IrNode *with) {
  *slot = with;
  s->changed = true;
}

static void simp_expr(Simp *s, IrNode **slot) {
  IrNode *e = *slot;
  if (!e) return;
  ir_each_operand(e, simp_operand, s);
  if (e->kind != IR_BIN || e->type != IR_TY_INT) return;
  IrNode *x = e->bin.a, *y = e->bin.b;
  bool cx = x->kind == IR_ICONST, cy = y->kind == IR_ICONST;
  Loc at = e->loc;
  switch (e->bin.op) {
  case IR_OP_ADD:
  case IR_OP_SUB:
    if (cx && cy)
      replace(s, slot, ir_iconst(s->a, at, e->bin.op == IR_OP_ADD ? x->i + y->i : x->i - y->i));
    else if (cy && y->i == 0) replace(s, slot, x);
    else if (cx && x->i == 0 && e->bin.op == IR_OP_ADD) replace(s, slot, y);
    return;
  case IR_OP_MUL:
    if (cx && cy) replace(s, slot, ir_iconst(s->a, at, x->i * y->i));
    else if ((cx && x->i == 0) || (cy && y->i == 0)) replace(s, slot, ir_iconst(s->a, at, 0));
    else if (cy && y->i == 1) replace(s, slot, x);
    else if (cx && x->i == 1) replace(s, slot, y);
    return;
  case IR_OP_DIV:
  case IR_OP_MOD: {
    bool div = e->bin.op == IR_OP_DIV;
    IrNode *p, *q;
    if (cx && cy && y->i > 0 && x->i >= 0)
      replace(s, slot, ir_iconst(s->a, at, div ? x->i / y->i : x->i % y->i));
    else if (cy && y->i == 1) replace(s, slot, div ? x : ir_iconst(s->a, at, 0));
    else if (split_form(s, x, y, &p, &q)) replace(s, slot, div ? p : q);
    else if (x->kind == IR_BIN && x->bin.op == IR_OP_MUL && pass_expr_equal(x->bin.b, y))
      replace(s, slot, div ? x->bin.a : ir_iconst(s->a, at, 0));
    return;
  }
  default: return;
  }
}

/* 1: always true, 0: always false, -1: unknown. */
static int decide(const Simp *s, const IrNode *c) {
  if (c->kind != IR_BIN) return -1;
  for (int i = 0; i < s->nguards; i++)
    if (pass_expr_equal(s->guards[i], c)) return 1;
  const IrNode *x = c->bin.a, *y = c->bin.b;
  if (x->kind == IR_ICONST && y->kind == IR_ICONST) {
    switch (c->bin.op) {
    case IR_OP_LT: return x->i < y->i;
    case IR_OP_LE: return x->i <= y->i;
    case IR_OP_GT: return x->i > y->i;
    case IR_OP_GE: return x->i >= y->i;
    case IR_OP_EQ: return x->i == y->i;
    case IR_OP_NE: return x->i != y->i;
    default: return -1;
    }
  }
  if (c->bin.op == IR_OP_LT && below(s, x, y)) return 1;
  return -1;
}

/* Whether local `v` is read (not just assigned) in `n` and what follows. */
static bool reads_local(const IrNode *n, const IrVar *v) {
  for (; n; n = n->next) {
    switch (n->kind) {
    case IR_SET:
      if (reads_local(n->set.value, v)) return true;
      break;
    case IR_LET:
      if (reads_local(n->let.init, v)) return true;
      break;
    case IR_LOOP:
      if (reads_local(n->loop.body, v)) return true;
      break;
    case IR_IF:
      if (reads_local(n->ifs.cond, v) || reads_local(n->ifs.then, v)) return true;
      break;
    case IR_STORE:
      if (reads_local(n->acc.value, v)) return true;
      break;
    case IR_VAR:
      if (n->var == v) return true;
      break;
    case IR_BIN:
      if (reads_local(n->bin.a, v) || reads_local(n->bin.b, v)) return true;
      break;
    case IR_UN:
      if (reads_local(n->un.a, v)) return true;
      break;
    case IR_CALL:
      for (int i = 0; i < n->call.nargs; i++)
        if (reads_local(n->call.args[i], v)) return true;
      break;
    default: break;
    }
  }
  return false;
}

static void drop_sets(IrNode **list, const IrVar *v) {
  for (IrNode **p = list; *p;) {
    IrNode *s = *p;
    if (s->kind == IR_SET && s->set.var == v) {
      *p = s->next;
      continue;
    }
    if (s->kind == IR_LOOP) drop_sets(&s->loop.body, v);
    if (s->kind == IR_IF) drop_sets(&s->ifs.then, v);
    p = &s->next;
  }
}

/* Splices list `body` in place of the statement at *p; returns the slot
 * after it. */
static IrNode **splice(IrNode **p, IrNode *body) {
  IrNode *after = (*p)->next;
  if (!body) {
    *p = after;
    return p;
  }
  *p = body;
  IrNode **q = p;
  while (*q) q = &(*q)->next;
  *q = after;
  return p; /* revisit the spliced statements */
}

static void simp_list(Simp *s, IrNode **list, bool top);

static void simp_stmt_exprs(Simp *s, IrNode *n) {
  switch (n->kind) {
  case IR_LOOP:
    simp_expr(s, &n->loop.extent);
    simp_expr(s, &n->loop.of);
    break;
  case IR_STORE:
    for (int i = 0; i < n->acc.nidx; i++) simp_expr(s, &n->acc.idx[i]);
    simp_expr(s, &n->acc.value);
    break;
  case IR_LET: simp_expr(s, &n->let.init); break;
  case IR_SET: simp_expr(s, &n->set.value); break;
  case IR_IF: simp_expr(s, &n->ifs.cond); break;
  default: break;
  }
}

static void simp_list(Simp *s, IrNode **list, bool top) {
  for (IrNode **p = list; *p;) {
    IrNode *n = *p;
    simp_stmt_exprs(s, n);
    if (n->kind == IR_LOOP) {
      bool unit = n->loop.kind == IR_LOOP_RANGE && n->loop.bind == IR_BIND_NONE &&
                  n->loop.extent->kind == IR_ICONST && n->loop.extent->i == 1;
      if (unit && !top) {
        pass_subst_stmts(s->a, n->loop.body, n->loop.var, ir_iconst(s->a, n->loc, 0));
        p = splice(p, n->loop.body);
        s->changed = true;
        continue;
      }
      if (s->nloops < PASS_MAX_DEPTH * 2) s->loops[s->nloops++] = n;
      simp_list(s, &n->loop.body, false);
      s->nloops--;
      if (!n->loop.body) {
        *p = n->next;
        s->changed = true;
        continue;
      }
    } else if (n->kind == IR_IF) {
      int v = decide(s, n->ifs.cond);
      if (v == 0) {
        *p = n->next;
        s->changed = true;
        continue;
      }
      if (v == 1 && !top) {
        p = splice(p, n->ifs.then);
        s->changed = true;
        continue;
      }
      if (s->nguards < PASS_MAX_DEPTH * 2) s->guards[s->nguards++] = n->ifs.cond;
      simp_list(s, &n->ifs.then, false);
      s->nguards--;
      if (!n->ifs.then) {
        *p = n->next;
        s->changed = true;
        continue;
      }
    } else if (n->kind == IR_LET && !reads_local(n->next, n->let.var)) {
      drop_sets(&n->next, n->let.var);
      *p = n->next;
      s->changed = true;
      continue;
    }
    p = &n->next;
  }
}

int pass_simplify(IrOp *op, Arena *a, Diag *d) {
  (void)d;
  Simp s = {.a = a, .op = op};
  /* A stage keeps its top statement (it carries the block size), so the
   * unit-loop and true-guard rules apply below it only. */
  for (int round = 0; round < 64; round++) {
    s.changed = false;
    simp_list(&s, &op->body, true);
    if (!s.changed) break;
  }
  return 0;
}
