/* runtime/runtime.h: graphs, host arrays and the GPU runtime.
 *
 * The one header of runtime/, sectioned by the file that implements each
 * part. Host-side graphs (read from files or generated) come first: the
 * interpreter and every tool use them. The CUDA driver layer follows; it is
 * opened with dlopen so that a machine with no GPU runs every other tool.
 */
#ifndef GOP_RUNTIME_H
#define GOP_RUNTIME_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../ir/ir.h"

/* ---------------------------------------------------------------------------
 * graph.c, graph_read.c, graph_gen.c: host graphs.
 *
 * A graph has |V| vertices 0..nv-1 and |E| arcs; edge e goes from src[e] to
 * dst[e]. Edge ids are the order of the input (file order, after expanding
 * symmetric Matrix Market entries: (i,j) then (j,i) right after it, a
 * diagonal entry once). Edge tensors follow edge ids. Three formats are
 * built once at load, each keeping the edge ids:
 *   COO            src[e], dst[e]
 *   CSR by dst     in_ptr[v]..in_ptr[v+1]: the in-edges of v, in edge-id
 *                  order; in_eid[k] is the edge id, in_src[k] its source
 *   CSC by src     out_ptr[u]..out_ptr[u+1]: the out-edges of u, in edge-id
 *                  order; out_eid[k], out_dst[k] likewise
 * Indices are int32: graphs with more than INT32_MAX vertices or edges are
 * refused with a clear message.
 */
typedef struct RtGraphStats {
  double deg_mean;     /* |E| / |V| */
  double in_deg_std;   /* population std of the in-degree */
  int32_t in_deg_max, out_deg_max;
  int32_t isolated;    /* vertices with neither in- nor out-edges */
  int64_t self_loops;
  double aes;          /* GNNAdvisor's average edge span: mean |src - dst| */
} RtGraphStats;

typedef struct RtGraph {
  char *name; /* the file or generator spec it came from */
  int32_t nv;
  int32_t ne;
  int32_t *src, *dst;                  /* COO, by edge id */
  int32_t *in_ptr, *in_eid, *in_src;   /* CSR by destination */
  int32_t *out_ptr, *out_eid, *out_dst; /* CSC by source */
  RtGraphStats stats;
  struct RtGroups *groups; /* neighbour-group tables built so far
                              (graph_groups.c), freed with the graph */
} RtGraph;

/* Builds a graph from arcs in edge-id order (copies them; arrays may be NULL
 * when ne is 0; name NULL gives "<graph>"). Returns NULL and reports through
 * `d` (at `loc`) if an index is out of range or a size exceeds int32. */
RtGraph *rt_graph_from_coo(int64_t nv, int64_t ne, const int64_t *src,
                           const int64_t *dst, const char *name, Diag *d,
                           Loc loc);
void rt_graph_free(RtGraph *g); /* NULL is fine */
/* Prints |V|, |E|, degree statistics, isolated vertices and AES on one
 * line. */
void rt_graph_print_stats(FILE *out, const RtGraph *g);

/* Reads a Matrix Market coordinate file (pattern/real/integer,
 * general/symmetric) or a SNAP edge list, plain or gzip'ed (by content, not
 * name): a first non-blank line starting with `%` must be a Matrix Market
 * header, anything else is read as SNAP (`#` comments, `src dst` 0-based).
 * Malformed input is reported as `file:line: error: reason` (`file: error:`
 * for what concerns the whole file: unreadable, empty, corrupt gzip) and
 * gives NULL; nothing is ever half-built. */
RtGraph *rt_graph_read(const char *path, Diag *d);

/* Generates `rmat:SCALE:EDGEFACTOR[:SEED]` (Graph500's R-MAT, a=.57 b=.19
 * c=.19 d=.05, vertex labels permuted, self-loops and duplicate arcs
 * removed, arcs sorted by (src, dst)) or `grid:WxH` (a W by H 4-neighbour
 * mesh, both directions). Returns NULL with a message on a bad spec; the
 * message names the spec and has no location. */
RtGraph *rt_graph_generate(const char *spec, Diag *d);

/* A spec that starts with `rmat:` or `grid:` is generated, anything else is
 * read as a file. */
RtGraph *rt_graph_open(const char *spec, Diag *d);

/* ---------------------------------------------------------------------------
 * graph_groups.c: GNNAdvisor's neighbour-group tables (docs/scheduling.md).
 */
typedef struct RtGroups {
  int32_t G;     /* at most G in-edges per row, never two destinations */
  int32_t ilv;   /* interleaving distance, 0: rows in destination order */
  int32_t ncls;  /* interleaved: classes (2..IR_MAX_CLASSES); else 0 */
  int32_t thr;   /* two classes: heavy means in-degree > thr; else 0 */
  int32_t n;     /* rows */
  /* interleaved, by class, heaviest first: its rows, and the least
   * in-degree it takes (an empty class repeats the one before; see
   * rt_groups_class) */
  int32_t cls_rows[IR_MAX_CLASSES], cls_min[IR_MAX_CLASSES];
  int32_t *dst, *first, *end; /* by row: destination, CSR positions
                                 [first, end) of its edges */
  int64_t bytes; /* what the three arrays take */
  /* by destination v: its rows are vrow[vptr[v] .. vptr[v + 1]), in table
   * order (the second stage of a deterministic segmented reduction,
   * passes/segment.c); |V| + 1 and n entries, seg_bytes together */
  int32_t *vptr, *vrow;
  int64_t seg_bytes;
  struct RtGroups *next;
} RtGroups;

