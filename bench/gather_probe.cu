// bench/gather_probe.cu: how fast can the SMs gather whole feature rows
// from L2, and from DRAM, when each row is wanted once? An experiment, not
// part of gop: bench/ceiling.py divides by the rates it measures (and
// gop_gather_cache takes them as its defaults; issue 37: graphs above 1M
// edges at F >= 128 at 40% of the fewest-bytes bound; a sum gathers one
// source row per edge).
//
//   gather_probe [--F 16,32,64,128,256] [--reps 20]
//
// A warp takes a chunk of 64 row ids drawn uniformly at random from the M
// rows of X (F floats each), loads the rows (a float4 a lane per 128
// features, four loads in flight, ld.global.nc as gop's kernels do; rows
// under 128 features in teams of F / 4 lanes, several rows a load), sums
// them and writes the sum once per chunk, as a neighbour group does. X
// sizes from 8 MB (in L2, far beyond L1: an SM's L1 holds under 3% of the
// rows) to 4 GB (DRAM). Prints per F and size the gathered bytes over the
// median time (GB/s), and the copy rate (cudaMemcpy device to device, 1
// GiB, read + written) beside it. Then chunks of 8 ids (16 MB of rows):
// short chains, as the groups of a graph of a few in-edges a vertex are.
// The sums are checked against the host for the smallest size and the
// short chunks (relative L2 under 1e-5, else WRONG).
#include <cuda_runtime.h>

#include "probe_graph.h"

#include <cstdint>

enum { U = 4 };

template <int CHUNK>
__global__ void __launch_bounds__(256)
    gather(long nchunks, int slices, const int *__restrict__ ids, const float4 *__restrict__ X,
           float4 *Y, int F4) {
  long w = (blockIdx.x * (long)blockDim.x + threadIdx.x) >> 5;
  int lane = threadIdx.x & 31;
  if (w >= nchunks * slices) return;
  long chunk = w / slices;
  /* F4 >= 32: a float4 a lane, the row's slices on separate warps; F4 < 32:
   * teams of F4 lanes, 32 / F4 rows a load, as gop's spmm_teams */
  int team = F4 < 32 ? F4 : 32, rows = 32 / team, r = lane / team;
  int f4 = (int)(w % slices) * 32 + lane % team;
  const int *id = ids + chunk * CHUNK;
  int my = lane < CHUNK ? id[lane] : 0, my2 = CHUNK > 32 ? id[32 + lane] : 0;
  float4 acc = probe_chunk_sum<CHUNK, U>(my, my2, r, rows, X, F4, f4);
  probe_team_sum(acc, team); // the teams' partial sums of the chunk's rows
  if (r == 0) Y[chunk * F4 + f4] = acc;
}

int main(int argc, char **argv) {
  ProbeArgs a = probe_args(argc, argv, {16, 32, 64, 128, 256});
  ProbeDevice dev = probe_device();
  cudaEvent_t e0 = dev.e0, e1 = dev.e1;
  double copy = dev.ceiling;
  probe_print_device(dev);
  printf("F,chunk,x_mb,rows,gathers,median_ms,gather_gbps,of_copy,check\n");
  const long gathers = 1l << 24; // 16M rows gathered per run
  int *d_ids;
  CK(cudaMalloc(&d_ids, gathers * sizeof(int)));
  const double sizes_mb[] = {8, 16, 32, 48, 4096};
  for (int F : a.Fs) {
    if (F < 4 || (F < 128 && 128 % F) || (F > 128 && F % 128)) {
      fprintf(stderr, "gather_probe: F = %d: 4, 8, ... 128 or a multiple of 128\n", F);
      return 2;
    }
    int F4 = F / 4, slices = F > 128 ? F / 128 : 1;
    for (int chunk : {64, 8})
    for (double mb : sizes_mb) {
      if (chunk != 64 && mb != 16) continue; /* short chains: in L2 only */
      long rows = (long)(mb * 1e6 / (F * 4.0));
      std::vector<int> ids(gathers);
      uint64_t z = 0x9e3779b97f4a7c15ull ^ (uint64_t)rows;
      for (long i = 0; i < gathers; ++i) {
        z ^= z << 13, z ^= z >> 7, z ^= z << 17;
        ids[i] = (int)(z % (uint64_t)rows);
      }
      CK(cudaMemcpy(d_ids, ids.data(), gathers * sizeof(int), cudaMemcpyHostToDevice));
      std::vector<float> hx = probe_features(rows, F);
      float4 *d_x, *d_y;
      CK(cudaMalloc(&d_x, hx.size() * sizeof(float)));
      CK(cudaMemcpy(d_x, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
      long nchunks = gathers / chunk;
      CK(cudaMalloc(&d_y, nchunks * F * sizeof(float)));
      long warps = nchunks * slices;
      unsigned blocks = (unsigned)((warps * 32 + 255) / 256);
      auto run = [&] {
        if (chunk == 64) gather<64><<<blocks, 256>>>(nchunks, slices, d_ids, d_x, d_y, F4);
        else gather<8><<<blocks, 256>>>(nchunks, slices, d_ids, d_x, d_y, F4);
      };
      run();
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      const char *check = "-";
      if (mb == sizes_mb[0] || chunk != 64) { // the host sum of every chunk's rows
        std::vector<double> ref((size_t)nchunks * F, 0.0);
        for (long c = 0; c < nchunks; ++c)
          for (int k = 0; k < chunk; ++k) {
            const float *x = &hx[(size_t)ids[c * chunk + k] * F];
            for (int f = 0; f < F; ++f) ref[(size_t)c * F + f] += x[f];
          }
        check = probe_rel_l2(d_y, ref) < 1e-5 ? "ok" : "WRONG";
      }
      std::vector<float> ms;
      for (int r = 0; r < a.reps; ++r) ms.push_back(time_ms(e0, e1, run));
      std::sort(ms.begin(), ms.end());
      double med = ms[ms.size() / 2];
      double gbps = (double)gathers * F * 4 / (med * 1e-3) / 1e9;
      printf("%d,%d,%.0f,%ld,%ld,%.4f,%.1f,%.3f,%s\n", F, chunk, mb, rows, gathers, med, gbps, gbps / copy,
             check);
      fflush(stdout);
      CK(cudaFree(d_x));
      CK(cudaFree(d_y));
    }
  }
  CK(cudaFree(d_ids));
  return 0;
}
