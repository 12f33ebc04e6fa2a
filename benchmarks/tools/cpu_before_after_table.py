#!/usr/bin/env python3
"""Table of base vs new from bench_formats JSON lines (cpu_f32_before_after.sh).

Usage: cpu_before_after_table.py DIR
Reads DIR/base-*.jsonl and DIR/new-*.jsonl (one file per round); per case
(tensor, format, threads, mode) takes the median over the rounds of each
run's ms_median (wall clock) and cpu_ms_median (process CPU time, where
recorded) and prints base, new and new / base for each; then the least
of the runs' ms_min and cpu_ms_min (the least disturbed call, the steadier
figure on a loaded machine) and their new / base. Last, per format and
thread count, the median and worst of each ratio.
"""
import glob
import os
import statistics
import sys

from bench_records import records


def cases(paths):
    runs = {}
    nan = float("nan")
    for r in records(paths):
        if r.get("bench") != "mttkrp":
            continue
        key = (r["tensor"], r["format"], r["threads"], r["mode"])
        runs.setdefault(key, []).append((r["ms_median"], r.get("cpu_ms_median", nan), r["ms_min"],
                                         r.get("cpu_ms_min", nan)))
    return runs


def ratio(n, b):
    return n / b if b > 0 else float("nan")


def main():
    d = sys.argv[1]
    base = cases(sorted(glob.glob(os.path.join(d, "base-*.jsonl"))))
    new = cases(sorted(glob.glob(os.path.join(d, "new-*.jsonl"))))
    ratios = {}
    print(f"{'tensor':24} {'format':12} {'thr':>3} {'mode':>4} | median of medians: {'base':>6} {'new':>6} {'ratio':>5}"
          f" | cpu {'base':>6} {'new':>6} {'ratio':>5} | least min: {'base':>6} {'new':>6} {'ratio':>5}"
          f" | cpu {'base':>6} {'new':>6} {'ratio':>5} | rounds")
    for key in sorted(set(base) & set(new)):
        b = [statistics.median(x[i] for x in base[key]) for i in (0, 1)] + [min(x[i] for x in base[key]) for i in (2, 3)]
        n = [statistics.median(x[i] for x in new[key]) for i in (0, 1)] + [min(x[i] for x in new[key]) for i in (2, 3)]
        r = [ratio(n[i], b[i]) for i in range(4)]
        t, fmt, thr, mode = key
        ratios.setdefault((fmt, thr), []).append(r)
        print(f"{t[:24]:24} {fmt:12} {thr:3} {mode:4} |                    {b[0]:6.3f} {n[0]:6.3f} {r[0]:5.2f}"
              f" |     {b[1]:6.3f} {n[1]:6.3f} {r[1]:5.2f} |            {b[2]:6.3f} {n[2]:6.3f} {r[2]:5.2f}"
              f" |     {b[3]:6.3f} {n[3]:6.3f} {r[3]:5.2f} | {min(len(base[key]), len(new[key])):6}")
    print()
    print("new / base per format and threads: median (worst) over modes and tensors")
    print(f"{'format':12} {'thr':>3} {'wall median':>12} {'cpu median':>12} {'wall min':>12} {'cpu min':>12} {'cases':>5}")
    for (fmt, thr), rs in sorted(ratios.items()):
        cols = []
        for i in range(4):
            v = [x[i] for x in rs]
            cols.append(f"{statistics.median(v):5.2f} ({max(v):4.2f})")
        print(f"{fmt:12} {thr:3} {cols[0]:>12} {cols[1]:>12} {cols[2]:>12} {cols[3]:>12} {len(rs):5}")


if __name__ == "__main__":
    main()
