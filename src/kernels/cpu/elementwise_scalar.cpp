// OpenMP elementwise op of a sparse tensor and a scalar: the stored entries
// change, the pattern and order stay.
#include <algorithm>

#include "kernels/kernels.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

template <typename T, typename Op>
void map_values(int threads, const T* v, T* o, spt_nnz n, Op op) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (spt_nnz k = 0; k < n; ++k) o[k] = op(v[k]);
}

template <typename T>
void scalar_impl(const Exec& exec, spt_elementwise_op op, const spt_coo_s& x, T s, spt_coo_s& out) {
  require(op == SPT_OP_ADD || op == SPT_OP_SUB || op == SPT_OP_MUL || op == SPT_OP_DIV,
          "unknown elementwise op ", static_cast<int>(op));
  require(!(op == SPT_OP_DIV && s == T(0)), "division by the scalar 0");
  const int threads = std::max(1, exec.threads);
  const spt_nnz n = x.nnz;
  out.init_owned(x.dtype(), x.dims, n);
  for (uint32_t m = 0; m < x.order(); ++m) {
    const spt_index* src = x.ind[m];
    spt_index* dst = out.mutable_ind(m);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz k = 0; k < n; ++k) dst[k] = src[k];
  }
  const T* v = x.values<T>();
  T* o = out.mutable_values<T>();
  switch (op) {
    case SPT_OP_ADD: map_values(threads, v, o, n, [s](T a) { return a + s; }); break;
    case SPT_OP_SUB: map_values(threads, v, o, n, [s](T a) { return a - s; }); break;
    case SPT_OP_MUL: map_values(threads, v, o, n, [s](T a) { return a * s; }); break;
    default: map_values(threads, v, o, n, [s](T a) { return a / s; }); break;
  }
  out.sorted_by = x.sorted_by;
}

}  // namespace

void elementwise_scalar(const Exec& exec, spt_elementwise_op op, const spt_coo_s& x, float s, spt_coo_s& out) {
  scalar_impl(exec, op, x, s, out);
}
void elementwise_scalar(const Exec& exec, spt_elementwise_op op, const spt_coo_s& x, double s, spt_coo_s& out) {
  scalar_impl(exec, op, x, s, out);
}

}  // namespace spt::kernels::SPT_CPU_VARIANT
