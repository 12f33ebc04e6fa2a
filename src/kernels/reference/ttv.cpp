// Reference tensor-times-vector: accumulate each output coordinate in an
// ordered map (sequential, obviously correct; the oracle for the CPU kernel).
#include <map>
#include <vector>

#include "kernels/kernels.hpp"

namespace spt::kernels::reference {

namespace {

template <typename T>
void ttv_impl(const spt_coo_s& x, uint32_t mode, const T* v, spt_coo_s& out) {
  const uint32_t order = x.order();
  std::map<std::vector<spt_index>, T> sums;
  std::vector<spt_index> key(order - 1);
  const T* val = x.values<T>();
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    for (uint32_t m = 0, j = 0; m < order; ++m)
      if (m != mode) key[j++] = x.ind[m][k];
    sums[key] += val[k] * v[x.ind[mode][k]];
  }
  std::vector<spt_index> dims;
  for (uint32_t m = 0; m < order; ++m)
    if (m != mode) dims.push_back(x.dims[m]);
  out.init_owned(x.dtype(), dims, sums.size());
  spt_nnz f = 0;
  for (const auto& [coord, sum] : sums) {
    for (uint32_t j = 0; j + 1 < order; ++j) out.mutable_ind(j)[f] = coord[j];
    out.mutable_values<T>()[f] = sum;
    ++f;
  }
  for (uint32_t j = 0; j + 1 < order; ++j) out.sorted_by.push_back(j);
}

}  // namespace

void ttv(const Exec&, const spt_coo_s& x, uint32_t mode, const float* v, spt_coo_s& out) { ttv_impl(x, mode, v, out); }
void ttv(const Exec&, const spt_coo_s& x, uint32_t mode, const double* v, spt_coo_s& out) { ttv_impl(x, mode, v, out); }

}  // namespace spt::kernels::reference
