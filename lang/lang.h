/* lang/lang.h: the front end of gop, .gop text to IR.
 *
 * The one header of lang/, sectioned by the file that implements each part.
 * The pipeline is: lexer.l (tokens with file:line:col) -> parser.y (a pure
 * bison grammar whose actions only build AST nodes) -> check.c (every rule
 * of docs/language.md, then the IR of ir/ir.h). The same grammar reads the
 * IR text form that ir/print.c writes, in "IR mode", where scheduling's
 * annotations are allowed.
 *
 * Everything is allocated in the caller's Arena and never freed one by one;
 * every error goes through the caller's Diag.
 */
#ifndef GOP_LANG_H
#define GOP_LANG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ir/ir.h"

/* ---------------------------------------------------------------------------
 * The front end's API (check.c, and stdlib.c below).
 */

/* Parses, checks and builds `text` (the contents of `file`). Returns the
 * module, or NULL when any error was reported through `d`. */
IrModule *lang_compile(Arena *a, Diag *d, const char *file, const char *text);
/* The same for IR text (what ir_print_module writes): loop annotations,
 * `if` guards and integer index arithmetic are accepted. NULL on errors. */
IrModule *lang_parse_ir(Arena *a, Diag *d, const char *file, const char *text);
/* Parses `text` and writes its AST to `out` (gopc emit --stage ast).
 * Returns false, writing nothing, on syntax errors. */
bool lang_dump_ast(FILE *out, Arena *a, Diag *d, const char *file,
                   const char *text);

/* stdlib.c: the operators and schedules of the stdlib .gop files, embedded
 * at build time by stdlib/embed.cmake. */
typedef struct LangStdlibFile {
  const char *name, *text; /* "stdlib/aggregate.gop", its contents */
} LangStdlibFile;
extern const LangStdlibFile lang_stdlib_files[]; /* ends with {NULL, NULL} */

/* Every stdlib file compiled into one module; NULL (with diagnostics in `d`)
 * if one of them fails. */
IrModule *lang_stdlib(Arena *a, Diag *d);
/* The stdlib file that defines op `opname`, or NULL. */
const LangStdlibFile *lang_stdlib_find_op(const char *opname);
/* The comment block right above line `line` of `text` (the `#` lines
 * that end just before it, each with `#` and one space removed, joined by
 * '\n'), in the arena; "" when there is none. */
const char *lang_doc_comment(Arena *a, const char *text, int line);

/* The operator space of DGL's gspmm/gsddmm (uGrapher's Table 4), one row
 * per operator of stdlib/ops_generated.gop; docs/operators.md explains the
 * naming, the broadcasting and the empty-neighbourhood rule. */
typedef enum {
  LANG_EOP_COPY_LHS, LANG_EOP_COPY_RHS, LANG_EOP_ADD, LANG_EOP_SUB,
  LANG_EOP_MUL, LANG_EOP_DIV, LANG_EOP_DOT
} LangEdgeOp;
typedef enum {
  LANG_GATHER_COPY, /* message creation: one output row per edge */
  LANG_GATHER_SUM, LANG_GATHER_MAX, LANG_GATHER_MIN, LANG_GATHER_MEAN
} LangGather;
typedef enum { LANG_ON_NONE, LANG_ON_SRC, LANG_ON_DST, LANG_ON_EDGE } LangPlace;
typedef enum {
  LANG_SHAPE_FULL,   /* every operand and the result [dom, F] */
  LANG_SHAPE_SCALAR, /* the edge operand [edge], broadcast over F */
  LANG_SHAPE_HEADS   /* the edge operand [edge, H], the others [dom, H, F] */
} LangShape;
typedef struct LangOpSpec {
  char name[32];       /* u_mul_e_sum, copy_v, u_div_e_max_heads ... */
  char dgl[24];        /* DGL's name: the name without _full / _heads */
  LangEdgeOp edge_op;
  LangPlace lhs, rhs;  /* LANG_ON_NONE for the absent side of a copy */
  LangGather gather;
  LangShape shape;
  bool handwritten;    /* defined in aggregate.gop or message.gop (older
                          than the table), not in ops_generated.gop */
} LangOpSpec;
/* Writes every row of the table into out[0..cap) and returns how many
 * there are (call with cap 0 to count). */
