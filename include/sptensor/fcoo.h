/** \file
 * libsptensor: F-COO API (included by sptensor/sptensor.h).
 *
 * F-COO (flagged coordinates; Liu et al., "A Unified Optimization Approach
 * for Sparse Tensor Operations on GPUs") stores a tensor for one operation
 * in one mode. MTTKRP (and TTMc) in mode n: mode n is the "index mode", the
 * others are "product modes"; TTM in mode n: mode n is the product mode and
 * the others are index modes. Nonzeros are sorted by the index modes; only
 * product-mode indices and values are stored per nonzero, plus one bit
 * (bf) that marks where the index-mode coordinates change (a new output
 * row for MTTKRP, a new fiber for TTM). Index-mode coordinates are kept
 * once per such segment. Nonzeros are cut into partitions of `threadlen`
 * consecutive nonzeros, one GPU thread each, with one start flag (sf) per
 * partition; the GPU kernels reduce a thread's partition sequentially and
 * combine threads with a segmented scan over warp shuffles, using atomics
 * only for segments that cross a warp's 32 partitions. Every thread gets
 * the same number of nonzeros whatever the slice lengths, so the time does
 * not depend on the mode or on heavy slices.
 *
 * The paper tuned threadlen and the block size by hand per tensor. On the
 * GPU, LP lanes share a partition, each taking 32 bytes of the output row
 * (LP = row bytes / 32 rounded up to a power of two, at most 8: rank 16
 * float32 -> 2, rank 32 -> 4), so a warp holds 32 / LP partitions and a
 * factor-row read is coalesced (16-byte vector loads). Our rule
 * (spt_fcoo_suggest_threadlen), from a threadlen sweep (bench_gpu records
 * it as threadlen_sweep_ms; docs/design-measurements.md, "F-COO
 * threadlen"): threadlen 16 when LP >= 4 and that still gives one wave of
 * warps (64 per multiprocessor), else 8. With few lanes per partition the
 * per-lane sequential walk is the bottleneck and short partitions win;
 * with 4 or more lanes per partition, boundary atomics contend on heavy
 * slices and 16 wins. The library's own GPU MTTKRP paths (spt_mttkrp's format
 * choice, CP-ALS on the GPU) know the mode's slice count and also take 16 at 4
 * or more lanes when the mode has at most 64 non-empty slices and the tensor at
 * least 131,072 nonzeros: every warp's last segment then lands on one of a few
 * rows, and fewer warps collide less. spt_fcoo_suggest_threadlen has no mode
 * and leaves that case out. Blocks have 256 threads; the block size changes no
 * memory behaviour here (warps never share data).
 *
 * Orders >= 2, either dtype; fewer than 2^32 nonzeros. The host kernels
 * (OpenMP) are exact equivalents of the COO kernels; with the context's
 * backend resolving to CUDA the products run on the GPU (orders 2..8 for
 * MTTKRP/TTM, TTMc with at most 2^20 output columns): the handle is copied
 * to the device on first use and the copy kept with the handle.
 *
 * Thread safety: a spt_fcoo handle is immutable after creation; any number
 * of threads may use it at once (with distinct outputs and contexts).
 * spt_fcoo_free must not race with other use of the handle. */
#ifndef SPTENSOR_FCOO_H
#define SPTENSOR_FCOO_H

#include "sptensor/sptensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque F-COO tensor handle. */
typedef struct spt_fcoo_s spt_fcoo;

