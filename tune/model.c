/* tune/model.c: the analytical cost model of the autotuner.
 *
 * It ranks points of the search space without running them. The estimate
 * is deliberately small, one line per effect, with constants of an H100
 * read off the measured suite (bench/results/2026-11-22-H100-gpu-suite1.csv)
 * and rounded; what matters is the order it gives, which
 * tests/unit/test_tune.c measures against that suite (Spearman's rank
 * correlation per graph, operator and F).
 *
 *   time = launch + max(memory, issue, critical)
 *   launch   = kernels x 3 us
 *   memory   = bytes / BW + atomic transactions / R_atomic
 *              bytes: every edge reads its rows (no reuse of source rows)
 *              times the sector waste of the access pattern, plus the
 *              vertex rows, plus 8 bytes of graph indices per edge;
 *              vertex-parallel schedules write a reduced row once per
 *              vertex, edge-parallel ones update it per edge atomically
 *              (the lowered IR's atomic stores say which); BW is the L2's
 *              when the gathered rows fit in it, else DRAM's
 *   issue    = (worker steps x L_step + workers x L_worker) / resident
 *              warps, where a step is one edge (and one 32-feature chunk)
 *              of a warp, or one feature of a thread, and the resident
 *              warps are min(warps launched, what the GPU holds): few
 *              workers leave the GPU idle (occupancy)
 *   critical = the longest worker: G x (max in-degree) x steps per edge x
 *              L_step for vertex-parallel schedules, whose warp serialises
 *              a heavy vertex's edges (why they lose on cnr-2000, max
 *              in-degree 18,234 against a mean of 9.6); G x steps for
 *              edge-parallel ones; plus, when a vertex-parallel schedule
 *              still has atomics (lanes on a vertex's edges), G x max
 *              in-degree x atomic stores x 0.025 us: they all hit one
 *              address and serialise
 *
 * Sector waste: a warp's lanes read 32 consecutive features of one row
 * (no waste once F >= 8); threads hold T neighbouring features each of a
 * different row, so a 32-byte sector serves min(T, 8) of them. Atomic
 * updates coalesce the same way: a warp's 32 lanes on one row make one
 * transaction per 8 floats, threads one per min(T, 8).
 * Not modelled: shared memory (no schedule uses it yet), registers and
 * spills (but for a rule on @occupancy(2048), in the lane model), block size, vector loads, the skew of vertex ids within a group,
 * and locality: the signature's AES is part of the database key but the
 * model does not use it yet.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune/tune.h"

/* H100 SXM, rounded; the measured suite fixes the latencies. */
enum { SMS = 132, WARPS_PER_SM = 64 };
static const double BW_DRAM = 3.0e6;     /* bytes per us (3 TB/s) */
static const double BW_L2 = 7.0e6;       /* gathers that hit in L2 */
static const double L2_BYTES = 40e6;     /* of 50 MB, what rows may use */
static const double R_ATOMIC = 4.5e4;    /* atomic transactions per us */
static const double L_WARP_RMW = 0.32;   /* us per edge step of a warp that
                                            reads and writes a row per edge */
static const double L_WARP_REG = 0.09;   /* ... accumulating in registers */
static const double L_THREAD = 0.034;    /* us per feature step of a thread */
static const double L_WORKER = 0.05;     /* us to start a worker */
static const double L_SAME_ATOMIC = 0.025; /* us per atomic on one address */
static const double LAUNCH_US = 3.0;

static double ceil_div(double a, double b) { return ceil(a / b); }

