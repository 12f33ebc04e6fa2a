"""Finding and loading libsptensor.so, and the ctypes view of its C ABI.

The shared library is located lazily, on the first call that needs it, so
``import sptensor`` always succeeds; a missing library raises
:class:`LibraryNotFoundError` at that first use with what was tried and how
to fix it. Search order:

1. ``SPTENSOR_LIBRARY``: the library file, or a directory holding it (an
   explicit choice: nothing else is tried);
2. the package's own copy, ``sptensor/libsptensor.so.1``, which a wheel built
   by ``pip install ./python`` contains;
3. ``pkg-config --variable=libdir sptensor`` (honours ``PKG_CONFIG_PATH``);
4. ``ctypes.util.find_library("sptensor")`` (the loader cache, ``LD_LIBRARY_PATH``);
5. common install prefixes (``sys.prefix``, ``/usr/local``, ``/usr``, ``/opt/sptensor``, ``~/.local``).

The structs and function prototypes come from _capi.py, generated from
include/sptensor/*.h by scripts/gen_bindings.py (ctest bindings_up_to_date
fails when it is stale); the options structs are initialised through the
exported ``spt_X_options_init_size`` with ``ctypes.sizeof`` of the
Structure, and :func:`init_options` checks that the library wrote exactly
that many bytes (a layout mismatch fails loudly
instead of corrupting memory).
"""
import ctypes
import ctypes.util
import os
import shutil
import subprocess
import sys
import threading

SONAME = "libsptensor.so.1"  # the ABI this package is written against
ABI_MAJOR = 1


def _load_capi():
    """The generated ctypes view of the headers (_capi.py, beside this file).
    Imported as the package's submodule; loaded by path when this file is
    used alone (stdlib only, as the client test does)."""
    if __package__:
        from . import _capi
        return _capi
    import importlib.util
    spec = importlib.util.spec_from_file_location("sptensor_capi", os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "_capi.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_capi = _load_capi()
# Every enumerator, #define, struct (C name and CamelCase alias, e.g.
# CpdOptions) and callback type of the headers, and SIGNATURES.
globals().update({k: v for k, v in vars(_capi).items() if not k.startswith("_") and k != "ctypes"})
SIGNATURES = _capi.SIGNATURES

# Short names for the ctypes types the package passes.
vp = ctypes.c_void_p
pvp = ctypes.POINTER(ctypes.c_void_p)
u32 = ctypes.c_uint32
u64 = ctypes.c_uint64
i32 = ctypes.c_int
f64 = ctypes.c_double
size_t = ctypes.c_size_t
pu32 = ctypes.POINTER(ctypes.c_uint32)
pu64 = ctypes.POINTER(ctypes.c_uint64)
pi32 = ctypes.POINTER(ctypes.c_int)
pf64 = ctypes.POINTER(ctypes.c_double)
ppf64 = ctypes.POINTER(pf64)

CALLBACK = _capi.spt_cpd_callback         # CP-ALS and Tucker per-iteration callbacks
APR_CALLBACK = _capi.spt_cp_apr_callback  # CP-APR per-outer-iteration callback
GCP_CALLBACK = _capi.spt_gcp_callback     # GCP-OPT per-iteration callback
CSF_SUMMARY_MAX_ORDER = _capi.SPT_CSF_SUMMARY_MAX_ORDER


PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class LibraryNotFoundError(RuntimeError):
    """libsptensor.so could not be found or loaded (raised at first use, not at import)."""


def _candidates():
    """(where it came from, path) pairs in search order."""
    names = (SONAME, "libsptensor.so")
    env = os.environ.get("SPTENSOR_LIBRARY")
    if env:
        if os.path.isdir(env):
            for n in names:
                yield "SPTENSOR_LIBRARY", os.path.join(env, n)
        else:
            yield "SPTENSOR_LIBRARY", env
        return  # an explicit choice is not second-guessed
    # The copy inside the package (a wheel built with the library; absent in
    # the pure-Python install).
    yield "package", os.path.join(PACKAGE_DIR, SONAME)
    if shutil.which("pkg-config"):
        try:
            libdir = subprocess.run(["pkg-config", "--variable=libdir", "sptensor"], capture_output=True,
                                    text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            libdir = ""
        if libdir:
            # sptensor.pc derives libdir from its own location
            # (${pcfiledir}/../../lib): it contains "..", and is relative
            # when PKG_CONFIG_PATH is. Resolve it as the compiler's -L does
            # (realpath, not a lexical normpath, in case of symlinks).
            libdir = os.path.realpath(libdir)
            for n in names:
                yield "pkg-config", os.path.join(libdir, n)
    found = ctypes.util.find_library("sptensor")
    if found:
        yield "ctypes.util.find_library", found
    prefixes = [sys.prefix, "/usr/local", "/usr", "/opt/sptensor", os.path.expanduser("~/.local")]
    for prefix in prefixes:
        for libdir in ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"):
            for n in names:
                yield "prefix " + prefix, os.path.join(prefix, libdir, n)


_lock = threading.Lock()
_lib = None
_path = None


def _bind(lib):
    for name, (restype, argtypes) in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    major, minor, patch = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    lib.spt_version_numbers(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch))
    if major.value != ABI_MAJOR:
        raise LibraryNotFoundError(f"the loaded libsptensor is version {major.value}.{minor.value}.{patch.value}, "
                                   f"this package needs ABI {ABI_MAJOR} ({SONAME})")
    return lib


def lib():
    """The loaded library (loaded and bound on first call)."""
    global _lib, _path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for source, path in _candidates():
            if os.path.sep in path and not os.path.exists(path):
                tried.append(f"  {path} ({source}): no such file")
                continue
            try:
                handle = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"  {path} ({source}): {e}")
                continue
            try:
                _lib = _bind(handle)
            except AttributeError as e:
                tried.append(f"  {path} ({source}): too old, missing a function ({e})")
                continue
            _path = path
            return _lib
        raise LibraryNotFoundError(
            "sptensor: the shared library libsptensor.so (" + SONAME + ") was not found.\n"
            "pip install ./python (from the libsptensor source tree) builds it into the package; or\n"
            "build and install it (from the libsptensor source tree):\n"
            "  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build\n"
            "  cmake --install build --prefix /usr/local   # then: sudo ldconfig\n"
            "or point the package at it:  export SPTENSOR_LIBRARY=/path/to/libsptensor.so.1 (or its directory)\n"
            "Tried:\n" + ("\n".join(tried) if tried else "  (no candidates)"))


