// The kernels' host view (HostHbcsfView, mttkrp_hbcsf.cuh) of a core
// B-CSF / HB-CSF tensor (spt_hbcsf_s, src/core/hbcsf.hpp), for in-process
// callers that link the core and the kernel library directly: the GPU
// benchmarks and tests. (The plugin gets the same arrays through the C
// struct spt_plugin_hbcsf instead.) Header-only.
#pragma once

#include <cstdint>
#include <vector>

#include "core/hbcsf.hpp"
#include "mttkrp_hbcsf.cuh"

namespace spt::cuda {

// The view and the per-level pointer arrays it points into. The arrays of
// the tensor are borrowed: keep it alive and unchanged while the view is
// used. Moving the struct keeps the view valid (the vectors' buffers move).
struct CoreHbcsfView {
  CoreHbcsfView() = default;
  CoreHbcsfView(const CoreHbcsfView&) = delete;  // a copy would point into the original
  CoreHbcsfView& operator=(const CoreHbcsfView&) = delete;
  CoreHbcsfView(CoreHbcsfView&&) = default;
  std::vector<const uint32_t*> coo_ind, csl_ind, node_ind, node_parent;
  std::vector<uint64_t> node_count;
  HostHbcsfView view;
};

inline CoreHbcsfView host_view_of(const spt_hbcsf_s& h) {
  CoreHbcsfView c;
  auto pointers = [](const std::vector<buffer<uint32_t>>& arrays, std::vector<const uint32_t*>& p) {
    for (const auto& a : arrays) p.push_back(a.data());
  };
  pointers(h.coo_ind, c.coo_ind);
  pointers(h.csl_ind, c.csl_ind);
  pointers(h.node_ind, c.node_ind);
  pointers(h.node_parent, c.node_parent);
  for (const auto& a : h.node_ind) c.node_count.push_back(a.size());
  HostHbcsfView& v = c.view;
  v.order = h.order();
  v.value_size = h.dtype() == SPT_FLOAT32 ? 4 : 8;
  v.dims = h.dims.data();
  v.mode_order = h.mode_order.data();
  v.coo_nnz = h.coo_nnz();
  v.coo_ind = c.coo_ind.data();
  v.coo_val = h.coo_val.data();
  v.csl_slices = h.csl_slices();
  v.csl_nnz = h.csl_nnz();
  v.csl_slice_ind = h.csl_slice_ind.data();
  v.csl_slice_ptr = h.csl_slice_ptr.data();
  v.csl_ind = c.csl_ind.data();
  v.csl_val = h.csl_val.data();
  v.node_count = c.node_count.data();
  v.node_ind = c.node_ind.data();
  v.node_parent = c.node_parent.data();
  v.segments = h.segments();
  v.segment_ptr = h.segment_ptr.data();
  v.bcsf_nnz = h.bcsf_nnz();
  v.leaf_ind = h.leaf_ind.data();
  v.bcsf_val = h.bcsf_val.data();
  v.units = h.units();
  v.unit_row = h.unit_row.data();
  v.unit_segment_ptr = h.unit_segment_ptr.data();
  v.unit_split = h.unit_split.data();
  return c;
}

}  // namespace spt::cuda
