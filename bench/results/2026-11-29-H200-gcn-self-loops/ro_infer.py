"""gop.nn's GCN (the pyg_accelerate twin) under torch.compile(mode=
"reduce-overhead"): 3 training steps, then inference under no_grad, with the
traceback printed where it fails (pyg_accelerate recorded only
"AssertionError: "), and the inference time (CUDA events, median of 20
after 3) where it runs; eager inference beside it."""
import os, statistics, sys, traceback
sys.path.insert(0, "tests/gpu")
import torch
import gop
import pyg_accelerate as pa
from torch.nn import functional as F

g = gop.Graph.open(os.path.join(sys.argv[1], "ogbn-arxiv.mtx.gz"))
gen = torch.Generator().manual_seed(0)
x = torch.randn(g.num_nodes, pa.FIN, generator=gen).cuda()
y = torch.randint(0, pa.CLASSES, (g.num_nodes,), generator=gen).cuda()


def infer(m):
    ts = []
    with torch.no_grad():
        for i in range(23):
            torch.compiler.cudagraph_mark_step_begin()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); m(x, g); b.record(); torch.cuda.synchronize()
            ts.append(a.elapsed_time(b))
    return statistics.median(ts[3:])


for name in sys.argv[2:]:
    eager = pa.build_gop(torch, name).cuda().eval()
    print(name, "eager inference", f"{infer(eager):.3f} ms", flush=True)
    for mode, train_first in (("reduce-overhead", True), ("reduce-overhead", False), ("default", True)):
        torch._dynamo.reset()
        m = torch.compile(pa.build_gop(torch, name).cuda(), mode=mode, fullgraph=True)
        try:
            if train_first:
                opt = torch.optim.Adam(m.parameters(), lr=0.01)
                for i in range(3):
                    torch.compiler.cudagraph_mark_step_begin()
                    opt.zero_grad(set_to_none=True)
                    F.cross_entropy(m(x, g), y).backward()
                    opt.step()
            m.eval()
            print(name, mode, "trained first" if train_first else "inference only",
                  f"{infer(m):.3f} ms", flush=True)
        except Exception:
            print(name, mode, "trained first" if train_first else "inference only", "FAILED")
            traceback.print_exc()
