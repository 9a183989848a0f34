/* graph/read.c: reading graphs from Matrix Market and SNAP files.
 *
 * Both formats are line-oriented text, plain or gzip'ed: zlib's gzopen
 * recognises gzip by its magic bytes and reads anything else as it is. A
 * gzip stream that ends early or fails its check is an error, never a
 * silently shorter graph. The format is decided by content, not by name: a
 * first non-blank line starting with `%` is a Matrix Market header (and must
 * be a valid one), anything else is a SNAP edge list.
 *
 * Parsing is strict, because a graph that is quietly wrong gives benchmark
 * numbers that are quietly wrong: every line is split into whitespace
 * tokens and must have exactly the expected number of them, every index is
 * range-checked, and Matrix Market's entry count must match. Arcs collect
 * in growable arrays (a file's declared counts are not trusted for
 * allocation) and become a graph only once the whole file has been read.
 *
 * With more than one thread (graph_threads), the lines after the header
 * are parsed by all of them: the text comes in blocks cut at a line end,
 * each block's lines are split over the threads at line ends, every part
 * parses its lines into arcs of its own, and the parts' arcs are appended
 * in file order, so the arcs and edge ids are the serial ones. A part that
 * meets anything it does not accept (a malformed line, a NUL byte, a line
 * longer than a block, too many entries) stops, and the file is then read
 * again line by line from the start, which reports exactly what the serial
 * reader reports: the parallel pass changes the speed, never a graph or a
 * message. Inflating gzip stays serial (zlib's stream is one).
 */
#define _GNU_SOURCE /* memrchr */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "graph/graph.h"

/* Longer lines are junk (or not text at all), not graph data. */
#define MAX_LINE (1 << 20)
#define MAX_TOKENS 8

typedef struct Reader {
  const char *path;
  gzFile f;
  char *buf;
  size_t cap;
  int line; /* of the line in buf, 1-based */
  Diag *d;
} Reader;

/* The arcs read so far, in edge-id order. */
typedef struct Arcs {
  int64_t *src, *dst;
  int64_t n, cap;
} Arcs;

static Loc here(const Reader *r) { return (Loc){r->path, r->line, 0}; }

static bool is_space(char c) { return isspace((unsigned char)c) != 0; }

/* Reports a failed read. A truncated stream is reported at the line it
 * cuts; other failures at the file, since zlib drops what it had buffered
 * and the line reached says nothing about where the damage is. zlib's
 * message starts with the path, which the location already gives. */
static void read_error(Reader *r, int err, const char *msg) {
  Loc file = {r->path, 0, 0};
  size_t n = strlen(r->path);
  if (strncmp(msg, r->path, n) == 0 && strncmp(msg + n, ": ", 2) == 0)
    msg += n + 2;
  if (err == Z_ERRNO)
    ir_error(r->d, file, "read error: %s", strerror(errno));
  else if (err == Z_BUF_ERROR)
    ir_error(r->d, here(r), "truncated gzip data (%s)", msg);
  else
    ir_error(r->d, file, "corrupt gzip data (%s)", msg);
}

/* Reads the next line into r->buf (newline stripped). Returns 1, 0 at end of
 * file, -1 after reporting a read or decompression error. */
