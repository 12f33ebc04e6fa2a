// C ABI: COO sorting/coalescing/norm, the kernels on COO tensors, dense
// Khatri-Rao/Kronecker products, the Kruskal inner product, and the
// semi-sparse (sCOO) and CSR result objects. Every call validates its
// arguments (NULLs, modes, dtypes, shapes) and then runs the kernel of the
// context's backend through SPT_DISPATCH.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "api/guard.hpp"
#include "api/options_init.hpp"
#include "core/coo.hpp"
#include "core/csr.hpp"
#include "core/ktensor.hpp"
#include "core/matrix.hpp"
#include "core/scoo.hpp"
#include "core/sort.hpp"
#include "dispatch/dispatch.hpp"

using namespace spt;

namespace {

void check_mode(const spt_coo_s& x, uint32_t mode) {
  require(mode < x.order(), "mode ", mode, " out of range for an order-", x.order(), " tensor (modes are 0-based)");
}

void check_op(spt_elementwise_op op) {
  require(op == SPT_OP_ADD || op == SPT_OP_SUB || op == SPT_OP_MUL || op == SPT_OP_DIV,
          "op must be SPT_OP_ADD, SPT_OP_SUB, SPT_OP_MUL or SPT_OP_DIV, got ", static_cast<int>(op));
}

void check_matrix_dtype(const spt_matrix_s& m, spt_dtype want, const std::string& what) {
  require(m.dtype() == want, what, " is ", dtype_name(m.dtype()), " but the tensor is ", dtype_name(want),
          "; convert one of them so the dtypes match");
}

std::string shape(spt_nnz rows, spt_nnz cols) { return cat(rows, " x ", cols); }

// Row-major access to a caller matrix that the kernel only reads.
template <typename T>
RowMajor<T> read_rows(const spt_matrix_s& m) {
  return RowMajor<T>(const_cast<spt_matrix_s&>(m));
}

}  // namespace

extern "C" {

/* ---------------------------- sorting and norm ---------------------------- */

SPT_API spt_status spt_coo_sort(spt_context* ctx, spt_coo* x, const uint32_t* mode_order) {
  return guarded(ctx, "spt_coo_sort", [&] {
    require_not_null(x, "x");
    require_writable(*x);
    std::vector<uint32_t> order = mode_order ? std::vector<uint32_t>(mode_order, mode_order + x->order())
                                             : sorting::natural_order(x->order());
    sorting::check_mode_order(x->order(), order);
    sorting::sort_in_place(dispatch::exec_for(resolve(ctx)), *x, order);
  });
}

SPT_API spt_status spt_coo_sort_morton(spt_context* ctx, spt_coo* x) {
  return guarded(ctx, "spt_coo_sort_morton", [&] {
    require_not_null(x, "x");
    require_writable(*x);
    sorting::sort_morton_in_place(dispatch::exec_for(resolve(ctx)), *x);
  });
}

SPT_API spt_status spt_coo_coalesce(spt_context* ctx, spt_coo* x, spt_duplicates policy) {
  return guarded(ctx, "spt_coo_coalesce", [&] {
    require_not_null(x, "x");
    require(policy == SPT_DUPLICATES_KEEP || policy == SPT_DUPLICATES_SUM || policy == SPT_DUPLICATES_REJECT,
            "policy must be SPT_DUPLICATES_KEEP, _SUM or _REJECT, got ", static_cast<int>(policy));
    require_writable(*x);
    sorting::coalesce(dispatch::exec_for(resolve(ctx)), *x, policy);
  });
}

SPT_API spt_status spt_coo_count_distinct(spt_context* ctx, const spt_coo* x, spt_nnz* distinct) {
  return guarded(ctx, "spt_coo_count_distinct", [&] {
    require_not_null(x, "x");
    require_not_null(distinct, "distinct");
    *distinct = SPT_DISPATCH(resolve(ctx), summed_stats, *x).distinct;
  });
}

SPT_API spt_status spt_coo_norm(spt_context* ctx, const spt_coo* x, double* norm) {
  return guarded(ctx, "spt_coo_norm", [&] {
    require_not_null(x, "x");
    require_not_null(norm, "norm");
    *norm = std::sqrt(SPT_DISPATCH(resolve(ctx), summed_stats, *x).norm_squared);
    // The sum of squares overflows for values near 1e154 and above and
    // underflows for values near 1e-154 and below: then recompute it on a
    // copy scaled by a power of two near 1 / max|x| (exact), and scale back.
    if (!(std::isfinite(*norm) && *norm > 1e-140)) {
      with_dtype(x->dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* v = x->values<T>();
        double largest = 0;
        for (spt_nnz k = 0; k < x->nnz; ++k) largest = std::max(largest, std::abs(static_cast<double>(v[k])));
        if (largest == 0 || !std::isfinite(largest)) return;  // all zero, or Inf/NaN present: keep the plain result
        const int shift = -std::ilogb(largest);
        spt_coo_s scaled = copy_coo(*x, SPT_FLOAT64);
        double* w = scaled.template mutable_values<double>();
        for (spt_nnz k = 0; k < scaled.nnz; ++k) w[k] = std::ldexp(w[k], shift);
        *norm = std::ldexp(std::sqrt(SPT_DISPATCH(resolve(ctx), summed_stats, scaled).norm_squared), -shift);
      });
    }
  });
}

