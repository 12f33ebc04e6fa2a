// Which storage format a CP-ALS should run on (spt_suggest_format and
// `--format auto`), from the tensor's statistics and the thresholds of Li's
// dissertation §4.3.3, checked against our own measurements
// (benchmarks/results): HiCOO's MTTKRP was the fastest on every benchmark
// tensor whose blocks are dense enough, CSF wins when blocks are nearly
// empty, and COO only on tensors too small to repay a conversion.
#pragma once

#include <memory>
#include <string>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/hicoo.hpp"

namespace spt::algo {

// Below this many nonzeros every format runs from cache and the
// conversion costs more than it saves over a few dozen sweeps.
constexpr spt_nnz kAdviceSmallNnz = 16384;
// §4.3.3: below this block density (\bar c_b) HiCOO's MTTKRP falls behind CSF.
constexpr double kAdviceMinSlicePerBlock = 0.01;

struct FormatAdvice {
  spt_tensor_format format = SPT_TENSOR_FORMAT_COO;
  spt_csf_policy csf_policy = SPT_CSF_AUTO;  // when format is CSF
  std::string reason;                        // sentences: the statistics and the rule that fired
  bool have_hicoo_stats = false;
  hicoo::Stats hicoo_stats;                  // with the suggested B and L (when computed)
  std::unique_ptr<spt_hicoo_s> hicoo;        // the HiCOO built for the statistics (reusable)
};

// Deterministic for a given tensor, rank and thread count. Builds a HiCOO
// copy of x for its statistics unless x is small or of order < 2. `rank`
// sizes the memoized CSF intermediates (nnz x rank values per level).
FormatAdvice advise_format(spt_context_s& ctx, const spt_coo_s& x, spt_index rank);

}  // namespace spt::algo
