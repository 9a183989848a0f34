"""schedule="auto" for operators of several stages: which picks are timed
against the default mapping before they are kept (gop.auto.needs_measure,
Operator.auto_candidates), what is kept from the times
(gop.auto.decide, Operator.settle_auto with a stand-in clock: the GPU's
timing itself runs on a GPU only, tests/gpu/pyg_accelerate.sh), what a
call then runs (Operator.schedule_for, the interpreter's result), and that
preparing kernels for "auto" prepares every candidate. NumPy only."""
import os
import tempfile
import unittest

import numpy as np

os.environ.setdefault("GOP_CACHE_DIR", tempfile.mkdtemp(prefix="gop-cache-"))
import gop  # noqa: E402
from gop import auto  # noqa: E402

G = gop.Graph.open("rmat:9:8")
GAT = gop.layers.gat_attention


class Decide(unittest.TestCase):
    def test_default_unless_clearly_faster(self):
        self.assertIsNone(auto.decide({"p": 1.0, None: 1.0}))
        self.assertIsNone(auto.decide({"p": 0.98, None: 1.0}))  # within the noise
        self.assertEqual(auto.decide({"p": 0.5, None: 1.0}), "p")
        self.assertIsNone(auto.decide({"p": 3.5, None: 1.0}))  # the GAT trap: 15.7 vs 4.5 ms
        self.assertEqual(auto.decide({"p": 0.9, "q": 0.5, None: 1.0}), "q")

    def test_candidates_that_cannot_run(self):
        self.assertIsNone(auto.decide({"p": None, None: 1.0}))
        self.assertEqual(auto.decide({"p": 2.0, None: None}), "p")
        self.assertIsNone(auto.decide({"p": None, None: None}))

    def test_needs_measure(self):
        self.assertEqual(auto.MEASURE, os.environ.get("GOP_AUTO_MEASURE", "all"))
        old = auto.MEASURE
        auto.MEASURE = "multi-stage"
        self.addCleanup(setattr, auto, "MEASURE", old)
        self.assertTrue(auto.needs_measure(3, "gat_groups(32, 4, 32)", "rule"))
        self.assertTrue(auto.needs_measure(2, "warp_edge(1, 1)", "cost model"))
        self.assertFalse(auto.needs_measure(1, "spmm_rows(2, 1)", "cost model"))
        self.assertFalse(auto.needs_measure(3, "gat_groups(32, 4, 32)", "database"))
        self.assertFalse(auto.needs_measure(3, None, "rule"))
        old = auto.MEASURE
        try:
            auto.MEASURE = "all"
            self.assertTrue(auto.needs_measure(1, "spmm_rows(2, 1)", "cost model"))
            auto.MEASURE = "off"
            self.assertFalse(auto.needs_measure(3, "gat_groups(32, 4, 32)", "rule"))
            auto.MEASURE = "sometimes"
            with self.assertRaisesRegex(ValueError, "MEASURE"):
                auto.needs_measure(3, "gat_groups(32, 4, 32)", "rule")
        finally:
            auto.MEASURE = old


class DefaultSchedule(unittest.TestCase):
    """What a call with no schedule= runs on CUDA tensors: "auto" where
    libgop compiles, the default mapping where it runs packs only (said
    once); "default" names the default mapping everywhere."""

    def setUp(self):
        self.addCleanup(setattr, auto, "DEFAULT", auto.DEFAULT)
        self.addCleanup(setattr, auto, "_said_pack_only", auto._said_pack_only)
        auto.DEFAULT, auto._said_pack_only = "auto", False

    def test_auto_where_it_compiles(self):
        self.assertEqual(auto.cuda_default(True), "auto")
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertIsNone(auto.cuda_default(False))
            self.assertIsNone(auto.cuda_default(False))
        self.assertEqual(len(w), 1)  # said once
        self.assertIn("cannot compile", str(w[0].message))
        auto.DEFAULT = "default"
        self.assertIsNone(auto.cuda_default(True))
        auto.DEFAULT = "fast"
        with self.assertRaisesRegex(ValueError, "GOP_DEFAULT_SCHEDULE"):
            auto.cuda_default(True)

    def test_auto_once_a_graph_is_reused(self):
        """The first DEFAULT_AFTER calls with no schedule= on a graph and
        extents run the default mapping (a graph per mini-batch never pays
        for a choice); later ones "auto"; a new graph starts again."""
        agg = gop.stdlib.copy_u_sum
        g = gop.Graph.open("rmat:7:4")
        seen = [agg._reused(g, {"F": 8}) for _ in range(auto.DEFAULT_AFTER + 2)]
        self.assertEqual(seen, [False] * auto.DEFAULT_AFTER + [True, True])
        self.assertFalse(agg._reused(g, {"F": 16}))  # other extents: counted apart
        h = gop.Graph.open("rmat:7:4")
        self.assertFalse(agg._reused(h, {"F": 8}))

    def test_calls_before_auto_refuses_a_bad_count(self):
        self.assertEqual(auto._calls_before_auto("0"), 0)
        self.assertEqual(auto._calls_before_auto("5"), 5)
        for bad in ("two", "-1", ""):
            with self.assertRaisesRegex(ValueError, "GOP_DEFAULT_AUTO_AFTER is"):
                auto._calls_before_auto(bad)

    def test_this_library_compiles(self):
        from gop import operator
        self.assertIs(operator._can_compile(), True)  # CI builds libgop with LLVM

    def test_default_names_the_default_mapping(self):
        self.assertIsNone(auto.named("default"))
        self.assertEqual(auto.named("auto"), "auto")
        self.assertEqual(auto.backward_schedule("default"), "default")
        self.assertIsNone(auto.backward_schedule(None))
        agg = gop.stdlib.copy_u_sum
        self.assertEqual(agg.kernel_key("default"), agg.kernel_key(None))
        self.assertIsNone(agg.schedule_for(G, "default", F=8))
        x = np.ones((G.num_nodes, 3), dtype=np.float32)
        np.testing.assert_array_equal(agg(G, x, schedule="default"), agg(G, x))


