"""PyTorch Geometric models on gop's operators, unchanged:
`gop.pyg.accelerate(model)`.

    model = GCN(...)                      # built from torch_geometric.nn as usual
    gop.pyg.accelerate(model)             # the same object, routed through gop
    out = model(data.x, data.edge_index)  # same outputs and gradients as PyG's
    gop.pyg.report(model)                 # what each layer ran, and why not gop

accelerate() changes no parameter, buffer or state_dict key: an optimizer
made before it keeps working, and restore(model) puts PyG's own methods
back. It sets, on each torch_geometric MessagePassing instance in the
model, instance attributes that take the place of the class's methods:

* GCNConv.forward and GATConv.forward: PyG's computation with its graph
  work in one gop operator. GCN: the linear map, then u_mul_e_sum with the
  normalised weights: where there is no edge_weight over the graph with its
  self-loops (Graph.gcn_graph, weights made once per graph: gop.nn.GCNConv's
  form), else over the graph's edges with weights in torch on each call (so
  edge_weight gets its gradient) and the self-loop term in torch. GAT:
  layers.gat_attention (scores, edge softmax and aggregation in one
  operator) on the graph with one self-loop per vertex.
* SAGEConv.forward where out_channels < in_channels (sum or mean): the
  linear map first, then copy_u_sum / copy_u_mean of the narrower rows
  (equal up to rounding; PyG aggregates first); else PyG's forward with
  gop's propagate, below.
* MessagePassing.propagate, for every other layer (GINConv, SAGEConv and
  any MessagePassing of your own) whose aggregation is sum, mean or max:
  where the message is the source's features (`message` is
  MessagePassing's, SAGEConv's or GINConv's) copy_u_sum / copy_u_mean /
  copy_u_max, with GCNConv's or GraphConv's edge_weight message
  u_mul_e_sum; other messages are computed by PyG and aggregated by
  copy_e_sum / copy_e_mean / copy_e_max (MessagePassing.aggregate).

Everything else of the layer (linear maps, MLPs, eps, root weights,
normalisation, dropout of features) is PyG's own code, unchanged.

Where gop cannot compute what PyG does, the layer falls back to PyG's own
path for that call, warns once per layer and reason (FallbackWarning), and
report() names the reason; accelerate(model, strict=True) raises
Unsupported instead. The cases:

* the adjacency as a SparseTensor or torch sparse tensor, flow
  "target_to_source", bipartite graphs (x as a pair of different sizes, or
  size=), a node dimension other than the first;
* an aggregation other than sum, mean and max (min, mul, std, softmax,
  lists of aggregations, learnable ones), an overridden update();
* GATConv with edge features in the attention (edge_dim with edge_attr),
  attention dropout while training, return_attention_weights,
  negative_slope other than 0.2, separate source and target weights
  (lin_src / lin_dst); GCNConv with aggr other than "add";
* hooks registered on the layer's propagate, message or aggregate,
  explain mode, decomposed_layers > 1;
* tensors other than float32 (float64 on the CPU runs on the interpreter
  in double), or on a GPU other than gop's (GOP_CUDA_DEVICE);
* while torch.compile traces the model (gop needs the edges on the host;
  compile a model of gop.nn layers instead, README).

A layer whose forward falls back may still aggregate through gop: PyG's
forward calls propagate, which is accelerated as above (report says
"PyG forward, gop aggregation").

Graphs: each edge_index tensor is converted to a gop.Graph once (its edges
copied to the host) and kept while the tensor lives and is not modified
in place; a loader that makes a new edge_index per batch converts each.
Where the tensors are: CUDA tensors run on the GPU in the current stream,
CPU tensors on gop's reference interpreter (slow: for tests).
schedule= is gop.nn's: None (the package's default: "auto" on CUDA tensors
where libgop can compile, else the default mapping), "auto" or "default".

Kernels for a machine without LLVM: record() lists the gop calls a model
makes (run it once on a small graph inside it), prepare(calls, graph)
compiles them for the real graph into the kernel cache folder.
"""
import contextlib
import types
import warnings
import weakref

