/* tests/unit/test_cache.c: the kernel cache under damage, limits and
 * sharing (docs/reliability.md).
 *
 * A damaged or truncated pack in the cache folder is rebuilt, never
 * loaded; the cache keeps at most GOP_CACHE_MAX_KERNELS kernels in memory
 * and GOP_CACHE_MAX_BYTES of packs on disk, dropping the least recently
 * used; the temporaries of writers that died are swept; and two processes
 * that share a cache folder and a tuning database at once lose nothing.
 * No GPU: gop_run_prepare compiles into the cache, which is all it does
 * without one.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gop.h"
#include "tune/tune.h"
#include "testutil.h"

static const char *const schedules[] = {"warp_vertex(1, 1)", "thread_edge(1, 1)",
                                        "warp_edge(1, 1)", "thread_vertex(1, 1)"};
enum { NSCHED = 4 };

static void setup(void) {
  setenv("GOP_CUDA_LIBRARY", "/nonexistent/libcuda.so", 1); /* no GPU here */
  unsetenv("GOP_CACHE_DIR");
  unsetenv("GOP_CACHE_MAX_KERNELS");
  unsetenv("GOP_CACHE_MAX_BYTES");
}

/* A fresh folder under the test's temporary directory. */
static const char *folder(const char *name) {
  static char buf[4][512];
  static int next;
  char *dir = buf[next++ % 4];
  snprintf(dir, 512, "%s/%s", tu_tmpdir(), name);
  mkdir(dir, 0777);
  return dir;
}

/* Prepares u_mul_e_sum with `schedule` (NULL: the default) in `ctx`. */
static GopRun *prepare(GopContext *ctx, const char *schedule) {
  GopGraph *g = gop_graph_open(ctx, "grid:4x3");
  GopOp *op = gop_module_find_op(gop_stdlib(ctx), "u_mul_e_sum");
  ck_assert(g && op);
  GopRun *r = gop_run_new(ctx, op, g);
  ck_assert_ptr_nonnull(r);
  if (schedule)
    ck_assert_int_eq(gop_run_set_compile(r, &(GopCompileOptions){.schedule = schedule}), 0);
  ck_assert_msg(gop_run_prepare(r) == 0, "%s", gop_diagnostics(ctx));
  return r;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

static GopCacheStats stats(GopContext *ctx) {
  GopCacheStats st;
  gop_cache_stats(ctx, &st);
  return st;
}

/* The path of the pack of u_mul_e_sum's default schedule in `dir`. */
static void pack_path(GopContext *ctx, const char *dir, char *out, size_t n) {
  char key[17];
  GopOp *op = gop_module_find_op(gop_stdlib(ctx), "u_mul_e_sum");
  ck_assert_int_eq(gop_kernel_key(op, NULL, key), 0);
  snprintf(out, n, "%s/u_mul_e_sum-%s.gopk", dir, key);
}

static int count_files(const char *dir, const char *with, long long *bytes) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  if (bytes) *bytes = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (!strstr(e->d_name, with)) continue;
    n++;
    char p[1024];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (bytes && stat(p, &st) == 0) *bytes += st.st_size;
  }
  closedir(d);
  return n;
}

/* Fills the cache folder with the default pack, damages it with `damage`,
 * and checks that the next context rebuilds it (compiles, warns, rewrites
 * a whole pack) and the one after reads it again. */
static void check_rebuilt(const char *name, void (*damage)(const char *path)) {
  const char *dir = folder(name);
  GopContext *a = gop_context_new();
  ck_assert_int_eq(gop_set_cache_dir(a, dir), 0);
  prepare(a, NULL);
  ck_assert_int_eq(stats(a).disk_writes, 1);
  char path[1024];
  pack_path(a, dir, path, sizeof path);
  gop_context_free(a);
  damage(path);

  GopContext *b = gop_context_new();
  ck_assert_int_eq(gop_set_cache_dir(b, dir), 0);
  prepare(b, NULL);
  GopCacheStats st = stats(b);
  ck_assert_int_eq(st.disk_hits, 0);
  ck_assert_int_eq(st.compiled, 1);
  ck_assert_int_eq(st.disk_writes, 1);
  ck_assert_msg(strstr(gop_diagnostics(b), "damaged and is rebuilt"), "%s",
                gop_diagnostics(b));
  gop_context_free(b);

  GopContext *c = gop_context_new();
  ck_assert_int_eq(gop_set_cache_dir(c, dir), 0);
  prepare(c, NULL);
  ck_assert_int_eq(stats(c).disk_hits, 1);
  ck_assert_int_eq(stats(c).compiled, 0);
  ck_assert_str_eq(gop_diagnostics(c), "");
  gop_context_free(c);
}

