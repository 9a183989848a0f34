"""What schedule="auto" means for the operators where the chooser's pick
is not taken: the measured exceptions, and the rules that replace it; and
where the pick is timed against the default mapping before it is kept."""
import os


# Operators whose schedule="auto" keeps the C API's default mapping, by
# name, with the measurement that put them here (besides gop.layers'
# forward operators: Operator._chosen).
# H100, 2026-11-25 (bench/results/2026-11-25-H100-train, the
# `ops` section, backward ms default -> chosen on ogbn-arxiv):
_GAT_GRAD = ("GAT's attention gradients: the chooser picks thread_vertex(1, 1), a thread per "
             "destination, serialised on ogbn-arxiv's heaviest vertex (13,155 in-edges): "
             "joint backward 3.37 -> 77.0 ms at H = 8")
# (copy_u_mean_grad_X was here too, its pick spmm_rows(2, 1) 2.3x slower
# than the default mapping on ogbn-arxiv; since it is transposed, its pick
# runs the forward's schedules on the reversed graph: 1.25-2.93x faster
# than the default mapping on ogbn-arxiv and soc-Slashdot0902 at F = 8-256,
# H200, bench/results/2026-11-30-H200-gradient-reversed-graph/mean.txt.)
AUTO_KEEPS_DEFAULT = {
    "gat_attention_grad_Z": _GAT_GRAD,
    "gat_attention_grad_As": _GAT_GRAD,
    "gat_attention_grad_Ad": _GAT_GRAD,
}


def _lanes(n, cap):
    """The least power of two >= n, at most cap: the lanes of a team that
    covers n features."""
    t = 1
    while t < n and t < cap:
        t *= 2
    return t


