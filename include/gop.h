/* gop.h: the public C API of gop, a compiler for GNN graph operators.
 *
 * Everything a framework, the `gopc` command or the REPL needs goes through
 * this header. Objects belong to a GopContext: they are freed with it, and
 * every error they report lands in its diagnostics (gop_diagnostics) as
 * `file:line:col: error: message` lines. Functions that can fail return
 * NULL or a negative number and never abort on bad input.
 *
 *   GopContext *ctx = gop_context_new();
 *   GopModule *m = gop_compile_file(ctx, "ops.gop");   // or gop_stdlib(ctx)
 *   GopOp *op = gop_module_find_op(m, "u_mul_e_sum");
 *   GopGraph *g = gop_graph_open(ctx, "rmat:16:8");     // or a .mtx[.gz]
 *   GopRun *r = gop_run_new(ctx, op, g);
 *   gop_run_set_extent(r, "F", 64);
 *   gop_run_bind(r, "X", x, nx);  gop_run_bind(r, "W", w, nw);
 *   gop_run_bind(r, "Y", y, ny);
 *   if (gop_run_exec(r) != 0) fputs(gop_diagnostics(ctx), stderr);
 *   gop_context_free(ctx);
 */
#ifndef GOP_H
#define GOP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GOP_VERSION "0.1.0"

typedef struct GopContext GopContext;
typedef struct GopModule GopModule;
typedef struct GopOp GopOp;
typedef struct GopGraph GopGraph;
typedef struct GopRun GopRun;

/* ---- contexts and diagnostics ---- */

/* A new context; NULL only when memory runs out. */
GopContext *gop_context_new(void);
/* Frees the context and everything made from it. */
void gop_context_free(GopContext *ctx);
/* Echo diagnostics to `out` as they are reported (NULL: keep them only). */
void gop_set_diagnostic_stream(GopContext *ctx, FILE *out);
/* All diagnostics reported since the last gop_clear_diagnostics ("" if
 * none). The string belongs to the context. */
const char *gop_diagnostics(const GopContext *ctx);
int gop_error_count(const GopContext *ctx);
void gop_clear_diagnostics(GopContext *ctx);

/* ---- compiling operators ---- */

/* Parses and checks .gop source; `name` is the file name used in
 * diagnostics. NULL if the source has errors. */
GopModule *gop_compile_string(GopContext *ctx, const char *name,
                              const char *source);
/* The same for a file; NULL if it cannot be read or has errors. */
GopModule *gop_compile_file(GopContext *ctx, const char *path);
/* Every operator and schedule of the standard library. */
GopModule *gop_stdlib(GopContext *ctx);

int gop_module_num_ops(const GopModule *m);
GopOp *gop_module_op(const GopModule *m, int i);
/* NULL (and an error naming the operators there are) when absent. */
GopOp *gop_module_find_op(const GopModule *m, const char *name);
const char *gop_op_name(const GopOp *op);
/* `name(X: f32[src, F], W: f32[edge]) -> Y: f32[dst, F]`; the string
 * belongs to the context. */
const char *gop_op_signature(const GopOp *op);

/* The stages of a compilation, each with a text form:
 *   ast      the syntax tree of the operator's file
 *   ir       the checked loop-nest IR
 *   sched    the IR after the schedule's primitives
 *   lowered  the GPU-ready IR (docs/gpu-ir.md) after the lowering passes
 *   llvm     the LLVM module after default<O3>
 *   ptx      the PTX the NVPTX backend emits */
typedef enum {
  GOP_STAGE_AST,
  GOP_STAGE_IR,
  GOP_STAGE_SCHED,
  GOP_STAGE_LOWERED,
  GOP_STAGE_LLVM,
  GOP_STAGE_PTX
} GopStage;

/* How an operator is compiled for the GPU; zero means every default. */
typedef struct GopCompileOptions {
  const char *schedule;   /* "warp_vertex(1, 2)" or directives; NULL: the
                             default schedule */
  const char *target;     /* sm_80, sm_86, sm_89, sm_90; NULL: the GPU
                             found, else sm_90 */
  const char *dump_after; /* print the IR after this lowering pass */
  FILE *dump;             /* where (NULL: stdout) */
} GopCompileOptions;

/* Milliseconds spent in each step of the last compilation. */
typedef struct GopCompileTimes {
  double schedule_ms, lower_ms, llvm_build_ms, llvm_opt_ms, ptx_emit_ms;
} GopCompileTimes;

