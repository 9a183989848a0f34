/* tests/gpu/cases.c: see cases.h. */
#define _GNU_SOURCE
#include "tests/gpu/cases.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lang/lang.h"

int case_list_read(const char *dir, Case **out) {
  char path[4096];
  snprintf(path, sizeof path, "%s/list.txt", dir);
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    return -1;
  }
  int n = 0, cap = 64;
  Case *cases = calloc((size_t)cap, sizeof *cases);
  char line[2048];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    char *op = strtok(line, "\t"), *sched = strtok(NULL, "\t"), *file = strtok(NULL, "\t");
    if (!op || !sched || !file || strcmp(file, "REFUSED") == 0) continue;
    if (n == cap) cases = realloc(cases, sizeof *cases * (size_t)(cap *= 2));
    Case *c = &cases[n++];
    memset(c, 0, sizeof *c);
    snprintf(c->op, sizeof c->op, "%s", op);
    snprintf(c->sched, sizeof c->sched, "%s", sched);
    snprintf(c->file, sizeof c->file, "%s/%s", dir, file);
  }
  fclose(f);
  *out = cases;
  return n;
}

int case_load(Case *c, Arena *a, Diag *d) {
  if (cg_pack_read(c->file, &c->prog, d) != 0) return -1;
  IrModule *m = lang_parse_ir(a, d, c->file, c->prog.ir);
  if (!m || m->nops != 1) return -1;
  c->ir = m->ops[0];
  return 0;
}

void case_extents(const IrOp *op, int64_t F, IrExtents *ext) {
  memset(ext, 0, sizeof *ext);
  ext->n = op->nsyms;
  bool heads = false;
  for (int i = 0; i < op->nsyms; i++) heads |= strcmp(op->syms[i]->name, "H") == 0;
  /* Heads: 4 of them, as in GAT, of F / 4 features each, so that a row is
   * F wide like every other operator's at width F. */
  int64_t per_head = heads ? (F / 4 > 0 ? F / 4 : 1) : F;
  for (int i = 0; i < op->nsyms; i++)
    ext->value[i] = strcmp(op->syms[i]->name, "H") == 0 ? 4 : per_head;
}

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static float **buffers(const IrOp *op, const Graph *g, int64_t F, float *const *inputs,
                       uint64_t seed) {
  IrExtents ext;
  case_extents(op, F, &ext);
  float **buf = calloc((size_t)op->ntensors + 1, sizeof *buf);
  for (int i = 0; i < op->ntensors; i++) {
    IrRole role = op->tensors[i]->role;
    if (role == IR_ROLE_TEMP) continue;
    if (role == IR_ROLE_IN && inputs) {
      buf[i] = inputs[i];
      continue;
    }
    int64_t n = graph_tensor_numel(op->tensors[i], g, &ext);
    buf[i] = malloc(sizeof(float) * (size_t)(n ? n : 1));
    if (role == IR_ROLE_IN)
      for (int64_t k = 0; k < n; k++)
        buf[i][k] = (float)((double)(splitmix(&seed) >> 11) * 0x1.0p-53 * 2 - 1);
  }
  return buf;
}

float **case_buffers_new(const IrOp *op, const Graph *g, int64_t F, uint64_t seed) {
  return buffers(op, g, F, NULL, seed);
}

float **case_outputs_new(const IrOp *op, const Graph *g, int64_t F, float *const *inputs) {
  return buffers(op, g, F, inputs, 0);
}

void case_buffers_free(const IrOp *op, float **buf) {
  for (int i = 0; buf && i < op->ntensors; i++) free(buf[i]);
  free(buf);
}

void case_outputs_free(const IrOp *op, float **buf) {
  for (int i = 0; buf && i < op->ntensors; i++)
    if (op->tensors[i]->role == IR_ROLE_OUT) free(buf[i]);
  free(buf);
}

