/* runtime/runtime.h: the GPU runtime.
 *
 * The CUDA driver (opened with dlopen, so that a machine with no GPU runs
 * every other tool), device memory, graphs on the device, PTX modules and
 * launches, timing with events, the executor of compiled programs, and
 * cuBLAS; one loader of optional shared libraries (dl.c) serves the
 * driver, cuBLAS and the tuner's XGBoost. Sectioned by the file that
 * implements each part.
 *
 * Uses: ir/ (diagnostics), graph/ (host graphs, group tables), codegen/'s
 * CgProgram (what a kernel pack or the compiler hands over: kernels and
 * their launch rules; never the LLVM side). Must not reach into lang/,
 * passes/, the tuner, the models or the API: the executor runs what it is
 * given and knows nothing of how it was scheduled.
 */
#ifndef GOP_RUNTIME_H
#define GOP_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "graph/graph.h"
#include "ir/ir.h"

/* ---------------------------------------------------------------------------
 * dl.c: the one loader of optional shared libraries (the CUDA driver,
 * cuBLAS, XGBoost).
 */
/* What rt_dl_open tried: the name that loaded, else why each failed. */
typedef struct RtDlTried {
  const char *used;  /* the name that loaded (one of `names`), or NULL */
  char first[512];   /* the first failure's dlerror */
  char all[1024];    /* every failure, each as "\n  dlerror" */
} RtDlTried;
/* One entry point: its name, an older name to try when it is missing (or
 * NULL), and the function pointer to fill (NULL when both are missing). */
typedef struct RtDlSym {
  const char *name, *older;
  void *slot;
} RtDlSym;
/* dlopens the first of the `n` names (NULL entries skipped) that loads;
 * NULL with `tried` saying why not. Reports nothing itself. */
void *rt_dl_open(const char *const *names, int n, RtDlTried *tried);
/* Fills every slot of `syms` from `lib`; returns how many entry points are
 * missing, the first in *first_missing. */
int rt_dl_bind(void *lib, const RtDlSym *syms, int n, const char **first_missing);
void rt_dl_close(void *lib); /* NULL is fine */

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
/* The reason a failure reported into `d` gives, to be said again inside
 * another message: d's text without its leading "error: ", else the
 * status's name when `d` holds nothing. */
const char *rt_reason(const Diag *d, RtStatus s);

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
  int ordinal;        /* the device's number (GOP_CUDA_DEVICE, else 0) */
  RtDeviceLimits limits;
} RtDeviceInfo;

/* The open device, or NULL when the driver is not open. */
const RtDeviceInfo *rt_cuda_device(void);
/* The device's name, or "no CUDA device" when not open. */
const char *rt_cuda_device_name(void);
/* The retained primary context (a CUcontext), or NULL when not open: the
 * one PyTorch and every runtime-API program use on the same device. */
void *rt_cuda_context(void);
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
/* Registers `fn` to run inside rt_cuda_close, with the context still
 * current, before it goes (module.c unloads its modules this way, so that
 * this file need not know of them); the last registered runs first; a
 * function registered twice runs once. */
#define RT_AT_CLOSE_MAX 8
void rt_cuda_at_close(void (*fn)(void));
/* The one checker of CUresults: returns RT_OK for CUDA_SUCCESS; otherwise
 * reports "CUDA error in CALL: NAME (description)", followed by `what` when
 * not NULL, and returns RT_OOM, RT_NO_DEVICE or RT_ERR. */
RtStatus rt_cuda_check(int result, const char *call, const char *what,
                       Diag *d);
/* The failure GOP_CUDA_FAIL=NAME[:CODE[:N]] injects into this call of entry
 * point `call` (the N-th of the process), or 0: call the driver. For
 * testing the paths of a driver call that fails mid-run. */
int rt_cuda_inject(const char *call);
/* True when a sticky error (an illegal address in a kernel, a launch
 * failure ...) has corrupted the CUDA context of this process; then
 * reports, through `d` when not NULL, that GPU work is refused and why.
 * rt_cuda_open refuses from then on. */