/* ---- the lane model ----
 *
 * Named schedules whose warps own destination rows or neighbour groups
 * with their lanes on features (spmm_vec4, spmm_rows, spmm_groups,
 * gnnadvisor and any user schedule of that shape: tune/space.c reads the
 * shape off the lowered IR) are costed by what their warps do:
 *
 *   a warp step   one edge of each of its rows, fpp features of each
 *                 (a pass); ceil(F / fpp) passes per edge
 *   a warp        c0 steps to start (offsets, the group table), then its
 *                 rows' edges: for R rows the longest of R in-degrees
 *                 (mean + c(R) x std, at most the max; c(R) the expected
 *                 largest of R normal draws), for a group at most G; a
 *                 warp in teams of T lanes (@team(T)) holds 32 / T groups
 *                 and steps as long as the longest
 *   issue         (steps / U + warps x c0) x L / resident warps, U the
 *                 edges in flight per lane (the unroll, at most 4: more
 *                 buys nothing measured; a plain loop counts as 3.5), x
 *                 (1 + (1 - lane use)) when F < fpp leaves lanes idle
 *   critical      the longest warp: max in-degree (rows) or G (groups)
 *                 steps, / U (at most 4), + c0, x L
 *   memory        the fewest bytes (each edge reads its source row, its
 *                 index and weight; each row written once) / bandwidth
 *                 (L2's when the gathered rows fit in it), plus the
 *                 partial sums of heavy rows' groups (or of every group,
 *                 where no group owns its row) as atomics, the fill of
 *                 rows added into, and a finalising pass over the rows
 *
 * The constants were fitted on the H100 run of 2026-11-25
 * (bench/results/2026-11-25-H100-aggregation-run1: 4 aggregation operators x
 * 14 graphs x 5 widths x 14 named schedules): the model's choice among the
 * measured schedules is within 1.04-1.07x of the best in geometric mean
 * (bench/NOTES.md). tests/unit/test_tune_model.c keeps it there. */
static const double LANE_L = 0.8;        /* us per dependent warp step */
static const double LANE_C0 = 3.0;       /* steps to start a warp */
static const double LANE_C0_GROUP = 1.0; /* more for a group's warp: its table
                                            row, then its destination's degree
                                            (owned row or not), before the edges */
static const double LANE_UMAX = 4.0;     /* edges in flight that pay off */
static const double LANE_SHFL = 0.15;    /* a dependent shuffle, in steps */
static const double LANE_U_PLAIN = 3.5;  /* a loop the schedule does not unroll
                                            (LLVM unrolls it; an explicit
                                            unroll of 4 still wins ties) */
static const double LANE_SKEW = 3.0;     /* x c(R) x std: heavy-tailed degrees */
static const double LANE_GROUPS_V = 1.0; /* groups = E / G + this x |V| */
static const double LANE_BW_L2 = 1.0e7;  /* bytes per us, gathers from L2 */
static const double LANE_R_ATOMIC = 1.0e5; /* atomic floats per us */
static const double LANE_TABLE_BYTES = 20; /* read per group: its table row
                                              (12) and its destination's
                                              offsets (8). Left out before
                                              run 12, which made every
                                              G tie where the gathers bound
                                              the time; counted, the
                                              choice among the measured
                                              named schedules went 1.069 ->
                                              1.065x the best (run 2),
                                              1.082 -> 1.073x (run 11),
                                              1.117 -> 1.091x (run 12) */

/* The expected largest of r standard normal draws (r = 1, 2, 4, ...). */
static double expected_max_normal(int r) {
  static const double c[] = {0, 0.564, 1.029, 1.424, 1.766, 2.070, 2.345};
  int k = 0;
  while (k < 6 && (1 << (k + 1)) <= r) k++;
  return r <= 1 ? 0 : c[k];
}

