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

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/matrix.hpp"

namespace spt::dispatch {

struct DeviceKernels {
  // Same contract as kernels::mttkrp (see kernels.hpp). The tensor's device
  // copy is made on first use and cached on x (see device_cache in coo.hpp);
  // factors and out are copied for each call.
  static bool mttkrp(const spt_context_s& ctx, const spt_coo_s& x, const ConstMatRef<float>* factors, uint32_t mode,
                     MatRef<float> out);
  static bool mttkrp(const spt_context_s& ctx, const spt_coo_s& x, const ConstMatRef<double>* factors, uint32_t mode,
                     MatRef<double> out);
};

}  // namespace spt::dispatch
