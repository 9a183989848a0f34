// bench/chunk_probe.cu: at small F, is a sum faster when a warp's work is
// a fixed run of consecutive CSR edges (spanning destinations) instead of
// one destination's in-edges? An experiment, not part of gop: it decides
// whether edge chunks are worth a scheduling primitive (issue 37: the
// sums against cuSPARSE; gop is furthest from its ceiling at F = 16 and
// 32, bench/results/2026-12-01-H200-gather-ceiling).
//
//   chunk_probe [--F 16,32,64] [--reps 20] GRAPH.mtx.gz ...
//
// Y[v, :] = sum over in-edges (u -> v) of X[u, :] (copy_u_sum, f32). A row
// of F floats is read by a team of F / 4 lanes (a float4 each), so a warp
// reads 128 / F rows a load. bench/gather_probe.cu measured such loads at
// 2.0 TB/s from L2 at F = 16 when a warp gathers 8 rows and quits, 8.7 TB/s
// when it gathers 64: a warp's fixed cost (its ids, its chain of loads,
// its store) wants many rows to pay for it. The variants:
//   rows      a team per destination, 128 / F destinations a warp side by
//             side, U rows in flight a team, the sum stored once (gop's
//             spmm_rows(R, U) at R = 128 / F);
//   chunkK    a warp per K consecutive CSR edges, its ids and destinations
//             loaded at once (coalesced, into shared memory), each team a
//             contiguous K / (128 / F) of them, U rows in flight; a team's
//             sum is flushed when the destination changes and at its end:
//             stored when the team holds all of that destination's
//             in-edges, else added atomically (float4 atomicAdd) into Y
//             zeroed first (rows split between teams only);
//   achunkK   chunkK with every flush atomic (no look-up of the row's
//             extent, one dependent load less); achunkKu8: 8 rows in flight;
//   zero      the zeroing of Y alone (not a sum: its check is skipped);
//   stream_X  not a sum either: a warp per 64 ids of a stream, the sum of
//             their rows written per 64 (checked against the host's), the
//             stream being the CSR's sources (csr), the same in a random
//             order (shuffled: the hubs as often, no order), or ids uniform
//             over the vertices (uniform, as bench/gather_probe.cu's);
//   schunk64  achunk64 with every flush a plain store, and echunk64 with
//   echunk64  one flush at the team's end: wrong sums by design (not
//             checked), bracketing what the flushes' atomics cost.
// Timing: launches back to back (zeroing included), the median of --reps;
// where X and Y fit in L2 twice over the runs rotate among copies of them.
// Every variant's Y is checked against a host sum first (relative L2 under
// 1e-5, else the line says WRONG). One CSV line per graph, F and variant,
// with the fewest bytes (X and Y once, the CSR) over the time as a
// fraction of the copy rate measured here.
#include <cuda_runtime.h>

#include "probe_graph.h"

#include <cmath>
#include <cstdint>

enum { U = 4 };

// One team of T lanes per destination, 32 / T destinations a warp.
template <int T>
__global__ void __launch_bounds__(256)
    rows_sum(int n, const int *__restrict__ ptr, const int *__restrict__ src,
             const float4 *__restrict__ X, float4 *Y) {
  long t = (blockIdx.x * (long)blockDim.x + threadIdx.x) / T;
  int f4 = threadIdx.x % T;
  if (t >= n) return;
  int b = ptr[t], e = ptr[t + 1];
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  int k = b;
  for (; k + U <= e; k += U) {
    float4 x[U];
#pragma unroll
    for (int u = 0; u < U; ++u) x[u] = __ldg(X + (size_t)src[k + u] * T + f4);
#pragma unroll
    for (int u = 0; u < U; ++u) acc.x += x[u].x, acc.y += x[u].y, acc.z += x[u].z, acc.w += x[u].w;
  }
  for (; k < e; ++k) {
    float4 x = __ldg(X + (size_t)src[k] * T + f4);
    acc.x += x.x, acc.y += x.y, acc.z += x.z, acc.w += x.w;
  }
  Y[t * T + f4] = acc;
}

