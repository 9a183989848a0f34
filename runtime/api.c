/* runtime/api.c: the public C API (include/gop.h) over lang/, ir/ and
 * runtime/.
 *
 * A GopContext owns one arena and one Diag: modules, operators and runs are
 * arena objects and die with the context; graphs are malloc'ed by the
 * runtime and kept on a list so the context can free them. The API checks
 * every argument a caller controls and reports through the Diag, so a
 * framework embedding gop gets an error message rather than a crash.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gop.h"
#include "lang/lang.h"
#include "runtime/runtime.h"

struct GopContext {
  Arena *arena;
  Diag diag;
  GopModule *stdlib;
  GopGraph *graphs;
};

struct GopModule {
  GopContext *ctx;
  IrModule *ir;
  const char *file, *text; /* the source; NULL for the stdlib */
  GopOp **ops;
};

struct GopOp {
  GopModule *module;
  IrOp *ir;
  const char *signature;
};

struct GopGraph {
  RtGraph *rt;
  GopGraph *next;
};

struct GopRun {
  GopContext *ctx;
  const GopOp *op;
  const GopGraph *graph;
  IrExtents ext;
  bool *ext_set;
  float **data;    /* by tensor id; temporaries stay NULL */
  int64_t *numel;  /* bound sizes, by tensor id */
  double seconds;
};

static const Loc api_loc = {"gop", 0, 0};

GopContext *gop_context_new(void) {
  GopContext *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return NULL;
  ctx->arena = ir_arena_new();
  ir_diag_init(&ctx->diag, NULL);
  return ctx;
}

void gop_context_free(GopContext *ctx) {
  if (!ctx) return;
  for (GopGraph *g = ctx->graphs, *next; g; g = next) {
    next = g->next;
    rt_graph_free(g->rt);
    free(g);
  }
  ir_diag_free(&ctx->diag);
  ir_arena_free(ctx->arena);
  free(ctx);
}

void gop_set_diagnostic_stream(GopContext *ctx, FILE *out) { ctx->diag.out = out; }
const char *gop_diagnostics(const GopContext *ctx) {
  return ctx->diag.buf ? ctx->diag.buf : "";
}
int gop_error_count(const GopContext *ctx) { return ctx->diag.nerrors; }

void gop_clear_diagnostics(GopContext *ctx) {
  ctx->diag.nerrors = ctx->diag.nwarnings = 0;
  ctx->diag.len = 0;
  if (ctx->diag.buf) ctx->diag.buf[0] = 0;
}

/* ---- modules and operators ---- */

static const char *signature(Arena *a, const IrOp *op) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return op->name;
  fprintf(f, "%s(", op->name);
  int k = 0;
  for (int i = 0; i < op->ntensors; i++) {
    const IrTensor *t = op->tensors[i];
    if (t->role != IR_ROLE_IN) continue;
    fprintf(f, "%s", k++ ? ", " : "");
    ir_print_tensor_decl(f, t);
  }
  fprintf(f, ") -> ");
  if (op->noutputs > 1) fputc('(', f);
  k = 0;
  for (int i = 0; i < op->ntensors; i++) {
    const IrTensor *t = op->tensors[i];
    if (t->role != IR_ROLE_OUT) continue;
    fprintf(f, "%s", k++ ? ", " : "");
    ir_print_tensor_decl(f, t);
  }
  if (op->noutputs > 1) fputc(')', f);
  fclose(f);
  const char *s = ir_strdup(a, text);
  free(text);
  return s;
}

static GopModule *wrap_module(GopContext *ctx, IrModule *ir, const char *file,
                              const char *text) {
  if (!ir) return NULL;
  GopModule *m = IR_NEW(ctx->arena, GopModule);
  m->ctx = ctx;
  m->ir = ir;
  m->file = file;
  m->text = text;
  m->ops = IR_NEW_ARRAY(ctx->arena, GopOp *, ir->nops + 1);
  for (int i = 0; i < ir->nops; i++) {
    GopOp *op = IR_NEW(ctx->arena, GopOp);
    op->module = m;
    op->ir = ir->ops[i];
    op->signature = signature(ctx->arena, ir->ops[i]);
    m->ops[i] = op;
  }
  return m;
}

