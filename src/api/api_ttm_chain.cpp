// C ABI: semi-sparse TTM (spt_scoo_ttm), the TTM chain (spt_ttm_chain) and
// the dense-mode query of semi-sparse tensors (spt_scoo_dense_modes).
#include <memory>
#include <vector>

#include "algo/ttm_chain.hpp"
#include "api/guard.hpp"
#include "core/matrix.hpp"
#include "core/scoo.hpp"
#include "dispatch/dispatch.hpp"

using namespace spt;

extern "C" {

SPT_API spt_status spt_scoo_dense_modes(const spt_scoo* y, uint32_t* count, uint32_t* modes_out) {
  return guarded("spt_scoo_dense_modes", [&] {
    require_not_null(y, "y");
    require_not_null(count, "count");
    *count = static_cast<uint32_t>(y->dense_modes.size());
    if (modes_out) std::copy(y->dense_modes.begin(), y->dense_modes.end(), modes_out);
  });
}

SPT_API spt_status spt_scoo_ttm(spt_context* ctx, const spt_scoo* y, uint32_t mode, const spt_matrix* u,
                                spt_scoo** out) {
  return guarded(ctx, "spt_scoo_ttm", [&] {
    require_not_null(y, "y");
    require_not_null(u, "u");
    require_not_null(out, "out");
    require(mode < y->order(), "mode ", mode, " out of range for an order-", y->order(),
            " semi-sparse tensor (modes are 0-based)");
    require(!y->is_dense(mode), "mode ", mode, " is already dense in y; SsTTM contracts a sparse mode");
    require(u->dtype() == y->dtype(), "u is ", dtype_name(u->dtype()), " but y is ", dtype_name(y->dtype()),
            "; convert one of them so the dtypes match");
    require(u->rows == y->dims[mode] && u->cols >= 1, "u must be dims[", mode, "] x R = ", y->dims[mode],
            " x R with R >= 1, got ", u->rows, " x ", u->cols);
    auto z = std::make_unique<spt_scoo_s>();
    with_dtype(y->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      RowMajor<T> um(const_cast<spt_matrix_s&>(*u));
      SPT_DISPATCH(resolve(ctx), scoo_ttm, *y, mode, um.cref(), *z);
    });
    *out = z.release();
  });
}

SPT_API spt_status spt_ttm_chain(spt_context* ctx, const spt_coo* x, uint32_t count, const uint32_t* modes,
                                 const spt_matrix* const* us, spt_scoo** out) {
  return guarded(ctx, "spt_ttm_chain", [&] {
    require_not_null(x, "x");
    require_not_null(modes, "modes");
    require_not_null(us, "us");
    require_not_null(out, "out");
    require(count >= 1 && count <= x->order(), "count must be between 1 and the tensor's order ", x->order(),
            ", got ", count);
    auto y = std::make_unique<spt_scoo_s>();
    ttm_chain(resolve(ctx), *x, std::vector<uint32_t>(modes, modes + count),
              std::vector<const spt_matrix_s*>(us, us + count), *y);
    *out = y.release();
  });
}

}  // extern "C"
