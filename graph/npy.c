/* graph/npy.c: NumPy .npy files, the exchange format for tensors.
 *
 * Features, weights and reference outputs travel between gop and Python as
 * .npy: a magic string, a version, and a header that is a Python dict
 * literal giving the dtype, the memory order and the shape, followed by the
 * raw elements. Only what gop's tensors can be is accepted (little-endian
 * f32/f64/i32/i64 in C order); everything else is refused with the file and
 * the reason rather than reinterpreted. The header dict is parsed by a
 * small recursive-descent reader that accepts what numpy writes (any key
 * order, either quote, spacing, trailing commas) and nothing looser.
 *
 * Writing goes through a temporary file in the destination's directory
 * renamed into place, so a failed or interrupted write never leaves a
 * truncated array where a good one was.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph/graph.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c reads and writes little-endian data in place"
#endif

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
/* numpy itself refuses headers over 10000 bytes unless told otherwise. */
#define NPY_MAX_HEADER (1 << 20)
#define NPY_MAX_DIMS 8

/* The dtypes gop reads and writes, by their numpy type code. */
static const struct {
  const char *code; /* after the byte-order character */
  IrDType dtype;
  int bytes;
} npy_types[] = {
    {"f4", IR_DT_F32, 4},
    {"f8", IR_DT_F64, 8},
    {"f2", IR_DT_F16, 2},
    /* bfloat16 has no numpy type: ml_dtypes' bfloat16 saves as two-byte
     * void ('<V2'), and so does gop; any 2-byte void array reads as bf16
     * bits (docs/language.md, "Types") */
    {"V2", IR_DT_BF16, 2},
    {"i4", IR_DT_I32, 4},
    {"i8", IR_DT_I64, 8},
};
#define NPY_NTYPES (sizeof npy_types / sizeof npy_types[0])

static int npy_type_of(IrDType t) {
  for (size_t i = 0; i < NPY_NTYPES; i++)
    if (npy_types[i].dtype == t) return (int)i;
  return -1;
}

int64_t npy_numel(const NpyArray *a) {
  int64_t n = 1;
  for (int i = 0; i < a->ndim; i++) n *= a->shape[i];
  return n;
}

void npy_free(NpyArray *a) {
  if (!a) return;
  free(a->data);
  a->data = NULL;
  a->ndim = 0;
}

/* The size in bytes of `ndim` dimensions of `elem`-byte elements, or -1 when
 * a dimension is negative or the product overflows. */
static int64_t array_bytes(int ndim, const int64_t *shape, int elem) {
  int64_t n = elem;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) return -1;
    if (shape[i] > 0 && n > INT64_MAX / shape[i]) return -1;
    n *= shape[i];
  }
  return (size_t)n == (uint64_t)n ? n : -1;
}

/* ---- the header dict ---- */

typedef struct HeaderParser {
  const char *p, *end;
  const char *path;
  Diag *d;
} HeaderParser;

typedef struct NpyHeader {
  int type;      /* index in npy_types */
  int ndim;
  int64_t shape[NPY_MAX_DIMS];
} NpyHeader;

static bool header_error(HeaderParser *h, const char *what) {
  ir_error(h->d, (Loc){h->path, 0, 0}, "malformed .npy header: %s", what);
  return false;
}

static void skip_space(HeaderParser *h) {
  while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' ||
                           *h->p == '\r'))
    h->p++;
}

static bool accept(HeaderParser *h, char c) {
  skip_space(h);
  if (h->p < h->end && *h->p == c) {
    h->p++;
    return true;
  }
  return false;
}

/* string = "'" chars "'" | '"' chars '"'   (no escapes: numpy writes none) */
static bool parse_string(HeaderParser *h, char *out, size_t cap) {
  skip_space(h);
  if (h->p >= h->end || (*h->p != '\'' && *h->p != '"'))
    return header_error(h, "expected a quoted string");
  char quote = *h->p++;
  size_t n = 0;
  while (h->p < h->end && *h->p != quote) {
    if (*h->p == '\\' || *h->p == '\n' || n + 1 >= cap)
      return header_error(h, "bad string");
    out[n++] = *h->p++;
  }
  if (h->p >= h->end) return header_error(h, "unterminated string");
  h->p++;
  out[n] = 0;
  return true;
}

