#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, ASan + UBSan, in the
# build shared with the sanitizer suite: scripts/reliability_build.sh,
# default build/reliability; env SPT_RELIABILITY_BUILD_DIR, or
# SPT_FUZZ_BUILD_DIR for this script alone) and runs each for a bounded time
# (env SPT_FUZZ_SECONDS, default 60) from the seed corpus in
# tests/fuzz/corpus/NAME (never modified: new inputs go to
# BUILD/fuzz-work/NAME). Prints executions and executions per second per
# fuzzer; exits non-zero on any finding (crash, leak, sanitizer report,
# timeout, or an allocation above SPT_FUZZ_MALLOC_MB, default 2048),
# whose input is saved as BUILD/fuzz-findings/NAME-*.
#   scripts/fuzz.sh [NAME...]     (default: all fuzzers)
# Env: SPT_FUZZ_SECONDS, SPT_FUZZ_JOBS (build jobs, default nproc),
#      SPT_FUZZ_PARALLEL (fuzzers run at once, default nproc: each fuzzer is
#      one single-threaded process, so on 2 cores two at a time get the same
#      SPT_FUZZ_SECONDS of a core each as one after the other, in half the
#      wall time), SPT_FUZZ_BUILD_DIR, SPT_FUZZ_MALLOC_MB.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
source scripts/reliability_build.sh
build="${SPT_FUZZ_BUILD_DIR:-$(spt_reliability_dir)}"
seconds="${SPT_FUZZ_SECONDS:-60}"
jobs="${SPT_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}"
parallel="${SPT_FUZZ_PARALLEL:-$(nproc 2>/dev/null || echo 2)}"
[[ $parallel -ge 1 ]] || parallel=1
malloc_mb="${SPT_FUZZ_MALLOC_MB:-2048}"
all=(fuzz_tns fuzz_tns_extended fuzz_sptb fuzz_compressed fuzz_convert)
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=("${all[@]}")

spt_reliability_configure "$build"
ninja -C "$build" -j"$jobs" "${names[@]}"

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
mkdir -p "$build/fuzz-findings"
failed=()
# run_one NAME: one fuzzer for $seconds; its exit status goes to NAME.rc.
run_one() {
  local name=$1 rc
  local work="$build/fuzz-work/$name"
  mkdir -p "$work"
  set +e
  "$build/tests/fuzz/$name" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -malloc_limit_mb="$malloc_mb" \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/fuzz-findings/$name-" \
    "$work" "$root/tests/fuzz/corpus/$name" > "$build/fuzz-work/$name.log" 2>&1
  rc=$?
  set -e
  echo "$rc" > "$build/fuzz-work/$name.rc"
}
mkdir -p "$build/fuzz-work"
running=0
for name in "${names[@]}"; do
  rm -f "$build/fuzz-work/$name.rc"
  if [[ $running -ge $parallel ]]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_one "$name" &
  running=$((running + 1))
done
wait || true
printf '%-20s %12s %10s %8s\n' fuzzer executions exec/s result
for name in "${names[@]}"; do
  log="$build/fuzz-work/$name.log"
  rc=$(cat "$build/fuzz-work/$name.rc" 2> /dev/null || echo 255)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  result=ok
  if [[ $rc -ne 0 ]]; then
    result="FINDING (exit $rc)"
    failed+=("$name")
  fi
  printf '%-20s %12s %10s %8s\n' "$name" "${execs:-?}" "${rate:-?}" "$result"
  if [[ $rc -ne 0 ]]; then
    grep -E "ERROR|SUMMARY|runtime error|==[0-9]+==|#[0-9]+ 0x" "$log" | head -40 >&2 || true
    echo "fuzz.sh: $name: full log $log; inputs in $build/fuzz-findings/" >&2
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: findings in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: no findings (${#names[@]} fuzzers, ${seconds} s each, $parallel at a time)"
