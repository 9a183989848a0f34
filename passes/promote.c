/* passes/promote.c: promote(loop, register | shared), on-chip accumulators.
 *
 * Contract: requires an unbound loop L that is not a stage's outermost
 * loop, holding reductions whose element does not change across its
 * iterations (the index reads only variables bound outside L); gives
 *
 *   var acc = IDENTITY          (0.0 for +=, -inf for max=, inf for min=)
 *   for ... L ... { ... acc op= value ... }
 *   Y[idx] op= acc              (under the guards of idx between L and it)
 *
 * so the element is read and written once per trip through L instead of
 * once per iteration: fuseGNN's gather-apply-reduce keeps the partial sum
 * on chip this way. Breaks nothing; L becomes a reduction loop of `acc`,
 * so binding it to workers is then refused.
 *
 * The sum adds the same terms in the same order (acc starts at the
 * identity, as the element does), so results are bit-identical. A target
 * read inside L would see stale values, and one written at two places would
 * need two accumulators: both are refused. A mean= target is lowered first
 * (lower_mean.c), since an accumulator holds a sum, not a count. A max= or
 * min= flush is skipped when L had no iteration (an empty in_edges), so an
 * element that got no contribution is still seen as empty.
 *
 * `promote(g, shared)` is GNNAdvisor's per-warp shared-memory accumulator:
 * g must be a groups loop (neighbour groups, group.c) bound to warp; the
 * reductions into its groups' destination (`Y[dst(ei), ...] op= x`) become
 * `shared` stores and g is marked `@shared`. Code generation
 * (codegen/shared.c) then gives each warp of a block a row of shared memory
 * for the destination's features; the block's warps take consecutive
 * groups, fill their rows, meet at a barrier, and the first warp of each run
 * of groups of one destination (its leader) adds the run's rows up and
 * flushes them once with atomics (other blocks may hold groups of the same
 * destination). Requires: one such tensor per stage, its other indices made
 * of range loops inside g only, each element of a row written by one lane
 * at a time (lanes on features: the store does not conflict among the loops
 * inside g), and the tensor not read inside g.
 *
 * `promote(X, shared)` with X a tensor, not a loop, stages an input: X must
 * be a dense input (no src, dst or edge dimension: an attention vector, a
 * per-head table, a weight [H, F]), read somewhere, and small enough for a
 * block's shared memory when its size is constant. X is marked `@shared`
 * (`a: f32[H, C] @shared` in the op's signature); every kernel that reads
 * it then copies it whole into dynamic shared memory at its start, the
 * block's threads together (coalesced), meets at one barrier, and reads
 * every element of X from shared memory (codegen/shared.c). Nothing else
 * changes, so the interpreter, which reads X as before, stays the oracle.
 * Refused: an output or temporary (an accumulator is promoted through its
 * loop), a vertex or edge tensor (its size grows with the graph; a per-warp
 * tile of one row is not supported), a tensor no stage reads, one staged
 * already, a constant size above any target's limit, and `register`.
 */
#include <math.h>
#include <string.h>

#include "passes/passes.h"

enum { MAX_STORES = 16 };

typedef struct Scan {
  const IrVar *inner[256]; /* variables bound inside L */
  int ninner;
  IrNode **slots[MAX_STORES]; /* candidate stores */
  IrNode *guards[MAX_STORES][PASS_MAX_DEPTH]; /* guards between L and each */
  int nguards[MAX_STORES];
  int n;
  IrNode *path[PASS_MAX_DEPTH];
  int depth;
  const IrNode *other; /* a store to a candidate's tensor at another index */
  const IrNode *group_of; /* L is group_edges(g): g's row (inner[0] is L's edge) */
} Scan;

static bool outer_var(const IrVar *v, void *ctx) {
  const Scan *sc = ctx;
  for (int i = 0; i < sc->ninner; i++)
    if (sc->inner[i] == v) return false;
  return true;
}

static void collect_inner(Scan *sc, const IrNode *list) {
  for (const IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_LOOP) {
      if (sc->ninner < 256) sc->inner[sc->ninner++] = s->loop.var;
      collect_inner(sc, s->loop.body);
    } else if (s->kind == IR_LET) {
      if (sc->ninner < 256) sc->inner[sc->ninner++] = s->let.var;
    } else if (s->kind == IR_IF) {
      collect_inner(sc, s->ifs.then);
    }
  }
}

