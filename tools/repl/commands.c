/* tools/repl/commands.c: the command table, the one list of the REPL's
 * commands ({name, arguments, summary, detail, handler}), and what reads
 * it: repl_execute, which splits a line into words and calls the handler
 * (or applies a schedule primitive), and `help`. Completion (complete.c)
 * reads the table too, so a new command needs only its row here.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repl.h"

const ReplCommand repl_commands[] = {
    {"load", "FILE.gop", "compile a .gop file; its operators and schedules become visible",
     "A file with one operator selects it. Errors are printed with their line.\n", repl_cmd_load},
    {"use", "OP", "select an operator (the loaded file's, else the stdlib's)",
     "Selecting an operator starts an empty schedule. stdlib:NAME picks the\n"
     "standard library's even when the loaded file has one of that name.\n", repl_cmd_use},
    {"ops", "", "list the operators", "The loaded file's first, then the standard library's.\n",
     repl_cmd_ops},
    {"graph", "G", "load a graph: a .mtx/SNAP file, rmat:S:EF[:SEED] or grid:WxH",
     "Prints |V|, |E| and degree statistics.\n", repl_cmd_graph},
    {"set", "NAME VALUE", "set an extent (set F 64), or set timing on|off",
     "Extents apply to every operator that has them. `set timing off` leaves\n"
     "times out of run and compare (the default when not interactive, so that\n"
     "transcripts are reproducible). `set` alone prints the settings.\n", repl_cmd_set},
    {"show", "[STAGE]", "print a stage: ir, sched (the default), lowered, llvm, ptx",
     "`show` and `show sched` print the IR under the schedule so far, `show ir`\n"
     "the operator as written; lowered, llvm and ptx compile the schedule (the\n"
     "default schedule while it is empty).\n", repl_cmd_show},
    {"diff", "", "the IR before and after the last step, as a line diff",
     "Lines only before the step start with '-', lines only after with '+'.\n", repl_cmd_diff},
    {"undo", "", "take back the last step (a primitive, schedule or reset)", "", repl_cmd_undo},
    {"redo", "", "do again the step last undone", "", repl_cmd_undo},
    {"history", "", "list the directives of the schedule so far", "", repl_cmd_history},
    {"reset", "", "empty the schedule", "", repl_cmd_reset},
    {"schedule", "NAME(ARGS)", "start from a named schedule (replaces the list)",
     "Any --schedule text works: `schedule warp_vertex(1, 2)`, or\n"
     "`schedule thread_vertex(1, 1); unroll(fs, 4)`.\n", repl_cmd_schedule},
    {"schedules", "", "list the named schedules the operator can use", "", repl_cmd_schedules},
    {"run", "", "run the operator on the graph with the schedule so far",
     "On the GPU when there is one (time, GB/s, fraction of the bound), else on\n"
     "the reference interpreter, with a note. Inputs are random (seed 1, as\n"
     "gopc run); each output's sum and L2 norm are printed.\n", repl_cmd_run},
    {"check", "", "run and compare the outputs with the interpreter", "", repl_cmd_run},
    {"compare", "[SCHED...]", "run the schedule so far and others, as a table",
     "The first row, (current), is the schedule so far (`history` lists it);\n"
     "then the schedules given or, without arguments, every named schedule with\n"
     "each parameter 1. A refused schedule says why.\n", repl_cmd_compare},
    {"tune", "[BUDGET]", "autotune on the GPU; the best schedule becomes the current one",
     "Measures the legal points of the operator's search space on the GPU in\n"
     "the cost model's order for BUDGET seconds (default 30), checking each\n"
     "output, with a progress line; Ctrl-C stops the tune (not the session)\n"
     "after the candidate being measured. The top five are printed and the\n"
     "fastest becomes the schedule (a step: `undo` takes it back). With\n"
     "GOP_TUNE_DB set, every verified measurement is stored there.\n", repl_cmd_tune},
    {"save", "FILE.gop [NAME]", "append the schedule to FILE as `schedule NAME() {...}`",
     "NAME defaults to `explored`. The file is created if absent; its content\n"
     "is kept, and nothing is written if the result would not compile.\n", repl_cmd_save},
    {"help", "[COMMAND]", "this list, or one command's help", "", repl_cmd_help},
    {"quit", "", "leave (also exit, or end of input)", "", repl_cmd_quit},
    {NULL, NULL, NULL, NULL, NULL},
};

const ReplCommand *repl_find_command(const char *name) {
  for (const ReplCommand *c = repl_commands; c->name; c++)
    if (strcmp(c->name, name) == 0) return c;
  if (strcmp(name, "exit") == 0) return repl_find_command("quit");
  return NULL;
}

void repl_cmd_help(int argc, char **argv, const char *rest) {
  if (argc == 1) {
    printf("commands (`help CMD` for more):\n");
    for (const ReplCommand *c = repl_commands; c->name; c++) {
      char head[64];
      snprintf(head, sizeof head, "%s%s%s", c->name, *c->args ? " " : "", c->args);
      printf("  %-28s %s\n", head, c->summary);
    }
    printf("  %-28s %s\n", "PRIMITIVE ARGS",
           "apply a schedule primitive: split f 32, bind v warp, split(f, 32) -> (fo, fi)");
    return;
  }
  if (argc != 2) {
    repl_error("usage: help [COMMAND]");
    return;
  }
  const ReplCommand *c = repl_find_command(argv[1]);
  if (c) {
    printf("%s%s%s: %s\n%s", c->name, *c->args ? " " : "", c->args, c->summary, c->detail);
  } else if (repl_is_primitive(argv[1])) {
    printf("%s: a schedule primitive (docs/scheduling.md). Typed as in a schedule\n"
           "block, `%s(ARGS) -> (NAMES)`, or with blanks, `%s ARGS -> NAMES`; applied\n"
           "at once, or refused with the scheduler's reason. Several directives on one\n"
           "line, separated by ';', are one step: `bind(v, warp); bind(fl, lane)`\n"
           "(a warp binding lowers only with its lanes).\n",
           argv[1], argv[1], argv[1]);
  } else {
    repl_error("help: unknown command '%s' (`help` lists them)", argv[1]);
  }
}

/* ---- the command loop ---- */

void repl_execute(const char *line) {
  while (*line == ' ' || *line == '\t') line++;
  size_t len = strlen(line);
  while (len && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\n' ||
                 line[len - 1] == '\r'))
    len--;
  if (!len || line[0] == '#') return;
  char *rest = strndup(line, len);
  char *words = strndup(line, len);
  char *argv[REPL_MAX_WORDS];
  int argc = 0;
  for (char *tok = strtok(words, " \t"); tok && argc < REPL_MAX_WORDS; tok = strtok(NULL, " \t"))
    argv[argc++] = tok;
  /* `split(f, 32)` is one word up to the parenthesis */
  char head[64];
  snprintf(head, sizeof head, "%.*s", (int)strcspn(argv[0], "("), argv[0]);
  gop_clear_diagnostics(repl.ctx);
  const ReplCommand *c = repl_find_command(argv[0]);
  if (c) {
    c->fn(argc, argv, rest);
  } else if (repl_is_primitive(head)) {
    argv[0] = head;
    repl_cmd_primitive(argc, argv, rest);
  } else {
    repl_error("unknown command '%s' (`help` lists the commands)", head);
  }
  fflush(stdout);
  fflush(stderr);
  free(rest);
  free(words);
}

