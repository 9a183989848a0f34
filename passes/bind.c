/* passes/bind.c: bind(loop, block | warp | lane | thread [, threads]).
 *
 * Contract: requires an unbound, unannotated loop; maps it to the hardware
 * (docs/gpu-ir.md: a bound loop is a grid-stride loop over the workers of
 * its level, so any extent is covered by any launch); breaks nothing, since
 * the iterations of a bound loop still run in some order. Lanes of a warp
 * should cover consecutive features, which is what splitting a feature loop
 * by 32 and binding the inner loop to lane gives.
 *
 * Legality: the bound loops on one path nest as block > warp > lane or
 * block > thread, one of each at most; the iterations must not communicate
 * except through reductions into tensor elements (which the conflict
 * analysis makes plain or atomic), so a loop that reduces into a local
 * declared outside it (a dot product over `f` into `s`) cannot be spread
 * over workers (except over the lanes of a warp: a warp-shuffle reduction,
 * passes/conflicts.c), nor one that reads a tensor it also writes. The optional
 * third argument sets the block size (threads per block) of the loop's
 * stage: a multiple of 32 up to 1024.
 */
#include <string.h>

#include "passes/passes.h"

/* Bound loops on one path must appear in this order. */
static int level_rank(IrBind b) {
  switch (b) {
  case IR_BIND_BLOCK: return 0;
  case IR_BIND_WARP:
  case IR_BIND_THREAD: return 1;
  case IR_BIND_LANE: return 2;
  default: return -1;
  }
}

static bool may_enclose(IrBind outer, IrBind inner) {
  if (inner == IR_BIND_LANE) return outer == IR_BIND_BLOCK || outer == IR_BIND_WARP;
  return level_rank(outer) < level_rank(inner);
}

/* The first loop under `list` bound to a level that may not sit inside one
 * bound to `level`. */
static const IrNode *bad_inner(const IrNode *list, IrBind level) {
  for (const IrNode *s = list; s; s = s->next) {
    const IrNode *inner = s->kind == IR_LOOP ? s->loop.body
                          : s->kind == IR_IF ? s->ifs.then
                                             : NULL;
    if (s->kind == IR_LOOP && s->loop.bind != IR_BIND_NONE &&
        !may_enclose(level, s->loop.bind))
      return s;
    const IrNode *r = bad_inner(inner, level);
    if (r) return r;
  }
  return NULL;
}

typedef struct Locals {
  const IrVar *declared[64];
  int nd;
  const IrNode *update; /* first SET of a local not declared inside */
} Locals;

static void scan_locals(Locals *lc, const IrNode *list) {
  for (const IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_LET && lc->nd < 64) lc->declared[lc->nd++] = s->let.var;
    if (s->kind == IR_LOOP) scan_locals(lc, s->loop.body);
    if (s->kind == IR_IF) scan_locals(lc, s->ifs.then);
  }
}

static void find_outer_update(Locals *lc, const IrNode *list) {
  /* an assignment wins over a reduction: it is refused at every level */
  for (const IrNode *s = list;
       s && !(lc->update && lc->update->set.red == IR_RED_ASSIGN); s = s->next) {
    if (s->kind == IR_SET) {
      bool inside = false;
      for (int i = 0; i < lc->nd; i++) inside |= lc->declared[i] == s->set.var;
      if (!inside && (!lc->update || s->set.red == IR_RED_ASSIGN)) lc->update = s;
    }
    if (s->kind == IR_LOOP) find_outer_update(lc, s->loop.body);
    if (s->kind == IR_IF) find_outer_update(lc, s->ifs.then);
  }
}

/* A tensor stored to under `list` and also read under `body`. */
static const IrTensor *read_written(const IrNode *list, const IrNode *body) {
  for (const IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_STORE && ir_reads_tensor(body, s->acc.tensor)) return s->acc.tensor;
    const IrNode *inner = s->kind == IR_LOOP ? s->loop.body
                          : s->kind == IR_IF ? s->ifs.then
                                             : NULL;
    const IrTensor *t = read_written(inner, body);
    if (t) return t;
  }
  return NULL;
}

