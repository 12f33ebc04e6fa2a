"""sptensor.mpi: distributed CP-ALS (libsptensor_mpi.so) from Python, over mpi4py.

Optional: needs mpi4py (Debian/Ubuntu: python3-mpi4py; pip: mpi4py) built
for the same MPI library as libsptensor_mpi, and libsptensor_mpi.so. Run
under mpirun; every call below except the accessors is collective (every
rank of the communicator calls it with the same scalar arguments)::

    # mpirun -np 4 python3 prog.py
    from mpi4py import MPI
    import sptensor.mpi as smpi
    X = smpi.read("tensor.tns", comm=MPI.COMM_WORLD)   # each rank reads its byte range
    r = smpi.cp_als(X, rank=8, seed=1)                 # the fit spt_cpd_als gives, for any P
    if MPI.COMM_WORLD.rank == 0:
        print(r.fit, [f.shape for f in r.factors])      # full factors gathered on root

Communicators are passed as their Fortran handles (``comm.py2f()``) to the
library's ``*_fcomm`` entry points (sptensor_mpi.h), which convert them with
MPI_Comm_f2c: MPI_Comm is a pointer in Open MPI and an int in MPICH, while
the Fortran handle is a C int everywhere, so no guess about the C type's
size is needed.

libsptensor_mpi.so is looked for in ``SPTENSOR_MPI_LIBRARY`` (the file or
its directory), then beside the loaded libsptensor.so, then by
``ctypes.util.find_library("sptensor_mpi")`` and the loader path.
Errors raise the exceptions of :mod:`sptensor` (the same status and message
on every rank for failures the library agrees on).
"""
import ctypes
import ctypes.util
import os
import threading
from collections import namedtuple

import numpy as np

try:
    from mpi4py import MPI
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError("sptensor.mpi needs mpi4py (apt-get install python3-mpi4py, or pip install mpi4py) "
                      f"built for the MPI library libsptensor_mpi uses: {e}") from e

from . import _capi_mpi, _lib
from . import (InvalidArgumentError, LibraryNotFoundError, Tensor, CPResult, _Matrices, _Owned, _choice, _copy_matrix,
               _ctx, _dtype_code, _history, _iterations, _NP_DTYPES, _FORMATS, _DTYPES, _rank)

__all__ = ["DistTensor", "MPICPResult", "read", "tensor", "cp_als", "library_path"]

# The structs and prototypes of sptensor_mpi.h, generated from the header by
# scripts/gen_bindings.py (the functions taking an MPI_Comm are left out:
# the *_fcomm variants take mpi4py's Fortran handle, comm.py2f()).
MAX_ORDER = _capi_mpi.SPT_MPI_MAX_ORDER
pu64, pi32 = _lib.pu64, _lib.pi32
_DECOMPOSITIONS = {"medium": _capi_mpi.SPT_MPI_MEDIUM_GRAINED, "coarse": _capi_mpi.SPT_MPI_COARSE_GRAINED}
MpiCpdOptions = _capi_mpi.MpiCpdOptions
MpiTensorSummary = _capi_mpi.MpiTensorSummary
MpiCpdStats = _capi_mpi.MpiCpdStats
SIGNATURES = _capi_mpi.SIGNATURES


_lock = threading.Lock()
_mpilib = None
_mpipath = None


def _candidates():
    name = "libsptensor_mpi.so.1"
    env = os.environ.get("SPTENSOR_MPI_LIBRARY")
    if env:
        yield os.path.join(env, name) if os.path.isdir(env) else env
        return
    yield os.path.join(os.path.dirname(os.path.abspath(_lib.library_path())), name)
    found = ctypes.util.find_library("sptensor_mpi")
    if found:
        yield found
    yield name


