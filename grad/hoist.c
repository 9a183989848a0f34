/* grad/hoist.c: what the reverse sweep leaves inside a feature loop that
 * does not depend on the feature is moved out of it (grad/grad.h).
 *
 * The reverse sweep emits each adjoint contribution where the forward's
 * store was, inside all its loops. For a contribution to an element that
 * the innermost feature loop `for f` does not index (the gradient of an
 * edge weight, `dW[e] += dY[v, f] * X[src(e), f]`; of GAT's attention
 * term, `dAs[u, h] += alpha * dY[.., h, f] * (Z[u, h, f] - Y[.., h, f])`
 * under a guard on the sign of the score) that means one read-modify-write
 * of the element per feature (on the GPU, with the feature loop on the
 * lanes of a warp, one atomic per lane on one address), and every factor
 * that does not depend on f (alpha = exp(leaky_relu(..) - M) / D, with its
 * loads) computed once per feature. Three rewrites, in this order, on
 * every range loop whose body is stores and guards of stores:
 *
 *   1. an expression of a stored value that does not use f, reads nothing
 *      the loop writes and costs a call or a division becomes a local
 *      declared before the loop (equal expressions share one); guard
 *      conditions are left as written (a guard must compare the value the
 *      forward computed, operation for operation);
 *   2. a sum store `T[idx] += a * b * ...` whose index does not use f,
 *      whose guards (if any) do not use f nor read what the loop writes,
 *      whose target the loop does not read, and which has a guard or a
 *      factor that rewrite 1 made a local of, becomes `s += (the factors
 *      that use f)` in the loop, unguarded, into a local `s` declared
 *      before it (equal sums share one), and after the loop
 *      `[if (guard)] { T[idx] += (the other factors) * s }`. A plain sum
 *      of products (an edge weight's SDDMM) is left a sum of stores: the
 *      GPU check's allowance for the order of summation counts the terms
 *      of stores, not of a local (docs/autodiff.md), so moving them would
 *      need the interpreter to count a local's terms into the store.
 *   3. where such a sum is `A * (B - C)`, A and C two inputs' rows of one
 *      vertex w at one index and B not (GAT's dY[w, h, f] * (Z[u, h, f] -
 *      Y[w, h, f])), the sum of A * C over f is the same for every edge
 *      of w: a stage of its own before the first that needs it sums it
 *      per vertex into a temporary (GY[w, h]), and the local starts at
 *      -GY[w, h] and adds A * B only: the edge loop gathers one row of w
 *      instead of two (vertex_share below).
 *
 *   for f in 0..C {                        var a1 = exp(..) / D[..]
 *     dZ[u, h, f] += dY[.., f] * (exp(..) / D[..])   var s1 = 0.0
 *     if (c) { dAs[u, h] += exp(..) / D[..] *   ->   for f in 0..C {
 *                dY[.., f] * (Z[u, h, f] - Y[..]) }     dZ[u, h, f] += dY[.., f] * a1
 *     if (!c) { dAs[u, h] += ... * 0.2 }                 s1 += dY[.., f] * (Z[u, h, f] - Y[..])
 *   }                                      }
 *                                          if (c) { dAs[u, h] += a1 * s1 }
 *                                          if (!c) { dAs[u, h] += a1 * 0.2 * s1 }
 *
 * The sum is the same sum in another association (a guard that holds for
 * one feature holds for all), so the gradient is unchanged up to float
 * rounding; the local's reduction over lanes is a warp shuffle
 * (passes/conflicts.c), and the element gets one update per edge and head.
 */
#include <stdio.h>
#include <string.h>

#include "grad/grad.h"

typedef struct Hoist {
  Arena *a;
  IrOp *op;
  int nlocal;
  /* the loop being rewritten */
  const IrVar *f;
  bool *written; /* by tensor id: stored to in the loop */
  bool *read;    /* by tensor id: loaded in the loop */
  /* expressions hoisted before it (rewrite 1) and sums made (rewrite 2) */
  const IrNode *hx[64];
  IrVar *hv[64];
  int nh;
  const IrNode *sx[64];
  IrVar *sv[64];
  IrNode *sp[64]; /* rewrite 3: what each sum is short of (-P[w, ..]), or NULL */
  int ns;
  IrNode *pre, *post;
  /* rewrite 3: the per-vertex sums made, and their stages not yet placed */
  struct VertexSum {
    const IrTensor *a, *c;
    int fpos;
    IrTensor *p;
  } vsum[8];
  int nvsum;
  IrNode *stages;
} Hoist;

