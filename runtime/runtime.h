/* runtime/runtime.h: graphs, host arrays and the GPU runtime.
 *
 * The one header of runtime/, sectioned by the file that implements each
 * part. Host-side graphs (read from files or generated) come first: the
 * interpreter and every tool use them. The CUDA driver layer follows; it is
 * opened with dlopen so that a machine with no GPU runs every other tool.
 */
#ifndef GOP_RUNTIME_H
#define GOP_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../ir/ir.h"

/* ---------------------------------------------------------------------------
 * graph.c, graph_read.c, graph_gen.c: host graphs.
 *
 * A graph has |V| vertices 0..nv-1 and |E| arcs; edge e goes from src[e] to
 * dst[e]. Edge ids are the order of the input (file order, after expanding
 * symmetric Matrix Market entries: (i,j) then (j,i) right after it, a
 * diagonal entry once). Edge tensors follow edge ids. Three formats are
 * built once at load, each keeping the edge ids:
 *   COO            src[e], dst[e]
 *   CSR by dst     in_ptr[v]..in_ptr[v+1]: the in-edges of v, in edge-id
 *                  order; in_eid[k] is the edge id, in_src[k] its source
 *   CSC by src     out_ptr[u]..out_ptr[u+1]: the out-edges of u, in edge-id
 *                  order; out_eid[k], out_dst[k] likewise
 * Indices are int32: graphs with more than INT32_MAX vertices or edges are
 * refused with a clear message.
 */
typedef struct RtGraphStats {
  double deg_mean;     /* |E| / |V| */
  double in_deg_std;   /* population std of the in-degree */
  int32_t in_deg_max, out_deg_max;
  int32_t isolated;    /* vertices with neither in- nor out-edges */
  int64_t self_loops;
  double aes;          /* GNNAdvisor's average edge span: mean |src - dst| */
} RtGraphStats;

typedef struct RtGraph {
  char *name; /* the file or generator spec it came from */
  int32_t nv;
  int32_t ne;
  int32_t *src, *dst;                  /* COO, by edge id */
  int32_t *in_ptr, *in_eid, *in_src;   /* CSR by destination */
  int32_t *out_ptr, *out_eid, *out_dst; /* CSC by source */
  RtGraphStats stats;
} RtGraph;

/* Builds a graph from arcs in edge-id order (copies them). Returns NULL and
 * reports through `d` (at `loc`) if an index is out of range or a size
 * exceeds int32. */
RtGraph *rt_graph_from_coo(int64_t nv, int64_t ne, const int64_t *src,
                           const int64_t *dst, const char *name, Diag *d,
                           Loc loc);
void rt_graph_free(RtGraph *g);
/* Prints |V|, |E|, degree statistics, isolated vertices and AES. */
void rt_graph_print_stats(FILE *out, const RtGraph *g);

/* Reads a Matrix Market coordinate file (pattern/real/integer,
 * general/symmetric) or a SNAP edge list, plain or gzip'ed (by content, not
 * name). Malformed input is reported as `file:line: error: reason` and
 * gives NULL; nothing is ever half-built. */
RtGraph *rt_graph_read(const char *path, Diag *d);

/* Generates `rmat:SCALE:EDGEFACTOR[:SEED]` (Graph500's R-MAT, a=.57 b=.19
 * c=.19 d=.05, vertex labels permuted, self-loops and duplicate arcs
 * removed, arcs sorted by (src, dst)) or `grid:WxH` (a W by H 4-neighbour
 * mesh, both directions). Returns NULL with a message on a bad spec. */
RtGraph *rt_graph_generate(const char *spec, Diag *d);

/* A spec that starts with `rmat:` or `grid:` is generated, anything else is
 * read as a file. */
RtGraph *rt_graph_open(const char *spec, Diag *d);

/* ---------------------------------------------------------------------------
 * npy.c: NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order).
 */
typedef struct RtArray {
  IrDType dtype; /* f32, f64, i32 or i64 */
  int ndim;
  int64_t shape[8];
  void *data;    /* malloc'ed; rt_array_free releases it */
} RtArray;

int64_t rt_array_numel(const RtArray *a);
void rt_array_free(RtArray *a);
/* Reads `path`; returns 0, or -1 after reporting the file and the reason
 * (bad magic, unsupported dtype, Fortran order, truncated data ...). */
int rt_npy_read(const char *path, RtArray *out, Diag *d);
/* Writes `a` to `path` through a temporary file renamed into place, so an
 * error never leaves a truncated file. Returns 0 or -1 after reporting. */
int rt_npy_write(const char *path, const RtArray *a, Diag *d);

#endif
