/* tools/repl/main.c: gop's entry point. Parses gop's own arguments, sets
 * up the session, and feeds it commands one of three ways: the -e text
 * split at ';', the terminal through readline (prompt, history file and
 * completion), or standard input a line at a time. The exit status of a
 * non-interactive session says whether any command failed.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "repl.h"

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
  if (env && *env) return repl_strdup(env);
  const char *home = getenv("HOME");
  if (!home || !*home) return NULL;
  char *p;
  return asprintf(&p, "%s/.gop_history", home) < 0 ? NULL : p;
}

static void interactive_loop(void) {
  char *hist = history_path();
  rl_readline_name = "gop";
  rl_attempted_completion_function = repl_complete;
  using_history();
  stifle_history(1000);
  if (hist) read_history(hist); /* a missing or unreadable file is no error */
  printf("gop %s: `help` lists the commands, Tab completes, Ctrl-D leaves\n", GOP_VERSION);
  while (!repl.quit) {
    char prompt[128];
    snprintf(prompt, sizeof prompt, "gop%s%s> ", repl.op ? ":" : "",
             repl.op ? gop_op_name(repl.op) : "");
    char *line = readline(prompt);
    if (!line) {
      putchar('\n');
      break;
    }
    if (line[strspn(line, " \t")]) add_history(line);
    repl_execute(line);
    free(line);
  }
  if (hist) write_history(hist); /* failure is silent: history is a convenience */
  free(hist);
}

/* Runs `text` split at ';' outside parentheses. A `;` inside a directive
 * list given to `schedule` would split it too: use newlines (stdin) there. */
static void run_commands(const char *text) {
  char *copy = repl_strdup(text);
  int depth = 0;
  char *start = copy;
  for (char *p = copy;; p++) {
    if (*p == '(') depth++;
    if (*p == ')') depth--;
    if ((*p == ';' && depth <= 0) || !*p) {
      bool end = !*p;
      *p = 0;
      repl_execute(start);
      start = p + 1;
      if (end || repl.quit) break;
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
  repl.ctx = gop_context_new();
  if (!repl.ctx) return 1;
  gop_set_diagnostic_stream(repl.ctx, stderr);
  repl.sched = repl_strdup("");
  repl.interactive = !script && isatty(STDIN_FILENO);
  repl.timing = repl.interactive;
  if (script) {
    run_commands(script);
  } else if (repl.interactive) {
    interactive_loop();
  } else {
    char *line = NULL;
    size_t cap = 0;
    while (!repl.quit && getline(&line, &cap, stdin) >= 0) repl_execute(line);
    free(line);
  }
  repl_clear_schedule();
  free(repl.sched);
  free(repl.module_path);
  free(repl.graph_spec);
  repl_complete_free();
  gop_context_free(repl.ctx);
  return repl.failed && !repl.interactive ? 1 : 0;
}
