"""sptensor: Python interface to libsptensor (sparse tensors, CP and Tucker).

A thin ctypes layer over the library's stable C ABI (libsptensor.so.0);
nothing is compiled at install time. Results come back as numpy arrays.

    import numpy as np, sptensor
    X = sptensor.read("tensor.tns.xz")                # or sptensor.coo(subs, vals, shape)
    cp = sptensor.cp_als(X, rank=8, seed=1)
    print(cp.fit, cp.weights, [U.shape for U in cp.factors])

Errors raise :class:`SptensorError` (subclasses also derive from the
matching Python exception: ValueError, OSError, MemoryError, ...), carrying
``status``, ``status_name`` and the library's ``message``.
"""
import ctypes
import os
import threading
from collections import namedtuple

import numpy as np

from . import _lib
from ._lib import (DeviceError, FileIOError, InvalidArgumentError, LibraryNotFoundError, NumericalError,
                   OutOfMemoryError, OverflowSizeError, ParseError, ReadOnlyError, SptensorError, UnsupportedError,
                   library_path)

__version__ = "0.1.0"

__all__ = [
    "Context", "Tensor", "HiCOO", "CSF", "CPResult", "TuckerResult",
    "coo", "from_pyttb", "read", "write", "mttkrp", "cp_als", "tucker", "suggest_format",
    "default_context", "set_backend", "get_backend", "backend_info", "set_threads",
    "library_version", "library_path",
    "SptensorError", "InvalidArgumentError", "FileIOError", "ParseError", "OutOfMemoryError",
    "UnsupportedError", "DeviceError", "NumericalError", "OverflowSizeError", "ReadOnlyError",
    "LibraryNotFoundError",
]

_DTYPES = {np.dtype(np.float32): _lib.SPT_FLOAT32, np.dtype(np.float64): _lib.SPT_FLOAT64}
_NP_DTYPES = {_lib.SPT_FLOAT32: np.dtype(np.float32), _lib.SPT_FLOAT64: np.dtype(np.float64)}
_BACKENDS = {"auto": 0, "cpu": 1, "cuda": 2, "reference": 3}
_BACKEND_NAMES = {v: k for k, v in _BACKENDS.items()}
_FORMATS = {"auto": 0, "coo": 1, "csf": 2, "hicoo": 3}
_FORMAT_NAMES = {v: k for k, v in _FORMATS.items()}
_CSF_POLICIES = {"auto": 0, "onemode": 1, "twomode": 2, "allmode": 3, "memoized": 4}
_CSF_POLICY_NAMES = {v: k for k, v in _CSF_POLICIES.items()}
_FILE_FORMATS = {"auto": 0, "tns": 1, "tns_extended": 2, "splatt_bin": 3, "sptb": 4}
_COMPRESSIONS = {"auto": 0, "none": 1, "gzip": 2, "xz": 3, "zstd": 4}
_DUPLICATES = {"keep": 0, "sum": 1, "reject": 2}
_HICOO_STRATEGIES = {"auto": 0, "direct": 1, "privatized": 2}


def _choice(table, value, what):
    try:
        return table[str(value).lower()]
    except KeyError:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                   f"unknown {what} {value!r}; expected one of {', '.join(table)}") from None


def _dtype_code(dtype):
    dt = np.dtype(dtype)
    if dt not in _DTYPES:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                   f"dtype {dt} is not supported; use float32 or float64")
    return _DTYPES[dt]


def library_version():
    """Version string of the loaded libsptensor, e.g. "0.1.0"."""
    return _lib.lib().spt_version().decode()


