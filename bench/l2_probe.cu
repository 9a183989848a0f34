// bench/l2_probe.cu: do the gathered source rows of a sum stay in L2 longer
// when the streams around them (the CSR's sources, the rows written) are
// marked to leave first, or when the gathered tensor is kept in a
// persisting part of L2? An experiment, not part of gop: it decides
// whether cache-policy hints are worth a lowering rule (issue 37: graphs
// above 1M edges at F >= 128 at 40% of the fewest-bytes bound).
//
//   l2_probe [--F 128,256] [--reps 20] GRAPH.mtx.gz ...
//
// Y[v, :] = sum over in-edges (u -> v) of X[u, :] (copy_u_sum, f32), one
// warp per chunk of at most CHUNK in-edges of a row (a row of more chunks
// is zeroed first and its chunks add with atomics, as gop's groups do);
// each lane holds F / 128 float4 of the row; four source rows in flight.
// The variants differ only in cache policy:
//   base   plain loads (ld.global.nc) and stores
//   cs     the sources' ids loaded and Y stored "streaming" (ld/st.global.cs:
//          evict first in L1 and L2)
//   hintF  cs, and X loaded with an L2::evict_last policy for a fraction F
//          of its lines (createpolicy.fractional), F = min(1, 0.8 L2 / |X|)
//   hint1  the same with the fraction 1
//   win    base, and X as the stream's access-policy window: a fraction of
//          its lines persisting in L2's set-aside part (the largest the
//          device allows), the rest streaming
//   wincs  win and cs
// Two timings per variant: `warm` (launches back to back, as gop's
// benchmark replays them: what one call leaves in L2 the next finds) and
// `cold` (L2 flushed by reading a 1 GiB buffer and persisting lines reset
// before each launch; median). Every variant's Y is checked against a host
// sum first (relative L2 under 1e-5, else the line ends in WRONG). Prints
// one CSV line per graph, F and variant, with the fewest bytes (X and Y
// once, the CSR) over the time, as a fraction of the device's copy rate
// measured here (cudaMemcpy device to device, 1 GiB, read + written).
#include <cuda_runtime.h>

#include "probe_graph.h"

#include <cmath>
#include <cstdint>

enum { CHUNK = 64 };
enum { CS = 1, HINT = 2, WIN = 4 };

template <int MODE> __device__ __forceinline__ int load_id(const int *p) {
  if (MODE & CS) return __ldcs(p);
  return __ldg(p);
}

template <int MODE> __device__ __forceinline__ float4 load_row(const float4 *p, uint64_t pol) {
  if (MODE & HINT) {
    float4 r;
    asm("ld.global.nc.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
        : "=f"(r.x), "=f"(r.y), "=f"(r.z), "=f"(r.w)
        : "l"(p), "l"(pol));
    return r;
  }
  return __ldg(p);
}

__device__ __forceinline__ void add4(float4 &a, float4 b) {
  a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
}

template <int NV, int MODE>
__global__ void __launch_bounds__(256)
    spmm(int nitems, const int *__restrict__ irow, const int *__restrict__ ie0,
         const int *__restrict__ ie1, const unsigned char *__restrict__ isplit,
         const int *__restrict__ src, const float4 *__restrict__ X, float4 *Y, float frac) {
  int w = (int)((blockIdx.x * (long)blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
  if (w >= nitems) return;
  const int F4 = NV * 32;
  int r = irow[w], e0 = ie0[w], e1 = ie1[w];
  uint64_t pol = 0;
  if (MODE & HINT) asm("createpolicy.fractional.L2::evict_last.b64 %0, %1;" : "=l"(pol) : "f"(frac));
  float4 acc[NV];
  for (int v = 0; v < NV; ++v) acc[v] = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int e = e0; e < e1; e += 32) {
    int my = e + lane < e1 ? load_id<MODE>(src + e + lane) : 0;
    int cnt = min(32, e1 - e), j = 0;
    for (; j + 4 <= cnt; j += 4) {
      float4 x[4][NV];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        int s = __shfl_sync(0xffffffffu, my, j + k);
        for (int v = 0; v < NV; ++v) x[k][v] = load_row<MODE>(X + (size_t)s * F4 + v * 32 + lane, pol);
      }
#pragma unroll
      for (int k = 0; k < 4; ++k)
        for (int v = 0; v < NV; ++v) add4(acc[v], x[k][v]);
    }
    for (; j < cnt; ++j) {
      int s = __shfl_sync(0xffffffffu, my, j);
      for (int v = 0; v < NV; ++v) add4(acc[v], load_row<MODE>(X + (size_t)s * F4 + v * 32 + lane, pol));
    }
  }
  float4 *y = Y + (size_t)r * F4 + lane;
  for (int v = 0; v < NV; ++v) {
    if (isplit[w])
      atomicAdd(y + v * 32, acc[v]);
    else if (MODE & CS)
      __stcs(y + v * 32, acc[v]);
    else
      y[v * 32] = acc[v];
  }
}

