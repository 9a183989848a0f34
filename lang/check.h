/* lang/check.h: the checker's private declarations.
 *
 * Internal to lang/: only lang/check*.c include it; the rest of gop sees
 * the checker through lang.h's lang_check and lang_compile_into. The
 * checker is one walk over the AST (check.c says how it works), split by
 * the language's parts; this header holds the state of the walk and what
 * one part calls in another, sectioned by the file that defines it. Those
 * functions carry a check_ prefix; the helpers of one file stay static
 * there.
 */
#ifndef GOP_LANG_CHECK_H
#define GOP_LANG_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lang/lang.h"

/* A name visible where the walk is: a loop variable or a local. */
typedef struct Binding {
  const char *name;
  IrVar *var;      /* NULL: bad (its declaration was refused) */
  Loc loc;
  int nloops;      /* locals: how many loops enclosed the declaration */
} Binding;

/* A loop enclosing the walk's position. */
typedef struct LoopCtx {
  IrVar *var;
  IrLoopKind kind;
  IrNode *of; /* IN_EDGES / OUT_EDGES: the vertex */
} LoopCtx;

/* What the op's statements did to a tensor so far. */
typedef struct TensorState {
  bool written;
  IrRed red; /* the reduction kind that targets it, once one does */
  Loc red_loc;
} TensorState;

/* A declaration anywhere in the op, for "used before its declaration". */
typedef struct Decl {
  const char *name;
  Loc loc;
  bool is_loop;
} Decl;

/* The walk's state: one per lang_check, its per-op fields reset by
 * check_op. */
typedef struct Checker {
  Arena *a;
  Diag *d;
  bool ir;          /* IR text mode */
  IrModule *m;
  IrOp *op;         /* the op being checked */
  TensorState *ts;  /* by IrTensor.id */
  int nts;
  Binding *binds;
  int nbinds, capbinds;
  LoopCtx *loops;   /* the enclosing loops whose header was right */
  int nloops, caploops;
  int depth;        /* every enclosing loop, bad ones included */
  const char **bad_tensors; /* names declared twice: their uses are not checked */
  int nbad, capbad;
  Decl *decls;
  int ndecls, capdecls;
  const char *pending; /* the local whose initialiser is being checked */
} Checker;

/* ---------------------------------------------------------------------------
 * check.c: the context of the walk, the names in scope, the entry points.
 */

/* Reports an error at `loc` through the checker's Diag. */
void check_error(Checker *c, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Arena-backed growable arrays: the old storage stays in the arena. */
void *check_grow(Arena *a, void *items, int n, int *cap, size_t size);
/* What the rows of a tensor on domain `d` are, for messages. */
const char *check_domain_rows(IrDomain d);
/* "f32[src, F]" */
const char *check_type_string(Checker *c, const IrTensor *t);
/* The innermost binding of `name`, or NULL. */
Binding *check_lookup(Checker *c, const char *name);
/* The extent symbol `name` of `op`, or NULL. */
IrSym *check_find_sym(const IrOp *op, const char *name);
/* Makes `name` visible until the enclosing block ends (`var` NULL: bad). */
void check_bind(Checker *c, const char *name, IrVar *var, Loc loc);
/* "local" or "loop variable". */
const char *check_binding_kind(const Binding *b);
/* Refuses a loop variable or local `name` that would hide another name.
 * `what` is "loop variable" or "local". Returns false if refused. */
bool check_new_name(Checker *c, const char *name, Loc loc, const char *what);
/* A name that resolved to nothing: say the most useful thing. */
void check_unknown_name(Checker *c, const char *name, Loc loc);
/* Collects every loop variable and local of an op body, for
 * check_unknown_name. */
void check_collect_decls(Checker *c, const LangNode *list);

/* ---------------------------------------------------------------------------
 * check_decl.c: operators (their parameters, results and temporaries) and
 * schedules.
 */

/* Checks op `n` and adds it to the module unless it had errors. */
void check_op(Checker *c, const LangNode *n);
/* Checks schedule `n` and adds it to the module unless it had errors. */
void check_sched(Checker *c, const LangNode *n);

/* ---------------------------------------------------------------------------
 * check_expr.c: indices, tensor accesses, values and guards' conditions.
 */

/* What an index expression is, besides its IR, for the domain rules: a
 * lone loop variable, src(e)/dst(e), a constant, or (IR text only)
 * arithmetic, with the kinds of the variables it uses. */
typedef enum { IX_BAD, IX_CONST, IX_VAR, IX_SRCOF, IX_DSTOF, IX_EXPR } IxForm;

typedef struct Ix {
  IxForm form;
  IrVar *var;     /* IX_VAR: the variable; IX_SRCOF/IX_DSTOF: the edge */
  int64_t value;  /* IX_CONST */
  unsigned kinds; /* IX_EXPR: 1 << IrVarKind of every variable used */
  const char *text; /* for messages: "dst vertex `v`" */
} Ix;

/* An index expression, its form in `ix`; NULL if refused (ix->form is then
 * IX_BAD). */
IrNode *check_index_expr(Checker *c, const LangNode *e, Ix *ix);
/* The vertex argument of in_degree(v), in_edges(v) ... : `want` is
 * IR_VAR_DST_V or IR_VAR_SRC_V. NULL if refused. */
IrNode *check_vertex_arg(Checker *c, const char *fn, const LangNode *e,
                         IrVarKind want);
/* Checks T[idx...] and fills `out`; returns false if anything is wrong. */
bool check_access(Checker *c, IrTensor *t, const LangNode *at,
                  const LangNode *idx, IrNode **out);
/* Whether `name` was declared twice (its uses are not checked). */
bool check_is_bad_tensor(const Checker *c, const char *name);
/* The tensor a read or write names; NULL (reported unless the name is bad)
 * if there is none. */
IrTensor *check_find_tensor(Checker *c, const char *name, Loc loc);
/* An f32 value; NULL if refused. */
IrNode *check_value_expr(Checker *c, const LangNode *e);
/* The condition of an `if` guard (IR text); NULL if refused. */
IrNode *check_cond_expr(Checker *c, const LangNode *e);

/* ---------------------------------------------------------------------------
 * check_stmt.c: statements.
 */

/* The IR of a block's statements, NULL-terminated through `next`; the
 * block's names go out of scope at its end. */
IrNode *check_block(Checker *c, const LangNode *list);

/* ---------------------------------------------------------------------------
 * check_loop.c: loops, their headers and nesting.
 */

/* "vertex loop", "range loop", "groups loop" or "edge loop". */
const char *check_loop_word(IrLoopKind k);
/* A `for` statement and its body; NULL if refused. */
IrNode *check_loop(Checker *c, const LangNode *n);

#endif
