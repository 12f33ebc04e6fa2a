/** \file
 * libsptensor: Generalized CP (GCP) API. Programs include this header
 * themselves (sptensor/sptensor.h does not; this one includes it); the
 * functions are part of libsptensor and its ABI like every other.
 *
 * GCP (Hong, Kolda & Duersch, "Generalized canonical polyadic tensor
 * decomposition", SIAM Review 2020) fits a Kruskal model
 * M = [A_1, ..., A_N] (weights 1) to a tensor X by minimising
 *     F(A_1, ..., A_N) = sum over all entries i of w_i f(x_i, m_i)
 * for an elementwise loss f chosen by the data's distribution (Gaussian,
 * Poisson, Bernoulli, Gamma, Rayleigh, Huber), with every factor entry
 * bounded below by a lower bound (0 for losses whose model values must be
 * nonnegative). w_i is 1, or 0 at the coordinates listed as missing
 * (spt_gcp_options.missing).
 *
 * GCP-OPT (the deterministic, all-at-once path) treats the sparse tensor as
 * a full tensor: zeros are data, as pyttb gcp_opt does for a dense tensor.
 * Each objective/gradient evaluation visits every one of the
 * prod(dims) entries (OpenMP over fixed chunks of entries, so results do not
 * depend on the thread count): it forms the model value m_i, the loss and
 * its derivative y_i = w_i df/dm(x_i, m_i), and the gradient with respect to
 * A_n, which is the MTTKRP of the dense derivative tensor Y with the other
 * factors. Memory: two doubles per entry (the dense data and weights) plus
 * the L-BFGS-B work space (about (2 m + 5) doubles per factor entry).
 * Tensors above SPT_GCP_MAX_DENSE_ENTRIES entries are refused there; the
 * stochastic path is meant for those.
 *
 * GCP-SGD (optimizer = SPT_GCP_OPTIMIZER_SGD) is pyttb gcp_opt with a
 * stochastic solver (Adam) and its stratified GCPSampler: it never forms the
 * full tensor. Each Adam step estimates the gradient from a fresh sample of
 * `gradient_nonzeros` nonzeros (uniform, with replacement, weight
 * nnz / samples) and `gradient_zeros` zeros (uniform coordinates that are
 * not nonzeros, weight (prod(dims) - nnz) / samples); the gradient with
 * respect to A_n is the MTTKRP of that small sampled tensor of derivatives
 * with the other factors, run through the library's MTTKRP. Steps are
 * grouped in epochs of `epoch_iters`; after each epoch the objective is
 * estimated from one fixed stratified sample (`function_nonzeros`,
 * `function_zeros`, drawn once). An epoch whose estimate rose is undone
 * (factors and Adam moments back to the epoch's start) and the learning
 * rate is multiplied by `decay`; the run stops after more than `max_fails`
 * such epochs, when the estimate falls below `f_est_tol`, or after
 * `max_iters` epochs. Adam's bias correction counts steps (Kingma & Ba, as
 * GenTen; pyttb's counts epoch_iters per step), so the two agree in the
 * loss reached, not step by step. Memory: the nonzeros' sorted linear
 * indices and values with a bucket index (20 bytes per nonzero, 36 during
 * set-up), the samples, and seven factor-sized arrays. Samples are drawn
 * sequentially from `seed`, so for one seed and thread count the result is
 * the same in every run. The sampling and Adam steps run on the host; under
 * SPT_BACKEND_CUDA the sampled MTTKRPs run on the GPU (AUTO keeps the run
 * on the CPU). Missing entries are not supported with SGD. prod(dims) must
 * be below 2^63.
 *
 * The optimiser is L-BFGS-B (Byrd, Lu, Nocedal & Zhu; version 3.0 of
 * Morales & Nocedal, the Debian liblbfgsb library), the algorithm scipy's
 * fmin_l_bfgs_b implements, with pyttb's LBFGSB defaults: memory m = 10,
 * factr = 1e7, pgtol = 1e-5, at most 1000 iterations and 15000 function
 * evaluations; the variables are the factor entries in pyttb's order
 * (ktensor.tovec(False): factor by factor, column by column). From the same
 * initial factors the objective agrees with pyttb gcp_opt's to rounding.
 * A library built without liblbfgsb answers SPT_ERR_UNSUPPORTED.
 *
 * Only float64 tensors are supported (float32: SPT_ERR_UNSUPPORTED).
 *
 * Thread safety: spt_gcp_opt calls with distinct contexts may run
 * concurrently (the input tensor is only read). */
