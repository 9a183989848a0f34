/* bench/gop_bench.c: gop's side of the benchmark (issue 6), in two halves
 * so that compiling and measuring happen on different machines.
 *
 *   gop_bench plan OUTDIR DATASETS [--graphs "cora ..."] [--F "16 ..."]
 *                  [--ops "u_mul_e_sum ..."] [--top K] [--grid OP:GRAPH:F]
 *                  [--edges dst|input]
 *       (here, with LLVM) for every graph x operator x width, lists the
 *       schedules to measure -- the default schedule, the cost model's K
 *       best legal points, and the schedule `gopc run` would choose
 *       (gop_choose_schedule: predictor, else cost model), and the
 *       model's best point of each strategy the top K missed -- in
 *       OUTDIR/plan.txt, and compiles each distinct (operator, schedule)
 *       once into a kernel pack in OUTDIR. --grid adds warp_edge(G, T) for
 *       every G x T of the tuner's space on one case: uGrapher's figure 18.
 *   gop_bench run OUTDIR DATASETS --csv FILE [--reps N] [--budget-s S]
 *                 [--edges dst|input] [--timing graph|events] [--graph-reps N]
 *       (on the GPU machine, no LLVM) runs the plan: every candidate is
 *       run once and its outputs checked, and timed (2 warm-up runs, the
 *       median of N; one run when the first took over 50 ms). By default
 *       the timed runs are captured into a CUDA graph, back to back, and
 *       each of the N times is a replay of it divided by the runs it holds
 *       (--graph-reps, default 0: enough for about 1 ms a replay), so that
 *       a run of a few microseconds is not timed by its launch; --timing
 *       events times each repetition between events, launched from the
 *       host, as before 2026-11-28. The peers time the same way
 *       (bench/peers); the CSV's `timing` and `graph_calls` say how each
 *       row was timed. A capture that fails is reported on a `# note` line
 *       and the row is timed with events instead. Where a
 *       case's bytes fit in L2, the timed runs rotate among copies of its
 *       tensors, each repetition running every copy back to back and
 *       divided by their number, as the peers do (rotated_sets; the CSV's
 *       `sets`). The reference is the interpreter when |E| x F is at
 *       most 2^25, else the default schedule's output (the GPU suite,
 *       tests/gpu/run.sh, checks every schedule against the interpreter on
 *       the large graphs too); the CSV says which. "gop tuned" in the
 *       report is the fastest checked candidate: an exhaustive tune over
 *       the model's top K. Edge ids follow the file's order (the user's)
 *       unless --edges dst numbers them by destination (the graph's CSR
 *       order, `--reorder none`; docs/reordering.md): an edge tensor
 *       (u_mul_e_sum's W) is then read in order, as cuSPARSE reads its CSR
 *       values, instead of gathered through the edge ids. `plan --edges
 *       dst` compiles the packs for such graphs (CgLayout.csr_edges: an
 *       in-edge's id is its position, no in_eid is read; docs/gpu-ir.md),
 *       says so in plan.txt, and its run numbers the edges by destination.
 *       Measured on the H100: with general kernels at most 2% for the
 *       gathers of W (run 5); with kernels for CSR order 5-9% for
 *       u_mul_e_sum (2026-11-27, bench/NOTES.md).
 *
 * bench/report.py puts the CSV beside the peers' (bench/peers) and writes
 * the tables and plots of bench/results.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codegen/codegen.h"
#include "gop.h"
#include "lang/lang.h"
#include "graph/graph.h"
#include "runtime/runtime.h"
#include "tune/tune.h"
#include "tests/gpu/cases.h"

#define MAX_LIST 32

/* The file (or generator) of graph `name`: DATASETS/NAME.mtx.gz, or the
 * name itself when it is a generator ("rmat:18:8", "grid:512x512": it has
 * a colon), so that the held-out graphs need no files. */
static void graph_path(char *buf, size_t size, const char *datasets, const char *name) {
  if (strchr(name, ':'))
    snprintf(buf, size, "%s", name);
  else
    snprintf(buf, size, "%s/%s.mtx.gz", datasets, name);
}

/* A space-separated list option, split in place. */
static int split_list(char *s, const char **out) {
  int n = 0;
  for (char *t = strtok(s, " ,"); t && n < MAX_LIST; t = strtok(NULL, " ,")) out[n++] = t;
  return n;
}

static void usage(void) {
  fputs("usage: gop_bench plan OUTDIR DATASETS [--graphs \"G...\"] [--F \"16 32 ...\"]\n"
        "                 [--ops \"OP...\"] [--top K] [--grid OP:GRAPH:F] [--edges dst|input]\n"
        "       gop_bench run OUTDIR DATASETS --csv FILE [--reps N] [--budget-s S]\n"
        "                     [--edges dst|input] [--timing graph|events] [--graph-reps N]\n",
        stderr);
}