def mpilib():
    """libsptensor_mpi, loaded (after libsptensor, whose handles it shares) and bound on first use."""
    global _mpilib, _mpipath
    if _mpilib is not None:
        return _mpilib
    with _lock:
        if _mpilib is not None:
            return _mpilib
        _lib.lib()  # libsptensor first: libsptensor_mpi resolves it by SONAME to the same copy
        tried = []
        for path in _candidates():
            if os.path.sep in path and not os.path.exists(path):
                tried.append(f"  {path}: no such file")
                continue
            try:
                handle = ctypes.CDLL(path)
                for fn_name, (restype, argtypes) in SIGNATURES.items():
                    fn = getattr(handle, fn_name)
                    fn.restype = restype
                    fn.argtypes = argtypes
            except (OSError, AttributeError) as e:
                tried.append(f"  {path}: {e}")
                continue
            _mpilib, _mpipath = handle, path
            return _mpilib
        raise LibraryNotFoundError("sptensor.mpi: libsptensor_mpi.so.1 was not found or is too old (build "
                                   "libsptensor with MPI, or set SPTENSOR_MPI_LIBRARY). Tried:\n" + "\n".join(tried))


def library_path():
    """Path (or loader name) of the loaded libsptensor_mpi."""
    mpilib()
    return _mpipath


def _fcomm(comm):
    comm = MPI.COMM_WORLD if comm is None else comm
    if not isinstance(comm, MPI.Comm):
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", f"comm must be an mpi4py communicator, got {comm!r}")
    return comm, comm.py2f()


def _check(status, function, ctx):
    # With a context the library stores the message there; sptensor's check reads it.
    return _lib.check(status, function, ctx._h)


class DistTensor(_Owned):
    """This rank's part of a tensor distributed over ``comm`` (spt_mpi_tensor):
    ``shape`` and ``nnz`` are global, ``local_nnz`` this rank's count.
    :meth:`local` copies this rank's nonzeros (global coordinates) into a
    :class:`sptensor.Tensor`; :meth:`gather` collects the whole tensor on one rank."""

    def __init__(self, handle, comm):
        L = mpilib()
        self._h = handle
        self._free = L.spt_mpi_tensor_free
        self.comm = comm
        c = _ctx(None)
        s = MpiTensorSummary()
        s.struct_size = ctypes.sizeof(s)
        _check(L.spt_mpi_tensor_info(c._h, handle, ctypes.byref(s)), "spt_mpi_tensor_info", c)  # local
        dims = (ctypes.c_uint32 * s.order)()
        _lib.check(L.spt_mpi_tensor_dims(handle, dims), "spt_mpi_tensor_dims")
        self.dtype = _NP_DTYPES[s.dtype]
        self.order = int(s.order)
        self.nnz = int(s.global_nnz)
        self.local_nnz = int(s.local_nnz)
        self.shape = tuple(int(d) for d in dims)

    def __repr__(self):
        return (f"<sptensor.mpi.DistTensor shape={self.shape} nnz={self.nnz} local_nnz={self.local_nnz} "
                f"rank {self.comm.rank}/{self.comm.size}>")

    def local(self, ctx=None):
        """A copy of this rank's nonzeros as a :class:`sptensor.Tensor` (global dims and coordinates). Local."""
        c = _ctx(ctx)
        borrowed = ctypes.c_void_p()
        _lib.check(mpilib().spt_mpi_tensor_local(self._h, ctypes.byref(borrowed)), "spt_mpi_tensor_local")
        h = ctypes.c_void_p()
        _lib.check(_lib.lib().spt_coo_copy(c._h, borrowed, ctypes.byref(h)), "spt_coo_copy", c._h)
        return Tensor(h)

    def gather(self, root=0, ctx=None):
        """Collective. The whole tensor (rank order) as a :class:`sptensor.Tensor` on `root`, None elsewhere."""
        c = _ctx(ctx)
        comm, f = _fcomm(self.comm)
        h = ctypes.c_void_p()
        _check(mpilib().spt_mpi_tensor_gather_fcomm(f, c._h, self._h, int(root), ctypes.byref(h)),
               "spt_mpi_tensor_gather", c)
        return Tensor(h) if h.value else None


