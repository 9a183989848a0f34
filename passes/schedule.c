/* passes/schedule.c: applying schedules, the data form of scheduling.
 *
 * A directive is looked up by its primitive's name in one table, its
 * arguments are checked against the primitive's signature and evaluated
 * (integer expressions over the schedule's parameters), and the primitive
 * runs once for each stage that has the loops the directive names, on a
 * copy of the operator that replaces it only when every stage succeeded.
 * Each primitive therefore sees one stage, where loop names are unique.
 *
 * Four directives act on the schedule rather than on loops:
 *
 *   optional(f, ...)   the operator may lack loop f: directives naming it,
 *                      and the loops made from it, are skipped (a fuse with
 *                      a missing loop renames the other one to its result);
 *   fallback(x, y)     where loop x is missing (made from a missing optional
 *                      loop), directives naming x use y instead;
 *   deterministic()    no atomics and nothing reordered between runs:
 *                      lowering makes reductions over neighbour groups a
 *                      segmented reduction (segment.c), and the conflict
 *                      analysis refuses a schedule that still needs them;
 *   transpose()        the operator with sources and destinations
 *                      exchanged, run on the reversed graph (transpose.c):
 *                      first, before any directive changes a loop.
 *
 * This is what lets one named schedule serve operators with and without a
 * feature loop (docs/scheduling.md). A whole schedule is accepted only when
 * the result lowers (pipeline.c), so that a refusal comes with the schedule
 * that caused it.
 */
#include <inttypes.h>
#include <string.h>

#include "lang/lang.h"
#include "passes/passes.h"

enum { MAX_ARGS = 16, MAX_NAMES = 64 };

/* A directive with its arguments evaluated. */
typedef struct Args {
  const IrDirective *dir;
  int n;
  const char *name[MAX_ARGS]; /* a name argument, else NULL */
  int64_t value[MAX_ARGS];    /* an integer argument */
  const char *res[2];         /* the names given with `->`, or NULL */
} Args;

typedef struct Prim {
  const char *name;
  const char *usage;
  /* per argument: l a loop, k a keyword, i an integer; a last L means
   * every argument is a loop. Arguments past `min` are optional. */
  const char *kinds;
  int min, max, maxres;
  int (*apply)(IrOp *op, const Args *x, Arena *a, Diag *d);
} Prim;

static int do_split(IrOp *op, const Args *x, Arena *a, Diag *d) {
  return pass_split(op, x->name[0], x->value[1], x->res[0], x->res[1],
                    x->dir->loc, a, d);
}

static int do_reorder(IrOp *op, const Args *x, Arena *a, Diag *d) {
  return pass_reorder(op, x->name, x->n, x->dir->loc, a, d);
}

static int do_fuse(IrOp *op, const Args *x, Arena *a, Diag *d) {
  return pass_fuse(op, x->name[0], x->name[1], x->res[0], x->dir->loc, a, d);
}

static int do_bind(IrOp *op, const Args *x, Arena *a, Diag *d) {
  int b = ir_bind_lookup(x->name[1]);
  if (b <= IR_BIND_NONE) {
    ir_error(d, x->dir->loc, "bind: unknown level '%s'; expected block, warp, "
             "lane or thread", x->name[1]);
    return -1;
  }
  int64_t t = x->n > 2 ? x->value[2] : 0;
  int threads = t > 4096 ? 4096 : t < -1 ? -1 : (int)t; /* bind refuses these */
  return pass_bind(op, x->name[0], (IrBind)b, threads, x->dir->loc, a, d);
}

static int do_group(IrOp *op, const Args *x, Arena *a, Diag *d) {
  return pass_group(op, x->name[0], x->value[1], x->res[0], x->res[1],
                    x->dir->loc, a, d);
}

static int do_tile(IrOp *op, const Args *x, Arena *a, Diag *d) {
  return pass_tile(op, x->name[0], x->value[1], x->res[0], x->res[1],
                   x->dir->loc, a, d);
}

static int do_unroll(IrOp *op, const Args *x, Arena *a, Diag *d) {
  return pass_unroll(op, x->name[0], x->value[1], x->dir->loc, a, d);
}

static int do_team(IrOp *op, const Args *x, Arena *a, Diag *d) {
  return pass_team(op, x->name[0], x->value[1], x->dir->loc, a, d);
}

static int do_panel(IrOp *op, const Args *x, Arena *a, Diag *d) {
  return pass_panel(op, x->name[0], x->value[1], x->dir->loc, a, d);
}

static int do_occupancy(IrOp *op, const Args *x, Arena *a, Diag *d) {
  return pass_occupancy(op, x->name[0], x->value[1], x->dir->loc, a, d);
}

static int do_prefetch(IrOp *op, const Args *x, Arena *a, Diag *d) {
  return pass_prefetch(op, x->name[0], x->dir->loc, a, d);
}

static int do_vectorize(IrOp *op, const Args *x, Arena *a, Diag *d) {
  return pass_vectorize(op, x->name[0], x->value[1], x->dir->loc, a, d);
}

static int do_promote(IrOp *op, const Args *x, Arena *a, Diag *d) {
  return pass_promote(op, x->name[0], x->name[1], x->dir->loc, a, d);
}

static int do_fission(IrOp *op, const Args *x, Arena *a, Diag *d) {
  return pass_fission(op, x->name[0], x->dir->loc, a, d);
}

