#!/usr/bin/env python3
"""MPI CP-ALS against SPLATT-MPI, side by side on one host, P = 1, 2, 4, 8, 16.

For each tensor and rank count P (one OpenMP thread per rank unless
--threads), runs ours (`bench_mpi --file F --decomposition medium`) and
`splatt cpd` built with `./configure --with-mpi` (its default medium-grained
decomposition), alternating which goes first, with the same rank, sweep
count (tol 0 for SPLATT, so every sweep runs) and value type. Records per
tool and P:
  - seconds per sweep: ours the median of its sweeps (bench_mpi's
    ms_median); SPLATT's the median of its "its = k (X s)" lines but the
    first;
  - bytes per sweep of factor rows moved between ranks (reduce + expand):
    ours bench_mpi's bytes_reduce_per_iter + bytes_expand_per_iter (measured
    messages, bytes sent); SPLATT's "AVG COMMUNICATION VOL" x P / 2 x
    rank x value size (its stats.c counts each rank's rows sent plus rows
    received, in both exchanges, so the sum over ranks counts every row
    moved twice);
  - time before the sweeps: ours read + set-up (bench_mpi's read_s +
    setup_s), SPLATT's TOTAL less CPD;
  - the wall clock of the whole mpirun;
and the strong-scaling efficiency T(1) / (P T(P)) of each, in a table and
one JSON object per run.

  benchmarks/mpi_vs_splatt.py --bench build/mpi/bench_mpi \\
      --splatt /path/to/splatt-mpi/build/Linux-x86_64/bin/splatt \\
      --tensor ../shared/data/text-trigrams-mc100.tns.xz [--ranks 1,2,4,8,16] \\
      [--rank 16] [--iters 10] [--dtype float32] [--mpirun mpirun] \\
      [--mpirun-flags "--bind-to core --map-by core"] [--out X.jsonl]

A .tns.xz input is decompressed once into $TMPDIR (SPLATT reads plain text).
A .bin input (SPLATT's binary coordinate format, e.g. written by
`bench_mpi --synthetic N --write-splatt-bin F`) is given to both as is:
SPLATT-MPI reads it on rank 0 and sends each rank its share, ours reads it
in parallel. --first picks which tool runs first at each P (default:
alternating from one P to the next).
Environment for both: OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=1,
OMP_WAIT_POLICY=passive.
"""
import argparse
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_vs_splatt import plain_text, splatt_before_iterations  # noqa: E402


def run(cmd, env, timeout):
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), proc.returncode, proc.stderr[-2000:]))
    return wall, proc.stdout


def ours(args, env, p, path):
    cmd = args.mpirun + ["-np", str(p), args.bench, "--file", path, "-r", str(args.rank), "--iters",
                         str(args.iters), "--decomposition", "medium", "--dtype", args.dtype,
                         "--threads", str(args.threads)]
    wall, out = run(cmd, env, args.timeout)
    rec = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    return {
        "s_per_iter": rec["ms_median"] / 1e3,
        "bytes_per_iter": rec["bytes_reduce_per_iter"] + rec["bytes_expand_per_iter"],
        "before_iterations_s": rec["read_s"] + rec["setup_s"],
        "fit": rec["fit"],
        "wall_s": wall,
        "grid": rec["grid"],
        "ms_mttkrp": rec.get("ms_mttkrp"),
        "ms_exchange": rec.get("ms_exchange"),
        "imbalance": rec.get("imbalance"),
    }


