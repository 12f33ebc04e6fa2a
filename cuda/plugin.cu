// libsptensor_cuda.so: the CUDA plugin behind the function table of
// src/dispatch/plugin_abi.h. Exports one symbol, spt_cuda_plugin_entry.
//
// Every table function catches everything (nothing crosses the C table),
// selects its device with cudaSetDevice (the current device is per host
// thread) and works on the calling thread's default stream
// (cudaStreamPerThread), so calls from different threads do not serialise
// on the legacy stream. Temporaries (factor copies, the output) come from
// the device's stream-ordered memory pool, kept cached between calls.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "cp_als.cuh"
#include "dispatch/plugin_abi.h"
#include "plugin_common.cuh"
#include "plugin_copies.cuh"
#include "plugin_entries.cuh"
#include "mttkrp.cuh"
#include "fcoo.cuh"
#include "hbcsf_abi_view.cuh"
#include "mttkrp_hbcsf.cuh"
#include "mttkrp_hicoo.cuh"

// Status values of sptensor.h (the plugin does not include the public header
// to stay independent of it; the numbers are part of the stable ABI).

struct spt_plugin_device_coo {
  int device = 0;
  uint32_t order = 0;
  int dtype = SPT_PLUGIN_FLOAT64;
  uint64_t nnz = 0;
  std::vector<uint32_t> dims;
  void* block = nullptr;  // indices (order * nnz uint32) then values
  const uint32_t* ind = nullptr;
  const void* values = nullptr;
  // Per mode, a copy sorted by that mode (made on the first MTTKRP in the
  // mode when it fits the free memory with room to spare; nullptr = use the
  // unsorted copy). Logically const: a cache, guarded by sorted_mutex.
  mutable std::mutex sorted_mutex;
  mutable std::vector<void*> sorted;
  mutable std::vector<char> sorted_tried;
};

// A HiCOO tensor on the device: one allocation (layout in mttkrp_hicoo.cuh).
struct spt_plugin_device_hicoo {
  int device = 0;
  int dtype = SPT_PLUGIN_FLOAT64;
  std::vector<uint32_t> dims;
  void* block = nullptr;
  spt::cuda::DeviceHicooRef ref;
};

// A B-CSF / HB-CSF tensor on the device: struct spt_plugin_device_hbcsf,
// in plugin_copies.cuh (plugin_tucker.cu reads it too).

// An F-COO tensor on the device: struct spt_plugin_device_fcoo, in
// plugin_copies.cuh (plugin_tucker.cu reads it too).

namespace spt_plugin {


int plugin_device_count(int* count, char* message, size_t message_len) {
  return guarded(message, message_len, [&] {
    if (!count) return kInvalidArgument;
    *count = 0;
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      cudaGetLastError();
      std::string hint;
      if (err == cudaErrorInsufficientDriver) hint = " (no NVIDIA driver is installed, or it is older than this CUDA runtime)";
      if (err == cudaErrorNoDevice) hint = " (no NVIDIA GPU is visible; check CUDA_VISIBLE_DEVICES)";
      write_message(message, message_len, "cudaGetDeviceCount reports " + describe(err) + hint);
      return kOk;
    }
    if (n == 0) write_message(message, message_len, "the CUDA driver reports no device");
    *count = n;
    return kOk;
  });
}

int plugin_device_info(int device, spt_plugin_device_info* info, char* message, size_t message_len) {
  return guarded(message, message_len, [&] {
    if (!info) return kInvalidArgument;
    cudaDeviceProp prop{};
    SPT_CUDA_TRY(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    *info = spt_plugin_device_info{};
    std::snprintf(info->name, sizeof info->name, "%s", prop.name);
    info->total_memory = prop.totalGlobalMem;
    info->compute_capability_major = prop.major;
    info->compute_capability_minor = prop.minor;
    info->multiprocessors = prop.multiProcessorCount;
    // Free memory needs a context on the device; leave it 0 here so a
    // query does not create one on every device.
    return kOk;
  });
}

int plugin_coo_upload(int device, const spt_plugin_coo* x, spt_plugin_device_coo** out, char* message,
                      size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!out) return kInvalidArgument;
    *out = nullptr;
    if (int status = check_host_coo(x, message, message_len); status != kOk) return status;
    SPT_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
    const size_t index_bytes = spt::cuda::coo_values_offset(x->order, x->nnz);
    const size_t bytes = spt::cuda::coo_copy_bytes(x->order, x->nnz, dtype_bytes(x->dtype));
    if (int status = check_free_memory(device, bytes, "the tensor", "needs", "", message, message_len);
        status != kOk)
      return status;
    auto copy = std::make_unique<spt_plugin_device_coo>();
    copy->device = device;
    copy->order = x->order;
    copy->dtype = x->dtype;
    copy->nnz = x->nnz;
    copy->dims.assign(x->dims, x->dims + x->order);
    copy->sorted.assign(x->order, nullptr);
    copy->sorted_tried.assign(x->order, 0);
    SPT_CUDA_TRY(cudaMalloc(&copy->block, std::max<size_t>(bytes, 1)), "cudaMalloc of the tensor");
    char* base = static_cast<char*>(copy->block);
    copy->ind = reinterpret_cast<const uint32_t*>(base);
    copy->values = base + index_bytes;
    // Release the block if a copy fails.
    struct Guard {
      std::unique_ptr<spt_plugin_device_coo>& c;
      ~Guard() {
        if (c && c->block) cudaFree(c->block);
      }
    } guard{copy};
    for (uint32_t m = 0; m < x->order; ++m)
      SPT_CUDA_TRY(cudaMemcpy(base + size_t(m) * x->nnz * sizeof(uint32_t), x->ind[m], x->nnz * sizeof(uint32_t),
                              cudaMemcpyHostToDevice),
                   "copying tensor indices to the device");
    SPT_CUDA_TRY(cudaMemcpy(base + index_bytes, x->values, x->nnz * dtype_bytes(x->dtype), cudaMemcpyHostToDevice),
                 "copying tensor values to the device");
    *out = copy.release();
    return kOk;
  });
}

