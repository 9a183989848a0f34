/* grad/traffic.c: what an operator moves through tensors on the edges
 * (grad/grad.h).
 *
 * The fused backward of GAT's attention (fuse.c, docs/autodiff.md) is
 * meant to write no per-edge intermediate; the separate operators
 * (gat_scores, edge_softmax_heads, gat_aggregate) and their gradients pass
 * scores, weights and their adjoints through tensors of |E| x H. This
 * counts them: for every tensor on the edges, the stages (top-level loop
 * nests, each a kernel or more on the GPU) that read it and those that
 * write it. A stage is counted as one pass over the whole tensor whatever
 * its loops do inside (a value re-read per feature stays in a register or
 * the cache; that is the schedule's business), so the count is the least
 * traffic the operator's structure implies: passes x |E| x the tensor's
 * other extents x its element size.
 */
#include <string.h>

#include "grad/grad.h"

typedef struct Touch {
  const IrTensor *t;
  bool read, write;
} Touch;

static bool touch(const IrNode *n, void *p) {
  Touch *c = p;
  if ((n->kind == IR_LOAD || n->kind == IR_STORE) && n->acc.tensor == c->t) {
    if (n->kind == IR_LOAD) c->read = true;
    else c->write = true;
  }
  return false;
}

int grad_edge_traffic(const IrOp *op, GradEdgeTraffic *out, int max) {
  int n = 0;
  for (int i = 0; i < op->ntensors; i++) {
    const IrTensor *t = op->tensors[i];
    if (t->domain != IR_DOM_EDGE) continue;
    GradEdgeTraffic tr = {.t = t};
    for (const IrNode *s = op->body; s; s = s->next) {
      IrNode one = *s; /* the stage alone */
      one.next = NULL;
      Touch c = {t, false, false};
      ir_any(&one, touch, &c);
      tr.reads += c.read;
      tr.writes += c.write;
    }
    /* an input or output no stage touches is still a parameter: the
     * caller passes it, nothing moves */
    if (tr.reads + tr.writes == 0) continue;
    if (n < max) out[n] = tr;
    n++;
  }
  return n;
}
