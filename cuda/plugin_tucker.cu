// The CUDA plugin's Tucker-HOOI entries (family WHOLE_RUN of
// the entry lists in src/dispatch/plugin_abi.h, with their contracts): check the per-mode copies and the
// arguments, check that the working set fits the free device memory, and
// run the sweeps of cuda/tucker_hooi.cu with each mode's TTMc on that mode's
// copy: tucker_hooi_fcoo on an op-MTTKRP F-COO (the Kronecker product of
// cuda/fcoo.cuh), tucker_hooi_hls on an HLS rooted at the mode (the HLS
// TTMc of cuda/hls.cuh in EXACT precision), tucker_hooi_hbcsf on an HB-CSF rooted at the mode (chained TTMs fused per fiber,
// cuda/ttmc_hbcsf.cuh).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dispatch/plugin_abi.h"
#include "fcoo.cuh"
#include "hls.cuh"
#include "plugin_common.cuh"
#include "plugin_copies.cuh"
#include "plugin_entries.cuh"
#include "ttmc_hbcsf.cuh"
#include "tucker_hooi.cuh"

namespace spt_plugin {

namespace {

constexpr uint64_t kIntLimit = uint64_t(1) << 31;  // cuBLAS / cuSOLVER sizes are int

template <typename T>
int tucker_typed(const spt_plugin_device_fcoo* const* per_mode, uint32_t order, const spt_plugin_tucker_args& args,
                 int sms, std::string& error) {
  std::vector<uint32_t> cols(order);  // the TTMc output columns P_n
  for (uint32_t n = 0; n < order; ++n) {
    uint64_t p = 1;
    for (uint32_t m = 0; m < order; ++m)
      if (m != n) p *= args.ranks[m];
    cols[n] = static_cast<uint32_t>(p);
  }
  const spt::cuda::TtmcLauncher<T> ttmc = [&](uint32_t mode, const T* const* factors, T* out, cudaStream_t stream) {
    // The product modes of mode's F-COO: the others, ascending (so the
    // Kronecker column order is the CPU's: lowest other mode fastest).
    const T* product[spt::cuda::kFcooMaxProductModes] = {};
    uint32_t product_cols[spt::cuda::kFcooMaxProductModes] = {};
    uint32_t j = 0;
    for (uint32_t m = 0; m < order; ++m)
      if (m != mode) {
        product[j] = factors[m];
        product_cols[j] = args.ranks[m];
        ++j;
      }
    return spt::cuda::launch_fcoo_kronecker<T>(per_mode[mode]->ref, product, product_cols, cols[mode], out, sms,
                                               stream);
  };
  return spt::cuda::run_tucker_hooi<T>(order, per_mode[0]->dims.data(), ttmc, args, sms, error);
}

// The HLS TTMc runs in EXACT (CUDA cores in T): the Tucker result must not
// depend on the format the TTMc ran on.
constexpr spt::cuda::HlsPrecision kTuckerHlsPrecision = spt::cuda::HlsPrecision::exact;

// The HLS kernels' factor widths by level for the copy rooted at its mode:
// cols[l] = ranks[modes[l]] (level 0 unused), so that the kernels' column
// order (level 1 fastest; levels 1.. = the other modes ascending) is the
// Tucker TTMc's (lowest other mode fastest).
void hls_level_cols(const spt_plugin_device_hls& x, const uint32_t* ranks, uint32_t* cols) {
  for (uint32_t l = 0; l < spt::cuda::kHlsMaxOrder; ++l) cols[l] = 0;
  for (uint32_t l = 1; l < x.ref.order; ++l) cols[l] = ranks[x.modes[l]];
}

template <typename T>
int tucker_hls_typed(const spt_plugin_device_hls* const* per_mode, uint32_t order, const spt_plugin_tucker_args& args,
                     void* workspace, int sms, std::string& error) {
  const spt::cuda::TtmcLauncher<T> ttmc = [&](uint32_t mode, const T* const* factors, T* out, cudaStream_t stream) {
    // Factors cross by mode; the kernels take them by level of the copy
    // rooted at `mode` (level l = mode modes[l]).
    const spt_plugin_device_hls& x = *per_mode[mode];
    const T* by_level[spt::cuda::kHlsMaxOrder] = {};
    uint32_t cols[spt::cuda::kHlsMaxOrder] = {};
    hls_level_cols(x, args.ranks, cols);
    for (uint32_t l = 1; l < order; ++l) by_level[l] = factors[x.modes[l]];
    return spt::cuda::launch_hls_ttmc<T>(x.ref, by_level, cols, kTuckerHlsPrecision, workspace, out, sms, stream);
  };
  return spt::cuda::run_tucker_hooi<T>(order, per_mode[0]->dims_by_mode.data(), ttmc, args, sms, error);
}

// The chained-TTM TTMc (entry tucker_hooi_hbcsf): mode n's TTMc on the
// HB-CSF rooted at n; factors and ranks by mode, as the kernels take them.
template <typename T>
int tucker_hbcsf_typed(const spt_plugin_device_hbcsf* const* per_mode, uint32_t order,
                       const spt_plugin_tucker_args& args, int sms, std::string& error) {
  std::vector<uint32_t> cols(order);  // the TTMc output columns P_n
  for (uint32_t n = 0; n < order; ++n) {
    uint64_t p = 1;
    for (uint32_t m = 0; m < order; ++m)
      if (m != n) p *= args.ranks[m];
    cols[n] = static_cast<uint32_t>(p);
  }
  const spt::cuda::TtmcLauncher<T> ttmc = [&](uint32_t mode, const T* const* factors, T* out, cudaStream_t stream) {
    return spt::cuda::launch_hbcsf_ttmc<T>(per_mode[mode]->ref, factors, args.ranks, cols[mode], out, sms, stream);
  };
  return spt::cuda::run_tucker_hooi<T>(order, per_mode[0]->dims.data(), ttmc, args, sms, error);
}

// The checks every entry shares once its copies are validated: the
// arguments against `dims`, the 32-bit sizes of cuBLAS / cuSOLVER, the
// device setup and the working set (plus `extra_bytes`, e.g. the HLS
// workspace) against the free memory. kOk or a status with the message
// written; `name` prefixes argument errors.
int check_tucker_run(const char* name, const std::vector<uint32_t>& dims, uint32_t order, int device, int dtype,
                     const spt_plugin_tucker_args* args, size_t extra_bytes, DeviceSetup& setup, char* message,
                     size_t message_len) {
  if (!args || !args->ranks || !args->factors || !args->core || !args->on_sweep || args->max_iters < 1) {
    write_message(message, message_len,
                  std::string(name) + ": NULL ranks, factors, core or on_sweep, or max_iters below 1");
    return kInvalidArgument;
  }
  for (uint32_t m = 0; m < order; ++m) {
    const spt_plugin_matrix& f = args->factors[m];
    if (args->ranks[m] < 1 || args->ranks[m] > dims[m] || !f.data || f.rows != dims[m] || f.cols != args->ranks[m] ||
        f.ld < f.cols) {
      write_message(message, message_len,
                    std::string(name) + ": rank or factor " + std::to_string(m) + " has the wrong shape");
      return kInvalidArgument;
    }
  }
  // cuBLAS / cuSOLVER take int sizes: I_n, P_n and the Gram orders.
  for (uint32_t n = 0; n < order; ++n) {
    uint64_t p = 1;
    for (uint32_t m = 0; m < order; ++m)
      if (m != n) p = std::min<uint64_t>(p * args->ranks[m], uint64_t(1) << 40);
    if (dims[n] >= kIntLimit || p >= kIntLimit) {
      write_message(message, message_len,
                    "mode " + std::to_string(n) + ": I_n = " + std::to_string(dims[n]) + " or prod_{m != n} R_m = " +
                        std::to_string(p) + " reaches 2^31, the limit of cuBLAS / cuSOLVER sizes");
      return kUnsupported;
    }
  }
  SPT_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
  if (int status = device_setup(device, setup, message, message_len); status != kOk) return status;
  const size_t needed = spt::cuda::tucker_device_bytes(order, dims.data(), args->ranks, dtype_bytes(dtype)) +
                        spt::cuda::tucker_library_reserve + extra_bytes;
  const size_t available = free_memory(device);
  if (needed > available) {
    write_message(message, message_len,
                  "Tucker-HOOI needs " + megabytes(needed) + " on CUDA device " + std::to_string(device) +
                      " for the factors, Y_(n), the Gram matrices and the solver workspace besides the tensor, " +
                      megabytes(available) + " are free");
    return kOutOfMemory;
  }
  return kOk;
}

}  // namespace

int plugin_tucker_hooi_fcoo(const spt_plugin_device_fcoo* const* per_mode, uint32_t order,
                            const spt_plugin_tucker_args* args, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (int status = check_fcoo_per_mode(per_mode, order, "tucker_hooi_fcoo", message, message_len); status != kOk)
      return status;
    const spt_plugin_device_fcoo& first = *per_mode[0];
    DeviceSetup setup;
    if (int status = check_tucker_run("tucker_hooi_fcoo", first.dims, order, first.device, first.dtype, args, 0,
                                      setup, message, message_len);
        status != kOk)
      return status;
    std::string error;
    const int status = first.dtype == SPT_PLUGIN_FLOAT32
                           ? tucker_typed<float>(per_mode, order, *args, setup.multiprocessors, error)
                           : tucker_typed<double>(per_mode, order, *args, setup.multiprocessors, error);
    if (status != kOk) write_message(message, message_len, error);
    return status;
  });
}

