/* tests/unit/test_graph.c: host graphs: building, reading, generating.
 *
 * Tiny graphs are checked array by array against hand-computed CSR/CSC
 * and statistics; every malformed input must give NULL and a message with
 * the file, the line and the reason; the real datasets must match the
 * numbers in ../shared/datasets/MANIFEST.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "graph/graph.h"
#include "testutil.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void check_i32(const int32_t *got, const int32_t *want, size_t n,
                      const char *what) {
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(got[i] == want[i], "%s[%zu] = %d, expected %d", what, i,
                  got[i], want[i]);
}

/* Offsets and edge ids are int64 (graph.h); expectations are written as
 * int32 lists. */
static void check_i64(const int64_t *got, const int32_t *want, size_t n,
                      const char *what) {
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(got[i] == want[i], "%s[%zu] = %lld, expected %d", what, i,
                  (long long)got[i], want[i]);
}

static void check_i64s(const int64_t *got, const int64_t *want, size_t n,
                       const char *what) {
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(got[i] == want[i], "%s[%zu] = %lld, expected %lld", what, i,
                  (long long)got[i], (long long)want[i]);
}

/* The path of a fixture under tests/data/graphs, malloc'ed (tu_source's
 * buffer is shared with the other helpers). */
static char *fixture(const char *name) {
  char rel[256];
  snprintf(rel, sizeof rel, "tests/data/graphs/%s", name);
  return strdup(tu_source(rel));
}

static Graph *read_ok(const char *path) {
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = graph_read(path, &d);
  ck_assert_msg(g != NULL, "reading %s failed: %s", path, d.buf);
  ck_assert_int_eq(d.nerrors, 0);
  ir_diag_free(&d);
  return g;
}

static void check_same_graph(const Graph *a, const Graph *b) {
  ck_assert_int_eq(a->nv, b->nv);
  ck_assert_int_eq(a->ne, b->ne);
  size_t ne = (size_t)a->ne, np = (size_t)a->nv + 1;
  check_i32(a->src, b->src, ne, "src");
  check_i32(a->dst, b->dst, ne, "dst");
  check_i64s(a->in_ptr, b->in_ptr, np, "in_ptr");
  check_i64s(a->in_eid, b->in_eid, ne, "in_eid");
  check_i32(a->in_src, b->in_src, ne, "in_src");
  check_i64s(a->out_ptr, b->out_ptr, np, "out_ptr");
  check_i64s(a->out_eid, b->out_eid, ne, "out_eid");
  check_i32(a->out_dst, b->out_dst, ne, "out_dst");
}

/* ---- graph_from_coo ---- */

/* e0 2->2, e1 0->1, e2 1->2, e3 2->1, e4 0->2 on 5 vertices (3, 4 isolated). */
START_TEST(test_from_coo_tiny) {
  const int64_t src[] = {2, 0, 1, 2, 0}, dst[] = {2, 1, 2, 1, 2};
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = graph_from_coo(5, 5, src, dst, "tiny", &d, (Loc){0});
  ck_assert_ptr_nonnull(g);
  ck_assert_str_eq(g->name, "tiny");
  ck_assert_int_eq(g->nv, 5);
  ck_assert_int_eq(g->ne, 5);
  check_i32(g->src, (int32_t[]){2, 0, 1, 2, 0}, 5, "src");
  check_i32(g->dst, (int32_t[]){2, 1, 2, 1, 2}, 5, "dst");
  /* in-edges: v1 <- e1, e3; v2 <- e0, e2, e4 (edge-id order) */
  check_i64(g->in_ptr, (int32_t[]){0, 0, 2, 5, 5, 5}, 6, "in_ptr");
  check_i64(g->in_eid, (int32_t[]){1, 3, 0, 2, 4}, 5, "in_eid");
  check_i32(g->in_src, (int32_t[]){0, 2, 2, 1, 0}, 5, "in_src");
  /* out-edges: v0 -> e1, e4; v1 -> e2; v2 -> e0, e3 */
  check_i64(g->out_ptr, (int32_t[]){0, 2, 3, 5, 5, 5}, 6, "out_ptr");
  check_i64(g->out_eid, (int32_t[]){1, 4, 2, 0, 3}, 5, "out_eid");
  check_i32(g->out_dst, (int32_t[]){1, 2, 2, 2, 1}, 5, "out_dst");
  /* in-degrees 0 2 3 0 0: mean 1, variance (1+1+4+1+1)/5 */
  const GraphStats *s = &g->stats;
  ck_assert_double_eq_tol(s->deg_mean, 1.0, 1e-12);
  ck_assert_double_eq_tol(s->in_deg_std, sqrt(8.0 / 5), 1e-12);
  ck_assert_int_eq(s->in_deg_max, 3);
  ck_assert_int_eq(s->out_deg_max, 2);
  ck_assert_int_eq(s->isolated, 2);
  ck_assert_int_eq(s->self_loops, 1);
  ck_assert_double_eq_tol(s->aes, (0 + 1 + 1 + 1 + 2) / 5.0, 1e-12);
  ck_assert_int_eq(d.nerrors, 0);
  graph_free(g);
  ir_diag_free(&d);
}
END_TEST

