/* lang/stdlib.c: access to the embedded standard library.
 *
 * stdlib/embed.cmake turns every stdlib/NAME.gop into one string of the
 * generated stdlib_embed.c (lang_stdlib_files); this file compiles them, all
 * into one module so that a name defined twice across files is caught, and
 * finds which file defines an op (for tools that show its source) and the
 * doc comment above it.
 *
 * It also holds the table of DGL's gspmm/gsddmm operator space that
 * stdlib/ops_generated.gop is generated from (docs/operators.md), and the
 * representative subset of the stdlib for test matrices.
 */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang.h"

IrModule *lang_stdlib(Arena *a, Diag *d) {
  IrModule *m = ir_module_new(a);
  bool ok = true;
  for (const LangStdlibFile *f = lang_stdlib_files; f->name; f++)
    ok &= lang_compile_into(m, d, f->name, f->text, false);
  return ok ? m : NULL;
}

const LangStdlibFile *lang_stdlib_find_op(const char *opname) {
  if (!opname) return NULL;
  const LangStdlibFile *found = NULL;
  for (const LangStdlibFile *f = lang_stdlib_files; f->name && !found; f++) {
    /* Only the syntax is needed to see which ops a file defines. */
    Arena *a = ir_arena_new();
    Diag d;
    ir_diag_init(&d, NULL);
    LangParser ps = {.arena = a, .diag = &d, .file = f->name};
    if (lang_parse(&ps, f->text))
      for (const LangNode *n = ps.defs; n; n = n->next)
        if (n->kind == LANG_OP && strcmp(n->op.name, opname) == 0) found = f;
    ir_diag_free(&d);
    ir_arena_free(a);
  }
  return found;
}

const char *lang_doc_comment(Arena *a, const char *text, int line) {
  if (!text || line <= 1) return "";
  const char *block = NULL; /* the first line of the current run of comments */
  const char *p = text;
  int ln = 1;
  for (; *p && ln < line; ln++) {
    const char *s = p + strspn(p, " \t");
    if (*s != '#') block = NULL;
    else if (!block) block = p;
    const char *nl = strchr(p, '\n');
    p = nl ? nl + 1 : p + strlen(p);
  }
  if (ln < line || !block) return "";
  char *out = ir_alloc(a, (size_t)(p - block) + 1);
  size_t len = 0;
  for (const char *q = block; q < p;) {
    const char *s = q + strspn(q, " \t") + 1; /* after the '#' */
    if (*s == ' ') s++;
    size_t k = strcspn(s, "\n");
    const char *next = s + k + (s[k] == '\n');
    while (k > 0 && (s[k - 1] == ' ' || s[k - 1] == '\t' || s[k - 1] == '\r')) k--;
    if (q != block) out[len++] = '\n';
    memcpy(out + len, s, k);
    len += k;
    q = next;
  }
  out[len] = 0;
  return out;
}

/* ---- the operator table ----
 *
 * The space is enumerated, not listed: message creation (gather copy, the
 * output on edges) takes copy_u, copy_v, copy_e and every ordered pair of
 * distinct placements among u, v, e with add, sub, mul, div and dot, as
 * DGL's gsddmm does; aggregation (sum, max, min, mean into destinations)
 * takes copy_u, copy_e and u with add, sub, mul, div against e, as DGL's
 * gspmm does. A vertex vector multiplied or divided by an edge operand is
 * a weighting: there the plain name takes an edge scalar (as u_mul_e_sum
 * and e_mul_u always have), `_full` an edge vector and `_heads` a scalar
 * per edge and head against [dom, H, F] vertex rows. */

static const char *const eop_names[] = {"copy_lhs", "copy_rhs", "add", "sub",
                                        "mul",      "div",      "dot"};
static const char *const gather_names[] = {"copy", "sum", "max", "min", "mean"};
/* the infix form of each binary edge_op, by LangEdgeOp */
static const char *const eop_infix[] = {"", "", " + ", " - ", " * ", " / ", ""};
static const char place_letter[] = {'?', 'u', 'v', 'e'};

/* Defined by hand in aggregate.gop and message.gop before the table. */
static const char *const handwritten_ops[] = {"copy_u_sum", "u_mul_e_sum", "copy_u_max",
                                              "copy_u_mean", "u_dot_v", "u_add_v",
                                              "e_mul_u"};

/* Whether an edge operand weights a vertex operand: mul with either side
 * on edges, div with the divisor on edges. */