class Operators(unittest.TestCase):
    def test_stages(self):
        self.assertEqual(GAT.stages, 3)
        self.assertEqual(GAT.grad(("Z", "As", "Ad")).operators[0].stages, 5)
        self.assertEqual(gop.stdlib.copy_u_sum.stages, 1)
        self.assertEqual(gop.stdlib.edge_softmax.stages, 3)
        self.assertEqual(auto.count_stages("op f() {\n  for v in dst {\n    for e in "
                                           "in_edges(v) {\n    }\n  }\n}\n"), 1)

    def test_candidates(self):
        """GAT's attention and its joint backward (rules), edge softmax
        (the cost model): their pick and the default; an aggregation: its
        pick and the default too (every pick is timed by default), its pick
        alone when only multi-stage picks are; a rule that keeps the
        default: nothing to time."""
        self.assertEqual(GAT.auto_candidates(G, H=4, C=8), ["gat_groups(64, 4, 8)", None])
        joint = GAT.grad(("Z", "As", "Ad")).operators[0]
        self.assertEqual(joint.auto_candidates(G, H=4, C=8), ["gat_grad_groups(32, 4, 8)", None])
        self.assertEqual(joint.auto_candidates(G, H=1, C=8), ["gat_grad_teams(32, 4, 2)", None])
        self.assertEqual(joint.auto_candidates(G, H=1, C=40), ["gat_grad_teams(32, 4, 16)", None])
        soft = gop.stdlib.edge_softmax
        pick = soft.schedule_for(G, "auto")
        if pick is not None:
            self.assertEqual(soft.auto_candidates(G), [pick, None])
        agg = gop.stdlib.copy_u_sum
        pick = agg.schedule_for(G, "auto", F=32)
        self.assertIsNotNone(pick)
        old = auto.MEASURE
        self.addCleanup(setattr, auto, "MEASURE", old)
        auto.MEASURE = "all"
        self.assertEqual(agg.auto_candidates(G, F=32), [pick, None])
        auto.MEASURE = "multi-stage"
        self.assertEqual(agg.auto_candidates(G, F=32), [pick])

    def test_settle(self):
        """The kept schedule is what "auto" runs from then on, for that graph
        and those extents only; the interpreter agrees under either."""
        g = gop.Graph.open("rmat:8:8").with_self_loops()
        pick = GAT.schedule_for(g, "auto", H=2, C=4)
        seen = []

        def slow_pick(s):  # the pick 3.5x the default, as on musae-github
            seen.append(s)
            return 3.5 if s is not None else 1.0
        self.assertIsNone(GAT.settle_auto(g, {"H": 2, "C": 4}, slow_pick))
        self.assertEqual(seen, [pick, None])
        self.assertIsNone(GAT.schedule_for(g, "auto", H=2, C=4))
        self.assertEqual(GAT.auto_candidates(g, H=2, C=4), [None])
        # settled once: not timed again
        self.assertIsNone(GAT.settle_auto(g, {"H": 2, "C": 4}, slow_pick))
        self.assertEqual(len(seen), 2)
        # other extents, another graph: their own choice
        self.assertEqual(GAT.schedule_for(g, "auto", H=4, C=4), GAT.schedule_for(
            G, "auto", H=4, C=4))
        self.assertEqual(GAT.settle_auto(g, {"H": 4, "C": 4},
                                         lambda s: 0.4 if s else 1.0), "gat_groups(64, 4, 4)")
        self.assertEqual(GAT.schedule_for(g, "auto", H=4, C=4), "gat_groups(64, 4, 4)")
        # the same results under "auto" on the interpreter, settled or not
        rng = np.random.default_rng(0)
        for H in (2, 4):
            z = rng.standard_normal((g.num_nodes, H, 4)).astype(np.float32)
            a_s = rng.standard_normal((g.num_nodes, H)).astype(np.float32)
            a_d = rng.standard_normal((g.num_nodes, H)).astype(np.float32)
            np.testing.assert_allclose(GAT(g, z, a_s, a_d, schedule="auto"),
                                       GAT(g, z, a_s, a_d), rtol=1e-5, atol=1e-6)

    def test_prepare_auto_prepares_candidates(self):
        """Operator.prepare(schedule="auto") compiles the pick and, where it
        is to be timed, the default: both must be packed for a machine
        without LLVM. (An operator of its own, so that no other test's
        kernels are in memory already and the packs are written.)"""
        lib = gop.compile("""
op own_sum(X: f32[src, F]) -> Y: f32[dst, F] {
  for v in dst {
    for e in in_edges(v) {
      for f in 0..F {
        Y[v, f] += X[src(e), f]
      }
    }
  }
}
""", "test_auto_own")
        op = lib.own_sum
        g = gop.Graph.open("rmat:7:8")
        old = auto.MEASURE
        auto.MEASURE = "multi-stage"
        self.assertEqual(len(op.auto_candidates(g, F=32)), 1)  # one stage: trusted
        auto.MEASURE = "all"
        try:
            cands = op.auto_candidates(g, F=32)
            self.assertEqual(len(cands), 2)
            self.assertIsNone(cands[1])
            gop.clear_cache()
            op.prepare(g, schedule="auto", F=32)
        finally:
            auto.MEASURE = old
        files = os.listdir(gop.cache_dir())
        for s in cands:
            k = op.kernel_key(s)
            self.assertTrue(any(k in f for f in files), (s, k, files))

if __name__ == "__main__":
    unittest.main()
