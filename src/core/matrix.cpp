#include "core/matrix.hpp"

#include <algorithm>
#include <string>

namespace spt {

void init_matrix(spt_matrix_s& m, spt_dtype dtype, spt_nnz rows, spt_nnz cols, spt_layout layout, const char* what) {
  check_dtype(dtype);
  require(layout == SPT_ROW_MAJOR || layout == SPT_COL_MAJOR, "layout must be SPT_ROW_MAJOR or SPT_COL_MAJOR");
  uint64_t n = checked_mul(rows, cols, "matrix element count");
  checked_mul(n, dtype_size(dtype), "matrix size in bytes");
  m.rows = rows;
  m.cols = cols;
  m.layout = layout;
  m.ld = layout == SPT_ROW_MAJOR ? cols : rows;
  m.wrapped = nullptr;
  m.own.set_dtype(dtype);
  const auto describe = [&] { return cat(what ? what : "a dense matrix", " (", rows, " x ", cols, ")"); };
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    resize_named(m.own.get<T>(), n, describe);
    std::fill(m.own.get<T>().begin(), m.own.get<T>().end(), T(0));
  });
}

}  // namespace spt
