/* graph/graph.h: host graphs and host arrays.
 *
 * The room below the GPU runtime: what a graph is on the host (COO, CSR by
 * destination, CSC by source, degree statistics), how it is read from files
 * (Matrix Market, SNAP, gzip) or generated (R-MAT, grids), the derived
 * tables a schedule may ask for (GNNAdvisor's neighbour groups), the shape
 * of an IR tensor on a graph, and NumPy .npy arrays. Sectioned by the file
 * that implements each part.
 *
 * Uses: ir/ (Diag and locations, IR tensors' domains, dtypes). Must not
 * reach into the GPU runtime, the tuner, the API or the tools: everything
 * here runs on a machine with no GPU, and the interpreter (interp/) and
 * the GPU runtime (runtime/) both stand on it. Something derived from a
 * graph outside this room (the GPU runtime's device copy) hangs a hook on
 * the graph (Graph.on_free) rather than being called from here by name.
 */
#ifndef GOP_GRAPH_H
#define GOP_GRAPH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ir/ir.h"

/* ---------------------------------------------------------------------------
 * graph.c, read.c, gen.c: host graphs.
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
 * A reordered graph (reorder.c) also keeps the maps back to the numbering
 * it was made from (Graph.perm).
 * Vertex ids are int32 (graphs with more than INT32_MAX vertices are
 * refused with a clear message); edge counts, edge ids and CSR/CSC offsets
 * are int64, so a graph may hold more than 2^31 edges (docs/index64.md:
 * the GPU then runs kernels compiled for 64-bit indices).
 */
typedef struct GraphStats {
  double deg_mean;     /* |E| / |V| */
  double in_deg_std;   /* population std of the in-degree */
  int64_t in_deg_max, out_deg_max;
  int32_t isolated;    /* vertices with neither in- nor out-edges */
  int64_t self_loops;
  double aes;          /* GNNAdvisor's average edge span: mean |src - dst| */
  double locality;     /* graph_block_locality (reorder.c) */
} GraphStats;

/* How a reordered graph relates to the graph it came from (the first one,
 * when a reordered graph is reordered again). */
typedef struct GraphPerm {
  char method[40];     /* "rcm", "metis:166", "auto=community" ... */
  int32_t *new_of_old; /* |V|: vertex v of the original is new_of_old[v] */
  int32_t *old_of_new; /* |V|: its inverse */
  int64_t *edge_old;   /* |E|: edge e here is edge edge_old[e] there */
  double seconds;      /* computing the order and rebuilding the graph */
} GraphPerm;

typedef struct Graph {
  char *name; /* the file or generator spec it came from */
  int32_t nv;
  int64_t ne;
  int32_t *src, *dst;                   /* COO, by edge id */
  int64_t *in_ptr, *in_eid;             /* CSR by destination: offsets, */
  int32_t *in_src;                      /* edge ids and sources */
  int64_t *out_ptr, *out_eid;           /* CSC by source: offsets, */
  int32_t *out_dst;                     /* edge ids and destinations */
  GraphStats stats;
  struct GraphGroups *groups; /* neighbour-group tables built so far
                              (graph/groups.c), freed with the graph */
  int32_t *community; /* the community order, once a table asked for it
                         (groups.c; `community_tried` when it could not be
                         had); a memo like `groups` */
  bool community_tried;
  struct GraphPanels *panels; /* panel pair tables built so far
                                (graph/panels.c), freed with the graph; a
                                memo like `groups` */
  /* Set by a room above that caches something derived from the graph
   * (runtime/exec.c: its device copy); graph_free calls it first. Like
   * `groups`, set through a const pointer: a memo, not the graph's value. */
  void (*on_free)(const struct Graph *g);
  GraphPerm *perm; /* NULL: the graph in its own numbering */
  /* Edge ids are CSR positions: in_eid[k] == k for every k (the arcs came
   * sorted by destination, as in every reordered graph). Kernels compiled
   * for such a graph take an in-edge's id from its position and read no
   * in_eid (CgLayout.csr_edges, docs/gpu-ir.md). */
  bool csr_edges;
  /* Run with kernels of 64-bit indices although 32 bits would do: set on a
   * small graph that stands in for one past 2^31 edges (the tuner's proxy
   * graph, tune/tune.c), whose candidates are compiled 64-bit. */
  bool index64;
  /* A graph read from a binary .gopg file (gopg.c) keeps its arrays in the
   * file's memory map: graph_free unmaps it instead of freeing them. */
  void *map;
  size_t map_bytes;
  /* Built on the device from a framework's edge_index (api/device.c,
   * gop_graph_from_device): the host holds the sizes and statistics only,
   * every array above is NULL, and the device copy (the caller's memory)
   * is the graph. What reads the host arrays (the interpreter, group
   * tables, reordering, partitions, writers) refuses such a graph. */
  bool device_only;
  /* The reversed graph, once an operator scheduled with transpose() asked
   * for it (graph_transposed); a memo like `groups`, freed with the graph. */
  struct Graph *transposed;
} Graph;

