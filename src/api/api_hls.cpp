// C ABI: HLS tensors (include/sptensor/hls.h). Every call validates its
// arguments and runs inside guarded(); the MTTKRP and TTMc go through
// SPT_DISPATCH (GPU tensor-core kernels under a CUDA backend, else the
// reference or OpenMP kernels). The build runs on the host; only its dense
// threshold may come from the device (dispatch::hls_dense_threshold).
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

#include "api/guard.hpp"
#include "api/matrix_checks.hpp"
#include "api/options_init.hpp"
#include "core/coo.hpp"
#include "core/hls.hpp"
#include "core/matrix.hpp"
#include "dispatch/device_hls.hpp"
#include "dispatch/dispatch.hpp"

using namespace spt;

namespace {

struct BuildOptions {
  hls::Params params;
  spt_hls_precision precision = SPT_HLS_PRECISION_AUTO;
};

BuildOptions options_from(const spt_hls_options* opts) {
  BuildOptions b;
  if (!opts) return b;
  spt_hls_options d;
  spt_hls_options_init(&d);
  // The first release's struct ended before `precision`.
  const spt_hls_options o = read_options(opts, d, offsetof(spt_hls_options, precision), "spt_hls_options");
  b.params.root = o.root_mode;
  b.params.dense_threshold = o.dense_threshold;
  b.params.slab_depth = o.slab_depth;
  // A caller's struct that ends before `precision` means AUTO (the
  // defaults copied above); an unknown value is an error, not a guess.
  require(o.precision <= uint64_t(SPT_HLS_PRECISION_EXACT), "opts->precision is ", static_cast<int64_t>(o.precision),
          ": use an spt_hls_precision value (SPT_HLS_PRECISION_AUTO, _FP16, _BF16, _TF32 or _EXACT)");
  b.precision = static_cast<spt_hls_precision>(o.precision);
  return b;
}


}  // namespace

