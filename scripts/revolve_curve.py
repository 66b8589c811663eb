#!/usr/bin/python3
"""Revolve's memory/time curve from the lines of bench/revolve_curve.cpp (standard library only).

usage: revolve_curve.py CURVE_JSONL [SVG_PATH]

Prints, for each number of steps T, a Markdown table: policy, bytes the tape holds for
backward when forward ends, that as a share of the full tape's, the peak resident set
above the process's start, the step's median time and its ratio to the full tape's, and
the steps backward replays (revolve's r*T - C(s+r, s+1)). With SVG_PATH, also a chart of
time ratio against memory share, one line per T, the sqrt(T) policy marked.
"""
import json
import sys
from collections import defaultdict


def mib(n):
    return f"{n / 2**20:,.1f} MiB"


def read(path):
    by_steps = defaultdict(list)
    with open(path) as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                by_steps[row["steps"]].append(row)
    return by_steps


def table(steps, rows):
    full = next(r for r in rows if r["policy"] == "full")
    print(f"\nT = {steps}: full tape {mib(full['bytes_held'])} held, {full['seconds'] * 1e3:.0f} ms per step\n")
    print("| policy | held for backward | vs full | peak RSS above start | ms per step | vs full | replayed steps |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        replayed = str(r["replayed_steps"]) if r["replayed_steps"] >= 0 else "-"
        print(f"| {r['policy']} | {mib(r['bytes_held'])} | {r['bytes_held'] / full['bytes_held']:.3f} "
              f"| {mib(r['peak_rss_bytes'] - r['rss_before_bytes'])} | {r['seconds'] * 1e3:.0f} "
              f"| {r['seconds'] / full['seconds']:.2f} | {replayed} |")


def svg(by_steps, path):
    width, height, left, bottom, top, right = 640, 400, 70, 50, 30, 150
    points = {}
    for steps, rows in by_steps.items():
        full = next(r for r in rows if r["policy"] == "full")
        points[steps] = [(r["bytes_held"] / full["bytes_held"], r["seconds"] / full["seconds"], r["policy"])
                         for r in rows if r["policy"] != "full"]
    xmax = max(x for pts in points.values() for x, _, _ in pts) * 1.1
    ymax = max(y for pts in points.values() for _, y, _ in pts) * 1.1

    def at(x, y):
        return (left + x / xmax * (width - left - right), height - bottom - y / ymax * (height - top - bottom))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
           f'font-size="12">', f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="18">recur revolve: time and memory against the full tape (LSTM-like scan)</text>']
    x0, y0 = at(0, 0)
    x1, y1 = at(xmax, ymax)
    out.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="black"/>')
    out.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="black"/>')
    out.append(f'<text x="{(x0 + x1) / 2 - 120}" y="{height - 12}">bytes held for backward / full tape</text>')
    out.append(f'<text x="14" y="{(y0 + y1) / 2}" transform="rotate(-90 14 {(y0 + y1) / 2})">'
               f'time per step / full tape</text>')
    for i in range(6):
        x, y = xmax * i / 5, ymax * i / 5
        px, _ = at(x, 0)
        _, py = at(0, y)
        out.append(f'<text x="{px - 10}" y="{y0 + 16}">{x:.2f}</text>')
        out.append(f'<text x="{x0 - 40}" y="{py + 4}">{y:.1f}</text>')
    if ymax > 1:
        _, py = at(0, 1)
        out.append(f'<line x1="{x0}" y1="{py}" x2="{x1}" y2="{py}" stroke="#bbb" stroke-dasharray="4"/>')
    colours = ["#1f77b4", "#d62728", "#2ca02c"]
    for i, (steps, pts) in enumerate(sorted(points.items())):
        colour = colours[i % len(colours)]
        revolve = sorted((x, y) for x, y, p in pts if p.startswith("s"))
        out.append('<polyline fill="none" stroke="{}" points="{}"/>'.format(
            colour, " ".join("{:.1f},{:.1f}".format(*at(x, y)) for x, y in revolve)))
        for x, y, p in pts:
            px, py = at(x, y)
            shape = (f'<rect x="{px - 4}" y="{py - 4}" width="8" height="8" fill="none" stroke="{colour}"/>'
                     if p == "sqrt" else f'<circle cx="{px}" cy="{py}" r="3" fill="{colour}"/>')
            out.append(shape)
        lx, ly = width - right + 15, top + 30 + 20 * i
        out.append(f'<circle cx="{lx}" cy="{ly - 4}" r="3" fill="{colour}"/>'
                   f'<text x="{lx + 8}" y="{ly}">T = {steps}, revolve</text>')
    lx, ly = width - right + 15, top + 30 + 20 * len(points)
    out.append(f'<rect x="{lx - 4}" y="{ly - 8}" width="8" height="8" fill="none" stroke="black"/>'
               f'<text x="{lx + 8}" y="{ly}">every sqrt(T)</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    by_steps = read(sys.argv[1])
    for steps in sorted(by_steps):
        table(steps, by_steps[steps])
    if len(sys.argv) == 3:
        svg(by_steps, sys.argv[2])


if __name__ == "__main__":
    main()
