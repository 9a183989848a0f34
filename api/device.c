/* api/device.c: runs on the caller's device memory, and the kernel cache.
 *
 * A framework that embeds gop holds its tensors on the GPU already; copying
 * them through the host for every operator (gop_run_exec's way) would cost
 * more than the kernels. The functions here bind device pointers and a
 * stream to a run and queue its kernels there without waiting. Everything
 * that does not change between calls is done once: the kernels come from
 * the context's cache, the graph is uploaded once per GopGraph, and the
 * launch is prepared once per extents (runtime/exec.c: RtDevExec), so a
 * call checks its arguments, sets a few memsets and launches.
 *
 * The cache keys a compiled program by everything that decides its code:
 * the operator as written, the scheduled and lowered IR, the target and
 * gop's version. On disk it is a folder of kernel packs, which is also how
 * a gop built without LLVM (a GPU machine's) gets its kernels.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "graph/graph.h"

#include "api/api.h"

enum { MAX_BOUND = 64 }; /* inputs and outputs of a device run */

typedef struct ApiKernel {
  char key[17];
  CgProgram prog;
  uint64_t used; /* ctx->cache_tick at its last lookup: the LRU order */
  uint64_t gen;  /* ctx->cache_gen when its pack was last in the folder */
  struct ApiKernel *next;
} ApiKernel;

static void key_memo_free(GopContext *ctx);

static void devgraph_drop(RtDevGraph **dev) {
  if (!*dev) return;
  rt_devgraph_groups_free(*dev);
  rt_devgraph_free(*dev);
  free(*dev);
  *dev = NULL;
}

void api_graph_free_device(GopGraph *g) {
  devgraph_drop(&g->dev);
  devgraph_drop(&g->dev_reversed);
}

void api_device_free(GopContext *ctx) {
  for (GopRun *r = ctx->runs; r; r = r->next) rt_devexec_free(&r->dx);
  for (GopGraph *g = ctx->graphs; g; g = g->next) api_graph_free_device(g);
  for (ApiKernel *k = ctx->kernels, *next; k; k = next) {
    next = k->next;
    cg_program_free(&k->prog);
    free(k);
  }
  ctx->kernels = NULL;
  free(ctx->cache_dir);
  ctx->cache_dir = NULL;
  key_memo_free(ctx);
}

/* ---- the cache folder ---- */

/* mkdir -p; 0 or -1 with errno set. */
static int make_dirs(const char *dir) {
  char *p = strdup(dir);
  if (!p) return -1;
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0777) != 0 && errno != EEXIST) {
      free(p);
      return -1;
    }
    *s = '/';
  }
  int rc = mkdir(p, 0777) != 0 && errno != EEXIST ? -1 : 0;
  free(p);
  return rc;
}

int gop_set_cache_dir(GopContext *ctx, const char *dir) {
  API_LOCK(ctx);
  if (!dir || !*dir) {
    free(ctx->cache_dir);
    ctx->cache_dir = NULL;
    return 0;
  }
  struct stat st;
  if (make_dirs(dir) != 0 || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    ir_error(&ctx->diag, (Loc){dir, 0, 0}, "cannot use this as the kernel cache folder: %s",
             errno ? strerror(errno) : "not a directory");
    return -1;
  }
  char *copy = strdup(dir);
  if (!copy) return -1;
  free(ctx->cache_dir);
  ctx->cache_dir = copy;
  ctx->cache_gen++; /* the kernels in memory are not in this folder yet */
  return 0;
}

const char *gop_cache_dir(const GopContext *ctx) {
  API_LOCK((GopContext *)ctx);
  return ctx->cache_dir;
}

/* Whether `name` is a pack gop writes: NAME-<16 hex>.gopk. */
static bool is_cache_pack(const char *name) {
  size_t n = strlen(name);
  if (n < 23 || strcmp(name + n - 5, ".gopk") != 0 || name[n - 22] != '-') return false;
  for (size_t i = n - 21; i < n - 5; i++)
    if (!strchr("0123456789abcdef", name[i])) return false;
  return true;
}

/* Whether `name` is the temporary file of a pack being written
 * (ir_write_file: NAME-KEY.gopk.tmp.PID.K). */
static bool is_cache_temp(const char *name) {
  const char *t = strstr(name, ".gopk.tmp.");
  if (!t) return false;
  size_t n = (size_t)(t - name) + 5;
  char pack[256];
  if (n >= sizeof pack) return false;
  memcpy(pack, name, n);
  pack[n] = 0;
  return is_cache_pack(pack);
}

/* A writer that has not renamed its temporary in this long has died. */
enum { STALE_TEMP_SECONDS = 600 };

typedef struct PackFile {
  char *name;
  int64_t bytes;
  struct timespec mtime;
} PackFile;

