/* tools/gopc/model.c: `gopc model`, a GNN model's forward inference on a
 * graph (models/models.c through include/gop.h).
 *
 * Loads or makes the weights and the input, runs the forward (on the GPU
 * when there is one), optionally checks it against the interpreter path,
 * and writes the output. The time it prints is what bench/models_pyg.py
 * reads: keep the `time X ms` wording.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gopc.h"

static const char *usage_model =
    "usage: gopc model NAME --graph G [--in-features N] [--classes C]\n"
    "                  [--hidden N] [--weights DIR] [--save-weights DIR]\n"
    "                  [--x X.npy] [--out Y.npy] [--seed S] [--gat-separate]\n"
    "                  [--interp|--gpu] [--check] [--reps N]\n"
    "Runs the forward inference of model NAME on graph G: the dense updates\n"
    "through cuBLAS (a C GEMM on the interpreter), the graph operators\n"
    "through gop (examples/models/README.md). On the GPU every tensor stays\n"
    "on the device from the input's upload to the output's copy back.\n"
    "  NAME               gcn, gin, gat, sage-sum, sage-mean or sage-max\n"
    "  --graph G          a graph file or generator (see gopc run --help)\n"
    "  --in-features N    width of the input (default: --x's, else 64)\n"
    "  --classes C        width of the output (default 8)\n"
    "  --hidden N         hidden width (default: gcn 16, gin 64, gat 8 per\n"
    "                     head of 8, sage 64)\n"
    "  --weights DIR      read every parameter from DIR/NAME.npy (float32,\n"
    "                     weights [in, out]); default: seeded random\n"
    "  --save-weights DIR write the parameters used to DIR/NAME.npy\n"
    "  --x X.npy          the input [|V|, N]; default: uniform in [-1, 1)\n"
    "  --out Y.npy        write the output [|V|, C]\n"
    "  --seed S           seed of the random weights and input (default 1)\n"
    "  --gat-separate     GAT: three operators (scores, edge softmax,\n"
    "                     aggregation) instead of the fused attention one\n"
    "  --interp, --gpu    force the interpreter, or require the GPU\n"
    "  --check            run again on the interpreter and compare (relative\n"
    "                     L2 below 1e-4, NaN never passes)\n"
    "  --reps N           time N more whole forwards on the GPU, CUDA events\n"
    "                     around each: their median (default 20; 0 runs\n"
    "                     once untimed)\n";

static double rel_l2(const float *a, const float *ref, int64_t n, bool *nan) {
  double num = 0, den = 0;
  *nan = false;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(a[i]) || isnan(ref[i])) *nan = true;
    double dlt = (double)a[i] - ref[i];
    num += dlt * dlt;
    den += (double)ref[i] * ref[i];
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

typedef struct Args {
  const char *name, *graph, *weights, *save, *x, *out;
  int64_t in, classes, hidden, reps;
  uint64_t seed;
  bool check, separate;
  int dev; /* a GopDevice */
} Args;

/* GOPC_GO_ON, or the exit status (0 after --help). */
static int parse(int argc, char **argv, Args *a) {
  *a = (Args){.classes = 8, .reps = 20, .seed = 1, .dev = GOP_DEVICE_AUTO};
  int64_t seed = 1, most = (int64_t)1 << 40;
  const char *count1 = "%s %s: expected an integer >= 1",
             *count0 = "%s %s: expected an integer >= 0";
  const GopcOption options[] = {
      {"--check", GOPC_BOOL, .dest = &a->check},
      {"--gat-separate", GOPC_BOOL, .dest = &a->separate},
      {"--interp", GOPC_CONST, .dest = &a->dev, .value = GOP_DEVICE_INTERP},
      {"--gpu", GOPC_CONST, .dest = &a->dev, .value = GOP_DEVICE_GPU},
      {"--graph", GOPC_STRING, .dest = &a->graph},
      {"--weights", GOPC_STRING, .dest = &a->weights},
      {"--save-weights", GOPC_STRING, .dest = &a->save},
      {"--x", GOPC_STRING, .dest = &a->x},
      {"--out", GOPC_STRING, .dest = &a->out},
      {"--in-features", GOPC_INT, .dest = &a->in, .min = 1, .max = most, .bad = count1},
      {"--classes", GOPC_INT, .dest = &a->classes, .min = 1, .max = most, .bad = count1},
      {"--hidden", GOPC_INT, .dest = &a->hidden, .min = 1, .max = most, .bad = count1},
      {"--reps", GOPC_INT, .dest = &a->reps, .min = 0, .max = most, .bad = count0},
      {"--seed", GOPC_INT, .dest = &seed, .min = 0, .max = most, .bad = count0},
      {NULL},
  };
  GopcArgs args = {.usage = usage_model, .prefix = "gopc model: ", .options = options,
                   .args = &a->name, .max_args = 1};
  int rc = gopc_parse(&args, argc, argv);
  if (rc != GOPC_GO_ON) return rc;
  a->seed = (uint64_t)seed;
  if (!a->name) return gopc_usage_error(&args, "a model name is needed (%s)", gop_model_names());
  /* the name before the graph, which may take long to read */
  const char *names = gop_model_names(), *at = strstr(names, a->name);
  size_t n = strlen(a->name);
  if (!at || (at != names && at[-1] != ' ') || (at[n] != ' ' && at[n] != 0)) {
    fprintf(stderr, "gopc model: unknown model '%s': the models are %s\n", a->name, names);
    return GOPC_EXIT_INPUT;
  }
  if (!a->graph) return gopc_usage_error(&args, "--graph is needed");
  return GOPC_GO_ON;
}

