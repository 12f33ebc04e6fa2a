// CP-ALS (CANDECOMP/PARAFAC by alternating least squares) with the numerics
// of Tensor Toolbox / pyttb cp_als; the C API wrapper is spt_cpd_als.
#pragma once

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/ktensor.hpp"

namespace spt {

// Check opts against x (rank, iteration count, tolerance, init factors),
// throwing SPT_ERR_INVALID_ARGUMENT with a message that names the problem.
void validate_cpd_options(const spt_coo_s& x, const spt_cpd_options& opts);

// Run CP-ALS on x (validated inside) and (re)initialise `out` with the
// result: lambda, factors, fit, iterations, converged flag, history.
// Returns SPT_OK when the fit change fell below opts.tol, otherwise
// SPT_WARN_NOT_CONVERGED (iteration limit, tol 0, or the callback stopped
// it). Throws spt::Error on invalid input or numerical breakdown.
//
// Where pyttb would divide by a zero column norm (a factor column that is
// entirely zero, e.g. every slice it touches is empty), the column is kept
// at zero and its lambda is 0 instead of becoming NaN.
spt_status cp_als(spt_context_s& ctx, const spt_coo_s& x, const spt_cpd_options& opts, spt_ktensor_s& out);

// ||K||_F^2 = lambda^T (Hadamard product of all factor Grams) lambda, with
// the Grams from the context's backend and the quadratic form in double.
double ktensor_norm_squared(spt_context_s& ctx, const spt_ktensor_s& k);

}  // namespace spt
