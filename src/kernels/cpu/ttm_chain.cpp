// OpenMP semi-sparse TTM (SsTTM, dissertation Alg. 16) and TTMc by the TTM
// chain (see kernels/ttm_chain.hpp for the layouts and the chain scheme).
//
// SsTTM: the fibers of y are grouped by their coordinates in the sparse
// modes other than `mode` (no sort when y.fiber_order already ends with
// `mode`, as every step of a TTM chain leaves it; else a stable sort of a
// fiber permutation). Each group becomes one output block, computed by one
// thread directly in the output (dynamic schedule over groups): no scratch
// at all, no write conflicts, and the sums run in fiber order, so the
// result does not depend on the thread count.
//
// TTMc by the chain: whole mode-n slices per task (dynamic schedule, as
// skewed tensors have very unequal slices), one block per chain level per
// thread (L_0 + ... + L_{K-2} values), the last level written straight into
// the output row. Deterministic for the same reason.
#include <omp.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/kernels.hpp"
#include "core/sort.hpp"
#include "kernels/ttm_chain.hpp"
#include "kernels/ttmc.hpp"
#include "kernels/ttm_fibers.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

template <typename T>
void scoo_ttm_impl(const Exec& exec, const spt_scoo_s& y, uint32_t mode, ConstMatRef<T> u, spt_scoo_s& out) {
  const ScooTtmShape shape = scoo_ttm_shape(y, mode, u);
  const int threads = std::max(1, exec.threads);
  const ScooTtmGroups grouped = scoo_ttm_groups(exec, y, mode);
  scoo_ttm_result_shell(exec, grouped, y, shape, out);
  const spt_nnz groups = grouped.count();
  const buffer<spt_nnz>& starts = grouped.starts;
  auto fiber = [&](spt_nnz k) { return grouped.fiber(k); };

  const T* in = y.values.get<T>().data();
  T* dst = out.values.get<T>().data();
  const spt_index* mode_ind = y.ind[mode].data();
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16)
  for (spt_nnz g = 0; g < groups; ++g) {
    T* block = dst + g * shape.out_block;
    std::fill(block, block + shape.out_block, T(0));
    for (spt_nnz k = starts[g]; k < starts[g + 1]; ++k) {
      const spt_nnz f = fiber(k);
      insert_mode_axpy<T>(block, in + f * shape.in_block, u.row(mode_ind[f]), shape.a_len, shape.rank, shape.b_len);
    }
  }
}

