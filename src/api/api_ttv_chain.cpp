// C ABI: tensor times a vector in every mode but one (TTV chain) and in
// every mode (full contraction). Arguments are validated here; the kernel
// of the context's backend runs through SPT_DISPATCH.
#include <vector>

#include "api/guard.hpp"
#include "core/coo.hpp"
#include "dispatch/dispatch.hpp"

using namespace spt;

namespace {

// Typed vector pointers; every mode but `skip` must have one.
template <typename T>
std::vector<const T*> typed_vectors(const spt_coo_s& x, const void* const* vectors, uint32_t skip) {
  std::vector<const T*> v(x.order(), nullptr);
  for (uint32_t m = 0; m < x.order(); ++m) {
    if (m == skip) continue;
    require(vectors[m] != nullptr, "vectors[", m, "] must not be NULL (it must hold dims[", m, "] = ", x.dims[m],
            " values of the tensor's dtype)");
    v[m] = static_cast<const T*>(vectors[m]);
  }
  return v;
}

}  // namespace

extern "C" {

SPT_API spt_status spt_ttv_chain(spt_context* ctx, const spt_coo* x, uint32_t keep_mode, const void* const* vectors,
                                 void* out) {
  return guarded(ctx, "spt_ttv_chain", [&] {
    require_not_null(x, "x");
    require_not_null(vectors, "vectors");
    require_not_null(out, "out");
    require(keep_mode < x->order(), "keep_mode ", keep_mode, " out of range for an order-", x->order(),
            " tensor (modes are 0-based)");
    with_dtype(x->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const std::vector<const T*> v = typed_vectors<T>(*x, vectors, keep_mode);
      for (uint32_t m = 0; m < x->order(); ++m) {
        if (m == keep_mode) continue;
        const char* vb = static_cast<const char*>(vectors[m]);
        const char* ob = static_cast<const char*>(out);
        const size_t vbytes = size_t(x->dims[m]) * sizeof(T), obytes = size_t(x->dims[keep_mode]) * sizeof(T);
        require(ob + obytes <= vb || vb + vbytes <= ob, "out must not overlap vectors[", m, "]");
      }
      SPT_DISPATCH(resolve(ctx), ttv_chain, *x, keep_mode, v.data(), static_cast<T*>(out));
    });
  });
}

SPT_API spt_status spt_ttv_all(spt_context* ctx, const spt_coo* x, const void* const* vectors, double* result) {
  return guarded(ctx, "spt_ttv_all", [&] {
    require_not_null(x, "x");
    require_not_null(vectors, "vectors");
    require_not_null(result, "result");
    *result = with_dtype(x->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const std::vector<const T*> v = typed_vectors<T>(*x, vectors, x->order());
      return SPT_DISPATCH(resolve(ctx), ttv_all, *x, v.data());
    });
  });
}

}  // extern "C"
