// The streamed COO tensor of mttkrp_streamed.cuh: pinning, the ring, and
// the chunk pipeline.
#include "mttkrp_streamed.cuh"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

namespace spt::cuda {

namespace {

// The host ranges this plugin registered, by start address, with the
// number of users: two calls streaming one tensor at once (read-only
// kernels on one tensor may run concurrently) share one registration, and
// the last to finish unregisters it.
struct Registration {
  size_t bytes = 0;
  int users = 0;
};
std::mutex registry_mutex;
std::map<uintptr_t, Registration> registry;

// Registers [p, p + n) or joins its registration; false when it could not
// be pinned by us (then `already` tells whether someone else had pinned it).
bool register_range(void* p, size_t n, bool read_only_supported, bool& already) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  already = false;
  auto it = registry.find(uintptr_t(p));
  if (it != registry.end() && it->second.bytes == n) {
    ++it->second.users;
    return true;
  }
  cudaError_t err = cudaHostRegister(p, n, cudaHostRegisterPortable);
  if (err != cudaSuccess && err != cudaErrorHostMemoryAlreadyRegistered && read_only_supported) {
    cudaGetLastError();
    err = cudaHostRegister(p, n, cudaHostRegisterPortable | cudaHostRegisterReadOnly);  // a read-only mapping (an .sptb file)
  }
  if (err != cudaSuccess) {
    cudaGetLastError();
    already = err == cudaErrorHostMemoryAlreadyRegistered;
    return false;
  }
  registry[uintptr_t(p)] = Registration{n, 1};
  return true;
}

void unregister_range(void* p) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = registry.find(uintptr_t(p));
  if (it == registry.end() || --it->second.users > 0) return;
  registry.erase(it);
  cudaHostUnregister(p);
  cudaGetLastError();
}

}  // namespace

size_t stream_buffer_bytes(uint32_t order, uint64_t chunk_nnz, size_t value_size) {
  return coo_copy_bytes(order, chunk_nnz, value_size);
}

StreamPlan plan_stream(uint32_t order, uint64_t nnz, size_t value_size, size_t ring_bytes) {
  StreamPlan plan;
  plan.buffers = kStreamBuffers;
  if (nnz == 0 || order == 0 || value_size == 0) return plan;
  const size_t per_buffer = ring_bytes / kStreamBuffers;
  const uint64_t per_nnz = uint64_t(order) * sizeof(uint32_t) + value_size;
  // The largest chunk whose buffer fits: the alignment gap before the
  // values (under 256 bytes) costs at most a few nonzeros.
  uint64_t chunk = std::min<uint64_t>({per_buffer / per_nnz, kStreamMaxChunk, nnz});
  while (chunk > 0 && stream_buffer_bytes(order, chunk, value_size) > per_buffer) --chunk;
  if (chunk < std::min<uint64_t>(kStreamMinChunk, nnz)) return plan;
  // Equal chunks (the last one not much shorter than the others): the same
  // number of chunks, each as long as needed.
  const uint64_t chunks = (nnz + chunk - 1) / chunk;
  chunk = (nnz + chunks - 1) / chunks;
  plan.chunk_nnz = chunk;
  plan.chunks = chunks;
  plan.ring_bytes = size_t(kStreamBuffers) * stream_buffer_bytes(order, chunk, value_size);
  return plan;
}

StreamedCoo::StreamedCoo(const HostCooRef& x, const StreamPlan& plan, cudaError_t& error) : x_(x), plan_(plan) {
  error = cudaSuccess;
  if (plan_.chunk_nnz == 0 || plan_.buffers == 0 || x_.ind.size() != x_.order) {
    error = cudaErrorInvalidValue;
    return;
  }
  const size_t bytes = stream_buffer_bytes(x_.order, plan_.chunk_nnz, x_.value_size);
  for (uint32_t b = 0; b < plan_.buffers && error == cudaSuccess; ++b) {
    void* p = nullptr;
    error = cudaMalloc(&p, bytes);
    if (error == cudaSuccess) buffers_.push_back(p);
    cudaStream_t s = nullptr;
    if (error == cudaSuccess) error = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (error == cudaSuccess) streams_.push_back(s);
    cudaEvent_t e = nullptr;
    if (error == cudaSuccess) error = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (error == cudaSuccess) done_.push_back(e);
  }
  if (error == cudaSuccess) error = cudaEventCreateWithFlags(&start_, cudaEventDisableTiming);
  if (error != cudaSuccess) {
    cudaGetLastError();
    release();
    return;
  }
  pin();
}

