/* tests/gpu/suite.c: every stdlib operator x every named schedule on the GPU,
 * checked against the reference interpreter, and timed.
 *
 *   suite prepare PACKDIR [--all]   (here, with LLVM) compiles the
 *       representative stdlib operators (docs/operators.md; --all: every
 *       one of them) under every named schedule and parameter setting into
 *       kernel packs, and lists them in PACKDIR/list.txt together with the
 *       combinations the scheduler refused and why
 *   suite run PACKDIR GRAPH... [--F "16 32 64"] [--reps N] [--csv FILE]
 *             [--budget-s S] [--skip-passed CSV]... [--no-poison]
 *       (on the GPU machine, no LLVM needed) runs each pack on each graph
 *       and width, compares every output with the interpreter, and prints
 *       one line per case and a summary. With a time budget it stops
 *       starting cases once the budget is spent and counts the rest as not
 *       run (a device call has a hard limit: better an honest count than a
 *       killed run). Cases slower than 50 ms are timed with one repeat.
 *       --skip-passed skips the cases a CSV of an earlier run lists as
 *       passed, and the references only they needed: a matrix larger than
 *       one device call is run over several.
 *       --no-poison: for compute-sanitizer's initcheck. A checked run
 *       normally fills what the kernels write whole (outputs of plain
 *       stores, and the tensors an op fills itself: `filled` in a pack)
 *       with NaN before it, so that an element no stage writes shows
 *       as NaN; initcheck would see those tensors written. With
 *       --no-poison neither the runtime nor the runner writes them: they
 *       stay as allocated, and only reduction targets get their identity
 *       from the runtime (a cuMemsetD32 every run makes, not a finding).
 *       Each pack is launched once (no timed runs, no second run of a
 *       deterministic schedule), and its outputs are still compared with
 *       the interpreter: an element left unwritten is an initcheck report
 *       when a later stage reads it, else at best a wrong output (the
 *       memory's old contents; the poisoned runs make it NaN).
 *
 * The interpreter is the slow part on large graphs, so its results are
 * computed once per (graph, operator, width) and shared by every schedule,
 * on all CPU cores at once.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "gop.h"
#include "lang/lang.h"
#include "graph/graph.h"
#include "runtime/runtime.h"
#include "tests/gpu/cases.h"

/* ---- prepare: compile every operator x schedule x setting to packs ---- */

/* Parameter settings tried for each named schedule: the first argument
 * list that fits its arity, and variants that do not divide degrees or
 * widths evenly. */
static const char *settings_for(int nparams, int i) {
  static const char *two[] = {"1, 1", "2, 2", "4, 3", NULL};
  static const char *three[] = {"4, 1, 4", "8, 2, 8", "3, 4, 2", NULL};
  static const char *one[] = {"1", "4", "3", NULL};
  static const char *zero[] = {"", NULL};
  const char **list = nparams == 0 ? zero : nparams == 1 ? one : nparams == 2 ? two : three;
  return list[i];
}

/* stdlib/schedules_gnnadvisor.gop: neighbour groups of G with T lanes on
 * features (near a warp's 32, and not dividing F), then the distance of
 * the interleaving or the warps per block of the shared accumulator. */
static const char *gnnadvisor_settings(int nparams, int i) {
  static const char *two[] = {"4, 32", "3, 16", "16, 5", NULL};
  static const char *three[] = {"4, 32, 4", "3, 16, 8", "16, 5, 2", NULL};
  return nparams == 2 ? two[i] : nparams == 3 ? three[i] : NULL;
}

