// Parallel least-significant-digit radix sort of 64-bit keys (OpenMP).
// Used by LEXI-ORDER, which sorts packed coordinates once per mode and
// iteration: a radix sort is linear in the number of keys, where a
// comparison sort was the bottleneck of the reordering (dissertation §5.2).
#pragma once

#include <cstdint>

#include "core/buffer.hpp"

namespace spt::sorting {

// Stable sort of `keys` by bits [low_bit, high_bit) (0 <= low_bit <=
// high_bit <= 64); bits outside the range are ignored, so keys equal in it
// keep their input order. Digits that are the same in every key are
// skipped. `scratch` is resized to keys.size() and may be reused across
// calls to save allocations. The result does not depend on `threads`.
// Allocates before its parallel regions (may throw std::bad_alloc), never
// throws from inside them.
void radix_sort(buffer<uint64_t>& keys, buffer<uint64_t>& scratch, int low_bit, int high_bit, int threads);

}  // namespace spt::sorting
