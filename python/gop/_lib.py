"""ctypes bindings of libgop.so (include/gop.h): the only place that knows
the C API's signatures.

libgop.so is found, in order, at $GOP_LIBRARY, beside this file (where
`pip install ./python` puts it), then wherever the dynamic loader finds
libgop.so.0 (an installed gop: `cmake --install`).
"""
import ctypes
import ctypes.util
import os

c_int, c_int64, c_uint64, c_char_p, c_void_p, c_double, c_bool = (
    ctypes.c_int, ctypes.c_int64, ctypes.c_uint64, ctypes.c_char_p,
    ctypes.c_void_p, ctypes.c_double, ctypes.c_bool)
P = ctypes.POINTER


class ScheduleChoice(ctypes.Structure):
    _fields_ = [("schedule", ctypes.c_char * 128), ("source", c_int),
                ("model_us", c_double), ("measured_ms", c_double),
                ("candidates", c_int), ("note", ctypes.c_char * 256)]


class CacheStats(ctypes.Structure):
    _fields_ = [("memory_hits", c_int64), ("disk_hits", c_int64),
                ("compiled", c_int64), ("disk_writes", c_int64),
                ("entries", c_int)]


class CompileOptions(ctypes.Structure):
    _fields_ = [("schedule", c_char_p), ("target", c_char_p),
                ("dump_after", c_char_p), ("dump", c_void_p),
                ("index_bits", ctypes.c_int),  # 0: 32, or 64 with GOP_INDEX64=1
                ("csr_edges", ctypes.c_int)]  # 1: kernels for edge ids in CSR order


class CompileTimes(ctypes.Structure):
    _fields_ = [(n, c_double) for n in
                ("schedule_ms", "lower_ms", "llvm_build_ms", "llvm_opt_ms", "ptx_emit_ms")]


class RunStats(ctypes.Structure):
    _fields_ = [("on_gpu", c_bool), ("gpu_status", c_int),
                ("device", ctypes.c_char * 128), ("note", ctypes.c_char * 256),
                ("target", ctypes.c_char * 16), ("schedule", ctypes.c_char * 256),
                ("median_ms", c_double), ("min_ms", c_double),
                ("fewest_bytes", c_uint64), ("gbps", c_double),
                ("copy_gbps", c_double), ("bound_fraction", c_double),
                ("compile", CompileTimes), ("timed_calls", c_int)]


class GraphInfo(ctypes.Structure):
    _fields_ = [("num_vertices", c_int64), ("num_edges", c_int64),
                ("degree_mean", c_double), ("in_degree_std", c_double),
                ("in_degree_max", c_int64), ("out_degree_max", c_int64),
                ("isolated", c_int64), ("self_loops", c_int64), ("aes", c_double),
                ("locality", c_double), ("csr_edges", c_int)]


class DeviceGraph(ctypes.Structure):  # GopDeviceGraph
    _fields_ = [("num_vertices", c_int64), ("num_edges", c_int64), ("index_bits", c_int)] + \
        [(f, c_uint64) for f in ("src", "dst", "in_ptr", "in_eid", "in_src", "out_ptr",
                                 "out_eid", "out_dst", "in_deg", "out_deg")] + \
        [("in_degree_std", c_double), ("aes", c_double), ("in_degree_max", c_int64),
         ("out_degree_max", c_int64), ("isolated", c_int64), ("self_loops", c_int64),
         ("csr_edges", c_int)]


class GroupTable(ctypes.Structure):  # GopGroupTable
    _fields_ = [(f, c_int) for f in ("group_size", "distance", "classes", "threshold",
                                     "index_bits", "on_device", "order")] + \
        [("rows", c_int64), ("unowned_count", c_int64), ("class_rows", c_int64 * 8),
         ("class_min", ctypes.c_int32 * 8)] + \
        [(f, c_uint64) for f in ("dst", "first", "end", "vptr", "vrow", "unowned")]


