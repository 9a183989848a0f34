/* grad/fuse.c: gradient stages that share their edge loops become one pass
 * (grad/grad.h).
 *
 * The reverse sweep emits one stage per forward stage and adjoint class,
 * so the gradient of a multi-stage operator (GAT's attention) iterates the
 * same out-edges several times, each pass adding its part to dX[u]. Where
 * the stages allow it they are merged into one loop nest whose edge loop
 * does all the parts (fuseGNN's fused backward): every edge is visited
 * once, and no per-edge intermediate is written between the parts.
 *
 * Stage B merges into stage A (same vertex loop kind, same edge loop over
 * that vertex, nothing else at the vertex level) when neither reads what
 * the other writes, no stage between them writes what B reads or touches
 * what B writes, and the tensors both write are `+=` targets of both. B is
 * first sunk into a later stage (the usual case: a source-ordered part
 * computed early waits for the adjoints later parts need), then hoisted
 * into an earlier one.
 */
#include <stdlib.h>
#include <string.h>

#include "grad/grad.h"

enum { MAXT = 256 };

/* What a stage reads and writes, by tensor id; w_add: written, all by +=. */
typedef struct Effects {
  bool r[MAXT], w[MAXT], w_add[MAXT], w_other[MAXT];
} Effects;

static bool collect(const IrNode *n, void *p) {
  Effects *e = p;
  if (n->kind == IR_LOAD && n->acc.tensor->id < MAXT) e->r[n->acc.tensor->id] = true;
  if (n->kind == IR_STORE && n->acc.tensor->id < MAXT) {
    int id = n->acc.tensor->id;
    e->w[id] = true;
    if (n->acc.red == IR_RED_ADD) e->w_add[id] = true;
    else e->w_other[id] = true;
  }
  return false;
}

static void effects(const IrNode *stage, Effects *e) {
  memset(e, 0, sizeof *e);
  IrNode one = *stage;
  one.next = NULL;
  ir_any(&one, collect, e);
}

/* The stage's edge loop when it is `for x in V { for e in E(x) { ... } }`. */
static IrNode *edge_loop(IrNode *s) {
  if (s->kind != IR_LOOP || (s->loop.kind != IR_LOOP_SRC_V && s->loop.kind != IR_LOOP_DST_V))
    return NULL;
  IrNode *in = s->loop.body;
  IrLoopKind want = s->loop.kind == IR_LOOP_SRC_V ? IR_LOOP_OUT_EDGES : IR_LOOP_IN_EDGES;
  if (!in || in->next || in->kind != IR_LOOP || in->loop.kind != want || !in->loop.of ||
      in->loop.of->kind != IR_VAR || in->loop.of->var != s->loop.var)
    return NULL;
  return in;
}

static bool same_shape(IrNode *a, IrNode *b) {
  return edge_loop(a) && edge_loop(b) && a->loop.kind == b->loop.kind;
}

/* No max=, min=, mean= or plain stores between merged parts: their
 * per-stage finalisation would change. */
static bool mergeable(const Effects *e, int n) {
  for (int i = 0; i < n; i++)
    if (e->w_other[i]) return false;
  return true;
}

/* A and B may become one nest (their relative order kept). */
static bool compatible(const Effects *a, const Effects *b, int n) {
  for (int i = 0; i < n; i++) {
    if ((a->w[i] && b->r[i]) || (b->w[i] && a->r[i])) return false;
    if (a->w[i] && b->w[i] && !(a->w_add[i] && b->w_add[i])) return false;
  }
  return true;
}

/* B can move past C (either direction). */
static bool commutes(const Effects *b, const Effects *c, int n) {
  for (int i = 0; i < n; i++)
    if ((c->w[i] && (b->r[i] || b->w[i])) || (b->w[i] && c->r[i])) return false;
  return true;
}

typedef struct Retarget {
  const IrVar *from[2];
  IrVar *to[2];
} Retarget;

static bool retarget(const IrNode *n, void *p) {
  Retarget *r = p;
  if (n->kind == IR_VAR)
    for (int i = 0; i < 2; i++)
      if (n->var == r->from[i]) ((IrNode *)n)->var = r->to[i];
  return false;
}

/* Names of the locals declared in a tree. */
typedef struct Names {
  const char **name;
  int n, cap;
  IrVar **var; /* collect_lets: the variables themselves */
} Names;

