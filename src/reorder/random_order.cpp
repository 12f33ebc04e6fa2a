#include "reorder/random_order.hpp"

#include <random>
#include <utility>

namespace spt::reorder {

namespace {

// Uniform in [0, bound) by rejection: draws below 2^64 mod bound would make
// low values more likely, so they are redrawn.
uint64_t uniform_below(std::mt19937_64& gen, uint64_t bound) {
  const uint64_t reject_below = (0 - bound) % bound;
  while (true) {
    const uint64_t r = gen();
    if (r >= reject_below) return r % bound;
  }
}

}  // namespace

std::vector<Permutation> random_order(const std::vector<spt_index>& dims, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<Permutation> perm;
  perm.reserve(dims.size());
  for (spt_index dim : dims) {
    Permutation p = identity(dim);
    for (spt_index i = dim; i > 1; --i) std::swap(p[i - 1], p[uniform_below(gen, i)]);
    perm.push_back(std::move(p));
  }
  return perm;
}

}  // namespace spt::reorder
