/* tests/fuzz/fuzz_npy.c: .npy arrays: the header dict and the data's
 * size; an array that reads is written back and read again. */
#include "fuzz.h"
#include "graph/graph.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  fuzz_limits();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file("a.npy", data, size);
  char again[600];
  snprintf(again, sizeof again, "%s.out.npy", path);
  Diag d;
  ir_diag_init(&d, NULL);
  NpyArray a;
  if (npy_read(path, &a, &d) == 0) {
    if (npy_write(again, &a, &d) != 0) abort(); /* what was read must write */
    NpyArray b;
    if (npy_read(again, &b, &d) != 0 || b.ndim != a.ndim || npy_numel(&b) != npy_numel(&a))
      abort();
    npy_free(&b);
    npy_free(&a);
    unlink(again);
  }
  ir_diag_free(&d);
  unlink(path);
  return 0;
}
