/* tools/gopc/tune.c: `gopc tune`, the autotuner's command, a thin client of
 * include/gop.h (gop_tune, gop_predictor_*, gop_tune_import_csv).
 *
 *   gopc tune FILE|stdlib:OP [--op NAME] --graph G --F 64 [--budget-s 30]
 *             [--top 5] [--max N] [--db FILE] [--warmup N] [--reps N]
 *             [--orders none,rcm,...]
 *   gopc tune --train [--db FILE]
 *   gopc tune --evaluate [--db FILE]
 *   gopc tune --import-csv CSV... --gpu NAME --cc 90 [--datasets DIR] [--db FILE]
 *
 * Every argument is checked before the GPU is looked for, so a machine
 * without one reports a bad argument as such (exit 2), and then the missing
 * GPU (exit 3 or 4). Ctrl-C stops a tune after the candidate being
 * measured: what was found is stored and printed, and the exit status is
 * 130. A second Ctrl-C ends the process at once.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gopc.h"

enum { EXIT_INTERRUPTED = 130, MAX_DIMS = 32, MAX_CSV = 16, MAX_ORDERS = 8 };

static const char *usage_tune =
    "usage: gopc tune FILE [--op NAME] --graph G --F N [--dim NAME=N]... [--budget-s S]\n"
    "                 [--top K] [--max N] [--db FILE] [--warmup N] [--reps N]\n"
    "                 [--target sm_XX] [--check-edges N] [--grad X[,W]] [--dtype T]\n"
    "                 [--orders O,O,...]\n"
    "       gopc tune --train [--db FILE]\n"
    "       gopc tune --evaluate [--db FILE]\n"
    "       gopc tune --import-csv CSV... --gpu NAME --cc N [--datasets DIR] [--db FILE]\n"
    "Tunes operator NAME of FILE (or stdlib:NAME) on graph G on the GPU: ranks the\n"
    "legal points of its search space by the cost model, compiles the best ahead\n"
    "on a thread, measures each (warm-up, median of repeats), checks every\n"
    "output before it may win, stores each verified measurement in the tuning\n"
    "database, and prints the top schedules. Ctrl-C stops after the candidate\n"
    "being measured, keeping what was found (exit 130).\n"
    "  --grad X         tune the gradient operator of NAME with respect to input X\n"
    "                   instead (gopc grad); X,W: the joint one (gopc grad --joint)\n"
    "  --dtype T        tune the operator instantiated in T (f16, bf16, f32, f64;\n"
    "                   gopc run --dtype); the database keys it by T\n"
    "  --orders O,...   tune on the graph renumbered by each vertex order (none,\n"
    "                   degree, rcm, metis[:PARTS], community; up to 8), the budget\n"
    "                   shared; each order's best is stored with --db, where\n"
    "                   gopc run --reorder auto finds the fastest\n"
    "  --budget-s S     stop measuring after S seconds (default 30)\n"
    "  --top K          schedules printed (default 5)\n"
    "  --max N          measure at most N candidates (default: every legal point)\n"
    "  --db FILE        the tuning database (default: $GOP_TUNE_DB, else nothing is\n"
    "                   stored)\n"
    "  --warmup N, --reps N  runs before timing and runs timed (default 3, 20)\n"
    "  --check-edges N  graphs with more edges are checked on a proxy graph and\n"
    "                   against the first verified candidate instead of the\n"
    "                   interpreter (default 2000000; 0: always the interpreter)\n"
    "  --train          train the learned predictor (XGBoost) on the database and\n"
    "                   save it beside it as FILE.xgb\n"
    "  --evaluate       leave-one-graph-out: for each graph, train on the others and\n"
    "                   compare the predicted schedule's time with the best measured\n"
    "  --import-csv     store the measurements of GPU suite CSVs (bench/results/) in\n"
    "                   the database; graphs are read from --datasets (default\n"
    "                   $GOP_DATASETS, else ../shared/datasets) for their signatures\n"
    "Exit status: 0, 1 an error in the input, 2 a usage error, 3 no CUDA driver,\n"
    "4 no CUDA device, 130 interrupted.\n";

typedef struct TuneArgs {
  const char *file, *op, *graph, *db, *target, *gpu, *datasets, *grad, *dtype;
  char orders[MAX_ORDERS][32]; /* --orders, split */
  int norders;
  const char *orders_arg;
  GopcAssigns dims; /* --dim NAME=N and --NAME N */
  const char *csv[MAX_CSV];
  int ncsv;
  double budget_s;
  int64_t top, max, warmup, reps, cc, check_edges;
  bool train, evaluate, import, have_check_edges;
} TuneArgs;