#ifndef SPTENSOR_GCP_H
#define SPTENSOR_GCP_H

#include "sptensor/sptensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The most entries (product of the dimensions) GCP-OPT accepts: its
 *  objective visits every entry of the full tensor. */
#define SPT_GCP_MAX_DENSE_ENTRIES 100000000ULL

/** The elementwise loss f(x, m) (numbered as pyttb's gcp.handles.Objectives).
 *  eps = 1e-10 keeps logarithms and divisions finite, as in pyttb. */
typedef enum spt_gcp_loss {
  SPT_GCP_LOSS_GAUSSIAN = 0,        /**< (m - x)^2; real data; lower bound -inf */
  SPT_GCP_LOSS_BERNOULLI_ODDS = 1,  /**< log(m + 1) - x log(m + eps); binary (0/1) data; lower bound 0 */
  SPT_GCP_LOSS_BERNOULLI_LOGIT = 2, /**< log(exp(m) + 1) - x m; binary data; lower bound -inf */
  SPT_GCP_LOSS_POISSON = 3,         /**< m - x log(m + eps) (identity link); count data; lower bound 0 */
  SPT_GCP_LOSS_POISSON_LOG = 4,     /**< exp(m) - x m (log link); count data; lower bound -inf */
  SPT_GCP_LOSS_RAYLEIGH = 5,        /**< 2 log(m + eps) + (pi / 4) (x / (m + eps))^2; data >= 0; lower bound 0 */
  SPT_GCP_LOSS_GAMMA = 6,           /**< x / (m + eps) + log(m + eps); data >= 0; lower bound 0 */
  SPT_GCP_LOSS_HUBER = 7,           /**< (x - m)^2 if |x - m| < t, else 2 t |x - m| - t^2, t = loss_parameter;
                                         real data; lower bound -inf */
  SPT_GCP_LOSS_MAX_ENUM = 0x7FFFFFFF /**< not a value: makes every 32-bit int representable (checked at run time) */
} spt_gcp_loss;

/** Which optimiser runs. */
typedef enum spt_gcp_optimizer {
  SPT_GCP_OPTIMIZER_LBFGSB = 0, /**< GCP-OPT: L-BFGS-B over the full tensor (see the top of this header) */
  SPT_GCP_OPTIMIZER_SGD = 1,    /**< GCP-SGD: stratified sampling of nonzeros and zeros, Adam steps (see the top
                                     of this header) */
  SPT_GCP_OPTIMIZER_MAX_ENUM = 0x7FFFFFFF /**< not a value (checked at run time) */
} spt_gcp_optimizer;

/** How the factors are initialised. Either start is then normalised as
 *  pyttb gcp_opt does (ktensor.normalize("all")): every column to unit
 *  2-norm, and component r's norm product spread equally over the modes
 *  (each column times its product^(1/N)); the model is unchanged. */
typedef enum spt_gcp_init {
  SPT_GCP_INIT_RANDOM = 0, /**< uniform [0,1) values from the seed, mode by mode, row-major, scaled so the
                                model's norm is the data's (as pyttb init='random') */
  SPT_GCP_INIT_USER = 1,   /**< opts->init_factors (like pyttb init=[factor matrices]) */
  SPT_GCP_INIT_MAX_ENUM = 0x7FFFFFFF /**< not a value (checked at run time) */
} spt_gcp_init;

/** Per-iteration callback: iteration (1-based), the objective after it, the
 *  infinity norm of its projected gradient, and the seconds since the start.
 *  With GCP-SGD it is called once per epoch with the epoch (1-based), the
 *  estimated objective of the model kept after it, and the learning rate
 *  used in place of the gradient norm. Called from the thread that called
 *  spt_gcp_opt. Return non-zero to stop (the model so far is kept; status
 *  SPT_WARN_NOT_CONVERGED). */
