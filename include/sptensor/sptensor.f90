! libsptensor: Fortran 2008 module over the C ABI (iso_c_binding).
!
!   use sptensor
!
! Build (installed library, gfortran):
!   gfortran prog.f90 $(pkg-config --cflags --libs sptensor-fortran)
! or in CMake: find_package(sptensor) and link sptensor::sptensor_fortran.
! The installed include/sptensor.mod and lib/libsptensor_fortran.a (this
! module's own procedures) are gfortran's; with another compiler, compile
! this file (installed as include/sptensor/sptensor.f90) with your program
! and link -lsptensor.
!
! What the module holds:
!  - Every enumerator of the C headers as a named integer(c_int) constant with
!    the same name and value (SPT_OK, SPT_ERR_PARSE, SPT_FLOAT64,
!    SPT_COL_MAJOR, ...). A CTest test checks each against the C header.
!  - Handles (spt_context*, spt_coo*, spt_matrix*, spt_ktensor*, spt_ttensor*)
!    as type(c_ptr); initialise them to c_null_ptr.
!  - bind(c) derived types with exactly the C layout for the option and
!    info structs (spt_cpd_options, spt_read_options, spt_write_options,
!    spt_tucker_options, spt_cp_apr_options, spt_X_options and spt_X_summary
!    of every format X = csf, hicoo, fcoo, hbcsf, hls, ..., and the
!    spt_X_summary of every core object X = coo, scoo, matrix, ktensor,
!    ttensor, dense, permutation). Set info%struct_size = c_sizeof(info)
!    before an spt_X_info call.
!  - Interfaces to the C functions under their C names. They return the
!    spt_status (integer(c_int)) as a function result. Conventions of the C
!    API carry over unchanged: `mode` arguments are 0-based, strings passed
!    to the raw interfaces must end in c_null_char, unsigned C integers
!    (spt_index, uint32_t, spt_nnz) map to integer(c_int32_t) /
!    integer(c_int64_t) of the same size.
!  - Fortran conveniences: spt_<x>_options_init(opts) (the C header's macros,
!    which call spt_<x>_options_init_size(opts, c_sizeof(opts))), and sptf_*
!    procedures that take Fortran strings and arrays:
!      sptf_read / sptf_write           (Fortran strings for paths)
!      sptf_last_error, sptf_thread_last_error, sptf_status_string, sptf_version
!      sptf_matrix_wrap(ctx, a, m)      (wraps a 2-D real array in place, column-major)
!      sptf_coo_from_arrays(ctx, subs, vals, x [, dims])   (1-based nnz x order subs)
!      sptf_ktensor_lambda(k, lambda), sptf_ktensor_factor(k, mode, a),
!      sptf_matrix_copy(m, a)           (float64 copies into Fortran arrays)
!      sptf_context_backend_info(ctx, info), sptf_c_chars(info%device_name)
!    and the abstract interface spt_cpd_callback for CP-ALS / Tucker callbacks.
!  - Every function of sptensor.h and the headers it includes (csf.h,
!    hicoo.h, reorder.h, tucker.h, cp_apr.h, dense.h, fcoo.h, hbcsf.h, hls.h), callbacks as
!    type(c_funptr): context (threads, backend, device, backend info),
!    errors, version; dense matrices, Khatri-Rao and Kronecker products;
!    COO creation, views, editing, sorting, norm; semi-sparse and CSR
!    results; TTV, TTV chains, TTM, TTM chains, semi-sparse TTM,
!    elementwise ops, unfoldings; MTTKRP on COO, CSF, HiCOO, F-COO, HB-CSF and HLS;
!    F-COO TTM and TTMc; dense tensors; reordering and permutations; format
!    advice and statistics; read/write; CP-ALS (COO and CSF), CP-APR,
!    Tucker-HOOI; ktensor and ttensor access. The distributed API
!    (sptensor_mpi.h) is the separate module sptensor_mpi (sptensor_mpi.f90,
!    built when MPI is).
!
! Avoiding copies: sptf_matrix_wrap passes the array's storage to the library
! with the SPT_COL_MAJOR layout flag and ld = size(a, 1), so factor matrices
! and MTTKRP outputs are read and written in place. The array must be
! contiguous and have the TARGET attribute, and it must stay alive (and not be
! reallocated) until spt_matrix_free on the wrapping handle.
!
! Thread safety: as in C (see sptensor.h): distinct handles may be used from
! different threads; one handle must not be used by two threads at once.
module sptensor
  use, intrinsic :: iso_c_binding
  implicit none
  private :: c_strlen, from_c_string, to_c_string, coo_from_arrays

  ! --------------------------------------------------------------------------
  ! Version of the header this module mirrors (sptensor.h SPT_VERSION_*).
  ! --------------------------------------------------------------------------
  integer(c_int), parameter, public :: SPT_VERSION_MAJOR = 1
  integer(c_int), parameter, public :: SPT_VERSION_MINOR = 0
  integer(c_int), parameter, public :: SPT_VERSION_PATCH = 0

  ! Other numeric #defines of the headers.
  integer(c_int), parameter, public :: SPT_MAX_THREADS = 1024                    ! sptensor.h
  integer(c_int), parameter, public :: SPT_MAX_ORDER = 64                        ! sptensor.h
  integer(c_int), parameter, public :: SPT_CSF_SUMMARY_MAX_ORDER = 16           ! csf.h
  integer(c_int64_t), parameter, public :: SPT_DENSE_DEFAULT_MAX_BYTES = 2_c_int64_t**30  ! dense.h

  ! --------------------------------------------------------------------------
  ! Enumerators (values identical to the C headers; checked by CTest
  ! fortran_constants).
  ! --------------------------------------------------------------------------
  ! spt_status_code
  integer(c_int), parameter, public :: SPT_OK = 0
  integer(c_int), parameter, public :: SPT_WARN_NOT_CONVERGED = 1
  integer(c_int), parameter, public :: SPT_ERR_INVALID_ARGUMENT = -1
  integer(c_int), parameter, public :: SPT_ERR_IO = -2
  integer(c_int), parameter, public :: SPT_ERR_PARSE = -3
  integer(c_int), parameter, public :: SPT_ERR_OUT_OF_MEMORY = -4
  integer(c_int), parameter, public :: SPT_ERR_UNSUPPORTED = -5
  integer(c_int), parameter, public :: SPT_ERR_DEVICE = -6
  integer(c_int), parameter, public :: SPT_ERR_MPI = -7
  integer(c_int), parameter, public :: SPT_ERR_NUMERICAL = -8
  integer(c_int), parameter, public :: SPT_ERR_OVERFLOW = -9
  integer(c_int), parameter, public :: SPT_ERR_READ_ONLY = -10
  integer(c_int), parameter, public :: SPT_ERR_INTERNAL = -99
  ! spt_dtype
  integer(c_int), parameter, public :: SPT_FLOAT32 = 1
  integer(c_int), parameter, public :: SPT_FLOAT64 = 2
  ! spt_layout
  integer(c_int), parameter, public :: SPT_ROW_MAJOR = 0
  integer(c_int), parameter, public :: SPT_COL_MAJOR = 1
  ! spt_backend
  integer(c_int), parameter, public :: SPT_BACKEND_AUTO = 0
  integer(c_int), parameter, public :: SPT_BACKEND_CPU = 1
  integer(c_int), parameter, public :: SPT_BACKEND_CUDA = 2
  integer(c_int), parameter, public :: SPT_BACKEND_REFERENCE = 3
  ! spt_coo_flags
  integer(c_int), parameter, public :: SPT_COO_DEFAULT = 0
  integer(c_int), parameter, public :: SPT_COO_REJECT_NONFINITE = 1
  integer(c_int), parameter, public :: SPT_COO_GROW_DIMS = 2
  ! spt_duplicates
  integer(c_int), parameter, public :: SPT_DUPLICATES_KEEP = 0
  integer(c_int), parameter, public :: SPT_DUPLICATES_SUM = 1
  integer(c_int), parameter, public :: SPT_DUPLICATES_REJECT = 2
  ! spt_elementwise_op
  integer(c_int), parameter, public :: SPT_OP_ADD = 0
  integer(c_int), parameter, public :: SPT_OP_SUB = 1
  integer(c_int), parameter, public :: SPT_OP_MUL = 2
  integer(c_int), parameter, public :: SPT_OP_DIV = 3
  ! spt_cpd_init
  integer(c_int), parameter, public :: SPT_CPD_INIT_RANDOM = 0
  integer(c_int), parameter, public :: SPT_CPD_INIT_USER = 1
  ! spt_tensor_format
  integer(c_int), parameter, public :: SPT_TENSOR_FORMAT_AUTO = 0
  integer(c_int), parameter, public :: SPT_TENSOR_FORMAT_COO = 1
  integer(c_int), parameter, public :: SPT_TENSOR_FORMAT_CSF = 2
  integer(c_int), parameter, public :: SPT_TENSOR_FORMAT_HICOO = 3
  integer(c_int), parameter, public :: SPT_TENSOR_FORMAT_FCOO = 4
  integer(c_int), parameter, public :: SPT_TENSOR_FORMAT_HBCSF = 5
  integer(c_int), parameter, public :: SPT_TENSOR_FORMAT_HLS = 6
  ! spt_csf_policy
  integer(c_int), parameter, public :: SPT_CSF_AUTO = 0
  integer(c_int), parameter, public :: SPT_CSF_ONEMODE = 1
  integer(c_int), parameter, public :: SPT_CSF_TWOMODE = 2
  integer(c_int), parameter, public :: SPT_CSF_ALLMODE = 3
  integer(c_int), parameter, public :: SPT_CSF_MEMOIZED = 4
  ! spt_file_format
  integer(c_int), parameter, public :: SPT_FILE_AUTO = 0
  integer(c_int), parameter, public :: SPT_FILE_TNS = 1
  integer(c_int), parameter, public :: SPT_FILE_TNS_EXTENDED = 2
  integer(c_int), parameter, public :: SPT_FILE_SPLATT_BIN = 3
  integer(c_int), parameter, public :: SPT_FILE_SPT_BIN = 4
  ! spt_compression
  integer(c_int), parameter, public :: SPT_COMPRESS_AUTO = 0
  integer(c_int), parameter, public :: SPT_COMPRESS_NONE = 1
  integer(c_int), parameter, public :: SPT_COMPRESS_GZIP = 2
  integer(c_int), parameter, public :: SPT_COMPRESS_XZ = 3
  integer(c_int), parameter, public :: SPT_COMPRESS_ZSTD = 4
  ! spt_tucker_init (tucker.h)
  integer(c_int), parameter, public :: SPT_TUCKER_INIT_HOSVD = 0
  integer(c_int), parameter, public :: SPT_TUCKER_INIT_RANDOM = 1
  integer(c_int), parameter, public :: SPT_TUCKER_INIT_USER = 2
  ! spt_tucker_ttmc (tucker.h)
  integer(c_int), parameter, public :: SPT_TUCKER_TTMC_AUTO = 0
  integer(c_int), parameter, public :: SPT_TUCKER_TTMC_ONE_SHOT = 1
  integer(c_int), parameter, public :: SPT_TUCKER_TTMC_CHAIN = 2
  integer(c_int), parameter, public :: SPT_TUCKER_TTMC_HLS = 3
  ! spt_cp_apr_init (cp_apr.h)
  integer(c_int), parameter, public :: SPT_CP_APR_INIT_RANDOM = 0
  integer(c_int), parameter, public :: SPT_CP_APR_INIT_USER = 1
  ! spt_hicoo_strategy (hicoo.h)
  integer(c_int), parameter, public :: SPT_HICOO_STRATEGY_AUTO = 0
  integer(c_int), parameter, public :: SPT_HICOO_STRATEGY_DIRECT = 1
  integer(c_int), parameter, public :: SPT_HICOO_STRATEGY_PRIVATIZED = 2
  ! spt_reorder_method (reorder.h)
  integer(c_int), parameter, public :: SPT_REORDER_LEXI = 0
  integer(c_int), parameter, public :: SPT_REORDER_BFS_MCS = 1
  integer(c_int), parameter, public :: SPT_REORDER_RANDOM = 2
  ! spt_fcoo_kernel (fcoo.h)
  integer(c_int), parameter, public :: SPT_FCOO_MTTKRP = 0
  integer(c_int), parameter, public :: SPT_FCOO_TTM = 1
  ! hbcsf.h (B-CSF / HB-CSF construction flags)
  integer(c_int), parameter, public :: SPT_HBCSF_PLAIN_BCSF = 1
  ! spt_hls_precision (hls.h)
  integer(c_int), parameter, public :: SPT_HLS_PRECISION_AUTO = 0
  integer(c_int), parameter, public :: SPT_HLS_PRECISION_FP16 = 1
  integer(c_int), parameter, public :: SPT_HLS_PRECISION_BF16 = 2
  integer(c_int), parameter, public :: SPT_HLS_PRECISION_TF32 = 3
  integer(c_int), parameter, public :: SPT_HLS_PRECISION_EXACT = 4

  ! --------------------------------------------------------------------------
  ! Option structs: bind(c), field for field the C struct. Always call the
  ! matching spt_<x>_options_init(opts) first; then set fields.
  ! Pointer fields (dims, ranks, init_factors) take c_loc of a TARGET array;
  ! callbacks take c_funloc of a bind(c) function with the C signature.
  ! --------------------------------------------------------------------------
  type, bind(c), public :: spt_cpd_options
    integer(c_size_t) :: struct_size = 0
    integer(c_int32_t) :: rank = 0            ! spt_index (unsigned)
    integer(c_int) :: max_iters = 0
    real(c_double) :: tol = 0
    integer(c_int) :: init = 0                ! SPT_CPD_INIT_*
    integer(c_int64_t) :: seed = 0            ! uint64_t
    type(c_ptr) :: init_factors = c_null_ptr  ! const spt_matrix *const * (order handles)
    type(c_funptr) :: callback = c_null_funptr
    type(c_ptr) :: callback_data = c_null_ptr
    integer(c_int) :: format = 0              ! SPT_TENSOR_FORMAT_*
    integer(c_int) :: csf_policy = 0          ! SPT_CSF_*
    integer(c_int64_t) :: memo_budget_bytes = 0
  end type spt_cpd_options

  type, bind(c), public :: spt_read_options
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: format = 0              ! SPT_FILE_*
    integer(c_int) :: dtype = 0               ! SPT_FLOAT32 / SPT_FLOAT64
    integer(c_int) :: index_base = 0
    integer(c_int32_t) :: order = 0
    type(c_ptr) :: dims = c_null_ptr          ! const spt_index *
    integer(c_int) :: duplicates = 0          ! SPT_DUPLICATES_*
    integer(c_int) :: reject_nonfinite = 0
    integer(c_int) :: copy_binary = 0
    integer(c_int64_t) :: map_binary = 0      ! 1: zero-copy mapping of a .sptb (SIGBUS if truncated)
  end type spt_read_options

  type, bind(c), public :: spt_write_options
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: format = 0              ! SPT_FILE_*
    integer(c_int) :: compression = 0         ! SPT_COMPRESS_*
    integer(c_int) :: index_base = 0
    integer(c_int) :: precision = 0
  end type spt_write_options

  type, bind(c), public :: spt_tucker_options
    integer(c_size_t) :: struct_size = 0
    type(c_ptr) :: ranks = c_null_ptr         ! const spt_index * (ranks_count entries)
    integer(c_int32_t) :: ranks_count = 0
    integer(c_int) :: max_iters = 0
    real(c_double) :: tol = 0
    integer(c_int) :: init = 0                ! SPT_TUCKER_INIT_*
    integer(c_int64_t) :: seed = 0
    type(c_ptr) :: init_factors = c_null_ptr
    type(c_funptr) :: callback = c_null_funptr
    type(c_ptr) :: callback_data = c_null_ptr
    integer(c_int) :: ttmc = 0                ! SPT_TTMC_*
  end type spt_tucker_options

  type, bind(c), public :: spt_cp_apr_options
    integer(c_size_t) :: struct_size = 0
    integer(c_int32_t) :: rank = 0
    integer(c_int) :: max_outer_iters = 0
    integer(c_int) :: max_inner_iters = 0
    real(c_double) :: tol = 0
    real(c_double) :: kappa = 0
    real(c_double) :: kappatol = 0
    real(c_double) :: epsilon = 0
    integer(c_int) :: init = 0                ! SPT_CP_APR_INIT_*
    integer(c_int64_t) :: seed = 0
    type(c_ptr) :: init_factors = c_null_ptr
    type(c_funptr) :: callback = c_null_funptr
    type(c_ptr) :: callback_data = c_null_ptr
    integer(c_int) :: format = 0              ! SPT_TENSOR_FORMAT_*
  end type spt_cp_apr_options

  type, bind(c), public :: spt_hicoo_options
    integer(c_size_t) :: struct_size = 0
    integer(c_int32_t) :: block_size = 0
    integer(c_int32_t) :: superblock_size = 0
    integer(c_int) :: strategy = 0            ! SPT_HICOO_STRATEGY_*
  end type spt_hicoo_options

  ! B-CSF / HB-CSF construction options (hbcsf.h); 0 fields mean the default.
  type, bind(c), public :: spt_hbcsf_options
    integer(c_size_t) :: struct_size = 0
    integer(c_int32_t) :: root_mode = 0       ! 0-based mode of the MTTKRP the handle serves at full speed
    integer(c_int32_t) :: fiber_threshold = 0
    integer(c_int32_t) :: slice_split_nnz = 0
    integer(c_int32_t) :: slice_bin_min_nnz = 0
    integer(c_int32_t) :: flags = 0           ! SPT_HBCSF_PLAIN_BCSF or 0
  end type spt_hbcsf_options

  ! spt_hbcsf_info's output: set struct_size = c_sizeof(info) first.
  type, bind(c), public :: spt_hbcsf_summary
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: dtype = 0
    integer(c_int32_t) :: order = 0
    integer(c_int32_t) :: root_mode = 0
    integer(c_int32_t) :: flags = 0
    integer(c_int32_t) :: fiber_threshold = 0
    integer(c_int32_t) :: slice_split_nnz = 0
    integer(c_int32_t) :: slice_bin_min_nnz = 0
    integer(c_int32_t) :: bins = 0
    integer(c_int64_t) :: nnz = 0
    integer(c_int64_t) :: coo_nnz = 0
    integer(c_int64_t) :: csl_nnz = 0
    integer(c_int64_t) :: bcsf_nnz = 0
    integer(c_int64_t) :: coo_slices = 0
    integer(c_int64_t) :: csl_slices = 0
    integer(c_int64_t) :: bcsf_slices = 0
    integer(c_int64_t) :: bcsf_fibers = 0
    integer(c_int64_t) :: bcsf_segments = 0
    integer(c_int64_t) :: split_fibers = 0
    integer(c_int64_t) :: units = 0
    integer(c_int64_t) :: split_slices = 0
    integer(c_int64_t) :: bytes = 0
    integer(c_int64_t) :: coo_bytes = 0
  end type spt_hbcsf_summary

  ! HLS construction options (hls.h); 0 fields mean the default.
  type, bind(c), public :: spt_hls_options
    integer(c_size_t) :: struct_size = 0
    integer(c_int32_t) :: root_mode = 0       ! 0-based mode of the MTTKRP / TTMc
    integer(c_int32_t) :: dense_threshold = 0 ! occupied cells for a dense tile (0: 78, times slab_depth for order 4)
    integer(c_int32_t) :: slab_depth = 0      ! order 4: 1, 2, 4, 8 or 16 (0: 4)
    integer(c_int64_t) :: precision = 0       ! GPU dense tiles: SPT_HLS_PRECISION_* (0: AUTO)
  end type spt_hls_options

  ! spt_hls_info's output: set struct_size = c_sizeof(info) first.
  type, bind(c), public :: spt_hls_summary
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: dtype = 0
    integer(c_int32_t) :: order = 0
    integer(c_int32_t) :: root_mode = 0
    integer(c_int32_t) :: dense_threshold = 0
    integer(c_int32_t) :: slab_depth = 0
    integer(c_int32_t) :: index_bits = 0
    integer(c_int64_t) :: input_nnz = 0
    integer(c_int64_t) :: nnz = 0
    integer(c_int64_t) :: tiles = 0
    integer(c_int64_t) :: dense_tiles = 0
    integer(c_int64_t) :: sparse_tiles = 0
    integer(c_int64_t) :: dense_nnz = 0
    integer(c_int64_t) :: sparse_nnz = 0
    real(c_double) :: dense_fraction = 0
    integer(c_int64_t) :: bytes = 0
    integer(c_int64_t) :: coo_bytes = 0
    real(c_double) :: build_seconds = 0
    integer(c_int) :: precision = 0              ! resolved SPT_HLS_PRECISION_* (never AUTO)
    integer(c_int32_t) :: threshold_calibrated = 0 ! 1: dense_threshold measured on the GPU
  end type spt_hls_summary

  ! What a context's backend resolves to (spt_context_backend_info). Set
  ! struct_size = c_sizeof(info) first. The strings are NUL-terminated C
  ! strings in character arrays (sptf_backend_info_string copies one out).
  type, bind(c), public :: spt_backend_info
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: requested = 0           ! SPT_BACKEND_* (the setting)
    integer(c_int) :: backend = 0             ! SPT_BACKEND_* (what kernels use)
    integer(c_int) :: cuda_available = 0
    integer(c_int) :: device = 0
    integer(c_int) :: device_count = 0
    character(kind=c_char) :: device_name(256) = c_null_char
    integer(c_int64_t) :: device_total_memory = 0
    integer(c_int) :: compute_capability_major = 0
    integer(c_int) :: compute_capability_minor = 0
    character(kind=c_char) :: plugin_path(1024) = c_null_char
    character(kind=c_char) :: reason(1024) = c_null_char
  end type spt_backend_info

  ! Advice of spt_suggest_format (reason: c_null_ptr or c_loc of a TARGET
  ! character buffer of reason_capacity bytes).
  type, bind(c), public :: spt_format_advice
    integer(c_size_t) :: struct_size = 0
    type(c_ptr) :: reason = c_null_ptr
    integer(c_size_t) :: reason_capacity = 0
    integer(c_size_t) :: reason_length = 0
    integer(c_int) :: format = 0              ! SPT_TENSOR_FORMAT_*
    integer(c_int) :: csf_policy = 0          ! SPT_CSF_*
    real(c_double) :: block_ratio = 0
    real(c_double) :: slice_per_block = 0
  end type spt_format_advice

  ! CSF construction options (csf.h).
  type, bind(c), public :: spt_csf_options
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: policy = 0              ! SPT_CSF_* (0: AUTO)
  end type spt_csf_options

  ! F-COO construction options (fcoo.h).
  type, bind(c), public :: spt_fcoo_options
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: operation = 0           ! SPT_FCOO_MTTKRP (0) or SPT_FCOO_TTM
    integer(c_int32_t) :: mode = 0            ! 0-based mode of that operation
    integer(c_int32_t) :: threadlen = 0       ! 0 (suggested), 8, 16 or 32
  end type spt_fcoo_options

  ! spt_fcoo_info's output: set struct_size = c_sizeof(info) first.
  type, bind(c), public :: spt_fcoo_summary
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: dtype = 0
    integer(c_int32_t) :: order = 0
    integer(c_int64_t) :: nnz = 0
    integer(c_int) :: operation = 0           ! SPT_FCOO_*
    integer(c_int32_t) :: mode = 0
    integer(c_int32_t) :: threadlen = 0
    integer(c_int64_t) :: segments = 0
    integer(c_int64_t) :: bytes = 0
  end type spt_fcoo_summary

  ! spt_hicoo_info's output: set struct_size = c_sizeof(info) first.
  type, bind(c), public :: spt_hicoo_summary
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: dtype = 0
    integer(c_int32_t) :: order = 0
    integer(c_int64_t) :: nnz = 0
    integer(c_int32_t) :: block_size = 0
    integer(c_int32_t) :: superblock_size = 0
    integer(c_int64_t) :: bytes = 0
  end type spt_hicoo_summary

  ! spt_csf_info's summary. mode_order(l+1, t+1) is C's mode_order[t][l]
  ! (the mode at level l of tree t); tree_for_mode(m+1) is C's tree_for_mode[m].
  type, bind(c), public :: spt_csf_summary
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: dtype = 0
    integer(c_int32_t) :: order = 0
    integer(c_int64_t) :: nnz = 0
    integer(c_int) :: policy = 0              ! SPT_CSF_*
    integer(c_int32_t) :: trees = 0
    integer(c_int64_t) :: bytes = 0
    integer(c_int32_t) :: mode_order(16, 16) = 0
    integer(c_int32_t) :: tree_for_mode(16) = 0
  end type spt_csf_summary

  ! The core objects' info structs (spt_coo_info, spt_scoo_info,
  ! spt_matrix_info, spt_ktensor_info, spt_ttensor_info, spt_dense_info,
  ! spt_permutation_info): set struct_size = c_sizeof(info) before the call.
  type, bind(c), public :: spt_coo_summary
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: dtype = 0
    integer(c_int32_t) :: order = 0
    integer(c_int64_t) :: nnz = 0
    integer(c_int) :: read_only = 0           ! 1 for a view (spt_coo_create_view)
  end type spt_coo_summary

  type, bind(c), public :: spt_scoo_summary
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: dtype = 0
    integer(c_int32_t) :: order = 0
    integer(c_int32_t) :: dense_mode = 0      ! the lowest dense mode (0-based)
    integer(c_int32_t) :: dense_mode_count = 0
    integer(c_int64_t) :: nfibers = 0
    integer(c_int64_t) :: block_length = 0    ! values per fiber
  end type spt_scoo_summary

  type, bind(c), public :: spt_matrix_summary
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: dtype = 0
    integer(c_int) :: layout = 0              ! SPT_ROW_MAJOR / SPT_COL_MAJOR
    integer(c_int64_t) :: rows = 0
    integer(c_int64_t) :: cols = 0
    integer(c_int64_t) :: ld = 0
    integer(c_int) :: wrapped = 0             ! 1 for spt_matrix_wrap / sptf_matrix_wrap
  end type spt_matrix_summary

  type, bind(c), public :: spt_ktensor_summary
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: dtype = 0
    integer(c_int32_t) :: order = 0
    integer(c_int32_t) :: rank = 0
    integer(c_int) :: iterations = 0
    real(c_double) :: fit = 0
    integer(c_int) :: converged = 0
  end type spt_ktensor_summary

  type, bind(c), public :: spt_ttensor_summary
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: dtype = 0
    integer(c_int32_t) :: order = 0
    real(c_double) :: fit = 0
    integer(c_int) :: iterations = 0
    integer(c_int) :: converged = 0
  end type spt_ttensor_summary

  type, bind(c), public :: spt_dense_summary
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: dtype = 0
    integer(c_int32_t) :: order = 0
    integer(c_int64_t) :: count = 0           ! prod(dims)
  end type spt_dense_summary

  type, bind(c), public :: spt_permutation_summary
    integer(c_size_t) :: struct_size = 0
    integer(c_int32_t) :: order = 0
  end type spt_permutation_summary

  ! spt_hicoo_stats' statistics (reason as in spt_format_advice).
  type, bind(c), public :: spt_hicoo_statistics
    integer(c_size_t) :: struct_size = 0
    type(c_ptr) :: reason = c_null_ptr
    integer(c_size_t) :: reason_capacity = 0
    integer(c_size_t) :: reason_length = 0
    integer(c_int32_t) :: order = 0
    integer(c_int32_t) :: block_size = 0
    integer(c_int32_t) :: superblock_size = 0
    integer(c_int) :: threads = 0
    integer(c_int64_t) :: nnz = 0
    integer(c_int64_t) :: num_blocks = 0
    integer(c_int64_t) :: num_superblocks = 0
    real(c_double) :: block_ratio = 0
    real(c_double) :: block_ratio_threshold = 0
    real(c_double) :: mean_nnz_per_block = 0
    real(c_double) :: geomean_nnz_per_block = 0
    real(c_double) :: slice_per_block = 0
    integer(c_int64_t) :: hicoo_bytes = 0
    integer(c_int64_t) :: coo_bytes = 0
    integer(c_int32_t) :: suggested_block_size = 0
    integer(c_int32_t) :: suggested_superblock_size = 0
  end type spt_hicoo_statistics

  ! spt_hicoo_mode_stats' per-mode statistics.
  type, bind(c), public :: spt_hicoo_mode_statistics
    integer(c_size_t) :: struct_size = 0
    integer(c_int64_t) :: slabs = 0
    integer(c_int64_t) :: iterations = 0
    integer(c_int64_t) :: max_slab_nnz = 0
    integer(c_int) :: suggested_strategy = 0  ! SPT_HICOO_STRATEGY_*
    integer(c_int) :: strategy = 0
  end type spt_hicoo_mode_statistics

  ! Options of spt_reorder_compute (reorder.h).
  type, bind(c), public :: spt_reorder_options
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: method = 0              ! SPT_REORDER_*
    integer(c_int) :: iterations = 0
    integer(c_int64_t) :: seed = 0
  end type spt_reorder_options

  ! --------------------------------------------------------------------------
  ! C functions (names, arguments and errors as documented in the C headers).
  ! --------------------------------------------------------------------------
  interface
    ! --- version, status -----------------------------------------------------
    function spt_version() bind(c, name="spt_version") result(s)
      import :: c_ptr
      type(c_ptr) :: s
    end function
    subroutine spt_version_numbers(major, minor, patch) bind(c, name="spt_version_numbers")
      import :: c_int
      integer(c_int), intent(out) :: major, minor, patch
    end subroutine
    function spt_status_string(status) bind(c, name="spt_status_string") result(s)
      import :: c_ptr, c_int
      integer(c_int), value :: status
      type(c_ptr) :: s
    end function

    ! --- context ------------------------------------------------------------
    function spt_context_create(ctx) bind(c, name="spt_context_create") result(st)
      import :: c_ptr, c_int
      type(c_ptr), intent(out) :: ctx
      integer(c_int) :: st
    end function
    function spt_context_free(ctx) bind(c, name="spt_context_free") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int) :: st
    end function
    function spt_context_set_threads(ctx, threads) bind(c, name="spt_context_set_threads") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int), value :: threads
      integer(c_int) :: st
    end function
    function spt_context_get_threads(ctx, threads) bind(c, name="spt_context_get_threads") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int), intent(out) :: threads
      integer(c_int) :: st
    end function
    function spt_context_set_backend(ctx, backend) bind(c, name="spt_context_set_backend") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int), value :: backend
      integer(c_int) :: st
    end function
    function spt_context_get_backend(ctx, backend) bind(c, name="spt_context_get_backend") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int), intent(out) :: backend
      integer(c_int) :: st
    end function
    function spt_context_set_device(ctx, device) bind(c, name="spt_context_set_device") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int), value :: device
      integer(c_int) :: st
    end function
    function spt_context_set_seed(ctx, seed) bind(c, name="spt_context_set_seed") result(st)
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: ctx
      integer(c_int64_t), value :: seed
      integer(c_int) :: st
    end function
    function spt_context_set_verbosity(ctx, level) bind(c, name="spt_context_set_verbosity") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int), value :: level
      integer(c_int) :: st
    end function
    ! fn: c_funloc of a bind(c) subroutine (user_data, stage, fraction) with
    ! user_data type(c_ptr), value; stage type(c_ptr), value (a C string);
    ! fraction real(c_double), value. c_null_funptr clears it.
    function spt_context_set_progress(ctx, fn, user_data) bind(c, name="spt_context_set_progress") result(st)
      import :: c_ptr, c_funptr, c_int
      type(c_ptr), value :: ctx
      type(c_funptr), value :: fn
      type(c_ptr), value :: user_data
      integer(c_int) :: st
    end function
    ! fn: bind(c) subroutine (user_data, level, message): type(c_ptr), value;
    ! integer(c_int), value; type(c_ptr), value (a C string).
    function spt_context_set_log(ctx, fn, user_data) bind(c, name="spt_context_set_log") result(st)
      import :: c_ptr, c_funptr, c_int
      type(c_ptr), value :: ctx
      type(c_funptr), value :: fn
      type(c_ptr), value :: user_data
      integer(c_int) :: st
    end function
    function spt_last_error(ctx) bind(c, name="spt_last_error") result(s)
      import :: c_ptr
      type(c_ptr), value :: ctx
      type(c_ptr) :: s
    end function
    function spt_thread_last_error() bind(c, name="spt_thread_last_error") result(s)
      import :: c_ptr
      type(c_ptr) :: s
    end function

    ! --- dense matrices -----------------------------------------------------
    function spt_matrix_create(ctx, dtype, rows, cols, layout, out) bind(c, name="spt_matrix_create") result(st)
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: ctx
      integer(c_int), value :: dtype
      integer(c_int64_t), value :: rows, cols
      integer(c_int), value :: layout
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_matrix_create_copy(ctx, dtype, rows, cols, layout, data, ld, out) &
        bind(c, name="spt_matrix_create_copy") result(st)
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: ctx
      integer(c_int), value :: dtype
      integer(c_int64_t), value :: rows, cols
      integer(c_int), value :: layout
      type(c_ptr), value :: data
      integer(c_int64_t), value :: ld
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_matrix_wrap(ctx, dtype, rows, cols, layout, data, ld, out) bind(c, name="spt_matrix_wrap") result(st)
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: ctx
      integer(c_int), value :: dtype
      integer(c_int64_t), value :: rows, cols
      integer(c_int), value :: layout
      type(c_ptr), value :: data
      integer(c_int64_t), value :: ld
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_matrix_free(m) bind(c, name="spt_matrix_free") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: m
      integer(c_int) :: st
    end function
    function spt_matrix_info(ctx, m, info) bind(c, name="spt_matrix_info") result(st)
      import :: spt_matrix_summary, c_ptr, c_int
      type(c_ptr), value :: ctx, m
      type(spt_matrix_summary), intent(inout) :: info
      integer(c_int) :: st
    end function
    function spt_matrix_data(m, data) bind(c, name="spt_matrix_data") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: m
      type(c_ptr), intent(out) :: data
      integer(c_int) :: st
    end function
    function spt_matrix_copy_out(m, layout, data, ld) bind(c, name="spt_matrix_copy_out") result(st)
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: m
      integer(c_int), value :: layout
      type(c_ptr), value :: data
      integer(c_int64_t), value :: ld
      integer(c_int) :: st
    end function

    ! --- COO tensors --------------------------------------------------------
    function spt_coo_create(ctx, dtype, order, dims, out) bind(c, name="spt_coo_create") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx
      integer(c_int), value :: dtype
      integer(c_int32_t), value :: order
      integer(c_int32_t), intent(in) :: dims(*)
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    ! dims: c_null_ptr to infer, else c_loc of `order` spt_index values.
    ! indices: index of nonzero k in mode m at indices(m*ld + k) (0-based
    ! offsets), i.e. an nnz x order column-major array when ld = nnz.
    function spt_coo_create_from_arrays(ctx, dtype, order, dims, nnz, indices, ld, index_base, values, flags, out) &
        bind(c, name="spt_coo_create_from_arrays") result(st)
      import :: c_ptr, c_int, c_int32_t, c_int64_t
      type(c_ptr), value :: ctx
      integer(c_int), value :: dtype
      integer(c_int32_t), value :: order
      type(c_ptr), value :: dims
      integer(c_int64_t), value :: nnz
      type(c_ptr), value :: indices
      integer(c_int64_t), value :: ld
      integer(c_int), value :: index_base
      type(c_ptr), value :: values
      integer(c_int), value :: flags
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    ! Read-only view of caller arrays (0-based indices, same layout as above;
    ! nothing copied: keep the arrays alive and unchanged until spt_coo_free).
    function spt_coo_create_view(ctx, dtype, order, dims, nnz, indices, ld, values, out) &
        bind(c, name="spt_coo_create_view") result(st)
      import :: c_ptr, c_int, c_int32_t, c_int64_t
      type(c_ptr), value :: ctx
      integer(c_int), value :: dtype
      integer(c_int32_t), value :: order
      integer(c_int32_t), intent(in) :: dims(*)
      integer(c_int64_t), value :: nnz
      type(c_ptr), value :: indices
      integer(c_int64_t), value :: ld
      type(c_ptr), value :: values
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_coo_copy(ctx, x, out) bind(c, name="spt_coo_copy") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, x
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_coo_free(x) bind(c, name="spt_coo_free") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: x
      integer(c_int) :: st
    end function
    function spt_coo_info(ctx, x, info) bind(c, name="spt_coo_info") result(st)
      import :: spt_coo_summary, c_ptr, c_int
      type(c_ptr), value :: ctx, x
      type(spt_coo_summary), intent(inout) :: info
      integer(c_int) :: st
    end function
    ! dtype stored in the binary file x was read from (0: not a binary file).
    function spt_coo_file_dtype(x, dtype) bind(c, name="spt_coo_file_dtype") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: x
      integer(c_int), intent(out) :: dtype
      integer(c_int) :: st
    end function
    function spt_coo_dims(x, dims) bind(c, name="spt_coo_dims") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: x
      integer(c_int32_t), intent(out) :: dims(*)
      integer(c_int) :: st
    end function
    ! Borrowed 0-based indices of mode `mode` (0-based): c_f_pointer it to
    ! integer(c_int32_t) :: idx(nnz).
    function spt_coo_indices(x, mode, indices) bind(c, name="spt_coo_indices") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: x
      integer(c_int32_t), value :: mode
      type(c_ptr), intent(out) :: indices
      integer(c_int) :: st
    end function
    function spt_coo_values(x, values) bind(c, name="spt_coo_values") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: x
      type(c_ptr), intent(out) :: values
      integer(c_int) :: st
    end function
    function spt_coo_coalesce(ctx, x, policy) bind(c, name="spt_coo_coalesce") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, x
      integer(c_int), value :: policy
      integer(c_int) :: st
    end function
    function spt_coo_norm(ctx, x, norm) bind(c, name="spt_coo_norm") result(st)
      import :: c_ptr, c_int, c_double
      type(c_ptr), value :: ctx, x
      real(c_double), intent(out) :: norm
      integer(c_int) :: st
    end function

    ! Distinct coordinates among the nonzeros (repeats are summed everywhere).
    function spt_coo_count_distinct(ctx, x, distinct) bind(c, name="spt_coo_count_distinct") result(st)
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: ctx, x
      integer(c_int64_t), intent(out) :: distinct
      integer(c_int) :: st
    end function

    ! --- kernels ------------------------------------------------------------
    ! factors: `order` matrix handles (factors(mode+1) may be c_null_ptr).
    function spt_mttkrp(ctx, x, factors, mode, out) bind(c, name="spt_mttkrp") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx, x
      type(c_ptr), intent(in) :: factors(*)
      integer(c_int32_t), value :: mode
      type(c_ptr), value :: out
      integer(c_int) :: st
    end function

    ! --- CSF (csf.h) and HiCOO (hicoo.h): prepare once, run many MTTKRPs ------
    function spt_csf_options_init_size(opts, struct_size) bind(c, name="spt_csf_options_init_size") result(st)
      import :: spt_csf_options, c_size_t, c_int
      type(spt_csf_options), intent(inout) :: opts
      integer(c_size_t), value :: struct_size
      integer(c_int) :: st
    end function
    function spt_csf_from_coo(ctx, x, opts, out) bind(c, name="spt_csf_from_coo") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, x
      type(c_ptr), value :: opts  ! c_null_ptr for defaults, or c_loc of a TARGET spt_csf_options
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_csf_free(x) bind(c, name="spt_csf_free") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: x
      integer(c_int) :: st
    end function
    function spt_mttkrp_csf(ctx, x, factors, mode, out) bind(c, name="spt_mttkrp_csf") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx, x
      type(c_ptr), intent(in) :: factors(*)
      integer(c_int32_t), value :: mode
      type(c_ptr), value :: out
      integer(c_int) :: st
    end function
    function spt_hicoo_from_coo(ctx, x, opts, out) bind(c, name="spt_hicoo_from_coo") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, x
      type(c_ptr), value :: opts  ! c_null_ptr for defaults, or c_loc of a TARGET spt_hicoo_options
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_hicoo_free(h) bind(c, name="spt_hicoo_free") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: h
      integer(c_int) :: st
    end function
    function spt_mttkrp_hicoo(ctx, h, factors, mode, out) bind(c, name="spt_mttkrp_hicoo") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx, h
      type(c_ptr), intent(in) :: factors(*)
      integer(c_int32_t), value :: mode
      type(c_ptr), value :: out
      integer(c_int) :: st
    end function

    ! --- Kruskal tensors ----------------------------------------------------
    function spt_ktensor_create(ctx, dtype, order, dims, rank, out) bind(c, name="spt_ktensor_create") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx
      integer(c_int), value :: dtype
      integer(c_int32_t), value :: order
      integer(c_int32_t), intent(in) :: dims(*)
      integer(c_int32_t), value :: rank
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_inner_ktensor(ctx, x, k, result) bind(c, name="spt_inner_ktensor") result(st)
      import :: c_ptr, c_int, c_double
      type(c_ptr), value :: ctx, x, k
      real(c_double), intent(out) :: result
      integer(c_int) :: st
    end function
    function spt_ktensor_free(k) bind(c, name="spt_ktensor_free") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: k
      integer(c_int) :: st
    end function
    function spt_ktensor_info(ctx, k, info) bind(c, name="spt_ktensor_info") result(st)
      import :: spt_ktensor_summary, c_ptr, c_int
      type(c_ptr), value :: ctx, k
      type(spt_ktensor_summary), intent(inout) :: info
      integer(c_int) :: st
    end function
    function spt_ktensor_dims(k, dims) bind(c, name="spt_ktensor_dims") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: k
      integer(c_int32_t), intent(out) :: dims(*)
      integer(c_int) :: st
    end function
    function spt_ktensor_lambda(k, lambda) bind(c, name="spt_ktensor_lambda") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: k
      type(c_ptr), intent(out) :: lambda
      integer(c_int) :: st
    end function
    ! Borrowed factor of `mode` (0-based), owned by k.
    function spt_ktensor_factor(k, mode, factor) bind(c, name="spt_ktensor_factor") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: k
      integer(c_int32_t), value :: mode
      type(c_ptr), intent(out) :: factor
      integer(c_int) :: st
    end function
    function spt_ktensor_norm(ctx, k, norm) bind(c, name="spt_ktensor_norm") result(st)
      import :: c_ptr, c_int, c_double
      type(c_ptr), value :: ctx, k
      real(c_double), intent(out) :: norm
      integer(c_int) :: st
    end function
    function spt_ktensor_result(k, fit, iterations, converged) bind(c, name="spt_ktensor_result") result(st)
      import :: c_ptr, c_int, c_double
      type(c_ptr), value :: k
      real(c_double), intent(out) :: fit
      integer(c_int), intent(out) :: iterations, converged
      integer(c_int) :: st
    end function
    ! fits, seconds: borrowed double arrays of `count` entries.
    function spt_ktensor_history(k, count, fits, seconds) bind(c, name="spt_ktensor_history") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: k
      integer(c_int), intent(out) :: count
      type(c_ptr), intent(out) :: fits, seconds
      integer(c_int) :: st
    end function

    ! --- CP-ALS -------------------------------------------------------------
    function spt_cpd_options_init_size(opts, struct_size) bind(c, name="spt_cpd_options_init_size") result(st)
      import :: spt_cpd_options, c_size_t, c_int
      type(spt_cpd_options), intent(inout) :: opts
      integer(c_size_t), value :: struct_size
      integer(c_int) :: st
    end function
    function spt_cpd_als_csf(ctx, x, opts, out) bind(c, name="spt_cpd_als_csf") result(st)
      import :: spt_cpd_options, c_ptr, c_int
      type(c_ptr), value :: ctx, x
      type(spt_cpd_options), intent(in) :: opts
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    ! opts%callback: c_funloc of a function with this interface (see
    ! spt_cpd_callback below); return non-zero to stop early.
    function spt_cpd_als(ctx, x, opts, out) bind(c, name="spt_cpd_als") result(st)
      import :: spt_cpd_options, c_ptr, c_int
      type(c_ptr), value :: ctx, x
      type(spt_cpd_options), intent(in) :: opts
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function

    ! --- CP-APR (cp_apr.h) --------------------------------------------------
    function spt_cp_apr_options_init_size(opts, struct_size) bind(c, name="spt_cp_apr_options_init_size") result(st)
      import :: spt_cp_apr_options, c_size_t, c_int
      type(spt_cp_apr_options), intent(inout) :: opts
      integer(c_size_t), value :: struct_size
      integer(c_int) :: st
    end function
    function spt_cp_apr(ctx, x, opts, out) bind(c, name="spt_cp_apr") result(st)
      import :: spt_cp_apr_options, c_ptr, c_int
      type(c_ptr), value :: ctx, x
      type(spt_cp_apr_options), intent(in) :: opts
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function

    ! --- Tucker (tucker.h) --------------------------------------------------
    function spt_tucker_options_init_size(opts, struct_size) bind(c, name="spt_tucker_options_init_size") result(st)
      import :: spt_tucker_options, c_size_t, c_int
      type(spt_tucker_options), intent(inout) :: opts
      integer(c_size_t), value :: struct_size
      integer(c_int) :: st
    end function
    function spt_tucker_hooi(ctx, x, opts, out) bind(c, name="spt_tucker_hooi") result(st)
      import :: spt_tucker_options, c_ptr, c_int
      type(c_ptr), value :: ctx, x
      type(spt_tucker_options), intent(in) :: opts
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_ttensor_free(t) bind(c, name="spt_ttensor_free") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: t
      integer(c_int) :: st
    end function
    function spt_ttensor_info(ctx, t, info) bind(c, name="spt_ttensor_info") result(st)
      import :: spt_ttensor_summary, c_ptr, c_int
      type(c_ptr), value :: ctx, t
      type(spt_ttensor_summary), intent(inout) :: info
      integer(c_int) :: st
    end function
    ! full_dims: c_null_ptr, or c_loc of `order` spt_index values.
    function spt_ttensor_core_dims(t, dims, full_dims) bind(c, name="spt_ttensor_core_dims") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: t
      integer(c_int32_t), intent(out) :: dims(*)
      type(c_ptr), value :: full_dims
      integer(c_int) :: st
    end function
    ! Borrowed core values, first index fastest (a Fortran array's order).
    function spt_ttensor_core(t, core) bind(c, name="spt_ttensor_core") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: t
      type(c_ptr), intent(out) :: core
      integer(c_int) :: st
    end function
    function spt_ttensor_factor(t, mode, factor) bind(c, name="spt_ttensor_factor") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: t
      integer(c_int32_t), value :: mode
      type(c_ptr), intent(out) :: factor
      integer(c_int) :: st
    end function

    ! --- HiCOO (hicoo.h) ----------------------------------------------------
    function spt_hicoo_options_init_size(opts, struct_size) bind(c, name="spt_hicoo_options_init_size") result(st)
      import :: spt_hicoo_options, c_size_t, c_int
      type(spt_hicoo_options), intent(inout) :: opts
      integer(c_size_t), value :: struct_size
      integer(c_int) :: st
    end function

    ! --- file I/O -----------------------------------------------------------
    function spt_read_options_init_size(opts, struct_size) bind(c, name="spt_read_options_init_size") result(st)
      import :: spt_read_options, c_size_t, c_int
      type(spt_read_options), intent(inout) :: opts
      integer(c_size_t), value :: struct_size
      integer(c_int) :: st
    end function
    ! opts: c_null_ptr for defaults, or c_loc of a TARGET spt_read_options.
    ! path: NUL-terminated (see sptf_read for Fortran strings).
    function spt_read(ctx, path, opts, out) bind(c, name="spt_read") result(st)
      import :: c_ptr, c_int, c_char
      type(c_ptr), value :: ctx
      character(kind=c_char), intent(in) :: path(*)
      type(c_ptr), value :: opts
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_write_options_init_size(opts, struct_size) bind(c, name="spt_write_options_init_size") result(st)
      import :: spt_write_options, c_size_t, c_int
      type(spt_write_options), intent(inout) :: opts
      integer(c_size_t), value :: struct_size
      integer(c_int) :: st
    end function
    function spt_write(ctx, x, path, opts) bind(c, name="spt_write") result(st)
      import :: c_ptr, c_int, c_char
      type(c_ptr), value :: ctx, x
      character(kind=c_char), intent(in) :: path(*)
      type(c_ptr), value :: opts
      integer(c_int) :: st
    end function

    ! --- helper from the C library ------------------------------------------
    function c_strlen(s) bind(c, name="strlen") result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function
  end interface

  ! --------------------------------------------------------------------------
  ! The rest of the C API: backend info, matrix products, COO editing,
  ! semi-sparse (sCOO) and CSR results, TTV/TTM family, elementwise ops,
  ! format advice and statistics, dense tensors (dense.h), reordering
  ! (reorder.h) and F-COO (fcoo.h). Same conventions as above: 0-based
  ! modes, handles as type(c_ptr), arrays of handles as type(c_ptr) :: a(*),
  ! "may be NULL" arguments as type(c_ptr), value (pass c_null_ptr or c_loc).
  ! --------------------------------------------------------------------------
  interface
    ! --- context ------------------------------------------------------------
    function spt_context_backend_info(ctx, info) bind(c, name="spt_context_backend_info") result(st)
      import :: spt_backend_info, c_ptr, c_int
      type(c_ptr), value :: ctx
      type(spt_backend_info), intent(inout) :: info
      integer(c_int) :: st
    end function

    ! --- dense matrices -----------------------------------------------------
    function spt_khatri_rao(ctx, a, b, out) bind(c, name="spt_khatri_rao") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, a, b
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_kronecker(ctx, a, b, out) bind(c, name="spt_kronecker") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, a, b
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function

    ! --- COO tensors --------------------------------------------------------
    function spt_coo_convert_dtype(ctx, x, dtype, out) bind(c, name="spt_coo_convert_dtype") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, x
      integer(c_int), value :: dtype
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    ! indices/values as in spt_coo_create_from_arrays (c_loc of TARGET arrays).
    function spt_coo_append(ctx, x, n, indices, ld, index_base, values, flags) bind(c, name="spt_coo_append") &
        result(st)
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: ctx, x
      integer(c_int64_t), value :: n
      type(c_ptr), value :: indices
      integer(c_int64_t), value :: ld
      integer(c_int), value :: index_base
      type(c_ptr), value :: values
      integer(c_int), value :: flags
      integer(c_int) :: st
    end function
    ! mode_order: c_null_ptr (0,1,...) or c_loc of `order` 0-based modes.
    function spt_coo_sort(ctx, x, mode_order) bind(c, name="spt_coo_sort") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, x, mode_order
      integer(c_int) :: st
    end function
    function spt_coo_sort_morton(ctx, x) bind(c, name="spt_coo_sort_morton") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, x
      integer(c_int) :: st
    end function

    ! --- semi-sparse (sCOO) and CSR results -----------------------------------
    function spt_scoo_free(y) bind(c, name="spt_scoo_free") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: y
      integer(c_int) :: st
    end function
    function spt_scoo_info(ctx, y, info) bind(c, name="spt_scoo_info") result(st)
      import :: spt_scoo_summary, c_ptr, c_int
      type(c_ptr), value :: ctx, y
      type(spt_scoo_summary), intent(inout) :: info
      integer(c_int) :: st
    end function
    function spt_scoo_dims(y, dims) bind(c, name="spt_scoo_dims") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: y
      integer(c_int32_t), intent(out) :: dims(*)
      integer(c_int) :: st
    end function
    ! modes_out: c_null_ptr, or c_loc of room for `order` entries.
    function spt_scoo_dense_modes(y, count, modes_out) bind(c, name="spt_scoo_dense_modes") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: y
      integer(c_int32_t), intent(out) :: count
      type(c_ptr), value :: modes_out
      integer(c_int) :: st
    end function
    function spt_scoo_indices(y, mode, indices) bind(c, name="spt_scoo_indices") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: y
      integer(c_int32_t), value :: mode
      type(c_ptr), intent(out) :: indices
      integer(c_int) :: st
    end function
    ! Borrowed values: nfibers blocks, lowest dense mode fastest (with one
    ! dense mode of size R: a Fortran array v(R, nfibers)).
    function spt_scoo_values(y, values) bind(c, name="spt_scoo_values") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: y
      type(c_ptr), intent(out) :: values
      integer(c_int) :: st
    end function
    function spt_scoo_to_coo(ctx, y, out) bind(c, name="spt_scoo_to_coo") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, y
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_csr_free(a) bind(c, name="spt_csr_free") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: a
      integer(c_int) :: st
    end function
    ! Borrowed 0-based arrays: row_ptr (rows+1), col_ind and values (nnz).
    function spt_csr_arrays(a, dtype, rows, cols, nnz, row_ptr, col_ind, values) bind(c, name="spt_csr_arrays") &
        result(st)
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: a
      integer(c_int), intent(out) :: dtype
      integer(c_int64_t), intent(out) :: rows, cols, nnz
      type(c_ptr), intent(out) :: row_ptr, col_ind, values
      integer(c_int) :: st
    end function

    ! --- TTV / TTM family, elementwise, unfolding -----------------------------
    ! v: c_loc of dims(mode+1) values of the tensor's dtype.
    function spt_ttv(ctx, x, mode, v, v_len, out) bind(c, name="spt_ttv") result(st)
      import :: c_ptr, c_int, c_int32_t, c_int64_t
      type(c_ptr), value :: ctx, x
      integer(c_int32_t), value :: mode
      type(c_ptr), value :: v
      integer(c_int64_t), value :: v_len
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    ! vectors(m+1) = c_loc of mode m's vector (keep_mode's may be c_null_ptr);
    ! out = c_loc of dims(keep_mode+1) values, overwritten.
    function spt_ttv_chain(ctx, x, keep_mode, vectors, out) bind(c, name="spt_ttv_chain") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx, x
      integer(c_int32_t), value :: keep_mode
      type(c_ptr), intent(in) :: vectors(*)
      type(c_ptr), value :: out
      integer(c_int) :: st
    end function
    function spt_ttv_all(ctx, x, vectors, result) bind(c, name="spt_ttv_all") result(st)
      import :: c_ptr, c_int, c_double
      type(c_ptr), value :: ctx, x
      type(c_ptr), intent(in) :: vectors(*)
      real(c_double), intent(out) :: result
      integer(c_int) :: st
    end function
    ! u: matrix handle dims(mode+1) x R; Y = X x_mode u^T (semi-sparse, spt_scoo_free).
    function spt_ttm(ctx, x, mode, u, out) bind(c, name="spt_ttm") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx, x
      integer(c_int32_t), value :: mode
      type(c_ptr), value :: u
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_scoo_ttm(ctx, y, mode, u, out) bind(c, name="spt_scoo_ttm") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx, y
      integer(c_int32_t), value :: mode
      type(c_ptr), value :: u
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    ! modes(1:count): 0-based chain modes; us(1:count): their matrix handles.
    function spt_ttm_chain(ctx, x, count, modes, us, out) bind(c, name="spt_ttm_chain") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx, x
      integer(c_int32_t), value :: count
      integer(c_int32_t), intent(in) :: modes(*)
      type(c_ptr), intent(in) :: us(*)
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_elementwise(ctx, op, x, y, out) bind(c, name="spt_elementwise") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int), value :: op
      type(c_ptr), value :: x, y
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_elementwise_scalar(ctx, op, x, s, out) bind(c, name="spt_elementwise_scalar") result(st)
      import :: c_ptr, c_int, c_double
      type(c_ptr), value :: ctx
      integer(c_int), value :: op
      type(c_ptr), value :: x
      real(c_double), value :: s
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_unfold_csr(ctx, x, mode, out) bind(c, name="spt_unfold_csr") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx, x
      integer(c_int32_t), value :: mode
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function

    ! --- format advice, CSF and HiCOO details, CP-APR, Tucker ---------------
    function spt_suggest_format(ctx, x, rank, advice) bind(c, name="spt_suggest_format") result(st)
      import :: spt_format_advice, c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx, x
      integer(c_int32_t), value :: rank
      type(spt_format_advice), intent(inout) :: advice
      integer(c_int) :: st
    end function
    function spt_csf_info(ctx, x, info) bind(c, name="spt_csf_info") result(st)
      import :: spt_csf_summary, c_ptr, c_int
      type(c_ptr), value :: ctx, x
      type(spt_csf_summary), intent(inout) :: info
      integer(c_int) :: st
    end function
    function spt_csf_dims(x, dims) bind(c, name="spt_csf_dims") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: x
      integer(c_int32_t), intent(out) :: dims(*)
      integer(c_int) :: st
    end function
    function spt_csf_to_coo(ctx, x, out) bind(c, name="spt_csf_to_coo") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, x
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_csf_fibers(x, tree, level, count) bind(c, name="spt_csf_fibers") result(st)
      import :: c_ptr, c_int, c_int32_t, c_int64_t
      type(c_ptr), value :: x
      integer(c_int32_t), value :: tree, level
      integer(c_int64_t), intent(out) :: count
      integer(c_int) :: st
    end function
    function spt_hicoo_to_coo(ctx, h, out) bind(c, name="spt_hicoo_to_coo") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, h
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_hicoo_info(ctx, h, info) bind(c, name="spt_hicoo_info") result(st)
      import :: spt_hicoo_summary, c_ptr, c_int
      type(c_ptr), value :: ctx, h
      type(spt_hicoo_summary), intent(inout) :: info
      integer(c_int) :: st
    end function
    function spt_hicoo_dims(h, dims) bind(c, name="spt_hicoo_dims") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: h
      integer(c_int32_t), intent(out) :: dims(*)
      integer(c_int) :: st
    end function
    function spt_hicoo_stats(ctx, h, stats) bind(c, name="spt_hicoo_stats") result(st)
      import :: spt_hicoo_statistics, c_ptr, c_int
      type(c_ptr), value :: ctx, h
      type(spt_hicoo_statistics), intent(inout) :: stats
      integer(c_int) :: st
    end function
    function spt_hicoo_mode_stats(ctx, h, mode, stats) bind(c, name="spt_hicoo_mode_stats") result(st)
      import :: spt_hicoo_mode_statistics, c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx, h
      integer(c_int32_t), value :: mode
      type(spt_hicoo_mode_statistics), intent(inout) :: stats
      integer(c_int) :: st
    end function
    function spt_cp_apr_loglikelihood(ctx, x, k, loglik) bind(c, name="spt_cp_apr_loglikelihood") result(st)
      import :: c_ptr, c_int, c_double
      type(c_ptr), value :: ctx, x, k
      real(c_double), intent(out) :: loglik
      integer(c_int) :: st
    end function
    function spt_ttensor_history(t, count, fits, seconds) bind(c, name="spt_ttensor_history") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: t
      integer(c_int), intent(out) :: count
      type(c_ptr), intent(out) :: fits, seconds
      integer(c_int) :: st
    end function
    function spt_ttensor_core_dense(ctx, t, out) bind(c, name="spt_ttensor_core_dense") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, t
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function

    ! --- dense tensors (dense.h): first index fastest, as a Fortran array ------
    function spt_dense_create(ctx, dtype, order, dims, out) bind(c, name="spt_dense_create") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx
      integer(c_int), value :: dtype
      integer(c_int32_t), value :: order
      integer(c_int32_t), intent(in) :: dims(*)
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    ! data: c_loc of a contiguous Fortran array of shape dims (copied).
    function spt_dense_create_copy(ctx, dtype, order, dims, data, out) bind(c, name="spt_dense_create_copy") &
        result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx
      integer(c_int), value :: dtype
      integer(c_int32_t), value :: order
      integer(c_int32_t), intent(in) :: dims(*)
      type(c_ptr), value :: data
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_dense_free(t) bind(c, name="spt_dense_free") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: t
      integer(c_int) :: st
    end function
    function spt_dense_info(ctx, t, info) bind(c, name="spt_dense_info") result(st)
      import :: spt_dense_summary, c_ptr, c_int
      type(c_ptr), value :: ctx, t
      type(spt_dense_summary), intent(inout) :: info
      integer(c_int) :: st
    end function
    function spt_dense_dims(t, dims) bind(c, name="spt_dense_dims") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: t
      integer(c_int32_t), intent(out) :: dims(*)
      integer(c_int) :: st
    end function
    ! Borrowed element array: c_f_pointer(data, a, dims) gives the Fortran array.
    function spt_dense_data(t, data) bind(c, name="spt_dense_data") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: t
      type(c_ptr), intent(out) :: data
      integer(c_int) :: st
    end function
    function spt_dense_data_const(t, data) bind(c, name="spt_dense_data_const") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: t
      type(c_ptr), intent(out) :: data
      integer(c_int) :: st
    end function
    function spt_dense_norm(ctx, t, norm) bind(c, name="spt_dense_norm") result(st)
      import :: c_ptr, c_int, c_double
      type(c_ptr), value :: ctx, t
      real(c_double), intent(out) :: norm
      integer(c_int) :: st
    end function
    ! max_bytes: 0 = SPT_DENSE_DEFAULT_MAX_BYTES (1 GiB).
    function spt_dense_from_coo(ctx, x, max_bytes, out) bind(c, name="spt_dense_from_coo") result(st)
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: ctx, x
      integer(c_int64_t), value :: max_bytes
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_dense_to_coo(ctx, t, out) bind(c, name="spt_dense_to_coo") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, t
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function

    ! --- reordering (reorder.h): perm(m)(old) = new ---------------------------
    function spt_reorder_options_init_size(opts, struct_size) bind(c, name="spt_reorder_options_init_size") result(st)
      import :: spt_reorder_options, c_size_t, c_int
      type(spt_reorder_options), intent(inout) :: opts
      integer(c_size_t), value :: struct_size
      integer(c_int) :: st
    end function
    ! opts: c_null_ptr for defaults, or c_loc of a TARGET spt_reorder_options.
    function spt_reorder_compute(ctx, x, opts, out) bind(c, name="spt_reorder_compute") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, x, opts
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    ! perms(m+1) = c_loc of mode m's dims(m+1) labels (see sptf_permutation_create).
    function spt_permutation_create(ctx, order, dims, perms, index_base, out) bind(c, name="spt_permutation_create") &
        result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx
      integer(c_int32_t), value :: order
      integer(c_int32_t), intent(in) :: dims(*)
      type(c_ptr), intent(in) :: perms(*)
      integer(c_int), value :: index_base
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_permutation_free(perm) bind(c, name="spt_permutation_free") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: perm
      integer(c_int) :: st
    end function
    function spt_permutation_info(ctx, perm, info) bind(c, name="spt_permutation_info") result(st)
      import :: spt_permutation_summary, c_ptr, c_int
      type(c_ptr), value :: ctx, perm
      type(spt_permutation_summary), intent(inout) :: info
      integer(c_int) :: st
    end function
    function spt_permutation_dims(perm, dims) bind(c, name="spt_permutation_dims") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: perm
      integer(c_int32_t), intent(out) :: dims(*)
      integer(c_int) :: st
    end function
    function spt_permutation_get(perm, mode, out, out_len, index_base) bind(c, name="spt_permutation_get") result(st)
      import :: c_ptr, c_int, c_int32_t, c_int64_t
      type(c_ptr), value :: perm
      integer(c_int32_t), value :: mode
      integer(c_int32_t), intent(out) :: out(*)
      integer(c_int64_t), value :: out_len
      integer(c_int), value :: index_base
      integer(c_int) :: st
    end function
    function spt_permutation_inverse(ctx, perm, out) bind(c, name="spt_permutation_inverse") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, perm
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_coo_relabel(ctx, x, perm) bind(c, name="spt_coo_relabel") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, x, perm
      integer(c_int) :: st
    end function
    function spt_coo_relabeled_copy(ctx, x, perm, out) bind(c, name="spt_coo_relabeled_copy") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, x, perm
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_matrix_permute_rows(ctx, factor, perm, mode) bind(c, name="spt_matrix_permute_rows") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx, factor, perm
      integer(c_int32_t), value :: mode
      integer(c_int) :: st
    end function
    function spt_matrix_unpermute_rows(ctx, factor, perm, mode) bind(c, name="spt_matrix_unpermute_rows") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx, factor, perm
      integer(c_int32_t), value :: mode
      integer(c_int) :: st
    end function
    function spt_ktensor_unpermute(ctx, k, perm) bind(c, name="spt_ktensor_unpermute") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, k, perm
      integer(c_int) :: st
    end function

    ! --- F-COO (fcoo.h) -----------------------------------------------------
    function spt_fcoo_suggest_threadlen(nnz, rank, dtype, multiprocessors, threadlen) &
        bind(c, name="spt_fcoo_suggest_threadlen") result(st)
      import :: c_int, c_int32_t, c_int64_t
      integer(c_int64_t), value :: nnz
      integer(c_int32_t), value :: rank
      integer(c_int), value :: dtype, multiprocessors
      integer(c_int32_t), intent(out) :: threadlen
      integer(c_int) :: st
    end function
    function spt_fcoo_options_init_size(opts, struct_size) bind(c, name="spt_fcoo_options_init_size") result(st)
      import :: spt_fcoo_options, c_size_t, c_int
      type(spt_fcoo_options), intent(inout) :: opts
      integer(c_size_t), value :: struct_size
      integer(c_int) :: st
    end function
    function spt_fcoo_from_coo(ctx, x, opts, out) bind(c, name="spt_fcoo_from_coo") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, x
      type(c_ptr), value :: opts  ! c_null_ptr for defaults, or c_loc of a TARGET spt_fcoo_options
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_fcoo_free(f) bind(c, name="spt_fcoo_free") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: f
      integer(c_int) :: st
    end function
    function spt_fcoo_info(ctx, f, info) bind(c, name="spt_fcoo_info") result(st)
      import :: spt_fcoo_summary, c_ptr, c_int
      type(c_ptr), value :: ctx, f
      type(spt_fcoo_summary), intent(inout) :: info
      integer(c_int) :: st
    end function
    function spt_fcoo_dims(f, dims) bind(c, name="spt_fcoo_dims") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: f
      integer(c_int32_t), intent(out) :: dims(*)
      integer(c_int) :: st
    end function
    function spt_fcoo_to_coo(ctx, f, out) bind(c, name="spt_fcoo_to_coo") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, f
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    ! mode: the handle's (0-based); factors(mode+1) may be c_null_ptr.
    function spt_mttkrp_fcoo(ctx, f, factors, mode, out) bind(c, name="spt_mttkrp_fcoo") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx, f
      type(c_ptr), intent(in) :: factors(*)
      integer(c_int32_t), value :: mode
      type(c_ptr), value :: out
      integer(c_int) :: st
    end function
    function spt_ttm_fcoo(ctx, f, u, out) bind(c, name="spt_ttm_fcoo") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, f, u
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_ttmc_fcoo(ctx, f, factors, out) bind(c, name="spt_ttmc_fcoo") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, f
      type(c_ptr), intent(in) :: factors(*)
      type(c_ptr), value :: out
      integer(c_int) :: st
    end function

    ! --- B-CSF / HB-CSF (hbcsf.h) -------------------------------------------
    function spt_hbcsf_options_init_size(opts, struct_size) bind(c, name="spt_hbcsf_options_init_size") result(st)
      import :: spt_hbcsf_options, c_size_t, c_int
      type(spt_hbcsf_options), intent(inout) :: opts
      integer(c_size_t), value :: struct_size
      integer(c_int) :: st
    end function
    ! The root mode is opts%root_mode (0 with c_null_ptr opts).
    function spt_hbcsf_from_coo(ctx, x, opts, out) bind(c, name="spt_hbcsf_from_coo") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, x
      type(c_ptr), value :: opts  ! c_null_ptr for defaults, or c_loc of a TARGET spt_hbcsf_options
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_hbcsf_free(h) bind(c, name="spt_hbcsf_free") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: h
      integer(c_int) :: st
    end function
    function spt_hbcsf_info(ctx, h, info) bind(c, name="spt_hbcsf_info") result(st)
      import :: spt_hbcsf_summary, c_ptr, c_int
      type(c_ptr), value :: ctx, h
      type(spt_hbcsf_summary), intent(inout) :: info
      integer(c_int) :: st
    end function
    function spt_hbcsf_dims(h, dims) bind(c, name="spt_hbcsf_dims") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: h
      integer(c_int32_t), intent(out) :: dims(*)
      integer(c_int) :: st
    end function
    function spt_hbcsf_to_coo(ctx, h, out) bind(c, name="spt_hbcsf_to_coo") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, h
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    ! Any mode (0-based) from the one tree; factors(mode+1) may be c_null_ptr.
    function spt_mttkrp_hbcsf(ctx, h, factors, mode, out) bind(c, name="spt_mttkrp_hbcsf") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx, h
      type(c_ptr), intent(in) :: factors(*)
      integer(c_int32_t), value :: mode
      type(c_ptr), value :: out
      integer(c_int) :: st
    end function

    ! --- HLS hybrid linear storage (hls.h) -----------------------------------
    function spt_hls_options_init_size(opts, struct_size) bind(c, name="spt_hls_options_init_size") result(st)
      import :: spt_hls_options, c_size_t, c_int
      type(spt_hls_options), intent(inout) :: opts
      integer(c_size_t), value :: struct_size
      integer(c_int) :: st
    end function
    ! The root mode is opts%root_mode (0 with c_null_ptr opts).
    function spt_hls_from_coo(ctx, x, opts, out) bind(c, name="spt_hls_from_coo") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, x
      type(c_ptr), value :: opts  ! c_null_ptr for defaults, or c_loc of a TARGET spt_hls_options
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_hls_free(h) bind(c, name="spt_hls_free") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: h
      integer(c_int) :: st
    end function
    function spt_hls_info(ctx, h, info) bind(c, name="spt_hls_info") result(st)
      import :: spt_hls_summary, c_ptr, c_int
      type(c_ptr), value :: ctx, h
      type(spt_hls_summary), intent(inout) :: info
      integer(c_int) :: st
    end function
    function spt_hls_dims(h, dims) bind(c, name="spt_hls_dims") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: h
      integer(c_int32_t), intent(out) :: dims(*)
      integer(c_int) :: st
    end function
    function spt_hls_to_coo(ctx, h, out) bind(c, name="spt_hls_to_coo") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, h
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    ! mode: the handle's root_mode (0-based); factors(mode+1) may be c_null_ptr.
    function spt_mttkrp_hls(ctx, h, factors, mode, out) bind(c, name="spt_mttkrp_hls") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: ctx, h
      type(c_ptr), intent(in) :: factors(*)
      integer(c_int32_t), value :: mode
      type(c_ptr), value :: out
      integer(c_int) :: st
    end function
    ! out: dims(root+1) x prod of the other factors' columns (as spt_ttmc_fcoo).
    function spt_ttmc_hls(ctx, h, factors, out) bind(c, name="spt_ttmc_hls") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx, h
      type(c_ptr), intent(in) :: factors(*)
      type(c_ptr), value :: out
      integer(c_int) :: st
    end function
  end interface

  ! Signature of the CP-ALS / Tucker per-iteration callbacks
  ! (spt_cpd_callback, spt_tucker_callback): write a bind(c) function with
  ! this interface and store c_funloc(it) in opts%callback, and optionally
  ! c_loc(some TARGET variable) in opts%callback_data. Called on the calling
  ! thread after each sweep; return non-zero to stop early.
  abstract interface
    function spt_cpd_callback(user_data, iteration, fit, delta, seconds) bind(c) result(stop_now)
      import :: c_ptr, c_int, c_double
      type(c_ptr), value :: user_data
      integer(c_int), value :: iteration
      real(c_double), value :: fit, delta, seconds
      integer(c_int) :: stop_now
    end function
  end interface

  ! Wrap a contiguous 2-D real(c_double) or real(c_float) array in place.
  interface sptf_matrix_wrap
    module procedure sptf_matrix_wrap_f64, sptf_matrix_wrap_f32
  end interface sptf_matrix_wrap
  interface sptf_coo_from_arrays
    module procedure sptf_coo_from_arrays_f64, sptf_coo_from_arrays_f32
  end interface sptf_coo_from_arrays

