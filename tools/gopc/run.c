/* tools/gopc/run.c: `gopc run`, an operator on a graph (the GPU when there
 * is one, else the reference interpreter), and `gopc graph`, a graph's
 * statistics. Inputs are read from .npy files (--in) or made by a seeded
 * generator; outputs are summed and may be written (--out). Without
 * --schedule, the schedule comes from the tuning database, the learned
 * predictor (the database's or the built-in one) or the cost model, and a
 * line says which.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gopc.h"

static const char *usage_run =
    "usage: gopc run FILE [--op NAME] --graph G [--F N] [--dim NAME=N]...\n"
    "                [--in NAME=x.npy]... [--out NAME=y.npy]... [--seed S]\n"
    "Runs operator NAME on graph G: on the GPU when there is one, else on the\n"
    "reference interpreter, which runs the operator as scheduled and lowered\n"
    "(a schedule gopc emit refuses is refused here too).\n"
    "  --graph G        a Matrix Market (.mtx) or SNAP edge list file, plain\n"
    "                   or gzip'ed, or a generator: rmat:SCALE:EDGEFACTOR[:SEED]\n"
    "                   (Graph500 R-MAT, skewed), grid:WxH (2-D mesh),\n"
    "                   ring:N:D (u -> u+1..u+D mod N), powerlaw:N:D:G[:SEED] or\n"
    "                   community:N:D:K:MIX[:SEED] (see gopc graph --help)\n"
    "  --F N            the feature width F; any extent of the operator can be\n"
    "                   set as --NAME N or --dim NAME=N\n"
    "  --in NAME=PATH   read input NAME from a float32 .npy file, shape\n"
    "                   [|V|, F...] for src/dst tensors, [|E|, F...] for edge\n"
    "                   tensors (in the file's edge order); inputs not given\n"
    "                   are filled with uniform random numbers in [-1, 1)\n"
    "  --out NAME=PATH  write output NAME to a float32 .npy file\n"
    "  --seed S         seed of the random inputs (default 1)\n"
    "  --dtype T        instantiate the operator in T (f16, bf16, f32, f64): its\n"
    "                   f32 tensors take that type (docs/language.md, Types);\n"
    "                   --in files must then hold T (bf16: '<V2' bits)\n"
    "  --schedule S     the schedule (see gopc emit --help); default: the fastest\n"
    "                   measured in the tuning database (--db), else the learned\n"
    "                   predictor's choice (DB.xgb, gopc tune --train, else the\n"
    "                   model built into gop; GOP_PREDICTOR=off: none), else the\n"
    "                   cost model's best legal point; a line says which\n"
    "  --db FILE        the tuning database (default: $GOP_TUNE_DB, else none)\n"
    "  --target sm_XX   the GPU architecture to compile for\n"
    "  --interp         run on the reference interpreter even with a GPU\n"
    "  --gpu            require the GPU (exit 3 or 4 when there is none)\n"
    "  --check          compare the outputs with the interpreter (f32 sums\n"
    "                   within 1e-5 relative L2 beyond 2 sqrt(n) 2^-24 sum|t|\n"
    "                   for a sum of n terms t, max/min exactly, no NaN)\n"
    "  --grad X         run the gradient operator of NAME with respect to its\n"
    "                   input X instead (gopc grad; its tensors are named as\n"
    "                   gopc grad prints them: dY, dX ...); --grad X,W runs\n"
    "                   the joint one (gopc grad --joint)\n"
    "  --pack X.pack    run a kernel pack made by gopc pack (needs no LLVM;\n"
    "                   FILE and --op are then left out); its index width must be\n"
    "                   the graph's: 64-bit (gopc pack --index64) past 2^31 - 2^24\n"
    "                   edges or with GOP_INDEX64=1, else 32-bit\n"
    "  --warmup N, --reps N  GPU timing: runs before, and runs measured\n"
    "                   (default 3 and 20; the median is reported)\n"
    "  --reorder M      renumber the graph's vertices first (none, degree, rcm,\n"
    "                   metis[:PARTS], community, auto; docs/reordering.md):\n"
    "                   inputs and outputs stay in the graph's own order; auto\n"
    "                   takes the order the tuning database measured fastest\n"
    "                   for the operator (gopc tune --orders), else GNNAdvisor's\n"
    "                   AES rule\n"
    "With a GPU, prints the median time, the achieved GB/s over the fewest\n"
    "bytes the operator must move, and that as a fraction of the measured\n"
    "device-to-device copy bandwidth; without one, runs on the interpreter.\n";


static const char *usage_graph =
    "usage: gopc graph G [--reorder METHOD] [--partition P [--method M]] [-o FILE.mtx]\n"
    "Prints |V|, |E|, degree statistics, isolated vertices, the average edge\n"
    "span (AES) and the block locality of a graph file or generator spec (see\n"
    "gopc run --help).\n"
    "  --reorder METHOD  renumber the vertices and print the statistics after:\n"
    "                    none, degree (in-degree descending), rcm (reverse\n"
    "                    Cuthill-McKee), metis[:PARTS] (METIS k-way parts,\n"
    "                    default |V|/1024), community (Louvain-level\n"
    "                    communities by size, BFS within), auto (GNNAdvisor's\n"
    "                    AES rule: community or none); see docs/reordering.md\n"
    "  -o FILE           write the (reordered) graph: FILE.gopg in gop's binary\n"
    "                    format (memory-mapped when read; docs/graph-format.md),\n"
    "                    any other name as Matrix Market\n"
    "  --partition P     split the destinations over P parts (GPUs) and print\n"
    "                    the edge cut, each part's vertices, in-edges and halo\n"
    "                    (the remote source rows it reads), and the balance\n"
    "  --method M        edges (contiguous ranges balanced by in-edges, the\n"
    "                    default) or metis (METIS k-way); docs/multigpu.md\n"
    "Locality: the fraction of in-edges, in CSR order, whose source lies in a\n"
    "32-vertex block already gathered for one of the 32 previous destinations.\n"
    "Generators (any G of gopc run --graph):\n"
    "  rmat:SCALE:EDGEFACTOR[:SEED]  Graph500 R-MAT: 2^SCALE vertices, EDGEFACTOR\n"
    "                   arcs sampled per vertex, self-loops and duplicates removed\n"
    "  grid:WxH         a W x H 4-neighbour mesh, both directions\n"
    "  ring:N:D         N vertices (2 .. 2^31-1), vertex u has arcs to u+1 .. u+D\n"
    "                   mod N (1 <= D < N), edge id u*D + j-1 for u -> u+j: so the\n"
    "                   in-edges of v come from v-D .. v-1 mod N, and a sum over\n"
    "                   them has a closed form. Written straight into CSR and CSC by\n"
    "                   all cores, no sort: ring:67108864:33 (2.2 billion edges,\n"
    "                   past 2^31, about 71 GB of host memory) takes seconds; the\n"
    "                   way to test 64-bit indices (docs/index64.md)\n"
    "  powerlaw:N:D:G[:SEED]  Chung-Lu: N vertices (2 .. 2^26), N*D arcs whose ends\n"
    "                   are drawn with weight (i+1)^(-1/(G/10 - 1)): degrees follow a\n"
    "                   power law of exponent G/10 (G in 21..50); labels permuted\n"
    "  community:N:D:K:MIX[:SEED]  K communities of consecutive ids; N*D arcs from\n"
    "                   uniform sources, MIX percent (0..100) to any vertex, the\n"
    "                   rest inside the source's community\n"
    "  (sampled generators drop self-loops and repeated arcs)\n"
    "Graphs hold 32 bytes of host memory per edge (GOP_MAX_HOST_BYTES limits it).\n";


/* ---- run ---- */

