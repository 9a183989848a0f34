/* tests/unit/test_packs.c: kernel packs (codegen/program.c): a compiled
 * program written and read back unchanged, malformed packs refused with
 * the line and the reason, writes that never leave a half file, and the
 * 64-bit and CSR-order layouts a pack records. The operators are the
 * hand-built ones of cgbuild.h.
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

/* ---- kernel packs ---- */

static void assert_same_program(const CgProgram *a, const CgProgram *b) {
  ck_assert_str_eq(a->op, b->op);
  ck_assert_int_eq(cg_program_index_bits(a), cg_program_index_bits(b));
  ck_assert_str_eq(a->target, b->target);
  ck_assert_uint_eq(a->ptx_len, b->ptx_len);
  ck_assert_str_eq(a->ptx, b->ptx);
  ck_assert_str_eq(a->ir, b->ir);
  ck_assert_int_eq(a->nsyms, b->nsyms);
  for (int i = 0; i < a->nsyms; i++) ck_assert_str_eq(a->syms[i], b->syms[i]);
  ck_assert_int_eq(a->ntensors, b->ntensors);
  for (int i = 0; i < a->ntensors; i++) {
    const CgTensorInfo *x = &a->tensors[i], *y = &b->tensors[i];
    ck_assert_str_eq(x->name, y->name);
    ck_assert_int_eq(x->role, y->role);
    ck_assert_int_eq(x->domain, y->domain);
    ck_assert_int_eq(x->dtype, y->dtype);
    ck_assert_int_eq(x->red, y->red);
    ck_assert_int_eq(x->filled, y->filled);
    ck_assert_int_eq(x->ndims, y->ndims);
    for (int j = 0; j < x->ndims; j++) {
      ck_assert_int_eq(x->sym_id[j], y->sym_id[j]);
      if (x->sym_id[j] < 0) ck_assert_int_eq(x->dims[j].value, y->dims[j].value);
    }
  }
  ck_assert_int_eq(a->nkernels, b->nkernels);
  for (int i = 0; i < a->nkernels; i++) {
    const CgKernel *x = &a->kernels[i], *y = &b->kernels[i];
    ck_assert_str_eq(x->name, y->name);
    ck_assert_int_eq(x->stage, y->stage);
    ck_assert_int_eq(x->threads, y->threads);
    ck_assert_int_eq(x->waits, y->waits);
    ck_assert_int_eq(x->nparams, y->nparams);
    for (int j = 0; j < x->nparams; j++) {
      ck_assert_int_eq(x->params[j].kind, y->params[j].kind);
      ck_assert_int_eq(x->params[j].id, y->params[j].id);
    }
    ck_assert_int_eq(x->launch.kind, y->launch.kind);
    if (x->launch.kind == CG_LAUNCH_ONE) continue;
    ck_assert_int_eq(x->launch.bind, y->launch.bind);
    ck_assert_int_eq(x->launch.per_block, y->launch.per_block);
    ck_assert_int_eq(x->launch.extent.n, y->launch.extent.n);
    for (int j = 0; j < x->launch.extent.n; j++) {
      ck_assert_int_eq(x->launch.extent.tok[j].kind, y->launch.extent.tok[j].kind);
      ck_assert_int_eq(x->launch.extent.tok[j].value, y->launch.extent.tok[j].value);
    }
  }
}

START_TEST(test_pack_round_trip) {
  IrOp *(*builders[])(void) = {op_softmax, op_warp_vertex_default, op_single,
                                op_fill, op_block};
  for (size_t b = 0; b < sizeof builders / sizeof builders[0]; b++) {
    CgProgram p, q;
    compile_ok(builders[b](), "sm_86", &p);
    char path[512];
    snprintf(path, sizeof path, "%s/k%zu.pack", tu_tmpdir(), b);
    Diag d;
    ir_diag_init(&d, NULL);
    ck_assert_msg(cg_pack_write(&p, path, &d) == 0, "%s", d.buf);
    ck_assert_msg(cg_pack_read(path, &q, &d) == 0, "%s", d.buf);
    assert_same_program(&p, &q);
    /* written again, the file is the same byte for byte */
    char path2[520];
    snprintf(path2, sizeof path2, "%s.again", path);
    ck_assert_int_eq(cg_pack_write(&q, path2, &d), 0);
    char *t1 = tu_read_file(path, NULL), *t2 = tu_read_file(path2, NULL);
    ck_assert_str_eq(t1, t2);
    free(t1);
    free(t2);
    ir_diag_free(&d);
    cg_program_free(&p);
    cg_program_free(&q);
    ck_assert_ptr_null(q.ptx);
    ir_arena_free(A);
  }
}
END_TEST