# ---------------------------------------------------------------------------
# Context
# ---------------------------------------------------------------------------
class Context:
    """An spt_context: backend, threads, CUDA device, default seed.

    Not thread safe (as the C handle): use one per thread. Functions taking
    ``ctx=None`` use :func:`default_context`, one per Python thread.
    """

    def __init__(self, backend=None, threads=None, seed=None, device=None):
        L = _lib.lib()
        h = ctypes.c_void_p()
        _lib.check(L.spt_context_create(ctypes.byref(h)), "spt_context_create")
        self._h = h
        self._free = L.spt_context_free
        if backend is not None:
            self.backend = backend
        if threads is not None:
            self.threads = threads
        if seed is not None:
            self.seed = seed
        if device is not None:
            _lib.check(L.spt_context_set_device(self._h, int(device)), "spt_context_set_device", self._h)

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            self._free(h)
            self._h = None

    @property
    def backend(self):
        """The backend setting: "auto", "cpu", "cuda" or "reference" (settable)."""
        b = ctypes.c_int()
        _lib.check(_lib.lib().spt_context_get_backend(self._h, ctypes.byref(b)), "spt_context_get_backend", self._h)
        return _BACKEND_NAMES.get(b.value, str(b.value))

    @backend.setter
    def backend(self, name):
        code = _choice(_BACKENDS, name, "backend")
        _lib.check(_lib.lib().spt_context_set_backend(self._h, code), "spt_context_set_backend", self._h)

    @property
    def threads(self):
        """Threads the kernels use (settable; 0 restores the default)."""
        t = ctypes.c_int()
        _lib.check(_lib.lib().spt_context_get_threads(self._h, ctypes.byref(t)), "spt_context_get_threads", self._h)
        return t.value

    @threads.setter
    def threads(self, n):
        _lib.check(_lib.lib().spt_context_set_threads(self._h, int(n)), "spt_context_set_threads", self._h)

    @property
    def seed(self):
        raise AttributeError("the context seed is write-only")

    @seed.setter
    def seed(self, value):
        _lib.check(_lib.lib().spt_context_set_seed(self._h, int(value)), "spt_context_set_seed", self._h)

    def backend_info(self):
        """What the backend resolves to and what CUDA support was found (a dict)."""
        info = _lib.BackendInfo()
        info.struct_size = ctypes.sizeof(info)
        _lib.check(_lib.lib().spt_context_backend_info(self._h, ctypes.byref(info)), "spt_context_backend_info",
                   self._h)
        return {
            "requested": _BACKEND_NAMES.get(info.requested, info.requested),
            "backend": _BACKEND_NAMES.get(info.backend, info.backend),
            "cuda_available": bool(info.cuda_available),
            "device": info.device,
            "device_count": info.device_count,
            "device_name": info.device_name.decode(errors="replace"),
            "device_total_memory": info.device_total_memory,
            "compute_capability": (info.compute_capability_major, info.compute_capability_minor),
            "plugin_path": info.plugin_path.decode(errors="replace"),
            "reason": info.reason.decode(errors="replace"),
        }


_local = threading.local()


def default_context():
    """The calling thread's default Context (created on first use; backend
    from env SPT_BACKEND, else AUTO)."""
    ctx = getattr(_local, "ctx", None)
    if ctx is None:
        ctx = _local.ctx = Context()
    return ctx


def _ctx(ctx):
    return ctx if ctx is not None else default_context()


def set_backend(name, ctx=None):
    """Select "auto", "cpu", "cuda" or "reference" (for the calling thread's default context)."""
    _ctx(ctx).backend = name


def get_backend(ctx=None):
    """The backend setting of ctx (default: this thread's default context)."""
    return _ctx(ctx).backend


def backend_info(ctx=None):
    """See Context.backend_info."""
    return _ctx(ctx).backend_info()


def set_threads(n, ctx=None):
    """Kernel threads for the default context (0 = default: all cores or OMP_NUM_THREADS)."""
    _ctx(ctx).threads = n


# ---------------------------------------------------------------------------
# Dense matrices passed to the library (views, no copies when possible)
# ---------------------------------------------------------------------------
class _Matrices:
    """spt_matrix views of numpy arrays, freed together; keeps the arrays alive."""

    def __init__(self):
        self.handles = []
        self.arrays = []

    def wrap(self, ctx, array, dtype):
        a = np.asarray(array)
        if a.ndim != 2:
            raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", f"expected a 2-D matrix, got shape {a.shape}")
        a = a.astype(dtype, copy=False)
        if a.flags.c_contiguous:
            layout, ld = _lib.SPT_ROW_MAJOR, max(a.shape[1], 1)
        elif a.flags.f_contiguous:
            layout, ld = _lib.SPT_COL_MAJOR, max(a.shape[0], 1)
        else:
            a = np.ascontiguousarray(a)
            layout, ld = _lib.SPT_ROW_MAJOR, max(a.shape[1], 1)
        h = ctypes.c_void_p()
        _lib.check(_lib.lib().spt_matrix_wrap(ctx._h, _DTYPES[a.dtype], a.shape[0], a.shape[1], layout,
                                              a.ctypes.data, ld, ctypes.byref(h)), "spt_matrix_wrap", ctx._h)
        self.handles.append(h)
        self.arrays.append(a)
        return h

    def free(self):
        L = _lib.lib()
        for h in self.handles:
            L.spt_matrix_free(h)
        self.handles = []
        self.arrays = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()


