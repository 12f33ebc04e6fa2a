// Table family MULTI_DEVICE (plugin_abi.h): CP-ALS sessions on several
// devices of one host joined by NCCL (loaded at run time, nccl_loader.cuh).
// The lead session (the first) receives the sum of every session's MTTKRP
// output (ncclReduce) and runs the rest of each mode's steps alone; the new
// factor then goes from the lead to the others (ncclBroadcast), so the
// replicas are copies of one result rather than results computed again.
// Every collective of a step is queued on each session's main stream inside
// one ncclGroupStart / ncclGroupEnd (one host thread drives every device).
#include <cuda_runtime_api.h>

#include <set>
#include <string>
#include <vector>

#include "cp_als.cuh"
#include "dispatch/plugin_abi.h"
#include "nccl_loader.cuh"
#include "plugin_common.cuh"
#include "plugin_copies.cuh"
#include "plugin_entries.cuh"

namespace {

namespace nccl = spt::cuda::nccl;

// Most devices a group takes (one host).
constexpr uint32_t kMaxGroupDevices = 64;

}  // namespace

struct spt_plugin_cp_group {
  const nccl::Api* api = nullptr;
  std::vector<int> devices;
  std::vector<spt::cuda::CpAlsSession*> runs;
  std::vector<spt::cuda::CpAlsBuffers> buffers;  // per session
  std::vector<nccl::Comm> comms;                 // comms[i]: rank i on devices[i]
  int datatype = nccl::kFloat64;

  ~spt_plugin_cp_group() {
    // Pending collectives finish before the communicators go.
    for (size_t i = 0; i < comms.size(); ++i) {
      if (cudaSetDevice(devices[i]) == cudaSuccess && buffers[i].stream) cudaStreamSynchronize(buffers[i].stream);
      if (comms[i]) api->comm_destroy(comms[i]);
    }
    cudaGetLastError();
  }
};

namespace spt_plugin {

namespace {

// Runs `queue(i)` (one NCCL call per session) inside one NCCL group; an
// NCCL failure becomes kDevice with `what` in the message.
template <typename Queue>
int grouped(spt_plugin_cp_group& g, const char* what, char* message, size_t message_len, Queue&& queue) {
  nccl::Result r = g.api->group_start();
  if (r != nccl::kSuccess) {
    write_message(message, message_len, std::string(what) + ": ncclGroupStart: " + nccl::describe(*g.api, r));
    return kDevice;
  }
  nccl::Result first_error = nccl::kSuccess;
  for (size_t i = 0; i < g.comms.size(); ++i) {
    const nccl::Result ri = queue(i);
    if (ri != nccl::kSuccess && first_error == nccl::kSuccess) first_error = ri;
  }
  r = g.api->group_end();
  if (first_error == nccl::kSuccess) first_error = r;
  if (first_error != nccl::kSuccess) {
    write_message(message, message_len, std::string(what) + ": " + nccl::describe(*g.api, first_error));
    return kDevice;
  }
  return kOk;
}

}  // namespace

int plugin_collectives_available(const char* nccl_library, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    std::string why;
    const nccl::Api* api = nccl::load(nccl_library ? nccl_library : "", why);
    if (!api) {
      write_message(message, message_len, why);
      return kUnsupported;
    }
    const int v = api->version;
    // 2.19+ encodes major * 10000 + minor * 100 + patch.
    const std::string version = v >= 10000 ? std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
                                                 std::to_string(v % 100)
                                           : std::to_string(v);
    write_message(message, message_len, "NCCL " + version + " from " + api->path);
    return kOk;
  });
}

