/* api/context.c: the context: its arena, its diagnostics, and what it owns.
 *
 * A GopContext owns one arena and one Diag: modules and operators are
 * arena objects and die with the context; graphs and runs are malloc'ed
 * and kept on lists, so that a job that makes them per step can free them
 * (gop_graph_free, gop_run_free) and the context frees those left.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "graph/graph.h"

#include "api/api.h"

const Loc api_loc = {"gop", 0, 0};

size_t gop_struct_size(const char *name) {
  static const struct { const char *name; size_t size; } sizes[] = {
      {"GopCompileOptions", sizeof(GopCompileOptions)},
      {"GopCompileTimes", sizeof(GopCompileTimes)},
      {"GopGraphInfo", sizeof(GopGraphInfo)},
      {"GopDeviceGraph", sizeof(GopDeviceGraph)},
      {"GopGroupTable", sizeof(GopGroupTable)},
      {"GopPartInfo", sizeof(GopPartInfo)},
      {"GopRunStats", sizeof(GopRunStats)},
      {"GopCacheStats", sizeof(GopCacheStats)},
      {"GopScheduleChoice", sizeof(GopScheduleChoice)},
      {"GopTuneOptions", sizeof(GopTuneOptions)},
      {"GopTuneEntry", sizeof(GopTuneEntry)},
      {"GopTuneReport", sizeof(GopTuneReport)},
  };
  for (size_t i = 0; name && i < sizeof sizes / sizeof sizes[0]; i++)
    if (strcmp(sizes[i].name, name) == 0) return sizes[i].size;
  return 0;
}

/* A limit from the environment: `fallback` when unset or not a number in
 * [lo, hi]; a number may end in K, M or G (binary). */
static int64_t env_limit(const char *name, int64_t fallback, int64_t lo, int64_t hi) {
  const char *s = getenv(name);
  if (!s || !*s) return fallback;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
  if (shift) end++;
  if (errno || *end || v < 0 || (shift && v > (INT64_MAX >> shift))) return fallback;
  int64_t x = (int64_t)v << shift;
  return x < lo || x > hi ? fallback : x;
}

GopContext *gop_context_new(void) {
  GopContext *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return NULL;
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&ctx->lock, &attr);
  pthread_mutexattr_destroy(&attr);
  ctx->arena = ir_arena_new();
  ir_diag_init(&ctx->diag, NULL);
  const char *dir = getenv("GOP_CACHE_DIR");
  if (dir && *dir) ctx->cache_dir = strdup(dir);
  ctx->cache_max_kernels = (int)env_limit("GOP_CACHE_MAX_KERNELS", 256, 1, 1 << 20);
  ctx->cache_max_bytes = env_limit("GOP_CACHE_MAX_BYTES", (int64_t)1 << 30, 0, INT64_MAX);
  return ctx;
}

void gop_context_free(GopContext *ctx) {
  if (!ctx) return;
  api_device_free(ctx);
  for (GopRun *r = ctx->runs, *next; r; r = next) {
    next = r->next;
    api_run_destroy(r);
  }
  for (GopGraph *g = ctx->graphs, *next; g; g = next) {
    next = g->next;
    graph_free(g->rt);
    free(g);
  }
  ir_diag_free(&ctx->diag);
  ir_arena_free(ctx->arena);
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
}

void gop_set_diagnostic_stream(GopContext *ctx, FILE *out) {
  API_LOCK(ctx);
  ctx->diag.out = out;
}
/* The buffer stays valid until the next report or clear: a thread that
 * shares the context with others should read it while they report
 * nothing (docs/threads.md). */
const char *gop_diagnostics(const GopContext *ctx) {
  API_LOCK((GopContext *)ctx);
  return ctx->diag.buf ? ctx->diag.buf : "";
}
int gop_error_count(const GopContext *ctx) {
  API_LOCK((GopContext *)ctx);
  return ctx->diag.nerrors;
}

void gop_clear_diagnostics(GopContext *ctx) {
  API_LOCK(ctx);
  ctx->diag.nerrors = ctx->diag.nwarnings = 0;
  ctx->diag.len = 0;
  if (ctx->diag.buf) ctx->diag.buf[0] = 0;
}

void gop_report(GopContext *ctx, const char *fmt, ...) {
  API_LOCK(ctx);
  va_list ap;
  va_start(ap, fmt);
  ir_verror(&ctx->diag, "error", (Loc){0}, fmt, ap);
  va_end(ap);
}
