// OpenMP MTTKRP on COO, plus the Kruskal inner product and squared norm.
//
// MTTKRP: every nonzero contributes x * (Hadamard product of the other
// modes' factor rows) to output row i_mode. Threads collide on output rows;
// three ways to resolve that:
//  - sorted_rows: when the tensor is sorted with `mode` first, nonzeros are
//    split into equal ranges, each row run accumulated in registers and
//    stored once; only the runs at range edges are combined afterwards: no
//    atomics, no per-thread output copies;
//  - privatized: thread 0 accumulates into `out`, the others into private
//    dims[mode] x R buffers, summed afterwards in parallel; used when those
//    buffers are small next to the work (bounded by nnz*R/2, so memory stays
//    proportional to nnz);
//  - atomic: one atomic add per output element, for huge output modes.
// Common ranks get fixed-size row buffers so the rank loops unroll and
// vectorise fully. Per-nonzero products are formed in T; the sums are
// kept in double (row runs in registers, the atomics' shared copy) or, for
// float32 private copies, in float32 for at most kFoldEvery products per
// row before they are folded into double rows, and rounded to T once, so
// float32 results carry about one rounding per output element whatever
// the number of nonzeros per row.
#include <omp.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/buffer.hpp"
#include "kernels/cpu/mttkrp_parallel.hpp"
#include "kernels/kernels.hpp"
#include "core/sort.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

// Private buffers are used when (threads-1) * dims[mode] * R elements take at
// most this many bytes, or at most half of nnz * R elements.
constexpr size_t kPrivateBytesAlways = size_t(8) << 20;

template <typename T>
struct Operands {
  spt_nnz nnz = 0;
  spt_nnz rank = 0;
  const T* val = nullptr;
  const spt_index* row_idx = nullptr;  // indices of the output mode
  uint32_t n_other = 0;                // modes multiplied in
  const spt_index* const* idx = nullptr;  // per other mode (into the vectors below)
  const T* const* base = nullptr;
  const spt_nnz* ld = nullptr;
  std::vector<const spt_index*> idx_v;
  std::vector<const T*> base_v;
  std::vector<spt_nnz> ld_v;
};

// row = x_k * Hadamard of NO other modes' factor rows, NO fixed at compile
// time (the rank loop then holds every factor row in registers).
template <typename T, int RK, int NO>
[[gnu::always_inline]] inline void fixed_product(const Operands<T>& op, spt_nnz k, T* __restrict row) {
  const spt_nnz rank = RK > 0 ? RK : op.rank;
  const T v = op.val[k];
  const T* __restrict f[NO];
  for (int j = 0; j < NO; ++j) f[j] = op.base[j] + static_cast<spt_nnz>(op.idx[j][k]) * op.ld[j];
#pragma omp simd
  for (spt_nnz r = 0; r < rank; ++r) {
    T p = v * f[0][r];
    for (int j = 1; j < NO; ++j) p *= f[j][r];
    row[r] = p;
  }
}

// row = x_k * Hadamard of the other modes' factor rows (RK > 0: fixed rank).
template <typename T, int RK>
[[gnu::always_inline]] inline void nonzero_product(const Operands<T>& op, spt_nnz k, T* __restrict row) {
  if (op.n_other == 2) return fixed_product<T, RK, 2>(op, k, row);
  if (op.n_other == 3) return fixed_product<T, RK, 3>(op, k, row);
  const spt_nnz rank = RK > 0 ? RK : op.rank;
  const T v = op.val[k];
  if (op.n_other == 0) {
    for (spt_nnz r = 0; r < rank; ++r) row[r] = v;
    return;
  }
  const T* __restrict f = op.base[0] + static_cast<spt_nnz>(op.idx[0][k]) * op.ld[0];
#pragma omp simd
  for (spt_nnz r = 0; r < rank; ++r) row[r] = v * f[r];
  for (uint32_t j = 1; j < op.n_other; ++j) {
    const T* __restrict g = op.base[j] + static_cast<spt_nnz>(op.idx[j][k]) * op.ld[j];
#pragma omp simd
    for (spt_nnz r = 0; r < rank; ++r) row[r] *= g[r];
  }
}

// `p` as double* when T is double (sums then go straight into the
// output), else nullptr (never used: float sums go to double buffers).
template <typename T>
double* as_double(T* p) {
  if constexpr (std::is_same_v<T, double>) return p;
  else return nullptr;
}

