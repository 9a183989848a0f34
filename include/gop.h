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

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GOP_VERSION "0.1.0"

/* sizeof the public struct `name` ("GopGraphInfo", "GopCompileOptions",
 * ...) in this build, or 0 for a name it does not know: bindings that lay
 * the structs out themselves (the Python package's ctypes classes) check
 * theirs against it, since a struct short by a field lets the library
 * write past the caller's buffer. */
size_t gop_struct_size(const char *name);

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
/* The comment block right above the operator's definition, `#` and one
 * space stripped from each line, lines joined by '\n' ("" if none). The
 * stdlib's start with `DGL NAME: what it computes` (docs/operators.md). */
const char *gop_op_doc(const GopOp *op);
/* Whether a standard-library operator is in its representative subset:
 * the hand-written ones and a few generated ones that between them cover
 * every edge_op, gather, placement and broadcast (for test matrices that
 * cannot afford all of them; `gopc ops --representative`). False for
 * operators of other files. */
bool gop_op_representative(const GopOp *op);

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
  int index_bits;         /* kernels of 32- or 64-bit indices (graphs past
                             2^31 edges, docs/index64.md); 0: 64 when the
                             environment has GOP_INDEX64=1, else 32. Runs
                             choose it from their graph and ignore this */
  int csr_edges;          /* 1: kernels for graphs whose edge ids are their
                             CSR positions (arcs sorted by destination, or
                             any reordered graph): an in-edge's id is its
                             position, and no edge-id array is read; they
                             refuse other graphs. Runs choose it from their
                             graph (GOP_CSR_EDGES=0 turns it off) and ignore
                             this (docs/gpu-ir.md, Edge ids) */
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
  double locality; /* gathered rows whose 32-vertex block was gathered for
                      one of the 32 previous destinations (docs/reordering.md) */
  int csr_edges;   /* 1: edge ids are CSR positions (arcs sorted by
                      destination, or a reordered graph), so kernels read
                      edge tensors with no edge-id load (docs/gpu-ir.md) */
} GopGraphInfo;

/* A graph from a Matrix Market or SNAP file (plain or .gz), a binary
 * .gopg file (memory-mapped; docs/graph-format.md) or a generator spec
 * `rmat:SCALE:EDGEFACTOR[:SEED]` / `grid:WxH`. NULL on error. */
GopGraph *gop_graph_open(GopContext *ctx, const char *spec);
/* Frees a graph of `ctx` (gop_graph_open, _reorder, _from_arcs), its host
 * formats, its device copy and neighbour-group tables, now rather than with
 * the context: for a job that makes a graph per step. The runs on it must
 * be freed first, and their streams waited for; a partition made from it,
 * or a model on it, freed first too. 0, or -1 after reporting (runs on it
 * remain, or it is not this context's); NULL: 0. The context frees the
 * graphs left. */
int gop_graph_free(GopContext *ctx, GopGraph *g);
void gop_graph_info(const GopGraph *g, GopGraphInfo *info);
/* Writes a human-readable summary line of the graph to `out`. */
void gop_graph_print(const GopGraph *g, FILE *out);
/* The graph with its vertices renumbered for locality (docs/reordering.md):
 * `method` is none, degree, rcm, metis[:PARTS], community or auto
 * (GNNAdvisor's AES rule). The new graph remembers the permutation: a run
 * on it takes and gives vertex tensors in the ORIGINAL vertex order and
 * edge tensors in the original edge order, permuting them in and out
 * around the kernels, so a caller never sees the new numbering (only
 * gop_graph_arcs and gop_graph_info describe the reordered graph). NULL
 * after reporting an unknown method or, for metis, a build without METIS. */
GopGraph *gop_graph_reorder(GopContext *ctx, const GopGraph *g, const char *method);
/* NULL if `method` is a reordering method gop_graph_reorder takes, else
 * what is wrong with it (a constant string), for a caller's usage error. */
const char *gop_reorder_method_problem(const char *method);
/* The method a reordered graph was made with ("rcm", "metis:166",
 * "auto=community" ...), or NULL for a graph in its own order. */
const char *gop_graph_order(const GopGraph *g);
/* The maps of a reordered graph: vertex v of the original is
 * (*new_of_old)[v] here, edge e here is edge (*edge_old)[e] there (arrays
 * belong to the graph; either pointer may be NULL). -1 if g is not
 * reordered, else |V|. */
long gop_graph_permutation(const GopGraph *g, const int32_t **new_of_old,
                           const int64_t **edge_old);
/* Seconds computing the order and rebuilding the graph took (0 if not
 * reordered). */
double gop_graph_reorder_seconds(const GopGraph *g);
/* Writes the graph's arcs as a Matrix Market `coordinate pattern general`
 * file (1-based, edge-id order) through a temporary file. 0 or -1. */
int gop_graph_write_mtx(GopContext *ctx, const GopGraph *g, const char *path);
/* Writes the graph as a binary .gopg file (COO, CSR, CSC and statistics,
 * checksummed; docs/graph-format.md) through a temporary file renamed into
 * place. 0 or -1. */