void plugin_coo_release(spt_plugin_device_coo* x) {
  if (!x) return;
  // At process exit the runtime may be gone already; ignore errors.
  if (cudaSetDevice(x->device) == cudaSuccess) {
    if (x->block) cudaFree(x->block);
    for (void* p : x->sorted)
      if (p) cudaFree(p);
  }
  cudaGetLastError();
  delete x;
}

// Point `ref` at x's copy sorted by `mode`, making it on first use when it
// fits the free memory with room to spare (max(256 MB, 5% of the device))
// for the factors, the output and other work; otherwise leave `ref` on the
// unsorted copy. Only a failed CUDA call is an error.
int sorted_copy(const spt_plugin_device_coo& x, uint32_t mode, cudaStream_t stream, spt::cuda::DeviceCooRef& ref,
                char* message, size_t message_len) {
  std::lock_guard<std::mutex> lock(x.sorted_mutex);
  if (!x.sorted_tried[mode] && x.nnz < (1ull << 31)) {
    x.sorted_tried[mode] = 1;
    const size_t value_size = dtype_bytes(x.dtype);
    const size_t bytes = spt::cuda::coo_copy_bytes(x.order, x.nnz, value_size);
    const size_t available = free_memory(x.device);
    size_t free_now = 0, total = 0;
    SPT_CUDA_TRY(cudaMemGetInfo(&free_now, &total), "cudaMemGetInfo");
    const size_t reserve = std::max<size_t>(size_t(256) << 20, total / 20);
    if (bytes + spt::cuda::sort_coo_temporary_bytes(x.nnz) + reserve <= available) {
      void* block = nullptr;
      if (cudaMalloc(&block, bytes) != cudaSuccess) {
        cudaGetLastError();  // lost a race for the memory: stay unsorted
      } else {
        spt::cuda::DeviceCooRef sorted{};
        cudaError_t err = spt::cuda::sort_coo_by_mode({x.order, x.nnz, x.ind, x.values}, value_size, mode,
                                                      x.dims[mode], block, &sorted, stream);
        if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
        if (err != cudaSuccess) {
          cudaFree(block);
          return cuda_failure(err, "sorting the tensor by the output mode", message, message_len);
        }
        x.sorted[mode] = block;
      }
    }
  }
  if (x.sorted[mode]) {
    char* base = static_cast<char*>(x.sorted[mode]);
    ref.ind = reinterpret_cast<const uint32_t*>(base);
    ref.values = base + spt::cuda::coo_values_offset(x.order, x.nnz);
  }
  return kOk;
}


template <typename T>
int mttkrp_typed(const spt_plugin_device_coo& x, const spt_plugin_matrix* factors, uint32_t mode,
                 spt_plugin_matrix& out, char* message, size_t message_len) {
  if (int status = check_mttkrp_shapes(x.order, x.dims.data(), factors, mode, out, message, message_len);
      status != kOk)
    return status;
  SPT_CUDA_TRY(cudaSetDevice(x.device), "cudaSetDevice");
  DeviceSetup setup;
  if (int status = device_setup(x.device, setup, message, message_len); status != kOk) return status;
  cudaStream_t stream = cudaStreamPerThread;

  spt::cuda::DeviceCooRef ref{x.order, x.nnz, x.ind, x.values};
  if (int status = sorted_copy(x, mode, stream, ref, message, message_len); status != kOk) return status;
  const uint32_t rank = static_cast<uint32_t>(out.cols);
  return mttkrp_with_device_operands<T>(
      x.device, x.order, x.dims.data(), factors, mode, out, stream,
      [&](const T* const* device_factors, T* device_out) {
        return spt::cuda::launch_mttkrp_coo<T>(ref, device_factors, mode, rank, device_out, setup.multiprocessors,
                                               stream);
      },
      message, message_len);
}

