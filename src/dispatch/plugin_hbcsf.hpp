// The plugin's view (spt_plugin_hbcsf, plugin_abi.h) of a core B-CSF /
// HB-CSF tensor (spt_hbcsf_s): the one place that builds it. The dispatcher
// hands it to the plugin's hbcsf_upload; the GPU tests and benchmarks that
// call the CUDA kernels directly pass it to spt::cuda::host_view_of
// (cuda/mttkrp_hbcsf.cuh), so the CUDA code sees only the ABI struct.
#pragma once

#include <cstdint>
#include <vector>

#include "core/hbcsf.hpp"
#include "dispatch/plugin_abi.h"

namespace spt::dispatch {

// The view and the per-level pointer arrays it points into. The arrays of
// the tensor are borrowed: keep it alive and unchanged while the view is
// used. Moving the struct keeps the view valid (the vectors' buffers move).
struct PluginHbcsf {
  PluginHbcsf() = default;
  PluginHbcsf(const PluginHbcsf&) = delete;  // a copy would point into the original
  PluginHbcsf& operator=(const PluginHbcsf&) = delete;
  PluginHbcsf(PluginHbcsf&&) = default;
  std::vector<const uint32_t*> coo_ind, csl_ind, node_ind, node_ptr, node_parent;
  std::vector<uint64_t> node_count;
  spt_plugin_hbcsf view{};
};

PluginHbcsf plugin_view_of(const spt_hbcsf_s& h);

}  // namespace spt::dispatch
