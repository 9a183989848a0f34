/* tests/unit/test_npy.c: reading and writing NumPy .npy files.
 *
 * Files are built byte by byte here, so the tests need no Python; when
 * python3 with numpy happens to be installed, one more test checks that
 * numpy and gop read each other's files.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph/graph.h"
#include "testutil.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Writes `n` bytes to a fresh file in the test directory; returns its path,
 * malloc'ed. */
static char *write_bytes(const char *name, const void *data, size_t n) {
  char *path = strdup(tu_write(name, ""));
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, n, f), n);
  fclose(f);
  return path;
}

/* A .npy file of format `major`.0 with `dict` as its header (unpadded) and
 * `ndata` bytes of data 0, 1, 2, ... */
static char *make_npy(const char *name, int major, const char *dict,
                      size_t ndata) {
  size_t hlen = strlen(dict), lenbytes = major == 1 ? 2 : 4;
  size_t n = 8 + lenbytes + hlen + ndata;
  unsigned char *buf = malloc(n);
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)major;
  buf[7] = 0;
  for (size_t i = 0; i < lenbytes; i++)
    buf[8 + i] = (unsigned char)(hlen >> (8 * i));
  memcpy(buf + 8 + lenbytes, dict, hlen);
  for (size_t i = 0; i < ndata; i++)
    buf[8 + lenbytes + hlen + i] = (unsigned char)i;
  char *path = write_bytes(name, buf, n);
  free(buf);
  return path;
}

/* ---- round trips ---- */

typedef struct Shape {
  int ndim;
  int64_t dims[8];
  const char *text; /* as the header writes it */
} Shape;

static const Shape shapes[] = {
    {0, {0}, "()"},
    {1, {5}, "(5,)"},
    {2, {2, 3}, "(2, 3)"},
    {1, {0}, "(0,)"},
    {3, {2, 0, 3}, "(2, 0, 3)"},
    {8, {1, 2, 1, 2, 1, 2, 1, 3}, "(1, 2, 1, 2, 1, 2, 1, 3)"},
};

static const struct {
  IrDType dtype;
  const char *descr;
  size_t bytes;
} types[] = {
    {IR_DT_F32, "<f4", 4},
    {IR_DT_F64, "<f8", 8},
    {IR_DT_I32, "<i4", 4},
    {IR_DT_I64, "<i8", 8},
    {IR_DT_F16, "<f2", 2},
    {IR_DT_BF16, "<V2", 2}, /* bfloat16 bits, as ml_dtypes saves them */
};

/* Every dtype with every shape: the file is the v1.0 numpy would write (the
 * data on a 64-byte boundary) and reads back equal. */
START_TEST(test_round_trip) {
  const Shape *sh = &shapes[_i % N(shapes)];
  size_t t = (size_t)_i / N(shapes);
  NpyArray a = {.dtype = types[t].dtype, .ndim = sh->ndim};
  memcpy(a.shape, sh->dims, sizeof sh->dims);
  int64_t numel = npy_numel(&a);
  size_t bytes = (size_t)numel * types[t].bytes;
  unsigned char *data = malloc(bytes + 1);
  for (size_t i = 0; i < bytes; i++) data[i] = (unsigned char)(i * 7 + 1);
  a.data = data;

  char name[32];
  snprintf(name, sizeof name, "rt%d.npy", _i);
  char *path = strdup(tu_write(name, "old contents"));
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_int_eq(npy_write(path, &a, &d), 0);

  size_t len;
  char *file = tu_read_file(path, &len);
  ck_assert_mem_eq(file, "\x93NUMPY\x01\x00", 8);
  size_t hlen = (unsigned char)file[8] | (size_t)(unsigned char)file[9] << 8;
  ck_assert_uint_eq((10 + hlen) % 64, 0);
  ck_assert_uint_eq(len, 10 + hlen + bytes);
  char want[200];
  int n = snprintf(want, sizeof want, "{'descr': '%s', 'fortran_order': "
                   "False, 'shape': %s, }", types[t].descr, sh->text);
  ck_assert_mem_eq(file + 10, want, (size_t)n);
  for (size_t i = 10 + (size_t)n; i < 9 + hlen; i++) ck_assert_int_eq(file[i], ' ');
  ck_assert_int_eq(file[9 + hlen], '\n');
  free(file);

  NpyArray b;
  ck_assert_int_eq(npy_read(path, &b, &d), 0);
  ck_assert_int_eq(b.dtype, a.dtype);
  ck_assert_int_eq(b.ndim, a.ndim);
  for (int i = 0; i < a.ndim; i++) ck_assert_int_eq(b.shape[i], a.shape[i]);
  ck_assert_int_eq(npy_numel(&b), numel);
  ck_assert_ptr_nonnull(b.data);
  if (bytes) ck_assert_mem_eq(b.data, data, bytes);
  ck_assert_int_eq(d.nerrors, 0);
  npy_free(&b);
  ck_assert_ptr_null(b.data);
  npy_free(&b);
  npy_free(NULL);
  free(data);
  free(path);
  ir_diag_free(&d);
}
END_TEST

