// Which storage format a CP-ALS should run on (spt_suggest_format and
// `--format auto`). The rule follows our measurements (bench_formats,
// benchmarks/results/cpu-*-formats-*.jsonl): CP-ALS on CSF with one tree
// per mode was the fastest, or within noise of the fastest, on every
// benchmark tensor, so it is the choice whenever its trees fit in memory.
// When they do not, Li's dissertation §4.3.3 decides between a compact,
// mode-neutral HiCOO (blocks dense enough, or smaller than COO) and a
// single CSF tree (memoized across the sweep for order >= 4). Small
// tensors (all in cache) use HiCOO, whose MTTKRP has the least per-call
// overhead on many threads.
#pragma once

#include <memory>
#include <string>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/csf.hpp"
#include "core/hicoo.hpp"

namespace spt::algo {

// Below this many nonzeros every format runs from cache; per-call
// overhead decides (HiCOO).
constexpr spt_nnz kAdviceSmallNnz = 16384;
// §4.3.3: below this block density (\bar c_b) HiCOO's MTTKRP falls behind CSF.
constexpr double kAdviceMinSlicePerBlock = 0.01;

struct FormatAdvice {
  spt_tensor_format format = SPT_TENSOR_FORMAT_COO;
  spt_csf_policy csf_policy = SPT_CSF_AUTO;  // when format is CSF
  std::string reason;                        // sentences: the statistics and the rule that fired
  bool have_hicoo_stats = false;
  hicoo::Stats hicoo_stats;                  // with the suggested B and L (when computed)
  // Built on the way; a CP-ALS reuses them instead of building them again.
  std::unique_ptr<spt_hicoo_s> hicoo;
  CsfTree csf_first_tree;                    // the ONEMODE tree (empty when not built)
};

// Deterministic for a given tensor, rank and thread count. Builds the
// ONEMODE CSF tree of x (and a HiCOO copy when the CSF trees would not fit)
// unless x is small or of order < 2. `rank` sizes the memoized CSF
// intermediates (nnz x rank values per level).
FormatAdvice advise_format(spt_context_s& ctx, const spt_coo_s& x, spt_index rank);

}  // namespace spt::algo