static int prepare(const char *dir, bool all) {
  mkdir(dir, 0755);
  char path[4096];
  snprintf(path, sizeof path, "%s/list.txt", dir);
  FILE *list = fopen(path, "w");
  if (!list) {
    perror(path);
    return 1;
  }
  GopContext *ctx = gop_context_new();
  GopModule *lib = gop_stdlib(ctx);
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *m = lang_stdlib(a, &d); /* the schedules' names and arities */
  if (!lib || !m) {
    fputs(gop_diagnostics(ctx), stderr);
    return 1;
  }
  int packs = 0, refused = 0;
  for (int i = 0; i < gop_module_num_ops(lib); i++) {
    GopOp *op = gop_module_op(lib, i);
    if (!all && !gop_op_representative(op)) continue; /* docs/operators.md: the subset */
    /* Neighbour-group schedules also run under deterministic(), where
     * they lower to a segmented reduction (passes/segment.c); the others
     * either have no atomics to forbid or are refused by it, as is the
     * shared accumulator's flush. gnnadvisor also runs with its groups
     * interleaved in four classes (MGG's interleave beyond heavy/light). */
    for (int s = -1; s < m->nscheds; s++) {
      const char *name = s >= 0 ? m->scheds[s]->name : "default";
      bool groups = strncmp(name, "gnnadvisor", 10) == 0;
      for (int k = 0;; k++) {
        char sched[256];
        int variant = groups ? k / 3 : 0; /* 0 as named, 1 deterministic, 2 four classes */
        if (variant == 1 && strstr(name, "shared")) continue; /* refused */
        if (variant == 2 && strcmp(name, "gnnadvisor") != 0) continue;
        if (s < 0) {
          if (k > 0) break;
          snprintf(sched, sizeof sched, "default");
        } else {
          /* spmm_teams(G, T), spmm_teams8, spmm_tiles: teams of 4, 8 and 16 lanes (T
           * must be a power of two), G not dividing the degrees */
          static const char *teams[] = {"5, 4", "7, 8", "3, 16", NULL};
          bool team = strncmp(name, "spmm_teams", 10) == 0 || strcmp(name, "spmm_tiles") == 0;
          const char *args = team ? teams[k < 3 ? k : 3]
                             : !groups ? settings_for(m->scheds[s]->nparams, k)
                             : variant <= 2 ? gnnadvisor_settings(m->scheds[s]->nparams, k % 3)
                                            : NULL;
          if (!args) break;
          snprintf(sched, sizeof sched, "%s%s(%s)%s", variant == 1 ? "deterministic(); " : "",
                   name, args, variant == 2 ? "; interleave(eo, 4, 2)" : "");
        }
        char file[512];
        snprintf(file, sizeof file, "%s__%d_%d.pack", gop_op_name(op), s + 1, k);
        for (char *p = file; *p; p++)
          if (*p == ' ' || *p == ',' || *p == '(' || *p == ')') *p = '_';
        snprintf(path, sizeof path, "%s/%s", dir, file);
        GopCompileOptions o = {.schedule = s < 0 ? NULL : sched, .target = "sm_90"};
        gop_clear_diagnostics(ctx);
        if (gop_pack(op, &o, path) == 0) {
          fprintf(list, "%s\t%s\t%s\n", gop_op_name(op), sched, file);
          packs++;
        } else {
          const char *why = gop_diagnostics(ctx);
          int n = (int)strcspn(why, "\n");
          fprintf(list, "%s\t%s\tREFUSED\t%.*s\n", gop_op_name(op), sched, n, why);
          refused++;
        }
      }
    }
  }
  fclose(list);
  printf("prepared %d kernel packs in %s; %d combinations refused (see list.txt)\n", packs,
         dir, refused);
  ir_diag_free(&d);
  ir_arena_free(a);
  gop_context_free(ctx);
  return 0;
}

/* ---- run ---- */

/* One reference: an operator's outputs on a graph at a width. */
typedef struct Ref {
  const Case *c; /* the first case of the operator (its IR and tensors) */
  const Graph *g;
  int64_t F;
  double cost;  /* elements of its tensors: what the interpreter walks */
  float **buf;  /* by tensor id: inputs, outputs; temporaries NULL */
  float **host; /* the GPU's outputs, shared by the operator's schedules */
  int ok;
  char err[512];
} Ref;

/* The references of one graph, handed out to the threads most expensive
 * first: the longest ones start at once and the short ones fill the gaps,
 * instead of every thread waiting for the slowest of its batch. */
typedef struct RefQueue {
  Ref **refs; /* most expensive first */
  int n;
  atomic_int next;
} RefQueue;

static void *compute_refs(void *arg) {
  RefQueue *q = arg;
  for (int k; (k = atomic_fetch_add(&q->next, 1)) < q->n;) {
    Ref *r = q->refs[k];
    r->buf = case_buffers_new(r->c->ir, r->g, r->F, 12345 + (uint64_t)r->F);
    r->ok = case_interpret(r->c->ir, r->g, r->F, r->buf, r->err, sizeof r->err) == 0;
  }
  return NULL;
}

static int by_cost(const void *a, const void *b) {
  double x = (*(Ref *const *)a)->cost, y = (*(Ref *const *)b)->cost;
  return x < y ? 1 : x > y ? -1 : 0;
}

