/* tools/gopc.c: the gop compiler command, a thin client of include/gop.h.
 *
 *   gopc check FILE.gop...              parse and check, print diagnostics
 *   gopc emit FILE --op NAME --stage S  print a stage (ast, ir)
 *   gopc run FILE --op NAME --graph G --F 64 [--in N=x.npy] [--out N=y.npy]
 *   gopc pack FILE --op NAME -o X.pack  compile to a kernel pack
 *   gopc ops [FILE] [NAME]              list operators (tools/gopc_ops.c)
 *   gopc graph G                        print a graph's statistics
 *   gopc passes                         list the lowering passes
 *
 * FILE may be `stdlib:NAME`, an operator of the standard library (then
 * --op may be left out). Exit status: 0 success, 1 an error in the input
 * (diagnostics on stderr) or a failed --check, 2 a usage error, 3 no CUDA
 * driver and 4 no CUDA device when the GPU was required (--gpu, --pack).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gop.h"

enum { EXIT_INPUT = 1, EXIT_USAGE = 2 };

static const char *usage_main =
    "usage: gopc COMMAND [ARGS]\n"
    "\n"
    "gop compiles graph operators of graph neural networks.\n"
    "\n"
    "commands:\n"
    "  check FILE.gop...   parse and check operators, print diagnostics\n"
    "  emit FILE ...       print a compilation stage of an operator\n"
    "  run FILE ...        run an operator on a graph (GPU or interpreter)\n"
    "  pack FILE ...       compile an operator to a kernel pack\n"
    "  ops [FILE] [NAME]   list operators (default: the standard library)\n"
    "  graph G             print statistics of a graph file or generator\n"
    "  passes              list the lowering passes (for --dump-after)\n"
    "  model NAME ...      run a GNN model (gcn, gin, gat, sage-*) forward\n"
    "  tune FILE ...       autotune an operator on the GPU; --train, --evaluate\n"
    "                      the learned predictor (tools/gopc_tune.c)\n"
    "\n"
    "FILE may be stdlib:NAME for an operator of the standard library.\n"
    "Run `gopc COMMAND --help` for a command's options.\n";

static const char *usage_check =
    "usage: gopc check FILE.gop...\n"
    "Parses and checks each file; prints `file:line:col: error: ...` for\n"
    "every problem found and exits 1 if there was any.\n";

static const char *usage_emit =
    "usage: gopc emit FILE [--op NAME] [--stage STAGE] [--schedule S]\n"
    "                 [--target sm_XX] [--dump-after PASS] [--time]\n"
    "Prints a stage of the compilation of operator NAME (every operator of\n"
    "FILE when --op is left out):\n"
    "  ast      the syntax tree of the file, with line:col of each node\n"
    "  ir       the checked loop-nest IR in its text form (the default)\n"
    "  sched    the IR after the schedule's primitives\n"
    "  lowered  the GPU-ready IR after the lowering passes\n"
    "  llvm     the LLVM module after default<O3>\n"
    "  ptx      the PTX of the NVPTX backend\n"
    "  --schedule S     a named schedule with arguments, e.g. 'warp_vertex(1, 2)',\n"
    "                   or directives 'split(f, 32) -> (fo, fi); bind(fi, lane)';\n"
    "                   default: the default schedule\n"
    "  --target sm_XX   sm_80, sm_86, sm_89 or sm_90 (default: the GPU's, else sm_90)\n"
    "  --dump-after P   also print the IR after lowering pass P (gopc passes)\n"
    "  --time           print the time of each compilation step to stderr\n";

static const char *usage_run =
    "usage: gopc run FILE [--op NAME] --graph G [--F N] [--dim NAME=N]...\n"
    "                [--in NAME=x.npy]... [--out NAME=y.npy]... [--seed S]\n"
    "Runs operator NAME on graph G with the reference interpreter.\n"
    "  --graph G        a Matrix Market (.mtx) or SNAP edge list file, plain\n"
    "                   or gzip'ed, or a generator: rmat:SCALE:EDGEFACTOR[:SEED]\n"
    "                   (Graph500 R-MAT, skewed) or grid:WxH (2-D mesh)\n"
    "  --F N            the feature width F; any extent of the operator can be\n"
    "                   set as --NAME N or --dim NAME=N\n"
    "  --in NAME=PATH   read input NAME from a float32 .npy file, shape\n"
    "                   [|V|, F...] for src/dst tensors, [|E|, F...] for edge\n"
    "                   tensors (in the file's edge order); inputs not given\n"
    "                   are filled with uniform random numbers in [-1, 1)\n"
    "  --out NAME=PATH  write output NAME to a float32 .npy file\n"
    "  --seed S         seed of the random inputs (default 1)\n"
    "  --schedule S     the schedule (see gopc emit --help); default: the fastest\n"
    "                   measured in the tuning database (--db), else the learned\n"
    "                   predictor's choice (DB.xgb, gopc tune --train), else the\n"
    "                   cost model's best legal point; a line says which\n"
    "  --db FILE        the tuning database (default: $GOP_TUNE_DB, else none)\n"
    "  --target sm_XX   the GPU architecture to compile for\n"
    "  --interp         run on the reference interpreter even with a GPU\n"
    "  --gpu            require the GPU (exit 3 or 4 when there is none)\n"
    "  --check          compare the outputs with the interpreter (f32 sums\n"
    "                   within 1e-5 relative L2, max/min exactly, no NaN)\n"
    "  --pack X.pack    run a kernel pack made by gopc pack (needs no LLVM;\n"
    "                   FILE and --op are then left out)\n"
    "  --warmup N, --reps N  GPU timing: runs before, and runs measured\n"
    "                   (default 3 and 20; the median is reported)\n"
    "With a GPU, prints the median time, the achieved GB/s over the fewest\n"
    "bytes the operator must move, and that as a fraction of the measured\n"
    "device-to-device copy bandwidth; without one, runs on the interpreter.\n";

static const char *usage_pack =
    "usage: gopc pack FILE [--op NAME] [--schedule S] [--target sm_XX] -o X.pack\n"
    "Compiles the operator and writes a kernel pack: its PTX and what a\n"
    "runtime needs to launch it, so that `gopc run --pack X.pack` can run\n"
    "it on a machine without LLVM.\n";

static const char *usage_passes =
    "usage: gopc passes\n"
    "Lists the lowering passes in the order they run, each with a summary.\n";

static const char *usage_ops =
    "usage: gopc ops [--representative]\n"
    "       gopc ops NAME\n"
    "       gopc ops FILE [NAME]\n"
    "Lists operators: each one's signature (tensors with domain, dtype and\n"
    "shape; inputs, then -> outputs), DGL name and description.\n"
    "  (nothing)          every operator of the standard library\n"
    "  NAME               one stdlib operator in detail (stdlib:NAME too)\n"
    "  FILE [NAME]        the operators of a .gop file, or one of them; a FILE\n"
    "                     without '.', '/' or ':' is read as a NAME: write ./FILE\n"
    "  --representative   only the stdlib's representative subset, which covers\n"
    "                     every edge_op, gather, placement and broadcast\n"
    "docs/operators.md describes the operator space and its naming.\n";

static const char *usage_graph =
    "usage: gopc graph G\n"
    "Prints |V|, |E|, degree statistics, isolated vertices and the average\n"
    "edge span of a graph file or generator spec (see gopc run --help).\n";

static int usage_error(const char *usage, const char *fmt, const char *arg) {
  fprintf(stderr, "gopc: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n\n%s", usage);
  return EXIT_USAGE;
}

static bool is_help(const char *arg) {
  return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

/* Loads FILE (or stdlib:NAME) and picks the operator; *op_name may be set
 * from the stdlib form. NULL after the diagnostics were printed. */