/* A usage error: what is wrong, then the usage after a blank line (as
 * gopc prints its own). Returns 2, the exit status. */
static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_usage(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("gop_bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("\n\n", stderr);
  usage();
  return 2;
}

/* Option `name`'s value `v` as a whole number in [lo, hi]; false after
 * saying what is wrong. */
static bool count_arg(const char *name, const char *v, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi) {
    bad_usage("%s %s: not a whole number from %ld to %ld", name, v, lo, hi);
    return false;
  }
  *out = x;
  return true;
}

/* --edges V of plan and run: sets *by_dst, or refuses V. */
static bool edges_arg(const char *v, bool *by_dst) {
  if (strcmp(v, "dst") && strcmp(v, "input")) {
    bad_usage("--edges %s: choose dst (numbered by destination) or input (the file's order)", v);
    return false;
  }
  *by_dst = strcmp(v, "dst") == 0;
  return true;
}

/* ---- plan ---- */

typedef struct Plan {
  FILE *out;
  const char *dir;
  GopContext *ctx;
  GopModule *lib;
  IrModule *ir_lib; /* the stdlib's IR, and the arena of the points made from it */
  Arena *arena;
  char packs[4096][160]; /* "op\tschedule" already compiled */
  int npacks;
  bool csr_edges; /* --edges dst: packs for edge ids in CSR order */
} Plan;

/* The pack file of (op, schedule), compiled on first use; NULL when the
 * compiler refuses it. */
static const char *pack_for(Plan *p, const GopOp *op, const char *sched, char *file,
                            size_t n) {
  snprintf(file, n, "%s__%s.pack", gop_op_name(op), sched);
  for (char *c = file; *c; c++)
    if (*c == ' ' || *c == ',' || *c == '(' || *c == ')') *c = '_';
  char key[160];
  snprintf(key, sizeof key, "%s\t%s", gop_op_name(op), sched);
  for (int i = 0; i < p->npacks; i++)
    if (strcmp(p->packs[i], key) == 0) return file;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", p->dir, file);
  GopCompileOptions o = {.schedule = strcmp(sched, "default") ? sched : NULL, .target = "sm_90",
                         .csr_edges = p->csr_edges};
  gop_clear_diagnostics(p->ctx);
  if (gop_pack(op, &o, path) != 0) {
    fprintf(stderr, "gop_bench: %s under %s: %s", gop_op_name(op), sched,
            gop_diagnostics(p->ctx));
    return NULL;
  }
  if (p->npacks < 4096) snprintf(p->packs[p->npacks++], sizeof p->packs[0], "%s", key);
  return file;
}

static void plan_row(Plan *p, const char *graph, const GopOp *op, int64_t F, const char *role,
                     int rank, double model_us, const char *sched) {
  char file[512];
  if (!pack_for(p, op, sched, file, sizeof file)) return;
  fprintf(p->out, "%s\t%s\t%lld\t%s\t%d\t%.2f\t%s\t%s\n", graph, gop_op_name(op),
          (long long)F, role, rank, model_us, sched, file);
}

/* A row for the named schedule `text` of operator `ir` (op), with the cost
 * model's estimate; none where the schedule does not apply to it. */
static void plan_named(Plan *p, const char *graph, const GopOp *op, const IrOp *ir,
                       const TuneOpShape *shape, const TuneGraphSig *sig, int64_t F,
                       const char *text) {
  TunePoint np;
  if (tune_point_make(ir, p->ir_lib, text, p->arena, &np, NULL) != 0) return;
  TuneCost c;
  tune_model_cost(shape, &np, sig, F, &c);
  plan_row(p, graph, op, F, "named", 0, c.time_us, text);
}

