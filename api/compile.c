/* api/compile.c: modules, operators, compiling and emitting.
 *
 * Source text or files go through lang/ into IR modules; an operator is
 * scheduled (its own schedule, a named one, or the default), lowered, and
 * compiled through codegen/ into a program (PTX and launch rules), a
 * stage's text, or a kernel pack.
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
#include "lang/lang.h"
#include "passes/passes.h"
#include "runtime/runtime.h"

#include "api/api.h"

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

GopModule *api_wrap_module(GopContext *ctx, IrModule *ir, const char *file,
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
  API_LOCK(ctx);
  if (!name) name = "<string>";
  if (!source) {
    ir_error(&ctx->diag, api_loc, "gop_compile_string: source is NULL");
    return NULL;
  }
  const char *file = ir_strdup(ctx->arena, name);
  const char *text = ir_strdup(ctx->arena, source);
  return api_wrap_module(ctx, lang_compile(ctx->arena, &ctx->diag, file, text),
                     file, text);
}

/* Reads a whole text file into the arena; NULL after reporting. */
char *api_read_text(GopContext *ctx, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    ir_error(&ctx->diag, (Loc){path, 0, 0}, "cannot open: %s", strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  size_t got;
  int64_t limit = ir_limit(IR_LIMIT_SOURCE_BYTES);
  while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += got;
    if ((int64_t)len > limit) { /* e.g. /dev/zero: refuse before reading it all */
      fclose(f);
      free(buf);
      ir_limit_check(IR_LIMIT_SOURCE_BYTES, (int64_t)len, &ctx->diag, (Loc){path, 0, 0},
                     "the file is too long for a source (at least)");
      return NULL;
    }
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
  API_LOCK(ctx);
  if (!path) {
    ir_error(&ctx->diag, api_loc, "gop_compile_file: path is NULL");
    return NULL;
  }
  const char *file = ir_strdup(ctx->arena, path);
  char *text = api_read_text(ctx, file);
  if (!text) return NULL;
  return api_wrap_module(ctx, lang_compile(ctx->arena, &ctx->diag, file, text),
                     file, text);
}

GopModule *gop_stdlib(GopContext *ctx) {
  API_LOCK(ctx);
  if (!ctx->stdlib)
    ctx->stdlib = api_wrap_module(ctx, lang_stdlib(ctx->arena, &ctx->diag), NULL, NULL);
  return ctx->stdlib;
}

int gop_module_num_ops(const GopModule *m) { return m->ir->nops; }

GopOp *gop_module_op(const GopModule *m, int i) {
  return i >= 0 && i < m->ir->nops ? m->ops[i] : NULL;
}

GopOp *gop_module_find_op(const GopModule *m, const char *name) {
  API_LOCK(m ? m->ctx : NULL);
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
IrModule *api_schedule_library(GopContext *ctx, const GopModule *m) {
  /* made once per module (the caller holds the context's lock): every
   * lookup of a kernel and every schedule choice asks for it, and a new
   * one each time grew the context's arena at every call */
  if (m->sched_lib) return m->sched_lib;
  IrModule *lib = ir_module_new(ctx->arena);
  for (int i = 0; i < m->ir->nscheds; i++) ir_module_add_sched(lib, m->ir->scheds[i]);
  GopModule *std = gop_stdlib(ctx);
  for (int i = 0; std && i < std->ir->nscheds; i++)
    if (!ir_module_find_sched(lib, std->ir->scheds[i]->name))
      ir_module_add_sched(lib, std->ir->scheds[i]);
  ((GopModule *)m)->sched_lib = lib;
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

/* Whether the loop nest `list` (and what follows it) iterates edges. */
static bool has_edge_loop(const IrNode *list) {
  for (const IrNode *n = list; n; n = n->next)
    if (n->kind == IR_LOOP && (n->loop.kind == IR_LOOP_IN_EDGES ||
                               n->loop.kind == IR_LOOP_OUT_EDGES ||
                               n->loop.kind == IR_LOOP_EDGES || has_edge_loop(n->loop.body)))
      return true;
  return false;
}

static bool stage_has_edges(const IrNode *stage) {
  IrNode one = *stage;
  one.next = NULL;
  return has_edge_loop(&one);
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
static int default_schedule(GopContext *ctx, IrOp *op, Arena *a) {
  /* the stages no schedule bound: all of them unless a user's schedule
   * bound some (those left would run as one thread each: a partial
   * schedule of GAT's backward took 10 s instead of 1 ms on an H100) */
  const char *sel = "";
  bool lanes_on_f = true, all = true; /* every such stage has a feature loop */
  /* in an operator of edge stages and vertex stages (a derived backward's
   * per-vertex sum, grad/hoist.c), the edge mappings are tried on the edge
   * stages only, and the vertex stages get the vertex mapping below: the
   * edge mappings' directives do not fit a stage with no edge loop, and
   * one refusal would leave every stage a thread per vertex */
  bool edges = false, vertices = false;
  for (const IrNode *st = op->body; st; st = st->next)
    if (st->kind == IR_LOOP && !pass_stage_bound(st)) {
      bool e = stage_has_edges(st);
      edges |= e;
      vertices |= !e;
    }
  bool edge_stages_only = edges && vertices;
  int k = 0, n = 0;
  for (const IrNode *st = op->body; st; st = st->next, k++) {
    if (st->kind != IR_LOOP) continue;
    if (pass_stage_bound(st) || (edge_stages_only && !stage_has_edges(st))) {
      all = false;
      continue;
    }
    sel = ir_sprintf(a, "%s%s%d", sel, n++ ? ", " : "", k + 1);
    lanes_on_f &= has_feature_loop(st->loop.body);
  }
  if (n == 0) return 0;
  const char *pre = all ? "" : ir_sprintf(a, "stages(%s); ", sel);
  const char *tries[] = {
      ir_sprintf(a, "%s%s", pre, lanes_on_f ? "warp_edge(1, 1)" : "thread_edge(1, 1)"),
      ir_sprintf(a, "%sthread_edge(1, 1)", pre)};
  GopModule *std = gop_stdlib(ctx);
  IrModule *lib = std ? api_schedule_library(ctx, std) : NULL;
  for (int i = 0; lib && i < 2; i++) {
    Diag quiet; /* a refusal here only means: try the next mapping */
    ir_diag_init(&quiet, NULL);
    int rc = pass_schedule_text(op, lib, tries[i], a, &quiet);
    ir_diag_free(&quiet);
    if (rc == 0) return edge_stages_only ? pass_default_schedule(op, a, &ctx->diag) : 0;
  }
  return pass_default_schedule(op, a, &ctx->diag);
}

/* A scheduled copy of `op` (lowered to GPU-ready IR when `lower`) in
 * the context's arena; NULL after reporting. The original is never
 * changed. */
IrOp *api_schedule_op(const GopOp *op, const GopCompileOptions *o, bool lower) {
  return api_schedule_op_in(op, o, lower, op->module->ctx->arena);
}

IrOp *api_schedule_op_in(const GopOp *op, const GopCompileOptions *o, bool lower, Arena *a) {
  GopContext *ctx = op->module->ctx;
  IrOp *c = pass_op_copy(op->ir, a);
  double t0 = now_ms();
  int rc = o && o->schedule
               ? pass_schedule_text(c, api_schedule_library(ctx, op->module), o->schedule,
                                    a, &ctx->diag)
               : default_schedule(ctx, c, a);
  /* the stages a user's schedule left unbound get the default mapping
   * before lowering (the sched stage shows the schedule as written) */
  if (rc == 0 && lower && o && o->schedule) rc = default_schedule(ctx, c, a);
  double t1 = now_ms();
  ctx->times.schedule_ms = t1 - t0;
  if (rc != 0) return NULL;
  if (lower) {
    FILE *dump = o && o->dump ? o->dump : stdout;
    rc = pass_lower(c, a, &ctx->diag, o ? o->dump_after : NULL, dump);
    ctx->times.lower_ms = now_ms() - t1;
    if (rc != 0) return NULL;
  }
  return c;
}

/* The target to compile for: as asked, else the GPU's, else sm_90. */
const char *api_pick_target(GopContext *ctx, const char *asked) {
  if (asked) return cg_target_check(asked, &ctx->diag) == 0 ? asked : NULL;
  Diag quiet;
  ir_diag_init(&quiet, NULL);
  const char *t = CG_DEFAULT_TARGET;
  if (rt_cuda_open(&quiet) == RT_OK) {
    /* kept in the context: a string a call, in its arena, would grow it
     * at every kernel lookup of a long job */
    snprintf(ctx->gpu_target, sizeof ctx->gpu_target, "sm_%d", rt_cuda_cc());
    if (cg_target_known(ctx->gpu_target)) t = ctx->gpu_target;
  }
  ir_diag_free(&quiet);
  return t;
}

int api_index_bits(GopContext *ctx, const GopCompileOptions *o) {
  int bits = o ? o->index_bits : 0;
  if (bits == 0) {
    const char *force = getenv("GOP_INDEX64");
    return force && strcmp(force, "1") == 0 ? 64 : 32;
  }
  if (bits != 32 && bits != 64) {
    ir_error(&ctx->diag, api_loc, "index width %d: kernels take 32- or 64-bit indices", bits);
    return -1;
  }
  return bits;
}

/* Schedules, lowers and compiles `op` into `out`. 0 or -1. */
int api_compile_op(const GopOp *op, const GopCompileOptions *o, CgProgram *out) {
  GopContext *ctx = op->module->ctx;
  const char *target = api_pick_target(ctx, o ? o->target : NULL);
  if (!target) return -1;
  int bits = api_index_bits(ctx, o);
  if (bits < 0) return -1;
  /* the scheduled copy is done with once compiled (the program is
   * malloc'ed): a scratch arena, so that compiling again what the kernel
   * cache dropped does not grow the context */
  Arena *scratch = ir_arena_new();
  IrOp *lowered = api_schedule_op_in(op, o, true, scratch);
  CgLayout layout = {bits, o && o->csr_edges};
  int rc = lowered ? cg_compile_layout(lowered, target, layout, out, &ctx->diag) : -1;
  ir_arena_free(scratch);
  if (rc != 0) return -1;
  ctx->times.llvm_build_ms = out->times.build_ms;
  ctx->times.llvm_opt_ms = out->times.opt_ms;
  ctx->times.ptx_emit_ms = out->times.emit_ms;
  /* A pack carries the operator as written, so that a machine without the
   * schedule can still check the kernels against the interpreter. */
  free(out->ir);
  out->ir = ir_op_to_string(op->ir);
  return 0;
}

GopCompileOptions api_run_options(const GopRun *r) {
  return (GopCompileOptions){.schedule = r->schedule, .target = r->target,
                             .index_bits = rt_index_bits(r->graph->rt),
                             .csr_edges = rt_csr_edges(r->graph->rt)};
}

void gop_compile_times(const GopContext *ctx, GopCompileTimes *out) { *out = ctx->times; }

char *gop_emit(const GopOp *op, GopStage stage) { return gop_emit_with(op, stage, NULL); }

char *gop_emit_with(const GopOp *op, GopStage stage, const GopCompileOptions *o) {
  API_LOCK(op ? op->module->ctx : NULL);
  GopContext *ctx = op->module->ctx;
  memset(&ctx->times, 0, sizeof ctx->times);
  switch (stage) {
  case GOP_STAGE_IR:
    return ir_op_to_string(op->ir);
  case GOP_STAGE_SCHED:
  case GOP_STAGE_LOWERED: {
    IrOp *c = api_schedule_op(op, o, stage == GOP_STAGE_LOWERED);
    return c ? ir_op_to_string(c) : NULL;
  }
  case GOP_STAGE_LLVM: {
    const char *target = api_pick_target(ctx, o ? o->target : NULL);
    int bits = api_index_bits(ctx, o);
    IrOp *c = target && bits > 0 ? api_schedule_op(op, o, true) : NULL;
    CgLayout layout = {bits, o && o->csr_edges};
    return c ? cg_emit_llvm_layout(c, target, layout, true, &ctx->diag) : NULL;
  }
  case GOP_STAGE_PTX: {
    CgProgram p = {0};
    if (api_compile_op(op, o, &p) != 0) return NULL;
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
  API_LOCK(op ? op->module->ctx : NULL);
  CgProgram p = {0};
  if (api_compile_op(op, o, &p) != 0) return -1;
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
