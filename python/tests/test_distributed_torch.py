"""gop.distributed's ShardedGraph over torch.distributed without GPUs: P
processes on the CPU (gloo), each aggregating its part on the reference
interpreter, against the same operator on the whole graph. Covers the
paths the GPU runs take (tests/gpu/multigpu.sh): the halo exchange, the two
work classes with the local result carried into the remote class, the
plain add of the classes, the part's whole graph, column chunks, the mean
as a sum, and the gradients. Skipped where torch is not installed."""
import os
import tempfile
import traceback
import unittest
from unittest import mock

import numpy as np

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
except ImportError:  # the tests below say so
    torch = None

DATA = os.environ.get("GOP_DATASETS", os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                                   "shared", "datasets"))
SPECS = ["rmat:9:8", "grid:11x9"]

# (operator, its inputs after X: edge tensors of width 1 (W[e]) or F (W[e, f]))
OPS = [("copy_u_sum", ()), ("u_mul_e_sum", (1,)), ("u_mul_e_sum_full", ("F",)),
       ("u_add_e_sum", ("F",)), ("copy_e_sum", ()), ("copy_u_mean", ()),
       ("u_mul_e_mean", (1,)), ("copy_u_max", ()), ("copy_u_min", ())]


def _rank_main(rank, world, init, outdir, F):
    os.environ["GOP_CUDA_LIBRARY"] = "/nonexistent/libcuda.so"
    res = []
    try:
        import gop
        from gop import distributed as gd
        dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
        st = gop.stdlib
        for spec in SPECS:
            g = gop.Graph.open(spec)
            sg = gd.ShardedGraph(g, device="cpu")
            # the halo by rounds of pairwise transfers (one on 2 ranks, two on 3)
            other = gd.ShardedGraph(g, device="cpu", exchange="rounds")
            gen = torch.Generator().manual_seed(7)
            x = torch.rand(g.num_nodes, F, generator=gen) + 0.5
            w1 = torch.rand(g.num_edges, generator=gen) + 0.5
            wf = torch.rand(g.num_edges, F, generator=gen) + 0.5
            xe = torch.rand(g.num_edges, F, generator=gen)
            for name, extra in OPS:
                op = st[name]
                if name == "copy_e_sum":
                    whole_in, part_in = [xe], [sg.shard_edges(xe)]
                else:
                    ws = [w1 if e == 1 else wf for e in extra]
                    whole_in = [x] + ws
                    part_in = [sg.shard(x)] + [sg.shard_edges(w) for w in ws]
                ref = sg.shard(op(g, *whole_in))
                for overlap in (True, False):
                    for chunk in (None, 3, "agreed"):
                        if chunk == "agreed":
                            # each rank's rule picks another width (2 + rank):
                            # they must agree on one, as each chunk is an
                            # exchange, or they would wait for each other
                            sg2 = gd.ShardedGraph(g, device="cpu")
                            sg2.chunk_columns = lambda F, dtype=None, chunk=None: 2 + rank
                            y = sg2.aggregate(op, *part_in, overlap=overlap)
                        else:
                            y = sg.aggregate(op, *part_in, overlap=overlap, chunk=chunk)
                        err = ((y.double() - ref.double()).abs().max() /
                               ref.double().abs().max().clamp(min=1e-30)).item()
                        res.append(f"{spec} {name} overlap={overlap} chunk={chunk} {err:.3e}")
                for chunk in (None, 3):
                    y = other.aggregate(op, *part_in, chunk=chunk)
                    err = ((y.double() - ref.double()).abs().max() /
                           ref.double().abs().max().clamp(min=1e-30)).item()
                    res.append(f"{spec} {name} exchange={other.exchange} chunk={chunk} "
                               f"{err:.3e}")
            # gradients through the exchange's backward
            for name in ("copy_u_sum", "u_mul_e_sum", "copy_u_mean", "copy_u_max"):
                op = st[name]
                ws = [w1] if name == "u_mul_e_sum" else []
                dy = torch.rand(g.num_nodes, F, generator=gen)
                xw = x.clone().requires_grad_(True)
                op(g, xw, *ws).backward(dy)
                xp = sg.shard(x).clone().requires_grad_(True)
                sg.aggregate(op, xp, *[sg.shard_edges(w) for w in ws]).backward(sg.shard(dy))
                ref = sg.shard(xw.grad)
                err = ((xp.grad.double() - ref.double()).abs().max() /
                       ref.double().abs().max().clamp(min=1e-30)).item()
                res.append(f"{spec} d{name}/dX grad {err:.3e}")
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001 (the parent reports it)
        res.append("FAILED " + traceback.format_exc())
    with open(os.path.join(outdir, f"rank{rank}.txt"), "w") as f:
        f.write("\n".join(res) + "\n")


