// The CUDA plugin's CP-APR steps (family CP_APR_STEPS of the entry lists
// in src/dispatch/plugin_abi.h, with their contracts): a session per run,
// made after checking the arguments, the grouped nonzeros (shapes, row
// pointers, every index in range) and that the working set fits the free
// device memory (SPT_CUDA_MEMORY_LIMIT included); then one entry per step of
// cuda/cp_apr.cuh. The iterations themselves are the core's
// (src/algo/cp_apr.cpp).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "cp_apr.cuh"
#include "dispatch/plugin_abi.h"
#include "plugin_common.cuh"
#include "plugin_entries.cuh"

// A CP-APR session (opaque in plugin_abi.h): the steps and their device.
struct spt_plugin_cp_apr_session {
  static constexpr const char* kRun = "CP-APR";  // in session_step's messages
  int device = 0;
  uint32_t order = 0;
  std::unique_ptr<spt::cuda::CpAprSession> run;
};

namespace spt_plugin {

namespace {

// What the CUDA context and launch configuration may take beyond the
// session's own arrays, in the working-set check.
constexpr size_t kCpAprReserve = size_t(16) << 20;

// Checks one mode's groups: rows, row pointers (0 first, non-decreasing,
// nnz last) and every index of the other modes below its dimension.
int check_groups(const spt_plugin_cp_apr_groups& g, uint32_t mode, uint32_t order, const uint32_t* dims, uint64_t nnz,
                 char* message, size_t message_len) {
  const std::string where = "cp_apr_session_create: the groups of mode " + std::to_string(mode);
  if (g.rows != dims[mode] || !g.row_ptr || !g.ind || (nnz > 0 && !g.values)) {
    write_message(message, message_len, where + " have the wrong rows or NULL arrays");
    return kInvalidArgument;
  }
  if (g.row_ptr[0] != 0 || g.row_ptr[g.rows] != nnz) {
    write_message(message, message_len, where + " do not start at 0 and end at nnz");
    return kInvalidArgument;
  }
  for (uint64_t i = 0; i < g.rows; ++i)
    if (g.row_ptr[i + 1] < g.row_ptr[i]) {
      write_message(message, message_len, where + " have decreasing row pointers");
      return kInvalidArgument;
    }
  for (uint32_t m = 0; m < order; ++m) {
    if (m == mode) continue;
    const uint32_t* ind = g.ind[m];
    if (nnz > 0 && !ind) {
      write_message(message, message_len, where + " have no indices of mode " + std::to_string(m));
      return kInvalidArgument;
    }
    for (uint64_t k = 0; k < nnz; ++k)
      if (ind[k] >= dims[m]) {
        write_message(message, message_len, where + " hold an index out of range in mode " + std::to_string(m));
        return kInvalidArgument;
      }
  }
  return kOk;
}

}  // namespace

int plugin_cp_apr_session_create(int device, int dtype, uint32_t order, const uint32_t* dims, uint64_t nnz,
                                 uint32_t rank, const spt_plugin_cp_apr_groups* per_mode,
                                 spt_plugin_cp_apr_session** out, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!out || !dims || !per_mode) {
      write_message(message, message_len, "cp_apr_session_create: NULL dims, per_mode or out");
      return kInvalidArgument;
    }
    *out = nullptr;
    if (dtype != SPT_PLUGIN_FLOAT32 && dtype != SPT_PLUGIN_FLOAT64) {
      write_message(message, message_len, "cp_apr_session_create: unknown dtype");
      return kInvalidArgument;
    }
    if (int status = check_order(order, 2, spt::cuda::cp_apr_max_order, "CP-APR's", message, message_len);
        status != kOk)
      return status;
    if (int status =
            check_rank(rank, spt::cuda::cp_apr_max_rank, "cp_apr_session_create", "CP-APR", message, message_len);
        status != kOk)
      return status;
    for (uint32_t m = 0; m < order; ++m)
      if (dims[m] == 0) {
        write_message(message, message_len, "cp_apr_session_create: dimension " + std::to_string(m) + " is 0");
        return kInvalidArgument;
      }
    for (uint32_t m = 0; m < order; ++m)
      if (int st = check_groups(per_mode[m], m, order, dims, nnz, message, message_len); st != kOk) return st;
    int device_count = 0;
    SPT_CUDA_TRY(cudaGetDeviceCount(&device_count), "cudaGetDeviceCount");
    if (device < 0 || device >= device_count) {
      write_message(message, message_len, "cp_apr_session_create: no CUDA device " + std::to_string(device));
      return kInvalidArgument;
    }
    SPT_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
    DeviceSetup setup;
    if (int status = device_setup(device, setup, message, message_len); status != kOk) return status;
    const size_t arrays = spt::cuda::cp_apr_device_bytes(order, dims, nnz, rank, dtype_bytes(dtype));
    const size_t needed = arrays > SIZE_MAX - kCpAprReserve ? SIZE_MAX : arrays + kCpAprReserve;
    if (int status = check_free_memory(device, needed, "CP-APR", "needs",
                                       " for the grouped nonzeros (one copy per mode), factors, Phi and workspace",
                                       message, message_len);
        status != kOk)
      return status;
    auto session = std::make_unique<spt_plugin_cp_apr_session>();
    session->device = device;
    session->order = order;
    session->run = dtype == SPT_PLUGIN_FLOAT32
                       ? spt::cuda::make_cp_apr_session<float>(order, dims, nnz, rank, per_mode, setup.multiprocessors)
                       : spt::cuda::make_cp_apr_session<double>(order, dims, nnz, rank, per_mode,
                                                                setup.multiprocessors);
    *out = session.release();
    return kOk;
  });
}

