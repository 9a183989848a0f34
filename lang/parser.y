/* lang/parser.y: the grammar of .gop source and of IR text.
 *
 * A pure, reentrant LALR(1) parser (no globals: the scanner and the
 * LangParser travel as parameters). Its actions only build AST nodes
 * (ast.c); every rule about meaning (names, domains, races, what IR text
 * may use) is checked afterwards by check.c, so the grammar accepts the
 * union of .gop source and IR text and stays small.
 *
 * Statements need no separator: a statement ends where its expression
 * cannot go on, and no statement starts with a token that could continue an
 * expression. `%expect 0` keeps it that way.
 *
 * Error recovery: a syntax error inside a block skips to that block's `}`;
 * one in the header of an op, a loop or a guard skips to its `{` and parses
 * the body; garbage between definitions is skipped up to the next `op` or
 * `schedule`. So one run reports the syntax errors of several statements.
 *
 * No %destructor: every semantic value is an AST node or a string in the
 * arena, freed with it, so values that error recovery drops leak nothing.
 */
%code top {
/* generated from lang/parser.y by bison: do not edit */
}

%code requires {
#include "lang/lang.h"
#ifndef YY_TYPEDEF_YY_SCANNER_T
#define YY_TYPEDEF_YY_SCANNER_T
typedef void *yyscan_t;
#endif
/* A list under construction: appending at the tail keeps long statement
 * lists linear. */
typedef struct LangList { LangNode *head, *tail; } LangList;
}

%code {
#include <string.h>

#define YYSTYPE LANG_YYSTYPE
#define YYLTYPE LANG_YYLTYPE
#include "lexer.h"

static void lang_yyerror(const YYLTYPE *loc, yyscan_t scanner, LangParser *ps,
                         const char *msg);
static Loc at(const LangParser *ps, YYLTYPE l);
static LangList list1(LangNode *n);
static LangList push(LangList l, LangNode *n);
static LangNode *relabel(LangNode *list, LangKind k);
}

%define api.pure full
%define api.prefix {lang_yy}
%define api.token.prefix {TK_}
%define parse.error detailed
%define parse.lac full
%locations
%param {yyscan_t scanner}
%parse-param {LangParser *ps}
%expect 0

%union {
  int64_t i;
  double f;
  const char *str;
  IrRed red;
  LangNode *node;
  LangList list;
}

%token END 0 "end of file"
%token <str> IDENT "identifier"
%token <i> INT "integer"
%token <f> FLOAT "number"
%token OP "op" SCHEDULE "schedule" FOR "for" IN "in" VAR "var"
%token TENSOR "tensor" IF "if"
%token <red> REDUCE "reduction"
%token ARROW "->" DOTDOT ".."
%token EQ "==" NE "!=" LE "<=" GE ">=" ANDAND "&&" OROR "||"

%type <list> defs decls decls_opt dims dims_opt stmts annots names names_opt
%type <list> directives exprs exprs_opt words_opt
%type <node> def op_def sched_def results decl type dim block stmt lvalue
%type <node> for_stmt loop_dom annot directive dir_results expr expr_ primary
%type <list> sched_body

/* C's precedences, which the IR printer's parentheses follow */
%left "||"
%left "&&"
%left "==" "!="
%left '<' "<=" '>' ">="
%left '+' '-'
%left '*' '/' '%'
%precedence UNARY

%%

file:
  defs                              { ps->defs = $1.head; }
;

/* defs = (def | error)* ; the error alternative skips garbage between
 * definitions up to the next `op` or `schedule`. */
defs:
  %empty                            { $$ = (LangList){0}; }
| defs def                          { $$ = push($1, $2); }
| defs error                        { $$ = $1; }
;

def:
  op_def
| sched_def
;

/* op_def = "op" IDENT "(" decls? ")" results (IDENT IDENT)* block */
op_def:
  "op" IDENT '(' decls_opt ')' results words_opt block {
      $$ = lang_node(ps->arena, LANG_OP, at(ps, @1));
      $$->op.name = $2;
      $$->op.params = $4.head;
      $$->op.results = $6;
      $$->op.body = $8;
      $$->op.acc = $7.head;
    }
