// The CUDA plugin's HLS entries (family HLS of the entry lists in
// src/dispatch/plugin_abi.h, with their contracts): upload / release of an HLS device copy, the
// MTTKRP and TTMc on it (cuda/hls.cuh: dense tiles on tensor cores in the
// chosen precision, sparse nonzeros on CUDA cores), and the dense-threshold
// calibration.
//
// Factors cross the table BY MODE (as every other entry) and reach the
// kernels BY LEVEL (level l = mode modes[l]: the root, then the other modes
// by increasing mode number); the mapping happens here, once per call.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "dispatch/plugin_abi.h"
#include "hls.cuh"
#include "plugin_common.cuh"
#include "plugin_copies.cuh"
#include "plugin_entries.cuh"

namespace spt_plugin {

namespace {

bool power_of_two_depth(uint32_t d) { return d == 1 || d == 2 || d == 4 || d == 8 || d == 16; }

// What is wrong with a host view (empty = nothing): NULL arrays where
// counts say there is data, levels that are not a permutation of the modes.
std::string hls_view_problem(const spt_plugin_hls& x) {
  if (!x.dims || !x.modes || !x.bits || !x.shift || !x.tile_bits) return "NULL dims, modes, bits, shift or tile_bits";
  if (!power_of_two_depth(x.slab_depth) || (x.order == 3 && x.slab_depth != 1))
    return "slab_depth " + std::to_string(x.slab_depth) + " (1, 2, 4, 8 or 16; 1 for order 3)";
  std::vector<char> seen(x.order, 0);
  uint32_t total_bits = 0;
  for (uint32_t l = 0; l < x.order; ++l) {
    if (x.modes[l] >= x.order || seen[x.modes[l]]) return "modes is not a permutation of 0..order-1";
    seen[x.modes[l]] = 1;
    if (l >= 2 && x.modes[l] < x.modes[l - 1]) return "levels 1.. must be in increasing mode order";
    if (x.bits[l] > 32) return "more than 32 bits in one level";
    total_bits += x.bits[l];
  }
  if (total_bits > 64) return "the packed index has more than 64 bits";
  if (x.dense_tiles > 0 && (!x.d_tile || !x.d_bitmap || !x.d_val_ptr || !x.d_val || !x.d_root_tile || !x.d_root_ptr))
    return "NULL dense-part arrays";
  if (x.dense_tiles > 0 && x.root_groups == 0) return "dense tiles without root groups";
  if (x.sparse_nnz > 0 && (!x.s_ind || !x.s_val || !x.s_row || !x.s_row_ptr || x.sparse_rows == 0))
    return "NULL sparse-part arrays";
  return {};
}

spt::cuda::HostHlsView host_view(const spt_plugin_hls& x) {
  spt::cuda::HostHlsView v;
  v.order = x.order;
  v.slab_depth = x.slab_depth;
  for (uint32_t l = 0; l < x.order; ++l) {
    v.dims[l] = x.dims[l];
    v.bits[l] = x.bits[l];
    v.shift[l] = x.shift[l];
    v.tile_bits[l] = x.tile_bits[l];
  }
  v.dense_tiles = x.dense_tiles;
  v.d_tile = x.d_tile;
  v.d_bitmap = x.d_bitmap;
  v.d_val_ptr = x.d_val_ptr;
  v.d_val = x.d_val;
  v.root_groups = x.root_groups;
  v.d_root_tile = x.d_root_tile;
  v.d_root_ptr = x.d_root_ptr;
  v.sparse_nnz = x.sparse_nnz;
  v.s_ind = x.s_ind;
  v.s_val = x.s_val;
  v.sparse_rows = x.sparse_rows;
  v.s_row = x.s_row;
  v.s_row_ptr = x.s_row_ptr;
  v.value_size = dtype_bytes(x.dtype);
  return v;
}

bool valid_precision(int precision) {
  return precision == SPT_PLUGIN_HLS_FP16 || precision == SPT_PLUGIN_HLS_BF16 || precision == SPT_PLUGIN_HLS_TF32 ||
         precision == SPT_PLUGIN_HLS_EXACT;
}

// Checks the output and the factors (by mode) for `kind` and fills `cols`
// with the factor widths by level (level 0 unused); a status with the
// message written on a bad shape.
int check_hls_shapes(const spt_plugin_device_hls& x, int kind, const spt_plugin_matrix* factors,
                     const spt_plugin_matrix& out, std::vector<uint32_t>& cols, char* message, size_t message_len) {
  const uint32_t order = x.ref.order;
  const uint32_t root = x.modes[0];
  const uint64_t width = out.cols;
  if (out.rows != x.dims_by_mode[root] || width == 0 || out.ld < width || (!out.data && out.rows > 0)) {
    write_message(message, message_len, "the output has the wrong shape");
    return kInvalidArgument;
  }
  cols.assign(spt::cuda::kHlsMaxOrder, 0);
  uint64_t product = 1;
  for (uint32_t l = 1; l < order; ++l) {
    const uint32_t m = x.modes[l];
    const spt_plugin_matrix& f = factors[m];
    const bool ok = f.data && f.rows == x.dims_by_mode[m] && f.cols >= 1 && f.ld >= f.cols &&
                    f.cols <= 0xffffffffull && (kind == SPT_PLUGIN_HLS_TTMC || f.cols == width);
    if (!ok) {
      write_message(message, message_len, "factor " + std::to_string(m) + " has the wrong shape");
      return kInvalidArgument;
    }
    cols[l] = static_cast<uint32_t>(f.cols);
    product = std::min<uint64_t>(product * f.cols, uint64_t(1) << 40);
  }
  if (kind == SPT_PLUGIN_HLS_TTMC && product != width) {
    write_message(message, message_len, "the TTMc output must have prod_{m != root} R_m columns");
    return kInvalidArgument;
  }
  if (width >= (uint64_t(1) << 31)) {
    write_message(message, message_len,
                  "the output has " + std::to_string(width) + " columns; the GPU HLS kernels take fewer than 2^31");
    return kUnsupported;
  }
  return kOk;
}

template <typename T>
int hls_multiply_typed(const spt_plugin_device_hls& x, int kind, spt::cuda::HlsPrecision precision,
                       const spt_plugin_matrix* factors, spt_plugin_matrix& out, char* message, size_t message_len) {
  std::vector<uint32_t> cols;
  if (int status = check_hls_shapes(x, kind, factors, out, cols, message, message_len); status != kOk) return status;
  const uint32_t order = x.ref.order;
  const uint64_t width = out.cols;
  SPT_CUDA_TRY(cudaSetDevice(x.device), "cudaSetDevice");
  DeviceSetup setup;
  if (int status = device_setup(x.device, setup, message, message_len); status != kOk) return status;
  cudaStream_t stream = cudaStreamPerThread;

  // One temporary block from the pool: the factors by level, the output,
  // then the kernels' workspace.
  std::vector<size_t> offset(order, 0);
  size_t bytes = 0;
  for (uint32_t l = 1; l < order; ++l) {
    offset[l] = bytes;
    bytes += align_up(size_t(factors[x.modes[l]].rows) * cols[l] * sizeof(T), 256);
  }
  const size_t out_offset = bytes;
  const size_t out_bytes = size_t(out.rows) * width * sizeof(T);
  bytes += align_up(std::max<size_t>(out_bytes, 1), 256);
  const size_t workspace_offset = bytes;
  const size_t workspace_bytes = spt::cuda::hls_workspace_bytes(x.ref, cols.data(), precision, sizeof(T));
  bytes += std::max<size_t>(workspace_bytes, 1);
  void* block = nullptr;
  if (cudaError_t err = cudaMallocAsync(&block, bytes, stream); err != cudaSuccess) {
    cudaGetLastError();
    write_message(message, message_len,
                  "the factor matrices, output and workspace need " + megabytes(bytes) + " on CUDA device " +
                      std::to_string(x.device) + " (" + describe(err) + ")");
    return err == cudaErrorMemoryAllocation ? kOutOfMemory : kDevice;
  }
  char* base = static_cast<char*>(block);
  const T* device_factors[spt::cuda::kHlsMaxOrder] = {};
  T* device_out = reinterpret_cast<T*>(base + out_offset);
  void* workspace = workspace_bytes ? base + workspace_offset : nullptr;
  cudaError_t err = cudaSuccess;
  const char* step = "copying a factor matrix to the device";
  for (uint32_t l = 1; l < order && err == cudaSuccess; ++l) {
    const spt_plugin_matrix& f = factors[x.modes[l]];
    T* dst = reinterpret_cast<T*>(base + offset[l]);
    device_factors[l] = dst;
    err = cudaMemcpy2DAsync(dst, cols[l] * sizeof(T), f.data, f.ld * sizeof(T), cols[l] * sizeof(T), f.rows,
                            cudaMemcpyHostToDevice, stream);
  }
  if (err == cudaSuccess && out_bytes) {
    step = "zeroing the output";
    err = cudaMemsetAsync(device_out, 0, out_bytes, stream);
  }
  if (err == cudaSuccess && out_bytes) {
    step = "launching the HLS kernel";
    err = kind == SPT_PLUGIN_HLS_TTMC
              ? spt::cuda::launch_hls_ttmc<T>(x.ref, device_factors, cols.data(), precision, workspace, device_out,
                                              setup.multiprocessors, stream)
              : spt::cuda::launch_hls_mttkrp<T>(x.ref, device_factors, static_cast<uint32_t>(width), precision,
                                                workspace, device_out, setup.multiprocessors, stream);
  }
  return finish_product<T>(err, step, out_bytes != 0, out, device_out, width, block, stream, "running the HLS kernel", message,
                           message_len);
}

}  // namespace

int plugin_hls_upload(int device, const spt_plugin_hls* x, spt_plugin_device_hls** out, char* message,
                      size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!x || !out) return kInvalidArgument;
    *out = nullptr;
    if (int status = check_order(x->order, 3, 4, "HLS kernels'", message, message_len); status != kOk) return status;
    if (x->dtype != SPT_PLUGIN_FLOAT32 && x->dtype != SPT_PLUGIN_FLOAT64) return kInvalidArgument;
    if (const std::string problem = hls_view_problem(*x); !problem.empty()) {
      write_message(message, message_len, "hls_upload: " + problem);
      return kInvalidArgument;
    }
    const spt::cuda::HostHlsView view = host_view(*x);
    SPT_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
    const size_t bytes = spt::cuda::hls_copy_bytes(view);
    if (int status = check_free_memory(device, bytes, "the HLS tensor", "needs", "", message, message_len);
        status != kOk)
      return status;
    auto copy = std::make_unique<spt_plugin_device_hls>();
    copy->device = device;
    copy->dtype = x->dtype;
    copy->modes.assign(x->modes, x->modes + x->order);
    copy->dims_by_mode.assign(x->order, 0);
    for (uint32_t l = 0; l < x->order; ++l) copy->dims_by_mode[x->modes[l]] = x->dims[l];
    SPT_CUDA_TRY(cudaMalloc(&copy->block, std::max<size_t>(bytes, 1)), "cudaMalloc of the HLS tensor");
    const BlockGuard<spt_plugin_device_hls> guard{copy};
    SPT_CUDA_TRY(spt::cuda::hls_upload(view, copy->block, &copy->ref), "copying the HLS tensor to the device");
    *out = copy.release();
    return kOk;
  });
}

