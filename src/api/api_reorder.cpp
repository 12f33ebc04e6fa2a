// C ABI: index reordering (sptensor/reorder.h). The methods live in
// src/reorder; this layer validates handles and converts errors.
#include <algorithm>
#include <cstring>
#include <memory>

#include "api/guard.hpp"
#include "api/options_init.hpp"
#include "core/coo.hpp"
#include "core/ktensor.hpp"
#include "dispatch/dispatch.hpp"
#include "reorder/compute.hpp"
#include "reorder/permutation.hpp"
#include "reorder/relabel.hpp"

using namespace spt;

namespace {

int threads_of(spt_context* ctx) { return dispatch::exec_for(resolve(ctx)).threads; }

void check_mode(const spt_permutation_s& perm, uint32_t mode) {
  require(mode < perm.order(), "mode ", mode, " out of range for a permutation of ", perm.order(), " modes");
}

spt_status permute_factor_rows(spt_context* ctx, const char* where, spt_matrix* factor, const spt_permutation* perm,
                               uint32_t mode, reorder::RowSpace to) {
  return guarded(ctx, where, [&] {
    require_not_null(factor, "factor");
    require_not_null(perm, "perm");
    check_mode(*perm, mode);
    require(factor->rows == perm->dim(mode), "the factor has ", factor->rows, " rows but mode ", mode,
            " of the permutation has ", perm->dim(mode), " labels");
    reorder::permute_rows(*factor, perm->per_mode[mode], to, threads_of(ctx));
  });
}

}  // namespace

