/* graph/gopg.c: the binary graph format (.gopg), read memory-mapped.
 *
 * Reading a text graph costs parsing and the CSR/CSC builds, seconds for
 * tens of millions of edges; a .gopg file holds the built arrays as they
 * lie in memory, so opening one maps the file and checks it, and the
 * second time it is read at the speed of the page cache. The layout is in
 * docs/graph-format.md: a header of GOPG_HEADER bytes (magic, version,
 * sizes, an offset, length and checksum for each of the eight arrays, the
 * statistics, the name, and a checksum of the header itself), then the
 * arrays, each starting on a 64-byte boundary. Everything is
 * little-endian; integers and doubles are stored as the x86-64 and
 * AArch64 hosts gop runs on hold them.
 *
 * A file is trusted only after it is checked: the header's size, magic,
 * version and checksum, the file's length against the header's, every
 * array's length against |V| and |E|, and then, in one parallel pass over
 * each array, its checksum and its values (offsets rise from 0 to |E|,
 * vertex ids lie in 0..|V|-1, edge ids in 0..|E|-1), so that a damaged or
 * hand-made file is refused with what is wrong, and never lets a kernel or
 * the interpreter index out of bounds. Writing goes through
 * ir_write_file: a temporary in the same folder renamed into place.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/graph.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .gopg format is little-endian: a big-endian host would need to swap it"
#endif

#define GOPG_MAGIC "GOPGRAPH"
#define GOPG_VERSION 1
#define GOPG_HEADER 4096
#define GOPG_ALIGN 64
#define GOPG_NAME_MAX 1024
enum { NARRAYS = 8 };

/* The header's fields, at these byte offsets. */
enum {
  H_MAGIC = 0,      /* 8 bytes */
  H_VERSION = 8,    /* u32 */
  H_HEADER = 12,    /* u32: GOPG_HEADER */
  H_NV = 16,        /* i64 */
  H_NE = 24,        /* i64 */
  H_FILE = 32,      /* u64: the file's length */
  H_FLAGS = 40,     /* u32: bit 0, edge ids in CSR order */
  H_NAMELEN = 44,   /* u32 */
  H_ARRAYS = 48,    /* NARRAYS x (u64 offset, u64 bytes, u64 checksum) */
  H_STATS = H_ARRAYS + NARRAYS * 24, /* 8 x 8 bytes */
  H_NAME = H_STATS + 64,             /* GOPG_NAME_MAX bytes */
  H_SUM = GOPG_HEADER - 8,           /* u64: checksum of bytes 0..H_SUM */
};

/* The arrays in file order, and what their values must be. */
typedef enum { A_VERTEX, A_EDGE, A_PTR } Kind;
static const struct {
  const char *name;
  int width; /* bytes an entry */
  bool per_vertex; /* |V| + 1 entries, else |E| */
  Kind kind;
} arrays[NARRAYS] = {
    {"src", 4, false, A_VERTEX},   {"dst", 4, false, A_VERTEX},
    {"in_ptr", 8, true, A_PTR},    {"in_eid", 8, false, A_EDGE},
    {"in_src", 4, false, A_VERTEX}, {"out_ptr", 8, true, A_PTR},
    {"out_eid", 8, false, A_EDGE}, {"out_dst", 4, false, A_VERTEX},
};

static void **array_slot(Graph *g, int i) {
  switch (i) {
  case 0: return (void **)&g->src;
  case 1: return (void **)&g->dst;
  case 2: return (void **)&g->in_ptr;
  case 3: return (void **)&g->in_eid;
  case 4: return (void **)&g->in_src;
  case 5: return (void **)&g->out_ptr;
  case 6: return (void **)&g->out_eid;
  default: return (void **)&g->out_dst;
  }
}

static uint64_t get64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}
static uint32_t get32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }
static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }

/* ---- the checksum ----
 *
 * The sum, modulo 2^64, of mix(word ^ index * golden) over the 8-byte
 * words (the last one padded with zeros): mix is a bijection, so changing
 * one word always changes the sum, the index makes it see words swapped,
 * and a sum adds up over parts in any order: threads check an array in
 * parallel and get the serial value. */
static uint64_t mix(uint64_t x) {
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ull;
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ull;
  return x ^ (x >> 32);
}

