"""gop from Python: operators, graphs, and calling an operator on arrays.

An Operator is called as `op(graph, *inputs, out=None, schedule=None,
stream=None, **extents)`. Where the operands live decides where it runs:

* torch CUDA tensors: on the GPU, on the tensors' memory, queued in the
  current stream (torch.cuda.current_stream().cuda_stream) without waiting;
  nothing is copied. Outputs not given are allocated with torch.empty.
* NumPy arrays, CPU torch tensors: the reference interpreter, reading and
  writing the arrays' memory. Outputs not given are allocated by the same
  framework (numpy.empty, torch.empty).
* anything else with __dlpack__: taken through DLPack (CPU: as NumPy arrays,
  CUDA: as torch tensors), zero copy.

Torch tensors that require grad (grad mode on) go through the operator's
torch.autograd.Function (gop/autograd.py), whose backward is the gradient
derived in the IR (Operator.grad); CPU float64 torch tensors run in double
precision on the interpreter (Operator.f64), for torch.autograd.gradcheck.

Every operand is checked before anything runs: float32, C-contiguous (gop
never copies a non-contiguous tensor behind the caller's back: it raises),
one device for all, the shape the operator's signature gives on the graph.
Errors raise GopError (the C library's diagnostics) or TypeError/ValueError
naming the tensor; nothing crashes the process.
"""
import ctypes
import os
import re
import threading
import weakref

from . import _lib
from ._context import GopError, _b, _check, _ctx, _diag, _lock
from ._lib import lib
from . import auto as _auto
from .auto import AUTO_KEEPS_DEFAULT, AUTO_RULES
from .graph import Graph

# ---- signatures ----

_DOMAINS = ("src", "dst", "edge", "vertex")
_TENSOR = re.compile(r"(\w+)\s*:\s*(\w+)\[([^\]]*)\]")


class TensorSpec:
    """A tensor of an operator: name, dtype, dims (domain first when it has
    one: 'src', 'dst', 'edge'; then extents by name, or ints)."""

    def __init__(self, name, dtype, dims, index, output):
        self.name, self.dtype, self.dims = name, dtype, dims
        self.index, self.output = index, output
        self._torch_dtype = _UNSET  # the torch dtype of its arrays, looked up once

    def shape(self, graph, ext):
        out = []
        for d in self.dims:
            if d in ("src", "dst", "vertex"):
                out.append(graph.num_nodes)
            elif d == "edge":
                out.append(graph.num_edges)
            elif isinstance(d, int):
                out.append(d)
            else:
                out.append(ext[d])
        return tuple(out)

    def __repr__(self):
        return f"{self.name}: {self.dtype}[{', '.join(map(str, self.dims))}]"


_UNSET = object()


def _parse_signature(sig):
    head, _, tail = sig.partition("->")
    specs = []
    for part, output in ((head, False), (tail, True)):
        for name, dtype, dims in _TENSOR.findall(part):
            ds = [int(x) if x.strip().isdigit() else x.strip() for x in dims.split(",")
                  if x.strip()]
            specs.append(TensorSpec(name, dtype, ds, len(specs), output))
    return specs


# ---- operands ----

_F32 = "float32"
# an operator's dtype (docs/language.md, Types) -> the torch and NumPy dtype
# names of its arrays; NumPy has no bfloat16 of its own: ml_dtypes' is
# accepted (its name is "bfloat16"), or a torch tensor
_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64"}


_KIND_OF_TYPE = {}  # type -> 'torch' or 'numpy' (decided by its module alone)


def _kind(x):
    """'torch', 'numpy' or 'dlpack'; TypeError for anything else."""
    t = type(x)
    k = _KIND_OF_TYPE.get(t)
    if k is not None:
        return k
    mod = t.__module__
    if mod.startswith("torch"):
        _KIND_OF_TYPE[t] = "torch"
        return "torch"
    if mod.startswith("numpy"):
        _KIND_OF_TYPE[t] = "numpy"
        return "numpy"
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        return "dlpack"
    raise TypeError(f"{type(x).__name__} is not an array gop can take (torch tensors, "
                    f"NumPy arrays, or objects with __dlpack__)")


def _from_dlpack(x):
    dev, _ = x.__dlpack_device__()
    if int(dev) == 1:  # kDLCPU
        import numpy as np
        return np.from_dlpack(x)
    if int(dev) == 2:  # kDLCUDA
        import torch
        return torch.utils.dlpack.from_dlpack(x)
    raise TypeError(f"DLPack device type {int(dev)} is not supported (CPU or CUDA only)")


_torch_module = None


def _torch():
    """The torch module, imported on first use (gop runs without torch)."""
    global _torch_module
    if _torch_module is None:
        import torch
        _torch_module = torch
    return _torch_module


class _Operand:
    __slots__ = ("spec", "obj", "ptr", "cuda", "device", "framework")


def _inspect(spec, x, opname, role):
    """Checks one operand's dtype, layout and location; returns an _Operand.
    Messages name it as f"{opname}: {role} {spec.name}" (made only to raise)."""
    o = _Operand()
    o.spec, o.obj = spec, x
    k = _kind(x)
    if k == "dlpack":
        x = o.obj = _from_dlpack(x)
        k = _kind(x)
    o.framework = k
    if k == "torch":
        torch = _torch()
        want_t = spec._torch_dtype
        if want_t is _UNSET:
            want_t = spec._torch_dtype = getattr(
                torch, _DTYPES.get(spec.dtype, spec.dtype), None)
        if x.dtype != want_t:
            raise TypeError(f"{opname}: {role} {spec.name} must be "
                            f"{_DTYPES.get(spec.dtype, spec.dtype)}, got {x.dtype}")
        if not x.is_contiguous():
            raise ValueError(f"{opname}: {role} {spec.name} is not contiguous (strides "
                             f"{tuple(x.stride())}): gop "
                             f"reads row-major memory as it is and never copies behind your "
                             f"back; pass {spec.name}.contiguous()")
        if x.requires_grad and torch.is_grad_enabled():
            raise ValueError(f"{opname}: {role} {spec.name} requires grad, and a call with "
                             f"out= is not "
                             f"differentiable: call without out=, or under torch.no_grad()")
        o.cuda = x.is_cuda
        o.device = x.device
        o.ptr = x.data_ptr()
    else:
        what = f"{opname}: {role} {spec.name}"
        want = _DTYPES.get(spec.dtype, spec.dtype)
        if x.dtype.name != want:
            hint = (" (NumPy has no bfloat16: pass ml_dtypes.bfloat16 arrays or torch tensors)"
                    if want == "bfloat16" else "")
            raise TypeError(f"{what} must be {want}, got {x.dtype}{hint}")
        if not x.flags["C_CONTIGUOUS"]:
            raise ValueError(f"{what} is not C-contiguous (strides {x.strides}): gop never "
                             f"copies behind your back; pass numpy.ascontiguousarray(...)")
        if spec.output and not x.flags["WRITEABLE"]:
            raise ValueError(f"{what} is read-only")
        o.cuda, o.device = False, "cpu"
        o.ptr = x.ctypes.data
    return o


