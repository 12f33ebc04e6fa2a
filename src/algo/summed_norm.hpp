// The norm an algorithm's fit is measured against: that of the tensor the
// kernels see, in which entries repeating a coordinate add up.
#pragma once

#include "core/context.hpp"
#include "core/coo.hpp"
#include "util/internal_api.hpp"

namespace spt::algo {

// Logs at verbosity 1, when distinct < entries, that `algorithm` sums the
// entries - distinct repeated entries into their coordinates.
SPT_INTERNAL_API void note_repeats(const spt_context_s& ctx, const char* algorithm, spt_nnz entries, spt_nnz distinct);

// ||x||^2 with repeated coordinates summed (the backend's summed_stats
// kernel); notes the repeats for `algorithm`.
double summed_norm_squared(spt_context_s& ctx, const spt_coo_s& x, const char* algorithm);

}  // namespace spt::algo
