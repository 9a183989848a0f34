/* graph/shape.c: the shape of an IR tensor on a graph.
 *
 * A tensor's first dimension is its domain's size on the graph (|V| for
 * src and dst, |E| for edges, the rows of a neighbour-group table for
 * groups(G)); the rest are its feature extents, bound by the run. The
 * interpreter, the executor and the API all size buffers by this one rule.
 */
#include "graph/graph.h"

int graph_tensor_shape(const IrTensor *t, const Graph *g, const IrExtents *ext,
                    int64_t shape[IR_MAX_IDX]) {
  int r = 0;
  switch (t->domain) {
  case IR_DOM_SRC:
  case IR_DOM_DST: shape[r++] = g ? g->nv : 0; break;
  case IR_DOM_EDGE: shape[r++] = g ? g->ne : 0; break;
  case IR_DOM_GROUPS: {
    /* a row per row of the group table of G (passes/segment.c); the
     * number of rows does not depend on the interleaving */
    const GraphGroups *tab = NULL;
    if (g) {
      Diag quiet;
      ir_diag_init(&quiet, NULL);
      tab = graph_groups(g, t->group, 0, 0, 0, &quiet);
      ir_diag_free(&quiet);
    }
    shape[r++] = !g ? 0 : tab ? tab->n : -1; /* -1: no table, as unbound */
    break;
  }
  case IR_DOM_DENSE:
  case IR_DOM_COUNT: break;
  }
  for (int i = 0; i < t->ndims && i < IR_MAX_DIMS; i++) {
    const IrSym *s = t->dims[i].sym;
    if (!s) shape[r++] = t->dims[i].value;
    else if (ext && s->id >= 0 && s->id < ext->n) shape[r++] = ext->value[s->id];
    else shape[r++] = -1; /* unbound */
  }
  return r;
}

int64_t graph_tensor_numel(const IrTensor *t, const Graph *g,
                        const IrExtents *ext) {
  int64_t shape[IR_MAX_IDX];
  int r = graph_tensor_shape(t, g, ext, shape);
  int64_t n = 1;
  for (int i = 0; i < r; i++) {
    if (shape[i] < 0) return -1;
    if (__builtin_mul_overflow(n, shape[i], &n)) return -1;
  }
  return n;
}
