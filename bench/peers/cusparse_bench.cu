/*
 * bench/peers/cusparse_bench.cu: cuSPARSE as a peer of gop.
 *
 * Reads graphs from plain Matrix Market files (entry i j = arc i -> j) and
 * times, for each feature width F, the operators gop is measured against:
 *
 *   u_mul_e_sum  Y = A * X, A[dst][src] = w[e]   cusparseSpMM, every CSR and
 *   copy_u_sum   Y = A * X, A[dst][src] = 1      COO algorithm, and the best
 *   u_dot_v      S[e] = X[src(e)] . Z[dst(e)]    cusparseSDDMM
 *
 * A is the CSR of the graph by destination (row v holds v's in-edges, the
 * sources ascending), so aggregation is a plain non-transposed SpMM and the
 * edge order of every edge tensor is that CSR order. X, Y and Z are
 * row-major [|V|, F]. Buffers, descriptors and preprocessing are made once,
 * outside the timed region; each result is checked once against a float64
 * CPU computation (relative L2 < 1e-4) before it is timed. Timing: by
 * default the timed calls are captured into a CUDA graph and its replays
 * timed (--timing graph; --timing events times each round between events,
 * launched from the host), as gop_bench times gop (bench/README.md,
 * Timing). Output: CSV rows
 * `peer,op,graph,V,E,F,time_ms,gbps,frac_of_bound,ok,timing,graph_calls` on
 * stdout, facts on `#` lines; bench/README.md gives the fewest-bytes
 * formulas.
 *
 * Written in C except where CUDA forces C++ (nvcc compiles .cu as C++).
 */
