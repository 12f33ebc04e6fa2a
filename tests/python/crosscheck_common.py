"""Pieces shared by the pyttb cross-check scripts (check_*_pyttb.py): the
skip/fail convention of ctest, the numpy/pyttb imports, status checks on
the C API through ctypes (the generated python/sptensor/_capi.py: its
structs and every prototype), handles built from numpy arrays, the inputs
of one decomposition call, options initialisation, .tns reading, data-file
lookup and the script entry point."""
import contextlib
import ctypes
import importlib.util
import lzma
import os
import sys

SKIP = 77  # ctest SKIP_RETURN_CODE


def _load_capi():
    """python/sptensor/_capi.py of this source tree, by path (the scripts
    test the library, not an installed package)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "sptensor", "_capi.py")
    spec = importlib.util.spec_from_file_location("sptensor_capi", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


capi = _load_capi()
SPT_FLOAT64 = capi.SPT_FLOAT64
SPT_ROW_MAJOR = capi.SPT_ROW_MAJOR
SPT_OK = capi.SPT_OK
SPT_WARN_NOT_CONVERGED = capi.SPT_WARN_NOT_CONVERGED


def load_library(path):
    """libsptensor at path with every function's generated prototype."""
    lib = ctypes.CDLL(path)
    for name, (restype, argtypes) in capi.SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


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


def coo_from_subs(lib, subs, vals, shape):
    """A float64 spt_coo copied from 0-based subs (nnz x order) and vals; the caller frees it."""
    order = len(shape)
    nnz = len(vals)
    indices = np.ascontiguousarray(subs.T.astype(np.uint32))  # mode-major, ld = nnz
    values = np.ascontiguousarray(vals, dtype=np.float64)
    dims = (ctypes.c_uint32 * order)(*shape)
    x = ctypes.c_void_p()
    check(lib, lib.spt_coo_create_from_arrays(None, SPT_FLOAT64, order, dims, nnz, indices.ctypes.data, nnz, 0,
                                               values.ctypes.data, 0, ctypes.byref(x)), "spt_coo_create_from_arrays")
    return x


def wrap_matrices(lib, matrices, wrapped):
    """Row-major float64 spt_matrix views of `matrices`, appended to `wrapped`
    (the caller frees them); returns the arrays, which must outlive the views."""
    arrays = [np.ascontiguousarray(f, dtype=np.float64) for f in matrices]
    for a in arrays:
        m = ctypes.c_void_p()
        check(lib, lib.spt_matrix_wrap(None, SPT_FLOAT64, a.shape[0], a.shape[1], SPT_ROW_MAJOR, a.ctypes.data,
                                       a.shape[1], ctypes.byref(m)), "spt_matrix_wrap")
        wrapped.append(m)
    return arrays


@contextlib.contextmanager
def call_inputs(lib, subs, vals, shape, init_factors, free_result):
    """The handles of one decomposition call, all freed on leaving: yields
    (x, init, out) -- x the float64 spt_coo of subs/vals, init the
    `init_factors` as the options' init_factors pointer to row-major views
    (None when there are none) and out an empty handle for the call's
    result, freed with free_result (e.g. lib.spt_ktensor_free)."""
    x = coo_from_subs(lib, subs, vals, shape)
    wrapped = []
    out = ctypes.c_void_p()
    try:
        arrays = wrap_matrices(lib, init_factors or [], wrapped)  # noqa: F841 (kept alive for the views)
        init = None
        if wrapped:
            ptrs = (ctypes.c_void_p * len(wrapped))(*[m.value for m in wrapped])
            init = ctypes.cast(ptrs, ctypes.POINTER(ctypes.c_void_p))  # keeps ptrs alive
        yield x, init, out
    finally:
        free_result(out)
        for m in wrapped:
            lib.spt_matrix_free(m)
        lib.spt_coo_free(x)


def init_options(lib, init_name, options_type):
    """options_type() filled by the library's `init_name`; fails when the
    library's struct size differs from this script's ctypes layout."""
    opts = options_type()
    check(lib, getattr(lib, init_name)(ctypes.byref(opts)), init_name)
    if opts.struct_size != ctypes.sizeof(options_type):
        raise RuntimeError(f"{init_name}: options layout mismatch: library says {opts.struct_size} bytes, "
                           f"this script {ctypes.sizeof(options_type)}")
    return opts


def copy_factors(lib, get_factor, handle, shape, cols):
    """Factor n of `handle` (through get_factor(handle, n, &matrix)) as a
    shape[n] x cols[n] numpy array, for every mode."""
    factors = []
    for n in range(len(shape)):
        f = ctypes.c_void_p()
        check(lib, get_factor(handle, n, ctypes.byref(f)), "factor")
        out = np.empty((shape[n], cols[n]), dtype=np.float64)
        check(lib, lib.spt_matrix_copy_out(f, SPT_ROW_MAJOR, out.ctypes.data, cols[n]), "copy_out")
        factors.append(out)
    return factors


def ktensor_lambda(lib, k, rank):
    lam_ptr = ctypes.c_void_p()
    check(lib, lib.spt_ktensor_lambda(k, ctypes.byref(lam_ptr)), "lambda")
    return np.ctypeslib.as_array(ctypes.cast(lam_ptr, ctypes.POINTER(ctypes.c_double)), (rank,)).copy()


def run_main(main):
    """Exit with main(sys.argv); an exception is reported as FAIL (exit 1) so
    ctest shows a reason, not only a traceback."""
    try:
        sys.exit(main(sys.argv))
    except SystemExit:
        raise
    except Exception as e:
        import traceback
        traceback.print_exc()
        print(f"FAIL: {e}")
        sys.exit(1)