/* --import-csv CSV...: the arguments up to the next option. */
static int import_csv(const GopcArgs *args, int argc, char **argv, int *i) {
  TuneArgs *a = args->ctx;
  a->import = true;
  while (*i + 1 < argc && argv[*i + 1][0] != '-') {
    if (a->ncsv == MAX_CSV) return gopc_usage_error(args, "--import-csv: at most 16 files");
    a->csv[a->ncsv++] = argv[++*i];
  }
  if (a->ncsv == 0) return gopc_usage_error(args, "--import-csv needs a CSV file");
  return 0;
}

/* `--F 64`: an extent by its name, for a flag the table lacks. */
static int tune_extent(const GopcArgs *args, const char *flag, char *value) {
  TuneArgs *a = args->ctx;
  if (flag[1] != '-' || !flag[2]) return gopc_usage_error(args, "unknown option %s", flag);
  if (a->dims.n == MAX_DIMS) return gopc_usage_error(args, "too many extents");
  a->dims.item[a->dims.n++] = (GopcAssign){flag, flag + 2, value, false};
  return 0;
}

/* --orders O,O,...: each one gop_vertex_order_problem accepts (none, or a
 * vertex order gop_graph_reorder takes other than auto), none twice. */
static int split_orders(const GopcArgs *args, TuneArgs *a) {
  const char *s = a->orders_arg;
  for (;;) {
    size_t n = strcspn(s, ",");
    if (n == 0) return gopc_usage_error(args, "--orders %s: an empty order", a->orders_arg);
    if (a->norders == MAX_ORDERS)
      return gopc_usage_error(args, "--orders %s: at most %d orders", a->orders_arg, MAX_ORDERS);
    if (n >= sizeof a->orders[0])
      return gopc_usage_error(args, "--orders: '%.*s' is not an order", (int)n, s);
    char *o = a->orders[a->norders];
    memcpy(o, s, n);
    o[n] = 0;
    const char *why = gop_vertex_order_problem(o);
    if (why) return gopc_usage_error(args, "--orders: %s: %s", o, why);
    for (int i = 0; i < a->norders; i++)
      if (!strcmp(a->orders[i], o))
        return gopc_usage_error(args, "--orders %s: %s named twice", a->orders_arg, o);
    a->norders++;
    if (!s[n]) return GOPC_GO_ON;
    s += n + 1;
  }
}

