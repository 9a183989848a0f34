"""gop.pyg.accelerate: unmodified PyTorch Geometric models routed through
gop, on CPU tensors (gop's reference interpreter), against the same model
left to PyG: outputs, every parameter's gradient (and the input's, and
edge_weight's where it requires one) and the losses of a few Adam steps.
The models are written as PyG's own examples write them: GCN on cora (the
graph of ../shared/datasets/cora.mtx.gz, random features; a random graph
where it is missing) with cached normalisation and feature dropout, GCN
with edge weights, self-loops and improved=True, GraphSAGE (mean, max,
sum; normalize, project, no root weight), GIN with an MLP and a trainable
eps, GAT (8 heads, then one head averaged; residual; no self-loops), and
MessagePassing layers of one's own (the default message, EdgeConv's
message aggregated by max, GraphConv's weighted messages). Then the
fallbacks: attention dropout while training, return_attention_weights, a
sparse adjacency, an aggregation gop has none of (min), each giving PyG's
result with a FallbackWarning naming the reason, and Unsupported under
strict=True; a model under torch.compile (PyG's path while traced);
an edge_index per mini-batch; restore(); record() and prepare(); float64
gradcheck through the accelerated GCNConv. Skipped where torch or
torch_geometric is not installed."""
import copy
import os
import tempfile
import unittest
import warnings

import numpy as np

os.environ.setdefault("GOP_CACHE_DIR", tempfile.mkdtemp(prefix="gop-cache-"))
import gop  # noqa: E402

try:
    import torch
    import torch_geometric  # noqa: F401
except ImportError:
    torch = None

if torch is not None:
    import torch.nn.functional as F
    from torch_geometric.nn import (MLP, EdgeConv, GATConv, GCNConv, GINConv, GraphConv,
                                    MessagePassing, SAGEConv)

    import gop.pyg as gpyg

HERE = os.path.dirname(os.path.abspath(__file__))
CORA = os.path.join(HERE, "..", "..", "..", "shared", "datasets", "cora.mtx.gz")


def cora_edges():
    """cora's edge_index [2, E] (a random graph of the same size where the
    dataset is missing) and its number of vertices."""
    if os.path.exists(CORA):
        ei = gop.Graph.open(CORA).edge_index
    else:
        rng = np.random.default_rng(0)
        ei = rng.integers(0, 2708, (2, 10556))
    ei = torch.from_numpy(np.ascontiguousarray(ei)).long()
    return ei, int(ei.max()) + 1


