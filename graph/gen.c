/* graph/gen.c: synthetic graphs from a one-word spec.
 *
 * Benchmarks and tests need graphs of a chosen size and shape without
 * shipping files: `rmat:SCALE:EDGEFACTOR[:SEED]` gives Graph500's skewed
 * R-MAT graphs, `grid:WxH` a perfectly regular 2-D mesh (the opposite end of
 * the degree-skew range), `ring:N:D` a D-regular ring written straight
 * into CSR (billions of edges in seconds: docs/index64.md),
 * `powerlaw:N:D:G` Chung-Lu graphs whose degrees follow a power law of
 * exponent G / 10, `community:N:D:K:MIX` K communities of consecutive ids
 * with MIX percent of arcs between them (the two families the schedule
 * predictor trains on besides R-MAT, meshes and rings). Generation is deterministic for a spec: the PRNG
 * is xoshiro256** seeded through splitmix64 with state on the stack, so the
 * same spec gives the same arcs on every machine. Both generators emit arcs
 * sorted by (src, dst), so edge ids are a function of the arc set alone.
 *
 * R-MAT runs on all cores (graph/par.c) and still gives one graph per spec,
 * whatever the thread count: its samples come in chunks of RMAT_CHUNK, and
 * chunk c draws from its own stream, the spec's stream (after the vertex
 * permutation) advanced by c jumps of 2^128 steps, so a chunk's arcs are
 * fixed by the spec and its number, not by the thread that draws them. A
 * graph of at most RMAT_CHUNK samples (rmat:16:16 and below) is one chunk:
 * the same arcs as the single-threaded generator before it.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* Advances r by 2^128 steps (xoshiro256**'s jump polynomial): 2^128
 * streams that never overlap, one per chunk of R-MAT samples. */
