#!/usr/bin/env bash
# Deliberately regenerates the stored C ABI baseline (abi/libsptensor.abi and
# abi/libsptensor.symbols) from the public headers and a built library.
# Run it:
#   - after compatible additions (new functions, enumerators, struct fields
#     appended after the last one), to record them, or
#   - after an intended incompatible change, together with a SONAME bump
#     (the major number of project(VERSION) in CMakeLists.txt).
# The ctest `abi_baseline` (tests/abi/check_abi_baseline.sh) compares every
# build against this baseline. Review the diff of abi/ before committing.
#   usage: scripts/update-abi-baseline.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build}
# The library the development link names (a build folder may still hold an
# older major version's files).
lib=$(readlink -f "$build/libsptensor.so" 2> /dev/null || true)
[[ -f $lib ]] || lib=$(ls "$build"/libsptensor.so.[0-9]* 2> /dev/null | sort -V | tail -1 || true)
if [[ -z $lib ]]; then
  echo "no libsptensor.so.N in $build: build it first (cmake --build $build --target sptensor)" >&2
  exit 1
fi
bash tests/abi/check_abi_baseline.sh "$lib" "$PWD" "$build/abi-baseline-update" --update