bool rt_cuda_lost(Diag *d);

/* ---------------------------------------------------------------------------
 * memory.c, devgraph.c: device memory, with accounting, and graphs on the
 * device.
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
/* Copies `bytes` from the host to `t` at byte `offset`; refuses a copy
 * that would end past the tensor. */
RtStatus rt_tensor_upload_at(RtDevTensor *t, size_t offset, const void *host, size_t bytes,
                             Diag *d);
/* Copies `bytes` from the start of `t` to the host; refuses like upload. */
RtStatus rt_tensor_download(const RtDevTensor *t, void *host, size_t bytes,
                            Diag *d);
/* Sets every 32-bit word of `t` to `word` (0.0f, -inf ... as bits); the size
 * must be a multiple of 4. Returns RT_OK or the failure's status. */
RtStatus rt_tensor_fill32(RtDevTensor *t, uint32_t word, Diag *d);
/* Fills the first n elements of dtype `dt` with the pattern `bits` (its low
 * 16 bits for f16/bf16, 32 for f32, 64 for f64). */
RtStatus rt_tensor_fill_bits(RtDevTensor *t, IrDType dt, uint64_t bits, int64_t n, Diag *d);
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

struct CgProgram;

/* The formats of a graph a kernel can ask for (see Graph). */
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
 * and then kept: a schedule asks for the formats it needs. Arrays have the
 * host graph's meaning and edge ids; vertex ids and degrees are int32, the
 * offsets and edge ids of CSR and CSC int32 or int64 as index_bits says
 * (the width of the kernels that read them, docs/index64.md). */
typedef struct RtDevGraph {
  const Graph *host; /* not owned; must outlive the device graph */
  int32_t nv;
  int64_t ne;
  int index_bits; /* of the CSR and CSC held: 32 or 64 */
  RtDevTensor src, dst;
  RtDevTensor in_ptr, in_eid, in_src;
  RtDevTensor out_ptr, out_eid, out_dst;
  RtDevTensor in_deg, out_deg;
  unsigned loaded; /* RT_FMT_BIT of each format held */
  bool borrowed;   /* the formats are the caller's memory (rt_devgraph_adopt):
                      never freed here, never uploaded again */
  /* neighbour-group tables uploaded so far (graph/groups.c), least
   * recently used first */
  struct RtDevGroups {
    const GraphGroups *host;
    RtDevTensor dst, first, end;
    RtDevTensor unowned; /* the destinations no group owns (unowned(G)) */
    RtDevTensor vptr, vrow; /* uploaded by rt_devgraph_group_rows */
    GraphGroups *own; /* a table built on the device (groups_build): its
                         sizes and classes, no host arrays; the tensors
                         are the builder's memory, never freed here */
    /* a panel table (rt_devgraph_panels): `host` is its rows seen as a
     * group table (GraphPanels.rows), and the pairs' arrays */
    const struct GraphPanels *panels;
    RtDevTensor own_row, pair_src, pair_mask, pair_pos;
  } groups[4];
  int ngroups;
  int groups_gen; /* counts tables dropped: a prepared launch (RtDevExec)
                     that read addresses before a drop prepares again */
  /* Builds a table on the device for a graph that has no host CSR
   * (Graph.device_only): given t's G, ilv, ncls and thr (resolved) and
   * dg's index width, fills t's n, nunowned, cls_rows, cls_min and order,
   * and the addresses of dst, first, end, unowned, vptr and vrow (in that
   * order; positions in dg->index_bits), memory the builder keeps until the
   * graph goes. NULL: such a graph takes no group schedule. */
  RtStatus (*groups_build)(void *user, const struct RtDevGraph *dg, GraphGroups *t,
                           RtDevPtr ptrs[6], Diag *d);
  void *groups_user;
} RtDevGraph;
/* graph/groups.c: the device copy of `g`'s table for (G, ilv, ncls, thr),
 * uploaded once (the least recently used of four is dropped for a fifth,
 * so a program's launches, which take at most four, keep theirs while
 * they are prepared); on a graph built on the device, the table its
 * groups_build made there. NULL after reporting. */
