#!/usr/bin/env bash
# recur and oneDNN on a quiet and on a busy machine, side by side. Runs the RNN suite's rows
# (by default M and L of the three cells; BENCH_BUSY_FILTER to choose) of recur_bench and,
# when oneDNN was found, recur_bench_onednn: alone, and with one CPU-bound process beside them
# (`yes > /dev/null`: the normal state of a laptop or a shared server), in alternating rounds
# (quiet, busy, busy, quiet, ...) so that a slow spell falls on both. Prints per benchmark
# each side's quiet and busy medians and their ratio (busy / quiet; a fair share of two
# cores with one more process costs at most 2x).
#   scripts/bench_busy.sh [build-dir]        (build with scripts/bench.sh --rnn first)
# BENCH_ROUNDS (default 2) such pairs of rounds, each of BENCH_REPETITIONS (default 3).
# Every side runs with OMP_WAIT_POLICY=PASSIVE (idle OpenMP threads sleep), as in bench.sh;
# BENCH_WAIT_POLICY=default leaves the variable unset (OpenMP's own default: idle threads
# spin a while first), any other value is passed on.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-bench}"
filter="${BENCH_BUSY_FILTER:-^rnn/(rnn|lstm|gru)/(M|L)/}"
export OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2
if [[ "${BENCH_WAIT_POLICY:-PASSIVE}" == default ]]; then unset OMP_WAIT_POLICY; else export OMP_WAIT_POLICY="${BENCH_WAIT_POLICY:-PASSIVE}"; fi
sides=(recur_bench)
[[ -x "$build/bench/recur_bench_onednn" ]] && sides+=(recur_bench_onednn)
results=$(mktemp)
json=$(mktemp)
hog=
stop_hog() { if [[ -n $hog ]]; then kill "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true; hog=; fi; }
trap 'stop_hog; rm -f "$results" "$json"' EXIT
for ((r = 1; r <= ${BENCH_ROUNDS:-2}; r++)); do
  for load in quiet busy busy quiet; do
    if [[ $load == busy ]]; then yes >/dev/null & hog=$!; fi
    for side in "${sides[@]}"; do
      echo "== $side, $load, round $r" >&2
      "$build/bench/$side" --benchmark_filter="$filter" --benchmark_repetitions="${BENCH_REPETITIONS:-3}" \
        --benchmark_display_aggregates_only=true --benchmark_format=json >"$json" 2>/dev/null
      /usr/bin/python3 - "$json" "$side" "$load" >>"$results" <<'PY'
import json, sys
scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") == "median":
        name = "/".join(b["run_name"].split("/")[:3])  # rnn/<cell>/<config>
        print(f"{sys.argv[2]},{name},{sys.argv[3]},{b['real_time'] * scale[b['time_unit']]}")
PY
    done
    stop_hog
  done
done
/usr/bin/python3 - "$results" <<'PY'
import collections, statistics, sys
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    side, name, load, sec = line.strip().split(",")
    t[(side, name, load)].append(float(sec))
names = sorted({k[1] for k in t})
sides = sorted({k[0] for k in t}, key=lambda s: s != "recur_bench")
print("ms per training step, median of rounds; busy = one CPU-bound process beside it")
head = "| benchmark |" + "|".join(f" {s.replace('recur_bench_', '').replace('recur_bench', 'recur')} quiet | busy | busy/quiet " for s in sides) + "|"
print(head)
print("|" + " --- |" * (1 + 3 * len(sides)))
for n in names:
    row = f"| {n} |"
    for s in sides:
        q, b = t.get((s, n, "quiet")), t.get((s, n, "busy"))
        if not q or not b:
            row += " - | - | - |"
            continue
        mq, mb = statistics.median(q) * 1e3, statistics.median(b) * 1e3
        row += f" {mq:.2f} | {mb:.2f} | {mb / mq:.2f}x |"
    print(row)
PY