static double ref_cost(const IrOp *op, const Graph *g, int64_t F) {
  IrExtents ext;
  case_extents(op, F, &ext);
  double n = 0;
  for (int i = 0; i < op->ntensors; i++) {
    int64_t k = graph_tensor_numel(op->tensors[i], g, &ext);
    if (k > 0) n += (double)k;
  }
  return n + (double)g->ne * (double)(F > 0 ? F : 1);
}

/* Pins (or with pin false, unpins) a reference's inputs and the outputs
 * the GPU writes into: every schedule of the operator copies them, and
 * pinned copies run several times faster than pageable ones. A failure to
 * pin only makes the copies slower. */
static void pin_ref(Ref *r, bool pin) {
  const IrOp *op = r->c->ir;
  IrExtents ext;
  case_extents(op, r->F, &ext);
  for (int i = 0; i < op->ntensors; i++) {
    IrRole role = op->tensors[i]->role;
    float *p = role == IR_ROLE_IN ? r->buf[i] : role == IR_ROLE_OUT ? r->host[i] : NULL;
    int64_t n = graph_tensor_numel(op->tensors[i], r->g, &ext);
    if (!p || n <= 0) continue;
    if (!pin) {
      rt_host_unpin(p);
      continue;
    }
    Diag quiet;
    ir_diag_init(&quiet, NULL);
    (void)rt_host_pin(p, (size_t)n * sizeof(float), &quiet);
    ir_diag_free(&quiet);
  }
}

/* Computes the references refs[0..n) on every core, longest first. */
static void make_refs(Ref *refs, int n, long ncpu) {
  Ref **order = calloc((size_t)n + 1, sizeof *order);
  for (int k = 0; k < n; k++) order[k] = &refs[k];
  qsort(order, (size_t)n, sizeof *order, by_cost);
  RefQueue queue = {.refs = order, .n = n};
  atomic_init(&queue.next, 0);
  pthread_t th[256];
  int nth = ncpu < 1 ? 1 : ncpu > 256 ? 256 : (int)ncpu;
  if (nth > n) nth = n;
  int started = 0;
  for (; started < nth; started++)
    if (pthread_create(&th[started], NULL, compute_refs, &queue) != 0) break;
  if (started == 0) compute_refs(&queue);
  for (int k = 0; k < started; k++) pthread_join(th[k], NULL);
  free(order);
}

/* A deterministic schedule's promise: a second run (its outputs poisoned
 * again first) gives the same bits as the run in `host`. */
static bool rerun_same(const Case *c, const Ref *ref, char *why, size_t n) {
  const IrOp *op = c->ir;
  const Graph *g = ref->g;
  IrExtents ext;
  case_extents(op, ref->F, &ext);
  float **again = case_outputs_new(op, g, ref->F, ref->buf);
  Diag d;
  ir_diag_init(&d, NULL);
  RtExecOptions once = {0};
  RtExecResult res;
  memset(&res, 0, sizeof res);
  bool same = rt_exec_program(&c->prog, g, ext.value, (void *const *)again, &once, &res, &d) == RT_OK;
  if (!same) snprintf(why, n, "second run: %s", d.buf ? d.buf : "GPU run failed");
  for (int i = 0; same && i < op->ntensors; i++) {
    if (op->tensors[i]->role != IR_ROLE_OUT) continue;
    int64_t k = graph_tensor_numel(op->tensors[i], g, &ext);
    if (k > 0 && memcmp(ref->host[i], again[i], (size_t)k * sizeof(float)) != 0) {
      snprintf(why, n, "deterministic schedule: a second run gave other bits in %s",
               op->tensors[i]->name);
      same = false;
    }
  }
  ir_diag_free(&d);
  case_outputs_free(op, again);
  return same;
}

/* Cases that passed in an earlier run (--skip-passed CSV): a device call
 * has a time limit, so a matrix larger than one call is run over several,
 * each skipping what the ones before it checked. Keys are
 * "graph\top\tschedule\tF", sorted for bsearch. */
typedef struct Done {
  char **keys;
  int n;
} Done;

