"""What the gop.nn layers call, without torch: the operator, the graph it
runs on, its extents, the inputs whose gradient the backward needs, and
the schedule, for a layer of given sizes.

The layers' forward methods (gop/nn.py) take their operator, graph and
order of work from these functions, and the preparation of kernels for a
machine without LLVM (bench/train.py --prepare) walks the same functions
for the models it will train: so what is prepared is what the training
calls, at the same widths, with the same schedule choice (Call.kernels
resolves schedule="auto" as the call will, Operator.schedule_for). Nothing
here needs torch or a GPU.

    calls = gop.plan.gcn(g, 64, 16, schedule="auto")
    for c in calls: c.prepare()          # forward and backward kernels
    [k for c in calls for k in c.kernels()]
      # [('u_mul_e_sum', 'gnnadvisor(16, 16)', {'F': 16}),
      #  ('u_mul_e_sum_grad_X', 'spmm_rows(2, 1)', {'F': 16})]

Each function takes the layer's constructor arguments, and:
  input_grad  whether the layer's input requires a gradient (False for the
              first layer of a model, whose input is the data);
  train       whether the parameters require one (training; False for
              inference, where only input_grad decides).
"""
from . import core

OWN = "own"  # schedule= of Call's methods: the call's own schedule


class Call:
    """One gop operator call of a layer's forward. op (an Operator), graph
    (the gop.Graph it runs on: the layer's graph, or its self-loop graph),
    ext (the extents, by name), wrt (the op's inputs whose gradient the
    backward computes; () when autograd records nothing), schedule (what the
    call passes as schedule=), and for SAGEConv linear_first (the linear map
    applied before the aggregation)."""

    def __init__(self, op, graph, ext, wrt, schedule, linear_first=False):
        self.op, self.graph, self.ext = op, graph, dict(ext)
        self.wrt, self.schedule, self.linear_first = tuple(wrt), schedule, linear_first

    def __repr__(self):
        ext = ", ".join(f"{k}={v}" for k, v in self.ext.items())
        return (f"Call({self.op.name} on {self.graph!r}, {ext}, wrt={self.wrt}, "
                f"schedule={self.schedule!r})")

    def gradient(self, joint=True):
        """The Gradient its backward runs (None when nothing needs one)."""
        return self.op.grad(self.wrt, joint=joint) if self.wrt else None

    def operators(self, schedule=OWN, joint=True):
        """[(Operator, schedule= it is called with)]: the forward, then the
        derived operators of its backward (autograd: joint), under
        `schedule` (OWN: the call's own; None: the default mapping)."""
        s = self.schedule if schedule == OWN else schedule
        out = [(self.op, s)]
        gr = self.gradient(joint)
        if gr is not None:
            out += [(g, core.backward_schedule(s)) for g in gr.operators]
        return out

    def kernels(self, schedule=OWN, joint=True):
        """[(operator name, schedule it runs (None: the default mapping),
        extents)] for the forward and the backward: "auto" resolved on the
        graph at these extents, as the call resolves it."""
        out = []
        for op, s in self.operators(schedule, joint):
            ext = {e: self.ext[e] for e in op.extents}
            out.append((op.name, op.schedule_for(self.graph, s, **ext), ext))
        return out

    def prepare(self, schedule=OWN, joint=True):
        """Compiles (or finds in the kernel cache) every kernel of kernels():
        on a machine without a GPU, fills the cache folder with their packs."""
        for op, s in self.operators(schedule, joint):
            op.prepare(self.graph, schedule=s, **{e: self.ext[e] for e in op.extents})


def _needs(train, input_grad):
    return train or input_grad


def graph_on(graph, on):
    """The graph a layer's call runs on, for the layer's graph: "graph"
    (itself), "self_loops" (graph.with_self_loops(), GAT's) or "gcn"
    (graph.gcn_graph()'s, GCN's); gop.pyg's Recorded calls name it so."""
    if on == "self_loops":
        return graph.with_self_loops()
    if on == "gcn":
        return graph.gcn_graph()[0]
    return graph


def gcn(graph, in_channels, out_channels, fused=False, schedule=None, input_grad=False,
        train=True, loops=False):
    """GCNConv: the normalised aggregation commutes with the linear map,
    so the narrower side is aggregated, as for SAGEConv: lin(x) when
    out_channels < in_channels (its input requires a gradient when the
    weights or x do), else x itself (a gradient only when x needs one: a
    first layer's aggregation then has no backward at all). fused: lin(x)
    through layers.gcn_propagate. loops: on graph.gcn_graph() (the graph
    with its self-loops, whose weights carry the self-loop term)."""
    need = _needs(train, input_grad)
    if loops:
        graph = graph.gcn_graph()[0]
    if fused:
        return [Call(core.layers.gcn_propagate, graph, {"F": out_channels},
                     ("H", "Hd") if need else (), schedule, linear_first=True)]
    if out_channels < in_channels:
        return [Call(core.stdlib.u_mul_e_sum, graph, {"F": out_channels},
                     ("X",) if need else (), schedule, linear_first=True)]
    return [Call(core.stdlib.u_mul_e_sum, graph, {"F": in_channels},
                 ("X",) if input_grad else (), schedule)]


def sage(graph, in_channels, out_channels, aggr="mean", schedule=None, input_grad=False,
         train=True):
    """SAGEConv: sum and mean commute with the linear map, so the narrower
    side is aggregated: lin_l(x) when out_channels < in_channels (its input
    requires a gradient when the weights or x do), else x itself (only when
    x does)."""
    op = core.stdlib[{"mean": "copy_u_mean", "sum": "copy_u_sum", "add": "copy_u_sum",
                      "max": "copy_u_max"}[aggr]]
    if aggr != "max" and out_channels < in_channels:
        return [Call(op, graph, {"F": out_channels},
                     ("X",) if _needs(train, input_grad) else (), schedule, linear_first=True)]
    return [Call(op, graph, {"F": in_channels}, ("X",) if input_grad else (), schedule)]


def gin(graph, in_channels, fused=False, train_eps=False, schedule=None, input_grad=False,
        train=True):
    """GINConv: the sum over the in-neighbours of x (width in_channels);
    fused: layers.gin_aggregate with (1 + eps) x, whose eps gradient is
    gop's (unfused: torch's, from the epilogue)."""
    if fused:
        wrt = (("X", "Xd") if input_grad else ()) + (("eps",) if train and train_eps else ())
        return [Call(core.layers.gin_aggregate, graph, {"F": in_channels}, wrt, schedule)]
    return [Call(core.stdlib.copy_u_sum, graph, {"F": in_channels},
                 ("X",) if input_grad else (), schedule)]


def gat(graph, in_channels, out_channels, heads=1, schedule=None, input_grad=False,
        train=True):
    """GATConv: the fused attention on the graph with one self-loop per
    vertex (PyG's remove + add self-loops), heads x out_channels; Z, As and
    Ad come from the weights, so they require a gradient in training."""
    need = _needs(train, input_grad)
    return [Call(core.layers.gat_attention, graph.with_self_loops(),
                 {"H": heads, "C": out_channels}, ("Z", "As", "Ad") if need else (),
                 schedule)]


__all__ = ["OWN", "Call", "gcn", "sage", "gin", "gat"]
