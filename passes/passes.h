/* passes/passes.h: scheduling primitives and lowering passes.
 *
 * The one header of passes/, sectioned by the file that implements each
 * part. A schedule is data (IrSchedDef, IrDirective in ir/ir.h); applying
 * it is a pass over an operator's IR. Each primitive lives in its own file
 * with one entry point, checks legality first, and refuses with a message
 * that names the loop and the rule, changing nothing. Lowering then turns
 * the scheduled IR into the GPU-ready form of docs/gpu-ir.md through a
 * fixed list of passes (pipeline.c). docs/scheduling.md documents every
 * primitive and named schedule with examples.
 *
 * Loop names: a directive names loops by their variables. Operators with
 * several stages often reuse names (every stage of edge_softmax has `v` and
 * `e`); a directive applies to every stage that has the loops it names, and
 * the primitives' own entry points expect a name to be unique in the op they
 * are given (schedule.c hands them one stage at a time).
 *
 * Every function returns 0 on success, or -1 after reporting through `d`;
 * on -1 the operator is unchanged. Everything is allocated in `a`.
 */
#ifndef GOP_PASSES_H
#define GOP_PASSES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ir/ir.h"

/* ---------------------------------------------------------------------------
 * schedule.c: applying schedules.
 */

/* Applies one directive. Integer arguments are evaluated with the values of
 * the schedule's parameters (`param_values`, by parameter id; may be NULL
 * when the directive uses none). Unknown primitive: an error naming it. */
int pass_apply_directive(IrOp *op, const IrDirective *dir,
                         const int64_t *param_values, Arena *a, Diag *d);
/* Applies a named schedule called with `args` (one per parameter). The
 * schedule-level directives `optional(LOOP, ...)`, `fallback(LOOP, OTHER)`
 * and `deterministic()` are understood here (docs/scheduling.md). */
int pass_schedule(IrOp *op, const IrSchedDef *s, const int64_t *args,
                  int nargs, Arena *a, Diag *d);
/* Applies a schedule given as text: a named schedule of `lib` called with
 * integers ("warp_edge(4, 2)"), or a list of directives
 * ("split(f, 32) -> (fo, fi); bind(fi, lane)"), which may call named
 * schedules too. `lib` may be NULL. */
int pass_schedule_text(IrOp *op, const IrModule *lib, const char *text,
                       Arena *a, Diag *d);
/* A sensible GPU mapping for an operator with no schedule: per stage, a
 * warp per iteration of the stage's loop with lanes over the innermost
 * feature loop where that is legal, else a thread per iteration. */
int pass_default_schedule(IrOp *op, Arena *a, Diag *d);
/* Whether loop nest `stage` binds any loop to workers (a stage with none
 * runs as one thread). */
bool pass_stage_bound(const IrNode *stage);
/* The name of schedule directive i (the primitives, then the schedule-level
 * directives: optional, fallback, deterministic, stages), NULL past the
 * last: what a schedule line may start with (the REPL completes them). */
const char *pass_directive_name(int i);

/* ---------------------------------------------------------------------------
 * The primitives, one file each. `loc` is where the directive was written;
 * refusals are reported there. Result names may be NULL for the defaults
 * (docs/scheduling.md).
 */

/* transpose.c: requires an operator whose loops are as written; gives it
 * with sources and destinations exchanged (loops, endpoints, degrees, the
 * rows of vertex tensors) and IrOp.transposed toggled: the same results
 * when run on the reversed graph (graph_transposed), with in-edge loops
 * where it had out-edge loops. */
int pass_transpose(IrOp *op, Loc loc, Arena *a, Diag *d);

/* split.c: requires an unbound range, vertex or flat edge loop;
 * gives `for o in 0..ceil(N/k) { for i in 0..k { if (o*k+i < N) {...} } }`
 * with the loop variable replaced by o*k+i everywhere. */
int pass_split(IrOp *op, const char *loop, int64_t factor, const char *outer,
               const char *inner, Loc loc, Arena *a, Diag *d);
/* reorder.c: requires the loops on one path, perfectly nested between the
 * ones that move; permutes them, keeping guards above what they protect. */
int pass_reorder(IrOp *op, const char *const *loops, int n, Loc loc, Arena *a,
                 Diag *d);
/* fuse.c: `fuse(v, e)` a vertex loop and its edge loop into one flat edge
 * loop (vertex-parallel to edge-parallel), or two directly nested range
 * loops (or a flat edge loop and a range loop) into one range loop. */
