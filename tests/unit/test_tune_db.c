/* tests/unit/test_tune_db.c: the tuning database (tune/db.c).
 *
 * A round trip and a reopen; the files it must refuse and leave byte for
 * byte as they were (random bytes, another application's SQLite file, a
 * newer schema); and a writer killed in the middle of a transaction, after
 * which the file still opens and holds whole rows only.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tune/tune.h"
#include "testutil.h"

static Diag diag;

static void setup(void) { ir_diag_init(&diag, NULL); }
static void teardown(void) { ir_diag_free(&diag); }

static const char *tmp_path(const char *name) {
  static char buf[4][512];
  static int next;
  next = (next + 1) % 4;
  snprintf(buf[next], sizeof buf[next], "%s/%s", tu_tmpdir(), name);
  unlink(buf[next]);
  return buf[next];
}

static TuneKey key(int64_t F) {
  return (TuneKey){.op_hash = 0xfedcba9876543210ULL,
                   .F = F,
                   .dtype = "f32",
                   .graph = {325557, 3128710, 9.61, 60.25, 18234, 1234.5},
                   .gpu = "NVIDIA H100 80GB HBM3",
                   .cc = 90,
                   .compiler = "0.1.0"};
}

static TuneRecord record(const char *sched, double ms) {
  TuneRecord r = {.time_ms = ms, .gbps = 100 / ms, .bound_fraction = 0.01 / ms,
                  .measured_at = 1795000000};
  snprintf(r.schedule, sizeof r.schedule, "%s", sched);
  return r;
}

#define ASSERT_DIAG_HAS(s) \
  ck_assert_msg(diag.buf && strstr(diag.buf, (s)), "expected '%s' in: %s", (s), diag.buf)

static void count_fn(void *ctx, const TuneKey *k, const TuneRecord *r) {
  (void)k;
  (void)r;
  ++*(int *)ctx;
}

START_TEST(round_trip_and_reopen) {
  const char *path = tmp_path("t.db");
  TuneDb *db = tune_db_open(path, &diag);
  ck_assert_ptr_nonnull(db);
  TuneKey k = key(64);
  TuneRecord r = record("warp_edge(4, 2)", 1.5), best;
  ck_assert_int_eq(tune_db_get_best(db, &k, &best, &diag), 0);
  ck_assert_int_eq(tune_db_put(db, &k, &r, &diag), 0);
  r = record("gar()", 0.75);
  ck_assert_int_eq(tune_db_put(db, &k, &r, &diag), 0);
  TuneKey k2 = key(128);
  r = record("thread_edge(2, 8)", 0.25);
  ck_assert_int_eq(tune_db_put(db, &k2, &r, &diag), 0);
  tune_db_close(db);

  db = tune_db_open(path, &diag);
  ck_assert_ptr_nonnull(db);
  ck_assert_int_eq(tune_db_get_best(db, &k, &best, &diag), 1);
  ck_assert_str_eq(best.schedule, "gar()");
  ck_assert(best.time_ms == 0.75 && best.gbps == 100 / 0.75);
  ck_assert_int_eq(best.measured_at, 1795000000);
  /* Exact match: another GPU, compiler or graph finds nothing. */
  TuneKey other = k;
  other.cc = 80;
  ck_assert_int_eq(tune_db_get_best(db, &other, &best, &diag), 0);
  other = k;
  other.graph.deg_std += 1e-9;
  ck_assert_int_eq(tune_db_get_best(db, &other, &best, &diag), 0);
  int n = 0;
  ck_assert_int_eq(tune_db_list(db, count_fn, &n, &diag), 3);
  ck_assert_int_eq(n, 3);
  tune_db_close(db);

  /* The file says what it is. */
  sqlite3 *s;
  ck_assert_int_eq(sqlite3_open_v2(path, &s, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_stmt *st;
  ck_assert_int_eq(sqlite3_prepare_v2(s, "PRAGMA application_id", -1, &st, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
  ck_assert_int_eq(sqlite3_column_int(st, 0), TUNE_DB_APPLICATION_ID);
  sqlite3_finalize(st);
  ck_assert_int_eq(sqlite3_prepare_v2(s, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
  ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "wal");
  sqlite3_finalize(st);
  sqlite3_close(s);
  ck_assert_int_eq(diag.nerrors, 0);
}
END_TEST

/* The vertex orders gopc tune --orders measured: each order's fastest
 * row, fastest order first, under exactly its key; `max` bounds what is
 * filled, not what is counted; kept across a reopen. */
START_TEST(orders_round_trip) {
  const char *path = tmp_path("orders.db");
  TuneDb *db = tune_db_open(path, &diag);
  ck_assert_ptr_nonnull(db);
  TuneKey k = key(64);
  TuneOrder rows[] = {{"none", "gar()", 2.0}, {"rcm", "warp_edge(4, 2)", 1.5},
                      {"community", "gar()", 1.8}, {"rcm", "gas()", 1.2}};
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
    ck_assert_int_eq(tune_db_put_order(db, &k, &rows[i], &diag), 0);
  tune_db_close(db);
  db = tune_db_open(path, &diag);
  TuneOrder got[4];
  ck_assert_int_eq(tune_db_orders(db, &k, got, 4, &diag), 3);
  ck_assert_str_eq(got[0].order, "rcm");
  ck_assert_str_eq(got[0].schedule, "gas()");
  ck_assert(got[0].time_ms == 1.2);
  ck_assert_str_eq(got[1].order, "community");
  ck_assert_str_eq(got[2].order, "none");
  ck_assert(got[2].time_ms == 2.0);
  memset(got, 0, sizeof got);
  ck_assert_int_eq(tune_db_orders(db, &k, got, 1, &diag), 3);
  ck_assert_str_eq(got[0].order, "rcm");
  ck_assert_str_eq(got[1].order, "");
  TuneKey other = key(128);
  ck_assert_int_eq(tune_db_orders(db, &other, got, 4, &diag), 0);
  /* the measurements' table is another one */
  TuneRecord best;
  ck_assert_int_eq(tune_db_get_best(db, &k, &best, &diag), 0);
  tune_db_close(db);
  ck_assert_int_eq(diag.nerrors, 0);
}
END_TEST

/* Asserts that opening `path` fails with `msg` and leaves it as it was. */
static void refused_unchanged(const char *path, const char *msg) {
  size_t before_len, after_len;
  char *before = tu_read_file(path, &before_len);
  ck_assert_ptr_nonnull(before);
  ck_assert_ptr_null(tune_db_open(path, &diag));
  ASSERT_DIAG_HAS(msg);
  ASSERT_DIAG_HAS(path);
  char *after = tu_read_file(path, &after_len);
  ck_assert_uint_eq(before_len, after_len);
  ck_assert(memcmp(before, after, before_len) == 0);
  free(before);
  free(after);
}

START_TEST(corrupt_file_refused) {
  const char *path = tmp_path("random.db");
  FILE *f = fopen(path, "wb");
  srand(7);
  for (int i = 0; i < 8192; i++) fputc(rand() & 0xff, f);
  fclose(f);
  refused_unchanged(path, "file is not a database");
  /* SQLite's magic, then garbage: SQLite itself finds it corrupt. */
  path = tmp_path("badpage.db");
  f = fopen(path, "wb");
  fwrite("SQLite format 3", 1, 16, f);
  for (int i = 0; i < 8192; i++) fputc(rand() & 0xff, f);
  fclose(f);
  refused_unchanged(path, "left unchanged");
  /* a 50-byte header SQLite refuses as an unsupported file format (found
   * by tests/fuzz/fuzz_tunedb, which it held for two seconds of retries
   * meant for a file being created) */
  static const unsigned char header[50] = {
      'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f', 'o', 'r', 'm', 'a', 't', ' ', '3', 0,
      0x10, 0x00, 0x01, 0x01, 0x00, 0x40, 0x20, 0x20, 0, 0, 0, 4, 0, 0, 0, 5,
      0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 4, 0, 0x2e, 0x63, 0x01};
  path = tmp_path("format.db");
  f = fopen(path, "wb");
  fwrite(header, 1, sizeof header, f);
  fclose(f);
  refused_unchanged(path, "unsupported file format");
}
END_TEST

static void make_sqlite(const char *path, const char *sql) {
  sqlite3 *s;
  ck_assert_int_eq(sqlite3_open(path, &s), SQLITE_OK);
  ck_assert_int_eq(sqlite3_exec(s, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(s);
}

START_TEST(foreign_file_refused) {
  const char *path = tmp_path("other.db");
  make_sqlite(path, "PRAGMA application_id = 1234; CREATE TABLE notes (t TEXT);"
                    "INSERT INTO notes VALUES ('mine')");
  refused_unchanged(path, "another application");
  /* No application_id at all, but tables: still someone else's. */
  path = tmp_path("plain.db");
  make_sqlite(path, "CREATE TABLE notes (t TEXT)");
  refused_unchanged(path, "another application");
}
END_TEST

START_TEST(newer_schema_refused) {
  const char *path = tmp_path("new.db");
  TuneDb *db = tune_db_open(path, &diag);
  ck_assert_ptr_nonnull(db);
  tune_db_close(db);
  char sql[128];
  snprintf(sql, sizeof sql, "PRAGMA journal_mode = DELETE; PRAGMA user_version = %d",
           tune_db_schema_version() + 1);
  make_sqlite(path, sql);
  refused_unchanged(path, "newer than this gop's");
}
END_TEST

/* A negative schema version (found by tests/fuzz/fuzz_tunedb: it indexed
 * the migrations before their start) is refused, the file unchanged. */
START_TEST(negative_schema_refused) {
  const char *path = tmp_path("negative.db");
  TuneDb *db = tune_db_open(path, &diag);
  ck_assert_ptr_nonnull(db);
  tune_db_close(db);
  make_sqlite(path, "PRAGMA journal_mode = DELETE; PRAGMA user_version = -1728053245");
  refused_unchanged(path, "schema version -1728053245 is not one gop writes");
}
END_TEST

/* Counts rows with lowered facts and a known operator shape, checking
 * what the one written in older_schema_migrated holds. */
static void count_facts(void *ctx, const TuneKey *k, const TuneRecord *r) {
  if (!r->have_facts) return; /* the old row */
  ck_assert_ptr_nonnull(k->shape);
  ck_assert_str_eq(k->op_name, "copy_u_sum");
  ck_assert_int_eq(k->shape->edge_red_rows, 1);
  ck_assert(k->shape->feature_loop);
  ck_assert_int_eq(r->atomic_rows, 1);
  ck_assert(r->warp && !r->vertex);
  ++*(int *)ctx;
}

START_TEST(older_schema_migrated) {
  /* A version-1 file (the table as it was first written, no index, no
   * operator shapes or point facts) is brought up, its row kept. */
  const char *path = tmp_path("old.db");
  TuneKey k = key(32);
  char sql[2048];
  snprintf(sql, sizeof sql,
           "CREATE TABLE tuning (id INTEGER PRIMARY KEY, op_hash TEXT NOT NULL,"
           " F INTEGER NOT NULL, dtype TEXT NOT NULL, nv INTEGER NOT NULL,"
           " ne INTEGER NOT NULL, deg_mean REAL NOT NULL, deg_std REAL NOT NULL,"
           " deg_max INTEGER NOT NULL, aes REAL NOT NULL, gpu TEXT NOT NULL,"
           " cc INTEGER NOT NULL, compiler TEXT NOT NULL, schedule TEXT NOT NULL,"
           " time_ms REAL NOT NULL, gbps REAL NOT NULL, bound_fraction REAL NOT NULL,"
           " measured_at INTEGER NOT NULL);"
           "INSERT INTO tuning VALUES (1, 'fedcba9876543210', 32, 'f32', %lld, %lld, %.17g,"
           " %.17g, %lld, %.17g, '%s', %d, '%s', 'gas()', 2.0, 50, 0.005, 1795000000);"
           "PRAGMA application_id = %d; PRAGMA user_version = 1",
           (long long)k.graph.nv, (long long)k.graph.ne, k.graph.deg_mean, k.graph.deg_std,
           (long long)k.graph.deg_max, k.graph.aes, k.gpu, k.cc, k.compiler,
           TUNE_DB_APPLICATION_ID);
  make_sqlite(path, sql);
  TuneDb *db = tune_db_open(path, &diag);
  ck_assert_msg(db != NULL, "%s", diag.buf);
  TuneRecord best;
  ck_assert_int_eq(tune_db_get_best(db, &k, &best, &diag), 1);
  ck_assert_str_eq(best.schedule, "gas()");
  /* The old row has no facts; a new one has them, with its operator. */
  int seen = 0;
  ck_assert_int_eq(tune_db_list(db, count_facts, &seen, &diag), 1);
  ck_assert_int_eq(seen, 0);
  TuneOpShape shape = {.edge_rows = 1, .edge_red_rows = 1, .feature_loop = true};
  k.shape = &shape;
  k.op_name = "copy_u_sum";
  TuneRecord r = record("warp_edge(1, 1)", 1.0);
  r.have_facts = true;
  r.atomic_rows = 1;
  r.kernels = 1;
  r.warp = true;
  ck_assert_int_eq(tune_db_put(db, &k, &r, &diag), 0);
  ck_assert_int_eq(tune_db_list(db, count_facts, &seen, &diag), 2);
  ck_assert_int_eq(seen, 1);
  /* and the vertex orders' table, empty */
  TuneOrder o;
  ck_assert_int_eq(tune_db_orders(db, &k, &o, 1, &diag), 0);
  tune_db_close(db);
  sqlite3 *s;
  sqlite3_open(path, &s);
  sqlite3_stmt *st;
  sqlite3_prepare_v2(s, "SELECT count(*) FROM sqlite_master WHERE name = 'tuning_key'", -1,
                     &st, NULL);
  ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
  ck_assert_int_eq(sqlite3_column_int(st, 0), 1);
  sqlite3_finalize(st);
  sqlite3_close(s);
}
END_TEST

/* Every row must be whole: the test writes time_ms = i and gbps = 2i. */
static void check_whole(void *ctx, const TuneKey *k, const TuneRecord *r) {
  int *bad = ctx;
  char want[64];
  snprintf(want, sizeof want, "warp_edge(%d, 1)", (int)r->time_ms);
  if (r->gbps != 2 * r->time_ms || strcmp(r->schedule, want) != 0 || k->cc != 90 ||
      strcmp(k->gpu, "NVIDIA H100 80GB HBM3") != 0)
    (*bad)++;
}

START_TEST(killed_writer_leaves_whole_rows) {
  const char *path = tmp_path("killed.db");
  TuneDb *db = tune_db_open(path, &diag);
  ck_assert_ptr_nonnull(db);
  tune_db_close(db);

  /* 1. Killed between BEGIN and COMMIT, for certain: the child inserts a
   * row in an open transaction, tells the parent, and waits to die. */
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    sqlite3 *s;
    sqlite3_open(path, &s);
    sqlite3_exec(s, "BEGIN IMMEDIATE; INSERT INTO tuning (op_hash, F, dtype, nv, ne, deg_mean,"
                    " deg_std, deg_max, aes, gpu, cc, compiler, schedule, time_ms, gbps,"
                    " bound_fraction, measured_at) VALUES ('0', 1, 'f32', 1, 1, 1, 1, 1, 1,"
                    " 'x', 1, 'x', 'half', 1, 1, 1, 1)",
                 NULL, NULL, NULL);
    if (write(fds[1], "x", 1) != 1) _exit(1);
    for (;;) pause();
  }
  char c;
  ck_assert_int_eq(read(fds[0], &c, 1), 1);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);

  /* 2. Killed at a random point of a stream of puts. */
  pid = fork();
  if (pid == 0) {
    Diag d;
    ir_diag_init(&d, NULL);
    TuneDb *w = tune_db_open(path, &d);
    TuneKey k = key(64);
    for (int i = 1; w; i++) {
      TuneRecord r = record("", i);
      snprintf(r.schedule, sizeof r.schedule, "warp_edge(%d, 1)", i);
      r.gbps = 2.0 * i;
      if (tune_db_put(w, &k, &r, &d) != 0) _exit(1);
      if (i == 20 && write(fds[1], "x", 1) != 1) _exit(1);
    }
    _exit(1);
  }
  ck_assert_int_eq(read(fds[0], &c, 1), 1);
  usleep(20000);
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  ck_assert(WIFSIGNALED(status));
  close(fds[0]);
  close(fds[1]);

  db = tune_db_open(path, &diag);
  ck_assert_msg(db != NULL, "%s", diag.buf);
  int bad = 0;
  int n = tune_db_list(db, check_whole, &bad, &diag);
  ck_assert_int_ge(n, 20);
  ck_assert_int_eq(bad, 0);
  tune_db_close(db);
  sqlite3 *s;
  sqlite3_open(path, &s);
  sqlite3_stmt *st;
  sqlite3_prepare_v2(s, "PRAGMA integrity_check", -1, &st, NULL);
  ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
  ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
  sqlite3_finalize(st);
  sqlite3_close(s);
}
END_TEST

int main(void) {
  Suite *s = suite_create("tune_db");
  TCase *tc = tcase_create("tune_db");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, round_trip_and_reopen);
  tcase_add_test(tc, corrupt_file_refused);
  tcase_add_test(tc, foreign_file_refused);
  tcase_add_test(tc, newer_schema_refused);
  tcase_add_test(tc, negative_schema_refused);
  tcase_add_test(tc, older_schema_migrated);
  tcase_add_test(tc, orders_round_trip);
  tcase_add_test(tc, killed_writer_leaves_whole_rows);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
