/* bench/gather_cache.c: how much traffic must a sum aggregation move on a
 * graph, through DRAM and from L2 into the SMs, and what fraction of the
 * fewest-bytes bound does that leave it at best? An analysis on the host,
 * not part of gop (issue 37: graphs above 1M edges at F >= 128 at 40% of
 * the bound, R-MAT 22 and cnr-2000 named; the sums against cuSPARSE).
 *
 *   gop_gather_cache [--F 64,128,256] [--orders none,degree,rcm,community]
 *       [--l2-mb 60] [--l1-kb 200] [--copy-gbps 4234.5] [--l2-gbps 9600]
 *       [--csv FILE] GRAPH ...
 *
 * GRAPH is a file or a generator spec (rmat:22:16:5). Y[v, :] = sum over
 * the in-edges (u -> v) of X[u, :], f32. The fewest bytes are gop_bench's:
 * X and Y once, the CSR's offsets and sources (runtime/exec.c). The
 * gathers are one stream, destinations in order and each one's in-edges
 * in CSR order, as the group schedules walk their table; destinations go
 * to the SMs 8 at a time in turn (blocks handed out in order), each SM's
 * L1 a 4-way cache of rows (200 KB), the rows it misses going to one LRU
 * L2 (60 MB), whose misses are read from DRAM. Per order of the vertices
 * and per F, a line for each way of gathering:
 *
 *   lru      the stream as it is;
 *   opt      the same, Belady's optimal L2 (evict the row used again
 *            latest): no replacement policy moves fewer DRAM bytes for
 *            this order of gathers;
 *   panelsP  the distinct (panel, source) pairs of panels of P consecutive
 *            destinations (spmm_panels): each shared source read once;
 *   tilesT   feature tiles of T floats (spmm_tiles): F / T passes over the
 *            stream, each with its own CSR read and T x 4-byte rows;
 *   blocksS  source blocking: the sources cut into S ranges of ids, each
 *            range's in-edges a pass whose rows fit in L2 (read once), a
 *            destination's partial row read and written again in every
 *            pass after the first that reaches it;
 *
 * with the bytes each moves (GB: the CSR, the rows read from DRAM, Y, all
 * of DRAM, and what crosses from L2: CSR, the rows the L1s miss, Y) and the
 * best fraction of the bound a kernel moving them can reach: the bound's
 * time at the copy rate over the longer of DRAM's time at the copy rate
 * and L2's at its gather rate (bench/gather_probe.cu measures both: on an
 * H200 9.4-10.3 TB/s from L2, 4.3 TB/s from DRAM,
 * bench/results/2026-12-01-H200-gather-ceiling). --csv writes the bytes for
 * bench/ceiling.py. */
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

/* Zeroed memory, or exit with a message (an analysis tool: nothing to
 * keep when a graph does not fit). */
static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "gop_gather_cache: out of memory (%zu x %zu bytes)\n", n, size);
    exit(1);
  }
  return p;
}

/* The gather stream: per destination its in-edges' sources, or with P > 1
 * the distinct sources of each panel of P destinations; unit k (a
 * destination or a panel) is src[first[k] .. first[k + 1]). */
typedef struct {
  int32_t *src;
  int64_t n, nunits, *first;
} Stream;

static Stream stream_of(const Graph *g, int P) {
  Stream s = {xcalloc((size_t)g->ne, sizeof(int32_t)), 0, (g->nv + P - 1) / P, NULL};
  s.first = xcalloc((size_t)(s.nunits + 1), sizeof(int64_t));
  int32_t *seen = NULL;
  if (P > 1) {
    seen = xcalloc((size_t)g->nv, sizeof(int32_t));
    for (int64_t i = 0; i < g->nv; i++) seen[i] = -1;
  }
  for (int64_t k = 0; k < s.nunits; k++) {
    s.first[k] = s.n;
    for (int64_t v = k * P; v < (k + 1) * P && v < g->nv; v++)
      for (int64_t e = g->in_ptr[v]; e < g->in_ptr[v + 1]; e++) {
        int32_t u = g->in_src[e];
        if (seen) {
          if (seen[u] == (int32_t)k) continue;
          seen[u] = (int32_t)k;
        }
        s.src[s.n++] = u;
      }
  }
  s.first[s.nunits] = s.n;
  free(seen);
  return s;
}

static void stream_free(Stream *s) { free(s->src), free(s->first); }

/* The SMs' L1s: units handed out in order, `block` at a time, to the SMs
 * in turn (blocks of warps dispatched in order); each SM's L1 a cache of
 * `ways`-way sets of rows, least recently used out. Returns the stream of
 * L1 misses, in order: what reaches L2. */