static int plan(int argc, char **argv) {
  const char *dir = argv[0], *datasets = argv[1];
  char graphs_s[1024] = "cora citeseer pubmed wiki-Vote ca-HepPh musae-facebook deezer-HU "
                        "blogcatalog proteins delaunay_n16 soc-Slashdot0902 ogbn-arxiv "
                        "cnr-2000 molhiv";
  char widths_s[256] = "16 32 64 128 256";
  char ops_s[512] = "u_mul_e_sum copy_u_sum copy_u_mean copy_u_max u_dot_v u_add_v "
                    "edge_softmax";
  char grid_s[256] = "";
  long top = 4;
  bool by_dst = false;
  for (int i = 2; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--graphs") && strcmp(argv[i], "--F") && strcmp(argv[i], "--ops") &&
        strcmp(argv[i], "--grid") && strcmp(argv[i], "--top") && strcmp(argv[i], "--edges"))
      return bad_usage("%s: not an option of %s", argv[i], "gop_bench plan");
    if (!v) return bad_usage("%s needs a value", argv[i]);
    if (strcmp(argv[i], "--graphs") == 0) snprintf(graphs_s, sizeof graphs_s, "%s", v);
    else if (strcmp(argv[i], "--F") == 0) snprintf(widths_s, sizeof widths_s, "%s", v);
    else if (strcmp(argv[i], "--ops") == 0) snprintf(ops_s, sizeof ops_s, "%s", v);
    else if (strcmp(argv[i], "--grid") == 0) snprintf(grid_s, sizeof grid_s, "%s", v);
    else if (strcmp(argv[i], "--edges") == 0) {
      if (!edges_arg(v, &by_dst)) return 2;
    } else if (!count_arg("--top", v, 1, 64, &top)) return 2;
    i++;
  }
  const char *graphs[MAX_LIST], *widths[MAX_LIST], *ops[MAX_LIST];
  int ngraphs = split_list(graphs_s, graphs), nwidths = split_list(widths_s, widths),
      nops = split_list(ops_s, ops);
  for (int wi = 0; wi < nwidths; wi++) {
    long F;
    if (!count_arg("--F", widths[wi], 1, 1 << 20, &F)) return 2;
  }
  mkdir(dir, 0755);
  char path[4096];
  snprintf(path, sizeof path, "%s/plan.txt", dir);
  Plan *p = calloc(1, sizeof *p);
  p->dir = dir;
  p->csr_edges = by_dst;
  p->ctx = gop_context_new();
  p->lib = gop_stdlib(p->ctx);
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  IrModule *m = lang_stdlib(a, &d);
  p->ir_lib = m;
  p->arena = a;
  p->out = fopen(path, "w");
  if (!p->lib || !m || !p->out) {
    fprintf(stderr, "gop_bench: cannot start: %s%s\n", gop_diagnostics(p->ctx),
            p->out ? "" : path);
    return 1;
  }
  if (by_dst) fprintf(p->out, "# edges dst\n"); /* the packs need graphs in CSR order */
  fprintf(p->out, "# graph\top\tF\trole\trank\tmodel_us\tschedule\tpack\n");
  for (int gi = 0; gi < ngraphs; gi++) {
    graph_path(path, sizeof path, datasets, graphs[gi]);
    GopGraph *gg = gop_graph_open(p->ctx, path);
    Graph *rg = graph_open(path, &d);
    if (gg && by_dst) { /* the untuned choice sees the graph as run will run it */
      GopGraph *r = gop_graph_reorder(p->ctx, gg, "none");
      gop_graph_free(p->ctx, gg);
      gg = r;
    }
    if (!gg || !rg) {
      fprintf(stderr, "gop_bench: %s%s", path, gop_diagnostics(p->ctx));
      return 1;
    }
    TuneGraphSig sig;
    tune_graph_sig(rg, &sig);
    for (int oi = 0; oi < nops; oi++) {
      GopOp *op = gop_module_find_op(p->lib, ops[oi]);
      IrOp *ir = NULL;
      for (int k = 0; k < m->nops; k++)
        if (strcmp(m->ops[k]->name, ops[oi]) == 0) ir = m->ops[k];
      if (!op || !ir) {
        fprintf(stderr, "gop_bench: no stdlib operator %s\n", ops[oi]);
        return 1;
      }
      TuneOpShape shape;
      tune_op_shape(ir, &shape);
      TunePoint *pts = NULL;
      int n = tune_space_enumerate(ir, m, a, &pts, &d);
      if (n < 0) return 1;
      for (int wi = 0; wi < nwidths; wi++) {
        int64_t F = shape.feature_loop ? atoll(widths[wi]) : 0;
        if (!shape.feature_loop && wi > 0) break;
        tune_model_rank(&shape, pts, n, &sig, F);
        plan_row(p, graphs[gi], op, F, "default", 0, 0, "default");
        for (int k = 0; k < n && k < top; k++) {
          TuneCost c;
          tune_model_cost(&shape, &pts[k], &sig, F, &c);
          plan_row(p, graphs[gi], op, F, "model", k + 1, c.time_us, pts[k].text);
        }
        /* ... and each strategy's best point, so that "tuned" spans them all. */
        for (int s = 0; s < TUNE_STRATEGY_COUNT; s++)
          for (int k = top; k < n; k++)
            if ((int)pts[k].strategy == s) {
              TuneCost c0, ck;
              tune_model_cost(&shape, &pts[0], &sig, F, &c0);
              tune_model_cost(&shape, &pts[k], &sig, F, &ck);
              if (ck.time_us > 2 * c0.time_us) break; /* hopeless: not worth GPU time */
              bool earlier = false;
              for (int j = 0; j < k && !earlier; j++) earlier = pts[j].strategy == pts[k].strategy;
              if (!earlier)
                plan_row(p, graphs[gi], op, F, "model", k + 1, ck.time_us, pts[k].text);
              break;
            }
        /* The other named schedules (spmm_vec4, gnnadvisor, ...), which
         * the model costs only roughly, at the settings their authors
         * measured best on an H100 (docs/scheduling.md), where they apply. */
        static const char *const named[] = {
            "spmm_vec4(8)",         "sddmm_vec4(4)",          "gnnadvisor(32, 32)",
            "gnnadvisor(16, 32)",   "gnnadvisor_mgg(32, 32, 4)", "gnnadvisor_shared(16, 32, 4)",
            "spmm_vec4(4)",         "spmm_rows(2, 4)",        "spmm_rows(4, 4)",
            "spmm_rows(8, 4)",      "spmm_groups(16, 4)",     "spmm_groups(32, 4)",
            "spmm_groups(64, 4)",   "spmm_groups(128, 8)",
            /* larger groups and unrolls: cnr-2000 F = 128 u_mul_e_sum
             * 0.2744 ms with (128, 4) against (64, 4)'s 0.2824, ogbn-arxiv
             * F = 256 0.2616 with (64, 8) against 0.2648 (2026-11-27) */
            "spmm_groups(128, 4)",  "spmm_groups(64, 8)",
            /* prefetch(e): indices and weights loaded 32 edges at a time
             * and broadcast by warp shuffles (issue 13) */
            "spmm_vec4p(4)",        "spmm_vec4p(8)",          "spmm_groupsp(16, 4)",
            "spmm_groupsp(32, 4)",  "spmm_groupsp(64, 4)",    "spmm_groupsp(128, 8)",
            "gnnadvisorp(16, 32)",  "gnnadvisorp(32, 32)",
            /* at full occupancy, 32 registers a thread (occupancy(v, 2048),
             * issue 13, run 9) */
            "spmm_vec4_full(4)",    "spmm_rows_full(2, 4)",   "spmm_rows_full(4, 4)",
            "spmm_rows_full(8, 4)"};
        for (size_t k = 0; k < sizeof named / sizeof named[0]; k++)
          plan_named(p, graphs[gi], op, ir, &shape, &sig, F, named[k]);
        /* Neighbour groups in teams (spmm_teams(G, T), issue 13): T lanes
         * per group where 4T covers F or half of it (F <= 128), G 16, 32
         * or 64; and with 8 features a lane (spmm_teams8), where 8T does,
         * G 32, 64 or 128. (The larger G of each since 2026-11-27: the
         * tuning space's spmm_teams(64, 8) took u_mul_e_sum on cnr-2000
         * at F = 32 from 0.1137 to 0.0940 ms.) */
        for (int v8 = 0; v8 < 2; v8++)
          for (int64_t T = F / (8 << v8) > 0 ? F / (8 << v8) : 1;
               F > 0 && T <= F / (4 << v8) && T <= (v8 ? 32 : 16); T *= 2)
          for (int G = 16 << v8; G <= 64 << v8; G *= 2) {
            char text[64];
            snprintf(text, sizeof text, "spmm_teams%s(%d, %lld)", v8 ? "8" : "", G,
                     (long long)T);
            plan_named(p, graphs[gi], op, ir, &shape, &sig, F, text);
          }
        /* Feature tiles outside the neighbour groups (spmm_tiles, issue
         * 37: locality where X overflows L2), where there are two tiles
         * or more: the points measured best on cnr-2000 and R-MAT 22/16
         * (H200, 2026-11-29). */
        for (int k = 0; F >= 64 && k < 2; k++)
          plan_named(p, graphs[gi], op, ir, &shape, &sig, F,
                     k ? "spmm_tiles(32, 16)" : "spmm_tiles(64, 8)");
        /* Panels of P destinations reading each shared source row once
         * (spmm_panels, passes/panel.c): P = 2, 4, 8 with rows of 64 to
         * 256 pairs a warp (on cnr-2000 rows of 32 were 1.3-1.5x slower
         * than 64, as neighbour groups are), U = 2 or 4 pairs in flight;
         * and where a warp covers F twice or more, a team of F / 4 lanes
         * a row. */
        for (int P = 2; F > 0 && P <= 8; P *= 2)
          for (int G = 64; G <= 256; G *= 2) {
            char text[64];
            for (int U = 2; U <= 4; U *= 2) {
              snprintf(text, sizeof text, "spmm_panels(%d, %d, %d)", G, P, U);
              plan_named(p, graphs[gi], op, ir, &shape, &sig, F, text);
            }
            if (F <= 64) {
              snprintf(text, sizeof text, "spmm_panel_teams(%d, %d, %lld)", G, P,
                       (long long)(F / 4 < 1 ? 1 : F / 4));
              plan_named(p, graphs[gi], op, ir, &shape, &sig, F, text);
            }
          }
        /* Row-based SDDMM (issue 37): a team of T = F / 4 lanes (at most
         * 32) per destination row, the row in registers where the op
         * allows it, and per neighbour group of 8 or 32 edges. */
        for (int k = 0; F > 0 && k < 6; k++) {
          static const char *const rows[] = {"sddmm_rows(%lld)", "sddmm_rows_reg(%lld)",
                                             "sddmm_groups(8, %lld)", "sddmm_groups(32, %lld)",
                                             "sddmm_groups_reg(8, %lld)",
                                             "sddmm_groups_reg(32, %lld)"};
          long long T = F / 4 < 1 ? 1 : F / 4 > 32 ? 32 : F / 4;
          char text[64];
          snprintf(text, sizeof text, rows[k], T);
          plan_named(p, graphs[gi], op, ir, &shape, &sig, F, text);
        }
        /* Stages fused into one kernel (issue 37: edge softmax), a team of
         * T lanes per destination on its in-edges, T = 1 .. 32. */
        for (int T = 1; T <= 32; T *= 2) {
          char text[64];
          snprintf(text, sizeof text, "softmax_rows(%d)", T);
          plan_named(p, graphs[gi], op, ir, &shape, &sig, F, text);
        }
        /* ... and over neighbour groups, a thread per group of G in-edges
         * and a kernel per stage (softmax_groups(G)), for operators with
         * no feature loop: hubs split, an atomic per group of theirs. */
        for (int G = 4; F == 0 && G <= 64; G *= 2) {
          char text[64];
          snprintf(text, sizeof text, "softmax_groups(%d)", G);
          plan_named(p, graphs[gi], op, ir, &shape, &sig, F, text);
        }
        /* ... and a group's edges on a team of T lanes (softmax_teams(G,
         * T)), T = G / 8 and G / 4: two or one unrolled step a lane */
        for (int G = 16; F == 0 && G <= 128; G *= 2)
          for (int T = G / 8; T <= G / 4 && T <= 32; T *= 2) {
            char text[64];
            snprintf(text, sizeof text, "softmax_teams(%d, %d)", G, T);
            plan_named(p, graphs[gi], op, ir, &shape, &sig, F, text);
          }
        GopScheduleChoice ch;
        int chose = gop_choose_schedule(op, gg, F, NULL, &ch);
        if (chose == GOP_NO_SCHEDULE && ch.candidates > 0) /* the model's pick: the default */
          plan_row(p, graphs[gi], op, F, "chosen:default_mapping", 0, ch.model_us, "default");
        if (chose == 0) {
          char role[64];
          snprintf(role, sizeof role, "chosen:%s", gop_schedule_source_name(ch.source));
          for (char *c = role; *c; c++)
            if (*c == ' ') *c = '_';
          plan_row(p, graphs[gi], op, F, role, 0, ch.model_us, ch.schedule);
          /* and the cost model's own pick, when a predictor chose: the
           * report puts the two untuned choices side by side */
          const char *was = getenv("GOP_PREDICTOR");
          char keep[32];
          snprintf(keep, sizeof keep, "%s", was ? was : "");
          setenv("GOP_PREDICTOR", "off", 1);
          GopScheduleChoice cm;
          if (ch.source != GOP_SCHEDULE_FROM_MODEL &&
              gop_choose_schedule(op, gg, F, NULL, &cm) == 0)
            plan_row(p, graphs[gi], op, F, "untuned:cost_model", 0, cm.model_us, cm.schedule);
          if (was)
            setenv("GOP_PREDICTOR", keep, 1);
          else
            unsetenv("GOP_PREDICTOR");
        }
        /* uGrapher's figure 18: warp_edge over the whole G x T grid. */
        char want[256];
        snprintf(want, sizeof want, "%s:%s:%lld", ops[oi], graphs[gi], (long long)F);
        if (strcmp(grid_s, want) == 0)
          for (int k = 0; k < n; k++)
            if (pts[k].strategy == TUNE_WARP_EDGE) {
              TuneCost c;
              tune_model_cost(&shape, &pts[k], &sig, F, &c);
              plan_row(p, graphs[gi], op, F, "grid", k + 1, c.time_us, pts[k].text);
            }
      }
      free(pts);
    }
    graph_free(rg);
    printf("planned %s (%d packs so far)\n", graphs[gi], p->npacks);
    fflush(stdout);
  }
  fclose(p->out);
  printf("plan in %s/plan.txt, %d kernel packs\n", dir, p->npacks);
  gop_context_free(p->ctx);
  ir_diag_free(&d);
  ir_arena_free(a);
  free(p);
  return 0;
}

