/** \file
 * libsptensor: Tucker API (included by sptensor/sptensor.h).
 *
 * Tucker decomposition of a sparse tensor X (order N, dims I_1..I_N) by
 * higher-order orthogonal iteration (HOOI, Tensor Toolbox / pyttb
 * tucker_als numerics): X ~ G x_1 U_1 x_2 U_2 ... x_N U_N with a dense core
 * G (R_1 x ... x R_N) and factor matrices U_n (I_n x R_n) with orthonormal
 * columns. Ranks may differ per mode.
 *
 * Each HOOI step computes the TTM chain Y = X x_{m != n} U_m^T (TTMc)
 * without materialising semi-sparse intermediates for the whole tensor, by
 * one of two paths chosen per mode by a cost estimate: the one-shot
 * "Kronecker row" form (every nonzero adds value * kron of the other modes'
 * factor rows to row i_n of the dense I_n x prod_{m != n} R_m matrix
 * Y_(n), partial Kronecker rows reused along a fixed mode order), or the
 * TTM chain (SpTTM then SsTTM per mode, in the contraction order with the
 * least estimated work) computed one mode-n slice at a time, so its
 * semi-sparse intermediates exist only per slice and thread (one dense
 * block per chain level, prod of the first ranks of the chain values).
 * The estimate counts the multiply-adds of each path and order exactly
 * from the number of distinct coordinates in every subset of the modes
 * (like CSF node counts; computed once per decomposition by sorting packed
 * 64-bit keys, 2 * nnz words of scratch while planning; for order > 5 a
 * rule picks the order and one pass over the sorted tensor counts).
 * Memory: about I_n * prod_{m != n} R_m values for Y_(n), plus one copy of
 * X per mode sorted for that mode's chosen path (nnz * (4 N + value size)
 * bytes each, made once per decomposition and reused by every iteration;
 * none for a mode whose order X is already sorted in; for order > 5, while
 * planning a mode, one more copy exists briefly when the paths sort
 * differently).
 *
 * Thread safety: a spt_ttensor is immutable after spt_tucker_hooi returns;
 * any number of threads may read it at once. spt_ttensor_free must not race
 * with other use of the handle. spt_tucker_hooi calls with distinct
 * contexts may run concurrently (the input tensor is only read). */
#ifndef SPTENSOR_TUCKER_H
#define SPTENSOR_TUCKER_H

#include "sptensor/sptensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque Tucker tensor: dense core plus one factor matrix per mode, and
 *  the decomposition's result record (fit, iterations, history). */
typedef struct spt_ttensor_s spt_ttensor;

