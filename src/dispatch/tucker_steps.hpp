// The steps of one Tucker-HOOI, wherever its data lives. The one driver
// (src/algo/tucker_hooi.cpp) runs every sweep - the order of the modes, the
// choice of the singular-vector route, the fit, convergence and callbacks -
// and calls these steps; a TuckerSteps holds the factors U_m, the TTMc
// result Y, the Gram workspace and the core between calls. The host
// implementation is the CPU code (algo/tucker_hooi.cpp); the device one
// (device_tucker_steps below, src/dispatch/device_tucker.cpp) forwards each
// step to the plugin's TUCKER_STEPS entries, so the data stays on the device
// for the whole run and only scalars cross per step.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/matrix.hpp"
#include "sptensor/tucker.h"

namespace spt::dispatch {

// Thrown by a device step when a device failure (out of memory, a CUDA
// error, an input the GPU cannot run) under the AUTO backend sends the run
// to the host: the note is in the context's log already, and the driver
// starts again on the host from its own initial factors. Under a forced
// CUDA backend such a failure throws spt::Error instead.
struct TuckerStepsFellBack {};

// P_n = prod_{m != n} R_m below. Every step may throw spt::Error
// (SPT_ERR_NUMERICAL for a solver that did not converge, with the CPU's
// message) or TuckerStepsFellBack. One thread at a time.
template <typename T>
class TuckerSteps {
 public:
  virtual ~TuckerSteps() = default;
  // True when the steps run on a device (the driver's log says "(cuda)").
  virtual bool on_device() const = 0;
  // U_mode = u (dims[mode] x ranks[mode]); u may change once this returns.
  virtual void set_factor(uint32_t mode, ConstMatRef<T> u) = 0;
  // u (dims[mode] x ranks[mode]) = U_mode.
  virtual void get_factor(uint32_t mode, MatRef<T> u) = 0;
  // Y = Y_(mode) = X_(mode) kron_{m != mode} U_m (I_mode x P_mode, columns =
  // the other modes, lowest fastest); U_mode is not read.
  virtual void ttmc(uint32_t mode) = 0;
  // U_mode = the eigenvectors of Y Y^T for its R_mode largest eigenvalues,
  // largest first (Y of `mode`).
  virtual void gram_vectors(uint32_t mode) = 0;
  // The R_mode leading eigenpairs (v_r, s_r^2) of Y^T Y, kept for
  // right_vectors; smallest_kept = s_R^2, largest = s_1^2.
  virtual void right_gram(uint32_t mode, T& smallest_kept, T& largest) = 0;
  // U_mode = Y [v_r / s_r] from right_gram's eigenpairs of the same Y.
  virtual void right_vectors(uint32_t mode) = 0;
  // U_mode = the R_mode leading left singular vectors of Y (economy SVD).
  virtual void svd_vectors(uint32_t mode) = 0;
  // The entry of largest magnitude of each column of U_mode (the first on
  // ties) made positive (pyttb nvecs).
  virtual void fix_signs(uint32_t mode) = 0;
  // G = U_{N-1}^T Y with Y of the last mode (kept); returns ||G||^2, summed
  // in double.
  virtual double core() = 0;
  // core (prod R_m values, first index fastest) = the last core()'s G.
  virtual void get_core(T* core) = 0;
};

// Device steps for a Tucker-HOOI of x at `ranks` when the context runs on
// a CUDA device, with the TTMc on one copy of x per mode, uploaded for this
// run: HLS rooted at the mode (EXACT precision) for a tensor of order 3 or
// 4 with at least 100,000 nonzeros and 5% of them in dense tiles, else
// B-CSF chained TTMs or op-MTTKRP F-COO by the cost estimate
// (device_tucker.hpp); `method` (spt_tucker_options.ttmc) forces one. The
// log names the format taken. Returns nullptr when the driver must run on
// the host: backend not CUDA; or AUTO with a small problem
// (DeviceKernels::tucker_prefers_cpu), an order outside 2..8, 2^32 or more
// nonzeros, sizes above cuBLAS's 32-bit limits, a device out-of-memory or
// another device failure, each with a note in the log. With CUDA forced
// these throw instead: SPT_ERR_UNSUPPORTED (order, sizes, a forced method
// outside its kernels' orders), SPT_ERR_OUT_OF_MEMORY, SPT_ERR_DEVICE.
// T = float or double, x's dtype.
template <typename T>
std::unique_ptr<TuckerSteps<T>> device_tucker_steps(const spt_context_s& ctx, const spt_coo_s& x,
                                                    const std::vector<spt_index>& ranks, spt_tucker_ttmc method);

}  // namespace spt::dispatch
