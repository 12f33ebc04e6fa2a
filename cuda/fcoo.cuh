// GPU F-COO kernels (src/core/fcoo.hpp has the format): one-shot
// segmented products for MTTKRP, TTM ("Hadamard": every product mode's
// factor row at the same column) and TTMc ("Kronecker": the Kronecker
// product of the product modes' factor rows), float32 and float64, any
// number of product modes up to kFcooMaxProductModes.
//
// Device layout: one block holding the product-mode indices (mode-major,
// num_product_modes * nnz uint32), the bit flags, the start flags, the
// per-warp segment table, the segment rows (MTTKRP/TTMc) and the values at a
// 256-byte aligned offset.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace spt::cuda {

constexpr uint32_t kFcooMaxProductModes = 7;  // orders up to 8

struct DeviceFcooRef {
  uint64_t nnz = 0;
  uint64_t segments = 0;
  uint32_t threadlen = 8;         // 8, 16 or 32
  uint32_t num_product_modes = 0;
  const uint32_t* product_ind = nullptr;          // num_product_modes * nnz
  const uint32_t* bf = nullptr;                   // ceil(nnz / 32)
  const uint32_t* sf = nullptr;                   // ceil(partitions / 32)
  const uint32_t* group_first_segment = nullptr;  // ceil(partitions / 32)
  const uint32_t* segment_rows = nullptr;         // segments, or nullptr: row = segment (TTM)
  const void* values = nullptr;                   // nnz of T
};

// Host arrays to upload (F-COO as the core holds it).
struct HostFcooView {
  uint64_t nnz = 0;
  uint64_t segments = 0;
  uint32_t threadlen = 8;
  uint32_t num_product_modes = 0;
  const uint32_t* const* product_ind = nullptr;  // per product mode
  const uint32_t* bf = nullptr;
  const uint32_t* sf = nullptr;
  const uint32_t* group_first_segment = nullptr;
  const uint32_t* segment_rows = nullptr;  // may be nullptr
  const void* values = nullptr;
  size_t value_size = 4;
};

// Bytes of the device copy of `view`.
size_t fcoo_copy_bytes(const HostFcooView& view);

// Copy `view` into `block` (fcoo_copy_bytes big, device memory) and
// describe it in *out. Synchronous.
cudaError_t fcoo_upload(const HostFcooView& view, void* block, DeviceFcooRef* out);

// out (rows x width, row-major, ld = width, zeroed by the caller) += for
// each nonzero k with value v: v * prod_j factors[j](ind_j[k], c) for every
// column c, into row segment_rows[segment of k] (or the segment itself).
// factors[j] is dims x width, ld = width, device memory. Asynchronous.
template <typename T>
cudaError_t launch_fcoo_hadamard(const DeviceFcooRef& x, const T* const* factors, uint32_t width, T* out,
                                 int multiprocessors, cudaStream_t stream);

// Same with the Kronecker row: factors[j] has cols[j] columns (ld =
// cols[j]); column c of the output = sum_j digit_j * prod_{i<j} cols[i]
// (the first product mode fastest); width = prod cols (< 2^31).
template <typename T>
cudaError_t launch_fcoo_kronecker(const DeviceFcooRef& x, const T* const* factors, const uint32_t* cols,
                                  uint32_t width, T* out, int multiprocessors, cudaStream_t stream);

}  // namespace spt::cuda
