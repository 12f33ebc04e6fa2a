#!/usr/bin/env bash
# GPU kernels of two source trees side by side, on the GPU machine, from the
# repository root after `source .device-deps/setup-env.sh`:
#   BASE_SRC=DIR bash benchmarks/gpu_before_after.sh TENSOR.tns...
# BASE_SRC is the other tree (e.g. `git archive REV | tar -x -C DIR`). Both
# are built with the CUDA plugin for sm_90 (build-base, build-gpu); then
# bench_gpu (float32 MTTKRP of every GPU format per mode, CP-ALS per
# iteration) runs ROUNDS times per tree, alternating base and this tree,
# on the given tensors and a generated Zipf tensor of SYNTHETIC nonzeros.
# Writes the JSON lines of each run and table.txt (per case the smaller of
# the runs' medians, and new / base) to $OUT (default
# benchmarks/results/gpu-local).
#   RANKS (16,32)  REPEATS (10)  CPD (3 sweeps)  ROUNDS (2)
#   SYNTHETIC (20000000; empty for none)
set -uo pipefail
out="${OUT:-benchmarks/results/gpu-local}"
base_src="${BASE_SRC:?BASE_SRC=the other source tree}"
mkdir -p "$out"
. "$(dirname "$0")/tools/gpu_build.sh"
gpu_configure_and_build "$base_src" build-base "$out/build-base.log" bench_gpu sptensor_cuda || exit 1
gpu_configure_and_build . build-gpu "$out/build-new.log" bench_gpu sptensor_cuda || exit 1
echo "gpu_before_after: both trees built"

# bench_gpu appends to --json files: start from empty ones.
rm -f "$out"/base-*.jsonl "$out"/new-*.jsonl
args=(--ranks "${RANKS:-16,32}" --repeats "${REPEATS:-10}" --cpd "${CPD:-3}")
[ -n "${SYNTHETIC-20000000}" ] && args+=(--synthetic "${SYNTHETIC-20000000}")
for round in $(seq 1 "${ROUNDS:-2}"); do
  for side in base new; do
    dir=build-gpu
    [ "$side" = base ] && dir=build-base
    SPT_PLUGIN_PATH="$PWD/$dir" "$dir/benchmarks/bench_gpu" "${args[@]}" \
      --json "$out/$side-$round.jsonl" "$@" > "$out/$side-$round.log" 2>&1 \
      || { tail -20 "$out/$side-$round.log"; exit 1; }
  done
done
python3 benchmarks/tools/before_after_table.py "$out" > "$out/table.txt"
cat "$out/table.txt"