static int do_inline(IrOp *op, const Args *x, Arena *a, Diag *d) {
  return pass_inline(op, x->name[0], x->dir->loc, a, d);
}

static int do_interleave(IrOp *op, const Args *x, Arena *a, Diag *d) {
  return pass_interleave(op, x->name[0], x->value[1], x->value[2],
                         x->n > 3 ? x->value[3] : 0, x->dir->loc, a, d);
}

static const Prim prims[] = {
    {"split", "split(LOOP, FACTOR) -> (OUTER, INNER)", "li", 2, 2, 2, do_split},
    {"reorder", "reorder(LOOP, LOOP, ...)", "L", 2, MAX_ARGS, 0, do_reorder},
    {"fuse", "fuse(OUTER, INNER) -> (FUSED)", "ll", 2, 2, 1, do_fuse},
    {"bind", "bind(LOOP, block|warp|lane|thread [, THREADS_PER_BLOCK])", "lki",
     2, 3, 0, do_bind},
    {"group", "group(LOOP, G) -> (GROUPS, INNER)", "li", 2, 2, 2, do_group},
    {"tile", "tile(LOOP, T) -> (WORKERS, INNER)", "li", 2, 2, 2, do_tile},
    {"unroll", "unroll(LOOP, N)", "li", 2, 2, 0, do_unroll},
    {"team", "team(WARP_LOOP, LANES)", "li", 2, 2, 0, do_team},
    {"panel", "panel(GROUPS_LOOP, P)", "li", 2, 2, 0, do_panel},
    {"prefetch", "prefetch(EDGE_LOOP)", "l", 1, 1, 0, do_prefetch},
    {"vectorize", "vectorize(LOOP, 2|4|8)", "li", 2, 2, 0, do_vectorize},
    {"promote", "promote(LOOP|TENSOR, register|shared)", "lk", 2, 2, 0, do_promote},
    {"interleave", "interleave(LOOP, CLASSES, DISTANCE [, THRESHOLD])", "liii",
     3, 4, 0, do_interleave},
    {"occupancy", "occupancy(LOOP, THREADS_PER_SM)", "li", 2, 2, 0, do_occupancy},
    {"fission", "fission(TENSOR)", "t", 1, 1, 0, do_fission},
    {"inline", "inline(TENSOR)", "t", 1, 1, 0, do_inline},
};
enum { NPRIMS = sizeof prims / sizeof prims[0] };

static const Prim *find_prim(const char *name) {
  for (int i = 0; i < NPRIMS; i++)
    if (strcmp(prims[i].name, name) == 0) return &prims[i];
  return NULL;
}

/* The schedule-level directives (they act on the directives after them). */
static const char *const sched_directives[] = {"optional", "fallback", "deterministic",
                                               "stages", "fuse_stages", "transpose"};

const char *pass_directive_name(int i) {
  if (i < 0) return NULL;
  if (i < NPRIMS) return prims[i].name;
  i -= NPRIMS;
  return i < (int)(sizeof sched_directives / sizeof *sched_directives) ? sched_directives[i]
                                                                        : NULL;
}

static bool is_sched_directive(const char *name) {
  for (size_t i = 0; i < sizeof sched_directives / sizeof *sched_directives; i++)
    if (strcmp(name, sched_directives[i]) == 0) return true;
  return false;
}

static char kind_at(const Prim *p, int i) {
  size_t n = strlen(p->kinds);
  if (p->kinds[n - 1] == 'L') return 'l';
  return i < (int)n ? p->kinds[i] : 'i';
}

/* ---- arguments ---- */

static bool eval(const IrNode *e, const int64_t *params, int nparams,
                 int64_t *out, Loc loc, Diag *d) {
  int64_t x, y;
  switch (e->kind) {
  case IR_ICONST: *out = e->i; return true;
  case IR_VAR:
    if (!params || e->var->id < 0 || e->var->id >= nparams) {
      ir_error(d, loc, "schedule parameter '%s' has no value here", e->var->name);
      return false;
    }
    *out = params[e->var->id];
    return true;
  case IR_UN:
    if (!eval(e->un.a, params, nparams, &x, loc, d)) return false;
    if (__builtin_sub_overflow((int64_t)0, x, out)) goto overflow;
    return true;
  case IR_BIN:
    if (!eval(e->bin.a, params, nparams, &x, loc, d) ||
        !eval(e->bin.b, params, nparams, &y, loc, d))
      return false;
    switch (e->bin.op) {
    case IR_OP_ADD: if (__builtin_add_overflow(x, y, out)) goto overflow; return true;
    case IR_OP_SUB: if (__builtin_sub_overflow(x, y, out)) goto overflow; return true;
    case IR_OP_MUL: if (__builtin_mul_overflow(x, y, out)) goto overflow; return true;
    case IR_OP_DIV:
    case IR_OP_MOD:
      if (y == 0) {
        ir_error(d, loc, "division by zero in a directive's argument");
        return false;
      }
      if (x == INT64_MIN && y == -1) goto overflow;
      *out = e->bin.op == IR_OP_DIV ? x / y : x % y;
      return true;
    default: break;
    }
    break;
  default: break;
  }
  ir_error(d, loc, "a directive's argument must be an integer expression");
  return false;
overflow: /* found by tests/fuzz/fuzz_schedule (issue 17) */
  ir_error(d, loc, "a directive's argument overflows 64-bit integers");
  return false;
}

