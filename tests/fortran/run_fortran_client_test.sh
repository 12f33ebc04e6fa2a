#!/usr/bin/env bash
# Fortran client test of the installed library:
#   1. cmake --install the build tree into a temporary prefix;
#   2. check that sptensor.mod, sptensor_capi.mod, their .f90 sources,
#      libsptensor_fortran.a and
#      sptensor-fortran.pc are installed;
#   3. build client_example.f90 with
#      `gfortran $(pkg-config --cflags --libs sptensor-fortran)` (only
#      PKG_CONFIG_PATH set) and run it;
#   4. build it again through CMake find_package(sptensor) and the target
#      sptensor::sptensor_fortran, and run that too;
#   5. when built with MPI: build mpi_cpd_check.f90 with mpifort against the
#      installed sptensor_mpi module and run it under mpirun -np 2.
# Usage: run_fortran_client_test.sh BUILD_DIR WORK_DIR CMAKE_COMMAND FORTRAN_COMPILER DATA_FILE [SANITIZERS]
# Exits 77 (skipped) for a sanitized build (SANITIZERS non-empty): its
# library needs the sanitizer runtime in every program that links it.
set -euo pipefail
build_dir=$1
work_dir=$2
cmake_command=$3
fc=$4
data_file=$5
if [[ -n "${6:-}" ]]; then
  echo "fortran client test: SKIPPED: the build uses -fsanitize=$6 (see scripts/sanitize.sh)"
  exit 77
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fail() { echo "fortran client test: FAILED: $*" >&2; exit 1; }

rm -rf "$work_dir"
mkdir -p "$work_dir"
prefix=$work_dir/prefix
echo "== install into $prefix"
"$cmake_command" --install "$build_dir" --prefix "$prefix" > "$work_dir/install.log" \
  || { cat "$work_dir/install.log" >&2; fail "cmake --install"; }
[[ -f "$prefix/include/sptensor.mod" ]] || fail "sptensor.mod not installed in $prefix/include"
[[ -f "$prefix/include/sptensor/sptensor.f90" ]] || fail "sptensor.f90 not installed"
[[ -f "$prefix/include/sptensor_capi.mod" ]] || fail "sptensor_capi.mod not installed in $prefix/include"
[[ -f "$prefix/include/sptensor/sptensor_capi.f90" ]] || fail "sptensor_capi.f90 not installed"
pc_file=$(find "$prefix" -name sptensor-fortran.pc | head -n 1)
[[ -n "$pc_file" ]] || fail "no sptensor-fortran.pc installed"
libdir=$(dirname "$(dirname "$pc_file")")
[[ -f "$libdir/libsptensor_fortran.a" ]] || fail "no libsptensor_fortran.a in $libdir"

echo "== pkg-config build"
# Only PKG_CONFIG_PATH: the installed .pc files find the prefix themselves.
unset PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR
PKG_CONFIG_PATH=$(dirname "$pc_file")
export PKG_CONFIG_PATH
flags=$(pkg-config --cflags --libs sptensor-fortran)
echo "$fc client_example.f90 $flags"
# shellcheck disable=SC2086
"$fc" -std=f2008 -Wall -Werror -fimplicit-none "$here/client_example.f90" -o "$work_dir/client_example" $flags
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work_dir/client_example" "$data_file" \
  | tee "$work_dir/client_example.out"
grep -Eq '^fit 0\.[0-9]{4} after [0-9]+ iterations$' "$work_dir/client_example.out" || fail "no fit line"
grep -Eq '^A1\(:,1\) =' "$work_dir/client_example.out" || fail "no factor line"

echo "== find_package(sptensor) build"
"$cmake_command" -S "$here/find_package" -B "$work_dir/cmake-project" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_Fortran_COMPILER="$fc" -DCMAKE_BUILD_TYPE=Release > "$work_dir/cmake-configure.log" 2>&1 \
  || { cat "$work_dir/cmake-configure.log" >&2; fail "configuring the find_package project"; }
"$cmake_command" --build "$work_dir/cmake-project" > "$work_dir/cmake-build.log" 2>&1 \
  || { cat "$work_dir/cmake-build.log" >&2; fail "building the find_package project"; }
"$work_dir/cmake-project/client_example_cmake" "$data_file" > "$work_dir/client_example_cmake.out"
cmp "$work_dir/client_example.out" "$work_dir/client_example_cmake.out" \
  || fail "the pkg-config and find_package builds printed different results"
# With MPI: the installed sptensor_mpi module, built with mpifort against the
# prefix and run under mpirun -np 2 (the distributed fit equals the serial one).
if [[ -f "$prefix/include/sptensor_mpi.mod" ]]; then
  [[ -f "$prefix/include/sptensor/sptensor_mpi.f90" ]] || fail "sptensor_mpi.f90 not installed"
  [[ -f "$prefix/include/sptensor_mpi_capi.mod" ]] || fail "sptensor_mpi_capi.mod not installed"
  [[ -f "$libdir/libsptensor_mpi_fortran.a" ]] || fail "no libsptensor_mpi_fortran.a in $libdir"
  if command -v mpifort > /dev/null 2>&1 && command -v mpirun > /dev/null 2>&1; then
    echo "== MPI client (mpifort, use sptensor_mpi)"
    OMPI_FC="$fc" mpifort -std=f2008 -Wall -fimplicit-none -I"$prefix/include" "$here/mpi_cpd_check.f90" \
      -o "$work_dir/mpi_cpd_check" -L"$libdir" -lsptensor_mpi_fortran -lsptensor_fortran -lsptensor_mpi -lsptensor \
      -Wl,-rpath,"$libdir" || fail "building the MPI client against the installed module"
    OMP_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 \
      mpirun --oversubscribe --allow-run-as-root -np 2 "$work_dir/mpi_cpd_check" "$data_file" > "$work_dir/mpi.out" 2>&1 \
      || { cat "$work_dir/mpi.out"; fail "the MPI client"; }
    grep -q 'all checks passed' "$work_dir/mpi.out" || { cat "$work_dir/mpi.out"; fail "the MPI client's checks"; }
    grep '^P = ' "$work_dir/mpi.out" || true
  else
    echo "== MPI client skipped: no mpifort/mpirun"
  fi
fi
echo "fortran client test: all passed"