extern "C" {

SPT_API spt_status spt_hls_options_init_size(spt_hls_options* opts, size_t struct_size) {
  return guarded("spt_hls_options_init", [&] {
    spt_hls_options d{};
    d.root_mode = 0;
    d.dense_threshold = 0;  // resolved at build time: it depends on the order and slab depth
    d.slab_depth = 0;
    d.precision = SPT_HLS_PRECISION_AUTO;
    // The first release's struct ended before `precision`.
    write_options_defaults(opts, struct_size, d, offsetof(spt_hls_options, precision));
  });
}

// The exported symbol behind the header's macro of the same name (for
// callers that cannot use the macro, e.g. through an FFI).
SPT_API spt_status (spt_hls_options_init)(spt_hls_options* opts) { return spt_hls_options_init_size(opts, sizeof *opts); }

SPT_API spt_status spt_hls_from_coo(spt_context* ctx, const spt_coo* x, const spt_hls_options* opts, spt_hls** out) {
  return guarded(ctx, "spt_hls_from_coo", [&] {
    require_not_null(x, "x");
    require_not_null(out, "out");
    BuildOptions b = options_from(opts);
    const spt_context_s& c = resolve(ctx);
    const spt_hls_precision precision =
        b.precision == SPT_HLS_PRECISION_AUTO ? hls::kAutoPrecision : b.precision;
    const uint32_t order = x->order();
    bool calibrated = false;
    if (b.params.dense_threshold == 0 && (order == 3 || order == 4) &&
        dispatch::effective_backend(c) == SPT_BACKEND_CUDA) {
      // Validate first: a bad option is an error, not a measurement.
      hls::validate_params(b.params, order);
      const uint32_t depth =
          order == 4 ? (b.params.slab_depth ? b.params.slab_depth : hls::kDefaultSlabDepth) : 1;
      const dispatch::HlsThreshold t = dispatch::hls_dense_threshold(c, order, depth, precision);
      b.params.dense_threshold = t.threshold;
      calibrated = t.calibrated;
    }
    auto h = std::make_unique<spt_hls_s>(hls::from_coo(*x, b.params, dispatch::exec_for(c).threads));
    h->precision = precision;
    h->threshold_calibrated = calibrated;
    *out = h.release();
  });
}

SPT_API spt_status spt_hls_free(spt_hls* h) {
  delete h;
  return SPT_OK;
}

SPT_API spt_status spt_hls_info(spt_context* ctx, const spt_hls* h, spt_hls_summary* info) {
  return guarded(ctx, "spt_hls_info", [&] {
    require_not_null(h, "h");
    require_not_null(info, "info");
    spt_hls_summary s{};
    s.dtype = h->dtype();
    s.order = h->order();
    s.root_mode = h->root();
    s.dense_threshold = h->dense_threshold;
    s.slab_depth = h->slab_depth;
    s.index_bits = h->index_bits();
    s.input_nnz = h->input_nnz;
    s.nnz = h->nnz();
    s.tiles = h->tiles;
    s.dense_tiles = h->dense_tiles();
    s.sparse_tiles = h->tiles - h->dense_tiles();
    s.dense_nnz = h->dense_nnz();
    s.sparse_nnz = h->sparse_nnz();
    s.dense_fraction = s.nnz ? double(s.dense_nnz) / double(s.nnz) : 0.0;
    s.bytes = h->bytes();
    s.coo_bytes = uint64_t(h->input_nnz) * (uint64_t(h->order()) * sizeof(spt_index) + dtype_size(h->dtype()));
    s.build_seconds = h->build_seconds;
    s.precision = h->precision;
    s.threshold_calibrated = h->threshold_calibrated ? 1u : 0u;
    write_info(info, s, sizeof(spt_hls_summary), "spt_hls_summary");
  });
}

SPT_API spt_status spt_hls_dims(const spt_hls* h, spt_index* dims) {
  return guarded("spt_hls_dims", [&] {
    require_not_null(h, "h");
    require_not_null(dims, "dims");
    for (uint32_t m = 0; m < h->order(); ++m) dims[m] = h->dims[m];
  });
}

SPT_API spt_status spt_hls_to_coo(spt_context* ctx, const spt_hls* h, spt_coo** out) {
  return guarded(ctx, "spt_hls_to_coo", [&] {
    require_not_null(h, "h");
    require_not_null(out, "out");
    auto y = std::make_unique<spt_coo_s>(hls::to_coo(*h, dispatch::exec_for(resolve(ctx)).threads));
    *out = y.release();
  });
}

SPT_API spt_status spt_mttkrp_hls(spt_context* ctx, const spt_hls* h, const spt_matrix* const* factors, uint32_t mode,
                                  spt_matrix* out) {
  return guarded(ctx, "spt_mttkrp_hls", [&] {
    require_not_null(h, "h");
    require(mode < h->order(), "mode ", mode, " out of range for an order-", h->order(), " tensor (modes are 0-based)");
    if (mode != h->root())
      fail(SPT_ERR_UNSUPPORTED, "this HLS handle serves the MTTKRP in its root mode ", h->root(), ", not mode ", mode,
           ": build one with spt_hls_options.root_mode = ", mode);
    rooted_mttkrp(*h, factors, out, "root_mode", [&](const auto* refs, auto out_ref) {
      SPT_DISPATCH(resolve(ctx), mttkrp_hls, *h, refs, out_ref);
    });
  });
}

SPT_API spt_status spt_ttmc_hls(spt_context* ctx, const spt_hls* h, const spt_matrix* const* factors,
                                spt_matrix* out) {
  return guarded(ctx, "spt_ttmc_hls", [&] {
    require_not_null(h, "h");
    require_not_null(factors, "factors");
    require_not_null(out, "out");
    check_matrix_dtype(*out, h->dtype(), "out");
    const uint32_t root = h->root();
    with_dtype(h->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      FactorViews<T> v = factor_views<T>(h->dims, h->root(), h->dtype(), factors, out, 0, "root_mode");
      uint64_t columns = 1;
      for (uint32_t m = 0; m < h->order(); ++m)
        if (m != root)
          columns = checked_mul(columns, v.refs[m].cols, "the TTM-chain column count prod_{m != n} R_m");
      require(out->rows == h->dims[root] && out->cols == columns, "out must be dims[", root,
              "] x prod_{m != root_mode} R_m = ", shape(h->dims[root], columns), ", got ",
              shape(out->rows, out->cols));
      RowMajor<T> o(*out);
      SPT_DISPATCH(resolve(ctx), ttmc_hls, *h, v.refs.data(), o.ref());
      o.write_back();
    });
  });
}

}  // extern "C"