int pass_fuse(IrOp *op, const char *outer, const char *inner,
              const char *result, Loc loc, Arena *a, Diag *d);
/* bind.c: maps a loop to block, warp, lane or thread; `threads` (0: leave
 * it) sets the block size of the loop's stage. */
int pass_bind(IrOp *op, const char *loop, IrBind level, int threads, Loc loc,
              Arena *a, Diag *d);
/* group.c: V/E grouping, G consecutive vertices or edges per worker. */
int pass_group(IrOp *op, const char *loop, int64_t g, const char *outer,
               const char *inner, Loc loc, Arena *a, Diag *d);
/* tile.c: feature tiling, a feature loop spread over T workers (GNNAdvisor's
 * dimension workers): `for t in 0..T { for s in 0..ceil(N/T) {
 * if (s*T+t < N) {...} } }`, so that neighbouring workers read neighbouring
 * features. */
int pass_tile(IrOp *op, const char *loop, int64_t t, const char *outer,
              const char *inner, Loc loc, Arena *a, Diag *d);
/* team.c: gives each iteration of a @warp loop T lanes (@team(T)). */
int pass_team(IrOp *op, const char *loop, int64_t lanes, Loc loc, Arena *a, Diag *d);
/* panel.c: panel(g, P) on a neighbour-groups loop; and the lowering pass
 * that sums a panel's destinations in registers (first in pipeline.c). */
int pass_panel(IrOp *op, const char *loop, int64_t p, Loc loc, Arena *a, Diag *d);
int pass_panel_lower(IrOp *op, Arena *a, Diag *d);
/* occupancy.c: marks the stage of a loop @occupancy(N), the threads per SM
 * its kernel asks ptxas to fit (so at most 65536 / N registers a thread). */
int pass_occupancy(IrOp *op, const char *loop, int64_t threads, Loc loc, Arena *a,
                   Diag *d);
/* unroll.c: marks a sequential loop @unroll(n). */
/* fission(T) (passes/fission.c): on an op of one stage, the stores into T
 * (and the locals they read) become a stage of their own before the rest;
 * 1 when the stage does not store into T. */
int pass_fission(IrOp *op, const char *tensor, Loc loc, Arena *a, Diag *d);
/* fuse_stages(k, ...) (passes/fuse_stages.c): the consecutive stages of
 * `mask` (bit k for stage k + 1) in one, their per-vertex temporaries made
 * locals of the fused body. */
int pass_fuse_stages(IrOp *op, uint64_t mask, Loc loc, Arena *a, Diag *d);
/* inline(T) (passes/inline.c): on an op of one stage, the locals assigned
 * once that the stores into T read are replaced by their expressions; 1
 * when the stage does not store into T or reads no such local. */
int pass_inline(IrOp *op, const char *tensor, Loc loc, Arena *a, Diag *d);
/* The same on the stage *stage (its successors untouched): the locals the
 * stores into t read (every local assigned once when t is NULL); returns
 * how many were inlined. */
int pass_inline_locals(IrOp *op, IrNode **stage, const IrTensor *t, Arena *a);
int pass_unroll(IrOp *op, const char *loop, int64_t n, Loc loc, Arena *a,
                Diag *d);
/* prefetch.c: marks an unbound in_edges / out_edges / group_edges loop
 * @prefetch: the lanes of its warp load its per-edge scalars (edge id,
 * endpoint, T[e]) 32 edges at a time, one edge per lane, and broadcast
 * them with warp shuffles (codegen/loop.c). pass_prefetch_check, a
 * lowering pass, refuses a @prefetch loop that is not in a warp with its
 * lanes on a loop around it, whose edges depend on the lane, or whose body
 * reads an edge tensor at more than the edge. */
int pass_prefetch(IrOp *op, const char *loop, Loc loc, Arena *a, Diag *d);
int pass_prefetch_check(IrOp *op, Arena *a, Diag *d);
/* vectorize.c: marks an innermost loop of 2 or 4 iterations, stepping the
 * last index of every access by one, @vec(n): 8- or 16-byte accesses. */
int pass_vectorize(IrOp *op, const char *loop, int64_t width, Loc loc,
                   Arena *a, Diag *d);
/* promote.c: `promote(loop, register)` keeps the reductions inside `loop`
 * whose element does not change across its iterations in a register and
 * stores once after it (the on-chip reduction of fuseGNN's GAR). Returns 1,
 * reporting nothing and changing nothing, when the loop holds no such
 * reduction: a directive may ask it of stages that have none, and is
 * refused only when no stage has one. */
