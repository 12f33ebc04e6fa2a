// CP-ALS on several GPUs of one host (docs/guide.md, "Several GPUs"). The
// rows of the largest mode are dealt to the devices in turn and each device
// takes the nonzeros in its rows (a host copy grouped by device), in the
// formats the single-GPU path picks for them (COO, and F-COO for the modes
// the GPU format model gives to F-COO), and a CP-ALS session of its own
// that owns a share of every mode's rows. Per mode every device computes
// the MTTKRP of its nonzeros, NCCL sums them into the owners' rows (but in
// the largest mode, whole on its device already), each device runs the rest
// of the mode's steps on its own rows (column norms and Grams summed over
// the devices), and the new factor's rows reach the other devices before
// their next MTTKRP (cuda/plugin_multi.cu). The CP-ALS loop is the one loop
// of src/algo/cp_als.cpp: these are another implementation of its steps.
#pragma once

#include <memory>
#include <vector>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "dispatch/cp_als_steps.hpp"
#include "dispatch/plugin_loader.hpp"

namespace spt::dispatch {

// The devices a multi-device run of ctx uses, lead first: the context's
// list (spt_context_set_devices), or every device the plugin reports when
// the list is empty (the default).
std::vector<int> context_devices(const spt_context_s& ctx, const CudaPlugin& cuda);

// The steps of a CP-ALS of x on the context's devices, or nullptr when one
// device runs it (the caller's single-GPU path): fewer than two devices,
// a format other than AUTO or COO, fewer nonzeros than devices, a default
// device list and fewer than kMultiDeviceMinNnzPerDevice nonzeros per
// device (the communicators' set-up would cost more than the split saves),
// NCCL missing, or a failure while setting the devices up; each but the
// first with a note in the context's log. The context's backend is CUDA
// and the plugin usable (the caller checked); opts normalised and
// validated. T is x's type.
template <typename T>
std::unique_ptr<CpAlsSteps<T>> make_multi_device_cp_als_steps(const spt_context_s& ctx, const spt_coo_s& x,
                                                              const spt_cpd_options& opts);

// Nonzeros per device below which the default device list (all of them)
// leaves a CP-ALS on one device.
constexpr spt_nnz kMultiDeviceMinNnzPerDevice = spt_nnz(1) << 20;

}  // namespace spt::dispatch