/* Headers that numpy (or an older numpy) may write, all the same array. */
static const struct {
  int major;
  const char *dict;
} good_headers[] = {
    {1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }"},
    {2, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }  \n"},
    {3, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }\n"},
    {1, "{'shape': (2,2), 'fortran_order': False, 'descr': '|i4'}"},
    {1, "{\"descr\": \"=i4\", \"fortran_order\": False, \"shape\": (2, 2,)}"},
    {1, "{ 'descr' : '<i4' ,\n'fortran_order' : False , 'shape' : ( 2 , 2 ) "
        ", }    \n"},
    {1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2L, 2L), }"},
};

START_TEST(test_read_variants) {
  char name[32];
  snprintf(name, sizeof name, "ok%d.npy", _i);
  char *path = make_npy(name, good_headers[_i].major, good_headers[_i].dict,
                        16);
  Diag d;
  ir_diag_init(&d, NULL);
  NpyArray a;
  ck_assert_msg(npy_read(path, &a, &d) == 0, "%s", d.buf);
  ck_assert_int_eq(a.dtype, IR_DT_I32);
  ck_assert_int_eq(a.ndim, 2);
  ck_assert_int_eq(a.shape[0], 2);
  ck_assert_int_eq(a.shape[1], 2);
  const int32_t *x = a.data;
  ck_assert_int_eq(x[0], 0x03020100);
  ck_assert_int_eq(x[3], 0x0f0e0d0c);
  npy_free(&a);
  ir_diag_free(&d);
  free(path);
}
END_TEST

/* ---- malformed files ---- */

typedef struct BadNpy {
  int major;        /* 0: `dict` is the whole file, `ndata` bytes long */
  const char *dict;
  size_t ndata;
  const char *reason;
} BadNpy;

#define RAW(bytes) 0, bytes, sizeof(bytes) - 1

#define HDR(descr, shape) \
  "{'descr': '" descr "', 'fortran_order': False, 'shape': " shape ", }"