typedef int (*spt_gcp_callback)(void *user_data, int iteration, double objective, double projected_gradient_norm,
                                double seconds);

/** GCP options. Always initialise with spt_gcp_options_init() first: the
 *  struct_size field lets later versions add fields compatibly. */
typedef struct spt_gcp_options {
  size_t struct_size;                    /**< set by spt_gcp_options_init */
  spt_index rank;                        /**< number of components R >= 1 (default 10) */
  spt_gcp_loss loss;                     /**< default SPT_GCP_LOSS_GAUSSIAN */
  double loss_parameter;                 /**< Huber threshold t > 0 (default 0.25; other losses ignore it) */
  double lower_bound;                    /**< lower bound on every factor entry; NaN (the default) = the loss's
                                              own bound (listed with spt_gcp_loss). A bound above the loss's
                                              own is allowed; -inf below a bound of 0 is refused */
  spt_gcp_optimizer optimizer;           /**< default SPT_GCP_OPTIMIZER_LBFGSB */
  int max_iters;                         /**< L-BFGS-B iterations (default 1000; scipy maxiter); GCP-SGD: epochs
                                              (pyttb Adam max_iters) */
  int max_fun_evals;                     /**< objective/gradient evaluations (default 15000; scipy maxfun): checked
                                              after each iteration, as scipy does */
  int memory;                            /**< L-BFGS-B corrections kept (default 10; scipy m) */
  double factr;                          /**< stop when the relative reduction of F is <= factr * DBL_EPSILON
                                              (default 1e7; scipy factr, ftol = factr * eps) */
  double pgtol;                          /**< stop when the projected gradient's infinity norm is <= pgtol
                                              (default 1e-5; scipy pgtol) */
  spt_gcp_init init;                     /**< default SPT_GCP_INIT_RANDOM */
  uint64_t seed;                         /**< seed of the random init and of GCP-SGD's samples (0 = the context
                                              seed) */
  const spt_matrix *const *init_factors; /**< with SPT_GCP_INIT_USER: `order` float64 matrices I_n x R, any
                                              layout; only read. Entries below the lower bound are raised to
                                              it (as scipy clips the start) */
  spt_gcp_callback callback;             /**< optional */
  void *callback_data;                   /**< passed to callback */
  const spt_coo *missing;                /**< optional: coordinates of missing entries (weight 0; their values are
                                              ignored), same dims as the tensor; only read. NULL = none
                                              (GCP-OPT only) */
  /* GCP-SGD settings (optimizer = SPT_GCP_OPTIMIZER_SGD; GCP-OPT ignores them). The defaults are pyttb's
     Adam and GCPSampler defaults. */
  double rate;                           /**< Adam learning rate (default 1e-3; pyttb rate) */
  double decay;                          /**< learning-rate factor after a failed epoch, in (0, 1] (default 0.1) */
  int max_fails;                         /**< stop after more than this many failed epochs, >= 0 (default 1) */
  int epoch_iters;                       /**< Adam steps per epoch, >= 1 (default 1000) */
  double f_est_tol;                      /**< stop when the estimated objective falls below it (default -inf) */
  double beta1;                          /**< Adam first-moment decay in [0, 1) (default 0.9) */
  double beta2;                          /**< Adam second-moment decay in [0, 1) (default 0.999) */
  double epsilon;                        /**< Adam denominator offset > 0 (default 1e-8) */
  spt_nnz gradient_nonzeros;             /**< nonzeros sampled per step (0 = pyttb's default,
                                              min(nnz, max(1000, ceil(3 nnz / 1000)))) */
  spt_nnz gradient_zeros;                /**< zeros sampled per step (0 = pyttb's default, the same count, at most
                                              the number of zeros) */
  spt_nnz function_nonzeros;             /**< nonzeros in the objective-estimate sample (0 = pyttb's default,
                                              min(nnz, max(ceil(nnz / 100), 100000))) */
  spt_nnz function_zeros;                /**< zeros in that sample (0 = pyttb's default, the same count, at most the
                                              number of zeros) */
} spt_gcp_options;

/** Fill `opts` with the defaults listed above. Errors:
 *  SPT_ERR_INVALID_ARGUMENT (opts NULL). Thread safe. */
