#!/usr/bin/env python3
"""bench/gemm_forms.py: the dense products of the GNN layers (issue 36),
each written the ways torch can run it, timed on the GPU.

gop's layers and PyG's share their float32 GEMMs (cuBLAS through torch):
on ogbn-arxiv they are 452 of the 751 us of a GCN forward under
torch.compile on an H200 (bench/results/2026-11-29-H200-gcn-self-loops).
This asks whether another form of the same product, with the same float32
arithmetic (no TF32: torch's default precision is kept and checked), is
faster for the layers' tall, narrow shapes: y = x W^T with x [M, K], W
[N, K], M = 169,343, and the two products of its backward.

    python3 bench/gemm_forms.py [--M 169343] [--reps 50]

Prints one line per shape and form: the median time of a call (CUDA
events around --reps calls, median of 7 such groups), its rate, and the
largest difference from F.linear's result relative to that result's
largest magnitude.
"""
import argparse
import statistics

import torch
import torch.nn.functional as F

# (K, N): the layers' products on ogbn-arxiv (128 features, 40 classes):
# GCN / GraphSAGE 128 -> 256 -> 40, GAT 128 -> 8 x 8 -> 40
SHAPES = [(128, 256), (256, 40), (128, 64), (64, 40)]


def timed(fn, reps):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(7):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / reps)
    return statistics.median(times)


def pad_rows(w, multiple):
    n = -(-w.size(0) // multiple) * multiple
    if n == w.size(0):
        return None
    out = torch.zeros(n, w.size(1), device=w.device, dtype=w.dtype)
    out[: w.size(0)] = w
    return out


def forms(x, w, g):
    """name -> (function giving the product, reference function)"""
    wt = w.t().contiguous()
    out = {
        "fwd F.linear(x, W)": (lambda: F.linear(x, w), lambda: F.linear(x, w)),
        "fwd x @ Wt (Wt contiguous)": (lambda: x @ wt, lambda: F.linear(x, w)),
        "fwd (W @ x^T)^T contiguous": (lambda: (w @ x.t()).t().contiguous(),
                                       lambda: F.linear(x, w)),
    }
    for m in (16, 32, 64):
        wp = pad_rows(w, m)
        if wp is not None:
            n = w.size(0)
            out[f"fwd N padded to {m}, sliced"] = (
                (lambda wp=wp, n=n: F.linear(x, wp)[:, :n].contiguous()),
                lambda: F.linear(x, w))
    out["bwd dX = dY @ W"] = (lambda: g @ w, lambda: g @ w)
    out["bwd dX = (W^T @ dY^T)^T contiguous"] = (lambda: (w.t() @ g.t()).t().contiguous(),
                                                 lambda: g @ w)
    out["bwd dW = dY^T @ x"] = (lambda: g.t() @ x, lambda: g.t() @ x)
    out["bwd dW = (x^T @ dY)^T"] = (lambda: (x.t() @ g).t(), lambda: g.t() @ x)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--M", type=int, default=169343)
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gemm_forms: no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__} M={args.M} "
          f"tf32={torch.backends.cuda.matmul.allow_tf32}")
    gen = torch.Generator(device="cuda").manual_seed(0)
    for K, N in SHAPES:
        x = torch.randn(args.M, K, device="cuda", generator=gen)
        w = torch.randn(N, K, device="cuda", generator=gen) / K ** 0.5
        g = torch.randn(args.M, N, device="cuda", generator=gen)
        flop = 2.0 * args.M * K * N
        for name, (fn, ref) in forms(x, w, g).items():
            ms = timed(fn, args.reps)
            r = ref()
            err = (fn() - r).abs().max().item() / max(r.abs().max().item(), 1e-30)
            print(f"K={K:4d} N={N:4d}  {name:38s} {ms * 1e3:8.1f} us  "
                  f"{flop / ms / 1e9:6.1f} TFLOP/s  rel.err {err:.1e}")


if __name__ == "__main__":
    main()
