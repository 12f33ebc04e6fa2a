// Kernels that have a device (CUDA plugin) implementation, as the
// dispatcher sees them. SPT_DISPATCH (dispatch.hpp) detects at compile time
// whether DeviceKernels has a member named like the kernel; if so and the
// context's effective backend is CUDA it calls it first.
//
// Each member returns true when the kernel ran on the device and false when
// the caller must run the CPU kernel instead: with backend AUTO a device
// out-of-memory (or any other device failure) falls back to the CPU with a
// note in the context's log. With backend CUDA forced, a failure throws
// spt::Error(SPT_ERR_DEVICE) with the plugin's message; nothing is ever
// silently skipped.
#pragma once

#include <functional>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/fcoo.hpp"
#include "core/hbcsf.hpp"
#include "core/hicoo.hpp"
#include "core/ktensor.hpp"
#include "core/matrix.hpp"

namespace spt::dispatch {

// End-of-sweep hook of a whole-decomposition device run: gets the sweep
// number (1-based), <X, M>, ||M||^2 and the sweep's seconds; returns true
// to run another sweep. May throw; the error reaches the caller.
using CpAlsSweepHook = std::function<bool(int iteration, double inner, double norm_model_squared, double seconds)>;

// The AUTO backend's size rule for a whole CP-ALS: true when the tensor is
// so small that the CPU's sweep (with `threads` threads) beats the GPU's
// fixed cost of about 0.3 ms per sweep (kernel launches and one host
// round trip per mode). Measured on the H100 machine (16 host cores; the
// GPU lost on nations, kinship, umls, aminoacids and coads at rank 16 and
// won everywhere else, benchmarks/results/gpu-h100-all-tensors-*):
// sum(dims) * R <= 2^14 (the dense per-mode work) and nnz * R <= 2^20 *
// threads (the MTTKRPs). A forced CUDA backend ignores it.
bool cp_als_prefers_cpu(const std::vector<spt_index>& dims, spt_nnz nnz, spt_index rank, int threads);

// For the duration of one CP-ALS call: when the context's backend is AUTO,
// resolves to CUDA, the format is AUTO or COO and cp_als_prefers_cpu says
// so, the context runs on the CPU (every kernel of the call; a note in the
// log), and gets its backend back afterwards. Otherwise it changes nothing.
class SmallCpAlsOnHost {
 public:
  SmallCpAlsOnHost(spt_context_s& ctx, const spt_coo_s& x, const spt_cpd_options& opts);
  ~SmallCpAlsOnHost();
  SmallCpAlsOnHost(const SmallCpAlsOnHost&) = delete;
  SmallCpAlsOnHost& operator=(const SmallCpAlsOnHost&) = delete;

 private:
  spt_context_s& ctx_;
  spt_backend saved_;
};

struct DeviceKernels {
  // Same contract as kernels::mttkrp (see kernels.hpp). The tensor's device
  // copy is made on first use and cached on x (see device_cache in coo.hpp);
  // factors and out are copied for each call.
  static bool mttkrp(const spt_context_s& ctx, const spt_coo_s& x, const ConstMatRef<float>* factors, uint32_t mode,
                     MatRef<float> out);
  static bool mttkrp(const spt_context_s& ctx, const spt_coo_s& x, const ConstMatRef<double>* factors, uint32_t mode,
                     MatRef<double> out);

  // Same contract as kernels::mttkrp_hicoo (see kernels.hpp), on the GPU
  // HiCOO kernel (cuda/mttkrp_hicoo.cu). The tensor's device copy is made on
  // first use and cached on x (spt_hicoo_s::device_cache); factors and out
  // are copied for each call. Orders above the plugin's limit (8) run on the
  // CPU (a verbose note); a device failure falls back to the CPU under AUTO
  // (a note in the log) and throws SPT_ERR_DEVICE under CUDA.
  static bool mttkrp_hicoo(const spt_context_s& ctx, const spt_hicoo_s& x, const ConstMatRef<float>* factors,
                           uint32_t mode, MatRef<float> out);
  static bool mttkrp_hicoo(const spt_context_s& ctx, const spt_hicoo_s& x, const ConstMatRef<double>* factors,
                           uint32_t mode, MatRef<double> out);

