// bench/tc_probe.cu: does a tensor-core SpMM beat gop's CUDA-core bf16
// aggregation? An experiment, not part of gop: it decides whether a
// tensor-core schedule primitive (issue 37) is worth building.
//
//   tc_probe [--F 64,128] [--reps 20] GRAPH.mtx.gz ...
//
// Y[v, :] = sum over in-edges (u -> v) of X[u, :]  (copy_u_sum), X in bf16,
// Y in f32, with mma.sync.m16n8k8 (bf16 in, f32 accumulate): the rows are
// cut into windows of 16 destinations; a window's distinct sources, in
// order, make its columns, 8 to a block; a block's 16 x 8 adjacency is a
// 128-bit mask (bit r * 8 + c: destination r has source c). A warp takes a
// window (or a chunk of at most CHUNK blocks of a heavy window, added with
// atomics) and 8 * NT features: per block each lane loads 2 * NT features
// of two source rows in one access each, and NT mma steps add the block.
// The n index of tile nt is feature j * NT + nt, so that a lane's B
// operands of all tiles come from one contiguous load.
//
// A source row shared by several destinations of a window is read once per
// window; that reuse (edges / distinct window sources, printed as `reuse`)
// is all a memory-bound SpMM can gain from tensor cores. Prints one CSV
// line per graph and F: the window statistics, the time (mean of `reps`
// launches after a warm-up, CUDA events; the heavy windows' rows cleared
// for their atomics inside it) and the fewest bytes (X in bf16 and Y in f32
// once, the CSR). Each result is first checked against a host sum of the
// same bf16 inputs (relative L2 under 1e-5, else the line ends in WRONG).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "probe_graph.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

enum { WROWS = 16, KCOLS = 8, CHUNK = 32 };

// The window tables: per block its 8 columns and its mask; per work item
// (a window, or a chunk of a heavy one) its window and block range.
struct Tiles {
  std::vector<int> cols;      // 8 per block (padded with the last column)
  std::vector<uint32_t> mask; // 4 per block
  std::vector<int> iwin, ib0, ib1;
  std::vector<unsigned char> isplit;
  std::vector<int> split_windows;
  long distinct = 0; // sum over windows of distinct sources
};

static void build_tiles(const Graph &g, Tiles &t) {
  int nwin = (g.n + WROWS - 1) / WROWS;
  std::vector<int> cols;
  for (int w = 0; w < nwin; ++w) {
    int r0 = w * WROWS, r1 = std::min(g.n, r0 + WROWS);
    cols.assign(g.src.begin() + g.ptr[r0], g.src.begin() + g.ptr[r1]);
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    t.distinct += (long)cols.size();
    int b0 = (int)(t.cols.size() / KCOLS), nb = (int)((cols.size() + KCOLS - 1) / KCOLS);
    for (int b = 0; b < nb; ++b)
      for (int c = 0; c < KCOLS; ++c) {
        size_t k = std::min(cols.size() - 1, (size_t)(b * KCOLS + c));
        t.cols.push_back(cols[k]);
      }
    t.mask.resize(t.mask.size() + 4 * (size_t)nb, 0);
    for (int r = r0; r < r1; ++r)
      for (int e = g.ptr[r]; e < g.ptr[r + 1]; ++e) {
        int k = (int)(std::lower_bound(cols.begin(), cols.end(), g.src[e]) - cols.begin());
        int b = b0 + k / KCOLS, c = k % KCOLS, rr = r - r0;
        t.mask[4 * (size_t)b + rr / 4] |= 1u << ((rr % 4) * KCOLS + c);
      }
    bool split = nb > CHUNK;
    if (split) t.split_windows.push_back(w);
    // one item per CHUNK blocks; an empty window still writes its zero rows
    for (int b = 0; b == 0 || b < nb; b += CHUNK) {
      t.iwin.push_back(w);
      t.ib0.push_back(b0 + b);
      t.ib1.push_back(b0 + std::min(nb, b + CHUNK));
      t.isplit.push_back(split);
    }
  }
}

__device__ __forceinline__ void mma_bf16(float *d, uint32_t a0, uint32_t a1, uint32_t b) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a0), "r"(a1), "r"(b));
}

// one bf16 1.0 (0x3F80) in each half whose mask bit is set
__device__ __forceinline__ uint32_t ones(uint32_t two_bits) {
  return ((two_bits & 1u) ? 0x3F80u : 0u) | ((two_bits & 2u) ? 0x3F800000u : 0u);
}

// a lane's share of block b: its mask (returned) and NT features of the
// two source rows it feeds to the mma steps (k = 2t and 2t + 1)
template <int NT>
struct Rows {
  uint32_t w0[NT / 2], w1[NT / 2];
};

