/* runtime/dl.c: the one loader of optional shared libraries.
 *
 * gop links none of the libraries that only some machines have: the CUDA
 * driver, cuBLAS and XGBoost are opened at run time, so that every tool
 * starts on a machine without them and says plainly what is missing. Each
 * user lists its entry points once, as an X-macro (cuda.def, cublas.def,
 * tune/xgb.def), expands the list into a table of RtDlSym, and calls the
 * two functions here: open the first library of a list of names that
 * loads, then bind every entry point or refuse the library as a whole, so
 * that no call can find a NULL pointer later. The wording of the messages
 * stays with each user, which knows what the library is for.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "runtime.h"

void *rt_dl_open(const char *const *names, int n, RtDlTried *tried) {
  memset(tried, 0, sizeof *tried);
  size_t len = 0;
  for (int i = 0; i < n; i++) {
    if (!names[i]) continue;
    dlerror();
    void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      tried->used = names[i];
      return lib;
    }
    const char *e = dlerror();
    if (!tried->first[0])
      snprintf(tried->first, sizeof tried->first, "%s", e ? e : "unknown reason");
    if (len < sizeof tried->all)
      len += (size_t)snprintf(tried->all + len, sizeof tried->all - len,
                              "\n  %s", e ? e : names[i]);
  }
  return NULL;
}

int rt_dl_bind(void *lib, const RtDlSym *syms, int n, const char **first_missing) {
  int missing = 0;
  *first_missing = NULL;
  for (int i = 0; i < n; i++) {
    void *sym = dlsym(lib, syms[i].name);
    if (!sym && syms[i].older) sym = dlsym(lib, syms[i].older);
    if (!sym && missing++ == 0) *first_missing = syms[i].name;
    /* POSIX guarantees that this conversion works for dlsym */
    memcpy(syms[i].slot, &sym, sizeof sym);
  }
  return missing;
}

void rt_dl_close(void *lib) {
  if (lib) dlclose(lib);
}