typedef struct {
  int sms, block, ways;
  double bytes; /* an SM's L1 given to the gathered rows */
} L1Model;

static Stream l1_misses(const Stream *s, int64_t nv, double row, const L1Model *m) {
  Stream out = {xcalloc((size_t)s->n, sizeof(int32_t)), 0, 0, NULL};
  int64_t sets = (int64_t)(m->bytes / row) / m->ways;
  if (sets > nv) sets = nv; /* room for every row already */
  if (sets < 1) { /* no room: every gather reaches L2 */
    memcpy(out.src, s->src, sizeof(int32_t) * (size_t)s->n);
    out.n = s->n;
    return out;
  }
  size_t slots = (size_t)m->sms * (size_t)sets * (size_t)m->ways;
  int32_t *tag = xcalloc(slots, sizeof(int32_t));
  uint64_t *used = xcalloc(slots, sizeof(uint64_t));
  for (size_t i = 0; i < slots; i++) tag[i] = -1;
  uint64_t clock = 0;
  for (int64_t k = 0; k < s->nunits; k++) {
    int64_t sm = (k / m->block) % m->sms;
    for (int64_t i = s->first[k]; i < s->first[k + 1]; i++) {
      int32_t u = s->src[i];
      uint64_t h = (uint64_t)u * 0x9e3779b97f4a7c15ull;
      size_t base = ((size_t)sm * (size_t)sets + (size_t)((h >> 32) % (uint64_t)sets)) * (size_t)m->ways;
      int hit = -1, victim = 0;
      for (int w = 0; w < m->ways; w++) {
        if (tag[base + w] == u) { hit = w; break; }
        if (used[base + w] < used[base + victim]) victim = w;
      }
      clock++;
      if (hit >= 0) {
        used[base + hit] = clock;
        continue;
      }
      tag[base + victim] = u;
      used[base + victim] = clock;
      out.src[out.n++] = u;
    }
  }
  free(tag), free(used);
  return out;
}

/* Misses of a least-recently-used cache of `cap` rows over the stream. */
static int64_t lru_misses(const Stream *s, int64_t nv, int64_t cap) {
  if (cap <= 0) return s->n; /* a cache smaller than a row keeps nothing */
  if (cap >= nv) { /* everything fits: compulsory misses only */
    uint8_t *in = xcalloc((size_t)nv, 1);
    int64_t m = 0;
    for (int64_t i = 0; i < s->n; i++)
      if (!in[s->src[i]]) in[s->src[i]] = 1, m++;
    free(in);
    return m;
  }
  int32_t *prev = xcalloc((size_t)nv, sizeof(int32_t)), *next = xcalloc((size_t)nv, sizeof(int32_t));
  uint8_t *in = xcalloc((size_t)nv, 1);
  int32_t head = -1, tail = -1; /* head: most recent */
  int64_t size = 0, m = 0;
  for (int64_t i = 0; i < s->n; i++) {
    int32_t u = s->src[i];
    if (in[u]) { /* unlink */
      if (u == head) continue;
      next[prev[u]] = next[u];
      if (next[u] >= 0) prev[next[u]] = prev[u];
      else tail = prev[u];
    } else {
      m++;
      if (size == cap) { /* evict the tail */
        int32_t t = tail;
        tail = prev[t];
        next[tail] = -1;
        in[t] = 0;
        size--;
      }
      in[u] = 1;
      size++;
    }
    prev[u] = -1;
    next[u] = head;
    if (head >= 0) prev[head] = u;
    head = u;
    if (tail < 0) tail = u;
  }
  free(prev), free(next), free(in);
  return m;
}

/* Belady: a max-heap of the cached rows keyed by their next use, stale
 * entries skipped when they surface. */
typedef struct { int64_t key; int32_t row; } HeapItem;

static void heap_push(HeapItem *h, int64_t *n, HeapItem x) {
  int64_t i = (*n)++;
  while (i > 0) {
    int64_t p = (i - 1) / 2;
    if (h[p].key >= x.key) break;
    h[i] = h[p], i = p;
  }
  h[i] = x;
}

static HeapItem heap_pop(HeapItem *h, int64_t *n) {
  HeapItem top = h[0], x = h[--(*n)];
  int64_t i = 0;
  for (;;) {
    int64_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && h[c + 1].key > h[c].key) c++;
    if (h[c].key <= x.key) break;
    h[i] = h[c], i = c;
  }
  h[i] = x;
  return top;
}

