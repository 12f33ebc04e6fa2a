// Reference mode-n unfolding to CSR: (row, column) pairs accumulated in an
// ordered map. Column = linear index of the other coordinates, lowest other
// mode fastest (Kolda's convention).
#include <map>
#include <utility>

#include "kernels/kernels.hpp"

namespace spt::kernels::reference {

namespace {

template <typename T>
void unfold_impl(const spt_coo_s& x, uint32_t mode, spt_csr_s& out) {
  const uint32_t order = x.order();
  uint64_t cols = 1;
  for (uint32_t m = 0; m < order; ++m)
    if (m != mode) cols = checked_mul(cols, x.dims[m], "the column count of the unfolding");
  std::map<std::pair<spt_index, uint64_t>, T> entries;
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    uint64_t col = 0, stride = 1;
    for (uint32_t m = 0; m < order; ++m) {
      if (m == mode) continue;
      col += stride * x.ind[m][k];
      stride *= x.dims[m];
    }
    entries[{x.ind[mode][k], col}] += x.values<T>()[k];
  }
  out.rows = x.dims[mode];
  out.cols = cols;
  out.row_ptr.assign(out.rows + 1, 0);
  out.col_ind.resize(entries.size());
  out.values.set_dtype(x.dtype());
  out.values.resize(entries.size());
  size_t e = 0;
  for (const auto& [rc, v] : entries) {
    out.row_ptr[rc.first + 1]++;
    out.col_ind[e] = rc.second;
    out.values.get<T>()[e] = v;
    ++e;
  }
  for (spt_nnz r = 0; r < out.rows; ++r) out.row_ptr[r + 1] += out.row_ptr[r];
}

}  // namespace

void unfold_csr(const Exec&, const spt_coo_s& x, uint32_t mode, spt_csr_s& out) {
  with_dtype(x.dtype(), [&](auto tag) { unfold_impl<typename decltype(tag)::type>(x, mode, out); });
}

}  // namespace spt::kernels::reference
