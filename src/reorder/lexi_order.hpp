// LEXI-ORDER (Li, dissertation ch. 5.2): relabels every mode so that its
// slices are in non-increasing lexicographic order, an extension of doubly
// lexical matrix ordering to tensors, which clusters nonzeros into denser
// blocks (better locality for COO, HiCOO and CSF MTTKRP).
//
// For mode n, view the tensor as the 0/1 matrix X_(n) whose columns are the
// mode-n indices and whose rows are the distinct coordinate tuples of the
// other modes, in lexicographic order of their current labels (lowest other
// mode most significant). Column i's vector has a 1 in each row where slice i
// has a nonzero. The mode-n labels are then reassigned in non-increasing
// lexicographic order of those vectors (equivalently: slices sorted by their
// sorted lists of row positions, a slice whose list is a proper prefix of
// another's going after it; ties by current label; empty slices last). One
// iteration does this for modes 0..N-1 in turn, each seeing the labels the
// previous modes just received; `iterations` repeats it (the dissertation
// finds 3 a good trade-off) and stops early when an iteration changes
// nothing, which means the ordering is a fixed point (for a matrix: doubly
// lexical).
//
// Cost per mode: building and sorting nnz packed keys (a parallel radix
// sort when all coordinates fit 64 bits, else a parallel comparison sort),
// then one sequential O(nnz + dims[n]) partition-refinement pass.
#pragma once

#include <vector>

#include "core/coo.hpp"
#include "reorder/permutation.hpp"

namespace spt::reorder {

// One permutation per mode (perm[m][old] = new) for x. Duplicated
// coordinates count once. Deterministic: the same result for any thread
// count. `iterations` >= 1.
std::vector<Permutation> lexi_order(const spt_coo_s& x, int iterations, int threads);

}  // namespace spt::reorder