/* Checks the directive against its primitive and evaluates it. */
static bool prepare(const Prim *p, const IrDirective *dir, const int64_t *params,
                    int nparams, Args *x, Diag *d) {
  memset(x, 0, sizeof *x);
  x->dir = dir;
  if (dir->nargs < p->min || dir->nargs > p->max) {
    ir_error(d, dir->loc, "%s takes %s%d argument%s, not %d: %s", p->name,
             p->min == p->max ? "" : "at least ", p->min, p->min == 1 ? "" : "s",
             dir->nargs, p->usage);
    return false;
  }
  if (dir->nresults > p->maxres) {
    if (p->maxres == 0)
      ir_error(d, dir->loc, "%s makes no new loops to name with `->`: %s",
               p->name, p->usage);
    else
      ir_error(d, dir->loc, "%s makes %d loop%s, not %d: %s", p->name, p->maxres,
               p->maxres == 1 ? "" : "s", dir->nresults, p->usage);
    return false;
  }
  if (dir->nresults > 0 && dir->nresults < p->maxres) {
    ir_error(d, dir->loc, "%s makes %d loops: name all of them or none: %s",
             p->name, p->maxres, p->usage);
    return false;
  }
  x->n = dir->nargs;
  for (int i = 0; i < dir->nargs; i++) {
    const IrSchedArg *arg = &dir->args[i];
    char k = kind_at(p, i);
    if (k == 'i') {
      if (arg->name) {
        ir_error(d, arg->loc, "%s: argument %d must be an integer, not the name "
                 "'%s': %s", p->name, i + 1, arg->name, p->usage);
        return false;
      }
      if (!eval(arg->expr, params, nparams, &x->value[i], arg->loc, d)) return false;
    } else {
      if (!arg->name) {
        const char *what = k == 'l' ? "loop" : k == 't' ? "tensor" : "keyword";
        ir_error(d, arg->loc, "%s: argument %d must be a %s name, not a number: %s",
                 p->name, i + 1, what, p->usage);
        return false;
      }
      x->name[i] = arg->name;
    }
  }
  for (int i = 0; i < dir->nresults; i++) x->res[i] = dir->results[i];
  return true;
}

/* ---- one directive, stage by stage ---- */

static bool stage_has(IrOp *view, const char *name) {
  return pass_find_loops(view, name, NULL, 0) > 0;
}

/* Whether stage k (0-based) is among those `mask` selects (0: all). */
static bool selected(uint64_t mask, int k) {
  return !mask || (k < 64 && (mask >> k & 1));
}

/* Whether a stage that `mask` selects has loop `name`. */
static bool stages_have(IrOp *op, uint64_t mask, const char *name) {
  if (!mask) return stage_has(op, name);
  int k = 0;
  for (IrNode *s = op->body; s; s = s->next, k++) {
    if (!selected(mask, k)) continue;
    IrOp view = *op;
    IrNode *next = s->next;
    s->next = NULL;
    view.body = s;
    bool has = stage_has(&view, name);
    s->next = next;
    if (has) return true;
  }
  return false;
}

/* Whether a stage that `mask` selects stores into the tensor `name`. */
static bool stages_store(const IrOp *op, uint64_t mask, const char *name) {
  const IrTensor *t = ir_op_find_tensor(op, name);
  int k = 0;
  for (const IrNode *s = op->body; s && t; s = s->next, k++)
    if (selected(mask, k) && pass_stage_stores(s, t)) return true;
  return false;
}

