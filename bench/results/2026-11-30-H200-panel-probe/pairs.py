#!/usr/bin/env python3
"""The distinct (panel, source) pairs over the edges, panels of P = 2, 4, 8
consecutive destinations, of Matrix Market files (row = source, column =
destination, a symmetric file both ways, as gop reads them). Needs SciPy.
   python3 pairs.py GRAPH.mtx.gz ...
(the README's first table; for a renumbered graph, `gopc graph G --reorder
METHOD -o FILE.mtx` first)"""
import gzip
import sys

import numpy as np
import scipy.io as sio

for path in sys.argv[1:]:
    m = sio.mmread(gzip.open(path)).tocoo()
    src, dst = m.row.astype(np.int64), m.col.astype(np.int64)
    if sio.mminfo(gzip.open(path))[-1] == "symmetric":
        off = src != dst
        src, dst = np.concatenate([src, dst[off]]), np.concatenate([dst, src[off]])
    n = m.shape[0]
    print(path.split("/")[-1],
          " ".join(f"P={P}:{np.unique((dst // P) * n + src).size / len(src):.3f}" for P in (2, 4, 8)))