/** How the factors are initialised. */
typedef enum spt_tucker_init {
  SPT_TUCKER_INIT_HOSVD = 0,  /**< leading left singular vectors of every unfolding X_(n) (computed
                                   from the sparse tensor, never densified) -- pyttb init='nvecs' */
  SPT_TUCKER_INIT_RANDOM = 1, /**< random orthonormal columns (QR of uniform [0,1) values from the seed) */
  SPT_TUCKER_INIT_USER = 2,    /**< copy opts->init_factors (I_n x R_n each; used as given, like pyttb:
                                   they need not be orthonormal) */
  SPT_TUCKER_INIT_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_tucker_init;

/** How each HOOI sweep forms Y_(n) = X_(n) (U_N kron ... kron U_1, U_n
 *  left out), the sweep's dominant cost. Every method gives the same Y_(n)
 *  up to rounding. */
typedef enum spt_tucker_ttmc {
  /** by the cost estimate: on the CPU one-shot or chain per mode; on the GPU HLS (orders 3-4, large and
   *  dense enough), else chain or F-COO */
  SPT_TUCKER_TTMC_AUTO = 0,
  /** one pass over the nonzeros per mode (CPU: the sparse TTMc kernel; GPU: F-COO) */
  SPT_TUCKER_TTMC_ONE_SHOT = 1,
  /** a chain of tensor-times-matrix products, largest distinct-index modes first (CPU: sorted COO; GPU:
   *  B-CSF trees, orders 3-8) */
  SPT_TUCKER_TTMC_CHAIN = 2,
  /** GPU only: the HLS kernels (orders 3-4); a run on the CPU returns SPT_ERR_UNSUPPORTED */
  SPT_TUCKER_TTMC_HLS = 3,
  SPT_TUCKER_TTMC_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_tucker_ttmc;

/** Per-iteration callback: iteration (1-based), fit, |fit - previous fit|
 *  (the previous fit is 0 before the first iteration, as in pyttb), seconds
 *  of this iteration. Called from the thread that called spt_tucker_hooi.
 *  Return non-zero to stop (the result so far is kept; status
 *  SPT_WARN_NOT_CONVERGED unless that iteration converged). */
typedef int (*spt_tucker_callback)(void *user_data, int iteration, double fit, double delta, double seconds);

/** Tucker-HOOI options. Always initialise with spt_tucker_options_init()
 *  first: the struct_size field lets later versions add fields compatibly. */
typedef struct spt_tucker_options {
  size_t struct_size;                    /**< set by spt_tucker_options_init */
  const spt_index *ranks;                /**< required: `order` ranks R_n, 1 <= R_n <= dims[n] (default NULL) */
  uint32_t ranks_count;                  /**< number of entries in ranks; must equal the tensor's order */
  int max_iters;                         /**< maximum HOOI sweeps (default 50) */
  double tol;                            /**< stop when |fit change| < tol (default 1e-4; 0 = run max_iters) */
  spt_tucker_init init;                  /**< default SPT_TUCKER_INIT_HOSVD */
  uint64_t seed;                         /**< random init / randomized HOSVD seed (0 = the context seed) */
  const spt_matrix *const *init_factors; /**< with SPT_TUCKER_INIT_USER: `order` matrices I_n x R_n of the
                                              tensor's dtype, any layout. init_factors[0] is not read (HOOI
                                              recomputes mode 0 first) and may be NULL */
  spt_tucker_callback callback;          /**< optional */
  void *callback_data;                   /**< passed to callback */
  spt_tucker_ttmc ttmc;                  /**< how Y_(n) is formed (default SPT_TUCKER_TTMC_AUTO). A method the
                                              chosen backend cannot run for this tensor (HLS on the CPU, HLS
                                              outside orders 3-4, chain outside 3-8 on the GPU) is
                                              SPT_ERR_UNSUPPORTED */
} spt_tucker_options;

/** Fill `opts` with the defaults listed above (ranks NULL: the caller must
 *  set ranks and ranks_count). Errors: SPT_ERR_INVALID_ARGUMENT (opts NULL).
 *  Thread safe. */
SPT_API spt_status spt_tucker_options_init(spt_tucker_options *opts);
/** Same, writing only the first `struct_size` bytes (the caller's
 *  sizeof(spt_tucker_options), which is smaller when the caller was compiled against
 *  an older header); struct_size is stored in opts->struct_size. The macro
 *  spt_tucker_options_init(opts) below calls this with sizeof *(opts), so code compiled
 *  against any release's header never has more bytes written than its
 *  struct holds. Errors: SPT_ERR_INVALID_ARGUMENT (opts NULL, struct_size
 *  below the first release's size). Thread safe. */
SPT_API spt_status spt_tucker_options_init_size(spt_tucker_options *opts, size_t struct_size);
/** Macro form of spt_tucker_options_init(): calls spt_tucker_options_init_size with sizeof *(opts), so a
 *  program never has more bytes written than its own struct holds. */
#define spt_tucker_options_init(opts) spt_tucker_options_init_size((opts), sizeof *(opts))

/** Tucker decomposition of `x` by HOOI (pyttb tucker_als numerics, modes
 *  swept in order 0..N-1). Per mode n: Y_(n) = X_(n) (U_N kron ... U_{n+1}
 *  kron U_{n-1} ... kron U_1) by opts->ttmc (SPT_TUCKER_TTMC_AUTO: the method
 *  the cost estimate picks; every method gives the same Y_(n) up to
 *  rounding), then U_n =
 *  the R_n leading left singular vectors of Y_(n) (LAPACK gesdd when
 *  I_n > prod_{m != n} R_m, else the leading eigenvectors of Y_(n) Y_(n)^T
 *  by syevd), signs fixed so each column's largest-magnitude entry is
 *  positive (pyttb nvecs). After the sweep, the core G = Y x_N U_N^T, and
 *  fit = 1 - sqrt(| ||X||^2 - ||G||^2 |) / ||X||. Stops when
 *  |fit - fit_old| < tol (fit_old = 0 before the first sweep) or after
 *  max_iters sweeps. Repeated coordinates of x count as summed.
 *  The result has the tensor's dtype (float32 tensors are computed in
 *  float32, with norms and fits accumulated in double).
 *  On success (SPT_OK or SPT_WARN_NOT_CONVERGED) *out receives a new handle
 *  owned by the caller (free with spt_ttensor_free); on error *out is
 *  unchanged and nothing leaks.
 *  Returns SPT_OK when the tolerance was met, SPT_WARN_NOT_CONVERGED (with
 *  a valid result) when max_iters was reached first or the callback stopped
 *  the run.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL x/opts/out, opts not initialised,
 *  order < 2, no nonzeros or all-zero values, ranks NULL, ranks_count !=
 *  order, a rank 0 or larger than its dimension, max_iters < 1, tol < 0 or
 *  not finite, unknown init or ttmc, init factors missing or of the wrong
 *  shape/dtype), SPT_ERR_UNSUPPORTED (opts->ttmc names a method the
 *  backend cannot run for this tensor), SPT_ERR_OVERFLOW or
 *  SPT_ERR_OUT_OF_MEMORY (some I_n x prod_{m != n} R_m matrix is too
 *  large: lower the ranks), SPT_ERR_NUMERICAL (non-finite values, LAPACK
 *  failure). */
SPT_API spt_status spt_tucker_hooi(spt_context *ctx, const spt_coo *x, const spt_tucker_options *opts,
                                   spt_ttensor **out);

/** Free a Tucker tensor; NULL is a no-op. Returns SPT_OK. */
SPT_API spt_status spt_ttensor_free(spt_ttensor *t);

/** What a Tucker tensor holds (spt_ttensor_info). Set struct_size =
 *  sizeof(spt_ttensor_summary) before the call; later versions may append
 *  fields. fit, iterations and converged are 0 for a tensor not produced
 *  by HOOI. */
typedef struct spt_ttensor_summary {
  size_t struct_size; /**< set by the caller */
  spt_dtype dtype;    /**< out: value type */
  uint32_t order;     /**< out: number of modes (spt_ttensor_core_dims gives core and tensor dims) */
  double fit;         /**< out: final fit of HOOI */
  int iterations;     /**< out: HOOI sweeps done */
  int converged;      /**< out: 1 when HOOI met opts->tol (status SPT_OK), else 0 */
} spt_ttensor_summary;

/** Describe a Tucker tensor into *info: value type, order, final fit, HOOI
 *  sweeps done and whether HOOI converged. Only info->struct_size bytes are
 *  written (struct_size is kept: a newer caller's longer struct keeps its
 *  tail). Nothing is allocated and nothing in *info needs freeing. ctx (may
 *  be NULL) receives the error message.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL t or info, info->struct_size
 *  smaller than sizeof(spt_ttensor_summary) of this release, e.g. 0).
 *  Thread safe: may run concurrently with other readers of t. */
SPT_API spt_status spt_ttensor_info(spt_context *ctx, const spt_ttensor *t, spt_ttensor_summary *info);

/** Core dimensions R_1..R_N into `dims` (order entries) and, if `full_dims`
 *  is not NULL, the tensor dimensions I_1..I_N into it.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (t or dims NULL). */
SPT_API spt_status spt_ttensor_core_dims(const spt_ttensor *t, spt_index *dims, spt_index *full_dims);

/** Borrowed pointer to the core's prod R_n values (float or double per the
 *  dtype), stored with the FIRST index fastest (column-major
 *  generalisation, as MATLAB / Tensor Toolbox): G(r_1,..,r_N) is at
 *  r_1 + R_1 (r_2 + R_2 (r_3 + ...)). Valid until spt_ttensor_free.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (t or core NULL). */
SPT_API spt_status spt_ttensor_core(const spt_ttensor *t, const void **core);

/** Borrowed factor matrix U_mode (I_mode x R_mode, row-major, the tensor's
 *  dtype; orthonormal columns). Owned by t: do not free or modify.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL, mode out of range). */
SPT_API spt_status spt_ttensor_factor(const spt_ttensor *t, uint32_t mode, const spt_matrix **factor);

/** Per-iteration history (borrowed arrays of `count` entries): fit and
 *  wall-clock seconds of each sweep. Outputs may be NULL.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (t NULL). */
SPT_API spt_status spt_ttensor_history(const spt_ttensor *t, int *count, const double **fits,
                                       const double **seconds);

#ifdef __cplusplus
}
#endif

#endif /* SPTENSOR_TUCKER_H */