/* The table of `g` for (G, ilv, ncls, thr): ilv 0 (and ncls, thr 0) is
 * destination order; else ncls classes, 2 to IR_MAX_CLASSES, with a
 * threshold only for two (0: the default one). Built on first use and
 * cached in `g`. NULL after reporting (bad sizes, out of memory). */
const RtGroups *rt_graph_groups(const RtGraph *g, int G, int ilv, int ncls,
                                int thr, Diag *d);
/* The degree threshold a two-class table of `g` uses for `thr` (0: the
 * mean in-degree rounded up, at least 1). */
int32_t rt_groups_threshold(const RtGraph *g, int thr);
/* The class (0: the heaviest) of a destination of in-degree `deg` in the
 * interleaved table `t`. */
int rt_groups_class(const RtGroups *t, int64_t deg);
/* Frees every cached table (rt_graph_free calls it). */
void rt_graph_groups_free(RtGraph *g);

/* ---------------------------------------------------------------------------
 * npy.c: NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order).
 */
typedef struct RtArray {
  IrDType dtype; /* f32, f64, i32 or i64 */
  int ndim;
  int64_t shape[8];
  void *data;    /* malloc'ed; rt_array_free releases it */
} RtArray;

int64_t rt_array_numel(const RtArray *a); /* 1 for a 0-d array */
/* Frees the data and leaves `a` empty; safe twice, and on NULL. */
void rt_array_free(RtArray *a);
/* Reads `path`; returns 0, or -1 after reporting the file and the reason
 * (bad magic, unsupported dtype, Fortran order, truncated data ...), with
 * `out` then empty. An array of 0 elements still gets a non-NULL `data`. */
int rt_npy_read(const char *path, RtArray *out, Diag *d);
/* Writes `a` as format 1.0 (as numpy.save does, byte for byte) through a
 * temporary file in the same directory renamed into place, so an error
 * never leaves a truncated file. Returns 0 or -1 after reporting. */
int rt_npy_write(const char *path, const RtArray *a, Diag *d);

/* ---------------------------------------------------------------------------
 * cuda.c: the CUDA driver, opened with dlopen.
 *
 * The driver is loaded at most once per process and shared by every caller:
 * libcuda and the device's primary context are process-wide by nature, so
 * this is the one place runtime/ keeps global state. Every function below
 * that needs the GPU opens it on first use (rt_cuda_open is idempotent and
 * makes the context current on the calling thread). GOP_CUDA_LIBRARY, when
 * set, names the library to open instead of libcuda.so.1 (tests use it to
 * get a machine without a driver on any machine); GOP_CUDA_DEVICE picks a
 * device other than 0. Open or close the driver while no other thread is
 * using it.
 *
 * Errors are reported through a Diag with no location (`error: message`)
 * and returned as an RtStatus. The tools exit with the status itself, so
 * scripts can tell why a run did not happen.
 */
typedef enum RtStatus {
  RT_OK = 0,
  RT_ERR = 1,       /* a CUDA call failed, or a request was refused */
  RT_NO_DRIVER = 3, /* no usable libcuda: missing, a stub, or too old */
  RT_NO_DEVICE = 4, /* the driver loaded but there is no usable GPU */
  RT_OOM = 5,       /* device memory ran out */
} RtStatus;

/* "ok", "error", "no CUDA driver", "no CUDA device", "out of device
 * memory". */
const char *rt_status_name(RtStatus s);

/* Loads the driver, initialises it, retains device 0's primary context and
 * makes it current on this thread. Idempotent and thread-safe. Returns
 * RT_OK, or RT_NO_DRIVER / RT_NO_DEVICE / RT_ERR after reporting why; a
 * failed open leaves nothing behind, so a later call tries again. */
RtStatus rt_cuda_open(Diag *d);
/* Unloads every module, releases the context and closes the library. Device
 * tensors and graphs still held become invalid (freeing them is then a
 * no-op). Does nothing when not open. */
void rt_cuda_close(void);
/* True once rt_cuda_open has succeeded (and rt_cuda_close not been called). */
bool rt_cuda_available(void);

/* What runtime/ needs to know about the device; filled by rt_cuda_open. */
typedef struct RtDeviceLimits {
  int max_threads_per_block;     /* 1024 */
  int max_block[3];              /* 1024, 1024, 64 */
  int max_grid[3];               /* 2^31-1, 65535, 65535 */
  int shared_per_block;          /* without opting in: 48 KiB */
  int shared_per_block_optin;    /* the most one block may use */
} RtDeviceLimits;