import torch

from . import core, plan

try:
    from torch_geometric.nn import conv as _pyg_conv
    from torch_geometric.nn.conv import MessagePassing
except ImportError:  # pragma: no cover - accelerate() says so
    _pyg_conv = MessagePassing = None


class Unsupported(NotImplementedError):
    """A layer gop cannot run as PyG does (accelerate(strict=True))."""


class FallbackWarning(UserWarning):
    """A layer ran on PyG's own path: the message says which and why."""


_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)

# the instance attributes accelerate() sets, in place of the class's methods
_METHODS = ("forward", "propagate", "aggregate")


class _State:
    """What accelerate() keeps on a layer (as `_gop`)."""

    def __init__(self, name, schedule, strict):
        self.name, self.schedule, self.strict = name, schedule, strict
        self.route = "not called yet"
        self.warned = set()
        self.edges = None  # the edge_index of the propagate call under way
        self.forward_why = None  # why the forward under way is PyG's


# ---- graphs ----

_graphs = {}  # id(edge_index) -> (weakref, version, num_nodes, gop.Graph)


def graph_of(edge_index, num_nodes):
    """The gop.Graph of PyG's edge_index [2, E] with `num_nodes` vertices,
    made once per tensor (while it lives and is not changed in place), on
    the host."""
    key = id(edge_index)
    hit = _graphs.get(key)
    if (hit is not None and hit[0]() is edge_index and hit[1] == edge_index._version
            and hit[2] == num_nodes):
        return hit[3]
    ei = edge_index.detach()
    if type(ei) is not torch.Tensor:  # PyG's EdgeIndex: its plain tensor
        ei = ei.as_subclass(torch.Tensor)
    # built on the host: a graph built on the GPU from a CUDA edge_index
    # takes no neighbour-group schedule (the fastest on skewed graphs, which
    # "auto" picks on a host-built one, and GAT's rules) nor CPU tensors;
    # the edges are copied once per edge_index
    g = core.Graph.from_edge_index(ei.cpu(), num_nodes)

    def drop(ref, key=key):
        h = _graphs.get(key)
        if h is not None and h[0] is ref:
            del _graphs[key]
    _graphs[key] = (weakref.ref(edge_index, drop), edge_index._version, num_nodes, g)
    return g


# ---- recording the gop calls, for kernel preparation ----

_recording = None


class Recorded:
    """A gop call made under record(): op, ext (extents), wrt (the inputs
    that needed a gradient), schedule, and on which graph: "graph" (the
    layer's), "self_loops" (it with one self-loop per vertex, GAT's) or
    "gcn" (Graph.gcn_graph's, GCN's): graph_on(graph, on) is that graph."""

    def __init__(self, op, ext, wrt, schedule, on):
        self.op, self.ext, self.wrt, self.schedule, self.on = op, ext, wrt, schedule, on

    def key(self):
        return (self.op.name, tuple(sorted(self.ext.items())), self.wrt, self.schedule, self.on)

    def __repr__(self):
        ext = ", ".join(f"{k}={v}" for k, v in self.ext.items())
        return f"Recorded({self.op.name}, {ext}, wrt={self.wrt}, {self.schedule!r}, {self.on})"


@contextlib.contextmanager
def record():
    """Lists (as Recorded, each distinct call once) the gop calls that
    accelerated layers make inside the block: run the model's forward
    and backward once on a small graph with the real feature widths."""
    global _recording
    calls, keys = [], set()
    prev, _recording = _recording, (calls, keys)
    try:
        yield calls
    finally:
        _recording = prev


graph_on = plan.graph_on  # the graph a Recorded call with `on` runs on


def prepare(calls, graph):
    """Compiles (or finds in the kernel cache) the kernels of `calls`
    (record()'s) for `graph`, a gop.Graph: forward and derived backward,
    under "auto" every schedule a call may run on that graph. Without a
    GPU this fills the cache folder with packs (GOP_CACHE_DIR), which a
    gop without LLVM loads."""
    for c in calls:
        plan.Call(c.op, graph_on(graph, c.on), c.ext, c.wrt, c.schedule).prepare()


