// Reference dense Kronecker product: element (i*K + k, j*L + l) of the result
// is a(i,j) * b(k,l).
#include "kernels/kernels.hpp"

namespace spt::kernels::reference {

namespace {

template <typename T>
void kronecker_impl(ConstMatRef<T> a, ConstMatRef<T> b, MatRef<T> out) {
  for (spt_nnz i = 0; i < a.rows; ++i)
    for (spt_nnz j = 0; j < a.cols; ++j)
      for (spt_nnz k = 0; k < b.rows; ++k)
        for (spt_nnz l = 0; l < b.cols; ++l) out(i * b.rows + k, j * b.cols + l) = a(i, j) * b(k, l);
}

}  // namespace

void kronecker(const Exec&, ConstMatRef<float> a, ConstMatRef<float> b, MatRef<float> out) { kronecker_impl(a, b, out); }
void kronecker(const Exec&, ConstMatRef<double> a, ConstMatRef<double> b, MatRef<double> out) {
  kronecker_impl(a, b, out);
}

}  // namespace spt::kernels::reference