int plugin_mttkrp(const spt_plugin_device_coo* x, const spt_plugin_matrix* factors, uint32_t mode,
                  spt_plugin_matrix* out, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!x || !factors || !out || !out->data || mode >= x->order) return kInvalidArgument;
    if (x->dtype == SPT_PLUGIN_FLOAT32) return mttkrp_typed<float>(*x, factors, mode, *out, message, message_len);
    return mttkrp_typed<double>(*x, factors, mode, *out, message, message_len);
  });
}

int plugin_hicoo_upload(int device, const spt_plugin_hicoo* x, spt_plugin_device_hicoo** out, char* message,
                        size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!x || !out) return kInvalidArgument;
    *out = nullptr;
    if (int status = check_order(x->order, 2, spt::cuda::kHicooMaxOrder, "HiCOO kernel's", message, message_len);
        status != kOk)
      return status;
    if (x->num_blocks >= (uint64_t(1) << 32)) {
      write_message(message, message_len,
                    "the HiCOO tensor has " + std::to_string(x->num_blocks) +
                        " blocks; the GPU kernel indexes blocks with 32 bits");
      return kUnsupported;
    }
    if (x->dtype != SPT_PLUGIN_FLOAT32 && x->dtype != SPT_PLUGIN_FLOAT64) return kInvalidArgument;
    if (x->block_bits < 1 || x->block_bits > 8 || !x->dims || !x->bptr || !x->binds || !x->einds ||
        (x->nnz > 0 && !x->values))
      return kInvalidArgument;
    SPT_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
    const size_t value_size = dtype_bytes(x->dtype);
    const size_t bytes = spt::cuda::hicoo_copy_bytes(x->order, x->nnz, x->num_blocks, value_size);
    if (int status = check_free_memory(device, bytes, "the HiCOO tensor", "needs", "", message, message_len);
        status != kOk)
      return status;
    auto copy = std::make_unique<spt_plugin_device_hicoo>();
    copy->device = device;
    copy->dtype = x->dtype;
    copy->dims.assign(x->dims, x->dims + x->order);
    SPT_CUDA_TRY(cudaMalloc(&copy->block, std::max<size_t>(bytes, 1)), "cudaMalloc of the HiCOO tensor");
    const BlockGuard<spt_plugin_device_hicoo> guard{copy};
    spt::cuda::HostHicooView view;
    view.order = x->order;
    view.block_bits = x->block_bits;
    view.nnz = x->nnz;
    view.num_blocks = x->num_blocks;
    view.dims = x->dims;
    view.bptr = x->bptr;
    view.binds = x->binds;
    view.einds = x->einds;
    view.values = x->values;
    view.value_size = value_size;
    const uint64_t window_reuse = x->window_reuse ? x->window_reuse : spt::cuda::kHicooWindowReuse;
    SPT_CUDA_TRY(spt::cuda::hicoo_upload(view, copy->block, &copy->ref, window_reuse),
                 "copying the HiCOO tensor to the device");
    *out = copy.release();
    return kOk;
  });
}

void plugin_hicoo_release(spt_plugin_device_hicoo* x) { release_device_copy(x); }


template <typename T>
int mttkrp_hicoo_typed(const spt_plugin_device_hicoo& x, const spt_plugin_matrix* factors, uint32_t mode,
                       spt_plugin_matrix& out, char* message, size_t message_len) {
  return mttkrp_on_device_copy<T>(
      x, factors, mode, out, message, message_len,
      [&](const T* const* device_factors, T* device_out, uint32_t rank, int multiprocessors, cudaStream_t stream) {
        return spt::cuda::launch_mttkrp_hicoo<T>(x.ref, device_factors, mode, rank, device_out, multiprocessors,
                                                 stream);
      });
}

int plugin_mttkrp_hicoo(const spt_plugin_device_hicoo* x, const spt_plugin_matrix* factors, uint32_t mode,
                        spt_plugin_matrix* out, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!x || !factors || !out || !out->data || mode >= x->ref.order) return kInvalidArgument;
    if (x->dtype == SPT_PLUGIN_FLOAT32) return mttkrp_hicoo_typed<float>(*x, factors, mode, *out, message, message_len);
    return mttkrp_hicoo_typed<double>(*x, factors, mode, *out, message, message_len);
  });
}