def _run(op, graph, *tensors, schedule=None, on="graph"):
    if _recording is not None:
        names = [s.name for s in op.inputs]
        grad = torch.is_grad_enabled()
        wrt = tuple(n for n, t in zip(names, tensors) if grad and t.requires_grad)
        ext = op.extents_of(graph, dict(zip(names, tensors)))
        r = Recorded(op, ext, wrt, schedule, on)
        if r.key() not in _recording[1]:
            _recording[1].add(r.key())
            _recording[0].append(r)
    return op(graph, *tensors, schedule=schedule)


# ---- what gop can take ----

def _tensor_reason(t, what):
    """Why gop cannot take tensor `t` (None when it can)."""
    if t.dtype != torch.float32 and not (t.dtype == torch.float64 and not t.is_cuda):
        return f"{what} is {t.dtype} (gop runs float32, and float64 on the CPU)"
    if t.is_cuda:
        dev = t.device.index if t.device.index is not None else torch.cuda.current_device()
        if dev != core._gop_device():
            return f"{what} is on cuda:{dev}, gop on cuda:{core._gop_device()} (GOP_CUDA_DEVICE)"
    return None


def _edges_reason(self, edge_index):
    if not isinstance(edge_index, torch.Tensor) or edge_index.is_sparse or \
            edge_index.layout != torch.strided:
        return "the adjacency is a sparse matrix (gop takes an edge_index [2, E])"
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        return f"edge_index has shape {list(edge_index.shape)}, not [2, E]"
    if edge_index.dtype not in (torch.int64, torch.int32):
        return f"edge_index is {edge_index.dtype}"
    if getattr(self, "flow", "source_to_target") != "source_to_target":
        return f"flow {self.flow!r} (gop aggregates source to target)"
    return None


def _layer_reason(self):
    """Why a MessagePassing layer's calls cannot be gop's, whatever the
    inputs (None when they can)."""
    if _compiling():
        return "torch.compile is tracing (gop needs the edges on the host)"
    if getattr(self, "explain", False):
        return "explain mode"
    if getattr(self, "decomposed_layers", 1) != 1:
        return "decomposed_layers > 1"
    for h in ("_propagate_forward_pre_hooks", "_propagate_forward_hooks",
              "_message_forward_pre_hooks", "_message_forward_hooks",
              "_aggregate_forward_pre_hooks", "_aggregate_forward_hooks"):
        if getattr(self, h, None):
            return f"a hook is registered ({h.strip('_')})"
    return None


_AGGRS = {"SumAggregation": "sum", "MeanAggregation": "mean", "MaxAggregation": "max"}


def _aggr(self):
    """"sum", "mean" or "max" for the layer's aggregation, else None."""
    m = getattr(self, "aggr_module", None)
    return _AGGRS.get(type(m).__name__) if m is not None and \
        type(m).__module__.startswith("torch_geometric.nn.aggr") else None


def _decline(self, why):
    """Notes that the layer takes PyG's path for `why`: raises Unsupported
    under strict=True, else warns once per reason."""
    st = self._gop
    st.route = f"PyG: {why}"
    if st.strict:
        raise Unsupported(f"gop.pyg: {st.name} ({type(self).__name__}): {why}")
    if why not in st.warned:
        st.warned.add(why)
        warnings.warn(f"gop.pyg: {st.name} ({type(self).__name__}) runs on PyG's own path: "
                      f"{why}", FallbackWarning, stacklevel=3)


def _forward_fallback(self, why, *args):
    """PyG's forward of the layer, whose propagate may still be gop's."""
    _decline(self, why)
    st = self._gop
    st.forward_why = why
    try:
        return type(self).forward(self, *args)
    finally:
        st.forward_why = None


def _route(st, what):
    st.route = f"PyG forward ({st.forward_why}), gop: {what}" if st.forward_why else \
        f"gop: {what}"


