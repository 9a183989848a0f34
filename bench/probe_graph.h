// bench/probe_graph.h: what the standalone CUDA experiments in bench/
// (tc_probe.cu, l2_probe.cu, panel_probe.cu, gather_probe.cu) share: their
// command line, a graph file read into CSR by destination, the CUDA error
// check, a host-to-device copy, the features and the host sum they are
// checked against, and event timing. Not part of gop: the experiments
// decide whether a technique is worth building.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#define CK(x)                                                                      \
  do {                                                                             \
    cudaError_t e_ = (x);                                                          \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

struct Graph {
  int n = 0;
  std::vector<int> ptr, src; // CSR by destination, sources ascending
};

static inline bool read_graph(const char *path, Graph &g) {
  std::string cmd = std::string("gzip -dc '") + path + "'";
  FILE *f = popen(cmd.c_str(), "r");
  if (!f) return false;
  char line[256];
  long n = -1, m = 0, nnz = 0;
  bool symmetric = false; // an entry (i, j) is also (j, i), as gop reads it
  while (fgets(line, sizeof line, f))
    if (line[0] == '%') {
      if (!strncmp(line, "%%MatrixMarket", 14) && strstr(line, "symmetric")) symmetric = true;
    } else {
      if (sscanf(line, "%ld %ld %ld", &n, &m, &nnz) != 3) n = -1;
      break;
    }
  if (n <= 0 || n != m) {
    pclose(f);
    fprintf(stderr, "%s: not a square Matrix Market coordinate file\n", path);
    return false;
  }
  std::vector<std::pair<int, int>> arcs; // (dst, src)
  arcs.reserve(nnz);
  long i, j;
  while (fscanf(f, "%ld %ld%*[^\n]", &i, &j) == 2) {
    arcs.push_back({(int)(j - 1), (int)(i - 1)});
    if (symmetric && i != j) arcs.push_back({(int)(i - 1), (int)(j - 1)});
  }
  pclose(f);
  std::sort(arcs.begin(), arcs.end());
  g.n = (int)n;
  g.ptr.assign(n + 1, 0);
  g.src.resize(arcs.size());
  for (size_t k = 0; k < arcs.size(); ++k) {
    g.ptr[arcs[k].first + 1]++;
    g.src[k] = arcs[k].second;
  }
  for (long v = 0; v < n; ++v) g.ptr[v + 1] += g.ptr[v];
  return true;
}

template <class T> static inline T *up(const std::vector<T> &v) {
  T *d;
  CK(cudaMalloc(&d, std::max<size_t>(1, v.size()) * sizeof(T)));
  if (!v.empty()) CK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// The graph's name: the file's base name up to its first dot.
static inline std::string graph_name(const char *path) {
  std::string name = path;
  name = name.substr(name.find_last_of('/') + 1);
  return name.substr(0, name.find('.'));
}

// The command line: [--F W,W,...] [--reps N] GRAPH.mtx.gz ...; the widths
// default to `Fs`.
struct ProbeArgs {
  std::vector<int> Fs;
  int reps = 20;
  std::vector<const char *> paths;
};

static inline ProbeArgs probe_args(int argc, char **argv, std::vector<int> Fs) {
  ProbeArgs a;
  a.Fs = std::move(Fs);
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--F") && i + 1 < argc) {
      a.Fs.clear();
      for (char *s = strtok(argv[++i], ","); s; s = strtok(nullptr, ",")) a.Fs.push_back(atoi(s));
    } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      a.reps = atoi(argv[++i]);
    } else {
      a.paths.push_back(argv[i]);
    }
  }
  return a;
}

// The experiments' features: n x F values in [-1, 1) from a fixed seed.
static inline std::vector<float> probe_features(long n, int F) {
  std::vector<float> hx((size_t)n * F);
  uint64_t s = 12345;
  for (auto &x : hx) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = (float)((s >> 40) & 0xFFFF) / 32768.f - 1.f;
  }
  return hx;
}

// Y = the sum over each destination's in-edges of X's source rows, on the
// host in double: the reference the experiments' outputs are checked with.
static inline std::vector<double> probe_host_sum(const Graph &g, const std::vector<float> &hx,
                                                  int F) {
  std::vector<double> ref((size_t)g.n * F, 0.0);
  for (int v = 0; v < g.n; ++v)
    for (int e = g.ptr[v]; e < g.ptr[v + 1]; ++e)
      for (int f = 0; f < F; ++f) ref[(size_t)v * F + f] += hx[(size_t)g.src[e] * F + f];
  return ref;
}

