/* tests/gpu/index64.c: aggregation on a ring graph past 2^31 edges, checked
 * exactly against its closed form (issue 19, docs/index64.md); run by
 * tests/gpu/index64.sh on the GPU machine, from kernel packs made where
 * LLVM is, so that it needs no LLVM.
 *
 *   index64 [--interp] ring:N:D PACK:F [PACK:F ...]
 *
 * --interp runs the packs' operators on the reference interpreter instead
 * (a dry run of this check on a small ring, on a machine with no GPU: CI's
 * test_index64_ring).
 *
 * Opens the ring once (graph/gen.c: u -> u+1 .. u+D mod N, edge id
 * u*D + j-1 for u -> u+j) and runs each pack on it with extent F. The
 * packs are copy_u_sum or u_mul_e_sum (inputs X [N, F], W [|E|], output
 * Y [N, F]). Inputs are small integers, so every sum is exact in f32 in any
 * order, and the kernel's output must equal the closed form exactly:
 *
 *   X[u, f] = h(u * F + f) mod 1024,   W[e] = h(e) mod 8 (h: a 64-bit mix)
 *   Y[v, f] = sum over j = 1..D of X[(v - j) mod N, f] * W[((v - j) mod N) * D + j - 1]
 *
 * A kernel that truncated an edge id, a CSR offset or an address to 32 bits
 * reads another W or X (the hash makes a coincidence unlikely) or faults.
 * Prints, per pack, the time, the bandwidth, and the first mismatches;
 * "N of M packs exact"; exits 1 if one was not, 3 or 4 when there is no
 * driver or GPU.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gop.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static float x_of(int64_t i) { return (float)(mix((uint64_t)i) & 1023); }
static float w_of(int64_t e) { return (float)(mix((uint64_t)e ^ 0x5555) & 7); }

/* The work of one thread: fill X or W, or check Y over rows [from, to). */
typedef struct Part {
  int what; /* 0: fill X, 1: fill W, 2: check Y */
  int64_t from, to;
  int64_t N, D, F;
  float *x, *w, *y;
  int64_t bad;          /* mismatches found */
  int64_t first_v[4], first_f[4];
  double first_got[4], first_want[4];
} Part;

static void *work(void *arg) {
  Part *p = arg;
  if (p->what == 0) {
    for (int64_t i = p->from; i < p->to; i++) p->x[i] = x_of(i);
  } else if (p->what == 1) {
    for (int64_t e = p->from; e < p->to; e++) p->w[e] = w_of(e);
  } else {
    for (int64_t v = p->from; v < p->to; v++)
      for (int64_t f = 0; f < p->F; f++) {
        double want = 0;
        for (int64_t j = 1; j <= p->D; j++) {
          int64_t u = v - j >= 0 ? v - j : v - j + p->N;
          double t = p->x[u * p->F + f];
          if (p->w) t *= p->w[u * p->D + j - 1];
          want += t;
        }
        double got = p->y[v * p->F + f];
        if (got != want) {
          if (p->bad < 4) {
            p->first_v[p->bad] = v;
            p->first_f[p->bad] = f;
            p->first_got[p->bad] = got;
            p->first_want[p->bad] = want;
          }
          p->bad++;
        }
      }
  }
  return NULL;
}

/* Runs `what` over [0, n) on all cores; returns the mismatches (what 2). */
static int64_t parallel(int what, int64_t n, Part base, bool report) {
  enum { MAX = 64 };
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int nt = cpus < 1 ? 1 : cpus > MAX ? MAX : (int)cpus;
  Part parts[MAX];
  pthread_t th[MAX];
  bool started[MAX] = {false};
  for (int t = 0; t < nt; t++) {
    parts[t] = base;
    parts[t].what = what;
    parts[t].from = n * t / nt;
    parts[t].to = n * (t + 1) / nt;
    parts[t].bad = 0;
    started[t] = pthread_create(&th[t], NULL, work, &parts[t]) == 0;
    if (!started[t]) work(&parts[t]);
  }
  int64_t bad = 0;
  int shown = 0;
  for (int t = 0; t < nt; t++) {
    if (started[t]) pthread_join(th[t], NULL);
    for (int k = 0; report && k < parts[t].bad && k < 4 && shown < 4; k++, shown++)
      printf("    Y[%" PRId64 ", %" PRId64 "] = %.1f, the closed form gives %.1f\n",
             parts[t].first_v[k], parts[t].first_f[k], parts[t].first_got[k],
             parts[t].first_want[k]);
    bad += parts[t].bad;
  }
  return bad;
}