# ---- GCNConv ----

def _gcn_forward(self, x, edge_index, edge_weight=None):
    why = _layer_reason(self) or _edges_reason(self, edge_index)
    if why is None:
        if not isinstance(x, torch.Tensor):
            why = "x is a pair (bipartite graph)"
        elif x.dim() != 2:
            why = f"x has {x.dim()} dimensions, not 2"
        elif self.aggr not in ("add", "sum"):
            why = f"GCNConv with aggr {self.aggr!r}"
        else:
            why = _tensor_reason(x, "x") or (
                edge_weight is not None and _tensor_reason(edge_weight, "edge_weight")) or None
    if why is not None:
        return _forward_fallback(self, why, x, edge_index, edge_weight)
    st = self._gop
    g = graph_of(edge_index, x.size(0))
    h = self.lin(x).contiguous()
    op = core.stdlib.u_mul_e_sum
    if not self.normalize:
        if edge_weight is None:
            y = _run(core.stdlib.copy_u_sum, g, h, schedule=st.schedule)
            st.route = "gop: copy_u_sum"
        else:
            y = _run(op, g, h, edge_weight.to(h.dtype).contiguous(), schedule=st.schedule)
            st.route = "gop: u_mul_e_sum"
    elif edge_weight is None and self.add_self_loops:
        # PyG's add_remaining_self_loops gives every self-loop weight 1
        # when there is no edge_weight (improved's 2 only fills weights
        # given): one weighted sum over the graph with its self-loops and
        # gcn_norm's weights (gop.Graph.gcn_graph), made once per graph
        from . import nn as gnn
        w = gnn.gcn_loop_weights(g, h.device)
        y = _run(op, g.gcn_graph()[0], h, w.to(h.dtype), schedule=st.schedule, on="gcn")
        st.route = "gop: u_mul_e_sum with self-loops"
    else:
        w, s = _gcn_weights(self, edge_index, edge_weight, x.size(0), h.dtype)
        y = _run(op, g, h, w, schedule=st.schedule)
        if s is not None:
            y = torch.addcmul(y, s.view(-1, 1), h)
        st.route = "gop: u_mul_e_sum" + (" + self-loop term" if s is not None else "")
    return y + self.bias if self.bias is not None else y


def _gcn_weights(self, edge_index, edge_weight, n, dtype):
    """PyG's gcn_norm in torch, differentiable in edge_weight, on the graph
    as it is: (W [E], S [N] or None). The graph's own self-loops get weight
    0 in W and their weight (the last one's, as PyG takes it; else the fill
    value) in S, the self-loop term: what add_remaining_self_loops does by
    removing them and appending one per vertex."""
    src, dst = edge_index[0].long(), edge_index[1].long()
    ew = (torch.ones(src.numel(), dtype=dtype, device=src.device) if edge_weight is None
          else edge_weight.to(dtype).view(-1))
    loop_w = None
    if self.add_self_loops:
        loop = src == dst
        fill = 2.0 if self.improved else 1.0
        if edge_weight is None:
            fill = 1.0  # as PyG: with no edge_weight every weight is 1
        loop_w = torch.full((n,), fill, dtype=dtype, device=src.device)
        # a vertex's last self-loop gives its weight (PyG's assignment on
        # the CPU; index_put would give a repeated vertex's gradient to all)
        ids = torch.arange(src.numel(), device=src.device)
        last = torch.full((n,), -1, dtype=ids.dtype, device=src.device)
        last = last.scatter_reduce(0, src[loop], ids[loop], reduce="amax")
        has = last >= 0
        loop_w = torch.where(has, ew[last.clamp(min=0)], loop_w)
        ew = torch.where(loop, torch.zeros((), dtype=dtype, device=ew.device), ew)
    deg = torch.zeros(n, dtype=dtype, device=src.device).index_add(0, dst, ew)
    if loop_w is not None:
        deg = deg + loop_w
    dis = deg.pow(-0.5)
    dis = dis.masked_fill(dis == float("inf"), 0.0)
    w = (dis[src] * ew * dis[dst]).contiguous()
    s = None if loop_w is None else (dis * loop_w * dis).contiguous()
    return w, s


