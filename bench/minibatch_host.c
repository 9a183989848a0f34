/* bench/minibatch_host.c: the host side of a mini-batch GraphSAGE step
 * through the C API, on whatever CUDA driver GOP_CUDA_LIBRARY names (the
 * stand-in driver of the tests, tests/unit/fake_cuda.c, on a machine
 * without a GPU; a real one on a GPU machine, where the times are host
 * times, kernels queued and not waited for).
 *
 *   minibatch_host [STEPS [EDGES [F1 F2]]]
 *
 * Each step is what examples/minibatch/sage_neighborloader.py asks of
 * libgop for one batch of a two-layer SAGEConv model (mean aggregation,
 * each layer's linear map first): a new graph from the batch's arcs
 * (gop_graph_from_arcs), copy_u_mean at F2 and F1 forward and its gradient
 * copy_u_mean_grad_X at F2 and F1 backward, each a new run on the new
 * graph (gop_run_new, extents, gop_run_launch_ptrs), then the runs and the
 * graph freed. It prints the median host CPU time of each stage and, on the
 * stand-in driver, the driver calls of a step by kind (its trace letters:
 * a alloc, f free, h/d/c copies, s/m memsets, l module loads, k launches,
 * w waits) and in all (FAKE_CUDA_NO_FILL=1 spares the stand-in the fills it
 * would do at once, which a real driver only queues). Batches are random, shaped like a NeighborLoader
 * batch of 1024 seeds and fanout 10,10: edges grouped by destination, about
 * as many vertices as edges. Times are the process's CPU time
 * (MINIBATCH_CLOCK=cpu, the default), or wall time with MINIBATCH_CLOCK=wall. Not a test: no verdict. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <gop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { NSTAGE = 8, NB = 8 };
static const char *stage_name[NSTAGE] = {
    "graph build (gop_graph_from_arcs)", "runs made (gop_run_new + extent)",
    "first launch: copy_u_mean F2",      "first launch: copy_u_mean F1",
    "first launch: grad F2",             "first launch: grad F1",
    "runs and graph freed",              "a second launch of each run"};

static clockid_t clock_id = CLOCK_PROCESS_CPUTIME_ID;

static double now(void) {
  struct timespec t;
  /* CPU time by default: steady on a loaded machine; MINIBATCH_CLOCK=wall
   * for the time a caller waits, driver waits included (on a GPU) */
  clock_gettime(clock_id, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static unsigned long long rng = 88172645463325252ull;
static int64_t rnd(int64_t n) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (int64_t)(rng % (unsigned long long)n);
}

typedef struct Batch {
  int64_t nv, ne, *src, *dst;
} Batch;

/* ~ne edges: seeds 0..S-1 take up to 10 in-neighbours each among new
 * vertices, which take up to 10 each in turn (NeighborLoader's relabelling:
 * seeds first), edges grouped by destination. */
