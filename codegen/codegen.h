/* codegen/codegen.h: GPU-ready IR -> LLVM IR -> PTX, and kernel packs.
 *
 * The one header of codegen/, sectioned by the file that implements each
 * part. Code generation takes an operator in the GPU-ready form of
 * docs/gpu-ir.md (bound loops, `plain`/`atomic` reduction stores, guards)
 * and builds one LLVM module with one kernel per stage, optimises it with
 * LLVM's `default<O3>` pipeline for the NVPTX target and emits PTX.
 *
 * What a runtime needs to launch the kernels (their parameters in order and
 * the rule that sizes the grid) is plain data, CgProgram, which can be
 * written to a kernel pack and read back without LLVM: the public part of
 * this header uses no LLVM type, and program.c does not include LLVM.
 * Files of codegen/ that build LLVM IR define GOP_CODEGEN_INTERNAL before
 * including this header to see the codegen context at the end.
 */
#ifndef GOP_CODEGEN_H
#define GOP_CODEGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

/* ---------------------------------------------------------------------------
 * program.c: the compiled program as data (no LLVM here).
 */

/* The targets gop compiles for, in order, ending with NULL. */
extern const char *const cg_targets[];
#define CG_DEFAULT_TARGET "sm_90"
bool cg_target_known(const char *target);
/* Returns 0 if `target` is one of cg_targets; otherwise reports
 * "unknown target sm_75: gop targets sm_80, sm_86, sm_89, sm_90" and
 * returns -1. */
int cg_target_check(const char *target, Diag *d);

/* What a kernel parameter is bound to. Pointers are 64-bit device addresses
 * of int32 (graph arrays) or f32 (tensors) elements, 16-byte aligned, never
 * overlapping one another; scalars are int32. In a program compiled for
 * 64-bit indices (CgProgram.index_bits 64, docs/index64.md) the offsets
 * and edge ids (in_ptr, in_eid, out_ptr, out_eid) are int64 arrays and
 * `ne` an int64 scalar; vertex ids stay int32. */
#define CG_PARAM_LIST(X)                                                      \
  X(TENSOR,  "tensor")  /* f32 *: tensor `id` of the op (IrTensor.id)     */ \
  X(SRC,     "src")     /* int32 *: COO source of each edge               */ \
  X(DST,     "dst")     /* int32 *: COO destination of each edge          */ \
  X(IN_PTR,  "in_ptr")  /* int32/64 *: CSR by destination, |V|+1 offsets */ \
  X(IN_EID,  "in_eid")  /* int32/64 *: CSR edge ids                       */ \
  X(IN_SRC,  "in_src")  /* int32 *: CSR sources                           */ \
  X(OUT_PTR, "out_ptr") /* int32/64 *: CSC by source, |V| + 1 offsets     */ \
  X(OUT_EID, "out_eid") /* int32/64 *: CSC edge ids                       */ \
  X(OUT_DST, "out_dst") /* int32 *: CSC destinations                      */ \
  X(GRP_DST, "grp_dst") /* int32 *: neighbour-group table: destinations   */ \
  X(GRP_FIRST, "grp_first") /* int32/64 *: its first CSR positions        */ \
  X(GRP_END, "grp_end") /* int32/64 *: its end CSR positions (exclusive)  */ \
  X(GRP_VPTR, "grp_vptr") /* int32/64 *: by destination, |V| + 1 offsets */ \
  X(GRP_VROW, "grp_vrow") /* int32/64 *: rows in table order (segment.c) */ \
  X(NGROUPS, "ngroups") /* int32/64: rows of that table                   */ \
  X(GRP_UNOWNED, "grp_unowned") /* int32 *: destinations no group owns      */ \
  X(NUNOWNED, "nunowned") /* int32: how many (an unowned(G) loop)          */ \
  X(GRP_OWN, "grp_own") /* int32 *: panel table: 1 for a panel's only row */ \
  X(PAIR_SRC, "pair_src") /* int32 *: panel table: each pair's source     */ \
  X(PAIR_MASK, "pair_mask") /* int32 *: its slots with an edge (bits)     */ \
  X(PAIR_POS, "pair_pos") /* int32/64 *: P CSR positions a pair           */ \
  X(NV,      "nv")      /* int32: |V|                                     */ \
  X(NE,      "ne")      /* int32 (int64 with 64-bit indices): |E|         */ \
  X(SYM,     "sym")     /* int32: the value of extent symbol `id`         */

