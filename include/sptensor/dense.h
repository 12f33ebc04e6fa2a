/** \file
 * libsptensor: dense tensors (included by sptensor/sptensor.h).
 *
 * spt_dense is a dense tensor of any order N >= 1 and either dtype, used for
 * small dense results (Tucker cores, densified slices) and for moving dense
 * data in and out of the library.
 *
 * Layout: the FIRST index varies fastest (the column-major generalisation
 * used by MATLAB, Tensor Toolbox and Fortran, and by spt_ttensor_core):
 * element (i_1, ..., i_N) (0-based) is at linear offset
 *     i_1 + I_1 * (i_2 + I_2 * (i_3 + ... + I_{N-1} * i_N)),
 * with no padding, so a MATLAB array or a Fortran array of the same shape
 * has the same memory image.
 *
 * Ownership: every creating function writes a new handle through `out`,
 * owned by the caller and released with spt_dense_free; on error nothing is
 * written and nothing leaks. Data pointers returned by spt_dense_data /
 * spt_dense_data_const are borrowed: valid until spt_dense_free.
 *
 * Thread safety: functions that only read a handle (info, dims, data_const,
 * norm, to_coo) may run concurrently on the same handle; writing through
 * spt_dense_data, or spt_dense_free, must not race with any other use of
 * that handle. Distinct handles are independent. */
#ifndef SPTENSOR_DENSE_H
#define SPTENSOR_DENSE_H

#include "sptensor/sptensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque dense tensor handle. */
typedef struct spt_dense_s spt_dense;

/** Largest dense tensor spt_dense_from_coo builds when its max_bytes
 *  argument is 0: 1 GiB of values. */
#define SPT_DENSE_DEFAULT_MAX_BYTES ((uint64_t)1 << 30)

/** New zero-filled dense tensor of `order` >= 1 modes with dims[0..order-1]
 *  (each >= 1) and value type `dtype`.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (out or dims NULL, order 0, a dim 0,
 *  unknown dtype), SPT_ERR_OVERFLOW (the element count or byte size does not
 *  fit 64 bits), SPT_ERR_OUT_OF_MEMORY. Thread safe. */
SPT_API spt_status spt_dense_create(spt_context *ctx, spt_dtype dtype, uint32_t order, const spt_index *dims,
                                    spt_dense **out);

/** New dense tensor holding a copy of the caller's prod(dims) values of
 *  `dtype` at `data`, laid out first index fastest (see the top of this
 *  header). The caller keeps `data`. Errors: as spt_dense_create, plus
 *  SPT_ERR_INVALID_ARGUMENT for data NULL. Thread safe. */
SPT_API spt_status spt_dense_create_copy(spt_context *ctx, spt_dtype dtype, uint32_t order, const spt_index *dims,
                                         const void *data, spt_dense **out);

/** Free a dense tensor; NULL is a no-op. Always returns SPT_OK. */
SPT_API spt_status spt_dense_free(spt_dense *t);

/** What a dense tensor holds (spt_dense_info). Set struct_size =
 *  sizeof(spt_dense_summary) before the call; later versions may append
 *  fields. */
typedef struct spt_dense_summary {
  size_t struct_size; /**< set by the caller */
  spt_dtype dtype;    /**< out: value type */
  uint32_t order;     /**< out: number of modes (spt_dense_dims gives the dims) */
  spt_nnz count;      /**< out: number of elements, prod(dims) */
} spt_dense_summary;

/** Describe a dense tensor into *info: value type, order and element
 *  count. Only info->struct_size bytes are written (struct_size is kept: a
 *  newer caller's longer struct keeps its tail). Nothing is allocated and
 *  nothing in *info needs freeing. ctx (may be NULL) receives the error
 *  message.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL t or info, info->struct_size
 *  smaller than sizeof(spt_dense_summary) of this release, e.g. 0).
 *  Thread safe: may run concurrently with other readers of t. */
SPT_API spt_status spt_dense_info(spt_context *ctx, const spt_dense *t, spt_dense_summary *info);

/** Copy the dims (order entries) into `dims`.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (t or dims NULL). */
SPT_API spt_status spt_dense_dims(const spt_dense *t, spt_index *dims);

/** Borrowed, writable pointer to the element array (count values of the
 *  dtype, first index fastest). Owned by t; valid until spt_dense_free.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (t or data NULL). */
SPT_API spt_status spt_dense_data(spt_dense *t, void **data);

/** Borrowed, read-only pointer to the element array (as spt_dense_data).
 *  Errors: SPT_ERR_INVALID_ARGUMENT (t or data NULL). */
SPT_API spt_status spt_dense_data_const(const spt_dense *t, const void **data);

/** Frobenius norm sqrt(sum of squares), accumulated in double.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (t or norm NULL). */
SPT_API spt_status spt_dense_norm(spt_context *ctx, const spt_dense *t, double *norm);

/** Densify a COO tensor: a new dense tensor with x's dims and dtype, zero
 *  where x has no entry; repeated coordinates are summed (in x's nonzero
 *  order, in the dtype). To never allocate huge memory by surprise, the
 *  call fails unless prod(dims) * sizeof(value) <= max_bytes
 *  (max_bytes 0 = SPT_DENSE_DEFAULT_MAX_BYTES, 1 GiB).
 *  Errors: SPT_ERR_INVALID_ARGUMENT (x or out NULL), SPT_ERR_OVERFLOW (the
 *  element count does not fit 64 bits), SPT_ERR_OUT_OF_MEMORY (the dense
 *  tensor would exceed max_bytes: the message gives its size; or the
 *  allocation failed). Thread safety: only reads x. */
SPT_API spt_status spt_dense_from_coo(spt_context *ctx, const spt_coo *x, uint64_t max_bytes, spt_dense **out);

/** Sparsify: a new owning COO tensor with t's dims and dtype holding every
 *  element that is not exactly zero (NaN is kept; -0.0 is dropped), ordered
 *  by linear offset (first index fastest, i.e. sorted with the LAST mode
 *  compared first), duplicate-free.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (t or out NULL), SPT_ERR_OUT_OF_MEMORY.
 *  Thread safety: only reads t. */
SPT_API spt_status spt_dense_to_coo(spt_context *ctx, const spt_dense *t, spt_coo **out);

/** The Tucker core G of `t` as a new dense tensor (a copy: order N, dims
 *  R_1..R_N, t's dtype, first index fastest exactly as spt_ttensor_core).
 *  The caller owns *out (spt_dense_free); t is unchanged.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (t or out NULL), SPT_ERR_OUT_OF_MEMORY.
 *  Thread safety: only reads t. */
SPT_API spt_status spt_ttensor_core_dense(spt_context *ctx, const spt_ttensor *t, spt_dense **out);

#ifdef __cplusplus
}
#endif

#endif /* SPTENSOR_DENSE_H */
