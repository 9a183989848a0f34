/* tests/fuzz/fuzz_genspec.c: generator specs (rmat:SCALE:EF[:SEED],
 * powerlaw:N:D:G[:SEED], community:N:D:K:MIX[:SEED], ring:N:D,
 * grid:WxH) and whatever else graph_open takes for one. Sizes are bounded
 * by GOP_MAX_HOST_BYTES (64 MiB here). */
#include "fuzz.h"
#include "graph/graph.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  fuzz_limits();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 256) return 0;
  char *spec = fuzz_text(data, size);
  Diag d;
  ir_diag_init(&d, NULL);
  /* only generator specs: anything else would be read as a file path */
  if (graph_is_generator(spec) || size < 5) {
    Graph *g = graph_generate(spec, &d);
    graph_free(g);
  }
  ir_diag_free(&d);
  free(spec);
  return 0;
}