static GopModule *load_module(GopContext *ctx, const char *file,
                              const char **op_name) {
  if (strncmp(file, "stdlib:", 7) == 0) {
    GopModule *m = gop_stdlib(ctx);
    if (m && file[7]) {
      if (*op_name && strcmp(*op_name, file + 7) != 0) {
        fprintf(stderr, "gopc: %s names operator %s but --op says %s\n", file,
                file + 7, *op_name);
        return NULL;
      }
      *op_name = file + 7;
    }
    return m;
  }
  return gop_compile_file(ctx, file);
}

/* ---- check ---- */

static int cmd_check(int argc, char **argv) {
  if (argc < 1) return usage_error(usage_check, "check needs a file%s", "");
  int status = 0;
  for (int i = 0; i < argc; i++) {
    if (is_help(argv[i])) {
      fputs(usage_check, stdout);
      return 0;
    }
    if (argv[i][0] == '-') return usage_error(usage_check, "unknown option %s", argv[i]);
  }
  for (int i = 0; i < argc; i++) {
    GopContext *ctx = gop_context_new();
    gop_set_diagnostic_stream(ctx, stderr);
    const char *op = NULL;
    GopModule *m = load_module(ctx, argv[i], &op);
    if (!m) status = EXIT_INPUT;
    gop_context_free(ctx);
  }
  return status;
}

