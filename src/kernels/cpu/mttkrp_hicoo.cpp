// OpenMP MTTKRP on HiCOO (Li's dissertation §4.3.2).
//
// Per block, the factor rows it touches are B consecutive rows of each
// factor (block index * B onward), so the inner loop addresses them with
// the 8-bit element indices and the blocked factor matrices stay in cache.
// Two parallel strategies over the logical superblocks:
//  - direct: the mode's superblock schedule groups superblocks by mode-n
//    slab; slabs write disjoint output rows, so each slab is one task
//    (dynamic scheduling, heaviest first) and its superblocks run in
//    order: no atomics, no copies. (ParTI! walks the conflict-free groups
//    one after another with a barrier between them; running each slab's
//    superblocks in sequence inside one task is equally conflict-free and
//    needs no barriers.)
//  - privatized: threads other than 0 write into private dims[mode] x R
//    copies that are summed at the end, so any split of the work is safe:
//    the nonzeros are cut into equal ranges (superblocks split where
//    needed) for even balance. Meant for short modes, where there are too
//    few slabs to keep P threads busy.
// Common ranks and orders get fixed-size loops so the rank loops vectorise
// and the other-mode loop unrolls. Per-nonzero products are formed in T;
// all sums go to double rows (float32: a double copy of the output, or
// double private copies, rounded into `out` once at the end), so float32
// results carry one rounding per output element.
#include <omp.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/buffer.hpp"
#include "kernels/kernels.hpp"

namespace spt::kernels::cpu {

namespace {

template <typename T>
struct HicooOperands {
  const spt_hicoo_s* x = nullptr;
  spt_nnz rank = 0;
  uint32_t block_bits = 0;
  const T* val = nullptr;
  const uint32_t* out_binds = nullptr;  // block indices of the output mode
  const uint8_t* out_einds = nullptr;   // element indices of the output mode
  uint32_t n_other = 0;                 // modes multiplied in
  std::vector<const uint32_t*> binds;
  std::vector<const uint8_t*> einds;
  std::vector<const T*> base;
  std::vector<spt_nnz> ld;
};

// out rows (ld out_ld) += contributions of the nonzeros in [k_lo, k_hi) of
// blocks [blk_begin, blk_end). RK > 0: fixed rank; NO > 0: fixed number of
// other modes. `blocked` holds n_other pointers.
template <typename T, int RK, int NO>
inline void blocks_mttkrp(const HicooOperands<T>& op, spt_nnz blk_begin, spt_nnz blk_end, spt_nnz k_lo,
                          spt_nnz k_hi, double* __restrict out, spt_nnz out_ld, const T** blocked, T* __restrict scratch) {
  const spt_nnz rank = RK > 0 ? RK : op.rank;
  const uint32_t n_other = NO > 0 ? NO : op.n_other;
  const spt_hicoo_s& x = *op.x;
  const uint32_t b = op.block_bits;
  alignas(64) T fixed_row[RK > 0 ? RK : 1];
  T* __restrict row = RK > 0 ? fixed_row : scratch;
  for (spt_nnz blk = blk_begin; blk < blk_end; ++blk) {
    for (uint32_t j = 0; j < n_other; ++j)
      blocked[j] = op.base[j] + (static_cast<spt_nnz>(op.binds[j][blk]) << b) * op.ld[j];
    double* __restrict ob = out + (static_cast<spt_nnz>(op.out_binds[blk]) << b) * out_ld;
    const spt_nnz end = std::min(x.bptr[blk + 1], k_hi);
    for (spt_nnz k = std::max(x.bptr[blk], k_lo); k < end; ++k) {
      const T v = op.val[k];
      const T* __restrict f = blocked[0] + static_cast<spt_nnz>(op.einds[0][k]) * op.ld[0];
#pragma omp simd
      for (spt_nnz r = 0; r < rank; ++r) row[r] = v * f[r];
      for (uint32_t j = 1; j < n_other; ++j) {
        const T* __restrict g = blocked[j] + static_cast<spt_nnz>(op.einds[j][k]) * op.ld[j];
#pragma omp simd
        for (spt_nnz r = 0; r < rank; ++r) row[r] *= g[r];
      }
      double* __restrict o = ob + static_cast<spt_nnz>(op.out_einds[k]) * out_ld;
#pragma omp simd
      for (spt_nnz r = 0; r < rank; ++r) o[r] += row[r];
    }
  }
}

template <typename T, int RK, int NO>
inline void superblock_mttkrp(const HicooOperands<T>& op, spt_nnz s, double* out, spt_nnz out_ld, const T** blocked,
                              T* scratch) {
  blocks_mttkrp<T, RK, NO>(op, op.x->sptr[s], op.x->sptr[s + 1], 0, op.x->nnz, out, out_ld, blocked, scratch);
}

// Per-thread scratch (blocked factor pointers and a rank-long row for
// ranks without a fixed-size kernel), allocated before the parallel region
// so nothing inside it can throw.
template <typename T>
class ThreadScratch {
 public:
  ThreadScratch(int threads, const HicooOperands<T>& op)
      : per_ptrs_(std::max<size_t>(op.n_other, 1)),
        per_row_(std::max<size_t>(op.rank, 1)),
        ptrs_(static_cast<size_t>(threads) * per_ptrs_),
        rows_(static_cast<size_t>(threads) * per_row_) {}
  const T** blocked(int t) { return ptrs_.data() + static_cast<size_t>(t) * per_ptrs_; }
  T* row(int t) { return rows_.data() + static_cast<size_t>(t) * per_row_; }

