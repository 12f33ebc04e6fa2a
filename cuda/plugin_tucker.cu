// The CUDA plugin's Tucker-HOOI steps (family TUCKER_STEPS of the entry
// lists in src/dispatch/plugin_abi.h, with their contracts): a session per
// run, made on the per-mode copies after checking them, the arguments and
// that the working set fits the free device memory; then one entry per step
// of cuda/tucker_hooi.cuh, each mode's TTMc on that mode's copy:
// tucker_session_fcoo on an op-MTTKRP F-COO (the Kronecker product of
// cuda/fcoo.cuh), tucker_session_hls on an HLS rooted at the mode (the HLS
// TTMc of cuda/hls.cuh in EXACT precision), tucker_session_hbcsf on an
// HB-CSF rooted at the mode (chained TTMs fused per fiber,
// cuda/ttmc_hbcsf.cuh). The sweeps themselves are the core's
// (src/algo/tucker_hooi.cpp).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dispatch/plugin_abi.h"
#include "fcoo.cuh"
#include "hls.cuh"
#include "plugin_common.cuh"
#include "plugin_copies.cuh"
#include "plugin_entries.cuh"
#include "step_failure.cuh"
#include "ttmc_hbcsf.cuh"
#include "tucker_hooi.cuh"

// A Tucker-HOOI session (opaque in plugin_abi.h): the steps, the device they
// run on, and the HLS TTMc's scratch workspace (freed after the steps'
// state, whose destructor waits for the stream).
struct spt_plugin_tucker_session {
  int device = 0;
  std::unique_ptr<void, cudaError_t (*)(void*)> workspace{nullptr, cudaFree};
  std::unique_ptr<spt::cuda::TuckerSession> steps;
};