| "op" error block                  { $$ = NULL; }
;

/* results = ("->" decl | "->" "(" decls? ")")? ; none is the checker's
 * error ("has no results"), not a syntax error. */
results:
  %empty                            { $$ = NULL; }
| "->" decl                         { $$ = relabel($2, LANG_RESULT); }
| "->" '(' decls_opt ')'            { $$ = relabel($3.head, LANG_RESULT); }
;

/* words_opt = (IDENT IDENT)* : `acc f64`, the accumulator type, and in IR
 * text `graph reversed` (transpose()); the checker checks the words. Each
 * a CALL node holding the keyword and its value's NAME */
words_opt:
  %empty                            { $$ = (LangList){0}; }
| words_opt IDENT IDENT {
      LangNode *w = lang_node(ps->arena, LANG_CALL, at(ps, @2));
      w->call.name = $2;
      w->call.args = lang_name(ps->arena, at(ps, @3), $3);
      $$ = push($1, w);
    }
;

decls_opt:
  %empty                            { $$ = (LangList){0}; }
| decls
;

decls:
  decl                              { $$ = list1($1); }
| decls ',' decl                    { $$ = push($1, $3); }
;

/* decl = IDENT ":" type annot*    annotations: IR text, `a: f32[F] @shared` */
decl:
  IDENT ':' type annots {
      $$ = lang_node(ps->arena, LANG_PARAM, at(ps, @1));
      $$->decl.name = $1;
      $$->decl.type = $3;
      $$->decl.annots = $4.head;
    }
;

/* type = IDENT "[" (dim ("," dim)*)? "]"    e.g. f32[src, F] or f32[] */
type:
  IDENT '[' dims_opt ']' {
      $$ = lang_node(ps->arena, LANG_TYPE, at(ps, @1));
      $$->type.dtype = $1;
      $$->type.dims = $3.head;
    }
;

dims_opt:
  %empty                            { $$ = (LangList){0}; }
| dims
;

dims:
  dim                               { $$ = list1($1); }
| dims ',' dim                      { $$ = push($1, $3); }
;

/* dim = src | dst | edge | SYMBOL | INTEGER (the names are sorted out by
 * the checker) */
dim:
  IDENT                             { $$ = lang_name(ps->arena, at(ps, @1), $1); }
| INT                               { $$ = lang_int(ps->arena, at(ps, @1), $1); }
  /* IR text: `groups(4)`, the rows of a group table (passes/segment.c) */
| IDENT '(' INT ')' {
      $$ = lang_node(ps->arena, LANG_CALL, at(ps, @1));
      $$->call.name = $1;
      $$->call.args = lang_int(ps->arena, at(ps, @3), $3);
    }
;

/* block = "{" stmt* "}" ; on an error, skip to this block's "}" */
block:
  '{' stmts '}'                     { $$ = $2.head; }
| '{' stmts error '}'               { $$ = $2.head; }
;

stmts:
  %empty                            { $$ = (LangList){0}; }
| stmts stmt                        { $$ = push($1, $2); }
| stmts ';'                         { $$ = $1; }
;

stmt:
  "tensor" decl                     { $$ = relabel($2, LANG_TENSOR); }
| "var" IDENT '=' expr {
      $$ = lang_node(ps->arena, LANG_VAR, at(ps, @2));
      $$->var.name = $2;
      $$->var.init = $4;
    }
| lvalue '=' expr {
      $$ = lang_node(ps->arena, LANG_ASSIGN, $1->loc);
      $$->assign.target = $1;
      $$->assign.red = IR_RED_ASSIGN;
      $$->assign.value = $3;
    }
| lvalue "reduction" expr {
      $$ = lang_node(ps->arena, LANG_ASSIGN, $1->loc);
      $$->assign.target = $1;
      $$->assign.red = $2;
      $$->assign.value = $3;
    }
  /* IR text: how the conflict analysis decided to do a reduction:
   * `atomic Y[dst(e), f] += x`, `plain Y[v, f] += x` */