# GopGroupBuilder: (user, GopGroupTable *, why, why_size) -> 0 or -1
GroupBuilder = ctypes.CFUNCTYPE(c_int, c_void_p, ctypes.POINTER(GroupTable), c_void_p,
                                ctypes.c_size_t)


class TuneOptions(ctypes.Structure):
    _fields_ = [("budget_s", c_double), ("max_candidates", c_int), ("warmup", c_int),
                ("reps", c_int), ("db_path", c_char_p), ("target", c_char_p),
                ("check_edges", c_int64), ("stop", c_void_p), ("progress", c_void_p),
                ("progress_ctx", c_void_p)]


class TuneEntry(ctypes.Structure):
    _fields_ = [("schedule", ctypes.c_char * 128), ("status", c_int),
                ("median_ms", c_double), ("min_ms", c_double), ("gbps", c_double),
                ("bound_fraction", c_double), ("model_us", c_double), ("model_rank", c_int),
                ("stored", c_bool), ("why", ctypes.c_char * 400)]


class TuneReport(ctypes.Structure):
    _fields_ = [("gpu_status", c_int), ("device", ctypes.c_char * 128), ("candidates", c_int),
                ("tried", c_int), ("measured", c_int), ("wrong", c_int), ("failed", c_int),
                ("stored", c_int), ("interrupted", c_bool), ("out_of_budget", c_bool),
                ("checked_on_interpreter", c_bool), ("anchor", ctypes.c_char * 128),
                ("seconds", c_double), ("reference_s", c_double), ("copy_gbps", c_double),
                ("fewest_bytes", c_uint64), ("entries", P(TuneEntry)), ("nentries", c_int)]