// Whether the host view's counts agree with each other and every array
// a nonzero count needs is there (the core built and validated the handle;
// this guards the table against a caller that did not). Empty string = OK.
std::string hbcsf_view_problem(const spt_plugin_hbcsf& x) {
  const uint32_t n = x.order;
  if (!x.dims || !x.mode_order || !x.coo_ind || !x.csl_ind || !x.node_count || !x.node_ind ||
      (n > 3 && !x.node_parent))
    return "NULL array table";
  if (x.coo_nnz + x.csl_nnz + x.bcsf_nnz != x.nnz || x.nnz >= (uint64_t(1) << 32))
    return "group nonzero counts do not add up to nnz (< 2^32)";
  for (uint32_t l = 0; l < n; ++l)
    if (x.mode_order[l] >= n) return "mode_order out of range";
  if (x.coo_nnz > 0) {
    if (!x.coo_val) return "NULL COO values";
    for (uint32_t l = 0; l < n; ++l)
      if (!x.coo_ind[l]) return "NULL COO indices";
  }
  if (!x.csl_slice_ptr || x.csl_slice_ptr[x.csl_slices] != x.csl_nnz) return "csl_slice_ptr does not end at csl_nnz";
  if (x.csl_slices > 0 && !x.csl_slice_ind) return "NULL csl_slice_ind";
  if (x.csl_nnz > 0) {
    if (!x.csl_val) return "NULL CSL values";
    for (uint32_t l = 1; l < n; ++l)
      if (!x.csl_ind[l - 1]) return "NULL CSL indices";
  }
  if (x.segments != x.node_count[n - 3]) return "segments differs from the fiber level's node count";
  for (uint32_t l = 1; l + 1 < n; ++l)
    if (x.node_count[l - 1] > 0 && (!x.node_ind[l - 1] || (l >= 2 && !x.node_parent[l - 2])))
      return "NULL B-CSF node arrays";
  if (!x.segment_ptr || x.segment_ptr[x.segments] != x.bcsf_nnz) return "segment_ptr does not end at bcsf_nnz";
  if (x.bcsf_nnz > 0 && (!x.leaf_ind || !x.bcsf_val)) return "NULL B-CSF leaves";
  if (!x.unit_segment_ptr || x.unit_segment_ptr[x.units] != x.segments) return "unit_segment_ptr does not end at segments";
  if (x.units > 0 && (!x.unit_row || !x.unit_split)) return "NULL unit arrays";
  return {};
}

int plugin_hbcsf_upload(int device, const spt_plugin_hbcsf* x, spt_plugin_device_hbcsf** out, char* message,
                        size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!x || !out) return kInvalidArgument;
    *out = nullptr;
    if (int status =
            check_order(x->order, 3, spt::cuda::kHbcsfMaxOrder, "B-CSF / HB-CSF kernels'", message, message_len);
        status != kOk)
      return status;
    if (x->dtype != SPT_PLUGIN_FLOAT32 && x->dtype != SPT_PLUGIN_FLOAT64) return kInvalidArgument;
    if (const std::string problem = hbcsf_view_problem(*x); !problem.empty()) {
      write_message(message, message_len, "hbcsf_upload: " + problem);
      return kInvalidArgument;
    }
    const spt::cuda::HostHbcsfView view = spt::cuda::host_view_of(*x);
    SPT_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
    const size_t bytes = spt::cuda::hbcsf_copy_bytes(view);
    if (int status = check_free_memory(device, bytes, "the HB-CSF tensor", "needs", "", message, message_len);
        status != kOk)
      return status;
    auto copy = std::make_unique<spt_plugin_device_hbcsf>();
    copy->device = device;
    copy->dtype = x->dtype;
    copy->dims.assign(x->dims, x->dims + x->order);
    SPT_CUDA_TRY(cudaMalloc(&copy->block, bytes), "cudaMalloc of the HB-CSF tensor");
    const BlockGuard<spt_plugin_device_hbcsf> guard{copy};
    SPT_CUDA_TRY(spt::cuda::hbcsf_upload(view, copy->block, &copy->ref), "copying the HB-CSF tensor to the device");
    *out = copy.release();
    return kOk;
  });
}

void plugin_hbcsf_release(spt_plugin_device_hbcsf* x) { release_device_copy(x); }

template <typename T>
int mttkrp_hbcsf_typed(const spt_plugin_device_hbcsf& x, const spt_plugin_matrix* factors, uint32_t mode,
                       spt_plugin_matrix& out, char* message, size_t message_len) {
  return mttkrp_on_device_copy<T>(
      x, factors, mode, out, message, message_len,
      [&](const T* const* device_factors, T* device_out, uint32_t rank, int multiprocessors, cudaStream_t stream) {
        // The root: the format's own kernels (B-CSF by leaf chunks); any
        // other mode: the non-root kernels (atomic rows) on the same tree.
        if (mode == x.ref.mode_order[0])
          return spt::cuda::launch_mttkrp_hbcsf<T>(x.ref, device_factors, rank, device_out, multiprocessors, stream);
        return spt::cuda::launch_mttkrp_hbcsf_nonroot<T>(x.ref, device_factors, mode, rank, device_out,
                                                         multiprocessors, stream);
      });
}