static int apply_stages(IrOp *op, const Prim *p, const Args *x, uint64_t mask, Arena *a,
                        Diag *d) {
  const char *loops[MAX_ARGS];
  int nl = 0;
  for (int i = 0; i < x->n; i++)
    if (kind_at(p, i) == 'l') loops[nl++] = x->name[i];
  /* promote(TENSOR, shared) stages an input of the whole operator */
  if (p->apply == do_promote && ir_op_find_tensor(op, x->name[0]))
    return p->apply(op, x, a, d);
  IrOp *c = pass_op_copy(op, a);
  IrNode *stages = c->body, *out = NULL;
  bool any = false, on_tensor = kind_at(p, 0) == 't';
  for (int k = 0; stages; k++) {
    IrNode *s = stages;
    stages = s->next;
    s->next = NULL;
    if (!selected(mask, k)) { /* stages(...) left it out */
      ir_append(&out, s);
      continue;
    }
    IrOp view = *c;
    view.body = s;
    if (on_tensor) { /* fission, inline: the stages storing into a tensor */
      int rc = p->apply(&view, x, a, d);
      if (rc < 0) return -1;
      any |= rc == 0;
      ir_append(&out, view.body);
      view.body = NULL;
      *c = view;
      continue;
    }
    /* a stage with any of the loops; fuse's two loops must both be there
     * (fuse(h, f) in GAT's third stage leaves the stages without h alone) */
    bool here = false, all = true;
    for (int i = 0; i < nl; i++) {
      bool has = stage_has(&view, loops[i]);
      here |= has;
      all &= has;
    }
    if (p->apply == do_fuse && nl == 2) here = all;
    if (here) {
      int rc = p->apply(&view, x, a, d);
      if (rc < 0) return -1;
      any |= rc == 0; /* 1: nothing to do in this stage (promote) */
      s = view.body;
      view.body = NULL;
      *c = view;
    }
    ir_append(&out, s);
  }
  if (!any && on_tensor) {
    /* (a tensor the op does not have is refused at its first stage) */
    if (p->apply == do_inline && stages_store(op, mask, x->name[0]))
      ir_error(d, x->dir->loc, "inline: the stores into '%s' read no local that its "
               "expression could replace (one assigned once, reading nothing the stage "
               "changes)", x->name[0]);
    else
      ir_error(d, x->dir->loc, "%s: no stage %sof operator %s stores into '%s'", p->name,
               mask ? "that stages(...) selected " : "", op->name, x->name[0]);
    return -1;
  }
  if (!any) {
    bool exists = false;
    for (int i = 0; i < nl; i++) exists |= stages_have(op, mask, loops[i]);
    const char *missing = loops[0];
    if (p->apply == do_fuse && nl == 2) /* fuse's loops: name the one missing */
      for (int i = 0; i < 2; i++)
        if (!stages_have(op, mask, loops[i])) exists = false, missing = loops[i];
    if (!exists && mask && stage_has(op, missing))
      ir_error(d, x->dir->loc, "%s: loop '%s' is in no stage that stages(...) selected "
               "in operator %s", p->name, missing, op->name);
    else if (!exists)
      ir_error(d, x->dir->loc, "%s: loop '%s' does not exist in operator %s "
               "(loops: %s)", p->name, missing, op->name, pass_loop_names(op, a));
    else if (p->apply == do_fuse)
      ir_error(d, x->dir->loc, "fuse: no stage of operator %s has both loop '%s' "
               "and loop '%s' (loops: %s)", op->name, loops[0], loops[1],
               pass_loop_names(op, a));
    else if (x->n > 1 && x->name[1] && strcmp(x->name[1], "shared") == 0)
      ir_error(d, x->dir->loc, "promote(%s, shared): loop '%s' holds no "
               "reduction into the destination of its neighbour groups",
               loops[0], loops[0]);
    else /* every stage declined: only promote does */
      ir_error(d, x->dir->loc, "%s: loop '%s' holds no reduction whose element "
               "stays the same across its iterations", p->name, loops[0]);
    return -1;
  }
  c->body = out;
  *op = *c;
  return 0;
}

int pass_apply_directive(IrOp *op, const IrDirective *dir,
                         const int64_t *param_values, Arena *a, Diag *d) {
  const Prim *p = find_prim(dir->prim);
  if (!p) {
    if (is_sched_directive(dir->prim))
      ir_error(d, dir->loc, "'%s' belongs in a schedule (it acts on the "
               "directives after it), not alone", dir->prim);
    else {
      const char *all = "";
      for (int i = 0; i < NPRIMS; i++)
        all = ir_sprintf(a, "%s%s%s", all, i ? ", " : "", prims[i].name);
      ir_error(d, dir->loc, "unknown primitive '%s' (primitives: %s)", dir->prim, all);
    }
    return -1;
  }
  Args x;
  int nparams = param_values ? MAX_ARGS : 0;
  if (!prepare(p, dir, param_values, nparams, &x, d)) return -1;
  return apply_stages(op, p, &x, 0, a, d);
}

/* ---- schedules: optional loops and fallbacks ---- */

typedef struct State {
  const char *absent[MAX_NAMES];
  int nabsent;
  const char *from[MAX_NAMES], *to[MAX_NAMES];
  int nfallback;
  uint64_t stages; /* stages(...): bit k for stage k + 1; 0: every stage */
} State;

static bool is_absent(const State *st, const char *name) {
  for (int i = 0; i < st->nabsent; i++)
    if (strcmp(st->absent[i], name) == 0) return true;
  return false;
}

static void mark_absent(State *st, const char *name) {
  if (!is_absent(st, name) && st->nabsent < MAX_NAMES) st->absent[st->nabsent++] = name;
}

/* The loop a name stands for: itself, its fallback when it is absent, or
 * NULL when absent with no fallback. */
static const char *resolve(const State *st, const char *name) {
  for (int hops = 0; hops < MAX_NAMES && is_absent(st, name); hops++) {
    const char *next = NULL;
    for (int i = 0; i < st->nfallback; i++)
      if (strcmp(st->from[i], name) == 0) next = st->to[i];
    if (!next) return NULL;
    name = next;
  }
  return is_absent(st, name) ? NULL : name;
}

/* Renames every loop called `from` to `to` (a fuse with a missing partner). */
static int rename_loops(IrOp *op, const char *from, const char *to, Loc loc,
                        Arena *a, Diag *d) {
  if (strcmp(from, to) == 0) return 0;
  if (!pass_check_new_name(op, "fuse", to, "fused loop", from, loc, d)) return -1;
  PassSite sites[64];
  int n = pass_find_loops(op, from, sites, 64);
  for (int i = 0; i < n && i < 64; i++) {
    IrNode *l = sites[i].node;
    IrVar *v = pass_new_var(op, a, to, l->loop.var->kind, l->loc);
    pass_subst_stmts(a, l->loop.body, l->loop.var, ir_var(a, l->loc, v));
    l->loop.var = v;
  }
  return 0;
}