def _copy_matrix(h, dtype):
    """A C-ordered numpy copy of a (borrowed) spt_matrix."""
    L = _lib.lib()
    rows, cols = ctypes.c_uint64(), ctypes.c_uint64()
    _lib.check(L.spt_matrix_info(h, None, ctypes.byref(rows), ctypes.byref(cols), None, None), "spt_matrix_info")
    out = np.empty((rows.value, cols.value), dtype=dtype)
    _lib.check(L.spt_matrix_copy_out(h, _lib.SPT_ROW_MAJOR, out.ctypes.data, max(cols.value, 1)),
               "spt_matrix_copy_out")
    return out


def _history(fn, h):
    count = ctypes.c_int()
    fits = _lib.pf64()
    seconds = _lib.pf64()
    _lib.check(fn(h, ctypes.byref(count), ctypes.byref(fits), ctypes.byref(seconds)), "history")
    n = count.value
    return ([fits[i] for i in range(n)] if n else [], [seconds[i] for i in range(n)] if n else [])


# ---------------------------------------------------------------------------
# Sparse tensors
# ---------------------------------------------------------------------------
class Tensor:
    """A sparse tensor in coordinate (COO) format: an spt_coo handle.

    Create with :func:`coo` (from numpy arrays) or :func:`read`. ``shape``,
    ``nnz``, ``order`` and ``dtype`` describe it; ``subs`` and ``vals``
    return copies of its 0-based coordinates (nnz x order) and values.
    A tensor made with ``coo(..., copy=False)`` is a read-only view of the
    caller's arrays (kept alive by the Tensor).
    """

    def __init__(self, handle, keepalive=None):
        self._h = handle
        self._keepalive = keepalive
        self._free = _lib.lib().spt_coo_free
        L = _lib.lib()
        dtype, order, nnz = ctypes.c_int(), ctypes.c_uint32(), ctypes.c_uint64()
        _lib.check(L.spt_coo_info(self._h, ctypes.byref(dtype), ctypes.byref(order), ctypes.byref(nnz)),
                   "spt_coo_info")
        dims = (ctypes.c_uint32 * order.value)()
        _lib.check(L.spt_coo_dims(self._h, dims), "spt_coo_dims")
        self.shape = tuple(int(d) for d in dims)
        self.nnz = int(nnz.value)
        self.order = int(order.value)
        self.dtype = _NP_DTYPES[dtype.value]

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            self._free(h)
            self._h = None

    def __repr__(self):
        return f"<sptensor.Tensor shape={self.shape} nnz={self.nnz} dtype={self.dtype}>"

    @property
    def is_view(self):
        """True when the tensor views caller arrays (coo(..., copy=False))."""
        return self._keepalive is not None

    @property
    def subs(self):
        """0-based coordinates, an (nnz, order) uint32 array (a copy)."""
        L = _lib.lib()
        out = np.empty((self.nnz, self.order), dtype=np.uint32)
        for m in range(self.order):
            p = ctypes.c_void_p()
            _lib.check(L.spt_coo_indices(self._h, m, ctypes.byref(p)), "spt_coo_indices")
            if self.nnz:
                out[:, m] = np.ctypeslib.as_array(ctypes.cast(p, _lib.pu32), (self.nnz,))
        return out

    @property
    def vals(self):
        """Values, an (nnz,) array of the tensor's dtype (a copy)."""
        p = ctypes.c_void_p()
        _lib.check(_lib.lib().spt_coo_values(self._h, ctypes.byref(p)), "spt_coo_values")
        if not self.nnz:
            return np.empty(0, dtype=self.dtype)
        ctype = ctypes.c_double if self.dtype == np.float64 else ctypes.c_float
        return np.ctypeslib.as_array(ctypes.cast(p, ctypes.POINTER(ctype)), (self.nnz,)).copy()

    def norm(self, ctx=None):
        """Frobenius norm (accumulated in double)."""
        c = _ctx(ctx)
        r = ctypes.c_double()
        _lib.check(_lib.lib().spt_coo_norm(c._h, self._h, ctypes.byref(r)), "spt_coo_norm", c._h)
        return r.value

    def copy(self, ctx=None):
        """An owning deep copy (a view becomes a normal tensor)."""
        c = _ctx(ctx)
        h = ctypes.c_void_p()
        _lib.check(_lib.lib().spt_coo_copy(c._h, self._h, ctypes.byref(h)), "spt_coo_copy", c._h)
        return Tensor(h)

    def astype(self, dtype, ctx=None):
        """A copy with values converted to float32 or float64."""
        c = _ctx(ctx)
        h = ctypes.c_void_p()
        _lib.check(_lib.lib().spt_coo_convert_dtype(c._h, self._h, _dtype_code(dtype), ctypes.byref(h)),
                   "spt_coo_convert_dtype", c._h)
        return Tensor(h)

    def coalesce(self, duplicates="sum", ctx=None):
        """Merge repeated coordinates in place ("sum" or "reject"); sorts the tensor."""
        c = _ctx(ctx)
        _lib.check(_lib.lib().spt_coo_coalesce(c._h, self._h, _choice(_DUPLICATES, duplicates, "duplicates policy")),
                   "spt_coo_coalesce", c._h)
        self.__init__(self._h, self._keepalive)
        return self

    def write(self, path, **kwargs):
        """Same as :func:`write` (self, path, ...)."""
        write(self, path, **kwargs)

    def to_hicoo(self, block_size=0, superblock_size=0, strategy="auto", ctx=None):
        """Convert to HiCOO (see :class:`HiCOO`)."""
        return HiCOO(self, block_size=block_size, superblock_size=superblock_size, strategy=strategy, ctx=ctx)

    def to_csf(self, policy="auto", ctx=None):
        """Convert to CSF (see :class:`CSF`)."""
        return CSF(self, policy=policy, ctx=ctx)

    def to_pyttb(self):
        """A pyttb.sptensor with the same nonzeros (needs pyttb)."""
        import pyttb
        return pyttb.sptensor(self.subs.astype(np.int64), self.vals.reshape(-1, 1), self.shape)

    def to_numpy(self):
        """The dense numpy array (only for small tensors)."""
        out = np.zeros(self.shape, dtype=self.dtype)
        np.add.at(out, tuple(self.subs.T.astype(np.intp)), self.vals)
        return out


