/* tests/unit/test_ops.c: the operator space of stdlib/ (docs/operators.md).
 *
 *   - the table: stdlib/ops_generated.gop is what lang_ops_generate makes
 *     (GOP_UPDATE_GENERATED=1 rewrites it), every row is a stdlib operator
 *     whose IR is the row's definition (the hand-written rows included),
 *     names follow DGL's, the representative subset covers the space;
 *   - an independent reference: every row (and edge softmax) computed by a
 *     plain C loop over the edge list, written from the definition
 *     (edge_op, gather, placement, broadcast) and not through the IR,
 *     against the reference interpreter on a tiny graph with empty
 *     neighbourhoods, self-loops and parallel arcs, and on wiki-Vote (a
 *     directed graph where most vertices have no in-edge): f32 relative L2
 *     below 1e-5, max and min exactly, 0 for an empty max/min/mean;
 *   - doc comments and `gopc ops`.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gop.h"
#include "lang/lang.h"
#include "graph/graph.h"
#include "interp/interp.h"
#include "testutil.h"

static LangOpSpec *table(int *n) {
  *n = lang_ops_table(NULL, 0);
  LangOpSpec *rows = calloc((size_t)*n, sizeof *rows);
  ck_assert(rows != NULL);
  ck_assert_int_eq(lang_ops_table(rows, *n), *n);
  return rows;
}

static const LangStdlibFile *stdlib_file(const char *name) {
  for (const LangStdlibFile *f = lang_stdlib_files; f->name; f++)
    if (strcmp(f->name, name) == 0) return f;
  return NULL;
}

/* ---- the table ---- */

START_TEST(generated_file_up_to_date) {
  char *want = lang_ops_generate();
  ck_assert(want != NULL);
  const char *path = tu_source("stdlib/ops_generated.gop");
  if (getenv("GOP_UPDATE_GENERATED")) {
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fputs(want, f);
    ck_assert_int_eq(fclose(f), 0);
    fprintf(stderr, "rewrote %s; rebuild to embed it\n", path);
  }
  char *have = tu_read_file(path, NULL);
  ck_assert_msg(have && strcmp(have, want) == 0,
                "%s is out of date with lang/stdlib.c's table: run this test with "
                "GOP_UPDATE_GENERATED=1 and rebuild", path);
  const LangStdlibFile *embedded = stdlib_file("stdlib/ops_generated.gop");
  ck_assert(embedded != NULL);
  ck_assert_msg(strcmp(embedded->text, want) == 0, "the embedded copy is stale: rebuild");
  free(have);
  free(want);
}
END_TEST

/* Every row is a stdlib operator whose IR is the row's own definition:
 * for the hand-written rows, aggregate.gop and message.gop agree with the
 * table. */
START_TEST(rows_are_stdlib_ops) {
  int n;
  LangOpSpec *rows = table(&n);
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  ck_assert_msg(lib != NULL, "%s", d.buf);
  int handwritten = 0;
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < i; j++) ck_assert_str_ne(rows[i].name, rows[j].name);
    IrOp *op = ir_module_find_op(lib, rows[i].name);
    ck_assert_msg(op != NULL, "no stdlib op %s", rows[i].name);
    char *text = lang_ops_op_text(&rows[i]);
    IrModule *one = lang_compile(a, &d, rows[i].name, text);
    ck_assert_msg(one && one->nops == 1, "%s:\n%s", text, d.buf);
    char *want = ir_op_to_string(one->ops[0]), *have = ir_op_to_string(op);
    ck_assert_msg(strcmp(want, have) == 0, "stdlib %s is\n%s\nthe table says\n%s",
                  rows[i].name, have, want);
    free(want);
    free(have);
    free(text);
    handwritten += rows[i].handwritten;
    const char *file = op->loc.file;
    ck_assert_str_eq(file, rows[i].handwritten ? (rows[i].gather == LANG_GATHER_COPY
                                                      ? "stdlib/message.gop"
                                                      : "stdlib/aggregate.gop")
                                               : "stdlib/ops_generated.gop");
  }
  ck_assert_int_eq(handwritten, 7);
  /* the generated file holds the table's rows and nothing else */
  int generated = 0;
  for (int i = 0; i < lib->nops; i++)
    generated += strcmp(lib->ops[i]->loc.file, "stdlib/ops_generated.gop") == 0;
  ck_assert_int_eq(generated, n - handwritten);
  ir_diag_free(&d);
  ir_arena_free(a);
  free(rows);
}
END_TEST

