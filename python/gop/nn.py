"""GNN layers as torch.nn.Modules whose graph work is gop's operators.

GCNConv, GINConv, GATConv and SAGEConv compute what PyTorch Geometric's
convolutions of the same names compute (with their defaults), and hold the
same parameters under the same names and shapes, so a PyG model's
state_dict loads into these (and back). The dense updates are torch's (cuBLAS
on the GPU); the aggregations are gop operators (examples/models/layers.gop
and the standard library), run on the tensors where they are: CUDA tensors
on the GPU in the current stream, CPU tensors on the reference interpreter.

forward(x, graph) takes a gop.Graph or PyG's edge_index (converted once and
cached by its storage). Each layer takes schedule= for its graph operator:
"auto" (gop_choose_schedule's pick for the graph at the call's width, and
the same for each derived operator of its backward: bench/train.py trains
with it), a named schedule or directives, "default" (the C API's default
mapping), or None (the default: "auto" on CUDA tensors where libgop can
compile, else the default mapping, the only one needing no kernel
prepared per width on a machine without LLVM: gop.auto.cuda_default). Which operator a layer calls, on which graph and at
which width, is gop.plan's (the same functions prepare the kernels).

The layers train: their parameters are torch Parameters, the dense parts
plain torch, and each gop operator a torch.autograd.Function (gop.autograd)
whose backward is the operator's gradient derived in the IR, on the GPU in
the current stream for CUDA tensors (bench/train.py trains GCN, GAT and
GraphSAGE against PyG step for step).
"""
import math

import torch
from torch import nn
from torch.nn import functional as F

from . import plan
from .core import Graph


# True while torch.compile (dynamo) traces the caller (torch >= 2.3; older
# torch compiles nothing of gop's: always False)
_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)


# ---- graphs and what the layers derive from them ----

_edge_index_cache = {}


def as_graph(graph, num_nodes=None):
    """A gop.Graph for `graph`: itself, or PyG's edge_index (cached by its
    storage, shape and version, so a model's layers convert it once)."""
    if isinstance(graph, Graph):
        return graph
    if _compiling():
        raise TypeError("gop.nn under torch.compile takes a gop.Graph, not an edge_index "
                        "tensor (the compiled code cannot see a new tensor's edges): pass "
                        "gop.nn.as_graph(edge_index) to the model")
    if not torch.is_tensor(graph):
        return Graph.from_edge_index(graph, num_nodes)
    key = (graph.data_ptr(), tuple(graph.shape), graph._version, num_nodes, str(graph.device))
    g = _edge_index_cache.get(key)
    if g is None:
        g = Graph.from_edge_index(graph, num_nodes)
        if len(_edge_index_cache) > 16:
            _edge_index_cache.clear()
        # setdefault: threads converting one edge_index at once share the first
        g = _edge_index_cache.setdefault(key, g)
    return g


def gcn_norm(graph, device):
    """Graph.gcn_norm's (W, S) as float32 tensors on `device`, made once
    and kept in the graph's memo (a BatchGraph's: its gcn_weights); while
    torch.compile traces, made eagerly and read from there as inputs of
    the compiled graph."""
    if _compiling():
        # made eagerly, then read from where _gcn_norm keeps them: inputs of
        # the compiled graph (a BatchGraph's change with each load)
        from . import torch_ops
        torch_ops.eager(_gcn_norm, graph, str(device))
        if hasattr(graph, "gcn_weights"):
            return graph.gcn_weights()
        return graph._memo[("gcn_norm_t", str(device))]
    return _gcn_norm(graph, device)


def _gcn_norm(graph, device):
    if hasattr(graph, "gcn_weights"):  # a BatchGraph: the loaded batch's, in place
        w, s = graph.gcn_weights()
        if w.device != torch.device(device):
            raise ValueError(f"GCNConv: the BatchGraph is on {w.device}, the input on {device}")
        return w, s
    key = ("gcn_norm_t", str(device))
    if key not in graph._memo:
        w, s = graph.gcn_norm()
        # setdefault: threads that made it at once all get the first
        graph._memo.setdefault(key, (torch.from_numpy(w).to(device),
                                     torch.from_numpy(s).to(device)))
    return graph._memo[key]


def gcn_loop_weights(graph, device):
    """Graph.gcn_graph's weights W as a float32 tensor on `device`, made
    once and kept in the graph's memo; while torch.compile traces, made
    eagerly and read from there (an input of the compiled graph, as
    gcn_norm's)."""
    if _compiling():
        from . import torch_ops
        torch_ops.eager(_gcn_loop_weights, graph, str(device))
        return graph._memo[("gcn_graph_w", str(device))]
    return _gcn_loop_weights(graph, device)


