"""Mini-batch training through gop's layers
(examples/minibatch/sage_neighborloader.py) on CPU tensors: a GraphSAGE of
gop.nn.SAGEConv trained on sampled subgraphs, each batch's gop.Graph built
from the batch's edge_index, gives PyG's SAGEConv losses step for step; the
kernels of the first batches serve every later batch, whatever its size
(nothing is compiled after them); each batch's graph is freed with its runs
when the step drops it. The sampler is PyG's NeighborLoader, or the
example's TorchSampler where PyG has no sampling backend (pyg-lib or
torch-sparse). Skipped without torch or torch_geometric."""
import gc
import importlib.util
import json
import os
import tempfile
import unittest
import weakref

import gop
from gop import plan
from gop._context import _ctx
from gop._lib import lib

try:
    import torch
    import torch_geometric  # noqa: F401
except ImportError:
    torch = None

_EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "minibatch",
                        "sage_neighborloader.py")


def example():
    spec = importlib.util.spec_from_file_location("sage_neighborloader", _EXAMPLE)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


@unittest.skipIf(torch is None, "needs torch and torch_geometric")
class MiniBatch(unittest.TestCase):
    def test_losses_match_pyg(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "run.json")
            rc = example().main(["--graph", "grid:24x24", "--device", "cpu", "--steps", "5",
                                 "--batch-size", "48", "--fanout", "4,3", "--features", "24",
                                 "--hidden", "12", "--classes", "5", "--check", "--json", out])
            self.assertEqual(rc, 0)
            with open(out) as f:
                run = json.load(f)
        s = run["summary"]
        self.assertEqual(s["steps"], 5)
        sizes = {r["nodes"] for r in run["steps"]}
        self.assertGreater(len(sizes), 1, "every batch had the same size: a weak test")
        self.assertLess(s["max_loss_diff"], 1e-4)
        for r in run["steps"]:
            self.assertGreater(r["build_ms"], 0)
            self.assertGreater(r["compute_ms"], 0)

    def test_kernels_serve_every_batch_and_graphs_go(self):
        ex = example()
        try:
            ex.prepare(type("A", (), {"features": 24, "hidden": 12, "classes": 5})())
        except gop.GopError as e:
            self.skipTest(f"this libgop cannot compile ({e})")
        compiled = gop.cache_stats()["compiled"]
        g0 = gop.Graph.open("grid:24x24")
        ei = torch.from_numpy(g0.edge_index)
        x, y = ex.synthetic(g0.num_nodes, 24, 5)
        loader, _ = ex.make_loader(ei, g0.num_nodes, x, y, [4, 3], 40)
        model = ex.SAGE(24, 12, 5)
        refs, sizes, kept = [], set(), gop.graph._kept[0]
        for i, batch in enumerate(loader):
            if i == 6:
                break
            g = gop.Graph.from_edge_index(batch.edge_index, batch.num_nodes)
            sizes.add((g.num_nodes, g.num_edges))
            # the kernels this batch's calls run are the prepared ones
            for c in (plan.sage(g, 24, 12, input_grad=False, train=True) +
                      plan.sage(g, 12, 5, input_grad=True, train=True)):
                c.prepare()
            loss = model(batch.x, g)[:batch.batch_size].sum()
            loss.backward()
            refs.append(weakref.ref(g))
            # the loss's autograd graph and the plan's last call hold it
            del g, loss, c
        gc.collect()
        self.assertGreater(len(sizes), 2)
        self.assertEqual(gop.cache_stats()["compiled"], compiled,
                         "a batch compiled kernels of its own")
        self.assertEqual([r() for r in refs], [None] * len(refs))
        self.assertEqual(gop.graph._kept[0], kept)  # and libgop freed each
        self.assertEqual(lib.gop_diagnostics(_ctx).decode(), "")


