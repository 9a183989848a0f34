/* api/schedule.c: what the REPL and tools ask of schedules: the named schedules an
 * operator can use, the loop names of its IR, and saving a schedule to a
 * file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lang/lang.h"
#include "passes/passes.h"

#include "api/api.h"

/* ---- REPL support ---- */

const char *gop_schedule_directive_name(int i) { return pass_directive_name(i); }

int gop_op_num_schedules(const GopOp *op) {
  API_LOCK(op->module->ctx);
  return api_schedule_library(op->module->ctx, op->module)->nscheds;
}

const char *gop_op_schedule_signature(const GopOp *op, int i) {
  API_LOCK(op->module->ctx);
  GopContext *ctx = op->module->ctx;
  const IrModule *lib = api_schedule_library(ctx, op->module);
  if (i < 0 || i >= lib->nscheds) return NULL;
  const IrSchedDef *s = lib->scheds[i];
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return s->name;
  fprintf(f, "%s(", s->name);
  for (int k = 0; k < s->nparams; k++) fprintf(f, "%s%s", k ? ", " : "", s->params[k]->name);
  fputc(')', f);
  fclose(f);
  const char *sig = ir_strdup(ctx->arena, text);
  free(text);
  return sig;
}

/* Appends each loop name of `list` not yet in `out` (space-separated). */
static void collect_loops(const IrNode *list, FILE *out, char **seen, size_t *len) {
  for (const IrNode *n = list; n; n = n->next) {
    if (n->kind == IR_LOOP) {
      const char *name = n->loop.var->name;
      fflush(out); /* *seen is current only after a flush */
      bool dup = false;
      for (const char *p = *seen; p && *p && !dup; p += strcspn(p, " "), p += *p == ' ') {
        size_t k = strcspn(p, " ");
        dup = k == strlen(name) && strncmp(p, name, k) == 0;
      }
      if (!dup) fprintf(out, "%s%s", *len ? " " : "", name);
      collect_loops(n->loop.body, out, seen, len);
    } else if (n->kind == IR_IF) {
      collect_loops(n->ifs.then, out, seen, len);
    }
  }
}

char *gop_op_loop_names(const GopOp *op, const char *schedule) {
  API_LOCK(op ? op->module->ctx : NULL);
  const IrOp *ir = op->ir;
  if (schedule && *schedule) {
    GopCompileOptions o = {.schedule = schedule};
    ir = api_schedule_op(op, &o, false);
    if (!ir) return NULL;
  }
  char *names = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&names, &len);
  if (!f) return NULL;
  collect_loops(ir->body, f, &names, &len);
  fclose(f);
  return names;
}

static bool is_identifier(const char *s) {
  if (!s || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return false;
  for (s++; *s; s++)
    if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9')))
      return false;
  return true;
}

static void write_text(FILE *f, const void *text) { fputs(text, f); }

int gop_save_schedule(GopContext *ctx, const char *path, const char *name,
                      const char *schedule) {
  API_LOCK(ctx);
  if (!path || !*path) {
    ir_error(&ctx->diag, api_loc, "gop_save_schedule: no file given");
    return -1;
  }
  if (!is_identifier(name)) {
    ir_error(&ctx->diag, api_loc, "cannot save the schedule as '%s': not a name "
             "(letters, digits and _, not starting with a digit)", name ? name : "(null)");
    return -1;
  }
  if (!schedule || !schedule[strspn(schedule, " \t;")]) {
    ir_error(&ctx->diag, api_loc, "cannot save schedule %s: it has no directives", name);
    return -1;
  }
  const char *old = "";
  FILE *probe = fopen(path, "rb");
  if (probe) { /* a file that is there must be read whole, or left alone */
    fclose(probe);
    old = api_read_text(ctx, path);
    if (!old) return -1;
  } else if (errno != ENOENT) {
    ir_error(&ctx->diag, (Loc){path, 0, 0}, "cannot open: %s", strerror(errno));
    return -1;
  }
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return -1;
  fputs(old, f);
  if (*old && old[strlen(old) - 1] != '\n') fputc('\n', f);
  if (*old) fputc('\n', f);
  fprintf(f, "schedule %s() {\n", name);
  for (const char *p = schedule; *p;) {
    p += strspn(p, " \t;");
    size_t k = strcspn(p, ";");
    while (k > 0 && (p[k - 1] == ' ' || p[k - 1] == '\t')) k--;
    if (k) fprintf(f, "  %.*s\n", (int)k, p);
    p += k;
  }
  fputs("}\n", f);
  fclose(f);
  /* Check the result before writing it: a file that compiled must still
   * compile, so that `load` keeps working after a save. */
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  IrModule *m = lang_compile(ctx->arena, &quiet, ir_strdup(ctx->arena, path),
                             ir_strdup(ctx->arena, text));
  if (!m) {
    const char *msg = quiet.buf ? quiet.buf : "";
    int n = (int)strlen(msg);
    while (n > 0 && msg[n - 1] == '\n') n--; /* the error adds its own */
    ir_error(&ctx->diag, (Loc){path, 0, 0}, "cannot save schedule %s: the file would "
             "not compile with it:\n%.*s", name, n, msg);
    ir_diag_free(&quiet);
    free(text);
    return -1;
  }
  ir_diag_free(&quiet);
  int rc = ir_write_file(path, "the schedule", write_text, text, &ctx->diag);
  free(text);
  return rc;
}