/* Text of a stage, malloc'ed (the caller frees it); NULL on error.
 * AST is per source file: the module's whole file. */
char *gop_emit(const GopOp *op, GopStage stage);
/* The same, compiling with `o` (may be NULL). */
char *gop_emit_with(const GopOp *op, GopStage stage, const GopCompileOptions *o);
/* Parses `name` to a stage; -1 if unknown. */
int gop_stage_lookup(const char *name);
/* Times of the last compilation in `ctx` (zero before any). */
void gop_compile_times(const GopContext *ctx, GopCompileTimes *out);
/* Compiles `op` and writes a kernel pack (PTX plus what launching it
 * needs) to `path`, for running on a machine without LLVM. 0 or -1. */
int gop_pack(const GopOp *op, const GopCompileOptions *o, const char *path);

/* The lowering passes, in the order they run. */
int gop_pass_count(void);
const char *gop_pass_name(int i);
const char *gop_pass_summary(int i);

/* ---- graphs ---- */

typedef struct GopGraphInfo {
  int64_t num_vertices, num_edges;
  double degree_mean, in_degree_std;
  int64_t in_degree_max, out_degree_max, isolated, self_loops;
  double aes; /* average edge span (GNNAdvisor) */
} GopGraphInfo;

/* A graph from a Matrix Market or SNAP file (plain or .gz) or a generator
 * spec `rmat:SCALE:EDGEFACTOR[:SEED]` / `grid:WxH`. NULL on error. */
GopGraph *gop_graph_open(GopContext *ctx, const char *spec);
void gop_graph_info(const GopGraph *g, GopGraphInfo *info);
/* Writes a human-readable summary line of the graph to `out`. */
void gop_graph_print(const GopGraph *g, FILE *out);

/* ---- running an operator ---- */

/* Binds an operator to a graph; set extents, bind buffers, then exec. */
GopRun *gop_run_new(GopContext *ctx, const GopOp *op, const GopGraph *g);
/* Sets a symbolic extent (F, H ...). -1 if the operator has no such
 * symbol or the value is not positive. */
int gop_run_set_extent(GopRun *r, const char *sym, int64_t value);
/* The operator and graph of a run. */
const GopOp *gop_run_op(const GopRun *r);
const GopGraph *gop_run_graph(const GopRun *r);
/* Number of tensors the caller binds (inputs, then outputs). */
int gop_run_num_tensors(const GopRun *r);
const char *gop_run_tensor_name(const GopRun *r, int i);
bool gop_run_tensor_is_output(const GopRun *r, int i);
/* Shape of tensor `i` given the extents set so far: returns the rank and
 * fills shape[0..rank), or -1 if an extent it needs is not set. */
int gop_run_tensor_shape(const GopRun *r, int i, int64_t shape[8]);
/* Binds float32 data (row-major) to the tensor named `name`; `numel` must
 * equal its size. The data stays the caller's. -1 on a mismatch. */
int gop_run_bind(GopRun *r, const char *name, float *data, int64_t numel);
/* Where a run executes. AUTO: the GPU when there is one, else the
 * reference interpreter (and gop_run_stats says why). */
typedef enum { GOP_DEVICE_AUTO, GOP_DEVICE_INTERP, GOP_DEVICE_GPU } GopDevice;
void gop_run_set_device(GopRun *r, GopDevice dev);
/* Compile options for GPU runs (copied). 0, or -1 on an unknown target. */
int gop_run_set_compile(GopRun *r, const GopCompileOptions *o);
/* GPU timing: runs before measuring, and measured runs (the median is
 * reported). Default 3 and 20; reps 0 runs once without timing. */
void gop_run_set_timing(GopRun *r, int warmup, int reps);
/* A run of the kernel pack at `path` (see gop_pack) on `g`: needs no LLVM.
 * Its tensors and extents are those of the packed operator. */
GopRun *gop_run_from_pack(GopContext *ctx, const char *path, const GopGraph *g);

/* Runs the operator; outputs are written in full. 0 on success, -1 after
 * reporting an error. */
int gop_run_exec(GopRun *r);
/* Seconds the last gop_run_exec took (wall clock, compilation included). */
double gop_run_seconds(const GopRun *r);

