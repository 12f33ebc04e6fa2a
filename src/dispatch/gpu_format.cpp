#include "dispatch/gpu_format.hpp"

#include <cstdlib>
#include <cstring>

#include "core/buffer.hpp"

namespace spt::dispatch {

const char* gpu_mttkrp_format_name(GpuMttkrpFormat f) { return f == GpuMttkrpFormat::fcoo ? "F-COO" : "COO"; }

GpuMttkrpFormat gpu_mttkrp_format(spt_nnz nnz, spt_nnz nonempty_slices, spt_index /*rank*/) {
  if (nnz < kGpuFcooMinNnz || nonempty_slices == 0) return GpuMttkrpFormat::coo;
  const double mean = static_cast<double>(nnz) / static_cast<double>(nonempty_slices);
  return mean >= kGpuFcooMinMeanSlice ? GpuMttkrpFormat::fcoo : GpuMttkrpFormat::coo;
}

std::vector<spt_nnz> nonempty_slices_per_mode(const spt_coo_s& x, int threads) {
  std::vector<spt_nnz> out(x.order(), 0);
  for (uint32_t m = 0; m < x.order(); ++m) {
    // One byte per index: a shared "seen" flag (relaxed atomic stores of the
    // same value, so threads may race on it).
    buffer<unsigned char> seen(x.dims[m]);
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

std::vector<GpuMttkrpFormat> gpu_mttkrp_formats(const spt_coo_s& x, spt_index rank, int threads) {
  const char* env = std::getenv("SPT_CUDA_MTTKRP_FORMAT");
  if (env && std::strcmp(env, "coo") == 0) return std::vector<GpuMttkrpFormat>(x.order(), GpuMttkrpFormat::coo);
  if (env && std::strcmp(env, "fcoo") == 0) return std::vector<GpuMttkrpFormat>(x.order(), GpuMttkrpFormat::fcoo);
  std::vector<GpuMttkrpFormat> out(x.order(), GpuMttkrpFormat::coo);
  if (x.nnz < kGpuFcooMinNnz) return out;
  const std::vector<spt_nnz> slices = nonempty_slices_per_mode(x, threads);
  for (uint32_t m = 0; m < x.order(); ++m) out[m] = gpu_mttkrp_format(x.nnz, slices[m], rank);
  return out;
}

}  // namespace spt::dispatch