static int next_line(Reader *r) {
  size_t len = 0;
  char *got;
  r->buf[0] = 0;
  for (;;) {
    got = gzgets(r->f, r->buf + len, (int)(r->cap - len));
    if (got) len += strlen(r->buf + len);
    bool complete = len > 0 && r->buf[len - 1] == '\n';
    int err;
    const char *msg = gzerror(r->f, &err);
    /* zlib flags a truncated stream (Z_BUF_ERROR) as soon as it inflates
     * the last bytes, while whole lines are still buffered: hand those out
     * and report the line that the end of the data cuts. */
    if (err != Z_OK && !(err == Z_BUF_ERROR && complete)) {
      if (r->line < INT_MAX) r->line++;
      read_error(r, err, msg);
      return -1;
    }
    if (!got || complete) break;
    if (len + 1 < r->cap) {
      /* gzgets stopped short of a full buffer without a newline: either the
       * file ends here, or strlen stopped at a NUL inside the line. */
      if (gzeof(r->f)) break;
      if (r->line < INT_MAX) r->line++;
      ir_error(r->d, here(r), "NUL byte in the line: not a text file");
      return -1;
    }
    if (r->cap >= MAX_LINE) {
      if (r->line < INT_MAX) r->line++;
      ir_error(r->d, here(r), "line longer than %d bytes", MAX_LINE);
      return -1;
    }
    char *bigger = realloc(r->buf, r->cap * 2);
    if (!bigger) {
      ir_error(r->d, here(r), "out of memory reading a long line");
      return -1;
    }
    r->buf = bigger;
    r->cap *= 2;
  }
  if (!got && len == 0) return 0;
  if (r->line < INT_MAX) r->line++;
  if (len > 0 && r->buf[len - 1] == '\n') r->buf[--len] = 0;
  return 1;
}

/* Splits `s` in place into at most MAX_TOKENS + 1 tokens, so that a caller
 * expecting n <= MAX_TOKENS sees a count above n when there is junk. */
static int split(char *s, char **tok) {
  int n = 0;
  for (;;) {
    while (is_space(*s)) s++;
    if (!*s || n > MAX_TOKENS) return n;
    tok[n++] = s;
    while (*s && !is_space(*s)) s++;
    if (*s) *s++ = 0;
  }
}

static bool is_blank(const char *s) {
  while (is_space(*s)) s++;
  return *s == 0;
}

/* A whole token as a decimal integer; reports and returns false otherwise.
 * `what` names the field in the message. */
static bool parse_int(Reader *r, const char *tok, const char *what,
                      int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(tok, &end, 10);
  if (end == tok || *end) {
    ir_error(r->d, here(r), "expected an integer %s, found '%s'", what, tok);
    return false;
  }
  if (errno == ERANGE) {
    ir_error(r->d, here(r), "%s '%s' is out of range", what, tok);
    return false;
  }
  *out = v;
  return true;
}

static bool is_real(const char *tok) {
  char *end;
  strtod(tok, &end);
  return end != tok && *end == 0;
}

static bool push_arc(Reader *r, Arcs *a, int64_t s, int64_t t) {
  if (a->n == a->cap) {
    if (a->n >= GRAPH_MAX_EDGES) {
      ir_error(r->d, here(r), "more than %" PRId64 " edges, the most a graph may hold",
               (int64_t)GRAPH_MAX_EDGES);
      return false;
    }
    int64_t cap = a->cap ? a->cap * 2 : 1024;
    int64_t *src = realloc(a->src, sizeof(int64_t) * (size_t)cap);
    if (src) a->src = src;
    int64_t *dst = src ? realloc(a->dst, sizeof(int64_t) * (size_t)cap) : NULL;
    if (!dst) {
      ir_error(r->d, here(r), "out of memory after %" PRId64 " edges", a->n);
      return false;
    }
    a->dst = dst;
    a->cap = cap;
  }
  a->src[a->n] = s;
  a->dst[a->n] = t;
  a->n++;
  return true;
}

/* ---- Matrix Market ---- */

typedef struct MmHeader {
  bool symmetric;
  int nfields; /* tokens per entry: 2 for pattern, 3 with a value */
  bool real;   /* the value is a real number, not an integer */
} MmHeader;

/* header = "%%MatrixMarket" "matrix" "coordinate" field symmetry
 * The banner is case-sensitive, the qualifiers are not (as in the spec). */