static void lane_cost(const TuneOpShape *shape, const TunePoint *p, const TuneGraphSig *g,
                      double Fe, TuneCost *out) {
  double V = (double)g->nv, E = (double)g->ne, dmax = (double)g->deg_max;
  double mean = g->deg_mean, std = g->deg_std;
  double fpp = p->fpp, passes = ceil_div(Fe, fpp);
  double use = fmin(Fe, fpp) / fpp;
  double warps, steps, per, longest, atomics = 0;
  /* a point has rows (rows > 0) or neighbour groups (egroup > 0): the
   * table's rows, a group a row */
  double groups = p->egroup > 0 ? E / p->egroup + LANE_GROUPS_V * V : 0;
  if (p->eflat > 0) {
    /* G consecutive edges a warp (sddmm_vec4), each edge its own result:
     * no row to walk, no skew */
    double G = p->eflat;
    warps = ceil_div(E, G);
    steps = warps * G * passes;
    per = G;
    longest = G * passes;
  } else if (p->rows > 0) {
    /* R rows a warp: spmm_rows' group of R, or 32 / T teams (sddmm_rows) */
    int r = p->rows * (p->team > 0 ? 32 / p->team : 1);
    double R = r;
    double deg = fmin(dmax, mean + expected_max_normal(r) * LANE_SKEW * std);
    warps = ceil_div(V, R);
    steps = warps * deg * passes;
    per = deg;
    longest = dmax * passes;
  } else {
    double G = p->egroup;
    per = groups > 0 ? E / groups : 0;
    longest = fmin(G, dmax) * passes;
    /* heavy rows' partial sums, or every group's */
    atomics = (p->all_atomic ? groups : fmax(0.0, E / G - 0.5 * V)) * Fe;
    /* teams (@team(T)): k = 32 / T groups side by side in a warp, which
     * steps as long as its longest group: about per x (1 + log2(k) / 2)
     * edges, at most G */
    double k = p->team > 0 ? 32.0 / p->team : 1.0;
    double span = k > 1 ? fmin(fmin(G, fmax(1.0, dmax)), per * (1 + 0.5 * log2(k))) : per;
    warps = groups / k;
    steps = warps * span * passes;
    if (k > 1) per = span;
  }
  /* An edge loop with a per-edge shuffle reduction (a dot product) is
   * convergent: LLVM does not unroll it, so one edge is in flight, and
   * each edge pays the butterfly, log2(lanes) dependent shuffles (lanes:
   * the team's, else the warp's). Not fitted on a GPU yet (issue 37). A
   * warp's G consecutive edges (sddmm_vec4) are a loop of constant trip
   * count, unrolled whole: G edges in flight. */
  double U = p->shuffle && !p->eflat ? 1.0
                                     : fmin(p->unroll > 1 ? p->unroll : LANE_U_PLAIN, LANE_UMAX);
  double shfl = p->shuffle ? 1.0 + LANE_SHFL * log2(p->team > 0 ? p->team : 32) : 1.0;
  double inflight = fmax(1.0, fmin(U, fmin(per, LANE_UMAX)));
  double resident = fmax(1.0, fmin(warps, (double)SMS * WARPS_PER_SM));
  out->occupancy = resident / ((double)SMS * WARPS_PER_SM);
  double c0 = LANE_C0 + (p->rows > 0 || p->eflat > 0 ? 0.0 : LANE_C0_GROUP);
  out->issue_us = (steps * shfl / inflight + warps * c0) * LANE_L / resident * (2.0 - use);
  out->critical_us = (longest / fmin(U, fmax(1.0, dmax)) + c0) * LANE_L;
  double row = Fe * (p->elem > 0 ? p->elem : 4);
  /* A destination row read inside the edge loop (u_dot_v's Y[v, f]) is
   * read once per row (a warp or team walks the row's edges) or once per
   * neighbour group. Edge-parallel warps (sddmm_vec4) read it per edge, but
   * consecutive edge ids share an endpoint (ids in CSR order their
   * destination, a file sorted by source its source), whose row then comes
   * from cache: counted once per vertex too (bench/NOTES.md, 2026-11-28:
   * charged per edge, the model kept sddmm_vec4 from being chosen at
   * F >= 128, where it is fastest). */
  double dst_rows = shape->edge_dst_rows, once = p->rows > 0 || p->eflat > 0 ? V : groups;
  out->bytes = E * ((shape->edge_rows - dst_rows) * row + shape->edge_scalars * 4 + 4) +
               V * (shape->vertex_rows + shape->edge_red_rows) * row + once * dst_rows * row;
  out->bytes_reuse = out->bytes;
  /* The rows a second pass visits: all of them, or where the op fills its
   * own rows (passes/fill.c), those its groups do not own: heavy rows
   * (about the groups beyond one per row) and empty ones, plus the degrees. */
  double others = p->filled && p->egroup > 0 ? fmin(1.0, fmax(0.0, E / p->egroup - 0.5 * V) / V) : 1.0;
  if (p->filled) out->bytes += V * 8;
  if (p->atomic_rows > 0) out->bytes += others * V * row; /* the fill of the rows added into */
  if (p->finalise) out->bytes += 2 * others * V * row;    /* read and written again */
  /* each group's row of the table (destination, first and end edge) and
   * its destination's two offsets (the degree test before the store) */
  out->bytes += LANE_TABLE_BYTES * groups;
  out->atomics = atomics;
  double gathered = V * row * (shape->edge_rows > 0 ? shape->edge_rows : 1);
  out->memory_us = out->bytes / (gathered <= L2_BYTES ? LANE_BW_L2 : BW_DRAM) +
                   atomics / LANE_R_ATOMIC;
  out->launch_us = LAUNCH_US * (1 + p->finalise + p->filled);
  out->time_us = out->launch_us + fmax(out->memory_us, fmax(out->issue_us, out->critical_us));
  /* Teams are costed only when sized to the row: one pass over a group's
   * edges (fpp >= F) with at most half the team's features idle. Narrower
   * teams walk their edges once per pass and wider ones idle lanes; on the
   * H100 (run 7, bench/NOTES.md) both were always slower than the team
   * sized to the row, by up to 5x, which the terms above do not see (they
   * tie on memory). Out of that range a team is ranked behind everything. */
  if (p->team > 0 && (fpp < Fe || fpp >= 2 * Fe)) out->time_us *= 10;
  /* Full occupancy (@occupancy(2048): 32 registers a thread, twice the
   * warps of the default's 40-56 registers) is read off the H100
   * (bench/NOTES.md, run 9): where vertices have few in-edges (mean <= 7:
   * molhiv 2.2, proteins 3.7, delaunay_n16 6.0) unrolling has little to
   * overlap and the extra warps hide the gathers' latency, 0.79-0.90x the
   * default's time for a weighted sum (53 registers by default), 0.82-0.94x
   * unweighted; with more (deezer-HU 9.4) the unrolled loads win, 1.1-1.3x
   * slower at full occupancy. Operators
   * with more live values (several edge tensors or rows, a division) spill
   * at 32 registers: ranked behind. */
  /* bytes of a row a lane loads per step (4 f32, 8 bf16: 16) */
  double lane_bytes = (p->vec > 1 ? p->vec : 1) * (p->elem > 0 ? p->elem : 4);
  if (p->occ >= 2048 && p->egroup == 0) {
    /* ... and so does a lane holding more than 16 bytes of a row per step
     * (spmm_rows8_full on f32: two 16-byte loads a lane, 4 bytes spilled
     * at sm_90) */
    bool light = shape->edge_scalars <= 1 && shape->edge_rows <= 1 && g->deg_mean <= 7.0 &&
                 lane_bytes <= 16;
    out->time_us *= !light ? 1.25 : shape->edge_scalars ? 0.84 : 0.93;
  }
  /* Neighbour groups at full occupancy (spmm_groups_full; 2026-11-27,
   * bench/results/2026-11-27-H100-bf16-twin/exp-occupancy.txt): a
   * group's few edges leave little to overlap, and 16-bit rows keep their
   * loads in flight in half the registers, so the extra warps win, 0.84-0.98x
   * the default's time in bf16 on ogbn-arxiv and cnr-2000 at F = 128 and
   * 256; f32 rows need the registers, 1.09-1.20x slower. */
  if (p->occ >= 2048 && p->egroup > 0) out->time_us *= p->elem > 0 && p->elem <= 2 ? 0.90 : 1.15;
  /* Ties (a schedule's knobs that change nothing the model sees) go to an
   * unroll of 4, the setting measured best, and then to the widest load a
   * lane makes, up to 16 bytes: where the bytes bound the time, 16-bit
   * rows tie whether a lane loads 4 features (8 bytes) or 8 (16 bytes),
   * and on an H100 the 16-byte loads won, bf16 copy_u_sum on molhiv
   * spmm_rows8_full(2, 4) 0.2147 ms against spmm_vec4_full(4) 0.2440 at
   * F = 128 (2026-11-27, bench/NOTES.md). An f32 lane's loads are 16 bytes
   * either way, so f32 ties keep their order. */
  out->time_us += 1e-3 * fabs(log2(p->unroll > 1 ? p->unroll : 1) - 2);
  out->time_us -= 1e-4 * log2(fmin(16.0, lane_bytes));
}