GopModule *gop_compile_string(GopContext *ctx, const char *name,
                              const char *source) {
  if (!name) name = "<string>";
  if (!source) {
    ir_error(&ctx->diag, api_loc, "gop_compile_string: source is NULL");
    return NULL;
  }
  const char *file = ir_strdup(ctx->arena, name);
  const char *text = ir_strdup(ctx->arena, source);
  return wrap_module(ctx, lang_compile(ctx->arena, &ctx->diag, file, text),
                     file, text);
}

/* Reads a whole text file into the arena; NULL after reporting. */
static char *read_text(GopContext *ctx, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    ir_error(&ctx->diag, (Loc){path, 0, 0}, "cannot open: %s", strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += got;
    if (cap - len < 2) {
      char *bigger = realloc(buf, cap *= 2);
      if (!bigger) free(buf);
      buf = bigger;
    }
  }
  bool bad = ferror(f) || !buf;
  fclose(f);
  if (bad) {
    free(buf);
    ir_error(&ctx->diag, (Loc){path, 0, 0}, "cannot read the file");
    return NULL;
  }
  buf[len] = 0;
  if (strlen(buf) != len) {
    free(buf);
    ir_error(&ctx->diag, (Loc){path, 0, 0},
             "the file contains a NUL byte: not a .gop source");
    return NULL;
  }
  char *text = ir_strndup(ctx->arena, buf, len);
  free(buf);
  return text;
}

GopModule *gop_compile_file(GopContext *ctx, const char *path) {
  if (!path) {
    ir_error(&ctx->diag, api_loc, "gop_compile_file: path is NULL");
    return NULL;
  }
  const char *file = ir_strdup(ctx->arena, path);
  char *text = read_text(ctx, file);
  if (!text) return NULL;
  return wrap_module(ctx, lang_compile(ctx->arena, &ctx->diag, file, text),
                     file, text);
}

GopModule *gop_stdlib(GopContext *ctx) {
  if (!ctx->stdlib)
    ctx->stdlib = wrap_module(ctx, lang_stdlib(ctx->arena, &ctx->diag), NULL, NULL);
  return ctx->stdlib;
}

int gop_module_num_ops(const GopModule *m) { return m->ir->nops; }

GopOp *gop_module_op(const GopModule *m, int i) {
  return i >= 0 && i < m->ir->nops ? m->ops[i] : NULL;
}

GopOp *gop_module_find_op(const GopModule *m, const char *name) {
  for (int i = 0; i < m->ir->nops; i++)
    if (name && strcmp(m->ir->ops[i]->name, name) == 0) return m->ops[i];
  char *list = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&list, &len);
  for (int i = 0; f && i < m->ir->nops; i++)
    fprintf(f, "%s%s", i ? ", " : "", m->ir->ops[i]->name);
  if (f) fclose(f);
  ir_error(&m->ctx->diag, (Loc){m->file, 0, 0},
           "no operator named '%s' (there is: %s)", name ? name : "(null)",
           list && *list ? list : "none");
  free(list);
  return NULL;
}

const char *gop_op_name(const GopOp *op) { return op->ir->name; }
const char *gop_op_signature(const GopOp *op) { return op->signature; }

int gop_stage_lookup(const char *name) {
  if (!name) return -1;
  if (strcmp(name, "ast") == 0) return GOP_STAGE_AST;
  if (strcmp(name, "ir") == 0) return GOP_STAGE_IR;
  return -1;
}

char *gop_emit(const GopOp *op, GopStage stage) {
  GopContext *ctx = op->module->ctx;
  switch (stage) {
  case GOP_STAGE_IR:
    return ir_op_to_string(op->ir);
  case GOP_STAGE_AST: {
    const char *file = op->module->file, *text = op->module->text;
    if (!text) { /* a stdlib operator: dump the stdlib file that holds it */
      const LangStdlibFile *sf = lang_stdlib_find_op(op->ir->name);
      if (!sf) return NULL;
      file = sf->name;
      text = sf->text;
    }
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f) return NULL;
    bool ok = lang_dump_ast(f, ctx->arena, &ctx->diag, file, text);
    fclose(f);
    if (!ok) {
      free(out);
      return NULL;
    }
    return out;
  }
  }
  ir_error(&ctx->diag, api_loc, "gop_emit: unknown stage %d", (int)stage);
  return NULL;
}

/* ---- graphs ---- */