int gop_graph_write_gopg(GopContext *ctx, const GopGraph *g, const char *path);

/* ---- partitions: a graph over several GPUs (docs/multigpu.md) ----
 * A partition splits a graph's destinations over P parts; part k keeps the
 * in-edges of the vertices it owns, and the remote source rows those edges
 * read are its halo. Part k's graph numbers its vertices own first, then
 * halo (grouped by owner part); its edges are in the whole graph's edge-id
 * order. Method "edges" (the default): contiguous destination ranges
 * balanced by in-edges; "metis": METIS k-way parts. Deterministic: every
 * process computes the same partition. */
typedef struct GopPartition GopPartition;
typedef struct GopPartInfo {
  int64_t num_own, num_halo;   /* owned vertices; remote rows its edges read */
  int64_t num_edges;           /* the in-edges of its own vertices */
  int64_t num_remote_edges;    /* of which from a halo row */
  const int32_t *rows;         /* num_own + num_halo global vertex ids */
  const int64_t *eids;         /* num_edges global edge ids, increasing */
  const int32_t *halo_from;    /* P + 1: halo rows owned by part q are
                                  halo_from[q]..halo_from[q+1] (halo
                                  positions, from 0) */
} GopPartInfo;
/* NULL after reporting: a bad count (1..1024, at most |V|), an unknown
 * method (NULL: "edges"), a reordered graph, no METIS. */
GopPartition *gop_graph_partition(GopContext *ctx, const GopGraph *g, int parts,
                                  const char *method);
/* NULL if `method` is one gop_graph_partition takes, else why not. */
const char *gop_partition_method_problem(const char *method);
void gop_partition_free(GopPartition *p); /* part graphs stay the context's */
int gop_partition_parts(const GopPartition *p);
int64_t gop_partition_cut(const GopPartition *p); /* edges across parts */
const int32_t *gop_partition_owner(const GopPartition *p); /* |V| part ids */
/* Part k's sizes and maps (arrays belong to the partition). 0 or -1. */
int gop_partition_part(const GopPartition *p, int k, GopPartInfo *out);
/* Part k as a graph (made once; the context owns it). NULL after reporting. */
GopGraph *gop_partition_graph(const GopPartition *p, int k);
/* The edge cut, each part's vertices, edges and halo, and the balance. */
void gop_partition_print(const GopPartition *p, FILE *out);
/* Runs `r` (host arrays bound, extents set) part by part on the reference
 * interpreter, as a multi-GPU run would on P GPUs: each part's inputs are
 * gathered from the bound whole tensors (own and halo rows, its edges),
 * the operator runs on its graph, and its outputs are put back (dst rows
 * it owns, its edges; outputs on src are the sum of the parts' shares).
 * Refused (-1 after reporting, at the construct) for an operator that
 * reads out_degree, num_vertices or num_edges, has a dense output, or
 * stores into a src output other than by adding. 0 on success. */
int gop_run_exec_partitioned(GopRun *r, const GopPartition *p);

/* ---- running an operator ---- */

/* Binds an operator to a graph; set extents, bind buffers, then exec. */
GopRun *gop_run_new(GopContext *ctx, const GopOp *op, const GopGraph *g);
/* Frees a run now rather than with its context: its prepared launch and
 * temporaries on the device, its program when it holds its own (a pack's)
 * and its host memory. Wait for its stream first (gop_run_sync). Kernels
 * in the context's cache stay there for other runs. NULL: nothing. */
void gop_run_free(GopRun *r);
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
/* The dtype of tensor `i`: "f32", "f16", "bf16" or "f64". */
const char *gop_run_tensor_dtype(const GopRun *r, int i);
/* Binds data (row-major, elements of the tensor's dtype: float for f32,
 * double for f64, the 16-bit patterns for f16 and bf16) to the tensor named
 * `name`; `numel` must equal its size. The data stays the caller's. -1 on
 * a mismatch. */
int gop_run_bind(GopRun *r, const char *name, void *data, int64_t numel);
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
  double median_ms, min_ms; /* GPU: the op, initialisation included, a call
                            (replays of a captured CUDA graph of many calls,
                            or events where a capture failed: timed_calls) */
  uint64_t fewest_bytes; /* inputs once, outputs once, CSR once */
  double gbps;           /* fewest_bytes / median time */
  double copy_gbps;      /* measured device-to-device copy bandwidth */
  double bound_fraction; /* gbps / copy_gbps */
  GopCompileTimes compile;
  int timed_calls;       /* GPU: calls per replay of the captured CUDA graph
                            the times come from (0: timed with events, a run
                            a repetition) */
} GopRunStats;

/* What the last gop_run_exec did. */
const GopRunStats *gop_run_stats(const GopRun *r);
/* Device memory of the last GPU run: each graph format, the tensors, the
 * peak (nothing if it ran on the interpreter). */