__global__ void zero_rows(const int *rows, int nr, float4 *Y, int F4) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < (long)nr * F4) Y[(size_t)rows[i / F4] * F4 + i % F4] = make_float4(0.f, 0.f, 0.f, 0.f);
}

// Reads a buffer larger than L2 (the flush before a cold launch).
__global__ void flush(const float4 *p, long n, float *sink) {
  float s = 0.f;
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    float4 v = __ldcg(p + i);
    s += v.x;
  }
  if (s == 12345.f) *sink = s;
}

struct Variant {
  const char *name;
  int mode;
  bool frac1;
};

static const Variant variants[] = {{"base", 0, false}, {"cs", CS, false},
                                   {"hintF", CS | HINT, false}, {"hint1", CS | HINT, true},
                                   {"win", WIN, false}, {"wincs", WIN | CS, false}};

template <int NV>
static void launch_mode(int mode, int blocks, int nitems, int *a, int *b, int *c, unsigned char *sp,
                        int *src, float4 *X, float4 *Y, float frac) {
#define L(M) spmm<NV, M><<<blocks, 256>>>(nitems, a, b, c, sp, src, X, Y, frac)
  switch (mode & (CS | HINT)) {
  case 0: L(0); break;
  case CS: L(CS); break;
  default: L(CS | HINT); break;
  }
#undef L
}