#define X_ENUM(k, ...) CG_PARAM_##k,
typedef enum { CG_PARAM_LIST(X_ENUM) CG_PARAM_COUNT } CgParamKind;
#undef X_ENUM

typedef struct CgParam {
  CgParamKind kind;
  int id; /* TENSOR: IrTensor.id; SYM: IrSym.id; otherwise 0 */
} CgParam;

const char *cg_param_name(CgParamKind k);
/* Size in bytes of the parameter as the kernel takes it: 8 (pointers) or 4
 * (scalars; `ne` takes 8 in a program of 64-bit indices). */
int cg_param_bytes(CgParamKind k);
/* Whether graph array `k` holds int64 elements in a program of
 * `index_bits` (32 or 64): the offsets and edge ids with 64-bit indices,
 * and the group tables' CSR positions and row numbers (docs/index64.md). */
bool cg_param_wide(CgParamKind k, int index_bits);

/* The index width a graph of nv vertices and ne edges needs: 64 when edge
 * ids or CSR positions (with the headroom of split remainders and
 * grid-stride steps, CG_INDEX32_MAX_EDGES) may pass int32, else 32. */
#define CG_INDEX32_MAX_EDGES ((int64_t)INT32_MAX - ((int64_t)1 << 24))
int cg_index_bits_needed(int64_t nv, int64_t ne);

/* An integer expression over the graph's sizes and the extent symbols, in
 * postfix order: the extent of a bound loop, kept so that a runtime without
 * the IR can size a launch. */
#define CG_TOK_LIST(X)                                  \
  X(CONST, "")    /* push value                      */ \
  X(SYM,   "$")   /* push the value of symbol `value` */ \
  X(NV,    "nv")  /* push |V|                        */ \
  X(NE,    "ne")  /* push |E|                        */ \
  X(ADD,   "+")                                         \
  X(SUB,   "-")                                         \
  X(MUL,   "*")                                         \
  X(DIV,   "/")                                         \
  X(MOD,   "%")

#define X_ENUM(k, ...) CG_TOK_##k,
typedef enum { CG_TOK_LIST(X_ENUM) CG_TOK_COUNT } CgTokKind;
#undef X_ENUM

#define CG_EXPR_MAX 32
typedef struct CgExpr {
  int n;
  struct {
    CgTokKind kind;
    int64_t value;
  } tok[CG_EXPR_MAX];
} CgExpr;

/* Evaluates `e` with |V| = nv, |E| = ne and symbol i = syms[i] (nsyms of
 * them). Returns 0, or -1 (with *out untouched) on a malformed expression,
 * an unknown symbol, division by zero or overflow. */
int cg_expr_eval(const CgExpr *e, int64_t nv, int64_t ne, const int64_t *syms,
                 int nsyms, int64_t *out);

/* How the grid of a kernel is sized (docs/gpu-ir.md, "Bound loops"). */
typedef enum CgLaunchKind {
  CG_LAUNCH_ONE,    /* no bound loop: one block, the body runs on thread 0 */
  CG_LAUNCH_EXTENT, /* ceil(extent / per_block) blocks                     */
  CG_LAUNCH_FILL,   /* the outermost bound loop's extent is only known
                       inside the kernel (e.g. in_edges(v) of a sequential
                       v): launch enough blocks to fill the GPU           */
} CgLaunchKind;

typedef struct CgLaunch {
  CgLaunchKind kind;
  IrBind bind;   /* EXTENT, FILL: the binding of the outermost bound loop */
  int per_block; /* workers per block: 1 (@block), threads / 32 (@warp),
                    threads (@thread); 1 for ONE */
  CgExpr extent; /* EXTENT: that loop's number of iterations */
} CgLaunch;

