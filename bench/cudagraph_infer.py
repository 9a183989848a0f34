"""Where gop.nn's inference time goes under torch.compile on ogbn-arxiv:
the twin models of tests/gpu/pyg_accelerate.py (GCN, GraphSAGE, GAT) timed
eagerly, as one CUDA graph captured by hand (torch.cuda.graph: the GPU's
time with no host work between kernels), and under torch.compile(mode=
"reduce-overhead") with inductor's counters (whether it took CUDA graphs
or skipped them, and why); the host time of one eager forward beside.

    PYTHONPATH=python:tests/gpu python3 bench/cudagraph_infer.py DATASETS [gcn sage gat]

(GOP_LIBRARY and GOP_CACHE_DIR as tests/gpu/pyg_accelerate.sh sets them.)"""
import os
import statistics
import sys
import time

import torch

import gop
import pyg_accelerate as pa


def median_ms(fn, reps=23, warm=3):
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts[warm:])


def main():
    g = gop.Graph.open(os.path.join(sys.argv[1], "ogbn-arxiv.mtx.gz"))
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(g.num_nodes, pa.FIN, generator=gen).cuda()
    for name in sys.argv[2:] or ["gcn", "sage", "gat"]:
        m = pa.build_gop(torch, name).cuda().eval()
        with torch.no_grad():
            eager = median_ms(lambda: m(x, g))
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(20):
                m(x, g)
            host = (time.perf_counter() - t0) / 20 * 1e3
            torch.cuda.synchronize()
            # by hand: warm up on a side stream, capture, replay
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    m(x, g)
            torch.cuda.current_stream().wait_stream(s)
            cg = torch.cuda.CUDAGraph()
            try:
                with torch.cuda.graph(cg):
                    out = m(x, g)
                replay = median_ms(cg.replay)
                ref = m(x, g)
                cg.replay()
                torch.cuda.synchronize()
                same = torch.allclose(out, ref, rtol=1e-4, atol=1e-5)
                captured = f"{replay:.3f} ms (output as eager: {same})"
            except Exception as e:  # noqa: BLE001 - report and go on
                captured = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
        torch._dynamo.reset()
        from torch._dynamo.utils import counters
        counters.clear()
        c = torch.compile(pa.build_gop(torch, name).cuda().eval(), mode="reduce-overhead",
                          fullgraph=True)
        with torch.no_grad():
            def call():
                torch.compiler.cudagraph_mark_step_begin()
                c(x, g)
            ro = median_ms(call)
        skips = dict(counters["inductor"]) if "inductor" in counters else {}
        skips = {k: v for k, v in skips.items() if "cudagraph" in k}
        print(f"{name}: eager {eager:.3f} ms (host {host:.3f} ms a forward), captured by hand "
              f"{captured}, reduce-overhead {ro:.3f} ms; inductor cudagraph counters {skips}",
              flush=True)


if __name__ == "__main__":
    main()