def library_path():
    """Path (or loader name) of the loaded libsptensor; loads it if needed."""
    lib()
    return _path


def init_options(init_size_name, struct_type):
    """A struct_type filled with the library's defaults through the exported
    spt_X_options_init_size(opts, sizeof). The library writes
    min(our size, its size) bytes and stores that count in struct_size: a
    smaller count means an older library (fields past it keep our zeros and
    are ignored by that library); anything else means the layouts disagree."""
    opts = struct_type()
    check(getattr(lib(), init_size_name)(ctypes.byref(opts), ctypes.sizeof(struct_type)), init_size_name)
    if opts.struct_size > ctypes.sizeof(struct_type):
        raise RuntimeError(f"{init_size_name}: options layout mismatch: library wrote {opts.struct_size} bytes, "
                           f"the Python mirror has {ctypes.sizeof(struct_type)}")
    return opts


def summary(info_name, struct_type, handle, ctx=None):
    """A struct_type filled by spt_X_info(ctx, handle, &s) with s.struct_size
    = ctypes.sizeof(struct_type), as every spt_X_info wants; raises the
    matching SptensorError on failure."""
    s = struct_type()
    s.struct_size = ctypes.sizeof(struct_type)
    check(getattr(lib(), info_name)(ctx, handle, ctypes.byref(s)), info_name, ctx)
    return s


# --- errors -----------------------------------------------------------------------
class SptensorError(Exception):
    """An error status returned by libsptensor.

    Attributes: ``status`` (the negative spt_status code), ``status_name``
    (e.g. ``"SPT_ERR_PARSE"``), ``message`` (the library's sentence:
    what went wrong, where, what to do) and ``function`` (the C function)."""

    def __init__(self, status, status_name, message, function=""):
        self.status = status
        self.status_name = status_name
        self.message = message
        self.function = function
        super().__init__(f"{status_name} ({status}) in {function}: {message}" if function
                         else f"{status_name} ({status}): {message}")


class InvalidArgumentError(SptensorError, ValueError):
    """SPT_ERR_INVALID_ARGUMENT."""


class FileIOError(SptensorError, OSError):
    """SPT_ERR_IO."""


class FileMissingError(FileIOError, FileNotFoundError):
    """SPT_ERR_IO for a file that does not exist: also a FileNotFoundError."""


class ParseError(SptensorError, ValueError):
    """SPT_ERR_PARSE (the message gives file:line)."""


class OutOfMemoryError(SptensorError, MemoryError):
    """SPT_ERR_OUT_OF_MEMORY."""


class UnsupportedError(SptensorError, NotImplementedError):
    """SPT_ERR_UNSUPPORTED."""


class DeviceError(SptensorError):
    """SPT_ERR_DEVICE."""


class NumericalError(SptensorError, ArithmeticError):
    """SPT_ERR_NUMERICAL."""


class OverflowSizeError(SptensorError, OverflowError):
    """SPT_ERR_OVERFLOW."""


class ReadOnlyError(SptensorError):
    """SPT_ERR_READ_ONLY."""


_ERROR_CLASSES = {
    -1: InvalidArgumentError,
    -2: FileIOError,
    -3: ParseError,
    -4: OutOfMemoryError,
    -5: UnsupportedError,
    -6: DeviceError,
    -8: NumericalError,
    -9: OverflowSizeError,
    -10: ReadOnlyError,
}


def status_name(status):
    """spt_status_string(status) as str."""
    return lib().spt_status_string(status).decode()


def check(status, function, ctx=None, allowed=(SPT_OK, SPT_WARN_NOT_CONVERGED)):
    """Raise the matching SptensorError subclass when status is not allowed.
    The message comes from the context (when given) or the thread's slot."""
    if status in allowed or (status > 0 and SPT_WARN_NOT_CONVERGED in allowed):
        return status
    raw = lib().spt_last_error(ctx) if ctx else lib().spt_thread_last_error()
    message = raw.decode(errors="replace") if raw else ""
    cls = _ERROR_CLASSES.get(status, SptensorError)
    raise cls(status, status_name(status), message, function)