static int cmp_key(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *done_key(const char *graph, const char *op, const char *sched, long long F) {
  char *k = NULL;
  if (asprintf(&k, "%s\t%s\t%s\t%lld", graph, op, sched, F) < 0) abort();
  return k;
}

/* Reads the rows with ok = 1 of a CSV this program wrote. */
static int done_read(Done *d, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    return -1;
  }
  char line[2048];
  int lineno = 0, cap = d->n;
  while (fgets(line, sizeof line, f)) {
    if (++lineno == 1) continue; /* the header */
    /* graph,V,E,op,"schedule",F,ok,... */
    char graph[256], op[256], sched[512];
    long long F;
    int ok;
    if (sscanf(line, "%255[^,],%*d,%*d,%255[^,],\"%511[^\"]\",%lld,%d", graph, op, sched, &F,
               &ok) != 5) {
      fprintf(stderr, "%s:%d: not a row of a suite CSV\n", path, lineno);
      fclose(f);
      return -1;
    }
    if (!ok) continue;
    if (d->n == cap) d->keys = realloc(d->keys, sizeof *d->keys * (size_t)(cap = cap ? 2 * cap : 1024));
    d->keys[d->n++] = done_key(graph, op, sched, F);
  }
  fclose(f);
  qsort(d->keys, (size_t)d->n, sizeof *d->keys, cmp_key);
  return 0;
}

static bool done_has(const Done *d, const char *graph, const char *op, const char *sched,
                     long long F) {
  if (!d->n) return false;
  char *k = done_key(graph, op, sched, F);
  bool found = bsearch(&k, d->keys, (size_t)d->n, sizeof *d->keys, cmp_key) != NULL;
  free(k);
  return found;
}

/* One `suite run`: its settings and its tally. */
typedef struct Run {
  Case *cases;
  int ncases, reps;
  bool unpoisoned; /* --no-poison */
  double budget, t_start;
  FILE *csv;
  Done done;
  int passed, failed, not_run, skipped;
} Run;

static const char *graph_name(const Graph *g) {
  return g->name && strrchr(g->name, '/') ? strrchr(g->name, '/') + 1
         : g->name                        ? g->name
                                          : "graph";
}

/* Whether every case of the reference's operator and width passed before. */
static bool ref_done(const Run *r, const Ref *ref) {
  for (int i = 0; i < r->ncases; i++)
    if (strcmp(r->cases[i].op, ref->c->op) == 0 &&
        !done_has(&r->done, graph_name(ref->g), r->cases[i].op, r->cases[i].sched,
                  (long long)ref->F))
      return false;
  return true;
}

/* Counts a case that will not run: skipped when it passed before, else
 * not run (the budget is spent). */
static void tally_unrun(Run *r, const char *gname, const Case *c, long long F) {
  if (done_has(&r->done, gname, c->op, c->sched, F)) r->skipped++;
  else r->not_run++;
}

/* The same for every case of operator `op` at width F. */
static void tally_unrun_op(Run *r, const char *gname, const char *op, long long F) {
  for (int i = 0; i < r->ncases; i++)
    if (strcmp(r->cases[i].op, op) == 0) tally_unrun(r, gname, &r->cases[i], F);
}

/* Runs every case of the reference's operator at its width on the GPU,
 * checks each against the reference, prints a line each (and a CSV row),
 * and frees the reference. */