/* DGL's names for the space: gsddmm's copy_u, copy_v and LHS_OP_RHS for
 * distinct LHS, RHS in u, v, e and OP in add sub mul div dot; gspmm's
 * copy_u, copy_e and u_OP_e with sum, max, min, mean. */
START_TEST(dgl_names) {
  int n;
  LangOpSpec *rows = table(&n);
  static const char *const sddmm_ops[] = {"add", "sub", "mul", "div", "dot"};
  static const char *const spmm_ops[] = {"add", "sub", "mul", "div"};
  static const char *const reduce[] = {"sum", "max", "min", "mean"};
  static const char *const sides = "uve";
  char want[256][24];
  int nw = 0;
  snprintf(want[nw++], 24, "copy_u");
  snprintf(want[nw++], 24, "copy_v");
  snprintf(want[nw++], 24, "copy_e");
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; i != j && k < 5; k++)
        snprintf(want[nw++], 24, "%c_%s_%c", sides[i], sddmm_ops[k], sides[j]);
  for (int r = 0; r < 4; r++) {
    snprintf(want[nw++], 24, "copy_u_%s", reduce[r]);
    snprintf(want[nw++], 24, "copy_e_%s", reduce[r]);
    for (int k = 0; k < 4; k++) snprintf(want[nw++], 24, "u_%s_e_%s", spmm_ops[k], reduce[r]);
  }
  ck_assert_int_eq(nw, 33 + 24);
  for (int w = 0; w < nw; w++) {
    bool found = false;
    for (int i = 0; i < n; i++) found |= strcmp(rows[i].dgl, want[w]) == 0;
    ck_assert_msg(found, "DGL's %s is missing", want[w]);
  }
  /* every row's DGL name is one of those, and its name that name with at
   * most a broadcast suffix; a weighting has all three shapes */
  for (int i = 0; i < n; i++) {
    bool known = false;
    for (int w = 0; w < nw; w++) known |= strcmp(rows[i].dgl, want[w]) == 0;
    ck_assert_msg(known, "%s is not a DGL name", rows[i].dgl);
    size_t k = strlen(rows[i].dgl);
    ck_assert_int_eq(strncmp(rows[i].name, rows[i].dgl, k), 0);
    const char *suffix = rows[i].name + k;
    ck_assert_str_eq(suffix, rows[i].shape == LANG_SHAPE_HEADS                 ? "_heads"
                             : rows[i].shape == LANG_SHAPE_SCALAR || !suffix[0] ? ""
                                                                               : "_full");
  }
  ck_assert_int_eq(n, 57 + 2 * 14);
  free(rows);
}
END_TEST

START_TEST(representative_subset_covers_the_space) {
  int n;
  LangOpSpec *rows = table(&n);
  bool eop[7] = {0}, gather[5] = {0}, lhs[4] = {0}, rhs[4] = {0}, shape[3] = {0};
  int chosen = 0;
  for (int i = 0; i < n; i++) {
    if (!lang_ops_representative(rows[i].name)) continue;
    chosen++;
    eop[rows[i].edge_op] = gather[rows[i].gather] = true;
    lhs[rows[i].lhs] = rhs[rows[i].rhs] = shape[rows[i].shape] = true;
  }
  for (int k = 0; k < 7; k++) ck_assert_msg(eop[k], "edge_op %d not covered", k);
  for (int k = 0; k < 5; k++) ck_assert_msg(gather[k], "gather %d not covered", k);
  for (int k = 0; k < 4; k++) ck_assert_msg(lhs[k] && rhs[k], "placement %d not covered", k);
  for (int k = 0; k < 3; k++) ck_assert_msg(shape[k], "shape %d not covered", k);
  ck_assert_int_le(chosen, 20);
  ck_assert(lang_ops_representative("edge_softmax")); /* not in the table */
  ck_assert(lang_ops_representative("u_mul_e_sum"));  /* hand-written */
  ck_assert(!lang_ops_representative("v_add_u"));
  ck_assert(!lang_ops_representative(NULL));
  free(rows);
}
END_TEST