GopGraph *gop_graph_open(GopContext *ctx, const char *spec) {
  if (!spec || !*spec) {
    ir_error(&ctx->diag, api_loc, "gop_graph_open: empty graph spec");
    return NULL;
  }
  RtGraph *rt = rt_graph_open(spec, &ctx->diag);
  if (!rt) return NULL;
  GopGraph *g = calloc(1, sizeof *g);
  if (!g) {
    rt_graph_free(rt);
    return NULL;
  }
  g->rt = rt;
  g->next = ctx->graphs;
  ctx->graphs = g;
  return g;
}

void gop_graph_info(const GopGraph *g, GopGraphInfo *info) {
  const RtGraph *r = g->rt;
  *info = (GopGraphInfo){
      .num_vertices = r->nv,
      .num_edges = r->ne,
      .degree_mean = r->stats.deg_mean,
      .in_degree_std = r->stats.in_deg_std,
      .in_degree_max = r->stats.in_deg_max,
      .out_degree_max = r->stats.out_deg_max,
      .isolated = r->stats.isolated,
      .self_loops = r->stats.self_loops,
      .aes = r->stats.aes,
  };
}

void gop_graph_print(const GopGraph *g, FILE *out) { rt_graph_print_stats(out, g->rt); }

/* ---- runs ---- */

GopRun *gop_run_new(GopContext *ctx, const GopOp *op, const GopGraph *g) {
  if (!op || !g) {
    ir_error(&ctx->diag, api_loc, "gop_run_new: %s is NULL", op ? "graph" : "operator");
    return NULL;
  }
  const IrOp *ir = op->ir;
  if (ir->nsyms > (int)(sizeof ((IrExtents *)0)->value / sizeof(int64_t))) {
    ir_error(&ctx->diag, ir->loc, "operator %s has too many extents (%d)", ir->name,
             ir->nsyms);
    return NULL;
  }
  GopRun *r = IR_NEW(ctx->arena, GopRun);
  r->ctx = ctx;
  r->op = op;
  r->graph = g;
  r->ext.n = ir->nsyms;
  r->ext_set = IR_NEW_ARRAY(ctx->arena, bool, ir->nsyms + 1);
  r->data = IR_NEW_ARRAY(ctx->arena, float *, ir->ntensors + 1);
  r->numel = IR_NEW_ARRAY(ctx->arena, int64_t, ir->ntensors + 1);
  return r;
}

int gop_run_set_extent(GopRun *r, const char *sym, int64_t value) {
  const IrOp *ir = r->op->ir;
  for (int i = 0; i < ir->nsyms; i++) {
    if (strcmp(ir->syms[i]->name, sym) != 0) continue;
    if (value <= 0 || value > (1 << 24)) {
      ir_error(&r->ctx->diag, api_loc,
               "extent %s = %lld is out of range (1 to 16777216)", sym,
               (long long)value);
      return -1;
    }
    r->ext.value[i] = value;
    r->ext_set[i] = true;
    return 0;
  }
  ir_error(&r->ctx->diag, api_loc, "operator %s has no extent named '%s'",
           ir->name, sym);
  return -1;
}

/* The tensors a caller binds are the inputs and outputs, which come first
 * in IrOp.tensors. */
int gop_run_num_tensors(const GopRun *r) { return r->op->ir->ninputs + r->op->ir->noutputs; }

static const IrTensor *bindable(const GopRun *r, int i) {
  return i >= 0 && i < gop_run_num_tensors(r) ? r->op->ir->tensors[i] : NULL;
}

const char *gop_run_tensor_name(const GopRun *r, int i) {
  const IrTensor *t = bindable(r, i);
  return t ? t->name : NULL;
}

bool gop_run_tensor_is_output(const GopRun *r, int i) {
  const IrTensor *t = bindable(r, i);
  return t && t->role == IR_ROLE_OUT;
}

/* Reports the first extent of `t` that is still unset; true if all set. */
static bool extents_set(const GopRun *r, const IrTensor *t, bool report) {
  for (int d = 0; d < t->ndims; d++) {
    const IrSym *s = t->dims[d].sym;
    if (s && !r->ext_set[s->id]) {
      if (report)
        ir_error(&r->ctx->diag, api_loc,
                 "extent %s of tensor %s is not set (e.g. --%s 64)", s->name,
                 t->name, s->name);
      return false;
    }
  }
  return true;
}

