"""gop operators as torch.library custom operators, for torch.compile.

torch.compile (dynamo) cannot trace a gop call: it is Python over ctypes.
Registered as custom operators, each gop operator is one opaque node of
the compiled graph instead, with what the compiler needs to know of it:

* `torch.ops.gop.<name>(graph, schedule, ext, *tensors)`: the forward,
  for every operator of the standard library and of gop.layers (registered
  when this module is imported) and of any library passed to register().
  `graph` is the key of a gop.Graph (graph_key: a string, which dynamo
  keeps constant where it would make a recompiled int dynamic), `schedule` the call's
  schedule= (None: the default mapping), `ext` the operator's extents in
  the order of Operator.extents. Its kernel is the ordinary call: CUDA
  tensors on the GPU in the current stream, CPU tensors on the interpreter.
* a fake (meta) implementation: the outputs' shapes from the signature on
  the graph (|V|, |E|) and the extents, so the compiler never runs gop to
  learn them;
* autograd: the backward is `torch.ops.gop.<name>_backward`, another custom
  operator running the gradient derived in the IR (Operator.grad) for the
  inputs that need one, with its own fake implementation. The backward is
  not itself differentiable (as with gop.autograd).

Calling: `call(op, graph, *tensors, schedule=None, **extents)` is
`op(graph, *tensors, ...)` through the custom operator, in eager code and
in code torch.compile traces. gop.nn's layers go this way while
torch.compile traces them (gop.nn's _plan and _run), so a model of gop.nn
layers on a gop.Graph compiles with fullgraph=True, with no graph break.

What needs gop's C library rather than tensors (a graph's key, an
operator's registration, a layer's plan with its schedule choice and
self-loop graph, GCN's normalisation weights) runs eagerly even while
dynamo traces: plan and eager are
torch._dynamo.assume_constant_result functions, whose results are
constants of the compiled code and whose object arguments (the graph, the
operator) are guarded by identity, so another gop.Graph recompiles. An
edge_index tensor is refused under compile (its edges are not guarded):
pass a gop.Graph. Shapes are static per graph (|V|, |E|); the feature
widths may be dynamic.
"""
import collections
import itertools
import re

import torch

from . import core
from .graph import graph_by_key

_lib = torch.library.Library("gop", "FRAGMENT")
_names = {}  # torch name -> Operator
_taken = set()

# an operator's dtype -> torch's (gop.operator._DTYPES)
_TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
                 "f64": torch.float64}


def graph_key(graph):
    """The string that stands for `graph` in custom-operator calls: the key
    every gop.Graph gets when it is made (gop.graph.graph_by_key finds it
    again, weakly). Under torch.compile it is an attribute read, so the
    compiled code is guarded on it: another graph recompiles."""
    return graph._torch_key


def _graph(key):
    g = graph_by_key(key)
    if g is None:
        raise core.GopError(f"gop: graph key {key} names no live gop.Graph (keys come from "
                            f"gop.torch_ops.graph_key)")
    return g


def _out_dtype(spec, tensors):
    # float64 CPU tensors run the operator in double on the interpreter
    # (gop.autograd): its outputs are float64 too
    ts = [t for t in tensors if t is not None]
    if ts and all(t.dtype == torch.float64 and t.device.type == "cpu" for t in ts):
        return torch.float64
    return _TORCH_DTYPES.get(spec.dtype, torch.float32)


def _ident(name):
    return re.sub(r"\W", "_", name)


def register(ops):
    """Registers an Operator, or every operator of a Library, as custom
    operators (forward and backward); returns the torch name of the last.
    Registering twice is a no-op."""
    if isinstance(ops, core.Library):
        name = None
        for op in ops:
            name = register(op)
        return name
    op = ops
    name = op.__dict__.get("_torch_name")
    if name:
        return name
    lib_tag = _ident(getattr(op.library, "name", "lib") or "lib")
    lib_tag = {"stdlib": "", "layers": "layers_"}.get(lib_tag, lib_tag + "_")
    base = _ident(lib_tag + op.name)
    name = base
    for n in itertools.count(2):  # the same name in another library, or retyped
        if name not in _taken and name + "_backward" not in _taken:
            break
        name = f"{base}_{n}"
    _taken.update((name, name + "_backward"))
    _define(op, name)
    op._torch_name = name
    _names[name] = op
    return name