static int64_t opt_misses(const Stream *s, int64_t nv, int64_t cap) {
  if (cap <= 0 || cap >= nv) return lru_misses(s, nv, cap);
  int64_t *nextuse = xcalloc((size_t)s->n, sizeof(int64_t));
  int64_t *last = xcalloc((size_t)nv, sizeof(int64_t));
  for (int64_t i = 0; i < nv; i++) last[i] = INT64_MAX;
  for (int64_t i = s->n - 1; i >= 0; i--) {
    nextuse[i] = last[s->src[i]];
    last[s->src[i]] = i;
  }
  /* cur[u]: the next use the heap's live entry for u carries; -1 absent */
  int64_t *cur = last;
  for (int64_t i = 0; i < nv; i++) cur[i] = -1;
  /* a hit pushes a fresh entry and leaves a stale one: bound the heap by
   * rebuilding it from cur[] when it reaches 4 x cap */
  int64_t hcap = 4 * cap + 16, hn = 0, size = 0, m = 0;
  HeapItem *h = xcalloc((size_t)hcap, sizeof(HeapItem));
  int32_t *rows = xcalloc((size_t)cap, sizeof(int32_t));
  for (int64_t i = 0; i < s->n; i++) {
    int32_t u = s->src[i];
    if (cur[u] < 0) {
      m++;
      if (size == cap) {
        for (;;) {
          HeapItem t = heap_pop(h, &hn);
          if (cur[t.row] == t.key) {
            cur[t.row] = -1;
            size--;
            break;
          }
        }
      }
      size++;
    }
    cur[u] = nextuse[i];
    if (hn == hcap) { /* drop the stale entries */
      int64_t k = 0;
      for (int64_t j = 0; j < hn; j++)
        if (cur[h[j].row] == h[j].key) rows[k++] = h[j].row;
      hn = 0;
      for (int64_t j = 0; j < k; j++) {
        if (cur[rows[j]] < 0) continue;
        heap_push(h, &hn, (HeapItem){cur[rows[j]], rows[j]});
      }
    }
    heap_push(h, &hn, (HeapItem){nextuse[i], u});
  }
  free(nextuse), free(last), free(h), free(rows);
  return m;
}

/* Source blocking's partial rows: per destination the number of distinct
 * source ranges among its in-edges (k); Y moves 2k - 1 rows for it (written
 * by the first pass, read and written by each later one), 1 when k = 0. */
static int64_t blocked_y_rows(const Graph *g, int S) {
  int64_t per = (g->nv + S - 1) / S, rows = 0;
  int32_t *mark = xcalloc((size_t)S, sizeof(int32_t));
  for (int i = 0; i < S; i++) mark[i] = -1;
  for (int64_t v = 0; v < g->nv; v++) {
    int64_t k = 0;
    for (int64_t e = g->in_ptr[v]; e < g->in_ptr[v + 1]; e++) {
      int b = (int)(g->in_src[e] / per);
      if (mark[b] != (int32_t)v) mark[b] = (int32_t)v, k++;
    }
    rows += k ? 2 * k - 1 : 1;
  }
  free(mark);
  return rows;
}

/* What a method moves: through DRAM (the CSR, the gathered rows that miss
 * L2, Y) and from L2 into the SMs (the gathered rows that miss L1, the
 * CSR and Y once more); a kernel takes at least the longer of the two at
 * the measured rates. */
typedef struct {
  double copy_gbps, l2_gbps; /* DRAM copy rate (read + written), L2 gather rate */
  double l2_bytes;           /* L2 given to the gathered rows */
  L1Model l1;
} Machine;

static FILE *csv_out; /* --csv: the bytes, for bench/ceiling.py */

static void line(const char *name, const Graph *g, const char *order, const char *method, int F,
                 double csr, double dram_rows, double y, double l2_rows, double bound,
                 const Machine *mc) {
  if (csv_out)
    fprintf(csv_out, "%s,%s,%d,%lld,%lld,%s,%.0f,%.0f,%.0f,%.0f\n", name, order, F,
            (long long)g->nv, (long long)g->ne, method, csr, dram_rows, y, l2_rows);
  double dram = csr + dram_rows + y, l2 = csr + l2_rows + y;
  double t_dram = dram / mc->copy_gbps, t_l2 = l2 / mc->l2_gbps;
  double t = t_dram > t_l2 ? t_dram : t_l2;
  printf("%-18s %-9s %4d %-10s %7.3f %8.3f %7.3f %8.3f %8.3f %-4s %6.1f%%\n", name, order, F,
         method, csr / 1e9, dram_rows / 1e9, y / 1e9, dram / 1e9, l2 / 1e9,
         t_dram >= t_l2 ? "dram" : "l2", 100.0 * (bound / mc->copy_gbps) / t);
  fflush(stdout);
}