START_TEST(test_from_coo_empty) {
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = graph_from_coo(3, 0, NULL, NULL, NULL, &d, (Loc){0});
  ck_assert_ptr_nonnull(g);
  ck_assert_int_eq(g->stats.isolated, 3);
  ck_assert_double_eq(g->stats.aes, 0.0);
  check_i64(g->in_ptr, (int32_t[]){0, 0, 0, 0}, 4, "in_ptr");
  graph_free(g);
  g = graph_from_coo(0, 0, NULL, NULL, "nothing", &d, (Loc){0});
  ck_assert_ptr_nonnull(g);
  ck_assert_double_eq(g->stats.deg_mean, 0.0);
  graph_free(g);
  graph_free(NULL);
  ir_diag_free(&d);
}
END_TEST

START_TEST(test_from_coo_errors) {
  const int64_t src[] = {0, 3}, dst[] = {1, 0};
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_ptr_null(graph_from_coo(3, 2, src, dst, "g", &d,
                                       (Loc){"api", 0, 0}));
  ck_assert_msg(strstr(d.buf, "api: error: edge 1 (3 -> 0) is out of range"),
                "%s", d.buf);
  ck_assert_ptr_null(graph_from_coo(3, 2, dst, src, "g", &d, (Loc){0}));
  ck_assert_ptr_null(
      graph_from_coo((int64_t)INT32_MAX + 1, 0, NULL, NULL, "g", &d, (Loc){0}));
  ck_assert_msg(strstr(d.buf, "vertex ids are 32-bit, graphs with more than 2^31-1 "
                              "vertices are not supported"), "%s", d.buf);
  /* edges past 2^31 are fine (docs/index64.md), up to GRAPH_MAX_EDGES */
  ck_assert_ptr_null(
      graph_from_coo(4, GRAPH_MAX_EDGES + 1, NULL, NULL, "g", &d, (Loc){0}));
  ck_assert_msg(strstr(d.buf, "17179869185 edges: more than the 17179869184 a graph may "
                              "hold"), "%s", d.buf);
  ck_assert_ptr_null(graph_from_coo(-1, 0, NULL, NULL, "g", &d, (Loc){0}));
  ck_assert_int_eq(d.nerrors, 5);
  ir_diag_free(&d);
}
END_TEST

START_TEST(test_print_stats) {
  const int64_t src[] = {2, 0, 1, 2, 0}, dst[] = {2, 1, 2, 1, 2};
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = graph_from_coo(5, 5, src, dst, "tiny", &d, (Loc){0});
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  graph_print_stats(f, g);
  fclose(f);
  ck_assert_str_eq(text, "graph tiny: |V| 5, |E| 5, degree mean 1.00 std 1.26 "
                         "max in 3 out 2, isolated 2, self-loops 1, AES 1.0\n");
  free(text);
  graph_free(g);
  ir_diag_free(&d);
}
END_TEST

/* ---- reading files ---- */

START_TEST(test_mm_general) {
  const char *text = "%%MatrixMarket matrix coordinate pattern general\n"
                     "% 3 x 5: |V| is max(rows, cols)\n"
                     "\n"
                     "3 5 4\n"
                     "1 2\n"
                     "3 5\n"
                     "2   2\n"
                     "\t1 2\n";
  char *path = strdup(tu_write("general.mtx", text));
  Graph *g = read_ok(path);
  ck_assert_str_eq(g->name, path);
  ck_assert_int_eq(g->nv, 5);
  ck_assert_int_eq(g->ne, 4);
  check_i32(g->src, (int32_t[]){0, 2, 1, 0}, 4, "src");
  check_i32(g->dst, (int32_t[]){1, 4, 1, 1}, 4, "dst");
  check_i64(g->in_ptr, (int32_t[]){0, 0, 3, 3, 3, 4}, 6, "in_ptr");
  check_i64(g->in_eid, (int32_t[]){0, 2, 3, 1}, 4, "in_eid");
  check_i32(g->in_src, (int32_t[]){0, 1, 0, 2}, 4, "in_src");
  check_i64(g->out_ptr, (int32_t[]){0, 2, 3, 4, 4, 4}, 6, "out_ptr");
  check_i64(g->out_eid, (int32_t[]){0, 3, 2, 1}, 4, "out_eid");
  check_i32(g->out_dst, (int32_t[]){1, 1, 1, 4}, 4, "out_dst");
  ck_assert_int_eq(g->stats.self_loops, 1);
  ck_assert_int_eq(g->stats.isolated, 1); /* vertex 3 */
  graph_free(g);
  free(path);
}
END_TEST

/* Qualifiers are case-insensitive; CRLF line ends; integer values; no
 * newline at the end; zero entries. */
START_TEST(test_mm_variants) {
  char *path = strdup(tu_write(
      "crlf.mtx", "%%MatrixMarket MATRIX Coordinate Integer General\r\n"
                  "2 2 2\r\n1 2 5\r\n2 1 -7"));
  Graph *g = read_ok(path);
  ck_assert_int_eq(g->ne, 2);
  check_i32(g->src, (int32_t[]){0, 1}, 2, "src");
  graph_free(g);
  free(path);
  path = strdup(tu_write("none.mtx", "%%MatrixMarket matrix coordinate real "
                                     "general\n4 2 0\n"));
  g = read_ok(path);
  ck_assert_int_eq(g->nv, 4);
  ck_assert_int_eq(g->ne, 0);
  ck_assert_int_eq(g->stats.isolated, 4);
  graph_free(g);
  free(path);
}
END_TEST

