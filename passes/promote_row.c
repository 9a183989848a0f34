/* passes/promote_row.c: promote(X, register), a vertex row held in
 * registers across the edges that read it.
 *
 * Contract: requires X a read-only input with a row per vertex (src or
 * dst), and every read of X inside a sequential edge loop L (in_edges,
 * out_edges, group_edges; the innermost one around the read) to have an
 * index that does not change across L's iterations: it reads only loop
 * variables and locals bound outside L, or `dst(ei)` of a group_edges
 * loop (the same for every edge of a neighbour group: `dst(g)` of its
 * row). Gives, for each such L,
 *
 *   var X_reg = X[idx]          (once, right before L)
 *   for ... L ... { ... X_reg ... }
 *
 * so a row the edges of one destination share (u_add_v's Y[v, f], read
 * per in-edge of v) is loaded once per trip through L instead of once per
 * edge. Breaks nothing; reads outside edge loops are left as they are.
 *
 * In a @vec loop the local is a vector (codegen/vector.c), so a lane's
 * 16 bytes of the row stay in registers across the edges. The value is
 * the one every iteration of L would have read (X is an input, and the
 * index does not change), so results are bit for bit the same, and the
 * load happens even when L has no iteration: the index is in range
 * wherever L is (the guards that keep it in range are around L, since a
 * guard inside L is refused).
 *
 * Refused, naming the tensor and the loop: a tensor that is an output or
 * temporary, or has no vertex rows (an edge tensor changes with the edge;
 * a dense input is staged with promote(X, shared)); no read of X inside
 * an edge loop; a read whose index uses a loop or local of L's body (a
 * dot product's feature loops inside its edge loop: the row cannot be
 * held across the edges unless the feature loops enclose them, and a
 * per-edge local such as u_dot_v's `s` keeps them inside); a read under a
 * guard inside L; an edge loop bound to workers (each lane or thread has
 * its own edges, nothing to share).
 */
#include <string.h>

#include "passes/passes.h"

enum { MAX_INNER = 256, MAX_HOISTS = 16 };

typedef struct Hoist {
  IrNode *load; /* the first read, as written (its index) */
  IrVar *var;
} Hoist;

typedef struct RowScan {
  IrOp *op;
  IrTensor *t;
  Arena *a;
  Diag *d;
  Loc loc;
  IrNode *edge;           /* the innermost edge loop around, or NULL */
  const IrVar *inner[MAX_INNER]; /* bound inside `edge` */
  int ninner;
  bool guarded;           /* under a guard inside `edge` */
  Hoist hoist[MAX_HOISTS];
  int nhoist;
  int reads;              /* reads inside edge loops, promoted */
  bool failed;
} RowScan;

static bool is_edge_loop(const IrNode *n) {
  return n->kind == IR_LOOP &&
         (n->loop.kind == IR_LOOP_IN_EDGES || n->loop.kind == IR_LOOP_OUT_EDGES ||
          n->loop.kind == IR_LOOP_GROUP_EDGES);
}

static bool outside(const IrVar *v, void *ctx) {
  const RowScan *rs = ctx;
  for (int i = 0; i < rs->ninner; i++)
    if (rs->inner[i] == v) return false;
  return true;
}

typedef struct {
  const RowScan *rs;
  const IrVar *found;
} InnerVar;

static bool is_inner_var(const IrNode *n, void *ctx) {
  InnerVar *iv = ctx;
  if (n->kind != IR_VAR || outside(n->var, (void *)iv->rs)) return false;
  iv->found = n->var;
  return true;
}

/* The variable of `idx` that makes it change inside L, for the message. */
static const IrVar *inner_var(const IrNode *e, const RowScan *rs) {
  InnerVar iv = {rs, NULL};
  ir_any(e, is_inner_var, &iv);
  return iv.found;
}

/* `dst(ei)` of the group_edges loop L: its group's destination. */
static bool group_dst(const RowScan *rs, const IrNode *e) {
  return rs->edge->loop.kind == IR_LOOP_GROUP_EDGES && e->kind == IR_DST &&
         e->endpoint.e->kind == IR_VAR && e->endpoint.e->var == rs->edge->loop.var;
}

