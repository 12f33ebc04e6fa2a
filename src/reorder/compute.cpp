#include "reorder/compute.hpp"

#include "core/error.hpp"
#include "dispatch/dispatch.hpp"
#include "reorder/bfs_mcs.hpp"
#include "reorder/lexi_order.hpp"
#include "reorder/random_order.hpp"

namespace spt::reorder {

void validate_options(const spt_reorder_options& opts) {
  require(opts.struct_size >= sizeof(spt_reorder_options), "opts.struct_size is ", opts.struct_size, ", expected ",
          sizeof(spt_reorder_options), "; initialise the options with spt_reorder_options_init()");
  require(opts.method == SPT_REORDER_LEXI || opts.method == SPT_REORDER_BFS_MCS || opts.method == SPT_REORDER_RANDOM,
          "opts.method must be SPT_REORDER_LEXI (0), SPT_REORDER_BFS_MCS (1) or SPT_REORDER_RANDOM (2), got ",
          static_cast<int>(opts.method));
  if (opts.method == SPT_REORDER_LEXI)
    require(opts.iterations >= 1, "opts.iterations must be at least 1 for LEXI-ORDER, got ", opts.iterations);
}

spt_permutation_s compute(const spt_context_s& ctx, const spt_coo_s& x, const spt_reorder_options& opts) {
  validate_options(opts);
  const int threads = dispatch::exec_for(ctx).threads;
  spt_permutation_s result;
  switch (opts.method) {
    case SPT_REORDER_LEXI:
      result.per_mode = lexi_order(x, opts.iterations, threads);
      break;
    case SPT_REORDER_BFS_MCS:
      result.per_mode = bfs_mcs_order(x, threads);
      break;
    case SPT_REORDER_RANDOM:
      result.per_mode = random_order(x.dims, opts.seed != 0 ? opts.seed : ctx.seed);
      break;
    default:  // rejected by validate_options
      fail(SPT_ERR_INTERNAL, "unhandled reorder method ", static_cast<int>(opts.method));
  }
  return result;
}

}  // namespace spt::reorder