/* The names of the loops a skipped directive would have made. */
static void absent_results(State *st, const Prim *p, const Args *x, Arena *a) {
  if (p->maxres == 0) return;
  const char *base = x->name[0];
  if (strcmp(p->name, "fuse") == 0) {
    mark_absent(st, x->res[0] ? x->res[0]
                              : ir_sprintf(a, "%s%s", x->name[0], x->name[1]));
    return;
  }
  const char *o = strcmp(p->name, "tile") == 0 ? "t" : "o";
  const char *i = strcmp(p->name, "tile") == 0 ? "s" : "i";
  mark_absent(st, x->res[0] ? x->res[0] : ir_sprintf(a, "%s%s", base, o));
  mark_absent(st, x->res[1] ? x->res[1] : ir_sprintf(a, "%s%s", base, i));
}

/* The stage numbers a directive names (1 is the first), as a mask. */
static bool stage_mask(const IrOp *op, const IrDirective *dir, const int64_t *params,
                       int nparams, uint64_t *mask, Diag *d) {
  int n = 0;
  for (const IrNode *s = op->body; s; s = s->next) n++;
  *mask = 0;
  for (int i = 0; i < dir->nargs; i++) {
    int64_t k;
    if (dir->args[i].name) {
      ir_error(d, dir->args[i].loc, "%s takes stage numbers (1 is the first), not the "
               "name '%s'", dir->prim, dir->args[i].name);
      return false;
    }
    if (!eval(dir->args[i].expr, params, nparams, &k, dir->args[i].loc, d)) return false;
    if (k < 1 || k > n || k > 64) {
      ir_error(d, dir->args[i].loc, "%s: operator %s has %d stage%s; there is no stage "
               "%" PRId64, dir->prim, op->name, n, n == 1 ? "" : "s", k);
      return false;
    }
    *mask |= (uint64_t)1 << (k - 1);
  }
  return true;
}

/* stages(k, ...): the directives after it apply to stages k ... only (1 is
 * the first, in the order gopc emit prints them); stages() to all again. */
static int select_stages(IrOp *op, const IrDirective *dir, const int64_t *params, int nparams,
                         State *st, Diag *d) {
  return stage_mask(op, dir, params, nparams, &st->stages, d) ? 0 : -1;
}

/* fuse_stages(k, ...): the stages named, or with no arguments the stages
 * selected (every stage when none is), in one; the selection is then
 * every stage again, numbered anew. */
static int fuse_stages(IrOp *op, const IrDirective *dir, const int64_t *params, int nparams,
                       State *st, Arena *a, Diag *d) {
  uint64_t mask = st->stages ? st->stages : ~(uint64_t)0;
  if (dir->nargs > 0 && !stage_mask(op, dir, params, nparams, &mask, d)) return -1;
  if (pass_fuse_stages(op, mask, dir->loc, a, d) != 0) return -1;
  st->stages = 0;
  return 0;
}

static int run_directive(IrOp *op, const IrDirective *dir, const int64_t *params,
                         int nparams, State *st, Arena *a, Diag *d) {
  if (strcmp(dir->prim, "optional") == 0 || strcmp(dir->prim, "fallback") == 0) {
    bool fb = dir->prim[0] == 'f';
    if ((fb && dir->nargs != 2) || (!fb && dir->nargs < 1)) {
      ir_error(d, dir->loc, fb ? "fallback takes two loop names: fallback(LOOP, "
                                 "INSTEAD)"
                               : "optional takes loop names: optional(LOOP, ...)");
      return -1;
    }
    for (int i = 0; i < dir->nargs; i++)
      if (!dir->args[i].name) {
        ir_error(d, dir->args[i].loc, "%s takes loop names, not numbers", dir->prim);
        return -1;
      }
    if (fb) {
      if (st->nfallback < MAX_NAMES) {
        st->from[st->nfallback] = dir->args[0].name;
        st->to[st->nfallback++] = dir->args[1].name;
      }
      return 0;
    }
    for (int i = 0; i < dir->nargs; i++)
      if (!stages_have(op, st->stages, dir->args[i].name)) mark_absent(st, dir->args[i].name);
    return 0;
  }
  if (strcmp(dir->prim, "stages") == 0) return select_stages(op, dir, params, nparams, st, d);
  if (strcmp(dir->prim, "fuse_stages") == 0)
    return fuse_stages(op, dir, params, nparams, st, a, d);
  if (strcmp(dir->prim, "deterministic") == 0) {
    if (dir->nargs != 0) {
      ir_error(d, dir->loc, "deterministic takes no arguments");
      return -1;
    }
    op->deterministic = true;
    return 0;
  }
  if (strcmp(dir->prim, "transpose") == 0) {
    if (dir->nargs != 0) {
      ir_error(d, dir->loc, "transpose takes no arguments");
      return -1;
    }
    return pass_transpose(op, dir->loc, a, d);
  }
  const Prim *p = find_prim(dir->prim);
  if (!p) return pass_apply_directive(op, dir, params, a, d); /* reports */
  Args x;
  if (!prepare(p, dir, params, nparams, &x, d)) return -1;

  /* Missing optional loops: drop them, or skip the directive. */
  int kept = 0, missing = 0;
  const char *present = NULL;
  Args y = x;
  y.n = 0;
  for (int i = 0; i < x.n; i++) {
    if (kind_at(p, i) != 'l') {
      y.name[y.n] = x.name[i];
      y.value[y.n++] = x.value[i];
      continue;
    }
    const char *r = resolve(st, x.name[i]);
    if (!r) {
      missing++;
      continue;
    }
    bool dup = false; /* a fallback may name a loop already in the list */
    for (int j = 0; j < y.n && r != x.name[i]; j++)
      dup |= y.name[j] && strcmp(y.name[j], r) == 0;
    if (dup) continue;
    present = r;
    kept++;
    y.name[y.n] = r;
    y.value[y.n++] = x.value[i];
  }
  if (missing == 0) return apply_stages(op, p, &y, st->stages, a, d);
  if (strcmp(p->name, "reorder") == 0)
    return kept >= 2 ? apply_stages(op, p, &y, st->stages, a, d) : 0;
  if (strcmp(p->name, "fuse") == 0 && kept == 1) {
    if (!x.res[0]) return 0;
    return rename_loops(op, present, x.res[0], dir->loc, a, d);
  }
  absent_results(st, p, &x, a);
  return 0;
}