/* The reversed graph of `g`: every arc u -> v of g as v -> u, with the same
 * edge id, so g's CSC by source is its CSR by destination. What an
 * operator scheduled with transpose() runs on (passes/transpose.c). Built
 * once and kept on g (Graph.transposed, freed with it); NULL after
 * reporting at `loc` when out of memory, or when g was built on the device
 * (no host arrays to reverse). */
const Graph *graph_transposed(const Graph *g, Diag *d, Loc loc);

/* The most edges a graph may hold (vertex ids stay int32); the host-memory
 * limit usually binds long before. */
#define GRAPH_MAX_EDGES ((int64_t)1 << 34)

/* Builds a graph from arcs in edge-id order (copies them; arrays may be NULL
 * when ne is 0; name NULL gives "<graph>"). Returns NULL and reports through
 * `d` (at `loc`) if an index is out of range or a size exceeds int32. */
/* Whether a graph of nv vertices and ne edges (plus `extra` bytes of work
 * space) fits the host-memory limit (GOP_MAX_HOST_BYTES, default the
 * machine's memory); reports at `loc` otherwise. Checked before anything
 * is allocated for a graph a header or generator spec declares. */
bool graph_size_ok(int64_t nv, int64_t ne, int64_t extra, Diag *d, Loc loc);
Graph *graph_from_coo(int64_t nv, int64_t ne, const int64_t *src,
                           const int64_t *dst, const char *name, Diag *d,
                           Loc loc);
/* The same from int32 arcs that the caller hands over (freed here, on
 * failure too): how the generators and the readers build, with no copy. */
Graph *graph_from_arcs(int64_t nv, int64_t ne, int32_t *src, int32_t *dst,
                       const char *name, Diag *d, Loc loc);
void graph_free(Graph *g); /* NULL is fine */
/* Fills g->stats from the built arrays (for builders that fill a Graph's
 * arrays themselves, like the ring generator). */
void graph_compute_stats(Graph *g);
/* Prints |V|, |E|, degree statistics, isolated vertices and AES on one
 * line. */
void graph_print_stats(FILE *out, const Graph *g);

/* Reads a Matrix Market coordinate file (pattern/real/integer,
 * general/symmetric) or a SNAP edge list, plain or gzip'ed (by content, not
 * name): a first non-blank line starting with `%` must be a Matrix Market
 * header, anything else is read as SNAP (`#` comments, `src dst` 0-based).
 * Malformed input is reported as `file:line: error: reason` (`file: error:`
 * for what concerns the whole file: unreadable, empty, corrupt gzip) and
 * gives NULL; nothing is ever half-built. A file named *.gopg, or starting
 * with the .gopg magic, is read as a binary graph (graph_read_gopg). Text
 * is parsed by all cores (par.c), with the same result and messages as one
 * line after another. */
Graph *graph_read(const char *path, Diag *d);
/* The bytes of text graph_read parses at once on all cores (0: its
 * default, 32 MiB); tests set a small one to cross block ends. */
void graph_read_set_block(size_t bytes);
/* The parts the last graph_read of this thread parsed on all cores (summed
 * over its blocks); 0 when it read line by line (one thread, or a file the
 * parallel pass gave back to the serial one). */
int64_t graph_read_parts(void);