@unittest.skipIf(torch is None, "needs torch and torch_geometric")
class Padded(unittest.TestCase):
    """gop.BatchGraph's layout, on the CPU: a batch padded to a fixed
    capacity (gop.graph.padded_edges) aggregates on the batch's vertices
    exactly what the batch's own graph does; the arrays BatchGraph.load
    writes are build_arrays' of the padded edges (the GPU test compares
    them after each load: tests/gpu/graph_build.py, phase capture); its
    checks refuse what does not fit with the reason."""

    def batch(self, n, e, seed):
        gen = torch.Generator().manual_seed(seed)
        # skewed: a third of the edges into vertex 0
        dst = torch.randint(0, n, (e,), generator=gen)
        dst[::3] = 0
        return torch.stack([torch.randint(0, n, (e,), generator=gen), dst])

    def test_layout(self):
        from gop.graph import batch_pad_rows, padded_edges
        ei = self.batch(30, 100, 1)
        p = padded_edges(ei, 50, 700)
        pad = batch_pad_rows(700)
        self.assertEqual(pad, 11)  # one pad vertex a 64 edges
        self.assertEqual(list(p.shape), [2, 700])
        self.assertEqual(p.dtype, torch.int32)
        self.assertTrue(torch.equal(p[:, :100], ei.to(torch.int32)))
        k = torch.arange(100, 700)
        self.assertTrue(torch.equal(p[0, 100:], (50 + k % pad).to(torch.int32)))
        self.assertTrue(torch.equal(p[0, 100:], p[1, 100:]))  # self-loops
        # no pad vertex gets more than 64 edges of a 0-edge batch
        full = padded_edges(ei[:, :0], 50, 700)
        self.assertLessEqual(int(torch.bincount(full[1].long()).max()), 64)

    def test_same_rows_as_the_batch_graph(self):
        from gop.graph import build_arrays, padded_edges
        for n, e, cap_n, cap_e, seed in ((40, 150, 40, 150, 2), (40, 150, 64, 400, 3),
                                         (7, 0, 20, 50, 4), (300, 2000, 400, 2100, 5)):
            ei = self.batch(n, e, seed) if e else torch.zeros((2, 0), dtype=torch.int64)
            p = padded_edges(ei, cap_n, cap_e)
            nv = cap_n + gop.graph.batch_pad_rows(cap_e)
            own, padded = gop.Graph.from_edge_index(ei, n), gop.Graph.from_edge_index(p, nv)
            # the arrays a BatchGraph holds are build_arrays' of the padded edges
            arrays, stats = build_arrays(p, nv)
            self.assertEqual(stats["num_edges"], cap_e)
            ptr = arrays["in_ptr"]
            self.assertTrue(torch.equal(ptr[:n + 1], build_arrays(ei, n)[0]["in_ptr"]))
            x = torch.randn(n, 8)
            xp = torch.cat([x, torch.randn(nv - n, 8)])
            for op in (gop.stdlib.copy_u_sum, gop.stdlib.copy_u_mean, gop.stdlib.copy_u_max):
                with self.subTest(op=op.name, n=n, e=e, cap=(cap_n, cap_e)):
                    self.assertTrue(torch.equal(op(padded, xp)[:n], op(own, x)))
            if not e:  # an empty edge tensor binds as NULL, which gop_run_bind refuses
                continue
            w = torch.randn(e)
            wp = torch.cat([w, torch.randn(cap_e - e)])
            self.assertTrue(torch.equal(gop.stdlib.u_mul_e_sum(padded, xp, wp)[:n],
                                        gop.stdlib.u_mul_e_sum(own, x, w)))

    def test_gcn_norm_on_the_device_path(self):
        # BatchGraph.gcn_weights' computation (gcn_norm_into) on CPU
        # tensors: the host's gcn_norm of the padded graph, bit for bit
        from gop.graph import gcn_norm_into, padded_edges
        ei = self.batch(60, 400, 8)
        ei[:, ::7] = ei[0, ::7]  # self-loops too
        p = padded_edges(ei, 80, 500)
        nv = 80 + gop.graph.batch_pad_rows(500)
        w, s = torch.empty(500), torch.empty(nv)
        gcn_norm_into(p[0], p[1], w, s)
        hw, hs = gop.Graph.from_edge_index(p, nv).gcn_norm()
        self.assertTrue(torch.equal(w, torch.from_numpy(hw)))
        self.assertTrue(torch.equal(s, torch.from_numpy(hs)))
        self.assertTrue(torch.equal(w[400:], torch.zeros(100)))  # pad edges: self-loops

    def test_example_gcn_and_gat_match_pyg(self):
        for model in ("gcn", "gat"):
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "run.json")
                rc = example().main(["--graph", "grid:20x20", "--device", "cpu", "--steps", "3",
                                     "--batch-size", "32", "--fanout", "4,3", "--features",
                                     "16", "--hidden", "8", "--classes", "4", "--model", model,
                                     "--check", "--json", out])
                self.assertEqual(rc, 0)
                with open(out) as f:
                    s = json.load(f)["summary"]
            self.assertEqual(s["model"], model)
            self.assertLess(s["max_loss_diff"], 1e-4, model)

    def test_self_loops_as_pyg(self):
        # BatchGraph.with_self_loops' edges (self_loop_edges) on the padded
        # graph: on the batch's vertices, what the batch's own graph's
        # with_self_loops gives (PyG's remove + add self-loops), for GAT's
        # attention and a sum
        from gop.graph import padded_edges, self_loop_edges
        ei = self.batch(50, 300, 9)
        ei[:, ::5] = ei[0, ::5]  # self-loops, which are removed
        p = padded_edges(ei, 64, 400)
        pad = padded_edges(ei[:, :0], 64, 400)
        nv = 64 + gop.graph.batch_pad_rows(400)
        loops = self_loop_edges(p, pad, nv)
        self.assertEqual(list(loops.shape), [2, 400 + nv])
        self.assertTrue(torch.equal(loops[:, 400:], torch.arange(nv).int().expand(2, -1)))
        own = gop.Graph.from_edge_index(ei, 50).with_self_loops()
        mine = gop.Graph.from_edge_index(loops, nv)
        H, C = 2, 3
        z, a_s, a_d = torch.randn(nv, H, C), torch.randn(nv, H), torch.randn(nv, H)
        att = gop.layers.gat_attention
        self.assertTrue(torch.allclose(att(mine, z, a_s, a_d)[:50],
                                       att(own, z[:50], a_s[:50], a_d[:50]),
                                       rtol=1e-5, atol=1e-6))
        x = torch.randn(nv, 4)
        # (the same in-edges a vertex, in another order: equal to rounding)
        self.assertTrue(torch.allclose(gop.stdlib.copy_u_sum(mine, x)[:50],
                                       gop.stdlib.copy_u_sum(own, x[:50]), rtol=1e-5, atol=1e-6))

    def test_self_loops_graph_keeps_no_parent(self):
        # BatchGraph.with_self_loops' graph (_SelfLoops) with its GPU
        # arrays left out (adopting them needs the driver): it holds no
        # reference to the BatchGraph that holds it (no cycle), and each
        # refill rewrites its edges in place from the parent's current batch
        import gc
        import weakref
        from gop.graph import _SelfLoops, padded_edges, self_loop_edges

        class HostLoops(_SelfLoops):
            num_nodes = property(lambda self: self._nv)

            def _adopt_buffer(self, edges, nv, name):
                self._edges, self._nv = edges, nv

            def _index_arrays(self):  # the device index: not on the CPU
                pass

        class Parent:
            name = "batch"

        def parent(seed):
            p = Parent()
            p._pad = padded_edges(torch.zeros((2, 0), dtype=torch.int64), 64, 400)
            p._edges = padded_edges(self.batch(50, 300, seed), 64, 400)
            p.num_nodes = 64 + gop.graph.batch_pad_rows(400)
            return p

        gc.disable()
        try:
            first = parent(10)
            loops = HostLoops(first)
            ref = weakref.ref(first)
            del first
            self.assertIsNone(ref())  # nothing but `first` held it
        finally:
            gc.enable()
        buf = loops._edges
        second = parent(11)
        loops._refill(second)
        self.assertIs(loops._edges, buf)  # in place: a captured step reads it
        want = self_loop_edges(second._edges, second._pad, second.num_nodes)
        self.assertTrue(torch.equal(buf, want))

    def test_gcn_weights_made_on_first_use(self):
        # BatchGraph's GCN normalisation on the CPU, its device arrays made
        # with torch and not adopted (adopting them needs the driver): a
        # load builds none until gcn_weights() is asked for; that call makes
        # them from the loaded batch and drops the captured build (so the
        # next load captures it with them); later loads rewrite them in place
        from gop.graph import build_arrays, gcn_norm_into, padded_edges

        nv = 64 + gop.graph.batch_pad_rows(400)
        g = object.__new__(gop.BatchGraph)
        g._edges = padded_edges(self.batch(50, 300, 12), 64, 400).int()
        g._arrays, _ = build_arrays(g._edges, nv)
        g._bounds = torch.arange(nv + 1, dtype=torch.int32)
        g.num_nodes, g.num_edges = nv, 400
        g._gcn, g._loops, g._cuda_graph = None, None, "captured"

        def norm():
            w, s = torch.empty(400), torch.empty(nv)
            gcn_norm_into(g._edges[0], g._edges[1], w, s)
            return w, s

        g._index_arrays()  # a load's build
        self.assertIsNone(g._gcn)
        w, s = g.gcn_weights()
        self.assertIsNone(g._cuda_graph)
        want = norm()
        self.assertTrue(torch.equal(w, want[0]) and torch.equal(s, want[1]))
        g._edges.copy_(padded_edges(self.batch(40, 350, 13), 64, 400))
        g._index_arrays()  # the next load
        self.assertIs(g.gcn_weights()[0], w)  # in place: a captured step reads them
        want = norm()
        self.assertTrue(torch.equal(w, want[0]) and torch.equal(s, want[1]))

    def test_checks(self):
        from gop.graph import check_batch
        ei = self.batch(30, 100, 6)
        self.assertEqual(check_batch(ei, 30, 30, 100), (30, 100))
        self.assertEqual(check_batch(ei.int(), torch.tensor(30), 40, 200), (30, 100))
        for args, err, msg in (
                ((ei, 29, 30, 100), gop.GopError, r"holds vertex 29, outside 0\.\.28"),
                ((ei - 1, 30, 30, 100), gop.GopError, r"holds vertex -1, outside 0\.\.29"),
                ((ei, 31, 30, 100), gop.GopError, r"a batch of 31 vertices; this graph holds "
                                                  r"0\.\.30 \(make a larger BatchGraph\)"),
                ((ei, 30, 30, 99), gop.GopError, r"a batch of 100 edges; this graph holds at "
                                                 r"most 99"),
                ((ei, 0, 30, 100), gop.GopError, "100 edges on 0 vertices"),
                ((ei[0], 30, 30, 100), ValueError, r"shape \[2, E\], got \[100\]"),
                ((ei.float(), 30, 30, 100), ValueError, "must hold integers, not torch.float32"),
                ((ei.numpy(), 30, 30, 100), TypeError, "must be a torch tensor, got ndarray"),
                ((ei, 30.0, 30, 100), TypeError, "num_nodes must be an int, got 30.0"),
                ((ei, True, 30, 100), TypeError, "num_nodes must be an int")):
            with self.subTest(msg=msg):
                with self.assertRaisesRegex(err, msg):
                    check_batch(*args)
        # check=False: no range check (BatchGraph.load clamps instead)
        self.assertEqual(check_batch(ei, 29, 30, 100, check=False), (29, 100))

    def test_batch_graph_arguments(self):
        for kw, msg in (({"max_nodes": 0, "max_edges": 5}, "max_nodes must be an int >= 1"),
                        ({"max_nodes": 5, "max_edges": 2.5}, "max_edges must be an int >= 1"),
                        ({"max_nodes": 5, "max_edges": 5, "device": "cpu"},
                         "arrays live on the GPU, not on cpu")):
            with self.subTest(kw=kw):
                with self.assertRaisesRegex(ValueError, msg):
                    gop.BatchGraph(**kw)
        if not torch.cuda.is_available():
            with self.assertRaisesRegex(gop.GopError, "needs a GPU, and torch sees none"):
                gop.BatchGraph(5, 5)

    def test_pad_rows(self):
        from gop.graph import pad_rows
        t = torch.arange(6.0).view(3, 2)
        out = pad_rows("node_rows", t, 3, 5, fill=-1)
        self.assertTrue(torch.equal(out, torch.tensor([[0., 1], [2, 3], [4, 5], [-1, -1],
                                                       [-1, -1]])))
        buf = torch.full((5, 2), 7.0)
        self.assertIs(pad_rows("node_rows", t, 3, 5, out=buf), buf)  # in place
        self.assertTrue(torch.equal(buf[3:], torch.zeros(2, 2)))
        for args, msg in (((t, 4, 5), r"node_rows: a tensor of 4 rows \(the batch's\) "
                                      r"expected, got \[3, 2\]"),
                          ((t.numpy(), 3, 5), "expected, got ndarray"),
                          ((t, 3, 5, torch.zeros(5, 3)), r"out must have shape \[5, 2\], "
                                                         r"got \[5, 3\]")):
            with self.subTest(msg=msg):
                with self.assertRaisesRegex(ValueError, msg):
                    pad_rows("node_rows", *args)

    def test_capacity_growth(self):
        from gop.train import capacity
        self.assertEqual(capacity(7641, None, 1.25), 9552)  # none given: 1.25x the batch
        self.assertEqual(capacity(7641, 7700, 1.25), 7700)  # given and enough: kept
        self.assertEqual(capacity(8899, 7700, 1.25), 11124)  # outgrown: 1.25x the batch
        self.assertEqual(capacity(100, 7700, 1.0), 7700)
        self.assertEqual(capacity(7701, 7700, 1.0), 7702)  # growth 1: just past it

    def test_captured_batches_arguments(self):
        import gop.train
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.Adam(model.parameters(), capturable=True)
        step = lambda g, x: x.sum()  # noqa: E731
        for kw, err, msg in (({"batch_size": 0}, ValueError, "batch_size must be an int >= 1"),
                             ({"batch_size": 4, "growth": 0.5}, ValueError,
                              "growth must be a number >= 1")):
            with self.subTest(kw=kw):
                with self.assertRaisesRegex(err, msg):
                    gop.train.CapturedBatches(step, optimizer=opt, model=model, **kw)
        with self.assertRaisesRegex(ValueError, "capturable=False"):
            gop.train.CapturedBatches(step, optimizer=torch.optim.Adam(model.parameters()),
                                      batch_size=4)
        with self.assertRaisesRegex(TypeError, "step_fn must be callable"):
            gop.train.CapturedBatches(None, optimizer=opt, batch_size=4)
        run = gop.train.CapturedBatches(step, optimizer=opt, batch_size=4)
        ei = self.batch(10, 20, 7)
        with self.assertRaisesRegex(ValueError, r"seeds\['y'\] must be a tensor of at most "
                                                r"batch_size = 4 rows, got \[5\]"):
            run(ei, 10, nodes={"x": torch.zeros(10, 2)}, seeds={"y": torch.zeros(5)})
        with self.assertRaisesRegex(ValueError, r"\['x'\] both a node and a seed input"):
            run(ei, 10, nodes={"x": torch.zeros(10, 2)}, seeds={"x": torch.zeros(4)})
        # the batch's form is check_batch's, before any graph is made
        with self.assertRaisesRegex(TypeError, "num_nodes must be an int, got '10'"):
            run(ei, "10", nodes={"x": torch.zeros(10, 2)}, seeds={"y": torch.zeros(4)})
        with self.assertRaisesRegex(ValueError, r"edge_index must have shape \[2, E\]"):
            run(ei[0], 10, nodes={"x": torch.zeros(10, 2)}, seeds={"y": torch.zeros(4)})
        if not torch.cuda.is_available():
            with self.assertRaisesRegex(gop.GopError, "needs a GPU, and torch sees none"):
                run(ei, 10, nodes={"x": torch.zeros(10, 2)}, seeds={"y": torch.zeros(4)})


if __name__ == "__main__":
    unittest.main()