/* `dst(e)` of the group_edges loop L's edge: the same for every edge of
 * the group (a group never crosses a destination), `dst(g)` of its row. */
static bool group_dst(const Scan *sc, const IrNode *e) {
  return sc->group_of && e->kind == IR_DST && e->endpoint.e->kind == IR_VAR &&
         e->endpoint.e->var == sc->inner[0];
}

static bool index_outer(Scan *sc, const IrNode *st) {
  for (int i = 0; i < st->acc.nidx; i++)
    if (!group_dst(sc, st->acc.idx[i]) &&
        !pass_expr_vars_all(st->acc.idx[i], outer_var, sc))
      return false;
  return true;
}

/* The flush's copy of index `e`: the group's destination for dst(e). */
static IrNode *flush_index(const Scan *sc, IrNode *e, Arena *a) {
  if (!group_dst(sc, e)) return e;
  return ir_endpoint(a, e->loc, IR_DST, ir_clone(a, sc->group_of));
}

static void find_stores(Scan *sc, IrNode **list) {
  for (IrNode **p = list; *p; p = &(*p)->next) {
    IrNode *s = *p;
    if (s->kind == IR_LOOP || s->kind == IR_IF) {
      if (sc->depth < PASS_MAX_DEPTH) {
        sc->path[sc->depth++] = s;
        find_stores(sc, s->kind == IR_LOOP ? &s->loop.body : &s->ifs.then);
        sc->depth--;
      }
      continue;
    }
    if (s->kind != IR_STORE || s->acc.red == IR_RED_ASSIGN ||
        s->acc.how == IR_HOW_SHARED || !index_outer(sc, s))
      continue;
    if (sc->n == MAX_STORES) continue;
    int k = sc->n++;
    sc->slots[k] = p;
    sc->nguards[k] = 0;
    for (int i = 0; i < sc->depth; i++)
      if (sc->path[i]->kind == IR_IF) sc->guards[k][sc->nguards[k]++] = sc->path[i];
  }
}

static bool reads_tensor(const IrNode *e, const IrTensor *t) {
  if (!e) return false;
  switch (e->kind) {
  case IR_LOAD:
    if (e->acc.tensor == t) return true;
    for (int i = 0; i < e->acc.nidx; i++)
      if (reads_tensor(e->acc.idx[i], t)) return true;
    return false;
  case IR_BIN: return reads_tensor(e->bin.a, t) || reads_tensor(e->bin.b, t);
  case IR_UN: return reads_tensor(e->un.a, t);
  case IR_CALL:
    for (int i = 0; i < e->call.nargs; i++)
      if (reads_tensor(e->call.args[i], t)) return true;
    return false;
  default: return false;
  }
}

static bool found(const Scan *sc, const IrNode *s) {
  for (int k = 0; sc && k < sc->n; k++)
    if (*sc->slots[k] == s) return true;
  return false;
}

/* How `t` is used under `list` besides the store `self` (and, with `sc`,
 * the stores the scan found): 1 read, 2 another store, 0 neither. */
static int other_use(const IrNode *list, const IrTensor *t, const IrNode *self,
                     const Scan *sc) {
  for (const IrNode *s = list; s; s = s->next) {
    int r = 0;
    switch (s->kind) {
    case IR_LOOP:
      if (reads_tensor(s->loop.extent, t) || reads_tensor(s->loop.of, t)) return 1;
      r = other_use(s->loop.body, t, self, sc);
      break;
    case IR_IF:
      if (reads_tensor(s->ifs.cond, t)) return 1;
      r = other_use(s->ifs.then, t, self, sc);
      break;
    case IR_STORE:
      if (reads_tensor(s->acc.value, t)) return 1;
      for (int i = 0; i < s->acc.nidx; i++)
        if (reads_tensor(s->acc.idx[i], t)) return 1;
      if (s != self && s->acc.tensor == t && !found(sc, s)) return 2;
      break;
    case IR_LET: if (reads_tensor(s->let.init, t)) return 1; break;
    case IR_SET: if (reads_tensor(s->set.value, t)) return 1; break;
    default: break;
    }
    if (r) return r;
  }
  return 0;
}

static bool cond_outer(Scan *sc, const IrNode *g) {
  return pass_expr_vars_all(g->ifs.cond, outer_var, sc);
}

/* ---- promote(g, shared) ---- */

