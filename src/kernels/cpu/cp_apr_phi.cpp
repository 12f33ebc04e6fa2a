// CP-APR's Phi kernel, OpenMP: each output row is owned by one thread
// (ModeGroups), so it is race-free and identical for any thread count.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

// Phi rows [0, rows) for a rank fixed at compile time (kRank > 0: the rank
// loops unroll and pi/acc stay in registers) or given at run time (kRank 0).
template <typename T, int kRank>
void phi_rows(const ModeGroups& groups, uint32_t mode, const ConstMatRef<T>* factors, double eps,
              MatRef<T> phi, int threads) {
  const uint32_t order = static_cast<uint32_t>(groups.ind.size());
  const ConstMatRef<T> a = factors[mode];
  const spt_nnz rank = kRank > 0 ? static_cast<spt_nnz>(kRank) : a.cols;
  const long long rows = static_cast<long long>(groups.row_ptr.size()) - 1;
  // The other modes, in increasing order (pyttb's calculate_pi order).
  std::vector<uint32_t> others;
  for (uint32_t m = 0; m < order; ++m)
    if (m != mode) others.push_back(m);
  // A run-time rank (kRank 0) keeps acc, pid, aid and pi in per-thread rows
  // allocated here (cache-line strides): an allocation failure inside the
  // parallel region could not be reported (kernels.hpp).
  const int team = std::max(threads, 1);
  const size_t stride = kRank > 0 ? 0 : (static_cast<size_t>(rank) + 7) / 8 * 8;
  buffer<double> double_rows(static_cast<size_t>(team) * 3 * stride);
  buffer<T> pi_rows(static_cast<size_t>(team) * stride);
#pragma omp parallel num_threads(team)
  {
    const size_t t = static_cast<size_t>(omp_get_thread_num());
    double acc_fixed[kRank > 0 ? kRank : 1];
    T pi_fixed[kRank > 0 ? kRank : 1];
    double pid_fixed[kRank > 0 ? kRank : 1], aid_fixed[kRank > 0 ? kRank : 1];
    double* acc = kRank > 0 ? acc_fixed : double_rows.data() + 3 * t * stride;
    T* pi = kRank > 0 ? pi_fixed : pi_rows.data() + t * stride;
    // Double copies of the A row (once per row) and of each Pi row (once per
    // nonzero), so float inputs are widened once, not per use.
    double* pid = kRank > 0 ? pid_fixed : double_rows.data() + (3 * t + 1) * stride;
    double* aid = kRank > 0 ? aid_fixed : double_rows.data() + (3 * t + 2) * stride;
#pragma omp for schedule(dynamic, 16)
    for (long long i = 0; i < rows; ++i) {
      for (spt_nnz r = 0; r < rank; ++r) acc[r] = 0.0;
      const T* ai = a.row(static_cast<spt_nnz>(i));
      for (spt_nnz r = 0; r < rank; ++r) aid[r] = static_cast<double>(ai[r]);
      for (spt_nnz k = groups.row_ptr[i]; k < groups.row_ptr[i + 1]; ++k) {
        const T* f0 = factors[others[0]].row(groups.ind[others[0]][k]);
        for (spt_nnz r = 0; r < rank; ++r) pi[r] = f0[r];
        for (size_t o = 1; o < others.size(); ++o) {
          const T* f = factors[others[o]].row(groups.ind[others[o]][k]);
          for (spt_nnz r = 0; r < rank; ++r) pi[r] *= f[r];
        }
        // Four interleaved partial sums: a single chain of dependent adds
        // (no reassociation without -ffast-math) would bound this loop by
        // the add latency.
        for (spt_nnz q = 0; q < rank; ++q) pid[q] = static_cast<double>(pi[q]);
        double s[4] = {0, 0, 0, 0};
        spt_nnz r = 0;
        for (; r + 4 <= rank; r += 4)
          for (int j = 0; j < 4; ++j) s[j] += aid[r + j] * pid[r + j];
        for (; r < rank; ++r) s[0] += aid[r] * pid[r];
        const double v = (s[0] + s[1]) + (s[2] + s[3]);
        const double w = groups.val[k] / std::max(v, eps);
        for (spt_nnz q = 0; q < rank; ++q) acc[q] += w * pid[q];
      }
      T* out = phi.row(static_cast<spt_nnz>(i));
      for (spt_nnz r = 0; r < rank; ++r) out[r] = static_cast<T>(acc[r]);
    }
  }
}

}  // namespace

#define SPT_CPU_CP_APR_PHI(T)                                                                                   \
  void cp_apr_phi(const Exec& exec, const ModeGroups& groups, uint32_t mode, const ConstMatRef<T>* factors,     \
                  double eps, MatRef<T> phi) {                                                                  \
    switch (factors[mode].cols) {                                                                               \
      case 8: return phi_rows<T, 8>(groups, mode, factors, eps, phi, exec.threads);                             \
      case 16: return phi_rows<T, 16>(groups, mode, factors, eps, phi, exec.threads);                           \
      case 32: return phi_rows<T, 32>(groups, mode, factors, eps, phi, exec.threads);                           \
      default: return phi_rows<T, 0>(groups, mode, factors, eps, phi, exec.threads);                            \
    }                                                                                                           \
  }
SPT_CPU_CP_APR_PHI(float)
SPT_CPU_CP_APR_PHI(double)
#undef SPT_CPU_CP_APR_PHI


}  // namespace spt::kernels::SPT_CPU_VARIANT
