#!/usr/bin/env bash
# Revolve's memory/time curve: the LSTM-like scan of bench/lstm_recur.hpp (batch 16,
# input 64, hidden 256, float32) at T = 1000 and T = 10000 steps, one training step with the
# full tape, with auto_sqrt, and with revolve for s snapshots from 2 to sqrt(T) (from 10 at T = 10000). Each point
# runs in its own process (bench/revolve_curve.cpp); then scripts/revolve_curve.py prints the
# table and writes docs/figures/revolve_curve.svg.
#   scripts/revolve_curve.sh [build-dir]     (the bench build; about 15 minutes, run it alone)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-bench}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRECUR_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --target recur_revolve_curve
out="$build/revolve_curve.jsonl"
: >"$out"
run() { "$build/bench/recur_revolve_curve" "$@" | tee -a "$out"; }
for s in full sqrt s2 s3 s4 s5 s6 s8 s11 s16 s22 s31; do run 1000 "$s"; done
# Below s = 10 a point at T = 10000 replays over 60,000 steps (minutes each): the curve starts there.
for s in full sqrt s10 s20 s50 s100; do run 10000 "$s"; done
python3 scripts/revolve_curve.py "$out" docs/figures/revolve_curve.svg