static int older_first(const void *a, const void *b) {
  const PackFile *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Keeps the cache folder under ctx->cache_max_bytes: the packs used least
 * recently (by modification time, which a disk hit renews) are removed
 * first, never `keep` (the pack just written). Temporaries of writers that
 * died are removed too. Other processes may be doing the same at once:
 * each unlink either removes a file or finds it gone, and a reader that
 * has a pack open keeps reading it. Best effort: it reports nothing. */
static void trim_folder(GopContext *ctx, const char *keep) {
  DIR *d = opendir(ctx->cache_dir);
  if (!d) return;
  PackFile *files = NULL;
  size_t n = 0, cap = 0;
  int64_t total = 0;
  time_t now = time(NULL);
  int dfd = dirfd(d);
  for (struct dirent *e; (e = readdir(d));) {
    bool pack = is_cache_pack(e->d_name);
    if (!pack && !is_cache_temp(e->d_name)) continue;
    struct stat st;
    if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    if (!pack) {
      if (now - st.st_mtim.tv_sec > STALE_TEMP_SECONDS) unlinkat(dfd, e->d_name, 0);
      continue;
    }
    total += (int64_t)st.st_size;
    if (keep && strcmp(e->d_name, keep) == 0) continue;
    if (n == cap) {
      PackFile *grown = realloc(files, sizeof *files * (cap = cap ? 2 * cap : 64));
      if (!grown) break;
      files = grown;
    }
    char *name = strdup(e->d_name);
    if (!name) break;
    files[n++] = (PackFile){name, (int64_t)st.st_size, st.st_mtim};
  }
  if (total > ctx->cache_max_bytes) {
    qsort(files, n, sizeof *files, older_first);
    for (size_t i = 0; i < n && total > ctx->cache_max_bytes; i++)
      if (unlinkat(dfd, files[i].name, 0) == 0 || errno == ENOENT) total -= files[i].bytes;
  }
  for (size_t i = 0; i < n; i++) free(files[i].name);
  free(files);
  closedir(d);
}

int gop_cache_clear(GopContext *ctx) {
  API_LOCK(ctx);
  if (!ctx->cache_dir) return 0;
  DIR *d = opendir(ctx->cache_dir);
  if (!d) {
    ir_error(&ctx->diag, (Loc){ctx->cache_dir, 0, 0}, "cannot read the kernel cache folder: %s",
             strerror(errno));
    return -1;
  }
  int removed = 0, rc = 0;
  ctx->cache_gen++; /* a kernel found in memory later writes its pack again */
  for (struct dirent *e; (e = readdir(d));) {
    if (!is_cache_pack(e->d_name)) continue; /* never anything gop did not write */
    char *path = ir_sprintf(ctx->arena, "%s/%s", ctx->cache_dir, e->d_name);
    if (unlink(path) == 0) {
      removed++;
    } else {
      ir_error(&ctx->diag, (Loc){path, 0, 0}, "cannot remove: %s", strerror(errno));
      rc = -1;
    }
  }
  closedir(d);
  return rc ? rc : removed;
}

void gop_cache_stats(const GopContext *ctx, GopCacheStats *out) {
  API_LOCK((GopContext *)ctx);
  *out = ctx->cache;
  out->entries = 0;
  for (const ApiKernel *k = ctx->kernels; k; k = k->next) out->entries++;
}

/* ---- keys ---- */

/* The key, and the operator's IR text a pack must carry (malloc'ed). */
/* make_key's result by operator and options. Keying schedules and lowers
 * the operator (about 0.3 ms): a job that makes a run per step (a graph per
 * mini-batch) would pay it for every operator at every step, for the same
 * key. The written and lowered IR depend on the operator and the options
 * only, never on the graph. */
typedef struct ApiKeyMemo {
  const GopOp *op;
  char *schedule, *target;
  int bits;
  bool csr_edges;
  char key[17];
  char *ir;
  struct ApiKeyMemo *next;
} ApiKeyMemo;
enum { KEY_MEMO_MAX = 1024 };

static void key_memo_free(GopContext *ctx) {
  for (ApiKeyMemo *m = ctx->key_memo, *next; m; m = next) {
    next = m->next;
    free(m->schedule);
    free(m->target);
    free(m->ir);
    free(m);
  }
  ctx->key_memo = NULL;
  ctx->key_memos = 0;
}

static bool same_str(const char *a, const char *b) {
  return a == b || (a && b && strcmp(a, b) == 0);
}

static int make_key(const GopOp *op, const GopCompileOptions *o, char key[17], char **ir_out,
                    const char **target_out) {
  GopContext *ctx = op->module->ctx;
  const char *target = api_pick_target(ctx, o ? o->target : NULL);
  if (!target) return -1;
  int bits = api_index_bits(ctx, o);
  if (bits < 0) return -1;
  const char *schedule = o ? o->schedule : NULL;
  bool csr = o && o->csr_edges, memo = !o || !o->dump_after; /* a dump must run */
  for (ApiKeyMemo *m = memo ? ctx->key_memo : NULL; m; m = m->next)
    if (m->op == op && m->bits == bits && m->csr_edges == csr && same_str(m->schedule, schedule) &&
        strcmp(m->target, target) == 0) {
      char *ir = ir_out ? strdup(m->ir) : NULL;
      if (ir_out && !ir) break; /* no memory: the long way reports it */
      memcpy(key, m->key, 17);
      if (ir_out) *ir_out = ir;
      if (target_out) *target_out = target;
      return 0;
    }
  /* the lowered copy is only read into the key: a scratch arena, so that
   * a long job's lookups (a run made per step) do not grow the context */
  Arena *scratch = ir_arena_new();
  IrOp *lowered = api_schedule_op_in(op, o, true, scratch);
  if (!lowered) {
    ir_arena_free(scratch);
    return -1;
  }
  char *written = ir_op_to_string(op->ir);
  char *low = ir_op_to_string(lowered);
  ir_arena_free(scratch);
  char *text = NULL;
  /* 64-bit kernels and kernels for edge ids in CSR order are other
   * programs; the keys of 32-bit kernels reading in_eid stay as they were */
  if (written && low &&
      asprintf(&text, "%s\n--lowered\n%s\n--target %s\n--gop %s\n%s%s", written, low, target,
               GOP_VERSION, bits == 64 ? "--index 64\n" : "",
               o && o->csr_edges ? "--edges csr\n" : "") < 0)
    text = NULL;
  free(low);
  if (!text) {
    free(written);
    ir_error(&ctx->diag, api_loc, "out of memory making a kernel cache key");
    return -1;
  }
  snprintf(key, 17, "%016llx", (unsigned long long)rt_fnv1a64(text, strlen(text)));
  free(text);
  ApiKeyMemo *m = memo ? calloc(1, sizeof *m) : NULL;
  if (m) {
    if (ctx->key_memos >= KEY_MEMO_MAX) key_memo_free(ctx); /* a bound, rarely met */
    *m = (ApiKeyMemo){.op = op, .schedule = schedule ? strdup(schedule) : NULL,
                      .target = strdup(target), .bits = bits, .csr_edges = csr,
                      .ir = strdup(written), .next = ctx->key_memo};
    memcpy(m->key, key, 17);
    if ((schedule && !m->schedule) || !m->target || !m->ir) {
      free(m->schedule);
      free(m->target);
      free(m->ir);
      free(m);
    } else {
      ctx->key_memo = m;
      ctx->key_memos++;
    }
  }
  if (ir_out)
    *ir_out = written;
  else
    free(written);
  if (target_out) *target_out = target;
  return 0;
}

int gop_can_compile(void) { return cg_available() ? 1 : 0; }

int gop_kernel_key(const GopOp *op, const GopCompileOptions *o, char key[17]) {
  if (!op) return -1;
  API_LOCK(op->module->ctx);
  return make_key(op, o, key, NULL, NULL);
}

/* Drops the least recently used kernels while the cache holds more than
 * ctx->cache_max_kernels (never `keep`, the one just added). A run that
 * held a dropped program forgets it and its prepared launch, and looks its
 * kernels up again at its next launch (the folder, else the compiler):
 * the bound holds whatever the runs do. The caller holds the lock, so no
 * launch of those runs is under way. */
static void evict_memory(GopContext *ctx, const ApiKernel *keep) {
  for (;;) {
    int n = 0;
    ApiKernel **victim = NULL;
    for (ApiKernel **at = &ctx->kernels; *at; at = &(*at)->next) {
      n++;
      if (*at != keep && (!victim || (*at)->used < (*victim)->used)) victim = at;
    }
    if (n <= ctx->cache_max_kernels || !victim) return;
    ApiKernel *k = *victim;
    *victim = k->next;
    for (GopRun *r = ctx->runs; r; r = r->next) {
      if (r->cached == &k->prog) r->cached = NULL;
      if (r->dx.p == &k->prog) rt_devexec_free(&r->dx);
    }
    cg_program_free(&k->prog);
    free(k);
    ctx->cache_evicted++;
  }
}

/* Where the pack of `op`'s kernel `key` goes in the cache folder
 * (malloc'ed, not the arena's: a long run's lookups must not grow it);
 * NULL without a folder. */
static char *pack_path(const GopContext *ctx, const GopOp *op, const char *key) {
  if (!ctx->cache_dir) return NULL;
  int n = snprintf(NULL, 0, "%s/%s-%s.gopk", ctx->cache_dir, op->ir->name, key);
  char *path = n < 0 ? NULL : malloc((size_t)n + 1);
  if (path) snprintf(path, (size_t)n + 1, "%s/%s-%s.gopk", ctx->cache_dir, op->ir->name, key);
  return path;
}

/* The pack of `k` written to `path` in the cache folder, through a
 * temporary renamed into place (ir_write_file): another process reading
 * the same key sees the old pack or the whole new one; two writing it at
 * once both write whole packs. -1 after reporting. */
static int write_pack(GopContext *ctx, const ApiKernel *k, const char *path) {
  make_dirs(ctx->cache_dir); /* GOP_CACHE_DIR may not exist yet */
  if (cg_pack_write(&k->prog, path, &ctx->diag) != 0) return -1;
  ctx->cache.disk_writes++;
  trim_folder(ctx, strrchr(path, '/') + 1);
  return 0;
}

/* The run's program from the cache: memory, then the folder, else compiled
 * (and written to the folder). NULL after reporting. */
static const CgProgram *cached_program(GopRun *r) {
  GopContext *ctx = r->ctx;
  GopCompileOptions o = api_run_options(r);
  char key[17], *ir = NULL;
  const char *target;
  if (make_key(r->op, &o, key, &ir, &target) != 0) return NULL;
  for (ApiKernel *k = ctx->kernels; k; k = k->next)
    if (strcmp(k->key, key) == 0) {
      ctx->cache.memory_hits++;
      k->used = ++ctx->cache_tick;
      free(ir);
      /* compiled before the folder was set or cleared: its pack goes
       * there now, so that a folder prepared for another machine holds
       * every kernel its runs looked up */
      if (ctx->cache_dir && k->gen != ctx->cache_gen) {
        char *path = pack_path(ctx, r->op, key);
        if (path && access(path, R_OK) != 0 && write_pack(ctx, k, path) != 0) {
          free(path);
          return NULL;
        }
        free(path);
        k->gen = ctx->cache_gen;
      }
      return &k->prog;
    }
  ApiKernel *k = calloc(1, sizeof *k);
  if (!k) {
    free(ir);
    ir_error(&ctx->diag, api_loc, "out of memory in the kernel cache");
    return NULL;
  }
  memcpy(k->key, key, sizeof k->key);
  k->used = ++ctx->cache_tick;
  k->gen = ctx->cache_gen;
  char *path = pack_path(ctx, r->op, key);
  bool found = false;
  if (path && access(path, R_OK) == 0) {
    Diag quiet;
    ir_diag_init(&quiet, NULL);
    /* a pack that cannot be read (truncated, or damaged: its checksum),
     * or that (by a hash collision) holds another operator, is compiled
     * again and overwritten, never loaded */
    int rc = cg_pack_read(path, &k->prog, &quiet);
    found = rc == 0 && k->prog.ir && ir && strcmp(k->prog.ir, ir) == 0 &&
            strcmp(k->prog.target, target) == 0 &&
            cg_program_index_bits(&k->prog) == o.index_bits &&
            /* a program on the reversed graph loads its edge ids */
            k->prog.csr_edges == (o.csr_edges != 0 && !k->prog.transposed);
    if (found) {
      ctx->cache.disk_hits++;
      utimensat(AT_FDCWD, path, NULL, 0); /* recently used: trimmed last */
    } else {
      if (rc != 0) {
        const char *why = quiet.buf ? quiet.buf : "unreadable";
        ir_warning(&ctx->diag, (Loc){path, 0, 0},
                   "the kernel cache's pack is damaged and is rebuilt: %.*s",
                   (int)strcspn(why, "\n"), why);
      }
      cg_program_free(&k->prog);
    }
    ir_diag_free(&quiet);
  }
  free(ir);
  if (!found) {
    if (api_compile_op(r->op, &o, &k->prog) != 0) {
      if (path)
        ir_note(&ctx->diag, api_loc, "no kernel pack %s in the cache folder either", path);
      free(path);
      free(k);
      return NULL;
    }
    ctx->cache.compiled++;
    r->stats.compile = ctx->times;
    if (path && write_pack(ctx, k, path) != 0) {
      cg_program_free(&k->prog);
      free(path);
      free(k);
      return NULL;
    }
  }
  free(path);
  k->next = ctx->kernels;
  ctx->kernels = k;
  evict_memory(ctx, k);
  return &k->prog;
}

/* ---- binding ---- */

static int tensor_index(const GopRun *r, const char *name) {
  const IrOp *ir = r->op->ir;
  for (int i = 0; i < gop_run_num_tensors(r); i++)
    if (strcmp(ir->tensors[i]->name, name) == 0) return i;
  return -1;
}

/* Every extent set, and the size of each bindable tensor in `numel`. */
static int sizes(GopRun *r, int64_t *numel) {
  const IrOp *ir = r->op->ir;
  for (int i = 0; i < ir->nsyms; i++)
    if (!r->ext_set[i]) {
      ir_error(&r->ctx->diag, api_loc, "extent %s of %s is not set (gop_run_set_extent)",
               ir->syms[i]->name, ir->name);
      return -1;
    }
  for (int i = 0; i < gop_run_num_tensors(r); i++)
    numel[i] = graph_tensor_numel(ir->tensors[i], r->graph->rt, &r->ext);
  return 0;
}

int gop_run_bind_device(GopRun *r, const char *name, GopDevicePtr ptr, int64_t numel) {
  API_LOCK(r->ctx);
  const IrOp *ir = r->op->ir;
  int i = name ? tensor_index(r, name) : -1;
  if (i < 0) {
    ir_error(&r->ctx->diag, api_loc, "operator %s has no input or output named '%s'",
             ir->name, name ? name : "(null)");
    return -1;
  }
  const IrTensor *t = ir->tensors[i];
  for (int d = 0; d < t->ndims; d++)
    if (t->dims[d].sym && !r->ext_set[t->dims[d].sym->id]) {
      ir_error(&r->ctx->diag, api_loc, "extent %s of tensor %s is not set (gop_run_set_extent)",
               t->dims[d].sym->name, name);
      return -1;
    }
  int64_t want = graph_tensor_numel(t, r->graph->rt, &r->ext);
  if ((!ptr && want != 0) || numel != want) {
    ir_error(&r->ctx->diag, api_loc, "tensor %s needs %lld elements on this graph, got %lld%s",
             name, (long long)want, (long long)numel, ptr ? "" : " (NULL device pointer)");
    return -1;
  }
  r->dptr[i] = ptr;
  return 0;
}

void gop_run_set_stream(GopRun *r, void *stream) {
  API_LOCK(r->ctx);
  r->stream = stream;
}

/* Opens the GPU for a device run; reports why not (gpu_status too). */
static int open_device(GopRun *r) {
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  RtStatus s = rt_cuda_open(&quiet);
  if (s != RT_OK) {
    const char *msg = rt_reason(&quiet, s);
    ir_error(&r->ctx->diag, api_loc, "cannot run %s on the GPU: %.*s", r->op->ir->name,
             (int)strcspn(msg, "\n"), msg);
    r->stats.gpu_status = s;
  }
  ir_diag_free(&quiet);
  return s == RT_OK ? 0 : -1;
}

/* The device copy *dev of host graph `hg`, made on first use. */
static RtDevGraph *device_copy(GopRun *r, RtDevGraph **dev, const Graph *hg) {
  if (!*dev) {
    *dev = calloc(1, sizeof **dev);
    if (!*dev) {
      ir_error(&r->ctx->diag, api_loc, "out of memory");
      return NULL;
    }
    rt_devgraph_init(*dev, hg);
  }
  return *dev;
}

/* Prepares the device launch: the graph on the device (the reversed graph
 * for a program scheduled with transpose()), the kernels ready. */
static int prepare_device(GopRun *r) {
  GopGraph *g = (GopGraph *)r->graph;
  const Graph *hg = g->rt;
  RtDevGraph *dg;
  if (r->cached->transposed && g->reversed) { /* built on the device */
    hg = g->reversed->rt;
    dg = g->reversed->dev;
  } else if (r->cached->transposed) {
    if (!(hg = graph_transposed(g->rt, &r->ctx->diag, api_loc))) return -1;
    dg = device_copy(r, &g->dev_reversed, hg);
  } else {
    dg = device_copy(r, &g->dev, hg);
  }
  if (!dg ||
      rt_devexec_prepare(&r->dx, r->cached, hg, dg, r->ext.value, &r->ctx->diag) != RT_OK)
    return -1;
  return 0;
}

int gop_run_prepare(GopRun *r) {
  API_LOCK(r->ctx);
  if (r->from_pack) {
    r->cached = &r->prog;
  } else if (!r->cached && !(r->cached = cached_program(r))) {
    return -1;
  }
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  bool gpu = rt_cuda_open(&quiet) == RT_OK;
  ir_diag_free(&quiet);
  if (!gpu) return 0; /* the cache is filled: that is all there is to do */
  for (int i = 0; i < r->op->ir->nsyms; i++)
    if (!r->ext_set[i]) return 0; /* prepared at the launch, when they are */
  return prepare_device(r);
}

int gop_run_launch_ptrs(GopRun *r, const GopDevicePtr *ptrs, int n, void *stream) {
  GopContext *ctx = r->ctx;
  /* held through the launch: the kernel cache may drop a run's program
   * only between launches, and the graph's device copy and group tables
   * are shared by every run on the graph. Queuing is quick; nothing here
   * waits for the GPU. */
  API_LOCK(ctx);
  const IrOp *ir = r->op->ir;
  int nt = gop_run_num_tensors(r);
  if (n != nt || !ptrs) {
    ir_error(&ctx->diag, api_loc, "%s takes %d tensors (%s first), got %d", ir->name, nt,
             nt ? ir->tensors[0]->name : "none", ptrs ? n : 0);
    return -1;
  }
  int64_t numel[MAX_BOUND];
  if (nt > MAX_BOUND) {
    ir_error(&ctx->diag, api_loc, "%s has too many tensors for a device run", ir->name);
    return -1;
  }
  if (sizes(r, numel) != 0) return -1;
  /* an empty tensor may have no memory (torch's empty CUDA tensors have
   * data_ptr() 0): nothing reads it, no fill or check touches it */
  for (int i = 0; i < nt; i++)
    if (!ptrs[i] && numel[i] != 0) {
      ir_error(&ctx->diag, api_loc, "%s of %s: NULL device pointer",
               ir->tensors[i]->name, ir->name);
      return -1;
    }
  if (open_device(r) != 0) return -1;
  if (!r->cached && gop_run_prepare(r) != 0) return -1;
  if (prepare_device(r) != 0) return -1;
  if (stream != r->stream_checked || !r->stream_ok) {
    r->stream_ok = false;
    if (rt_stream_check(stream, &ctx->diag) != RT_OK) return -1;
    r->stream_checked = stream;
    r->stream_ok = true;
  }
  r->stream = stream;
  /* a pointer is checked once in its slot: a framework's allocator hands
   * the same addresses back, and the check is a driver call */
  for (int i = 0; i < nt; i++) {
    if (ptrs[i] == r->dptr_checked[i] && numel[i] == r->dnumel[i]) continue;
    char what[96];
    snprintf(what, sizeof what, "%s %s of %s", gop_run_tensor_is_output(r, i) ? "output" : "input",
             ir->tensors[i]->name, ir->name);
    size_t bytes = (size_t)numel[i] * (size_t)ir_dtype_bytes(ir->tensors[i]->dtype);
    if (bytes && rt_pointer_check(ptrs[i], bytes, what, &ctx->diag) != RT_OK)
      return -1;
    r->dptr_checked[i] = ptrs[i];
    r->dnumel[i] = numel[i];
  }
  for (int i = 0; i < nt; i++) r->dptr[i] = ptrs[i];
  /* the program may hold temporaries after the caller's tensors: by id */
  if (rt_devexec_launch(&r->dx, ptrs, stream, &ctx->diag) != RT_OK) return -1;
  return 0;
}

int gop_run_launch(GopRun *r) {
  API_LOCK(r->ctx);
  int nt = gop_run_num_tensors(r);
  for (int i = 0; i < nt; i++)
    if (!r->dptr[i] && graph_tensor_numel(r->op->ir->tensors[i], r->graph->rt, &r->ext) != 0) {
      ir_error(&r->ctx->diag, api_loc, "%s %s is not bound to device memory (gop_run_bind_device)",
               gop_run_tensor_is_output(r, i) ? "output" : "input", r->op->ir->tensors[i]->name);
      return -1;
    }
  return gop_run_launch_ptrs(r, r->dptr, nt, r->stream);
}

int gop_run_sync(GopRun *r) {
  void *stream;
  {
    API_LOCK(r->ctx);
    if (open_device(r) != 0) return -1;
    stream = r->stream;
  }
  /* waits without the lock: other threads keep launching in their streams */
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  RtStatus s = rt_stream_sync(stream, &quiet);
  if (s != RT_OK) {
    API_LOCK(r->ctx);
    const char *msg = rt_reason(&quiet, s);
    ir_error(&r->ctx->diag, api_loc, "%s", msg);
  }
  ir_diag_free(&quiet);
  return s == RT_OK ? 0 : -1;
}

int gop_device_status(char *what, size_t size) {
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  RtStatus s = rt_cuda_open(&quiet);
  if (what && size) {
    const char *msg = s == RT_OK ? rt_cuda_device_name() : rt_reason(&quiet, s);
    snprintf(what, size, "%.*s", (int)strcspn(msg, "\n"), msg);
  }
  ir_diag_free(&quiet);
  return (int)s;
}

/* ---- graphs built on the device ---- */

int gop_graph_device_index_bits(int64_t nv, int64_t ne) {
  Graph shape = {.nv = nv > INT32_MAX ? INT32_MAX : (int32_t)(nv < 0 ? 0 : nv), .ne = ne};
  return rt_index_bits(&shape);
}

GopGraph *gop_graph_from_device(GopContext *ctx, const GopDeviceGraph *dg, const char *name) {
  API_LOCK(ctx);
  if (!dg) {
    ir_error(&ctx->diag, api_loc, "gop_graph_from_device: the arrays are NULL");
    return NULL;
  }
  int64_t nv = dg->num_vertices, ne = dg->num_edges;
  if (nv < 0 || nv > INT32_MAX || ne < 0 || ne > GRAPH_MAX_EDGES) {
    ir_error(&ctx->diag, api_loc, "gop_graph_from_device: %lld vertices and %lld edges: "
             "vertices must be 0 to 2^31-1, edges 0 to 2^34", (long long)nv, (long long)ne);
    return NULL;
  }
  int bits = gop_graph_device_index_bits(nv, ne);
  if (dg->index_bits != bits) {
    ir_error(&ctx->diag, api_loc, "gop_graph_from_device: offsets and edge ids of %d bits, "
             "but a graph of %lld edges runs kernels of %d-bit indices here "
             "(gop_graph_device_index_bits)", dg->index_bits, (long long)ne, bits);
    return NULL;
  }
  if (dg->in_degree_max < 0 || dg->in_degree_max > ne || dg->out_degree_max < 0 ||
      dg->out_degree_max > ne || dg->isolated < 0 || dg->isolated > nv ||
      dg->self_loops < 0 || dg->self_loops > ne) {
    ir_error(&ctx->diag, api_loc, "gop_graph_from_device: statistics that no graph of %lld "
             "vertices and %lld edges has (a degree, isolated vertices or self-loops out "
             "of range)", (long long)nv, (long long)ne);
    return NULL;
  }
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  RtStatus s = rt_cuda_open(&quiet);
  if (s != RT_OK) {
    const char *msg = rt_reason(&quiet, s);
    ir_error(&ctx->diag, api_loc, "gop_graph_from_device needs the GPU: %.*s",
             (int)strcspn(msg, "\n"), msg);
    ir_diag_free(&quiet);
    return NULL;
  }
  ir_diag_free(&quiet);
  const GopDevicePtr ptrs[10] = {dg->src,     dg->dst,     dg->in_ptr,  dg->in_eid,
                                 dg->in_src,  dg->out_ptr, dg->out_eid, dg->out_dst,
                                 dg->in_deg,  dg->out_deg};
  static const char *names[10] = {"src", "dst", "in_ptr", "in_eid", "in_src",
                                  "out_ptr", "out_eid", "out_dst", "in_deg", "out_deg"};
  size_t ib = (size_t)bits / 8;
  const size_t bytes[10] = {4 * (size_t)ne, 4 * (size_t)ne, ib * (size_t)(nv + 1),
                            ib * (size_t)ne, 4 * (size_t)ne, ib * (size_t)(nv + 1),
                            ib * (size_t)ne, 4 * (size_t)ne, 4 * (size_t)nv, 4 * (size_t)nv};
  for (int i = 0; i < 10; i++) {
    if (bytes[i] == 0) continue; /* an empty array may have any address */
    char what[64];
    snprintf(what, sizeof what, "gop_graph_from_device: %s", names[i]);
    if (!ptrs[i]) {
      ir_error(&ctx->diag, api_loc, "%s: NULL device pointer for %zu bytes", what, bytes[i]);
      return NULL;
    }
    if (rt_pointer_check(ptrs[i], bytes[i], what, &ctx->diag) != RT_OK) return NULL;
  }
  Graph *rt = calloc(1, sizeof *rt);
  RtDevGraph *dev = calloc(1, sizeof *dev);
  char *copy = strdup(name ? name : "device graph");
  if (!rt || !dev || !copy) {
    free(rt);
    free(dev);
    free(copy);
    ir_error(&ctx->diag, api_loc, "out of memory");
    return NULL;
  }
  rt->name = copy;
  rt->nv = (int32_t)nv;
  rt->ne = ne;
  rt->device_only = true;
  rt->csr_edges = dg->csr_edges != 0;
  rt->stats = (GraphStats){.deg_mean = nv ? (double)ne / (double)nv : 0,
                           .in_deg_std = dg->in_degree_std,
                           .in_deg_max = dg->in_degree_max,
                           .out_deg_max = dg->out_degree_max,
                           .isolated = (int32_t)dg->isolated,
                           .self_loops = dg->self_loops,
                           .aes = dg->aes};
  GopGraph *g = api_adopt_graph(ctx, rt);
  if (!g) {
    free(dev);
    return NULL;
  }
  rt_devgraph_adopt(dev, rt, bits, ptrs);
  g->dev = dev;
  return g;
}


/* ---- neighbour-group tables built on the device ---- */

/* RtDevGraph.groups_build for a graph of gop_graph_from_device: asks the
 * caller's builder, and reads what it gives back into t and ptrs. */
static RtStatus build_groups(void *user, const RtDevGraph *dg, GraphGroups *t,
                             RtDevPtr ptrs[6], Diag *d) {
  const GopGraph *g = user;
  GopGroupTable out = {.group_size = t->G, .distance = t->ilv, .classes = t->ncls,
                       .threshold = t->thr, .index_bits = dg->index_bits, .on_device = 1};
  char why[512] = "";
  if (g->group_builder(g->group_user, &out, why, sizeof why) != 0) {
    ir_error(d, api_loc, "the graph's builder of group tables failed: %s",
             why[0] ? why : "(no reason given)");
    return RT_ERR;
  }
  if (out.group_size != t->G || out.distance != t->ilv || out.classes != t->ncls ||
      out.threshold != t->thr || out.index_bits != dg->index_bits ||
      out.unowned_count > INT32_MAX || out.unowned_count < 0) {
    ir_error(d, api_loc, "the graph's builder of group tables changed what was asked or "
             "gave a bad count (G %d, distance %d, %d classes, threshold %d, %d bits, %lld "
             "unowned)", out.group_size, out.distance, out.classes, out.threshold,
             out.index_bits, (long long)out.unowned_count);
    return RT_ERR;
  }
  t->n = out.rows;
  t->nunowned = (int32_t)out.unowned_count;
  t->order = out.order;
  for (int c = 0; c < IR_MAX_CLASSES; c++) {
    t->cls_rows[c] = c < t->ncls ? out.class_rows[c] : 0;
    t->cls_min[c] = c < t->ncls ? out.class_min[c] : 0;
  }
  const RtDevPtr p[6] = {out.dst, out.first, out.end, out.unowned, out.vptr, out.vrow};
  memcpy(ptrs, p, sizeof p);
  return RT_OK;
}

int gop_graph_set_group_builder(GopContext *ctx, GopGraph *g, GopGroupBuilder fn, void *user) {
  API_LOCK(ctx);
  if (!g || !g->rt->device_only || !g->dev) {
    ir_error(&ctx->diag, api_loc, "gop_graph_set_group_builder: %s was built on the host, "
             "which builds its group tables itself",
             g && g->rt->name ? g->rt->name : "the graph");
    return -1;
  }
  rt_devgraph_groups_free(g->dev); /* the earlier builder's */
  g->group_builder = fn;
  g->group_user = user;
  g->dev->groups_build = fn ? build_groups : NULL;
  g->dev->groups_user = fn ? g : NULL;
  return 0;
}

int gop_graph_set_reversed(GopContext *ctx, GopGraph *g, GopGraph *reversed) {
  API_LOCK(ctx);
  const char *why = NULL;
  if (!g)
    why = "no graph";
  else if (!g->rt->device_only)
    why = "the graph was built on the host, which reverses itself";
  else if (reversed && (!reversed->rt->device_only || !reversed->dev))
    why = "the reversed graph was not built on the device";
  else if (reversed == g)
    why = "a graph is not its own reversed graph";
  else if (reversed && (reversed->rt->nv != g->rt->nv || reversed->rt->ne != g->rt->ne))
    why = "the reversed graph's vertices or edges are not as many as the graph's";
  else if (reversed && reversed->dev->index_bits != g->dev->index_bits)
    why = "the reversed graph's offsets and edge ids are not as wide as the graph's";
  else if (reversed && g->group_builder && !reversed->group_builder)
    why = "the graph has a builder of its group tables and the reversed graph none: give "
          "it one first (gop_graph_set_group_builder)";
  if (why) {
    ir_error(&ctx->diag, api_loc, "gop_graph_set_reversed: %s", why);
    return -1;
  }
  /* runs prepared on the old one prepare again (rt_devexec_prepare compares
   * the device graph) */
  g->reversed = reversed;
  return 0;
}

int gop_graph_group_table(GopContext *ctx, GopGraph *g, int G, int distance, int classes,
                          int threshold, GopGroupTable *out) {
  API_LOCK(ctx);
  if (!g || !out) {
    ir_error(&ctx->diag, api_loc, "gop_graph_group_table: no graph or no table to fill");
    return -1;
  }
  memset(out, 0, sizeof *out);
  const GraphGroups *t;
  if (g->rt->device_only) {
    if (!g->dev) {
      ir_error(&ctx->diag, api_loc, "gop_graph_group_table: the GPU was closed");
      return -1;
    }
    const struct RtDevGroups *x =
        rt_devgraph_groups(g->dev, G, distance, classes, threshold, &ctx->diag);
    if (!x) return -1;
    t = x->host;
    *out = (GopGroupTable){.index_bits = g->dev->index_bits, .on_device = 1,
                           .dst = x->dst.ptr, .first = x->first.ptr, .end = x->end.ptr,
                           .vptr = x->vptr.ptr, .vrow = x->vrow.ptr,
                           .unowned = x->unowned.ptr};
  } else {
    if (!(t = graph_groups(g->rt, G, distance, classes, threshold, &ctx->diag))) return -1;
    *out = (GopGroupTable){.index_bits = 64, .on_device = 0,
                           .dst = (uint64_t)(uintptr_t)t->dst,
                           .first = (uint64_t)(uintptr_t)t->first,
                           .end = (uint64_t)(uintptr_t)t->end,
                           .vptr = (uint64_t)(uintptr_t)t->vptr,
                           .vrow = (uint64_t)(uintptr_t)t->vrow,
                           .unowned = (uint64_t)(uintptr_t)t->unowned};
  }
  out->group_size = t->G;
  out->distance = t->ilv;
  out->classes = t->ncls;
  out->threshold = t->thr;
  out->order = t->order;
  out->rows = t->n;
  out->unowned_count = t->nunowned;
  for (int c = 0; c < t->ncls && c < 8; c++) {
    out->class_rows[c] = t->cls_rows[c];
    out->class_min[c] = t->cls_min[c];
  }
  return 0;
}
