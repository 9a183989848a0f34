/* passes/segment.c: deterministic() neighbour groups as a segmented
 * reduction.
 *
 * Contract: requires mean= lowered (lower_mean.c) and runs before the
 * conflict analysis; acts only on a `deterministic` operator (schedule.c),
 * on each stage that is a groups loop bound to workers and not @shared
 * (passes/group.c, promote.c) holding a reduction (+=, max=, min=) into
 * its destination, `Y[dst(ei), ...]`. Breaks nothing; adds a temporary and
 * a stage per such stage.
 *
 * A destination's groups are separate workers, so they could only meet
 * through atomics, whose order changes from run to run. Instead the
 * reduction is cut in two stages, each with one writer per element:
 *
 *   for eo in groups(G) @warp {                 stage 1: a row of Y_seg per
 *     for ei in group_edges(eo) {                 table row (plain stores:
 *       ... Y_seg[eo, f] += x                     the row gives the worker)
 *   } }
 *   for v_seg in dst @warp {                    stage 2: each destination
 *     for r in group_rows(v_seg, G) {             adds its rows in table
 *       ... Y[v_seg, f] += Y_seg[r, f]            order, a fixed order, so
 *   } }                                           runs agree bit for bit
 *
 * Y_seg has the table's rows (rows x F, never |E| x F), the feature loops
 * and guards around the store are copied into stage 2 with fresh
 * variables, and `group_rows` reads the table's rows by destination
 * (graph/groups.c: vptr, vrow; in CSR order even when the table
 * is interleaved, since a destination belongs to one class). Stage 2's
 * vertex loop takes the groups loop's binding and block size; a warp
 * whose lanes were on the group's edges, and so has no lane loop left,
 * takes a thread per vertex instead. A destination with no rows is not
 * written: it keeps the identity, and lowering's finalisation stage (which
 * follows stage 2) applies the empty-neighbourhood rule as before.
 *
 * Lanes on the group's edges (`fallback(fl, ei)`, no feature loop inside
 * them) reduce through a local instead, combined by a warp shuffle in a
 * fixed butterfly order (conflicts.c), and stored once per row:
 *
 *   var Y_acc = 0.0 ; for ei in group_edges(eo) @lane { Y_acc += x } ;
 *   Y_seg[eo] = Y_acc
 *
 * Refused, with the rule: two reductions into destinations in one stage;
 * a stage that reads the tensor it reduces into; a feature index or guard
 * that depends on anything but the feature loops (an edge, a local, a
 * loaded value); loops over features inside edges bound to lanes.
 */
#include <math.h>
#include <string.h>

#include "passes/passes.h"

typedef struct Found {
  IrNode *store;
  IrNode *path[PASS_MAX_DEPTH * 2]; /* enclosing loops and guards */
  IrNode **slot;                    /* where the store hangs */
  int depth, count;
} Found;

typedef struct Walk {
  IrNode *path[PASS_MAX_DEPTH * 2];
  int depth;
  Found *f;
} Walk;

/* The group-edges loop variable `e` of `path` if `x` is `dst(e)`. */
static const IrNode *dst_of_group_edge(IrNode *const *path, int depth, const IrNode *x) {
  if (x->kind != IR_DST || x->endpoint.e->kind != IR_VAR) return NULL;
  for (int i = 0; i < depth; i++)
    if (path[i]->kind == IR_LOOP && path[i]->loop.kind == IR_LOOP_GROUP_EDGES &&
        path[i]->loop.var == x->endpoint.e->var)
      return path[i];
  return NULL;
}

/* Collects the reductions into a groups loop's destination. */
static void find(Walk *w, IrNode **slot) {
  for (IrNode **sp = slot; *sp; sp = &(*sp)->next) {
    IrNode *s = *sp;
    if ((s->kind == IR_LOOP || s->kind == IR_IF) && w->depth < PASS_MAX_DEPTH * 2) {
      w->path[w->depth++] = s;
      find(w, s->kind == IR_LOOP ? &s->loop.body : &s->ifs.then);
      w->depth--;
      continue;
    }
    if (s->kind != IR_STORE || s->acc.red == IR_RED_ASSIGN || s->acc.how != IR_HOW_AUTO ||
        !dst_of_group_edge(w->path, w->depth, s->acc.idx[0]))
      continue;
    Found *f = w->f;
    if (f->count++ == 0) {
      f->store = s;
      f->slot = sp;
      f->depth = w->depth;
      memcpy(f->path, w->path, sizeof(IrNode *) * (size_t)w->depth);
    }
  }
}