/* Structural equality (variables by identity). */
static bool same(const IrNode *x, const IrNode *y) {
  if (!x || !y) return x == y;
  if (x->kind != y->kind) return false;
  switch (x->kind) {
  case IR_FCONST: return x->f == y->f;
  case IR_ICONST: return x->i == y->i;
  case IR_VAR: return x->var == y->var;
  case IR_SYM: return x->sym == y->sym;
  case IR_LOAD:
    if (x->acc.tensor != y->acc.tensor || x->acc.nidx != y->acc.nidx) return false;
    for (int i = 0; i < x->acc.nidx; i++)
      if (!same(x->acc.idx[i], y->acc.idx[i])) return false;
    return true;
  case IR_BIN: return x->bin.op == y->bin.op && same(x->bin.a, y->bin.a) && same(x->bin.b, y->bin.b);
  case IR_UN: return x->un.op == y->un.op && same(x->un.a, y->un.a);
  case IR_CALL:
    if (x->call.fn != y->call.fn || x->call.nargs != y->call.nargs) return false;
    for (int i = 0; i < x->call.nargs; i++)
      if (!same(x->call.args[i], y->call.args[i])) return false;
    return true;
  case IR_SRC: case IR_DST: case IR_INDEG: case IR_OUTDEG:
    return same(x->endpoint.e, y->endpoint.e);
  case IR_NV: case IR_NE: return true;
  default: return false;
  }
}

static bool hit_costly(const IrNode *n, void *ctx) {
  (void)ctx;
  return n->kind == IR_CALL || (n->kind == IR_BIN && n->bin.op == IR_OP_DIV);
}

typedef struct Reads {
  const bool *t;
} Reads;

static bool hit_reads(const IrNode *n, void *ctx) {
  const Reads *r = ctx;
  return n->kind == IR_LOAD && r->t[n->acc.tensor->id];
}

/* Whether `e` is the same on every iteration of the loop: no f, nothing
 * the loop writes. */
static bool invariant(const Hoist *h, const IrNode *e) {
  Reads r = {h->written};
  return !ir_uses_var(e, h->f) && !ir_any(e, hit_reads, &r);
}

static bool name_taken(const IrOp *op, const char *name) {
  for (int i = 0; i < op->nvars; i++)
    if (op->vars[i]->name && strcmp(op->vars[i]->name, name) == 0) return true;
  for (int i = 0; i < op->ntensors; i++)
    if (strcmp(op->tensors[i]->name, name) == 0) return true;
  for (int i = 0; i < op->nsyms; i++)
    if (strcmp(op->syms[i]->name, name) == 0) return true;
  return false;
}

/* A new local `stemN`. */
static IrVar *fresh_local(Hoist *h, const char *stem, Loc l) {
  const char *name;
  do
    name = ir_sprintf(h->a, "%s%d", stem, ++h->nlocal);
  while (name_taken(h->op, name));
  return ir_op_add_var(h->a, h->op, name, l, IR_VAR_LOCAL);
}

/* A new local `stemN` declared before the loop with `init`. */
static IrVar *new_local(Hoist *h, const char *stem, IrNode *init, Loc l) {
  IrVar *v = fresh_local(h, stem, l);
  ir_append(&h->pre, ir_let(h->a, l, v, init));
  return v;
}

/* Rewrite 1 on expression `e` (in place where a child is replaced). */
static IrNode *hoist_expr(Hoist *h, IrNode *e) {
  if (!e) return e;
  if (e->type == IR_TY_FLOAT && e->kind != IR_LOAD && e->kind != IR_VAR &&
      e->kind != IR_FCONST && invariant(h, e) && ir_any(e, hit_costly, NULL)) {
    for (int i = 0; i < h->nh; i++)
      if (same(h->hx[i], e)) return ir_var(h->a, e->loc, h->hv[i]);
    if (h->nh == 64) return e;
    h->hx[h->nh] = e;
    h->hv[h->nh] = new_local(h, "a", ir_clone(h->a, e), e->loc);
    return ir_var(h->a, e->loc, h->hv[h->nh++]);
  }
  switch (e->kind) {
  case IR_BIN:
    e->bin.a = hoist_expr(h, e->bin.a);
    e->bin.b = hoist_expr(h, e->bin.b);
    break;
  case IR_UN: e->un.a = hoist_expr(h, e->un.a); break;
  case IR_CALL:
    for (int i = 0; i < e->call.nargs; i++) e->call.args[i] = hoist_expr(h, e->call.args[i]);
    break;
  default: break;
  }
  return e;
}