static const char *arg_list(Arena *a, const int64_t *args, int n) {
  const char *s = "";
  for (int i = 0; i < n; i++)
    s = ir_sprintf(a, "%s%s%" PRId64, s, i ? ", " : "", args[i]);
  return s;
}

/* ---- how far a schedule may grow the operator ---- */

static int nest_depth(const IrNode *list) {
  int best = 0;
  for (const IrNode *s = list; s; s = s->next) {
    const IrNode *inner = s->kind == IR_LOOP ? s->loop.body : s->kind == IR_IF ? s->ifs.then : NULL;
    if (inner) {
      int d = 1 + nest_depth(inner);
      if (d > best) best = d;
    }
  }
  return best;
}

/* The most iterations any path through `list` makes of loops with constant
 * extents (a split's inner loop, a group's lanes ...), saturating. */
static int64_t const_trips(const IrNode *list) {
  int64_t best = 1;
  for (const IrNode *s = list; s; s = s->next) {
    int64_t t = 1;
    if (s->kind == IR_LOOP) {
      t = const_trips(s->loop.body);
      if (s->loop.extent && s->loop.extent->kind == IR_ICONST && s->loop.extent->i > 1 &&
          __builtin_mul_overflow(t, s->loop.extent->i, &t))
        t = INT64_MAX;
    } else if (s->kind == IR_IF) {
      t = const_trips(s->ifs.then);
    }
    if (t > best) best = t;
  }
  return best;
}

static bool count_node(const IrNode *n, void *ctx) {
  (void)n;
  int64_t *left = ctx;
  return --*left < 0; /* stop the walk once over */
}

/* Refuses the directive just applied if it made the nest deeper than the
 * primitives and the lowering can see (PASS_MAX_DEPTH loops and guards,
 * which lowering would refuse anyway) or the operator larger than
 * GOP_MAX_IR_NODES, and the schedule if it applies more directives than
 * GOP_MAX_DIRECTIVES. Each directive works on a copy of the whole
 * operator, and a split adds a guard holding the whole index relation, so
 * without these bounds 2,000 `split(f, 2) -> (f, qN)` cost cubic time and
 * memory (issue 17), and split/fuse pairs double every index expression. */
static int check_growth(const IrOp *op, const IrDirective *dir, int *applied, Arena *a,
                        Diag *d) {
  if (!ir_limit_check(IR_LIMIT_DIRECTIVES, ++*applied, d, dir->loc,
                      "the schedule applies too many directives"))
    return -1;
  int depth = nest_depth(op->body);
  if (depth > PASS_MAX_DEPTH) {
    ir_error(d, dir->loc, "%s: the loop nest becomes %d loops and guards deep, more than the "
             "%d a schedule may make", dir->prim, depth, PASS_MAX_DEPTH);
    return -1;
  }
  /* Loops of constant extent multiply: a split by 2^63-1 made extents
   * that overflow and loops that never end, silently (found by
   * tests/fuzz/fuzz_schedule, issue 17). The default, 2^24, the largest
   * extent, is far above what a mapping needs (lanes x vector x unroll). */
  if (!ir_limit_check(IR_LIMIT_LOOP_TRIPS, const_trips(op->body), d, dir->loc,
                      ir_sprintf(a, "%s: loops of constant extent would run over and over "
                                 "for each iteration of the loops around them", dir->prim)))
    return -1;
  int64_t limit = ir_limit(IR_LIMIT_IR_NODES), left = limit;
  bool over = ir_any(op->body, count_node, &left);
  if (!ir_limit_check(IR_LIMIT_IR_NODES, over ? -1 : limit - left, d, dir->loc,
                      ir_sprintf(a, "%s: the scheduled operator grows too large", dir->prim)))
    return -1;
  return 0;
}

/* How deep named schedules may call named schedules: far more than any
 * composition needs; a schedule that calls itself is refused before. */
enum { MAX_CALL_DEPTH = 16 };

/* The named schedules being applied, outermost first (a schedule calling
 * itself, directly or not, is refused). */
typedef struct Calls {
  const IrSchedDef *s[MAX_CALL_DEPTH];
  int n;
  const IrModule *lib; /* the library a schedule text was applied with, or NULL */
} Calls;

static int run_schedule(IrOp *op, const IrSchedDef *s, const int64_t *args,
                        int nargs, uint64_t stages, Loc call, int *applied,
                        Calls *calls, Arena *a, Diag *d);

/* The named schedule that directive `dir` calls, looked up in `mod` (the
 * module of the schedule it belongs to), then in the library of the whole
 * application; NULL when it names a primitive or nothing they define. */
