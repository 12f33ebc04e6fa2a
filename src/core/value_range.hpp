// Narrowing float64 values to float32 without silent infinities: a finite
// float64 beyond float32's largest finite value would become +-inf, which
// loses the value. Every float64 -> float32 conversion of tensor values
// (spt_coo_convert_dtype, reading a float64 .sptb or SPLATT .bin as float32)
// runs this check first and fails with SPT_ERR_OVERFLOW.
#pragma once

#include <omp.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "sptensor/sptensor.h"

namespace spt {

// Shortest text that reads back to v (for messages).
template <typename T>
std::string shortest_text(T v) {
  char text[64];
  return std::string(text, std::to_chars(text, text + sizeof(text), v).ptr);
}

inline bool beyond_float32(double v) {
  return std::isfinite(v) && std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max());
}

// get(k) gives value k (double) for k < n. When some are beyond float32's
// range, fails with SPT_ERR_OVERFLOW: "<where>: <count> of <n> values are
// beyond float32's range (...); the first is <v> at <position(k)>".
// position(k) describes nonzero k (e.g. its coordinate).
template <typename Get, typename Position>
void check_float32_range(spt_nnz n, int threads, const std::string& where, Get&& get, Position&& position) {
  spt_nnz count = 0;
  spt_nnz first = std::numeric_limits<spt_nnz>::max();
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : count) reduction(min : first)
  for (spt_nnz k = 0; k < n; ++k) {
    if (beyond_float32(get(k))) {
      ++count;
      if (k < first) first = k;
    }
  }
  if (count == 0) return;
  fail(SPT_ERR_OVERFLOW, where, count, " of ", n, " values are beyond float32's range (largest finite ",
       shortest_text(std::numeric_limits<float>::max()), ") and would become infinite; the first is ",
       shortest_text(static_cast<double>(get(first))), " at ",
       position(first), "; keep float64 or rescale the values");
}

}  // namespace spt
