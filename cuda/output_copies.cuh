// Copies of a float32 output that many atomic additions meet in.
//
// A kernel that adds products into output rows with atomics (HiCOO, HB-CSF
// in a non-root mode) rounds every addition to float32, so a row that takes
// n additions carries about sqrt(n) roundings of its partial sums. Spread
// over K copies of the output (thread block b adds into copy b mod K), each
// copy takes about n / K additions of partial sums about K times smaller,
// which cuts that error about K-fold; the copies are then summed in double
// into the output. K is chosen from the mean additions per row, so the
// copies cost at most a small fraction of the kernel's own traffic, and is
// 1 (no copies) for float64 and for outputs whose rows take few additions.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace spt::cuda {

// Where a kernel adds: copy (blockIdx.x & mask) of the output at `base`,
// copies `stride` elements apart. mask = 0: the output itself.
template <typename T>
struct OutputCopies {
  T* base = nullptr;
  uint32_t mask = 0;  // copies - 1 (a power of two minus one)
  uint64_t stride = 0;
  void* cache = nullptr;  // host side: the device's cached scratch held by this call, if any
};

#ifdef __CUDACC__
template <typename T>
__device__ __forceinline__ T* output_copy(const OutputCopies<T>& c) {
  return c.base + uint64_t(blockIdx.x & c.mask) * c.stride;
}
#endif

// The number of copies for an output of `rows` x `rank` values of
// `value_size` bytes that `additions` atomic additions (an upper bound)
// reach: 1 for float64; else the largest power of two <=
// additions / (rows * per_copy), at most kMaxOutputCopies and at most
// `blocks` (the kernel's thread blocks). per_copy: the additions a row of
// one copy may take; kAdditionsPerCopy where an addition is a nonzero's
// product or a short partial sum, fewer where each addition is a long
// running sum (the error of n additions grows with sqrt(n) times the
// magnitude of what is added). Copies cost a summing launch (and, above
// kCachedCopyBytes, an allocation and a memset), which a small kernel
// feels: use them only where the error calls for them.
constexpr uint64_t kAdditionsPerCopy = 1024;
constexpr uint32_t kMaxOutputCopies = 32;
uint32_t output_copy_count(uint64_t additions, uint64_t rows, size_t value_size, uint64_t blocks,
                           uint64_t per_copy = kAdditionsPerCopy);

// Makes the copies for `out` (rows x rank, zeroed by the caller): with one
// copy, c->base = out and nothing is allocated. Else zeroed scratch for all
// copies: up to kCachedCopyBytes it is the device's cached scratch, which
// the summing kernel leaves zeroed for the next call (so a call costs one
// extra launch, not an allocation, a memset, a launch and a free); the
// device's cache is held from here to finish_output_copies, and a call on
// another stream waits for the previous one's summing kernel. Larger
// scratch comes zeroed from the stream's pool. Every successful begin must
// be paired with finish_output_copies (run_with_output_copies does that).
// Errors: the allocation's, the memset's or the event's.
template <typename T>
cudaError_t begin_output_copies(T* out, uint64_t rows, uint32_t rank, uint32_t copies, cudaStream_t stream,
                                OutputCopies<T>* c);

// out += the sum of the copies (in double, rounded once), and zeroes or
// releases the scratch; no-op for one copy. `status` is the launches'
// status: on an error the scratch is released (or the cache marked for
// zeroing) and `status` returned.
template <typename T>
cudaError_t finish_output_copies(T* out, uint64_t rows, uint32_t rank, OutputCopies<T>& c, cudaError_t status,
                                 cudaStream_t stream);

// begin_output_copies, launch() (returns the launches' cudaError_t; adds
// into c->base's copies), finish_output_copies.
template <typename T, typename Launch>
cudaError_t run_with_output_copies(T* out, uint64_t rows, uint32_t rank, uint32_t copies, cudaStream_t stream,
                                   OutputCopies<T>* c, Launch&& launch) {
  if (cudaError_t err = begin_output_copies<T>(out, rows, rank, copies, stream, c); err != cudaSuccess) return err;
  cudaError_t status = cudaSuccess;
  try {
    status = launch();
  } catch (...) {
    // The device's cache is held since begin: release it before leaving.
    finish_output_copies<T>(out, rows, rank, *c, cudaErrorLaunchFailure, stream);
    throw;
  }
  return finish_output_copies<T>(out, rows, rank, *c, status, stream);
}

// Scratch up to this size is kept per device for the life of the process
// (it is not released at exit; a cudaDeviceReset by the caller between two
// calls invalidates it, as it does every device pointer).
constexpr size_t kCachedCopyBytes = size_t(16) << 20;

}  // namespace spt::cuda
