// Node counts of a CSF tree not yet built, from the handle's first tree
// (see csf_predicted_nodes in csf.hpp).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <new>
#include <vector>

#include "core/buffer.hpp"
#include "core/csf.hpp"
#include "core/exec.hpp"

namespace spt {

namespace {

// Scratch bound of the exact counts: one 32-bit mark per index of the new
// root's mode and thread, at most this many bytes, or half the first tree's
// bytes if more (a tree the counts save building would take more than the
// first tree's).
constexpr double kCountScratchBytes = 16.0 * 1024 * 1024;

// Threads whose marks fit the scratch bound (0: none fit).
int mark_threads(const Exec& exec, const CsfTree& first, spt_index dim) {
  const double bound = std::max(kCountScratchBytes, double(first.bytes()) / 2);
  return static_cast<int>(std::min<double>(std::max(1, exec.threads), std::floor(bound / (4.0 * double(dim)))));
}

// Per-thread marks of `dim` entries, zeroed; false without the memory (the
// counts are a refinement: the bounds then stand).
bool allocate_marks(std::vector<buffer<uint32_t>>& marks, int threads, spt_index dim) {
  marks.resize(threads);
  try {
    for (buffer<uint32_t>& m : marks) m.assign(dim, 0);
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

// Nodes [lo, hi) of level `to` under nodes [lo, hi) of level `from` <= to.
void descend(const CsfTree& t, uint32_t from, uint32_t to, spt_nnz& lo, spt_nnz& hi) {
  for (uint32_t l = from; l < to; ++l) {
    lo = t.fptr[l][lo];
    hi = t.fptr[l][hi];
  }
}

// Sum over the nodes of `first`'s level `parent` of the distinct indices on
// level `level` (> parent) below each: the pairs (parent node, index).
double pairs_under(const CsfTree& first, uint32_t parent, uint32_t level, std::vector<buffer<uint32_t>>& marks) {
  const int threads = static_cast<int>(marks.size());
  for (buffer<uint32_t>& m : marks) std::fill(m.begin(), m.end(), 0u);
  const spt_nnz parents = first.nodes(parent);
  const spt_index* fid = first.fids[level].data();
  std::vector<spt_nnz> counted(threads, 0);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    uint32_t* seen = marks[omp_get_thread_num()].data();
    spt_nnz count = 0;
#pragma omp for schedule(dynamic, 256)
    for (spt_nnz node = 0; node < parents; ++node) {
      spt_nnz lo = node, hi = node + 1;
      descend(first, parent, level, lo, hi);
      // Parent numbers + 1 tell this parent's marks from earlier ones (the
      // caller keeps the parent count below 2^32 - 1).
      const uint32_t stamp = static_cast<uint32_t>(node + 1);
      for (spt_nnz j = lo; j < hi; ++j) {
        if (seen[fid[j]] != stamp) {
          seen[fid[j]] = stamp;
          ++count;
        }
      }
    }
    counted[omp_get_thread_num()] = count;
  }
  double pairs = 0;
  for (spt_nnz c : counted) pairs += double(c);
  return pairs;
}

// Distinct indices on `first`'s level `level`.
double distinct_on(const CsfTree& first, uint32_t level, std::vector<buffer<uint32_t>>& marks) {
  const int threads = static_cast<int>(marks.size());
  for (buffer<uint32_t>& m : marks) std::fill(m.begin(), m.end(), 0u);
  const spt_nnz nodes = first.nodes(level);
  const spt_index* fid = first.fids[level].data();
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int c = 0; c < threads; ++c) {
    uint32_t* seen = marks[c].data();
    const spt_nnz begin = nodes * c / threads, end = nodes * (c + 1) / threads;
    for (spt_nnz j = begin; j < end; ++j) seen[fid[j]] = 1;
  }
  const spt_index dim = static_cast<spt_index>(marks.front().size());
  spt_nnz any = 0;
  for (spt_index v = 0; v < dim; ++v) {
    bool seen = false;
    for (int c = 0; c < threads && !seen; ++c) seen = marks[c][v] != 0;
    any += seen;
  }
  return double(any);
}

}  // namespace

std::vector<double> csf_predicted_nodes(const Exec& exec, const CsfTree& first, const std::vector<spt_index>& dims,
                                        const std::vector<uint32_t>& mode_order) {
  const uint32_t levels = static_cast<uint32_t>(mode_order.size());
  std::vector<double> nodes(levels, 0.0);
  // A level's nodes are the distinct tuples of the indices of its modes
  // and those above it, so a level of `first` over a subset of those modes
  // has at most as many (as many when the sets are equal); and every node
  // has a child.
  std::vector<bool> included(dims.size(), false);
  for (uint32_t l = 0; l < levels; ++l) {
    included[mode_order[l]] = true;
    double bound = l > 0 ? nodes[l - 1] : 0.0;
    for (uint32_t k = 0; k < first.levels(); ++k) {
      bool subset = true;
      for (uint32_t j = 0; j <= k && subset; ++j) subset = included[first.mode_order[j]];
      if (subset) bound = std::max(bound, double(first.nodes(k)));
    }
    nodes[l] = bound;
  }
  // Exact counts where the new tree is `first` with its root mode moved to
  // the top (as csf_mode_order's trees are): with that mode on `first`'s
  // level L, the new level l <= L holds the pairs (node of `first`'s level
  // l - 1, index of the root mode below it), and the root the distinct
  // indices on level L; the levels below L are `first`'s (the bounds above).
  const uint32_t root_mode = mode_order[0];
  if (levels < 2 || root_mode == first.mode_order[0]) return nodes;
  std::vector<uint32_t> rest;
  for (uint32_t m : first.mode_order)
    if (m != root_mode) rest.push_back(m);
  if (!std::equal(rest.begin(), rest.end(), mode_order.begin() + 1)) return nodes;
  const uint32_t level = first.level_of(root_mode);
  const int threads = mark_threads(exec, first, dims[root_mode]);
  std::vector<buffer<uint32_t>> marks;
  if (threads < 1 || !allocate_marks(marks, threads, dims[root_mode])) return nodes;
  nodes[0] = distinct_on(first, level, marks);
  for (uint32_t l = 1; l < level; ++l)
    if (first.nodes(l - 1) < spt_nnz(UINT32_MAX)) nodes[l] = std::max(nodes[l], pairs_under(first, l - 1, level, marks));
  for (uint32_t l = 1; l < levels; ++l) nodes[l] = std::max(nodes[l], nodes[l - 1]);
  return nodes;
}

}  // namespace spt
