#!/usr/bin/env bash
# Data-parallel scaling on one machine (issue 13): for the char-LSTM and LSTM M, the same
# global batch trained by 2 ranks x 1 OpenBLAS thread (mpirun) and by 1 process x 2
# threads; prints each run's line and the throughput ratio. Needs a Release build with
# benchmarks (build-bench, as scripts/bench.sh makes it) and nothing else running.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build-bench/bench/recur_bench_data_parallel}
steps=${STEPS:-50}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rate() { sed -n 's/.* \([0-9.]*\) samples\/s.*/\1/p'; }
for model in char_lstm lstm_m; do
  two_ranks=$(OPENBLAS_NUM_THREADS=1 mpiexec -n 2 --bind-to core "$bin" --model $model --threads 1 --steps "$steps")
  two_threads=$(OPENBLAS_NUM_THREADS=2 "$bin" --model $model --threads 2 --steps "$steps")
  echo "$two_ranks"
  echo "$two_threads"
  awk -v a="$(echo "$two_ranks" | rate)" -v b="$(echo "$two_threads" | rate)" -v m=$model \
    'BEGIN { printf "%s: 2 ranks x 1 thread / 1 process x 2 threads = %.2f\n", m, a / b }'
done
