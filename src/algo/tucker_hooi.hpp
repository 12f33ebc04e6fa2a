// Tucker decomposition by HOOI with pyttb tucker_als numerics; the C API
// wrapper is spt_tucker_hooi (src/api/api_tucker.cpp).
#pragma once

#include <cstddef>

#include <vector>

#include "algo/ttm_chain.hpp"
#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/ttensor.hpp"

namespace spt {

// Size of spt_tucker_options in release 0.1: the smallest struct_size accepted.
constexpr size_t kTuckerOptionsSize01 = sizeof(spt_tucker_options);

// How the leading left singular vectors of Y_(n) (I_n x P) are computed:
//  gesdd:      economy SVD of Y_(n);
//  gram_eig:   eigenvectors of the I_n x I_n Gram Y_(n) Y_(n)^T (syevd);
//  right_gram: eigenpairs (v_r, s_r^2) of the P x P Gram Y_(n)^T Y_(n), then
//              u_r = Y_(n) v_r / s_r -- falls back to gesdd when s_R^2 is
//              too small next to s_1^2 for that division to be accurate.
// automatic: gram_eig when I_n <= P (or R_n > P), else right_gram. Forcing
// one is for tests.
enum class TuckerSvdPath { automatic, gesdd, gram_eig, right_gram };

// How the HOSVD initialisation computes the leading left singular vectors
// of the sparse unfolding X_(n). automatic: the exact Gram X_(n) X_(n)^T
// assembled fiber by fiber when I_n and the fiber work are small, else a
// randomized subspace iteration with sparse products.
enum class TuckerHosvdPath { automatic, gram, randomized };

struct TuckerInternalOptions {
  TuckerSvdPath svd = TuckerSvdPath::automatic;
  TuckerHosvdPath hosvd = TuckerHosvdPath::automatic;
  // TTMc path per mode (algo/ttm_chain.hpp): automatic = opts.ttmc
  // (SPT_TUCKER_TTMC_AUTO: the cost estimate); forcing one here keeps the run on
  // the CPU loop (tests of the CPU paths).
  TtmcPath ttmc = TtmcPath::automatic;
  // When set, receives the per-mode TTMc plans (path, estimates, memory).
  std::vector<TtmcPlan>* plans_out = nullptr;
};

// Check opts (struct_size, ranks, iterations, tolerance, init) against x,
// throwing SPT_ERR_INVALID_ARGUMENT with a message naming the problem.
void validate_tucker_options(const spt_coo_s& x, const spt_tucker_options& opts);

// Run HOOI on x and (re)initialise `out` with the core, factors and result
// record. Returns SPT_OK when |fit change| < opts.tol, else
// SPT_WARN_NOT_CONVERGED. Throws spt::Error on invalid input, sizes that do
// not fit memory, or numerical breakdown.
spt_status tucker_hooi(spt_context_s& ctx, const spt_coo_s& x, const spt_tucker_options& opts, spt_ttensor_s& out,
                       const TuckerInternalOptions& internal = {});

}  // namespace spt
