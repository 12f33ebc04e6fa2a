// C ABI: HiCOO tensors (include/sptensor/hicoo.h). Every call validates its
// arguments and runs inside guarded(); the MTTKRP goes through SPT_DISPATCH
// like spt_mttkrp and validates exactly as it does.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

#include "api/guard.hpp"
#include "api/matrix_checks.hpp"
#include "api/options_init.hpp"
#include "core/coo.hpp"
#include "core/hicoo.hpp"
#include "core/matrix.hpp"
#include "dispatch/dispatch.hpp"

using namespace spt;

namespace {

spt_hicoo_strategy to_c(HicooStrategy s) { return static_cast<spt_hicoo_strategy>(static_cast<int>(s)); }

hicoo::Params params_from(const spt_hicoo_options* opts) {
  spt_hicoo_options d;
  spt_hicoo_options_init(&d);
  const spt_hicoo_options o = read_options(opts, d, sizeof(spt_hicoo_options), "spt_hicoo_options");
  hicoo::Params p;
  p.block_size = o.block_size;
  p.superblock_size = o.superblock_size;
  p.strategy = static_cast<HicooStrategy>(static_cast<int>(o.strategy));
  hicoo::validate_params(p);
  return p;
}

// Copy a filled struct back into the caller's, keeping to its struct_size.
template <typename S>
void copy_out(S* dst, const S& src) {
  const size_t n = std::min(dst->struct_size, sizeof(S));
  const size_t caller_size = dst->struct_size;
  std::memcpy(dst, &src, n);
  dst->struct_size = caller_size;
}

}  // namespace