static const BadNpy bad_npys[] = {
    {RAW(""), "not a .npy file (bad magic)"},
    {RAW("\x93NU"), "not a .npy file (bad magic)"},
    {RAW("PK\x03\x04 a zip (an .npz?)"), "not a .npy file (bad magic)"},
    {RAW("\x93NUMPY\x01"), "truncated .npy header"},
    {RAW("\x93NUMPY\x01\x00\x7f"), "truncated .npy header"},
    {RAW("\x93NUMPY\x01\x00\x40\x00{'descr'"), "truncated .npy header"},
    {RAW("\x93NUMPY\x04\x00\x10\x00"), "unsupported .npy format version "
                                        "4.0"},
    {RAW("\x93NUMPY\x01\x01\x10\x00"), "unsupported .npy format version "
                                        "1.1"},
    {RAW("\x93NUMPY\x02\x00\xff\xff\xff\x7f"), "implausible .npy header "
                                                "length"},
    {1, HDR("<u2", "(2,)"), 4, "unsupported dtype '<u2' (gop reads <f2, <f4, "
                               "<f8, <V2 (bfloat16 bits), <i4 and <i8)"},
    {1, HDR("<V4", "(2,)"), 8, "unsupported dtype '<V4'"},
    {1, HDR("<u4", "(2,)"), 8, "unsupported dtype '<u4'"},
    {1, HDR("<c8", "(2,)"), 16, "unsupported dtype '<c8'"},
    {1, HDR("|b1", "(2,)"), 2, "unsupported dtype '|b1'"},
    {1, HDR("f4", "(2,)"), 8, "unsupported dtype 'f4'"},
    {1, HDR(">f4", "(2,)"), 8, "big-endian data ('>f4') is not supported"},
    {1, HDR(">i8", "(2,)"), 16, "big-endian data ('>i8')"},
    {1, "{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (2,), }",
     8, "unsupported dtype: structured arrays"},
    {1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16,
     "Fortran-order arrays are not supported"},
    {1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", 8,
     "malformed .npy header: 'fortran_order' must be True or False"},
    {1, "'descr': '<f4', 'fortran_order': False, 'shape': (2,)", 8,
     "malformed .npy header: expected '{'"},
    {1, "{'descr': '<f4', 'shape': (2,), }", 8, "malformed .npy header: "
                                                "missing key 'fortran_order'"},
    {1, "{'descr': '<f4', 'fortran_order': False, }", 8,
     "malformed .npy header: missing key 'shape'"},
    {1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': "
        "(2,), }", 8, "malformed .npy header: duplicate key 'descr'"},
    {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
     8, "malformed .npy header: unexpected key 'x'"},
    {1, "{'descr': '<f4 , 'fortran_order': False, 'shape': (2,)}", 8,
     "unsupported dtype '<f4 , '"},
    {1, "{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", 8,
     "malformed .npy header: expected ',' or '}'"},
    {1, "{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}", 8,
     "malformed .npy header: expected ':' after a key"},
    {1, HDR("<f4", "(2 2)"), 16, "malformed .npy header: expected ',' or ')' "
                                 "in the shape"},
    {1, HDR("<f4", "(4)"), 16, "malformed .npy header: 'shape' must be a "
                               "tuple"},
    {1, HDR("<f4", "[4]"), 16, "malformed .npy header: 'shape' must be a "
                               "tuple"},
    {1, HDR("<f4", "(-1,)"), 0, "malformed .npy header: a shape must be a "
                                "tuple of non-negative integers"},
    {1, HDR("<f4", "(2.5,)"), 0, "malformed .npy header"},
    {1, HDR("<f4", "(99999999999999999999,)"), 0, "a dimension is too large"},
    {1, HDR("<f4", "(2,) junk"), 8, "malformed .npy header"},
    {1, HDR("<f4", "(2,)") " junk", 8, "malformed .npy header: junk after "
                                       "the dict"},
    {1, HDR("<f4", "(1, 1, 1, 1, 1, 1, 1, 1, 1)"), 4,
     "arrays of more than 8 dimensions are not supported"},
    {1, HDR("<f8", "(4611686018427387904, 4)"), 0, "the shape's size "
                                                   "overflows"},
    {1, HDR("<f4", "(4,)"), 12, "data truncated: the shape needs 16 bytes, "
                                "the file holds 12"},
    {1, HDR("<f4", "(2, 3)"), 0, "data truncated: the shape needs 24 bytes, "
                                 "the file holds 0"},
    {1, HDR("<f4", "(4,)"), 20, "4 trailing bytes after the 16 bytes of "
                                "data"},
    {1, HDR("<i8", "()"), 9, "1 trailing bytes after the 8 bytes"},
};

START_TEST(test_malformed) {
  const BadNpy *b = &bad_npys[_i];
  char name[32];
  snprintf(name, sizeof name, "bad%d.npy", _i);
  char *path = b->major ? make_npy(name, b->major, b->dict, b->ndata)
                        : write_bytes(name, b->dict, b->ndata);
  char want[512];
  snprintf(want, sizeof want, "%s: error: ", path);
  Diag d;
  ir_diag_init(&d, NULL);
  NpyArray a;
  ck_assert_int_eq(npy_read(path, &a, &d), -1);
  ck_assert_ptr_null(a.data);
  npy_free(&a);
  ck_assert_int_eq(d.nerrors, 1);
  ck_assert_msg(strstr(d.buf, want) == d.buf, "case %d: got '%s'", _i, d.buf);
  ck_assert_msg(strstr(d.buf, b->reason), "case %d: got '%s', expected '%s'",
                _i, d.buf, b->reason);
  ir_diag_free(&d);
  free(path);
}
END_TEST

START_TEST(test_read_unreadable) {
  Diag d;
  ir_diag_init(&d, NULL);
  NpyArray a;
  char path[512];
  snprintf(path, sizeof path, "%s/missing.npy", tu_tmpdir());
  ck_assert_int_eq(npy_read(path, &a, &d), -1);
  ck_assert_msg(strstr(d.buf, "missing.npy: error: cannot open: "), "%s",
                d.buf);
  ck_assert_int_eq(npy_read(tu_tmpdir(), &a, &d), -1);
  ck_assert_msg(strstr(d.buf, "error: not a regular file"), "%s", d.buf);
  ck_assert_int_eq(d.nerrors, 2);
  ir_diag_free(&d);
}
END_TEST