typedef struct CgKernel {
  char *name;   /* the PTX entry: OP_sSTAGE */
  int stage;    /* index of the stage (top-level statement) it runs */
  int threads;  /* threads per block; the kernel's .maxntid */
  int occ;      /* threads per SM asked for (@occupancy); 0: the default */
  /* it starts with griddepcontrol.wait (sm_90, every stage after the
   * first): the runtime may launch it while the stage before it finishes
   * (programmatic dependent launch) */
  bool waits;
  int nparams;
  CgParam *params; /* in the order the kernel takes them */
  CgLaunch launch;
  /* a stage over neighbour groups (`for g in groups(G)`): the table it
   * reads (graph/groups.c: G, interleaving distance, classes,
   * threshold); group 0: none */
  int group, group_ilv, group_cls, group_thr;
  int group_panel; /* the table is the panel table of (group, group_panel)
                      (passes/panel.c); 0: the neighbour-group table */
  int shared_tensor; /* a @shared groups stage: the tensor whose rows it
                        accumulates in dynamic shared memory (threads / 32
                        rows of its features); -1: none */
} CgKernel;

/* A tensor of the compiled op, enough for a runtime without the IR to
 * allocate and initialise it. */
typedef struct CgTensorInfo {
  char *name;
  IrRole role;
  IrDomain domain;
  IrDType dtype;
  int ndims;
  IrDim dims[IR_MAX_DIMS]; /* dims[i].sym is NULL; sym_id says which */
  int sym_id[IR_MAX_DIMS]; /* the symbol of feature dim i, or -1 */
  IrRed red; /* the reduction that targets it: the runtime fills it with
                its identity before the first stage (ASSIGN: 0) */
  int group; /* domain GROUPS: a row per row of the graph's group table of
                this size (passes/segment.c) */
  bool staged; /* a dense input each kernel reading it copies into dynamic
                  shared memory (promote(X, shared); codegen/shared.c) */
  bool filled; /* the op's own stages write every element it reads before
                  reading it (passes/fill.c: an output whose rows neighbour
                  groups own; promote.c: a 16-bit output's wide twin;
                  segment.c: Y_seg stored once per row): the runtime gives
                  it no start value, only NaN before a checked run */
} CgTensorInfo;

typedef struct CgTimes {
  double build_ms; /* IR -> LLVM IR, including the verifier */
  double opt_ms;   /* default<O3> */
  double emit_ms;  /* NVPTX code generation to PTX text */
} CgTimes;

typedef struct CgProgram {
  char *op;     /* the operator's name */
  char *target; /* "sm_90" ... */
  char *ptx;    /* one module holding every stage's kernel, NUL-ended */
  size_t ptx_len;
  int nkernels;
  CgKernel *kernels; /* in stage order */
  int nsyms;
  char **syms; /* symbol names, by IrSym.id */
  int ntensors;
  CgTensorInfo *tensors; /* by IrTensor.id */
  char *ir;     /* the op's IR text (ir_op_to_string), or NULL */
  CgTimes times;
  int index_bits; /* 32 or 64 (docs/index64.md); 0 reads as 32 */
  bool csr_edges; /* compiled for edge ids in CSR order (CgLayout) */
  bool transposed; /* runs on the reversed graph (IrOp.transposed,
                      passes/transpose.c): the runtime launches it on
                      graph_transposed; never csr_edges */
} CgProgram;

/* p->index_bits, 0 read as 32. */
int cg_program_index_bits(const CgProgram *p);
/* Kernel `name`'s part of p->ptx: from its `.entry NAME(` to the next
 * `.entry` (or the end), its length in *len; NULL when there is none. */
const char *cg_kernel_ptx(const CgProgram *p, const char *name, size_t *len);

/* Blocks to launch kernel `k`: 1 for ONE, `fill` for FILL, and for EXTENT
 * ceil(extent / per_block) (at least 1), with |V| = nv, |E| = ne and the
 * symbol values `syms`. The runtime caps the result at a few waves. Returns
 * 0, or -1 after reporting an extent that cannot be evaluated. */
int cg_launch_blocks(const CgKernel *k, int64_t nv, int64_t ne,
                     const int64_t *syms, int nsyms, int64_t fill,
                     int64_t *blocks, Diag *d);