/* The rows a stream of `row`-byte rows gathers into the SMs and from DRAM
 * under the machine's L1s and an LRU L2 (opt: Belady's L2 instead). */
static void gathered(const Stream *s, int64_t nv, double row, const Machine *mc, bool opt,
                     double *l2_rows, double *dram_rows) {
  Stream m = l1_misses(s, nv, row, &mc->l1);
  int64_t cap = (int64_t)(mc->l2_bytes / row);
  *l2_rows = m.n * row;
  *dram_rows = (opt ? opt_misses(&m, nv, cap) : lru_misses(&m, nv, cap)) * row;
  stream_free(&m);
}

static void analyse(const char *name, const Graph *g, const char *order, const int *Fs, int nF,
                    const Machine *mc) {
  double csr = (g->nv + 1) * 4.0 + g->ne * 4.0;
  Stream s = stream_of(g, 1);
  Stream pan[2] = {stream_of(g, 2), stream_of(g, 4)};
  for (int fi = 0; fi < nF; fi++) {
    int F = Fs[fi];
    double row = F * 4.0, xy = g->nv * row;
    double bound = 2 * xy + csr, l2r, dr;
    gathered(&s, g->nv, row, mc, false, &l2r, &dr);
    line(name, g, order, "lru", F, csr, dr, xy, l2r, bound, mc);
    double plain_l2 = l2r;
    gathered(&s, g->nv, row, mc, true, &l2r, &dr);
    line(name, g, order, "opt", F, csr, dr, xy, l2r, bound, mc);
    for (int p = 0; p < 2; p++) {
      char m[24];
      snprintf(m, sizeof m, "panels%d", p ? 4 : 2);
      gathered(&pan[p], g->nv, row, mc, false, &l2r, &dr);
      line(name, g, order, m, F, csr, dr, xy, l2r, bound, mc);
    }
    for (int T = 32; T < F; T *= 2) {
      char m[24];
      snprintf(m, sizeof m, "tiles%d", T);
      double passes = F / T;
      gathered(&s, g->nv, T * 4.0, mc, false, &l2r, &dr);
      line(name, g, order, m, F, csr * passes, dr * passes, xy, l2r * passes, bound, mc);
    }
    /* source blocks: X read once from DRAM (each range fits the cache), the
     * partial rows of Y read and written again, the gathers through L2 as
     * in the plain stream */
    double S0 = ceil(xy / mc->l2_bytes); /* at most a range a vertex */
    int S = S0 < (double)g->nv ? (int)S0 : (int)g->nv;
    for (int k = 0; k < 3 && S <= g->nv; k++, S *= 2) {
      if (S < 2) continue;
      char m[24];
      snprintf(m, sizeof m, "blocks%d", S);
      line(name, g, order, m, F, csr + S * 4.0 * (g->nv + 1), xy, blocked_y_rows(g, S) * row,
           plain_l2, bound, mc);
    }
  }
  stream_free(&s), stream_free(&pan[0]), stream_free(&pan[1]);
}

static int parse_list(const char *s, int *out, int max) {
  int n = 0;
  while (*s) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (n == max || end == s || errno || v < 1 || v > 4096 || (*end && *end != ',')) return -1;
    out[n++] = (int)v;
    s = *end ? end + 1 : end;
  }
  return n;
}

