// bench/panel_probe.cu: does a sum gather fewer rows, and run faster, when a
// warp owns a panel of P consecutive destinations and reads each distinct
// source of the panel once? An experiment, not part of gop: it decides
// whether such panels are worth a scheduling primitive (issue 37: the sums
// against cuSPARSE, and graphs above 1M edges at F >= 128 at 40% of the
// fewest-bytes bound).
//
//   panel_probe [--F 128,256] [--reps 20] GRAPH.mtx.gz ...
//
// Y[v, :] = sum over in-edges (u -> v) of X[u, :] (copy_u_sum, f32). The
// destinations are cut into panels of P consecutive ids; a panel's in-edges
// become pairs (source, mask): one pair per distinct source, bit d of the
// mask set when the source has an arc into the panel's d-th destination.
// A panel's pairs are cut into chunks of at most 64; a warp takes one chunk
// and one 128-wide slice of the features (a float4 a lane), loads each
// pair's row once (four rows in flight) and adds it into the accumulators
// of the destinations its mask names (P float4 registers a lane, the mask
// the same on every lane, so the tests do not diverge). A panel of one
// chunk stores its P rows; a panel of several is zeroed first and its
// chunks add atomically. P = 1 is a plain neighbour-group sum (gop's
// spmm_groups(64, 4) shape): the baseline, in the same binary.
//
// The weighted sum (u_mul_e_sum: Y[v] = sum of W[e] X[u]) at P = 1, 2, 4,
// two ways: `loaded`, each pair holding its slots' edge positions (P ints)
// and a slot reading its position, then its weight, as gop's spmm_panels
// does; `counted`, a chunk holding each destination's first edge in it
// and a slot's position counted from the masks of the pairs before (a
// panel's pairs list each destination's edges in CSR order, sources
// ascending; checked on the host, else the line says WRONG), no position
// loaded.
// Timing: launches back to back (zeroing included), the median of --reps;
// where X and Y fit in L2 twice over the runs rotate among copies of them,
// as gop's benchmark does, so that no run finds its rows left in L2 by the
// one before. Every variant's Y is checked against a host sum first
// (relative L2 under 1e-5, else the line says WRONG). One CSV line per
// graph, F, P and weights: the pairs over the edges (the rows gathered,
// relative to one per edge), the time, and the fewest bytes (X and Y once,
// the CSR, W) over the time as a fraction of the copy rate measured here.
#include <cuda_runtime.h>

#include "probe_graph.h"

#include <cmath>
#include <cstdint>
#include <tuple>

enum { CHUNK = 64, U = 4 };

__device__ __forceinline__ void add4(float4 &a, float4 b) {
  a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
}

// W: the weights: none (W = nullptr, copy_u_sum), read at each slot's
// position loaded from the pair (LOADED), or at a position counted from
// the masks (COUNTED: the chunk's first position a destination plus the
// pairs before that name it), or counted and loaded by the lanes
// (SHARED: lane i takes pair i of each 32, its slot's position from a
// ballot of the 32 masks, loads that weight, and the slots read it by
// shuffle, as the sources and masks are).
enum { COPY = 0, LOADED = 1, COUNTED = 2, SHARED = 3 };

