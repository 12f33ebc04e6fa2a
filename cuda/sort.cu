// Device copies of a COO tensor sorted by one mode (CUB radix sort of the
// mode's indices carrying a permutation, then one gather of every array).
#include <algorithm>

#include <cub/device/device_radix_sort.cuh>

#include "mttkrp.cuh"

namespace spt::cuda {

namespace {

__global__ void iota_kernel(uint32_t* p, uint64_t n) {
  for (uint64_t k = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += uint64_t(gridDim.x) * blockDim.x)
    p[k] = uint32_t(k);
}

// out arrays[k] = in arrays[perm[k]] for every mode's indices and the values
// (value_words 32-bit words per value).
__global__ void gather_kernel(const uint32_t* __restrict__ ind, const uint32_t* __restrict__ values, uint32_t order,
                              uint64_t nnz, int value_words, const uint32_t* __restrict__ perm,
                              uint32_t* __restrict__ out_ind, uint32_t* __restrict__ out_values) {
  for (uint64_t k = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < nnz; k += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t from = perm[k];
    for (uint32_t m = 0; m < order; ++m) out_ind[m * nnz + k] = ind[m * nnz + from];
    for (int w = 0; w < value_words; ++w) out_values[k * value_words + w] = values[from * value_words + w];
  }
}

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

size_t coo_values_offset(uint32_t order, uint64_t nnz) { return align256(size_t(order) * nnz * sizeof(uint32_t)); }

size_t coo_copy_bytes(uint32_t order, uint64_t nnz, size_t value_size) {
  return coo_values_offset(order, nnz) + nnz * value_size;
}

size_t sort_coo_temporary_bytes(uint64_t nnz) {
  // keys out, permutation in/out, plus the radix sort's own (about its
  // double buffers; asked exactly at run time, bounded here for planning).
  return 3 * align256(nnz * sizeof(uint32_t)) + 2 * align256(nnz * sizeof(uint32_t)) + (64u << 20);
}

cudaError_t sort_coo_by_mode(const DeviceCooRef& x, size_t value_size, uint32_t mode, uint32_t dim, void* block,
                             DeviceCooRef* out, cudaStream_t stream) {
  if (x.nnz >= (1ull << 31) || mode >= x.order || (value_size != 4 && value_size != 8)) return cudaErrorInvalidValue;
  const int n = static_cast<int>(x.nnz);
  int end_bit = 1;
  while (end_bit < 32 && (uint64_t(1) << end_bit) < dim) ++end_bit;
  size_t cub_bytes = 0;
  cudaError_t err = cub::DeviceRadixSort::SortPairs(nullptr, cub_bytes, static_cast<const uint32_t*>(nullptr),
                                                    static_cast<uint32_t*>(nullptr), static_cast<const uint32_t*>(nullptr),
                                                    static_cast<uint32_t*>(nullptr), n, 0, end_bit, stream);
  if (err != cudaSuccess) return err;
  const size_t words = align256(x.nnz * sizeof(uint32_t));
  char* temp = nullptr;
  err = cudaMallocAsync(reinterpret_cast<void**>(&temp), 3 * words + cub_bytes, stream);
  if (err != cudaSuccess) return err;
  uint32_t* keys_out = reinterpret_cast<uint32_t*>(temp);
  uint32_t* perm_in = reinterpret_cast<uint32_t*>(temp + words);
  uint32_t* perm_out = reinterpret_cast<uint32_t*>(temp + 2 * words);
  void* cub_temp = temp + 3 * words;
  const int threads = 256;
  const unsigned blocks = static_cast<unsigned>(std::min<uint64_t>((x.nnz + threads - 1) / threads, 65535u * 16));
  iota_kernel<<<blocks, threads, 0, stream>>>(perm_in, x.nnz);
  err = cudaGetLastError();
  if (err == cudaSuccess)
    err = cub::DeviceRadixSort::SortPairs(cub_temp, cub_bytes, x.ind + uint64_t(mode) * x.nnz, keys_out, perm_in,
                                          perm_out, n, 0, end_bit, stream);
  char* base = static_cast<char*>(block);
  if (err == cudaSuccess) {
    gather_kernel<<<blocks, threads, 0, stream>>>(
        x.ind, static_cast<const uint32_t*>(x.values), x.order, x.nnz, static_cast<int>(value_size / 4), perm_out,
        reinterpret_cast<uint32_t*>(base), reinterpret_cast<uint32_t*>(base + coo_values_offset(x.order, x.nnz)));
    err = cudaGetLastError();
  }
  const cudaError_t freed = cudaFreeAsync(temp, stream);
  if (err == cudaSuccess) err = freed;
  if (err != cudaSuccess) return err;
  out->order = x.order;
  out->nnz = x.nnz;
  out->ind = reinterpret_cast<const uint32_t*>(base);
  out->values = base + coo_values_offset(x.order, x.nnz);
  return cudaSuccess;
}

}  // namespace spt::cuda