static uint64_t sum_words(const unsigned char *p, uint64_t from, uint64_t to, uint64_t bytes) {
  uint64_t h = 0;
  for (uint64_t i = from; i < to; i++) {
    uint64_t w = 0;
    uint64_t at = i * 8;
    if (at + 8 <= bytes) w = get64(p + at);
    else memcpy(&w, p + at, (size_t)(bytes - at));
    h += mix(w ^ (i * 0x9e3779b97f4a7c15ull));
  }
  return h;
}

/* One array's pass: the checksum of its part, and the first entry whose
 * value is wrong. */
typedef struct Check {
  const unsigned char *p;
  uint64_t bytes, words;
  int width;
  Kind kind;
  int64_t count, limit; /* entries; values below limit (PTR: the last is limit) */
  uint64_t sum[GRAPH_MAX_THREADS];
  int64_t bad[GRAPH_MAX_THREADS]; /* -1: none */
} Check;

static void check_part(void *arg, int part, int np) {
  Check *c = arg;
  uint64_t w0 = (uint64_t)((unsigned __int128)c->words * part / np);
  uint64_t w1 = (uint64_t)((unsigned __int128)c->words * (part + 1) / np);
  c->sum[part] = sum_words(c->p, w0, w1, c->bytes);
  c->bad[part] = -1;
  /* the entries inside words [w0, w1) */
  int64_t per = 8 / c->width;
  int64_t e0 = (int64_t)w0 * per, e1 = (int64_t)w1 * per;
  if (e1 > c->count) e1 = c->count;
  for (int64_t e = e0; e < e1; e++) {
    bool ok;
    if (c->width == 4) {
      int32_t v;
      memcpy(&v, c->p + 4 * e, 4);
      ok = v >= 0 && v < c->limit;
    } else {
      int64_t v;
      memcpy(&v, c->p + 8 * e, 8);
      if (c->kind == A_PTR) {
        int64_t prev = 0;
        if (e > 0) memcpy(&prev, c->p + 8 * (e - 1), 8);
        ok = e == 0 ? v == 0 : v >= prev && v <= c->limit;
        if (e == c->count - 1) ok = ok && v == c->limit;
      } else {
        ok = v >= 0 && v < c->limit;
      }
    }
    if (!ok) {
      c->bad[part] = e;
      return;
    }
  }
}

/* ---- writing ---- */

typedef struct Out {
  const Graph *g;
  unsigned char *header;
  uint64_t offset[NARRAYS], bytes[NARRAYS];
} Out;

static uint64_t array_bytes(int i, int64_t nv, int64_t ne) {
  return (uint64_t)arrays[i].width * (uint64_t)(arrays[i].per_vertex ? nv + 1 : ne);
}

static void fill(FILE *f, const void *arg) {
  const Out *o = arg;
  fwrite(o->header, 1, GOPG_HEADER, f);
  uint64_t at = GOPG_HEADER;
  static const char zeros[GOPG_ALIGN];
  for (int i = 0; i < NARRAYS; i++) {
    fwrite(zeros, 1, (size_t)(o->offset[i] - at), f);
    const void *data = *array_slot((Graph *)o->g, i);
    if (o->bytes[i]) fwrite(data, 1, (size_t)o->bytes[i], f);
    at = o->offset[i] + o->bytes[i];
  }
}

static uint64_t checksum(const void *data, uint64_t bytes) {
  Check c = {.p = data, .bytes = bytes, .words = (bytes + 7) / 8, .width = 8, .kind = A_EDGE,
             .count = 0};
  int np = graph_par_parts((int64_t)c.words, (int64_t)1 << 18);
  graph_parallel(np, check_part, &c);
  uint64_t h = 0;
  for (int p = 0; p < np; p++) h += c.sum[p];
  return h;
}

static double get_double(const unsigned char *p) {
  double v;
  memcpy(&v, p, 8);
  return v;
}
static void put_double(unsigned char *p, double v) { memcpy(p, &v, 8); }