@unittest.skipIf(torch is None, "torch is not installed")
class ShardedGraphTest(unittest.TestCase):
    def run_world(self, world, F=5):
        with tempfile.TemporaryDirectory() as d:
            init = "file://" + os.path.join(d, "rendezvous")
            mp.start_processes(_rank_main, args=(world, init, d, F), nprocs=world,
                               join=True, start_method="spawn")
            for r in range(world):
                with open(os.path.join(d, f"rank{r}.txt")) as f:
                    lines = f.read().splitlines()
                bad = [i for i, ln in enumerate(lines) if ln.startswith("FAILED")]
                self.assertFalse(bad, f"rank {r}: " + "\n".join(lines[bad[0]:] if bad else []))
                self.assertEqual(len(lines), len(SPECS) * (len(OPS) * 8 + 4))
                for ln in lines:
                    self.assertLess(float(ln.split()[-1]), 1e-5, f"rank {r}: {ln}")

    def test_two_ranks_equal_the_whole_graph(self):
        self.run_world(2)

    def test_three_ranks_equal_the_whole_graph(self):
        self.run_world(3)

    def test_bad_exchange(self):
        import gop
        from gop import distributed as gd
        with self.assertRaisesRegex(ValueError, "exchange must be one of all_to_all, rounds, "
                                                "got 'ring'"):
            gd.ShardedGraph(gop.Graph.open("rmat:6:4"), exchange="ring")

    def test_bad_heap(self):
        import gop
        from gop import distributed as gd
        g = gop.Graph.open("rmat:6:4")
        with self.assertRaisesRegex(ValueError, "ShardedGraph: heap must be one of cuda, "
                                                "nvshmem, got 'shmem'"):
            gd.ShardedGraph(g, heap="shmem")
        with mock.patch.dict(os.environ, {"GOP_SYMMETRIC_HEAP": "nvshem"}):
            with self.assertRaisesRegex(ValueError, "GOP_SYMMETRIC_HEAP must be one of cuda, "
                                                    "nvshmem, got 'nvshem'"):
                gd.ShardedGraph(g)
        self.assertEqual(gd._heap_name(None), os.environ.get("GOP_SYMMETRIC_HEAP", "cuda"))
        self.assertEqual(gd._heap_name("nvshmem"), "nvshmem")

    def test_one_heap_a_process(self):
        from gop import distributed as gd
        from gop import GopError
        with mock.patch.object(gd, "_HEAP_IN_USE", "cuda"):
            gd._use_heap("cuda")  # the same heap again: nothing to do
            with self.assertRaisesRegex(GopError, "already takes its buffers from the cuda "
                                                  "heap, not nvshmem"):
                gd._use_heap("nvshmem")
        with mock.patch.object(gd, "_HEAP_IN_USE", None), \
                mock.patch.object(torch._C._distributed_c10d, "_is_nvshmem_available",
                                  lambda: False, create=True):
            with self.assertRaisesRegex(GopError, "heap 'nvshmem' needs a PyTorch built with "
                                                  "NVSHMEM"):
                gd._use_heap("nvshmem")
            self.assertIsNone(gd._HEAP_IN_USE)

    def test_nvshmem_buffers_kept_in_order(self):
        """NVSHMEM's frees are collective: the buffers of its heap outlive
        their ShardedGraph, kept in allocation order; the CUDA heap's do
        not."""
        import torch.distributed as dist
        import torch.distributed._symmetric_memory as symm
        from gop import distributed as gd

        class Handle:
            def get_buffer(self, q, shape, dtype):
                return torch.zeros(shape, dtype=dtype)
        sg = object.__new__(gd.ShardedGraph)
        sg.group, sg.device, sg.world, sg.rank = None, torch.device("cpu"), 2, 0
        group = type("G", (), {"group_name": "0"})()
        made = []

        def empty(shape, dtype, device):
            made.append(torch.zeros(shape, dtype=dtype))
            return made[-1]
        with mock.patch.object(gd, "_HEAP_IN_USE", None), \
                mock.patch.object(gd, "_NVSHMEM_KEEP", []), \
                mock.patch("atexit.register") as at_exit, \
                mock.patch.object(symm, "set_backend", lambda name: None), \
                mock.patch.object(symm, "enable_symm_mem_for_group", lambda name: None,
                                  create=True), \
                mock.patch.object(symm, "empty", empty), \
                mock.patch.object(symm, "rendezvous", lambda buf, name: Handle()), \
                mock.patch.object(dist, "group", type("W", (), {"WORLD": group})), \
                mock.patch.object(torch._C._distributed_c10d, "_is_nvshmem_available",
                                  lambda: True, create=True):
            sg.heap = "nvshmem"
            for rows in (3, 5):
                buf, _, views = sg._symmetric(rows, 4, torch.float32)
                self.assertEqual(list(views), [1])
            self.assertEqual([b.shape[0] for b, _ in gd._NVSHMEM_KEEP], [3, 5])
            self.assertIs(gd._NVSHMEM_KEEP[0][0], made[0])
            gd._HEAP_IN_USE, sg.heap = None, "cuda"
            sg._symmetric(7, 4, torch.float32)
            self.assertEqual(len(gd._NVSHMEM_KEEP), 2)  # the CUDA heap's are not kept
            # at exit, each kept buffer and handle gets a reference never dropped
            at_exit.assert_called_once_with(gd._leave_nvshmem)
            import sys
            before = [sys.getrefcount(o) for pair in gd._NVSHMEM_KEEP for o in pair]
            gd._leave_nvshmem()
            after = [sys.getrefcount(o) for pair in gd._NVSHMEM_KEEP for o in pair]
            self.assertEqual(after, [n + 1 for n in before])

    def test_chunk_columns(self):
        import gop
        from gop import distributed as gd
        sg = object.__new__(gd.ShardedGraph)  # the rule alone, without a group
        sg.num_own, sg.num_halo = 1 << 20, 1 << 19
        sg.device = torch.device("cpu")
        sg.exchange, sg.world = "all_to_all", 2
        sg.plan = type("Plan", (), {"send_idx": torch.zeros(10)})()
        # rows (own + own, the taller) x features stays below 2^31
        self.assertEqual(sg.chunk_columns(64), 64)
        self.assertEqual(sg.chunk_columns(1000), 1000)
        self.assertEqual(sg.chunk_columns(1024), 512)
        self.assertEqual(sg.chunk_columns(3000), 512)
        self.assertEqual(sg.chunk_columns(3000, chunk=100), 100)
        self.assertEqual(sg.chunk_columns(50, chunk=100), 50)
        for bad in (0, -3, 2.5, True):
            with self.assertRaises(ValueError):
                sg.chunk_columns(64, chunk=bad)
        del gop


if __name__ == "__main__":
    unittest.main()
