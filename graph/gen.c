/* graph/gen.c: synthetic graphs from a one-word spec.
 *
 * Benchmarks and tests need graphs of a chosen size and shape without
 * shipping files: `rmat:SCALE:EDGEFACTOR[:SEED]` gives Graph500's skewed
 * R-MAT graphs, `grid:WxH` a perfectly regular 2-D mesh (the opposite end of
 * the degree-skew range), `ring:N:D` a D-regular ring written straight
 * into CSR (billions of edges in seconds: docs/index64.md). Generation is deterministic for a spec: the PRNG
 * is xoshiro256** seeded through splitmix64 with state on the stack, so the
 * same spec gives the same arcs on every machine. Both generators emit arcs
 * sorted by (src, dst), so edge ids are a function of the arc set alone.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph/graph.h"

#define RMAT_MAX_SCALE 26
#define RMAT_MAX_EDGEFACTOR 1024
#define GRID_MAX_VERTICES (1 << 28)
/* A spec is not a file: messages name it themselves. */
#define NO_LOC ((Loc){NULL, 0, 0})

/* ---- xoshiro256**, seeded by splitmix64 (Blackman and Vigna) ---- */

typedef struct Rng {
  uint64_t s[4];
} Rng;

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static Rng rng_seed(uint64_t seed) {
  Rng r;
  for (int i = 0; i < 4; i++) {
    uint64_t z = (seed += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    r.s[i] = z ^ (z >> 31);
  }
  return r;
}

static uint64_t rng_next(Rng *r) {
  uint64_t *s = r->s;
  uint64_t out = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

/* Uniform in [0, 1) with 53 random bits. */
static double rng_unit(Rng *r) { return (double)(rng_next(r) >> 11) * 0x1p-53; }

/* ---- spec parsing ---- */

/* Reads one decimal field of a spec ending at any of `stops` (or the end),
 * within lo..hi, and advances *p past it. Reports against the whole spec. */
static bool spec_field(const char *spec, const char **p, const char *stops,
                       const char *name, uint64_t lo, uint64_t hi,
                       uint64_t *out, Diag *d) {
  Loc loc = NO_LOC;
  size_t len = strcspn(*p, stops);
  if (len == 0) {
    ir_error(d, loc, "bad graph spec '%s': %s is missing", spec, name);
    return false;
  }
  uint64_t v = 0;
  bool big = false;
  for (size_t i = 0; i < len; i++) {
    char c = (*p)[i];
    if (c < '0' || c > '9') {
      ir_error(d, loc,
               "bad graph spec '%s': %s must be a number in %" PRIu64
               "..%" PRIu64 ", found '%.*s'", spec, name, lo, hi, (int)len,
               *p);
      return false;
    }
    if (v > (UINT64_MAX - 9) / 10) big = true;
    v = v * 10 + (uint64_t)(c - '0');
  }
  if (big || v < lo || v > hi) {
    ir_error(d, loc,
             "bad graph spec '%s': %s must be in %" PRIu64 "..%" PRIu64
             ", found %.*s", spec, name, lo, hi, (int)len, *p);
    return false;
  }
  *out = v;
  *p += len;
  return true;
}

/* Refuses anything left over after the last field. */
static bool spec_end(const char *spec, const char *p, Diag *d) {
  if (!*p) return true;
  ir_error(d, NO_LOC, "bad graph spec '%s': unexpected '%s' at "
           "the end", spec, p);
  return false;
}

/* ---- R-MAT ---- */

/* LSD radix sort of keys below 2^bits, 8 bits a pass; `tmp` as long as
 * `key`. Linear time, which matters at 2^26 vertices. */
static void radix_sort(uint64_t *key, uint64_t *tmp, size_t n, int bits) {
  for (int shift = 0; shift < bits; shift += 8) {
    size_t count[257] = {0};
    for (size_t i = 0; i < n; i++) count[((key[i] >> shift) & 255) + 1]++;
    for (int b = 0; b < 256; b++) count[b + 1] += count[b];
    for (size_t i = 0; i < n; i++) tmp[count[(key[i] >> shift) & 255]++] = key[i];
    memcpy(key, tmp, n * sizeof *key);
  }
}

/* One R-MAT arc: at each of `scale` levels, pick a quadrant of the adjacency
 * matrix with Graph500's probabilities a=.57 b=.19 c=.19 d=.05. */
static void rmat_arc(Rng *r, int scale, uint64_t *src, uint64_t *dst) {
  uint64_t s = 0, t = 0;
  for (int bit = 0; bit < scale; bit++) {
    double x = rng_unit(r);
    if (x >= 0.57 + 0.19 + 0.19) {
      s |= 1ull << bit;
      t |= 1ull << bit;
    } else if (x >= 0.57 + 0.19) {
      s |= 1ull << bit;
    } else if (x >= 0.57) {
      t |= 1ull << bit;
    }
  }
  *src = s;
  *dst = t;
}

/* Samples the arcs into key[] as src << scale | dst (relabelled through
 * `perm`), drops self-loops, sorts and removes duplicates. Returns how many
 * remain. */
static size_t rmat_keys(Rng *r, int scale, size_t nsamples,
                        const uint64_t *perm, uint64_t *key, uint64_t *tmp) {
  size_t n = 0;
  for (size_t i = 0; i < nsamples; i++) {
    uint64_t s, t;
    rmat_arc(r, scale, &s, &t);
    s = perm[s];
    t = perm[t];
    if (s != t) key[n++] = s << scale | t;
  }
  radix_sort(key, tmp, n, 2 * scale);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (m == 0 || key[i] != key[m - 1]) key[m++] = key[i];
  return m;
}

static Graph *gen_rmat(const char *spec, Diag *d) {
  const char *p = spec + strlen("rmat:");
  uint64_t scale, ef, seed = 1;
  if (!spec_field(spec, &p, ":", "SCALE", 1, RMAT_MAX_SCALE, &scale, d))
    return NULL;
  if (*p++ != ':') {
    ir_error(d, NO_LOC, "bad graph spec '%s': EDGEFACTOR is "
             "missing (rmat:SCALE:EDGEFACTOR[:SEED])", spec);
    return NULL;
  }
  if (!spec_field(spec, &p, ":", "EDGEFACTOR", 1, RMAT_MAX_EDGEFACTOR, &ef, d))
    return NULL;
  if (*p == ':') {
    p++;
    if (!spec_field(spec, &p, ":", "SEED", 0, UINT64_MAX, &seed, d))
      return NULL;
  }
  if (!spec_end(spec, p, d)) return NULL;
  uint64_t nv = 1ull << scale, nsamples = ef << scale;
  if (nsamples > (uint64_t)GRAPH_MAX_EDGES) {
    ir_error(d, NO_LOC, "%s samples %" PRIu64 " arcs, more than the %" PRId64
             " a graph may hold", spec, nsamples, (int64_t)GRAPH_MAX_EDGES);
    return NULL;
  }

  /* the generator's own arrays: 8 bytes a vertex, 32 an arc sampled */
  if (!graph_size_ok((int64_t)nv, (int64_t)nsamples, (int64_t)(8 * nv + 32 * nsamples), d,
                     (Loc){spec, 0, 0}))
    return NULL;
  Rng r = rng_seed(seed);
  uint64_t *perm = malloc(sizeof(uint64_t) * nv);
  uint64_t *key = malloc(sizeof(uint64_t) * nsamples);
  uint64_t *tmp = malloc(sizeof(uint64_t) * nsamples);
  int64_t *src = malloc(sizeof(int64_t) * nsamples);
  int64_t *dst = malloc(sizeof(int64_t) * nsamples);
  Graph *g = NULL;
  if (!perm || !key || !tmp || !src || !dst) {
    ir_error(d, NO_LOC, "out of memory generating %s", spec);
    goto done;
  }
  /* Fisher-Yates; the modulo bias is below 2^-37 for 2^26 vertices. */
  for (uint64_t v = 0; v < nv; v++) perm[v] = v;
  for (uint64_t v = nv - 1; v > 0; v--) {
    uint64_t u = rng_next(&r) % (v + 1), x = perm[v];
    perm[v] = perm[u];
    perm[u] = x;
  }
  size_t ne = rmat_keys(&r, (int)scale, nsamples, perm, key, tmp);
  for (size_t e = 0; e < ne; e++) {
    src[e] = (int64_t)(key[e] >> scale);
    dst[e] = (int64_t)(key[e] & (nv - 1));
  }
  g = graph_from_coo((int64_t)nv, (int64_t)ne, src, dst, spec, d,
                        NO_LOC);
done:
  free(perm);
  free(key);
  free(tmp);
  free(src);
  free(dst);
  return g;
}

/* ---- grids ---- */

static Graph *gen_grid(const char *spec, Diag *d) {
  const char *p = spec + strlen("grid:");
  uint64_t w, h;
  if (!spec_field(spec, &p, "x", "W", 1, GRID_MAX_VERTICES, &w, d))
    return NULL;
  if (*p++ != 'x') {
    ir_error(d, NO_LOC, "bad graph spec '%s': H is missing "
             "(grid:WxH)", spec);
    return NULL;
  }
  if (!spec_field(spec, &p, "", "H", 1, GRID_MAX_VERTICES, &h, d) ||
      !spec_end(spec, p, d))
    return NULL;
  if (w * h > GRID_MAX_VERTICES) {
    ir_error(d, NO_LOC, "bad graph spec '%s': %" PRIu64
             " vertices, more than the 2^28 a grid may have", spec, w * h);
    return NULL;
  }
  int64_t nv = (int64_t)(w * h), ne = 2 * (int64_t)(h * (w - 1) + w * (h - 1));
  if (!graph_size_ok(nv, ne, 16 * ne, d, (Loc){spec, 0, 0})) return NULL;
  int64_t *src = malloc(sizeof(int64_t) * (size_t)(ne > 0 ? ne : 1));
  int64_t *dst = malloc(sizeof(int64_t) * (size_t)(ne > 0 ? ne : 1));
  Graph *g = NULL;
  if (!src || !dst) {
    ir_error(d, NO_LOC, "out of memory generating %s", spec);
  } else {
    /* Neighbours in increasing id order: up, left, right, down. */
    int64_t e = 0, W = (int64_t)w, H = (int64_t)h;
    for (int64_t v = 0; v < nv; v++) {
      int64_t x = v % W, y = v / W;
      int64_t nbr[4] = {y > 0 ? v - W : -1, x > 0 ? v - 1 : -1,
                        x < W - 1 ? v + 1 : -1, y < H - 1 ? v + W : -1};
      for (int k = 0; k < 4; k++) {
        if (nbr[k] < 0) continue;
        src[e] = v;
        dst[e++] = nbr[k];
      }
    }
    g = graph_from_coo(nv, ne, src, dst, spec, d, NO_LOC);
  }
  free(src);
  free(dst);
  return g;
}

/* ---- rings ---- */

/* ring:N:D: vertex u has arcs to u+1, ..., u+D (mod N), edge id u*D + j-1
 * for the arc to u+j. The COO and the CSC by source are that order itself;
 * the in-edges of v come from the cyclic range v-D .. v-1, in edge-id
 * (that is, source) order: written directly, without a sort, by threads
 * that each own a range of vertices, so that billions of edges take
 * seconds (docs/index64.md). */
typedef struct RingPart {
  Graph *g;
  int64_t D, from, to; /* vertices [from, to) */
} RingPart;

static void *ring_fill(void *arg) {
  const RingPart *p = arg;
  Graph *g = p->g;
  int64_t N = g->nv, D = p->D;
  for (int64_t u = p->from; u < p->to; u++) {
    int64_t e = u * D;
    g->out_ptr[u] = e;
    for (int64_t j = 1; j <= D; j++, e++) {
      int64_t v = u + j < N ? u + j : u + j - N;
      g->src[e] = (int32_t)u;
      g->dst[e] = (int32_t)v;
      g->out_eid[e] = e;
      g->out_dst[e] = (int32_t)v;
    }
  }
  for (int64_t v = p->from; v < p->to; v++) {
    int64_t k = v * D;
    g->in_ptr[v] = k;
    /* sources in increasing order: those below v (v-D .. v-1, or 0 .. v-1
     * when that wraps), then the wrapped ones N-(D-v) .. N-1 */
    int64_t lo = v >= D ? v - D : 0;
    for (int64_t u = lo; u < v; u++, k++) {
      g->in_src[k] = (int32_t)u;
      g->in_eid[k] = u * D + (v - u) - 1;
    }
    for (int64_t u = v >= D ? N : N - (D - v); u < N; u++, k++) {
      g->in_src[k] = (int32_t)u;
      g->in_eid[k] = u * D + (v + N - u) - 1;
    }
  }
  return NULL;
}

static Graph *gen_ring(const char *spec, Diag *d) {
  const char *p = spec + strlen("ring:");
  uint64_t n, deg;
  if (!spec_field(spec, &p, ":", "N", 2, INT32_MAX, &n, d)) return NULL;
  if (*p++ != ':') {
    ir_error(d, NO_LOC, "bad graph spec '%s': D is missing (ring:N:D)", spec);
    return NULL;
  }
  if (!spec_field(spec, &p, "", "D", 1, INT32_MAX, &deg, d) || !spec_end(spec, p, d))
    return NULL;
  if (deg >= n) {
    ir_error(d, NO_LOC, "bad graph spec '%s': D = %" PRIu64 " must be below N = %" PRIu64
             " (no self-loops, no duplicate arcs)", spec, deg, n);
    return NULL;
  }
  if (n * deg > (uint64_t)GRAPH_MAX_EDGES) {
    ir_error(d, NO_LOC, "bad graph spec '%s': %" PRIu64 " edges, more than the %" PRId64
             " a graph may hold", spec, n * deg, (int64_t)GRAPH_MAX_EDGES);
    return NULL;
  }
  int64_t nv = (int64_t)n, D = (int64_t)deg, ne = nv * D;
  if (!graph_size_ok(nv, ne, 0, d, (Loc){spec, 0, 0})) return NULL;
  Graph *g = calloc(1, sizeof *g);
  if (g) {
    g->nv = (int32_t)nv;
    g->ne = ne;
    g->name = strdup(spec);
    g->src = malloc(sizeof(int32_t) * (size_t)ne);
    g->dst = malloc(sizeof(int32_t) * (size_t)ne);
    g->in_ptr = malloc(sizeof(int64_t) * (size_t)(nv + 1));
    g->in_eid = malloc(sizeof(int64_t) * (size_t)ne);
    g->in_src = malloc(sizeof(int32_t) * (size_t)ne);
    g->out_ptr = malloc(sizeof(int64_t) * (size_t)(nv + 1));
    g->out_eid = malloc(sizeof(int64_t) * (size_t)ne);
    g->out_dst = malloc(sizeof(int32_t) * (size_t)ne);
  }
  if (!g || !g->name || !g->src || !g->dst || !g->in_ptr || !g->in_eid || !g->in_src ||
      !g->out_ptr || !g->out_eid || !g->out_dst) {
    graph_free(g);
    ir_error(d, NO_LOC, "out of memory generating %s", spec);
    return NULL;
  }
  enum { MAX_THREADS = 32 };
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int64_t nt = cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : cpus;
  if (ne < ((int64_t)1 << 22)) nt = 1; /* small rings: no threads */
  RingPart parts[MAX_THREADS];
  pthread_t th[MAX_THREADS];
  bool started[MAX_THREADS] = {false};
  for (int64_t t = 0; t < nt; t++) {
    parts[t] = (RingPart){g, D, nv * t / nt, nv * (t + 1) / nt};
    if (t > 0) started[t] = pthread_create(&th[t], NULL, ring_fill, &parts[t]) == 0;
  }
  ring_fill(&parts[0]);
  for (int64_t t = 1; t < nt; t++) {
    if (started[t]) pthread_join(th[t], NULL);
    else ring_fill(&parts[t]); /* no thread: fill it here */
  }
  g->in_ptr[nv] = ne;
  g->out_ptr[nv] = ne;
  graph_compute_stats(g);
  return g;
}

Graph *graph_generate(const char *spec, Diag *d) {
  if (strncmp(spec, "rmat:", 5) == 0) return gen_rmat(spec, d);
  if (strncmp(spec, "grid:", 5) == 0) return gen_grid(spec, d);
  if (strncmp(spec, "ring:", 5) == 0) return gen_ring(spec, d);
  ir_error(d, NO_LOC, "unknown graph generator '%s' (known: "
           "rmat:SCALE:EDGEFACTOR[:SEED], grid:WxH, ring:N:D)", spec);
  return NULL;
}

Graph *graph_open(const char *spec, Diag *d) {
  if (strncmp(spec, "rmat:", 5) == 0 || strncmp(spec, "grid:", 5) == 0 ||
      strncmp(spec, "ring:", 5) == 0)
    return graph_generate(spec, d);
  return graph_read(spec, d);
}
