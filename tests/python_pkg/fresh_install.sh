#!/usr/bin/env bash
# ctest python_pkg_fresh_install: the package as a new user installs it.
# In new virtual environments (no system site-packages) and with no
# SPTENSOR_LIBRARY, LD_LIBRARY_PATH or PKG_CONFIG_PATH:
#   1. pip wheel ./python builds a wheel with libsptensor inside (scikit-build-core
#      builds the library from this repository's CMake project);
#   2. pip install ./python installs the package the same way into venv "source"
#      (the wheel's build directory is reused, so this step only repackages);
#   3. the wheel from step 1 is installed into a second new venv, "wheel";
#   4. in "source", python -c "import sptensor, pyttb; ...": the library is the
#      package's own copy; cp_als on a pyttb.sptensor with init= a pyttb.ktensor
#      prints with printitn and returns a result whose to_pyttb() is a
#      pyttb.ktensor matching the fit; the wheel file holds the library and is
#      tagged py3-none-<platform>;
#   5. in "wheel", the same with numpy arrays (no pyttb there).
#   fresh_install.sh PYTHON SOURCE_DIR WORK_DIR DATA_DIR
# Needs the package index (isolated builds fetch scikit-build-core; the venvs
# get numpy and pyttb): without it, exit 77 (ctest skip), except under
# CI=true, where it fails. ccache is used for the library build when present.
# Prints the seconds each step took.
set -euo pipefail
python=$1 src=$2 work=$3 data=$4
skip() {
  if [[ ${CI:-} == true ]]; then echo "FAIL: $1"; exit 1; fi
  echo "SKIP: $1"; exit 77
}
unset SPTENSOR_LIBRARY LD_LIBRARY_PATH PKG_CONFIG_PATH PYTHONPATH
rm -rf "$work" && mkdir -p "$work"
# The dependencies first: a failure here is the network, not the package.
# "source" (pip install ./python) gets numpy and pyttb, for the issue's
# pyttb round trip; "wheel" numpy only (pyttb brings scipy and matplotlib,
# the longest part of this test, and the wheel is checked through numpy).
# --no-compile: no .pyc files for all of scipy and matplotlib; Python
# compiles what it imports.
started=$SECONDS
for venv in source:numpy,pyttb wheel:numpy; do
  name=${venv%%:*} packages=${venv#*:}
  "$python" -m venv "$work/$name" || skip "$python cannot create a virtual environment"
  "$work/$name/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile ${packages//,/ } \
    || skip "cannot install ${packages//,/ and } from the package index"
done
echo "fresh_install: two virtual environments with their dependencies took $((SECONDS - started)) s"
venv_python=$work/source/bin/python
pip=("$venv_python" -m pip --disable-pip-version-check)

# A fixed build directory keeps the compile commands identical between runs
# (ccache hits) and lets step 2 reuse step 1's build.
if command -v ccache > /dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=${CMAKE_C_COMPILER_LAUNCHER:-ccache}
  export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}
fi
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
build_dir=(--config-settings=build-dir="$work/build")
started=$SECONDS
"${pip[@]}" wheel --quiet --no-deps "${build_dir[@]}" -w "$work/dist" "$src/python"
echo "fresh_install: pip wheel ./python took $((SECONDS - started)) s"
started=$SECONDS
"${pip[@]}" install --quiet "${build_dir[@]}" "$src/python"
echo "fresh_install: pip install ./python took $((SECONDS - started)) s"

wheels=("$work"/dist/sptensor-*.whl)
started=$SECONDS
"$work/wheel/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "${wheels[@]}"
echo "fresh_install: pip install ${wheels[*]##*/} took $((SECONDS - started)) s"

cd "$work"  # not the source tree: the import must find the installed copy
cat > "$work/check.py" <<'EOF'
import contextlib, glob, io, os, sys, sysconfig, zipfile
import numpy as np
import sptensor

nations, dist, with_pyttb = sys.argv[1], sys.argv[2], sys.argv[3] == "pyttb"
if with_pyttb:
    import pyttb
package_dir = os.path.dirname(os.path.abspath(sptensor.__file__))
assert package_dir.startswith(sysconfig.get_paths()["purelib"]) or package_dir.startswith(
    sysconfig.get_paths()["platlib"]), package_dir
assert os.path.dirname(os.path.abspath(sptensor.library_path())) == package_dir, sptensor.library_path()

rng = np.random.default_rng(1)
out = io.StringIO()
if with_pyttb:
    X = sptensor.read(nations).to_pyttb()              # a pyttb.sptensor
    assert isinstance(X, pyttb.sptensor)
    init = pyttb.ktensor([rng.random((d, 4)) for d in X.shape])
    with contextlib.redirect_stdout(out):
        r = sptensor.cp_als(X, 4, init=init, max_iters=10, tol=0.0, printitn=5)
    K = r.to_pyttb()
    assert isinstance(K, pyttb.ktensor), type(K)
    D, M = X.full().data, K.full().data
else:
    X = sptensor.read(nations)
    init = [rng.random((d, 4)) for d in X.shape]
    with contextlib.redirect_stdout(out):
        r = sptensor.cp_als(X, 4, init=init, max_iters=10, tol=0.0, printitn=5)
    D = X.to_numpy()
    modes = "ijklmn"[:len(r.factors)]
    M = np.einsum(",".join(m + "r" for m in modes) + ",r->" + modes, *r.factors, r.weights)
lines = out.getvalue().splitlines()
assert [l.split(":")[0] for l in lines] == [" Iter  5", " Iter 10"], lines
fit = 1 - np.linalg.norm(D - M) / np.linalg.norm(D)
assert abs(fit - r.fit) < 1e-8, (fit, r.fit)

wheels = glob.glob(os.path.join(dist, "sptensor-*.whl"))
assert len(wheels) == 1, wheels
tag = os.path.basename(wheels[0])[:-len(".whl")].split("-", 2)[2]
assert tag.startswith("py3-none-") and not tag.endswith("-any"), tag
names = zipfile.ZipFile(wheels[0]).namelist()
assert "sptensor/libsptensor.so.1" in names and "sptensor/_lib.py" in names, names
print(f"fresh_install: ok (library {sptensor.library_path()}, fit {r.fit:.6f}, wheel {os.path.basename(wheels[0])})")
EOF
echo "fresh_install: checking the source install (pip install ./python) with pyttb objects"
"$work/source/bin/python" "$work/check.py" "$data/nations.tns.xz" "$work/dist" pyttb
echo "fresh_install: checking the wheel install (pip install sptensor-*.whl) with numpy arrays"
"$work/wheel/bin/python" "$work/check.py" "$data/nations.tns.xz" "$work/dist" numpy
