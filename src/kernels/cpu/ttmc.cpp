// OpenMP one-shot TTM chain (see kernels/ttmc.hpp for the layout).
//
// Race-free by construction: the nonzeros are viewed sorted with `mode`
// first (kernels/sort.hpp SortedView; no copy when the caller pre-sorted in
// ttmc_sort_order), and threads take whole output rows (runs of equal i_mode)
// with dynamic scheduling, since skewed tensors have very unequal rows.
//
// Within a row the other modes are sorted from the highest (o_{K-1}) down to
// the lowest (o_0), so the nonzeros form nested groups, as in a CSF tree:
// level-j groups share the indices of o_{j+1}..o_{K-1}. acc[j] (length
// L_j = R_{o_0} ... R_{o_j}) sums the current level-j group:
//   every nonzero:             acc[0] += value * U_{o_0}(i_{o_0}, :)
//   a level-j group closes:    acc[j+1] += kron(U_{o_{j+1}}(i_{o_{j+1}}, :), acc[j]); acc[j] = 0
// and acc[K-1] is the output row itself. The Kronecker row is never formed
// per nonzero: the work is nnz R_{o_0} + sum_j (level-j groups) L_{j+1},
// never more than the plain one-shot form's nnz P.
#include <algorithm>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/sort.hpp"
#include "kernels/ttmc.hpp"

namespace spt::kernels::cpu {

namespace {

template <typename T>
void ttmc_impl(const Exec& exec, const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) {
  check_ttmc_args(x, factors, mode, out);
  const uint32_t order = x.order();
  const std::vector<uint32_t> others = ttmc_other_modes(order, mode);  // o_0 < o_1 < ...
  const size_t levels = others.size();                                // K
  const uint64_t p = out.cols;
  const int threads = std::max(1, exec.threads);

#pragma omp parallel for num_threads(threads) schedule(static)
  for (spt_nnz i = 0; i < out.rows; ++i) std::fill(out.row(i), out.row(i) + p, T(0));
  if (x.nnz == 0) return;

  const sorting::SortedView view(exec, x, ttmc_sort_order(order, mode));
  const spt_coo_s& s = view.get();
  const buffer<spt_nnz> rows = sorting::group_starts(exec, s, {mode});
  const spt_nnz row_groups = rows.size() - 1;

  std::vector<uint64_t> acc_len(levels);  // L_j
  for (size_t j = 0; j < levels; ++j) acc_len[j] = (j == 0 ? 1 : acc_len[j - 1]) * factors[others[j]].cols;
  std::vector<const spt_index*> ind(levels);
  std::vector<ConstMatRef<T>> u(levels);
  for (size_t j = 0; j < levels; ++j) {
    ind[j] = s.ind[others[j]];
    u[j] = factors[others[j]];
  }
  const spt_index* mode_ind = s.ind[mode];
  const T* val = s.values<T>();
  const spt_nnz r0 = u[0].cols;

#pragma omp parallel num_threads(threads)
  {
    // acc[j] for j < K-1 (thread-private, kept zero between groups);
    // acc[K-1] points at the output row.
    std::vector<std::vector<T>> own(levels);
    for (size_t j = 0; j + 1 < levels; ++j) own[j].assign(acc_len[j], T(0));
    std::vector<T*> acc(levels);

#pragma omp for schedule(dynamic, 1)
    for (spt_nnz g = 0; g < row_groups; ++g) {
      for (size_t j = 0; j + 1 < levels; ++j) acc[j] = own[j].data();
      acc[levels - 1] = out.row(mode_ind[rows[g]]);
      const spt_nnz end = rows[g + 1];
      for (spt_nnz k = rows[g]; k < end; ++k) {
        {
          const T v = val[k];
          const T* __restrict urow = u[0].row(ind[0][k]);
          T* __restrict a0 = acc[0];
#pragma omp simd
          for (spt_nnz b = 0; b < r0; ++b) a0[b] += v * urow[b];
        }
        // Levels closing after nonzero k: every level below the highest
        // other mode whose index changes at k+1 (all of them at the row end).
        size_t closing = 0;
        if (k + 1 == end) {
          closing = levels - 1;
        } else {
          for (size_t j = levels - 1; j >= 1; --j)
            if (ind[j][k + 1] != ind[j][k]) {
              closing = j;
              break;
            }
        }
        for (size_t j = 0; j < closing; ++j) {
          const T* __restrict urow = u[j + 1].row(ind[j + 1][k]);
          const spt_nnz rj = u[j + 1].cols;
          const uint64_t len = acc_len[j];
          T* __restrict lower = acc[j];
          T* __restrict upper = acc[j + 1];
          for (spt_nnz r = 0; r < rj; ++r) {
            const T w = urow[r];
            T* __restrict dst = upper + r * len;
#pragma omp simd
            for (uint64_t c = 0; c < len; ++c) dst[c] += w * lower[c];
          }
          std::fill(lower, lower + len, T(0));
        }
      }
    }
  }
}

}  // namespace

void ttmc(const Exec& exec, const spt_coo_s& x, const ConstMatRef<float>* factors, uint32_t mode,
          MatRef<float> out) {
  ttmc_impl(exec, x, factors, mode, out);
}
void ttmc(const Exec& exec, const spt_coo_s& x, const ConstMatRef<double>* factors, uint32_t mode,
          MatRef<double> out) {
  ttmc_impl(exec, x, factors, mode, out);
}

}  // namespace spt::kernels::cpu
