#!/usr/bin/env python3
"""Markdown tables from bench_gpu JSON lines (benchmarks/gpu_formats.sh).

    gpu_formats_table.py FILE.jsonl [FILE.jsonl ...] > SUMMARY.md

Per tensor and rank: MTTKRP ms per mode for sorted COO, HiCOO, F-COO and
HB-CSF (rooted at that mode; "-" where a format has no record, e.g. HB-CSF
for order 2 or above 8),
the effective bandwidth of the fastest (fraction of 3.0 TB/s), and CP-ALS
seconds per iteration (GPU COO, GPU F-COO, CPU with the host's threads).
"""
import collections
import json
import sys

rows = []
for path in sys.argv[1:]:
    rows += [json.loads(line) for line in open(path) if line.startswith("{")]

mttkrp = collections.defaultdict(dict)  # (tensor, rank) -> {(format, mode): record}
cpd = collections.defaultdict(dict)     # (tensor, rank) -> {label: s/iter}
nnz = {}
for r in rows:
    nnz[r["tensor"]] = r["nnz"]
    if r["bench"].startswith("gpu_mttkrp_"):
        fmt = r["bench"][len("gpu_mttkrp_"):]
        mttkrp[(r["tensor"], r["rank"])][(fmt, r["mode"])] = r
    elif r["bench"] == "cpd_iter":
        label = f"{r['backend']}-{r['format']}" if r["backend"] == "cuda" else f"cpu{r['threads']}"
        cpd[(r["tensor"], r["rank"])][label] = r["seconds_per_iter_median"]

FORMATS = ("coo", "hicoo", "fcoo", "hbcsf")


def ms(rec):
    return rec["kernel_ms_median"] if rec else float("nan")


def ms_text(rec):
    return f"{rec['kernel_ms_median']:.3f}" if rec else "-"

order = sorted({t for t, _ in mttkrp}, key=lambda t: nnz[t])
for rank in sorted({k for _, k in mttkrp}):
    print(f"\n### MTTKRP, rank {rank}, float32 (ms per mode: sorted COO / HiCOO / F-COO / HB-CSF; best format's effective bandwidth)\n")
    print("| tensor | nnz | COO | HiCOO | F-COO | HB-CSF | best eff. BW |")
    print("| --- | ---: | --- | --- | --- | --- | --- |")
    for t in order:
        d = mttkrp.get((t, rank))
        if not d:
            continue
        modes = sorted({m for _, m in d})
        cols = []
        for fmt in FORMATS:
            cols.append(" / ".join(ms_text(d.get((fmt, m))) for m in modes))
        effs = []
        for m in modes:
            best = min((d[(f, m)] for f in FORMATS if (f, m) in d), key=ms)
            effs.append(best["fraction_of_3TBps"] * 100)
        print(f"| {t} | {nnz[t]:,} | {' | '.join(cols)} | {min(effs):.0f}-{max(effs):.0f}% |")

print("\n### CP-ALS seconds per iteration, float32 (median of 5): GPU COO / GPU F-COO / CPU (16 threads)\n")
print("| tensor | rank | GPU COO | GPU F-COO | CPU | GPU speed-up |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for t in order:
    for rank in sorted({k for tt, k in cpd if tt == t}):
        c = cpd[(t, rank)]
        gpu = min(c.get("cuda-coo", float("inf")), c.get("cuda-fcoo", float("inf")))
        cpu = next((v for k, v in c.items() if k.startswith("cpu")), float("nan"))
        print(f"| {t} | {rank} | {c.get('cuda-coo', float('nan')):.4f} | {c.get('cuda-fcoo', float('nan')):.4f} | "
              f"{cpu:.4f} | {cpu / gpu:.1f}x |")
