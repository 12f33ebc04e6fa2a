// OpenMP mode-n unfolding to CSR. Sorting by (mode, highest other mode, ...,
// lowest other mode) puts nonzeros in (row, column) order, because the column
// is the linear index with the lowest other mode fastest. Runs of equal
// coordinates become one summed entry; row pointers come from binary search.
#include <algorithm>

#include "kernels/kernels.hpp"
#include "core/sort.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

template <typename T>
void unfold_impl(const Exec& exec, const spt_coo_s& x, uint32_t mode, spt_csr_s& out) {
  const uint32_t order = x.order();
  uint64_t cols = 1;
  std::vector<uint64_t> stride(order, 0);
  for (uint32_t m = 0; m < order; ++m) {
    if (m == mode) continue;
    stride[m] = cols;
    cols = checked_mul(cols, x.dims[m], "the column count of the unfolding");
  }
  std::vector<uint32_t> mode_order{mode};
  for (uint32_t m = order; m-- > 0;)
    if (m != mode) mode_order.push_back(m);
  sorting::SortedView view(exec, x, mode_order);
  const spt_coo_s& s = view.get();
  const buffer<spt_nnz> starts = sorting::group_starts(exec, s, mode_order);
  const spt_nnz entries = starts.size() - 1;
  const int threads = std::max(1, exec.threads);

  out.rows = x.dims[mode];
  out.cols = cols;
  out.row_ptr.resize(out.rows + 1);
  out.col_ind.resize(entries);
  out.values.set_dtype(x.dtype());
  out.values.resize(entries);
  buffer<spt_index> entry_row(entries);
  const T* val = s.values<T>();
  T* ov = out.values.get<T>().data();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (spt_nnz e = 0; e < entries; ++e) {
    const spt_nnz k0 = starts[e];
    uint64_t col = 0;
    for (uint32_t m = 0; m < order; ++m)
      if (m != mode) col += stride[m] * s.ind[m][k0];
    T sum = val[k0];
    for (spt_nnz k = k0 + 1; k < starts[e + 1]; ++k) sum += val[k];
    out.col_ind[e] = col;
    ov[e] = sum;
    entry_row[e] = s.ind[mode][k0];
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (spt_nnz r = 0; r <= out.rows; ++r)
    out.row_ptr[r] = std::lower_bound(entry_row.begin(), entry_row.end(), r,
                                      [](spt_index a, spt_nnz b) { return a < b; }) -
                     entry_row.begin();
}

}  // namespace

void unfold_csr(const Exec& exec, const spt_coo_s& x, uint32_t mode, spt_csr_s& out) {
  with_dtype(x.dtype(), [&](auto tag) { unfold_impl<typename decltype(tag)::type>(exec, x, mode, out); });
}

}  // namespace spt::kernels::SPT_CPU_VARIANT
