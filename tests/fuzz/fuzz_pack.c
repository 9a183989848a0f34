/* tests/fuzz/fuzz_pack.c: kernel packs, as `gopc run --pack` reads them:
 * the pack's lines and sections, then the operator IR it carries, checked
 * against its kernels (gop_run_from_pack). No GPU is touched. */
#include "fuzz.h"
#include "gop.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  fuzz_limits();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file("k.pack", data, size);
  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, NULL);
  GopGraph *g = gop_graph_open(ctx, "grid:2x2");
  GopRun *r = g ? gop_run_from_pack(ctx, path, g) : NULL;
  (void)r;
  gop_context_free(ctx);
  unlink(path);
  return 0;
}
