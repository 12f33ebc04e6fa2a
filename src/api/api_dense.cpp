// C ABI: dense tensors (spt_dense), conversions to and from COO, and the
// Tucker core as a dense tensor.
#include <cmath>
#include <cstring>
#include <memory>

#include "api/guard.hpp"
#include "api/options_init.hpp"
#include "core/coo.hpp"
#include "core/dense_tensor.hpp"
#include "core/ttensor.hpp"
#include "sptensor/dense.h"

using namespace spt;

namespace {

std::vector<spt_index> checked_dims(uint32_t order, const spt_index* dims) {
  require_not_null(dims, "dims");
  validate_dims(order, dims);
  return std::vector<spt_index>(dims, dims + order);
}

template <typename T>
double sum_of_squares(const T* v, spt_nnz n) {
  // Four partial sums: one dependent chain of adds would bound the loop by
  // the add latency. The grouping is fixed, so the result is reproducible.
  double s[4] = {0, 0, 0, 0};
  spt_nnz i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j) {
      const double d = static_cast<double>(v[i + j]);
      s[j] += d * d;
    }
  for (; i < n; ++i) s[0] += static_cast<double>(v[i]) * static_cast<double>(v[i]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

template <typename T>
void densify(const spt_coo_s& x, spt_dense_s& t) {
  const uint32_t order = x.order();
  // stride[m] = prod_{j < m} dims[j]: first index fastest.
  std::vector<uint64_t> stride(order, 1);
  for (uint32_t m = 1; m < order; ++m) stride[m] = stride[m - 1] * x.dims[m - 1];
  T* out = t.values.get<T>().data();
  const T* v = x.values<T>();
  for (spt_nnz e = 0; e < x.nnz; ++e) {
    uint64_t lin = 0;
    for (uint32_t m = 0; m < order; ++m) lin += stride[m] * x.ind[m][e];
    out[lin] += v[e];
  }
}

template <typename T>
void sparsify(const spt_dense_s& t, spt_coo_s& x) {
  const uint32_t order = t.order();
  const T* v = t.values.get<T>().data();
  const spt_nnz n = t.count();
  spt_nnz kept = 0;
  for (spt_nnz i = 0; i < n; ++i) kept += v[i] != T(0);
  x.init_owned(t.dtype(), t.dims, kept);
  std::vector<spt_index*> ind(order);
  for (uint32_t m = 0; m < order; ++m) ind[m] = x.mutable_ind(m);
  T* xv = x.mutable_values<T>();
  std::vector<spt_index> coord(order, 0);  // coordinates of linear offset i, carried forward
  spt_nnz k = 0;
  for (spt_nnz i = 0; i < n; ++i) {
    if (v[i] != T(0)) {
      for (uint32_t m = 0; m < order; ++m) ind[m][k] = coord[m];
      xv[k++] = v[i];
    }
    for (uint32_t m = 0; m < order; ++m) {
      if (++coord[m] < t.dims[m]) break;
      coord[m] = 0;
    }
  }
  // Linear order with the first index fastest = lexicographic with the
  // last mode compared first.
  x.sorted_by.clear();
  for (uint32_t m = order; m-- > 0;) x.sorted_by.push_back(m);
}

}  // namespace

extern "C" {

SPT_API spt_status spt_dense_create(spt_context* ctx, spt_dtype dtype, uint32_t order, const spt_index* dims,
                                    spt_dense** out) {
  return guarded(ctx, "spt_dense_create", [&] {
    require_not_null(out, "out");
    check_dtype(dtype);
    auto t = std::make_unique<spt_dense_s>();
    init_dense(*t, dtype, checked_dims(order, dims));
    *out = t.release();
  });
}

SPT_API spt_status spt_dense_create_copy(spt_context* ctx, spt_dtype dtype, uint32_t order, const spt_index* dims,
                                         const void* data, spt_dense** out) {
  return guarded(ctx, "spt_dense_create_copy", [&] {
    require_not_null(out, "out");
    require_not_null(data, "data");
    check_dtype(dtype);
    auto t = std::make_unique<spt_dense_s>();
    const std::vector<spt_index> d = checked_dims(order, dims);
    const uint64_t n = dense_element_count(d, dtype);
    t->dims = d;
    t->values.set_dtype(dtype);
    t->values.resize(static_cast<size_t>(n));
    std::memcpy(t->values.data(), data, static_cast<size_t>(n) * dtype_size(dtype));
    *out = t.release();
  });
}

SPT_API spt_status spt_dense_free(spt_dense* t) {
  delete t;
  return SPT_OK;
}

SPT_API spt_status spt_dense_info(spt_context* ctx, const spt_dense* t, spt_dense_summary* info) {
  return guarded(ctx, "spt_dense_info", [&] {
    require_not_null(t, "dense tensor");
    require_not_null(info, "info");
    spt_dense_summary s;
    std::memset(&s, 0, sizeof(s));
    s.dtype = t->dtype();
    s.order = t->order();
    s.count = t->count();
    write_info(info, s, sizeof(spt_dense_summary), "spt_dense_summary");
  });
}

SPT_API spt_status spt_dense_dims(const spt_dense* t, spt_index* dims) {
  return guarded("spt_dense_dims", [&] {
    require_not_null(t, "dense tensor");
    require_not_null(dims, "dims");
    std::copy(t->dims.begin(), t->dims.end(), dims);
  });
}

SPT_API spt_status spt_dense_data(spt_dense* t, void** data) {
  return guarded("spt_dense_data", [&] {
    require_not_null(t, "dense tensor");
    require_not_null(data, "data");
    *data = t->values.data();
  });
}

SPT_API spt_status spt_dense_data_const(const spt_dense* t, const void** data) {
  return guarded("spt_dense_data_const", [&] {
    require_not_null(t, "dense tensor");
    require_not_null(data, "data");
    *data = t->values.data();
  });
}

SPT_API spt_status spt_dense_norm(spt_context* ctx, const spt_dense* t, double* norm) {
  return guarded(ctx, "spt_dense_norm", [&] {
    require_not_null(t, "dense tensor");
    require_not_null(norm, "norm");
    *norm = with_dtype(t->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      return std::sqrt(sum_of_squares(t->values.get<T>().data(), t->count()));
    });
  });
}

SPT_API spt_status spt_dense_from_coo(spt_context* ctx, const spt_coo* x, uint64_t max_bytes, spt_dense** out) {
  return guarded(ctx, "spt_dense_from_coo", [&] {
    require_not_null(x, "tensor");
    require_not_null(out, "out");
    const uint64_t limit = max_bytes != 0 ? max_bytes : SPT_DENSE_DEFAULT_MAX_BYTES;
    const uint64_t n = dense_element_count(x->dims, x->dtype());
    const uint64_t bytes = n * dtype_size(x->dtype());
    if (bytes > limit)
      fail(SPT_ERR_OUT_OF_MEMORY, "the dense tensor would hold ", n, " values (", bytes, " bytes), above the limit of ",
           limit, " bytes; pass a larger max_bytes if that much memory is really meant");
    auto t = std::make_unique<spt_dense_s>();
    init_dense(*t, x->dtype(), x->dims);
    with_dtype(x->dtype(), [&](auto tag) { densify<typename decltype(tag)::type>(*x, *t); });
    *out = t.release();
  });
}

SPT_API spt_status spt_dense_to_coo(spt_context* ctx, const spt_dense* t, spt_coo** out) {
  return guarded(ctx, "spt_dense_to_coo", [&] {
    require_not_null(t, "dense tensor");
    require_not_null(out, "out");
    auto x = std::make_unique<spt_coo_s>();
    with_dtype(t->dtype(), [&](auto tag) { sparsify<typename decltype(tag)::type>(*t, *x); });
    *out = x.release();
  });
}

SPT_API spt_status spt_ttensor_core_dense(spt_context* ctx, const spt_ttensor* t, spt_dense** out) {
  return guarded(ctx, "spt_ttensor_core_dense", [&] {
    require_not_null(t, "ttensor");
    require_not_null(out, "out");
    auto d = std::make_unique<spt_dense_s>();
    d->dims = t->core_dims;
    d->values = t->core;
    if (d->count() != dense_element_count(d->dims, d->dtype()))
      fail(SPT_ERR_INTERNAL, "ttensor core holds ", d->count(), " values, not the product of its dims");
    *out = d.release();
  });
}

}  // extern "C"
