/* tools/gopc/main.c: gopc's entry point: the table of subcommands, and
 * the dispatch from `gopc NAME ARGS...` to the subcommand's function (the
 * overview is in gopc.h). Each subcommand parses its own arguments through
 * options.c.
 */
#include <stdio.h>
#include <string.h>

#include "gopc.h"

static const char *usage_main =
    "usage: gopc COMMAND [ARGS]\n"
    "\n"
    "gop compiles graph operators of graph neural networks.\n"
    "\n"
    "commands:\n"
    "  check FILE.gop...   parse and check operators, print diagnostics\n"
    "  emit FILE ...       print a compilation stage of an operator\n"
    "  grad FILE ...       derive an operator's gradient operators (reverse mode)\n"
    "  run FILE ...        run an operator on a graph (GPU or interpreter)\n"
    "  pack FILE ...       compile an operator to a kernel pack\n"
    "  ops [FILE] [NAME]   list operators (default: the standard library)\n"
    "  graph G             print statistics of a graph file or generator\n"
    "  passes              list the lowering passes (for --dump-after)\n"
    "  model NAME ...      run a GNN model (gcn, gin, gat, sage-*) forward\n"
    "  tune FILE ...       autotune an operator on the GPU; --train, --evaluate\n"
    "                      the learned predictor (tools/gopc/tune.c)\n"
    "\n"
    "FILE may be stdlib:NAME for an operator of the standard library.\n"
    "Run `gopc COMMAND --help` for a command's options.\n";

static const struct {
  const char *name;
  int (*fn)(int argc, char **argv);
} commands[] = {
    {"check", gopc_check},   {"emit", gopc_emit},   {"run", gopc_run},
    {"pack", gopc_pack},     {"ops", gopc_ops},     {"graph", gopc_graph},
    {"passes", gopc_passes}, {"model", gopc_model}, {"tune", gopc_tune},
    {"grad", gopc_grad},
};

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage_main, stderr);
    return GOPC_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    fputs(usage_main, stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("gopc %s\n", GOP_VERSION);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(cmd, commands[i].name) == 0) return commands[i].fn(argc - 2, argv + 2);
  GopcArgs top = {.usage = usage_main, .prefix = "gopc: "};
  return gopc_usage_error(&top, "unknown command '%s'", cmd);
}