/** The operation an F-COO is laid out for. */
typedef enum spt_fcoo_operation {
  SPT_FCOO_MTTKRP = 0, /**< index mode = spt_fcoo_options.mode: spt_mttkrp_fcoo and spt_ttmc_fcoo in that mode */
  SPT_FCOO_TTM = 1,    /**< product mode = spt_fcoo_options.mode: spt_ttm_fcoo in that mode */
  SPT_FCOO_OPERATION_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_fcoo_operation;

/** The threadlen rule (see the file comment) for a tensor of `nnz`
 *  nonzeros whose products have `rank` columns (0 = 16) of `dtype`, on a
 *  GPU with `multiprocessors` multiprocessors (0 = the default, 132),
 *  into *threadlen: 8, 16 or 32.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL threadlen, unknown dtype,
 *  negative multiprocessors). Thread safe. */
SPT_API spt_status spt_fcoo_suggest_threadlen(spt_nnz nnz, spt_index rank, spt_dtype dtype, int multiprocessors,
                                              uint32_t *threadlen);

/** Options of spt_fcoo_from_coo. Initialise with spt_fcoo_options_init()
 *  first: struct_size lets later versions append fields compatibly. */
typedef struct spt_fcoo_options {
  size_t struct_size;           /**< set by spt_fcoo_options_init */
  spt_fcoo_operation operation; /**< the operation the layout serves (default SPT_FCOO_MTTKRP) */
  uint32_t mode;                /**< the mode of that operation (default 0) */
  uint32_t threadlen;           /**< nonzeros per partition: 8, 16 or 32; 0 (default) = spt_fcoo_suggest_threadlen
                                     for rank 16 and the context's CUDA device if one is in use, else 132 SMs */
} spt_fcoo_options;

/** Fill `opts` with the defaults (operation SPT_FCOO_MTTKRP, mode 0,
 *  threadlen 0 = suggested).
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL). Thread safe. */
SPT_API spt_status spt_fcoo_options_init(spt_fcoo_options *opts);
/** Same, writing only the first `struct_size` bytes (the caller's
 *  sizeof(spt_fcoo_options)); see spt_cpd_options_init_size.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (opts NULL, struct_size too small). Thread safe. */
SPT_API spt_status spt_fcoo_options_init_size(spt_fcoo_options *opts, size_t struct_size);
/** Macro form of spt_fcoo_options_init(): calls spt_fcoo_options_init_size with sizeof *(opts), so a
 *  program never has more bytes written than its own struct holds. */
#define spt_fcoo_options_init(opts) spt_fcoo_options_init_size((opts), sizeof *(opts))

/** Build the F-COO of x (order >= 2, either dtype; the F-COO keeps it) for
 *  opts->operation in opts->mode, with partitions of opts->threadlen
 *  nonzeros. `opts` may be NULL for the defaults (MTTKRP in mode 0). x is
 *  not modified (the sort works on a copy) and may be freed afterwards.
 *  Repeated coordinates are kept as separate nonzeros (the kernels sum
 *  them, as the COO kernels do). Runs on the context's threads. On success
 *  *out receives a new handle owned by the caller (spt_fcoo_free); on
 *  error *out is unchanged.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL x or out, order < 2, mode out of
 *  range, unknown operation, threadlen not 0/8/16/32, opts->struct_size
 *  too small, 2^32 or more nonzeros), SPT_ERR_OUT_OF_MEMORY. Thread safe
 *  for distinct outputs. */
SPT_API spt_status spt_fcoo_from_coo(spt_context *ctx, const spt_coo *x, const spt_fcoo_options *opts,
                                     spt_fcoo **out);

/** Free an F-COO tensor (and its device copy); NULL is a no-op. Always
 *  returns SPT_OK. Must not race with any other use of the handle. */
SPT_API spt_status spt_fcoo_free(spt_fcoo *f);

/** What an F-COO handle holds (spt_fcoo_info). Set struct_size =
 *  sizeof(spt_fcoo_summary) before the call; later versions may append
 *  fields. */
typedef struct spt_fcoo_summary {
  size_t struct_size;           /**< set by the caller */
  spt_dtype dtype;              /**< out: value type */
  uint32_t order;               /**< out: number of modes */
  spt_nnz nnz;                  /**< out: number of nonzeros */
  spt_fcoo_operation operation; /**< out: the operation the layout serves */
  uint32_t mode;                /**< out: the mode of that operation */
  uint32_t threadlen;           /**< out: nonzeros per partition (resolved, never 0) */
  spt_nnz segments;             /**< out: distinct index-mode coordinates (output rows of an MTTKRP with at least
                                     one nonzero; fibers of a TTM result) */
  uint64_t bytes;               /**< out: storage of the format (indices, values, flags, per-warp table, segment
                                     coordinates) */
} spt_fcoo_summary;

/** Describe an F-COO tensor into *info; only info->struct_size bytes are
 *  written (struct_size is kept). ctx (may be NULL) receives the error
 *  message.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL f or info, struct_size smaller
 *  than sizeof(spt_fcoo_summary)). Thread safe. */
SPT_API spt_status spt_fcoo_info(spt_context *ctx, const spt_fcoo *f, spt_fcoo_summary *info);

/** Dims of an F-COO tensor into dims[0..order-1].
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL). Thread safe. */
SPT_API spt_status spt_fcoo_dims(const spt_fcoo *f, spt_index *dims);

/** Decode back to a new owning COO tensor (same dims, dtype and nonzeros,
 *  sorted by the index modes, then the product modes). *out is owned by
 *  the caller (spt_coo_free); on error *out is unchanged.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL), SPT_ERR_OUT_OF_MEMORY. Thread
 *  safe for distinct outputs. */
SPT_API spt_status spt_fcoo_to_coo(spt_context *ctx, const spt_fcoo *f, spt_coo **out);

/** MTTKRP on an F-COO built with SPT_FCOO_MTTKRP: out (dims[mode] x R) =
 *  X_(mode) times the Khatri-Rao product of the other factors. An F-COO
 *  serves one mode: `mode` must be the one it was built for (another mode
 *  needs its own handle). Same contract as spt_mttkrp_hicoo: factors[m]
 *  (dims[m] x R, the tensor's dtype, either layout) read for m != mode,
 *  factors[mode] may be NULL; out overwritten, not one of the factors.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL, mode out of range, shapes,
 *  dtype), SPT_ERR_UNSUPPORTED (a handle built for SPT_FCOO_TTM or for
 *  another mode), SPT_ERR_OUT_OF_MEMORY, SPT_ERR_DEVICE (CUDA forced and
 *  the device failed; with AUTO a device failure falls back to the CPU
 *  with a note in the log). Thread safe for distinct outputs. */
SPT_API spt_status spt_mttkrp_fcoo(spt_context *ctx, const spt_fcoo *f, const spt_matrix *const *factors,
                                   uint32_t mode, spt_matrix *out);

/** TTM on an F-COO built with SPT_FCOO_TTM: Y = X x_mode U^T (U dims[mode]
 *  x R, any layout, the tensor's dtype), the same semi-sparse result as
 *  spt_ttm (one fiber per distinct coordinate of the other modes, sorted;
 *  dense mode `mode` of size R). *out receives a new handle owned by the
 *  caller (spt_scoo_free).
 *  Errors: as spt_mttkrp_fcoo, plus SPT_ERR_OVERFLOW (fibers x R). Thread
 *  safe for distinct outputs. */
SPT_API spt_status spt_ttm_fcoo(spt_context *ctx, const spt_fcoo *f, const spt_matrix *u, spt_scoo **out);

/** One-shot TTM chain on an F-COO built with SPT_FCOO_MTTKRP in mode n:
 *  out (dims[n] x prod_{m != n} R_m, dense, overwritten) = X_(n) times
 *  kron(U_{N-1}, ..., U_{n+1}, U_{n-1}, ..., U_0), column = Kolda's
 *  unfolding of the core (lowest other mode fastest) - the matrix HOOI
 *  takes the leading singular vectors of. factors[m] (dims[m] x R_m, R_m
 *  >= 1, either layout) read for m != n; factors[n] may be NULL.
 *  Errors: as spt_mttkrp_fcoo, plus SPT_ERR_OVERFLOW (the column count).
 *  Thread safe for distinct outputs. */
SPT_API spt_status spt_ttmc_fcoo(spt_context *ctx, const spt_fcoo *f, const spt_matrix *const *factors,
                                 spt_matrix *out);

#ifdef __cplusplus
}
#endif

#endif /* SPTENSOR_FCOO_H */