int gop_run_tensor_shape(const GopRun *r, int i, int64_t shape[8]) {
  const IrTensor *t = bindable(r, i);
  if (!t || !extents_set(r, t, false)) return -1;
  int64_t s[IR_MAX_IDX];
  int rank = ir_tensor_shape(t, r->graph->rt, &r->ext, s);
  for (int k = 0; k < rank; k++) shape[k] = s[k];
  return rank;
}

int gop_run_bind(GopRun *r, const char *name, float *data, int64_t numel) {
  const IrOp *ir = r->op->ir;
  for (int i = 0; i < gop_run_num_tensors(r); i++) {
    const IrTensor *t = ir->tensors[i];
    if (strcmp(t->name, name) != 0) continue;
    if (!extents_set(r, t, true)) return -1;
    int64_t want = ir_tensor_numel(t, r->graph->rt, &r->ext);
    if (numel != want || !data) {
      ir_error(&r->ctx->diag, api_loc,
               "tensor %s needs %lld elements on this graph, got %lld%s", name,
               (long long)want, (long long)numel, data ? "" : " (NULL data)");
      return -1;
    }
    r->data[i] = data;
    r->numel[i] = numel;
    return 0;
  }
  ir_error(&r->ctx->diag, api_loc, "operator %s has no input or output named '%s'",
           ir->name, name);
  return -1;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int gop_run_exec(GopRun *r) {
  const IrOp *ir = r->op->ir;
  for (int i = 0; i < ir->nsyms; i++)
    if (!r->ext_set[i]) {
      ir_error(&r->ctx->diag, api_loc, "extent %s is not set (e.g. --%s 64)",
               ir->syms[i]->name, ir->syms[i]->name);
      return -1;
    }
  for (int i = 0; i < gop_run_num_tensors(r); i++) {
    const IrTensor *t = ir->tensors[i];
    if (!r->data[i] || r->numel[i] != ir_tensor_numel(t, r->graph->rt, &r->ext)) {
      ir_error(&r->ctx->diag, api_loc, "%s %s is not bound%s",
               t->role == IR_ROLE_OUT ? "output" : "input", t->name,
               r->data[i] ? " with its current shape" : "");
      return -1;
    }
  }
  IrInterpArgs args = {
      .graph = r->graph->rt,
      .extents = r->ext,
      .mode = IR_INTERP_F32,
      .buffers = (void **)r->data,
  };
  double t0 = now_seconds();
  int rc = ir_interp_run(ir, &args, &r->ctx->diag);
  r->seconds = now_seconds() - t0;
  return rc;
}

double gop_run_seconds(const GopRun *r) { return r->seconds; }

/* ---- .npy arrays ---- */

int gop_array_read(GopContext *ctx, const char *path, GopArray *out) {
  memset(out, 0, sizeof *out);
  RtArray a;
  if (rt_npy_read(path, &a, &ctx->diag) != 0) return -1;
  int64_t n = rt_array_numel(&a);
  if (a.dtype != IR_DT_F32 && a.dtype != IR_DT_F64) {
    ir_error(&ctx->diag, (Loc){path, 0, 0},
             "tensor data must be float32 (or float64), not %s",
             ir_dtype_name(a.dtype));
    rt_array_free(&a);
    return -1;
  }
  float *data = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  if (!data) {
    ir_error(&ctx->diag, (Loc){path, 0, 0}, "out of memory reading %lld values",
             (long long)n);
    rt_array_free(&a);
    return -1;
  }
  for (int64_t i = 0; i < n; i++)
    data[i] = a.dtype == IR_DT_F32 ? ((float *)a.data)[i] : (float)((double *)a.data)[i];
  out->ndim = a.ndim;
  for (int d = 0; d < a.ndim; d++) out->shape[d] = a.shape[d];
  out->data = data;
  rt_array_free(&a);
  return 0;
}

int gop_array_write(GopContext *ctx, const char *path, const GopArray *a) {
  RtArray r = {.dtype = IR_DT_F32, .ndim = a->ndim, .data = a->data};
  for (int d = 0; d < a->ndim; d++) r.shape[d] = a->shape[d];
  return rt_npy_write(path, &r, &ctx->diag);
}

void gop_array_free(GopArray *a) {
  free(a->data);
  a->data = NULL;
}
