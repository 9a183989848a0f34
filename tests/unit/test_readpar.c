/* tests/unit/test_readpar.c: Matrix Market and SNAP text parsed on several
 * threads (graph/read.c) gives the graph one thread gives, array for array,
 * and the same message for a malformed file, wherever the fault lies: in
 * the first part, a middle one or the last, across a block's end. Small
 * blocks (graph_read_set_block) make a file of a few hundred kilobytes
 * cross many blocks and split into many parts. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "graph/graph.h"
#include "testutil.h"

/* A file of `lines` arcs of a random graph over 5,000 vertices, with
 * comments, blank lines and CRLF endings sprinkled in; Matrix Market
 * (`kind` "general", "symmetric" or "real") or SNAP ("snap"). `bad`, when
 * >= 0, replaces that arc's line with junk. Malloc'ed text. */
static char *make_text(const char *kind, int lines, int bad) {
  size_t cap = (size_t)lines * 40 + 256, n = 0;
  char *s = malloc(cap);
  uint64_t rng = 42;
  bool snap = strcmp(kind, "snap") == 0, real = strcmp(kind, "real") == 0;
  if (snap)
    n += (size_t)snprintf(s + n, cap - n, "# a SNAP list\n\n");
  else
    n += (size_t)snprintf(s + n, cap - n,
                          "%%%%MatrixMarket matrix coordinate %s %s\n%% comment\n5000 5000 %d\n",
                          real ? "real" : "pattern", real ? "general" : kind, lines);
  for (int i = 0; i < lines; i++) {
    int a = (int)(tu_lcg(&rng) % 5000), b = (int)(tu_lcg(&rng) % 5000);
    if (strcmp(kind, "symmetric") == 0 && b > a) { /* the lower triangle */
      int t = a;
      a = b;
      b = t;
    }
    if (i % 997 == 5) n += (size_t)snprintf(s + n, cap - n, snap ? "# note\n" : "%% note\n");
    if (i % 1499 == 7) n += (size_t)snprintf(s + n, cap - n, "   \n");
    const char *end = i % 7 == 3 ? "\r\n" : "\n";
    if (i == bad)
      n += (size_t)snprintf(s + n, cap - n, "%d x%s", a + !snap, end);
    else if (real)
      n += (size_t)snprintf(s + n, cap - n, "%d %d %d.5%s", a + 1, b + 1, i % 10, end);
    else
      n += (size_t)snprintf(s + n, cap - n, "%d %d%s", a + !snap, b + !snap, end);
  }
  if (n && !snap) n--; /* the last line without its newline */
  s[n] = 0;
  return s;
}

static Graph *read_with(const char *path, int threads, size_t block, char *msg, size_t size) {
  char t[16];
  snprintf(t, sizeof t, "%d", threads);
  setenv("GOP_THREADS", t, 1);
  graph_read_set_block(block);
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = graph_read(path, &d);
  snprintf(msg, size, "%s", d.buf ? d.buf : "");
  ir_diag_free(&d);
  graph_read_set_block(0);
  unsetenv("GOP_THREADS");
  return g;
}

static void same_graph(const Graph *a, const Graph *b) {
  ck_assert_int_eq(a->nv, b->nv);
  ck_assert_int_eq(a->ne, b->ne);
  size_t e = (size_t)a->ne, v = (size_t)a->nv + 1;
  ck_assert(memcmp(a->src, b->src, 4 * e) == 0 && memcmp(a->dst, b->dst, 4 * e) == 0);
  ck_assert(memcmp(a->in_ptr, b->in_ptr, 8 * v) == 0 && memcmp(a->in_eid, b->in_eid, 8 * e) == 0);
  ck_assert(memcmp(a->out_ptr, b->out_ptr, 8 * v) == 0);
}

static const char *kinds[] = {"general", "symmetric", "real", "snap"};

/* The same graph at 1, 2, 3 and 7 threads, with blocks of 4 KiB (dozens of
 * blocks, a line cut at most block ends) and the default (one block). */