template <int NT>
__device__ __forceinline__ uint4 load_block(int b, int g, int t, int fbase, int F,
                                            const int *__restrict__ cols,
                                            const uint4 *__restrict__ mask,
                                            const __nv_bfloat16 *__restrict__ X, Rows<NT> &x) {
  int c0 = __ldg(&cols[KCOLS * b + 2 * t]), c1 = __ldg(&cols[KCOLS * b + 2 * t + 1]);
  const __nv_bfloat16 *p0 = X + (size_t)c0 * F + fbase + g * NT;
  const __nv_bfloat16 *p1 = X + (size_t)c1 * F + fbase + g * NT;
  if constexpr (NT == 8) {
    uint4 v0 = __ldg((const uint4 *)p0), v1 = __ldg((const uint4 *)p1);
    x.w0[0] = v0.x, x.w0[1] = v0.y, x.w0[2] = v0.z, x.w0[3] = v0.w;
    x.w1[0] = v1.x, x.w1[1] = v1.y, x.w1[2] = v1.z, x.w1[3] = v1.w;
  } else {
    uint2 v0 = __ldg((const uint2 *)p0), v1 = __ldg((const uint2 *)p1);
    x.w0[0] = v0.x, x.w0[1] = v0.y, x.w1[0] = v1.x, x.w1[1] = v1.y;
  }
  return __ldg(&mask[b]);
}

template <int NT>
__global__ void __launch_bounds__(256) tc_spmm(int nitems, const int *__restrict__ iwin,
                                               const int *__restrict__ ib0,
                                               const int *__restrict__ ib1,
                                               const unsigned char *__restrict__ isplit,
                                               const int *__restrict__ cols,
                                               const uint4 *__restrict__ mask,
                                               const __nv_bfloat16 *__restrict__ X,
                                               float *__restrict__ Y, int n, int F) {
  int warp = (int)((blockIdx.x * (unsigned)blockDim.x + threadIdx.x) >> 5);
  int lane = threadIdx.x & 31, fchunks = F / (8 * NT);
  if (warp >= nitems * fchunks) return;
  int it = warp / fchunks, fbase = (warp % fchunks) * 8 * NT;
  int g = lane >> 2, t = lane & 3, sh = (g & 3) * 8 + 2 * t;
  float acc[NT][4];
#pragma unroll
  for (int i = 0; i < NT; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
  // one block ahead: the next block's mask, columns and rows are loaded
  // before this block's mma steps, so that a warp has two in flight
  int b = ib0[it], b1 = ib1[it];
  uint4 m = make_uint4(0, 0, 0, 0);
  Rows<NT> x;
  if (b < b1) m = load_block<NT>(b, g, t, fbase, F, cols, mask, X, x);
  for (; b < b1; ++b) {
    uint32_t a0 = ones(((g < 4 ? m.x : m.y) >> sh) & 3u);
    uint32_t a1 = ones(((g < 4 ? m.z : m.w) >> sh) & 3u);
    Rows<NT> cur = x;
    if (b + 1 < b1) m = load_block<NT>(b + 1, g, t, fbase, F, cols, mask, X, x);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      // k = 2t (row c0) in the low half, k = 2t + 1 (row c1) in the high
      uint32_t x0 = (cur.w0[nt / 2] >> (16 * (nt & 1))) & 0xFFFFu;
      uint32_t x1 = (cur.w1[nt / 2] >> (16 * (nt & 1))) & 0xFFFFu;
      mma_bf16(acc[nt], a0, a1, x0 | (x1 << 16));
    }
  }
  // acc[nt][i]: row g (i < 2) or g + 8, column 2t + (i & 1), which is
  // feature fbase + column * NT + nt
  int w = iwin[it];
  bool split = isplit[it];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    int r = w * WROWS + g + 8 * half;
    if (r >= n) continue;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      float *y = Y + (size_t)r * F + fbase + (2 * t + j) * NT;
      if (split) {
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) atomicAdd(y + nt, acc[nt][2 * half + j]);
      } else {
#pragma unroll
        for (int nt = 0; nt < NT; nt += 4)
          *(float4 *)(y + nt) = make_float4(acc[nt][2 * half + j], acc[nt + 1][2 * half + j],
                                            acc[nt + 2][2 * half + j], acc[nt + 3][2 * half + j]);
      }
    }
  }
}

__global__ void zero_windows(const int *wins, int nw, float *Y, int n, int F) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x, per = (long)WROWS * F;
  if (i >= (long)nw * per) return;
  long r = (long)wins[i / per] * WROWS + (i % per) / F;
  if (r < n) Y[r * F + i % F] = 0.f;
}

