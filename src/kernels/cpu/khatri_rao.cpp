// OpenMP dense Khatri-Rao product: row i*J + j = a(i,:) .* b(j,:).
#include <algorithm>

#include "kernels/kernels.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

template <typename T>
void khatri_rao_impl(const Exec& exec, ConstMatRef<T> a, ConstMatRef<T> b, MatRef<T> out) {
  const spt_nnz rows = a.rows * b.rows, rank = a.cols;
#pragma omp parallel for num_threads(std::max(1, exec.threads)) schedule(static)
  for (spt_nnz row = 0; row < rows; ++row) {
    const T* __restrict ar = a.row(row / b.rows);
    const T* __restrict br = b.row(row % b.rows);
    T* __restrict o = out.row(row);
#pragma omp simd
    for (spt_nnz r = 0; r < rank; ++r) o[r] = ar[r] * br[r];
  }
}

}  // namespace

void khatri_rao(const Exec& exec, ConstMatRef<float> a, ConstMatRef<float> b, MatRef<float> out) {
  khatri_rao_impl(exec, a, b, out);
}
void khatri_rao(const Exec& exec, ConstMatRef<double> a, ConstMatRef<double> b, MatRef<double> out) {
  khatri_rao_impl(exec, a, b, out);
}

}  // namespace spt::kernels::SPT_CPU_VARIANT
