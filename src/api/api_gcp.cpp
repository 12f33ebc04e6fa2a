// C ABI: GCP options, GCP-OPT and the GCP objective.
#include <cmath>
#include <limits>
#include <memory>

#include "algo/gcp_opt.hpp"
#include "api/guard.hpp"
#include "api/options_init.hpp"
#include "sptensor/gcp.h"

using namespace spt;

extern "C" {

SPT_API spt_status spt_gcp_options_init_size(spt_gcp_options* opts, size_t struct_size) {
  return guarded("spt_gcp_options_init", [&] {
    spt_gcp_options d{};
    set_run_defaults(d);
    d.rank = 10;
    d.loss = SPT_GCP_LOSS_GAUSSIAN;
    d.loss_parameter = 0.25;
    d.lower_bound = std::numeric_limits<double>::quiet_NaN();
    d.optimizer = SPT_GCP_OPTIMIZER_LBFGSB;
    d.max_iters = 1000;
    d.max_fun_evals = 15000;
    d.memory = 10;
    d.factr = 1e7;
    d.pgtol = 1e-5;
    d.init = SPT_GCP_INIT_RANDOM;
    d.missing = nullptr;
    d.rate = 1e-3;
    d.decay = 0.1;
    d.max_fails = 1;
    d.epoch_iters = 1000;
    d.f_est_tol = -std::numeric_limits<double>::infinity();
    d.beta1 = 0.9;
    d.beta2 = 0.999;
    d.epsilon = 1e-8;
    d.gradient_nonzeros = 0;
    d.gradient_zeros = 0;
    d.function_nonzeros = 0;
    d.function_zeros = 0;
    write_options_defaults(opts, struct_size, d, sizeof(spt_gcp_options));
  });
}

// The exported symbol behind the header's macro of the same name.
SPT_API spt_status (spt_gcp_options_init)(spt_gcp_options* opts) { return spt_gcp_options_init_size(opts, sizeof *opts); }

SPT_API spt_status spt_gcp_opt(spt_context* ctx, const spt_coo* x, const spt_gcp_options* opts, spt_ktensor** out) {
  return guarded(ctx, "spt_gcp_opt", [&]() -> spt_status {
    require_not_null(x, "tensor");
    require_not_null(opts, "opts (initialise one with spt_gcp_options_init)");
    require_not_null(out, "out");
    auto k = std::make_unique<spt_ktensor_s>();
    const spt_status status = algo::gcp_opt(resolve(ctx), *x, *opts, *k);
    *out = k.release();
    return status;
  });
}

SPT_API spt_status spt_gcp_objective(spt_context* ctx, const spt_coo* x, const spt_ktensor* k,
                                     const spt_gcp_options* opts, double* objective) {
  return guarded(ctx, "spt_gcp_objective", [&] {
    require_not_null(x, "tensor");
    require_not_null(k, "ktensor");
    require_not_null(opts, "opts");
    require_not_null(objective, "objective");
    *objective = algo::gcp_objective(resolve(ctx), *x, *k, *opts);
  });
}

}  // extern "C"
