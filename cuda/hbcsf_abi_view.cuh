// The kernels' host view (HostHbcsfView, mttkrp_hbcsf.cuh) of the plugin's
// B-CSF / HB-CSF struct (spt_plugin_hbcsf, plugin_abi.h). The dispatcher
// builds that struct from a core tensor (src/dispatch/plugin_hbcsf.hpp, the
// one place that does); the plugin's upload entry, and the GPU tests and
// benchmarks that launch the kernels directly, convert it here. Header-only;
// the pointers are borrowed.
#pragma once

#include "dispatch/plugin_abi.h"
#include "mttkrp_hbcsf.cuh"

namespace spt::cuda {

inline HostHbcsfView host_view_of(const spt_plugin_hbcsf& x) {
  HostHbcsfView v;
  v.order = x.order;
  v.value_size = x.dtype == SPT_PLUGIN_FLOAT32 ? 4 : 8;
  v.dims = x.dims;
  v.mode_order = x.mode_order;
  v.coo_nnz = x.coo_nnz;
  v.coo_ind = x.coo_ind;
  v.coo_val = x.coo_val;
  v.csl_slices = x.csl_slices;
  v.csl_nnz = x.csl_nnz;
  v.csl_slice_ind = x.csl_slice_ind;
  v.csl_slice_ptr = x.csl_slice_ptr;
  v.csl_ind = x.csl_ind;
  v.csl_val = x.csl_val;
  v.node_count = x.node_count;
  v.node_ind = x.node_ind;
  v.node_parent = x.node_parent;
  v.segments = x.segments;
  v.segment_ptr = x.segment_ptr;
  v.bcsf_nnz = x.bcsf_nnz;
  v.leaf_ind = x.leaf_ind;
  v.bcsf_val = x.bcsf_val;
  v.units = x.units;
  v.unit_row = x.unit_row;
  v.unit_segment_ptr = x.unit_segment_ptr;
  v.unit_split = x.unit_split;
  return v;
}

}  // namespace spt::cuda