# ---- GATConv ----

def _gat_forward(self, x, edge_index, edge_attr=None, size=None,
                 return_attention_weights=None):
    why = _layer_reason(self) or _edges_reason(self, edge_index)
    if why is None:
        if not isinstance(x, torch.Tensor):
            why = "x is a pair (bipartite graph)"
        elif x.dim() != 2:
            why = f"x has {x.dim()} dimensions, not 2"
        elif size is not None:
            why = "size= is given"
        elif return_attention_weights is not None:
            why = "return_attention_weights (gop's attention keeps no weights)"
        elif self.lin is None:
            why = "separate source and target weights (lin_src, lin_dst)"
        elif self.negative_slope != 0.2:
            why = f"negative_slope {self.negative_slope} (gop's attention uses 0.2)"
        elif self.dropout > 0 and self.training:
            why = "attention dropout while training"
        elif edge_attr is not None and getattr(self, "lin_edge", None) is not None:
            why = "edge features in the attention (edge_dim)"
        else:
            why = _tensor_reason(x, "x")
    if why is not None:
        return _forward_fallback(self, why, x, edge_index, edge_attr, size,
                                 return_attention_weights)
    st = self._gop
    H, C = self.heads, self.out_channels
    res = self.res(x) if getattr(self, "res", None) is not None else None
    z = self.lin(x).view(-1, H, C)
    a_src = (z * self.att_src).sum(-1).contiguous()
    a_dst = (z * self.att_dst).sum(-1).contiguous()
    g = graph_of(edge_index, x.size(0))
    on = "self_loops" if self.add_self_loops else "graph"
    if self.add_self_loops:
        g = g.with_self_loops()
    y = _run(core.layers.gat_attention, g, z.contiguous(), a_src, a_dst,
             schedule=st.schedule, on=on)
    st.route = "gop: gat_attention"
    y = y.reshape(-1, H * C) if self.concat else y.mean(dim=1)
    if res is not None:
        y = y + res
    return y + self.bias if self.bias is not None else y


# ---- SAGEConv ----

def _sage_forward(self, x, edge_index, size=None):
    """SAGEConv's forward with the linear map first where that narrows the
    aggregation (sum and mean commute with it: lin_l(aggr(x)) =
    aggr(x W^T) + b, a vertex with no in-edge giving b either way; equal up
    to rounding); else PyG's own forward, whose propagate is gop's."""
    aggr = _aggr(self)
    lin = getattr(self, "lin_l", None)
    w = getattr(lin, "weight", None)
    if not (isinstance(x, torch.Tensor) and x.dim() == 2 and size is None
            and aggr in ("sum", "mean") and not self.project
            and isinstance(w, torch.nn.Parameter) and w.dim() == 2
            and not isinstance(w, torch.nn.parameter.UninitializedParameter)
            and w.size(0) < w.size(1) and _layer_reason(self) is None
            and _edges_reason(self, edge_index) is None and _tensor_reason(x, "x") is None):
        return type(self).forward(self, x, edge_index, size)
    st = self._gop
    g = graph_of(edge_index, x.size(0))
    name = _COPY_OPS[aggr]
    h = torch.nn.functional.linear(x, w).contiguous()
    out = _run(core.stdlib[name], g, h, schedule=st.schedule)
    if lin.bias is not None:
        out = out + lin.bias
    if self.root_weight:
        out = out + self.lin_r(x)
    if self.normalize:
        out = torch.nn.functional.normalize(out, p=2.0, dim=-1)
    st.route = f"gop: {name} (linear map first)"
    return out


# ---- any MessagePassing: propagate and aggregate ----

