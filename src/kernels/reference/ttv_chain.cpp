// TTV chain and full contraction, reference: one pass over the nonzeros in
// order, every term x * prod_m v_m(i_m) formed and summed in double.
#include <vector>

#include "kernels/kernels.hpp"

namespace spt::kernels::reference {

namespace {

template <typename T>
double term(const spt_coo_s& x, uint32_t keep, const T* const* v, spt_nnz e) {
  double p = static_cast<double>(x.values<T>()[e]);
  for (uint32_t m = 0; m < x.order(); ++m)
    if (m != keep) p *= static_cast<double>(v[m][x.ind[m][e]]);
  return p;
}

template <typename T>
void ttv_chain_impl(const spt_coo_s& x, uint32_t keep, const T* const* v, T* out) {
  std::vector<double> acc(x.dims[keep], 0.0);
  for (spt_nnz e = 0; e < x.nnz; ++e) acc[x.ind[keep][e]] += term(x, keep, v, e);
  for (spt_index i = 0; i < x.dims[keep]; ++i) out[i] = static_cast<T>(acc[i]);
}

template <typename T>
double ttv_all_impl(const spt_coo_s& x, const T* const* v) {
  double s = 0;
  for (spt_nnz e = 0; e < x.nnz; ++e) s += term(x, x.order(), v, e);
  return s;
}

}  // namespace

#define SPT_INSTANTIATE(T)                                                                                     \
  void ttv_chain(const Exec&, const spt_coo_s& x, uint32_t keep_mode, const T* const* vectors, T* out) {       \
    ttv_chain_impl<T>(x, keep_mode, vectors, out);                                                             \
  }                                                                                                            \
  double ttv_all(const Exec&, const spt_coo_s& x, const T* const* vectors) { return ttv_all_impl<T>(x, vectors); }

SPT_INSTANTIATE(float)
SPT_INSTANTIATE(double)
#undef SPT_INSTANTIATE

}  // namespace spt::kernels::reference