void gop_run_print_memory(const GopRun *r, FILE *out);
/* The kernels of the last GPU run as the driver compiled them: each one's
 * registers a thread, its local memory where it spills, and the occupancy
 * floor where the runtime lowered the one asked for because the JIT
 * spilled at it (docs/index64.md); nothing if it ran on the interpreter. */
void gop_run_print_kernels(const GopRun *r, FILE *out);
/* Recomputes the outputs on the interpreter from the same inputs and
 * compares: float sums within 1e-5 relative L2, max/min exactly, NaN never
 * equal. An element that is a sum of n stored terms may first differ by
 * 2 sqrt(n) 2^-24 sum|terms| (a summation in another order:
 * docs/gopc.md, --check); only the difference beyond that counts. Returns
 * 0 if every output agrees, 1 if one does not (reported with the worst
 * element), -1 on error. `worst` gets the largest relative L2 error seen beyond that
 * allowance (may be NULL). */
int gop_run_check(GopRun *r, double *worst);

/* ---- gradients (docs/autodiff.md) ---- */

/* Derives the gradient operators of `op` in the IR: one per input named in
 * `wrt` (comma-separated, e.g. "X,W"; NULL or "" for every floating-point
 * input), in that order, each named OP_grad_X and returned in a new module
 * usable like any other (gop_module_op, gop_emit, gop_run_new, tuning).
 * A gradient operator's inputs are the forward inputs it reads, the
 * forward outputs it reads (saved results: max=, edge softmax) under their
 * own names, and the adjoints of the outputs (gop_grad_adjoint); its one
 * output is the adjoint of the input. NULL after reporting: an unknown
 * input, an integer one, or a construct with no derivative in the IR
 * (file:line:col of the construct). */
GopModule *gop_grad(const GopOp *op, const char *wrt);
/* The same inputs, as one operator OP_grad_X_W with one output per input
 * (dX, dW, in the order given): what the gradients share (recomputed
 * temporaries, adjoints of temporaries, passes over the same edges) is
 * computed once. A module holding that one operator; NULL after
 * reporting. */
GopModule *gop_grad_joint(const GopOp *op, const char *wrt);
/* For an operator of gop_grad's module: the name of the tensor holding the
 * adjoint of the forward operator's tensor `forward_tensor` (an output it
 * reads, or the input it differentiates against); NULL if it has none. */
const char *gop_grad_adjoint(const GopOp *grad, const char *forward_tensor);
/* For an operator of gop_grad's module: the forward operator; NULL for any
 * other operator. */
const GopOp *gop_grad_forward(const GopOp *grad);
/* The per-edge intermediates `op` (any operator, derived or not) moves, as
 * text: each tensor on the edges it reads or writes, the number of stages
 * that read it and that write it (each one pass over the tensor), and the
 * total in bytes per pass elements, e.g. "total: 12 |E|·H bytes"
 * (docs/autodiff.md, "Edge traffic"). malloc'ed: free() it; NULL for a
 * NULL op. */
char *gop_edge_traffic(const GopOp *op);
/* Runs the operator of `r` as written (no schedule) on the reference
 * interpreter in double precision, with the run's extents: data[i] is the
 * buffer of tensor i (n = gop_run_num_tensors: inputs, then outputs;
 * row-major, gop_run_tensor_shape's shape; outputs written entirely).
 * Buffers bound with gop_run_bind are not used. For checks such as
 * gradients against finite differences (python/gop's Operator.f64). 0, or
 * -1 after reporting (a missing extent or buffer, a reordered graph). */
int gop_run_exec_f64(GopRun *r, double *const *data, int n);

/* ---- runs on device memory (api/device.c) ----
 *
 * For frameworks whose tensors already live on the GPU (PyTorch, CuPy, a
 * runtime-API program): bind the caller's device pointers and stream, then
 * launch. Nothing is copied and nothing waits: the kernels are queued in
 * the stream and the call returns. gop uses the device's primary context
 * (the one the CUDA runtime uses), so runtime-API pointers and streams are
 * valid as they are. The graph goes to the device at the first launch on
 * it and stays there (with its group tables) until the context is freed;
 * the kernels come from the context's kernel cache (below), so a second
 * launch costs only the launch. Device pointers are checked once per
 * pointer (cuPointerGetAttributes): host memory, memory of another device
 * or an allocation too small for the tensor are refused with a message.
 *
 *   gop_run_set_extent(r, "F", 64);
 *   gop_run_bind_device(r, "X", x_dev, nv * 64);
 *   gop_run_bind_device(r, "Y", y_dev, nv * 64);
 *   gop_run_set_stream(r, stream);        // a CUstream / cudaStream_t
 *   gop_run_launch(r);                    // asynchronous
 */
typedef uint64_t GopDevicePtr; /* a CUdeviceptr; (GopDevicePtr)(uintptr_t)p
                                  for a runtime-API void* */

/* Binds device memory to the tensor called `name` (float32, row-major,
 * `numel` elements, which must equal its size). -1 on a mismatch or a NULL
 * pointer (checked against the device at the next launch). */
