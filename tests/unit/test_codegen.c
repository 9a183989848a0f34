/* tests/unit/test_codegen.c: code generation to PTX (kernel packs: test_packs.c).
 *
 * The operators are built by hand in their GPU-ready form (docs/gpu-ir.md),
 * as the scheduler would leave them, so these tests do not depend on the
 * front end or the passes. Each is compiled for sm_80 and sm_90 and the PTX
 * is checked for what makes the kernels right and fast (entries, .maxntid,
 * read-only loads, float atomics, no local memory). The `ptxas` case
 * assembles every kernel with the CUDA toolkit's ptxas (-v) and fails on
 * assembler errors and on spills; CI has the toolkit, so a missing ptxas
 * fails unless GOP_SKIP_PTXAS=1.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "testutil.h"

#include "cgbuild.h"

/* ---- PTX content ---- */

START_TEST(test_ptx_content) {
  const Case *c = &cases[_i / 2];
  const char *target = test_targets[_i % 2];
  IrOp *op = c->build();
  CgProgram p;
  compile_ok(op, target, &p);
  int nstages = 0;
  for (IrNode *s = op->body; s; s = s->next) nstages++;
  ck_assert_int_eq(p.nkernels, nstages);
  ck_assert_int_eq(count(p.ptx, ".entry"), nstages);
  ck_assert_int_eq(count(p.ptx, ".maxntid"), nstages);
  ck_assert_int_eq(count(p.ptx, ".minnctapersm"), nstages);
  char want[64];
  snprintf(want, sizeof want, ".target %s", target);
  ck_assert_msg(strstr(p.ptx, want), "%s: no `%s`", c->name, want);
  for (int i = 0; i < p.nkernels; i++) {
    char entry[128];
    snprintf(entry, sizeof entry, ".entry %s", p.kernels[i].name);
    ck_assert_msg(strstr(p.ptx, entry), "%s: no `%s`", c->name, entry);
  }
  ptx_check(strstr(p.ptx, "ld.global.nc"), p.ptx,
            "inputs not read through the read-only path (ld.global.nc)");
  ptx_check(!strstr(p.ptx, ".local"), p.ptx, "local memory used");
  if (c->atomic_add)
    ptx_check(strstr(p.ptx, "atom.global.add.f32"), p.ptx,
              "no atom.global.add.f32");
  ck_assert(p.times.build_ms >= 0 && p.times.opt_ms >= 0 && p.times.emit_ms >= 0);
  ck_assert_ptr_nonnull(p.ir);
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

START_TEST(test_atomic_minmax_ptx) {
  CgProgram p;
  compile_ok(op_minmax_atomic(IR_RED_MAX), "sm_80", &p);
  ptx_check(strstr(p.ptx, "atom.global.max.s32"), p.ptx, "no atom.global.max.s32");
  ptx_check(strstr(p.ptx, "atom.global.min.u32"), p.ptx, "no atom.global.min.u32");
  ptx_check(!strstr(p.ptx, "atom.global.cas"), p.ptx, "unexpected atom.global.cas");
  cg_program_free(&p);
  ir_arena_free(A);
  compile_ok(op_minmax_atomic(IR_RED_MIN), "sm_90", &p);
  ptx_check(strstr(p.ptx, "atom.global.min.s32"), p.ptx, "no atom.global.min.s32");
  ptx_check(strstr(p.ptx, "atom.global.max.u32"), p.ptx, "no atom.global.max.u32");
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

START_TEST(test_fmuladd_and_no_approx_div) {
  CgProgram p;
  compile_ok(op_dot(), "sm_90", &p);
  ptx_check(strstr(p.ptx, "fma.rn.f32"), p.ptx, "dot product not fused (fma.rn.f32)");
  cg_program_free(&p);
  ir_arena_free(A);
  compile_ok(op_softmax(), "sm_90", &p);
  ptx_check(strstr(p.ptx, "ex2.approx.f32"), p.ptx, "no ex2.approx.f32");
  ptx_check(strstr(p.ptx, "div.rn.f32"), p.ptx, "IEEE division (div.rn.f32) expected");
  ptx_check(!strstr(p.ptx, ".ftz"), p.ptx, "no flush-to-zero expected");
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

/* ---- parameters and launch rules ---- */

static bool has_param(const CgKernel *k, CgParamKind kind) {
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].kind == kind) return true;
  return false;
}

START_TEST(test_params_and_launch) {
  CgProgram p;
  IrOp *op = op_warp_vertex(IR_HOW_PLAIN, 128);
  compile_ok(op, NULL, &p);
  ck_assert_str_eq(p.target, "sm_90");
  ck_assert_str_eq(p.op, "u_mul_e_sum");
  const CgKernel *k = &p.kernels[0];
  ck_assert_str_eq(k->name, "u_mul_e_sum_s0");
  ck_assert_int_eq(k->threads, 128);
  /* tensors first (X, W, Y), then in_ptr, in_eid (W[e]), in_src (src(e)),
   * |V| and F; no COO arrays */
  ck_assert_int_eq(k->nparams, 8);
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(k->params[i].kind, CG_PARAM_TENSOR);
    ck_assert_int_eq(k->params[i].id, i);
  }
  ck_assert_int_eq(k->params[3].kind, CG_PARAM_IN_PTR);
  ck_assert_int_eq(k->params[4].kind, CG_PARAM_IN_EID);
  ck_assert_int_eq(k->params[5].kind, CG_PARAM_IN_SRC);
  ck_assert_int_eq(k->params[6].kind, CG_PARAM_NV);
  ck_assert_int_eq(k->params[7].kind, CG_PARAM_SYM);
  ck_assert(!has_param(k, CG_PARAM_SRC) && !has_param(k, CG_PARAM_DST));
  ck_assert_int_eq(k->launch.kind, CG_LAUNCH_EXTENT);
  ck_assert_int_eq(k->launch.bind, IR_BIND_WARP);
  ck_assert_int_eq(k->launch.per_block, 4);
  int64_t blocks, syms[1] = {64};
  ck_assert_int_eq(cg_launch_blocks(k, 1001, 5000, syms, 1, 99, &blocks, NULL), 0);
  ck_assert_int_eq(blocks, 251); /* ceil(1001 / 4) */
  ck_assert_int_eq(p.ntensors, 3);
  ck_assert_int_eq(p.tensors[2].red, IR_RED_ADD);
  ck_assert_int_eq(p.tensors[0].sym_id[0], 0);
  cg_program_free(&p);
  ir_arena_free(A);

  compile_ok(op_edge_atomic(), "sm_86", &p);
  k = &p.kernels[0];
  ck_assert(has_param(k, CG_PARAM_SRC) && has_param(k, CG_PARAM_DST) &&
            has_param(k, CG_PARAM_NE) && !has_param(k, CG_PARAM_IN_PTR));
  ck_assert_int_eq(k->threads, 256);
  ck_assert_int_eq(k->launch.bind, IR_BIND_THREAD);
  ck_assert_int_eq(k->launch.per_block, 256);
  ck_assert_int_eq(k->launch.extent.n, 1);
  ck_assert_int_eq(k->launch.extent.tok[0].kind, CG_TOK_NE);
  cg_program_free(&p);
  ir_arena_free(A);

  compile_ok(op_dot(), "sm_89", &p);
  k = &p.kernels[0];
  /* S[e] needs in_eid; src(e) in_src; dst(e) of in_edges is v */
  ck_assert(has_param(k, CG_PARAM_IN_EID) && has_param(k, CG_PARAM_IN_SRC));
  cg_program_free(&p);
  ir_arena_free(A);

  compile_ok(op_softmax(), "sm_80", &p);
  ck_assert_int_eq(p.nkernels, 3);
  ck_assert_str_eq(p.kernels[2].name, "edge_softmax_s2");
  ck_assert_int_eq(p.kernels[1].stage, 1);
  ck_assert_int_eq(p.tensors[2].red, IR_RED_MAX);
  ck_assert_int_eq(p.tensors[3].red, IR_RED_ADD);
  ck_assert_int_eq(p.tensors[1].red, IR_RED_ASSIGN);
  /* the first stage reads S[e]: in_eid, not in_src */
  ck_assert(has_param(&p.kernels[0], CG_PARAM_IN_EID));
  ck_assert(!has_param(&p.kernels[0], CG_PARAM_IN_SRC));
  cg_program_free(&p);
  ir_arena_free(A);

  compile_ok(op_block(), "sm_90", &p);
  k = &p.kernels[0];
  ck_assert_int_eq(k->threads, 64);
  ck_assert_int_eq(k->launch.bind, IR_BIND_BLOCK);
  ck_assert_int_eq(k->launch.per_block, 1);
  cg_program_free(&p);
  ir_arena_free(A);

  compile_ok(op_single(), "sm_90", &p);
  k = &p.kernels[0];
  ck_assert_int_eq(k->launch.kind, CG_LAUNCH_ONE);
  ck_assert_int_eq(k->threads, 32);
  ck_assert(has_param(k, CG_PARAM_IN_PTR) && has_param(k, CG_PARAM_OUT_PTR));
  ck_assert_int_eq(cg_launch_blocks(k, 10, 10, NULL, 0, 99, &blocks, NULL), 0);
  ck_assert_int_eq(blocks, 1);
  cg_program_free(&p);
  ir_arena_free(A);

  compile_ok(op_fill(), "sm_90", &p);
  k = &p.kernels[0];
  ck_assert_int_eq(k->launch.kind, CG_LAUNCH_FILL);
  ck_assert_int_eq(cg_launch_blocks(k, 10, 10, NULL, 0, 99, &blocks, NULL), 0);
  ck_assert_int_eq(blocks, 99);
  cg_program_free(&p);
  ir_arena_free(A);

  compile_ok(op_out_edges(), "sm_90", &p);
  k = &p.kernels[0];
  ck_assert(has_param(k, CG_PARAM_OUT_PTR) && has_param(k, CG_PARAM_OUT_DST));
  ck_assert(!has_param(k, CG_PARAM_OUT_EID) && !has_param(k, CG_PARAM_DST));
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

START_TEST(test_range_launch_extent) {
  /* a feature-parallel stage: its launch extent is (F + 31) / 32 */
  begin("fill_rows");
  IrTensor *Y = tensor("Y", IR_DOM_DENSE, IR_ROLE_OUT, true);
  IrVar *i = var("i", IR_VAR_INDEX);
  IrNode *n = bin(IR_OP_DIV, bin(IR_OP_ADD, sy(F), ic(31)), ic(32));
  OP->body = loop(i, IR_LOOP_RANGE, n, NULL, IR_BIND_WARP,
                  st(Y, IR_RED_ASSIGN, IR_HOW_AUTO, fc(1.0), vr(i)));
  CgProgram p;
  compile_ok(OP, "sm_90", &p);
  const CgKernel *k = &p.kernels[0];
  ck_assert_int_eq(k->launch.kind, CG_LAUNCH_EXTENT);
  ck_assert_int_eq(k->launch.extent.n, 5);
  int64_t syms[1] = {4000}, blocks;
  ck_assert_int_eq(cg_launch_blocks(k, 0, 0, syms, 1, 1, &blocks, NULL), 0);
  ck_assert_int_eq(blocks, 16); /* 125 warps, 8 per block */
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_int_eq(cg_launch_blocks(k, 0, 0, NULL, 0, 1, &blocks, &d), -1);
  ck_assert_ptr_nonnull(strstr(d.buf, "cannot evaluate the extent"));
  ir_diag_free(&d);
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

/* ---- refusals ---- */

static char *compile_err(IrOp *op, const char *target) {
  Diag d;
  ir_diag_init(&d, NULL);
  CgProgram p;
  int rc = cg_compile(op, target, &p, &d);
  ck_assert_int_eq(rc, -1);
  ck_assert_int_ge(d.nerrors, 1);
  ck_assert_ptr_null(p.ptx);
  ck_assert_int_eq(p.nkernels, 0);
  char *msg = strdup(d.buf);
  ir_diag_free(&d);
  return msg;
}

START_TEST(test_unknown_target) {
  char *msg = compile_err(op_edge_atomic(), "sm_75");
  ck_assert_str_eq(msg, "error: unknown target sm_75: gop targets sm_80, "
                        "sm_86, sm_89, sm_90\n");
  free(msg);
  ir_arena_free(A);
  msg = compile_err(op_edge_atomic(), "sm_90a");
  ck_assert_ptr_nonnull(strstr(msg, "unknown target sm_90a"));
  free(msg);
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_ptr_null(cg_emit_llvm(OP, "compute_90", true, &d));
  ck_assert_ptr_nonnull(strstr(d.buf, "unknown target compute_90"));
  ir_diag_free(&d);
  ck_assert(cg_target_known("sm_86") && !cg_target_known("sm_70") &&
            !cg_target_known(NULL));
  ir_arena_free(A);
}
END_TEST

START_TEST(test_auto_refused) {
  char *msg = compile_err(op_warp_vertex(IR_HOW_AUTO, 0), "sm_90");
  ck_assert_msg(strstr(msg, "t.gop:5:7: error: reduction `Y[...] += ...` is "
                            "neither plain nor atomic (auto)"),
                "%s", msg);
  ck_assert_ptr_nonnull(strstr(msg, "write-conflict analysis"));
  free(msg);
  ir_arena_free(A);
  /* an atomic max= whose strategy is still auto */
  IrOp *op = op_minmax_atomic(IR_RED_MAX);
  op->body->loop.body->loop.body->acc.how = IR_HOW_AUTO;
  msg = compile_err(op, "sm_80");
  ck_assert_ptr_nonnull(strstr(msg, "`Y[...] max= ...` is neither plain"));
  free(msg);
  ir_arena_free(A);
}
END_TEST

START_TEST(test_bad_ir_refused) {
  /* mean= must have been lowered */
  IrOp *op = op_edge_atomic();
  op->body->loop.body->loop.body->acc.red = IR_RED_MEAN;
  char *msg = compile_err(op, "sm_90");
  ck_assert_msg(strstr(msg, "t.gop:5:7: error: `Y[...] mean= ...` reached code "
                            "generation"), "%s", msg);
  free(msg);
  ir_arena_free(A);
  /* a @lane loop outside a @warp loop */
  op = op_warp_vertex(IR_HOW_PLAIN, 0);
  op->body->loop.bind = IR_BIND_THREAD;
  msg = compile_err(op, "sm_90");
  ck_assert_msg(strstr(msg, "t.gop:2:3: error: loop 'fi' is bound to @lane "
                            "outside a @warp loop"), "%s", msg);
  free(msg);
  ir_arena_free(A);
  /* nested @warp loops */
  op = op_warp_vertex(IR_HOW_PLAIN, 0);
  op->body->loop.body->loop.bind = IR_BIND_WARP;
  msg = compile_err(op, "sm_90");
  ck_assert_msg(strstr(msg, "loop 'e' is bound to @warp inside a @warp loop"),
                "%s", msg);
  free(msg);
  ir_arena_free(A);
  /* a bad block size */
  op = op_warp_vertex(IR_HOW_PLAIN, 100);
  msg = compile_err(op, "sm_90");
  ck_assert_msg(strstr(msg, "@threads(100): threads per block must be a "
                            "multiple of 32"), "%s", msg);
  free(msg);
  ir_arena_free(A);
  /* a local reduced across lanes: the dot product with f bound to lanes */
  op = op_dot();
  op->body->loop.body->loop.bind = IR_BIND_NONE;              /* e */
  op->body->loop.body->loop.body->next->loop.bind = IR_BIND_LANE; /* f */
  msg = compile_err(op, "sm_90");
  ck_assert_msg(strstr(msg, "t.gop:4:9: error: `s += ...` reduces into local "
                            "'s' from inside a bound loop"), "%s", msg);
  free(msg);
  ir_arena_free(A);
  /* an atomic into a 16-bit output would round every addition */
  op = op_edge_atomic();
  op->tensors[2]->dtype = IR_DT_BF16;
  msg = compile_err(op, "sm_90");
  ck_assert_msg(strstr(msg, "atomic `Y[...] +=` into a bf16 tensor: a 16-bit atomic "
                            "would round every addition"), "%s", msg);
  free(msg);
  ir_arena_free(A);
  /* integer tensors are not values */
  op = op_edge_atomic();
  op->tensors[0]->dtype = IR_DT_I32;
  msg = compile_err(op, "sm_90");
  ck_assert_msg(strstr(msg, "tensor 'X' is i32: only float tensors"), "%s", msg);
  free(msg);
  ir_arena_free(A);
}
END_TEST

/* 16-bit and f64 tensors: what the loads, stores and atomics become. */
START_TEST(test_dtypes) {
  /* bf16 X, W and Y: 16-bit loads, the store rounded in integers (the
   * +0x7fff of round-to-nearest-even), math in f32 */
  IrOp *op = op_warp_vertex(IR_HOW_PLAIN, 128);
  for (int i = 0; i < 3; i++) op->tensors[i]->dtype = IR_DT_BF16;
  CgProgram p;
  compile_ok(op, "sm_90", &p);
  ptx_check(strstr(p.ptx, "ld.global.nc.u16") && strstr(p.ptx, "st.global.u16") &&
                strstr(p.ptx, "32767") && strstr(p.ptx, "fma.rn.f32"),
            p.ptx, "bf16 loads, a rounded 16-bit store, f32 math");
  cg_program_free(&p);
  ir_arena_free(A);
  /* f16: cvt between f16 and f32 */
  op = op_warp_vertex(IR_HOW_PLAIN, 128);
  for (int i = 0; i < 3; i++) op->tensors[i]->dtype = IR_DT_F16;
  compile_ok(op, "sm_90", &p);
  ptx_check(strstr(p.ptx, "cvt.f32.f16") && strstr(p.ptx, "cvt.rn.f16.f32"), p.ptx,
            "f16 conversions");
  cg_program_free(&p);
  ir_arena_free(A);
  /* f64 with an f64 accumulator: f64 loads, math and atomics */
  op = op_edge_atomic();
  for (int i = 0; i < 3; i++) op->tensors[i]->dtype = IR_DT_F64;
  op->acc = IR_DT_F64;
  compile_ok(op, "sm_90", &p);
  ptx_check(strstr(p.ptx, "ld.global.nc.f64") && strstr(p.ptx, "mul.rn.f64") &&
                strstr(p.ptx, "atom.global.add.f64"),
            p.ptx, "f64 loads, multiply and atomic add");
  cg_program_free(&p);
  ir_arena_free(A);
  op = op_minmax_atomic(IR_RED_MAX);
  for (int i = 0; i < 2; i++) op->tensors[i]->dtype = IR_DT_F64;
  op->acc = IR_DT_F64;
  compile_ok(op, "sm_90", &p);
  ptx_check(strstr(p.ptx, "atom.global.max.s64") && strstr(p.ptx, "atom.global.min.u64"),
            p.ptx, "f64 max as 64-bit integer atomics");
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

START_TEST(test_emit_llvm) {
  IrOp *op = op_warp_vertex(IR_HOW_PLAIN, 128);
  Diag d;
  ir_diag_init(&d, NULL);
  char *raw = cg_emit_llvm(op, "sm_80", false, &d);
  char *opt = cg_emit_llvm(op, "sm_80", true, &d);
  ck_assert_msg(raw && opt, "%s", d.buf ? d.buf : "");
  ck_assert_ptr_nonnull(strstr(raw, "define void @u_mul_e_sum_s0(ptr addrspace(1) noalias nocapture readonly align 16 %X"));
  ck_assert_ptr_nonnull(strstr(raw, "!\"maxntidx\", i32 128"));
  ck_assert_ptr_nonnull(strstr(raw, "!\"minctasm\", i32 8"));
  ck_assert_ptr_nonnull(strstr(raw, "!invariant.load"));
  ck_assert_ptr_nonnull(strstr(raw, "llvm.nvvm.read.ptx.sreg.tid.x"));
  ck_assert_ptr_nonnull(strstr(opt, "target triple = \"nvptx64-nvidia-cuda\""));
  ck_assert_ptr_null(strstr(opt, "gop.full"));
  free(raw);
  free(opt);
  ir_diag_free(&d);
  ir_arena_free(A);
}
END_TEST

/* A vector loop's scalar fallback (codegen/vector.c): where its body is a
 * split's guard `a + fv < b`, lanes whose guard fails at fv = 0 skip the
 * fallback at once (the block vec.scalar.run) instead of testing the guard
 * on every trip. */
START_TEST(test_vector_fallback_skip) {
  Diag d;
  ir_diag_init(&d, NULL);
  char *ll = cg_emit_llvm(op_vec4(), "sm_90", false, &d);
  ck_assert_msg(ll, "%s", d.buf ? d.buf : "");
  ck_assert_msg(strstr(ll, "vec.scalar.run"), "lanes past F do not skip the scalar fallback");
  free(ll);
  ir_arena_free(A);
  ir_diag_free(&d);
}
END_TEST

/* ---- ptxas ---- */

typedef struct PtxasStats {
  int regs, stack, spill_st, spill_ld, smem;
} PtxasStats;

/* Parses `ptxas -v` output for kernel `name`. */
static bool parse_ptxas(const char *out, const char *name, PtxasStats *s) {
  char key[256];
  snprintf(key, sizeof key, "Compiling entry function '%s'", name);
  const char *p = strstr(out, key);
  if (!p) return false;
  memset(s, 0, sizeof *s);
  const char *frame = strstr(p, "bytes stack frame");
  const char *used = strstr(p, "Used ");
  if (!frame || !used) return false;
  while (frame > out && frame[-1] != '\n') frame--;
  if (sscanf(frame, " %d bytes stack frame, %d bytes spill stores, %d bytes spill loads",
             &s->stack, &s->spill_st, &s->spill_ld) != 3)
    return false;
  if (sscanf(used, "Used %d registers", &s->regs) != 1) return false;
  const char *eol = strchr(used, '\n');
  const char *smem = strstr(used, "bytes smem");
  if (smem && (!eol || smem < eol)) {
    while (smem > used && smem[-1] == ' ') smem--;
    while (smem > used && smem[-1] >= '0' && smem[-1] <= '9') smem--;
    s->smem = atoi(smem);
  }
  return true;
}

/* The shuffle butterfly, the lane-0 store and the 16-byte accesses. */
START_TEST(test_shuffle_and_vector_ptx) {
  CgProgram p;
  compile_ok(op_dot_shuffle(), test_targets[_i], &p);
  ptx_check(count(p.ptx, "shfl.sync.bfly.b32") == 5, p.ptx, "not one 5-step butterfly");
  ptx_check(count(p.ptx, "st.global.f32") == 1, p.ptx, "not one store of the score");
  cg_program_free(&p);
  ir_arena_free(A);
  /* without `shuffle` the reduction over lanes is refused */
  char *msg = compile_err(op_dot_shuffle_how(IR_HOW_AUTO), test_targets[_i]);
  ck_assert_msg(strstr(msg, "needs a warp shuffle"), "%s", msg);
  free(msg);
  ir_arena_free(A);

  compile_ok(op_vec4(), test_targets[_i], &p);
  ptx_check(strstr(p.ptx, "ld.global.nc.v4.f32"), p.ptx, "no 16-byte read-only load");
  ptx_check(strstr(p.ptx, "st.global.v4.f32"), p.ptx, "no 16-byte store");
  /* the scalar fallback (tail of F, F % 4 != 0) is there too */
  ptx_check(strstr(p.ptx, "ld.global.nc.f32"), p.ptx, "no scalar fallback");
  ptx_check(!strstr(p.ptx, ".local"), p.ptx, "local memory used");
  /* the default: 1024 threads an SM, 4 blocks of 256 */
  ptx_check(strstr(p.ptx, ".minnctapersm 4\n"), p.ptx, "not 4 blocks an SM by default");
  cg_program_free(&p);
  ir_arena_free(A);

  /* @occupancy(2048) (passes/occupancy.c): 8 blocks of 256 an SM */
  IrOp *full = op_vec4();
  full->body->loop.occ = 2048;
  compile_ok(full, test_targets[_i], &p);
  ptx_check(strstr(p.ptx, ".minnctapersm 8\n"), p.ptx, "@occupancy(2048) not 8 blocks an SM");
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

START_TEST(test_ptxas) {
  const char *ptxas = tu_ptxas();
  if (!ptxas) {
    const char *skip = getenv("GOP_SKIP_PTXAS");
    if (skip && strcmp(skip, "1") == 0) {
      fprintf(stderr, "ptxas: not found, skipped (GOP_SKIP_PTXAS=1)\n");
      return;
    }
    ck_abort_msg("ptxas not found ($GOP_PTXAS, /usr/local/cuda/bin/ptxas, "
                 "PATH): the CUDA toolkit is needed to check the PTX; set "
                 "GOP_SKIP_PTXAS=1 to skip on a machine without it");
  }
  /* GOP_KEEP_PTX=DIR keeps the PTX and ptxas logs there, for a look */
  const char *keep = getenv("GOP_KEEP_PTX");
  const char *dir = keep && *keep ? keep : tu_tmpdir();
  int nkernels = 0;
  for (int c = 0; c < NCASES; c++) {
    for (int t = 0; t < 2; t++) {
      CgProgram p;
      compile_ok(cases[c].build(), test_targets[t], &p);
      char ptx[512], log[600], cmd[4096];
      snprintf(ptx, sizeof ptx, "%s/%s_%s.ptx", dir, cases[c].name,
               test_targets[t]);
      snprintf(log, sizeof log, "%s.log", ptx);
      FILE *f = fopen(ptx, "w");
      ck_assert_ptr_nonnull(f);
      fputs(p.ptx, f);
      fclose(f);
      snprintf(cmd, sizeof cmd, "'%s' -v -arch=%s -o /dev/null '%s' >'%s' 2>&1",
               ptxas, test_targets[t], ptx, log);
      int rc = system(cmd);
      char *out = tu_read_file(log, NULL);
      ck_assert_msg(rc == 0, "ptxas -arch=%s failed on %s:\n%s", test_targets[t],
                    ptx, out ? out : "");
      for (int k = 0; k < p.nkernels; k++) {
        PtxasStats s;
        ck_assert_msg(parse_ptxas(out, p.kernels[k].name, &s),
                      "cannot read ptxas -v for %s:\n%s", p.kernels[k].name, out);
        printf("ptxas %s %-26s %3d registers, %d bytes stack, %d/%d bytes "
               "spill stores/loads, %d bytes smem\n",
               test_targets[t], p.kernels[k].name, s.regs, s.stack, s.spill_st,
               s.spill_ld, s.smem);
        ck_assert_msg(s.spill_st == 0 && s.spill_ld == 0 && s.stack == 0,
                      "%s for %s spills:\n%s", p.kernels[k].name, test_targets[t], out);
        nkernels++;
      }
      free(out);
      cg_program_free(&p);
      ir_arena_free(A);
    }
  }
  fflush(stdout);
  ck_assert_int_gt(nkernels, 2 * NCASES - 1);
}
END_TEST

/* ---- 64-bit indices (docs/index64.md) ---- */

/* Every case compiles for 64-bit indices: the graph's offsets and edge ids
 * are read as u64, `ne` comes as a u64 parameter, and the integers are
 * 64-bit; the 32-bit program reads none of them so. */
START_TEST(test_index64_kernels) {
  const Case *c = &cases[_i];
  CgProgram p, q;
  Diag d;
  ir_diag_init(&d, NULL);
  int rc = cg_compile_bits(c->build(), "sm_90", 64, &p, &d);
  ck_assert_msg(rc == 0, "%s: %s", c->name, d.buf ? d.buf : "");
  ck_assert_int_eq(cg_program_index_bits(&p), 64);
  ir_arena_free(A);
  compile_ok(c->build(), "sm_90", &q);
  ck_assert_int_eq(cg_program_index_bits(&q), 32);
  bool reads_ptr = false, reads_ne = false;
  for (int k = 0; k < q.nkernels; k++)
    for (int i = 0; i < q.kernels[k].nparams; i++) {
      CgParamKind pk = q.kernels[k].params[i].kind;
      reads_ptr |= cg_param_wide(pk, 64);
      reads_ne |= pk == CG_PARAM_NE;
    }
  if (reads_ptr) {
    ptx_check(strstr(p.ptx, "ld.global.nc.u64"), p.ptx, "64-bit offsets not read as u64");
    ptx_check(!strstr(q.ptx, "ld.global.nc.u64"), q.ptx, "32-bit program reads u64");
  }
  /* ne: .u32 in the 32-bit kernel, .u64 in the 64-bit one */
  if (reads_ne)
    ck_assert_int_gt(count(p.ptx, ".param .u64"), count(q.ptx, ".param .u64"));
  ck_assert_int_eq(p.nkernels, q.nkernels);
  for (int k = 0; k < p.nkernels; k++) ck_assert_int_eq(p.kernels[k].nparams, q.kernels[k].nparams);
  ptx_check(!strstr(p.ptx, ".local"), p.ptx, "local memory used");
  cg_program_free(&p);
  cg_program_free(&q);
  ir_diag_free(&d);
  ir_arena_free(A);
}
END_TEST

/* The first of `n` needles in the `len` bytes at `from`, or NULL. */
static const char *first_of(const char *from, size_t len, const char *const *needles, int n) {
  const char *best = NULL;
  for (int i = 0; i < n; i++) {
    const char *p = memmem(from, len, needles[i], strlen(needles[i]));
    if (p && (!best || p < best)) best = p;
  }
  return best;
}

/* An op's stages on sm_90 (codegen/kernel.c, grid_dependencies): each one
 * after the first waits for the one before (griddepcontrol.wait) before
 * any access to memory, each one before the last lets the next be
 * scheduled (griddepcontrol.launch_dependents); a one-stage op and other
 * targets get neither. */
START_TEST(test_grid_dependencies) {
  CgProgram p;
  compile_ok(op_softmax(), "sm_90", &p);
  ck_assert_int_ge(p.nkernels, 3);
  static const char *const mem[] = {"ld.global", "st.global", "atom.", "red."};
  for (int k = 0; k < p.nkernels; k++) {
    size_t len = 0;
    const char *at = cg_kernel_ptx(&p, p.kernels[k].name, &len);
    ptx_check(at != NULL, p.ptx, "a kernel's entry is missing");
    static const char *const wait_[] = {"griddepcontrol.wait"};
    static const char *const trig_[] = {"griddepcontrol.launch_dependents"};
    const char *wait = first_of(at, len, wait_, 1), *trig = first_of(at, len, trig_, 1);
    ck_assert_int_eq(p.kernels[k].waits, k > 0);
    ptx_check((wait != NULL) == (k > 0), at, "griddepcontrol.wait not on the later stages alone");
    ptx_check((trig != NULL) == (k < p.nkernels - 1), at,
              "launch_dependents not on the earlier stages alone");
    if (wait) {
      const char *access = first_of(at, len, mem, 4);
      ptx_check(access && wait < access, at, "memory accessed before the wait");
      ptx_check(!first_of(wait + 1, len - (size_t)(wait + 1 - at), wait_, 1), at,
                "more than one wait");
    }
  }
  cg_program_free(&p);
  ir_arena_free(A);
  compile_ok(op_softmax(), "sm_80", &p);
  ptx_check(!strstr(p.ptx, "griddepcontrol"), p.ptx, "griddepcontrol below sm_90");
  for (int k = 0; k < p.nkernels; k++) ck_assert(!p.kernels[k].waits);
  cg_program_free(&p);
  ir_arena_free(A);
  compile_ok(op_single(), "sm_90", &p);
  ck_assert_int_eq(p.nkernels, 1);
  ptx_check(!strstr(p.ptx, "griddepcontrol"), p.ptx, "griddepcontrol in a one-stage op");
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("codegen");
  TCase *tc = tcase_create("ptx");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_ptx_content, 0, 2 * NCASES);
  tcase_add_test(tc, test_atomic_minmax_ptx);
  tcase_add_test(tc, test_fmuladd_and_no_approx_div);
  tcase_add_test(tc, test_params_and_launch);
  tcase_add_test(tc, test_range_launch_extent);
  tcase_add_test(tc, test_dtypes);
  tcase_add_test(tc, test_emit_llvm);
  tcase_add_test(tc, test_vector_fallback_skip);
  tcase_add_loop_test(tc, test_shuffle_and_vector_ptx, 0, 2);
  tcase_add_test(tc, test_grid_dependencies);
  suite_add_tcase(s, tc);
  tc = tcase_create("refusals");
  tcase_add_test(tc, test_unknown_target);
  tcase_add_test(tc, test_auto_refused);
  tcase_add_test(tc, test_bad_ir_refused);
  suite_add_tcase(s, tc);
  tc = tcase_create("index64");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_index64_kernels, 0, NCASES);
  suite_add_tcase(s, tc);
  tc = tcase_create("ptxas");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_ptxas);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run(suite()); }
