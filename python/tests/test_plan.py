"""gop.plan (the gop calls of gop.nn's layers, torch-free) and the schedule
choice of training: schedule="auto" resolved per operator, graph and
width for the forward and each derived operator, what stays at the default
mapping and why, and that preparing a plan fills the kernel cache with
exactly the kernels the calls run. With torch installed, also that
gop.nn's layers make the calls the plan lists and that autograd's backward
runs the derived operators under the chooser's pick. Run by ctest's
`golden_python` entry (tests/python/run.sh)."""
import os
import tempfile
import unittest

import numpy as np

os.environ.setdefault("GOP_CUDA_LIBRARY", "/nonexistent/libcuda.so")  # no GPU here
os.environ.setdefault("GOP_CACHE_DIR", tempfile.mkdtemp(prefix="gop-cache-"))
import gop  # noqa: E402
import gop.plan as plan  # noqa: E402
from gop import core  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

G = gop.Graph.open("rmat:10:8:3")


def packs():
    """{(operator name, kernel key)} of the packs in the cache folder."""
    out = set()
    for f in os.listdir(gop.cache_dir()):
        if f.endswith(".gopk"):
            name, key = f[:-5].rsplit("-", 1)
            out.add((name, key))
    return out


class Plan(unittest.TestCase):
    def test_layers(self):
        c, = plan.gcn(G, 64, 16)
        self.assertIs(c.op, gop.stdlib.u_mul_e_sum)
        self.assertIs(c.graph, G)
        self.assertEqual((c.ext, c.wrt, c.schedule), ({"F": 16}, ("X",), None))
        c, = plan.gcn(G, 64, 16, fused=True, schedule="auto", train=False)
        self.assertIs(c.op, gop.layers.gcn_propagate)
        self.assertEqual((c.wrt, c.schedule), ((), "auto"))  # inference, data input
        # SAGE aggregates the narrower side: lin_l(x) when it narrows
        c, = plan.sage(G, 64, 8, input_grad=True)
        self.assertTrue(c.linear_first)
        self.assertEqual((c.op.name, c.ext, c.wrt), ("copy_u_mean", {"F": 8}, ("X",)))
        c, = plan.sage(G, 64, 64)  # first layer: x is data, no backward
        self.assertFalse(c.linear_first)
        self.assertEqual((c.ext, c.wrt), ({"F": 64}, ()))
        c, = plan.sage(G, 64, 8, aggr="max")  # max does not commute with lin_l
        self.assertEqual((c.op.name, c.ext, c.linear_first), ("copy_u_max", {"F": 64}, False))
        c, = plan.gat(G, 64, 8, heads=4)
        self.assertIs(c.graph, G.with_self_loops())
        self.assertEqual(c.graph.num_edges, G.with_self_loops().num_edges)
        self.assertEqual((c.ext, c.wrt), ({"H": 4, "C": 8}, ("Z", "As", "Ad")))
        c, = plan.gin(G, 32, input_grad=True)
        self.assertEqual((c.op.name, c.ext, c.wrt), ("copy_u_sum", {"F": 32}, ("X",)))
        c, = plan.gin(G, 32, fused=True, train_eps=True)
        self.assertEqual((c.op.name, c.wrt), ("gin_aggregate", ("eps",)))
        with self.assertRaises(KeyError):
            plan.sage(G, 8, 8, aggr="median")

    def test_schedules_resolved(self):
        c, = plan.gcn(G, 64, 16, schedule="auto", input_grad=True)
        k = c.kernels()
        self.assertEqual([x[0] for x in k], ["u_mul_e_sum", "u_mul_e_sum_grad_X"])
        # the forward's and the derived operator's own picks at this width
        self.assertEqual(k[0][1], gop.stdlib.u_mul_e_sum.choose_schedule(G, 16)[0])
        d = gop.stdlib.u_mul_e_sum.grad(("X",)).operators[0]
        self.assertEqual(k[1][1], d.choose_schedule(G, 16)[0])
        self.assertIn("(", k[1][1])
        self.assertEqual(k[1][2], {"F": 16})
        # the width decides: F = 1 and F = 64 may differ, each resolved at its own
        for F in (1, 64):
            c1, = plan.gcn(G, 64, F, schedule="auto", input_grad=True)
            self.assertEqual(c1.kernels()[1][1], d.choose_schedule(G, F)[0])
        # a widening GCN layer aggregates its input (the narrower side):
        # no gradient when the input needs none, the linear map after
        c2, = plan.gcn(G, 16, 64)
        self.assertEqual((c2.ext, c2.wrt, c2.linear_first), ({"F": 16}, (), False))
        c2, = plan.gcn(G, 64, 16)
        self.assertEqual((c2.ext, c2.wrt, c2.linear_first), ({"F": 16}, ("X",), True))
        # the default mapping, asked for
        self.assertEqual([x[1] for x in c.kernels(None)], [None, None])
        # a named schedule is the forward's; its backward runs the default
        self.assertEqual([x[1] for x in c.kernels("spmm_rows(2, 2)")],
                         ["spmm_rows(2, 2)", None])
        # GAT's attention under "auto": core.AUTO_RULES, lanes sized to the
        # heads (a power of two, at most 8) and to heads x channels (at most
        # 32), with one head its in-edge stages on a team's lanes (gat_teams);
        # its joint backward by rule, with one head its in-edge passes on a
        # team's lanes and its pass by source (gat_grad_teams)
        c, = plan.gat(G, 64, 8, heads=2, schedule="auto")
        k = c.kernels()
        self.assertEqual(k[0][:2], ("gat_attention", "gat_groups(64, 2, 4)"))
        self.assertEqual(k[1][:2], ("gat_attention_grad_Z_As_Ad", "gat_grad_groups(32, 2, 4)"))
        self.assertEqual(k[1][2], {"H": 2, "C": 8})
        c, = plan.gat(G, 64, 8, heads=1, schedule="auto")
        self.assertEqual([x[1] for x in c.kernels()], ["gat_teams(64, 4, 2)", "gat_grad_teams(32, 4, 2)"])
        c, = plan.gat(G, 64, 8, heads=8, schedule="auto")
        self.assertEqual([x[1] for x in c.kernels()],
                         ["gat_groups(64, 8, 16)", "gat_grad_groups(32, 8, 16)"])
        c, = plan.gat(G, 64, 3, heads=5, schedule="auto")
        self.assertEqual([x[1] for x in c.kernels()],
                         ["gat_groups(64, 8, 8)", "gat_grad_groups(32, 8, 8)"])
        # the other layers' forward operators keep the default
        g, = plan.gin(G, 16, fused=True, train_eps=True, schedule="auto", input_grad=True)
        self.assertEqual(g.kernels()[0][:2], ("gin_aggregate", None))
        sep = c.kernels(joint=False)
        self.assertEqual([x[0] for x in sep], ["gat_attention", "gat_attention_grad_Z",
                                               "gat_attention_grad_As",
                                               "gat_attention_grad_Ad"])

    def test_keeps_default(self):
        d = gop.stdlib.copy_u_sum.grad(("X",)).operators[0]
        self.assertIsNotNone(d.schedule_for(G, "auto", F=8))
        core.AUTO_KEEPS_DEFAULT[d.name] = "a test"
        try:
            d._choices.clear()
            self.assertIsNone(d.schedule_for(G, "auto", F=8))
        finally:
            del core.AUTO_KEEPS_DEFAULT[d.name]
        self.assertIsNotNone(d.schedule_for(G, "auto", F=8))
        self.assertEqual(core.backward_schedule("auto"), "auto")
        self.assertIsNone(core.backward_schedule(None))
        self.assertIsNone(core.backward_schedule("warp_edge(1, 1)"))

    def test_prepare_fills_exactly(self):
        """Call.prepare compiles what Call.kernels names, and nothing else
        but the default mapping of the operators whose pick the first GPU
        call times against it (Operator.auto_candidates): the
        cache gets each (operator, kernel key) of the plan."""
        gop.clear_cache()
        calls = plan.sage(G, 64, 8, schedule="auto", input_grad=True)
        calls += plan.gat(G, 16, 4, heads=2, schedule="auto")
        want = set()
        for c in calls:
            c.prepare()
            for op, s in c.operators():
                ext = {e: c.ext[e] for e in op.extents}
                # keyed for the call's graph (GAT's self-loop graph has its
                # edge ids in CSR order: kernels of their own)
                want.add((op.name, op.kernel_key(op.schedule_for(c.graph, s, **ext),
                                                 graph=c.graph)))
                if s == "auto":
                    want.update((op.name, op.kernel_key(k, graph=c.graph))
                                for k in op.auto_candidates(c.graph, **ext))
        self.assertEqual(packs(), want)
        # copy_u_mean and its grad, gat_attention and its grad, each under
        # its pick and the default mapping
        self.assertEqual(len(want), 8)

    def test_auto_gradient_on_interpreter(self):
        """A Gradient called with schedule="auto" (as autograd's backward
        after an "auto" forward) gives what the default mapping gives."""
        rng = np.random.default_rng(0)
        x = rng.standard_normal((G.num_nodes, 5)).astype(np.float32)
        w = rng.standard_normal(G.num_edges).astype(np.float32)
        op = gop.stdlib.u_mul_e_sum
        y = op(G, x, w, schedule="auto")
        np.testing.assert_allclose(y, op(G, x, w), rtol=1e-5, atol=1e-5)
        dy = rng.standard_normal(y.shape).astype(np.float32)
        gr = op.grad(("X", "W"))
        a = gr(G, [x, w], [y], [dy], schedule="auto")
        b = gr(G, [x, w], [y], [dy])
        for u, v in zip(a, b):
            np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-4)


