"""gop.core: every name of the package's core in one module.

The core lives in modules by concern: the shared libgop context and its
errors (`_context`), devices and the kernel cache (`cache`), graphs
(`graph`), operators, their operands, gradients and bound calls
(`operator`), what schedule="auto" means where the chooser is not taken
(`auto`), and libraries of operators with `stdlib` and `layers`
(`library`). This module re-exports them, the same objects, so that
`gop.core.NAME` and `from gop.core import NAME` keep working (mutating
`gop.core.AUTO_KEEPS_DEFAULT` changes the one dictionary the operators
read).
"""
from . import _lib  # noqa: F401
from ._context import GopError, _b, _check, _ctx, _diag, _lock  # noqa: F401
from ._lib import lib  # noqa: F401
from .auto import (AUTO_KEEPS_DEFAULT, AUTO_RULES, _GAT_GRAD, _lanes,  # noqa: F401
                   backward_schedule, gat_grad_groups, gat_groups)
from .cache import (cache_dir, cache_stats, clear_cache, device_status,  # noqa: F401
                    gpu_available, set_cache_dir)
from .graph import BatchGraph, Graph  # noqa: F401
from .operator import (_DOMAINS, _DTYPES, _F32, _TENSOR, BoundCall, Gradient,  # noqa: F401
                       Operator, TensorSpec, _from_dlpack, _gop_device, _inspect, _kind,
                       _Operand, _parse_signature, _stream_handle, _torch_f64, _wants_grad,
                       _zeros)
from .library import Library, compile, layers, stdlib  # noqa: F401
