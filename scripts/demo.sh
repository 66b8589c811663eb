#!/usr/bin/env bash
# The README's first command: install what is missing, build in Release, run the main demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRECUR_BUILD_BENCH=OFF
cmake --build build -j"$(nproc)" --target recur_char_lstm
# Writes char_lstm.npz (a checkpoint: add --resume to continue) and char_lstm_loss.svg here.
./build/examples/recur_char_lstm "$@"