/* ---- run ---- */

typedef struct Row {
  char graph[64], op[64], role[64], sched[128], file[512];
  int64_t F;
  int rank;
  double model_us;
  Case *c; /* the loaded pack */
} Row;

static int read_plan(const char *dir, Row **out, bool *by_dst) {
  char path[4096];
  snprintf(path, sizeof path, "%s/plan.txt", dir);
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "gop_bench: cannot read %s (gop_bench plan writes it): %s\n", path,
            strerror(errno));
    return -1;
  }
  int n = 0, cap = 256;
  Row *rows = calloc((size_t)cap, sizeof *rows);
  char line[2048];
  int lineno = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    if (strcmp(line, "# edges dst\n") == 0) *by_dst = true;
    if (line[0] == '#') continue;
    line[strcspn(line, "\n")] = 0;
    char *fld[8];
    int k = 0;
    for (char *s = line; k < 8; k++) {
      fld[k] = s;
      char *tab = strchr(s, '\t');
      if (!tab) {
        k++;
        break;
      }
      *tab = 0;
      s = tab + 1;
    }
    if (k != 8) {
      fprintf(stderr, "%s:%d: want 8 tab-separated fields, got %d\n", path, lineno, k);
      fclose(f);
      free(rows);
      return -1;
    }
    if (n == cap) rows = realloc(rows, sizeof *rows * (size_t)(cap *= 2));
    Row *r = &rows[n++];
    memset(r, 0, sizeof *r);
    snprintf(r->graph, sizeof r->graph, "%s", fld[0]);
    snprintf(r->op, sizeof r->op, "%s", fld[1]);
    r->F = atoll(fld[2]);
    snprintf(r->role, sizeof r->role, "%s", fld[3]);
    r->rank = atoi(fld[4]);
    r->model_us = atof(fld[5]);
    snprintf(r->sched, sizeof r->sched, "%s", fld[6]);
    snprintf(r->file, sizeof r->file, "%s/%s", dir, fld[7]);
  }
  fclose(f);
  *out = rows;
  return n;
}

