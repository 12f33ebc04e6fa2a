// COO MTTKRP on the GPU with atomics.
//
// Work mapping: each warp owns a contiguous chunk of nonzeros (a multiple of
// 32). It walks the chunk 32 nonzeros at a time: lane j loads the indices
// and value of nonzero j (coalesced 128-byte loads per mode), then the warp
// is split into teams of L lanes (L = the rank rounded up to a power of two,
// at most 32); a team takes one nonzero at a time, gets its indices from
// the owning lane by shuffles, and its lanes cover the rank columns, so a
// factor-row read is L consecutive elements (coalesced). Ranks above 32 use
// C columns per lane (C = 2 or 4) and, above 128, more rank blocks along
// gridDim.y (rank blocking; each block column rereads the indices).
//
// Output: each team keeps a running sum while consecutive nonzeros it
// handles share the output row (long runs when the tensor is sorted by the
// mode, as in heavy slices) and adds it to the output with atomicAdd when
// the row changes, so atomics scale with row changes, not nonzeros. The
// running sum is a RunningSum (compensated for float32,
// cuda/running_sum.cuh), rounded to T once per flush.
#include <algorithm>
#include <type_traits>

#include "mttkrp.cuh"
#include "running_sum.cuh"
#include "vector_pack.cuh"

namespace spt::cuda {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr uint32_t kNoRow = 0xffffffffu;
constexpr int kBlockThreads = 256;

template <typename T>
struct MttkrpArgs {
  uint64_t nnz;
  uint64_t chunk;  // nonzeros per warp, a multiple of 32
  const uint32_t* ind;
  const T* values;
  T* out;
  uint32_t order;
  uint32_t mode;
  uint32_t rank;
  const T* factors[kMaxOrder];
};

template <typename T, int V, int C>
__device__ __forceinline__ void flush(T* out, uint32_t units, uint32_t row, uint32_t unit0, int stride,
                                      const Pack<RunningSum<T>, V> (&acc)[C]) {
  T* o = out + uint64_t(row) * units * V;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const uint32_t u = unit0 + c * stride;
    if (u < units) {
      Pack<T, V> x;
#pragma unroll
      for (int e = 0; e < V; ++e) x.v[e] = rounded(acc[c].v[e]);
      atomic_add_pack<T, V>(o + uint64_t(u) * V, x);
    }
  }
}

template <typename T, int V, int C>
__device__ __forceinline__ void multiply_row(Pack<T, V> (&prod)[C], const T* f, uint32_t units, uint32_t unit0,
                                             int stride) {
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const uint32_t u = unit0 + c * stride;
    if (u < units) {
      const Pack<T, V> g = *reinterpret_cast<const Pack<T, V>*>(f + uint64_t(u) * V);
#pragma unroll
      for (int e = 0; e < V; ++e) prod[c].v[e] *= g.v[e];
    }
  }
}

// N = the order when fixed at compile time (indices staged in registers and
// passed by shuffles); N = 0 handles any order (indices read by each team
// from global memory, broadcast within the team). V columns per vector
// ("unit"; the rank is a multiple of V), L lanes per team, C units per lane.
//
// Resident blocks per SM the kernel is compiled for: float32 with one unit
// per lane 6 (caps registers at 40: the compensated running sum's second
// register per column would otherwise cost a resident block, and this
// gather-bound kernel lives on occupancy); otherwise 4 (64 registers;
// wider sums spill at 40).
template <typename T, int C>
constexpr int kCooBlocksPerSm = sizeof(T) == 4 && C == 1 ? 6 : 4;