/* descr = string naming a little-endian f2, f4, f8, V2 (bf16), i4 or i8 */
static bool parse_descr(HeaderParser *h, NpyHeader *hd) {
  skip_space(h);
  if (h->p < h->end && *h->p == '[') {
    ir_error(h->d, (Loc){h->path, 0, 0}, "unsupported dtype: structured "
             "arrays (a list of fields) are not supported");
    return false;
  }
  char descr[64];
  if (!parse_string(h, descr, sizeof descr)) return false;
  char order = descr[0];
  if (order == '>' && descr[1] != 0) {
    ir_error(h->d, (Loc){h->path, 0, 0}, "big-endian data ('%s') is not "
             "supported: save it little-endian ('<%s')", descr, descr + 1);
    return false;
  }
  /* '|' (not applicable) and '=' (native, little here) say nothing that
   * matters for these types. */
  if (order == '<' || order == '|' || order == '=') {
    for (size_t i = 0; i < NPY_NTYPES; i++) {
      if (strcmp(descr + 1, npy_types[i].code) == 0) {
        hd->type = (int)i;
        return true;
      }
    }
  }
  ir_error(h->d, (Loc){h->path, 0, 0}, "unsupported dtype '%s' (gop reads "
           "<f2, <f4, <f8, <V2 (bfloat16 bits), <i4 and <i8)", descr);
  return false;
}

/* bool = "True" | "False" */
static bool parse_fortran_order(HeaderParser *h) {
  skip_space(h);
  size_t left = (size_t)(h->end - h->p);
  if (left >= 5 && memcmp(h->p, "False", 5) == 0) {
    h->p += 5;
    return true;
  }
  if (left >= 4 && memcmp(h->p, "True", 4) == 0) {
    ir_error(h->d, (Loc){h->path, 0, 0}, "Fortran-order arrays are not "
             "supported: save the array in C order");
    return false;
  }
  return header_error(h, "'fortran_order' must be True or False");
}

/* int = digit+ ["L"]   (Python 2's numpy wrote longs with the suffix) */
static bool parse_dim(HeaderParser *h, int64_t *out) {
  skip_space(h);
  if (h->p >= h->end || *h->p < '0' || *h->p > '9')
    return header_error(h, "a shape must be a tuple of non-negative integers");
  int64_t v = 0;
  while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
    int digit = *h->p++ - '0';
    if (v > (INT64_MAX - digit) / 10)
      return header_error(h, "a dimension is too large");
    v = v * 10 + digit;
  }
  if (h->p < h->end && *h->p == 'L') h->p++;
  *out = v;
  return true;
}

/* shape = "(" ")" | "(" int "," ")" | "(" int ("," int)+ [","] ")" */
static bool parse_shape(HeaderParser *h, NpyHeader *hd) {
  if (!accept(h, '(')) return header_error(h, "'shape' must be a tuple");
  hd->ndim = 0;
  bool comma = false;
  while (!accept(h, ')')) {
    if (hd->ndim > 0 && !comma)
      return header_error(h, "expected ',' or ')' in the shape");
    if (hd->ndim == NPY_MAX_DIMS) {
      ir_error(h->d, (Loc){h->path, 0, 0}, "arrays of more than %d "
               "dimensions are not supported", NPY_MAX_DIMS);
      return false;
    }
    if (!parse_dim(h, &hd->shape[hd->ndim++])) return false;
    comma = accept(h, ',');
  }
  /* "(3)" is the integer 3 in Python, not a tuple. */
  if (hd->ndim == 1 && !comma) return header_error(h, "'shape' must be a tuple");
  return true;
}

/* dict = "{" [item ("," item)* [","]] "}" with exactly the keys 'descr',
 * 'fortran_order' and 'shape', in any order. */
