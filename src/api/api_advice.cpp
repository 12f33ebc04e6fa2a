// C ABI: storage-format advice for CP-ALS.
#include <algorithm>
#include <cstring>

#include "algo/format_advice.hpp"
#include "api/guard.hpp"

using namespace spt;

extern "C" {

SPT_API spt_status spt_suggest_format(spt_context* ctx, const spt_coo* x, spt_index rank, spt_format_advice* advice) {
  return guarded(ctx, "spt_suggest_format", [&] {
    require_not_null(x, "x");
    require_not_null(advice, "advice");
    require(advice->struct_size != 0, "advice->struct_size is 0: set it to sizeof(spt_format_advice)");
    require(rank >= 1, "rank must be at least 1");
    // Fields the caller's (possibly older, smaller) struct has.
    spt_format_advice a;
    std::memset(&a, 0, sizeof(a));
    std::memcpy(&a, advice, std::min(advice->struct_size, sizeof(a)));
    require(a.reason != nullptr || a.reason_capacity == 0, "advice->reason_capacity is set but advice->reason is NULL");
    algo::FormatAdvice got = algo::advise_format(resolve(ctx), *x, rank);
    a.format = got.format;
    a.csf_policy = got.csf_policy;
    a.block_ratio = got.have_hicoo_stats ? got.hicoo_stats.block_ratio : 0.0;
    a.slice_per_block = got.have_hicoo_stats ? got.hicoo_stats.slice_per_block : 0.0;
    a.reason_length = got.reason.size();
    if (a.reason && a.reason_capacity > 0) {
      const size_t n = std::min(got.reason.size(), a.reason_capacity - 1);
      std::memcpy(a.reason, got.reason.data(), n);
      a.reason[n] = '\0';
    }
    std::memcpy(advice, &a, std::min(advice->struct_size, sizeof(a)));
  });
}

}  // extern "C"