START_TEST(test_mm_symmetric_order) {
  char *path = fixture("sym.mtx");
  Graph *g = read_ok(path);
  ck_assert_int_eq(g->nv, 4);
  ck_assert_int_eq(g->ne, 7);
  /* (i,j) then (j,i) right after it; the diagonal entry once */
  check_i32(g->src, (int32_t[]){1, 0, 2, 3, 0, 3, 2}, 7, "src");
  check_i32(g->dst, (int32_t[]){0, 1, 2, 0, 3, 2, 3}, 7, "dst");
  check_i64(g->in_ptr, (int32_t[]){0, 2, 3, 5, 7}, 5, "in_ptr");
  check_i64(g->in_eid, (int32_t[]){0, 3, 1, 2, 5, 4, 6}, 7, "in_eid");
  check_i32(g->in_src, (int32_t[]){1, 3, 0, 2, 3, 0, 2}, 7, "in_src");
  check_i64(g->out_ptr, (int32_t[]){0, 2, 3, 5, 7}, 5, "out_ptr");
  check_i64(g->out_eid, (int32_t[]){1, 4, 0, 2, 6, 3, 5}, 7, "out_eid");
  check_i32(g->out_dst, (int32_t[]){1, 3, 0, 2, 3, 0, 2}, 7, "out_dst");
  ck_assert_int_eq(g->stats.self_loops, 1);
  ck_assert_double_eq_tol(g->stats.aes, (1 + 1 + 0 + 3 + 3 + 1 + 1) / 7.0,
                          1e-12);
  graph_free(g);
  free(path);
}
END_TEST

START_TEST(test_snap) {
  char *path = fixture("edges.txt");
  Graph *g = read_ok(path);
  ck_assert_int_eq(g->nv, 6); /* max id + 1 */
  ck_assert_int_eq(g->ne, 4);
  check_i32(g->src, (int32_t[]){0, 1, 2, 5}, 4, "src");
  check_i32(g->dst, (int32_t[]){1, 2, 0, 2}, 4, "dst");
  check_i64(g->in_ptr, (int32_t[]){0, 1, 2, 4, 4, 4, 4}, 7, "in_ptr");
  check_i32(g->in_src, (int32_t[]){2, 0, 1, 5}, 4, "in_src");
  ck_assert_int_eq(g->stats.isolated, 2);
  graph_free(g);
  free(path);
}
END_TEST

/* The gzip'ed fixtures hold the same bytes as the plain ones. */
START_TEST(test_gzip_same_as_plain) {
  static const char *const names[] = {"sym.mtx", "edges.txt"};
  for (size_t i = 0; i < N(names); i++) {
    char gzname[64];
    snprintf(gzname, sizeof gzname, "%s.gz", names[i]);
    char *plain = fixture(names[i]), *packed = fixture(gzname);
    Graph *a = read_ok(plain), *b = read_ok(packed);
    check_same_graph(a, b);
    graph_free(a);
    graph_free(b);
    free(plain);
    free(packed);
  }
}
END_TEST

/* A gzip'ed file is recognised by content whatever its name. */
START_TEST(test_gzip_by_content) {
  char *path = strdup(tu_write("packed.txt", ""));
  gzFile f = gzopen(path, "wb");
  gzputs(f, "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n2 1\n");
  gzclose(f);
  Graph *g = read_ok(path);
  ck_assert_int_eq(g->ne, 1);
  ck_assert_int_eq(g->src[0], 1);
  graph_free(g);
  free(path);
}
END_TEST

/* ---- malformed files ---- */

typedef struct BadFile {
  const char *text;
  int line; /* 0: the error is about the whole file */
  const char *reason;
} BadFile;

#define MM_PAT "%%MatrixMarket matrix coordinate pattern general\n"
#define MM_SYM "%%MatrixMarket matrix coordinate pattern symmetric\n"
#define MM_REAL "%%MatrixMarket matrix coordinate real general\n"
#define MM_INT "%%MatrixMarket matrix coordinate integer general\n"

