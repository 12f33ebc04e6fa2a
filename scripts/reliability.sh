#!/usr/bin/env bash
# Reliability jobs of issue 10, one after another, with the wall time of each
# (scripts/test.sh runs this after the Release ctest unless SPT_RELIABILITY=0):
#   build     the clang ASan + UBSan build shared by the sanitizer suite and
#             the fuzzers (scripts/reliability_build.sh; default dir
#             <SPT_BUILD_DIR>/reliability, env SPT_RELIABILITY_BUILD_DIR)
#   asan      the test suite in that build (scripts/sanitize.sh test, leak
#             checks on). SPT_RELIABILITY_ASAN_TESTS=REGEX restricts it to
#             the tests matching REGEX.
#   valgrind  memcheck of the `sptensor` tool of the plain Release build in
#             SPT_BUILD_DIR (default build) on small inputs: info, convert,
#             cpd, tucker on nations, and the whole CLI bad-input catalogue;
#             zero errors and zero definite leaks (--error-exitcode).
#   fuzz      each fuzzer for SPT_FUZZ_SECONDS (default 60; scripts/fuzz.sh),
#             with executions and exec/s.
# Skip jobs with SPT_RELIABILITY_SKIP="build asan valgrind fuzz" (any subset).
# Exits non-zero when any job fails; the summary lists each job's result.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
skip=" ${SPT_RELIABILITY_SKIP:-} "
jobs=$(nproc 2>/dev/null || echo 2)
build=${SPT_BUILD_DIR:-build}
summary=()
status=0

run_job() {
  local name=$1
  shift
  if [[ $skip == *" $name "* ]]; then
    summary+=("$(printf '%-9s skipped' "$name")")
    return
  fi
  echo "=== reliability: $name"
  local start=$SECONDS
  "$@"
  local rc=$?
  local took=$((SECONDS - start))
  local result=ok
  if [[ $rc -ne 0 ]]; then
    result="FAILED (exit $rc)"
    status=1
  fi
  summary+=("$(printf '%-9s %-18s %4d min %02d s' "$name" "$result" $((took / 60)) $((took % 60)))")
}

source scripts/reliability_build.sh
rel_build=$(spt_reliability_dir)
# sanitize.sh and fuzz.sh use the same directory.
export SPT_RELIABILITY_BUILD_DIR=$rel_build
unset SPT_ASAN_BUILD_DIR SPT_FUZZ_BUILD_DIR

asan_job() {
  SPT_ASAN_TESTS=${SPT_RELIABILITY_ASAN_TESTS:-} bash scripts/sanitize.sh test
}

valgrind_job() {
  command -v valgrind > /dev/null || { echo "valgrind not found (scripts/deps.sh installs it)" >&2; return 1; }
  if [[ ! -f $build/CMakeCache.txt ]]; then
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null || return 1
  fi
  ninja -C "$build" -j"$jobs" sptensor_cli || return 1
  local abs_build
  abs_build=$(cd "$build" && pwd) || return 1
  local cli=$abs_build/sptensor work=$abs_build/valgrind-work
  local data=$root/tests/data/nations.tns.xz
  [[ -f $data ]] || data=$root/../shared/data/nations.tns.xz
  rm -rf "$work" && mkdir -p "$work"
  local vg=(valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=definite
            --errors-for-leak-kinds=definite --track-origins=no --suppressions="$root/scripts/valgrind.supp")
  local failures=0
  export OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1
  # memcheck runs a program on one core: the independent runs go two (nproc)
  # at a time. vrun's files are per process ($BASHPID); a background chain
  # counts its failures into a file.
  vrun() {
    if ! "${vg[@]}" "$cli" "$@" > "$work/last.$BASHPID.out" 2> "$work/last.$BASHPID.err"; then
      echo "valgrind: FAILED: sptensor $*" >&2
      cat "$work/last.$BASHPID.err" >&2
      failures=$((failures + 1))
    fi
  }
  if [[ -f $data ]]; then
    (  # Poisson CP and Tucker need nothing from the chain below.
      failures=0
      vrun cpd "$data" -r 2 --iters 2 --model poisson
      vrun tucker "$data" -r 2,3,2 --iters 2
      echo "$failures" > "$work/side.failures"
    ) &
    local side=$!
    vrun info "$data"
    vrun convert "$data" "$work/n.sptb"
    vrun convert "$work/n.sptb" "$work/n.tns.gz"
    vrun info "$work/n.tns.gz" --dtype float32
    vrun cpd "$work/n.sptb" -r 3 --iters 3 --format csf -o "$work/model"
    vrun cpd "$data" -r 3 --iters 3 --format hicoo --init "$work/model"
    wait "$side"
    failures=$((failures + $(cat "$work/side.failures" 2> /dev/null || echo 1)))
  else
    echo "valgrind: nations.tns.xz not found; only the bad-input catalogue runs" >&2
  fi
  # Every bad-input case under memcheck (exit 99 = a valgrind error), nproc
  # cases at a time.
  SPT_BAD_INPUT_JOBS=$jobs bash tests/cli/bad_input.sh "$cli" "$work/bad-input" "${vg[@]}" || failures=$((failures + 1))
  echo "valgrind: $failures failure(s)"
  [[ $failures -eq 0 ]]
}

total_start=$SECONDS
run_job build bash scripts/sanitize.sh build
run_job asan asan_job
run_job valgrind valgrind_job
run_job fuzz bash scripts/fuzz.sh

took=$((SECONDS - total_start))
echo "=== reliability summary ($jobs cores, load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?'); build dir $rel_build)"
printf '%s\n' "${summary[@]}"
printf '%-9s %-18s %4d min %02d s\n' total "" $((took / 60)) $((took % 60))
exit $status
