"""gop.train.capture_step: a whole training step captured as a CUDA graph.
Without a GPU (CI): its refusals (a CPU model: the interpreter cannot be
captured; an Adam without capturable=True), each raised before any step
runs, and that the state put back after the warm-up steps is the state
before them (a fresh Adam's state reset to what its first step makes), so
a captured run's losses are step for step an eager run's. With CUDA and
gop's GPU (tests/gpu/train.sh runs this file on the GPU machine): a
captured two-layer GCN's loss over 5 replays equals the eager step's from
the same initial state. Skipped where torch is not installed. Run by
ctest's `python` entry (tests/python/run.sh)."""
import copy
import os
import tempfile
import unittest

import numpy as np

os.environ.setdefault("GOP_CACHE_DIR", tempfile.mkdtemp(prefix="gop-cache-"))
import gop  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

if torch is not None:
    import gop.nn as gnn
    import gop.train as gtrain


def graph(n=64, seed=0):
    """A small random graph: every vertex has an in-edge, some several."""
    rng = np.random.default_rng(seed)
    src = np.concatenate([rng.integers(0, n, 4 * n), np.arange(n)])
    dst = np.concatenate([rng.integers(0, n, 4 * n), (np.arange(n) + 1) % n])
    return gop.Graph.from_arcs(src.tolist(), dst.tolist(), n, "train-test")


def gcn(fin=64, hidden=16, classes=8):
    """Two gop.nn.GCNConv layers (bench/train.py's GCN: 64 -> 16 -> 8, the
    widths whose default-mapping kernels the GPU machine carries)."""
    class GCN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = gnn.GCNConv(fin, hidden)
            self.conv2 = gnn.GCNConv(hidden, classes)

        def forward(self, x, g):
            return self.conv2(torch.relu(self.conv1(x, g)), g)
    return GCN()


def step_of(model, opt, x, g, idx, y):
    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x, g).index_select(0, idx), y)
        loss.backward()
        opt.step()
        return loss
    return step


@unittest.skipIf(torch is None, "torch is not installed")
class Refusals(unittest.TestCase):
    def setUp(self):
        self.calls = 0
        self.model = gcn(8, 4, 2)

    def step(self):
        self.calls += 1

    def test_cpu_model(self):
        opt = torch.optim.Adam(self.model.parameters(), lr=0.01, capturable=True)
        with self.assertRaises(ValueError) as cm:
            gtrain.capture_step(self.step, optimizer=opt, model=self.model)
        msg = str(cm.exception)
        self.assertIn("is on cpu", msg)
        self.assertIn("CUDA", msg)
        self.assertIn("interpreter", msg)
        self.assertEqual(self.calls, 0, "nothing may run before the refusal")

    def test_adam_not_capturable(self):
        for opt in (torch.optim.Adam(self.model.parameters(), lr=0.01),
                    torch.optim.AdamW(self.model.parameters(), lr=0.01)):
            with self.assertRaises(ValueError) as cm:
                gtrain.capture_step(self.step, optimizer=opt, model=self.model)
            msg = str(cm.exception)
            self.assertIn("capturable=True", msg)
            self.assertIn(type(opt).__name__, msg)
        self.assertEqual(self.calls, 0)

    def test_arguments(self):
        opt = torch.optim.Adam(self.model.parameters(), capturable=True)
        with self.assertRaises(ValueError):
            gtrain.capture_step(self.step, -1, optimizer=opt)
        with self.assertRaises(TypeError):
            gtrain.capture_step(None, optimizer=opt)
        with self.assertRaises(TypeError):  # the optimizer is named, always
            gtrain.capture_step(self.step)

    def test_lazy_attribute(self):
        self.assertIs(gop.train, gtrain)