static void rng_jump(Rng *r) {
  static const uint64_t poly[4] = {0x180ec6d33cfd0abaull, 0xd5a61266f0c9392cull,
                                   0xa9582618e03fc9aaull, 0x39abdc4529b1661cull};
  uint64_t t[4] = {0, 0, 0, 0};
  for (int i = 0; i < 4; i++)
    for (int b = 0; b < 64; b++) {
      if (poly[i] >> b & 1)
        for (int k = 0; k < 4; k++) t[k] ^= r->s[k];
      rng_next(r);
    }
  memcpy(r->s, t, sizeof t);
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

/* An optional last field :SEED, then the end. */
static bool seed_field(const char *spec, const char *p, uint64_t *seed, Diag *d) {
  if (*p == ':') {
    p++;
    if (!spec_field(spec, &p, ":", "SEED", 0, UINT64_MAX, seed, d)) return false;
  }
  return spec_end(spec, p, d);
}

/* Whether a sampled generator's `n` draws fit a graph. */
static bool samples_fit(const char *spec, uint64_t n, Diag *d) {
  if (n <= (uint64_t)GRAPH_MAX_EDGES) return true;
  ir_error(d, NO_LOC, "%s samples %" PRIu64 " arcs, more than the %" PRId64 " a graph may hold",
           spec, n, (int64_t)GRAPH_MAX_EDGES);
  return false;
}

/* ---- R-MAT ---- */

/* Samples a chunk of R-MAT draws; a chunk's stream is its own. */
#define RMAT_CHUNK ((uint64_t)1 << 20)
/* Bits of a radix-sort digit: 2^11 counters a part. */
#define RADIX_BITS 11
#define RADIX (1 << RADIX_BITS)

/* The parallel LSD radix sort of R-MAT's keys: per pass, part p counts
 * the digits of its range into hist[p], the counts become slots (digit,
 * then part: the serial stable order) and each part scatters its keys
 * there. Stable, so the same result as one thread. */
typedef struct Radix {
  const uint64_t *from;
  uint64_t *to;
  uint64_t n;
  int shift;
  uint64_t (*hist)[RADIX];
} Radix;

static uint64_t part_lo(uint64_t n, int p, int np) {
  return (uint64_t)((unsigned __int128)n * (unsigned)p / (unsigned)np);
}

static void radix_count(void *arg, int p, int np) {
  Radix *x = arg;
  uint64_t *h = x->hist[p];
  memset(h, 0, sizeof(uint64_t) * RADIX);
  for (uint64_t i = part_lo(x->n, p, np), hi = part_lo(x->n, p + 1, np); i < hi; i++)
    h[(x->from[i] >> x->shift) & (RADIX - 1)]++;
}

static void radix_scatter(void *arg, int p, int np) {
  Radix *x = arg;
  uint64_t *at = x->hist[p], *to = x->to;
  const uint64_t *from = x->from;
  int shift = x->shift;
  for (uint64_t i = part_lo(x->n, p, np), hi = part_lo(x->n, p + 1, np); i < hi; i++) {
    uint64_t k = from[i];
    to[at[(k >> shift) & (RADIX - 1)]++] = k;
  }
}

/* Sorts key[0..n) (below 2^bits); `tmp` as long. Returns the array that
 * holds the result (key or tmp), NULL when out of memory. */
static uint64_t *radix_sort(uint64_t *key, uint64_t *tmp, uint64_t n, int bits) {
  int np = graph_par_parts((int64_t)n, (int64_t)1 << 16);
  uint64_t (*hist)[RADIX] = malloc(sizeof *hist * (size_t)np);
  if (!hist) return NULL;
  Radix x = {key, tmp, n, 0, hist};
  for (int shift = 0; shift < bits; shift += RADIX_BITS) {
    x.shift = shift;
    graph_parallel(np, radix_count, &x);
    uint64_t at = 0;
    for (int dgt = 0; dgt < RADIX; dgt++)
      for (int p = 0; p < np; p++) {
        uint64_t c = hist[p][dgt];
        hist[p][dgt] = at;
        at += c;
      }
    graph_parallel(np, radix_scatter, &x);
    uint64_t *t = (uint64_t *)x.from;
    x.from = x.to;
    x.to = t;
  }
  free(hist);
  return (uint64_t *)x.from;
}

/* One R-MAT arc: at each of `scale` levels, pick a quadrant of the adjacency
 * matrix with Graph500's probabilities a=.57 b=.19 c=.19 d=.05. */
static void rmat_arc(Rng *r, int scale, uint64_t *src, uint64_t *dst) {
  /* without branches, which a random quadrant mispredicts half the time:
   * a: neither bit; b (x >= .57): dst's; c (x >= .76): src's; d (x >= .95):
   * both */
  const double b = 0.57, c = 0.57 + 0.19, d = 0.57 + 0.19 + 0.19;
  uint64_t s = 0, t = 0;
  for (int bit = 0; bit < scale; bit++) {
    double x = rng_unit(r);
    s |= (uint64_t)(x >= c) << bit;
    t |= (uint64_t)(((x >= b) & (x < c)) | (x >= d)) << bit;
  }
  *src = s;
  *dst = t;
}

/* Drawing the samples: chunk c of RMAT_CHUNK draws fills key[c * RMAT_CHUNK
 * ...] with src << scale | dst (relabelled through `perm`; self-loops
 * kept, dropped after the sort) from streams[c]. */
typedef struct Draw {
  int scale;
  uint64_t nsamples, nchunks;
  const uint64_t *perm;
  Rng *streams;
  uint64_t *key;
} Draw;

static void draw_part(void *arg, int p, int np) {
  Draw *w = arg;
  for (uint64_t c = part_lo(w->nchunks, p, np), end = part_lo(w->nchunks, p + 1, np); c < end;
       c++) {
    Rng r = w->streams[c];
    uint64_t lo = c * RMAT_CHUNK;
    uint64_t hi = lo + RMAT_CHUNK < w->nsamples ? lo + RMAT_CHUNK : w->nsamples;
    int scale = w->scale;
    const uint64_t *perm = w->perm;
    uint64_t *key = w->key;
    /* in batches, the permutation's entries fetched ahead: they are
     * random reads of an array of 8 bytes a vertex */
    enum { BATCH = 32 };
    uint64_t s[BATCH], t[BATCH];
    for (uint64_t i = lo; i < hi; i += BATCH) {
      int n = hi - i < BATCH ? (int)(hi - i) : BATCH;
      for (int j = 0; j < n; j++) {
        rmat_arc(&r, scale, &s[j], &t[j]);
        __builtin_prefetch(&perm[s[j]]);
        __builtin_prefetch(&perm[t[j]]);
      }
      for (int j = 0; j < n; j++) key[i + j] = perm[s[j]] << scale | perm[t[j]];
    }
  }
}

/* The arcs out of the sorted keys: each part counts the keys it keeps
 * (neither a repeat of the key before, which may lie in the part before,
 * nor a self-loop), then writes them from its offset. */
typedef struct Keep {
  const uint64_t *key;
  uint64_t n;
  int scale;
  int64_t *count; /* by part: kept, then the first slot */
  int32_t *src, *dst;
} Keep;

static bool kept(const Keep *w, uint64_t i) {
  uint64_t k = w->key[i];
  uint64_t mask = ((uint64_t)1 << w->scale) - 1;
  return (i == 0 || k != w->key[i - 1]) && (k >> w->scale) != (k & mask);
}

static void keep_count(void *arg, int p, int np) {
  Keep *w = arg;
  int64_t c = 0;
  for (uint64_t i = part_lo(w->n, p, np), hi = part_lo(w->n, p + 1, np); i < hi; i++) c += kept(w, i);
  w->count[p] = c;
}

static void keep_write(void *arg, int p, int np) {
  Keep *w = arg;
  int64_t at = w->count[p];
  uint64_t mask = ((uint64_t)1 << w->scale) - 1;
  for (uint64_t i = part_lo(w->n, p, np), hi = part_lo(w->n, p + 1, np); i < hi; i++)
    if (kept(w, i)) {
      w->src[at] = (int32_t)(w->key[i] >> w->scale);
      w->dst[at++] = (int32_t)(w->key[i] & mask);
    }
}

/* perm = a random permutation of 0 .. nv-1 (Fisher-Yates; the modulo bias
 * is below 2^-37 for 2^26 vertices). */
static void shuffle(uint64_t *perm, uint64_t nv, Rng *r) {
  for (uint64_t v = 0; v < nv; v++) perm[v] = v;
  for (uint64_t v = nv - 1; v > 0; v--) {
    uint64_t u = rng_next(r) % (v + 1), x = perm[v];
    perm[v] = perm[u];
    perm[u] = x;
  }
}

/* The graph of `n` sampled keys src << bits | dst (`key`, and `tmp` of the
 * same size for the sort; both freed here): sorted, self-loops and
 * repeated arcs dropped, arcs in (src, dst) order. NULL after reporting. */
static Graph *keys_to_graph(uint64_t nv, uint64_t *key, uint64_t *tmp, uint64_t n, int bits,
                           const char *spec, Diag *d) {
  uint64_t *sorted = radix_sort(key, tmp, n, 2 * bits);
  int64_t count[GRAPH_MAX_THREADS];
  Keep keep = {sorted, n, bits, count, NULL, NULL};
  int np = graph_par_parts((int64_t)n, (int64_t)1 << 16);
  int64_t ne = 0;
  int32_t *src = NULL, *dst = NULL;
  if (sorted) {
    graph_parallel(np, keep_count, &keep);
    for (int p = 0; p < np; p++) {
      int64_t c = count[p];
      count[p] = ne;
      ne += c;
    }
    src = malloc(sizeof(int32_t) * (size_t)(ne > 0 ? ne : 1));
    dst = malloc(sizeof(int32_t) * (size_t)(ne > 0 ? ne : 1));
  }
  if (!sorted || !src || !dst) {
    free(key);
    free(tmp);
    free(src);
    free(dst);
    ir_error(d, NO_LOC, "out of memory generating %s", spec);
    return NULL;
  }
  keep.src = src;
  keep.dst = dst;
  graph_parallel(np, keep_write, &keep);
  free(key);
  free(tmp);
  return graph_from_arcs((int64_t)nv, ne, src, dst, spec, d, NO_LOC);
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
  if (!seed_field(spec, p, &seed, d)) return NULL;
  uint64_t nv = 1ull << scale, nsamples = ef << scale;
  if (!samples_fit(spec, nsamples, d)) return NULL;

  /* the generator's own arrays: 8 bytes a vertex, 32 an arc sampled */
  if (!graph_size_ok((int64_t)nv, (int64_t)nsamples, (int64_t)(8 * nv + 32 * nsamples), d,
                     (Loc){spec, 0, 0}))
    return NULL;
  Rng r = rng_seed(seed);
  uint64_t nchunks = (nsamples + RMAT_CHUNK - 1) / RMAT_CHUNK;
  uint64_t *perm = malloc(sizeof(uint64_t) * nv);
  uint64_t *key = malloc(sizeof(uint64_t) * nsamples);
  uint64_t *tmp = malloc(sizeof(uint64_t) * nsamples);
  Rng *streams = malloc(sizeof(Rng) * nchunks);
  if (!perm || !key || !tmp || !streams) {
    free(perm);
    free(key);
    free(tmp);
    free(streams);
    ir_error(d, NO_LOC, "out of memory generating %s", spec);
    return NULL;
  }
  shuffle(perm, nv, &r);
  /* chunk 0 goes on with the spec's stream, chunk c jumps c times */
  for (uint64_t c = 0; c < nchunks; c++) {
    streams[c] = r;
    rng_jump(&r);
  }
  Draw draw = {(int)scale, nsamples, nchunks, perm, streams, key};
  graph_parallel(graph_par_parts((int64_t)nchunks, 1), draw_part, &draw);
  free(streams);
  free(perm);
  return keys_to_graph(nv, key, tmp, nsamples, (int)scale, spec, d);
}

/* ---- power-law (Chung-Lu) and community graphs ---- */

#define SAMPLED_MAX_VERTICES ((uint64_t)1 << 26)

/* Reads the fields N:D of a sampled generator's spec `p` (after its
 * name) and checks the samples N x D fit; `form` names the whole form in
 * messages. */
static bool sampled_size(const char *spec, const char **p, const char *form, uint64_t *nv,
                         uint64_t *deg, Diag *d) {
  if (!spec_field(spec, p, ":", "N", 2, SAMPLED_MAX_VERTICES, nv, d)) return false;
  if (*(*p)++ != ':') {
    ir_error(d, NO_LOC, "bad graph spec '%s': D is missing (%s)", spec, form);
    return false;
  }
  if (!spec_field(spec, p, ":", "D", 1, RMAT_MAX_EDGEFACTOR, deg, d)) return false;
  return samples_fit(spec, *nv * *deg, d);
}

/* The next field after a ':' (missing: `form` in the message). */
static bool next_field(const char *spec, const char **p, const char *name, const char *form,
                       uint64_t lo, uint64_t hi, uint64_t *out, Diag *d) {
  if (*(*p)++ != ':') {
    ir_error(d, NO_LOC, "bad graph spec '%s': %s is missing (%s)", spec, name, form);
    return false;
  }
  return spec_field(spec, p, ":", name, lo, hi, out, d);
}

static int bits_for(uint64_t nv) {
  int b = 1;
  while (((uint64_t)1 << b) < nv) b++;
  return b;
}

/* powerlaw:N:D:G[:SEED]: Chung-Lu. N x D arcs, each end drawn with
 * probability proportional to w_i = (i + 1)^(-1 / (gamma - 1)), gamma = G
 * / 10, so that in- and out-degrees follow a power law of exponent gamma
 * (a social or web graph without its communities); labels permuted. */
static Graph *gen_powerlaw(const char *spec, Diag *d) {
  static const char form[] = "powerlaw:N:D:G[:SEED], G the exponent in tenths";
  const char *p = spec + strlen("powerlaw:");
  uint64_t nv, deg, g10, seed = 1;
  if (!sampled_size(spec, &p, form, &nv, &deg, d) ||
      !next_field(spec, &p, "G", form, 21, 50, &g10, d) || !seed_field(spec, p, &seed, d))
    return NULL;
  uint64_t n = nv * deg;
  if (!graph_size_ok((int64_t)nv, (int64_t)n, (int64_t)(16 * nv + 16 * n), d, (Loc){spec, 0, 0}))
    return NULL;
  double *cdf = malloc(sizeof(double) * nv);
  uint64_t *perm = malloc(sizeof(uint64_t) * nv);
  uint64_t *key = malloc(sizeof(uint64_t) * n);
  uint64_t *tmp = malloc(sizeof(uint64_t) * n);
  if (!cdf || !perm || !key || !tmp) {
    free(cdf);
    free(perm);
    free(key);
    free(tmp);
    ir_error(d, NO_LOC, "out of memory generating %s", spec);
    return NULL;
  }
  double expo = -1.0 / ((double)g10 / 10.0 - 1.0), total = 0;
  for (uint64_t i = 0; i < nv; i++) cdf[i] = total += pow((double)(i + 1), expo);
  Rng r = rng_seed(seed);
  shuffle(perm, nv, &r);
  int bits = bits_for(nv);
  for (uint64_t k = 0; k < n; k++) {
    uint64_t end[2];
    for (int e = 0; e < 2; e++) { /* the first i whose cdf exceeds x */
      double x = rng_unit(&r) * total;
      uint64_t lo = 0, hi = nv - 1;
      while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (cdf[mid] > x)
          hi = mid;
        else
          lo = mid + 1;
      }
      end[e] = perm[lo];
    }
    key[k] = end[0] << bits | end[1];
  }
  free(cdf);
  free(perm);
  return keys_to_graph(nv, key, tmp, n, bits, spec, d);
}