typedef struct RtDeviceInfo {
  char name[256];
  int cc;             /* compute capability as 10 * major + minor: 90 */
  int sm_count;
  int warp_size;
  int max_threads_per_sm;
  int regs_per_block;
  int shared_per_sm;
  int l2_bytes;
  int driver_version; /* as cuDriverGetVersion: 13000 for 13.0 */
  size_t mem_total;   /* bytes of device memory */
  RtDeviceLimits limits;
} RtDeviceInfo;

/* The open device, or NULL when the driver is not open. */
const RtDeviceInfo *rt_cuda_device(void);
/* The device's name, or "no CUDA device" when not open. */
const char *rt_cuda_device_name(void);
/* Compute capability as 10 * major + minor (90 for an H100), or 0 when not
 * open. */
int rt_cuda_cc(void);
/* Free and total device memory in bytes. Returns RT_OK or the status of the
 * failure after reporting. */
RtStatus rt_cuda_mem_info(size_t *free_bytes, size_t *total_bytes, Diag *d);
/* Waits for all work on the device; reports (and returns the status of) an
 * error raised by an earlier asynchronous launch. */
RtStatus rt_cuda_sync(Diag *d);
/* Writes `bytes` as "512 B", "1.5 KiB", "12.5 GiB" into `buf` and returns
 * it. */
const char *rt_format_bytes(uint64_t bytes, char buf[32]);

/* For runtime/'s own files, which include runtime/cuda.def for the table's
 * layout and the RT_CU call macro. */
typedef struct RtCudaApi RtCudaApi;
/* The driver's entry points, or NULL when not loaded. */
const RtCudaApi *rt_cuda_api(void);
/* The current driver session (changes at every open), or 0 when not open:
 * what RtDevTensor.epoch and modules record. */
uint32_t rt_cuda_epoch(void);
/* module.c: unloads every cached module; rt_cuda_close calls it first. */
void rt_module_unload_all(void);
/* The one checker of CUresults: returns RT_OK for CUDA_SUCCESS; otherwise
 * reports "CUDA error in CALL: NAME (description)", followed by `what` when
 * not NULL, and returns RT_OOM, RT_NO_DEVICE or RT_ERR. */
RtStatus rt_cuda_check(int result, const char *call, const char *what,
                       Diag *d);

/* ---------------------------------------------------------------------------
 * device.c: device memory, with accounting, and graphs on the device.
 */
typedef uint64_t RtDevPtr; /* a device address (CUdeviceptr) */

/* A device buffer. Zero-initialise it ({0}) before use; an empty tensor
 * (0 bytes) has ptr 0 and costs no driver call. */
typedef struct RtDevTensor {
  RtDevPtr ptr;
  size_t bytes;
  char name[40];  /* for messages: "tensor Y", "graph in_ptr" */
  uint32_t epoch; /* the driver session it belongs to (see rt_cuda_close) */
} RtDevTensor;

/* Allocates `bytes` (contents undefined) for the tensor called `name`.
 * Returns RT_OK, or RT_OOM / RT_ERR after a message that names the tensor
 * and the size asked; `t` is then left empty. */
RtStatus rt_tensor_alloc(RtDevTensor *t, size_t bytes, const char *name,
                         Diag *d);
/* Copies `bytes` from the host to the start of `t`. Refuses (RT_ERR) a copy
 * larger than the tensor before calling the driver. */
RtStatus rt_tensor_upload(RtDevTensor *t, const void *host, size_t bytes,
                          Diag *d);
/* Copies `bytes` from the start of `t` to the host; refuses like upload. */
RtStatus rt_tensor_download(const RtDevTensor *t, void *host, size_t bytes,
                            Diag *d);
/* Sets every 32-bit word of `t` to `word` (0.0f, -inf ... as bits); the size
 * must be a multiple of 4. Returns RT_OK or the failure's status. */
RtStatus rt_tensor_fill32(RtDevTensor *t, uint32_t word, Diag *d);
/* Frees the memory and empties `t`; safe on an empty tensor, and a no-op on
 * one whose driver session was closed. */
void rt_tensor_free(RtDevTensor *t);

/* Page-locks `bytes` of host memory at `host` (cuMemHostRegister), so
 * that copies to and from it run at the bus's speed instead of through a
 * staging buffer; rt_host_unpin must undo it before the memory is freed.
 * For callers that copy the same large buffers many times (the GPU suite). */
RtStatus rt_host_pin(void *host, size_t bytes, Diag *d);
void rt_host_unpin(void *host);

/* Device memory held by rt_tensor_alloc, for reports and leak checks. */
typedef struct RtMemStats {
  uint64_t live_bytes, peak_bytes;
  int64_t live_tensors, total_allocs;
} RtMemStats;
RtMemStats rt_mem_stats(void);

/* The formats of a graph a kernel can ask for (see RtGraph). */
typedef enum RtGraphFormat {
  RT_FMT_COO, /* src, dst */
  RT_FMT_CSR, /* in_ptr, in_eid, in_src: in-edges by destination */
  RT_FMT_CSC, /* out_ptr, out_eid, out_dst: out-edges by source */
  RT_FMT_DEG, /* in_deg, out_deg: int32 per vertex */
  RT_FMT_COUNT
} RtGraphFormat;
#define RT_FMT_BIT(f) (1u << (f))
#define RT_FMT_ALL (RT_FMT_BIT(RT_FMT_COUNT) - 1u)