/* Reads `text` as a pack and returns the diagnostics (malloc'ed). */
static char *pack_err(const char *text) {
  const char *path = tu_write("bad.pack", text);
  CgProgram q;
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_int_eq(cg_pack_read(path, &q, &d), -1);
  ck_assert_ptr_null(q.ptx);
  ck_assert_ptr_null(q.kernels);
  char *msg = strdup(strstr(d.buf, "bad.pack") ? strstr(d.buf, "bad.pack") : d.buf);
  ir_diag_free(&d);
  return msg;
}

/* `text` with the first `from` replaced by `to` (malloc'ed). */
static char *replace(const char *text, const char *from, const char *to) {
  const char *p = strstr(text, from);
  ck_assert_msg(p != NULL, "'%s' not in the pack", from);
  size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
  char *out = malloc(n);
  snprintf(out, n, "%.*s%s%s", (int)(p - text), text, to, p + strlen(from));
  return out;
}

/* Removes a pack's `sum` line: the tests below edit packs by hand, and a
 * pack without one reads as packs did before there was one. */
static char *drop_sum(char *text) {
  char *s = strstr(text, "\nsum ");
  if (s) {
    char *e = strchr(s + 1, '\n');
    memmove(s, e, strlen(e) + 1);
  }
  return text;
}

static void expect_pack_err(const char *good, const char *from, const char *to,
                            const char *want) {
  char *bad = replace(good, from, to);
  char *msg = pack_err(bad);
  ck_assert_msg(strstr(msg, want), "replacing '%s' by '%s': expected '%s', got '%s'",
                from, to, want, msg);
  free(msg);
  free(bad);
}

/* Stages after the first wait for the one before (griddepcontrol.wait,
 * sm_90 only; codegen/kernel.c), and a pack keeps that as `waits` on the
 * kernel's line; a pack written before has no such word, and its kernels
 * are launched plainly. */