namespace spt_plugin {

namespace {

constexpr uint64_t kIntLimit = uint64_t(1) << 31;  // cuBLAS / cuSOLVER sizes are int

// The columns P_n = prod_{m != n} R_m of each mode's TTMc output.
std::vector<uint32_t> ttmc_columns(uint32_t order, const uint32_t* ranks) {
  std::vector<uint32_t> cols(order);
  for (uint32_t n = 0; n < order; ++n) {
    uint64_t p = 1;
    for (uint32_t m = 0; m < order; ++m)
      if (m != n) p *= ranks[m];
    cols[n] = static_cast<uint32_t>(p);
  }
  return cols;
}

// The F-COO TTMc of mode n on per_mode[n] (the launcher keeps the pointers;
// the copies outlive the session).
template <typename T>
spt::cuda::TtmcLauncher<T> fcoo_ttmc(const spt_plugin_device_fcoo* const* per_mode, uint32_t order,
                                     const uint32_t* ranks, int sms) {
  std::vector<const spt_plugin_device_fcoo*> copies(per_mode, per_mode + order);
  std::vector<uint32_t> rank_list(ranks, ranks + order);
  std::vector<uint32_t> cols = ttmc_columns(order, ranks);
  return [copies, rank_list, cols, order, sms](uint32_t mode, const T* const* factors, T* out, cudaStream_t stream) {
    // The product modes of mode's F-COO: the others, ascending (so the
    // Kronecker column order is the CPU's: lowest other mode fastest).
    const T* product[spt::cuda::kFcooMaxProductModes] = {};
    uint32_t product_cols[spt::cuda::kFcooMaxProductModes] = {};
    uint32_t j = 0;
    for (uint32_t m = 0; m < order; ++m)
      if (m != mode) {
        product[j] = factors[m];
        product_cols[j] = rank_list[m];
        ++j;
      }
    return spt::cuda::launch_fcoo_kronecker<T>(copies[mode]->ref, product, product_cols, cols[mode], out, sms,
                                               stream);
  };
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
spt::cuda::TtmcLauncher<T> hls_ttmc(const spt_plugin_device_hls* const* per_mode, uint32_t order,
                                    const uint32_t* ranks, void* workspace, int sms) {
  std::vector<const spt_plugin_device_hls*> copies(per_mode, per_mode + order);
  std::vector<uint32_t> rank_list(ranks, ranks + order);
  return [copies, rank_list, order, workspace, sms](uint32_t mode, const T* const* factors, T* out,
                                                     cudaStream_t stream) {
    // Factors cross by mode; the kernels take them by level of the copy
    // rooted at `mode` (level l = mode modes[l]).
    const spt_plugin_device_hls& x = *copies[mode];
    const T* by_level[spt::cuda::kHlsMaxOrder] = {};
    uint32_t cols[spt::cuda::kHlsMaxOrder] = {};
    hls_level_cols(x, rank_list.data(), cols);
    for (uint32_t l = 1; l < order; ++l) by_level[l] = factors[x.modes[l]];
    return spt::cuda::launch_hls_ttmc<T>(x.ref, by_level, cols, kTuckerHlsPrecision, workspace, out, sms, stream);
  };
}

// The chained-TTM TTMc: mode n's TTMc on the HB-CSF rooted at n; factors
// and ranks by mode, as the kernels take them.
template <typename T>
spt::cuda::TtmcLauncher<T> hbcsf_ttmc(const spt_plugin_device_hbcsf* const* per_mode, uint32_t order,
                                      const uint32_t* ranks, int sms) {
  std::vector<const spt_plugin_device_hbcsf*> copies(per_mode, per_mode + order);
  std::vector<uint32_t> rank_list(ranks, ranks + order);
  std::vector<uint32_t> cols = ttmc_columns(order, ranks);
  return [copies, rank_list, cols, sms](uint32_t mode, const T* const* factors, T* out, cudaStream_t stream) {
    return spt::cuda::launch_hbcsf_ttmc<T>(copies[mode]->ref, factors, rank_list.data(), cols[mode], out, sms,
                                           stream);
  };
}

// The checks every session shares once its copies are validated: the
// ranks against `dims`, the 32-bit sizes of cuBLAS / cuSOLVER, the device
// setup and the working set (plus `extra_bytes`, e.g. the HLS workspace)
// against the free memory. kOk or a status with the message written;
// `name` prefixes argument errors.
int check_tucker_run(const char* name, const std::vector<uint32_t>& dims, uint32_t order, int device, int dtype,
                     const uint32_t* ranks, spt_plugin_tucker_session** out, size_t extra_bytes, DeviceSetup& setup,
                     char* message, size_t message_len) {
  if (!ranks || !out) {
    write_message(message, message_len, std::string(name) + ": NULL ranks or out");
    return kInvalidArgument;
  }
  for (uint32_t m = 0; m < order; ++m) {
    if (ranks[m] < 1 || ranks[m] > dims[m]) {
      write_message(message, message_len, std::string(name) + ": rank " + std::to_string(m) + " is out of range");
      return kInvalidArgument;
    }
  }
  // cuBLAS / cuSOLVER take int sizes: I_n, P_n and the Gram orders.
  for (uint32_t n = 0; n < order; ++n) {
    uint64_t p = 1;
    for (uint32_t m = 0; m < order; ++m)
      if (m != n) p = std::min<uint64_t>(p * ranks[m], uint64_t(1) << 40);
    if (dims[n] >= kIntLimit || p >= kIntLimit) {
      write_message(message, message_len,
                    "mode " + std::to_string(n) + ": I_n = " + std::to_string(dims[n]) + " or prod_{m != n} R_m = " +
                        std::to_string(p) + " reaches 2^31, the limit of cuBLAS / cuSOLVER sizes");
      return kUnsupported;
    }
  }
  SPT_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
  if (int status = device_setup(device, setup, message, message_len); status != kOk) return status;
  const size_t needed = spt::cuda::tucker_device_bytes(order, dims.data(), ranks, dtype_bytes(dtype)) +
                        spt::cuda::tucker_library_reserve + extra_bytes;
  if (int status = check_free_memory(device, needed, "Tucker-HOOI", "needs",
                                     " for the factors, Y_(n), the Gram matrices and the solver workspace besides the tensor",
                                     message, message_len);
      status != kOk)
    return status;
  return kOk;
}

// Makes *out = a session on `device` with the steps of `make` (which
// returns the TuckerSession; it may throw library_checks::Failure, which
// the caller's guarded() returns).
template <typename Make>
int open_session(int device, void* workspace, spt_plugin_tucker_session** out, Make&& make) {
  auto session = std::make_unique<spt_plugin_tucker_session>();
  session->device = device;
  session->workspace.reset(workspace);
  session->steps = make();
  *out = session.release();
  return kOk;
}

// One step of a session: on the session's device, a Failure turned into
// its status and message.
template <typename Step>
int session_step(spt_plugin_tucker_session* s, char* message, size_t message_len, Step&& step) {
  return guarded(message, message_len, [&]() -> int {
    if (!s || !s->steps) {
      write_message(message, message_len, "NULL Tucker-HOOI session");
      return kInvalidArgument;
    }
    SPT_CUDA_TRY(cudaSetDevice(s->device), "cudaSetDevice");
    step(*s->steps);
    return kOk;
  });
}

}  // namespace

int plugin_tucker_session_fcoo(const spt_plugin_device_fcoo* const* per_mode, uint32_t order, const uint32_t* ranks,
                               spt_plugin_tucker_session** out, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (int status = check_fcoo_per_mode(per_mode, order, "tucker_session_fcoo", message, message_len);
        status != kOk)
      return status;
    const spt_plugin_device_fcoo& first = *per_mode[0];
    DeviceSetup setup;
    if (int status = check_tucker_run("tucker_session_fcoo", first.dims, order, first.device, first.dtype, ranks, out,
                                      0, setup, message, message_len);
        status != kOk)
      return status;
    const int sms = setup.multiprocessors;
    return open_session(first.device, nullptr, out,
                        [&]() -> std::unique_ptr<spt::cuda::TuckerSession> {
                          if (first.dtype == SPT_PLUGIN_FLOAT32)
                            return spt::cuda::make_tucker_session<float>(
                                order, first.dims.data(), ranks, fcoo_ttmc<float>(per_mode, order, ranks, sms), sms);
                          return spt::cuda::make_tucker_session<double>(
                              order, first.dims.data(), ranks, fcoo_ttmc<double>(per_mode, order, ranks, sms), sms);
                        });
  });
}