typedef struct GopRunStats {
  bool on_gpu;
  int gpu_status;        /* 0, or why the GPU could not be used: 3 no CUDA
                            driver, 4 no CUDA device, 5 out of memory */
  char device[128];      /* "NVIDIA H100 80GB HBM3" or "interpreter" */
  char note[256];        /* e.g. why the interpreter ran */
  char target[16];       /* sm_90 ... */
  char schedule[256];    /* the schedule as given, or "default" */
  double median_ms, min_ms; /* GPU: the op, initialisation included */
  uint64_t fewest_bytes; /* inputs once, outputs once, CSR once */
  double gbps;           /* fewest_bytes / median time */
  double copy_gbps;      /* measured device-to-device copy bandwidth */
  double bound_fraction; /* gbps / copy_gbps */
  GopCompileTimes compile;
} GopRunStats;

/* What the last gop_run_exec did. */
const GopRunStats *gop_run_stats(const GopRun *r);
/* Device memory of the last GPU run: each graph format, the tensors, the
 * peak (nothing if it ran on the interpreter). */
void gop_run_print_memory(const GopRun *r, FILE *out);
/* Recomputes the outputs on the interpreter from the same inputs and
 * compares: float sums within 1e-5 relative L2, max/min exactly, NaN never
 * equal. Returns 0 if every output agrees, 1 if one does not (reported
 * with the worst element), -1 on error. `worst` gets the largest relative
 * L2 error seen (may be NULL). */
int gop_run_check(GopRun *r, double *worst);

/* ---- REPL support ---- */

/* The named schedules an operator can use: its own file's first, then the
 * standard library's (the order `--schedule NAME(...)` looks them up). */
int gop_op_num_schedules(const GopOp *op);
/* Schedule `i` as `warp_vertex(G, T)`; the name is what precedes '('. The
 * string belongs to the context; NULL when `i` is out of range. */
const char *gop_op_schedule_signature(const GopOp *op, int i);
/* The distinct loop names of `op` after `schedule` (NULL or "": the
 * operator as written), space-separated in order of first appearance, e.g.
 * "v e fo fi"; malloc'ed (the caller frees it). NULL after reporting when
 * the schedule is refused. */
char *gop_op_loop_names(const GopOp *op, const char *schedule);
/* Appends `schedule` (directives joined by "; ") to the .gop file `path` as
 * `schedule NAME() { ... }`, one directive a line, creating the file if it
 * does not exist. The file is rewritten through a temporary file, so its
 * other content is never lost; refused (-1 after reporting) when NAME is
 * not an identifier, the schedule is empty, or the file with the block
 * added would not compile (a NAME already there, say). 0 on success. */
int gop_save_schedule(GopContext *ctx, const char *path, const char *name,
                      const char *schedule);

/* ---- arrays in NumPy .npy files ---- */

typedef struct GopArray {
  int ndim;
  int64_t shape[8];
  float *data; /* malloc'ed; gop_array_free releases it */
} GopArray;

/* Reads a float32 (or float64, converted) C-order .npy file; 0 or -1. */
int gop_array_read(GopContext *ctx, const char *path, GopArray *out);
/* Writes float32 .npy through a temporary file: never leaves a truncated
 * file behind. 0 or -1. */
int gop_array_write(GopContext *ctx, const char *path, const GopArray *a);
void gop_array_free(GopArray *a);

/* ---- tuning ---- */

/* Where a chosen schedule came from. (A learned predictor, issue 6's
 * XGBoost model, would sit between the two; it is not built yet.) */
typedef enum {
  GOP_SCHEDULE_FROM_DATABASE, /* measured: the fastest stored for this key */
  GOP_SCHEDULE_FROM_MODEL     /* the analytical cost model's best point */
} GopScheduleSource;

typedef struct GopScheduleChoice {
  char schedule[128];       /* "warp_edge(4, 2)", as --schedule takes it */
  GopScheduleSource source;
  double model_us;          /* the cost model's estimate for it */
  double measured_ms;       /* the database's time (0 from the model) */
  int candidates;           /* legal points of the operator's search space */
} GopScheduleChoice;

/* "database" or "cost model". */
const char *gop_schedule_source_name(GopScheduleSource s);
/* Chooses the schedule for `op` on `g` at feature width F (ignored by
 * operators without one): the fastest one measured in the tuning database
 * `db_path` (NULL: none) under this operator's IR, F, f32, the graph's
 * signature, the GPU found (or none) and this gop's version; else the cost
 * model's best legal point. 0, or -1 after reporting (a database that
 * cannot be opened, or is refused, is an error, not skipped). */
int gop_choose_schedule(const GopOp *op, const GopGraph *g, int64_t F,
                        const char *db_path, GopScheduleChoice *out);

#ifdef __cplusplus
}
#endif
#endif
