#!/usr/bin/env python3
"""Whole-run time and peak memory of `sptensor cpd` against `splatt cpd`.

Runs both command-line tools on the same text tensor, one after the other
and alternating which goes first, with the same rank, iteration count (tol 0
for both, so every sweep runs), value type (--dtype: float32 by default,
SPLATT built with `./configure --index-size=32 --precision=single`; for
float64 a build with `--precision=double`) and thread count. Each run
goes through `/usr/bin/time -v`: peak memory is its "Maximum resident set
size", whole-run time is the wall clock around the process (read + set-up +
iterations + exit). Each tool's own per-iteration figure, and its time
before the iterations (read + set-up: ours "read R s, set-up S s",
SPLATT's TOTAL less CPD), are parsed from its output too. Reports the minimum over the repeats of
each (and the maximum of the peak memory) as one JSON object per tool and
tensor, a summary table on stdout, and the start-up cost of a tiny run
(`sptensor cpd -r 1` of a 2-nonzero tensor).

  benchmarks/cpu_vs_splatt.py --splatt /path/to/splatt/build/Linux-x86_64/bin/splatt \\
      [--sptensor build/sptensor] [--data ../shared/data] [--repeats 3] \\
      [--tensors email-eu-day,coads-climatology] [--out benchmarks/results/X.jsonl]

Run it the way TARGETS.md compares peers: OMP_NUM_THREADS=<threads>,
OMP_WAIT_POLICY=passive, OPENBLAS_NUM_THREADS=1 (set here for both tools).
Compressed inputs (.tns.xz) are decompressed once into $TMPDIR, since SPLATT
reads plain text only.
"""
import argparse
import json
import lzma
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

DEFAULT_TENSORS = [
    "mathsx-user-tag-week",
    "flights-2001",
    "email-eu-day",
    "coads-climatology",
    "text-trigrams-mc100",
]


def timed_run(cmd, env):
    """Runs cmd under /usr/bin/time -v; returns (wall seconds, peak MiB, stdout)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tv:
        start = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-v", "-o", tv.name] + cmd, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - start
        report = tv.read()
    if proc.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), proc.returncode, proc.stderr[-2000:]))
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", report).group(1))
    return wall, rss_kb / 1024.0, proc.stdout


def ours_per_iteration(out):
    m = re.search(r"\(([0-9.]+) s per iteration\)", out)
    return float(m.group(1)) if m else None


def splatt_per_iteration(out, iters):
    # SPLATT prints "  CPD  X.XXXs" in its timing summary (the whole ALS loop).
    m = re.search(r"^\s*CPD\s+([0-9.]+)s", out, re.M)
    return float(m.group(1)) / iters if m else None


def ours_before_iterations(out):
    """Seconds before the first iteration (read + set-up) from sptensor's final line."""
    m = re.search(r"read ([0-9.]+) s, set-up ([0-9.]+) s", out)
    return float(m.group(1)) + float(m.group(2)) if m else None


def splatt_before_iterations(out):
    """Seconds outside the ALS loop from SPLATT's timing summary: TOTAL less
    CPD (reading the file, building its CSF trees and the rest of its set-up)."""
    times = dict(re.findall(r"^\s*(TOTAL|CPD)\s+([0-9.]+)s", out, re.M))
    return float(times["TOTAL"]) - float(times["CPD"]) if len(times) == 2 else None


def plain_text(data_dir, name, scratch):
    for ext in (".tns", ".tns.xz"):
        path = os.path.join(data_dir, name + ext)
        if os.path.exists(path):
            break
    else:
        raise FileNotFoundError("no %s.tns[.xz] in %s" % (name, data_dir))
    if ext == ".tns":
        return path
    out = os.path.join(scratch, name + ".tns")
    if not os.path.exists(out):
        with lzma.open(path, "rb") as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 22)
    return out


