// Random numbers that are the same with every standard library: uniform
// [0,1) values built from one 64-bit mt19937_64 draw, exactly representable
// in T (a float never rounds up to 1). std::uniform_real_distribution is
// implementation-defined, so seeded results would differ across platforms.
#pragma once

#include <cstdint>
#include <random>
#include <type_traits>

namespace spt {

template <typename T = double>
T unit_uniform(std::mt19937_64& gen) {
  if constexpr (std::is_same_v<T, float>) return static_cast<float>(gen() >> 40) * 0x1.0p-24f;
  else return static_cast<double>(gen() >> 11) * 0x1.0p-53;
}

}  // namespace spt