int plugin_cp_group_create(spt_plugin_cp_session* const* sessions, uint32_t count, const char* nccl_library,
                           spt_plugin_cp_group** out, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!out) return kInvalidArgument;
    *out = nullptr;
    if (!sessions || count < 2 || count > kMaxGroupDevices) {
      write_message(message, message_len, "cp_group_create: give 2.." + std::to_string(kMaxGroupDevices) + " sessions");
      return kInvalidArgument;
    }
    std::string why;
    const nccl::Api* api = nccl::load(nccl_library ? nccl_library : "", why);
    if (!api) {
      write_message(message, message_len, why);
      return kUnsupported;
    }
    auto g = std::make_unique<spt_plugin_cp_group>();
    g->api = api;
    std::set<int> seen;
    for (uint32_t i = 0; i < count; ++i) {
      spt_plugin_cp_session* s = sessions[i];
      spt::cuda::CpAlsSession* run = s ? s->run.get() : nullptr;
      const int device = s ? s->device : -1;
      if (!run || !seen.insert(device).second) {
        write_message(message, message_len, "cp_group_create: session " + std::to_string(i) +
                                                " is missing or on the device of another session");
        return kInvalidArgument;
      }
      SPT_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
      g->devices.push_back(device);
      g->runs.push_back(run);
      g->buffers.push_back(run->buffers());
      const spt::cuda::CpAlsBuffers& b = g->buffers.back();
      const spt::cuda::CpAlsBuffers& lead = g->buffers.front();
      if (b.dims != lead.dims || b.rank != lead.rank || b.value_size != lead.value_size) {
        write_message(message, message_len,
                      "cp_group_create: session " + std::to_string(i) + " differs from the first in dims, rank or type");
        return kInvalidArgument;
      }
    }
    g->datatype = g->buffers.front().value_size == sizeof(float) ? nccl::kFloat32 : nccl::kFloat64;
    // NVLink multicast (NVLS), which can take a shared host's GPUs out of
    // service, is off unless the user chose: nccl::load above set
    // NCCL_NVLS_ENABLE=0 when unset, before NCCL first reads it.
    g->comms.assign(count, nullptr);
    const nccl::Result r = api->comm_init_all(g->comms.data(), static_cast<int>(count), g->devices.data());
    if (r != nccl::kSuccess) {
      g->comms.assign(count, nullptr);  // ncclCommInitAll leaves nothing to free on failure
      write_message(message, message_len, "ncclCommInitAll: " + nccl::describe(*api, r));
      return kDevice;
    }
    *out = g.release();
    return kOk;
  });
}

void plugin_cp_group_release(spt_plugin_cp_group* g) { delete g; }

int plugin_cp_group_reduce_mttkrp(spt_plugin_cp_group* g, uint32_t mode, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!g || mode >= g->buffers.front().dims.size()) return kInvalidArgument;
    const size_t count = size_t(g->buffers.front().dims[mode]) * g->buffers.front().rank;
    return grouped(*g, "summing the MTTKRP over the devices", message, message_len, [&](size_t i) {
      const spt::cuda::CpAlsBuffers& b = g->buffers[i];
      // In place on the lead (send = receive buffer there).
      return g->api->reduce(b.mttkrp, b.mttkrp, count, g->datatype, nccl::kSum, 0, g->comms[i], b.stream);
    });
  });
}

int plugin_cp_group_broadcast(spt_plugin_cp_group* g, uint32_t mode, int with_lambda, char* message,
                              size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!g || mode >= g->buffers.front().dims.size()) return kInvalidArgument;
    const size_t count = size_t(g->buffers.front().dims[mode]) * g->buffers.front().rank;
    const size_t rank = g->buffers.front().rank;
    return grouped(*g, "copying a factor to the devices", message, message_len, [&](size_t i) {
      const spt::cuda::CpAlsBuffers& b = g->buffers[i];
      nccl::Result r = g->api->broadcast(b.factors[mode], b.factors[mode], count, g->datatype, 0, g->comms[i], b.stream);
      if (r == nccl::kSuccess && with_lambda)
        r = g->api->broadcast(b.lambda, b.lambda, rank, g->datatype, 0, g->comms[i], b.stream);
      return r;
    });
  });
}

}  // namespace spt_plugin