def read(path, comm=None, dtype=np.float64, index_base=1, shape=None, ctx=None):
    """Collective. Read a tensor file in parallel (spt_mpi_read): plain .tns
    text by byte ranges on every rank, compressed or binary files read by
    rank 0 and scattered. Returns a :class:`DistTensor`."""
    c = _ctx(ctx)
    comm, f = _fcomm(comm)
    opts = _lib.init_options("spt_read_options_init_size", _lib.ReadOptions)
    opts.dtype = _dtype_code(dtype)
    opts.index_base = int(index_base)
    if shape is not None:
        dims = (ctypes.c_uint32 * len(shape))(*[int(d) for d in shape])
        opts.order = len(shape)
        opts.dims = dims
    h = ctypes.c_void_p()
    _check(mpilib().spt_mpi_read_fcomm(f, c._h, os.fsencode(path), ctypes.byref(opts), ctypes.byref(h)),
           "spt_mpi_read", c)
    return DistTensor(h, comm)


def tensor(subs, vals, shape=None, comm=None, index_base=0, dtype=None, ctx=None):
    """Collective. A :class:`DistTensor` from the nonzeros each rank holds:
    subs (local_nnz, order) integer coordinates (base `index_base`), vals
    local_nnz values; any split across ranks (a rank may pass none, with
    subs of shape (0, order)). shape: the global dims (same on every rank),
    or None on every rank to infer them. The arrays are copied."""
    c = _ctx(ctx)
    comm, f = _fcomm(comm)
    subs = np.asarray(subs)
    if subs.ndim != 2:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", f"subs must be (nnz, order), got shape {subs.shape}")
    vals = np.asarray(vals)
    dt = np.dtype(dtype) if dtype is not None else (vals.dtype if vals.dtype in _DTYPES else np.dtype(np.float64))
    vals = np.ascontiguousarray(vals.reshape(-1), dtype=dt)
    nnz, order = subs.shape
    if vals.shape[0] != nnz:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", f"{nnz} coordinates but {vals.shape[0]} values")
    if nnz and (subs.min() < 0 or subs.max() > 0xFFFFFFFF):
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", "coordinates must fit 32-bit unsigned indices")
    idx = np.asfortranarray(subs, dtype=np.uint32)  # mode-major: indices[m * nnz + k]
    dims = None if shape is None else (ctypes.c_uint32 * order)(*[int(d) for d in shape])
    h = ctypes.c_void_p()
    _check(mpilib().spt_mpi_tensor_create_fcomm(f, c._h, _dtype_code(dt), order, dims, nnz,
                                                idx.ctypes.data if nnz else None, max(nnz, 1), int(index_base),
                                                vals.ctypes.data if nnz else None, 0, ctypes.byref(h)),
           "spt_mpi_tensor_create", c)
    return DistTensor(h, comm)


MPICPResult = namedtuple("MPICPResult", "weights factors fit iterations converged fit_history seconds "
                                        "local_rows local_factors stats")
MPICPResult.__doc__ = """Result of :func:`cp_als`: weights (lambda, on every rank), factors (the
full factor matrices on the root rank when gathered, else None), fit,
iterations, converged, fit and seconds per iteration (every rank),
local_rows[m] (global 0-based rows of factor m this rank owns),
local_factors[m] (those rows), stats (communication and balance counters,
a dict)."""


def _to_cpresult(self):
    """The gathered model as a :class:`sptensor.CPResult` (root rank only)."""
    if self.factors is None:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", "the factors were not gathered on this rank")
    return CPResult(self.weights, self.factors, self.fit, self.iterations, self.converged, self.fit_history,
                    self.seconds)


MPICPResult.to_cpresult = _to_cpresult


