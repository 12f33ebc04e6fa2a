// B-CSF / HB-CSF (Nisa et al., "Load-Balanced Sparse MTTKRP on GPUs",
// §IV-V) behind the opaque spt_hbcsf handle, generalised to any order N >= 3.
//
// Levels follow `mode_order` (level 0 = the root mode, then the other modes by
// increasing length, as csf_mode_order). "Slice" = a level-0 node (one root
// coordinate, one output row); "fiber" = a level N-2 node (the parent of the
// leaves). Every offset and index is 32-bit (nnz < 2^32 is required), every
// array is flat and laid out for coalesced GPU reads:
//
// COO group (slices holding one nonzero; no two nonzeros share a row):
//   coo_ind[l][k] (l = 0..N-1, level order), coo_val[k], k < coo_nnz.
//   One GPU thread (or lane group) per nonzero, plain stores: rows are unique.
// CSL group (slices whose fibers all hold one nonzero, at most slice_split_nnz
// nonzeros; heavier ones go to B-CSF to be split):
//   csl_slice_ind[s] (root coordinate), csl_slice_ptr[s..s+1] into the
//   group's nonzeros; csl_ind[l-1][k] for levels l = 1..N-1, csl_val[k].
//   One warp per slice, no atomics (a slice is one task).
// B-CSF group (every other slice; all slices with SPT_HBCSF_PLAIN_BCSF):
//   bcsf_slice_ind[s], bcsf_slice_ptr[s..s+1] -> level-1 nodes;
//   for levels l = 1..N-2: node_ind[l-1][n] (coordinate in mode_order[l]);
//     for l < N-2 node_ptr[l-1][n..n+1] -> children at level l+1;
//     for 2 <= l <= N-2 node_parent[l-2][n] -> the parent node at level l-1
//     (so one warp can walk from its fiber segment up to the slice without
//     the tree above it; empty for order 3);
//   fiber segments are the level N-2 nodes: a fiber longer than
//     fiber_threshold is stored as several consecutive nodes with the same
//     coordinate and parent, each of at most fiber_threshold leaves;
//     segment_ptr[f..f+1] -> leaves (the level N-2 node_ptr, kept apart);
//   leaves: leaf_ind[z] (mode_order[N-1]), bcsf_val[z].
//   Work units (thread blocks): unit_row[u] = output row (root coordinate),
//   unit_segment_ptr[u..u+1] = a range of fiber segments of that one slice
//   of at most slice_split_nnz leaves (or one segment). Units of one slice
//   are consecutive; unit_split[u] = 1 when the slice has several units (its
//   kernel must add atomically), else 0.
//   Bins: bin_ptr[b..b+1] into bin_units (unit numbers, ascending within a
//   bin); bin b < bins-1 holds the units of at most slice_bin_min_nnz * 2^b
//   leaves (and more than the previous bin's limit), the last bin the rest.
// Groups partition the root coordinates: no output row is written by two
// groups, so the three kernels can run concurrently without conflicts.
// The GPU kernels (cuda/mttkrp_hbcsf.cu, through DeviceKernels::mttkrp_hbcsf)
// follow this plan: the output is zeroed first, COO and CSL rows and
// unsplit units are stored, units of split slices added atomically; the
// B-CSF launch is one per non-empty bin (a team of 1..8 warps per unit,
// sized by the bin's limit). Orders above 8 run on the CPU.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer.hpp"
#include "core/dtype.hpp"
#include "core/matrix.hpp"
#include "sptensor/hbcsf.h"

struct spt_coo_s;

namespace spt::hbcsf {

constexpr uint32_t kDefaultFiberThreshold = 128;  // the paper's tuned value
constexpr uint32_t kDefaultSliceSplitNnz = 512;   // the paper's example: 512-thread blocks
constexpr uint32_t kDefaultBinMinNnz = 32;        // one warp

struct Params {
  uint32_t fiber_threshold = kDefaultFiberThreshold;
  uint32_t slice_split_nnz = kDefaultSliceSplitNnz;
  uint32_t slice_bin_min_nnz = kDefaultBinMinNnz;
  uint32_t flags = 0;
};

// Throws INVALID_ARGUMENT for a bad parameter (after defaults are applied).
void validate_params(const Params& p);

}  // namespace spt::hbcsf