static const BadFile bad_files[] = {
    {"", 0, "empty file"},
    {"\n   \n\t\n", 0, "empty file"},
    {"%%MatrixMarkt matrix coordinate pattern general\n2 2 1\n1 2\n", 1,
     "bad Matrix Market header"},
    {"% just a comment\n2 2 1\n1 2\n", 1, "bad Matrix Market header"},
    {"%%MatrixMarket matrix coordinate pattern\n2 2 1\n1 2\n", 1,
     "expected 4 words after '%%MatrixMarket', found 3"},
    {"%%MatrixMarket matrix coordinate pattern general extra\n", 1,
     "found 5"},
    {"%%MatrixMarket vector coordinate pattern general\n", 1,
     "unsupported Matrix Market object 'vector'"},
    {"%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", 1,
     "unsupported Matrix Market format 'array'"},
    {"%%MatrixMarket matrix coordinate complex general\n", 1,
     "unsupported Matrix Market field 'complex'"},
    {"%%MatrixMarket matrix coordinate complex hermitian\n", 1,
     "unsupported Matrix Market field 'complex'"},
    {"%%MatrixMarket matrix coordinate real hermitian\n", 1,
     "unsupported Matrix Market symmetry 'hermitian'"},
    {"%%MatrixMarket matrix coordinate real skew-symmetric\n", 1,
     "unsupported Matrix Market symmetry 'skew-symmetric'"},
    {MM_PAT "% only comments\n", 2, "missing size line"},
    {MM_PAT "2 2\n1 2\n", 2, "bad size line: expected 'rows columns "
                             "entries', found 2 fields"},
    {MM_PAT "2 2 1 x\n1 2\n", 2, "bad size line"},
    {MM_PAT "2 two 1\n1 2\n", 2, "expected an integer column count, found "
                                 "'two'"},
    {MM_PAT "-2 2 1\n1 2\n", 2, "negative row count -2"},
    {MM_PAT "99999999999999999999 2 1\n", 2, "row count "
                                             "'99999999999999999999' is out "
                                             "of range"},
    {MM_PAT "3000000000 3000000000 1\n1 2\n", 2,
     "vertex ids are 32-bit, graphs with more than 2^31-1 vertices are not supported"},
    {MM_PAT "3 3 9000000000\n1 2\n", 2,
     "9000000000 entries: more than the 8589934592 edges a graph may hold"},
    {MM_SYM "2 3 1\n1 1\n", 2, "a symmetric matrix must be square"},
    {MM_PAT "% c\n3 3 3\n1 2\n2 3\n", 5, "file ends after 2 of the 3 "
                                         "entries declared on line 3"},
    {MM_PAT "3 3 1\n1 2\n2 3\n", 4, "more entries than the 1 declared on "
                                    "line 2"},
    {MM_PAT "3 3 0\n1 2\n", 3, "more entries than the 0 declared"},
    {MM_PAT "3 3 1\n0 2\n", 3, "row index 0 out of range 1..3"},
    {MM_PAT "3 3 1\n1 -2\n", 3, "column index -2 out of range 1..3"},
    {MM_PAT "3 5 1\n4 2\n", 3, "row index 4 out of range 1..3"},
    {MM_PAT "3 5 1\n1 6\n", 3, "column index 6 out of range 1..5"},
    {MM_PAT "3 3 2\n1 2\n1 x\n", 4, "expected an integer column index, "
                                    "found 'x'"},
    {MM_PAT "3 3 1\n1.5 2\n", 3, "expected an integer row index, found "
                                 "'1.5'"},
    {MM_PAT "3 3 1\n1\n", 3, "expected 'row column', found 1 field"},
    {MM_PAT "3 3 1\n1 2 3\n", 3, "trailing junk '3' after the entry"},
    {MM_REAL "3 3 1\n1 2\n", 3, "expected 'row column value', found 2 "
                                "fields"},
    {MM_REAL "3 3 1\n1 2 abc\n", 3, "expected a real value, found 'abc'"},
    {MM_REAL "3 3 1\n1 2 1.0 x\n", 3, "trailing junk 'x'"},
    {MM_INT "3 3 1\n1 2 1.5\n", 3, "expected an integer value, found '1.5'"},
    {"0 1\n1 x\n", 2, "expected an integer destination vertex id, found "
                      "'x'"},
    {"0 1 5\n", 1, "trailing junk '5' after the edge"},
    {"# c\n-1 2\n", 2, "negative source vertex id -1"},
    {"# c\n0\n", 2, "expected an edge 'source destination', found 1 field"},
    {"0 3000000000\n", 1, "vertex ids are 32-bit, graphs with more than 2^31-1 "
                          "vertices are not supported"},
    {"# a\n\n# b\n", 3, "no edges"},
};

START_TEST(test_malformed) {
  const BadFile *b = &bad_files[_i];
  char name[32];
  snprintf(name, sizeof name, "bad%d.txt", _i);
  char *path = strdup(tu_write(name, b->text));
  char want[512];
  if (b->line > 0)
    snprintf(want, sizeof want, "%s:%d: error: ", path, b->line);
  else
    snprintf(want, sizeof want, "%s: error: ", path);
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = graph_read(path, &d);
  ck_assert_msg(g == NULL, "case %d was accepted", _i);
  ck_assert_int_eq(d.nerrors, 1);
  ck_assert_msg(strstr(d.buf, want) == d.buf, "case %d: got '%s', expected "
                "it to start with '%s'", _i, d.buf, want);
  ck_assert_msg(strstr(d.buf, b->reason), "case %d: got '%s', expected '%s'",
                _i, d.buf, b->reason);
  ir_diag_free(&d);
  free(path);
}
END_TEST

/* Reads `path`, expecting NULL and one error containing `reason`. */
static void expect_read_error(const char *path, const char *reason) {
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_ptr_null(graph_read(path, &d));
  ck_assert_int_eq(d.nerrors, 1);
  ck_assert_msg(strstr(d.buf, path) == d.buf, "got '%s'", d.buf);
  ck_assert_msg(strstr(d.buf, reason), "got '%s', expected '%s'", d.buf,
                reason);
  ir_diag_free(&d);
}

START_TEST(test_bad_gzip) {
  /* The stream ends inside line 34, after 33 whole lines. */
  char *path = fixture("truncated.mtx.gz");
  expect_read_error(path, ".gz:34: error: truncated gzip data (unexpected "
                          "end of file)");
  free(path);
  path = fixture("badcrc.mtx.gz");
  expect_read_error(path, ".gz: error: corrupt gzip data (incorrect data "
                          "check)");
  free(path);
}
END_TEST

