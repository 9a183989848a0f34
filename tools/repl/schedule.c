/* tools/repl/schedule.c: the schedule so far and the commands that edit
 * and show it. The schedule is one string of directives joined by "; ";
 * every step (a primitive, `schedule`, `reset`, a tune's winner) goes
 * through repl_set_schedule, which pushes the old string on the undo
 * stack, so undo and redo swap plain strings. A primitive is never checked
 * here: the API compiles the list plus the new directive, and either the
 * list grows or the scheduler's refusal is printed and the list stays.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repl.h"

/* A line starting with a schedule directive (passes/schedule.c's
 * primitives and schedule-level directives) is a schedule step. */
bool repl_is_primitive(const char *word) {
  for (int i = 0; gop_schedule_directive_name(i); i++)
    if (strcmp(gop_schedule_directive_name(i), word) == 0) return true;
  return false;
}

/* ---- the schedule list ---- */

void repl_set_schedule(char *next) {
  if (repl.nundo == REPL_MAX_STACK) { /* forget the oldest step */
    free(repl.undo[0]);
    memmove(repl.undo, repl.undo + 1, sizeof repl.undo[0] * (REPL_MAX_STACK - 1));
    repl.nundo--;
  }
  repl.undo[repl.nundo++] = repl_strdup(repl.sched);
  free(repl.diff_before);
  repl.diff_before = repl_strdup(repl.sched);
  free(repl.sched);
  repl.sched = next;
  while (repl.nredo > 0) free(repl.redo[--repl.nredo]); /* a new step forgets the undone */
}