void plugin_cp_apr_session_release(spt_plugin_cp_apr_session* s) {
  if (!s) return;
  if (cudaSetDevice(s->device) == cudaSuccess) s->run.reset();  // at process exit the runtime may be gone
  cudaGetLastError();
  delete s;
}

int plugin_cp_apr_set_factors(spt_plugin_cp_apr_session* s, const spt_plugin_matrix* factors, char* message,
                              size_t message_len) {
  if (!factors) return kInvalidArgument;
  return session_step(s, 0, message, message_len, [&](spt::cuda::CpAprSession& run) {
    run.set_factors(factors);
    return kOk;
  });
}

int plugin_cp_apr_get_factors(spt_plugin_cp_apr_session* s, spt_plugin_matrix* factors, double* lambda,
                              char* message, size_t message_len) {
  if (!factors || !lambda) return kInvalidArgument;
  return session_step(s, 0, message, message_len, [&](spt::cuda::CpAprSession& run) {
    run.get_factors(factors, lambda);
    return kOk;
  });
}

int plugin_cp_apr_normalise(spt_plugin_cp_apr_session* s, uint32_t mode, char* message, size_t message_len) {
  return session_step(s, mode, message, message_len, [&](spt::cuda::CpAprSession& run) {
    run.normalise(mode);
    return kOk;
  });
}

int plugin_cp_apr_scooch(spt_plugin_cp_apr_session* s, uint32_t mode, double kappa, double kappatol, char* message,
                         size_t message_len) {
  return session_step(s, mode, message, message_len, [&](spt::cuda::CpAprSession& run) {
    run.scooch(mode, kappa, kappatol);
    return kOk;
  });
}

int plugin_cp_apr_redistribute(spt_plugin_cp_apr_session* s, uint32_t mode, char* message, size_t message_len) {
  return session_step(s, mode, message, message_len, [&](spt::cuda::CpAprSession& run) {
    run.redistribute(mode);
    return kOk;
  });
}

int plugin_cp_apr_phi(spt_plugin_cp_apr_session* s, uint32_t mode, double eps, char* message, size_t message_len) {
  return session_step(s, mode, message, message_len, [&](spt::cuda::CpAprSession& run) {
    run.phi(mode, eps);
    return kOk;
  });
}

int plugin_cp_apr_kkt_violation(spt_plugin_cp_apr_session* s, uint32_t mode, double* violation, char* message,
                                size_t message_len) {
  if (!violation) return kInvalidArgument;
  return session_step(s, mode, message, message_len, [&](spt::cuda::CpAprSession& run) {
    *violation = run.kkt_violation(mode);
    return kOk;
  });
}

int plugin_cp_apr_multiply(spt_plugin_cp_apr_session* s, uint32_t mode, char* message, size_t message_len) {
  return session_step(s, mode, message, message_len, [&](spt::cuda::CpAprSession& run) {
    run.multiply(mode);
    return kOk;
  });
}

int plugin_cp_apr_loglikelihood(spt_plugin_cp_apr_session* s, double* loglik, char* message, size_t message_len) {
  if (!loglik) return kInvalidArgument;
  return session_step(s, 0, message, message_len, [&](spt::cuda::CpAprSession& run) {
    *loglik = run.loglikelihood();
    return kOk;
  });
}

}  // namespace spt_plugin
