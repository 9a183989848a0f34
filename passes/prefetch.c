/* passes/prefetch.c: prefetch(e), per-edge scalars loaded 32 edges at a time
 * and broadcast through warp shuffles (GE-SpMM's coalesced row caching).
 *
 * Contract of the primitive: `prefetch(e)` requires a sequential edge loop
 * of one vertex or one neighbour group (in_edges(v), out_edges(u),
 * group_edges(g)) and marks it @prefetch. It changes no semantics: the
 * interpreter runs the loop as it is.
 *
 * What the mark means (codegen/loop.c, docs/gpu-ir.md): the lanes that run
 * the loop together (those active at its entry) load the per-edge scalars
 * of the next n edges with one load each, the lane of rank r among them
 * edge base + r: the CSR position's edge id and other endpoint, and T[e]
 * for every edge tensor T the body reads at exactly [e]. The loop then
 * walks those edges, taking each one's scalars from the lane that loaded
 * them with shfl.sync.idx instead of every lane loading the same index and
 * weight, so a warp issues one coalesced load per 32 edges where it issued
 * 32 identical ones per edge.
 *
 * The check (pass_prefetch_check, run by lowering before the conflict
 * analysis, on scheduled IR and on IR text alike) refuses, naming the loop:
 *   - a @prefetch loop that is not an unbound edge loop of one vertex or
 *     group;
 *   - one in no @warp loop, or in a warp whose lanes are not on a loop
 *     around it (no @lane loop encloses it: the lanes are on the edges, or
 *     idle), since the broadcast needs the warp's lanes to walk the same
 *     edges;
 *   - one whose edge list depends on the @lane loop or on a loop inside it
 *     (several rows per warp, spmm_rows: each lane's row has other edges);
 *   - a read of an edge tensor that depends on more than the edge (T[e, h],
 *     T[e + 1]): those stay per-lane loads, so prefetch would not remove
 *     them; and a read of an edge tensor the stage also writes.
 */
#include <string.h>

#include "passes/passes.h"

static const char *kind_name(IrLoopKind k) {
  return ir_loopkind_name(k);
}

static bool is_edge_list(IrLoopKind k) {
  return k == IR_LOOP_IN_EDGES || k == IR_LOOP_OUT_EDGES || k == IR_LOOP_GROUP_EDGES;
}

int pass_prefetch(IrOp *op, const char *loop, Loc loc, Arena *a, Diag *d) {
  PassSite site;
  if (!pass_find_loop(op, "prefetch", loop, &site, loc, a, d)) return -1;
  IrNode *l = site.node;
  if (!is_edge_list(l->loop.kind)) {
    ir_error(d, loc, "prefetch: loop '%s' is a %s loop; only the edge loop of "
             "one vertex or neighbour group (in_edges, out_edges, "
             "group_edges) is prefetched", loop, kind_name(l->loop.kind));
    return -1;
  }
  if (l->loop.bind != IR_BIND_NONE) {
    ir_error(d, loc, "prefetch: loop '%s' is bound to %s; prefetch broadcasts "
             "a sequential edge loop's scalars to lanes bound to features "
             "around it", loop, ir_bind_name(l->loop.bind));
    return -1;
  }
  if (l->loop.prefetch) {
    ir_error(d, loc, "prefetch: loop '%s' is already prefetched", loop);
    return -1;
  }
  for (int i = 0; i < site.depth; i++)
    if (site.path[i]->kind == IR_LOOP && site.path[i]->loop.team) {
      const IrNode *w = site.path[i];
      ir_error(d, loc, "prefetch: loop '%s' is inside warp loop '%s', which runs "
               "in teams of %d lanes (team(%s, %d)), each on its own edges; "
               "prefetch's shuffles broadcast over the whole warp", loop,
               w->loop.var->name, w->loop.team, w->loop.var->name, w->loop.team);
      return -1;
    }
  l->loop.prefetch = true;
  return 0;
}

/* ---- the check ---- */

typedef struct Check {
  IrOp *op;
  Arena *a;
  Diag *d;
  const IrNode *loop;  /* the @prefetch loop */
  const IrNode *stage; /* its stage */
  int errors;
} Check;

/* Every load of an edge tensor that uses the loop's variable must be
 * T[e] exactly. */
