#!/usr/bin/env bash
# CPU benchmark run: bench_sptensor over the benchmark tensors of
# ../shared/TARGETS.md (those present in the data directory), float32 and
# float64, rank 16 (override with SPT_BENCH_RANKS=16,32), with the thread
# settings the peer figures were taken with. Results go to
# benchmarks/results/cpu-<host>-<UTC date>.jsonl (JSON Lines, one object per
# measurement).
#   SPT_BUILD_DIR  build directory holding benchmarks/bench_sptensor (default build;
#                  configured and built here when the driver is missing)
#   SPT_DATA_DIR   where the .tns.xz files are (default ../shared/data)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=${SPT_BUILD_DIR:-build}
data=${SPT_DATA_DIR:-../shared/data}
ranks=${SPT_BENCH_RANKS:-16}
bench=$build/benchmarks/bench_sptensor
tensors=(mathsx-user-tag-week flights-2001 email-eu-day coads-climatology)

if [[ ! -x $bench ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
  cmake --build "$build" --parallel "$(nproc)" --target bench_sptensor
fi

export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
export OMP_WAIT_POLICY=passive
export OPENBLAS_NUM_THREADS=1
# "-dirty" marks runs of a working tree with uncommitted changes.
export SPT_COMMIT=${SPT_COMMIT:-$(git describe --always --dirty 2> /dev/null || echo unknown)}

cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)
host=$(echo "${cpu:-cpu}" | tr '[:upper:]' '[:lower:]' | sed 's/([^)]*)//g; s/[^a-z0-9]\+/-/g; s/^-//; s/-$//')
host="$host-${OMP_NUM_THREADS}t"
mkdir -p benchmarks/results
out=benchmarks/results/cpu-$host-$(date -u +%Y-%m-%dT%H%M%SZ).jsonl

echo "run_cpu.sh: $cpu, OMP_NUM_THREADS=$OMP_NUM_THREADS, commit $SPT_COMMIT -> $out" >&2
found=0
for t in "${tensors[@]}"; do
  file=$data/$t.tns.xz
  if [[ ! -f $file ]]; then
    echo "run_cpu.sh: skipping $t ($file not found)" >&2
    continue
  fi
  found=1
  for dtype in float32 float64; do
    # Reading is measured once per tensor (with float32 values).
    only=mttkrp,cpd
    [[ $dtype == float32 ]] && only=read,mttkrp,cpd
    "$bench" "$file" --rank "$ranks" --reps 10 --iters 10 --dtype "$dtype" --only "$only" \
      --threads "$OMP_NUM_THREADS" | tee -a "$out"
  done
done
if [[ $found -eq 0 ]]; then
  echo "run_cpu.sh: none of the benchmark tensors found in $data" >&2
  exit 1
fi
echo "run_cpu.sh: wrote $out" >&2
