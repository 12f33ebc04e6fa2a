"""Pieces shared by the pyttb cross-check scripts (check_*_pyttb.py): the
skip/fail convention of ctest, the numpy/pyttb imports, status checks on
the C API through ctypes, .tns reading and data-file lookup."""
import lzma
import os
import sys

SKIP = 77  # ctest SKIP_RETURN_CODE

# Constants of include/sptensor/sptensor.h the scripts use.
SPT_FLOAT64 = 2
SPT_ROW_MAJOR = 0
SPT_OK = 0
SPT_WARN_NOT_CONVERGED = 1


def skip_or_fail(message):
    in_ci = os.environ.get("CI", "").lower() == "true"
    print(("FAIL: " if in_ci else "SKIP: ") + message)
    sys.exit(1 if in_ci else SKIP)


try:
    import numpy as np
    import pyttb as ttb
except ImportError as e:  # pragma: no cover - environment dependent
    skip_or_fail(f"cannot import numpy/pyttb ({e}); pip install pyttb")


def check(lib, status, what, allowed=(SPT_OK,)):
    if status not in allowed:
        raise RuntimeError(f"{what} returned {status}: {lib.spt_thread_last_error().decode()}")


def read_tns(path):
    """FROSTT .tns(.xz): 1-based coordinates and a value per line."""
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        data = np.loadtxt(f, ndmin=2)
    subs = data[:, :-1].astype(np.int64) - 1
    vals = data[:, -1].astype(np.float64)
    shape = tuple(int(s) for s in subs.max(axis=0) + 1)
    return subs, vals, shape


def find(name, dirs):
    for d in dirs:
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return None
