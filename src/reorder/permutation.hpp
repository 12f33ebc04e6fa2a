// Index relabellings of a sparse tensor: one permutation per mode, the
// object behind the opaque spt_permutation handle.
//
// Convention (used by every file in src/reorder and by the C API):
//   perm[m][old] = new
// i.e. entry `old` of mode m's array is the label that index `old` of mode m
// receives. A relabelled tensor has coordinate perm[m][i] where the original
// had i; a factor matrix computed on the relabelled tensor holds the row of
// original index i at row perm[m][i].
#pragma once

#include <cstdint>
#include <vector>

#include "core/buffer.hpp"
#include "sptensor/sptensor.h"

struct spt_permutation_s {
  // per_mode[m] has dims[m] entries; per_mode[m][old] = new.
  std::vector<spt::buffer<spt_index>> per_mode;

  uint32_t order() const { return static_cast<uint32_t>(per_mode.size()); }
  spt_index dim(uint32_t m) const { return static_cast<spt_index>(per_mode[m].size()); }
};

namespace spt::reorder {

using Permutation = buffer<spt_index>;

// The identity permutation of n labels.
Permutation identity(spt_index n);

// Throws INVALID_ARGUMENT (naming `what`, the offending position and label)
// unless p[0..n) holds every label base..base+n-1 exactly once. `base` (0 or
// 1) is the caller's labelling; the check needs no copy.
void validate_permutation(const spt_index* p, spt_index n, const char* what, int base = 0);

// inverse[p[i]] = i. p must be a valid permutation.
Permutation invert(const Permutation& p);

// True when p[i] == i for every i.
bool is_identity(const Permutation& p);

// Throws INVALID_ARGUMENT unless `perm` has one permutation per mode of a
// tensor with `dims` (same order, same lengths). `what` names the object the
// permutation is applied to in the message.
void require_matches(const spt_permutation_s& perm, const std::vector<spt_index>& dims, const char* what);

}  // namespace spt::reorder
