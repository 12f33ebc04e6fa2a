// CP-APR's Phi kernel on HiCOO, OpenMP.
//
// Per nonzero the work is the COO kernel's (cp_apr_phi.cpp): Pi's row is
// the Hadamard product of the other factors' rows (in T, modes in
// increasing order), the model value <A(i,:), Pi> is summed in double with
// the same four interleaved partial sums, and w * Pi is added to Phi's row
// i in double. What HiCOO changes is locality: inside a block every factor
// row (A's too) is one of B consecutive rows, addressed by 8-bit element
// indices, and the nonzeros stream with 1 byte per mode instead of 4.
//
// Race avoidance reuses the HiCOO MTTKRP's superblock schedule (§4.3.2):
//  - direct: superblocks grouped by mode slab; slabs write disjoint Phi
//    rows, so each slab is a task and its superblocks run in schedule order;
//  - privatized (short modes with few slabs, or one slab holding most of
//    the work): kPhiChunks equal nonzero ranges each accumulate into their
//    own dims[mode] x R double buffer, summed in chunk order.
// Both fix the order in which every Phi entry's terms are added
// independently of the thread count (direct: each row's superblocks in
// Morton order, whatever L is), and the choice between them depends on
// neither the thread count nor L (which the HiCOO build picks per thread
// count), so Phi (and a whole CP-APR run) is bitwise the same on 1, 2 or 64
// threads -- the property the COO path has.
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

// Nonzero ranges of the privatized strategy (independent of the thread count).
constexpr int kPhiChunks = 16;
// Privatize modes spanning fewer blocks than this: whatever L is, they
// have at most that many slabs, too few tasks for the direct strategy.
constexpr spt_nnz kPhiMinBlockRows = 16;

// The MTTKRP's operands (the other modes multiplied into Pi, in increasing
// order) plus A = factors[mode].
template <typename T>
struct PhiOperands : HicooOperands<T> {
  ConstMatRef<T> a;
  PhiOperands(const spt_hicoo_s& t, const ConstMatRef<T>* factors, uint32_t mode, spt_nnz rank_)
      : HicooOperands<T>(t, factors, mode, rank_), a(factors[mode]) {}
};

// acc rows (ld = rank, double) += Phi contributions of the nonzeros in
// [k_lo, k_hi) of blocks [blk_begin, blk_end). RK > 0: rank fixed at compile
// time. `blocked` holds n_other pointers; `scratch` 2 * rank T/double slots.
template <typename T, int RK>
void phi_blocks(const PhiOperands<T>& op, spt_nnz blk_begin, spt_nnz blk_end, spt_nnz k_lo, spt_nnz k_hi,
                double* __restrict acc, double eps, const T** blocked, T* __restrict pi_scratch,
                double* __restrict pid_scratch) {
  const spt_nnz rank = RK > 0 ? RK : op.rank;
  const spt_hicoo_s& x = *op.x;
  const uint32_t b = op.block_bits;
  T pi_fixed[RK > 0 ? RK : 1];
  double pid_fixed[RK > 0 ? RK : 1];
  T* __restrict pi = RK > 0 ? pi_fixed : pi_scratch;
  double* __restrict pid = RK > 0 ? pid_fixed : pid_scratch;
  for (spt_nnz blk = blk_begin; blk < blk_end; ++blk) {
    for (uint32_t j = 0; j < op.n_other; ++j)
      blocked[j] = op.base[j] + (static_cast<spt_nnz>(op.binds[j][blk]) << b) * op.ld[j];
    const spt_nnz out_row0 = static_cast<spt_nnz>(op.out_binds[blk]) << b;
    const T* ablk = op.a.data + out_row0 * op.a.ld;
    double* accb = acc + out_row0 * rank;
    const spt_nnz end = std::min(x.bptr[blk + 1], k_hi);
    for (spt_nnz k = std::max(x.bptr[blk], k_lo); k < end; ++k) {
      const T* f0 = blocked[0] + static_cast<spt_nnz>(op.einds[0][k]) * op.ld[0];
      for (spt_nnz r = 0; r < rank; ++r) pi[r] = f0[r];
      for (uint32_t j = 1; j < op.n_other; ++j) {
        const T* g = blocked[j] + static_cast<spt_nnz>(op.einds[j][k]) * op.ld[j];
        for (spt_nnz r = 0; r < rank; ++r) pi[r] *= g[r];
      }
      for (spt_nnz r = 0; r < rank; ++r) pid[r] = static_cast<double>(pi[r]);
      const spt_nnz e = op.out_einds[k];
      const T* ai = ablk + e * op.a.ld;
      // Four interleaved partial sums, as the COO kernel (same rounding).
      double s[4] = {0, 0, 0, 0};
      spt_nnz r = 0;
      for (; r + 4 <= rank; r += 4)
        for (int q = 0; q < 4; ++q) s[q] += static_cast<double>(ai[r + q]) * pid[r + q];
      for (; r < rank; ++r) s[0] += static_cast<double>(ai[r]) * pid[r];
      const double v = (s[0] + s[1]) + (s[2] + s[3]);
      const double w = static_cast<double>(op.val[k]) / std::max(v, eps);
      double* __restrict o = accb + e * rank;
#pragma omp simd
      for (spt_nnz q = 0; q < rank; ++q) o[q] += w * pid[q];
    }
  }
}

