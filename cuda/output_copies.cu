// Copies of a float32 output that many atomic additions meet in
// (output_copies.cuh).
#include <algorithm>

#include "output_copies.cuh"

namespace spt::cuda {

namespace {

template <typename T>
__global__ void sum_output_copies(T* out, const T* copies, uint32_t count, uint64_t n) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    double s = out[i];
    for (uint32_t c = 0; c < count; ++c) s += copies[uint64_t(c) * n + i];
    out[i] = static_cast<T>(s);
  }
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
  void* scratch = nullptr;
  if (cudaError_t err = cudaMallocAsync(&scratch, n * copies * sizeof(T), stream); err != cudaSuccess) return err;
  if (cudaError_t err = cudaMemsetAsync(scratch, 0, n * copies * sizeof(T), stream); err != cudaSuccess) {
    cudaFreeAsync(scratch, stream);
    return err;
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
  if (status == cudaSuccess) {
    const unsigned threads = 256;
    const unsigned blocks = static_cast<unsigned>(std::min<uint64_t>((n + threads - 1) / threads, 4096));
    sum_output_copies<T><<<blocks, threads, 0, stream>>>(out, c.base, c.mask + 1, n);
    status = cudaGetLastError();
  }
  const cudaError_t freed = cudaFreeAsync(c.base, stream);
  c = OutputCopies<T>{};
  c.base = out;
  return status != cudaSuccess ? status : freed;
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