START_TEST(test_unreadable) {
  char missing[512];
  snprintf(missing, sizeof missing, "%s/missing.mtx", tu_tmpdir());
  expect_read_error(missing, ": error: cannot open: ");
  char *path = strdup(tu_tmpdir());
  expect_read_error(path, ": error: read error: ");
  free(path);
}
END_TEST

START_TEST(test_binary_and_long_lines) {
  char *path = strdup(tu_write("nul.txt", ""));
  FILE *f = fopen(path, "wb");
  fwrite("0 1\n1 2\0junk\n2 3\n", 1, 17, f);
  fclose(f);
  expect_read_error(path, ":2: error: NUL byte in the line");
  f = fopen(path, "wb");
  fputs("0 1\n", f);
  for (int i = 0; i < (3 << 19); i++) fputc('7', f);
  fclose(f);
  expect_read_error(path, ":2: error: line longer than");
  free(path);
}
END_TEST

/* ---- generators ---- */

START_TEST(test_grid_small) {
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = graph_generate("grid:3x2", &d);
  ck_assert_ptr_nonnull(g);
  ck_assert_str_eq(g->name, "grid:3x2");
  ck_assert_int_eq(g->nv, 6);
  ck_assert_int_eq(g->ne, 14);
  /* 0 1 2
   * 3 4 5 */
  check_i32(g->src, (int32_t[]){0, 0, 1, 1, 1, 2, 2, 3, 3, 4, 4, 4, 5, 5},
            14, "src");
  check_i32(g->dst, (int32_t[]){1, 3, 0, 2, 4, 1, 5, 0, 4, 1, 3, 5, 2, 4},
            14, "dst");
  check_i64(g->in_ptr, (int32_t[]){0, 2, 5, 7, 9, 12, 14}, 7, "in_ptr");
  check_i64(g->out_ptr, (int32_t[]){0, 2, 5, 7, 9, 12, 14}, 7, "out_ptr");
  ck_assert_int_eq(g->stats.in_deg_max, 3);
  ck_assert_int_eq(g->stats.self_loops, 0);
  graph_free(g);

  g = graph_generate("grid:1x1", &d);
  ck_assert_int_eq(g->nv, 1);
  ck_assert_int_eq(g->ne, 0);
  graph_free(g);
  g = graph_generate("grid:1x5", &d);
  ck_assert_int_eq(g->ne, 8);
  graph_free(g);
  ck_assert_int_eq(d.nerrors, 0);
  ir_diag_free(&d);
}
END_TEST

START_TEST(test_grid_degrees) {
  const int W = 50, H = 40;
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = graph_generate("grid:50x40", &d);
  ck_assert_int_eq(g->nv, W * H);
  ck_assert_int_eq(g->ne, 2 * (H * (W - 1) + W * (H - 1)));
  for (int v = 0; v < g->nv; v++) {
    int x = v % W, y = v / W;
    int want = (x > 0) + (x < W - 1) + (y > 0) + (y < H - 1);
    ck_assert_int_eq(g->in_ptr[v + 1] - g->in_ptr[v], want);
    ck_assert_int_eq(g->out_ptr[v + 1] - g->out_ptr[v], want);
  }
  for (int e = 1; e < g->ne; e++)
    ck_assert(g->src[e - 1] < g->src[e] ||
              (g->src[e - 1] == g->src[e] && g->dst[e - 1] < g->dst[e]));
  graph_free(g);
  ir_diag_free(&d);
}
END_TEST

static Graph *generate(const char *spec) {
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = graph_generate(spec, &d);
  ck_assert_msg(g != NULL, "%s: %s", spec, d.buf);
  ir_diag_free(&d);
  return g;
}

START_TEST(test_rmat) {
  Graph *g = generate("rmat:10:8");
  ck_assert_int_eq(g->nv, 1024);
  ck_assert_int_le(g->ne, 8 * 1024);
  ck_assert_int_gt(g->ne, 4 * 1024); /* duplicates are many, not most */
  ck_assert_int_eq(g->stats.self_loops, 0);
  /* strictly increasing (src, dst): sorted and free of duplicates */
  for (int e = 1; e < g->ne; e++)
    ck_assert(g->src[e - 1] < g->src[e] ||
              (g->src[e - 1] == g->src[e] && g->dst[e - 1] < g->dst[e]));
  /* R-MAT is skewed: the busiest vertex has many times the mean degree */
  ck_assert_int_gt(g->stats.in_deg_max, 8 * g->stats.deg_mean);
  /* relabelled: the heavy vertices are not the low ids of raw R-MAT */
  int32_t top = 0;
  for (int32_t v = 1; v < g->nv; v++)
    if (g->out_ptr[v + 1] - g->out_ptr[v] > g->out_ptr[top + 1] - g->out_ptr[top])
      top = v;
  ck_assert_int_ne(top, 0);

  Graph *same = generate("rmat:10:8:1");
  check_same_graph(g, same);
  Graph *other = generate("rmat:10:8:2");
  ck_assert(other->ne != g->ne ||
            memcmp(other->src, g->src, sizeof(int32_t) * (size_t)g->ne) ||
            memcmp(other->dst, g->dst, sizeof(int32_t) * (size_t)g->ne));
  graph_free(g);
  graph_free(same);
  graph_free(other);

  g = generate("rmat:1:1");
  ck_assert_int_eq(g->nv, 2);
  ck_assert_int_le(g->ne, 2);
  graph_free(g);
}
END_TEST

