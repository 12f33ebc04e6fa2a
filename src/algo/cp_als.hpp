// CP-ALS (CANDECOMP/PARAFAC by alternating least squares) with the numerics
// of Tensor Toolbox / pyttb cp_als; the C API wrapper is spt_cpd_als.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "algo/mttkrp_operand.hpp"
#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/csf.hpp"
#include "core/ktensor.hpp"
#include "dispatch/cp_als_steps.hpp"
#include "util/internal_api.hpp"

namespace spt {

// Size of spt_cpd_options in release 0.1 (before `format`): the smallest
// struct_size accepted.
constexpr size_t kCpdOptionsSize01 = offsetof(spt_cpd_options, format);

// A copy of the caller's options at the current layout: a smaller
// struct_size (a caller built against an older header) gets the fields it
// has and defaults for the rest. Throws INVALID_ARGUMENT when struct_size is
// below the 0.1 size (uninitialised options).
spt_cpd_options normalized_cpd_options(const spt_cpd_options& given);

// Check normalised opts against a tensor's dims / nnz / dtype.
SPT_INTERNAL_API void validate_cpd_options(const std::vector<spt_index>& dims, spt_nnz nnz, spt_dtype dtype,
                          const spt_cpd_options& opts);

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
// The storage its MTTKRPs run on follows opts.format / opts.csf_policy
// (algo::make_mttkrp_operand).
spt_status cp_als(spt_context_s& ctx, const spt_coo_s& x, const spt_cpd_options& opts, spt_ktensor_s& out);

// The same taking over x, which is freed as soon as the run no longer
// needs it: on the CPU with CSF (asked for, or AUTO's choice) right after
// the first tree is built, the other trees then being built from that one,
// so the COO and all the trees are never held at once; otherwise when the
// run ends. Same result as cp_als.
spt_status cp_als_take(spt_context_s& ctx, std::unique_ptr<spt_coo_s> x, const spt_cpd_options& opts,
                       spt_ktensor_s& out);

// The same on a caller's CSF tensor (opts.format / csf_policy ignored).
spt_status cp_als_csf(spt_context_s& ctx, const spt_csf_s& x, const spt_cpd_options& opts, spt_ktensor_s& out);

// The format-neutral core: CP-ALS of the tensor behind `operand`, with its
// dims and ||X||^2, and options already normalised and validated (for
// formats wired outside cp_als.cpp, e.g. HiCOO). T is float or double.
// `exact_inner`, when given, returns <X, [[lambda; factors]]> summed in
// double over the nonzeros; the fit uses it in place of the inner product
// from the last MTTKRP (rounded to T) when that rounding could move the fit
// by more than kFitNoise (float32 fits near 1).
template <typename T>
using ExactInner = std::function<double(const T* lambda, const ConstMatRef<T>* factors)>;
template <typename T>
spt_status cp_als_operand(spt_context_s& ctx, algo::MttkrpOperand<T>& operand, const std::vector<spt_index>& dims,
                          double norm_x_squared, const spt_cpd_options& opts, spt_ktensor_s& out,
                          const ExactInner<T>& exact_inner = {});

// The one CP-ALS loop, for every backend: sets `out` up with the initial
// factors of opts (after checking ||X||^2 = norm_x_squared), runs the
// sweeps over `steps` (the host's, or a device's from
// dispatch::make_device_cp_als_steps) and arranges the result, as cp_als
// describes. opts must be normalised and validated; dims are the tensor's.
// Throws spt::Error (SPT_ERR_NUMERICAL for a breakdown, with the mode and
// iteration) and whatever the steps or the callback throw.
template <typename T>
spt_status run_cp_als(spt_context_s& ctx, dispatch::CpAlsSteps<T>& steps, const std::vector<spt_index>& dims,
                      double norm_x_squared, const spt_cpd_options& opts, spt_ktensor_s& out);

// ||K||_F^2 = lambda^T (Hadamard product of all factor Grams) lambda, with
// the Grams from the context's backend and the quadratic form in double.
double ktensor_norm_squared(spt_context_s& ctx, const spt_ktensor_s& k);

}  // namespace spt