int plugin_tucker_hooi_hls(const spt_plugin_device_hls* const* per_mode, uint32_t order,
                           const spt_plugin_tucker_args* args, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!per_mode || !per_mode[0] || order < 2) return kInvalidArgument;
    if (order != 3 && order != 4) {
      write_message(message, message_len,
                    "order " + std::to_string(order) + " is outside the GPU HLS kernels' range 3..4");
      return kUnsupported;
    }
    const spt_plugin_device_hls& first = *per_mode[0];
    for (uint32_t m = 0; m < order; ++m) {
      const spt_plugin_device_hls* h = per_mode[m];
      // Also the level layout the TTMc relies on: root m, then the other
      // modes ascending.
      bool ok = h && h->ref.order == order && h->modes.size() == order && h->dims_by_mode == first.dims_by_mode &&
                h->dims_by_mode.size() == order && h->device == first.device && h->dtype == first.dtype &&
                h->modes[0] == m;
      for (uint32_t l = 2; ok && l < order; ++l) ok = h->modes[l] > h->modes[l - 1];
      if (!ok) {
        write_message(message, message_len,
                      "tucker_hooi_hls: tensor " + std::to_string(m) + " is not the HLS rooted at mode " +
                          std::to_string(m) + " of the same tensor on the same device");
        return kInvalidArgument;
      }
    }
    // The kernels' scratch: one block for the run, the largest any mode
    // needs (the TTMcs run one after another on one stream). NULL args
    // are reported by check_tucker_run.
    const size_t value_size = dtype_bytes(first.dtype);
    size_t workspace_bytes = 0;
    for (uint32_t m = 0; args && args->ranks && m < order; ++m) {
      uint32_t cols[spt::cuda::kHlsMaxOrder];
      hls_level_cols(*per_mode[m], args->ranks, cols);
      workspace_bytes = std::max(
          workspace_bytes, spt::cuda::hls_workspace_bytes(per_mode[m]->ref, cols, kTuckerHlsPrecision, value_size));
    }
    DeviceSetup setup;
    if (int status = check_tucker_run("tucker_hooi_hls", first.dims_by_mode, order, first.device, first.dtype, args,
                                      workspace_bytes, setup, message, message_len);
        status != kOk)
      return status;
    void* raw_workspace = nullptr;
    if (workspace_bytes > 0) {
      if (cudaError_t err = cudaMalloc(&raw_workspace, workspace_bytes); err != cudaSuccess) {
        cudaGetLastError();
        write_message(message, message_len,
                      "the HLS TTMc workspace needs " + megabytes(workspace_bytes) + " on CUDA device " +
                          std::to_string(first.device) + " (" + describe(err) + ")");
        return err == cudaErrorMemoryAllocation ? kOutOfMemory : kDevice;
      }
    }
    // Freed on every way out (guarded turns a thrown bad_alloc into a status).
    const std::unique_ptr<void, cudaError_t (*)(void*)> workspace(raw_workspace, cudaFree);
    std::string error;
    const int status =
        first.dtype == SPT_PLUGIN_FLOAT32
            ? tucker_hls_typed<float>(per_mode, order, *args, workspace.get(), setup.multiprocessors, error)
            : tucker_hls_typed<double>(per_mode, order, *args, workspace.get(), setup.multiprocessors, error);
    if (status != kOk) write_message(message, message_len, error);
    return status;
  });
}

