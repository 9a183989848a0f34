/* api/context.c: the context: its arena, its diagnostics, and what it owns.
 *
 * A GopContext owns one arena and one Diag: modules, operators and runs are
 * arena objects and die with the context; graphs are malloc'ed by graph/
 * and kept on a list so the context can free them.
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

GopContext *gop_context_new(void) {
  GopContext *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return NULL;
  ctx->arena = ir_arena_new();
  ir_diag_init(&ctx->diag, NULL);
  const char *dir = getenv("GOP_CACHE_DIR");
  if (dir && *dir) ctx->cache_dir = strdup(dir);
  return ctx;
}

void gop_context_free(GopContext *ctx) {
  if (!ctx) return;
  api_device_free(ctx);
  for (GopRun *r = ctx->runs; r; r = r->next) cg_program_free(&r->prog);
  for (GopGraph *g = ctx->graphs, *next; g; g = next) {
    next = g->next;
    graph_free(g->rt);
    free(g);
  }
  ir_diag_free(&ctx->diag);
  ir_arena_free(ctx->arena);
  free(ctx);
}

void gop_set_diagnostic_stream(GopContext *ctx, FILE *out) { ctx->diag.out = out; }
const char *gop_diagnostics(const GopContext *ctx) {
  return ctx->diag.buf ? ctx->diag.buf : "";
}
int gop_error_count(const GopContext *ctx) { return ctx->diag.nerrors; }

void gop_clear_diagnostics(GopContext *ctx) {
  ctx->diag.nerrors = ctx->diag.nwarnings = 0;
  ctx->diag.len = 0;
  if (ctx->diag.buf) ctx->diag.buf[0] = 0;
}

void gop_report(GopContext *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ir_verror(&ctx->diag, "error", (Loc){0}, fmt, ap);
  va_end(ap);
}