static bool is_weighting(LangEdgeOp op, LangPlace lhs, LangPlace rhs) {
  bool vertex_lhs = lhs == LANG_ON_SRC || lhs == LANG_ON_DST;
  bool vertex_rhs = rhs == LANG_ON_SRC || rhs == LANG_ON_DST;
  if (op == LANG_EOP_MUL)
    return (vertex_lhs && rhs == LANG_ON_EDGE) || (lhs == LANG_ON_EDGE && vertex_rhs);
  if (op == LANG_EOP_DIV) return vertex_lhs && rhs == LANG_ON_EDGE;
  return false;
}

static int add_row(LangOpSpec *out, int cap, int n, LangEdgeOp op, LangPlace lhs,
                   LangPlace rhs, LangGather g, LangShape shape) {
  if (n < cap) {
    LangOpSpec *s = &out[n];
    memset(s, 0, sizeof *s);
    s->edge_op = op;
    s->lhs = lhs;
    s->rhs = rhs;
    s->gather = g;
    s->shape = shape;
    if (op == LANG_EOP_COPY_LHS) snprintf(s->dgl, sizeof s->dgl, "copy_%c", place_letter[lhs]);
    else if (op == LANG_EOP_COPY_RHS)
      snprintf(s->dgl, sizeof s->dgl, "copy_%c", place_letter[rhs]);
    else
      snprintf(s->dgl, sizeof s->dgl, "%c_%s_%c", place_letter[lhs], eop_names[op],
               place_letter[rhs]);
    if (g != LANG_GATHER_COPY) {
      size_t k = strlen(s->dgl);
      snprintf(s->dgl + k, sizeof s->dgl - k, "_%s", gather_names[g]);
    }
    const char *suffix = !is_weighting(op, lhs, rhs) ? ""
                         : shape == LANG_SHAPE_FULL  ? "_full"
                         : shape == LANG_SHAPE_HEADS ? "_heads"
                                                     : "";
    snprintf(s->name, sizeof s->name, "%s%s", s->dgl, suffix);
    for (size_t i = 0; i < sizeof handwritten_ops / sizeof *handwritten_ops; i++)
      if (strcmp(s->name, handwritten_ops[i]) == 0) s->handwritten = true;
  }
  return n + 1;
}

/* One row, or three (scalar, full, heads) for a weighting. */
static int add_rows(LangOpSpec *out, int cap, int n, LangEdgeOp op, LangPlace lhs,
                    LangPlace rhs, LangGather g) {
  if (!is_weighting(op, lhs, rhs)) return add_row(out, cap, n, op, lhs, rhs, g, LANG_SHAPE_FULL);
  n = add_row(out, cap, n, op, lhs, rhs, g, LANG_SHAPE_SCALAR);
  n = add_row(out, cap, n, op, lhs, rhs, g, LANG_SHAPE_FULL);
  return add_row(out, cap, n, op, lhs, rhs, g, LANG_SHAPE_HEADS);
}

int lang_ops_table(LangOpSpec *out, int cap) {
  static const LangPlace places[] = {LANG_ON_SRC, LANG_ON_DST, LANG_ON_EDGE};
  static const LangEdgeOp binary[] = {LANG_EOP_ADD, LANG_EOP_SUB, LANG_EOP_MUL, LANG_EOP_DIV};
  int n = 0;
  /* aggregation (gspmm): copy_u, copy_e, u_OP_e; each gather */
  for (LangGather g = LANG_GATHER_SUM; g <= LANG_GATHER_MEAN; g++) {
    n = add_rows(out, cap, n, LANG_EOP_COPY_LHS, LANG_ON_SRC, LANG_ON_NONE, g);
    n = add_rows(out, cap, n, LANG_EOP_COPY_RHS, LANG_ON_NONE, LANG_ON_EDGE, g);
    for (int k = 0; k < 4; k++) n = add_rows(out, cap, n, binary[k], LANG_ON_SRC, LANG_ON_EDGE, g);
  }
  /* message creation (gsddmm): copy_u, copy_v, copy_e, then LHS_OP_RHS */
  n = add_rows(out, cap, n, LANG_EOP_COPY_LHS, LANG_ON_SRC, LANG_ON_NONE, LANG_GATHER_COPY);
  n = add_rows(out, cap, n, LANG_EOP_COPY_RHS, LANG_ON_NONE, LANG_ON_DST, LANG_GATHER_COPY);
  n = add_rows(out, cap, n, LANG_EOP_COPY_LHS, LANG_ON_EDGE, LANG_ON_NONE, LANG_GATHER_COPY);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      if (i == j) continue;
      for (LangEdgeOp op = LANG_EOP_ADD; op <= LANG_EOP_DOT; op++)
        n = add_rows(out, cap, n, op, places[i], places[j], LANG_GATHER_COPY);
    }
  return n;
}

