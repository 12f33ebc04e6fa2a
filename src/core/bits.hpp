// Small integer helpers shared by the format builders, sorts and reordering.
#pragma once

#include <algorithm>
#include <cstdint>

#include "sptensor/sptensor.h"

namespace spt {

// Bits needed for the values 0..v: 0 for v == 0, else one past the highest set bit.
inline int bit_width(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

// Threads worth waking for `work` items: one per `items_per_thread` (at
// least one), at most `threads`; small inputs run on one thread.
inline int threads_for_work(int threads, spt_nnz work, spt_nnz items_per_thread) {
  return static_cast<int>(std::max<spt_nnz>(1, std::min<spt_nnz>(threads, work / items_per_thread + 1)));
}

}  // namespace spt
