/* tools/repl/run.c: the commands that run the operator on the graph: run
 * (print each output's sum), check (compare with the interpreter), compare
 * (a table of schedules, each run and checked) and tune (the autotuner,
 * whose winner becomes the schedule). Inputs are random with gopc run's
 * seeds, so the sums here and there agree.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repl.h"

/* splitmix64, seeded as gopc seeds its inputs, so that `run` here and
 * `gopc run` print the same sums. */
static uint64_t next_random(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

typedef struct Buffers {
  int n;
  float **data;
  int64_t *numel;
} Buffers;

static void free_buffers(Buffers *b) {
  for (int i = 0; i < b->n; i++) free(b->data[i]);
  free(b->data);
  free(b->numel);
  *b = (Buffers){0};
}

/* A run of the current operator on the graph under `sched` (NULL: the
 * default), with the session's extents and random inputs (seed 1). NULL
 * after reporting (on stderr unless `quiet`: then only in the context). */
static GopRun *prepare_run(const char *sched, bool quiet, Buffers *b) {
  GopRun *r = gop_run_new(repl.ctx, repl.op, repl.graph);
  if (!r) return NULL;
  GopCompileOptions o = {.schedule = sched && *sched ? sched : NULL};
  if (gop_run_set_compile(r, &o) != 0) return NULL;
  gop_run_set_timing(r, 3, 20);
  /* Extents the operator does not have are other operators' business. */
  gop_set_diagnostic_stream(repl.ctx, NULL);
  for (int i = 0; i < repl.next; i++)
    gop_run_set_extent(r, repl.ext[i].name, repl.ext[i].value);
  gop_clear_diagnostics(repl.ctx);
  gop_set_diagnostic_stream(repl.ctx, quiet ? NULL : stderr);
  b->n = gop_run_num_tensors(r);
  b->data = calloc((size_t)b->n, sizeof *b->data);
  b->numel = calloc((size_t)b->n, sizeof *b->numel);
  for (int i = 0; i < b->n; i++) {
    const char *name = gop_run_tensor_name(r, i);
    int64_t shape[8];
    int rank = gop_run_tensor_shape(r, i, shape);
    if (rank < 0) {
      gop_run_bind(r, name, NULL, 0); /* names the extent that is missing */
      fflush(stdout);
      if (!quiet) fprintf(stderr, "hint: set it with `set NAME VALUE`, e.g. `set F 32`\n");
      return NULL;
    }
    b->numel[i] = 1;
    for (int k = 0; k < rank; k++) b->numel[i] *= shape[k];
    b->data[i] = malloc(sizeof(float) * (size_t)(b->numel[i] ? b->numel[i] : 1));
    if (!b->data[i]) {
      repl_error("out of memory for %s (%" PRId64 " floats)", name, b->numel[i]);
      return NULL;
    }
    uint64_t state = 1000003u + (uint64_t)i;
    if (!gop_run_tensor_is_output(r, i))
      for (int64_t k = 0; k < b->numel[i]; k++)
        b->data[i][k] = (float)((double)(next_random(&state) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
    if (gop_run_bind(r, name, b->data[i], b->numel[i]) != 0) return NULL;
  }
  return r;
}

static void print_run(GopRun *r, const Buffers *b) {
  const GopRunStats *st = gop_run_stats(r);
  GopGraphInfo info;
  gop_graph_info(repl.graph, &info);
  printf("%s on %s (|V| %" PRId64 ", |E| %" PRId64 "): ", gop_op_name(repl.op), repl.graph_spec,
         info.num_vertices, info.num_edges);
  if (!st->on_gpu) {
    printf("interpreter, schedule %s", st->schedule);
    if (repl.timing) printf(", %.3f s", gop_run_seconds(r));
    printf("\n");
    if (st->note[0]) printf("  note: %s\n", st->note);
  } else {
    printf("%s, %s\n", st->device, st->target);
    if (repl.timing && st->median_ms > 0)
      printf("  time %.4f ms (median, min %.4f), %.1f GB/s over %.1f MB, %.1f%% of the "
             "fewest-bytes bound (copy %.0f GB/s)\n",
             st->median_ms, st->min_ms, st->gbps, (double)st->fewest_bytes / 1e6,
             100 * st->bound_fraction, st->copy_gbps);
  }
  for (int i = 0; i < b->n; i++) {
    if (!gop_run_tensor_is_output(r, i)) continue;
    double sum = 0, sq = 0;
    for (int64_t k = 0; k < b->numel[i]; k++) {
      sum += b->data[i][k];
      sq += (double)b->data[i][k] * b->data[i][k];
    }
    printf("  %s: sum %.6g, L2 norm %.6g\n", gop_run_tensor_name(r, i), sum, sqrt(sq));
  }
}

void repl_cmd_run(int argc, char **argv, const char *rest) {
  bool check = argv[0][0] == 'c';
  if (argc != 1) {
    repl_error("usage: %s", argv[0]);
    return;
  }
  if (!repl_need_op() || !repl_need_graph()) return;
  Buffers b = {0};
  GopRun *r = prepare_run(repl.sched, false, &b);
  if (!r || gop_run_exec(r) != 0) {
    repl_api_failed();
  } else if (!check) {
    print_run(r, &b);
  } else {
    double worst;
    int rc = gop_run_check(r, &worst);
    if (rc == 0)
      printf("check: every output agrees with the interpreter (relative L2 %.2g)%s%s\n", worst,
             gop_run_stats(r)->on_gpu ? "" : "; no GPU: the interpreter ran the schedule ",
             gop_run_stats(r)->on_gpu ? "" : gop_run_stats(r)->schedule);
    else
      repl_api_failed();
  }
  free_buffers(&b);
}

/* The first line of the diagnostics, without `<schedule>:1:2: error: `. */
static const char *first_reason(char *buf, size_t size) {
  const char *d = gop_diagnostics(repl.ctx);
  const char *e = strstr(d, "error: ");
  if (e) d = e + 7;
  snprintf(buf, size, "%.*s", (int)strcspn(d, "\n"), d);
  return buf;
}

/* One row of `compare`: the schedule is compiled to the lowered IR first,
 * so that a refusal shows even where only the interpreter can run. */
static void compare_row(const char *label, const char *sched) {
  char reason[300], time[64] = "-";
  const char *status = "ok";
  gop_set_diagnostic_stream(repl.ctx, NULL);
  gop_clear_diagnostics(repl.ctx);
  GopCompileOptions o = {.schedule = *sched ? sched : NULL};
  char *lowered = gop_emit_with(repl.op, GOP_STAGE_LOWERED, &o);
  Buffers b = {0};
  if (!lowered) {
    snprintf(time, sizeof time, "-");
    status = "refused: ";
    first_reason(reason, sizeof reason);
  } else {
    GopRun *r = prepare_run(sched, true, &b);
    double worst;
    int check = r && gop_run_exec(r) == 0 ? gop_run_check(r, &worst) : -1;
    if (check < 0) {
      status = "error: ";
      first_reason(reason, sizeof reason);
      repl.failed = true;
    } else {
      const GopRunStats *st = gop_run_stats(r);
      if (repl.timing && st->on_gpu) snprintf(time, sizeof time, "%.4f ms", st->median_ms);
      else if (repl.timing) snprintf(time, sizeof time, "%.3f s", gop_run_seconds(r));
      if (check == 1) {
        status = "wrong: ";
        first_reason(reason, sizeof reason);
      } else {
        status = st->on_gpu ? "ok" : "ok (interpreter)";
      }
    }
  }
  printf("%-32s %12s  %s%s\n", label ? label : sched, time, status,
         strchr(status, ':') ? reason : "");
  free(lowered);
  free_buffers(&b);
  gop_clear_diagnostics(repl.ctx);
  gop_set_diagnostic_stream(repl.ctx, stderr);
}

/* Splits `text` at top-level blanks: `warp_vertex(1, 2) gas` is two. */
static int split_schedules(char *text, char **out, int max) {
  int n = 0, depth = 0;
  char *start = NULL;
  for (char *p = text;; p++) {
    bool blank = *p == ' ' || *p == '\t' || !*p;
    if (*p == '(') depth++;
    if (*p == ')') depth--;
    if (!start && !blank) start = p;
    if (start && ((blank && depth <= 0) || !*p)) {
      bool end = !*p;
      *p = 0;
      if (n < max) out[n++] = start;
      start = NULL;
      if (end) break;
    } else if (!*p) {
      break;
    }
  }
  return n;
}

void repl_cmd_compare(int argc, char **argv, const char *rest) {
  if (!repl_need_op() || !repl_need_graph()) return;
  printf("%-32s %12s  %s\n", "schedule", "time", "status");
  compare_row(*repl.sched ? "(current)" : "(current: default)", repl.sched);
  char *args = repl_strdup(rest + strlen(argv[0]));
  char *scheds[REPL_MAX_WORDS];
  int n = split_schedules(args, scheds, REPL_MAX_WORDS);
  if (n > 0) {
    for (int i = 0; i < n; i++) compare_row(NULL, scheds[i]);
  } else {
    /* Every named schedule, each parameter 1 (the smallest mapping). */
    for (int i = 0; i < gop_op_num_schedules(repl.op); i++) {
      const char *sig = gop_op_schedule_signature(repl.op, i);
      char call[256];
      int len = snprintf(call, sizeof call, "%.*s(", (int)strcspn(sig, "("), sig);
      int nparams = strstr(sig, "()") ? 0 : 1;
      for (const char *p = sig; *p; p++) nparams += *p == ',';
      for (int k = 0; k < nparams; k++)
        len += snprintf(call + len, sizeof call - (size_t)len, "%s1", k ? ", " : "");
      snprintf(call + len, sizeof call - (size_t)len, ")");
      compare_row(NULL, call);
    }
  }
  free(args);
}

/* Set by Ctrl-C while `tune` runs: the tune stops after the candidate
 * being measured, and the session carries on. */
static volatile sig_atomic_t tune_stop;

static void on_tune_sigint(int sig) {
  (void)sig;
  tune_stop = 1;
}

void repl_cmd_tune(int argc, char **argv, const char *rest) {
  double budget = 30;
  if (argc > 2) {
    repl_error("usage: tune [BUDGET] (seconds, default 30)");
    return;
  }
  if (argc == 2) {
    char *end;
    errno = 0;
    budget = strtod(argv[1], &end);
    if (errno || end == argv[1] || *end || !(budget > 0) || budget > 86400) {
      repl_error("tune: '%s' is not a budget in seconds (more than 0, at most 86400)", argv[1]);
      return;
    }
  }
  if (!repl_need_op() || !repl_need_graph()) return;
  Buffers b = {0};
  GopRun *r = prepare_run("", false, &b);
  if (!r) {
    repl_api_failed();
    free_buffers(&b);
    return;
  }
  const char *db = getenv("GOP_TUNE_DB");
  struct sigaction sa = {.sa_handler = on_tune_sigint}, old;
  sigemptyset(&sa.sa_mask);
  tune_stop = 0;
  sigaction(SIGINT, &sa, &old);
  GopTuneOptions o = {.budget_s = budget,
                      .db_path = db && *db ? db : NULL,
                      .stop = &tune_stop,
                      .progress = gop_tune_progress_print,
                      .progress_ctx = stderr};
  GopTuneReport rep;
  int rc = gop_tune(r, &o, &rep);
  sigaction(SIGINT, &old, NULL);
  free_buffers(&b);
  if (rc != 0 && rep.tried == 0) {
    repl_api_failed();
    return;
  }
  if (!o.db_path) printf("(no database: set GOP_TUNE_DB to keep the measurements)\n");
  gop_tune_print(&rep, 5, stdout);
  if (rc != 0) repl_api_failed();
  if (rep.measured > 0) {
    repl_set_schedule(repl_strdup(rep.entries[0].schedule));
    printf("the schedule is now %s (`undo` takes it back)\n", rep.entries[0].schedule);
  }
}
