"""Graphs: opened from files or generators, or made from arcs, PyG's
edge_index or a SciPy matrix; held by libgop once."""
import ctypes
import os

from . import _lib
from ._context import GopError, _b, _ctx, _diag, _lock
from ._lib import lib


class Graph:
    """A graph: vertices 0..num_nodes-1 and arcs src -> dst, edge ids in the
    order given. Operators aggregate over the in-edges of each destination
    (PyG's source-to-target flow). Held by gop once; its device copy is made
    at the first GPU call and kept with it."""

    def __init__(self, handle, name=None):
        if not handle:
            raise GopError(f"graph: {_diag()}")
        self._h = handle
        info = _lib.GraphInfo()
        lib.gop_graph_info(handle, ctypes.byref(info))
        self.num_nodes, self.num_edges = info.num_vertices, info.num_edges
        self.info = {f: getattr(info, f) for f, _ in info._fields_}
        self.name = name
        self._memo = {}  # derived arrays (GCN weights, self-loop graph ...)

    @classmethod
    def open(cls, spec):
        """A Matrix Market or SNAP file (plain or .gz), or a generator:
        'rmat:SCALE:EDGEFACTOR[:SEED]', 'grid:WxH'."""
        with _lock:
            return cls(lib.gop_graph_open(_ctx, _b(os.fspath(spec))), str(spec))

    @classmethod
    def from_arcs(cls, src, dst, num_nodes=None, name=None):
        import numpy as np
        src = np.ascontiguousarray(np.asarray(src), dtype=np.int64)
        dst = np.ascontiguousarray(np.asarray(dst), dtype=np.int64)
        if src.ndim != 1 or src.shape != dst.shape:
            raise ValueError(f"graph: src and dst must be 1-D and of one length, got "
                             f"{src.shape} and {dst.shape}")
        if num_nodes is None:
            num_nodes = int(max(src.max(initial=-1), dst.max(initial=-1)) + 1)
        with _lock:
            h = lib.gop_graph_from_arcs(_ctx, num_nodes, src.size, src.ctypes.data,
                                        dst.ctypes.data, _b(name) if name else None)
            return cls(h, name)

    @classmethod
    def from_edge_index(cls, edge_index, num_nodes=None):
        """PyG's edge_index [2, E] (row 0 sources, row 1 targets; torch or
        NumPy, any integer dtype); edge ids follow its columns."""
        ei = edge_index
        if hasattr(ei, "detach"):
            ei = ei.detach().cpu().numpy()
        import numpy as np
        ei = np.asarray(ei)
        if ei.ndim != 2 or ei.shape[0] != 2:
            raise ValueError(f"edge_index must have shape [2, E], got {list(ei.shape)}")
        return cls.from_arcs(ei[0], ei[1], num_nodes, "edge_index")

    @classmethod
    def from_scipy(cls, matrix):
        """A SciPy sparse matrix: an arc row -> col for each stored entry
        (PyG's from_scipy_sparse_matrix convention), in COO order."""
        coo = matrix.tocoo()
        if coo.shape[0] != coo.shape[1]:
            raise ValueError(f"the matrix must be square, got {coo.shape}")
        return cls.from_arcs(coo.row, coo.col, coo.shape[0], "scipy")

    @property
    def edge_index(self):
        """[2, E] int64 NumPy array (a copy)."""
        import numpy as np
        s, d = ctypes.c_void_p(), ctypes.c_void_p()
        n = lib.gop_graph_arcs(self._h, ctypes.byref(s), ctypes.byref(d))
        out = np.empty((2, n), dtype=np.int64)
        if n:
            out[0] = np.ctypeslib.as_array(ctypes.cast(s, ctypes.POINTER(ctypes.c_int32)), (n,))
            out[1] = np.ctypeslib.as_array(ctypes.cast(d, ctypes.POINTER(ctypes.c_int32)), (n,))
        return out

    def gcn_norm(self):
        """PyG's gcn_norm with add_remaining_self_loops, for gop's
        gcn_propagate: (W, S) as float32 NumPy arrays, W[e] =
        1/sqrt(deg(src) deg(dst)) (0 on the graph's own self-loops, which the
        one added per vertex replaces), S[v] = 1/deg(v) (that self-loop's
        weight), deg counting in-edges plus the self-loop. Computed once."""
        if "gcn_norm" not in self._memo:
            import numpy as np
            ei = self.edge_index
            src, dst = ei[0], ei[1]
            loop = src == dst
            deg = np.ones(self.num_nodes, dtype=np.float64)
            np.add.at(deg, dst[~loop], 1.0)
            w = np.where(loop, 0.0, 1.0 / np.sqrt(deg[src] * deg[dst])).astype(np.float32)
            self._memo["gcn_norm"] = (w, (1.0 / deg).astype(np.float32))
        return self._memo["gcn_norm"]

    def with_self_loops(self):
        """This graph without its self-loops and with one added per vertex
        (PyG's remove_self_loops + add_self_loops, as GATConv does). Made once."""
        if "self_loops" not in self._memo:
            import numpy as np
            ei = self.edge_index
            keep = ei[0] != ei[1]
            v = np.arange(self.num_nodes, dtype=np.int64)
            self._memo["self_loops"] = Graph.from_arcs(
                np.concatenate([ei[0][keep], v]), np.concatenate([ei[1][keep], v]),
                self.num_nodes, f"{self.name or 'graph'} with self-loops")
        return self._memo["self_loops"]

    def __repr__(self):
        return f"Graph({self.name or ''} nodes={self.num_nodes}, edges={self.num_edges})"
