// Compressed sparse row matrix behind spt_csr (mode-n unfoldings).
#pragma once

#include "core/buffer.hpp"
#include "core/dtype.hpp"

struct spt_csr_s {
  spt_nnz rows = 0;
  uint64_t cols = 0;
  spt::buffer<spt_nnz> row_ptr;  // rows + 1
  spt::buffer<uint64_t> col_ind; // nnz
  spt::ValueStore values;        // nnz

  spt_dtype dtype() const { return values.dtype(); }
  spt_nnz nnz() const { return col_ind.size(); }
};