| IDENT lvalue '=' expr {
      $$ = lang_node(ps->arena, LANG_ASSIGN, at(ps, @1));
      $$->assign.how = $1;
      $$->assign.target = $2;
      $$->assign.red = IR_RED_ASSIGN;
      $$->assign.value = $4;
    }
| IDENT lvalue "reduction" expr {
      $$ = lang_node(ps->arena, LANG_ASSIGN, at(ps, @1));
      $$->assign.how = $1;
      $$->assign.target = $2;
      $$->assign.red = $3;
      $$->assign.value = $4;
    }
| for_stmt
  /* if = "if" "(" expr ")" block    (IR text only) */
| "if" '(' expr ')' block {
      $$ = lang_node(ps->arena, LANG_IF, at(ps, @1));
      $$->ifs.cond = $3;
      $$->ifs.then = $5;
    }
| "if" error block                  { $$ = NULL; }
;

/* lvalue = IDENT | IDENT "[" exprs? "]" */
lvalue:
  IDENT                             { $$ = lang_name(ps->arena, at(ps, @1), $1); }
| IDENT '[' exprs_opt ']' {
      $$ = lang_node(ps->arena, LANG_ELEM, at(ps, @1));
      $$->elem.name = $1;
      $$->elem.idx = $3.head;
    }
;

/* for_stmt = "for" IDENT "in" loop_dom annot* block */
for_stmt:
  "for" IDENT "in" loop_dom annots block {
      $$ = $4;
      $$->loc = at(ps, @1);
      $$->loop.var = $2;
      $$->loop.var_loc = at(ps, @2);
      $$->loop.annots = $5.head;
      $$->loop.body = $6;
    }
| "for" error block                 { $$ = NULL; }
;

/* loop_dom = IDENT | IDENT "(" expr ")" | INTEGER ".." expr
 * A range starts at an integer literal so that it never looks like a call
 * `in_edges(v)` to an LALR(1) parser. */
loop_dom:
  IDENT {
      $$ = lang_node(ps->arena, LANG_FOR, at(ps, @1));
      $$->loop.dom = $1;
    }
| IDENT '(' expr ')' {
      $$ = lang_node(ps->arena, LANG_FOR, at(ps, @1));
      $$->loop.dom = $1;
      $$->loop.of = $3;
    }
  /* IR text: `group_rows(v, 4)` (passes/segment.c); lo holds the size */
| IDENT '(' expr ',' INT ')' {
      $$ = lang_node(ps->arena, LANG_FOR, at(ps, @1));
      $$->loop.dom = $1;
      $$->loop.of = $3;
      $$->loop.lo = lang_int(ps->arena, at(ps, @5), $5);
    }
| INT ".." expr {
      $$ = lang_node(ps->arena, LANG_FOR, at(ps, @1));
      $$->loop.lo = lang_int(ps->arena, at(ps, @1), $1);
      $$->loop.hi = $3;
    }
;

annots:
  %empty                            { $$ = (LangList){0}; }
| annots annot                      { $$ = push($1, $2); }
;

/* annot = "@" IDENT ("(" INTEGER ")")?   e.g. @warp @unroll(4)  (IR text) */
annot:
  '@' IDENT {
      $$ = lang_node(ps->arena, LANG_ANNOT, at(ps, @1));
      $$->annot.name = $2;
    }
| '@' IDENT '(' INT ')' {
      $$ = lang_node(ps->arena, LANG_ANNOT, at(ps, @1));
      $$->annot.name = $2;
      $$->annot.value = $4;
      $$->annot.has_value = true;
    }
;

/* sched_def = "schedule" IDENT "(" names? ")" sched_body */
sched_def:
  "schedule" IDENT '(' names_opt ')' sched_body {
      $$ = lang_node(ps->arena, LANG_SCHED, at(ps, @1));
      $$->sched.name = $2;
      $$->sched.params = $4.head;
      $$->sched.body = $6.head;
    }
| "schedule" error sched_body       { $$ = NULL; }
;

/* sched_body = "{" directive* "}" ; on an error, skip to its "}" */
sched_body:
  '{' directives '}'                { $$ = $2; }
