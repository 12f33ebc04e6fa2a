// Pieces the CPU MTTKRPs (and CP-APR's Phi) share: the fixed-rank
// dispatch, the thread count for small tensors, equal splits of the
// nonzeros, the HiCOO operands, the parallel region with its team,
// per-thread arrays on their own cache lines and the zeroing and reduction
// of privatised outputs, each thread's product row, and the rows of runs
// split between tasks.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/buffer.hpp"
#include "core/group_starts.hpp"
#include "core/hicoo.hpp"
#include "core/matrix.hpp"
#include "kernels/kernels.hpp"
#include "kernels/cpu/variant.hpp"
#include "sptensor/sptensor.h"

SPT_CPU_VARIANT_HEADER_BEGIN
namespace spt::kernels::SPT_CPU_VARIANT {

// Calls f(std::integral_constant<int, RK>{}) with RK = rank for the ranks
// that get fixed-size row loops (8, 16, 32, 64), else RK = 0 (any rank).
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

// exec's threads, but no more than one per 2048 nonzeros: small tensors are
// not worth waking threads for.
inline int threads_for_nonzeros(const Exec& exec, spt_nnz nnz) {
  return static_cast<int>(std::max<spt_nnz>(1, std::min<spt_nnz>(std::max(exec.threads, 1), nnz / 2048 + 1)));
}

// Where part `part` of `parts` equal ranges of n items begins (part = parts
// gives n): chunk_begin(n, part, parts), core/group_starts.hpp.
using sorting::chunk_begin;

// The blocks [first, last) holding items lo..hi-1 (lo < hi), where block b
// holds items [bptr[b], bptr[b + 1]).
struct BlockSpan {
  spt_nnz first = 0, last = 0;
};
template <typename Offsets>
BlockSpan blocks_holding(const Offsets& bptr, spt_nnz lo, spt_nnz hi) {
  return {static_cast<spt_nnz>(std::upper_bound(bptr.begin(), bptr.end(), lo) - bptr.begin() - 1),
          static_cast<spt_nnz>(std::lower_bound(bptr.begin(), bptr.end(), hi) - bptr.begin())};
}

// A HiCOO tensor's arrays for a kernel whose output is `mode`: the output
// mode's block and element indices, and per other mode (increasing order)
// its indices and factor matrix.
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

  HicooOperands(const spt_hicoo_s& t, const ConstMatRef<T>* factors, uint32_t mode, spt_nnz rank_)
      : x(&t), rank(rank_), block_bits(t.block_bits), val(t.values<T>()), out_binds(t.binds[mode].data()),
        out_einds(t.einds[mode].data()) {
    for (uint32_t m = 0; m < t.order(); ++m) {
      if (m == mode) continue;
      binds.push_back(t.binds[m].data());
      einds.push_back(t.einds[m].data());
      base.push_back(factors[m].data);
      ld.push_back(factors[m].ld);
    }
    n_other = static_cast<uint32_t>(binds.size());
  }
};

// Runs body(t, team) on every thread of a parallel region of up to
// `threads` (team: the threads it got). The body may hold worksharing
// directives (omp for, barrier): they bind to this region.
template <typename Body>
void parallel_team(int threads, Body&& body) {
#pragma omp parallel num_threads(threads)
  body(omp_get_thread_num(), omp_get_num_threads());
}

// `copies` arrays of `count` Us each (one per thread), each starting on its
// own cache line and padded to whole lines, so no two threads' arrays share
// a line: a thread's last rows and the next thread's first rows otherwise
// do when the arrays are packed back to back, and on a small output every
// addition (or fold) to those rows moves the line between cores.
// Uninitialised; `what` names the arrays in an overflow error.
template <typename U>
class CacheLineSlabs {
 public:
  static constexpr size_t kLine = 64;
  CacheLineSlabs(uint64_t copies, uint64_t count, const char* what)
      : stride_(round_up(checked_mul(std::max<uint64_t>(count, 1), sizeof(U), what)) / sizeof(U)),
        store_(checked_add(checked_mul(copies, stride_, what), kLine / sizeof(U), what)) {
    static_assert(kLine % sizeof(U) == 0, "whole elements per cache line");
    const uintptr_t at = reinterpret_cast<uintptr_t>(store_.data());
    first_ = store_.data() + (round_up(at) - at) / sizeof(U);
  }
  U* operator[](uint64_t c) { return first_ + c * stride_; }
  uint64_t stride() const { return stride_; }