static void flip_ptx_byte(const char *path) {
  size_t n;
  char *text = tu_read_file(path, &n);
  char *entry = strstr(text, ".entry ");
  ck_assert_ptr_nonnull(entry);
  entry[8] ^= 0x20; /* a kernel name's letter changes case: still parses */
  FILE *f = fopen(path, "wb");
  fwrite(text, 1, n, f);
  fclose(f);
  free(text);
}

static void truncate_half(const char *path) {
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_eq(truncate(path, st.st_size / 2), 0);
}

static void truncate_at_end_line(const char *path) {
  struct stat st; /* everything but "end\n": the one cut a length check misses */
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_eq(truncate(path, st.st_size - 4), 0);
}

static void empty(const char *path) { ck_assert_int_eq(truncate(path, 0), 0); }

/* This libgop has LLVM (the tests build with it): it says it can compile,
 * and it does compile (a kernel not in any cache). The Python package
 * makes schedule="auto" its default from this answer. */
START_TEST(can_compile_says_so) {
  ck_assert_int_eq(gop_can_compile(), 1);
  GopContext *ctx = gop_context_new();
  ck_assert_ptr_nonnull(prepare(ctx, NULL));
  ck_assert_int_eq(stats(ctx).compiled, 1);
  gop_context_free(ctx);
}
END_TEST

START_TEST(damaged_pack_is_rebuilt) { check_rebuilt("flipped", flip_ptx_byte); }
END_TEST
START_TEST(truncated_pack_is_rebuilt) {
  check_rebuilt("half", truncate_half);
  check_rebuilt("noend", truncate_at_end_line);
  check_rebuilt("empty", empty);
}
END_TEST

START_TEST(memory_bound_evicts_least_recent) {
  setenv("GOP_CACHE_MAX_KERNELS", "2", 1);
  GopContext *ctx = gop_context_new();
  GopRun *runs[NSCHED];
  for (int i = 0; i < NSCHED; i++) {
    runs[i] = prepare(ctx, schedules[i]);
    ck_assert_int_le(stats(ctx).entries, 2);
  }
  ck_assert_int_eq(stats(ctx).compiled, NSCHED);
  /* the newest two are still in memory; the first was dropped, and its run
   * finds (here: compiles) its kernels again when it next needs them */
  ck_assert_int_eq(gop_run_prepare(runs[NSCHED - 1]), 0);
  ck_assert_int_eq(stats(ctx).compiled, NSCHED);
  ck_assert_int_eq(gop_run_prepare(runs[0]), 0);
  ck_assert_int_eq(stats(ctx).compiled, NSCHED + 1);
  ck_assert_int_eq(stats(ctx).entries, 2);
  /* an unusable limit keeps the default */
  setenv("GOP_CACHE_MAX_KERNELS", "lots", 1);
  GopContext *c2 = gop_context_new();
  for (int i = 0; i < NSCHED; i++) prepare(c2, schedules[i]);
  ck_assert_int_eq(stats(c2).entries, NSCHED);
  gop_context_free(c2);
  gop_context_free(ctx);
}
END_TEST

/* A kernel compiled before the folder was set, or before it was cleared,
 * is written there when next looked up: a folder prepared for a machine
 * without LLVM holds every kernel its runs used, whatever this process
 * compiled earlier. */
START_TEST(memory_kernel_written_to_new_folder) {
  GopContext *ctx = gop_context_new();
  prepare(ctx, schedules[1]); /* memory only */
  const char *dir = folder("later");
  ck_assert_int_eq(gop_set_cache_dir(ctx, dir), 0);
  ck_assert_int_eq(count_files(dir, ".gopk", NULL), 0);
  prepare(ctx, schedules[1]); /* another run: found in memory */
  ck_assert_int_eq(count_files(dir, ".gopk", NULL), 1);
  ck_assert_int_eq(stats(ctx).compiled, 1); /* written, not compiled again */
  ck_assert_int_eq(gop_cache_clear(ctx), 1);
  prepare(ctx, schedules[1]);
  ck_assert_int_eq(count_files(dir, ".gopk", NULL), 1);
  ck_assert_int_eq(stats(ctx).compiled, 1);
  long long writes = stats(ctx).disk_writes;
  prepare(ctx, schedules[1]); /* there already: nothing more */
  ck_assert_int_eq(stats(ctx).disk_writes, writes);
  gop_context_free(ctx);
}
END_TEST

