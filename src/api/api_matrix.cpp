// C ABI: dense matrices.
#include <cstring>
#include <memory>

#include "api/guard.hpp"
#include "api/options_init.hpp"
#include "core/matrix.hpp"

using namespace spt;

namespace {

void check_layout_ld(spt_layout layout, spt_nnz rows, spt_nnz cols, spt_nnz ld, spt_dtype dtype) {
  require(layout == SPT_ROW_MAJOR || layout == SPT_COL_MAJOR, "layout must be SPT_ROW_MAJOR or SPT_COL_MAJOR");
  spt_nnz need = layout == SPT_ROW_MAJOR ? cols : rows;
  require(ld >= need && ld >= 1, "ld (", ld, ") must be at least ", need > 0 ? need : 1, " for a ", rows, " x ",
          cols, layout == SPT_ROW_MAJOR ? " row-major" : " column-major", " matrix");
  spt_nnz outer = layout == SPT_ROW_MAJOR ? rows : cols;
  // The caller's array spans outer * ld elements: its byte size must fit
  // 64 bits, or the element addresses would wrap.
  checked_mul(checked_mul(outer, ld, "matrix storage size"), dtype_size(dtype), "matrix storage bytes");
}

}  // namespace

extern "C" {

SPT_API spt_status spt_matrix_create(spt_context* ctx, spt_dtype dtype, spt_nnz rows, spt_nnz cols,
                                     spt_layout layout, spt_matrix** out) {
  return guarded(ctx, "spt_matrix_create", [&] {
    require_not_null(out, "out");
    auto m = std::make_unique<spt_matrix_s>();
    init_matrix(*m, dtype, rows, cols, layout);
    *out = m.release();
  });
}

SPT_API spt_status spt_matrix_create_copy(spt_context* ctx, spt_dtype dtype, spt_nnz rows, spt_nnz cols,
                                          spt_layout layout, const void* data, spt_nnz ld, spt_matrix** out) {
  return guarded(ctx, "spt_matrix_create_copy", [&] {
    require_not_null(out, "out");
    check_dtype(dtype);
    check_layout_ld(layout, rows, cols, ld, dtype);
    if (rows && cols) require_not_null(data, "data");
    auto m = std::make_unique<spt_matrix_s>();
    init_matrix(*m, dtype, rows, cols, layout);
    const size_t es = dtype_size(dtype);
    const spt_nnz outer = layout == SPT_ROW_MAJOR ? rows : cols;
    const spt_nnz inner = layout == SPT_ROW_MAJOR ? cols : rows;
    for (spt_nnz o = 0; o < outer; ++o)
      std::memcpy(static_cast<char*>(m->data()) + o * m->ld * es, static_cast<const char*>(data) + o * ld * es,
                  inner * es);
    *out = m.release();
  });
}

SPT_API spt_status spt_matrix_wrap(spt_context* ctx, spt_dtype dtype, spt_nnz rows, spt_nnz cols,
                                   spt_layout layout, void* data, spt_nnz ld, spt_matrix** out) {
  return guarded(ctx, "spt_matrix_wrap", [&] {
    require_not_null(out, "out");
    check_dtype(dtype);
    check_layout_ld(layout, rows, cols, ld, dtype);
    if (rows && cols) require_not_null(data, "data");
    auto m = std::make_unique<spt_matrix_s>();
    m->rows = rows;
    m->cols = cols;
    m->ld = ld;
    m->layout = layout;
    m->wrapped = data;
    m->wrapped_dtype = dtype;
    m->own.set_dtype(dtype);
    *out = m.release();
  });
}

SPT_API spt_status spt_matrix_free(spt_matrix* m) {
  delete m;
  return SPT_OK;
}

SPT_API spt_status spt_matrix_info(spt_context* ctx, const spt_matrix* m, spt_matrix_summary* info) {
  return guarded(ctx, "spt_matrix_info", [&] {
    require_not_null(m, "matrix");
    require_not_null(info, "info");
    spt_matrix_summary s;
    std::memset(&s, 0, sizeof(s));
    s.dtype = m->dtype();
    s.layout = m->layout;
    s.rows = m->rows;
    s.cols = m->cols;
    s.ld = m->ld;
    s.wrapped = m->wrapped ? 1 : 0;
    write_info(info, s, sizeof(spt_matrix_summary), "spt_matrix_summary");
  });
}

SPT_API spt_status spt_matrix_data(spt_matrix* m, void** data) {
  return guarded("spt_matrix_data", [&] {
    require_not_null(m, "matrix");
    require_not_null(data, "data");
    *data = m->data();
  });
}

SPT_API spt_status spt_matrix_copy_out(const spt_matrix* m, spt_layout layout, void* data, spt_nnz ld) {
  return guarded("spt_matrix_copy_out", [&] {
    require_not_null(m, "matrix");
    check_layout_ld(layout, m->rows, m->cols, ld, m->dtype());
    if (m->rows && m->cols) require_not_null(data, "data");
    with_dtype(m->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = static_cast<T*>(data);
      for (spt_nnz i = 0; i < m->rows; ++i)
        for (spt_nnz j = 0; j < m->cols; ++j)
          (layout == SPT_ROW_MAJOR ? dst[i * ld + j] : dst[j * ld + i]) = m->at<T>(i, j);
    });
  });
}

}  // extern "C"