/* A host graph's arrays on the device, uploaded lazily one format at a time
 * and then kept: a schedule asks for the formats it needs. All arrays are
 * int32, with the host graph's meaning and edge ids. */
typedef struct RtDevGraph {
  const RtGraph *host; /* not owned; must outlive the device graph */
  int32_t nv, ne;
  RtDevTensor src, dst;
  RtDevTensor in_ptr, in_eid, in_src;
  RtDevTensor out_ptr, out_eid, out_dst;
  RtDevTensor in_deg, out_deg;
  unsigned loaded; /* RT_FMT_BIT of each format held */
  /* neighbour-group tables uploaded so far (graph_groups.c), oldest first */
  struct RtDevGroups {
    const RtGroups *host;
    RtDevTensor dst, first, end;
    RtDevTensor vptr, vrow; /* uploaded by rt_devgraph_group_rows */
  } groups[4];
  int ngroups;
} RtDevGraph;
/* graph_groups.c: the device copy of `g`'s table for (G, ilv, ncls, thr),
 * uploaded once (the least recent of four is dropped for a fifth); NULL
 * after reporting. */
const struct RtDevGroups *rt_devgraph_groups(RtDevGraph *dg, int G, int ilv,
                                             int ncls, int thr, Diag *d);
/* The same, with the table's rows by destination (vptr, vrow) uploaded
 * too: what a group_rows loop reads (passes/segment.c). */
const struct RtDevGroups *rt_devgraph_group_rows(RtDevGraph *dg, int G,
                                                 int ilv, int ncls, int thr,
                                                 Diag *d);
/* Frees the group tables of `dg` (exec.c, with rt_devgraph_free). */
void rt_devgraph_groups_free(RtDevGraph *dg);

/* Starts a device graph for `g` holding nothing yet (no driver call). */
void rt_devgraph_init(RtDevGraph *dg, const RtGraph *g);
/* Uploads each format in the mask `formats` that is not held yet. Returns
 * RT_OK, or the failure's status after reporting; a format that failed
 * holds no memory and is not marked loaded. */
RtStatus rt_devgraph_load(RtDevGraph *dg, unsigned formats, Diag *d);
/* Bytes of device memory format `f` holds (0 when not loaded). */
size_t rt_devgraph_bytes(const RtDevGraph *dg, RtGraphFormat f);
/* "coo", "csr", "csc", "deg". */
const char *rt_graph_format_name(RtGraphFormat f);
/* Prints one line per loaded format with its size, and the total. */
void rt_devgraph_print(FILE *out, const RtDevGraph *dg);
/* Frees every format; `dg` can be loaded again afterwards. */
void rt_devgraph_free(RtDevGraph *dg);

/* ---------------------------------------------------------------------------
 * module.c: PTX modules, kernels and launches.
 *
 * Modules are cached by a 64-bit FNV-1a hash of their PTX text (the text is
 * compared too), so loading the same kernel twice costs one JIT. Modules and
 * kernels belong to the cache and live until rt_module_unload or
 * rt_cuda_close.
 */
typedef struct RtModule RtModule;

/* What the driver says about a compiled kernel. */
typedef struct RtKernelInfo {
  int max_threads;   /* per block, given its register use */
  int static_shared; /* bytes of shared memory declared in the kernel */
  int num_regs;      /* per thread */
  int local_bytes;   /* per thread: spills and local arrays */
  int ptx_version, binary_version; /* 10 * major + minor */
} RtKernelInfo;

typedef struct RtKernel {
  const char *name;
  RtModule *module;
  void *fn;           /* the CUfunction */
  RtKernelInfo info;
  int dyn_shared_max; /* the dynamic shared memory the function allows now */
} RtKernel;

typedef struct RtDim3 {
  uint32_t x, y, z;
} RtDim3;

typedef struct RtLaunchConfig {
  RtDim3 grid, block;
  uint32_t shared_bytes; /* dynamic shared memory per block */
} RtLaunchConfig;

/* 64-bit FNV-1a of `n` bytes: the module cache's key. */
uint64_t rt_fnv1a64(const void *data, size_t n);

/* Loads PTX text (NUL-terminated), or returns the module already loaded
 * from the same text. `what` names it in messages ("kernel pack x.ptx"), or
 * NULL. Returns NULL after reporting; a JIT failure quotes the JIT's log. */
RtModule *rt_module_load(const char *ptx, const char *what, Diag *d);
/* The number of modules loaded in the cache. */
int rt_module_count(void);
/* Unloads a module and its kernels now (before rt_cuda_close). */
void rt_module_unload(RtModule *m);
/* Kernel `name` of module `m`, looked up once and then cached. Returns NULL
 * after reporting if the module has no such kernel. */
RtKernel *rt_kernel_get(RtModule *m, const char *name, Diag *d);

/* Checks a launch configuration against the device limits, and against the
 * kernel's own (register-limited threads, static shared memory) when `k` is
 * not NULL, without the driver. Returns RT_OK, or RT_ERR after a message
 * naming `kernel` and the rule broken. */