/* ---- the independent reference ---- */

typedef struct Case {
  const Graph *g;
  int64_t F, H;
} Case;

/* Values in [-1, 1); a divisor in ±[0.5, 2) so that quotients stay tame. */
static float *random_tensor(int64_t n, bool divisor, uint64_t *seed) {
  float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  for (int64_t k = 0; k < n; k++) {
    float r = (float)(tu_lcg(seed) % 2000000) / 1e6f - 1.0f;
    x[k] = divisor ? (r < 0 ? -0.5f + 1.5f * r : 0.5f + 1.5f * r) : r;
  }
  return x;
}

/* Rows of an operand of placement p: the source's, the destination's or
 * the edge's; `width` values each. */
static const float *operand_row(LangPlace p, const float *t, int64_t width, int64_t eid,
                                 const Graph *g) {
  int64_t row = p == LANG_ON_SRC ? g->src[eid] : p == LANG_ON_DST ? g->dst[eid] : eid;
  return t + row * width;
}

/* lhs OP rhs, straight from the definition. */
static float edge_op(LangEdgeOp op, float a, float b) {
  switch (op) {
  case LANG_EOP_COPY_LHS: return a;
  case LANG_EOP_COPY_RHS: return b;
  case LANG_EOP_ADD: return a + b;
  case LANG_EOP_SUB: return a - b;
  case LANG_EOP_MUL: return a * b;
  case LANG_EOP_DIV: return a / b;
  case LANG_EOP_DOT: break;
  }
  ck_abort_msg("edge_op %d has no element-wise form", op);
  return 0;
}

/* The reference result of row `s` for inputs lhs/rhs (NULL when absent):
 * a malloc'ed output of |E| or |V| rows. */
static float *reference(const LangOpSpec *s, const Case *c, const float *lhs,
                        const float *rhs) {
  const Graph *g = c->g;
  int64_t H = s->shape == LANG_SHAPE_HEADS ? c->H : 1, F = c->F;
  int64_t width = H * F; /* values per output row (dot: 1) */
  /* values per operand row: an edge weight has 1 (scalar) or H (heads) */
  int64_t lw = width, rw = width;
  bool weighted_edge = s->shape != LANG_SHAPE_FULL;
  if (weighted_edge && s->lhs == LANG_ON_EDGE) lw = H;
  if (weighted_edge && s->rhs == LANG_ON_EDGE) rw = H;
  bool message = s->gather == LANG_GATHER_COPY;
  int64_t nrows = message ? g->ne : g->nv;
  int64_t outw = s->edge_op == LANG_EOP_DOT ? 1 : width;
  float *out = calloc((size_t)(nrows * outw > 0 ? nrows * outw : 1), sizeof(float));
  int64_t *count = calloc((size_t)(g->nv > 0 ? g->nv : 1), sizeof(int64_t));
  for (int64_t eid = 0; eid < g->ne; eid++) {
    const float *a = lhs ? operand_row(s->lhs, lhs, lw, eid, g) : NULL;
    const float *b = rhs ? operand_row(s->rhs, rhs, rw, eid, g) : NULL;
    if (s->edge_op == LANG_EOP_DOT) {
      float acc = 0;
      for (int64_t f = 0; f < F; f++) acc += a[f] * b[f];
      out[eid] = acc;
      continue;
    }
    int64_t v = g->dst[eid];
    float *o = message ? out + eid * width : out + v * width;
    for (int64_t h = 0; h < H; h++)
      for (int64_t f = 0; f < F; f++) {
        /* a weight is indexed by head only; anything else by (h, f) */
        float x = a ? a[lw == width ? h * F + f : lw == H ? h : 0] : 0;
        float y = b ? b[rw == width ? h * F + f : rw == H ? h : 0] : 0;
        float val = edge_op(s->edge_op, x, y);
        float *dst = &o[h * F + f];
        switch (s->gather) {
        case LANG_GATHER_COPY: *dst = val; break;
        case LANG_GATHER_SUM:
        case LANG_GATHER_MEAN: *dst += val; break;
        case LANG_GATHER_MAX: *dst = count[v] == 0 ? val : fmaxf(*dst, val); break;
        case LANG_GATHER_MIN: *dst = count[v] == 0 ? val : fminf(*dst, val); break;
        }
      }
    count[v]++;
  }
  /* mean divides by the in-degree; a vertex without in-edges keeps 0 for
   * every gather (DGL's rule) */
  if (s->gather == LANG_GATHER_MEAN)
    for (int64_t v = 0; v < g->nv; v++)
      for (int64_t k = 0; count[v] && k < width; k++) out[v * width + k] /= (float)count[v];
  free(count);
  return out;
}