/* The operand of placement `p` as read in the loop nest. */
static const char *operand_ref(LangPlace p, LangShape shape) {
  switch (p) {
  case LANG_ON_SRC: return shape == LANG_SHAPE_HEADS ? "X[src(e), h, f]" : "X[src(e), f]";
  case LANG_ON_DST: return shape == LANG_SHAPE_HEADS ? "Y[v, h, f]" : "Y[v, f]";
  case LANG_ON_EDGE:
    return shape == LANG_SHAPE_SCALAR ? "W[e]" : shape == LANG_SHAPE_HEADS ? "W[e, h]" : "W[e, f]";
  case LANG_ON_NONE: break;
  }
  return "?";
}

/* The operand's declaration `X: f32[src, F]`. */
static void operand_decl(FILE *f, LangPlace p, LangShape shape) {
  const char *feat = shape == LANG_SHAPE_HEADS ? ", H, F" : ", F";
  switch (p) {
  case LANG_ON_SRC: fprintf(f, "X: f32[src%s]", feat); break;
  case LANG_ON_DST: fprintf(f, "Y: f32[dst%s]", feat); break;
  case LANG_ON_EDGE:
    fprintf(f, "W: f32[edge%s]", shape == LANG_SHAPE_SCALAR  ? ""
                                 : shape == LANG_SHAPE_HEADS ? ", H"
                                                             : ", F");
    break;
  case LANG_ON_NONE: break;
  }
}

/* The operand as the doc comment names it: X[src(e)], Y[dst(e)], W[e]. */
static const char *operand_doc(LangPlace p) {
  return p == LANG_ON_SRC ? "X[src(e)]" : p == LANG_ON_DST ? "Y[dst(e)]" : "W[e]";
}

static void doc_line(FILE *f, const LangOpSpec *s) {
  char expr[96];
  if (s->edge_op == LANG_EOP_COPY_LHS) snprintf(expr, sizeof expr, "%s", operand_doc(s->lhs));
  else if (s->edge_op == LANG_EOP_COPY_RHS)
    snprintf(expr, sizeof expr, "%s", operand_doc(s->rhs));
  else if (s->edge_op == LANG_EOP_DOT)
    snprintf(expr, sizeof expr, "dot(%s, %s)", operand_doc(s->lhs), operand_doc(s->rhs));
  else
    snprintf(expr, sizeof expr, "%s%s%s", operand_doc(s->lhs), eop_infix[s->edge_op],
             operand_doc(s->rhs));
  fprintf(f, "# DGL %s: ", s->dgl);
  if (s->gather == LANG_GATHER_COPY)
    fprintf(f, "%s[e] = %s", s->edge_op == LANG_EOP_DOT ? "S" : "M", expr);
  else fprintf(f, "Y[v] = %s over in-edges e of %s", gather_names[s->gather], expr);
  if (s->shape == LANG_SHAPE_SCALAR) fprintf(f, "; W[e] scales every feature");
  else if (s->shape == LANG_SHAPE_HEADS) fprintf(f, "; W[e, h] scales head h");
  else if (is_weighting(s->edge_op, s->lhs, s->rhs)) fprintf(f, "; W per edge and feature");
  if (s->gather == LANG_GATHER_MAX || s->gather == LANG_GATHER_MIN ||
      s->gather == LANG_GATHER_MEAN)
    fprintf(f, "; 0 with no in-edge");
  fprintf(f, ".\n");
}

