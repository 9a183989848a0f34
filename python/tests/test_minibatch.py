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


if __name__ == "__main__":
    unittest.main()
