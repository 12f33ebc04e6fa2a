// Pieces the CPU MTTKRPs share: the parallel region with its team, each
// thread's product row, the spacing of per-thread fold counts, and the rows
// of runs split between tasks.
#pragma once

#include <omp.h>

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

// Entries from one thread's fold counts (one per output row) to the next
// thread's: the rows plus a cache line, so no two threads share a line
// (each updates its counts at every addition; on a small output all
// threads' counts would otherwise sit in one or two lines).
inline uint64_t fold_count_stride(uint64_t rows) { return rows + 64 / sizeof(uint16_t); }

// The row a thread forms a nonzero's product in: a fixed-size array for a
// compile-time rank RK, else the thread's part of a threads x rank buffer
// made before the parallel region (it allocates).
template <typename T, int RK>
class ProductRow {
 public:
  class Scratch {
   public:
    Scratch(int threads, spt_nnz rank) : rank_(rank), rows_(RK > 0 ? 0 : static_cast<size_t>(threads) * rank) {}

   private:
    friend class ProductRow;
    spt_nnz rank_;
    buffer<T> rows_;
  };
  ProductRow(Scratch& s, int t) : ptr_(RK > 0 ? fixed_ : s.rows_.data() + static_cast<size_t>(t) * s.rank_) {}
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