/* splitmix64: a small, good, seedable generator for reproducible inputs. */
static uint64_t next_random(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Uniform numbers in [-1, 1), rounded to `dtype` (f32: the same floats as
 * ever, whatever the dtype support). */
static void fill_random(const char *dtype, void *x, int64_t n, uint64_t seed) {
  uint64_t state = seed;
  for (int64_t i = 0; i < n; i++)
    gop_dtype_put(dtype, x, i,
                  (float)((double)(next_random(&state) >> 11) * 0x1.0p-53 * 2.0 - 1.0));
}

static void format_shape(char *buf, size_t size, int rank, const int64_t *shape) {
  int n = snprintf(buf, size, "[");
  for (int k = 0; k < rank && n < (int)size; k++)
    n += snprintf(buf + n, size - (size_t)n, "%s%" PRId64, k ? ", " : "", shape[k]);
  if (n < (int)size) snprintf(buf + n, size - (size_t)n, "]");
}

typedef struct RunOpts {
  const char *file, *op_name, *graph, *pack, *db, *grad, *reorder, *dtype;
  GopcAssigns dims, ins, outs; /* --dim and --NAME, --in, --out */
  uint64_t seed;
  GopCompileOptions compile;
  int device; /* a GopDevice */
  bool check;
  int64_t warmup, reps;
} RunOpts;

/* `--F 64`: an extent by its name, for a flag the table lacks. */
static int run_extent(const GopcArgs *a, const char *flag, char *value) {
  RunOpts *o = a->ctx;
  if (flag[1] != '-' || !flag[2]) return gopc_usage_error(a, "unknown option %s", flag);
  if (o->dims.n >= GOPC_MAX_ASSIGN) return gopc_usage_error(a, "too many extents");
  o->dims.item[o->dims.n++] = (GopcAssign){flag, flag + 2, value, false};
  return 0;
}

static int parse_run_args(int argc, char **argv, RunOpts *o) {
  int64_t seed = 1;
  o->warmup = 3;
  o->reps = 20;
  const char *exclusive = "--interp and --gpu exclude each other";
  const GopcOption options[] = {
      {"--interp", GOPC_CONST, .dest = &o->device, .value = GOP_DEVICE_INTERP, .bad = exclusive},
      {"--gpu", GOPC_CONST, .dest = &o->device, .value = GOP_DEVICE_GPU, .bad = exclusive},
      {"--check", GOPC_BOOL, .dest = &o->check},
      {"--op", GOPC_STRING, .dest = &o->op_name},
      {"--schedule", GOPC_STRING, .dest = &o->compile.schedule},
      {"--target", GOPC_STRING, .dest = &o->compile.target},
      {"--db", GOPC_STRING, .dest = &o->db},
      {"--pack", GOPC_STRING, .dest = &o->pack},
      {"--grad", GOPC_STRING, .dest = &o->grad},
      {"--graph", GOPC_STRING, .dest = &o->graph},
      {"--dtype", GOPC_STRING, .dest = &o->dtype},
      {"--reorder", GOPC_STRING, .dest = &o->reorder},
      {"--warmup", GOPC_INT, .dest = &o->warmup, .min = 0, .max = 100000,
       .bad = "%s: not a count from 0 to 100000"},
      {"--reps", GOPC_INT, .dest = &o->reps, .min = 0, .max = 100000,
       .bad = "%s: not a count from 0 to 100000"},
      {"--seed", GOPC_INT, .dest = &seed, .min = 0, .max = INT64_MAX,
       .bad = "%s %s: not a non-negative integer"},
      {"--in", GOPC_ASSIGN, .dest = &o->ins, .max = GOPC_MAX_ASSIGN,
       .bad = "%s needs NAME=VALUE", .full = "too many %s options"},
      {"--out", GOPC_ASSIGN, .dest = &o->outs, .max = GOPC_MAX_ASSIGN,
       .bad = "%s needs NAME=VALUE", .full = "too many %s options"},
      {"--dim", GOPC_ASSIGN, .dest = &o->dims, .max = GOPC_MAX_ASSIGN,
       .bad = "%s needs NAME=VALUE", .full = "too many %s options"},
      {NULL},
  };
  GopcArgs args = {.usage = usage_run, .prefix = "gopc: ", .options = options,
                   .args = &o->file, .max_args = 1, .other = run_extent, .ctx = o};
  int rc = gopc_parse(&args, argc, argv);
  if (rc != GOPC_GO_ON) return rc;
  o->seed = (uint64_t)seed;
  if (o->pack && (o->file || o->op_name || o->compile.schedule || o->compile.target))
    return gopc_usage_error(&args,
                            "--pack %s: a kernel pack is already compiled: give no FILE, "
                            "--op, --schedule or --target with it", o->pack);
  if (o->pack && o->dtype)
    return gopc_usage_error(&args, "--dtype %s: a kernel pack is compiled for its types; "
                            "pack the instance instead", o->dtype);
  if (o->pack && o->grad)
    return gopc_usage_error(&args, "--grad %s: a kernel pack holds one compiled operator; "
                            "pack the gradient instead (gopc grad)", o->grad);
  if (o->grad && !*o->grad)
    return gopc_usage_error(&args, "--grad needs an input name, or several (X,W)");
  if (o->pack && o->device == GOP_DEVICE_INTERP)
    return gopc_usage_error(&args, "--pack %s runs on the GPU: --interp excludes it", o->pack);
  if (!o->file && !o->pack)
    return gopc_usage_error(&args, "run needs a file (or stdlib:NAME, or --pack X.pack)");
  if (!o->graph) return gopc_usage_error(&args, "run needs --graph G");
  const char *why = o->reorder ? gop_reorder_method_problem(o->reorder) : NULL;
  if (why) return gopc_usage_error(&args, "--reorder %s: %s", o->reorder, why);
  return GOPC_GO_ON;
}

/* Prints `--in X=path` style context for an error about an option. */
static void option_error(const GopcAssign *as, const char *fmt, const char *detail) {
  fprintf(stderr, "gopc: error: %s %s=%s: ", as->flag, as->name, as->value);
  fprintf(stderr, fmt, detail);
  fputc('\n', stderr);
}

static const GopcAssign *find_assign(GopcAssigns *list, const char *name) {
  for (int i = 0; i < list->n; i++)
    if (strcmp(list->item[i].name, name) == 0) {
      list->item[i].used = true;
      return &list->item[i];
    }
  return NULL;
}

/* The tuning database: --db, else $GOP_TUNE_DB, else none. */
static const char *run_db(const RunOpts *o) {
  const char *db = o->db ? o->db : getenv("GOP_TUNE_DB");
  return db && *db ? db : NULL;
}

/* The graph of --graph, reordered by --reorder (with a line that says
 * how); NULL after the diagnostics. With --reorder auto and `op` (not a
 * pack's), the order the tuning database measured fastest for it (gopc
 * tune --orders) comes first, GNNAdvisor's AES rule where it has none. */
static GopGraph *open_graph(GopContext *ctx, const RunOpts *o, const GopOp *op) {
  GopGraph *g = gop_graph_open(ctx, o->graph);
  if (!g || !o->reorder) return g;
  const char *method = o->reorder;
  GopOrderChoice oc; /* method may point into it */
  if (op && strcmp(method, "auto") == 0 && run_db(o)) {
    int found = gop_choose_order(op, g, gopc_row_width(&o->dims), run_db(o), &oc);
    if (found < 0) return NULL;
    if (found) {
      printf("vertex order: %s, the fastest of %d measured in the tuning database (%.4f ms",
             strcmp(oc.order, "none") ? oc.order : "the graph's own", oc.orders, oc.time_ms);
      if (oc.own_ms > 0 && strcmp(oc.order, "none")) printf("; its own order %.4f ms", oc.own_ms);
      printf(")\n");
      method = oc.order; /* none too: edge ids in CSR order, as it was measured */
    }
  }
  GopGraph *r = gop_graph_reorder(ctx, g, method);
  if (!r) return NULL;
  GopGraphInfo a, b;
  gop_graph_info(g, &a);
  gop_graph_info(r, &b);
  printf("reordered by %s in %.3f s: AES %.1f -> %.1f, locality %.3f -> %.3f\n",
         gop_graph_order(r), gop_graph_reorder_seconds(r), a.aes, b.aes, a.locality,
         b.locality);
  return r;
}

/* Makes the run: the operator of FILE/--op, or the one a pack carries. */
static GopRun *make_run(GopContext *ctx, RunOpts *o, int *status) {
  *status = GOPC_EXIT_INPUT;
  if (o->pack) {
    GopGraph *g = open_graph(ctx, o, NULL);
    GopRun *r = g ? gop_run_from_pack(ctx, o->pack, g) : NULL;
    if (r) gop_run_set_device(r, GOP_DEVICE_GPU);
    return r;
  }
  const char *op_name = o->op_name;
  GopModule *m = gopc_load_module(ctx, o->file, &op_name);
  if (!m) return NULL;
  if (!op_name) {
    if (gop_module_num_ops(m) != 1) {
      fprintf(stderr, "gopc: error: %s has %d operators: choose one with --op NAME\n",
              o->file, gop_module_num_ops(m));
      *status = GOPC_EXIT_USAGE;
      return NULL;
    }
    op_name = gop_op_name(gop_module_op(m, 0));
  }
  GopOp *op = gop_module_find_op(m, op_name);
  if (!op) return NULL;
  if (o->grad) {
    GopModule *gm = strchr(o->grad, ',') ? gop_grad_joint(op, o->grad) : gop_grad(op, o->grad);
    if (!gm) return NULL;
    op = gop_module_op(gm, 0);
  }
  if (o->dtype && !(op = gop_op_retype(op, o->dtype))) {
    *status = GOPC_EXIT_USAGE;
    return NULL;
  }
  GopGraph *g = open_graph(ctx, o, op);
  if (!g) return NULL;
  GopRun *r = gop_run_new(ctx, op, g);
  if (!r) return NULL;
  gop_run_set_device(r, (GopDevice)o->device);
  if (gop_run_set_compile(r, &o->compile) != 0) {
    *status = GOPC_EXIT_USAGE;
    return NULL;
  }
  return r;
}

/* Where the schedule came from, and the choice's note (for the default
 * mapping the note is the reason, printed as the schedule line). */
static void print_choice(const GopScheduleChoice *c) {
  if (c->source == GOP_SCHEDULE_NONE) {
    printf("  schedule: %s\n", c->note[0] ? c->note
                                          : "the default mapping (no named schedule applies)");
    return;
  }
  printf("  schedule: %s (from the %s)\n", c->schedule, gop_schedule_source_name(c->source));
  if (c->note[0]) printf("  note: %s\n", c->note);
}

/* `chosen`: where the schedule came from when none was given, or NULL. */
static void print_run_summary(GopRun *r, const char *graph, const char *op_name,
                              const GopScheduleChoice *chosen) {
  const GopRunStats *st = gop_run_stats(r);
  GopGraphInfo info;
  gop_graph_info(gop_run_graph(r), &info);
  if (!st->on_gpu) {
    printf("%s on %s (|V| %" PRId64 ", |E| %" PRId64 "): interpreter, schedule %s, %.3f s\n",
           op_name, graph, info.num_vertices, info.num_edges, st->schedule, gop_run_seconds(r));
    if (chosen) print_choice(chosen);
    if (st->note[0]) printf("  note: %s\n", st->note);
    return;
  }
  printf("%s on %s (|V| %" PRId64 ", |E| %" PRId64 "): %s, %s, schedule %s\n", op_name, graph,
         info.num_vertices, info.num_edges, st->device, st->target, st->schedule);
  if (chosen) print_choice(chosen);
  if (st->median_ms > 0) {
    printf("  time %.4f ms (median, min %.4f), %.1f GB/s over %.1f MB, %.1f%% of the "
           "fewest-bytes bound (copy %.0f GB/s)\n",
           st->median_ms, st->min_ms, st->gbps, (double)st->fewest_bytes / 1e6,
           100 * st->bound_fraction, st->copy_gbps);
    if (st->timed_calls > 0)
      printf("  timed by replaying a CUDA graph of %d calls\n", st->timed_calls);
  }
  if (st->note[0]) printf("  note: %s\n", st->note);
  if (st->compile.llvm_build_ms > 0)
    printf("  compiled in %.1f ms (schedule %.2f, lower %.2f, LLVM IR %.2f, O3 %.2f, PTX %.2f)\n",
           st->compile.schedule_ms + st->compile.lower_ms + st->compile.llvm_build_ms +
               st->compile.llvm_opt_ms + st->compile.ptx_emit_ms,
           st->compile.schedule_ms, st->compile.lower_ms, st->compile.llvm_build_ms,
           st->compile.llvm_opt_ms, st->compile.ptx_emit_ms);
  gop_run_print_memory(r, stdout);
  gop_run_print_kernels(r, stdout);
}

static int run_operator(GopContext *ctx, RunOpts *o) {
  int status;
  GopRun *r = make_run(ctx, o, &status);
  if (!r) return status;
  const char *op_name = gop_op_name(gop_run_op(r));
  gop_run_set_timing(r, (int)o->warmup, (int)o->reps);

  for (int i = 0; i < o->dims.n; i++) {
    int64_t v;
    if (!gopc_parse_i64(o->dims.item[i].value, &v)) {
      fprintf(stderr, "gopc: error: %s %s: not an integer\n", o->dims.item[i].flag,
              o->dims.item[i].value);
      return GOPC_EXIT_USAGE;
    }
    if (gop_run_set_extent(r, o->dims.item[i].name, v) != 0) return GOPC_EXIT_USAGE;
  }

  /* No schedule given: the tuning database's, else a predictor's, else the
   * cost model's. */
  GopScheduleChoice choice, *chosen = NULL;
  if (!o->pack && !o->compile.schedule) {
    int rc = gop_choose_schedule(gop_run_op(r), gop_run_graph(r), gopc_row_width(&o->dims),
                                 run_db(o), &choice);
    if (rc < 0) return GOPC_EXIT_INPUT;
    chosen = &choice;
    if (rc == 0) { /* GOP_NO_SCHEDULE: no candidate, the default mapping */
      GopCompileOptions co = o->compile;
      co.schedule = choice.schedule;
      if (gop_run_set_compile(r, &co) != 0) return GOPC_EXIT_INPUT;
    }
  }

  int n = gop_run_num_tensors(r);
  void **data = calloc((size_t)n, sizeof *data);
  int64_t *numel = calloc((size_t)n, sizeof *numel);
  status = GOPC_EXIT_INPUT;
  for (int i = 0; i < n; i++) {
    const char *name = gop_run_tensor_name(r, i);
    bool out = gop_run_tensor_is_output(r, i);
    const GopcAssign *as = find_assign(out ? &o->outs : &o->ins, name);
    int64_t shape[8];
    int rank = gop_run_tensor_shape(r, i, shape);
    if (rank < 0) { /* names the missing extent */
      gop_run_bind(r, name, NULL, 0);
      status = GOPC_EXIT_USAGE;
      goto done;
    }
    numel[i] = 1;
    for (int k = 0; k < rank; k++) numel[i] *= shape[k];
    const char *dt = gop_run_tensor_dtype(r, i);
    if (!out && as) {
      GopTypedArray arr;
      if (gop_typed_array_read(ctx, as->value, &arr) != 0) goto done;
      if (strcmp(arr.dtype, dt) != 0 && !(strcmp(dt, "f32") == 0 && !strcmp(arr.dtype, "f64"))) {
        char msg[300];
        snprintf(msg, sizeof msg, "the file holds %s but %s is %s in operator %s%s",
                 arr.dtype, name, dt, op_name,
                 o->dtype ? "" : " (instantiate it in that type with --dtype)");
        option_error(as, "%s", msg);
        gop_typed_array_free(&arr);
        status = GOPC_EXIT_USAGE;
        goto done;
      }
      bool same = arr.ndim == rank;
      for (int k = 0; same && k < rank; k++) same = arr.shape[k] == shape[k];
      if (!same) {
        char want[128], got[128], msg[300];
        format_shape(want, sizeof want, rank, shape);
        format_shape(got, sizeof got, arr.ndim, arr.shape);
        snprintf(msg, sizeof msg, "shape %s does not match %s's %s on this graph", got,
                 name, want);
        option_error(as, "%s", msg);
        gop_typed_array_free(&arr);
        status = GOPC_EXIT_USAGE;
        goto done;
      }
      if (strcmp(arr.dtype, dt) != 0) { /* f64 data for an f32 tensor */
        float *f = malloc(sizeof(float) * (size_t)(numel[i] ? numel[i] : 1));
        for (int64_t k = 0; f && k < numel[i]; k++)
          f[k] = (float)gop_dtype_get(arr.dtype, arr.data, k);
        gop_typed_array_free(&arr);
        arr.data = f;
        if (!f) goto done;
      }
      data[i] = arr.data;
    } else {
      data[i] = malloc((size_t)gop_dtype_bytes(dt) * (size_t)(numel[i] ? numel[i] : 1));
      if (!data[i]) {
        fprintf(stderr, "gopc: error: out of memory for %s (%" PRId64 " elements)\n", name,
                numel[i]);
        goto done;
      }
      if (!out) fill_random(dt, data[i], numel[i], o->seed * 1000003u + (uint64_t)i);
    }
    if (gop_run_bind(r, name, data[i], numel[i]) != 0) goto done;
  }
  for (int k = 0; k < o->ins.n; k++)
    if (!o->ins.item[k].used) {
      option_error(&o->ins.item[k], "%s", "the operator has no input of that name");
      status = GOPC_EXIT_USAGE;
      goto done;
    }
  for (int k = 0; k < o->outs.n; k++)
    if (!o->outs.item[k].used) {
      option_error(&o->outs.item[k], "%s", "the operator has no output of that name");
      status = GOPC_EXIT_USAGE;
      goto done;
    }

  if (gop_run_exec(r) != 0) {
    int gpu = gop_run_stats(r)->gpu_status;
    if (gpu == 3 || gpu == 4) status = gpu;
    goto done;
  }
  print_run_summary(r, o->graph, op_name, chosen);
  if (o->check) {
    double worst;
    int rc = gop_run_check(r, &worst);
    if (rc != 0) goto done;
    printf("  check: every output agrees with the interpreter (relative L2 %.2g)\n", worst);
  }
  for (int i = 0; i < n; i++) {
    if (!gop_run_tensor_is_output(r, i)) continue;
    const char *name = gop_run_tensor_name(r, i);
    int64_t shape[8];
    int rank = gop_run_tensor_shape(r, i, shape);
    double sum = 0, sq = 0;
    const char *dt = gop_run_tensor_dtype(r, i);
    for (int64_t k = 0; k < numel[i]; k++) {
      double x = gop_dtype_get(dt, data[i], k);
      sum += x;
      sq += x * x;
    }
    char sh[128];
    format_shape(sh, sizeof sh, rank, shape);
    printf("  %s %s: sum %.6g, L2 norm %.6g", name, sh, sum, sqrt(sq));
    const GopcAssign *as = find_assign(&o->outs, name);
    if (as) {
      GopTypedArray arr = {.ndim = rank, .dtype = dt, .data = data[i]};
      for (int k = 0; k < rank; k++) arr.shape[k] = shape[k];
      if (gop_typed_array_write(ctx, as->value, &arr) != 0) {
        putchar('\n');
        goto done;
      }
      printf(", written to %s", as->value);
    }
    putchar('\n');
  }
  status = 0;
done:
  for (int i = 0; i < n; i++) free(data[i]);
  free(data);
  free(numel);
  return status;
}


int gopc_run(int argc, char **argv) {
  RunOpts o = {0};
  int rc = parse_run_args(argc, argv, &o);
  if (rc != GOPC_GO_ON) return rc;
  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, stderr);
  int status = run_operator(ctx, &o);
  gop_context_free(ctx);
  return status;
}