# ---- operators ----

class Operator:
    """A gop operator, callable on arrays: see the module's doc. Attributes:
    name, signature, doc, dgl_name, inputs and outputs (TensorSpec)."""

    def __init__(self, handle, library):
        self._h = handle
        self.library = library
        self.name = lib.gop_op_name(handle).decode()
        self.signature = lib.gop_op_signature(handle).decode()
        self.doc = lib.gop_op_doc(handle).decode()
        m = re.match(r"DGL\s+([\w.]+)\s*:", self.doc)
        self.dgl_name = m.group(1) if m else None
        specs = _parse_signature(self.signature)
        self.inputs = [s for s in specs if not s.output]
        self.outputs = [s for s in specs if s.output]
        self.extents = sorted({d for s in specs for d in s.dims
                               if isinstance(d, str) and d not in _DOMAINS})
        self.__doc__ = f"{self.signature}\n\n{self.doc}"
        self._runs = {}  # (graph, schedule, target, mode) -> [run handle, extents set]
        self._choices = {}  # (graph, row width) -> (chosen schedule, its source, weakref)
        self._measured = {}  # (graph, extents) -> (kept schedule, weakref to the graph)
        self._calls = {}  # (graph, extents) -> [calls with no schedule=, weakref to the graph]
        self._stages = None
        self._grads = {}  # (wrt, joint) -> Gradient
        # (graph size, operand shapes, given extents) -> the extents they
        # check to: the shape checks of a call, done once per shapes
        self._ext_cache = {}
        self._by_name = {s.name: s for s in self.inputs + self.outputs}
        self._in_names = tuple(s.name for s in self.inputs)
        self._out_names = tuple(s.name for s in self.outputs)
        # AUTO_RULES' rule where this operator's file has the rule's
        # schedule (gop.layers'), else None: looked up once, not per call
        rule = AUTO_RULES.get(self.name)
        self._rule = rule if rule and any(
            s.startswith(rule.__name__ + "(") for s in self.schedules()) else None

    def __repr__(self):
        return f"<gop operator {self.signature}>"

    def schedules(self):
        """The named schedules this operator can use, as 'name(P, Q)'."""
        return [lib.gop_op_schedule_signature(self._h, i).decode()
                for i in range(lib.gop_op_num_schedules(self._h))]

    def kernel_key(self, schedule=None, target=None, graph=None):
        """The kernel cache's key (a pack's file name is OP-KEY.gopk) of this
        operator under `schedule` for `target`, compiled for `graph`'s edge
        order (kernels for edge ids in CSR order have keys of their own;
        without a graph, the general kernel's)."""
        o = _lib.CompileOptions(_b(_auto.named(schedule)), _b(target), None, None)
        if graph is not None and not hasattr(graph, "info"):
            raise TypeError(f"kernel_key: graph must be a gop.Graph, got {type(graph).__name__}")
        if graph is not None and os.environ.get("GOP_CSR_EDGES") != "0":
            o.csr_edges = int(bool(graph.info.get("csr_edges", 0)))
        key = (ctypes.c_char * 17)()
        with _lock:
            _check(lib.gop_kernel_key(self._h, ctypes.byref(o), key) == 0, "kernel_key")
        return key.value.decode()

    def choose_schedule(self, graph, F=0, db=None):
        """The schedule the tuning database (else the predictor, else the cost
        model) picks for this operator on `graph` at width F: (schedule,
        source); (None, "default mapping") for an operator no named schedule
        or strategy applies to (gop_choose_schedule's GOP_NO_SCHEDULE). db: a
        gopc tune database (default $GOP_TUNE_DB)."""
        db = db or os.environ.get("GOP_TUNE_DB")
        c = _lib.ScheduleChoice()
        with _lock:
            rc = lib.gop_choose_schedule(self._h, graph._h, F, _b(db) if db else None,
                                         ctypes.byref(c))
            _check(rc >= 0, "choose_schedule")
        if rc == _lib.GOP_NO_SCHEDULE:  # no candidate: the C API's default mapping
            return None, "default mapping"
        return c.schedule.decode(), lib.gop_schedule_source_name(c.source).decode()

    def tune(self, graph, budget_s=30.0, db=None, max_candidates=0, **extents):
        """gopc tune from Python: measures the legal schedules of this operator
        on `graph` on the GPU (best cost-model estimates first, each checked
        against the interpreter) for `budget_s` seconds, storing each
        verified time in the tuning database `db` (default $GOP_TUNE_DB;
        None: nothing stored). Extents by keyword (F=64). Returns the
        verified candidates, fastest first, as dicts. Needs a GPU and a gop
        with LLVM (it compiles every candidate)."""
        db = db or os.environ.get("GOP_TUNE_DB")
        missing = [s for s in self.extents if s not in extents]
        if missing:
            raise ValueError(f"{self.name}.tune: pass the extent {missing[0]}=N")
        o = _lib.TuneOptions(budget_s=float(budget_s), max_candidates=int(max_candidates),
                             db_path=_b(db) if db else None)
        rep = _lib.TuneReport()
        with _lock:
            h = lib.gop_run_new(_ctx, self._h, graph._h)
            _check(h, self.name)
            graph._runs.append(h)
            for s in self.extents:
                _check(lib.gop_run_set_extent(h, _b(s), int(extents[s])) == 0,
                       f"{self.name}: extent {s}")
            _check(lib.gop_tune(h, ctypes.byref(o), ctypes.byref(rep)) == 0,
                   f"{self.name}: tune")
        out = []
        for i in range(rep.nentries):
            e = rep.entries[i]
            if e.status == 0:
                out.append({"schedule": e.schedule.decode(), "median_ms": e.median_ms,
                            "gbps": e.gbps, "bound_fraction": e.bound_fraction,
                            "model_us": e.model_us, "stored": e.stored})
        return out

    # -- calling --

    def _run(self, graph, schedule, target, mode, ext):
        """The C run for these arguments, made once: one per graph, schedule,
        target, mode and extents, so that a run's prepared launch (kernels,
        grids, temporaries) is never redone when a model calls the same
        operator at several widths."""
        schedule = _auto.named(schedule)
        if schedule == "auto":
            schedule = self._chosen(graph, ext)
        key = self._run_key(graph, schedule, target, mode, ext)
        r = self._runs.get(key)
        if r is None or r[2]() is not graph:
            h = lib.gop_run_new(_ctx, self._h, graph._h)
            _check(h, f"{self.name}")
            # the graph frees its runs when it goes (a graph per mini-batch):
            # held weakly here, and forgotten once dead
            graph._runs.append(h)
            if len(self._runs) > 64:
                self._runs = {k: v for k, v in self._runs.items() if v[2]() is not None}
            if schedule or target:
                o = _lib.CompileOptions(_b(schedule), _b(target), None, None)
                # checked now, on the interpreter path too: a schedule that
                # cannot apply is an error wherever the call runs
                kb = (ctypes.c_char * 17)()
                _check(lib.gop_run_set_compile(h, ctypes.byref(o)) == 0 and
                       lib.gop_kernel_key(self._h, ctypes.byref(o), kb) == 0,
                       f"{self.name}: schedule {schedule!r}, target {target!r}")
            lib.gop_run_set_device(h, mode)
            lib.gop_run_set_timing(h, 0, 0)
            for s in self.extents:
                _check(lib.gop_run_set_extent(h, _b(s), ext[s]) == 0, f"{self.name}: extent {s}")
            n = lib.gop_run_num_tensors(h)
            r = self._runs[key] = [h, dict(ext), weakref.ref(graph), (ctypes.c_uint64 * n)()]
        return r

    def _run_key(self, graph, schedule, target, mode, ext):
        """The key of _run's table. A program of several stages keeps device
        temporaries in its run between its stages (edge_softmax's M, GAT's
        attention), which two streams running one run at once would
        overwrite in each other: on the GPU such a run is one per thread
        (each thread's calls queue in its own stream; a run is made outside
        CUDA graph capture, in the thread's first eager call)."""
        key = (id(graph), schedule, target, mode, tuple([ext[s] for s in self.extents]))
        if mode == _GPU and self.stages > 1:
            key += (threading.get_ident(),)
        return key

    def _chosen(self, graph, ext):
        """What schedule="auto" runs: gop_choose_schedule's pick (the tuning
        database $GOP_TUNE_DB when set, else the learned predictor beside it,
        else the cost model) for this graph at the width of a row (the
        product of the extents), chosen once per graph and width; None (the
        C API's default mapping) for an operator nothing applies to. The C
        API's fixed default (warp_edge(1, 1)) was 2.5x slower than the tuned
        best in geometric mean on the H100 for aggregation (bench/NOTES.md,
        2026-11-25), but the choice depends on the width, so kernels prepared
        for a machine without LLVM must be prepared at the widths used
        (gop.plan lists the calls of the gop.nn layers, bench/train.py
        --prepare prepares them).

        A rule of the extents instead (AUTO_RULES): GAT's fused attention
        and its joint backward, in neighbour groups stage by stage. Kept at
        the default mapping, each for a measured reason
        (AUTO_KEEPS_DEFAULT): the other forward operators of gop.layers (the
        cost model is fitted on aggregation; its pick for GAT's fused
        attention took 39 ms on ogbn-arxiv where the default takes 2.5, as
        models.c found), and the derived operators named there.

        Where the pick is a guess (gop.auto.needs_measure: by default every
        pick not from the tuning database), the first call on CUDA tensors
        times it against the
        default mapping and the faster is kept for this graph and these
        extents (gop.auto.decide); until then, and on the interpreter, the
        pick."""
        hit = self._measured.get(self._ext_key(graph, ext))
        if hit is not None and hit[1]() is graph:
            return hit[0]
        return self._pick(graph, ext)[0]

    def _reused(self, graph, ext):
        """Whether calls with no schedule= on `graph` at extents `ext` have
        come often enough (gop.auto.DEFAULT_AFTER) for "auto" to be worth
        its choice: a graph made per mini-batch is called a few times and
        freed, and choosing for it (the cost model over the candidates,
        then timing them) would cost more than it saves."""
        key = self._ext_key(graph, ext)
        c = self._calls.get(key)
        if c is None or c[1]() is not graph:
            with _lock:  # threads share the dictionary
                if len(self._calls) > 256:  # forget the graphs gone
                    self._calls = {k: v for k, v in self._calls.items() if v[1]() is not None}
                c = self._calls[key] = [0, weakref.ref(graph)]
        c[0] += 1
        return c[0] > _auto.DEFAULT_AFTER

    def _ext_key(self, graph, ext):
        return (id(graph), tuple([int(ext[s]) for s in self.extents]))

    def _pick(self, graph, ext):
        """(schedule, source) that schedule="auto" proposes before any
        measuring: source "rule" (AUTO_RULES), "kept default"
        (AUTO_KEEPS_DEFAULT, gop.layers), or gop_choose_schedule's."""
        if self._rule:
            return self._rule(ext), "rule"
        if self.library is _library.layers or self.name in AUTO_KEEPS_DEFAULT:
            return None, "kept default"
        F = 1
        for s in self.extents:
            F *= int(ext[s])
        key = (id(graph), F)
        hit = self._choices.get(key)  # a read needs no lock (one dict lookup)
        if hit is not None and hit[2]() is graph:
            return hit[0], hit[1]
        # under the lock: threads share the dictionary (docs/threads.md)
        with _lock:
            hit = self._choices.get(key)
            if hit is None or hit[2]() is not graph:
                # None for an operator no named schedule or strategy applies to
                # (an element-wise layer, a bias): the C API's default mapping.
                # The graph is held weakly (a graph per mini-batch must go).
                if len(self._choices) > 64:
                    self._choices = {k: v for k, v in self._choices.items()
                                     if v[2]() is not None}
                hit = self._choices[key] = (*self.choose_schedule(graph, F), weakref.ref(graph))
        return hit[0], hit[1]

    @property
    def stages(self):
        """The number of stages (top-level loop nests) of the operator as
        written: 3 for GAT's attention, 1 for an aggregation."""
        if self._stages is None:
            with _lock:
                p = lib.gop_emit(self._h, _lib.GOP_STAGE_IR)
                _check(p, f"{self.name}: its IR")
                text = ctypes.string_at(p).decode()
                _libc_free(p)
            self._stages = _auto.count_stages(text)
        return self._stages

    def auto_candidates(self, graph, **extents):
        """The schedules a call with schedule="auto" may run on `graph` at
        these extents (None: the default mapping): the one settled, else
        the pick, and the default mapping where the first call on the GPU
        times the pick against it (what to prepare for a machine without
        LLVM)."""
        return self._candidates(graph, {**{s: 1 for s in self.extents}, **extents})

    def _candidates(self, graph, ext, ext_key=None):
        """auto_candidates for `ext`, which has every extent (ext_key: its
        _ext_key, where the caller has it)."""
        hit = self._measured.get(ext_key or self._ext_key(graph, ext))
        if hit is not None and hit[1]() is graph:
            return [hit[0]]
        pick, source = self._pick(graph, ext)
        if _auto.needs_measure(self.stages, pick, source):
            return [pick, None]
        return [pick]

    def settle_auto(self, graph, ext, time_fn):
        """Settles schedule="auto" on `graph` at extents `ext` where it is
        to be measured: time_fn(schedule) gives the milliseconds of one call
        under `schedule` (None: the default mapping), or None where it
        cannot run; the kept schedule (gop.auto.decide) is what the calls
        run from then on. Returns it (the pick, unmeasured, where nothing
        is to be measured)."""
        cands = self.auto_candidates(graph, **ext)
        if len(cands) == 1:
            return cands[0]
        kept = _auto.decide({s: time_fn(s) for s in cands})
        with _lock:  # threads share the dictionary
            if len(self._measured) > 64:  # forget the graphs gone (one per mini-batch)
                self._measured = {k: v for k, v in self._measured.items()
                                  if v[1]() is not None}
            self._measured[self._ext_key(graph, ext)] = (kept, weakref.ref(graph))
        return kept

    def schedule_for(self, graph, schedule="auto", **extents):
        """The schedule a call with `schedule=` runs on `graph` at these
        extents: "auto" resolved (None: the C API's default mapping)."""
        schedule = _auto.named(schedule)
        if schedule != "auto":
            return schedule
        return self._chosen(graph, {**{s: 1 for s in self.extents}, **extents})

    def _extents(self, graph, ops, outs, given):
        """The extents of a call, its operands' shapes checked against the
        signature on `graph`. What passed is kept per graph size, shapes and
        given extents (int values only): the dict returned is shared, not
        to be changed."""
        key = None
        if not given or all(type(v) is int for v in given.values()):
            key = (graph.num_nodes, graph.num_edges, tuple([o.obj.shape for o in ops]),
                   tuple([None if o is None else o.obj.shape for o in outs]),
                   tuple(given.items()) if given else ())
            hit = self._ext_cache.get(key)
            if hit is not None:
                return hit
        ext = self._check_extents(graph, ops, outs, given)
        if key is not None:
            if len(self._ext_cache) > 256:
                self._ext_cache = {}
            self._ext_cache[key] = ext
        return ext

    def _check_extents(self, graph, ops, outs, given):
        ext = dict(given)
        for s in self.extents:
            if s in ext and (not isinstance(ext[s], int) or ext[s] <= 0):
                raise ValueError(f"{self.name}: extent {s}={ext[s]!r} must be a positive int")
        for o in list(ops) + [x for x in outs if x is not None]:
            shape = tuple(o.obj.shape)
            spec = o.spec
            if len(shape) != len(spec.dims):
                raise ValueError(f"{self.name}: {spec.name} must have {len(spec.dims)} "
                                 f"dimension(s) {spec!r}, got shape {list(shape)}")
            for d, n in zip(spec.dims, shape):
                if isinstance(d, str) and d not in _DOMAINS:
                    if ext.setdefault(d, n) != n:
                        raise ValueError(f"{self.name}: extent {d} is {ext[d]} by an earlier "
                                         f"tensor but {spec.name} has shape {list(shape)}")
        missing = [s for s in self.extents if s not in ext]
        if missing:
            raise ValueError(f"{self.name}: extent {missing[0]} is not known from the inputs: "
                             f"pass {missing[0]}=N or an out= tensor")
        for o in list(ops) + [x for x in outs if x is not None]:
            want = o.spec.shape(graph, ext)
            if tuple(o.obj.shape) != want:
                raise ValueError(f"{self.name}: {o.spec.name} {o.spec!r} must have shape "
                                 f"{list(want)} on this graph, got {list(o.obj.shape)}")
        return ext

    def __call__(self, graph, *inputs, out=None, schedule=None, target=None, stream=None,
                 **extents):
        if not isinstance(graph, Graph):
            raise TypeError(f"{self.name}: the first argument must be a gop.Graph, got "
                            f"{type(graph).__name__}")
        if len(inputs) != len(self.inputs):
            raise TypeError(f"{self.name} takes {len(self.inputs)} input(s) "
                            f"({', '.join(s.name for s in self.inputs)}), got {len(inputs)}")
        if extents:
            unknown = [k for k in extents if k not in self.extents]
            if unknown:
                raise TypeError(f"{self.name} has no extent {unknown[0]!r} "
                                f"(its extents: {', '.join(self.extents) or 'none'})")
        if out is None and (_wants_grad(inputs) or _torch_f64(inputs)):
            # torch tensors that require grad: through the operator's
            # torch.autograd.Function, whose backward is the derived operators
            # (CPU float64 tensors too: the interpreter in double precision)
            from .autograd import apply
            return apply(self, graph, inputs, schedule=schedule, target=target,
                                  stream=stream, **extents)
        if out is not None and not isinstance(out, (list, tuple)):
            out = (out,)
        if out is not None and len(out) != len(self.outputs):
            raise TypeError(f"{self.name} has {len(self.outputs)} output(s), got "
                            f"{len(out)} in out=")
        name = self.name
        ops = [_inspect(s, x, name, "input") for s, x in zip(self.inputs, inputs)]
        outs = [None] * len(self.outputs) if out is None else [
            _inspect(s, x, name, "output") for s, x in zip(self.outputs, out)]
        given = ops + [o for o in outs if o is not None] if out is not None else ops
        cuda = {o.cuda for o in given}
        if len(cuda) > 1:
            where = ", ".join(f"{o.spec.name} on {o.device}" for o in given)
            raise ValueError(f"{self.name}: operands on the CPU and on the GPU ({where}): "
                             f"gop moves nothing; put them on one device")
        ext = self._extents(graph, ops, outs, extents)
        if True in cuda:  # cuda == {True}: one device, checked above
            if schedule is None:
                schedule = _auto.cuda_default(_can_compile())
                if schedule == "auto" and not self._reused(graph, ext):
                    schedule = None
            return self._call_cuda(graph, ops, outs, ext, _auto.named(schedule), target,
                                   stream, given)
        if stream is not None:
            raise ValueError(f"{self.name}: stream= is for CUDA tensors")
        return self._call_host(graph, ops, outs, ext, schedule, target)

    def _alloc(self, spec, shape, like):
        want = _DTYPES.get(spec.dtype, spec.dtype)
        if like.framework == "torch":
            torch = _torch()
            return torch.empty(shape, dtype=getattr(torch, want), device=like.device)
        import numpy as np
        # a bf16 output next to NumPy inputs: the inputs' own dtype object
        # (ml_dtypes' bfloat16), since NumPy cannot name it
        dt = like.obj.dtype if like.obj.dtype.name == want else np.dtype(want)
        return np.empty(shape, dtype=dt)

    def retype(self, dtype):
        """This operator instantiated in `dtype` ('f16', 'bf16', 'f32', 'f64'):
        its f32 tensors take that type, accumulating in f32 (f64 in f64);
        docs/language.md, Types. Arrays are then float16, bfloat16 (torch, or
        ml_dtypes with NumPy) or float64, on the interpreter and on the GPU
        (plain reductions: 16-bit outputs refuse atomics)."""
        h = lib.gop_op_retype(self._h, _b(dtype))
        _check(h, f"{self.name}: retype to {dtype!r}")
        return Operator(h, self.library)

    def _finish(self, outs, ops, graph, ext, inputs_like):
        res = []
        for i, s in enumerate(self.outputs):
            if outs[i] is None:
                like = inputs_like
                x = self._alloc(s, s.shape(graph, ext), like)
                outs[i] = _inspect(s, x, self.name, "output")
            res.append(outs[i])
        return res

    def _cuda_plan(self, graph, ops, outs, ext, schedule, target, given=None):
        """Checks the devices and allocates missing outputs: (run, operands
        in tensor order, outputs, device index). given: the operands given
        (ops and the outputs not None), where the caller has them."""
        if given is None:
            given = ops + [o for o in outs if o is not None]
        dev = given[0].device
        for o in given:
            if o.device != dev:
                devs = {o.device for o in given}
                raise ValueError(f"{self.name}: tensors on several GPUs "
                                 f"({', '.join(map(str, sorted(devs, key=str)))})")
        gop_dev = _gop_device()
        index = dev.index
        if index is None:
            index = _torch().cuda.current_device()
        if index != gop_dev:
            raise ValueError(f"{self.name}: tensors on {dev}, but gop runs on cuda:{gop_dev} "
                             f"(GOP_CUDA_DEVICE)")
        like = ops[0] if ops else next(o for o in outs if o is not None)
        res = self._finish(outs, ops, graph, ext, like)
        with _lock:
            r = self._run(graph, schedule, target, _lib.GOP_DEVICE_GPU, ext)
        return r, ops + res, res, index

    def _call_cuda(self, graph, ops, outs, ext, schedule, target, stream, given=None):
        if schedule == "auto":
            schedule = self._auto_cuda(graph, ops, outs, ext, target, stream)
        r, all_ops, res, index = self._cuda_plan(graph, ops, outs, ext, schedule, target,
                                                 given)
        stream = _stream_handle(stream, index)
        with _lock:
            ptrs = r[3]
            for i, o in enumerate(all_ops):
                ptrs[i] = o.ptr
            if lib.gop_run_launch_ptrs(r[0], ptrs, len(ptrs), stream) != 0:
                _check(False, f"{self.name} on the GPU")
        if len(res) == 1:
            return res[0].obj
        return tuple([o.obj for o in res])

    def _auto_cuda(self, graph, ops, outs, ext, target, stream):
        """schedule="auto" for a call on CUDA tensors: settle_auto, timing
        each candidate on this call's tensors (its outputs are written, and
        written again by the call). While a CUDA graph is being captured
        nothing can be timed: an unsettled call runs the default mapping."""
        key = self._ext_key(graph, ext)
        hit = self._measured.get(key)
        if hit is not None and hit[1]() is graph:  # settled: what was kept
            return hit[0]
        cands = self._candidates(graph, ext, key)
        if len(cands) == 1:  # nothing to time: the pick ("auto" resolved, as _run would)
            return cands[0]
        import time
        import torch
        if torch.cuda.is_current_stream_capturing():
            return None

        def time_fn(schedule):
            try:
                r, all_ops, _, index = self._cuda_plan(graph, ops, outs, ext, schedule, target)
                s = _stream_handle(stream, index)
                ptrs = (ctypes.c_uint64 * len(all_ops))(*[o.ptr for o in all_ops])

                def launch(n):
                    torch.cuda.synchronize(index)
                    t0 = time.perf_counter()
                    for _ in range(n):
                        _check(lib.gop_run_launch_ptrs(r[0], ptrs, len(ptrs), s) == 0,
                               f"{self.name} on the GPU")
                    torch.cuda.synchronize(index)
                    return (time.perf_counter() - t0) * 1e3 / n
                one = launch(1)  # loads the kernels and makes the temporaries
                one = launch(1)
                return launch(max(3, min(20, int(20.0 / max(one, 1e-3)))))
            except GopError:
                with _lock:
                    _diag()
                return None
        return self.settle_auto(graph, ext, time_fn)

    def bind(self, graph, *inputs, out=None, schedule=None, target=None, **extents):
        """Checks a call once and returns it as a callable that launches it
        again on the same CUDA tensors (their current contents), in the
        current stream or `stream=`: the per-call cost is then one C call.
        It keeps the tensors alive. CUDA tensors only."""
        if not isinstance(graph, Graph):
            raise TypeError(f"{self.name}: the first argument must be a gop.Graph")
        if len(inputs) != len(self.inputs):
            raise TypeError(f"{self.name} takes {len(self.inputs)} input(s), got {len(inputs)}")
        if out is not None and not isinstance(out, (list, tuple)):
            out = (out,)
        ops = [_inspect(s, x, self.name, "input") for s, x in zip(self.inputs, inputs)]
        outs = [None] * len(self.outputs) if out is None else [
            _inspect(s, x, self.name, "output") for s, x in zip(self.outputs, out)]
        if not all(o.cuda for o in ops + [o for o in outs if o is not None]):
            raise ValueError(f"{self.name}.bind takes CUDA tensors only")
        ext = self._extents(graph, ops, outs, extents)
        schedule = _auto.named(_auto.cuda_default(_can_compile()) if schedule is None
                               else schedule)
        if schedule == "auto":
            schedule = self._auto_cuda(graph, ops, outs, ext, target, None)
        r, all_ops, res, index = self._cuda_plan(graph, ops, outs, ext, schedule, target)
        ptrs = (ctypes.c_uint64 * len(all_ops))(*[o.ptr for o in all_ops])
        outv = [o.obj for o in res]
        return BoundCall(self, r[0], ptrs, index, [o.obj for o in all_ops],
                         outv[0] if len(outv) == 1 else tuple(outv))

    def _call_host(self, graph, ops, outs, ext, schedule, target):
        like = ops[0] if ops else next(o for o in outs if o is not None)
        res = self._finish(outs, ops, graph, ext, like)
        with _lock:
            r = self._run(graph, schedule, target, _lib.GOP_DEVICE_INTERP, ext)
            for o in ops + res:
                n = 1
                for d in o.obj.shape:
                    n *= d
                _check(lib.gop_run_bind(r[0], _b(o.spec.name), o.ptr, n) == 0,
                       f"{self.name}: {o.spec.name}")
            _check(lib.gop_run_exec(r[0]) == 0, f"{self.name} on the interpreter")
        outv = [o.obj for o in res]
        return outv[0] if len(outv) == 1 else tuple(outv)

    def prepare(self, graph, schedule=None, target=None, **extents):
        """Compiles (or finds in the cache) this operator's kernels, and with a
        GPU prepares them on `graph`; without one, fills the kernel cache
        (how packs are made for a machine without LLVM)."""
        with _lock:
            ext = {**{s: 1 for s in self.extents}, **extents}
            # "auto": every schedule it may run (the pick, and the default
            # mapping where the first GPU call times the pick against it)
            cands = self.auto_candidates(graph, **ext) if schedule == "auto" else [schedule]
            for s in cands:
                r = self._run(graph, s, target, _lib.GOP_DEVICE_GPU, ext)
                _check(lib.gop_run_prepare(r[0]) == 0, f"{self.name}: prepare")


    # -- gradients --

    def grad(self, wrt=None, joint=True):
        """The backward of this operator for the inputs `wrt` (names, in that
        order; default: every floating-point input), derived in the IR
        (docs/autodiff.md): a Gradient, made once per (wrt, joint). joint
        (the default): one operator for all of them, sharing what they
        recompute; False: one operator per input. A derivation the IR cannot
        express raises GopError with the reason."""
        if wrt is None:
            wrt = tuple(s.name for s in self.inputs if s.dtype.startswith("f"))
        elif isinstance(wrt, str):
            wrt = tuple(w.strip() for w in wrt.split(",") if w.strip())
        else:
            wrt = tuple(wrt)
        key = (wrt, bool(joint))
        g = self._grads.get(key)
        if g is None:
            with _lock:  # derived once, whichever thread asks first
                g = self._grads.get(key)
                if g is None:
                    g = self._grads[key] = Gradient(self, wrt, bool(joint))
        return g

    def extents_of(self, graph, arrays, given=None, adjoints=False):
        """The extents (F, H ...) that `arrays`, a {tensor name: array} of
        this operator's inputs and outputs (adjoints=True: of the outputs'
        adjoints, named dY in messages), give by their shapes, merged with
        `given`; ValueError on a shape that disagrees."""
        ext = dict(given or {})
        specs = self._by_name
        for name, x in arrays.items():
            if x is None:
                continue
            s, shape = specs[name], tuple(x.shape)
            label = "d" + name if adjoints else name
            if len(shape) != len(s.dims):
                raise ValueError(f"{self.name}: {label} must have {len(s.dims)} dimension(s) "
                                 f"{s!r}, got shape {list(shape)}")
            for d, n in zip(s.dims, shape):
                if isinstance(d, str) and d not in _DOMAINS and ext.setdefault(d, n) != n:
                    raise ValueError(f"{self.name}: extent {d} is {ext[d]} but {label} has "
                                     f"shape {list(shape)}")
        return ext

    def f64(self, graph, *inputs, **extents):
        """Runs the operator as written on the reference interpreter in double
        precision: inputs are float64 NumPy arrays (C-contiguous), outputs
        new float64 arrays. The oracle of the gradient checks (finite
        differences need more than float32's precision)."""
        import numpy as np
        if not isinstance(graph, Graph):
            raise TypeError(f"{self.name}.f64: the first argument must be a gop.Graph")
        if len(inputs) != len(self.inputs):
            raise TypeError(f"{self.name} takes {len(self.inputs)} input(s) "
                            f"({', '.join(s.name for s in self.inputs)}), got {len(inputs)}")
        xs = []
        for s, x in zip(self.inputs, inputs):
            if not isinstance(x, np.ndarray) or x.dtype != np.float64:
                raise TypeError(f"{self.name}.f64: input {s.name} must be a float64 NumPy "
                                f"array, got {getattr(x, 'dtype', type(x).__name__)}")
            xs.append(np.ascontiguousarray(x))
        ext = self.extents_of(graph, {s.name: x for s, x in zip(self.inputs, xs)}, extents)
        missing = [e for e in self.extents if e not in ext]
        if missing:
            raise ValueError(f"{self.name}: extent {missing[0]} is not known from the inputs: "
                             f"pass {missing[0]}=N")
        for s, x in zip(self.inputs, xs):
            if tuple(x.shape) != s.shape(graph, ext):
                raise ValueError(f"{self.name}: {s.name} {s!r} must have shape "
                                 f"{list(s.shape(graph, ext))} on this graph, got "
                                 f"{list(x.shape)}")
        outs = [np.zeros(s.shape(graph, ext), dtype=np.float64) for s in self.outputs]
        bufs = (ctypes.c_void_p * (len(xs) + len(outs)))(
            *[a.ctypes.data for a in xs + outs])
        with _lock:
            r = self._run(graph, None, None, _lib.GOP_DEVICE_INTERP, ext)
            _check(lib.gop_run_exec_f64(r[0], bufs, len(bufs)) == 0,
                   f"{self.name} on the interpreter (f64)")
        return outs[0] if len(outs) == 1 else tuple(outs)