# Operators whose schedule="auto" is a rule of their extents instead of the
# chooser's pick (the cost model is fitted on aggregation), by name, each
# measured: a function of the extents giving the schedule (None: the
# default mapping). GAT's fused attention and its joint backward run their
# stages in neighbour groups (examples/models/layers.gop gat_groups,
# gat_grad_groups; H100, ogbn-arxiv, bench/results/
# 2026-11-27-H100-gat-stages): forward 1.40 -> 0.46 ms at H = C = 8, 0.37 -> 0.14 at
# H = 1; joint backward 2.80 -> 1.06 ms at H = 8, 0.64 -> 0.56 at H = 2
# (pubmed 0.54 -> 0.18). With one head a lane per head leaves the in-edge
# stages one lane per group (0.35 -> 0.52 ms on ogbn-arxiv, gat2.txt
# there): those stages put a group's edges on the lanes of a team of 4
# instead (gat_grad_teams, the forward's gat_teams shape), the pass by
# source as gat_grad_sources; on an H200 1.26-1.37x on ogbn-arxiv,
# 1.11-1.16x on deezer-HU and 2.2-2.4x on cnr-2000 (C = 40, 16) against
# gat_grad_sources with the default mapping elsewhere, and 1.04-1.8x
# slower than gat_grad_groups at 2-8 heads
# (bench/results/2026-11-30-H200-gat-backward-one-head).
def _head_lanes(ext):
    """The lanes on the heads, and on a head's channels 4 to a lane."""
    H = int(ext["H"])
    return _lanes(H, 8), _lanes(H * ((int(ext["C"]) + 3) // 4), 32)


def gat_groups(ext):
    """With one head, stages 1 and 2 on the lanes of a team of 4 per group
    of in-edges (gat_teams) instead of a lane per head (a thread a
    group): on an H200 1.03x, 1.08x and 1.14x gat_groups on ogbn-arxiv,
    blogcatalog and pubmed at C = 40; with 8 heads 1.4-1.6x slower
    (bench/results/2026-11-29-H200-gat-teams). Groups of 64 in-edges, not
    32: a hub's row is split into half as many partial rows (atomics), and
    a row of fewer edges is one group either way; on an H200 1.17-1.18x
    on cnr-2000, 0.99-1.00x on ogbn-arxiv and deezer-HU, both shapes
    (bench/results/2026-11-30-H200-gat-group-sizes). The backward keeps 32
    (64 was 1.01-1.09x slower there)."""
    t1, t3 = _head_lanes(ext)
    if int(ext["H"]) == 1:
        return "gat_teams(64, 4, %d)" % t3
    return "gat_groups(64, %d, %d)" % (t1, t3)


def gat_grad_groups(ext):
    lanes = _head_lanes(ext)
    if int(ext["H"]) >= 2:
        return "gat_grad_groups(32, %d, %d)" % lanes
    return "gat_grad_teams(32, 4, %d)" % lanes[1]


AUTO_RULES = {"gat_attention": gat_groups, "gat_attention_grad_Z_As_Ad": gat_grad_groups}


def backward_schedule(schedule):
    """The schedule= of the derived operators of a call with `schedule=`:
    "auto" stays "auto" (each derived operator gets the chooser's pick for
    itself, on the graph, at its width); "default" stays "default"; anything
    else (None, or a named schedule, which is written for the forward's
    loops, not the gradient's) is None: the package's default (cuda_default
    below, on CUDA tensors)."""
    return schedule if schedule in ("auto", "default") else None


# ---- measuring the pick against the default mapping on first use ----
#
# The cost model is fitted on one-stage aggregation, and AUTO_RULES on
# ogbn-arxiv; for an operator of several stages (GAT's attention and its
# backward, edge softmax) neither is sure to hold on another graph: training
# a 2-layer GAT (4 heads) on musae-github (in-degree up to 9,458) took
# 15.7 ms a step under the rules' picks against 4.5 ms under the default
# mapping (H200, issue 36), while on dblp-2010 the picks were faster (5.9
# against 7.9 ms). So where the pick is such a guess, the first call on CUDA
# tensors of each graph and extents times the pick and the default mapping
# on the call's own tensors and keeps the faster (the pick only when at
# least MARGIN faster), for that graph and those extents from then on.
# On the interpreter nothing is timed: the pick runs.
#
# One-stage operators are not safe either: on an H200 (2026-11-28,
# bench/results/2026-11-28-H200-auto-default) a GCN step under the cost
# model's picks for u_mul_e_sum and its gradient took 3.27 ms against 2.65
# under the default mapping on soc-Slashdot0902 and 2.60 against 2.44 on
# wiki-Vote (both skewed), while on ogbn-arxiv the picks were 18% faster.
# So every pick that is not the tuning database's is timed.
#
# GOP_AUTO_MEASURE (read at import; or set gop.auto.MEASURE):
#   "all"          the default: every pick that is not the database's;
#   "multi-stage"  picks for operators of several stages only;
#   "off"          no measuring: the pick, as before.
MEASURE = os.environ.get("GOP_AUTO_MEASURE", "all")
# the pick replaces the default only when it took at most this fraction of
# the default's time (timing noise between two kernels of the same work is
# a few percent)
MARGIN = 0.97


def needs_measure(stages, pick, source):
    """Whether schedule="auto"'s `pick` (from `source`: "database",
    "predictor", "cost model" or "rule") for an operator of `stages` stages
    must be timed against the default mapping before it is trusted."""
    if pick is None or MEASURE == "off" or source == "database":
        return False
    if MEASURE == "all":
        return True
    if MEASURE != "multi-stage":
        raise ValueError(f"gop.auto.MEASURE is {MEASURE!r}: 'multi-stage', 'all' or 'off'")
    return stages > 1


def decide(times):
    """The schedule to keep from {schedule: milliseconds}, where the
    default mapping is the key None and a candidate that could not run
    (no kernel for it on a machine without LLVM, a refusal) has the time
    None: the default unless a candidate took at most MARGIN of its time;
    the fastest that ran when the default did not; None when none ran."""
    ran = {s: t for s, t in times.items() if t is not None}
    if not ran:
        return None
    if None not in ran:
        return min(ran, key=ran.get)
    best = min((s for s in ran if s is not None), key=ran.get, default=None)
    if best is not None and ran[best] <= MARGIN * ran[None]:
        return best
    return None


def count_stages(ir_text):
    """The stages of an operator from its IR text (Operator.stages): its
    top-level loop nests."""
    return sum(1 for line in ir_text.splitlines() if line.startswith("  for "))


# ---- the default schedule of a call on CUDA tensors ----
#
# A call that names no schedule (schedule=None) runs "auto" on CUDA tensors
# where this libgop can compile: every pick is timed against the default
# mapping on first use (MEASURE above), so the choice is never slower than
# the fixed mapping by more than the timing noise, and training steps were
# 1.09-1.52x faster on ogbn-arxiv (bench/results/2026-11-28-H200-auto-default,
# an H200; within the noise on three skewed graphs). A libgop
# without LLVM runs the kernel packs prepared for it, which were prepared
# for the default mapping unless "auto" was asked for: it keeps the
# default mapping (and says so once). schedule="default" names the default
# mapping explicitly everywhere. GOP_DEFAULT_SCHEDULE (read at import; or
# set gop.auto.DEFAULT): "auto" (the default) or "default".
DEFAULT = os.environ.get("GOP_DEFAULT_SCHEDULE", "auto")
# The default turns to "auto" for a graph and extents after this many calls
# with no schedule= (the first ones run the default mapping): choosing costs
# the cost model's pass over the candidates (tens of ms) and their timing,
# which a graph made per mini-batch and called once or twice would pay
# every step. Whole-graph training is on "auto" from its third step.
def _calls_before_auto(text):
    """GOP_DEFAULT_AUTO_AFTER's value: a count of calls, 0 or more."""
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise ValueError(f"GOP_DEFAULT_AUTO_AFTER is {text!r}: a number of calls, 0 or more")
    return n


DEFAULT_AFTER = _calls_before_auto(os.environ.get("GOP_DEFAULT_AUTO_AFTER", "2"))
_said_pack_only = False


def cuda_default(can_compile):
    """The schedule a CUDA call with schedule=None runs: "auto" or None (the
    default mapping); `can_compile`: whether libgop has LLVM."""
    global _said_pack_only
    if DEFAULT == "default":
        return None
    if DEFAULT != "auto":
        raise ValueError(f"gop.auto.DEFAULT (GOP_DEFAULT_SCHEDULE) is {DEFAULT!r}: "
                         f"'auto' or 'default'")
    if not can_compile:
        if not _said_pack_only:
            _said_pack_only = True
            import warnings
            warnings.warn("gop: this libgop cannot compile (built without LLVM), so calls "
                          "with no schedule= run the default mapping from kernel packs, not "
                          "schedule=\"auto\"", stacklevel=4)
        return None
    return "auto"


def named(schedule):
    """schedule= as the package passes it on: "default" is None (the C
    API's default mapping)."""
    return None if schedule == "default" else schedule