int gop_run_bind_device(GopRun *r, const char *name, GopDevicePtr ptr, int64_t numel);
/* The stream later launches queue in (NULL: the legacy default stream).
 * Checked against gop's context at the next launch. */
void gop_run_set_stream(GopRun *r, void *stream);
/* Finds or compiles the run's kernels (the kernel cache, in memory then on
 * disk) and, with a GPU, prepares the launch on its graph (uploading the
 * graph formats and tables it needs). Without a GPU it only fills the
 * cache: with a cache folder set, this is how kernel packs are made for a
 * machine without LLVM. 0, or -1 after reporting. */
int gop_run_prepare(GopRun *r);
/* Launches the run on its bound device pointers in its stream, without
 * waiting. 0, or -1 after reporting (with no GPU, gop_run_stats says why
 * in gpu_status). */
int gop_run_launch(GopRun *r);
/* The per-call path for bindings: binds `ptrs[i]` to tensor i (the order
 * of gop_run_tensor_name; `n` must be gop_run_num_tensors), sets `stream`,
 * and launches, all in one call. */
int gop_run_launch_ptrs(GopRun *r, const GopDevicePtr *ptrs, int n, void *stream);
/* Waits for everything queued in the run's stream; reports a kernel that
 * failed. 0 or -1. */
int gop_run_sync(GopRun *r);

/* ---- graphs built on the device (docs/graph-format.md) ----
 * A framework holding an edge_index on the GPU builds the formats there
 * (sorting and counting in its own stream: gop.Graph.from_edge_index does)
 * and hands gop the device arrays, which become the graph's device copy:
 * nothing is copied, and gop never frees them (the caller keeps them until
 * gop_graph_free, or the context, frees the graph). The host holds the sizes and the
 * statistics given (what choosing a schedule reads) but no arrays, so what
 * needs them refuses such a graph with a message: runs on host buffers
 * (the interpreter), neighbour-group schedules, reordering, partitions,
 * writing it, gop_graph_arcs. Runs on device pointers work as on any
 * graph. */
typedef struct GopDeviceGraph {
  int64_t num_vertices, num_edges;
  int index_bits; /* of the offsets and edge ids: gop_graph_device_index_bits */
  GopDevicePtr src, dst;                  /* int32 [E]: arcs by edge id */
  GopDevicePtr in_ptr, in_eid, in_src;    /* CSR by destination, each vertex's
                                             in-edges in edge-id order: [V+1]
                                             and [E] of index_bits, [E] int32 */
  GopDevicePtr out_ptr, out_eid, out_dst; /* CSC by source, likewise */
  GopDevicePtr in_deg, out_deg;           /* int32 [V] */
  /* GopGraphInfo's statistics (degree_mean and locality are not asked) */
  double in_degree_std, aes;
  int64_t in_degree_max, out_degree_max, isolated, self_loops;
  int csr_edges; /* 1 when in_eid[k] == k for every k (else 0: always right) */
} GopDeviceGraph;
/* The width (32 or 64) the offsets and edge ids of a graph of nv vertices
 * and ne edges take on the device: 64 past 2^31 - 1 edges or with
 * GOP_INDEX64=1 (docs/index64.md). */
int gop_graph_device_index_bits(int64_t nv, int64_t ne);
/* A graph whose arrays are `dg`'s device memory (checked to be memory of
 * gop's device, large enough), named `name` (NULL: "device graph"). NULL
 * after reporting: no GPU, bad sizes or width, a pointer that is not
 * device memory. */
GopGraph *gop_graph_from_device(GopContext *ctx, const GopDeviceGraph *dg, const char *name);

/* A neighbour-group table (docs/scheduling.md: group(e, G) and interleave):
 * rows of at most G in-edges of one destination, in the order the
 * schedule's warps take them. A graph built on the host has its tables
 * built there (graph/groups.c); one built on the device has them built on
 * the device by the builder its maker gave it (gop.Graph.from_edge_index
 * gives one: torch, in the current stream), to the same rules: bit for bit
 * the host's table in destination order (GOP_GROUP_ORDER=dst; the
 * community order is the host's only). */
typedef struct GopGroupTable {
  /* what is asked: G, the interleaving distance (0: none), the classes
   * (2..8 when interleaved, else 0) and the degree threshold of two
   * classes (resolved: the mean in-degree rounded up when none was
   * given; else 0), and the width of first, end, vptr and vrow (64 on
   * the host; on the device the graph's, gop_graph_device_index_bits) */
  int group_size, distance, classes, threshold, index_bits;
  int on_device; /* 1: the addresses are device memory; 0: host memory */
  int order;     /* the destinations' order: 0 destination, 1 community */
  int64_t rows, unowned_count;
  int64_t class_rows[8]; /* interleaved, by class, heaviest first: rows */
  int32_t class_min[8];  /* ... and the least in-degree it takes */
  /* by row: destination (int32), CSR positions [first, end); vptr [V+1]
   * and vrow [rows]: each destination's rows in table order; unowned
   * (int32 [unowned_count]): the destinations of in-degree 0 or above G */
  uint64_t dst, first, end, vptr, vrow, unowned;
} GopGroupTable;
/* Makes on the device the table t->group_size, distance, classes,
 * threshold (resolved) and index_bits ask for, and fills in the rest
 * (on_device 1, order 0); the memory is the builder's and must live until
 * the graph is freed. 0, or -1 after writing the reason to why (size
 * why_size). Called with the context's lock held: it must not call gop. */