/* Generates `rmat:SCALE:EDGEFACTOR[:SEED]` (Graph500's R-MAT, a=.57 b=.19
 * c=.19 d=.05, vertex labels permuted, self-loops and duplicate arcs
 * removed, arcs sorted by (src, dst)), `grid:WxH` (a W by H 4-neighbour
 * mesh, both directions), `ring:N:D` (N vertices, u -> u+1 .. u+D mod N,
 * edge id u*D + j-1 for u -> u+j; 1 <= D < N; written straight into the
 * three formats by several threads: the way to a graph of billions of
 * edges), `powerlaw:N:D:G[:SEED]` (Chung-Lu: N x D arcs sampled with
 * weights (i+1)^(-1/(G/10 - 1)), labels permuted, G in 21..50) or
 * `community:N:D:K:MIX[:SEED]` (K communities of consecutive ids, N x D
 * arcs from uniform sources, MIX percent of them to any vertex, the rest
 * within the source's community); the sampled ones drop self-loops and
 * repeats, arcs sorted by (src, dst). Returns NULL with a message on a bad
 * spec; the message names the spec and has no location. */
Graph *graph_generate(const char *spec, Diag *d);
/* Whether `spec` names a generator (starts with one of their names). */
bool graph_is_generator(const char *spec);

/* A spec that graph_is_generator is generated, anything else is read as a
 * file. */
Graph *graph_open(const char *spec, Diag *d);

/* ---------------------------------------------------------------------------
 * par.c: the host build on all cores (docs/graph-format.md). Results never
 * depend on the thread count.
 */
#define GRAPH_MAX_THREADS 64
/* The threads a build uses: GOP_THREADS when set, else what
 * graph_set_threads set (0: automatic), else the cores online. */
int graph_threads(void);
void graph_set_threads(int n);
/* How many parts to cut `items` into: the thread count, but no part
 * smaller than min_items, and at least 1. */
int graph_par_parts(int64_t items, int64_t min_items);
typedef void (*GraphParFn)(void *ctx, int part, int nparts);
/* Runs fn(ctx, p, nparts) for every p in 0..nparts-1 on up to
 * graph_threads() threads, and returns when all have run. */
void graph_parallel(int nparts, GraphParFn fn, void *ctx);

/* ---------------------------------------------------------------------------
 * gopg.c: the binary graph format, read memory-mapped
 * (docs/graph-format.md).
 */
/* Whether the file starts with the .gopg magic (false when unreadable). */
bool graph_file_is_gopg(const char *path);
/* Writes g (COO, CSR, CSC, statistics, name) through a temporary file
 * renamed into place. 0, or -1 after reporting. */
int graph_write_gopg(const Graph *g, const char *path, Diag *d);
/* Maps a .gopg file; NULL after reporting `path: error: what is wrong`
 * (truncated, not a .gopg file, another version, corrupted). */
Graph *graph_read_gopg(const char *path, Diag *d);

/* ---------------------------------------------------------------------------
 * groups.c: GNNAdvisor's neighbour-group tables (docs/scheduling.md).
 */
/* GraphGroups.order (and .asked, which may also be AUTO) */
enum { GRAPH_GROUPS_DST, GRAPH_GROUPS_COMMUNITY, GRAPH_GROUPS_AUTO };

