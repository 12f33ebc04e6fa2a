// C ABI: CP-ALS options and driver, and the Kruskal tensor norm.
#include <cmath>
#include <memory>

#include "algo/cp_als.hpp"
#include "api/guard.hpp"

using namespace spt;

extern "C" {

SPT_API spt_status spt_cpd_options_init(spt_cpd_options* opts) {
  return guarded("spt_cpd_options_init", [&] {
    require_not_null(opts, "opts");
    *opts = spt_cpd_options{};
    opts->struct_size = sizeof(spt_cpd_options);
    opts->rank = 10;
    opts->max_iters = 50;
    opts->tol = 1e-4;
    opts->init = SPT_CPD_INIT_RANDOM;
    opts->seed = 0;
    opts->init_factors = nullptr;
    opts->callback = nullptr;
    opts->callback_data = nullptr;
  });
}

SPT_API spt_status spt_cpd_als(spt_context* ctx, const spt_coo* x, const spt_cpd_options* opts, spt_ktensor** out) {
  return guarded(ctx, "spt_cpd_als", [&]() -> spt_status {
    require_not_null(x, "tensor");
    require_not_null(opts, "opts (initialise one with spt_cpd_options_init)");
    require_not_null(out, "out");
    auto k = std::make_unique<spt_ktensor_s>();
    const spt_status status = cp_als(resolve(ctx), *x, *opts, *k);
    *out = k.release();
    return status;
  });
}

SPT_API spt_status spt_ktensor_norm(spt_context* ctx, const spt_ktensor* k, double* norm) {
  return guarded(ctx, "spt_ktensor_norm", [&] {
    require_not_null(k, "ktensor");
    require_not_null(norm, "norm");
    *norm = std::sqrt(ktensor_norm_squared(resolve(ctx), *k));
  });
}

}  // extern "C"