 private:
  static uint64_t round_up(uint64_t bytes) { return (bytes + kLine - 1) / kLine * kLine; }
  uint64_t stride_;
  buffer<U> store_;
  U* first_ = nullptr;
};

// Inside a parallel region: the team zeroes rows 0..rows-1 (`width` elements
// each) of copies 0..copies-1 of `slabs`, rows split statically (each
// thread first touches the rows it later reduces).
template <typename U>
void zero_rows_in_team(CacheLineSlabs<U>& slabs, spt_nnz copies, spt_nnz rows, spt_nnz width) {
#pragma omp for schedule(static)
  for (spt_nnz i = 0; i < rows; ++i)
    for (spt_nnz c = 0; c < copies; ++c) std::fill(slabs[c] + i * width, slabs[c] + (i + 1) * width, U(0));
}

// Inside a parallel region: the team reduces private copies into `out`,
// rows split statically. Each element starts from start(i, r) in double,
// takes add(sum, c, i, r) for copies c = 0..copies-1 in that order (so the
// rounding does not depend on the team), and is rounded to T once.
// RK > 0: the rank, fixed at compile time.
template <int RK, typename T, typename Start, typename Add>
void reduce_copies_in_team(MatRef<T> out, spt_nnz copies, Start&& start, Add&& add) {
  const spt_nnz rank = RK > 0 ? RK : out.cols;
#pragma omp for schedule(static)
  for (spt_nnz i = 0; i < out.rows; ++i) {
    T* __restrict o = out.row(i);
    for (spt_nnz r = 0; r < rank; ++r) {
      double sum = start(i, r);
      for (spt_nnz c = 0; c < copies; ++c) add(sum, c, i, r);
      o[r] = static_cast<T>(sum);
    }
  }
}

// The row a thread forms a nonzero's product in: a fixed-size array for a
// compile-time rank RK, else the thread's part of a threads x rank buffer
// made before the parallel region (it allocates).
template <typename T, int RK>
class ProductRow {
 public:
  class Scratch {
   public:
    Scratch(int threads, spt_nnz rank) : rows_(RK > 0 ? 0 : threads, rank, "MTTKRP product rows") {}

   private:
    friend class ProductRow;
    CacheLineSlabs<T> rows_;  // each thread's row on its own cache lines
  };
  ProductRow(Scratch& s, int t) : ptr_(RK > 0 ? fixed_ : s.rows_[t]) {}
  ProductRow(const ProductRow&) = delete;
  ProductRow& operator=(const ProductRow&) = delete;
  T* get() { return ptr_; }

 private:
  alignas(64) T fixed_[RK > 0 ? RK : 1];
  T* ptr_;
};

// Output rows whose run was split between tasks: slot s (rank doubles at
// edge + s * out.cols) holds a part of row edge_row[s] when edge_used[s].
// The parts of a row are in consecutive used slots (rows ascend with the
// slots) and no task stored the row: sum them in double, round once.
template <typename T>
void store_edge_rows(double* edge, const std::vector<spt_index>& edge_row, const std::vector<char>& edge_used,
                     MatRef<T> out) {
  const spt_nnz rank = out.cols;
  for (size_t slot = 0; slot < edge_used.size();) {
    if (!edge_used[slot]) {
      ++slot;
      continue;
    }
    const spt_index i = edge_row[slot];
    double* sum = edge + slot * rank;
    size_t next = slot + 1;
    for (; next < edge_used.size(); ++next) {
      if (!edge_used[next]) continue;
      if (edge_row[next] != i) break;
      const double* e = edge + next * rank;
      for (spt_nnz r = 0; r < rank; ++r) sum[r] += e[r];
    }
    T* o = out.row(i);
    for (spt_nnz r = 0; r < rank; ++r) o[r] = static_cast<T>(sum[r]);
    slot = next;
  }
}

}  // namespace spt::kernels::SPT_CPU_VARIANT
SPT_CPU_VARIANT_HEADER_END
