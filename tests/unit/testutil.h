/* tests/unit/testutil.h: helpers shared by the Check unit tests. */
#ifndef GOP_TESTUTIL_H
#define GOP_TESTUTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"
#include "ir/ir.h"

/* The path-returning helpers use four static buffers in turn: a path stays
 * valid until four more are made. */
/* Path of a file under ../shared/datasets (GOP_DATASETS). Fails the test if
 * the dataset is missing: CI always has them. Returns a static buffer. */
const char *tu_dataset(const char *file);
/* Path of a file under the source tree (GOP_SOURCE_DIR). Static buffer. */
const char *tu_source(const char *relpath);
/* A fresh temporary directory, removed at exit. Static buffer. */
const char *tu_tmpdir(void);
/* The resident set size in bytes (/proc/self/statm; 0 where unreadable). */
long tu_rss(void);
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
/* Assembles `ptx` for `target` (sm_80, ...) with ptxas -v, the file and its
 * log named after `name` in tu_tmpdir() (in $GOP_KEEP_PTX when set, to be
 * looked at); fails the test when ptxas refuses it. Returns ptxas's log
 * (malloc'ed), or NULL after saying so when there is no ptxas and
 * GOP_SKIP_PTXAS=1 allows that (no ptxas fails the test otherwise: CI has
 * the toolkit). */
char *tu_assemble(const char *ptx, const char *target, const char *name);
/* How many times `needle` occurs in `hay` (not overlapping). */
int tu_count(const char *hay, const char *needle);
/* A graph of ../shared/datasets (tu_dataset), read; fails the test when it
 * cannot be. Free it with graph_free. */
Graph *tu_graph(const char *file);
/* The graph of the arcs src[i] -> dst[i] (graph_from_coo); fails the test
 * with the reason when it cannot be built. */
Graph *tu_graph_coo(int64_t nv, int64_t ne, const int64_t *src, const int64_t *dst,
                    const char *name);
/* Every extent of `op` set to F. */
IrExtents tu_extents(const IrOp *op, int64_t F);
/* A copy of `base` scheduled with `sched` (the named schedules of `lib`)
 * and lowered; NULL when either refuses (the reason in d). With `sched`
 * NULL, the copy unscheduled. */
IrOp *tu_lowered(const IrModule *lib, const IrOp *base, const char *sched, Arena *a, Diag *d);
/* Runs `op` on `g` on the f32 interpreter, every extent F: inputs from
 * in[] by tensor id, each output into a fresh zeroed buffer out[id]
 * (malloc'ed), temporaries the interpreter's. interp_run's status. */
int tu_interp(const IrOp *op, const Graph *g, int64_t F, float **in, float **out, Diag *d);
/* Fails the test unless the IR text `text` is refused, by the parser or
 * the verifier, with a message that holds `error`. */
void tu_ir_refused(const char *text, const char *error);
/* The next value of a 64-bit linear congruential generator with state
 * `*s`: test data, the same on every machine. */
uint64_t tu_lcg(uint64_t *s);
/* Whether GOP_TEST_QUICK is set (not "0"): the sanitized CI run sets it, and
 * the tests that interpret whole real graphs then run on a subset of their
 * graphs, and other long ones on less (each says which); the normal build
 * runs them all. */
bool tu_quick(void);
/* Runs the suite with CK_NORMAL output; returns the process exit status. */
int tu_run(Suite *s);

#endif
