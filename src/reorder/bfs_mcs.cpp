#include "reorder/bfs_mcs.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace spt::reorder {

namespace {

// The nonzeros of each index of one mode: ids[ptr[i] .. ptr[i+1]).
struct Incidence {
  buffer<spt_nnz> ptr;
  buffer<spt_nnz> ids;
};

void build_incidence(const spt_coo_s& x, uint32_t m, Incidence& inc) {
  const spt_index* ind = x.ind[m];
  const spt_index dim = x.dims[m];
  std::fill(inc.ptr.begin(), inc.ptr.end(), 0);
  for (spt_nnz k = 0; k < x.nnz; ++k) ++inc.ptr[ind[k] + 1];
  for (spt_index i = 0; i < dim; ++i) inc.ptr[i + 1] += inc.ptr[i];
  buffer<spt_nnz>& ids = inc.ids;
  // Fill from the back so each index lists its nonzeros in increasing order.
  for (spt_nnz k = x.nnz; k-- > 0;) ids[--inc.ptr[ind[k] + 1]] = k;
  // ptr[i+1] now holds the start of i; shift back to ptr[i] = start of i.
  for (spt_index i = 0; i < dim; ++i) inc.ptr[i] = inc.ptr[i + 1];
  inc.ptr[dim] = x.nnz;
}

// Binary max-heap of the mode-n indices with increase-key.
class ConnectionHeap {
 public:
  ConnectionHeap(const buffer<spt_nnz>& slice_ptr, spt_index n)
      : slice_ptr_(slice_ptr), heap_(n), pos_(n), connections_(n, 0), size_(n) {}

  void build() {
    for (spt_index i = 0; i < size_; ++i) heap_[i] = pos_[i] = i;
    for (spt_index i = size_ / 2; i-- > 0;) sift_down(i);
  }
  bool empty() const { return size_ == 0; }
  bool contains(spt_index v) const { return pos_[v] != kRemoved; }
  spt_index pop() {
    const spt_index top = heap_[0];
    pos_[top] = kRemoved;
    if (--size_ > 0) {
      heap_[0] = heap_[size_];
      pos_[heap_[0]] = 0;
      sift_down(0);
    }
    return top;
  }
  void add_connection(spt_index v) {
    ++connections_[v];
    sift_up(pos_[v]);
  }

 private:
  static constexpr spt_index kRemoved = UINT32_MAX;
  bool before(spt_index a, spt_index b) const {
    if (connections_[a] != connections_[b]) return connections_[a] > connections_[b];
    const spt_nnz na = slice_ptr_[a + 1] - slice_ptr_[a], nb = slice_ptr_[b + 1] - slice_ptr_[b];
    if (na != nb) return na < nb;
    return a < b;
  }
  void place(spt_index slot, spt_index v) {
    heap_[slot] = v;
    pos_[v] = slot;
  }
  void sift_up(spt_index slot) {
    const spt_index v = heap_[slot];
    while (slot > 0) {
      const spt_index parent = (slot - 1) / 2;
      if (!before(v, heap_[parent])) break;
      place(slot, heap_[parent]);
      slot = parent;
    }
    place(slot, v);
  }
  void sift_down(spt_index slot) {
    const spt_index v = heap_[slot];
    while (true) {
      const uint64_t left = 2 * uint64_t(slot) + 1;
      if (left >= size_) break;
      spt_index child = static_cast<spt_index>(left);
      if (left + 1 < size_ && before(heap_[left + 1], heap_[left])) child = static_cast<spt_index>(left + 1);
      if (!before(heap_[child], v)) break;
      place(slot, heap_[child]);
      slot = child;
    }
    place(slot, v);
  }

  const buffer<spt_nnz>& slice_ptr_;
  buffer<spt_index> heap_;
  buffer<spt_index> pos_;
  buffer<uint64_t> connections_;
  spt_index size_;
};

// Algorithm 8 for mode n. `visited[m]` (dims[m] flags, all clear) is this
// mode's scratch. Runs inside a parallel region: must not throw.
void order_mode(const spt_coo_s& x, const std::vector<Incidence>& inc, uint32_t n, ConnectionHeap& heap,
                std::vector<buffer<uint8_t>>& visited, Permutation& perm) noexcept {
  const uint32_t order = x.order();
  const spt_index* mode_n = x.ind[n];
  heap.build();
  spt_index next_label = 0;
  while (!heap.empty()) {
    const spt_index v = heap.pop();
    perm[v] = next_label++;
    for (spt_nnz j = inc[n].ptr[v]; j < inc[n].ptr[v + 1]; ++j) {
      const spt_nnz e = inc[n].ids[j];
      for (uint32_t m = 0; m < order; ++m) {
        if (m == n) continue;
        const spt_index u = x.ind[m][e];
        if (visited[m][u]) continue;
        visited[m][u] = 1;
        for (spt_nnz q = inc[m].ptr[u]; q < inc[m].ptr[u + 1]; ++q) {
          const spt_nnz f = inc[m].ids[q];
          if (f == e) continue;
          const spt_index w = mode_n[f];
          if (heap.contains(w)) heap.add_connection(w);
        }
      }
    }
  }
}

}  // namespace

std::vector<Permutation> bfs_mcs_order(const spt_coo_s& x, int threads) {
  const uint32_t order = x.order();
  std::vector<Permutation> perm(order);
  for (uint32_t m = 0; m < order; ++m)
    resize_named(perm[m], x.dims[m], [&] { return cat("BFS-MCS: the permutation of mode ", m, " (dims[", m, "])"); });

  // Everything allocated up front: the parallel regions below cannot throw.
  std::vector<Incidence> inc(order);
  for (uint32_t m = 0; m < order; ++m) {
    resize_named(inc[m].ptr, spt_nnz(x.dims[m]) + 1,
                 [&] { return cat("BFS-MCS: the slice offsets of mode ", m, " (dims[", m, "] + 1)"); });
    resize_named(inc[m].ids, x.nnz, [&] { return cat("BFS-MCS: the slice members of mode ", m, " (nnz)"); });
  }
  std::vector<ConnectionHeap> heaps;
  heaps.reserve(order);
  for (uint32_t n = 0; n < order; ++n) heaps.emplace_back(inc[n].ptr, x.dims[n]);
  std::vector<std::vector<buffer<uint8_t>>> visited(order);
  for (uint32_t n = 0; n < order; ++n) {
    visited[n].resize(order);
    for (uint32_t m = 0; m < order; ++m)
      if (m != n) visited[n][m].assign(x.dims[m], 0);
  }

  const int t = std::max(1, std::min<int>(threads, static_cast<int>(order)));
#pragma omp parallel for num_threads(t) schedule(dynamic, 1)
  for (uint32_t m = 0; m < order; ++m) build_incidence(x, m, inc[m]);
#pragma omp parallel for num_threads(t) schedule(dynamic, 1)
  for (uint32_t n = 0; n < order; ++n) order_mode(x, inc, n, heaps[n], visited[n], perm[n]);
  return perm;
}

}  // namespace spt::reorder