template <typename T, int N, int V, int L, int C>
__global__ void __launch_bounds__(kBlockThreads, kCooBlocksPerSm<T, C>) mttkrp_coo_kernel(const MttkrpArgs<T> a) {
  const int lane = threadIdx.x & 31;
  const uint64_t warp = (uint64_t(blockIdx.x) * kBlockThreads + threadIdx.x) >> 5;
  const uint64_t begin = warp * a.chunk;
  if (begin >= a.nnz) return;  // uniform per warp
  const uint64_t end = min(begin + a.chunk, a.nnz);
  const int team_first = (lane / L) * L;
  const uint32_t units = a.rank / V;
  const uint32_t unit0 = blockIdx.y * (L * C) + (lane % L);
  const uint32_t* mode_ind = a.ind + uint64_t(a.mode) * a.nnz;

  Pack<RunningSum<T>, V> acc[C];
#pragma unroll
  for (int c = 0; c < C; ++c)
#pragma unroll
    for (int e = 0; e < V; ++e) acc[c].v[e] = T(0);
  uint32_t acc_row = kNoRow;

  for (uint64_t base = begin; base < end; base += 32) {
    const uint64_t k = base + lane;
    const bool valid = k < end;
    const T my_val = valid ? a.values[k] : T(0);
    const uint32_t my_row = valid ? mode_ind[k] : kNoRow;
    uint32_t my_idx[N > 0 ? N : 1];
    if constexpr (N > 0) {
#pragma unroll
      for (int m = 0; m < N; ++m) my_idx[m] = (valid && m != int(a.mode)) ? a.ind[uint64_t(m) * a.nnz + k] : 0u;
    }
#pragma unroll 4
    for (int s = 0; s < L; ++s) {
      const int src = team_first + s;
      const T v = __shfl_sync(kFullMask, my_val, src);
      const uint32_t row = __shfl_sync(kFullMask, my_row, src);
      Pack<T, V> prod[C];
#pragma unroll
      for (int c = 0; c < C; ++c)
#pragma unroll
        for (int e = 0; e < V; ++e) prod[c].v[e] = v;
      if constexpr (N > 0) {
#pragma unroll
        for (int m = 0; m < N; ++m) {
          const uint32_t i = __shfl_sync(kFullMask, my_idx[m], src);  // every lane shuffles
          if (m == int(a.mode) || row == kNoRow) continue;
          multiply_row<T, V, C>(prod, a.factors[m] + uint64_t(i) * a.rank, units, unit0, L);
        }
      } else {
        if (row != kNoRow) {
          const uint64_t kk = base + src;
          for (uint32_t m = 0; m < a.order; ++m) {
            if (m == a.mode) continue;
            const uint32_t i = __ldg(a.ind + uint64_t(m) * a.nnz + kk);
            multiply_row<T, V, C>(prod, a.factors[m] + uint64_t(i) * a.rank, units, unit0, L);
          }
        }
      }
      if (row == kNoRow) continue;
      if (row != acc_row) {
        if (acc_row != kNoRow) flush<T, V, C>(a.out, units, acc_row, unit0, L, acc);
        acc_row = row;
#pragma unroll
        for (int c = 0; c < C; ++c)
#pragma unroll
          for (int e = 0; e < V; ++e) acc[c].v[e] = prod[c].v[e];
      } else {
#pragma unroll
        for (int c = 0; c < C; ++c)
#pragma unroll
          for (int e = 0; e < V; ++e) acc[c].v[e] += prod[c].v[e];
      }
    }
  }
  if (acc_row != kNoRow) flush<T, V, C>(a.out, units, acc_row, unit0, L, acc);
}

template <typename T, int N, int V>
cudaError_t launch_for_order(const MttkrpArgs<T>& a, int lanes, int columns, dim3 grid, cudaStream_t stream) {
  const dim3 block(kBlockThreads);
#define SPT_LAUNCH(L, C)                                                      \
  if (lanes == L && columns == C) {                                           \
    mttkrp_coo_kernel<T, N, V, L, C><<<grid, block, 0, stream>>>(a);          \
    return cudaGetLastError();                                                \
  }
  SPT_LAUNCH(1, 1)
  SPT_LAUNCH(2, 1)
  SPT_LAUNCH(4, 1)
  SPT_LAUNCH(8, 1)
  SPT_LAUNCH(16, 1)
  SPT_LAUNCH(32, 1)
  SPT_LAUNCH(32, 2)
  if constexpr (V == 1) {  // wide vectors stop at 2 units per lane (registers)
    SPT_LAUNCH(32, 4)
  }
#undef SPT_LAUNCH
  return cudaErrorInvalidValue;
}

template <typename T, int N>
cudaError_t launch_for_width(const MttkrpArgs<T>& a, int vector, int lanes, int columns, dim3 grid,
                             cudaStream_t stream) {
  constexpr int kWide = std::is_same_v<T, float> ? 4 : 2;
  if (vector == kWide) return launch_for_order<T, N, kWide>(a, lanes, columns, grid, stream);
  return launch_for_order<T, N, 1>(a, lanes, columns, grid, stream);
}

}  // namespace

