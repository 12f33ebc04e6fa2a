#!/usr/bin/env python3
"""Memory copy bandwidth of N processes at once, to tell how far a
memory-bound kernel can scale over the ranks of one host.

Each process copies a 200 MB float32 array 5 times (np.copyto; read and
write counted) and reports GB/s; prints the total and per-process figure
for each N and, with --json, one JSON line per N.

  benchmarks/host_bandwidth.py [--procs 1,2,4,8,16] [--json]
"""
import argparse
import json
import multiprocessing as mp
import time

import numpy as np


def copy_bandwidth(_):
    a = np.ones(50_000_000, dtype=np.float32)
    b = np.empty_like(a)
    t = time.perf_counter()
    for _ in range(5):
        np.copyto(b, a)
    return 5 * 2 * a.nbytes / (time.perf_counter() - t) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--procs", default="1,2,4,8,16")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    for p in (int(x) for x in args.procs.split(",")):
        with mp.Pool(p) as pool:
            rates = pool.map(copy_bandwidth, range(p))
        total = sum(rates)
        if args.json:
            print(json.dumps({"bench": "host_copy_bandwidth", "procs": p, "total_gb_s": round(total, 1),
                              "per_proc_gb_s": round(total / p, 1)}))
        else:
            print(f"copy bandwidth: {p} procs: total {total:.1f} GB/s, per proc {total / p:.1f}")


if __name__ == "__main__":
    main()
