/* tests/fuzz/fuzz.h: what the libFuzzer harnesses share.
 *
 * Each harness feeds one reader of gop arbitrary bytes (docs/fuzzing.md).
 * The limits are set low (64 MiB per allocation an input asks for) so that
 * a harness explores inputs rather than waiting on legitimately huge ones,
 * and readers that take a path get the bytes in a file of their own.
 */
#ifndef GOP_FUZZ_H
#define GOP_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Low limits for every harness; called from LLVMFuzzerInitialize. */
static inline void fuzz_limits(void) {
  setenv("GOP_MAX_HOST_BYTES", "67108864", 0);
  setenv("GOP_MAX_SOURCE_BYTES", "1048576", 0);
  /* schedules whose inner loops run 2^16 times over: enough to find the
   * bugs, few enough that the interpreter answers in time */
  setenv("GOP_MAX_LOOP_TRIPS", "65536", 0);
  unsetenv("GOP_TUNE_DB");
}

/* The input as a NUL-terminated string (bytes after a NUL are dropped, as
 * a C caller would see them). The caller frees it. */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) abort();
  memcpy(s, data, size);
  s[size] = 0;
  return s;
}

/* Writes the input to this process's scratch file `name` (under $TMPDIR,
 * else /tmp) and returns its path (static storage). */
static inline const char *fuzz_file(const char *name, const uint8_t *data, size_t size) {
  static char path[512];
  const char *dir = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/gop-fuzz-%d-%s", dir && *dir ? dir : "/tmp", (int)getpid(),
           name);
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  fclose(f);
  return path;
}

#endif