/* edge softmax from its definition: A[e] = exp(S[e] - max) / sum over the
 * in-edges of dst(e). */
static float *reference_softmax(const Graph *g, const float *S) {
  float *M = malloc(sizeof(float) * (size_t)(g->nv + 1)), *Z = calloc((size_t)g->nv + 1, 4);
  float *A = malloc(sizeof(float) * (size_t)(g->ne + 1));
  for (int64_t v = 0; v < g->nv; v++) M[v] = -INFINITY;
  for (int64_t e = 0; e < g->ne; e++) M[g->dst[e]] = fmaxf(M[g->dst[e]], S[e]);
  for (int64_t e = 0; e < g->ne; e++) Z[g->dst[e]] += expf(S[e] - M[g->dst[e]]);
  for (int64_t e = 0; e < g->ne; e++) A[e] = expf(S[e] - M[g->dst[e]]) / Z[g->dst[e]];
  free(M);
  free(Z);
  return A;
}

/* NULL when equal enough, else a message (malloc'ed). */
static char *compare(const char *what, const float *got, const float *want, int64_t n,
                     bool exact) {
  double diff = 0, norm = 0;
  char *msg = NULL;
  for (int64_t k = 0; k < n; k++) {
    if (isnan(got[k]) || isnan(want[k]) || (exact && got[k] != want[k])) {
      if (asprintf(&msg, "%s[%lld] = %.9g, want %s%.9g", what, (long long)k, got[k],
                   exact ? "exactly " : "", want[k]) < 0)
        abort();
      return msg;
    }
    diff += ((double)got[k] - want[k]) * ((double)got[k] - want[k]);
    norm += (double)want[k] * want[k];
  }
  double rel = sqrt(diff) / (norm > 0 ? sqrt(norm) : 1);
  if (!(rel < 1e-5) && asprintf(&msg, "%s: relative L2 error %.3g", what, rel) < 0) abort();
  return msg;
}

/* Runs stdlib op `name` on the interpreter with `in` (by input order);
 * returns its first output (malloc'ed) and its element count. */
static float *interpret(IrModule *lib, const char *name, const Case *c, float **in,
                        int64_t *numel) {
  IrOp *op = ir_module_find_op(lib, name);
  ck_assert_msg(op != NULL, "no stdlib op %s", name);
  IrExtents ext = {.n = op->nsyms};
  for (int i = 0; i < op->nsyms; i++)
    ext.value[i] = strcmp(op->syms[i]->name, "H") == 0 ? c->H : c->F;
  void *bufs[8] = {0};
  float *out = NULL;
  ck_assert_int_le(op->ntensors, 8);
  for (int i = 0, k = 0; i < op->ntensors; i++) {
    const IrTensor *t = op->tensors[i];
    if (t->role == IR_ROLE_IN) bufs[i] = in[k++];
    else if (t->role == IR_ROLE_OUT) {
      *numel = graph_tensor_numel(t, c->g, &ext);
      /* poison: every element must be written */
      out = malloc(sizeof(float) * (size_t)(*numel > 0 ? *numel : 1));
      for (int64_t j = 0; j < *numel; j++) out[j] = NAN;
      bufs[i] = out;
    }
  }
  Diag d;
  ir_diag_init(&d, NULL);
  InterpArgs args = {.graph = c->g, .extents = ext, .mode = INTERP_F32, .buffers = bufs};
  ck_assert_msg(interp_run(op, &args, &d) == 0, "%s: %s", name, d.buf);
  ir_diag_free(&d);
  return out;
}