void plugin_hls_release(spt_plugin_device_hls* x) { release_device_copy(x); }

int plugin_hls_multiply(const spt_plugin_device_hls* x, int kind, int precision, const spt_plugin_matrix* factors,
                        spt_plugin_matrix* out, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!x || !factors || !out) return kInvalidArgument;
    if (kind != SPT_PLUGIN_HLS_MTTKRP && kind != SPT_PLUGIN_HLS_TTMC) {
      write_message(message, message_len, "hls_multiply: kind " + std::to_string(kind) + " is not MTTKRP or TTMC");
      return kInvalidArgument;
    }
    if (!valid_precision(precision)) {
      write_message(message, message_len, "hls_multiply: precision " + std::to_string(precision) + " is not 1..4");
      return kInvalidArgument;
    }
    const auto p = static_cast<spt::cuda::HlsPrecision>(precision);
    if (x->dtype == SPT_PLUGIN_FLOAT32)
      return hls_multiply_typed<float>(*x, kind, p, factors, *out, message, message_len);
    return hls_multiply_typed<double>(*x, kind, p, factors, *out, message, message_len);
  });
}

int plugin_hls_calibrate(int device, uint32_t order, uint32_t slab_depth, uint32_t rank, int precision,
                         double* seconds_per_dense_tile, double* seconds_per_sparse_nnz, char* message,
                         size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!seconds_per_dense_tile || !seconds_per_sparse_nnz || rank == 0 || !valid_precision(precision) ||
        (order != 3 && order != 4) || !power_of_two_depth(slab_depth) || (order == 3 && slab_depth != 1)) {
      write_message(message, message_len,
                    "hls_calibrate: order 3 or 4, slab depth 1..16 (1 for order 3), rank >= 1, precision 1..4 and "
                    "two outputs are required");
      return kInvalidArgument;
    }
    SPT_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
    DeviceSetup setup;
    if (int status = device_setup(device, setup, message, message_len); status != kOk) return status;
    double dense = 0, sparse = 0;
    SPT_CUDA_TRY(spt::cuda::hls_calibrate(order, slab_depth, rank, static_cast<spt::cuda::HlsPrecision>(precision),
                                          setup.multiprocessors, cudaStreamPerThread, &dense, &sparse),
                 "the HLS threshold calibration");
    if (!(dense > 0) || !(sparse > 0)) {
      write_message(message, message_len, "hls_calibrate measured no time (dense " + std::to_string(dense) +
                                              " s per tile, sparse " + std::to_string(sparse) + " s per nonzero)");
      return kDevice;
    }
    *seconds_per_dense_tile = dense;
    *seconds_per_sparse_nnz = sparse;
    return kOk;
  });
}

}  // namespace spt_plugin
