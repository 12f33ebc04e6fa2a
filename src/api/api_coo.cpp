// C ABI: COO tensor construction, views, copies and accessors.
#include <algorithm>
#include <cstring>
#include <memory>

#include "api/guard.hpp"
#include "api/options_init.hpp"
#include "core/coo.hpp"

using namespace spt;

namespace {

std::vector<spt_index> infer_or_copy_dims(uint32_t order, const spt_index* dims, spt_nnz nnz,
                                          const spt_index* indices, spt_nnz ld, int index_base) {
  validate_order(order);
  require(index_base == 0 || index_base == 1, "index_base must be 0 or 1, got ", index_base);
  if (dims) {
    validate_dims(order, dims);
    return std::vector<spt_index>(dims, dims + order);
  }
  require(nnz > 0, "dims may be NULL only when there are nonzeros to infer them from");
  require_not_null(indices, "indices");
  require(ld >= nnz, "ld (", ld, ") must be at least nnz (", nnz, ")");
  check_caller_arrays(order, nnz, ld, SPT_FLOAT32);
  std::vector<spt_index> d(order, 1);
  for (uint32_t m = 0; m < order; ++m) {
    const spt_index* src = indices + static_cast<size_t>(m) * ld;
    spt_index mx = *std::max_element(src, src + nnz);
    if (mx < static_cast<spt_index>(index_base))
      fail(SPT_ERR_INVALID_ARGUMENT, "mode ", m, " has an index below the index base ", index_base);
    spt_index size = mx - static_cast<spt_index>(index_base);
    if (size == UINT32_MAX) fail(SPT_ERR_OVERFLOW, "dimension of mode ", m, " does not fit 32 bits");
    d[m] = size + 1;
  }
  return d;
}

}  // namespace