RtStatus rt_launch_validate(const RtLaunchConfig *c,
                            const RtDeviceLimits *lim, const RtKernelInfo *k,
                            const char *kernel, Diag *d);
/* Launches `k` asynchronously on the default stream; `args` holds a pointer
 * to each kernel parameter. Refuses an illegal configuration before calling
 * the driver, and raises the kernel's dynamic shared memory limit when the
 * launch asks for more than 48 KiB. Returns RT_OK or the failure's status;
 * errors inside the kernel surface at the next rt_cuda_sync or copy. */
RtStatus rt_launch(RtKernel *k, const RtLaunchConfig *c, void **args,
                   Diag *d);

/* ---------------------------------------------------------------------------
 * timing.c: measuring with CUDA events.
 */
/* One run of the work to time (typically one rt_launch); returns a status. */
typedef RtStatus (*RtWorkFn)(void *ctx, Diag *d);

typedef struct RtTiming {
  double median_ms, min_ms, max_ms, mean_ms;
  int reps;
} RtTiming;

/* Runs `fn` `warmup` times, then `reps` (>= 1) times, each between two
 * events, and summarises the times. Returns RT_OK, or the status of the
 * first failure (of `fn` or of the driver) after reporting. */
/* Seconds on the host's monotonic clock (for wall times of host work). */
double rt_wall_seconds(void);
RtStatus rt_time_work(RtWorkFn fn, void *ctx, int warmup, int reps,
                      RtTiming *out, Diag *d);
/* rt_time_work of one kernel launch. */
RtStatus rt_time_launch(RtKernel *k, const RtLaunchConfig *c, void **args,
                        int warmup, int reps, RtTiming *out, Diag *d);
/* Device-to-device copy bandwidth in GB/s (1e9 bytes per second, counting
 * the bytes read and the bytes written) of copying `bytes` with
 * cuMemcpyDtoD, the median of `reps` copies. Returns RT_OK or the failure's
 * status. */
RtStatus rt_measure_copy_bandwidth(size_t bytes, int reps, double *gbps,
                                   Diag *d);

/* ---------------------------------------------------------------------------
 * exec.c: running a compiled program (codegen/codegen.h's CgProgram, from
 * the compiler or a kernel pack) on the GPU.
 *
 * The graph's device formats are uploaded once per host graph and cached
 * (rt_graph_free forgets them). Before the first stage every output and
 * temporary is initialised: a reduction target to its identity (0, -inf,
 * +inf), an output written only by plain stores to NaN, so an element the
 * kernels never write shows up as NaN rather than as a plausible 0.
 */
struct CgProgram;

typedef struct RtExecOptions {
  int warmup, reps; /* timing: runs before, and runs measured (median) */
  double slow_ms;   /* > 0: when the first (checked) run takes longer than
                       this, time one run with no warm-up */
} RtExecOptions;

typedef struct RtExecResult {
  RtTiming timing;          /* the whole op: initialisation and every stage */
  uint64_t fewest_bytes;    /* inputs read once, outputs written once, and a
                               CSR's (|V|+1) offsets and |E| indices once */
  double gbps;              /* fewest_bytes / median time */
  double copy_gbps;         /* measured device-to-device copy bandwidth */
  uint64_t graph_bytes[RT_FMT_COUNT]; /* device memory per graph format */
  uint64_t tensor_bytes;    /* device memory of the op's tensors */
  uint64_t group_bytes;     /* neighbour-group tables its stages read */
  uint64_t peak_bytes;      /* device memory held while the op ran: its
                               tensors and every cached graph format */
} RtExecResult;

/* Runs `p` on `g` with extent values `syms` (by symbol id) and host buffers
 * `host` (by tensor id: inputs read, outputs written; temporaries ignored),
 * timing it as `opt` says. Returns RT_OK or the status of the failure,
 * reported through `d`. */
RtStatus rt_exec_program(const struct CgProgram *p, const RtGraph *g,
                         const int64_t *syms, float *const *host,
                         const RtExecOptions *opt, RtExecResult *res,
                         Diag *d);
/* Frees the cached device formats of `g` (called by rt_graph_free). */
void rt_exec_forget_graph(const RtGraph *g);
struct CgKernel;
/* Bytes of dynamic shared memory kernel `k` of `p` needs on `g` with
 * `syms`: its staged inputs (promote(X, shared)), each rounded up to 16
 * bytes, then a @shared groups stage's accumulator rows. Returns them, or
 * -1 after reporting a bad size, or staged inputs that take more than
 * `limit` bytes (> 0) with the rows: the message names each tensor and its
 * bytes. */
int64_t rt_kernel_shared_bytes(const struct CgProgram *p,
                               const struct CgKernel *k, const RtGraph *g,
                               const int64_t *syms, int64_t limit, Diag *d);
/* Prints the device memory report of a run: each graph format and the
 * tensors, and the peak. */
void rt_exec_print_memory(FILE *out, const RtExecResult *res);