/* GOPC_GO_ON, or the exit status (0 after --help). */
static int parse(int argc, char **argv, TuneArgs *a) {
  a->budget_s = 30;
  a->top = 5;
  a->warmup = 3;
  a->reps = 20;
  const char *from1 = "%s %s: not a count from 1", *from0 = "%s %s: not a count from 0";
  const GopcOption options[] = {
      {"--train", GOPC_BOOL, .dest = &a->train},
      {"--evaluate", GOPC_BOOL, .dest = &a->evaluate},
      {"--import-csv", GOPC_HOOK, .hook = import_csv},
      {"--op", GOPC_STRING, .dest = &a->op},
      {"--grad", GOPC_STRING, .dest = &a->grad},
      {"--dtype", GOPC_STRING, .dest = &a->dtype},
      {"--orders", GOPC_STRING, .dest = &a->orders_arg},
      {"--graph", GOPC_STRING, .dest = &a->graph},
      {"--db", GOPC_STRING, .dest = &a->db},
      {"--target", GOPC_STRING, .dest = &a->target},
      {"--gpu", GOPC_STRING, .dest = &a->gpu},
      {"--datasets", GOPC_STRING, .dest = &a->datasets},
      {"--budget-s", GOPC_DOUBLE, .dest = &a->budget_s, .min = 0, .max = 86400,
       .bad = "%s %s: not a number of seconds from 0 to 86400"},
      {"--top", GOPC_INT, .dest = &a->top, .min = 1, .max = 100000, .bad = from1},
      {"--max", GOPC_INT, .dest = &a->max, .min = 1, .max = 100000, .bad = from1},
      {"--warmup", GOPC_INT, .dest = &a->warmup, .min = 0, .max = 100000, .bad = from0},
      {"--reps", GOPC_INT, .dest = &a->reps, .min = 1, .max = 100000, .bad = from1},
      {"--cc", GOPC_INT, .dest = &a->cc, .min = 1, .max = 100000, .bad = from1},
      {"--check-edges", GOPC_INT, .dest = &a->check_edges, .min = 0, .max = INT32_MAX,
       .bad = from0, .seen = &a->have_check_edges},
      {"--dim", GOPC_ASSIGN, .dest = &a->dims, .max = MAX_DIMS,
       .bad = "%s needs NAME=VALUE, not %s", .full = "too many extents"},
      {NULL},
  };
  GopcArgs args = {.usage = usage_tune, .prefix = "gopc: ", .options = options,
                   .args = &a->file, .max_args = 1, .other = tune_extent, .ctx = a};
  int rc = gopc_parse(&args, argc, argv);
  if (rc != GOPC_GO_ON) return rc;
  int modes = a->train + a->evaluate + a->import;
  if (modes > 1)
    return gopc_usage_error(&args, "--train, --evaluate and --import-csv exclude each other");
  if (!a->db) {
    const char *env = getenv("GOP_TUNE_DB");
    if (env && *env) a->db = env;
  }
  if (modes == 1) {
    if (a->file || a->graph || a->dims.n || a->op || a->grad || a->orders_arg)
      return gopc_usage_error(&args, "--train, --evaluate and --import-csv take no FILE, "
                                     "--op, --graph, --orders or extents");
    if (!a->db)
      return gopc_usage_error(&args, "this needs the database: --db FILE (or $GOP_TUNE_DB)");
    if (a->import && (!a->gpu || !*a->gpu || a->cc <= 0))
      return gopc_usage_error(&args, "--import-csv needs the GPU that measured: --gpu NAME "
                                     "--cc N (e.g. --gpu 'NVIDIA H100 80GB HBM3' --cc 90)");
    if (!a->import && (a->gpu || a->cc || a->datasets))
      return gopc_usage_error(&args, "--gpu, --cc and --datasets go with --import-csv");
    return GOPC_GO_ON;
  }
  if (a->gpu || a->cc || a->datasets)
    return gopc_usage_error(&args, "--gpu, --cc and --datasets go with --import-csv");
  if (!a->file) return gopc_usage_error(&args, "tune needs a file (or stdlib:NAME)");
  if (!a->graph) return gopc_usage_error(&args, "tune needs --graph G");
  return a->orders_arg ? split_orders(&args, a) : GOPC_GO_ON;
}

/* ---- Ctrl-C ---- */

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1; /* SA_RESETHAND: a second Ctrl-C ends the process */
}

/* ---- the modes ---- */

static int train(const TuneArgs *a) {
  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, stderr);
  GopTrainInfo info;
  int status = GOPC_EXIT_INPUT;
  if (gop_predictor_train(ctx, a->db, &info) == 0) {
    printf("trained on %d measurements (%d cases on %d graphs); model written to %s\n",
           info.rows, info.cases, info.graphs, info.model_path);
    status = 0;
  }
  gop_context_free(ctx);
  return status;
}

static int evaluate(const TuneArgs *a) {
  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, stderr);
  GopEvalInfo e;
  int status = GOPC_EXIT_INPUT;
  printf("leave-one-graph-out over %s: for each graph, the predictor trained on the others\n"
         "picks one of the schedules measured there; its time over the best measured\n"
         "(geometric mean over the graph's cases; 1.000x is the best)\n",
         a->db);
  if (gop_predictor_evaluate(ctx, a->db, stdout, &e) == 0) {
    printf("all %d cases on %d graphs: predictor %.3fx (median %.3fx, worst %.3fx, %d of %d "
           "within 1.10x); cost model %.3fx",
           e.cases, e.graphs, e.geomean, e.median, e.worst, e.within_10pct, e.cases,
           e.model_geomean);
    if (e.default_cases) printf("; default schedule %.3fx (%d cases)", e.default_geomean,
                                e.default_cases);
    printf("\n");
    status = 0;
  }
  gop_context_free(ctx);
  return status;
}

