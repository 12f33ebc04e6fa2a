// CP-APR's Phi kernel, reference: row by row, Pi formed per nonzero,
// everything in double.
#include <algorithm>
#include <vector>

#include "kernels/kernels.hpp"

namespace spt::kernels::reference {

namespace {

template <typename T>
void phi(const ModeGroups& groups, uint32_t mode, const ConstMatRef<T>* factors, double eps, MatRef<T> out) {
  const uint32_t order = static_cast<uint32_t>(groups.ind.size());
  const spt_nnz rank = factors[mode].cols;
  std::vector<double> pi(rank), acc(rank);
  for (spt_nnz i = 0; i + 1 < static_cast<spt_nnz>(groups.row_ptr.size()); ++i) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (spt_nnz k = groups.row_ptr[i]; k < groups.row_ptr[i + 1]; ++k) {
      std::fill(pi.begin(), pi.end(), 1.0);
      for (uint32_t m = 0; m < order; ++m)
        if (m != mode)
          for (spt_nnz r = 0; r < rank; ++r) pi[r] *= static_cast<double>(factors[m](groups.ind[m][k], r));
      double v = 0;
      for (spt_nnz r = 0; r < rank; ++r) v += static_cast<double>(factors[mode](i, r)) * pi[r];
      const double w = groups.val[k] / std::max(v, eps);
      for (spt_nnz r = 0; r < rank; ++r) acc[r] += w * pi[r];
    }
    for (spt_nnz r = 0; r < rank; ++r) out(i, r) = static_cast<T>(acc[r]);
  }
}

}  // namespace

void cp_apr_phi(const Exec&, const ModeGroups& groups, uint32_t mode, const ConstMatRef<float>* factors, double eps,
                MatRef<float> out) {
  phi<float>(groups, mode, factors, eps, out);
}
void cp_apr_phi(const Exec&, const ModeGroups& groups, uint32_t mode, const ConstMatRef<double>* factors, double eps,
                MatRef<double> out) {
  phi<double>(groups, mode, factors, eps, out);
}

}  // namespace spt::kernels::reference