void tune_model_cost(const TuneOpShape *shape, const TunePoint *p, const TuneGraphSig *g,
                     int64_t F, TuneCost *out) {
  memset(out, 0, sizeof *out);
  if (p->strategy == TUNE_NAMED && p->lanes && shape->feature_loop) {
    lane_cost(shape, p, g, (double)(F > 0 ? F : 1), out);
    return;
  }
  double V = (double)g->nv, E = (double)g->ne, dmax = (double)g->deg_max;
  double Fe = shape->feature_loop ? (double)(F > 0 ? F : 1) : 1.0;
  double G = p->G, T = p->T;
  bool warp = p->strategy == TUNE_WARP_VERTEX || p->strategy == TUNE_WARP_EDGE ||
              p->strategy == TUNE_GAR;
  bool vertex = p->strategy == TUNE_THREAD_VERTEX || p->strategy == TUNE_WARP_VERTEX ||
                p->strategy == TUNE_GAR;
  /* Another named schedule: costed as the strategy its lowered IR is
   * nearest to (tune_point_make read it off). */
  bool reg_warp = p->strategy == TUNE_GAR;
  if (p->strategy == TUNE_NAMED) {
    warp = p->warp;
    vertex = p->vertex;
    reg_warp = warp && vertex && p->atomic_rows + p->atomic_scalars == 0;
  }

  /* Steps per edge of one worker, and how many workers share an item. */
  double chunks = ceil_div(Fe, 32), spe, share, run;
  if (warp && shape->feature_loop) {
    share = fmin(T, chunks);
    spe = ceil_div(chunks, T);
    run = fmin(Fe, 32);
  } else if (warp) { /* lanes take the edges (fallback) */
    share = 1;
    spe = 1.0 / 32;
    run = 1;
  } else {
    share = fmin(T, Fe);
    spe = ceil_div(Fe, T);
    run = fmin(T, Fe);
  }
  double waste = fmax(1.0, 8.0 / fmin(run, 8.0));
  double items = vertex ? ceil_div(V, G) : ceil_div(E, G);
  double workers = items * share;
  double warps = warp ? workers : ceil_div(workers, 32);
  double resident = fmin(warps, (double)SMS * WARPS_PER_SM);
  out->occupancy = resident / ((double)SMS * WARPS_PER_SM);

  /* Edge-parallel warps issue their atomics and move on, with no dependent
   * read-modify-write chain: their step costs what gar's does. */
  double step = !warp                                ? L_THREAD
                : reg_warp || !vertex ? L_WARP_REG
                                                     : L_WARP_RMW;
  double steps = E * spe * share;
  if (!warp) steps /= 32; /* threads step together in warps */
  if (!warp && vertex) {
    /* A warp of threads on 32 different vertices lasts as long as its
     * heaviest: mean + 2 std, at most the max. */
    double dm = g->deg_mean > 0 ? g->deg_mean : 1;
    steps *= fmin(dmax / dm, 1 + 2 * g->deg_std / dm);
  }
  out->issue_us = (steps * step + warps * L_WORKER) / (resident > 0 ? resident : 1);

  out->critical_us = vertex ? G * dmax * spe * step : G * spe * step;
  /* Vertex-parallel atomics (lanes on the edges of one vertex) all hit
   * that vertex's element: they serialise along its edges. */
  if (vertex) out->critical_us += G * dmax * (p->atomic_rows + p->atomic_scalars) * L_SAME_ATOMIC;

  /* Bytes, without reuse of source rows, and atomics. */
  double row = Fe * 4;
  double bytes = E * (shape->edge_rows * row * waste + shape->edge_scalars * 4 * waste + 8);
  bytes += V * (shape->vertex_rows * row + shape->vertex_scalars * 4);
  double atomics = E * (p->atomic_rows * Fe + p->atomic_scalars);
  double atomic_run = warp ? fmin(Fe, 8) : fmin(run, 8);
  if (vertex) bytes += V * shape->edge_red_rows * row * 2;
  else bytes += atomics * 4 * 2 * waste; /* read and write, per edge */
  out->bytes = bytes;
  out->atomics = atomics;
  out->bytes_reuse = V * (shape->edge_rows + shape->vertex_rows + shape->edge_red_rows) * row +
                     E * (shape->edge_scalars * 4 + 8);
  double gathered = V * Fe * 4 * (shape->edge_rows > 0 ? shape->edge_rows : 1);
  double bw = gathered <= L2_BYTES ? BW_L2 : BW_DRAM;
  out->memory_us = bytes / bw + atomics / atomic_run / R_ATOMIC;

  out->launch_us = LAUNCH_US * (p->kernels > 0 ? p->kernels : 1);
  out->time_us = out->launch_us + fmax(out->memory_us, fmax(out->issue_us, out->critical_us));
}