| '{' directives error '}'          { $$ = $2; }
;

names_opt:
  %empty                            { $$ = (LangList){0}; }
| names
;

names:
  IDENT                             { $$ = list1(lang_name(ps->arena, at(ps, @1), $1)); }
| names ',' IDENT                   { $$ = push($1, lang_name(ps->arena, at(ps, @3), $3)); }
;

directives:
  %empty                            { $$ = (LangList){0}; }
| directives directive              { $$ = push($1, $2); }
| directives ';'                    { $$ = $1; }
;

/* directive = IDENT "(" exprs? ")" ("->" IDENT | "->" "(" names ")")? */
directive:
  IDENT '(' exprs_opt ')' dir_results {
      $$ = lang_node(ps->arena, LANG_DIRECTIVE, at(ps, @1));
      $$->dir.name = $1;
      $$->dir.args = $3.head;
      $$->dir.results = $5;
    }
;

dir_results:
  %empty                            { $$ = NULL; }
| "->" IDENT                        { $$ = lang_name(ps->arena, at(ps, @2), $2); }
| "->" '(' names ')'                { $$ = $3.head; }
;

exprs_opt:
  %empty                            { $$ = (LangList){0}; }
| exprs
;

exprs:
  expr                              { $$ = list1($1); }
| exprs ',' expr                    { $$ = push($1, $3); }
;

/* expr = expr BINOP expr | ("-" | "!") expr | primary, with C's precedence.
 * A binary node is located at its operator. */
expr:
  expr_ {
      $$ = $1;
      if ($$->height == LANG_MAX_HEIGHT + 1) { /* once per expression */
        ps->nerrors++;
        ir_error(ps->diag, $$->loc, "expression nested too deeply (more than "
                 "%d levels)", LANG_MAX_HEIGHT);
      }
    }
;

expr_:
  expr "||" expr                    { $$ = lang_binary(ps->arena, at(ps, @2), IR_OP_OR, $1, $3); }
| expr "&&" expr                    { $$ = lang_binary(ps->arena, at(ps, @2), IR_OP_AND, $1, $3); }
| expr "==" expr                    { $$ = lang_binary(ps->arena, at(ps, @2), IR_OP_EQ, $1, $3); }
| expr "!=" expr                    { $$ = lang_binary(ps->arena, at(ps, @2), IR_OP_NE, $1, $3); }
| expr '<' expr                     { $$ = lang_binary(ps->arena, at(ps, @2), IR_OP_LT, $1, $3); }
| expr "<=" expr                    { $$ = lang_binary(ps->arena, at(ps, @2), IR_OP_LE, $1, $3); }
| expr '>' expr                     { $$ = lang_binary(ps->arena, at(ps, @2), IR_OP_GT, $1, $3); }
| expr ">=" expr                    { $$ = lang_binary(ps->arena, at(ps, @2), IR_OP_GE, $1, $3); }
| expr '+' expr                     { $$ = lang_binary(ps->arena, at(ps, @2), IR_OP_ADD, $1, $3); }
| expr '-' expr                     { $$ = lang_binary(ps->arena, at(ps, @2), IR_OP_SUB, $1, $3); }
| expr '*' expr                     { $$ = lang_binary(ps->arena, at(ps, @2), IR_OP_MUL, $1, $3); }
| expr '/' expr                     { $$ = lang_binary(ps->arena, at(ps, @2), IR_OP_DIV, $1, $3); }
| expr '%' expr                     { $$ = lang_binary(ps->arena, at(ps, @2), IR_OP_MOD, $1, $3); }
| '-' expr %prec UNARY              { $$ = lang_unary(ps->arena, at(ps, @1), IR_UN_NEG, $2); }
| '!' expr %prec UNARY              { $$ = lang_unary(ps->arena, at(ps, @1), IR_UN_NOT, $2); }
| primary
;

/* primary = INTEGER | NUMBER | IDENT | IDENT "[" exprs? "]"
 *         | IDENT "(" exprs? ")" | "(" expr ")" */
primary:
  INT                               { $$ = lang_int(ps->arena, at(ps, @1), $1); }