static bool parse_mm_header(Reader *r, MmHeader *h) {
  char *tok[MAX_TOKENS + 1];
  int n = split(r->buf, tok);
  if (n < 1 || strcmp(tok[0], "%%MatrixMarket") != 0) {
    ir_error(r->d, here(r),
             "bad Matrix Market header: expected '%%%%MatrixMarket matrix "
             "coordinate <field> <symmetry>'");
    return false;
  }
  if (n != 5) {
    ir_error(r->d, here(r),
             "bad Matrix Market header: expected 4 words after "
             "'%%%%MatrixMarket', found %d", n - 1);
    return false;
  }
  if (strcasecmp(tok[1], "matrix") != 0) {
    ir_error(r->d, here(r), "unsupported Matrix Market object '%s': only "
             "'matrix' is read", tok[1]);
    return false;
  }
  if (strcasecmp(tok[2], "coordinate") != 0) {
    ir_error(r->d, here(r), "unsupported Matrix Market format '%s': only "
             "sparse 'coordinate' matrices are graphs", tok[2]);
    return false;
  }
  const char *field = tok[3];
  if (strcasecmp(field, "pattern") == 0) {
    *h = (MmHeader){.nfields = 2};
  } else if (strcasecmp(field, "integer") == 0) {
    *h = (MmHeader){.nfields = 3};
  } else if (strcasecmp(field, "real") == 0 ||
             strcasecmp(field, "double") == 0) {
    *h = (MmHeader){.nfields = 3, .real = true};
  } else {
    ir_error(r->d, here(r), "unsupported Matrix Market field '%s': only "
             "pattern, integer and real are read", field);
    return false;
  }
  if (strcasecmp(tok[4], "symmetric") == 0) {
    h->symmetric = true;
  } else if (strcasecmp(tok[4], "general") != 0) {
    ir_error(r->d, here(r), "unsupported Matrix Market symmetry '%s': only "
             "general and symmetric are read", tok[4]);
    return false;
  }
  return true;
}

/* The next line that is neither blank nor a `%` comment: 1, 0 at end of
 * file, -1 after an error. */
static int next_data_line(Reader *r) {
  int got;
  while ((got = next_line(r)) == 1) {
    const char *s = r->buf;
    while (is_space(*s)) s++;
    if (*s && *s != '%') return 1;
  }
  return got;
}

/* size = rows cols nnz */
static bool parse_mm_size(Reader *r, const MmHeader *h, int64_t size[3]) {
  static const char *const names[3] = {"row count", "column count",
                                       "entry count"};
  char *tok[MAX_TOKENS + 1];
  int n = split(r->buf, tok);
  if (n != 3) {
    ir_error(r->d, here(r),
             "bad size line: expected 'rows columns entries', found %d "
             "field%s", n, n == 1 ? "" : "s");
    return false;
  }
  for (int i = 0; i < 3; i++) {
    if (!parse_int(r, tok[i], names[i], &size[i])) return false;
    if (size[i] < 0) {
      ir_error(r->d, here(r), "negative %s %" PRId64, names[i], size[i]);
      return false;
    }
  }
  if (size[0] > INT32_MAX || size[1] > INT32_MAX) {
    ir_error(r->d, here(r),
             "%" PRId64 " x %" PRId64 " matrix: vertex ids are 32-bit, graphs "
             "with more than 2^31-1 vertices are not supported", size[0], size[1]);
    return false;
  }
  if (size[2] > GRAPH_MAX_EDGES / 2) {
    ir_error(r->d, here(r), "%" PRId64 " entries: more than the %" PRId64
             " edges a graph may hold", size[2], (int64_t)GRAPH_MAX_EDGES / 2);
    return false;
  }
  /* what the declared size will need, before reading a line of it (a
   * symmetric matrix may store each off-diagonal entry once) */
  int64_t nv = size[0] > size[1] ? size[0] : size[1];
  /* the arcs as read (two int64 each) are held while the graph is built */
  int64_t ne = h->symmetric ? 2 * size[2] : size[2];
  if (!graph_size_ok(nv, ne, 16 * ne, r->d, here(r)))
    return false;
  if (h->symmetric && size[0] != size[1]) {
    ir_error(r->d, here(r),
             "a symmetric matrix must be square, this one is %" PRId64
             " x %" PRId64, size[0], size[1]);
    return false;
  }
  return true;
}

