#!/usr/bin/env bash
# ctest driver of the sptensor.mpi test (tests/python_pkg/test_mpi.py): runs
# it under mpirun with the package from the source tree (pure Python; no
# install, so it cannot race with python_pkg's pip install) against the
# built libsptensor and libsptensor_mpi.
#   run_mpi.sh PYTHON SOURCE_DIR LIBRARY MPI_LIBRARY DATA_DIR MPIEXEC [MPIEXEC ARGS...]
# Exit 77 (ctest skip) when numpy or mpi4py cannot be imported.
# mpi4py: Debian's python3-mpi4py (scripts/deps.sh) is installed for the
# system python3; when PYTHON (e.g. a virtual environment of another
# interpreter build) cannot import mpi4py but the system python3 can and has
# the same major.minor version (the same extension ABI), only that mpi4py
# package is made visible to PYTHON through a directory on PYTHONPATH.
set -euo pipefail
python=$1 src=$2 library=$3 mpi_library=$4 data=$5
shift 5
skip() { echo "SKIP: $1"; exit 77; }
if readelf -d "$library" 2> /dev/null | grep -qE 'NEEDED.*lib(asan|ubsan|tsan)'; then
  skip "$library is built with sanitizers; Python cannot load it"
fi
"$python" -c 'import numpy' 2> /dev/null || skip "numpy is not importable by $python"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! "$python" -c 'import mpi4py' 2> /dev/null; then
  system=/usr/bin/python3
  version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }
  if [[ -x $system ]] && sys_mpi4py=$("$system" -c 'import mpi4py, os; print(os.path.dirname(mpi4py.__file__))' 2> /dev/null) \
     && [[ $(version "$system") == $(version "$python") ]]; then
    mkdir -p "$work/site"
    ln -s "$sys_mpi4py" "$work/site/mpi4py"
    export PYTHONPATH=$work/site
    echo "python mpi: using the system's mpi4py ($sys_mpi4py)"
  else
    skip "mpi4py is not importable by $python (apt-get install python3-mpi4py, or pip install mpi4py)"
  fi
fi
export PYTHONPATH=$src/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1  # keep the source tree clean
export SPTENSOR_LIBRARY=$library SPTENSOR_MPI_LIBRARY=$mpi_library
"$python" -c 'from mpi4py import MPI; import sptensor.mpi' || { echo "FAIL: cannot import sptensor.mpi"; exit 1; }
cd "$work"
exec "$@" "$python" "$src/tests/python_pkg/test_mpi.py" "$data"
