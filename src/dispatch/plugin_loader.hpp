// Finding and loading the CUDA plugin (libsptensor_cuda.so.1) with dlopen.
//
// The plugin is loaded at most once per process, on first need (the first
// kernel call or backend query of a context whose backend is AUTO or CUDA),
// under std::call_once, and never unloaded (device copies cached on tensor
// handles call back into it until they are freed).
//
// Without the NVIDIA driver (no /dev/nvidiactl) the search is skipped and
// the plugin is not loaded, so a machine without a GPU does not map the CUDA
// libraries; a plugin named by SPT_PLUGIN_PATH is loaded regardless.
//
// Search order: env SPT_PLUGIN_PATH (a directory holding
// libsptensor_cuda.so.1, or the file itself), then the directory that holds
// libsptensor.so (found with dladdr), then the default loader path
// (dlopen("libsptensor_cuda.so.1"): LD_LIBRARY_PATH, RUNPATH, ld.so.cache).
#pragma once

#include <string>
#include <vector>

#include "core/context.hpp"
#include "dispatch/plugin_abi.h"

namespace spt::dispatch {

struct CudaPlugin {
  // The loaded table, or nullptr when no usable plugin was found.
  const spt_plugin_table* table = nullptr;
  // File the table came from ("" when none was loaded).
  std::string path;
  // Devices the plugin reported (empty without a plugin, driver or device).
  std::vector<spt_plugin_device_info> devices;
  // Why CUDA cannot be used ("" when a plugin and at least one device exist):
  // every place searched and what went wrong there.
  std::string reason;

  bool usable() const { return table != nullptr && !devices.empty(); }
};

// The process-wide plugin state; the first call searches and loads (thread
// safe), later calls return the cached result.
const CudaPlugin& cuda_plugin();

// Backend that kernels run on: CPU, CUDA or REFERENCE. AUTO resolves to CUDA
// when the CUDA plugin is loaded and the context's device exists, else to
// the CPU (the first call loads the plugin). Here, not in core, because it
// reads the plugin state.
spt_backend effective_backend(const spt_context_s& ctx);

}  // namespace spt::dispatch
