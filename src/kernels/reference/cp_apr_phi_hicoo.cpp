// CP-APR's Phi kernel on HiCOO, reference: every nonzero's coordinates are
// rebuilt as block index * B + element index and it is accumulated exactly
// as in the COO reference (Pi per nonzero, everything in double), into a
// dims[mode] x R double accumulator. Ignores the strategy.
#include <algorithm>
#include <vector>

#include "kernels/kernels.hpp"

namespace spt::kernels::reference {

namespace {

template <typename T>
void phi_hicoo(const spt_hicoo_s& x, uint32_t mode, const ConstMatRef<T>* factors, double eps, MatRef<T> out) {
  const uint32_t order = x.order();
  const spt_nnz rank = out.cols;
  std::vector<double> acc(checked_mul(out.rows, rank, "CP-APR Phi accumulator"), 0.0);
  std::vector<double> pi(rank);
  std::vector<spt_index> coord(order);
  const T* val = x.values<T>();
  for (spt_nnz b = 0; b < x.num_blocks(); ++b) {
    for (spt_nnz k = x.bptr[b]; k < x.bptr[b + 1]; ++k) {
      for (uint32_t m = 0; m < order; ++m) coord[m] = x.binds[m][b] * x.block_size() + x.einds[m][k];
      std::fill(pi.begin(), pi.end(), 1.0);
      for (uint32_t m = 0; m < order; ++m)
        if (m != mode)
          for (spt_nnz r = 0; r < rank; ++r) pi[r] *= static_cast<double>(factors[m](coord[m], r));
      double v = 0;
      for (spt_nnz r = 0; r < rank; ++r) v += static_cast<double>(factors[mode](coord[mode], r)) * pi[r];
      const double w = static_cast<double>(val[k]) / std::max(v, eps);
      double* row = acc.data() + static_cast<spt_nnz>(coord[mode]) * rank;
      for (spt_nnz r = 0; r < rank; ++r) row[r] += w * pi[r];
    }
  }
  for (spt_nnz i = 0; i < out.rows; ++i)
    for (spt_nnz r = 0; r < rank; ++r) out(i, r) = static_cast<T>(acc[i * rank + r]);
}

}  // namespace

#define SPT_INSTANTIATE(T)                                                                                      \
  void cp_apr_phi_hicoo(const Exec&, const spt_hicoo_s& x, uint32_t mode, const ConstMatRef<T>* factors,      \
                        double eps, MatRef<T> phi) {                                                            \
    phi_hicoo<T>(x, mode, factors, eps, phi);                                                                   \
  }

SPT_INSTANTIATE(float)
SPT_INSTANTIATE(double)
#undef SPT_INSTANTIATE

}  // namespace spt::kernels::reference