def small_edges(n=30, seed=1):
    """A small random graph with duplicate arcs, self-loops and a vertex
    with no in-edge (n - 1)."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, 4 * n)
    dst = rng.integers(0, n - 1, 4 * n)
    src[:3], dst[:3] = [2, 5, 7], [2, 5, 7]
    return torch.from_numpy(np.stack([src, dst])).long(), n


def rel(a, b):
    """max |a - b| over the larger magnitude of the two (float32 sums in
    another order)."""
    a, b = a.detach().double(), b.detach().double()
    scale = max(1.0, float(a.abs().max()), float(b.abs().max()))
    return float((a - b).abs().max()) / scale


TOL = 2e-5


class Models:
    """PyG's example models, as its examples write them."""

    class GCN(torch.nn.Module if torch else object):  # examples/gcn.py
        def __init__(self, fin, hidden, out, **kw):
            super().__init__()
            self.conv1 = GCNConv(fin, hidden, **kw)
            self.conv2 = GCNConv(hidden, out, **kw)

        def forward(self, x, edge_index, edge_weight=None):
            x = F.dropout(x, p=0.5, training=self.training)
            x = self.conv1(x, edge_index, edge_weight).relu()
            x = F.dropout(x, p=0.5, training=self.training)
            return self.conv2(x, edge_index, edge_weight)

    class SAGE(torch.nn.Module if torch else object):  # examples/graph_sage_unsup.py
        def __init__(self, fin, hidden, out, **kw):
            super().__init__()
            self.convs = torch.nn.ModuleList([SAGEConv(fin, hidden, **kw),
                                              SAGEConv(hidden, out, **kw)])

        def forward(self, x, edge_index):
            for i, conv in enumerate(self.convs):
                x = conv(x, edge_index)
                if i < len(self.convs) - 1:
                    x = x.relu()
                    x = F.dropout(x, p=0.5, training=self.training)
            return x

    class GIN(torch.nn.Module if torch else object):  # examples/mutag_gin.py
        def __init__(self, fin, hidden, out, layers=2):
            super().__init__()
            self.convs = torch.nn.ModuleList()
            for _ in range(layers):
                mlp = MLP([fin, hidden, hidden])
                self.convs.append(GINConv(nn=mlp, train_eps=True))
                fin = hidden
            self.mlp = MLP([hidden, hidden, out], norm=None, dropout=0.5)

        def forward(self, x, edge_index):
            for conv in self.convs:
                x = conv(x, edge_index).relu()
            return self.mlp(x)

    class GAT(torch.nn.Module if torch else object):  # examples/gat.py
        def __init__(self, fin, hidden, out, heads, dropout=0.6, **kw):
            super().__init__()
            self.conv1 = GATConv(fin, hidden, heads, dropout=dropout, **kw)
            self.conv2 = GATConv(hidden * heads, out, heads=1, concat=False, dropout=dropout,
                                 **kw)

        def forward(self, x, edge_index):
            x = F.dropout(x, p=0.6, training=self.training)
            x = F.elu(self.conv1(x, edge_index))
            x = F.dropout(x, p=0.6, training=self.training)
            return self.conv2(x, edge_index)


if torch is not None:
    class MeanConv(MessagePassing):
        """A layer of one's own: the default message, mean aggregation."""

        def __init__(self, fin, fout, aggr="mean"):
            super().__init__(aggr=aggr)
            self.lin = torch.nn.Linear(fin, fout)

        def forward(self, x, edge_index):
            return self.propagate(edge_index, x=self.lin(x))

    class EdgeModel(torch.nn.Module):
        """EdgeConv (messages of x_i and x_j - x_i, max) then GraphConv
        with edge weights (sum), then GraphConv's mean of weighted messages."""

        def __init__(self, fin, hidden, out):
            super().__init__()
            self.conv1 = EdgeConv(torch.nn.Sequential(torch.nn.Linear(2 * fin, hidden),
                                                      torch.nn.ReLU()), aggr="max")
            self.conv2 = GraphConv(hidden, hidden)
            self.conv3 = GraphConv(hidden, out, aggr="mean")

        def forward(self, x, edge_index, w):
            x = self.conv1(x, edge_index)
            x = self.conv2(x, edge_index, w).relu()
            return self.conv3(x, edge_index, w)


