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
// results carry one rounding per output element; the hot loop still adds
// in float32, folding each row into its double row every kFoldEvery
// products (RowSums).
#include <omp.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/buffer.hpp"
#include "kernels/cpu/mttkrp_parallel.hpp"
#include "kernels/kernels.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

// Where a copy of the output sums (T = float: a float32 copy, plus per row a
// count and a double row; T = double: the double rows alone). add() adds a
// product row to row i. float32 rows are folded into their double row
// every kFoldEvery additions, so no float32 sum runs longer than that:
// float32 adds in the hot loop (the base cost), one double add per row
// per kFoldEvery products, and an error of a few float32 roundings.
constexpr uint32_t kFoldEvery = 64;

template <typename T>
struct RowSums {
  T* f = nullptr;  // float32 partial rows (T = float)
  spt_nnz f_ld = 0;
  double* w = nullptr;  // double rows, ld = rank
  uint16_t* count = nullptr;
  spt_nnz rank = 0;

  // Adds row to row i; a static function of local copies of the
  // pointers, so the compiler keeps them in registers.
  template <int RK>
  static inline void add(T* __restrict f, spt_nnz f_ld, double* __restrict w, uint16_t* __restrict count,
                         spt_nnz rank, spt_nnz i, const T* __restrict row) {
    const spt_nnz R = RK > 0 ? RK : rank;
    if constexpr (std::is_same_v<T, double>) {
      double* __restrict o = w + i * rank;
#pragma omp simd
      for (spt_nnz r = 0; r < R; ++r) o[r] += row[r];
    } else {
      T* __restrict o = f + i * f_ld;
#pragma omp simd
      for (spt_nnz r = 0; r < R; ++r) o[r] += row[r];
      if (++count[i] == kFoldEvery) {
        double* __restrict d = w + i * rank;
#pragma omp simd
        for (spt_nnz r = 0; r < R; ++r) {
          d[r] += o[r];
          o[r] = T(0);
        }
        count[i] = 0;
      }
    }
  }
  // Row i's total in double (double row + float32 partial).
  inline double total(spt_nnz i, spt_nnz r) const {
    if constexpr (std::is_same_v<T, double>) return w[i * rank + r];
    else return w[i * rank + r] + static_cast<double>(f[i * f_ld + r]);
  }
};

// Storage of `copies` RowSums of rows x rank. float64: copy 0 is `out`
// itself when `first_is_out`. float32: copy 0's float32 rows are `out`
// when `first_is_out`. Everything zeroed on the given threads.
template <typename T>
class RowSumsStore {
 public:
  RowSumsStore(MatRef<T> out, int copies, bool first_is_out, int threads)
      : rows_(out.rows),
        rank_(out.cols),
        w_(wide ? copies : copies - (first_is_out ? 1 : 0), checked_mul(rows_, rank_, "HiCOO MTTKRP sums"),
           "HiCOO MTTKRP double sums"),
        f_(wide ? copies - (first_is_out ? 1 : 0) : 0, checked_mul(rows_, rank_, "HiCOO MTTKRP sums"),
           "HiCOO MTTKRP private sums"),
        count_(wide ? copies : 0, rows_, "HiCOO MTTKRP counts") {
    sums_.resize(copies);
    int wi = 0, fi = 0;
    for (int c = 0; c < copies; ++c) {
      RowSums<T>& s = sums_[c];
      s.rank = rank_;
      if constexpr (wide) {
        s.w = w_[wi++];
        s.count = count_[c];
        if (c == 0 && first_is_out) {
          s.f = out.data;
          s.f_ld = out.ld;
        } else {
          s.f = f_[fi++];
          s.f_ld = rank_;
        }
      } else if (c == 0 && first_is_out) {
        s.w = out.data;  // rows ld = rank: callers pass a compact `out` for this
      } else {
        s.w = w_[wi++];
      }
    }
    // Zero everything (out too: it may be copy 0).
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz i = 0; i < rows_; ++i) {
      for (int c = 0; c < copies; ++c) {
        RowSums<T>& s = sums_[c];
        std::fill(s.w + i * rank_, s.w + (i + 1) * rank_, 0.0);
        if constexpr (wide) {
          std::fill(s.f + i * s.f_ld, s.f + i * s.f_ld + rank_, T(0));
          s.count[i] = 0;
        }
      }
    }
  }
  RowSums<T>& operator[](int c) { return sums_[c]; }
  // out = the sum of the copies' totals, rounded to T once.
  void finish(MatRef<T> out, int threads) {
    const int copies = static_cast<int>(sums_.size());
    if (std::is_same_v<T, double> && copies == 1 && sums_[0].w == reinterpret_cast<double*>(out.data)) return;
    parallel_team(threads, [&](int, int) {
      reduce_copies_in_team<0>(
          out, copies, [](spt_nnz, spt_nnz) { return 0.0; },
          [&](double& sum, spt_nnz c, spt_nnz i, spt_nnz r) { sum += sums_[c].total(i, r); });
    });
  }

 private:
  static constexpr bool wide = !std::is_same_v<T, double>;
  spt_nnz rows_, rank_;
  // Each copy's rows on their own cache lines (see CacheLineSlabs).
  CacheLineSlabs<double> w_;
  CacheLineSlabs<T> f_;
  CacheLineSlabs<uint16_t> count_;
  std::vector<RowSums<T>> sums_;
};

