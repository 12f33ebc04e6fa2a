#include "algo/summed_norm.hpp"

#include "core/error.hpp"
#include "dispatch/dispatch.hpp"

namespace spt::algo {

void note_repeats(const spt_context_s& ctx, const char* algorithm, spt_nnz entries, spt_nnz distinct) {
  if (distinct >= entries) return;
  log(ctx, 1,
      cat(algorithm, ": ", entries - distinct, " of the ", entries,
          " nonzeros repeat a coordinate; their values are summed (", distinct, " distinct coordinates)"));
}

double summed_norm_squared(spt_context_s& ctx, const spt_coo_s& x, const char* algorithm) {
  const kernels::SummedStats stats = SPT_DISPATCH(ctx, summed_stats, x);
  note_repeats(ctx, algorithm, x.nnz, stats.distinct);
  return stats.norm_squared;
}

}  // namespace spt::algo
