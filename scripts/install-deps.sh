#!/usr/bin/env bash
# Installs the Debian packages recur needs that are missing (run as root on Debian 12);
# Open MPI is for recur::distributed and its tests, the ONNX library for recur::onnx,
# libxsmm and oneDNN for the per-step recurrent products, and OpenBLAS's OpenMP build, whose
# threads are oneDNN's too (cmake/recurOpenblasOpenmp.cmake).
# Usage: scripts/install-deps.sh [--bench|--test]   (--bench adds LibTorch, the other
# benchmark peer besides oneDNN; --test adds clang for the fuzz harnesses and doxygen for the API reference)
set -euo pipefail
packages=(g++ cmake ninja-build xtensor-dev libxtensor-blas-dev libxsimd-dev libopenblas-dev
          libboost-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev libzip-dev libcli11-dev ccache
          libopenmpi-dev openmpi-bin libonnx-dev libprotobuf-dev libxsmm-dev libdnnl-dev
          libopenblas-openmp-dev)
# The ONNX importer's conformance tests read the ONNX node tests of libonnx-testdata.
if [[ "${1:-}" == "--test" ]]; then packages+=(libonnx-testdata); fi
# The test command also builds the loaders' libFuzzer harnesses, which need clang, and the
# API reference, which needs doxygen.
if [[ "${1:-}" == "--test" ]]; then packages+=(clang libclang-rt-14-dev doxygen); fi
# It also builds a consumer with a plain Makefile through pkg-config.
if [[ "${1:-}" == "--test" ]]; then packages+=(make pkgconf); fi
if [[ "${1:-}" == "--bench" ]]; then packages+=(libtorch-dev); fi
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