START_TEST(disk_bound_keeps_newest) {
  const char *dir = folder("bounded");
  /* one pack's size first, then a limit of about two and a half */
  GopContext *probe = gop_context_new();
  ck_assert_int_eq(gop_set_cache_dir(probe, dir), 0);
  prepare(probe, schedules[0]);
  long long one;
  ck_assert_int_eq(count_files(dir, ".gopk", &one), 1);
  gop_context_free(probe);
  char limit[32];
  snprintf(limit, sizeof limit, "%lld", one * 5 / 2);
  setenv("GOP_CACHE_MAX_BYTES", limit, 1);
  GopContext *ctx = gop_context_new();
  ck_assert_int_eq(gop_set_cache_dir(ctx, dir), 0);
  for (int i = 1; i < NSCHED; i++) {
    usleep(20000); /* distinct modification times */
    prepare(ctx, schedules[i]);
    long long bytes;
    count_files(dir, ".gopk", &bytes);
    ck_assert_msg(bytes <= one * 5 / 2 + one / 2, "%lld bytes of packs, limit %s", bytes, limit);
  }
  /* the newest pack is there; the oldest (schedule 0) went first */
  GopContext *c2 = gop_context_new();
  ck_assert_int_eq(gop_set_cache_dir(c2, dir), 0);
  prepare(c2, schedules[NSCHED - 1]);
  ck_assert_int_eq(stats(c2).disk_hits, 1);
  prepare(c2, schedules[0]);
  ck_assert_int_eq(stats(c2).compiled, 1);
  gop_context_free(c2);
  gop_context_free(ctx);
}
END_TEST