int plugin_tucker_session_hls(const spt_plugin_device_hls* const* per_mode, uint32_t order, const uint32_t* ranks,
                              spt_plugin_tucker_session** out, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!per_mode || !per_mode[0] || order < 2) return kInvalidArgument;
    if (int status = check_order(order, 3, 4, "HLS kernels'", message, message_len); status != kOk) return status;
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
                      "tucker_session_hls: tensor " + std::to_string(m) + " is not the HLS rooted at mode " +
                          std::to_string(m) + " of the same tensor on the same device");
        return kInvalidArgument;
      }
    }
    // The kernels' scratch: one block for the session, the largest any mode
    // needs (the TTMcs run one after another on one stream). NULL ranks are
    // reported by check_tucker_run.
    const size_t value_size = dtype_bytes(first.dtype);
    size_t workspace_bytes = 0;
    for (uint32_t m = 0; ranks && m < order; ++m) {
      uint32_t cols[spt::cuda::kHlsMaxOrder];
      hls_level_cols(*per_mode[m], ranks, cols);
      workspace_bytes = std::max(
          workspace_bytes, spt::cuda::hls_workspace_bytes(per_mode[m]->ref, cols, kTuckerHlsPrecision, value_size));
    }
    DeviceSetup setup;
    if (int status = check_tucker_run("tucker_session_hls", first.dims_by_mode, order, first.device, first.dtype,
                                      ranks, out, workspace_bytes, setup, message, message_len);
        status != kOk)
      return status;
    void* workspace = nullptr;
    if (workspace_bytes > 0) {
      if (cudaError_t err = cudaMalloc(&workspace, workspace_bytes); err != cudaSuccess) {
        cudaGetLastError();
        write_message(message, message_len,
                      "the HLS TTMc workspace needs " + megabytes(workspace_bytes) + " on CUDA device " +
                          std::to_string(first.device) + " (" + describe(err) + ")");
        return err == cudaErrorMemoryAllocation ? kOutOfMemory : kDevice;
      }
    }
    const int sms = setup.multiprocessors;
    // open_session owns the workspace from here on, on every way out.
    return open_session(first.device, workspace, out,
                        [&]() -> std::unique_ptr<spt::cuda::TuckerSession> {
                          if (first.dtype == SPT_PLUGIN_FLOAT32)
                            return spt::cuda::make_tucker_session<float>(
                                order, first.dims_by_mode.data(), ranks,
                                hls_ttmc<float>(per_mode, order, ranks, workspace, sms), sms);
                          return spt::cuda::make_tucker_session<double>(
                              order, first.dims_by_mode.data(), ranks,
                              hls_ttmc<double>(per_mode, order, ranks, workspace, sms), sms);
                        });
  });
}

int plugin_tucker_session_hbcsf(const spt_plugin_device_hbcsf* const* per_mode, uint32_t order, const uint32_t* ranks,
                                spt_plugin_tucker_session** out, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!per_mode || !per_mode[0] || order < 2) return kInvalidArgument;
    if (int status = check_order(order, 3, spt::cuda::kHbcsfMaxOrder, "B-CSF / HB-CSF kernels'", message, message_len);
        status != kOk)
      return status;
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
                      "tucker_session_hbcsf: tensor " + std::to_string(m) + " is not the HB-CSF rooted at mode " +
                          std::to_string(m) + " of the same tensor on the same device");
        return kInvalidArgument;
      }
    }
    // The leaf TTM's R_leaf values per warp live in shared memory (NULL
    // ranks are reported by check_tucker_run).
    for (uint32_t m = 0; ranks && m < order; ++m) {
      const uint32_t leaf_mode = per_mode[m]->ref.mode_order[order - 1];
      if (ranks[leaf_mode] > spt::cuda::kHbcsfTtmcMaxLeafRank) {
        write_message(message, message_len,
                      "tucker_session_hbcsf: the rank of mode " + std::to_string(leaf_mode) + " (" +
                          std::to_string(ranks[leaf_mode]) + ", the leaf mode of the tree rooted at mode " +
                          std::to_string(m) + ") is above the chained TTMc's limit of " +
                          std::to_string(spt::cuda::kHbcsfTtmcMaxLeafRank));
        return kUnsupported;
      }
    }
    DeviceSetup setup;
    if (int status = check_tucker_run("tucker_session_hbcsf", first.dims, order, first.device, first.dtype, ranks,
                                      out, 0, setup, message, message_len);
        status != kOk)
      return status;
    const int sms = setup.multiprocessors;
    return open_session(first.device, nullptr, out,
                        [&]() -> std::unique_ptr<spt::cuda::TuckerSession> {
                          if (first.dtype == SPT_PLUGIN_FLOAT32)
                            return spt::cuda::make_tucker_session<float>(
                                order, first.dims.data(), ranks, hbcsf_ttmc<float>(per_mode, order, ranks, sms), sms);
                          return spt::cuda::make_tucker_session<double>(
                              order, first.dims.data(), ranks, hbcsf_ttmc<double>(per_mode, order, ranks, sms), sms);
                        });
  });
}