typedef int (*GopGroupBuilder)(void *user, GopGroupTable *t, char *why, size_t why_size);
/* Gives a graph built on the device (gop_graph_from_device) the builder
 * of its group tables, so that neighbour-group schedules run on it (and
 * schedule choice may pick them); NULL takes it away. Tables built by an
 * earlier builder are forgotten. 0, or -1 after reporting (a graph built
 * on the host, which builds its own). */
int gop_graph_set_group_builder(GopContext *ctx, GopGraph *g, GopGroupBuilder fn, void *user);
/* Gives a graph built on the device its reversed graph, built on the device
 * too: every arc u -> v of g as v -> u with the same edge id (so its CSR is
 * g's CSC: gop_graph_from_device on g's arrays with in_ and out_, src and
 * dst exchanged, no copy), what operators scheduled with transpose() run
 * on (docs/scheduling.md); a graph built on the host reverses itself. With
 * it, schedule choice may pick transposed schedules for g. The arrays are
 * the caller's promise, as gop_graph_from_device's are; the sizes are
 * checked. `reversed` must outlive g's runs: gop_graph_free refuses it
 * while a graph names it. NULL takes it away. 0, or -1 after reporting. */
int gop_graph_set_reversed(GopContext *ctx, GopGraph *g, GopGraph *reversed);
/* The table of `g` for (G, distance, classes, threshold) as a run's
 * kernels get it: for a graph built on the host, its host arrays (built on
 * first use); for one built on the device, the device arrays (asked of its
 * builder on first use). The addresses are valid until the graph is freed
 * (on the device: or more than four other tables are asked). 0, or -1
 * after reporting. */
int gop_graph_group_table(GopContext *ctx, GopGraph *g, int G, int distance, int classes,
                          int threshold, GopGroupTable *out);

/* ---- the kernel cache ----
 * Compiled kernels are kept in the context, keyed by the operator's IR, its
 * scheduled and lowered IR (so the schedule and its directives), the
 * target and gop's version. Extents are not part of the key: the kernels
 * take them as parameters, so one compilation serves every width. With a
 * cache folder (gop_set_cache_dir, or the GOP_CACHE_DIR variable) each
 * compilation is also written there as a kernel pack (OPNAME-KEY.gopk)
 * and read back by later processes, including gop built without LLVM. */

/* Sets the cache folder (created when needed; NULL: memory only). 0 or -1. */
int gop_set_cache_dir(GopContext *ctx, const char *dir);
/* The cache folder, or NULL. */
const char *gop_cache_dir(const GopContext *ctx);
/* Removes every kernel pack gop wrote to the cache folder (*.gopk); the
 * context's in-memory cache stays. Returns the number removed, or -1. */
int gop_cache_clear(GopContext *ctx);
/* 1 when this libgop can compile (built with LLVM's NVPTX backend), 0 when
 * it only runs kernel packs made elsewhere (GOP_WITH_LLVM=OFF). */
int gop_can_compile(void);
/* The cache key of `op` compiled with `o` (may be NULL) as 16 hex digits;
 * the target is o->target, else the GPU's, else sm_90. 0 or -1. */
int gop_kernel_key(const GopOp *op, const GopCompileOptions *o, char key[17]);

typedef struct GopCacheStats {
  int64_t memory_hits; /* kernels found in the context */
  int64_t disk_hits;   /* read from a pack in the cache folder */
  int64_t compiled;    /* compiled with LLVM */
  int64_t disk_writes; /* packs written to the cache folder */
  int entries;         /* kernels held in memory */
} GopCacheStats;
void gop_cache_stats(const GopContext *ctx, GopCacheStats *out);

/* Whether the GPU can be used: 0, or 3 (no CUDA driver) / 4 (no CUDA
 * device), with the device's name or the reason in `what` (may be NULL). */
int gop_device_status(char *what, size_t size);

/* ---- REPL support ---- */

/* The name of schedule directive `i`: the primitives (split, ..., team,
 * occupancy), then the schedule-level directives (optional, fallback,
 * deterministic, stages); NULL past the last. A static string. */
const char *gop_schedule_directive_name(int i);
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

/* An array of any float dtype, as stored: "f16", "bf16" (read from '<V2',
 * the bits ml_dtypes' bfloat16 saves), "f32" or "f64". */
