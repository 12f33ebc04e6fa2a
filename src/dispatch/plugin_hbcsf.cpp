#include "dispatch/plugin_hbcsf.hpp"

namespace spt::dispatch {

PluginHbcsf plugin_view_of(const spt_hbcsf_s& h) {
  PluginHbcsf p;
  auto pointers = [](const std::vector<buffer<uint32_t>>& arrays, std::vector<const uint32_t*>& out) {
    for (const auto& a : arrays) out.push_back(a.data());
  };
  pointers(h.coo_ind, p.coo_ind);
  pointers(h.csl_ind, p.csl_ind);
  pointers(h.node_ind, p.node_ind);
  pointers(h.node_ptr, p.node_ptr);
  pointers(h.node_parent, p.node_parent);
  for (const auto& a : h.node_ind) p.node_count.push_back(a.size());
  spt_plugin_hbcsf& v = p.view;
  v.order = h.order();
  v.dtype = h.dtype() == SPT_FLOAT32 ? SPT_PLUGIN_FLOAT32 : SPT_PLUGIN_FLOAT64;
  v.nnz = h.nnz;
  v.dims = h.dims.data();
  v.mode_order = h.mode_order.data();
  v.coo_nnz = h.coo_nnz();
  v.coo_ind = p.coo_ind.data();
  v.coo_val = h.coo_val.data();
  v.csl_slices = h.csl_slices();
  v.csl_nnz = h.csl_nnz();
  v.csl_slice_ind = h.csl_slice_ind.data();
  v.csl_slice_ptr = h.csl_slice_ptr.data();
  v.csl_ind = p.csl_ind.data();
  v.csl_val = h.csl_val.data();
  v.bcsf_slices = h.bcsf_slices();
  v.bcsf_slice_ind = h.bcsf_slice_ind.data();
  v.bcsf_slice_ptr = h.bcsf_slice_ptr.data();
  v.node_count = p.node_count.data();
  v.node_ind = p.node_ind.data();
  v.node_ptr = p.node_ptr.data();
  v.node_parent = p.node_parent.data();
  v.segments = h.segments();
  v.segment_ptr = h.segment_ptr.data();
  v.bcsf_nnz = h.bcsf_nnz();
  v.leaf_ind = h.leaf_ind.data();
  v.bcsf_val = h.bcsf_val.data();
  v.units = h.units();
  v.unit_row = h.unit_row.data();
  v.unit_segment_ptr = h.unit_segment_ptr.data();
  v.unit_split = h.unit_split.data();
  return p;
}

}  // namespace spt::dispatch