/* Every row and edge softmax on graph `c`; returns the failures. */
static int check_all(const Case *c, const char *gname) {
  int n;
  LangOpSpec *rows = table(&n);
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  ck_assert_msg(lib != NULL, "%s", d.buf);
  uint64_t seed = 2024;
  int failures = 0;
  for (int i = 0; i < n; i++) {
    const LangOpSpec *s = &rows[i];
    IrOp *op = ir_module_find_op(lib, s->name);
    ck_assert(op != NULL);
    IrExtents ext = {.n = op->nsyms};
    for (int k = 0; k < op->nsyms; k++)
      ext.value[k] = strcmp(op->syms[k]->name, "H") == 0 ? c->H : c->F;
    float *in[2] = {NULL, NULL};
    for (int k = 0; k < op->ninputs; k++) {
      int64_t numel = graph_tensor_numel(op->tensors[k], c->g, &ext);
      bool divisor = s->edge_op == LANG_EOP_DIV && k == op->ninputs - 1;
      in[k] = random_tensor(numel, divisor, &seed);
    }
    const float *lhs = s->lhs != LANG_ON_NONE ? in[0] : NULL;
    const float *rhs = s->rhs != LANG_ON_NONE ? in[s->lhs != LANG_ON_NONE ? 1 : 0] : NULL;
    int64_t numel = 0;
    float *got = interpret(lib, s->name, c, in, &numel);
    float *want = reference(s, c, lhs, rhs);
    bool exact = s->gather == LANG_GATHER_MAX || s->gather == LANG_GATHER_MIN ||
                 s->edge_op == LANG_EOP_COPY_LHS || s->edge_op == LANG_EOP_COPY_RHS;
    char *msg = compare(s->name, got, want, numel, exact);
    if (msg) {
      if (failures++ < 10) fprintf(stderr, "%s on %s: %s\n", s->name, gname, msg);
      free(msg);
    }
    free(got);
    free(want);
    free(in[0]);
    free(in[1]);
  }
  float *S = random_tensor(c->g->ne, false, &seed);
  for (int64_t e = 0; e < c->g->ne; e++) S[e] *= 20; /* scores far apart */
  int64_t numel = 0;
  float *got = interpret(lib, "edge_softmax", c, &S, &numel);
  float *want = reference_softmax(c->g, S);
  char *msg = compare("edge_softmax", got, want, numel, false);
  if (msg) {
    fprintf(stderr, "edge_softmax on %s: %s\n", gname, msg);
    failures++;
    free(msg);
  }
  free(S);
  free(got);
  free(want);
  ir_diag_free(&d);
  ir_arena_free(a);
  free(rows);
  return failures;
}

/* Six vertices: 1 has four in-edges, one a self-loop and two parallel
 * arcs from 0; 3 and 4 have none (4 is isolated); 5 has one. */
static Graph *tiny_graph(void) {
  static const int64_t src[] = {0, 2, 1, 0, 3, 1, 5};
  static const int64_t dst[] = {1, 1, 1, 1, 5, 0, 2};
  Diag d;
  ir_diag_init(&d, NULL);
  Graph *g = graph_from_coo(6, 7, src, dst, "tiny", &d, (Loc){"tiny", 0, 0});
  ck_assert_msg(g != NULL, "%s", d.buf);
  ir_diag_free(&d);
  return g;
}

START_TEST(reference_tiny_graph) {
  Graph *g = tiny_graph();
  Case c = {g, 5, 3};
  ck_assert_int_eq(check_all(&c, "tiny"), 0);
  /* the rule itself: vertex 3 has no in-edge, so every max/min/mean is 0 */
  Arena *a = ir_arena_new();
  Diag d;
  ir_diag_init(&d, NULL);
  IrModule *lib = lang_stdlib(a, &d);
  static const char *const empty_ops[] = {"copy_u_max", "copy_u_min", "copy_u_mean",
                                          "copy_e_max", "copy_e_mean"};
  uint64_t seed = 7;
  for (size_t k = 0; k < sizeof empty_ops / sizeof *empty_ops; k++) {
    float *x = random_tensor(g->ne * 5 + g->nv * 5, false, &seed);
    int64_t numel;
    float *y = interpret(lib, empty_ops[k], &c, &x, &numel);
    ck_assert_int_eq(numel, 6 * 5);
    for (int f = 0; f < 5; f++) {
      ck_assert_msg(y[3 * 5 + f] == 0 && y[4 * 5 + f] == 0, "%s: %g", empty_ops[k], y[15 + f]);
      ck_assert_msg(!signbit(y[3 * 5 + f]), "%s gives -0", empty_ops[k]);
    }
    free(x);
    free(y);
  }
  ir_diag_free(&d);
  ir_arena_free(a);
  graph_free(g);
}
END_TEST

