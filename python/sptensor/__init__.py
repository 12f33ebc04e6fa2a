"""sptensor: Python interface to libsptensor (sparse tensors, CP and Tucker).

A thin ctypes layer over the library's stable C ABI (libsptensor.so.1);
no Python extension is compiled. Results come back as numpy arrays.

    import numpy as np, sptensor
    X = sptensor.read("tensor.tns.xz")                # or sptensor.coo(subs, vals, shape)
    cp = sptensor.cp_als(X, rank=8, seed=1)
    print(cp.fit, cp.weights, [U.shape for U in cp.factors])

Errors raise :class:`SptensorError` (subclasses also derive from the
matching Python exception: ValueError, OSError, MemoryError, ...), carrying
``status``, ``status_name`` and the library's ``message``.
"""
from __future__ import annotations

import ctypes
import numbers
import os
import signal
import threading
import warnings
from collections import namedtuple
from typing import Callable, Optional, Sequence, Union

import numpy as np
import numpy.typing  # the ArrayLike of the type hints

from . import _lib, _progress
from ._progress import ProgressUnavailableWarning
from ._lib import (DeviceError, FileIOError, FileMissingError, InvalidArgumentError, LibraryNotFoundError,
                   NumericalError, OutOfMemoryError, OverflowSizeError, ParseError, ReadOnlyError, SptensorError,
                   UnsupportedError, library_path)

__version__ = "1.0.0"

__all__ = [
    "Context", "Tensor", "HiCOO", "CSF", "CPResult", "TuckerResult",
    "coo", "from_pyttb", "read", "write", "mttkrp", "cp_als", "tucker", "suggest_format",
    "default_context", "set_backend", "get_backend", "backend_info", "set_threads",
    "library_version", "library_path", "set_log", "khatri_rao", "kronecker", "ktensor_norm", "innerprod",
    "loglikelihood",
    "SptensorError", "InvalidArgumentError", "FileIOError", "FileMissingError", "ParseError", "OutOfMemoryError",
    "UnsupportedError", "DeviceError", "NumericalError", "OverflowSizeError", "ReadOnlyError",
    "LibraryNotFoundError", "ProgressUnavailableWarning",
]

_DTYPES = {np.dtype(np.float32): _lib.SPT_FLOAT32, np.dtype(np.float64): _lib.SPT_FLOAT64}
_NP_DTYPES = {_lib.SPT_FLOAT32: np.dtype(np.float32), _lib.SPT_FLOAT64: np.dtype(np.float64)}
_BACKENDS = {"auto": 0, "cpu": 1, "cuda": 2, "reference": 3}
_BACKEND_NAMES = {v: k for k, v in _BACKENDS.items()}
_DEVICE_STREAMING = {"auto": 0, "always": 1}
_CPU_ISA = {"auto": 0, "baseline": 1, "x86-64-v3": 2}
_CPU_ISA_NAMES = {v: k for k, v in _CPU_ISA.items()}
_FORMATS = {"auto": 0, "coo": 1, "csf": 2, "hicoo": 3, "fcoo": 4, "hbcsf": 5, "hls": 6}
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


def _named_setting(setting, table, what, doc):
    """A Context property for an enumerated setting read and written by
    spt_context_get_<setting> / spt_context_set_<setting>, named by `table`."""
    names = {v: k for k, v in table.items()}
    get_name, set_name = f"spt_context_get_{setting}", f"spt_context_set_{setting}"

    def fget(self):
        v = ctypes.c_int()
        _lib.check(getattr(_lib.lib(), get_name)(self._h, ctypes.byref(v)), get_name, self._h)
        return names.get(v.value, str(v.value))

    def fset(self, name):
        _lib.check(getattr(_lib.lib(), set_name)(self._h, _choice(table, name, what)), set_name, self._h)

    return property(fget, fset, doc=doc)


_INT32_MAX = 2**31 - 1
_UINT32_MAX = 2**32 - 1


def _integer(value, name, minimum, maximum):
    """value as an int, checked before it reaches a C field of a fixed width:
    TypeError unless it is an integer (bool and float are refused, so 2.5 is
    not silently truncated), InvalidArgumentError (a ValueError) outside
    [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    v = int(value)
    if not minimum <= v <= maximum:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                   f"{name} must be between {minimum} and {maximum}, got {v}")
    return v


def _rank(value, name="rank"):
    return _integer(value, name, 1, _UINT32_MAX)


def _iterations(value, name):
    # The library checks the value's meaning; here only its type and width.
    return _integer(value, name, -_INT32_MAX - 1, _INT32_MAX)


class _RunControl:
    """The per-iteration callback of one decomposition run from Python.

    Prints the iteration every `printitn` iterations (pyttb's printitn; 0 =
    silent) and turns Ctrl-C into a stop at the end of the current
    iteration: while the run is inside the library, SIGINT (in the main
    thread) only sets a flag the callback returns to the library, which
    stops and keeps the model so far; `finish` then raises
    KeyboardInterrupt carrying that model as `.result`. Use as a context
    manager around the C call."""

    def __init__(self, fn_type, printitn, labels, bar=None):
        self.printitn = _integer(printitn, "printitn", 0, _INT32_MAX)
        self.bar = bar  # a _progress.IterationBar (progress=True) or None
        self.labels = labels
        self.interrupted = False
        self.iterations = 0
        self._installed = False
        self._previous = None
        self.c_function = fn_type(self._each_iteration)

    def _each_iteration(self, _data, iteration, value, change, _seconds):
        try:
            self.iterations = iteration
            if self.printitn and iteration % self.printitn == 0:
                print(f" Iter {iteration:2d}: {self.labels[0]} = {value:e} {self.labels[1]} = {change:7.1e}",
                      flush=True)
            if self.bar is not None:
                self.bar.step(iteration, value)
            return 1 if self.interrupted else 0
        except BaseException:  # nothing may unwind into the library: stop instead
            self.interrupted = True
            return 1

    def _on_sigint(self, _signum, _frame):
        self.interrupted = True

    def __enter__(self):
        # Only the main thread may install handlers; one installed by non-Python
        # code (getsignal: None) is left alone.
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is not None:
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
            self._installed = True
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False
        return False

    def finish(self, what, result):
        """result, or KeyboardInterrupt carrying it when Ctrl-C stopped the run."""
        if self.interrupted:
            e = KeyboardInterrupt(f"{what} stopped by Ctrl-C after {self.iterations} iterations; "
                                  "the model so far is this exception's .result")
            e.result = result
            raise e
        return result


def _dtype_code(dtype):
    dt = np.dtype(dtype)
    if dt not in _DTYPES:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                   f"dtype {dt} is not supported; use float32 or float64")
    return _DTYPES[dt]


def library_version():
    """Version string of the loaded libsptensor, e.g. "1.0.0"."""
    return _lib.lib().spt_version().decode()


# ---------------------------------------------------------------------------
# Context
# ---------------------------------------------------------------------------
class _Owned:
    """A library handle in self._h, released with self._free when the object goes."""

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            self._free(h)
            self._h = None


class Context(_Owned):
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


    backend = _named_setting("backend", _BACKENDS, "backend",
                             """The backend setting: "auto", "cpu", "cuda" or "reference" (settable).""")

    @property
    def threads(self):
        """Threads the kernels use (settable; 0 restores the default)."""
        t = ctypes.c_int()
        _lib.check(_lib.lib().spt_context_get_threads(self._h, ctypes.byref(t)), "spt_context_get_threads", self._h)
        return t.value

    @threads.setter
    def threads(self, n):
        _lib.check(_lib.lib().spt_context_set_threads(self._h, int(n)), "spt_context_set_threads", self._h)

    device_streaming = _named_setting(
        "device_streaming", _DEVICE_STREAMING, "device streaming",
        """When GPU runs stream a COO tensor's nonzeros from host memory
        (settable): "auto" (default: only when the tensor's device copy does
        not fit) or "always" (even when it fits; to measure or test the
        streamed path). Raises InvalidArgumentError for another value.""")

    cpu_isa = _named_setting(
        "cpu_isa", _CPU_ISA, "CPU ISA",
        """The build of the CPU kernels CPU runs use (settable): "auto"
        (default: "x86-64-v3" where the CPU has AVX2, FMA and BMI2, else
        "baseline"), "baseline" or "x86-64-v3". The copies agree up to
        rounding. Setting "x86-64-v3" where the CPU or the library lacks it
        raises UnsupportedError; another value, InvalidArgumentError.""")

    @property
    def seed(self):
        raise AttributeError("the context seed is write-only")

    @seed.setter
    def seed(self, value):
        _lib.check(_lib.lib().spt_context_set_seed(self._h, int(value)), "spt_context_set_seed", self._h)

    def set_log(self, callback: Union[Callable[[int, str], None], "logging.Logger", None],
                verbosity: int = 1) -> None:
        """Receive the library's log messages: which format and kernels a run
        chose and why (verbosity 1), per-iteration details (2).

        callback: a callable ``callback(level, message)`` (level 1 = note,
        2 = detail, 3 = debug; message a str), a ``logging.Logger`` (notes
        as INFO, details and debug as DEBUG), or None to stop logging.
        Messages arrive on the thread that made the library call, during the
        call. An exception raised by the callback cannot stop the library
        call: it becomes a RuntimeWarning and the call goes on.
        Raises TypeError (callback not callable, verbosity not an int) or
        ValueError (verbosity < 0)."""
        import logging
        verbosity = _integer(verbosity, "verbosity", 0, _INT32_MAX)
        if callback is None:
            fn = None
        elif isinstance(callback, logging.Logger):
            logger = callback

            def fn(level, message):
                logger.log(logging.INFO if level <= 1 else logging.DEBUG, message)
        elif callable(callback):
            fn = callback
        else:
            raise TypeError(f"callback must be callable, a logging.Logger or None, got {type(callback).__name__}")
        L = _lib.lib()
        if fn is None:
            _lib.check(L.spt_context_set_log(self._h, _lib.spt_log_fn(), None), "spt_context_set_log", self._h)
            _lib.check(L.spt_context_set_verbosity(self._h, 0), "spt_context_set_verbosity", self._h)
            self._log_function = None
            return

        def on_log(_user_data, level, message):
            try:
                fn(int(level), message.decode(errors="replace") if message else "")
            except BaseException as e:  # nothing may unwind into the library
                warnings.warn(f"the sptensor log callback raised {e!r}; the call goes on", RuntimeWarning)

        c_function = _lib.spt_log_fn(on_log)
        _lib.check(L.spt_context_set_log(self._h, c_function, None), "spt_context_set_log", self._h)
        _lib.check(L.spt_context_set_verbosity(self._h, verbosity), "spt_context_set_verbosity", self._h)
        self._log_function = c_function  # the library holds only its address

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
            "cpu_isa": _CPU_ISA_NAMES.get(info.cpu_isa, info.cpu_isa),
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


def set_log(callback: Union[Callable[[int, str], None], "logging.Logger", None], verbosity: int = 1,
            ctx: Optional[Context] = None) -> None:
    """The library's log messages to `callback` (see :meth:`Context.set_log`;
    for the calling thread's default context)."""
    _ctx(ctx).set_log(callback, verbosity)


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

    def set_init(self, ctx, opts, init, order, dtype):
        """opts.init / opts.init_factors from init: "random" or a list of `order` factor matrices."""
        if isinstance(init, str):
            if init.lower() != "random":
                raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                           f"init must be 'random' or a list of factor matrices, got {init!r}")
            opts.init = 0
            return
        if _is_pyttb(init, "ktensor"):
            init = init.factor_matrices  # as pyttb's cp_als: the factors, not the weights
        init = list(init)
        if len(init) != order:
            raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                       f"{len(init)} initial factors for an order-{order} tensor")
        ptrs = (ctypes.c_void_p * order)(*[self.wrap(ctx, f, dtype).value for f in init])
        self.arrays.append(ptrs)  # the pointer array lives as long as the wrapped matrices
        opts.init = 1
        opts.init_factors = ctypes.cast(ptrs, _lib.pvp)

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


