/* tune/xgb.c: opening libxgboost, and the one checker of its results.
 *
 * The learned predictor of the autotuner (tune/predict.c) trains and runs
 * gradient-boosted trees through XGBoost's C API. The library is optional:
 * it is opened with dlopen on first use, so gopc, the REPL and the static
 * GPU build start (and choose schedules by the database or the cost model)
 * on machines without it. The entry points come from the list in xgb.def;
 * a library that lacks one is refused as a whole, so no call can find a
 * NULL pointer later. GOP_XGBOOST_LIBRARY names another file to open (the
 * tests use it to see the path taken when the library is missing).
 *
 * Every int an entry point returns goes through tune_xgb_check, which names
 * the call and quotes XGBGetLastError.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tune/tune.h"
#include "tune/xgb.def"

static const Loc xgb_loc = {"xgboost", 0, 0};

static struct {
  pthread_mutex_t lock;
  void *lib;          /* non-NULL once the table is filled */
  TuneXgbApi api;
  int major, minor, patch;
} X = {.lock = PTHREAD_MUTEX_INITIALIZER};

const TuneXgbApi *tune_xgb_api(void) { return X.lib ? &X.api : NULL; }

static bool load_symbols(void *lib, const char *libname, Diag *d) {
#define SYM(name, ret, params) {#name, NULL, &X.api.name},
  const RtDlSym syms[] = {TUNE_XGB_FUNCS(SYM)};
#undef SYM
  const char *first_missing;
  int missing = rt_dl_bind(lib, syms, (int)(sizeof syms / sizeof syms[0]), &first_missing);
  if (missing == 0) return true;
  ir_error(d, xgb_loc,
           "%s has no entry point %s (and %d more missing): not libxgboost, or "
           "older than 1.7",
           libname, first_missing, missing - 1);
  return false;
}

int tune_xgb_open(Diag *d) {
  pthread_mutex_lock(&X.lock);
  int rc = 0;
  if (!X.lib) {
    const char *env = getenv("GOP_XGBOOST_LIBRARY");
    const char *names[] = {env && *env ? env : "libxgboost.so.0",
                           env && *env ? NULL : "libxgboost.so"};
    RtDlTried tried;
    void *lib = rt_dl_open(names, 2, &tried);
    const char *why = tried.first; /* the first name's reason */
    const char *name = names[0];
    if (!lib) {
      ir_error(d, xgb_loc,
               "cannot load libxgboost (%s)%s: the learned predictor needs Debian's "
               "libxgboost-dev (tools/setup.sh installs it)",
               why, env && *env ? ", the library GOP_XGBOOST_LIBRARY names" : "");
      rc = -1;
    } else if (!load_symbols(lib, name, d)) {
      rt_dl_close(lib);
      memset(&X.api, 0, sizeof X.api);
      rc = -1;
    } else {
      X.lib = lib;
      X.api.XGBoostVersion(&X.major, &X.minor, &X.patch);
    }
  }
  pthread_mutex_unlock(&X.lock);
  return rc;
}

bool tune_xgb_available(void) {
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  bool ok = tune_xgb_open(&quiet) == 0;
  ir_diag_free(&quiet);
  return ok;
}

void tune_xgb_version(int *major, int *minor, int *patch) {
  *major = X.major;
  *minor = X.minor;
  *patch = X.patch;
}

int tune_xgb_check(Diag *d, const char *call, int result) {
  if (result == 0) return 0;
  const char *why = X.lib ? X.api.XGBGetLastError() : NULL;
  ir_error(d, xgb_loc, "%s failed: %s", call, why && *why ? why : "no reason given");
  return -1;
}