static bool parse_header(HeaderParser *h, NpyHeader *hd) {
  static const char *const keys[3] = {"descr", "fortran_order", "shape"};
  bool seen[3] = {false, false, false};
  if (!accept(h, '{')) return header_error(h, "expected '{'");
  bool comma = true;
  while (!accept(h, '}')) {
    if (!comma) return header_error(h, "expected ',' or '}'");
    char key[64];
    if (!parse_string(h, key, sizeof key)) return false;
    int k = 0;
    while (k < 3 && strcmp(key, keys[k]) != 0) k++;
    if (k == 3 || seen[k]) {
      char msg[128];
      snprintf(msg, sizeof msg, "%s key '%s'", k == 3 ? "unexpected" :
               "duplicate", key);
      return header_error(h, msg);
    }
    seen[k] = true;
    if (!accept(h, ':')) return header_error(h, "expected ':' after a key");
    bool ok = k == 0 ? parse_descr(h, hd)
              : k == 1 ? parse_fortran_order(h)
                       : parse_shape(h, hd);
    if (!ok) return false;
    comma = accept(h, ',');
  }
  for (int k = 0; k < 3; k++) {
    if (!seen[k]) {
      char msg[64];
      snprintf(msg, sizeof msg, "missing key '%s'", keys[k]);
      return header_error(h, msg);
    }
  }
  skip_space(h);
  if (h->p != h->end) return header_error(h, "junk after the dict");
  return true;
}

/* ---- reading ---- */

/* Reads the preamble and the header dict of an open file. Returns the
 * offset of the data, or -1 after reporting. */
static int64_t read_header(FILE *f, const char *path, NpyHeader *hd,
                           Diag *d) {
  Loc loc = {path, 0, 0};
  unsigned char pre[12];
  size_t got = fread(pre, 1, 8, f);
  if (got < NPY_MAGIC_LEN || memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0) {
    ir_error(d, loc, "not a .npy file (bad magic)");
    return -1;
  }
  if (got < 8) {
    ir_error(d, loc, "truncated .npy header");
    return -1;
  }
  int major = pre[6], minor = pre[7];
  if (major < 1 || major > 3 || minor != 0) {
    ir_error(d, loc, "unsupported .npy format version %d.%d (gop reads 1.0, "
             "2.0 and 3.0)", major, minor);
    return -1;
  }
  int lenbytes = major == 1 ? 2 : 4;
  if (fread(pre + 8, 1, (size_t)lenbytes, f) != (size_t)lenbytes) {
    ir_error(d, loc, "truncated .npy header");
    return -1;
  }
  uint32_t hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
  if (lenbytes == 4) hlen |= (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
  if (hlen > NPY_MAX_HEADER) {
    ir_error(d, loc, "implausible .npy header length %" PRIu32, hlen);
    return -1;
  }
  char *text = malloc(hlen + 1);
  if (!text) {
    ir_error(d, loc, "out of memory reading the .npy header");
    return -1;
  }
  bool ok = fread(text, 1, hlen, f) == hlen;
  if (!ok) ir_error(d, loc, "truncated .npy header");
  HeaderParser h = {text, text + hlen, path, d};
  ok = ok && parse_header(&h, hd);
  free(text);
  return ok ? 8 + lenbytes + (int64_t)hlen : -1;
}

/* The size of the data the header describes, or -1 after reporting when the
 * `have` bytes left in the file are not exactly that. */
static int64_t check_size(const NpyHeader *hd, int64_t have, const char *path,
                          Diag *d) {
  Loc loc = {path, 0, 0};
  int64_t bytes = array_bytes(hd->ndim, hd->shape, npy_types[hd->type].bytes);
  if (bytes < 0)
    ir_error(d, loc, "the shape's size overflows");
  else if (!ir_limit_check(IR_LIMIT_HOST_BYTES, bytes, d, loc, "the array's data needs"))
    return -1;
  else if (have < bytes)
    ir_error(d, loc, "data truncated: the shape needs %" PRId64 " bytes, "
             "the file holds %" PRId64, bytes, have);
  else if (have > bytes)
    ir_error(d, loc, "%" PRId64 " trailing bytes after the %" PRId64
             " bytes of data", have - bytes, bytes);
  return bytes == have ? bytes : -1;
}

/* The `bytes` bytes of data in a new buffer (never NULL for 0 bytes), or
 * NULL after reporting. */
static void *read_data(FILE *f, int64_t bytes, Loc loc, Diag *d) {
  void *data = malloc(bytes > 0 ? (size_t)bytes : 1);
  if (!data) {
    ir_error(d, loc, "out of memory for %" PRId64 " bytes of data", bytes);
    return NULL;
  }
  if (fread(data, 1, (size_t)bytes, f) != (size_t)bytes) {
    ir_error(d, loc, "read error: %s", ferror(f) ? strerror(errno) :
             "the file shrank while being read");
    free(data);
    return NULL;
  }
  return data;
}

int npy_read(const char *path, NpyArray *out, Diag *d) {
  Loc loc = {path, 0, 0};
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) {
    ir_error(d, loc, "cannot open: %s", strerror(errno));
    return -1;
  }
  struct stat st;
  NpyHeader hd = {0};
  int64_t off = -1, bytes = -1;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))
    ir_error(d, loc, "not a regular file");
  else
    off = read_header(f, path, &hd, d);
  if (off >= 0) bytes = check_size(&hd, (int64_t)st.st_size - off, path, d);
  void *data = bytes >= 0 ? read_data(f, bytes, loc, d) : NULL;
  fclose(f);
  if (!data) return -1;
  out->dtype = npy_types[hd.type].dtype;
  out->ndim = hd.ndim;
  memcpy(out->shape, hd.shape, sizeof hd.shape);
  out->data = data;
  return 0;
}

