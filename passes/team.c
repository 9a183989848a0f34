/* passes/team.c: team(loop, T).
 *
 * Contract: requires a loop bound to warp (bind(loop, warp) first); gives
 * each of its iterations T lanes instead of the whole warp, so that 32 / T
 * iterations run side by side in one warp (docs/gpu-ir.md, @team). T is a
 * power of two from 1 to 32; 32 leaves the loop as it is. The @lane loops
 * inside then count the lanes of the team (tid % T of T): a feature loop
 * split to T lanes keeps every lane busy where the whole warp would idle
 * most of them (F = 16 with 16-byte loads needs 4 lanes; a warp per
 * neighbour group would leave 28 of 32 idle). Semantics are unchanged: a
 * bound loop is a strided loop over its workers, whatever their number.
 *
 * Legality: a shuffle reduction across the lanes of a @lane loop stays in
 * the team (code generation shuffles within its T lanes). The warp-wide
 * forms are refused, because they combine what all 32 lanes hold: a
 * @shared groups loop (one accumulator row per warp) and prefetch(e) (the
 * chunk of 32 edges is the warp's).
 */
#include "passes/passes.h"

static const IrNode *find_prefetch(const IrNode *n) {
  for (; n; n = n->next) {
    const IrNode *in = n->kind == IR_LOOP ? n->loop.body : n->kind == IR_IF ? n->ifs.then : NULL;
    if (n->kind == IR_LOOP && n->loop.prefetch) return n;
    const IrNode *r = in ? find_prefetch(in) : NULL;
    if (r) return r;
  }
  return NULL;
}

int pass_team(IrOp *op, const char *loop, int64_t lanes, Loc loc, Arena *a, Diag *d) {
  PassSite site;
  if (!pass_find_loop(op, "team", loop, &site, loc, a, d)) return -1;
  IrNode *l = site.node;
  if (lanes < 1 || lanes > 32 || (lanes & (lanes - 1)) != 0) {
    ir_error(d, loc, "team: the lanes per iteration of loop '%s' must be a "
             "power of two from 1 to 32, not %lld", loop, (long long)lanes);
    return -1;
  }
  if (l->loop.bind != IR_BIND_WARP) {
    ir_error(d, loc, "team: loop '%s' is %s%s; team divides the lanes of a "
             "loop bound to warp (bind(%s, warp) first)", loop,
             l->loop.bind == IR_BIND_NONE ? "not bound" : "bound to ",
             l->loop.bind == IR_BIND_NONE ? "" : ir_bind_name(l->loop.bind), loop);
    return -1;
  }
  if (l->loop.team) {
    ir_error(d, loc, "team: loop '%s' already has teams of %d lanes", loop,
             l->loop.team);
    return -1;
  }
  if (l->loop.shared) {
    ir_error(d, loc, "team: groups loop '%s' accumulates in shared memory "
             "(promote(%s, shared)), one row per warp: it needs the whole warp "
             "on one group", loop, loop);
    return -1;
  }
  const IrNode *pf = find_prefetch(l->loop.body);
  if (pf) {
    ir_error(d, loc, "team: edge loop '%s' inside '%s' is prefetched "
             "(prefetch(%s)), whose shuffles broadcast over the whole warp",
             pf->loop.var->name, loop, pf->loop.var->name);
    return -1;
  }
  l->loop.team = lanes < 32 ? (int)lanes : 0;
  return 0;
}
