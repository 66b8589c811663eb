#!/usr/bin/python3
"""Prints the benchmark tables from Google Benchmark JSON files (standard library only).

usage: bench_table.py RECUR_JSON[,RECUR_JSON...] [TORCH_JSON[,TORCH_JSON...]]
                      [--onednn ONEDNN_JSON[,ONEDNN_JSON...]] [--memory MEMORY_JSONL]
                      [--torch-best TORCH_JSON[,TORCH_JSON...]]

Several files for one side (comma-separated) are the rounds of one run: scripts/bench.sh
runs the two sides in alternating rounds, so that a slow spell of the shared machine falls
on both sides rather than on one; their repetitions are pooled.

Each benchmark reports its wall-clock time in the counter "per_op" (seconds): per op for
overhead/ and matmul/, per step for scan/ (1,000 steps per run), per training step for
lstm/. With repetitions the table shows the fastest repetition (each one is itself a mean
over many iterations): on a small shared machine the slow repetitions are other processes
taking a core from the BLAS threads, not recur or LibTorch. "±" is the spread (coefficient
of variation) of the repetitions. Benchmarks named paired_* run two subjects back to back
and report the median ratio ("paired_ratio"), which survives a busy machine better than
the ratio of two separate benchmarks. The matmul/sgemm_bare row is the same bare OpenBLAS
work in each process (a check that both sides run on equal BLAS threading). Without
TORCH_JSON (LibTorch absent) only the recur column is printed. ONEDNN_JSON holds the RNN
suite on oneDNN's primitives (recur_bench_onednn); an empty file (a filter that matched
none of a program's benchmarks) counts as no results.

MEMORY_JSONL holds one JSON object per line from the memory programs (bench/memory_main.hpp):
one LSTM training step per process, its peak resident set (VmHWM) and, for recur, the bytes
its tape held right before backward (Tape::bytes_held()); for oneDNN, the forward's
workspace plus the weights in its layouts.

The RNN suite (rnn/<cell>/<config>/<variant>, bench/rnn_suite.hpp) gets a table of its own:
ms per training step of recur's layer, LibTorch's manual loop and torch::nn and oneDNN's
primitives, and the best LibTorch time and oneDNN's over recur's. Every side reports the
loss of the step ("loss"), computed from the same data and weights, as a check that they do
the same work (a mismatch is flagged MISS); and the flops of the step's matrix products
("matmul_flops"), which over the sgemm peak (matmul/sgemm_peak, the larger of the recur and
LibTorch processes' measurements) give the time bound of the L rows.
"""
import json
import os
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
# The RNN suite's losses agree between the sides within this relative difference. Float32
# sums over ~10^6 squared errors in another order differ by about 1e-3 (recur's float32
# reductions accumulate in float32), a different computation by far more.
MAX_LOSS_DIFFERENCE = 5e-3
# Issue 11: recur at least this many times faster than oneDNN, per configuration.
MIN_SPEEDUP_VS_ONEDNN = {"S": 10.0, "M": 1.2, "L": 1.2, "TBPTT": 1.2}
BARE = "matmul/sgemm_bare"
MATMUL = "matmul/fwd_bwd"
MATMUL_PAIRED = "matmul/paired_with_bare"
SCAN = "scan/tanh_step"
UNROLLED = "scan/tanh_step_unrolled"
SCAN_PAIRED = "scan/paired_with_unrolled"
FULL = "lstm/full_tape"
CHECKPOINT = "lstm/checkpoint_auto"
LSTM_PAIRED = "lstm/paired_checkpoint_with_full"
PEAK = "matmul/sgemm_peak"
RNN = "rnn/"
RNN_CELLS = ("rnn", "lstm", "gru")
RNN_CONFIGS = ("S", "M", "L", "TBPTT")
RNN_SHAPES = {"S": "B=1 I=16 H=32 T=200", "M": "B=32 I=64 H=256 T=100", "L": "B=64 I=512 H=1024 T=50",
              "TBPTT": "M, T=1000 in chunks of 50"}