char *lang_ops_op_text(const LangOpSpec *s) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return NULL;
  doc_line(f, s);
  fprintf(f, "op %s(", s->name);
  bool both = s->lhs != LANG_ON_NONE && s->rhs != LANG_ON_NONE;
  if (s->lhs != LANG_ON_NONE) operand_decl(f, s->lhs, s->shape);
  if (both) fprintf(f, ", ");
  if (s->rhs != LANG_ON_NONE) operand_decl(f, s->rhs, s->shape);
  bool heads = s->shape == LANG_SHAPE_HEADS;
  const char *feat = heads ? ", H, F" : ", F";
  const char *at = heads ? ", h, f" : ", f";
  if (s->edge_op == LANG_EOP_DOT) fprintf(f, ") -> S: f32[edge] {\n");
  else if (s->gather == LANG_GATHER_COPY) fprintf(f, ") -> M: f32[edge%s] {\n", feat);
  else fprintf(f, ") -> Y: f32[dst%s] {\n", feat);
  fprintf(f, "  for v in dst {\n    for e in in_edges(v) {\n");
  const char *ind = "      ";
  if (s->edge_op == LANG_EOP_DOT) {
    fprintf(f, "      var s = 0.0\n      for f in 0..F {\n        s += %s * %s\n      }\n"
               "      S[e] = s\n",
            operand_ref(s->lhs, s->shape), operand_ref(s->rhs, s->shape));
  } else {
    if (heads) {
      fprintf(f, "      for h in 0..H {\n");
      ind = "        ";
    }
    fprintf(f, "%sfor f in 0..F {\n%s  ", ind, ind);
    static const char *const assign[] = {"=", "+=", "max=", "min=", "mean="};
    if (s->gather == LANG_GATHER_COPY) fprintf(f, "M[e%s] = ", at);
    else fprintf(f, "Y[v%s] %s ", at, assign[s->gather]);
    if (s->edge_op == LANG_EOP_COPY_LHS) fprintf(f, "%s\n", operand_ref(s->lhs, s->shape));
    else if (s->edge_op == LANG_EOP_COPY_RHS) fprintf(f, "%s\n", operand_ref(s->rhs, s->shape));
    else
      fprintf(f, "%s%s%s\n", operand_ref(s->lhs, s->shape), eop_infix[s->edge_op],
              operand_ref(s->rhs, s->shape));
    fprintf(f, "%s}\n", ind);
    if (heads) fprintf(f, "      }\n");
  }
  fprintf(f, "    }\n  }\n}\n");
  fclose(f);
  return text;
}

char *lang_ops_generate(void) {
  int n = lang_ops_table(NULL, 0);
  LangOpSpec *rows = calloc((size_t)n, sizeof *rows);
  char *text = NULL;
  size_t len = 0;
  FILE *f = rows ? open_memstream(&text, &len) : NULL;
  if (!f) {
    free(rows);
    return NULL;
  }
  lang_ops_table(rows, n);
  fputs("# stdlib/ops_generated.gop: DGL's gspmm/gsddmm operator space, uGrapher's\n"
        "# Table 4 (docs/operators.md).\n"
        "#\n"
        "# Generated from the table in lang/stdlib.c (lang_ops_generate): do not\n"
        "# edit. tests/unit/test_ops.c fails when this file is out of date, and\n"
        "# GOP_UPDATE_GENERATED=1 makes it rewrite the file. copy_u_sum,\n"
        "# u_mul_e_sum, copy_u_max, copy_u_mean (aggregate.gop) and u_dot_v,\n"
        "# u_add_v, e_mul_u (message.gop) are rows of the table written by hand.\n"
        "#\n"
        "# Tensors: X on source vertices, Y on destination vertices (or the\n"
        "# aggregated output), W on edges, M a message per edge, S a score per\n"
        "# edge. Loops: v (destination), e (in-edge), h (head), f (feature).\n",
        f);
  for (int i = 0; i < n; i++) {
    if (rows[i].handwritten) continue;
    char *op = lang_ops_op_text(&rows[i]);
    if (op) fprintf(f, "\n%s", op);
    free(op);
  }
  fclose(f);
  free(rows);
  return text;
}

bool lang_ops_representative(const char *opname) {
  /* every edge_op, gather, placement of each side and shape appears here
   * (tests/unit/test_ops.c checks it), besides the handwritten rows */
  static const char *const chosen[] = {"copy_u_min",  "copy_e_sum", "u_sub_e_max",
                                       "u_div_e_mean_heads", "u_mul_e_min_full",
                                       "copy_v", "copy_e", "v_sub_e", "e_div_v",
                                       "e_mul_v_heads", "v_div_e_full", "e_dot_u"};
  if (!opname) return false;
  for (size_t i = 0; i < sizeof chosen / sizeof *chosen; i++)
    if (strcmp(opname, chosen[i]) == 0) return true;
  int n = lang_ops_table(NULL, 0);
  LangOpSpec *rows = calloc((size_t)n, sizeof *rows);
  if (!rows) return false;
  lang_ops_table(rows, n);
  bool in_table = false, hand = false;
  for (int i = 0; i < n; i++)
    if (strcmp(rows[i].name, opname) == 0) {
      in_table = true;
      hand = rows[i].handwritten;
    }
  free(rows);
  return !in_table || hand;
}
