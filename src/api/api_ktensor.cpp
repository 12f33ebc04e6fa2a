// C ABI: Kruskal tensors (accessors; norm and inner product live with their
// kernels).
#include <algorithm>
#include <cstring>
#include <memory>

#include "api/guard.hpp"
#include "api/options_init.hpp"
#include "core/coo.hpp"
#include "core/ktensor.hpp"

using namespace spt;

extern "C" {

SPT_API spt_status spt_ktensor_create(spt_context* ctx, spt_dtype dtype, uint32_t order, const spt_index* dims,
                                      spt_index rank, spt_ktensor** out) {
  return guarded(ctx, "spt_ktensor_create", [&] {
    require_not_null(out, "out");
    check_dtype(dtype);
    validate_dims(order, dims);
    auto k = std::make_unique<spt_ktensor_s>();
    init_ktensor(*k, dtype, std::vector<spt_index>(dims, dims + order), rank);
    *out = k.release();
  });
}

SPT_API spt_status spt_ktensor_free(spt_ktensor* k) {
  delete k;
  return SPT_OK;
}

SPT_API spt_status spt_ktensor_info(spt_context* ctx, const spt_ktensor* k, spt_ktensor_summary* info) {
  return guarded(ctx, "spt_ktensor_info", [&] {
    require_not_null(k, "ktensor");
    require_not_null(info, "info");
    spt_ktensor_summary s;
    std::memset(&s, 0, sizeof(s));
    s.dtype = k->dtype();
    s.order = k->order();
    s.rank = k->rank;
    s.iterations = k->iterations;
    s.fit = k->fit;
    s.converged = k->converged;
    write_info(info, s, sizeof(spt_ktensor_summary), "spt_ktensor_summary");
  });
}

SPT_API spt_status spt_ktensor_dims(const spt_ktensor* k, spt_index* dims) {
  return guarded("spt_ktensor_dims", [&] {
    require_not_null(k, "ktensor");
    require_not_null(dims, "dims");
    std::copy(k->dims.begin(), k->dims.end(), dims);
  });
}

SPT_API spt_status spt_ktensor_lambda(spt_ktensor* k, void** lambda) {
  return guarded("spt_ktensor_lambda", [&] {
    require_not_null(k, "ktensor");
    require_not_null(lambda, "lambda");
    *lambda = k->lambda.data();
  });
}

SPT_API spt_status spt_ktensor_factor(spt_ktensor* k, uint32_t mode, spt_matrix** factor) {
  return guarded("spt_ktensor_factor", [&] {
    require_not_null(k, "ktensor");
    require_not_null(factor, "factor");
    require(mode < k->order(), "mode ", mode, " out of range for an order-", k->order(), " ktensor");
    *factor = k->factors[mode].get();
  });
}

SPT_API spt_status spt_ktensor_result(const spt_ktensor* k, double* fit, int* iterations, int* converged) {
  return guarded("spt_ktensor_result", [&] {
    require_not_null(k, "ktensor");
    if (fit) *fit = k->fit;
    if (iterations) *iterations = k->iterations;
    if (converged) *converged = k->converged;
  });
}

SPT_API spt_status spt_ktensor_history(const spt_ktensor* k, int* count, const double** fits,
                                       const double** seconds) {
  return guarded("spt_ktensor_history", [&] {
    require_not_null(k, "ktensor");
    if (count) *count = static_cast<int>(k->fit_history.size());
    if (fits) *fits = k->fit_history.data();
    if (seconds) *seconds = k->seconds_history.data();
  });
}

}  // extern "C"
