/* tests/fuzz/fuzz_tunedb.c: the tuning database's open and read path: a
 * file of arbitrary bytes where a SQLite tuning database is expected is
 * opened (inspected, migrated), listed and looked up, its measured vertex
 * orders too. */
#include "fuzz.h"
#include "tune/tune.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  fuzz_limits();
  return 0;
}

static void count(void *ctx, const TuneKey *k, const TuneRecord *r) {
  (void)k;
  (void)r;
  ++*(int *)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file("t.db", data, size);
  char side[600];
  Diag d;
  ir_diag_init(&d, NULL);
  TuneDb *db = tune_db_open(path, &d);
  if (db) {
    int n = 0;
    tune_db_list(db, count, &n, &d);
    TuneKey k = {.dtype = "f32", .gpu = "NVIDIA H100 80GB HBM3", .compiler = "0.1.0"};
    TuneRecord rec;
    tune_db_get_best(db, &k, &rec, &d);
    TuneOrder orders[2];
    tune_db_orders(db, &k, orders, 2, &d);
    tune_db_close(db);
  }
  ir_diag_free(&d);
  unlink(path);
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-journal", path);
  unlink(side);
  return 0;
}
