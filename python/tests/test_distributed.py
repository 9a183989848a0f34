"""gop.distributed without GPUs: the partition every rank computes, the
exchange plan (an all-to-all simulated in NumPy) and MGG's two work classes,
on the reference interpreter. The runs on several GPUs are in
tests/gpu/multigpu.sh."""
import os
import tempfile
import unittest

import numpy as np

os.environ.setdefault("GOP_CUDA_LIBRARY", "/nonexistent/libcuda.so")
os.environ.setdefault("GOP_CACHE_DIR", tempfile.mkdtemp(prefix="gop-cache-"))
import gop  # noqa: E402
from gop import distributed as gd  # noqa: E402

DATA = os.environ.get("GOP_DATASETS", os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                                   "shared", "datasets"))


def graphs():
    out = [gop.Graph.open("rmat:9:8"), gop.Graph.open("grid:11x9")]
    cora = os.path.join(DATA, "cora.mtx.gz")
    if os.path.exists(cora):
        out.append(gop.Graph.open(cora))
    return out


class PartitionTest(unittest.TestCase):
    def test_parts_cover_and_halos_are_the_remote_sources(self):
        for g in graphs():
            ei = g.edge_index
            for P in (1, 2, 3):
                p = gd.Partition(g, P)
                seen_e = np.zeros(g.num_edges, bool)
                seen_v = np.zeros(g.num_nodes, int)
                for k in range(P):
                    pk = p.part(k)
                    own = pk["rows"][:pk["num_own"]]
                    halo = pk["rows"][pk["num_own"]:]
                    seen_v[own] += 1
                    self.assertFalse(seen_e[pk["eids"]].any())
                    seen_e[pk["eids"]] = True
                    self.assertTrue((p.owner[ei[1][pk["eids"]]] == k).all())
                    srcs = np.unique(ei[0][pk["eids"]])
                    want = srcs[p.owner[srcs] != k]
                    self.assertEqual(sorted(halo.tolist()), want.tolist())
                    self.assertEqual(int(pk["num_remote_edges"]),
                                     int((p.owner[ei[0][pk["eids"]]] != k).sum()))
                self.assertTrue(seen_e.all())
                self.assertTrue((seen_v == 1).all())
                cut = int((p.owner[ei[0]] != p.owner[ei[1]]).sum())
                self.assertEqual(p.cut, cut)
                self.assertEqual(p.report()["cut"], cut)

    def test_exchange_plan_delivers_each_halo(self):
        g = graphs()[0]
        x = np.random.default_rng(0).random((g.num_nodes, 3)).astype(np.float32)
        for P in (2, 3, 4):
            p = gd.Partition(g, P)
            owns = [x[p.part(q)["rows"][:p.part(q)["num_own"]]] for q in range(P)]
            sends = [p.send_rows(q) for q in range(P)]
            for k in range(P):
                pk = p.part(k)
                # what an all-to-all gives rank k: from each q in order, the
                # rows q sends it
                got = np.concatenate([owns[q][sends[q][k]] for q in range(P)] +
                                     [np.zeros((0, 3), np.float32)])
                self.assertTrue(np.array_equal(got, x[pk["rows"][pk["num_own"]:]]))
                hf = pk["halo_from"]
                for q in range(P):
                    self.assertEqual(len(sends[q][k]), hf[q + 1] - hf[q])

    def test_work_classes_add_up_to_the_whole_aggregation(self):
        st = gop.stdlib
        for g in graphs():
            rng = np.random.default_rng(1)
            x = rng.random((g.num_nodes, 4)).astype(np.float32)
            w = rng.random(g.num_edges).astype(np.float32)
            whole = st.copy_u_sum(g, x)
            wwhole = st.u_mul_e_sum(g, x, w)
            p = gd.Partition(g, 3)
            for k in range(3):
                pk = p.part(k)
                nown = pk["num_own"]
                own, halo = pk["rows"][:nown], pk["rows"][nown:]
                # the part's whole graph after the exchange
                y = st.copy_u_sum(p.part_graph(k), x[pk["rows"]])[:nown]
                np.testing.assert_allclose(y, whole[own], rtol=1e-6)
                # the two classes, as the overlapped run adds them
                gl, lpos, gr, rpos = p.classes(k)
                hx = np.zeros((gr.num_nodes, 4), np.float32)
                hx[:len(halo)] = x[halo]
                we = w[pk["eids"]]
                y2 = st.copy_u_sum(gl, x[own]) + st.copy_u_sum(gr, hx)[:nown]
                np.testing.assert_allclose(y2, whole[own], rtol=1e-5, atol=1e-6)
                y3 = st.u_mul_e_sum(gl, x[own], we[lpos]) + \
                    st.u_mul_e_sum(gr, hx, we[rpos])[:nown]
                np.testing.assert_allclose(y3, wwhole[own], rtol=1e-5, atol=1e-6)
                self.assertEqual(len(lpos) + len(rpos), pk["num_edges"])
                self.assertEqual(len(rpos), pk["num_remote_edges"])

    def test_bad_arguments_are_refused(self):
        g = gop.Graph.open("grid:3x3")
        with self.assertRaisesRegex(gop.GopError, "only 9 vertices"):
            gd.Partition(g, 10)
        with self.assertRaisesRegex(gop.GopError, "choose edges or metis"):
            gd.Partition(g, 2, "kway")
        with self.assertRaises(TypeError):
            gd.Partition("grid:3x3", 2)
        with self.assertRaises(TypeError):
            gd.Partition(g, 2.0)


if __name__ == "__main__":
    unittest.main()