START_TEST(test_pack_waits) {
  CgProgram p, q;
  compile_ok(op_softmax(), "sm_90", &p);
  ck_assert_int_ge(p.nkernels, 2);
  for (int i = 0; i < p.nkernels; i++) ck_assert_int_eq(p.kernels[i].waits, i > 0);
  char path[512];
  snprintf(path, sizeof path, "%s/waits.pack", tu_tmpdir());
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_msg(cg_pack_write(&p, path, &d) == 0, "%s", d.buf);
  ck_assert_msg(cg_pack_read(path, &q, &d) == 0, "%s", d.buf);
  assert_same_program(&p, &q);
  cg_program_free(&q);
  /* the same pack without the words: nothing waits */
  char *text = drop_sum(tu_read_file(path, NULL)), *w;
  while ((w = strstr(text, " waits\n"))) memmove(w, w + 6, strlen(w + 6) + 1);
  const char *old = tu_write("old.pack", text);
  ck_assert_msg(cg_pack_read(old, &q, &d) == 0, "%s", d.buf);
  for (int i = 0; i < q.nkernels; i++) ck_assert(!q.kernels[i].waits);
  cg_program_free(&q);
  /* `waits` on a kernel whose PTX has no wait (the first stage) is refused:
   * launched early, it would race with the kernel before it */
  char first[160], marked[170];
  snprintf(first, sizeof first, "kernel %s ", p.kernels[0].name);
  char *line = strstr(text, first), *eol = line ? strchr(line, '\n') : NULL;
  ck_assert_ptr_nonnull(eol);
  snprintf(marked, sizeof marked, "%.*s waits", (int)(eol - line), line);
  char *from = strndup(line, (size_t)(eol - line));
  expect_pack_err(text, from, marked, "is marked `waits` but its PTX has no griddepcontrol.wait");
  free(from);
  free(text);
  ir_diag_free(&d);
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

START_TEST(test_pack_malformed) {
  CgProgram p;
  compile_ok(op_warp_vertex(IR_HOW_PLAIN, 128), "sm_90", &p);
  char path[512];
  snprintf(path, sizeof path, "%s/good.pack", tu_tmpdir());
  ck_assert_int_eq(cg_pack_write(&p, path, NULL), 0);
  char *good = tu_read_file(path, NULL);
  cg_program_free(&p);
  ir_arena_free(A);
  /* the checksum: a changed byte anywhere before it is refused, and so is
   * a line slipped in between it and `end` */
  ck_assert_ptr_nonnull(strstr(good, "\nsum "));
  {
    char *flipped = strdup(good);
    char *ptx = strstr(flipped, ".entry");
    ck_assert_ptr_nonnull(ptx);
    ptx[1] = 'E';
    char *msg = pack_err(flipped);
    ck_assert_msg(strstr(msg, "checksum does not match its contents"), "%s", msg);
    free(msg);
    free(flipped);
    char *late = replace(good, "\nend\n", "\ntimes 0 0 0\nend\n");
    msg = pack_err(late);
    ck_assert_msg(strstr(msg, "after the `sum` line"), "%s", msg);
    free(msg);
    free(late);
  }
  drop_sum(good);

  char *msg = pack_err("");
  ck_assert_msg(strstr(msg, "bad.pack:1: error: empty file"), "%s", msg);
  free(msg);
  msg = pack_err("hello\n");
  ck_assert_msg(strstr(msg, "bad.pack:1: error: not a gop kernel pack"), "%s", msg);
  free(msg);
  expect_pack_err(good, "gop-pack 1", "gop-pack 2",
                  "bad.pack:1: error: unsupported kernel pack version '2'");
  expect_pack_err(good, "target sm_90", "target sm_75",
                  "bad.pack:3: error: unknown target sm_75");
  expect_pack_err(good, "param in_eid", "param in_eids",
                  "error: unknown parameter kind 'in_eids'");
  expect_pack_err(good, "param tensor 2", "param tensor 7",
                  "error: bad tensor id '7'");
  expect_pack_err(good, "launch extent warp 4 nv", "launch extent warp 4 nv +",
                  "error: extent: operator '+' lacks operands");
  expect_pack_err(good, "launch extent warp 4 nv", "launch sideways",
                  "error: unknown launch rule 'sideways'");
  expect_pack_err(good, "kernel u_mul_e_sum_s0 0 128 8",
                  "kernel u_mul_e_sum_s0 0 100 8",
                  "error: threads per block 100 is not a multiple of 32");
  /* an @occupancy recorded on the kernel line: 32 .. 65536 threads an SM */
  expect_pack_err(good, "kernel u_mul_e_sum_s0 0 128 8",
                  "kernel u_mul_e_sum_s0 0 128 8 occupancy 7",
                  "error: bad occupancy '7'");
  expect_pack_err(good, "kernel u_mul_e_sum_s0 0 128 8",
                  "kernel u_mul_e_sum_s0 0 128 8 occupancy lots",
                  "error: bad occupancy 'lots'");
  expect_pack_err(good, "tensor 1 W in edge f32 =", "tensor 1 W in edge f33 =",
                  "bad.pack:7: error: bad dtype 'f33'");
  /* a tensor the op fills itself (a 16-bit output's wide twin) keeps the
   * mark: the runtime then gives it no start value */
  {
    const char *yl = strstr(good, "\ntensor 2 Y out ");
    ck_assert_ptr_nonnull(yl);
    const char *eol = strchr(yl + 1, '\n');
    char *line = strndup(yl, (size_t)(eol - yl));
    char *marked = malloc(strlen(line) + 8);
    sprintf(marked, "%s filled", line);
    /* reduced into from the runtime's start value (+=): refused as filled */
    ck_assert_ptr_nonnull(strstr(line, " += "));
    expect_pack_err(good, line, marked, "error: tensor 'Y' is marked filled (the op "
                    "writes its start values) but is reduced into from a start value");
    /* written whole by the op (=): kept */
    char *assign = replace(marked, " += ", " = ");
    free(marked);
    marked = assign;
    char *text = replace(good, line, marked);
    const char *fpath = tu_write("filled.pack", text);
    CgProgram fq;
    Diag fd;
    ir_diag_init(&fd, NULL);
    ck_assert_msg(cg_pack_read(fpath, &fq, &fd) == 0, "%s", fd.buf);
    ck_assert(fq.tensors[2].filled && !fq.tensors[0].filled);
    cg_program_free(&fq);
    ir_diag_free(&fd);
    free(text), free(marked), free(line);
  }
  /* `filled` (the op writes the start values itself) on an input, or on a
   * tensor reduced into from the runtime's start value, is refused */
  expect_pack_err(good, "tensor 1 W in edge f32 =", "tensor 1 W in edge f32 = filled",
                  "error: tensor 'W' is marked filled (the op writes its start values) but "
                  "is an input");
  expect_pack_err(good, "\nend\n", "\n", "error: unexpected end of file");
  expect_pack_err(good, "\nend\n", "\nend\nmore\n", "error: text after `end`");
  /* the PTX block announces more bytes than there are */
  const char *ptxline = strstr(good, "\nptx ");
  ck_assert_ptr_nonnull(ptxline);
  char *cut = strndup(good, (size_t)(ptxline - good) + 200);
  msg = pack_err(cut);
  ck_assert_msg(strstr(msg, "error: the ptx block is truncated"), "%s", msg);
  free(msg);
  free(cut);
  /* a missing file */
  CgProgram q;
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_int_eq(cg_pack_read("/nonexistent/x.pack", &q, &d), -1);
  ck_assert_ptr_nonnull(strstr(d.buf, "/nonexistent/x.pack: error: cannot read"));
  ir_diag_free(&d);
  free(good);
}
END_TEST

START_TEST(test_pack_write_atomic) {
  CgProgram p;
  compile_ok(op_edge_atomic(), "sm_80", &p);
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_int_eq(cg_pack_write(&p, "/nonexistent/dir/x.pack", &d), -1);
  ck_assert_ptr_nonnull(strstr(d.buf, "/nonexistent/dir/x.pack: error: cannot write"));
  ir_diag_free(&d);
  /* no temporary left behind next to a written pack */
  char path[512];
  snprintf(path, sizeof path, "%s/atomic/x.pack", tu_tmpdir());
  char dir[520];
  snprintf(dir, sizeof dir, "%s/atomic", tu_tmpdir());
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  ck_assert_int_eq(cg_pack_write(&p, path, NULL), 0);
  ck_assert_int_eq(cg_pack_write(&p, path, NULL), 0);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "test $(ls '%s' | wc -l) -eq 1", dir);
  ck_assert_int_eq(system(cmd), 0);
  cg_program_free(&p);
  ir_arena_free(A);
}
END_TEST

