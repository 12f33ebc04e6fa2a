#include "reorder/lexi_order.hpp"

#include <algorithm>

#include "core/bits.hpp"
#include "core/error.hpp"
#include "core/radix_sort.hpp"
#include "core/sort.hpp"
#include "reorder/partition_refinement.hpp"

namespace spt::reorder {

namespace {

int threads_for(spt_nnz work, int threads) { return threads_for_work(threads, work, 16384); }

// The tensor's coordinates under their current labels, updated mode by mode
// (the values are not needed). `view` lets the shared COO sort read them.
class WorkingCoordinates {
 public:
  WorkingCoordinates(const spt_coo_s& x, int threads) : ind_(x.order()) {
    const spt_nnz n = x.nnz;
    for (uint32_t m = 0; m < x.order(); ++m) {
      ind_[m].resize(n);
      const spt_index* src = x.ind[m];
      spt_index* dst = ind_[m].data();
#pragma omp parallel for num_threads(threads_for(n, threads)) schedule(static)
      for (spt_nnz k = 0; k < n; ++k) dst[k] = src[k];
    }
    view_.dims = x.dims;
    view_.nnz = n;
    view_.read_only = true;
    for (auto& a : ind_) view_.ind.push_back(a.data());
  }
  const spt_coo_s& view() const { return view_; }
  spt_index* mode(uint32_t m) { return ind_[m].data(); }

 private:
  std::vector<buffer<spt_index>> ind_;
  spt_coo_s view_;
};

// Feed X_(n) to the refiner row by row, from coordinates packed into one
// 64-bit key each: the other modes (lowest mode in the highest bits), then
// mode n in the lowest bits. Sorting by the bits above mode n's puts the rows
// in lexicographic order; the order of columns inside a row does not matter
// to the refiner (which also drops repeats), so those bits are not sorted.
// `keys` and `scratch` are reused across modes and iterations.
void refine_packed(const spt_coo_s& x, uint32_t n, int threads, buffer<uint64_t>& keys, buffer<uint64_t>& scratch,
                   PartitionRefiner& refiner) {
  const uint32_t order = x.order();
  const spt_nnz nnz = x.nnz;
  std::vector<int> width(order);
  int total_bits = 0;
  for (uint32_t m = 0; m < order; ++m) total_bits += width[m] = bit_width(x.dims[m] - 1);
  std::vector<uint32_t> others;
  for (uint32_t m = 0; m < order; ++m)
    if (m != n) others.push_back(m);
  std::vector<const spt_index*> ind(order);
  for (uint32_t m = 0; m < order; ++m) ind[m] = x.ind[m];

  keys.resize(nnz);
  uint64_t* key_data = keys.data();
#pragma omp parallel for num_threads(threads_for(nnz, threads)) schedule(static)
  for (spt_nnz k = 0; k < nnz; ++k) {
    uint64_t key = 0;
    for (uint32_t m : others) key = (key << width[m]) | ind[m][k];
    key_data[k] = (key << width[n]) | ind[n][k];
  }
  sorting::radix_sort(keys, scratch, width[n], total_bits, threads);

  const int shift = width[n];
  const uint64_t column_mask = shift == 0 ? 0 : (~uint64_t(0) >> (64 - shift));
  uint64_t row = 0;
  for (spt_nnz k = 0; k < nnz; ++k) {
    const uint64_t key = keys[k];
    const uint64_t key_row = key >> shift;
    if (k == 0 || key_row != row) {
      refiner.begin_row();
      row = key_row;
    }
    refiner.touch(static_cast<spt_index>(key & column_mask));
  }
}

// Same, for coordinates too wide for one key: a stable comparison sort by
// the other modes.
void refine_compared(const spt_coo_s& x, uint32_t n, int threads, PartitionRefiner& refiner) {
  const uint32_t order = x.order();
  std::vector<uint32_t> mode_order;
  for (uint32_t m = 0; m < order; ++m)
    if (m != n) mode_order.push_back(m);
  const buffer<spt_nnz> sorted = sorting::sort_permutation(Exec{threads}, x, mode_order);
  auto same_row = [&](spt_nnz a, spt_nnz b) {
    for (uint32_t m = 0; m < order; ++m)
      if (m != n && x.ind[m][a] != x.ind[m][b]) return false;
    return true;
  };
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    const spt_nnz e = sorted[k];
    if (k == 0 || !same_row(e, sorted[k - 1])) refiner.begin_row();
    refiner.touch(x.ind[n][e]);
  }
}

}  // namespace

std::vector<Permutation> lexi_order(const spt_coo_s& x, int iterations, int threads) {
  require(iterations >= 1, "LEXI-ORDER needs at least 1 iteration, got ", iterations);
  const uint32_t order = x.order();
  int total_bits = 0;
  for (uint32_t m = 0; m < order; ++m) total_bits += bit_width(x.dims[m] - 1);

  std::vector<Permutation> perm(order);  // original index -> current label
  for (uint32_t m = 0; m < order; ++m) perm[m] = identity(x.dims[m]);
  if (x.nnz == 0) return perm;
  WorkingCoordinates work(x, threads);
  buffer<uint64_t> keys, scratch;  // packed-key path, reused by every mode

  for (int it = 0; it < iterations; ++it) {
    bool changed = false;
    for (uint32_t n = 0; n < order; ++n) {
      PartitionRefiner refiner(x.dims[n]);
      if (total_bits <= 64) refine_packed(work.view(), n, threads, keys, scratch, refiner);
      else refine_compared(work.view(), n, threads, refiner);
      const Permutation new_label = refiner.finish();
      if (is_identity(new_label)) continue;
      changed = true;
      spt_index* coords = work.mode(n);
      const spt_index* relabel = new_label.data();
#pragma omp parallel for num_threads(threads_for(x.nnz, threads)) schedule(static)
      for (spt_nnz k = 0; k < x.nnz; ++k) coords[k] = relabel[coords[k]];
      for (spt_index& label : perm[n]) label = relabel[label];
    }
    if (!changed) break;  // a fixed point: further iterations change nothing
  }
  return perm;
}

}  // namespace spt::reorder
