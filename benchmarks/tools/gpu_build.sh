# Sourced by the GPU before/after scripts: configures SRC into BUILD with the
# CUDA plugin for sm_90 (no MPI, no Fortran) and builds the given targets,
# logging to LOG; on failure prints the log's errors and returns 1.
#   gpu_configure_and_build SRC BUILD LOG TARGET...
gpu_configure_and_build() {
  local src=$1 build=$2 log=$3
  shift 3
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPT_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DSPT_WITH_MPI=OFF -DSPT_WITH_FORTRAN=OFF > "$log" 2>&1 || { tail -30 "$log"; return 1; }
  ninja -C "$build" -j"$(nproc 2>/dev/null || echo 8)" "$@" >> "$log" 2>&1 ||
    { grep -E "error|FAILED" -A3 "$log" | head -40; return 1; }
}