/* community:N:D:K:MIX[:SEED]: K communities of consecutive ids (as a
 * locality-friendly order leaves them), N x D arcs from uniform sources,
 * each to a uniform vertex of its source's community, or, for MIX percent
 * of them, to any vertex. */
static Graph *gen_community(const char *spec, Diag *d) {
  static const char form[] = "community:N:D:K:MIX[:SEED], MIX in percent";
  const char *p = spec + strlen("community:");
  uint64_t nv, deg, k, mix, seed = 1;
  if (!sampled_size(spec, &p, form, &nv, &deg, d) ||
      !next_field(spec, &p, "K", form, 1, SAMPLED_MAX_VERTICES, &k, d) ||
      !next_field(spec, &p, "MIX", form, 0, 100, &mix, d) || !seed_field(spec, p, &seed, d))
    return NULL;
  if (k > nv) {
    ir_error(d, NO_LOC, "bad graph spec '%s': K = %" PRIu64 " communities of N = %" PRIu64
             " vertices: K must be at most N", spec, k, nv);
    return NULL;
  }
  uint64_t n = nv * deg;
  if (!graph_size_ok((int64_t)nv, (int64_t)n, (int64_t)(16 * n), d, (Loc){spec, 0, 0}))
    return NULL;
  uint64_t *key = malloc(sizeof(uint64_t) * n);
  uint64_t *tmp = malloc(sizeof(uint64_t) * n);
  if (!key || !tmp) {
    free(key);
    free(tmp);
    ir_error(d, NO_LOC, "out of memory generating %s", spec);
    return NULL;
  }
  Rng r = rng_seed(seed);
  int bits = bits_for(nv);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t s = rng_next(&r) % nv, t;
    if (rng_unit(&r) * 100 < (double)mix) {
      t = rng_next(&r) % nv;
    } else {
      uint64_t c = (uint64_t)((unsigned __int128)s * k / nv);
      uint64_t lo = (uint64_t)((unsigned __int128)c * nv / k);
      uint64_t hi = (uint64_t)((unsigned __int128)(c + 1) * nv / k);
      t = lo + rng_next(&r) % (hi - lo);
    }
    key[i] = s << bits | t;
  }
  return keys_to_graph(nv, key, tmp, n, bits, spec, d);
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
typedef struct Ring {
  Graph *g;
  int64_t D;
} Ring;

