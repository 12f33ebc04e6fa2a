// Reference (sequential, obviously correct) MTTKRP, inner product with a
// Kruskal tensor and squared norm: the oracles the optimised kernels are
// tested against.
#include <algorithm>
#include <vector>

#include "kernels/kernels.hpp"

namespace spt::kernels::reference {

namespace {

template <typename T>
void mttkrp_impl(const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) {
  const spt_nnz rank = out.cols;
  for (spt_nnz i = 0; i < out.rows; ++i)
    for (spt_nnz r = 0; r < rank; ++r) out(i, r) = T(0);
  std::vector<T> row(rank);
  const T* val = x.values<T>();
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    for (spt_nnz r = 0; r < rank; ++r) row[r] = val[k];
    for (uint32_t m = 0; m < x.order(); ++m) {
      if (m == mode) continue;
      const T* f = factors[m].row(x.ind[m][k]);
      for (spt_nnz r = 0; r < rank; ++r) row[r] *= f[r];
    }
    T* o = out.row(x.ind[mode][k]);
    for (spt_nnz r = 0; r < rank; ++r) o[r] += row[r];
  }
}

template <typename T>
double inner_impl(const spt_coo_s& x, const T* lambda, const ConstMatRef<T>* factors, spt_index rank) {
  const T* val = x.values<T>();
  double total = 0.0;
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    double s = 0.0;
    for (spt_index r = 0; r < rank; ++r) {
      double p = lambda[r];
      for (uint32_t m = 0; m < x.order(); ++m) p *= factors[m](x.ind[m][k], r);
      s += p;
    }
    total += static_cast<double>(val[k]) * s;
  }
  return total;
}

// Sum each distinct coordinate's entries (positions sorted by coordinate),
// then square the sums.
template <typename T>
SummedStats summed_stats_impl(const spt_coo_s& x) {
  const T* val = x.values<T>();
  auto coordinate = [&](spt_nnz k) {
    std::vector<spt_index> c(x.order());
    for (uint32_t m = 0; m < x.order(); ++m) c[m] = x.ind[m][k];
    return c;
  };
  std::vector<spt_nnz> pos(x.nnz);
  for (spt_nnz k = 0; k < x.nnz; ++k) pos[k] = k;
  std::stable_sort(pos.begin(), pos.end(), [&](spt_nnz a, spt_nnz b) { return coordinate(a) < coordinate(b); });
  SummedStats stats;
  for (spt_nnz i = 0; i < x.nnz;) {
    double sum = 0.0;
    spt_nnz j = i;
    for (; j < x.nnz && coordinate(pos[j]) == coordinate(pos[i]); ++j) sum += val[pos[j]];
    stats.norm_squared += sum * sum;
    ++stats.distinct;
    i = j;
  }
  return stats;
}

}  // namespace

#define SPT_INSTANTIATE(T)                                                                                      \
  void mttkrp(const Exec&, const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) { \
    mttkrp_impl<T>(x, factors, mode, out);                                                                      \
  }                                                                                                             \
  double inner_ktensor(const Exec&, const spt_coo_s& x, const T* lambda, const ConstMatRef<T>* factors,        \
                       spt_index rank) {                                                                        \
    return inner_impl<T>(x, lambda, factors, rank);                                                             \
  }

SPT_INSTANTIATE(float)
SPT_INSTANTIATE(double)
#undef SPT_INSTANTIATE

SummedStats summed_stats(const Exec&, const spt_coo_s& x) {
  return with_dtype(x.dtype(), [&](auto tag) { return summed_stats_impl<typename decltype(tag)::type>(x); });
}

}  // namespace spt::kernels::reference