int graph_write_gopg(const Graph *g, const char *path, Diag *d) {
  unsigned char *h = calloc(1, GOPG_HEADER);
  if (!h) {
    ir_error(d, (Loc){path, 0, 0}, "cannot write a binary graph: out of memory");
    return -1;
  }
  Out o = {g, h, {0}, {0}};
  uint64_t at = GOPG_HEADER;
  for (int i = 0; i < NARRAYS; i++) {
    o.offset[i] = (at + GOPG_ALIGN - 1) / GOPG_ALIGN * GOPG_ALIGN;
    o.bytes[i] = array_bytes(i, g->nv, g->ne);
    at = o.offset[i] + o.bytes[i];
  }
  memcpy(h + H_MAGIC, GOPG_MAGIC, 8);
  put32(h + H_VERSION, GOPG_VERSION);
  put32(h + H_HEADER, GOPG_HEADER);
  put64(h + H_NV, (uint64_t)g->nv);
  put64(h + H_NE, (uint64_t)g->ne);
  put64(h + H_FILE, at);
  put32(h + H_FLAGS, g->csr_edges ? 1u : 0u);
  const char *name = g->name ? g->name : "";
  size_t len = strlen(name);
  if (len > GOPG_NAME_MAX) len = GOPG_NAME_MAX; /* a name, not data: cut */
  put32(h + H_NAMELEN, (uint32_t)len);
  memcpy(h + H_NAME, name, len);
  for (int i = 0; i < NARRAYS; i++) {
    unsigned char *a = h + H_ARRAYS + 24 * i;
    put64(a, o.offset[i]);
    put64(a + 8, o.bytes[i]);
    put64(a + 16, checksum(*array_slot((Graph *)g, i), o.bytes[i]));
  }
  const GraphStats *s = &g->stats;
  unsigned char *st = h + H_STATS;
  put_double(st, s->deg_mean);
  put_double(st + 8, s->in_deg_std);
  put64(st + 16, (uint64_t)s->in_deg_max);
  put64(st + 24, (uint64_t)s->out_deg_max);
  put64(st + 32, (uint64_t)(int64_t)s->isolated);
  put64(st + 40, (uint64_t)s->self_loops);
  put_double(st + 48, s->aes);
  put_double(st + 56, s->locality);
  put64(h + H_SUM, sum_words(h, 0, H_SUM / 8, H_SUM));
  int rc = ir_write_file(path, "a binary graph", fill, &o, d);
  free(h);
  return rc;
}

/* ---- reading ---- */

bool graph_file_is_gopg(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return false;
  char magic[8];
  bool is = read(fd, magic, 8) == 8 && memcmp(magic, GOPG_MAGIC, 8) == 0;
  close(fd);
  return is;
}