| FLOAT                             { $$ = lang_float(ps->arena, at(ps, @1), $1); }
| IDENT                             { $$ = lang_name(ps->arena, at(ps, @1), $1); }
| IDENT '[' exprs_opt ']' {
      $$ = lang_node(ps->arena, LANG_ELEM, at(ps, @1));
      $$->elem.name = $1;
      $$->elem.idx = $3.head;
      lang_set_height($$, $3.head);
    }
| IDENT '(' exprs_opt ')' {
      $$ = lang_node(ps->arena, LANG_CALL, at(ps, @1));
      $$->call.name = $1;
      $$->call.args = $3.head;
      lang_set_height($$, $3.head);
    }
| '(' expr ')'                      { $$ = $2; }
;

%%

static Loc at(const LangParser *ps, YYLTYPE l) {
  return (Loc){ps->file, l.first_line, l.first_column};
}

static LangList list1(LangNode *n) { return (LangList){n, n}; }

/* Appends `n` (NULL after a recovered error: skipped). */
static LangList push(LangList l, LangNode *n) {
  if (!n) return l;
  if (!l.head) return list1(n);
  l.tail->next = n;
  l.tail = n;
  return l;
}

static LangNode *relabel(LangNode *list, LangKind k) {
  for (LangNode *n = list; n; n = n->next) n->kind = k;
  return list;
}

/* Every syntax error goes through Diag, which quotes the line. At the end
 * of the file, the useful fact is which `{` was left open, so say that;
 * right after a stray character, the character was the mistake, so say
 * nothing more. */
static void lang_yyerror(const YYLTYPE *loc, yyscan_t scanner, LangParser *ps,
                         const char *msg) {
  (void)scanner;
  if (ps->too_deep) return; /* reported by the lexer, which ended the parse */
  ps->nerrors++;
  if (strcmp(msg, "memory exhausted") == 0) {
    /* bison's stack (YYMAXDEPTH entries) is full: something nests that
     * the bracket limit does not count, such as a long run of unary `-` */
    ir_error(ps->diag, at(ps, *loc),
             "the source nests too deeply for the parser here (more than %d "
             "constructs open at once)", YYMAXDEPTH);
    return;
  }
  if (ps->at_eof && ps->depth > 0) {
    int cap = (int)(sizeof ps->open_brace / sizeof ps->open_brace[0]);
    Loc open = ps->open_brace[(ps->depth <= cap ? ps->depth : cap) - 1];
    ir_error(ps->diag, open,
             "this `{` has no matching `}` before the end of the file");
    return;
  }
  if (ps->prev_bad) return; /* reported as the stray character before it */
  ir_error(ps->diag, at(ps, *loc), "%s", msg);
}

bool lang_parse(LangParser *ps, const char *text) {
  yyscan_t scanner;
  if (lang_yylex_init_extra(ps, &scanner) != 0) {
    ir_error(ps->diag, (Loc){ps->file, 0, 0}, "out of memory");
    return false;
  }
  ps->line = ps->col = 1;
  ps->depth = 0;
  ps->at_eof = false;
  ps->nest = 0;
  ps->too_deep = false;
  ps->max_nest = (int)(ir_limit(IR_LIMIT_NESTING) < 1000000 ? ir_limit(IR_LIMIT_NESTING) : 1000000);
  Loc whole = {ps->file, 1, 1};
  if (!ir_limit_check(IR_LIMIT_NESTING, 0, ps->diag, whole, "nesting") ||
      !ir_limit_check(IR_LIMIT_SOURCE_BYTES, (int64_t)strlen(text), ps->diag, whole,
                      "the source is too long")) {
    lang_yylex_destroy(scanner);
    ps->nerrors++;
    return false;
  }
  YY_BUFFER_STATE buf = lang_yy_scan_string(text, scanner);
  int rc = lang_yyparse(scanner, ps);
  lang_yy_delete_buffer(buf, scanner);
  lang_yylex_destroy(scanner);
  if (rc != 0 && ps->nerrors == 0) ps->nerrors++; /* memory exhausted */
  return ps->nerrors == 0;
}
