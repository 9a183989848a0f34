/* api/api.h: what the files of the public C API (include/gop.h) share.
 *
 * The API is the room on top: it is the only one that sees every other
 * (lang/, ir/, passes/, codegen/, graph/, interp/, runtime/, tune/), and
 * the tools and frameworks see only include/gop.h. This private header
 * holds the definitions of gop.h's opaque types and the helpers more than
 * one API file uses; nothing outside api/ and models/ includes it. Every
 * argument a caller controls is checked here and reported through the
 * context's Diag, so a framework embedding gop gets a message, not a crash.
 */
#ifndef GOP_API_H
#define GOP_API_H

#include <pthread.h>

#include "codegen/codegen.h"
#include "gop.h"
#include "ir/ir.h"
#include "runtime/runtime.h"

struct GopContext {
  /* Taken (API_LOCK) by every entry point that touches what the context
   * shares between its objects: the arena, the diagnostics, the kernel
   * cache, the graphs' device copies, the lists. Recursive: entry points
   * call one another. docs/threads.md says what this promises. */
  pthread_mutex_t lock;
  Arena *arena;
  Diag diag;
  GopModule *stdlib;
  GopGraph *graphs;
  GopRun *runs; /* to free their compiled programs */
  GopCompileTimes times;
  /* the kernel cache (api/device.c): compiled programs by key, in memory,
   * and as kernel packs in cache_dir when set */
  struct ApiKernel *kernels;
  char *cache_dir; /* malloc'ed; NULL: memory only */
  GopCacheStats cache;
  uint64_t cache_tick;     /* counts lookups: the kernels' LRU order */
  uint64_t cache_gen;      /* the folder's generation: a new folder or a
                            * clear makes every kernel in memory unwritten */
  int cache_max_kernels;   /* GOP_CACHE_MAX_KERNELS: kept in memory */
  int64_t cache_max_bytes; /* GOP_CACHE_MAX_BYTES: packs in the folder */
  int64_t cache_evicted;   /* kernels dropped from memory */
  struct ApiKeyMemo *key_memo; /* kernel keys by operator and options
                                  (api/device.c's make_key) */
  int key_memos;
  char gpu_target[16];     /* api_pick_target's "sm_NN" of the GPU */
};

struct GopModule {
  GopContext *ctx;
  IrModule *ir;
  const char *file, *text; /* the source; NULL for the stdlib */
  GopOp **ops;
  IrModule *sched_lib; /* api_schedule_library's, made at the first call */
};

struct GopOp {
  GopModule *module;
  IrOp *ir;
  const char *signature;
  const char *doc; /* the comment above its definition, "" if none */
  /* gradient operators (api/grad.c): the forward operator, and the name
   * of each forward tensor's adjoint here, by forward tensor id */
  const GopOp *grad_of;
  const char **adjoints;
};

struct GopGraph {
  Graph *rt;
  RtDevGraph *dev; /* its device copy for device-resident runs, uploaded at
                      the first one and kept until the context goes */
  RtDevGraph *dev_reversed; /* the same of its reversed graph, for programs
                               scheduled with transpose() */
  GopGraph *reversed; /* a graph built on the device: its reversed graph,
                         built there too (gop_graph_set_reversed; not owned) */
  GopGroupBuilder group_builder; /* a graph built on the device: who builds
                                    its group tables there (or NULL) */
  void *group_user;
  GopGraph *next;
};

/* malloc'ed, with what it allocates (gop_run_free frees it; the context
 * frees those left) */