static bool parse_index(Reader *r, const char *tok, const char *what,
                        int64_t limit, int64_t *out) {
  if (!parse_int(r, tok, what, out)) return false;
  if (*out < 1 || *out > limit) {
    ir_error(r->d, here(r), "%s %" PRId64 " out of range 1..%" PRId64, what,
             *out, limit);
    return false;
  }
  return true;
}

/* The value is not kept, but a file with a garbled value is garbled. */
static bool check_value(Reader *r, const MmHeader *h, const char *tok) {
  int64_t ignored;
  if (!h->real) return parse_int(r, tok, "value", &ignored);
  if (is_real(tok)) return true;
  ir_error(r->d, here(r), "expected a real value, found '%s'", tok);
  return false;
}

/* entry = row col [value]; the arc row-1 -> col-1, and its mirror after it
 * when the matrix is symmetric. */
static bool parse_mm_entry(Reader *r, const MmHeader *h, const int64_t size[3],
                           Arcs *a) {
  char *tok[MAX_TOKENS + 1];
  int n = split(r->buf, tok);
  if (n < h->nfields) {
    ir_error(r->d, here(r), "expected %s, found %d field%s",
             h->nfields == 2 ? "'row column'" : "'row column value'", n,
             n == 1 ? "" : "s");
    return false;
  }
  if (n > h->nfields) {
    ir_error(r->d, here(r), "trailing junk '%s' after the entry",
             tok[h->nfields]);
    return false;
  }
  int64_t i, j;
  if (!parse_index(r, tok[0], "row index", size[0], &i) ||
      !parse_index(r, tok[1], "column index", size[1], &j))
    return false;
  if (h->nfields == 3 && !check_value(r, h, tok[2])) return false;
  if (!push_arc(r, a, i - 1, j - 1)) return false;
  return !h->symmetric || i == j || push_arc(r, a, j - 1, i - 1);
}

/* file = header comment* size entry{nnz}; r->buf holds the header line. */
static bool read_mm(Reader *r, Arcs *a, int64_t *nv) {
  MmHeader h;
  if (!parse_mm_header(r, &h)) return false;
  int got = next_data_line(r);
  if (got <= 0) {
    if (got == 0)
      ir_error(r->d, here(r), "missing size line 'rows columns entries' "
               "after the header");
    return false;
  }
  int64_t size[3];
  if (!parse_mm_size(r, &h, size)) return false;
  int size_line = r->line;
  for (int64_t k = 0; k < size[2]; k++) {
    got = next_data_line(r);
    if (got < 0) return false;
    if (got == 0) {
      ir_error(r->d, here(r),
               "file ends after %" PRId64 " of the %" PRId64 " entries "
               "declared on line %d", k, size[2], size_line);
      return false;
    }
    if (!parse_mm_entry(r, &h, size, a)) return false;
  }
  got = next_data_line(r);
  if (got == 1)
    ir_error(r->d, here(r),
             "more entries than the %" PRId64 " declared on line %d", size[2],
             size_line);
  if (got != 0) return false;
  *nv = size[0] > size[1] ? size[0] : size[1];
  return true;
}

/* ---- SNAP edge lists ---- */

/* file = (comment | blank | src dst)*, comments starting with `#`;
 * r->buf holds the first non-blank line. */