// float32 products are added in float32 to a private float32 copy; each
// row is folded into the copy's double row every kFoldEvery additions (and
// cleared), so no float32 sum is longer than that. The copies' double rows
// plus float32 rests are added and rounded once at the end.
constexpr uint16_t kFoldEvery = 64;

template <typename T, int RK>
void mttkrp_privatized_fold(const Operands<T>& op, MatRef<T> out, int threads) {
  const spt_nnz rows = out.rows, rank = op.rank;
  const spt_nnz slab = rows * rank;
  // Each thread's copies on their own cache lines (see CacheLineSlabs).
  CacheLineSlabs<T> part(threads, slab, "MTTKRP private buffers");
  CacheLineSlabs<double> wide(threads, slab, "MTTKRP double sums");
  CacheLineSlabs<uint16_t> count(threads, rows, "MTTKRP fold counts");
  typename ProductRow<T, RK>::Scratch scratch(threads, rank);
  parallel_team(threads, [&](int t, int team) {
    zero_rows_in_team(part, team, rows, rank);
    zero_rows_in_team(wide, team, rows, rank);
    T* __restrict f = part[t];
    double* __restrict w = wide[t];
    uint16_t* __restrict c = count[t];
    std::fill(c, c + rows, uint16_t{0});
    ProductRow<T, RK> product(scratch, t);
    T* row = product.get();
#pragma omp for schedule(static) nowait
    for (spt_nnz k = 0; k < op.nnz; ++k) {
      nonzero_product<T, RK>(op, k, row);
      const spt_nnz i = op.row_idx[k];
      T* __restrict o = f + i * rank;
#pragma omp simd
      for (spt_nnz r = 0; r < (RK > 0 ? RK : rank); ++r) o[r] += row[r];
      if (++c[i] == kFoldEvery) {
        double* __restrict d = w + i * rank;
#pragma omp simd
        for (spt_nnz r = 0; r < (RK > 0 ? RK : rank); ++r) {
          d[r] += o[r];
          o[r] = T(0);
        }
        c[i] = 0;
      }
    }
#pragma omp barrier
    reduce_copies_in_team<RK>(
        out, team, [](spt_nnz, spt_nnz) { return 0.0; },
        [&](double& sum, spt_nnz p, spt_nnz i, spt_nnz r) {
          const spt_nnz at = i * rank + r;
          sum += wide[p][at] + static_cast<double>(part[p][at]);
        });
  });
}

// float64 (float32 takes mttkrp_privatized_fold): thread 0 sums straight
// into `out`, the others into private buffers, added at the end.
template <typename T, int RK>
void mttkrp_privatized(const Operands<T>& op, MatRef<T> out, int threads) {
  const spt_nnz rows = out.rows, rank = op.rank;
  const spt_nnz slab = rows * rank;
  // Each thread's copy on its own cache lines (see CacheLineSlabs).
  CacheLineSlabs<T> priv(threads - 1, slab, "MTTKRP private buffers");
  typename ProductRow<T, RK>::Scratch scratch(threads, rank);
  parallel_team(threads, [&](int t, int team) {
#pragma omp for schedule(static)
    for (spt_nnz i = 0; i < rows; ++i) std::fill(out.row(i), out.row(i) + rank, T(0));
    zero_rows_in_team(priv, team - 1, rows, rank);
    T* dst = t == 0 ? out.data : priv[t - 1];
    const spt_nnz dst_ld = t == 0 ? out.ld : rank;
    ProductRow<T, RK> product(scratch, t);
    T* row = product.get();
#pragma omp for schedule(static) nowait
    for (spt_nnz k = 0; k < op.nnz; ++k) {
      nonzero_product<T, RK>(op, k, row);
      T* __restrict o = dst + static_cast<spt_nnz>(op.row_idx[k]) * dst_ld;
#pragma omp simd
      for (spt_nnz r = 0; r < (RK > 0 ? RK : rank); ++r) o[r] += row[r];
    }
#pragma omp barrier
    if (team > 1) {
#pragma omp for schedule(static)
      for (spt_nnz i = 0; i < rows; ++i) {
        T* __restrict o = out.row(i);
        for (int p = 0; p + 1 < team; ++p) {
          const T* __restrict s = priv[p] + i * rank;
#pragma omp simd
          for (spt_nnz r = 0; r < (RK > 0 ? RK : rank); ++r) o[r] += s[r];
        }
      }
    }
  });
}

