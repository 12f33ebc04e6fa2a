#include "dispatch/gpu_format.hpp"

#include <cstring>

#include "core/buffer.hpp"
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

std::vector<spt_nnz> nonempty_slices_per_mode(const spt_coo_s& x, int threads) {
  std::vector<spt_nnz> out(x.order(), 0);
  for (uint32_t m = 0; m < x.order(); ++m) {
    // One byte per index: a shared "seen" flag (relaxed atomic stores of the
    // same value, so threads may race on it).
    buffer<unsigned char> seen;
    resize_named(seen, x.dims[m], [&] {
      return cat("the non-empty slice flags of mode ", m, " (one byte per index, dims[", m, "] = ", x.dims[m], ")");
    });
    std::memset(seen.data(), 0, seen.size());
    const spt_index* ind = x.ind[m];
    const long long n = static_cast<long long>(x.nnz);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long long k = 0; k < n; ++k) __atomic_store_n(&seen[ind[k]], static_cast<unsigned char>(1), __ATOMIC_RELAXED);
    spt_nnz count = 0;
    for (spt_index i = 0; i < x.dims[m]; ++i) count += seen[i];
    out[m] = count;
  }
  return out;
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
