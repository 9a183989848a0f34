/* tests/gpu/suite.c: every stdlib operator x every named schedule on the GPU,
 * checked against the reference interpreter, and timed.
 *
 *   suite prepare PACKDIR [SCHEDULE...]   (here, with LLVM) compiles every
 *       stdlib operator under every named schedule and parameter setting
 *       into kernel packs, and lists them in PACKDIR/list.txt together with
 *       the combinations the scheduler refused and why
 *   suite run PACKDIR GRAPH... [--F "16 32 64"] [--reps N] [--csv FILE]
 *             [--budget-s S]
 *       (on the GPU machine, no LLVM needed) runs each pack on each graph
 *       and width, compares every output with the interpreter, and prints
 *       one line per case and a summary. With a time budget it stops
 *       starting cases once the budget is spent and counts the rest as not
 *       run (a device call has a hard limit: better an honest count than a
 *       killed run). Cases slower than 50 ms are timed with one repeat.
 *
 * The interpreter is the slow part on large graphs, so its results are
 * computed once per (graph, operator, width) and shared by every schedule,
 * on all CPU cores at once.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "gop.h"
#include "lang/lang.h"
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

static int prepare(const char *dir) {
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
    if (!gop_op_representative(op)) continue; /* docs/operators.md: the subset */
    for (int s = -1; s < m->nscheds; s++) {
      for (int k = 0;; k++) {
        char sched[256];
        if (s < 0) {
          if (k > 0) break;
          snprintf(sched, sizeof sched, "default");
        } else {
          const char *args = strncmp(m->scheds[s]->name, "gnnadvisor", 10) == 0
                                 ? gnnadvisor_settings(m->scheds[s]->nparams, k)
                                 : settings_for(m->scheds[s]->nparams, k);
          if (!args) break;
          snprintf(sched, sizeof sched, "%s(%s)", m->scheds[s]->name, args);
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
  const RtGraph *g;
  int64_t F;
  float **buf; /* by tensor id: inputs, outputs; temporaries NULL */
  int ok;
  char err[512];
} Ref;

static void *compute_ref(void *arg) {
  Ref *r = arg;
  r->buf = case_buffers_new(r->c->ir, r->g, r->F, 12345 + (uint64_t)r->F);
  r->ok = case_interpret(r->c->ir, r->g, r->F, r->buf, r->err, sizeof r->err) == 0;
  return NULL;
}

static int run(int argc, char **argv) {
  const char *dir = argv[0], *csv_path = NULL;
  double budget = 0, t_start = rt_wall_seconds();
  int not_run = 0;
  int64_t widths[16] = {16, 32, 64, 128, 256};
  int nwidths = 5, reps = 0;
  const char *graphs[64];
  int ngraphs = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--F") == 0 && i + 1 < argc) {
      nwidths = 0;
      for (char *t = strtok(argv[++i], " ,"); t && nwidths < 16; t = strtok(NULL, " ,"))
        widths[nwidths++] = atoll(t);
    } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
      csv_path = argv[++i];
    } else if (strcmp(argv[i], "--budget-s") == 0 && i + 1 < argc) {
      budget = atof(argv[++i]);
    } else if (ngraphs < 64) {
      graphs[ngraphs++] = argv[i];
    }
  }
  Case *cases;
  int ncases = case_list_read(dir, &cases);
  if (ncases <= 0) {
    fprintf(stderr, "no kernel packs listed in %s/list.txt\n", dir);
    return 1;
  }
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  for (int i = 0; i < ncases; i++)
    if (case_load(&cases[i], a, &d) != 0) return 1;
  if (rt_cuda_open(&d) != RT_OK) return 3;
  printf("# GPU: %s (sm_%d), %d kernel packs\n", rt_cuda_device_name(), rt_cuda_cc(), ncases);
  FILE *csv = csv_path ? fopen(csv_path, "w") : NULL;
  if (csv) fprintf(csv, "graph,V,E,op,schedule,F,ok,rel_l2,median_ms,gbps,bound_fraction\n");

  int passed = 0, failed = 0;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  for (int gi = 0; gi < ngraphs; gi++) {
    if (budget > 0 && rt_wall_seconds() - t_start > budget) {
      /* No case of this graph would start: skip its references too. */
      printf("# graph %s: not run, the time budget is spent\n", graphs[gi]);
      not_run += ncases * nwidths;
      continue;
    }
    double t_graph = rt_wall_seconds();
    RtGraph *g = rt_graph_open(graphs[gi], &d);
    if (!g) return 1;
    const char *gname = strrchr(graphs[gi], '/') ? strrchr(graphs[gi], '/') + 1 : graphs[gi];
    printf("# graph %s: |V| %d, |E| %d\n", gname, g->nv, g->ne);
    fflush(stdout);
    /* The distinct (operator, width) pairs, with their references computed
     * in parallel. Operators without extents run at one width. */
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
    for (int start = 0; start < nrefs; start += (int)ncpu) {
      pthread_t th[256];
      int n = 0;
      for (int k = start; k < nrefs && n < ncpu && n < 256; k++, n++)
        pthread_create(&th[n], NULL, compute_ref, &refs[k]);
      for (int k = 0; k < n; k++) pthread_join(th[k], NULL);
    }
    printf("# graph %s: read and %d interpreter references in %.1f s\n", gname, nrefs,
           rt_wall_seconds() - t_graph);
    for (int k = 0; k < nrefs; k++) {
      Ref *ref = &refs[k];
      if (!ref->ok) {
        printf("FAIL %s %s F=%lld: the interpreter failed: %s\n", gname, ref->c->op,
               (long long)ref->F, ref->err);
        failed++;
        continue;
      }
      const IrOp *op = ref->c->ir;
      IrExtents ext;
      case_extents(op, ref->F, &ext);
      for (int i = 0; i < ncases; i++) {
        Case *c = &cases[i];
        if (strcmp(c->op, ref->c->op) != 0) continue;
        if (budget > 0 && rt_wall_seconds() - t_start > budget) {
          not_run++;
          continue;
        }
        float **host = case_outputs_new(op, g, ref->F, ref->buf);
        /* One call: a checked run whose outputs come back, then (with
         * --reps) the timed runs: one when the first took over 50 ms, as a
         * schedule that slow is far from the best one's time either way. */
        RtExecOptions timed = {.warmup = 2, .reps = reps, .slow_ms = 50};
        RtExecResult res;
        memset(&res, 0, sizeof res);
        ir_diag_free(&d);
        ir_diag_init(&d, NULL);
        RtStatus s = rt_exec_program(&c->prog, g, ext.value, host, &timed, &res, &d);
        char why[600] = "";
        double rel = 0;
        bool ok = s == RT_OK && case_compare(op, g, ref->F, ref->buf, host, &rel, why, sizeof why);
        if (s != RT_OK) snprintf(why, sizeof why, "%s", d.buf ? d.buf : "GPU run failed");
        why[strcspn(why, "\n")] = 0;
        if (ok) passed++; else failed++;
        printf("%s %-14s %-9s %-22s F=%-4lld", ok ? "ok  " : "FAIL", gname, c->op, c->sched,
               (long long)ref->F);
        if (reps && ok)
          printf(" %9.4f ms %7.1f GB/s %5.1f%%", res.timing.median_ms, res.gbps,
                 res.copy_gbps > 0 ? 100 * res.gbps / res.copy_gbps : 0);
        if (ok)
          printf(" relL2 %.1e\n", rel);
        else
          printf(" %s\n", why);
        if (csv)
          fprintf(csv, "%s,%d,%d,%s,\"%s\",%lld,%d,%.3g,%.5f,%.2f,%.4f\n", gname, g->nv, g->ne,
                  c->op, c->sched, (long long)ref->F, ok, rel, res.timing.median_ms, res.gbps,
                  res.copy_gbps > 0 ? res.gbps / res.copy_gbps : 0);
        case_outputs_free(op, host);
        fflush(stdout);
      }
      case_buffers_free(op, ref->buf);
    }
    free(refs);
    rt_graph_free(g);
    printf("# graph %s done in %.1f s\n", gname, rt_wall_seconds() - t_graph);
  }
  if (csv) fclose(csv);
  if (not_run)
    printf("# %d cases not run: the time budget of %.0f s was spent\n", not_run, budget);
  printf("%d passed, %d failed\n", passed, failed);
  return failed || not_run ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "prepare") == 0) return prepare(argv[2]);
  if (argc >= 3 && strcmp(argv[1], "run") == 0) return run(argc - 2, argv + 2);
  fprintf(stderr,
          "usage: suite prepare PACKDIR\n"
          "       suite run PACKDIR GRAPH... [--F \"16 32 64 128 256\"] [--reps N] "
          "[--csv FILE]\n");
  return 2;
}
