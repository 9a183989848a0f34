"""gradcheck: every operator the package exposes, its torch.autograd
gradients (gop's derived backward) against torch autograd through an
equivalent torch computation."""
import math

import gop

from train_common import EXT, TOL_GRAD, record, rel_l2


class TorchRef:
    """A torch computation of a stdlib operator from its DGL-style name
    (lhs_op_rhs[_reduce][_full|_heads], copy_x[_reduce], edge_softmax) and
    its signature: operands gathered by domain (src: X[src], dst: X[dst],
    edge: W), broadcast by right-padding the lower rank, reduced over the
    in-edges of each destination."""

    def __init__(self, torch, g, dev):
        self.torch, self.dev = torch, dev
        self.src, self.dst = (torch.from_numpy(a).to(dev) for a in g.edge_index)
        self.N, self.E = g.num_nodes, g.num_edges
        self.deg = torch.zeros(self.N, device=dev).index_add_(
            0, self.dst, torch.ones(self.E, device=dev))

    def gather(self, spec, x):
        d = spec.dims[0]
        return x[self.src] if d == "src" else x[self.dst] if d == "dst" else x

    def seg(self, m, how):
        torch = self.torch
        shape = (self.N,) + tuple(m.shape[1:])
        if how in ("sum", "mean"):
            y = torch.zeros(shape, device=self.dev).index_add(0, self.dst, m)
            if how == "mean":
                y = y / self.deg.clamp(min=1).view(-1, *([1] * (m.dim() - 1)))
            return y
        idx = self.dst.view(-1, *([1] * (m.dim() - 1))).expand_as(m)
        init = torch.full(shape, -math.inf if how == "max" else math.inf, device=self.dev)
        return init.scatter_reduce(0, idx, m, "amax" if how == "max" else "amin",
                                   include_self=True)

    def softmax(self, s):
        """Edge softmax over the in-edges of each destination, per column."""
        torch = self.torch
        m = self.seg(s, "max")
        m = torch.where(torch.isinf(m), torch.zeros((), device=self.dev), m)
        ex = (s - m[self.dst]).exp()
        return ex / self.seg(ex, "sum")[self.dst]

    def layer(self, name, xs):
        """examples/models/layers.gop's operators."""
        torch = self.torch
        Fn = torch.nn.functional
        src, dst = self.src, self.dst
        lrelu = lambda t: Fn.leaky_relu(t, 0.2)  # noqa: E731
        if name == "bias":
            return xs[0] + xs[1]
        if name == "bias_relu":
            return Fn.relu(xs[0] + xs[1])
        if name == "bias_elu":
            return Fn.elu(xs[0] + xs[1])
        if name == "gcn_propagate":
            h, hd, w, s = xs
            return self.seg(h[src] * w.view(-1, 1), "sum") + s.view(-1, 1) * hd
        if name == "gin_aggregate":
            x, xd, eps = xs
            return self.seg(x[src], "sum") + (1 + eps) * xd
        if name == "gat_terms":
            return (xs[0] * xs[1]).sum(-1)
        if name == "gat_scores":
            return lrelu(xs[0][src] + xs[1][dst])
        if name == "edge_softmax_heads":
            return self.softmax(xs[0])
        if name == "gat_aggregate":
            z, p = xs
            return self.seg(p.unsqueeze(-1) * z[src], "sum")
        if name == "gat_attention":
            z, a_s, a_d = xs
            p = self.softmax(lrelu(a_s[src] + a_d[dst]))
            return self.seg(p.unsqueeze(-1) * z[src], "sum")
        raise KeyError(f"no torch equivalent of {name}")

    def __call__(self, op, xs):
        torch = self.torch
        if op.library is gop.layers:
            return self.layer(op.name, xs)
        if op.name == "edge_softmax":
            s = xs[0]
            m = self.seg(s.view(-1, 1), "max").view(-1)
            m = torch.where(torch.isinf(m), torch.zeros((), device=self.dev), m)
            ex = (s - m[self.dst]).exp()
            return ex / self.seg(ex.view(-1, 1), "sum").view(-1)[self.dst]
        parts = [p for p in op.name.split("_") if p not in ("full", "heads")]
        red = parts[-1] if parts[-1] in ("sum", "max", "min", "mean") else None
        if red:
            parts = parts[:-1]
        g = [self.gather(s, x) for s, x in zip(op.inputs, xs)]
        if parts[0] == "copy":
            m = g[0]
        else:
            a, b = g
            r = max(a.dim(), b.dim())
            a = a.reshape(tuple(a.shape) + (1,) * (r - a.dim()))
            b = b.reshape(tuple(b.shape) + (1,) * (r - b.dim()))
            how = parts[1]
            m = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
                 "div": lambda: a / b, "dot": lambda: (a * b).sum(-1)}[how]()
        y = self.seg(m, red) if red else m
        want = op.outputs[0].shape(_Shapes(self.N, self.E), EXT)
        return y.reshape(want)