int plugin_tucker_hooi_hbcsf(const spt_plugin_device_hbcsf* const* per_mode, uint32_t order,
                             const spt_plugin_tucker_args* args, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!per_mode || !per_mode[0] || order < 2) return kInvalidArgument;
    if (order < 3 || order > spt::cuda::kHbcsfMaxOrder) {
      write_message(message, message_len,
                    "order " + std::to_string(order) + " is outside the GPU B-CSF / HB-CSF kernels' range 3.." +
                        std::to_string(spt::cuda::kHbcsfMaxOrder));
      return kUnsupported;
    }
    const spt_plugin_device_hbcsf& first = *per_mode[0];
    for (uint32_t m = 0; m < order; ++m) {
      const spt_plugin_device_hbcsf* h = per_mode[m];
      bool ok = h && h->ref.order == order && h->dims.size() == order && h->dims == first.dims &&
                h->device == first.device && h->dtype == first.dtype && h->ref.mode_order[0] == m;
      // Every mode once in the level order (the kernels map levels to
      // column positions through it).
      uint32_t seen = 0;
      for (uint32_t l = 0; ok && l < order; ++l) {
        ok = h->ref.mode_order[l] < order && !(seen >> h->ref.mode_order[l] & 1u);
        if (ok) seen |= 1u << h->ref.mode_order[l];
      }
      if (!ok) {
        write_message(message, message_len,
                      "tucker_hooi_hbcsf: tensor " + std::to_string(m) + " is not the HB-CSF rooted at mode " +
                          std::to_string(m) + " of the same tensor on the same device");
        return kInvalidArgument;
      }
    }
    // The leaf TTM's R_leaf values per warp live in shared memory (NULL
    // args are reported by check_tucker_run).
    for (uint32_t m = 0; args && args->ranks && m < order; ++m) {
      const uint32_t leaf_mode = per_mode[m]->ref.mode_order[order - 1];
      if (args->ranks[leaf_mode] > spt::cuda::kHbcsfTtmcMaxLeafRank) {
        write_message(message, message_len,
                      "tucker_hooi_hbcsf: the rank of mode " + std::to_string(leaf_mode) + " (" +
                          std::to_string(args->ranks[leaf_mode]) + ", the leaf mode of the tree rooted at mode " +
                          std::to_string(m) + ") is above the chained TTMc's limit of " +
                          std::to_string(spt::cuda::kHbcsfTtmcMaxLeafRank));
        return kUnsupported;
      }
    }
    DeviceSetup setup;
    if (int status = check_tucker_run("tucker_hooi_hbcsf", first.dims, order, first.device, first.dtype, args, 0,
                                      setup, message, message_len);
        status != kOk)
      return status;
    std::string error;
    const int status = first.dtype == SPT_PLUGIN_FLOAT32
                           ? tucker_hbcsf_typed<float>(per_mode, order, *args, setup.multiprocessors, error)
                           : tucker_hbcsf_typed<double>(per_mode, order, *args, setup.multiprocessors, error);
    if (status != kOk) write_message(message, message_len, error);
    return status;
  });
}

}  // namespace spt_plugin