void repl_clear_schedule(void) {
  while (repl.nundo > 0) free(repl.undo[--repl.nundo]);
  while (repl.nredo > 0) free(repl.redo[--repl.nredo]);
  free(repl.diff_before);
  repl.diff_before = NULL;
  free(repl.sched);
  repl.sched = repl_strdup("");
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

char *repl_ir_text(const char *sched) {
  if (!*sched) return gop_emit(repl.op, GOP_STAGE_IR);
  GopCompileOptions o = {.schedule = sched};
  return gop_emit_with(repl.op, GOP_STAGE_SCHED, &o);
}

/* ---- a primitive ---- */

/* Rewrites `split f 32 -> fo fi` as `split(f, 32) -> (fo, fi)`; a line
 * already in schedule-block syntax is kept. */
static char *directive_text(int argc, char **argv, const char *rest) {
  if (strchr(rest, '(')) return repl_strdup(rest);
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

void repl_cmd_primitive(int argc, char **argv, const char *rest) {
  if (!repl_need_op()) return;
  /* Arguments are the scheduler's to check: it names what each needs. */
  char *directive = directive_text(argc, argv, rest);
  char *next = join(repl.sched, directive);
  char *text = repl_ir_text(next);
  if (!text) {
    repl_api_failed();
    fprintf(stderr, "refused: %s (the schedule is unchanged)\n", directive);
    free(next);
  } else {
    repl_set_schedule(next);
    printf("applied %s\n", directive);
  }
  free(text);
  free(directive);
}

/* ---- undo, redo, history, reset, schedule(s) ---- */

static void print_schedule_line(void) {
  printf("schedule: %s\n", *repl.sched ? repl.sched : "(none)");
}

void repl_cmd_undo(int argc, char **argv, const char *rest) {
  bool undo = argv[0][0] == 'u';
  if (argc != 1) {
    repl_error("usage: %s", argv[0]);
    return;
  }
  if (!repl_need_op()) return;
  char **from = undo ? repl.undo : repl.redo, **to = undo ? repl.redo : repl.undo;
  int *nfrom = undo ? &repl.nundo : &repl.nredo, *nto = undo ? &repl.nredo : &repl.nundo;
  if (*nfrom == 0) {
    repl_error("nothing to %s", argv[0]);
    return;
  }
  char *prev = from[--*nfrom];
  if (*nto == REPL_MAX_STACK) {
    free(to[0]);
    memmove(to, to + 1, sizeof to[0] * (REPL_MAX_STACK - 1));
    (*nto)--;
  }
  to[(*nto)++] = repl_strdup(repl.sched);
  free(repl.diff_before);
  repl.diff_before = repl.sched;
  repl.sched = prev;
  print_schedule_line();
}

void repl_cmd_history(int argc, char **argv, const char *rest) {
  if (argc != 1) {
    repl_error("usage: history");
    return;
  }
  if (!repl_need_op()) return;
  if (!*repl.sched) {
    printf("no directives yet\n");
    return;
  }
  int k = 1;
  for (const char *p = repl.sched; *p; k++) {
    size_t n = strcspn(p, ";");
    printf("%3d  %.*s\n", k, (int)n, p);
    p += n;
    p += strspn(p, "; ");
  }
}

void repl_cmd_reset(int argc, char **argv, const char *rest) {
  if (argc != 1) {
    repl_error("usage: reset");
    return;
  }
  if (!repl_need_op()) return;
  repl_set_schedule(repl_strdup(""));
  printf("schedule reset (undo brings it back)\n");
}

void repl_cmd_schedules(int argc, char **argv, const char *rest) {
  if (argc != 1) {
    repl_error("usage: schedules");
    return;
  }
  if (!repl_need_op()) return;
  for (int i = 0; i < gop_op_num_schedules(repl.op); i++)
    printf("  %s\n", gop_op_schedule_signature(repl.op, i));
}

void repl_cmd_schedule(int argc, char **argv, const char *rest) {
  if (argc < 2) {
    repl_error("usage: schedule NAME(ARGS), e.g. `schedule warp_vertex(1, 2)` (see `schedules`)");
    return;
  }
  if (!repl_need_op()) return;
  const char *text = rest + strlen(argv[0]);
  text += strspn(text, " \t");
  char *next = repl_strdup(text);
  char *ir = repl_ir_text(next);
  if (!ir) {
    repl_api_failed();
    fprintf(stderr, "refused: %s (the schedule is unchanged)\n", next);
    free(next);
    return;
  }
  free(ir);
  repl_set_schedule(next);
  print_schedule_line();
}

/* ---- show, diff ---- */

void repl_cmd_show(int argc, char **argv, const char *rest) {
  if (argc > 2) {
    repl_error("usage: show [ir|sched|lowered|llvm|ptx]");
    return;
  }
  if (!repl_need_op()) return;
  const char *what = argc == 2 ? argv[1] : "sched";
  int stage = gop_stage_lookup(what);
  if (stage < 0 || stage == GOP_STAGE_AST) {
    repl_error("show %s: unknown stage (ir, sched, lowered, llvm, ptx)", what);
    return;
  }
  char *text;
  if (stage == GOP_STAGE_IR) {
    text = gop_emit(repl.op, GOP_STAGE_IR);
  } else if (stage == GOP_STAGE_SCHED) {
    text = repl_ir_text(repl.sched);
  } else {
    /* An empty list compiles with the default schedule, as gopc does. */
    if (!*repl.sched) printf("# no directives yet: the default schedule\n");
    GopCompileOptions o = {.schedule = *repl.sched ? repl.sched : NULL};
    text = gop_emit_with(repl.op, (GopStage)stage, &o);
  }
  if (!text) {
    repl_api_failed();
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

void repl_cmd_diff(int argc, char **argv, const char *rest) {
  if (argc != 1) {
    repl_error("usage: diff");
    return;
  }
  if (!repl_need_op()) return;
  if (!repl.diff_before) {
    repl_error("diff: no step taken yet: apply a primitive first");
    return;
  }
  char *before = repl_ir_text(repl.diff_before), *after = repl_ir_text(repl.sched);
  if (!before || !after) {
    repl_api_failed();
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
