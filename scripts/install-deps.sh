#!/usr/bin/env bash
# Installs the Debian packages recur needs that are missing (run as root on Debian 12).
# Usage: scripts/install-deps.sh [--bench|--test]   (--bench adds LibTorch and oneDNN, the
# benchmark peers; --test adds clang for the fuzz harnesses and doxygen for the API reference)
set -euo pipefail
packages=(g++ cmake ninja-build xtensor-dev libxtensor-blas-dev libxsimd-dev libopenblas-dev
          libboost-dev libgtest-dev libbenchmark-dev libzip-dev libcli11-dev ccache
          libonnx-dev libprotobuf-dev)  # ONNX: the recur_onnx target (ops/onnx/)
# The test command also builds the loaders' libFuzzer harnesses, which need clang, and the
# API reference, which needs doxygen.
if [[ "${1:-}" == "--test" ]]; then packages+=(clang libclang-rt-14-dev doxygen); fi
if [[ "${1:-}" == "--bench" ]]; then packages+=(libtorch-dev libdnnl-dev); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
