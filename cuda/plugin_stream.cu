// The plugin's STREAM family (src/dispatch/plugin_abi.h): MTTKRP and the
// CP-ALS session for a COO tensor whose nonzeros stay in host memory and
// stream through the device in chunks (cuda/mttkrp_streamed.cuh). The
// chunk size is what the free device memory (capped by
// SPT_CUDA_MEMORY_LIMIT) leaves after the resident working set: the
// factors and output for an MTTKRP, the session's workspace for CP-ALS.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cp_als.cuh"
#include "dispatch/plugin_abi.h"
#include "mttkrp.cuh"
#include "mttkrp_streamed.cuh"
#include "plugin_common.cuh"
#include "plugin_copies.cuh"
#include "plugin_entries.cuh"

namespace spt_plugin {

namespace {

spt::cuda::HostCooRef host_ref(const spt_plugin_coo& x) {
  spt::cuda::HostCooRef r;
  r.order = x.order;
  r.nnz = x.nnz;
  r.ind.assign(x.ind, x.ind + x.order);
  r.values = x.values;
  r.value_size = dtype_bytes(x.dtype);
  return r;
}

void fill_info(spt_plugin_stream_info* info, const spt::cuda::StreamedCoo& s) {
  if (!info) return;
  info->chunk_nnz = s.plan().chunk_nnz;
  info->chunks = s.plan().chunks;
  info->buffers = s.plan().buffers;
  info->pinned = s.pinned() ? 1u : 0u;
  info->ring_bytes = s.plan().ring_bytes;
}

// The plan for streaming x beside `resident` bytes on `device`; kOk, or
// kOutOfMemory with a message naming `what` when even the smallest ring
// does not fit.
int plan_beside(int device, const spt_plugin_coo& x, size_t resident, const char* what, spt::cuda::StreamPlan& plan,
                char* message, size_t message_len) {
  const size_t available = free_memory(device);
  const size_t ring = available > resident ? available - resident : 0;
  plan = spt::cuda::plan_stream(x.order, x.nnz, dtype_bytes(x.dtype), ring);
  if (plan.chunk_nnz > 0) return kOk;
  const uint64_t smallest = std::min<uint64_t>(spt::cuda::kStreamMinChunk, x.nnz);
  const size_t smallest_ring =
      size_t(spt::cuda::kStreamBuffers) * spt::cuda::stream_buffer_bytes(x.order, smallest, dtype_bytes(x.dtype));
  write_message(message, message_len,
                std::string(what) + " need " + megabytes(resident) + " on CUDA device " + std::to_string(device) +
                    " and streaming the tensor " + megabytes(smallest_ring) + " more, " + megabytes(available) +
                    " are free");
  return kOutOfMemory;
}

template <typename T>
int mttkrp_streamed_typed(int device, const spt_plugin_coo& x, const spt_plugin_matrix* factors, uint32_t mode,
                          spt_plugin_matrix& out, spt_plugin_stream_info* info, char* message, size_t message_len) {
  if (int status = check_mttkrp_shapes(x.order, x.dims, factors, mode, out, message, message_len); status != kOk)
    return status;
  if (x.nnz == 0) {
    for (uint64_t i = 0; i < out.rows; ++i)
      for (uint64_t j = 0; j < out.cols; ++j) static_cast<T*>(out.data)[i * out.ld + j] = T(0);
    return kOk;
  }
  SPT_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
  DeviceSetup setup;
  if (int status = device_setup(device, setup, message, message_len); status != kOk) return status;
  const uint32_t rank = static_cast<uint32_t>(out.cols);
  // The factors and the output stay on the device beside the ring.
  const size_t resident = mttkrp_operand_layout(x.order, x.dims, mode, rank, sizeof(T), nullptr, nullptr);
  spt::cuda::StreamPlan plan;
  if (int status = plan_beside(device, x, resident, "the factor matrices and output", plan, message, message_len);
      status != kOk)
    return status;
  cudaError_t err = cudaSuccess;
  spt::cuda::StreamedCoo streamed(host_ref(x), plan, err);
  if (err != cudaSuccess) return cuda_failure(err, "setting up the streaming buffers", message, message_len);
  fill_info(info, streamed);
  cudaStream_t stream = cudaStreamPerThread;
  return mttkrp_with_device_operands<T>(
      device, x.order, x.dims, factors, mode, out, stream,
      [&](const T* const* device_factors, T* device_out) {
        return streamed.for_each_chunk(stream, [&](const spt::cuda::DeviceCooRef& chunk, cudaStream_t s) {
          return spt::cuda::launch_mttkrp_coo<T>(chunk, device_factors, mode, rank, device_out, setup.multiprocessors,
                                                 s);
        });
      },
      message, message_len);
}

// The CP-ALS run whose MTTKRPs and exact <X, M> stream through `streamed`.
template <typename T>
std::unique_ptr<spt::cuda::CpAlsSession> make_streamed_run(spt::cuda::StreamedCoo* streamed, uint32_t order,
                                                           const uint32_t* dims, uint32_t rank, int sms) {
  spt::cuda::MttkrpLauncher<T> mttkrp = [streamed, sms](uint32_t mode, const T* const* f, uint32_t r, T* out,
                                                        cudaStream_t stream) {
    return streamed->for_each_chunk(stream, [&](const spt::cuda::DeviceCooRef& chunk, cudaStream_t s) {
      return spt::cuda::launch_mttkrp_coo<T>(chunk, f, mode, r, out, sms, s);
    });
  };
  spt::cuda::ExactInnerLauncher<T> exact_inner = [streamed, sms](const T* const* f, const T* lambda, uint32_t r,
                                                                 double* out, cudaStream_t stream) {
    return streamed->for_each_chunk(stream, [&](const spt::cuda::DeviceCooRef& chunk, cudaStream_t s) {
      return spt::cuda::launch_coo_inner_ktensor<T>(chunk, f, lambda, r, out, sms, s);
    });
  };
  return spt::cuda::make_cp_als_session<T>(order, dims, rank, sms, std::move(mttkrp), std::move(exact_inner));
}

}  // namespace

int plugin_mttkrp_streamed(int device, const spt_plugin_coo* x, const spt_plugin_matrix* factors, uint32_t mode,
                           spt_plugin_matrix* out, spt_plugin_stream_info* info, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (int status = check_host_coo(x, message, message_len); status != kOk) return status;
    if (!factors || !out || !out->data || mode >= x->order) return kInvalidArgument;
    if (x->dtype == SPT_PLUGIN_FLOAT32)
      return mttkrp_streamed_typed<float>(device, *x, factors, mode, *out, info, message, message_len);
    return mttkrp_streamed_typed<double>(device, *x, factors, mode, *out, info, message, message_len);
  });
}