def coo(subs, vals, shape=None, index_base=0, dtype=None, copy=None, ctx=None):
    """A :class:`Tensor` from coordinates and values.

    subs: integer coordinates, shape (nnz, order) (pyttb's layout) or, with
      ``index_base`` as given, ``index_base`` 0 or 1 (1 for MATLAB/FROSTT);
    vals: nnz values (float32 or float64; others become float64 unless dtype says);
    shape: the dims, or None to infer (max index + 1 per mode);
    copy: False = wrap the arrays without copying (needs 0-based uint32
      coordinates whose transpose is C-contiguous, e.g.
      ``np.asfortranarray(subs, dtype=np.uint32)`` or ``idx.T`` of a C-ordered
      (order, nnz) array, and contiguous float32/float64 values; the tensor is
      then read-only and keeps the arrays alive); True = always copy;
      None (default) = view when possible, else copy.
    """
    c = _ctx(ctx)
    L = _lib.lib()
    subs = np.asarray(subs)
    if subs.ndim == 1:
        subs = subs.reshape(-1, 1)
    if subs.ndim != 2:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", f"subs must be (nnz, order), got {subs.shape}")
    nnz, order = subs.shape
    vals = np.asarray(vals).reshape(-1)
    if vals.shape[0] != nnz:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                   f"{nnz} coordinates but {vals.shape[0]} values")
    if dtype is None:
        dtype = vals.dtype if vals.dtype in _DTYPES else np.float64
    code = _dtype_code(dtype)
    if shape is not None:
        shape = tuple(int(s) for s in shape)
        if len(shape) != order:
            raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                       f"shape has {len(shape)} dims but subs has {order} columns")
        dims = (ctypes.c_uint32 * order)(*shape)
    else:
        dims = None
    if np.issubdtype(subs.dtype, np.integer) and nnz and (subs.min() < index_base or subs.max() >= 2**32 + index_base):
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                   f"coordinates must lie in [{index_base}, 2^32) for index_base {index_base}")
    can_view = (subs.dtype == np.uint32 and subs.T.flags.c_contiguous and index_base == 0
                and vals.dtype == np.dtype(dtype) and vals.flags.c_contiguous)
    if copy is False and not can_view:
        raise InvalidArgumentError(
            -1, "SPT_ERR_INVALID_ARGUMENT",
            "copy=False needs 0-based uint32 subs stored mode-major (subs.T C-contiguous, e.g. "
            "np.asfortranarray(subs, dtype=np.uint32)) and contiguous values of the requested dtype")
    h = ctypes.c_void_p()
    if can_view and copy is not True:
        indices = subs.T  # (order, nnz) C-contiguous: mode-major, ld = nnz
        _lib.check(L.spt_coo_create_view(c._h, code, order, dims, nnz, indices.ctypes.data, max(nnz, 1),
                                         vals.ctypes.data, ctypes.byref(h)), "spt_coo_create_view", c._h)
        return Tensor(h, keepalive=(subs, vals))
    indices = np.ascontiguousarray(subs.T, dtype=np.uint32)
    values = np.ascontiguousarray(vals, dtype=np.dtype(dtype))
    _lib.check(L.spt_coo_create_from_arrays(c._h, code, order, dims, nnz, indices.ctypes.data, max(nnz, 1),
                                            int(index_base), values.ctypes.data, 0, ctypes.byref(h)),
               "spt_coo_create_from_arrays", c._h)
    return Tensor(h)