int plugin_mttkrp_hbcsf(const spt_plugin_device_hbcsf* x, const spt_plugin_matrix* factors, uint32_t mode,
                        spt_plugin_matrix* out, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!x || !factors || !out || !out->data) return kInvalidArgument;
    if (mode >= x->ref.order) {
      write_message(message, message_len,
                    "mttkrp_hbcsf: mode " + std::to_string(mode) + " is out of range for an order-" +
                        std::to_string(x->ref.order) + " tensor");
      return kInvalidArgument;
    }
    if (x->dtype == SPT_PLUGIN_FLOAT32) return mttkrp_hbcsf_typed<float>(*x, factors, mode, *out, message, message_len);
    return mttkrp_hbcsf_typed<double>(*x, factors, mode, *out, message, message_len);
  });
}

int plugin_fcoo_upload(int device, const spt_plugin_fcoo* x, spt_plugin_device_fcoo** out, char* message,
                       size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!x || !out) return kInvalidArgument;
    *out = nullptr;
    if (x->num_product_modes < 1 || x->num_product_modes > spt::cuda::kFcooMaxProductModes ||
        x->num_product_modes >= x->order) {
      write_message(message, message_len,
                    std::to_string(x->num_product_modes) + " product modes are outside the GPU F-COO kernels' range 1.." +
                        std::to_string(spt::cuda::kFcooMaxProductModes));
      return kUnsupported;
    }
    if (x->dtype != SPT_PLUGIN_FLOAT32 && x->dtype != SPT_PLUGIN_FLOAT64) return kInvalidArgument;
    if ((x->threadlen != 8 && x->threadlen != 16 && x->threadlen != 32) || x->nnz >= (uint64_t(1) << 32) ||
        !x->dims || !x->product_modes || !x->product_ind || (x->nnz > 0 && (!x->values || !x->bf || !x->sf ||
                                                                              !x->group_first_segment)))
      return kInvalidArgument;
    if (x->output_rows >= (uint64_t(1) << 32)) {
      write_message(message, message_len, "the F-COO output has 2^32 or more rows");
      return kUnsupported;
    }
    SPT_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
    spt::cuda::HostFcooView view;
    view.nnz = x->nnz;
    view.segments = x->segments;
    view.threadlen = x->threadlen;
    view.num_product_modes = x->num_product_modes;
    view.product_ind = x->product_ind;
    view.bf = x->bf;
    view.sf = x->sf;
    view.group_first_segment = x->group_first_segment;
    view.segment_rows = x->segment_rows;
    view.values = x->values;
    view.value_size = dtype_bytes(x->dtype);
    const size_t bytes = spt::cuda::fcoo_copy_bytes(view);
    if (int status = check_free_memory(device, bytes, "the F-COO tensor", "needs", "", message, message_len);
        status != kOk)
      return status;
    auto copy = std::make_unique<spt_plugin_device_fcoo>();
    copy->device = device;
    copy->dtype = x->dtype;
    copy->output_rows = x->output_rows;
    copy->mttkrp_mode = x->mttkrp_mode;
    copy->dims.assign(x->dims, x->dims + x->order);
    for (uint32_t j = 0; j < x->num_product_modes; ++j) {
      if (x->product_modes[j] >= x->order) return kInvalidArgument;
      copy->product_dims.push_back(x->dims[x->product_modes[j]]);
    }
    SPT_CUDA_TRY(cudaMalloc(&copy->block, bytes), "cudaMalloc of the F-COO tensor");
    const BlockGuard<spt_plugin_device_fcoo> guard{copy};
    SPT_CUDA_TRY(spt::cuda::fcoo_upload(view, copy->block, &copy->ref), "copying the F-COO tensor to the device");
    *out = copy.release();
    return kOk;
  });
}

void plugin_fcoo_release(spt_plugin_device_fcoo* x) { release_device_copy(x); }