static bool read_snap(Reader *r, Arcs *a, int64_t *nv) {
  int64_t max_id = -1;
  int got = 1;
  for (; got == 1; got = next_line(r)) {
    char *tok[MAX_TOKENS + 1];
    int n = split(r->buf, tok);
    if (n == 0 || tok[0][0] == '#') continue;
    if (n != 2) {
      if (n < 2)
        ir_error(r->d, here(r), "expected an edge 'source destination', "
                 "found %d field", n);
      else
        ir_error(r->d, here(r), "trailing junk '%s' after the edge", tok[2]);
      return false;
    }
    int64_t id[2];
    for (int i = 0; i < 2; i++) {
      const char *what = i == 0 ? "source vertex id" : "destination vertex id";
      if (!parse_int(r, tok[i], what, &id[i])) return false;
      if (id[i] < 0) {
        ir_error(r->d, here(r), "negative %s %" PRId64, what, id[i]);
        return false;
      }
      if (id[i] >= INT32_MAX) {
        ir_error(r->d, here(r),
                 "%s %" PRId64 ": vertex ids are 32-bit, graphs with more than "
                 "2^31-1 vertices are not supported", what, id[i]);
        return false;
      }
      if (id[i] > max_id) max_id = id[i];
    }
    if (!push_arc(r, a, id[0], id[1])) return false;
  }
  if (got < 0) return false;
  if (a->n == 0) {
    ir_error(r->d, here(r), "no edges: an edge list needs 'source "
             "destination' lines");
    return false;
  }
  *nv = max_id + 1;
  return true;
}

/* ---- the lines after the header, in parallel ---- */

enum {
  BLOCK = 32 << 20,       /* bytes of text parsed at once */
  PART_MIN = 256 << 10,   /* the least text a thread takes */
};

static size_t block_bytes; /* graph_read_set_block's; 0: BLOCK */
static _Thread_local int64_t parts_parsed; /* by the last graph_read here */

void graph_read_set_block(size_t bytes) { block_bytes = bytes; }
int64_t graph_read_parts(void) { return parts_parsed; }

typedef struct Part {
  const char *from, *to; /* its lines: [from, to), whole lines */
  Arcs arcs;
  int64_t entries; /* Matrix Market entries (data lines) */
  int64_t max_id;  /* SNAP: the largest vertex id */
  bool ok;
} Part;

typedef struct Block {
  const char *path;
  const MmHeader *mm; /* NULL: a SNAP edge list */
  const int64_t *size;
  Part *part;
} Block;

/* One part's lines; on anything the serial reader would report, stops
 * with ok false (the serial pass says what). */
static void parse_part(void *arg, int p, int np) {
  Block *b = arg;
  Part *pt = &b->part[p];
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  Reader r = {.path = b->path, .d = &quiet};
  pt->ok = true;
  pt->max_id = -1;
  for (char *s = (char *)pt->from; s < pt->to && pt->ok;) {
    char *e = memchr(s, '\n', (size_t)(pt->to - s));
    if (!e) e = (char *)pt->to; /* the file's last line, with no newline */
    *e = 0;
    r.buf = s;
    s = e + 1;
    if (e - r.buf >= MAX_LINE - 1) {
      pt->ok = false;
      break;
    }
    char *t = r.buf;
    while (is_space(*t)) t++;
    if (b->mm) {
      if (!*t || *t == '%') continue;
      pt->entries++;
      pt->ok = parse_mm_entry(&r, b->mm, b->size, &pt->arcs);
      continue;
    }
    char *tok[MAX_TOKENS + 1];
    int n = split(r.buf, tok);
    if (n == 0 || tok[0][0] == '#') continue;
    int64_t id[2];
    pt->ok = n == 2 && parse_int(&r, tok[0], "", &id[0]) && parse_int(&r, tok[1], "", &id[1]) &&
             id[0] >= 0 && id[1] >= 0 && id[0] < INT32_MAX && id[1] < INT32_MAX &&
             push_arc(&r, &pt->arcs, id[0], id[1]);
    if (pt->ok) {
      if (id[0] > pt->max_id) pt->max_id = id[0];
      if (id[1] > pt->max_id) pt->max_id = id[1];
    }
  }
  ir_diag_free(&quiet);
  (void)np;
}

/* Appends n arcs to a; false when they would pass the limit or there is
 * no memory. */