/* ---- emit ---- */

/* Options shared by emit and pack: the operator and how to compile it. */
typedef struct CompileArgs {
  const char *file, *op_name, *stage_name, *out;
  GopCompileOptions opts;
  bool time;
} CompileArgs;

/* Parses emit/pack arguments; returns 0, or the exit status (-1: --help
 * was printed). */
static int parse_compile_args(int argc, char **argv, const char *usage, bool is_pack,
                              CompileArgs *c) {
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    const char **slot = NULL;
    if (is_help(a)) {
      fputs(usage, stdout);
      return -1;
    } else if (strcmp(a, "--time") == 0 && !is_pack) {
      c->time = true;
      continue;
    } else if (strcmp(a, "--op") == 0) {
      slot = &c->op_name;
    } else if (strcmp(a, "--stage") == 0 && !is_pack) {
      slot = &c->stage_name;
    } else if (strcmp(a, "--schedule") == 0) {
      slot = &c->opts.schedule;
    } else if (strcmp(a, "--target") == 0) {
      slot = &c->opts.target;
    } else if (strcmp(a, "--dump-after") == 0 && !is_pack) {
      slot = &c->opts.dump_after;
    } else if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && is_pack) {
      slot = &c->out;
    } else if (a[0] == '-') {
      return usage_error(usage, "unknown option %s", a);
    } else if (!c->file) {
      c->file = a;
      continue;
    } else {
      return usage_error(usage, "unexpected argument %s", a);
    }
    if (i + 1 >= argc) return usage_error(usage, "%s needs a value", a);
    *slot = argv[++i];
  }
  if (!c->file) return usage_error(usage, "a file (or stdlib:NAME) is needed%s", "");
  return 0;
}

static void print_times(GopContext *ctx) {
  GopCompileTimes t;
  gop_compile_times(ctx, &t);
  fprintf(stderr,
          "compile times (ms): schedule %.2f, lower %.2f, LLVM IR %.2f, "
          "O3 %.2f, PTX %.2f\n",
          t.schedule_ms, t.lower_ms, t.llvm_build_ms, t.llvm_opt_ms, t.ptx_emit_ms);
}

static int cmd_emit(int argc, char **argv) {
  CompileArgs c = {.stage_name = "ir"};
  int rc = parse_compile_args(argc, argv, usage_emit, false, &c);
  if (rc != 0) return rc < 0 ? 0 : rc;
  int stage = gop_stage_lookup(c.stage_name);
  if (stage < 0)
    return usage_error(usage_emit,
                       "--stage %s: unknown stage (ast, ir, sched, lowered, llvm, ptx)",
                       c.stage_name);

  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, stderr);
  int status = EXIT_INPUT;
  const char *op_name = c.op_name;
  GopModule *m = load_module(ctx, c.file, &op_name);
  if (m) {
    int first = 0, last = gop_module_num_ops(m) - 1;
    if (op_name) {
      GopOp *op = gop_module_find_op(m, op_name);
      if (!op) goto done;
      for (first = 0; gop_module_op(m, first) != op; first++) {}
      last = first;
    }
    if (stage == GOP_STAGE_AST) last = first; /* the AST is the whole file */
    status = 0;
    for (int i = first; i <= last; i++) {
      char *text = gop_emit_with(gop_module_op(m, i), (GopStage)stage, &c.opts);
      if (!text) {
        status = EXIT_INPUT;
        break;
      }
      fputs(text, stdout);
      if (i < last) fputc('\n', stdout);
      free(text);
      if (c.time) print_times(ctx);
    }
  }
done:
  gop_context_free(ctx);
  return status;
}

