#!/usr/bin/env bash
# One command for the benchmarks: configure and build them in Release (into build-bench or
# the directory given), run recur_bench and, when LibTorch was found, its peer
# recur_bench_torch, and with the RNN suite, when oneDNN was found, recur_bench_onednn, all
# with the same thread settings, then the LSTM memory programs (one process per
# configuration, so that each peak resident set is its own), and print the comparison tables.
#   scripts/bench.sh [--rnn|--all] [build-dir] [extra Google Benchmark flags, e.g. --benchmark_filter=matmul]
# Without an option: the recording-overhead, matmul, scan and LSTM-recomputation benchmarks.
# --rnn: only the RNN suite (bench/rnn_suite.hpp: Elman RNN, LSTM and GRU, configurations
# S, M, L and TBPTT, recur's layers against LibTorch's manual loop and torch::nn and against
# oneDNN's RNN primitives), the 2048^3 sgemm peak its L rows are measured against, and the
# memory programs of the nn::LSTM layer, LibTorch's loops and oneDNN's LSTM: about 7 minutes
# after the build on a quiet 2-core machine with the default rounds without oneDNN's peer,
# more with it (twice that when other jobs take the cores). --all: both, about 10 minutes
# without oneDNN.
# LibTorch has two columns when recur moved OpenBLAS to better kernels than the ones it
# picked itself (an AVX-512 CPU OpenBLAS does not recognise, docs/performance.md): as
# installed, and once more with OPENBLAS_CORETYPE set to recur's choice. Where recur left
# OpenBLAS alone both sides already run on the same kernels and the table says so.
# BENCH_TORCH_CORETYPE=<core> forces that second LibTorch run (e.g. to check it).
# The sides run in alternating rounds (recur, LibTorch, oneDNN, oneDNN, LibTorch, recur, ...),
# so that a slow spell of a shared machine does not fall on one side only. BENCH_ROUNDS (default 3)
# rounds of BENCH_REPETITIONS (default 2) repetitions each, run in random order; the table
# shows the fastest repetition of each benchmark over all rounds and the spread (see
# scripts/bench_table.py).
# BENCH_MEMORY=0 skips the memory programs (about half a minute).
set -euo pipefail
cd "$(dirname "$0")/.."
suite=default
case "${1:-}" in
  --rnn) suite=rnn; shift ;;
  --all) suite=all; shift ;;
esac
build="${1:-build-bench}"
shift || true
# Which benchmarks (a filter given among the extra flags comes later and wins) and which
# memory configurations: "program mode" pairs, the peers' only when they were built.
case "$suite" in
  default) filter='-rnn/'
           memory_runs=("recur_lstm_memory full_tape" "recur_lstm_memory checkpoint_auto"
                        "recur_lstm_memory_torch full_tape") ;;
  rnn) filter='^(rnn/|matmul/sgemm_peak)'
       memory_runs=("recur_lstm_memory layer_full_bptt" "recur_lstm_memory_torch manual_loop"
                    "recur_lstm_memory_torch nn_lstm" "recur_lstm_memory_onednn lstm_full_bptt") ;;
  all) filter='.'
       memory_runs=("recur_lstm_memory full_tape" "recur_lstm_memory checkpoint_auto"
                    "recur_lstm_memory layer_full_bptt" "recur_lstm_memory_torch full_tape"
                    "recur_lstm_memory_torch manual_loop" "recur_lstm_memory_torch nn_lstm"
                    "recur_lstm_memory_onednn lstm_full_bptt") ;;
esac

generator=()
if [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DRECUR_BUILD_BENCH=ON >/dev/null
targets=(recur_bench)
memory_targets=(recur_lstm_memory)
if cmake --build "$build" --target help | grep -q recur_bench_torch; then
  targets+=(recur_bench_torch)
  memory_targets+=(recur_lstm_memory_torch)
fi
# oneDNN's peer has only the RNN suite.
if [[ $suite != default ]] && cmake --build "$build" --target help | grep -q recur_bench_onednn; then
  targets+=(recur_bench_onednn)
  memory_targets+=(recur_lstm_memory_onednn)
fi
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" "${memory_targets[@]}"

# Identical threading on all sides: OpenBLAS with 2 threads (the binaries also set it),
# LibTorch's pool and oneDNN's OpenMP with 2, and OpenMP workers that sleep rather than spin
# when idle. BENCH_WAIT_POLICY=default leaves OMP_WAIT_POLICY unset instead (OpenMP's own
# default: idle workers spin a while first; oneDNN is much faster at M and TBPTT so, see
# docs/performance.md), any other value is passed on.
export OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2
if [[ "${BENCH_WAIT_POLICY:-PASSIVE}" == default ]]; then unset OMP_WAIT_POLICY; else export OMP_WAIT_POLICY="${BENCH_WAIT_POLICY:-PASSIVE}"; fi
flags=(--benchmark_filter="$filter" --benchmark_repetitions="${BENCH_REPETITIONS:-2}"
       --benchmark_enable_random_interleaving=true --benchmark_display_aggregates_only=true
       --benchmark_out_format=json "$@")
out="$build/bench-results"
tag=$([[ $suite == default ]] || echo "-$suite")  # results of each suite in files of their own
mkdir -p "$out"
declare -A rounds_of  # target -> its rounds' JSON files, comma-separated
order=("${targets[@]}")
best_core="${BENCH_TORCH_CORETYPE:-$("$build/bench/recur_bench" --switched_blas_core)}"
if [[ -n $best_core && " ${targets[*]} " == *" recur_bench_torch "* ]]; then
  order+=(recur_bench_torch_best)  # a pseudo-target: recur_bench_torch on OPENBLAS_CORETYPE=$best_core
fi
for ((round = 1; round <= ${BENCH_ROUNDS:-3}; round++)); do
  for t in "${order[@]}"; do
    echo "== $t, round $round"
    file="$out/$t$tag-round$round.json"
    if [[ $t == recur_bench_torch_best ]]; then
      OPENBLAS_CORETYPE="$best_core" "$build/bench/recur_bench_torch" "${flags[@]}" --benchmark_out="$file"
    else
      "$build/bench/$t" "${flags[@]}" --benchmark_out="$file"
    fi
    rounds_of[$t]="${rounds_of[$t]:+${rounds_of[$t]},}$file"
  done
  order=($(printf '%s\n' "${order[@]}" | tac))  # the side that ran last runs first next round
done
jsons=("${rounds_of[recur_bench]}")
if [[ -n "${rounds_of[recur_bench_torch]:-}" ]]; then jsons+=("${rounds_of[recur_bench_torch]}"); fi
if [[ -n "${rounds_of[recur_bench_onednn]:-}" ]]; then jsons+=(--onednn "${rounds_of[recur_bench_onednn]}"); fi
if [[ -n "${rounds_of[recur_bench_torch_best]:-}" ]]; then jsons+=(--torch-best "${rounds_of[recur_bench_torch_best]}"); fi

memory=()
if [[ "${BENCH_MEMORY:-1}" != 0 ]]; then
  echo "== LSTM memory, one process per configuration"
  memory_out="$out/lstm_memory$tag.jsonl"
  : >"$memory_out"
  for run in "${memory_runs[@]}"; do
    read -r program mode <<<"$run"
    if [[ " ${memory_targets[*]} " == *" $program "* ]]; then
      "$build/bench/$program" "$mode" >>"$memory_out"
    fi
  done
  cat "$memory_out"
  memory=(--memory "$memory_out")
fi

echo
echo "== results (JSON in $out)"
/usr/bin/python3 scripts/bench_table.py "${jsons[@]}" "${memory[@]}"