typedef struct GraphGroups {
  int32_t G;     /* at most G in-edges per row, never two destinations */
  int32_t order, asked; /* the order of destinations the rows come in, and
                           the one asked for (GOP_GROUP_ORDER, by default
                           AUTO: groups.c decides; community may fall back
                           to destination order); interleaved: DST */
  int32_t ilv;   /* interleaving distance, 0: rows in destination order */
  int32_t ncls;  /* interleaved: classes (2..IR_MAX_CLASSES); else 0 */
  int32_t thr;   /* two classes: heavy means in-degree > thr; else 0 */
  int64_t n;     /* rows (at most |E|: past 2^31 on the largest graphs) */
  /* interleaved, by class, heaviest first: its rows, and the least
   * in-degree it takes (an empty class repeats the one before; see
   * graph_groups_class) */
  int64_t cls_rows[IR_MAX_CLASSES];
  int32_t cls_min[IR_MAX_CLASSES];
  /* by row: destination, CSR positions [first, end) of its edges; the
   * positions are int64 like the CSR's (docs/index64.md: the device takes
   * them as int32 in kernels of 32-bit indices, as int64 in 64-bit ones) */
  int32_t *dst;
  int64_t *first, *end;
  int64_t bytes; /* what the three arrays and `unowned` take on the device
                    at 32-bit indices */
  /* by destination v: its rows are vrow[vptr[v] .. vptr[v + 1]), in table
   * order (the second stage of a deterministic segmented reduction,
   * passes/segment.c); |V| + 1 and n entries, seg_bytes together (at 32
   * bits) */
  int64_t *vptr, *vrow;
  int64_t seg_bytes;
  /* the destinations whose rows no group owns (in-degree 0 or > G), in
   * increasing order: what an `unowned(G)` loop visits (the row stages of
   * passes/lower_mean.c); nunowned of them */
  int32_t *unowned;
  int32_t nunowned;
  struct GraphGroups *next;
} GraphGroups;

/* The table of `g` for (G, ilv, ncls, thr): ilv 0 (and ncls, thr 0) is
 * destination order; else ncls classes, 2 to IR_MAX_CLASSES, with a
 * threshold only for two (0: the default one). Built on first use and
 * cached in `g`. NULL after reporting (bad sizes, out of memory). */
const GraphGroups *graph_groups(const Graph *g, int G, int ilv, int ncls,
                                int thr, Diag *d);
/* Whether (G, ilv, ncls, thr) names a table graph_groups can build;
 * false after reporting. */
bool graph_groups_valid(int G, int ilv, int ncls, int thr, Diag *d);
/* The degree threshold a two-class table of `g` uses for `thr` (0: the
 * mean in-degree rounded up, at least 1). */
int32_t graph_groups_threshold(const Graph *g, int thr);
/* The class (0: the heaviest) of a destination of in-degree `deg` in the
 * interleaved table `t`. */
int graph_groups_class(const GraphGroups *t, int64_t deg);
/* Frees every cached table (graph_free calls it). */
void graph_groups_free(Graph *g);

/* ---------------------------------------------------------------------------
 * panels.c: panel pair tables, for panel(g, P) on a neighbour-groups loop.
 */
typedef struct GraphPanels {
  int32_t G, P;    /* at most G pairs per row; P destinations per panel */
  int64_t n;       /* rows */
  int64_t npairs;  /* pairs (at most |E|) */
  int32_t *dst;    /* by row: its panel's first destination (p * P) */
  int64_t *first, *end; /* by row: pair indices [first, end) */
  int32_t *own;    /* by row: 1 when it is its panel's only row */
  int32_t *src;    /* by pair: the source vertex */
  int32_t *mask;   /* by pair: bit s set when destination dst + s has the edge */
  /* by pair, P entries: the CSR position of the edge from src to dst + s;
   * a clear slot repeats the pair's lowest set slot, so every entry is a
   * valid position */
  int64_t *pos;
  /* the destinations of panels with more than one row, in increasing
   * order: several rows add into them, so they are zero-filled first */
  int32_t *unowned;
  int32_t nunowned;
  int64_t bytes;   /* what the arrays take on the device at 32-bit indices */
  /* the rows seen as a group table (G, n, dst, first, end, the unowned
   * list, bytes; the same arrays, not copies), for what sizes a launch or
   * uploads rows alike for both tables (runtime/devgraph.c, exec.c) */
  GraphGroups rows;
  struct GraphPanels *next;
} GraphPanels;

/* The table of `g` for (G, P), P 2..8 and G 1..1048576: built on first use
 * and cached in `g`. NULL after reporting (bad sizes, out of memory, a
 * graph built on the device). */
const GraphPanels *graph_panels(const Graph *g, int G, int P, Diag *d);
/* Pairs per edge for panels of P (npairs / |E|, 1.0 without edges),
 * from the table of G 1048576 (built and cached); -1 after reporting. */
double graph_panel_ratio(const Graph *g, int P, Diag *d);
/* Frees every cached panel table (graph_free calls it). */
void graph_panels_free(Graph *g);