int plugin_cp_session_streamed(int device, const spt_plugin_coo* x, uint32_t rank, spt_plugin_cp_session** out,
                               spt_plugin_stream_info* info, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!out) return kInvalidArgument;
    *out = nullptr;
    if (int status = check_host_coo(x, message, message_len); status != kOk) return status;
    if (x->nnz == 0) {
      write_message(message, message_len, "cp_session_streamed: the tensor has no nonzeros");
      return kInvalidArgument;
    }
    if (int status =
            check_rank(rank, spt::cuda::cp_als_max_rank, "cp_session_streamed", "CP-ALS", message, message_len);
        status != kOk)
      return status;
    SPT_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
    DeviceSetup setup;
    if (int status = device_setup(device, setup, message, message_len); status != kOk) return status;
    const size_t resident = spt::cuda::cp_als_device_bytes(x->order, x->dims, rank, dtype_bytes(x->dtype)) +
                            spt::cuda::cp_als_library_reserve;
    spt::cuda::StreamPlan plan;
    if (int status = plan_beside(device, *x, resident, "CP-ALS's factors and workspace", plan, message, message_len);
        status != kOk)
      return status;
    auto session = std::make_unique<spt_plugin_cp_session>();
    session->device = device;
    session->order = x->order;
    cudaError_t err = cudaSuccess;
    session->streamed = std::make_unique<spt::cuda::StreamedCoo>(host_ref(*x), plan, err);
    if (err != cudaSuccess) return cuda_failure(err, "setting up the streaming buffers", message, message_len);
    session->run = x->dtype == SPT_PLUGIN_FLOAT32
                       ? make_streamed_run<float>(session->streamed.get(), x->order, x->dims, rank,
                                                  setup.multiprocessors)
                       : make_streamed_run<double>(session->streamed.get(), x->order, x->dims, rank,
                                                   setup.multiprocessors);
    fill_info(info, *session->streamed);
    *out = session.release();
    return kOk;
  });
}

}  // namespace spt_plugin
