"""Libraries of operators: a compiled .gop file, the standard library
(`stdlib`) and the model layers (`layers`), each an Operator by name."""
import os

from ._context import _b, _check, _ctx, _lock
from ._lib import lib
from .operator import Operator


class Library:
    """The operators of a .gop file (or the standard library), by name:
    lib.copy_u_sum, lib['copy_u_sum'], iter(lib), len(lib)."""

    def __init__(self, handle, name):
        _check(handle, name)
        self._h, self.name = handle, name
        self._ops = {}
        for i in range(lib.gop_module_num_ops(handle)):
            op = Operator(lib.gop_module_op(handle, i), self)
            self._ops[op.name] = op

    def __getitem__(self, name):
        try:
            return self._ops[name]
        except KeyError:
            raise KeyError(f"{self.name} has no operator {name!r}") from None

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._ops[name]
        except KeyError:
            raise AttributeError(f"{self.name} has no operator {name!r}") from None

    def __iter__(self):
        return iter(self._ops.values())

    def __len__(self):
        return len(self._ops)

    def __contains__(self, name):
        return name in self._ops

    def names(self):
        return list(self._ops)

    def __dir__(self):
        return list(self._ops) + ["names"]

    def __repr__(self):
        return f"<gop library {self.name}: {len(self)} operators>"


def compile(source, name=None):
    """Compiles .gop source text, or the .gop file at a path; returns its
    Library. Raises GopError with the diagnostics on errors."""
    with _lock:
        if isinstance(source, os.PathLike) or (
                isinstance(source, str) and "\n" not in source and source.endswith(".gop")):
            path = os.fspath(source)
            return Library(lib.gop_compile_file(_ctx, _b(path)), path)
        nm = name or "<string>"
        return Library(lib.gop_compile_string(_ctx, _b(nm), _b(source)), nm)


stdlib = Library(lib.gop_stdlib(_ctx), "stdlib")
layers = Library(lib.gop_model_layers(_ctx), "layers")
