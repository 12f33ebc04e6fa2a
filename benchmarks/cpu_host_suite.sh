#!/usr/bin/env bash
# CPU-only format benchmarks with thread scaling (1/2/4/8/16), for a
# many-core host such as the GPU machine's 16-core CPU. Run from the
# repository root after a build (default build dir: build-gpu, as made by
# benchmarks/gpu_suite.sh; any build with benchmarks works):
#   bash benchmarks/cpu_host_suite.sh [BUILD_DIR]
# Environment: TENSORS (names, default the four TARGETS.md tensors),
# THREADS (default "1 2 4 8 16"), RANKS_AT_MAX (extra ranks run at the
# largest thread count, default 32), JSON (output name, default
# cpu_host_formats.jsonl).
# Tensors: .data/NAME.tns, or .data/xz/NAME.tns.xz unpacked with Python
# (the device build may lack liblzma). JSON Lines (bench_formats keys) go to
# $OUT/cpu_host_formats.jsonl (or benchmarks/results/cpu-host-local/).
set -uo pipefail
build="${1:-build-gpu}"
out="${OUT:-benchmarks/results/cpu-host-local}"
mkdir -p "$out"
json="$out/${JSON:-cpu_host_formats.jsonl}"
: > "$json"
# CPU only: on a GPU machine AUTO would send COO MTTKRPs to the device.
export SPT_BACKEND=cpu OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1
read -r -a tensors <<< "${TENSORS:-mathsx-user-tag-week flights-2001 email-eu-day coads-climatology}"
read -r -a thread_counts <<< "${THREADS:-1 2 4 8 16}"
max_threads=${thread_counts[-1]}
for t in "${tensors[@]}"; do
  if [ ! -f ".data/$t.tns" ] && [ -f ".data/xz/$t.tns.xz" ]; then
    python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
      ".data/xz/$t.tns.xz" ".data/$t.tns"
  fi
done
echo "== $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) ($(nproc) cpus)" | tee "$out/cpu_host_env.txt"
formats=coo,hicoo,csf-allmode,csf-onemode,csf-memo,auto
for t in "${tensors[@]}"; do
  [ -f ".data/$t.tns" ] || { echo "skip $t (no data)"; continue; }
  for threads in "${thread_counts[@]}"; do
    OMP_NUM_THREADS=$threads "$build/benchmarks/bench_formats" ".data/$t.tns" --tensor "$t" --threads "$threads" \
      --rank 16 --formats "$formats" --reps 5 --iters 5 >> "$json" 2>> "$out/cpu_host_formats.log" ||
      echo "bench_formats failed: $t threads $threads" | tee -a "$out/cpu_host_formats.log"
  done
  OMP_NUM_THREADS=$max_threads "$build/benchmarks/bench_formats" ".data/$t.tns" --tensor "$t" \
    --threads "$max_threads" --rank "${RANKS_AT_MAX:-32}" \
    --formats "$formats" --reps 5 --iters 5 >> "$json" 2>> "$out/cpu_host_formats.log" ||
    echo "bench_formats failed: $t rank 32" | tee -a "$out/cpu_host_formats.log"
  echo "$t done ($(wc -l < "$json") records)"
done