typedef struct Shared {
  const IrVar *edge;  /* the group_edges variable */
  const IrVar *ranges[64]; /* range loops inside g, for the row indices */
  int nranges;
  IrNode *path[PASS_MAX_DEPTH]; /* loops and guards inside g */
  int depth;
  IrNode *stores[MAX_STORES];
  int n;
  const IrNode *bad_store; /* one whose row index is not a feature index */
  const IrNode *clash;     /* one whose lanes may hit the same element */
} Shared;

static bool range_var(const IrVar *v, void *ctx) {
  const Shared *sh = ctx;
  for (int i = 0; i < sh->nranges; i++)
    if (sh->ranges[i] == v) return true;
  return false;
}

static bool is_dst_of_edge(const Shared *sh, const IrNode *e) {
  return e->kind == IR_DST && e->endpoint.e->kind == IR_VAR &&
         e->endpoint.e->var == sh->edge;
}

static void shared_scan(Shared *sh, IrNode *list) {
  for (IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_LOOP || s->kind == IR_IF) {
      if (sh->depth == PASS_MAX_DEPTH) continue;
      if (s->kind == IR_LOOP && s->loop.kind == IR_LOOP_GROUP_EDGES)
        sh->edge = s->loop.var;
      if (s->kind == IR_LOOP && s->loop.kind == IR_LOOP_RANGE && sh->nranges < 64)
        sh->ranges[sh->nranges++] = s->loop.var;
      sh->path[sh->depth++] = s;
      shared_scan(sh, s->kind == IR_LOOP ? s->loop.body : s->ifs.then);
      sh->depth--;
      continue;
    }
    if (s->kind != IR_STORE || s->acc.red == IR_RED_ASSIGN || s->acc.nidx < 1 ||
        !sh->edge || !is_dst_of_edge(sh, s->acc.idx[0]))
      continue;
    for (int i = 1; i < s->acc.nidx; i++)
      if (!pass_expr_vars_all(s->acc.idx[i], range_var, sh)) sh->bad_store = s;
    if (pass_store_conflicts(sh->path, sh->depth, s, NULL)) sh->clash = s;
    if (sh->n < MAX_STORES) sh->stores[sh->n++] = s;
  }
}

static int promote_shared(IrOp *op, const char *loop, Loc loc, Arena *a,
                          Diag *d) {
  PassSite site;
  if (!pass_find_loop(op, "promote", loop, &site, loc, a, d)) return -1;
  IrNode *l = site.node;
  if (l->loop.kind != IR_LOOP_GROUPS) {
    ir_error(d, loc, "promote(%s, shared): loop '%s' is not a groups loop; the "
             "shared-memory accumulator is per neighbour group (make them with "
             "group(e, G) on the in-edges of a vertex loop)", loop, loop);
    return -1;
  }
  if (l->loop.bind != IR_BIND_WARP) {
    ir_error(d, loc, "promote(%s, shared): loop '%s' must be bound to warp "
             "first (bind(%s, warp)): each warp accumulates its group in a row "
             "of its own", loop, loop, loop);
    return -1;
  }
  if (l->loop.shared) {
    ir_error(d, loc, "promote(%s, shared): loop '%s' is promoted already", loop,
             loop);
    return -1;
  }
  Shared sh = {0};
  shared_scan(&sh, l->loop.body);
  if (sh.n == 0) return 1; /* nothing to promote here: the caller decides */
  const IrTensor *t = sh.stores[0]->acc.tensor;
  for (int k = 1; k < sh.n; k++)
    if (sh.stores[k]->acc.tensor != t) {
      ir_error(d, loc, "promote(%s, shared): loop '%s' reduces into '%s' and "
               "'%s'; a stage has one shared accumulator", loop, loop, t->name,
               sh.stores[k]->acc.tensor->name);
      return -1;
    }
  if (sh.bad_store) {
    ir_error(d, loc, "promote(%s, shared): the reduction into '%s' indexes its "
             "features with more than the range loops inside '%s'; a row of "
             "the accumulator holds one destination's features", loop,
             sh.bad_store->acc.tensor->name, loop);
    return -1;
  }
  if (sh.clash) {
    ir_error(d, loc, "promote(%s, shared): in the reduction into '%s', the "
             "lanes of a warp may add to the same element of its row at once; "
             "put the lanes on the features (bind a feature loop to lane)",
             loop, t->name);
    return -1;
  }
  if (other_use(l->loop.body, t, sh.stores[0], NULL) == 1) {
    ir_error(d, loc, "promote(%s, shared): tensor '%s' is read inside loop "
             "'%s', so its partial result cannot wait in shared memory", loop,
             t->name, loop);
    return -1;
  }
  for (int k = 0; k < sh.n; k++)
    if (sh.stores[k]->acc.red == IR_RED_MEAN) {
      if (pass_lower_mean_tensor(op, (IrTensor *)t, a, d) != 0) return -1;
      break;
    }
  for (int k = 0; k < sh.n; k++) sh.stores[k]->acc.how = IR_HOW_SHARED;
  l->loop.shared = true;
  return 0;
}