// float32: the atomics go to a shared double copy of the output, rounded
// into `out` at the end; float64: straight into `out`.
template <typename T, int RK>
void mttkrp_atomic(const Operands<T>& op, MatRef<T> out, int threads) {
  constexpr bool wide = !std::is_same_v<T, double>;
  const spt_nnz rank = op.rank;
  typename ProductRow<T, RK>::Scratch scratch(threads, rank);
  buffer<double> sums(wide ? checked_mul(static_cast<uint64_t>(out.rows), rank, "MTTKRP double sums") : 0);
  double* base = wide ? sums.data() : as_double(out.data);
  const spt_nnz ld = wide ? rank : out.ld;
  parallel_team(threads, [&](int t, int) {
#pragma omp for schedule(static)
    for (spt_nnz i = 0; i < out.rows; ++i) std::fill(base + i * ld, base + i * ld + rank, 0.0);
    ProductRow<T, RK> product(scratch, t);
    T* row = product.get();
#pragma omp for schedule(static)
    for (spt_nnz k = 0; k < op.nnz; ++k) {
      nonzero_product<T, RK>(op, k, row);
      double* o = base + static_cast<spt_nnz>(op.row_idx[k]) * ld;
      for (spt_nnz r = 0; r < (RK > 0 ? RK : rank); ++r) {
        const double v = row[r];
#pragma omp atomic
        o[r] += v;
      }
    }
    if (wide) {
#pragma omp for schedule(static)
      for (spt_nnz i = 0; i < out.rows; ++i) {
        T* __restrict o = out.row(i);
        const double* __restrict s = base + i * ld;
        for (spt_nnz r = 0; r < rank; ++r) o[r] = static_cast<T>(s[r]);
      }
    }
  });
}

// Nonzeros sorted by the output mode: each thread takes an equal range of
// nonzeros and accumulates each row run in registers. Rows wholly inside a
// range are stored directly (no other thread touches them); the first and
// last run of each range may be shared with a neighbour (a heavy row can
// span several ranges), so those are kept aside and added afterwards.
template <typename T, int RK>
void mttkrp_sorted_rows(const Operands<T>& op, MatRef<T> out, int threads) {
  const spt_nnz rank = op.rank, n = op.nnz;
  const int tasks = threads;
  std::vector<spt_nnz> bound(tasks + 1);
  for (int c = 0; c <= tasks; ++c) bound[c] = chunk_begin(n, c, tasks);
  // Per task: [first-run sums | last-run sums], and which rows they belong to.
  buffer<double> edge(static_cast<size_t>(tasks) * 2 * rank);
  std::vector<spt_index> edge_row(2 * static_cast<size_t>(tasks));
  std::vector<char> edge_used(2 * static_cast<size_t>(tasks), 0);
  typename ProductRow<T, RK>::Scratch scratch(threads, rank);
  typename ProductRow<double, RK>::Scratch scratch_acc(threads, rank);
  parallel_team(threads, [&](int t, int) {
#pragma omp for schedule(static)
    for (spt_nnz i = 0; i < out.rows; ++i) std::fill(out.row(i), out.row(i) + rank, T(0));
    ProductRow<T, RK> product(scratch, t);
    ProductRow<double, RK> sums(scratch_acc, t);
    T* row = product.get();
    double* acc = sums.get();
#pragma omp for schedule(static, 1)
    for (int c = 0; c < tasks; ++c) {
      const spt_nnz begin = bound[c], end = bound[c + 1];
      spt_nnz k = begin;
      while (k < end) {
        const spt_index i = op.row_idx[k];
        const spt_nnz run_begin = k;
        nonzero_product<T, RK>(op, k, row);
#pragma omp simd
        for (spt_nnz r = 0; r < (RK > 0 ? RK : rank); ++r) acc[r] = row[r];
        for (++k; k < end && op.row_idx[k] == i; ++k) {
          nonzero_product<T, RK>(op, k, row);
#pragma omp simd
          for (spt_nnz r = 0; r < (RK > 0 ? RK : rank); ++r) acc[r] += row[r];
        }
        const bool first = run_begin == begin, last = k == end;
        if (first || last) {
          const size_t slot = 2 * static_cast<size_t>(c) + (first ? 0 : 1);
          double* __restrict e = edge.data() + slot * rank;
          edge_row[slot] = i;
          edge_used[slot] = 1;
#pragma omp simd
          for (spt_nnz r = 0; r < (RK > 0 ? RK : rank); ++r) e[r] = acc[r];
        } else {
          T* __restrict o = out.row(i);
#pragma omp simd
          for (spt_nnz r = 0; r < (RK > 0 ? RK : rank); ++r) o[r] = static_cast<T>(acc[r]);
        }
      }
    }
  });
  store_edge_rows(edge.data(), edge_row, edge_used, out);
}

