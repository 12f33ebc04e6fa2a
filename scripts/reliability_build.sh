# shellcheck shell=bash
# Sourced by scripts/sanitize.sh, scripts/fuzz.sh and scripts/reliability.sh:
# the ONE clang build both the sanitizer suite and the fuzzers use, so the
# library is compiled once for both (about half the reliability build time).
#
# Build dir: SPT_RELIABILITY_BUILD_DIR, default <SPT_BUILD_DIR>/reliability
# (SPT_BUILD_DIR defaults to build, so: build/reliability). A build tree
# nested in another is harmless: the outer one never looks inside it.
#
# Flags: clang, ASan + UBSan (-fno-sanitize-recover: a UB report fails the
# test), -fsanitize=fuzzer-no-link on every object (libFuzzer's coverage
# counters; for the gtest executables this only costs a little speed), -O1
# -gline-tables-only (file:line in reports at a fraction of full -g's compile
# time and size). Left out of this build, each for a reason:
#   CUDA          the sanitizers do not instrument device code (the GPU job
#                 uses compute-sanitizer instead);
#   MPI           mpirun-launched instrumented ranks report OpenMPI's own
#                 leaks at exit, and libsptensor_mpi only distributes the
#                 kernels this suite already checks serially;
#   Fortran       gfortran cannot link clang's sanitizer runtime, and the
#                 module holds declarations only (no library code);
#   benchmarks    nothing to check that the tests do not.

spt_reliability_dir() {
  echo "${SPT_RELIABILITY_BUILD_DIR:-${SPT_BUILD_DIR:-build}/reliability}"
}

# spt_reliability_configure DIR: configures DIR (quietly; errors still show).
spt_reliability_configure() {
  local dir=$1
  if ! command -v clang++ > /dev/null 2>&1; then
    echo "reliability: clang++ not found (scripts/deps.sh installs clang and libclang-rt-dev)" >&2
    return 1
  fi
  local flags="-O1 -gline-tables-only -DNDEBUG"
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" \
    -DSPT_SANITIZE=address,undefined -DSPT_FUZZ=ON -DSPT_BUILD_TESTS=ON \
    -DSPT_WITH_CUDA=OFF -DSPT_WITH_MPI=OFF -DSPT_WITH_FORTRAN=OFF -DSPT_BUILD_BENCHMARKS=OFF > /dev/null
}

# The environment every instrumented run uses (sanitize.sh's ctest).
spt_reliability_env() {
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:check_initialization_order=1:strict_init_order=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # Two OpenMP threads: the Release ctest runs with one (scripts/test.sh).
  export OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1
}
