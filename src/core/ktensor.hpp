// Kruskal tensor (CP model) behind spt_ktensor: lambda, one factor matrix per
// mode (row-major dims[m] x rank), and the decomposition's result record.
#pragma once

#include <memory>
#include <vector>

#include "core/matrix.hpp"
#include "util/internal_api.hpp"

struct spt_ktensor_s {
  std::vector<spt_index> dims;
  spt_index rank = 0;
  spt_matrix_s lambda;  // 1 x rank
  std::vector<std::unique_ptr<spt_matrix_s>> factors;

  double fit = 0.0;
  int iterations = 0;
  int converged = 0;
  std::vector<double> fit_history;
  std::vector<double> seconds_history;

  spt_dtype dtype() const { return lambda.dtype(); }
  uint32_t order() const { return static_cast<uint32_t>(dims.size()); }
  // Factor m as a row-major reference (T must be the ktensor's dtype).
  template <typename T>
  spt::MatRef<T> factor(uint32_t m) {
    return {factors[m]->ptr<T>(), dims[m], rank, rank};
  }
};

namespace spt {

// Set up k with lambda = 1 and zero factors.
SPT_INTERNAL_API void init_ktensor(spt_ktensor_s& k, spt_dtype dtype, const std::vector<spt_index>& dims, spt_index rank);

}  // namespace spt