static void ring_fill(void *arg, int part, int nparts) {
  const Ring *p = arg;
  Graph *g = p->g;
  int64_t N = g->nv, D = p->D;
  int64_t from = (int64_t)part_lo((uint64_t)N, part, nparts);
  int64_t to = (int64_t)part_lo((uint64_t)N, part + 1, nparts);
  for (int64_t u = from; u < to; u++) {
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
  for (int64_t v = from; v < to; v++) {
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
  /* one thread below 2^21 edges, a part per 2^20 and more */
  Ring ring = {g, D};
  graph_parallel(graph_par_parts(ne, (int64_t)1 << 20), ring_fill, &ring);
  g->in_ptr[nv] = ne;
  g->out_ptr[nv] = ne;
  graph_compute_stats(g);
  return g;
}

Graph *graph_generate(const char *spec, Diag *d) {
  if (strncmp(spec, "rmat:", 5) == 0) return gen_rmat(spec, d);
  if (strncmp(spec, "grid:", 5) == 0) return gen_grid(spec, d);
  if (strncmp(spec, "ring:", 5) == 0) return gen_ring(spec, d);
  if (strncmp(spec, "powerlaw:", 9) == 0) return gen_powerlaw(spec, d);
  if (strncmp(spec, "community:", 10) == 0) return gen_community(spec, d);
  ir_error(d, NO_LOC, "unknown graph generator '%s' (known: "
           "rmat:SCALE:EDGEFACTOR[:SEED], grid:WxH, ring:N:D, powerlaw:N:D:G[:SEED], "
           "community:N:D:K:MIX[:SEED])", spec);
  return NULL;
}

bool graph_is_generator(const char *spec) {
  static const char *const names[] = {"rmat:", "grid:", "ring:", "powerlaw:", "community:"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strncmp(spec, names[i], strlen(names[i])) == 0) return true;
  return false;
}

Graph *graph_open(const char *spec, Diag *d) {
  if (graph_is_generator(spec)) return graph_generate(spec, d);
  return graph_read(spec, d);
}
