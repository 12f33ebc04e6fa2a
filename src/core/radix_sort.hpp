// The one radix sort of the library: a stable, parallel least-significant-
// digit radix sort over a range of bits of 64-bit keys (OpenMP). Every sort
// by integer key goes through it: the COO sorts (core/sort.cpp), the HiCOO
// and HLS builders, LEXI-ORDER and the TTM-chain key sort. A radix sort is
// linear in the number of keys, where a comparison sort was the bottleneck
// of the format builders and of the reordering (dissertation §5.2;
// docs/design-measurements.md, "Radix sort").
#pragma once

#include <cstdint>

#include "core/buffer.hpp"

namespace spt::sorting {

// A key with the position (or any payload) it stands for.
struct KeyPosition {
  uint64_t key;
  uint64_t position;
};

// Stable sort of `keys` by bits [low_bit, high_bit) (0 <= low_bit <=
// high_bit <= 64); bits outside the range are ignored, so keys equal in it
// keep their input order. The result is therefore the same for every
// `threads` (and the same as any other stable sort by those bits). Digits of
// at most 11 bits, balanced over the range (2048 buckets per thread stay in
// L1/L2); a digit that is the same in every key costs one counting pass and
// no scatter. `scratch` is resized to keys.size() and may be reused across
// calls to save allocations; on return it holds no useful data.
// Allocates before its parallel regions (may throw std::bad_alloc), never
// throws from inside them.
void radix_sort(buffer<uint64_t>& keys, buffer<uint64_t>& scratch, int low_bit, int high_bit, int threads);

// The same on (key, position) pairs, ordered by bits [low_bit, high_bit) of
// their keys; the positions travel with their keys.
void radix_sort(buffer<KeyPosition>& items, buffer<KeyPosition>& scratch, int low_bit, int high_bit, int threads);

}  // namespace spt::sorting