/* The sampled families: sorted and free of repeats and self-loops, the
 * same graph for a spec, the skew set by G, the communities by MIX. */
static void check_sorted_simple(const Graph *g) {
  ck_assert_int_eq(g->stats.self_loops, 0);
  for (int64_t e = 1; e < g->ne; e++)
    ck_assert(g->src[e - 1] < g->src[e] ||
              (g->src[e - 1] == g->src[e] && g->dst[e - 1] < g->dst[e]));
}

START_TEST(test_powerlaw_community) {
  Graph *steep = generate("powerlaw:20000:8:21");
  Graph *flat = generate("powerlaw:20000:8:45");
  check_sorted_simple(steep);
  check_sorted_simple(flat);
  ck_assert_int_eq(steep->nv, 20000);
  ck_assert_int_le(steep->ne, 8 * 20000);
  ck_assert_int_gt(flat->ne, 7 * 20000); /* few repeats where degrees are even */
  /* exponent 2.1: hubs of thousands of edges; 4.5: none past 20x the mean */
  ck_assert_int_gt(steep->stats.in_deg_max, 100 * steep->stats.deg_mean);
  ck_assert_int_lt(flat->stats.in_deg_max, 20 * flat->stats.deg_mean);
  Graph *same = generate("powerlaw:20000:8:21:1");
  check_same_graph(steep, same);
  graph_free(same);
  Graph *other = generate("powerlaw:20000:8:21:2");
  ck_assert(other->ne != steep->ne ||
            memcmp(other->src, steep->src, sizeof(int32_t) * (size_t)steep->ne));
  /* 10 communities of 1,000 ids, 20% of arcs anywhere: about 82% of the
   * arcs stay inside (the 20% land inside one time in ten) */
  Graph *c = generate("community:10000:10:10:20");
  check_sorted_simple(c);
  int64_t inside = 0;
  for (int64_t e = 0; e < c->ne; e++) inside += c->src[e] / 1000 == c->dst[e] / 1000;
  double frac = (double)inside / (double)c->ne;
  ck_assert_msg(frac > 0.79 && frac < 0.85, "%.3f of the arcs inside", frac);
  Graph *closed = generate("community:10000:4:100:0");
  for (int64_t e = 0; e < closed->ne; e++)
    ck_assert_int_eq(closed->src[e] / 100, closed->dst[e] / 100);
  graph_free(steep);
  graph_free(flat);
  graph_free(other);
  graph_free(c);
  graph_free(closed);
}
END_TEST

typedef struct BadSpec {
  const char *spec, *reason;
} BadSpec;

static const BadSpec bad_specs[] = {
    {"rmat:abc", "SCALE must be a number in 1..26, found 'abc'"},
    {"rmat:", "SCALE is missing"},
    {"rmat:10", "EDGEFACTOR is missing"},
    {"rmat:10:", "EDGEFACTOR is missing"},
    {"rmat:0:4", "SCALE must be in 1..26, found 0"},
    {"rmat:27:4", "SCALE must be in 1..26, found 27"},
    {"rmat:-1:4", "SCALE must be a number in 1..26, found '-1'"},
    {"rmat: 10:4", "found ' 10'"},
    {"rmat:10:0", "EDGEFACTOR must be in 1..1024, found 0"},
    {"rmat:10:2000", "EDGEFACTOR must be in 1..1024, found 2000"},
    {"rmat:10:8:", "SEED is missing"},
    {"rmat:10:8:x", "SEED must be a number"},
    {"rmat:10:8:99999999999999999999", "SEED must be in"},
    {"rmat:10:8:1:2", "unexpected ':2' at the end"},
    {"rmat:10:8x", "EDGEFACTOR must be a number in 1..1024, found '8x'"},
    {"rmat:26:1024", "samples 68719476736 arcs, more than the 17179869184 a graph may hold"},
    {"grid:3x", "H is missing"},
    {"grid:3", "H is missing"},
    {"grid:x3", "W is missing"},
    {"grid:", "W is missing"},
    {"grid:0x3", "W must be in 1..268435456, found 0"},
    {"grid:3x0", "H must be in 1..268435456, found 0"},
    {"grid:3x4y", "H must be a number in 1..268435456, found '4y'"},
    {"grid:3x3x3", "found '3x3'"},
    {"grid:20000x20000", "400000000 vertices, more than the 2^28"},
    {"ring:5", "D is missing (ring:N:D)"},
    {"ring:1:1", "N must be in 2..2147483647, found 1"},
    {"ring:x:2", "N must be a number in 2..2147483647, found 'x'"},
    {"ring:5:0", "D must be in 1..2147483647, found 0"},
    {"ring:5:5", "D = 5 must be below N = 5"},
    {"ring:5:2:1", "found '2:1'"},
    {"ring:2147483647:16", "34359738352 edges, more than the 17179869184 a graph may hold"},
    {"powerlaw:1:4:25", "N must be in 2..67108864, found 1"},
    {"powerlaw:100:4", "G is missing (powerlaw:N:D:G[:SEED]"},
    {"powerlaw:100:4:20", "G must be in 21..50, found 20"},
    {"powerlaw:100:0:25", "D must be in 1..1024, found 0"},
    {"powerlaw:100:4:25:", "SEED is missing"},
    {"powerlaw:100:4:25:1:1", "unexpected ':1' at the end"},
    {"powerlaw:67108864:1024:25", "samples 68719476736 arcs, more than"},
    {"community:100:4:200:10", "K = 200 communities of N = 100 vertices"},
    {"community:100:4:10:101", "MIX must be in 0..100, found 101"},
    {"community:100:4:10", "MIX is missing (community:N:D:K:MIX[:SEED]"},
    {"community:100", "D is missing (community:N:D:K:MIX[:SEED]"},
    {"community:100:4:0:10", "K must be in 1..67108864, found 0"},
    {"star:5", "unknown graph generator 'star:5'"},
};

