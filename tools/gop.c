/* tools/gop.c: the interactive REPL, a thin client of include/gop.h.
 *
 * A session holds the operator being explored, a graph, the extents and
 * the schedule so far as a list of directives. A typed primitive is
 * applied by asking the API for the scheduled IR of the list plus the new
 * directive: the scheduler either accepts it (the list grows) or refuses
 * with its reason (the list stays), so the REPL never needs to know a
 * primitive's rules. The list is kept as one string, directives joined by
 * "; " (the form --schedule takes), which makes undo/redo snapshots plain
 * strings.
 *
 *   gop                 interactive, with GNU readline (history in
 *                       ~/.gop_history or $GOP_HISTORY, tab completion)
 *   gop -e 'cmd; cmd'   run commands, print their output only
 *   gop < script        the same, a command a line
 *
 * Errors never end a session. Non-interactively gop exits 1 when any
 * command failed, so scripts can tell.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "gop.h"

enum { MAX_EXTENTS = 32, MAX_WORDS = 64, MAX_STACK = 256 };

typedef struct Session {
  GopContext *ctx;
  GopModule *module; /* the loaded file; NULL: only the stdlib */
  char *module_path;
  GopOp *op;
  GopGraph *graph;
  char *graph_spec;
  struct {
    char name[64];
    int64_t value;
  } ext[MAX_EXTENTS];
  int next;
  char *sched;                 /* directives joined by "; "; "" when none */
  char *undo[MAX_STACK], *redo[MAX_STACK];
  int nundo, nredo;
  char *diff_before;           /* the schedule before the last step; NULL: none */
  bool interactive, timing;
  bool failed;                 /* a command failed (the exit status of scripts) */
} Session;

static Session S;

/* The schedule primitives a line may start with (passes/schedule.c, plus
 * the schedule-block directives that only guide the others). */
static const char *const primitives[] = {
    "split",  "reorder",  "fuse",    "bind",     "group",         "tile",
    "unroll", "vectorize", "promote", "interleave", "optional", "fallback", "deterministic",
    NULL};

/* ---- output ---- */

