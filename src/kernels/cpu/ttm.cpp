// OpenMP SpTTM into a semi-sparse (sCOO) tensor, as in the dissertation's
// ch. 7: sort (a copy) with `mode` last, find the fiber pointers (starts of
// runs of equal other-mode coordinates), allocate exactly one dense fiber of
// length R per run, and compute fibers in parallel -- no unfolding.
// A tensor already sorted with `mode` last (any order of the other modes,
// as the TTM chain sorts it) is used as is; the fibers then come out in that
// order (recorded in out.fiber_order).
#include <algorithm>
#include <memory>

#include "kernels/kernels.hpp"
#include "kernels/ttm_fibers.hpp"
#include "core/sort.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

template <typename T>
void ttm_impl(const Exec& exec, const spt_coo_s& x, uint32_t mode, ConstMatRef<T> u, spt_scoo_s& out) {
  const spt_nnz rank = u.cols;
  const TtmFibers grouped(exec, x, mode);
  ttm_result_shell(exec, grouped, x, mode, rank, out);
  const spt_coo_s& s = grouped.sorted();
  const buffer<spt_nnz>& fiber_ptr = grouped.starts();
  const spt_nnz fibers = grouped.count();
  const int threads = std::max(1, exec.threads);
  const T* val = s.values<T>();
  const spt_index* ui = s.ind[mode];
  T* y = out.values.get<T>().data();
#pragma omp parallel for num_threads(threads) schedule(dynamic, 64)
  for (spt_nnz f = 0; f < fibers; ++f) {
    T* __restrict fiber = y + f * rank;
    for (spt_nnz r = 0; r < rank; ++r) fiber[r] = T(0);
    for (spt_nnz k = fiber_ptr[f]; k < fiber_ptr[f + 1]; ++k) {
      const T v = val[k];
      const T* __restrict urow = u.row(ui[k]);
#pragma omp simd
      for (spt_nnz r = 0; r < rank; ++r) fiber[r] += v * urow[r];
    }
  }
}

}  // namespace

void ttm(const Exec& exec, const spt_coo_s& x, uint32_t mode, ConstMatRef<float> u, spt_scoo_s& out) {
  ttm_impl(exec, x, mode, u, out);
}
void ttm(const Exec& exec, const spt_coo_s& x, uint32_t mode, ConstMatRef<double> u, spt_scoo_s& out) {
  ttm_impl(exec, x, mode, u, out);
}

}  // namespace spt::kernels::SPT_CPU_VARIANT
