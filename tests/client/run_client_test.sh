#!/usr/bin/env bash
# Client test of the installed library, as a user would consume it:
#   1. cmake --install the build tree into a temporary prefix;
#   2. check the SONAME of the installed libsptensor.so;
#   3. compile client_test.c (C99) with `cc $(pkg-config --cflags --libs sptensor)`
#      and run it on nations.tns.xz;
#   4. configure and build a tiny CMake project that uses find_package(sptensor),
#      and run its binary too.
# Usage: run_client_test.sh BUILD_DIR WORK_DIR CMAKE_COMMAND DATA_FILE
set -euo pipefail

build_dir=$1
work_dir=$2
cmake_command=$3
data_file=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cc=${CC:-cc}

fail() { echo "client test: FAILED: $*" >&2; exit 1; }

rm -rf "$work_dir"
mkdir -p "$work_dir"
prefix=$work_dir/prefix

echo "== install into $prefix"
"$cmake_command" --install "$build_dir" --prefix "$prefix" > "$work_dir/install.log" \
  || { cat "$work_dir/install.log" >&2; fail "cmake --install"; }

pc_file=$(find "$prefix" -name sptensor.pc | head -n 1)
[[ -n "$pc_file" ]] || fail "no sptensor.pc installed under $prefix"
libdir=$(dirname "$(dirname "$pc_file")")
library=$(find "$libdir" -maxdepth 1 -name 'libsptensor.so.*.*' | head -n 1)
[[ -n "$library" ]] || fail "no libsptensor.so.X.Y installed in $libdir"
[[ -e "$libdir/libsptensor.so" ]] || fail "no libsptensor.so development link in $libdir"
[[ -f "$prefix/include/sptensor/sptensor.h" ]] || fail "header not installed"

echo "== SONAME"
soname=$(readelf -d "$library" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
[[ "$soname" == "libsptensor.so.0" ]] || fail "SONAME of $library is '$soname', expected libsptensor.so.0"
echo "SONAME $soname"

echo "== pkg-config build"
# The .pc file records the configured prefix; point it at the temporary one.
PKG_CONFIG_PATH=$(dirname "$pc_file")
export PKG_CONFIG_PATH
flags=$(pkg-config --define-variable=prefix="$prefix" --cflags --libs sptensor)
echo "$cc -std=c99 -Wall -Wextra -pedantic client_test.c $flags -lm"
# shellcheck disable=SC2086
"$cc" -std=c99 -Wall -Wextra -pedantic -Werror "$here/client_test.c" -o "$work_dir/client_test_pkgconfig" $flags -lm
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work_dir/client_test_pkgconfig" "$data_file"

echo "== README example (pkg-config)"
# shellcheck disable=SC2086
"$cc" -std=c99 -Wall -Wextra -pedantic -Werror "$here/readme_example.c" -o "$work_dir/readme_example" $flags
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work_dir/readme_example" "$data_file" \
  | tee "$work_dir/readme_example.out"
grep -Eq '^fit 0\.[0-9]{4} after [0-9]+ iterations$' "$work_dir/readme_example.out" \
  || fail "README example printed no fit line"

echo "== find_package(sptensor) build"
"$cmake_command" -S "$here/find_package" -B "$work_dir/cmake-project" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work_dir/cmake-configure.log" 2>&1 \
  || { cat "$work_dir/cmake-configure.log" >&2; fail "configuring the find_package project"; }
"$cmake_command" --build "$work_dir/cmake-project" > "$work_dir/cmake-build.log" 2>&1 \
  || { cat "$work_dir/cmake-build.log" >&2; fail "building the find_package project"; }
"$work_dir/cmake-project/client_test_cmake" "$data_file"

echo "client test: all passed"