def from_pyttb(tensor, dtype=None, ctx=None):
    """A :class:`Tensor` copied from a pyttb.sptensor (0-based subs, vals, shape)."""
    return coo(np.asarray(tensor.subs), np.asarray(tensor.vals).reshape(-1), shape=tuple(tensor.shape), dtype=dtype,
               copy=True, ctx=ctx)


def read(path, dtype=np.float64, index_base=1, format="auto", shape=None, duplicates="keep",
         reject_nonfinite=False, copy_binary=False, ctx=None):
    """Read a tensor file: FROSTT .tns, extended (ParTI!) .tns, SPLATT .bin or
    .sptb, each optionally gzip/xz/zstd compressed (detected from content).

    index_base applies to text files (1 = FROSTT). format: "auto", "tns",
    "tns_extended", "splatt_bin", "sptb". shape: expected dims (None = infer).
    duplicates: "keep", "sum" or "reject"."""
    c = _ctx(ctx)
    opts = _lib.init_options("spt_read_options_init_size", _lib.ReadOptions)
    opts.format = _choice(_FILE_FORMATS, format, "file format")
    opts.dtype = _dtype_code(dtype)
    opts.index_base = int(index_base)
    dims = None
    if shape is not None:
        dims = (ctypes.c_uint32 * len(shape))(*shape)
        opts.order = len(shape)
        opts.dims = dims
    opts.duplicates = _choice(_DUPLICATES, duplicates, "duplicates policy")
    opts.reject_nonfinite = 1 if reject_nonfinite else 0
    opts.copy_binary = 1 if copy_binary else 0
    h = ctypes.c_void_p()
    _lib.check(_lib.lib().spt_read(c._h, os.fsencode(path), ctypes.byref(opts), ctypes.byref(h)), "spt_read", c._h)
    return Tensor(h)


def write(tensor, path, format="auto", compression="auto", index_base=1, precision=0, ctx=None):
    """Write a tensor. format "auto" picks from the extension (.bin SPLATT,
    .sptb, else .tns); compression "auto" from a .gz/.xz/.zst suffix.
    precision: significant digits for text (0 = shortest exact round trip)."""
    c = _ctx(ctx)
    opts = _lib.init_options("spt_write_options_init_size", _lib.WriteOptions)
    opts.format = _choice(_FILE_FORMATS, format, "file format")
    opts.compression = _choice(_COMPRESSIONS, compression, "compression")
    opts.index_base = int(index_base)
    opts.precision = int(precision)
    _lib.check(_lib.lib().spt_write(c._h, tensor._h, os.fsencode(path), ctypes.byref(opts)), "spt_write", c._h)


# ---------------------------------------------------------------------------
# Other formats
# ---------------------------------------------------------------------------
class HiCOO:
    """Hierarchical COO (blocked, 8-bit element indices): an spt_hicoo handle
    built from a :class:`Tensor` (which may be freed afterwards)."""

    def __init__(self, tensor, block_size=0, superblock_size=0, strategy="auto", ctx=None):
        c = _ctx(ctx)
        L = _lib.lib()
        opts = _lib.init_options("spt_hicoo_options_init_size", _lib.HicooOptions)
        opts.block_size = int(block_size)
        opts.superblock_size = int(superblock_size)
        opts.strategy = _choice(_HICOO_STRATEGIES, strategy, "HiCOO strategy")
        h = ctypes.c_void_p()
        _lib.check(L.spt_hicoo_from_coo(c._h, tensor._h, ctypes.byref(opts), ctypes.byref(h)), "spt_hicoo_from_coo",
                   c._h)
        self._h = h
        self._free = L.spt_hicoo_free
        self.shape = tensor.shape
        self.dtype = tensor.dtype
        self.nnz = tensor.nnz
        self.order = tensor.order

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            self._free(h)
            self._h = None

    def __repr__(self):
        return f"<sptensor.HiCOO shape={self.shape} nnz={self.nnz} dtype={self.dtype}>"

    def to_coo(self, ctx=None):
        """A new COO :class:`Tensor` with the same nonzeros."""
        c = _ctx(ctx)
        h = ctypes.c_void_p()
        _lib.check(_lib.lib().spt_hicoo_to_coo(c._h, self._h, ctypes.byref(h)), "spt_hicoo_to_coo", c._h)
        return Tensor(h)

    def stats(self, ctx=None):
        """Format statistics and the reasons for B, L and the strategy (a dict)."""
        c = _ctx(ctx)
        s = _lib.HicooStatistics()
        s.struct_size = ctypes.sizeof(s)
        buf = ctypes.create_string_buffer(4096)
        s.reason = ctypes.cast(buf, ctypes.c_char_p)
        s.reason_capacity = len(buf)
        _lib.check(_lib.lib().spt_hicoo_stats(c._h, self._h, ctypes.byref(s)), "spt_hicoo_stats", c._h)
        out = {name: getattr(s, name) for name, _ in _lib.HicooStatistics._fields_
               if name not in ("struct_size", "reason", "reason_capacity", "reason_length")}
        out["reason"] = buf.value.decode(errors="replace")
        return out


