// GPU SpTTM kernels (coalesced, rank-blocked, shared-memory) and SsTTM;
// contracts in ttm.cuh.
//
// Every SpTTM kernel walks the fibers with a grid-stride loop (64-bit
// fiber and nonzero offsets, so any nnz works), accumulates a column of a
// fiber in a register in nonzero order and writes it once: the result does
// not depend on the launch shape, and matches the CPU kernel's summation
// order. The kernels differ in how threads map to (fiber, column) and in
// how U and the nonzeros are read, as in the dissertation's §7.3.
#include "ttm.cuh"
#include "vector_pack.cuh"

namespace spt::cuda {

// The rule. The dissertation found the shared-memory kernel best on
// average over its tensors, with rank blocking paying only at small R; our
// kernels did not follow that average, so the rule follows our
// measurements (both in docs/design-measurements.md, "choose_ttm_variant"):
//  - skewed fibers in a moderate number of fibers (the longest at least 64
//    nonzeros and 64 times the mean, at most 300,000 fibers): the
//    shared-memory kernel (it stages a batch of fibers' nonzeros and sweeps
//    the columns with the whole block, so a long fiber does not stall a
//    warp per fiber); with over a million short fibers the staging lost to
//    rank blocking;
//  - long fibers at small R (mean >= 64 and R <= 32, or mean >= 12 and
//    R <= 16): the coalesced kernel (a warp per fiber, lanes over the
//    columns);
//  - everything else (short fibers, wider ranks): rank blocking (aligned
//    16-byte loads of 4 columns per thread).
// The dissertation's naive and fine-grained kernels won only on tiny
// tensors (microsecond kernels), so they are not built (git history).
// bench_gpu_ttm prints every kernel next to the rule's pick.
TtmVariant choose_ttm_variant(uint64_t rank, uint64_t nfibers, double mean_fiber_length, uint64_t max_fiber_length) {
  if (nfibers == 0) return TtmVariant::rank_blocked;
  const double mean = mean_fiber_length > 1.0 ? mean_fiber_length : 1.0;
  const bool skewed = max_fiber_length >= 64 && double(max_fiber_length) >= 64.0 * mean && nfibers <= 300000;
  if (skewed) return TtmVariant::shared;
  if ((mean >= 64.0 && rank <= 32) || (mean >= 12.0 && rank <= 16)) return TtmVariant::coalesced;
  return TtmVariant::rank_blocked;
}

namespace {

constexpr int kThreads = 256;  // threads per block of every kernel

template <typename T>
struct TtmArgs {
  uint64_t nfibers;
  const uint64_t* __restrict__ fptr;
  const uint32_t* __restrict__ ind;
  const T* __restrict__ val;
  const T* __restrict__ u;
  uint64_t ldu;
  uint32_t rank;
  T* __restrict__ y;
  uint64_t ldy;
};

// Coalesced (§7.3.3): block (W lanes along x over columns, 256/W fibers
// along y), W = min(32, R rounded up to a power of two): consecutive lanes
// read consecutive columns of one U row. A lane computes columns x, x + W,
// ... of its fiber.
template <typename T>
__global__ void __launch_bounds__(kThreads) ttm_coalesced_kernel(TtmArgs<T> a) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.y;
  for (uint64_t f = uint64_t(blockIdx.x) * blockDim.y + threadIdx.y; f < a.nfibers; f += stride) {
    const uint64_t begin = a.fptr[f], end = a.fptr[f + 1];
    for (uint32_t r = threadIdx.x; r < a.rank; r += blockDim.x) {
      T acc = T(0);
      for (uint64_t k = begin; k < end; ++k) acc += a.val[k] * a.u[uint64_t(a.ind[k]) * a.ldu + r];
      a.y[f * a.ldy + r] = acc;
    }
  }
}

// Rank-blocked (§7.3.4, "register blocking"): a thread owns kTtmRankBlock
// consecutive columns (registers), read with aligned 16-byte vector loads;
// block (P lanes over column blocks, 256/P fibers), P = min(32, number of
// column blocks rounded up to a power of two). The column-block loop is
// outside the nonzero loop, so a fiber's indices and values are re-read per
// block of columns (the trade-off the dissertation describes). Reads and
// writes whole blocks of the padded leading dimension.
template <typename T>
__global__ void __launch_bounds__(kThreads) ttm_rank_blocked_kernel(TtmArgs<T> a) {
  constexpr int V = 16 / sizeof(T);  // values per vector load
  constexpr int L = kTtmRankBlock / V;
  static_assert(L * V == kTtmRankBlock, "the rank block must be whole vectors");
  using P = Pack<T, V>;
  const uint64_t column_blocks = a.ldu / kTtmRankBlock;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.y;
  for (uint64_t f = uint64_t(blockIdx.x) * blockDim.y + threadIdx.y; f < a.nfibers; f += stride) {
    const uint64_t begin = a.fptr[f], end = a.fptr[f + 1];
    for (uint64_t c = threadIdx.x; c < column_blocks; c += blockDim.x) {
      T acc[kTtmRankBlock];
#pragma unroll
      for (int e = 0; e < int(kTtmRankBlock); ++e) acc[e] = T(0);
      for (uint64_t k = begin; k < end; ++k) {
        const T v = a.val[k];
        const P* src = reinterpret_cast<const P*>(a.u + uint64_t(a.ind[k]) * a.ldu + c * kTtmRankBlock);
#pragma unroll
        for (int l = 0; l < L; ++l) {
          const P w = src[l];
#pragma unroll
          for (int e = 0; e < V; ++e) acc[l * V + e] += v * w.v[e];
        }
      }
      P* dst = reinterpret_cast<P*>(a.y + f * a.ldy + c * kTtmRankBlock);
#pragma unroll
      for (int l = 0; l < L; ++l) {
        P o;
#pragma unroll
        for (int e = 0; e < V; ++e) o.v[e] = acc[l * V + e];
        dst[l] = o;
      }
    }
  }
}

// Shared memory (§7.3.5): a block takes a batch of 256/W consecutive fibers
// (thread layout as the coalesced kernel) and walks the batch's nonzeros in
// tiles of 256: the whole block loads a tile's (index, value) pairs into
// shared memory with coalesced reads, then every lane adds the tile's part
// of its own fiber for its column. Columns beyond W are further sweeps over
// the batch. All loop bounds around the barriers are uniform per block.
template <typename T>
__global__ void __launch_bounds__(kThreads) ttm_shared_kernel(TtmArgs<T> a) {
  __shared__ uint32_t tile_ind[kThreads];
  __shared__ T tile_val[kThreads];
  const uint32_t fibers_per_batch = blockDim.y;
  const uint32_t tid = threadIdx.y * blockDim.x + threadIdx.x;
  const uint64_t batches = (a.nfibers + fibers_per_batch - 1) / fibers_per_batch;
  for (uint64_t batch = blockIdx.x; batch < batches; batch += gridDim.x) {
    const uint64_t f0 = batch * fibers_per_batch;
    const uint64_t f1 = f0 + fibers_per_batch < a.nfibers ? f0 + fibers_per_batch : a.nfibers;
    const uint64_t f = f0 + threadIdx.y;
    const bool active = f < f1;
    const uint64_t my_begin = active ? a.fptr[f] : 0;
    const uint64_t my_end = active ? a.fptr[f + 1] : 0;
    const uint64_t batch_begin = a.fptr[f0], batch_end = a.fptr[f1];
    for (uint32_t r0 = 0; r0 < a.rank; r0 += blockDim.x) {
      const uint32_t r = r0 + threadIdx.x;
      T acc = T(0);
      for (uint64_t t0 = batch_begin; t0 < batch_end; t0 += kThreads) {
        __syncthreads();  // the previous tile (or batch) has been consumed
        if (t0 + tid < batch_end) {
          tile_ind[tid] = a.ind[t0 + tid];
          tile_val[tid] = a.val[t0 + tid];
        }
        __syncthreads();
        if (r < a.rank) {
          const uint64_t lo = my_begin > t0 ? my_begin : t0;
          const uint64_t tile_end = t0 + kThreads;
          const uint64_t hi = my_end < tile_end ? my_end : tile_end;
          for (uint64_t k = lo; k < hi; ++k) {
            const uint32_t j = static_cast<uint32_t>(k - t0);
            acc += tile_val[j] * a.u[uint64_t(tile_ind[j]) * a.ldu + r];
          }
        }
      }
      if (active && r < a.rank) a.y[f * a.ldy + r] = acc;
    }
  }
}

// SsTTM (§7.4): threads_per_group (a power of two <= 256) threads per
// group, 256 / threads_per_group groups per block; a thread computes output
// elements lane, lane + threads_per_group, ... of its group's block, each
// summed over the group's fibers in order (as the CPU kernel).
template <typename T>
struct ScooArgs {
  uint64_t ngroups;
  uint64_t a_len, b_len;
  const uint64_t* __restrict__ gptr;
  const uint64_t* __restrict__ perm;
  const uint32_t* __restrict__ ind;
  const T* __restrict__ in;
  const T* __restrict__ u;
  uint64_t ldu;
  uint32_t rank;
  T* __restrict__ out;
  uint32_t threads_per_group;
};

template <typename T>
__global__ void __launch_bounds__(kThreads) scoo_ttm_kernel(ScooArgs<T> a) {
  const uint64_t in_block = a.a_len * a.b_len;
  const uint64_t out_block = in_block * a.rank;
  const uint32_t slot = threadIdx.x / a.threads_per_group;
  const uint32_t lane = threadIdx.x % a.threads_per_group;
  const uint32_t groups_per_block = blockDim.x / a.threads_per_group;
  const uint64_t stride = uint64_t(gridDim.x) * groups_per_block;
  for (uint64_t g = uint64_t(blockIdx.x) * groups_per_block + slot; g < a.ngroups; g += stride) {
    const uint64_t begin = a.gptr[g], end = a.gptr[g + 1];
    T* dst = a.out + g * out_block;
    for (uint64_t e = lane; e < out_block; e += a.threads_per_group) {
      // e = i_a + A (r + R i_b): the input element i_a + A i_b times U(., r).
      const uint64_t i_a = e % a.a_len;
      const uint64_t q = e / a.a_len;
      const uint32_t r = static_cast<uint32_t>(q % a.rank);
      const uint64_t i_b = q / a.rank;
      const uint64_t offset = i_a + a.a_len * i_b;
      T acc = T(0);
      for (uint64_t k = begin; k < end; ++k) {
        const uint64_t fiber = a.perm ? a.perm[k] : k;
        acc += a.in[fiber * in_block + offset] * a.u[uint64_t(a.ind[fiber]) * a.ldu + r];
      }
      dst[e] = acc;
    }
  }
}

uint32_t pow2_at_least(uint64_t n, uint32_t cap) {
  uint32_t p = 1;
  while (p < n && p < cap) p <<= 1;
  return p;
}

unsigned grid_for(uint64_t units, int multiprocessors) {
  const uint64_t cap = uint64_t(multiprocessors > 0 ? multiprocessors : 1) * 32;
  const uint64_t g = units < cap ? units : cap;
  return static_cast<unsigned>(g > 0 ? g : 1);
}

}  // namespace

