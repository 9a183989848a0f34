"""The Python package on NumPy (the reference interpreter), and on CPU
torch when torch is installed: `python3 -m unittest discover python/tests`.
GOP_LIBRARY names the libgop.so to test (CI: the build's)."""
import ctypes
import os
import tempfile
import unittest

import numpy as np

os.environ.setdefault("GOP_CUDA_LIBRARY", "/nonexistent/libcuda.so")  # no GPU here
os.environ.setdefault("GOP_CACHE_DIR", tempfile.mkdtemp(prefix="gop-cache-"))
import gop  # noqa: E402

try:
    import scipy.sparse as sp
except ImportError:
    sp = None
try:
    import torch
except ImportError:
    torch = None

SRC = np.array([0, 1, 2, 3, 0, 2], dtype=np.int64)
DST = np.array([1, 2, 3, 0, 2, 2], dtype=np.int64)  # with a self-loop 2 -> 2


def ref_sum(src, dst, x, n, w=None):
    y = np.zeros((n,) + x.shape[1:], dtype=np.float64)
    for e, (s, d) in enumerate(zip(src, dst)):
        y[d] += x[s] * (1.0 if w is None else w[e])
    return y


class Basics(unittest.TestCase):
    def test_stdlib(self):
        self.assertGreater(len(gop.stdlib), 50)
        op = gop.stdlib.u_mul_e_sum
        self.assertEqual(op.name, "u_mul_e_sum")
        self.assertEqual(op.dgl_name, "u_mul_e_sum")
        self.assertIn("X: f32[src, F]", op.signature)
        self.assertEqual([s.name for s in op.inputs], ["X", "W"])
        self.assertEqual([s.name for s in op.outputs], ["Y"])
        self.assertEqual(op.extents, ["F"])
        self.assertIn("weighted aggregation", op.__doc__)
        self.assertIn("u_mul_e_sum", gop.stdlib)
        self.assertIs(gop.stdlib["copy_u_sum"], gop.stdlib.copy_u_sum)
        with self.assertRaisesRegex(AttributeError, "no operator 'nope'"):
            gop.stdlib.nope
        self.assertTrue(any(s.startswith("warp_edge(") for s in op.schedules()))
        self.assertIn("gcn_propagate", gop.layers)

    def test_nn_import(self):
        # gop.nn loads on first use; it once recursed without end (the GPU
        # check found it): without torch it must be a plain ImportError
        if torch is None:
            with self.assertRaises(ImportError):
                gop.nn
        else:
            self.assertTrue(hasattr(gop.nn, "GCNConv"))

    def test_compile(self):
        lib = gop.compile("op twice(X: f32[dst, F]) -> Y: f32[dst, F] {\n"
                          "  for v in dst {\n    for f in 0..F {\n"
                          "      Y[v, f] = 2.0 * X[v, f]\n    }\n  }\n}\n", name="mine.gop")
        g = gop.Graph.from_arcs(SRC, DST)
        x = np.arange(8, dtype=np.float32).reshape(4, 2)
        np.testing.assert_allclose(lib.twice(g, x), 2 * x)
        # no named schedule applies to it: a GPU call would take the C API's
        # default mapping (prepare compiles in GPU mode, without a GPU here)
        lib.twice.prepare(g, schedule="auto", F=2)
        self.assertIs(lib.twice._chosen(g, {"F": 2}), None)
        with self.assertRaisesRegex(gop.GopError, r"bad.gop:1:\d+: error"):
            gop.compile("op broken(X: f32[src, F]) -> Y {", name="bad.gop")
        with tempfile.NamedTemporaryFile("w", suffix=".gop", delete=False) as f:
            f.write("op ident(X: f32[dst, F]) -> Y: f32[dst, F] {\n  for v in dst {\n"
                    "    for f in 0..F {\n      Y[v, f] = X[v, f]\n    }\n  }\n}\n")
        try:
            self.assertIn("ident", gop.compile(f.name))
        finally:
            os.unlink(f.name)

    def test_struct_layouts(self):
        """Each ctypes struct of the package is the size of the C one it
        stands for: a struct short by a field lets the library write past
        its buffer (GraphInfo once lacked `locality`)."""
        from gop import _lib
        for cls, name in ((_lib.CompileOptions, "GopCompileOptions"),
                          (_lib.CompileTimes, "GopCompileTimes"),
                          (_lib.GraphInfo, "GopGraphInfo"), (_lib.RunStats, "GopRunStats"),
                          (_lib.CacheStats, "GopCacheStats"),
                          (_lib.ScheduleChoice, "GopScheduleChoice"),
                          (_lib.TuneOptions, "GopTuneOptions"), (_lib.TuneEntry, "GopTuneEntry"),
                          (_lib.TuneReport, "GopTuneReport")):
            self.assertEqual(ctypes.sizeof(cls), _lib.lib.gop_struct_size(name.encode()), name)
        self.assertEqual(_lib.lib.gop_struct_size(b"NoSuchStruct"), 0)

    def test_graphs(self):
        g = gop.Graph.from_edge_index(np.stack([SRC, DST]))
        self.assertEqual((g.num_nodes, g.num_edges), (4, 6))
        # the whole of GopGraphInfo comes back (a field short, C wrote past it)
        self.assertTrue(0.0 <= g.info["locality"] <= 1.0)
        order = np.argsort(DST, kind="stable")  # arcs by destination: CSR order
        self.assertEqual(g.info["csr_edges"], int(np.array_equal(order, np.arange(6))))
        self.assertEqual(gop.Graph.from_arcs(SRC[order], DST[order]).info["csr_edges"], 1)
        np.testing.assert_array_equal(g.edge_index, np.stack([SRC, DST]))
        g2 = gop.Graph.from_edge_index(np.stack([SRC, DST]).astype(np.int32), num_nodes=7)
        self.assertEqual(g2.num_nodes, 7)
        self.assertEqual(gop.Graph.open("grid:3x3").num_nodes, 9)
        self.assertGreater(gop.Graph.open("rmat:6:4").num_edges, 0)
        with self.assertRaisesRegex(ValueError, r"\[2, E\]"):
            gop.Graph.from_edge_index(np.zeros((3, 4), dtype=np.int64))
        with self.assertRaisesRegex(gop.GopError, "graph"):
            gop.Graph.from_arcs([0, 5], [1, 1], num_nodes=3)
        with self.assertRaises(gop.GopError):
            gop.Graph.open("/nonexistent/graph.mtx")

    @unittest.skipIf(sp is None, "scipy is not installed")
    def test_scipy(self):
        a = sp.coo_matrix((np.ones(6, dtype=np.float32), (SRC, DST)), shape=(4, 4))
        g = gop.Graph.from_scipy(a.tocsr())
        self.assertEqual((g.num_nodes, g.num_edges), (4, 6))
        x = np.random.default_rng(0).random((4, 3), dtype=np.float32)
        np.testing.assert_allclose(gop.stdlib.copy_u_sum(g, x), ref_sum(SRC, DST, x, 4),
                                   rtol=1e-6)
        with self.assertRaisesRegex(ValueError, "square"):
            gop.Graph.from_scipy(sp.coo_matrix((2, 3)))