/* ---- promote(TENSOR, shared): staging a dense input ---- */

/* The most shared memory one block may have on any target gop compiles
 * for (sm_90 with opt-in: 227 KiB; sm_80 163 KiB, sm_86/sm_89 99 KiB): a
 * tile of constant size above it could never launch. Sizes that depend on
 * extents are checked by the runtime at launch against the device. */
#define STAGE_MAX_BYTES (227 * 1024)

static int promote_tensor(IrOp *op, IrTensor *t, const char *where, Loc loc,
                          Arena *a, Diag *d) {
  const char *x = t->name;
  if (strcmp(where, "shared") != 0) {
    ir_error(d, loc, "promote(%s, %s): '%s' is a tensor; a tensor is staged in "
             "shared memory (promote(%s, shared)) or its rows held in registers "
             "(promote(%s, register))", x, where, x, x, x);
    return -1;
  }
  if (t->role != IR_ROLE_IN) {
    ir_error(d, loc, "promote(%s, shared): tensor '%s' is %s of %s; only a "
             "read-only input can be staged in shared memory (a partial result "
             "is promoted through its loop: promote(LOOP, register) or "
             "promote(GROUPS, shared))", x, x,
             t->role == IR_ROLE_OUT ? "an output" : "a temporary", op->name);
    return -1;
  }
  if (t->domain != IR_DOM_DENSE) {
    ir_error(d, loc, "promote(%s, shared): tensor '%s' has a row per %s; only a "
             "dense input (no src, dst or edge dimension) is staged whole in "
             "shared memory, and staging one row per warp is not supported",
             x, x, t->domain == IR_DOM_EDGE ? "edge"
                   : t->domain == IR_DOM_SRC ? "source vertex"
                                             : "destination vertex");
    return -1;
  }
  if (t->shared) {
    ir_error(d, loc, "promote(%s, shared): tensor '%s' is staged already", x, x);
    return -1;
  }
  if (other_use(op->body, t, NULL, NULL) != 1) {
    ir_error(d, loc, "promote(%s, shared): no stage of %s reads tensor '%s', "
             "so there is nothing to stage", x, op->name, x);
    return -1;
  }
  int64_t bytes = ir_dtype_bytes(t->dtype);
  bool constant = true;
  for (int i = 0; i < t->ndims; i++) {
    if (t->dims[i].sym) constant = false;
    else if (bytes <= STAGE_MAX_BYTES) bytes *= t->dims[i].value;
  }
  if (constant && bytes > STAGE_MAX_BYTES) {
    ir_error(d, loc, "promote(%s, shared): tensor '%s' takes %lld bytes; a "
             "block's shared memory holds at most %d on any target (227 KiB, "
             "sm_90)", x, x, (long long)bytes, STAGE_MAX_BYTES);
    return -1;
  }
  /* The staged one is this op's own tensor, in a new copy. */
  IrOp *c = pass_op_copy(op, a);
  pass_own_tensor(c, t, a)->shared = true;
  *op = *c;
  return 0;
}

/* ---- finishing a target in the flush ---- */

/* Whether the flush of candidate k can finish its target itself: a +=,
 * mean=, max= or min= store into row v of a vertex tensor, where L is v's whole
 * neighbourhood (in_edges(v) for a dst tensor, out_edges(u) for a src one),
 * the only store into that tensor in the operator, and its element owned
 * by one worker (a plain store). Then the flush assigns the element (a sum
 * needs no zero fill and no read of the element), divides by the degree,
 * or turns an empty max/min into 0, and no finalisation stage is needed:
 * the fused epilogue of a vertex-parallel aggregation. */
