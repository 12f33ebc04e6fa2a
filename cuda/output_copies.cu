// Copies of a float32 output that many atomic additions meet in
// (output_copies.cuh).
#include <algorithm>
#include <map>
#include <mutex>

#include "output_copies.cuh"

namespace spt::cuda {

namespace {

// out += the sum of the copies, in double; zeroes the copies when `clear`
// (the cached scratch stays zeroed for the next call).
template <typename T>
__global__ void sum_output_copies(T* out, T* copies, uint32_t count, uint64_t n, bool clear) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    double s = out[i];
    for (uint32_t c = 0; c < count; ++c) {
      s += copies[uint64_t(c) * n + i];
      if (clear) copies[uint64_t(c) * n + i] = T(0);
    }
    out[i] = static_cast<T>(s);
  }
}

// One device's cached scratch. `mutex` is held from begin_output_copies to
// finish_output_copies; `done` follows the last summing kernel, which a
// call on another stream waits for; `dirty`: not known to be zero (new, or
// a launch failed between begin and finish).
struct CachedScratch {
  std::mutex mutex;
  void* buffer = nullptr;
  size_t bytes = 0;
  cudaEvent_t done = nullptr;
  bool dirty = true;
};

// The current device's cache. Entries are never destroyed: freeing device
// memory from a static destructor would run after the CUDA runtime's own
// teardown.
cudaError_t cached_scratch(CachedScratch** entry) {
  int device = 0;
  if (cudaError_t err = cudaGetDevice(&device); err != cudaSuccess) return err;
  static std::mutex map_mutex;
  static auto* entries = new std::map<int, CachedScratch*>();
  std::lock_guard<std::mutex> lock(map_mutex);
  CachedScratch*& e = (*entries)[device];
  if (!e) e = new CachedScratch();
  *entry = e;
  return cudaSuccess;
}

bool uses_cache(uint64_t n, uint32_t copies, size_t value_size) {
  return n * copies <= kCachedCopyBytes / value_size;
}

// Makes the locked cache hold `bytes` of zeroed scratch ordered before the
// next work on `stream`.
cudaError_t prepare_cached_scratch(CachedScratch& e, size_t bytes, cudaStream_t stream) {
  if (e.done) {
    if (cudaError_t err = cudaStreamWaitEvent(stream, e.done, 0); err != cudaSuccess) return err;
  } else if (cudaError_t err = cudaEventCreateWithFlags(&e.done, cudaEventDisableTiming); err != cudaSuccess) {
    return err;
  }
  if (e.bytes < bytes) {
    // Grows rarely (a power of two from 1 MiB up to kCachedCopyBytes): the
    // synchronous free and allocation are then acceptable.
    size_t grown = std::max<size_t>(e.bytes, size_t(1) << 20);
    while (grown < bytes) grown *= 2;
    if (e.buffer) {
      if (cudaError_t err = cudaStreamSynchronize(stream); err != cudaSuccess) return err;
      cudaFree(e.buffer);
      e.buffer = nullptr;
      e.bytes = 0;
    }
    if (cudaError_t err = cudaMalloc(&e.buffer, grown); err != cudaSuccess) return err;
    e.bytes = grown;
    e.dirty = true;
  }
  if (e.dirty) {
    if (cudaError_t err = cudaMemsetAsync(e.buffer, 0, e.bytes, stream); err != cudaSuccess) return err;
    e.dirty = false;
  }
  return cudaSuccess;
}

template <typename T>
cudaError_t launch_sum(T* out, T* copies, uint32_t count, uint64_t n, bool clear, cudaStream_t stream) {
  const unsigned threads = 256;
  const unsigned blocks = static_cast<unsigned>(std::min<uint64_t>((n + threads - 1) / threads, 4096));
  sum_output_copies<T><<<blocks, threads, 0, stream>>>(out, copies, count, n, clear);
  return cudaGetLastError();
}

}  // namespace

uint32_t output_copy_count(uint64_t additions, uint64_t rows, size_t value_size, uint64_t blocks,
                           uint64_t per_copy) {
  if (value_size != sizeof(float) || rows == 0) return 1;
  const uint64_t want = additions / rows / std::max<uint64_t>(per_copy, 1);
  const uint64_t cap = std::min<uint64_t>({want, kMaxOutputCopies, blocks});
  uint32_t k = 1;
  while (uint64_t(k) * 2 <= cap) k *= 2;
  return k;
}

template <typename T>
cudaError_t begin_output_copies(T* out, uint64_t rows, uint32_t rank, uint32_t copies, cudaStream_t stream,
                                OutputCopies<T>* c) {
  *c = OutputCopies<T>{};
  c->base = out;
  if (copies <= 1) return cudaSuccess;
  const uint64_t n = rows * rank;
  const size_t bytes = n * copies * sizeof(T);
  void* scratch = nullptr;
  if (uses_cache(n, copies, sizeof(T))) {
    CachedScratch* e = nullptr;
    if (cudaError_t err = cached_scratch(&e); err != cudaSuccess) return err;
    e->mutex.lock();
    if (cudaError_t err = prepare_cached_scratch(*e, bytes, stream); err != cudaSuccess) {
      e->mutex.unlock();
      return err;
    }
    scratch = e->buffer;
    c->cache = e;
  } else {
    if (cudaError_t err = cudaMallocAsync(&scratch, bytes, stream); err != cudaSuccess) return err;
    if (cudaError_t err = cudaMemsetAsync(scratch, 0, bytes, stream); err != cudaSuccess) {
      cudaFreeAsync(scratch, stream);
      return err;
    }
  }
  c->base = static_cast<T*>(scratch);
  c->mask = copies - 1;
  c->stride = n;
  return cudaSuccess;
}

template <typename T>
cudaError_t finish_output_copies(T* out, uint64_t rows, uint32_t rank, OutputCopies<T>& c, cudaError_t status,
                                 cudaStream_t stream) {
  if (c.mask == 0) return status;
  const uint64_t n = rows * rank;
  const uint32_t copies = c.mask + 1;
  cudaError_t released = cudaSuccess;
  if (c.cache) {
    CachedScratch* e = static_cast<CachedScratch*>(c.cache);
    if (status == cudaSuccess) status = launch_sum<T>(out, c.base, copies, n, true, stream);
    if (status != cudaSuccess) e->dirty = true;
    released = cudaEventRecord(e->done, stream);
    if (released != cudaSuccess) e->dirty = true;
    e->mutex.unlock();
  } else {
    if (status == cudaSuccess) status = launch_sum<T>(out, c.base, copies, n, false, stream);
    released = cudaFreeAsync(c.base, stream);
  }
  c = OutputCopies<T>{};
  c.base = out;
  return status != cudaSuccess ? status : released;
}

template cudaError_t begin_output_copies<float>(float*, uint64_t, uint32_t, uint32_t, cudaStream_t,
                                                OutputCopies<float>*);
template cudaError_t begin_output_copies<double>(double*, uint64_t, uint32_t, uint32_t, cudaStream_t,
                                                 OutputCopies<double>*);
template cudaError_t finish_output_copies<float>(float*, uint64_t, uint32_t, OutputCopies<float>&, cudaError_t,
                                                 cudaStream_t);
template cudaError_t finish_output_copies<double>(double*, uint64_t, uint32_t, OutputCopies<double>&, cudaError_t,
                                                  cudaStream_t);

}  // namespace spt::cuda
