// CP-APR (Poisson CP by multiplicative updates, Chi & Kolda) with the
// numerics of Tensor Toolbox / pyttb cp_apr(algorithm='mu'); the C API
// wrapper is spt_cp_apr (include/sptensor/cp_apr.h).
#pragma once

#include <vector>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/ktensor.hpp"
#include "core/matrix.hpp"
#include "sptensor/cp_apr.h"

namespace spt::algo {

// The nonzeros of a COO tensor grouped by their index in one mode (a stable
// counting sort), copied in that order: group i holds the nonzeros
// [row_ptr[i], row_ptr[i+1]) and ind[m][k] / val[k] are the coordinates and
// value of the k-th. Lets the Phi kernel give each output row to exactly one
// thread (race-free, result independent of the thread count) and stream
// through the nonzeros sequentially. Memory: nnz * (4 * order + 8) bytes.
struct ModeGroups {
  std::vector<spt_nnz> row_ptr;
  std::vector<std::vector<spt_index>> ind;
  std::vector<double> val;
};
ModeGroups group_by_mode(const spt_coo_s& x, uint32_t mode);

// Phi = (X_(mode) ./ max(A Pi^T, eps)) Pi evaluated at the nonzeros only,
// with A = factors[mode] and Pi's rows (the Hadamard product of the other
// factors' rows at each nonzero) formed on the fly instead of stored (the
// factors stay cache-resident, where a stored nnz x R Pi is re-read from
// memory in every inner iteration): for each nonzero k with row i,
// v = <A(i,:), Pi_k>, Phi(i,:) += x_k / max(v, eps) * Pi_k; rows without
// nonzeros are 0. Model values and Phi rows are accumulated in double.
template <typename T>
void cp_apr_phi(const ModeGroups& groups, uint32_t mode, const std::vector<ConstMatRef<T>>& factors, double eps,
                MatRef<T> phi, int threads);

// Poisson log-likelihood of k for x (pyttb tt_loglikelihood).
double cp_apr_loglikelihood(const spt_coo_s& x, const spt_ktensor_s& k, int threads);

// Throws INVALID_ARGUMENT naming the first negative value of x.
void require_nonnegative(const spt_coo_s& x);

// Run CP-APR MU on x (validated inside) into `out`. Returns SPT_OK when an
// outer iteration needed no update in any mode, SPT_WARN_NOT_CONVERGED
// otherwise. Throws spt::Error on invalid input.
spt_status cp_apr(spt_context_s& ctx, const spt_coo_s& x, const spt_cp_apr_options& opts, spt_ktensor_s& out);

}  // namespace spt::algo
