// F-COO (flagged coordinates; Liu et al., "A Unified Optimization Approach
// for Sparse Tensor Operations on GPUs", §IV) behind the opaque spt_fcoo
// handle. One F-COO serves one operation in one mode:
//
//   MTTKRP (and TTMc) in mode n: index mode {n}, product modes = the others;
//   TTM in mode n:               product mode {n}, index modes = the others.
//
// The nonzeros are sorted by the index modes (then the product modes, for
// factor-row locality). Only the product-mode indices are stored per
// nonzero; a change of the index-mode coordinates ("a new segment": a new
// slice for MTTKRP, a new fiber for TTM) is one bit in `bf`. Nonzeros are cut
// into partitions of `threadlen` consecutive nonzeros (one GPU thread each);
// `sf` has one bit per partition, set when the partition starts a segment
// (bf at its first nonzero). The paper derives each partition's first
// output row from a scan; we also keep, per group of 32 partitions (a warp),
// the segment number of its first nonzero (`group_first_segment`), so any
// warp starts without a global scan.
//
// The paper stores no index-mode coordinates at all; an output still needs
// them, so we keep them once per segment (`segment_ind`): dims[n] rows at
// most for MTTKRP, one entry per fiber for TTM (the fiber list of the
// semi-sparse result). The paper covers third order; everything here is for
// any order >= 2.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer.hpp"
#include "core/dtype.hpp"
#include "core/matrix.hpp"
#include "sptensor/fcoo.h"

struct spt_coo_s;
struct spt_scoo_s;

struct spt_fcoo_s {
  std::vector<spt_index> dims;
  spt_nnz nnz = 0;
  spt_fcoo_operation op = SPT_FCOO_MTTKRP;
  uint32_t mode = 0;
  uint32_t threadlen = 8;  // nonzeros per partition: 8, 16 or 32

  std::vector<uint32_t> index_modes;    // ascending
  std::vector<uint32_t> product_modes;  // ascending
  std::vector<spt::buffer<spt_index>> product_ind;  // per product mode (same order), nnz entries
  spt::ValueStore val;                              // nnz values

  spt::buffer<uint32_t> bf;  // ceil(nnz / 32) words; bit k % 32 of word k / 32: nonzero k starts a segment
  spt::buffer<uint32_t> sf;  // ceil(partitions / 32) words; bit p % 32 of word p / 32: partition p starts one
  spt::buffer<uint32_t> group_first_segment;  // per 32 partitions: segment of the group's first nonzero

  spt_nnz segments = 0;
  std::vector<spt::buffer<spt_index>> segment_ind;  // per index mode (same order), `segments` entries

  // Device copies, owned by the dispatcher (src/dispatch/device.cpp); an
  // F-COO handle is immutable, so the copy lives as long as the handle.
  mutable std::shared_ptr<void> device_cache;

  spt_dtype dtype() const { return val.dtype(); }
  uint32_t order() const { return static_cast<uint32_t>(dims.size()); }
  spt_nnz partitions() const { return (nnz + threadlen - 1) / threadlen; }
  spt_nnz groups() const { return (partitions() + 31) / 32; }
  bool starts_segment(spt_nnz k) const { return (bf[k >> 5] >> (k & 31)) & 1u; }
  // Segment of nonzero k, from the group table and the flags (O(threadlen * 32) bit counting).
  spt_nnz segment_of(spt_nnz k) const;
  // Bytes of the format (indices, values, flags, group table, segment coordinates).
  uint64_t bytes() const;
};

namespace spt::fcoo {

// Lanes of a GPU warp that share one partition, each taking a 32-byte
// column chunk of the output row (`row_bytes` = columns x value size):
// enough to cover the row, at most 8 (cuda/fcoo.cu).
uint32_t lanes_per_partition(uint64_t row_bytes);

// A mode with at most kFewSlices non-empty slices and at least
// kFewSlicesMinNnz nonzeros takes threadlen 16 at 4+ lanes per partition:
// every warp's last segment is added atomically to one of those few rows,
// and halving the warps halves the colliding adds (docs/design-measurements.md,
// "kFewSlices").
constexpr spt_nnz kFewSlices = 64;
constexpr spt_nnz kFewSlicesMinNnz = spt_nnz(1) << 17;

// The threadlen rule (documented in include/sptensor/fcoo.h), for output
// rows of `row_bytes` on a GPU with `multiprocessors` SMs (0 = the default, 132).
// `nonempty_slices`: of the F-COO's index mode when known (0 = unknown: the
// few-slices case above is not applied).
uint32_t suggested_threadlen(spt_nnz nnz, uint64_t row_bytes, int multiprocessors, spt_nnz nonempty_slices = 0);

// Build the F-COO of x for `op` in `mode` with partitions of `threadlen`
// (8, 16 or 32; 0 = suggested_threadlen for rank 16 on 132 SMs). x is not
// modified. Throws INVALID_ARGUMENT (order < 2, mode, op, threadlen, nnz >=
// 2^32) and OUT_OF_MEMORY.
spt_fcoo_s from_coo(const spt_coo_s& x, spt_fcoo_operation op, uint32_t mode, uint32_t threadlen, int threads);

// Re-cut f into partitions of `threadlen` (8, 16 or 32): only the start
// flags and the per-warp table change (the tuning sweeps use it).
void set_threadlen(spt_fcoo_s& f, uint32_t threadlen);

// The COO the F-COO encodes (sorted by index modes, then product modes).
spt_coo_s to_coo(const spt_fcoo_s& f, int threads);

// Shape `out` as the TTM result of an op-TTM F-COO with R = rank: dims
// with dims[mode] = R, dense mode `mode`, one fiber per segment (the
// segment coordinates, sorted), values zeroed. Throws OVERFLOW.
void ttm_result_shell(const spt_fcoo_s& f, uint64_t rank, spt_scoo_s& out);

// Throws INVALID_ARGUMENT naming `what` unless f was built for `op`.
void require_op(const spt_fcoo_s& f, spt_fcoo_operation op, const char* what);

// The factors of f's product modes, in f's order (factors is indexed by mode).
template <typename T>
std::vector<ConstMatRef<T>> product_mode_factors(const spt_fcoo_s& f, const ConstMatRef<T>* factors) {
  std::vector<ConstMatRef<T>> p;
  for (uint32_t m : f.product_modes) p.push_back(factors[m]);
  return p;
}

}  // namespace spt::fcoo
