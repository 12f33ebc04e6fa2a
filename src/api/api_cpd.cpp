// C ABI: CP-ALS options and driver, and the Kruskal tensor norm.
#include <cmath>
#include <memory>

#include "algo/cp_als.hpp"
#include "api/guard.hpp"
#include "api/options_init.hpp"

using namespace spt;

extern "C" {

SPT_API spt_status spt_cpd_options_init_size(spt_cpd_options* opts, size_t struct_size) {
  return guarded("spt_cpd_options_init", [&] {
    spt_cpd_options d{};
    set_cpd_defaults(d);
    write_options_defaults(opts, struct_size, d, kCpdOptionsSize01);
  });
}

// The exported symbol behind the header's macro of the same name (for
// callers that cannot use the macro, e.g. through an FFI): writes this
// release's whole struct.
SPT_API spt_status (spt_cpd_options_init)(spt_cpd_options* opts) { return spt_cpd_options_init_size(opts, sizeof *opts); }

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

SPT_API spt_status spt_cpd_als_take(spt_context* ctx, spt_coo** x, const spt_cpd_options* opts, spt_ktensor** out) {
  return guarded(ctx, "spt_cpd_als_take", [&]() -> spt_status {
    require_not_null(x, "x");
    require_not_null(*x, "tensor (*x)");
    // The handle is ours from here on, whatever happens below.
    std::unique_ptr<spt_coo_s> taken(*x);
    *x = nullptr;
    require_not_null(opts, "opts (initialise one with spt_cpd_options_init)");
    require_not_null(out, "out");
    auto k = std::make_unique<spt_ktensor_s>();
    const spt_status status = cp_als_take(resolve(ctx), std::move(taken), *opts, *k);
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
