// The CUDA plugin's Tucker-HOOI entry (table section [v6-tucker], contract
// in src/dispatch/plugin_abi.h): checks the per-mode F-COO copies and the
// arguments, checks that the working set fits the free device memory, and
// runs the sweeps of cuda/tucker_hooi.cu with each mode's TTMc on that
// mode's F-COO copy (the Kronecker product of cuda/fcoo.cuh).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "dispatch/plugin_abi.h"
#include "fcoo.cuh"
#include "plugin_common.cuh"
#include "plugin_copies.cuh"
#include "plugin_entries.cuh"
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

}  // namespace

int plugin_tucker_hooi_fcoo(const spt_plugin_device_fcoo* const* per_mode, uint32_t order,
                            const spt_plugin_tucker_args* args, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!per_mode || !per_mode[0] || order < 2) return kInvalidArgument;
    if (order - 1 > spt::cuda::kFcooMaxProductModes) {
      write_message(message, message_len,
                    "order " + std::to_string(order) + " is outside the GPU F-COO kernels' range 2.." +
                        std::to_string(spt::cuda::kFcooMaxProductModes + 1));
      return kUnsupported;
    }
    const spt_plugin_device_fcoo& first = *per_mode[0];
    for (uint32_t m = 0; m < order; ++m) {
      const spt_plugin_device_fcoo* f = per_mode[m];
      if (!f || f->mttkrp_mode != int32_t(m) || f->dims != first.dims || f->dims.size() != order ||
          f->device != first.device || f->dtype != first.dtype || f->ref.num_product_modes != order - 1) {
        write_message(message, message_len,
                      "tucker_hooi_fcoo: tensor " + std::to_string(m) + " is not the MTTKRP F-COO of mode " +
                          std::to_string(m) + " of the same tensor on the same device");
        return kInvalidArgument;
      }
    }
    if (!args || !args->ranks || !args->factors || !args->core || !args->on_sweep || args->max_iters < 1) {
      write_message(message, message_len,
                    "tucker_hooi_fcoo: NULL ranks, factors, core or on_sweep, or max_iters below 1");
      return kInvalidArgument;
    }
    const std::vector<uint32_t>& dims = first.dims;
    for (uint32_t m = 0; m < order; ++m) {
      const spt_plugin_matrix& f = args->factors[m];
      if (args->ranks[m] < 1 || args->ranks[m] > dims[m] || !f.data || f.rows != dims[m] ||
          f.cols != args->ranks[m] || f.ld < f.cols) {
        write_message(message, message_len,
                      "tucker_hooi_fcoo: rank or factor " + std::to_string(m) + " has the wrong shape");
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
    SPT_CUDA_TRY(cudaSetDevice(first.device), "cudaSetDevice");
    DeviceSetup setup;
    if (int status = device_setup(first.device, setup, message, message_len); status != kOk) return status;
    const size_t needed = spt::cuda::tucker_device_bytes(order, dims.data(), args->ranks, dtype_bytes(first.dtype)) +
                          spt::cuda::tucker_library_reserve;
    const size_t available = free_memory(first.device);
    if (needed > available) {
      write_message(message, message_len,
                    "Tucker-HOOI needs " + megabytes(needed) + " on CUDA device " + std::to_string(first.device) +
                        " for the factors, Y_(n), the Gram matrices and the solver workspace besides the tensor, " +
                        megabytes(available) + " are free");
      return kOutOfMemory;
    }
    std::string error;
    const int status = first.dtype == SPT_PLUGIN_FLOAT32
                           ? tucker_typed<float>(per_mode, order, *args, setup.multiprocessors, error)
                           : tucker_typed<double>(per_mode, order, *args, setup.multiprocessors, error);
    if (status != kOk) write_message(message, message_len, error);
    return status;
  });
}

}  // namespace spt_plugin