// Per-thread scratch, allocated before the parallel regions (nothing
// inside them may throw).
template <typename T>
struct PhiScratch {
  PhiScratch(int threads, const PhiOperands<T>& op)
      : per_ptrs(std::max<size_t>(op.n_other, 1)), per_row(std::max<size_t>(op.rank, 1)),
        ptrs(static_cast<size_t>(threads) * per_ptrs), pi(static_cast<size_t>(threads) * per_row),
        pid(static_cast<size_t>(threads) * per_row) {}
  const T** blocked(int t) { return ptrs.data() + static_cast<size_t>(t) * per_ptrs; }
  T* pi_row(int t) { return pi.data() + static_cast<size_t>(t) * per_row; }
  double* pid_row(int t) { return pid.data() + static_cast<size_t>(t) * per_row; }
  size_t per_ptrs, per_row;
  std::vector<const T*> ptrs;
  buffer<T> pi;
  buffer<double> pid;
};

template <typename T, int RK>
void phi_direct(const PhiOperands<T>& op, const HicooModeSchedule& sched, double eps, MatRef<T> phi, int threads) {
  const spt_hicoo_s& x = *op.x;
  const spt_nnz rank = op.rank, rows = phi.rows;
  // A contiguous double Phi is its own accumulator; otherwise (float, or
  // padded rows) a dense double one is converted at the end.
  const bool in_place = std::is_same_v<T, double> && phi.ld == rank;
  buffer<double> acc_store(in_place ? 0 : checked_mul(rows, rank, "CP-APR Phi accumulator"));
  double* acc = in_place ? reinterpret_cast<double*>(phi.data) : acc_store.data();
  PhiScratch<T> ws(threads, op);
  const spt_nnz slabs = sched.slabs();
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
#pragma omp for schedule(static)
    for (spt_nnz i = 0; i < rows * rank; ++i) acc[i] = 0.0;
#pragma omp for schedule(dynamic, 1)
    for (spt_nnz i = 0; i < slabs; ++i)
      for (spt_nnz q = sched.slab_ptr[i]; q < sched.slab_ptr[i + 1]; ++q) {
        const spt_nnz s = sched.superblocks[q];
        phi_blocks<T, RK>(op, x.sptr[s], x.sptr[s + 1], 0, x.nnz, acc, eps, ws.blocked(t), ws.pi_row(t),
                          ws.pid_row(t));
      }
    if (!in_place) {
#pragma omp for schedule(static)
      for (spt_nnz i = 0; i < rows; ++i)
        for (spt_nnz r = 0; r < rank; ++r) phi(i, r) = static_cast<T>(acc[i * rank + r]);
    }
  }
}

