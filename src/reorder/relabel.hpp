// Applying a relabelling: to a COO tensor (its coordinates), and to factor
// matrices (their rows), in either direction. See permutation.hpp for the
// convention perm[m][old] = new.
#pragma once

#include "core/coo.hpp"
#include "core/ktensor.hpp"
#include "core/matrix.hpp"
#include "reorder/permutation.hpp"

namespace spt::reorder {

// Replace every coordinate i of mode m by perm[m][i], in place. x must be
// owning (require_writable); zero-copy backed storage is copied first. The
// nonzeros keep their order and values; sortedness is forgotten.
void relabel_in_place(spt_coo_s& x, const spt_permutation_s& perm, int threads);

// A new owning tensor: x relabelled (x may be a view).
spt_coo_s relabeled_copy(const spt_coo_s& x, const spt_permutation_s& perm, int threads);

// Which index space rows move into.
enum class RowSpace {
  reordered,  // row i moves to row p[i]  (caller's rows -> relabelled tensor's)
  original    // row p[i] moves to row i  (relabelled tensor's rows -> caller's)
};

// Permute the rows of m (any layout, owned or wrapped) by p (p.size() ==
// m.rows, checked by the caller).
void permute_rows(spt_matrix_s& m, const Permutation& p, RowSpace to, int threads);

}  // namespace spt::reorder
