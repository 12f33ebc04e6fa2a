#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages libsptensor needs to build and test,
# but only those that are missing (checked with dpkg -s). Runs apt-get update
# only when something has to be installed. Uses sudo only when not root.
# Safe to run repeatedly and without a terminal (CI).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libopenblas-dev liblapacke-dev
  libgtest-dev libgmock-dev
  zlib1g-dev liblzma-dev libzstd-dev xz-utils
  python3 python3-venv python3-pip
  # MPI backend (mpi/, libsptensor_mpi.so, sptensor-mpi) and its mpirun tests;
  # mpi4py for the optional Python module sptensor.mpi (ctest python_mpi_cpd)
  libopenmpi-dev openmpi-bin python3-mpi4py
  # reliability jobs (scripts/fuzz.sh, scripts/reliability.sh): clang with libFuzzer
  # (libclang-rt-dev) and its OpenMP runtime, valgrind for the CLI memcheck
  clang libclang-rt-dev libomp-dev valgrind
  # docs and ABI guard: the Doxygen API reference (ctest docs_doxygen) and
  # libabigail's abidw for the ABI baseline check (ctest abi_baseline)
  doxygen abigail-tools
  # Fortran module and its client tests (ctest fortran_*); Octave's mkoctfile and
  # octave-cli for the MEX example test (ctest mex_octave; ~80 MB download,
  # ~270 MB installed, 119 packages with --no-install-recommends)
  gfortran octave liboctave-dev
  # Kept libraries used instead of hand-written code (docs/architecture.md,
  # Dependencies): XXH64 for the .sptb checksums, the CLI's option parser,
  # the benchmarks' JSON writer; versions below
  libxxhash-dev libcli11-dev nlohmann-json3-dev
  # L-BFGS-B 3.0 (Nocedal & Morales) for GCP-OPT (spt_gcp_opt; optional at
  # build time: without it GCP-OPT answers SPT_ERR_UNSUPPORTED)
  liblbfgsb-dev
  # the C parser of scripts/gen_bindings.py (Python and Fortran bindings
  # generated from the headers; ctest bindings_up_to_date)
  python3-pycparser
)

# The versions the kept libraries were built and tested against (Debian 12).
# Installed as these versions when the archive has them; elsewhere the
# archive's version is installed with a note (CMake checks the minimum).
declare -A pinned=(
  [libxxhash-dev]=0.8.1-1
  [libcli11-dev]=2.1.2+ds-1
  [nlohmann-json3-dev]=3.11.2-2
  [liblbfgsb-dev]=3.0+dfsg.4-1
  [python3-pycparser]=2.21-1
)

if ! command -v dpkg > /dev/null 2>&1; then
  echo "deps.sh: dpkg not found; this script supports Debian and Ubuntu only." >&2
  echo "deps.sh: install the equivalents of: ${packages[*]}" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg -s "$p" 2> /dev/null | grep -q '^Status: install ok installed'; then
    missing+=("$p")
  elif [[ -n ${pinned[$p]:-} ]]; then
    have=$(dpkg-query -W -f '${Version}' "$p")
    [[ $have == "${pinned[$p]}" ]] || echo "deps.sh: note: $p $have is installed; built and tested against ${pinned[$p]}"
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "deps.sh: all ${#packages[@]} build dependencies are installed"
  exit 0
fi

echo "deps.sh: installing missing packages: ${missing[*]}"
run_as_root=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo > /dev/null 2>&1; then
    run_as_root=(sudo -n)  # never prompt: fail clearly instead of hanging in CI
  else
    echo "deps.sh: not root and sudo is not available; as root run:" >&2
    echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
"${run_as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
# A pinned package as name=version when the archive offers that version.
for i in "${!missing[@]}"; do
  p=${missing[$i]}
  [[ -n ${pinned[$p]:-} ]] || continue
  if apt-cache madison "$p" 2> /dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}' | grep -qxF "${pinned[$p]}"; then
    missing[$i]="$p=${pinned[$p]}"
  else
    echo "deps.sh: note: $p ${pinned[$p]} is not in this archive; installing its version (built and tested against ${pinned[$p]})"
  fi
done
"${run_as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
echo "deps.sh: done"