/* Frees everything `p` holds and zeroes it; safe on a zeroed program. */
void cg_program_free(CgProgram *p);

/* Writes `p` as a kernel pack: a line-based text file (a version line, the
 * op, target, symbols, tensors, kernels with their parameters and launch
 * rules, then the PTX and the IR text as counted byte blocks), through a
 * temporary file renamed into place. Returns 0 or -1 after reporting. */
int cg_pack_write(const CgProgram *p, const char *path, Diag *d);
/* Reads a kernel pack. Returns 0, or -1 after reporting `path:line: error:
 * reason`; `out` is then zeroed (nothing half-built). */
int cg_pack_read(const char *path, CgProgram *out, Diag *d);

/* ---------------------------------------------------------------------------
 * compile.c: the pipeline (needs LLVM).
 */

/* Compiles the GPU-ready `op` for `target` (NULL: CG_DEFAULT_TARGET) into
 * PTX and launch metadata. Refuses, with a message naming the construct and
 * its location, an unknown target, reductions whose `how` is still AUTO,
 * `mean=` (lowering's job), dtypes other than f32 and bindings that break
 * docs/gpu-ir.md. Returns 0, or -1 after reporting (`out` is then zeroed). */
int cg_compile(const IrOp *op, const char *target, CgProgram *out, Diag *d);
/* Whether this build has the code generator (LLVM): compile.c says yes,
 * no_llvm.c no. */
bool cg_available(void);
/* The same for `index_bits` 32 or 64: with 64, every integer of the
 * kernels (indices, loop variables, extents) is i64 and the graph's
 * offsets and edge ids are read as int64 (docs/index64.md); neighbour-group
 * loops are refused there. */
int cg_compile_bits(const IrOp *op, const char *target, int index_bits,
                    CgProgram *out, Diag *d);
/* How the edges of the graph a kernel will run on are laid out. Kernels
 * are compiled for one layout, and the runtime refuses a graph of another
 * (rt_check_layout). */
typedef struct CgLayout {
  int index_bits; /* 32 or 64 (docs/index64.md) */
  bool csr_edges; /* edge ids are CSR positions (Graph.csr_edges): an
                     in-edge's id is its position k in the CSR by
                     destination, so edge tensors are read at k and no
                     in_eid is loaded (docs/gpu-ir.md, Edge ids) */
} CgLayout;
/* The same for any layout (cg_compile_bits: {index_bits, false}). */
int cg_compile_layout(const IrOp *op, const char *target, CgLayout layout,
                      CgProgram *out, Diag *d);

/* The LLVM module of `op` as text (after default<O3> when `optimize`), for
 * `gopc emit --stage llvm`; malloc'ed, or NULL after reporting. */
char *cg_emit_llvm(const IrOp *op, const char *target, bool optimize,
                   Diag *d);
char *cg_emit_llvm_bits(const IrOp *op, const char *target, int index_bits,
                        bool optimize, Diag *d);
char *cg_emit_llvm_layout(const IrOp *op, const char *target, CgLayout layout,
                          bool optimize, Diag *d);

/* ===========================================================================
 * Internal to codegen/: the codegen context and the construct emitters.
 */
#ifdef GOP_CODEGEN_INTERNAL
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#define CG_MAX_PREFETCH 8 /* edge tensors broadcast by one @prefetch loop */

/* What codegen knows about an IR variable while emitting its scope. */
typedef struct CgVar {
  LLVMValueRef value; /* loop variables: the i32 value in the body (for
                         edge loops, the edge id) */
  LLVMValueRef src, dst; /* edge loops: the edge's endpoints */
  LLVMValueRef slot;  /* locals: their f32 alloca */
  int depth;          /* locals: the bound loops around their `var` */
  bool bound;         /* in scope */
  LLVMValueRef vslot; /* locals declared in a vector body: <n x f32> alloca */
  bool in_vec;        /* the vector copy is the live one */
  bool group_row;     /* a groups loop's row: dst(g) is its destination */
  /* a pairs loop's pair (passes/panel.c): its source in `src`, its panel's
   * first destination in `dst`, its slots' bits, the panel's P */
  LLVMValueRef mask;
  int panel;
  /* a groups loop's row, loaded at the top of its body where the body uses
   * them (loop.c, group_prologue): its edges' CSR range [gbeg, gend), its
   * destination in `dst`, and in_ptr at dst and dst + 1 for
   * in_degree(dst(g)); NULL where not loaded */
  LLVMValueRef gbeg, gend, deg[2];
  LLVMValueRef own; /* a panel row's owns(g), loaded with it */
} CgVar;

