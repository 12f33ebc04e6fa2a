/** \file
 * libsptensor: sparse tensor algebra and low-rank decompositions.
 *
 * Public C API. This header compiles as C99 and as C++; it contains no C++
 * types. Every function returns an spt_status (0 = SPT_OK, negative = error,
 * positive = warning) unless documented otherwise. No function ever prints,
 * aborts, exits or lets a C++ exception escape.
 *
 * Conventions used throughout:
 *  - Context: most functions take an `spt_context *ctx` first. It may be NULL,
 *    in which case library defaults are used (all threads, AUTO backend) and
 *    error messages go only to the calling thread's last-error slot
 *    (spt_thread_last_error()). When ctx is non-NULL the message is stored in
 *    the context as well (spt_last_error(ctx)).
 *  - Ownership: functions that create an object write a new handle through an
 *    `out` pointer; the caller owns it and releases it with the matching
 *    *_free function. On error nothing is written to *out and nothing leaks.
 *    "Borrowed" pointers returned by accessors stay valid until the owning
 *    handle is modified or freed.
 *  - Thread safety: distinct handles may be used concurrently from different
 *    threads. A single handle (context included) must not be used from two
 *    threads at once without the caller's own lock; read-only functions on a
 *    tensor (kernels reading it) may run concurrently with each other when
 *    each call uses its own context.
 *  - Indices: spt_index is 32-bit per mode; counts and offsets (spt_nnz) are
 *    64-bit. Coordinates inside the library are 0-based; functions that take
 *    caller coordinates accept an index base (0 or 1).
 *  - Dense matrices are row-major by default; SPT_COL_MAJOR lets Fortran and
 *    MATLAB callers pass arrays without reordering.
 */
#ifndef SPTENSOR_H
#define SPTENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "sptensor/sptensor_export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

#define SPT_VERSION_MAJOR 1 /**< major version of this header (the SONAME number) */
#define SPT_VERSION_MINOR 0 /**< minor version of this header (compatible additions) */
#define SPT_VERSION_PATCH 0 /**< patch version of this header (fixes only) */

/** Version string of the loaded library, e.g. "1.0.0". Never NULL; static
 *  storage, do not free. Thread safe. */
SPT_API const char *spt_version(void);

/** Version numbers of the loaded library (which may differ from the header's
 *  SPT_VERSION_* macros if a newer compatible library is loaded). Any pointer
 *  may be NULL. Thread safe. */
SPT_API void spt_version_numbers(int *major, int *minor, int *patch);

/* ------------------------------------------------------------------------ */
/* Basic types and status codes                                             */
/* ------------------------------------------------------------------------ */

typedef uint32_t spt_index; /**< index within one mode */
typedef uint64_t spt_nnz;   /**< nonzero counts, offsets and sizes */

/** Largest tensor order (number of modes) the library accepts: every format,
 *  kernel and algorithm supports orders 1..SPT_MAX_ORDER (some GPU kernels
 *  fewer; those calls run on the CPU or say so). Creating a tensor of a
 *  higher order fails with SPT_ERR_INVALID_ARGUMENT, and reading a file
 *  whose header or first entry gives a higher order fails with
 *  SPT_ERR_PARSE, before anything is allocated per mode. The limit bounds
 *  the per-mode work (order^2 per nonzero in some kernels) and memory that
 *  a small file could otherwise demand. Other limits: dims and indices fit
 *  spt_index (dims <= 2^32 - 1); counts fit spt_nnz, and every array size
 *  derived from counts (nnz * order, rows * cols, rank * dims) must fit the
 *  address space, else SPT_ERR_OVERFLOW before any allocation. See
 *  docs/reliability.md, "Limits". */
#define SPT_MAX_ORDER 64

/** Status codes. 0 is success, negative values are errors, positive values
 *  are warnings (the call produced a usable result). */