template <typename T>
cudaError_t launch_ttm(TtmVariant variant, const DeviceTtmFibersRef& x, const T* u, uint64_t ldu, uint32_t rank, T* y,
                       uint64_t ldy, int multiprocessors, cudaStream_t stream) {
  if (rank == 0 || ldu != ttm_padded_ld(rank) || ldy != ldu) return cudaErrorInvalidValue;
  if (x.nfibers == 0) return cudaSuccess;
  TtmArgs<T> a{x.nfibers, x.fiber_ptr, x.ind, static_cast<const T*>(x.values), u, ldu, rank, y, ldy};
  switch (variant) {
    case TtmVariant::coalesced:
    case TtmVariant::shared: {
      const uint32_t w = pow2_at_least(rank, 32);
      const dim3 block(w, kThreads / w);
      const unsigned grid = grid_for((x.nfibers + block.y - 1) / block.y, multiprocessors);
      if (variant == TtmVariant::coalesced)
        ttm_coalesced_kernel<T><<<grid, block, 0, stream>>>(a);
      else
        ttm_shared_kernel<T><<<grid, block, 0, stream>>>(a);
      break;
    }
    case TtmVariant::rank_blocked: {
      const uint32_t p = pow2_at_least(ldu / kTtmRankBlock, 32);
      const dim3 block(p, kThreads / p);
      const unsigned grid = grid_for((x.nfibers + block.y - 1) / block.y, multiprocessors);
      ttm_rank_blocked_kernel<T><<<grid, block, 0, stream>>>(a);
      break;
    }
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_scoo_ttm(const DeviceScooGroupsRef& y, const T* u, uint64_t ldu, uint32_t rank, T* out,
                            int multiprocessors, cudaStream_t stream) {
  if (rank == 0 || ldu < rank || y.a_len == 0 || y.b_len == 0) return cudaErrorInvalidValue;
  if (y.ngroups == 0) return cudaSuccess;
  const uint64_t out_block = y.a_len * rank * y.b_len;
  const uint32_t threads_per_group = pow2_at_least(out_block, kThreads);
  const uint32_t groups_per_block = kThreads / threads_per_group;
  ScooArgs<T> a{y.ngroups, y.a_len, y.b_len, y.group_ptr, y.perm, y.ind, static_cast<const T*>(y.values),
                u, ldu, rank, out, threads_per_group};
  const unsigned grid = grid_for((y.ngroups + groups_per_block - 1) / groups_per_block, multiprocessors);
  scoo_ttm_kernel<T><<<grid, kThreads, 0, stream>>>(a);
  return cudaGetLastError();
}

template cudaError_t launch_ttm<float>(TtmVariant, const DeviceTtmFibersRef&, const float*, uint64_t, uint32_t, float*,
                                       uint64_t, int, cudaStream_t);
template cudaError_t launch_ttm<double>(TtmVariant, const DeviceTtmFibersRef&, const double*, uint64_t, uint32_t,
                                        double*, uint64_t, int, cudaStream_t);
template cudaError_t launch_scoo_ttm<float>(const DeviceScooGroupsRef&, const float*, uint64_t, uint32_t, float*, int,
                                            cudaStream_t);
template cudaError_t launch_scoo_ttm<double>(const DeviceScooGroupsRef&, const double*, uint64_t, uint32_t, double*,
                                             int, cudaStream_t);

}  // namespace spt::cuda
