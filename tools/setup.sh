#!/usr/bin/env bash
# Installs everything gop needs on Debian 12 (run as root; uses sudo when not root).
# Idempotent: packages already present are left alone.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config flex bison check
      llvm-16-dev zlib1g-dev libsqlite3-dev libreadline-dev libzstd-dev
      libxml2-dev libedit-dev libffi-dev libncurses-dev libsubunit-dev python3
      python3-numpy python3-scipy # the Python package's tests (tests/python)
      python3-pip python3-venv python3-setuptools python3-wheel # its wheel (tests/install/wheel.sh)
      libxgboost-dev  # the tuner's learned predictor (dlopen'ed: optional at run time)
      libmetis-dev    # the metis vertex order (graph/reorder.c)
      clang-14 libclang-rt-14-dev) # the libFuzzer harnesses (tests/fuzz, docs/fuzzing.md)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
