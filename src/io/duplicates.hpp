// The read option `duplicates`: SUM merges repeated coordinates, REJECT
// fails naming the first repeated coordinate. Both sort the tensor
// lexicographically (mode 0 first), like spt_coo_coalesce. A small
// self-contained implementation (stable LSD radix sort), so file reading
// does not depend on the kernels.
#pragma once

#include <functional>
#include <string>

#include "core/context.hpp"
#include "core/coo.hpp"

namespace spt::io {

// `where(k)` describes nonzero k (0-based, in file order) for messages,
// e.g. "data.tns:12". REJECT fails with SPT_ERR_PARSE.
void apply_duplicate_policy(const spt_context_s& ctx, spt_coo_s& x, spt_duplicates policy,
                            const std::function<std::string(spt_nnz)>& where);

}  // namespace spt::io