class CSF:
    """Compressed sparse fibers (SPLATT-style trees): an spt_csf handle built
    from a :class:`Tensor`. policy: "auto", "onemode", "twomode", "allmode"."""

    def __init__(self, tensor, policy="auto", ctx=None):
        c = _ctx(ctx)
        L = _lib.lib()
        h = ctypes.c_void_p()
        _lib.check(L.spt_csf_create(c._h, tensor._h, _choice(_CSF_POLICIES, policy, "CSF policy"), ctypes.byref(h)),
                   "spt_csf_create", c._h)
        self._h = h
        self._free = L.spt_csf_free
        self.shape = tensor.shape
        self.dtype = tensor.dtype
        self.nnz = tensor.nnz
        self.order = tensor.order

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            self._free(h)
            self._h = None

    def __repr__(self):
        return f"<sptensor.CSF shape={self.shape} nnz={self.nnz} dtype={self.dtype}>"

    def info(self):
        """Policy, number of trees, bytes and the tree each mode's MTTKRP uses (a dict)."""
        s = _lib.CsfSummary()
        s.struct_size = ctypes.sizeof(s)
        _lib.check(_lib.lib().spt_csf_info(self._h, ctypes.byref(s)), "spt_csf_info")
        n = min(self.order, _lib.CSF_SUMMARY_MAX_ORDER)
        return {
            "policy": _CSF_POLICY_NAMES.get(s.policy, s.policy),
            "trees": s.trees,
            "bytes": s.bytes,
            "nnz": s.nnz,
            "mode_order": [list(s.mode_order[t][:n]) for t in range(min(s.trees, _lib.CSF_SUMMARY_MAX_ORDER))],
            "tree_for_mode": list(s.tree_for_mode[:n]),
        }


# ---------------------------------------------------------------------------
# Kernels and decompositions
# ---------------------------------------------------------------------------
def mttkrp(tensor, factors, mode, out=None, ctx=None):
    """Matricized tensor times Khatri-Rao product in `mode` (0-based):
    out(i, r) = sum over nonzeros with i_mode = i of x * prod_{m != mode} U_m(i_m, r).

    tensor: Tensor, HiCOO or CSF. factors: `order` matrices U_m (shape[m] x R;
    factors[mode] is not read and may be None), converted to the tensor's
    dtype (C- or Fortran-ordered arrays are passed without copying).
    out: optional C-contiguous (shape[mode], R) array of the tensor's dtype,
    overwritten. Returns the result."""
    c = _ctx(ctx)
    L = _lib.lib()
    order = tensor.order
    if len(factors) != order:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", f"{len(factors)} factors for an order-{order} tensor")
    if not 0 <= mode < order:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", f"mode {mode} out of range for order {order}")
    ranks = {np.shape(f)[1] for m, f in enumerate(factors) if m != mode and f is not None and np.ndim(f) == 2}
    if len(ranks) != 1:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", "the factor matrices must share one column count")
    rank = ranks.pop()
    if out is None:
        out = np.empty((tensor.shape[mode], rank), dtype=tensor.dtype)
    elif not (out.flags.c_contiguous and out.dtype == tensor.dtype and out.shape == (tensor.shape[mode], rank)):
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                   f"out must be a C-contiguous {tensor.dtype} array of shape {(tensor.shape[mode], rank)}")
    fn = {Tensor: L.spt_mttkrp, HiCOO: L.spt_mttkrp_hicoo, CSF: L.spt_mttkrp_csf}.get(type(tensor))
    if fn is None:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", "tensor must be a Tensor, HiCOO or CSF")
    with _Matrices() as mats:
        ptrs = (ctypes.c_void_p * order)()
        for m, f in enumerate(factors):
            if m != mode and f is not None:
                ptrs[m] = mats.wrap(c, f, tensor.dtype).value
        out_h = mats.wrap(c, out, tensor.dtype)
        _lib.check(fn(c._h, tensor._h, ptrs, mode, out_h), fn.__name__, c._h)
    return out


