/* grad/derive.h: the state the derivation's files share (derive.c,
 * stmt.c, expr.c, softmax.c), private to grad/.
 *
 * grad/grad.h is the room's header and all that other rooms see; this one
 * exists because the derivation is one algorithm over one struct (Grad)
 * split into files by what each differentiates, and they must agree on
 * that struct. Every function here is named grad_ and used by more than
 * one of those files; the rest stay static where they are.
 *
 * Uses: ir/ only.
 */
#ifndef GOP_GRAD_DERIVE_H
#define GOP_GRAD_DERIVE_H

#include "grad/grad.h"

/* How a tensor is written in the forward operator. */
typedef struct Written {
  int stage;   /* index of the stage writing it, -1 if none */
  IrRed red;   /* the reduction of its stores */
  int nstores; /* number of store statements */
} Written;

/* A condition the derivative holds under, as a list (ANDed). */
typedef struct Guard {
  IrNode *cond;
  const struct Guard *next;
} Guard;

typedef enum { CLS_OWNED, CLS_CSC } StageClass;

/* An edge softmax found in the forward (softmax.c-style three stages):
 * M[v..] max= s1 (stage si), D[v..] += exp(s - M[v..]) (stage sj), and in
 * stage sk one store of alpha = exp(s - M[v..]) / D[v..] into an output:
 *   SM_SAVED:  A[e..] = alpha                    (edge_softmax)
 *   SM_AGG:    Y[v.., f..] += alpha * R          (GAT's fused attention)
 * Its backward uses the saved output instead of passing adjoints through M
 * and D: the softmax Jacobian gives, per edge,
 *   SAVED:  ds = A (dA - G),  G[v..] = sum over in-edges of A dA;
 *   AGG:    ds = alpha * sum over f of dY (R - Y)   (sum of alpha R is Y),
 * and M has no gradient at all (a softmax does not change under a shift).
 * M and D are then "absorbed": no adjoints, no count, no reverse stages. */
typedef enum { SM_SAVED, SM_AGG } SoftmaxForm;

typedef struct Softmax {
  const IrTensor *m, *d;
  int sk;
  const IrNode *store; /* the store of stage sk */
  const IrNode *alpha; /* its alpha = exp(s - M) / D */
  const IrNode *r;     /* SM_AGG: the other factor */
  SoftmaxForm form;
  IrTensor *gsum;      /* SM_SAVED: G, made when first needed */
} Softmax;

enum { MAX_SOFTMAX = 8 };

typedef struct Grad {
  Arena *a;
  Diag *d;
  const IrOp *fw;
  IrOp *bw;
  const IrTensor *wrt;   /* the first input differentiated against */
  const bool *is_wrt;    /* by forward tensor id: every one of them */
  const char *wrt_names; /* "X" or "X, W", for messages */
  const int *wrt_order;  /* their tensor ids in the order asked, -1 after */
  bool ok;

  /* by forward tensor id */
  Written *wr;
  bool *active;     /* depends on wrt */
  IrTensor **prim;  /* the forward value in bw (input or recomputed temp) */
  IrTensor **adj;   /* its adjoint in bw */
  IrTensor **cnt;   /* max=/min= contribution counts */
  bool *csc;        /* in the stage being emitted: gathered by source */
  bool *absorbed;   /* M and D of a recognised softmax */
  Softmax sm[MAX_SOFTMAX];
  int nsm;

  /* by forward variable id */
  bool *lactive;    /* active locals */
  IrNode **vmap;    /* loop variable -> its replacement (cloned per use) */
  IrVar **lmap;     /* local -> its recomputed copy */
  IrVar **dlmap;    /* local -> its adjoint */

  /* the source-ordered rewrite of the stage being emitted */
  const IrVar *csc_e; /* the forward in-edge variable */
  IrVar *csc_u;       /* src(csc_e) becomes this source vertex */
  StageClass cls;

  /* names given out in bw; those from `nstage_names` on are the locals of
   * the stage being emitted (locals of different stages may share names) */
  const char **names;
  int nnames, capnames, nstage_names;
  /* bw tensors in creation order */
  IrTensor **bwt;
  int nbwt, capbwt;
} Grad;