int main(int argc, char **argv) {
  int Fs[8] = {64, 128, 256}, nF = 3;
  /* an H200's: the copy rate gop_bench measured, the L2 gather rate of
   * bench/gather_probe.cu (32 MB of rows), 132 SMs, 60 of the L2's 62.9
   * MB, 200 of each SM's 256 KB of L1 */
  Machine mc = {.copy_gbps = 4234.5, .l2_gbps = 9600, .l2_bytes = 60e6,
                .l1 = {.sms = 132, .block = 8, .ways = 4, .bytes = 200e3}};
  /* the orders point into `list`; the CSV is opened once the command line
   * has passed, so that a refused one leaves the file as it was */
  char list[256];
  const char *orders[16] = {"none"}, *csv_path = NULL;
  int norders = 1;
  struct {
    const char *name;
    double *to, scale;
  } sizes[] = {{"--l2-mb", &mc.l2_bytes, 1e6}, {"--l1-kb", &mc.l1.bytes, 1e3},
               {"--copy-gbps", &mc.copy_gbps, 1}, {"--l2-gbps", &mc.l2_gbps, 1}};
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    int k = 0;
    while (k < 4 && strcmp(argv[i], sizes[k].name)) k++;
    if (k < 4 && i + 1 < argc) {
      char *end;
      double v = strtod(argv[++i], &end);
      if (*end || !(v >= 0) || v > 1e9) {
        fprintf(stderr, "gop_gather_cache: %s wants a number, got '%s'\n", sizes[k].name, argv[i]);
        return 2;
      }
      *sizes[k].to = v * sizes[k].scale;
    } else if (!strcmp(argv[i], "--F") && i + 1 < argc) {
      nF = parse_list(argv[++i], Fs, 8);
      if (nF <= 0) {
        fprintf(stderr, "gop_gather_cache: --F wants widths 1..4096 separated by commas, got '%s'\n", argv[i]);
        return 2;
      }
    } else if (!strcmp(argv[i], "--orders") && i + 1 < argc) {
      if (snprintf(list, sizeof list, "%s", argv[++i]) >= (int)sizeof list || !*list) {
        fprintf(stderr, "gop_gather_cache: --orders wants a list of orders, got '%s'\n", argv[i]);
        return 2;
      }
      norders = 0;
      for (char *o = strtok(list, ","); o; o = strtok(NULL, ",")) {
        const char *why = graph_order_problem(o, NULL);
        if (why || norders == 16) {
          fprintf(stderr, "gop_gather_cache: --orders %s: %s\n", o, why ? why : "at most 16 orders");
          return 2;
        }
        orders[norders++] = o;
      }
    } else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
      csv_path = argv[++i];
    } else {
      fprintf(stderr, "usage: gop_gather_cache [--F 64,128,256] [--orders none,degree,rcm,community]\n"
                      "       [--l2-mb 60] [--l1-kb 200] [--copy-gbps 4234.5] [--l2-gbps 9600]\n"
                      "       [--csv FILE] GRAPH ...\n");
      return 2;
    }
  }
  if (i == argc) {
    fprintf(stderr, "gop_gather_cache: no graph given\n");
    return 2;
  }
  if (!(mc.l2_bytes > 0) || !(mc.copy_gbps > 0) || !(mc.l2_gbps > 0)) {
    fprintf(stderr, "gop_gather_cache: --l2-mb, --copy-gbps and --l2-gbps must be above 0\n");
    return 2;
  }
  if (csv_path) {
    csv_out = fopen(csv_path, "w");
    if (!csv_out) {
      fprintf(stderr, "gop_gather_cache: --csv %s: %s\n", csv_path, strerror(errno));
      return 2;
    }
    fprintf(csv_out, "graph,order,F,nv,ne,method,csr_bytes,dram_row_bytes,y_bytes,l2_row_bytes\n");
  }
  mc.copy_gbps *= 1e9, mc.l2_gbps *= 1e9; /* bytes a second */
  printf("# L2 %.1f MB and L1 %.0f KB x %d SMs given to the gathered rows; copy %.1f GB/s, "
         "L2 gathers %.1f GB/s; GB moved\n",
         mc.l2_bytes / 1e6, mc.l1.bytes / 1e3, mc.l1.sms, mc.copy_gbps / 1e9, mc.l2_gbps / 1e9);
  printf("%-18s %-9s %4s %-10s %7s %8s %7s %8s %8s %-4s %7s\n", "graph", "order", "F", "method",
         "csr", "rows", "y", "dram", "l2", "by", "best");
  int rc = 0;
  for (; i < argc; i++) {
    Diag d;
    ir_diag_init(&d, stderr); /* errors name the file and the line */
    Graph *g = graph_open(argv[i], &d);
    if (!g) {
      ir_diag_free(&d);
      rc = 1;
      continue;
    }
    const char *base = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
    for (int k = 0; k < norders; k++) {
      const char *o = orders[k];
      Graph *h = strcmp(o, "none") ? graph_reorder(g, o, &d) : g;
      if (!h) {
        rc = 1;
        continue;
      }
      analyse(base, h, o, Fs, nF, &mc);
      if (h != g) graph_free(h);
    }
    graph_free(g);
    ir_diag_free(&d);
  }
  if (csv_out && fclose(csv_out) != 0) {
    fprintf(stderr, "gop_gather_cache: writing the --csv file failed\n");
    rc = 1;
  }
  return rc;
}