#include <cuda_runtime.h>
#include <cusparse.h>

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CK_CUDA(call)                                                        \
    do {                                                                     \
        cudaError_t e_ = (call);                                             \
        if (e_ != cudaSuccess) {                                             \
            fprintf(stderr, "cusparse_bench: %s:%d: %s failed: %s (%s)\n",   \
                    __FILE__, __LINE__, #call, cudaGetErrorName(e_),         \
                    cudaGetErrorString(e_));                                 \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

#define CK_SP(call)                                                          \
    do {                                                                     \
        cusparseStatus_t s_ = (call);                                        \
        if (s_ != CUSPARSE_STATUS_SUCCESS) {                                 \
            fprintf(stderr, "cusparse_bench: %s:%d: %s failed: %s (%s)\n",   \
                    __FILE__, __LINE__, #call, cusparseGetErrorName(s_),     \
                    cusparseGetErrorString(s_));                             \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* A call that may legitimately refuse (an algorithm that does not support
 * this case): returns 0 and prints a `#` line naming the call instead of
 * exiting, so that the other algorithms still run. */
#define SOFT_SP(call, what)                                                  \
    soft_sp((call), #call, (what))

static int soft_sp(cusparseStatus_t s, const char *call, const char *what)
{
    if (s == CUSPARSE_STATUS_SUCCESS)
        return 1;
    printf("# skip %s: %s returned %s (%s)\n", what, call,
           cusparseGetErrorName(s), cusparseGetErrorString(s));
    fflush(stdout);
    return 0;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "cusparse_bench: out of host memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

/* ---- the graph ---------------------------------------------------------- */

typedef struct {
    int64_t nv, ne;
    int *rowptr; /* nv + 1: in-edges of destination v are [rowptr[v], rowptr[v+1]) */
    int *col;    /* ne: source of each in-edge, ascending within a row */
    int *coorow; /* ne: destination of each edge, the same order (COO form) */
} Graph;

typedef struct {
    const char *p, *end, *path;
    long line;
} Lex;

static void lex_fail(const Lex *lx, const char *msg)
{
    fprintf(stderr, "%s:%ld: error: %s\n", lx->path, lx->line, msg);
    exit(1);
}

static void lex_skip_blank(Lex *lx)
{
    while (lx->p < lx->end && (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\r'))
        lx->p++;
}

static void lex_next_line(Lex *lx)
{
    while (lx->p < lx->end && *lx->p != '\n')
        lx->p++;
    if (lx->p < lx->end) {
        lx->p++;
        lx->line++;
    }
}

/* Skips blank lines and `%` comment lines; returns 0 at end of file. */
static int lex_skip_empty(Lex *lx)
{
    for (;;) {
        lex_skip_blank(lx);
        if (lx->p >= lx->end)
            return 0;
        if (*lx->p != '%' && *lx->p != '\n')
            return 1;
        lex_next_line(lx);
    }
}

static int64_t lex_int(Lex *lx, const char *what)
{
    char msg[128];
    int64_t v = 0;
    lex_skip_blank(lx);
    if (lx->p >= lx->end || !isdigit((unsigned char)*lx->p)) {
        snprintf(msg, sizeof msg, "expected %s (a non-negative integer)", what);
        lex_fail(lx, msg);
    }
    while (lx->p < lx->end && isdigit((unsigned char)*lx->p)) {
        if (v > (INT64_MAX - 9) / 10)
            lex_fail(lx, "integer too large");
        v = v * 10 + (*lx->p++ - '0');
    }
    return v;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Reads a Matrix Market coordinate file (pattern, real or integer; general
 * or symmetric, the latter expanded: (i,j) gives i->j and j->i) into the CSR
 * by destination. Exits with file:line: error: on malformed input. */
static void mtx_read(const char *path, Graph *g)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "cusparse_bench: cannot open %s\n", path);
        exit(1);
    }
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    if (size < 0) {
        fprintf(stderr, "cusparse_bench: cannot size %s\n", path);
        exit(1);
    }
    char *buf = (char *)xmalloc((size_t)size + 1);
    if (fread(buf, 1, (size_t)size, fp) != (size_t)size) {
        fprintf(stderr, "cusparse_bench: cannot read %s\n", path);
        exit(1);
    }
    fclose(fp);
    buf[size] = '\0';

    Lex lx = {buf, buf + size, path, 1};
    char head[5][64];
    const char *eol = (const char *)memchr(buf, '\n', (size_t)size);
    size_t hlen = eol ? (size_t)(eol - buf) : (size_t)size;
    char hline[512];
    if (hlen >= sizeof hline)
        hlen = sizeof hline - 1;
    memcpy(hline, buf, hlen);
    hline[hlen] = '\0';
    if (sscanf(hline, "%63s %63s %63s %63s %63s", head[0], head[1], head[2],
               head[3], head[4]) != 5 ||
        strcasecmp(head[0], "%%MatrixMarket") != 0 || strcasecmp(head[1], "matrix") != 0)
        lex_fail(&lx, "not a Matrix Market file (expected '%%MatrixMarket matrix ...')");
    if (strcasecmp(head[2], "coordinate") != 0)
        lex_fail(&lx, "only 'coordinate' Matrix Market files hold graphs");
    if (strcasecmp(head[3], "pattern") != 0 && strcasecmp(head[3], "real") != 0 &&
        strcasecmp(head[3], "integer") != 0 && strcasecmp(head[3], "double") != 0)
        lex_fail(&lx, "field must be pattern, real or integer");
    int symmetric = 0;
    if (strcasecmp(head[4], "symmetric") == 0)
        symmetric = 1;
    else if (strcasecmp(head[4], "general") != 0)
        lex_fail(&lx, "symmetry must be general or symmetric");
    lex_next_line(&lx);

    if (!lex_skip_empty(&lx))
        lex_fail(&lx, "missing the size line (rows cols entries)");
    int64_t rows = lex_int(&lx, "the row count");
    int64_t cols = lex_int(&lx, "the column count");
    int64_t nnz = lex_int(&lx, "the entry count");
    lex_next_line(&lx);
    int64_t nv = rows > cols ? rows : cols;
    if (nv > INT32_MAX - 1 || nnz > (INT32_MAX - 1) / 2)
        lex_fail(&lx, "graph too large for 32-bit indices");

    int64_t cap = symmetric ? 2 * nnz : nnz;
    int *src = (int *)xmalloc((size_t)cap * sizeof(int));
    int *dst = (int *)xmalloc((size_t)cap * sizeof(int));
    int64_t ne = 0;
    char msg[160];
    for (int64_t k = 0; k < nnz; k++) {
        if (!lex_skip_empty(&lx)) {
            snprintf(msg, sizeof msg, "file ends after %lld of %lld entries",
                     (long long)k, (long long)nnz);
            lex_fail(&lx, msg);
        }
        int64_t i = lex_int(&lx, "a row index");
        int64_t j = lex_int(&lx, "a column index");
        if (i < 1 || i > rows) {
            snprintf(msg, sizeof msg, "row index %lld out of range 1..%lld",
                     (long long)i, (long long)rows);
            lex_fail(&lx, msg);
        }
        if (j < 1 || j > cols) {
            snprintf(msg, sizeof msg, "column index %lld out of range 1..%lld",
                     (long long)j, (long long)cols);
            lex_fail(&lx, msg);
        }
        src[ne] = (int)(i - 1); /* entry (i, j) is the arc i -> j */
        dst[ne] = (int)(j - 1);
        ne++;
        if (symmetric && i != j) {
            src[ne] = (int)(j - 1);
            dst[ne] = (int)(i - 1);
            ne++;
        }
        lex_next_line(&lx); /* a value, if any, is ignored */
    }
    if (lex_skip_empty(&lx))
        lex_fail(&lx, "more entries than the size line announces");
    free(buf);

    /* CSR by destination: counting sort on dst, then each row's sources
     * sorted (symmetric expansion leaves them out of order). */
    int *rowptr = (int *)calloc((size_t)nv + 1, sizeof(int));
    int *col = (int *)xmalloc((size_t)ne * sizeof(int));
    int *fill = (int *)xmalloc((size_t)nv * sizeof(int));
    if (!rowptr) {
        fprintf(stderr, "cusparse_bench: out of host memory\n");
        exit(1);
    }
    for (int64_t e = 0; e < ne; e++)
        rowptr[dst[e] + 1]++;
    for (int64_t v = 0; v < nv; v++)
        rowptr[v + 1] += rowptr[v];
    memcpy(fill, rowptr, (size_t)nv * sizeof(int));
    for (int64_t e = 0; e < ne; e++)
        col[fill[dst[e]]++] = src[e];
    for (int64_t v = 0; v < nv; v++) {
        int lo = rowptr[v], hi = rowptr[v + 1];
        for (int k = lo + 1; k < hi; k++) {
            if (col[k - 1] > col[k]) {
                qsort(col + lo, (size_t)(hi - lo), sizeof(int), cmp_int);
                break;
            }
        }
    }
    int *coorow = (int *)realloc(fill, (size_t)(ne ? ne : 1) * sizeof(int));
    if (!coorow) {
        fprintf(stderr, "cusparse_bench: out of host memory\n");
        exit(1);
    }
    for (int64_t v = 0; v < nv; v++)
        for (int k = rowptr[v]; k < rowptr[v + 1]; k++)
            coorow[k] = (int)v;
    free(src);
    free(dst);
    g->nv = nv;
    g->ne = ne;
    g->rowptr = rowptr;
    g->col = col;
    g->coorow = coorow;
}

static void graph_free(Graph *g)
{
    free(g->rowptr);
    free(g->col);
    free(g->coorow);
}

/* ---- inputs and CPU references ----------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static float rng_uniform(float lo, float hi) /* xorshift64*, 24-bit mantissa */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    uint64_t r = rng_state * 0x2545F4914F6CDD1Dull;
    return lo + (hi - lo) * (float)((double)(r >> 40) / 16777216.0);
}

/* y[v] = sum over in-edges k of w[k] * x[col[k]] (w NULL: all ones). */
static void ref_spmm(const Graph *g, const float *w, const float *x, int F, double *y)
{
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t v = 0; v < g->nv; v++) {
        double *yr = y + v * F;
        for (int f = 0; f < F; f++)
            yr[f] = 0.0;
        for (int k = g->rowptr[v]; k < g->rowptr[v + 1]; k++) {
            const float *xr = x + (int64_t)g->col[k] * F;
            double wk = w ? (double)w[k] : 1.0;
            for (int f = 0; f < F; f++)
                yr[f] += wk * (double)xr[f];
        }
    }
}

/* s[k] = x[col[k]] . z[v] for every in-edge k of every v. */
static void ref_sddmm(const Graph *g, const float *x, const float *z, int F, double *s)
{
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t v = 0; v < g->nv; v++) {
        const float *zr = z + v * F;
        for (int k = g->rowptr[v]; k < g->rowptr[v + 1]; k++) {
            const float *xr = x + (int64_t)g->col[k] * F;
            double acc = 0.0;
            for (int f = 0; f < F; f++)
                acc += (double)xr[f] * (double)zr[f];
            s[k] = acc;
        }
    }
}

/* ||got - ref|| / ||ref||; +inf if any element is NaN or infinite (which is
 * how an unwritten, poisoned output shows). */
static double rel_l2(const float *got, const double *ref, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i]))
            return INFINITY;
        double d = (double)got[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* ---- device sets --------------------------------------------------------- */

/* One copy of every input and output on the device. Several copies are
 * rotated when one copy's working set fits in L2, so that the timing does
 * not measure the cache. */
typedef struct {
    int *rowptr, *col, *coorow;
    float *w, *ones, *x, *z, *y, *s;
    cusparseSpMatDescr_t csr_w, csr_1, coo_w, coo_1, csr_s;
    cusparseDnMatDescr_t dx, dz, dy, dxt;
} DevSet;

static void devset_make(DevSet *d, const Graph *g, const float *w, const float *ones,
                        const float *x, const float *z, int F)
{
    int64_t nv = g->nv, ne = g->ne;
    size_t vf = (size_t)nv * F * sizeof(float), eb = (size_t)(ne ? ne : 1) * sizeof(float);
    memset(d, 0, sizeof *d);
    CK_CUDA(cudaMalloc((void **)&d->rowptr, (size_t)(nv + 1) * sizeof(int)));
    CK_CUDA(cudaMalloc((void **)&d->col, (size_t)(ne ? ne : 1) * sizeof(int)));
    CK_CUDA(cudaMalloc((void **)&d->coorow, (size_t)(ne ? ne : 1) * sizeof(int)));
    CK_CUDA(cudaMalloc((void **)&d->w, eb));
    CK_CUDA(cudaMalloc((void **)&d->ones, eb));
    CK_CUDA(cudaMalloc((void **)&d->s, eb));
    CK_CUDA(cudaMalloc((void **)&d->x, vf));
    CK_CUDA(cudaMalloc((void **)&d->z, vf));
    CK_CUDA(cudaMalloc((void **)&d->y, vf));
    CK_CUDA(cudaMemcpy(d->rowptr, g->rowptr, (size_t)(nv + 1) * sizeof(int), cudaMemcpyHostToDevice));
    CK_CUDA(cudaMemcpy(d->col, g->col, (size_t)ne * sizeof(int), cudaMemcpyHostToDevice));
    CK_CUDA(cudaMemcpy(d->coorow, g->coorow, (size_t)ne * sizeof(int), cudaMemcpyHostToDevice));
    CK_CUDA(cudaMemcpy(d->w, w, (size_t)ne * sizeof(float), cudaMemcpyHostToDevice));
    CK_CUDA(cudaMemcpy(d->ones, ones, (size_t)ne * sizeof(float), cudaMemcpyHostToDevice));
    CK_CUDA(cudaMemcpy(d->x, x, vf, cudaMemcpyHostToDevice));
    CK_CUDA(cudaMemcpy(d->z, z, vf, cudaMemcpyHostToDevice));
    CK_CUDA(cudaMemset(d->y, 0xFF, vf)); /* NaN: an unwritten output fails the check */
    CK_CUDA(cudaMemset(d->s, 0xFF, eb));

    CK_SP(cusparseCreateCsr(&d->csr_w, nv, nv, ne, d->rowptr, d->col, d->w, CUSPARSE_INDEX_32I,
                            CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    CK_SP(cusparseCreateCsr(&d->csr_1, nv, nv, ne, d->rowptr, d->col, d->ones, CUSPARSE_INDEX_32I,
                            CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    CK_SP(cusparseCreateCsr(&d->csr_s, nv, nv, ne, d->rowptr, d->col, d->s, CUSPARSE_INDEX_32I,
                            CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    CK_SP(cusparseCreateCoo(&d->coo_w, nv, nv, ne, d->coorow, d->col, d->w, CUSPARSE_INDEX_32I,
                            CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    CK_SP(cusparseCreateCoo(&d->coo_1, nv, nv, ne, d->coorow, d->col, d->ones, CUSPARSE_INDEX_32I,
                            CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    CK_SP(cusparseCreateDnMat(&d->dx, nv, F, F, d->x, CUDA_R_32F, CUSPARSE_ORDER_ROW));
    CK_SP(cusparseCreateDnMat(&d->dz, nv, F, F, d->z, CUDA_R_32F, CUSPARSE_ORDER_ROW));
    CK_SP(cusparseCreateDnMat(&d->dy, nv, F, F, d->y, CUDA_R_32F, CUSPARSE_ORDER_ROW));
    /* X row-major [V, F] is X^T column-major [F, V]: SDDMM's B operand. */
    CK_SP(cusparseCreateDnMat(&d->dxt, F, nv, F, d->x, CUDA_R_32F, CUSPARSE_ORDER_COL));
}

static void devset_free(DevSet *d)
{
    CK_SP(cusparseDestroySpMat(d->csr_w));
    CK_SP(cusparseDestroySpMat(d->csr_1));
    CK_SP(cusparseDestroySpMat(d->csr_s));
    CK_SP(cusparseDestroySpMat(d->coo_w));
    CK_SP(cusparseDestroySpMat(d->coo_1));
    CK_SP(cusparseDestroyDnMat(d->dx));
    CK_SP(cusparseDestroyDnMat(d->dz));
    CK_SP(cusparseDestroyDnMat(d->dy));
    CK_SP(cusparseDestroyDnMat(d->dxt));
    CK_CUDA(cudaFree(d->rowptr));
    CK_CUDA(cudaFree(d->col));
    CK_CUDA(cudaFree(d->coorow));
    CK_CUDA(cudaFree(d->w));
    CK_CUDA(cudaFree(d->ones));
    CK_CUDA(cudaFree(d->s));
    CK_CUDA(cudaFree(d->x));
    CK_CUDA(cudaFree(d->z));
    CK_CUDA(cudaFree(d->y));
}

/* ---- timing -------------------------------------------------------------- */

typedef struct {
    int warmup, reps;
    cudaEvent_t e0, e1;
    int graph;      /* --timing graph: replays of a captured CUDA graph */
    int graph_reps; /* rounds captured per graph; 0: about 1 ms a replay */
} Timer;

/* The most calls one captured graph holds (rounds x sets), as gop_bench's
 * (RT_GRAPH_MAX_RUNS), and the replay length the rounds are chosen for. */
enum { GRAPH_MAX_RUNS = 1024 };
static const double GRAPH_TARGET_MS = 1.0;

/* How the last timing was made: its calls per replay, 0 for events. */
static int g_calls;
/* While capturing, a failed cuSPARSE call is recorded here and the
 * capture given up, rather than the process ended. */
static int g_soft;
static cusparseStatus_t g_soft_status;

typedef int (*RunFn)(void *ctx, int set); /* returns 0 on a refused call */

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Median over `reps` of the time of one call: each repeat launches one call
 * on every set in turn, back to back, and divides by the number of sets. */
static double time_median_ms(Timer *t, RunFn fn, void *ctx, int nsets)
{
    float ms[256];
    int reps = t->reps < 256 ? t->reps : 256;
    for (int i = 0; i < t->warmup; i++)
        for (int k = 0; k < nsets; k++)
            fn(ctx, k);
    CK_CUDA(cudaDeviceSynchronize());
    CK_CUDA(cudaGetLastError());
    for (int r = 0; r < reps; r++) {
        CK_CUDA(cudaEventRecord(t->e0, 0));
        for (int k = 0; k < nsets; k++)
            fn(ctx, k);
        CK_CUDA(cudaEventRecord(t->e1, 0));
        CK_CUDA(cudaEventSynchronize(t->e1));
        CK_CUDA(cudaGetLastError());
        CK_CUDA(cudaEventElapsedTime(&ms[r], t->e0, t->e1));
        ms[r] /= (float)nsets;
    }
    qsort(ms, (size_t)reps, sizeof(float), cmp_float);
    g_calls = 0;
    return reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
}

/* The same median by graph replay: in a stream of its own (the handle's,
 * for the while), the warm-up rounds eagerly; then `calls` rounds (every
 * set once each) captured into one CUDA graph -- t->graph_reps, or enough
 * for about GRAPH_TARGET_MS from three more eager rounds, at most
 * GRAPH_MAX_RUNS calls -- replayed once, then t->reps times back to back
 * between events; each time over the calls. Sets g_calls. Returns a
 * negative time after a `# note` line when the capture or a replay fails
 * (the caller then times with events). */
static double time_graph_ms(Timer *t, cusparseHandle_t h, RunFn fn, void *ctx, int nsets,
                            const char *what)
{
    float ms[256];
    cudaEvent_t ev[257];
    int reps = t->reps < 256 ? t->reps : 256;
    int most = GRAPH_MAX_RUNS / nsets > 0 ? GRAPH_MAX_RUNS / nsets : 1;
    cudaStream_t st;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    const char *failed = NULL;
    cudaError_t e = cudaSuccess;
    CK_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CK_SP(cusparseSetStream(h, st));
    for (int i = 0; i < (t->warmup > 1 ? t->warmup : 1); i++)
        for (int k = 0; k < nsets; k++)
            fn(ctx, k);
    int calls = t->graph_reps;
    if (calls == 0) {
        CK_CUDA(cudaEventRecord(t->e0, st));
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < nsets; k++)
                fn(ctx, k);
        CK_CUDA(cudaEventRecord(t->e1, st));
        CK_CUDA(cudaEventSynchronize(t->e1));
        float round = 0;
        CK_CUDA(cudaEventElapsedTime(&round, t->e0, t->e1));
        round /= 3;
        calls = round > 0 ? (int)ceil(GRAPH_TARGET_MS / round * (1 - 1e-6)) : most;
    }
    calls = calls < 1 ? 1 : calls > most ? most : calls;
    CK_CUDA(cudaStreamSynchronize(st));
    CK_CUDA(cudaGetLastError());
    e = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        failed = "cudaStreamBeginCapture";
    } else {
        g_soft = 1;
        g_soft_status = CUSPARSE_STATUS_SUCCESS;
        for (int c = 0; c < calls && g_soft_status == CUSPARSE_STATUS_SUCCESS; c++)
            for (int k = 0; k < nsets && g_soft_status == CUSPARSE_STATUS_SUCCESS; k++)
                fn(ctx, k);
        g_soft = 0;
        e = cudaStreamEndCapture(st, &graph); /* always: the stream must stop capturing */
        if (g_soft_status != CUSPARSE_STATUS_SUCCESS)
            failed = cusparseGetErrorName(g_soft_status);
        else if (e != cudaSuccess)
            failed = "cudaStreamEndCapture";
    }
    if (!failed && (e = cudaGraphInstantiate(&exec, graph, 0)) != cudaSuccess)
        failed = "cudaGraphInstantiate";
    if (!failed && (e = cudaGraphLaunch(exec, st)) != cudaSuccess)
        failed = "cudaGraphLaunch";
    int made = 0;
    for (; !failed && made <= reps; made++)
        CK_CUDA(cudaEventCreate(&ev[made]));
    if (!failed) {
        CK_CUDA(cudaEventRecord(ev[0], st));
        for (int r = 0; r < reps && !failed; r++) {
            if ((e = cudaGraphLaunch(exec, st)) != cudaSuccess)
                failed = "cudaGraphLaunch";
            else
                CK_CUDA(cudaEventRecord(ev[r + 1], st));
        }
    }
    if (!failed) {
        CK_CUDA(cudaEventSynchronize(ev[reps]));
        CK_CUDA(cudaGetLastError());
        for (int r = 0; r < reps; r++) {
            CK_CUDA(cudaEventElapsedTime(&ms[r], ev[r], ev[r + 1]));
            ms[r] /= (float)calls * (float)nsets;
        }
    }
    CK_CUDA(cudaStreamSynchronize(st));
    for (int i = 0; i < made; i++)
        CK_CUDA(cudaEventDestroy(ev[i]));
    if (exec)
        CK_CUDA(cudaGraphExecDestroy(exec));
    if (graph)
        CK_CUDA(cudaGraphDestroy(graph));
    CK_SP(cusparseSetStream(h, 0));
    CK_CUDA(cudaStreamDestroy(st));
    if (failed) {
        printf("# note: %s: graph capture failed in %s (%s); timed with events\n", what, failed,
               e != cudaSuccess ? cudaGetErrorName(e) : "a cuSPARSE call refused");
        (void)cudaGetLastError(); /* not sticky: clear it */
        g_calls = 0;
        return -1;
    }
    qsort(ms, (size_t)reps, sizeof(float), cmp_float);
    g_calls = calls;
    return reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
}

/* The timing the run asked for (Timer.graph), falling back to events when
 * the capture fails; g_calls says which was used. */
static double time_call_ms(Timer *t, cusparseHandle_t h, RunFn fn, void *ctx, int nsets,
                           const char *what)
{
    double ms = t->graph ? time_graph_ms(t, h, fn, ctx, nsets, what) : -1;
    return ms >= 0 ? ms : time_median_ms(t, fn, ctx, nsets);
}

/* Device-to-device copy of 1 GiB; bytes read plus written over the median
 * time of 10 copies. */
static double copy_ceiling_gbps(void)
{
    size_t n = (size_t)1 << 30;
    void *a = NULL, *b = NULL;
    cudaEvent_t e0, e1;
    float ms[10];
    if (cudaMalloc(&a, n) != cudaSuccess || cudaMalloc(&b, n) != cudaSuccess) {
        (void)cudaGetLastError();
        if (a)
            CK_CUDA(cudaFree(a));
        n = (size_t)256 << 20;
        CK_CUDA(cudaMalloc(&a, n));
        CK_CUDA(cudaMalloc(&b, n));
    }
    CK_CUDA(cudaMemset(a, 0x5A, n));
    CK_CUDA(cudaMemset(b, 0, n));
    CK_CUDA(cudaEventCreate(&e0));
    CK_CUDA(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++)
        CK_CUDA(cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice));
    for (int i = 0; i < 10; i++) {
        CK_CUDA(cudaEventRecord(e0, 0));
        CK_CUDA(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, 0));
        CK_CUDA(cudaEventRecord(e1, 0));
        CK_CUDA(cudaEventSynchronize(e1));
        CK_CUDA(cudaEventElapsedTime(&ms[i], e0, e1));
    }
    qsort(ms, 10, sizeof(float), cmp_float);
    double t = 0.5 * (ms[4] + ms[5]) * 1e-3;
    CK_CUDA(cudaEventDestroy(e0));
    CK_CUDA(cudaEventDestroy(e1));
    CK_CUDA(cudaFree(a));
    CK_CUDA(cudaFree(b));
    return 2.0 * (double)n / t / 1e9;
}

/* ---- the operators ------------------------------------------------------- */

typedef struct {
    cusparseHandle_t h;
    DevSet *sets;
    int weighted, coo;
    cusparseSpMMAlg_t alg;
    void **buf;
    const char *what;
} SpmmCtx;

static const float k_one = 1.0f, k_zero = 0.0f;

static cusparseSpMatDescr_t spmm_matA(const SpmmCtx *c, int k)
{
    const DevSet *d = &c->sets[k];
    if (c->coo)
        return c->weighted ? d->coo_w : d->coo_1;
    return c->weighted ? d->csr_w : d->csr_1;
}

static int run_spmm(void *ctx, int k)
{
    SpmmCtx *c = (SpmmCtx *)ctx;
    cusparseStatus_t s = cusparseSpMM(c->h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                      CUSPARSE_OPERATION_NON_TRANSPOSE, &k_one, spmm_matA(c, k),
                                      c->sets[k].dx, &k_zero, c->sets[k].dy, CUDA_R_32F, c->alg,
                                      c->buf[k]);
    if (s != CUSPARSE_STATUS_SUCCESS && g_soft) {
        g_soft_status = s;
        return 0;
    }
    CK_SP(s);
    return 1;
}

typedef struct {
    cusparseHandle_t h;
    DevSet *sets;
    void **buf;
} SddmmCtx;

static int run_sddmm(void *ctx, int k)
{
    SddmmCtx *c = (SddmmCtx *)ctx;
    DevSet *d = &c->sets[k];
    cusparseStatus_t s = cusparseSDDMM(c->h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                       CUSPARSE_OPERATION_NON_TRANSPOSE, &k_one, d->dz, d->dxt,
                                       &k_zero, d->csr_s, CUDA_R_32F,
                                       CUSPARSE_SDDMM_ALG_DEFAULT, c->buf[k]);
    if (s != CUSPARSE_STATUS_SUCCESS && g_soft) {
        g_soft_status = s;
        return 0;
    }
    CK_SP(s);
    return 1;
}

typedef struct {
    const char *graph;
    int64_t nv, ne;
    int F;
    double ceiling;
} Case;

/* `calls`: the timing's calls per graph replay, 0 when timed with events. */
static void print_row(const Case *cs, const char *peer, const char *op, double ms, double bytes,
                      int ok, int calls)
{
    double gbps = bytes / (ms * 1e-3) / 1e9;
    printf("%s,%s,%s,%lld,%lld,%d,%.5f,%.2f,%.4f,%d,%s,%d\n", peer, op, cs->graph,
           (long long)cs->nv, (long long)cs->ne, cs->F, ms, gbps, gbps / cs->ceiling, ok,
           calls ? "graph" : "events", calls);
    fflush(stdout);
}

static void check_report(const char *what, const char *stage, double err)
{
    if (!(err < 1e-4))
        printf("# WRONG %s (%s): relative L2 error %.3g against the float64 CPU result\n", what,
               stage, err);
}

static const struct {
    const char *peer;
    cusparseSpMMAlg_t alg;
    int coo;
} k_spmm_algs[] = {
    {"cusparse_csr_alg1", CUSPARSE_SPMM_CSR_ALG1, 0},
    {"cusparse_csr_alg2", CUSPARSE_SPMM_CSR_ALG2, 0},
    {"cusparse_csr_alg3", CUSPARSE_SPMM_CSR_ALG3, 0},
    {"cusparse_coo_alg4", CUSPARSE_SPMM_COO_ALG4, 1},
    {"cusparse_coo_alg1", CUSPARSE_SPMM_COO_ALG1, 1},
};

/* One SpMM operator (weighted or not) with every algorithm, then the best. */
static void bench_spmm(cusparseHandle_t h, Timer *tm, const Case *cs, DevSet *sets, int nsets,
                       int weighted, const double *ref, float *host_y)
{
    const char *op = weighted ? "u_mul_e_sum" : "copy_u_sum";
    double bytes = 2.0 * cs->nv * cs->F * 4 + (cs->nv + 1) * 4.0 + cs->ne * 4.0 +
                   (weighted ? cs->ne * 4.0 : 0.0);
    size_t vf = (size_t)cs->nv * cs->F;
    double best = INFINITY;
    const char *best_peer = NULL;
    int best_calls = 0;
    void **buf = (void **)xmalloc((size_t)nsets * sizeof(void *));

    for (size_t a = 0; a < sizeof k_spmm_algs / sizeof k_spmm_algs[0]; a++) {
        char what[400];
        snprintf(what, sizeof what, "%s %s %s F=%d", k_spmm_algs[a].peer, op, cs->graph, cs->F);
        SpmmCtx c = {h, sets, weighted, k_spmm_algs[a].coo, k_spmm_algs[a].alg, buf, what};
        int usable = 1, made = 0;
        for (int k = 0; k < nsets && usable; k++) {
            size_t sz = 0;
            buf[k] = NULL;
            usable = SOFT_SP(cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                     CUSPARSE_OPERATION_NON_TRANSPOSE, &k_one,
                                                     spmm_matA(&c, k), sets[k].dx, &k_zero,
                                                     sets[k].dy, CUDA_R_32F, c.alg, &sz),
                             what);
            if (!usable)
                break;
            CK_CUDA(cudaMalloc(&buf[k], sz ? sz : 16));
            made = k + 1;
            /* Preprocessing helps CSR_ALG1 and CSR_ALG3 and is a no-op for
             * the others; it stays outside the timed region. */
            usable = SOFT_SP(cusparseSpMM_preprocess(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                     CUSPARSE_OPERATION_NON_TRANSPOSE, &k_one,
                                                     spmm_matA(&c, k), sets[k].dx, &k_zero,
                                                     sets[k].dy, CUDA_R_32F, c.alg, buf[k]),
                             what);
            CK_CUDA(cudaMemset(sets[k].y, 0xFF, vf * sizeof(float)));
        }
        if (usable) {
            usable = SOFT_SP(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                          CUSPARSE_OPERATION_NON_TRANSPOSE, &k_one,
                                          spmm_matA(&c, 0), sets[0].dx, &k_zero, sets[0].dy,
                                          CUDA_R_32F, c.alg, buf[0]),
                             what);
        }
        if (usable) {
            CK_CUDA(cudaDeviceSynchronize());
            CK_CUDA(cudaGetLastError());
            CK_CUDA(cudaMemcpy(host_y, sets[0].y, vf * sizeof(float), cudaMemcpyDeviceToHost));
            double err = rel_l2(host_y, ref, vf);
            check_report(what, "first call", err);
            double ms = time_call_ms(tm, h, run_spmm, &c, nsets, what);
            int calls = g_calls;
            /* The last set was written only inside the timed loop: check it
             * too, so a result computed only once cannot hide a wrong one. */
            CK_CUDA(cudaMemcpy(host_y, sets[nsets - 1].y, vf * sizeof(float),
                               cudaMemcpyDeviceToHost));
            double err2 = rel_l2(host_y, ref, vf);
            check_report(what, "after timing", err2);
            int ok = err < 1e-4 && err2 < 1e-4;
            print_row(cs, k_spmm_algs[a].peer, op, ms, bytes, ok, calls);
            if (ok && ms < best) {
                best = ms;
                best_peer = k_spmm_algs[a].peer;
                best_calls = calls;
            }
        }
        for (int k = 0; k < made; k++)
            CK_CUDA(cudaFree(buf[k]));
    }
    if (best_peer) {
        print_row(cs, "cusparse_best", op, best, bytes, 1, best_calls);
        printf("# best %s %s F=%d: %s\n", op, cs->graph, cs->F, best_peer);
    }
    free(buf);
}

static void bench_sddmm(cusparseHandle_t h, Timer *tm, const Case *cs, DevSet *sets, int nsets,
                        const double *ref, float *host_s)
{
    double bytes = 2.0 * cs->nv * cs->F * 4 + (cs->nv + 1) * 4.0 + cs->ne * 8.0;
    size_t ne = (size_t)cs->ne;
    char what[400];
    snprintf(what, sizeof what, "cusparse_sddmm u_dot_v %s F=%d", cs->graph, cs->F);
    void **buf = (void **)xmalloc((size_t)nsets * sizeof(void *));
    SddmmCtx c = {h, sets, buf};
    int usable = 1, made = 0;
    for (int k = 0; k < nsets && usable; k++) {
        size_t sz = 0;
        usable = SOFT_SP(cusparseSDDMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                  CUSPARSE_OPERATION_NON_TRANSPOSE, &k_one,
                                                  sets[k].dz, sets[k].dxt, &k_zero, sets[k].csr_s,
                                                  CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, &sz),
                         what);
        if (!usable)
            break;
        CK_CUDA(cudaMalloc(&buf[k], sz ? sz : 16));
        made = k + 1;
        usable = SOFT_SP(cusparseSDDMM_preprocess(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                  CUSPARSE_OPERATION_NON_TRANSPOSE, &k_one,
                                                  sets[k].dz, sets[k].dxt, &k_zero, sets[k].csr_s,
                                                  CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, buf[k]),
                         what);
        /* Poison after preprocessing: with beta = 0 nothing may read it. */
        CK_CUDA(cudaMemset(sets[k].s, 0xFF, ne * sizeof(float)));
    }
    if (usable)
        usable = SOFT_SP(cusparseSDDMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                       CUSPARSE_OPERATION_NON_TRANSPOSE, &k_one, sets[0].dz,
                                       sets[0].dxt, &k_zero, sets[0].csr_s, CUDA_R_32F,
                                       CUSPARSE_SDDMM_ALG_DEFAULT, buf[0]),
                         what);
    if (usable) {
        CK_CUDA(cudaDeviceSynchronize());
        CK_CUDA(cudaGetLastError());
        CK_CUDA(cudaMemcpy(host_s, sets[0].s, ne * sizeof(float), cudaMemcpyDeviceToHost));
        double err = rel_l2(host_s, ref, ne);
        check_report(what, "first call", err);
        double ms = time_call_ms(tm, h, run_sddmm, &c, nsets, what);
        int calls = g_calls;
        CK_CUDA(cudaMemcpy(host_s, sets[nsets - 1].s, ne * sizeof(float),
                           cudaMemcpyDeviceToHost));
        double err2 = rel_l2(host_s, ref, ne);
        check_report(what, "after timing", err2);
        print_row(cs, "cusparse_sddmm", "u_dot_v", ms, bytes, err < 1e-4 && err2 < 1e-4, calls);
    }
    for (int k = 0; k < made; k++)
        CK_CUDA(cudaFree(buf[k]));
    free(buf);
}

/* How many copies of the inputs to rotate: one when a copy is at least
 * twice L2, else enough for three times L2 (at most 64). */
static int choose_sets(double bytes, double l2)
{
    if (bytes >= 2.0 * l2)
        return 1;
    int n = (int)ceil(3.0 * l2 / bytes);
    return n < 2 ? 2 : n > 64 ? 64 : n;
}

static void bench_graph(cusparseHandle_t h, Timer *tm, const char *path, const char *name,
                        const int *Fs, int nF, double ceiling, double l2)
{
    Graph g;
    mtx_read(path, &g);
    fprintf(stderr, "[cusparse] %s: |V| = %lld, |E| = %lld\n", name, (long long)g.nv,
            (long long)g.ne);
    size_t ne = (size_t)g.ne;
    float *w = (float *)xmalloc((ne ? ne : 1) * sizeof(float));
    float *ones = (float *)xmalloc((ne ? ne : 1) * sizeof(float));
    for (size_t k = 0; k < ne; k++) {
        w[k] = rng_uniform(0.5f, 1.5f);
        ones[k] = 1.0f;
    }
    for (int fi = 0; fi < nF; fi++) {
        int F = Fs[fi];
        size_t vf = (size_t)g.nv * F;
        float *x = (float *)xmalloc(vf * sizeof(float));
        float *z = (float *)xmalloc(vf * sizeof(float));
        for (size_t i = 0; i < vf; i++) {
            x[i] = rng_uniform(-1.0f, 1.0f);
            z[i] = rng_uniform(-1.0f, 1.0f);
        }
        double *ref = (double *)xmalloc((vf > ne ? vf : ne) * sizeof(double));
        float *host = (float *)xmalloc((vf > ne ? vf : ne) * sizeof(float));
        Case cs = {name, g.nv, g.ne, F, ceiling};
        double wbytes = 2.0 * g.nv * F * 4 + (g.nv + 1) * 4.0 + g.ne * 8.0;
        int nsets = choose_sets(wbytes, l2);
        printf("# %s F=%d: %d input set%s rotated\n", name, F, nsets, nsets > 1 ? "s" : "");
        DevSet *sets = (DevSet *)xmalloc((size_t)nsets * sizeof(DevSet));
        for (int k = 0; k < nsets; k++)
            devset_make(&sets[k], &g, w, ones, x, z, F);

        ref_spmm(&g, w, x, F, ref);
        bench_spmm(h, tm, &cs, sets, nsets, 1, ref, host);
        ref_spmm(&g, NULL, x, F, ref);
        bench_spmm(h, tm, &cs, sets, nsets, 0, ref, host);
        ref_sddmm(&g, x, z, F, ref);
        bench_sddmm(h, tm, &cs, sets, nsets, ref, host);

        for (int k = 0; k < nsets; k++)
            devset_free(&sets[k]);
        free(sets);
        free(x);
        free(z);
        free(ref);
        free(host);
        fprintf(stderr, "[cusparse] %s F=%d done\n", name, F);
    }
    free(w);
    free(ones);
    graph_free(&g);
}

/* ---- driver -------------------------------------------------------------- */

static void usage(FILE *to)
{
    fprintf(to,
            "usage: cusparse_bench [options] FILE.mtx...\n"
            "       cusparse_bench --ceiling-only\n"
            "       cusparse_bench --selftest FILE.mtx\n"
            "options:\n"
            "  --F LIST        feature widths, comma or space separated (default 16,32,64,128,256)\n"
            "  --name NAME     graph name in the CSV (one file only; default: file name stem)\n"
            "  --ceiling GBPS  copy ceiling to divide by (default: measured here)\n"
            "  --warmup N      warm-up rounds (default 5)\n"
            "  --reps N        timed rounds, median taken (default 20)\n"
            "  --timing graph|events  graph (default): time replays of a CUDA graph of the\n"
            "                  rounds, per call; events: each round between events\n"
            "  --graph-reps N  rounds captured per graph, 0 to 1024 (default 0: about 1 ms)\n"
            "  --header        print the CSV header line first\n"
            "--selftest parses the file on the CPU only and prints |V| |E|.\n");
}

static int parse_list(const char *s, int *out, int max)
{
    int n = 0;
    while (*s) {
        if (!isdigit((unsigned char)*s)) {
            if (*s != ',' && *s != ' ')
                return -1;
            s++;
            continue;
        }
        long v = strtol(s, (char **)&s, 10);
        if (v < 1 || v > 65536 || n == max)
            return -1;
        out[n++] = (int)v;
    }
    return n;
}

static void stem(const char *path, char *out, size_t cap)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    snprintf(out, cap, "%s", b);
    char *dot = strstr(out, ".mtx");
    if (dot)
        *dot = '\0';
}

int main(int argc, char **argv)
{
    int Fs[32] = {16, 32, 64, 128, 256}, nF = 5, header = 0, ceiling_only = 0;
    const char *name = NULL, *files[64];
    int nfiles = 0;
    double ceiling = 0.0;
    Timer tm = {5, 20, NULL, NULL, 1, 0};

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--selftest") && more) {
            Graph g;
            mtx_read(argv[i + 1], &g);
            int64_t maxin = 0;
            for (int64_t v = 0; v < g.nv; v++)
                if (g.rowptr[v + 1] - g.rowptr[v] > maxin)
                    maxin = g.rowptr[v + 1] - g.rowptr[v];
            printf("%lld %lld\n", (long long)g.nv, (long long)g.ne);
            printf("# max in-degree %lld\n", (long long)maxin);
            graph_free(&g);
            return 0;
        } else if (!strcmp(a, "--F") && more) {
            nF = parse_list(argv[++i], Fs, 32);
            if (nF < 1) {
                fprintf(stderr, "cusparse_bench: bad --F list '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--name") && more) {
            name = argv[++i];
        } else if (!strcmp(a, "--ceiling") && more) {
            ceiling = atof(argv[++i]);
        } else if (!strcmp(a, "--warmup") && more) {
            tm.warmup = atoi(argv[++i]);
        } else if (!strcmp(a, "--reps") && more) {
            tm.reps = atoi(argv[++i]);
        } else if (!strcmp(a, "--timing") && more) {
            const char *v = argv[++i];
            if (strcmp(v, "graph") && strcmp(v, "events")) {
                fprintf(stderr, "cusparse_bench: --timing %s: choose graph or events\n", v);
                return 2;
            }
            tm.graph = !strcmp(v, "graph");
        } else if (!strcmp(a, "--graph-reps") && more) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end || v < 0 || v > GRAPH_MAX_RUNS) {
                fprintf(stderr, "cusparse_bench: --graph-reps %s: not a whole number from 0 to %d\n",
                        argv[i], GRAPH_MAX_RUNS);
                return 2;
            }
            tm.graph_reps = (int)v;
        } else if (!strcmp(a, "--header")) {
            header = 1;
        } else if (!strcmp(a, "--ceiling-only")) {
            ceiling_only = 1;
        } else if (a[0] == '-') {
            fprintf(stderr, "cusparse_bench: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (nfiles < 64) {
            files[nfiles++] = a;
        }
    }
    if (!ceiling_only && nfiles == 0) {
        usage(stderr);
        return 2;
    }
    if (name && nfiles > 1) {
        fprintf(stderr, "cusparse_bench: --name needs exactly one file\n");
        return 2;
    }
    if (tm.reps < 1 || tm.warmup < 0) {
        fprintf(stderr, "cusparse_bench: --reps must be >= 1 and --warmup >= 0\n");
        return 2;
    }

    struct cudaDeviceProp prop;
    CK_CUDA(cudaSetDevice(0));
    CK_CUDA(cudaGetDeviceProperties(&prop, 0));
    int cuda_rt = 0, sp_ver = 0;
    CK_CUDA(cudaRuntimeGetVersion(&cuda_rt));
    printf("# gpu=%s sm=%d.%d sms=%d l2_mb=%.1f cuda_runtime=%d\n", prop.name, prop.major,
           prop.minor, prop.multiProcessorCount, prop.l2CacheSize / 1e6, cuda_rt);
    if (ceiling <= 0.0) {
        ceiling = copy_ceiling_gbps();
        printf("# copy_ceiling_gbps=%.1f (cudaMemcpy device to device; 1 GiB; read + written; "
               "median of 10)\n",
               ceiling);
    } else {
        printf("# copy_ceiling_gbps=%.1f (given)\n", ceiling);
    }
    fflush(stdout);
    if (ceiling_only)
        return 0;

    cusparseHandle_t h;
    CK_SP(cusparseCreate(&h));
    CK_SP(cusparseGetVersion(h, &sp_ver));
    printf("# cusparse_version=%d warmup=%d reps=%d timing=%s graph_reps=%d\n", sp_ver,
           tm.warmup, tm.reps, tm.graph ? "graph" : "events", tm.graph_reps);
    CK_CUDA(cudaEventCreate(&tm.e0));
    CK_CUDA(cudaEventCreate(&tm.e1));
    if (header)
        printf("peer,op,graph,V,E,F,time_ms,gbps,frac_of_bound,ok,timing,graph_calls\n");
    for (int i = 0; i < nfiles; i++) {
        char nm[256];
        if (name)
            snprintf(nm, sizeof nm, "%s", name);
        else
            stem(files[i], nm, sizeof nm);
        bench_graph(h, &tm, files[i], nm, Fs, nF, ceiling, (double)prop.l2CacheSize);
    }
    CK_CUDA(cudaEventDestroy(tm.e0));
    CK_CUDA(cudaEventDestroy(tm.e1));
    CK_SP(cusparseDestroy(h));
    return 0;
}