int main(int argc, char **argv) {
  ProbeArgs args = probe_args(argc, argv, {128, 256});
  const std::vector<int> &Fs = args.Fs;
  int reps = args.reps;
  const std::vector<const char *> &paths = args.paths;
  for (int F : Fs)
    if (F != 128 && F != 256) {
      fprintf(stderr, "--F %d: 128 or 256\n", F);
      return 2;
    }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  size_t setaside = prop.persistingL2CacheMaxSize;
  CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, setaside));
  CK(cudaDeviceGetLimit(&setaside, cudaLimitPersistingL2CacheSize));
  // the copy rate and the flush buffer
  size_t gib = (size_t)1 << 30;
  float4 *big;
  float *sink;
  CK(cudaMalloc(&big, gib));
  CK(cudaMalloc(&sink, sizeof(float)));
  CK(cudaMemset(big, 0, gib));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  double ceiling = probe_copy_ceiling_gbps(big, gib, e0, e1);
  printf("# %s l2_mb=%.1f persisting_max_mb=%.1f set_aside_mb=%.1f max_window_mb=%.1f "
         "copy_ceiling_gbps=%.1f\n",
         prop.name, prop.l2CacheSize / 1048576.0, prop.persistingL2CacheMaxSize / 1048576.0,
         setaside / 1048576.0, prop.accessPolicyMaxWindowSize / 1048576.0, ceiling);
  printf("graph,V,E,F,variant,frac,warm_ms,cold_ms,bytes,warm_of_bound,cold_of_bound,rel_l2\n");
  for (const char *path : paths) {
    Graph g;
    if (!read_graph(path, g)) return 1;
    long E = (long)g.src.size();
    std::vector<int> irow, ie0, ie1, split_rows;
    std::vector<unsigned char> isplit;
    for (int v = 0; v < g.n; ++v) {
      int a = g.ptr[v], b = g.ptr[v + 1];
      bool split = b - a > CHUNK;
      if (split) split_rows.push_back(v);
      int e = a;
      do {
        irow.push_back(v), ie0.push_back(e), ie1.push_back(std::min(b, e + CHUNK));
        isplit.push_back(split);
        e += CHUNK;
      } while (e < b);
    }
    int nitems = (int)irow.size(), blocks = (int)(((long)nitems * 32 + 255) / 256);
    int *d_row = up(irow), *d_e0 = up(ie0), *d_e1 = up(ie1), *d_src = up(g.src);
    int *d_split = up(split_rows);
    unsigned char *d_isplit = up(isplit);
    std::string name = graph_name(path);
    for (int F : Fs) {
      int F4 = F / 4;
      std::vector<float> hx = probe_features(g.n, F);
      std::vector<double> ref = probe_host_sum(g, hx, F);
      float4 *d_x = (float4 *)up(hx), *d_y;
      size_t xbytes = hx.size() * sizeof(float);
      CK(cudaMalloc(&d_y, xbytes));
      double bytes = 2.0 * xbytes + 4.0 * (E + g.n + 1);
      for (const Variant &var : variants) {
        float frac = var.frac1 ? 1.f : (float)std::min(1.0, 0.8 * prop.l2CacheSize / (double)xbytes);
        cudaStreamAttrValue attr = {};
        if (var.mode & WIN) {
          attr.accessPolicyWindow.base_ptr = d_x;
          attr.accessPolicyWindow.num_bytes = std::min(xbytes, (size_t)prop.accessPolicyMaxWindowSize);
          frac = (float)std::min(1.0, (double)setaside / attr.accessPolicyWindow.num_bytes);
          attr.accessPolicyWindow.hitRatio = frac;
          attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
          attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
        }
        CK(cudaStreamSetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &attr));
        auto launch = [&]() {
          if (!split_rows.empty())
            zero_rows<<<(int)(((long)split_rows.size() * F4 + 255) / 256), 256>>>(
                d_split, (int)split_rows.size(), d_y, F4);
          if (F == 128)
            launch_mode<1>(var.mode, blocks, nitems, d_row, d_e0, d_e1, d_isplit, d_src, d_x, d_y, frac);
          else
            launch_mode<2>(var.mode, blocks, nitems, d_row, d_e0, d_e1, d_isplit, d_src, d_x, d_y, frac);
        };
        CK(cudaMemset(d_y, 0xff, xbytes));
        launch();
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        double rel = probe_rel_l2(d_y, ref);
        for (int i = 0; i < 3; ++i) launch();
        float warm = time_ms(e0, e1, [&] {
          for (int i = 0; i < reps; ++i) launch();
        }) / reps;
        std::vector<float> cold;
        for (int i = 0; i < reps; ++i) {
          flush<<<prop.multiProcessorCount * 8, 256>>>(big, (long)(gib / sizeof(float4)), sink);
          CK(cudaCtxResetPersistingL2Cache());
          cold.push_back(time_ms(e0, e1, launch));
        }
        std::sort(cold.begin(), cold.end());
        float cm = cold[cold.size() / 2];
        printf("%s,%d,%ld,%d,%s,%.3f,%.5f,%.5f,%.0f,%.4f,%.4f,%.2e%s\n", name.c_str(), g.n, E, F,
               var.name, (var.mode & (HINT | WIN)) ? frac : 0.f, warm, cm, bytes,
               bytes / (warm * 1e-3) / 1e9 / ceiling, bytes / (cm * 1e-3) / 1e9 / ceiling, rel,
               rel < 1e-5 ? "" : ",WRONG");
        fflush(stdout);
        attr = {};
        attr.accessPolicyWindow.num_bytes = 0;
        CK(cudaStreamSetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &attr));
        CK(cudaCtxResetPersistingL2Cache());
      }
      CK(cudaFree(d_x));
      CK(cudaFree(d_y));
    }
    cudaFree(d_row), cudaFree(d_e0), cudaFree(d_e1), cudaFree(d_src), cudaFree(d_split);
    cudaFree(d_isplit);
  }
  return 0;
}
