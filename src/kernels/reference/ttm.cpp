// Reference sparse tensor-times-matrix into a semi-sparse tensor: one dense
// fiber of length R per distinct coordinate of the other modes, accumulated
// in an ordered map (fibers come out sorted by the other modes).
#include <map>
#include <vector>

#include "kernels/kernels.hpp"

namespace spt::kernels::reference {

namespace {

template <typename T>
void ttm_impl(const spt_coo_s& x, uint32_t mode, ConstMatRef<T> u, spt_scoo_s& out) {
  const uint32_t order = x.order();
  const spt_nnz rank = u.cols;
  std::map<std::vector<spt_index>, std::vector<T>> fibers;
  std::vector<spt_index> key(order);
  const T* val = x.values<T>();
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    for (uint32_t m = 0; m < order; ++m) key[m] = m == mode ? 0 : x.ind[m][k];
    std::vector<T>& fiber = fibers[key];
    fiber.resize(rank, T(0));
    for (spt_nnz r = 0; r < rank; ++r) fiber[r] += val[k] * u(x.ind[mode][k], r);
  }
  out.dims = x.dims;
  out.dims[mode] = static_cast<spt_index>(rank);
  out.set_single_dense_mode(mode);
  out.fiber_order.clear();
  for (uint32_t m = 0; m < order; ++m)
    if (m != mode) out.fiber_order.push_back(m);
  out.nfibers = fibers.size();
  out.ind.assign(order, {});
  for (uint32_t m = 0; m < order; ++m)
    if (m != mode) out.ind[m].resize(out.nfibers);
  out.values.set_dtype(x.dtype());
  out.values.resize(out.nfibers * rank);
  T* dst = out.values.get<T>().data();
  spt_nnz f = 0;
  for (const auto& [coord, fiber] : fibers) {
    for (uint32_t m = 0; m < order; ++m)
      if (m != mode) out.ind[m][f] = coord[m];
    for (spt_nnz r = 0; r < rank; ++r) dst[f * rank + r] = fiber[r];
    ++f;
  }
}

}  // namespace

void ttm(const Exec&, const spt_coo_s& x, uint32_t mode, ConstMatRef<float> u, spt_scoo_s& out) {
  ttm_impl(x, mode, u, out);
}
void ttm(const Exec&, const spt_coo_s& x, uint32_t mode, ConstMatRef<double> u, spt_scoo_s& out) {
  ttm_impl(x, mode, u, out);
}

}  // namespace spt::kernels::reference