def _index_columns(getter, h, modes, count):
    """(count, len(modes)) uint32 copy of the borrowed 0-based index arrays that
    the C function `getter`(h, mode, &p) gives for each of `modes`."""
    fn = getattr(_lib.lib(), getter)
    out = np.empty((count, len(modes)), dtype=np.uint32)
    for j, m in enumerate(modes):
        p = ctypes.c_void_p()
        _lib.check(fn(h, m, ctypes.byref(p)), getter)
        if count:
            out[:, j] = np.ctypeslib.as_array(ctypes.cast(p, _lib.pu32), (count,))
    return out


def _copy_matrix(h, dtype):
    """A C-ordered numpy copy of a (borrowed) spt_matrix."""
    L = _lib.lib()
    s = _lib.summary("spt_matrix_info", _lib.MatrixSummary, h)
    out = np.empty((s.rows, s.cols), dtype=dtype)
    _lib.check(L.spt_matrix_copy_out(h, _lib.SPT_ROW_MAJOR, out.ctypes.data, max(s.cols, 1)),
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
class Tensor(_Owned):
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
        s = _lib.summary("spt_coo_info", _lib.CooSummary, self._h)
        dims = (ctypes.c_uint32 * s.order)()
        _lib.check(L.spt_coo_dims(self._h, dims), "spt_coo_dims")
        self.shape = tuple(int(d) for d in dims)
        self.nnz = int(s.nnz)
        self.order = int(s.order)
        self.dtype = _NP_DTYPES[s.dtype]


    def __repr__(self):
        return f"<sptensor.Tensor shape={self.shape} nnz={self.nnz} dtype={self.dtype}>"

    @property
    def is_view(self):
        """True when the tensor views caller arrays (coo(..., copy=False))."""
        return self._keepalive is not None

    @property
    def subs(self):
        """0-based coordinates, an (nnz, order) uint32 array (a copy)."""
        return _index_columns("spt_coo_indices", self._h, range(self.order), self.nnz)

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
        """Frobenius norm (accumulated in double; repeated coordinates summed first)."""
        c = _ctx(ctx)
        r = ctypes.c_double()
        _lib.check(_lib.lib().spt_coo_norm(c._h, self._h, ctypes.byref(r)), "spt_coo_norm", c._h)
        return r.value

    def count_distinct(self, ctx=None):
        """Number of distinct coordinates (nnz minus the entries that repeat one; every
        function sums repeats, as pyttb's sptensor does)."""
        c = _ctx(ctx)
        r = ctypes.c_uint64()
        _lib.check(_lib.lib().spt_coo_count_distinct(c._h, self._h, ctypes.byref(r)),
                   "spt_coo_count_distinct", c._h)
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

    def append(self, subs: np.typing.ArrayLike, vals: np.typing.ArrayLike, index_base: int = 0,
               grow: bool = False, ctx: Optional[Context] = None) -> Tensor:
        """Append nonzeros in place: subs (n, order) integer coordinates
        (``index_base`` 0 or 1), vals n values (converted to the tensor's
        dtype). Coordinates must lie inside ``shape`` unless grow=True, which
        enlarges the shape to fit them. Repeated coordinates are kept (every
        function sums them). On error the tensor is unchanged. Returns self.
        Raises TypeError (subs not integers), ValueError (shapes disagree,
        coordinates out of range), ReadOnlyError on a view."""
        c = _ctx(ctx)
        subs = np.asarray(subs)
        if subs.ndim == 1 and self.order == 1:
            subs = subs.reshape(-1, 1)
        if subs.size and not np.issubdtype(subs.dtype, np.integer):
            raise TypeError(f"subs must hold integers, got dtype {subs.dtype}")
        if subs.ndim != 2 or subs.shape[1] != self.order:
            raise ValueError(f"subs must have shape (n, {self.order}), got {subs.shape}")
        vals = np.asarray(vals)
        if vals.size and vals.dtype.kind not in "biuf":
            raise TypeError(f"vals must hold real numbers, got dtype {vals.dtype}")
        vals = vals.reshape(-1)
        n = subs.shape[0]
        if vals.shape[0] != n:
            raise ValueError(f"vals has {vals.shape[0]} values for {n} coordinates in subs")
        if index_base not in (0, 1):
            raise ValueError(f"index_base must be 0 or 1, got {index_base!r}")
        if n and (subs.min() < index_base or subs.max() >= 2**32 + index_base):
            raise ValueError(f"subs must lie in [{index_base}, 2^32) for index_base {index_base}")
        indices = np.ascontiguousarray(subs.T, dtype=np.uint32)
        values = np.ascontiguousarray(vals, dtype=self.dtype)
        flags = _lib.SPT_COO_GROW_DIMS if grow else 0
        _lib.check(_lib.lib().spt_coo_append(c._h, self._h, n, indices.ctypes.data, max(n, 1), int(index_base),
                                             values.ctypes.data, flags), "spt_coo_append", c._h)
        self.__init__(self._h, self._keepalive)
        return self

    def sort(self, mode_order: Optional[Sequence[int]] = None, ctx: Optional[Context] = None) -> Tensor:
        """Sort the nonzeros in place, lexicographically comparing the modes in
        `mode_order` (a permutation of 0..order-1; None = 0, 1, ..., order-1).
        Stable. Returns self. Raises ReadOnlyError on a view
        (coo(..., copy=False)), ValueError when mode_order is not a permutation."""
        c = _ctx(ctx)
        modes = None
        if mode_order is not None:
            order_list = _index_list(mode_order, "mode_order")
            if sorted(order_list) != list(range(self.order)):
                raise ValueError(f"mode_order must be a permutation of 0..{self.order - 1}, got {order_list}")
            modes = (ctypes.c_uint32 * self.order)(*order_list)
        _lib.check(_lib.lib().spt_coo_sort(c._h, self._h, modes), "spt_coo_sort", c._h)
        return self

    def sort_morton(self, ctx: Optional[Context] = None) -> Tensor:
        """Sort the nonzeros in place in Z-Morton order (the bits of all modes
        interleaved, mode 0 highest at each level), the order that keeps
        nearby coordinates together. Returns self. ReadOnlyError on a view."""
        c = _ctx(ctx)
        _lib.check(_lib.lib().spt_coo_sort_morton(c._h, self._h), "spt_coo_sort_morton", c._h)
        return self

    @property
    def file_dtype(self) -> Optional[np.dtype]:
        """The value type stored in the binary file (.sptb, SPLATT .bin) this
        tensor was read from (``read`` converts values to its `dtype`
        argument, so this may differ from ``dtype``), or None when it was not
        read from a binary file."""
        d = ctypes.c_int()
        _lib.check(_lib.lib().spt_coo_file_dtype(self._h, ctypes.byref(d)), "spt_coo_file_dtype")
        return _NP_DTYPES.get(d.value)

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
    """A :class:`Tensor` copied from a pyttb.sptensor (0-based subs, vals,
    shape) or from a dense pyttb.tensor (its nonzero entries)."""
    if _is_pyttb(tensor, "tensor"):
        data = np.asarray(tensor.data)
        subs = np.argwhere(data != 0)
        return coo(subs, data[tuple(subs.T)] if subs.size else np.zeros(0, dtype=data.dtype),
                   shape=tuple(tensor.shape), dtype=dtype, copy=True, ctx=ctx)
    return coo(np.asarray(tensor.subs), np.asarray(tensor.vals).reshape(-1), shape=tuple(tensor.shape), dtype=dtype,
               copy=True, ctx=ctx)


def _is_pyttb(obj, kind):
    """Whether obj is a pyttb `kind` (sptensor, ktensor, ...), without importing pyttb."""
    return type(obj).__name__ == kind and type(obj).__module__.split(".")[0] == "pyttb"


def _operand(tensor, ctx):
    """The tensor a decomposition runs on: a pyttb.sptensor or dense
    pyttb.tensor is copied into a :class:`Tensor` (float64, as pyttb holds
    it); anything else is used as given."""
    if _is_pyttb(tensor, "sptensor") or _is_pyttb(tensor, "tensor"):
        return from_pyttb(tensor, ctx=ctx)
    return tensor


def read(path, dtype=np.float64, index_base=1, format="auto", shape=None, duplicates="keep",
         reject_nonfinite=False, copy_binary=False, map_binary=False, progress=False, ctx=None):
    """Read a tensor file: FROSTT .tns, extended (ParTI!) .tns, SPLATT .bin or
    .sptb, each optionally gzip/xz/zstd compressed (detected from content).

    index_base applies to text files (1 = FROSTT). format: "auto", "tns",
    "tns_extended", "splatt_bin", "sptb". shape: expected dims (None = infer).
    duplicates: "keep", "sum" or "reject". Files are read by copy;
    map_binary=True loads an uncompressed .sptb zero-copy from a mapping of the
    file (the process dies of SIGBUS if the file is truncated meanwhile).
    progress=True shows a tqdm bar while the file is read (tqdm is optional:
    without it, a ProgressUnavailableWarning once and no bar)."""
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
    opts.map_binary = 1 if map_binary else 0
    h = ctypes.c_void_p()
    reading = _progress.ContextProgress(c._h, progress, "read " + os.path.basename(os.fsdecode(path)))
    try:
        with reading:
            _lib.check(_lib.lib().spt_read(c._h, os.fsencode(path), ctypes.byref(opts), ctypes.byref(h)),
                       "spt_read", c._h)
    except FileIOError as e:
        if os.path.lexists(path):
            raise
        raise FileMissingError(e.status, e.status_name, e.message, e.function) from None
    tensor = Tensor(h)
    reading.raise_interrupt()
    return tensor


def write(tensor: TensorLike, path: Union[str, os.PathLike], format: str = "auto", compression: str = "auto",
          index_base: int = 1, precision: int = 0, progress: bool = False, ctx: Optional[Context] = None) -> None:
    """Write a tensor. format "auto" picks from the extension (.bin SPLATT,
    .sptb, else .tns); compression "auto" from a .gz/.xz/.zst suffix.
    precision: significant digits for text (0 = shortest exact round trip).
    progress=True shows a tqdm bar while the file is written (as :func:`read`)."""
    c = _ctx(ctx)
    tensor = _operand(tensor, ctx)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"tensor must be a sptensor.Tensor or a pyttb.sptensor, got {type(tensor).__name__}")
    opts = _lib.init_options("spt_write_options_init_size", _lib.WriteOptions)
    opts.format = _choice(_FILE_FORMATS, format, "file format")
    opts.compression = _choice(_COMPRESSIONS, compression, "compression")
    opts.index_base = int(index_base)
    opts.precision = int(precision)
    writing = _progress.ContextProgress(c._h, progress, "write " + os.path.basename(os.fsdecode(path)))
    with writing:
        _lib.check(_lib.lib().spt_write(c._h, tensor._h, os.fsencode(path), ctypes.byref(opts)), "spt_write",
                   c._h)
    writing.raise_interrupt()


# ---------------------------------------------------------------------------
# Other formats
# ---------------------------------------------------------------------------
class HiCOO(_Owned):
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


    def __repr__(self):
        return f"<sptensor.HiCOO shape={self.shape} nnz={self.nnz} dtype={self.dtype}>"

    def info(self, ctx=None):
        """Block size B, superblock size L and bytes of the format (a dict)."""
        c = _ctx(ctx)
        s = _lib.HicooSummary()
        s.struct_size = ctypes.sizeof(s)
        _lib.check(_lib.lib().spt_hicoo_info(c._h, self._h, ctypes.byref(s)), "spt_hicoo_info", c._h)
        return {"nnz": s.nnz, "block_size": s.block_size, "superblock_size": s.superblock_size, "bytes": s.bytes}

    def to_coo(self, ctx=None):
        """A new COO :class:`Tensor` with the same nonzeros."""
        c = _ctx(ctx)
        h = ctypes.c_void_p()
        _lib.check(_lib.lib().spt_hicoo_to_coo(c._h, self._h, ctypes.byref(h)), "spt_hicoo_to_coo", c._h)
        return Tensor(h)

    def mode_stats(self, mode: int, ctx: Optional[Context] = None) -> dict:
        """How the MTTKRP of `mode` is scheduled (a dict): ``slabs``
        (independent superblock slabs), ``iterations`` (conflict-free
        groups), ``max_slab_nnz``, ``suggested_strategy`` (the rule's choice
        for the context's threads) and ``strategy`` (what :func:`mttkrp`
        will use), the strategies as "direct" or "privatized". Raises TypeError
        (mode not an int) or ValueError (mode out of range)."""
        mode = _integer(mode, "mode", 0, self.order - 1)
        c = _ctx(ctx)
        s = _lib.HicooModeStatistics()
        s.struct_size = ctypes.sizeof(s)
        _lib.check(_lib.lib().spt_hicoo_mode_stats(c._h, self._h, mode, ctypes.byref(s)), "spt_hicoo_mode_stats",
                   c._h)
        names = {v: k for k, v in _HICOO_STRATEGIES.items()}
        return {"slabs": s.slabs, "iterations": s.iterations, "max_slab_nnz": s.max_slab_nnz,
                "suggested_strategy": names.get(s.suggested_strategy, s.suggested_strategy),
                "strategy": names.get(s.strategy, s.strategy)}

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