def _gcn_loop_weights(graph, device):
    key = ("gcn_graph_w", str(device))
    if key not in graph._memo:
        # setdefault: threads that made it at once all get the first
        graph._memo.setdefault(key, torch.from_numpy(graph.gcn_graph()[1]).to(device))
    return graph._memo[key]


def _glorot(t):
    a = math.sqrt(6.0 / (t.size(-2) + t.size(-1)))
    with torch.no_grad():
        t.uniform_(-a, a)


class _Linear(nn.Linear):
    """torch.nn.Linear with PyG's initialisation (glorot weight, zero bias)."""

    def reset_parameters(self):
        _glorot(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)


def _plan(fn, graph, *args):
    """The one plan.Call of fn(graph, *args) (gop.plan); while torch.compile
    traces, its constants (gop.torch_ops.plan: made eagerly, guarded on the
    graph)."""
    if _compiling():
        from . import torch_ops
        return torch_ops.plan(fn, graph, *args)
    c, = fn(graph, *args)
    return c


def _run(c, *tensors):
    """c.op(c.graph, *tensors, schedule=c.schedule); while torch.compile
    traces, through the operator's torch.library custom operator
    (gop.torch_ops), which the compiled graph keeps as one node."""
    if _compiling():
        from . import torch_ops
        return torch_ops.run(c, *tensors)
    return c.op(c.graph, *tensors, schedule=c.schedule)


# ---- the layers ----

class GCNConv(nn.Module):
    """torch_geometric.nn.GCNConv(in_channels, out_channels): parameters
    lin.weight [out, in] and bias [out]. fused=False (the default)
    propagates with the standard library's u_mul_e_sum (whose schedules the
    cost model and tuner cover) and the self-loop term in torch; fused=True
    with layers.gcn_propagate (aggregation and self-loop term in one
    operator, under its default schedule: 0.79x PyG on ogbn-arxiv on an
    H100, against 5.99x unfused; bench/results/2026-11-25-H100-python).
    Unfused on a Graph, the aggregation is one u_mul_e_sum over
    Graph.gcn_graph (the graph with its self-loops, edges in CSR order):
    no pass of its own for the self-loop term, W read in order (a schedule
    from the tuning database is looked up for that graph: tune
    graph.gcn_graph()[0]).
    Unfused, a widening layer (out_channels > in_channels) aggregates x
    before the linear map, as SAGEConv does: half the gather of 128 -> 256,
    and no aggregation in the backward when x needs no gradient."""

    def __init__(self, in_channels, out_channels, bias=True, schedule=None, fused=False):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.schedule, self.fused = schedule, fused
        self.lin = _Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_channels)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        self.lin.reset_parameters()
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x, graph):
        g = as_graph(graph, x.size(0))
        if not self.fused and not hasattr(g, "gcn_weights"):
            # one weighted sum over the graph with its self-loops (a
            # BatchGraph, whose edges change with each load, keeps the
            # self-loop term apart)
            c = _plan(plan.gcn, g, self.in_channels, self.out_channels, False,
                      self.schedule, x.requires_grad, self.training, True)
            w = gcn_loop_weights(g, x.device)
            if c.linear_first:
                y = _run(c, self.lin(x).contiguous(), w)
            else:
                y = self.lin(_run(c, x.contiguous(), w))
            return y + self.bias if self.bias is not None else y
        c = _plan(plan.gcn, g, self.in_channels, self.out_channels, self.fused,
                  self.schedule, x.requires_grad, self.training)
        w, s = gcn_norm(g, x.device)
        if c.linear_first:
            h = self.lin(x).contiguous()
            if self.fused:
                y = _run(c, h, h, w, s)
            else:
                y = _run(c, h, w)
                y = torch.addcmul(y, s.view(-1, 1), h)
        else:
            # widening: aggregate x, then the linear map (PyG maps first;
            # equal up to rounding)
            x = x.contiguous()
            y = self.lin(torch.addcmul(_run(c, x, w), s.view(-1, 1), x))
        return y + self.bias if self.bias is not None else y


