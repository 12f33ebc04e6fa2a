// Reference elementwise op of a sparse tensor and a scalar on the stored
// entries (pattern and order kept).
#include "kernels/kernels.hpp"

namespace spt::kernels::reference {

namespace {

template <typename T>
void scalar_impl(spt_elementwise_op op, const spt_coo_s& x, T s, spt_coo_s& out) {
  out.init_owned(x.dtype(), x.dims, x.nnz);
  for (uint32_t m = 0; m < x.order(); ++m)
    for (spt_nnz k = 0; k < x.nnz; ++k) out.mutable_ind(m)[k] = x.ind[m][k];
  const T* v = x.values<T>();
  T* o = out.mutable_values<T>();
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    switch (op) {
      case SPT_OP_ADD: o[k] = v[k] + s; break;
      case SPT_OP_SUB: o[k] = v[k] - s; break;
      case SPT_OP_MUL: o[k] = v[k] * s; break;
      default: o[k] = v[k] / s; break;
    }
  }
  out.sorted_by = x.sorted_by;
}

}  // namespace

void elementwise_scalar(const Exec&, spt_elementwise_op op, const spt_coo_s& x, float s, spt_coo_s& out) {
  scalar_impl(op, x, s, out);
}
void elementwise_scalar(const Exec&, spt_elementwise_op op, const spt_coo_s& x, double s, spt_coo_s& out) {
  scalar_impl(op, x, s, out);
}

}  // namespace spt::kernels::reference