template <typename T>
cudaError_t launch_mttkrp_coo(const DeviceCooRef& x, const T* const* factors, uint32_t mode, uint32_t rank, T* out,
                              int multiprocessors, cudaStream_t stream) {
  if (x.order < 2 || x.order > kMaxOrder || mode >= x.order || rank == 0) return cudaErrorInvalidValue;
  if (x.nnz == 0) return cudaSuccess;
  MttkrpArgs<T> a{};
  a.nnz = x.nnz;
  a.ind = x.ind;
  a.values = static_cast<const T*>(x.values);
  a.out = out;
  a.order = x.order;
  a.mode = mode;
  a.rank = rank;
  for (uint32_t m = 0; m < x.order; ++m) a.factors[m] = factors[m];

  // Vector width: 16-byte accesses when the rank allows (rows stay 16-byte
  // aligned: every device row starts at a multiple of rank elements of a
  // 256-byte aligned block). Team width: the number of vectors ("units") per
  // row rounded up to a power of two (<= 32); more units take 2 or 4 per
  // lane, then more rank blocks.
  const int wide = sizeof(T) == 4 ? 4 : 2;
  const int vector = rank % wide == 0 ? wide : 1;
  const uint32_t units = rank / vector;
  int lanes = 1;
  while (lanes < 32 && uint32_t(lanes) < units) lanes *= 2;
  const int columns = units <= 32 ? 1 : (units <= 64 || vector > 1) ? 2 : 4;
  const uint32_t block_width = uint32_t(lanes * columns);
  const uint32_t rank_blocks = (units + block_width - 1) / block_width;

  // About 4 waves of resident warps (64 per multiprocessor); chunks of at
  // least 32 nonzeros, longer chunks for big tensors (longer output runs,
  // fewer atomics).
  const uint64_t target_warps = uint64_t(std::max(multiprocessors, 1)) * 64 * 4;
  uint64_t chunk = (x.nnz + target_warps - 1) / target_warps;
  chunk = std::max<uint64_t>(32, (chunk + 31) / 32 * 32);
  a.chunk = chunk;
  const uint64_t warps = (x.nnz + chunk - 1) / chunk;
  const uint64_t blocks = (warps * 32 + kBlockThreads - 1) / kBlockThreads;
  if (blocks > 0x7fffffffull || rank_blocks > 65535u) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(blocks), rank_blocks);

  switch (x.order) {
    case 2: return launch_for_width<T, 2>(a, vector, lanes, columns, grid, stream);
    case 3: return launch_for_width<T, 3>(a, vector, lanes, columns, grid, stream);
    case 4: return launch_for_width<T, 4>(a, vector, lanes, columns, grid, stream);
    case 5: return launch_for_width<T, 5>(a, vector, lanes, columns, grid, stream);
    case 6: return launch_for_width<T, 6>(a, vector, lanes, columns, grid, stream);
    default: return launch_for_width<T, 0>(a, vector, lanes, columns, grid, stream);
  }
}

namespace {

// One warp per nonzero (grid-stride), lanes over the rank: each lane keeps
// the double sum of its columns' terms; a warp sum and one atomic per warp
// at the end.
template <typename T>
__global__ void __launch_bounds__(kBlockThreads) coo_inner_ktensor_kernel(DeviceCooRef x, MttkrpArgs<T> a,
                                                                         const T* lambda, double* out) {
  const int lane = threadIdx.x & 31;
  const uint64_t warps = (uint64_t(gridDim.x) * kBlockThreads) >> 5;
  const T* values = static_cast<const T*>(x.values);
  double acc = 0.0;
  for (uint64_t k = (uint64_t(blockIdx.x) * kBlockThreads + threadIdx.x) >> 5; k < x.nnz; k += warps) {
    const double v = static_cast<double>(values[k]);
    double sum = 0.0;
    for (uint32_t r = lane; r < a.rank; r += 32) {
      double term = static_cast<double>(lambda[r]);
      for (uint32_t m = 0; m < x.order; ++m)
        term *= static_cast<double>(a.factors[m][uint64_t(__ldg(x.ind + uint64_t(m) * x.nnz + k)) * a.rank + r]);
      sum += term;
    }
    acc += v * sum;
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor_sync(kFullMask, acc, offset);
  if (lane == 0 && acc != 0.0) atomicAdd(out, acc);
}

}  // namespace

template <typename T>
cudaError_t launch_coo_inner_ktensor(const DeviceCooRef& x, const T* const* factors, const T* lambda, uint32_t rank,
                                     double* out, int multiprocessors, cudaStream_t stream) {
  if (x.nnz == 0 || rank == 0) return cudaSuccess;
  if (x.order > kMaxOrder) return cudaErrorInvalidValue;
  MttkrpArgs<T> a{};
  a.rank = rank;
  a.order = x.order;
  for (uint32_t m = 0; m < x.order; ++m) a.factors[m] = factors[m];
  const uint64_t wanted = (x.nnz * 32 + kBlockThreads - 1) / kBlockThreads;
  const uint64_t blocks = std::max<uint64_t>(1, std::min<uint64_t>(wanted, uint64_t(std::max(multiprocessors, 1)) * 16));
  coo_inner_ktensor_kernel<T><<<static_cast<unsigned>(blocks), kBlockThreads, 0, stream>>>(x, a, lambda, out);
  return cudaGetLastError();
}

template cudaError_t launch_coo_inner_ktensor<float>(const DeviceCooRef&, const float* const*, const float*, uint32_t,
                                                     double*, int, cudaStream_t);
template cudaError_t launch_coo_inner_ktensor<double>(const DeviceCooRef&, const double* const*, const double*,
                                                      uint32_t, double*, int, cudaStream_t);

template cudaError_t launch_mttkrp_coo<float>(const DeviceCooRef&, const float* const*, uint32_t, uint32_t, float*,
                                              int, cudaStream_t);
template cudaError_t launch_mttkrp_coo<double>(const DeviceCooRef&, const double* const*, uint32_t, uint32_t,
                                               double*, int, cudaStream_t);

}  // namespace spt::cuda
