// C ABI: B-CSF / HB-CSF tensors (include/sptensor/hbcsf.h). Every call
// validates its arguments and runs inside guarded(); the MTTKRPs go through
// the dispatcher (device kernels under CUDA, else the OpenMP kernels).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "api/guard.hpp"
#include "api/matrix_checks.hpp"
#include "api/options_init.hpp"
#include "core/coo.hpp"
#include "core/hbcsf.hpp"
#include "core/matrix.hpp"
#include "dispatch/dispatch.hpp"
#include "dispatch/mttkrp_hbcsf_mode.hpp"

using namespace spt;

namespace {

hbcsf::Params params_from(const spt_hbcsf_options* opts, uint32_t* root_mode) {
  hbcsf::Params p;
  spt_hbcsf_options d;
  spt_hbcsf_options_init(&d);
  const spt_hbcsf_options o = read_options(opts, d, sizeof(spt_hbcsf_options), "spt_hbcsf_options");
  if (o.fiber_threshold) p.fiber_threshold = o.fiber_threshold;
  if (o.slice_split_nnz) p.slice_split_nnz = o.slice_split_nnz;
  if (o.slice_bin_min_nnz) p.slice_bin_min_nnz = o.slice_bin_min_nnz;
  p.flags = o.flags;
  *root_mode = o.root_mode;
  hbcsf::validate_params(p);
  return p;
}

}  // namespace

extern "C" {

SPT_API spt_status spt_hbcsf_options_init_size(spt_hbcsf_options* opts, size_t struct_size) {
  return guarded("spt_hbcsf_options_init", [&] {
    spt_hbcsf_options d{};
    d.root_mode = 0;
    d.fiber_threshold = hbcsf::kDefaultFiberThreshold;
    d.slice_split_nnz = hbcsf::kDefaultSliceSplitNnz;
    d.slice_bin_min_nnz = hbcsf::kDefaultBinMinNnz;
    d.flags = 0;
    write_options_defaults(opts, struct_size, d, sizeof(spt_hbcsf_options));
  });
}

// The exported symbol behind the header's macro of the same name (for
// callers that cannot use the macro, e.g. through an FFI).
SPT_API spt_status (spt_hbcsf_options_init)(spt_hbcsf_options* opts) {
  return spt_hbcsf_options_init_size(opts, sizeof *opts);
}

SPT_API spt_status spt_hbcsf_from_coo(spt_context* ctx, const spt_coo* x, const spt_hbcsf_options* opts,
                                      spt_hbcsf** out) {
  return guarded(ctx, "spt_hbcsf_from_coo", [&] {
    require_not_null(x, "x");
    require_not_null(out, "out");
    uint32_t mode = 0;
    const hbcsf::Params p = params_from(opts, &mode);
    const spt_context_s& c = resolve(ctx);
    auto h = std::make_unique<spt_hbcsf_s>(hbcsf::from_coo(*x, mode, p, dispatch::exec_for(c).threads));
    *out = h.release();
  });
}

SPT_API spt_status spt_hbcsf_free(spt_hbcsf* h) {
  delete h;
  return SPT_OK;
}

SPT_API spt_status spt_hbcsf_info(spt_context* ctx, const spt_hbcsf* h, spt_hbcsf_summary* info) {
  return guarded(ctx, "spt_hbcsf_info", [&] {
    require_not_null(h, "h");
    require_not_null(info, "info");
    spt_hbcsf_summary s{};
    s.dtype = h->dtype();
    s.order = h->order();
    s.root_mode = h->root();
    s.flags = h->params.flags;
    s.fiber_threshold = h->params.fiber_threshold;
    s.slice_split_nnz = h->params.slice_split_nnz;
    s.slice_bin_min_nnz = h->params.slice_bin_min_nnz;
    s.bins = h->bins();
    s.nnz = h->nnz;
    s.coo_nnz = h->coo_nnz();
    s.csl_nnz = h->csl_nnz();
    s.bcsf_nnz = h->bcsf_nnz();
    s.coo_slices = h->coo_nnz();
    s.csl_slices = h->csl_slices();
    s.bcsf_slices = h->bcsf_slices();
    s.bcsf_fibers = h->bcsf_fibers;
    s.bcsf_segments = h->segments();
    s.split_fibers = h->split_fibers;
    s.units = h->units();
    s.split_slices = h->split_slices;
    s.bytes = h->bytes();
    s.coo_bytes = uint64_t(h->nnz) * (uint64_t(h->order()) * sizeof(spt_index) + dtype_size(h->dtype()));
    write_info(info, s, sizeof(spt_hbcsf_summary), "spt_hbcsf_summary");
  });
}

SPT_API spt_status spt_hbcsf_dims(const spt_hbcsf* h, spt_index* dims) {
  return guarded("spt_hbcsf_dims", [&] {
    require_not_null(h, "h");
    require_not_null(dims, "dims");
    for (uint32_t m = 0; m < h->order(); ++m) dims[m] = h->dims[m];
  });
}

SPT_API spt_status spt_hbcsf_to_coo(spt_context* ctx, const spt_hbcsf* h, spt_coo** out) {
  return guarded(ctx, "spt_hbcsf_to_coo", [&] {
    require_not_null(h, "h");
    require_not_null(out, "out");
    auto y = std::make_unique<spt_coo_s>(hbcsf::to_coo(*h, dispatch::exec_for(resolve(ctx)).threads));
    *out = y.release();
  });
}

SPT_API spt_status spt_mttkrp_hbcsf(spt_context* ctx, const spt_hbcsf* h, const spt_matrix* const* factors,
                                    uint32_t mode, spt_matrix* out) {
  return guarded(ctx, "spt_mttkrp_hbcsf", [&] {
    require_not_null(h, "h");
    require(mode < h->order(), "mode ", mode, " out of range for an order-", h->order(), " tensor (modes are 0-based)");
    const spt_context_s& c = resolve(ctx);
    handle_mttkrp(*h, mode, factors, out, "mode", [&](const auto* refs, auto out_ref) {
      // The root: the per-group kernels. Another mode: the non-root
      // kernels (dispatch/mttkrp_hbcsf_mode.hpp).
      if (mode == h->root()) {
        SPT_DISPATCH(c, mttkrp_hbcsf, *h, refs, out_ref);
        return;
      }
      dispatch::mttkrp_hbcsf_mode(c, *h, refs, mode, out_ref);
    });
  });
}

}  // extern "C"
