/* passes/fission.c: fission(T), loop fission by output tensor.
 *
 * Contract: on one stage (a top-level loop nest, as apply_stages calls
 * it) that stores into tensor T and into other tensors, moves the stores
 * into T, with the locals they read, into a stage of their own placed
 * before the rest; returns 1 (and changes nothing) for a stage that does
 * not store into T. The two stages compute what the one did: neither part
 * reads T, and the part that now runs first reads no tensor the rest
 * writes (each refused otherwise). The new stage gets loop variables of
 * its own, named as before, so later directives of a schedule (under
 * stages(...)) map each part by itself.
 *
 * In the new stage each local that is assigned once (a `var` with no
 * later reduction into it) is replaced by its expression where it is
 * used (pass_inline_locals, passes/inline.c): the part is then a perfect nest where the stage was not (the
 * derived backward of GAT's attention computes alpha once per edge and
 * head, in a local between the head and feature loops, and sums dZ over
 * the features beside the dot product that dAs needs); recomputed per
 * feature, alpha no longer stands between the loops, and reorder, fuse
 * and promote(e, register) can make the sum into dZ a register sum over
 * the edges with the features on the lanes:
 *
 *   for v in src {                          for v in src {
 *     for e in out_edges(v) {                 for e in out_edges(v) {
 *       for h in 0..H {                         for h in 0..H {
 *         var a4 = exp(..) / D[dst(e), h]         for f in 0..C {
 *         var s5 = 0.0                              dZ[v, h, f] += dY[dst(e), h, f] *
 *         for f in 0..C {            ->                 (exp(..) / D[dst(e), h])
 *           dZ[v, h, f] += dY[..] * a4     ...  }}}}
 *           s5 += dY[..] * Z[v, h, f]         for v in src { ...
 *         }                                     (a4, s5 and the stores into dAs,
 *         if (..) { dAs[v, h] += a4 * s5 }       as before) }
 *   }}}
 */
#include <string.h>

#include "passes/passes.h"

typedef struct Fission {
  Arena *a;
  IrOp *op;
  const IrTensor *t;
  bool *need; /* by var id: a local the kept statements read */
  bool more;  /* hit_local needed a new one */
} Fission;

static bool hit_local(const IrNode *n, void *ctx) {
  Fission *f = ctx;
  if (n->kind == IR_VAR && n->var->kind == IR_VAR_LOCAL && !f->need[n->var->id])
    f->need[n->var->id] = f->more = true;
  return false;
}

static void mark_reads(Fission *f, const IrNode *e) {
  if (e) ir_any(e, hit_local, f);
}

/* Pass 1 on list `l` (a copy): keeps the stores into T (keep_t) or the
 * others (!keep_t), with every `var`, reduction into a local, loop and
 * guard for now (passes 2 and 3 decide those); marks the locals the kept
 * stores read. Returns the new list. */
static IrNode *keep_stores(Fission *f, IrNode *l, bool keep_t, bool *any) {
  IrNode *out = NULL;
  for (IrNode *s = l, *next; s; s = next) {
    next = s->next;
    s->next = NULL;
    bool keep = true;
    if (s->kind == IR_STORE) {
      keep = (s->acc.tensor == f->t) == keep_t;
      if (keep) {
        *any = true;
        mark_reads(f, s->acc.value);
        for (int i = 0; i < s->acc.nidx; i++) mark_reads(f, s->acc.idx[i]);
      }
    } else if (s->kind == IR_LOOP) {
      keep = (s->loop.body = keep_stores(f, s->loop.body, keep_t, any)) != NULL;
    } else if (s->kind == IR_IF) {
      keep = (s->ifs.then = keep_stores(f, s->ifs.then, keep_t, any)) != NULL;
    }
    if (keep) ir_append(&out, s);
  }
  return out;
}

/* Whether list `l` holds a store or the definition of a needed local. */
static bool matters(const Fission *f, const IrNode *l) {
  for (const IrNode *s = l; s; s = s->next) {
    if (s->kind == IR_STORE) return true;
    if (s->kind == IR_LET && f->need[s->let.var->id]) return true;
    if (s->kind == IR_SET && f->need[s->set.var->id]) return true;
    if (s->kind == IR_LOOP && matters(f, s->loop.body)) return true;
    if (s->kind == IR_IF && matters(f, s->ifs.then)) return true;
  }
  return false;
}

/* Pass 2 (to a fixed point: f->more): the locals needed are also those
 * read by the definitions of needed locals and by the guards around what
 * matters. */
