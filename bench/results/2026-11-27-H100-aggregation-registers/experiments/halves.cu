// The registers run (2026-11-27), prepared for the next session's first call (issue 19): does
// a bf16 group kernel gain from 16-byte loads when the two half-warps split
// one group's edges, combined by one shuffle, over gop's present form (a
// warp a group, 8-byte loads, 4 bf16 a lane at F = 128)?
//
// A hand-written stand-in for the three forms, to test the idea before it
// becomes a schedule primitive (it would need a strided group_edges loop
// and a shuffle over one lane bit):
//   warp8  : a warp per group, lane l features 4l..4l+3 (8-byte loads) --
//            what spmm_groups_full(64, 4) compiles to for bf16 at F = 128;
//   halves : a warp per group, half h takes the group's edges h, h+2, ...,
//            lane l%16 features 8(l%16)..+7 (16-byte loads); the halves'
//            sums meet through shfl.xor(16) and half 0 stores;
//   teams  : a half-warp per group (two groups a warp), 16-byte loads --
//            what spmm_teams8(64, 16) compiles to.
// Each: G = 64 edges a group, unrolled by 4, 128 threads a block, up to 16
// blocks an SM (gop's occupancy(2048)); rows with at most G in-edges are
// stored in bf16, heavier ones added into an f32 twin with atomics. Only
// the group kernel is timed (CUDA events, 10 warm-up runs, median of 50);
// the twin is cleared before the one checked run after them. Outputs are checked
// against a float64 reference on the host (relative L2 below 1e-2).
//
//   nvcc -O3 -arch=sm_90 -o halves halves.cu && ./halves graph.mtx [F=128]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                       \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

constexpr int G = 64;

struct Dev {
  int ngroups, nv, F;
  const int *gdst, *gfirst, *gend, *ptr, *src;
  const __nv_bfloat16 *X;
  __nv_bfloat16 *Y;
  float *W; // the f32 twin of the heavy rows
};

__device__ inline void acc4(float a[4], uint2 u) {
  const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&u);
  float2 p = __bfloat1622float2(h[0]), q = __bfloat1622float2(h[1]);
  a[0] += p.x, a[1] += p.y, a[2] += q.x, a[3] += q.y;
}
__device__ inline void acc8(float a[8], uint4 u) {
  const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&u);
  for (int j = 0; j < 4; j++) {
    float2 p = __bfloat1622float2(h[j]);
    a[2 * j] += p.x, a[2 * j + 1] += p.y;
  }
}
template <int N> __device__ inline void store(const Dev &d, int v, int f0, const float *a) {
  int deg = d.ptr[v + 1] - d.ptr[v];
  if (deg > G) {
    for (int j = 0; j < N; j++) atomicAdd(&d.W[(size_t)v * d.F + f0 + j], a[j]);
    return;
  }
  __align__(16) __nv_bfloat162 o[N / 2];
  for (int j = 0; j < N / 2; j++) o[j] = __floats2bfloat162_rn(a[2 * j], a[2 * j + 1]);
  if (N == 4) *reinterpret_cast<uint2 *>(&d.Y[(size_t)v * d.F + f0]) = *reinterpret_cast<uint2 *>(o);
  else *reinterpret_cast<uint4 *>(&d.Y[(size_t)v * d.F + f0]) = *reinterpret_cast<uint4 *>(o);
}

// F = 128: a warp a group, 4 features a lane
__global__ void __launch_bounds__(128, 16) warp8(Dev d) {
  int g = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (g >= d.ngroups) return;
  int k = d.gfirst[g], end = d.gend[g], f0 = 4 * lane;
  float a[4] = {0, 0, 0, 0};
  for (; k + 4 <= end; k += 4) {
    uint2 u[4];
    for (int j = 0; j < 4; j++)
      u[j] = __ldg(reinterpret_cast<const uint2 *>(&d.X[(size_t)d.src[k + j] * d.F + f0]));
    for (int j = 0; j < 4; j++) acc4(a, u[j]);
  }
  for (; k < end; k++)
    acc4(a, __ldg(reinterpret_cast<const uint2 *>(&d.X[(size_t)d.src[k] * d.F + f0])));
  store<4>(d, d.gdst[g], f0, a);
}

