// OpenMP tensor-times-vector: sort (a copy) with `mode` last so each
// mode-`mode` fiber is one contiguous run, then reduce every fiber in
// parallel. The result lists fibers in sorted order of the other modes.
#include <algorithm>

#include "kernels/kernels.hpp"
#include "core/sort.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

template <typename T>
void ttv_impl(const Exec& exec, const spt_coo_s& x, uint32_t mode, const T* v, spt_coo_s& out) {
  const uint32_t order = x.order();
  const sorting::ModeFibers grouped(exec, x, mode);
  const std::vector<uint32_t>& others = grouped.other_modes();
  const spt_coo_s& s = grouped.sorted();
  const buffer<spt_nnz>& starts = grouped.starts();
  const spt_nnz fibers = grouped.count();

  std::vector<spt_index> dims;
  for (uint32_t m : others) dims.push_back(x.dims[m]);
  out.init_owned(x.dtype(), dims, fibers);
  const int threads = std::max(1, exec.threads);
  for (uint32_t j = 0; j < others.size(); ++j) {
    const spt_index* src = s.ind[others[j]];
    spt_index* dst = out.mutable_ind(j);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz f = 0; f < fibers; ++f) dst[f] = src[starts[f]];
  }
  const T* val = s.values<T>();
  const spt_index* vi = s.ind[mode];
  T* dst = out.mutable_values<T>();
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256)
  for (spt_nnz f = 0; f < fibers; ++f) {
    T sum = T(0);
    for (spt_nnz k = starts[f]; k < starts[f + 1]; ++k) sum += val[k] * v[vi[k]];
    dst[f] = sum;
  }
  out.sorted_by = sorting::natural_order(order - 1);
}

}  // namespace

void ttv(const Exec& exec, const spt_coo_s& x, uint32_t mode, const float* v, spt_coo_s& out) {
  ttv_impl(exec, x, mode, v, out);
}
void ttv(const Exec& exec, const spt_coo_s& x, uint32_t mode, const double* v, spt_coo_s& out) {
  ttv_impl(exec, x, mode, v, out);
}

}  // namespace spt::kernels::SPT_CPU_VARIANT