static void error(const char *fmt, ...) {
  fflush(stdout);
  va_list ap;
  va_start(ap, fmt);
  fputs("error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  S.failed = true;
}

/* Marks the command failed after the API reported (the diagnostics are
 * already on stderr). */
static void api_failed(void) {
  fflush(stderr);
  S.failed = true;
}

static char *xstrdup(const char *s) {
  char *c = strdup(s ? s : "");
  if (!c) {
    fputs("gop: out of memory\n", stderr);
    exit(1);
  }
  return c;
}


/* ---- the schedule list ---- */

/* Sets the schedule to `next`, recording the old one for undo and diff. */
static void set_schedule(char *next) {
  if (S.nundo == MAX_STACK) { /* forget the oldest step */
    free(S.undo[0]);
    memmove(S.undo, S.undo + 1, sizeof S.undo[0] * (MAX_STACK - 1));
    S.nundo--;
  }
  S.undo[S.nundo++] = xstrdup(S.sched);
  free(S.diff_before);
  S.diff_before = xstrdup(S.sched);
  free(S.sched);
  S.sched = next;
  while (S.nredo > 0) free(S.redo[--S.nredo]); /* a new step forgets the undone */
}

static void clear_schedule(void) {
  while (S.nundo > 0) free(S.undo[--S.nundo]);
  while (S.nredo > 0) free(S.redo[--S.nredo]);
  free(S.diff_before);
  S.diff_before = NULL;
  free(S.sched);
  S.sched = xstrdup("");
}

static char *join(const char *list, const char *directive) {
  char *out;
  if (asprintf(&out, "%s%s%s", list, *list ? "; " : "", directive) < 0) out = NULL;
  if (!out) {
    fputs("gop: out of memory\n", stderr);
    exit(1);
  }
  return out;
}

/* The IR text under `sched` ("" : the operator as written); NULL after the
 * API reported why. */
static char *ir_text(const char *sched) {
  if (!*sched) return gop_emit(S.op, GOP_STAGE_IR);
  GopCompileOptions o = {.schedule = sched};
  return gop_emit_with(S.op, GOP_STAGE_SCHED, &o);
}

static bool need_op(void) {
  if (S.op) return true;
  error("no operator selected: `use OP` (see `ops`), or `load FILE.gop` first");
  return false;
}

static bool need_graph(void) {
  if (S.graph) return true;
  error("no graph loaded: `graph FILE`, `graph rmat:8:4` or `graph grid:8x8` first");
  return false;
}

static bool is_primitive(const char *word) {
  for (int i = 0; primitives[i]; i++)
    if (strcmp(primitives[i], word) == 0) return true;
  return false;
}

/* Rewrites `split f 32 -> fo fi` as `split(f, 32) -> (fo, fi)`; a line
 * already in schedule-block syntax is kept. */
static char *directive_text(int argc, char **argv, const char *rest) {
  if (strchr(rest, '(')) return xstrdup(rest);
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  if (!f) exit(1);
  fprintf(f, "%s(", argv[0]);
  int i = 1;
  for (int k = 0; i < argc && strcmp(argv[i], "->") != 0; i++, k++)
    fprintf(f, "%s%s", k ? ", " : "", argv[i]);
  fputc(')', f);
  if (i < argc) {
    fputs(" -> (", f);
    for (int k = 0, j = i + 1; j < argc; j++, k++) fprintf(f, "%s%s", k ? ", " : "", argv[j]);
    fputc(')', f);
  }
  fclose(f);
  return out;
}

static void cmd_primitive(int argc, char **argv, const char *rest) {
  if (!need_op()) return;
  /* Arguments are the scheduler's to check: it names what each needs. */
  char *directive = directive_text(argc, argv, rest);
  char *next = join(S.sched, directive);
  char *text = ir_text(next);
  if (!text) {
    api_failed();
    fprintf(stderr, "refused: %s (the schedule is unchanged)\n", directive);
    free(next);
  } else {
    set_schedule(next);
    printf("applied %s\n", directive);
  }
  free(text);
  free(directive);
}

/* ---- operators and graphs ---- */

static void select_op(GopOp *op) {
  S.op = op;
  clear_schedule();
  printf("using %s\n", gop_op_signature(op));
}

static void cmd_load(int argc, char **argv, const char *rest) {
  if (argc != 2) {
    error("usage: load FILE.gop");
    return;
  }
  GopModule *m = gop_compile_file(S.ctx, argv[1]);
  if (!m) {
    api_failed();
    return;
  }
  S.module = m;
  free(S.module_path);
  S.module_path = xstrdup(argv[1]);
  int n = gop_module_num_ops(m);
  printf("loaded %s: %d operator%s\n", argv[1], n, n == 1 ? "" : "s");
  if (n == 1) select_op(gop_module_op(m, 0));
  else if (n > 1) printf("choose one with `use OP` (see `ops`)\n");
  else if (S.op) printf("still using %s\n", gop_op_name(S.op));
}

static void cmd_use(int argc, char **argv, const char *rest) {
  if (argc != 2) {
    error("usage: use OP (see `ops`)");
    return;
  }
  const char *name = argv[1];
  bool std_only = strncmp(name, "stdlib:", 7) == 0;
  if (std_only) name += 7;
  GopOp *op = NULL;
  /* The loaded file's operators hide the stdlib's of the same name. */
  if (S.module && !std_only)
    for (int i = 0; i < gop_module_num_ops(S.module) && !op; i++)
      if (strcmp(gop_op_name(gop_module_op(S.module, i)), name) == 0)
        op = gop_module_op(S.module, i);
  if (!op) {
    GopModule *std = gop_stdlib(S.ctx);
    op = std ? gop_module_find_op(std, name) : NULL;
  }
  if (!op) {
    api_failed();
    return;
  }
  select_op(op);
}

static void cmd_ops(int argc, char **argv, const char *rest) {
  if (argc != 1) {
    error("usage: ops");
    return;
  }
  if (S.module) {
    printf("%s:\n", S.module_path);
    if (gop_module_num_ops(S.module) == 0) printf("  (no operators)\n");
    for (int i = 0; i < gop_module_num_ops(S.module); i++)
      printf("  %s\n", gop_op_signature(gop_module_op(S.module, i)));
  }
  GopModule *std = gop_stdlib(S.ctx);
  printf("stdlib:\n");
  for (int i = 0; std && i < gop_module_num_ops(std); i++)
    printf("  %s\n", gop_op_signature(gop_module_op(std, i)));
}

static void cmd_graph(int argc, char **argv, const char *rest) {
  if (argc != 2) {
    error("usage: graph FILE|rmat:SCALE:EDGEFACTOR[:SEED]|grid:WxH");
    return;
  }
  GopGraph *g = gop_graph_open(S.ctx, argv[1]);
  if (!g) {
    api_failed();
    return;
  }
  S.graph = g;
  free(S.graph_spec);
  S.graph_spec = xstrdup(argv[1]);
  gop_graph_print(g, stdout);
}

static bool parse_i64(const char *s, int64_t *out) {
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end) return false;
  *out = v;
  return true;
}

