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

Every struct below mirrors include/sptensor/*.h field by field; the options
structs are initialised through the exported ``spt_X_options_init_size``
with ``ctypes.sizeof`` of the Structure, and :func:`init_options` checks that
the library wrote exactly that many bytes (a layout mismatch fails loudly
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

# --- constants of include/sptensor/sptensor.h ---------------------------------
SPT_OK = 0
SPT_WARN_NOT_CONVERGED = 1
SPT_FLOAT32 = 1
SPT_FLOAT64 = 2
SPT_ROW_MAJOR = 0
SPT_COL_MAJOR = 1

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

CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_double, ctypes.c_double,
                            ctypes.c_double)


class CpdOptions(ctypes.Structure):
    """spt_cpd_options (sptensor.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("rank", u32),
        ("max_iters", i32),
        ("tol", f64),
        ("init", i32),
        ("seed", u64),
        ("init_factors", pvp),
        ("callback", CALLBACK),
        ("callback_data", vp),
        ("format", i32),
        ("csf_policy", i32),
        ("memo_budget_bytes", u64),
    ]


class TuckerOptions(ctypes.Structure):
    """spt_tucker_options (tucker.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("ranks", pu32),
        ("ranks_count", u32),
        ("max_iters", i32),
        ("tol", f64),
        ("init", i32),
        ("seed", u64),
        ("init_factors", pvp),
        ("callback", CALLBACK),
        ("callback_data", vp),
        ("ttmc", i32),
    ]


class ReadOptions(ctypes.Structure):
    """spt_read_options (sptensor.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("format", i32),
        ("dtype", i32),
        ("index_base", i32),
        ("order", u32),
        ("dims", pu32),
        ("duplicates", i32),
        ("reject_nonfinite", i32),
        ("copy_binary", i32),
        ("map_binary", ctypes.c_int64),
    ]


class WriteOptions(ctypes.Structure):
    """spt_write_options (sptensor.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("format", i32),
        ("compression", i32),
        ("index_base", i32),
        ("precision", i32),
    ]


class HicooOptions(ctypes.Structure):
    """spt_hicoo_options (hicoo.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("block_size", u32),
        ("superblock_size", u32),
        ("strategy", i32),
    ]


class HicooStatistics(ctypes.Structure):
    """spt_hicoo_statistics (hicoo.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("reason", ctypes.c_char_p),
        ("reason_capacity", size_t),
        ("reason_length", size_t),
        ("order", u32),
        ("block_size", u32),
        ("superblock_size", u32),
        ("threads", i32),
        ("nnz", u64),
        ("num_blocks", u64),
        ("num_superblocks", u64),
        ("block_ratio", f64),
        ("block_ratio_threshold", f64),
        ("mean_nnz_per_block", f64),
        ("geomean_nnz_per_block", f64),
        ("slice_per_block", f64),
        ("hicoo_bytes", u64),
        ("coo_bytes", u64),
        ("suggested_block_size", u32),
        ("suggested_superblock_size", u32),
    ]


class HicooSummary(ctypes.Structure):
    """spt_hicoo_summary (hicoo.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("dtype", i32),
        ("order", u32),
        ("nnz", u64),
        ("block_size", u32),
        ("superblock_size", u32),
        ("bytes", u64),
    ]


class CsfOptions(ctypes.Structure):
    """spt_csf_options (csf.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("policy", i32),
    ]


class FcooOptions(ctypes.Structure):
    """spt_fcoo_options (fcoo.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("operation", i32),
        ("mode", u32),
        ("threadlen", u32),
    ]


class FcooSummary(ctypes.Structure):
    """spt_fcoo_summary (fcoo.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("dtype", i32),
        ("order", u32),
        ("nnz", u64),
        ("operation", i32),
        ("mode", u32),
        ("threadlen", u32),
        ("segments", u64),
        ("bytes", u64),
    ]


class HbcsfOptions(ctypes.Structure):
    """spt_hbcsf_options (hbcsf.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("root_mode", u32),
        ("fiber_threshold", u32),
        ("slice_split_nnz", u32),
        ("slice_bin_min_nnz", u32),
        ("flags", u32),
    ]


class HbcsfSummary(ctypes.Structure):
    """spt_hbcsf_summary (hbcsf.h)."""
    _fields_ = [("struct_size", size_t), ("dtype", i32)] + [
        (name, u32) for name in ("order", "root_mode", "flags", "fiber_threshold", "slice_split_nnz",
                                 "slice_bin_min_nnz", "bins")
    ] + [
        (name, u64) for name in ("nnz", "coo_nnz", "csl_nnz", "bcsf_nnz", "coo_slices", "csl_slices", "bcsf_slices",
                                 "bcsf_fibers", "bcsf_segments", "split_fibers", "units", "split_slices", "bytes",
                                 "coo_bytes")
    ]


class HlsOptions(ctypes.Structure):
    """spt_hls_options (hls.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("root_mode", u32),
        ("dense_threshold", u32),
        ("slab_depth", u32),
        ("precision", u64),
    ]


class HlsSummary(ctypes.Structure):
    """spt_hls_summary (hls.h)."""
    _fields_ = [("struct_size", size_t), ("dtype", i32)] + [
        (name, u32) for name in ("order", "root_mode", "dense_threshold", "slab_depth", "index_bits")
    ] + [
        (name, u64) for name in ("input_nnz", "nnz", "tiles", "dense_tiles", "sparse_tiles", "dense_nnz", "sparse_nnz")
    ] + [("dense_fraction", ctypes.c_double), ("bytes", u64), ("coo_bytes", u64), ("build_seconds", ctypes.c_double),
         ("precision", i32), ("threshold_calibrated", u32)]


class CooSummary(ctypes.Structure):
    """spt_coo_summary (sptensor.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("dtype", i32),
        ("order", u32),
        ("nnz", u64),
        ("read_only", i32),
    ]


class ScooSummary(ctypes.Structure):
    """spt_scoo_summary (sptensor.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("dtype", i32),
        ("order", u32),
        ("dense_mode", u32),
        ("dense_mode_count", u32),
        ("nfibers", u64),
        ("block_length", u64),
    ]


class MatrixSummary(ctypes.Structure):
    """spt_matrix_summary (sptensor.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("dtype", i32),
        ("layout", i32),
        ("rows", u64),
        ("cols", u64),
        ("ld", u64),
        ("wrapped", i32),
    ]


class KtensorSummary(ctypes.Structure):
    """spt_ktensor_summary (sptensor.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("dtype", i32),
        ("order", u32),
        ("rank", u32),
        ("iterations", i32),
        ("fit", f64),
        ("converged", i32),
    ]


class TtensorSummary(ctypes.Structure):
    """spt_ttensor_summary (tucker.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("dtype", i32),
        ("order", u32),
        ("fit", f64),
        ("iterations", i32),
        ("converged", i32),
    ]


class DenseSummary(ctypes.Structure):
    """spt_dense_summary (dense.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("dtype", i32),
        ("order", u32),
        ("count", u64),
    ]


class PermutationSummary(ctypes.Structure):
    """spt_permutation_summary (reorder.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("order", u32),
    ]


CSF_SUMMARY_MAX_ORDER = 16


class CsfSummary(ctypes.Structure):
    """spt_csf_summary (csf.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("dtype", i32),
        ("order", u32),
        ("nnz", u64),
        ("policy", i32),
        ("trees", u32),
        ("bytes", u64),
        ("mode_order", (u32 * CSF_SUMMARY_MAX_ORDER) * CSF_SUMMARY_MAX_ORDER),
        ("tree_for_mode", u32 * CSF_SUMMARY_MAX_ORDER),
    ]


class BackendInfo(ctypes.Structure):
    """spt_backend_info (sptensor.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("requested", i32),
        ("backend", i32),
        ("cuda_available", i32),
        ("device", i32),
        ("device_count", i32),
        ("device_name", ctypes.c_char * 256),
        ("device_total_memory", u64),
        ("compute_capability_major", i32),
        ("compute_capability_minor", i32),
        ("plugin_path", ctypes.c_char * 1024),
        ("reason", ctypes.c_char * 1024),
    ]


APR_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_double, ctypes.c_double,
                                ctypes.c_double)


class CpAprOptions(ctypes.Structure):
    """spt_cp_apr_options (cp_apr.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("rank", u32),
        ("max_outer_iters", i32),
        ("max_inner_iters", i32),
        ("tol", f64),
        ("kappa", f64),
        ("kappatol", f64),
        ("epsilon", f64),
        ("init", i32),
        ("seed", u64),
        ("init_factors", pvp),
        ("callback", APR_CALLBACK),
        ("callback_data", vp),
        ("format", i32),
    ]


class ReorderOptions(ctypes.Structure):
    """spt_reorder_options (reorder.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("method", i32),
        ("iterations", i32),
        ("seed", u64),
    ]


class FormatAdvice(ctypes.Structure):
    """spt_format_advice (sptensor.h)."""
    _fields_ = [
        ("struct_size", size_t),
        ("reason", ctypes.c_char_p),
        ("reason_capacity", size_t),
        ("reason_length", size_t),
        ("format", i32),
        ("csf_policy", i32),
        ("block_ratio", f64),
        ("slice_per_block", f64),
    ]


# name -> (restype, argtypes); restype None for void functions.
SIGNATURES = {
    "spt_version": (ctypes.c_char_p, []),
    "spt_version_numbers": (None, [pi32, pi32, pi32]),
    "spt_status_string": (ctypes.c_char_p, [i32]),
    "spt_last_error": (ctypes.c_char_p, [vp]),
    "spt_thread_last_error": (ctypes.c_char_p, []),
    "spt_context_create": (i32, [pvp]),
    "spt_context_free": (i32, [vp]),
    "spt_context_set_threads": (i32, [vp, i32]),
    "spt_context_get_threads": (i32, [vp, pi32]),
    "spt_context_set_backend": (i32, [vp, i32]),
    "spt_context_get_backend": (i32, [vp, pi32]),
    "spt_context_set_device": (i32, [vp, i32]),
    "spt_context_set_seed": (i32, [vp, u64]),
    "spt_context_backend_info": (i32, [vp, ctypes.POINTER(BackendInfo)]),
    "spt_matrix_wrap": (i32, [vp, i32, u64, u64, i32, vp, u64, pvp]),
    "spt_matrix_free": (i32, [vp]),
    "spt_matrix_info": (i32, [vp, vp, ctypes.POINTER(MatrixSummary)]),
    "spt_matrix_copy_out": (i32, [vp, i32, vp, u64]),
    "spt_coo_create_from_arrays": (i32, [vp, i32, u32, pu32, u64, vp, u64, i32, vp, i32, pvp]),
    "spt_coo_create_view": (i32, [vp, i32, u32, pu32, u64, vp, u64, vp, pvp]),
    "spt_coo_copy": (i32, [vp, vp, pvp]),
    "spt_coo_convert_dtype": (i32, [vp, vp, i32, pvp]),
    "spt_coo_free": (i32, [vp]),
    "spt_coo_info": (i32, [vp, vp, ctypes.POINTER(CooSummary)]),
    "spt_coo_dims": (i32, [vp, pu32]),
    "spt_coo_file_dtype": (i32, [vp, pi32]),
    "spt_coo_indices": (i32, [vp, u32, pvp]),
    "spt_coo_values": (i32, [vp, pvp]),
    "spt_coo_norm": (i32, [vp, vp, pf64]),
    "spt_coo_count_distinct": (i32, [vp, vp, pu64]),
    "spt_coo_coalesce": (i32, [vp, vp, i32]),
    "spt_mttkrp": (i32, [vp, vp, pvp, u32, vp]),
    "spt_read_options_init_size": (i32, [ctypes.POINTER(ReadOptions), size_t]),
    "spt_read": (i32, [vp, ctypes.c_char_p, ctypes.POINTER(ReadOptions), pvp]),
    "spt_write_options_init_size": (i32, [ctypes.POINTER(WriteOptions), size_t]),
    "spt_write": (i32, [vp, vp, ctypes.c_char_p, ctypes.POINTER(WriteOptions)]),
    "spt_cpd_options_init_size": (i32, [ctypes.POINTER(CpdOptions), size_t]),
    "spt_cpd_als": (i32, [vp, vp, ctypes.POINTER(CpdOptions), pvp]),
    "spt_cpd_als_csf": (i32, [vp, vp, ctypes.POINTER(CpdOptions), pvp]),
    "spt_suggest_format": (i32, [vp, vp, u32, ctypes.POINTER(FormatAdvice)]),
    "spt_ktensor_free": (i32, [vp]),
    "spt_ktensor_info": (i32, [vp, vp, ctypes.POINTER(KtensorSummary)]),
    "spt_ktensor_dims": (i32, [vp, pu32]),
    "spt_ktensor_lambda": (i32, [vp, pvp]),
    "spt_ktensor_factor": (i32, [vp, u32, pvp]),
    "spt_ktensor_result": (i32, [vp, pf64, pi32, pi32]),
    "spt_ktensor_history": (i32, [vp, pi32, ppf64, ppf64]),
    "spt_tucker_options_init_size": (i32, [ctypes.POINTER(TuckerOptions), size_t]),
    "spt_tucker_hooi": (i32, [vp, vp, ctypes.POINTER(TuckerOptions), pvp]),
    "spt_ttensor_free": (i32, [vp]),
    "spt_ttensor_info": (i32, [vp, vp, ctypes.POINTER(TtensorSummary)]),
    "spt_ttensor_core_dims": (i32, [vp, pu32, pu32]),
    "spt_ttensor_core": (i32, [vp, pvp]),
    "spt_ttensor_factor": (i32, [vp, u32, pvp]),
    "spt_ttensor_history": (i32, [vp, pi32, ppf64, ppf64]),
    "spt_hicoo_options_init_size": (i32, [ctypes.POINTER(HicooOptions), size_t]),
    "spt_hicoo_from_coo": (i32, [vp, vp, ctypes.POINTER(HicooOptions), pvp]),
    "spt_hicoo_to_coo": (i32, [vp, vp, pvp]),
    "spt_hicoo_free": (i32, [vp]),
    "spt_hicoo_info": (i32, [vp, vp, ctypes.POINTER(HicooSummary)]),
    "spt_hicoo_dims": (i32, [vp, pu32]),
    "spt_hicoo_stats": (i32, [vp, vp, ctypes.POINTER(HicooStatistics)]),
    "spt_mttkrp_hicoo": (i32, [vp, vp, pvp, u32, vp]),
    "spt_csf_options_init_size": (i32, [ctypes.POINTER(CsfOptions), size_t]),
    "spt_csf_from_coo": (i32, [vp, vp, ctypes.POINTER(CsfOptions), pvp]),
    "spt_csf_free": (i32, [vp]),
    "spt_csf_info": (i32, [vp, vp, ctypes.POINTER(CsfSummary)]),
    "spt_csf_dims": (i32, [vp, pu32]),
    "spt_csf_to_coo": (i32, [vp, vp, pvp]),
    "spt_mttkrp_csf": (i32, [vp, vp, pvp, u32, vp]),
    # TTV / TTM family and semi-sparse results (sptensor.h)
    "spt_ttv": (i32, [vp, vp, u32, vp, u64, pvp]),
    "spt_ttv_chain": (i32, [vp, vp, u32, pvp, vp]),
    "spt_ttv_all": (i32, [vp, vp, pvp, pf64]),
    "spt_ttm": (i32, [vp, vp, u32, vp, pvp]),
    "spt_scoo_ttm": (i32, [vp, vp, u32, vp, pvp]),
    "spt_ttm_chain": (i32, [vp, vp, u32, pu32, pvp, pvp]),
    "spt_scoo_free": (i32, [vp]),
    "spt_scoo_info": (i32, [vp, vp, ctypes.POINTER(ScooSummary)]),
    "spt_scoo_dims": (i32, [vp, pu32]),
    "spt_scoo_dense_modes": (i32, [vp, pu32, pu32]),
    "spt_scoo_indices": (i32, [vp, u32, pvp]),
    "spt_scoo_values": (i32, [vp, pvp]),
    "spt_scoo_to_coo": (i32, [vp, vp, pvp]),
    # F-COO (fcoo.h)
    "spt_fcoo_suggest_threadlen": (i32, [u64, u32, i32, i32, pu32]),
    "spt_fcoo_options_init_size": (i32, [ctypes.POINTER(FcooOptions), size_t]),
    "spt_fcoo_from_coo": (i32, [vp, vp, ctypes.POINTER(FcooOptions), pvp]),
    "spt_fcoo_free": (i32, [vp]),
    "spt_hbcsf_options_init_size": (i32, [ctypes.POINTER(HbcsfOptions), size_t]),
    "spt_hbcsf_from_coo": (i32, [vp, vp, ctypes.POINTER(HbcsfOptions), pvp]),
    "spt_hbcsf_free": (i32, [vp]),
    "spt_hbcsf_info": (i32, [vp, vp, ctypes.POINTER(HbcsfSummary)]),
    "spt_hbcsf_to_coo": (i32, [vp, vp, pvp]),
    "spt_mttkrp_hbcsf": (i32, [vp, vp, pvp, u32, vp]),
    # HLS (hls.h)
    "spt_hls_options_init_size": (i32, [ctypes.POINTER(HlsOptions), size_t]),
    "spt_hls_from_coo": (i32, [vp, vp, ctypes.POINTER(HlsOptions), pvp]),
    "spt_hls_free": (i32, [vp]),
    "spt_hls_info": (i32, [vp, vp, ctypes.POINTER(HlsSummary)]),
    "spt_hls_to_coo": (i32, [vp, vp, pvp]),
    "spt_mttkrp_hls": (i32, [vp, vp, pvp, u32, vp]),
    "spt_ttmc_hls": (i32, [vp, vp, pvp, vp]),
    "spt_fcoo_info": (i32, [vp, vp, ctypes.POINTER(FcooSummary)]),
    "spt_fcoo_dims": (i32, [vp, pu32]),
    "spt_fcoo_to_coo": (i32, [vp, vp, pvp]),
    "spt_mttkrp_fcoo": (i32, [vp, vp, pvp, u32, vp]),
    "spt_ttm_fcoo": (i32, [vp, vp, vp, pvp]),
    "spt_ttmc_fcoo": (i32, [vp, vp, pvp, vp]),
    # dense tensors (dense.h)
    "spt_dense_create_copy": (i32, [vp, i32, u32, pu32, vp, pvp]),
    "spt_dense_free": (i32, [vp]),
    "spt_dense_info": (i32, [vp, vp, ctypes.POINTER(DenseSummary)]),
    "spt_dense_dims": (i32, [vp, pu32]),
    "spt_dense_data_const": (i32, [vp, pvp]),
    "spt_dense_norm": (i32, [vp, vp, pf64]),
    "spt_dense_from_coo": (i32, [vp, vp, u64, pvp]),
    "spt_dense_to_coo": (i32, [vp, vp, pvp]),
    # CP-APR (cp_apr.h), elementwise operations and unfoldings (sptensor.h)
    "spt_cp_apr_options_init_size": (i32, [ctypes.POINTER(CpAprOptions), size_t]),
    "spt_cp_apr": (i32, [vp, vp, ctypes.POINTER(CpAprOptions), pvp]),
    "spt_elementwise": (i32, [vp, i32, vp, vp, pvp]),
    "spt_elementwise_scalar": (i32, [vp, i32, vp, f64, pvp]),
    "spt_unfold_csr": (i32, [vp, vp, u32, pvp]),
    "spt_csr_free": (i32, [vp]),
    "spt_csr_arrays": (i32, [vp, pi32, pu64, pu64, pu64, pvp, pvp, pvp]),
    # reordering (reorder.h)
    "spt_reorder_options_init_size": (i32, [ctypes.POINTER(ReorderOptions), size_t]),
    "spt_reorder_compute": (i32, [vp, vp, ctypes.POINTER(ReorderOptions), pvp]),
    "spt_permutation_create": (i32, [vp, u32, pu32, pvp, i32, pvp]),
    "spt_permutation_free": (i32, [vp]),
    "spt_permutation_info": (i32, [vp, vp, ctypes.POINTER(PermutationSummary)]),
    "spt_permutation_dims": (i32, [vp, pu32]),
    "spt_permutation_get": (i32, [vp, u32, pu32, u64, i32]),
    "spt_permutation_inverse": (i32, [vp, vp, pvp]),
    "spt_coo_relabeled_copy": (i32, [vp, vp, vp, pvp]),
    "spt_matrix_permute_rows": (i32, [vp, vp, vp, u32]),
    "spt_matrix_unpermute_rows": (i32, [vp, vp, vp, u32]),
}


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