const struct RtDevGroups *rt_devgraph_groups(RtDevGraph *dg, int G, int ilv,
                                             int ncls, int thr, Diag *d);
/* The same, with the table's rows by destination (vptr, vrow) uploaded
 * too: what a group_rows loop reads (passes/segment.c). */
const struct RtDevGroups *rt_devgraph_group_rows(RtDevGraph *dg, int G,
                                                 int ilv, int ncls, int thr,
                                                 Diag *d);
/* graph/panels.c: the device copy of `g`'s panel table for (G, P)
 * (passes/panel.c), kept with the group tables; NULL after reporting (a
 * graph built on the device has no host CSR to cut panels from). */
const struct RtDevGroups *rt_devgraph_panels(RtDevGraph *dg, int G, int P, Diag *d);
/* Frees the group tables of `dg` (exec.c, with rt_devgraph_free). */
void rt_devgraph_groups_free(RtDevGraph *dg);

/* Starts a device graph for `g` holding nothing yet (no driver call). */
void rt_devgraph_init(RtDevGraph *dg, const Graph *g);
/* Starts a device graph for `g` (a device_only graph) on arrays the caller
 * owns and keeps until rt_devgraph_free: ptrs by RtDevGraph field in the
 * order src, dst, in_ptr, in_eid, in_src, out_ptr, out_eid, out_dst,
 * in_deg, out_deg; offsets and edge ids in `index_bits`. Every format is
 * held from then on; nothing is copied (no driver call). */
void rt_devgraph_adopt(RtDevGraph *dg, const Graph *g, int index_bits, const RtDevPtr ptrs[10]);
/* Uploads each format in the mask `formats` that is not held yet. Returns
 * RT_OK, or the failure's status after reporting; a format that failed
 * holds no memory and is not marked loaded. */
RtStatus rt_devgraph_load(RtDevGraph *dg, unsigned formats, Diag *d);
/* Sets the width of the offsets and edge ids (32 or 64) the next loads
 * upload; CSR and CSC held in the other width are freed first. */
void rt_devgraph_set_index_bits(RtDevGraph *dg, int bits);

/* The index width the GPU runs `g` with: 64 when it needs it
 * (cg_index_bits_needed) or when GOP_INDEX64=1 forces 64-bit kernels on
 * any graph (docs/index64.md), else 32. */
int rt_index_bits(const Graph *g);
/* Whether kernels for `g` take edge ids as CSR positions (CgLayout): when
 * its edge ids are (Graph.csr_edges), unless GOP_CSR_EDGES=0. */
bool rt_csr_edges(const Graph *g);
/* RT_OK when program `p` can run on `g`: compiled for rt_index_bits(g),
 * and for edge ids in CSR order only if g's are; else refuses, saying what
 * the graph needs and how to get it. */
RtStatus rt_check_layout(const struct CgProgram *p, const Graph *g, Diag *d);
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
 * kernels belong to the cache and live while held (rt_module_load to
 * rt_module_release), and after that until the cache's bound unloads them,
 * rt_module_unload or rt_cuda_close.
 */
typedef struct RtModule RtModule;

/* What the driver says about a compiled kernel. */
typedef struct RtKernelInfo {
  int max_threads;   /* per block, given its register use */
  int static_shared; /* bytes of shared memory declared in the kernel */
  int num_regs;      /* per thread */
  int local_bytes;   /* per thread: spills and local arrays */
  int ptx_version, binary_version; /* 10 * major + minor */
  int floor_asked;   /* the PTX's occupancy floor (.minnctapersm), 0: none */
  int floor;         /* the floor it was compiled with: lower where the JIT
                        spilled at the one asked (rt_module_load_floors) */
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
  /* the kernel starts with griddepcontrol.wait (CgKernel.waits): it may be
   * launched while the kernel before it in the stream still runs */
  bool programmatic;
} RtLaunchConfig;

