"""Gradients from Python (Operator.grad, Operator.f64, gop.autograd) on the
reference interpreter: the derived backward against central finite
differences of the forward in float64, the float32 call path against the
float64 one, the Gradient's bookkeeping (what it reads, joint against
separate), its errors, and torch.autograd on CPU tensors when torch is
installed. Run by ctest's `python` entry (tests/python/run.sh)."""
import os
import tempfile
import unittest

import numpy as np

os.environ.setdefault("GOP_CUDA_LIBRARY", "/nonexistent/libcuda.so")  # no GPU here
os.environ.setdefault("GOP_CACHE_DIR", tempfile.mkdtemp(prefix="gop-cache-"))
import gop  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def graph():
    """10 vertices: a hub (0) with an in-edge from every other vertex, one of
    them twice (a duplicate edge: exact ties for max), a vertex with no
    in-edges (9), a self-loop (4), and a few random arcs."""
    src = list(range(1, 10)) + [3, 4, 0, 0, 2, 5, 6, 7, 1, 8]
    dst = [0] * 9 + [0, 4, 1, 2, 5, 6, 7, 8, 3, 3]
    return gop.Graph.from_arcs(src, dst, 10, "grad-test")


G = graph()
EXT = {"F": 3, "H": 2, "C": 3}


def inputs(op, rng):
    """Positive values (safe for division), but GAT's attention terms of
    both signs: with every score positive, leaky_relu is linear there and
    dAd is zero up to rounding (a softmax is unchanged by a shift)."""
    return [rng.standard_normal(s.shape(G, EXT)) if s.name in ("As", "Ad")
            else rng.uniform(0.5, 1.5, s.shape(G, EXT)) for s in op.inputs]


def finite(y):
    return np.where(np.isfinite(y), y, 0.0)


def dot(a, b):
    return float(np.sum(finite(a) * finite(b)))


# (library, operator): the representative operators of issue 15
CASES = [("stdlib", "copy_u_sum"), ("stdlib", "u_mul_e_sum"), ("stdlib", "copy_u_mean"),
         ("stdlib", "copy_u_max"), ("stdlib", "edge_softmax"), ("stdlib", "u_dot_v"),
         ("stdlib", "u_mul_e_sum_heads"), ("layers", "gat_attention")]


def op_of(lib, name):
    return (gop.stdlib if lib == "stdlib" else gop.layers)[name]


def outputs(y):
    """An operator's result as a tuple (one output comes back bare)."""
    return y if isinstance(y, tuple) else (y,)


def forward(op, rng):
    """Inputs, the f64 forward's outputs and random output adjoints."""
    xs = inputs(op, rng)
    ys = outputs(op.f64(G, *xs))
    return xs, ys, [rng.standard_normal(y.shape) for y in ys]


class FiniteDifferences(unittest.TestCase):
    def test_against_forward_f64(self):
        """<dY, (Y(x + hV) - Y(x - hV)) / 2h> = sum_i <dX_i, V_i>, all float
        inputs jointly, h = 1e-5, relative 1e-6 (f64: the difference
        quotient's error is h^2 times the third derivative, ~1e-10)."""
        rng = np.random.default_rng(1)
        h = 1e-5
        for lib, name in CASES:
            with self.subTest(op=name):
                op = op_of(lib, name)
                xs, ys, dys = forward(op, rng)
                gr = op.grad()
                self.assertEqual(gr.wrt, tuple(s.name for s in op.inputs))
                dxs = gr.f64(G, xs, ys, dys)
                vs = [rng.standard_normal(x.shape) for x in xs]
                yp = outputs(op.f64(G, *[x + h * v for x, v in zip(xs, vs)]))
                ym = outputs(op.f64(G, *[x - h * v for x, v in zip(xs, vs)]))
                fd = sum(dot(dy, (a - b) / (2 * h)) for dy, a, b in zip(dys, yp, ym))
                an = sum(float(np.sum(dx * v)) for dx, v in zip(dxs, vs))
                self.assertLess(abs(fd - an), 1e-6 * max(1.0, abs(fd)), f"{name}: {fd} {an}")
                for dx, x in zip(dxs, xs):
                    self.assertEqual(dx.shape, x.shape)
                    self.assertTrue(np.all(np.isfinite(dx)))

    def test_single_elements(self):
        """Element by element for the hub, the vertex with no in-edges and
        the duplicate edge's source: copy_u_max splits the adjoint between
        the tied copies (both are one X element, so it sums back)."""
        rng = np.random.default_rng(2)
        h = 1e-6
        for name in ("copy_u_max", "copy_u_mean", "edge_softmax"):
            op = gop.stdlib[name]
            x = inputs(op, rng)[0]
            y = op.f64(G, x)
            dy = rng.standard_normal(y.shape)
            dx = op.grad().f64(G, [x], [y], [dy])[0]
            for idx in ([0, 0], [9, 1], [3, 2]) if x.ndim == 2 else ([0], [9], [12]):
                e = np.zeros_like(x)
                e[tuple(idx)] = 1.0
                fd = dot(dy, (op.f64(G, x + h * e) - op.f64(G, x - h * e)) / (2 * h))
                self.assertAlmostEqual(fd, dx[tuple(idx)], delta=1e-6, msg=f"{name} {idx}")
        # vertex 9 has no in-edges: its copy_u_max output is 0 (DGL's), and
        # nothing flows back to its in-neighbours (it has none)
        self.assertEqual(gop.stdlib.copy_u_max.f64(G, np.ones((10, 3)))[9, 0], 0.0)

    def test_f32_path(self):
        """The float32 call path (the one torch's CPU tensors take, and the
        arrays' path on NumPy) gives the f64 gradient to float precision."""
        rng = np.random.default_rng(3)
        for lib, name in CASES:
            with self.subTest(op=name):
                op = op_of(lib, name)
                xs, ys, dys = forward(op, rng)
                want = op.grad().f64(G, xs, ys, dys)
                f32 = lambda a: a.astype(np.float32)  # noqa: E731
                y32 = outputs(op(G, *map(f32, xs)))
                got = op.grad()(G, list(map(f32, xs)), list(y32), list(map(f32, dys)))
                for g, w in zip(got, want):
                    self.assertEqual(g.dtype, np.float32)
                    err = np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30)
                    self.assertLess(err, 1e-5, name)