class NumpyCalls(unittest.TestCase):
    def setUp(self):
        self.g = gop.Graph.from_arcs(SRC, DST)
        rng = np.random.default_rng(1)
        self.x = rng.random((4, 5), dtype=np.float32)
        self.w = rng.random(6, dtype=np.float32)

    def test_weighted_sum(self):
        y = gop.stdlib.u_mul_e_sum(self.g, self.x, self.w)
        self.assertEqual((y.shape, y.dtype), ((4, 5), np.float32))
        np.testing.assert_allclose(y, ref_sum(SRC, DST, self.x, 4, self.w), rtol=1e-6)

    def test_dtypes(self):
        # issue 19: an operator instantiated in f16 or f64 takes and gives
        # arrays of that type (f32 accumulation for f16: one rounding)
        for dt, npdt, tol in (("f16", np.float16, 2e-3), ("f64", np.float64, 1e-12)):
            op = gop.stdlib.u_mul_e_sum.retype(dt)
            self.assertIn(f"X: {dt}[src, F]", op.signature)
            x, w = self.x.astype(npdt), self.w.astype(npdt)
            y = op(self.g, x, w)
            self.assertEqual((y.shape, y.dtype), ((4, 5), npdt))
            want = ref_sum(SRC, DST, x.astype(np.float64), 4, w.astype(np.float64))
            np.testing.assert_allclose(y.astype(np.float64), want, rtol=tol, atol=tol)
            with self.assertRaisesRegex(TypeError, f"input X must be {npdt.__name__}, got float32"):
                op(self.g, self.x, w)
        with self.assertRaisesRegex(TypeError, "input X must be float32, got float16"):
            gop.stdlib.copy_u_sum(self.g, self.x.astype(np.float16))
        bf = gop.stdlib.copy_u_sum.retype("bf16")
        with self.assertRaisesRegex(TypeError, "must be bfloat16, got float32 .NumPy has no bfloat16"):
            bf(self.g, self.x)
        with self.assertRaisesRegex(gop.GopError, "unknown dtype 'i32'"):
            gop.stdlib.copy_u_sum.retype("i32")

    def test_out_and_extents(self):
        out = np.full((4, 5), 7.0, dtype=np.float32)
        r = gop.stdlib.copy_u_sum(self.g, self.x, out=out)
        self.assertIs(r, out)
        np.testing.assert_allclose(out, ref_sum(SRC, DST, self.x, 4), rtol=1e-6)
        # heads: two extents from a 3-D input
        xh = np.random.default_rng(2).random((4, 2, 3), dtype=np.float32)
        wh = np.random.default_rng(3).random((6, 2), dtype=np.float32)
        y = gop.stdlib.u_mul_e_sum_heads(self.g, xh, wh)
        want = np.zeros((4, 2, 3))
        for e, (s, d) in enumerate(zip(SRC, DST)):
            want[d] += xh[s] * wh[e][:, None]
        np.testing.assert_allclose(y, want, rtol=1e-6)
        # an output-only extent must be given: u_add_v's M is [edge, F]
        m = gop.stdlib.u_add_v(self.g, self.x, self.x)
        np.testing.assert_allclose(m, self.x[SRC] + self.x[DST], rtol=1e-6)

    def test_layers_and_softmax(self):
        s = np.random.default_rng(4).random(6, dtype=np.float32)
        a = gop.stdlib.edge_softmax(self.g, s)
        for v in range(4):
            into = DST == v
            if into.any():
                self.assertAlmostEqual(float(a[into].sum()), 1.0, places=5)
        eps = np.array(0.5, dtype=np.float32)
        y = gop.layers.gin_aggregate(self.g, self.x, self.x, eps)
        np.testing.assert_allclose(y, 1.5 * self.x + ref_sum(SRC, DST, self.x, 4), rtol=1e-6)

    def test_errors(self):
        op = gop.stdlib.u_mul_e_sum
        with self.assertRaisesRegex(TypeError, "input X must be float32, got float64"):
            op(self.g, self.x.astype(np.float64), self.w)
        with self.assertRaisesRegex(ValueError, "not C-contiguous"):
            op(self.g, np.asfortranarray(self.x), self.w)
        with self.assertRaisesRegex(ValueError, r"W .* must have shape \[6\]"):
            op(self.g, self.x, self.w[:5])
        with self.assertRaisesRegex(ValueError, r"X must have 2 dimension"):
            op(self.g, self.x.ravel(), self.w)
        with self.assertRaisesRegex(ValueError, r"must have shape \[4, 5\]"):
            op(self.g, self.x[:3], self.w)
        with self.assertRaisesRegex(TypeError, "takes 2 input"):
            op(self.g, self.x)
        with self.assertRaisesRegex(TypeError, "gop.Graph"):
            op(self.x, self.x, self.w)
        with self.assertRaisesRegex(TypeError, "no extent 'G'"):
            op(self.g, self.x, self.w, G=3)
        with self.assertRaisesRegex(ValueError, r"extent F is 5 .* Y has shape \[4, 4\]"):
            op(self.g, self.x, self.w, out=np.empty((4, 4), dtype=np.float32))
        with self.assertRaisesRegex(ValueError, "read-only"):
            ro = np.empty((4, 5), dtype=np.float32)
            ro.flags.writeable = False
            op(self.g, self.x, self.w, out=ro)
        with self.assertRaisesRegex(TypeError, "not an array"):
            op(self.g, [[1.0]], self.w)
        with self.assertRaisesRegex(ValueError, "bind takes CUDA tensors only"):
            op.bind(self.g, self.x, self.w)
        with self.assertRaisesRegex(ValueError, "stream= is for CUDA"):
            op(self.g, self.x, self.w, stream=1)
        with self.assertRaisesRegex(gop.GopError, "schedule"):
            op(self.g, self.x, self.w, schedule="no_such_schedule(1)")
        # the context keeps working after every error
        np.testing.assert_allclose(op(self.g, self.x, self.w),
                                   ref_sum(SRC, DST, self.x, 4, self.w), rtol=1e-6)

    def test_dlpack(self):
        class Wrapped:  # a framework gop does not know, speaking DLPack
            def __init__(self, a):
                self.a = a

            def __dlpack__(self, **kw):
                return self.a.__dlpack__(**kw)

            def __dlpack_device__(self):
                return self.a.__dlpack_device__()

        y = gop.stdlib.copy_u_sum(self.g, Wrapped(self.x))
        np.testing.assert_allclose(y, ref_sum(SRC, DST, self.x, 4), rtol=1e-6)

    def test_cache_and_schedules(self):
        op = gop.stdlib.copy_u_mean
        self.assertEqual(len(op.kernel_key()), 16)
        self.assertNotEqual(op.kernel_key(), op.kernel_key(target="sm_80"))
        before = gop.cache_stats()
        op.prepare(self.g)  # no GPU: compiles into the cache folder
        after = gop.cache_stats()
        # one lookup: compiled, or found on disk or (another test prepared
        # it in this process) in memory
        got = ("compiled", "disk_hits", "memory_hits")
        self.assertEqual(sum(after[k] for k in got), sum(before[k] for k in got) + 1)
        packs = [f for f in os.listdir(gop.cache_dir()) if f.endswith(".gopk")]
        self.assertTrue(any(f.startswith("copy_u_mean-") for f in packs))
        self.assertIn(op.kernel_key() + ".gopk",
                      [f.split("-", 1)[1] for f in packs if f.startswith("copy_u_mean-")])
        # schedule="auto": the chooser's pick for the graph at the row's
        # width (the cost model here), its kernel the one prepared
        chosen, _ = op.choose_schedule(self.g, F=1)
        self.assertNotEqual(op.kernel_key(chosen), op.kernel_key())
        op.prepare(self.g, schedule="auto")
        packs = os.listdir(gop.cache_dir())
        self.assertIn(op.kernel_key(chosen), [f.split("-", 1)[1][:-5] for f in packs
                                              if f.startswith("copy_u_mean-")])
        self.assertGreaterEqual(gop.clear_cache(), 1)
        sched, source = gop.stdlib.u_mul_e_sum.choose_schedule(self.g, F=32)
        self.assertIn("(", sched)
        self.assertIn(source, ("database", "predictor", "built-in predictor", "cost model"))
        with self.assertRaisesRegex(gop.GopError, "tune:[\\s\\S]*(no CUDA driver|GPU)"):
            gop.stdlib.u_mul_e_sum.tune(self.g, budget_s=1, F=8)
        with self.assertRaisesRegex(ValueError, "extent F"):
            gop.stdlib.u_mul_e_sum.tune(self.g)
        status, why = gop.device_status()
        self.assertEqual(status, 3)
        self.assertIn("no CUDA driver", why)


