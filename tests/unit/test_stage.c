/* tests/unit/test_stage.c: promote(X, shared), a dense input staged in
 * shared memory (passes/promote.c, codegen/shared.c, runtime/exec.c).
 *
 *   - semantics: operators with dense inputs (a per-feature weight, GAT's
 *     attention vectors from examples/models/layers.gop, a bias) under
 *     several named schedules plus promote(X, shared), run by the
 *     interpreter on cora and compared with the unscheduled operator;
 *   - the IR text: `X: f32[F] @shared` prints, parses back, and is refused
 *     on an output and in .gop source;
 *   - code generation: the PTX copies X once into shared memory, meets at a
 *     barrier and reads X with ld.shared (ld.shared.v4 under spmm_vec4),
 *     next to a @shared groups accumulator too; ptxas assembles it for
 *     sm_80 and sm_90; kernel packs keep the mark;
 *   - the launch: the dynamic shared memory the runtime asks for, and its
 *     refusal, naming the tensor and the bytes, above the device's limit.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "lang/lang.h"
#include "passes/passes.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "runtime/runtime.h"
#include "testutil.h"

/* A weighted aggregation with one weight per feature: every worker reads
 * all of w, the case staging is for. */
static const char *SCALE_SUM =
    "op scale_sum(X: f32[src, F], wf: f32[F]) -> Y: f32[dst, F] {\n"
    "  for v in dst {\n"
    "    for e in in_edges(v) {\n"
    "      for f in 0..F {\n"
    "        Y[v, f] += X[src(e), f] * wf[f]\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n"
    /* two dense inputs, staged one after the other */
    "op scale_max(X: f32[src, F], wf: f32[F], bf: f32[F]) -> Y: f32[dst, F] {\n"
    "  for v in dst {\n"
    "    for e in in_edges(v) {\n"
    "      for f in 0..F {\n"
    "        Y[v, f] max= X[src(e), f] * wf[f] + bf[f]\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

static IrModule *module_of(Arena *a, Diag *d, const char *file, const char *text) {
  IrModule *m = lang_compile(a, d, file, text);
  ck_assert_msg(m != NULL, "%s does not compile:\n%s", file, d->buf ? d->buf : "");
  return m;
}

static IrModule *layers_module(Arena *a, Diag *d) {
  const char *path = tu_source("examples/models/layers.gop");
  char *text = tu_read_file(path, NULL);
  ck_assert_msg(text != NULL, "cannot read %s", path);
  IrModule *m = module_of(a, d, path, ir_strdup(a, text));
  free(text);
  return m;
}

/* The op `name` of `m` scheduled with `sched` and lowered; fails the test
 * on a refusal. */
static IrOp *scheduled(IrModule *m, IrModule *lib, const char *name, const char *sched,
                       Arena *a, Diag *d) {
  IrOp *base = ir_module_find_op(m, name);
  ck_assert_msg(base != NULL, "no op %s", name);
  IrOp *op = pass_op_copy(base, a);
  ck_assert_msg(pass_schedule_text(op, lib, sched, a, d) == 0, "%s with %s refused:\n%s",
                name, sched, d->buf);
  ck_assert_msg(pass_lower(op, a, d, NULL, NULL) == 0, "%s with %s does not lower:\n%s",
                name, sched, d->buf);
  return op;
}

/* ---- semantics on cora ---- */

enum { F_CORA = 20, H_CORA = 4, C_CORA = 5 };

static IrExtents extents(const IrOp *op) {
  IrExtents ext = {.n = op->nsyms};
  for (int i = 0; i < op->nsyms; i++) {
    const char *s = op->syms[i]->name;
    ext.value[i] = !strcmp(s, "H") ? H_CORA : !strcmp(s, "C") ? C_CORA : F_CORA;
  }
  return ext;
}

/* Runs `op` on `g`; inputs are seeded random, outputs returned in out[]. */
static void run(const IrOp *op, const Graph *g, float **out) {
  IrExtents ext = extents(op);
  void *bufs[8] = {0};
  float *in[8] = {0};
  unsigned seed = 12345;
  for (int i = 0; i < op->ntensors; i++) {
    int64_t n = graph_tensor_numel(op->tensors[i], g, &ext);
    float *b = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    ck_assert_ptr_nonnull(b);
    if (op->tensors[i]->role == IR_ROLE_IN) {
      for (int64_t k = 0; k < n; k++) {
        seed = seed * 1103515245u + 12345u;
        b[k] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
      }
      in[i] = b;
    } else {
      out[i] = b;
    }
    bufs[i] = b;
  }
  Diag d;
  ir_diag_init(&d, NULL);
  InterpArgs args = {.graph = g, .extents = ext, .mode = INTERP_F32, .buffers = bufs};
  ck_assert_msg(interp_run(op, &args, &d) == 0, "%s: interpreter failed:\n%s", op->name,
                d.buf);
  ir_diag_free(&d);
  for (int i = 0; i < 8; i++) free(in[i]);
}