static bool append_arcs(Arcs *a, const Arcs *more) {
  if (more->n == 0) return true;
  if (a->n + more->n > GRAPH_MAX_EDGES) return false;
  if (a->n + more->n > a->cap) {
    int64_t cap = a->cap ? a->cap : 1024;
    while (cap < a->n + more->n) cap *= 2;
    int64_t *src = realloc(a->src, sizeof(int64_t) * (size_t)cap);
    if (src) a->src = src;
    int64_t *dst = src ? realloc(a->dst, sizeof(int64_t) * (size_t)cap) : NULL;
    if (!dst) return false;
    a->dst = dst;
    a->cap = cap;
  }
  memcpy(a->src + a->n, more->src, sizeof(int64_t) * (size_t)more->n);
  memcpy(a->dst + a->n, more->dst, sizeof(int64_t) * (size_t)more->n);
  a->n += more->n;
  return true;
}

/* Parses the rest of r's file (after the header, or, for SNAP, after the
 * first line, which the caller parsed) in blocks on all threads, appending
 * to `a`. Matrix Market (mm not NULL): *count counts the entries; SNAP:
 * *count is the largest id. False on anything the serial reader reports
 * (nothing is reported here). */
static bool parse_rest_parallel(Reader *r, const MmHeader *mm, const int64_t *size, Arcs *a,
                                int64_t *count) {
  size_t block = block_bytes ? block_bytes : BLOCK;
  char *buf = malloc(block + 1);
  Part *part = calloc(GRAPH_MAX_THREADS, sizeof *part);
  bool ok = buf && part;
  size_t have = 0; /* bytes of an unfinished line carried from the last block */
  bool end = false;
  while (ok && !end) {
    int got = gzread(r->f, buf + have, (unsigned)(block - have));
    int err;
    gzerror(r->f, &err);
    if (got < 0 || err != Z_OK) {
      ok = false; /* a damaged or truncated stream: the serial pass says where */
      break;
    }
    size_t len = have + (size_t)got;
    end = got == 0 || gzeof(r->f);
    if (memchr(buf + have, 0, (size_t)got)) { /* not text */
      ok = false;
      break;
    }
    /* whole lines only; at the end the last line may have no newline */
    size_t cut = len;
    if (!end) {
      const char *nl = len ? memrchr(buf, '\n', len) : NULL;
      if (!nl) { /* a line longer than a block */
        ok = false;
        break;
      }
      cut = (size_t)(nl - buf) + 1;
    }
    /* a small block (a test's) is still split */
    int np = graph_par_parts((int64_t)cut, block < 8 * PART_MIN ? (int64_t)block / 8 : PART_MIN);
    const char *at = buf;
    for (int p = 0; p < np; p++) {
      const char *to = p == np - 1 ? buf + cut : buf + cut * (size_t)(p + 1) / (size_t)np;
      if (to < at) to = at;
      if (p < np - 1) { /* to the end of its line */
        const char *nl = memchr(to, '\n', (size_t)(buf + cut - to));
        to = nl ? nl + 1 : buf + cut;
      }
      part[p] = (Part){.from = at, .to = to};
      at = to;
    }
    Block b = {r->path, mm, size, part};
    graph_parallel(np, parse_part, &b);
    parts_parsed += np;
    for (int p = 0; p < np; p++) {
      ok = ok && part[p].ok && append_arcs(a, &part[p].arcs);
      if (mm) *count += part[p].entries;
      else if (part[p].max_id > *count) *count = part[p].max_id;
      free(part[p].arcs.src);
      free(part[p].arcs.dst);
    }
    if (mm && *count > size[2]) ok = false;
    have = len - cut;
    memmove(buf, buf + cut, have);
  }
  free(buf);
  free(part);
  return ok;
}

/* The parallel read of an opened file whose first non-blank line is in
 * r->buf; false on anything the serial reader reports (nothing reported). */