static bool collect_lets(const IrNode *n, void *p) {
  Names *ns = p;
  if (n->kind != IR_LET || ns->n == ns->cap) return false;
  ns->name[ns->n] = n->let.var->name;
  if (ns->var) ns->var[ns->n] = n->let.var;
  ns->n++;
  return false;
}

static bool taken(const Names *ns, const IrOp *op, const char *name) {
  for (int i = 0; i < ns->n; i++)
    if (!strcmp(ns->name[i], name)) return true;
  return ir_op_find_tensor(op, name) != NULL;
}

/* B's locals get names A's do not use: the merged edge body is one block,
 * where a name may be declared once. */
static void rename_locals(const IrOp *op, IrNode *ea, IrNode *eb, Arena *arena) {
  enum { CAP = 256 };
  const char *an[CAP], *bn[CAP];
  IrVar *bv[CAP];
  Names na = {an, 0, CAP, NULL}, nb = {bn, 0, CAP, bv};
  ir_any(ea->loop.body, collect_lets, &na);
  ir_any(eb->loop.body, collect_lets, &nb);
  for (int i = 0; i < nb.n; i++) {
    if (!taken(&na, op, bv[i]->name)) continue;
    const char *fresh = bv[i]->name;
    for (int k = 2; taken(&na, op, fresh) || taken(&nb, op, fresh); k++)
      fresh = ir_sprintf(arena, "%s_%d", bv[i]->name, k);
    bv[i]->name = fresh;
    bn[i] = fresh;
  }
}

/* Appends (or prepends) B's edge body to A's, B's variables renamed. */
static void merge_into(const IrOp *op, IrNode *a, IrNode *b, bool b_first, Arena *arena) {
  IrNode *ea = edge_loop(a), *eb = edge_loop(b);
  rename_locals(op, ea, eb, arena);
  Retarget r = {{b->loop.var, eb->loop.var}, {a->loop.var, ea->loop.var}};
  ir_any(eb->loop.body, retarget, &r);
  if (b_first) {
    IrNode *tail = eb->loop.body;
    while (tail->next) tail = tail->next;
    tail->next = ea->loop.body;
    ea->loop.body = eb->loop.body;
  } else {
    ir_append(&ea->loop.body, eb->loop.body);
  }
}

int grad_fuse_stages(IrOp *op, Arena *a) {
  int n = 0;
  for (IrNode *s = op->body; s; s = s->next) n++;
  if (n < 2 || op->ntensors > MAXT) return 0;
  IrNode **st = calloc((size_t)n, sizeof *st);
  Effects *ef = calloc((size_t)n, sizeof *ef);
  if (!st || !ef) {
    free(st);
    free(ef);
    return 0;
  }
  n = 0;
  for (IrNode *s = op->body; s; s = s->next) st[n++] = s;
  for (int i = 0; i < n; i++) effects(st[i], &ef[i]);
  int nt = op->ntensors < MAXT ? op->ntensors : MAXT;
  int merges = 0;
  /* sink: B into the nearest later stage of its shape it may reach */
  for (int b = n - 2; b >= 0; b--) {
    if (!st[b] || !edge_loop(st[b]) || !mergeable(&ef[b], nt)) continue;
    for (int c = b + 1; c < n; c++) {
      if (!st[c]) continue;
      if (same_shape(st[b], st[c]) && mergeable(&ef[c], nt) &&
          compatible(&ef[b], &ef[c], nt)) {
        merge_into(op, st[c], st[b], true, a);
        effects(st[c], &ef[c]);
        st[b] = NULL;
        merges++;
        break;
      }
      if (!commutes(&ef[b], &ef[c], nt)) break;
    }
  }
  /* hoist: B into the nearest earlier stage of its shape */
  for (int b = 1; b < n; b++) {
    if (!st[b] || !edge_loop(st[b]) || !mergeable(&ef[b], nt)) continue;
    for (int c = b - 1; c >= 0; c--) {
      if (!st[c]) continue;
      if (same_shape(st[b], st[c]) && mergeable(&ef[c], nt) &&
          compatible(&ef[c], &ef[b], nt)) {
        merge_into(op, st[c], st[b], false, a);
        effects(st[c], &ef[c]);
        st[b] = NULL;
        merges++;
        break;
      }
      if (!commutes(&ef[b], &ef[c], nt)) break;
    }
  }
  IrNode *head = NULL, **tail = &head;
  for (int i = 0; i < n; i++)
    if (st[i]) {
      *tail = st[i];
      tail = &st[i]->next;
    }
  *tail = NULL;
  op->body = head;
  free(st);
  free(ef);
  return merges;
}