def _message_kind(self):
    """"copy" where the layer's message is the source's features x_j,
    "weighted" where it is edge_weight * x_j (GCNConv's, GraphConv's), else
    None (computed by PyG, aggregated by gop)."""
    m = type(self).message
    if m is MessagePassing.message:
        return "copy"
    for cls, kind in (("SAGEConv", "copy"), ("GINConv", "copy"), ("GCNConv", "weighted"),
                      ("GraphConv", "weighted")):
        c = getattr(_pyg_conv, cls, None)
        if c is not None and m is c.message:
            return kind
    return None


_COPY_OPS = {"sum": "copy_u_sum", "mean": "copy_u_mean", "max": "copy_u_max"}
_EDGE_OPS = {"sum": "copy_e_sum", "mean": "copy_e_mean", "max": "copy_e_max"}


def _propagate(self, edge_index, size=None, **kwargs):
    base = type(self).propagate
    st = self._gop
    aggr = _aggr(self)
    why = _layer_reason(self) or _edges_reason(self, edge_index)
    if why is None and aggr is None:
        why = f"aggregation {self.aggr!r} (gop has sum, mean and max)"
    if why is None and type(self).update is not MessagePassing.update:
        why = "update() is overridden"
    if why is not None:
        _decline(self, why)
        return base(self, edge_index, size=size, **kwargs)
    kind = _message_kind(self)
    x = kwargs.get("x")
    fast = None
    if kind is not None and isinstance(x, (torch.Tensor, tuple)):
        fast = _propagate_copy(self, kind, aggr, edge_index, size, kwargs)
    if fast is not None:
        return fast
    # PyG computes the messages; aggregate() below sums them through gop
    st.edges = edge_index
    _route(st, f"{_EDGE_OPS[aggr]} of PyG's messages")
    try:
        return base(self, edge_index, size=size, **kwargs)
    finally:
        st.edges = None


def _propagate_copy(self, kind, aggr, edge_index, size, kwargs):
    """propagate() for a message x_j (or edge_weight * x_j): one gop
    aggregation of x's rows; None where that does not apply (PyG's
    messages are then aggregated by gop)."""
    st = self._gop
    x = kwargs["x"]
    if isinstance(x, tuple) and len(x) != 2:
        return None
    x_src, x_dst = x if isinstance(x, tuple) else (x, x)
    if not isinstance(x_src, torch.Tensor) or x_src.dim() < 2:
        return None
    if self.node_dim not in (0, -x_src.dim()):
        return None
    n = x_src.size(0)
    if (x_dst is not None and x_dst.size(0) != n) or \
            (size is not None and tuple(size) != (n, n)):
        return None
    if _tensor_reason(x_src, "x"):
        return None
    ew = kwargs.get("edge_weight") if kind == "weighted" else None
    if ew is not None and (aggr != "sum" or _tensor_reason(ew, "edge_weight")):
        return None
    if set(kwargs) - {"x", "edge_weight"}:
        return None  # more arguments than the message reads: PyG's update may use them
    g = graph_of(edge_index, n)
    feat = x_src.reshape(n, -1).contiguous()
    if ew is not None:
        name = "u_mul_e_sum"
        y = _run(core.stdlib.u_mul_e_sum, g, feat, ew.to(feat.dtype).reshape(-1).contiguous(),
                 schedule=st.schedule)
    else:
        name = _COPY_OPS[aggr]
        y = _run(core.stdlib[name], g, feat, schedule=st.schedule)
        if aggr == "max":  # PyG: a vertex with no in-edges gets 0
            y = torch.where(torch.isneginf(y), torch.zeros((), dtype=y.dtype, device=y.device), y)
    _route(st, name)
    return y.view(n, *x_src.shape[1:])