START_TEST(same_graph_any_threads) {
  const char *kind = kinds[_i];
  char *text = make_text(kind, 20000, -1);
  char name[32];
  snprintf(name, sizeof name, "%s.txt", kind);
  char *path = strdup(tu_write(name, text));
  char msg[512];
  Graph *one = read_with(path, 1, 0, msg, sizeof msg);
  ck_assert_msg(one != NULL, "%s", msg);
  ck_assert_int_eq(one->ne, strcmp(kind, "symmetric") == 0 ? one->ne : 20000);
  const int threads[] = {2, 3, 7};
  const size_t blocks[] = {4096, 0};
  for (int t = 0; t < 3; t++)
    for (int b = 0; b < 2; b++) {
      Graph *g = read_with(path, threads[t], blocks[b], msg, sizeof msg);
      ck_assert_msg(g != NULL, "%s at %d threads: %s", kind, threads[t], msg);
      /* parsed in parallel, not given back to the serial read: 4 KiB
       * blocks of 512-byte parts, or one block of the whole file */
      ck_assert_msg(graph_read_parts() >= (blocks[b] ? 50 : 1), "%s at %d threads: %lld parts",
                    kind, threads[t], (long long)graph_read_parts());
      same_graph(one, g);
      graph_free(g);
    }
  graph_free(one);
  free(path);
  free(text);
}
END_TEST

/* A gzip'ed file: inflated serially, parsed in parallel, the same graph. */
START_TEST(gzip) {
  char *text = make_text("general", 20000, -1);
  char *path = strdup(tu_write("arcs.mtx.gz", ""));
  gzFile f = gzopen(path, "wb");
  ck_assert(f != NULL);
  ck_assert_int_eq(gzwrite(f, text, (unsigned)strlen(text)), (int)strlen(text));
  gzclose(f);
  char msg[512];
  Graph *one = read_with(path, 1, 0, msg, sizeof msg);
  ck_assert_int_eq(graph_read_parts(), 0);
  Graph *four = read_with(path, 4, 4096, msg, sizeof msg);
  ck_assert_msg(one && four, "%s", msg);
  ck_assert_int_ge(graph_read_parts(), 50);
  same_graph(one, four);
  graph_free(one);
  graph_free(four);
  free(path);
  free(text);
}
END_TEST

/* A bad line in the first, a middle or the last part, in each format: the
 * message of the serial read, with its line number. */
START_TEST(same_message) {
  const int bads[] = {0, 9000, 19999};
  for (int k = 0; k < 4; k++)
    for (int i = 0; i < 3; i++) {
      char *text = make_text(kinds[k], 20000, bads[i]);
      char *path = strdup(tu_write("bad.txt", text));
      char serial[512], par[512];
      ck_assert_ptr_null(read_with(path, 1, 0, serial, sizeof serial));
      ck_assert_ptr_null(read_with(path, 4, 4096, par, sizeof par));
      ck_assert_str_eq(par, serial);
      ck_assert_msg(strstr(serial, ": error: expected "), "%s", serial);
      free(path);
      free(text);
    }
  /* too few and too many entries */
  char *text = make_text("general", 3000, -1);
  char *cut = strdup(text);
  cut[strlen(cut) / 2] = 0;
  cut[strrchr(cut, '\n') - cut] = 0;
  const char *variants[] = {cut, NULL};
  char more[128 * 1024];
  snprintf(more, sizeof more, "%s\n1 1\n", text);
  variants[1] = more;
  for (int i = 0; i < 2; i++) {
    char *path = strdup(tu_write("count.mtx", variants[i]));
    char serial[512], par[512];
    ck_assert_ptr_null(read_with(path, 1, 0, serial, sizeof serial));
    ck_assert_ptr_null(read_with(path, 3, 4096, par, sizeof par));
    ck_assert_str_eq(par, serial);
    ck_assert_msg(strstr(serial, i ? "more entries than" : "file ends after"), "%s", serial);
    free(path);
  }
  free(cut);
  free(text);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("readpar");
  TCase *tc = tcase_create("readpar");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, same_graph_any_threads, 0, 4);
  tcase_add_test(tc, gzip);
  tcase_add_test(tc, same_message);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run(suite()); }
