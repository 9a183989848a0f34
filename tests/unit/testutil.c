/* tests/unit/testutil.c: locating data and temporary files for unit
 * tests, and the steps many of them take: a dataset graph read, an op
 * scheduled and lowered, run on the interpreter, its PTX assembled. */
#define _GNU_SOURCE
#include "testutil.h"

#include "interp/interp.h"
#include "lang/lang.h"
#include "passes/passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A few buffers used in turn, so that two paths can appear in one call. */
static char path_bufs[4][4096];
static int path_next;
#define path_buf (path_bufs[path_next])
static void next_buf(void) { path_next = (path_next + 1) % 4; }
static char tmp_dir[256];

static void remove_tmpdir(void) {
  if (tmp_dir[0]) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_dir);
  }
}

const char *tu_dataset(const char *file) {
  next_buf();
  const char *dir = getenv("GOP_DATASETS");
  ck_assert_msg(dir != NULL, "GOP_DATASETS is not set (run through ctest)");
  snprintf(path_buf, sizeof path_buf, "%s/%s", dir, file);
  ck_assert_msg(access(path_buf, R_OK) == 0, "dataset %s is missing", path_buf);
  return path_buf;
}

const char *tu_source(const char *relpath) {
  next_buf();
  const char *dir = getenv("GOP_SOURCE_DIR");
  ck_assert_msg(dir != NULL, "GOP_SOURCE_DIR is not set (run through ctest)");
  snprintf(path_buf, sizeof path_buf, "%s/%s", dir, relpath);
  return path_buf;
}

const char *tu_tmpdir(void) {
  if (!tmp_dir[0]) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/goptest.XXXXXX");
    ck_assert_msg(mkdtemp(tmp_dir) != NULL, "mkdtemp failed");
    atexit(remove_tmpdir);
  }
  return tmp_dir;
}

const char *tu_write(const char *name, const char *text) {
  next_buf();
  snprintf(path_buf, sizeof path_buf, "%s/%s", tu_tmpdir(), name);
  FILE *f = fopen(path_buf, "wb");
  ck_assert_msg(f != NULL, "cannot write %s", path_buf);
  fputs(text, f);
  fclose(f);
  return path_buf;
}

char *tu_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  size_t got;
  while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (cap - n < 2) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  buf[n] = 0;
  if (len) *len = n;
  return buf;
}

int tu_run(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}

int tu_gopc(const char *env, const char *args, char *out, size_t size) {
  const char *bin = getenv("GOP_GOPC");
  ck_assert_msg(bin != NULL, "GOP_GOPC is not set (run through ctest)");
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "cd '%s' && %s '%s' %s 2>&1", tu_tmpdir(), env, bin, args);
  FILE *p = popen(cmd, "r");
  ck_assert(p != NULL);
  size_t n = fread(out, 1, size - 1, p);
  out[n] = 0;
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char *tu_ptxas(void) {
  static char found[1024];
  const char *env = getenv("GOP_PTXAS");
  if (env && *env) return access(env, X_OK) == 0 ? env : NULL;
  if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0)
    return "/usr/local/cuda/bin/ptxas";
  const char *path = getenv("PATH");
  if (!path) return NULL;
  char *copy = strdup(path);
  const char *result = NULL;
  for (char *dir = strtok(copy, ":"); dir; dir = strtok(NULL, ":")) {
    snprintf(found, sizeof found, "%s/ptxas", dir);
    if (access(found, X_OK) == 0) {
      result = found;
      break;
    }
  }
  free(copy);
  return result;
}

uint64_t tu_lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 11;
}