// -DPANEL_MIN_BLOCKS=N: at least N blocks of 256 an SM (fewer registers)
#ifndef PANEL_MIN_BLOCKS
#define PANEL_MIN_BLOCKS 1
#endif
template <int P, int W_MODE>
__global__ void __launch_bounds__(256, PANEL_MIN_BLOCKS)
    panel_sum(int nitems, int slices, const int *__restrict__ ipanel, const int *__restrict__ ib,
              const int *__restrict__ ie, const unsigned char *__restrict__ isplit,
              const int *__restrict__ psrc, const unsigned *__restrict__ pmask,
              const int *__restrict__ ppos, const int *__restrict__ ibase,
              const float *__restrict__ W, long ne, const float4 *__restrict__ X, float4 *Y, int n,
              int F4) {
  long w = (blockIdx.x * (long)blockDim.x + threadIdx.x) >> 5;
  int lane = threadIdx.x & 31;
  if (w >= (long)nitems * slices) return;
  int item = (int)(w / slices), f4 = (int)(w % slices) * 32 + lane;
  int b = ib[item], e = ie[item];
  float4 acc[P];
  int cnt_d[P]; // COUNTED: the position of each destination's next edge
#pragma unroll
  for (int d = 0; d < P; ++d) {
    acc[d] = make_float4(0.f, 0.f, 0.f, 0.f);
    cnt_d[d] = W_MODE >= COUNTED ? __ldg(ibase + (size_t)item * P + d) : 0;
  }
  // the weight of slot d of pair q (whose mask is m)
  auto weight = [&](int q, unsigned m, int d) -> float {
    if (W_MODE == COPY) return 1.f;
    long pos;
    if (W_MODE == LOADED) {
      pos = __ldg(ppos + (size_t)q * P + d);
    } else {
      pos = min((long)cnt_d[d], ne - 1); // a clear slot's load is unused
      cnt_d[d] += m >> d & 1u;
    }
    return __ldg(W + pos);
  };
  auto madd = [](float4 &a, float4 x, float w) {
    a.x += w * x.x, a.y += w * x.y, a.z += w * x.z, a.w += w * x.w;
  };
  for (int k = b; k < e; k += 32) {
    int cnt = min(32, e - k);
    int my_s = lane < cnt ? psrc[k + lane] : 0;
    unsigned my_m = lane < cnt ? pmask[k + lane] : 0u;
    float my_w[P]; // SHARED: this lane's pair's weight of each slot
#pragma unroll
    for (int d = 0; d < P; ++d) {
      my_w[d] = 0.f;
      if (W_MODE == SHARED) {
        unsigned bits = __ballot_sync(0xffffffffu, my_m >> d & 1u);
        int at = cnt_d[d] + __popc(bits & ((1u << lane) - 1u));
        if (my_m >> d & 1u) my_w[d] = __ldg(W + at);
        cnt_d[d] += __popc(bits);
      }
    }
    int j = 0;
    for (; j + U <= cnt; j += U) {
      float4 x[U];
      unsigned m[U];
      float wt[U][P];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        int s = __shfl_sync(0xffffffffu, my_s, j + u);
        m[u] = __shfl_sync(0xffffffffu, my_m, j + u);
        x[u] = __ldg(X + (size_t)s * F4 + f4);
#pragma unroll
        for (int d = 0; d < P; ++d)
          wt[u][d] = W_MODE == SHARED ? __shfl_sync(0xffffffffu, my_w[d], j + u)
                                      : weight(k + j + u, m[u], d);
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int d = 0; d < P; ++d)
          if (m[u] >> d & 1u) {
            if (W_MODE == COPY) add4(acc[d], x[u]);
            else madd(acc[d], x[u], wt[u][d]);
          }
    }
    for (; j < cnt; ++j) {
      int s = __shfl_sync(0xffffffffu, my_s, j);
      unsigned m = __shfl_sync(0xffffffffu, my_m, j);
      float4 x = __ldg(X + (size_t)s * F4 + f4);
#pragma unroll
      for (int d = 0; d < P; ++d) {
        float w = W_MODE == SHARED ? __shfl_sync(0xffffffffu, my_w[d], j) : weight(k + j, m, d);
        if (m >> d & 1u) {
          if (W_MODE == COPY) add4(acc[d], x);
          else madd(acc[d], x, w);
        }
      }
    }
  }
  int v0 = ipanel[item] * P;
  bool split = isplit[item];
#pragma unroll
  for (int d = 0; d < P; ++d) {
    if (v0 + d >= n) break;
    float4 *y = Y + (size_t)(v0 + d) * F4 + f4;
    if (split)
      atomicAdd(y, acc[d]);
    else
      *y = acc[d];
  }
}

__global__ void zero_rows(const int *rows, int nr, float4 *Y, int F4) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < (long)nr * F4) Y[(size_t)rows[i / F4] * F4 + i % F4] = make_float4(0.f, 0.f, 0.f, 0.f);
}

// A graph's panels of P destinations as chunks of pairs.
struct Panels {
  std::vector<int> ipanel, ib, ie, psrc, zero;
  std::vector<int> ppos;  // P a pair: each slot's edge (a clear slot repeats a set one's)
  std::vector<int> ibase; // P a chunk: each destination's first edge in it (COUNTED)
  std::vector<unsigned> pmask;
  std::vector<unsigned char> isplit;
};