START_TEST(test_expr_eval) {
  CgExpr e = {0};
  /* ($0 + 31) / 32 * nv - ne % 7 */
  CgTokKind ks[] = {CG_TOK_SYM, CG_TOK_CONST, CG_TOK_ADD, CG_TOK_CONST,
                    CG_TOK_DIV, CG_TOK_NV,    CG_TOK_MUL, CG_TOK_NE,
                    CG_TOK_CONST, CG_TOK_MOD, CG_TOK_SUB};
  int64_t vs[] = {0, 31, 0, 32, 0, 0, 0, 0, 7, 0, 0};
  for (int i = 0; i < 11; i++) {
    e.tok[i].kind = ks[i];
    e.tok[i].value = vs[i];
  }
  e.n = 11;
  int64_t syms[1] = {100}, out;
  ck_assert_int_eq(cg_expr_eval(&e, 10, 23, syms, 1, &out), 0);
  ck_assert_int_eq(out, 4 * 10 - 23 % 7);
  ck_assert_int_eq(cg_expr_eval(&e, 10, 23, syms, 0, &out), -1); /* no $0 */
  e.tok[3].value = 0;
  ck_assert_int_eq(cg_expr_eval(&e, 10, 23, syms, 1, &out), -1); /* / 0 */
  e.n = 2;
  ck_assert_int_eq(cg_expr_eval(&e, 10, 23, syms, 1, &out), -1); /* 2 left */
}
END_TEST