// sums += contributions of the nonzeros in [k_lo, k_hi) of blocks
// [blk_begin, blk_end). RK > 0: fixed rank; NO > 0: fixed number of other
// modes. `blocked` holds n_other pointers.
template <typename T, int RK, int NO>
inline void blocks_mttkrp(const HicooOperands<T>& op, spt_nnz blk_begin, spt_nnz blk_end, spt_nnz k_lo,
                          spt_nnz k_hi, RowSums<T>& sums, const T** blocked, T* __restrict scratch) {
  const spt_nnz rank = RK > 0 ? RK : op.rank;
  const uint32_t n_other = NO > 0 ? NO : op.n_other;
  const spt_hicoo_s& x = *op.x;
  const uint32_t b = op.block_bits;
  alignas(64) T fixed_row[RK > 0 ? RK : 1];
  T* __restrict row = RK > 0 ? fixed_row : scratch;
  T* const sf = sums.f;
  const spt_nnz sf_ld = sums.f_ld, srank = sums.rank;
  double* const sw = sums.w;
  uint16_t* const scount = sums.count;
  for (spt_nnz blk = blk_begin; blk < blk_end; ++blk) {
    for (uint32_t j = 0; j < n_other; ++j)
      blocked[j] = op.base[j] + (static_cast<spt_nnz>(op.binds[j][blk]) << b) * op.ld[j];
    const spt_nnz row0 = static_cast<spt_nnz>(op.out_binds[blk]) << b;
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
      RowSums<T>::template add<RK>(sf, sf_ld, sw, scount, srank, row0 + op.out_einds[k], row);
    }
  }
}

// Adds float32 row f into its double row w and zeroes it: out of line and
// rare (once per kFoldEvery additions to a row), so the hot loop keeps its
// registers for itself.
template <int RK>
[[gnu::noinline]] void fold_row(float* __restrict f, double* __restrict w) {
#pragma omp simd
  for (int r = 0; r < RK; ++r) {
    w[r] += f[r];
    f[r] = 0.0f;
  }
}

// p, as one value held in a register: stops the compiler from keeping a
// block's pointers as a shared offset plus separate bases, which needs more
// registers than the hot loop has (SSE2 x86-64: 15 usable).
template <typename P>
inline P in_register(P p) {
#if defined(__GNUC__)
  asm("" : "+r"(p));
#endif
  return p;
}

// blocks_mttkrp for a fixed rank RK and NO other modes when every row
// stride is RK (compact factors and sums): the strides are constants, the
// block's factor and sum pointers are locals the compiler keeps in
// registers, and the fold is a call off the hot path. Same operations, in
// the same order, as blocks_mttkrp.
template <typename T, int RK, int NO>
inline void blocks_mttkrp_compact(const HicooOperands<T>& op, spt_nnz blk_begin, spt_nnz blk_end, spt_nnz k_lo,
                                  spt_nnz k_hi, const RowSums<T>& sums) {
  static_assert(RK > 0 && NO > 0, "fixed rank and order");
  const spt_hicoo_s& x = *op.x;
  const uint32_t b = op.block_bits;
  const T* __restrict val = op.val;
  const uint8_t* __restrict out_e = op.out_einds;
  const uint8_t* ei[NO];
  for (int j = 0; j < NO; ++j) ei[j] = op.einds[j];
  for (spt_nnz blk = blk_begin; blk < blk_end; ++blk) {
    const T* fac[NO];
#pragma GCC unroll 4
    for (int j = 0; j < NO; ++j)
      fac[j] = in_register(op.base[j] + (static_cast<spt_nnz>(op.binds[j][blk]) << b) * RK);
    const spt_nnz row0 = static_cast<spt_nnz>(op.out_binds[blk]) << b;
    double* const wb = sums.w + row0 * RK;
    [[maybe_unused]] T* const fb = std::is_same_v<T, double> ? nullptr : in_register(sums.f + row0 * RK);
    [[maybe_unused]] uint16_t* const cb = std::is_same_v<T, double> ? nullptr : in_register(sums.count + row0);
    const spt_nnz end = std::min(x.bptr[blk + 1], k_hi);
    for (spt_nnz k = std::max(x.bptr[blk], k_lo); k < end; ++k) {
      const T v = val[k];
      T row[RK];
      const T* __restrict f = fac[0] + static_cast<spt_nnz>(ei[0][k]) * RK;
#pragma omp simd
      for (int r = 0; r < RK; ++r) row[r] = v * f[r];
#pragma GCC unroll 4
      for (int j = 1; j < NO; ++j) {
        const T* __restrict g = fac[j] + static_cast<spt_nnz>(ei[j][k]) * RK;
#pragma omp simd
        for (int r = 0; r < RK; ++r) row[r] *= g[r];
      }
      const spt_nnz e = out_e[k];
      if constexpr (std::is_same_v<T, double>) {
        double* __restrict o = wb + e * RK;
#pragma omp simd
        for (int r = 0; r < RK; ++r) o[r] += row[r];
      } else {
        T* __restrict o = fb + e * RK;
#pragma omp simd
        for (int r = 0; r < RK; ++r) o[r] += row[r];
        if (__builtin_expect(++cb[e] == kFoldEvery, 0)) {
          fold_row<RK>(o, wb + e * RK);
          cb[e] = 0;
        }
      }
    }
  }
}

