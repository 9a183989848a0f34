"""gop.torch_ops: gop's operators as torch.library custom operators, and
gop.nn's layers under torch.compile(fullgraph=True), on CPU tensors (the
interpreter). Checks torch.library.opcheck on operators of one, two and
three inputs (schema, fake tensors, autograd registration, AOT dispatch);
that every stdlib and layers operator is registered, and one's own
library's (a name clash) and a retyped operator under names of their own; a call through the
custom operator against the plain call and its gradient against gop.autograd
(and in float64 against finite differences); GCN, GraphSAGE (mean, max),
GIN (train_eps) and GAT two-layer models compiled with fullgraph=True (no
graph break; GCN with inductor, the others with aot_eager) against eager,
forward and every parameter's gradient, and in inference (eval, no grad);
a second graph of the same sizes
recompiling rather than reusing the first's constants; an edge_index
tensor refused under compile with a clear message. Skipped where torch (2.4
or newer: torch.library.register_autograd) is not installed. Run by ctest's
`python` entry (tests/python/run.sh) when torch is."""
import os
import tempfile
import unittest

import numpy as np

os.environ.setdefault("GOP_CACHE_DIR", tempfile.mkdtemp(prefix="gop-cache-"))
import gop  # noqa: E402

try:
    import torch
    if not hasattr(torch.library, "register_autograd"):
        torch = None
except ImportError:
    torch = None

if torch is not None:
    import torch.nn.functional as F

    import gop.nn as gnn
    from gop import torch_ops


def graph(n=40, seed=0):
    """A small random graph: every vertex has an in-edge, some several."""
    rng = np.random.default_rng(seed)
    src = np.concatenate([rng.integers(0, n, 3 * n), np.arange(n)])
    dst = np.concatenate([rng.integers(0, n, 3 * n), (np.arange(n) + 1) % n])
    return gop.Graph.from_arcs(src.tolist(), dst.tolist(), n, f"torch-ops-{seed}")


def close(a, b, tol=1e-4):
    """|a - b| within tol of the larger magnitude (float32 sums in another order)."""
    a, b = a.detach(), b.detach()
    scale = max(1.0, float(a.abs().max()), float(b.abs().max()))
    return float((a - b).abs().max()) <= tol * scale


