"""The kernels of one eager gop.nn inference forward (the pyg_accelerate
twins) on ogbn-arxiv under torch.profiler: a table per model, by CUDA time.

    PYTHONPATH=python:tests/gpu python3 bench/profile_infer.py DATASETS [gcn sage gat]"""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import gop
import pyg_accelerate as pa

g = gop.Graph.open(os.path.join(sys.argv[1], "ogbn-arxiv.mtx.gz"))
x = torch.randn(g.num_nodes, pa.FIN, generator=torch.Generator().manual_seed(0)).cuda()
for name in sys.argv[2:] or ["gcn", "sage", "gat"]:
    m = pa.build_gop(torch, name).cuda().eval()
    with torch.no_grad():
        for _ in range(3):
            m(x, g)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            for _ in range(5):
                m(x, g)
            torch.cuda.synchronize()
    print(f"== {name}: 5 forwards")
    print(p.key_averages().table(sort_by="cuda_time_total", row_limit=14, max_name_column_width=70))
