#include "core/coo.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstddef>
#include <limits>

#include "core/error.hpp"
#include "core/value_range.hpp"

namespace {

// Sizes the index and value arrays of a COO tensor to n nonzeros, naming the
// array in overflow and out-of-memory messages.
void size_coo_arrays(spt_coo_s& x, spt_nnz n) {
  for (size_t m = 0; m < x.own_ind.size(); ++m)
    spt::resize_named(x.own_ind[m], n,
                      [&] { return spt::cat("the index array of mode ", m, " (one entry per nonzero)"); });
  spt::with_dtype(x.own_val.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    spt::resize_named(x.own_val.get<T>(), n,
                      [&] { return spt::cat("the ", spt::dtype_name(x.own_val.dtype()), " value array (one entry per nonzero)"); });
  });
}

}  // namespace

void spt_coo_s::init_owned(spt_dtype dtype, const std::vector<spt_index>& d, spt_nnz n) {
  if (d.size() > SPT_MAX_ORDER) spt::validate_order(d.size());
  dims = d;
  read_only = false;
  own_ind.assign(d.size(), {});
  own_val.set_dtype(dtype);
  size_coo_arrays(*this, n);
  nnz = n;
  sorted_by.clear();
  refresh();
}

void spt_coo_s::resize(spt_nnz n) {
  make_owned();
  size_coo_arrays(*this, n);
  nnz = n;
  refresh();
}

void spt_coo_s::refresh() {
  ind.resize(own_ind.size());
  for (size_t m = 0; m < own_ind.size(); ++m) ind[m] = own_ind[m].data();
  val = own_val.data();
  backing.reset();
}

void spt_coo_s::make_owned() {
  if (!backing) return;
  own_ind.assign(dims.size(), {});
  for (size_t m = 0; m < own_ind.size(); ++m) own_ind[m].assign(ind[m], ind[m] + nnz);
  const size_t bytes = nnz * spt::dtype_size(dtype());
  own_val.resize(nnz);
  if (bytes) std::memcpy(own_val.data(), val, bytes);
  refresh();
}

namespace spt {

void require_writable(const spt_coo_s& x) {
  if (x.read_only)
    fail(SPT_ERR_READ_ONLY, "the tensor is a read-only view of caller arrays; make an owning copy with spt_coo_copy");
}

void validate_order(uint64_t order) {
  require(order >= 1, "order must be at least 1, got ", order);
  require(order <= SPT_MAX_ORDER, "order ", order, " is above the supported maximum SPT_MAX_ORDER = ", SPT_MAX_ORDER);
}

void check_caller_arrays(uint32_t order, spt_nnz nnz, spt_nnz ld, spt_dtype dtype) {
  // Anything beyond PTRDIFF_MAX bytes cannot be an array in memory.
  const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<std::ptrdiff_t>::max());
  const uint64_t index_bytes_limit = limit / sizeof(spt_index);
  if (nnz > limit / dtype_size(dtype))
    fail(SPT_ERR_OVERFLOW, "nnz = ", nnz, ": ", nnz, " values of ", dtype_size(dtype),
         " bytes exceed the largest possible array (", limit, " bytes)");
  if (ld > index_bytes_limit / order)
    fail(SPT_ERR_OVERFLOW, "ld * order = ", ld, " * ", order, " indices exceed the largest possible array (", limit,
         " bytes)");
}

void validate_dims(uint32_t order, const spt_index* dims) {
  validate_order(order);
  require_not_null(dims, "dims");
  for (uint32_t m = 0; m < order; ++m) require(dims[m] >= 1, "dims[", m, "] must be at least 1, got 0");
}

namespace {

template <typename T>
void copy_values(spt_coo_s& x, spt_nnz offset, spt_nnz n, const T* src, bool reject_nonfinite) {
  T* dst = x.mutable_values<T>() + offset;
  if (reject_nonfinite) {
    for (spt_nnz k = 0; k < n; ++k)
      if (!std::isfinite(src[k])) fail(SPT_ERR_INVALID_ARGUMENT, "value of nonzero ", k, " is not finite (", src[k], ")");
  }
  if (n) std::memcpy(dst, src, n * sizeof(T));
}

}  // namespace

