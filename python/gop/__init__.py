"""gop: GNN graph operators compiled for the GPU, callable on PyTorch
tensors (zero copy, in the current CUDA stream), NumPy arrays and DLPack
objects.

    import gop, torch
    g = gop.Graph.from_edge_index(edge_index)           # PyG's convention
    y = gop.stdlib.copy_u_sum(g, x)                     # x: [N, F] CUDA tensor
    conv = gop.nn.GCNConv(64, 16).cuda()                # PyG's GCNConv parameters
    step = gop.train.capture_step(fn, optimizer=opt)    # a training step as a CUDA graph
    gop.pyg.accelerate(model)                           # a PyG model, unchanged, on gop

See docs/embedding.md in the repository.
"""
from .core import (BatchGraph, BoundCall, GopError, Graph, Library, Operator, TensorSpec, cache_dir,
                   cache_stats,
                   clear_cache, compile, device_status, gpu_available, layers, set_cache_dir,
                   stdlib)
from ._lib import lib as _clib

__version__ = "0.1.0"
library_path = _clib.path


def __getattr__(name):
    if name in ("nn", "autograd", "train", "pyg"):  # need torch: imported on first use
        # import_module, not `from . import nn`: the latter asks hasattr(gop,
        # "nn") first, which comes back here (endless recursion)
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'gop' has no attribute {name!r}")


__all__ = ["BatchGraph", "BoundCall", "GopError", "Graph", "Library", "Operator", "TensorSpec", "cache_dir",
           "cache_stats", "clear_cache", "compile", "device_status", "gpu_available",
           "layers", "set_cache_dir", "stdlib", "library_path"]
