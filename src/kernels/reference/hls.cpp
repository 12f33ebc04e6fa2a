// Reference HLS MTTKRP and TTMc: decode the dense and sparse parts back into
// a COO tensor and run the COO reference kernels. An independent oracle for
// the encoding and for the CPU (and later tensor-core) HLS kernels.
#include "core/coo.hpp"
#include "core/error.hpp"
#include "kernels/kernels.hpp"

namespace spt::kernels::reference {

#define SPT_REFERENCE_HLS(T)                                                                              \
  void mttkrp_hls(const Exec& exec, const spt_hls_s& h, const ConstMatRef<T>* factors, MatRef<T> out) { \
    const spt_coo_s x = hls::to_coo(h, 1);                                                             \
    mttkrp(exec, x, factors, h.root(), out);                                                           \
  }                                                                                                     \
  void ttmc_hls(const Exec& exec, const spt_hls_s& h, const ConstMatRef<T>* factors, MatRef<T> out) {   \
    const spt_coo_s x = hls::to_coo(h, 1);                                                             \
    ttmc(exec, x, factors, h.root(), out);                                                             \
  }

SPT_REFERENCE_HLS(float)
SPT_REFERENCE_HLS(double)

#undef SPT_REFERENCE_HLS

}  // namespace spt::kernels::reference