static void cmd_set(int argc, char **argv, const char *rest) {
  if (argc == 1) {
    printf("timing %s\n", S.timing ? "on" : "off");
    for (int i = 0; i < S.next; i++) printf("%s %" PRId64 "\n", S.ext[i].name, S.ext[i].value);
    return;
  }
  if (argc != 3) {
    error("usage: set NAME VALUE (an extent, e.g. `set F 64`) or set timing on|off");
    return;
  }
  if (strcmp(argv[1], "timing") == 0) {
    if (strcmp(argv[2], "on") != 0 && strcmp(argv[2], "off") != 0) {
      error("set timing: on or off, not '%s'", argv[2]);
      return;
    }
    S.timing = argv[2][1] == 'n';
    return;
  }
  int64_t v;
  if (!parse_i64(argv[2], &v) || v < 1 || v > (1 << 24)) {
    error("set %s: '%s' is not an extent from 1 to 16777216", argv[1], argv[2]);
    return;
  }
  if (strlen(argv[1]) >= sizeof S.ext[0].name) {
    error("set: the name '%s' is too long", argv[1]);
    return;
  }
  int i = 0;
  while (i < S.next && strcmp(S.ext[i].name, argv[1]) != 0) i++;
  if (i == S.next) {
    if (S.next == MAX_EXTENTS) {
      error("set: too many extents (%d)", MAX_EXTENTS);
      return;
    }
    snprintf(S.ext[S.next++].name, sizeof S.ext[0].name, "%s", argv[1]);
  }
  S.ext[i].value = v;
}

/* ---- show, diff ---- */

static void cmd_show(int argc, char **argv, const char *rest) {
  if (argc > 2) {
    error("usage: show [ir|sched|lowered|llvm|ptx]");
    return;
  }
  if (!need_op()) return;
  const char *what = argc == 2 ? argv[1] : "sched";
  int stage = gop_stage_lookup(what);
  if (stage < 0 || stage == GOP_STAGE_AST) {
    error("show %s: unknown stage (ir, sched, lowered, llvm, ptx)", what);
    return;
  }
  char *text;
  if (stage == GOP_STAGE_IR) {
    text = gop_emit(S.op, GOP_STAGE_IR);
  } else if (stage == GOP_STAGE_SCHED) {
    text = ir_text(S.sched);
  } else {
    /* An empty list compiles with the default schedule, as gopc does. */
    if (!*S.sched) printf("# no directives yet: the default schedule\n");
    GopCompileOptions o = {.schedule = *S.sched ? S.sched : NULL};
    text = gop_emit_with(S.op, (GopStage)stage, &o);
  }
  if (!text) {
    api_failed();
    return;
  }
  fputs(text, stdout);
  free(text);
}

/* Splits `text` into lines in place; returns the count. */
static int split_lines(char *text, char ***lines) {
  int n = 0, cap = 64;
  *lines = malloc(sizeof **lines * (size_t)cap);
  for (char *p = text; *p;) {
    if (n == cap) *lines = realloc(*lines, sizeof **lines * (size_t)(cap *= 2));
    (*lines)[n++] = p;
    char *nl = strchr(p, '\n');
    if (!nl) break;
    *nl = 0;
    p = nl + 1;
  }
  return n;
}

/* A line diff by the longest common subsequence: IR texts are short, so
 * the quadratic table is cheap and the output is minimal. */
static void print_diff(char **a, int na, char **b, int nb) {
  int *t = calloc((size_t)(na + 1) * (size_t)(nb + 1), sizeof *t);
  if (!t) exit(1);
#define T(i, j) t[(size_t)(i) * (size_t)(nb + 1) + (size_t)(j)]
  for (int i = na - 1; i >= 0; i--)
    for (int j = nb - 1; j >= 0; j--)
      T(i, j) = strcmp(a[i], b[j]) == 0 ? T(i + 1, j + 1) + 1
                : T(i + 1, j) >= T(i, j + 1) ? T(i + 1, j) : T(i, j + 1);
  int i = 0, j = 0;
  while (i < na || j < nb) {
    if (i < na && j < nb && strcmp(a[i], b[j]) == 0) {
      printf("  %s\n", a[i++]);
      j++;
    } else if (i < na && (j == nb || T(i + 1, j) >= T(i, j + 1))) {
      printf("- %s\n", a[i++]);
    } else {
      printf("+ %s\n", b[j++]);
    }
  }
#undef T
  free(t);
}

static void cmd_diff(int argc, char **argv, const char *rest) {
  if (argc != 1) {
    error("usage: diff");
    return;
  }
  if (!need_op()) return;
  if (!S.diff_before) {
    error("diff: no step taken yet: apply a primitive first");
    return;
  }
  char *before = ir_text(S.diff_before), *after = ir_text(S.sched);
  if (!before || !after) {
    api_failed();
  } else {
    char **a, **b;
    int na = split_lines(before, &a), nb = split_lines(after, &b);
    print_diff(a, na, b, nb);
    free(a);
    free(b);
  }
  free(before);
  free(after);
}