struct spt_hbcsf_s {
  std::vector<spt_index> dims;
  std::vector<uint32_t> mode_order;  // level -> mode; mode_order[0] = root
  spt_nnz nnz = 0;
  spt::hbcsf::Params params;

  // COO group.
  std::vector<spt::buffer<uint32_t>> coo_ind;  // N levels, coo_nnz each
  spt::ValueStore coo_val;

  // CSL group.
  spt::buffer<uint32_t> csl_slice_ind;
  spt::buffer<uint32_t> csl_slice_ptr;         // slices + 1
  std::vector<spt::buffer<uint32_t>> csl_ind;  // levels 1..N-1, csl_nnz each
  spt::ValueStore csl_val;

  // B-CSF group.
  spt::buffer<uint32_t> bcsf_slice_ind;
  spt::buffer<uint32_t> bcsf_slice_ptr;            // slices + 1, into level-1 nodes
  std::vector<spt::buffer<uint32_t>> node_ind;     // levels 1..N-2
  std::vector<spt::buffer<uint32_t>> node_ptr;     // levels 1..N-3 (nodes + 1 each)
  std::vector<spt::buffer<uint32_t>> node_parent;  // levels 2..N-2
  spt::buffer<uint32_t> segment_ptr;               // segments + 1, into leaves
  spt::buffer<uint32_t> leaf_ind;
  spt::ValueStore bcsf_val;
  spt::buffer<uint32_t> unit_row;
  spt::buffer<uint32_t> unit_segment_ptr;  // units + 1
  spt::buffer<uint8_t> unit_split;
  spt::buffer<uint32_t> bin_ptr;  // bins + 1
  spt::buffer<uint32_t> bin_units;

  // Device copies of this handle, owned by the dispatcher
  // (src/dispatch/device.cpp; opaque here). Filled on the first GPU MTTKRP,
  // released with the handle (the shared pointer's deleter calls the
  // plugin); revalidated against nnz, dims, mode_order and the array
  // pointers (a handle is immutable: a new one has new arrays; a struct copy
  // carries the pointer but not the arrays).
  mutable std::shared_ptr<void> device_cache;

  // Statistics gathered while building.
  spt_nnz bcsf_fibers = 0;   // before splitting
  spt_nnz split_fibers = 0;  // fibers cut into several segments
  spt_nnz split_slices = 0;  // slices cut into several units

  spt_dtype dtype() const { return bcsf_val.dtype(); }
  uint32_t order() const { return static_cast<uint32_t>(dims.size()); }
  uint32_t root() const { return mode_order[0]; }
  spt_nnz coo_nnz() const { return coo_val.size(); }
  spt_nnz csl_nnz() const { return csl_val.size(); }
  spt_nnz bcsf_nnz() const { return bcsf_val.size(); }
  spt_nnz csl_slices() const { return csl_slice_ind.size(); }
  spt_nnz bcsf_slices() const { return bcsf_slice_ind.size(); }
  spt_nnz segments() const { return segment_ptr.empty() ? 0 : segment_ptr.size() - 1; }
  spt_nnz units() const { return unit_row.size(); }
  uint32_t bins() const { return bin_ptr.empty() ? 0 : static_cast<uint32_t>(bin_ptr.size() - 1); }
  // Bytes of every array of the format.
  uint64_t bytes() const;
};

namespace spt::hbcsf {

// Build the HB-CSF (or plain B-CSF) of x rooted at `root`. x is not
// modified. Throws UNSUPPORTED (order < 3, nnz >= 2^32), INVALID_ARGUMENT
// (root, params) and OUT_OF_MEMORY.
spt_hbcsf_s from_coo(const spt_coo_s& x, uint32_t root, const Params& params, int threads);

// The COO the handle encodes, sorted in mode_order (stable for repeats).
spt_coo_s to_coo(const spt_hbcsf_s& h, int threads);

}  // namespace spt::hbcsf