typedef struct GopTypedArray {
  int ndim;
  int64_t shape[8];
  const char *dtype; /* static string */
  void *data;        /* malloc'ed; gop_typed_array_free releases it */
} GopTypedArray;
/* Reads a float .npy file of any of those dtypes; 0 or -1. */
int gop_typed_array_read(GopContext *ctx, const char *path, GopTypedArray *out);
/* Writes it (bf16 as '<V2'); 0 or -1. */
int gop_typed_array_write(GopContext *ctx, const char *path, const GopTypedArray *a);
void gop_typed_array_free(GopTypedArray *a);
/* Element i of `data` of float dtype `dtype` as a double, and the store
 * of `x` rounded to nearest even; the sizes of the dtypes' elements (0 for
 * an unknown name). */
double gop_dtype_get(const char *dtype, const void *data, int64_t i);
void gop_dtype_put(const char *dtype, void *data, int64_t i, double x);
int gop_dtype_bytes(const char *dtype);

/* The operator `op` instantiated in float type `dtype` ("f16", "bf16",
 * "f32", "f64"): every f32 tensor of it takes that type (docs/language.md,
 * "Types"); a new operator in a module of its own that shares `op`'s
 * schedules. NULL after reporting an unknown dtype. */
GopOp *gop_op_retype(const GopOp *op, const char *dtype);
/* The accumulator type of `op`: "f32" or "f64". */
const char *gop_op_acc(const GopOp *op);

/* ---- tuning ---- */

/* Where a chosen schedule came from. */
typedef enum {
  GOP_SCHEDULE_FROM_DATABASE,  /* measured: the fastest stored for this key */
  GOP_SCHEDULE_FROM_PREDICTOR, /* the learned predictor's (DB.xgb) best point */
  GOP_SCHEDULE_FROM_MODEL,     /* the analytical cost model's best point */
  GOP_SCHEDULE_NONE,           /* no candidate: the default mapping (schedule "") */
  GOP_SCHEDULE_FROM_BUILTIN    /* the predictor built into gop (no DB.xgb) */
} GopScheduleSource;

/* gop_choose_schedule's return when no named schedule or strategy applies
 * to the operator (an element-wise layer, a bias, a per-vertex update):
 * not an error and nothing reported; the caller runs the default mapping
 * (gop_run_set_compile not called, or with schedule NULL). */
#define GOP_NO_SCHEDULE 1

typedef struct GopScheduleChoice {
  char schedule[128];       /* "warp_edge(4, 2)", as --schedule takes it */
  GopScheduleSource source;
  double model_us;          /* the cost model's estimate for it */
  double measured_ms;       /* the database's time (0 otherwise) */
  int candidates;           /* legal points of the operator's search space */
  char note[256];           /* why the predictor was not used ("" if it was,
                               or when the database answered) */
} GopScheduleChoice;

/* "database", "predictor", "built-in predictor", "cost model" or "default
 * mapping". */
const char *gop_schedule_source_name(GopScheduleSource s);
/* Chooses the schedule for `op` on `g` at feature width F (ignored by
 * operators without one): the fastest one measured in the tuning database
 * `db_path` (NULL: none) under this operator's IR, F, f32, the graph's
 * signature, the GPU found (or none) and this gop's version; else the
 * learned predictor's best legal point: the database's own model when
 * DB.xgb exists beside it, else the model built into gop (unless the
 * environment's GOP_PREDICTOR is "off"), each only for an operator of a
 * shape and dtype it was trained on (`note` says when it was skipped);
 * else the cost model's best legal point (for an operator whose stages
 * fuse into one kernel, edge softmax: softmax_rows(T); where a heavy
 * destination would serialise the fused kernel, softmax_teams(32, 4) on a
 * graph whose edge ids are in CSR order, or the default mapping). No
 * libxgboost is needed to choose. 0; GOP_NO_SCHEDULE (1) when the
 * operator has no candidate at all (out->candidates 0, out->source
 * GOP_SCHEDULE_NONE, out->schedule "", nothing reported: run the default
 * mapping), or when the choice is the default mapping (out->source
 * GOP_SCHEDULE_NONE, out->note says why); or -1 after reporting (a database or model file that cannot be
 * opened, or is refused, is an error, not skipped). */
int gop_choose_schedule(const GopOp *op, const GopGraph *g, int64_t F,
                        const char *db_path, GopScheduleChoice *out);

/* Vertex orders chosen by measurement (`gopc tune --orders`, `gopc run
 * --reorder auto`; docs/reordering.md): the tuner renumbers the graph by
 * each order asked, tunes the operator on each, and stores each order's
 * best under the key of the graph in its own order. */
typedef struct GopOrderChoice {
  char order[32];      /* the fastest order measured: "none" (the graph's
                          own), or a method gop_graph_reorder takes */
  char schedule[128];  /* its best schedule, on the graph so renumbered */
  double time_ms;      /* and its time */
  double own_ms;       /* the graph's own order's best ("none"; 0: that
                          order was not measured) */
  int orders;          /* orders measured */
} GopOrderChoice;
/* NULL if `order` may be measured and stored (gopc tune --orders,
 * gop_tune_store_order): "none" (the graph's own) or a method
 * gop_graph_reorder takes other than "auto" (a rule that picks an order),
 * else what is wrong with it (a constant string). */
