#!/usr/bin/env bash
# Client test of the installed library, as a user would consume it, from a
# prefix that is not the configured one and with nothing but the documented
# search variables (PKG_CONFIG_PATH, CMAKE_PREFIX_PATH, LD_LIBRARY_PATH):
#   1. cmake --install the build tree into a fresh prefix under WORK_DIR;
#      check the SONAME, that every installed .pc file derives its prefix from
#      ${pcfiledir} and that no installed .pc or CMake package file names the
#      build or source tree;
#   2. compile client_test.c (C99, -pedantic -Werror) with
#      `cc $(pkg-config --cflags --libs sptensor)` (no --define-variable) and
#      run it on nations.tns.xz;
#   3. run the documented commands verbatim, taken from the documents
#      themselves: README.md's C example (its C block must equal
#      readme_example.c) with its `cc ... && ./example tensor.tns.xz` line and
#      its "Using it from C" line, docs/guide.md's C example with its line, and
#      (when gfortran is on PATH and the Fortran module is installed)
#      README.md's Fortran example with its `gfortran cp.f90 ...` line; each
#      program runs and must print its fit line; with MPI (sptensor_mpi.pc
#      installed, mpicc on PATH) mpi_client.c built with
#      `mpicc ... $(pkg-config --cflags --libs sptensor_mpi)` runs;
#   4. configure, build and run a CMake project that uses find_package(sptensor),
#      and check that it found the package in the prefix;
#   5. move the installed tree to another directory and do 2 and 4 again from
#      there (the old location no longer exists), and load the library through
#      the Python package's discovery (python/sptensor/_lib.py, pkg-config
#      route: only PKG_CONFIG_PATH set) when PYTHON is given.
# Programs run with LD_LIBRARY_PATH set to `pkg-config --variable=libdir
# sptensor`, as README.md says for a prefix outside the loader's search path.
# Usage: run_client_test.sh BUILD_DIR WORK_DIR CMAKE_COMMAND DATA_FILE [PYTHON]
set -euo pipefail