int main(int argc, char **argv) {
  bool interp = argc > 1 && strcmp(argv[1], "--interp") == 0;
  if (interp) argc--, argv++;
  if (argc < 3 || strncmp(argv[1], "ring:", 5) != 0) {
    fprintf(stderr, "usage: index64 [--interp] ring:N:D PACK:F [PACK:F ...]\n");
    return 2;
  }
  long long N, D;
  if (sscanf(argv[1], "ring:%lld:%lld", &N, &D) != 2 || N < 2 || D < 1 || D >= N) {
    fprintf(stderr, "index64: bad ring spec %s\n", argv[1]);
    return 2;
  }
  char what[256];
  int gpu = interp ? 0 : gop_device_status(what, sizeof what);
  if (gpu != 0) {
    printf("no GPU: %s\n", what);
    return gpu;
  }
  printf("device: %s\n", interp ? "the reference interpreter" : what);
  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, stdout);
  double t0 = now();
  GopGraph *g = gop_graph_open(ctx, argv[1]);
  if (!g) return 1;
  GopGraphInfo info;
  gop_graph_info(g, &info);
  printf("graph %s: |V| %" PRId64 ", |E| %" PRId64 " (2^31 = 2147483648), generated in %.1f s\n",
         argv[1], info.num_vertices, info.num_edges, now() - t0);
  fflush(stdout);
  int64_t ne = info.num_edges;
  float *w = NULL; /* made once, for the first pack that takes W */
  int exact = 0, total = 0;
  for (int a = 2; a < argc; a++) {
    char path[1024];
    long long F;
    const char *colon = strrchr(argv[a], ':');
    if (!colon || sscanf(colon + 1, "%lld", &F) != 1 || F < 1 ||
        (size_t)(colon - argv[a]) >= sizeof path) {
      fprintf(stderr, "index64: %s: expected PACK:F\n", argv[a]);
      return 2;
    }
    memcpy(path, argv[a], (size_t)(colon - argv[a]));
    path[colon - argv[a]] = 0;
    total++;
    printf("== %s, F = %lld\n", path, F);
    fflush(stdout);
    GopRun *r = gop_run_from_pack(ctx, path, g);
    if (!r || gop_run_set_extent(r, "F", F) != 0) {
      printf("FAIL %s: could not make the run\n", path);
      continue;
    }
    gop_run_set_timing(r, 1, 3);
    gop_run_set_device(r, interp ? GOP_DEVICE_INTERP : GOP_DEVICE_GPU);
    size_t nx = (size_t)N * (size_t)F;
    float *x = malloc(sizeof(float) * nx), *y = malloc(sizeof(float) * nx);
    bool has_w = false;
    for (int i = 0; i < gop_run_num_tensors(r); i++)
      has_w |= strcmp(gop_run_tensor_name(r, i), "W") == 0;
    if (has_w && !w && (w = malloc(sizeof(float) * (size_t)ne)))
      parallel(1, ne, (Part){.w = w}, false);
    if (!x || !y || (has_w && !w)) {
      printf("FAIL %s: out of host memory\n", path);
      free(x), free(y);
      continue;
    }
    parallel(0, (int64_t)nx, (Part){.x = x}, false);
    if (gop_run_bind(r, "X", x, (int64_t)nx) != 0 || gop_run_bind(r, "Y", y, (int64_t)nx) != 0 ||
        (has_w && gop_run_bind(r, "W", w, ne) != 0)) {
      printf("FAIL %s: binding (the pack should be copy_u_sum or u_mul_e_sum)\n", path);
      free(x), free(y);
      continue;
    }
    double t1 = now();
    if (gop_run_exec(r) != 0) {
      printf("FAIL %s: the run failed\n", path);
      free(x), free(y);
      continue;
    }
    const GopRunStats *st = gop_run_stats(r);
    if (st->on_gpu) {
      printf("  ran in %.1f s (upload and checked run included): kernel median %.3f ms, "
             "%.0f GB/s over %.1f GB\n", now() - t1, st->median_ms, st->gbps,
             (double)st->fewest_bytes / 1e9);
      gop_run_print_memory(r, stdout);
    } else {
      printf("  ran on %s in %.1f s\n", st->device, now() - t1);
    }
    double t2 = now();
    int64_t bad = parallel(2, N, (Part){.N = N, .D = D, .F = F, .x = x,
                                        .w = has_w ? w : NULL, .y = y}, true);
    if (bad == 0) {
      exact++;
      printf("PASS %s F=%lld: all %zu outputs equal the closed form (checked in %.1f s)\n",
             path, F, nx, now() - t2);
    } else {
      printf("FAIL %s F=%lld: %" PRId64 " of %zu outputs differ from the closed form\n", path,
             F, bad, nx);
    }
    fflush(stdout);
    free(x);
    free(y);
  }
  free(w);
  printf("%d of %d packs exact on %s (%.0f s in all)\n", exact, total, argv[1], now() - t0);
  gop_context_free(ctx);
  return exact == total ? 0 : 1;
}