@unittest.skipIf(torch is None, "torch >= 2.4 is not installed")
class TestCustomOps(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        torch._dynamo.reset()
        self.g = graph()

    def test_every_operator_registered(self):
        for lib in (gop.stdlib, gop.layers):
            for op in lib:
                name = op.__dict__.get("_torch_name")
                self.assertTrue(name, f"{op.name} is not registered")
                self.assertTrue(hasattr(torch.ops.gop, name), name)
                self.assertTrue(hasattr(torch.ops.gop, name + "_backward"), name)

    def test_edgeless_graph(self):
        """An edgeless graph's edge tensor is empty, and torch gives an empty
        tensor no memory (data_ptr() 0): the sum of no edges is zeros."""
        g = gop.Graph.from_arcs([], [], 5, "edgeless")
        x, w = torch.randn(5, 4), torch.zeros(0)
        self.assertEqual(w.data_ptr(), 0)
        y = gop.stdlib.u_mul_e_sum(g, x, w)
        self.assertEqual(tuple(y.shape), (5, 4))
        self.assertEqual(float(y.abs().sum()), 0.0)

    def test_opcheck(self):
        g, n, e = self.g, self.g.num_nodes, self.g.num_edges
        key = torch_ops.graph_key(g)
        cases = [
            (gop.stdlib.copy_u_sum, [8], [torch.randn(n, 8, requires_grad=True)]),
            (gop.stdlib.u_mul_e_sum, [8], [torch.randn(n, 8, requires_grad=True),
                                           torch.randn(e, requires_grad=True)]),
            (gop.stdlib.copy_u_max, [4], [torch.randn(n, 4, requires_grad=True)]),
        ]
        for op, ext, xs in cases:
            fn = getattr(torch.ops.gop, op._torch_name).default
            res = torch.library.opcheck(fn, (key, None, ext, *xs))
            self.assertTrue(all(v == "SUCCESS" for v in res.values()), f"{op.name}: {res}")

    def test_call_and_gradient(self):
        g = self.g
        op = gop.stdlib.u_mul_e_sum
        x = torch.randn(g.num_nodes, 8, requires_grad=True)
        w = torch.randn(g.num_edges, requires_grad=True)
        y = torch_ops.call(op, g, x, w)
        self.assertTrue(torch.equal(y, op(g, x.detach(), w.detach())))
        y.square().sum().backward()
        gx, gw = x.grad, w.grad
        x2, w2 = x.detach().requires_grad_(), w.detach().requires_grad_()
        op(g, x2, w2).square().sum().backward()  # gop.autograd
        self.assertTrue(close(gx, x2.grad) and close(gw, w2.grad))

    def test_own_library_and_retyped(self):
        # an operator of one's own library named like a stdlib one, with a
        # tensor named like a leading argument; a retyped stdlib operator
        mine = gop.compile("""
op copy_u_sum(ext: f32[src, F]) -> Y: f32[dst, F] {
  for v in dst { for e in in_edges(v) { for f in 0..F { Y[v, f] += ext[src(e), f] } } }
}
""", name="mine")
        g = self.g
        x = torch.randn(g.num_nodes, 3, requires_grad=True)
        y = torch_ops.call(mine.copy_u_sum, g, x)
        self.assertNotEqual(mine.copy_u_sum._torch_name, gop.stdlib.copy_u_sum._torch_name)
        self.assertTrue(torch.equal(y, gop.stdlib.copy_u_sum(g, x.detach())))
        y.sum().backward()
        self.assertEqual(tuple(x.grad.shape), (g.num_nodes, 3))
        self.assertNotEqual(torch_ops.register(gop.stdlib.copy_u_sum.retype("f64")),
                            gop.stdlib.copy_u_sum._torch_name)

    def test_gradcheck_f64(self):
        g = graph(12, seed=3)
        op = gop.stdlib.u_mul_e_sum
        x = torch.randn(g.num_nodes, 3, dtype=torch.float64, requires_grad=True)
        w = torch.randn(g.num_edges, dtype=torch.float64, requires_grad=True)
        self.assertTrue(torch.autograd.gradcheck(
            lambda a, b: torch_ops.call(op, g, a, b), (x, w)))

    def test_direct_call_compiles(self):
        g = self.g
        op = gop.stdlib.copy_u_mean
        x = torch.randn(g.num_nodes, 8, requires_grad=True)

        def f(x, g):
            return torch_ops.call(op, g, x.relu()).sum(1)

        y = torch.compile(f, fullgraph=True)(x, g)
        self.assertTrue(close(y, f(x, g)))
        y.sum().backward()
        ref = x.detach().requires_grad_()
        f(ref, g).sum().backward()
        self.assertTrue(close(x.grad, ref.grad))


def model(kind):
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            if kind == "gcn":
                self.a, self.b = gnn.GCNConv(16, 8), gnn.GCNConv(8, 4)
            elif kind == "sage":
                self.a, self.b = gnn.SAGEConv(16, 8), gnn.SAGEConv(8, 4, aggr="max")
            elif kind == "gin":
                self.a = gnn.GINConv(torch.nn.Linear(16, 8), train_eps=True)
                self.b = gnn.GINConv(torch.nn.Linear(8, 4))
            else:
                self.a, self.b = gnn.GATConv(16, 4, heads=2), gnn.GATConv(8, 4)

        def forward(self, x, g):
            return self.b(F.relu(self.a(x, g)), g)
    return M()


@unittest.skipIf(torch is None, "torch >= 2.4 is not installed")
class TestCompiledLayers(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        torch._dynamo.reset()

    def check(self, kind, backend="inductor"):
        g = graph()
        x = torch.randn(g.num_nodes, 16)
        m = model(kind)
        y0 = m(x, g)
        y0.square().sum().backward()
        g0 = [p.grad.clone() for p in m.parameters()]
        m.zero_grad()
        # fullgraph: a graph break raises
        cm = torch.compile(m, fullgraph=True, backend=backend)
        y1 = cm(x, g)
        y1.square().sum().backward()
        self.assertTrue(close(y0, y1), f"{kind}: forward")
        for (name, p), a in zip(m.named_parameters(), g0):
            self.assertTrue(close(a, p.grad), f"{kind}: gradient of {name}")
        # inference (eval, no grad: the plans record no gradient)
        m.eval()
        with torch.no_grad():
            self.assertTrue(close(torch.compile(m, fullgraph=True, backend=backend)(x, g),
                                  m(x, g)), f"{kind}: inference")
        m.train()
        # another graph of the same sizes (so only the guard on the graph
        # object tells them apart): it recompiles rather than reuse the first
        # graph's constants (its key, GCN's weights, GAT's self-loop graph)
        h = graph(seed=1)
        x2 = torch.randn(h.num_nodes, 16)
        self.assertTrue(close(cm(x2, h), m(x2, h)), f"{kind}: a second graph")

    def test_gcn(self):
        self.check("gcn")

    # inductor (the default backend) compiles C++ on the CPU: slow on CI's
    # two cores, so the other layers stop at AOTAutograd, which runs every
    # fake implementation and the derived backward's registration all the same
    def test_sage(self):
        self.check("sage", "aot_eager")

    def test_gin(self):
        self.check("gin", "aot_eager")

    def test_gat(self):
        self.check("gat", "aot_eager")

    def test_edge_index_refused_under_compile(self):
        g = graph()
        ei = torch.from_numpy(g.edge_index)
        conv = gnn.GCNConv(16, 4)
        with self.assertRaisesRegex(Exception, "takes a gop.Graph"):
            torch.compile(conv, fullgraph=True)(torch.randn(g.num_nodes, 16), ei)


if __name__ == "__main__":
    unittest.main()