/* ---- undo, redo, history, reset, schedule(s) ---- */

static void print_schedule_line(void) {
  printf("schedule: %s\n", *S.sched ? S.sched : "(none)");
}

static void cmd_undo(int argc, char **argv, const char *rest) {
  bool undo = argv[0][0] == 'u';
  if (argc != 1) {
    error("usage: %s", argv[0]);
    return;
  }
  if (!need_op()) return;
  char **from = undo ? S.undo : S.redo, **to = undo ? S.redo : S.undo;
  int *nfrom = undo ? &S.nundo : &S.nredo, *nto = undo ? &S.nredo : &S.nundo;
  if (*nfrom == 0) {
    error("nothing to %s", argv[0]);
    return;
  }
  char *prev = from[--*nfrom];
  if (*nto == MAX_STACK) {
    free(to[0]);
    memmove(to, to + 1, sizeof to[0] * (MAX_STACK - 1));
    (*nto)--;
  }
  to[(*nto)++] = xstrdup(S.sched);
  free(S.diff_before);
  S.diff_before = S.sched;
  S.sched = prev;
  print_schedule_line();
}

static void cmd_history(int argc, char **argv, const char *rest) {
  if (argc != 1) {
    error("usage: history");
    return;
  }
  if (!need_op()) return;
  if (!*S.sched) {
    printf("no directives yet\n");
    return;
  }
  int k = 1;
  for (const char *p = S.sched; *p; k++) {
    size_t n = strcspn(p, ";");
    printf("%3d  %.*s\n", k, (int)n, p);
    p += n;
    p += strspn(p, "; ");
  }
}

static void cmd_reset(int argc, char **argv, const char *rest) {
  if (argc != 1) {
    error("usage: reset");
    return;
  }
  if (!need_op()) return;
  set_schedule(xstrdup(""));
  printf("schedule reset (undo brings it back)\n");
}

static void cmd_schedules(int argc, char **argv, const char *rest) {
  if (argc != 1) {
    error("usage: schedules");
    return;
  }
  if (!need_op()) return;
  for (int i = 0; i < gop_op_num_schedules(S.op); i++)
    printf("  %s\n", gop_op_schedule_signature(S.op, i));
}

static void cmd_schedule(int argc, char **argv, const char *rest) {
  if (argc < 2) {
    error("usage: schedule NAME(ARGS), e.g. `schedule warp_vertex(1, 2)` (see `schedules`)");
    return;
  }
  if (!need_op()) return;
  const char *text = rest + strlen(argv[0]);
  text += strspn(text, " \t");
  char *next = xstrdup(text);
  char *ir = ir_text(next);
  if (!ir) {
    api_failed();
    fprintf(stderr, "refused: %s (the schedule is unchanged)\n", next);
    free(next);
    return;
  }
  free(ir);
  set_schedule(next);
  print_schedule_line();
}

