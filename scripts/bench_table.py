#!/usr/bin/python3
"""Prints the benchmark tables from Google Benchmark JSON files (standard library only).

usage: bench_table.py RECUR_JSON [TORCH_JSON] [--memory MEMORY_JSONL]

Each benchmark reports its wall-clock time in the counter "per_op" (seconds): per op for
overhead/ and matmul/, per step for scan/ (1,000 steps per run), per training step for
lstm/. With repetitions the table shows the fastest repetition (each one is itself a mean
over many iterations): on a small shared machine the slow repetitions are other processes
taking a core from the BLAS threads, not recur or LibTorch. "±" is the spread (coefficient
of variation) of the repetitions. Benchmarks named paired_* run two subjects back to back
and report the median ratio ("paired_ratio"), which survives a busy machine better than
the ratio of two separate benchmarks. The matmul/sgemm_bare row is the same bare OpenBLAS
work in each process (a check that both sides run on equal BLAS threading). Without
TORCH_JSON (LibTorch absent) only the recur column is printed.

MEMORY_JSONL holds one JSON object per line from the memory programs (bench/memory_main.hpp):
one LSTM training step per process, its peak resident set (VmHWM) and, for recur, the bytes
its tape held right before backward (Tape::bytes_held()).
"""
import json
import statistics
import sys

# The targets of the briefs: elementwise fwd+bwd per op, recur's speedup over LibTorch,
# matmul fwd+bwd against the three bare sgemm calls; scan's overhead over the same ops
# without scan, and checkpointing's memory and time against the full tape.
MAX_ELEMENTWISE_SECONDS = 1e-6
MIN_SPEEDUP = 5.0
MAX_MATMUL_VS_BARE = 1.10
MAX_SCAN_VS_UNROLLED = 2.0
MAX_CHECKPOINT_TIME = 1.5
MAX_CHECKPOINT_BYTES = 0.15
BARE = "matmul/sgemm_bare"
MATMUL = "matmul/fwd_bwd"
MATMUL_PAIRED = "matmul/paired_with_bare"
SCAN = "scan/tanh_step"
UNROLLED = "scan/tanh_step_unrolled"
SCAN_PAIRED = "scan/paired_with_unrolled"
FULL = "lstm/full_tape"
CHECKPOINT = "lstm/checkpoint_auto"
LSTM_PAIRED = "lstm/paired_checkpoint_with_full"
GROUPS = ("overhead/", "scan/", "lstm/", "matmul/")  # table order
NOISY_CV = 0.10  # spread between repetitions above which the table warns
MIB = 1 << 20


def base_name(run_name):
    """The name given in the source: without Google Benchmark's "/iterations:2", "/real_time"."""
    return "/".join(p for p in run_name.split("/") if ":" not in p and p != "real_time")


def load(path):
    """({benchmark name: (fastest seconds per op, coefficient of variation or None)},
    {paired benchmark name: median over the repetitions of its paired_ratio})."""
    with open(path) as f:
        runs = [r for r in json.load(f)["benchmarks"] if r["run_type"] == "iteration"]
    reps, paired = {}, {}
    for r in runs:
        name = base_name(r["run_name"])
        if "per_op" in r:
            reps.setdefault(name, []).append(r["per_op"])
        if "paired_ratio" in r:
            paired.setdefault(name, []).append(r["paired_ratio"])
    result = {}
    for name, times in reps.items():
        cv = statistics.stdev(times) / statistics.mean(times) if len(times) > 1 else None
        result[name] = (min(times), cv)
    return result, {name: statistics.median(v) for name, v in paired.items()}


def load_memory(path):
    """{(side, mode): record} from the memory programs' JSON lines."""
    with open(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    return {(r["side"], r["mode"]): r for r in records}


def fmt_time(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_mib(n):
    return "-" if n is None else f"{n / MIB:.1f} MiB"


def cell(result):
    if result is None:
        return "-"
    seconds, cv = result
    return fmt_time(seconds) + (f" ±{100 * cv:.0f}%" if cv is not None else "")


def print_table(header, rows):
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))


def group_order(name):
    return next((i for i, g in enumerate(GROUPS) if name.startswith(g)), len(GROUPS)), name


def time_table(recur, torch):
    header = ["benchmark", "recur"]
    if torch is not None:
        header += ["LibTorch", "LibTorch/recur"]
    rows = []
    for name in sorted(recur, key=group_order):
        row = [name, cell(recur[name])]
        if torch is not None:
            row.append(cell(torch.get(name)))
            row.append(f"{torch[name][0] / recur[name][0]:.2f}x" if name in torch else "-")
        rows.append(row)
    print_table(header, rows)
    print("(times per op; scan/: per step of the 1,000-step loop; lstm/: per training step. "
          "scan/tanh_step on LibTorch is its autograd loop, which is how LibTorch runs a recurrence)")


def memory_table(memory):
    rows = []
    for (side, mode), r in memory.items():
        before, peak = r["rss_before_bytes"], r["peak_rss_bytes"]
        rows.append([f"{side} lstm/{mode}", fmt_mib(r.get("bytes_held")), fmt_mib(peak), fmt_mib(before),
                     fmt_mib(peak - before)])
    print_table(["one LSTM training step, own process", "tape bytes held for backward", "peak RSS (VmHWM)",
                 "RSS before the step", "peak - before"], rows)