CPResult = namedtuple("CPResult", "weights factors fit iterations converged fit_history seconds")
CPResult.__doc__ = """Result of :func:`cp_als`: weights (lambda, shape (R,)), factors (list of
shape[m] x R arrays), final fit, iterations done, converged flag, fit per
iteration and seconds per iteration. The model is sum_r weights[r] *
outer(factors[0][:, r], ..., factors[N-1][:, r])."""

def _cp_to_pyttb(self):
    """The model as a pyttb.ktensor (needs pyttb)."""
    import pyttb
    return pyttb.ktensor([np.asarray(f, dtype=np.float64) for f in self.factors],
                         np.asarray(self.weights, dtype=np.float64))


CPResult.to_pyttb = _cp_to_pyttb

TuckerResult = namedtuple("TuckerResult", "core factors fit iterations fit_history seconds")
TuckerResult.__doc__ = """Result of :func:`tucker`: core (dense array of shape ranks), factors
(list of shape[m] x ranks[m] arrays with orthonormal columns), final fit,
iterations, fit and seconds per iteration."""


def cp_als(tensor, rank, max_iters=50, tol=1e-4, init="random", seed=0, format="auto", csf_policy="auto",
           memo_budget_bytes=0, ctx=None):
    """CP decomposition by alternating least squares (pyttb cp_als numerics).

    tensor: Tensor or CSF. init: "random" (uniform [0,1), from `seed`; 0 =
    the context's seed) or a list of `order` initial factor matrices
    (shape[m] x rank). format: "auto", "coo", "csf", "hicoo" (storage the
    MTTKRPs run on; Tensor input only); csf_policy: "auto", "onemode",
    "twomode", "allmode", "memoized". Returns a :class:`CPResult`; not
    converging within max_iters is not an error (``converged`` is False)."""
    c = _ctx(ctx)
    L = _lib.lib()
    opts = _lib.init_options("spt_cpd_options_init_size", _lib.CpdOptions)
    opts.rank = int(rank)
    opts.max_iters = int(max_iters)
    opts.tol = float(tol)
    opts.seed = int(seed)
    opts.format = _choice(_FORMATS, format, "format")
    opts.csf_policy = _choice(_CSF_POLICIES, csf_policy, "CSF policy")
    opts.memo_budget_bytes = int(memo_budget_bytes)
    k = ctypes.c_void_p()
    with _Matrices() as mats:
        if isinstance(init, str):
            if init.lower() != "random":
                raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                           f"init must be 'random' or a list of factor matrices, got {init!r}")
            opts.init = 0
        else:
            init = list(init)
            if len(init) != tensor.order:
                raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                           f"{len(init)} initial factors for an order-{tensor.order} tensor")
            ptrs = (ctypes.c_void_p * tensor.order)(*[mats.wrap(c, f, tensor.dtype).value for f in init])
            opts.init = 1
            opts.init_factors = ctypes.cast(ptrs, _lib.pvp)
        if isinstance(tensor, CSF):
            fn, name = L.spt_cpd_als_csf, "spt_cpd_als_csf"
        elif isinstance(tensor, Tensor):
            fn, name = L.spt_cpd_als, "spt_cpd_als"
        else:
            raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", "cp_als takes a Tensor or a CSF")
        _lib.check(fn(c._h, tensor._h, ctypes.byref(opts), ctypes.byref(k)), name, c._h)
    try:
        fit, iters, conv = ctypes.c_double(), ctypes.c_int(), ctypes.c_int()
        _lib.check(L.spt_ktensor_result(k, ctypes.byref(fit), ctypes.byref(iters), ctypes.byref(conv)),
                   "spt_ktensor_result")
        lam = ctypes.c_void_p()
        _lib.check(L.spt_ktensor_lambda(k, ctypes.byref(lam)), "spt_ktensor_lambda")
        ctype = ctypes.c_double if tensor.dtype == np.float64 else ctypes.c_float
        weights = np.ctypeslib.as_array(ctypes.cast(lam, ctypes.POINTER(ctype)), (int(rank),)).copy()
        factors = []
        for m in range(tensor.order):
            f = ctypes.c_void_p()
            _lib.check(L.spt_ktensor_factor(k, m, ctypes.byref(f)), "spt_ktensor_factor")
            factors.append(_copy_matrix(f, tensor.dtype))
        fits, seconds = _history(L.spt_ktensor_history, k)
        return CPResult(weights, factors, fit.value, iters.value, bool(conv.value), fits, seconds)
    finally:
        L.spt_ktensor_free(k)