static void close_needs(Fission *f, const IrNode *l) {
  for (const IrNode *s = l; s; s = s->next) {
    if (s->kind == IR_LET && f->need[s->let.var->id]) mark_reads(f, s->let.init);
    if (s->kind == IR_SET && f->need[s->set.var->id]) mark_reads(f, s->set.value);
    if (s->kind == IR_IF && matters(f, s->ifs.then)) mark_reads(f, s->ifs.cond);
    if (s->kind == IR_LOOP) close_needs(f, s->loop.body);
    if (s->kind == IR_IF) close_needs(f, s->ifs.then);
  }
}

/* Pass 3: drops the definitions of locals nobody needs, and the loops and
 * guards left empty. */
static IrNode *drop_unneeded(Fission *f, IrNode *l) {
  IrNode *out = NULL;
  for (IrNode *s = l, *next; s; s = next) {
    next = s->next;
    s->next = NULL;
    bool keep = true;
    if (s->kind == IR_LET) keep = f->need[s->let.var->id];
    else if (s->kind == IR_SET) keep = f->need[s->set.var->id];
    else if (s->kind == IR_LOOP) keep = (s->loop.body = drop_unneeded(f, s->loop.body)) != NULL;
    else if (s->kind == IR_IF) keep = (s->ifs.then = drop_unneeded(f, s->ifs.then)) != NULL;
    if (keep) ir_append(&out, s);
  }
  return out;
}

/* The part of `stage` (a copy of it) that stores into T (keep_t) or the
 * rest; NULL when that part is empty. */
static IrNode *part(Fission *f, const IrNode *stage, bool keep_t) {
  memset(f->need, 0, sizeof(bool) * (size_t)f->op->nvars);
  bool any = false;
  IrNode *c = keep_stores(f, ir_clone(f->a, stage), keep_t, &any);
  if (!any) return NULL;
  do {
    f->more = false;
    close_needs(f, c);
  } while (f->more);
  return drop_unneeded(f, c);
}

/* ---- the new stage's own variables ---- */

/* Gives every loop of `stage` a fresh variable of the same name and kind:
 * the part shares no loop with the rest (locals live in one stage's
 * kernel, so they may be shared). */
static void renew(Fission *f, IrNode *s) {
  if (s->kind == IR_LOOP) {
    IrVar *old = s->loop.var;
    IrVar *v = pass_new_var(f->op, f->a, old->name, old->kind, old->loc);
    v->dtype = old->dtype;
    pass_subst_stmts(f->a, s->loop.body, old, ir_var(f->a, s->loc, v));
    s->loop.var = v;
    for (IrNode *b = s->loop.body; b; b = b->next) renew(f, b);
  } else if (s->kind == IR_IF) {
    for (IrNode *b = s->ifs.then; b; b = b->next) renew(f, b);
  }
}

/* ---- legality ---- */

/* The first tensor a part reads that `written` (by tensor id) marks; and
 * whether it reads `t`. */
typedef struct Touch {
  const IrTensor *t;
  const bool *written;
  bool load;
  const IrTensor *hit;
} Touch;

static bool touches(const IrNode *n, void *ctx) {
  Touch *x = ctx;
  if (n->kind != IR_LOAD) return false;
  if (x->t && n->acc.tensor == x->t) x->load = true;
  if (x->written && x->written[n->acc.tensor->id] && !x->hit) x->hit = n->acc.tensor;
  return false;
}

int pass_fission(IrOp *op, const char *tensor, Loc loc, Arena *a, Diag *d) {
  IrTensor *t;
  int rc = pass_tensor_stage(op, "fission", tensor, "split it", &t, loc, d);
  if (rc != 0) return rc;
  IrNode *stage = op->body;
  Touch x = {.t = t};
  IrNode one = *stage;
  one.next = NULL;
  ir_any(&one, touches, &x);
  if (x.load) {
    ir_error(d, loc, "fission: the stage reads '%s' as well as storing into it; its "
             "stores cannot move to a stage of their own", tensor);
    return -1;
  }
  Fission f = {.a = a, .op = op, .t = t};
  f.need = IR_NEW_ARRAY(a, bool, op->nvars + 1);
  IrNode *mine = part(&f, stage, true);
  IrNode *rest = part(&f, stage, false);
  if (!rest) {
    ir_error(d, loc, "fission: the stage stores into '%s' and nothing else; there is "
             "nothing to split it from", tensor);
    return -1;
  }
  /* the moved part runs first: it must read nothing the rest writes */
  bool *written = IR_NEW_ARRAY(a, bool, op->ntensors + 1);
  pass_stored_tensors(rest, written);
  Touch y = {.written = written};
  ir_any(mine, touches, &y);
  if (y.hit) {
    ir_error(d, loc, "fission: the stores into '%s' read '%s', which the rest of the "
             "stage writes; moved before it, they would read it too early", tensor,
             y.hit->name);
    return -1;
  }
  renew(&f, mine);
  pass_inline_locals(op, &mine, NULL, a); /* every local assigned once (inline.c) */
  mine->next = rest;
  op->body = mine;
  return 0;
}