START_TEST(reference_real_graph) {
  Graph *g = tu_graph("wiki-Vote.mtx.gz");
  Case c = {g, 4, 2};
  ck_assert_int_eq(check_all(&c, "wiki-Vote"), 0);
  graph_free(g);
}
END_TEST

/* ---- doc comments and gopc ops ---- */

START_TEST(doc_comment_extraction) {
  Arena *a = ir_arena_new();
  const char *text = "# file header\n\n# DGL x: one\n  #   two  \nop x() {}\n# c\nop y\n";
  ck_assert_str_eq(lang_doc_comment(a, text, 5), "DGL x: one\n  two");
  ck_assert_str_eq(lang_doc_comment(a, text, 7), "c");
  ck_assert_str_eq(lang_doc_comment(a, text, 2), "file header");
  ck_assert_str_eq(lang_doc_comment(a, text, 1), "");
  ck_assert_str_eq(lang_doc_comment(a, text, 3), "");
  ck_assert_str_eq(lang_doc_comment(a, text, 99), "");
  ck_assert_str_eq(lang_doc_comment(a, NULL, 4), "");
  ir_arena_free(a);
}
END_TEST

/* Every row's doc names its DGL operator; every other stdlib operator has
 * a description (`DGL NAME:` where it is DGL's). */
START_TEST(every_op_documented) {
  int n;
  LangOpSpec *rows = table(&n);
  GopContext *ctx = gop_context_new();
  GopModule *m = gop_stdlib(ctx);
  ck_assert(m != NULL);
  for (int i = 0; i < gop_module_num_ops(m); i++) {
    const GopOp *op = gop_module_op(m, i);
    const char *dgl = NULL;
    for (int k = 0; k < n; k++)
      if (strcmp(rows[k].name, gop_op_name(op)) == 0) dgl = rows[k].dgl;
    if (strcmp(gop_op_name(op), "edge_softmax") == 0) dgl = "edge_softmax";
    if (!dgl) {
      ck_assert_msg(gop_op_doc(op)[0], "%s has no doc comment", gop_op_name(op));
      continue;
    }
    char want[64];
    snprintf(want, sizeof want, "DGL %s: ", dgl);
    ck_assert_msg(strncmp(gop_op_doc(op), want, strlen(want)) == 0, "%s: doc is '%s'",
                  gop_op_name(op), gop_op_doc(op));
  }
  GopModule *user = gop_compile_string(ctx, "u.gop",
                                       "# scaled copy\nop s(X: f32[src, F]) -> Y: f32[dst, F] "
                                       "{ for v in dst { for e in in_edges(v) { for f in 0..F {"
                                       " Y[v, f] += X[src(e), f] } } } }\n");
  ck_assert(user != NULL);
  ck_assert_str_eq(gop_op_doc(gop_module_op(user, 0)), "scaled copy");
  ck_assert(!gop_op_representative(gop_module_op(user, 0)));
  gop_context_free(ctx);
  free(rows);
}
END_TEST

static char output[1 << 18];

static int gopc(const char *args) { return tu_gopc("", args, output, sizeof output); }

#define ASSERT_OUTPUT_HAS(s) \
  ck_assert_msg(strstr(output, (s)) != NULL, "expected '%s' in:\n%s", (s), output)