@unittest.skipIf(torch is None, "torch and torch_geometric are not installed")
class TestAccelerate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ei, cls.n = cora_edges()

    def setUp(self):
        torch.manual_seed(0)

    def twins(self, make, schedule=None):
        """(PyG's model, the same weights accelerated)."""
        torch.manual_seed(0)
        m = make()
        a = copy.deepcopy(m)
        self.assertIs(gpyg.accelerate(a, schedule=schedule), a)
        return m, a

    def check(self, make, args, steps=3, train=True, route="gop", schedule=None,
              grad_inputs=()):
        """Outputs, gradients (parameters, and `grad_inputs`: indices into
        args of tensors that require grad) and `steps` Adam steps' losses
        of PyG's model against the accelerated one; every layer's route
        starts with `route`. Returns the accelerated model."""
        m, a = self.twins(make, schedule)
        m.train(train)
        a.train(train)
        args_m = [t.detach().clone().requires_grad_(i in grad_inputs) if torch.is_tensor(t)
                  else t for i, t in enumerate(args)]
        args_a = [t.detach().clone().requires_grad_(i in grad_inputs) if torch.is_tensor(t)
                  else t for i, t in enumerate(args)]
        opt_m = torch.optim.Adam(m.parameters(), lr=0.01)
        opt_a = torch.optim.Adam(a.parameters(), lr=0.01)
        y = torch.randint(0, 4, (self.n_of(args),))
        for step in range(max(1, steps)):
            for model, opt, xs in ((m, opt_m, args_m), (a, opt_a, args_a)):
                opt.zero_grad()
                torch.manual_seed(100 + step)  # the same dropout masks in both
                out = model(*xs)
                model._out = out
                loss = F.cross_entropy(out[:, :4], y)
                loss.backward()
                model._loss = loss.item()
            self.assertLess(rel(a._out, m._out), TOL, f"step {step}: outputs")
            self.assertAlmostEqual(a._loss, m._loss, delta=TOL * max(1.0, abs(m._loss)))
            if step == 0:
                for (name, p), (_, q) in zip(m.named_parameters(), a.named_parameters()):
                    if p.grad is None:
                        self.assertIsNone(q.grad, name)
                        continue
                    self.assertLess(rel(q.grad, p.grad), TOL, f"gradient of {name}")
                for i in grad_inputs:
                    self.assertLess(rel(args_a[i].grad, args_m[i].grad), TOL,
                                    f"gradient of input {i}")
            if steps:
                opt_m.step()
                opt_a.step()
        for name, r in gpyg.report(a).items():
            self.assertTrue(r.startswith(route), f"{name}: {r}")
        return a

    @staticmethod
    def n_of(args):
        return args[0].size(0)

    # -- the layers gop runs itself --

    def test_gcn_cora(self):
        x = torch.randn(self.n, 64)
        a = self.check(lambda: Models.GCN(64, 16, 7, cached=True), (x, self.ei))
        self.assertEqual(set(gpyg.report(a).values()), {"gop: u_mul_e_sum with self-loops"})

    def test_gcn_eval_and_input_gradient(self):
        x = torch.randn(self.n, 32)
        self.check(lambda: Models.GCN(32, 16, 7), (x, self.ei), steps=0, train=False,
                   grad_inputs=(0,))

    def test_gcn_edge_weight(self):
        """edge_weight (its gradient too), the graph's own self-loops,
        duplicate arcs, a vertex with no in-edge, improved=True."""
        ei, n = small_edges()
        x = torch.randn(n, 8)
        w = torch.rand(ei.size(1)) + 0.5
        for kw in ({}, {"improved": True}):
            with self.subTest(**kw):
                self.check(lambda: Models.GCN(8, 6, 5, **kw), (x, ei, w), grad_inputs=(0, 2))
                self.check(lambda: Models.GCN(8, 6, 5, **kw), (x, ei))

    def test_gcn_without_self_loops_or_normalisation(self):
        ei, n = small_edges()
        x = torch.randn(n, 8)
        w = torch.rand(ei.size(1))
        self.check(lambda: Models.GCN(8, 6, 5, add_self_loops=False), (x, ei, w),
                   grad_inputs=(2,))
        self.check(lambda: Models.GCN(8, 6, 5, normalize=False), (x, ei, w), grad_inputs=(2,))
        a = self.check(lambda: Models.GCN(8, 6, 5, normalize=False), (x, ei))
        self.assertEqual(set(gpyg.report(a).values()), {"gop: copy_u_sum"})

    def test_sage(self):
        """The first layer widens (PyG's forward, gop's propagate), the
        second narrows (sum and mean: the linear map first, then gop's
        aggregation of the narrower rows)."""
        x = torch.randn(self.n, 32)
        for kw, op in (({}, "copy_u_mean"), ({"aggr": "max"}, "copy_u_max"),
                       ({"aggr": "sum"}, "copy_u_sum"),
                       ({"normalize": True, "project": True}, "copy_u_mean"),
                       ({"root_weight": False}, "copy_u_mean"),
                       ({"normalize": True, "bias": False}, "copy_u_mean")):
            with self.subTest(**kw):
                a = self.check(lambda: Models.SAGE(32, 48, 7, **kw), (x, self.ei),
                               grad_inputs=(0,))
                first = op if kw.get("aggr") == "max" or kw.get("project") else \
                    f"{op} (linear map first)"
                self.assertEqual(gpyg.report(a), {"convs.0": f"gop: {op}",
                                                  "convs.1": f"gop: {first}"})

    def test_sage_max_no_in_edge(self):
        """A vertex with no in-edges gets 0 from max, as PyG's scatter gives."""
        ei, n = small_edges()
        x = torch.randn(n, 8)
        self.check(lambda: Models.SAGE(8, 6, 5, aggr="max"), (x, ei), grad_inputs=(0,))

    def test_gin(self):
        x = torch.randn(self.n, 32)
        a = self.check(lambda: Models.GIN(32, 32, 7), (x, self.ei), grad_inputs=(0,))
        self.assertEqual(set(gpyg.report(a).values()), {"gop: copy_u_sum"})
        self.assertIsNotNone(a.convs[0].eps.grad)

    def test_gat(self):
        """GAT as PyG's example builds it, in training without attention
        dropout, and in eval with it (dropout then does nothing)."""
        x = torch.randn(self.n, 32)
        a = self.check(lambda: Models.GAT(32, 8, 7, heads=8, dropout=0.0), (x, self.ei))
        self.assertEqual(set(gpyg.report(a).values()), {"gop: gat_attention"})
        self.check(lambda: Models.GAT(32, 8, 7, heads=8), (x, self.ei), steps=0, train=False,
                   grad_inputs=(0,))

    def test_gat_variants(self):
        ei, n = small_edges()
        x = torch.randn(n, 8)
        for kw in ({"residual": True}, {"add_self_loops": False}, {"bias": False}):
            with self.subTest(**kw):
                self.check(lambda: Models.GAT(8, 4, 5, heads=2, dropout=0.0, **kw), (x, ei),
                           grad_inputs=(0,))

    def test_auto_schedule(self):
        """schedule="auto" runs the chooser's picks (on the interpreter:
        the same results)."""
        ei, n = small_edges(60)
        x = torch.randn(n, 16)
        self.check(lambda: Models.GAT(16, 8, 5, heads=4, dropout=0.0), (x, ei),
                   schedule="auto")
        self.check(lambda: Models.GCN(16, 8, 5), (x, ei), schedule="auto")

    # -- MessagePassing layers of one's own --

    def test_own_layer(self):
        ei, n = small_edges()
        x = torch.randn(n, 8)
        for aggr, op in (("mean", "copy_u_mean"), ("add", "copy_u_sum"), ("max", "copy_u_max")):
            with self.subTest(aggr=aggr):
                a = self.check(lambda: MeanConv(8, 5, aggr), (x, ei), grad_inputs=(0,))
                self.assertEqual(gpyg.report(a), {"MeanConv": f"gop: {op}"})

    def test_messages_aggregated_by_gop(self):
        ei, n = small_edges()
        x = torch.randn(n, 8)
        w = torch.rand(ei.size(1))
        a = self.check(lambda: EdgeModel(8, 6, 5), (x, ei, w), grad_inputs=(0, 2))
        self.assertEqual(gpyg.report(a), {"conv1": "gop: copy_e_max of PyG's messages",
                                          "conv2": "gop: u_mul_e_sum",
                                          "conv3": "gop: copy_e_mean of PyG's messages"})

    # -- what falls back to PyG --

    def fallback(self, make, args, reason, train=True):
        """The model's outputs equal PyG's, each layer warns once that it
        falls back for `reason`, and strict=True raises Unsupported."""
        m, a = self.twins(make)
        m.train(train)
        a.train(train)
        torch.manual_seed(5)
        want = m(*args)
        torch.manual_seed(5)
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            out = a(*args)
        self.assertLess(rel(out, want), TOL)
        msgs = [str(w.message) for w in got if issubclass(w.category, gpyg.FallbackWarning)]
        self.assertTrue(msgs and all(reason in s for s in msgs), msgs)
        self.assertTrue(any(reason in r for r in gpyg.report(a).values()), gpyg.report(a))
        gpyg.accelerate(a, strict=True)
        with self.assertRaisesRegex(gpyg.Unsupported, reason):
            a(*args)
        return a

    def test_gat_attention_dropout_falls_back(self):
        """PyG's example GAT in training: attention dropout is PyG's (gop's
        fused attention keeps no per-edge weights); the aggregation of the
        dropped-out messages is still gop's."""
        x = torch.randn(self.n, 16)
        a = self.fallback(lambda: Models.GAT(16, 8, 7, heads=8), (x, self.ei),
                          "attention dropout while training")
        gpyg.accelerate(a)
        torch.manual_seed(5)
        a(x, self.ei)
        self.assertEqual(
            gpyg.report(a)["conv1"],
            "PyG forward (attention dropout while training), gop: copy_e_sum of PyG's messages")

    def test_return_attention_weights_falls_back(self):
        ei, n = small_edges()
        x = torch.randn(n, 8)
        m, a = self.twins(lambda: GATConv(8, 4, heads=2))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gpyg.FallbackWarning)
            out, (ei2, alpha) = a(x, ei, return_attention_weights=True)
        want, (_, alpha_want) = m(x, ei, return_attention_weights=True)
        self.assertLess(rel(out, want), TOL)
        self.assertLess(rel(alpha, alpha_want), TOL)

    def test_sparse_adjacency_falls_back(self):
        from torch_geometric.utils import to_torch_csr_tensor
        ei, n = small_edges()
        x = torch.randn(n, 8)
        adj = to_torch_csr_tensor(ei.flip(0), size=(n, n))
        self.fallback(lambda: SAGEConv(8, 5), (x, adj), "sparse matrix")

    def test_min_aggregation_falls_back(self):
        ei, n = small_edges()
        x = torch.randn(n, 8)
        self.fallback(lambda: MeanConv(8, 5, "min"), (x, ei), "aggregation 'min'")

    def test_bipartite_falls_back(self):
        """x as a pair of different sizes: PyG's path, with its result."""
        ei, n = small_edges()
        x, xd = torch.randn(n, 8), torch.randn(n - 5, 8)
        ei = ei[:, ei[1] < n - 5]
        self.fallback(lambda: SAGEConv(8, 5), ((x, xd), ei), "does not fit")

    def test_torch_compile_falls_back(self):
        """A model torch.compile traces runs PyG's path (gop needs the edges
        on the host), with PyG's result; eager calls are gop's again."""
        ei, n = small_edges()
        x = torch.randn(n, 8)
        m, a = self.twins(lambda: Models.SAGE(8, 6, 5))
        m.eval()
        a.eval()
        torch._dynamo.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gpyg.FallbackWarning)
            out = torch.compile(a, backend="eager")(x, ei)
        self.assertLess(rel(out, m(x, ei)), TOL)
        self.assertTrue(all("torch.compile" in r for r in gpyg.report(a).values()),
                        gpyg.report(a))
        self.assertLess(rel(a(x, ei), m(x, ei)), TOL)
        self.assertEqual(set(gpyg.report(a).values()), {"gop: copy_u_mean (linear map first)"})

    def test_new_edges_per_batch(self):
        """Mini-batches, each with an edge_index of its own (as a loader
        gives): each is converted and gives PyG's result."""
        m, a = self.twins(lambda: Models.GCN(8, 6, 5))
        m.eval()
        a.eval()
        for seed in range(3):
            ei, n = small_edges(20 + 5 * seed, seed)
            x = torch.randn(n, 8)
            self.assertLess(rel(a(x, ei), m(x, ei)), TOL, f"batch {seed}")

    # -- the API --

    def test_restore_and_report(self):
        x = torch.randn(self.n, 16)
        m, a = self.twins(lambda: Models.GCN(16, 8, 7))
        self.assertEqual(gpyg.report(a), {"conv1": "not called yet", "conv2": "not called yet"})
        sd = {k: v.clone() for k, v in a.state_dict().items()}
        a.eval()
        a(x, self.ei)
        self.assertIs(gpyg.restore(a), a)
        self.assertEqual(gpyg.report(a), {})
        self.assertNotIn("forward", a.conv1.__dict__)
        self.assertEqual(sd.keys(), a.state_dict().keys())
        m.eval()
        self.assertLess(rel(a(x, self.ei), m(x, self.ei)), TOL)
        with self.assertRaises(TypeError):
            gpyg.accelerate(object())
        with self.assertRaisesRegex(ValueError, "schedule"):
            gpyg.accelerate(a, schedule="warp_edge(1, 1)")

    def test_graph_cache(self):
        """One conversion per edge_index tensor; a tensor changed in place
        is converted again."""
        ei, n = small_edges()
        g1 = gpyg.graph_of(ei, n)
        self.assertIs(gpyg.graph_of(ei, n), g1)
        ei2 = ei.clone()
        ei2[0, 0] = (ei2[0, 0] + 1) % n
        self.assertIsNot(gpyg.graph_of(ei2, n), g1)
        ei[0, 0] = (ei[0, 0] + 1) % n
        g2 = gpyg.graph_of(ei, n)
        self.assertIsNot(g2, g1)
        np.testing.assert_array_equal(g2.edge_index, ei.numpy())

    def test_record_and_prepare(self):
        ei, n = small_edges()
        x = torch.randn(n, 12)
        m, a = self.twins(lambda: Models.GAT(12, 4, 5, heads=2, dropout=0.0))
        with gpyg.record() as calls:
            a(x, ei).sum().backward()
            a(x, ei).sum().backward()  # the same calls again: listed once
        got = sorted((c.op.name, tuple(sorted(c.ext.items())), c.wrt, c.on) for c in calls)
        self.assertEqual(got, [
            ("gat_attention", (("C", 4), ("H", 2)), ("Z", "As", "Ad"), "self_loops"),
            ("gat_attention", (("C", 5), ("H", 1)), ("Z", "As", "Ad"), "self_loops")])
        # a SAGE (max) layer's, whose kernels no other test's packs expect
        # to write: the forward and its backward are prepared
        sage = gpyg.accelerate(SAGEConv(12, 5, aggr="max"))
        with gpyg.record() as calls:
            sage(x.requires_grad_(), ei).sum().backward()
        self.assertEqual([(c.op.name, c.ext, c.wrt) for c in calls],
                         [("copy_u_max", {"F": 12}, ("X",))])

        # GCN's, on the graph with its self-loops
        gcn = gpyg.accelerate(GCNConv(12, 5))
        with gpyg.record() as gcalls:
            gcn(x, ei).sum().backward()
        self.assertEqual([(c.op.name, c.ext, c.on) for c in gcalls],
                         [("u_mul_e_sum", {"F": 5}, "gcn")])
        g = gop.Graph.from_edge_index(ei, n)
        self.assertIs(gpyg.graph_on(g, "gcn"), g.gcn_graph()[0])
        self.assertIs(gpyg.graph_on(g, "self_loops"), g.with_self_loops())
        self.assertIs(gpyg.graph_on(g, "graph"), g)

        def prepared():
            s = gop.cache_stats()
            return s["compiled"] + s["memory_hits"] + s["disk_hits"]
        before = prepared()
        gpyg.prepare(calls, gop.Graph.open("grid:4x4"))
        self.assertGreaterEqual(prepared() - before, 2)

    def test_gradcheck_f64(self):
        """float64 CPU tensors: gop's interpreter in double, so the
        accelerated GCNConv's gradients (input, weights, edge_weight)
        pass torch's finite-difference check."""
        ei, n = small_edges(12)
        conv = GCNConv(3, 2).double()
        gpyg.accelerate(conv)
        x = torch.randn(n, 3, dtype=torch.float64, requires_grad=True)
        w = (torch.rand(ei.size(1), dtype=torch.float64) + 0.5).requires_grad_()
        self.assertTrue(torch.autograd.gradcheck(lambda x, w: conv(x, ei, w), (x, w)))
        self.assertEqual(gpyg.report(conv), {"GCNConv": "gop: u_mul_e_sum + self-loop term"})


if __name__ == "__main__":
    unittest.main()
