/* tests/fuzz/fuzz_source.c: the .gop front end.
 *
 * The input is a .gop source: parse, check and lower to IR
 * (gop_compile_string), then for each operator lower it under the default
 * schedule and under one named schedule picked from the input's bytes,
 * with arguments from them too.
 */
#include "fuzz.h"
#include "gop.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  fuzz_limits();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, NULL);
  GopModule *m = gop_compile_string(ctx, "fuzz.gop", text);
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 16777619u;
  for (int i = 0; m && i < gop_module_num_ops(m) && i < 4; i++) {
    GopOp *op = gop_module_op(m, i);
    free(gop_emit_with(op, GOP_STAGE_LOWERED, NULL));
    int n = gop_op_num_schedules(op);
    if (n <= 0) continue;
    const char *sig = gop_op_schedule_signature(op, (int)(h % (uint32_t)n));
    int nparams = strstr(sig, "()") ? 0 : 1;
    for (const char *p = sig; *p; p++) nparams += *p == ',';
    char call[256];
    int len = snprintf(call, sizeof call, "%.*s(", (int)strcspn(sig, "("), sig);
    for (int k = 0; k < nparams && len < 200; k++)
      len += snprintf(call + len, sizeof call - (size_t)len, "%s%u", k ? ", " : "",
                      1u << ((h >> (4 + 3 * k)) & 7));
    snprintf(call + len, sizeof call - (size_t)len, ")");
    GopCompileOptions o = {.schedule = call};
    free(gop_emit_with(op, GOP_STAGE_LOWERED, &o));
  }
  gop_context_free(ctx);
  free(text);
  return 0;
}
