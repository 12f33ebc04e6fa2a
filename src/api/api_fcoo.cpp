// C ABI: F-COO tensors (include/sptensor/fcoo.h). Every call validates its
// arguments and runs inside guarded(); the products go through SPT_DISPATCH
// (GPU when the context resolves to CUDA, else the OpenMP or reference
// kernels).
#include <cstring>
#include <memory>
#include <vector>

#include "api/guard.hpp"
#include "api/matrix_checks.hpp"
#include "api/options_init.hpp"
#include "core/coo.hpp"
#include "core/fcoo.hpp"
#include "core/matrix.hpp"
#include "core/scoo.hpp"
#include "dispatch/dispatch.hpp"
#include "dispatch/plugin_loader.hpp"

using namespace spt;

namespace {


// Multiprocessors of the context's device when it runs on CUDA (0 = unknown).
int context_multiprocessors(const spt_context_s& ctx) {
  if (dispatch::effective_backend(ctx) != SPT_BACKEND_CUDA) return 0;
  const dispatch::CudaPlugin& cuda = dispatch::cuda_plugin();
  if (ctx.device < 0 || ctx.device >= static_cast<int>(cuda.devices.size())) return 0;
  return cuda.devices[ctx.device].multiprocessors;
}


}  // namespace

extern "C" {

SPT_API spt_status spt_fcoo_suggest_threadlen(spt_nnz nnz, spt_index rank, spt_dtype dtype, int multiprocessors,
                                              uint32_t* threadlen) {
  return guarded("spt_fcoo_suggest_threadlen", [&] {
    require_not_null(threadlen, "threadlen");
    check_dtype(dtype);
    require(multiprocessors >= 0, "multiprocessors is ", multiprocessors, ": pass a count, or 0 for the default of 132");
    *threadlen = fcoo::suggested_threadlen(nnz, uint64_t(rank ? rank : 16) * dtype_size(dtype), multiprocessors);
  });
}

SPT_API spt_status spt_fcoo_options_init_size(spt_fcoo_options* opts, size_t struct_size) {
  return guarded("spt_fcoo_options_init", [&] {
    spt_fcoo_options d{};
    d.operation = SPT_FCOO_MTTKRP;
    d.mode = 0;
    d.threadlen = 0;  // resolved at build time from the tensor and the context's device
    write_options_defaults(opts, struct_size, d, sizeof(spt_fcoo_options));
  });
}

// The exported symbol behind the header's macro of the same name (for
// callers that cannot use the macro, e.g. through an FFI).
SPT_API spt_status (spt_fcoo_options_init)(spt_fcoo_options* opts) {
  return spt_fcoo_options_init_size(opts, sizeof *opts);
}

SPT_API spt_status spt_fcoo_from_coo(spt_context* ctx, const spt_coo* x, const spt_fcoo_options* opts,
                                     spt_fcoo** out) {
  return guarded(ctx, "spt_fcoo_from_coo", [&] {
    require_not_null(x, "x");
    require_not_null(out, "out");
    spt_fcoo_options d;
    spt_fcoo_options_init(&d);
    const spt_fcoo_options o = read_options(opts, d, sizeof(spt_fcoo_options), "spt_fcoo_options");
    const spt_context_s& c = resolve(ctx);
    uint32_t threadlen = o.threadlen;
    if (threadlen == 0)
      threadlen = fcoo::suggested_threadlen(x->nnz, 16 * dtype_size(x->dtype()), context_multiprocessors(c));
    auto f = std::make_unique<spt_fcoo_s>(
        fcoo::from_coo(*x, o.operation, o.mode, threadlen, dispatch::exec_for(c).threads));
    *out = f.release();
  });
}

SPT_API spt_status spt_fcoo_free(spt_fcoo* f) {
  delete f;
  return SPT_OK;
}

SPT_API spt_status spt_fcoo_info(spt_context* ctx, const spt_fcoo* f, spt_fcoo_summary* info) {
  return guarded(ctx, "spt_fcoo_info", [&] {
    require_not_null(f, "f");
    require_not_null(info, "info");
    spt_fcoo_summary s;
    std::memset(&s, 0, sizeof(s));
    s.dtype = f->dtype();
    s.order = f->order();
    s.nnz = f->nnz;
    s.operation = f->op;
    s.mode = f->mode;
    s.threadlen = f->threadlen;
    s.segments = f->segments;
    s.bytes = f->bytes();
    write_info(info, s, sizeof(spt_fcoo_summary), "spt_fcoo_summary");
  });
}

SPT_API spt_status spt_fcoo_dims(const spt_fcoo* f, spt_index* dims) {
  return guarded("spt_fcoo_dims", [&] {
    require_not_null(f, "f");
    require_not_null(dims, "dims");
    for (uint32_t m = 0; m < f->order(); ++m) dims[m] = f->dims[m];
  });
}

SPT_API spt_status spt_fcoo_to_coo(spt_context* ctx, const spt_fcoo* f, spt_coo** out) {
  return guarded(ctx, "spt_fcoo_to_coo", [&] {
    require_not_null(f, "f");
    require_not_null(out, "out");
    auto y = std::make_unique<spt_coo_s>(fcoo::to_coo(*f, dispatch::exec_for(resolve(ctx)).threads));
    *out = y.release();
  });
}

SPT_API spt_status spt_mttkrp_fcoo(spt_context* ctx, const spt_fcoo* f, const spt_matrix* const* factors,
                                   uint32_t mode, spt_matrix* out) {
  return guarded(ctx, "spt_mttkrp_fcoo", [&] {
    require_not_null(f, "f");
    require_not_null(factors, "factors");
    require_not_null(out, "out");
    require(mode < f->order(), "mode ", mode, " out of range for an order-", f->order(), " tensor (modes are 0-based)");
    if (f->op != SPT_FCOO_MTTKRP)
      fail(SPT_ERR_UNSUPPORTED, "spt_mttkrp_fcoo needs an F-COO built with SPT_FCOO_MTTKRP, this one was built with "
           "SPT_FCOO_TTM");
    if (mode != f->mode)
      fail(SPT_ERR_UNSUPPORTED, "this F-COO serves the MTTKRP in mode ", f->mode, ", not mode ", mode,
           ": build one with spt_fcoo_options.mode = ", mode);
    check_matrix_dtype(*out, f->dtype(), "out");
    const spt_nnz rank = out->cols;
    require(rank >= 1, "out must have at least one column (the rank R)");
    require(out->rows == f->dims[f->mode], "out must be dims[", f->mode, "] x R = ", shape(f->dims[f->mode], rank),
            ", got ", shape(out->rows, out->cols));
    with_dtype(f->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      FactorViews<T> v = factor_views<T>(f->dims, f->mode, f->dtype(), factors, out, rank, "mode");
      RowMajor<T> o(*out);
      SPT_DISPATCH(resolve(ctx), mttkrp_fcoo, *f, v.refs.data(), o.ref());
      o.write_back();
    });
  });
}