# recur's layer; LibTorch's loop and torch::nn; oneDNN's primitives. Each side's benchmark
# names end in its own variants, so the sides' RNN results merge into one dictionary.
RNN_VARIANTS = ("recur", "manual", "nn", "manual_best", "nn_best", "onednn")
TORCH_VARIANTS = ("manual", "nn")
# TORCH_BEST_JSON: LibTorch run again on the OpenBLAS kernel recur switched to (its
# variants renamed *_best); printed only when scripts/bench.sh ran it.
TORCH_BEST_VARIANTS = ("manual_best", "nn_best")
VARIANT_TITLES = {"recur": "recur layer", "manual": "LibTorch manual", "nn": "LibTorch nn",
                  "manual_best": "LibTorch manual, best kernel", "nn_best": "LibTorch nn, best kernel",
                  "onednn": "oneDNN"}
BOUND_CONFIGS = ("L",)  # the rows whose fraction of the sgemm bound is reported
GROUPS = ("overhead/", "scan/", "lstm/", "matmul/")  # table order
NOISY_CV = 0.10  # spread between repetitions above which the table warns
MIB = 1 << 20


def base_name(run_name):
    """The name given in the source: without Google Benchmark's "/iterations:2", "/real_time"."""
    return "/".join(p for p in run_name.split("/") if ":" not in p and p != "real_time")


COUNTERS = ("flops", "matmul_flops", "loss")  # kept as the largest value over the repetitions


def load(paths):
    """({benchmark name: (fastest seconds per op, coefficient of variation or None)},
    {paired benchmark name: median over the repetitions of its paired_ratio},
    {benchmark name: {counter in COUNTERS: largest value over the repetitions}}),
    the repetitions of every file in the comma-separated `paths` pooled."""
    runs = []
    for path in paths.split(","):
        if os.path.getsize(path) == 0:
            continue
        with open(path) as f:
            runs += [r for r in json.load(f)["benchmarks"] if r["run_type"] == "iteration"]
    reps, paired, counters = {}, {}, {}
    for r in runs:
        name = base_name(r["run_name"])
        if "per_op" in r:
            reps.setdefault(name, []).append(r["per_op"])
        if "paired_ratio" in r:
            paired.setdefault(name, []).append(r["paired_ratio"])
        for c in COUNTERS:
            if c in r:
                kept = counters.setdefault(name, {})
                kept[c] = max(kept.get(c, r[c]), r[c])
    result = {}
    for name, times in reps.items():
        cv = statistics.stdev(times) / statistics.mean(times) if len(times) > 1 else None
        result[name] = (min(times), cv)
    return result, {name: statistics.median(v) for name, v in paired.items()}, counters


def load_context(paths):
    """The "context" of the first non-empty file in the comma-separated `paths` (the
    program's AddCustomContext entries among it)."""
    for path in paths.split(","):
        if os.path.getsize(path) > 0:
            with open(path) as f:
                return json.load(f).get("context", {})
    return {}


def renamed_best(results):
    """LibTorch's results on the best kernel under the *_best variant names."""
    return {(n + "_best" if n.startswith(RNN) else n): v for n, v in results.items()}


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
    names = sorted((n for n in recur if not n.startswith(RNN)), key=group_order)
    if not names:
        return
    header = ["benchmark", "recur"]
    if torch is not None:
        header += ["LibTorch", "LibTorch/recur"]
    rows = []
    for name in names:
        row = [name, cell(recur[name])]
        if torch is not None:
            row.append(cell(torch.get(name)))
            row.append(f"{torch[name][0] / recur[name][0]:.2f}x" if name in torch else "-")
        rows.append(row)
    print_table(header, rows)
    print("(times per op; scan/: per step of the 1,000-step loop; lstm/: per training step. "
          "scan/tanh_step on LibTorch is its autograd loop, which is how LibTorch runs a recurrence)")
    print()