static double rel_l2(const float *x, const float *y, int64_t n) {
  double diff = 0, norm = 0;
  for (int64_t k = 0; k < n; k++) {
    if (isnan(x[k]) || isnan(y[k])) return INFINITY;
    diff += ((double)x[k] - y[k]) * ((double)x[k] - y[k]);
    norm += (double)y[k] * y[k];
  }
  return sqrt(diff) / (norm > 0 ? sqrt(norm) : 1);
}

typedef struct SemCase {
  const char *op, *sched, *staged; /* staged: the `@shared` decl expected */
} SemCase;

static const SemCase sem_cases[] = {
    {"scale_sum", "promote(wf, shared)", "wf: f32[F] @shared"},
    {"scale_sum", "gar(); promote(wf, shared)", "wf: f32[F] @shared"},
    {"scale_sum", "warp_vertex(2, 1); promote(wf, shared)", "wf: f32[F] @shared"},
    {"scale_sum", "thread_edge(2, 3); promote(wf, shared)", "wf: f32[F] @shared"},
    {"scale_sum", "spmm_vec4(2); promote(wf, shared)", "wf: f32[F] @shared"},
    {"scale_sum", "promote(wf, shared); gnnadvisor_shared(4, 16, 4)", "wf: f32[F] @shared"},
    {"scale_max", "gar(); promote(wf, shared); promote(bf, shared)", "bf: f32[F] @shared"},
    {"scale_max", "gnnadvisor_shared(3, 8, 2); promote(bf, shared)", "bf: f32[F] @shared"},
    {"gat_terms", "bind(v, thread); promote(a, shared)", "a: f32[H, C] @shared"},
    {"gat_terms", "bind(v, warp); bind(f, lane); promote(a, shared)", "a: f32[H, C] @shared"},
    {"bias_relu", "split(f, 32) -> (fo, fl); bind(v, warp); bind(fl, lane); promote(b, shared)",
     "b: f32[F] @shared"},
    {"gat_attention", "gas(); promote(As, shared)", NULL}, /* refused: vertex */
};
enum { NSEM = sizeof sem_cases / sizeof sem_cases[0] };

START_TEST(test_stage_semantics) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  ck_assert_ptr_nonnull(lib);
  IrModule *mine = module_of(a, &d, "<scale>", SCALE_SUM);
  IrModule *layers = layers_module(a, &d);
  Graph *g = tu_graph("cora.mtx.gz");
  for (int c = 0; c < NSEM; c++) {
    const SemCase *sc = &sem_cases[c];
    IrModule *m = ir_module_find_op(mine, sc->op) ? mine : layers;
    IrOp *base = ir_module_find_op(m, sc->op);
    ck_assert_msg(base != NULL, "no op %s", sc->op);
    if (!sc->staged) {
      IrOp *op = pass_op_copy(base, a);
      char *before = ir_op_to_string(op);
      ck_assert_msg(pass_schedule_text(op, lib, sc->sched, a, &d) != 0,
                    "%s with %s was not refused", sc->op, sc->sched);
      ck_assert_msg(strstr(d.buf, "staging one row per warp is not supported"), "%s", d.buf);
      char *after = ir_op_to_string(op);
      ck_assert_str_eq(before, after);
      free(before);
      free(after);
      continue;
    }
    IrOp *op = scheduled(m, lib, sc->op, sc->sched, a, &d);
    char *text = ir_op_to_string(op);
    ck_assert_msg(strstr(text, sc->staged), "%s with %s: no `%s` in\n%s", sc->op, sc->sched,
                  sc->staged, text);
    /* the unscheduled operator is untouched: its tensors are not marked */
    char *orig = ir_op_to_string(base);
    ck_assert_msg(!strstr(orig, "@shared"), "promote marked the original op:\n%s", orig);
    free(orig);
    float *want[8] = {0}, *got[8] = {0};
    run(base, g, want);
    run(op, g, got);
    IrExtents ext = extents(op);
    for (int i = 0; i < op->ntensors; i++) {
      if (op->tensors[i]->role != IR_ROLE_OUT) continue;
      double err = rel_l2(got[i], want[i], graph_tensor_numel(op->tensors[i], g, &ext));
      ck_assert_msg(err <= 1e-5, "%s with %s: %s differs (relative L2 %g)\n%s", sc->op,
                    sc->sched, op->tensors[i]->name, err, text);
    }
    for (int i = 0; i < 8; i++) {
      free(want[i]);
      free(got[i]);
    }
    free(text);
  }
  graph_free(g);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* ---- the IR text ---- */