static Panels make_panels(const Graph &g, int P) {
  Panels p;
  // (source, offset in the panel, edge): a destination's edges in CSR
  // order (sources ascending) within its slot, so positions can be counted
  std::vector<std::tuple<int, int, int>> arcs;
  for (int v0 = 0; v0 < g.n; v0 += P) {
    arcs.clear();
    for (int d = 0; d < P && v0 + d < g.n; ++d)
      for (int e = g.ptr[v0 + d]; e < g.ptr[v0 + d + 1]; ++e) arcs.push_back({g.src[e], d, e});
    std::sort(arcs.begin(), arcs.end());
    int first = (int)p.psrc.size();
    for (size_t k = 0; k < arcs.size(); ++k) {
      auto [src, d, e] = arcs[k];
      // a repeated arc starts a pair of its own (the mask holds a bit once)
      if (k == 0 || src != std::get<0>(arcs[k - 1]) || (p.pmask.back() >> d & 1u)) {
        p.psrc.push_back(src);
        p.pmask.push_back(0u);
        for (int s = 0; s < P; ++s) p.ppos.push_back(e);
      }
      p.pmask.back() |= 1u << d;
      p.ppos[(p.psrc.size() - 1) * P + d] = e;
    }
    int last = (int)p.psrc.size();
    bool split = last - first > CHUNK;
    if (split)
      for (int d = 0; d < P && v0 + d < g.n; ++d) p.zero.push_back(v0 + d);
    int k = first;
    do { // an empty panel is one chunk of no pairs: it stores its zero rows
      p.ipanel.push_back(v0 / P), p.ib.push_back(k), p.ie.push_back(std::min(last, k + CHUNK));
      p.isplit.push_back(split);
      for (int d = 0; d < P; ++d) { // the first of d's edges at or after pair k
        int base = v0 + d < g.n ? g.ptr[v0 + d + 1] : 0;
        for (int q = k; q < std::min(last, k + CHUNK); ++q)
          if (p.pmask[q] >> d & 1u) {
            base = p.ppos[(size_t)q * P + d];
            break;
          }
        p.ibase.push_back(base);
      }
      k += CHUNK;
    } while (k < last);
  }
  return p;
}

// The device copies of a Panels.
struct DevPanels {
  int *a, *b, *c, *src, *zero, *pos, *base;
  unsigned *mask;
  unsigned char *sp;
};

template <int P, int W_MODE>
static void launch(const Panels &h, const DevPanels &t, const float *W, long ne, const float4 *X,
                   float4 *Y, int n, int F4) {
  int nitems = (int)h.ib.size(), slices = F4 / 32;
  long threads = (long)nitems * slices * 32;
  if (!h.zero.empty()) {
    long zt = (long)h.zero.size() * F4;
    zero_rows<<<(int)((zt + 255) / 256), 256>>>(t.zero, (int)h.zero.size(), Y, F4);
  }
  panel_sum<P, W_MODE><<<(int)((threads + 255) / 256), 256>>>(
      nitems, slices, t.a, t.b, t.c, t.sp, t.src, t.mask, t.pos, t.base, W, ne, X, Y, n, F4);
}

// Whether counting each chunk's masks from its bases gives every set
// slot's position (the pairs list a destination's edges in CSR order).
static bool positions_count(const Panels &h, int P) {
  for (size_t it = 0; it < h.ib.size(); ++it) {
    std::vector<int> c(h.ibase.begin() + it * P, h.ibase.begin() + (it + 1) * P);
    for (int q = h.ib[it]; q < h.ie[it]; ++q)
      for (int d = 0; d < P; ++d)
        if (h.pmask[q] >> d & 1u && c[d]++ != h.ppos[(size_t)q * P + d]) return false;
  }
  return true;
}