def rnn_name(cell, config, variant):
    return f"{RNN}{cell}/{config}/{variant}"


def fmt_ms(result):
    if result is None:
        return "-"
    seconds, cv = result
    return f"{1e3 * seconds:.3g}" + (f" ±{100 * cv:.0f}%" if cv is not None else "")


def shown_variants(times):
    """The variants of RNN_VARIANTS that some rnn/ result has."""
    return [v for v in RNN_VARIANTS if any(n.endswith("/" + v) for n in times)]


def rnn_table(times, counters, checks):
    """ms per training step per cell and configuration, the best LibTorch variant (as
    installed, and on the best kernel when that was run) and oneDNN over recur; the loss
    agreement and issue 11's speed targets go to `checks`. `times` and `counters` hold every
    side's rnn/ benchmarks."""
    shown = shown_variants(times)
    best_kernel = any(v in shown for v in TORCH_BEST_VARIANTS)
    rows = []
    for cell in RNN_CELLS:
        for config in RNN_CONFIGS:
            found = {v: times[rnn_name(cell, config, v)] for v in shown if rnn_name(cell, config, v) in times}
            if not found:
                continue
            mine = found.get("recur")

            def best_over(variants):
                side = {v: found[v] for v in variants if v in found}
                if not (mine and side):
                    return "-"
                best = min(side, key=lambda v: side[v][0])
                return f"{side[best][0] / mine[0]:.2f}x ({best.removesuffix('_best')})"

            onednn_ratio = "-"
            if mine and "onednn" in found:
                speedup = found["onednn"][0] / mine[0]
                onednn_ratio = f"{speedup:.2f}x"
                target = MIN_SPEEDUP_VS_ONEDNN[config]
                checks.append((f"rnn {cell} {config}: recur {speedup:.2f}x faster than oneDNN (>= {target:g}x)",
                               speedup >= target))
            ratios = [best_over(TORCH_VARIANTS)] + ([best_over(TORCH_BEST_VARIANTS)] if best_kernel else [])
            rows.append([cell, config, RNN_SHAPES[config]] + [fmt_ms(found.get(v)) for v in shown] + ratios +
                        [onednn_ratio])
            loss_checks(cell, config, counters, checks)
    if not rows:
        return
    print("RNN suite: ms per training step (forward over T steps, MSE of all outputs against a fixed target, "
          "backward to all weights; float32, 2 threads)")
    print_table(["cell", "config", "shapes"] + [VARIANT_TITLES[v] for v in shown] + ["best LibTorch / recur"] +
                (["best LibTorch on the best kernel / recur"] if best_kernel else []) + ["oneDNN / recur"], rows)
    print("(> 1x: recur is faster. TBPTT: the whole 1,000-step sequence, a backward per chunk, "
          "the state detached between chunks. oneDNN: weights reordered from PyTorch's layout and "
          "gradients back every step)")
    print()


def best_kernel_line(context):
    """Why LibTorch has one column only: recur left OpenBLAS on the kernels it picked, so
    'as installed' and 'on the best kernel' are the same run (recur_bench's context)."""
    if context.get("blas_switched") == "0":
        print(f"LibTorch on the best OpenBLAS kernel: the same as installed here. recur left OpenBLAS on "
              f"its {context.get('blas_core', '?')} kernels ({context.get('blas_reason', '')}), so both "
              "sides already run on them.")
        print()


def loss_checks(cell, config, counters, checks):
    """Every side's loss against recur's (or, without a recur row, the first side's)."""
    losses = {v: counters[rnn_name(cell, config, v)]["loss"] for v in RNN_VARIANTS
              if "loss" in counters.get(rnn_name(cell, config, v), {})}
    if len(losses) < 2:
        return
    reference = next(iter(losses))
    loss = losses[reference]
    for v, other in losses.items():
        if v == reference:
            continue
        diff = abs(loss - other) / abs(other)
        checks.append((f"rnn {cell} {config}: {VARIANT_TITLES[reference]}'s loss {loss:.6g} matches "
                       f"{VARIANT_TITLES[v]}'s {other:.6g} (relative difference {diff:.1e} <= {MAX_LOSS_DIFFERENCE:g})",
                       diff <= MAX_LOSS_DIFFERENCE))