static bool bad_edge_load(const IrNode *n, void *ctx) {
  Check *c = ctx;
  const IrVar *e = c->loop->loop.var;
  if (n->kind != IR_LOAD || n->acc.tensor->domain != IR_DOM_EDGE) return false;
  bool uses = false;
  for (int i = 0; i < n->acc.nidx; i++) uses |= ir_uses_var(n->acc.idx[i], e);
  if (!uses) return false;
  const IrTensor *t = n->acc.tensor;
  const char *text = pass_expr_string(c->a, n);
  if (n->acc.nidx != 1 || n->acc.idx[0]->kind != IR_VAR || n->acc.idx[0]->var != e) {
    ir_error(c->d, n->loc, "prefetch: %s in loop '%s' depends on more than the "
             "edge: only scalars of the edge alone (%s[%s]) are prefetched, "
             "so every lane would still load it; drop prefetch(%s)", text,
             e->name, t->name, e->name, e->name);
    c->errors++;
  } else if (pass_stage_stores(c->stage, t)) {
    ir_error(c->d, n->loc, "prefetch: loop '%s' reads %s, which its stage "
             "also writes; only inputs of the stage are prefetched", e->name,
             text);
    c->errors++;
  }
  return false;
}

static void check_loop(Check *c, IrNode *l) {
  PassSite site;
  const char *e = l->loop.var->name;
  if (!pass_find_node(c->op, l, &site)) unreachable("prefetch loop not found");
  c->loop = l;
  c->stage = site.depth > 0 ? site.path[0] : l;
  if (!is_edge_list(l->loop.kind) || l->loop.bind != IR_BIND_NONE) {
    ir_error(c->d, l->loc, "prefetch: loop '%s' is a %s%s loop; @prefetch "
             "belongs on an unbound in_edges, out_edges or group_edges loop",
             e, l->loop.bind != IR_BIND_NONE ? "bound " : "",
             kind_name(l->loop.kind));
    c->errors++;
    return;
  }
  int warp = -1, lane = -1;
  for (int i = 0; i < site.depth; i++) {
    const IrNode *p = site.path[i];
    if (p->kind != IR_LOOP) continue;
    if (p->loop.bind == IR_BIND_WARP && warp < 0) warp = i;
    if (p->loop.bind == IR_BIND_LANE && lane < 0) lane = i;
  }
  if (warp < 0) {
    ir_error(c->d, l->loc, "prefetch: loop '%s' is not in a warp: its edges' "
             "scalars are shared through warp shuffles, so a @warp loop with "
             "its lanes on a loop around '%s' must enclose it", e, e);
    c->errors++;
    return;
  }
  if (lane < 0) {
    ir_error(c->d, l->loc, "prefetch: the lanes of warp loop '%s' are not on a "
             "loop around '%s' (no @lane loop encloses it: the lanes are on "
             "the edges or idle), so they would not walk the same edges; bind "
             "a feature loop around '%s' to lane", site.path[warp]->loop.var->name,
             e, e);
    c->errors++;
    return;
  }
  /* the edge list must be the warp's, the same for every lane */
  const IrNode *of = l->loop.of;
  for (int i = lane; i < site.depth && of; i++) {
    const IrNode *p = site.path[i];
    if (p->kind != IR_LOOP || !ir_uses_var(of, p->loop.var)) continue;
    ir_error(c->d, l->loc, "prefetch: the edges of loop '%s' (of %s) depend on "
             "%s loop '%s', so the lanes of a warp walk different edge lists "
             "(several rows per warp) and one lane's loads cannot serve the "
             "others; keep one row per warp (spmm_vec4p, spmm_groupsp) or drop "
             "prefetch(%s)", e, pass_expr_string(c->a, of),
             i == lane ? "lane" : "per-lane", p->loop.var->name, e);
    c->errors++;
    return;
  }
  ir_any(l->loop.body, bad_edge_load, c);
}

static bool is_prefetch(const IrNode *n, void *ctx) {
  (void)ctx;
  return n->kind == IR_LOOP && n->loop.prefetch;
}

static void walk(Check *c, IrNode *list) {
  for (IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_LOOP) {
      if (s->loop.prefetch) check_loop(c, s);
      walk(c, s->loop.body);
    } else if (s->kind == IR_IF) {
      walk(c, s->ifs.then);
    }
  }
}

int pass_prefetch_check(IrOp *op, Arena *a, Diag *d) {
  if (!ir_any(op->body, is_prefetch, NULL)) return 0;
  Check c = {.op = op, .a = a, .d = d};
  walk(&c, op->body);
  return c.errors ? -1 : 0;
}
