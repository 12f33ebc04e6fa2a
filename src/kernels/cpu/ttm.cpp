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
#include "kernels/sort.hpp"

namespace spt::kernels::cpu {

namespace {

template <typename T>
void ttm_impl(const Exec& exec, const spt_coo_s& x, uint32_t mode, ConstMatRef<T> u, spt_scoo_s& out) {
  const uint32_t order = x.order();
  const spt_nnz rank = u.cols;
  // Pre-sorted with `mode` last: group in place; else sort a copy (others
  // ascending, mode last).
  const bool presorted = x.sorted_by.size() == order && x.sorted_by.back() == mode;
  std::unique_ptr<sorting::ModeFibers> grouped;
  std::vector<uint32_t> others;
  buffer<spt_nnz> own_ptr;
  if (presorted) {
    others.assign(x.sorted_by.begin(), x.sorted_by.end() - 1);
    own_ptr = sorting::group_starts(exec, x, others);
  } else {
    grouped = std::make_unique<sorting::ModeFibers>(exec, x, mode);
    others = grouped->other_modes();
  }
  const spt_coo_s& s = presorted ? x : grouped->sorted();
  const buffer<spt_nnz>& fiber_ptr = presorted ? own_ptr : grouped->starts();
  const spt_nnz fibers = fiber_ptr.size() - 1;

  out.dims = x.dims;
  out.dims[mode] = static_cast<spt_index>(rank);
  out.set_single_dense_mode(mode);
  out.fiber_order = others;
  out.nfibers = fibers;
  out.ind.assign(order, {});
  for (uint32_t m : others) out.ind[m].resize(fibers);
  out.values.set_dtype(x.dtype());
  out.values.resize(checked_mul(fibers, rank, "semi-sparse value count"));

  const int threads = std::max(1, exec.threads);
  for (uint32_t m : others) {
    const spt_index* src = s.ind[m];
    spt_index* dst = out.ind[m].data();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz f = 0; f < fibers; ++f) dst[f] = src[fiber_ptr[f]];
  }
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

}  // namespace spt::kernels::cpu