def sgemm_peak(recur_counters, torch_counters):
    """The larger of the two processes' sgemm peaks (flop/s), or None."""
    peaks = [c[PEAK]["flops"] for c in (recur_counters, torch_counters or {}) if "flops" in c.get(PEAK, {})]
    return max(peaks) if peaks else None


def bound_table(times, counters, recur_counters, torch_counters):
    """For BOUND_CONFIGS: the step's matmul flops over the sgemm peak (the time bound) and
    each variant's fraction of it (bound / measured time)."""
    peak = sgemm_peak(recur_counters, torch_counters)
    if peak is None:
        return
    shown = shown_variants(times)
    rows = []
    for cell in RNN_CELLS:
        for config in BOUND_CONFIGS:
            flops = next((counters[rnn_name(cell, config, v)]["matmul_flops"] for v in RNN_VARIANTS
                          if "matmul_flops" in counters.get(rnn_name(cell, config, v), {})), None)
            if flops is None:
                continue
            bound = flops / peak
            row = [cell, config, f"{flops / 1e9:.1f}", f"{1e3 * bound:.0f}"]
            for v in shown:
                t = times.get(rnn_name(cell, config, v))
                row.append("-" if t is None else f"{1e3 * t[0]:.0f} ms: {100 * bound / t[0]:.0f}%")
            rows.append(row)
    if not rows:
        return
    peaks = ", ".join(f"{side} process {c[PEAK]['flops'] / 1e9:.0f}" for side, c in
                      (("recur", recur_counters), ("LibTorch", torch_counters or {})) if "flops" in c.get(PEAK, {}))
    print(f"sgemm peak, 2048^3 on 2 threads (GFLOP/s): {peaks}; the bound uses {peak / 1e9:.0f}")
    print_table(["cell", "config", "matmul GFLOP/step", "bound (ms)"] +
                [VARIANT_TITLES[v] + ": time, bound/time" for v in shown], rows)
    print("(matmul flops: x W_ih^T and h W_hh^T forward, dW_ih, dW_hh and dh backward)")
    print()


def memory_table(memory):
    rows = []
    for (side, mode), r in memory.items():
        before, peak = r["rss_before_bytes"], r["peak_rss_bytes"]
        rows.append([f"{side} lstm/{mode}", fmt_mib(r.get("bytes_held")), fmt_mib(peak), fmt_mib(before),
                     fmt_mib(peak - before)])
    print_table(["one LSTM training step, own process", "bytes held for backward", "peak RSS (VmHWM)",
                 "RSS before the step", "peak - before"], rows)
    print("(bytes held: recur's tape right before backward; oneDNN's forward workspace plus its weights)")