class Bookkeeping(unittest.TestCase):
    def test_reads(self):
        s = gop.stdlib
        self.assertEqual((s.copy_u_sum.grad().reads_inputs, s.copy_u_sum.grad().reads_outputs),
                         ([], []))
        self.assertEqual(s.copy_u_max.grad().reads_outputs, ["Y"])
        self.assertEqual(s.edge_softmax.grad().reads_inputs, [])
        self.assertEqual(s.edge_softmax.grad().reads_outputs, ["A"])
        self.assertEqual(s.u_mul_e_sum.grad("W").reads_inputs, ["X"])
        self.assertEqual(s.u_mul_e_sum.grad("X").reads_inputs, ["W"])
        gat = gop.layers.gat_attention.grad()
        self.assertEqual(len(gat.operators), 1)  # joint
        self.assertEqual(gat.operators[0].name, "gat_attention_grad_Z_As_Ad")
        self.assertIs(gop.layers.gat_attention.grad(), gat)  # derived once

    def test_joint_and_separate(self):
        rng = np.random.default_rng(4)
        for lib, name in (("layers", "gat_attention"), ("stdlib", "u_mul_e_sum")):
            op = op_of(lib, name)
            xs = inputs(op, rng)
            y = op.f64(G, *xs)
            dy = rng.standard_normal(y.shape)
            joint = op.grad(joint=True).f64(G, xs, [y], [dy])
            sep = op.grad(joint=False)
            self.assertEqual(len(sep.operators), len(op.inputs))
            for a, b in zip(joint, sep.f64(G, xs, [y], [dy])):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
            # a subset, in another order
            names = [s.name for s in op.inputs][::-1]
            rev = op.grad(names).f64(G, xs, [y], [dy])
            for a, b in zip(rev, joint[::-1]):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)

    def test_missing_adjoint_is_zero(self):
        # an adjoint not given (an output the loss does not use) is zero
        op = gop.stdlib.copy_u_sum
        dx = op.grad().f64(G, [np.ones((10, 3))], [None], [None])[0]
        self.assertEqual(dx.shape, (10, 3))
        self.assertFalse(dx.any())


class Errors(unittest.TestCase):
    def test_refusals(self):
        op = gop.stdlib.copy_u_max
        with self.assertRaisesRegex(gop.GopError, r"no input named Y \(it is an output"):
            op.grad("Y")
        with self.assertRaisesRegex(gop.GopError, "no input named Q; its inputs are X"):
            op.grad(("Q",))
        with self.assertRaisesRegex(gop.GopError, "named twice"):
            gop.stdlib.u_mul_e_sum.grad(("X", "X"))
        with self.assertRaisesRegex(ValueError, "no input to differentiate"):
            op.grad(())

    def test_bad_calls(self):
        op = gop.stdlib.copy_u_max
        x = np.ones((10, 3))
        with self.assertRaisesRegex(TypeError, "input X must be a float64 NumPy array"):
            op.f64(G, x.astype(np.float32))
        with self.assertRaisesRegex(ValueError, r"X .* must have shape \[10, 3\]|shape"):
            op.f64(G, np.ones((9, 3)))
        with self.assertRaisesRegex(ValueError, "copy_u_max_grad_X reads Y: pass it"):
            op.grad().f64(G, [x], [None], [x])
        with self.assertRaisesRegex(TypeError, "1 adjoints"):
            op.grad().f64(G, [x], [x], [x, x])
        with self.assertRaisesRegex(ValueError, r"extent F is 3 but dY has shape \[10, 4\]"):
            op.grad().f64(G, [x], [x], [np.ones((10, 4))])