char *tu_assemble(const char *ptx, const char *target, const char *name) {
  const char *ptxas = tu_ptxas();
  if (!ptxas) {
    const char *skip = getenv("GOP_SKIP_PTXAS");
    ck_assert_msg(skip && strcmp(skip, "1") == 0,
                  "ptxas not found ($GOP_PTXAS, /usr/local/cuda/bin/ptxas, PATH): the CUDA "
                  "toolkit is needed to check the PTX; set GOP_SKIP_PTXAS=1 to skip on a "
                  "machine without it");
    fprintf(stderr, "ptxas: not found, %s not assembled (GOP_SKIP_PTXAS=1)\n", name);
    return NULL;
  }
  const char *keep = getenv("GOP_KEEP_PTX");
  char path[512], log[600], cmd[4096];
  snprintf(path, sizeof path, "%s/%s_%s.ptx", keep && *keep ? keep : tu_tmpdir(), name, target);
  snprintf(log, sizeof log, "%s.log", path);
  FILE *f = fopen(path, "w");
  ck_assert_msg(f != NULL, "cannot write %s", path);
  fputs(ptx, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "'%s' -v -arch=%s -o /dev/null '%s' >'%s' 2>&1", ptxas, target,
           path, log);
  int rc = system(cmd);
  char *out = tu_read_file(log, NULL);
  ck_assert_msg(rc == 0, "ptxas -arch=%s failed on %s:\n%s", target, path, out ? out : "");
  return out ? out : strdup("");
}

int tu_count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

Graph *tu_graph(const char *file) {
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = graph_read(tu_dataset(file), &d);
  ck_assert_msg(g != NULL, "%s: %s", file, d.buf ? d.buf : "");
  ir_diag_free(&d);
  return g;
}

bool tu_quick(void) {
  const char *s = getenv("GOP_TEST_QUICK");
  return s && *s && strcmp(s, "0") != 0;
}

IrExtents tu_extents(const IrOp *op, int64_t F) {
  IrExtents ext = {.n = op->nsyms};
  for (int i = 0; i < op->nsyms; i++) ext.value[i] = F;
  return ext;
}

IrOp *tu_lowered(const IrModule *lib, const IrOp *base, const char *sched, Arena *a, Diag *d) {
  ck_assert_ptr_nonnull(base);
  IrOp *op = pass_op_copy(base, a);
  if (!sched) return op;
  if (pass_schedule_text(op, lib, sched, a, d) != 0) return NULL;
  if (pass_lower(op, a, d, NULL, NULL) != 0) return NULL;
  return op;
}

int tu_interp(const IrOp *op, const Graph *g, int64_t F, float **in, float **out, Diag *d) {
  IrExtents ext = tu_extents(op, F);
  void *bufs[16] = {0};
  ck_assert(op->ntensors <= 16);
  for (int i = 0; i < op->ntensors; i++) {
    const IrTensor *t = op->tensors[i];
    if (t->role == IR_ROLE_IN) {
      bufs[i] = in[i];
    } else if (t->role == IR_ROLE_OUT) {
      int64_t n = graph_tensor_numel(t, g, &ext);
      out[i] = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
      bufs[i] = out[i];
    }
  }
  InterpArgs args = {.graph = g, .extents = ext, .mode = INTERP_F32, .buffers = bufs};
  return interp_run(op, &args, d);
}

void tu_ir_refused(const char *text, const char *error) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *m = lang_parse_ir(a, &d, "<test>", text);
  if (m)
    for (int k = 0; k < m->nops; k++) ir_verify_op(m->ops[k], &d, "test");
  ck_assert_msg(d.nerrors > 0 && d.buf && strstr(d.buf, error), "want `%s` for:\n%sgot:\n%s",
                error, text, d.buf ? d.buf : "");
  ir_diag_free(&d);
  ir_arena_free(a);
}

long tu_rss(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, res = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
    fclose(f);
  }
  return res * sysconf(_SC_PAGESIZE);
}

Graph *tu_graph_coo(int64_t nv, int64_t ne, const int64_t *src, const int64_t *dst,
                    const char *name) {
  Diag d;
  ir_diag_init(&d, stderr);
  Graph *g = graph_from_coo(nv, ne, src, dst, name, &d, (Loc){0});
  ck_assert_msg(g != NULL, "%s", d.buf);
  ir_diag_free(&d);
  return g;
}