def summarise(runs):
    return {
        "wall_s_min": min(r[0] for r in runs),
        "wall_s_all": [round(r[0], 4) for r in runs],
        "peak_mib_min": min(r[1] for r in runs),
        "peak_mib_max": max(r[1] for r in runs),
        "per_iteration_s_min": min((r[2] for r in runs if r[2] is not None), default=None),
        "before_iterations_s_min": min((r[3] for r in runs if len(r) > 3 and r[3] is not None), default=None),
    }


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sptensor", default=os.path.join(here, "build", "sptensor"))
    ap.add_argument("--splatt", required=True, help="SPLATT's command-line tool (a build of --dtype's precision)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"],
                    help="our value type; SPLATT's is fixed at its build (--precision=single or double)")
    ap.add_argument("--baseline", default=None,
                    help="a second sptensor (e.g. built from the commit before a change), run in the same rotation")
    ap.add_argument("--data", default=os.path.join(here, "..", "shared", "data"))
    ap.add_argument("--tensors", default=",".join(DEFAULT_TENSORS))
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--label", default="", help="free text stored with each record (e.g. the commit)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OMP_WAIT_POLICY="passive", OPENBLAS_NUM_THREADS="1")
    host = platform.node()
    out_path = args.out or os.path.join(
        here, "benchmarks", "results", "cpu-vs-splatt-%s-%s.jsonl" % (host, time.strftime("%Y-%m-%dT%H%MZ", time.gmtime())))
    scratch = os.environ.get("TMPDIR", "/tmp")
    records = []

    # Start-up: a 2-nonzero tensor, rank 1 (time and memory of loading the
    # library, reading, setting up and running a few sweeps).
    with tempfile.TemporaryDirectory() as d:
        tiny = os.path.join(d, "tiny.tns")
        with open(tiny, "w") as f:
            f.write("1 1 1 1.0\n2 2 2 2.0\n")
        runs = []
        for _ in range(max(5, args.repeats)):
            wall, rss, _ = timed_run([args.sptensor, "cpd", tiny, "-r", "1", "-q"], env)
            runs.append((wall, rss, None))
        rec = dict(tool="sptensor", case="start-up", tensor="2 nonzeros, 2x2x2", label=args.label, host=host,
                   threads=args.threads, **summarise(runs))
        records.append(rec)
        print("start-up: %.1f ms, %.1f MiB (min of %d)" % (rec["wall_s_min"] * 1e3, rec["peak_mib_min"], len(runs)))

    for name in [t for t in args.tensors.split(",") if t]:
        path = plain_text(args.data, name, scratch)
        ours_cmd = [args.sptensor, "cpd", path, "-r", str(args.rank), "-n", str(args.iters), "--tol", "0",
                    "--dtype", args.dtype, "-t", str(args.threads), "-q"]
        splatt_cmd = [args.splatt, "cpd", path, "-r", str(args.rank), "-i", str(args.iters), "--tol", "0",
                      "-t", str(args.threads), "--nowrite"]
        tools = [("sptensor", [args.sptensor] + ours_cmd[1:]), ("splatt", splatt_cmd)]
        if args.baseline:
            tools.append(("sptensor-baseline", [args.baseline] + ours_cmd[1:]))
        runs = {tool: [] for tool, _ in tools}
        for rep in range(args.repeats):
            for tool, cmd in tools[rep % len(tools):] + tools[:rep % len(tools)]:
                wall, rss, out = timed_run(cmd, env)
                per_it = splatt_per_iteration(out, args.iters) if tool == "splatt" else ours_per_iteration(out)
                before = splatt_before_iterations(out) if tool == "splatt" else ours_before_iterations(out)
                runs[tool].append((wall, rss, per_it, before))
        summary = {}
        for tool, _ in tools:
            summary[tool] = dict(tool=tool, case="cpd", tensor=name, label=args.label, host=host, rank=args.rank,
                                 iters=args.iters, threads=args.threads, dtype=args.dtype, repeats=args.repeats,
                                 **summarise(runs[tool]))
            records.append(summary[tool])
        b = summary["splatt"]
        for tool, _ in tools:
            if tool == "splatt":
                continue
            a = summary[tool]
            print("%-22s %-17s %7.2f s %8.1f MiB | SPLATT %7.2f s %8.1f MiB | time ratio %.2f, memory ratio %.2f" %
                  (name, tool, a["wall_s_min"], a["peak_mib_max"], b["wall_s_min"], b["peak_mib_max"],
                   a["wall_s_min"] / b["wall_s_min"], a["peak_mib_max"] / b["peak_mib_max"]))
            if a["before_iterations_s_min"] is not None and b["before_iterations_s_min"]:
                print("%-22s %-17s read + set-up %.3f s | SPLATT %.3f s | ratio %.2f" %
                      (name, tool, a["before_iterations_s_min"], b["before_iterations_s_min"],
                       a["before_iterations_s_min"] / b["before_iterations_s_min"]))
        sys.stdout.flush()

    with open(out_path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    print("wrote", out_path)


if __name__ == "__main__":
    main()