static int cmd_pack(int argc, char **argv) {
  CompileArgs c = {0};
  int rc = parse_compile_args(argc, argv, usage_pack, true, &c);
  if (rc != 0) return rc < 0 ? 0 : rc;
  if (!c.out) return usage_error(usage_pack, "pack needs -o X.pack%s", "");
  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, stderr);
  int status = EXIT_INPUT;
  const char *op_name = c.op_name;
  GopModule *m = load_module(ctx, c.file, &op_name);
  GopOp *op = NULL;
  if (m && !op_name && gop_module_num_ops(m) == 1) op = gop_module_op(m, 0);
  else if (m && op_name) op = gop_module_find_op(m, op_name);
  else if (m) fprintf(stderr, "gopc: error: %s has several operators: choose one with --op\n", c.file);
  if (op && gop_pack(op, &c.opts, c.out) == 0) {
    printf("%s: kernel pack of %s written to %s\n", c.file, gop_op_name(op), c.out);
    status = 0;
  }
  gop_context_free(ctx);
  return status;
}

static int cmd_passes(int argc, char **argv) {
  if (argc > 0 && is_help(argv[0])) {
    fputs(usage_passes, stdout);
    return 0;
  }
  if (argc > 0) return usage_error(usage_passes, "unexpected argument %s", argv[0]);
  for (int i = 0; i < gop_pass_count(); i++)
    printf("%-14s %s\n", gop_pass_name(i), gop_pass_summary(i));
  return 0;
}

/* ---- run ---- */

typedef struct Assign {
  const char *flag, *name, *value; /* --in X=path: flag "--in", name "X" */
  bool used;
} Assign;

enum { MAX_ASSIGN = 64 };

/* Splits NAME=VALUE; false if there is no '=' or either side is empty. */
static bool split_assign(const char *flag, char *arg, Assign *out) {
  char *eq = strchr(arg, '=');
  if (!eq || eq == arg || !eq[1]) return false;
  *eq = 0;
  *out = (Assign){flag, arg, eq + 1, false};
  return true;
}

static bool parse_i64(const char *s, int64_t *out) {
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end) return false;
  *out = v;
  return true;
}