int lang_ops_table(LangOpSpec *out, int cap);
/* The .gop text of one row: its doc comment and definition; malloc'ed. */
char *lang_ops_op_text(const LangOpSpec *s);
/* The .gop text of stdlib/ops_generated.gop, made from the table (every
 * row but the handwritten ones); malloc'ed. */
char *lang_ops_generate(void);
/* Whether `opname` is in the representative subset of the stdlib: every
 * hand-written operator and a few rows of the table that between them
 * cover every edge_op, gather, placement and shape (for test matrices that
 * cannot afford every operator). */
bool lang_ops_representative(const char *opname);

/* ---------------------------------------------------------------------------
 * ast.c: the syntax tree the parser builds.
 *
 * A tagged union; the comment beside each kind names the fields it uses.
 * Lists (parameters, statements, arguments, indices) are chained through
 * `next`. Names are arena strings; every node has the location of its first
 * token (of the operator, for binary expressions).
 */
#define LANG_AST_LIST(X)                                                       \
  /* definitions */                                                            \
  X(OP,        "op")        /* op: name params results body */                 \
  X(SCHED,     "schedule")  /* sched: name params(NAME list) body(DIRECTIVE)*/ \
  X(PARAM,     "param")     /* decl: name type */                              \
  X(RESULT,    "result")    /* decl: name type */                              \
  X(TYPE,      "type")      /* type: dtype dims (NAME / INT list) */           \
  X(DIRECTIVE, "directive") /* dir: name args results(NAME list) */            \
  /* statements */                                                             \
  X(TENSOR,    "tensor")    /* decl: name type   (a temporary) */              \
  X(FOR,       "for")       /* loop: var dom of lo hi annots body */           \
  X(ANNOT,     "annot")     /* annot: name value has_value  (IR text) */       \
  X(IF,        "if")        /* ifs: cond then   (IR text) */                   \
  X(VAR,       "var")       /* var: name init */                               \
  X(ASSIGN,    "assign")    /* assign: how target(NAME / ELEM) red value */    \
  /* expressions */                                                            \
  X(INT,       "int")       /* i */                                            \
  X(FLOAT,     "float")     /* f */                                            \
  X(NAME,      "name")      /* name */                                         \
  X(ELEM,      "elem")      /* elem: name idx   (a tensor element T[i, j]) */  \
  X(CALL,      "call")      /* call: name args */                              \
  X(BINARY,    "binary")    /* bin: op a b */                                  \
  X(UNARY,     "unary")     /* un: op a */

#define X_ENUM(k, ...) LANG_##k,
typedef enum { LANG_AST_LIST(X_ENUM) LANG_AST_COUNT } LangKind;
#undef X_ENUM

typedef struct LangNode LangNode;
struct LangNode {
  LangKind kind;
  Loc loc;
  LangNode *next;
  int height; /* expressions: 1 + that of the deepest operand */
  union {
    struct { const char *name; LangNode *params, *results, *body;
             LangNode *acc; /* words after the results, `acc f64` and (IR
                            text) `graph reversed`: CALLs, keyword and
                            value NAME, a list */ } op;
    struct { const char *name; LangNode *params, *body; } sched;
    struct {
      const char *name;
      LangNode *type;
      LangNode *annots; /* ANNOT list (IR text: `@shared`) */
    } decl;
    struct { const char *dtype; LangNode *dims; } type;
    struct { const char *name; LangNode *args, *results; } dir;
    struct {
      const char *var; /* the loop variable */
      Loc var_loc;
      const char *dom; /* `dst`, `in_edges` ...; NULL for a range 0..hi */
      LangNode *of;    /* the vertex of in_edges(v) / out_edges(u) */
      LangNode *lo, *hi; /* a range: lo..hi */
      LangNode *annots;  /* ANNOT list */
      LangNode *body;
    } loop;
    struct { const char *name; int64_t value; bool has_value; } annot;
    struct { LangNode *cond, *then; } ifs;
    struct { const char *name; LangNode *init; } var;
    struct {
      const char *how; /* IR text: `plain` or `atomic` before it, or NULL */
      LangNode *target;
      IrRed red;
      LangNode *value;
    } assign;
    int64_t i;
    double f;
    const char *name;
    struct { const char *name; LangNode *idx; } elem;
    struct { const char *name; LangNode *args; } call;
    struct { IrBinOp op; LangNode *a, *b; } bin;
    struct { IrUnOp op; LangNode *a; } un;
  };
};

