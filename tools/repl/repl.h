/* tools/repl/repl.h: gop, the interactive REPL, a thin client of include/gop.h.
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
 *
 * The one header of tools/repl/, sectioned by the file that implements each
 * part. Every command is a handler `void repl_cmd_NAME(argc, argv, rest)`:
 * argv holds the line's blank-separated words (argv[0] is the command) and
 * `rest` the whole line, for commands whose argument is free text. The
 * table of commands (commands.c) is the one list of them: dispatch, `help`
 * and completion all read it. To add a command, write its handler in the
 * file of its group and give it a row there.
 */
#ifndef GOP_REPL_H
#define GOP_REPL_H

#include <stdbool.h>
#include <stdint.h>

#include "gop.h"

enum { REPL_MAX_EXTENTS = 32, REPL_MAX_WORDS = 64, REPL_MAX_STACK = 256 };

/* ---------------------------------------------------------------------------
 * session.c: the session's state, how commands report, and the commands
 * that choose what to explore: load, use, ops, graph, set, save, quit.
 */

typedef struct ReplSession {
  GopContext *ctx;
  GopModule *module; /* the loaded file; NULL: only the stdlib */
  char *module_path;
  GopOp *op;
  GopGraph *graph;
  char *graph_spec;
  struct {
    char name[64];
    int64_t value;
  } ext[REPL_MAX_EXTENTS];
  int next;
  char *sched;                 /* directives joined by "; "; "" when none */
  char *undo[REPL_MAX_STACK], *redo[REPL_MAX_STACK];
  int nundo, nredo;
  char *diff_before;           /* the schedule before the last step; NULL: none */
  bool interactive, timing;
  bool failed;                 /* a command failed (the exit status of scripts) */
  bool quit;                   /* `quit` was typed: the loops stop */
} ReplSession;

extern ReplSession repl;

/* Prints `error: ...` on stderr and marks the command failed. */
void repl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Marks the command failed after the API reported (the diagnostics are
 * already on stderr). */
void repl_api_failed(void);
/* strdup that treats NULL as "" and ends the process when memory is out. */
char *repl_strdup(const char *s);
/* Whether an operator (a graph) is selected; if not, an error says how. */
bool repl_need_op(void);
bool repl_need_graph(void);

void repl_cmd_load(int argc, char **argv, const char *rest);
void repl_cmd_use(int argc, char **argv, const char *rest);
void repl_cmd_ops(int argc, char **argv, const char *rest);
void repl_cmd_graph(int argc, char **argv, const char *rest);
void repl_cmd_set(int argc, char **argv, const char *rest);
void repl_cmd_save(int argc, char **argv, const char *rest);
void repl_cmd_quit(int argc, char **argv, const char *rest);

/* ---------------------------------------------------------------------------
 * schedule.c: the schedule list with its undo and redo stacks, and the
 * commands that edit and show it: a primitive, undo, redo, history, reset,
 * schedule, schedules, show, diff.
 */

/* Whether a line starting with `word` is a schedule step: a schedule
 * directive (gop_schedule_directive_name). */
bool repl_is_primitive(const char *word);
/* Sets the schedule to `next` (malloc'ed; the session takes it), recording
 * the old one for undo and diff. */
void repl_set_schedule(char *next);
/* Empties the schedule and forgets its undo and redo stacks. */
void repl_clear_schedule(void);
/* The IR text under `sched` ("" : the operator as written); NULL after the
 * API reported why. */
char *repl_ir_text(const char *sched);

void repl_cmd_primitive(int argc, char **argv, const char *rest);
void repl_cmd_undo(int argc, char **argv, const char *rest); /* undo and redo */
void repl_cmd_history(int argc, char **argv, const char *rest);
void repl_cmd_reset(int argc, char **argv, const char *rest);
void repl_cmd_schedule(int argc, char **argv, const char *rest);
void repl_cmd_schedules(int argc, char **argv, const char *rest);
void repl_cmd_show(int argc, char **argv, const char *rest);
void repl_cmd_diff(int argc, char **argv, const char *rest);

/* ---------------------------------------------------------------------------
 * run.c: the commands that run the operator: run, check, compare, tune.
 */

void repl_cmd_run(int argc, char **argv, const char *rest); /* run and check */
void repl_cmd_compare(int argc, char **argv, const char *rest);
void repl_cmd_tune(int argc, char **argv, const char *rest);

/* ---------------------------------------------------------------------------
 * commands.c: the command table, help, and running one line.
 */

typedef struct ReplCommand {
  const char *name, *args, *summary, *detail; /* detail: "" or lines ending in '\n' */
  void (*fn)(int argc, char **argv, const char *rest);
} ReplCommand;

/* Every command, in the order `help` lists them; a NULL name ends it. */
extern const ReplCommand repl_commands[];
/* The command called `name` (`exit` is `quit`); NULL if none. */
const ReplCommand *repl_find_command(const char *name);
void repl_cmd_help(int argc, char **argv, const char *rest);
/* Runs one command line: a command, a primitive, a comment or nothing. */
void repl_execute(const char *line);

/* ---------------------------------------------------------------------------
 * complete.c: tab completion for readline.
 */

/* readline's rl_attempted_completion_function. */
char **repl_complete(const char *text, int start, int end);
/* Frees what completion keeps between calls. */
void repl_complete_free(void);

#endif