static bool finishes(IrOp *op, const PassSite *site, Scan *sc, int k) {
  const IrNode *st = *sc->slots[k];
  const IrNode *l = site->node;
  IrRed red = st->acc.red;
  if (red != IR_RED_ADD && red != IR_RED_MEAN && red != IR_RED_MAX && red != IR_RED_MIN)
    return false;
  const IrTensor *t = st->acc.tensor;
  bool in = l->loop.kind == IR_LOOP_IN_EDGES && t->domain == IR_DOM_DST;
  bool out = l->loop.kind == IR_LOOP_OUT_EDGES && t->domain == IR_DOM_SRC;
  if (!(in || out) || !l->loop.of || st->acc.nidx < 1 ||
      !pass_expr_equal(st->acc.idx[0], l->loop.of))
    return false;
  /* In a warp (block) loop with no lane (thread or warp) loop inside it,
   * every worker would compute the same element: leave the store a
   * reduction, which the conflicts pass refuses with the reason ("bind a
   * loop around it to lane"). A promote written in the schedule before the
   * bind has finished the store already; then each worker stores the same
   * whole value, which is redundant but right. */
  IrBind team = IR_BIND_NONE;
  bool apart = false;
  for (int i = 0; i < site->depth; i++) {
    if (site->path[i]->kind != IR_LOOP) continue;
    IrBind b = site->path[i]->loop.bind;
    if (b == IR_BIND_WARP || b == IR_BIND_BLOCK) {
      apart = false;
      team = b;
    } else if (b == IR_BIND_LANE || b == IR_BIND_THREAD) {
      apart = true;
    }
  }
  if (team != IR_BIND_NONE && !apart) return false;
  if (pass_store_stages(op, t) != 1) return false;
  for (int g = 0; g < sc->nguards[k]; g++)
    if (!cond_outer(sc, sc->guards[k][g])) return false;
  return !pass_store_conflicts(site->path, site->depth, st, NULL);
}

/* The finishing flush of `st`'s accumulator `acc` after L:
 *   +=          Y[v, ...] = acc
 *   mean=       Y[v, ...] = acc / max(in_degree(v), 1.0)
 *   max=/min=   if (in_degree(v) == 0.0) { acc = 0.0 }  Y[v, ...] = acc
 * an element is written once, whole: no finalisation stage reads it back. */
static IrNode *finish(const IrNode *l, IrNode *st, IrVar *acc, Arena *a) {
  Loc at = st->loc;
  IrNode *value = ir_var(a, at, acc), *fix = NULL;
  if (st->acc.red == IR_RED_ADD) {
    /* the whole sum: the element needs no zero fill and is not read back */
  } else if (st->acc.red == IR_RED_MEAN) {
    IrKind deg = l->loop.kind == IR_LOOP_IN_EDGES ? IR_INDEG : IR_OUTDEG;
    IrNode *args[2] = {ir_endpoint(a, at, deg, ir_clone(a, l->loop.of)),
                       ir_fconst(a, at, 1.0)};
    value = ir_bin(a, at, IR_OP_DIV, value, ir_call(a, at, IR_FN_MAX, 2, args));
  } else {
    /* a test of the degree, not of acc: a vector body (codegen/vector.c)
     * keeps it whole, where a test of a vector would split it */
    IrKind deg = l->loop.kind == IR_LOOP_IN_EDGES ? IR_INDEG : IR_OUTDEG;
    IrNode *empty = ir_bin(a, at, IR_OP_EQ, ir_endpoint(a, at, deg, ir_clone(a, l->loop.of)),
                           ir_fconst(a, at, 0.0));
    fix = ir_if(a, at, empty, ir_set(a, at, acc, IR_RED_ASSIGN, ir_fconst(a, at, 0.0)));
  }
  IrNode *store = ir_store(a, at, st->acc.tensor, st->acc.nidx, st->acc.idx,
                           IR_RED_ASSIGN, value);
  ir_append(&fix, store);
  return fix;
}

/* Whether the groups around a promoted L may own the rows of `st`'s
 * target: a sum, mean, max or min into a destination row (`Y[dst(g),
 * ...]`), the only store into that tensor in the operator (a plain store
 * of an owned row would overwrite another store's contributions). */
static bool owns_rows(const IrOp *op, const IrNode *st) {
  IrRed red = st->acc.red;
  const IrTensor *t = st->acc.tensor;
  if ((red != IR_RED_ADD && red != IR_RED_MEAN && red != IR_RED_MAX && red != IR_RED_MIN) ||
      t->domain != IR_DOM_DST || t->role == IR_ROLE_IN || t->owner_group)
    return false;
  return pass_store_stages(op, t) == 1;
}

