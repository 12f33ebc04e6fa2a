// COO tensors larger than the device memory: the nonzeros stay in host
// memory (pinned in place with cudaHostRegister) and stream through a ring
// of device chunk buffers, one CUDA stream per buffer, so that the copy of
// the next chunk overlaps the kernel of the previous one (the out-of-memory
// MTTKRP of BLCO, Nguyen et al., ICS 2022, on plain COO chunks). The
// factors and the output stay resident; each chunk runs the in-memory COO
// kernels of mttkrp.cuh on its slice of the nonzeros, adding into the same
// output, so the result is the in-memory one up to the summation order.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "mttkrp.cuh"

namespace spt::cuda {

// A COO tensor in host memory: per mode an index array, and the values.
struct HostCooRef {
  uint32_t order = 0;
  uint64_t nnz = 0;
  std::vector<const uint32_t*> ind;  // order arrays of nnz
  const void* values = nullptr;      // nnz values of value_size bytes
  size_t value_size = 0;
};

// The ring's shape: buffers of chunk_nnz nonzeros each.
struct StreamPlan {
  uint64_t chunk_nnz = 0;
  uint64_t chunks = 0;
  uint32_t buffers = 0;
  size_t ring_bytes = 0;
};

// Device buffers the ring uses, and the fewest and most nonzeros a chunk
// holds. Fewer than the minimum: the device is too small to stream
// usefully. The maximum keeps chunks many enough that the copy of the first
// and the kernel of the last, which nothing overlaps, stay a small part of
// a pass, while each copy stays tens of megabytes long.
constexpr uint32_t kStreamBuffers = 2;
constexpr uint64_t kStreamMinChunk = 1024;
constexpr uint64_t kStreamMaxChunk = uint64_t(1) << 22;

// Bytes of one chunk buffer of chunk_nnz nonzeros (indices mode-major, then
// the values at a 256-byte aligned offset, as coo_copy_bytes).
size_t stream_buffer_bytes(uint32_t order, uint64_t chunk_nnz, size_t value_size);

// The ring for a tensor of nnz nonzeros in `ring_bytes` of device memory:
// the largest chunk (<= kStreamMaxChunk, <= nnz) whose kStreamBuffers
// buffers fit. chunk_nnz = 0 when even chunks of kStreamMinChunk (or of
// nnz, if fewer) do not fit.
StreamPlan plan_stream(uint32_t order, uint64_t nnz, size_t value_size, size_t ring_bytes);

// The host tensor pinned and the ring on the current device. Not thread
// safe: one user at a time (a CP-ALS session, one MTTKRP call).
class StreamedCoo {
 public:
  // Pins x's arrays (they must stay alive and unchanged until the object
  // is gone) and allocates the ring of `plan` with its streams and events
  // on the current device. Memory that cannot be pinned (a read-only
  // mapping, a registration limit) is copied from pageable memory: correct,
  // without overlap (pinned() says which). Returns the failing call's
  // error through `error` (cudaSuccess when ready).
  StreamedCoo(const HostCooRef& x, const StreamPlan& plan, cudaError_t& error);
  ~StreamedCoo();
  StreamedCoo(const StreamedCoo&) = delete;
  StreamedCoo& operator=(const StreamedCoo&) = delete;

  const StreamPlan& plan() const { return plan_; }
  bool pinned() const { return pinned_; }
  uint64_t nnz() const { return x_.nnz; }

  // For each chunk in order, copies its nonzeros into a ring buffer and
  // calls launch(chunk, chunk_stream) (the chunk's device view, the stream
  // it must run on; returns the launch error). Work queued on `stream`
  // before the call precedes every chunk, and `stream` waits for every
  // chunk after it: to the caller it is one asynchronous step on `stream`.
  // Returns the first error.
  cudaError_t for_each_chunk(cudaStream_t stream,
                             const std::function<cudaError_t(const DeviceCooRef&, cudaStream_t)>& launch);

 private:
  void pin();
  void release();

  HostCooRef x_;
  StreamPlan plan_;
  bool pinned_ = false;
  std::vector<void*> registered_;  // ranges this object registered (unregistered at the end)
  std::vector<void*> buffers_;
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> done_;
  cudaEvent_t start_ = nullptr;
};

}  // namespace spt::cuda
