/* tests/unit/test_gopg.c: the host build on several threads, and the
 * binary graph format.
 *
 * The parallel build (graph/par.c) must give what one thread gives, bit
 * for bit: every array and every statistic, on graphs big enough that the
 * loops really cut them into parts (parts hold at least 2^16 edges), for
 * arcs in order (generators) and out of order (a shuffled COO, the
 * counting sort's path). R-MAT must not depend on the thread count, and a
 * spec of one chunk (2^20 samples or fewer) must give the graph the
 * single-threaded generator gave. A .gopg file must read back as the graph
 * written, and truncated, foreign and corrupted files must be refused with
 * a message naming the file and the damage.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/graph.h"
#include "testutil.h"

/* Fails unless a and b hold the same arrays, statistics and flags. */
static void same_graph(const Graph *a, const Graph *b) {
  ck_assert_int_eq(a->nv, b->nv);
  ck_assert_int_eq(a->ne, b->ne);
  size_t e4 = sizeof(int32_t) * (size_t)a->ne, e8 = sizeof(int64_t) * (size_t)a->ne;
  size_t v8 = sizeof(int64_t) * ((size_t)a->nv + 1);
  ck_assert(memcmp(a->src, b->src, e4) == 0);
  ck_assert(memcmp(a->dst, b->dst, e4) == 0);
  ck_assert(memcmp(a->in_ptr, b->in_ptr, v8) == 0);
  ck_assert(memcmp(a->in_eid, b->in_eid, e8) == 0);
  ck_assert(memcmp(a->in_src, b->in_src, e4) == 0);
  ck_assert(memcmp(a->out_ptr, b->out_ptr, v8) == 0);
  ck_assert(memcmp(a->out_eid, b->out_eid, e8) == 0);
  ck_assert(memcmp(a->out_dst, b->out_dst, e4) == 0);
  ck_assert(memcmp(&a->stats, &b->stats, sizeof a->stats) == 0);
  ck_assert_int_eq(a->csr_edges, b->csr_edges);
}

static Graph *generate(const char *spec, int threads) {
  graph_set_threads(threads);
  Diag d;
  ir_diag_init(&d, stderr);
  Graph *g = graph_generate(spec, &d);
  ir_diag_free(&d);
  graph_set_threads(0);
  ck_assert_msg(g != NULL, "%s", spec);
  return g;
}

/* rmat:17:9 draws 2^17 * 9 samples: two chunks of R-MAT streams. */
static const char *const specs[] = {"rmat:17:9", "grid:300x250", "ring:200000:3"};

START_TEST(test_threads_generate) {
  Graph *one = generate(specs[_i], 1);
  ck_assert_int_gt(one->ne, 4 << 16); /* several parts of 2^16 edges */
  for (int t = 2; t <= 5; t += 3) {
    Graph *many = generate(specs[_i], t);
    same_graph(one, many);
    graph_free(many);
  }
  graph_free(one);
}
END_TEST

/* Shuffled arcs, duplicates and self-loops included: the counting sort by
 * parts, not the sorted shortcut. */
START_TEST(test_threads_from_coo) {
  int64_t nv = 50000, ne = 400000;
  int64_t *src = malloc(sizeof(int64_t) * (size_t)ne), *dst = malloc(sizeof(int64_t) * (size_t)ne);
  ck_assert(src && dst);
  uint64_t s = 7;
  for (int64_t e = 0; e < ne; e++) {
    /* a skewed destination: some vertices take thousands of arcs */
    uint64_t r = tu_lcg(&s);
    src[e] = (int64_t)(r % (uint64_t)nv);
    dst[e] = (int64_t)((r >> 20) % 16 == 0 ? (r >> 40) % 64 : (r >> 24) % (uint64_t)nv);
  }
  Graph *g[3];
  const int threads[3] = {1, 2, 7};
  for (int i = 0; i < 3; i++) {
    graph_set_threads(threads[i]);
    Diag d;
    ir_diag_init(&d, stderr);
    g[i] = graph_from_coo(nv, ne, src, dst, "shuffled", &d, (Loc){0});
    ir_diag_free(&d);
    ck_assert(g[i] != NULL);
  }
  graph_set_threads(0);
  /* the CSR keeps each destination's arcs in edge-id order */
  for (int32_t v = 0; v < nv; v++)
    for (int64_t k = g[0]->in_ptr[v] + 1; k < g[0]->in_ptr[v + 1]; k++)
      ck_assert_int_lt(g[0]->in_eid[k - 1], g[0]->in_eid[k]);
  same_graph(g[0], g[1]);
  same_graph(g[0], g[2]);
  /* and a bad arc is reported as the first one, whatever the threads */
  src[ne - 5] = nv;
  src[ne - 1] = -1;
  graph_set_threads(3);
  Diag d;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ir_diag_init(&d, f);
  ck_assert(graph_from_coo(nv, ne, src, dst, "bad", &d, (Loc){0}) == NULL);
  ir_diag_free(&d);
  fclose(f);
  graph_set_threads(0);
  ck_assert_msg(strstr(text, "edge 399995 (50000 -> ") != NULL, "%s", text);
  free(text);
  for (int i = 0; i < 3; i++) graph_free(g[i]);
  free(src);
  free(dst);
}
END_TEST

