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
#include "kernels/sort.hpp"
#include "kernels/ttm_chain.hpp"
#include "kernels/ttmc.hpp"

namespace spt::kernels::cpu {

namespace {

template <typename T>
void scoo_ttm_impl(const Exec& exec, const spt_scoo_s& y, uint32_t mode, ConstMatRef<T> u, spt_scoo_s& out) {
  const ScooTtmShape shape = scoo_ttm_shape(y, mode, u);
  const uint32_t order = y.order();
  const std::vector<uint32_t> sparse = y.sparse_modes();
  const spt_nnz n = y.nfibers;
  const int threads = std::max(1, exec.threads);

  // Group key: the sparse modes but `mode`, in the order the fibers are
  // sorted by (or ascending after our own sort).
  std::vector<uint32_t> key;
  buffer<spt_nnz> perm;
  const bool grouped = y.fiber_order.size() == sparse.size() && y.fiber_order.back() == mode;
  if (grouped) {
    key.assign(y.fiber_order.begin(), y.fiber_order.end() - 1);
  } else {
    for (uint32_t m : sparse)
      if (m != mode) key.push_back(m);
    perm.resize(n);
    std::iota(perm.begin(), perm.end(), spt_nnz(0));
    std::vector<uint32_t> by = key;
    by.push_back(mode);
    std::stable_sort(perm.begin(), perm.end(), [&](spt_nnz a, spt_nnz b) {
      for (uint32_t m : by)
        if (y.ind[m][a] != y.ind[m][b]) return y.ind[m][a] < y.ind[m][b];
      return false;
    });
  }
  const spt_nnz* order_of = grouped ? nullptr : perm.data();
  auto fiber = [&](spt_nnz k) { return order_of ? order_of[k] : k; };
  auto starts_group = [&](spt_nnz k) {
    if (k == 0) return true;
    const spt_nnz f = fiber(k), g = fiber(k - 1);
    for (uint32_t m : key)
      if (y.ind[m][f] != y.ind[m][g]) return true;
    return false;
  };

  // Group starts: count per chunk, prefix-sum, write (output order = input order).
  const int chunks = static_cast<int>(std::min<spt_nnz>(threads, std::max<spt_nnz>(n, 1)));
  auto chunk_begin = [&](int c) { return n / chunks * c + std::min<spt_nnz>(c, n % chunks); };
  std::vector<spt_nnz> offset(chunks + 1, 0);
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    spt_nnz count = 0;
    for (spt_nnz k = chunk_begin(c); k < chunk_begin(c + 1); ++k) count += starts_group(k);
    offset[c + 1] = count;
  }
  for (int c = 0; c < chunks; ++c) offset[c + 1] += offset[c];
  const spt_nnz groups = offset[chunks];
  buffer<spt_nnz> starts(groups + 1);
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    spt_nnz g = offset[c];
    for (spt_nnz k = chunk_begin(c); k < chunk_begin(c + 1); ++k)
      if (starts_group(k)) starts[g++] = k;
  }
  starts[groups] = n;

  out.dims = shape.dims;
  out.dense_modes = shape.dense;
  out.dense_mode = shape.dense[0];
  out.fiber_order = key;
  out.nfibers = groups;
  out.ind.assign(order, {});
  for (uint32_t m : key) out.ind[m].resize(groups);
  out.values.set_dtype(y.dtype());
  out.values.resize(checked_mul(groups, shape.out_block, "semi-sparse value count"));

  const T* in = y.values.get<T>().data();
  T* dst = out.values.get<T>().data();
  const spt_index* mode_ind = y.ind[mode].data();
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16)
  for (spt_nnz g = 0; g < groups; ++g) {
    const spt_nnz first = fiber(starts[g]);
    for (uint32_t m : key) out.ind[m][g] = y.ind[m][first];
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

}  // namespace spt::kernels::cpu