/* --------------------------------- kernels -------------------------------- */

SPT_API spt_status spt_ttv(spt_context* ctx, const spt_coo* x, uint32_t mode, const void* v, spt_nnz v_len,
                           spt_coo** out) {
  return guarded(ctx, "spt_ttv", [&] {
    require_not_null(x, "x");
    require_not_null(v, "v");
    require_not_null(out, "out");
    require(x->order() >= 2, "spt_ttv needs a tensor of order >= 2 (the result has order N-1), got order ",
            x->order());
    check_mode(*x, mode);
    require(v_len == x->dims[mode], "v has ", v_len, " entries but dims[", mode, "] = ", x->dims[mode]);
    auto y = std::make_unique<spt_coo_s>();
    with_dtype(x->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      SPT_DISPATCH(resolve(ctx), ttv, *x, mode, static_cast<const T*>(v), *y);
    });
    *out = y.release();
  });
}

SPT_API spt_status spt_ttm(spt_context* ctx, const spt_coo* x, uint32_t mode, const spt_matrix* u,
                           spt_scoo** out) {
  return guarded(ctx, "spt_ttm", [&] {
    require_not_null(x, "x");
    require_not_null(u, "u");
    require_not_null(out, "out");
    check_mode(*x, mode);
    check_matrix_dtype(*u, x->dtype(), "u");
    require(u->rows == x->dims[mode] && u->cols >= 1, "u must be dims[", mode, "] x R = ", x->dims[mode],
            " x R with R >= 1, got ", shape(u->rows, u->cols));
    if (u->cols > UINT32_MAX) fail(SPT_ERR_OVERFLOW, "u has ", u->cols, " columns; the dense mode must fit 32 bits");
    auto y = std::make_unique<spt_scoo_s>();
    with_dtype(x->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      RowMajor<T> um = read_rows<T>(*u);
      SPT_DISPATCH(resolve(ctx), ttm, *x, mode, um.cref(), *y);
    });
    *out = y.release();
  });
}

