// Device-copy structs of the plugin that more than one entry file reads
// (the opaque handles of src/dispatch/plugin_abi.h, defined here so that
// plugin.cu and plugin_tucker.cu see one definition).
#pragma once

#include <cstdint>
#include <vector>

#include "dispatch/plugin_abi.h"
#include "fcoo.cuh"

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