template <typename T>
int fcoo_multiply_typed(const spt_plugin_device_fcoo& x, int kind, const spt_plugin_matrix* factors,
                        spt_plugin_matrix& out, char* message, size_t message_len) {
  const uint32_t p = x.ref.num_product_modes;
  const uint64_t width = out.cols;
  if (out.rows != x.output_rows || width == 0 || out.ld < width) {
    write_message(message, message_len, "the output has the wrong shape");
    return kInvalidArgument;
  }
  uint64_t product = 1;
  std::vector<uint32_t> cols(p);
  for (uint32_t j = 0; j < p; ++j) {
    const spt_plugin_matrix& f = factors[j];
    const bool ok = f.data && f.rows == x.product_dims[j] && f.cols >= 1 && f.ld >= f.cols &&
                    (kind == SPT_PLUGIN_FCOO_KRONECKER || f.cols == width);
    if (!ok) {
      write_message(message, message_len, "factor " + std::to_string(j) + " has the wrong shape");
      return kInvalidArgument;
    }
    cols[j] = static_cast<uint32_t>(f.cols);
    if (kind == SPT_PLUGIN_FCOO_KRONECKER) product = std::min<uint64_t>(product * f.cols, uint64_t(1) << 40);
  }
  if (kind == SPT_PLUGIN_FCOO_KRONECKER && product != width) {
    write_message(message, message_len, "the output must have prod R_m columns (< 2^31)");
    return kInvalidArgument;
  }
  if (width >= (uint64_t(1) << 31)) {
    write_message(message, message_len,
                  "the output has " + std::to_string(width) + " columns; the GPU F-COO kernels take fewer than 2^31");
    return kUnsupported;
  }
  SPT_CUDA_TRY(cudaSetDevice(x.device), "cudaSetDevice");
  DeviceSetup setup;
  if (int status = device_setup(x.device, setup, message, message_len); status != kOk) return status;
  cudaStream_t stream = cudaStreamPerThread;

  // One temporary block from the pool: the factors, then the output.
  std::vector<size_t> offset(p);
  size_t bytes = 0;
  for (uint32_t j = 0; j < p; ++j) {
    offset[j] = bytes;
    bytes += align_up(size_t(factors[j].rows) * cols[j] * sizeof(T), 256);
  }
  const size_t out_offset = bytes;
  const size_t out_bytes = size_t(out.rows) * width * sizeof(T);
  bytes += std::max<size_t>(out_bytes, 1);
  void* block = nullptr;
  if (cudaError_t err = cudaMallocAsync(&block, bytes, stream); err != cudaSuccess) {
    cudaGetLastError();
    write_message(message, message_len,
                  "the factor matrices and output need " + megabytes(bytes) + " on CUDA device " +
                      std::to_string(x.device) + " (" + describe(err) + ")");
    return err == cudaErrorMemoryAllocation ? kOutOfMemory : kDevice;
  }
  char* base = static_cast<char*>(block);
  std::vector<const T*> device_factors(p);
  T* device_out = reinterpret_cast<T*>(base + out_offset);
  cudaError_t err = cudaSuccess;
  const char* step = "copying a factor matrix to the device";
  for (uint32_t j = 0; j < p && err == cudaSuccess; ++j) {
    T* dst = reinterpret_cast<T*>(base + offset[j]);
    device_factors[j] = dst;
    err = cudaMemcpy2DAsync(dst, cols[j] * sizeof(T), factors[j].data, factors[j].ld * sizeof(T), cols[j] * sizeof(T),
                            factors[j].rows, cudaMemcpyHostToDevice, stream);
  }
  if (err == cudaSuccess && out_bytes) {
    step = "zeroing the output";
    err = cudaMemsetAsync(device_out, 0, out_bytes, stream);
  }
  if (err == cudaSuccess) {
    step = "launching the F-COO kernel";
    err = kind == SPT_PLUGIN_FCOO_KRONECKER
              ? spt::cuda::launch_fcoo_kronecker<T>(x.ref, device_factors.data(), cols.data(), uint32_t(width),
                                                    device_out, setup.multiprocessors, stream)
              : spt::cuda::launch_fcoo_hadamard<T>(x.ref, device_factors.data(), uint32_t(width), device_out,
                                                   setup.multiprocessors, stream);
  }
  return finish_product<T>(err, step, out_bytes != 0, out, device_out, width, block, stream, "running the F-COO kernel", message,
                           message_len);
}

int plugin_fcoo_multiply(const spt_plugin_device_fcoo* x, int kind, const spt_plugin_matrix* factors,
                         spt_plugin_matrix* out, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!x || !factors || !out || (!out->data && out->rows > 0)) return kInvalidArgument;
    if (kind != SPT_PLUGIN_FCOO_HADAMARD && kind != SPT_PLUGIN_FCOO_KRONECKER) return kInvalidArgument;
    if (x->dtype == SPT_PLUGIN_FLOAT32) return fcoo_multiply_typed<float>(*x, kind, factors, *out, message, message_len);
    return fcoo_multiply_typed<double>(*x, kind, factors, *out, message, message_len);
  });
}

}  // namespace spt_plugin

/* ------------------------------ CP-ALS steps ------------------------------ */

// A CP-ALS session (table family CP_STEPS): struct spt_plugin_cp_session,
// in plugin_copies.cuh (plugin_stream.cu makes streamed sessions too).