// Milliseconds between events e0 and e1 recorded around what `body`
// enqueues on the default stream.
template <class Body> static inline float time_ms(cudaEvent_t e0, cudaEvent_t e1, Body body) {
  CK(cudaEventRecord(e0));
  body();
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  return ms;
}

// The device's copy rate in GB/s (read + written): the median of 10
// cudaMemcpy device to device of `bytes` from `src`.
static inline double probe_copy_ceiling_gbps(const void *src, size_t bytes, cudaEvent_t e0,
                                             cudaEvent_t e1) {
  void *dst;
  CK(cudaMalloc(&dst, bytes));
  std::vector<float> ms;
  for (int i = 0; i < 10; ++i)
    ms.push_back(time_ms(e0, e1, [&] { CK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice)); }));
  CK(cudaFree(dst));
  std::sort(ms.begin(), ms.end());
  return 2.0 * bytes / (ms[5] * 1e-3) / 1e9;
}

// The device, two events for time_ms and the copy rate (a 1 GiB copy, as
// probe_copy_ceiling_gbps measures it); probe_print_device writes the
// `# NAME l2_mb=... copy_ceiling_gbps=...` line the experiments' CSVs
// start with.
struct ProbeDevice {
  cudaDeviceProp prop;
  cudaEvent_t e0, e1;
  double ceiling;
};

static inline ProbeDevice probe_device() {
  ProbeDevice d;
  CK(cudaGetDeviceProperties(&d.prop, 0));
  CK(cudaEventCreate(&d.e0));
  CK(cudaEventCreate(&d.e1));
  size_t gib = (size_t)1 << 30;
  void *big;
  CK(cudaMalloc(&big, gib));
  CK(cudaMemset(big, 0, gib));
  d.ceiling = probe_copy_ceiling_gbps(big, gib, d.e0, d.e1);
  CK(cudaFree(big));
  return d;
}

static inline void probe_print_device(const ProbeDevice &d) {
  printf("# %s sms=%d l2_mb=%.1f copy_ceiling_gbps=%.1f\n", d.prop.name,
         d.prop.multiProcessorCount, d.prop.l2CacheSize / 1048576.0, d.ceiling);
}

// Adds the float4 sums of a warp's teams of `team` lanes (a power of two)
// into the first team: lane t < team ends with the sum over lanes t,
// t + team, t + 2 team, ...
__device__ __forceinline__ void probe_team_sum(float4 &acc, int team) {
  for (int o = 16; o >= team; o >>= 1) {
    acc.x += __shfl_down_sync(0xffffffffu, acc.x, o);
    acc.y += __shfl_down_sync(0xffffffffu, acc.y, o);
    acc.z += __shfl_down_sync(0xffffffffu, acc.z, o);
    acc.w += __shfl_down_sync(0xffffffffu, acc.w, o);
  }
}

// The sum of a warp's chunk of N <= 64 row ids (lane l holds ids l in
// `my` and 32 + l in `my2`; a negative id is no row) over its teams of
// 32 / rows lanes: team r of `rows` reads ids r, r + rows, ..., U of them
// in flight, each lane the float4 f4 of its rows of X (F4 float4s a row),
// ld.global.nc as gop's kernels. The teams' partial sums are left apart
// (probe_team_sum adds them).
template <int N, int U>
__device__ __forceinline__ float4 probe_chunk_sum(int my, int my2, int r, int rows,
                                                  const float4 *__restrict__ X, size_t F4,
                                                  int f4) {
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int j = 0; j < N; j += U * rows) {
    float4 x[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      int k = j + u * rows + r;
      int s = __shfl_sync(0xffffffffu, k < 32 ? my : my2, k & 31);
      x[u] = k < N && s >= 0 ? __ldg(X + (size_t)s * F4 + f4) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) acc.x += x[u].x, acc.y += x[u].y, acc.z += x[u].z, acc.w += x[u].w;
  }
  return acc;
}

// The relative L2 difference of the device's `ref.size()` floats at d_y
// from the host reference.
static inline double probe_rel_l2(const void *d_y, const std::vector<double> &ref) {
  std::vector<float> hy(ref.size());
  CK(cudaMemcpy(hy.data(), d_y, hy.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (size_t k = 0; k < hy.size(); ++k) {
    double d = hy[k] - ref[k];
    num += d * d, den += ref[k] * ref[k];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}