contains

  ! ==========================================================================
  ! The C header's option-initialising macros.
  ! ==========================================================================

  !> Fill opts with the CP-ALS defaults (C macro spt_cpd_options_init).
  function spt_cpd_options_init(opts) result(st)
    type(spt_cpd_options), intent(inout) :: opts
    integer(c_int) :: st
    st = spt_cpd_options_init_size(opts, c_sizeof(opts))
  end function

  !> Fill opts with the CP-APR defaults (C macro spt_cp_apr_options_init).
  function spt_cp_apr_options_init(opts) result(st)
    type(spt_cp_apr_options), intent(inout) :: opts
    integer(c_int) :: st
    st = spt_cp_apr_options_init_size(opts, c_sizeof(opts))
  end function

  !> Fill opts with the Tucker-HOOI defaults (ranks stay unset).
  function spt_tucker_options_init(opts) result(st)
    type(spt_tucker_options), intent(inout) :: opts
    integer(c_int) :: st
    st = spt_tucker_options_init_size(opts, c_sizeof(opts))
  end function

  !> Fill opts with the CSF defaults.
  function spt_csf_options_init(opts) result(st)
    type(spt_csf_options), intent(inout) :: opts
    integer(c_int) :: st
    st = spt_csf_options_init_size(opts, c_sizeof(opts))
  end function

  !> Fill opts with the F-COO defaults.
  function spt_fcoo_options_init(opts) result(st)
    type(spt_fcoo_options), intent(inout) :: opts
    integer(c_int) :: st
    st = spt_fcoo_options_init_size(opts, c_sizeof(opts))
  end function

  !> Fill opts with the HiCOO defaults.
  function spt_hicoo_options_init(opts) result(st)
    type(spt_hicoo_options), intent(inout) :: opts
    integer(c_int) :: st
    st = spt_hicoo_options_init_size(opts, c_sizeof(opts))
  end function

  !> Fill opts with the B-CSF / HB-CSF defaults.
  function spt_hbcsf_options_init(opts) result(st)
    type(spt_hbcsf_options), intent(inout) :: opts
    integer(c_int) :: st
    st = spt_hbcsf_options_init_size(opts, c_sizeof(opts))
  end function

  !> Fill opts with the HLS defaults.
  function spt_hls_options_init(opts) result(st)
    type(spt_hls_options), intent(inout) :: opts
    integer(c_int) :: st
    st = spt_hls_options_init_size(opts, c_sizeof(opts))
  end function

  !> Fill opts with the spt_read defaults.
  function spt_read_options_init(opts) result(st)
    type(spt_read_options), intent(inout) :: opts
    integer(c_int) :: st
    st = spt_read_options_init_size(opts, c_sizeof(opts))
  end function

  !> Fill opts with the spt_write defaults.
  function spt_write_options_init(opts) result(st)
    type(spt_write_options), intent(inout) :: opts
    integer(c_int) :: st
    st = spt_write_options_init_size(opts, c_sizeof(opts))
  end function

  ! ==========================================================================
  ! Strings
  ! ==========================================================================

  function from_c_string(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: n, i
    if (.not. c_associated(p)) then
      s = ''
      return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function

  function to_c_string(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=:), allocatable :: c
    c = trim(s) // c_null_char
  end function

  !> The last error message recorded in ctx ('' if none; with c_null_ptr the
  !> calling thread's last error). A copy: stays valid.
  function sptf_last_error(ctx) result(msg)
    type(c_ptr), intent(in) :: ctx
    character(len=:), allocatable :: msg
    msg = from_c_string(spt_last_error(ctx))
  end function

  !> The calling thread's last error message (copy).
  function sptf_thread_last_error() result(msg)
    character(len=:), allocatable :: msg
    msg = from_c_string(spt_thread_last_error())
  end function

  !> Constant name of a status code, e.g. 'SPT_ERR_PARSE'.
  function sptf_status_string(status) result(name)
    integer(c_int), intent(in) :: status
    character(len=:), allocatable :: name
    name = from_c_string(spt_status_string(status))
  end function

  !> Version string of the loaded library, e.g. '0.1.0'.
  function sptf_version() result(v)
    character(len=:), allocatable :: v
    v = from_c_string(spt_version())
  end function

  ! ==========================================================================
  ! File I/O with Fortran strings (trailing blanks of `path` are ignored)
  ! ==========================================================================

  !> Read a tensor file (any format spt_read accepts, compressed or not).
  !> opts is optional (defaults: float64, 1-based text, format detected).
  function sptf_read(ctx, path, x, opts) result(st)
    type(c_ptr), intent(in) :: ctx
    character(len=*), intent(in) :: path
    type(c_ptr), intent(out) :: x
    type(spt_read_options), intent(in), optional, target :: opts
    integer(c_int) :: st
    type(c_ptr) :: popts
    popts = c_null_ptr
    if (present(opts)) popts = c_loc(opts)
    st = spt_read(ctx, to_c_string(path), popts, x)
  end function

  !> Write a tensor; the format and compression follow the extension unless
  !> opts says otherwise.
  function sptf_write(ctx, x, path, opts) result(st)
    type(c_ptr), intent(in) :: ctx, x
    character(len=*), intent(in) :: path
    type(spt_write_options), intent(in), optional, target :: opts
    integer(c_int) :: st
    type(c_ptr) :: popts
    popts = c_null_ptr
    if (present(opts)) popts = c_loc(opts)
    st = spt_write(ctx, x, to_c_string(path), popts)
  end function

  ! ==========================================================================
  ! Arrays
  ! ==========================================================================

  !> m = a matrix handle over the storage of `a` (no copy; SPT_COL_MAJOR,
  !> ld = size(a,1)). Free m with spt_matrix_free before `a` goes away.
  function sptf_matrix_wrap_f64(ctx, a, m) result(st)
    type(c_ptr), intent(in) :: ctx
    real(c_double), intent(inout), contiguous, target :: a(:, :)
    type(c_ptr), intent(out) :: m
    integer(c_int) :: st
    st = spt_matrix_wrap(ctx, SPT_FLOAT64, int(size(a, 1), c_int64_t), int(size(a, 2), c_int64_t), &
                         SPT_COL_MAJOR, c_loc(a), int(max(1, size(a, 1)), c_int64_t), m)
  end function

  function sptf_matrix_wrap_f32(ctx, a, m) result(st)
    type(c_ptr), intent(in) :: ctx
    real(c_float), intent(inout), contiguous, target :: a(:, :)
    type(c_ptr), intent(out) :: m
    integer(c_int) :: st
    st = spt_matrix_wrap(ctx, SPT_FLOAT32, int(size(a, 1), c_int64_t), int(size(a, 2), c_int64_t), &
                         SPT_COL_MAJOR, c_loc(a), int(max(1, size(a, 1)), c_int64_t), m)
  end function

  !> New tensor from 1-based subscripts subs(nnz, order) (MATLAB's layout)
  !> and values vals(nnz); dims inferred from the largest subscripts unless
  !> given. The library copies the arrays (it indexes them directly, no
  !> reordering on the Fortran side).
  function sptf_coo_from_arrays_f64(ctx, subs, vals, x, dims) result(st)
    type(c_ptr), intent(in) :: ctx
    integer(c_int32_t), intent(in), contiguous, target :: subs(:, :)
    real(c_double), intent(in), contiguous, target :: vals(:)
    type(c_ptr), intent(out) :: x
    integer(c_int32_t), intent(in), optional, target :: dims(:)
    integer(c_int) :: st
    type(c_ptr) :: pdims
    pdims = c_null_ptr
    if (present(dims)) pdims = c_loc(dims)
    st = coo_from_arrays(ctx, SPT_FLOAT64, subs, size(vals), c_loc(vals), pdims, x)
  end function

  function sptf_coo_from_arrays_f32(ctx, subs, vals, x, dims) result(st)
    type(c_ptr), intent(in) :: ctx
    integer(c_int32_t), intent(in), contiguous, target :: subs(:, :)
    real(c_float), intent(in), contiguous, target :: vals(:)
    type(c_ptr), intent(out) :: x
    integer(c_int32_t), intent(in), optional, target :: dims(:)
    integer(c_int) :: st
    type(c_ptr) :: pdims
    pdims = c_null_ptr
    if (present(dims)) pdims = c_loc(dims)
    st = coo_from_arrays(ctx, SPT_FLOAT32, subs, size(vals), c_loc(vals), pdims, x)
  end function

  function coo_from_arrays(ctx, dtype, subs, nvals, pvals, pdims, x) result(st)
    type(c_ptr), intent(in) :: ctx
    integer(c_int), intent(in) :: dtype
    integer(c_int32_t), intent(in), contiguous, target :: subs(:, :)
    integer, intent(in) :: nvals
    type(c_ptr), intent(in) :: pvals, pdims
    type(c_ptr), intent(out) :: x
    integer(c_int) :: st
    x = c_null_ptr
    if (size(subs, 1) /= nvals) then
      st = SPT_ERR_INVALID_ARGUMENT  ! shape mismatch caught before the C call
      return
    end if
    st = spt_coo_create_from_arrays(ctx, dtype, int(size(subs, 2), c_int32_t), pdims, int(nvals, c_int64_t), &
                                    c_loc(subs), int(max(1, size(subs, 1)), c_int64_t), 1_c_int, pvals, &
                                    SPT_COO_DEFAULT, x)
  end function

  !> Copy the float64 ktensor's lambda into lambda(1:rank).
  function sptf_ktensor_lambda(k, lambda) result(st)
    type(c_ptr), intent(in) :: k
    real(c_double), intent(out) :: lambda(:)
    integer(c_int) :: st
    type(spt_ktensor_summary) :: info
    type(c_ptr) :: p
    real(c_double), pointer :: l(:)
    info%struct_size = c_sizeof(info)
    st = spt_ktensor_info(c_null_ptr, k, info)
    if (st /= SPT_OK) return
    if (info%dtype /= SPT_FLOAT64 .or. size(lambda) < info%rank) then
      st = SPT_ERR_INVALID_ARGUMENT
      return
    end if
    st = spt_ktensor_lambda(k, p)
    if (st /= SPT_OK) return
    call c_f_pointer(p, l, [info%rank])
    lambda(1:info%rank) = l
  end function

  !> Copy factor `mode` (0-based) of a float64 ktensor (or any float64
  !> matrix handle, with sptf_matrix_copy) into a(dims(mode+1), rank).
  function sptf_ktensor_factor(k, mode, a) result(st)
    type(c_ptr), intent(in) :: k
    integer, intent(in) :: mode
    real(c_double), intent(out), contiguous, target :: a(:, :)
    integer(c_int) :: st
    type(c_ptr) :: m
    st = spt_ktensor_factor(k, int(mode, c_int32_t), m)
    if (st /= SPT_OK) return
    st = sptf_matrix_copy(m, a)
  end function

  !> Copy a float64 matrix handle into a(rows, cols) (column-major).
  function sptf_matrix_copy(m, a) result(st)
    type(c_ptr), intent(in) :: m
    real(c_double), intent(out), contiguous, target :: a(:, :)
    integer(c_int) :: st
    type(spt_matrix_summary) :: info
    info%struct_size = c_sizeof(info)
    st = spt_matrix_info(c_null_ptr, m, info)
    if (st /= SPT_OK) return
    if (info%dtype /= SPT_FLOAT64 .or. size(a, 1) /= info%rows .or. size(a, 2) /= info%cols) then
      st = SPT_ERR_INVALID_ARGUMENT
      return
    end if
    st = spt_matrix_copy_out(m, SPT_COL_MAJOR, c_loc(a), int(max(1_c_int64_t, info%rows), c_int64_t))
  end function

  !> Fill opts with the reordering defaults (C macro spt_reorder_options_init).
  function spt_reorder_options_init(opts) result(st)
    type(spt_reorder_options), intent(inout) :: opts
    integer(c_int) :: st
    st = spt_reorder_options_init_size(opts, c_sizeof(opts))
  end function

  !> info filled by spt_context_backend_info (struct_size set here), for ctx
  !> (c_null_ptr: the defaults).
  function sptf_context_backend_info(ctx, info) result(st)
    type(c_ptr), intent(in) :: ctx
    type(spt_backend_info), intent(out) :: info
    integer(c_int) :: st
    info%struct_size = c_sizeof(info)
    st = spt_context_backend_info(ctx, info)
  end function

  !> A character array field of spt_backend_info (device_name, plugin_path,
  !> reason) as a Fortran string, up to its NUL.
  function sptf_c_chars(chars) result(s)
    character(kind=c_char), intent(in) :: chars(:)
    character(len=:), allocatable :: s
    integer :: n, i
    n = 0
    do i = 1, size(chars)
      if (chars(i) == c_null_char) exit
      n = i
    end do
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function

end module sptensor
