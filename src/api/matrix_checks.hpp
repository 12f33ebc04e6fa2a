// Argument checks the C API entry points share for caller matrices.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/matrix.hpp"

namespace spt {

// "R x C" for error messages.
inline std::string shape(spt_nnz rows, spt_nnz cols) { return cat(rows, " x ", cols); }

// Throws INVALID_ARGUMENT unless matrix m (named `what`) has the tensor's dtype.
inline void check_matrix_dtype(const spt_matrix_s& m, spt_dtype want, const std::string& what) {
  require(m.dtype() == want, what, " is ", dtype_name(m.dtype()), " but the tensor is ", dtype_name(want),
          "; convert one of them so the dtypes match");
}

// Row-major views of the factors of every mode but `skip`, as the
// kernels of the one-mode formats (F-COO, HB-CSF, HLS) take them.
template <typename T>
struct FactorViews {
  std::vector<std::unique_ptr<RowMajor<T>>> held;
  std::vector<ConstMatRef<T>> refs;
};

// Checks factors[m] for every m != skip against the tensor's dims and
// dtype (not NULL, not `out`, rows = dims[m], columns = `rank`, or >= 1
// when rank is 0) and views them; `skip_name` names the skipped mode in
// messages ("mode", "root_mode"). Throws INVALID_ARGUMENT.
template <typename T>
FactorViews<T> factor_views(const std::vector<spt_index>& dims, uint32_t skip, spt_dtype dtype,
                            const spt_matrix* const* factors, const spt_matrix* out, spt_nnz rank,
                            const char* skip_name) {
  const uint32_t order = static_cast<uint32_t>(dims.size());
  FactorViews<T> v;
  v.held.resize(order);
  v.refs.resize(order);
  for (uint32_t m = 0; m < order; ++m) {
    if (m == skip) continue;
    const spt_matrix_s* fm = factors[m];
    require(fm != nullptr, "factors[", m, "] must not be NULL (only factors[", skip_name, "] may be)");
    require(fm != out, "out must not be the same matrix as factors[", m, "]");
    check_matrix_dtype(*fm, dtype, cat("factors[", m, "]"));
    if (rank)
      require(fm->rows == dims[m] && fm->cols == rank, "factors[", m, "] must be dims[", m, "] x R = ",
              shape(dims[m], rank), " (R from out), got ", shape(fm->rows, fm->cols));
    else
      require(fm->rows == dims[m] && fm->cols >= 1, "factors[", m, "] must be dims[", m, "] x R_", m, " = ",
              dims[m], " x R with R >= 1, got ", shape(fm->rows, fm->cols));
    v.held[m] = std::make_unique<RowMajor<T>>(const_cast<spt_matrix_s&>(*fm));
    v.refs[m] = v.held[m]->cref();
  }
  return v;
}

// The MTTKRP in `mode` of a one-tree handle (HB-CSF, HLS; mode < order,
// checked by the caller): checks out (the handle's dtype, dims[mode] x R
// with R >= 1) and the factors, then calls run(refs, out_ref) with T = the
// handle's value type (refs: row-major factor views by mode, `mode`'s
// unset; out_ref: a row-major view of out, written back after run).
// `mode_name` names the mode in messages. Throws INVALID_ARGUMENT.
template <typename Handle, typename Run>
void handle_mttkrp(const Handle& h, uint32_t mode, const spt_matrix* const* factors, spt_matrix* out,
                   const char* mode_name, Run&& run) {
  require_not_null(factors, "factors");
  require_not_null(out, "out");
  check_matrix_dtype(*out, h.dtype(), "out");
  const spt_nnz rank = out->cols;
  require(rank >= 1, "out must have at least one column (the rank R)");
  require(out->rows == h.dims[mode], "out must be dims[", mode, "] x R = ", shape(h.dims[mode], rank), ", got ",
          shape(out->rows, out->cols));
  with_dtype(h.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    FactorViews<T> v = factor_views<T>(h.dims, mode, h.dtype(), factors, out, rank, mode_name);
    RowMajor<T> o(*out);
    run(v.refs.data(), o.ref());
    o.write_back();
  });
}

// handle_mttkrp in the handle's root mode.
template <typename Handle, typename Run>
void rooted_mttkrp(const Handle& h, const spt_matrix* const* factors, spt_matrix* out, const char* root_name,
                   Run&& run) {
  handle_mttkrp(h, h.root(), factors, out, root_name, std::forward<Run>(run));
}

}  // namespace spt
