#!/usr/bin/env bash
# CPU CP-ALS per iteration of two source trees side by side, from the
# repository root:
#   BASE_SRC=DIR bash benchmarks/cpu_cpd_before_after.sh TENSOR.tns...
# BASE_SRC is the other tree (e.g. `git archive REV | tar -x -C DIR`). Both
# are built Release without CUDA, MPI or Fortran (bench_formats only, each
# tree's own) in $OUT/build-base and $OUT/build-new. Then, ROUNDS times, for
# each tensor, bench_formats runs once per tree (base, then new):
#   bench_formats T --formats auto --only cpd --iters 10 --threads THREADS
#                   --rank RANK --dtype DTYPE
# with OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1, and table.txt gets per
# tensor the median of the runs' per-iteration medians, the least minimum,
# the median whole run (reading excluded, set-up included) and the fits.
#   OUT (benchmarks/results/cpu-cpd-local)  ROUNDS (6)  THREADS (2)
#   RANK (16)  DTYPE (float32)
set -uo pipefail
out="${OUT:-benchmarks/results/cpu-cpd-local}"
base_src="${BASE_SRC:?BASE_SRC=the other source tree}"
mkdir -p "$out"
jobs=$(nproc 2>/dev/null || echo 2)
for side in base new; do
  src=.
  [ "$side" = base ] && src="$base_src"
  cmake -S "$src" -B "$out/build-$side" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPT_WITH_CUDA=OFF -DSPT_WITH_MPI=OFF \
    -DSPT_WITH_FORTRAN=OFF > "$out/build-$side.log" 2>&1 || { tail -20 "$out/build-$side.log"; exit 1; }
  ninja -C "$out/build-$side" -j"$jobs" bench_formats >> "$out/build-$side.log" 2>&1 ||
    { grep -E "error|FAILED" -A3 "$out/build-$side.log" | head -30; exit 1; }
done
rm -f "$out"/base-*.jsonl "$out"/new-*.jsonl
for round in $(seq 1 "${ROUNDS:-6}"); do
  for t in "$@"; do
    for side in base new; do
      OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1 "$out/build-$side/benchmarks/bench_formats" "$t" --formats auto \
        --only cpd --iters 10 --threads "${THREADS:-2}" --rank "${RANK:-16}" --dtype "${DTYPE:-float32}" \
        >> "$out/$side-$round.jsonl" 2> /dev/null || echo "cpu_cpd_before_after: $side failed on $t" >&2
    done
  done
done
python3 - "$out" <<'PY' > "$out/table.txt"
import collections, glob, json, os, statistics, sys
out = sys.argv[1]
runs = collections.defaultdict(list)
fits = {}
for path in glob.glob(os.path.join(out, "*-*.jsonl")):
    side = os.path.basename(path).split("-")[0]
    for line in open(path):
        r = json.loads(line)
        if r.get("bench") != "cpd_iter":
            continue
        runs[(r["tensor"], side)].append(r)
        fits[(r["tensor"], side)] = r.get("fit")
print("tensor                 | ms/iter median of medians: base    new  ratio | least min: base    new  ratio"
      " | whole run median: base     new  ratio | fit base, new")
for t in sorted({k[0] for k in runs}):
    b, n = runs[(t, "base")], runs[(t, "new")]
    med = [statistics.median(x["ms_median"] for x in s) for s in (b, n)]
    least = [min(x["ms_min"] for x in s) for s in (b, n)]
    total = [statistics.median(x["ms_total"] for x in s) for s in (b, n)]
    print(f"{t:22s} | {med[0]:30.3f} {med[1]:6.3f} {med[1] / med[0]:6.2f} | {least[0]:15.3f} {least[1]:6.3f}"
          f" {least[1] / least[0]:6.2f} | {total[0]:22.1f} {total[1]:7.1f} {total[1] / total[0]:6.2f}"
          f" | {fits[(t, 'base')]:.6f}, {fits[(t, 'new')]:.6f}")
PY
cat "$out/table.txt"
