// OpenMP dense Kronecker product: element (i*K + k, j*L + l) = a(i,j) * b(k,l).
#include <algorithm>

#include "kernels/kernels.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

template <typename T>
void kronecker_impl(const Exec& exec, ConstMatRef<T> a, ConstMatRef<T> b, MatRef<T> out) {
  const spt_nnz rows = a.rows * b.rows;
#pragma omp parallel for num_threads(std::max(1, exec.threads)) schedule(static)
  for (spt_nnz row = 0; row < rows; ++row) {
    const spt_nnz i = row / b.rows, k = row % b.rows;
    const T* ar = a.row(i);
    const T* __restrict br = b.row(k);
    T* o = out.row(row);
    for (spt_nnz j = 0; j < a.cols; ++j) {
      const T aij = ar[j];
      T* __restrict oj = o + j * b.cols;
#pragma omp simd
      for (spt_nnz l = 0; l < b.cols; ++l) oj[l] = aij * br[l];
    }
  }
}

}  // namespace

void kronecker(const Exec& exec, ConstMatRef<float> a, ConstMatRef<float> b, MatRef<float> out) {
  kronecker_impl(exec, a, b, out);
}
void kronecker(const Exec& exec, ConstMatRef<double> a, ConstMatRef<double> b, MatRef<double> out) {
  kronecker_impl(exec, a, b, out);
}

}  // namespace spt::kernels::SPT_CPU_VARIANT