/* The factors of a product chain a * b * ... (left to right). */
static int factors(IrNode *e, IrNode **out, int n, int max) {
  if (e->kind == IR_BIN && e->bin.op == IR_OP_MUL && e->type == IR_TY_FLOAT) {
    n = factors(e->bin.a, out, n, max);
    return n < 0 ? n : factors(e->bin.b, out, n, max);
  }
  if (n == max) return -1;
  out[n] = e;
  return n + 1;
}

static IrNode *product(Hoist *h, IrNode **f, int n, Loc l) {
  IrNode *p = NULL;
  for (int i = 0; i < n; i++) p = p ? ir_bin(h->a, l, IR_OP_MUL, p, f[i]) : f[i];
  return p;
}

static bool index_uses(const IrNode *st, const IrVar *v) {
  for (int i = 0; i < st->acc.nidx; i++)
    if (ir_uses_var(st->acc.idx[i], v)) return true;
  return false;
}

/* ---- rewrite 3: a vertex's share of a sum, summed once per vertex ---- */

/* The vertex a load's first index names: a vertex loop's variable, or an
 * endpoint of an edge variable, of the tensor's own row domain. */
static bool vertex_index(const IrNode *ld) {
  const IrNode *w = ld->acc.idx[0];
  IrDomain dom = ld->acc.tensor->domain;
  if (w->kind == IR_VAR)
    return (dom == IR_DOM_DST && w->var->kind == IR_VAR_DST_V) ||
           (dom == IR_DOM_SRC && w->var->kind == IR_VAR_SRC_V);
  return ((dom == IR_DOM_DST && w->kind == IR_DST) || (dom == IR_DOM_SRC && w->kind == IR_SRC)) &&
         w->endpoint.e->kind == IR_VAR && w->endpoint.e->var->kind == IR_VAR_EDGE;
}

/* Whether loads `x` (A) and `y` (C) read one vertex's row of two input
 * tensors of one shape at one index [w, i1, ..., in], the i distinct range
 * variables, one of them f: the position of f (1..n), else 0. */
static int vertex_rows(const Hoist *h, const IrNode *x, const IrNode *y) {
  if (x->kind != IR_LOAD || y->kind != IR_LOAD) return 0;
  const IrTensor *a = x->acc.tensor, *c = y->acc.tensor;
  if (a->role != IR_ROLE_IN || c->role != IR_ROLE_IN || a->domain != c->domain ||
      a->dtype != c->dtype || a->ndims != c->ndims || x->acc.nidx != a->ndims + 1 ||
      y->acc.nidx != x->acc.nidx || !vertex_index(x))
    return 0;
  int fpos = 0;
  for (int k = 0; k < x->acc.nidx; k++) {
    if (!same(x->acc.idx[k], y->acc.idx[k])) return 0;
    if (k == 0) continue;
    const IrNode *i = x->acc.idx[k];
    if (i->kind != IR_VAR || i->var->kind != IR_VAR_INDEX) return 0;
    if (a->dims[k - 1].sym != c->dims[k - 1].sym || a->dims[k - 1].value != c->dims[k - 1].value)
      return 0;
    for (int q = 1; q < k; q++)
      if (x->acc.idx[q]->var == i->var) return 0;
    if (i->var == h->f) fpos = k;
  }
  return fpos;
}

static IrNode *dim_extent(Hoist *h, const IrDim *d, Loc l) {
  return d->sym ? ir_symref(h->a, l, d->sym) : ir_iconst(h->a, l, d->value);
}

/* P[w, i without f] = sum over f of A[w, i] * C[w, i], as a stage over
 * every vertex of the rows' domain (made once per A, C and f's place). */
