"""tests/gpu/edgeless.py: an edgeless graph on CUDA tensors (GPU machine).

An edgeless graph's edge tensor has no elements, and torch gives an empty
CUDA tensor no memory (data_ptr() 0). gop's device launches take it (no
check, fill or read touches it): u_mul_e_sum with such a weight, and
copy_u_sum, give zeros; their gradients too.

  python3 tests/gpu/edgeless.py --prepare   # here, with LLVM: kernels into GOP_CACHE_DIR
  python3 tests/gpu/edgeless.py             # on the GPU machine (same GOP_CACHE_DIR)
Exit status 0 when every check holds.
"""
import sys

import numpy as np
import torch

import gop

F = 16


def graph():
    return gop.Graph.from_arcs(np.zeros(0, np.int64), np.zeros(0, np.int64), 7, "edgeless")


def main():
    g = graph()
    if "--prepare" in sys.argv:
        for op in (gop.stdlib.u_mul_e_sum, gop.stdlib.copy_u_sum):
            op.prepare(g, schedule="default", F=F)
            op.grad().prepare(g, schedule="default", F=F)  # the backward's
        print("prepared")
        return 0
    x = torch.randn(7, F, device="cuda", requires_grad=True)
    w = torch.zeros(0, device="cuda", requires_grad=True)
    print("empty weight's data_ptr():", w.data_ptr())
    y = gop.stdlib.u_mul_e_sum(g, x, w, schedule="default")
    z = gop.stdlib.copy_u_sum(g, x, schedule="default")
    (y.sum() + z.sum()).backward()
    torch.cuda.synchronize()
    checks = {
        "u_mul_e_sum gives zeros": float(y.detach().abs().sum()) == 0.0 and tuple(y.shape) == (7, F),
        "copy_u_sum gives zeros": float(z.detach().abs().sum()) == 0.0,
        "dX is zeros": x.grad is not None and float(x.grad.abs().sum()) == 0.0,
        "dW is empty": w.grad is not None and w.grad.numel() == 0,
    }
    for name, ok in checks.items():
        print(("ok  " if ok else "FAIL") + " " + name)
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