  // Same contract as kernels::mttkrp_hbcsf (see kernels.hpp: out =
  // the MTTKRP in h's root mode, overwritten), on the GPU B-CSF / HB-CSF
  // kernels (cuda/mttkrp_hbcsf.cu). The handle's device copy is made on
  // first use and cached on h (spt_hbcsf_s::device_cache); factors and out
  // are copied for each call. Orders above the plugin's limit (8) run on the
  // CPU (a verbose note); a device failure falls back to the CPU under AUTO
  // (a note in the log) and throws SPT_ERR_DEVICE under CUDA.
  static bool mttkrp_hbcsf(const spt_context_s& ctx, const spt_hbcsf_s& h, const ConstMatRef<float>* factors,
                           MatRef<float> out);
  static bool mttkrp_hbcsf(const spt_context_s& ctx, const spt_hbcsf_s& h, const ConstMatRef<double>* factors,
                           MatRef<double> out);

  // Same contracts as kernels::mttkrp_fcoo / ttmc_fcoo / ttm_fcoo, on the
  // GPU F-COO kernels (cuda/fcoo.cu). The tensor's device copy is made on
  // first use and cached on x; factors and out are copied per call. More
  // than 7 product modes (order 9+), or a TTMc output of 2^31 or more
  // columns, run on the CPU (a verbose note); device failures as above.
  static bool mttkrp_fcoo(const spt_context_s& ctx, const spt_fcoo_s& x, const ConstMatRef<float>* factors,
                          MatRef<float> out);
  static bool mttkrp_fcoo(const spt_context_s& ctx, const spt_fcoo_s& x, const ConstMatRef<double>* factors,
                          MatRef<double> out);
  static bool ttmc_fcoo(const spt_context_s& ctx, const spt_fcoo_s& x, const ConstMatRef<float>* factors,
                        MatRef<float> out);
  static bool ttmc_fcoo(const spt_context_s& ctx, const spt_fcoo_s& x, const ConstMatRef<double>* factors,
                        MatRef<double> out);
  static bool ttm_fcoo(const spt_context_s& ctx, const spt_fcoo_s& x, ConstMatRef<float> u, spt_scoo_s& out);
  static bool ttm_fcoo(const spt_context_s& ctx, const spt_fcoo_s& x, ConstMatRef<double> u, spt_scoo_s& out);

  // A whole CP-ALS of x on the device (plugin entry cp_als): factors,
  // Grams and workspace stay there for the whole decomposition; the host
  // sees scalars per mode and per sweep. When the context's effective
  // backend is CUDA it first calls `initialise` (which must fill k with the
  // initial factors: lambda and factors of x's dtype), runs the sweeps,
  // calling on_sweep after each, and leaves the last sweep's factors and
  // lambda in k (before arrange / sign fix); returns true. Returns false
  // when the caller must run the CPU loop: backend not CUDA, or AUTO with a
  // format the GPU lacks, an order outside the plugin's range, a device
  // out-of-memory (the working set - tensor copy, factors, workspace - does
  // not fit; see SPT_CUDA_MEMORY_LIMIT in cuda/plugin.cu) or another device
  // failure, each with a note in the context's log (k may then hold a
  // partial history: the caller re-initialises it). With CUDA forced these
  // throw instead: SPT_ERR_UNSUPPORTED (opts.format CSF/HiCOO, order),
  // SPT_ERR_OUT_OF_MEMORY, SPT_ERR_DEVICE. SPT_ERR_NUMERICAL (non-finite
  // values, as the CPU loop) and whatever on_sweep throws propagate in any
  // case. opts must be normalised and validated.
  static bool cp_als(const spt_context_s& ctx, const spt_coo_s& x, const spt_cpd_options& opts, spt_ktensor_s& k,
                     const std::function<void()>& initialise, const CpAlsSweepHook& on_sweep);

  // [hls-begin] HLS on the device (src/dispatch/device_hls.cpp)
  // [hls-end]

  // [ttm-begin] GPU SpTTM family (src/dispatch/device_ttm.cpp)
  // [ttm-end]

  // [tucker-begin] GPU Tucker-HOOI (src/dispatch/device_tucker.cpp)
  // [tucker-end]
};

}  // namespace spt::dispatch
