// The steps of one CP-ALS run, as the one CP-ALS loop (src/algo/cp_als.cpp)
// drives them, wherever the run's data lives: the host implementation
// (src/algo/cp_als.cpp) works on the ktensor in host memory, the device one
// (make_device_cp_als_steps, src/dispatch/device.cpp) keeps the factors,
// lambda, the MTTKRP output and the Grams on the device for the whole run
// and brings back only the scalars each step returns. The loop owns the
// sweep order, the solve-branch choice, the normalisation rule, the fit,
// the convergence test, callbacks and every error message; a step only
// computes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/error.hpp"
#include "core/ktensor.hpp"

namespace spt::dispatch {

// What factorising a mode's normal-equation matrix Y found.
struct CpAlsNormalInfo {
  bool non_finite = false;  // Y has a NaN or infinite entry
  int cholesky_info = 0;    // 0, or the order of the leading minor that is not positive definite
  double anorm = 0.0;       // ||Y||_1
  double rcond = 0.0;       // reciprocal condition number in the 1-norm (0 unless the Cholesky factor exists)
};

// The fit terms of a sweep, model M = [[lambda; U]].
struct CpAlsFitTerms {
  double inner = 0.0;               // <X, M> from the last mode's MTTKRP
  double norm_model_squared = 0.0;  // ||M||^2, in double
  double inner_error = 0.0;         // one standard deviation of `inner` from rounding the MTTKRP to T (0: none known)
};

// The steps, for T = float or double. Not thread safe: one run, one thread.
// Steps throw spt::Error; the device implementation throws
// DeviceStepFailure for a device failure.
template <typename T>
class CpAlsSteps {
 public:
  virtual ~CpAlsSteps() = default;
  // The storage, for the log (e.g. "coo", "coo, cuda").
  virtual const char* name() const = 0;
  // The library of the eigen-solver, named when it fails ("LAPACK").
  virtual const char* solver_library() const = 0;
  // k holds the initial factors (dims[m] x rank, T): take them and compute
  // every Gram. The host steps work in k itself until finish.
  virtual void start(spt_ktensor_s& k) = 0;
  // B = MTTKRP of `mode` with the current factors.
  virtual void mttkrp(uint32_t mode) = 0;
  // Y = Hadamard product of the Grams of every other mode (in T, in mode
  // order), its Cholesky factor and condition.
  virtual CpAlsNormalInfo normal_matrix(uint32_t mode) = 0;
  // U_mode = B Y^-1 from the Cholesky factor of the last normal_matrix.
  virtual void solve_cholesky(uint32_t mode) = 0;
  // U_mode = B pinv(Y) (eigenvalues above R eps max|w|); returns the
  // eigen-solver's info (> 0: it did not converge, U_mode unchanged).
  virtual int solve_pseudo_inverse(uint32_t mode) = 0;
  // lambda = column 2-norms (first_sweep) or max(max |column|, 1) of
  // U_mode, accumulated in double; U_mode's columns divided by them (a zero
  // lambda leaves its column).
  virtual void normalise(uint32_t mode, bool first_sweep) = 0;
  // The first component whose norm was not finite in the last normalise of
  // `mode`, or -1. Cheapest after a step that returned scalars.
  virtual int non_finite_component(uint32_t mode) = 0;
  // G_mode = U_mode^T U_mode.
  virtual void gram(uint32_t mode) = 0;
  // The fit terms, with the B of the last mttkrp (of the last mode).
  virtual CpAlsFitTerms fit_terms() = 0;
  // <X, M> summed in double over the nonzeros; nullopt where the steps
  // cannot.
  virtual std::optional<double> exact_inner() = 0;
  // Leaves the last sweep's factors and lambda in k.
  virtual void finish(spt_ktensor_s& k) = 0;
};

// A device failure inside a step (or while setting the device run up):
// the plugin's status and message. Derives from Error (SPT_ERR_DEVICE) so
// that it is reported even where nobody handles it on purpose.
class DeviceStepFailure : public Error {
 public:
  DeviceStepFailure(int status, std::string message) : Error(SPT_ERR_DEVICE, std::move(message)), status_(status) {}
  int status() const noexcept { return status_; }

 private:
  int status_;
};

// The device steps of a CP-ALS of x, when the context's effective backend
// is CUDA: the tensor (and, under format AUTO, the F-COO copies the GPU
// format model picks per mode; under FCOO one F-COO per mode) is on the
// device and a session holds the run's working set there. Returns nullptr
// when the CPU must run it: backend not CUDA, or AUTO with a format the GPU
// lacks (HiCOO runs the host loop with GPU MTTKRPs), an order outside the
// plugin's range, a device out-of-memory (even the factors and workspace
// do not fit beside the smallest chunks of the streamed path, which a
// tensor whose copy does not fit takes: device_streamed.hpp; see
// SPT_CUDA_MEMORY_LIMIT in cuda/plugin_common.cuh) or another device
// failure, each with a note in the context's log. With CUDA forced these throw instead:
// SPT_ERR_UNSUPPORTED (opts.format CSF, order), SPT_ERR_OUT_OF_MEMORY,
// SPT_ERR_DEVICE. opts must be normalised and validated. T is x's type.
template <typename T>
std::unique_ptr<CpAlsSteps<T>> make_device_cp_als_steps(const spt_context_s& ctx, const spt_coo_s& x,
                                                        const spt_cpd_options& opts);

// After a DeviceStepFailure of a device run: with CUDA forced, the error
// the whole run would have given (SPT_ERR_OUT_OF_MEMORY, _DEVICE,
// _UNSUPPORTED); under AUTO a note in the log (the caller runs the CPU
// loop from the start).
void cp_als_after_device_failure(const spt_context_s& ctx, const DeviceStepFailure& failure);

}  // namespace spt::dispatch