def _define(op, name):
    # a tensor named like a leading argument gets a trailing underscore
    ins = ", ".join(f"Tensor {_ident(s.name)}" +
                    ("_" if s.name in ("graph", "schedule", "ext") else "")
                    for s in op.inputs)
    outs = ("Tensor" if len(op.outputs) == 1 else
            "(" + ", ".join("Tensor" for _ in op.outputs) + ")")
    _lib.define(f"{name}(str graph, str? schedule, SymInt[] ext, {ins}) -> {outs}")
    _lib.define(f"{name}_backward(str graph, str? schedule, SymInt[] ext, str wrt, "
                f"Tensor?[] inputs, Tensor?[] outputs, Tensor?[] adjoints) -> Tensor[]")
    qual, bqual = f"gop::{name}", f"gop::{name}_backward"

    def forward(graph, schedule, ext, *tensors):
        g = _graph(graph)
        xs = [t.contiguous() for t in tensors]
        with torch.no_grad():  # the plain call: autograd is this operator's own
            out = op(g, *xs, schedule=schedule, **dict(zip(op.extents, ext)))
        return out

    def fake(graph, schedule, ext, *tensors):
        g = _graph(graph)
        e = dict(zip(op.extents, ext))
        like = tensors[0] if tensors else None
        res = tuple(torch.empty(s.shape(g, e), dtype=_out_dtype(s, tensors),
                                device=like.device if like is not None else "cpu")
                    for s in op.outputs)
        return res[0] if len(res) == 1 else res

    def backward_kernel(graph, schedule, ext, wrt, inputs, outputs, adjoints):
        g = _graph(graph)
        gr = op.grad(tuple(wrt.split(",")))
        if _out_dtype(op.outputs[0], list(inputs) + list(outputs)) == torch.float64:
            def np(x):
                return None if x is None else x.detach().to(torch.float64).contiguous().numpy()
            res = gr.f64(g, [np(x) for x in inputs], [np(y) for y in outputs],
                         [np(a) for a in adjoints])
            return [torch.from_numpy(r) for r in res]
        def t(x):
            return None if x is None else x.contiguous()
        adj = [None if a is None else a.float().contiguous() for a in adjoints]
        with torch.no_grad():
            res = gr(g, [t(x) for x in inputs], [t(y) for y in outputs], adj,
                     schedule=core.backward_schedule(schedule))
        return list(res)

    def backward_fake(graph, schedule, ext, wrt, inputs, outputs, adjoints):
        g = _graph(graph)
        e = dict(zip(op.extents, ext))
        specs = {s.name: s for s in op.inputs}
        like = next(x for x in list(adjoints) + list(outputs) + list(inputs) if x is not None)
        return [torch.empty(specs[w].shape(g, e), dtype=_out_dtype(specs[w], inputs),
                            device=like.device) for w in wrt.split(",")]

    _lib.impl(name, forward, "CompositeExplicitAutograd")
    _lib.impl(f"{name}_backward", backward_kernel, "CompositeExplicitAutograd")
    torch.library.register_fake(qual, fake, lib=_lib)
    torch.library.register_fake(bqual, backward_fake, lib=_lib)

    n_in = len(op.inputs)

    def setup_context(ctx, inputs, output):
        graph, schedule, ext = inputs[:3]
        tensors = inputs[3:]
        outs = output if isinstance(output, tuple) else (output,)
        wrt = tuple(s.name for s, x in zip(op.inputs, tensors)
                    if isinstance(x, torch.Tensor) and x.requires_grad and
                    s.dtype.startswith("f"))
        ctx.graph, ctx.schedule, ctx.ext, ctx.wrt = graph, schedule, list(ext), wrt
        ctx.in_idx, ctx.out_idx = [], []
        if wrt:
            gr = op.grad(wrt)
            ctx.in_idx = [i for i, s in enumerate(op.inputs) if s.name in gr.reads_inputs]
            ctx.out_idx = [j for j, s in enumerate(op.outputs) if s.name in gr.reads_outputs]
            ctx.save_for_backward(*[tensors[i] for i in ctx.in_idx],
                                  *[outs[j] for j in ctx.out_idx])

    def backward(ctx, *grads):
        none = (None, None, None)
        if not ctx.wrt:
            return none + (None,) * n_in
        saved = ctx.saved_tensors
        inputs = [None] * n_in
        outputs = [None] * len(op.outputs)
        for k, i in enumerate(ctx.in_idx):
            inputs[i] = saved[k]
        for k, j in enumerate(ctx.out_idx):
            outputs[j] = saved[len(ctx.in_idx) + k]
        res = getattr(torch.ops.gop, f"{name}_backward")(
            ctx.graph, ctx.schedule, ctx.ext, ",".join(ctx.wrt), inputs, outputs, list(grads))
        out = [None] * n_in
        index = {s.name: i for i, s in enumerate(op.inputs)}
        for w, dx in zip(ctx.wrt, res):
            out[index[w]] = dx
        return none + tuple(out)

    torch.library.register_autograd(qual, backward, setup_context=setup_context, lib=_lib)