Graph *graph_read_gopg(const char *path, Diag *d) {
  Loc at = {path, 0, 0};
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    ir_error(d, at, "cannot open: %s", strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    ir_error(d, at, "cannot open: %s", strerror(errno));
    close(fd);
    return NULL;
  }
  uint64_t size = (uint64_t)st.st_size;
  unsigned char *map = NULL;
  if (size >= GOPG_HEADER) {
    /* copy-on-write: nothing writes a graph's arrays, and the file stays
     * as it is if something did */
    map = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      ir_error(d, at, "cannot map the binary graph: %s", strerror(errno));
      close(fd);
      return NULL;
    }
  }
  close(fd);
  Graph *g = NULL;
  const unsigned char *h = map;
  /* the header, then what it says, each refused with its reason */
  if (!map) {
    unsigned char magic[8] = {0};
    int fd2 = open(path, O_RDONLY);
    bool ours = fd2 >= 0 && read(fd2, magic, 8) == 8 && memcmp(magic, GOPG_MAGIC, 8) == 0;
    if (fd2 >= 0) close(fd2);
    if (ours)
      ir_error(d, at, "truncated binary graph: %" PRIu64 " bytes, shorter than its %d-byte "
               "header", size, GOPG_HEADER);
    else
      ir_error(d, at, "not a gop binary graph (.gopg): %" PRIu64 " bytes, no '" GOPG_MAGIC
               "' header (write one with gopc graph G -o FILE.gopg)", size);
    return NULL;
  }
  if (memcmp(h + H_MAGIC, GOPG_MAGIC, 8) != 0) {
    ir_error(d, at, "not a gop binary graph (.gopg): it does not start with '" GOPG_MAGIC
             "' (write one with gopc graph G -o FILE.gopg)");
    goto fail;
  }
  if (get32(h + H_VERSION) != GOPG_VERSION) {
    ir_error(d, at, "binary graph of format version %" PRIu32 ": this gop reads version %d "
             "(write it again with this gopc)", get32(h + H_VERSION), GOPG_VERSION);
    goto fail;
  }
  if (get64(h + H_SUM) != sum_words(h, 0, H_SUM / 8, H_SUM) ||
      get32(h + H_HEADER) != GOPG_HEADER) {
    ir_error(d, at, "corrupted binary graph: the header's checksum does not match");
    goto fail;
  }
  uint64_t want = get64(h + H_FILE);
  if (size != want) {
    ir_error(d, at, "%s binary graph: %" PRIu64 " bytes, its header says %" PRIu64,
             size < want ? "truncated" : "corrupted", size, want);
    goto fail;
  }
  int64_t nv = (int64_t)get64(h + H_NV), ne = (int64_t)get64(h + H_NE);
  uint32_t namelen = get32(h + H_NAMELEN);
  if (nv < 0 || nv > INT32_MAX || ne < 0 || ne > GRAPH_MAX_EDGES || namelen > GOPG_NAME_MAX) {
    ir_error(d, at, "corrupted binary graph: |V| %" PRId64 ", |E| %" PRId64 " (vertex ids "
             "are 32-bit, at most %" PRId64 " edges)", nv, ne, (int64_t)GRAPH_MAX_EDGES);
    goto fail;
  }
  g = calloc(1, sizeof *g);
  if (!g || !(g->name = strdup(path))) {
    ir_error(d, at, "out of memory reading a binary graph");
    goto fail;
  }
  g->nv = (int32_t)nv;
  g->ne = ne;
  g->csr_edges = (get32(h + H_FLAGS) & 1) != 0;
  for (int i = 0; i < NARRAYS; i++) {
    const unsigned char *a = h + H_ARRAYS + 24 * i;
    uint64_t off = get64(a), bytes = get64(a + 8), sum = get64(a + 16);
    if (bytes != array_bytes(i, nv, ne) || off % GOPG_ALIGN || off < GOPG_HEADER ||
        off > size || bytes > size - off) {
      ir_error(d, at, "corrupted binary graph: array %s (%" PRIu64 " bytes at %" PRIu64
               ") does not fit |V| %" PRId64 ", |E| %" PRId64 " and the file's %" PRIu64
               " bytes", arrays[i].name, bytes, off, nv, ne, size);
      goto fail;
    }
    Check *c = malloc(sizeof *c);
    if (!c) {
      ir_error(d, at, "out of memory reading a binary graph");
      goto fail;
    }
    *c = (Check){.p = map + off, .bytes = bytes, .words = (bytes + 7) / 8,
                 .width = arrays[i].width, .kind = arrays[i].kind,
                 .count = arrays[i].per_vertex ? nv + 1 : ne,
                 .limit = arrays[i].kind == A_VERTEX ? nv : ne};
    int np = graph_par_parts((int64_t)c->words, (int64_t)1 << 18);
    graph_parallel(np, check_part, c);
    uint64_t got = 0;
    int64_t bad = -1;
    for (int p = 0; p < np; p++) {
      got += c->sum[p];
      if (bad < 0) bad = c->bad[p];
    }
    free(c);
    if (got != sum) {
      ir_error(d, at, "corrupted binary graph: the checksum of array %s does not match",
               arrays[i].name);
      goto fail;
    }
    if (bad >= 0) {
      ir_error(d, at, "corrupted binary graph: %s[%" PRId64 "] is out of range (%s)",
               arrays[i].name, bad,
               arrays[i].kind == A_VERTEX ? "not a vertex"
               : arrays[i].kind == A_EDGE ? "not an edge id"
                                          : "offsets rise from 0 to |E|");
      goto fail;
    }
    *array_slot(g, i) = map + off;
  }
  const unsigned char *s = h + H_STATS;
  g->stats = (GraphStats){
      .deg_mean = get_double(s),
      .in_deg_std = get_double(s + 8),
      .in_deg_max = (int64_t)get64(s + 16),
      .out_deg_max = (int64_t)get64(s + 24),
      .isolated = (int32_t)get64(s + 32),
      .self_loops = (int64_t)get64(s + 40),
      .aes = get_double(s + 48),
      .locality = get_double(s + 56),
  };
  g->map = map;
  g->map_bytes = (size_t)size;
  return g;

fail:
  if (g) {
    free(g->name);
    free(g);
  }
  munmap(map, (size_t)size);
  return NULL;
}
