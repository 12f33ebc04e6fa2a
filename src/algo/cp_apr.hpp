// CP-APR (Poisson CP by multiplicative updates, Chi & Kolda) with the
// numerics of Tensor Toolbox / pyttb cp_apr(algorithm='mu'); the C API
// wrapper is spt_cp_apr (include/sptensor/cp_apr.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/hicoo.hpp"
#include "core/ktensor.hpp"
#include "core/matrix.hpp"
#include "core/mode_groups.hpp"
#include "dispatch/cp_apr_steps.hpp"
#include "sptensor/cp_apr.h"

namespace spt::algo {


// The grouping and the Phi kernel live in core/mode_groups.hpp and
// kernels.hpp (cp_apr_phi); the driver calls it through the dispatcher.
using spt::ModeGroups;
using spt::group_by_mode;

// Poisson log-likelihood of k for x (pyttb tt_loglikelihood).
double cp_apr_loglikelihood(const spt_coo_s& x, const spt_ktensor_s& k, int threads);

// Throws INVALID_ARGUMENT naming the first negative value of x.
void require_nonnegative(const spt_coo_s& x);

// The storage Phi runs on for `requested` (AUTO, COO or HICOO; validated
// by the caller): COO, or HICOO with the HiCOO copy of x (suggested B and L
// for the context's threads) moved into *hicoo when hicoo is not NULL.
// AUTO builds the HiCOO copy and keeps it when it compresses (alpha_b below
// eq. 4.11's break-even), else answers COO. *why (optional) gets one
// sentence.
spt_tensor_format cp_apr_choose_format(spt_context_s& ctx, const spt_coo_s& x, spt_tensor_format requested,
                                       std::unique_ptr<spt_hicoo_s>* hicoo, std::string* why);

// The one CP-APR loop (pyttb tt_cp_apr_mu), for every backend: outer
// iterations over the modes, each mode's scooch (from the second outer
// iteration on), redistribution, inner iterations (Phi, KKT violation,
// update unless it is below tol) and normalisation; the log-likelihood,
// non-finite check and callback per outer iteration; the convergence test;
// at the end the components sorted by decreasing lambda. It calls only
// `steps` (dispatch/cp_apr_steps.hpp), never a backend. k holds the
// initial factors (opts validated); the result is moved into out. Returns
// SPT_OK when converged, else SPT_WARN_NOT_CONVERGED; throws what the
// steps throw and SPT_ERR_NUMERICAL for non-finite values.
template <typename T>
spt_status run_cp_apr(dispatch::CpAprSteps<T>& steps, const spt_cp_apr_options& opts, spt_ktensor_s& k,
                      spt_ktensor_s& out);

// Run CP-APR MU on x (validated inside) into `out`. Returns SPT_OK when an
// outer iteration needed no update in any mode, SPT_WARN_NOT_CONVERGED
// otherwise. Throws spt::Error on invalid input.
spt_status cp_apr(spt_context_s& ctx, const spt_coo_s& x, const spt_cp_apr_options& opts, spt_ktensor_s& out);

}  // namespace spt::algo
