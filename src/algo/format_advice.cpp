#include "algo/format_advice.hpp"

#include <iomanip>
#include <sstream>

#include "algo/memo_mttkrp.hpp"
#include "dispatch/dispatch.hpp"

namespace spt::algo {

FormatAdvice advise_format(spt_context_s& ctx, const spt_coo_s& x, spt_index rank) {
  FormatAdvice a;
  std::ostringstream why;
  why << std::setprecision(3);
  if (x.order() < 2) {
    a.format = SPT_TENSOR_FORMAT_COO;
    a.reason = "order 1: COO (the other formats need order >= 2).";
    return a;
  }
  const kernels::Exec exec = dispatch::exec_for(ctx);
  if (x.nnz < kAdviceSmallNnz) {
    // Everything is in cache; what matters is per-call overhead, and
    // HiCOO's direct strategy has the least (no private copies, no
    // atomics): it beat COO and CSF at 16 threads on the small benchmark
    // tensors and tied at 2 threads, and converts in a negligible time
    // here (docs/design-measurements.md, "kAdviceSmallNnz").
    a.hicoo = std::make_unique<spt_hicoo_s>(hicoo::from_coo(x, hicoo::Params{}, exec.threads));
    a.hicoo_stats = hicoo::compute_stats(*a.hicoo, exec.threads);
    a.have_hicoo_stats = true;
    a.format = SPT_TENSOR_FORMAT_HICOO;
    why << x.nnz << " nonzeros (< " << kAdviceSmallNnz
        << "): HiCOO; the tensor stays in cache and HiCOO's MTTKRP has the least per-call overhead.";
    a.reason = why.str();
    return a;
  }
  const uint64_t coo_bytes = x.nnz * (uint64_t(x.order()) * sizeof(spt_index) + dtype_size(x.dtype()));
  a.csf_first_tree = build_csf_tree(exec, x, csf_mode_order(x.dims, csf_shortest_mode(x.dims)));
  const double allmode = csf_allmode_bytes_estimate(a.csf_first_tree, x.order());
  why << "CSF, one tree per mode: about " << allmode / 1048576.0 << " MiB (" << allmode / double(coo_bytes)
      << "x the COO's " << coo_bytes / 1048576.0 << " MiB; budget " << kAutoAllmodeBudget << "x). ";
  if (csf_auto_picks_allmode(x, a.csf_first_tree)) {
    a.format = SPT_TENSOR_FORMAT_CSF;
    a.csf_policy = SPT_CSF_ALLMODE;
    why << "CSF ALLMODE: every MTTKRP runs at a tree root without conflicts; it was the fastest CP-ALS "
           "format (or within noise of it) on every benchmark tensor.";
    a.reason = why.str();
    return a;
  }
  // ALLMODE does not fit: a compact mode-neutral HiCOO, or one CSF tree.
  a.hicoo = std::make_unique<spt_hicoo_s>(hicoo::from_coo(x, hicoo::Params{}, exec.threads));
  a.hicoo_stats = hicoo::compute_stats(*a.hicoo, exec.threads);
  a.have_hicoo_stats = true;
  const hicoo::Stats& s = a.hicoo_stats;
  why << "Too large; HiCOO with B = " << a.hicoo->block_size() << ": block ratio alpha_b = " << s.block_ratio
      << " (storage break-even " << s.block_ratio_threshold << "), block density c_b = " << s.slice_per_block
      << " (CSF favoured below " << kAdviceMinSlicePerBlock << "), " << s.hicoo_bytes << " bytes vs " << s.coo_bytes
      << " in COO. ";
  const bool dense_blocks = s.slice_per_block >= kAdviceMinSlicePerBlock;
  const bool compresses = s.block_ratio <= s.block_ratio_threshold;
  if (dense_blocks || compresses) {
    a.format = SPT_TENSOR_FORMAT_HICOO;
    why << "HiCOO: " << (dense_blocks ? "its blocks are dense enough to keep factor rows in cache"
                                      : "it stores the tensor in less space than COO")
        << ", and it treats every mode alike (section 4.3.3).";
  } else {
    // The memoized sequence keeps up to order-2 levels of at most nnz
    // rank-wide rows; the planner trims that to the budget, but a tensor
    // whose single level cannot fit gains little from it.
    const uint64_t level_bytes = uint64_t(x.nnz) * rank * dtype_size(x.dtype());
    const bool memo = x.order() >= 4 && level_bytes <= physical_memory_bytes() / 4;
    a.format = SPT_TENSOR_FORMAT_CSF;
    a.csf_policy = memo ? SPT_CSF_MEMOIZED : SPT_CSF_ONEMODE;
    a.hicoo.reset();
    why << "CSF: HiCOO's blocks are nearly empty and larger than COO, so it gains no locality (section 4.3.3); "
        << (memo ? "one tree with its intermediates memoized across the sweep (ADATM, chapter 3, order >= 4)."
                 : "one tree.");
  }
  a.reason = why.str();
  return a;
}

}  // namespace spt::algo