# name: (restype, argtypes)
_SIGS = {
    "gop_context_new": (c_void_p, []),
    "gop_context_free": (None, [c_void_p]),
    "gop_diagnostics": (c_char_p, [c_void_p]),
    "gop_error_count": (c_int, [c_void_p]),
    "gop_clear_diagnostics": (None, [c_void_p]),
    "gop_compile_string": (c_void_p, [c_void_p, c_char_p, c_char_p]),
    "gop_compile_file": (c_void_p, [c_void_p, c_char_p]),
    "gop_stdlib": (c_void_p, [c_void_p]),
    "gop_model_layers": (c_void_p, [c_void_p]),
    "gop_module_num_ops": (c_int, [c_void_p]),
    "gop_module_op": (c_void_p, [c_void_p, c_int]),
    "gop_op_name": (c_char_p, [c_void_p]),
    "gop_op_signature": (c_char_p, [c_void_p]),
    "gop_op_retype": (c_void_p, [c_void_p, c_char_p]),
    "gop_op_doc": (c_char_p, [c_void_p]),
    "gop_op_num_schedules": (c_int, [c_void_p]),
    "gop_op_schedule_signature": (c_char_p, [c_void_p, c_int]),
    "gop_graph_open": (c_void_p, [c_void_p, c_char_p]),
    "gop_graph_from_arcs": (c_void_p, [c_void_p, c_int64, c_int64, c_void_p, c_void_p,
                                       c_char_p]),
    "gop_graph_info": (None, [c_void_p, P(GraphInfo)]),
    "gop_struct_size": (ctypes.c_size_t, [c_char_p]),
    "gop_graph_arcs": (ctypes.c_long, [c_void_p, P(c_void_p), P(c_void_p)]),
    "gop_graph_device_index_bits": (c_int, [c_int64, c_int64]),
    "gop_graph_from_device": (c_void_p, [c_void_p, P(DeviceGraph), c_char_p]),
    "gop_graph_set_group_builder": (c_int, [c_void_p, c_void_p, GroupBuilder, c_void_p]),
    "gop_graph_set_reversed": (c_int, [c_void_p, c_void_p, c_void_p]),
    "gop_graph_group_table": (c_int, [c_void_p, c_void_p, c_int, c_int, c_int, c_int,
                                      P(GroupTable)]),
    "gop_graph_free": (c_int, [c_void_p, c_void_p]),
    "gop_run_free": (None, [c_void_p]),
    "gop_run_new": (c_void_p, [c_void_p, c_void_p, c_void_p]),
    "gop_run_set_extent": (c_int, [c_void_p, c_char_p, c_int64]),
    "gop_run_num_tensors": (c_int, [c_void_p]),
    "gop_run_tensor_name": (c_char_p, [c_void_p, c_int]),
    "gop_run_tensor_is_output": (c_bool, [c_void_p, c_int]),
    "gop_run_tensor_shape": (c_int, [c_void_p, c_int, P(c_int64)]),
    "gop_run_bind": (c_int, [c_void_p, c_char_p, c_void_p, c_int64]),
    "gop_run_set_device": (None, [c_void_p, c_int]),
    "gop_run_set_compile": (c_int, [c_void_p, P(CompileOptions)]),
    "gop_run_set_timing": (None, [c_void_p, c_int, c_int]),
    "gop_run_exec": (c_int, [c_void_p]),
    "gop_run_stats": (P(RunStats), [c_void_p]),
    "gop_run_prepare": (c_int, [c_void_p]),
    "gop_run_launch_ptrs": (c_int, [c_void_p, P(c_uint64), c_int, c_void_p]),
    "gop_run_sync": (c_int, [c_void_p]),
    "gop_set_cache_dir": (c_int, [c_void_p, c_char_p]),
    "gop_cache_dir": (c_char_p, [c_void_p]),
    "gop_cache_clear": (c_int, [c_void_p]),
    "gop_cache_stats": (None, [c_void_p, P(CacheStats)]),
    "gop_kernel_key": (c_int, [c_void_p, P(CompileOptions), ctypes.c_char * 17]),
    "gop_can_compile": (c_int, []),
    "gop_device_status": (c_int, [c_char_p, ctypes.c_size_t]),
    "gop_choose_schedule": (c_int, [c_void_p, c_void_p, c_int64, c_char_p,
                                    P(ScheduleChoice)]),
    "gop_schedule_source_name": (c_char_p, [c_int]),
    "gop_tune": (c_int, [c_void_p, P(TuneOptions), P(TuneReport)]),
    "gop_grad": (c_void_p, [c_void_p, c_char_p]),
    "gop_grad_joint": (c_void_p, [c_void_p, c_char_p]),
    "gop_grad_adjoint": (c_char_p, [c_void_p, c_char_p]),
    "gop_grad_forward": (c_void_p, [c_void_p]),
    "gop_run_exec_f64": (c_int, [c_void_p, P(c_void_p), c_int]),
    "gop_emit": (c_void_p, [c_void_p, c_int]),  # malloc'ed: free with libc's free
}

GOP_DEVICE_AUTO, GOP_DEVICE_INTERP, GOP_DEVICE_GPU = 0, 1, 2
GOP_NO_SCHEDULE = 1  # gop_choose_schedule: no candidate (include/gop.h)
GOP_STAGE_IR = 1  # GopStage (include/gop.h)


def _candidates():
    env = os.environ.get("GOP_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    out = [os.path.join(here, n) for n in ("libgop.so", "libgop.so.0")]
    found = ctypes.util.find_library("gop")
    out += [found] if found else []
    out += ["libgop.so.0", "libgop.so"]
    return out


def load():
    errors = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            errors.append(f"{path}: no such file")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            errors.append(str(e))
            continue
        missing = [n for n in _SIGS if not hasattr(lib, n)]
        if missing:
            errors.append(f"{path}: an older libgop without {missing[0]}")
            continue
        for name, (res, args) in _SIGS.items():
            f = getattr(lib, name)
            f.restype, f.argtypes = res, args
        lib.path = path
        return lib
    raise ImportError("gop: cannot load libgop.so (set GOP_LIBRARY to its path, or "
                      "`pip install ./python` from the repository):\n  " +
                      "\n  ".join(errors))


lib = load()