/* ---- writing ---- */

/* The v1.0 preamble and header for `a`, padded with spaces and a newline so
 * that the data starts on a 64-byte boundary, as numpy does. Returns its
 * length. */
static size_t format_header(const NpyArray *a, int type, char *buf,
                            size_t cap) {
  int n = snprintf(buf + 10, cap - 10,
                   "{'descr': '<%s', 'fortran_order': False, 'shape': (",
                   npy_types[type].code);
  for (int i = 0; i < a->ndim; i++)
    n += snprintf(buf + 10 + n, cap - 10 - (size_t)n, "%s%" PRId64,
                  i ? ", " : "", a->shape[i]);
  n += snprintf(buf + 10 + n, cap - 10 - (size_t)n, "%s), }",
                a->ndim == 1 ? "," : "");
  size_t total = 10 + (size_t)n + 1;
  size_t padded = (total + 63) / 64 * 64;
  memset(buf + 10 + n, ' ', padded - total);
  buf[padded - 1] = '\n';
  size_t hlen = padded - 10;
  memcpy(buf, NPY_MAGIC "\x01\x00", 8);
  buf[8] = (char)(hlen & 255);
  buf[9] = (char)(hlen >> 8);
  return padded;
}

/* What npy_write hands ir_write_file: the header and the data. */
typedef struct NpyOut {
  const char *header;
  size_t hlen, bytes;
  const void *data;
} NpyOut;

static void write_npy(FILE *f, const void *ctx) {
  const NpyOut *o = ctx;
  fwrite(o->header, 1, o->hlen, f);
  if (o->bytes) fwrite(o->data, 1, o->bytes, f);
}

int npy_write(const char *path, const NpyArray *a, Diag *d) {
  Loc loc = {path, 0, 0};
  int type = npy_type_of(a->dtype);
  if (type < 0) {
    bool known = (unsigned)a->dtype < IR_DT_COUNT;
    ir_error(d, loc, "cannot write %s arrays to .npy (gop writes f16, bf16, f32, "
             "f64, i32 and i64)", known ? ir_dtype_name(a->dtype) : "unknown");
    return -1;
  }
  if (a->ndim < 0 || a->ndim > NPY_MAX_DIMS) {
    ir_error(d, loc, "cannot write an array of %d dimensions", a->ndim);
    return -1;
  }
  int64_t bytes = array_bytes(a->ndim, a->shape, npy_types[type].bytes);
  if (bytes < 0 || (bytes > 0 && !a->data)) {
    ir_error(d, loc, bytes < 0 ? "cannot write an array with a negative or "
             "overflowing shape" : "cannot write an array with no data");
    return -1;
  }
  char header[1024]; /* 8 dimensions of 19 digits fit many times over */
  size_t hlen = format_header(a, type, header, sizeof header);
  NpyOut out = {header, hlen, (size_t)bytes, a->data};
  return ir_write_file(path, NULL, write_npy, &out, d);
}
