/* passes/accumulate.c: register accumulation and fused epilogues, by
 * default.
 *
 * Contract: requires nothing (runs first, before mean); gives every
 * sequential edge loop (in_edges, out_edges, group_edges; not a stage's
 * outermost loop, not bound) whose reductions target an element that stays
 * the same across its iterations a register accumulator, stored once after
 * the loop: what promote(e, register) does when a schedule asks for it
 * (promote.c). A mean=, max= or min= target that the loop covers whole and
 * that one worker owns is finished in that store (the division by the
 * degree, an empty max/min made 0), so it needs no finalisation stage.
 * Breaks nothing: a loop that promote would refuse (the target read inside
 * it, written at two places, a conditional max/min) is left as it was.
 *
 * A loop whose body is a perfect nest of feature loops and guards that do
 * not depend on it (warp_vertex's `for e { for fs { for fl @lane { if
 * (...) { Y[v, f] += ... } } } }`) is first sunk below them, so that the
 * element stays the same across it and each lane keeps its own sum:
 * `for fs { for fl @lane { if (...) { var acc; for e { acc += ... } Y = acc
 * } } }`. The sinking is kept only when the promotion then succeeds.
 *
 * Without it, a vertex-parallel schedule that does not say promote reads
 * and writes its output row in memory on every edge: copy_u_mean under
 * warp_vertex(1, 1) took 2.78 ms on an H100 where copy_u_sum with an
 * accumulator took 0.44 ms (issue 13). Sums add the same terms in the same
 * order either way, so results are bit-identical to the unpromoted form.
 */
#include "passes/passes.h"

enum { MAX_LOOPS = 64 };

typedef struct Found {
  const IrNode *loops[MAX_LOOPS];
  int n;
} Found;

static bool is_edge_loop(const IrNode *s) {
  return s->kind == IR_LOOP &&
         ((s->loop.bind == IR_BIND_NONE &&
           (s->loop.kind == IR_LOOP_IN_EDGES || s->loop.kind == IR_LOOP_OUT_EDGES ||
            s->loop.kind == IR_LOOP_GROUP_EDGES)) ||
          (s->loop.bind == IR_BIND_LANE && s->loop.kind == IR_LOOP_GROUP_EDGES));
}

/* The candidate loops under `list`, outermost first; `top`: a stage's own
 * statement, which cannot hold the register. */
static void collect(Found *f, const IrNode *list, bool top) {
  for (const IrNode *s = list; s; s = s->next) {
    if (!top && is_edge_loop(s) && f->n < MAX_LOOPS) f->loops[f->n++] = s;
    if (s->kind == IR_LOOP) collect(f, s->loop.body, false);
    else if (s->kind == IR_IF) collect(f, s->ifs.then, false);
  }
}

static IrNode *find_loop(IrNode *list, const IrVar *v) {
  for (IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_LOOP && s->loop.var == v) return s;
    IrNode *in = s->kind == IR_LOOP ? find_loop(s->loop.body, v)
                 : s->kind == IR_IF ? find_loop(s->ifs.then, v)
                                    : NULL;
    if (in) return in;
  }
  return NULL;
}

/* Swaps L (at *slot) with its body when that is one range loop (sequential,
 * a lane loop or a vector loop) or one guard, not using L's variable.
 * Returns whether it did. */
static bool sink_once(IrNode **slot) {
  IrNode *l = *slot, *s = l->loop.body;
  if (!s || s->next) return false;
  if (s->kind == IR_LOOP) {
    if (s->loop.kind != IR_LOOP_RANGE ||
        (s->loop.bind != IR_BIND_NONE && s->loop.bind != IR_BIND_LANE) ||
        ir_uses_var(s->loop.extent, l->loop.var))
      return false;
  } else if (s->kind != IR_IF || ir_uses_var(s->ifs.cond, l->loop.var)) {
    return false;
  }
  IrNode **inner = s->kind == IR_LOOP ? &s->loop.body : &s->ifs.then;
  l->loop.body = *inner;
  *inner = l;
  s->next = l->next;
  l->next = NULL;
  *slot = s;
  return true;
}

/* promote(L, register) on a copy of `op` with L sunk as deep as it goes;
 * true (and `op` replaced) when that worked and L did move. */
static bool sink_and_promote(IrOp *op, const IrVar *v, Arena *a) {
  IrOp *c = pass_op_copy(op, a);
  PassSite site;
  IrNode *l = find_loop(c->body, v);
  if (!l || !pass_find_node(c, l, &site)) return false;
  IrNode **slot = site.slot;
  int moved = 0;
  while (sink_once(slot)) {
    IrNode *s = *slot;
    slot = s->kind == IR_LOOP ? &s->loop.body : &s->ifs.then;
    moved++;
  }
  if (!moved || !pass_find_node(c, l, &site)) return false;
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  int rc = pass_promote_register(c, &site, l->loc, a, &quiet);
  ir_diag_free(&quiet);
  if (rc != 0) return false;
  *op = *c;
  return true;
}

int pass_accumulate(IrOp *op, Arena *a, Diag *d) {
  (void)d;
  Found f = {0};
  for (const IrNode *s = op->body; s; s = s->next) {
    const IrNode *saved = s->next;
    ((IrNode *)s)->next = NULL; /* one stage at a time */
    collect(&f, s, true);
    ((IrNode *)s)->next = (IrNode *)saved;
  }
  for (int i = 0; i < f.n; i++) {
    if (f.loops[i]->loop.bind == IR_BIND_NONE && sink_and_promote(op, f.loops[i]->loop.var, a))
      continue;
    PassSite site;
    if (!pass_find_node(op, f.loops[i], &site)) continue;
    /* A refusal is an answer here, not an error: keep the loop as it is. */
    Diag quiet;
    ir_diag_init(&quiet, NULL);
    IrOp saved = *op;
    if (pass_promote_register(op, &site, f.loops[i]->loc, a, &quiet) < 0)
      *op = saved;
    ir_diag_free(&quiet);
  }
  return 0;
}