class CSF(_Owned):
    """Compressed sparse fibers (SPLATT-style trees): an spt_csf handle built
    from a :class:`Tensor`. policy: "auto", "onemode", "twomode", "allmode"."""

    def __init__(self, tensor, policy="auto", ctx=None):
        c = _ctx(ctx)
        L = _lib.lib()
        opts = _lib.init_options("spt_csf_options_init_size", _lib.CsfOptions)
        opts.policy = _choice(_CSF_POLICIES, policy, "CSF policy")
        h = ctypes.c_void_p()
        _lib.check(L.spt_csf_from_coo(c._h, tensor._h, ctypes.byref(opts), ctypes.byref(h)), "spt_csf_from_coo", c._h)
        self._h = h
        self._free = L.spt_csf_free
        self.shape = tensor.shape
        self.dtype = tensor.dtype
        self.nnz = tensor.nnz
        self.order = tensor.order


    def __repr__(self):
        return f"<sptensor.CSF shape={self.shape} nnz={self.nnz} dtype={self.dtype}>"

    def info(self, ctx=None):
        """Policy, number of trees, bytes and the tree each mode's MTTKRP uses (a dict)."""
        c = _ctx(ctx)
        s = _lib.CsfSummary()
        s.struct_size = ctypes.sizeof(s)
        _lib.check(_lib.lib().spt_csf_info(c._h, self._h, ctypes.byref(s)), "spt_csf_info", c._h)
        n = min(self.order, _lib.CSF_SUMMARY_MAX_ORDER)
        return {
            "policy": _CSF_POLICY_NAMES.get(s.policy, s.policy),
            "trees": s.trees,
            "bytes": s.bytes,
            "nnz": s.nnz,
            "mode_order": [list(s.mode_order[t][:n]) for t in range(min(s.trees, _lib.CSF_SUMMARY_MAX_ORDER))],
            "tree_for_mode": list(s.tree_for_mode[:n]),
        }

    def to_coo(self, ctx=None):
        """A new COO :class:`Tensor` with the same nonzeros (in the first tree's mode order)."""
        c = _ctx(ctx)
        h = ctypes.c_void_p()
        _lib.check(_lib.lib().spt_csf_to_coo(c._h, self._h, ctypes.byref(h)), "spt_csf_to_coo", c._h)
        return Tensor(h)

    def fibers(self, tree: int = 0, ctx: Optional[Context] = None) -> list:
        """Number of nodes on each level of tree `tree` (a list of `order`
        counts, root level first; the leaf level has nnz nodes): how well
        the tree compresses the coordinates. Raises TypeError (tree not an
        int) or ValueError (tree out of range, see ``info()["trees"]``)."""
        trees = self.info(ctx)["trees"]
        tree = _integer(tree, "tree", 0, max(trees - 1, 0))
        count = ctypes.c_uint64()
        out = []
        for level in range(self.order):
            _lib.check(_lib.lib().spt_csf_fibers(self._h, tree, level, ctypes.byref(count)), "spt_csf_fibers")
            out.append(int(count.value))
        return out


