// Device-copy structs of the plugin that more than one entry file reads
// (the opaque handles of src/dispatch/plugin_abi.h, defined here so that
// plugin.cu, plugin_hls.cu, plugin_multi.cu, plugin_stream.cu and
// plugin_tucker.cu see one definition).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dispatch/plugin_abi.h"
#include "plugin_common.cuh"
#include "cp_als.cuh"
#include "fcoo.cuh"
#include "mttkrp_streamed.cuh"
#include "hls.cuh"
#include "mttkrp_hbcsf.cuh"

// An F-COO tensor on the device: one allocation (layout in fcoo.cu).
struct spt_plugin_device_fcoo {
  int device = 0;
  int dtype = SPT_PLUGIN_FLOAT64;
  uint64_t output_rows = 0;
  int32_t mttkrp_mode = -1;            // op MTTKRP: its mode; -1 for TTM
  std::vector<uint32_t> dims;          // every mode
  std::vector<uint32_t> product_dims;  // dims of the product modes, in order
  void* block = nullptr;
  spt::cuda::DeviceFcooRef ref;
};

// A B-CSF / HB-CSF tensor on the device: one allocation (layout in
// mttkrp_hbcsf.cu).
struct spt_plugin_device_hbcsf {
  int device = 0;
  int dtype = SPT_PLUGIN_FLOAT64;
  std::vector<uint32_t> dims;  // by mode
  void* block = nullptr;
  spt::cuda::DeviceHbcsfRef ref;
};

// An HLS tensor on the device: one allocation (layout in hls.cu).
struct spt_plugin_device_hls {
  int device = 0;
  int dtype = SPT_PLUGIN_FLOAT64;
  std::vector<uint32_t> modes;        // level -> mode
  std::vector<uint32_t> dims_by_mode; // every mode
  void* block = nullptr;
  spt::cuda::DeviceHlsRef ref;
};

// A CP-ALS session (table family CP_STEPS): the device run and the format
// each mode's MTTKRP reads, chosen once when it is made: the mode's F-COO
// copy when given, else the COO copy (sorted by the mode when a sorted copy
// fits), or, for a streamed session (plugin_stream.cu), the host tensor's
// chunks through `streamed` (declared before `run`, which reads it: freed
// after it).
struct spt_plugin_cp_session {
  static constexpr const char* kRun = "CP-ALS";  // in session_step's messages
  int device = 0;
  uint32_t order = 0;
  std::vector<spt::cuda::DeviceCooRef> coo_views;  // per mode, for COO modes
  std::unique_ptr<spt::cuda::StreamedCoo> streamed;
  std::unique_ptr<spt::cuda::CpAlsSession> run;
};

// Checks a host COO view (the in-memory upload and the streamed entries):
// kUnsupported for an order outside the COO kernels' range,
// kInvalidArgument for NULL arrays or an unknown dtype.
inline int check_host_coo(const spt_plugin_coo* x, char* message, size_t message_len) {
  using namespace spt_plugin;
  if (!x || !x->dims || !x->ind || (x->nnz > 0 && !x->values)) return kInvalidArgument;
  if (int status = check_order(x->order, 2, spt::cuda::kMaxOrder, "kernels'", message, message_len); status != kOk)
    return status;
  if (x->dtype != SPT_PLUGIN_FLOAT32 && x->dtype != SPT_PLUGIN_FLOAT64) return kInvalidArgument;
  for (uint32_t m = 0; m < x->order; ++m)
    if (x->nnz > 0 && !x->ind[m]) return kInvalidArgument;
  return kOk;
}

// Checks that per_mode[m] (m < order) is the op-MTTKRP F-COO of mode m of
// one tensor, all on one device in one dtype (the per-mode F-COO runs:
// cp_session_create, tucker_session_fcoo; `entry` names the caller in messages).
// kUnsupported for an order beyond the F-COO kernels, kInvalidArgument
// otherwise; the message says which.
inline int check_fcoo_per_mode(const spt_plugin_device_fcoo* const* per_mode, uint32_t order, const char* entry,
                               char* message, size_t message_len) {
  using namespace spt_plugin;
  if (!per_mode || !per_mode[0] || order < 2) return kInvalidArgument;
  if (int status =
          check_order(order, 2, spt::cuda::kFcooMaxProductModes + 1, "F-COO kernels'", message, message_len);
      status != kOk)
    return status;
  const spt_plugin_device_fcoo& first = *per_mode[0];
  for (uint32_t m = 0; m < order; ++m) {
    const spt_plugin_device_fcoo* f = per_mode[m];
    if (!f || f->mttkrp_mode != int32_t(m) || f->dims != first.dims || f->dims.size() != order ||
        f->device != first.device || f->dtype != first.dtype || f->ref.num_product_modes != order - 1) {
      write_message(message, message_len,
                    std::string(entry) + ": tensor " + std::to_string(m) + " is not the MTTKRP F-COO of mode " +
                        std::to_string(m) + " of the same tensor on the same device");
      return kInvalidArgument;
    }
  }
  return kOk;
}
