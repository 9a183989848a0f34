"""schedule=None on CUDA tensors with a libgop that compiles (LLVM inside,
as the wheel's): runs "auto", compiling on the GPU machine, its output
equal to the default mapping's; prints each operator's first-call time,
what it kept and its per-call time against schedule="default" (the
first gop.auto.DEFAULT_AFTER calls on a graph run the default mapping;
the one after chooses).

Here: strip -o .carry/llvmlib/libgop.so build-wheel/libgop.so.0.1.0
  (tests/install/wheel.sh builds it; ~31 MB, carry .carry/llvmlib)
There: GOP_LIBRARY=$PWD/.carry/llvmlib/libgop.so PYTHONPATH=$PWD/python \
  GOP_CACHE_DIR=/tmp/kc python3 tests/gpu/auto_default.py
"""
import time
import torch
import gop
from gop import operator
print("can compile:", operator._can_compile())
g = gop.Graph.open("rmat:16:8")
x = torch.randn(g.num_nodes, 64, device="cuda")
w = torch.rand(g.num_edges, device="cuda")
for op, args in ((gop.stdlib.copy_u_sum, (x,)), (gop.stdlib.u_mul_e_sum, (x, w)),
                 (gop.stdlib.edge_softmax, (w,))):
    for _ in range(gop.auto.DEFAULT_AFTER):  # the default mapping until reused
        op(g, *args)
    t = time.time()
    y = op(g, *args)  # this one chooses
    torch.cuda.synchronize()
    first = time.time() - t
    y0 = op(g, *args, schedule="default")
    err = ((y - y0).norm() / y0.norm()).item()

    def tm(s, n=50):
        for _ in range(3):
            op(g, *args, schedule=s)
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            op(g, *args, schedule=s)
        torch.cuda.synchronize()
        return (time.perf_counter() - t) / n * 1e3
    print(f"{op.name}: first call {first:.3f} s; runs {sorted(str(k[1]) for k in op._runs)}; "
          f"kept {[v[0] for v in op._measured.values()]}; rel diff to default {err:.2e}; "
          f"ms default {tm('default'):.4f} none {tm(None):.4f}")
# a GCN layer trained a few steps with no schedule=, its backward derived
lin = gop.nn.GCNConv(64, 16).cuda()
opt = torch.optim.Adam(lin.parameters(), lr=0.01)
for i in range(5):
    opt.zero_grad()
    loss = lin(x, g).square().mean()
    loss.backward()
    opt.step()
print("GCN loss", loss.item(), "stats", gop.cache_stats())