static int import(const TuneArgs *a) {
  const char *datasets = a->datasets;
  if (!datasets) datasets = getenv("GOP_DATASETS");
  if (!datasets || !*datasets) datasets = "../shared/datasets";
  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, stderr);
  int status = 0;
  for (int i = 0; i < a->ncsv && status == 0; i++) {
    GopImportInfo info;
    if (gop_tune_import_csv(ctx, a->csv[i], a->db, datasets, a->gpu, (int)a->cc, &info) != 0) {
      status = GOPC_EXIT_INPUT;
      break;
    }
    printf("%s: %d measurements of %d graphs stored in %s; left out: %d 'default' rows "
           "(a named point under another name), %d failed checks, %d without a time, "
           "%d schedules refused today, %d cut-off lines\n",
           a->csv[i], info.imported, info.graphs, a->db, info.skipped_default,
           info.skipped_wrong, info.skipped_no_time, info.skipped_refused, info.truncated);
  }
  gop_context_free(ctx);
  return status;
}

/* One tune of `op` on `g` with the extents a->dims names at `values` (the
 * budget divided by `shares`): prints its table, sets *best_ms and best (0
 * and "" when nothing was verified) and *stopped after Ctrl-C. 0, or the
 * exit status. */
static int tune_one(GopContext *ctx, const TuneArgs *a, const int64_t *values, GopOp *op,
                    GopGraph *g, int shares, bool *stopped, double *best_ms, char best[128]) {
  GopRun *r = gop_run_new(ctx, op, g);
  if (!r) return GOPC_EXIT_INPUT;
  for (int i = 0; i < a->dims.n; i++)
    if (gop_run_set_extent(r, a->dims.item[i].name, values[i]) != 0) return GOPC_EXIT_USAGE;
  GopTuneOptions o = {.budget_s = a->budget_s / shares,
                      .max_candidates = (int)a->max,
                      .warmup = (int)a->warmup,
                      .reps = (int)a->reps,
                      .db_path = a->db,
                      .target = a->target,
                      .check_edges = a->have_check_edges ? (a->check_edges ? a->check_edges : -1)
                                                         : 0,
                      .stop = &interrupted,
                      .progress = gop_tune_progress_print,
                      .progress_ctx = stderr};
  GopTuneReport rep;
  int rc = gop_tune(r, &o, &rep);
  if (rc != 0 && rep.gpu_status) return rep.gpu_status; /* 3 or 4: said already */
  if (rep.tried > 0 || rc == 0) {
    GopGraphInfo gi;
    gop_graph_info(g, &gi);
    printf("%s on %s (|V| %" PRId64 ", |E| %" PRId64 ")%s%s\n", gop_op_name(op), a->graph,
           gi.num_vertices, gi.num_edges, a->db ? ", database " : "", a->db ? a->db : "");
    gop_tune_print(&rep, (int)a->top, stdout);
  }
  *stopped = rep.interrupted;
  if (rep.nentries > 0 && rep.entries[0].status == GOP_TUNE_OK) {
    *best_ms = rep.entries[0].median_ms;
    snprintf(best, 128, "%s", rep.entries[0].schedule);
  }
  return rc != 0 ? GOPC_EXIT_INPUT : 0;
}

/* --orders: each order's best, fastest first, against the graph's own. */
static void print_orders(const TuneArgs *a, const double *best_ms, char best[][128]) {
  int idx[MAX_ORDERS], n = 0;
  double own = 0;
  for (int k = 0; k < a->norders; k++) {
    if (!strcmp(a->orders[k], "none")) own = best_ms[k];
    if (best_ms[k] <= 0) continue;
    int j = n++;
    while (j > 0 && best_ms[idx[j - 1]] > best_ms[k]) idx[j] = idx[j - 1], j--;
    idx[j] = k;
  }
  printf("vertex orders, fastest first:\n");
  for (int j = 0; j < n; j++) {
    int k = idx[j];
    printf("  %-14s %.4f ms  %s", a->orders[k], best_ms[k], best[k]);
    if (own > 0 && strcmp(a->orders[k], "none")) printf("  (%.2fx the graph's own order)",
                                                        own / best_ms[k]);
    printf("\n");
  }
  for (int k = 0; k < a->norders; k++)
    if (best_ms[k] <= 0) printf("  %-14s nothing verified\n", a->orders[k]);
  if (n && a->db)
    printf("stored in %s: gopc run --reorder auto --db %s takes %s\n", a->db, a->db,
           a->orders[idx[0]]);
}