def rnn_memory_lines(memory):
    """recur's nn::LSTM layer (full BPTT) against LibTorch's loop and torch::nn::LSTM on the
    same LSTM step: peak resident set, and its growth over the resident set before the step."""
    layer = memory.get(("recur", "layer_full_bptt"))
    if not layer:
        return
    for mode, what in (("manual_loop", "manual loop"), ("nn_lstm", "torch::nn::LSTM")):
        other = memory.get(("libtorch", mode))
        if other:
            grow, other_grow = (r["peak_rss_bytes"] - r["rss_before_bytes"] for r in (layer, other))
            print(f"LSTM B=16 I=64 H=256 T=2000, recur nn::LSTM full BPTT vs LibTorch {what}: peak RSS "
                  f"{fmt_mib(layer['peak_rss_bytes'])} vs {fmt_mib(other['peak_rss_bytes'])} "
                  f"({layer['peak_rss_bytes'] / other['peak_rss_bytes']:.2f}x); peak - before "
                  f"{fmt_mib(grow)} vs {fmt_mib(other_grow)} ({grow / other_grow:.2f}x)")
    onednn = memory.get(("onednn", "lstm_full_bptt"))
    if onednn:
        print(f"LSTM B=16 I=64 H=256 T=2000, recur nn::LSTM full BPTT vs oneDNN: peak RSS "
              f"{fmt_mib(layer['peak_rss_bytes'])} vs {fmt_mib(onednn['peak_rss_bytes'])} "
              f"({layer['peak_rss_bytes'] / onednn['peak_rss_bytes']:.2f}x); held for backward "
              f"{fmt_mib(layer['bytes_held'])} (tape) vs {fmt_mib(onednn['bytes_held'])} (workspace plus weights)")


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


def take_option(args, name):
    """Removes `name VALUE` from args and returns VALUE (None when absent)."""
    if name not in args:
        return None
    i = args.index(name)
    if i + 1 >= len(args):
        sys.exit(__doc__)
    value = args[i + 1]
    del args[i:i + 2]
    return value


def main(argv):
    args = argv[1:]
    memory_path, onednn_paths = take_option(args, "--memory"), take_option(args, "--onednn")
    torch_best_paths = take_option(args, "--torch-best")
    if len(args) not in (1, 2):
        sys.exit(__doc__)
    recur, paired, recur_counters = load(args[0])
    torch, torch_paired, torch_counters = load(args[1]) if len(args) == 2 else (None, {}, {})
    onednn, _, onednn_counters = load(onednn_paths) if onednn_paths else ({}, {}, {})
    best, _, best_counters = load(torch_best_paths) if torch_best_paths else ({}, {}, {})
    best, best_counters = renamed_best(best), renamed_best(best_counters)
    memory = load_memory(memory_path) if memory_path else {}
    # The RNN suite's results of every side, by benchmark name (the variants tell the sides apart).
    rnn_times, rnn_counters = {}, {}
    for times, counters in ((recur, recur_counters), (torch or {}, torch_counters), (best, best_counters),
                            (onednn, onednn_counters)):
        rnn_times.update((n, t) for n, t in times.items() if n.startswith(RNN))
        rnn_counters.update((n, c) for n, c in counters.items() if n.startswith(RNN))

    checks = []
    time_table(recur, torch)
    rnn_table(rnn_times, rnn_counters, checks)
    if torch is not None and not torch_best_paths and rnn_times:
        best_kernel_line(load_context(args[0]))
    bound_table(rnn_times, rnn_counters, recur_counters, torch_counters)
    if memory:
        memory_table(memory)
        rnn_memory_lines(memory)
        print()
    for name, (t, _) in sorted(recur.items()):
        if name.startswith("overhead/"):
            checks.append((f"recur {name}: {fmt_time(t)} per op <= 1 us", t <= MAX_ELEMENTWISE_SECONDS))
            if torch is not None and name in torch:
                s = torch[name][0] / t
                checks.append((f"recur {name}: {s:.1f}x faster than LibTorch (>= {MIN_SPEEDUP:g}x)", s >= MIN_SPEEDUP))
    scan_lines(recur, paired, torch, checks)
    lstm_lines(recur, paired, memory, checks)
    matmul_lines(recur, paired, torch, torch_paired, checks)
    if any(cv is not None and cv > NOISY_CV for side in (recur, torch or {}, onednn) for _, cv in side.values()):
        print(f"note: some benchmarks vary by more than {100 * NOISY_CV:.0f}% between repetitions "
              "(busy machine); rerun with more repetitions (BENCH_REPETITIONS) when it is quiet")
    print()
    for text, ok in checks:
        print(("PASS  " if ok else "MISS  ") + text)


if __name__ == "__main__":
    main(sys.argv)