extern "C" {

SPT_API spt_status spt_coo_create(spt_context* ctx, spt_dtype dtype, uint32_t order, const spt_index* dims,
                                  spt_coo** out) {
  return guarded(ctx, "spt_coo_create", [&] {
    require_not_null(out, "out");
    check_dtype(dtype);
    validate_dims(order, dims);
    auto x = std::make_unique<spt_coo_s>();
    x->init_owned(dtype, std::vector<spt_index>(dims, dims + order), 0);
    *out = x.release();
  });
}

SPT_API spt_status spt_coo_create_from_arrays(spt_context* ctx, spt_dtype dtype, uint32_t order,
                                              const spt_index* dims, spt_nnz nnz, const spt_index* indices,
                                              spt_nnz ld, int index_base, const void* values, int flags,
                                              spt_coo** out) {
  return guarded(ctx, "spt_coo_create_from_arrays", [&] {
    require_not_null(out, "out");
    check_dtype(dtype);
    require((flags & ~(SPT_COO_REJECT_NONFINITE | SPT_COO_GROW_DIMS)) == 0, "unknown flags ", flags);
    if (nnz) {
      validate_order(order);
      require(ld >= nnz, "ld (", ld, ") must be at least nnz (", nnz, ")");
      check_caller_arrays(order, nnz, ld, dtype);
    }
    auto d = infer_or_copy_dims(order, dims, nnz, indices, ld, index_base);
    auto x = std::make_unique<spt_coo_s>();
    x->init_owned(dtype, d, nnz);
    copy_in_nonzeros(*x, 0, nnz, indices, ld, index_base, values, flags & SPT_COO_REJECT_NONFINITE, false);
    *out = x.release();
  });
}

SPT_API spt_status spt_coo_create_view(spt_context* ctx, spt_dtype dtype, uint32_t order, const spt_index* dims,
                                       spt_nnz nnz, const spt_index* indices, spt_nnz ld, const void* values,
                                       spt_coo** out) {
  return guarded(ctx, "spt_coo_create_view", [&] {
    require_not_null(out, "out");
    check_dtype(dtype);
    if (nnz) {
      validate_order(order);
      require(ld >= nnz, "ld (", ld, ") must be at least nnz (", nnz, ")");
      check_caller_arrays(order, nnz, ld, dtype);
    }
    auto d = infer_or_copy_dims(order, dims, nnz, indices, ld, 0);
    if (nnz) {
      require_not_null(indices, "indices");
      require_not_null(values, "values");
      require(ld >= nnz, "ld (", ld, ") must be at least nnz (", nnz, ")");
      checked_mul(ld, order, "ld * order");
    }
    auto x = std::make_unique<spt_coo_s>();
    x->dims = d;
    x->nnz = nnz;
    x->read_only = true;
    x->own_val.set_dtype(dtype);
    x->ind.resize(order);
    for (uint32_t m = 0; m < order; ++m) {
      const spt_index* src = nnz ? indices + static_cast<size_t>(m) * ld : nullptr;
      for (spt_nnz k = 0; k < nnz; ++k)
        if (src[k] >= d[m])
          fail(SPT_ERR_INVALID_ARGUMENT, "nonzero ", k, " has index ", src[k], " in mode ", m, ", outside dims[", m,
               "] = ", d[m], " (views are 0-based)");
      x->ind[m] = src;
    }
    x->val = values;
    *out = x.release();
  });
}

SPT_API spt_status spt_coo_copy(spt_context* ctx, const spt_coo* x, spt_coo** out) {
  return guarded(ctx, "spt_coo_copy", [&] {
    require_not_null(x, "x");
    require_not_null(out, "out");
    *out = new spt_coo_s(copy_coo(*x, x->dtype()));
  });
}

SPT_API spt_status spt_coo_convert_dtype(spt_context* ctx, const spt_coo* x, spt_dtype dtype, spt_coo** out) {
  return guarded(ctx, "spt_coo_convert_dtype", [&] {
    require_not_null(x, "x");
    require_not_null(out, "out");
    *out = new spt_coo_s(copy_coo(*x, dtype));
  });
}

SPT_API spt_status spt_coo_free(spt_coo* x) {
  delete x;
  return SPT_OK;
}

SPT_API spt_status spt_coo_append(spt_context* ctx, spt_coo* x, spt_nnz n, const spt_index* indices, spt_nnz ld,
                                  int index_base, const void* values, int flags) {
  return guarded(ctx, "spt_coo_append", [&] {
    require_not_null(x, "x");
    require_writable(*x);
    require((flags & ~(SPT_COO_REJECT_NONFINITE | SPT_COO_GROW_DIMS)) == 0, "unknown flags ", flags);
    if (n == 0) return;
    require(ld >= n, "ld (", ld, ") must be at least the number of nonzeros (", n, ")");
    check_caller_arrays(x->order(), n, ld, x->dtype());
    const spt_nnz old = x->nnz;
    spt_nnz total = checked_add(old, n, "nonzero count");
    x->resize(total);
    try {
      copy_in_nonzeros(*x, old, n, indices, ld, index_base, values, flags & SPT_COO_REJECT_NONFINITE,
                       flags & SPT_COO_GROW_DIMS);
    } catch (...) {
      x->resize(old);
      throw;
    }
  });
}

SPT_API spt_status spt_coo_info(spt_context* ctx, const spt_coo* x, spt_coo_summary* info) {
  return guarded(ctx, "spt_coo_info", [&] {
    require_not_null(x, "x");
    require_not_null(info, "info");
    spt_coo_summary s;
    std::memset(&s, 0, sizeof(s));
    s.dtype = x->dtype();
    s.order = x->order();
    s.nnz = x->nnz;
    s.read_only = x->read_only ? 1 : 0;
    write_info(info, s, sizeof(spt_coo_summary), "spt_coo_summary");
  });
}

SPT_API spt_status spt_coo_file_dtype(const spt_coo* x, spt_dtype* dtype) {
  return guarded("spt_coo_file_dtype", [&] {
    require_not_null(x, "x");
    require_not_null(dtype, "dtype");
    *dtype = x->file_dtype;
  });
}

SPT_API spt_status spt_coo_dims(const spt_coo* x, spt_index* dims) {
  return guarded("spt_coo_dims", [&] {
    require_not_null(x, "x");
    require_not_null(dims, "dims");
    std::copy(x->dims.begin(), x->dims.end(), dims);
  });
}

SPT_API spt_status spt_coo_indices(const spt_coo* x, uint32_t mode, const spt_index** indices) {
  return guarded("spt_coo_indices", [&] {
    require_not_null(x, "x");
    require_not_null(indices, "indices");
    require(mode < x->order(), "mode ", mode, " out of range for an order-", x->order(), " tensor");
    *indices = x->ind[mode];
  });
}

SPT_API spt_status spt_coo_values(const spt_coo* x, const void** values) {
  return guarded("spt_coo_values", [&] {
    require_not_null(x, "x");
    require_not_null(values, "values");
    *values = x->val;
  });
}

}  // extern "C"