static bool read_parallel(Reader *r, Arcs *a, int64_t *nv) {
  const char *s = r->buf;
  while (is_space(*s)) s++;
  if (*s != '%') {
    /* SNAP: the first line as the serial reader reads it, then the rest */
    Arcs first = {0};
    int64_t max_id = -1;
    char *tok[MAX_TOKENS + 1];
    int n = split(r->buf, tok);
    int64_t id[2];
    bool ok = true;
    if (n != 0 && tok[0][0] != '#') {
      ok = n == 2 && parse_int(r, tok[0], "", &id[0]) && parse_int(r, tok[1], "", &id[1]) &&
           id[0] >= 0 && id[1] >= 0 && id[0] < INT32_MAX && id[1] < INT32_MAX &&
           push_arc(r, &first, id[0], id[1]);
      if (ok) max_id = id[0] > id[1] ? id[0] : id[1];
    }
    ok = ok && append_arcs(a, &first);
    free(first.src);
    free(first.dst);
    if (!ok || !parse_rest_parallel(r, NULL, NULL, a, &max_id) || a->n == 0) return false;
    *nv = max_id + 1;
    return true;
  }
  MmHeader h;
  if (!parse_mm_header(r, &h) || next_data_line(r) != 1) return false;
  int64_t size[3], entries = 0;
  if (!parse_mm_size(r, &h, size)) return false;
  if (!parse_rest_parallel(r, &h, size, a, &entries) || entries != size[2]) return false;
  *nv = size[0] > size[1] ? size[0] : size[1];
  return true;
}

/* ---- the entry point ---- */

/* Opens `path`; returns false after reporting when it cannot be read.
 * gzopen looks at the magic bytes and reads a plain file as it is. */
static bool open_reader(Reader *r, const char *path, Diag *d) {
  *r = (Reader){.path = path, .d = d};
  r->cap = 4096;
  r->buf = malloc(r->cap);
  errno = 0;
  r->f = r->buf ? gzopen(path, "rb") : NULL;
  if (!r->f) {
    ir_error(d, here(r), "cannot open: %s",
             errno ? strerror(errno) : "out of memory");
    free(r->buf);
    return false;
  }
  gzbuffer(r->f, 1 << 17);
  return true;
}

static bool ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n >= m && strcmp(s + n - m, tail) == 0;
}

Graph *graph_read(const char *path, Diag *d) {
  /* a binary graph by its magic, or by its name, so that a damaged one
   * is refused as such rather than read as an edge list */
  if (ends_with(path, ".gopg") || graph_file_is_gopg(path)) return graph_read_gopg(path, d);
  Reader r;
  Arcs arcs = {0};
  int64_t nv = 0;
  bool ok = false;
  int got;
  parts_parsed = 0;
  if (graph_threads() > 1) {
    /* quietly: whatever it does not take, the serial read below reports */
    Diag quiet;
    ir_diag_init(&quiet, NULL);
    if (open_reader(&r, path, &quiet)) {
      while ((got = next_line(&r)) == 1 && is_blank(r.buf)) {
      }
      ok = got == 1 && read_parallel(&r, &arcs, &nv);
      gzclose(r.f);
      free(r.buf);
    }
    ir_diag_free(&quiet);
    if (ok) {
      Graph *g = graph_from_coo(nv, arcs.n, arcs.src, arcs.dst, path, d, (Loc){path, 0, 0});
      free(arcs.src);
      free(arcs.dst);
      return g;
    }
    free(arcs.src);
    free(arcs.dst);
    arcs = (Arcs){0};
    nv = 0;
    parts_parsed = 0;
  }
  if (!open_reader(&r, path, d)) return NULL;
  while ((got = next_line(&r)) == 1 && is_blank(r.buf)) {
  }
  if (got == 0) {
    ir_error(d, (Loc){path, 0, 0}, "empty file: expected a Matrix Market "
             "file or a SNAP edge list");
  } else if (got == 1) {
    const char *s = r.buf;
    while (is_space(*s)) s++;
    ok = *s == '%' ? read_mm(&r, &arcs, &nv) : read_snap(&r, &arcs, &nv);
  }
  gzclose(r.f);
  free(r.buf);
  Graph *g = NULL;
  if (ok)
    g = graph_from_coo(nv, arcs.n, arcs.src, arcs.dst, path, d,
                          (Loc){path, 0, 0});
  free(arcs.src);
  free(arcs.dst);
  return g;
}