def tucker(tensor, ranks, max_iters=50, tol=1e-4, init="hosvd", seed=0, ctx=None):
    """Tucker decomposition by HOOI (pyttb tucker_als numerics).

    ranks: one rank per mode (or an int for all modes). init: "hosvd"
    (pyttb 'nvecs'), "random" or a list of `order` initial factors
    (shape[m] x ranks[m]; factors[0] is not read). Returns a
    :class:`TuckerResult` whose core has shape `ranks`."""
    c = _ctx(ctx)
    L = _lib.lib()
    order = tensor.order
    if np.ndim(ranks) == 0:
        ranks = [int(ranks)] * order
    ranks = [int(r) for r in ranks]
    rank_array = (ctypes.c_uint32 * len(ranks))(*ranks)
    opts = _lib.init_options("spt_tucker_options_init_size", _lib.TuckerOptions)
    opts.ranks = rank_array
    opts.ranks_count = len(ranks)
    opts.max_iters = int(max_iters)
    opts.tol = float(tol)
    opts.seed = int(seed)
    t = ctypes.c_void_p()
    with _Matrices() as mats:
        if isinstance(init, str):
            opts.init = {"hosvd": 0, "nvecs": 0, "random": 1}.get(init.lower(), -1)
            if opts.init < 0:
                raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                           f"init must be 'hosvd', 'random' or a list of factors, got {init!r}")
        else:
            init = list(init)
            if len(init) != order:
                raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                           f"{len(init)} initial factors for an order-{order} tensor")
            ptrs = (ctypes.c_void_p * order)(*[None if f is None else mats.wrap(c, f, tensor.dtype).value
                                              for f in init])
            opts.init = 2
            opts.init_factors = ctypes.cast(ptrs, _lib.pvp)
        _lib.check(L.spt_tucker_hooi(c._h, tensor._h, ctypes.byref(opts), ctypes.byref(t)), "spt_tucker_hooi",
                   c._h)
    try:
        fit, iters = ctypes.c_double(), ctypes.c_int()
        _lib.check(L.spt_ttensor_info(t, None, None, ctypes.byref(fit), ctypes.byref(iters)), "spt_ttensor_info")
        core_dims = (ctypes.c_uint32 * order)()
        _lib.check(L.spt_ttensor_core_dims(t, core_dims, None), "spt_ttensor_core_dims")
        cdims = tuple(int(d) for d in core_dims)
        p = ctypes.c_void_p()
        _lib.check(L.spt_ttensor_core(t, ctypes.byref(p)), "spt_ttensor_core")
        ctype = ctypes.c_double if tensor.dtype == np.float64 else ctypes.c_float
        flat = np.ctypeslib.as_array(ctypes.cast(p, ctypes.POINTER(ctype)), (int(np.prod(cdims)),))
        core = flat.reshape(cdims, order="F").copy(order="C")  # the library stores the first index fastest
        factors = []
        for m in range(order):
            f = ctypes.c_void_p()
            _lib.check(L.spt_ttensor_factor(t, m, ctypes.byref(f)), "spt_ttensor_factor")
            factors.append(_copy_matrix(f, tensor.dtype))
        fits, seconds = _history(L.spt_ttensor_history, t)
        return TuckerResult(core, factors, fit.value, iters.value, fits, seconds)
    finally:
        L.spt_ttensor_free(t)


def suggest_format(tensor, rank, ctx=None):
    """Which storage format a rank-`rank` CP-ALS on `tensor` should use here, and why (a dict)."""
    c = _ctx(ctx)
    a = _lib.FormatAdvice()
    a.struct_size = ctypes.sizeof(a)
    buf = ctypes.create_string_buffer(4096)
    a.reason = ctypes.cast(buf, ctypes.c_char_p)
    a.reason_capacity = len(buf)
    _lib.check(_lib.lib().spt_suggest_format(c._h, tensor._h, int(rank), ctypes.byref(a)), "spt_suggest_format", c._h)
    return {"format": _FORMAT_NAMES.get(a.format, a.format), "csf_policy": _CSF_POLICY_NAMES.get(a.csf_policy),
            "block_ratio": a.block_ratio, "slice_per_block": a.slice_per_block,
            "reason": buf.value.decode(errors="replace")}
