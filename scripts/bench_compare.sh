#!/usr/bin/env bash
# Compares two builds of recur's own benchmarks (e.g. a commit before a change and after
# it), so that a change can be shown not to slow recur down:
#   scripts/bench_compare.sh BEFORE_BUILD AFTER_BUILD [ROUNDS] [FILTER]
# Each build dir must hold bench/recur_bench (scripts/bench.sh builds it). The two run in
# alternating rounds (before, after, after, before, ...), so that a slow spell of a shared
# machine falls on both; ROUNDS (default 3) such pairs, each of 3 repetitions. Prints, per
# benchmark, the per-round medians of each side and the after/before ratio of the fastest
# round and of the median round (< 1: after is faster). Run it alone on the machine.
set -euo pipefail
before="$1/bench/recur_bench" after="$2/bench/recur_bench"
rounds="${3:-3}"
filter="${4:-^(overhead/|scan/tanh_step|lstm/(full_tape|checkpoint_auto)|rnn/)}"
export OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE
results=$(mktemp)
# JSON, not CSV: Google Benchmark's CSV writer aborts when a later benchmark has counters
# the first did not (the rnn/ suite's loss and matmul_flops).
json=$(mktemp)
trap 'rm -f "$results" "$json"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for side in before after after before; do
    binary=$([[ $side == before ]] && echo "$before" || echo "$after")
    "$binary" --benchmark_filter="$filter" --benchmark_repetitions=3 \
      --benchmark_display_aggregates_only=true --benchmark_format=json > "$json" 2>/dev/null
    python3 - "$json" "$side" >> "$results" <<'PY'
import json, sys
scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") == "median":
        print(f"{sys.argv[2]},{b['run_name']},{b['real_time'] * scale[b['time_unit']]}")
PY
  done
done
python3 - "$results" <<'PY'
import collections, statistics, sys
times = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    side, name, t = line.strip().split(",")
    times[name][side].append(float(t))
print(f"{'benchmark':48s} {'ratio min':>9s} {'ratio med':>9s}  rounds before | after")
for name, sides in times.items():
    b, a = sorted(sides["before"]), sorted(sides["after"])
    print(f"{name:48s} {a[0] / b[0]:9.3f} {statistics.median(a) / statistics.median(b):9.3f}  "
          f"{' '.join(f'{x:.4g}' for x in b)} | {' '.join(f'{x:.4g}' for x in a)}")
PY