/* ---- write errors ---- */

/* No `*.tmp.*` file is left in the test directory. */
static void check_no_temp_files(void) {
  DIR *dir = opendir(tu_tmpdir());
  ck_assert_ptr_nonnull(dir);
  struct dirent *e;
  while ((e = readdir(dir)))
    ck_assert_msg(!strstr(e->d_name, ".tmp."), "left over: %s", e->d_name);
  closedir(dir);
}

START_TEST(test_write_errors) {
  float x[4] = {1, 2, 3, 4};
  char *path = strdup(tu_write("keep.npy", "precious"));
  Diag d;
  ir_diag_init(&d, NULL);
  NpyArray a = {.dtype = IR_DT_COUNT, .ndim = 1, .shape = {4}, .data = x};
  ck_assert_int_eq(npy_write(path, &a, &d), -1);
  ck_assert_msg(strstr(d.buf, "keep.npy: error: cannot write unknown arrays to "
                              ".npy (gop writes f16, bf16, f32, f64, i32 and i64)"),
                "%s", d.buf);
  a = (NpyArray){.dtype = IR_DT_F32, .ndim = 9, .data = x};
  ck_assert_int_eq(npy_write(path, &a, &d), -1);
  a = (NpyArray){.dtype = IR_DT_F32, .ndim = 2, .shape = {2, -2}, .data = x};
  ck_assert_int_eq(npy_write(path, &a, &d), -1);
  a = (NpyArray){.dtype = IR_DT_F32, .ndim = 1, .shape = {4}, .data = NULL};
  ck_assert_int_eq(npy_write(path, &a, &d), -1);
  ck_assert_msg(strstr(d.buf, "cannot write an array with no data"), "%s",
                d.buf);
  /* the destination is untouched by a refused write */
  char *text = tu_read_file(path, NULL);
  ck_assert_str_eq(text, "precious");
  free(text);

  /* a directory that does not exist, and a destination that is one */
  char bad[600];
  snprintf(bad, sizeof bad, "%s/no/such/dir/x.npy", tu_tmpdir());
  a = (NpyArray){.dtype = IR_DT_F32, .ndim = 1, .shape = {4}, .data = x};
  ck_assert_int_eq(npy_write(bad, &a, &d), -1);
  ck_assert_msg(strstr(d.buf, "x.npy: error: cannot write: No such file or "
                              "directory"), "%s", d.buf);
  snprintf(bad, sizeof bad, "%s/adir", tu_tmpdir());
  ck_assert_int_eq(mkdir(bad, 0777), 0);
  ck_assert_int_eq(npy_write(bad, &a, &d), -1);
  ck_assert_msg(strstr(d.buf, "adir: error: cannot write: Is a directory"),
                "%s", d.buf);
  ck_assert_int_eq(d.nerrors, 6);
  check_no_temp_files();
  ir_diag_free(&d);
  free(path);
}
END_TEST

/* ---- numpy, when installed ---- */

static const char numpy_script[] =
    "import sys, numpy as np\n"
    "d = sys.argv[1]\n"
    "a = np.load(d + '/gop_f32.npy')\n"
    "assert a.dtype == np.float32 and a.shape == (2, 3), (a.dtype, a.shape)\n"
    "assert (a == np.arange(6, dtype=np.float32).reshape(2, 3) / 2).all()\n"
    "b = np.load(d + '/gop_i64.npy')\n"
    "assert b.dtype == np.int64 and b.shape == (), (b.dtype, b.shape)\n"
    "assert b == -5\n"
    "np.save(d + '/np_f64.npy', np.linspace(0, 1, 7))\n"
    "np.save(d + '/np_i32.npy', np.arange(24, dtype=np.int32).reshape(2, 3, 4))\n"
    "with open(d + '/np_v2.npy', 'wb') as f:\n"
    "    np.lib.format.write_array(f, np.ones((3,), np.float32), version=(2, 0))\n"
    "np.save(d + '/np_fortran.npy', np.asfortranarray(np.ones((2, 3))))\n"
    "np.save(d + '/np_big.npy', np.ones(3, dtype='>f4'))\n"
    /* f16 both ways; bf16 as numpy sees gop's '<V2': two-byte voids whose
     * bits are the top halves of the f32 values (1.5 -> 0x3fc0) */
    "h = np.load(d + '/gop_f16.npy')\n"
    "assert h.dtype == np.float16 and (h == np.array([1.5, -2, 65504], np.float16)).all(), h\n"
    "np.save(d + '/np_f16.npy', np.array([[0.1, 3e-6], [-7, 1e4]], np.float16))\n"
    "b = np.load(d + '/gop_bf16.npy')\n"
    "assert b.dtype.kind == 'V' and b.dtype.itemsize == 2, b.dtype\n"
    "assert (b.view('<u2') == np.array([0x3fc0, 0xc000], np.uint16)).all(), b.view('<u2')\n";