/* ---- run, check, compare ---- */

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
  GopRun *r = gop_run_new(S.ctx, S.op, S.graph);
  if (!r) return NULL;
  GopCompileOptions o = {.schedule = sched && *sched ? sched : NULL};
  if (gop_run_set_compile(r, &o) != 0) return NULL;
  gop_run_set_timing(r, 3, 20);
  /* Extents the operator does not have are other operators' business. */
  gop_set_diagnostic_stream(S.ctx, NULL);
  for (int i = 0; i < S.next; i++) gop_run_set_extent(r, S.ext[i].name, S.ext[i].value);
  gop_clear_diagnostics(S.ctx);
  gop_set_diagnostic_stream(S.ctx, quiet ? NULL : stderr);
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
      error("out of memory for %s (%" PRId64 " floats)", name, b->numel[i]);
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
  gop_graph_info(S.graph, &info);
  printf("%s on %s (|V| %" PRId64 ", |E| %" PRId64 "): ", gop_op_name(S.op), S.graph_spec,
         info.num_vertices, info.num_edges);
  if (!st->on_gpu) {
    printf("interpreter");
    if (S.timing) printf(", %.3f s", gop_run_seconds(r));
    printf("\n");
    if (st->note[0]) printf("  note: %s\n", st->note);
  } else {
    printf("%s, %s\n", st->device, st->target);
    if (S.timing && st->median_ms > 0)
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

static void cmd_run(int argc, char **argv, const char *rest) {
  bool check = argv[0][0] == 'c';
  if (argc != 1) {
    error("usage: %s", argv[0]);
    return;
  }
  if (!need_op() || !need_graph()) return;
  Buffers b = {0};
  GopRun *r = prepare_run(S.sched, false, &b);
  if (!r || gop_run_exec(r) != 0) {
    api_failed();
  } else if (!check) {
    print_run(r, &b);
  } else {
    double worst;
    int rc = gop_run_check(r, &worst);
    if (rc == 0)
      printf("check: every output agrees with the interpreter (relative L2 %.2g)%s\n", worst,
             gop_run_stats(r)->on_gpu ? "" : "; no GPU, so the run was the interpreter's");
    else
      api_failed();
  }
  free_buffers(&b);
}

/* The first line of the diagnostics, without `<schedule>:1:2: error: `. */
static const char *first_reason(char *buf, size_t size) {
  const char *d = gop_diagnostics(S.ctx);
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
  gop_set_diagnostic_stream(S.ctx, NULL);
  gop_clear_diagnostics(S.ctx);
  GopCompileOptions o = {.schedule = *sched ? sched : NULL};
  char *lowered = gop_emit_with(S.op, GOP_STAGE_LOWERED, &o);
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
      S.failed = true;
    } else {
      const GopRunStats *st = gop_run_stats(r);
      if (S.timing && st->on_gpu) snprintf(time, sizeof time, "%.4f ms", st->median_ms);
      else if (S.timing) snprintf(time, sizeof time, "%.3f s", gop_run_seconds(r));
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
  gop_clear_diagnostics(S.ctx);
  gop_set_diagnostic_stream(S.ctx, stderr);
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

static void cmd_compare(int argc, char **argv, const char *rest) {
  if (!need_op() || !need_graph()) return;
  printf("%-32s %12s  %s\n", "schedule", "time", "status");
  compare_row(*S.sched ? "(current)" : "(current: default)", S.sched);
  char *args = xstrdup(rest + strlen(argv[0]));
  char *scheds[MAX_WORDS];
  int n = split_schedules(args, scheds, MAX_WORDS);
  if (n > 0) {
    for (int i = 0; i < n; i++) compare_row(NULL, scheds[i]);
  } else {
    /* Every named schedule, each parameter 1 (the smallest mapping). */
    for (int i = 0; i < gop_op_num_schedules(S.op); i++) {
      const char *sig = gop_op_schedule_signature(S.op, i);
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

static void cmd_tune(int argc, char **argv, const char *rest) {
  double budget = 30;
  if (argc > 2) {
    error("usage: tune [BUDGET] (seconds, default 30)");
    return;
  }
  if (argc == 2) {
    char *end;
    errno = 0;
    budget = strtod(argv[1], &end);
    if (errno || end == argv[1] || *end || !(budget > 0) || budget > 86400) {
      error("tune: '%s' is not a budget in seconds (more than 0, at most 86400)", argv[1]);
      return;
    }
  }
  if (!need_op() || !need_graph()) return;
  Buffers b = {0};
  GopRun *r = prepare_run("", false, &b);
  if (!r) {
    api_failed();
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
    api_failed();
    return;
  }
  if (!o.db_path) printf("(no database: set GOP_TUNE_DB to keep the measurements)\n");
  gop_tune_print(&rep, 5, stdout);
  if (rc != 0) api_failed();
  if (rep.measured > 0) {
    set_schedule(xstrdup(rep.entries[0].schedule));
    printf("the schedule is now %s (`undo` takes it back)\n", rep.entries[0].schedule);
  }
}

static void cmd_save(int argc, char **argv, const char *rest) {
  if (argc < 2 || argc > 3) {
    error("usage: save FILE.gop [NAME]");
    return;
  }
  if (!need_op()) return;
  if (!*S.sched) {
    error("save: the schedule is empty: apply a primitive first");
    return;
  }
  const char *name = argc == 3 ? argv[2] : "explored";
  if (gop_save_schedule(S.ctx, argv[1], name, S.sched) != 0) {
    api_failed();
    return;
  }
  printf("saved schedule %s() to %s\n", name, argv[1]);
}

/* ---- help, quit ---- */

static bool quit_requested;

static void cmd_quit(int argc, char **argv, const char *rest) {
  quit_requested = true;
}

/* ---- the command table ---- */

typedef struct Command {
  const char *name, *args, *summary, *detail;
  void (*fn)(int argc, char **argv, const char *rest);
} Command;

static void cmd_help(int argc, char **argv, const char *rest);

static const Command commands[] = {
    {"load", "FILE.gop", "compile a .gop file; its operators and schedules become visible",
     "A file with one operator selects it. Errors are printed with their line.\n", cmd_load},
    {"use", "OP", "select an operator (the loaded file's, else the stdlib's)",
     "Selecting an operator starts an empty schedule. stdlib:NAME picks the\n"
     "standard library's even when the loaded file has one of that name.\n", cmd_use},
    {"ops", "", "list the operators", "The loaded file's first, then the standard library's.\n",
     cmd_ops},
    {"graph", "G", "load a graph: a .mtx/SNAP file, rmat:S:EF[:SEED] or grid:WxH",
     "Prints |V|, |E| and degree statistics.\n", cmd_graph},
    {"set", "NAME VALUE", "set an extent (set F 64), or set timing on|off",
     "Extents apply to every operator that has them. `set timing off` leaves\n"
     "times out of run and compare (the default when not interactive, so that\n"
     "transcripts are reproducible). `set` alone prints the settings.\n", cmd_set},
    {"show", "[STAGE]", "print a stage: ir, sched (the default), lowered, llvm, ptx",
     "`show` and `show sched` print the IR under the schedule so far, `show ir`\n"
     "the operator as written; lowered, llvm and ptx compile the schedule (the\n"
     "default schedule while it is empty).\n", cmd_show},
    {"diff", "", "the IR before and after the last step, as a line diff",
     "Lines only before the step start with '-', lines only after with '+'.\n", cmd_diff},
    {"undo", "", "take back the last step (a primitive, schedule or reset)", "", cmd_undo},
    {"redo", "", "do again the step last undone", "", cmd_undo},
    {"history", "", "list the directives of the schedule so far", "", cmd_history},
    {"reset", "", "empty the schedule", "", cmd_reset},
    {"schedule", "NAME(ARGS)", "start from a named schedule (replaces the list)",
     "Any --schedule text works: `schedule warp_vertex(1, 2)`, or\n"
     "`schedule thread_vertex(1, 1); unroll(fs, 4)`.\n", cmd_schedule},
    {"schedules", "", "list the named schedules the operator can use", "", cmd_schedules},
    {"run", "", "run the operator on the graph with the schedule so far",
     "On the GPU when there is one (time, GB/s, fraction of the bound), else on\n"
     "the reference interpreter, with a note. Inputs are random (seed 1, as\n"
     "gopc run); each output's sum and L2 norm are printed.\n", cmd_run},
    {"check", "", "run and compare the outputs with the interpreter", "", cmd_run},
    {"compare", "[SCHED...]", "run the schedule so far and others, as a table",
     "The first row, (current), is the schedule so far (`history` lists it);\n"
     "then the schedules given or, without arguments, every named schedule with\n"
     "each parameter 1. A refused schedule says why.\n", cmd_compare},
    {"tune", "[BUDGET]", "autotune on the GPU; the best schedule becomes the current one",
     "Measures the legal points of the operator's search space on the GPU in\n"
     "the cost model's order for BUDGET seconds (default 30), checking each\n"
     "output, with a progress line; Ctrl-C stops the tune (not the session)\n"
     "after the candidate being measured. The top five are printed and the\n"
     "fastest becomes the schedule (a step: `undo` takes it back). With\n"
     "GOP_TUNE_DB set, every verified measurement is stored there.\n", cmd_tune},
    {"save", "FILE.gop [NAME]", "append the schedule to FILE as `schedule NAME() {...}`",
     "NAME defaults to `explored`. The file is created if absent; its content\n"
     "is kept, and nothing is written if the result would not compile.\n", cmd_save},
    {"help", "[COMMAND]", "this list, or one command's help", "", cmd_help},
    {"quit", "", "leave (also exit, or end of input)", "", cmd_quit},
    {NULL, NULL, NULL, NULL, NULL},
};

static const Command *find_command(const char *name) {
  for (const Command *c = commands; c->name; c++)
    if (strcmp(c->name, name) == 0) return c;
  if (strcmp(name, "exit") == 0) return find_command("quit");
  return NULL;
}

static void cmd_help(int argc, char **argv, const char *rest) {
  if (argc == 1) {
    printf("commands (`help CMD` for more):\n");
    for (const Command *c = commands; c->name; c++) {
      char head[64];
      snprintf(head, sizeof head, "%s%s%s", c->name, *c->args ? " " : "", c->args);
      printf("  %-28s %s\n", head, c->summary);
    }
    printf("  %-28s %s\n", "PRIMITIVE ARGS",
           "apply a schedule primitive: split f 32, bind v warp, split(f, 32) -> (fo, fi)");
    return;
  }
  if (argc != 2) {
    error("usage: help [COMMAND]");
    return;
  }
  const Command *c = find_command(argv[1]);
  if (c) {
    printf("%s%s%s: %s\n%s", c->name, *c->args ? " " : "", c->args, c->summary, c->detail);
  } else if (is_primitive(argv[1])) {
    printf("%s: a schedule primitive (docs/scheduling.md). Typed as in a schedule\n"
           "block, `%s(ARGS) -> (NAMES)`, or with blanks, `%s ARGS -> NAMES`; applied\n"
           "at once, or refused with the scheduler's reason. Several directives on one\n"
           "line, separated by ';', are one step: `bind(v, warp); bind(fl, lane)`\n"
           "(a warp binding lowers only with its lanes).\n",
           argv[1], argv[1], argv[1]);
  } else {
    error("help: unknown command '%s' (`help` lists them)", argv[1]);
  }
}

/* ---- the command loop ---- */

static void execute(const char *line) {
  while (*line == ' ' || *line == '\t') line++;
  size_t len = strlen(line);
  while (len && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\n' ||
                 line[len - 1] == '\r'))
    len--;
  if (!len || line[0] == '#') return;
  char *rest = strndup(line, len);
  char *words = strndup(line, len);
  char *argv[MAX_WORDS];
  int argc = 0;
  for (char *tok = strtok(words, " \t"); tok && argc < MAX_WORDS; tok = strtok(NULL, " \t"))
    argv[argc++] = tok;
  /* `split(f, 32)` is one word up to the parenthesis */
  char head[64];
  snprintf(head, sizeof head, "%.*s", (int)strcspn(argv[0], "("), argv[0]);
  gop_clear_diagnostics(S.ctx);
  const Command *c = find_command(argv[0]);
  if (c) {
    c->fn(argc, argv, rest);
  } else if (is_primitive(head)) {
    argv[0] = head;
    cmd_primitive(argc, argv, rest);
  } else {
    error("unknown command '%s' (`help` lists the commands)", head);
  }
  fflush(stdout);
  fflush(stderr);
  free(rest);
  free(words);
}

/* ---- readline: completion ---- */

static const char *const *completion_words;
static char *loop_words; /* space-separated loop names of the current IR */

static const char *const stage_words[] = {"ir", "sched", "lowered", "llvm", "ptx", NULL};
static const char *const keyword_words[] = {"warp", "lane", "block", "thread", "register", NULL};

/* Yields the candidates starting with `text`: the current word list, then
 * (for primitives) the loop names and keywords. */
static char *generate(const char *text, int state) {
  static int i, phase;
  static size_t len;
  if (state == 0) {
    i = phase = 0;
    len = strlen(text);
  }
  for (;;) {
    const char *w = NULL;
    if (phase == 0) {
      w = completion_words ? completion_words[i++] : NULL;
      if (!w) phase = 1, i = 0;
    }
    if (phase == 1) { /* loop names */
      const char *p = loop_words ? loop_words : "";
      for (int k = 0; k < i && *p; k++) p += strcspn(p, " "), p += *p == ' ';
      if (*p) {
        static char word[64];
        snprintf(word, sizeof word, "%.*s", (int)strcspn(p, " "), p);
        i++;
        w = word;
      } else {
        return NULL;
      }
    }
    if (w && strncmp(w, text, len) == 0) return xstrdup(w);
  }
}

static const char **name_list(int (*count)(void), const char *(*get)(int)) {
  static const char **list;
  free(list);
  int n = count();
  list = calloc((size_t)n + 1, sizeof *list);
  for (int k = 0; list && k < n; k++) list[k] = get(k);
  return list;
}

static int count_commands(void) {
  int n = 0;
  while (commands[n].name) n++;
  int p = 0;
  while (primitives[p]) p++;
  return n + p;
}
static const char *get_command(int k) {
  int n = 0;
  while (commands[n].name) n++;
  return k < n ? commands[k].name : primitives[k - n];
}
static int count_ops(void) {
  GopModule *std = gop_stdlib(S.ctx);
  return (S.module ? gop_module_num_ops(S.module) : 0) + (std ? gop_module_num_ops(std) : 0);
}
static const char *get_op(int k) {
  int n = S.module ? gop_module_num_ops(S.module) : 0;
  return gop_op_name(k < n ? gop_module_op(S.module, k) : gop_module_op(gop_stdlib(S.ctx), k - n));
}
static int count_schedules(void) { return S.op ? gop_op_num_schedules(S.op) : 0; }
static const char *get_schedule(int k) {
  static char names[64][64];
  const char *sig = gop_op_schedule_signature(S.op, k);
  char *slot = names[k % 64];
  snprintf(slot, 64, "%.*s", (int)strcspn(sig, "("), sig);
  return slot;
}

static char **complete(const char *text, int start, int end) {
  char first[64] = "";
  const char *line = rl_line_buffer;
  line += strspn(line, " \t");
  snprintf(first, sizeof first, "%.*s", (int)strcspn(line, " \t("), line);
  bool at_first = (int)(line - rl_line_buffer) >= start;
  free(loop_words);
  loop_words = NULL;
  completion_words = NULL;
  gop_set_diagnostic_stream(S.ctx, NULL);
  if (at_first) {
    completion_words = name_list(count_commands, get_command);
  } else if (!strcmp(first, "use")) {
    completion_words = name_list(count_ops, get_op);
  } else if (!strcmp(first, "show")) {
    completion_words = stage_words;
  } else if (!strcmp(first, "help")) {
    completion_words = name_list(count_commands, get_command);
  } else if (!strcmp(first, "schedule") || !strcmp(first, "compare")) {
    completion_words = name_list(count_schedules, get_schedule);
  } else if (is_primitive(first)) { /* loop names mean nothing without an op */
    completion_words = keyword_words;
    if (S.op) loop_words = gop_op_loop_names(S.op, S.sched);
  } else {
    gop_set_diagnostic_stream(S.ctx, stderr);
    return NULL; /* load, graph, save: readline completes file names */
  }
  gop_clear_diagnostics(S.ctx);
  gop_set_diagnostic_stream(S.ctx, stderr);
  rl_attempted_completion_over = 1;
  return rl_completion_matches(text, generate);
}

/* ---- main ---- */

static const char *usage =
    "usage: gop [-e 'COMMAND; COMMAND...'] [--help]\n"
    "\n"
    "The interactive front of gop: select an operator and a graph, apply schedule\n"
    "primitives one at a time, see the IR change, run, check and compare.\n"
    "Without -e, reads commands from the terminal (with line editing, history in\n"
    "~/.gop_history or $GOP_HISTORY, and tab completion) or, when standard input\n"
    "is not a terminal, a command a line from it, printing output only.\n"
    "Type `help` in a session for the commands. Exit status: 0, or 1 when a\n"
    "command failed in a non-interactive session; 2 on a usage error.\n";

static char *history_path(void) {
  const char *env = getenv("GOP_HISTORY");
  if (env && *env) return xstrdup(env);
  const char *home = getenv("HOME");
  if (!home || !*home) return NULL;
  char *p;
  return asprintf(&p, "%s/.gop_history", home) < 0 ? NULL : p;
}

static void interactive_loop(void) {
  char *hist = history_path();
  rl_readline_name = "gop";
  rl_attempted_completion_function = complete;
  using_history();
  stifle_history(1000);
  if (hist) read_history(hist); /* a missing or unreadable file is no error */
  printf("gop %s: `help` lists the commands, Tab completes, Ctrl-D leaves\n", GOP_VERSION);
  while (!quit_requested) {
    char prompt[128];
    snprintf(prompt, sizeof prompt, "gop%s%s> ", S.op ? ":" : "", S.op ? gop_op_name(S.op) : "");
    char *line = readline(prompt);
    if (!line) {
      putchar('\n');
      break;
    }
    if (line[strspn(line, " \t")]) add_history(line);
    execute(line);
    free(line);
  }
  if (hist) write_history(hist); /* failure is silent: history is a convenience */
  free(hist);
}

/* Runs `text` split at ';' outside parentheses. A `;` inside a directive
 * list given to `schedule` would split it too: use newlines (stdin) there. */
static void run_commands(const char *text) {
  char *copy = xstrdup(text);
  int depth = 0;
  char *start = copy;
  for (char *p = copy;; p++) {
    if (*p == '(') depth++;
    if (*p == ')') depth--;
    if ((*p == ';' && depth <= 0) || !*p) {
      bool end = !*p;
      *p = 0;
      execute(start);
      start = p + 1;
      if (end || quit_requested) break;
    }
  }
  free(copy);
}

int main(int argc, char **argv) {
  const char *script = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(usage, stdout);
      return 0;
    } else if (!strcmp(argv[i], "--version")) {
      printf("gop %s\n", GOP_VERSION);
      return 0;
    } else if (!strcmp(argv[i], "-e") && i + 1 < argc && !script) {
      script = argv[++i];
    } else {
      fprintf(stderr, "gop: unexpected argument '%s'\n\n%s", argv[i], usage);
      return 2;
    }
  }
  /* Line-buffered stdout keeps output and diagnostics (stderr) in order
   * when both go to one file, as in the transcript tests. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  S.ctx = gop_context_new();
  if (!S.ctx) return 1;
  gop_set_diagnostic_stream(S.ctx, stderr);
  S.sched = xstrdup("");
  S.interactive = !script && isatty(STDIN_FILENO);
  S.timing = S.interactive;
  if (script) {
    run_commands(script);
  } else if (S.interactive) {
    interactive_loop();
  } else {
    char *line = NULL;
    size_t cap = 0;
    while (!quit_requested && getline(&line, &cap, stdin) >= 0) execute(line);
    free(line);
  }
  clear_schedule();
  free(S.sched);
  free(S.module_path);
  free(S.graph_spec);
  free(loop_words);
  gop_context_free(S.ctx);
  return S.failed && !S.interactive ? 1 : 0;
}
