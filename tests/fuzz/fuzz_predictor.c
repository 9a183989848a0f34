/* tests/fuzz/fuzz_predictor.c: the learned predictor's model file (its
 * header, size and checksum; a model that passes them is handed to
 * XGBoost, when libxgboost is installed). */
#include "fuzz.h"
#include "tune/tune.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  fuzz_limits();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file("m.xgb", data, size);
  Diag d;
  ir_diag_init(&d, NULL);
  TunePredictor *p = tune_predictor_load(path, &d);
  tune_predictor_free(p);
  ir_diag_free(&d);
  unlink(path);
  return 0;
}