static Batch make_batch(int64_t ne_want) {
  Batch b = {0};
  b.src = malloc(sizeof(int64_t) * (size_t)ne_want * 2);
  b.dst = malloc(sizeof(int64_t) * (size_t)ne_want * 2);
  int64_t seeds = ne_want / 9 > 1 ? ne_want / 9 : 1, nv = seeds, ne = 0;
  int64_t lo = 0, hi = seeds;
  for (int hop = 0; hop < 2 && ne < ne_want; hop++) {
    for (int64_t v = lo; v < hi && ne < ne_want; v++) {
      int k = 1 + (int)rnd(10);
      for (int j = 0; j < k && ne < ne_want; j++) {
        /* a new vertex four times in five, else one already seen */
        int64_t u = rnd(5) ? nv++ : rnd(nv);
        b.src[ne] = u;
        b.dst[ne] = v;
        ne++;
      }
    }
    lo = hi;
    hi = nv;
  }
  b.nv = nv;
  b.ne = ne;
  return b;
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 200;
  const char *clk = getenv("MINIBATCH_CLOCK");
  if (clk && strcmp(clk, "wall") == 0) {
    clock_id = CLOCK_MONOTONIC;
  } else if (clk && *clk && strcmp(clk, "cpu") != 0) {
    fprintf(stderr, "minibatch_host: MINIBATCH_CLOCK must be wall or cpu, got '%s'\n", clk);
    return 2;
  }
  int64_t edges = argc > 2 ? atoll(argv[2]) : 9000;
  int F[2] = {argc > 4 ? atoi(argv[3]) : 64, argc > 4 ? atoi(argv[4]) : 16};
  const char *drv = getenv("GOP_CUDA_LIBRARY");
  void *fake = drv ? dlopen(drv, RTLD_NOW) : NULL;
  const char *(*trace)(void) = fake ? (const char *(*)(void))dlsym(fake, "fake_cuda_trace") : NULL;
  long (*calls)(void) = fake ? (long (*)(void))dlsym(fake, "fake_cuda_calls") : NULL;
  void (*reset)(void) = fake ? (void (*)(void))dlsym(fake, "fake_cuda_reset_log") : NULL;
  int (*mem_alloc)(uint64_t *, size_t) =
      fake ? (int (*)(uint64_t *, size_t))dlsym(fake, "cuMemAlloc_v2") : NULL;
  if (!mem_alloc) {
    fprintf(stderr, "minibatch_host: GOP_CUDA_LIBRARY must name a driver (the stand-in: "
                    "build-*/tests/libgop_fake_cuda.so)\n");
    return 2;
  }
  char why[256];
  if (gop_device_status(why, sizeof why) != 0) {
    fprintf(stderr, "minibatch_host: no GPU: %s\n", why);
    return 2;
  }
  GopContext *ctx = gop_context_new();
  GopOp *fwd = gop_module_find_op(gop_stdlib(ctx), "copy_u_mean");
  GopModule *gm = gop_grad(fwd, "X");
  GopOp *bwd = gm ? gop_module_op(gm, 0) : NULL;
  if (!fwd || !bwd) {
    fprintf(stderr, "%s", gop_diagnostics(ctx));
    return 1;
  }
  Batch b[NB];
  int64_t nvmax = 0;
  for (int i = 0; i < NB; i++) {
    b[i] = make_batch(edges + rnd(edges / 4 + 1) - edges / 8);
    if (b[i].nv > nvmax) nvmax = b[i].nv;
  }
  int fmax = F[0] > F[1] ? F[0] : F[1];
  uint64_t buf[2];
  for (int i = 0; i < 2; i++)
    if (mem_alloc(&buf[i], (size_t)nvmax * (size_t)fmax * 4) != 0) return 1;
  double *t[NSTAGE];
  for (int s = 0; s < NSTAGE; s++) t[s] = calloc((size_t)steps, sizeof(double));
  long step_calls = 0, again_calls = 0;
  char counts[128] = {0};
  int counted = 0;
  const GopOp *ops[4] = {fwd, fwd, bwd, bwd};
  int widths[4] = {F[1], F[0], F[1], F[0]};
  for (int step = -2; step < steps; step++) { /* two warm-up steps */
    const Batch *B = &b[(step + 2) % NB];
    if (reset) reset();
    long c0 = calls ? calls() : 0;
    double t0 = now();
    GopGraph *g = gop_graph_from_arcs(ctx, B->nv, B->ne, B->src, B->dst, "batch");
    double t1 = now();
    GopRun *r[4];
    for (int k = 0; k < 4; k++) {
      r[k] = gop_run_new(ctx, ops[k], g);
      if (!r[k]) break;
      gop_run_set_device(r[k], GOP_DEVICE_GPU);
      gop_run_set_timing(r[k], 0, 0);
      gop_run_set_extent(r[k], "F", widths[k]);
    }
    double t2 = now(), tl[4];
    GopDevicePtr ptrs[2] = {buf[0], buf[1]};
    for (int k = 0; k < 4; k++) {
      double a = now();
      if (!r[k] || gop_run_launch_ptrs(r[k], ptrs, gop_run_num_tensors(r[k]), NULL) != 0) {
        fprintf(stderr, "step %d, call %d:\n%s", step, k, gop_diagnostics(ctx));
        return 1;
      }
      tl[k] = now() - a;
    }
    long c1 = calls ? calls() : 0;
    size_t n1 = trace ? strlen(trace()) : 0;
    double t3 = now();
    for (int k = 0; k < 4; k++) gop_run_launch_ptrs(r[k], ptrs, 2, NULL);
    double t4 = now();
    long c2 = calls ? calls() : 0;
    size_t n2 = trace ? strlen(trace()) : 0;
    for (int k = 0; k < 4; k++) gop_run_free(r[k]);
    gop_graph_free(ctx, g);
    double t5 = now();
    long c3 = calls ? calls() : 0;
    if (step < 0) continue;
    t[0][step] = t1 - t0;
    t[1][step] = t2 - t1;
    for (int k = 0; k < 4; k++) t[2 + k][step] = tl[k];
    t[6][step] = t5 - t4;
    t[7][step] = t4 - t3;
    if (!counted && trace) { /* one step's driver calls, the second launches left out */
      const char *tr = trace();
      size_t n3 = strlen(tr);
      for (size_t i = 0; i < n3; i++)
        if (i < n1 || i >= n2) counts[(unsigned char)tr[i] & 127]++;
      step_calls = (c1 - c0) + (c3 - c2);
      again_calls = c2 - c1;
      counted = 1;
      if (getenv("MINIBATCH_TRACE")) printf("trace of a step: %s\n", tr);
    }
  }
  printf("minibatch_host: %d steps, batches of %lld edges (+-12%%), F %d and %d, %s, %s time\n",
         steps, (long long)edges, F[0], F[1], drv, clock_id == CLOCK_MONOTONIC ? "wall" : "CPU");
  double total = 0;
  for (int s = 0; s < NSTAGE; s++) {
    qsort(t[s], (size_t)steps, sizeof(double), cmp);
    double med = t[s][steps / 2] * 1e6;
    if (s < 7) total += med;
    printf("  %-40s %9.1f us\n", stage_name[s], med);
  }
  printf("  %-40s %9.1f us (medians summed, second launches left out)\n", "a step", total);
  if (counted) {
    printf("  driver calls in a step: %ld (a second launch of the four runs: %ld); by kind:",
           step_calls, again_calls);
    const char *kinds = "afhdcsmlkw";
    for (const char *k = kinds; *k; k++) printf(" %c %d", *k, counts[(unsigned char)*k]);
    printf("\n");
  }
  gop_context_free(ctx);
  return 0;
}