/* The range loops of the path outside `below` (NULL: all): what a feature
 * index may use. */
typedef struct Feat {
  IrNode *const *path;
  int depth;
  const IrNode *below;
} Feat;

static bool feature_var(const IrVar *v, void *ctx) {
  const Feat *ft = ctx;
  for (int i = 0; i < ft->depth; i++) {
    const IrNode *l = ft->path[i];
    if (l == ft->below) return false;
    if (l->kind == IR_LOOP && l->loop.kind == IR_LOOP_RANGE && l->loop.var == v) return true;
  }
  return false;
}

static bool feature_expr(Feat *ft, const IrNode *e) {
  return !ir_has_load(e) && pass_expr_vars_all(e, feature_var, ft);
}

static double identity(IrRed red) {
  return red == IR_RED_MAX ? -INFINITY : red == IR_RED_MIN ? INFINITY : 0.0;
}

/* 1 when stage `st` became two, 0 when it has nothing to segment, -1
 * after reporting a refusal. */
static int segment_stage(IrOp *op, IrNode *st, Arena *a, Diag *d) {
  const char *gname = st->loop.var->name;
  Found f = {0};
  Walk w = {.f = &f};
  w.path[w.depth++] = st;
  find(&w, &st->loop.body);
  if (f.count == 0) return 0;
  IrNode *s = f.store;
  IrTensor *y = s->acc.tensor;
  if (f.count > 1) {
    ir_error(d, s->loc, "deterministic: groups loop '%s' reduces into its "
             "destinations at %d places; the segmented reduction of "
             "neighbour groups takes one per stage", gname, f.count);
    return -1;
  }
  if (y->domain != IR_DOM_DST) {
    ir_error(d, s->loc, "deterministic: the reduction into '%s' indexes a "
             "tensor on %s by a destination; the segmented reduction needs a "
             "dst tensor", y->name, ir_domain_name(y->domain));
    return -1;
  }
  if (ir_reads_tensor(st->loop.body, y)) {
    ir_error(d, s->loc, "deterministic: groups loop '%s' reads '%s', which its "
             "segmented reduction writes only in a second stage; read it in a "
             "stage of its own", gname, y->name);
    return -1;
  }
  /* the group-edges loop and where it is on the path */
  int ei_at = -1;
  for (int i = 0; i < f.depth; i++)
    if (f.path[i]->kind == IR_LOOP && f.path[i]->loop.kind == IR_LOOP_GROUP_EDGES) ei_at = i;
  if (ei_at < 0) unreachable("a destination store outside its group-edges loop");
  IrNode *el = f.path[ei_at];
  bool lanes_on_edges = el->loop.bind == IR_BIND_LANE;
  if (el->loop.bind != IR_BIND_NONE && !lanes_on_edges) {
    ir_error(d, el->loc, "deterministic: group-edges loop '%s' is bound to %s; "
             "the segmented reduction takes a group's edges one worker at a "
             "time, or on the lanes of its warp", el->loop.var->name,
             ir_bind_name(el->loop.bind));
    return -1;
  }
  bool lane_loop = false;
  for (int i = 1; i < f.depth; i++) {
    const IrNode *p = f.path[i];
    if (p == el) continue;
    if (p->kind == IR_LOOP && p->loop.kind != IR_LOOP_RANGE)
      unreachable("a loop other than a range inside a group's edges");
    bool inside_lanes = lanes_on_edges && i > ei_at;
    if (p->kind == IR_LOOP && inside_lanes) {
      ir_error(d, p->loc, "deterministic: loop '%s' runs inside loop '%s', whose "
               "edges are on lanes; the segmented reduction needs the features "
               "outside it (put the lanes on the features)", p->loop.var->name,
               el->loop.var->name);
      return -1;
    }
    const IrNode *e = p->kind == IR_LOOP ? p->loop.extent : p->ifs.cond;
    Feat pf = {.path = f.path, .depth = i, .below = NULL};
    if (!inside_lanes && !feature_expr(&pf, e)) {
      ir_error(d, p->loc, "deterministic: %s '%s' around the reduction into "
               "'%s' depends on an edge, a local or a loaded value; the "
               "segmented reduction of neighbour groups repeats only feature "
               "loops and their guards", p->kind == IR_LOOP ? "the extent of loop" : "the guard",
               p->kind == IR_LOOP ? p->loop.var->name : pass_expr_string(a, e), y->name);
      return -1;
    }
    lane_loop |= p->kind == IR_LOOP && p->loop.bind == IR_BIND_LANE;
  }
  /* the features: indexed by the feature loops (outside lanes on edges) */
  Feat ft = {.path = f.path, .depth = f.depth, .below = lanes_on_edges ? el : NULL};
  for (int i = 1; i < s->acc.nidx; i++)
    if (!feature_expr(&ft, s->acc.idx[i])) {
      ir_error(d, s->loc, "deterministic: feature index %d of '%s' (%s) depends "
               "on an edge, a local or a loaded value; the segmented reduction "
               "of neighbour groups needs the features indexed by feature "
               "loops", i, y->name, pass_expr_string(a, s->acc.idx[i]));
      return -1;
    }

  /* Legal. The temporary: a row per table row, Y's features, in Y's type,
   * or f32 for a 16-bit Y: the partial sums are accumulators, which 16-bit
   * operators keep in f32 (docs/language.md, Types), so a destination's
   * result is rounded to 16 bits once. */
  bool half = ir_dtype_is_16bit(y->dtype);
  IrTensor *part = ir_op_add_tensor(a, op, pass_fresh_name(op, a, ir_sprintf(a, "%s_seg", y->name)),
                                    st->loc, half ? IR_DT_F32 : y->dtype, IR_DOM_GROUPS,
                                    IR_ROLE_TEMP);
  part->group = st->loop.group;
  part->ndims = y->ndims;
  memcpy(part->dims, y->dims, sizeof y->dims);

  /* Stage 2, built inside out: the store, the feature loops and guards
   * (fresh variables), the destination's rows, the destination. */
  IrVar *vv = pass_new_var(op, a, pass_fresh_name(op, a, "v_seg"), IR_VAR_DST_V, st->loc);
  IrVar *rv = pass_new_var(op, a, pass_fresh_name(op, a, "r_seg"), IR_VAR_INDEX, st->loc);
  IrNode *idx2[IR_MAX_IDX], *pidx[IR_MAX_IDX];
  idx2[0] = ir_var(a, s->loc, vv);
  pidx[0] = ir_var(a, s->loc, rv);
  for (int i = 1; i < s->acc.nidx; i++) {
    idx2[i] = ir_clone(a, s->acc.idx[i]);
    pidx[i] = ir_clone(a, s->acc.idx[i]);
  }
  /* each element of Y: its rows reduced in a local, in table order, then
   * one store (one rounding, for a 16-bit Y) */
  IrVar *sum = pass_new_var(op, a, pass_fresh_name(op, a, ir_sprintf(a, "%s_rows", y->name)),
                            IR_VAR_LOCAL, s->loc);
  IrNode *rows = ir_loop(a, st->loc, rv, IR_LOOP_GROUP_ROWS, NULL, ir_var(a, st->loc, vv),
                         ir_set(a, s->loc, sum, s->acc.red,
                                ir_load(a, s->loc, part, s->acc.nidx, pidx)));
  rows->loop.group = st->loop.group;
  rows->loop.ilv = st->loop.ilv;
  rows->loop.ilv_cls = st->loop.ilv_cls;
  rows->loop.ilv_thr = st->loop.ilv_thr;
  IrNode *body = ir_let(a, s->loc, sum, ir_fconst(a, s->loc, identity(s->acc.red)));
  body->next = rows;
  rows->next = ir_store(a, s->loc, y, s->acc.nidx, idx2, s->acc.red, ir_var(a, s->loc, sum));
  const IrVar *olds[PASS_MAX_DEPTH * 2];
  IrVar *news[PASS_MAX_DEPTH * 2];
  int nrenamed = 0;
  int top = lanes_on_edges ? ei_at : f.depth; /* what stage 2 repeats */
  for (int i = top - 1; i >= 1; i--) {
    const IrNode *p = f.path[i];
    if (p == el) continue;
    if (p->kind == IR_IF) {
      body = ir_if(a, p->loc, ir_clone(a, p->ifs.cond), body);
      continue;
    }
    IrVar *nv = pass_new_var(op, a, p->loop.var->name, p->loop.var->kind, p->loc);
    IrNode *l = ir_loop(a, p->loc, nv, IR_LOOP_RANGE, ir_clone(a, p->loop.extent), NULL, body);
    l->loop.bind = p->loop.bind;
    l->loop.unroll = p->loop.unroll;
    l->loop.vec = p->loop.vec;
    olds[nrenamed] = p->loop.var;
    news[nrenamed++] = nv;
    body = l;
  }
  IrNode *stage2 = ir_loop(a, st->loc, vv, IR_LOOP_DST_V, NULL, NULL, body);
  stage2->loop.bind = st->loop.bind == IR_BIND_WARP && !lane_loop ? IR_BIND_THREAD
                                                                   : st->loop.bind;
  stage2->loop.threads = st->loop.threads;
  stage2->loop.occ = st->loop.occ;
  for (int i = 0; i < nrenamed; i++)
    pass_subst_stmts(a, stage2, olds[i], ir_var(a, stage2->loc, news[i]));

  /* Stage 1: into the row of the group instead of the destination. Where
   * the group-edges loop is the innermost loop around the store (the
   * spmm_groups family: lanes on features, edges inside), its sum is kept
   * in a local and stored once after the loop, as accumulate does for an
   * owned row; with lanes on the edges, likewise, reduced across them;
   * else (feature loops inside the edge loop) in the row, edge by edge. */
  bool innermost = true;
  for (int i = ei_at + 1; i < f.depth; i++) innermost &= f.path[i]->kind != IR_LOOP;
  if (!lanes_on_edges && !innermost) {
    s->acc.tensor = part;
    s->acc.idx[0] = ir_var(a, s->loc, st->loop.var);
  } else {
    /* a local per warp, reduced across the lanes, stored once per row */
    IrVar *acc = pass_new_var(op, a, pass_fresh_name(op, a, ir_sprintf(a, "%s_acc", y->name)),
                              IR_VAR_LOCAL, s->loc);
    IrNode *set = ir_set(a, s->loc, acc, s->acc.red, s->acc.value);
    set->next = s->next;
    *f.slot = set;
    IrNode *sidx[IR_MAX_IDX];
    sidx[0] = ir_var(a, s->loc, st->loop.var);
    for (int i = 1; i < s->acc.nidx; i++) sidx[i] = s->acc.idx[i];
    IrNode *put = ir_store(a, s->loc, part, s->acc.nidx, sidx, IR_RED_ASSIGN,
                           ir_var(a, s->loc, acc));
    /* every table row is a group, which stores its whole row once: the op
     * fills the temporary itself, and the runtime gives it no start value
     * (CgTensorInfo.filled; it cleared rows x F words before every run) */
    part->filled = true;
    IrNode *let = ir_let(a, s->loc, acc, ir_fconst(a, s->loc, identity(s->acc.red)));
    PassSite es;
    if (!pass_find_node(op, el, &es)) unreachable("group-edges loop not found");
    put->next = el->next;
    el->next = put;
    let->next = el;
    *es.slot = let;
  }
  stage2->next = st->next;
  st->next = stage2;
  return 1;
}