typedef struct Ranked {
  TunePoint p;
  double t;
  int i;
} Ranked;

static int by_time(const void *a, const void *b) {
  const Ranked *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return x->i - y->i;
}

void tune_model_rank(const TuneOpShape *shape, TunePoint *pts, int n, const TuneGraphSig *g,
                     int64_t F) {
  if (n <= 1) return;
  Ranked *r = malloc(sizeof *r * (size_t)n);
  if (!r) return; /* left unsorted: the order is only advice */
  for (int i = 0; i < n; i++) {
    TuneCost c;
    tune_model_cost(shape, &pts[i], g, F, &c);
    r[i] = (Ranked){pts[i], c.time_us, i};
  }
  qsort(r, (size_t)n, sizeof *r, by_time);
  for (int i = 0; i < n; i++) pts[i] = r[i].p;
  free(r);
}

/* ---- stages fused into one kernel (fuse_stages) ----
 *
 * An operator whose stages pass one value per destination from one to the
 * next (edge softmax: the max, then the sum of exponentials, then the
 * quotient) runs either as a team of T lanes per destination with every
 * stage fused (stdlib/schedules.gop softmax_rows(T)) or edge-parallel as
 * the default mapping does, a kernel per stage with the per-destination
 * values reduced by atomics. The fused kernel's time is
 *
 *   launch + max(latency, requests, critical)
 *   a step      one edge of each of the team's lanes in one pass
 *   latency     the warps' waves x steps x lat_us: warps (|V| x T / 32)
 *               of P passes x ceil(d / T) + c0 steps each, d the largest
 *               in-degree of a warp's 32 / T destinations (mean + c(32 /
 *               T) x std, at most the max: as the lane model's rows)
 *   requests    the memory requests of all warp steps, requests_per_us: a
 *               step of a warp reads the teams' T consecutive in-edges of
 *               its 32 / T destinations, (32 / T) x ceil(4T / 32) 32-byte
 *               sectors, fewer where rows are short enough that the warp's
 *               destinations' edges share sectors (4 x mean / T); with
 *               edge ids in a file's order each active lane also gathers
 *               its score from a sector of its own (32 x min(1, mean / T))
 *   critical    the heaviest destination's team: P x ceil(max / T) + c0
 *               steps of crit_us
 *
 * The latency term alone (the form before the requests) made T = 1 or 2
 * look best on regular graphs, where a thread per destination reads 32
 * rows' scores per step and T = 4 was 1.6-3.7x faster (community, ring).
 * The constants per edge order are fitted by bench/fit_fused_model.py
 * (least mean |log(model / measured)|) to softmax_rows(T), T = 1 .. 32,
 * measured on an H200 (bench/results/2026-11-29-H200-edge-softmax-groups):
 * in CSR order (each step one load in order) to the 25 graphs of
 * csr-order/ and teams/ (mean error 0.20 in log, was 0.48; on the 15
 * graphs only its held-out calls have, 0.19, was 0.64, and the T picked
 * 1.019x the best T, was 1.155x); in a file's order (a step loads the
 * edge id, then gathers the score) to the 22 graphs of input-order/ and
 * input-order-generated/ (0.28, was 0.46; the T picked 1.007x the best,
 * was 1.020x). On nine more generated graphs the whole choice was 1.025x
 * (CSR order) and 1.022x (file order) the best measured, against 1.28x
 * and 1.25x before
 * (bench/results/2026-11-29-H200-edge-softmax-fused-model). Where the
 * critical path of a hub costs more than the atomics the fusion saves
 * (cnr-2000, ogbn-arxiv, blogcatalog), the default mapping or neighbour
 * groups stay. */
