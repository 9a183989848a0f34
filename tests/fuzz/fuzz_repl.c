/* tests/fuzz/fuzz_repl.c: one line typed at the REPL.
 *
 * Each input gets a fresh session on a 3x3 grid with F = 3 and the
 * operator its first byte picks; the rest, up to the first newline, is
 * executed as one line. `save` (which writes files), `tune` (which runs
 * for seconds by design) and `quit` are not fuzzed.
 */
#include "fuzz.h"
#include "tools/repl/repl.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  fuzz_limits();
  return 0;
}

static void start(const char *op) {
  repl = (ReplSession){0};
  repl.ctx = gop_context_new();
  gop_set_diagnostic_stream(repl.ctx, NULL);
  repl.sched = repl_strdup("");
  repl_execute("graph grid:3x3");
  char line[128];
  snprintf(line, sizeof line, "use %s", op);
  repl_execute(line);
  repl_execute("set F 3");
}

static void stop(void) {
  repl_clear_schedule();
  free(repl.sched);
  free(repl.module_path);
  free(repl.graph_spec);
  free(repl.diff_before);
  gop_context_free(repl.ctx);
  repl = (ReplSession){0};
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  static const char *const ops[] = {"copy_u_sum", "u_mul_e_sum", "edge_softmax", "u_dot_v",
                                    "copy_u_mean", "copy_u_max"};
  char *line = fuzz_text(data + 1, size - 1);
  line[strcspn(line, "\n")] = 0;
  const char *w = line + strspn(line, " \t");
  size_t n = strcspn(w, " \t(");
  bool skip = (n == 4 && (!strncmp(w, "save", 4) || !strncmp(w, "tune", 4) ||
                          !strncmp(w, "quit", 4) || !strncmp(w, "exit", 4)));
  if (!skip) {
    start(ops[data[0] % (sizeof ops / sizeof *ops)]);
    repl_execute(line);
    stop();
  }
  free(line);
  return 0;
}
