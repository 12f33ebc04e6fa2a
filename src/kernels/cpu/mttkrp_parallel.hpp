// Pieces the CPU MTTKRPs share: the parallel region with its team, each
// thread's product row, per-thread arrays on their own cache lines, and the rows
// of runs split between tasks.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/buffer.hpp"
#include "core/matrix.hpp"
#include "sptensor/sptensor.h"

namespace spt::kernels::cpu {

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

}  // namespace spt::kernels::cpu
