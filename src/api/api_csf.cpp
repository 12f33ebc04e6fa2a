// C ABI: CSF tensors (build, query, decode, free), their MTTKRP and CP-ALS. Every
// call validates its arguments before any work and runs inside guarded().
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "algo/cp_als.hpp"
#include "api/guard.hpp"
#include "api/matrix_checks.hpp"
#include "api/options_init.hpp"
#include "core/csf.hpp"
#include "core/ktensor.hpp"
#include "core/matrix.hpp"
#include "dispatch/dispatch.hpp"

using namespace spt;

extern "C" {

SPT_API spt_status spt_csf_options_init_size(spt_csf_options* opts, size_t struct_size) {
  return guarded("spt_csf_options_init", [&] {
    spt_csf_options d{};
    d.policy = SPT_CSF_AUTO;
    write_options_defaults(opts, struct_size, d, sizeof(spt_csf_options));
  });
}

// The exported symbol behind the header's macro of the same name (for
// callers that cannot use the macro, e.g. through an FFI).
SPT_API spt_status (spt_csf_options_init)(spt_csf_options* opts) { return spt_csf_options_init_size(opts, sizeof *opts); }

SPT_API spt_status spt_csf_from_coo(spt_context* ctx, const spt_coo* x, const spt_csf_options* opts, spt_csf** out) {
  return guarded(ctx, "spt_csf_from_coo", [&] {
    require_not_null(x, "x");
    require_not_null(out, "out");
    spt_csf_options d;
    spt_csf_options_init(&d);
    const spt_csf_policy policy = read_options(opts, d, sizeof(spt_csf_options), "spt_csf_options").policy;
    if (policy == SPT_CSF_MEMOIZED)
      fail(SPT_ERR_UNSUPPORTED, "opts->policy SPT_CSF_MEMOIZED is a CP-ALS strategy (spt_cpd_options.csf_policy), ",
           "not a layout of a CSF handle: use SPT_CSF_AUTO, _ONEMODE, _TWOMODE or _ALLMODE");
    auto csf = std::make_unique<spt_csf_s>();
    build_csf(dispatch::exec_for(resolve(ctx)), *x, policy, *csf);
    *out = csf.release();
  });
}

SPT_API spt_status spt_csf_free(spt_csf* x) {
  delete x;
  return SPT_OK;
}

SPT_API spt_status spt_csf_info(spt_context* ctx, const spt_csf* x, spt_csf_summary* info) {
  return guarded(ctx, "spt_csf_info", [&] {
    require_not_null(x, "x");
    require_not_null(info, "info");
    spt_csf_summary s;
    std::memset(&s, 0, sizeof(s));
    s.dtype = x->dtype;
    s.order = x->order();
    s.nnz = x->nnz;
    s.policy = x->policy;
    s.trees = static_cast<uint32_t>(x->trees.size());
    s.bytes = x->bytes();
    if (x->order() <= SPT_CSF_SUMMARY_MAX_ORDER)
      for (uint32_t t = 0; t < x->trees.size() && t < SPT_CSF_SUMMARY_MAX_ORDER; ++t)
        for (uint32_t l = 0; l < x->order(); ++l) s.mode_order[t][l] = x->trees[t].mode_order[l];
    for (uint32_t m = 0; m < x->order() && m < SPT_CSF_SUMMARY_MAX_ORDER; ++m) s.tree_for_mode[m] = x->tree_of_mode[m];
    write_info(info, s, sizeof(spt_csf_summary), "spt_csf_summary");
  });
}

SPT_API spt_status spt_csf_dims(const spt_csf* x, spt_index* dims) {
  return guarded("spt_csf_dims", [&] {
    require_not_null(x, "x");
    require_not_null(dims, "dims");
    std::copy(x->dims.begin(), x->dims.end(), dims);
  });
}

SPT_API spt_status spt_csf_to_coo(spt_context* ctx, const spt_csf* x, spt_coo** out) {
  return guarded(ctx, "spt_csf_to_coo", [&] {
    require_not_null(x, "x");
    require_not_null(out, "out");
    auto y = std::make_unique<spt_coo_s>(csf_to_coo(*x));
    *out = y.release();
  });
}

SPT_API spt_status spt_csf_fibers(const spt_csf* x, uint32_t tree, uint32_t level, spt_nnz* count) {
  return guarded("spt_csf_fibers", [&] {
    require_not_null(x, "x");
    require_not_null(count, "count");
    require(tree < x->trees.size(), "tree ", tree, " out of range: the handle has ", x->trees.size(), " tree(s)");
    require(level < x->order(), "level ", level, " out of range for an order-", x->order(), " tensor");
    *count = x->trees[tree].nodes(level);
  });
}

SPT_API spt_status spt_mttkrp_csf(spt_context* ctx, const spt_csf* x, const spt_matrix* const* factors,
                                  uint32_t mode, spt_matrix* out) {
  return guarded(ctx, "spt_mttkrp_csf", [&] {
    require_not_null(x, "x");
    require_not_null(factors, "factors");
    require_not_null(out, "out");
    require(mode < x->order(), "mode ", mode, " out of range for an order-", x->order(),
            " tensor (modes are 0-based)");
    check_matrix_dtype(*out, x->dtype, "out");
    const spt_nnz rank = out->cols;
    require(rank >= 1, "out must have at least one column (the rank R)");
    require(out->rows == x->dims[mode], "out must be dims[", mode, "] x R = ", shape(x->dims[mode], rank), ", got ",
            shape(out->rows, out->cols));
    for (uint32_t m = 0; m < x->order(); ++m) {
      if (m == mode) continue;
      const spt_matrix_s* f = factors[m];
      require(f != nullptr, "factors[", m, "] must not be NULL (only factors[mode] may be)");
      require(f != out, "out must not be the same matrix as factors[", m, "]");
      check_matrix_dtype(*f, x->dtype, cat("factors[", m, "]"));
      require(f->rows == x->dims[m] && f->cols == rank, "factors[", m, "] must be dims[", m, "] x R = ",
              shape(x->dims[m], rank), " (R from out), got ", shape(f->rows, f->cols));
    }
    with_dtype(x->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<std::unique_ptr<RowMajor<T>>> held(x->order());
      std::vector<ConstMatRef<T>> refs(x->order());
      for (uint32_t m = 0; m < x->order(); ++m) {
        if (m == mode) continue;
        held[m] = std::make_unique<RowMajor<T>>(const_cast<spt_matrix_s&>(*factors[m]));
        refs[m] = held[m]->cref();
      }
      RowMajor<T> o(*out);
      SPT_DISPATCH(resolve(ctx), mttkrp_csf, *x, refs.data(), mode, o.ref());
      o.write_back();
    });
  });
}

SPT_API spt_status spt_cpd_als_csf(spt_context* ctx, const spt_csf* x, const spt_cpd_options* opts,
                                   spt_ktensor** out) {
  return guarded(ctx, "spt_cpd_als_csf", [&]() -> spt_status {
    require_not_null(x, "tensor");
    require_not_null(opts, "opts (initialise one with spt_cpd_options_init)");
    require_not_null(out, "out");
    auto k = std::make_unique<spt_ktensor_s>();
    const spt_status status = cp_als_csf(resolve(ctx), *x, *opts, *k);
    *out = k.release();
    return status;
  });
}

}  // extern "C"
