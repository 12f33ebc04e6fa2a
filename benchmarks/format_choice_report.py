#!/usr/bin/env python3
"""How close the GPU format model's choice comes to the best measured format.

Reads bench_gpu JSON lines (gpu_mttkrp_{coo,hicoo,fcoo,hbcsf} kernel times
and gpu_format_choice records) and prints, per tensor-mode-rank, every
format's time, the best, the model's choice and its slowdown against the
best; then the share of tensor-modes where the choice is within 10% of the
best (issue 6 asks for >= 90%, and never more than 10% behind).

F-COO is held to its best threadlen: the "best" column takes the fastest of
its threadlen sweep (column fcoo*), while a choice of F-COO is charged the
time at the threadlen the rule picked (column fcoo, the record's
kernel_ms_median).

  python3 benchmarks/format_choice_report.py RESULTS.jsonl [...]
"""
import collections
import json
import sys

times = collections.defaultdict(dict)
choice = {}
for path in sys.argv[1:]:
    for line in open(path):
        line = line.strip()
        if not line.startswith('{'):
            continue
        r = json.loads(line)
        key = (r.get('tensor'), r.get('mode'), r.get('rank'))
        if r['bench'] == 'gpu_format_choice':
            choice[key] = r['choice']
        elif r['bench'].startswith('gpu_mttkrp_') and 'kernel_ms_median' in r:
            times[key][r['bench'][len('gpu_mttkrp_'):]] = r['kernel_ms_median']
            if r['bench'] == 'gpu_mttkrp_fcoo' and r.get('threadlen_sweep_ms'):
                times[key]['fcoo*'] = min(min(r['threadlen_sweep_ms'].values()), r['kernel_ms_median'])

within = total = 0
worst = []
cols = ('coo', 'hicoo', 'fcoo', 'fcoo*', 'hbcsf')
print(f"{'tensor':32s} {'mode':>4s} {'rank':>4s} " + ' '.join(f"{c:>9s}" for c in cols) + "  best   choice  vs best")
for key in sorted(times, key=lambda k: (k[0], k[2], k[1])):
    t = times[key]
    if key not in choice or choice[key] not in t:
        continue
    best = min((f for f in t if f != 'fcoo' or 'fcoo*' not in t), key=t.get)
    ratio = t[choice[key]] / t[best]
    total += 1
    within += ratio <= 1.10
    worst.append((ratio, key))
    cells = ' '.join(f"{t[f]:9.4f}" if f in t else f"{'-':>9s}" for f in cols)
    print(f"{key[0][:32]:32s} {key[1]:4d} {key[2]:4d} {cells}  {best:6s} {choice[key]:6s} {ratio:6.2f}x")
if total:
    print(f"\nchoice within 10% of the best format: {within} of {total} tensor-modes ({100.0 * within / total:.1f}%)")
    worst.sort(reverse=True)
    print("largest slowdowns: " + ', '.join(f"{k[0]} mode {k[1]} rank {k[2]} {r:.2f}x" for r, k in worst[:5]))