START_TEST(stale_temporaries_swept) {
  const char *dir = folder("temps");
  char stale[1024], fresh[1024], other[1024];
  snprintf(stale, sizeof stale, "%s/u_mul_e_sum-0123456789abcdef.gopk.tmp.99999.0", dir);
  snprintf(fresh, sizeof fresh, "%s/u_mul_e_sum-0123456789abcdef.gopk.tmp.99998.0", dir);
  snprintf(other, sizeof other, "%s/notes.txt.tmp.1.0", dir);
  write_file(stale, "half a pa");
  write_file(fresh, "being writ");
  write_file(other, "not ours");
  struct timespec old[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
  ck_assert_int_eq(utimensat(AT_FDCWD, stale, old, 0), 0);
  ck_assert_int_eq(utimensat(AT_FDCWD, other, old, 0), 0);
  GopContext *ctx = gop_context_new();
  ck_assert_int_eq(gop_set_cache_dir(ctx, dir), 0);
  prepare(ctx, NULL);
  ck_assert_int_ne(access(stale, F_OK), 0); /* a dead writer's: gone */
  ck_assert_int_eq(access(fresh, F_OK), 0); /* perhaps a live writer's: kept */
  ck_assert_int_eq(access(other, F_OK), 0); /* not gop's: never touched */
  gop_context_free(ctx);
}
END_TEST

/* ---- two processes at once ---- */

enum { ROWS = 200 };

static TuneKey db_key(int64_t F) {
  return (TuneKey){.op_hash = 0x0123456789abcdefULL,
                   .F = F,
                   .dtype = "f32",
                   .graph = {1000, 5000, 5.0, 2.0, 40, 12.5},
                   .gpu = "gop fake GPU 0",
                   .cc = 90,
                   .compiler = GOP_VERSION};
}

/* One of the two processes: compiles every schedule into the shared
 * folder (in its own order) while putting ROWS rows into the shared
 * database, one transaction each. Exits 0 when all went in. */
static int worker(int who, const char *dir, const char *db_path) {
  GopContext *ctx = gop_context_new();
  if (gop_set_cache_dir(ctx, dir) != 0) return 2;
  Diag d;
  ir_diag_init(&d, NULL);
  TuneDb *db = tune_db_open(db_path, &d);
  if (!db) {
    fprintf(stderr, "worker %d: %s", who, d.buf ? d.buf : "");
    return 3;
  }
  for (int i = 0; i < ROWS; i++) {
    if (i % (ROWS / NSCHED) == 0) {
      int s = (i / (ROWS / NSCHED) + who) % NSCHED;
      gop_clear_diagnostics(ctx);
      GopRun *r = gop_run_new(ctx, gop_module_find_op(gop_stdlib(ctx), "u_mul_e_sum"),
                              gop_graph_open(ctx, "grid:4x3"));
      if (!r || gop_run_set_compile(r, &(GopCompileOptions){.schedule = schedules[s]}) != 0 ||
          gop_run_prepare(r) != 0) {
        fprintf(stderr, "worker %d: %s", who, gop_diagnostics(ctx));
        return 4;
      }
    }
    TuneKey k = db_key(who * 100000 + i);
    TuneRecord rec = {.time_ms = 1 + i, .gbps = 1, .bound_fraction = 0.5, .measured_at = 1};
    snprintf(rec.schedule, sizeof rec.schedule, "%s", schedules[i % NSCHED]);
    if (tune_db_put(db, &k, &rec, &d) != 0) {
      fprintf(stderr, "worker %d, row %d: %s", who, i, d.buf ? d.buf : "");
      return 5;
    }
  }
  tune_db_close(db);
  ir_diag_free(&d);
  gop_context_free(ctx);
  return 0;
}

static void count_row(void *ctx, const TuneKey *k, const TuneRecord *r) {
  (void)k, (void)r;
  ++*(int *)ctx;
}

START_TEST(two_processes_share_folder_and_database) {
  const char *dir = folder("shared");
  char db_path[1024];
  snprintf(db_path, sizeof db_path, "%s/tuning.db", folder("db"));
  for (int round = 0; round < 2; round++) { /* the second finds the files there */
    pid_t pid[2];
    for (int w = 0; w < 2; w++) {
      pid[w] = fork();
      ck_assert_int_ge(pid[w], 0);
      if (pid[w] == 0) _exit(worker(w + 2 * round, dir, db_path));
    }
    for (int w = 0; w < 2; w++) {
      int status;
      ck_assert_int_eq(waitpid(pid[w], &status, 0), pid[w]);
      ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                    "round %d worker %d exited with %d", round, w, WEXITSTATUS(status));
    }
  }
  /* every row of every process is there */
  Diag d;
  ir_diag_init(&d, NULL);
  TuneDb *db = tune_db_open(db_path, &d);
  ck_assert_ptr_nonnull(db);
  int rows = 0;
  ck_assert_int_ge(tune_db_list(db, count_row, &rows, &d), 0);
  ck_assert_int_eq(rows, 4 * ROWS);
  tune_db_close(db);
  ir_diag_free(&d);
  /* every pack is whole, and no temporary is left behind */
  ck_assert_int_eq(count_files(dir, ".gopk", NULL), NSCHED);
  ck_assert_int_eq(count_files(dir, ".tmp.", NULL), 0);
  GopContext *ctx = gop_context_new();
  ck_assert_int_eq(gop_set_cache_dir(ctx, dir), 0);
  for (int i = 0; i < NSCHED; i++) prepare(ctx, schedules[i]);
  ck_assert_int_eq(stats(ctx).disk_hits, NSCHED);
  ck_assert_str_eq(gop_diagnostics(ctx), "");
  gop_context_free(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cache");
  TCase *t = tcase_create("cache");
  tcase_add_checked_fixture(t, setup, NULL);
  tcase_set_timeout(t, 600);
  tcase_add_test(t, can_compile_says_so);
  tcase_add_test(t, damaged_pack_is_rebuilt);
  tcase_add_test(t, truncated_pack_is_rebuilt);
  tcase_add_test(t, memory_bound_evicts_least_recent);
  tcase_add_test(t, disk_bound_keeps_newest);
  tcase_add_test(t, memory_kernel_written_to_new_folder);
  tcase_add_test(t, stale_temporaries_swept);
  tcase_add_test(t, two_processes_share_folder_and_database);
  suite_add_tcase(s, t);
  return tu_run(s);
}
