/* ir/walk.c: whether any node of a piece of IR answers a question.
 *
 * The passes and the code generator ask the same few questions of a tree
 * (does it load anything, does it read this tensor); ir_any walks it once
 * for all of them, so that a new node kind is added to one walk.
 */
#include "ir.h"

bool ir_any(const IrNode *n, bool (*hit)(const IrNode *, void *), void *ctx) {
  /* Statements chain through `next`; an expression is a single tree. */
  for (; n; n = n->kind <= IR_IF ? n->next : NULL) {
    if (hit(n, ctx)) return true;
    switch (n->kind) {
    case IR_LOOP:
      if (ir_any(n->loop.extent, hit, ctx) || ir_any(n->loop.of, hit, ctx) ||
          ir_any(n->loop.body, hit, ctx))
        return true;
      break;
    case IR_IF:
      if (ir_any(n->ifs.cond, hit, ctx) || ir_any(n->ifs.then, hit, ctx)) return true;
      break;
    case IR_STORE: case IR_LOAD:
      for (int i = 0; i < n->acc.nidx; i++)
        if (ir_any(n->acc.idx[i], hit, ctx)) return true;
      if (n->kind == IR_STORE && ir_any(n->acc.value, hit, ctx)) return true;
      break;
    case IR_LET: if (ir_any(n->let.init, hit, ctx)) return true; break;
    case IR_SET: if (ir_any(n->set.value, hit, ctx)) return true; break;
    case IR_BIN:
      if (ir_any(n->bin.a, hit, ctx) || ir_any(n->bin.b, hit, ctx)) return true;
      break;
    case IR_UN: if (ir_any(n->un.a, hit, ctx)) return true; break;
    case IR_CALL:
      for (int i = 0; i < n->call.nargs; i++)
        if (ir_any(n->call.args[i], hit, ctx)) return true;
      break;
    case IR_SRC: case IR_DST: case IR_INDEG: case IR_OUTDEG: case IR_OWNS:
      if (ir_any(n->endpoint.e, hit, ctx)) return true;
      break;
    default: break;
    }
  }
  return false;
}

void ir_each_operand(IrNode *e, void (*fn)(IrNode **slot, void *ctx), void *ctx) {
  switch (e->kind) {
  case IR_LOAD:
    for (int i = 0; i < e->acc.nidx; i++) fn(&e->acc.idx[i], ctx);
    break;
  case IR_BIN:
    fn(&e->bin.a, ctx);
    fn(&e->bin.b, ctx);
    break;
  case IR_UN: fn(&e->un.a, ctx); break;
  case IR_CALL:
    for (int i = 0; i < e->call.nargs; i++) fn(&e->call.args[i], ctx);
    break;
  case IR_SRC: case IR_DST: case IR_INDEG: case IR_OUTDEG: case IR_OWNS:
    fn(&e->endpoint.e, ctx);
    break;
  default: break;
  }
}

static bool is_load(const IrNode *n, void *ctx) {
  (void)ctx;
  return n->kind == IR_LOAD;
}

static bool is_load_of(const IrNode *n, void *t) {
  return n->kind == IR_LOAD && n->acc.tensor == t;
}

/* A use of v, or the loop or local that declares it. */
static bool is_var(const IrNode *n, void *v) {
  switch (n->kind) {
  case IR_VAR: return n->var == v;
  case IR_LOOP: return n->loop.var == v;
  case IR_LET: return n->let.var == v;
  case IR_SET: return n->set.var == v;
  default: return false;
  }
}

bool ir_has_load(const IrNode *n) { return ir_any(n, is_load, NULL); }

bool ir_uses_var(const IrNode *n, const IrVar *v) { return ir_any(n, is_var, (void *)v); }

bool ir_reads_tensor(const IrNode *n, const IrTensor *t) {
  return ir_any(n, is_load_of, (void *)t);
}