SPT_API spt_status spt_gcp_options_init(spt_gcp_options *opts);
/** Same, writing only the first `struct_size` bytes (the caller's
 *  sizeof(spt_gcp_options)); struct_size is stored in opts->struct_size.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (opts NULL, struct_size below the first
 *  release's size). Thread safe. */
SPT_API spt_status spt_gcp_options_init_size(spt_gcp_options *opts, size_t struct_size);
/** Macro form of spt_gcp_options_init(): calls spt_gcp_options_init_size with sizeof *(opts). */
#define spt_gcp_options_init(opts) spt_gcp_options_init_size((opts), sizeof *(opts))

/** GCP decomposition of `x` (see the top of this header). Repeated
 *  coordinates of x count as summed. On success (SPT_OK when L-BFGS-B
 *  converged by factr or pgtol, SPT_WARN_NOT_CONVERGED when it stopped at
 *  max_iters, max_fun_evals, its line search, or the callback) *out receives
 *  a new ktensor owned by the caller (free with spt_ktensor_free) holding
 *  the optimised factors as they are (lambda = 1, not normalised, not
 *  sorted: pyttb gcp_opt's result). spt_ktensor_result's `fit` slot holds
 *  the final objective F (NOT a least-squares fit), `iterations` the L-BFGS-B
 *  iterations, `converged` 1 on convergence; spt_ktensor_history's `fits`
 *  holds F after each iteration and `seconds` the time since the start.
 *  GCP-SGD: `fit` is the final estimated F (from the objective sample; use
 *  spt_gcp_objective for the exact value on tensors small enough),
 *  `iterations` the epochs run, `converged` 1 when it stopped by max_fails
 *  or f_est_tol (SPT_OK), 0 at max_iters epochs or by the callback
 *  (SPT_WARN_NOT_CONVERGED); the history holds the estimate after each
 *  epoch. On error *out is unchanged and nothing leaks.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL x/opts/out, opts not initialised,
 *  order < 2, rank 0, unknown loss/optimizer/init, Huber threshold <= 0 or
 *  not finite, lower bound +inf or below a bound of 0 the loss needs,
 *  max_iters, max_fun_evals or memory < 1, factr or pgtol negative or not
 *  finite, data the loss cannot take (the message names the first bad
 *  entry: Bernoulli needs 0/1, Poisson nonnegative integers, Gamma and
 *  Rayleigh nonnegative values), init factors missing or of the wrong
 *  shape/dtype, missing of other dims; GCP-SGD: rate, epsilon not finite
 *  and > 0, decay outside (0, 1], beta1/beta2 outside [0, 1), max_fails < 0,
 *  epoch_iters < 1, f_est_tol NaN, a tensor without nonzeros),
 *  SPT_ERR_UNSUPPORTED (float32; GCP-OPT: more than
 *  SPT_GCP_MAX_DENSE_ENTRIES entries or a build without L-BFGS-B; GCP-SGD:
 *  missing entries, prod(dims) of 2^63 or more), SPT_ERR_NUMERICAL (the
 *  objective became NaN, or GCP-SGD's gradient infinite),
 *  SPT_ERR_OUT_OF_MEMORY. Thread safety: see the top of this header. */
SPT_API spt_status spt_gcp_opt(spt_context *ctx, const spt_coo *x, const spt_gcp_options *opts,
                               spt_ktensor **out);

/** The GCP objective F of the model k (its lambda is applied) for x, with
 *  the loss, loss_parameter and missing entries of `opts` (the other fields
 *  are not read), over every entry of the full tensor.
 *  Errors: SPT_ERR_INVALID_ARGUMENT (NULL arguments, dims mismatch, opts
 *  not initialised, unknown loss), SPT_ERR_UNSUPPORTED (float32, more than
 *  SPT_GCP_MAX_DENSE_ENTRIES entries). Thread safety: only reads x and k. */
SPT_API spt_status spt_gcp_objective(spt_context *ctx, const spt_coo *x, const spt_ktensor *k,
                                     const spt_gcp_options *opts, double *objective);

#ifdef __cplusplus
}
#endif

#endif /* SPTENSOR_GCP_H */