void plugin_tucker_session_release(spt_plugin_tucker_session* s) {
  if (!s) return;
  cudaSetDevice(s->device);
  delete s;
  cudaGetLastError();
}

int plugin_tucker_set_factor(spt_plugin_tucker_session* s, uint32_t mode, const spt_plugin_matrix* f, char* message,
                             size_t message_len) {
  return session_step(s, message, message_len, [&](spt::cuda::TuckerSession& t) {
    if (!f) throw spt::cuda::library_checks::Failure{kInvalidArgument, "tucker_set_factor: NULL factor"};
    t.set_factor(mode, *f);
  });
}

int plugin_tucker_get_factor(spt_plugin_tucker_session* s, uint32_t mode, spt_plugin_matrix* f, char* message,
                             size_t message_len) {
  return session_step(s, message, message_len, [&](spt::cuda::TuckerSession& t) {
    if (!f) throw spt::cuda::library_checks::Failure{kInvalidArgument, "tucker_get_factor: NULL factor"};
    t.get_factor(mode, *f);
  });
}

int plugin_tucker_ttmc(spt_plugin_tucker_session* s, uint32_t mode, char* message, size_t message_len) {
  return session_step(s, message, message_len, [&](spt::cuda::TuckerSession& t) { t.ttmc(mode); });
}

int plugin_tucker_gram_vectors(spt_plugin_tucker_session* s, uint32_t mode, char* message, size_t message_len) {
  return session_step(s, message, message_len, [&](spt::cuda::TuckerSession& t) { t.gram_vectors(mode); });
}

int plugin_tucker_right_gram(spt_plugin_tucker_session* s, uint32_t mode, double* smallest_kept, double* largest,
                             char* message, size_t message_len) {
  return session_step(s, message, message_len, [&](spt::cuda::TuckerSession& t) {
    if (!smallest_kept || !largest)
      throw spt::cuda::library_checks::Failure{kInvalidArgument, "tucker_right_gram: NULL output"};
    t.right_gram(mode, smallest_kept, largest);
  });
}

int plugin_tucker_right_vectors(spt_plugin_tucker_session* s, uint32_t mode, char* message, size_t message_len) {
  return session_step(s, message, message_len, [&](spt::cuda::TuckerSession& t) { t.right_vectors(mode); });
}

int plugin_tucker_svd_vectors(spt_plugin_tucker_session* s, uint32_t mode, char* message, size_t message_len) {
  return session_step(s, message, message_len, [&](spt::cuda::TuckerSession& t) { t.svd_vectors(mode); });
}

int plugin_tucker_fix_signs(spt_plugin_tucker_session* s, uint32_t mode, char* message, size_t message_len) {
  return session_step(s, message, message_len, [&](spt::cuda::TuckerSession& t) { t.fix_signs(mode); });
}

int plugin_tucker_core(spt_plugin_tucker_session* s, double* norm_core_squared, char* message, size_t message_len) {
  return session_step(s, message, message_len, [&](spt::cuda::TuckerSession& t) {
    if (!norm_core_squared) throw spt::cuda::library_checks::Failure{kInvalidArgument, "tucker_core: NULL output"};
    *norm_core_squared = t.core();
  });
}

int plugin_tucker_get_core(spt_plugin_tucker_session* s, void* core, char* message, size_t message_len) {
  return session_step(s, message, message_len, [&](spt::cuda::TuckerSession& t) {
    if (!core) throw spt::cuda::library_checks::Failure{kInvalidArgument, "tucker_get_core: NULL core"};
    t.get_core(core);
  });
}

}  // namespace spt_plugin