/* ---------------------------------------------------------------------------
 * reorder.c: vertex orders (docs/reordering.md).
 *
 * Methods, as text: none, degree (in-degree descending), rcm (reverse
 * Cuthill-McKee), metis[:PARTS] (METIS k-way parts, default
 * graph_metis_default_parts), community (one level of Louvain, communities
 * by size, BFS within) and auto (GNNAdvisor's AES rule, then community if
 * it gains locality, else none).
 */
typedef enum GraphOrderKind {
  GRAPH_ORDER_NONE,
  GRAPH_ORDER_DEGREE,
  GRAPH_ORDER_RCM,
  GRAPH_ORDER_METIS,
  GRAPH_ORDER_COMMUNITY,
  GRAPH_ORDER_AUTO
} GraphOrderKind;

typedef struct GraphOrderSpec {
  GraphOrderKind kind;
  int32_t parts; /* metis:PARTS; 0: the default */
} GraphOrderSpec;

/* Parses a method into *out (may be NULL): NULL, or what is wrong with it
 * (a constant string: "unknown method: choose ..."). */
const char *graph_order_problem(const char *spec, GraphOrderSpec *out);
/* Whether this build has METIS (the metis order reports "gop was built
 * without METIS" otherwise). */
bool graph_have_metis(void);
/* ceil(|V| / 1024) parts, between 2 and 4096. */
int32_t graph_metis_default_parts(int32_t nv);
/* METIS k-way parts of g's symmetrised graph (seeded: the same parts on
 * every call): part_of[v] in 0..parts-1. -1 after reporting (no METIS in
 * this build, out of memory, METIS failed). */
int graph_metis_parts(const Graph *g, int32_t parts, int32_t *part_of, Diag *d);
/* GNNAdvisor's test: sqrt(AES) > sqrt(|V|) / 100, i.e. AES > |V| / 10^4. */
bool graph_aes_rule(const Graph *g);
/* The community order of g (what `--reorder community` renumbers by):
 * order[i] is the vertex placed i-th. -1 after reporting (no memory, more
 * than 2^30 edges). */
int graph_community_order(const Graph *g, int32_t *order, Diag *d);
/* Whether `after` (a reordering of `before`) is worth keeping: a higher
 * block locality, or the same and a lower AES (what auto asks of the
 * community order). */
bool graph_order_gains(const Graph *before, const Graph *after);
/* The graph renumbered by `method`: a new graph (statistics recomputed)
 * whose perm maps back to g's numbering (or g's original, if g was itself
 * reordered). NULL after reporting (`reordering 'M': problem`, no
 * location: the caller's words name the option or call). */
Graph *graph_reorder(const Graph *g, const char *method, Diag *d);
/* Applies new_of_old (checked to be a permutation): edges become the CSR
 * by new destination, each vertex's in-edges in their old order; `method`
 * names it in the new graph's name and perm. NULL after reporting. */
Graph *graph_permute(const Graph *g, const int32_t *new_of_old, const char *method,
                     Diag *d);
void graph_perm_free(GraphPerm *p); /* graph_free calls it */
/* The fraction of in-edges, walked in CSR order, whose source lies in a
 * 32-vertex block that an in-edge of one of the 32 previous destinations
 * (or of the same one) already gathered: a proxy for L1/L2 reuse of the
 * gathered rows of X (docs/reordering.md). 0 for no edges, -1 on no
 * memory. */
double graph_block_locality(const Graph *g);
/* The same, walking the destinations in the order seq (|V| entries, a
 * permutation; NULL: 0, 1, ...) without renumbering the sources: the reuse
 * a table of neighbour groups in that order gets (groups.c). */
double graph_block_locality_in(const Graph *g, const int32_t *seq);
/* Writes g's arcs, in edge-id order, as a `coordinate pattern general`
 * Matrix Market file (row = source, column = destination: what graph_read
 * reads back as the same arcs) through a temporary file. 0 or -1. */
int graph_write_mtx(const Graph *g, const char *path, Diag *d);

/* ---------------------------------------------------------------------------
 * npy.c: NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order).
 */