StreamedCoo::~StreamedCoo() { release(); }

// Registers the page ranges of the index and value arrays (merged where
// they share a page: a page can be registered once). A range that is
// registered already by someone else (the caller) counts as pinned and
// stays theirs.
void StreamedCoo::pin() {
  const uintptr_t page = uintptr_t(std::max<long>(sysconf(_SC_PAGESIZE), 1));
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (uint32_t m = 0; m < x_.order; ++m)
    ranges.emplace_back(uintptr_t(x_.ind[m]), uintptr_t(x_.ind[m]) + x_.nnz * sizeof(uint32_t));
  ranges.emplace_back(uintptr_t(x_.values), uintptr_t(x_.values) + x_.nnz * x_.value_size);
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uintptr_t, uintptr_t>> merged;
  for (const auto& r : ranges) {
    if (r.second <= r.first) continue;
    if (!merged.empty() && r.first / page <= (merged.back().second - 1) / page)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  int read_only_supported = 0, device = 0;
  if (cudaGetDevice(&device) == cudaSuccess)
    cudaDeviceGetAttribute(&read_only_supported, cudaDevAttrHostRegisterReadOnlySupported, device);
  cudaGetLastError();
  pinned_ = true;
  for (const auto& r : merged) {
    void* p = reinterpret_cast<void*>(r.first);
    bool already = false;
    if (register_range(p, r.second - r.first, read_only_supported != 0, already)) registered_.push_back(p);
    else if (!already) pinned_ = false;
  }
}

void StreamedCoo::release() {
  for (cudaStream_t s : streams_) cudaStreamSynchronize(s);
  for (void* p : registered_) unregister_range(p);
  for (void* p : buffers_) cudaFree(p);
  for (cudaStream_t s : streams_) cudaStreamDestroy(s);
  for (cudaEvent_t e : done_) cudaEventDestroy(e);
  if (start_) cudaEventDestroy(start_);
  cudaGetLastError();  // at process exit the runtime may be gone already
  registered_.clear();
  buffers_.clear();
  streams_.clear();
  done_.clear();
  start_ = nullptr;
}

cudaError_t StreamedCoo::for_each_chunk(cudaStream_t stream,
                                        const std::function<cudaError_t(const DeviceCooRef&, cudaStream_t)>& launch) {
  if (x_.nnz == 0) return cudaSuccess;
  if (buffers_.size() != plan_.buffers || plan_.chunk_nnz == 0) return cudaErrorInvalidValue;
  cudaError_t err = cudaEventRecord(start_, stream);
  for (size_t b = 0; b < streams_.size() && err == cudaSuccess; ++b) err = cudaStreamWaitEvent(streams_[b], start_, 0);
  if (err != cudaSuccess) return err;
  // Chunk c runs on stream c mod B in buffer c mod B: within a stream the
  // copy of chunk c + B waits for the kernel of chunk c (the buffer is
  // free again), while the other streams' copies and kernels go on.
  const char* values = static_cast<const char*>(x_.values);
  for (uint64_t c = 0; c < plan_.chunks && err == cudaSuccess; ++c) {
    const uint64_t begin = c * plan_.chunk_nnz;
    if (begin >= x_.nnz) break;
    const uint64_t len = std::min(plan_.chunk_nnz, x_.nnz - begin);
    const size_t b = c % buffers_.size();
    cudaStream_t s = streams_[b];
    char* base = static_cast<char*>(buffers_[b]);
    for (uint32_t m = 0; m < x_.order && err == cudaSuccess; ++m)
      err = cudaMemcpyAsync(base + size_t(m) * len * sizeof(uint32_t), x_.ind[m] + begin, len * sizeof(uint32_t),
                            cudaMemcpyHostToDevice, s);
    const size_t values_offset = coo_values_offset(x_.order, len);
    if (err == cudaSuccess)
      err = cudaMemcpyAsync(base + values_offset, values + begin * x_.value_size, len * x_.value_size,
                            cudaMemcpyHostToDevice, s);
    if (err == cudaSuccess)
      err = launch(DeviceCooRef{x_.order, len, reinterpret_cast<const uint32_t*>(base), base + values_offset}, s);
  }
  // Join whatever was queued, also after a failure (the caller frees and
  // synchronises on `stream`).
  for (size_t b = 0; b < streams_.size(); ++b) {
    cudaError_t e = cudaEventRecord(done_[b], streams_[b]);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(stream, done_[b], 0);
    if (err == cudaSuccess) err = e;
  }
  return err;
}

}  // namespace spt::cuda
