/* tests/fuzz/fuzz_graph.c: graph files: Matrix Market, SNAP edge lists,
 * either one gzip'ed (the reader sniffs the gzip magic). A graph that
 * reads is also given its neighbour-group tables, which read its CSR. */
#include "fuzz.h"
#include "graph/graph.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  fuzz_limits();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file("graph", data, size);
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = graph_read(path, &d);
  if (g) {
    Diag q;
    ir_diag_init(&q, NULL);
    graph_groups(g, 2, 0, 0, 0, &q);
    ir_diag_free(&q);
    graph_free(g);
  }
  ir_diag_free(&d);
  unlink(path);
  return 0;
}