// Whether blocks_mttkrp_compact applies: fixed rank and order, every
// factor's and the sums' rows RK apart.
template <typename T, int RK, int NO>
bool compact_rows(const HicooOperands<T>& op, const RowSums<T>& sums) {
  if constexpr (RK == 0 || NO == 0) {
    return false;
  } else {
    for (uint32_t j = 0; j < op.n_other; ++j)
      if (op.ld[j] != RK) return false;
    return std::is_same_v<T, double> || sums.f_ld == RK;
  }
}

template <typename T, int RK, int NO>
inline void superblock_mttkrp(const HicooOperands<T>& op, spt_nnz s, RowSums<T>& sums, const T** blocked,
                              T* scratch) {
  if constexpr (RK > 0 && NO > 0) {
    if (compact_rows<T, RK, NO>(op, sums)) {
      blocks_mttkrp_compact<T, RK, NO>(op, op.x->sptr[s], op.x->sptr[s + 1], 0, op.x->nnz, sums);
      return;
    }
  }
  blocks_mttkrp<T, RK, NO>(op, op.x->sptr[s], op.x->sptr[s + 1], 0, op.x->nnz, sums, blocked, scratch);
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

// float64 sums straight into `out` when its rows are compact (ld = rank).
template <typename T>
bool out_takes_sums(MatRef<T> out) {
  return !std::is_same_v<T, double> || out.ld == out.cols;
}

template <typename T, int RK, int NO>
void mttkrp_sequential(const HicooOperands<T>& op, MatRef<T> out) {
  RowSumsStore<T> sums(out, 1, out_takes_sums(out), 1);
  ThreadScratch<T> ws(1, op);
  for (spt_nnz s = 0; s < op.x->num_superblocks(); ++s)
    superblock_mttkrp<T, RK, NO>(op, s, sums[0], ws.blocked(0), ws.row(0));
  sums.finish(out, 1);
}

template <typename T, int RK, int NO>
void mttkrp_direct(const HicooOperands<T>& op, const HicooModeSchedule& sched, MatRef<T> out, int threads) {
  RowSumsStore<T> sums(out, 1, out_takes_sums(out), threads);
  const spt_nnz slabs = sched.slabs();
  ThreadScratch<T> ws(threads, op);
  RowSums<T>& shared = sums[0];
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    RowSums<T> mine = shared;  // slabs own disjoint rows: the same arrays
#pragma omp for schedule(dynamic, 1)
    for (spt_nnz i = 0; i < slabs; ++i)
      for (spt_nnz q = sched.slab_ptr[i]; q < sched.slab_ptr[i + 1]; ++q)
        superblock_mttkrp<T, RK, NO>(op, sched.superblocks[q], mine, ws.blocked(t), ws.row(t));
  }
  sums.finish(out, threads);
}

// Private sums per thread (thread 0's float32 rows are `out`), added at
// the end.
template <typename T, int RK, int NO>
void mttkrp_privatized(const HicooOperands<T>& op, MatRef<T> out, int threads) {
  const spt_hicoo_s& x = *op.x;
  RowSumsStore<T> sums(out, threads, out_takes_sums(out), threads);
  // Equal nonzero ranges (a few per thread), cut at
  // any nonzero: with private outputs nothing forces whole superblocks, and
  // a tensor of few large blocks still splits evenly.
  const int tasks = threads * 4;
  ThreadScratch<T> ws(threads, op);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    RowSums<T>& mine = sums[t];
    // Static round-robin: each thread's copy sums the same ranges in the
    // same order on every call, so results are bit-reproducible for a
    // fixed thread count (CP-ALS promises that); ranges are equal in nnz.
#pragma omp for schedule(static, 1)
    for (int c = 0; c < tasks; ++c) {
      const spt_nnz lo = chunk_begin(x.nnz, c, tasks), hi = chunk_begin(x.nnz, c + 1, tasks);
      if (lo == hi) continue;
      const BlockSpan blocks = blocks_holding(x.bptr, lo, hi);
      if constexpr (RK > 0 && NO > 0) {
        if (compact_rows<T, RK, NO>(op, mine)) {
          blocks_mttkrp_compact<T, RK, NO>(op, blocks.first, blocks.last, lo, hi, mine);
          continue;
        }
      }
      blocks_mttkrp<T, RK, NO>(op, blocks.first, blocks.last, lo, hi, mine, ws.blocked(t), ws.row(t));
    }
  }
  sums.finish(out, threads);
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
  const HicooOperands<T> op(x, factors, mode, out.cols);
  if (op.rank == 0) return;
  const int threads = threads_for_nonzeros(exec, x.nnz);
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

}  // namespace spt::kernels::SPT_CPU_VARIANT