static void run_ref(Ref *ref, Run *r) {
  const Graph *g = ref->g;
  const char *gname = graph_name(g);
  const IrOp *op = ref->c->ir;
  FILE *csv = r->csv;
  if (!ref->ok) {
    printf("FAIL %s %s F=%lld: the interpreter failed: %s\n", gname, ref->c->op,
           (long long)ref->F, ref->err);
    case_buffers_free(op, ref->buf);
    r->failed++;
    return;
  }
  IrExtents ext;
  case_extents(op, ref->F, &ext);
  ref->host = case_outputs_new(op, g, ref->F, ref->buf);
  pin_ref(ref, true);
  Diag d;
  ir_diag_init(&d, NULL);
  for (int i = 0; i < r->ncases; i++) {
    Case *c = &r->cases[i];
    if (strcmp(c->op, ref->c->op) != 0) continue;
    if (done_has(&r->done, gname, c->op, c->sched, (long long)ref->F) ||
        (r->budget > 0 && rt_wall_seconds() - r->t_start > r->budget)) {
      tally_unrun(r, gname, c, (long long)ref->F);
      continue;
    }
    /* One call: a checked run whose outputs come back, then (with --reps)
     * the timed runs: one when the first took over 50 ms, as a schedule
     * that slow is far from the best one's time either way. */
    RtExecOptions timed = {.warmup = 2, .reps = r->reps, .slow_ms = 50,
                           .unpoisoned = r->unpoisoned};
    RtExecResult res;
    memset(&res, 0, sizeof res);
    ir_diag_free(&d);
    ir_diag_init(&d, NULL);
    RtStatus s = rt_exec_program(&c->prog, g, ext.value, (void *const *)ref->host, &timed, &res, &d);
    char why[600] = "";
    double rel = 0;
    bool ok = s == RT_OK &&
              case_compare(op, g, ref->F, ref->buf, ref->host, &rel, why, sizeof why);
    if (s != RT_OK) snprintf(why, sizeof why, "%s", d.buf ? d.buf : "GPU run failed");
    if (ok && !r->unpoisoned && strncmp(c->sched, "deterministic", 13) == 0)
      ok = rerun_same(c, ref, why, sizeof why);
    why[strcspn(why, "\n")] = 0;
    if (ok) r->passed++;
    else r->failed++;
    printf("%s %-14s %-9s %-22s F=%-4lld", ok ? "ok  " : "FAIL", gname, c->op, c->sched,
           (long long)ref->F);
    if (r->reps && ok)
      printf(" %9.4f ms %7.1f GB/s %5.1f%%", res.timing.median_ms, res.gbps,
             res.copy_gbps > 0 ? 100 * res.gbps / res.copy_gbps : 0);
    if (ok) printf(" relL2 %.1e\n", rel);
    else printf(" %s\n", why);
    if (csv)
      fprintf(csv, "%s,%d,%lld,%s,\"%s\",%lld,%d,%.3g,%.5f,%.2f,%.4f\n", gname, g->nv, (long long)g->ne,
              c->op, c->sched, (long long)ref->F, ok, rel, res.timing.median_ms, res.gbps,
              res.copy_gbps > 0 ? res.gbps / res.copy_gbps : 0);
    fflush(stdout);
  }
  ir_diag_free(&d);
  pin_ref(ref, false);
  case_outputs_free(op, ref->host);
  case_buffers_free(op, ref->buf);
  ref->host = ref->buf = NULL;
}

