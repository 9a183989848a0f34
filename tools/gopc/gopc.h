/* tools/gopc/gopc.h: gopc, the compiler command, a thin client of
 * include/gop.h.
 *
 *   gopc check FILE.gop...              parse and check, print diagnostics
 *   gopc emit FILE --op NAME --stage S  print a stage (ast, ir, ..., ptx)
 *   gopc grad FILE --op NAME [--wrt X]  the derived gradient operators
 *   gopc run FILE --op NAME --graph G --F 64 [--in N=x.npy] [--out N=y.npy]
 *   gopc pack FILE --op NAME -o X.pack  compile to a kernel pack
 *   gopc ops [FILE] [NAME]              list operators
 *   gopc graph G [--reorder M] [-o F]   a graph's statistics (reordered)
 *   gopc passes                         list the lowering passes
 *   gopc model NAME --graph G           a GNN model's forward
 *   gopc tune FILE --graph G --F 64     autotune; --train, --evaluate
 *
 * FILE may be `stdlib:NAME`, an operator of the standard library (then
 * --op may be left out). Exit status: 0 success, 1 an error in the input
 * (diagnostics on stderr) or a failed --check, 2 a usage error, 3 no CUDA
 * driver and 4 no CUDA device when the GPU was required (--gpu, --pack).
 *
 * The one header of tools/gopc/, sectioned by the file that implements
 * each part. Every subcommand is a function `int gopc_NAME(argc, argv)`
 * given the arguments after its name and returning the exit status; it
 * describes its arguments to the option parser (options.c) as a table.
 */
#ifndef GOP_GOPC_H
#define GOP_GOPC_H

#include <stdbool.h>
#include <stdint.h>

#include "gop.h"

enum { GOPC_EXIT_INPUT = 1, GOPC_EXIT_USAGE = 2 };

/* ---------------------------------------------------------------------------
 * options.c: the one option parser of the subcommands.
 *
 * A subcommand describes its arguments in a GopcArgs: a table of options,
 * where positional arguments go, and its usage text. gopc_parse reads argv
 * once, left to right, and stops at the first problem, so that the message
 * names the first argument at fault. An option that takes a value takes the
 * next argument, whatever it looks like (`--op --help` names an operator
 * "--help"); `--flag=VALUE` is not a form of its own but a flag the table
 * does not have. --help and -h print the usage on stdout.
 */

typedef struct GopcArgs GopcArgs;

typedef enum GopcKind {
  GOPC_BOOL,   /* --flag: *(bool *)dest = true */
  GOPC_CONST,  /* --flag: *(int *)dest = value; with .bad, refused when dest
                  already holds another value than 0 or this one */
  GOPC_STRING, /* --flag V: *(const char **)dest = V; the last one given wins */
  GOPC_INT,    /* --flag N: *(int64_t *)dest = N, an integer in [min, max] */
  GOPC_DOUBLE, /* --flag X: *(double *)dest = X, a number in (min, max] */
  GOPC_ASSIGN, /* --flag NAME=VALUE, repeatable: appended to *(GopcAssigns *)dest,
                  at most max of them */
  GOPC_HOOK,   /* --flag ...: .hook reads the rest */
} GopcKind;

typedef struct GopcOption {
  const char *flag; /* "--op", "-o": compared whole; NULL ends a table */
  GopcKind kind;
  void *dest;
  int64_t min, max; /* GOPC_INT, GOPC_DOUBLE: the range; GOPC_ASSIGN: max only */
  int value;        /* GOPC_CONST */
  /* The usage error for a bad value, a format given the flag and the value
   * as two strings (it may use neither, one or both): "%s %s: not a count
   * from 1". */
  const char *bad;
  const char *full; /* GOPC_ASSIGN: the usage error when full, given the flag */
  bool *seen;       /* if set, made true when the flag is given */
  /* GOPC_HOOK: argv[*i] is the flag; the hook moves *i past what it takes
   * and returns 0 or the exit status of a usage error. */
  int (*hook)(const GopcArgs *a, int argc, char **argv, int *i);
} GopcOption;

struct GopcArgs {
  const char *usage;  /* --help prints it; a usage error ends with it */
  const char *prefix; /* a usage error starts with it: "gopc: " */
  const GopcOption *options; /* ends with a NULL flag */
  /* Positional arguments: stored in args[0..max_args), counted in *nargs
   * (if set); one more is "unexpected argument X". */
  const char **args;
  int max_args, *nargs;
  /* If set, takes each positional argument instead: 0 or a usage error. */
  int (*arg)(const GopcArgs *a, char *arg);
  /* If set, takes a flag the table lacks, with the value after it (its
   * absence is "FLAG needs a value"); if not, such a flag is an unknown
   * option. */
  int (*other)(const GopcArgs *a, const char *flag, char *value);
  /* --help only as the first argument, and no options: every other
   * argument, even -x, is a positional one. */
  bool no_options;
  void *ctx; /* what the hooks fill */
};

/* NAME=VALUE options (--in X=x.npy, --dim F=64) and extents (--F 64). */
typedef struct GopcAssign {
  const char *flag, *name, *value; /* --in X=path: flag "--in", name "X" */
  bool used;
} GopcAssign;

enum { GOPC_MAX_ASSIGN = 64 };

typedef struct GopcAssigns {
  GopcAssign item[GOPC_MAX_ASSIGN];
  int n;
} GopcAssigns;

/* gopc_parse's result when the arguments are good and the command goes on;
 * any other result is the exit status (0 after --help). */
enum { GOPC_GO_ON = -1 };

int gopc_parse(const GopcArgs *a, int argc, char **argv);
/* The width of a row: the product of the extents given (H x C for GAT's
 * attention), as the Python package asks (operator.py); 0 with none. The
 * key under which gopc run looks up, and gopc tune --orders stores, a
 * measured vertex order. */
int64_t gopc_row_width(const GopcAssigns *dims);
/* Prints `PREFIX MESSAGE`, a blank line and the usage on stderr; returns
 * GOPC_EXIT_USAGE. */
int gopc_usage_error(const GopcArgs *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A decimal integer, the whole of `s`; false if not, or out of range. */
bool gopc_parse_i64(const char *s, int64_t *out);

/* ---------------------------------------------------------------------------
 * compile.c: check, emit, pack and passes.
 */

/* Loads FILE (or stdlib:NAME) and picks the operator; *op_name may be set
 * from the stdlib form. NULL after the diagnostics were printed. */
GopModule *gopc_load_module(GopContext *ctx, const char *file, const char **op_name);

int gopc_check(int argc, char **argv);
int gopc_emit(int argc, char **argv);
int gopc_pack(int argc, char **argv);
int gopc_passes(int argc, char **argv);

/* ---------------------------------------------------------------------------
 * grad.c: grad, the derived gradient operators.
 */

int gopc_grad(int argc, char **argv);

/* ---------------------------------------------------------------------------
 * run.c: run and graph.
 */

int gopc_run(int argc, char **argv);
int gopc_graph(int argc, char **argv);

/* ---------------------------------------------------------------------------
 * ops.c: ops, the operator catalogue.
 */

int gopc_ops(int argc, char **argv);

/* ---------------------------------------------------------------------------
 * model.c: model, a GNN model's forward inference.
 */

int gopc_model(int argc, char **argv);

/* ---------------------------------------------------------------------------
 * tune.c: tune, the autotuner and its learned predictor.
 */

int gopc_tune(int argc, char **argv);

#endif