 private:
  size_t per_ptrs_, per_row_;
  std::vector<const T*> ptrs_;
  buffer<T> rows_;
};

// Where the sums go: `out` itself for float64; for float32 a zeroed double
// copy (rows x R) that finish() rounds into `out`.
template <typename T>
class SumRows {
 public:
  SumRows(MatRef<T> out, int threads) : out_(out), threads_(threads) {
    if constexpr (std::is_same_v<T, double>) {
      data_ = out.data;
      ld_ = out.ld;
    } else {
      wide_.resize(checked_mul(static_cast<uint64_t>(out.rows), out.cols, "HiCOO MTTKRP double sums"));
      data_ = wide_.data();
      ld_ = out.cols;
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz i = 0; i < out.rows; ++i) std::fill(data_ + i * ld_, data_ + i * ld_ + out.cols, 0.0);
  }
  double* data() const { return data_; }
  spt_nnz ld() const { return ld_; }
  void finish() {
    if constexpr (!std::is_same_v<T, double>) {
      MatRef<T> out = out_;
      const double* w = data_;
      const spt_nnz ld = ld_;
#pragma omp parallel for num_threads(threads_) schedule(static)
      for (spt_nnz i = 0; i < out.rows; ++i)
        for (spt_nnz r = 0; r < out.cols; ++r) out(i, r) = static_cast<T>(w[i * ld + r]);
    }
  }

 private:
  MatRef<T> out_;
  int threads_;
  buffer<double> wide_;
  double* data_ = nullptr;
  spt_nnz ld_ = 0;
};

template <typename T, int RK, int NO>
void mttkrp_sequential(const HicooOperands<T>& op, MatRef<T> out) {
  SumRows<T> sums(out, 1);
  ThreadScratch<T> ws(1, op);
  for (spt_nnz s = 0; s < op.x->num_superblocks(); ++s)
    superblock_mttkrp<T, RK, NO>(op, s, sums.data(), sums.ld(), ws.blocked(0), ws.row(0));
  sums.finish();
}

template <typename T, int RK, int NO>
void mttkrp_direct(const HicooOperands<T>& op, const HicooModeSchedule& sched, MatRef<T> out, int threads) {
  SumRows<T> sums(out, threads);
  const spt_nnz slabs = sched.slabs();
  ThreadScratch<T> ws(threads, op);
  double* dst = sums.data();
  const spt_nnz dst_ld = sums.ld();
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
    for (spt_nnz i = 0; i < slabs; ++i)
      for (spt_nnz q = sched.slab_ptr[i]; q < sched.slab_ptr[i + 1]; ++q)
        superblock_mttkrp<T, RK, NO>(op, sched.superblocks[q], dst, dst_ld, ws.blocked(t), ws.row(t));
  }
  sums.finish();
}

// float32: every thread (thread 0 too) sums into a private double copy;
// float64: thread 0 into `out`, the others into private copies.
template <typename T, int RK, int NO>
void mttkrp_privatized(const HicooOperands<T>& op, MatRef<T> out, int threads) {
  constexpr bool wide = !std::is_same_v<T, double>;
  const spt_nnz rows = out.rows, rank = op.rank, slab = rows * rank;
  const spt_hicoo_s& x = *op.x;
  const int copies = wide ? threads : threads - 1;
  buffer<double> priv(checked_mul(static_cast<uint64_t>(copies), slab, "HiCOO MTTKRP private buffers"));
  // Equal nonzero ranges (a few per thread), cut at
  // any nonzero: with private outputs nothing forces whole superblocks, and
  // a tensor of few large blocks still splits evenly.
  const int tasks = threads * 4;
  ThreadScratch<T> ws(threads, op);
  int team = 1;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
#pragma omp single
    team = omp_get_num_threads();
    const int used = wide ? team : team - 1;  // private copies in use
    double* direct = nullptr;
    if constexpr (!wide) {
      direct = out.data;
#pragma omp for schedule(static)
      for (spt_nnz i = 0; i < rows; ++i) std::fill(out.row(i), out.row(i) + rank, T(0));
    }
#pragma omp for schedule(static)
    for (spt_nnz e = 0; e < static_cast<spt_nnz>(used) * slab; ++e) priv[e] = 0.0;
    const bool to_out = !wide && t == 0;
    double* dst = to_out ? direct : priv.data() + (wide ? t : t - 1) * slab;
    const spt_nnz dst_ld = to_out ? out.ld : rank;
    // Static round-robin: each thread's copy sums the same ranges in the
    // same order on every call, so results are bit-reproducible for a
    // fixed thread count (CP-ALS promises that); ranges are equal in nnz.
#pragma omp for schedule(static, 1) nowait
    for (int c = 0; c < tasks; ++c) {
      const spt_nnz lo = static_cast<spt_nnz>((static_cast<unsigned __int128>(x.nnz) * c) / tasks);
      const spt_nnz hi = static_cast<spt_nnz>((static_cast<unsigned __int128>(x.nnz) * (c + 1)) / tasks);
      if (lo == hi) continue;
      // Blocks holding nonzeros lo..hi-1.
      const spt_nnz first = std::upper_bound(x.bptr.begin(), x.bptr.end(), lo) - x.bptr.begin() - 1;
      const spt_nnz last = std::lower_bound(x.bptr.begin(), x.bptr.end(), hi) - x.bptr.begin();
      blocks_mttkrp<T, RK, NO>(op, first, last, lo, hi, dst, dst_ld, ws.blocked(t), ws.row(t));
    }
#pragma omp barrier
    if constexpr (wide) {
#pragma omp for schedule(static)
      for (spt_nnz i = 0; i < rows; ++i) {
        double* __restrict sum = priv.data() + i * rank;  // copy 0's row takes the sum
        for (int p = 1; p < used; ++p) {
          const double* __restrict s = priv.data() + p * slab + i * rank;
#pragma omp simd
          for (spt_nnz r = 0; r < (RK > 0 ? RK : rank); ++r) sum[r] += s[r];
        }
        T* __restrict o = out.row(i);
        for (spt_nnz r = 0; r < (RK > 0 ? RK : rank); ++r) o[r] = static_cast<T>(sum[r]);
      }
    } else {
      if (used > 0) {
#pragma omp for schedule(static)
        for (spt_nnz i = 0; i < rows; ++i) {
          double* __restrict o = out.row(i);
          for (int p = 0; p < used; ++p) {
            const double* __restrict s = priv.data() + p * slab + i * rank;
#pragma omp simd
            for (spt_nnz r = 0; r < (RK > 0 ? RK : rank); ++r) o[r] += s[r];
          }
        }
      }
    }
  }
}