template <typename T, int RK>
void phi_privatized(const PhiOperands<T>& op, double eps, MatRef<T> phi, int threads) {
  const spt_hicoo_s& x = *op.x;
  const spt_nnz rank = op.rank, rows = phi.rows, slab = checked_mul(rows, rank, "CP-APR Phi accumulator");
  // Each chunk's accumulator on its own cache lines (see CacheLineSlabs).
  CacheLineSlabs<double> priv(kPhiChunks, slab, "CP-APR Phi private accumulators");
  PhiScratch<T> ws(threads, op);
  parallel_team(threads, [&](int t, int) {
    zero_rows_in_team(priv, kPhiChunks, rows, rank);
#pragma omp for schedule(dynamic, 1)
    for (int c = 0; c < kPhiChunks; ++c) {
      const spt_nnz lo = chunk_begin(x.nnz, c, kPhiChunks), hi = chunk_begin(x.nnz, c + 1, kPhiChunks);
      if (lo == hi) continue;
      const BlockSpan blocks = blocks_holding(x.bptr, lo, hi);
      phi_blocks<T, RK>(op, blocks.first, blocks.last, lo, hi, priv[c], eps, ws.blocked(t), ws.pi_row(t),
                        ws.pid_row(t));
    }
    // Chunk order is fixed: the sum is independent of the thread count.
    reduce_copies_in_team<RK>(
        phi, kPhiChunks, [](spt_nnz, spt_nnz) { return 0.0; },
        [&](double& sum, spt_nnz c, spt_nnz i, spt_nnz r) { sum += priv[c][i * rank + r]; });
  });
}

template <typename T>
void phi_hicoo_impl(const Exec& exec, const spt_hicoo_s& x, uint32_t mode, const ConstMatRef<T>* factors, double eps,
                    MatRef<T> phi) {
  const PhiOperands<T> op(x, factors, mode, phi.cols);
  if (op.rank == 0) return;
  // No effect on results (see the top of this file).
  const int threads = threads_for_nonzeros(exec, x.nnz);
  // Strategy, independent of the thread count and of L: the caller's forced
  // choice, else privatized for modes spanning few blocks (few slabs for
  // any L) when kPhiChunks private copies of Phi stay small next to the
  // nonzeros, else direct.
  HicooStrategy strategy = x.strategy;
  if (exec.mttkrp_strategy == MttkrpStrategy::privatized) strategy = HicooStrategy::privatized;
  if (strategy == HicooStrategy::automatic) {
    const spt_nnz block_rows = ((static_cast<spt_nnz>(x.dims[mode]) - 1) >> x.block_bits) + 1;
    const bool copies_cheap = spt_nnz(2) * kPhiChunks * x.dims[mode] <= x.nnz;
    strategy = block_rows < kPhiMinBlockRows && copies_cheap ? HicooStrategy::privatized : HicooStrategy::direct;
  }
  with_rank(op.rank, [&](auto rk) {
    constexpr int RK = decltype(rk)::value;
    if (strategy == HicooStrategy::privatized) phi_privatized<T, RK>(op, eps, phi, threads);
    else phi_direct<T, RK>(op, x.schedule[mode], eps, phi, threads);
  });
}

}  // namespace

#define SPT_INSTANTIATE(T)                                                                                      \
  void cp_apr_phi_hicoo(const Exec& exec, const spt_hicoo_s& x, uint32_t mode, const ConstMatRef<T>* factors, \
                        double eps, MatRef<T> phi) {                                                            \
    phi_hicoo_impl<T>(exec, x, mode, factors, eps, phi);                                                        \
  }

SPT_INSTANTIATE(float)
SPT_INSTANTIATE(double)
#undef SPT_INSTANTIATE

}  // namespace spt::kernels::SPT_CPU_VARIANT
