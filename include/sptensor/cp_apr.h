/** \file
 * libsptensor: CP-APR API (Poisson CP for count data; included by
 * sptensor/sptensor.h).
 *
 * CP-APR fits a nonnegative Kruskal model M = [lambda; A_1, ..., A_N] to a
 * nonnegative (count) sparse tensor X by maximising the Poisson
 * log-likelihood
 *     sum_{nonzeros i} x_i log m_i  -  sum_{all i} m_i
 * with the multiplicative-update (MU) algorithm of Chi & Kolda ("On tensors,
 * sparsity, and nonnegative factorizations", SIMAX 2012), with the numerics
 * of Tensor Toolbox / pyttb cp_apr(algorithm='mu'): outer iterations sweep
 * the modes; per mode n the weights are moved into A_n, inadmissible zeros
 * are "scooched" (entries with A_n < kappatol and Phi_n > 0 get + kappa;
 * from the second outer iteration on), then up to max_inner_iters updates
 * A_n <- A_n .* Phi_n with
 *     Phi_n = (X_(n) ./ max(A_n Pi_n^T, epsilon)) Pi_n,
 * Pi_n the Khatri-Rao product of the other factors (only its rows at the
 * nonzeros of X are formed), stopping early when the KKT violation
 * max |min(A_n, 1 - Phi_n)| < tol; then A_n's columns are 1-normalised back
 * into lambda. The run stops when no mode needed an update in an outer
 * iteration (converged) or after max_outer_iters.
 *
 * Implementation (CPU, OpenMP, context thread count): Phi is computed per
 * nonzero (Pi's rows formed on the fly from the other factors, never stored)
 * on one of two storages, chosen by spt_cp_apr_options.format:
 *  - COO: a copy of X grouped by the mode-n index, per mode, so each output
 *    row belongs to one thread. Memory: nnz * (4 * order + 8) bytes per mode.
 *  - HiCOO (Li's dissertation ch. 4; ParTI! ran CP-APR on it): one HiCOO
 *    copy of X built once per decomposition (about nnz * (order + value
 *    size) bytes plus 4 * order + 8 bytes per block) serves every mode;
 *    each mode's Phi runs over the superblock schedule (slabs of
 *    superblocks write disjoint rows) or, for modes spanning fewer than 16
 *    blocks, over 16 fixed nonzero ranges with private I_n x R double
 *    accumulators summed in a fixed order (float32 Phi also uses one
 *    I_n x R double accumulator in the first case).
 * Both are race-free without atomics and give factors that do not depend on
 * the thread count; the two storages agree to rounding (the terms of a Phi
 * entry are added in a different order). Plus one I_n x R Phi per mode.
 * With a CUDA context (backend CUDA, or AUTO on a machine with a GPU and a
 * tensor that is not tiny) the whole run is on the GPU: every mode's
 * grouped copy of X (the COO storage above, whatever opts->format AUTO
 * would pick on the CPU), the factors, lambda and Phi stay on the device,
 * and only the KKT violation and log-likelihood come back per iteration.
 * The GPU repeats the CPU's COO arithmetic in its order, so its factors
 * equal the CPU's COO run's (the log-likelihood's sum over the nonzeros is
 * ordered differently: equal to rounding). Format HICOO is not run on the
 * GPU (SPT_ERR_UNSUPPORTED with backend CUDA, the CPU under AUTO); a run
 * that does not fit the device memory (SPT_CUDA_MEMORY_LIMIT counts) runs
 * on the CPU under AUTO with a note in the log, and fails with
 * SPT_ERR_OUT_OF_MEMORY with backend CUDA.
 *
 * Thread safety: spt_cp_apr calls with distinct contexts may run
 * concurrently (the input tensor is only read). The result is an ordinary
 * spt_ktensor (see sptensor.h for its accessors and thread rules). */
#ifndef SPTENSOR_CP_APR_H
#define SPTENSOR_CP_APR_H

