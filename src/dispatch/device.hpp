// Kernels that have a device (CUDA plugin) implementation, as the
// dispatcher sees them: DeviceKernels declares, for float and double, every
// entry of the kernel lists (src/kernels/kernels.hpp) marked DEVICE, with
// the kernel's parameters after a leading context instead of an Exec; the
// dispatcher (dispatch.hpp) calls them for the same entries. The
// definitions live in src/dispatch/device*.cpp; an entry marked DEVICE
// without one fails to link.
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
#include "kernels/kernels.hpp"
#include "util/internal_api.hpp"

namespace spt::dispatch {

// The AUTO backend's size rule for a whole CP-ALS: true when the tensor is
// so small that the CPU's sweep (with `threads` threads) beats the GPU's
// fixed cost per sweep (kernel launches and one host round trip per
// mode), fitted to where the GPU lost (measurements:
// docs/design-measurements.md, "cp_als_prefers_cpu"):
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

// For the duration of one rank's part of a distributed run. Backend CUDA
// forced: when no device was chosen (spt_context_set_device or
// spt_context_set_devices leave ctx.devices non-empty), the context uses
// device `local_rank` mod the visible devices, so the ranks of one host
// spread over its GPUs one rank per GPU. Backend AUTO: the rank runs on the
// CPU (every kernel), since a rank's device kernels copy its factor rows on
// every call. The context gets its backend and device back afterwards.
// device() is the device the rank's kernels use (-1 on the host).
class SPT_INTERNAL_API DeviceOfRank {
 public:
  DeviceOfRank(spt_context_s& ctx, int local_rank);
  ~DeviceOfRank();
  DeviceOfRank(const DeviceOfRank&) = delete;
  DeviceOfRank& operator=(const DeviceOfRank&) = delete;
  int device() const { return device_; }

 private:
  spt_context_s& ctx_;
  spt_backend saved_backend_;
  int saved_device_;
  int device_ = -1;
};

// Whether a distributed run's local MTTKRPs on a block of format AUTO or
// COO run on the context's device: only with backend CUDA forced (the
// device COO MTTKRP, which may run a mode on an F-COO or HB-CSF copy of the
// block). HiCOO and F-COO blocks reach their device kernels through the
// dispatcher under CUDA; CSF runs on the CPU.
bool local_mttkrp_on_device(const spt_context_s& ctx, const spt_cpd_options& opts);

// What each device kernel adds to the contract of the kernels.hpp kernel of
// the same name. Device failures, unless said otherwise: a fall back to the
// CPU under AUTO (a note in the log), SPT_ERR_DEVICE under CUDA.
//
// mttkrp: the tensor's device copy is made on first use and cached on x
// (see device_cache in coo.hpp); factors and out are copied for each call.
// The GPU format model (gpu_format.hpp) may run a mode on an F-COO or
// HB-CSF copy made from x.
//
// mttkrp_hicoo: the GPU HiCOO kernel (cuda/mttkrp_hicoo.cu). The tensor's
// device copy is made on first use and cached on x
// (spt_hicoo_s::device_cache); factors and out are copied for each call.
// Orders above the plugin's limit (8) run on the CPU (a verbose note).
//
// mttkrp_hbcsf, mttkrp_hbcsf_mode: the GPU B-CSF / HB-CSF kernels
// (cuda/mttkrp_hbcsf.cu) on the one tree h: the root mode runs the format's
// kernels, any other mode the non-root kernels (atomic rows). The handle's
// device copy is made on first use and cached on h
// (spt_hbcsf_s::device_cache); factors and out are copied for each call.
// Orders above the plugin's limit (8) run on the CPU (a verbose note).
// mttkrp_hbcsf_mode throws SPT_ERR_INVALID_ARGUMENT for a mode out of range.
//
// mttkrp_fcoo, ttmc_fcoo, ttm_fcoo: the GPU F-COO kernels (cuda/fcoo.cu).
// The tensor's device copy is made on first use and cached on x; factors
// and out are copied per call. More than 7 product modes (order 9+), or a
// TTMc output of 2^31 or more columns, run on the CPU (a verbose note).
//
// mttkrp_hls, ttmc_hls (src/dispatch/device_hls.cpp): the GPU HLS kernels
// (cuda/hls.cu: dense tiles on tensor cores in h.precision, sparse
// nonzeros on CUDA cores). The handle's device copy is made on first use
// and cached on h (spt_hls_s::device_cache); factors and out are copied per
// call. A TTMc output of 2^31 or more columns runs on the CPU (a verbose
// note).
//
// ttm (src/dispatch/device_ttm.cpp): out is exactly the CPU kernel's
// semi-sparse result (same fibers in the same order, dims, dense mode,
// fiber_order; values equal up to rounding). The host finds the
// mode-`mode` fibers as the CPU kernel does (a sorted copy unless x is
// sorted with `mode` last) and the plugin computes the fibers on the GPU
// with one of the SpTTM kernels (cuda/ttm.cuh), the one the rule in
// cuda/ttm.cu picks (no setting overrides it). Operands are copied per call, nothing
// is cached. Under AUTO a problem below 2^16 multiply-adds (nnz * R) runs
// on the CPU (verbose note). Arguments the CPU kernel rejects are left to
// it (false).
//
// scoo_ttm (SsTTM; block layout in src/core/scoo.hpp): the host groups y's
// fibers as the CPU kernel does (no sort when y.fiber_order ends with
// `mode`), builds the same output shell, and the plugin computes every
// group's block on the GPU. Invalid arguments throw the CPU kernel's
// errors. Small problems (nfibers * block * R < 2^16) under AUTO and
// failures as for ttm.

// DeviceKernels' declaration of a list entry: DEVICE entries only.
#define SPT_DEVICE_KERNEL_DEVICE(ret, name, params) static bool name(const spt_context_s& ctx, SPT_EXPAND params);
#define SPT_DEVICE_KERNEL_HOST(ret, name, params)
#define SPT_DECLARE_DEVICE_KERNEL(where, ret, name, params) SPT_DEVICE_KERNEL_##where(ret, name, params)

struct DeviceKernels {
  SPT_TYPED_KERNELS(float, SPT_DECLARE_DEVICE_KERNEL)
  SPT_TYPED_KERNELS(double, SPT_DECLARE_DEVICE_KERNEL)

  // GPU Tucker-HOOI (src/dispatch/device_tucker.cpp; the device steps:
  // tucker_steps.hpp).
  // The AUTO backend's size rule for a whole Tucker-HOOI: true when a sweep
  // is so little work that the CPU (with `threads` threads) beats the GPU's
  // fixed cost per sweep (per mode a TTMc launch, a cuSOLVER eigensolver
  // call of about a millisecond even for tiny matrices, and one host round
  // trip). Work per sweep W = sum_n nnz * P_n (the one-shot TTMc) +
  // min(I_n, P_n)^2 max(I_n, P_n) (the Gram), P_n = prod_{m != n} R_m; the
  // CPU is preferred when W <= 2^23 * threads multiply-adds (about a
  // millisecond per mode on the host). An estimate, not yet fitted to
  // measurements (benchmarks/bench_gpu_tucker.cpp measures both sides). A
  // forced CUDA backend ignores it.
  static bool tucker_prefers_cpu(const std::vector<spt_index>& dims, spt_nnz nnz, const std::vector<spt_index>& ranks,
                                 int threads);
};

}  // namespace spt::dispatch
