#!/usr/bin/env bash
# Checks the shared library's ABI surface: SONAME, only spt_* symbols exported
# besides the internal C++ functions libsptensor_mpi.so calls (exactly those
# listed, demangled, in INTERNAL_LIST: see src/util/internal_api.hpp), and
# every function declared in the public header is exported.
#
#   check_exports.sh LIBRARY HEADER INTERNAL_LIST
set -euo pipefail
lib="$1"
header="$2"
internal_list="$3"
fail=0
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
if [ "$soname" != "libsptensor.so.1" ]; then
  echo "SONAME is '$soname', expected libsptensor.so.1"; fail=1
fi
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort -u)
others=$(echo "$exported" | grep -v '^spt_' | grep -vE '^(_init|_fini|_edata|_end|__bss_start)$' || true)
internal=$(echo "$others" | grep '^_Z' | c++filt | sort -u || true)
stray=$(echo "$others" | grep -v '^_Z' || true)
expected=$(grep -v '^#' "$internal_list" | grep -v '^$' | sort -u)
unexpected=$(comm -23 <(echo "$internal") <(echo "$expected") | grep -v '^$' || true)
if [ -n "$stray" ] || [ -n "$unexpected" ]; then
  echo "symbols exported that are neither the C API nor listed in $internal_list (hidden visibility broken?):"
  { echo "$stray"; echo "$unexpected"; } | grep -v '^$' | head -20; fail=1
fi
gone=$(comm -13 <(echo "$internal") <(echo "$expected") | grep -v '^$' || true)
if [ -n "$gone" ]; then
  echo "internal functions listed in $internal_list but no longer exported (libsptensor_mpi.so needs them):"
  echo "$gone" | head -20; fail=1
fi
# The umbrella header and every sub-header beside it.
declared=$(cat "$header" "$(dirname "$header")"/*.h | grep -oE 'SPT_API [^(]*\(' | sed -E 's/.*[ *](spt_[a-z0-9_]+)\($/\1/' | grep '^spt_' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [ -n "$missing" ]; then
  echo "declared in sptensor.h but not exported by the library:"; echo "$missing"; fail=1
fi
if readelf -d "$lib" | grep -E 'NEEDED.*(libcudart|libcuda\.|libmpi)'; then
  echo "libsptensor.so must not link the CUDA runtime or MPI"; fail=1
fi
[ "$fail" = 0 ] && echo "ABI surface OK: $(echo "$declared" | wc -l) functions, SONAME $soname"
exit $fail