static IrTensor *vertex_sum(Hoist *h, const IrNode *x, const IrNode *y, int fpos) {
  const IrTensor *a = x->acc.tensor, *c = y->acc.tensor;
  for (int i = 0; i < h->nvsum; i++)
    if (h->vsum[i].a == a && h->vsum[i].c == c && h->vsum[i].fpos == fpos) return h->vsum[i].p;
  if (h->nvsum == 8) return NULL;
  Loc l = y->loc;
  const char *name;
  int k = 0;
  do
    name = k++ ? ir_sprintf(h->a, "G%s%d", c->name, k) : ir_sprintf(h->a, "G%s", c->name);
  while (name_taken(h->op, name));
  IrTensor *p = ir_op_add_tensor(h->a, h->op, name, l, c->dtype, c->domain, IR_ROLE_TEMP);
  for (int d = 0; d < c->ndims; d++)
    if (d != fpos - 1) p->dims[p->ndims++] = c->dims[d];
  /* for w in V { for i1 in 0..n1 { ... P[w, ..] += A[w, ..] * C[w, ..] } } */
  bool dst = c->domain == IR_DOM_DST;
  const IrNode *w0 = x->acc.idx[0];
  const char *vname = w0->kind == IR_VAR ? w0->var->name : "v";
  IrVar *w = ir_op_add_var(h->a, h->op, vname, l, dst ? IR_VAR_DST_V : IR_VAR_SRC_V);
  IrNode *ia[IR_MAX_IDX], *ic[IR_MAX_IDX], *ip[IR_MAX_IDX];
  IrVar *iv[IR_MAX_IDX];
  int np = 0, n = x->acc.nidx;
  ia[0] = ir_var(h->a, l, w);
  ic[0] = ir_var(h->a, l, w);
  ip[np++] = ir_var(h->a, l, w);
  for (int q = 1; q < n; q++) {
    iv[q] = ir_op_add_var(h->a, h->op, x->acc.idx[q]->var->name, l, IR_VAR_INDEX);
    ia[q] = ir_var(h->a, l, iv[q]);
    ic[q] = ir_var(h->a, l, iv[q]);
    if (q != fpos) ip[np++] = ir_var(h->a, l, iv[q]);
  }
  /* { var s = 0.0; for f .. { s += A * C }; P[w, ..] = s } inside the
   * other indices' loops: a sum in a local, which lanes on f reduce by a
   * shuffle, stored once */
  IrVar *sum = fresh_local(h, "g", l);
  IrNode *body = ir_let(h->a, l, sum, ir_fconst(h->a, l, 0.0));
  IrNode *term = ir_bin(h->a, l, IR_OP_MUL, ir_load(h->a, l, (IrTensor *)a, n, ia),
                        ir_load(h->a, l, (IrTensor *)c, n, ic));
  ir_append(&body, ir_loop(h->a, l, iv[fpos], IR_LOOP_RANGE,
                           dim_extent(h, &c->dims[fpos - 1], l), NULL,
                           ir_set(h->a, l, sum, IR_RED_ADD, term)));
  ir_append(&body, ir_store(h->a, l, p, np, ip, IR_RED_ASSIGN, ir_var(h->a, l, sum)));
  for (int q = n - 1; q >= 1; q--)
    if (q != fpos)
      body = ir_loop(h->a, l, iv[q], IR_LOOP_RANGE, dim_extent(h, &c->dims[q - 1], l), NULL, body);
  ir_append(&h->stages, ir_loop(h->a, l, w, dst ? IR_LOOP_DST_V : IR_LOOP_SRC_V, NULL, NULL, body));
  h->vsum[h->nvsum++] = (struct VertexSum){a, c, fpos, p};
  return p;
}

/* Rewrite 3 on a sum `A * (B - C)` (rewrite 2's local, `s += sum` in the
 * loop over f) where A and C are rows of one vertex w (vertex_rows) and B
 * is not: the sum of A * C over f does not depend on the edge, so it is
 * summed once per vertex into P by a stage of its own before this one, and
 * the local adds only A * B, P[w, ..] taken from it where it is used.
 * Returns P[w, ..] and sets *sum to A * B, or returns NULL. */