static const IrSchedDef *called_schedule(const IrModule *mod, const Calls *calls,
                                         const IrDirective *dir) {
  if (find_prim(dir->prim) || is_sched_directive(dir->prim)) return NULL;
  const IrSchedDef *s = mod ? ir_module_find_sched(mod, dir->prim) : NULL;
  return s ? s : calls->lib ? ir_module_find_sched(calls->lib, dir->prim) : NULL;
}

/* Applies the named schedule `named` that directive `dir` calls, its
 * arguments evaluated with the caller's parameter values `params`, to the
 * stages selected so far. */
static int call_schedule(IrOp *op, const IrSchedDef *named, const IrDirective *dir,
                         const int64_t *params, int nparams, uint64_t stages,
                         int *applied, Calls *calls, Arena *a, Diag *d) {
  int64_t args[MAX_ARGS];
  if (dir->nresults > 0) {
    ir_error(d, dir->loc, "schedule %s makes no loops to name with `->`", named->name);
    return -1;
  }
  if (dir->nargs > MAX_ARGS) {
    ir_error(d, dir->loc, "schedule %s takes at most %d arguments", named->name, MAX_ARGS);
    return -1;
  }
  for (int i = 0; i < dir->nargs; i++) {
    if (dir->args[i].name) {
      ir_error(d, dir->args[i].loc, "schedule %s takes integers, not the name "
               "'%s'", named->name, dir->args[i].name);
      return -1;
    }
    if (!eval(dir->args[i].expr, params, nparams, &args[i], dir->args[i].loc, d))
      return -1;
  }
  for (int i = 0; i < calls->n; i++)
    if (calls->s[i] == named) {
      ir_error(d, dir->loc, "schedule %s calls itself%s%s: a schedule may call "
               "other named schedules, not itself", named->name,
               i + 1 < calls->n ? " through " : "",
               i + 1 < calls->n ? calls->s[i + 1]->name : "");
      return -1;
    }
  if (calls->n == MAX_CALL_DEPTH) {
    ir_error(d, dir->loc, "schedule %s: named schedules call each other more than %d "
             "deep", named->name, MAX_CALL_DEPTH);
    return -1;
  }
  return run_schedule(op, named, args, dir->nargs, stages, dir->loc, applied, calls, a, d);
}

/* Applies `s` to `op` in place (the caller holds a copy). Its directives
 * may call the named schedules of the module that defines it; a call
 * inherits the stages selected so far. */
static int run_schedule(IrOp *op, const IrSchedDef *s, const int64_t *args,
                        int nargs, uint64_t stages, Loc call, int *applied,
                        Calls *calls, Arena *a, Diag *d) {
  if (nargs != s->nparams) {
    const char *ps = "";
    for (int i = 0; i < s->nparams; i++)
      ps = ir_sprintf(a, "%s%s%s", ps, i ? ", " : "", s->params[i]->name);
    ir_error(d, call, "schedule %s takes %d argument%s (%s), not %d", s->name,
             s->nparams, s->nparams == 1 ? "" : "s", ps, nargs);
    return -1;
  }
  State st = {.stages = stages}; /* a named schedule called after stages(...) */
  calls->s[calls->n++] = s;
  int rc = 0;
  for (const IrDirective *dir = s->directives; dir && rc == 0; dir = dir->next) {
    const IrSchedDef *named = called_schedule(s->module, calls, dir);
    rc = named ? call_schedule(op, named, dir, args, nargs, st.stages, applied, calls, a, d)
               : run_directive(op, dir, args, nargs, &st, a, d) != 0 ||
                         check_growth(op, dir, applied, a, d) != 0
                     ? -1
                     : 0;
  }
  calls->n--;
  if (rc != 0)
    ir_note(d, call, "in schedule %s(%s) applied to operator %s", s->name,
            arg_list(a, args, nargs), op->name);
  return rc;
}

/* A schedule is taken only if its result lowers: the refusal then comes
 * with the schedule that caused it. */
static int check_lowers(const IrOp *op, Loc call, const char *what, Arena *a,
                        Diag *d) {
  IrOp *trial = pass_op_copy(op, a);
  if (pass_lower(trial, a, d, NULL, NULL) == 0) return 0;
  ir_note(d, call, "the schedule %s on operator %s cannot be lowered", what,
          op->name);
  return -1;
}

int pass_schedule(IrOp *op, const IrSchedDef *s, const int64_t *args,
                  int nargs, Arena *a, Diag *d) {
  IrOp *c = pass_op_copy(op, a);
  int applied = 0;
  Calls calls = {.n = 0};
  if (run_schedule(c, s, args, nargs, 0, s->loc, &applied, &calls, a, d) != 0) return -1;
  const char *what = ir_sprintf(a, "%s(%s)", s->name, arg_list(a, args, nargs));
  if (check_lowers(c, s->loc, what, a, d) != 0) return -1;
  *op = *c;
  return 0;
}

/* ---- schedules given as text ---- */

/* Shifts the locations of the wrapped text back to the user's. */
static void relocate(Loc *loc, const char *file) {
  loc->file = file;
  if (loc->line > 1) loc->line--;
}

