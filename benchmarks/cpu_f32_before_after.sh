#!/usr/bin/env bash
# CPU float32 MTTKRP of two source trees side by side, from the repository
# root:
#   BASE_SRC=DIR bash benchmarks/cpu_f32_before_after.sh TENSOR.tns...
# BASE_SRC is the other tree (e.g. `git archive d8fea17 | tar -x -C DIR`).
# Both are built Release without CUDA (BASE_SRC/build-cpu-base and
# build-cpu-new; BASE_BUILD / NEW_BUILD name existing build folders to
# reuse; with SKIP_BUILD=1 their benchmarks/bench_formats are used as they
# are), bench_formats only, both from this tree's
# benchmarks/bench_formats.cpp (copied into BASE_SRC: the same harness on
# both sides; it records CPU time too; a tree from before spt_csf_from_coo
# builds it with -DSPT_BENCH_CSF_CREATE). Then, ROUNDS times, for each
# tensor and thread count, bench_formats runs once per tree, the order of
# the two trees swapped every round (base-new, new-base, ...):
#   bench_formats T --rank RANK --reps REPS --threads N --dtype float32
#                   --formats FORMATS --only mttkrp
# with OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1. Writes the JSON lines
# of each run, the load average before each (load.txt) and table.txt to
# $OUT (default benchmarks/results/cpu-f32-local): per tensor, format,
# threads and mode, the median over the rounds of each run's median
# (wall clock and process CPU time) and the least of the runs' minimums,
# base, new and new / base (benchmarks/tools/cpu_before_after_table.py).
# On a quiet machine the medians are the answer; on a loaded one (other
# programs' time slices) the CPU times and the minimums are steadier.
#   ROUNDS (6)  THREADS ("1 2")  RANK (16)  REPS (20)
#   FORMATS (hicoo,csf-allmode,csf-onemode)
set -uo pipefail
out="${OUT:-benchmarks/results/cpu-f32-local}"
base_src="${BASE_SRC:?BASE_SRC=the other source tree}"
mkdir -p "$out"
jobs=$(nproc 2>/dev/null || echo 2)
build() {  # SRC BUILD LOG
  # A tree from before spt_csf_from_coo: the harness takes the older calls.
  local flags=""
  grep -q "spt_csf_create(" "$1/include/sptensor/csf.h" && flags="-DSPT_BENCH_CSF_CREATE"
  # A tree from before the summary structs: spt_coo_info(x, &dtype, &order, &nnz).
  grep -q "spt_coo_info(const spt_coo \*x" "$1/include/sptensor/sptensor.h" && flags="$flags -DSPT_BENCH_OLD_COO_INFO"
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPT_WITH_CUDA=OFF -DCMAKE_CXX_FLAGS="$flags" > "$3" 2>&1 ||
    { tail -30 "$3"; return 1; }
  ninja -C "$2" -j"$jobs" bench_formats >> "$3" 2>&1 || { grep -E "error|FAILED" -A3 "$3" | head -40; return 1; }
}
base_build="${BASE_BUILD:-$base_src/build-cpu-base}"
new_build="${NEW_BUILD:-build-cpu-new}"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cp benchmarks/bench_formats.cpp benchmarks/bench_common.hpp "$base_src/benchmarks/" || exit 1
  build "$base_src" "$base_build" "$out/build-base.log" || exit 1
  build . "$new_build" "$out/build-new.log" || exit 1
  echo "cpu_f32_before_after: both trees built"
fi
[ $# -gt 0 ] || { echo "usage: BASE_SRC=DIR $0 TENSOR.tns..." >&2; exit 2; }

export OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1
: > "$out/load.txt"
for round in $(seq 1 "${ROUNDS:-6}"); do
  sides="base new"
  [ $((round % 2)) -eq 0 ] && sides="new base"
  for tensor in "$@"; do
    for threads in ${THREADS:-1 2}; do
      for side in $sides; do
        dir="$new_build"
        [ "$side" = base ] && dir="$base_build"
        echo "round $round $side $(basename "$tensor") threads $threads: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/load.txt"
        "$dir/benchmarks/bench_formats" "$tensor" --rank "${RANK:-16}" --reps "${REPS:-20}" --threads "$threads" \
          --dtype float32 --formats "${FORMATS:-hicoo,csf-allmode,csf-onemode}" --only mttkrp \
          >> "$out/$side-$round.jsonl" 2>> "$out/$side-$round.log" || { tail -20 "$out/$side-$round.log"; exit 1; }
      done
    done
  done
done
python3 benchmarks/tools/cpu_before_after_table.py "$out" > "$out/table.txt"
cat "$out/table.txt"