SPT_API spt_status spt_ttm_fcoo(spt_context* ctx, const spt_fcoo* f, const spt_matrix* u, spt_scoo** out) {
  return guarded(ctx, "spt_ttm_fcoo", [&] {
    require_not_null(f, "f");
    require_not_null(u, "u");
    require_not_null(out, "out");
    fcoo::require_op(*f, SPT_FCOO_TTM, "spt_ttm_fcoo");
    check_matrix_dtype(*u, f->dtype(), "u");
    require(u->rows == f->dims[f->mode] && u->cols >= 1, "u must be dims[", f->mode, "] x R = ", f->dims[f->mode],
            " x R with R >= 1, got ", shape(u->rows, u->cols));
    if (u->cols > UINT32_MAX) fail(SPT_ERR_OVERFLOW, "u has ", u->cols, " columns; the dense mode must fit 32 bits");
    auto y = std::make_unique<spt_scoo_s>();
    with_dtype(f->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      RowMajor<T> um(const_cast<spt_matrix_s&>(*u));
      SPT_DISPATCH(resolve(ctx), ttm_fcoo, *f, um.cref(), *y);
    });
    *out = y.release();
  });
}

SPT_API spt_status spt_ttmc_fcoo(spt_context* ctx, const spt_fcoo* f, const spt_matrix* const* factors,
                                 spt_matrix* out) {
  return guarded(ctx, "spt_ttmc_fcoo", [&] {
    require_not_null(f, "f");
    require_not_null(factors, "factors");
    require_not_null(out, "out");
    fcoo::require_op(*f, SPT_FCOO_MTTKRP, "spt_ttmc_fcoo");
    check_matrix_dtype(*out, f->dtype(), "out");
    with_dtype(f->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      FactorViews<T> v = factor_views<T>(f->dims, f->mode, f->dtype(), factors, out, 0, "mode");
      uint64_t columns = 1;
      for (uint32_t m : f->product_modes)
        columns = checked_mul(columns, v.refs[m].cols, "the TTM-chain column count prod_{m != n} R_m");
      require(out->rows == f->dims[f->mode] && out->cols == columns, "out must be dims[", f->mode,
              "] x prod_{m != mode} R_m = ", shape(f->dims[f->mode], columns), ", got ",
              shape(out->rows, out->cols));
      RowMajor<T> o(*out);
      SPT_DISPATCH(resolve(ctx), ttmc_fcoo, *f, v.refs.data(), o.ref());
      o.write_back();
    });
  });
}

}  // extern "C"
