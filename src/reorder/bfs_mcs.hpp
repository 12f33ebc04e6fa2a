// BFS-MCS (Li, dissertation ch. 5.1, Algorithm 8): a breadth-first,
// maximum-cardinality-search ordering on the tensor's hypergraph, whose
// vertices are the indices of all modes and whose hyperedges are the
// nonzeros (each joins its N coordinates).
//
// Each mode n is ordered on its own, against the original labels of the
// other modes. A max-heap holds the mode-n indices not yet numbered, keyed
// by (connections to the numbered set, descending; nonzeros in the slice,
// ascending; index, ascending — the last key only makes ties
// deterministic). Numbering index v visits every not yet visited vertex u of
// another mode that shares a nonzero with v, and each other nonzero of u
// adds one connection to its mode-n index. A heap whose best key has no
// connections starts a new component at the lightest slice.
//
// Cost per mode: O((N-1) nnz log dims[n]). Modes run in parallel.
#pragma once

#include <vector>

#include "core/coo.hpp"
#include "reorder/permutation.hpp"

namespace spt::reorder {

// One permutation per mode (perm[m][old] = new). Deterministic. Every
// stored nonzero is a hyperedge (repeated coordinates count repeatedly).
std::vector<Permutation> bfs_mcs_order(const spt_coo_s& x, int threads);

}  // namespace spt::reorder
