// Parallel sorting, grouping and duplicate handling for COO tensors (OpenMP).
// In core because the format builders (CSF, HiCOO, F-COO, HB-CSF, HLS) sort
// their input. Used by spt_coo_sort / sort_morton / coalesce and by the CPU
// kernels that need sorted input (TTV, TTM, elementwise, unfolding). All functions run
// their parallel regions with exec.threads threads and never throw from
// inside them.
#pragma once

#include <vector>

#include "core/buffer.hpp"
#include "core/coo.hpp"
#include "core/exec.hpp"

namespace spt::sorting {

// The identity mode order 0, 1, ..., order-1.
std::vector<uint32_t> natural_order(uint32_t order);

// Throws INVALID_ARGUMENT unless mode_order is a permutation of 0..order-1.
void check_mode_order(uint32_t order, const std::vector<uint32_t>& mode_order);

// Permutation p such that x[p[0]], x[p[1]], ... is sorted lexicographically
// comparing modes in `mode_order` (a prefix of a permutation is allowed:
// modes not named are ignored). Stable: ties keep their original order.
buffer<spt_nnz> sort_permutation(const Exec& exec, const spt_coo_s& x, const std::vector<uint32_t>& mode_order);

// Permutation into Z-Morton order: bits of all modes interleaved, most
// significant first, mode 0 taking the highest bit of each level. Compares
// by the most significant differing bit, so no wide key is built (works for
// any order with 32-bit indices). Stable.
buffer<spt_nnz> morton_permutation(const Exec& exec, const spt_coo_s& x);

// New owning tensor y with y[k] = x[perm[k]] (x may be a view). sorted_by is
// left empty; callers set it.
spt_coo_s permuted_copy(const Exec& exec, const spt_coo_s& x, const buffer<spt_nnz>& perm);

// Reorder an owning tensor in place by `perm` (x[k] <- old x[perm[k]]).
void apply_permutation(const Exec& exec, spt_coo_s& x, const buffer<spt_nnz>& perm);

// Sort an owning tensor in place (lexicographic in mode_order, a full
// permutation); records sorted_by. Skips the work when already sorted so.
void sort_in_place(const Exec& exec, spt_coo_s& x, const std::vector<uint32_t>& mode_order);

// Z-Morton sort of an owning tensor in place (sorted_by cleared).
void sort_morton_in_place(const Exec& exec, spt_coo_s& x);

// A tensor sorted in `mode_order`: x itself when x.sorted_by already says
// so, else a sorted owning copy. Keeps kernels from copying sorted input.
class SortedView {
 public:
  SortedView(const Exec& exec, const spt_coo_s& x, const std::vector<uint32_t>& mode_order);
  const spt_coo_s& get() const { return *tensor_; }
  // True when get() is the view's own sorted copy (not the input).
  bool is_copy() const { return tensor_ == &copy_; }
  // Move the sorted copy out (only when is_copy()).
  spt_coo_s release() { return std::move(copy_); }
  SortedView(const SortedView&) = delete;
  SortedView& operator=(const SortedView&) = delete;

 private:
  spt_coo_s copy_;
  const spt_coo_s* tensor_;
};

// Start offsets of the runs of equal coordinates in `modes` of a tensor
// sorted with those modes leading, plus a final entry x.nnz. For nnz = 0
// the result is {0}.
buffer<spt_nnz> group_starts(const Exec& exec, const spt_coo_s& x, const std::vector<uint32_t>& modes);

// The fibers of x along `mode`: nonzeros sorted with `mode` last, grouped
// by their coordinates in the other modes. Fiber f is the nonzero range
// [starts()[f], starts()[f+1]) of sorted(). Shared by TTV and TTM.
class ModeFibers {
 public:
  ModeFibers(const Exec& exec, const spt_coo_s& x, uint32_t mode)
      : others_(modes_except(x.order(), mode)),
        view_(exec, x, with_last(others_, mode)),
        starts_(group_starts(exec, view_.get(), others_)) {}
  const std::vector<uint32_t>& other_modes() const { return others_; }
  const spt_coo_s& sorted() const { return view_.get(); }
  const buffer<spt_nnz>& starts() const { return starts_; }
  spt_nnz count() const { return starts_.size() - 1; }

 private:
  static std::vector<uint32_t> modes_except(uint32_t order, uint32_t mode) {
    std::vector<uint32_t> m;
    for (uint32_t i = 0; i < order; ++i)
      if (i != mode) m.push_back(i);
    return m;
  }
  static std::vector<uint32_t> with_last(std::vector<uint32_t> modes, uint32_t mode) {
    modes.push_back(mode);
    return modes;
  }
  std::vector<uint32_t> others_;
  SortedView view_;
  buffer<spt_nnz> starts_;
};

// Merge repeated coordinates of an owning tensor: SUM adds them, REJECT
// throws INVALID_ARGUMENT naming the first repeated coordinate (leaving x
// untouched), KEEP does nothing. SUM/REJECT leave x sorted 0..N-1.
void coalesce(const Exec& exec, spt_coo_s& x, spt_duplicates policy);

// Sorted (0..N-1), duplicate-summed owning copy of x (x may be a view).
spt_coo_s coalesced_copy(const Exec& exec, const spt_coo_s& x);

// Norm and distinct coordinates of the tensor x stands for (repeated
// coordinates summed), without changing x: a linear pass when x is sorted
// (known from sorted_by or checked), else over a sorted permutation.
SummedStats summed_stats(const Exec& exec, const spt_coo_s& x);

}  // namespace spt::sorting
