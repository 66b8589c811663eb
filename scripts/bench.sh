#!/usr/bin/env bash
# One command for the benchmarks: configure and build them in Release (into build-bench or
# the directory given as $1), run recur_bench and, when LibTorch was found, its peer
# recur_bench_torch with the same thread settings, then the LSTM memory programs (one
# process per configuration, so that each peak resident set is its own), and print the
# comparison tables.
#   scripts/bench.sh [build-dir] [extra Google Benchmark flags, e.g. --benchmark_filter=matmul]
# BENCH_REPETITIONS (default 5) sets the repetitions, run in random order; the table shows
# the fastest repetition of each benchmark and the spread (see scripts/bench_table.py).
# BENCH_MEMORY=0 skips the memory programs (about half a minute).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-bench}"
shift || true

generator=()
if [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DRECUR_BUILD_BENCH=ON >/dev/null
targets=(recur_bench)
memory_targets=(recur_lstm_memory)
if cmake --build "$build" --target help | grep -q recur_bench_torch; then
  targets+=(recur_bench_torch)
  memory_targets+=(recur_lstm_memory_torch)
fi
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" "${memory_targets[@]}"

# Identical threading on both sides: OpenBLAS with 2 threads (the binaries also set it),
# LibTorch's pool with 2, and OpenMP workers that sleep rather than spin when idle.
export OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE
flags=(--benchmark_repetitions="${BENCH_REPETITIONS:-5}" --benchmark_enable_random_interleaving=true
       --benchmark_display_aggregates_only=true --benchmark_out_format=json "$@")
out="$build/bench-results"
mkdir -p "$out"
jsons=()
for t in "${targets[@]}"; do
  echo "== $t"
  "$build/bench/$t" "${flags[@]}" --benchmark_out="$out/$t.json"
  jsons+=("$out/$t.json")
done

memory=()
if [[ "${BENCH_MEMORY:-1}" != 0 ]]; then
  echo "== LSTM memory, one process per configuration"
  : >"$out/lstm_memory.jsonl"
  for mode in full_tape checkpoint_auto; do "$build/bench/recur_lstm_memory" "$mode" >>"$out/lstm_memory.jsonl"; done
  if [[ " ${memory_targets[*]} " == *" recur_lstm_memory_torch "* ]]; then
    "$build/bench/recur_lstm_memory_torch" full_tape >>"$out/lstm_memory.jsonl"
  fi
  cat "$out/lstm_memory.jsonl"
  memory=(--memory "$out/lstm_memory.jsonl")
fi

echo
echo "== results (JSON in $out)"
/usr/bin/python3 scripts/bench_table.py "${jsons[@]}" "${memory[@]}"