int main(int argc, char **argv) {
  ProbeArgs args = probe_args(argc, argv, {128, 256});
  for (int F : args.Fs)
    if (F % 128 != 0 || F <= 0) {
      fprintf(stderr, "--F %d: a multiple of 128\n", F);
      return 2;
    }
  ProbeDevice dev = probe_device();
  probe_print_device(dev);
  printf("graph,V,E,F,P,weights,pairs_over_E,items,ms,bytes,of_bound,rel_l2\n");
  const int Ps[] = {1, 2, 4, 8, 16};
  const char *wnames[] = {"none", "loaded", "counted", "shared"};
  for (const char *path : args.paths) {
    Graph g;
    if (!read_graph(path, g)) return 1;
    long E = (long)g.src.size();
    std::string name = graph_name(path);
    std::vector<float> hw = probe_features(E, 1); // the weighted sums' W
    float *dw = up(hw);
    for (int F : args.Fs) {
      int F4 = F / 4;
      std::vector<float> hx = probe_features(g.n, F);
      std::vector<double> ref = probe_host_sum(g, hx, F), refw((size_t)g.n * F, 0.0);
      for (int v = 0; v < g.n; ++v)
        for (int e = g.ptr[v]; e < g.ptr[v + 1]; ++e)
          for (int f = 0; f < F; ++f)
            refw[(size_t)v * F + f] += (double)hw[e] * hx[(size_t)g.src[e] * F + f];
      size_t xbytes = hx.size() * sizeof(float);
      // copies to rotate among where X and Y fit in L2 twice over
      int copies = 2 * xbytes <= (size_t)dev.prop.l2CacheSize
                       ? (int)std::min<size_t>(8, 1 + dev.prop.l2CacheSize / xbytes)
                       : 1;
      std::vector<float4 *> X(copies), Y(copies);
      for (int c = 0; c < copies; ++c) {
        X[c] = (float4 *)up(hx);
        CK(cudaMalloc(&Y[c], xbytes));
      }
      double bytes = 2.0 * xbytes + 4.0 * (E + g.n + 1);
      for (int P : Ps) {
        Panels h = make_panels(g, P);
        bool counts = positions_count(h, P);
        DevPanels t = {up(h.ipanel), up(h.ib), up(h.ie), up(h.psrc), up(h.zero), up(h.ppos),
                       up(h.ibase), up(h.pmask), up(h.isplit)};
        for (int wm = 0; wm < 4; ++wm) {
          if (wm > 0 && P > 4) continue; // the weighted kinds at P = 1, 2, 4
          auto run = [&](int k) {
            switch (P * 4 + wm) {
#define CASE(Q, M) \
  case Q * 4 + M: launch<Q, M>(h, t, dw, E, X[k], Y[k], g.n, F4); break;
              CASE(1, 0) CASE(2, 0) CASE(4, 0) CASE(8, 0) CASE(16, 0)
              CASE(1, 1) CASE(2, 1) CASE(4, 1) CASE(1, 2) CASE(2, 2) CASE(4, 2)
              CASE(1, 3) CASE(2, 3) CASE(4, 3)
#undef CASE
            }
          };
          CK(cudaMemset(Y[0], 0xff, xbytes)); // NaN: a row the kernel forgets shows
          run(0);
          CK(cudaGetLastError());
          CK(cudaDeviceSynchronize());
          double rel = probe_rel_l2(Y[0], wm ? refw : ref);
          if (!(rel < 1e-5) || (wm >= COUNTED && !counts)) rel = INFINITY;
          for (int k = 0; k < 3 * copies; ++k) run(k % copies);
          std::vector<float> ms;
          for (int r = 0; r < args.reps; ++r)
            ms.push_back(time_ms(dev.e0, dev.e1, [&] {
                           for (int k = 0; k < copies; ++k) run(k);
                         }) /
                         copies);
          CK(cudaGetLastError());
          std::sort(ms.begin(), ms.end());
          double med = ms[ms.size() / 2], wbytes = bytes + (wm ? 4.0 * E : 0.0);
          printf("%s,%d,%ld,%d,%d,%s,%.4f,%zu,%.5f,%.0f,%.4f,%s\n", name.c_str(), g.n, E, F, P,
                 wnames[wm], (double)h.psrc.size() / (double)E, h.ib.size(), med, wbytes,
                 wbytes / (med * 1e-3) / 1e9 / dev.ceiling,
                 std::isfinite(rel) ? std::to_string(rel).c_str() : "WRONG");
          fflush(stdout);
        }
        for (void *ptr : {(void *)t.a, (void *)t.b, (void *)t.c, (void *)t.src, (void *)t.zero,
                          (void *)t.pos, (void *)t.base, (void *)t.mask, (void *)t.sp})
          CK(cudaFree(ptr));
      }
      for (int c = 0; c < copies; ++c) {
        CK(cudaFree(X[c]));
        CK(cudaFree(Y[c]));
      }
    }
    CK(cudaFree(dw));
  }
  return 0;
}