@unittest.skipIf(torch is None, "torch is not installed")
class Autograd(unittest.TestCase):
    """torch.autograd on CPU tensors: the interpreter, float32."""

    def test_function(self):
        gen = torch.Generator().manual_seed(0)
        for lib, name in CASES:
            with self.subTest(op=name):
                op = op_of(lib, name)
                xs = [(torch.rand(s.shape(G, EXT), generator=gen) + 0.5).requires_grad_()
                      for s in op.inputs]
                y = op(G, *xs)
                self.assertIsNotNone(y.grad_fn)
                dy = torch.randn(y.shape, generator=gen)
                dy = torch.where(torch.isfinite(y), dy, torch.zeros(()))
                y.backward(dy)
                want = op.grad()(G, [x.detach().numpy() for x in xs],
                                 [y.detach().numpy()], [dy.numpy()])
                for x, w in zip(xs, want):
                    np.testing.assert_allclose(x.grad.numpy(), w, rtol=1e-6, atol=1e-6)

    def test_gradcheck_f64(self):
        """CPU float64 tensors: forward and backward on the interpreter in
        double precision, so torch's own finite-difference check applies."""
        gen = torch.Generator().manual_seed(1)
        for lib, name in CASES:
            with self.subTest(op=name):
                op = op_of(lib, name)
                xs = [(torch.rand(s.shape(G, EXT), generator=gen, dtype=torch.float64) + 0.5)
                      .requires_grad_() for s in op.inputs]
                self.assertTrue(torch.autograd.gradcheck(lambda *a: op(G, *a), xs))
        with torch.no_grad():
            y = gop.stdlib.copy_u_sum(G, torch.ones(10, 2, dtype=torch.float64))
        self.assertEqual(y.dtype, torch.float64)
        with self.assertRaisesRegex(ValueError, "no schedule="):
            gop.stdlib.copy_u_sum(G, torch.ones(10, 2, dtype=torch.float64),
                                  schedule="warp_edge(1, 1)")

    def test_only_needed_inputs(self):
        op = gop.stdlib.u_mul_e_sum
        x = torch.rand(10, 3, requires_grad=True)
        w = torch.rand(G.num_edges)
        op(G, x, w).sum().backward()
        self.assertIsNotNone(op.grad(("X",)))  # derived for X alone
        self.assertIsNone(w.grad)
        self.assertEqual(tuple(x.grad.shape), (10, 3))

    def test_no_grad_and_out(self):
        op = gop.stdlib.copy_u_sum
        x = torch.rand(10, 3, requires_grad=True)
        with torch.no_grad():
            self.assertIsNone(op(G, x).grad_fn)
        with self.assertRaisesRegex(ValueError, "out= is not differentiable"):
            op(G, x, out=torch.empty(10, 3))
        y = op(G, x)
        g1 = torch.autograd.grad(y.sum(), x, create_graph=True)[0]
        with self.assertRaises(RuntimeError):  # once_differentiable
            g1.sum().backward()

    def test_layers_train(self):
        import gop.nn as gnn
        torch.manual_seed(0)
        x = torch.randn(10, 4)
        for conv in (gnn.GCNConv(4, 3), gnn.GCNConv(4, 3, fused=True),
                     gnn.GATConv(4, 3, heads=2), gnn.SAGEConv(4, 3),
                     gnn.SAGEConv(4, 3, aggr="max"), gnn.SAGEConv(4, 8),
                     gnn.GINConv(torch.nn.Linear(4, 3), train_eps=True, fused=True),
                     gnn.GINConv(torch.nn.Linear(4, 3), train_eps=True)):
            with self.subTest(conv=type(conv).__name__):
                conv(x, G).square().sum().backward()
                for n, p in conv.named_parameters():
                    self.assertIsNotNone(p.grad, n)
                    self.assertTrue(torch.isfinite(p.grad).all(), n)


if __name__ == "__main__":
    unittest.main()
