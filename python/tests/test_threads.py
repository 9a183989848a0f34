"""The Python package from 8 threads at once, on the interpreter
(docs/threads.md, "From Python"): operators called on one shared graph and
on a graph of each thread's own, schedule="auto" resolved and gradients
derived for the first time by all threads at once (a library compiled for
the test, so that every cache starts empty), the graph's memoised arrays
and self-loop graph made by all at once. Every output must equal, bit for
bit, what the same call computed alone (the interpreter is deterministic),
and every thread must get the same cached object. With torch: a
gop.nn.GCNConv forward and backward from each thread on CPU tensors, against
the single-threaded result. A few seconds; the GPU version is
tests/gpu/python_longrun.py's `threads` part. Run by ctest's `python` entry
(tests/python/run.sh)."""
import os
import sys
import tempfile
import threading
import unittest

import numpy as np

os.environ.setdefault("GOP_CACHE_DIR", tempfile.mkdtemp(prefix="gop-cache-"))
import gop  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

THREADS = 8
ITERS = int(os.environ.get("GOP_PY_THREAD_ITERS", "10"))

# two operators of the standard library's, compiled afresh: their gradient
# and schedule-choice caches start empty in this test
SOURCE = """
op agg(X: f32[src, F]) -> Y: f32[dst, F] {
  for v in dst {
    for e in in_edges(v) {
      for f in 0..F {
        Y[v, f] += X[src(e), f]
      }
    }
  }
}
op wagg(X: f32[src, F], W: f32[edge]) -> Y: f32[dst, F] {
  for v in dst {
    for e in in_edges(v) {
      for f in 0..F {
        Y[v, f] += X[src(e), f] * W[e]
      }
    }
  }
}
"""


def graph(seed, n=48, deg=4):
    rng = np.random.default_rng(seed)
    src = np.concatenate([rng.integers(0, n, deg * n), np.arange(n)])
    dst = np.concatenate([rng.integers(0, n, deg * n), (np.arange(n) + 1) % n])
    return gop.Graph.from_arcs(src, dst, n, f"threads-{seed}")


def run_threads(fn):
    """fn(i) in THREADS threads started together; their results, or the
    first exception raised in one."""
    out, errs = [None] * THREADS, []
    barrier = threading.Barrier(THREADS)

    def body(i):
        try:
            barrier.wait()
            out[i] = fn(i)
        except BaseException as e:  # noqa: BLE001 - reraised in the caller
            errs.append(e)
            barrier.abort()
    ts = [threading.Thread(target=body, args=(i,)) for i in range(THREADS)]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        sys.setswitchinterval(old)
    if errs:
        raise errs[0]
    return out