const char *lang_kind_name(LangKind k);
/* A node of kind `k` at `loc`, zeroed otherwise. */
LangNode *lang_node(Arena *a, LangKind k, Loc loc);
LangNode *lang_name(Arena *a, Loc loc, const char *name);
LangNode *lang_int(Arena *a, Loc loc, int64_t i);
LangNode *lang_float(Arena *a, Loc loc, double f);
LangNode *lang_binary(Arena *a, Loc loc, IrBinOp op, LangNode *x, LangNode *y);
LangNode *lang_unary(Arena *a, Loc loc, IrUnOp op, LangNode *x);
/* Sets the height of an ELEM or CALL from its operand list `args`. */
void lang_set_height(LangNode *n, const LangNode *args);
/* Expressions higher than this are refused by the parser: the checker and
 * the printers recurse on expressions, and the C stack is finite. */
#define LANG_MAX_HEIGHT 1000
int lang_list_len(const LangNode *list);
/* The definitions of a file as an indented tree, one node per line. */
void lang_ast_dump(FILE *out, const LangNode *defs);
/* An expression on one line, in source syntax (used by the dump). */
void lang_expr_print(FILE *out, const LangNode *e);

/* ---------------------------------------------------------------------------
 * lexer.l and parser.y: the shared parse state (yyextra of the scanner and
 * the parse parameter of the grammar).
 */
typedef struct LangParser {
  Arena *arena;
  Diag *diag;
  const char *file;
  bool ir_mode;     /* reading IR text rather than .gop source */
  LangNode *defs;   /* what the parse produced: OP and SCHED nodes */
  int nerrors;      /* lexical and syntax errors */
  /* lexer position, 1-based */
  int line, col;
  /* the `{`s not yet closed, innermost last (the first 64 of them), for
   * the "never closed" message at the end of the file */
  Loc open_brace[64];
  int depth;
  bool at_eof;
  /* brackets of every kind open now, where the outermost opened, and the
   * limit (GOP_MAX_NESTING); past it the lexer reports and ends the parse */
  int nest, max_nest;
  Loc nest_start;
  bool too_deep;
  /* whether the last token, and the one before it, was a stray character:
   * a syntax error right after one is its consequence, not news */
  bool cur_bad, prev_bad;
} LangParser;

/* Parses `text` into ps->defs; returns false if any syntax error was
 * reported. Implemented in parser.y. */
bool lang_parse(LangParser *ps, const char *text);

/* ---------------------------------------------------------------------------
 * check.c, check_decl.c, check_expr.c, check_stmt.c, check_loop.c (their
 * private header: check.h): the rules of docs/language.md over the AST,
 * and the IR.
 */

/* Checks the definitions `defs` and adds them to `m`; returns false if any
 * error was reported (what was added to `m` is then unusable). */
bool lang_check(IrModule *m, Diag *d, const LangNode *defs, bool ir_mode);
/* Parses and checks `text` into `m` (which may hold other files'
 * definitions: duplicates are refused across files). Also implements
 * lang_compile, lang_parse_ir and lang_dump_ast. False on errors. */
bool lang_compile_into(IrModule *m, Diag *d, const char *file,
                       const char *text, bool ir_mode);

#endif
