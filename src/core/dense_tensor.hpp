// Dense tensor behind the opaque spt_dense handle: dims and one value array
// of prod(dims) elements, FIRST index fastest (MATLAB / Tensor Toolbox
// order, as the Tucker core in core/ttensor.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "core/buffer.hpp"
#include "core/dtype.hpp"

struct spt_dense_s {
  std::vector<spt_index> dims;
  spt::ValueStore values;  // prod(dims) values, first index fastest

  spt_dtype dtype() const { return values.dtype(); }
  uint32_t order() const { return static_cast<uint32_t>(dims.size()); }
  spt_nnz count() const { return values.size(); }
};

namespace spt {

// prod(dims) as a 64-bit count; throws SPT_ERR_OVERFLOW when the count, or
// its size in bytes for `dtype`, does not fit 64 bits.
inline uint64_t dense_element_count(const std::vector<spt_index>& dims, spt_dtype dtype) {
  uint64_t n = 1;
  for (spt_index d : dims) n = checked_mul(n, d, "dense tensor element count");
  checked_mul(n, dtype_size(dtype), "dense tensor size in bytes");
  return n;
}

// Zero-filled dense tensor of the given shape (dims validated by the caller).
inline void init_dense(spt_dense_s& t, spt_dtype dtype, const std::vector<spt_index>& dims) {
  const uint64_t n = dense_element_count(dims, dtype);
  t.dims = dims;
  t.values.set_dtype(dtype);
  t.values.assign_zero(static_cast<size_t>(n));
}

}  // namespace spt