extern "C" {

SPT_API spt_status spt_reorder_options_init_size(spt_reorder_options* opts, size_t struct_size) {
  return guarded("spt_reorder_options_init", [&] {
    spt_reorder_options d{};
    d.method = SPT_REORDER_LEXI;
    d.iterations = 3;
    d.seed = 0;
    write_options_defaults(opts, struct_size, d, sizeof(spt_reorder_options));
  });
}

// The exported symbol behind the header's macro of the same name (for
// callers that cannot use the macro, e.g. through an FFI): writes this
// release's whole struct.
SPT_API spt_status (spt_reorder_options_init)(spt_reorder_options* opts) { return spt_reorder_options_init_size(opts, sizeof *opts); }

SPT_API spt_status spt_reorder_compute(spt_context* ctx, const spt_coo* x, const spt_reorder_options* opts,
                                       spt_permutation** out) {
  return guarded(ctx, "spt_reorder_compute", [&] {
    require_not_null(x, "tensor");
    require_not_null(out, "out");
    spt_reorder_options defaults;
    if (!opts) {
      spt_reorder_options_init(&defaults);
      opts = &defaults;
    }
    auto perm = std::make_unique<spt_permutation_s>(reorder::compute(resolve(ctx), *x, *opts));
    *out = perm.release();
  });
}

SPT_API spt_status spt_permutation_create(spt_context* ctx, uint32_t order, const spt_index* dims,
                                          const spt_index* const* perms, int index_base, spt_permutation** out) {
  return guarded(ctx, "spt_permutation_create", [&] {
    require_not_null(out, "out");
    validate_dims(order, dims);
    require_not_null(perms, "perms");
    require(index_base == 0 || index_base == 1, "index_base must be 0 or 1, got ", index_base);
    auto perm = std::make_unique<spt_permutation_s>();
    perm->per_mode.resize(order);
    for (uint32_t m = 0; m < order; ++m) {
      const std::string what = cat("perms[", m, "]");
      require_not_null(perms[m], what.c_str());
      reorder::validate_permutation(perms[m], dims[m], what.c_str(), index_base);
      reorder::Permutation& p = perm->per_mode[m];
      p.resize(dims[m]);
      for (spt_index i = 0; i < dims[m]; ++i) p[i] = perms[m][i] - static_cast<spt_index>(index_base);
    }
    *out = perm.release();
  });
}

SPT_API spt_status spt_permutation_free(spt_permutation* perm) {
  delete perm;
  return SPT_OK;
}

SPT_API spt_status spt_permutation_info(spt_context* ctx, const spt_permutation* perm,
                                        spt_permutation_summary* info) {
  return guarded(ctx, "spt_permutation_info", [&] {
    require_not_null(perm, "perm");
    require_not_null(info, "info");
    spt_permutation_summary s;
    std::memset(&s, 0, sizeof(s));
    s.order = perm->order();
    write_info(info, s, sizeof(spt_permutation_summary), "spt_permutation_summary");
  });
}

SPT_API spt_status spt_permutation_dims(const spt_permutation* perm, spt_index* dims) {
  return guarded("spt_permutation_dims", [&] {
    require_not_null(perm, "perm");
    require_not_null(dims, "dims");
    for (uint32_t m = 0; m < perm->order(); ++m) dims[m] = perm->dim(m);
  });
}

SPT_API spt_status spt_permutation_get(const spt_permutation* perm, uint32_t mode, spt_index* out, spt_nnz out_len,
                                       int index_base) {
  return guarded("spt_permutation_get", [&] {
    require_not_null(perm, "perm");
    check_mode(*perm, mode);
    require(index_base == 0 || index_base == 1, "index_base must be 0 or 1, got ", index_base);
    const reorder::Permutation& p = perm->per_mode[mode];
    require(out_len >= p.size(), "out_len is ", out_len, " but mode ", mode, " has ", p.size(), " labels");
    if (p.empty()) return;
    require_not_null(out, "out");
    for (size_t i = 0; i < p.size(); ++i) out[i] = p[i] + static_cast<spt_index>(index_base);
  });
}

SPT_API spt_status spt_permutation_inverse(spt_context* ctx, const spt_permutation* perm, spt_permutation** out) {
  return guarded(ctx, "spt_permutation_inverse", [&] {
    require_not_null(perm, "perm");
    require_not_null(out, "out");
    auto inverse = std::make_unique<spt_permutation_s>();
    for (const reorder::Permutation& p : perm->per_mode) inverse->per_mode.push_back(reorder::invert(p));
    *out = inverse.release();
  });
}

SPT_API spt_status spt_coo_relabel(spt_context* ctx, spt_coo* x, const spt_permutation* perm) {
  return guarded(ctx, "spt_coo_relabel", [&] {
    require_not_null(x, "tensor");
    require_not_null(perm, "perm");
    reorder::relabel_in_place(*x, *perm, threads_of(ctx));
  });
}

SPT_API spt_status spt_coo_relabeled_copy(spt_context* ctx, const spt_coo* x, const spt_permutation* perm,
                                          spt_coo** out) {
  return guarded(ctx, "spt_coo_relabeled_copy", [&] {
    require_not_null(x, "tensor");
    require_not_null(perm, "perm");
    require_not_null(out, "out");
    auto y = std::make_unique<spt_coo_s>(reorder::relabeled_copy(*x, *perm, threads_of(ctx)));
    *out = y.release();
  });
}

SPT_API spt_status spt_matrix_permute_rows(spt_context* ctx, spt_matrix* factor, const spt_permutation* perm,
                                           uint32_t mode) {
  return permute_factor_rows(ctx, "spt_matrix_permute_rows", factor, perm, mode, reorder::RowSpace::reordered);
}

SPT_API spt_status spt_matrix_unpermute_rows(spt_context* ctx, spt_matrix* factor, const spt_permutation* perm,
                                             uint32_t mode) {
  return permute_factor_rows(ctx, "spt_matrix_unpermute_rows", factor, perm, mode, reorder::RowSpace::original);
}

SPT_API spt_status spt_ktensor_unpermute(spt_context* ctx, spt_ktensor* k, const spt_permutation* perm) {
  return guarded(ctx, "spt_ktensor_unpermute", [&] {
    require_not_null(k, "ktensor");
    require_not_null(perm, "perm");
    reorder::require_matches(*perm, k->dims, "ktensor");
    for (uint32_t m = 0; m < k->order(); ++m)
      require(k->factors[m]->rows == k->dims[m], "factor ", m, " of the ktensor has ", k->factors[m]->rows,
              " rows, expected dims[", m, "] = ", k->dims[m]);
    const int threads = threads_of(ctx);
    for (uint32_t m = 0; m < k->order(); ++m)
      reorder::permute_rows(*k->factors[m], perm->per_mode[m], reorder::RowSpace::original, threads);
  });
}

}  // extern "C"