const char *gop_vertex_order_problem(const char *order);
/* The order the tuning database `db_path` measured fastest for `op` on `g`
 * (in its own order) at width F (as gop_choose_schedule's key) on the GPU
 * found: 1 with *out filled; 0 when the database holds no order for that
 * key, or there is no GPU (nothing reported); -1 after reporting (a file
 * that cannot be opened or is refused, or a stored order gop would not
 * take: a name gop_graph_reorder refuses, "auto", or a time that is not
 * positive). */
int gop_choose_order(const GopOp *op, const GopGraph *g, int64_t F, const char *db_path,
                     GopOrderChoice *out);
/* Stores that `op`'s best schedule `schedule` ran in `time_ms` on `g`
 * renumbered by `order` ("none": as it is; else a method of
 * gop_graph_reorder other than "auto"), under g's key at width F on the
 * GPU found. 0, or -1 after reporting (a bad argument, no GPU, a database
 * that cannot be written). */
int gop_tune_store_order(const GopOp *op, const GopGraph *g, int64_t F, const char *db_path,
                         const char *order, const char *schedule, double time_ms);

/* The tuner (docs/autotuning.md): ranks the legal points of the
 * operator's space by the cost model, compiles the best ahead on a thread,
 * measures each on the GPU (warm-up, median of repeats), checks its output
 * before it may win, and stores every verified measurement in the
 * database, one transaction each. */
typedef struct GopTuneProgress {
  const char *phase;   /* while preparing: what ("computing the reference");
                          NULL while measuring */
  int done, total;     /* candidates tried so far, and planned */
  double elapsed_s, budget_s;
  const char *current; /* the candidate being measured */
  double best_ms;      /* best verified time so far (0: none yet) */
  const char *best;
} GopTuneProgress;

typedef struct GopTuneOptions {
  double budget_s;        /* measuring stops after this (0: 30 s) */
  int max_candidates;     /* 0: every legal point, best estimate first */
  int warmup, reps;       /* 0 and 0: 3 and 20 */
  const char *db_path;    /* NULL: nothing is stored */
  const char *target;     /* NULL: the GPU's */
  int64_t check_edges;    /* graphs with more edges are checked on a proxy
                             graph and against the first verified
                             candidate (0: 2,000,000; -1: never, always the
                             interpreter) */
  volatile sig_atomic_t *stop; /* a SIGINT handler sets it: the candidate
                             being measured finishes, then the tune stops */
  void (*progress)(void *ctx, const GopTuneProgress *p);
  void *progress_ctx;
} GopTuneOptions;

typedef enum { GOP_TUNE_OK, GOP_TUNE_WRONG, GOP_TUNE_FAILED } GopTuneStatus;

typedef struct GopTuneEntry {
  char schedule[128];
  GopTuneStatus status;
  double median_ms, min_ms, gbps, bound_fraction; /* GOP_TUNE_OK only */
  double model_us;        /* the cost model's estimate */
  int model_rank;         /* its place in the model's order (0: first) */
  bool stored;            /* written to the database */
  char why[400];          /* WRONG or FAILED: what happened */
} GopTuneEntry;

typedef struct GopTuneReport {
  int gpu_status;         /* 0, or 3 no CUDA driver, 4 no CUDA device */
  char device[128];
  int candidates;         /* legal points of the space */
  int tried, measured, wrong, failed, stored;
  bool interrupted, out_of_budget;
  bool checked_on_interpreter; /* else: proxy graph + `anchor` */
  char anchor[128];
  double seconds, reference_s, copy_gbps;
  uint64_t fewest_bytes;
  const GopTuneEntry *entries; /* verified by time, then wrong, then failed;
                                  they belong to the context */
  int nentries;
} GopTuneReport;

/* Tunes the operator of `r` on its graph, with the extents set on `r`
 * (every one must be); inputs bound to `r` are used, the others filled
 * with the random numbers gopc run uses (seed 1). 0 when the tune ran
 * (perhaps verifying nothing: see the report), -1 after reporting; with no
 * GPU, -1 and report->gpu_status 3 or 4. */
int gop_tune(GopRun *r, const GopTuneOptions *o, GopTuneReport *report);
/* Prints the top `top` verified schedules (time, GB/s, fraction of the
 * fewest-bytes bound, the model's estimate), then every wrong or failed
 * candidate, and how the outputs were checked. */
void gop_tune_print(const GopTuneReport *rep, int top, FILE *out);
/* A progress printer for GopTuneOptions.progress: `ctx` is the FILE*; a
 * bar redrawn in place when it is a terminal, else a plain line per
 * candidate. */
void gop_tune_progress_print(void *ctx, const GopTuneProgress *p);

/* The learned predictor: gradient-boosted trees, trained by XGBoost
 * (loaded with dlopen), evaluated by gop. Whether libxgboost can be loaded
 * to train (`why` gets the reason when not; may be NULL, size 0). */