struct GopRun {
  GopContext *ctx;
  const GopOp *op;
  const GopGraph *graph;
  IrExtents ext;
  bool *ext_set;
  void **data;     /* by tensor id, in each tensor's dtype; temporaries stay NULL */
  int64_t *numel;  /* bound sizes, by tensor id */
  double seconds;
  GopDevice device;
  char *schedule, *target; /* malloc'ed copies; NULL: defaults */
  int warmup, reps;
  CgProgram prog; /* compiled once, or read from a pack */
  IrOp *lowered;  /* the scheduled, lowered op the interpreter runs; NULL: not yet */
  Arena *arena;   /* the run's own: `lowered`; NULL until needed */
  bool have_prog, from_pack;
  GopRunStats stats;
  RtExecResult exec;
  /* device-resident runs (api/device.c) */
  RtDevPtr *dptr;         /* bound device pointers, by tensor id */
  RtDevPtr *dptr_checked; /* the pointer last checked in each slot */
  int64_t *dnumel;        /* elements checked with it */
  void *stream, *stream_checked;
  bool stream_ok;
  const CgProgram *cached; /* the context's kernel cache's, not owned */
  RtDevExec dx;
  GopRun *next; /* in the context's list */
};

/* Locks `ctx` until the end of the enclosing block (a cleanup attribute
 * unlocks it on every return). NULL is allowed and locks nothing. */
static inline GopContext *api_lock_(GopContext *ctx) {
  if (ctx) pthread_mutex_lock(&ctx->lock);
  return ctx;
}
static inline void api_unlock_(GopContext **ctx) {
  if (*ctx) pthread_mutex_unlock(&(*ctx)->lock);
}
#define API_LOCK(ctx) \
  GopContext *api_locked_ __attribute__((cleanup(api_unlock_), unused)) = api_lock_(ctx)

/* Where the API's own messages point: "gop: error: ...". */
extern const Loc api_loc;

/* ---- run.c ---- */
/* Frees run `r` and everything it holds (its prepared launch, program,
 * arrays, arena); the caller has taken it off the context's list. */
void api_run_destroy(GopRun *r);
/* Wraps a host graph in the API's and hands it to the context (which frees
 * it); NULL after reporting, with `rt` freed. */
GopGraph *api_adopt_graph(GopContext *ctx, struct Graph *rt);
/* Whether `g` has host arrays; else reports that `what` (a function or
 * "a run on host buffers") needs them and it was built on the device. */
bool api_host_graph(GopContext *ctx, const GopGraph *g, const char *what);

/* ---- compile.c ---- */
/* Wraps an IR module as the API's module (its operators, their signatures
 * and docs) in `ctx`. */
GopModule *api_wrap_module(GopContext *ctx, IrModule *ir, const char *file,
                           const char *text);
/* Reads a whole text file into the arena; NULL after reporting. */
char *api_read_text(GopContext *ctx, const char *path);
/* Named schedules visible to an operator: its own file's first, then the
 * standard library's. */
IrModule *api_schedule_library(GopContext *ctx, const GopModule *m);
/* The target to compile for: `asked` (checked; NULL after reporting),
 * else the GPU's, else CG_DEFAULT_TARGET (api/compile.c). */
const char *api_pick_target(GopContext *ctx, const char *asked);

/* A scheduled copy of `op` (lowered to GPU-ready IR when `lower`); NULL
 * after reporting. The original is never changed. */
IrOp *api_schedule_op(const GopOp *op, const GopCompileOptions *o, bool lower);
/* api_schedule_op into arena `a`: a scratch arena for a copy that is done
 * with before the call returns, or a run's own. */
IrOp *api_schedule_op_in(const GopOp *op, const GopCompileOptions *o, bool lower, Arena *a);
/* Schedules, lowers and compiles `op` into `out`. 0 or -1. */
/* The index width to compile `o` for: o->index_bits, or when 0, 64 if
 * GOP_INDEX64=1 else 32. -1 after reporting a width other than 32 or 64. */
int api_index_bits(GopContext *ctx, const GopCompileOptions *o);
int api_compile_op(const GopOp *op, const GopCompileOptions *o, CgProgram *out);
/* What a run compiles its kernels with: its schedule and target, and the
 * layout of its graph (the index width, edge ids in CSR order). */
GopCompileOptions api_run_options(const GopRun *r);

/* ---- device.c ---- */
/* Frees the kernel cache, the runs' device state and the graphs' device
 * copies (gop_context_free). */
void api_device_free(GopContext *ctx);
/* Frees a graph's device copies (its own and its reversed graph's) and
 * their group tables. */
void api_graph_free_device(GopGraph *g);

#endif