def _is_torch(x):
    """Whether x's type is from torch (by its module)."""
    t = type(x)
    k = _KIND_OF_TYPE.get(t)
    return k == "torch" if k is not None else t.__module__.startswith("torch")


def _wants_grad(inputs):
    """True when an input is a torch tensor that requires grad, with grad
    mode on (torch imported only where the caller already uses it)."""
    for x in inputs:
        if _is_torch(x) and getattr(x, "requires_grad", False):
            return _torch().is_grad_enabled()
    return False


def _torch_f64(inputs):
    """True when every input is a CPU float64 torch tensor."""
    if not inputs:
        return False
    for x in inputs:
        if not _is_torch(x):
            return False
    return all(str(x.dtype) == "torch.float64" and not x.is_cuda for x in inputs)


class Gradient:
    """The backward of an operator for chosen inputs, derived in the IR
    (Operator.grad). Attributes: op (the forward Operator), wrt (input
    names), operators (the derived Operators: one joint, or one per input),
    reads_inputs / reads_outputs (forward tensor names the backward reads:
    what a training step must keep from the forward).

    g(graph, inputs, outputs, adjoints, schedule=None, stream=None) returns
    the gradients of the inputs in `wrt`, in that order (a tuple), from the
    forward's inputs and outputs (sequences in signature order; None where
    the backward does not read them) and the adjoints of the outputs (None:
    zero). The arrays decide where it runs, as for any operator call: NumPy
    arrays on the interpreter, torch CUDA tensors on the GPU in the current
    stream. g.f64(graph, inputs, outputs, adjoints) runs it in double
    precision on the interpreter (float64 NumPy arrays)."""

    def __init__(self, op, wrt, joint):
        if not wrt:
            raise ValueError(f"{op.name}.grad: no input to differentiate against")
        self.op, self.wrt, self.joint = op, tuple(wrt), joint and len(wrt) > 1
        spec = _b(",".join(wrt))
        with _lock:
            h = (lib.gop_grad_joint if self.joint else lib.gop_grad)(op._h, spec)
            self.library = _library.Library(h, f"{op.name}.grad({', '.join(wrt)})")
        self.operators = list(self.library)
        fin = {s.name: i for i, s in enumerate(op.inputs)}
        fout = {s.name: i for i, s in enumerate(op.outputs)}
        # each derived operator: (it, its sources as (0 inputs, 1 outputs or
        # 2 adjoints; index), where its outputs go among wrt)
        self._plans = []
        reads_in, reads_out = set(), set()
        for g in self.operators:
            adj = {}
            for j, o in enumerate(op.outputs):
                a = lib.gop_grad_adjoint(g._h, _b(o.name))
                if a:
                    adj[a.decode()] = j
            srcs = []
            for t in g.inputs:
                if t.name in adj:
                    srcs.append((2, adj[t.name]))
                elif t.name in fin:
                    srcs.append((0, fin[t.name]))
                    reads_in.add(t.name)
                elif t.name in fout:
                    srcs.append((1, fout[t.name]))
                    reads_out.add(t.name)
                else:
                    raise GopError(f"{g.name}: input {t.name} is neither a tensor of "
                                   f"{op.name} nor an adjoint of one")
            dst = []
            for t in g.outputs:
                k = [i for i, w in enumerate(self.wrt)
                     if (lib.gop_grad_adjoint(g._h, _b(w)) or b"").decode() == t.name]
                if len(k) != 1:
                    raise GopError(f"{g.name}: output {t.name} is not the gradient of one of "
                                   f"{', '.join(self.wrt)}")
                dst.append(k[0])
            self._plans.append((g, tuple(srcs), dst))
        self.reads_inputs = [s.name for s in op.inputs if s.name in reads_in]
        self.reads_outputs = [s.name for s in op.outputs if s.name in reads_out]
        # for gop.autograd: the forward's inputs and outputs to save (by
        # index), and the index among the inputs of each of wrt
        self._saved_idx = ([i for i, s in enumerate(op.inputs) if s.name in reads_in],
                           [j for j, s in enumerate(op.outputs) if s.name in reads_out])
        index = {s.name: i for i, s in enumerate(op.inputs)}
        self._wrt_idx = tuple(index.get(w) for w in self.wrt)

    def __repr__(self):
        return (f"<gop gradient of {self.op.name} wrt {', '.join(self.wrt)}: "
                f"{', '.join(g.name for g in self.operators)}>")

    def _operands(self, graph, inputs, outputs, adjoints, zeros):
        op = self.op
        inputs = list(inputs) if inputs is not None else [None] * len(op.inputs)
        outputs = list(outputs) if outputs is not None else [None] * len(op.outputs)
        adjoints = list(adjoints)
        for what, seq, specs in (("inputs", inputs, op.inputs), ("outputs", outputs, op.outputs),
                                 ("adjoints", adjoints, op.outputs)):
            if len(seq) != len(specs):
                raise TypeError(f"{op.name} gradient: {len(specs)} {what} "
                                f"({', '.join(s.name for s in specs)}), got {len(seq)}")
        arrays = dict(zip(op._in_names, inputs))
        arrays.update(zip(op._out_names, outputs))
        ext = op.extents_of(graph, arrays)
        ext = op.extents_of(graph, dict(zip(op._out_names, adjoints)), ext, adjoints=True)
        like = next((x for x in adjoints + inputs + outputs if x is not None), None)
        if like is None:
            raise ValueError(f"{op.name} gradient: no array given")
        for j, s in enumerate(op.outputs):
            if adjoints[j] is None:
                adjoints[j] = zeros(s.shape(graph, ext), like)
        return inputs, outputs, adjoints, ext

    def _each(self, inputs, outputs, adjoints):
        """Each derived operator, its arguments and where its outputs go; a
        ValueError naming an argument not given (None)."""
        seqs = (inputs, outputs, adjoints)
        for g, where, dst in self._plans:
            args = [seqs[w][i] for w, i in where]
            if any(a is None for a in args):
                w, i = where[[a is None for a in args].index(True)]
                which = (self.op.inputs if w == 0 else self.op.outputs)[i].name
                raise ValueError(f"{g.name} reads {'d' if w == 2 else ''}{which}: pass it")
            yield g, args, dst

    def __call__(self, graph, inputs, outputs, adjoints, schedule=None, stream=None):
        inputs, outputs, adjoints, ext = self._operands(graph, inputs, outputs, adjoints,
                                                        _zeros)
        res = [None] * len(self.wrt)
        for g, args, dst in self._each(inputs, outputs, adjoints):
            kw = {e: ext[e] for e in g.extents if e in ext}
            y = g(graph, *args, schedule=schedule, stream=stream, **kw)
            if isinstance(y, tuple):
                for k, v in zip(dst, y):
                    res[k] = v
            else:
                res[dst[0]] = y
        return tuple(res)

    def f64(self, graph, inputs, outputs, adjoints):
        import numpy as np
        inputs, outputs, adjoints, ext = self._operands(
            graph, inputs, outputs, adjoints,
            lambda shape, like: np.zeros(shape, dtype=np.float64))
        res = [None] * len(self.wrt)
        for g, args, dst in self._each(inputs, outputs, adjoints):
            kw = {e: ext[e] for e in g.extents if e in ext}
            y = g.f64(graph, *args, **kw)
            y = y if isinstance(y, tuple) else (y,)
            for k, v in zip(dst, y):
                res[k] = v
        return tuple(res)

    def prepare(self, graph, schedule=None, target=None, **extents):
        """Operator.prepare for each derived operator (the kernel cache)."""
        for g in self.operators:
            g.prepare(graph, schedule=schedule, target=target,
                      **{e: v for e, v in extents.items() if e in g.extents})