/* ---------------------------------------------------------------------------
 * tune_space.c, tune_model.c, tune_db.c: autotuning (issue 6, CPU half).
 *
 * The search space of an operator is the named schedules of
 * stdlib/schedules.gop with their knobs G (grouping) and T (feature
 * tiling); a point is legal when the schedule applies and lowers (the same
 * check the compiler makes). The cost model ranks points without running
 * them, from the graph's signature, F, the operator's shape and the lowered
 * IR's plain/atomic decisions (README "Autotuning" gives the formula). The
 * tuning database keeps measured schedules in SQLite. Threads per block and
 * vectorisation are not knobs yet; nothing here needs a GPU.
 */
typedef enum TuneStrategy {
  TUNE_THREAD_VERTEX,
  TUNE_WARP_VERTEX,
  TUNE_THREAD_EDGE,
  TUNE_WARP_EDGE,
  TUNE_GAS,
  TUNE_GAR,
  TUNE_NAMED, /* another named schedule: its name and arguments are the text */
  TUNE_STRATEGY_COUNT
} TuneStrategy;

/* "thread_vertex" ... "gar": the named schedule of a strategy. */
const char *tune_strategy_name(TuneStrategy s);

/* What the cost model needs to know of an operator, independent of the
 * schedule: accesses per edge and per vertex, counted in the unscheduled
 * IR (a reduction store counts twice: it reads and writes). */
typedef struct TuneOpShape {
  int edge_rows;      /* feature-wide accesses inside edge loops, but */
  int edge_red_rows;  /* reductions into vertex rows inside edge loops:
                         per edge when edge-parallel, per vertex else */
  int edge_scalars;   /* scalar accesses inside edge loops (W[e], S[e]) */
  int vertex_rows;    /* feature-wide accesses outside edge loops */
  int vertex_scalars;
  bool feature_loop;  /* some stage has a feature loop (lanes can take it) */
} TuneOpShape;

/* One legal point of the space. */
typedef struct TunePoint {
  char text[64];         /* the schedule: "warp_edge(4, 2)", "gar()" */
  TuneStrategy strategy;
  int G, T;              /* 1 for gas and gar */
  int atomic_rows;       /* lowered stores decided atomic: feature-wide */
  int atomic_scalars;    /*   ... and scalar */
  int kernels;           /* top-level stages of the lowered IR */
  bool warp, vertex;     /* a warp per worker; vertex-parallel (for
                            TUNE_NAMED read off the lowered IR) */
} TunePoint;

/* The operator's shape (from its unscheduled IR). */
void tune_op_shape(const IrOp *op, TuneOpShape *out);
/* Makes a point from schedule text `text` ("name(G, T)" of a named
 * schedule): applies it to a copy of `op` with the named schedules of
 * `lib`, lowers it, and records the lowered IR's atomic stores. Returns 0,
 * 1 when the schedule is refused for this operator (the reason goes to
 * `why` when not NULL), or -1 after reporting text that names no known
 * strategy. `op` is never changed. */
int tune_point_make(const IrOp *op, const IrModule *lib, const char *text,
                    Arena *a, TunePoint *out, Diag *why);

/* The knobs the space spans. */
#define TUNE_NUM_G 5 /* G in {1, 2, 4, 8, 16} */
#define TUNE_NUM_T 4 /* T in {1, 2, 4, 8} */
/* Every legal point of `op`: the four uGrapher strategies (warp_edge,
 * thread_edge, warp_vertex, thread_vertex: the model's ties go to the
 * first) x G x T, then gas() and gar(). *out is malloc'ed (the caller frees it); returns the
 * number of points, or -1 after reporting. The default schedule is one of
 * these points (warp_edge(1, 1) or thread_edge(1, 1)), so it is not listed
 * again. */
int tune_space_enumerate(const IrOp *op, const IrModule *lib, Arena *a,
                         TunePoint **out, Diag *d);
/* The other named schedules of `lib` that apply to `op` (gnnadvisor(G, T),
 * spmm_vec4(U), ... : any but the strategies), each on a small grid of its
 * integer parameters, as points of strategy TUNE_NAMED. The cost model
 * costs them only roughly (as the strategy their lowered IR is nearest
 * to), so they are kept apart: the tuner measures them beside the
 * modelled points, and the model's and the predictor's choices come from
 * tune_space_enumerate's points only. Returns the count or -1. */
int tune_space_named(const IrOp *op, const IrModule *lib, Arena *a, TunePoint **out,
                     Diag *d);

/* The graph's signature, as the model and the database key see it. */
typedef struct TuneGraphSig {
  int64_t nv, ne;
  double deg_mean, deg_std; /* in-degree std */
  int64_t deg_max;          /* in-degree max */
  double aes;
} TuneGraphSig;

void tune_graph_sig(const RtGraph *g, TuneGraphSig *out);

/* The model's estimate for one point, with the terms it is made of (all in
 * microseconds but `bytes`): time = launch + max(memory, issue, critical). */
typedef struct TuneCost {
  double time_us;
  double memory_us, issue_us, critical_us, launch_us;
  double bytes;          /* moved without reuse of source rows */
  double bytes_reuse;    /* each input row once, outputs once: the bound */
  double atomics;        /* scalar atomic updates */
  double occupancy;      /* resident warps / what the GPU can hold (<= 1) */
} TuneCost;

