/* tests/fuzz/fuzz_predictor.c: the learned predictor's model file
 * (tune/trees.c). An input whose first byte is even is the whole file
 * (its header, size and checksum); an odd one's rest is a payload, put in
 * a valid envelope (the built-in model's features line, the payload's
 * length and checksum) so that the tree reader itself is fuzzed. A model
 * that is accepted predicts two rows (zeros, and NaN: the missing
 * branches), which must end: every walk goes to later nodes. */
#include <math.h>

#include "fuzz.h"
#include "runtime/runtime.h"
#include "tune/tune.h"

extern const char tune_builtin_model[];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  fuzz_limits();
  return 0;
}

static TunePredictor *wrapped(const uint8_t *data, size_t size, Diag *d) {
  const char *feat = strstr(tune_builtin_model, "features ");
  int flen = (int)strcspn(feat, "\n");
  char head[160];
  int n = snprintf(head, sizeof head, "gop-predictor 2\n%.*s\nbytes %zu %016llx\n\n", flen,
                   feat, size, (unsigned long long)rt_fnv1a64(data, size));
  char *text = malloc((size_t)n + size + 1);
  if (!text) return NULL;
  memcpy(text, head, (size_t)n);
  memcpy(text + n, data, size);
  text[n + size] = 0;
  TunePredictor *p = tune_predictor_parse(text, (size_t)n + size, "m.xgb", d);
  free(text);
  return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  Diag d;
  ir_diag_init(&d, NULL);
  TunePredictor *p;
  if (data[0] & 1) {
    p = wrapped(data + 1, size - 1, &d);
  } else {
    const char *path = fuzz_file("m.xgb", data + 1, size - 1);
    p = tune_predictor_load(path, &d);
    unlink(path);
  }
  if (p) {
    float x[2 * TUNE_NFEATURES], y[2];
    for (int i = 0; i < TUNE_NFEATURES; i++) {
      x[i] = 0;
      x[TUNE_NFEATURES + i] = NAN;
    }
    tune_predictor_predict(p, x, 2, y);
  }
  tune_predictor_free(p);
  ir_diag_free(&d);
  return 0;
}
