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

// Scratch bound of the exact count below the root: one 32-bit mark per
// index of the root's mode and thread, at most this many bytes (or the
// first tree's own bytes / 16, if more).
constexpr double kCountScratchBytes = 16.0 * 1024 * 1024;

// Nodes [lo, hi) of level `to` under nodes [lo, hi) of level `from` < to.
void descend(const CsfTree& t, uint32_t from, uint32_t to, spt_nnz& lo, spt_nnz& hi) {
  for (uint32_t l = from; l < to; ++l) {
    lo = t.fptr[l][lo];
    hi = t.fptr[l][hi];
  }
}

// Distinct indices of `first`'s level `level` under each root node, summed
// (the pairs (root index, that index)), and distinct indices over the whole
// level; false when the marks do not fit the scratch bound.
bool count_pairs_under_roots(const Exec& exec, const CsfTree& first, uint32_t level, spt_index dim, double& pairs,
                             double& distinct) {
  const double per_thread = 4.0 * double(dim);
  const double bound = std::max(kCountScratchBytes, double(first.bytes()) / 16);
  const int threads = static_cast<int>(std::min<double>(std::max(1, exec.threads), std::floor(bound / per_thread)));
  if (threads < 1) return false;
  const spt_nnz roots = first.nodes(0);
  // The marks are a refinement: without memory for them, the bound stands.
  std::vector<buffer<uint32_t>> mark(threads);
  try {
    for (buffer<uint32_t>& m : mark) m.assign(dim, 0);
  } catch (const std::bad_alloc&) {
    return false;
  }
  std::vector<spt_nnz> counted(threads, 0);
  const spt_index* fid = first.fids[level].data();
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    uint32_t* seen = mark[omp_get_thread_num()].data();
    spt_nnz count = 0;
#pragma omp for schedule(dynamic, 64)
    for (spt_nnz root = 0; root < roots; ++root) {
      spt_nnz lo = root, hi = root + 1;
      descend(first, 0, level, lo, hi);
      // Root numbers + 1 tell this root's marks from earlier ones (the
      // caller keeps the root count below 2^32 - 1).
      const uint32_t stamp = static_cast<uint32_t>(root + 1);
      for (spt_nnz j = lo; j < hi; ++j) {
        if (seen[fid[j]] != stamp) {
          seen[fid[j]] = stamp;
          ++count;
        }
      }
    }
    counted[omp_get_thread_num()] = count;
  }
  pairs = 0;
  for (spt_nnz c : counted) pairs += double(c);
  spt_nnz any = 0;
  for (spt_index v = 0; v < dim; ++v) {
    bool seen = false;
    for (int c = 0; c < threads && !seen; ++c) seen = mark[c][v] != 0;
    any += seen;
  }
  distinct = double(any);
  return true;
}

}  // namespace

std::vector<double> csf_predicted_nodes(const Exec& exec, const CsfTree& first, const std::vector<spt_index>& dims,
                                        const std::vector<uint32_t>& mode_order) {
  const uint32_t levels = static_cast<uint32_t>(mode_order.size());
  std::vector<double> nodes(levels, 0.0);
  // A level's nodes are the distinct tuples of the indices of its modes
  // and those above it, so a level of `first` over a subset of those modes
  // has at most as many; and every node has a child.
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
  // The root and the level below it exactly, when that level is the first
  // tree's root mode (as csf_mode_order puts the shortest mode): pairs of
  // (first root, new root index) under each first root.
  const uint32_t root_mode = mode_order[0];
  if (levels >= 2 && root_mode != first.mode_order[0] && mode_order[1] == first.mode_order[0] &&
      first.nodes(0) < spt_nnz(UINT32_MAX)) {
    double pairs = 0, distinct = 0;
    if (count_pairs_under_roots(exec, first, first.level_of(root_mode), dims[root_mode], pairs, distinct)) {
      nodes[0] = distinct;
      nodes[1] = std::max(nodes[1], pairs);
      for (uint32_t l = 2; l < levels; ++l) nodes[l] = std::max(nodes[l], nodes[l - 1]);
    }
  }
  return nodes;
}

}  // namespace spt
