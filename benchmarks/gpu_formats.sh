#!/usr/bin/env bash
# GPU formats run on the device machine: builds only the GPU targets
# (plugin, test_cuda, bench_gpu; MPI and Fortran off), then the parts named
# in PARTS (default "tests bench"; also hls, ttm, tucker):
#   tests     the whole of test_cuda (every GPU kernel against the reference)
#   bench     bench_gpu (MTTKRP on sorted COO, HiCOO, F-COO and HB-CSF per
#             mode; CP-ALS) on every tensor in .data/xz (or the files given as
#             arguments), smallest first, one process per tensor so a slow
#             tensor cannot lose the JSON of the others; then the synthetic
#             power-law tensors in $SYNTHETIC (default 50000000)
#   sanitize  test_cuda under compute-sanitizer: memcheck with --leak-check
#             full, then racecheck on the shared-memory kernels; summaries in
#             $OUT/sanitizer_*.log
# Carry [".device-deps", ".data/xz"] (the compressed FROSTT files); begin the
# command with `source .device-deps/setup-env.sh &&` or set DEPS.
#   run: bash benchmarks/gpu_formats.sh
set -uo pipefail
deps="${DEPS:-.device-deps}"
# shellcheck disable=SC1090
source "$deps/setup-env.sh"
out="${OUT:-benchmarks/results/gpu-local}"
mkdir -p "$out"
parts=" ${PARTS:-tests bench} "
has() { [[ "$parts" == *" $1 "* ]]; }
b=build-dev
tests=ON
has tests || has sanitize || tests=OFF
cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPT_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DSPT_WITH_MPI=OFF -DSPT_WITH_FORTRAN=OFF -DSPT_BUILD_TESTS=$tests > "$out/cfg.log" 2>&1 ||
  { tail -30 "$out/cfg.log"; exit 1; }
# Every GPU test (tests/unit/test_cuda*.cpp) and GPU benchmark (bench_gpu*).
targets="sptensor_cuda $(ninja -C $b -t targets all | grep -oE '^bench_gpu[a-z_]*:' | tr -d : | sort -u | tr '\n' ' ')"
[ $tests = ON ] && targets="$targets $(ninja -C $b -t targets all | grep -oE '^test_cuda[a-z_]*:' | tr -d : | sort -u | tr '\n' ' ')"
ninja -C $b -j16 $targets > "$out/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$out/build.log" | head -40; exit 1; }
echo "build OK $(date -u +%T)"
export SPT_PLUGIN_PATH=$PWD/$b OMP_NUM_THREADS=16
unxz_to() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2"; }
mkdir -p .data/plain
if [ $tests = ON ]; then
  for f in tests/data/*.tns.xz; do unxz_to "$f" ".data/plain/$(basename "${f%.xz}")"; done
  export SPT_TEST_DATA_PLAIN=$PWD/.data/plain
fi

if has tests; then
  for t in $b/tests/test_cuda*; do
    [ -x "$t" ] || continue
    n=$(basename "$t")
    timeout "${TEST_TIMEOUT:-300}" "$t" > "$out/$n.log" 2>&1
    echo "$n rc=$? $(grep -cE '^\[ +OK \]' "$out/$n.log") ok, $(grep -cE '^\[  FAILED  \]' "$out/$n.log") failed lines $(date -u +%T)"
    grep -E "^\[  FAILED|Failure" "$out/$n.log" | head -20
  done
fi

if has bench; then
  files=("$@")
  if [ ${#files[@]} -eq 0 ]; then mapfile -t files < <(ls -Sr .data/xz/*.tns.xz 2>/dev/null); fi
  json="$out/gpu_formats.jsonl"
  for f in "${files[@]}"; do
    t=$(basename "${f%.xz}"); plain=".data/plain/$t"
    case "$f" in *.xz) unxz_to "$f" "$plain" ;; *) cp "$f" "$plain" ;; esac
    timeout 240 $b/benchmarks/bench_gpu --ranks 16,32 --repeats 10 --json "$json" --cpd 5 --cpd-threads 16 "$plain" \
      >> "$out/bench.log" 2>&1
    echo "bench $t rc=$? $(date -u +%T)"
    rm -f "$plain"
  done
  if [ "${SYNTHETIC:-50000000}" != "0" ]; then
    timeout 300 $b/benchmarks/bench_gpu --ranks 16,32 --repeats 10 --json "$json" --cpd 5 --cpd-threads 16 \
      --synthetic "${SYNTHETIC:-50000000}" >> "$out/bench.log" 2>&1
    echo "bench synthetic rc=$? $(date -u +%T)"
  fi
fi

# The newer GPU benchmarks, each on the tensors in its *_FILES list (names
# in .data/xz, without .tns.xz), JSON lines into $out/<name>.jsonl.
bench_each() {  # bench_each NAME "TENSORS" ARGS...
  local name=$1 list=$2; shift 2
  for t in $list; do
    local f=.data/xz/$t.tns.xz plain=.data/plain/$t.tns
    [ -f "$f" ] || { echo "$name: $t missing"; continue; }
    unxz_to "$f" "$plain"
    timeout "${BENCH_TIMEOUT:-240}" $b/benchmarks/$name "$@" "$plain" >> "$out/$name.jsonl" 2>> "$out/$name.log"
    echo "$name $t rc=$? $(date -u +%T)"
    rm -f "$plain"
  done
}
if has hls; then
  timeout 240 $b/benchmarks/bench_gpu_hls --rank 16 >> "$out/bench_gpu_hls.jsonl" 2>> "$out/bench_gpu_hls.log"
  echo "bench_gpu_hls synthetic rc=$? $(date -u +%T)"
  bench_each bench_gpu_hls "${HLS_FILES:-aminoacids-eem coads-climatology flights-2001 email-eu-day fb15k237}" \
    --rank 16 --no-synthetic
fi
if has ttm; then
  bench_each bench_gpu_ttm "${TTM_FILES:-nations fb15k237 coads-climatology flights-2001 mathsx-user-tag-week}"
fi
if has tucker; then
  bench_each bench_gpu_tucker "${TUCKER_FILES:-kinship fb15k237 coads-climatology flights-2001}" --ranks 8,16 --iters 3
fi

if has sanitize; then
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  if [ -z "$cs" ]; then echo "compute-sanitizer not found"; exit 1; fi
  # The sanitizer slows kernels 10-100x: the filter keeps every kernel and
  # API path but the largest data-tensor sweeps.
  filter="${SANITIZE_FILTER:--*DataTensors*:*LongTensors*}"
  timeout "${SANITIZE_TIMEOUT:-330}" "$cs" --tool memcheck --leak-check full --error-exitcode 99 \
    $b/tests/test_cuda --gtest_filter="$filter" > "$out/sanitizer_memcheck.log" 2>&1
  echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|LEAK SUMMARY' "$out/sanitizer_memcheck.log" | tr '\n' ' ')"
  grep -E "^\[  FAILED|Failure" "$out/sanitizer_memcheck.log" | head -10
  timeout "${RACECHECK_TIMEOUT:-150}" "$cs" --tool racecheck --error-exitcode 99 \
    $b/tests/test_cuda --gtest_filter="${RACECHECK_FILTER:-*Fcoo*Random*:*Hicoo*Random*:*Hbcsf*Random*}" > "$out/sanitizer_racecheck.log" 2>&1
  echo "racecheck rc=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$out/sanitizer_racecheck.log" | tr '\n' ' ')"
fi
echo "done $(date -u +%T)"
