// Argument checks the C API entry points share for caller matrices.
#pragma once

#include <string>

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

}  // namespace spt