template <typename T>
void mttkrp_impl(const Exec& exec, const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) {
  Operands<T> op;
  op.nnz = x.nnz;
  op.rank = out.cols;
  op.val = x.values<T>();
  op.row_idx = x.ind[mode];
  for (uint32_t m = 0; m < x.order(); ++m) {
    if (m == mode) continue;
    op.idx_v.push_back(x.ind[m]);
    op.base_v.push_back(factors[m].data);
    op.ld_v.push_back(factors[m].ld);
  }
  op.n_other = static_cast<uint32_t>(op.idx_v.size());
  op.idx = op.idx_v.data();
  op.base = op.base_v.data();
  op.ld = op.ld_v.data();
  if (op.rank == 0) return;

  const int threads = std::max(1, exec.threads);
  const bool sorted_by_mode = !x.sorted_by.empty() && x.sorted_by[0] == mode;
  MttkrpStrategy strategy = exec.mttkrp_strategy;
  if (strategy == MttkrpStrategy::sorted_rows && !sorted_by_mode) strategy = MttkrpStrategy::automatic;
  if (strategy == MttkrpStrategy::automatic) {
    const double private_elems = double(threads - 1) * double(out.rows) * double(op.rank);
    if (sorted_by_mode) strategy = MttkrpStrategy::sorted_rows;
    else if (private_elems * sizeof(T) <= double(kPrivateBytesAlways) ||
             private_elems <= double(x.nnz) * double(op.rank) / 2)
      strategy = MttkrpStrategy::privatized;
    else strategy = MttkrpStrategy::atomic;
  }
  with_rank(op.rank, [&](auto rk) {
    constexpr int RK = decltype(rk)::value;
    switch (strategy) {
      case MttkrpStrategy::sorted_rows: mttkrp_sorted_rows<T, RK>(op, out, threads); break;
      case MttkrpStrategy::atomic: mttkrp_atomic<T, RK>(op, out, threads); break;
      default:
        if constexpr (std::is_same_v<T, double>) mttkrp_privatized<T, RK>(op, out, threads);
        else mttkrp_privatized_fold<T, RK>(op, out, threads);
        break;
    }
  });
}

template <typename T>
double inner_impl(const Exec& exec, const spt_coo_s& x, const T* lambda, const ConstMatRef<T>* factors,
                  spt_index rank) {
  const int threads = std::max(1, exec.threads);
  const uint32_t order = x.order();
  const T* val = x.values<T>();
  buffer<double> scratch(static_cast<size_t>(threads) * rank);
  double total = 0.0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
  {
    double* p = scratch.data() + static_cast<size_t>(omp_get_thread_num()) * rank;
#pragma omp for schedule(static)
    for (spt_nnz k = 0; k < x.nnz; ++k) {
      for (spt_index r = 0; r < rank; ++r) p[r] = lambda[r];
      for (uint32_t m = 0; m < order; ++m) {
        const T* f = factors[m].row(x.ind[m][k]);
#pragma omp simd
        for (spt_index r = 0; r < rank; ++r) p[r] *= f[r];
      }
      double s = 0.0;
      for (spt_index r = 0; r < rank; ++r) s += p[r];
      total += static_cast<double>(val[k]) * s;
    }
  }
  return total;
}

}  // namespace

#define SPT_INSTANTIATE(T)                                                                                           \
  void mttkrp(const Exec& exec, const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) { \
    mttkrp_impl<T>(exec, x, factors, mode, out);                                                                     \
  }                                                                                                                  \
  double inner_ktensor(const Exec& exec, const spt_coo_s& x, const T* lambda, const ConstMatRef<T>* factors,        \
                       spt_index rank) {                                                                             \
    return inner_impl<T>(exec, x, lambda, factors, rank);                                                            \
  }

SPT_INSTANTIATE(float)
SPT_INSTANTIATE(double)
#undef SPT_INSTANTIATE

SummedStats summed_stats(const Exec& exec, const spt_coo_s& x) { return sorting::summed_stats(exec, x); }

}  // namespace spt::kernels::SPT_CPU_VARIANT
