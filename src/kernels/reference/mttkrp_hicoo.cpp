// Reference (sequential, obviously correct) MTTKRP on HiCOO: every nonzero's
// coordinates are rebuilt as block index * B + element index and it is
// accumulated exactly as in the COO reference. Ignores the strategy.
#include <vector>

#include "kernels/kernels.hpp"

namespace spt::kernels::reference {

namespace {

template <typename T>
void mttkrp_hicoo_impl(const spt_hicoo_s& x, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) {
  const spt_nnz rank = out.cols;
  const uint32_t order = x.order();
  for (spt_nnz i = 0; i < out.rows; ++i)
    for (spt_nnz r = 0; r < rank; ++r) out(i, r) = T(0);
  std::vector<T> row(rank);
  std::vector<spt_index> coord(order);
  const T* val = x.values<T>();
  for (spt_nnz b = 0; b < x.num_blocks(); ++b) {
    for (spt_nnz k = x.bptr[b]; k < x.bptr[b + 1]; ++k) {
      for (uint32_t m = 0; m < order; ++m) coord[m] = x.binds[m][b] * x.block_size() + x.einds[m][k];
      for (spt_nnz r = 0; r < rank; ++r) row[r] = val[k];
      for (uint32_t m = 0; m < order; ++m) {
        if (m == mode) continue;
        const T* f = factors[m].row(coord[m]);
        for (spt_nnz r = 0; r < rank; ++r) row[r] *= f[r];
      }
      T* o = out.row(coord[mode]);
      for (spt_nnz r = 0; r < rank; ++r) o[r] += row[r];
    }
  }
}

}  // namespace

#define SPT_INSTANTIATE(T)                                                                                    \
  void mttkrp_hicoo(const Exec&, const spt_hicoo_s& x, const ConstMatRef<T>* factors, uint32_t mode,        \
                    MatRef<T> out) {                                                                          \
    mttkrp_hicoo_impl<T>(x, factors, mode, out);                                                              \
  }

SPT_INSTANTIATE(float)
SPT_INSTANTIATE(double)
#undef SPT_INSTANTIATE

}  // namespace spt::kernels::reference
