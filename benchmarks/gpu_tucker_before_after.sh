#!/usr/bin/env bash
# GPU Tucker-HOOI per iteration of two source trees side by side, on the GPU
# machine, from the repository root after `source .device-deps/setup-env.sh`:
#   BASE_SRC=DIR bash benchmarks/gpu_tucker_before_after.sh TENSOR.tns...
# BASE_SRC is the other tree (e.g. `git archive REV | tar -x -C DIR`). Both
# are built with the CUDA plugin for sm_90 (build-base, build-gpu); then
# bench_gpu_tucker (float32 sweeps with each TTMc route: the dispatcher's
# pick and each one forced) runs ROUNDS times per tree, alternating base and
# this tree. Writes the JSON lines of each run and table.txt (per case the
# smaller of the runs' median sweep times, and new / base) to $OUT (default
# benchmarks/results/gpu-local).
#   RANKS (16)  ITERS (5)  ROUTES (auto,fcoo,chain,hls)  ROUNDS (2)  THREADS (16)
#   BASE_COMMIT, NEW_COMMIT: the records' "commit" (default base, new)
set -uo pipefail
out="${OUT:-benchmarks/results/gpu-local}"
base_src="${BASE_SRC:?BASE_SRC=the other source tree}"
mkdir -p "$out"
. "$(dirname "$0")/tools/gpu_build.sh"
gpu_configure_and_build "$base_src" build-base "$out/build-base.log" bench_gpu_tucker sptensor_cuda || exit 1
gpu_configure_and_build . build-gpu "$out/build-new.log" bench_gpu_tucker sptensor_cuda || exit 1
echo "gpu_tucker_before_after: both trees built"

rm -f "$out"/base-*.jsonl "$out"/new-*.jsonl
args=(--ranks "${RANKS:-16}" --iters "${ITERS:-5}" --routes "${ROUTES:-auto,fcoo,chain,hls}" --threads "${THREADS:-16}")
for round in $(seq 1 "${ROUNDS:-2}"); do
  for side in base new; do
    dir=build-gpu commit="${NEW_COMMIT:-new}"
    [ "$side" = base ] && dir=build-base commit="${BASE_COMMIT:-base}"
    SPT_COMMIT="$commit" SPT_PLUGIN_PATH="$PWD/$dir" OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1 \
      "$dir/benchmarks/bench_gpu_tucker" "${args[@]}" "$@" > "$out/$side-$round.jsonl" 2> "$out/$side-$round.log" \
      || { tail -20 "$out/$side-$round.log"; exit 1; }
  done
done
python3 benchmarks/tools/before_after_table.py "$out" > "$out/table.txt"
cat "$out/table.txt"