/* 64-bit FNV-1a of `n` bytes: the module cache's key. */
uint64_t rt_fnv1a64(const void *data, size_t n);

/* Loads PTX text (NUL-terminated), or returns the module already loaded
 * from the same text, held for the caller until rt_module_release (a held
 * module is never unloaded by the cache's bound). `what` names it in
 * messages ("kernel pack x.ptx"), or NULL. Returns NULL after reporting; a
 * JIT failure quotes the JIT's log. */
RtModule *rt_module_load(const char *ptx, const char *what, Diag *d);
/* rt_module_load, where the kernels named in `lower` may be compiled with
 * a lower occupancy floor (.minnctapersm) than the text asks for when the
 * JIT spills registers at it (module.c, jit_unspilled). */
RtModule *rt_module_load_floors(const char *ptx, const char *what, const char *const *lower,
                                int nlower, Diag *d);
/* Gives back one hold of rt_module_load's; past GOP_CACHE_MAX_MODULES
 * loaded modules (default 256), those nobody holds are unloaded, least
 * recently loaded first. Only for a module of the driver session open now. */
void rt_module_release(RtModule *m);
/* The number of modules loaded in the cache. */
int rt_module_count(void);
/* Modules the cache's bound has unloaded in this process. */
int64_t rt_module_evicted(void);
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

/* rt_launch in `stream` (a CUstream; NULL: the legacy default stream). The
 * configuration is not validated again (the caller did, once): this is the
 * per-call path of the device-resident runs. */
RtStatus rt_launch_stream(RtKernel *k, const RtLaunchConfig *c, void **args,
                          void *stream, Diag *d);

/* ---------------------------------------------------------------------------
 * timing.c: measuring with CUDA events.
 */
/* One run of the work to time (typically one rt_launch); returns a status. */
typedef RtStatus (*RtWorkFn)(void *ctx, Diag *d);