class LayerMath(unittest.TestCase):
    """The operators gop.nn's layers are made of, with the graph-derived
    arrays they use, against dense NumPy formulas of PyG's layers."""

    def setUp(self):
        self.g = gop.Graph.from_arcs(SRC, DST)  # has a self-loop 2 -> 2
        self.rng = np.random.default_rng(5)

    def test_gcn(self):
        x = self.rng.random((4, 3), dtype=np.float32)
        w, s = self.g.gcn_norm()
        y = gop.layers.gcn_propagate(self.g, x, x, w, s)
        a = np.zeros((4, 4))
        for u, v in zip(SRC, DST):
            if u != v:
                a[v, u] += 1
        a += np.eye(4)  # add_remaining_self_loops: one per vertex
        dinv = a.sum(1) ** -0.5
        np.testing.assert_allclose(y, (dinv[:, None] * a * dinv[None, :]) @ x, rtol=1e-5)

    def test_gcn_graph(self):
        # GCNConv's one weighted sum: the graph with its self-loops, edges in
        # CSR order, gcn_norm's weights on them; equal to gcn_propagate's
        # sum plus the self-loop term
        g, w = self.g.gcn_graph()
        self.assertIs(g, self.g.gcn_graph()[0])  # made once
        self.assertIs(g, self.g.with_self_loops())  # GAT's graph: built once for both
        self.assertEqual(g.num_edges, 5 + 4)  # the file's loop replaced
        self.assertEqual(g.info["csr_edges"], 1)
        src, dst = g.edge_index
        self.assertTrue(np.all(np.diff(dst) >= 0))
        x = self.rng.random((4, 3), dtype=np.float32)
        w0, s0 = self.g.gcn_norm()
        want = gop.layers.gcn_propagate(self.g, x, x, w0, s0)
        np.testing.assert_allclose(gop.stdlib.u_mul_e_sum(g, x, w), want, rtol=1e-5)
        loops = src == dst
        np.testing.assert_array_equal(w[loops], s0[src[loops]])
        # its kernels are those for edge ids in CSR order, keyed apart
        op = gop.stdlib.u_mul_e_sum
        self.assertNotEqual(op.kernel_key("spmm_vec4(2)", graph=g), op.kernel_key("spmm_vec4(2)"))
        with self.assertRaisesRegex(TypeError, "must be a gop.Graph"):
            op.kernel_key(graph="cora")

    def test_gat(self):
        gs = self.g.with_self_loops()
        self.assertEqual(gs.num_edges, 5 + 4)  # the file's loop replaced
        self.assertIs(gs, self.g.with_self_loops())  # made once
        # arcs sorted by destination: the attention's scores in CSR order
        self.assertTrue(gs.info["csr_edges"])
        self.assertTrue(np.all(np.diff(gs.edge_index[1]) >= 0))
        H, C = 2, 3
        z = self.rng.standard_normal((4, H, C), dtype=np.float32)
        a_s = self.rng.standard_normal((4, H), dtype=np.float32)
        a_d = self.rng.standard_normal((4, H), dtype=np.float32)
        y = gop.layers.gat_attention(gs, z, a_s, a_d)
        src, dst = gs.edge_index
        want = np.zeros((4, H, C))
        for v in range(4):
            e = np.flatnonzero(dst == v)
            sc = a_s[src[e]] + a_d[v]
            sc = np.where(sc > 0, sc, 0.2 * sc)
            p = np.exp(sc - sc.max(0))
            p /= p.sum(0)
            want[v] = (p[:, :, None] * z[src[e]]).sum(0)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)

    def test_sage_aggregations(self):
        g = gop.Graph.from_arcs([0, 1, 1], [1, 2, 2], num_nodes=4)  # 0 and 3 have no in-edge
        x = self.rng.random((4, 2), dtype=np.float32)
        mean = gop.stdlib.copy_u_mean(g, x)
        np.testing.assert_allclose(mean[[0, 3]], 0)
        np.testing.assert_allclose(mean[1], x[0])
        np.testing.assert_allclose(mean[2], x[1], rtol=1e-6)
        mx = gop.stdlib.copy_u_max(g, x)
        np.testing.assert_allclose(mx[2], x[1])
        np.testing.assert_allclose(mx[[0, 3]], 0)  # as PyG's scatter max


@unittest.skipIf(torch is None, "torch is not installed")
class TorchCpu(unittest.TestCase):
    def test_ops_and_layers(self):
        g = gop.Graph.from_arcs(SRC, DST)
        x = torch.rand(4, 5)
        y = gop.stdlib.copy_u_sum(g, x)
        self.assertTrue(torch.is_tensor(y))
        torch.testing.assert_close(y, torch.from_numpy(ref_sum(SRC, DST, x.numpy(), 4)).float())
        with self.assertRaisesRegex(ValueError, "not contiguous"):
            gop.stdlib.copy_u_sum(g, torch.rand(5, 4).t())
        ei = torch.from_numpy(np.stack([SRC, DST]))
        with torch.no_grad():
            for conv in (gop.nn.GCNConv(5, 3), gop.nn.SAGEConv(5, 3), gop.nn.GATConv(5, 2, heads=2),
                         gop.nn.GINConv(torch.nn.Linear(5, 3))):
                self.assertEqual(conv(x, ei).shape[0], 4)


if __name__ == "__main__":
    unittest.main()