int main(int argc, char **argv) {
  ProbeArgs args = probe_args(argc, argv, {64, 128});
  const std::vector<int> &Fs = args.Fs;
  int reps = args.reps;
  const std::vector<const char *> &paths = args.paths;
  for (int F : Fs)
    if (F <= 0 || F % 32) {
      fprintf(stderr, "--F %d: a positive multiple of 32\n", F);
      return 2;
    }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("# %s\n", prop.name);
  printf("graph,V,E,F,distinct,reuse,blocks,density,items,split_windows,tc_ms,bytes,rel_l2\n");
  for (const char *path : paths) {
    Graph g;
    if (!read_graph(path, g)) return 1;
    Tiles t;
    build_tiles(g, t);
    long E = (long)g.src.size(), nblk = (long)t.cols.size() / KCOLS;
    std::string name = graph_name(path);
    int *d_iwin = up(t.iwin), *d_ib0 = up(t.ib0), *d_ib1 = up(t.ib1), *d_cols = up(t.cols);
    int *d_split_w = up(t.split_windows);
    unsigned char *d_isplit = up(t.isplit);
    uint4 *d_mask = (uint4 *)up(t.mask);
    int nitems = (int)t.iwin.size();
    for (int F : Fs) {
      std::vector<float> xf = probe_features(g.n, F);
      std::vector<__nv_bfloat16> hx(xf.size());
      for (size_t k = 0; k < hx.size(); ++k) {
        hx[k] = __float2bfloat16(xf[k]);
        xf[k] = __bfloat162float(hx[k]);
      }
      __nv_bfloat16 *d_x = up(hx);
      float *d_y;
      CK(cudaMalloc(&d_y, (size_t)g.n * F * sizeof(float)));
      int NT = (F % 64 == 0) ? 8 : 4;
      long warps = (long)nitems * (F / (8 * NT));
      int blocks = (int)((warps * 32 + 255) / 256);
      long zero_n = (long)t.split_windows.size() * WROWS * F;
      auto launch = [&]() {
        if (zero_n)
          zero_windows<<<(int)((zero_n + 255) / 256), 256>>>(d_split_w, (int)t.split_windows.size(),
                                                             d_y, g.n, F);
        if (NT == 8)
          tc_spmm<8><<<blocks, 256>>>(nitems, d_iwin, d_ib0, d_ib1, d_isplit, d_cols, d_mask, d_x,
                                      d_y, g.n, F);
        else
          tc_spmm<4><<<blocks, 256>>>(nitems, d_iwin, d_ib0, d_ib1, d_isplit, d_cols, d_mask, d_x,
                                      d_y, g.n, F);
      };
      CK(cudaMemset(d_y, 0xff, (size_t)g.n * F * sizeof(float)));
      launch();
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      std::vector<float> hy((size_t)g.n * F);
      CK(cudaMemcpy(hy.data(), d_y, hy.size() * sizeof(float), cudaMemcpyDeviceToHost));
      double num = 0, den = 0;
      std::vector<double> row(F);
      for (int v = 0; v < g.n; ++v) {
        std::fill(row.begin(), row.end(), 0.0);
        for (int e = g.ptr[v]; e < g.ptr[v + 1]; ++e)
          for (int f = 0; f < F; ++f) row[f] += xf[(size_t)g.src[e] * F + f];
        for (int f = 0; f < F; ++f) {
          double d = hy[(size_t)v * F + f] - row[f];
          num += d * d, den += row[f] * row[f];
        }
      }
      double rel = std::sqrt(num / std::max(den, 1e-300));
      for (int i = 0; i < 3; ++i) launch();
      cudaEvent_t e0, e1;
      CK(cudaEventCreate(&e0));
      CK(cudaEventCreate(&e1));
      float ms = time_ms(e0, e1, [&] {
        for (int i = 0; i < reps; ++i) launch();
      });
      // fewest bytes: X and Y once, the CSR (offsets and sources)
      double bytes = (double)g.n * F * (2 + 4) + 4.0 * (E + g.n + 1);
      printf("%s,%d,%ld,%d,%ld,%.3f,%ld,%.4f,%d,%zu,%.5f,%.0f,%.2e%s\n", name.c_str(), g.n, E, F,
             t.distinct, (double)E / std::max(1L, t.distinct), nblk,
             (double)E / std::max(1.0, nblk * 128.0), nitems, t.split_windows.size(), ms / reps,
             bytes, rel, rel < 1e-5 ? "" : ",WRONG");
      fflush(stdout);
      CK(cudaFree(d_x));
      CK(cudaFree(d_y));
      CK(cudaEventDestroy(e0));
      CK(cudaEventDestroy(e1));
    }
    cudaFree(d_iwin), cudaFree(d_ib0), cudaFree(d_ib1), cudaFree(d_cols), cudaFree(d_split_w);
    cudaFree(d_isplit), cudaFree(d_mask);
  }
  return 0;
}
