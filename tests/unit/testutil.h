/* tests/unit/testutil.h: helpers shared by the Check unit tests. */
#ifndef GOP_TESTUTIL_H
#define GOP_TESTUTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

/* The path-returning helpers use four static buffers in turn: a path stays
 * valid until four more are made. */
/* Path of a file under ../shared/datasets (GOP_DATASETS). Fails the test if
 * the dataset is missing: CI always has them. Returns a static buffer. */
const char *tu_dataset(const char *file);
/* Path of a file under the source tree (GOP_SOURCE_DIR). Static buffer. */
const char *tu_source(const char *relpath);
/* A fresh temporary directory, removed at exit. Static buffer. */
const char *tu_tmpdir(void);
/* Writes `text` to `dir/name`; returns the path (static buffer). */
const char *tu_write(const char *name, const char *text);
/* Whole file, NUL-terminated, malloc'ed; NULL if unreadable. */
char *tu_read_file(const char *path, size_t *len);
/* Runs `ENV gopc ARGS` ($GOP_GOPC, set by ctest) in tu_tmpdir(): ENV is a
 * shell prefix such as "GOP_TUNE_DB=" or "", ARGS a shell word list. Leaves
 * the start of stdout and stderr, NUL-terminated, in `out`; returns the exit
 * status, or -1 when gopc did not exit. */
int tu_gopc(const char *env, const char *args, char *out, size_t size);
/* ptxas from the CUDA toolkit: $GOP_PTXAS, /usr/local/cuda/bin or PATH;
 * NULL when there is none. Static buffer. */
const char *tu_ptxas(void);
/* The next value of a 64-bit linear congruential generator with state
 * `*s`: test data, the same on every machine. */
uint64_t tu_lcg(uint64_t *s);
/* Runs the suite with CK_NORMAL output; returns the process exit status. */
int tu_run(Suite *s);

#endif
