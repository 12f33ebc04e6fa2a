// GPU HLS kernels (src/core/hls.hpp and docs/formats/hls.md have the format):
// the slice-wise matrix form of SpMTTKRP and SpTTMc in the root mode, orders
// 3 and 4, float32 and float64 tensors.
//
//   TTMc   Y(i,:,:) = B^T (X(i,:,:) C)        (order 3; order 4 adds the
//   MTTKRP out(i,:) = diag of the same          level-3 factor row per sub-tile)
//
// Dense tiles (HLS-D) run on tensor cores: each 16 x 16 slice X(i,:,:) of a
// tile is a matrix fragment built from the tile's bitmap and values; sparse
// nonzeros (HLS-S) run on CUDA cores. One grid takes both ("fused load
// scheme", paper §VI-C): block b < dense tasks takes a segment of 16
// consecutive dense sub-tiles (and a 16-column output chunk), the other
// blocks a batch of 256 sparse nonzeros (their rows from s_row / s_row_ptr).
// A segment can share its root tile (16 output rows) with the next one, and
// a row can have dense and sparse work, so every output add is atomic (once
// per element per root tile of a dense task, once per element per row
// segment of a sparse warp). Details: the top of hls.cu.
//
// Device layout: one allocation, every array at a 256-byte aligned offset
// (hls_copy_bytes / hls_upload).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace spt::cuda {

constexpr uint32_t kHlsMaxOrder = 4;

// The arithmetic of the dense tiles. The sparse part always runs in the
// tensor's own type on CUDA cores.
enum class HlsPrecision : int {
  fp16 = 1,   // tile values and factor rows rounded to half, fp32 accumulation (mma m16n16k16)
  bf16 = 2,   // rounded to bfloat16, fp32 accumulation (mma m16n16k16)
  tf32 = 3,   // rounded to tf32 (10-bit mantissa), fp32 accumulation (mma m16n16k8)
  exact = 4,  // no tensor cores: the tensor's type (float32 or float64) on CUDA cores
};

struct DeviceHlsRef {
  uint32_t order = 3;              // 3 or 4
  uint32_t slab_depth = 1;         // D (1 for order 3)
  uint32_t dims[kHlsMaxOrder] = {};       // by level (dims of modes[l])
  uint32_t bits[kHlsMaxOrder] = {};       // per level
  uint32_t shift[kHlsMaxOrder] = {};      // per level: 4, or log2 D for level 3
  uint32_t tile_bits[kHlsMaxOrder] = {};  // per level
  uint64_t dense_tiles = 0;
  const uint64_t* d_tile = nullptr;       // dense_tiles
  const uint64_t* d_bitmap = nullptr;     // dense_tiles * 64 * D words
  const uint64_t* d_val_ptr = nullptr;    // dense_tiles + 1
  const void* d_val = nullptr;            // d_val_ptr[dense_tiles] values of T
  uint64_t root_groups = 0;
  const uint32_t* d_root_tile = nullptr;  // root_groups
  const uint64_t* d_root_ptr = nullptr;   // root_groups + 1
  uint64_t sparse_nnz = 0;
  const uint64_t* s_ind = nullptr;        // sparse_nnz packed coordinates
  const void* s_val = nullptr;            // sparse_nnz values of T
  uint64_t sparse_rows = 0;
  const uint32_t* s_row = nullptr;        // sparse_rows output rows
  const uint64_t* s_row_ptr = nullptr;    // sparse_rows + 1
};

// Host arrays to upload (the handle's arrays, src/core/hls.hpp).
struct HostHlsView {
  uint32_t order = 3;
  uint32_t slab_depth = 1;
  uint32_t dims[kHlsMaxOrder] = {};  // by level
  uint32_t bits[kHlsMaxOrder] = {};
  uint32_t shift[kHlsMaxOrder] = {};
  uint32_t tile_bits[kHlsMaxOrder] = {};
  uint64_t dense_tiles = 0;
  const uint64_t* d_tile = nullptr;
  const uint64_t* d_bitmap = nullptr;
  const uint64_t* d_val_ptr = nullptr;
  const void* d_val = nullptr;
  uint64_t root_groups = 0;
  const uint32_t* d_root_tile = nullptr;
  const uint64_t* d_root_ptr = nullptr;
  uint64_t sparse_nnz = 0;
  const uint64_t* s_ind = nullptr;
  const void* s_val = nullptr;
  uint64_t sparse_rows = 0;
  const uint32_t* s_row = nullptr;
  const uint64_t* s_row_ptr = nullptr;
  size_t value_size = 4;  // 4 (float32) or 8 (float64)
};

// Bytes of the device copy of `view`.
size_t hls_copy_bytes(const HostHlsView& view);

// Copy `view` into `block` (hls_copy_bytes big, device memory) and describe
// it in *out. Synchronous.
cudaError_t hls_upload(const HostHlsView& view, void* block, DeviceHlsRef* out);

// Bytes of scratch device memory a product needs (factor copies rounded to
// the precision's type, per-task staging); 0 allowed. `cols` = the factor
// widths by level (levels 1..order-1 used; MTTKRP: all equal to the rank).
size_t hls_workspace_bytes(const DeviceHlsRef& x, const uint32_t* cols, HlsPrecision precision, size_t value_size);

// MTTKRP in the root mode: out (dims[0] x rank, row-major, ld = rank, zeroed
// by the caller) += the MTTKRP of x with factors[l] (device, dims[l] x rank,
// ld = rank; by LEVEL, factors[0] not read). `workspace` holds
// hls_workspace_bytes. Asynchronous on `stream`.
template <typename T>
cudaError_t launch_hls_mttkrp(const DeviceHlsRef& x, const T* const* factors, uint32_t rank, HlsPrecision precision,
                              void* workspace, T* out, int multiprocessors, cudaStream_t stream);

// TTMc in the root mode: out (dims[0] x prod_{l>=1} cols[l], row-major, ld =
// that product, zeroed by the caller) += X_(root) times the Kronecker
// product of factors[l] (device, dims[l] x cols[l], ld = cols[l]; by LEVEL,
// factors[0] not read); column = sum_l a_l * prod_{1<=m<l} cols[m] (level 1
// fastest: levels 1.. are the other modes by increasing mode number, so this
// is the core library's column order). Asynchronous on `stream`.
template <typename T>
cudaError_t launch_hls_ttmc(const DeviceHlsRef& x, const T* const* factors, const uint32_t* cols,
                            HlsPrecision precision, void* workspace, T* out, int multiprocessors, cudaStream_t stream);

// Calibration (issue: derive the dense threshold on the device): time the
// fused MTTKRP (float32, `rank`, `precision`) on synthetic tensors of `order`
// that are all dense tiles and all sparse nonzeros, and report the seconds
// per dense (sub-)tile and per sparse nonzero. A tile with n occupied cells
// is worth storing dense when n * sparse > dense; the caller takes
// threshold = ceil(dense / sparse) clamped to [1, 4096 * D]. Synchronous;
// allocates and frees its own device memory (a few MB).
cudaError_t hls_calibrate(uint32_t order, uint32_t slab_depth, uint32_t rank, HlsPrecision precision,
                          int multiprocessors, cudaStream_t stream, double* seconds_per_dense_tile,
                          double* seconds_per_sparse_nnz);

}  // namespace spt::cuda