/* Estimates the time of `p` on a graph with signature `g` at feature width
 * `F` (F is ignored when the op has no feature loop). */
void tune_model_cost(const TuneOpShape *shape, const TunePoint *p,
                     const TuneGraphSig *g, int64_t F, TuneCost *out);
/* Sorts `pts` by the model's time, fastest first (stable for ties). */
void tune_model_rank(const TuneOpShape *shape, TunePoint *pts, int n,
                     const TuneGraphSig *g, int64_t F);

/* The tuning database: a SQLite file, WAL mode, with its own
 * application_id and a schema version in user_version. */
typedef struct TuneDb TuneDb;

/* What a measurement is stored under; strings are copied. */
typedef struct TuneKey {
  uint64_t op_hash;     /* FNV-1a of the operator's IR text (tune_op_hash) */
  int64_t F;            /* feature width(s): F, or 0 for none */
  const char *dtype;    /* "f32" */
  TuneGraphSig graph;
  const char *gpu;      /* "NVIDIA H100 80GB HBM3" */
  int cc;               /* compute capability, 10 * major + minor */
  const char *compiler; /* GOP_VERSION */
  /* Not part of the key: tune_db_put records the operator's shape under
   * its hash when `shape` is set; tune_db_list fills both when known. */
  const char *op_name;
  const TuneOpShape *shape;
} TuneKey;

typedef struct TuneRecord {
  char schedule[128];
  double time_ms, gbps, bound_fraction;
  int64_t measured_at; /* Unix seconds */
  /* The point's lowered facts (TunePoint's), when have_facts. */
  bool have_facts;
  int atomic_rows, atomic_scalars, kernels;
  bool warp, vertex;
} TuneRecord;

/* FNV-1a (64-bit) of the operator's IR text. */
uint64_t tune_op_hash(const IrOp *op);
/* Opens `path`, creating it when missing. Refuses, with a message naming
 * the file and changing nothing, a file that is not a SQLite database, a
 * SQLite database of another application, and one of a newer schema than
 * this build knows; migrates older ones. NULL after reporting. */
TuneDb *tune_db_open(const char *path, Diag *d);
void tune_db_close(TuneDb *db); /* NULL is fine */
/* Stores a measurement in one transaction: all of the row or nothing.
 * 0 or -1 after reporting. */
int tune_db_put(TuneDb *db, const TuneKey *k, const TuneRecord *r, Diag *d);
/* The fastest record stored under exactly `k`: 1 found, 0 none, -1 after
 * reporting. */
int tune_db_get_best(TuneDb *db, const TuneKey *k, TuneRecord *out, Diag *d);
/* Calls `fn` for every record, in insertion order; returns the count or
 * -1 after reporting. */
typedef void (*TuneListFn)(void *ctx, const TuneKey *k, const TuneRecord *r);
int tune_db_list(TuneDb *db, TuneListFn fn, void *ctx, Diag *d);
/* The schema version this build writes. */
int tune_db_schema_version(void);
/* The application_id that marks a gop tuning database ("gopt"). */
#define TUNE_DB_APPLICATION_ID 0x676f7074

/* Parses schedule text ("warp_edge(4, 2)", "gar()", or another named
 * schedule of `lib` with up to four positive integer arguments; any name
 * when `lib` is NULL) into a point's strategy and knobs, without lowering:
 * the lowered facts stay zero. 0, or -1 when the text is none of these. */
int tune_point_parse(const char *text, const IrModule *lib, TunePoint *out);

/* ---------------------------------------------------------------------------
 * tune.c: the tuner, measuring candidates on the GPU (README "Autotuning").
 */
typedef struct TuneProgress {
  const char *phase;   /* before measuring: what is being prepared, else NULL */
  int done, total;     /* candidates measured so far, and planned */
  double elapsed_s, budget_s;
  const char *current; /* the candidate about to be measured */
  double best_ms;      /* the best verified time so far (0: none yet) */
  const char *best;
} TuneProgress;

typedef struct TuneJob {
  const IrOp *op;          /* as written (the interpreter's reference) */
  const IrModule *lib;     /* the named schedules it may use */
  const RtGraph *g;
  IrExtents ext;           /* by symbol id, all set */
  int64_t F;               /* for the model and the database key */
  float *const *inputs;    /* by tensor id: every input's data */
  const char *target;      /* NULL: the GPU's */
  double budget_s;         /* measuring stops once this much time has passed */
  int max_candidates;      /* 0: every legal point, in the model's order */
  int warmup, reps;
  int64_t check_edges;     /* larger graphs: proxy graph + anchor check */
  TuneDb *db;              /* NULL: nothing is stored */
  const char *compiler;    /* the key's compiler version */
  volatile sig_atomic_t *stop; /* set (by a signal handler): stop after the
                              candidate being measured */
  void (*progress)(void *ctx, const TuneProgress *p);
  void *progress_ctx;
} TuneJob;

typedef enum { TUNE_OK, TUNE_WRONG, TUNE_FAILED } TuneOutcome;