/* `if (in_degree(dst(g)) <= G) { plain Y[...] = acc }   (acc / in_degree for a mean)
 *  if (in_degree(dst(g)) > G) { atomic }`: the group of a destination with
 * at most G in-edges is its only one, so it writes the whole sum (mean,
 * max, min); the store is marked plain here because the conflicts pass
 * cannot see that the guard leaves it one writer. The rows it does not
 * own (heavy and empty ones) are filled by the op's own first stage
 * (fill.c) and finished by the finalisation stage (lower_mean.c). */
static IrNode *owned_or_atomic(const Scan *sc, const IrNode *st, IrVar *acc,
                               IrNode *atomic, int64_t G, bool mean, Arena *a) {
  Loc at = st->loc;
  IrNode *deg = ir_endpoint(a, at, IR_INDEG, ir_endpoint(a, at, IR_DST, ir_clone(a, sc->group_of)));
  IrNode *idx[IR_MAX_IDX];
  for (int i = 0; i < st->acc.nidx; i++) idx[i] = ir_clone(a, st->acc.idx[i]);
  IrNode *value = ir_var(a, at, acc);
  if (mean) value = ir_bin(a, at, IR_OP_DIV, value, ir_clone(a, deg));
  IrNode *only = ir_store(a, at, st->acc.tensor, st->acc.nidx, idx, IR_RED_ASSIGN, value);
  only->acc.how = IR_HOW_PLAIN;
  IrNode *one = ir_if(a, at, ir_bin(a, at, IR_OP_LE, deg, ir_fconst(a, at, (double)G)), only);
  IrNode *many = ir_if(a, at, ir_bin(a, at, IR_OP_GT, ir_clone(a, deg),
                                     ir_fconst(a, at, (double)G)), atomic);
  one->next = many;
  return one;
}

/* The twin of a 16-bit tensor `t` that its groups of G own (owned_or_atomic)
 * in the accumulator type, for its heavy rows: a 16-bit atomic would round
 * every addition (codegen/store.c), so those rows add into the twin with
 * f32 atomics, and a stage after the reduction (pass_lower_wide) rounds
 * them into t once. The twin's rows are filled (fill.c) and read only where
 * t's groups do not own them: the empty and heavy rows. */
static IrTensor *widen(IrOp *op, const IrTensor *t, int G, Arena *a) {
  const char *name = pass_fresh_name(op, a, ir_sprintf(a, "%s_wide", t->name));
  IrTensor *w = ir_op_add_tensor(a, op, name, t->loc, op->acc, t->domain, IR_ROLE_TEMP);
  w->ndims = t->ndims;
  memcpy(w->dims, t->dims, sizeof t->dims);
  w->owner_group = G;
  w->wide = true;
  return w;
}