/* One chunk of samples: the arcs of the single-threaded generator (these
 * numbers are what it printed). */
START_TEST(test_rmat_one_chunk_unchanged) {
  Graph *g = generate("rmat:16:16", 2);
  ck_assert_int_eq(g->ne, 955915);
  ck_assert_int_eq(g->stats.in_deg_max, 6252);
  ck_assert_int_eq(g->stats.out_deg_max, 6262);
  ck_assert_int_eq(g->stats.isolated, 18754);
  graph_free(g);
  g = generate("rmat:8:4", 2);
  ck_assert_int_eq(g->ne, 849);
  ck_assert_int_eq(g->stats.isolated, 65);
  graph_free(g);
}
END_TEST

START_TEST(test_threads_env) {
  setenv("GOP_THREADS", "3", 1);
  graph_set_threads(5);
  ck_assert_int_eq(graph_threads(), 3); /* the environment wins */
  unsetenv("GOP_THREADS");
  ck_assert_int_eq(graph_threads(), 5);
  graph_set_threads(0);
  ck_assert_int_ge(graph_threads(), 1);
  ck_assert_int_eq(graph_par_parts(10, 1 << 16), 1);
}
END_TEST

/* ---- .gopg ---- */

/* The message reading `path` gives; fails if it reads. */
static char *refusal(const char *path) {
  Diag d;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ir_diag_init(&d, f);
  Graph *g = graph_open(path, &d);
  ir_diag_free(&d);
  fclose(f);
  ck_assert_msg(g == NULL, "%s was read", path);
  ck_assert_msg(strstr(text, path) != NULL, "the message names no file: %s", text);
  return text;
}

static void refused(const char *path, const char *why) {
  char *text = refusal(path);
  ck_assert_msg(strstr(text, why) != NULL, "expected '%s', got: %s", why, text);
  free(text);
}

static char *write_graph(const Graph *g, const char *name) {
  static char path[4][512];
  static int turn;
  char *p = path[turn++ % 4];
  snprintf(p, 512, "%s/%s", tu_tmpdir(), name);
  Diag d;
  ir_diag_init(&d, stderr);
  ck_assert_int_eq(graph_write_gopg(g, p, &d), 0);
  ir_diag_free(&d);
  return p;
}

static Graph *read_ok(const char *path) {
  Diag d;
  ir_diag_init(&d, stderr);
  Graph *g = graph_open(path, &d);
  ir_diag_free(&d);
  ck_assert_msg(g != NULL, "%s", path);
  return g;
}

static const char *const round_specs[] = {"rmat:10:8", "grid:7x5", "ring:1000:4", "grid:1x1"};

START_TEST(test_gopg_round_trip) {
  Graph *g = generate(round_specs[_i], 0);
  const char *path = write_graph(g, "rt.gopg");
  Graph *r = read_ok(path);
  ck_assert(r->map != NULL); /* mapped, not copied */
  same_graph(g, r);
  ck_assert_str_eq(r->name, path);
  /* a mapped graph takes group tables like any other */
  Diag d;
  ir_diag_init(&d, stderr);
  ck_assert(graph_groups(r, 4, 0, 0, 0, &d) != NULL);
  ir_diag_free(&d);
  /* by content too: the magic, whatever the name */
  char other[600];
  snprintf(other, sizeof other, "%s/rt.bin", tu_tmpdir());
  ck_assert_int_eq(rename(path, other), 0);
  Graph *r2 = read_ok(other);
  same_graph(g, r2);
  graph_free(r2);
  graph_free(r);
  graph_free(g);
}
END_TEST