/* `promote(g, shared)`: g a groups loop bound to warp; its reductions into
 * the groups' destination become `shared` stores and g `@shared`
 * (GNNAdvisor's per-warp shared-memory accumulator with a leader flush,
 * codegen/shared.c); returns 1 likewise when g holds none.
 * `promote(X, shared)`, X a dense input tensor: X is marked `@shared`, and
 * every kernel reading it stages it whole in shared memory. */
int pass_promote(IrOp *op, const char *loop, const char *where, Loc loc,
                 Arena *a, Diag *d);
/* promote(L, register) of the loop at `site` (found by the caller): 0, 1
 * when L holds nothing to promote, -1 after reporting why not. A mean=,
 * max= or min= target that L covers whole (a vertex's neighbourhood, one
 * store, owned by one worker) is finished in the flush, with no
 * finalisation stage. */
struct PassSite;
int pass_promote_register(IrOp *op, struct PassSite *site, Loc loc, Arena *a, Diag *d);
/* promote_row.c: `promote(X, register)`, X a read-only vertex input:
 * every read of X inside a sequential edge loop whose index does not
 * change across the loop's iterations (Y[v, f] inside in_edges(v) with the
 * feature loops outside it; Y[dst(ei), f] inside a neighbour group's
 * edges) becomes a local loaded once right before the loop, so the row is
 * held in registers across the edges. Refused when any such read changes
 * inside its edge loop, is under a guard there, or none exists. */
int pass_promote_row(IrOp *op, IrTensor *t, Loc loc, Arena *a, Diag *d);

/* interleave.c: marks a groups loop (neighbour groups) @interleave(distance)
 * [@classes(K)] [@threshold(t)]: its table rows come `distance` at a time
 * from each of 2..8 classes of destinations by in-degree in turn (two:
 * heavy and light, threshold 0 the mean degree; more: quantiles, and no
 * threshold). */
int pass_interleave(IrOp *op, const char *loop, int64_t classes,
                    int64_t distance, int64_t threshold, Loc loc, Arena *a,
                    Diag *d);

/* ---------------------------------------------------------------------------
 * Lowering passes, one file each (run by pass_lower in pipeline.c).
 */
/* accumulate.c: requires nothing (runs first); breaks nothing. Every
 * sequential edge loop whose reductions keep their element across its
 * iterations gets a register accumulator (promote(L, register)); a mean=,
 * max= or min= target it covers whole and one worker owns is finished in
 * the store, with no finalisation stage. */
int pass_accumulate(IrOp *op, Arena *a, Diag *d);

/* lower_mean.c: requires nothing; breaks nothing. `mean=` becomes `+=` plus
 * a stage dividing by the degree of the target vertex; `max=`/`min=`
 * targets get a stage writing 0 where the degree is 0. */
int pass_lower_mean(IrOp *op, Arena *a, Diag *d);
/* The same for one tensor (promote needs it before it can move a mean=
 * accumulator). Does nothing for a tensor that is no mean= target. */
int pass_lower_mean_tensor(IrOp *op, IrTensor *t, Arena *a, Diag *d);
/* The reduction that targets `t` in the statements `list` and those after
 * them (ASSIGN: none). */
IrRed pass_target_red(const IrNode *list, const IrTensor *t);
/* A stage over the rows of `t` (a warp per row, lanes on its last
 * dimension): the finalisation of a `red` target (reading `from` instead
 * of t when not NULL), or with `fill` the store of the reduction's
 * identity; over the rows its neighbour groups do not own only, when
 * t->owner_group is set. */
IrNode *pass_row_stage(IrOp *op, IrTensor *t, const IrTensor *from, IrRed red, bool fill,
                       Arena *a);
/* The finalisation of a 16-bit `t` whose rows its neighbour groups own
 * (promote.c), the other rows reduced into `wide`, its twin in the
 * accumulator type: after each stage that reduces into t, a stage writing
 * those rows of t from wide (a sum copied, a mean divided, a max/min's
 * empty rule), so each is rounded to 16 bits once. */
int pass_lower_wide(IrOp *op, IrTensor *t, const IrTensor *wide, Arena *a, Diag *d);

/* fill.c: requires mean= lowered; gives each tensor whose rows its
 * neighbour groups own (promote.c) a first stage giving the other rows
 * (empty and heavy) their initial value, and marks it filled, so the
 * runtime does not fill the whole tensor before the op. */