/* Index i of the read as it is before L. */
static IrNode *index_before(const RowScan *rs, const IrNode *e) {
  if (group_dst(rs, e)) return ir_endpoint(rs->a, e->loc, IR_DST, ir_clone(rs->a, rs->edge->loop.of));
  return ir_clone(rs->a, e);
}

static void collect_inner(RowScan *rs, const IrNode *list) {
  for (const IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_LOOP) {
      if (rs->ninner < MAX_INNER) rs->inner[rs->ninner++] = s->loop.var;
      collect_inner(rs, s->loop.body);
    } else if (s->kind == IR_LET) {
      if (rs->ninner < MAX_INNER) rs->inner[rs->ninner++] = s->let.var;
    } else if (s->kind == IR_IF) {
      collect_inner(rs, s->ifs.then);
    }
  }
}

/* Replaces the read `*slot` of the tensor by its register, making one for
 * each distinct index per edge loop (the statements before L go to
 * `*before`). */
static void promote_read(RowScan *rs, IrNode **slot, IrNode **before) {
  IrNode *ld = *slot;
  const char *x = rs->t->name, *l = rs->edge->loop.var->name;
  if (rs->edge->loop.bind != IR_BIND_NONE) {
    ir_error(rs->d, rs->loc, "promote(%s, register): edge loop '%s' is bound to %s; its "
             "edges run on different workers, each reading its own row, so there is no "
             "row to hold across them", x, l, ir_bind_name(rs->edge->loop.bind));
    rs->failed = true;
    return;
  }
  for (int i = 0; i < ld->acc.nidx; i++) {
    if (group_dst(rs, ld->acc.idx[i])) continue;
    const IrVar *v = inner_var(ld->acc.idx[i], rs);
    if (v) {
      ir_error(rs->d, rs->loc, "promote(%s, register): the read %s inside edge loop '%s' "
               "uses %s '%s', which changes inside '%s', so it is not one row for all its "
               "edges; put the loops of its index outside the edge loop first (reorder(..., "
               "%s)), which a per-edge local such as a dot product's does not allow",
               x, pass_expr_string(rs->a, ld), l,
               v->kind == IR_VAR_LOCAL ? "local" : "loop", v->name, l, l);
      rs->failed = true;
      return;
    }
  }
  if (rs->guarded) {
    ir_error(rs->d, rs->loc, "promote(%s, register): the read %s is under a condition "
             "inside edge loop '%s'; read before the loop, it could fall outside the "
             "range that condition keeps", x, pass_expr_string(rs->a, ld), l);
    rs->failed = true;
    return;
  }
  IrNode *idx[IR_MAX_IDX];
  for (int i = 0; i < ld->acc.nidx; i++) idx[i] = index_before(rs, ld->acc.idx[i]);
  IrNode *key = ir_load(rs->a, ld->loc, rs->t, ld->acc.nidx, idx);
  IrVar *var = NULL;
  for (int h = 0; h < rs->nhoist && !var; h++)
    if (pass_expr_equal(rs->hoist[h].load, key)) var = rs->hoist[h].var;
  if (!var) {
    if (rs->nhoist == MAX_HOISTS) {
      ir_error(rs->d, rs->loc, "promote(%s, register): more than %d different rows of '%s' "
               "are read inside edge loop '%s'", x, MAX_HOISTS, x, l);
      rs->failed = true;
      return;
    }
    const char *name = pass_fresh_name(rs->op, rs->a, ir_sprintf(rs->a, "%s_reg", x));
    var = pass_new_var(rs->op, rs->a, name, IR_VAR_LOCAL, rs->edge->loc);
    rs->hoist[rs->nhoist++] = (Hoist){key, var};
    ir_append(before, ir_let(rs->a, rs->edge->loc, var, key));
  }
  IrNode *ref = ir_var(rs->a, ld->loc, var);
  ref->next = ld->next;
  *slot = ref;
  rs->reads++;
}

typedef struct {
  RowScan *rs;
  IrNode **before;
} Scan;

/* A read of the row inside L (after its indices' own reads) is promoted. */
static void scan_slot(IrNode **slot, void *ctx) {
  const Scan *sc = ctx;
  IrNode *e = *slot;
  if (!e || sc->rs->failed) return;
  ir_each_operand(e, scan_slot, ctx);
  if (e->kind == IR_LOAD && e->acc.tensor == sc->rs->t && sc->rs->edge)
    promote_read(sc->rs, slot, sc->before);
}