int pass_promote_register(IrOp *op, PassSite *site, Loc loc, Arena *a, Diag *d) {
  IrNode *l = site->node;
  const char *loop = l->loop.var->name;
  /* A neighbour group's edges on the lanes of its warp or team: each lane
   * reduces its edges into its own register, the lanes' registers are
   * combined by warp shuffles (conflicts.c makes the set a shuffle: a
   * @lane loop lies between it and its `var`) and one lane stores the
   * total. Sums, max and min only (a mean is lowered first). */
  bool lanes = l->loop.bind == IR_BIND_LANE && l->loop.kind == IR_LOOP_GROUP_EDGES;
  if (l->loop.bind != IR_BIND_NONE && !lanes) {
    ir_error(d, loc, "promote: loop '%s' is bound to %s; its iterations run on "
             "different workers, which cannot share one register", loop,
             ir_bind_name(l->loop.bind));
    return -1;
  }
  if (site->depth == 0) {
    ir_error(d, loc, "promote: loop '%s' is the outermost loop of its stage; "
             "there is no loop around it to hold the register", loop);
    return -1;
  }
  Scan sc = {0};
  sc.inner[sc.ninner++] = l->loop.var;
  /* A deterministic op's group stores are segmented (segment.c) instead. */
  if (l->loop.kind == IR_LOOP_GROUP_EDGES && !op->deterministic) sc.group_of = l->loop.of;
  collect_inner(&sc, l->loop.body);
  find_stores(&sc, &l->loop.body);
  if (sc.n == 0) return 1; /* nothing to promote here: the caller decides */
  /* twin[k]: an earlier store that adds into the same element (GAT's dAs
   * under the two signs of its score): the two share one register, and
   * the earlier one's flush stores the sum of both */
  int twin[MAX_STORES];
  for (int k = 0; k < sc.n; k++) {
    const IrNode *st = *sc.slots[k];
    twin[k] = -1;
    for (int j = 0; j < k && twin[k] < 0; j++) {
      const IrNode *o = *sc.slots[j];
      bool same = o->acc.tensor == st->acc.tensor && o->acc.red == IR_RED_ADD &&
                  st->acc.red == IR_RED_ADD && o->acc.nidx == st->acc.nidx;
      for (int i = 0; same && i < st->acc.nidx; i++)
        same = pass_expr_equal(o->acc.idx[i], st->acc.idx[i]);
      if (same) twin[k] = twin[j] >= 0 ? twin[j] : j;
    }
  }
  for (int k = 0; k < sc.n; k++) {
    const IrNode *st = *sc.slots[k];
    const char *t = st->acc.tensor->name;
    /* a read, a store the scan did not find, or one that is not a twin */
    int use = other_use(l->loop.body, st->acc.tensor, st, &sc);
    int root = twin[k] >= 0 ? twin[k] : k;
    for (int j = 0; j < sc.n && !use; j++)
      if (j != k && (*sc.slots[j])->acc.tensor == st->acc.tensor &&
          (twin[j] >= 0 ? twin[j] : j) != root)
        use = 2;
    if (use) {
      ir_error(d, loc, "promote: tensor '%s' is %s inside loop '%s', so its "
               "partial result cannot wait in a register", t,
               use == 1 ? "read" : "written at another place", loop);
      return -1;
    }
    if (lanes && st->acc.red == IR_RED_MEAN) {
      ir_error(d, loc, "promote: the mean into '%s' over the lanes of loop '%s' is not "
               "combined in registers; lower the mean first", t, loop);
      return -1;
    }
    for (int g = 0; g < sc.nguards[k]; g++)
      if (!cond_outer(&sc, sc.guards[k][g]) && st->acc.red != IR_RED_ADD &&
          st->acc.red != IR_RED_MEAN) {
        ir_error(d, loc, "promote: the %s into '%s' is conditional inside loop "
                 "'%s'; an element that gets nothing would look reduced", 
                 ir_red_name(st->acc.red), t, loop);
        return -1;
      }
  }
  /* The neighbour-groups loop around L when L is its group's edges: a
   * group of a destination with at most G in-edges is its only one. */
  const IrNode *gl = NULL;
  for (int i = 0; sc.group_of && i < site->depth; i++)
    if (site->path[i]->kind == IR_LOOP && site->path[i]->loop.kind == IR_LOOP_GROUPS &&
        site->path[i]->loop.var == sc.group_of->var && site->path[i]->loop.group > 0)
      gl = site->path[i];
  /* A mean=, max= or min= target that L finishes is finished in the flush;
   * one that L's groups own is finished there for its owned rows; any
   * other mean= accumulator holds a sum: lower the mean first. */
  bool fin[MAX_STORES], owned[MAX_STORES], mean[MAX_STORES];
  IrTensor *wide[MAX_STORES];
  for (int k = 0; k < sc.n; k++) {
    IrNode *st = *sc.slots[k];
    fin[k] = finishes(op, site, &sc, k);
    mean[k] = st->acc.red == IR_RED_MEAN;
    owned[k] = !fin[k] && gl && owns_rows(op, st);
    if (owned[k]) pass_own_tensor(op, st->acc.tensor, a)->owner_group = (int)gl->loop.group;
    IrTensor *t = st->acc.tensor;
    wide[k] = owned[k] && ir_dtype_is_16bit(t->dtype)
                  ? widen(op, t, (int)gl->loop.group, a) : NULL;
    if (wide[k] && pass_lower_wide(op, t, wide[k], a, d) != 0) return -1;
    if (!wide[k] && !fin[k] && mean[k] && pass_lower_mean_tensor(op, t, a, d) != 0)
      return -1;
  }

  Loc at = l->loc;
  IrNode *before = NULL, *after = NULL;
  IrVar *accs[MAX_STORES];
  IrNode *orig[MAX_STORES], *sets[MAX_STORES];
  for (int k = 0; k < sc.n; k++) {
    IrNode *st = orig[k] = *sc.slots[k];
    IrRed red = st->acc.red;
    if (twin[k] >= 0) { /* into its twin's register; the twin flushes both */
      sets[k] = ir_set(a, st->loc, accs[twin[k]], red, st->acc.value);
      continue;
    }
    if (fin[k] && red == IR_RED_MEAN) red = IR_RED_ADD; /* a sum, divided at the end */
    const char *name = pass_fresh_name(op, a, ir_sprintf(a, "%s_acc", st->acc.tensor->name));
    IrVar *acc = accs[k] = pass_new_var(op, a, name, IR_VAR_LOCAL, at);
    double id = red == IR_RED_MAX ? -INFINITY : red == IR_RED_MIN ? INFINITY : 0.0;
    ir_append(&before, ir_let(a, at, acc, ir_fconst(a, at, id)));
    sets[k] = ir_set(a, st->loc, acc, red, st->acc.value);
    for (int i = 0; i < st->acc.nidx; i++) st->acc.idx[i] = flush_index(&sc, st->acc.idx[i], a);
    IrNode *flush = fin[k] ? finish(l, st, acc, a)
                           : ir_store(a, st->loc, wide[k] ? wide[k] : st->acc.tensor,
                                      st->acc.nidx, st->acc.idx, red, ir_var(a, at, acc));
    /* Under the guards that keep its index in range. */
    for (int g = sc.nguards[k] - 1; g >= 0; g--)
      if (cond_outer(&sc, sc.guards[k][g]))
        flush = ir_if(a, at, ir_clone(a, sc.guards[k][g]->ifs.cond), flush);
    /* A group that is its destination's only one (in-degree at most G)
     * owns the element: a plain store, the atomic only for heavy rows. */
    if (owned[k]) flush = owned_or_atomic(&sc, st, acc, flush, gl->loop.group, mean[k], a);
    /* max/min: an empty L leaves the element empty, not "reduced to -inf". */
    if (!fin[k] && (red == IR_RED_MAX || red == IR_RED_MIN) &&
        (l->loop.kind == IR_LOOP_IN_EDGES || l->loop.kind == IR_LOOP_OUT_EDGES)) {
      IrKind deg = l->loop.kind == IR_LOOP_IN_EDGES ? IR_INDEG : IR_OUTDEG;
      IrNode *cond = ir_bin(a, at, IR_OP_GT,
                            ir_endpoint(a, at, deg, ir_clone(a, l->loop.of)),
                            ir_fconst(a, at, 0.0));
      flush = ir_if(a, at, cond, flush);
    }
    if (lanes) { /* the total is in every lane: the team's first stores it */
      IrVar *one = pass_new_var(op, a, pass_fresh_name(op, a, "l_one"), IR_VAR_INDEX, at);
      flush = ir_loop(a, at, one, IR_LOOP_RANGE, ir_iconst(a, at, 1), NULL, flush);
      flush->loop.bind = IR_BIND_LANE;
    }
    ir_append(&after, flush);
  }
  /* Each store becomes its set, last first: a store's slot may be the
   * `next` of the store before it in the same list, which must still be
   * in the list when it is written. */
  for (int k = sc.n - 1; k >= 0; k--) {
    sets[k]->next = orig[k]->next;
    *sc.slots[k] = sets[k];
  }
  /* let ...; L; flush ... */
  IrNode *rest = l->next;
  l->next = after;
  ir_append(&l->next, rest);
  ir_append(&before, l);
  *site->slot = before;
  return 0;
}

int pass_promote(IrOp *op, const char *loop, const char *where, Loc loc,
                 Arena *a, Diag *d) {
  IrTensor *t = ir_op_find_tensor(op, loop);
  if (t && strcmp(where, "register") == 0) return pass_promote_row(op, t, loc, a, d);
  if (t) return promote_tensor(op, t, where, loc, a, d);
  if (strcmp(where, "shared") == 0) return promote_shared(op, loop, loc, a, d);
  if (strcmp(where, "register") != 0) {
    ir_error(d, loc, "promote: '%s' is not a place; expected register or "
             "shared", where);
    return -1;
  }
  PassSite site;
  if (!pass_find_loop(op, "promote", loop, &site, loc, a, d)) return -1;
  return pass_promote_register(op, &site, loc, a, d);
}