static IrNode *vertex_share(Hoist *h, IrNode **sum) {
  IrNode *e = *sum;
  if (e->kind != IR_BIN || e->bin.op != IR_OP_MUL) return NULL;
  IrNode *x = e->bin.a, *d = e->bin.b;
  if (x->kind != IR_LOAD) x = e->bin.b, d = e->bin.a;
  if (x->kind != IR_LOAD || d->kind != IR_BIN || d->bin.op != IR_OP_SUB) return NULL;
  IrNode *b = d->bin.a, *y = d->bin.b;
  int fpos = vertex_rows(h, x, y);
  if (!fpos) return NULL;
  /* B must differ by edge: a term of only w's rows would be summed whole */
  if (b->kind == IR_LOAD && b->acc.nidx > 0 && same(b->acc.idx[0], x->acc.idx[0])) return NULL;
  IrTensor *p = vertex_sum(h, x, y, fpos);
  if (!p) return NULL;
  Loc l = e->loc;
  IrNode *idx[IR_MAX_IDX];
  int np = 0;
  for (int q = 0; q < x->acc.nidx; q++)
    if (q != fpos) idx[np++] = ir_clone(h->a, x->acc.idx[q]);
  *sum = ir_bin(h->a, l, IR_OP_MUL, ir_clone(h->a, x), ir_clone(h->a, b));
  return ir_load(h->a, l, p, np, idx);
}

/* Rewrite 2 on store `st` under guard `cond` (NULL: none): the local's
 * update that replaces it in the loop, or NULL when it does not apply. */
static IrNode *sum_out(Hoist *h, IrNode *st, const IrNode *cond) {
  if (st->kind != IR_STORE || st->acc.red != IR_RED_ADD || index_uses(st, h->f) ||
      h->read[st->acc.tensor->id] || !ir_uses_var(st->acc.value, h->f) ||
      (cond && !invariant(h, cond)))
    return NULL;
  IrNode *fs[32], *var[32], *inv[32];
  int n = factors(st->acc.value, fs, 0, 32), nv = 0, ni = 0;
  if (n < 0) return NULL;
  bool hoisted = false; /* a factor rewrite 1 made a local of */
  for (int i = 0; i < n; i++) {
    if (invariant(h, fs[i])) inv[ni++] = fs[i];
    else var[nv++] = fs[i];
    if (fs[i]->kind == IR_VAR)
      for (int k = 0; k < h->nh; k++) hoisted |= fs[i]->var == h->hv[k];
  }
  /* Only where a costly factor or a guard is saved: a plain sum of
   * products (an edge weight's SDDMM, d eps of GIN) stays a sum of stores,
   * whose terms the GPU check's allowance for summation order counts
   * (docs/autodiff.md, "How it is checked on the GPU"); a local's are not. */
  if (!hoisted && !cond) return NULL;
  Loc l = st->loc;
  IrNode *sum = product(h, var, nv, l);
  IrVar *s = NULL;
  for (int i = 0; i < h->ns && !s; i++)
    if (same(h->sx[i], sum)) s = h->sv[i];
  IrNode *upd = NULL;
  if (!s) {
    if (h->ns == 64) return NULL;
    h->sx[h->ns] = sum;
    h->sp[h->ns] = vertex_share(h, &sum);
    s = new_local(h, "s", ir_fconst(h->a, l, 0.0), l);
    h->sv[h->ns++] = s;
    upd = ir_set(h->a, l, s, IR_RED_ADD, sum);
  }
  IrNode *short_of = NULL;
  for (int i = 0; i < h->ns; i++)
    if (h->sv[i] == s) short_of = h->sp[i];
  inv[ni++] = short_of ? ir_bin(h->a, l, IR_OP_SUB, ir_var(h->a, l, s), ir_clone(h->a, short_of))
                       : ir_var(h->a, l, s);
  IrNode *idx[IR_MAX_IDX];
  for (int i = 0; i < st->acc.nidx; i++) idx[i] = ir_clone(h->a, st->acc.idx[i]);
  IrNode *after = ir_store(h->a, l, st->acc.tensor, st->acc.nidx, idx, IR_RED_ADD,
                           product(h, inv, ni, l));
  ir_append(&h->post, cond ? ir_if(h->a, l, ir_clone(h->a, cond), after) : after);
  /* the update, or an empty statement list when an earlier one sums it */
  return upd ? upd : (IrNode *)-1;
}