class Threads(unittest.TestCase):
    def setUp(self):
        self.lib = gop.compile(SOURCE, "threads-test")
        self.shared = graph(100)
        self.own = [graph(i) for i in range(THREADS)]
        rng = np.random.default_rng(7)
        self.data = []
        for g in [self.shared] * THREADS + self.own:
            self.data.append((rng.standard_normal((g.num_nodes, 8)).astype(np.float32),
                              rng.random(g.num_edges).astype(np.float32)))

    def calls(self, i):
        """Thread i's calls: the shared graph, then its own."""
        lib, out = self.lib, []
        for g, (x, w) in ((self.shared, self.data[i]), (self.own[i], self.data[THREADS + i])):
            out.append(lib.agg(g, x))
            out.append(lib.wagg(g, x, w))
            out.append(lib.wagg(g, x, w, schedule="auto"))
            out.append(gop.stdlib.copy_u_sum(g, x))
            dx, = lib.wagg.grad(("X",))(g, [x, w], [None], [out[1]])
            out.append(dx)
        return out

    def test_operators_and_caches(self):
        got = run_threads(lambda i: [self.calls(i) for _ in range(ITERS)])
        # the same calls, one thread (the caches now warm)
        for i in range(THREADS):
            want = self.calls(i)
            for it in got[i]:
                for a, b in zip(it, want):
                    np.testing.assert_array_equal(a, b)
        # one gradient derived, one choice per graph and width
        self.assertEqual(len(self.lib.wagg._grads), 1)
        self.assertEqual(len({id(self.lib.wagg.grad(("X",))) for _ in range(3)}), 1)

    def test_first_use_from_all_threads(self):
        # every thread asks for what is made once at the same moment
        gs = run_threads(lambda i: (self.lib.agg.grad(("X",)), self.shared.with_self_loops(),
                                    self.shared.gcn_norm(),
                                    self.lib.wagg.schedule_for(self.shared, "auto", F=8)))
        for k in range(3):
            self.assertEqual(len({id(x[k]) for x in gs}), 1, f"item {k} made twice")
        self.assertEqual(len({x[3] for x in gs}), 1)

    def test_multi_stage_runs_are_per_thread_on_the_gpu(self):
        """A run of several stages keeps device temporaries between them:
        on the GPU each thread gets its own (the key of Operator._runs
        names the thread), where a one-stage run is shared; interpreter
        runs are shared either way."""
        from gop import _lib
        g = gop.Graph.open("rmat:6:4")
        soft, agg = gop.stdlib.edge_softmax, gop.stdlib.copy_u_sum
        self.assertGreater(soft.stages, 1)
        self.assertEqual(agg.stages, 1)
        keys = {}
        both = threading.Barrier(2)  # both alive at once: two thread ids

        def key_of(name):
            both.wait()
            keys[name] = (soft._run_key(g, None, None, _lib.GOP_DEVICE_GPU, {}),
                          soft._run_key(g, None, None, _lib.GOP_DEVICE_INTERP, {}),
                          agg._run_key(g, None, None, _lib.GOP_DEVICE_GPU, {"F": 8}))
            both.wait()
        ts = [threading.Thread(target=key_of, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertNotEqual(keys[0][0], keys[1][0])
        self.assertEqual(keys[0][1], keys[1][1])
        self.assertEqual(keys[0][2], keys[1][2])

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_gcn_layer(self):
        import copy
        import gop.nn as gnn
        torch.manual_seed(0)
        base = gnn.GCNConv(8, 8)
        xs = [torch.from_numpy(d[0]) for d in self.data]

        def step(i, m):
            res = []
            for g, x in ((self.shared, xs[i]), (self.own[i], xs[THREADS + i])):
                m.zero_grad(set_to_none=True)
                y = m(x, g)
                (y * y).sum().backward()
                res += [y.detach(), m.lin.weight.grad.clone(), m.bias.grad.clone()]
            return res
        mods = [copy.deepcopy(base) for _ in range(THREADS)]
        got = run_threads(lambda i: [step(i, mods[i]) for _ in range(max(1, ITERS // 4))])
        for i in range(THREADS):
            want = step(i, copy.deepcopy(base))
            for it in got[i]:
                for a, b in zip(it, want):
                    # the same sums in the same order: equal (torch's matmul
                    # may split a sum by thread count: 1e-6 then)
                    torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)


@unittest.skipIf(torch is None, "torch is not installed")
class LongRunScript(unittest.TestCase):
    """tests/gpu/python_longrun.py, every part, on CPU tensors for a few steps."""

    def test_cpu(self):
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, os.path.join(here, "..", "..", "tests", "gpu"))
        try:
            import python_longrun
        finally:
            sys.path.pop(0)
        with tempfile.TemporaryDirectory() as out:
            rc = python_longrun.main(["--device", "cpu", "--steps", "4", "--iters", "1",
                                      "--out", out])
            with open(os.path.join(out, "summary.md")) as f:
                text = f.read()
        self.assertEqual(rc, 0, text)
        for part in ("train", "minibatch", "threads"):
            self.assertIn(f"## {part}: PASS", text)


if __name__ == "__main__":
    unittest.main()