/* ring:N:D written straight into CSR and CSC is the graph graph_from_coo
 * builds from its arcs (edge id u*D + j-1 for u -> u+j mod N), with the
 * threads (|E| >= 2^21) and without. */
static void ring_same_as_coo(int64_t N, int64_t D) {
  char spec[64];
  snprintf(spec, sizeof spec, "ring:%lld:%lld", (long long)N, (long long)D);
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = graph_generate(spec, &d);
  ck_assert_msg(g != NULL, "%s: %s", spec, d.buf);
  int64_t ne = N * D;
  int64_t *src = malloc(sizeof *src * (size_t)ne), *dst = malloc(sizeof *dst * (size_t)ne);
  for (int64_t u = 0; u < N; u++)
    for (int64_t j = 1; j <= D; j++) {
      src[u * D + j - 1] = u;
      dst[u * D + j - 1] = (u + j) % N;
    }
  Graph *want = graph_from_coo(N, ne, src, dst, spec, &d, (Loc){0});
  ck_assert_ptr_nonnull(want);
  check_same_graph(g, want);
  ck_assert_double_eq_tol(g->stats.aes, want->stats.aes, 1e-9);
  ck_assert_int_eq(g->stats.in_deg_max, D);
  ck_assert_int_eq(g->stats.out_deg_max, D);
  ck_assert_double_eq_tol(g->stats.locality, want->stats.locality, 1e-12);
  free(src);
  free(dst);
  graph_free(want);
  graph_free(g);
  ir_diag_free(&d);
}

START_TEST(test_ring) {
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = graph_generate("ring:5:2", &d);
  ck_assert_ptr_nonnull(g);
  ck_assert_int_eq(g->nv, 5);
  ck_assert_int_eq(g->ne, 10);
  check_i32(g->src, (int32_t[]){0, 0, 1, 1, 2, 2, 3, 3, 4, 4}, 10, "src");
  check_i32(g->dst, (int32_t[]){1, 2, 2, 3, 3, 4, 4, 0, 0, 1}, 10, "dst");
  /* v = 0 takes 3 -> 0 (edge 7) and 4 -> 0 (edge 8); v = 1 takes 0 -> 1
   * (edge 0) and 4 -> 1 (edge 9) */
  check_i64(g->in_ptr, (int32_t[]){0, 2, 4, 6, 8, 10}, 6, "in_ptr");
  check_i64(g->in_eid, (int32_t[]){7, 8, 0, 9, 1, 2, 3, 4, 5, 6}, 10, "in_eid");
  check_i32(g->in_src, (int32_t[]){3, 4, 0, 4, 0, 1, 1, 2, 2, 3}, 10, "in_src");
  ck_assert_int_eq(g->stats.self_loops, 0);
  graph_free(g);
  ir_diag_free(&d);
  ring_same_as_coo(7, 3);
  ring_same_as_coo(2, 1);
  ring_same_as_coo(100, 99);
  /* the threaded fill (graph/gen.c: a part per 2^20 edges, from 2^21 on):
   * 4.2M edges, 2.1M in the sanitized run (tu_quick) */
  ring_same_as_coo(tu_quick() ? 300000 : 600000, 7);
  /* the host-memory limit holds before anything is allocated */
  setenv("GOP_MAX_HOST_BYTES", "1000000", 1);
  ir_diag_init(&d, NULL);
  ck_assert_ptr_null(graph_generate("ring:100000:20", &d));
  unsetenv("GOP_MAX_HOST_BYTES");
  ck_assert_msg(strstr(d.buf, "ring:100000:20: error: a graph of 100000 vertices and 2000000 "
                              "edges needs: 65600016 bytes, over the limit of 1000000"),
                "%s", d.buf);
  ir_diag_free(&d);
}
END_TEST

START_TEST(test_bad_specs) {
  const BadSpec *b = &bad_specs[_i];
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_ptr_null(graph_generate(b->spec, &d));
  ck_assert_int_eq(d.nerrors, 1);
  ck_assert_msg(strncmp(d.buf, "error: ", 7) == 0, "got '%s'", d.buf);
  ck_assert_msg(strstr(d.buf, b->spec), "'%s' does not name the spec",
                d.buf);
  ck_assert_msg(strstr(d.buf, b->reason), "got '%s', expected '%s'", d.buf,
                b->reason);
  ir_diag_free(&d);
}
END_TEST