typedef struct CgCtx {
  /* LLVM handles, owned by the context (context.c disposes them) */
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTargetMachineRef tm;
  /* cached types */
  LLVMTypeRef t_void, t_i1, t_i32, t_i64, t_f32, t_gptr; /* gptr: ptr
                                                             addrspace(1) */
  LLVMTypeRef t_i16, t_f16, t_f64;
  LLVMTypeRef t_val; /* values: the op's accumulator type, f32 or f64 */
  bool wide;         /* 64-bit indices (docs/index64.md) */
  bool csr_edges;    /* edge ids are CSR positions (CgLayout) */
  LLVMTypeRef t_idx; /* IR integers: i32, or i64 when wide */
  unsigned md_invariant, md_loop; /* metadata kind ids */

  const IrOp *op;
  const char *target;
  Diag *d;
  int errors; /* reported by the emitters; the result is discarded */

  /* the kernel being built (kernel.c) */
  LLVMValueRef fn;            /* with every possible parameter; kernel.c
                                 keeps only the used ones at the end */
  LLVMBasicBlockRef entry;    /* allocas go here */
  LLVMValueRef *tensor_arg;   /* by IrTensor.id */
  bool *written;              /* by IrTensor.id: stored to by this kernel */
  LLVMValueRef graph_arg[CG_PARAM_COUNT]; /* SRC .. NE */
  LLVMValueRef *sym_arg;      /* by IrSym.id */
  CgVar *vars;                /* by IrVar.id */
  CgKernel *kernel;           /* its launch rule is set by loop.c */
  bool launch_set;
  int bound_depth;            /* enclosing bound loops */
  bool in_block, in_warp, in_lane, in_thread; /* enclosing bindings */
  int team;                  /* the enclosing @warp loop's @team(T), 0: none */
  LLVMValueRef slot_bit;     /* inside a pair_edge slot emitted without a
                                branch (loop.c, pair_edge): its bit (i32 0
                                or 1), which every `+=` into a local takes
                                as its predicate (cg_reduce_if) */
  bool wide_vec;             /* the kernel has a @vec(8) loop: 8 values a
                                vector register (kernel.c gives it more
                                registers) */
  int seq_depth;              /* enclosing sequential loops */
  /* vector.c: the body of a @vec(n) loop emitted once for n features */
  int vec;                    /* n while emitting it, else 0 */
  const IrVar *vec_var;       /* that loop's variable (bound to 0) */
  const IrNode *vec_scalar;   /* a @vec loop being emitted as scalar code */
  LLVMValueRef sh_row;        /* shared.c: the warp's accumulator row */
  LLVMValueRef *staged;       /* shared.c, by IrTensor.id: the copy of a
                                 staged input in shared memory, or NULL */
  LLVMValueRef staged_floats; /* the floats those copies take (i32), where
                                 the accumulator rows start; NULL: 0 */
  /* loop.c: inside a @prefetch edge loop, T[e] as broadcast by a shuffle
   * from the lane that loaded it (expr.c answers such loads with it) */
  struct {
    const IrVar *var;
    const IrTensor *tensor;
    LLVMValueRef value;
  } pf[CG_MAX_PREFETCH];
  int npf;
} CgCtx;

/* context.c: the context, and small helpers shared by the emitters. */
/* Creates the LLVM context, module (triple and data layout of `tm`) and
 * builder; `tm` becomes owned by the context. */
void cg_ctx_init(CgCtx *cg, const IrOp *op, const char *target,
                 LLVMTargetMachineRef tm, Diag *d);
