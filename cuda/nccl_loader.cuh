// NCCL, loaded at run time: the plugin builds and loads without it, and the
// multi-device CP-ALS (plugin_multi.cu) uses it where it is installed. Only
// the few types and functions used here are declared; NCCL's C interface is
// stable across its 2.x releases (the values below are nccl.h's).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace spt::cuda::nccl {

using Comm = struct ncclComm*;
using Result = int;  // ncclResult_t
constexpr Result kSuccess = 0;
constexpr int kFloat32 = 7;  // ncclFloat32
constexpr int kFloat64 = 8;  // ncclFloat64
constexpr int kSum = 0;      // ncclSum
constexpr int kMax = 2;      // ncclMax

// The entry points, resolved from the loaded library.
struct Api {
  Result (*comm_init_all)(Comm* comms, int ndev, const int* devlist) = nullptr;
  Result (*comm_destroy)(Comm comm) = nullptr;
  Result (*comm_abort)(Comm comm) = nullptr;
  Result (*all_reduce)(const void* send, void* recv, size_t count, int datatype, int op, Comm comm,
                       cudaStream_t stream) = nullptr;
  Result (*reduce_scatter)(const void* send, void* recv, size_t recv_count, int datatype, int op, Comm comm,
                           cudaStream_t stream) = nullptr;
  Result (*all_gather)(const void* send, void* recv, size_t send_count, int datatype, Comm comm,
                       cudaStream_t stream) = nullptr;
  Result (*group_start)() = nullptr;
  Result (*group_end)() = nullptr;
  const char* (*error_string)(Result result) = nullptr;
  Result (*get_version)(int* version) = nullptr;
  std::string path;  // the file that was loaded
  int version = 0;   // e.g. 22703 for 2.27.3
};

// NCCL, loaded on first use (thread safe; the library stays loaded for the
// process). Loads the file `library` names when it is not empty (only
// there: the context's choice, spt_context_set_nccl_library), else
// libnccl.so.2 on the loader's path, then the lib folder of the
// `nvidia-nccl-cu*` Python packages (nvidia/nccl/lib) of the active virtual
// or conda environment ($VIRTUAL_ENV, $CONDA_PREFIX: where the user's
// Python installs packages), /usr/local and /usr. Returns nullptr with
// `why` set when none loads or one lacks an entry point.
const Api* load(const std::string& library, std::string& why);

// "ncclX (description)" for messages.
std::string describe(const Api& api, Result result);

}  // namespace spt::cuda::nccl
