#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer
# (leak checks on) in its own build dir (default build-asan, env
# SPT_ASAN_BUILD_DIR). The pyttb cross-checks (Python loading a sanitized
# library) and the installed-client test (a plain C program linking it) are
# left out: both need the sanitizer runtime preloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${SPT_ASAN_BUILD_DIR:-build-asan}"
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPT_WITH_CUDA=OFF \
  -DSPT_SANITIZE=address,undefined -DSPT_BUILD_BENCHMARKS=OFF > /dev/null
ninja -C "$build" -j"$jobs"
cd "$build"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 OMP_WAIT_POLICY=passive \
  ctest -j"$jobs" --timeout 900 --output-on-failure -E "pyttb|client_c_install"
