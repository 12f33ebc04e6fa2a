#include "dispatch/gpu_format.hpp"

#include "core/fcoo.hpp"

namespace spt::dispatch {

const char* gpu_mttkrp_format_name(GpuMttkrpFormat f) {
  switch (f) {
    case GpuMttkrpFormat::fcoo: return "F-COO";
    case GpuMttkrpFormat::hbcsf: return "HB-CSF";
    default: return "COO";
  }
}

GpuMttkrpFormat gpu_mttkrp_format(spt_nnz nnz, spt_nnz nonempty_slices, uint64_t row_bytes, uint32_t order) {
  if (nnz < kGpuFcooMinNnz || nonempty_slices == 0) return GpuMttkrpFormat::coo;
  const double mean = static_cast<double>(nnz) / static_cast<double>(nonempty_slices);
  const bool small_rows_large_tensor = row_bytes <= kGpuSmallRowBytes && nnz >= kGpuFcooLargeNnz;
  if (mean < kGpuFcooMinMeanSlice && !(small_rows_large_tensor && mean >= kGpuFcooLargeMinMeanSlice))
    return GpuMttkrpFormat::coo;
  const bool few_slices_deep_tree = order >= kGpuHbcsfMinOrder && row_bytes >= kGpuHbcsfMinRowBytes &&
                                    nonempty_slices <= kGpuHbcsfMaxSlices && nnz >= kGpuHbcsfMinNnz;
  return few_slices_deep_tree ? GpuMttkrpFormat::hbcsf : GpuMttkrpFormat::fcoo;
}

std::vector<GpuMttkrpChoice> gpu_mttkrp_choices(const spt_coo_s& x, const std::vector<spt_nnz>& nonempty_slices,
                                                uint64_t row_bytes, int multiprocessors) {
  std::vector<GpuMttkrpChoice> out(x.order());
  for (uint32_t m = 0; m < x.order(); ++m) {
    const spt_nnz slices = m < nonempty_slices.size() ? nonempty_slices[m] : 0;
    out[m].format = gpu_mttkrp_format(x.nnz, slices, row_bytes, x.order());
    out[m].fcoo_threadlen = fcoo::suggested_threadlen(x.nnz, row_bytes, multiprocessors, slices);
  }
  return out;
}

}  // namespace spt::dispatch
