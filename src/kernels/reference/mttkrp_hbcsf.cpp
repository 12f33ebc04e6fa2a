// Reference B-CSF / HB-CSF MTTKRP, root mode (mttkrp_hbcsf) and any mode
// (mttkrp_hbcsf_mode): decode the three groups back into a COO tensor and
// run the COO reference kernel in the asked mode. An independent oracle for
// the encoding and for the CPU and GPU HB-CSF kernels.
#include "core/coo.hpp"
#include "core/error.hpp"
#include "kernels/kernels.hpp"

namespace spt::kernels::reference {

#define SPT_REFERENCE_HBCSF(T)                                                                              \
  void mttkrp_hbcsf(const Exec& exec, const spt_hbcsf_s& h, const ConstMatRef<T>* factors, MatRef<T> out) { \
    const spt_coo_s x = hbcsf::to_coo(h, 1);                                                               \
    mttkrp(exec, x, factors, h.root(), out);                                                               \
  }                                                                                                         \
  void mttkrp_hbcsf_mode(const Exec& exec, const spt_hbcsf_s& h, const ConstMatRef<T>* factors, uint32_t mode, \
                         MatRef<T> out) {                                                                   \
    if (mode >= h.order())                                                                                  \
      fail(SPT_ERR_INVALID_ARGUMENT, "HB-CSF MTTKRP: mode ", mode, " is out of range (order ", h.order(), ")"); \
    const spt_coo_s x = hbcsf::to_coo(h, 1);                                                               \
    mttkrp(exec, x, factors, mode, out);                                                                   \
  }

SPT_REFERENCE_HBCSF(float)
SPT_REFERENCE_HBCSF(double)

#undef SPT_REFERENCE_HBCSF

}  // namespace spt::kernels::reference