// A warp per K consecutive CSR edges; teams of T lanes, each a contiguous
// K / (32 / T) of them. The warp's ids and destinations are staged in
// shared memory (coalesced loads, then each team reads its own).
template <int T, int K, int MODE, int UU>
__global__ void __launch_bounds__(256)
    chunk_sum(long ne, const int *__restrict__ ptr, const int *__restrict__ src,
              const int *__restrict__ dst, const float4 *__restrict__ X, float4 *Y) {
  constexpr int R = 32 / T, L = K / R;
  __shared__ int ss[8][K], sd[8][K];
  int wl = threadIdx.x >> 5, lane = threadIdx.x & 31, r = lane / T, f4 = lane % T;
  long base = ((blockIdx.x * (long)blockDim.x + threadIdx.x) >> 5) * K;
  if (base >= ne) return;
#pragma unroll
  for (int p = 0; p < K / 32; ++p) {
    long e = base + p * 32 + lane;
    ss[wl][p * 32 + lane] = e < ne ? __ldg(src + e) : 0;
    sd[wl][p * 32 + lane] = e < ne ? __ldg(dst + e) : -1;
  }
  __syncwarp();
  long lo = base + (long)r * L; // the team's edges: lo .. lo + L
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  int cur = -1;
  auto flush = [&](int d) {
    // whole: the team holds all of d's in-edges
    if (MODE == 2 || (MODE == 0 && __ldg(ptr + d) >= lo && __ldg(ptr + d + 1) <= lo + L))
      Y[(size_t)d * T + f4] = acc;
    else
      atomicAdd(Y + (size_t)d * T + f4, acc);
    acc = make_float4(0.f, 0.f, 0.f, 0.f);
  };
  for (int j = 0; j < L; j += UU) {
    float4 x[UU];
    int d[UU];
#pragma unroll
    for (int u = 0; u < UU; ++u) {
      int k = r * L + j + u;
      d[u] = sd[wl][k];
      x[u] = d[u] >= 0 ? __ldg(X + (size_t)ss[wl][k] * T + f4) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < UU; ++u) {
      if (d[u] < 0) continue;
      if (d[u] != cur) {
        if (cur >= 0 && MODE != 3) flush(cur);
        if (MODE != 3 || cur < 0) cur = d[u];
      }
      acc.x += x[u].x, acc.y += x[u].y, acc.z += x[u].z, acc.w += x[u].w;
    }
  }
  if (cur >= 0) flush(cur);
}

// Diagnostic: a warp per 64 ids of a stream, teams of T lanes, the sum of
// the 64 rows written to Y[chunk] (bench/gather_probe.cu's kernel on a
// graph's ids): which part of a sum's time is its ids' stream itself.
template <int T>
__global__ void __launch_bounds__(256)
    stream_sum(long n, const int *__restrict__ ids, const float4 *__restrict__ X, float4 *Y) {
  constexpr int R = 32 / T;
  long w = (blockIdx.x * (long)blockDim.x + threadIdx.x) >> 5;
  int lane = threadIdx.x & 31, r = lane / T, f4 = lane % T;
  if (w * 64 >= n) return;
  const int *id = ids + w * 64;
  int my = w * 64 + lane < n ? id[lane] : -1, my2 = w * 64 + 32 + lane < n ? id[32 + lane] : -1;
  float4 acc = probe_chunk_sum<64, U>(my, my2, r, R, X, T, f4);
  probe_team_sum(acc, T);
  if (r == 0) Y[w * T + f4] = acc;
}

struct Dev {
  int n;
  long ne;
  int *ptr, *src, *dst;
  int *shuffled, *uniform; // the sources in a random order; ids uniform over the vertices
};

template <int T> static void launch(const char *v, const Dev &g, const float4 *X, float4 *Y) {
  if (!strncmp(v, "stream_", 7)) {
    const int *ids = v[7] == 'c' ? g.src : v[7] == 's' ? g.shuffled : g.uniform;
    long warps = (g.ne + 63) / 64;
    stream_sum<T><<<(unsigned)((warps * 32 + 255) / 256), 256>>>(g.ne, ids, X, Y);
    return;
  }
  if (!strcmp(v, "rows")) {
    long threads = (long)g.n * T;
    rows_sum<T><<<(unsigned)((threads + 255) / 256), 256>>>(g.n, g.ptr, g.src, X, Y);
    return;
  }
  CK(cudaMemsetAsync(Y, 0, (size_t)g.n * T * sizeof(float4)));
  if (!strcmp(v, "zero")) return; // what the chunks' zeroing costs alone
  // chunkK: whole rows stored, U = 4; achunkK: every flush atomic;
  // achunkKu8: and 8 rows in flight a team; schunk64 / echunk64: the
  // diagnostics (every flush a plain store / one flush at the team's end)
  long warps = (g.ne + 63) / 64;
  unsigned blocks = (unsigned)((warps * 32 + 255) / 256);
  if (!strcmp(v, "schunk64") || !strcmp(v, "echunk64")) {
    if (v[0] == 's') chunk_sum<T, 64, 2, 4><<<blocks, 256>>>(g.ne, g.ptr, g.src, g.dst, X, Y);
    else chunk_sum<T, 64, 3, 4><<<blocks, 256>>>(g.ne, g.ptr, g.src, g.dst, X, Y);
    return;
  }
  bool whole = v[0] == 'c', u8 = strstr(v, "u8") != nullptr;
  int K = atoi(v + (whole ? 5 : 6));
  warps = (g.ne + K - 1) / K;
  blocks = (unsigned)((warps * 32 + 255) / 256);
#define GO(KK, W, UX) chunk_sum<T, KK, W, UX><<<blocks, 256>>>(g.ne, g.ptr, g.src, g.dst, X, Y)
  if (whole) {
    if (K == 64) GO(64, 0, 4);
    else if (K == 128) GO(128, 0, 4);
    else GO(256, 0, 4);
  } else if (u8) {
    if (K == 64) GO(64, 1, 8);
    else GO(128, 1, 8);
  } else {
    if (K == 64) GO(64, 1, 4);
    else GO(128, 1, 4);
  }
#undef GO
}