int pass_fill(IrOp *op, Arena *a, Diag *d);

/* segment.c: requires mean= lowered, runs before conflicts; breaks
 * nothing. In a deterministic op, a stage over neighbour groups bound to
 * workers that reduces into its destinations becomes two: rows of a
 * temporary on the group table's rows, then a stage over destinations
 * adding each one's rows in table order (a segmented reduction, no
 * atomics). */
int pass_segment(IrOp *op, Arena *a, Diag *d);

/* simplify.c: folds integer constants, drops unit loops, provably true
 * guards and dead code. Requires nothing; breaks nothing. */
int pass_simplify(IrOp *op, Arena *a, Diag *d);

/* reciprocal.c: inside an edge loop, a float term of a sum `a / b` that a
 * loop one thread runs (sequential, @vec, @unroll) changes in `a` and not
 * in `b` becomes `a * (1.0 / b)`: one reciprocal for the loop's iterations
 * or copies. Requires nothing; breaks nothing. */
int pass_reciprocal(IrOp *op, Arena *a, Diag *d);

/* conflicts.c: requires mean= lowered; sets IrNode.acc.how of every
 * reduction store to PLAIN or ATOMIC; refuses atomics when the op is
 * deterministic, and stores that several workers would repeat. */
int pass_conflicts(IrOp *op, Arena *a, Diag *d);
/* Whether the store at the end of `path` (its enclosing statements,
 * outermost first) can be written by two workers at once: some bound loop
 * of `path` is not determined by the element the store writes. `why`, when
 * not NULL, gets that loop. */
bool pass_store_conflicts(IrNode *const *path, int depth, const IrNode *store,
                          const IrNode **why);

/* ---------------------------------------------------------------------------
 * pipeline.c: the lowering pipeline and its pass table.
 */
typedef struct PassInfo {
  const char *name;    /* for --dump-after */
  const char *summary; /* one line, for `gopc passes` */
  int (*run)(IrOp *op, Arena *a, Diag *d);
} PassInfo;

/* The lowering passes in the order pass_lower runs them. */
const PassInfo *pass_table(int *n);
/* Runs every lowering pass in order, verifying the IR after each; when
 * `dump_after` names a pass, prints the op to `dump` after it. The result
 * is GPU-ready IR (docs/gpu-ir.md). 0, or -1 with the op unchanged. */
int pass_lower(IrOp *op, Arena *a, Diag *d, const char *dump_after,
               FILE *dump);

/* ---------------------------------------------------------------------------
 * nest.c: loop-nest helpers shared by the primitives and passes.
 */

#define PASS_MAX_DEPTH 32

/* Where a statement hangs in the tree, and what encloses it. */
typedef struct PassSite {
  IrNode **slot; /* the pointer holding it: a list head or a `next` field */
  IrNode *node;
  int stage;     /* index of the top-level statement it belongs to */
  int depth;
  IrNode *path[PASS_MAX_DEPTH]; /* enclosing loops and guards, outermost first */
} PassSite;

/* Finds the loops whose variable is called `name`; fills up to `max` sites
 * and returns how many there are. */
int pass_find_loops(IrOp *op, const char *name, PassSite *out, int max);
/* The same for a given node (a statement anywhere in op); false if absent. */
bool pass_find_node(IrOp *op, const IrNode *node, PassSite *out);
/* "v, e, f": the loop names of `op` in order of first appearance. */
const char *pass_loop_names(const IrOp *op, Arena *a);
/* Whether `name` is a tensor, an extent or a variable bound anywhere in
 * `op`: a name a new loop cannot take. */
bool pass_name_taken(const IrOp *op, const char *name);
/* Whether a loop or local of `list` (statements, nested) is named `name`. */
bool pass_binds_name(const IrNode *list, const char *name);
/* `base`, or base1, base2, ... : the first that is not taken. */
const char *pass_fresh_name(const IrOp *op, Arena *a, const char *base);

/* A copy of `op` with its own body and arrays, to try a change on. */
IrOp *pass_op_copy(const IrOp *op, Arena *a);
/* Points every load and store of `from` in the statements `list` (and
 * what follows them) at `to`. */
void pass_retarget(IrNode *list, const IrTensor *from, IrTensor *to);
/* Tensors are shared by the copies of an op (pass_op_copy copies the
 * pointers): a copy of `t` that only `op` uses, installed in its place, to
 * change a property of the tensor in this op alone. */
