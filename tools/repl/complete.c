/* tools/repl/complete.c: tab completion for GNU readline. The first word
 * completes to a command (the table in commands.c) or a primitive; later
 * words by what the first one takes: operators after `use`, stages after
 * `show`, named schedules after `schedule` and `compare`, and the current
 * IR's loop names and binding keywords after a primitive. Anything else
 * (load, graph, save) is left to readline's file-name completion.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <readline/readline.h>

#include "repl.h"

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
    if (w && strncmp(w, text, len) == 0) return repl_strdup(w);
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
  while (repl_commands[n].name) n++;
  int p = 0;
  while (gop_schedule_directive_name(p)) p++;
  return n + p;
}
static const char *get_command(int k) {
  int n = 0;
  while (repl_commands[n].name) n++;
  return k < n ? repl_commands[k].name : gop_schedule_directive_name(k - n);
}
static int count_ops(void) {
  GopModule *std = gop_stdlib(repl.ctx);
  return (repl.module ? gop_module_num_ops(repl.module) : 0) +
         (std ? gop_module_num_ops(std) : 0);
}
static const char *get_op(int k) {
  int n = repl.module ? gop_module_num_ops(repl.module) : 0;
  return gop_op_name(k < n ? gop_module_op(repl.module, k)
                           : gop_module_op(gop_stdlib(repl.ctx), k - n));
}
static int count_schedules(void) { return repl.op ? gop_op_num_schedules(repl.op) : 0; }
static const char *get_schedule(int k) {
  static char names[64][64];
  const char *sig = gop_op_schedule_signature(repl.op, k);
  char *slot = names[k % 64];
  snprintf(slot, 64, "%.*s", (int)strcspn(sig, "("), sig);
  return slot;
}

char **repl_complete(const char *text, int start, int end) {
  char first[64] = "";
  const char *line = rl_line_buffer;
  line += strspn(line, " \t");
  snprintf(first, sizeof first, "%.*s", (int)strcspn(line, " \t("), line);
  bool at_first = (int)(line - rl_line_buffer) >= start;
  free(loop_words);
  loop_words = NULL;
  completion_words = NULL;
  gop_set_diagnostic_stream(repl.ctx, NULL);
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
  } else if (repl_is_primitive(first)) { /* loop names mean nothing without an op */
    completion_words = keyword_words;
    if (repl.op) loop_words = gop_op_loop_names(repl.op, repl.sched);
  } else {
    gop_set_diagnostic_stream(repl.ctx, stderr);
    return NULL; /* load, graph, save: readline completes file names */
  }
  gop_clear_diagnostics(repl.ctx);
  gop_set_diagnostic_stream(repl.ctx, stderr);
  rl_attempted_completion_over = 1;
  return rl_completion_matches(text, generate);
}


void repl_complete_free(void) {
  free(loop_words);
  loop_words = NULL;
}
