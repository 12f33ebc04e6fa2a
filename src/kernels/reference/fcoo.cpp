// Reference F-COO kernels: decode the flags and per-segment coordinates
// back into a COO tensor and run the COO reference kernels. An independent
// oracle for the format's encoding and for the CPU and GPU F-COO kernels.
#include "core/coo.hpp"
#include "core/error.hpp"
#include "kernels/kernels.hpp"

namespace spt::kernels::reference {

#define SPT_REFERENCE_FCOO(T)                                                                               \
  void mttkrp_fcoo(const Exec& exec, const spt_fcoo_s& f, const ConstMatRef<T>* factors, MatRef<T> out) {   \
    fcoo::require_op(f, SPT_FCOO_MTTKRP, "MTTKRP");                                                              \
    const spt_coo_s x = fcoo::to_coo(f, 1);                                                                \
    mttkrp(exec, x, factors, f.mode, out);                                                                 \
  }                                                                                                        \
  void ttm_fcoo(const Exec& exec, const spt_fcoo_s& f, ConstMatRef<T> u, spt_scoo_s& out) {                 \
    fcoo::require_op(f, SPT_FCOO_TTM, "TTM");                                                                    \
    const spt_coo_s x = fcoo::to_coo(f, 1);                                                                \
    ttm(exec, x, f.mode, u, out);                                                                          \
  }                                                                                                        \
  void ttmc_fcoo(const Exec& exec, const spt_fcoo_s& f, const ConstMatRef<T>* factors, MatRef<T> out) {     \
    fcoo::require_op(f, SPT_FCOO_MTTKRP, "TTMc");                                                                \
    const spt_coo_s x = fcoo::to_coo(f, 1);                                                                \
    ttmc(exec, x, factors, f.mode, out);                                                                   \
  }

SPT_REFERENCE_FCOO(float)
SPT_REFERENCE_FCOO(double)

#undef SPT_REFERENCE_FCOO

}  // namespace spt::kernels::reference