# ---------------------------------------------------------------------------
# Kernels and decompositions
# ---------------------------------------------------------------------------
def mttkrp(tensor, factors, mode, out=None, ctx=None):
    """Matricized tensor times Khatri-Rao product in `mode` (0-based):
    out(i, r) = sum over nonzeros with i_mode = i of x * prod_{m != mode} U_m(i_m, r).

    tensor: Tensor, HiCOO, CSF, FCOO (built for "mttkrp" in `mode`), HBCSF
    (any mode: the root at full speed, another mode from the same tree with
    atomic rows) or HLS (rooted at `mode`).
    factors: `order` matrices U_m (shape[m] x R;
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
    fn = {Tensor: L.spt_mttkrp, HiCOO: L.spt_mttkrp_hicoo, CSF: L.spt_mttkrp_csf, FCOO: L.spt_mttkrp_fcoo,
          HBCSF: L.spt_mttkrp_hbcsf, HLS: L.spt_mttkrp_hls}.get(type(tensor))
    if fn is None:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                   "tensor must be a Tensor, HiCOO, CSF, FCOO, HBCSF or HLS")
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


def _tucker_to_pyttb(self):
    """The model as a pyttb.ttensor (needs pyttb): the core as a pyttb.tensor
    and the factor matrices, in float64."""
    import pyttb
    return pyttb.ttensor(pyttb.tensor(np.asarray(self.core, dtype=np.float64)),
                         [np.asarray(f, dtype=np.float64) for f in self.factors])


TuckerResult.to_pyttb = _tucker_to_pyttb


def cp_als(tensor, rank, max_iters=50, tol=1e-4, init="random", seed=0, format="auto", csf_policy="auto",
           memo_budget_bytes=0, printitn=0, progress=False, ctx=None):
    """CP decomposition by alternating least squares (pyttb cp_als numerics).

    tensor: Tensor, CSF or a pyttb.sptensor (copied). init: "random"
    (uniform [0,1), from `seed`; 0 = the context's seed), a list of `order`
    initial factor matrices (shape[m] x rank) or a pyttb.ktensor (its factor
    matrices, as pyttb's cp_als). format: "auto", "coo", "csf", "hicoo", "fcoo" (storage the
    MTTKRPs run on; Tensor input only); csf_policy: "auto", "onemode",
    "twomode", "allmode", "memoized". printitn: print the fit every printitn
    iterations (0 = never), as pyttb. progress=True: a tqdm bar of the
    iterations with the fit (tqdm optional, as :func:`read`). Returns a :class:`CPResult`; not
    converging within max_iters is not an error (``converged`` is False).
    Ctrl-C stops the run at the end of the current iteration and raises
    KeyboardInterrupt with the model so far as its ``.result``."""
    c = _ctx(ctx)
    tensor = _operand(tensor, ctx)
    L = _lib.lib()
    rank = _rank(rank)
    opts = _lib.init_options("spt_cpd_options_init_size", _lib.CpdOptions)
    opts.rank = rank
    opts.max_iters = _iterations(max_iters, "max_iters")
    opts.tol = float(tol)
    opts.seed = int(seed)
    opts.format = _choice(_FORMATS, format, "format")
    opts.csf_policy = _choice(_CSF_POLICIES, csf_policy, "CSF policy")
    opts.memo_budget_bytes = int(memo_budget_bytes)
    control = _RunControl(_lib.CALLBACK, printitn, ("f", "f-delta"),
                          _progress.IterationBar(progress, "cp_als", opts.max_iters, "fit"))
    opts.callback = control.c_function
    k = ctypes.c_void_p()
    with _Matrices() as mats, control:
        mats.set_init(c, opts, init, tensor.order, tensor.dtype)
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
        return control.finish("cp_als", CPResult(weights, factors, fit.value, iters.value, bool(conv.value), fits,
                                                 seconds))
    finally:
        L.spt_ktensor_free(k)


def tucker(tensor, ranks, max_iters=50, tol=1e-4, init="hosvd", seed=0, ttmc="auto", printitn=0, progress=False,
           ctx=None):
    """Tucker decomposition by HOOI (pyttb tucker_als numerics).

    tensor: Tensor or a pyttb.sptensor (copied). ranks: one rank per mode (or an int for all modes). init: "hosvd"
    (pyttb 'nvecs'), "random" or a list of `order` initial factors
    (shape[m] x ranks[m]; factors[0] is not read). ttmc: how each sweep
    forms Y_(n) ("auto", "one_shot", "chain" or "hls", the GPU only;
    spt_tucker_ttmc). printitn, progress and Ctrl-C: as :func:`cp_als`. Returns a
    :class:`TuckerResult` whose core has shape `ranks`."""
    c = _ctx(ctx)
    tensor = _operand(tensor, ctx)
    L = _lib.lib()
    order = tensor.order
    if np.ndim(ranks) == 0:
        ranks = [_rank(ranks, "ranks")] * order
    ranks = [_rank(r, f"ranks[{m}]") for m, r in enumerate(ranks)]
    rank_array = (ctypes.c_uint32 * len(ranks))(*ranks)
    opts = _lib.init_options("spt_tucker_options_init_size", _lib.TuckerOptions)
    opts.ranks = rank_array
    opts.ranks_count = len(ranks)
    opts.max_iters = _iterations(max_iters, "max_iters")
    opts.tol = float(tol)
    opts.seed = int(seed)
    opts.ttmc = {"auto": 0, "one_shot": 1, "chain": 2, "hls": 3}.get(str(ttmc).lower(), -1)
    if opts.ttmc < 0:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                   f"ttmc must be 'auto', 'one_shot', 'chain' or 'hls', got {ttmc!r}")
    control = _RunControl(_lib.CALLBACK, printitn, ("f", "f-delta"),
                          _progress.IterationBar(progress, "tucker", opts.max_iters, "fit"))
    opts.callback = control.c_function
    t = ctypes.c_void_p()
    with _Matrices() as mats, control:
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
        result = _lib.summary("spt_ttensor_info", _lib.TtensorSummary, t, c._h)
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
        return control.finish("tucker", TuckerResult(core, factors, result.fit, result.iterations, fits, seconds))
    finally:
        L.spt_ttensor_free(t)


def suggest_format(tensor, rank, ctx=None):
    """Which storage format a rank-`rank` CP-ALS on `tensor` should use here, and why (a dict)."""
    c = _ctx(ctx)
    tensor = _operand(tensor, ctx)
    a = _lib.FormatAdvice()
    a.struct_size = ctypes.sizeof(a)
    buf = ctypes.create_string_buffer(4096)
    a.reason = ctypes.cast(buf, ctypes.c_char_p)
    a.reason_capacity = len(buf)
    _lib.check(_lib.lib().spt_suggest_format(c._h, tensor._h, _rank(rank), ctypes.byref(a)), "spt_suggest_format", c._h)
    return {"format": _FORMAT_NAMES.get(a.format, a.format), "csf_policy": _CSF_POLICY_NAMES.get(a.csf_policy),
            "block_ratio": a.block_ratio, "slice_per_block": a.slice_per_block,
            "reason": buf.value.decode(errors="replace")}


# ---------------------------------------------------------------------------
# Helpers for raw arrays passed to the library
# ---------------------------------------------------------------------------
def _ctype(dtype):
    return ctypes.c_double if np.dtype(dtype) == np.float64 else ctypes.c_float


def _vector(v, n, dtype, what):
    """A C-contiguous copy-if-needed 1-D array of n values of dtype."""
    a = np.ascontiguousarray(np.asarray(v, dtype=dtype).reshape(-1))
    if a.shape[0] != n:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", f"{what} has {a.shape[0]} entries, expected {n}")
    return a


def _borrowed_array(p, n, dtype):
    """A numpy copy of n values of dtype at the borrowed pointer p."""
    if n == 0:
        return np.empty(0, dtype=dtype)
    return np.ctypeslib.as_array(ctypes.cast(p, ctypes.POINTER(_ctype(dtype))), (n,)).copy()


# ---------------------------------------------------------------------------
# Semi-sparse results (TTM family)
# ---------------------------------------------------------------------------
class SemiSparse(_Owned):
    """A semi-sparse tensor (spt_scoo): sparse in some modes, dense in the
    others (``dense_modes``); the result of :func:`ttm` and :func:`ttm_chain`.
    ``fiber_subs`` (nfibers x sparse modes) and ``blocks`` (nfibers x the
    dense modes' sizes, in mode order) describe it; ``to_numpy()`` and
    ``to_coo()`` convert it."""

    def __init__(self, handle):
        L = _lib.lib()
        self._h = handle
        self._free = L.spt_scoo_free
        s = _lib.summary("spt_scoo_info", _lib.ScooSummary, handle)
        dims = (ctypes.c_uint32 * s.order)()
        _lib.check(L.spt_scoo_dims(handle, dims), "spt_scoo_dims")
        count = ctypes.c_uint32()
        modes = (ctypes.c_uint32 * s.order)()
        _lib.check(L.spt_scoo_dense_modes(handle, ctypes.byref(count), modes), "spt_scoo_dense_modes")
        self.shape = tuple(int(d) for d in dims)
        self.order = int(s.order)
        self.dtype = _NP_DTYPES[s.dtype]
        self.nfibers = int(s.nfibers)
        self.dense_modes = tuple(int(m) for m in modes[:count.value])
        self.sparse_modes = tuple(m for m in range(self.order) if m not in self.dense_modes)


    def __repr__(self):
        return (f"<sptensor.SemiSparse shape={self.shape} dense_modes={self.dense_modes} "
                f"nfibers={self.nfibers} dtype={self.dtype}>")

    @property
    def fiber_subs(self):
        """0-based coordinates of the fibers in the sparse modes, (nfibers, len(sparse_modes)) uint32."""
        return _index_columns("spt_scoo_indices", self._h, self.sparse_modes, self.nfibers)

    @property
    def blocks(self):
        """The dense blocks, shape (nfibers, shape[d_0], shape[d_1], ...) for the dense modes d_0 < d_1 < ... (a copy)."""
        p = ctypes.c_void_p()
        _lib.check(_lib.lib().spt_scoo_values(self._h, ctypes.byref(p)), "spt_scoo_values")
        dense = [self.shape[d] for d in self.dense_modes]
        flat = _borrowed_array(p, self.nfibers * int(np.prod(dense)), self.dtype)
        # The library stores each block with the lowest dense mode fastest.
        return flat.reshape([self.nfibers] + dense[::-1]).transpose([0] + list(range(len(dense), 0, -1))).copy()

    def to_numpy(self):
        """The dense numpy array (only for small tensors)."""
        out = np.zeros([self.shape[m] for m in self.sparse_modes + self.dense_modes], dtype=self.dtype)
        if self.nfibers:
            np.add.at(out, tuple(self.fiber_subs.T.astype(np.intp)), self.blocks)
        perm = np.argsort(self.sparse_modes + self.dense_modes)
        return out.transpose(perm)

    def to_coo(self, ctx=None):
        """A COO :class:`Tensor` of the nonzero entries."""
        c = _ctx(ctx)
        h = ctypes.c_void_p()
        _lib.check(_lib.lib().spt_scoo_to_coo(c._h, self._h, ctypes.byref(h)), "spt_scoo_to_coo", c._h)
        return Tensor(h)

    def ttm(self, matrix, mode, ctx=None):
        """Semi-sparse TTM: self x_mode matrix^T (matrix: shape[mode] x R; mode must be sparse)."""
        return ttm(self, matrix, mode, ctx=ctx)


def ttv(tensor, vector, mode, ctx=None):
    """Tensor times vector in `mode` (0-based): X x_mode v, a :class:`Tensor`
    of order N-1 (the other modes in order; duplicates summed, sorted).
    vector: shape[mode] values (converted to the tensor's dtype). As pyttb's
    sptensor.ttv(v, mode)."""
    c = _ctx(ctx)
    if not 0 <= mode < tensor.order:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", f"mode {mode} out of range for order {tensor.order}")
    v = _vector(vector, tensor.shape[mode], tensor.dtype, "vector")
    h = ctypes.c_void_p()
    _lib.check(_lib.lib().spt_ttv(c._h, tensor._h, mode, v.ctypes.data, v.shape[0], ctypes.byref(h)), "spt_ttv", c._h)
    return Tensor(h)


def ttv_chain(tensor, vectors, keep_mode, ctx=None):
    """Tensor times a vector in every mode but `keep_mode`: a numpy vector of
    shape[keep_mode] values (pyttb: X.ttv(vectors without keep_mode,
    exclude_dims=keep_mode)). vectors: `order` vectors; vectors[keep_mode]
    is not read and may be None. Summed in double, reproducibly."""
    c = _ctx(ctx)
    order = tensor.order
    if len(vectors) != order or not 0 <= keep_mode < order:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                   f"need {order} vectors and 0 <= keep_mode < {order}")
    arrays = [None if m == keep_mode else _vector(v, tensor.shape[m], tensor.dtype, f"vectors[{m}]")
              for m, v in enumerate(vectors)]
    ptrs = (ctypes.c_void_p * order)(*[None if a is None else a.ctypes.data for a in arrays])
    out = np.empty(tensor.shape[keep_mode], dtype=tensor.dtype)
    _lib.check(_lib.lib().spt_ttv_chain(c._h, tensor._h, keep_mode, ptrs, out.ctypes.data), "spt_ttv_chain", c._h)
    return out


def ttv_all(tensor, vectors, ctx=None):
    """Full contraction with a vector in every mode (a float, summed in double)."""
    c = _ctx(ctx)
    if len(vectors) != tensor.order:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", f"need {tensor.order} vectors")
    arrays = [_vector(v, tensor.shape[m], tensor.dtype, f"vectors[{m}]") for m, v in enumerate(vectors)]
    ptrs = (ctypes.c_void_p * tensor.order)(*[a.ctypes.data for a in arrays])
    r = ctypes.c_double()
    _lib.check(_lib.lib().spt_ttv_all(c._h, tensor._h, ptrs, ctypes.byref(r)), "spt_ttv_all", c._h)
    return r.value


def ttm(tensor, matrix, mode, ctx=None):
    """Tensor times matrix in `mode`: Y = X x_mode U^T with U of shape
    (shape[mode], R) (factor-matrix shape, as ParTI!; pyttb:
    X.ttm(U, mode, transpose=True)). tensor: :class:`Tensor` (SpTTM),
    :class:`SemiSparse` with `mode` sparse (SsTTM) or an :class:`FCOO` built
    for TTM in `mode`. Returns a :class:`SemiSparse` dense in `mode` (size R)."""
    c = _ctx(ctx)
    L = _lib.lib()
    h = ctypes.c_void_p()
    with _Matrices() as mats:
        u = mats.wrap(c, matrix, tensor.dtype)
        if isinstance(tensor, Tensor):
            _lib.check(L.spt_ttm(c._h, tensor._h, mode, u, ctypes.byref(h)), "spt_ttm", c._h)
        elif isinstance(tensor, SemiSparse):
            _lib.check(L.spt_scoo_ttm(c._h, tensor._h, mode, u, ctypes.byref(h)), "spt_scoo_ttm", c._h)
        elif isinstance(tensor, FCOO):
            if tensor.operation != "ttm" or tensor.mode != mode:
                raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                           f"this F-COO is built for {tensor.operation} in mode {tensor.mode}, "
                                           f"not ttm in mode {mode}")
            _lib.check(L.spt_ttm_fcoo(c._h, tensor._h, u, ctypes.byref(h)), "spt_ttm_fcoo", c._h)
        else:
            raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", "ttm takes a Tensor, SemiSparse or FCOO")
    return SemiSparse(h)


def ttm_chain(tensor, matrices, modes, ctx=None):
    """TTM chain Y = X x_{modes[0]} U_0^T x_{modes[1]} U_1^T ... (distinct
    modes; U_j of shape (shape[modes[j]], R_j)); one sort, no intermediate
    re-sorting. Returns a :class:`SemiSparse` dense in every chain mode."""
    c = _ctx(ctx)
    modes = [int(m) for m in modes]
    if len(matrices) != len(modes):
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", f"{len(matrices)} matrices for {len(modes)} modes")
    h = ctypes.c_void_p()
    with _Matrices() as mats:
        us = (ctypes.c_void_p * len(modes))(*[mats.wrap(c, u, tensor.dtype).value for u in matrices])
        mode_array = (ctypes.c_uint32 * len(modes))(*modes)
        _lib.check(_lib.lib().spt_ttm_chain(c._h, tensor._h, len(modes), mode_array, us, ctypes.byref(h)),
                   "spt_ttm_chain", c._h)
    return SemiSparse(h)


# ---------------------------------------------------------------------------
# F-COO
# ---------------------------------------------------------------------------
_FCOO_OPERATIONS = {"mttkrp": 0, "ttm": 1}
_FCOO_OPERATION_NAMES = {v: k for k, v in _FCOO_OPERATIONS.items()}


def fcoo_suggest_threadlen(nnz, rank=16, dtype=np.float64, multiprocessors=0):
    """The F-COO partition length (8, 16 or 32) the library's rule picks for
    nnz nonzeros and rank-column products on a GPU with `multiprocessors`
    multiprocessors (0 = the default, 132)."""
    tl = ctypes.c_uint32()
    _lib.check(_lib.lib().spt_fcoo_suggest_threadlen(int(nnz), int(rank), _dtype_code(dtype), int(multiprocessors),
                                                     ctypes.byref(tl)), "spt_fcoo_suggest_threadlen")
    return int(tl.value)


class FCOO(_Owned):
    """F-COO (flagged COO, one copy laid out for one operation in one mode;
    see sptensor/fcoo.h): operation "mttkrp" (MTTKRP and TTMc in `mode`) or
    "ttm" (TTM in `mode`); threadlen 0 (the library's rule), 8, 16 or 32.
    Built from a :class:`Tensor` (which may be freed afterwards). The host
    kernels give the COO kernels' results; with a CUDA backend they run on
    the GPU."""

    def __init__(self, tensor, operation="mttkrp", mode=0, threadlen=0, ctx=None):
        c = _ctx(ctx)
        L = _lib.lib()
        h = ctypes.c_void_p()
        op = _choice(_FCOO_OPERATIONS, operation, "F-COO operation")
        opts = _lib.init_options("spt_fcoo_options_init_size", _lib.FcooOptions)
        opts.operation = op
        opts.mode = int(mode)
        opts.threadlen = int(threadlen)
        _lib.check(L.spt_fcoo_from_coo(c._h, tensor._h, ctypes.byref(opts), ctypes.byref(h)), "spt_fcoo_from_coo", c._h)
        self._h = h
        self._free = L.spt_fcoo_free
        self.shape = tensor.shape
        self.order = tensor.order
        self.dtype = tensor.dtype
        self.nnz = tensor.nnz
        self.operation = _FCOO_OPERATION_NAMES[op]
        self.mode = int(mode)


    def __repr__(self):
        return f"<sptensor.FCOO {self.operation} mode={self.mode} shape={self.shape} nnz={self.nnz}>"

    def info(self, ctx=None):
        """threadlen, segments (distinct index-mode coordinates) and bytes of the format (a dict)."""
        c = _ctx(ctx)
        L = _lib.lib()
        s = _lib.FcooSummary()
        s.struct_size = ctypes.sizeof(s)
        _lib.check(L.spt_fcoo_info(c._h, self._h, ctypes.byref(s)), "spt_fcoo_info", c._h)
        dims = (ctypes.c_uint32 * self.order)()
        _lib.check(L.spt_fcoo_dims(self._h, dims), "spt_fcoo_dims")
        return {"operation": _FCOO_OPERATION_NAMES.get(s.operation, s.operation), "mode": s.mode,
                "threadlen": s.threadlen, "segments": s.segments, "bytes": s.bytes,
                "shape": tuple(int(d) for d in dims)}

    def to_coo(self, ctx=None):
        """Decode to a COO :class:`Tensor` (sorted by the index modes)."""
        c = _ctx(ctx)
        h = ctypes.c_void_p()
        _lib.check(_lib.lib().spt_fcoo_to_coo(c._h, self._h, ctypes.byref(h)), "spt_fcoo_to_coo", c._h)
        return Tensor(h)

    def mttkrp(self, factors, out=None, ctx=None):
        """MTTKRP in this handle's mode (operation "mttkrp"); see :func:`mttkrp`."""
        return mttkrp(self, factors, self.mode, out=out, ctx=ctx)

    def ttm(self, matrix, ctx=None):
        """TTM in this handle's mode (operation "ttm"); see :func:`ttm`."""
        return ttm(self, matrix, self.mode, ctx=ctx)

    def ttmc(self, factors, ctx=None):
        """TTM chain in every mode but this handle's (operation "mttkrp"); see :func:`ttmc`."""
        return ttmc(self, factors, self.mode, ctx=ctx)


class _RootedFormat(_Owned):
    """A handle laid out for one mode (B-CSF/HB-CSF, HLS): `_prefix` names the
    C functions (spt_<prefix>_free, _info, _to_coo), `_summary` the ctypes
    info struct."""

    _prefix = ""
    _summary = None

    def _adopt(self, h, tensor, mode):
        self._h = h
        self._free = getattr(_lib.lib(), f"spt_{self._prefix}_free")
        self.shape = tensor.shape
        self.order = tensor.order
        self.dtype = tensor.dtype
        self.nnz = tensor.nnz
        self.mode = int(mode)

    def __repr__(self):
        return f"<sptensor.{type(self).__name__} mode={self.mode} shape={self.shape} nnz={self.nnz}>"

    def info(self, ctx=None):
        """The summary of spt_<format>_info as a dict (every field but
        struct_size and dtype)."""
        c = _ctx(ctx)
        st = self._summary()
        st.struct_size = ctypes.sizeof(st)
        name = f"spt_{self._prefix}_info"
        _lib.check(getattr(_lib.lib(), name)(c._h, self._h, ctypes.byref(st)), name, c._h)
        return {f: getattr(st, f) for f, _ in st._fields_ if f not in ("struct_size", "dtype")}

    def to_coo(self, ctx=None):
        """The tensor back as a :class:`Tensor`."""
        c = _ctx(ctx)
        out = ctypes.c_void_p()
        name = f"spt_{self._prefix}_to_coo"
        _lib.check(getattr(_lib.lib(), name)(c._h, self._h, ctypes.byref(out)), name, c._h)
        return Tensor(out)

    def mttkrp(self, factors, out=None, ctx=None):
        """MTTKRP in this handle's mode; see :func:`mttkrp`."""
        return mttkrp(self, factors, self.mode, out=out, ctx=ctx)


class HBCSF(_RootedFormat):
    """B-CSF / HB-CSF (load-balanced CSF for GPU MTTKRP, see sptensor/hbcsf.h),
    rooted at `mode`: slices split into COO, CSL and B-CSF groups (all B-CSF
    with plain=True), fibers longer than fiber_threshold split, slices
    heavier than slice_split_nnz cut into work units; 0 = the library's
    default. Serves the MTTKRP in `mode` (on the GPU when the context has a
    device) and, slower, in any other mode (:func:`mttkrp` with that mode).
    Built from a :class:`Tensor` (which may be freed afterwards)."""

    def __init__(self, tensor, mode=0, fiber_threshold=0, slice_split_nnz=0, slice_bin_min_nnz=0, plain=False,
                 ctx=None):
        c = _ctx(ctx)
        L = _lib.lib()
        opts = _lib.init_options("spt_hbcsf_options_init_size", _lib.HbcsfOptions)
        opts.fiber_threshold = int(fiber_threshold)
        opts.slice_split_nnz = int(slice_split_nnz)
        opts.slice_bin_min_nnz = int(slice_bin_min_nnz)
        opts.flags = 1 if plain else 0  # SPT_HBCSF_PLAIN_BCSF
        opts.root_mode = int(mode)
        h = ctypes.c_void_p()
        _lib.check(L.spt_hbcsf_from_coo(c._h, tensor._h, ctypes.byref(opts), ctypes.byref(h)), "spt_hbcsf_from_coo",
                   c._h)
        self._adopt(h, tensor, mode)

    # info(): nonzeros and slices per COO/CSL/B-CSF group, fibers, segments,
    # units, splits, bytes. to_coo() is exact.
    _prefix = "hbcsf"
    _summary = _lib.HbcsfSummary


class HLS(_RootedFormat):
    """HLS hybrid linear storage (16x16x16 tiles split into a dense part with
    bitmaps and a sparse part with bit-packed indices, see sptensor/hls.h),
    rooted at `mode`; orders 3 and 4. dense_threshold: occupied cells that
    make a tile dense; slab_depth: order-4 tile depth along the highest
    non-root mode (1, 2, 4, 8 or 16); 0 = the library's default (on a GPU
    context the threshold is measured on the device). Serves the MTTKRP and
    the TTM chain in `mode`: on the GPU (tensor cores) when the context has
    a device, else on the host (exact). precision: the GPU arithmetic of the
    dense tiles, "auto" (the library's choice), "fp16", "bf16", "tf32" or
    "exact" (the tensor's type on CUDA cores); the host kernels ignore it.
    Built from a :class:`Tensor` (which may be freed afterwards)."""

    PRECISIONS = {"auto": 0, "fp16": 1, "bf16": 2, "tf32": 3, "exact": 4}

    def __init__(self, tensor, mode=0, dense_threshold=0, slab_depth=0, precision="auto", ctx=None):
        c = _ctx(ctx)
        L = _lib.lib()
        opts = _lib.init_options("spt_hls_options_init_size", _lib.HlsOptions)
        opts.root_mode = int(mode)
        opts.dense_threshold = int(dense_threshold)
        opts.slab_depth = int(slab_depth)
        if isinstance(precision, str):
            if precision not in self.PRECISIONS:
                raise ValueError(f"precision must be one of {sorted(self.PRECISIONS)}, got {precision!r}")
            precision = self.PRECISIONS[precision]
        opts.precision = int(precision)
        h = ctypes.c_void_p()
        _lib.check(L.spt_hls_from_coo(c._h, tensor._h, ctypes.byref(opts), ctypes.byref(h)), "spt_hls_from_coo", c._h)
        self._adopt(h, tensor, mode)

    # info(): tiles, dense and sparse tiles and nonzeros, dense fraction,
    # resolved threshold and slab depth, bytes, build seconds, precision
    # (resolved, as its number), threshold_calibrated. to_coo() is
    # exact except that repeated coordinates inside a dense tile come back
    # summed.
    _prefix = "hls"
    _summary = _lib.HlsSummary

    def ttmc(self, factors, ctx=None):
        """TTM chain in every mode but this handle's; see :func:`ttmc`."""
        return ttmc(self, factors, self.mode, ctx=ctx)


def ttmc(tensor, factors, mode, threadlen=0, ctx=None):
    """One-shot TTM chain in every mode but `mode` (the matrix HOOI takes
    singular vectors of): a (shape[mode], prod_{m != mode} R_m) numpy array,
    Y_(mode) of X x_{m != mode} U_m^T, columns in Kolda's unfolding order
    (lowest other mode fastest). factors: `order` matrices U_m of shape
    (shape[m], R_m); factors[mode] is not read and may be None. tensor: a
    :class:`Tensor` (an F-COO for MTTKRP in `mode` is built for the call),
    an :class:`FCOO` built for "mttkrp" in `mode` or an :class:`HLS` rooted
    at `mode`."""
    c = _ctx(ctx)
    if isinstance(tensor, Tensor):
        tensor = FCOO(tensor, "mttkrp", mode, threadlen, ctx=c)
    is_hls = isinstance(tensor, HLS)
    if not (is_hls and tensor.mode == mode) and not (
            isinstance(tensor, FCOO) and tensor.operation == "mttkrp" and tensor.mode == mode):
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                   f"ttmc takes a Tensor, an FCOO built for mttkrp in mode {mode} "
                                   f"or an HLS rooted at mode {mode}")
    order = tensor.order
    if len(factors) != order:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", f"{len(factors)} factors for an order-{order} tensor")
    cols = int(np.prod([np.shape(f)[1] for m, f in enumerate(factors) if m != mode]))
    out = np.empty((tensor.shape[mode], cols), dtype=tensor.dtype)
    with _Matrices() as mats:
        ptrs = (ctypes.c_void_p * order)()
        for m, f in enumerate(factors):
            if m != mode and f is not None:
                ptrs[m] = mats.wrap(c, f, tensor.dtype).value
        name = "spt_ttmc_hls" if is_hls else "spt_ttmc_fcoo"
        _lib.check(getattr(_lib.lib(), name)(c._h, tensor._h, ptrs, mats.wrap(c, out, tensor.dtype)), name, c._h)
    return out


# ---------------------------------------------------------------------------
# Dense tensors
# ---------------------------------------------------------------------------
def to_dense(tensor, max_bytes=0, ctx=None):
    """The dense numpy array of a COO :class:`Tensor`, built by the library
    (spt_dense_from_coo: repeated coordinates summed). Refuses (raising
    OutOfMemoryError) above max_bytes bytes (0 = 1 GiB)."""
    c = _ctx(ctx)
    L = _lib.lib()
    d = ctypes.c_void_p()
    _lib.check(L.spt_dense_from_coo(c._h, tensor._h, int(max_bytes), ctypes.byref(d)), "spt_dense_from_coo", c._h)
    try:
        p = ctypes.c_void_p()
        _lib.check(L.spt_dense_data_const(d, ctypes.byref(p)), "spt_dense_data_const")
        flat = _borrowed_array(p, int(np.prod(tensor.shape)), tensor.dtype)
        return np.ascontiguousarray(flat.reshape(tensor.shape, order="F"))  # first index fastest in the library
    finally:
        L.spt_dense_free(d)


def from_dense(array, dtype=None, ctx=None):
    """A COO :class:`Tensor` of the entries of a dense numpy array that are
    not exactly zero (spt_dense_create_copy + spt_dense_to_coo); float32
    stays float32, anything else becomes float64 unless dtype says."""
    c = _ctx(ctx)
    L = _lib.lib()
    a = np.asarray(array)
    if dtype is None:
        dtype = np.float32 if a.dtype == np.float32 else np.float64
    a = np.asfortranarray(a, dtype=dtype)  # the library's layout: first index fastest
    if a.ndim == 0:
        raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", "from_dense needs an array of order >= 1")
    dims = (ctypes.c_uint32 * a.ndim)(*a.shape)
    d = ctypes.c_void_p()
    _lib.check(L.spt_dense_create_copy(c._h, _dtype_code(a.dtype), a.ndim, dims, a.ctypes.data, ctypes.byref(d)),
               "spt_dense_create_copy", c._h)
    try:
        h = ctypes.c_void_p()
        _lib.check(L.spt_dense_to_coo(c._h, d, ctypes.byref(h)), "spt_dense_to_coo", c._h)
        return Tensor(h)
    finally:
        L.spt_dense_free(d)


Tensor.to_dense = lambda self, max_bytes=0, ctx=None: to_dense(self, max_bytes, ctx)
Tensor.to_dense.__doc__ = "Same as :func:`to_dense` (self)."


# ---------------------------------------------------------------------------
# Reordering
# ---------------------------------------------------------------------------
_REORDER_METHODS = {"lexi": 0, "bfs_mcs": 1, "random": 2}


class Permutation(_Owned):
    """One relabelling per mode (spt_permutation): ``perms[m][old] = new``
    (0-based numpy arrays). From :func:`reorder` or :meth:`from_arrays`."""

    def __init__(self, handle):
        L = _lib.lib()
        self._h = handle
        self._free = L.spt_permutation_free
        order = _lib.summary("spt_permutation_info", _lib.PermutationSummary, handle).order
        dims = (ctypes.c_uint32 * order)()
        _lib.check(L.spt_permutation_dims(handle, dims), "spt_permutation_dims")
        self.order = int(order)
        self.shape = tuple(int(d) for d in dims)


    def __repr__(self):
        return f"<sptensor.Permutation shape={self.shape}>"

    @classmethod
    def from_arrays(cls, perms, index_base=0, ctx=None):
        """A permutation from `order` arrays (perms[m][old] = new, index_base 0 or 1); checked and copied."""
        c = _ctx(ctx)
        arrays = [np.ascontiguousarray(p, dtype=np.uint32) for p in perms]
        dims = (ctypes.c_uint32 * len(arrays))(*[a.shape[0] for a in arrays])
        ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        h = ctypes.c_void_p()
        _lib.check(_lib.lib().spt_permutation_create(c._h, len(arrays), dims, ptrs, int(index_base), ctypes.byref(h)),
                   "spt_permutation_create", c._h)
        return cls(h)

    @property
    def perms(self):
        """List of 0-based uint32 arrays, perms[m][old] = new (copies)."""
        out = []
        for m, n in enumerate(self.shape):
            a = np.empty(n, dtype=np.uint32)
            _lib.check(_lib.lib().spt_permutation_get(self._h, m, a.ctypes.data_as(_lib.pu32), n, 0),
                       "spt_permutation_get")
            out.append(a)
        return out

    def inverse(self, ctx=None):
        """The permutation undoing this one."""
        c = _ctx(ctx)
        h = ctypes.c_void_p()
        _lib.check(_lib.lib().spt_permutation_inverse(c._h, self._h, ctypes.byref(h)), "spt_permutation_inverse", c._h)
        return Permutation(h)

    def _rows(self, fn, name, matrix, mode, ctx):
        c = _ctx(ctx)
        a = np.array(matrix, dtype=np.float32 if np.asarray(matrix).dtype == np.float32 else np.float64, order="C")
        with _Matrices() as mats:
            _lib.check(fn(c._h, mats.wrap(c, a, a.dtype), self._h, int(mode)), name, c._h)
        return a

    def permute_rows(self, matrix, mode, ctx=None):
        """A copy of `matrix` (shape[mode] rows) with row i moved to row perms[mode][i]
        (the caller's index space -> the relabelled tensor's)."""
        return self._rows(_lib.lib().spt_matrix_permute_rows, "spt_matrix_permute_rows", matrix, mode, ctx)

    def unpermute_rows(self, matrix, mode, ctx=None):
        """A copy of `matrix` with row perms[mode][i] moved back to row i (relabelled -> caller's labels)."""
        return self._rows(_lib.lib().spt_matrix_unpermute_rows, "spt_matrix_unpermute_rows", matrix, mode, ctx)

    def unpermute(self, result, ctx=None):
        """A :class:`CPResult` computed on a relabelled tensor with its factors in the caller's labels."""
        return result._replace(factors=[self.unpermute_rows(f, m, ctx) for m, f in enumerate(result.factors)])


def reorder(tensor, method="lexi", iterations=3, seed=0, ctx=None):
    """A relabelling of every mode that improves locality (Li's LEXI-ORDER,
    "bfs_mcs", or "random"): a :class:`Permutation`. Use with
    :func:`relabel`, then :meth:`Permutation.unpermute` on the result."""
    c = _ctx(ctx)
    opts = _lib.init_options("spt_reorder_options_init_size", _lib.ReorderOptions)
    opts.method = _choice(_REORDER_METHODS, method, "reorder method")
    opts.iterations = int(iterations)
    opts.seed = int(seed)
    h = ctypes.c_void_p()
    _lib.check(_lib.lib().spt_reorder_compute(c._h, tensor._h, ctypes.byref(opts), ctypes.byref(h)),
               "spt_reorder_compute", c._h)
    return Permutation(h)


def relabel(tensor, perm, ctx=None):
    """A relabelled copy of `tensor`: coordinate i of mode m becomes perm.perms[m][i]."""
    c = _ctx(ctx)
    h = ctypes.c_void_p()
    _lib.check(_lib.lib().spt_coo_relabeled_copy(c._h, tensor._h, perm._h, ctypes.byref(h)), "spt_coo_relabeled_copy",
               c._h)
    return Tensor(h)


def set_device(device, ctx=None):
    """CUDA device ordinal for the default context (DeviceError when there is none)."""
    c = _ctx(ctx)
    _lib.check(_lib.lib().spt_context_set_device(c._h, int(device)), "spt_context_set_device", c._h)


def set_devices(devices, ctx=None):
    """CUDA devices (ordinals, lead first) that multi-GPU runs of the context use.

    An empty sequence restores the default, every device (CP-ALS on a COO
    tensor splits its nonzeros among them; NCCL is needed, else one GPU runs).
    """
    c = _ctx(ctx)
    ids = [int(d) for d in devices]
    arr = (ctypes.c_int * max(len(ids), 1))(*ids)
    _lib.check(_lib.lib().spt_context_set_devices(c._h, arr if ids else None, len(ids)), "spt_context_set_devices",
               c._h)


# ---------------------------------------------------------------------------
# CP-APR, elementwise operations, unfoldings
# ---------------------------------------------------------------------------
APRResult = namedtuple("APRResult", "weights factors loglik iterations converged loglik_history seconds")
APRResult.__doc__ = """Result of :func:`cp_apr`: weights (lambda >= 0, decreasing), factors
(nonnegative, columns of unit 1-norm), final Poisson log-likelihood,
outer iterations done, converged flag, log-likelihood and seconds per outer
iteration."""
APRResult.to_pyttb = _cp_to_pyttb


def cp_apr(tensor, rank, max_outer_iters=1000, max_inner_iters=10, tol=1e-4, kappa=0.01, kappatol=1e-10,
           epsilon=1e-10, init="random", seed=0, format="auto", printitn=0, progress=False, ctx=None):
    """Poisson CP decomposition of a nonnegative (count) tensor by CP-APR
    multiplicative updates (pyttb cp_apr(algorithm="mu") numerics; pyttb's
    maxiters, maxinneriters, stoptol, kappa, kappatol, epsDivZero). tensor:
    Tensor or a pyttb.sptensor (copied). init:
    "random" (from `seed`) or `order` nonnegative factors (shape[m] x rank).
    format: "auto", "coo" or "hicoo" (the storage the updates run on).
    printitn (the log-likelihood and KKT violation), progress and Ctrl-C: as
    :func:`cp_als`. Returns an :class:`APRResult`."""
    c = _ctx(ctx)
    tensor = _operand(tensor, ctx)
    L = _lib.lib()
    rank = _rank(rank)
    opts = _lib.init_options("spt_cp_apr_options_init_size", _lib.CpAprOptions)
    opts.rank = rank
    opts.max_outer_iters = _iterations(max_outer_iters, "max_outer_iters")
    opts.max_inner_iters = _iterations(max_inner_iters, "max_inner_iters")
    opts.tol, opts.kappa, opts.kappatol, opts.epsilon = float(tol), float(kappa), float(kappatol), float(epsilon)
    opts.seed = int(seed)
    opts.format = _choice(_FORMATS, format, "format")
    control = _RunControl(_lib.APR_CALLBACK, printitn, ("loglik", "kkt"),
                          _progress.IterationBar(progress, "cp_apr", opts.max_outer_iters, "loglik"))
    opts.callback = control.c_function
    k = ctypes.c_void_p()
    with _Matrices() as mats, control:
        mats.set_init(c, opts, init, tensor.order, tensor.dtype)
        _lib.check(L.spt_cp_apr(c._h, tensor._h, ctypes.byref(opts), ctypes.byref(k)), "spt_cp_apr", c._h)
    try:
        ll, iters, conv = ctypes.c_double(), ctypes.c_int(), ctypes.c_int()
        _lib.check(L.spt_ktensor_result(k, ctypes.byref(ll), ctypes.byref(iters), ctypes.byref(conv)),
                   "spt_ktensor_result")
        lam = ctypes.c_void_p()
        _lib.check(L.spt_ktensor_lambda(k, ctypes.byref(lam)), "spt_ktensor_lambda")
        weights = _borrowed_array(lam, int(rank), tensor.dtype)
        factors = []
        for m in range(tensor.order):
            f = ctypes.c_void_p()
            _lib.check(L.spt_ktensor_factor(k, m, ctypes.byref(f)), "spt_ktensor_factor")
            factors.append(_copy_matrix(f, tensor.dtype))
        lls, seconds = _history(L.spt_ktensor_history, k)
        return control.finish("cp_apr", APRResult(weights, factors, ll.value, iters.value, bool(conv.value), lls,
                                                  seconds))
    finally:
        L.spt_ktensor_free(k)


_ELEMENTWISE = {"add": 0, "sub": 1, "mul": 2, "div": 3}


def elementwise(op, x, y, ctx=None):
    """Elementwise op ("add", "sub": union of patterns; "mul", "div":
    intersection) of two tensors of the same shape and dtype, or of a tensor
    and a scalar y (applied to the stored nonzeros only; the pattern is
    kept). Returns a new coalesced :class:`Tensor`. Also as X + Y, X - Y,
    X * Y, X / Y (and with a scalar on the right)."""
    c = _ctx(ctx)
    code = _choice(_ELEMENTWISE, op, "elementwise op")
    h = ctypes.c_void_p()
    if isinstance(y, Tensor):
        _lib.check(_lib.lib().spt_elementwise(c._h, code, x._h, y._h, ctypes.byref(h)), "spt_elementwise", c._h)
    else:
        _lib.check(_lib.lib().spt_elementwise_scalar(c._h, code, x._h, float(y), ctypes.byref(h)),
                   "spt_elementwise_scalar", c._h)
    return Tensor(h)


Tensor.__add__ = lambda self, other: elementwise("add", self, other)
Tensor.__sub__ = lambda self, other: elementwise("sub", self, other)
Tensor.__mul__ = lambda self, other: elementwise("mul", self, other)
Tensor.__truediv__ = lambda self, other: elementwise("div", self, other)


def unfold(tensor, mode, ctx=None):
    """Mode-`mode` unfolding X_(mode) in CSR form (Kolda's column order:
    lowest other mode fastest; duplicates summed): a tuple (row_ptr, col_ind,
    values, shape) of numpy arrays, ready for
    scipy.sparse.csr_matrix((values, col_ind, row_ptr), shape)."""
    c = _ctx(ctx)
    L = _lib.lib()
    h = ctypes.c_void_p()
    _lib.check(L.spt_unfold_csr(c._h, tensor._h, int(mode), ctypes.byref(h)), "spt_unfold_csr", c._h)
    try:
        rows, cols, nnz = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint64()
        rp, ci, vals = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        _lib.check(L.spt_csr_arrays(h, None, ctypes.byref(rows), ctypes.byref(cols), ctypes.byref(nnz),
                                    ctypes.byref(rp), ctypes.byref(ci), ctypes.byref(vals)), "spt_csr_arrays")
        n, r = int(nnz.value), int(rows.value)
        row_ptr = np.ctypeslib.as_array(ctypes.cast(rp, _lib.pu64), (r + 1,)).copy()
        col_ind = (np.ctypeslib.as_array(ctypes.cast(ci, _lib.pu64), (n,)).copy() if n
                   else np.empty(0, dtype=np.uint64))
        return row_ptr, col_ind, _borrowed_array(vals, n, tensor.dtype), (r, int(cols.value))
    finally:
        L.spt_csr_free(h)


__all__ += ["APRResult", "cp_apr", "elementwise", "unfold", "HBCSF", "HLS"]

__all__ += ["SemiSparse", "FCOO", "Permutation", "ttv", "ttv_chain", "ttv_all", "ttm", "ttm_chain", "ttmc",
            "fcoo_suggest_threadlen", "to_dense", "from_dense", "reorder", "relabel", "set_device", "set_devices"]


# ---------------------------------------------------------------------------
# Dense matrix products and Kruskal-model measures (pyttb khatrirao, kron,
# ktensor.norm, ktensor.innerprod, tt_loglikelihood)
# ---------------------------------------------------------------------------
# What the model arguments accept: a CPResult, APRResult, pyttb.ktensor or (weights, factors).
CPModel = Union["CPResult", "APRResult", "pyttb.ktensor", tuple]
# A sparse tensor argument: a Tensor or a pyttb.sptensor (copied).
TensorLike = Union["Tensor", "pyttb.sptensor"]


def _index_list(value, name):
    """value as a list of ints (a sequence or 1-D array), else TypeError naming `name`."""
    if isinstance(value, (str, bytes)) or np.ndim(value) != 1:
        raise TypeError(f"{name} must be a sequence of integers, got {type(value).__name__}")
    out = []
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name}[{i}] must be an integer, got {type(v).__name__} {v!r}")
        out.append(int(v))
    return out


def _matrix_arg(value, name):
    """value as a 2-D numpy array of real numbers, else TypeError (not numeric)
    or ValueError (not 2-D, or empty) naming `name`."""
    a = np.asarray(value)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a 2-D array of real numbers, got {type(value).__name__} of dtype {a.dtype}")
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {a.shape}")
    if 0 in a.shape:
        raise ValueError(f"{name} must not be empty, got shape {a.shape}")
    return a


def _common_dtype(arrays):
    """float32 when every array is float32, else float64 (as numpy promotes)."""
    return np.dtype(np.float32) if all(a.dtype == np.float32 for a in arrays) else np.dtype(np.float64)


def _matrix_product(fn_name, a, b, dtype, ctx):
    """numpy result of the library's dense product fn_name(ctx, a, b, &out)."""
    c = _ctx(ctx)
    out = ctypes.c_void_p()
    with _Matrices() as mats:
        ha, hb = mats.wrap(c, a, dtype), mats.wrap(c, b, dtype)
        _lib.check(getattr(_lib.lib(), fn_name)(c._h, ha, hb, ctypes.byref(out)), fn_name, c._h)
    try:
        return _copy_matrix(out, dtype)
    finally:
        _lib.lib().spt_matrix_free(out)


def khatri_rao(*matrices: np.typing.ArrayLike, ctx: Optional[Context] = None) -> np.ndarray:
    """Khatri-Rao product (column-wise Kronecker product) of matrices with the
    same number of columns R, as pyttb's ``khatrirao(A, B, ...)``: for A
    (I x R) and B (J x R) an (I*J) x R array whose row i*J + j is
    A[i, :] * B[j, :]; more matrices are multiplied left to right. Takes the
    matrices as arguments or as one list. float32 when every input is
    float32, else float64. Raises TypeError (not numeric arrays), ValueError
    (fewer than one matrix, not 2-D, empty, column counts differ)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise ValueError("khatri_rao needs at least one matrix")
    arrays = [_matrix_arg(m, f"matrices[{i}]") for i, m in enumerate(matrices)]
    cols = arrays[0].shape[1]
    for i, a in enumerate(arrays):
        if a.shape[1] != cols:
            raise ValueError(f"matrices[{i}] has {a.shape[1]} columns, matrices[0] has {cols}")
    dtype = _common_dtype(arrays)
    result = arrays[0].astype(dtype)
    for a in arrays[1:]:
        result = _matrix_product("spt_khatri_rao", result, a, dtype, ctx)
    return result


def kronecker(a: np.typing.ArrayLike, b: np.typing.ArrayLike, ctx: Optional[Context] = None) -> np.ndarray:
    """Kronecker product of two matrices (numpy's ``np.kron`` of 2-D arrays):
    for A (I x J) and B (K x L) the (I*K) x (J*L) array with element
    (i*K + k, j*L + l) = A[i, j] * B[k, l]. float32 when both are float32,
    else float64. Raises TypeError (not numeric) or ValueError (not 2-D, empty)."""
    arrays = [_matrix_arg(a, "a"), _matrix_arg(b, "b")]
    dtype = _common_dtype(arrays)
    return _matrix_product("spt_kronecker", arrays[0], arrays[1], dtype, ctx)


def _model_arrays(model, name):
    """(weights, factors) of a CP model: a CPResult, APRResult, pyttb.ktensor
    or a (weights, factors) pair; TypeError/ValueError naming `name`."""
    if isinstance(model, (CPResult, APRResult)):
        weights, factors = model.weights, model.factors
    elif _is_pyttb(model, "ktensor"):
        weights, factors = model.weights, model.factor_matrices
    elif isinstance(model, (tuple, list)) and len(model) == 2:
        weights, factors = model
    else:
        raise TypeError(f"{name} must be a CPResult, APRResult, pyttb.ktensor or a (weights, factors) pair, "
                        f"got {type(model).__name__}")
    w = np.asarray(weights)
    if w.dtype.kind not in "biuf" or w.ndim != 1 or w.size == 0:
        raise ValueError(f"{name}: weights must be a non-empty 1-D array of real numbers, got shape {w.shape}")
    if isinstance(factors, (str, bytes)) or not hasattr(factors, "__len__") or len(factors) == 0:
        raise ValueError(f"{name}: factors must be a non-empty list of matrices")
    fs = [_matrix_arg(f, f"{name} factors[{m}]") for m, f in enumerate(factors)]
    for m, f in enumerate(fs):
        if f.shape[1] != w.size:
            raise ValueError(f"{name} factors[{m}] has {f.shape[1]} columns for {w.size} weights")
    return w, fs


class _KtensorHandle:
    """A library spt_ktensor holding a copy of a CP model, freed on exit."""

    def __init__(self, ctx, weights, factors, dtype):
        L = _lib.lib()
        self._ctx = ctx
        self.h = ctypes.c_void_p()
        dims = (ctypes.c_uint32 * len(factors))(*[f.shape[0] for f in factors])
        _lib.check(L.spt_ktensor_create(ctx._h, _DTYPES[dtype], len(factors), dims, weights.size,
                                        ctypes.byref(self.h)), "spt_ktensor_create", ctx._h)
        try:
            ctype = ctypes.c_double if dtype == np.float64 else ctypes.c_float
            lam = ctypes.c_void_p()
            _lib.check(L.spt_ktensor_lambda(self.h, ctypes.byref(lam)), "spt_ktensor_lambda")
            np.ctypeslib.as_array(ctypes.cast(lam, ctypes.POINTER(ctype)), (weights.size,))[:] = weights
            for m, f in enumerate(factors):
                fh, data = ctypes.c_void_p(), ctypes.c_void_p()
                _lib.check(L.spt_ktensor_factor(self.h, m, ctypes.byref(fh)), "spt_ktensor_factor")
                st = _lib.summary("spt_matrix_info", _lib.MatrixSummary, fh)
                _lib.check(L.spt_matrix_data(fh, ctypes.byref(data)), "spt_matrix_data")
                if st.layout == _lib.SPT_ROW_MAJOR:
                    view = np.ctypeslib.as_array(ctypes.cast(data, ctypes.POINTER(ctype)), (st.rows, st.ld))
                    view[:, :st.cols] = f
                else:
                    view = np.ctypeslib.as_array(ctypes.cast(data, ctypes.POINTER(ctype)), (st.cols, st.ld))
                    view[:, :st.rows] = f.T
        except BaseException:
            L.spt_ktensor_free(self.h)
            raise

    def __enter__(self):
        return self.h

    def __exit__(self, *exc):
        _lib.lib().spt_ktensor_free(self.h)
        return False


def ktensor_norm(model: CPModel, ctx: Optional[Context] = None) -> float:
    """Frobenius norm of a CP model (pyttb ``ktensor.norm()``), from the
    weights and the factors' Gram matrices, without forming the dense tensor.
    model: a CPResult, APRResult, pyttb.ktensor or (weights, factors) pair.
    Raises TypeError or ValueError naming `model` for anything else."""
    c = _ctx(ctx)
    w, fs = _model_arrays(model, "model")
    dtype = _common_dtype([w] + fs)
    r = ctypes.c_double()
    with _KtensorHandle(c, w, fs, dtype) as k:
        _lib.check(_lib.lib().spt_ktensor_norm(c._h, k, ctypes.byref(r)), "spt_ktensor_norm", c._h)
    return r.value


def _model_for(tensor, model, ctx):
    """The operand tensor and its CP model's arrays, checked against each other."""
    tensor = _operand(tensor, ctx)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"tensor must be a sptensor.Tensor or a pyttb.sptensor, got {type(tensor).__name__}")
    w, fs = _model_arrays(model, "model")
    shape = tuple(f.shape[0] for f in fs)
    if shape != tensor.shape:
        raise ValueError(f"model has shape {shape}, tensor has shape {tensor.shape}")
    return tensor, w, fs


def innerprod(tensor: TensorLike, model: CPModel, ctx: Optional[Context] = None) -> float:
    """Inner product <X, M> of a sparse tensor and a CP model of the same shape
    (pyttb ``ktensor.innerprod(X)``), accumulated in double; repeated
    coordinates of X count as summed. tensor: Tensor or pyttb.sptensor; model:
    a CPResult, APRResult, pyttb.ktensor or (weights, factors) pair (used in
    the tensor's dtype). Raises TypeError or ValueError (shapes differ)."""
    c = _ctx(ctx)
    tensor, w, fs = _model_for(tensor, model, ctx)
    r = ctypes.c_double()
    with _KtensorHandle(c, w, fs, tensor.dtype) as k:
        _lib.check(_lib.lib().spt_inner_ktensor(c._h, tensor._h, k, ctypes.byref(r)), "spt_inner_ktensor", c._h)
    return r.value


def loglikelihood(tensor: TensorLike, model: CPModel, ctx: Optional[Context] = None) -> float:
    """Poisson log-likelihood of a CP model for a nonnegative count tensor
    (pyttb ``tt_loglikelihood``, the value :func:`cp_apr` maximises): the sum
    over nonzeros of x log m minus the sum of all model entries. A nonzero
    whose model value is 0 gives -inf. tensor and model as :func:`innerprod`."""
    c = _ctx(ctx)
    tensor, w, fs = _model_for(tensor, model, ctx)
    r = ctypes.c_double()
    with _KtensorHandle(c, w, fs, tensor.dtype) as k:
        _lib.check(_lib.lib().spt_cp_apr_loglikelihood(c._h, tensor._h, k, ctypes.byref(r)),
                   "spt_cp_apr_loglikelihood", c._h)
    return r.value


def _cp_norm(self, ctx=None):
    """Frobenius norm of the model (:func:`ktensor_norm`; pyttb ktensor.norm())."""
    return ktensor_norm(self, ctx=ctx)


def _cp_innerprod(self, tensor, ctx=None):
    """<tensor, model> (:func:`innerprod`; pyttb ktensor.innerprod)."""
    return innerprod(tensor, self, ctx=ctx)


for _result_type in (CPResult, APRResult):
    _result_type.norm = _cp_norm
    _result_type.innerprod = _cp_innerprod


# ---------------------------------------------------------------------------
# Pictures: CPResult.viz (factor columns per component, as Tensor Toolbox /
# pyttb ktensor.viz) and plot_convergence (the per-iteration history) on every
# result. matplotlib is optional: imported on first use only. The figures are
# matplotlib.figure.Figure objects made without pyplot, so no GUI backend or
# global figure list is involved; Jupyter shows them, savefig writes them.
# ---------------------------------------------------------------------------
_PLOT_KINDS = ("line", "bar", "scatter")


def _new_figure(figsize):
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError("plotting needs matplotlib, which is not installed (pip install matplotlib)") from e
    return Figure(figsize=figsize)


def _integer_ticks(axis):
    from matplotlib.ticker import MaxNLocator
    axis.set_major_locator(MaxNLocator(integer=True))


def _viz(self, plots="line", mode_titles=None, path=None, figsize=None):
    """Draw the model's factor columns: one row per component, one column
    per mode (Tensor Toolbox / pyttb ``viz``). Needs matplotlib.

    plots: "line", "bar" or "scatter" for every mode, or a list with one
    of those per mode. mode_titles: one title per mode (default "Mode 1",
    "Mode 2", ...). path: also write the figure there (format from the
    extension: .png, .svg, .pdf, ...). figsize: (width, height) in inches
    (default: 2.5 x 1.2 per panel). Returns (figure, axes), axes[r][n]
    being component r + 1 in mode n + 1. Each row is labelled with its
    component number and weight."""
    factors = [np.asarray(f) for f in self.factors]
    order, rank = len(factors), len(self.weights)
    if rank == 0 or order == 0:
        raise ValueError("viz: the model has no components to draw")
    kinds = [plots] * order if isinstance(plots, str) else list(plots)
    if len(kinds) != order or any(k not in _PLOT_KINDS for k in kinds):
        raise ValueError(f"plots must be one of {', '.join(_PLOT_KINDS)} or a list of them, one per mode "
                         f"({order}); got {plots!r}")
    if mode_titles is None:
        mode_titles = [f"Mode {n + 1}" for n in range(order)]
    elif isinstance(mode_titles, str) or len(mode_titles) != order:
        raise ValueError(f"mode_titles must be a list of {order} titles, one per mode")
    fig = _new_figure(figsize or (2.5 * order + 0.8, 1.2 * rank + 0.6))
    axes = fig.subplots(rank, order, squeeze=False, sharex="col")
    for n in range(order):
        x = np.arange(1, factors[n].shape[0] + 1)
        for r in range(rank):
            ax, column = axes[r][n], factors[n][:, r]
            if kinds[n] == "bar":
                ax.bar(x, column, width=1.0)
            elif kinds[n] == "scatter":
                ax.scatter(x, column, s=4)
            else:
                ax.plot(x, column, linewidth=1.0)
            ax.axhline(0.0, color="0.75", linewidth=0.5)
            ax.tick_params(labelsize=7)
            _integer_ticks(ax.xaxis)
            if r == 0:
                ax.set_title(mode_titles[n], fontsize=9)
            if n == 0:
                ax.set_ylabel(f"{r + 1}\n({float(self.weights[r]):.3g})", fontsize=8, rotation=0,
                              ha="right", va="center")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig, axes


def _plot_convergence(self, path=None, ax=None, figsize=(5.0, 3.5)):
    """Draw the value after each iteration (fit, or the log-likelihood for
    :func:`cp_apr`) against the iteration number. Needs matplotlib.

    path: also write the figure there (format from the extension). ax: draw
    into this matplotlib Axes instead of a new figure. Returns (figure,
    axes)."""
    history = np.asarray(self.loglik_history if isinstance(self, APRResult) else self.fit_history, dtype=float)
    label = "log-likelihood" if isinstance(self, APRResult) else "fit"
    if ax is None:
        fig = _new_figure(figsize)
        ax = fig.subplots()
    else:
        fig = ax.figure
    ax.plot(np.arange(1, len(history) + 1), history, marker="o", markersize=3, linewidth=1.0)
    ax.set_xlabel("iteration")
    ax.set_ylabel(label)
    _integer_ticks(ax.xaxis)
    ax.grid(True, linewidth=0.3)
    if len(history):
        ax.set_title(f"final {label} {history[-1]:.6g} after {len(history)} iterations", fontsize=9)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig, ax


CPResult.viz = _viz
APRResult.viz = _viz
CPResult.plot_convergence = _plot_convergence
TuckerResult.plot_convergence = _plot_convergence
APRResult.plot_convergence = _plot_convergence


GCPResult = namedtuple("GCPResult", "weights factors objective iterations converged objective_history seconds")
GCPResult.__doc__ = """Result of :func:`gcp_opt`: weights (all 1, as pyttb's gcp_opt result),
factors (the optimised factor matrices, not normalised), the final objective,
L-BFGS-B iterations, converged flag, objective after each iteration and the
seconds since the start at each (GCP-SGD: the objective estimate, epochs,
and the estimate after each epoch). ``to_pyttb()`` gives a pyttb.ktensor."""
GCPResult.to_pyttb = _cp_to_pyttb

# Loss names (and pyttb.gcp.handles.Objectives member names, lower-cased) -> spt_gcp_loss.
_GCP_LOSSES = {"gaussian": 0, "normal": 0, "bernoulli_odds": 1, "bernoulli_logit": 2, "binary": 2,
               "poisson": 3, "poisson_log": 4, "count": 4, "rayleigh": 5, "gamma": 6, "huber": 7}
_GCP_OPTIMIZERS = {"lbfgsb": 0, "sgd": 1, "adam": 1}
# pyttb Adam attributes -> our GCP-SGD settings.
_PYTTB_ADAM = {"_rate": "rate", "_decay": "decay", "_max_fails": "max_fails", "_epoch_iters": "epoch_iters",
               "_f_est_tol": "f_est_tol", "_max_iters": "maxiter", "_beta_1": "beta_1", "_beta_2": "beta_2",
               "_epsilon": "epsilon"}


def _gcp_sample_counts(samples, name):
    """(nonzeros, zeros) from None (pyttb's defaults), an int (both), a pair or a
    pyttb StratifiedCount."""
    if samples is None:
        return 0, 0
    if hasattr(samples, "num_nonzeros") and hasattr(samples, "num_zeros"):
        samples = (samples.num_nonzeros, samples.num_zeros)
    if isinstance(samples, (tuple, list)):
        if len(samples) != 2:
            raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT", f"{name}: (nonzeros, zeros), got {samples!r}")
        return _integer(samples[0], name, 1, 2**62), _integer(samples[1], name, 1, 2**62)
    n = _integer(samples, name, 1, 2**62)
    return n, n


def _gcp_loss_code(loss):
    if hasattr(loss, "name") and not isinstance(loss, str):  # a pyttb Objectives member
        loss = loss.name
    return _choice(_GCP_LOSSES, str(loss).lower(), "loss")


def _gcp_missing(missing, shape, ctx):
    """The missing-entries tensor: a Tensor / pyttb.sptensor of missing
    coordinates, or pyttb's dense `mask` (a pyttb.tensor or array, 1 =
    observed, 0 = missing)."""
    if _is_pyttb(missing, "tensor") or isinstance(missing, np.ndarray):
        mask = np.asarray(missing.data if _is_pyttb(missing, "tensor") else missing)
        if tuple(mask.shape) != tuple(shape):
            raise InvalidArgumentError(-1, "SPT_ERR_INVALID_ARGUMENT",
                                       f"mask of shape {mask.shape} for a tensor of shape {tuple(shape)}")
        subs = np.argwhere(mask == 0)
        return coo(subs, np.ones(len(subs)), shape=tuple(shape), ctx=ctx)
    return _operand(missing, ctx)


def gcp_opt(tensor, rank, loss="gaussian", init="random", missing=None, lower_bound=None, huber_threshold=0.25,
            optimizer="lbfgsb", maxiter=1000, maxfun=15000, m=10, factr=1e7, pgtol=1e-5, seed=0, printitn=0,
            progress=False, ctx=None, rate=1e-3, decay=0.1, max_fails=1, epoch_iters=1000, f_est_tol=-np.inf,
            beta_1=0.9, beta_2=0.999, epsilon=1e-8, gradient_samples=None, function_samples=None):
    """Generalized CP decomposition by GCP-OPT (pyttb gcp_opt with its
    LBFGSB optimizer; Hong, Kolda & Duersch 2020): minimises the sum over
    every entry of the full tensor (zeros included) of loss(x, m).

    tensor: Tensor, pyttb.sptensor or pyttb.tensor (float64; at most
    1e8 entries). loss: "gaussian", "bernoulli_odds", "bernoulli_logit",
    "poisson" (identity link, factors >= 0), "poisson_log", "rayleigh",
    "gamma", "huber" (with huber_threshold), or a pyttb Objectives member.
    init: "random" (from `seed`), a list of factor matrices or a
    pyttb.ktensor (its factors). missing: coordinates left out of the fit
    (CP-WOPT): a Tensor or pyttb.sptensor of missing coordinates, or
    pyttb's dense mask (1 = observed). lower_bound: None = the loss's own
    (0 or -inf). maxiter, maxfun, m, factr, pgtol: scipy fmin_l_bfgs_b's
    (pyttb LBFGSB's).

    optimizer "sgd" (or "adam", or a pyttb.gcp.optimizers.Adam instance,
    whose settings are read) runs GCP-SGD, pyttb gcp_opt with its Adam
    solver and stratified sampler: any tensor size, zeros sampled; maxiter
    = epochs; rate, decay, max_fails, epoch_iters, f_est_tol, beta_1,
    beta_2, epsilon as pyttb's Adam; gradient_samples / function_samples:
    None (pyttb's defaults), an int (that many nonzeros and zeros), a
    (nonzeros, zeros) pair or a pyttb StratifiedCount; `seed` also seeds the
    samples. The result's objective is then the final estimate (from the
    objective sample) and iterations the epochs; missing is refused.

    printitn (objective and projected-gradient norm; GCP-SGD: estimate and
    learning rate per epoch), progress and Ctrl-C: as :func:`cp_als`.
    Returns a :class:`GCPResult`."""
    c = _ctx(ctx)
    tensor = _operand(tensor, ctx)
    L = _lib.lib()
    rank = _rank(rank)
    opts = _lib.init_options("spt_gcp_options_init_size", _lib.GcpOptions)
    opts.rank = rank
    opts.loss = _gcp_loss_code(loss)
    opts.loss_parameter = float(huber_threshold)
    if lower_bound is not None:
        opts.lower_bound = float(lower_bound)
    if not isinstance(optimizer, str) and type(optimizer).__name__ == "Adam" and hasattr(optimizer, "_rate"):
        adam = {ours: getattr(optimizer, theirs) for theirs, ours in _PYTTB_ADAM.items()}
        rate, decay, max_fails, epoch_iters = adam["rate"], adam["decay"], adam["max_fails"], adam["epoch_iters"]
        f_est_tol, maxiter = adam["f_est_tol"], adam["maxiter"]
        beta_1, beta_2, epsilon = adam["beta_1"], adam["beta_2"], adam["epsilon"]
        optimizer = "adam"
    opts.optimizer = _choice(_GCP_OPTIMIZERS, str(optimizer).lower(), "optimizer")
    sgd = opts.optimizer == _GCP_OPTIMIZERS["sgd"]
    if sgd:
        opts.rate, opts.decay, opts.f_est_tol = float(rate), float(decay), float(f_est_tol)
        opts.max_fails = _integer(max_fails, "max_fails", 0, _INT32_MAX)
        opts.epoch_iters = _iterations(epoch_iters, "epoch_iters")
        opts.beta1, opts.beta2, opts.epsilon = float(beta_1), float(beta_2), float(epsilon)
        opts.gradient_nonzeros, opts.gradient_zeros = _gcp_sample_counts(gradient_samples, "gradient_samples")
        opts.function_nonzeros, opts.function_zeros = _gcp_sample_counts(function_samples, "function_samples")
    opts.max_iters = _iterations(maxiter, "maxiter")
    opts.max_fun_evals = _iterations(maxfun, "maxfun")
    opts.memory = _iterations(m, "m")
    opts.factr, opts.pgtol = float(factr), float(pgtol)
    opts.seed = int(seed)
    missing_tensor = None
    if missing is not None:
        missing_tensor = _gcp_missing(missing, tensor.shape, ctx)
        opts.missing = missing_tensor._h
    control = _RunControl(_lib.GCP_CALLBACK, printitn, ("f-est", "step") if sgd else ("f", "|proj grad|"),
                          _progress.IterationBar(progress, "gcp_opt", opts.max_iters, "f"))
    opts.callback = control.c_function
    k = ctypes.c_void_p()
    with _Matrices() as mats, control:
        mats.set_init(c, opts, init, tensor.order, tensor.dtype)
        _lib.check(L.spt_gcp_opt(c._h, tensor._h, ctypes.byref(opts), ctypes.byref(k)), "spt_gcp_opt", c._h)
    try:
        f, iters, conv = ctypes.c_double(), ctypes.c_int(), ctypes.c_int()
        _lib.check(L.spt_ktensor_result(k, ctypes.byref(f), ctypes.byref(iters), ctypes.byref(conv)),
                   "spt_ktensor_result")
        lam = ctypes.c_void_p()
        _lib.check(L.spt_ktensor_lambda(k, ctypes.byref(lam)), "spt_ktensor_lambda")
        weights = _borrowed_array(lam, int(rank), tensor.dtype)
        factors = []
        for mode in range(tensor.order):
            fm = ctypes.c_void_p()
            _lib.check(L.spt_ktensor_factor(k, mode, ctypes.byref(fm)), "spt_ktensor_factor")
            factors.append(_copy_matrix(fm, tensor.dtype))
        fs, seconds = _history(L.spt_ktensor_history, k)
        return control.finish("gcp_opt", GCPResult(weights, factors, f.value, iters.value, bool(conv.value), fs,
                                                   seconds))
    finally:
        L.spt_ktensor_free(k)
        del missing_tensor


__all__ += ["GCPResult", "gcp_opt"]
