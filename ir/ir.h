/* ir/ir.h: the loop-nest IR, its arena and diagnostics.
 *
 * This is the one header of ir/, sectioned by the file that implements each
 * part. The IR is a tree: an IrModule holds operators (IrOp) and named
 * schedules (IrSchedDef); an operator holds tensors, symbolic extents and a
 * body, a list of statement nodes linked through `next`. Loop nests are the
 * stages of an operator. Nodes are allocated in the module's arena and are
 * never freed one by one.
 *
 * The IR's text form is the .gop surface syntax, extended with annotations
 * that only scheduling produces (`@warp` on loops, `if` guards, integer index
 * arithmetic). The printer (print.c) writes it; the lang/ parser reads it
 * back in IR mode (lang_parse_ir), so there is one grammar for both.
 */
#ifndef GOP_IR_H
#define GOP_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nodes.def"

#define IR_MAX_DIMS 4 /* feature dimensions of a tensor, after its domain */
#define IR_MAX_IDX (IR_MAX_DIMS + 1)
#define IR_MAX_CLASSES 8 /* interleave: classes of neighbour groups */
#define IR_OCC_MIN 32   /* occupancy: threads per SM a stage may ask for */
#define IR_OCC_MAX 2048 /* (sm_80 and sm_90 hold at most 2048) */

/* ---------------------------------------------------------------------------
 * arena.c: bump allocation; everything of a compilation lives in one arena.
 */
typedef struct Arena Arena;

