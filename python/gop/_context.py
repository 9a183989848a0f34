"""The one libgop context the package shares, and how its errors are raised.

Every module of the package compiles, opens graphs and reports through this
context (`_ctx`), under `_lock`; `_diag` takes the diagnostics it collected.
"""
import threading

from ._lib import lib


class GopError(RuntimeError):
    """An error reported by libgop (its diagnostics, `file:line:col: error:`)."""



_lock = threading.RLock()
_ctx = lib.gop_context_new()
if not _ctx:
    raise MemoryError("gop: cannot create a context")


def _diag(default="failed"):
    text = lib.gop_diagnostics(_ctx).decode(errors="replace").strip()
    lib.gop_clear_diagnostics(_ctx)
    return text or default


def _check(ok, what):
    if not ok:
        raise GopError(f"{what}:\n{_diag()}")


def _b(s):
    return s.encode() if isinstance(s, str) else s