int case_interpret(const IrOp *op, const Graph *g, int64_t F, float **buf, char *err,
                   size_t n) {
  IrExtents ext;
  case_extents(op, F, &ext);
  Diag d;
  ir_diag_init(&d, NULL);
  InterpArgs args = {.graph = g, .extents = ext, .mode = INTERP_F32,
                       .buffers = (void **)buf};
  int ok = interp_run(op, &args, &d) == 0;
  if (!ok) snprintf(err, n, "%s", d.buf ? d.buf : "interpreter failed");
  ir_diag_free(&d);
  return ok ? 0 : -1;
}

/* Whether `t` is written by a max or min reduction (compared exactly). */
static bool is_exact(const IrNode *list, const IrTensor *t) {
  for (const IrNode *n = list; n; n = n->next) {
    if (n->kind == IR_STORE && n->acc.tensor == t &&
        (n->acc.red == IR_RED_MAX || n->acc.red == IR_RED_MIN))
      return true;
    const IrNode *inner = n->kind == IR_LOOP ? n->loop.body : n->kind == IR_IF ? n->ifs.then : NULL;
    if (inner && is_exact(inner, t)) return true;
  }
  return false;
}

/* One slice of an output, compared on its own thread. */
typedef struct Slice {
  const float *got, *want;
  int64_t lo, hi;
  bool exact;
  double d2, r2;
  int64_t bad; /* the first index that fails outright, or -1 */
} Slice;

static void *compare_slice(void *arg) {
  Slice *s = arg;
  double d2 = 0, r2 = 0;
  for (int64_t k = s->lo; k < s->hi; k++) {
    double a = s->got[k], b = s->want[k];
    if (isnan(a) || isnan(b) || (s->exact && a != b)) {
      s->bad = k;
      break;
    }
    d2 += (a - b) * (a - b);
    r2 += b * b;
  }
  s->d2 = d2;
  s->r2 = r2;
  return NULL;
}

bool case_compare(const IrOp *op, const Graph *g, int64_t F, float *const *want,
                  float *const *got, double *rel_out, char *why, size_t n) {
  IrExtents ext;
  case_extents(op, F, &ext);
  *rel_out = 0;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int nth = ncpu < 1 ? 1 : ncpu > 32 ? 32 : (int)ncpu;
  for (int i = 0; i < op->ntensors; i++) {
    const IrTensor *t = op->tensors[i];
    if (t->role != IR_ROLE_OUT) continue;
    int64_t numel = graph_tensor_numel(t, g, &ext);
    /* Outputs of |E| x F floats run to gigabytes: compare on every core. */
    int parts = numel < (1 << 20) ? 1 : nth;
    Slice sl[32];
    pthread_t th[32];
    bool started[32];
    for (int p = 0; p < parts; p++) {
      sl[p] = (Slice){.got = got[i], .want = want[i], .lo = numel * p / parts,
                      .hi = numel * (p + 1) / parts, .exact = is_exact(op->body, t), .bad = -1};
      started[p] = parts > 1 && pthread_create(&th[p], NULL, compare_slice, &sl[p]) == 0;
      if (!started[p]) compare_slice(&sl[p]);
    }
    double d2 = 0, r2 = 0;
    int64_t bad = -1;
    for (int p = 0; p < parts; p++) {
      if (started[p]) pthread_join(th[p], NULL);
      d2 += sl[p].d2;
      r2 += sl[p].r2;
      if (bad < 0 && sl[p].bad >= 0) bad = sl[p].bad;
    }
    if (bad >= 0) {
      snprintf(why, n, "%s[%lld]: got %.9g, want %.9g", t->name, (long long)bad,
               (double)got[i][bad], (double)want[i][bad]);
      return false;
    }
    double rel = r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
    if (rel > *rel_out) *rel_out = rel;
    if (rel >= 1e-5) {
      snprintf(why, n, "%s: relative L2 %.3g >= 1e-5", t->name, rel);
      return false;
    }
  }
  return true;
}