void cg_ctx_dispose(CgCtx *cg);
/* Reports an error at `loc` and counts it. */
void cg_error(CgCtx *cg, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Calls intrinsic `name` overloaded on `over` (n types) with args. */
LLVMValueRef cg_intrinsic(CgCtx *cg, const char *name, LLVMTypeRef *over,
                          int nover, LLVMValueRef *args, int nargs);
/* A special register: "tid.x", "ctaid.x", "ntid.x", "nctaid.x". */
LLVMValueRef cg_sreg(CgCtx *cg, const char *which);
/* A new block in the current function. */
LLVMBasicBlockRef cg_block(CgCtx *cg, const char *name);
/* An alloca in the entry block (mem2reg turns it into registers). */
LLVMValueRef cg_alloca(CgCtx *cg, LLVMTypeRef ty, const char *name);
/* A load of `ty` from global `ptr`; read-only data gets !invariant.load so
 * NVPTX uses ld.global.nc. */
LLVMValueRef cg_load(CgCtx *cg, LLVMTypeRef ty, LLVMValueRef ptr,
                     bool invariant, const char *name);
LLVMValueRef cg_i32(CgCtx *cg, int64_t v);
LLVMValueRef cg_i64(CgCtx *cg, int64_t v);
/* A constant of the index type (t_idx). */
LLVMValueRef cg_idx(CgCtx *cg, int64_t v);
/* An integer value (i32 or i64) sign-extended (or truncated) to t_idx. */
LLVMValueRef cg_to_idx(CgCtx *cg, LLVMValueRef v);
/* A constant of the value type (t_val: f32, or f64 in an f64 op). */
LLVMValueRef cg_f32(CgCtx *cg, double v);

/* dtype.c: tensors' element types in memory and the conversions. */
/* The type of an element of `t` in global memory: half, i16 (bf16, handled
 * as its bits), float or double. */
LLVMTypeRef cg_elem_type(CgCtx *cg, const IrTensor *t);
/* `n` elements of `t` at `ptr` (n = 0: one scalar), converted to values
 * (t_val, or <n x t_val>). */
LLVMValueRef cg_load_elems(CgCtx *cg, const IrTensor *t, LLVMValueRef ptr, int n,
                           bool invariant);
/* Stores value `v` (t_val or <n x t_val>) to `ptr` as `t`'s elements,
 * rounded to nearest even; returns the store. */
LLVMValueRef cg_store_elems(CgCtx *cg, const IrTensor *t, LLVMValueRef v,
                            LLVMValueRef ptr);
/* The value `v` (t_val, scalar or vector) rounded to float type `to`
 * (f16(x) ...) and back. */
LLVMValueRef cg_round_to(CgCtx *cg, IrDType to, LLVMValueRef v);

/* target.c: LLVM's NVPTX target. */
/* A target machine for `target` (validated first). NULL after reporting. */
LLVMTargetMachineRef cg_target_machine(const char *target, Diag *d);
/* Runs default<O3> on the module. Returns 0 or -1 after reporting. */
int cg_optimize(CgCtx *cg);
/* PTX text of the module, malloc'ed, or NULL after reporting. */
char *cg_emit_ptx(CgCtx *cg, size_t *len);

/* kernel.c: one kernel per stage. */
/* Builds stage `index` (the top-level statement `stage`) as a kernel and
 * fills `k` (name, threads, parameters, launch). Returns 0 or -1. */
int cg_kernel(CgCtx *cg, const IrNode *stage, int index, CgKernel *k);
/* The parameter of kind `kind` (for TENSOR and SYM: of `id`). */
LLVMValueRef cg_param(CgCtx *cg, CgParamKind kind, int id);
/* A scalar parameter (NV, NE, NGROUPS, SYM) as an IR integer (t_idx). */
LLVMValueRef cg_param_idx(CgCtx *cg, CgParamKind kind, int id);

/* stmt.c: statement lists, locals, guards. */
void cg_stmts(CgCtx *cg, const IrNode *list);

/* loop.c: sequential and bound loops over ranges, vertices and edges. */
void cg_loop(CgCtx *cg, const IrNode *loop);
/* The extent of a range loop's bound as a CgExpr; false if it uses
 * anything but constants, symbols, |V| and |E|. */
bool cg_extent_expr(const IrNode *e, CgExpr *out);

/* expr.c: expressions. Values are i32 (IR_TY_INT), f32 (IR_TY_FLOAT) or
 * i1 (IR_TY_BOOL). */
LLVMValueRef cg_expr(CgCtx *cg, const IrNode *e);
/* The expression converted to `want`. */
LLVMValueRef cg_expr_as(CgCtx *cg, const IrNode *e, IrType want);
/* The f32 value of `e`, fusing `a * b + c` into llvm.fmuladd when
 * `contract` (only sums are contracted, so max=/min= stay exact). */
LLVMValueRef cg_expr_float(CgCtx *cg, const IrNode *e, bool contract);
/* old + value (an fma where value is a product) where `bit` (i32) is 1,
 * old where it is 0, through predicated PTX: a select of each element
 * would cost as much as the additions (store.c). */
LLVMValueRef cg_reduce_if(CgCtx *cg, LLVMValueRef bit, LLVMValueRef old, const IrNode *value);
/* The binding of `g` where it is a bound groups loop's variable (an
 * IR_VAR), else NULL: its row's loaded values, if any. */
const CgVar *cg_group_row(const CgCtx *cg, const IrNode *g);
/* Element `idx` (an index, t_idx) of graph array `kind`, read-only, as an
 * index (t_idx). */
LLVMValueRef cg_graph_at(CgCtx *cg, CgParamKind kind, LLVMValueRef idx,
                         const char *name);
/* The address of element `idx` of `t`, with the linear offset in i64. */
LLVMValueRef cg_address(CgCtx *cg, const IrTensor *t, int nidx,
                        IrNode *const *idx, Loc loc);

/* vector.c: @vec(n) loops as n-wide vector code (docs/gpu-ir.md). */
/* Emits @vec loop `l` as a vector body behind a run-time test, with the
 * scalar loop as fallback; false (nothing emitted) when its body has
 * something the vector emitter does not handle. */
bool cg_vec_loop(CgCtx *cg, const IrNode *l);
/* Whether access (LOAD or STORE) `acc` is a vector access here. */
bool cg_vec_access(const CgCtx *cg, const IrNode *acc);
/* `v` as an n-wide vector, splatting a scalar. */
LLVMValueRef cg_vec_splat(CgCtx *cg, LLVMValueRef v);
/* Whether guard condition `cond` uses the vector loop's variable (the
 * entry test covers it: the vector body takes its branch). */
bool cg_vec_guard(const CgCtx *cg, const IrNode *cond);

/* math.c: element-wise functions, libdevice-free. */
LLVMValueRef cg_math(CgCtx *cg, IrFn fn, LLVMValueRef *args, int nargs);
LLVMValueRef cg_max(CgCtx *cg, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef cg_min(CgCtx *cg, LLVMValueRef a, LLVMValueRef b);

/* store.c: stores, plain and atomic reductions. */
void cg_store(CgCtx *cg, const IrNode *s);
/* An atomic `*ptr red= val` on global f32 memory (+=, max=, min=). */
void cg_atomic(CgCtx *cg, IrRed red, LLVMValueRef ptr, LLVMValueRef val);

/* shared.c: a @shared groups loop (block-synchronous, leader flush) and its
 * `shared` stores. */
void cg_shared_groups(CgCtx *cg, const IrNode *loop);
void cg_shared_store(CgCtx *cg, const IrNode *s);
/* At a kernel's start: copies every `@shared` input that `stage` reads
 * into shared memory (the block's threads together, then a barrier) and
 * points cg->staged at the copies. */
void cg_shared_stage(CgCtx *cg, const IrNode *stage);
/* Evaluates `value` and combines it into `old` by `red` (ASSIGN: the
 * value; old may then be NULL), fusing `old + a * b` into llvm.fmuladd. */
LLVMValueRef cg_reduce(CgCtx *cg, IrRed red, LLVMValueRef old,
                       const IrNode *value);

#endif /* GOP_CODEGEN_INTERNAL */

#endif
