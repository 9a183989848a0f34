/* graph/par.c: running the host graph build on all cores.
 *
 * Reading, generating and indexing a graph of tens of millions of edges is
 * memory-bound loops over arrays, which split into parts that threads take.
 * Every parallel loop of graph/ goes through graph_parallel, and every one
 * is written so that its result does not depend on how many threads ran
 * it: either the parts are fixed by the data (a generator's chunks of
 * samples, a sum's chunks of edges) and only the number of workers varies,
 * or each part writes a disjoint, precomputed range of the output (the
 * counting sorts), which is the serial result whatever the split.
 * tests/unit/test_par.c builds with 1 and several threads and compares.
 *
 * The thread count is GOP_THREADS when set (1 to GRAPH_MAX_THREADS), else
 * what graph_set_threads set, else the cores online (at most
 * GRAPH_MAX_THREADS). Threads are started per loop and joined before it
 * returns: a loop costs tens of microseconds of thread starts, nothing
 * against the milliseconds a part takes (parts are at least
 * GRAPH_PAR_MIN items; smaller work runs inline). A thread that cannot be
 * started leaves its parts to the caller's thread, so a loop never fails.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "graph/graph.h"

static int threads_set; /* graph_set_threads; 0: automatic */

void graph_set_threads(int n) {
  threads_set = n < 0 ? 0 : n > GRAPH_MAX_THREADS ? GRAPH_MAX_THREADS : n;
}

int graph_threads(void) {
  const char *env = getenv("GOP_THREADS");
  if (env && *env) {
    char *end;
    long n = strtol(env, &end, 10);
    if (*end == 0 && n >= 1) return n > GRAPH_MAX_THREADS ? GRAPH_MAX_THREADS : (int)n;
  }
  if (threads_set > 0) return threads_set;
  /* asked once: sysconf reads /sys/devices/system/cpu/online at every call
   * (an open, a read and a close: ~10 us), and a graph build asks a few
   * dozen times, which made most of a mini-batch's build of 9K edges */
  static _Atomic int online;
  int cpus = atomic_load_explicit(&online, memory_order_relaxed);
  if (cpus == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpus = n < 1 ? 1 : n > GRAPH_MAX_THREADS ? GRAPH_MAX_THREADS : (int)n;
    atomic_store_explicit(&online, cpus, memory_order_relaxed);
  }
  return cpus;
}

int graph_par_parts(int64_t items, int64_t min_items) {
  int t = graph_threads();
  if (min_items < 1) min_items = 1;
  int64_t most = items / min_items;
  return most < 1 ? 1 : most < t ? (int)most : t;
}

typedef struct Worker {
  GraphParFn fn;
  void *ctx;
  int first, step, nparts;
} Worker;

static void *work(void *arg) {
  const Worker *w = arg;
  for (int p = w->first; p < w->nparts; p += w->step) w->fn(w->ctx, p, w->nparts);
  return NULL;
}

void graph_parallel(int nparts, GraphParFn fn, void *ctx) {
  if (nparts <= 0) return;
  int nw = graph_threads();
  if (nw > nparts) nw = nparts;
  if (nw <= 1) {
    for (int p = 0; p < nparts; p++) fn(ctx, p, nparts);
    return;
  }
  Worker w[GRAPH_MAX_THREADS];
  pthread_t th[GRAPH_MAX_THREADS];
  bool started[GRAPH_MAX_THREADS] = {false};
  for (int i = 0; i < nw; i++) {
    w[i] = (Worker){fn, ctx, i, nw, nparts};
    if (i > 0) started[i] = pthread_create(&th[i], NULL, work, &w[i]) == 0;
  }
  work(&w[0]);
  for (int i = 1; i < nw; i++) {
    if (started[i]) pthread_join(th[i], NULL);
    else work(&w[i]); /* no thread: its parts run here */
  }
}