SPT_API spt_status spt_mttkrp(spt_context* ctx, const spt_coo* x, const spt_matrix* const* factors, uint32_t mode,
                              spt_matrix* out) {
  return guarded(ctx, "spt_mttkrp", [&] {
    require_not_null(x, "x");
    require_not_null(factors, "factors");
    require_not_null(out, "out");
    check_mode(*x, mode);
    check_matrix_dtype(*out, x->dtype(), "out");
    const spt_nnz rank = out->cols;
    require(rank >= 1, "out must have at least one column (the rank R)");
    require(out->rows == x->dims[mode], "out must be dims[", mode, "] x R = ", shape(x->dims[mode], rank), ", got ",
            shape(out->rows, out->cols));
    for (uint32_t m = 0; m < x->order(); ++m) {
      if (m == mode) continue;
      const spt_matrix_s* f = factors[m];
      require(f != nullptr, "factors[", m, "] must not be NULL (only factors[mode] may be)");
      require(f != out, "out must not be the same matrix as factors[", m, "]");
      check_matrix_dtype(*f, x->dtype(), cat("factors[", m, "]"));
      require(f->rows == x->dims[m] && f->cols == rank, "factors[", m, "] must be dims[", m, "] x R = ",
              shape(x->dims[m], rank), " (R from out), got ", shape(f->rows, f->cols));
    }
    with_dtype(x->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<std::unique_ptr<RowMajor<T>>> held(x->order());
      std::vector<ConstMatRef<T>> refs(x->order());
      for (uint32_t m = 0; m < x->order(); ++m) {
        if (m == mode) continue;
        held[m] = std::make_unique<RowMajor<T>>(read_rows<T>(*factors[m]));
        refs[m] = held[m]->cref();
      }
      RowMajor<T> o(*out);
      SPT_DISPATCH(resolve(ctx), mttkrp, *x, refs.data(), mode, o.ref());
      o.write_back();
    });
  });
}

SPT_API spt_status spt_elementwise(spt_context* ctx, spt_elementwise_op op, const spt_coo* x, const spt_coo* y,
                                   spt_coo** out) {
  return guarded(ctx, "spt_elementwise", [&] {
    require_not_null(x, "x");
    require_not_null(y, "y");
    require_not_null(out, "out");
    check_op(op);
    require(x->dtype() == y->dtype(), "x is ", dtype_name(x->dtype()), " but y is ", dtype_name(y->dtype()),
            "; convert one with spt_coo_convert_dtype");
    require(x->order() == y->order(), "x has order ", x->order(), " but y has order ", y->order());
    for (uint32_t m = 0; m < x->order(); ++m)
      require(x->dims[m] == y->dims[m], "dims differ in mode ", m, ": x has ", x->dims[m], ", y has ", y->dims[m]);
    auto z = std::make_unique<spt_coo_s>();
    SPT_DISPATCH(resolve(ctx), elementwise, op, *x, *y, *z);
    *out = z.release();
  });
}

SPT_API spt_status spt_elementwise_scalar(spt_context* ctx, spt_elementwise_op op, const spt_coo* x, double s,
                                          spt_coo** out) {
  return guarded(ctx, "spt_elementwise_scalar", [&] {
    require_not_null(x, "x");
    require_not_null(out, "out");
    check_op(op);
    auto z = std::make_unique<spt_coo_s>();
    with_dtype(x->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T scalar = static_cast<T>(s);
      require(!(op == SPT_OP_DIV && scalar == T(0)), "division by zero (s = ", s, " in ", dtype_name(x->dtype()),
              ")");
      SPT_DISPATCH(resolve(ctx), elementwise_scalar, op, *x, scalar, *z);
    });
    *out = z.release();
  });
}

SPT_API spt_status spt_unfold_csr(spt_context* ctx, const spt_coo* x, uint32_t mode, spt_csr** out) {
  return guarded(ctx, "spt_unfold_csr", [&] {
    require_not_null(x, "x");
    require_not_null(out, "out");
    check_mode(*x, mode);
    uint64_t cols = 1;
    for (uint32_t m = 0; m < x->order(); ++m) {
      if (m == mode) continue;
      if (x->dims[m] != 0 && cols > UINT64_MAX / x->dims[m])
        fail(SPT_ERR_OVERFLOW, "the mode-", mode, " unfolding would have more than 2^64-1 columns (the product of ",
             "the other dims); unfold a tensor with smaller dims");
      cols *= x->dims[m];
    }
    auto a = std::make_unique<spt_csr_s>();
    SPT_DISPATCH(resolve(ctx), unfold_csr, *x, mode, *a);
    *out = a.release();
  });
}

