// Semi-sparse tensor (sCOO, dissertation ch. 7) behind spt_scoo: sparse
// coordinates for every mode but `dense_mode`, and one dense fiber of length
// dims[dense_mode] per stored coordinate, row-major (fiber-major).
#pragma once

#include <vector>

#include "core/buffer.hpp"
#include "core/dtype.hpp"

struct spt_scoo_s {
  std::vector<spt_index> dims;
  uint32_t dense_mode = 0;
  spt_nnz nfibers = 0;
  std::vector<spt::buffer<spt_index>> ind;  // order entries; ind[dense_mode] is empty
  spt::ValueStore values;                   // nfibers * dims[dense_mode]

  spt_dtype dtype() const { return values.dtype(); }
  uint32_t order() const { return static_cast<uint32_t>(dims.size()); }
  spt_nnz fiber_length() const { return dims[dense_mode]; }
};