namespace spt_plugin {

namespace {

template <typename T>
std::unique_ptr<spt::cuda::CpAlsSession> make_session(const spt_plugin_device_coo* x,
                                                      const spt_plugin_device_fcoo* const* per_mode, uint32_t order,
                                                      const uint32_t* dims, uint32_t rank, int sms,
                                                      spt_plugin_cp_session& session) {
  const spt_plugin_cp_session* s = &session;
  const spt::cuda::MttkrpLauncher<T> mttkrp = [s, per_mode_copy = std::vector<const spt_plugin_device_fcoo*>(
                                                      per_mode ? per_mode : nullptr, per_mode ? per_mode + order : nullptr),
                                               order, sms](uint32_t mode, const T* const* f, uint32_t r, T* out,
                                                           cudaStream_t stream) {
    const spt_plugin_device_fcoo* fcoo = per_mode_copy.empty() ? nullptr : per_mode_copy[mode];
    if (!fcoo) return spt::cuda::launch_mttkrp_coo<T>(s->coo_views[mode], f, mode, r, out, sms, stream);
    const T* product[spt::cuda::kFcooMaxProductModes] = {};
    uint32_t j = 0;
    for (uint32_t m = 0; m < order; ++m)
      if (m != mode) product[j++] = f[m];
    return spt::cuda::launch_fcoo_hadamard<T>(fcoo->ref, product, r, out, sms, stream);
  };
  spt::cuda::ExactInnerLauncher<T> exact_inner;
  if (x) {
    const spt::cuda::DeviceCooRef whole{x->order, x->nnz, x->ind, x->values};
    exact_inner = [whole, sms](const T* const* f, const T* lambda, uint32_t r, double* out, cudaStream_t stream) {
      return spt::cuda::launch_coo_inner_ktensor<T>(whole, f, lambda, r, out, sms, stream);
    };
  }
  return spt::cuda::make_cp_als_session<T>(order, dims, rank, sms, mttkrp, exact_inner);
}

}  // namespace

int plugin_cp_session_create(const spt_plugin_device_coo* x, const spt_plugin_device_fcoo* const* per_mode,
                             uint32_t order, uint32_t rank, spt_plugin_cp_session** out, char* message,
                             size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!out) return kInvalidArgument;
    *out = nullptr;
    const spt_plugin_device_fcoo* first_fcoo = nullptr;
    for (uint32_t m = 0; per_mode && m < order && !first_fcoo; ++m) first_fcoo = per_mode[m];
    if (order < 2 || (!x && !first_fcoo) || (x && x->order != order)) {
      write_message(message, message_len, "cp_session_create: no tensor, or its order is not `order`");
      return kInvalidArgument;
    }
    const int device = x ? x->device : first_fcoo->device;
    const int dtype = x ? x->dtype : first_fcoo->dtype;
    const std::vector<uint32_t>& dims = x ? x->dims : first_fcoo->dims;
    for (uint32_t m = 0; m < order; ++m) {
      const spt_plugin_device_fcoo* f = per_mode ? per_mode[m] : nullptr;
      if (!f) {
        if (x) continue;
        write_message(message, message_len, "cp_session_create: mode " + std::to_string(m) + " has no tensor");
        return kInvalidArgument;
      }
      if (int status =
              check_order(order, 2, spt::cuda::kFcooMaxProductModes + 1, "F-COO kernels'", message, message_len);
          status != kOk)
        return status;
      if (f->mttkrp_mode != int32_t(m) || f->dims != dims || f->device != device || f->dtype != dtype ||
          f->ref.num_product_modes != order - 1) {
        write_message(message, message_len,
                      "cp_session_create: per_mode[" + std::to_string(m) + "] is not the MTTKRP F-COO of mode " +
                          std::to_string(m) + " of the same tensor on the same device");
        return kInvalidArgument;
      }
    }
    if (int status = check_rank(rank, spt::cuda::cp_als_max_rank, "cp_session_create", "CP-ALS", message, message_len);
        status != kOk)
      return status;
    SPT_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
    DeviceSetup setup;
    if (int status = device_setup(device, setup, message, message_len); status != kOk) return status;
    // The working set besides the (resident) tensor: factors, MTTKRP
    // output, R x R matrices, library handles and workspace.
    const size_t needed =
        spt::cuda::cp_als_device_bytes(order, dims.data(), rank, dtype_bytes(dtype)) + spt::cuda::cp_als_library_reserve;
    if (int status = check_free_memory(device, needed, "CP-ALS", "needs",
                                       " for the factors and workspace besides the tensor",
                                       message, message_len);
        status != kOk)
      return status;
    auto session = std::make_unique<spt_plugin_cp_session>();
    session->device = device;
    session->order = order;
    session->run = dtype == SPT_PLUGIN_FLOAT32
                       ? make_session<float>(x, per_mode, order, dims.data(), rank, setup.multiprocessors, *session)
                       : make_session<double>(x, per_mode, order, dims.data(), rank, setup.multiprocessors, *session);
    // The COO modes' views, sorted by the mode from what memory is left.
    if (x) {
      session->coo_views.assign(order, spt::cuda::DeviceCooRef{x->order, x->nnz, x->ind, x->values});
      for (uint32_t m = 0; m < order; ++m) {
        if (per_mode && per_mode[m]) continue;
        if (int st = sorted_copy(*x, m, cudaStreamPerThread, session->coo_views[m], message, message_len); st != kOk)
          return st;
      }
    }
    *out = session.release();
    return kOk;
  });
}

void plugin_cp_session_release(spt_plugin_cp_session* s) {
  if (!s) return;
  if (cudaSetDevice(s->device) == cudaSuccess) s->run.reset();  // at process exit the runtime may be gone
  cudaGetLastError();
  delete s;
}

