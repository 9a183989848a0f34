"""gop.graph.build_arrays, the device build of a CUDA edge_index, run here
on CPU tensors (the same torch calls): every array equals the host build's
(graph/graph.c, read back from the .gopg file libgop writes), bit for bit,
and the statistics gop_graph_info reports. Where a GPU is needed
(libgop adopting the arrays) the refusal without one is checked; the
adoption itself is tests/unit/test_devbuild.c's (stand-in driver) and
tests/gpu/graph_build.sh's (the GPU). Skipped without torch."""
import ctypes
import os
import re
import struct
import tempfile
import unittest

import numpy as np

import gop
from gop import _lib
from gop._context import _ctx
from gop.graph import build_arrays, build_groups, reversed_arrays

try:
    import torch
except ImportError:
    torch = None

# graph/gopg.c's layout: the arrays' (offset, bytes, checksum) from byte 48
_GOPG_ARRAYS = ("src", "dst", "in_ptr", "in_eid", "in_src", "out_ptr", "out_eid", "out_dst")
_WIDTH = {"src": 4, "dst": 4, "in_ptr": 8, "in_eid": 8, "in_src": 4, "out_ptr": 8,
          "out_eid": 8, "out_dst": 4}


def host_arrays(g):
    """The host build's arrays of gop.Graph `g`, from its .gopg file."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "g.gopg")
        lib = _lib.lib
        lib.gop_graph_write_gopg.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p]
        assert lib.gop_graph_write_gopg(_ctx, g._h, path.encode()) == 0
        with open(path, "rb") as f:
            data = f.read()
    out = {}
    for i, name in enumerate(_GOPG_ARRAYS):
        off, n, _ = struct.unpack_from("<QQQ", data, 48 + 24 * i)
        dt = np.int32 if _WIDTH[name] == 4 else np.int64
        out[name] = np.frombuffer(data, dtype=dt, count=n // _WIDTH[name], offset=off).copy()
    return out


@unittest.skipIf(torch is None, "needs torch")
class DeviceBuild(unittest.TestCase):
    def graphs(self):
        rng = np.random.default_rng(7)
        # self-loops, repeated arcs, isolated vertices, arcs in no order
        n = 300
        src = rng.integers(0, n - 20, 2000)
        dst = rng.integers(0, n - 20, 2000)
        src[::97] = dst[::97]
        yield "random", np.stack([src, dst]), n
        g = gop.Graph.open("rmat:11:8")
        yield "rmat:11:8", g.edge_index, g.num_nodes
        ei = gop.Graph.open("grid:13x7").edge_index
        order = np.argsort(ei[1], kind="stable")  # sorted by destination
        yield "grid, by destination", ei[:, order], 91
        yield "no edges", np.zeros((2, 0), dtype=np.int64), 5
        yield "one vertex, one loop", np.zeros((2, 1), dtype=np.int64), 1

    def check(self, name, ei, n, bits):
        host = gop.Graph.from_edge_index(ei, n)
        for dtype in (torch.int64, torch.int32):
            arrays, stats = build_arrays(torch.from_numpy(ei).to(dtype), n)
            ref = host_arrays(host)
            wide = torch.int64 if bits == 64 else torch.int32
            for k, v in ref.items():
                a = arrays[k]
                self.assertEqual(a.dtype, torch.int32 if _WIDTH[k] == 4 else wide, (name, k))
                self.assertTrue(np.array_equal(a.numpy().astype(v.dtype), v),
                                f"{name}: {k} differs from the host build")
            # the degrees the runtime would compute from the offsets
            for k, p in (("in_deg", "in_ptr"), ("out_deg", "out_ptr")):
                self.assertTrue(np.array_equal(arrays[k].numpy(), np.diff(ref[p])), (name, k))
            info = host.info
            self.assertEqual(stats["index_bits"], bits)
            for k in ("num_vertices", "num_edges", "in_degree_max", "out_degree_max",
                      "isolated", "self_loops", "aes"):
                self.assertEqual(stats[k], info[k], (name, k))
            self.assertAlmostEqual(stats["in_degree_std"], info["in_degree_std"], places=9)
            self.assertEqual(int(stats["csr_edges"]), info["csr_edges"], name)
            # the reversed graph (transpose()): the graph's arrays exchanged,
            # equal to a build of the arcs turned round, statistics too
            rarrays, rstats = reversed_arrays(arrays, stats)
            want, wstats = build_arrays(torch.from_numpy(ei[::-1].copy()).to(dtype), n)
            for k, v in want.items():
                self.assertTrue(torch.equal(rarrays[k], v), f"{name}: reversed {k}")
            for k, v in wstats.items():
                if k == "reversed":
                    continue
                if isinstance(v, float):
                    self.assertAlmostEqual(rstats[k], v, places=9, msg=(name, k))
                else:
                    self.assertEqual(rstats[k], v, (name, k))
            self.assertNotIn("reversed", rstats)

    def test_same_arrays_as_the_host_build(self):
        for name, ei, n in self.graphs():
            self.check(name, ei, n, 32)

    def test_same_arrays_at_64_bit_indices(self):
        os.environ["GOP_INDEX64"] = "1"
        try:
            for name, ei, n in self.graphs():
                self.check(name, ei, n, 64)
        finally:
            del os.environ["GOP_INDEX64"]

    def test_refusals(self):
        ei = torch.tensor([[0, 1, 2], [1, 2, 5]])
        with self.assertRaisesRegex(gop.GopError, "vertex 5, outside 0..3"):
            build_arrays(ei, 4)
        with self.assertRaisesRegex(gop.GopError, "vertex -1"):
            build_arrays(torch.tensor([[0, -1], [1, 1]]), 4)
        with self.assertRaisesRegex(ValueError, r"shape \[2, E\]"):
            build_arrays(torch.zeros(3, 4, dtype=torch.long), 4)
        with self.assertRaisesRegex(ValueError, "integers"):
            build_arrays(torch.zeros(2, 4), 4)
        # num_nodes from the largest id, as the host path does
        _, stats = build_arrays(ei)
        self.assertEqual(stats["num_vertices"], 6)

    def test_adopting_needs_the_gpu(self):
        # libgop refuses device arrays without a driver, saying so (the
        # suite runs with GOP_CUDA_LIBRARY pointing nowhere)
        if gop.gpu_available():
            self.skipTest("a GPU is here: tests/gpu/graph_build.sh covers it")
        ei = torch.tensor([[0, 1, 2], [1, 2, 0]])
        with self.assertRaisesRegex(gop.GopError, "gop_graph_from_device needs the GPU"):
            gop.Graph.from_edge_index(ei, 3, device_build=True)
        # CPU tensors take the host path by default
        g = gop.Graph.from_edge_index(ei, 3)
        self.assertEqual(g.num_edges, 3)


@unittest.skipIf(torch is None, "needs torch")
class GroupTables(unittest.TestCase):
    """gop.graph.build_groups, the neighbour-group tables of a graph built
    on the device, run here on CPU tensors (the same torch calls): every
    array equals the host's table (graph/groups.c, read through
    Graph.group_table) in destination order, bit for bit, with the same
    row and unowned counts and class split, on a skewed graph (R-MAT) and
    balanced ones (grids), at 32- and 64-bit positions; with the sizes
    build_arrays fetched (no synchronisation) and without them."""

    # (distance, classes, threshold): plain, two classes at the default
    # threshold and at a given one, quantile classes
    SHAPES = ((0, 0, 0), (1, 2, 0), (4, 2, 0), (2, 2, 5), (3, 3, 0), (2, 8, 0), (1, 5, 0))

    def setUp(self):
        os.environ["GOP_GROUP_ORDER"] = "dst"  # the community order is the host's only
        self.addCleanup(os.environ.pop, "GOP_GROUP_ORDER", None)

    def graphs(self):
        yield "rmat:11:8", gop.Graph.open("rmat:11:8")
        yield "grid:13x7", gop.Graph.open("grid:13x7")
        rng = np.random.default_rng(3)  # isolated vertices, self-loops, repeats
        src, dst = rng.integers(0, 280, 2000), rng.integers(0, 280, 2000)
        yield "random", gop.Graph.from_arcs(src, dst, 300)
        yield "no edges", gop.Graph.from_arcs([], [], 5)

    def test_counts_in_blocks(self):
        # every size at once, block by block, equals the sums size by size
        from gop.graph import GROUP_SIZES, group_counts
        gen = torch.Generator().manual_seed(1)
        for n in (0, 1, 7, 5000):
            deg = torch.randint(0, 200, (n,), generator=gen)
            deg[::7] = 0
            want = []
            for G in GROUP_SIZES:
                want += [int(((deg + G - 1) // G).sum()), int(((deg == 0) | (deg > G)).sum())]
            for chunk in (3, 1024, 1 << 22):
                self.assertEqual([int(x) for x in group_counts(deg, chunk=chunk)], want)

    def check(self, bits):
        wide = torch.int64 if bits == 64 else torch.int32
        for name, g in self.graphs():
            arrays, stats = build_arrays(torch.from_numpy(g.edge_index), g.num_nodes)
            self.assertEqual(arrays["in_ptr"].dtype, wide)
            for G in (1, 3, 16):
                for ilv, K, thr in self.SHAPES:
                    what = f"{name}: G {G}, distance {ilv}, {K} classes, threshold {thr}"
                    ref = g.group_table(G, ilv, K, thr)
                    self.assertEqual(ref["order"], 0, what)
                    # fetched by build_arrays for the tuner's sizes, else one sync
                    counts = stats["group_counts"].get(G)
                    self.assertEqual(counts is None, G == 3, what)
                    # without the sizes: build_groups fetches them itself
                    plain_or_quantile = (ilv, K) in ((0, 0), (3, 3))
                    for given in (counts, None) if plain_or_quantile else (counts,):
                        t, n, nun = build_groups(arrays["in_ptr"], G, ilv, K, ref["threshold"],
                                                 counts=given,
                                                 in_degree_max=stats["in_degree_max"])
                        self.assertEqual((n, nun), (ref["rows"], ref["unowned_count"]), what)
                        for k in ("dst", "first", "end", "vptr", "vrow", "unowned"):
                            self.assertEqual(t[k].dtype, torch.int32 if k in ("dst", "unowned")
                                             else wide, (what, k))
                            self.assertTrue(np.array_equal(t[k].numpy().astype(np.int64),
                                                           ref[k].astype(np.int64)),
                                            f"{what}: {k} differs from the host table")
                        for k in ("class_rows", "class_min"):
                            self.assertEqual(t[k].tolist(), ref[k].tolist(), (what, k))

    def test_same_tables_as_the_host(self):
        self.check(32)

    def test_same_tables_at_64_bit_indices(self):
        os.environ["GOP_INDEX64"] = "1"
        try:
            self.check(64)
        finally:
            del os.environ["GOP_INDEX64"]

    def test_the_builder_libgop_calls(self):
        # what libgop's GopGroupBuilder gets and gives, called as libgop
        # would (adopting the tables needs the GPU: tests/unit/test_devbuild.c
        # on the stand-in driver, tests/gpu/graph_build.sh on the GPU)
        g = gop.Graph.open("rmat:9:8")
        arrays, stats = build_arrays(torch.from_numpy(g.edge_index), g.num_nodes)
        tables = {}
        build = gop.graph._group_builder(arrays["in_ptr"], stats, tables)
        t = _lib.GroupTable(group_size=16, distance=2, classes=2,
                            threshold=g.group_table(16, 2, 2)["threshold"], index_bits=32)
        why = ctypes.create_string_buffer(200)
        self.assertEqual(build(None, ctypes.pointer(t), ctypes.addressof(why), 200), 0)
        made, n, nun = tables[(16, 2, 2, t.threshold)]
        self.assertEqual((t.rows, t.unowned_count, t.order), (n, nun, 0))
        self.assertEqual(t.dst, made["dst"].data_ptr())
        self.assertEqual(t.vrow, made["vrow"].data_ptr())
        # asked again: the same table, not a second one
        self.assertEqual(build(None, ctypes.pointer(t), ctypes.addressof(why), 200), 0)
        self.assertEqual(len(tables), 1)
        # a width the graph was not built with: refused with the reason
        t.index_bits = 64
        self.assertEqual(build(None, ctypes.pointer(t), ctypes.addressof(why), 200), -1)
        self.assertIn(b"positions of 64 bits asked of a graph built with 32-bit", why.value)


@unittest.skipIf(torch is None, "needs torch")
class WhereBuilt(unittest.TestCase):
    """from_edge_index's choice: a CUDA edge_index of DEVICE_BUILD_MIN_EDGES
    edges or more on the device, a smaller one on the host; device_build
    overrides it. A CPU tensor stands in for a CUDA one (gop.graph._is_cuda
    patched): the device path is then recognised by libgop's refusal to
    adopt host memory, the host path by the graph it returns."""

    def setUp(self):
        self.n = gop.graph.DEVICE_BUILD_MIN_EDGES

    def edges(self, m, nv=1000):
        rng = np.random.default_rng(m)
        return torch.from_numpy(rng.integers(0, nv, (2, m)))

    def as_cuda(self):
        real = gop.graph._is_cuda
        gop.graph._is_cuda = lambda t: isinstance(t, torch.Tensor)
        self.addCleanup(setattr, gop.graph, "_is_cuda", real)

    def test_the_rule(self):
        on = gop.graph.builds_on_device
        small, large = self.edges(self.n - 1), self.edges(self.n)
        # CPU tensors and NumPy: the host, whatever the size
        self.assertFalse(on(small))
        self.assertFalse(on(large))
        self.assertFalse(on(large.numpy()))
        self.as_cuda()
        self.assertFalse(on(small))
        self.assertTrue(on(large))
        self.assertFalse(on(torch.zeros(2, 0, dtype=torch.long)))
        # the override, either way
        self.assertTrue(on(small, True))
        self.assertFalse(on(large, False))
        self.assertTrue(on(large.numpy(), True))
        self.assertTrue(10_000 <= self.n <= 200_000)  # the measured crossing (graph.py)

    def test_bad_values_are_refused(self):
        ei = self.edges(10)
        for bad in ("auto", 1, 0, "yes", np.bool_(True), []):
            with self.assertRaisesRegex(TypeError, r"device_build must be None .*True or False, "
                                                   r"got " + re.escape(repr(bad))):
                gop.Graph.from_edge_index(ei, 1000, device_build=bad)
        with self.assertRaisesRegex(TypeError, "device_build=True needs a torch tensor on the "
                                               "GPU, got ndarray"):
            gop.Graph.from_edge_index(ei.numpy(), 1000, device_build=True)

    @unittest.skipIf(gop.gpu_available(), "a GPU is here: tests/gpu/graph_build.sh covers it")
    def test_from_edge_index_takes_the_rules_path(self):
        self.as_cuda()
        small, large = self.edges(self.n - 1), self.edges(self.n)
        # below the crossing: built on the host, the same graph as a CPU
        # tensor's, with the host-side calls
        g = gop.Graph.from_edge_index(small, 1000)
        self.assertFalse(g.device_built)
        self.assertEqual(g.num_edges, self.n - 1)
        self.assertTrue(np.array_equal(g.edge_index, small.numpy()))
        ref = host_arrays(gop.Graph.from_arcs(small[0].numpy(), small[1].numpy(), 1000))
        for k, v in host_arrays(g).items():
            self.assertTrue(np.array_equal(v, ref[k]), k)
        # from the crossing: the device build (libgop refuses host memory)
        with self.assertRaisesRegex(gop.GopError, "gop_graph_from_device needs the GPU"):
            gop.Graph.from_edge_index(large, 1000)
        # the override, either way
        with self.assertRaisesRegex(gop.GopError, "gop_graph_from_device needs the GPU"):
            gop.Graph.from_edge_index(small, 1000, device_build=True)
        g = gop.Graph.from_edge_index(large, 1000, device_build=False)
        self.assertFalse(g.device_built)
        self.assertEqual(g.num_edges, self.n)
        # the threshold is read at each call
        gop.graph.DEVICE_BUILD_MIN_EDGES = 10
        self.addCleanup(setattr, gop.graph, "DEVICE_BUILD_MIN_EDGES", self.n)
        with self.assertRaisesRegex(gop.GopError, "gop_graph_from_device needs the GPU"):
            gop.Graph.from_edge_index(self.edges(10), 1000)
        self.assertFalse(gop.Graph.from_edge_index(self.edges(9), 1000).device_built)

    def test_a_graph_records_where_it_was_built(self):
        self.assertFalse(gop.Graph.open("grid:3x3").device_built)
        self.assertFalse(gop.Graph.from_edge_index(self.edges(5), 1000).device_built)
        self.assertFalse(gop.Graph.from_arcs([0], [1], 2).device_built)
        # from_device_arrays sets it: its adoption needs the GPU
        # (tests/gpu/graph_build.sh)


@unittest.skipIf(torch is None, "needs torch")
class Lifetime(unittest.TestCase):
    def test_a_graph_made_from_arrays_is_freed_with_its_runs(self):
        import gc
        import weakref
        op = gop.stdlib.copy_u_sum
        x = np.ones((4, 2), dtype=np.float32)
        g = gop.Graph.from_edge_index(np.array([[0, 1, 2], [1, 2, 3]]), 4)
        y = op(g, x)
        self.assertEqual(y[:, 0].tolist(), [0, 1, 1, 1])
        self.assertEqual(len(g._runs), 1)
        ref = weakref.ref(g)
        kept = gop.graph._kept[0]
        del g
        gc.collect()
        self.assertIsNone(ref())  # no operator holds it
        # gop_graph_free took it (it refuses a graph with runs left)
        self.assertEqual(gop.graph._kept[0], kept)
        self.assertEqual(_lib.lib.gop_diagnostics(_ctx).decode(), "")
        # schedule="auto" remembers its pick per graph, without keeping it
        g = gop.Graph.from_edge_index(np.array([[0, 1, 2], [1, 2, 3]]), 4)
        self.assertEqual(op(g, x, schedule="auto")[:, 0].tolist(), [0, 1, 1, 1])
        ref = weakref.ref(g)
        del g
        gc.collect()
        self.assertIsNone(ref())
        self.assertEqual(gop.graph._kept[0], kept)
        # a new graph at the same address gets a run of its own
        g2 = gop.Graph.from_edge_index(np.array([[1, 2], [0, 0]]), 4)
        self.assertEqual(op(g2, x)[:, 0].tolist(), [2, 0, 0, 0])


if __name__ == "__main__":
    unittest.main()