static int run(int argc, char **argv) {
  const char *dir = argv[0], *csv_path = NULL;
  Run r = {.t_start = rt_wall_seconds()};
  int64_t widths[16] = {16, 32, 64, 128, 256};
  int nwidths = 5;
  const char *graphs[64];
  int ngraphs = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--F") == 0 && i + 1 < argc) {
      nwidths = 0;
      for (char *t = strtok(argv[++i], " ,"); t && nwidths < 16; t = strtok(NULL, " ,"))
        widths[nwidths++] = atoll(t);
    } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      r.reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
      csv_path = argv[++i];
    } else if (strcmp(argv[i], "--budget-s") == 0 && i + 1 < argc) {
      r.budget = atof(argv[++i]);
    } else if (strcmp(argv[i], "--skip-passed") == 0 && i + 1 < argc) {
      if (done_read(&r.done, argv[++i]) != 0) return 2;
    } else if (strcmp(argv[i], "--no-poison") == 0) {
      r.unpoisoned = true;
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "suite run: unknown option %s\n", argv[i]);
      return 2;
    } else if (ngraphs < 64) {
      graphs[ngraphs++] = argv[i];
    }
  }
  if (r.unpoisoned) r.reps = 0; /* one launch a pack */
  r.ncases = case_list_read(dir, &r.cases);
  if (r.ncases <= 0) {
    fprintf(stderr, "no kernel packs listed in %s/list.txt\n", dir);
    return 1;
  }
  Case *cases = r.cases;
  int ncases = r.ncases;
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  for (int i = 0; i < ncases; i++)
    if (case_load(&cases[i], a, &d) != 0) return 1;
  if (rt_cuda_open(&d) != RT_OK) return 3;
  printf("# GPU: %s (sm_%d), %d kernel packs\n", rt_cuda_device_name(), rt_cuda_cc(), ncases);
  if (r.done.n) printf("# skipping the %d cases that passed before (--skip-passed)\n", r.done.n);
  if (r.unpoisoned)
    printf("# --no-poison: what the kernels write whole is left unwritten before the run; "
           "one run a pack\n");
  r.csv = csv_path ? fopen(csv_path, "w") : NULL;
  if (r.csv) fprintf(r.csv, "graph,V,E,op,schedule,F,ok,rel_l2,median_ms,gbps,bound_fraction\n");

  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  for (int gi = 0; gi < ngraphs; gi++) {
    const char *gname = strrchr(graphs[gi], '/') ? strrchr(graphs[gi], '/') + 1 : graphs[gi];
    if (r.budget > 0 && rt_wall_seconds() - r.t_start > r.budget) {
      /* No case of this graph would start: skip its references too. */
      printf("# graph %s: not run, the time budget is spent\n", gname);
      for (int i = 0; i < ncases; i++)
        for (int w = 0; w < (cases[i].ir->nsyms ? nwidths : 1); w++)
          tally_unrun(&r, gname, &cases[i], cases[i].ir->nsyms ? (long long)widths[w] : 0);
      continue;
    }
    double t_graph = rt_wall_seconds();
    Graph *g = graph_open(graphs[gi], &d);
    if (!g) return 1;
    printf("# graph %s: |V| %d, |E| %lld\n", gname, g->nv, (long long)g->ne);
    fflush(stdout);
    /* The distinct (operator, width) pairs, with their references computed
     * in parallel, leaving out those whose cases all passed before.
     * Operators without extents run at one width. */
    Ref *refs = calloc((size_t)ncases * (size_t)nwidths, sizeof *refs);
    int nrefs = 0;
    for (int i = 0; i < ncases; i++)
      for (int w = 0; w < nwidths; w++) {
        int64_t F = cases[i].ir->nsyms ? widths[w] : 0;
        if (!cases[i].ir->nsyms && w > 0) continue;
        bool seen = false;
        for (int k = 0; k < nrefs && !seen; k++)
          seen = strcmp(refs[k].c->op, cases[i].op) == 0 && refs[k].F == F;
        if (!seen) refs[nrefs++] = (Ref){.c = &cases[i], .g = g, .F = F};
      }
    int kept = 0;
    for (int k = 0; k < nrefs; k++) {
      if (!ref_done(&r, &refs[k])) {
        refs[kept++] = refs[k];
        continue;
      }
      tally_unrun_op(&r, gname, refs[k].c->op, (long long)refs[k].F); /* all skipped */
    }
    nrefs = kept;
    /* References hold every input and output of their operator: on the
     * largest graphs all of them at once would not fit in host memory, so
     * they are made and used in batches of at most a third of it. */
    double mem_cap = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) / 3;
    for (int k = 0; k < nrefs; k++) refs[k].cost = ref_cost(refs[k].c->ir, g, refs[k].F);
    for (int lo = 0, hi; lo < nrefs; lo = hi) {
      double bytes = 0;
      for (hi = lo; hi < nrefs && (hi == lo || bytes + refs[hi].cost * 8 < mem_cap); hi++)
        bytes += refs[hi].cost * 8; /* f32 reference + the GPU's copy */
      if (r.budget > 0 && rt_wall_seconds() - r.t_start > r.budget) {
        for (int k = lo; k < hi; k++) tally_unrun_op(&r, gname, refs[k].c->op, (long long)refs[k].F);
        continue;
      }
      double t_refs = rt_wall_seconds();
      make_refs(refs + lo, hi - lo, ncpu);
      printf("# graph %s: %d interpreter references in %.1f s\n", gname, hi - lo,
             rt_wall_seconds() - t_refs);
      fflush(stdout);
      for (int k = lo; k < hi; k++) run_ref(&refs[k], &r);
    }
    free(refs);
    graph_free(g);
    printf("# graph %s done in %.1f s\n", gname, rt_wall_seconds() - t_graph);
  }
  if (r.csv) fclose(r.csv);
  if (r.skipped) printf("# %d cases skipped: they passed before (--skip-passed)\n", r.skipped);
  if (r.not_run)
    printf("# %d cases not run: the time budget of %.0f s was spent\n", r.not_run, r.budget);
  printf("%d passed, %d failed\n", r.passed, r.failed);
  for (int i = 0; i < r.done.n; i++) free(r.done.keys[i]);
  free(r.done.keys);
  for (int i = 0; i < ncases; i++) cg_program_free(&cases[i].prog);
  free(cases);
  ir_arena_free(a);
  ir_diag_free(&d);
  return r.failed || r.not_run ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "prepare") == 0)
    return prepare(argv[2], argc >= 4 && strcmp(argv[3], "--all") == 0);
  if (argc >= 3 && strcmp(argv[1], "run") == 0) return run(argc - 2, argv + 2);
  fprintf(stderr,
          "usage: suite prepare PACKDIR [--all]\n"
          "       suite run PACKDIR GRAPH... [--F \"16 32 64 128 256\"] [--reps N] "
          "[--csv FILE]\n"
          "                 [--budget-s S] [--skip-passed CSV]... [--no-poison]\n");
  return 2;
}
