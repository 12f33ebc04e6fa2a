// The steps of one CP-APR run (multiplicative updates), as the one CP-APR
// loop (src/algo/cp_apr.cpp) drives them, wherever the run's data lives:
// the host implementation (src/algo/cp_apr.cpp) works on the ktensor in
// host memory with the dispatcher's Phi kernels; the device one
// (make_device_cp_apr_steps, src/dispatch/device_cp_apr.cpp) keeps the
// factors, lambda, every mode's Phi and the grouped nonzeros on the device
// for the whole run and brings back only the scalars the steps return. The
// loop owns the outer and inner iterations, the convergence tests, the
// callbacks, the final ordering of the components and every error message;
// a step only computes.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/ktensor.hpp"
#include "core/mode_groups.hpp"
#include "dispatch/cp_als_steps.hpp"
#include "sptensor/cp_apr.h"

namespace spt::dispatch {

// The steps, for T = float or double. Not thread safe: one run, one thread.
// Steps throw spt::Error; the device implementation throws
// DeviceStepFailure (cp_als_steps.hpp) for a device failure.
template <typename T>
class CpAprSteps {
 public:
  virtual ~CpAprSteps() = default;
  // The storage, for the log (e.g. "COO groups", "COO groups, cuda").
  virtual const char* name() const = 0;
  // k holds the initial factors (dims[m] x rank, T, nonnegative): take
  // them; lambda = 1 and every Phi = 0. The host steps work in k itself
  // until finish.
  virtual void start(spt_ktensor_s& k) = 0;
  // lambda_r *= ||A_mode(:, r)||_1 (summed in double), the column divided
  // by it (a zero column stays zero; pyttb ktensor.normalize(normtype=1)).
  virtual void normalise(uint32_t mode) = 0;
  // Complementary slackness: A_mode(i, r) += kappa where Phi_mode(i, r) > 0
  // and A_mode(i, r) < kappatol (Phi of the last phi() of this mode).
  virtual void scooch(uint32_t mode, double kappa, double kappatol) = 0;
  // A_mode(:, r) *= lambda_r, then lambda = 1 (the weights shift into mode).
  virtual void redistribute(uint32_t mode) = 0;
  // Phi_mode from the current factors (kernels.hpp, cp_apr_phi).
  virtual void phi(uint32_t mode, double eps) = 0;
  // max |min(A_mode, 1 - Phi_mode)| over the entries.
  virtual double kkt_violation(uint32_t mode) = 0;
  // A_mode .*= Phi_mode.
  virtual void multiply(uint32_t mode) = 0;
  // The Poisson log-likelihood of [[lambda; A]] for the tensor.
  virtual double loglikelihood() = 0;
  // Leaves the factors in k and lambda (rank values, double) in *lambda.
  virtual void finish(spt_ktensor_s& k, std::vector<double>* lambda) = 0;
};

// The AUTO backend's size rule for a whole CP-APR: true when the tensor is
// so small that the CPU's iterations beat the GPU's fixed cost per step
// (kernel launches, one host round trip per inner iteration). For now the
// CP-ALS rule (cp_als_prefers_cpu, device.hpp), whose per-mode work is
// alike (a sparse pass over the nonzeros at rank R, dense work on the
// factors); bench_cp_apr --backend cuda measures both sides. A forced
// CUDA backend ignores it.
bool cp_apr_prefers_cpu(const std::vector<spt_index>& dims, spt_nnz nnz, spt_index rank, int threads);

// The device steps of a CP-APR of x, when the context's effective backend
// is CUDA: every mode's nonzeros grouped by that mode's index (the CPU's
// COO groups, uploaded once) and the run's working set are on the device.
// Phi runs on the COO groups whatever the format AUTO would pick on the
// CPU. Returns nullptr when the CPU must run it: backend not CUDA, AUTO and
// a small problem (cp_apr_prefers_cpu), format HiCOO requested, an order or
// rank outside the plugin's range, a device out-of-memory (the groups,
// factors, Phi and workspace do not fit; see SPT_CUDA_MEMORY_LIMIT in
// cuda/plugin_common.cuh) or another device failure, each with a note in
// the context's log. With CUDA forced these throw instead:
// SPT_ERR_UNSUPPORTED, SPT_ERR_OUT_OF_MEMORY, SPT_ERR_DEVICE. opts must be
// normalised and validated. T is x's type.
template <typename T>
std::unique_ptr<CpAprSteps<T>> make_device_cp_apr_steps(const spt_context_s& ctx, const spt_coo_s& x,
                                                        const spt_cp_apr_options& opts);

// After a DeviceStepFailure of a device run: with CUDA forced, the error
// the whole run would have given (SPT_ERR_OUT_OF_MEMORY, _DEVICE,
// _UNSUPPORTED); under AUTO a note in the log (the caller runs the CPU
// loop from the start).
void cp_apr_after_device_failure(const spt_context_s& ctx, const DeviceStepFailure& failure);

}  // namespace spt::dispatch