START_TEST(test_stage_ir_text) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  IrModule *mine = module_of(a, &d, "<scale>", SCALE_SUM);
  IrOp *op = scheduled(mine, lib, "scale_sum", "gar(); promote(wf, shared)", a, &d);
  char *text = ir_op_to_string(op);
  ck_assert_msg(strstr(text, "op scale_sum(X: f32[src, F], wf: f32[F] @shared) -> Y: f32[dst, F]"),
                "%s", text);
  /* parses back to the same text, and verifies */
  IrModule *back = lang_parse_ir(a, &d, "<back>", text);
  ck_assert_msg(back && back->nops == 1, "%s", d.buf);
  char *again = ir_op_to_string(back->ops[0]);
  ck_assert_str_eq(again, text);
  ck_assert(back->ops[0]->tensors[1]->shared);
  ck_assert(ir_verify_op(back->ops[0], &d, "test"));
  free(again);
  free(text);

  /* @shared on an output: the verifier refuses it */
  tu_ir_refused("op o(X: f32[src]) -> Y: f32[dst] @shared {\n"
                "  for v in dst {\n"
                "    for e in in_edges(v) {\n"
                "      Y[v] += X[src(e)]\n"
                "    }\n"
                "  }\n"
                "}\n",
                "tensor Y is @shared but is not a dense input");
  /* an unknown annotation */
  Diag e;
  ir_diag_init(&e, NULL);
  ck_assert_ptr_null(lang_parse_ir(a, &e, "<bad>",
                                   "op o(X: f32[src], w: f32[4] @pinned) -> Y: f32[dst] {\n"
                                   "  for v in dst {\n"
                                   "    Y[v] = w[0]\n"
                                   "  }\n"
                                   "}\n"));
  ck_assert_msg(strstr(e.buf, "unknown tensor annotation `@pinned`"), "%s", e.buf);
  ir_diag_free(&e);
  /* .gop source: write a schedule instead */
  ir_diag_init(&e, NULL);
  ck_assert_ptr_null(lang_compile(a, &e, "<src>",
                                  "op o(X: f32[src], w: f32[4] @shared) -> Y: f32[dst] {\n"
                                  "  for v in dst {\n"
                                  "    Y[v] = w[0]\n"
                                  "  }\n"
                                  "}\n"));
  ck_assert_msg(strstr(e.buf, "annotations are only allowed in IR text; use a schedule "
                              "(promote(w, shared))"),
                "%s", e.buf);
  ir_diag_free(&e);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* ---- code generation ---- */

static const char *targets[] = {"sm_80", "sm_90"};

typedef struct CgCase {
  const char *name, *op, *sched;
  const char *want[4]; /* PTX text each kernel set must hold */
} CgCase;

static const CgCase cg_cases[] = {
    {"gar", "scale_sum", "gar(); promote(wf, shared)", {"ld.shared.f32", NULL}},
    {"vec4", "scale_sum", "spmm_vec4(2); promote(wf, shared)", {"ld.shared.v4.f32", NULL}},
    /* the staged copy and the accumulator rows in one kernel */
    {"groups", "scale_sum", "gnnadvisor_shared(4, 16, 4); promote(wf, shared)",
     {"ld.shared.f32", "st.shared.f32", "atom.global.add.f32", NULL}},
    {"two", "scale_max", "gar(); promote(wf, shared); promote(bf, shared)",
     {"ld.shared.f32", NULL}},
};
enum { NCG = sizeof cg_cases / sizeof cg_cases[0] };

