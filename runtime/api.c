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
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "gop.h"
#include "lang/lang.h"
#include "passes/passes.h"
#include "runtime/runtime.h"

struct GopContext {
  Arena *arena;
  Diag diag;
  GopModule *stdlib;
  GopGraph *graphs;
  GopRun *runs; /* to free their compiled programs */
  GopCompileTimes times;
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
  const char *doc; /* the comment above its definition, "" if none */
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
  GopDevice device;
  const char *schedule, *target; /* copies in the arena; NULL: defaults */
  int warmup, reps;
  CgProgram prog; /* compiled once, or read from a pack */
  bool have_prog, from_pack;
  GopRunStats stats;
  RtExecResult exec;
  GopRun *next; /* in the context's list */
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
  for (GopRun *r = ctx->runs; r; r = r->next) cg_program_free(&r->prog);
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

/* The comment block above the op's definition in `text` (NULL: the stdlib
 * file it comes from). */
static const char *op_doc(Arena *a, const IrOp *op, const char *text) {
  for (const LangStdlibFile *f = lang_stdlib_files; !text && f->name; f++)
    if (op->loc.file && strcmp(f->name, op->loc.file) == 0) text = f->text;
  return lang_doc_comment(a, text, op->loc.line);
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
    op->doc = op_doc(ctx->arena, ir->ops[i], text);
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
const char *gop_op_doc(const GopOp *op) { return op->doc; }
bool gop_op_representative(const GopOp *op) {
  return op->module->text == NULL && lang_ops_representative(op->ir->name);
}

static const char *const stage_names[] = {"ast", "ir", "sched", "lowered", "llvm", "ptx"};

int gop_stage_lookup(const char *name) {
  for (int i = 0; name && i < (int)(sizeof stage_names / sizeof *stage_names); i++)
    if (strcmp(name, stage_names[i]) == 0) return i;
  return -1;
}

static double now_ms(void) { return rt_wall_seconds() * 1e3; }

/* Named schedules visible to an operator: its own file's first, then the
 * standard library's. */
static IrModule *schedule_library(GopContext *ctx, const GopModule *m) {
  IrModule *lib = ir_module_new(ctx->arena);
  for (int i = 0; i < m->ir->nscheds; i++) ir_module_add_sched(lib, m->ir->scheds[i]);
  GopModule *std = gop_stdlib(ctx);
  for (int i = 0; std && i < std->ir->nscheds; i++)
    if (!ir_module_find_sched(lib, std->ir->scheds[i]->name))
      ir_module_add_sched(lib, std->ir->scheds[i]);
  return lib;
}

/* Whether the loop nest `list` (and what follows it) has a feature loop
 * `f` that lanes could cover. */
static bool has_feature_loop(const IrNode *list) {
  for (const IrNode *n = list; n; n = n->next)
    if (n->kind == IR_LOOP &&
        ((n->loop.kind == IR_LOOP_RANGE && strcmp(n->loop.var->name, "f") == 0) ||
         has_feature_loop(n->loop.body)))
      return true;
  return false;
}

/* The schedule an operator gets when none is given. Measured on an H100
 * over the stdlib (bench/results/2026-11-22-H100-gpu-suite1.csv): an edge-
 * parallel warp per edge with lanes on features (warp_edge(1, 1)) was the
 * fastest or near it for every operator with a feature loop, 5 to 40 times
 * faster than a warp per vertex on skewed graphs, where one heavy vertex
 * serialises a warp; operators without one that lanes can cover (u_dot_v's
 * feature loop is a reduction into a local, edge_softmax has none) were
 * fastest with a thread per edge. A vertex-parallel mapping
 * (pass_default_schedule) remains for operators neither applies to. */
static int default_schedule(GopContext *ctx, IrOp *op) {
  bool lanes_on_f = true; /* every stage has a feature loop */
  for (const IrNode *st = op->body; st; st = st->next)
    if (st->kind == IR_LOOP) lanes_on_f &= has_feature_loop(st->loop.body);
  const char *tries[] = {lanes_on_f ? "warp_edge(1, 1)" : "thread_edge(1, 1)",
                         "thread_edge(1, 1)"};
  GopModule *std = gop_stdlib(ctx);
  IrModule *lib = std ? schedule_library(ctx, std) : NULL;
  for (int i = 0; lib && i < 2; i++) {
    Diag quiet; /* a refusal here only means: try the next mapping */
    ir_diag_init(&quiet, NULL);
    int rc = pass_schedule_text(op, lib, tries[i], ctx->arena, &quiet);
    ir_diag_free(&quiet);
    if (rc == 0) return 0;
  }
  return pass_default_schedule(op, ctx->arena, &ctx->diag);
}

/* A scheduled copy of `op` (lowered to GPU-ready IR when `lower`); NULL
 * after reporting. The original is never changed. */
static IrOp *schedule_op(const GopOp *op, const GopCompileOptions *o, bool lower) {
  GopContext *ctx = op->module->ctx;
  IrOp *c = pass_op_copy(op->ir, ctx->arena);
  double t0 = now_ms();
  int rc = o && o->schedule
               ? pass_schedule_text(c, schedule_library(ctx, op->module), o->schedule,
                                    ctx->arena, &ctx->diag)
               : default_schedule(ctx, c);
  double t1 = now_ms();
  ctx->times.schedule_ms = t1 - t0;
  if (rc != 0) return NULL;
  if (lower) {
    FILE *dump = o && o->dump ? o->dump : stdout;
    rc = pass_lower(c, ctx->arena, &ctx->diag, o ? o->dump_after : NULL, dump);
    ctx->times.lower_ms = now_ms() - t1;
    if (rc != 0) return NULL;
  }
  return c;
}

/* The target to compile for: as asked, else the GPU's, else sm_90. */
static const char *pick_target(GopContext *ctx, const char *asked) {
  if (asked) return cg_target_check(asked, &ctx->diag) == 0 ? asked : NULL;
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  const char *t = CG_DEFAULT_TARGET;
  if (rt_cuda_open(&quiet) == RT_OK) {
    char *found = ir_sprintf(ctx->arena, "sm_%d", rt_cuda_cc());
    if (cg_target_known(found)) t = found;
  }
  ir_diag_free(&quiet);
  return t;
}

/* Schedules, lowers and compiles `op` into `out`. 0 or -1. */
static int compile_op(const GopOp *op, const GopCompileOptions *o, CgProgram *out) {
  GopContext *ctx = op->module->ctx;
  const char *target = pick_target(ctx, o ? o->target : NULL);
  if (!target) return -1;
  IrOp *lowered = schedule_op(op, o, true);
  if (!lowered) return -1;
  if (cg_compile(lowered, target, out, &ctx->diag) != 0) return -1;
  ctx->times.llvm_build_ms = out->times.build_ms;
  ctx->times.llvm_opt_ms = out->times.opt_ms;
  ctx->times.ptx_emit_ms = out->times.emit_ms;
  /* A pack carries the operator as written, so that a machine without the
   * schedule can still check the kernels against the interpreter. */
  free(out->ir);
  out->ir = ir_op_to_string(op->ir);
  return 0;
}

void gop_compile_times(const GopContext *ctx, GopCompileTimes *out) { *out = ctx->times; }

char *gop_emit(const GopOp *op, GopStage stage) { return gop_emit_with(op, stage, NULL); }

char *gop_emit_with(const GopOp *op, GopStage stage, const GopCompileOptions *o) {
  GopContext *ctx = op->module->ctx;
  memset(&ctx->times, 0, sizeof ctx->times);
  switch (stage) {
  case GOP_STAGE_IR:
    return ir_op_to_string(op->ir);
  case GOP_STAGE_SCHED:
  case GOP_STAGE_LOWERED: {
    IrOp *c = schedule_op(op, o, stage == GOP_STAGE_LOWERED);
    return c ? ir_op_to_string(c) : NULL;
  }
  case GOP_STAGE_LLVM: {
    const char *target = pick_target(ctx, o ? o->target : NULL);
    IrOp *c = target ? schedule_op(op, o, true) : NULL;
    return c ? cg_emit_llvm(c, target, true, &ctx->diag) : NULL;
  }
  case GOP_STAGE_PTX: {
    CgProgram p = {0};
    if (compile_op(op, o, &p) != 0) return NULL;
    char *text = strdup(p.ptx);
    cg_program_free(&p);
    return text;
  }
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

int gop_pack(const GopOp *op, const GopCompileOptions *o, const char *path) {
  CgProgram p = {0};
  if (compile_op(op, o, &p) != 0) return -1;
  int rc = cg_pack_write(&p, path, &op->module->ctx->diag);
  cg_program_free(&p);
  return rc;
}

int gop_pass_count(void) {
  int n;
  pass_table(&n);
  return n;
}

const char *gop_pass_name(int i) {
  int n;
  const PassInfo *t = pass_table(&n);
  return i >= 0 && i < n ? t[i].name : NULL;
}

const char *gop_pass_summary(int i) {
  int n;
  const PassInfo *t = pass_table(&n);
  return i >= 0 && i < n ? t[i].summary : NULL;
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
  r->device = GOP_DEVICE_AUTO;
  r->warmup = 3;
  r->reps = 20;
  r->next = ctx->runs;
  ctx->runs = r;
  return r;
}

void gop_run_set_device(GopRun *r, GopDevice dev) { r->device = dev; }
const GopOp *gop_run_op(const GopRun *r) { return r->op; }
const GopGraph *gop_run_graph(const GopRun *r) { return r->graph; }

int gop_run_set_compile(GopRun *r, const GopCompileOptions *o) {
  if (r->from_pack) {
    ir_error(&r->ctx->diag, api_loc, "a kernel pack is already compiled: "
             "its schedule and target cannot change");
    return -1;
  }
  if (o && o->target && cg_target_check(o->target, &r->ctx->diag) != 0) return -1;
  r->schedule = o && o->schedule ? ir_strdup(r->ctx->arena, o->schedule) : NULL;
  r->target = o && o->target ? ir_strdup(r->ctx->arena, o->target) : NULL;
  if (r->have_prog) cg_program_free(&r->prog);
  r->have_prog = false;
  return 0;
}

void gop_run_set_timing(GopRun *r, int warmup, int reps) {
  r->warmup = warmup < 0 ? 0 : warmup;
  r->reps = reps < 0 ? 0 : reps;
}

GopRun *gop_run_from_pack(GopContext *ctx, const char *path, const GopGraph *g) {
  CgProgram p = {0};
  if (!path || cg_pack_read(path, &p, &ctx->diag) != 0) return NULL;
  const char *file = ir_strdup(ctx->arena, path);
  IrModule *ir = p.ir ? lang_parse_ir(ctx->arena, &ctx->diag, file, ir_strdup(ctx->arena, p.ir))
                      : NULL;
  if (!ir || ir->nops != 1) {
    if (ir || !p.ir)
      ir_error(&ctx->diag, (Loc){file, 0, 0},
               "the kernel pack does not carry its operator's IR");
    cg_program_free(&p);
    return NULL;
  }
  GopModule *m = wrap_module(ctx, ir, file, NULL);
  const IrOp *op = ir->ops[0];
  /* The kernels name tensors and extents by id: the IR must agree. */
  bool same = p.ntensors >= op->ntensors && p.nsyms == op->nsyms;
  for (int i = 0; same && i < op->ntensors; i++) same = strcmp(p.tensors[i].name, op->tensors[i]->name) == 0;
  for (int i = 0; same && i < op->nsyms; i++) same = strcmp(p.syms[i], op->syms[i]->name) == 0;
  if (!same) {
    ir_error(&ctx->diag, (Loc){file, 0, 0},
             "the kernels of this pack do not match the operator it carries");
    cg_program_free(&p);
    return NULL;
  }
  GopRun *r = gop_run_new(ctx, m->ops[0], g);
  if (!r) {
    cg_program_free(&p);
    return NULL;
  }
  r->prog = p;
  r->have_prog = r->from_pack = true;
  r->target = r->prog.target;
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

/* Checks that every extent is set and every input and output is bound
 * with its current shape. */
static int check_bound(GopRun *r) {
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
  return 0;
}

static int interpret(GopRun *r, float **data) {
  IrInterpArgs args = {
      .graph = r->graph->rt,
      .extents = r->ext,
      .mode = IR_INTERP_F32,
      .buffers = (void **)data,
  };
  return ir_interp_run(r->op->ir, &args, &r->ctx->diag);
}

/* Opens the GPU for a run. On failure AUTO runs fall back to the
 * interpreter with a note; GPU runs report the driver's message. */
static RtStatus open_gpu(GopRun *r) {
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  RtStatus s = rt_cuda_open(&quiet);
  if (s != RT_OK) {
    const char *msg = quiet.buf ? quiet.buf : rt_status_name(s);
    if (strncmp(msg, "error: ", 7) == 0) msg += 7; /* said again below */
    if (r->device == GOP_DEVICE_GPU) {
      ir_error(&r->ctx->diag, api_loc, "cannot run on the GPU: %s", msg);
    } else {
      size_t n = strcspn(msg, "\n");
      snprintf(r->stats.note, sizeof r->stats.note,
               "no GPU (%.*s): ran on the reference interpreter", (int)(n > 180 ? 180 : n), msg);
    }
  }
  ir_diag_free(&quiet);
  return s;
}

static int run_gpu(GopRun *r) {
  GopContext *ctx = r->ctx;
  if (!r->have_prog) {
    GopCompileOptions o = {.schedule = r->schedule, .target = r->target};
    if (compile_op(r->op, &o, &r->prog) != 0) return -1;
    r->have_prog = true;
    r->stats.compile = ctx->times;
  }
  /* The program may hold temporaries the lowering added: bind by id. */
  float **host = IR_NEW_ARRAY(ctx->arena, float *, r->prog.ntensors + 1);
  for (int i = 0; i < gop_run_num_tensors(r); i++) host[i] = r->data[i];
  RtExecOptions opt = {.warmup = r->warmup, .reps = r->reps};
  RtStatus s = rt_exec_program(&r->prog, r->graph->rt, r->ext.value, host, &opt, &r->exec,
                               &ctx->diag);
  if (s != RT_OK) {
    r->stats.gpu_status = s;
    return -1;
  }
  GopRunStats *st = &r->stats;
  st->on_gpu = true;
  snprintf(st->device, sizeof st->device, "%s", rt_cuda_device_name());
  snprintf(st->target, sizeof st->target, "%s", r->prog.target);
  snprintf(st->schedule, sizeof st->schedule, "%s",
           r->from_pack ? "from the kernel pack" : r->schedule ? r->schedule : "default");
  st->median_ms = r->exec.timing.median_ms;
  st->min_ms = r->exec.timing.min_ms;
  st->fewest_bytes = r->exec.fewest_bytes;
  st->gbps = r->exec.gbps;
  st->copy_gbps = r->exec.copy_gbps;
  st->bound_fraction = st->copy_gbps > 0 ? st->gbps / st->copy_gbps : 0;
  return 0;
}

int gop_run_exec(GopRun *r) {
  if (check_bound(r) != 0) return -1;
  GopCompileTimes keep = r->stats.compile;
  memset(&r->stats, 0, sizeof r->stats);
  r->stats.compile = keep;
  memset(&r->exec, 0, sizeof r->exec);
  double t0 = rt_wall_seconds();
  int rc;
  RtStatus gpu = r->device == GOP_DEVICE_INTERP ? RT_ERR : open_gpu(r);
  if (r->device != GOP_DEVICE_INTERP && gpu == RT_OK) {
    rc = run_gpu(r);
  } else if (r->device == GOP_DEVICE_GPU) {
    r->stats.gpu_status = gpu;
    rc = -1;
  } else {
    snprintf(r->stats.device, sizeof r->stats.device, "interpreter");
    rc = interpret(r, r->data);
  }
  r->seconds = rt_wall_seconds() - t0;
  return rc;
}

const GopRunStats *gop_run_stats(const GopRun *r) { return &r->stats; }

void gop_run_print_memory(const GopRun *r, FILE *out) {
  if (r->stats.on_gpu) rt_exec_print_memory(out, &r->exec);
}

/* The reduction that targets tensor `t` anywhere in `list`, or ASSIGN. */
static IrRed reduction_of(const IrNode *list, const IrTensor *t) {
  for (const IrNode *n = list; n; n = n->next) {
    if (n->kind == IR_STORE && n->acc.tensor == t && n->acc.red != IR_RED_ASSIGN)
      return n->acc.red;
    const IrNode *inner = n->kind == IR_LOOP ? n->loop.body : n->kind == IR_IF ? n->ifs.then : NULL;
    IrRed r = inner ? reduction_of(inner, t) : IR_RED_ASSIGN;
    if (r != IR_RED_ASSIGN) return r;
  }
  return IR_RED_ASSIGN;
}

int gop_run_check(GopRun *r, double *worst) {
  GopContext *ctx = r->ctx;
  const IrOp *ir = r->op->ir;
  if (worst) *worst = 0;
  if (check_bound(r) != 0) return -1;
  int n = gop_run_num_tensors(r);
  float **ref = IR_NEW_ARRAY(ctx->arena, float *, n + 1);
  int status = 0;
  for (int i = 0; i < n; i++) {
    if (ir->tensors[i]->role != IR_ROLE_OUT) {
      ref[i] = r->data[i];
      continue;
    }
    ref[i] = malloc(sizeof(float) * (size_t)(r->numel[i] ? r->numel[i] : 1));
    if (!ref[i]) {
      ir_error(&ctx->diag, api_loc, "out of memory for the reference of %s", ir->tensors[i]->name);
      status = -1;
    }
  }
  if (status == 0 && interpret(r, ref) != 0) status = -1;
  for (int i = 0; status >= 0 && i < n; i++) {
    const IrTensor *t = ir->tensors[i];
    if (t->role != IR_ROLE_OUT) continue;
    bool exact = reduction_of(ir->body, t) == IR_RED_MAX || reduction_of(ir->body, t) == IR_RED_MIN;
    double diff2 = 0, ref2 = 0, worst_abs = -1;
    int64_t worst_at = -1, nan_at = -1;
    for (int64_t k = 0; k < r->numel[i]; k++) {
      double a = r->data[i][k], b = ref[i][k];
      if (isnan(a) || isnan(b)) {
        if (nan_at < 0) nan_at = k;
        continue;
      }
      double dd = fabs(a - b);
      diff2 += dd * dd;
      ref2 += b * b;
      if (dd > worst_abs) {
        worst_abs = dd;
        worst_at = k;
      }
    }
    double rel = ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2);
    if (worst && rel > *worst) *worst = rel;
    if (nan_at >= 0) {
      ir_error(&ctx->diag, api_loc, "check failed: %s[%lld] is NaN (got %g, reference %g)",
               t->name, (long long)nan_at, r->data[i][nan_at], ref[i][nan_at]);
      status = 1;
    } else if (exact ? worst_abs > 0 : rel >= 1e-5) {
      ir_error(&ctx->diag, api_loc,
               "check failed: %s differs from the interpreter (relative L2 %.3g%s); "
               "worst at element %lld: got %.9g, reference %.9g",
               t->name, rel, exact ? ", max/min must match exactly" : ", limit 1e-5",
               (long long)worst_at, r->data[i][worst_at], ref[i][worst_at]);
      status = 1;
    }
  }
  for (int i = 0; i < n; i++)
    if (ir->tensors[i]->role == IR_ROLE_OUT) free(ref[i]);
  return status;
}

double gop_run_seconds(const GopRun *r) { return r->seconds; }

/* ---- REPL support ---- */

int gop_op_num_schedules(const GopOp *op) {
  return schedule_library(op->module->ctx, op->module)->nscheds;
}

const char *gop_op_schedule_signature(const GopOp *op, int i) {
  GopContext *ctx = op->module->ctx;
  const IrModule *lib = schedule_library(ctx, op->module);
  if (i < 0 || i >= lib->nscheds) return NULL;
  const IrSchedDef *s = lib->scheds[i];
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return s->name;
  fprintf(f, "%s(", s->name);
  for (int k = 0; k < s->nparams; k++) fprintf(f, "%s%s", k ? ", " : "", s->params[k]->name);
  fputc(')', f);
  fclose(f);
  const char *sig = ir_strdup(ctx->arena, text);
  free(text);
  return sig;
}

/* Appends each loop name of `list` not yet in `out` (space-separated). */
static void collect_loops(const IrNode *list, FILE *out, char **seen, size_t *len) {
  for (const IrNode *n = list; n; n = n->next) {
    if (n->kind == IR_LOOP) {
      const char *name = n->loop.var->name;
      fflush(out); /* *seen is current only after a flush */
      bool dup = false;
      for (const char *p = *seen; p && *p && !dup; p += strcspn(p, " "), p += *p == ' ') {
        size_t k = strcspn(p, " ");
        dup = k == strlen(name) && strncmp(p, name, k) == 0;
      }
      if (!dup) fprintf(out, "%s%s", *len ? " " : "", name);
      collect_loops(n->loop.body, out, seen, len);
    } else if (n->kind == IR_IF) {
      collect_loops(n->ifs.then, out, seen, len);
    }
  }
}

char *gop_op_loop_names(const GopOp *op, const char *schedule) {
  const IrOp *ir = op->ir;
  if (schedule && *schedule) {
    GopCompileOptions o = {.schedule = schedule};
    ir = schedule_op(op, &o, false);
    if (!ir) return NULL;
  }
  char *names = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&names, &len);
  if (!f) return NULL;
  collect_loops(ir->body, f, &names, &len);
  fclose(f);
  return names;
}

static bool is_identifier(const char *s) {
  if (!s || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return false;
  for (s++; *s; s++)
    if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9')))
      return false;
  return true;
}

static void write_text(FILE *f, const void *text) { fputs(text, f); }

int gop_save_schedule(GopContext *ctx, const char *path, const char *name,
                      const char *schedule) {
  if (!path || !*path) {
    ir_error(&ctx->diag, api_loc, "gop_save_schedule: no file given");
    return -1;
  }
  if (!is_identifier(name)) {
    ir_error(&ctx->diag, api_loc, "cannot save the schedule as '%s': not a name "
             "(letters, digits and _, not starting with a digit)", name ? name : "(null)");
    return -1;
  }
  if (!schedule || !schedule[strspn(schedule, " \t;")]) {
    ir_error(&ctx->diag, api_loc, "cannot save schedule %s: it has no directives", name);
    return -1;
  }
  const char *old = "";
  FILE *probe = fopen(path, "rb");
  if (probe) { /* a file that is there must be read whole, or left alone */
    fclose(probe);
    old = read_text(ctx, path);
    if (!old) return -1;
  } else if (errno != ENOENT) {
    ir_error(&ctx->diag, (Loc){path, 0, 0}, "cannot open: %s", strerror(errno));
    return -1;
  }
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return -1;
  fputs(old, f);
  if (*old && old[strlen(old) - 1] != '\n') fputc('\n', f);
  if (*old) fputc('\n', f);
  fprintf(f, "schedule %s() {\n", name);
  for (const char *p = schedule; *p;) {
    p += strspn(p, " \t;");
    size_t k = strcspn(p, ";");
    while (k > 0 && (p[k - 1] == ' ' || p[k - 1] == '\t')) k--;
    if (k) fprintf(f, "  %.*s\n", (int)k, p);
    p += k;
  }
  fputs("}\n", f);
  fclose(f);
  /* Check the result before writing it: a file that compiled must still
   * compile, so that `load` keeps working after a save. */
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  IrModule *m = lang_compile(ctx->arena, &quiet, ir_strdup(ctx->arena, path),
                             ir_strdup(ctx->arena, text));
  if (!m) {
    const char *msg = quiet.buf ? quiet.buf : "";
    int n = (int)strlen(msg);
    while (n > 0 && msg[n - 1] == '\n') n--; /* the error adds its own */
    ir_error(&ctx->diag, (Loc){path, 0, 0}, "cannot save schedule %s: the file would "
             "not compile with it:\n%.*s", name, n, msg);
    ir_diag_free(&quiet);
    free(text);
    return -1;
  }
  ir_diag_free(&quiet);
  int rc = ir_write_file(path, "the schedule", write_text, text, &ctx->diag);
  free(text);
  return rc;
}

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

/* ---- tuning ---- */

const char *gop_schedule_source_name(GopScheduleSource s) {
  return s == GOP_SCHEDULE_FROM_DATABASE    ? "database"
         : s == GOP_SCHEDULE_FROM_PREDICTOR ? "predictor"
                                            : "cost model";
}

/* The learned predictor's choice among `pts` (ranked by the model): 1 when
 * it chose (pts re-sorted), 0 when skipped (`note` says why), -1 after
 * reporting a model file that is refused. */
static int predict_choice(GopContext *ctx, const char *db_path, const TuneOpShape *shape,
                          TunePoint *pts, int n, const TuneGraphSig *sig, int64_t F,
                          char *note, size_t size) {
  char *path = tune_predictor_path(db_path);
  if (!path) return 0;
  FILE *probe = fopen(path, "rb");
  if (!probe) { /* no model trained: the usual case, nothing to say */
    free(path);
    return 0;
  }
  fclose(probe);
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  bool have = rt_xgb_open(&quiet) == 0;
  if (!have) {
    const char *msg = quiet.buf ? quiet.buf : "";
    const char *e = strstr(msg, "error: ");
    snprintf(note, size, "predictor skipped: %.*s", (int)strcspn(e ? e + 7 : msg, "\n"),
             e ? e + 7 : msg);
  }
  ir_diag_free(&quiet);
  int rc = 0;
  if (have) {
    TunePredictor *p = tune_predictor_load(path, &ctx->diag);
    rc = p && tune_predictor_rank(p, shape, pts, n, sig, F, NULL, &ctx->diag) == 0 ? 1 : -1;
    tune_predictor_free(p);
  }
  free(path);
  return rc;
}

int gop_choose_schedule(const GopOp *op, const GopGraph *g, int64_t F, const char *db_path,
                        GopScheduleChoice *out) {
  GopContext *ctx = op->module->ctx;
  memset(out, 0, sizeof *out);
  TuneGraphSig sig;
  tune_graph_sig(g->rt, &sig);
  TuneOpShape shape;
  tune_op_shape(op->ir, &shape);
  TunePoint *pts = NULL;
  int n = tune_space_enumerate(op->ir, schedule_library(ctx, op->module), ctx->arena, &pts,
                               &ctx->diag);
  if (n < 0) return -1;
  if (n == 0) {
    free(pts);
    ir_error(&ctx->diag, op->ir->loc, "no named schedule applies to operator %s",
             op->ir->name);
    return -1;
  }
  tune_model_rank(&shape, pts, n, &sig, F);
  out->source = GOP_SCHEDULE_FROM_MODEL;
  out->candidates = n;
  if (db_path) {
    int p = predict_choice(ctx, db_path, &shape, pts, n, &sig, F, out->note, sizeof out->note);
    if (p < 0) {
      free(pts);
      return -1;
    }
    if (p > 0) out->source = GOP_SCHEDULE_FROM_PREDICTOR;
  }
  TuneCost cost;
  tune_model_cost(&shape, &pts[0], &sig, F, &cost);
  snprintf(out->schedule, sizeof out->schedule, "%s", pts[0].text);
  out->model_us = cost.time_us;
  free(pts);
  if (!db_path) return 0;

  TuneDb *db = tune_db_open(db_path, &ctx->diag);
  if (!db) return -1;
  Diag quiet; /* no GPU only means no measurement can match */
  ir_diag_init(&quiet, NULL);
  bool gpu = rt_cuda_open(&quiet) == RT_OK;
  ir_diag_free(&quiet);
  TuneKey key = {.op_hash = tune_op_hash(op->ir),
                 .F = shape.feature_loop ? F : 0,
                 .dtype = "f32",
                 .graph = sig,
                 .gpu = gpu ? rt_cuda_device_name() : "none",
                 .cc = gpu ? rt_cuda_cc() : 0,
                 .compiler = GOP_VERSION};
  TuneRecord best;
  int found = tune_db_get_best(db, &key, &best, &ctx->diag);
  tune_db_close(db);
  if (found < 0) return -1;
  if (found) {
    snprintf(out->schedule, sizeof out->schedule, "%s", best.schedule);
    out->source = GOP_SCHEDULE_FROM_DATABASE;
    out->note[0] = 0;
    out->measured_ms = best.time_ms;
    TunePoint p;
    if (tune_point_make(op->ir, schedule_library(ctx, op->module), best.schedule, ctx->arena,
                        &p, NULL) == 0) {
      tune_model_cost(&shape, &p, &sig, F, &cost);
      out->model_us = cost.time_us;
    } else {
      out->model_us = 0; /* a schedule the model does not know */
    }
  }
  return 0;
}

/* ---- the tuner ---- */

static void forward_progress(void *ctx, const TuneProgress *p) {
  const GopTuneOptions *o = ctx;
  GopTuneProgress q = {p->phase, p->done, p->total, p->elapsed_s, p->budget_s,
                       p->current, p->best_ms, p->best};
  o->progress(o->progress_ctx, &q);
}

/* splitmix64: gopc run's inputs (tools/gopc.c fill_random), so that the
 * tuner sees the data gopc run would. */
static void fill_uniform(float *x, int64_t n, uint64_t seed) {
  uint64_t state = seed;
  for (int64_t i = 0; i < n; i++) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    x[i] = (float)((double)(z >> 11) * 0x1.0p-53 * 2.0 - 1.0);
  }
}

int gop_tune(GopRun *r, const GopTuneOptions *o, GopTuneReport *report) {
  GopContext *ctx = r->ctx;
  const IrOp *ir = r->op->ir;
  GopTuneOptions opts = o ? *o : (GopTuneOptions){0};
  memset(report, 0, sizeof *report);
  for (int i = 0; i < ir->nsyms; i++)
    if (!r->ext_set[i]) {
      ir_error(&ctx->diag, api_loc, "extent %s is not set (e.g. --%s 64)", ir->syms[i]->name,
               ir->syms[i]->name);
      return -1;
    }
  if (opts.budget_s < 0 || opts.max_candidates < 0 || opts.warmup < 0 || opts.reps < 0) {
    ir_error(&ctx->diag, api_loc, "gop_tune: a negative budget, count, warm-up or repeat");
    return -1;
  }
  if (opts.target && cg_target_check(opts.target, &ctx->diag) != 0) return -1;
  if (r->from_pack) {
    ir_error(&ctx->diag, api_loc, "a kernel pack is compiled already: there is nothing to tune");
    return -1;
  }
  /* The database is checked before the GPU, so that every argument is
   * validated on a machine without one too. */
  TuneDb *db = NULL;
  FILE *exists = opts.db_path ? fopen(opts.db_path, "rb") : NULL;
  if (exists) fclose(exists); /* a new one is created only once there is a GPU */
  if (exists && !(db = tune_db_open(opts.db_path, &ctx->diag))) return -1;
  /* No GPU: say so before anything slow (the reference). */
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  RtStatus gs = rt_cuda_open(&quiet);
  if (gs != RT_OK) {
    const char *msg = quiet.buf ? quiet.buf : rt_status_name(gs);
    if (strncmp(msg, "error: ", 7) == 0) msg += 7;
    ir_error(&ctx->diag, api_loc, "cannot tune without a GPU: %.*s", (int)strcspn(msg, "\n"),
             msg);
    ir_diag_free(&quiet);
    report->gpu_status = gs;
    tune_db_close(db);
    return -1;
  }
  ir_diag_free(&quiet);
  if (opts.db_path && !db && !(db = tune_db_open(opts.db_path, &ctx->diag))) return -1;

  int64_t F = 0;
  for (int i = 0; i < ir->nsyms; i++)
    if (strcmp(ir->syms[i]->name, "F") == 0) F = r->ext.value[i];
  float **inputs = IR_NEW_ARRAY(ctx->arena, float *, ir->ntensors + 1);
  float **owned = IR_NEW_ARRAY(ctx->arena, float *, ir->ntensors + 1);
  int rc = 0;
  for (int i = 0; i < ir->ntensors; i++) {
    const IrTensor *t = ir->tensors[i];
    if (t->role != IR_ROLE_IN) continue;
    int64_t n = ir_tensor_numel(t, r->graph->rt, &r->ext);
    if (r->data[i] && r->numel[i] == n) {
      inputs[i] = r->data[i];
      continue;
    }
    inputs[i] = owned[i] = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!inputs[i]) {
      ir_error(&ctx->diag, api_loc, "out of memory for input %s", t->name);
      rc = -1;
      break;
    }
    fill_uniform(inputs[i], n, 1 * 1000003u + (uint64_t)i);
  }
  TuneReport rep = {0};
  if (rc == 0) {
    TuneJob job = {
        .op = ir,
        .lib = schedule_library(ctx, r->op->module),
        .g = r->graph->rt,
        .ext = r->ext,
        .F = F,
        .inputs = inputs,
        .target = opts.target,
        .budget_s = opts.budget_s > 0 ? opts.budget_s : 30,
        .max_candidates = opts.max_candidates,
        .warmup = opts.warmup || opts.reps ? opts.warmup : 3,
        .reps = opts.reps > 0 ? opts.reps : 20,
        .check_edges = opts.check_edges > 0    ? opts.check_edges
                       : opts.check_edges < 0 ? INT64_MAX
                                               : 2000000,
        .db = db,
        .compiler = GOP_VERSION,
        .stop = opts.stop,
        .progress = opts.progress ? forward_progress : NULL,
        .progress_ctx = &opts,
    };
    RtStatus s = tune_run(&job, &rep, &ctx->diag);
    if (s != RT_OK) {
      report->gpu_status = s == RT_NO_DRIVER || s == RT_NO_DEVICE ? (int)s : 0;
      rc = -1;
    }
    if (opts.progress) {
      GopTuneProgress fin = {.done = rep.n, .total = rep.n, .elapsed_s = rep.seconds,
                             .budget_s = job.budget_s,
                             .best_ms = rep.measured ? rep.results[0].median_ms : 0,
                             .best = rep.measured ? rep.results[0].schedule : NULL};
      opts.progress(opts.progress_ctx, &fin);
    }
  }
  tune_db_close(db);
  for (int i = 0; i < ir->ntensors; i++) free(owned[i]);
  GopTuneEntry *e = IR_NEW_ARRAY(ctx->arena, GopTuneEntry, rep.n + 1);
  for (int i = 0; i < rep.n; i++) {
    const TuneResult *t = &rep.results[i];
    e[i] = (GopTuneEntry){.status = (GopTuneStatus)t->outcome, .median_ms = t->median_ms,
                          .min_ms = t->min_ms, .gbps = t->gbps,
                          .bound_fraction = t->bound_fraction, .model_us = t->model_us,
                          .model_rank = t->order, .stored = t->stored};
    snprintf(e[i].schedule, sizeof e[i].schedule, "%s", t->schedule);
    snprintf(e[i].why, sizeof e[i].why, "%s", t->why);
  }
  snprintf(report->device, sizeof report->device, "%s", rep.device);
  report->candidates = rep.candidates;
  report->tried = rep.n;
  report->measured = rep.measured;
  report->wrong = rep.wrong;
  report->failed = rep.failed;
  report->stored = rep.stored;
  report->interrupted = rep.interrupted;
  report->out_of_budget = rep.out_of_budget;
  report->checked_on_interpreter = rep.check == TUNE_CHECK_INTERPRETER;
  snprintf(report->anchor, sizeof report->anchor, "%s", rep.anchor);
  report->seconds = rep.seconds;
  report->reference_s = rep.reference_s;
  report->copy_gbps = rep.copy_gbps;
  report->fewest_bytes = rep.fewest_bytes;
  report->entries = e;
  report->nentries = rep.n;
  tune_report_free(&rep);
  return rc;
}

void gop_tune_print(const GopTuneReport *rep, int top, FILE *out) {
  fprintf(out, "tuned on %s: %d of %d legal points tried in %.1f s (%s), %d verified, "
          "%d wrong, %d failed; %d stored\n",
          rep->device, rep->tried, rep->candidates, rep->seconds,
          rep->interrupted     ? "interrupted"
          : rep->out_of_budget ? "the budget ran out"
          : rep->tried < rep->candidates ? "the candidate limit"
                                         : "every point",
          rep->measured, rep->wrong, rep->failed, rep->stored);
  if (rep->checked_on_interpreter)
    fprintf(out, "checked: every output against the reference interpreter on this graph\n");
  else
    fprintf(out, "checked: every candidate against the interpreter on a proxy graph "
            "(rmat:12:8:7), and on this graph against the first verified one, %s, whose "
            "output on this graph was not checked by the interpreter (too large; "
            "--check-edges raises the limit)\n",
            *rep->anchor ? rep->anchor : "(none)");
  int shown = 0;
  for (int i = 0; i < rep->nentries; i++) {
    const GopTuneEntry *e = &rep->entries[i];
    if (e->status != GOP_TUNE_OK) continue;
    if (shown == 0)
      fprintf(out, "  %-4s %-28s %11s %10s %7s %11s\n", "rank", "schedule", "time (ms)",
              "GB/s", "bound", "model (us)");
    if (shown == top) break;
    fprintf(out, "  %-4d %-28s %11.4f %10.1f %6.1f%% %11.1f\n", shown + 1, e->schedule,
            e->median_ms, e->gbps, 100 * e->bound_fraction, e->model_us);
    shown++;
  }
  if (rep->measured == 0) fprintf(out, "  no candidate was verified\n");
  for (int i = 0; i < rep->nentries; i++) {
    const GopTuneEntry *e = &rep->entries[i];
    if (e->status == GOP_TUNE_WRONG)
      fprintf(out, "  WRONG  %s: %s (not stored)\n", e->schedule, e->why);
    else if (e->status == GOP_TUNE_FAILED)
      fprintf(out, "  failed %s: %s\n", e->schedule, e->why);
  }
  if (rep->fewest_bytes)
    fprintf(out, "bound: %.1f MB moved at least, at the measured copy bandwidth %.0f GB/s\n",
            (double)rep->fewest_bytes / 1e6, rep->copy_gbps);
}

void gop_tune_progress_print(void *ctx, const GopTuneProgress *p) {
  FILE *f = ctx ? ctx : stderr;
  bool tty = isatty(fileno(f));
  if (p->phase) {
    fprintf(f, "tune: %s...\n", p->phase);
    fflush(f);
    return;
  }
  char best[200] = "none verified yet";
  if (p->best) snprintf(best, sizeof best, "%.4f ms %s", p->best_ms, p->best);
  bool done = !p->current;
  if (tty) {
    enum { W = 24 };
    double frac = p->total ? (double)p->done / p->total : 1;
    double tfrac = p->budget_s > 0 ? p->elapsed_s / p->budget_s : 0;
    if (tfrac > frac) frac = tfrac; /* whichever ends the tune first */
    if (frac > 1 || done) frac = 1;
    int fill = (int)(frac * W);
    fprintf(f, "\r[%.*s%*s] %d/%d %4.1f/%.0f s  best %s%s%s\033[K", fill,
            "########################", W - fill, "", p->done, p->total, p->elapsed_s,
            p->budget_s, best, done ? "" : "  now ", done ? "" : p->current);
    if (done) fputc('\n', f);
  } else if (done) {
    fprintf(f, "tune: done, %d tried in %.1f s; best %s\n", p->done, p->elapsed_s, best);
  } else {
    fprintf(f, "tune: %d/%d %.1f/%.0f s: measuring %s (best %s)\n", p->done + 1, p->total,
            p->elapsed_s, p->budget_s, p->current, best);
  }
  fflush(f);
}

/* ---- the learned predictor ---- */

bool gop_predictor_available(char *why, size_t size) {
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  bool ok = rt_xgb_open(&quiet) == 0;
  if (!ok && why && size) {
    const char *msg = quiet.buf ? quiet.buf : "";
    const char *e = strstr(msg, "error: ");
    snprintf(why, size, "%.*s", (int)strcspn(e ? e + 7 : msg, "\n"), e ? e + 7 : msg);
  }
  ir_diag_free(&quiet);
  return ok;
}

int gop_predictor_train(GopContext *ctx, const char *db_path, GopTrainInfo *out) {
  memset(out, 0, sizeof *out);
  GopModule *std = gop_stdlib(ctx);
  TuneTrainInfo t;
  if (!db_path || tune_predictor_train_db(db_path, std ? std->ir : NULL, &t, &ctx->diag) != 0) {
    if (!db_path) ir_error(&ctx->diag, api_loc, "gop_predictor_train: no database given");
    return -1;
  }
  *out = (GopTrainInfo){.rows = t.rows, .graphs = t.graphs, .cases = t.cases};
  snprintf(out->model_path, sizeof out->model_path, "%s", t.model_path);
  return 0;
}

int gop_predictor_evaluate(GopContext *ctx, const char *db_path, FILE *table, GopEvalInfo *out) {
  memset(out, 0, sizeof *out);
  if (!db_path) {
    ir_error(&ctx->diag, api_loc, "gop_predictor_evaluate: no database given");
    return -1;
  }
  GopModule *std = gop_stdlib(ctx);
  TuneEvalInfo e;
  if (tune_predictor_evaluate(db_path, std ? std->ir : NULL, table, &e, &ctx->diag) != 0)
    return -1;
  *out = (GopEvalInfo){.graphs = e.graphs, .cases = e.cases, .default_cases = e.default_cases,
                       .within_10pct = e.within_10pct, .geomean = e.geomean,
                       .model_geomean = e.model_geomean, .default_geomean = e.default_geomean,
                       .median = e.median, .worst = e.worst};
  return 0;
}

int gop_tune_import_csv(GopContext *ctx, const char *csv, const char *db_path,
                        const char *datasets, const char *gpu, int cc, GopImportInfo *out) {
  memset(out, 0, sizeof *out);
  if (!csv || !db_path || !datasets || !gpu || !*gpu || cc <= 0) {
    ir_error(&ctx->diag, api_loc, "gop_tune_import_csv: the CSV, the database, the datasets "
             "folder, the GPU's name and its compute capability are all needed");
    return -1;
  }
  GopModule *std = gop_stdlib(ctx);
  if (!std) return -1;
  TuneDb *db = tune_db_open(db_path, &ctx->diag);
  if (!db) return -1;
  TuneImportInfo t;
  int rc = tune_import_csv(csv, db, std->ir, datasets, gpu, cc, GOP_VERSION, ctx->arena, &t,
                           &ctx->diag);
  tune_db_close(db);
  *out = (GopImportInfo){t.imported,        t.graphs,          t.skipped_default,
                         t.skipped_wrong,   t.skipped_no_time, t.skipped_refused,
                         t.truncated};
  return rc;
}

/* ---- models' helpers ----
 * (Restored by the tuner session after its edit of the tuning section
 * above dropped them; rebuilt from the models session's compiled object.) */

void gop_report(GopContext *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ir_verror(&ctx->diag, "error", (Loc){0}, fmt, ap);
  va_end(ap);
}

long gop_graph_arcs(const GopGraph *g, const int32_t **src, const int32_t **dst) {
  *src = g->rt->src;
  *dst = g->rt->dst;
  return g->rt->ne;
}

GopGraph *gop_graph_from_arcs(GopContext *ctx, int64_t nv, int64_t ne, const int64_t *src,
                              const int64_t *dst, const char *name) {
  RtGraph *rt = rt_graph_from_coo(nv, ne, src, dst, name, &ctx->diag, api_loc);
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