extern "C" {

SPT_API spt_status spt_hicoo_options_init_size(spt_hicoo_options* opts, size_t struct_size) {
  return guarded("spt_hicoo_options_init", [&] {
    spt_hicoo_options d{};
    d.strategy = SPT_HICOO_STRATEGY_AUTO;
    write_options_defaults(opts, struct_size, d, sizeof(spt_hicoo_options));
  });
}

// The exported symbol behind the header's macro of the same name (for
// callers that cannot use the macro, e.g. through an FFI).
SPT_API spt_status (spt_hicoo_options_init)(spt_hicoo_options* opts) {
  return spt_hicoo_options_init_size(opts, sizeof *opts);
}

SPT_API spt_status spt_hicoo_from_coo(spt_context* ctx, const spt_coo* x, const spt_hicoo_options* opts,
                                      spt_hicoo** out) {
  return guarded(ctx, "spt_hicoo_from_coo", [&] {
    require_not_null(x, "x");
    require_not_null(out, "out");
    const hicoo::Params p = params_from(opts);
    require(x->order() >= 2, "HiCOO needs a tensor of order >= 2, got order ", x->order());
    auto h = std::make_unique<spt_hicoo_s>(hicoo::from_coo(*x, p, dispatch::exec_for(resolve(ctx)).threads));
    *out = h.release();
  });
}

SPT_API spt_status spt_hicoo_to_coo(spt_context* ctx, const spt_hicoo* h, spt_coo** out) {
  return guarded(ctx, "spt_hicoo_to_coo", [&] {
    require_not_null(h, "h");
    require_not_null(out, "out");
    auto x = std::make_unique<spt_coo_s>(hicoo::to_coo(*h, dispatch::exec_for(resolve(ctx)).threads));
    *out = x.release();
  });
}

SPT_API spt_status spt_hicoo_free(spt_hicoo* h) {
  delete h;
  return SPT_OK;
}

SPT_API spt_status spt_hicoo_info(spt_context* ctx, const spt_hicoo* h, spt_hicoo_summary* info) {
  return guarded(ctx, "spt_hicoo_info", [&] {
    require_not_null(h, "h");
    require_not_null(info, "info");
    spt_hicoo_summary s;
    std::memset(&s, 0, sizeof(s));
    s.dtype = h->dtype();
    s.order = h->order();
    s.nnz = h->nnz;
    s.block_size = h->block_size();
    s.superblock_size = uint32_t(1) << h->superblock_bits;
    s.bytes = hicoo::storage_bytes(*h);
    write_info(info, s, sizeof(spt_hicoo_summary), "spt_hicoo_summary");
  });
}

SPT_API spt_status spt_hicoo_dims(const spt_hicoo* h, spt_index* dims) {
  return guarded("spt_hicoo_dims", [&] {
    require_not_null(h, "h");
    require_not_null(dims, "dims");
    std::copy(h->dims.begin(), h->dims.end(), dims);
  });
}

SPT_API spt_status spt_hicoo_stats(spt_context* ctx, const spt_hicoo* h, spt_hicoo_statistics* stats) {
  return guarded(ctx, "spt_hicoo_stats", [&] {
    require_not_null(h, "h");
    require_not_null(stats, "stats");
    require(stats->struct_size != 0, "stats->struct_size is 0: set it to sizeof(spt_hicoo_statistics)");
    require(stats->struct_size >= offsetof(spt_hicoo_statistics, reason_length) + sizeof(size_t),
            "stats->struct_size (", stats->struct_size, ") is too small for the reason fields");
    require(stats->reason != nullptr || stats->reason_capacity == 0,
            "stats->reason is NULL but reason_capacity is ", stats->reason_capacity);
    const int threads = dispatch::exec_for(resolve(ctx)).threads;
    const hicoo::Stats s = hicoo::compute_stats(*h, threads);
    spt_hicoo_statistics r;
    std::memset(&r, 0, sizeof(r));
    r.reason = stats->reason;
    r.reason_capacity = stats->reason_capacity;
    r.reason_length = s.reason.size();
    r.order = h->order();
    r.block_size = h->block_size();
    r.superblock_size = uint32_t(1) << h->superblock_bits;
    r.threads = threads;
    r.nnz = h->nnz;
    r.num_blocks = s.num_blocks;
    r.num_superblocks = s.num_superblocks;
    r.block_ratio = s.block_ratio;
    r.block_ratio_threshold = s.block_ratio_threshold;
    r.mean_nnz_per_block = s.mean_nnz_per_block;
    r.geomean_nnz_per_block = s.geomean_nnz_per_block;
    r.slice_per_block = s.slice_per_block;
    r.hicoo_bytes = s.hicoo_bytes;
    r.coo_bytes = s.coo_bytes;
    r.suggested_block_size = s.suggested_block_size;
    r.suggested_superblock_size = s.suggested_superblock_size;
    if (stats->reason && stats->reason_capacity > 0) {
      const size_t n = std::min(s.reason.size(), stats->reason_capacity - 1);
      std::memcpy(stats->reason, s.reason.data(), n);
      stats->reason[n] = '\0';
    }
    copy_out(stats, r);
  });
}

SPT_API spt_status spt_hicoo_mode_stats(spt_context* ctx, const spt_hicoo* h, uint32_t mode,
                                        spt_hicoo_mode_statistics* stats) {
  return guarded(ctx, "spt_hicoo_mode_stats", [&] {
    require_not_null(h, "h");
    require_not_null(stats, "stats");
    require(stats->struct_size != 0, "stats->struct_size is 0: set it to sizeof(spt_hicoo_mode_statistics)");
    require(mode < h->order(), "mode ", mode, " out of range for an order-", h->order(), " tensor (modes are 0-based)");
    const int threads = dispatch::exec_for(resolve(ctx)).threads;
    const hicoo::ModeCounts c = hicoo::mode_counts(*h, mode);
    spt_hicoo_mode_statistics r;
    std::memset(&r, 0, sizeof(r));
    r.slabs = c.slabs;
    r.iterations = c.iterations;
    r.max_slab_nnz = c.max_slab_nnz;
    r.suggested_strategy =
        to_c(hicoo::rule_strategy(c, h->nnz, h->dims[mode], threads, nullptr));
    r.strategy = to_c(hicoo::effective_strategy(*h, mode, threads));
    copy_out(stats, r);
  });
}

SPT_API spt_status spt_mttkrp_hicoo(spt_context* ctx, const spt_hicoo* h, const spt_matrix* const* factors,
                                    uint32_t mode, spt_matrix* out) {
  return guarded(ctx, "spt_mttkrp_hicoo", [&] {
    require_not_null(h, "h");
    require_not_null(factors, "factors");
    require_not_null(out, "out");
    require(mode < h->order(), "mode ", mode, " out of range for an order-", h->order(), " tensor (modes are 0-based)");
    check_matrix_dtype(*out, h->dtype(), "out");
    const spt_nnz rank = out->cols;
    require(rank >= 1, "out must have at least one column (the rank R)");
    require(out->rows == h->dims[mode], "out must be dims[", mode, "] x R = ", shape(h->dims[mode], rank), ", got ",
            shape(out->rows, out->cols));
    for (uint32_t m = 0; m < h->order(); ++m) {
      if (m == mode) continue;
      const spt_matrix_s* f = factors[m];
      require(f != nullptr, "factors[", m, "] must not be NULL (only factors[mode] may be)");
      require(f != out, "out must not be the same matrix as factors[", m, "]");
      check_matrix_dtype(*f, h->dtype(), cat("factors[", m, "]"));
      require(f->rows == h->dims[m] && f->cols == rank, "factors[", m, "] must be dims[", m, "] x R = ",
              shape(h->dims[m], rank), " (R from out), got ", shape(f->rows, f->cols));
    }
    with_dtype(h->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<std::unique_ptr<RowMajor<T>>> held(h->order());
      std::vector<ConstMatRef<T>> refs(h->order());
      for (uint32_t m = 0; m < h->order(); ++m) {
        if (m == mode) continue;
        held[m] = std::make_unique<RowMajor<T>>(const_cast<spt_matrix_s&>(*factors[m]));
        refs[m] = held[m]->cref();
      }
      RowMajor<T> o(*out);
      SPT_DISPATCH(resolve(ctx), mttkrp_hicoo, *h, refs.data(), mode, o.ref());
      o.write_back();
    });
  });
}

}  // extern "C"
