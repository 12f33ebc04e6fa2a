#!/usr/bin/env bash
# GPU suite, run on the GPU machine from the repository root after
#   source .device-deps/setup-env.sh
# Builds with the CUDA plugin for sm_90 in build-gpu, runs the CUDA unit
# tests (then the whole test suite, for the AUTO=GPU path everywhere), and the
# GPU MTTKRP benchmark on the tensors in .data/. Logs and JSON lines go to
# $OUT (or benchmarks/results/gpu-local when OUT is unset).
set -uo pipefail
out="${OUT:-benchmarks/results/gpu-local}"
mkdir -p "$out"
build=build-gpu
jobs=$(nproc 2>/dev/null || echo 8)

{
  echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
  nvcc --version | tail -1
} | tee "$out/gpu_env.txt"

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPT_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DSPT_WITH_COMPRESSION=ON > "$out/gpu_build.log" 2>&1 || { tail -40 "$out/gpu_build.log"; exit 1; }
ninja -C "$build" -j"$jobs" >> "$out/gpu_build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$out/gpu_build.log" | head -60; exit 1; }
echo "build OK"

# The plugin sits beside libsptensor.so in the build dir; statically linked
# test and benchmark executables find it through SPT_PLUGIN_PATH.
export SPT_PLUGIN_PATH="$PWD/$build/libsptensor_cuda.so"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-16}

# The GPU machine's build may lack liblzma: unpack tests/data for test_cuda.
mkdir -p .data/plain
for f in tests/data/*.tns.xz; do
  python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
    "$f" ".data/plain/$(basename "${f%.xz}")"
done
export SPT_TEST_DATA_PLAIN="$PWD/.data/plain"

"$build/tests/test_cuda" 2>&1 | tee "$out/gpu_test_cuda.log" | tail -25
(cd "$build" && ctest --output-on-failure -j12 --timeout 300) > "$out/gpu_ctest.log" 2>&1
echo "ctest (all, AUTO -> GPU): $(grep -E 'tests passed|tests failed' "$out/gpu_ctest.log")"
grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess)" "$out/gpu_ctest.log" | head -20

# The full .data/ is too big to carry to the device machine (64 MiB limit):
# there, carry .data/xz (the compressed FROSTT files) and unpack them here.
for t in mathsx-user-tag-week flights-2001; do
  if [ ! -f ".data/$t.f32.sptb" ] && [ ! -f ".data/$t.tns" ] && [ -f ".data/xz/$t.tns.xz" ]; then
    python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
      ".data/xz/$t.tns.xz" ".data/$t.tns"
  fi
done
tensors=()
for t in mathsx-user-tag-week flights-2001; do
  for f in .data/$t.f32.sptb .data/$t.sptb .data/$t.tns; do
    if [ -f "$f" ]; then tensors+=("$f"); break; fi
  done
done
json="$out/gpu_mttkrp.jsonl"
: > "$json"
"$build/benchmarks/bench_gpu" --ranks 16,32 --repeats 20 --json "$json" --synthetic 16000000 "${tensors[@]}" \
  2>&1 | tee "$out/gpu_bench.log"
echo "done: results in $out"