typedef struct FusedConsts {
  double lat_us, requests_per_us, crit_us;
} FusedConsts;
static const FusedConsts FUSED_CSR = {0.284, 3.20e5, 0.0585};
static const FusedConsts FUSED_FILE = {0.359, 6.15e5, 0.138};

double tune_model_fused_us(const TuneGraphSig *g, int passes, int T, bool csr_edges) {
  const FusedConsts *k = csr_edges ? &FUSED_CSR : &FUSED_FILE;
  double team_rows = 32.0 / T;
  double d = fmin((double)g->deg_max,
                  g->deg_mean + expected_max_normal((int)team_rows) * g->deg_std);
  double warps = ceil((double)g->nv / team_rows);
  double steps = passes * ceil(d / T) + LANE_C0;
  double resident = fmax(1.0, fmin(warps, (double)SMS * WARPS_PER_SM));
  double latency = warps * steps * k->lat_us / resident;
  double sectors = fmin(team_rows * ceil(4.0 * T / 32.0),
                        fmax(1.0, 4.0 * fmax(g->deg_mean, (double)T) / T));
  if (!csr_edges) sectors += 32.0 * fmin(1.0, g->deg_mean / T);
  double requests = warps * steps * sectors / k->requests_per_us;
  double critical = (passes * ceil((double)g->deg_max / T) + LANE_C0) * k->crit_us;
  return LAUNCH_US + fmax(fmax(latency, requests), critical);
}

