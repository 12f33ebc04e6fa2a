// C ABI: CP-APR options, driver and the Poisson log-likelihood.
#include <memory>

#include "algo/cp_apr.hpp"
#include "api/guard.hpp"
#include "api/options_init.hpp"
#include "sptensor/cp_apr.h"

using namespace spt;

extern "C" {

SPT_API spt_status spt_cp_apr_options_init_size(spt_cp_apr_options* opts, size_t struct_size) {
  return guarded("spt_cp_apr_options_init", [&] {
    spt_cp_apr_options d{};
    set_run_defaults(d);
    d.rank = 10;
    d.max_outer_iters = 1000;
    d.max_inner_iters = 10;
    d.tol = 1e-4;
    d.kappa = 0.01;
    d.kappatol = 1e-10;
    d.epsilon = 1e-10;
    d.init = SPT_CP_APR_INIT_RANDOM;
    d.format = SPT_TENSOR_FORMAT_AUTO;
    write_options_defaults(opts, struct_size, d, offsetof(spt_cp_apr_options, format));
  });
}

// The exported symbol behind the header's macro of the same name (for
// callers that cannot use the macro, e.g. through an FFI): writes this
// release's whole struct.
SPT_API spt_status (spt_cp_apr_options_init)(spt_cp_apr_options* opts) { return spt_cp_apr_options_init_size(opts, sizeof *opts); }

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
