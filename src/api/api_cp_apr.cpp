// C ABI: CP-APR options, driver and the Poisson log-likelihood.
#include <memory>

#include "algo/cp_apr.hpp"
#include "api/guard.hpp"
#include "sptensor/cp_apr.h"

using namespace spt;

extern "C" {

SPT_API spt_status spt_cp_apr_options_init(spt_cp_apr_options* opts) {
  return guarded("spt_cp_apr_options_init", [&] {
    require_not_null(opts, "opts");
    *opts = spt_cp_apr_options{};
    opts->struct_size = sizeof(spt_cp_apr_options);
    opts->rank = 10;
    opts->max_outer_iters = 1000;
    opts->max_inner_iters = 10;
    opts->tol = 1e-4;
    opts->kappa = 0.01;
    opts->kappatol = 1e-10;
    opts->epsilon = 1e-10;
    opts->init = SPT_CP_APR_INIT_RANDOM;
    opts->seed = 0;
    opts->init_factors = nullptr;
    opts->callback = nullptr;
    opts->callback_data = nullptr;
    opts->format = SPT_TENSOR_FORMAT_AUTO;
  });
}

SPT_API spt_status spt_cp_apr(spt_context* ctx, const spt_coo* x, const spt_cp_apr_options* opts,
                              spt_ktensor** out) {
  return guarded(ctx, "spt_cp_apr", [&]() -> spt_status {
    require_not_null(x, "tensor");
    require_not_null(opts, "opts (initialise one with spt_cp_apr_options_init)");
    require_not_null(out, "out");
    auto k = std::make_unique<spt_ktensor_s>();
    const spt_status status = algo::cp_apr(resolve(ctx), *x, *opts, *k);
    *out = k.release();
    return status;
  });
}

SPT_API spt_status spt_cp_apr_loglikelihood(spt_context* ctx, const spt_coo* x, const spt_ktensor* k,
                                            double* loglik) {
  return guarded(ctx, "spt_cp_apr_loglikelihood", [&] {
    require_not_null(x, "tensor");
    require_not_null(k, "ktensor");
    require_not_null(loglik, "loglik");
    *loglik = algo::cp_apr_loglikelihood(*x, *k, thread_count(resolve(ctx)));
  });
}

}  // extern "C"