START_TEST(test_open_dispatch) {
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = graph_open("grid:2x2", &d);
  ck_assert_int_eq(g->ne, 8);
  graph_free(g);
  char *path = fixture("sym.mtx");
  g = graph_open(path, &d);
  ck_assert_int_eq(g->ne, 7);
  graph_free(g);
  free(path);
  ck_assert_ptr_null(graph_open("rmat:x", &d));
  ck_assert_ptr_null(graph_open("no-such-file.mtx", &d));
  ck_assert_msg(strstr(d.buf, "no-such-file.mtx: error: cannot open"), "%s",
                d.buf);
  ir_diag_free(&d);
}
END_TEST

/* ---- the real datasets (MANIFEST.md) ---- */

typedef struct Dataset {
  const char *file;
  int32_t nv, ne, in_max, out_max, isolated;
  double mean, std;
  bool sym;
} Dataset;

static const Dataset datasets[] = {
    {"cora.mtx.gz", 2708, 10556, 168, 168, 0, 3.90, 5.23, true},
    {"citeseer.mtx.gz", 3327, 9104, 99, 99, 48, 2.74, 3.38, true},
    {"pubmed.mtx.gz", 19717, 88648, 171, 171, -1, 4.50, 7.43, true},
    {"wiki-Vote.mtx.gz", 7115, 103689, 457, 893, -1, 14.57, 31.73, false},
};

START_TEST(test_datasets) {
  const Dataset *w = &datasets[_i];
  char *path = strdup(tu_dataset(w->file));
  Graph *g = read_ok(path);
  ck_assert_int_eq(g->nv, w->nv);
  ck_assert_int_eq(g->ne, w->ne);
  ck_assert_int_eq(g->stats.in_deg_max, w->in_max);
  ck_assert_int_eq(g->stats.out_deg_max, w->out_max);
  if (w->isolated >= 0) ck_assert_int_eq(g->stats.isolated, w->isolated);
  ck_assert_int_eq(g->stats.self_loops, 0);
  ck_assert_double_eq_tol(g->stats.deg_mean, w->mean, 0.005);
  ck_assert_double_eq_tol(g->stats.in_deg_std, w->std, 0.005);
  bool same_degrees = true;
  for (int32_t v = 0; v < g->nv; v++)
    same_degrees &= g->in_ptr[v + 1] - g->in_ptr[v] ==
                    g->out_ptr[v + 1] - g->out_ptr[v];
  ck_assert_int_eq(same_degrees, w->sym);
  /* CSR and CSC are consistent with the COO arrays */
  for (int32_t k = 0; k < g->ne; k++) {
    ck_assert_int_eq(g->src[g->in_eid[k]], g->in_src[k]);
    ck_assert_int_eq(g->dst[g->out_eid[k]], g->out_dst[k]);
  }
  graph_free(g);
  free(path);
}
END_TEST

START_TEST(test_cora_stats_line) {
  char *path = strdup(tu_dataset("cora.mtx.gz"));
  Graph *g = read_ok(path);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  graph_print_stats(f, g);
  fclose(f);
  char want[4200];
  snprintf(want, sizeof want, "graph %s: |V| 2708, |E| 10556, degree mean "
           "3.90 std 5.23 max in 168 out 168, isolated 0, self-loops 0, AES ",
           path);
  ck_assert_msg(strncmp(text, want, strlen(want)) == 0, "got '%s'", text);
  free(text);
  graph_free(g);
  free(path);
}
END_TEST

static Suite *graph_suite(void) {
  Suite *s = suite_create("graph");
  TCase *tc = tcase_create("build");
  tcase_add_test(tc, test_from_coo_tiny);
  tcase_add_test(tc, test_from_coo_empty);
  tcase_add_test(tc, test_from_coo_errors);
  tcase_add_test(tc, test_print_stats);
  suite_add_tcase(s, tc);
  tc = tcase_create("read");
  tcase_add_test(tc, test_mm_general);
  tcase_add_test(tc, test_mm_variants);
  tcase_add_test(tc, test_mm_symmetric_order);
  tcase_add_test(tc, test_snap);
  tcase_add_test(tc, test_gzip_same_as_plain);
  tcase_add_test(tc, test_gzip_by_content);
  suite_add_tcase(s, tc);
  tc = tcase_create("malformed");
  tcase_add_loop_test(tc, test_malformed, 0, (int)N(bad_files));
  tcase_add_test(tc, test_bad_gzip);
  tcase_add_test(tc, test_unreadable);
  tcase_add_test(tc, test_binary_and_long_lines);
  suite_add_tcase(s, tc);
  tc = tcase_create("generate");
  tcase_add_test(tc, test_grid_small);
  tcase_add_test(tc, test_grid_degrees);
  tcase_add_test(tc, test_rmat);
  tcase_add_test(tc, test_powerlaw_community);
  tcase_add_loop_test(tc, test_bad_specs, 0, (int)N(bad_specs));
  tcase_add_test(tc, test_ring);
  tcase_add_test(tc, test_open_dispatch);
  suite_add_tcase(s, tc);
  tc = tcase_create("datasets");
  tcase_add_loop_test(tc, test_datasets, 0, (int)N(datasets));
  tcase_add_test(tc, test_cora_stats_line);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run(graph_suite()); }
