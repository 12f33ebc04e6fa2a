// The GPU Tucker-HOOI's TTMc cost estimate (src/dispatch/device_tucker.cpp):
// F-COO (per-nonzero Kronecker product) against chained TTMs on B-CSF /
// HB-CSF trees (cuda/ttmc_hbcsf.cuh), per mode and summed. Internal: the
// dispatcher's auto rule, its tests and bench_gpu_tucker read it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/coo.hpp"
#include "core/hbcsf.hpp"

namespace spt::dispatch {

// Estimated work of one sweep's TTMcs, in multiply-adds plus bytes streamed
// (weighted 1:1; see device_tucker.cpp for the rule and why), per mode and
// summed; P_n = prod_{m != n} R_m:
//   fcoo[n]  = nnz P_n + 4 order nnz
//   chain[n] = (coo_nnz + csl_nnz) P_n + bcsf_nnz R_leaf + segments P_n
//              + 4 order (coo_nnz + csl_nnz) + 4 (bcsf_nnz + order segments)
// with the counts of the HB-CSF rooted at n (R_leaf = the rank of its leaf
// mode).
// The chain's estimate must be below this fraction of F-COO's: per unit of
// estimated work the chained kernel (a warp per slice unit, Kronecker rows
// through shared memory) ran slower than F-COO's flat stream; chain won
// below this ratio and tied or lost above it (measurements:
// docs/design-measurements.md, "kTuckerChainAdvantage").
constexpr double kTuckerChainAdvantage = 0.2;

struct TuckerTtmcEstimate {
  std::vector<double> fcoo, chain;
  double fcoo_total = 0.0, chain_total = 0.0;
  // The rule: chain for the whole run when its summed estimate is below
  // kTuckerChainAdvantage x F-COO's.
  bool prefers_chain() const { return chain_total < kTuckerChainAdvantage * fcoo_total; }
};

// The estimate from trees[n] = the HB-CSF of the tensor rooted at mode n
// (order entries, all of one tensor) and the ranks by mode. Throws
// INVALID_ARGUMENT when a tree is missing, not rooted at its mode, or the
// sizes disagree.
TuckerTtmcEstimate tucker_ttmc_estimate(const std::vector<const spt_hbcsf_s*>& trees,
                                        const std::vector<spt_index>& ranks);

// The same from x (order 3 or more), building the HB-CSF trees with the
// default parameters on `threads` threads (what the dispatcher builds).
// Throws as hbcsf::from_coo.
TuckerTtmcEstimate tucker_ttmc_estimate(const spt_coo_s& x, const std::vector<spt_index>& ranks, int threads);

}  // namespace spt::dispatch
