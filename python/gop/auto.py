"""What schedule="auto" means for the operators where the chooser's pick
is not taken: the measured exceptions, and the rules that replace it."""


# Operators whose schedule="auto" keeps the C API's default mapping, by
# name, with the measurement that put them here (besides gop.layers'
# forward operators: Operator._chosen).
# H100, 2026-11-25 (bench/results/2026-11-25-H100-train, the
# `ops` section, backward ms default -> chosen on ogbn-arxiv):
_GAT_GRAD = ("GAT's attention gradients: the chooser picks thread_vertex(1, 1), a thread per "
             "destination, serialised on ogbn-arxiv's heaviest vertex (13,155 in-edges): "
             "joint backward 3.37 -> 77.0 ms at H = 8")
AUTO_KEEPS_DEFAULT = {
    "gat_attention_grad_Z": _GAT_GRAD,
    "gat_attention_grad_As": _GAT_GRAD,
    "gat_attention_grad_Ad": _GAT_GRAD,
    "copy_u_mean_grad_X": "spmm_rows(2, 1) over the reverse graph: 0.092 -> 0.214 ms at F = 8 "
                          "on ogbn-arxiv (1.31x faster on pubmed)",
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
# (pubmed 0.54 -> 0.18). With one head the backward keeps the default: a
# lane per head leaves a team of one lane per group or source, 0.35 -> 0.52
# ms on ogbn-arxiv (though 0.31 -> 0.18 on pubmed; gat2.txt there).
def gat_groups(ext):
    return "gat_groups(32, %d, %d)" % (_lanes(int(ext["H"]), 8),
                                       _lanes(int(ext["H"]) * int(ext["C"]), 32))


def gat_grad_groups(ext):
    H = int(ext["H"])
    return "gat_grad_groups(32, %d)" % _lanes(H, 8) if H >= 2 else None


AUTO_RULES = {"gat_attention": gat_groups, "gat_attention_grad_Z_As_Ad": gat_grad_groups}


def backward_schedule(schedule):
    """The schedule= of the derived operators of a call with `schedule=`:
    "auto" stays "auto" (each derived operator gets the chooser's pick for
    itself, on the graph, at its width); anything else (a named schedule is
    written for the forward's loops, not the gradient's) is the default."""
    return "auto" if schedule == "auto" else None