/* How many copies of a case's tensors the timed runs rotate among: as the
 * peers choose them (bench/peers/cusparse_bench.cu, choose_sets), so that
 * a case whose bytes fit in L2 is not timed on a warm cache: one copy from
 * twice the L2 up, else enough for three times the L2, 2 to 64. The bytes
 * are the peers' count (X and Y, the CSR); the graph itself stays one copy
 * on the device (as in a GNN, whose layers share it), the peers rotate
 * theirs too. */
static int rotated_sets(const Graph *g, int64_t F) {
  double l2 = (double)rt_cuda_device()->l2_bytes;
  double bytes = 2.0 * g->nv * (double)(F > 0 ? F : 1) * 4 + (g->nv + 1) * 4.0 + (double)g->ne * 8.0;
  if (l2 <= 0 || bytes >= 2.0 * l2) return 1;
  int n = (int)ceil(3.0 * l2 / bytes);
  return n < 2 ? 2 : n > 64 ? 64 : n;
}

static int run(int argc, char **argv) {
  const char *dir = argv[0], *datasets = argv[1], *csv_path = NULL;
  long reps = 10, budget_s = 0, graph_reps = 0;
  bool graph = true; /* --timing graph */
  double budget, t0 = rt_wall_seconds();
  bool by_dst = false, edges_given = false, plan_dst = false;
  for (int i = 2; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--csv") && strcmp(argv[i], "--reps") && strcmp(argv[i], "--budget-s") &&
        strcmp(argv[i], "--edges") && strcmp(argv[i], "--timing") &&
        strcmp(argv[i], "--graph-reps"))
      return bad_usage("%s: not an option of %s", argv[i], "gop_bench run");
    if (!v) return bad_usage("%s needs a value", argv[i]);
    if (strcmp(argv[i], "--csv") == 0) csv_path = v;
    else if (strcmp(argv[i], "--reps") == 0) {
      if (!count_arg("--reps", v, 1, 100000, &reps)) return 2;
    } else if (strcmp(argv[i], "--budget-s") == 0) {
      if (!count_arg("--budget-s", v, 0, 1000000, &budget_s)) return 2;
    } else if (strcmp(argv[i], "--timing") == 0) {
      if (strcmp(v, "graph") && strcmp(v, "events"))
        return bad_usage("--timing %s: choose graph (replays of a captured CUDA graph) or "
                         "events (each repetition launched from the host)", v);
      graph = strcmp(v, "graph") == 0;
    } else if (strcmp(argv[i], "--graph-reps") == 0) {
      if (!count_arg("--graph-reps", v, 0, RT_GRAPH_MAX_RUNS, &graph_reps)) return 2;
    } else {
      if (!edges_arg(v, &by_dst)) return 2;
      edges_given = true;
    }
    i++;
  }
  budget = (double)budget_s;
  if (!csv_path) return bad_usage("run needs --csv FILE");
  Row *rows;
  int nrows = read_plan(dir, &rows, &plan_dst);
  if (nrows < 0) return 1;
  if (plan_dst && edges_given && !by_dst)
    return bad_usage("the plan in %s was made with --edges dst (its packs are for edge ids "
                     "in CSR order): run it with --edges dst", dir);
  by_dst |= plan_dst;
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, stderr);
  /* Each distinct pack is read once. */
  Case *cases = calloc((size_t)nrows, sizeof *cases);
  int ncases = 0;
  for (int i = 0; i < nrows; i++) {
    for (int k = 0; k < ncases && !rows[i].c; k++)
      if (strcmp(cases[k].file, rows[i].file) == 0) rows[i].c = &cases[k];
    if (rows[i].c) continue;
    Case *c = &cases[ncases++];
    snprintf(c->file, sizeof c->file, "%s", rows[i].file);
    if (case_load(c, a, &d) != 0) return 1;
    rows[i].c = c;
  }
  if (rt_cuda_open(&d) != RT_OK) return 3;
  FILE *csv = fopen(csv_path, "w");
  if (!csv) {
    perror(csv_path);
    return 1;
  }
  fprintf(csv, "# gpu=%s sm=%d\n", rt_cuda_device_name(), rt_cuda_cc());
  fprintf(csv, "# timing=%s graph_reps=%ld reps=%ld warmup=2\n", graph ? "graph" : "events",
          graph_reps, reps);
  fprintf(csv, "graph,V,E,op,F,role,rank,model_us,schedule,ok,checked_against,rel_l2,"
               "median_ms,gbps,bound_fraction,sets,timing,graph_calls\n");
  printf("# GPU: %s (sm_%d), %d plan rows, %d kernel packs; edge ids %s; timed by %s\n",
         rt_cuda_device_name(), rt_cuda_cc(), nrows, ncases,
         by_dst ? "by destination (CSR order)" : "in the file's order",
         graph ? "replaying a captured CUDA graph" : "events around each repetition");
  int failed = 0, not_run = 0, done = 0;
  for (int i = 0; i < nrows;) {
    /* Rows of one graph are consecutive; so are those of one (op, F). */
    char path[4096];
    graph_path(path, sizeof path, datasets, rows[i].graph);
    double tg = rt_wall_seconds();
    Graph *g = graph_open(path, &d);
    if (g && by_dst) { /* edge ids in CSR order: edge tensors read in order */
      Graph *r = graph_reorder(g, "none", &d);
      graph_free(g);
      g = r;
    }
    if (!g) return 1;
    int gend = i;
    while (gend < nrows && strcmp(rows[gend].graph, rows[i].graph) == 0) gend++;
    for (int j = i; j < gend;) {
      int jend = j;
      while (jend < gend && strcmp(rows[jend].op, rows[j].op) == 0 && rows[jend].F == rows[j].F)
        jend++;
      if (budget > 0 && rt_wall_seconds() - t0 > budget) {
        not_run += jend - j;
        j = jend;
        continue;
      }
      const IrOp *op = rows[j].c->ir;
      int64_t F = rows[j].F;
      IrExtents ext;
      case_extents(op, F, &ext);
      float **ref = case_buffers_new(op, g, F, 12345 + (uint64_t)F);
      const char *against = "interpreter";
      char err[600] = "";
      bool have_ref = false;
      if ((double)g->ne * (double)(F ? F : 1) <= 33554432.0) {
        have_ref = case_interpret(op, g, F, ref, err, sizeof err) == 0;
        if (!have_ref) printf("FAIL %s %s F=%lld: interpreter: %s\n", rows[j].graph,
                              rows[j].op, (long long)F, err);
      } else {
        against = "default";
      }
      /* One set of output buffers for every candidate: the runtime writes
       * all of each output, and fresh gigabytes would cost page faults. */
      float **out = case_outputs_new(op, g, F, ref);
      for (int k = j; k < jend; k++) {
        Row *r = &rows[k];
        /* One call: a checked run whose outputs come back, then the timed
         * runs (one, when the first took over 50 ms). */
        double wall = rt_wall_seconds();
        RtExecOptions timed = {.warmup = 2, .reps = reps, .slow_ms = 50,
                               .sets = rotated_sets(g, F),
                               .timing = graph ? RT_TIME_GRAPH : RT_TIME_EVENTS,
                               .graph_calls = (int)graph_reps, .events_fallback = true};
        RtExecResult res;
        memset(&res, 0, sizeof res);
        ir_diag_free(&d);
        ir_diag_init(&d, NULL);
        RtStatus s = rt_exec_program(&r->c->prog, g, ext.value, (void *const *)out, &timed, &res, &d);
        if (s == RT_OK && res.graph_failed) {
          /* the capture failed, not the run: the runtime timed it with
           * events (the row's `timing` says so) */
          printf("# note: %s %s F=%lld %s: graph capture failed (%s); timed with events\n",
                 r->graph, r->op, (long long)F, r->sched, res.graph_note);
          fprintf(csv, "# note: %s %s F=%lld %s: graph capture failed; timed with events\n",
                  r->graph, r->op, (long long)F, r->sched);
        }
        double rel = 0;
        char why[600] = "";
        bool ok = s == RT_OK;
        if (ok && !have_ref && strcmp(against, "default") == 0 &&
            strcmp(r->role, "default") == 0) {
          /* The default schedule's output becomes the reference. */
          for (int ti = 0; ti < op->ntensors; ti++)
            if (op->tensors[ti]->role == IR_ROLE_OUT) {
              float *tmp = ref[ti];
              ref[ti] = out[ti];
              out[ti] = tmp;
            }
          have_ref = true;
        } else if (ok && have_ref) {
          ok = case_compare(op, g, F, ref, out, &rel, why, sizeof why);
        } else if (ok) {
          ok = false;
          snprintf(why, sizeof why, "no reference to check against");
        }
        if (s != RT_OK) snprintf(why, sizeof why, "%s", d.buf ? d.buf : "GPU run failed");
        why[strcspn(why, "\n")] = 0;
        if (!ok) failed++;
        done++;
        double frac = res.copy_gbps > 0 ? res.gbps / res.copy_gbps : 0;
        printf("%s %-16s %-12s F=%-4lld %-14s %-24s", ok ? "ok  " : "FAIL", r->graph, r->op,
               (long long)F, r->role, r->sched);
        wall = rt_wall_seconds() - wall; /* the run, its check and its timing */
        if (ok)
          printf(" %9.4f ms %7.1f GB/s %5.1f%% (%.2f s)\n", res.timing.median_ms, res.gbps,
                 100 * frac, wall);
        else
          printf(" %s (%.2f s)\n", why, wall);
        fprintf(csv, "%s,%d,%lld,%s,%lld,%s,%d,%.2f,\"%s\",%d,%s,%.3g,%.5f,%.2f,%.4f,%d,%s,%d\n",
                r->graph, g->nv, (long long)g->ne, r->op, (long long)F, r->role, r->rank,
                r->model_us, r->sched, ok, against, rel, ok ? res.timing.median_ms : 0,
                ok ? res.gbps : 0, ok ? frac : 0, res.sets,
                res.timing.calls > 0 ? "graph" : "events", res.timing.calls);
      }
      case_outputs_free(op, out);
      case_buffers_free(op, ref);
      fflush(stdout);
      fflush(csv);
      j = jend;
    }
    graph_free(g);
    printf("# graph %s done in %.1f s\n", rows[i].graph, rt_wall_seconds() - tg);
    i = gend;
  }
  fclose(csv);
  if (not_run) printf("# %d rows not run: the time budget of %.0f s was spent\n", not_run, budget);
  printf("%d run, %d failed\n", done, failed);
  ir_diag_free(&d);
  for (int k = 0; k < ncases; k++) cg_program_free(&cases[k].prog);
  free(cases);
  free(rows);
  ir_arena_free(a);
  return failed || not_run ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage();
    return 2;
  }
  if (strcmp(argv[1], "plan") && strcmp(argv[1], "run"))
    return bad_usage("%s: not a command (plan, run)", argv[1]);
  if (argc < 4) return bad_usage("%s needs OUTDIR and DATASETS", argv[1]);
  return strcmp(argv[1], "plan") == 0 ? plan(argc - 2, argv + 2) : run(argc - 2, argv + 2);
}
