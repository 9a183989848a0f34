#!/usr/bin/env python3
"""Unpacks what a device call carried in xz (bench/results/*/ scripts).

    python3 bench/results/2026-11-27-H100-aggregation-groups64/experiments/unpack_carry.py DIR

Under DIR, every NAME.tar.xz is extracted beside itself and every other
NAME.xz decompressed to NAME (an ELF executable keeps its execute bit), so
that binaries and Matrix Market graphs fit the carry's 64 MiB. Files
already unpacked are left as they are. The earlier scripts spelled
this out each time.
"""
import glob
import lzma
import os
import shutil
import sys
import tarfile


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        sys.exit("usage: unpack_carry.py DIR (a folder the call carried)")
    for f in sorted(glob.glob(os.path.join(argv[1], "**", "*.xz"), recursive=True)):
        if f.endswith(".tar.xz"):
            with lzma.open(f) as i, tarfile.open(fileobj=i) as t:
                # the "data" filter (Python 3.12, backported to 3.8+ security
                # releases) refuses absolute paths and links out of the folder
                safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                t.extractall(os.path.dirname(f), **safe)
            continue
        out = f[:-3]
        if os.path.exists(out):
            continue
        with lzma.open(f) as i, open(out + ".part", "wb") as o:
            shutil.copyfileobj(i, o)
        with open(out + ".part", "rb") as o:
            if o.read(4) == b"\x7fELF":
                os.chmod(out + ".part", 0o755)
        os.replace(out + ".part", out)


if __name__ == "__main__":
    main(sys.argv)
