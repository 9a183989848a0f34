"""The kernels of one compiled training step (forward, cross-entropy,
backward, Adam) of gop.nn's twins of tests/gpu/pyg_accelerate.py and of
PyG's models, both under torch.compile (mode "default", so that every
kernel shows), on ogbn-arxiv: per model and library, the step's kernel
time split into gop's kernels, dense products (GEMMs) and the rest
(torch's element-wise, reductions, loss, optimiser).

    PYTHONPATH=python:tests/gpu python3 bench/profile_train.py DATASETS [gcn sage gat]"""
import os
import sys

import torch
from torch.nn import functional as F
from torch.profiler import ProfilerActivity, profile

import gop
import pyg_accelerate as pa


def step_kernels(model, call, y, steps=5):
    opt = torch.optim.Adam(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(call(), y).backward()
        opt.step()

    for _ in range(4):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    split = {"gop": 0.0, "gemm": 0.0, "other": 0.0}
    top = []
    for e in p.key_averages():
        us = e.self_device_time_total / steps
        if us <= 0:
            continue
        n = e.key
        kind = ("gemm" if ("gemm" in n or "xmma" in n or "cutlass" in n or "sgemm" in n)
                else "gop" if ("_s" in n and n.rsplit("_s", 1)[-1].isdigit()) else "other")
        split[kind] += us
        top.append((us, kind, n[:60]))
    top.sort(reverse=True)
    return split, top[:12]


def main():
    d = sys.argv[1]
    g = gop.Graph.open(os.path.join(d, "ogbn-arxiv.mtx.gz"))
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(g.num_nodes, pa.FIN, generator=gen).cuda()
    y = torch.randint(0, pa.CLASSES, (g.num_nodes,), generator=gen).cuda()
    ei = torch.from_numpy(g.edge_index).cuda()
    for name in sys.argv[2:] or ["gcn", "sage", "gat"]:
        for lib in ("gop", "pyg"):
            torch._dynamo.reset()
            if lib == "gop":
                m = torch.compile(pa.build_gop(torch, name).cuda(), fullgraph=True)
                split, top = step_kernels(m, lambda: m(x, g), y)
            else:
                m = torch.compile(pa.build(torch, name).cuda())
                split, top = step_kernels(m, lambda: m(x, ei), y)
            total = sum(split.values())
            print(f"== {name} {lib}: {total:.0f} us of kernels a step: " +
                  ", ".join(f"{k} {v:.0f}" for k, v in split.items()), flush=True)
            for us, kind, n in top:
                print(f"   {us:8.1f} us  {kind:5}  {n}")


if __name__ == "__main__":
    main()
