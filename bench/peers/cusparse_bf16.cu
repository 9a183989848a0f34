/*
 * bench/peers/cusparse_bf16.cu: cuSPARSE's bf16 SpMM as the peer of gop's
 * bf16 sum aggregation (issue 19).
 *
 *   copy_u_sum  Y = A * X, A[dst][src] = 1, X and Y bf16 [|V|, F] row-major,
 *               A's values bf16, compute type CUDA_R_32F (f32 accumulation),
 *               cusparseSpMM with CSR_ALG1, CSR_ALG2 and the default; and
 *               the same in f32 for the ratio.
 *
 * Usage: cusparse_bf16 --F 128,256 --name NAME GRAPH.mtx (plain Matrix
 * Market; entry i j = arc i -> j; `symmetric` adds j -> i). Each result is
 * checked once against a CPU sum of the same bf16 inputs in double
 * (relative L2 under 1.5e-2, gop's bf16 limit), then timed: the median of
 * 20 runs after 3 warm-ups. Output: CSV rows `peer,op,graph,V,E,F,dtype,
 * alg,time_ms,ok` on stdout.
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(call)                                                                    \
  do {                                                                              \
    cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) {                                                        \
      fprintf(stderr, "cusparse_bf16: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)
#define SP(call) ((call) == CUSPARSE_STATUS_SUCCESS)

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* bf16 bits of a float, rounded to nearest even (as gop's ir_bf16_from_float) */
static uint16_t bf16_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  u += 0x7fffu + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}
static float bf16_float(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float x;
  memcpy(&x, &u, 4);
  return x;
}