void copy_in_nonzeros(spt_coo_s& x, spt_nnz offset, spt_nnz n, const spt_index* indices, spt_nnz ld,
                      int index_base, const void* values, bool reject_nonfinite, bool grow_dims) {
  require(index_base == 0 || index_base == 1, "index_base must be 0 or 1, got ", index_base);
  if (n == 0) return;
  require_not_null(indices, "indices");
  require_not_null(values, "values");
  require(ld >= n, "ld (", ld, ") must be at least the number of nonzeros (", n, ")");
  const uint32_t order = x.order();
  checked_mul(ld, order, "ld * order");
  std::vector<spt_index> new_dims = x.dims;
  for (uint32_t m = 0; m < order; ++m) {
    const spt_index* src = indices + static_cast<size_t>(m) * ld;
    spt_index* dst = x.mutable_ind(m) + offset;
    spt_index lim = x.dims[m];
    spt_index seen_max = 0;
    for (spt_nnz k = 0; k < n; ++k) {
      spt_index i = src[k];
      if (i < static_cast<spt_index>(index_base))
        fail(SPT_ERR_INVALID_ARGUMENT, "nonzero ", k, " has index ", i, " in mode ", m, ", below the index base ",
             index_base);
      i -= static_cast<spt_index>(index_base);
      if (!grow_dims && i >= lim)
        fail(SPT_ERR_INVALID_ARGUMENT, "nonzero ", k, " has index ", i + index_base, " in mode ", m,
             ", outside dims[", m, "] = ", lim, " (index base ", index_base, ")");
      seen_max = std::max(seen_max, i);
      dst[k] = i;
    }
    if (grow_dims) {
      if (seen_max == UINT32_MAX) fail(SPT_ERR_OVERFLOW, "index in mode ", m, " does not fit 32 bits");
      new_dims[m] = std::max(new_dims[m], seen_max + 1);
    }
  }
  with_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    copy_values<T>(x, offset, n, static_cast<const T*>(values), reject_nonfinite);
  });
  x.dims = new_dims;
  x.touched();
}

std::string nonzero_position(const spt_coo_s& x, spt_nnz k, spt_nnz first) {
  std::string s = cat("nonzero ", first + k, " (0-based coordinate (");
  for (uint32_t m = 0; m < x.order(); ++m) s += cat(m ? ", " : "", x.ind[m][k]);
  return s + "))";
}

spt_coo_s copy_coo(const spt_coo_s& x, spt_dtype dtype) {
  check_dtype(dtype);
  if (x.dtype() == SPT_FLOAT64 && dtype == SPT_FLOAT32) {
    const double* v = x.values<double>();
    check_float32_range(
        x.nnz, 1, "converting to float32: ", [&](spt_nnz k) { return v[k]; },
        [&](spt_nnz k) { return nonzero_position(x, k); });
  }
  spt_coo_s y;
  y.init_owned(dtype, x.dims, x.nnz);
  for (uint32_t m = 0; m < x.order(); ++m)
    if (x.nnz) std::memcpy(y.mutable_ind(m), x.ind[m], x.nnz * sizeof(spt_index));
  with_dtype(x.dtype(), [&](auto src_tag) {
    using S = typename decltype(src_tag)::type;
    with_dtype(dtype, [&](auto dst_tag) {
      using D = typename decltype(dst_tag)::type;
      const S* s = x.values<S>();
      D* d = y.mutable_values<D>();
      for (spt_nnz k = 0; k < x.nnz; ++k) d[k] = static_cast<D>(s[k]);
    });
  });
  y.sorted_by = x.sorted_by;
  return y;
}

std::vector<spt_nnz> distinct_indices_per_mode(const spt_coo_s& x, int threads) {
  std::vector<spt_nnz> out(x.order(), 0);
  for (uint32_t m = 0; m < x.order(); ++m) {
    // One byte per index: a shared "seen" flag (relaxed atomic stores of the
    // same value, so threads may race on it).
    buffer<unsigned char> seen;
    resize_named(seen, x.dims[m], [&] {
      return cat("the non-empty slice flags of mode ", m, " (one byte per index, dims[", m, "] = ", x.dims[m], ")");
    });
    std::memset(seen.data(), 0, seen.size());
    const spt_index* ind = x.ind[m];
    const long long n = static_cast<long long>(x.nnz);
#pragma omp parallel for num_threads(std::max(threads, 1)) schedule(static)
    for (long long k = 0; k < n; ++k) __atomic_store_n(&seen[ind[k]], static_cast<unsigned char>(1), __ATOMIC_RELAXED);
    spt_nnz count = 0;
    for (spt_index i = 0; i < x.dims[m]; ++i) count += seen[i];
    out[m] = count;
  }
  return out;
}

}  // namespace spt