template <typename T>
void ttmc_chain_impl(const Exec& exec, const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode,
                     const uint32_t* chain_modes, MatRef<T> out) {
  check_ttmc_args(x, factors, mode, out);
  const uint32_t order = x.order();
  check_ttmc_chain(order, mode, chain_modes);
  const std::vector<uint32_t> chain(chain_modes, chain_modes + order - 1);
  const size_t levels = chain.size();  // K
  const uint64_t p = out.cols;
  const int threads = std::max(1, exec.threads);

#pragma omp parallel for num_threads(threads) schedule(static)
  for (spt_nnz i = 0; i < out.rows; ++i) std::fill(out.row(i), out.row(i) + p, T(0));
  if (x.nnz == 0) return;

  const sorting::SortedView view(exec, x, ttm_chain_sort_order(mode, chain));
  const spt_coo_s& s = view.get();
  const buffer<spt_nnz> rows = sorting::group_starts(exec, s, {mode});
  const spt_nnz row_groups = rows.size() - 1;

  // Level j is dense in chain[0..j]: L_j values; closing it inserts
  // chain[j+1] with the (A, B) split of its dense set around that mode.
  std::vector<spt_index> ranks(order, 1);
  for (uint32_t m = 0; m < order; ++m)
    if (m != mode) ranks[m] = static_cast<spt_index>(factors[m].cols);
  std::vector<uint64_t> acc_len(levels), a_len(levels, 1), b_len(levels, 1);
  std::vector<uint32_t> dense;
  for (size_t j = 0; j < levels; ++j) {
    acc_len[j] = (j == 0 ? 1 : acc_len[j - 1]) * ranks[chain[j]];
    dense.insert(std::upper_bound(dense.begin(), dense.end(), chain[j]), chain[j]);
    if (j + 1 < levels) split_around(ranks, dense, chain[j + 1], a_len[j], b_len[j]);
  }
  std::vector<const spt_index*> ind(levels);
  std::vector<ConstMatRef<T>> u(levels);
  for (size_t j = 0; j < levels; ++j) {
    ind[j] = s.ind[chain[j]];
    u[j] = factors[chain[j]];
  }
  const spt_index* mode_ind = s.ind[mode];
  const T* val = s.values<T>();
  const spt_nnz r0 = u[0].cols;

  // Thread-private blocks acc[j], j < K-1, and the pointer table, allocated
  // here: an allocation failure inside the parallel region could not be
  // reported (kernels.hpp). Each thread's slab starts on its own cache line
  // and is zeroed (first touch) by that thread.
  constexpr uint64_t kLine = 64 / sizeof(T) > 0 ? 64 / sizeof(T) : 1;
  std::vector<uint64_t> acc_offset(levels, 0);
  uint64_t slab = 0;
  for (size_t j = 0; j + 1 < levels; ++j) {
    acc_offset[j] = slab;
    slab = checked_add(slab, acc_len[j], "TTMc chain scratch");
  }
  slab = checked_mul((slab + kLine - 1) / kLine, kLine, "TTMc chain scratch");
  buffer<T> scratch(checked_mul(static_cast<uint64_t>(threads), slab, "TTMc chain scratch"));
  std::vector<T*> acc_table(static_cast<size_t>(threads) * levels);

#pragma omp parallel num_threads(threads)
  {
    // acc[j] for j < K-1: thread-private, kept zero between groups;
    // acc[K-1] is the output row.
    const size_t t = static_cast<size_t>(omp_get_thread_num());
    T* own = scratch.data() + t * slab;
    std::fill(own, own + slab, T(0));
    T** acc = acc_table.data() + t * levels;

#pragma omp for schedule(dynamic, 1)
    for (spt_nnz g = 0; g < row_groups; ++g) {
      for (size_t j = 0; j + 1 < levels; ++j) acc[j] = own + acc_offset[j];
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
        // Levels closing after nonzero k: those below the highest chain
        // level whose coordinate changes at k+1 (all of them at the slice end).
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
          insert_mode_axpy<T>(acc[j + 1], acc[j], u[j + 1].row(ind[j + 1][k]), a_len[j], u[j + 1].cols, b_len[j]);
          std::fill(acc[j], acc[j] + acc_len[j], T(0));
        }
      }
    }
  }
}

}  // namespace

void scoo_ttm(const Exec& exec, const spt_scoo_s& y, uint32_t mode, ConstMatRef<float> u, spt_scoo_s& out) {
  scoo_ttm_impl(exec, y, mode, u, out);
}
void scoo_ttm(const Exec& exec, const spt_scoo_s& y, uint32_t mode, ConstMatRef<double> u, spt_scoo_s& out) {
  scoo_ttm_impl(exec, y, mode, u, out);
}
void ttmc_chain(const Exec& exec, const spt_coo_s& x, const ConstMatRef<float>* factors, uint32_t mode,
                const uint32_t* chain, MatRef<float> out) {
  ttmc_chain_impl(exec, x, factors, mode, chain, out);
}
void ttmc_chain(const Exec& exec, const spt_coo_s& x, const ConstMatRef<double>* factors, uint32_t mode,
                const uint32_t* chain, MatRef<double> out) {
  ttmc_chain_impl(exec, x, factors, mode, chain, out);
}

}  // namespace spt::kernels::SPT_CPU_VARIANT
