// Tucker tensor behind spt_ttensor: a dense core (first index fastest) and
// one factor matrix per mode (row-major I_n x R_n), plus the result record
// of the decomposition that produced it.
#pragma once

#include <memory>
#include <vector>

#include "core/matrix.hpp"
#include "sptensor/tucker.h"

struct spt_ttensor_s {
  std::vector<spt_index> dims;       // I_1..I_N
  std::vector<spt_index> core_dims;  // R_1..R_N
  spt::ValueStore core;              // prod R_n values, first index fastest
  std::vector<std::unique_ptr<spt_matrix_s>> factors;

  double fit = 0.0;
  int iterations = 0;
  int converged = 0;
  std::vector<double> fit_history;
  std::vector<double> seconds_history;

  spt_dtype dtype() const { return core.dtype(); }
  uint32_t order() const { return static_cast<uint32_t>(dims.size()); }
};