static void print_stats(const char *what, const GopModelStats *st) {
  if (!st->on_gpu) {
    printf("  %s: interpreter, %.3f s wall (%d steps)\n", what, st->seconds, st->steps);
    if (st->note[0]) printf("  note: %s\n", st->note);
    return;
  }
  printf("  %s: %s, %s\n", what, st->device, st->blas);
  if (st->reps > 0)
    printf("  time %.4f ms (median of %d whole forwards on the device, CUDA events around "
           "each: %d steps, no host copies; min %.4f ms)\n",
           st->total_ms, st->reps, st->steps, st->min_ms);
  printf("  wall %.3f s (compiling, the input's and weights' upload, the output's copy "
         "and timing included)\n", st->seconds);
}

int gopc_model(int argc, char **argv) {
  Args a;
  int rc = parse(argc, argv, &a);
  if (rc != GOPC_GO_ON) return rc;

  GopContext *ctx = gop_context_new();
  if (!ctx) return GOPC_EXIT_INPUT;
  gop_set_diagnostic_stream(ctx, stderr);
  GopModel *m = NULL;
  GopArray x = {0};
  float *y = NULL, *ref = NULL;
  rc = GOPC_EXIT_INPUT;
  GopGraph *g = gop_graph_open(ctx, a.graph);
  if (!g) goto done;
  GopGraphInfo gi;
  gop_graph_info(g, &gi);
  if (a.x) {
    if (gop_array_read(ctx, a.x, &x) != 0) goto done;
    if (x.ndim != 2 || x.shape[0] != gi.num_vertices || (a.in && x.shape[1] != a.in)) {
      fprintf(stderr, "%s: error: shape [", a.x);
      for (int i = 0; i < x.ndim; i++)
        fprintf(stderr, "%s%lld", i ? ", " : "", (long long)x.shape[i]);
      if (a.in)
        fprintf(stderr, "], but the input must be [%lld, %lld] (|V| of %s, --in-features)\n",
                (long long)gi.num_vertices, (long long)a.in, a.graph);
      else
        fprintf(stderr, "], but the input must be [%lld, F] (|V| of %s, any F)\n",
                (long long)gi.num_vertices, a.graph);
      goto done;
    }
    a.in = x.shape[1];
  } else {
    if (!a.in) a.in = 64;
    x.ndim = 2;
    x.shape[0] = gi.num_vertices;
    x.shape[1] = a.in;
    x.data = malloc((size_t)(gi.num_vertices * a.in) * sizeof(float) + 1);
    if (!x.data) goto done;
    uint64_t s = a.seed * 0x2545f4914f6cdd1dull + 7;
    for (int64_t i = 0; i < gi.num_vertices * a.in; i++) {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      x.data[i] = (float)((double)(s >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
    }
  }
  GopModelOptions o = {.in_features = a.in, .classes = a.classes, .hidden = a.hidden,
                       .seed = a.seed, .gat_separate = a.separate};
  m = gop_model_new(ctx, a.name, g, &o);
  if (!m) goto done;
  if (a.weights && gop_model_load_weights(m, a.weights) != 0) goto done;
  if (a.save && gop_model_save_weights(m, a.save) != 0) goto done;

  int64_t ny = gi.num_vertices * a.classes;
  y = calloc((size_t)ny + 1, sizeof *y);
  if (!y) goto done;
  GopModelStats st;
  printf("%s on %s (|V| %lld, |E| %lld): in %lld, classes %lld%s\n", a.name, a.graph,
         (long long)gi.num_vertices, (long long)gi.num_edges, (long long)a.in,
         (long long)a.classes, a.separate ? ", GAT as separate operators" : "");
  if (gop_model_forward(m, x.data, y, (GopDevice)a.dev, (int)a.reps, &st) != 0) {
    if (st.gpu_status) rc = st.gpu_status;
    goto done;
  }
  print_stats("forward", &st);
  if (a.check) {
    ref = calloc((size_t)ny + 1, sizeof *ref);
    GopModelStats rs;
    if (!ref || gop_model_forward(m, x.data, ref, GOP_DEVICE_INTERP, 0, &rs) != 0) goto done;
    bool nan;
    double err = rel_l2(y, ref, ny, &nan);
    bool ok = !nan && err < 1e-4;
    printf("  check: %s the interpreter%s (relative L2 %.3g%s, limit 1e-4)\n",
           ok ? "agrees with" : "DISAGREES with",
           st.on_gpu ? "" : " (both ran on the interpreter)", err, nan ? ", NaN" : "");
    if (!ok) goto done;
  }
  double sum = 0, l2 = 0;
  for (int64_t i = 0; i < ny; i++) {
    sum += y[i];
    l2 += (double)y[i] * y[i];
  }
  printf("  Y [%lld, %lld]: sum %g, L2 norm %g\n", (long long)gi.num_vertices,
         (long long)a.classes, sum, sqrt(l2));
  if (a.out) {
    GopArray out = {.ndim = 2, .shape = {gi.num_vertices, a.classes}, .data = y};
    if (gop_array_write(ctx, a.out, &out) != 0) goto done;
  }
  rc = 0;
done:
  gop_model_free(m);
  gop_array_free(&x);
  free(y);
  free(ref);
  gop_context_free(ctx);
  return rc;
}