typedef struct NpyArray {
  IrDType dtype; /* f32, f64, i32 or i64 */
  int ndim;
  int64_t shape[8];
  void *data;    /* malloc'ed; npy_free releases it */
} NpyArray;

int64_t npy_numel(const NpyArray *a); /* 1 for a 0-d array */
/* Frees the data and leaves `a` empty; safe twice, and on NULL. */
void npy_free(NpyArray *a);
/* Reads `path`; returns 0, or -1 after reporting the file and the reason
 * (bad magic, unsupported dtype, Fortran order, truncated data ...), with
 * `out` then empty. An array of 0 elements still gets a non-NULL `data`. */
int npy_read(const char *path, NpyArray *out, Diag *d);
/* Writes `a` as format 1.0 (as numpy.save does, byte for byte) through a
 * temporary file in the same directory renamed into place, so an error
 * never leaves a truncated file. Returns 0 or -1 after reporting. */
int npy_write(const char *path, const NpyArray *a, Diag *d);

/* ---------------------------------------------------------------------------
 * partition.c: a graph's destinations split over P parts (GPUs), each part
 * holding the in-edges of the vertices it owns and naming the remote
 * source rows those edges read (its halo; docs/multigpu.md).
 *
 * A part's graph numbers its vertices own first (increasing global id),
 * then its halo (by owner part, then global id: the rows each other part
 * sends arrive together); its edges are the in-edges of its own vertices,
 * in global edge-id order, so every edge belongs to exactly one part.
 */
typedef enum { GRAPH_PART_EDGES, GRAPH_PART_METIS } GraphPartMethod;

typedef struct GraphPart {
  int32_t nown, nhalo;  /* owned vertices; remote sources its edges read */
  int32_t *rows;        /* nown + nhalo global ids: own, then halo */
  int64_t ne;           /* its edges (the in-edges of its own vertices) */
  int64_t *eids;        /* ne global edge ids, increasing */
  int64_t ne_remote;    /* of those, the ones whose source is in the halo */
  int32_t *halo_from;   /* P + 1: halo rows halo_from[q]..halo_from[q+1]
                           are owned by part q (positions within the halo) */
} GraphPart;

typedef struct GraphPartition {
  int32_t parts;
  GraphPartMethod method;
  int32_t *owner;     /* |V|: the part owning each vertex */
  int32_t *lo;        /* P + 1 range starts (method EDGES: part k owns
                         lo[k]..lo[k+1]); NULL for METIS */
  GraphPart *part;    /* P */
  int64_t cut;        /* edges whose endpoints have different owners */
  double seconds;
} GraphPartition;

/* "edges" (contiguous destination ranges balanced by in-edges, each vertex
 * weighing one more) or "metis" (METIS k-way on the symmetrised graph).
 * NULL, with *method untouched, if `spec` is neither. */
const char *graph_partition_method_problem(const char *spec, GraphPartMethod *method);
/* Splits g over `parts` parts (1..GRAPH_MAX_PARTS). NULL after reporting
 * (a bad count, no METIS, out of memory). */
#define GRAPH_MAX_PARTS 1024
GraphPartition *graph_partition(const Graph *g, int parts, GraphPartMethod method, Diag *d);
void graph_partition_free(GraphPartition *p); /* NULL is fine */
/* Part k as a graph of its own (nown + nhalo vertices, its edges in its
 * edge order); its name is "<g's name>#k/P". NULL after reporting. */
Graph *graph_partition_graph(const Graph *g, const GraphPartition *p, int k, Diag *d);
/* The report `gopc graph --partition` prints: method, edge cut, and per
 * part its vertices, edges, remote edges and halo, then the balance. */
void graph_partition_print(FILE *out, const Graph *g, const GraphPartition *p);

/* ---------------------------------------------------------------------------
 * shape.c: an IR tensor's shape on a graph.
 */
/* Shape of tensor `t` on `g` with `ext`; returns the rank (1 + ndims, or
 * ndims for dense tensors). */
int graph_tensor_shape(const IrTensor *t, const Graph *g, const IrExtents *ext,
                       int64_t shape[IR_MAX_IDX]);
int64_t graph_tensor_numel(const IrTensor *t, const Graph *g,
                           const IrExtents *ext);

#endif
