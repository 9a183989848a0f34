/* tests/fuzz/fuzz_schedule.c: the schedule parser and primitives.
 *
 * The first byte picks a standard-library operator; the rest is schedule
 * text (directives and named schedules), applied and lowered as
 * `gopc emit --stage lowered --schedule` does. A schedule that is accepted
 * is then run by the interpreter on a 3x3 grid with F = 3 and checked
 * against the unscheduled operator, as `gopc run --interp --check` does:
 * an accepted schedule must neither crash the interpreter nor change the
 * result (a mismatch aborts: a finding).
 */
#include "fuzz.h"
#include "gop.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  fuzz_limits();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  /* One context serves 64 inputs (parsing the stdlib for each would cost
   * most of the time); then a new one, since its arena grows with every
   * compile. Nothing of one input's schedule stays in it. */
  static GopContext *c;
  static GopModule *m;
  static GopGraph *g;
  static int uses;
  if (!c || ++uses == 64) {
    gop_context_free(c);
    c = gop_context_new();
    gop_set_diagnostic_stream(c, NULL);
    m = gop_stdlib(c);
    g = gop_graph_open(c, "grid:3x3");
    uses = 0;
  }
  gop_clear_diagnostics(c);
  GopOp *op = gop_module_op(m, data[0] % gop_module_num_ops(m));
  char *text = fuzz_text(data + 1, size - 1);
  GopCompileOptions o = {.schedule = text};
  char *lowered = gop_emit_with(op, GOP_STAGE_LOWERED, &o);
  if (lowered) {
    GopRun *r = gop_run_new(c, op, g);
    gop_run_set_device(r, GOP_DEVICE_INTERP);
    gop_run_set_compile(r, &o);
    for (int i = 0; i < 4; i++) {
      static const char *const dims[] = {"F", "H", "D", "K"};
      gop_run_set_extent(r, dims[i], 3);
    }
    int n = gop_run_num_tensors(r);
    float *buf[16] = {0};
    bool ok = n <= 16;
    for (int i = 0; ok && i < n; i++) {
      int64_t shape[8];
      int rank = gop_run_tensor_shape(r, i, shape);
      int64_t numel = 1;
      for (int k = 0; k < rank; k++) numel *= shape[k];
      ok = rank >= 0 && numel <= 4096;
      if (!ok) break;
      buf[i] = calloc((size_t)(numel ? numel : 1), sizeof(float));
      /* positive and nonzero: operators divide by their inputs */
      for (int64_t k = 0; k < numel; k++) buf[i][k] = (float)((k * 7 + i) % 4) * 0.5f + 0.5f;
      ok = gop_run_bind(r, gop_run_tensor_name(r, i), buf[i], numel) == 0;
    }
    double worst;
    /* a schedule that is accepted but changes the result is a finding */
    if (ok && gop_run_exec(r) == 0 && gop_run_check(r, &worst) == 1 &&
        !strstr(gop_diagnostics(c), "nan)")) { /* NaN in the reference too: the data's */
      fprintf(stderr, "schedule '%s' on %s: %s\n", text, gop_op_name(op), gop_diagnostics(c));
      abort();
    }
    for (int i = 0; i < 16; i++) free(buf[i]);
  }
  free(lowered);
  free(text);
  return 0;
}
