// Entry point of the reordering methods: validates the options and runs
// LEXI-ORDER, BFS-MCS or a random relabelling on a tensor.
#pragma once

#include "core/context.hpp"
#include "core/coo.hpp"
#include "reorder/permutation.hpp"

namespace spt::reorder {

// Throws INVALID_ARGUMENT naming the bad field.
void validate_options(const spt_reorder_options& opts);

// The relabelling of every mode of x chosen by opts (validated here).
spt_permutation_s compute(const spt_context_s& ctx, const spt_coo_s& x, const spt_reorder_options& opts);

}  // namespace spt::reorder