Arena *ir_arena_new(void);
void ir_arena_free(Arena *a);
/* Zeroed memory of `size` bytes; aborts with a message if memory runs out. */
void *ir_alloc(Arena *a, size_t size);
char *ir_strdup(Arena *a, const char *s);
char *ir_strndup(Arena *a, const char *s, size_t n);
char *ir_sprintf(Arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#define IR_NEW(a, T) ((T *)ir_alloc((a), sizeof(T)))
#define IR_NEW_ARRAY(a, T, n) ((T *)ir_alloc((a), sizeof(T) * (size_t)(n)))

/* ---------------------------------------------------------------------------
 * diag.c: one diagnostics sink per compilation.
 *
 * Errors print as `file:line:col: error: message`, then the source line and
 * a caret under the column. Text goes to `out` (may be NULL) and is also
 * kept in a growable buffer so the C API can hand it to callers.
 */
typedef struct Loc {
  const char *file; /* never NULL once set; "<string>" for API input */
  int line, col;    /* 1-based; line 0 means "no location" */
} Loc;

typedef struct DiagSource {
  const char *file, *text;
  struct DiagSource *next;
} DiagSource;

typedef struct Diag {
  FILE *out;          /* echo here as well, or NULL */
  int nerrors, nwarnings;
  int max_errors;     /* stop reporting after this many (0: 50) */
  char *buf;          /* everything reported, NUL-terminated */
  size_t len, cap;
  DiagSource *sources; /* registered texts, for printing source lines */
} Diag;

void ir_diag_init(Diag *d, FILE *out);
void ir_diag_free(Diag *d);
/* The first error's reason, to be said inside another message: *text
 * points after the first "error: " of d's text (else at its start, or at
 * "" when d holds nothing); returns its length up to the end of that line
 * (printf's "%.*s"). */
int ir_diag_reason(const Diag *d, const char **text);
/* Reports everything `from` holds in `to` as it was said there (its text,
 * echoed where `to` echoes, and its counts): what a step reported into a
 * scratch Diag while its caller decided whether it was an error. */
void ir_diag_append(Diag *to, const Diag *from);
/* Registers the text of `file` so errors in it can quote the source line.
 * The diagnostics keep copies (the strings may go before the Diag does);
 * the same name and text registered again only move to the front. */
void ir_diag_source(Diag *d, const char *file, const char *text);
void ir_error(Diag *d, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ir_warning(Diag *d, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ir_note(Diag *d, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ir_verror(Diag *d, const char *severity, Loc loc, const char *fmt,
               va_list ap);

/* Internal compiler bugs, never user errors. */
_Noreturn void ir_unreachable_at(const char *file, int line, const char *msg);
#define unreachable(msg) ir_unreachable_at(__FILE__, __LINE__, (msg))

/* ---------------------------------------------------------------------------
 * file.c: writing the user's files safely.
 */
typedef void (*IrFileWriter)(FILE *f, const void *ctx);
/* Writes `path` through a temporary file in its directory, renamed over it
 * once `fill` has written everything and it is on disk: an error never
 * truncates or half-writes the user's file. Returns 0, or -1 after
 * reporting `path: error: cannot write WHAT: reason` (WHAT may be NULL). */
int ir_write_file(const char *path, const char *what, IrFileWriter fill,
                  const void *ctx, Diag *d);

/* ---------------------------------------------------------------------------
 * The IR proper (names.c holds the printable names of every enum).
 */
#define X_ENUM(k, ...) IR_##k,
typedef enum { IR_NODE_LIST(X_ENUM) IR_NODE_COUNT } IrKind;
#undef X_ENUM

#define X_ENUM(k, ...) IR_DT_##k,
typedef enum { IR_DTYPE_LIST(X_ENUM) IR_DT_COUNT } IrDType;
#undef X_ENUM
#define X_ENUM(k, ...) IR_DOM_##k,
typedef enum { IR_DOMAIN_LIST(X_ENUM) IR_DOM_COUNT } IrDomain;
#undef X_ENUM
#define X_ENUM(k, ...) IR_LOOP_##k,
typedef enum { IR_LOOPKIND_LIST(X_ENUM) IR_LOOP_COUNT } IrLoopKind;
#undef X_ENUM
#define X_ENUM(k, ...) IR_BIND_##k,
typedef enum { IR_BIND_LIST(X_ENUM) IR_BIND_COUNT } IrBind;
#undef X_ENUM
#define X_ENUM(k, ...) IR_HOW_##k,
typedef enum { IR_HOW_LIST(X_ENUM) IR_HOW_COUNT } IrHow;
#undef X_ENUM
#define X_ENUM(k, ...) IR_RED_##k,
typedef enum { IR_RED_LIST(X_ENUM) IR_RED_COUNT } IrRed;
#undef X_ENUM
#define X_ENUM(k, ...) IR_OP_##k,
typedef enum { IR_BINOP_LIST(X_ENUM) IR_BINOP_COUNT } IrBinOp;
#undef X_ENUM
#define X_ENUM(k, ...) IR_UN_##k,
typedef enum { IR_UNOP_LIST(X_ENUM) IR_UNOP_COUNT } IrUnOp;
#undef X_ENUM
#define X_ENUM(k, ...) IR_FN_##k,
typedef enum { IR_FN_LIST(X_ENUM) IR_FN_COUNT } IrFn;
#undef X_ENUM
#define X_ENUM(k, ...) IR_VAR_##k,
typedef enum { IR_VARKIND_LIST(X_ENUM) IR_VARKIND_COUNT } IrVarKind;
#undef X_ENUM

const char *ir_kind_name(IrKind k);
const char *ir_dtype_name(IrDType t);
int ir_dtype_bytes(IrDType t);
bool ir_dtype_is_float(IrDType t);
bool ir_dtype_is_16bit(IrDType t); /* f16 or bf16 */
const char *ir_domain_name(IrDomain d);
const char *ir_loopkind_name(IrLoopKind k);
const char *ir_bind_name(IrBind b);
const char *ir_red_name(IrRed r); /* the spelling: "+=", "max=" ... */
const char *ir_how_name(IrHow h);
const char *ir_binop_name(IrBinOp op);
int ir_binop_prec(IrBinOp op);
const char *ir_unop_name(IrUnOp op);
const char *ir_fn_name(IrFn fn);
int ir_fn_nargs(IrFn fn);
const char *ir_varkind_name(IrVarKind k);
/* Lookups by spelling; return -1 when the name is not one of the list. */
int ir_dtype_lookup(const char *name);

/* ---- dtype.c: the floating-point types and conversions between them ---- */

/* The IrFn that rounds to `t` (f16(x) ...), or -1 for a non-float type. */
int ir_fn_of_dtype(IrDType t);
/* The float type function `fn` rounds to, or -1 when it is not one. */
int ir_dtype_of_fn(IrFn fn);
/* IEEE binary16 and bfloat16 bits from a float, rounded to nearest even
 * (NaN stays a quiet NaN, overflow gives inf), and back (exact). */
uint16_t ir_f16_from_float(float x);
float ir_f16_to_float(uint16_t h);
uint16_t ir_bf16_from_float(float x);
float ir_bf16_to_float(uint16_t h);
/* `x` rounded to float type `t` (f16/bf16 through f32, as the GPU's cvt.rn
 * from f32 does; f64: unchanged). */
double ir_round_to(IrDType t, double x);
/* Element `i` of a buffer of float type `t`, as a double; and the store of
 * `x` (rounded to `t`) there. */
double ir_elem_get(IrDType t, const void *buf, int64_t i);
/* The relative L2 error a check of an output of float type `t` allows
 * against a reference of the same rounded inputs: 1e-5 for f32, a few
 * units of the stored rounding for 16 bits (2e-3 f16, 1.5e-2 bf16), 1e-12
 * for f64 (docs/language.md, "Types"). */
double ir_check_limit(IrDType t);
void ir_elem_put(IrDType t, void *buf, int64_t i, double x);
int ir_fn_lookup(const char *name);
int ir_bind_lookup(const char *name);

/* A symbolic extent such as F or H, bound to a number at run time. */
typedef struct IrSym {
  const char *name;
  Loc loc;
  int id; /* index in IrOp.syms */
} IrSym;

/* One feature dimension of a tensor: a symbol, or a constant when sym is
 * NULL. */
typedef struct IrDim {
  IrSym *sym;
  int64_t value;
} IrDim;

typedef enum { IR_ROLE_IN, IR_ROLE_OUT, IR_ROLE_TEMP } IrRole;

/* A tensor of an operator: a parameter (input), a result (output), or a
 * temporary declared in the body with `tensor NAME: type`.
 * Shape: [domain rows (|V| for src/dst, |E| for edge, none for dense),
 * dims[0], ..., dims[ndims-1]]. */
typedef struct IrTensor {
  const char *name;
  Loc loc;
  IrDType dtype;
  IrDomain domain;
  IrRole role;
  int ndims;
  IrDim dims[IR_MAX_DIMS];
  int group; /* domain GROUPS: the group size G of the neighbour-group
                table it has one row per row of (passes/segment.c) */
  int id; /* index in IrOp.tensors */
  bool shared; /* a dense input staged whole in shared memory by every
                  kernel that reads it: `a: f32[F] @shared`
                  (promote(a, shared), docs/gpu-ir.md) */
  int owner_group; /* lowering only: a dst tensor whose rows with 1..G
                      in-edges are written whole by their one neighbour
                      group of size G (a plain store), the other rows by
                      atomics (passes/promote.c); 0: none */
  int owner_panel; /* lowering only: with owner_group, the rows are owned
                      by the rows of the panel table of (owner_group,
                      owner_panel) instead (passes/panel.c) */
  bool wide; /* lowering only: the f32 twin of a 16-bit output for the
                heavy rows its neighbour groups add atomically (promote.c);
                the output's finalisation reads it, so it needs none */
  bool filled; /* lowering only: the op's own first stage gives the rows
                  that need it their initial value, so the runtime fills
                  nothing (passes/fill.c) */
} IrTensor;

typedef struct IrVar {
  const char *name;
  Loc loc;
  IrVarKind kind;
  IrDType dtype; /* locals: the value type (f32); loop variables: i32 */
  int id;        /* index in IrOp.vars */
} IrVar;

typedef enum { IR_TY_VOID, IR_TY_FLOAT, IR_TY_INT, IR_TY_BOOL } IrType;

typedef struct IrNode IrNode;
struct IrNode {
  IrKind kind;
  Loc loc;
  IrType type;  /* of an expression; IR_TY_VOID for statements */
  IrNode *next; /* next statement in a list */
  union {
    struct { /* LOOP */
      IrVar *var;
      IrLoopKind kind;
      IrNode *extent; /* RANGE: number of iterations (from 0), else NULL */
      IrNode *of;     /* IN_EDGES / OUT_EDGES: the vertex, else NULL */
      IrBind bind;   /* see docs/gpu-ir.md for what each binding means */
      int threads;   /* top-level loops: threads per block of the kernel
                        this stage becomes; 0: the default (256) */
      int occ;       /* top-level loops: threads per SM the kernel asks
                        ptxas to fit (occupancy(loop, N), passes/occupancy.c:
                        N / threads blocks an SM, so at most 65536 / N
                        registers a thread); 0: the default (1024, 512 for
                        f64 and @vec(8)) */
      int team;   /* @warp loops: lanes per iteration, a power of two below
                     32 (32 / team iterations share a warp, each on its own
                     lanes: team(w, T), passes/team.c); 0: the whole warp */
      int unroll; /* 0: not asked */
      int vec;    /* 0: not vectorised */
      /* GROUPS (passes/group.c, passes/interleave.c), and GROUP_ROWS (of:
       * the vertex; passes/segment.c): the group size G;
       * the interleaving distance (0: table order), its number of classes
       * (2..8 when interleaved, else 0) and, with two classes, the degree
       * threshold between them (0: the runtime's, the mean degree) */
      int group, ilv, ilv_cls, ilv_thr;
      /* GROUPS and UNOWNED: 0, or P: the rows are the panel table's
       * (panel(g, P), passes/panel.c; graph/panels.c), P consecutive
       * destinations a row; PAIR_EDGE: the slot s of the pair (0..P-1) */
      int panel, slot;
#define IR_PANEL_MIN 2
#define IR_PANEL_MAX 8
      bool shared; /* GROUPS: `shared` stores accumulate per warp in shared
                      memory (promote(g, shared), docs/gpu-ir.md) */
      bool prefetch; /* IN_EDGES, OUT_EDGES, GROUP_EDGES inside a @lane loop:
                        the warp loads the per-edge scalars (endpoint, edge
                        id, T[e]) 32 edges at a time, lane l edge base + l,
                        and broadcasts them with warp shuffles
                        (prefetch(e), passes/prefetch.c, docs/gpu-ir.md) */
      IrNode *body;
    } loop;
    struct { /* STORE and LOAD */
      IrTensor *tensor;
      int nidx;
      IrNode *idx[IR_MAX_IDX];
      IrRed red;      /* STORE only */
      IrHow how;      /* STORE only: decided by the conflict analysis */
      IrNode *value;  /* STORE only */
    } acc;
    struct { /* LET */
      IrVar *var;
      IrNode *init;
    } let;
    struct { /* SET */
      IrVar *var;
      IrRed red;
      IrNode *value;
      IrHow how; /* AUTO: the worker's own copy; SHUFFLE: a cross-lane
                    reduction (passes/conflicts.c, docs/gpu-ir.md) */
    } set;
    struct { /* IF */
      IrNode *cond;
      IrNode *then;
    } ifs;
    double f;   /* FCONST */
    int64_t i;  /* ICONST */
    IrVar *var; /* VAR */
    IrSym *sym; /* SYM */
    struct { /* BIN */
      IrBinOp op;
      IrNode *a, *b;
    } bin;
    struct { /* UN */
      IrUnOp op;
      IrNode *a;
    } un;
    struct { /* CALL */
      IrFn fn;
      int nargs;
      IrNode *args[2];
    } call;
    struct { /* SRC, DST: e is the edge; INDEG, OUTDEG: e is the vertex */
      IrNode *e;
    } endpoint;
  };
};

typedef struct IrOp {
  const char *name;
  Loc loc;
  IrTensor **tensors; /* inputs in order, then outputs, then temporaries */
  int ntensors, ninputs, noutputs;
  IrSym **syms;
  int nsyms;
  IrVar **vars;
  int nvars;
  IrNode *body; /* the stages, in order */
  bool deterministic; /* schedule option: no atomics (passes/conflicts.c) */
  bool transposed; /* schedule option transpose(): sources and destinations
                      exchanged, to run on the reversed graph
                      (passes/transpose.c, graph_transposed) */
  IrDType acc; /* the accumulator type: every local, intermediate value and
                  reduction is computed in it, and a value is rounded to a
                  tensor's dtype when stored (f32 or f64; docs/language.md
                  "Types"). ir_op_new gives f32; the checker sets the
                  declared one or ir_op_default_acc's */
} IrOp;

/* ---- schedules as data (parsed now; applied by passes/) ---- */

/* One argument of a directive: a name (a loop, a tensor, a keyword such as
 * `warp`) or an integer expression over the schedule's parameters (an IR
 * expression whose VAR nodes are IR_VAR_INDEX variables named after the
 * parameters). */
typedef struct IrSchedArg {
  Loc loc;
  const char *name; /* set for a name */
  IrNode *expr;     /* set for an expression */
} IrSchedArg;

typedef struct IrDirective {
  const char *prim; /* the primitive's name as written: "split", "bind" ... */
  Loc loc;
  int nargs;
  IrSchedArg *args;
  int nresults; /* `-> (fo, fi)`: names given to the loops it creates */
  const char **results;
  struct IrDirective *next;
} IrDirective;

typedef struct IrSchedDef {
  const char *name;
  Loc loc;
  int nparams;
  IrVar **params;
  IrDirective *directives;
  const struct IrModule *module; /* where it was defined: the named schedules
                                    its directives may call */
} IrSchedDef;

typedef struct IrModule {
  Arena *arena;
  IrOp **ops;
  int nops;
  IrSchedDef **scheds;
  int nscheds;
} IrModule;

/* ---------------------------------------------------------------------------
 * build.c: constructors. Each returns a node allocated in `a`, with `type`
 * set for expressions.
 */
IrModule *ir_module_new(Arena *a);
void ir_module_add_op(IrModule *m, IrOp *op);
void ir_module_add_sched(IrModule *m, IrSchedDef *s);
IrOp *ir_module_find_op(const IrModule *m, const char *name);
IrSchedDef *ir_module_find_sched(const IrModule *m, const char *name);

IrOp *ir_op_new(Arena *a, const char *name, Loc loc);
IrSym *ir_op_sym(Arena *a, IrOp *op, const char *name, Loc loc); /* find or add */
IrTensor *ir_op_add_tensor(Arena *a, IrOp *op, const char *name, Loc loc,
                           IrDType dt, IrDomain dom, IrRole role);
IrVar *ir_op_add_var(Arena *a, IrOp *op, const char *name, Loc loc,
                     IrVarKind kind);
IrTensor *ir_op_find_tensor(const IrOp *op, const char *name);

IrNode *ir_loop(Arena *a, Loc loc, IrVar *var, IrLoopKind kind,
                IrNode *extent, IrNode *of, IrNode *body);
IrNode *ir_store(Arena *a, Loc loc, IrTensor *t, int nidx, IrNode **idx,
                 IrRed red, IrNode *value);
IrNode *ir_let(Arena *a, Loc loc, IrVar *var, IrNode *init);
IrNode *ir_set(Arena *a, Loc loc, IrVar *var, IrRed red, IrNode *value);
IrNode *ir_if(Arena *a, Loc loc, IrNode *cond, IrNode *then);
IrNode *ir_fconst(Arena *a, Loc loc, double f);
IrNode *ir_iconst(Arena *a, Loc loc, int64_t i);
IrNode *ir_var(Arena *a, Loc loc, IrVar *v);
IrNode *ir_symref(Arena *a, Loc loc, IrSym *s);
IrNode *ir_load(Arena *a, Loc loc, IrTensor *t, int nidx, IrNode **idx);
IrNode *ir_bin(Arena *a, Loc loc, IrBinOp op, IrNode *x, IrNode *y);
IrNode *ir_un(Arena *a, Loc loc, IrUnOp op, IrNode *x);
IrNode *ir_call(Arena *a, Loc loc, IrFn fn, int nargs, IrNode **args);
IrNode *ir_endpoint(Arena *a, Loc loc, IrKind kind, IrNode *e);
IrNode *ir_graph_size(Arena *a, Loc loc, IrKind kind); /* IR_NV or IR_NE */
/* Appends `s` (and whatever follows it) to the list `*list`. */
void ir_append(IrNode **list, IrNode *s);
/* A deep copy of one node (and, for statements, not of its `next`). */
IrNode *ir_clone(Arena *a, const IrNode *n);

/* ---------------------------------------------------------------------------
 * print.c: the text form. Output parses back (lang_parse_ir) to an IR that
 * prints identically.
 */
void ir_print_module(FILE *out, const IrModule *m);
void ir_print_op(FILE *out, const IrOp *op);
void ir_print_sched(FILE *out, const IrSchedDef *s);
void ir_print_stmts(FILE *out, const IrNode *list, int indent);
void ir_print_expr(FILE *out, const IrNode *e);
/* `X: f32[src, F]`, as in an operator's parameter list. */
void ir_print_tensor_decl(FILE *out, const IrTensor *t);
/* The same, into a malloc'ed string the caller frees. */
char *ir_op_to_string(const IrOp *op);
/* The accumulator type an operator gets when it declares none: f64 when a
 * float tensor is f64, else f32. */
IrDType ir_op_default_acc(const IrOp *op);
/* The storage type of an operator for the tuning key: the dtype of its
 * float tensors when they share one, else "mixed". */
const char *ir_op_dtype_key(const IrOp *op);
/* Instantiates `op` in float type `t` (gopc --dtype, gop_op_retype): every
 * f32 tensor becomes `t`, and the accumulator becomes f64 for t = f64
 * (else it is kept). */
void ir_op_retype(IrOp *op, IrDType t);

/* ---------------------------------------------------------------------------
 * verify.c: structural invariants, run after every pass. Reports each
 * broken invariant through `d` (naming the pass in `after`, e.g. "split")
 * and returns false if any.
 */
bool ir_verify_op(const IrOp *op, Diag *d, const char *after);

/* ---------------------------------------------------------------------------
 * limits.c: how much an input may ask for. Each limit has a default and an
 * environment variable that sets it (docs/limits.md); readers check
 * what an input asks for before allocating.
 */
typedef enum IrLimit {
  IR_LIMIT_SOURCE_BYTES, /* GOP_MAX_SOURCE_BYTES: a .gop source, schedule or IR text */
  IR_LIMIT_NESTING,      /* GOP_MAX_NESTING: brackets nested in a source */
  IR_LIMIT_DIRECTIVES,   /* GOP_MAX_DIRECTIVES: directives one schedule applies */
  IR_LIMIT_IR_NODES,     /* GOP_MAX_IR_NODES: the size of a scheduled operator */
  IR_LIMIT_LOOP_TRIPS,   /* GOP_MAX_LOOP_TRIPS: nested constant-extent loops' iterations */
  IR_LIMIT_HOST_BYTES,   /* GOP_MAX_HOST_BYTES: one allocation an input asks for */
  IR_LIMIT_COUNT
} IrLimit;

/* The current value of limit `l` (its default when the variable is unset
 * or invalid). */
int64_t ir_limit(IrLimit l);
/* The environment variable that sets `l`. */
const char *ir_limit_env(IrLimit l);
/* Whether `asked` (negative: more than can be counted) is within `l`;
 * otherwise reports "WHAT: N UNIT, over the limit of M (set VAR ...)" at
 * `loc` and returns false. An invalid variable is reported too. */
bool ir_limit_check(IrLimit l, int64_t asked, Diag *d, Loc loc, const char *what);
/* count * size, or -1 if it overflows (or either is negative). */
int64_t ir_bytes_of(int64_t count, int64_t size);

/* The values of an operator's symbolic extents, by IrSym.id. */
typedef struct IrExtents {
  int n;
  int64_t value[16];
} IrExtents;

/* ir/walk.c: whether any node of `n` (a statement list with everything
 * under it, or an expression) satisfies `hit`, visited parents first. */
bool ir_any(const IrNode *n, bool (*hit)(const IrNode *, void *), void *ctx);
/* Calls `fn` on the slot of each operand of expression `e` (a load's
 * indices, a binary or unary operator's operands, a call's arguments, an
 * endpoint's or degree's edge or vertex), in order: what a pass rewriting
 * an expression bottom-up recurses into, and may replace. */
void ir_each_operand(IrNode *e, void (*fn)(IrNode **slot, void *ctx), void *ctx);
/* Whether `n` loads from any tensor; from tensor `t`; whether it uses,
 * sets or declares variable `v`. */
bool ir_has_load(const IrNode *n);
bool ir_reads_tensor(const IrNode *n, const IrTensor *t);
bool ir_uses_var(const IrNode *n, const IrVar *v);

#endif
