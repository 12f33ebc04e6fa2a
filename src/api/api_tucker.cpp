// C ABI: Tucker-HOOI options and driver, and Tucker tensor accessors.
#include <algorithm>
#include <cstring>
#include <memory>

#include "algo/tucker_hooi.hpp"
#include "api/guard.hpp"
#include "api/options_init.hpp"

using namespace spt;

extern "C" {

SPT_API spt_status spt_tucker_options_init_size(spt_tucker_options* opts, size_t struct_size) {
  return guarded("spt_tucker_options_init", [&] {
    spt_tucker_options d{};
    set_run_defaults(d);
    d.ranks = nullptr;
    d.ranks_count = 0;
    d.max_iters = 50;
    d.tol = 1e-4;
    d.init = SPT_TUCKER_INIT_HOSVD;
    d.ttmc = SPT_TUCKER_TTMC_AUTO;
    write_options_defaults(opts, struct_size, d, kTuckerOptionsSize01);
  });
}

// The exported symbol behind the header's macro of the same name (for
// callers that cannot use the macro, e.g. through an FFI): writes this
// release's whole struct.
SPT_API spt_status (spt_tucker_options_init)(spt_tucker_options* opts) { return spt_tucker_options_init_size(opts, sizeof *opts); }

SPT_API spt_status spt_tucker_hooi(spt_context* ctx, const spt_coo* x, const spt_tucker_options* opts,
                                   spt_ttensor** out) {
  return guarded(ctx, "spt_tucker_hooi", [&]() -> spt_status {
    require_not_null(x, "tensor");
    require_not_null(opts, "opts (initialise one with spt_tucker_options_init)");
    require_not_null(out, "out");
    auto t = std::make_unique<spt_ttensor_s>();
    const spt_status status = tucker_hooi(resolve(ctx), *x, *opts, *t);
    *out = t.release();
    return status;
  });
}

SPT_API spt_status spt_ttensor_free(spt_ttensor* t) {
  delete t;
  return SPT_OK;
}

SPT_API spt_status spt_ttensor_info(spt_context* ctx, const spt_ttensor* t, spt_ttensor_summary* info) {
  return guarded(ctx, "spt_ttensor_info", [&] {
    require_not_null(t, "ttensor");
    require_not_null(info, "info");
    spt_ttensor_summary s;
    std::memset(&s, 0, sizeof(s));
    s.dtype = t->dtype();
    s.order = t->order();
    s.fit = t->fit;
    s.iterations = t->iterations;
    s.converged = t->converged;
    write_info(info, s, sizeof(spt_ttensor_summary), "spt_ttensor_summary");
  });
}

SPT_API spt_status spt_ttensor_core_dims(const spt_ttensor* t, spt_index* dims, spt_index* full_dims) {
  return guarded("spt_ttensor_core_dims", [&] {
    require_not_null(t, "ttensor");
    require_not_null(dims, "dims");
    std::copy(t->core_dims.begin(), t->core_dims.end(), dims);
    if (full_dims) std::copy(t->dims.begin(), t->dims.end(), full_dims);
  });
}

SPT_API spt_status spt_ttensor_core(const spt_ttensor* t, const void** core) {
  return guarded("spt_ttensor_core", [&] {
    require_not_null(t, "ttensor");
    require_not_null(core, "core");
    *core = t->core.data();
  });
}

SPT_API spt_status spt_ttensor_factor(const spt_ttensor* t, uint32_t mode, const spt_matrix** factor) {
  return guarded("spt_ttensor_factor", [&] {
    require_not_null(t, "ttensor");
    require_not_null(factor, "factor");
    require(mode < t->order(), "mode ", mode, " out of range for an order-", t->order(), " ttensor");
    *factor = t->factors[mode].get();
  });
}

SPT_API spt_status spt_ttensor_history(const spt_ttensor* t, int* count, const double** fits,
                                       const double** seconds) {
  return guarded("spt_ttensor_history", [&] {
    require_not_null(t, "ttensor");
    if (count) *count = static_cast<int>(t->fit_history.size());
    if (fits) *fits = t->fit_history.data();
    if (seconds) *seconds = t->seconds_history.data();
  });
}

}  // extern "C"
