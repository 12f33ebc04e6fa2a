// GPU COO MTTKRP kernels (float32/float64, any order >= 2), callable from
// the plugin (cuda/plugin.cu) and from the GPU benchmark, which links these
// directly to time the kernel alone.
//
// Layout on the device: the index arrays of all modes in one block, mode m
// at ind + m * nnz (uint32), the values beside them; factor matrices and the
// output are dense row-major with leading dimension = rank.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace spt::cuda {

// Orders above this run on the CPU (the kernel takes factor pointers by value).
constexpr uint32_t kMaxOrder = 32;

struct DeviceCooRef {
  uint32_t order = 0;
  uint64_t nnz = 0;
  const uint32_t* ind = nullptr;  // order * nnz, mode-major
  const void* values = nullptr;   // nnz of T
};

// out (dims[mode] x rank, device, row-major, ld = rank) += MTTKRP of x with
// factors[m] (device pointers, dims[m] x rank, ld = rank; factors[mode] is
// not read). The caller zeroes out first. Asynchronous on `stream`; returns
// the launch error, if any. `multiprocessors` sizes the grid.
template <typename T>
cudaError_t launch_mttkrp_coo(const DeviceCooRef& x, const T* const* factors, uint32_t mode, uint32_t rank, T* out,
                              int multiprocessors, cudaStream_t stream);

// *out += <x, [[lambda; factors]]> = sum_k x_k sum_r lambda_r prod_m
// factors[m](i_m(k), r), every product and sum in double (the exact pass of
// the float32 CP-ALS fit near 1). factors[m]: dims[m] x rank, row-major;
// *out is a device double the caller zeroes. Asynchronous on `stream`.
template <typename T>
cudaError_t launch_coo_inner_ktensor(const DeviceCooRef& x, const T* const* factors, const T* lambda, uint32_t rank,
                                     double* out, int multiprocessors, cudaStream_t stream);

// Bytes of a device copy of a COO tensor in the layout above (indices, then
// the values at a 256-byte aligned offset).
size_t coo_copy_bytes(uint32_t order, uint64_t nnz, size_t value_size);

// Byte offset of the values in such a copy.
size_t coo_values_offset(uint32_t order, uint64_t nnz);

// Write into `block` (coo_copy_bytes big, device memory) the nonzeros of x
// stably sorted by their index in `mode` (dim = dims[mode], bounds the
// radix-sort bits), and describe it in *out. With the nonzeros of an output
// row adjacent, the MTTKRP kernel's run accumulation turns one atomic per
// nonzero into one per row and warp. Temporaries (4 * nnz * 4 bytes plus the
// radix sort's) come from the stream's memory pool. nnz must be < 2^31.
cudaError_t sort_coo_by_mode(const DeviceCooRef& x, size_t value_size, uint32_t mode, uint32_t dim, void* block,
                             DeviceCooRef* out, cudaStream_t stream);

// Temporary bytes sort_coo_by_mode takes from the pool (an upper bound).
size_t sort_coo_temporary_bytes(uint64_t nnz);

}  // namespace spt::cuda