// F = 128: a warp a group, the halves on alternate edges, 8 features a lane
__global__ void __launch_bounds__(128, 16) halves(Dev d) {
  int g = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (g >= d.ngroups) return;
  int h = lane >> 4, f0 = 8 * (lane & 15);
  int k = d.gfirst[g] + h, end = d.gend[g];
  float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (; k + 6 < end; k += 8) { // four edges of this half: k, k+2, k+4, k+6
    uint4 u[4];
    for (int j = 0; j < 4; j++)
      u[j] = __ldg(reinterpret_cast<const uint4 *>(&d.X[(size_t)d.src[k + 2 * j] * d.F + f0]));
    for (int j = 0; j < 4; j++) acc8(a, u[j]);
  }
  for (; k < end; k += 2)
    acc8(a, __ldg(reinterpret_cast<const uint4 *>(&d.X[(size_t)d.src[k] * d.F + f0])));
  for (int j = 0; j < 8; j++) a[j] += __shfl_xor_sync(0xffffffffu, a[j], 16);
  if (h == 0) store<8>(d, d.gdst[g], f0, a);
}

// F = 128: a half-warp a group (two groups a warp), 8 features a lane
__global__ void __launch_bounds__(128, 16) teams(Dev d) {
  int g = (blockIdx.x * blockDim.x + threadIdx.x) >> 4, lane = threadIdx.x & 15;
  if (g >= d.ngroups) return;
  int k = d.gfirst[g], end = d.gend[g], f0 = 8 * lane;
  float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (; k + 4 <= end; k += 4) {
    uint4 u[4];
    for (int j = 0; j < 4; j++)
      u[j] = __ldg(reinterpret_cast<const uint4 *>(&d.X[(size_t)d.src[k + j] * d.F + f0]));
    for (int j = 0; j < 4; j++) acc8(a, u[j]);
  }
  for (; k < end; k++)
    acc8(a, __ldg(reinterpret_cast<const uint4 *>(&d.X[(size_t)d.src[k] * d.F + f0])));
  store<8>(d, d.gdst[g], f0, a);
}

// the heavy rows from the twin (untimed)
__global__ void finish(Dev d) {
  int v = blockIdx.x, f = threadIdx.x;
  if (d.ptr[v + 1] - d.ptr[v] > G && f < d.F)
    d.Y[(size_t)v * d.F + f] = __float2bfloat16_rn(d.W[(size_t)v * d.F + f]);
  else if (d.ptr[v + 1] == d.ptr[v] && f < d.F)
    d.Y[(size_t)v * d.F + f] = __float2bfloat16_rn(0.0f);
}