static int tune(const TuneArgs *a) {
  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, stderr);
  int status = GOPC_EXIT_INPUT;
  const char *op_name = a->op;
  GopModule *m;
  if (strncmp(a->file, "stdlib:", 7) == 0) {
    m = gop_stdlib(ctx);
    if (a->file[7]) {
      if (op_name && strcmp(op_name, a->file + 7) != 0) {
        fprintf(stderr, "gopc: %s names operator %s but --op says %s\n", a->file, a->file + 7,
                op_name);
        goto done;
      }
      op_name = a->file + 7;
    }
  } else {
    m = gop_compile_file(ctx, a->file);
  }
  if (!m) goto done;
  if (!op_name && gop_module_num_ops(m) != 1) {
    fprintf(stderr, "gopc: error: %s has %d operators: choose one with --op NAME\n", a->file,
            gop_module_num_ops(m));
    status = GOPC_EXIT_USAGE;
    goto done;
  }
  GopOp *op = op_name ? gop_module_find_op(m, op_name) : gop_module_op(m, 0);
  if (!op) goto done;
  if (a->grad) {
    GopModule *gm = strchr(a->grad, ',') ? gop_grad_joint(op, a->grad) : gop_grad(op, a->grad);
    if (!gm) goto done;
    op = gop_module_op(gm, 0);
  }
  if (a->dtype && !(op = gop_op_retype(op, a->dtype))) {
    status = GOPC_EXIT_USAGE;
    goto done;
  }
  GopGraph *g = gop_graph_open(ctx, a->graph);
  if (!g) goto done;
  int64_t values[MAX_DIMS]; /* read once, before any order */
  for (int i = 0; i < a->dims.n; i++) {
    if (!gopc_parse_i64(a->dims.item[i].value, &values[i])) {
      fprintf(stderr, "gopc: error: --%s %s: not an integer\n", a->dims.item[i].name,
              a->dims.item[i].value);
      status = GOPC_EXIT_USAGE;
      goto done;
    }
  }
  /* Without --orders, one tune on the graph as it is; with it, one per
   * order on the graph so renumbered, the budget shared. */
  int norders = a->norders ? a->norders : 1;
  double best_ms[MAX_ORDERS] = {0};
  char best[MAX_ORDERS][128] = {{0}};
  struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = SA_RESETHAND}, old;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);
  bool stopped = false;
  status = 0;
  GopGraphInfo gi;
  gop_graph_info(g, &gi);
  for (int k = 0; k < norders && !stopped && status == 0; k++) {
    const char *order = a->norders ? a->orders[k] : NULL;
    GopGraph *gk = g;
    if (order && strcmp(order, "none") == 0 && gi.csr_edges) {
      printf("order none: the graph's own, its edges already in CSR order\n");
    } else if (order) { /* none too: its edges numbered in CSR order, as every order's */
      if (!(gk = gop_graph_reorder(ctx, g, order))) {
        status = GOPC_EXIT_INPUT;
        break;
      }
      if (strcmp(order, "none") == 0)
        printf("order none: the graph's own, its edges numbered in CSR order in %.3f s\n",
               gop_graph_reorder_seconds(gk));
      else
        printf("order %s: renumbered in %.3f s\n", order, gop_graph_reorder_seconds(gk));
    }
    status = tune_one(ctx, a, values, op, gk, norders, &stopped, &best_ms[k], best[k]);
    if (status == 0 && order && best_ms[k] > 0 && a->db &&
        gop_tune_store_order(op, g, gopc_row_width(&a->dims), a->db, order, best[k],
                             best_ms[k]) != 0)
      status = GOPC_EXIT_INPUT;
  }
  sigaction(SIGINT, &old, NULL);
  if (a->norders && status == 0) print_orders(a, best_ms, best);
  if (status == 0 && stopped) status = EXIT_INTERRUPTED;
done:
  gop_context_free(ctx);
  return status;
}

int gopc_tune(int argc, char **argv) {
  TuneArgs a = {0};
  int rc = parse(argc, argv, &a);
  if (rc != GOPC_GO_ON) return rc;
  if (a.train) return train(&a);
  if (a.evaluate) return evaluate(&a);
  if (a.import) return import(&a);
  return tune(&a);
}