static char *tmp_file(const char *name) {
  char buf[600];
  snprintf(buf, sizeof buf, "%s/%s", tu_tmpdir(), name);
  return strdup(buf);
}

static void read_expect(const char *name, int want, IrDType dtype, int ndim,
                        const char *reason) {
  char *path = tmp_file(name);
  Diag d;
  ir_diag_init(&d, NULL);
  NpyArray a;
  ck_assert_msg(npy_read(path, &a, &d) == want, "%s: %s", name, d.buf);
  if (want == 0) {
    ck_assert_int_eq(a.dtype, dtype);
    ck_assert_int_eq(a.ndim, ndim);
  } else {
    ck_assert_msg(strstr(d.buf, reason), "%s: got '%s'", name, d.buf);
  }
  npy_free(&a);
  ir_diag_free(&d);
  free(path);
}

START_TEST(test_numpy_interop) {
  if (system("python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    fprintf(stderr, "test_numpy_interop: python3 with numpy is not "
                    "installed, skipped\n");
    return;
  }
  Diag d;
  ir_diag_init(&d, NULL);
  float f[6] = {0, 0.5f, 1, 1.5f, 2, 2.5f};
  int64_t i = -5;
  char *p = tmp_file("gop_f32.npy");
  NpyArray a = {.dtype = IR_DT_F32, .ndim = 2, .shape = {2, 3}, .data = f};
  ck_assert_int_eq(npy_write(p, &a, &d), 0);
  free(p);
  p = tmp_file("gop_i64.npy");
  a = (NpyArray){.dtype = IR_DT_I64, .ndim = 0, .data = &i};
  ck_assert_int_eq(npy_write(p, &a, &d), 0);
  free(p);
  uint16_t h[3] = {ir_f16_from_float(1.5f), ir_f16_from_float(-2), ir_f16_from_float(65504)};
  p = tmp_file("gop_f16.npy");
  a = (NpyArray){.dtype = IR_DT_F16, .ndim = 1, .shape = {3}, .data = h};
  ck_assert_int_eq(npy_write(p, &a, &d), 0);
  free(p);
  uint16_t bf[2] = {ir_bf16_from_float(1.5f), ir_bf16_from_float(-2)};
  p = tmp_file("gop_bf16.npy");
  a = (NpyArray){.dtype = IR_DT_BF16, .ndim = 1, .shape = {2}, .data = bf};
  ck_assert_int_eq(npy_write(p, &a, &d), 0);
  free(p);
  ir_diag_free(&d);
  char *script = strdup(tu_write("interop.py", numpy_script));
  char cmd[1400];
  snprintf(cmd, sizeof cmd, "python3 '%s' '%s'", script, tu_tmpdir());
  ck_assert_msg(system(cmd) == 0, "numpy could not read gop's files");
  free(script);

  read_expect("np_f64.npy", 0, IR_DT_F64, 1, NULL);
  read_expect("np_f16.npy", 0, IR_DT_F16, 2, NULL);
  read_expect("np_i32.npy", 0, IR_DT_I32, 3, NULL);
  read_expect("np_v2.npy", 0, IR_DT_F32, 1, NULL);
  read_expect("np_fortran.npy", -1, 0, 0, "Fortran-order");
  read_expect("np_big.npy", -1, 0, 0, "big-endian data ('>f4')");
}
END_TEST

static Suite *npy_suite(void) {
  Suite *s = suite_create("npy");
  TCase *tc = tcase_create("round trip");
  tcase_add_loop_test(tc, test_round_trip, 0, (int)(N(shapes) * N(types)));
  tcase_add_loop_test(tc, test_read_variants, 0, (int)N(good_headers));
  suite_add_tcase(s, tc);
  tc = tcase_create("errors");
  tcase_add_loop_test(tc, test_malformed, 0, (int)N(bad_npys));
  tcase_add_test(tc, test_read_unreadable);
  tcase_add_test(tc, test_write_errors);
  suite_add_tcase(s, tc);
  tc = tcase_create("numpy");
  tcase_add_test(tc, test_numpy_interop);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run(npy_suite()); }