def matmul_lines(recur, paired, torch, torch_paired, checks):
    if MATMUL in recur and BARE in recur:
        print(f"recur matmul fwd+bwd / bare sgemm x3, separate benchmarks: {recur[MATMUL][0] / recur[BARE][0]:.3f}")
    if MATMUL_PAIRED in paired:
        ratio = paired[MATMUL_PAIRED]
        print(f"recur matmul fwd+bwd / bare sgemm x3, back to back (median): {ratio:.3f}")
        checks.append((f"recur matmul within {100 * (MAX_MATMUL_VS_BARE - 1):.0f}% of bare sgemm "
                       f"(back-to-back ratio {ratio:.3f})", ratio <= MAX_MATMUL_VS_BARE))
    if torch is not None and MATMUL in torch and BARE in torch:
        print(f"LibTorch matmul fwd+bwd / bare sgemm x3, separate benchmarks: {torch[MATMUL][0] / torch[BARE][0]:.3f}")
    if MATMUL_PAIRED in torch_paired:
        print(f"LibTorch matmul fwd+bwd / bare sgemm x3, back to back (median): {torch_paired[MATMUL_PAIRED]:.3f}")


def ratio_lines(what, recur, paired, subject, reference, paired_name):
    """Prints subject / reference from separate benchmarks and back to back; returns the
    back-to-back ratio when it was measured, else the separate one (None without data),
    and how it was measured."""
    ratio, how = None, None
    if subject in recur and reference in recur:
        ratio, how = recur[subject][0] / recur[reference][0], "separate benchmarks"
        print(f"{what}, separate benchmarks: {ratio:.2f}")
    if paired_name in paired:
        ratio, how = paired[paired_name], "back to back"
        print(f"{what}, back to back (median): {ratio:.2f}")
    return ratio, how


def scan_lines(recur, paired, torch, checks):
    if SCAN not in recur:
        return
    ratio, how = ratio_lines("recur scan / the same ops without scan", recur, paired, SCAN, UNROLLED, SCAN_PAIRED)
    if ratio is not None:
        checks.append((f"recur scan costs at most {MAX_SCAN_VS_UNROLLED:g}x the same ops without scan "
                       f"({how}: {ratio:.2f})", ratio <= MAX_SCAN_VS_UNROLLED))
    if torch is not None and SCAN in torch:
        s = torch[SCAN][0] / recur[SCAN][0]
        print(f"LibTorch loop / recur scan, per step: {s:.1f}")
        checks.append((f"recur scan: {s:.1f}x faster than LibTorch's loop (>= {MIN_SPEEDUP:g}x)", s >= MIN_SPEEDUP))


def lstm_lines(recur, paired, memory, checks):
    ratio, how = ratio_lines("recur lstm checkpoint_auto / full_tape, time per training step", recur, paired,
                             CHECKPOINT, FULL, LSTM_PAIRED)
    if ratio is not None:
        checks.append((f"recur checkpointing costs at most {MAX_CHECKPOINT_TIME:g}x the full tape's time "
                       f"({how}: {ratio:.2f})", ratio <= MAX_CHECKPOINT_TIME))
    full, ckpt = memory.get(("recur", "full_tape")), memory.get(("recur", "checkpoint_auto"))
    if full and ckpt:
        held = ckpt["bytes_held"] / full["bytes_held"]
        print(f"recur lstm checkpoint_auto / full_tape, bytes held for backward: {100 * held:.1f}%")
        peak = ckpt["peak_rss_bytes"] / full["peak_rss_bytes"]
        print(f"recur lstm checkpoint_auto / full_tape, peak RSS: {100 * peak:.1f}%")
        checks.append((f"recur checkpointing holds at most {100 * MAX_CHECKPOINT_BYTES:.0f}% of the full tape's bytes "
                       f"({100 * held:.1f}%)", held <= MAX_CHECKPOINT_BYTES))


def main(argv):
    args = argv[1:]
    memory_path = None
    if "--memory" in args:
        i = args.index("--memory")
        if i + 1 >= len(args):
            sys.exit(__doc__)
        memory_path = args[i + 1]
        del args[i:i + 2]
    if len(args) not in (1, 2):
        sys.exit(__doc__)
    recur, paired = load(args[0])
    torch, torch_paired = load(args[1]) if len(args) == 2 else (None, {})
    memory = load_memory(memory_path) if memory_path else {}

    time_table(recur, torch)
    if memory:
        print()
        memory_table(memory)
    print()
    checks = []
    for name, (t, _) in sorted(recur.items()):
        if name.startswith("overhead/"):
            checks.append((f"recur {name}: {fmt_time(t)} per op <= 1 us", t <= MAX_ELEMENTWISE_SECONDS))
            if torch is not None and name in torch:
                s = torch[name][0] / t
                checks.append((f"recur {name}: {s:.1f}x faster than LibTorch (>= {MIN_SPEEDUP:g}x)", s >= MIN_SPEEDUP))
    scan_lines(recur, paired, torch, checks)
    lstm_lines(recur, paired, memory, checks)
    matmul_lines(recur, paired, torch, torch_paired, checks)
    if any(cv is not None and cv > NOISY_CV for side in (recur, torch or {}) for _, cv in side.values()):
        print(f"note: some benchmarks vary by more than {100 * NOISY_CV:.0f}% between repetitions "
              "(busy machine); rerun with more repetitions (BENCH_REPETITIONS) when it is quiet")
    print()
    for text, ok in checks:
        print(("PASS  " if ok else "MISS  ") + text)


if __name__ == "__main__":
    main(sys.argv)