/* The groups loop inside `st` when `st` is a nest of unbound range loops
 * around it alone (feature tiles taken outside the groups: spmm_tiles),
 * else NULL. */
static const IrNode *tiled_groups(const IrNode *st) {
  const IrNode *l = st;
  while (l && l->kind == IR_LOOP && l->loop.kind == IR_LOOP_RANGE &&
         l->loop.bind == IR_BIND_NONE && l->loop.body && !l->loop.body->next)
    l = l->loop.body;
  return l != st && l->kind == IR_LOOP && l->loop.kind == IR_LOOP_GROUPS ? l : NULL;
}

int pass_segment(IrOp *op, Arena *a, Diag *d) {
  if (!op->deterministic) return 0;
  for (IrNode *st = op->body; st; st = st->next) {
    const IrNode *g = tiled_groups(st);
    if (g) {
      /* the second stage would have to run between two tiles */
      ir_error(d, st->loc, "deterministic: neighbour groups loop '%s' is inside "
               "feature-tile loop '%s'; the segmented reduction needs the groups "
               "loop outermost (spmm_teams takes the same groups without tiles)",
               g->loop.var->name, st->loop.var->name);
      return -1;
    }
    if (st->kind != IR_LOOP || st->loop.kind != IR_LOOP_GROUPS ||
        st->loop.bind == IR_BIND_NONE || st->loop.shared)
      continue;
    int rc = segment_stage(op, st, a, d);
    if (rc < 0) return -1;
    if (rc > 0) st = st->next; /* past the new stage */
  }
  return 0;
}