double tune_model_unfused_us(const TuneGraphSig *g, int passes) {
  return LAUNCH_US * (passes + 1) + (passes - 1) * (double)g->ne / R_ATOMIC;
}

/* ---- the same stages over neighbour groups (softmax_teams(G, T)) ----
 *
 * A team of T lanes per group of at most G in-edges of one destination
 * (T = 1: softmax_groups(G), a thread a group), a kernel per stage; each
 * reducing stage (all but the last) stores a group's max or sum once,
 * plainly for a destination of at most G in-edges and by an atomic for a
 * heavier one, whose ceil(max / G) groups' atomics on one address are the
 * hub's serial part. A lane walks its edges of the group 4 at a time
 * (unroll), so a warp waits for the longest of its 32 / T groups: ceil(d /
 * 4T) rounds, d the largest of 32 / T destinations' degrees (mean + c(32 /
 * T) x std), at most G and the graph's max; the (E / G + |V|) x T / 32
 * warps take `waves` turns of what the GPU holds. Per stage:
 *
 *   E x TEAMS_EDGE_US + waves x rounds x TEAMS_ROUND_US
 *   + (reducing stages) ceil(max / G) x TEAMS_HUB_US
 *
 * plus the default mapping's launches. The three constants are a least
 * squares fit (weighted by 1 / time) to the 144 measurements of
 * softmax_teams(G, T), G = 16 .. 128, T = G / 8 and G / 4, on 18 graphs
 * with edge ids in CSR order on an H200
 * (bench/results/2026-11-29-H200-edge-softmax-groups, teams/; 15% mean
 * error): the only order the choice takes groups in (api/tune.c). */
static const double TEAMS_EDGE_US = 2.6e-6;
static const double TEAMS_ROUND_US = 0.56;
static const double TEAMS_HUB_US = 0.0046;

double tune_model_teams_us(const TuneGraphSig *g, int passes, int G, int T) {
  double d = fmin(fmin((double)G, (double)g->deg_max),
                  g->deg_mean + expected_max_normal(32 / T) * g->deg_std);
  double rounds = ceil(fmax(d, 1.0) / (4.0 * T));
  double warps = ((double)g->ne / G + (double)g->nv) * T / 32;
  double waves = fmax(1.0, warps / ((double)SMS * WARPS_PER_SM));
  double hub = ceil((double)g->deg_max / G);
  return LAUNCH_US * (passes + 1) +
         passes * ((double)g->ne * TEAMS_EDGE_US + waves * rounds * TEAMS_ROUND_US) +
         (passes - 1) * hub * TEAMS_HUB_US;
}