#include "sptensor/sptensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How the factors are initialised. */
typedef enum spt_cp_apr_init {
  SPT_CP_APR_INIT_RANDOM = 0, /**< uniform [0,1) values from the seed, mode by mode, row-major (the order
                                   numpy.random.uniform(0, 1, (I, R)) fills, as pyttb init='random') */
  SPT_CP_APR_INIT_USER = 1,    /**< copy opts->init_factors (lambda = 1), like pyttb init=ktensor */
  SPT_CP_APR_INIT_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_cp_apr_init;

/** Per-outer-iteration callback: iteration (1-based), the Poisson
 *  log-likelihood of the model after it (pyttb tt_loglikelihood), the
 *  largest KKT violation over the modes, and the seconds of this iteration.
 *  Called from the thread that called spt_cp_apr. Return non-zero to stop
 *  (the model so far is kept; status SPT_WARN_NOT_CONVERGED unless that
 *  iteration converged). */
typedef int (*spt_cp_apr_callback)(void *user_data, int iteration, double loglik, double kkt_violation,
                                   double seconds);

/** CP-APR options. Always initialise with spt_cp_apr_options_init() first:
 *  the struct_size field lets later versions add fields compatibly. */
typedef struct spt_cp_apr_options {
  size_t struct_size;                    /**< set by spt_cp_apr_options_init */
  spt_index rank;                        /**< number of components R >= 1 (default 10) */
  int max_outer_iters;                   /**< maximum outer iterations (default 1000; pyttb maxiters) */
  int max_inner_iters;                   /**< maximum MU updates per mode and outer iteration (default 10) */
  double tol;                            /**< KKT violation tolerance (default 1e-4; pyttb stoptol) */
  double kappa;                          /**< offset added to inadmissible zeros (default 0.01) */
  double kappatol;                       /**< entries below this count as zero for scooching (default 1e-10) */
  double epsilon;                        /**< model values are clamped below at epsilon in Phi (default 1e-10;
                                              pyttb epsDivZero) */
  spt_cp_apr_init init;                  /**< default SPT_CP_APR_INIT_RANDOM */
  uint64_t seed;                         /**< random init seed (0 = the context seed) */
  const spt_matrix *const *init_factors; /**< with SPT_CP_APR_INIT_USER: `order` nonnegative matrices
                                              I_n x R of the tensor's dtype, any layout; only read */
  spt_cp_apr_callback callback;          /**< optional */
  void *callback_data;                   /**< passed to callback */
  spt_tensor_format format;              /**< storage Phi runs on: SPT_TENSOR_FORMAT_COO (mode-grouped copies),
                                              _HICOO (one HiCOO copy, suggested block and superblock sizes),
                                              or _AUTO (default): HiCOO when it compresses -- block ratio
                                              alpha_b = blocks / nnz below the storage break-even of
                                              Li's eq. (4.11), see spt_hicoo_stats -- else COO (about one
                                              nonzero per block: HiCOO would only add per-block work).
                                              CSF is not supported (SPT_ERR_UNSUPPORTED) */
} spt_cp_apr_options;

/** Fill `opts` with the defaults listed above. Errors:
 *  SPT_ERR_INVALID_ARGUMENT (opts NULL). Thread safe. */
SPT_API spt_status spt_cp_apr_options_init(spt_cp_apr_options *opts);
/** Same, writing only the first `struct_size` bytes (the caller's
 *  sizeof(spt_cp_apr_options), which is smaller when the caller was compiled against
 *  an older header); struct_size is stored in opts->struct_size. The macro
 *  spt_cp_apr_options_init(opts) below calls this with sizeof *(opts), so code compiled
 *  against any release's header never has more bytes written than its
 *  struct holds. Errors: SPT_ERR_INVALID_ARGUMENT (opts NULL, struct_size
 *  below the first release's size). Thread safe. */
SPT_API spt_status spt_cp_apr_options_init_size(spt_cp_apr_options *opts, size_t struct_size);
/** Macro form of spt_cp_apr_options_init(): calls spt_cp_apr_options_init_size with sizeof *(opts), so a
 *  program never has more bytes written than its own struct holds. */
#define spt_cp_apr_options_init(opts) spt_cp_apr_options_init_size((opts), sizeof *(opts))

/** Poisson CP decomposition of the nonnegative tensor `x` by CP-APR MU (see
 *  the top of this header). Repeated coordinates of x count as summed. The
 *  model has the tensor's dtype (float32 tensors are computed in float32 with
 *  model values, Phi rows and log-likelihoods accumulated in double).
 *  On success (SPT_OK or SPT_WARN_NOT_CONVERGED) *out receives a new
 *  ktensor owned by the caller (free with spt_ktensor_free): every factor
 *  column has unit 1-norm (or is all zero), lambda >= 0 holds the weights,
 *  components sorted by decreasing lambda. spt_ktensor_result's `fit` slot
 *  holds the final Poisson log-likelihood (NOT a least-squares fit),
 *  `iterations` the outer iterations done, `converged` 1 when every mode met
 *  tol; spt_ktensor_history's `fits` holds the log-likelihood after each
 *  outer iteration and `seconds` its wall-clock time. On error *out is
 *  unchanged and nothing leaks.
 *  The storage Phi runs on follows opts->format (see spt_cp_apr_options);
 *  with verbosity >= 1 the context's log callback gets a note naming the
 *  storage chosen and why.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL x/opts/out, opts not initialised,
 *  order < 2, no nonzeros, a negative value (the message names the first
 *  one), rank 0, max_outer_iters or max_inner_iters < 1, tol, kappa or
 *  kappatol negative or not finite, epsilon <= 0, unknown init, init factors
 *  missing, negative, or of the wrong shape/dtype, unknown format),
 *  SPT_ERR_UNSUPPORTED (format CSF, FCOO, HBCSF or HLS; HICOO, an order above 64 or a rank above
 *  2048 with backend CUDA), SPT_ERR_DEVICE (a CUDA failure with backend CUDA), SPT_ERR_NUMERICAL (non-finite values
 *  appeared), SPT_ERR_OVERFLOW (the factors dims[m] x rank do not fit
 *  64-bit sizes; checked before allocating), SPT_ERR_OUT_OF_MEMORY (also
 *  before allocating when the factors exceed physical memory). Thread safety: see the top of this
 *  header. */
SPT_API spt_status spt_cp_apr(spt_context *ctx, const spt_coo *x, const spt_cp_apr_options *opts,
                              spt_ktensor **out);

/** Poisson log-likelihood of the model k for the nonnegative tensor x
 *  (pyttb tt_loglikelihood): sum over nonzeros of x_i log m_i minus the sum
 *  of all model entries (computed as sum_r lambda_r prod_n sum_i A_n(i,r)).
 *  A nonzero whose model value is 0 gives -inf.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL arguments, dims/dtype mismatch).
 *  Thread safety: only reads x and k. */
SPT_API spt_status spt_cp_apr_loglikelihood(spt_context *ctx, const spt_coo *x, const spt_ktensor *k,
                                            double *loglik);

#ifdef __cplusplus
}
#endif

#endif /* SPTENSOR_CP_APR_H */
