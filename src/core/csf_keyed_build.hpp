// Building a CSF tree from packed coordinate keys (used by core/csf.cpp).
//
// Each nonzero's coordinates, in the tree's mode order, are packed into one
// 64-bit key (root mode in the highest bits). A counting pass over the top
// bits of the keys splits the nonzeros into buckets, stably; each bucket is
// then sorted by the rest of its keys. The values travel with the keys into
// the tree's value array, and 32-bit key words (the keys' low bits; 64-bit
// when they do not fit) become its leaf indices, so a build holds little
// besides the tree it returns and per-thread scratch for one bucket. The
// nonzeros are read only in order: from a COO tensor, or from another CSF
// tree by walking it, so the other trees of a handle are built from the
// first one with no expanded copy of its coordinates. The tree equals the
// one built through sort_permutation (ties keep the source's order).
#pragma once

#include <vector>

#include "core/coo.hpp"
#include "core/csf.hpp"
#include "core/exec.hpp"

namespace spt {

// Whether the keyed build applies: at least one and at most 2^32 - 1
// nonzeros, and the coordinates fit 64 bits (the sum over modes of the bit
// widths of dims - 1).
bool csf_keyed_build_applies(const std::vector<spt_index>& dims, spt_nnz nnz);

// The tree of x's nonzeros in `mode_order` (a checked permutation);
// requires csf_keyed_build_applies(x.dims, x.nnz).
CsfTree build_csf_tree_keyed(const Exec& exec, const spt_coo_s& x, const std::vector<uint32_t>& mode_order);

// The tree of `source`'s nonzeros (a tree of a tensor with `dims`) in
// `mode_order`, positions being the source's leaf order; requires
// csf_keyed_build_applies(dims, source.nnz()).
CsfTree build_csf_tree_keyed(const Exec& exec, const CsfTree& source, const std::vector<spt_index>& dims,
                             const std::vector<uint32_t>& mode_order);

// Shared by both builds: turns counts[(c + 1) * leaf + l], the nodes chunk
// c (of `threads`) opens on level l, into counts[c * leaf + l], chunk c's
// first node there (an exclusive prefix over chunks), and sizes t's upper
// levels to the totals.
void size_upper_levels(CsfTree& t, std::vector<spt_nnz>& counts, int threads);

}  // namespace spt