def splatt(args, env, p, path):
    cmd = args.mpirun + ["-np", str(p), args.splatt, "cpd", path, "-r", str(args.rank), "-i", str(args.iters),
                         "--tol", "0", "-t", str(args.threads), "--nowrite"]
    wall, out = run(cmd, env, args.timeout)
    sweeps = [float(s) for s in re.findall(r"its =\s*\d+ \(([0-9.]+)s\)", out)]
    volume = re.search(r"AVG COMMUNICATION VOL=(\d+)", out)
    fit = re.search(r"Final fit: ([0-9.]+)", out)
    dims = re.search(r"DISTRIBUTION=MEDIUM DIMS=([0-9x]+)", out)
    value_size = 4 if args.dtype == "float32" else 8
    return {
        "s_per_iter": statistics.median(sweeps[1:] if len(sweeps) > 1 else sweeps),
        "bytes_per_iter": int(volume.group(1)) * p * args.rank * value_size / 2 if volume else 0.0,
        "before_iterations_s": splatt_before_iterations(out),
        "fit": float(fit.group(1)) if fit else None,
        "wall_s": wall,
        "grid": dims.group(1) if dims else "1",
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="our bench_mpi")
    ap.add_argument("--splatt", required=True, help="splatt built with --with-mpi")
    ap.add_argument("--tensor", action="append", required=True,
                    help="a .tns, .tns.xz or SPLATT .bin file (repeatable)")
    ap.add_argument("--ranks", default="1,2,4,8,16")
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1, help="OpenMP threads per rank, both tools")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--mpirun-flags", default="--bind-to core --map-by core")
    ap.add_argument("--first", default="alternate", choices=["alternate", "ours", "splatt"],
                    help="which tool runs first at each P")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--out", help="JSON lines file (appended)")
    args = ap.parse_args()
    args.mpirun = [args.mpirun] + shlex.split(args.mpirun_flags)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS="1", OMP_WAIT_POLICY="passive")
    ranks = [int(p) for p in args.ranks.split(",")]
    scratch = tempfile.mkdtemp(prefix="mpi-vs-splatt-")
    records = []
    for tensor in args.tensor:
        if tensor.endswith(".bin"):
            name, path = os.path.basename(tensor)[:-len(".bin")], tensor
        else:
            name = os.path.basename(tensor).split(".tns")[0]
            path = plain_text(os.path.dirname(tensor) or ".", name, scratch)
        for i, p in enumerate(ranks):
            order = [("ours", ours), ("splatt", splatt)]
            if args.first == "splatt" or (args.first == "alternate" and i % 2):
                order.reverse()
            for tool, fn in order:
                r = fn(args, env, p, path)
                r.update(tool=tool, tensor=name, ranks=p, threads=args.threads, rank=args.rank, iters=args.iters,
                         dtype=args.dtype, host=platform.node(), cpus=os.cpu_count(),
                         date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
                records.append(r)
                print(json.dumps(r), flush=True)
                if args.out:
                    with open(args.out, "a") as f:
                        f.write(json.dumps(r) + "\n")
    base = {(r["tool"], r["tensor"]): r["s_per_iter"] for r in records if r["ranks"] == 1}
    print("%-22s %3s | %9s %9s %5s | %5s %5s | %9s %9s | %7s %7s" %
          ("tensor", "P", "ours ms", "SPLATT ms", "ratio", "eff", "eff S", "ours MB", "SPLATT MB", "set-up", "SPLATT"))
    for r in records:
        if r["tool"] != "ours":
            continue
        s = next(x for x in records if x["tool"] == "splatt" and x["tensor"] == r["tensor"] and x["ranks"] == r["ranks"])
        def eff(x):
            t1 = base.get((x["tool"], x["tensor"]))
            return t1 / (x["ranks"] * x["s_per_iter"]) if t1 else float("nan")
        print("%-22s %3d | %9.2f %9.2f %5.2f | %5.2f %5.2f | %9.2f %9.2f | %7.2f %7.2f" %
              (r["tensor"][:22], r["ranks"], r["s_per_iter"] * 1e3, s["s_per_iter"] * 1e3,
               r["s_per_iter"] / s["s_per_iter"], eff(r), eff(s), r["bytes_per_iter"] / 1e6,
               s["bytes_per_iter"] / 1e6, r["before_iterations_s"], s["before_iterations_s"] or float("nan")))


if __name__ == "__main__":
    main()
