#!/usr/bin/env bash
# The README's first command: install what is missing, build in Release, run the main demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRECUR_BUILD_BENCH=OFF
cmake --build build -j"$(nproc)" --target recur_demo
./build/examples/recur_demo "$@"