static void read_mtx(const char *path, int &nv, std::vector<int> &rows, std::vector<int> &cols) {
  FILE *f = fopen(path, "r");
  if (!f) { perror(path); exit(2); }
  char line[1024];
  bool sym = false, first = true;
  long nr = 0, nc = 0, nnz = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '%') {
      if (first && strstr(line, "symmetric")) sym = true;
      first = false;
      continue;
    }
    if (sscanf(line, "%ld %ld %ld", &nr, &nc, &nnz) != 3) { fprintf(stderr, "%s: bad size line\n", path); exit(2); }
    break;
  }
  nv = (int)std::max(nr, nc);
  long r, c;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "%ld %ld", &r, &c) != 2) continue;
    rows.push_back((int)r - 1), cols.push_back((int)c - 1);
    if (sym && r != c) rows.push_back((int)c - 1), cols.push_back((int)r - 1);
  }
  fclose(f);
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: halves graph.mtx [F]\n"); return 2; }
  int F = argc > 2 ? atoi(argv[2]) : 128;
  if (F != 128) { fprintf(stderr, "this stand-in is written for F = 128\n"); return 2; }
  int nv;
  std::vector<int> r, c;
  read_mtx(argv[1], nv, r, c);
  long ne = (long)r.size();
  // CSR by destination (the column), sources from the rows
  std::vector<int> ptr(nv + 1, 0), src(ne);
  for (long i = 0; i < ne; i++) ptr[c[i] + 1]++;
  for (int v = 0; v < nv; v++) ptr[v + 1] += ptr[v];
  std::vector<int> at(ptr.begin(), ptr.end() - 1);
  for (long i = 0; i < ne; i++) src[at[c[i]]++] = r[i];
  std::vector<int> gdst, gfirst, gend;
  for (int v = 0; v < nv; v++)
    for (int k = ptr[v]; k < ptr[v + 1]; k += G)
      gdst.push_back(v), gfirst.push_back(k), gend.push_back(std::min(k + G, ptr[v + 1]));
  int ng = (int)gdst.size();
  std::vector<__nv_bfloat16> X((size_t)nv * F);
  std::vector<float> Xf((size_t)nv * F);
  unsigned s = 12345;
  for (size_t i = 0; i < X.size(); i++) {
    s = s * 1664525u + 1013904223u;
    X[i] = __float2bfloat16_rn((float)(s >> 8) / (1 << 24) - 0.5f);
    Xf[i] = __bfloat162float(X[i]);
  }
  std::vector<double> ref((size_t)nv * F, 0.0);
  for (int v = 0; v < nv; v++)
    for (int k = ptr[v]; k < ptr[v + 1]; k++)
      for (int f = 0; f < F; f++) ref[(size_t)v * F + f] += Xf[(size_t)src[k] * F + f];

  Dev d{ng, nv, F};
  int *p[5];
  const std::vector<int> *h[5] = {&gdst, &gfirst, &gend, &ptr, &src};
  for (int i = 0; i < 5; i++) {
    CK(cudaMalloc(&p[i], std::max<size_t>(1, h[i]->size()) * sizeof(int)));
    CK(cudaMemcpy(p[i], h[i]->data(), h[i]->size() * sizeof(int), cudaMemcpyHostToDevice));
  }
  d.gdst = p[0], d.gfirst = p[1], d.gend = p[2], d.ptr = p[3], d.src = p[4];
  __nv_bfloat16 *dX, *dY;
  float *dW;
  CK(cudaMalloc(&dX, X.size() * 2));
  CK(cudaMalloc(&dY, X.size() * 2));
  CK(cudaMalloc(&dW, X.size() * 4));
  CK(cudaMemcpy(dX, X.data(), X.size() * 2, cudaMemcpyHostToDevice));
  d.X = dX, d.Y = dY, d.W = dW;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s: |V| %d, |E| %ld, %d groups of <= %d, F %d, %s\n", argv[1], nv, ne, ng, G, F, prop.name);

  struct K { const char *name; void (*fn)(Dev); int per_warp; } ks[] = {
      {"warp8", warp8, 1}, {"halves", halves, 1}, {"teams", teams, 2}};
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<__nv_bfloat16> Y(X.size());
  for (int round = 0; round < 2; round++)
    for (auto &k : ks) {
      int warps = (ng + k.per_warp - 1) / k.per_warp;
      int blocks = (warps + 3) / 4;
      std::vector<float> t;
      for (int rep = 0; rep < 60; rep++) { // the twin's sums grow: speed is the same
        CK(cudaEventRecord(e0));
        k.fn<<<blocks, 128>>>(d);
        CK(cudaEventRecord(e1));
        CK(cudaGetLastError());
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (rep >= 10) t.push_back(ms);
      }
      CK(cudaMemset(dW, 0, X.size() * 4)); // one checked run
      k.fn<<<blocks, 128>>>(d);
      finish<<<nv, 128>>>(d);
      CK(cudaGetLastError());
      CK(cudaMemcpy(Y.data(), dY, Y.size() * 2, cudaMemcpyDeviceToHost));
      double num = 0, den = 0;
      for (size_t i = 0; i < Y.size(); i++) {
        double e = (double)__bfloat162float(Y[i]) - ref[i];
        num += e * e, den += ref[i] * ref[i];
      }
      double rel = std::sqrt(num / (den > 0 ? den : 1));
      std::sort(t.begin(), t.end());
      printf("round %d %-7s %.4f ms (median of %zu)  relative L2 %.2g %s\n", round, k.name,
             t[t.size() / 2], t.size(), rel, rel < 1e-2 ? "ok" : "WRONG");
      CK(cudaMemset(dY, 0xff, Y.size() * 2)); // poison before the next form
    }
  return 0;
}