/* ---- graph ---- */

static void print_graph(const GopGraph *g) {
  GopGraphInfo info;
  gop_graph_info(g, &info);
  gop_graph_print(g, stdout);
  printf("  locality %.3f (in-edges whose 32-vertex source block was gathered for one "
         "of the 32 previous destinations)\n", info.locality);
  printf("  edge ids %s\n", info.csr_edges ? "in CSR order: edge tensors are read with no "
                                              "edge-id load (docs/gpu-ir.md)"
                                            : "in input order (--reorder none numbers them in "
                                              "CSR order; docs/gpu-ir.md)");
}

int gopc_graph(int argc, char **argv) {
  const char *graph = NULL, *reorder = NULL, *out = NULL, *method = NULL;
  int64_t parts = 0;
  const GopcOption options[] = {
      {"--reorder", GOPC_STRING, .dest = &reorder},
      {"--partition", GOPC_INT, .dest = &parts, .min = 1, .max = 1024},
      {"--method", GOPC_STRING, .dest = &method},
      {"-o", GOPC_STRING, .dest = &out},
      {NULL},
  };
  int n = 0;
  GopcArgs args = {.usage = usage_graph, .prefix = "gopc: ", .options = options,
                   .args = &graph, .max_args = 1, .nargs = &n};
  int status = gopc_parse(&args, argc, argv);
  if (status != GOPC_GO_ON) return status;
  if (n != 1) return gopc_usage_error(&args, "graph needs exactly one graph");
  const char *why = reorder ? gop_reorder_method_problem(reorder) : NULL;
  if (why) return gopc_usage_error(&args, "--reorder %s: %s", reorder, why);
  why = method ? gop_partition_method_problem(method) : NULL;
  if (why) return gopc_usage_error(&args, "--method %s: %s", method, why);
  if (method && !parts) return gopc_usage_error(&args, "--method needs --partition P");
  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, stderr);
  status = GOPC_EXIT_INPUT;
  GopGraph *g = gop_graph_open(ctx, graph);
  if (!g) goto done;
  print_graph(g);
  if (reorder) {
    GopGraph *r = gop_graph_reorder(ctx, g, reorder);
    if (!r) goto done;
    printf("reordered by %s in %.3f s:\n", gop_graph_order(r), gop_graph_reorder_seconds(r));
    print_graph(r);
    g = r;
  }
  if (parts) {
    if (reorder) {
      fprintf(stderr, "gopc: error: --partition splits the graph as given; drop --reorder\n");
      goto done;
    }
    GopPartition *p = gop_graph_partition(ctx, g, (int)parts, method);
    if (!p) goto done;
    gop_partition_print(p, stdout);
    gop_partition_free(p);
  }
  if (out) {
    size_t len = strlen(out);
    bool binary = len >= 5 && strcmp(out + len - 5, ".gopg") == 0; /* else Matrix Market */
    if ((binary ? gop_graph_write_gopg(ctx, g, out) : gop_graph_write_mtx(ctx, g, out)) != 0)
      goto done;
    printf("written to %s\n", out);
  }
  status = 0;
done:
  gop_context_free(ctx);
  return status;
}