/* How a forward statement is copied into the gradient (stmt.c). */
typedef enum {
  FWD_SOFTMAX,   /* the softmax store becomes G += A dA */
  FWD_RECOMPUTE, /* stores to needed temporaries kept */
  FWD_COUNT,     /* max=/min= stores of active targets become counts */
  FWD_LOCALS,    /* only the locals (a block's recomputation) */
} FwdMode;

typedef struct Fwd {
  FwdMode mode;
  const struct Softmax *sm; /* FWD_SOFTMAX */
  const bool *keep; /* FWD_RECOMPUTE: by forward tensor id */
  const bool *decl; /* FWD_LOCALS: locals declared in the block, by var id */
} Fwd;

/* The forward loops around a block being reversed (stmt.c). */
enum { MAX_DEPTH = 64 };

typedef struct Scope {
  const IrNode **loops; /* forward loops around the block */
  int nloops;
} Scope;

/* ---------------------------------------------------------------------------
 * derive.c: names, tensors and refusals of the gradient operator, and the
 * analysis of the forward one.
 */

/* A name not yet given out in the gradient operator, from `base`; `own`:
 * a local of the stage being emitted. */
const char *grad_fresh_name(Grad *g, const char *base, bool own);
/* The forward value of `t` in the gradient (an input, or a recomputed
 * temporary), its adjoint, and the count of its max=/min= contributions;
 * each made when first asked for. */
IrTensor *grad_prim(Grad *g, const IrTensor *t);
IrTensor *grad_adj(Grad *g, const IrTensor *t);
IrTensor *grad_cnt(Grad *g, const IrTensor *t);
/* A new variable of the gradient operator shaped like forward `like`. */
IrVar *grad_new_var(Grad *g, const IrVar *like, const char *name, IrVarKind kind);
/* Reports, once, why the operator cannot be differentiated; g->ok false. */
void grad_refuse(Grad *g, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Whether forward expression `e` depends on an input differentiated. */
bool grad_active_expr(const Grad *g, const IrNode *e);

/* ---------------------------------------------------------------------------
 * expr.c: forward expressions copied into the gradient, and the chain rule.
 */

/* A copy of forward expression `e` with variables and tensors mapped. */
IrNode *grad_sx(Grad *g, const IrNode *e);
/* A load of `t` at the (mapped) index of forward access `acc`. */
IrNode *grad_load_of(Grad *g, Loc loc, IrTensor *t, const IrNode *acc);
/* A new loop for forward loop `s`, its variable mapped. */
IrNode *grad_clone_header(Grad *g, const IrNode *s);
/* The recomputed copy of forward local `v`, recorded in g->lmap. */
IrVar *grad_copy_local(Grad *g, const IrVar *v);
IrNode *grad_fc(Grad *g, Loc l, double v);
IrNode *grad_mul(Grad *g, Loc l, IrNode *x, IrNode *y);
/* Appends to `out` the accumulations that pass `coef` (the adjoint of
 * `e`) down to every active leaf of `e`, under the guards `gd`. */
void grad_chain(Grad *g, const IrNode *e, IrNode *coef, const Guard *gd, IrNode **out);

/* ---------------------------------------------------------------------------
 * stmt.c: statements and blocks, recomputed forward and reversed.
 */

/* The copy of forward statement `s` that `f` asks for, or NULL. */
IrNode *grad_fwd_stmt(Grad *g, const IrNode *s, const Fwd *f);
/* Appends to `out` the reverse of forward statement `s`. */
void grad_rev_stmt(Grad *g, const IrNode *s, Scope *sc, IrNode **out);
/* The reverse of a block: its locals recomputed, their adjoints declared,
 * its statements reversed; NULL when nothing is passed back. */
IrNode *grad_rev_list(Grad *g, const IrNode *list, Scope *sc);
/* An ir_any predicate: a store or a local's reduction. */
bool grad_has_store_or_set(const IrNode *n, void *p);

/* ---------------------------------------------------------------------------
 * softmax.c: the edge softmax, differentiated by its saved output.
 */

/* Finds the edge softmaxes among the forward stages (g->sm) and marks
 * their maximum and sum absorbed. */
void grad_find_softmax(Grad *g, const IrNode **stages, int nstages);
/* Appends to `out` the reverse of the softmax's store, seeded by `seed`. */
void grad_softmax_reverse(Grad *g, Softmax *sm, IrNode *seed, IrNode **out);

#endif