START_TEST(gopc_ops_command) {
  ck_assert_int_eq(gopc("ops"), 0);
  int n = 0;
  for (const char *p = output; (p = strstr(p, "\n    DGL: ")); p++) n++;
  GopContext *ctx = gop_context_new();
  ck_assert_int_eq(n, gop_module_num_ops(gop_stdlib(ctx))); /* one entry each */
  gop_context_free(ctx);
  ASSERT_OUTPUT_HAS("u_mul_e_sum(X: f32[src, F], W: f32[edge]) -> Y: f32[dst, F]\n"
                    "    DGL: u_mul_e_sum\n");
  ASSERT_OUTPUT_HAS("u_div_e_max_heads(X: f32[src, H, F], W: f32[edge, H]) -> "
                    "Y: f32[dst, H, F]\n    DGL: u_div_e_max\n");
  ASSERT_OUTPUT_HAS("    DGL: edge_softmax\n");

  ck_assert_int_eq(gopc("ops e_div_v"), 0);
  ASSERT_OUTPUT_HAS("e_div_v(W: f32[edge, F], Y: f32[dst, F]) -> M: f32[edge, F]\n"
                    "  DGL     e_div_v\n");
  ASSERT_OUTPUT_HAS("  input   W: f32[edge, F]  shape [|E|, F]");
  ASSERT_OUTPUT_HAS("  input   Y: f32[dst, F]  shape [|V|, F]");
  ASSERT_OUTPUT_HAS("  output  M: f32[edge, F]  shape [|E|, F]");
  ASSERT_OUTPUT_HAS("M[e] = W[e] / Y[dst(e)]");
  ck_assert_int_eq(gopc("ops stdlib:u_dot_v"), 0);
  ASSERT_OUTPUT_HAS("  output  S: f32[edge]  shape [|E|]");

  ck_assert_int_eq(gopc("ops u_mull_e_sum"), 1);
  ASSERT_OUTPUT_HAS("no operator named 'u_mull_e_sum' in the standard library; "
                    "did you mean u_mul_e_sum?");
  ck_assert_int_eq(gopc("ops zzzzzzzzzzzz"), 1);
  ASSERT_OUTPUT_HAS("no operator named 'zzzzzzzzzzzz'");
  ck_assert_int_eq(gopc("ops --frobnicate"), 2);
  ASSERT_OUTPUT_HAS("unknown option --frobnicate");
  ck_assert_int_eq(gopc("ops a b c"), 2);
  ck_assert_int_eq(gopc("ops --representative u_add_v"), 2);
  ck_assert_int_eq(gopc("ops --help"), 0);
  ASSERT_OUTPUT_HAS("usage: gopc ops");

  ck_assert_int_eq(gopc("ops --representative"), 0);
  ASSERT_OUTPUT_HAS("u_div_e_mean_heads(");
  ck_assert(strstr(output, "\nv_add_u(") == NULL);

  const char *file = tu_write("mine.gop", "op mine(X: f32[src, F]) -> Y: f32[dst, F] {\n"
                                          "  for v in dst { for e in in_edges(v) {\n"
                                          "    for f in 0..F { Y[v, f] max= X[src(e), f] } } }\n"
                                          "}\n");
  char args[1024];
  snprintf(args, sizeof args, "ops %s", file);
  ck_assert_int_eq(gopc(args), 0);
  ASSERT_OUTPUT_HAS("mine(X: f32[src, F]) -> Y: f32[dst, F]\n    DGL: - (not a DGL operator)\n"
                    "    (no description)\n");
  snprintf(args, sizeof args, "ops %s mine", file);
  ck_assert_int_eq(gopc(args), 0);
  ASSERT_OUTPUT_HAS("  input   X: f32[src, F]  shape [|V|, F]");
  snprintf(args, sizeof args, "ops %s nope", file);
  ck_assert_int_eq(gopc(args), 1);
  ASSERT_OUTPUT_HAS("no operator named 'nope' in ");
  ck_assert_int_eq(gopc("ops ./missing.gop"), 1);
  ASSERT_OUTPUT_HAS("cannot open");
}
END_TEST

static Suite *ops_suite(void) {
  Suite *s = suite_create("ops");
  TCase *tc = tcase_create("table");
  tcase_add_test(tc, generated_file_up_to_date);
  tcase_add_test(tc, rows_are_stdlib_ops);
  tcase_add_test(tc, dgl_names);
  tcase_add_test(tc, representative_subset_covers_the_space);
  tcase_add_test(tc, doc_comment_extraction);
  tcase_add_test(tc, every_op_documented);
  tcase_add_test(tc, gopc_ops_command);
  suite_add_tcase(s, tc);
  TCase *ref = tcase_create("reference");
  tcase_set_timeout(ref, 120);
  tcase_add_test(ref, reference_tiny_graph);
  tcase_add_test(ref, reference_real_graph);
  suite_add_tcase(s, ref);
  return s;
}

int main(void) { return tu_run(ops_suite()); }
