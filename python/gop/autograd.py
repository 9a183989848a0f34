"""gop operators as torch.autograd.Functions.

An operator called on torch tensors of which one requires grad (with grad
mode on) runs through OperatorFunction: its forward is the ordinary call
(CUDA tensors: on the GPU in the current stream, zero copy; CPU tensors:
the interpreter), its backward the operator's gradient derived in the IR
(Operator.grad, docs/autodiff.md), run on the same device the same way.
Nothing else is needed: `y = gop.stdlib.copy_u_max(g, x); y.sum().backward()`
fills x.grad.

What the forward keeps for the backward is what the derived operators
read, no more: nothing for copy_u_sum (its gradient reads dY only), X for
u_mul_e_sum's dW, the output Y for copy_u_max (the argmax is recomputed
against it), the output A for edge_softmax (its Jacobian by the saved
output), Z, As, Ad and Y for GAT's attention. The backward derives one
joint operator for exactly the inputs that need a gradient in that call
(made once per set, then cached). It is not itself differentiable (no
double backward: torch says so if asked).

Schedules: a forward called with schedule="auto" runs its derived
operators with "auto" too, each getting gop_choose_schedule's pick for
itself on the graph at its width (core.backward_schedule; the exceptions,
each measured, are in core.AUTO_KEEPS_DEFAULT); a forward with the default
(None) or a named schedule runs them under the default mapping (a named
schedule is written for the forward's loops, not the gradient's).

CPU float64 tensors that require grad run forward and backward on the
interpreter in double precision (Operator.f64, Gradient.f64), so that
torch.autograd.gradcheck can check any operator:
`torch.autograd.gradcheck(lambda x: op(g, x), (x64,))`.
"""
import torch
from torch.autograd.function import once_differentiable

from . import core


class OperatorFunction(torch.autograd.Function):
    """apply(op, graph, opts, *inputs): op(graph, *inputs, **opts) with a
    backward; opts are the call's schedule/target/stream/extents keywords."""

    @staticmethod
    def forward(ctx, op, graph, opts, *inputs):
        ctx.f64 = _is_f64(inputs)
        if ctx.f64:  # CPU float64: the interpreter in double (torch.autograd.gradcheck)
            out = _f64_call(op.f64, graph, inputs, **opts)
        else:
            out = op(graph, *inputs, **opts)  # grad mode is off here: the plain call
        outs = out if isinstance(out, tuple) else (out,)
        need = ctx.needs_input_grad[3:]
        ctx.op, ctx.graph, ctx.n = op, graph, len(inputs)
        ctx.stream = opts.get("stream")
        ctx.schedule = core.backward_schedule(opts.get("schedule"))
        ctx.wrt = tuple([s.name for s, r in zip(op.inputs, need) if r])
        ctx.in_idx, ctx.out_idx = [], []
        if ctx.wrt:
            # derived (or found) now: a refusal is raised at the call that needs it
            gr = op.grad(ctx.wrt)
            ctx.in_idx, ctx.out_idx = gr._saved_idx
            ctx.save_for_backward(*[inputs[i] for i in ctx.in_idx],
                                  *[outs[j] for j in ctx.out_idx])
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, *grads):
        none = (None, None, None)
        if not ctx.wrt:
            return none + (None,) * ctx.n
        op = ctx.op
        saved = ctx.saved_tensors
        inputs = [None] * len(op.inputs)
        outputs = [None] * len(op.outputs)
        for k, i in enumerate(ctx.in_idx):
            inputs[i] = saved[k]
        for k, j in enumerate(ctx.out_idx):
            outputs[j] = saved[len(ctx.in_idx) + k]
        gr = op.grad(ctx.wrt)
        if ctx.f64:
            adj = [None if g is None else g.detach().to(torch.float64).contiguous().numpy()
                   for g in grads]
            res = gr.f64(ctx.graph, [_np(x) for x in inputs], [_np(y) for y in outputs], adj)
            res = tuple(torch.from_numpy(r) for r in res)
        else:
            adj = [None if g is None else
                   (g if g.dtype == torch.float32 else g.float()).contiguous() for g in grads]
            res = gr(ctx.graph, inputs, outputs, adj, schedule=ctx.schedule, stream=ctx.stream)
        out = [None] * ctx.n
        for i, dx in zip(gr._wrt_idx, res):
            out[i] = dx
        return none + tuple(out)


def _is_f64(inputs):
    ts = [x for x in inputs if torch.is_tensor(x)]
    return bool(ts) and all(x.dtype == torch.float64 and not x.is_cuda for x in ts)


def _np(x):
    return None if x is None else x.detach().contiguous().numpy()


def _f64_call(fn, graph, inputs, schedule=None, target=None, stream=None, **extents):
    if (schedule and schedule != "auto") or target or stream is not None:
        raise ValueError("float64 CPU tensors run the operator as written on the "
                         "interpreter: no schedule=, target= or stream=")
    out = fn(graph, *[_np(x) for x in inputs], **extents)
    if isinstance(out, tuple):
        return tuple(torch.from_numpy(y) for y in out)
    return torch.from_numpy(out)


def apply(op, graph, inputs, **opts):
    """op(graph, *inputs, **opts) recorded for autograd (Operator.__call__
    comes here when an input requires grad)."""
    return OperatorFunction.apply(op, graph, opts, *inputs)


def function(op):
    """A callable f(graph, *inputs, **opts) that always goes through
    OperatorFunction (for an operator given by name: gop.stdlib['...'])."""
    if isinstance(op, str):
        op = core.stdlib[op]

    def f(graph, *inputs, **opts):
        return OperatorFunction.apply(op, graph, opts, *inputs)
    f.__name__ = op.name
    f.__doc__ = op.__doc__
    return f


__all__ = ["OperatorFunction", "apply", "function"]