START_TEST(test_stage_ptx) {
  const CgCase *c = &cg_cases[_i / 2];
  const char *target = targets[_i % 2];
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  IrModule *mine = module_of(a, &d, "<scale>", SCALE_SUM);
  IrOp *op = scheduled(mine, lib, c->op, c->sched, a, &d);
  CgProgram p;
  ck_assert_msg(cg_compile(op, target, &p, &d) == 0, "%s: %s", c->name, d.buf);
  const char *ptx = p.ptx;
  ck_assert_msg(strstr(ptx, ".extern .shared .align 16 .b8 gop_smem[]"), "%.3000s", ptx);
  /* one barrier after the copy (the groups loop adds its two) */
  ck_assert_msg(strstr(ptx, "bar.sync"), "%s: no barrier\n%.3000s", c->name, ptx);
  for (int i = 0; c->want[i]; i++)
    ck_assert_msg(strstr(ptx, c->want[i]), "%s/%s: no `%s` in\n%.3000s", c->name, target,
                  c->want[i], ptx);
  /* the copy: global (read-only) loads stored into shared memory */
  ck_assert_msg(strstr(ptx, "st.shared.f32"), "%s: no copy into shared memory", c->name);
  ck_assert_msg(!strstr(ptx, ".local"), "%s: local memory used\n%.3000s", c->name, ptx);
  /* a staged tensor is marked in the program and survives a pack */
  int nstaged = 0;
  for (int i = 0; i < p.ntensors; i++) nstaged += p.tensors[i].staged;
  ck_assert_int_eq(nstaged, strcmp(c->name, "two") == 0 ? 2 : 1);
  char path[512];
  snprintf(path, sizeof path, "%s/%s_%s.pack", tu_tmpdir(), c->name, target);
  ck_assert_msg(cg_pack_write(&p, path, &d) == 0, "%s", d.buf);
  CgProgram q;
  ck_assert_msg(cg_pack_read(path, &q, &d) == 0, "%s", d.buf);
  for (int i = 0; i < p.ntensors; i++) ck_assert_int_eq(q.tensors[i].staged, p.tensors[i].staged);
  cg_program_free(&q);
  free(tu_assemble(ptx, target, c->name));
  cg_program_free(&p);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* Without promote, no shared memory at all: the mark is what stages. */
START_TEST(test_stage_only_when_promoted) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  IrModule *mine = module_of(a, &d, "<scale>", SCALE_SUM);
  IrOp *op = scheduled(mine, lib, "scale_sum", "gar()", a, &d);
  CgProgram p;
  ck_assert_msg(cg_compile(op, "sm_90", &p, &d) == 0, "%s", d.buf);
  ck_assert_int_eq(tu_count(p.ptx, ".shared"), 0);
  ck_assert_int_eq(tu_count(p.ptx, "bar.sync"), 0);
  cg_program_free(&p);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

/* ---- the launch: dynamic shared memory and its limit ---- */

START_TEST(test_stage_launch_bytes) {
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  IrModule *mine = module_of(a, &d, "<scale>", SCALE_SUM);
  Graph *g = tu_graph("cora.mtx.gz");

  /* two staged inputs of F = 5 floats: 20 bytes each, rounded to 32 */
  IrOp *op = scheduled(mine, lib, "scale_max", "gar(); promote(wf, shared); promote(bf, shared)",
                       a, &d);
  CgProgram p;
  ck_assert_msg(cg_compile(op, "sm_90", &p, &d) == 0, "%s", d.buf);
  int64_t syms[1] = {5};
  ck_assert_int_eq(rt_kernel_shared_bytes(&p, &p.kernels[0], g, syms, 48 << 10, &d), 64);
  /* the finalisation stage of max= reads neither */
  ck_assert_int_eq(rt_kernel_shared_bytes(&p, &p.kernels[1], g, syms, 48 << 10, &d), 0);
  /* F = 20000: 2 x 80000 bytes, above a 99 KiB device */
  syms[0] = 20000;
  ck_assert_int_eq(rt_kernel_shared_bytes(&p, &p.kernels[0], g, syms, 99 << 10, &d), -1);
  ck_assert_msg(strstr(d.buf, "kernel scale_max_s0: staging wf (80000 bytes), bf (80000 bytes) "
                              "in shared memory needs 160000 bytes per block; the device "
                              "allows at most 101376"),
                "%s", d.buf);
  cg_program_free(&p);

  /* with the groups accumulator: 4 warps x F floats after the copy */
  op = scheduled(mine, lib, "scale_sum", "gnnadvisor_shared(4, 16, 4); promote(wf, shared)", a,
                 &d);
  ck_assert_msg(cg_compile(op, "sm_90", &p, &d) == 0, "%s", d.buf);
  syms[0] = 20;
  ck_assert_int_eq(rt_kernel_shared_bytes(&p, &p.kernels[0], g, syms, 48 << 10, &d),
                   80 + 4 * 20 * 4);
  syms[0] = 6000;
  Diag e;
  ir_diag_init(&e, NULL);
  ck_assert_int_eq(rt_kernel_shared_bytes(&p, &p.kernels[0], g, syms, 48 << 10, &e), -1);
  ck_assert_msg(strstr(e.buf, "staging wf (24000 bytes) in shared memory and the shared "
                              "accumulator rows of Y (96000 bytes) needs 120000 bytes"),
                "%s", e.buf);
  ir_diag_free(&e);
  cg_program_free(&p);
  graph_free(g);
  ir_diag_free(&d);
  ir_arena_free(a);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("stage");
  TCase *tc = tcase_create("stage");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_stage_semantics);
  tcase_add_test(tc, test_stage_ir_text);
  tcase_add_loop_test(tc, test_stage_ptx, 0, 2 * NCG);
  tcase_add_test(tc, test_stage_only_when_promoted);
  tcase_add_test(tc, test_stage_launch_bytes);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run(suite()); }