def _aggregate(self, inputs, index, ptr=None, dim_size=None):
    base = type(self).aggregate
    st = self._gop
    edge_index = st.edges
    aggr = _aggr(self)
    if edge_index is None or aggr is None:
        return base(self, inputs, index, ptr=ptr, dim_size=dim_size)
    E = edge_index.size(1)
    why = None
    if not isinstance(inputs, torch.Tensor) or inputs.dim() < 1 or inputs.size(0) != E:
        why = "messages not one per edge"
    elif self.node_dim not in (0, -inputs.dim()) and inputs.dim() > 1:
        why = "a node dimension other than the first"
    elif index.numel() != E or index.data_ptr() != edge_index[1].data_ptr() or \
            (E > 1 and index.stride(0) != edge_index.stride(1)):
        why = "messages not in edge_index's order"
    elif dim_size is None:
        why = "no dim_size"
    else:
        why = _tensor_reason(inputs, "the messages")
    if why is not None:
        _decline(self, why)
        return base(self, inputs, index, ptr=ptr, dim_size=dim_size)
    try:
        g = graph_of(edge_index, int(dim_size))
    except core.GopError as e:
        _decline(self, f"edge_index does not fit {dim_size} vertices ({str(e).splitlines()[-1]})")
        return base(self, inputs, index, ptr=ptr, dim_size=dim_size)
    name = _EDGE_OPS[aggr]
    y = _run(core.stdlib[name], g, inputs.reshape(E, -1).contiguous(), schedule=st.schedule)
    if aggr == "max":
        y = torch.where(torch.isneginf(y), torch.zeros((), dtype=y.dtype, device=y.device), y)
    return y.view(int(dim_size), *inputs.shape[1:])


# ---- the entry points ----

def _layers(model):
    if MessagePassing is None:
        raise ImportError("gop.pyg needs torch_geometric (pip install torch_geometric)")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"gop.pyg.accelerate takes a torch.nn.Module, got "
                        f"{type(model).__name__}")
    return [(name or type(model).__name__, m) for name, m in model.named_modules()
            if isinstance(m, MessagePassing)]


def accelerate(model, schedule=None, strict=False):
    """Routes the graph work of every torch_geometric MessagePassing layer
    of `model` (itself one, or a Module holding them) through gop, in
    place; returns `model`. schedule: gop's schedule= for every call (None:
    the package's default, "auto" on CUDA tensors where libgop can compile;
    "auto"; "default": the default mapping). strict: raise Unsupported where a layer
    would fall back to PyG's own path. Calling it again updates schedule
    and strict."""
    if schedule not in (None, "auto", "default"):
        raise ValueError(f"gop.pyg.accelerate: schedule={schedule!r} (None, 'auto' or "
                         f"'default': a "
                         f"named schedule is written for one operator's loops)")
    for name, m in _layers(model):
        st = m.__dict__.get("_gop")
        if st is None:
            m._gop = _State(name, schedule, strict)
        else:
            st.schedule, st.strict = schedule, strict
        fwd = {"GCNConv": _gcn_forward, "GATConv": _gat_forward, "SAGEConv": _sage_forward}
        for cls, f in fwd.items():
            c = getattr(_pyg_conv, cls, None)
            # the class itself, or a subclass that keeps its forward
            if c is not None and isinstance(m, c) and type(m).forward is c.forward:
                m.forward = types.MethodType(f, m)
        m.propagate = types.MethodType(_propagate, m)
        m.aggregate = types.MethodType(_aggregate, m)
    return model


def restore(model):
    """Undoes accelerate(model): PyG's own methods again. Returns `model`."""
    for _, m in _layers(model):
        if "_gop" in m.__dict__:
            for a in _METHODS:
                f = m.__dict__.get(a)
                if isinstance(f, types.MethodType) and f.__func__ in (
                        _gcn_forward, _gat_forward, _sage_forward, _propagate, _aggregate):
                    del m.__dict__[a]
            del m.__dict__["_gop"]
    return model


def report(model):
    """{layer name: what its last call ran}: "gop: <operator>", "PyG:
    <reason>" (its own path), or "not called yet", for each accelerated
    layer of `model`."""
    return {m._gop.name: m._gop.route for _, m in _layers(model) if "_gop" in m.__dict__}


__all__ = ["accelerate", "restore", "report", "record", "prepare", "graph_of", "Unsupported",
           "FallbackWarning", "Recorded"]
