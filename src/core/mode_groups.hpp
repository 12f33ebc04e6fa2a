// Nonzeros grouped by their index in one mode (CP-APR's Phi kernel input).
#pragma once

#include <cstdint>
#include <vector>

#include "core/coo.hpp"

namespace spt {

// The nonzeros of a COO tensor grouped by their index in one mode (a stable
// counting sort), copied in that order: group i holds the nonzeros
// [row_ptr[i], row_ptr[i+1]) and ind[m][k] / val[k] are the coordinates and
// value of the k-th. Lets the Phi kernel give each output row to exactly one
// thread (race-free, result independent of the thread count) and stream
// through the nonzeros sequentially. Memory: nnz * (4 * order + 8) bytes.
struct ModeGroups {
  std::vector<spt_nnz> row_ptr;
  std::vector<std::vector<spt_index>> ind;
  std::vector<double> val;
};
ModeGroups group_by_mode(const spt_coo_s& x, uint32_t mode);

}  // namespace spt