int pass_schedule_text(IrOp *op, const IrModule *lib, const char *text,
                       Arena *a, Diag *d) {
  /* The text is read by the .gop grammar as the body of a schedule. */
  const char *file = "<schedule>";
  /* A bare name calls a schedule with no parameters: `gas` is `gas()`. */
  size_t n = strspn(text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789");
  if (n > 0 && text[n + strspn(text + n, " \t\n")] == '\0')
    text = ir_sprintf(a, "%.*s()", (int)n, text);
  const char *wrapped = ir_sprintf(a, "schedule __text() {\n%s\n}\n", text);
  IrModule *m = ir_module_new(a);
  if (!lang_compile_into(m, d, "<schedule text>", wrapped, false)) return -1;
  ir_diag_source(d, file, ir_strdup(a, text));
  IrSchedDef *s = m->scheds[0];
  for (IrDirective *dir = s->directives; dir; dir = dir->next) {
    relocate(&dir->loc, file);
    for (int i = 0; i < dir->nargs; i++) relocate(&dir->args[i].loc, file);
  }
  IrOp *c = pass_op_copy(op, a);
  State st = {0};
  int applied = 0;
  Calls calls = {.n = 0, .lib = lib};
  for (const IrDirective *dir = s->directives; dir; dir = dir->next) {
    const IrSchedDef *named = called_schedule(NULL, &calls, dir);
    if (named ? call_schedule(c, named, dir, NULL, 0, st.stages, &applied, &calls, a, d) != 0
              : run_directive(c, dir, NULL, 0, &st, a, d) != 0 ||
                    check_growth(c, dir, &applied, a, d) != 0)
      return -1;
  }
  if (check_lowers(c, s->directives ? s->directives->loc : (Loc){file, 1, 1},
                   ir_sprintf(a, "'%s'", text), a, d) != 0)
    return -1;
  *op = *c;
  return 0;
}

/* ---- the default schedule ---- */

static bool has_binding(const IrNode *list) {
  for (const IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_LOOP && (s->loop.bind != IR_BIND_NONE || has_binding(s->loop.body)))
      return true;
    if (s->kind == IR_IF && has_binding(s->ifs.then)) return true;
  }
  return false;
}

bool pass_stage_bound(const IrNode *stage) {
  return stage->kind == IR_LOOP && (stage->loop.bind != IR_BIND_NONE ||
                                    has_binding(stage->loop.body));
}

/* The innermost range loop under `list` holding no loop, or NULL. */
static IrNode *innermost_range(IrNode *list) {
  IrNode *best = NULL;
  for (IrNode *s = list; s; s = s->next) {
    IrNode *inner = s->kind == IR_LOOP ? innermost_range(s->loop.body)
                    : s->kind == IR_IF ? innermost_range(s->ifs.then)
                                       : NULL;
    if (inner) best = inner;
    else if (s->kind == IR_LOOP && s->loop.kind == IR_LOOP_RANGE) best = s;
  }
  return best;
}

/* Whether every store under `list` is inside the loop `lane`. */
static bool stores_inside(const IrNode *list, const IrNode *lane, bool in) {
  for (const IrNode *s = list; s; s = s->next) {
    if (s->kind == IR_STORE && !in) return false;
    bool now = in || s == lane;
    if (s->kind == IR_LOOP && !stores_inside(s->loop.body, lane, now)) return false;
    if (s->kind == IR_IF && !stores_inside(s->ifs.then, lane, now)) return false;
  }
  return true;
}

/* A warp per iteration of the stage's loop, lanes over its innermost
 * feature loop; 0 if that worked on `view`. Reports nothing. */
static int warp_plan(IrOp *view, Arena *a) {
  IrNode *top = view->body;
  IrNode *f = innermost_range(top->loop.body);
  if (!f) return -1;
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  Loc loc = top->loc;
  const char *fo = pass_fresh_name(view, a, ir_sprintf(a, "%so", f->loop.var->name));
  const char *fl = pass_fresh_name(view, a, ir_sprintf(a, "%sl", f->loop.var->name));
  int rc = pass_split(view, f->loop.var->name, 32, fo, fl, loc, a, &quiet);
  if (rc == 0) rc = pass_bind(view, top->loop.var->name, IR_BIND_WARP, 0, loc, a, &quiet);
  if (rc == 0) rc = pass_bind(view, fl, IR_BIND_LANE, 0, loc, a, &quiet);
  PassSite lane;
  if (rc == 0 && (pass_find_loops(view, fl, &lane, 1) != 1 ||
                  !stores_inside(view->body, lane.node, false)))
    rc = -1;
  ir_diag_free(&quiet);
  return rc;
}

int pass_default_schedule(IrOp *op, Arena *a, Diag *d) {
  IrOp *c = pass_op_copy(op, a);
  IrNode *stages = c->body, *out = NULL;
  while (stages) {
    IrNode *s = stages;
    stages = s->next;
    s->next = NULL;
    if (s->kind == IR_LOOP && !has_binding(s)) {
      IrOp view = *c;
      view.body = s;
      IrOp *trial = pass_op_copy(&view, a);
      if (warp_plan(trial, a) == 0) {
        view = *trial;
      } else if (pass_bind(&view, s->loop.var->name, IR_BIND_THREAD, 0, s->loc, a,
                           d) != 0) {
        return -1;
      }
      s = view.body;
      view.body = NULL;
      *c = view;
    }
    ir_append(&out, s);
  }
  c->body = out;
  if (check_lowers(c, op->loc, "chosen by default", a, d) != 0) return -1;
  *op = *c;
  return 0;
}