SPT_API spt_status spt_khatri_rao(spt_context* ctx, const spt_matrix* a, const spt_matrix* b, spt_matrix** out) {
  return guarded(ctx, "spt_khatri_rao", [&] {
    require_not_null(a, "a");
    require_not_null(b, "b");
    require_not_null(out, "out");
    require(a->dtype() == b->dtype(), "a is ", dtype_name(a->dtype()), " but b is ", dtype_name(b->dtype()));
    require(a->cols == b->cols, "a and b must have the same number of columns, got ", shape(a->rows, a->cols),
            " and ", shape(b->rows, b->cols));
    const spt_nnz rows = checked_mul(a->rows, b->rows, "Khatri-Rao row count");
    auto c = std::make_unique<spt_matrix_s>();
    init_matrix(*c, a->dtype(), rows, a->cols, SPT_ROW_MAJOR);
    with_dtype(a->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      RowMajor<T> ar = read_rows<T>(*a), br = read_rows<T>(*b), cr(*c);
      SPT_DISPATCH(resolve(ctx), khatri_rao, ar.cref(), br.cref(), cr.ref());
    });
    *out = c.release();
  });
}

SPT_API spt_status spt_kronecker(spt_context* ctx, const spt_matrix* a, const spt_matrix* b, spt_matrix** out) {
  return guarded(ctx, "spt_kronecker", [&] {
    require_not_null(a, "a");
    require_not_null(b, "b");
    require_not_null(out, "out");
    require(a->dtype() == b->dtype(), "a is ", dtype_name(a->dtype()), " but b is ", dtype_name(b->dtype()));
    const spt_nnz rows = checked_mul(a->rows, b->rows, "Kronecker row count");
    const spt_nnz cols = checked_mul(a->cols, b->cols, "Kronecker column count");
    auto c = std::make_unique<spt_matrix_s>();
    init_matrix(*c, a->dtype(), rows, cols, SPT_ROW_MAJOR);
    with_dtype(a->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      RowMajor<T> ar = read_rows<T>(*a), br = read_rows<T>(*b), cr(*c);
      SPT_DISPATCH(resolve(ctx), kronecker, ar.cref(), br.cref(), cr.ref());
    });
    *out = c.release();
  });
}

SPT_API spt_status spt_inner_ktensor(spt_context* ctx, const spt_coo* x, const spt_ktensor* k, double* result) {
  return guarded(ctx, "spt_inner_ktensor", [&] {
    require_not_null(x, "x");
    require_not_null(k, "ktensor");
    require_not_null(result, "result");
    require(k->dtype() == x->dtype(), "the ktensor is ", dtype_name(k->dtype()), " but the tensor is ",
            dtype_name(x->dtype()));
    require(k->order() == x->order(), "the ktensor has order ", k->order(), " but the tensor has order ", x->order());
    for (uint32_t m = 0; m < x->order(); ++m)
      require(k->dims[m] == x->dims[m], "dims differ in mode ", m, ": tensor ", x->dims[m], ", ktensor ", k->dims[m]);
    with_dtype(x->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<std::unique_ptr<RowMajor<T>>> held;
      std::vector<ConstMatRef<T>> refs;
      for (uint32_t m = 0; m < x->order(); ++m) {
        const spt_matrix_s& f = *k->factors[m];
        require(f.rows == x->dims[m] && f.cols == k->rank, "ktensor factor ", m, " is ", shape(f.rows, f.cols),
                ", expected ", shape(x->dims[m], k->rank));
        held.push_back(std::make_unique<RowMajor<T>>(read_rows<T>(f)));
        refs.push_back(held.back()->cref());
      }
      *result = SPT_DISPATCH(resolve(ctx), inner_ktensor, *x, k->lambda.ptr<T>(), refs.data(), k->rank);
    });
  });
}

/* ------------------------- semi-sparse results (sCOO) ------------------------- */

SPT_API spt_status spt_scoo_free(spt_scoo* y) {
  delete y;
  return SPT_OK;
}

