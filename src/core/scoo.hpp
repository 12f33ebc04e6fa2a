// Semi-sparse tensor (sCOO, dissertation ch. 7) behind spt_scoo: sparse
// coordinates for every mode but the dense ones, and one dense block of
// prod_{d dense} dims[d] values per stored coordinate ("fiber").
//
// Block layout: the dense modes are kept sorted ascending (d_0 < d_1 < ...)
// and the block is stored with the LOWEST dense mode fastest (Kolda's
// unfolding order): entry (r_{d_0}, r_{d_1}, ...) of fiber f is at
//   values[f * block_size() + r_{d_0} + D_{d_0} (r_{d_1} + D_{d_1} (...))]
// with D_d = dims[d]. With one dense mode this is the original
// "nfibers x dims[dense_mode], row-major" layout. The layout does not depend
// on the order in which the dense modes were produced (a TTM chain in any
// mode order gives the same blocks), and a TTM-chain result dense in all
// modes but n has exactly the column order of the one-shot TTMc kernel.
#pragma once

#include <algorithm>
#include <vector>

#include "core/buffer.hpp"
#include "core/dtype.hpp"

struct spt_scoo_s {
  std::vector<spt_index> dims;
  // The lowest dense mode (== dense_modes[0]); kept for the single-dense-
  // mode API (spt_scoo_info) and for callers that know there is only one.
  uint32_t dense_mode = 0;
  std::vector<uint32_t> dense_modes;  // sorted ascending, at least one entry
  spt_nnz nfibers = 0;
  std::vector<spt::buffer<spt_index>> ind;  // order entries; empty for dense modes
  spt::ValueStore values;                   // nfibers * block_size()
  // The sparse modes in the order the fibers are sorted lexicographically
  // (slowest first); empty when unknown. Kernels that need fibers grouped
  // (SsTTM) skip their sort when it already fits.
  std::vector<uint32_t> fiber_order;

  spt_dtype dtype() const { return values.dtype(); }
  uint32_t order() const { return static_cast<uint32_t>(dims.size()); }
  bool is_dense(uint32_t m) const { return std::binary_search(dense_modes.begin(), dense_modes.end(), m); }
  // Values per fiber: prod of the dense dims (callers creating a tensor check
  // the product for overflow first; see spt::scoo_block_size).
  spt_nnz block_size() const {
    spt_nnz b = 1;
    for (uint32_t d : dense_modes) b *= dims[d];
    return b;
  }
  // The sparse modes, ascending.
  std::vector<uint32_t> sparse_modes() const {
    std::vector<uint32_t> s;
    for (uint32_t m = 0; m < order(); ++m)
      if (!is_dense(m)) s.push_back(m);
    return s;
  }
  // Set a single dense mode (SpTTM outputs).
  void set_single_dense_mode(uint32_t mode) {
    dense_mode = mode;
    dense_modes.assign(1, mode);
  }
};

namespace spt {

// prod_{d in dense} dims[d], failing with SPT_ERR_OVERFLOW when it exceeds
// 64 bits.
inline uint64_t scoo_block_size(const std::vector<spt_index>& dims, const std::vector<uint32_t>& dense) {
  uint64_t b = 1;
  for (uint32_t d : dense) b = checked_mul(b, dims[d], "the semi-sparse block size (product of the dense dims)");
  return b;
}

}  // namespace spt