/* ---- 64-bit indices and edge layouts in packs ---- */

START_TEST(test_index64_pack_and_rules) {
  CgProgram p, q;
  Diag d;
  ir_diag_init(&d, NULL);
  ck_assert_int_eq(cg_compile_bits(op_warp_vertex_default(), "sm_90", 64, &p, &d), 0);
  char path[512];
  snprintf(path, sizeof path, "%s/wide.pack", tu_tmpdir());
  ck_assert_int_eq(cg_pack_write(&p, path, &d), 0);
  char *text = drop_sum(tu_read_file(path, NULL));
  ck_assert_ptr_nonnull(strstr(text, "\nindex 64\n"));
  ck_assert_msg(cg_pack_read(path, &q, &d) == 0, "%s", d.buf);
  assert_same_program(&p, &q);
  cg_program_free(&q);
  expect_pack_err(text, "index 64", "index 48", "error: bad index width 48 (32 or 64)");
  expect_pack_err(text, "index 64", "index 64\nindex 32", "error: a second `index` line");
  /* a 32-bit pack says nothing: packs written before 64-bit ones read the same */
  char *narrow = replace(text, "index 64\n", "");
  const char *npath = tu_write("narrow.pack", narrow);
  ck_assert_int_eq(cg_pack_read(npath, &q, &d), 0);
  ck_assert_int_eq(cg_program_index_bits(&q), 32);
  cg_program_free(&q);
  free(narrow);
  free(text);
  cg_program_free(&p);
  ir_arena_free(A);
  /* the layout line of a pack for edge ids in CSR order: kept on reading,
   * an unknown layout or a second line refused with the line */
  CgLayout csr = {32, true};
  ck_assert_int_eq(cg_compile_layout(op_warp_vertex_default(), "sm_90", csr, &p, &d), 0);
  snprintf(path, sizeof path, "%s/csr.pack", tu_tmpdir());
  ck_assert_int_eq(cg_pack_write(&p, path, &d), 0);
  char *ctext = drop_sum(tu_read_file(path, NULL));
  ck_assert_ptr_nonnull(strstr(ctext, "\nedges csr\n"));
  ck_assert_msg(cg_pack_read(path, &q, &d) == 0, "%s", d.buf);
  ck_assert(q.csr_edges);
  assert_same_program(&p, &q);
  cg_program_free(&q);
  expect_pack_err(ctext, "edges csr", "edges coo", "error: unknown edge layout coo (csr)");
  expect_pack_err(ctext, "edges csr", "edges csr\nedges csr", "error: a second `edges` line");
  expect_pack_err(ctext, "edges csr", "edges", "edges csr");
  free(ctext);
  cg_program_free(&p);
  ir_arena_free(A);
  /* widths other than 32 and 64 */
  ck_assert_int_eq(cg_compile_bits(op_warp_vertex_default(), "sm_90", 16, &p, &d), -1);
  ck_assert_ptr_nonnull(strstr(d.buf, "index width 16"));
  ir_arena_free(A);
  /* which graphs need 64 bits: edge ids and positions with headroom */
  ck_assert_int_eq(cg_index_bits_needed(1000, 5000), 32);
  ck_assert_int_eq(cg_index_bits_needed(1000, CG_INDEX32_MAX_EDGES), 32);
  ck_assert_int_eq(cg_index_bits_needed(1000, CG_INDEX32_MAX_EDGES + 1), 64);
  ck_assert_int_eq(cg_index_bits_needed(1 << 26, (int64_t)1 << 31), 64);
  ir_diag_free(&d);
}
END_TEST


static Suite *suite(void) {
  Suite *s = suite_create("packs");
  TCase *tc = tcase_create("pack");
  tcase_add_test(tc, test_pack_round_trip);
  tcase_add_test(tc, test_pack_malformed);
  tcase_add_test(tc, test_pack_waits);
  tcase_add_test(tc, test_pack_write_atomic);
  tcase_add_test(tc, test_expr_eval);
  suite_add_tcase(s, tc);
  tc = tcase_create("index64");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_index64_pack_and_rules);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run(suite()); }
