/* tests/unit/testutil.c: locating data and temporary files for unit tests. */
#define _GNU_SOURCE
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A few buffers used in turn, so that two paths can appear in one call. */
static char path_bufs[4][4096];
static int path_next;
#define path_buf (path_bufs[path_next])
static void next_buf(void) { path_next = (path_next + 1) % 4; }
static char tmp_dir[256];

static void remove_tmpdir(void) {
  if (tmp_dir[0]) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_dir);
  }
}

const char *tu_dataset(const char *file) {
  next_buf();
  const char *dir = getenv("GOP_DATASETS");
  ck_assert_msg(dir != NULL, "GOP_DATASETS is not set (run through ctest)");
  snprintf(path_buf, sizeof path_buf, "%s/%s", dir, file);
  ck_assert_msg(access(path_buf, R_OK) == 0, "dataset %s is missing", path_buf);
  return path_buf;
}

const char *tu_source(const char *relpath) {
  next_buf();
  const char *dir = getenv("GOP_SOURCE_DIR");
  ck_assert_msg(dir != NULL, "GOP_SOURCE_DIR is not set (run through ctest)");
  snprintf(path_buf, sizeof path_buf, "%s/%s", dir, relpath);
  return path_buf;
}

const char *tu_tmpdir(void) {
  if (!tmp_dir[0]) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/goptest.XXXXXX");
    ck_assert_msg(mkdtemp(tmp_dir) != NULL, "mkdtemp failed");
    atexit(remove_tmpdir);
  }
  return tmp_dir;
}

const char *tu_write(const char *name, const char *text) {
  next_buf();
  snprintf(path_buf, sizeof path_buf, "%s/%s", tu_tmpdir(), name);
  FILE *f = fopen(path_buf, "wb");
  ck_assert_msg(f != NULL, "cannot write %s", path_buf);
  fputs(text, f);
  fclose(f);
  return path_buf;
}

char *tu_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  size_t got;
  while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (cap - n < 2) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  buf[n] = 0;
  if (len) *len = n;
  return buf;
}

int tu_run(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}

int tu_gopc(const char *env, const char *args, char *out, size_t size) {
  const char *bin = getenv("GOP_GOPC");
  ck_assert_msg(bin != NULL, "GOP_GOPC is not set (run through ctest)");
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "cd '%s' && %s '%s' %s 2>&1", tu_tmpdir(), env, bin, args);
  FILE *p = popen(cmd, "r");
  ck_assert(p != NULL);
  size_t n = fread(out, 1, size - 1, p);
  out[n] = 0;
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char *tu_ptxas(void) {
  static char found[1024];
  const char *env = getenv("GOP_PTXAS");
  if (env && *env) return access(env, X_OK) == 0 ? env : NULL;
  if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0)
    return "/usr/local/cuda/bin/ptxas";
  const char *path = getenv("PATH");
  if (!path) return NULL;
  char *copy = strdup(path);
  const char *result = NULL;
  for (char *dir = strtok(copy, ":"); dir; dir = strtok(NULL, ":")) {
    snprintf(found, sizeof found, "%s/ptxas", dir);
    if (access(found, X_OK) == 0) {
      result = found;
      break;
    }
  }
  free(copy);
  return result;
}

uint64_t tu_lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 11;
}