class _Shapes:
    def __init__(self, n, e):
        self.num_nodes, self.num_edges = n, e


def gradcheck(torch, g, rows, dev="cuda", only=None):
    """dev="cpu" runs the same check on the interpreter (a smoke test of
    this script where there is no GPU); only: operator names to check."""
    ref = TorchRef(torch, g, dev)
    gen = torch.Generator(device=dev).manual_seed(0)
    n_ok, n = 0, 0
    for op in list(gop.stdlib) + list(gop.layers):
        if only and op.name not in only:
            continue
        n += 1
        try:
            ext = {k: EXT[k] for k in op.extents}
            # the stdlib's: positive (division); the layers': both signs
            # (relu, leaky_relu and elu take both branches)
            xs = [((torch.rand(s.shape(g, ext), generator=gen, device=dev) + 0.5)
                   if op.library is gop.stdlib else
                   torch.randn(s.shape(g, ext), generator=gen, device=dev))
                  .requires_grad_(s.dtype.startswith("f")) for s in op.inputs]
            y = op(g, *xs)
            y_ref = ref(op, xs)
            dy = torch.randn(y.shape, generator=gen, device=dev)
            fin = torch.isfinite(y_ref)
            dy = torch.where(fin, dy, torch.zeros((), device=dev))  # no gradient at -inf
            want = [x for x in xs if x.requires_grad]
            got = torch.autograd.grad(y, want, dy)
            exp = torch.autograd.grad(y_ref, want, dy)
            if dev != "cpu":
                torch.cuda.synchronize()
            fwd = rel_l2(y.detach(), y_ref.detach())
            errs = [rel_l2(a, b) for a, b in zip(got, exp)]
            worst = max(errs + [fwd])
            ok = worst <= TOL_GRAD
            n_ok += ok
            rows.append({"op": op.name, "inputs": " ".join(s.name for s in op.inputs),
                         "forward_rel_l2": fwd,
                         "grad_rel_l2": " ".join(f"{e:.2e}" for e in errs), "ok": ok})
            if not ok:
                record("gradcheck", op.name, False,
                       f"rel L2: forward {fwd:.2e}, gradients {errs} (limit {TOL_GRAD})")
        except Exception as e:  # noqa: BLE001 - every failure is recorded
            rows.append({"op": op.name, "inputs": "", "forward_rel_l2": "",
                         "grad_rel_l2": f"{type(e).__name__}: {str(e)[:200]}", "ok": False})
            record("gradcheck", op.name, False, f"{type(e).__name__}: {str(e)[:300]}")
    record("gradcheck", "every stdlib and layers.gop operator vs torch autograd", n_ok == n,
           f"{n_ok}/{n} within relative L2 {TOL_GRAD} (graph {g.name}, "
           f"F={EXT['F']}, H={EXT['H']}, C={EXT['C']})")