typedef struct Marks {
  bool *written, *read;
} Marks;

static bool mark(const IrNode *n, void *ctx) {
  Marks *m = ctx;
  if (n->kind == IR_STORE) m->written[n->acc.tensor->id] = true;
  if (n->kind == IR_LOAD) m->read[n->acc.tensor->id] = true;
  return false;
}

/* Whether loop body `b` is stores and guards of stores only. */
static bool simple_body(const IrNode *b) {
  for (const IrNode *s = b; s; s = s->next) {
    if (s->kind == IR_STORE) continue;
    if (s->kind != IR_IF) return false;
    for (const IrNode *t = s->ifs.then; t; t = t->next)
      if (t->kind != IR_STORE) return false;
  }
  return true;
}

/* The rewrites on range loop `L`: the statements to put before it (its
 * locals) and after it (the sums' stores), or neither. */
static void rewrite_loop(Hoist *h, IrNode *L) {
  h->f = L->loop.var;
  h->nh = h->ns = 0;
  h->pre = h->post = NULL;
  memset(h->written, 0, sizeof(bool) * (size_t)h->op->ntensors);
  memset(h->read, 0, sizeof(bool) * (size_t)h->op->ntensors);
  Marks m = {h->written, h->read};
  ir_any(L->loop.body, mark, &m);
  for (IrNode *s = L->loop.body; s; s = s->next) {
    if (s->kind == IR_STORE) s->acc.value = hoist_expr(h, s->acc.value);
    else
      for (IrNode *t = s->ifs.then; t; t = t->next) t->acc.value = hoist_expr(h, t->acc.value);
  }
  IrNode *body = NULL;
  for (IrNode *s = L->loop.body, *next; s; s = next) {
    next = s->next;
    s->next = NULL;
    if (s->kind == IR_STORE) {
      IrNode *u = sum_out(h, s, NULL);
      if (!u) ir_append(&body, s);
      else if (u != (IrNode *)-1) ir_append(&body, u);
      continue;
    }
    IrNode *keep = NULL;
    for (IrNode *t = s->ifs.then, *tn; t; t = tn) {
      tn = t->next;
      t->next = NULL;
      IrNode *u = sum_out(h, t, s->ifs.cond);
      if (!u) ir_append(&keep, t);
      else if (u != (IrNode *)-1) ir_append(&body, u);
    }
    if (keep) {
      s->ifs.then = keep;
      ir_append(&body, s);
    }
  }
  L->loop.body = body;
}

/* `depth`: the loops around `list` (a stage's own loop, at depth 0, is
 * left: locals live inside a vertex or edge loop). */
static IrNode *rewrite_list(Hoist *h, IrNode *list, int depth) {
  IrNode *out = NULL;
  for (IrNode *s = list, *next; s; s = next) {
    next = s->next;
    s->next = NULL;
    if (s->kind == IR_LOOP) {
      s->loop.body = rewrite_list(h, s->loop.body, depth + 1);
      if (depth > 0 && s->loop.kind == IR_LOOP_RANGE && s->loop.body &&
          simple_body(s->loop.body)) {
        rewrite_loop(h, s);
        IrNode *pre = h->pre, *post = h->post;
        if (pre) ir_append(&out, pre);
        if (s->loop.body) ir_append(&out, s);
        if (post) ir_append(&out, post);
        continue;
      }
    } else if (s->kind == IR_IF) {
      s->ifs.then = rewrite_list(h, s->ifs.then, depth);
    }
    if (depth == 0 && h->stages) { /* rewrite 3's sums, before their first use */
      ir_append(&out, h->stages);
      h->stages = NULL;
    }
    ir_append(&out, s);
  }
  return out;
}

void grad_hoist_features(IrOp *op, Arena *a) {
  Hoist h = {.a = a, .op = op};
  /* room for rewrite 3's tensors */
  h.written = IR_NEW_ARRAY(a, bool, op->ntensors + 9);
  h.read = IR_NEW_ARRAY(a, bool, op->ntensors + 9);
  op->body = rewrite_list(&h, op->body, 0);
}