/* splitmix64: a small, good, seedable generator for reproducible inputs. */
static uint64_t next_random(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static void fill_random(float *x, int64_t n, uint64_t seed) {
  uint64_t state = seed;
  for (int64_t i = 0; i < n; i++)
    x[i] = (float)((double)(next_random(&state) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

static void format_shape(char *buf, size_t size, int rank, const int64_t *shape) {
  int n = snprintf(buf, size, "[");
  for (int k = 0; k < rank && n < (int)size; k++)
    n += snprintf(buf + n, size - (size_t)n, "%s%" PRId64, k ? ", " : "", shape[k]);
  if (n < (int)size) snprintf(buf + n, size - (size_t)n, "]");
}

typedef struct RunOpts {
  const char *file, *op_name, *graph, *pack, *db;
  Assign dims[MAX_ASSIGN], ins[MAX_ASSIGN], outs[MAX_ASSIGN];
  int ndims, nins, nouts;
  uint64_t seed;
  GopCompileOptions compile;
  GopDevice device;
  bool check;
  int64_t warmup, reps;
} RunOpts;

static int parse_run_args(int argc, char **argv, RunOpts *o) {
  o->seed = 1;
  o->warmup = 3;
  o->reps = 20;
  for (int i = 0; i < argc; i++) {
    char *a = argv[i];
    if (is_help(a)) {
      fputs(usage_run, stdout);
      return -1;
    }
    if (strcmp(a, "--interp") == 0 || strcmp(a, "--gpu") == 0) {
      GopDevice want = a[2] == 'i' ? GOP_DEVICE_INTERP : GOP_DEVICE_GPU;
      if (o->device != GOP_DEVICE_AUTO && o->device != want)
        return usage_error(usage_run, "--interp and --gpu exclude each other%s", "");
      o->device = want;
      continue;
    }
    if (strcmp(a, "--check") == 0) {
      o->check = true;
      continue;
    }
    if (a[0] != '-') {
      if (o->file) return usage_error(usage_run, "unexpected argument %s", a);
      o->file = a;
      continue;
    }
    if (i + 1 >= argc) return usage_error(usage_run, "%s needs a value", a);
    char *v = argv[++i];
    if (strcmp(a, "--op") == 0) {
      o->op_name = v;
    } else if (strcmp(a, "--schedule") == 0) {
      o->compile.schedule = v;
    } else if (strcmp(a, "--target") == 0) {
      o->compile.target = v;
    } else if (strcmp(a, "--db") == 0) {
      o->db = v;
    } else if (strcmp(a, "--pack") == 0) {
      o->pack = v;
    } else if (strcmp(a, "--warmup") == 0 || strcmp(a, "--reps") == 0) {
      int64_t *slot = a[2] == 'w' ? &o->warmup : &o->reps;
      if (!parse_i64(v, slot) || *slot < 0 || *slot > 100000)
        return usage_error(usage_run, "%s: not a count from 0 to 100000", a);
    } else if (strcmp(a, "--graph") == 0) {
      o->graph = v;
    } else if (strcmp(a, "--seed") == 0) {
      int64_t s;
      if (!parse_i64(v, &s) || s < 0)
        return usage_error(usage_run, "--seed %s: not a non-negative integer", v);
      o->seed = (uint64_t)s;
    } else if (strcmp(a, "--in") == 0 || strcmp(a, "--out") == 0 ||
               strcmp(a, "--dim") == 0) {
      Assign *list = a[2] == 'i' ? o->ins : a[2] == 'o' ? o->outs : o->dims;
      int *n = a[2] == 'i' ? &o->nins : a[2] == 'o' ? &o->nouts : &o->ndims;
      if (*n >= MAX_ASSIGN) return usage_error(usage_run, "too many %s options", a);
      if (!split_assign(a, v, &list[*n]))
        return usage_error(usage_run, "%s needs NAME=VALUE", a);
      (*n)++;
    } else if (a[1] == '-' && a[2]) { /* --F 64: an extent by its name */
      if (o->ndims >= MAX_ASSIGN) return usage_error(usage_run, "too many extents%s", "");
      o->dims[o->ndims++] = (Assign){a, a + 2, v, false};
    } else {
      return usage_error(usage_run, "unknown option %s", a);
    }
  }
  if (o->pack && (o->file || o->op_name || o->compile.schedule || o->compile.target))
    return usage_error(usage_run,
                       "--pack %s: a kernel pack is already compiled: give no FILE, "
                       "--op, --schedule or --target with it", o->pack);
  if (o->pack && o->device == GOP_DEVICE_INTERP)
    return usage_error(usage_run, "--pack %s runs on the GPU: --interp excludes it", o->pack);
  if (!o->file && !o->pack)
    return usage_error(usage_run, "run needs a file (or stdlib:NAME, or --pack X.pack)%s", "");
  if (!o->graph) return usage_error(usage_run, "run needs --graph G%s", "");
  return 0;
}

/* Prints `--in X=path` style context for an error about an option. */
static void option_error(const Assign *as, const char *fmt, const char *detail) {
  fprintf(stderr, "gopc: error: %s %s=%s: ", as->flag, as->name, as->value);
  fprintf(stderr, fmt, detail);
  fputc('\n', stderr);
}

static const Assign *find_assign(Assign *list, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(list[i].name, name) == 0) {
      list[i].used = true;
      return &list[i];
    }
  return NULL;
}

/* Makes the run: the operator of FILE/--op, or the one a pack carries. */
static GopRun *make_run(GopContext *ctx, RunOpts *o, int *status) {
  *status = EXIT_INPUT;
  if (o->pack) {
    GopGraph *g = gop_graph_open(ctx, o->graph);
    GopRun *r = g ? gop_run_from_pack(ctx, o->pack, g) : NULL;
    if (r) gop_run_set_device(r, GOP_DEVICE_GPU);
    return r;
  }
  const char *op_name = o->op_name;
  GopModule *m = load_module(ctx, o->file, &op_name);
  if (!m) return NULL;
  if (!op_name) {
    if (gop_module_num_ops(m) != 1) {
      fprintf(stderr, "gopc: error: %s has %d operators: choose one with --op NAME\n",
              o->file, gop_module_num_ops(m));
      *status = EXIT_USAGE;
      return NULL;
    }
    op_name = gop_op_name(gop_module_op(m, 0));
  }
  GopOp *op = gop_module_find_op(m, op_name);
  if (!op) return NULL;
  GopGraph *g = gop_graph_open(ctx, o->graph);
  if (!g) return NULL;
  GopRun *r = gop_run_new(ctx, op, g);
  if (!r) return NULL;
  gop_run_set_device(r, o->device);
  if (gop_run_set_compile(r, &o->compile) != 0) {
    *status = EXIT_USAGE;
    return NULL;
  }
  return r;
}

/* `chosen`: where the schedule came from when none was given, or NULL. */
static void print_run_summary(GopRun *r, const char *graph, const char *op_name,
                              const GopScheduleChoice *chosen) {
  const GopRunStats *st = gop_run_stats(r);
  GopGraphInfo info;
  gop_graph_info(gop_run_graph(r), &info);
  if (!st->on_gpu) {
    printf("%s on %s (|V| %" PRId64 ", |E| %" PRId64 "): interpreter, %.3f s\n", op_name,
           graph, info.num_vertices, info.num_edges, gop_run_seconds(r));
    if (chosen)
      printf("  schedule: %s (from the %s)\n", chosen->schedule,
             gop_schedule_source_name(chosen->source));
    if (chosen && chosen->note[0]) printf("  note: %s\n", chosen->note);
    if (st->note[0]) printf("  note: %s\n", st->note);
    return;
  }
  printf("%s on %s (|V| %" PRId64 ", |E| %" PRId64 "): %s, %s, schedule %s\n", op_name, graph,
         info.num_vertices, info.num_edges, st->device, st->target, st->schedule);
  if (chosen)
    printf("  schedule: %s (from the %s)\n", chosen->schedule,
           gop_schedule_source_name(chosen->source));
  if (chosen && chosen->note[0]) printf("  note: %s\n", chosen->note);
  if (st->median_ms > 0)
    printf("  time %.4f ms (median, min %.4f), %.1f GB/s over %.1f MB, %.1f%% of the "
           "fewest-bytes bound (copy %.0f GB/s)\n",
           st->median_ms, st->min_ms, st->gbps, (double)st->fewest_bytes / 1e6,
           100 * st->bound_fraction, st->copy_gbps);
  if (st->compile.llvm_build_ms > 0)
    printf("  compiled in %.1f ms (schedule %.2f, lower %.2f, LLVM IR %.2f, O3 %.2f, PTX %.2f)\n",
           st->compile.schedule_ms + st->compile.lower_ms + st->compile.llvm_build_ms +
               st->compile.llvm_opt_ms + st->compile.ptx_emit_ms,
           st->compile.schedule_ms, st->compile.lower_ms, st->compile.llvm_build_ms,
           st->compile.llvm_opt_ms, st->compile.ptx_emit_ms);
  gop_run_print_memory(r, stdout);
}

static int run_operator(GopContext *ctx, RunOpts *o) {
  int status;
  GopRun *r = make_run(ctx, o, &status);
  if (!r) return status;
  const char *op_name = gop_op_name(gop_run_op(r));
  gop_run_set_timing(r, (int)o->warmup, (int)o->reps);

  for (int i = 0; i < o->ndims; i++) {
    int64_t v;
    if (!parse_i64(o->dims[i].value, &v)) {
      fprintf(stderr, "gopc: error: %s %s: not an integer\n", o->dims[i].flag,
              o->dims[i].value);
      return EXIT_USAGE;
    }
    if (gop_run_set_extent(r, o->dims[i].name, v) != 0) return EXIT_USAGE;
  }

  /* No schedule given: the tuning database's, else the cost model's. */
  GopScheduleChoice choice, *chosen = NULL;
  if (!o->pack && !o->compile.schedule) {
    const char *db = o->db ? o->db : getenv("GOP_TUNE_DB");
    int64_t F = 0;
    for (int i = 0; i < o->ndims; i++)
      if (strcmp(o->dims[i].name, "F") == 0) parse_i64(o->dims[i].value, &F);
    if (gop_choose_schedule(gop_run_op(r), gop_run_graph(r), F, db && *db ? db : NULL,
                            &choice) != 0)
      return EXIT_INPUT;
    chosen = &choice;
    GopCompileOptions co = o->compile;
    co.schedule = choice.schedule;
    if (gop_run_set_compile(r, &co) != 0) return EXIT_INPUT;
  }

  int n = gop_run_num_tensors(r);
  float **data = calloc((size_t)n, sizeof *data);
  int64_t *numel = calloc((size_t)n, sizeof *numel);
  status = EXIT_INPUT;
  for (int i = 0; i < n; i++) {
    const char *name = gop_run_tensor_name(r, i);
    bool out = gop_run_tensor_is_output(r, i);
    const Assign *as = find_assign(out ? o->outs : o->ins, out ? o->nouts : o->nins, name);
    int64_t shape[8];
    int rank = gop_run_tensor_shape(r, i, shape);
    if (rank < 0) { /* names the missing extent */
      gop_run_bind(r, name, NULL, 0);
      status = EXIT_USAGE;
      goto done;
    }
    numel[i] = 1;
    for (int k = 0; k < rank; k++) numel[i] *= shape[k];
    if (!out && as) {
      GopArray arr;
      if (gop_array_read(ctx, as->value, &arr) != 0) goto done;
      bool same = arr.ndim == rank;
      for (int k = 0; same && k < rank; k++) same = arr.shape[k] == shape[k];
      if (!same) {
        char want[128], got[128], msg[300];
        format_shape(want, sizeof want, rank, shape);
        format_shape(got, sizeof got, arr.ndim, arr.shape);
        snprintf(msg, sizeof msg, "shape %s does not match %s's %s on this graph", got,
                 name, want);
        option_error(as, "%s", msg);
        gop_array_free(&arr);
        status = EXIT_USAGE;
        goto done;
      }
      data[i] = arr.data;
    } else {
      data[i] = malloc(sizeof(float) * (size_t)(numel[i] ? numel[i] : 1));
      if (!data[i]) {
        fprintf(stderr, "gopc: error: out of memory for %s (%" PRId64 " floats)\n", name,
                numel[i]);
        goto done;
      }
      if (!out) fill_random(data[i], numel[i], o->seed * 1000003u + (uint64_t)i);
    }
    if (gop_run_bind(r, name, data[i], numel[i]) != 0) goto done;
  }
  for (int k = 0; k < o->nins; k++)
    if (!o->ins[k].used) {
      option_error(&o->ins[k], "%s", "the operator has no input of that name");
      status = EXIT_USAGE;
      goto done;
    }
  for (int k = 0; k < o->nouts; k++)
    if (!o->outs[k].used) {
      option_error(&o->outs[k], "%s", "the operator has no output of that name");
      status = EXIT_USAGE;
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
    for (int64_t k = 0; k < numel[i]; k++) {
      sum += data[i][k];
      sq += (double)data[i][k] * data[i][k];
    }
    char sh[128];
    format_shape(sh, sizeof sh, rank, shape);
    printf("  %s %s: sum %.6g, L2 norm %.6g", name, sh, sum, sqrt(sq));
    const Assign *as = find_assign(o->outs, o->nouts, name);
    if (as) {
      GopArray arr = {.ndim = rank, .data = data[i]};
      for (int k = 0; k < rank; k++) arr.shape[k] = shape[k];
      if (gop_array_write(ctx, as->value, &arr) != 0) {
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

static int cmd_run(int argc, char **argv) {
  RunOpts o = {0};
  int rc = parse_run_args(argc, argv, &o);
  if (rc != 0) return rc < 0 ? 0 : rc;
  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, stderr);
  int status = run_operator(ctx, &o);
  gop_context_free(ctx);
  return status;
}

/* ---- ops, graph ---- */

/* tools/gopc_ops.c */
int gopc_ops(int argc, char **argv, const char *usage);
static int cmd_ops(int argc, char **argv) { return gopc_ops(argc, argv, usage_ops); }
/* tools/gopc_model.c */
int gopc_model(int argc, char **argv);
/* tools/gopc_tune.c */
int gopc_cmd_tune(int argc, char **argv);

static int cmd_graph(int argc, char **argv) {
  if (argc > 0 && is_help(argv[0])) {
    fputs(usage_graph, stdout);
    return 0;
  }
  if (argc != 1) return usage_error(usage_graph, "graph needs exactly one graph%s", "");
  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, stderr);
  GopGraph *g = gop_graph_open(ctx, argv[0]);
  if (g) gop_graph_print(g, stdout);
  gop_context_free(ctx);
  return g ? 0 : EXIT_INPUT;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage_main, stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (is_help(cmd) || strcmp(cmd, "help") == 0) {
    fputs(usage_main, stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("gopc %s\n", GOP_VERSION);
    return 0;
  }
  static const struct {
    const char *name;
    int (*fn)(int, char **);
  } cmds[] = {{"check", cmd_check}, {"emit", cmd_emit},   {"run", cmd_run},
              {"pack", cmd_pack},   {"ops", cmd_ops},     {"graph", cmd_graph},
              {"passes", cmd_passes}, {"model", gopc_model},
              {"tune", gopc_cmd_tune}};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    if (strcmp(cmd, cmds[i].name) == 0) return cmds[i].fn(argc - 2, argv + 2);
  return usage_error(usage_main, "unknown command '%s'", cmd);
}