@unittest.skipIf(torch is None, "torch is not installed")
class Restore(unittest.TestCase):
    """_Snapshot, on CPU tensors (what capture_step does around its warm-up):
    steps taken after the restore are the steps taken from the start."""

    def run_steps(self, model, opt, n, x, g, idx, y):
        step = step_of(model, opt, x, g, idx, y)
        return [step().item() for _ in range(n)]

    def test_warmup_leaves_no_trace(self):
        g = graph(24)
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(24, 8, generator=gen)
        idx = torch.arange(0, 24, 2)
        y = torch.randint(0, 3, (24,), generator=gen)[idx]
        for make in (lambda p: torch.optim.Adam(p, lr=0.05),
                     lambda p: torch.optim.AdamW(p, lr=0.05, amsgrad=True),
                     lambda p: torch.optim.NAdam(p, lr=0.05),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)):
            for stepped in (False, True):  # a fresh optimizer; one that has stepped
                torch.manual_seed(0)
                ref = gcn(8, 4, 3)
                init = {k: v.clone() for k, v in ref.state_dict().items()}
                opt_ref = make(ref.parameters())
                if stepped:
                    self.run_steps(ref, opt_ref, 2, x, g, idx, y)
                    init = {k: v.clone() for k, v in ref.state_dict().items()}
                    state = copy.deepcopy(opt_ref.state_dict())
                want = self.run_steps(ref, opt_ref, 4, x, g, idx, y)

                model = gcn(8, 4, 3)
                model.load_state_dict(init)
                opt = make(model.parameters())
                if stepped:
                    opt.load_state_dict(state)
                snap = gtrain._Snapshot(gtrain._tensors(model, opt), opt)
                self.run_steps(model, opt, 3, x, g, idx, y)  # the "warm-up"
                snap.restore()
                for k, v in model.state_dict().items():
                    torch.testing.assert_close(v, init[k], rtol=0, atol=0)
                got = self.run_steps(model, opt, 4, x, g, idx, y)
                np.testing.assert_allclose(got, want, rtol=1e-6,
                                           err_msg=f"{type(opt).__name__} stepped={stepped}")

    def test_restore_in_place(self):
        model = gcn(8, 4, 3)
        before = [p.data_ptr() for p in model.parameters()]
        opt = torch.optim.Adam(model.parameters(), lr=0.1)
        snap = gtrain._Snapshot(gtrain._tensors(model, opt), opt)
        g = graph(24)
        self.run_steps(model, opt, 1, torch.randn(24, 8), g, torch.arange(24),
                       torch.zeros(24, dtype=torch.long))
        ptrs = {k: v.data_ptr() for k, v in opt.state[next(model.parameters())].items()}
        snap.restore()
        self.assertEqual(before, [p.data_ptr() for p in model.parameters()])
        st = opt.state[next(model.parameters())]
        self.assertEqual(ptrs, {k: v.data_ptr() for k, v in st.items()})
        for v in st.values():
            self.assertEqual(float(v.abs().sum()), 0.0)

    def test_unknown_optimizer(self):
        class Mine(torch.optim.Optimizer):
            def __init__(self, params):
                super().__init__(params, {"lr": 0.1})

            def step(self):
                pass
        model = gcn(8, 4, 3)
        with self.assertRaises(ValueError) as cm:
            gtrain.capture_step(lambda: None, optimizer=Mine(model.parameters()))
        self.assertIn("restore=False", str(cm.exception))


def cuda_ready():
    return torch is not None and torch.cuda.is_available() and gop.gpu_available()


@unittest.skipUnless(cuda_ready(), "needs torch with CUDA and gop's GPU")
class CapturedGCN(unittest.TestCase):
    def test_replays_equal_eager(self):
        """5 replays of a captured step against 5 eager steps from the same
        weights (Adam capturable=True on both sides): relative 1e-5 (the
        same kernels; only atomics' order may differ)."""
        g = graph(512)
        gen = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(g.num_nodes, 64, generator=gen, device="cuda")
        y_all = torch.randint(0, 8, (g.num_nodes,), generator=gen, device="cuda")
        idx = torch.arange(0, g.num_nodes, 2, device="cuda")
        y = y_all[idx]
        torch.manual_seed(0)
        eager = gcn().cuda()
        init = {k: v.clone() for k, v in eager.state_dict().items()}
        opt = torch.optim.Adam(eager.parameters(), lr=0.01, capturable=True)
        step = step_of(eager, opt, x, g, idx, y)
        want = [step().item() for _ in range(5)]

        model = gcn().cuda()
        model.load_state_dict(init)
        opt2 = torch.optim.Adam(model.parameters(), lr=0.01, capturable=True)
        cap = gtrain.capture_step(step_of(model, opt2, x, g, idx, y), optimizer=opt2,
                                  model=model)
        self.assertIsInstance(cap.graph, torch.cuda.CUDAGraph)
        got = [cap.replay().item() for _ in range(5)]
        np.testing.assert_allclose(got, want, rtol=1e-5)
        # the replays trained the model's own parameters (in place)
        self.assertFalse(torch.equal(model.conv1.lin.weight, init["conv1.lin.weight"]))

    def test_not_capturable(self):
        """A step that waits on the host (.item()) is refused with a
        CaptureError naming torch's reason; gop and torch work after it."""
        g = graph(128)
        x = torch.randn(g.num_nodes, 64, device="cuda")
        model = gcn().cuda()
        opt = torch.optim.Adam(model.parameters(), lr=0.01, capturable=True)
        inner = step_of(model, opt, x, g, torch.arange(g.num_nodes, device="cuda"),
                        torch.zeros(g.num_nodes, dtype=torch.long, device="cuda"))

        def step():
            loss = inner()
            loss.item()  # waits on the host
            return loss
        current = torch.cuda.current_stream()
        with self.assertRaises(gtrain.CaptureError) as cm:
            gtrain.capture_step(step, optimizer=opt, model=model)
        self.assertIn("not capturable", str(cm.exception))
        self.assertTrue(cm.exception.cause)
        self.assertEqual(torch.cuda.current_stream(), current)
        inner()  # eager again, on the caller's stream
        torch.cuda.synchronize()


if __name__ == "__main__":
    unittest.main()
