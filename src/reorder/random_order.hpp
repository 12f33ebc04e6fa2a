// Random relabelling: a uniformly random permutation per mode, from a seed.
// A baseline for the ordering heuristics, and a way to remove any locality a
// tensor's natural labels carry (to measure what reordering recovers).
#pragma once

#include <cstdint>
#include <vector>

#include "reorder/permutation.hpp"

namespace spt::reorder {

// One permutation per mode (perm[m][old] = new) of the given dims. A
// 64-bit Mersenne Twister (std::mt19937_64, the generator CP-ALS's random
// initialisation uses) seeded with `seed` shuffles mode 0, then mode 1, ...
// by Fisher-Yates with unbiased bounded draws written out here (not a
// std:: distribution), so the result is the same with every standard
// library.
std::vector<Permutation> random_order(const std::vector<spt_index>& dims, uint64_t seed);

}  // namespace spt::reorder