int plugin_cp_set_factors(spt_plugin_cp_session* s, const spt_plugin_matrix* factors, char* message,
                          size_t message_len) {
  if (!factors) return kInvalidArgument;
  return session_step(s, 0, message, message_len, [&](spt::cuda::CpAlsSession& run) {
    run.set_factors(factors);
    return kOk;
  });
}

int plugin_cp_get_factors(spt_plugin_cp_session* s, spt_plugin_matrix* factors, void* lambda, char* message,
                          size_t message_len) {
  if (!factors || !lambda) return kInvalidArgument;
  return session_step(s, 0, message, message_len, [&](spt::cuda::CpAlsSession& run) {
    run.get_factors(factors, lambda);
    return kOk;
  });
}

int plugin_cp_mttkrp(spt_plugin_cp_session* s, uint32_t mode, char* message, size_t message_len) {
  return session_step(s, mode, message, message_len, [&](spt::cuda::CpAlsSession& run) {
    run.mttkrp(mode);
    return kOk;
  });
}

int plugin_cp_normal_matrix(spt_plugin_cp_session* s, uint32_t mode, spt_plugin_cp_normal_info* info, char* message,
                            size_t message_len) {
  if (!info) return kInvalidArgument;
  return session_step(s, mode, message, message_len, [&](spt::cuda::CpAlsSession& run) {
    *info = run.normal_matrix(mode);
    return kOk;
  });
}

int plugin_cp_solve(spt_plugin_cp_session* s, uint32_t mode, int method, int* eigen_info, char* message,
                    size_t message_len) {
  if (!eigen_info || (method != SPT_PLUGIN_CP_SOLVE_CHOLESKY && method != SPT_PLUGIN_CP_SOLVE_PSEUDO_INVERSE))
    return kInvalidArgument;
  return session_step(s, mode, message, message_len, [&](spt::cuda::CpAlsSession& run) {
    *eigen_info = run.solve(mode, method);
    return kOk;
  });
}

int plugin_cp_normalise(spt_plugin_cp_session* s, uint32_t mode, int first_sweep, char* message,
                        size_t message_len) {
  return session_step(s, mode, message, message_len, [&](spt::cuda::CpAlsSession& run) {
    run.normalise(mode, first_sweep != 0);
    return kOk;
  });
}

int plugin_cp_gram(spt_plugin_cp_session* s, uint32_t mode, char* message, size_t message_len) {
  return session_step(s, mode, message, message_len, [&](spt::cuda::CpAlsSession& run) {
    run.gram(mode);
    return kOk;
  });
}

int plugin_cp_fit_terms(spt_plugin_cp_session* s, spt_plugin_cp_fit_terms* out, char* message, size_t message_len) {
  if (!out) return kInvalidArgument;
  return session_step(s, 0, message, message_len, [&](spt::cuda::CpAlsSession& run) {
    *out = run.fit_terms();
    return kOk;
  });
}

int plugin_cp_exact_inner(spt_plugin_cp_session* s, double* inner, char* message, size_t message_len) {
  if (!inner) return kInvalidArgument;
  return session_step(s, 0, message, message_len, [&](spt::cuda::CpAlsSession& run) {
    if (!run.has_exact_inner()) {
      write_message(message, message_len, "cp_exact_inner: the session holds no COO copy of the tensor");
      return kUnsupported;
    }
    *inner = run.exact_inner();
    return kOk;
  });
}

int plugin_cp_non_finite(spt_plugin_cp_session* s, uint32_t mode, int32_t* component, char* message,
                         size_t message_len) {
  if (!component) return kInvalidArgument;
  return session_step(s, mode, message, message_len, [&](spt::cuda::CpAlsSession& run) {
    *component = run.non_finite(mode);
    return kOk;
  });
}

}  // namespace spt_plugin

namespace {

#define SPT_STR2(x) #x
#define SPT_STR(x) SPT_STR2(x)

// The table, filled from the entry lists in their order (entry `name` is
// spt_plugin::plugin_<name>, declared in plugin_entries.cuh).
#define SPT_PLUGIN_FILL(name, params) spt_plugin::plugin_##name,
#define SPT_PLUGIN_FILL_FAMILY(family) SPT_PLUGIN_##family##_ENTRIES(SPT_PLUGIN_FILL, SPT_PLUGIN_FILL)

const spt_plugin_table table = {
    SPT_PLUGIN_ABI_VERSION,
    sizeof(spt_plugin_table),
    "libsptensor_cuda (CUDA runtime " SPT_STR(CUDART_VERSION) ", statically linked)",
    SPT_PLUGIN_FAMILIES(SPT_PLUGIN_FILL_FAMILY)};

#undef SPT_PLUGIN_FILL_FAMILY
#undef SPT_PLUGIN_FILL

}  // namespace

extern "C" __attribute__((visibility("default"))) const spt_plugin_table* spt_cuda_plugin_entry(
    uint32_t core_abi_version) {
  (void)core_abi_version;  // the core compares versions and explains a mismatch
  return &table;
}
