#!/usr/bin/env bash
# ctest driver of the Python package test: pip-installs python/ (a copy, so
# the source tree stays clean) into the test virtual environment in its
# pure-Python mode (wheel.cmake=false: no library inside the package), then
# runs test_package.py, test_progress.py and test_interrupt.py from outside the source tree
# against the built library. The install that builds the library into the
# package is tested by fresh_install.sh (ctest python_pkg_fresh_install).
#   run.sh PYTHON SOURCE_DIR WORK_DIR LIBRARY DATA_DIR [LAYOUT_PROBE]
# Exit 77 (ctest skip) when numpy or pip is unusable, except under CI=true.
set -euo pipefail
python=$1 src=$2 work=$3 library=$4 data=$5 probe=${6:-}
skip() {
  if [[ ${CI:-} == true ]]; then echo "FAIL: $1"; exit 1; fi
  echo "SKIP: $1"; exit 77
}
# A sanitized library cannot be loaded into a plain Python interpreter (the
# sanitizer runtime must come first); scripts/sanitize.sh builds those.
if readelf -d "$library" 2> /dev/null | grep -qE 'NEEDED.*lib(asan|ubsan|tsan)'; then
  echo "SKIP: $library is built with sanitizers; Python cannot load it"; exit 77
fi
"$python" -c 'import numpy' 2> /dev/null || skip "numpy is not importable by $python (scripts/test.sh installs it)"
"$python" -m pip --version > /dev/null 2>&1 || skip "pip is not available for $python"

rm -rf "$work" && mkdir -p "$work"
cp -r "$src/python" "$work/src"
rm -rf "$work/src/build" "$work/src"/*.egg-info
# The ordinary install path (isolated build: fetches scikit-build-core from
# the package index) unless scikit-build-core is already in the environment
# (scripts/test.sh installs it), where an offline build is possible.
if "$python" -c 'import scikit_build_core' 2> /dev/null; then
  isolation=--no-build-isolation
else
  isolation=
fi
echo "python_pkg: pip install $isolation --config-settings=wheel.cmake=false $work/src"
"$python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps $isolation \
  --config-settings=wheel.cmake=false "$work/src" \
  || skip "pip install ./python failed (no network to the package index?)"

cd "$work"  # not the source tree: the import must find the installed copy
export SPTENSOR_LIBRARY=$library
# The pure-Python install carries no library of its own.
package_dir=$("$python" -c 'import os, sptensor; print(os.path.dirname(sptensor.__file__))')
if [[ -e $package_dir/libsptensor.so.1 ]]; then
  echo "FAIL: the pure-Python install put a library into $package_dir"; exit 1
fi
status=0
"$python" "$src/tests/python_pkg/test_package.py" "$data" $probe || status=1
"$python" "$src/tests/python_pkg/test_progress.py" "$data" || status=1
"$python" "$src/tests/python_pkg/test_interrupt.py" || status=1
exit $status