IrTensor *pass_own_tensor(IrOp *op, IrTensor *t, Arena *a);
/* A fresh loop variable (index kind unless `kind` says otherwise). */
IrVar *pass_new_var(IrOp *op, Arena *a, const char *name, IrVarKind kind,
                    Loc loc);

/* Replaces every use of `v` in the statements `list` (and in what follows
 * them) by a copy of `with`. */
void pass_subst_stmts(Arena *a, IrNode *list, const IrVar *v,
                      const IrNode *with);
/* Whether expression `e` uses only variables for which `ok(var, ctx)`. */
bool pass_expr_vars_all(const IrNode *e, bool (*ok)(const IrVar *, void *),
                        void *ctx);
/* Structural equality of two expressions. */
bool pass_expr_equal(const IrNode *x, const IrNode *y);
/* The number of iterations of a range, vertex or flat edge loop as an
 * expression (NULL for in/out edge loops). */
IrNode *pass_loop_extent(Arena *a, const IrNode *loop);
/* A loop's statements as a one-line description for messages:
 * "a local 's' and a store to 'S'". */
const char *pass_describe_stmts(Arena *a, const IrNode *list,
                                const IrNode *except);
/* An expression as the IR text prints it, for messages. */
const char *pass_expr_string(Arena *a, const IrNode *e);
/* The number of stages (top-level statements) of `op`. */
int pass_stage_count(const IrOp *op);
/* Whether the statement `stage` alone (not the stages after it) stores
 * into `t`. */
bool pass_stage_stores(const IrNode *stage, const IrTensor *t);
/* Marks in `stored` (by tensor id) the tensors the statement `stage` alone
 * stores into. */
void pass_stored_tensors(const IrNode *stage, bool *stored);
/* For the primitives on a tensor's stores (fission, inline), on an op of
 * one stage: *t the tensor `tensor`; 0 when the stage stores into it, 1
 * when it does not (nothing to do), -1 reported when the op has no such
 * tensor or the stage is already bound (`first`: what to do before
 * binding, "split it"). */
int pass_tensor_stage(IrOp *op, const char *prim, const char *tensor, const char *first,
                      IrTensor **t, Loc loc, Diag *d);
/* The number of stages of `op` that store into `t`. */
int pass_store_stages(const IrOp *op, const IrTensor *t);
/* The one loop of `op` called `name`; false after reporting
 * "PRIM: loop 'q' does not exist in operator X (loops: v, e, f)". */
bool pass_find_loop(IrOp *op, const char *prim, const char *name,
                    PassSite *site, Loc loc, Arena *a, Diag *d);
/* Refuses (false, reported) a name for a new loop that `op` already uses,
 * unless it is `replaced`, the name of the loop being replaced. `role`:
 * "outer loop", "inner loop" ... */
bool pass_check_new_name(const IrOp *op, const char *prim, const char *name,
                         const char *role, const char *replaced, Loc loc,
                         Diag *d);

/* Refuses (false, reported) to apply `prim` to loop `l`, called `name`,
 * once it is bound or marked @unroll or @vec: "PRIM it before binding it". */
bool pass_check_unscheduled(const IrNode *l, const char *prim, const char *name, Loc loc,
                            Diag *d);
/* The names of the two loops `prim` puts in place of `loop`, its outer and
 * inner ones (`roles` in messages: "outer loop", "inner loop"): those
 * given, else `loop` and the letters of `suffixes` ("oi": LOOPo, LOOPi).
 * false after reporting two names the same, or one `op` already uses. */
bool pass_new_loop_names(const IrOp *op, const char *prim, const char *loop,
                         const char *const roles[2], const char *suffixes, const char **outer,
                         const char **inner, Loc loc, Arena *a, Diag *d);

/* Integer expressions that fold constants as they are built. */
IrNode *pass_add(Arena *a, Loc loc, IrNode *x, IrNode *y);
IrNode *pass_mul(Arena *a, Loc loc, IrNode *x, IrNode *y);
IrNode *pass_div(Arena *a, Loc loc, IrNode *x, IrNode *y);
IrNode *pass_mod(Arena *a, Loc loc, IrNode *x, IrNode *y);
/* ceil(x / k) for k > 0: (x + k - 1) / k. */
IrNode *pass_ceildiv(Arena *a, Loc loc, IrNode *x, int64_t k);

#endif
