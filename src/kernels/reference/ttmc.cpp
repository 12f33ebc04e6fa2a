// Reference one-shot TTM chain: for every nonzero, build the full Kronecker
// row of the other modes' factor rows (lowest other mode fastest) and add
// value * row to output row i_mode. Sequential and obviously right.
#include <algorithm>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/ttmc.hpp"

namespace spt::kernels::reference {

namespace {

template <typename T>
void ttmc_impl(const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) {
  check_ttmc_args(x, factors, mode, out);
  const std::vector<uint32_t> others = ttmc_other_modes(x.order(), mode);
  const uint64_t p = out.cols;
  for (spt_nnz i = 0; i < out.rows; ++i) std::fill(out.row(i), out.row(i) + p, T(0));
  std::vector<T> row(p), next(p);
  const T* val = x.values<T>();
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    // kron(U_{o_last}(i,:), ..., U_{o_0}(i,:)): start with the highest mode,
    // append lower modes as the faster index.
    uint64_t len = 1;
    row[0] = T(1);
    for (size_t j = others.size(); j-- > 0;) {
      const ConstMatRef<T>& u = factors[others[j]];
      const T* urow = u.row(x.ind[others[j]][k]);
      for (uint64_t a = 0; a < len; ++a)
        for (spt_nnz b = 0; b < u.cols; ++b) next[a * u.cols + b] = row[a] * urow[b];
      len *= u.cols;
      std::copy(next.begin(), next.begin() + len, row.begin());
    }
    T* dst = out.row(x.ind[mode][k]);
    for (uint64_t c = 0; c < p; ++c) dst[c] += val[k] * row[c];
  }
}

}  // namespace

void ttmc(const Exec&, const spt_coo_s& x, const ConstMatRef<float>* factors, uint32_t mode, MatRef<float> out) {
  ttmc_impl(x, factors, mode, out);
}
void ttmc(const Exec&, const spt_coo_s& x, const ConstMatRef<double>* factors, uint32_t mode, MatRef<double> out) {
  ttmc_impl(x, factors, mode, out);
}

}  // namespace spt::kernels::reference