bool gop_predictor_available(char *why, size_t size);
typedef struct GopTrainInfo {
  int rows, graphs, cases;
  char model_path[1024];
} GopTrainInfo;
/* Trains the predictor from the database and saves it as DB.xgb (through
 * a temporary file). 0, or -1 after reporting. */
int gop_predictor_train(GopContext *ctx, const char *db_path, GopTrainInfo *out);
typedef struct GopEvalInfo {
  int graphs, cases, default_cases, within_10pct;
  double geomean;          /* predicted schedule's time / best, geometric mean */
  double model_geomean;    /* the cost model's choice, on the same cases */
  double default_geomean;  /* warp_edge(1, 1) (or thread_edge), where measured */
  double median, worst;
} GopEvalInfo;
/* Leave-one-graph-out evaluation over the database: a row per graph goes
 * to `table` (may be NULL). 0, or -1 after reporting. */
int gop_predictor_evaluate(GopContext *ctx, const char *db_path, FILE *table,
                           GopEvalInfo *out);
typedef struct GopImportInfo {
  int imported, graphs;
  int skipped_default, skipped_wrong, skipped_no_time, skipped_refused, truncated;
} GopImportInfo;
/* Imports a GPU suite CSV (bench/results/...-gpu-suite*.csv) into the
 * database, reading its graphs from `datasets` for their signatures; the
 * rows are stored under GPU `gpu` with compute capability `cc`. 0, or -1
 * after reporting. */
int gop_tune_import_csv(GopContext *ctx, const char *csv, const char *db_path,
                        const char *datasets, const char *gpu, int cc,
                        GopImportInfo *out);

/* ---- models (models/models.c) ----
 * (Restored by the tuner session after an edit of the tuning section
 * above dropped it; rebuilt from the debug information of the models
 * session's objects: the owner should re-check the comments.) */

/* Reports an error through the context's diagnostics (printf-style). */
void gop_report(GopContext *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The arcs of `g` in edge-id order: *src and *dst point at its arrays
 * (they belong to the graph). Returns the number of edges, or -1 (and
 * NULLs) for a graph built on the device (gop_graph_from_device). */
long gop_graph_arcs(const GopGraph *g, const int32_t **src, const int32_t **dst);
/* A graph from `ne` arcs src[e] -> dst[e] over `nv` vertices (copied);
 * `name` may be NULL. NULL on error. */
GopGraph *gop_graph_from_arcs(GopContext *ctx, int64_t nv, int64_t ne, const int64_t *src,
                              const int64_t *dst, const char *name);

typedef struct GopModel GopModel;

/* The operators the models are made of (examples/models/layers.gop, built
 * in): gcn_propagate, gin_aggregate, gat_attention, bias_relu ... NULL
 * after reporting. */
GopModule *gop_model_layers(GopContext *ctx);

/* The models, space-separated: "gcn gin gat sage-sum sage-mean sage-max". */
const char *gop_model_names(void);

typedef struct GopModelOptions {
  int64_t in_features, classes;
  int64_t hidden;     /* 0: the model's default */
  uint64_t seed;      /* of the initial parameters */
  bool gat_separate;
} GopModelOptions;

typedef struct GopModelStats {
  bool on_gpu;
  int gpu_status;
  char device[128];
  char blas[160];
  char note[256];
  int steps;        /* dense updates and operator runs in one forward */
  /* On the GPU with reps > 0: whole forwards (every tensor on the device,
   * nothing copied) timed between CUDA events, their median and minimum
   * over `reps`. */
  int reps;
  double total_ms, min_ms;
  double seconds;   /* wall time of the call: planning, copies, timing */
} GopModelStats;

/* A model `name` (gop_model_names) on graph `g`; NULL after reporting. */
GopModel *gop_model_new(GopContext *ctx, const char *name, const GopGraph *g,
                        const GopModelOptions *o);
void gop_model_free(GopModel *m);
int gop_model_num_params(const GopModel *m);
const char *gop_model_param_name(const GopModel *m, int i);
const GopArray *gop_model_param(const GopModel *m, int i);
/* Reads every parameter from DIR/NAME.npy; 0 or -1 (the model unchanged). */
int gop_model_load_weights(GopModel *m, const char *dir);
/* Writes every parameter to DIR/NAME.npy; 0 or -1. */
int gop_model_save_weights(const GopModel *m, const char *dir);
/* Runs the model forward on host features `x`, writing host `y`; 0 or -1.
 * On the GPU, x goes up once, the whole forward (cuBLAS and gop's kernels,
 * intermediates on the device) is queued with no copy or wait between its
 * steps, and y comes back once; `reps` more forwards are timed. Without a
 * GPU (or with GOP_DEVICE_INTERP), the reference interpreter and a C GEMM. */
int gop_model_forward(GopModel *m, const float *x, float *y, GopDevice dev, int reps,
                      GopModelStats *st);

#ifdef __cplusplus
}
#endif
#endif