@torch._dynamo.assume_constant_result
def _signature(name):
    """Where each extent of the operator registered as `name` is read:
    (input, dimension) or None; made eagerly under torch.compile. (The
    functions run eagerly take constants only (names, keys, numbers):
    PyTorch 2.11's dynamo refuses an object such as a gop.Graph there.)"""
    op = _names[name]
    where = []
    for e in op.extents:
        at = [(i, d) for i, s in enumerate(op.inputs) for d, x in enumerate(s.dims) if x == e]
        where.append(at[0] if at else None)
    return tuple(where)


def call(op, graph, *tensors, schedule=None, **given):
    """op(graph, *tensors, schedule=..., **extents) through its custom
    operator: traceable by torch.compile, differentiable by the derived
    backward. `op` is an Operator (registered on first use); an extent no
    input shows (F of an operator whose inputs are all on edges) is given
    by name. The shapes are checked by the ordinary call (the kernel)."""
    name = getattr(op, "_torch_name", None) or register(op)
    where = _signature(name)
    if len(tensors) != len(op.inputs):
        raise TypeError(f"{op.name} takes {len(op.inputs)} input(s), got {len(tensors)}")
    ext = []
    for e, at in zip(op.extents, where):
        if e in given:
            ext.append(given[e])
        elif at is None:
            raise ValueError(f"{op.name}: extent {e} is not known from the inputs: pass {e}=N")
        else:
            ext.append(tensors[at[0]].shape[at[1]])
    return getattr(torch.ops.gop, name)(graph_key(graph), schedule, ext, *tensors)


class Planned(collections.namedtuple("Planned", "name graph schedule ext linear_first")):
    """A gop.plan.Call as constants a compiled graph can hold: the custom
    operator's name, the key of the graph it runs on, schedule=, the
    extents in the operator's order, and SAGEConv's linear_first."""


def plan(fn, graph, *args):
    """The one gop.plan.Call of fn(graph, *args) (a gop.plan function) as a
    Planned, made eagerly under torch.compile: the self-loop graph, the
    schedule choice and the operator's registration happen once, outside
    the compiled code, which is guarded on the graph's key."""
    return _plan(fn, graph_key(graph), *args)


@torch._dynamo.assume_constant_result
def _plan(fn, key, *args):
    c, = fn(_graph(key), *args)
    name = c.op.__dict__.get("_torch_name") or register(c.op)
    return Planned(name, graph_key(c.graph), c.schedule,
                   tuple(c.ext[e] for e in c.op.extents), c.linear_first)


def run(p, *tensors):
    """The call a Planned stands for, on these tensors, through its custom
    operator."""
    return getattr(torch.ops.gop, p.name)(p.graph, p.schedule, list(p.ext), *tensors)


def eager(fn, graph, *args):
    """Runs fn(graph, *args) eagerly, also while torch.compile traces, for
    what it leaves on the graph (GCN's normalisation in its memo): the
    traced code then reads that as ordinary tensors, inputs of the compiled
    graph guarded on the graph object. (A function under
    assume_constant_result that returned the tensors themselves made them
    constants named after the function, which PyTorch 2.11's inductor
    refuses twice in one graph.) args must be constants (numbers, strings)."""
    _eager(fn, graph_key(graph), *args)


@torch._dynamo.assume_constant_result
def _eager(fn, key, *args):
    fn(_graph(key), *args)
    return True


register(core.stdlib)
register(core.layers)

__all__ = ["Planned", "call", "eager", "graph_key", "plan", "register", "run"]