typedef struct RtTiming {
  double median_ms, min_ms, max_ms, mean_ms;
  int reps;
  int calls; /* graph replay (rt_time_graph): the calls captured in the graph
                that each repetition replayed, the times being per call; 0:
                timed with events, a call a repetition (rt_time_work) */
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
/* One run of the work to time by graph replay, queued in `stream` (a
 * CUstream): everything it does must be capturable -- launches and
 * asynchronous fills in that stream, nothing that waits for the host or
 * allocates. */
typedef RtStatus (*RtStreamWorkFn)(void *ctx, void *stream, Diag *d);
/* rt_time_graph's choice of calls per graph: enough for a replay of about
 * this long, as estimated from eager runs. */
#define RT_GRAPH_TARGET_MS 1.0
/* Times `fn` by replaying a CUDA graph: in a stream of its own, `warmup`
 * eager runs (at least one); then `calls` runs captured back to back into
 * one graph (0: enough for about RT_GRAPH_TARGET_MS, from the time of three
 * more eager runs, at most `max_calls`), replayed once to upload it and
 * then `reps` (>= 1) times between events; each time is divided by the
 * calls (out->calls). Returns RT_OK, or the status of the first failure
 * after reporting it (a call that cannot be captured: the capture's end
 * names CUDA_ERROR_STREAM_CAPTURE_*); the stream, the graph and its
 * instance are destroyed either way. */
RtStatus rt_time_graph(RtStreamWorkFn fn, void *ctx, int calls, int max_calls, int warmup,
                       int reps, RtTiming *out, Diag *d);
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
 * (graph_free forgets them). Before the first stage every output and
 * temporary is initialised: a reduction target to its identity (0, -inf,
 * +inf), an output written only by plain stores to NaN, so an element the
 * kernels never write shows up as NaN rather than as a plausible 0. The
 * NaN fill is made before the checked run only: the timed runs leave such
 * outputs to the kernels, which write every element.
 */
struct CgProgram;

/* How the timed runs are timed (RtExecOptions.timing). */
typedef enum RtTimeMethod {
  RT_TIME_EVENTS, /* events around each repetition, launched from the host */
  RT_TIME_GRAPH,  /* replays of a CUDA graph of many repetitions
                     (rt_time_graph): no launch gaps on short runs */
} RtTimeMethod;
/* The most runs of an op one captured graph holds (calls x sets). */
#define RT_GRAPH_MAX_RUNS 1024

typedef struct RtExecOptions {
  int warmup, reps; /* timing: runs before, and runs measured (median) */
  double slow_ms;   /* > 0: when the first (checked) run takes longer than
                       this, time one run with no warm-up (with events) */
  RtTimeMethod timing;
  int graph_calls;  /* RT_TIME_GRAPH: repetitions (rounds over the sets)
                       captured per graph; 0: enough for a replay of about
                       RT_GRAPH_TARGET_MS, at most RT_GRAPH_MAX_RUNS runs */
  bool events_fallback; /* RT_TIME_GRAPH: where the capture or a replay
                       fails and the context is fine, time with events
                       instead (graph_failed set, the reason in graph_note)
                       rather than fail */
  int sets;         /* > 1: the timed runs rotate among this many copies of
                       the op's tensors (inputs, outputs, temporaries), all
                       run back to back in each timed repetition, whose time
                       is divided by their number: what the peers do where
                       the tensors fit in L2 (bench/gop_bench.c); the graph
                       stays one copy, as in a GNN's layers */
  bool unpoisoned;  /* the checked run leaves the tensors the kernels write
                       whole (outputs of plain stores, tensors the op fills
                       itself: CgTensorInfo.filled) as their allocation left
                       them, as every later run and a device run do, instead
                       of filling them with NaN first: what compute-sanitizer's
                       initcheck needs to see a read of an element no stage
                       wrote (tests/gpu/suite.c --no-poison). Reduction
                       targets still get their identity. */
} RtExecOptions;

typedef struct RtExecResult {
  RtTiming timing;          /* the whole op: initialisation and every stage
                               (per run, over the rotated sets) */
  int sets;                 /* the copies the timed runs rotated among */
  bool graph_failed;        /* RT_TIME_GRAPH: the capture or a replay failed
                               and the context is fine, the outputs came
                               back: reported as the error, or, with
                               events_fallback, timed with events and
                               said in graph_note */
  char graph_note[400];     /* events_fallback: why the graph was not used */
  uint64_t fewest_bytes;    /* inputs read once, outputs written once, and a
                               CSR's (|V|+1) offsets and |E| indices once */
  double gbps;              /* fewest_bytes / median time */
  double copy_gbps;         /* measured device-to-device copy bandwidth */
  uint64_t graph_bytes[RT_FMT_COUNT]; /* device memory per graph format */
  uint64_t tensor_bytes;    /* device memory of the op's tensors */
  uint64_t group_bytes;     /* neighbour-group tables its stages read */
  uint64_t peak_bytes;      /* device memory held while the op ran: its
                               tensors and every cached graph format */
  int nkernels;             /* its kernels as the driver compiled them */
  struct RtKernelReport {
    char name[64];
    int threads;            /* a block */
    RtKernelInfo info;
  } kernels[16];
} RtExecResult;

/* Runs `p` on `g` with extent values `syms` (by symbol id) and host buffers
 * `host` (by tensor id: inputs read, outputs written; temporaries ignored),
 * timing it as `opt` says. Returns RT_OK or the status of the failure,
 * reported through `d`. */
RtStatus rt_exec_program(const struct CgProgram *p, const Graph *g,
                         const int64_t *syms, void *const *host,
                         const RtExecOptions *opt, RtExecResult *res,
                         Diag *d);
/* Frees the cached device formats of `g` (graph_free calls it through
 * Graph.on_free, which device_graph sets). */
void rt_exec_forget_graph(const Graph *g);
struct CgKernel;
/* Bytes of dynamic shared memory kernel `k` of `p` needs on `g` with
 * `syms`: its staged inputs (promote(X, shared)), each rounded up to 16
 * bytes, then a @shared groups stage's accumulator rows. Returns them, or
 * -1 after reporting a bad size, or staged inputs that take more than
 * `limit` bytes (> 0) with the rows: the message names each tensor and its
 * bytes. */
int64_t rt_kernel_shared_bytes(const struct CgProgram *p,
                               const struct CgKernel *k, const Graph *g,
                               const int64_t *syms, int64_t limit, Diag *d);
/* ---- device-resident runs: the caller's device memory, in its stream ----
 *
 * A program prepared once for a graph and extents (kernels looked up, grids
 * sized, group tables and graph formats on the device, temporaries
 * allocated) and then launched many times on device pointers the caller
 * owns, asynchronously in the caller's stream: nothing is copied and
 * nothing waits. Outputs that are reduction targets are set to their
 * identity in the same stream first; outputs of plain stores are written
 * whole by the kernels. */
typedef struct RtDevExec {
  const struct CgProgram *p; /* not owned */
  const Graph *g;            /* not owned */
  RtDevGraph *dg;            /* not owned: the caller keeps it for the graph */
  int64_t syms[16];          /* the extents it was prepared for */
  uint32_t epoch;            /* the driver session it was prepared in */
  int groups_gen;            /* dg's group tables when prepared */
  struct RtDevLaunch *launches; /* by kernel */
  RtDevTensor *temps;        /* by tensor id: the temporaries (owned) */
  struct RtModule *module;   /* its kernels' module, held while prepared */
  int64_t *numel;            /* by tensor id */
  bool prepared;
} RtDevExec;

/* Prepares `x` to run `p` on `g` (whose device copy is `dg`) with extents
 * `syms` (p->nsyms of them); does nothing when it already is, for the same
 * program, graph, extents and driver session. RT_OK or the failure's status
 * after reporting (then `x` holds nothing). */
RtStatus rt_devexec_prepare(RtDevExec *x, const struct CgProgram *p, const Graph *g,
                            RtDevGraph *dg, const int64_t *syms, Diag *d);
/* Elements of tensor `id` of a prepared `x` (outputs and inputs). */
int64_t rt_devexec_numel(const RtDevExec *x, int id);
/* Launches a prepared `x` with the device pointers `ptrs` (by tensor id;
 * inputs and outputs only, temporaries ignored) in `stream`. Returns as soon
 * as the work is queued; kernel faults surface at the next synchronisation. */
RtStatus rt_devexec_launch(RtDevExec *x, const RtDevPtr *ptrs, void *stream, Diag *d);
/* Frees what `x` holds (its temporaries) and zeroes it. */
void rt_devexec_free(RtDevExec *x);

/* Checks that [p, p + bytes) is device memory of the open device: refuses
 * (RT_ERR, with a message naming `what`) host memory, memory of another
 * device, an unknown address, or an allocation that ends before p + bytes. */
RtStatus rt_pointer_check(RtDevPtr p, size_t bytes, const char *what, Diag *d);
/* Checks that `stream` (a CUstream; NULL and the legacy and per-thread
 * handles are always fine) belongs to the primary context gop uses. */
RtStatus rt_stream_check(void *stream, Diag *d);
/* Waits for the work queued in `stream`; reports a kernel's fault. */
RtStatus rt_stream_sync(void *stream, Diag *d);

/* Prints the device memory report of a run: each graph format and the
 * tensors, and the peak. */
void rt_exec_print_memory(FILE *out, const RtExecResult *res);
/* Prints "  kernels: ...": each kernel's registers, its local memory where
 * it has any, and its occupancy floor where the runtime lowered it. */
void rt_exec_print_kernels(FILE *out, const RtExecResult *res);

#endif
