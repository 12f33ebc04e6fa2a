#include "core/matrix.hpp"

namespace spt {

void init_matrix(spt_matrix_s& m, spt_dtype dtype, spt_nnz rows, spt_nnz cols, spt_layout layout) {
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
  m.own.assign_zero(n);
}

}  // namespace spt