static void scan_expr(RowScan *rs, IrNode **slot, IrNode **before) {
  Scan sc = {rs, before};
  scan_slot(slot, &sc);
}

static void scan_stmts(RowScan *rs, IrNode **list, IrNode **before);

/* An edge loop: its reads are hoisted in front of it, into its slot. */
static void scan_edge_loop(RowScan *rs, IrNode **slot) {
  IrNode *l = *slot;
  RowScan saved = *rs;
  rs->edge = l;
  rs->ninner = 0;
  rs->inner[rs->ninner++] = l->loop.var;
  collect_inner(rs, l->loop.body);
  rs->guarded = false;
  rs->nhoist = 0;
  IrNode *before = NULL;
  scan_stmts(rs, &l->loop.body, &before);
  if (before) {
    ir_append(&before, l);
    *slot = before;
  }
  rs->edge = saved.edge;
  rs->ninner = saved.ninner;
  memcpy(rs->inner, saved.inner, sizeof rs->inner);
  rs->guarded = saved.guarded;
  rs->nhoist = saved.nhoist;
  memcpy(rs->hoist, saved.hoist, sizeof rs->hoist);
}

static void scan_stmts(RowScan *rs, IrNode **list, IrNode **before) {
  for (IrNode **p = list; *p && !rs->failed;) {
    IrNode *s = *p;
    switch (s->kind) {
    case IR_LOOP:
      if (s->loop.extent) scan_expr(rs, &s->loop.extent, before);
      if (is_edge_loop(s)) {
        scan_edge_loop(rs, p);
        /* *p may now be the hoisted statements, then the loop */
        while (*p != s) p = &(*p)->next;
      } else {
        scan_stmts(rs, &s->loop.body, before);
      }
      break;
    case IR_IF: {
      scan_expr(rs, &s->ifs.cond, before);
      bool g = rs->guarded;
      if (rs->edge) rs->guarded = true;
      scan_stmts(rs, &s->ifs.then, before);
      rs->guarded = g;
      break;
    }
    case IR_STORE:
      for (int i = 0; i < s->acc.nidx; i++) scan_expr(rs, &s->acc.idx[i], before);
      scan_expr(rs, &s->acc.value, before);
      break;
    case IR_LET:
      scan_expr(rs, &s->let.init, before);
      break;
    case IR_SET:
      scan_expr(rs, &s->set.value, before);
      break;
    default: break;
    }
    p = &(*p)->next;
  }
}

int pass_promote_row(IrOp *op, IrTensor *t, Loc loc, Arena *a, Diag *d) {
  const char *x = t->name;
  if (t->role != IR_ROLE_IN) {
    ir_error(d, loc, "promote(%s, register): tensor '%s' is %s of %s; only a read-only "
             "input's row can be held in registers across edges (a partial result is "
             "promoted through its loop: promote(LOOP, register))", x, x,
             t->role == IR_ROLE_OUT ? "an output" : "a temporary", op->name);
    return -1;
  }
  if (t->domain != IR_DOM_SRC && t->domain != IR_DOM_DST) {
    ir_error(d, loc, "promote(%s, register): tensor '%s' %s; only a vertex row (a src or "
             "dst tensor) stays the same across the edges of one vertex%s", x, x,
             t->domain == IR_DOM_EDGE ? "has a row per edge" : "has no vertex rows",
             t->domain == IR_DOM_EDGE ? "" : " (a dense input is staged with promote(X, "
                                             "shared))");
    return -1;
  }
  IrOp *c = pass_op_copy(op, a);
  RowScan *rs = IR_NEW(a, RowScan);
  *rs = (RowScan){.op = c, .t = t, .a = a, .d = d, .loc = loc};
  scan_stmts(rs, &c->body, NULL);
  if (rs->failed) return -1;
  if (rs->reads == 0) {
    ir_error(d, loc, "promote(%s, register): no stage of %s reads tensor '%s' inside an "
             "edge loop, so there is no row to hold across edges", x, op->name, x);
    return -1;
  }
  *op = *c;
  return 0;
}
