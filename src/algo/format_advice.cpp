#include "algo/format_advice.hpp"

#include <iomanip>
#include <sstream>

#include "dispatch/dispatch.hpp"
#include "algo/memo_mttkrp.hpp"

namespace spt::algo {

FormatAdvice advise_format(spt_context_s& ctx, const spt_coo_s& x, spt_index rank) {
  FormatAdvice a;
  std::ostringstream why;
  if (x.order() < 2) {
    a.format = SPT_TENSOR_FORMAT_COO;
    a.reason = "order 1: COO (the other formats need order >= 2).";
    return a;
  }
  if (x.nnz < kAdviceSmallNnz) {
    a.format = SPT_TENSOR_FORMAT_COO;
    why << x.nnz << " nonzeros (< " << kAdviceSmallNnz
        << "): COO; the whole tensor stays in cache and a conversion would cost more than it saves.";
    a.reason = why.str();
    return a;
  }
  const int threads = dispatch::exec_for(ctx).threads;
  a.hicoo = std::make_unique<spt_hicoo_s>(hicoo::from_coo(x, hicoo::Params{}, threads));
  a.hicoo_stats = hicoo::compute_stats(*a.hicoo, threads);
  a.have_hicoo_stats = true;
  const hicoo::Stats& s = a.hicoo_stats;
  why << std::setprecision(3) << "HiCOO with B = " << a.hicoo->block_size() << ": block ratio alpha_b = " << s.block_ratio
      << " (storage break-even " << s.block_ratio_threshold << "), block density c_b = " << s.slice_per_block
      << " (CSF favoured below " << kAdviceMinSlicePerBlock << "), " << s.hicoo_bytes << " bytes vs " << s.coo_bytes
      << " in COO. ";
  const bool dense_blocks = s.slice_per_block >= kAdviceMinSlicePerBlock;
  const bool compresses = s.block_ratio <= s.block_ratio_threshold;
  if (dense_blocks || compresses) {
    a.format = SPT_TENSOR_FORMAT_HICOO;
    why << "HiCOO: " << (dense_blocks ? "its blocks are dense enough to keep factor rows in cache"
                                      : "it stores the tensor in less space than COO")
        << " (section 4.3.3).";
  } else {
    a.format = SPT_TENSOR_FORMAT_CSF;
    // The memoized sequence keeps up to order-2 levels of at most nnz
    // rank-wide rows; the planner trims that to the budget, but a tensor
    // whose single level cannot fit gains little from it.
    const uint64_t level_bytes = uint64_t(x.nnz) * rank * dtype_size(x.dtype());
    const bool memo_fits = level_bytes <= physical_memory_bytes() / 4;
    const bool memo = x.order() >= 4 && memo_fits;
    a.csf_policy = memo ? SPT_CSF_MEMOIZED : SPT_CSF_AUTO;
    a.hicoo.reset();
    why << "CSF: the blocks are nearly empty and larger than COO, so HiCOO gains no locality (section 4.3.3); "
        << (memo ? "memoized MTTKRP sequence for order >= 4 (ADATM, chapter 3)."
                 : "one tree per mode when they fit 4x the COO's bytes, else one tree.");
  }
  a.reason = why.str();
  return a;
}

}  // namespace spt::algo
