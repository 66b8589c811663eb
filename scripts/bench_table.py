#!/usr/bin/python3
"""Prints the benchmark table from Google Benchmark JSON files (standard library only).

usage: bench_table.py RECUR_JSON [TORCH_JSON]

Each benchmark reports the wall-clock time of one op in the counter "per_op" (seconds).
With repetitions the table shows the fastest repetition (each one is itself a mean over
many iterations): on a small shared machine the slow repetitions are other processes
taking a core from the BLAS threads, not recur or LibTorch. "±" is the spread (coefficient
of variation) of the repetitions. The matmul/sgemm_bare row is the same bare OpenBLAS work
in each process (a check that both sides run on equal BLAS threading). Without TORCH_JSON
(LibTorch absent) only the recur and bare-sgemm columns are printed.
"""
import json
import statistics
import sys

# The targets of the brief: elementwise fwd+bwd per op, recur's speedup over LibTorch,
# matmul fwd+bwd against the three bare sgemm calls.
MAX_ELEMENTWISE_SECONDS = 1e-6
MIN_SPEEDUP = 5.0
MAX_MATMUL_VS_BARE = 1.10
BARE = "matmul/sgemm_bare"
MATMUL = "matmul/fwd_bwd"
NOISY_CV = 0.10  # spread between repetitions above which the table warns


def load(path):
    """({benchmark name: (fastest seconds per op, coefficient of variation or None)},
    median over the repetitions of the paired recur/bare matmul ratio, or None)."""
    with open(path) as f:
        runs = [r for r in json.load(f)["benchmarks"] if r["run_type"] == "iteration"]
    reps, paired = {}, []
    for r in runs:
        if "per_op" in r:
            reps.setdefault(r["run_name"].removesuffix("/real_time"), []).append(r["per_op"])
        if "over_bare" in r:  # matmul/paired_with_bare: median ratio of back-to-back runs
            paired.append(r["over_bare"])
    result = {}
    for name, times in reps.items():
        cv = statistics.stdev(times) / statistics.mean(times) if len(times) > 1 else None
        result[name] = (min(times), cv)
    return result, statistics.median(paired) if paired else None


def fmt_time(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def cell(result):
    if result is None:
        return "-"
    seconds, cv = result
    return fmt_time(seconds) + (f" ±{100 * cv:.0f}%" if cv is not None else "")


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    recur, paired = load(argv[1])
    torch, torch_paired = load(argv[2]) if len(argv) == 3 else (None, None)

    header = ["benchmark (time per op)", "recur"]
    if torch is not None:
        header += ["LibTorch", "LibTorch/recur"]
    rows = []
    for name in sorted(recur, key=lambda n: (n.startswith("matmul"), n)):
        row = [name, cell(recur[name])]
        if torch is not None:
            row.append(cell(torch.get(name)))
            row.append(f"{torch[name][0] / recur[name][0]:.2f}x" if name in torch else "-")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))

    print()
    checks = []
    for name, (t, _) in sorted(recur.items()):
        if name.startswith("overhead/"):
            checks.append((f"recur {name}: {fmt_time(t)} per op <= 1 us", t <= MAX_ELEMENTWISE_SECONDS))
            if torch is not None and name in torch:
                s = torch[name][0] / t
                checks.append((f"recur {name}: {s:.1f}x faster than LibTorch (>= {MIN_SPEEDUP:g}x)", s >= MIN_SPEEDUP))
    if MATMUL in recur and BARE in recur:
        print(f"recur matmul fwd+bwd / bare sgemm x3, separate benchmarks: {recur[MATMUL][0] / recur[BARE][0]:.3f}")
    if paired is not None:
        print(f"recur matmul fwd+bwd / bare sgemm x3, back to back (median): {paired:.3f}")
        checks.append((f"recur matmul within {100 * (MAX_MATMUL_VS_BARE - 1):.0f}% of bare sgemm "
                       f"(back-to-back ratio {paired:.3f})", paired <= MAX_MATMUL_VS_BARE))
    if torch is not None and MATMUL in torch and BARE in torch:
        print(f"LibTorch matmul fwd+bwd / bare sgemm x3, separate benchmarks: {torch[MATMUL][0] / torch[BARE][0]:.3f}")
    if torch_paired is not None:
        print(f"LibTorch matmul fwd+bwd / bare sgemm x3, back to back (median): {torch_paired:.3f}")
    if any(cv is not None and cv > NOISY_CV for side in (recur, torch or {}) for _, cv in side.values()):
        print(f"note: some benchmarks vary by more than {100 * NOISY_CV:.0f}% between repetitions "
              "(busy machine); rerun with more repetitions (BENCH_REPETITIONS) when it is quiet")
    print()
    for text, ok in checks:
        print(("PASS  " if ok else "MISS  ") + text)


if __name__ == "__main__":
    main(sys.argv)
