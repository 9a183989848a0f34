"""Devices and the kernel cache: whether a GPU is there, and where compiled
kernels are kept between calls and processes."""
import ctypes
import os

from . import _lib
from ._context import GopError, _b, _check, _ctx, _lock
from ._lib import lib


def device_status():
    """(status, text): 0 and the GPU's name, or 3 (no CUDA driver) / 4 (no
    CUDA device) and why."""
    buf = ctypes.create_string_buffer(256)
    s = lib.gop_device_status(buf, 256)
    return s, buf.value.decode(errors="replace")


def gpu_available():
    return device_status()[0] == 0


def set_cache_dir(path):
    """The folder where compiled kernels are kept as kernel packs (None:
    memory only). Default: $GOP_CACHE_DIR, else ~/.cache/gop/kernels."""
    with _lock:
        _check(lib.gop_set_cache_dir(_ctx, _b(os.fspath(path)) if path else None) == 0,
               "set_cache_dir")


def cache_dir():
    d = lib.gop_cache_dir(_ctx)
    return d.decode() if d else None


def clear_cache():
    """Removes the kernel packs gop wrote to the cache folder; returns how many."""
    with _lock:
        n = lib.gop_cache_clear(_ctx)
        _check(n >= 0, "clear_cache")
        return n


def cache_stats():
    """{'memory_hits', 'disk_hits', 'compiled', 'disk_writes', 'entries'}."""
    s = _lib.CacheStats()
    lib.gop_cache_stats(_ctx, ctypes.byref(s))
    return {f: getattr(s, f) for f, _ in s._fields_}


if not os.environ.get("GOP_CACHE_DIR"):
    try:
        set_cache_dir(os.path.join(os.path.expanduser("~"), ".cache", "gop", "kernels"))
    except GopError:
        pass  # an unwritable home: memory only
