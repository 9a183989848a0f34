/* tools/gopc/ops.c: `gopc ops`, the operator catalogue, a client of
 * include/gop.h like the rest of gopc.
 *
 *   gopc ops [--representative]   every stdlib operator (or the subset)
 *   gopc ops NAME                 one stdlib operator in detail
 *   gopc ops FILE [NAME]          the operators of a .gop file (or one)
 *
 * The list gives each operator's signature on a line of its own, starting
 * at column 0 (tests/ptxas/run.sh reads the names from those lines), then,
 * indented, its DGL name and description. Both come from the comment block
 * above the definition: a block whose first line reads `DGL NAME: text`
 * names the DGL operator (docs/operators.md); any other block is only a
 * description.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gopc.h"

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

static bool is_identifier(const char *s) {
  if (!(isalpha((unsigned char)*s) || *s == '_')) return false;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_')) return false;
  return true;
}

/* ---- the doc comment: `DGL NAME: description` ---- */

typedef struct Doc {
  char dgl[64];   /* "" when the comment names no DGL operator */
  char *text;     /* the description on one line, malloc'ed */
} Doc;

static Doc doc_of(const GopOp *op) {
  Doc d = {{0}, NULL};
  const char *s = gop_op_doc(op);
  if (strncmp(s, "DGL ", 4) == 0) {
    size_t k = strspn(s + 4, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
    if (k > 0 && k < sizeof d.dgl && s[4 + k] == ':') {
      memcpy(d.dgl, s + 4, k);
      s += 4 + k + 1;
      s += strspn(s, " ");
    }
  }
  /* lines joined by spaces; an empty comment line ends the description */
  d.text = malloc(strlen(s) + 1);
  size_t n = 0;
  for (; *s; s++) {
    if (*s == '\n' && (s[1] == '\n' || s[1] == 0)) break;
    d.text[n++] = *s == '\n' ? ' ' : *s;
  }
  d.text[n] = 0;
  return d;
}

/* Writes `text` wrapped before column 79, continuation lines from column
 * `indent`; the cursor is at column `col` when it starts. */
static void print_wrapped(const char *text, int indent, int col) {
  const char *p = text;
  bool first = true;
  while (*p) {
    size_t w = strcspn(p, " ");
    if (!first && col + 1 + (int)w > 78) {
      putchar('\n');
      col = printf("%*s", indent, "");
    } else if (!first) {
      col += printf(" ");
    } else if (col < indent) {
      col += printf("%*s", indent - col, "");
    }
    col += printf("%.*s", (int)w, p);
    first = false;
    p += w;
    p += strspn(p, " ");
  }
  putchar('\n');
}

static void print_entry(const GopOp *op) {
  Doc d = doc_of(op);
  printf("%s\n", gop_op_signature(op));
  printf("    DGL: %s\n", d.dgl[0] ? d.dgl : "- (not a DGL operator)");
  print_wrapped(d.text[0] ? d.text : "(no description)", 4, 0);
  free(d.text);
}

/* ---- one operator in detail ---- */

/* The next tensor declaration of a signature ("X: f32[src, F]"), split at
 * the commas outside brackets; its length, 0 at the end. */
static size_t next_decl(const char *s) {
  size_t i = 0;
  int depth = 0;
  for (; s[i]; i++) {
    if (s[i] == '[') depth++;
    else if (s[i] == ']') depth--;
    else if (depth == 0 && (s[i] == ',' || s[i] == ')')) break;
  }
  return i;
}

/* Prints the tensors of `list` ("X: f32[src, F], W: f32[edge]"), one a
 * row: name, type, shape on the graph, where its rows live. */
static void print_tensors(const char *role, const char *list, size_t len) {
  const char *end = list + len;
  while (list < end) {
    list += strspn(list, " ,(");
    if (list >= end) break;
    size_t k = next_decl(list);
    if (list + k > end) k = (size_t)(end - list);
    char decl[256];
    snprintf(decl, sizeof decl, "%.*s", (int)k, list);
    list += k;
    char *colon = strstr(decl, ": "), *lb = strchr(decl, '['), *rb = strrchr(decl, ']');
    if (!colon || !lb || !rb) { /* not the form gop_op_signature writes */
      printf("  %-7s %s\n", role, decl);
      continue;
    }
    *colon = 0;
    *rb = 0;
    char *dims = lb + 1;
    size_t dl = strcspn(dims, ",");
    const char *rows = NULL, *where = "dense: no graph domain";
    if (dl == 3 && strncmp(dims, "src", 3) == 0) {
      rows = "|V|";
      where = "a row per vertex, read at edges' sources";
    } else if (dl == 3 && strncmp(dims, "dst", 3) == 0) {
      rows = "|V|";
      where = "a row per vertex, at edges' destinations";
    } else if (dl == 4 && strncmp(dims, "edge", 4) == 0) {
      rows = "|E|";
      where = "a row per edge, in the graph's edge order";
    }
    printf("  %-7s %s: %s]  shape [%s%s]  %s\n", role, decl, colon + 2, rows ? rows : "",
           rows ? dims + dl : dims, where);
  }
}

static void print_detail(const GopOp *op) {
  Doc d = doc_of(op);
  const char *sig = gop_op_signature(op);
  printf("%s\n", sig);
  printf("  %-7s %s\n", "DGL", d.dgl[0] ? d.dgl : "- (not a DGL operator)");
  const char *open = strchr(sig, '(');
  const char *arrow = strstr(sig, ") -> ");
  if (open && arrow) {
    print_tensors("input", open + 1, (size_t)(arrow - open - 1));
    const char *outs = arrow + 5;
    print_tensors("output", outs, strlen(outs));
  }
  print_wrapped(d.text[0] ? d.text : "(no description)", 10, printf("  %-7s ", "what"));
  free(d.text);
}

/* ---- unknown names ---- */

static int distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return 99;
  int row[64];
  for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int up = row[j];
      int best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

static void unknown_op(const GopModule *m, const char *file, const char *name) {
  fprintf(stderr, "gopc: ops: no operator named '%s' in %s", name,
          file ? file : "the standard library");
  int best = 3;
  const char *guess = NULL;
  for (int i = 0; i < gop_module_num_ops(m); i++) {
    int k = distance(name, gop_op_name(gop_module_op(m, i)));
    if (k < best) {
      best = k;
      guess = gop_op_name(gop_module_op(m, i));
    }
  }
  if (guess) fprintf(stderr, "; did you mean %s?", guess);
  fprintf(stderr, " (gopc ops%s%s lists them)\n", file ? " " : "", file ? file : "");
}

/* ---- the arguments ---- */

typedef struct OpsArgs {
  bool representative;
  const char *file, *name;
} OpsArgs;

/* NAME, FILE or FILE NAME: a word that could be an operator's name is one,
 * unless it comes second after a NAME. */
static int ops_arg(const GopcArgs *args, char *a) {
  OpsArgs *o = args->ctx;
  if (!o->file && !o->name && is_identifier(a)) o->name = a;
  else if (!o->file && !o->name) o->file = a;
  else if (o->file && !o->name && is_identifier(a)) o->name = a;
  else return gopc_usage_error(args, "unexpected argument %s", a);
  return 0;
}

int gopc_ops(int argc, char **argv) {
  OpsArgs o = {0};
  const GopcOption options[] = {
      {"--representative", GOPC_BOOL, .dest = &o.representative},
      {NULL},
  };
  GopcArgs args = {.usage = usage_ops, .prefix = "gopc: ops: ", .options = options,
                   .arg = ops_arg, .ctx = &o};
  int rc = gopc_parse(&args, argc, argv);
  if (rc != GOPC_GO_ON) return rc;
  bool representative = o.representative;
  const char *file = o.file, *name = o.name;
  if (file && strncmp(file, "stdlib:", 7) == 0) {
    if (file[7] && name)
      return gopc_usage_error(&args, "%s already names an operator", file);
    if (file[7]) name = file + 7;
    file = NULL;
  }
  if (representative && (file || name))
    return gopc_usage_error(&args, "--representative lists the whole standard library");

  GopContext *ctx = gop_context_new();
  gop_set_diagnostic_stream(ctx, stderr);
  GopModule *m = file ? gop_compile_file(ctx, file) : gop_stdlib(ctx);
  int status = m ? 0 : GOPC_EXIT_INPUT;
  if (m && name) {
    const GopOp *op = NULL;
    for (int i = 0; i < gop_module_num_ops(m) && !op; i++)
      if (strcmp(gop_op_name(gop_module_op(m, i)), name) == 0) op = gop_module_op(m, i);
    if (op) print_detail(op);
    else {
      unknown_op(m, file, name);
      status = GOPC_EXIT_INPUT;
    }
  } else if (m) {
    int shown = 0;
    for (int i = 0; i < gop_module_num_ops(m); i++) {
      const GopOp *op = gop_module_op(m, i);
      if (representative && !gop_op_representative(op)) continue;
      print_entry(op);
      shown++;
    }
    if (shown == 0) printf("(%s defines no operator)\n", file ? file : "the stdlib");
  }
  gop_context_free(ctx);
  return status;
}
