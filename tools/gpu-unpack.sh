#!/usr/bin/env bash
# Unpacks what tools/gpu-prepare.sh compressed in a carry folder (the
# static binaries gopc.xz and gop.xz, the whole operator space's kernel
# packs packs-all.tar.xz), on the GPU machine: with xz when it is there,
# else with Python's lzma. Usage: tools/gpu-unpack.sh CARRY
set -euo pipefail
carry=${1:?usage: tools/gpu-unpack.sh CARRY}
for b in gopc gop; do
  [ -f "$carry/$b.xz" ] && [ ! -x "$carry/$b" ] || continue
  if command -v xz >/dev/null; then
    xz -dc "$carry/$b.xz" > "$carry/$b.tmp"
  else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
      "$carry/$b.xz" "$carry/$b.tmp"
  fi
  chmod +x "$carry/$b.tmp" && mv "$carry/$b.tmp" "$carry/$b"
done
if [ -f "$carry/packs-all.tar.xz" ] && [ ! -f "$carry/packs-all/list.txt" ]; then
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$carry/packs-all.tar.xz" "$carry"
fi