int pass_bind(IrOp *op, const char *loop, IrBind level, int threads, Loc loc,
              Arena *a, Diag *d) {
  PassSite site;
  if (!pass_find_loop(op, "bind", loop, &site, loc, a, d)) return -1;
  IrNode *l = site.node;
  const char *lv = ir_bind_name(level);
  if (level == IR_BIND_NONE || (unsigned)level >= IR_BIND_COUNT) {
    ir_error(d, loc, "bind: loop '%s' can be bound to block, warp, lane or "
             "thread", loop);
    return -1;
  }
  if (l->loop.bind != IR_BIND_NONE) {
    ir_error(d, loc, "bind: loop '%s' is already bound to %s", loop,
             ir_bind_name(l->loop.bind));
    return -1;
  }
  if (l->loop.unroll || l->loop.vec) {
    ir_error(d, loc, "bind(%s, %s): loop '%s' is marked @%s; only sequential "
             "loops are unrolled or vectorised", loop, lv, loop,
             l->loop.unroll ? "unroll" : "vec");
    return -1;
  }
  bool warp_above = false;
  for (int i = 0; i < site.depth; i++) {
    const IrNode *p = site.path[i];
    if (p->kind != IR_LOOP || p->loop.bind == IR_BIND_NONE) continue;
    warp_above |= p->loop.bind == IR_BIND_WARP;
    if (!may_enclose(p->loop.bind, level)) {
      ir_error(d, loc, "bind(%s, %s): it is inside loop '%s', already bound to "
               "%s; bound loops nest as block > warp > lane or block > thread",
               loop, lv, p->loop.var->name, ir_bind_name(p->loop.bind));
      return -1;
    }
  }
  if (level == IR_BIND_LANE && !warp_above) {
    ir_error(d, loc, "bind(%s, lane): a lane loop must be inside a warp loop; "
             "bind an enclosing loop to warp first", loop);
    return -1;
  }
  const IrNode *inner = bad_inner(l->loop.body, level);
  if (inner) {
    ir_error(d, loc, "bind(%s, %s): loop '%s' inside it is already bound to %s; "
             "bound loops nest as block > warp > lane or block > thread", loop,
             lv, inner->loop.var->name, ir_bind_name(inner->loop.bind));
    return -1;
  }
  Locals lc = {0};
  scan_locals(&lc, l->loop.body);
  find_outer_update(&lc, l->loop.body);
  /* A reduction of an outer local over lanes is a warp-shuffle reduction,
   * which the conflict analysis checks and marks `shuffle`. */
  if (lc.update && !(level == IR_BIND_LANE && lc.update->set.red != IR_RED_ASSIGN)) {
    const char *s = lc.update->set.var->name;
    if (lc.update->set.red == IR_RED_ASSIGN)
      ir_error(d, loc, "bind(%s, %s): %s assigns local '%s', declared outside "
               "it; its workers would race on it", loop, lv, loop, s);
    else
      ir_error(d, loc, "bind(%s, %s): %s is a reduction loop of local '%s'; "
               "each worker would hold part of it, and a cross-worker "
               "reduction is not supported yet", loop, lv, loop, s);
    return -1;
  }
  const IrTensor *rw = read_written(l->loop.body, l->loop.body);
  if (rw) {
    ir_error(d, loc, "bind(%s, %s): tensor '%s' is both written and read inside "
             "loop '%s'; its workers would race", loop, lv, rw->name, loop);
    return -1;
  }
  if (threads != 0 && (threads < 32 || threads > 1024 || threads % 32 != 0)) {
    ir_error(d, loc, "bind(%s, %s, %d): the block size must be a multiple of 32 "
             "from 32 to 1024", loop, lv, threads);
    return -1;
  }
  IrNode *top = site.depth > 0 ? site.path[0] : l;
  if (threads != 0 && top->kind != IR_LOOP) {
    ir_error(d, loc, "bind(%s, %s, %d): the stage of loop '%s' does not start "
             "with a loop to carry the block size", loop, lv, threads, loop);
    return -1;
  }
  l->loop.bind = level;
  if (threads != 0) top->loop.threads = threads;
  return 0;
}