class SAGEConv(nn.Module):
    """torch_geometric.nn.SAGEConv(in_channels, out_channels, aggr='mean'):
    lin_l (weight, bias) on the aggregated neighbours, lin_r (weight) on the
    vertex itself. aggr: 'mean', 'sum' (or 'add') or 'max'."""

    _ops = {"mean": "copy_u_mean", "sum": "copy_u_sum", "add": "copy_u_sum",
            "max": "copy_u_max"}

    def __init__(self, in_channels, out_channels, aggr="mean", bias=True, schedule=None):
        super().__init__()
        self.schedule = schedule
        if aggr not in self._ops:
            raise ValueError(f"SAGEConv: aggr {aggr!r} is not one of {sorted(self._ops)}")
        self.in_channels, self.out_channels, self.aggr = in_channels, out_channels, aggr
        self.lin_l = _Linear(in_channels, out_channels, bias=bias)
        self.lin_r = _Linear(in_channels, out_channels, bias=False)
        self.reset_parameters()

    def reset_parameters(self):
        self.lin_l.reset_parameters()
        self.lin_r.reset_parameters()

    def forward(self, x, graph):
        g = as_graph(graph, x.size(0))
        c = _plan(plan.sage, g, self.in_channels, self.out_channels, self.aggr,
                  self.schedule, x.requires_grad, self.training)
        x = x.contiguous()
        if c.linear_first:
            # sum and mean commute with the linear map: aggregate the
            # narrower side (PyG aggregates first; equal up to rounding)
            a = _run(c, F.linear(x, self.lin_l.weight).contiguous())
            if self.lin_l.bias is not None:
                a = a + self.lin_l.bias
        else:
            a = _run(c, x)
            if self.aggr == "max":  # PyG: a vertex with no in-edges gets 0
                a = torch.where(torch.isneginf(a), torch.zeros((), device=a.device), a)
            a = self.lin_l(a)
        return a + self.lin_r(x)


class GINConv(nn.Module):
    """torch_geometric.nn.GINConv(nn, eps=0., train_eps=False):
    nn((1 + eps) x + sum of the in-neighbours' x); parameters nn.* and eps.
    fused=False (the default) aggregates with the standard library's
    copy_u_sum and the (1 + eps) x term in torch, fused=True with
    layers.gin_aggregate (0.74x PyG on ogbn-arxiv on an H100 against 2.56x
    unfused)."""

    def __init__(self, nn_module, eps=0.0, train_eps=False, schedule=None, fused=False):
        super().__init__()
        self.nn = nn_module
        self.schedule, self.fused = schedule, fused
        if train_eps:
            self.eps = nn.Parameter(torch.tensor([float(eps)]))
        else:
            self.register_buffer("eps", torch.tensor([float(eps)]))

    def forward(self, x, graph):
        g = as_graph(graph, x.size(0))
        c = _plan(plan.gin, g, x.size(1), self.fused, isinstance(self.eps, nn.Parameter),
                  self.schedule, x.requires_grad, self.training)
        x = x.contiguous()
        eps = self.eps  # a Parameter with train_eps: its gradient flows
        if self.fused:
            a = _run(c, x, x, eps.reshape(()).contiguous())
        else:
            a = _run(c, x)
            a = torch.addcmul(a, x, 1 + eps)  # eps stays on the device: no sync
        return self.nn(a)


class GATConv(nn.Module):
    """torch_geometric.nn.GATConv(in_channels, out_channels, heads=1,
    concat=True, negative_slope=0.2): parameters lin.weight [heads * out,
    in] (older PyG: lin_src.weight, accepted when loading), att_src and
    att_dst [1, heads, out], bias [heads * out] (concat) or [out]."""

    def __init__(self, in_channels, out_channels, heads=1, concat=True, negative_slope=0.2,
                 bias=True, schedule=None):
        super().__init__()
        self.schedule = schedule
        if negative_slope != 0.2:
            raise ValueError("GATConv: gop's attention operator uses negative_slope 0.2")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.heads, self.concat = heads, concat
        self.lin = _Linear(in_channels, heads * out_channels, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_channels))
        n = heads * out_channels if concat else out_channels
        self.bias = nn.Parameter(torch.zeros(n)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        self.lin.reset_parameters()
        _glorot(self.att_src)
        _glorot(self.att_dst)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # PyG before 2.5 calls the projection lin_src (and lin_dst, the same)
        old = prefix + "lin_src.weight"
        if old in state_dict and prefix + "lin.weight" not in state_dict:
            state_dict[prefix + "lin.weight"] = state_dict.pop(old)
        state_dict.pop(prefix + "lin_dst.weight", None)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, x, graph):
        H, C = self.heads, self.out_channels
        c = _plan(plan.gat, as_graph(graph, x.size(0)), self.in_channels, C, H, self.schedule,
                  x.requires_grad, self.training)
        z = self.lin(x).view(-1, H, C)
        a_src = (z * self.att_src).sum(-1).contiguous()
        a_dst = (z * self.att_dst).sum(-1).contiguous()
        y = _run(c, z.contiguous(), a_src, a_dst)
        y = y.reshape(-1, H * C) if self.concat else y.mean(dim=1)
        return y + self.bias if self.bias is not None else y


__all__ = ["GCNConv", "SAGEConv", "GINConv", "GATConv", "as_graph", "gcn_norm"]
