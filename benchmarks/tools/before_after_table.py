#!/usr/bin/env python3
"""Table of base vs new from bench_gpu / bench_gpu_tucker JSON lines
(gpu_before_after.sh, gpu_tucker_before_after.sh).

Usage: before_after_table.py DIR
Reads DIR/base-*.jsonl and DIR/new-*.jsonl; per case (tensor, kernel, rank,
mode, and the HB-CSF tree root) takes the smaller of the runs' medians
(kernel milliseconds; CP-ALS seconds per iteration shown in ms; Tucker-HOOI
sweep milliseconds from bench_gpu_tucker) and prints
base, new and new / base, then per kernel the median and worst ratio.
"""
import glob
import os
import statistics
import sys

from bench_records import records

KERNELS = {
    "gpu_mttkrp_coo": "COO (sorted)",
    "gpu_mttkrp_hicoo": "HiCOO",
    "gpu_mttkrp_fcoo": "F-COO",
    "gpu_mttkrp_hbcsf": "HB-CSF",
    "gpu_mttkrp_hbcsf_nonroot": "HB-CSF non-root",
    "cpd_iter": "CP-ALS iter",
    "tucker_iter": "Tucker iter",
}


def cases(paths):
    best = {}
    for r in records(paths):
        name = KERNELS.get(r.get("bench"))
        if name is None:
            continue
        if r["bench"] == "cpd_iter":
            if r.get("backend") != "cuda":
                continue
            name += " " + r.get("format", "")
            ms = 1e3 * r["seconds_per_iter_median"]
        elif r["bench"] == "tucker_iter":
            # GPU sweeps per TTMc route (bench_gpu_tucker; "auto" names the
            # route it took); ms_median over the sweeps.
            if r.get("backend") != "cuda" or "ms_median" not in r:
                continue
            route = r.get("format", "")
            if route == "auto":
                route += "=" + r.get("auto_route", "?")
            name += " " + route
            ms = r["ms_median"]
        else:
            ms = r["kernel_ms_median"]
        key = (r["tensor"], name, r["rank"], r.get("mode", -1), r.get("tree_root", -1))
        best[key] = min(best.get(key, ms), ms)
    return best


def main():
    d = sys.argv[1]
    base = cases(sorted(glob.glob(os.path.join(d, "base-*.jsonl"))))
    new = cases(sorted(glob.glob(os.path.join(d, "new-*.jsonl"))))
    ratios = {}
    print(f"{'tensor':26} {'kernel':22} {'rank':>4} {'mode':>4} {'root':>4} {'base ms':>10} {'new ms':>10} {'new/base':>8}")
    for key in sorted(set(base) & set(new)):
        b, n = base[key], new[key]
        ratio = n / b if b > 0 else float("nan")
        ratios.setdefault(key[1], []).append(ratio)
        t, k, rank, mode, root = key
        print(f"{t[:26]:26} {k:22} {rank:4} {mode:4} {root:4} {b:10.4f} {n:10.4f} {ratio:8.2f}")
    print()
    print(f"{'kernel':22} {'median':>7} {'worst':>7} {'cases':>5}")
    for k, rs in sorted(ratios.items()):
        print(f"{k:22} {statistics.median(rs):7.2f} {max(rs):7.2f} {len(rs):5}")


if __name__ == "__main__":
    main()