build_dir=$1
work_dir=$2
cmake_command=$3
data_file=$4
python=${5:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../.." && pwd -P)
build_dir=$(cd "$build_dir" && pwd -P)
cc=${CC:-cc}

fail() { echo "client test: FAILED: $*" >&2; exit 1; }

# Only what the test sets below may steer pkg-config, CMake and the loader.
unset PKG_CONFIG_PATH PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR CMAKE_PREFIX_PATH SPTENSOR_LIBRARY
base_ld_library_path=${LD_LIBRARY_PATH:-}

rm -rf "$work_dir"
mkdir -p "$work_dir"
work_dir=$(cd "$work_dir" && pwd -P)
prefix=$work_dir/prefix

# doc_block FILE HEADING LANG: the first ```LANG block after the line HEADING.
doc_block() {
  awk -v heading="$2" -v fence='```'"$3" '
    !found { if ($0 == heading) found = 1; next }
    !inside && $0 == fence { inside = 1; next }
    inside && $0 == "```" { exit }
    inside { print }' "$1"
}

# use_prefix PREFIX: point pkg-config (only) and the loader at PREFIX.
use_prefix() {
  local pc_file
  pc_file=$(find "$1" -name sptensor.pc | head -n 1)
  [[ -n "$pc_file" ]] || fail "no sptensor.pc installed under $1"
  pcdir=$(dirname "$pc_file")
  export PKG_CONFIG_PATH=$pcdir
  libdir=$(pkg-config --variable=libdir sptensor)
  [[ "$(cd "$libdir" && pwd -P)" == "$(cd "$pcdir/.." && pwd -P)" ]] \
    || fail "pkg-config libdir '$libdir' is not the directory above $pcdir"
  export LD_LIBRARY_PATH="$libdir${base_ld_library_path:+:$base_ld_library_path}"
}

# pkgconfig_client TAG: build client_test.c with pkg-config alone and run it.
pkgconfig_client() {
  local flags
  flags=$(pkg-config --cflags --libs sptensor)
  echo "$cc -std=c99 -Wall -Wextra -pedantic -Werror client_test.c $flags -lm" >&2
  # shellcheck disable=SC2086
  "$cc" -std=c99 -Wall -Wextra -pedantic -Werror "$here/client_test.c" -o "$work_dir/client_test_$1" $flags -lm
  "$work_dir/client_test_$1" "$data_file"
}

# find_package_client TAG PREFIX: a downstream CMake project against PREFIX.
find_package_client() {
  local dir=$work_dir/cmake-project-$1
  "$cmake_command" -S "$here/find_package" -B "$dir" -DCMAKE_PREFIX_PATH="$2" \
    -DCMAKE_BUILD_TYPE=Release > "$work_dir/cmake-configure-$1.log" 2>&1 \
    || { cat "$work_dir/cmake-configure-$1.log" >&2; fail "configuring the find_package project ($1)"; }
  local found
  found=$(sed -n 's/^sptensor_DIR:PATH=//p' "$dir/CMakeCache.txt")
  [[ "$found" == "$2"/* ]] || fail "find_package(sptensor) found '$found', not the package under $2"
  echo "sptensor_DIR=$found"
  "$cmake_command" --build "$dir" > "$work_dir/cmake-build-$1.log" 2>&1 \
    || { cat "$work_dir/cmake-build-$1.log" >&2; fail "building the find_package project ($1)"; }
  "$dir/client_test_cmake" "$data_file"
}

# run_documented NAME SOURCE_FILE COMMAND [DATA_NAME]: run COMMAND, a line of
# the documentation, verbatim in a fresh directory holding SOURCE_FILE and
# the data file under DATA_NAME; its output goes to NAME.out.
run_documented() {
  local dir=$work_dir/doc-$1
  mkdir -p "$dir"
  cp "$2" "$dir/"
  [[ -z "${4:-}" ]] || ln -sf "$data_file" "$dir/$4"
  echo "\$ $3"
  (cd "$dir" && bash -euo pipefail -c "$3") > "$work_dir/$1.out" 2>&1 \
    || { cat "$work_dir/$1.out" >&2; fail "the documented command of $1: $3"; }
  cat "$work_dir/$1.out"
}

echo "== install into $prefix"
"$cmake_command" --install "$build_dir" --prefix "$prefix" > "$work_dir/install.log" \
  || { cat "$work_dir/install.log" >&2; fail "cmake --install"; }
use_prefix "$prefix"
library=$(find "$libdir" -maxdepth 1 -name 'libsptensor.so.*.*' | head -n 1)
[[ -n "$library" ]] || fail "no libsptensor.so.X.Y installed in $libdir"
[[ -e "$libdir/libsptensor.so" ]] || fail "no libsptensor.so development link in $libdir"
[[ -f "$prefix/include/sptensor/sptensor.h" ]] || fail "header not installed"

echo "== SONAME"
soname=$(readelf -d "$library" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
[[ "$soname" == "libsptensor.so.1" ]] || fail "SONAME of $library is '$soname', expected libsptensor.so.1"
echo "SONAME $soname"

echo "== relocatable package files"
for pc in "$pcdir"/*.pc; do
  # shellcheck disable=SC2016 # a literal ${pcfiledir}
  grep -q '^prefix=\${pcfiledir}/' "$pc" || fail "$(basename "$pc") does not derive its prefix from \${pcfiledir}"
  ! grep -q '^Libs.private:.*-fopenmp' "$pc" || fail "$(basename "$pc"): -fopenmp in Libs.private"
  echo "$(basename "$pc"): $(grep '^prefix=' "$pc")"
done
for tree in "$build_dir" "$source_dir"; do
  if grep -rlF "$tree" "$pcdir" "$libdir/cmake/sptensor"; then
    fail "installed pkg-config or CMake package files (above) name $tree"
  fi
done

echo "== pkg-config build (PKG_CONFIG_PATH=$PKG_CONFIG_PATH only)"
pkgconfig_client installed | tee "$work_dir/client_test_installed.out"

echo "== README.md and docs/guide.md commands, verbatim"
readme=$source_dir/README.md
doc_block "$readme" "## Example" c > "$work_dir/example.c"
cmp -s "$work_dir/example.c" <(sed '1,/\*\//d' "$here/readme_example.c") \
  || fail "the C block of README.md's Example section differs from tests/client/readme_example.c"
line=$(doc_block "$readme" "## Example" sh)
[[ "$line" == *pkg-config* ]] || fail "no pkg-config command under README.md's Example: '$line'"
run_documented readme_example "$work_dir/example.c" "$line" tensor.tns.xz
grep -Eq '^fit 0\.[0-9]{4} after [0-9]+ iterations$' "$work_dir/readme_example.out" \
  || fail "README example printed no fit line"

cp "$work_dir/example.c" "$work_dir/my_program.c"
line=$(doc_block "$readme" "## Using it from C" sh)
[[ "$line" == *pkg-config* ]] || fail "no pkg-config command under README.md's Using it from C: '$line'"
run_documented readme_using_c "$work_dir/my_program.c" "$line && ./my_program tensor.tns.xz" tensor.tns.xz
grep -Eq '^fit 0\.[0-9]{4} after [0-9]+ iterations$' "$work_dir/readme_using_c.out" \
  || fail "README's Using it from C build printed no fit line"

guide=$source_dir/docs/guide.md
doc_block "$guide" "## Five minutes to a CP decomposition" c > "$work_dir/cpd.c"
line=$(doc_block "$guide" "## Five minutes to a CP decomposition" sh)
[[ "$line" == *pkg-config* ]] || fail "no pkg-config command in docs/guide.md's first section: '$line'"
run_documented guide_example "$work_dir/cpd.c" "$line" tensor.tns.xz
grep -Eq '^fit 0\.[0-9]{4} after [0-9]+ iterations$' "$work_dir/guide_example.out" \
  || fail "the guide's example printed no fit line"

if [[ -f "$prefix/include/sptensor.mod" ]] && command -v gfortran > /dev/null 2>&1; then
  doc_block "$readme" "## Using it from Fortran" fortran > "$work_dir/cp.f90"
  line=$(doc_block "$readme" "## Using it from Fortran" sh)
  [[ "$line" == *pkg-config* ]] || fail "no pkg-config command under README.md's Fortran section: '$line'"
  run_documented readme_fortran "$work_dir/cp.f90" "$line && ./cp" nations.tns.xz
  grep -Eq '^fit 0\.[0-9]{4}$' "$work_dir/readme_fortran.out" || fail "README's Fortran example printed no fit line"
else
  echo "(README Fortran example skipped: no sptensor.mod installed or no gfortran on PATH)"
fi

if [[ -f "$pcdir/sptensor_mpi.pc" ]] && command -v mpicc > /dev/null 2>&1; then
  echo "== sptensor_mpi.pc (mpicc, as README.md says)"
  # shellcheck disable=SC2016 # the command line is run as written
  run_documented mpi_client "$here/mpi_client.c" \
    'mpicc mpi_client.c $(pkg-config --cflags --libs sptensor_mpi) -o mpi_client && ./mpi_client'
  grep -q '^sptensor_mpi client: libsptensor ' "$work_dir/mpi_client.out" || fail "the MPI client printed nothing"
fi

echo "== find_package(sptensor) build"
find_package_client installed "$prefix"

echo "== move the installed tree"
moved=$work_dir/elsewhere/moved-prefix
mkdir -p "$(dirname "$moved")"
mv "$prefix" "$moved"
[[ ! -e "$prefix" ]] || fail "$prefix still exists after the move"
use_prefix "$moved"
echo "PKG_CONFIG_PATH=$PKG_CONFIG_PATH: $(pkg-config --cflags --libs sptensor)"
pkgconfig_client moved > "$work_dir/client_test_moved.out"
cmp "$work_dir/client_test_installed.out" "$work_dir/client_test_moved.out" \
  || fail "client_test printed something else from the moved tree"
echo "client_test from the moved tree: same output"
find_package_client moved "$moved"

if [[ -n "$python" ]]; then
  echo "== Python package discovery (pkg-config route) from the moved tree"
  # _lib.py alone (stdlib only; the package's __init__ needs numpy).
  loaded=$(env -u LD_LIBRARY_PATH "$python" -c '
import importlib.util, sys
spec = importlib.util.spec_from_file_location("sptensor_lib", sys.argv[1])
lib = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lib)
lib.lib()
print(lib.library_path())' "$source_dir/python/sptensor/_lib.py") || fail "the Python package did not load the library"
  echo "loaded $loaded"
  [[ "$loaded" == "$(cd "$libdir" && pwd -P)"/libsptensor.so* ]] \
    || fail "the Python package loaded '$loaded', not the library in $libdir"
fi

echo "client test: all passed"