def _zeros(shape, like):
    if _is_torch(like):
        torch = _torch()
        return torch.zeros(shape, dtype=torch.float32, device=like.device)
    import numpy as np
    return np.zeros(shape, dtype=np.float32)


class BoundCall:
    """An operator call checked once (Operator.bind): calling it launches the
    kernels again on the same tensors and returns the outputs."""

    def __init__(self, op, run, ptrs, index, keep, result):
        self.op, self._run, self._ptrs, self._index = op, run, ptrs, index
        self._keep, self.result = keep, result

    def __call__(self, stream=None):
        s = _stream_handle(stream, self._index)
        if lib.gop_run_launch_ptrs(self._run, self._ptrs, len(self._ptrs), s) != 0:
            with _lock:
                raise GopError(f"{self.op.name} on the GPU:\n{_diag()}")
        return self.result


_compiles = None
_GPU = _lib.GOP_DEVICE_GPU


def _can_compile():
    """Whether this libgop has LLVM (gop_can_compile), asked once."""
    global _compiles
    if _compiles is None:
        _compiles = bool(lib.gop_can_compile())
    return _compiles


_raw_stream = None  # torch._C._cuda_getCurrentRawStream, or False where torch lacks it


def _stream_handle(stream, index):
    """The CUstream to launch in: `stream` (a torch.cuda.Stream or a raw
    handle), else torch's current stream on device `index`."""
    global _raw_stream
    if stream is None:
        raw = _raw_stream
        if raw is None:  # looked up once
            raw = _raw_stream = getattr(_torch()._C, "_cuda_getCurrentRawStream",
                                        None) or False
        # the raw handle: no Stream object made
        return raw(index) if raw else _torch().cuda.current_stream(index).cuda_stream
    return stream.cuda_stream if hasattr(stream, "cuda_stream") else stream


_device_ordinal = None


def _gop_device():
    global _device_ordinal
    if _device_ordinal is None:
        try:
            _device_ordinal = int(os.environ.get("GOP_CUDA_DEVICE") or 0)
        except ValueError:
            _device_ordinal = 0
    return _device_ordinal


_libc_free = ctypes.CDLL(None).free
_libc_free.argtypes = [ctypes.c_void_p]
_libc_free.restype = None

# Last: library.py builds Operators, so it imports this module first.
from . import library as _library  # noqa: E402