@unittest.skipIf(torch is None, "torch is not installed")
class Layers(unittest.TestCase):
    def _runs(self, op):
        """The schedules op has run with (resolved), on the interpreter."""
        return {k[1] for k in op._runs}

    def test_layers_call_the_plan(self):
        torch.manual_seed(0)
        x = torch.randn(G.num_nodes, 12)
        for conv, calls in (
                # a GCNConv on a Graph sums over its gcn_graph (loops=True)
                (gop.nn.GCNConv(12, 6, schedule="auto"),
                 plan.gcn(G, 12, 6, schedule="auto", loops=True)),
                (gop.nn.SAGEConv(12, 6, schedule="auto"), plan.sage(G, 12, 6, schedule="auto")),
                (gop.nn.GATConv(12, 3, heads=2, schedule="auto"),
                 plan.gat(G, 12, 3, heads=2, schedule="auto"))):
            c, = calls
            gr = c.gradient()
            for op in [c.op] + gr.operators:
                op._runs.clear()
            conv(x, G).square().sum().backward()
            for (op, s), (name, sched, ext) in zip(c.operators(), c.kernels()):
                self.assertEqual(op.name, name)
                self.assertEqual(self._runs(op), {sched}, f"{name} ran {self._runs(op)}")


if __name__ == "__main__":
    unittest.main()