/* Copies `from` to `to`, keeping `keep` bytes (-1: all) and then setting
 * byte `at` (if >= 0) to its complement. */
static void damage(const char *from, const char *to, long keep, long at) {
  size_t len;
  char *data = tu_read_file(from, &len);
  ck_assert(data != NULL);
  if (keep >= 0 && (size_t)keep < len) len = (size_t)keep;
  if (at >= 0 && (size_t)at < len) data[at] = (char)~data[at];
  FILE *f = fopen(to, "wb");
  ck_assert(f != NULL);
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  fclose(f);
  free(data);
}

START_TEST(test_gopg_refusals) {
  Graph *g = generate("rmat:9:4", 0);
  const char *good = write_graph(g, "good.gopg");
  struct stat st;
  ck_assert_int_eq(stat(good, &st), 0);
  long size = (long)st.st_size;
  char bad[600];
  snprintf(bad, sizeof bad, "%s/bad.gopg", tu_tmpdir());
  /* truncated: inside the header, and inside the arrays */
  const long cuts[] = {0, 7, 100, 4095, 4096, 5000, size - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
    damage(good, bad, cuts[i], -1);
    char *text = refusal(bad);
    ck_assert_msg(strstr(text, "truncated") || (cuts[i] < 8 && strstr(text, "not a gop binary")),
                  "cut at %ld: %s", cuts[i], text);
    free(text);
  }
  /* one byte more than the header says */
  damage(good, bad, -1, -1);
  FILE *f = fopen(bad, "ab");
  fputc(0, f);
  fclose(f);
  refused(bad, "corrupted binary graph");
  /* foreign: a Matrix Market file and zeros under the .gopg name */
  const char *mtx = tu_write("foreign.gopg", "%%MatrixMarket matrix coordinate pattern general\n"
                                             "2 2 1\n1 2\n");
  refused(mtx, "not a gop binary graph");
  char *zeros = calloc(1, 8192);
  f = fopen(bad, "wb");
  fwrite(zeros, 1, 8192, f);
  fclose(f);
  free(zeros);
  refused(bad, "not a gop binary graph");
  /* corrupted: the version, the header, each array */
  damage(good, bad, -1, 8);
  refused(bad, "format version");
  damage(good, bad, -1, 20);
  refused(bad, "header's checksum");
  damage(good, bad, -1, 200);
  refused(bad, "header's checksum");
  damage(good, bad, -1, 4096 + 3);
  refused(bad, "checksum of array src");
  damage(good, bad, -1, size - 2);
  refused(bad, "checksum of array out_dst");
  /* the good file still reads */
  Graph *r = read_ok(good);
  same_graph(g, r);
  graph_free(r);
  graph_free(g);
}
END_TEST

/* Writing through a temporary: a failed write leaves the old file whole. */
START_TEST(test_gopg_write_atomic) {
  Graph *g = generate("grid:4x4", 0);
  const char *path = write_graph(g, "keep.gopg");
  size_t before;
  char *old = tu_read_file(path, &before);
  Diag d;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ir_diag_init(&d, f);
  char missing[600];
  snprintf(missing, sizeof missing, "%s/no/such/dir/x.gopg", tu_tmpdir());
  ck_assert_int_eq(graph_write_gopg(g, missing, &d), -1);
  ir_diag_free(&d);
  fclose(f);
  ck_assert_msg(strstr(text, missing) && strstr(text, "cannot write"), "%s", text);
  free(text);
  size_t after;
  char *now = tu_read_file(path, &after);
  ck_assert_uint_eq(before, after);
  ck_assert(memcmp(old, now, before) == 0);
  free(old);
  free(now);
  graph_free(g);
}
END_TEST

static Suite *gopg_suite(void) {
  Suite *s = suite_create("gopg");
  TCase *tc = tcase_create("threads");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_threads_generate, 0, (int)(sizeof specs / sizeof *specs));
  tcase_add_test(tc, test_threads_from_coo);
  tcase_add_test(tc, test_rmat_one_chunk_unchanged);
  tcase_add_test(tc, test_threads_env);
  suite_add_tcase(s, tc);
  tc = tcase_create("gopg");
  tcase_add_loop_test(tc, test_gopg_round_trip, 0,
                      (int)(sizeof round_specs / sizeof *round_specs));
  tcase_add_test(tc, test_gopg_refusals);
  tcase_add_test(tc, test_gopg_write_atomic);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run(gopg_suite()); }
