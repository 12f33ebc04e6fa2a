#!/usr/bin/env bash
# Reliability jobs of issue 10, one after another, with the wall time of each:
#   (a) sanitizers: the test suite under ASan + UBSan (scripts/sanitize.sh,
#       build dir build-asan). SPT_RELIABILITY_ASAN_TESTS=REGEX restricts it
#       to the tests matching REGEX (a fast subset; the build is the same).
#   (b) valgrind memcheck of the `sptensor` tool on small inputs (a plain
#       Release build in SPT_BUILD_DIR, default build): info, convert, cpd,
#       tucker on nations, and the whole CLI bad-input catalogue; zero
#       errors and zero definite leaks (--error-exitcode).
#   (c) the fuzzers (scripts/fuzz.sh), SPT_FUZZ_SECONDS each (default 60).
# Skip a job with SPT_RELIABILITY_SKIP="asan valgrind fuzz" (any subset).
# Exits non-zero when any job fails; the summary lists each job's result.
set -uo pipefail
cd "$(dirname "$0")/.."
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

asan_job() {
  if [[ -n ${SPT_RELIABILITY_ASAN_TESTS:-} ]]; then
    local dir=${SPT_ASAN_BUILD_DIR:-build-asan}
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPT_WITH_CUDA=OFF \
      -DSPT_SANITIZE=address,undefined -DSPT_BUILD_BENCHMARKS=OFF > /dev/null || return 1
    ninja -C "$dir" -j"$jobs" || return 1
    (cd "$dir" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      OMP_WAIT_POLICY=passive ctest -j"$jobs" --timeout 900 --output-on-failure \
      -R "$SPT_RELIABILITY_ASAN_TESTS" -E "pyttb|client_c_install")
  else
    bash scripts/sanitize.sh
  fi
}

valgrind_job() {
  command -v valgrind > /dev/null || { echo "valgrind not found (scripts/deps.sh installs it)" >&2; return 1; }
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null || return 1
  ninja -C "$build" -j"$jobs" sptensor_cli || return 1
  local cli=$root/$build/sptensor work=$root/$build/valgrind-work
  local data=$root/tests/data/nations.tns.xz
  [[ -f $data ]] || data=$root/../shared/data/nations.tns.xz
  rm -rf "$work" && mkdir -p "$work"
  local vg=(valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=definite
            --errors-for-leak-kinds=definite --track-origins=no)
  local failures=0
  export OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1
  vrun() {
    if ! "${vg[@]}" "$cli" "$@" > "$work/last.out" 2> "$work/last.err"; then
      echo "valgrind: FAILED: sptensor $*" >&2
      cat "$work/last.err" >&2
      failures=$((failures + 1))
    fi
  }
  if [[ -f $data ]]; then
    vrun info "$data"
    vrun convert "$data" "$work/n.sptb"
    vrun convert "$work/n.sptb" "$work/n.tns.gz"
    vrun info "$work/n.tns.gz" --dtype float32
    vrun cpd "$work/n.sptb" -r 3 --iters 3 --format csf -o "$work/model"
    vrun cpd "$data" -r 3 --iters 3 --format hicoo --init "$work/model"
    vrun cpd "$data" -r 2 --iters 2 --model poisson
    vrun tucker "$data" -r 2,3,2 --iters 2
  else
    echo "valgrind: nations.tns.xz not found; only the bad-input catalogue runs" >&2
  fi
  # Every bad-input case under memcheck (exit 99 = a valgrind error).
  bash tests/cli/bad_input.sh "$cli" "$work/bad-input" "${vg[@]}" || failures=$((failures + 1))
  echo "valgrind: $failures failure(s)"
  [[ $failures -eq 0 ]]
}

run_job asan asan_job
run_job valgrind valgrind_job
run_job fuzz bash scripts/fuzz.sh

echo "=== reliability summary ($jobs cores)"
printf '%s\n' "${summary[@]}"
exit $status