typedef struct TuneResult {
  char schedule[128];
  TuneOutcome outcome;
  double median_ms, min_ms, gbps, bound_fraction;
  double model_us, compile_ms, worst_rel;
  bool stored;
  int order;               /* its place in the model's ranking */
  char why[400];           /* WRONG and FAILED: what happened */
} TuneResult;

typedef enum { TUNE_CHECK_INTERPRETER, TUNE_CHECK_PROXY_AND_ANCHOR } TuneCheck;

typedef struct TuneReport {
  TuneResult *results;     /* malloc'ed: verified by time, then wrong, failed */
  int n;                   /* candidates measured or tried */
  int candidates;          /* legal points of the space */
  int measured, wrong, failed, stored;
  bool interrupted, out_of_budget;
  TuneCheck check;
  char anchor[128];        /* TUNE_CHECK_PROXY_AND_ANCHOR: the first verified */
  char device[128];
  uint64_t fewest_bytes;
  double copy_gbps, seconds, reference_s;
} TuneReport;

/* Tunes `job->op` on the GPU. RT_OK (the report may hold no verified
 * candidate), RT_NO_DRIVER / RT_NO_DEVICE when there is no GPU, RT_ERR
 * after reporting (a database that cannot be written stops the run; what
 * was stored stays). The report is filled in every case. */
RtStatus tune_run(const TuneJob *job, TuneReport *rep, Diag *d);
void tune_report_free(TuneReport *rep);

/* ---------------------------------------------------------------------------
 * xgb.c, tune_predict.c: the learned predictor (XGBoost, optional).
 */
/* Opens libxgboost (once). 0, or -1 after reporting why not. */
int rt_xgb_open(Diag *d);
bool rt_xgb_available(void);
void rt_xgb_version(int *major, int *minor, int *patch);
/* 0 when `result` is 0; else reports `call` and XGBGetLastError, -1. */
int rt_xgb_check(Diag *d, const char *call, int result);

#define TUNE_NFEATURES 32
/* The features of one candidate: the graph's signature, the operator's
 * shape, F, the point's knobs and lowered facts, the cost model's terms. */
void tune_features(const TuneGraphSig *g, const TuneOpShape *s, int64_t F,
                   const TunePoint *p, float out[TUNE_NFEATURES]);
const char *tune_feature_name(int i);

typedef struct TunePredictor TunePredictor;
/* Trains on `n` rows of features `x` and labels `y` (log2 of time over the
 * case's best). NULL after reporting (libxgboost missing included). */
TunePredictor *tune_predictor_train(const float *x, const float *y, int n, Diag *d);
/* Predicted labels of `n` rows. 0 or -1. */
int tune_predictor_predict(TunePredictor *p, const float *x, int n, float *out, Diag *d);
/* Saves through a temporary file; 0 or -1. */
int tune_predictor_save(TunePredictor *p, const char *path, Diag *d);
/* Loads a model file, refusing (NULL, with the reason) one that is not
 * ours, damaged, or of another feature set. */
TunePredictor *tune_predictor_load(const char *path, Diag *d);
void tune_predictor_free(TunePredictor *p); /* NULL is fine */
/* DB.xgb, malloc'ed. */
char *tune_predictor_path(const char *db_path);
/* Sorts `pts` by predicted time, best first; `predicted` (may be NULL)
 * gets the sorted predictions. 0 or -1. */
int tune_predictor_rank(TunePredictor *p, const TuneOpShape *shape, TunePoint *pts, int n,
                        const TuneGraphSig *g, int64_t F, float *predicted, Diag *d);

typedef struct TuneTrainInfo {
  int rows, graphs, cases;
  char model_path[1024];
} TuneTrainInfo;
/* Trains from every usable row of the database and saves DB.xgb. */
int tune_predictor_train_db(const char *db_path, const IrModule *lib, TuneTrainInfo *info,
                            Diag *d);

typedef struct TuneEvalInfo {
  int graphs, cases, default_cases, within_10pct;
  double geomean, model_geomean, default_geomean, median, worst;
} TuneEvalInfo;
/* Leave-one-graph-out over the database; a table per graph goes to `out`
 * (may be NULL). 0 or -1. */
int tune_predictor_evaluate(const char *db_path, const IrModule *lib, FILE *out,
                            TuneEvalInfo *info, Diag *d);

/* ---------------------------------------------------------------------------
 * tune_import.c: a tuning database from a GPU suite's CSV.
 */
typedef struct TuneImportInfo {
  int imported, graphs;
  int skipped_default, skipped_wrong, skipped_no_time, skipped_refused, truncated;
} TuneImportInfo;
/* Stores every measured row of `csv` in `db`, under GPU `gpu` with compute
 * capability `cc` and compiler version `compiler`; graphs are read from
 * `datasets`, operators and schedules from `stdlib`. 0, or -1 after
 * reporting `csv:LINE: error: ...` (nothing is stored from a file with a
 * malformed line). */
int tune_import_csv(const char *csv, TuneDb *db, const IrModule *stdlib, const char *datasets,
                    const char *gpu, int cc, const char *compiler, Arena *a,
                    TuneImportInfo *info, Diag *d);

#endif