typedef enum spt_status_code {
  SPT_OK = 0,
  SPT_WARN_NOT_CONVERGED = 1,     /**< iteration limit reached before tolerance */
  SPT_ERR_INVALID_ARGUMENT = -1,  /**< bad argument: NULL, out of range, shape mismatch */
  SPT_ERR_IO = -2,                /**< file could not be opened/read/written */
  SPT_ERR_PARSE = -3,             /**< malformed input file (message gives file:line) */
  SPT_ERR_OUT_OF_MEMORY = -4,     /**< allocation failed */
  SPT_ERR_UNSUPPORTED = -5,       /**< feature not available in this build or not implemented */
  SPT_ERR_DEVICE = -6,            /**< GPU/device failure */
  SPT_ERR_MPI = -7,               /**< MPI failure */
  SPT_ERR_NUMERICAL = -8,         /**< numerical breakdown (e.g. NaN in a solve) */
  SPT_ERR_OVERFLOW = -9,          /**< a size or index does not fit its type */
  SPT_ERR_READ_ONLY = -10,        /**< modification of a read-only view */
  SPT_ERR_INTERNAL = -99,          /**< a bug in the library; please report it */
  SPT_STATUS_CODE_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_status_code;

/** Return type of every API function: an spt_status_code value (0 = SPT_OK,
 *  negative = error, positive = warning). An int, so codes added in later
 *  releases pass through unchanged. */
typedef int spt_status;

/** Short constant name of a status code, e.g. "SPT_ERR_PARSE". Unknown codes
 *  give "SPT_UNKNOWN_STATUS". Static storage; thread safe. */
SPT_API const char *spt_status_string(spt_status status);

/** Value type of a tensor or matrix, chosen at run time. */
typedef enum spt_dtype {
  SPT_FLOAT32 = 1,
  SPT_FLOAT64 = 2,
  SPT_DTYPE_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_dtype;

/** Memory layout of a dense matrix. */
typedef enum spt_layout {
  SPT_ROW_MAJOR = 0, /**< element (i,j) at data[i*ld + j], ld >= cols */
  SPT_COL_MAJOR = 1,  /**< element (i,j) at data[j*ld + i], ld >= rows */
  SPT_LAYOUT_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_layout;

/** Compute backend choice for a context. */
typedef enum spt_backend {
  SPT_BACKEND_AUTO = 0,      /**< the CUDA device when the plugin finds one, else the CPU */
  SPT_BACKEND_CPU = 1,       /**< OpenMP kernels */
  SPT_BACKEND_CUDA = 2,      /**< NVIDIA GPU through the plugin libsptensor_cuda.so.MAJOR (kernels
                                  without a GPU version run on the CPU) */
  SPT_BACKEND_REFERENCE = 3,  /**< sequential reference kernels (slow; for testing) */
  SPT_BACKEND_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_backend;

/* ------------------------------------------------------------------------ */
/* Context and errors                                                       */
/* ------------------------------------------------------------------------ */

/** Opaque context: backend choice, threads, device, seed, callbacks and the
 *  last error message (spt_context_create / spt_context_free). */
typedef struct spt_context_s spt_context;

/** Progress callback: `stage` names the work ("read", "cpd"), `fraction` is in
 *  [0,1]. Called from the thread that made the library call. */
typedef void (*spt_progress_fn)(void *user_data, const char *stage, double fraction);

/** Log callback: `level` 1 = note, 2 = detail, 3 = debug. Called from the
 *  thread that made the library call; `message` is valid during the call. */
typedef void (*spt_log_fn)(void *user_data, int level, const char *message);

/** Create a context with defaults: threads = all available (or OMP_NUM_THREADS),
 *  backend from env SPT_BACKEND (auto|cpu|cuda|reference) else AUTO, device 0,
 *  every device for multi-GPU runs, device streaming AUTO, seed 0,
 *  verbosity 0, no callbacks.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (out NULL, or SPT_BACKEND has an
 *  invalid value), SPT_ERR_DEVICE (SPT_BACKEND=cuda but no CUDA plugin or
 *  device is usable; the message says why), SPT_ERR_OUT_OF_MEMORY. */
SPT_API spt_status spt_context_create(spt_context **out);

/** Free a context. NULL is accepted and ignored. Returns SPT_OK. */
SPT_API spt_status spt_context_free(spt_context *ctx);

/** Most threads a context may be given (spt_context_set_threads). */
#define SPT_MAX_THREADS 1024

/** Number of threads for kernels in this context, 1..SPT_MAX_THREADS; 0
 *  restores the default: OpenMP's (OMP_NUM_THREADS, else one per
 *  processor), capped at the processors available to the process and at
 *  SPT_MAX_THREADS, so no environment can make the library start more.
 *  Errors: SPT_ERR_INVALID_ARGUMENT for ctx NULL, threads < 0 or threads >
 *  SPT_MAX_THREADS (nothing changed). */
SPT_API spt_status spt_context_set_threads(spt_context *ctx, int threads);
/** Threads that kernels will use (resolved, never 0). */
SPT_API spt_status spt_context_get_threads(const spt_context *ctx, int *threads);

/** Choose the backend. The CUDA plugin (libsptensor_cuda.so.MAJOR) is looked for
 *  once per process: in env SPT_PLUGIN_PATH (its directory or the file), then
 *  beside libsptensor.so, then on the loader path. AUTO uses the context's
 *  CUDA device when the plugin and the device exist, else the CPU, quietly
 *  (spt_context_backend_info says why); with AUTO a device out-of-memory
 *  falls back to the CPU with a note in the log. SPT_BACKEND_CUDA makes
 *  device failures errors (SPT_ERR_DEVICE).
 *  Errors: SPT_ERR_INVALID_ARGUMENT (ctx NULL, unknown backend),
 *  SPT_ERR_DEVICE (CUDA asked for but no usable plugin or device, or the
 *  context's device does not exist; the message says why). On error the
 *  context is left unchanged. */
SPT_API spt_status spt_context_set_backend(spt_context *ctx, spt_backend backend);
/** The context's backend setting (as set, e.g. AUTO; see
 *  spt_context_backend_info for what it resolves to). */
SPT_API spt_status spt_context_get_backend(const spt_context *ctx, spt_backend *backend);

/** Choose the CUDA device (0-based ordinal, default 0) used when the backend
 *  resolves to CUDA; runs that can use several devices then use this one
 *  only (as spt_context_set_devices(ctx, &device, 1)). Errors:
 *  SPT_ERR_INVALID_ARGUMENT (ctx NULL, device < 0), SPT_ERR_DEVICE (no such
 *  device, or no usable CUDA plugin/device: the message says why). */
SPT_API spt_status spt_context_set_device(spt_context *ctx, int device);

/** Most devices spt_context_set_devices takes. */
#define SPT_MAX_DEVICES 64

/** Choose the CUDA devices that runs able to use several GPUs of one host
 *  use (today CP-ALS on a COO tensor, formats AUTO and COO; see
 *  docs/guide.md "Several GPUs"): ids[0..count) are distinct 0-based
 *  ordinals, ids[0] the lead device, which also becomes the context's
 *  device (spt_context_set_device). count = 0 (ids may then be NULL)
 *  restores the default: every visible device, for tensors of at least
 *  2^20 nonzeros per device (an explicit list applies to any size). One id
 *  gives single-device runs on that device. CP-ALS on several devices
 *  needs NCCL (libnccl.so.2, or the file spt_context_set_nccl_library
 *  names), loaded at run time; without it the run uses the lead device
 *  alone, with a note in the log. It holds a second host copy of the
 *  nonzeros, grouped by device, until every device has its share. The
 *  array is copied. Errors: SPT_ERR_INVALID_ARGUMENT (ctx NULL,
 *  count < 0 or > SPT_MAX_DEVICES, ids NULL with count > 0, an id < 0 or
 *  repeated), SPT_ERR_DEVICE (an id that does not exist, or no usable CUDA
 *  plugin/device when count > 0). On error the context is left unchanged.
 *  Not thread safe for one context. */
SPT_API spt_status spt_context_set_devices(spt_context *ctx, const int *ids, int count);

/** Longest path spt_context_set_nccl_library takes (bytes, without the NUL). */
#define SPT_MAX_NCCL_LIBRARY_PATH 4095

/** The NCCL library file (e.g. ".../nvidia/nccl/lib/libnccl.so.2") that
 *  runs on several GPUs load at run time. path NULL or "" restores the
 *  default: libnccl.so.2 on the dynamic loader's path, else the
 *  nvidia-nccl-cu13 (or -cu12) Python package of the active virtual or
 *  conda environment or of /usr/local or /usr (docs/guide.md "Several
 *  GPUs"). A named file that cannot be loaded makes a multi-GPU run use the
 *  lead device alone, with a note naming the file. The string is copied.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (ctx NULL, path longer than
 *  SPT_MAX_NCCL_LIBRARY_PATH). Not thread safe for one context. */
SPT_API spt_status spt_context_set_nccl_library(spt_context *ctx, const char *path);

/** When the GPU streams a COO tensor's nonzeros from host memory instead of
 *  holding a copy of the tensor on the device (spt_mttkrp on a COO tensor
 *  and CP-ALS on the GPU; see docs/guide.md "Tuning", GPU). */
typedef enum spt_device_streaming {
  SPT_DEVICE_STREAMING_AUTO = 0,   /**< only when the tensor's device copy does not fit (default) */
  SPT_DEVICE_STREAMING_ALWAYS = 1, /**< always, even when the tensor fits (to measure or test the
                                        streamed path; slower where the copy fits) */
  SPT_DEVICE_STREAMING_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_device_streaming;

/** Choose when the context's GPU runs stream a COO tensor's nonzeros from
 *  pinned host memory in chunks (the factors and output stay on the
 *  device): SPT_DEVICE_STREAMING_AUTO (the default) streams only a tensor
 *  whose device copy does not fit the free device memory, ALWAYS streams
 *  every one. Runs that do not use the GPU are unaffected; streamed or not,
 *  results agree to rounding. Errors: SPT_ERR_INVALID_ARGUMENT (ctx NULL,
 *  unknown value; the context is left unchanged). Not thread safe for one
 *  context. */
SPT_API spt_status spt_context_set_device_streaming(spt_context *ctx, spt_device_streaming streaming);
/** The context's device-streaming setting (ctx NULL: the default, AUTO)
 *  into *streaming. Errors: SPT_ERR_INVALID_ARGUMENT (streaming NULL). */
SPT_API spt_status spt_context_get_device_streaming(const spt_context *ctx, spt_device_streaming *streaming);

/** Which build of the CPU kernels runs. On x86-64 the library holds two:
 *  one for any x86-64 CPU and one for x86-64-v3 (AVX2, FMA and BMI2, which
 *  every x86-64 server CPU made since 2015 has); other architectures have
 *  the baseline only, as do builds with Clang or -DSPT_CPU_DISPATCH=OFF.
 *  Both give the same results up to rounding (the v3 build fuses
 *  multiply-adds). */
typedef enum spt_cpu_isa {
  SPT_CPU_ISA_AUTO = 0,      /**< the widest build the CPU runs (default) */
  SPT_CPU_ISA_BASELINE = 1,  /**< the build for any CPU of the architecture (SSE2 on x86-64) */
  SPT_CPU_ISA_X86_64_V3 = 2, /**< the x86-64-v3 build: AVX2, FMA, BMI2 */
  SPT_CPU_ISA_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_cpu_isa;

/** Choose the build of the CPU kernels the context's CPU runs use:
 *  SPT_CPU_ISA_AUTO (the default) takes the x86-64-v3 build where the CPU
 *  and the operating system support AVX2, FMA and BMI2, else the baseline.
 *  Forcing BASELINE reproduces a run on an older CPU, or measures what the
 *  wider vectors bring. Errors: SPT_ERR_INVALID_ARGUMENT (ctx NULL, unknown
 *  value); SPT_ERR_UNSUPPORTED (X86_64_V3 where this CPU lacks those
 *  instructions or the library was built without that build: not x86-64,
 *  not GCC, SPT_CPU_DISPATCH off, or SPT_NATIVE, where every kernel is
 *  compiled for the build host). The context is left unchanged on error.
 *  Not thread safe for one context. */
SPT_API spt_status spt_context_set_cpu_isa(spt_context *ctx, spt_cpu_isa isa);
/** The context's CPU-kernel setting (ctx NULL: the default, AUTO) into
 *  *isa; spt_context_backend_info says which build AUTO resolves to.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (isa NULL). */
SPT_API spt_status spt_context_get_cpu_isa(const spt_context *ctx, spt_cpu_isa *isa);

/** What a context's backend resolves to and what CUDA support was found.
 *  Fixed-size strings, NUL terminated; no pointers to free. */
typedef struct spt_backend_info {
  size_t struct_size;           /**< set to sizeof(spt_backend_info) before the call */
  spt_backend requested;        /**< the context's setting (AUTO, CPU, CUDA, REFERENCE) */
  spt_backend backend;          /**< what kernels use: CPU, CUDA or REFERENCE */
  int cuda_available;           /**< 1 when the plugin loaded and found at least one device */
  int device;                   /**< the context's device ordinal */
  int device_count;             /**< CUDA devices found (0 without plugin, driver or device) */
  char device_name[256];        /**< name of the context's device ("" when none) */
  uint64_t device_total_memory; /**< bytes */
  int compute_capability_major; /**< e.g. 9 for compute capability 9.0 (0 when none) */
  int compute_capability_minor; /**< e.g. 0 for compute capability 9.0 (0 when none) */
  char plugin_path[1024];       /**< file the CUDA plugin was loaded from ("" when none) */
  char reason[1024];            /**< why CUDA is not used ("" when backend is CUDA) */
  spt_cpu_isa cpu_isa;          /**< the build of the CPU kernels CPU runs use: BASELINE or X86_64_V3 */
} spt_backend_info;

/** Fill `info` (info->struct_size must be set; a smaller struct from an
 *  older header is filled up to its size). ctx NULL describes the defaults.
 *  Loads the CUDA plugin if not done yet. Errors: SPT_ERR_INVALID_ARGUMENT
 *  (info NULL or struct_size too small). Thread safe for distinct contexts. */
SPT_API spt_status spt_context_backend_info(const spt_context *ctx, spt_backend_info *info);

/** Default seed for randomised algorithms (CP-ALS random init) that do not
 *  set their own. */
SPT_API spt_status spt_context_set_seed(spt_context *ctx, uint64_t seed);

/** Verbosity for the log callback: 0 = silent, 1 = notes, 2 = details. */
SPT_API spt_status spt_context_set_verbosity(spt_context *ctx, int level);

/** Install (or clear, with fn NULL) the progress callback. */
SPT_API spt_status spt_context_set_progress(spt_context *ctx, spt_progress_fn fn, void *user_data);

/** Install (or clear, with fn NULL) the log callback. The library calls it
 *  with one message at a time. */
SPT_API spt_status spt_context_set_log(spt_context *ctx, spt_log_fn fn, void *user_data);

/** The message of the last error recorded in this context ("" if none).
 *  With ctx NULL, same as spt_thread_last_error(). The pointer is valid until
 *  the next call using this context. */
SPT_API const char *spt_last_error(const spt_context *ctx);

/** The message of the last error raised on the calling thread by any call
 *  (with or without a context). Valid until the thread's next library call. */
SPT_API const char *spt_thread_last_error(void);

/* ------------------------------------------------------------------------ */
/* Dense matrices                                                           */
/* ------------------------------------------------------------------------ */

/** Opaque dense matrix (row- or column-major, float32 or float64; owning or
 *  wrapping caller memory). */
typedef struct spt_matrix_s spt_matrix;

/** New zero-filled rows x cols matrix of `dtype` in `layout` (ld = cols for
 *  row-major, rows for column-major). rows or cols may be 0.
 *  Errors: INVALID_ARGUMENT, OVERFLOW (rows*cols too large), OUT_OF_MEMORY. */
SPT_API spt_status spt_matrix_create(spt_context *ctx, spt_dtype dtype, spt_nnz rows, spt_nnz cols,
                                     spt_layout layout, spt_matrix **out);

/** New matrix holding a copy of caller data (element (i,j) located per
 *  `layout` and `ld`). The copy keeps the caller's layout. */
SPT_API spt_status spt_matrix_create_copy(spt_context *ctx, spt_dtype dtype, spt_nnz rows, spt_nnz cols,
                                          spt_layout layout, const void *data, spt_nnz ld,
                                          spt_matrix **out);

/** Wrap caller memory without copying. The library reads and (for outputs)
 *  writes `data` directly; the caller keeps ownership and must keep the
 *  memory alive until spt_matrix_free. */
SPT_API spt_status spt_matrix_wrap(spt_context *ctx, spt_dtype dtype, spt_nnz rows, spt_nnz cols,
                                   spt_layout layout, void *data, spt_nnz ld, spt_matrix **out);

/** Free a matrix (wrapped memory is not freed). NULL is ignored. */
SPT_API spt_status spt_matrix_free(spt_matrix *m);

/** What a matrix holds (spt_matrix_info). Set struct_size =
 *  sizeof(spt_matrix_summary) before the call; later versions may append
 *  fields. */
typedef struct spt_matrix_summary {
  size_t struct_size; /**< set by the caller */
  spt_dtype dtype;    /**< out: value type */
  spt_layout layout;  /**< out: SPT_ROW_MAJOR or SPT_COL_MAJOR */
  spt_nnz rows;       /**< out: number of rows */
  spt_nnz cols;       /**< out: number of columns */
  spt_nnz ld;         /**< out: leading dimension (elements between rows, or columns for column-major) */
  int wrapped;        /**< out: 1 when the matrix wraps caller memory (spt_matrix_wrap), else 0 */
} spt_matrix_summary;

/** Describe a matrix into *info: shape, layout, leading dimension, value
 *  type. Only info->struct_size bytes are written (struct_size is kept: a
 *  newer caller's longer struct keeps its tail). Nothing is allocated and
 *  nothing in *info needs freeing. ctx (may be NULL) receives the error
 *  message.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL m or info, info->struct_size
 *  smaller than sizeof(spt_matrix_summary) of this release, e.g. 0).
 *  Thread safe: may run concurrently with other readers of m. */
SPT_API spt_status spt_matrix_info(spt_context *ctx, const spt_matrix *m, spt_matrix_summary *info);

/** Borrowed pointer to the matrix's storage (layout and ld per spt_matrix_info's summary). */
SPT_API spt_status spt_matrix_data(spt_matrix *m, void **data);

/** Copy the matrix into caller memory in the caller's layout and ld. */
SPT_API spt_status spt_matrix_copy_out(const spt_matrix *m, spt_layout layout, void *data, spt_nnz ld);

/** Dense Khatri-Rao product (column-wise Kronecker): A is I x R, B is J x R,
 *  the new matrix is (I*J) x R with row i*J + j = A(i,:) .* B(j,:).
 *  Both inputs must share dtype and column count. Result is row-major. */
SPT_API spt_status spt_khatri_rao(spt_context *ctx, const spt_matrix *a, const spt_matrix *b,
                                  spt_matrix **out);

/** Dense Kronecker product: A is I x J, B is K x L, the new matrix is
 *  (I*K) x (J*L) with element (i*K+k, j*L+l) = A(i,j) * B(k,l). Row-major. */
SPT_API spt_status spt_kronecker(spt_context *ctx, const spt_matrix *a, const spt_matrix *b,
                                 spt_matrix **out);

/* ------------------------------------------------------------------------ */
/* Sparse COO tensors                                                       */
/* ------------------------------------------------------------------------ */

/** Opaque sparse tensor in coordinate (COO) format: one 32-bit index array
 *  per mode plus a value array (owning, or a read-only view of caller arrays). */
typedef struct spt_coo_s spt_coo;

/** Flags for creating and appending nonzeros (bitwise OR). */
typedef enum spt_coo_flags {
  SPT_COO_DEFAULT = 0,
  SPT_COO_REJECT_NONFINITE = 1, /**< fail with INVALID_ARGUMENT on NaN/Inf values */
  SPT_COO_GROW_DIMS = 2,         /**< (append) grow dims to fit new indices instead of failing */
  SPT_COO_FLAGS_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_coo_flags;

/** What to do with repeated coordinates.
 *
 *  A tensor is the sum of its entries: two entries with the same coordinate
 *  stand for one nonzero holding their sum (as pyttb's sptensor constructor
 *  sums repeats). Every function means that tensor, whether the repeats are
 *  kept or merged: kernels, norms, fits (CP-ALS, Tucker, CP-APR, MPI, GPU)
 *  and densities agree. KEEP only saves the sort that merging costs. */
typedef enum spt_duplicates {
  SPT_DUPLICATES_KEEP = 0,   /**< keep the entries as given (every function sums them) */
  SPT_DUPLICATES_SUM = 1,    /**< merge into one entry holding the sum */
  SPT_DUPLICATES_REJECT = 2,  /**< fail with INVALID_ARGUMENT naming the coordinate */
  SPT_DUPLICATES_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_duplicates;

/** New empty tensor of `order` (1..SPT_MAX_ORDER) modes with the given dims
 *  (each >= 1). Errors: INVALID_ARGUMENT (also for an order above
 *  SPT_MAX_ORDER), OUT_OF_MEMORY. */
SPT_API spt_status spt_coo_create(spt_context *ctx, spt_dtype dtype, uint32_t order, const spt_index *dims,
                                  spt_coo **out);

/** New tensor holding a copy of caller arrays.
 *  dims: `order` entries, or NULL to infer dims[m] = (max index in mode m) + 1
 *        (after base adjustment).
 *  indices: the coordinate of nonzero k in mode m is indices[m*ld + k]
 *        (mode-major: a column-major nnz x order array when ld = nnz, as
 *        MATLAB's subs). ld >= nnz.
 *  index_base: 0 or 1 (1 for MATLAB/Fortran/FROSTT coordinates).
 *  values: nnz values of `dtype`.
 *  flags: spt_coo_flags (SPT_COO_REJECT_NONFINITE honoured).
 *  Errors: INVALID_ARGUMENT (NULL arrays with nnz > 0, index outside dims,
 *  index below base, non-finite value when rejected, order 0 or above
 *  SPT_MAX_ORDER), OVERFLOW (nnz values or ld * order indices cannot fit
 *  the address space, e.g. a count near 2^63: checked before the arrays are
 *  read or anything is allocated), OUT_OF_MEMORY (the message names the
 *  array and its size). */
SPT_API spt_status spt_coo_create_from_arrays(spt_context *ctx, spt_dtype dtype, uint32_t order,
                                              const spt_index *dims, spt_nnz nnz, const spt_index *indices,
                                              spt_nnz ld, int index_base, const void *values, int flags,
                                              spt_coo **out);

/** Read-only view of caller arrays (0-based, layout as in
 *  spt_coo_create_from_arrays). Nothing is copied: the caller keeps the arrays
 *  alive and unchanged until spt_coo_free. The indices are validated once.
 *  Modifying calls (append, sort, coalesce) on a view return
 *  SPT_ERR_READ_ONLY; use spt_coo_copy first. Errors as for
 *  spt_coo_create_from_arrays (OVERFLOW before reading for sizes that
 *  cannot be arrays in memory). */
SPT_API spt_status spt_coo_create_view(spt_context *ctx, spt_dtype dtype, uint32_t order, const spt_index *dims,
                                       spt_nnz nnz, const spt_index *indices, spt_nnz ld, const void *values,
                                       spt_coo **out);

/** Deep copy (a view becomes an owning tensor). */
SPT_API spt_status spt_coo_copy(spt_context *ctx, const spt_coo *x, spt_coo **out);

/** Copy with values converted to `dtype`. float64 -> float32 never turns a
 *  finite value into Inf: when some values exceed float32's range (above
 *  3.4028235e38 in magnitude), the call fails with SPT_ERR_OVERFLOW and a
 *  message naming how many, the first value and its nonzero number and
 *  coordinate; nothing is created. Errors: INVALID_ARGUMENT (NULL, unknown
 *  dtype), OVERFLOW, OUT_OF_MEMORY. Thread safety: only reads x. */
SPT_API spt_status spt_coo_convert_dtype(spt_context *ctx, const spt_coo *x, spt_dtype dtype, spt_coo **out);

/** Free a tensor. NULL is ignored. */
SPT_API spt_status spt_coo_free(spt_coo *x);

/** Append `n` nonzeros (layout as in spt_coo_create_from_arrays, values of
 *  the tensor's dtype). Indices must lie inside dims unless
 *  SPT_COO_GROW_DIMS is set. On error the tensor is unchanged.
 *  Errors: READ_ONLY (a view), INVALID_ARGUMENT, OVERFLOW (the new total,
 *  n values or ld * order indices cannot fit the address space, e.g. n near
 *  2^63: checked before reading the arrays), OUT_OF_MEMORY (names the array). */
SPT_API spt_status spt_coo_append(spt_context *ctx, spt_coo *x, spt_nnz n, const spt_index *indices,
                                  spt_nnz ld, int index_base, const void *values, int flags);

/** The value type stored in the file x was read from by spt_read: the .sptb
 *  or SPLATT .bin file's dtype (spt_read converts values to opts->dtype, so
 *  it may differ from x's dtype), or 0 when x was not read from a binary
 *  file (text files store decimal numbers; tensors built in memory, copies
 *  and conversions have no file). Errors: SPT_ERR_INVALID_ARGUMENT (x or
 *  dtype NULL). Thread safety: only reads x. */
SPT_API spt_status spt_coo_file_dtype(const spt_coo *x, spt_dtype *dtype);

/** What a COO tensor holds (spt_coo_info). Set struct_size =
 *  sizeof(spt_coo_summary) before the call; later versions may append
 *  fields. */
typedef struct spt_coo_summary {
  size_t struct_size; /**< set by the caller */
  spt_dtype dtype;    /**< out: value type */
  uint32_t order;     /**< out: number of modes (spt_coo_dims gives the dims) */
  spt_nnz nnz;        /**< out: stored nonzeros (a repeated coordinate counts each time it is stored) */
  int read_only;      /**< out: 1 for a read-only view of caller arrays (spt_coo_create_view), else 0 */
} spt_coo_summary;

/** Describe a COO tensor into *info: value type, order, nonzero count and
 *  whether it is a read-only view. Only info->struct_size bytes are
 *  written (struct_size is kept: a newer caller's longer struct keeps its
 *  tail). Nothing is allocated and nothing in *info needs freeing. ctx (may
 *  be NULL) receives the error message.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL x or info, info->struct_size
 *  smaller than sizeof(spt_coo_summary) of this release, e.g. 0).
 *  Thread safe: may run concurrently with other readers of x. */
SPT_API spt_status spt_coo_info(spt_context *ctx, const spt_coo *x, spt_coo_summary *info);

/** Copy the dims (order entries) into `dims`. */
SPT_API spt_status spt_coo_dims(const spt_coo *x, spt_index *dims);

/** Borrowed pointer to the nnz 0-based indices of mode `mode`. */
SPT_API spt_status spt_coo_indices(const spt_coo *x, uint32_t mode, const spt_index **indices);

/** Borrowed pointer to the nnz values (float or double per dtype). */
SPT_API spt_status spt_coo_values(const spt_coo *x, const void **values);

/** Sort nonzeros lexicographically, comparing modes in `mode_order`
 *  (a permutation of 0..order-1; NULL means 0,1,...,order-1). Stable. */
SPT_API spt_status spt_coo_sort(spt_context *ctx, spt_coo *x, const uint32_t *mode_order);

/** Sort nonzeros in Z-Morton order (bits of all modes interleaved, most
 *  significant first; mode 0 takes the highest bit of each level). */
SPT_API spt_status spt_coo_sort_morton(spt_context *ctx, spt_coo *x);

/** Merge repeated coordinates: SPT_DUPLICATES_SUM sums them, REJECT fails
 *  naming the first repeated coordinate (tensor unchanged), KEEP does
 *  nothing. Sorts the tensor (mode order 0..N-1) as a side effect. */
SPT_API spt_status spt_coo_coalesce(spt_context *ctx, spt_coo *x, spt_duplicates policy);

/** Frobenius norm of the tensor, accumulated in double: entries that repeat
 *  a coordinate are summed first (see spt_duplicates). Linear time when x
 *  is sorted (known, or checked in one pass); otherwise sorts a permutation
 *  of the nonzeros (8 bytes per nonzero, freed on return). x is not changed.
 *  Errors: INVALID_ARGUMENT (NULL), OUT_OF_MEMORY. Thread safety: x may be
 *  read concurrently. */
SPT_API spt_status spt_coo_norm(spt_context *ctx, const spt_coo *x, double *norm);

/** Number of distinct coordinates among x's nonzeros (`*distinct` <= nnz;
 *  nnz - distinct entries repeat an earlier coordinate and are summed into
 *  it by every function). Same cost as spt_coo_norm; x is not changed.
 *  Errors: INVALID_ARGUMENT (NULL), OUT_OF_MEMORY. Thread safety: x may be
 *  read concurrently. */
SPT_API spt_status spt_coo_count_distinct(spt_context *ctx, const spt_coo *x, spt_nnz *distinct);

/* ------------------------------------------------------------------------ */
/* Semi-sparse tensors (sCOO) and CSR unfoldings: kernel outputs            */
/* ------------------------------------------------------------------------ */

/** Semi-sparse tensor: sparse in some modes, dense in the others (one or
 *  more "dense modes", d_0 < d_1 < ...). It stores `nfibers` fibers; fiber f
 *  has coordinates indices_m[f] in each sparse mode m and a dense block of
 *  B = prod_d dims[d] values at values[f * B ...], stored with the LOWEST
 *  dense mode fastest: entry (r_{d_0}, r_{d_1}, ...) is at
 *  r_{d_0} + dims[d_0] (r_{d_1} + dims[d_1] (...)). With one dense mode
 *  (spt_ttm results) a block is the fiber of length dims[dense_mode]. */
typedef struct spt_scoo_s spt_scoo;

/** Free a semi-sparse tensor. NULL is ignored. Returns SPT_OK. */
SPT_API spt_status spt_scoo_free(spt_scoo *y);
/** What a semi-sparse tensor holds (spt_scoo_info). Set struct_size =
 *  sizeof(spt_scoo_summary) before the call; later versions may append
 *  fields. */
typedef struct spt_scoo_summary {
  size_t struct_size;        /**< set by the caller */
  spt_dtype dtype;           /**< out: value type */
  uint32_t order;            /**< out: number of modes, dense ones included */
  uint32_t dense_mode;       /**< out: the lowest dense mode (the only one for spt_ttm results) */
  uint32_t dense_mode_count; /**< out: number of dense modes (>= 1; spt_scoo_dense_modes lists them) */
  spt_nnz nfibers;           /**< out: number of stored fibers (dense blocks) */
  spt_nnz block_length;      /**< out: values per fiber: the product of the dense modes' dims */
} spt_scoo_summary;

/** Describe a semi-sparse tensor into *info. Only info->struct_size bytes
 *  are written (struct_size is kept: a newer caller's longer struct keeps
 *  its tail). Nothing is allocated and nothing in *info needs freeing. ctx
 *  (may be NULL) receives the error message.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL y or info, info->struct_size
 *  smaller than sizeof(spt_scoo_summary) of this release, e.g. 0).
 *  Thread safe: may run concurrently with other readers of y. */
SPT_API spt_status spt_scoo_info(spt_context *ctx, const spt_scoo *y, spt_scoo_summary *info);
/** Copy the dims (order entries; a dense mode has its dense size) into `dims`. */
SPT_API spt_status spt_scoo_dims(const spt_scoo *y, spt_index *dims);
/** The dense modes of y, ascending: *count receives how many there are
 *  (>= 1); modes_out, if not NULL, receives them (room for `order` entries
 *  always suffices). The block length is the product of their dims.
 *  Errors: INVALID_ARGUMENT (y or count NULL). Thread safe on a handle
 *  that is not being modified. */
SPT_API spt_status spt_scoo_dense_modes(const spt_scoo *y, uint32_t *count, uint32_t *modes_out);
/** Borrowed fiber coordinates in sparse mode `mode` (not a dense mode). */
SPT_API spt_status spt_scoo_indices(const spt_scoo *y, uint32_t mode, const spt_index **indices);
/** Borrowed values: nfibers blocks of prod_{dense d} dims[d] values each
 *  (layout above; one dense mode: nfibers x dims[dense_mode], row-major). */
SPT_API spt_status spt_scoo_values(const spt_scoo *y, const void **values);
/** Convert to COO (any number of dense modes), dropping exact zeros. */
SPT_API spt_status spt_scoo_to_coo(spt_context *ctx, const spt_scoo *y, spt_coo **out);

/** Sparse matrix in compressed sparse row form (mode-n unfolding). Column
 *  indices are 64-bit because an unfolding's column count is a product of dims. */
typedef struct spt_csr_s spt_csr;

/** Free a CSR matrix. NULL is ignored. Returns SPT_OK. */
SPT_API spt_status spt_csr_free(spt_csr *a);
/** Borrowed arrays: row_ptr has rows+1 entries, col_ind and values have nnz.
 *  Any output may be NULL. Columns are sorted within each row. */
SPT_API spt_status spt_csr_arrays(const spt_csr *a, spt_dtype *dtype, spt_nnz *rows, uint64_t *cols, spt_nnz *nnz,
                                  const spt_nnz **row_ptr, const uint64_t **col_ind, const void **values);

/* ------------------------------------------------------------------------ */
/* Kernels on COO tensors                                                   */
/* ------------------------------------------------------------------------ */

/** Tensor-times-vector in mode `mode`: Y = X x_mode v, an order-(N-1) COO
 *  tensor with the remaining modes in their original order (duplicates
 *  summed, result sorted). `v` has dims[mode] entries of the tensor's dtype.
 *  Requires order >= 2. */
SPT_API spt_status spt_ttv(spt_context *ctx, const spt_coo *x, uint32_t mode, const void *v, spt_nnz v_len,
                           spt_coo **out);

/** Tensor times a vector in every mode but `keep_mode` (TTV chain):
 *  out(i) = sum over nonzeros with i_keep = i of x * prod_{m != keep} vectors[m][i_m],
 *  the dense vector X x_1 v_1 ... (mode keep skipped) ... x_N v_N.
 *  vectors: `order` pointers; vectors[m] holds dims[m] values of the
 *  tensor's dtype; vectors[keep_mode] is not read and may be NULL.
 *  out: caller memory for dims[keep_mode] values of the tensor's dtype,
 *  overwritten (0 where no nonzero has that index); it must not overlap a
 *  vector. Repeated coordinates count as summed. Terms are formed and
 *  summed in double (also for float32) in an order that does not depend on
 *  the thread count, so the result is reproducible. Order-1 tensors are
 *  accepted (out = the densified vector).
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL x, vectors or out, keep_mode out
 *  of range, a needed vectors[m] NULL, out overlapping a vector),
 *  SPT_ERR_OUT_OF_MEMORY. Thread safety: only reads x and the vectors. */
SPT_API spt_status spt_ttv_chain(spt_context *ctx, const spt_coo *x, uint32_t keep_mode,
                                 const void *const *vectors, void *out);

/** Full contraction with a vector in every mode:
 *  *result = sum over nonzeros of x * prod_m vectors[m][i_m], summed in
 *  double in a thread-count independent order. vectors: `order` non-NULL
 *  pointers, vectors[m] holding dims[m] values of the tensor's dtype.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL x, vectors, a vector or result).
 *  Thread safety: only reads x and the vectors. */
SPT_API spt_status spt_ttv_all(spt_context *ctx, const spt_coo *x, const void *const *vectors, double *result);

/** Sparse tensor-times-matrix (SpTTM) in mode `mode`: U is dims[mode] x R
 *  (factor-matrix shape, as in ParTI!), and
 *  Y(i_1..r..i_N) = sum_{i_mode} X(i_1..i_mode..i_N) U(i_mode, r),
 *  i.e. Kolda's X x_mode U^T. The result is semi-sparse with dense mode
 *  `mode` of size R, one fiber per distinct coordinate of the other modes. */
SPT_API spt_status spt_ttm(spt_context *ctx, const spt_coo *x, uint32_t mode, const spt_matrix *u,
                           spt_scoo **out);

/** Semi-sparse tensor-times-matrix (SsTTM): Z = Y x_mode U^T for a
 *  semi-sparse Y in which `mode` is sparse, U dims[mode] x R (the same
 *  shape convention as spt_ttm). Z is dense in Y's dense modes plus `mode`
 *  (size R); it has one fiber per distinct coordinate of Y's other sparse
 *  modes (fibers of Y sharing them are summed into one block).
 *  Arguments: y and u are only read (u any layout, y's dtype); *out
 *  receives a new handle owned by the caller (spt_scoo_free).
 *  Errors: INVALID_ARGUMENT (NULL, mode out of range or already dense,
 *  dtype mismatch, u not dims[mode] x R with R >= 1), OVERFLOW (R or the
 *  block size does not fit). Thread safety: concurrent calls on the same y
 *  with distinct contexts are safe. */
SPT_API spt_status spt_scoo_ttm(spt_context *ctx, const spt_scoo *y, uint32_t mode, const spt_matrix *u,
                                spt_scoo **out);

/** TTM chain: Y = X x_{modes[0]} U_0^T x_{modes[1]} U_1^T ... (count
 *  distinct modes, contracted in that order; us[j] is dims[modes[j]] x R_j,
 *  any layout, X's dtype). X is sorted once (a copy, unless X is already
 *  sorted with the non-chain modes ascending followed by modes[count-1],
 *  ..., modes[0]); then one SpTTM and count-1 SsTTMs run, none of which
 *  sorts again. The result is semi-sparse, dense in every chain mode; the
 *  order of `modes` changes only the cost and rounding, not the result.
 *  Memory: the sorted copy plus two consecutive intermediates at a time.
 *  *out receives a new handle owned by the caller (spt_scoo_free).
 *  Errors: INVALID_ARGUMENT (NULL arguments, count 0 or > order, a mode
 *  out of range or repeated, a matrix of the wrong dtype or shape),
 *  OVERFLOW (a rank or the block size prod R_j does not fit).
 *  Thread safety: x and us are only read. */
SPT_API spt_status spt_ttm_chain(spt_context *ctx, const spt_coo *x, uint32_t count, const uint32_t *modes,
                                 const spt_matrix *const *us, spt_scoo **out);

/** Matricized tensor times Khatri-Rao product in mode `mode`:
 *  out(i, r) = sum over nonzeros with i_mode = i of  x * prod_{m != mode} U_m(i_m, r).
 *  factors: `order` matrices (factors[mode] is not read and may be NULL),
 *  U_m of dims[m] x R, same dtype as X. out: preallocated dims[mode] x R of
 *  the same dtype; overwritten. Layouts may differ per matrix. */
SPT_API spt_status spt_mttkrp(spt_context *ctx, const spt_coo *x, const spt_matrix *const *factors, uint32_t mode,
                              spt_matrix *out);

/** Elementwise operations. */
typedef enum spt_elementwise_op {
  SPT_OP_ADD = 0, /**< X + Y over the union of patterns */
  SPT_OP_SUB = 1, /**< X - Y over the union of patterns */
  SPT_OP_MUL = 2, /**< X .* Y over the intersection of patterns */
  SPT_OP_DIV = 3,  /**< X ./ Y over the intersection of patterns (entries where
                       Y is an implicit zero are not produced) */
  SPT_ELEMENTWISE_OP_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_elementwise_op;

/** Elementwise op of two tensors with the same order, dims and dtype.
 *  Repeated coordinates are summed first. Result is coalesced and sorted;
 *  entries that become exactly zero are kept (use the pattern as computed). */
SPT_API spt_status spt_elementwise(spt_context *ctx, spt_elementwise_op op, const spt_coo *x, const spt_coo *y,
                                   spt_coo **out);

/** Elementwise op of a tensor and a scalar applied to the stored nonzeros
 *  (the pattern is kept: ADD/SUB shift stored values only). DIV by 0 is
 *  rejected with INVALID_ARGUMENT. */
SPT_API spt_status spt_elementwise_scalar(spt_context *ctx, spt_elementwise_op op, const spt_coo *x, double s,
                                          spt_coo **out);

/** Mode-n unfolding X_(n) as CSR: rows = dims[mode], column of a nonzero is
 *  the linear index of its other coordinates with the lowest other mode
 *  varying fastest (Kolda's convention). Duplicates are summed.
 *  Errors: OVERFLOW when the column count exceeds 2^64 - 1. */
SPT_API spt_status spt_unfold_csr(spt_context *ctx, const spt_coo *x, uint32_t mode, spt_csr **out);

/* ------------------------------------------------------------------------ */
/* Kruskal tensors (CP models)                                              */
/* ------------------------------------------------------------------------ */

/** Opaque Kruskal tensor (CP model): weights lambda, one dims[m] x rank
 *  factor matrix per mode, and the decomposition's results (fit,
 *  iterations, converged flag, per-iteration history). */
typedef struct spt_ktensor_s spt_ktensor;

/** New Kruskal tensor with lambda = 1 and zero factors (dims[m] x rank,
 *  row-major). */
SPT_API spt_status spt_ktensor_create(spt_context *ctx, spt_dtype dtype, uint32_t order, const spt_index *dims,
                                      spt_index rank, spt_ktensor **out);
/** Free a Kruskal tensor and its factors. NULL is ignored. Returns SPT_OK. */
SPT_API spt_status spt_ktensor_free(spt_ktensor *k);
/** What a Kruskal tensor holds (spt_ktensor_info). Set struct_size =
 *  sizeof(spt_ktensor_summary) before the call; later versions may append
 *  fields. fit, iterations and converged are those of spt_ktensor_result
 *  (0 for a ktensor no decomposition produced). */
typedef struct spt_ktensor_summary {
  size_t struct_size; /**< set by the caller */
  spt_dtype dtype;    /**< out: value type */
  uint32_t order;     /**< out: number of modes (spt_ktensor_dims gives the dims) */
  spt_index rank;     /**< out: number of components (columns of every factor, entries of lambda) */
  int iterations;     /**< out: sweeps (CP-ALS) or outer iterations (CP-APR) done */
  double fit;         /**< out: final fit (CP-ALS) or Poisson log-likelihood (CP-APR) */
  int converged;      /**< out: 1 when the decomposition met its tolerance, else 0 */
} spt_ktensor_summary;

/** Describe a Kruskal tensor into *info. Only info->struct_size bytes are
 *  written (struct_size is kept: a newer caller's longer struct keeps its
 *  tail). Nothing is allocated and nothing in *info needs freeing. ctx (may
 *  be NULL) receives the error message.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL k or info, info->struct_size
 *  smaller than sizeof(spt_ktensor_summary) of this release, e.g. 0).
 *  Thread safe: may run concurrently with other readers of k. */
SPT_API spt_status spt_ktensor_info(spt_context *ctx, const spt_ktensor *k, spt_ktensor_summary *info);
/** Copy the dims (order entries) into `dims`. */
SPT_API spt_status spt_ktensor_dims(const spt_ktensor *k, spt_index *dims);
/** Borrowed lambda (rank entries of the dtype); writable. */
SPT_API spt_status spt_ktensor_lambda(spt_ktensor *k, void **lambda);
/** Borrowed factor matrix of mode `mode` (owned by k; do not free); writable. */
SPT_API spt_status spt_ktensor_factor(spt_ktensor *k, uint32_t mode, spt_matrix **factor);
/** Norm ||K||_F computed from lambda and Gram matrices (no densification). */
SPT_API spt_status spt_ktensor_norm(spt_context *ctx, const spt_ktensor *k, double *norm);

/** Inner product <X, K> of a sparse tensor and a Kruskal tensor of the same
 *  dims (and dtype), accumulated in double. */
SPT_API spt_status spt_inner_ktensor(spt_context *ctx, const spt_coo *x, const spt_ktensor *k, double *result);

/** Results of a decomposition stored on the ktensor. Set by spt_cpd_als
 *  (fit: final fit; iterations: sweeps done; converged: 1 if the tolerance
 *  was met) and by spt_cp_apr (fit: final Poisson log-likelihood;
 *  iterations: outer iterations; converged: 1 when an outer iteration needed
 *  no update in any mode). Outputs may be NULL. */
SPT_API spt_status spt_ktensor_result(const spt_ktensor *k, double *fit, int *iterations, int *converged);

/** Per-iteration history (borrowed arrays of `count` entries): fit (for
 *  spt_cp_apr: log-likelihood per outer iteration) and wall-clock seconds of
 *  each iteration. Outputs may be NULL. */
SPT_API spt_status spt_ktensor_history(const spt_ktensor *k, int *count, const double **fits,
                                       const double **seconds);

/* ------------------------------------------------------------------------ */
/* CP-ALS                                                                   */
/* ------------------------------------------------------------------------ */

/** How spt_cpd_als initialises the factor matrices. */
typedef enum spt_cpd_init {
  SPT_CPD_INIT_RANDOM = 0, /**< uniform [0,1) factors from the seed (as pyttb 'random') */
  SPT_CPD_INIT_USER = 1,    /**< copy opts->init_factors */
  SPT_CPD_INIT_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_cpd_init;

/** Per-iteration callback: iteration (1-based), fit, change in fit, seconds of
 *  this iteration. Return non-zero to stop early (result is kept, status
 *  SPT_WARN_NOT_CONVERGED). */
typedef int (*spt_cpd_callback)(void *user_data, int iteration, double fit, double delta, double seconds);

/** The sparse storage formats of the library, each with its handle type
 *  and the same lifecycle (built from COO, described, decoded, freed, and
 *  one MTTKRP entry point; see docs/api-conventions.md). A function taking a format accepts those it can run on and answers
 *  SPT_ERR_UNSUPPORTED, with the reason in the last-error message, for the
 *  others (see each function). Not to be confused with spt_file_format
 *  (SPT_FILE_*), the layout of a file on disk. */
typedef enum spt_tensor_format {
  SPT_TENSOR_FORMAT_AUTO = 0,   /**< chosen from the tensor's statistics (see spt_suggest_format) */
  SPT_TENSOR_FORMAT_COO = 1,    /**< coordinate lists (spt_coo; no conversion) */
  SPT_TENSOR_FORMAT_CSF = 2,    /**< compressed sparse fibers, SPLATT-style trees (spt_csf, sptensor/csf.h) */
  SPT_TENSOR_FORMAT_HICOO = 3,  /**< hierarchical COO, blocked with 8-bit element indices (spt_hicoo, sptensor/hicoo.h) */
  SPT_TENSOR_FORMAT_FCOO = 4,   /**< flagged COO, one copy per mode (spt_fcoo, sptensor/fcoo.h; never chosen by AUTO) */
  SPT_TENSOR_FORMAT_HBCSF = 5,  /**< hybrid B-CSF, one tree per root mode (spt_hbcsf, sptensor/hbcsf.h) */
  SPT_TENSOR_FORMAT_HLS = 6,    /**< hybrid linear storage, orders 3 and 4 (spt_hls, sptensor/hls.h) */
  SPT_TENSOR_FORMAT_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_tensor_format;

/** How many CSF trees a CP-ALS keeps (SPLATT's policies). */
typedef enum spt_csf_policy {
  SPT_CSF_AUTO = 0,     /**< chosen by the library (memory vs speed; only the trees the MTTKRPs run on) */
  SPT_CSF_ONEMODE = 1,  /**< one tree (shortest mode at the root), MTTKRP at every level */
  SPT_CSF_TWOMODE = 2,  /**< two trees: the second rooted at the first tree's leaf mode */
  SPT_CSF_ALLMODE = 3,  /**< one tree per mode, each MTTKRP at its root */
  SPT_CSF_MEMOIZED = 4,  /**< CP-ALS only: one tree with levels in update order, intermediates kept
                             across a sweep (ADATM memoization; see spt_cpd_options.memo_budget_bytes) */
  SPT_CSF_POLICY_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_csf_policy;

/** Advice from spt_suggest_format. Set struct_size (and optionally a reason
 *  buffer) before the call; the other fields are outputs. */
typedef struct spt_format_advice {
  size_t struct_size;         /**< set by the caller: sizeof(spt_format_advice) */
  char *reason;               /**< caller buffer for the explanation (NUL-terminated, truncated to fit), or NULL */
  size_t reason_capacity;     /**< bytes at `reason` */
  size_t reason_length;       /**< out: length of the whole explanation (without the NUL) */
  spt_tensor_format format;   /**< out: COO (order 1), CSF or HICOO (never AUTO) */
  spt_csf_policy csf_policy;  /**< out: the tree policy when format is CSF */
  double block_ratio;         /**< out: HiCOO alpha_b = blocks / nnz with the suggested B (0 when not needed) */
  double slice_per_block;     /**< out: HiCOO block density c_b (0 when not needed) */
} spt_format_advice;

/** Which storage format a CP-ALS of rank `rank` on x should use on this
 *  machine (the context's thread count), and why: HiCOO for tensors under
 *  16384 nonzeros (all in cache; least per-call overhead); else CSF with one tree per mode
 *  when those trees fit 4x the COO's bytes (the fastest CP-ALS format in
 *  our benchmarks); else HiCOO statistics with the suggested block size
 *  decide by the thresholds of Li's dissertation §4.3.3: HiCOO when its
 *  blocks are dense enough (c_b >= 0.01) or it compresses (alpha_b below
 *  the storage break-even), else one CSF tree (memoized for order >= 4 when
 *  a level of `rank`-wide intermediates fits a quarter of the memory). The
 *  same rule is what spt_cpd_options.format = SPT_TENSOR_FORMAT_AUTO and
 *  `sptensor cpd --format auto` use (which reuse what the advice built).
 *  Costs one CSF tree build (plus one HiCOO conversion in the last case).
 *  Deterministic for a given tensor and thread count. x is not modified.
 *  Errors: INVALID_ARGUMENT (NULL x or advice, struct_size 0, rank 0, a
 *  reason_capacity without a buffer), OUT_OF_MEMORY. Thread safe for
 *  distinct advice structs. */
SPT_API spt_status spt_suggest_format(spt_context *ctx, const spt_coo *x, spt_index rank, spt_format_advice *advice);

/** CP-ALS options. Always initialise with spt_cpd_options_init() first: the
 *  struct_size field lets later versions add fields compatibly. */
typedef struct spt_cpd_options {
  size_t struct_size;        /**< set by spt_cpd_options_init */
  spt_index rank;            /**< number of components (default 10) */
  int max_iters;             /**< maximum sweeps (default 50) */
  double tol;                /**< stop when |fit change| < tol after sweep 1 (default 1e-4) */
  spt_cpd_init init;         /**< SPT_CPD_INIT_RANDOM (default) or _USER */
  uint64_t seed;             /**< random init seed (default 0 = use the context seed) */
  const spt_matrix *const *init_factors; /**< with SPT_CPD_INIT_USER: order matrices dims[m] x rank */
  spt_cpd_callback callback; /**< optional */
  void *callback_data;       /**< passed to callback */
  spt_tensor_format format;  /**< storage the MTTKRPs run on: AUTO (default), COO, CSF, HICOO or FCOO;
                                  HBCSF and HLS give SPT_ERR_UNSUPPORTED (one handle serves one mode) */
  spt_csf_policy csf_policy; /**< with format CSF (or AUTO choosing CSF): trees to keep (default AUTO) */
  uint64_t memo_budget_bytes; /**< SPT_CSF_MEMOIZED: memory for kept intermediates (0 = a quarter of RAM) */
} spt_cpd_options;

/** Fill `opts` with defaults. */
SPT_API spt_status spt_cpd_options_init(spt_cpd_options *opts);
/** Same, writing only the first `struct_size` bytes (the caller's
 *  sizeof(spt_cpd_options), which is smaller when the caller was compiled against
 *  an older header); struct_size is stored in opts->struct_size. The macro
 *  spt_cpd_options_init(opts) below calls this with sizeof *(opts), so code compiled
 *  against any release's header never has more bytes written than its
 *  struct holds. Errors: SPT_ERR_INVALID_ARGUMENT (opts NULL, struct_size
 *  below the first release's size). Thread safe. */
SPT_API spt_status spt_cpd_options_init_size(spt_cpd_options *opts, size_t struct_size);
/** Macro form of spt_cpd_options_init(): calls spt_cpd_options_init_size with sizeof *(opts), so a
 *  program never has more bytes written than its own struct holds. */
#define spt_cpd_options_init(opts) spt_cpd_options_init_size((opts), sizeof *(opts))

/** CP decomposition by alternating least squares (Tensor Toolbox / pyttb
 *  cp_als numerics): per mode MTTKRP, Hadamard product of Gram matrices,
 *  Cholesky solve with pseudo-inverse fallback, column normalisation (2-norm
 *  first sweep, max-norm after), fit via ||X||, <X,M>, ||M|| without forming
 *  M; at the end columns are normalised into lambda, sorted by decreasing
 *  lambda and signs fixed. The ktensor has the tensor's dtype and carries
 *  fit, iterations, converged flag and history.
 *  Returns SPT_OK when converged, SPT_WARN_NOT_CONVERGED (with a valid
 *  result) when max_iters was reached first (also when tol <= 0).
 *  The MTTKRPs run on opts->format: COO as given, or a CSF or HiCOO copy
 *  built for the call (csf_policy MEMOIZED: one CSF tree with intermediates
 *  kept across a sweep); AUTO chooses as spt_suggest_format does. The
 *  result is the same to rounding.
 *  When the context's backend resolves to CUDA (CUDA forced, or AUTO with a
 *  device) and opts->format is COO or AUTO, the whole loop runs on the GPU
 *  (factors stay on the device; same numerics, fit agreeing with the CPU to
 *  rounding; the callback is called after each sweep as on the CPU). Under
 *  AUTO, a working set that does not fit the device (see env
 *  SPT_CUDA_MEMORY_LIMIT in the README) or a device failure runs it on the
 *  CPU instead, with a note in the log, as does a CSF/HiCOO format.
 *  Errors: INVALID_ARGUMENT (rank 0, init factor shape/dtype mismatch,
 *  empty tensor, a format or csf_policy outside its enum), UNSUPPORTED
 *  (format HBCSF or HLS), NUMERICAL (non-finite
 *  values appear), OVERFLOW (the factors dims[m] x rank or the rank x rank
 *  Gram matrices do not fit 64-bit sizes, e.g. rank 2^31; checked before
 *  anything is allocated), OUT_OF_MEMORY (also before allocating, with the
 *  sizes, when those matrices exceed the machine's physical memory); with
 *  backend CUDA forced also
 *  OUT_OF_MEMORY (device memory), DEVICE (device failure) and UNSUPPORTED
 *  (format CSF or HiCOO: GPU CP-ALS runs on COO for now). */
SPT_API spt_status spt_cpd_als(spt_context *ctx, const spt_coo *x, const spt_cpd_options *opts,
                               spt_ktensor **out);

/** spt_cpd_als taking over the caller's tensor, to save memory: the call
 *  frees the tensor handle the caller passes by address in x, and stores
 *  NULL there, whatever its status (once that handle is not NULL), as early
 *  in the run as it can. On the CPU with CSF (opts->format
 *  CSF with a ONEMODE, TWOMODE, ALLMODE or AUTO policy, or AUTO choosing
 *  CSF) the COO is freed right after the first CSF tree is built and the
 *  other trees are built from that tree, so the COO and every tree are
 *  never held at once (the peak memory of a run from a file); other runs
 *  free it when they end. Results, status codes and errors as spt_cpd_als
 *  (the same trees, kernels and numerics); *out as there. A view's handle
 *  is freed, not the caller's arrays behind it.
 *  Errors: as spt_cpd_als, plus INVALID_ARGUMENT for x or *x NULL (then
 *  nothing is freed).
 *  Thread safety: no other thread may use *x (it is freed here). */
SPT_API spt_status spt_cpd_als_take(spt_context *ctx, spt_coo **x, const spt_cpd_options *opts,
                                    spt_ktensor **out);

/* ------------------------------------------------------------------------ */
/* File I/O                                                                 */
/* ------------------------------------------------------------------------ */

/** File formats. */
typedef enum spt_file_format {
  SPT_FILE_AUTO = 0,          /**< detect from content (binary magic or text) */
  SPT_FILE_TNS = 1,           /**< FROSTT text: "i1 ... iN value" per line (spt_write adds the extended header when needed to keep the dims) */
  SPT_FILE_TNS_EXTENDED = 2,  /**< ParTI!/B-CSF text: order line, dims line, then entries */
  SPT_FILE_SPLATT_BIN = 3,    /**< SPLATT binary coordinate file (.bin) */
  SPT_FILE_SPT_BIN = 4,        /**< libsptensor binary (.sptb): versioned, checksummed */
  SPT_FILE_FORMAT_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_file_format;

/** Compression of a file (reading detects it from the content). */
typedef enum spt_compression {
  SPT_COMPRESS_AUTO = 0, /**< read: detect by magic; write: from the file extension */
  SPT_COMPRESS_NONE = 1,
  SPT_COMPRESS_GZIP = 2,
  SPT_COMPRESS_XZ = 3,
  SPT_COMPRESS_ZSTD = 4,
  SPT_COMPRESSION_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_compression;

/** Options for spt_read. Initialise with spt_read_options_init(). */
typedef struct spt_read_options {
  size_t struct_size;        /**< set by spt_read_options_init */
  spt_file_format format;    /**< default AUTO (text vs binary by content; extended header detected) */
  spt_dtype dtype;           /**< value type of the result (default SPT_FLOAT64) */
  int index_base;            /**< text files: 1 (default, FROSTT) or 0 */
  uint32_t order;            /**< 0 = infer; else the expected order (checked) */
  const spt_index *dims;     /**< NULL = infer (max index); else `order` dims that indices must respect */
  spt_duplicates duplicates; /**< default SPT_DUPLICATES_KEEP */
  int reject_nonfinite;      /**< non-zero: NaN/Inf values are a parse error */
  int copy_binary;           /**< non-zero: read a .sptb file by copy; copying is the default since map_binary
                                  was added, so this only overrides map_binary */
  int64_t map_binary;        /**< non-zero: load an uncompressed .sptb file zero-copy from a read-only mapping
                                  of the file. Faster and lighter, but if the file is truncated or rewritten in
                                  place while the tensor lives, touching the tensor raises SIGBUS and kills the
                                  process. Use only for files nothing else writes. Default 0 (read by copy).
                                  64-bit: it starts on an 8-byte boundary, after any tail padding a struct
                                  ending at copy_binary had. */
} spt_read_options;

/** Fill `opts` with defaults (the whole struct of this release). */
SPT_API spt_status spt_read_options_init(spt_read_options *opts);
/** Same, writing only the first `struct_size` bytes (the caller's
 *  sizeof(spt_read_options), which is smaller when the caller was compiled against
 *  an older header); struct_size is stored in opts->struct_size. The macro
 *  spt_read_options_init(opts) below calls this with sizeof *(opts), so code compiled
 *  against any release's header never has more bytes written than its
 *  struct holds. Errors: SPT_ERR_INVALID_ARGUMENT (opts NULL, struct_size
 *  below the first release's size). Thread safe. */
SPT_API spt_status spt_read_options_init_size(spt_read_options *opts, size_t struct_size);
/** Macro form of spt_read_options_init(): calls spt_read_options_init_size with sizeof *(opts), so a
 *  program never has more bytes written than its own struct holds. */
#define spt_read_options_init(opts) spt_read_options_init_size((opts), sizeof *(opts))

/** Read a tensor file (any spt_file_format, optionally gzip/xz/zstd
 *  compressed). Text is parsed in parallel; progress goes to the context's
 *  progress callback. opts may be NULL for defaults.
 *  Files are read by copy: a file truncated or rewritten while it is read
 *  gives SPT_ERR_IO or SPT_ERR_PARSE, never a signal. Text and compressed
 *  input are streamed through a fixed buffer (docs/reliability.md, "Input
 *  limits"): memory is the tensor plus that buffer whatever the file holds;
 *  a line longer than 1 MiB, a NUL byte, or more than 256 MiB of blank
 *  lines without an entry fail with SPT_ERR_PARSE naming the byte offset.
 *  Binary files inside a compressor or a pipe are decoded into memory, never
 *  beyond the size their header declares. Bytes after the last gzip/xz/zstd
 *  stream that are not another stream are SPT_ERR_PARSE.
 *  With opts->map_binary, an uncompressed .sptb file read with its own
 *  dtype is loaded zero-copy: after the checksum pass, the tensor's arrays
 *  are a private read-only mapping of the file (any in-place change to the
 *  tensor copies them first). The file may then be deleted or replaced by
 *  rename (as spt_write does) while the tensor lives, but must not be
 *  truncated or rewritten in place (SIGBUS).
 *  Errors: IO (open/read failure), PARSE (message "FILE:LINE: what was
 *  expected"; also an order above SPT_MAX_ORDER in a header or the first
 *  entry, refused before anything is sized by it), UNSUPPORTED (compression
 *  not compiled in), INVALID_ARGUMENT, OVERFLOW (more than 2^32-1 in an
 *  index; a float64 value beyond float32's range when opts->dtype is
 *  SPT_FLOAT32, naming the value and where it is), OUT_OF_MEMORY.
 *  The file's stored dtype (binary formats) is kept: see
 *  spt_coo_file_dtype. Messages write control bytes of file names as C
 *  escapes (a newline as \\n, ESC as \\x1b). */
SPT_API spt_status spt_read(spt_context *ctx, const char *path, const spt_read_options *opts, spt_coo **out);

/** Options for spt_write. Initialise with spt_write_options_init(). */
typedef struct spt_write_options {
  size_t struct_size;           /**< set by spt_write_options_init */
  spt_file_format format;       /**< AUTO = by extension: .bin SPLATT, .sptb ours, else TNS */
  spt_compression compression;  /**< AUTO = by extension (.gz, .xz, .zst), else none */
  int index_base;               /**< text: 1 (default) or 0 */
  int precision;                /**< text: significant digits (0 = shortest exact round trip) */
} spt_write_options;

/** Fill `opts` with defaults (the whole struct of this release). */
SPT_API spt_status spt_write_options_init(spt_write_options *opts);
/** Same, writing only the first `struct_size` bytes (the caller's
 *  sizeof(spt_write_options), which is smaller when the caller was compiled against
 *  an older header); struct_size is stored in opts->struct_size. The macro
 *  spt_write_options_init(opts) below calls this with sizeof *(opts), so code compiled
 *  against any release's header never has more bytes written than its
 *  struct holds. Errors: SPT_ERR_INVALID_ARGUMENT (opts NULL, struct_size
 *  below the first release's size). Thread safe. */
SPT_API spt_status spt_write_options_init_size(spt_write_options *opts, size_t struct_size);
/** Macro form of spt_write_options_init(): calls spt_write_options_init_size with sizeof *(opts), so a
 *  program never has more bytes written than its own struct holds. */
#define spt_write_options_init(opts) spt_write_options_init_size((opts), sizeof *(opts))

/** Write a tensor. Text output writes shortest round-trip values by default,
 *  so text -> read -> write is exact. The file is written to a temporary
 *  name and renamed, so a failure never leaves a truncated file.
 *  Nothing is lost: text output (SPT_FILE_TNS, or AUTO resolving to text)
 *  is plain FROSTT when every dims[m] is the mode's largest index + 1, so
 *  other FROSTT tools read it, and otherwise (and for an empty tensor)
 *  starts with the extended header (order line, dims line) that spt_read
 *  with SPT_FILE_AUTO detects, since no reader could infer those dims;
 *  SPT_FILE_TNS_EXTENDED always writes the header. An empty tensor
 *  round-trips with its dims through every format and compression.
 *  Errors: INVALID_ARGUMENT, IO, UNSUPPORTED (compression not compiled in),
 *  OUT_OF_MEMORY. Thread safety: only reads x. */
SPT_API spt_status spt_write(spt_context *ctx, const spt_coo *x, const char *path, const spt_write_options *opts);

#ifdef __cplusplus
}
#endif

/* Storage formats and tools with their own headers (each is also usable on
 * its own; all are part of the same library and ABI). */
#include "sptensor/csf.h"
#include "sptensor/hicoo.h"
#include "sptensor/reorder.h"
#include "sptensor/tucker.h"
#include "sptensor/cp_apr.h"
#include "sptensor/dense.h"
#include "sptensor/fcoo.h"
#include "sptensor/hbcsf.h"
#include "sptensor/hls.h"

#endif /* SPTENSOR_H */
