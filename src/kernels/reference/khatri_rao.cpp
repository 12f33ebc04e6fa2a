// Reference dense Khatri-Rao product: row i*J + j of the result is
// a(i,:) .* b(j,:).
#include "kernels/kernels.hpp"

namespace spt::kernels::reference {

namespace {

template <typename T>
void khatri_rao_impl(ConstMatRef<T> a, ConstMatRef<T> b, MatRef<T> out) {
  for (spt_nnz i = 0; i < a.rows; ++i)
    for (spt_nnz j = 0; j < b.rows; ++j)
      for (spt_nnz r = 0; r < a.cols; ++r) out(i * b.rows + j, r) = a(i, r) * b(j, r);
}

}  // namespace

void khatri_rao(const Exec&, ConstMatRef<float> a, ConstMatRef<float> b, MatRef<float> out) {
  khatri_rao_impl(a, b, out);
}
void khatri_rao(const Exec&, ConstMatRef<double> a, ConstMatRef<double> b, MatRef<double> out) {
  khatri_rao_impl(a, b, out);
}

}  // namespace spt::kernels::reference
