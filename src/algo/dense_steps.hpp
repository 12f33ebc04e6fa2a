// Steps of CP-ALS on the context's backend, out of line: the Gram matrix,
// the column scaling and the summed statistics of a tensor. The CP-ALS of
// this library calls the kernels through SPT_DISPATCH itself; these are for
// libsptensor_mpi.so, whose distributed CP-ALS runs them on its local
// blocks and reaches them in libsptensor.so (SPT_INTERNAL_API) rather than
// the kernels themselves.
#pragma once

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/exec.hpp"
#include "core/matrix.hpp"
#include "util/internal_api.hpp"

namespace spt::algo {

// out (R x R, full symmetric) = a^T a for a (I x R).
template <typename T>
SPT_INTERNAL_API void gram(const spt_context_s& ctx, ConstMatRef<T> a, MatRef<T> out);

// a(:, r) /= divisors[r]; a zero divisor leaves its column unchanged.
template <typename T>
SPT_INTERNAL_API void divide_columns(const spt_context_s& ctx, MatRef<T> a, const T* divisors);

// Squared norm and distinct coordinates of x with repeated coordinates summed.
SPT_INTERNAL_API SummedStats summed_stats(const spt_context_s& ctx, const spt_coo_s& x);

}  // namespace spt::algo