int main(int argc, char **argv) {
  ProbeArgs args = probe_args(argc, argv, {16, 32, 64});
  for (int F : args.Fs)
    if (F != 16 && F != 32 && F != 64) {
      fprintf(stderr, "--F %d: 16, 32 or 64\n", F);
      return 2;
    }
  ProbeDevice dev = probe_device();
  probe_print_device(dev);
  printf("graph,V,E,F,variant,ms,bytes,of_bound,rel_l2\n");
  const char *variants[] = {"rows", "chunk64", "chunk128", "chunk256", "achunk64", "achunk128",
                            "achunk64u8", "achunk128u8", "zero",
                            "stream_csr", "stream_shuffled", "stream_uniform", "schunk64",
                            "echunk64"};
  for (const char *path : args.paths) {
    Graph g;
    if (!read_graph(path, g)) return 1;
    long E = (long)g.src.size();
    std::vector<int> hdst(E);
    for (int v = 0; v < g.n; ++v)
      for (int e = g.ptr[v]; e < g.ptr[v + 1]; ++e) hdst[e] = v;
    std::vector<int> hshuf(g.src), huni(E);
    uint64_t z = 88172645463325252ull;
    for (long i = E - 1; i > 0; --i) { // Fisher-Yates, xorshift
      z ^= z << 13, z ^= z >> 7, z ^= z << 17;
      std::swap(hshuf[i], hshuf[z % (uint64_t)(i + 1)]);
    }
    for (long i = 0; i < E; ++i) {
      z ^= z << 13, z ^= z >> 7, z ^= z << 17;
      huni[i] = (int)(z % (uint64_t)g.n);
    }
    Dev d = {g.n, E, up(g.ptr), up(g.src), up(hdst), up(hshuf), up(huni)};
    std::string name = graph_name(path);
    for (int F : args.Fs) {
      std::vector<float> hx = probe_features(g.n, F);
      std::vector<double> ref = probe_host_sum(g, hx, F);
      size_t xbytes = hx.size() * sizeof(float);
      int copies = 2 * xbytes <= (size_t)dev.prop.l2CacheSize
                       ? (int)std::min<size_t>(8, 1 + dev.prop.l2CacheSize / xbytes)
                       : 1;
      std::vector<float4 *> X(copies), Y(copies);
      // Y also holds a stream's sums of 64 rows (stream_X)
      size_t ybytes = std::max<size_t>(g.n, (E + 63) / 64) * F * sizeof(float);
      for (int c = 0; c < copies; ++c) {
        X[c] = (float4 *)up(hx);
        CK(cudaMalloc(&Y[c], ybytes));
      }
      double bytes = 2.0 * xbytes + 4.0 * (E + g.n + 1);
      for (const char *v : variants) {
        auto run = [&](int k) {
          if (F == 16) launch<4>(v, d, X[k], Y[k]);
          else if (F == 32) launch<8>(v, d, X[k], Y[k]);
          else launch<16>(v, d, X[k], Y[k]);
        };
        CK(cudaMemset(Y[0], 0xff, ybytes)); // NaN: a row the kernel forgets shows
        run(0);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        double rel = 0;
        if (!strncmp(v, "stream_", 7)) { // the sums of each 64 ids of the stream
          const std::vector<int> &ids = v[7] == 'c' ? g.src : v[7] == 's' ? hshuf : huni;
          std::vector<double> cref((size_t)((E + 63) / 64) * F, 0.0);
          for (long i = 0; i < E; ++i)
            for (int f = 0; f < F; ++f) cref[(size_t)(i / 64) * F + f] += hx[(size_t)ids[i] * F + f];
          rel = probe_rel_l2(Y[0], cref);
        } else if (strcmp(v, "zero") && strcmp(v, "schunk64") && strcmp(v, "echunk64")) {
          rel = probe_rel_l2(Y[0], ref);
        }
        if (!(rel < 1e-5)) rel = INFINITY;
        for (int k = 0; k < 3 * copies; ++k) run(k % copies);
        std::vector<float> ms;
        const int rounds = 20; // launches a timing, amortising the events
        for (int r = 0; r < args.reps; ++r)
          ms.push_back(time_ms(dev.e0, dev.e1, [&] {
                         for (int k = 0; k < rounds; ++k) run(k % copies);
                       }) /
                       rounds);
        CK(cudaGetLastError());
        std::sort(ms.begin(), ms.end());
        double med = ms[ms.size() / 2];
        printf("%s,%d,%ld,%d,%s,%.5f,%.0f,%.4f,%s\n", name.c_str(), g.n, E, F, v, med, bytes,
               bytes / (med * 1e-3) / 1e9 / dev.ceiling,
               std::isfinite(rel) ? std::to_string(rel).c_str() : "WRONG");
        fflush(stdout);
      }
      for (int c = 0; c < copies; ++c) {
        CK(cudaFree(X[c]));
        CK(cudaFree(Y[c]));
      }
    }
    for (void *ptr : {(void *)d.ptr, (void *)d.src, (void *)d.dst, (void *)d.shuffled,
                      (void *)d.uniform})
      CK(cudaFree(ptr));
  }
  return 0;
}