int main(int argc, char **argv) {
  const char *path = NULL, *name = "graph", *flist = "128,256";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--F") && i + 1 < argc) flist = argv[++i];
    else if (!strcmp(argv[i], "--name") && i + 1 < argc) name = argv[++i];
    else path = argv[i];
  }
  if (!path) {
    fprintf(stderr, "usage: cusparse_bf16 [--F 128,256] [--name N] GRAPH.mtx\n");
    return 2;
  }
  FILE *f = fopen(path, "r");
  if (!f) { perror(path); return 1; }
  char line[512];
  bool sym = false, header = true;
  long long nr = 0, nc = 0, nnz = 0, k = 0;
  long long *src = NULL, *dst = NULL;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '%') {
      if (!strncmp(line, "%%MatrixMarket", 14) && strstr(line, "symmetric")) sym = true;
      continue;
    }
    if (header) {
      if (sscanf(line, "%lld %lld %lld", &nr, &nc, &nnz) != 3) continue;
      header = false;
      src = (long long *)malloc(sizeof *src * (size_t)(2 * nnz + 1));
      dst = (long long *)malloc(sizeof *dst * (size_t)(2 * nnz + 1));
      continue;
    }
    long long i, j;
    if (sscanf(line, "%lld %lld", &i, &j) != 2) continue;
    src[k] = i - 1, dst[k] = j - 1, k++;
    if (sym && i != j) src[k] = j - 1, dst[k] = i - 1, k++;
  }
  fclose(f);
  int nv = (int)(nr > nc ? nr : nc);
  long long ne = k;
  /* CSR by destination */
  int *ptr = (int *)calloc((size_t)nv + 1, sizeof(int)), *col = (int *)malloc(sizeof(int) * (size_t)ne);
  for (long long e = 0; e < ne; e++) ptr[dst[e] + 1]++;
  for (int v = 0; v < nv; v++) ptr[v + 1] += ptr[v];
  int *fill = (int *)malloc(sizeof(int) * (size_t)nv);
  memcpy(fill, ptr, sizeof(int) * (size_t)nv);
  for (long long e = 0; e < ne; e++) col[fill[dst[e]]++] = (int)src[e];
  cusparseHandle_t h;
  if (!SP(cusparseCreate(&h))) { fprintf(stderr, "cusparseCreate failed\n"); return 1; }
  int *dptr, *dcol;
  CK(cudaMalloc(&dptr, sizeof(int) * ((size_t)nv + 1)));
  CK(cudaMalloc(&dcol, sizeof(int) * (size_t)ne));
  CK(cudaMemcpy(dptr, ptr, sizeof(int) * ((size_t)nv + 1), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dcol, col, sizeof(int) * (size_t)ne, cudaMemcpyHostToDevice));
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  printf("peer,op,graph,V,E,F,dtype,alg,time_ms,ok\n");
  const char *p = flist;
  while (*p) {
    int F = atoi(p);
    while (*p && *p != ',') p++;
    if (*p == ',') p++;
    if (F <= 0) continue;
    size_t n = (size_t)nv * (size_t)F;
    uint16_t *xb = (uint16_t *)malloc(2 * n), *yb = (uint16_t *)malloc(2 * n);
    float *xf = (float *)malloc(4 * n), *yf = (float *)malloc(4 * n);
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < n; i++) {
      s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
      float r = (float)((s * 2685821657736338717ull) >> 40) / 16777216.0f * 2 - 1;
      xb[i] = bf16_bits(r);
      xf[i] = bf16_float(xb[i]); /* the same values in f32 */
    }
    double *ref = (double *)calloc(n, sizeof(double));
    for (int v = 0; v < nv; v++)
      for (int e = ptr[v]; e < ptr[v + 1]; e++)
        for (int c = 0; c < F; c++) ref[(size_t)v * F + c] += xf[(size_t)col[e] * F + c];
    for (int dt = 0; dt < 2; dt++) {
      bool bf = dt == 0;
      cudaDataType ty = bf ? CUDA_R_16BF : CUDA_R_32F;
      size_t es = bf ? 2 : 4;
      void *dval, *dx, *dy;
      CK(cudaMalloc(&dval, es * (size_t)ne));
      CK(cudaMalloc(&dx, es * n));
      CK(cudaMalloc(&dy, es * n));
      void *ones = malloc(es * (size_t)ne);
      for (long long e = 0; e < ne; e++) {
        if (bf) ((uint16_t *)ones)[e] = bf16_bits(1.0f);
        else ((float *)ones)[e] = 1.0f;
      }
      CK(cudaMemcpy(dval, ones, es * (size_t)ne, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(dx, bf ? (void *)xb : (void *)xf, es * n, cudaMemcpyHostToDevice));
      free(ones);
      cusparseSpMatDescr_t A;
      cusparseDnMatDescr_t X, Y;
      if (!SP(cusparseCreateCsr(&A, nv, nv, ne, dptr, dcol, dval, CUSPARSE_INDEX_32I,
                                CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, ty)) ||
          !SP(cusparseCreateDnMat(&X, nv, F, F, dx, ty, CUSPARSE_ORDER_ROW)) ||
          !SP(cusparseCreateDnMat(&Y, nv, F, F, dy, ty, CUSPARSE_ORDER_ROW))) {
        fprintf(stderr, "descriptor creation failed\n");
        return 1;
      }
      const float one = 1, zero = 0;
      const struct { cusparseSpMMAlg_t alg; const char *name; } algs[] = {
          {CUSPARSE_SPMM_ALG_DEFAULT, "default"},
          {CUSPARSE_SPMM_CSR_ALG1, "csr_alg1"},
          {CUSPARSE_SPMM_CSR_ALG2, "csr_alg2"},
      };
      for (int a = 0; a < 3; a++) {
        size_t sz = 0;
        void *buf = NULL;
        cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
        if (!SP(cusparseSpMM_bufferSize(h, op, op, &one, A, X, &zero, Y, CUDA_R_32F,
                                        algs[a].alg, &sz))) {
          printf("# %s %s F=%d: %s refused\n", name, bf ? "bf16" : "f32", F, algs[a].name);
          continue;
        }
        if (sz) CK(cudaMalloc(&buf, sz));
        if (!SP(cusparseSpMM_preprocess(h, op, op, &one, A, X, &zero, Y, CUDA_R_32F,
                                        algs[a].alg, buf)) ||
            !SP(cusparseSpMM(h, op, op, &one, A, X, &zero, Y, CUDA_R_32F, algs[a].alg, buf))) {
          printf("# %s %s F=%d: %s failed\n", name, bf ? "bf16" : "f32", F, algs[a].name);
          if (buf) cudaFree(buf);
          continue;
        }
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(bf ? (void *)yb : (void *)yf, dy, es * n, cudaMemcpyDeviceToHost));
        double d2 = 0, r2 = 0;
        for (size_t i = 0; i < n; i++) {
          double g = bf ? bf16_float(yb[i]) : yf[i];
          d2 += (g - ref[i]) * (g - ref[i]);
          r2 += ref[i] * ref[i];
        }
        double rel = r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
        bool ok = rel < (bf ? 1.5e-2 : 1e-4);
        double ms[20];
        for (int r = 0; r < 23; r++) {
          CK(cudaEventRecord(t0));
          cusparseSpMM(h, op, op, &one, A, X, &zero, Y, CUDA_R_32F, algs[a].alg, buf);
          CK(cudaEventRecord(t1));
          CK(cudaEventSynchronize(t1));
          float t;
          CK(cudaEventElapsedTime(&t, t0, t1));
          if (r >= 3) ms[r - 3] = t;
        }
        qsort(ms, 20, sizeof ms[0], cmp_double);
        printf("cusparse,copy_u_sum,%s,%d,%lld,%d,%s,%s,%.4f,%s\n", name, nv, ne, F,
               bf ? "bf16" : "f32", algs[a].name, (ms[9] + ms[10]) / 2, ok ? "ok" : "WRONG");
        if (!ok) printf("# relative L2 %.3g\n", rel);
        if (buf) cudaFree(buf);
      }
      cusparseDestroySpMat(A);
      cusparseDestroyDnMat(X);
      cusparseDestroyDnMat(Y);
      cudaFree(dval);
      cudaFree(dx);
      cudaFree(dy);
    }
    free(xb); free(yb); free(xf); free(yf); free(ref);
    fflush(stdout);
  }
  return 0;
}