SPT_API spt_status spt_scoo_info(spt_context* ctx, const spt_scoo* y, spt_scoo_summary* info) {
  return guarded(ctx, "spt_scoo_info", [&] {
    require_not_null(y, "y");
    require_not_null(info, "info");
    spt_scoo_summary s;
    std::memset(&s, 0, sizeof(s));
    s.dtype = y->dtype();
    s.order = y->order();
    s.dense_mode = y->dense_mode;
    s.dense_mode_count = static_cast<uint32_t>(y->dense_modes.size());
    s.nfibers = y->nfibers;
    s.block_length = y->block_size();
    write_info(info, s, sizeof(spt_scoo_summary), "spt_scoo_summary");
  });
}

SPT_API spt_status spt_scoo_dims(const spt_scoo* y, spt_index* dims) {
  return guarded("spt_scoo_dims", [&] {
    require_not_null(y, "y");
    require_not_null(dims, "dims");
    std::copy(y->dims.begin(), y->dims.end(), dims);
  });
}

SPT_API spt_status spt_scoo_indices(const spt_scoo* y, uint32_t mode, const spt_index** indices) {
  return guarded("spt_scoo_indices", [&] {
    require_not_null(y, "y");
    require_not_null(indices, "indices");
    require(mode < y->order(), "mode ", mode, " out of range for an order-", y->order(), " semi-sparse tensor");
    require(!y->is_dense(mode), "mode ", mode, " is a dense mode; it has no indices");
    *indices = y->ind[mode].data();
  });
}

SPT_API spt_status spt_scoo_values(const spt_scoo* y, const void** values) {
  return guarded("spt_scoo_values", [&] {
    require_not_null(y, "y");
    require_not_null(values, "values");
    *values = y->values.data();
  });
}

SPT_API spt_status spt_scoo_to_coo(spt_context* ctx, const spt_scoo* y, spt_coo** out) {
  return guarded(ctx, "spt_scoo_to_coo", [&] {
    require_not_null(y, "y");
    require_not_null(out, "out");
    auto x = std::make_unique<spt_coo_s>();
    const uint32_t order = y->order();
    const std::vector<uint32_t>& dense = y->dense_modes;
    const spt_nnz len = y->block_size();
    with_dtype(y->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* v = y->values.get<T>().data();
      spt_nnz count = 0;
      for (spt_nnz e = 0; e < y->nfibers * len; ++e) count += v[e] != T(0);
      x->init_owned(y->dtype(), y->dims, count);
      std::vector<spt_index> coord(order, 0);
      spt_nnz k = 0;
      for (spt_nnz f = 0; f < y->nfibers; ++f) {
        for (uint32_t d : dense) coord[d] = 0;  // block entries run lowest dense mode fastest
        for (spt_nnz r = 0; r < len; ++r) {
          const T value = v[f * len + r];
          if (value != T(0)) {
            for (uint32_t m = 0; m < order; ++m)
              x->mutable_ind(m)[k] = y->is_dense(m) ? coord[m] : y->ind[m][f];
            x->mutable_values<T>()[k] = value;
            ++k;
          }
          for (uint32_t d : dense) {
            if (++coord[d] < y->dims[d]) break;
            coord[d] = 0;
          }
        }
      }
    });
    *out = x.release();
  });
}

/* ------------------------------ CSR unfoldings ------------------------------ */

SPT_API spt_status spt_csr_free(spt_csr* a) {
  delete a;
  return SPT_OK;
}

SPT_API spt_status spt_csr_arrays(const spt_csr* a, spt_dtype* dtype, spt_nnz* rows, uint64_t* cols, spt_nnz* nnz,
                                  const spt_nnz** row_ptr, const uint64_t** col_ind, const void** values) {
  return guarded("spt_csr_arrays", [&] {
    require_not_null(a, "a");
    if (dtype) *dtype = a->dtype();
    if (rows) *rows = a->rows;
    if (cols) *cols = a->cols;
    if (nnz) *nnz = a->nnz();
    if (row_ptr) *row_ptr = a->row_ptr.data();
    if (col_ind) *col_ind = a->col_ind.data();
    if (values) *values = a->values.data();
  });
}

}  // extern "C"