def cp_als(tensor, rank, max_iters=50, tol=1e-4, init="random", seed=0, format="auto", decomposition="medium",
           grid=None, gather=True, root=0, ctx=None):
    """Collective. Distributed CP-ALS of a :class:`DistTensor` over its
    communicator (spt_mpi_cpd_als; the numerics of :func:`sptensor.cp_als`:
    from the same seed or initial factors the fit equals the serial one up to
    rounding, for any number of ranks and grid).

    init: "random" (from `seed`; 0 = the context seed) or `order` full
    initial factors (shape[m] x rank, the same on every rank).
    decomposition: "medium" (process grid, SPLATT's medium-grained) or
    "coarse"; grid: `order` grid sizes with product = ranks, or None to
    choose. gather: collect the full factors on `root` (else only the
    owned rows stay on each rank). Returns an :class:`MPICPResult`."""
    c = _ctx(ctx)
    L = mpilib()
    comm, f = _fcomm(tensor.comm)
    opts = MpiCpdOptions()
    _lib.check(L.spt_mpi_cpd_options_init_size(ctypes.byref(opts), ctypes.sizeof(opts)), "spt_mpi_cpd_options_init")
    if opts.struct_size != ctypes.sizeof(MpiCpdOptions):
        raise RuntimeError(f"spt_mpi_cpd_options layout mismatch: library {opts.struct_size} bytes, "
                           f"Python mirror {ctypes.sizeof(MpiCpdOptions)}")
    rank = _rank(rank)
    opts.rank = rank
    opts.max_iters = _iterations(max_iters, "max_iters")
    opts.tol = float(tol)
    opts.seed = int(seed)
    opts.format = _choice(_FORMATS, format, "format")
    opts.decomposition = _choice(_DECOMPOSITIONS, decomposition, "decomposition")
    grid_array = None
    if grid is not None:
        grid_array = (ctypes.c_int * len(grid))(*[int(g) for g in grid])
        opts.grid = ctypes.cast(grid_array, pi32)
    k = ctypes.c_void_p()
    with _Matrices() as mats:
        mats.set_init(c, opts, init, tensor.order, tensor.dtype)
        _check(L.spt_mpi_cpd_als_fcomm(f, c._h, tensor._h, ctypes.byref(opts), ctypes.byref(k)), "spt_mpi_cpd_als", c)
    try:
        S = _lib.lib()
        local = ctypes.c_void_p()
        _lib.check(L.spt_mpi_ktensor_local(k, ctypes.byref(local)), "spt_mpi_ktensor_local")
        fit, iters, conv = ctypes.c_double(), ctypes.c_int(), ctypes.c_int()
        _lib.check(S.spt_ktensor_result(local, ctypes.byref(fit), ctypes.byref(iters), ctypes.byref(conv)),
                   "spt_ktensor_result")
        lam = ctypes.c_void_p()
        _lib.check(S.spt_ktensor_lambda(local, ctypes.byref(lam)), "spt_ktensor_lambda")
        ctype = ctypes.c_double if tensor.dtype == np.float64 else ctypes.c_float
        weights = np.ctypeslib.as_array(ctypes.cast(lam, ctypes.POINTER(ctype)), (int(rank),)).copy()
        fits, seconds = _history(S.spt_ktensor_history, local)
        local_rows, local_factors = [], []
        for m in range(tensor.order):
            rows, count = pu64(), ctypes.c_uint64()
            _lib.check(L.spt_mpi_ktensor_rows(k, m, ctypes.byref(rows), ctypes.byref(count)), "spt_mpi_ktensor_rows")
            n = int(count.value)
            local_rows.append(np.ctypeslib.as_array(rows, (n,)).copy() if n else np.empty(0, dtype=np.uint64))
            fm = ctypes.c_void_p()
            _lib.check(S.spt_ktensor_factor(local, m, ctypes.byref(fm)), "spt_ktensor_factor")
            local_factors.append(_copy_matrix(fm, tensor.dtype))
        st = MpiCpdStats()
        st.struct_size = ctypes.sizeof(st)
        _lib.check(L.spt_mpi_ktensor_stats(k, ctypes.byref(st)), "spt_mpi_ktensor_stats")
        stats = {name: getattr(st, name) for name, _ in MpiCpdStats._fields_ if name not in ("struct_size", "grid")}
        stats["grid"] = list(st.grid[:tensor.order])
        factors = None
        if gather:
            full = ctypes.c_void_p()
            _check(L.spt_mpi_ktensor_gather_fcomm(f, c._h, k, int(root), ctypes.byref(full)), "spt_mpi_ktensor_gather",
                   c)
            if full.value:
                try:
                    factors = []
                    for m in range(tensor.order):
                        fm = ctypes.c_void_p()
                        _lib.check(S.spt_ktensor_factor(full, m, ctypes.byref(fm)), "spt_ktensor_factor")
                        factors.append(_copy_matrix(fm, tensor.dtype))
                finally:
                    S.spt_ktensor_free(full)
        return MPICPResult(weights, factors, fit.value, iters.value, bool(conv.value), fits, seconds, local_rows,
                           local_factors, stats)
    finally:
        L.spt_mpi_ktensor_free(k)