template <typename F>
void with_rank(spt_nnz rank, F&& f) {
  switch (rank) {
    case 8: f(std::integral_constant<int, 8>{}); break;
    case 16: f(std::integral_constant<int, 16>{}); break;
    case 32: f(std::integral_constant<int, 32>{}); break;
    case 64: f(std::integral_constant<int, 64>{}); break;
    default: f(std::integral_constant<int, 0>{}); break;
  }
}

template <typename F>
void with_other_modes(uint32_t n_other, F&& f) {
  switch (n_other) {
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    default: f(std::integral_constant<int, 0>{}); break;
  }
}

template <typename T>
void mttkrp_hicoo_impl(const Exec& exec, const spt_hicoo_s& x, const ConstMatRef<T>* factors, uint32_t mode,
                       MatRef<T> out) {
  HicooOperands<T> op;
  op.x = &x;
  op.rank = out.cols;
  op.block_bits = x.block_bits;
  op.val = x.values<T>();
  op.out_binds = x.binds[mode].data();
  op.out_einds = x.einds[mode].data();
  for (uint32_t m = 0; m < x.order(); ++m) {
    if (m == mode) continue;
    op.binds.push_back(x.binds[m].data());
    op.einds.push_back(x.einds[m].data());
    op.base.push_back(factors[m].data);
    op.ld.push_back(factors[m].ld);
  }
  op.n_other = static_cast<uint32_t>(op.binds.size());
  if (op.rank == 0) return;

  // Small tensors are not worth waking threads for.
  const int threads = static_cast<int>(std::max<spt_nnz>(1, std::min<spt_nnz>(std::max(exec.threads, 1), x.nnz / 2048 + 1)));
  HicooStrategy strategy = exec.mttkrp_strategy == MttkrpStrategy::privatized ? HicooStrategy::privatized
                                                                              : hicoo::effective_strategy(x, mode, threads);
  with_rank(op.rank, [&](auto rk) {
    constexpr int RK = decltype(rk)::value;
    with_other_modes(op.n_other, [&](auto no) {
      constexpr int NO = decltype(no)::value;
      if (threads == 1) mttkrp_sequential<T, RK, NO>(op, out);
      else if (strategy == HicooStrategy::privatized) mttkrp_privatized<T, RK, NO>(op, out, threads);
      else mttkrp_direct<T, RK, NO>(op, x.schedule[mode], out, threads);
    });
  });
}

}  // namespace

#define SPT_INSTANTIATE(T)                                                                                      \
  void mttkrp_hicoo(const Exec& exec, const spt_hicoo_s& x, const ConstMatRef<T>* factors, uint32_t mode,     \
                    MatRef<T> out) {                                                                            \
    mttkrp_hicoo_impl<T>(exec, x, factors, mode, out);                                                          \
  }

SPT_INSTANTIATE(float)
SPT_INSTANTIATE(double)
#undef SPT_INSTANTIATE

}  // namespace spt::kernels::cpu
