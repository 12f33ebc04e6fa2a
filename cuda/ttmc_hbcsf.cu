// TTMc on a B-CSF / HB-CSF tree by chained TTMs fused per fiber
// (ttmc_hbcsf.cuh says what it computes).
//
// Mapping: one warp per task (a COO nonzero, a CSL slice, a B-CSF work
// unit), 256-thread blocks, grid-stride over the tasks with the grid capped
// at 32 blocks per multiprocessor (as the MTTKRP kernels). The warp's 32
// lanes cover the P_n output columns: lane i takes columns i, i + 32, ...
//
// Column digits: output column c is, in mixed radix, the digits of the
// other modes ascending ("positions" j = 0..order-2; position 0, the lowest
// other mode, fastest). Each lane finds the digits of its first column once
// and steps to the next (c + 32) by a mixed-radix addition of the digits of
// 32 (a compare and a subtraction per position, no division). The factor
// row of each position is resolved once per task (a row pointer), so a
// column costs order-1 loads and multiplies. The B-CSF group's leaf
// position reads t (the fiber's TTM, in shared memory) instead of a factor
// row.
//
// Per task, per lane: when P_n <= 32 x kRegCols the columns' sums stay in
// registers over the task's nonzeros / fiber segments and are written once;
// wider rows are updated in place per nonzero / segment (the same lane
// always owns the same columns of the task's row, so a plain
// read-modify-write is race-free within the task). Writers: a COO or CSL
// row has one task (stored); a B-CSF unit of an unsplit slice is its row's
// only task (stored / updated in place); units of a split slice add with
// atomicAdd. The groups own disjoint rows (src/core/hbcsf.hpp).
//
// The leaf TTM t(r) = sum_z val[z] U_leaf(leaf_ind[z], r): the warp splits
// into 32 / L lane groups (L = R_leaf rounded up to a power of two, at
// most 32) that take the segment's leaves round robin, L lanes over r; the
// groups' sums meet through shuffles. Short ranks so still keep the whole
// warp busy and the chains of dependent loads short.
#include <algorithm>

#include "ttmc_hbcsf.cuh"

namespace spt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr uint32_t kMaxPositions = kHbcsfMaxOrder - 1;
// Columns per lane kept in registers (rows of up to 512 columns: order 3
// up to rank 22, order 4 up to rank 8). 16 rather than 8: ptxas then gives
// the register kernels 64 (float) / 80 (double) registers instead of 48 /
// 64, and rows of 257..512 columns avoid a read-modify-write of the output
// row per fiber segment (bench_gpu_tucker times the kernels).
constexpr uint32_t kRegCols = 16;
// Default dynamic shared memory a block may take without opting in.
constexpr size_t kSharedLimit = 48 * 1024;

template <typename T>
struct TtmcArgs {
  uint32_t order;
  uint32_t positions;  // order - 1: the other modes, ascending
  uint32_t width;      // P_n
  T* out;
  // By position (other modes ascending).
  const T* F[kMaxPositions];
  uint32_t R[kMaxPositions];
  uint32_t inc[kMaxPositions];  // the digits of 32
  uint32_t level_pos[kHbcsfMaxOrder];  // level -> position (level 0 unused)
  // COO group (indices by position).
  uint64_t coo_nnz;
  const uint32_t* coo_row;
  const uint32_t* coo_ind[kMaxPositions];
  const T* coo_val;
  // CSL group (indices by position).
  uint64_t csl_slices;
  const uint32_t* csl_slice_ind;
  const uint32_t* csl_slice_ptr;
  const uint32_t* csl_ind[kMaxPositions];
  const T* csl_val;
  // B-CSF group (by level, as the format).
  uint64_t units;
  const uint32_t* node_ind[kHbcsfMaxOrder];     // [l - 1]
  const uint32_t* node_parent[kHbcsfMaxOrder];  // [l - 2]
  const uint32_t* segment_ptr;
  const uint32_t* leaf_ind;
  const T* bcsf_val;
  const uint32_t* unit_row;
  const uint32_t* unit_segment_ptr;
  const uint8_t* unit_split;
  const T* leaf_factor;
  uint32_t leaf_rank;
  uint32_t leaf_lanes;  // L: lanes over r in the leaf TTM (power of two <= 32)
};

// The digits of column c (< 32) by position.
template <typename T>
__device__ __forceinline__ void first_digits(const TtmcArgs<T>& a, uint32_t c, uint32_t (&d)[kMaxPositions]) {
  uint32_t rest = c;
#pragma unroll
  for (uint32_t j = 0; j < kMaxPositions; ++j) {
    d[j] = 0;
    if (j < a.positions) {
      d[j] = rest % a.R[j];
      rest /= a.R[j];
    }
  }
}

// d += the digits of 32 (mixed radix, position 0 fastest; a carry out of
// the top position means the column passed the width: the caller stops).
template <typename T>
__device__ __forceinline__ void step_digits(const TtmcArgs<T>& a, uint32_t (&d)[kMaxPositions]) {
  uint32_t carry = 0;
#pragma unroll
  for (uint32_t j = 0; j < kMaxPositions; ++j) {
    if (j < a.positions) {
      const uint32_t v = d[j] + a.inc[j] + carry;
      carry = v >= a.R[j] ? 1u : 0u;
      d[j] = carry ? v - a.R[j] : v;
    }
  }
}

// prod_j base[j][d[j]] (base: a row per position; generic loads: the leaf
// position may point into shared memory).
template <typename T>
__device__ __forceinline__ T kron_entry(const TtmcArgs<T>& a, const T* const (&base)[kMaxPositions],
                                        const uint32_t (&d)[kMaxPositions]) {
  T p = base[0][d[0]];
#pragma unroll
  for (uint32_t j = 1; j < kMaxPositions; ++j)
    if (j < a.positions) p *= base[j][d[j]];
  return p;
}

// How a task's row is written from the per-lane column loop.
enum class Write { store, update, atomic };

template <typename T>
__device__ __forceinline__ void write_value(T* p, T v, Write how) {
  if (how == Write::store) *p = v;
  else if (how == Write::update) *p += v;
  else atomicAdd(p, v);
}

// Adds scale x kron(base rows) into the lane's columns: into acc (kRegs) or
// straight into the row `dst` (written as `how`).
template <typename T, bool kRegs>
__device__ __forceinline__ void add_kron(const TtmcArgs<T>& a, const T* const (&base)[kMaxPositions], T scale,
                                         const uint32_t (&first)[kMaxPositions], uint32_t lane, T (&acc)[kRegCols],
                                         T* dst, Write how) {
  uint32_t d[kMaxPositions];
#pragma unroll
  for (uint32_t j = 0; j < kMaxPositions; ++j) d[j] = first[j];
  if constexpr (kRegs) {
#pragma unroll
    for (uint32_t k = 0; k < kRegCols; ++k) {
      if (lane + 32 * k >= a.width) break;  // and every later column
      acc[k] += scale * kron_entry(a, base, d);
      step_digits(a, d);
    }
  } else {
    for (uint32_t c = lane; c < a.width; c += 32) {
      write_value(dst + c, scale * kron_entry(a, base, d), how);
      step_digits(a, d);
    }
  }
}

// Writes the register sums of a task into its row.
template <typename T>
__device__ __forceinline__ void flush(const TtmcArgs<T>& a, const T (&acc)[kRegCols], uint32_t lane, T* dst,
                                      Write how) {
#pragma unroll
  for (uint32_t k = 0; k < kRegCols; ++k) {
    if (lane + 32 * k >= a.width) break;
    write_value(dst + lane + 32 * k, acc[k], how);
  }
}

// COO group: warp k takes nonzero k (its row has no other writer: stored).
template <typename T>
__global__ void __launch_bounds__(kThreads) ttmc_coo_kernel(const TtmcArgs<T> a) {
  const uint32_t lane = threadIdx.x % 32;
  uint32_t first[kMaxPositions];
  first_digits(a, lane, first);
  const uint64_t warps = uint64_t(gridDim.x) * kWarpsPerBlock;
  for (uint64_t k = (uint64_t(blockIdx.x) * kThreads + threadIdx.x) / 32; k < a.coo_nnz; k += warps) {
    const T* base[kMaxPositions];
#pragma unroll
    for (uint32_t j = 0; j < kMaxPositions; ++j)
      base[j] = j < a.positions ? a.F[j] + size_t(__ldg(a.coo_ind[j] + k)) * a.R[j] : nullptr;
    T* dst = a.out + size_t(__ldg(a.coo_row + k)) * a.width;
    T unused[kRegCols];
    add_kron<T, false>(a, base, __ldg(a.coo_val + k), first, lane, unused, dst, Write::store);
  }
}

// CSL group: warp s takes slice s, its nonzeros one after the other.
template <typename T, bool kRegs>
__global__ void __launch_bounds__(kThreads) ttmc_csl_kernel(const TtmcArgs<T> a) {
  const uint32_t lane = threadIdx.x % 32;
  uint32_t first[kMaxPositions];
  first_digits(a, lane, first);
  const uint64_t warps = uint64_t(gridDim.x) * kWarpsPerBlock;
  for (uint64_t s = (uint64_t(blockIdx.x) * kThreads + threadIdx.x) / 32; s < a.csl_slices; s += warps) {
    const uint32_t zb = __ldg(a.csl_slice_ptr + s), ze = __ldg(a.csl_slice_ptr + s + 1);
    T* dst = a.out + size_t(__ldg(a.csl_slice_ind + s)) * a.width;
    T acc[kRegCols];
#pragma unroll
    for (uint32_t k = 0; k < kRegCols; ++k) acc[k] = T(0);
    for (uint32_t z = zb; z < ze; ++z) {
      const T* base[kMaxPositions];
#pragma unroll
      for (uint32_t j = 0; j < kMaxPositions; ++j)
        base[j] = j < a.positions ? a.F[j] + size_t(__ldg(a.csl_ind[j] + z)) * a.R[j] : nullptr;
      // The zeroed row, one writer: the first nonzero may store.
      add_kron<T, kRegs>(a, base, __ldg(a.csl_val + z), first, lane, acc, dst,
                         z == zb ? Write::store : Write::update);
    }
    if constexpr (kRegs) flush(a, acc, lane, dst, Write::store);
  }
}

// B-CSF group: warp u takes unit u; per fiber segment the leaf TTM t into
// the warp's shared array, then the Kronecker product of t with the
// ancestors' factor rows into the row (see the top of the file).
template <typename T, bool kRegs>
__global__ void __launch_bounds__(kThreads) ttmc_bcsf_kernel(const TtmcArgs<T> a) {
  extern __shared__ __align__(16) unsigned char shared_raw[];
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t warp_in_block = threadIdx.x / 32;
  T* t = reinterpret_cast<T*>(shared_raw) + size_t(warp_in_block) * a.leaf_rank;
  uint32_t first[kMaxPositions];
  first_digits(a, lane, first);
  const uint32_t L = a.leaf_lanes;
  const uint32_t group = lane / L, sub = lane % L, groups = 32 / L;
  const uint32_t leaf_level = a.order - 1;
  const uint64_t warps = uint64_t(gridDim.x) * (blockDim.x / 32);
  for (uint64_t u = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; u < a.units; u += warps) {
    const uint32_t gb = __ldg(a.unit_segment_ptr + u), ge = __ldg(a.unit_segment_ptr + u + 1);
    T* dst = a.out + size_t(__ldg(a.unit_row + u)) * a.width;
    const bool split = __ldg(a.unit_split + u) != 0;
    T acc[kRegCols];
#pragma unroll
    for (uint32_t k = 0; k < kRegCols; ++k) acc[k] = T(0);
    for (uint32_t g = gb; g < ge; ++g) {
      // t = the segment's leaf TTM (uniform loop bounds: every lane reaches
      // the shuffles).
      const uint32_t zb = __ldg(a.segment_ptr + g), ze = __ldg(a.segment_ptr + g + 1);
      for (uint32_t r0 = 0; r0 < a.leaf_rank; r0 += L) {
        const uint32_t r = r0 + sub;
        T s = T(0);
        if (r < a.leaf_rank) {
#pragma unroll 4
          for (uint32_t z = zb + group; z < ze; z += groups)
            s += __ldg(a.bcsf_val + z) * __ldg(a.leaf_factor + size_t(__ldg(a.leaf_ind + z)) * a.leaf_rank + r);
        }
        for (uint32_t offset = L; offset < 32; offset <<= 1) s += __shfl_xor_sync(0xffffffffu, s, offset);
        if (group == 0 && r < a.leaf_rank) t[r] = s;
      }
      __syncwarp();
      // The rows by level: the ancestors (levels order-2 .. 1, climbing
      // node_parent) and t at the leaf level; then by position.
      const T* by_level[kHbcsfMaxOrder] = {};
      uint32_t node = g;
#pragma unroll
      for (uint32_t l = kHbcsfMaxOrder - 1; l >= 1; --l) {
        if (l == leaf_level) {
          by_level[l] = t;
        } else if (l < leaf_level) {
          const uint32_t j = a.level_pos[l];
          by_level[l] = a.F[j] + size_t(__ldg(a.node_ind[l - 1] + node)) * a.R[j];
          if (l >= 2) node = __ldg(a.node_parent[l - 2] + node);
        }
      }
      const T* base[kMaxPositions];
#pragma unroll
      for (uint32_t j = 0; j < kMaxPositions; ++j) {
        base[j] = nullptr;
#pragma unroll
        for (uint32_t l = 1; l < kHbcsfMaxOrder; ++l)
          if (l <= leaf_level && a.level_pos[l] == j) base[j] = by_level[l];
      }
      add_kron<T, kRegs>(a, base, T(1), first, lane, acc, dst,
                         split ? Write::atomic : (g == gb ? Write::store : Write::update));
      __syncwarp();  // t is rewritten by the next segment
    }
    if constexpr (kRegs) flush(a, acc, lane, dst, split ? Write::atomic : Write::store);
  }
}

unsigned grid_for(uint64_t warps, uint32_t warps_per_block, int multiprocessors) {
  const uint64_t want = (warps + warps_per_block - 1) / warps_per_block;
  const uint64_t cap = uint64_t(std::max(multiprocessors, 1)) * 32;
  return static_cast<unsigned>(std::max<uint64_t>(1, std::min(want, cap)));
}

template <typename T, bool kRegs>
cudaError_t launch_groups(const TtmcArgs<T>& a, int multiprocessors, cudaStream_t stream) {
  if (a.coo_nnz > 0) {
    ttmc_coo_kernel<T><<<grid_for(a.coo_nnz, kWarpsPerBlock, multiprocessors), kThreads, 0, stream>>>(a);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  if (a.csl_slices > 0) {
    ttmc_csl_kernel<T, kRegs><<<grid_for(a.csl_slices, kWarpsPerBlock, multiprocessors), kThreads, 0, stream>>>(a);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  if (a.units > 0) {
    // t: leaf_rank values per warp; fewer warps per block for wide leaf
    // ranks (at least one: kHbcsfTtmcMaxLeafRank doubles fit 48 KB).
    const size_t per_warp = size_t(a.leaf_rank) * sizeof(T);
    const uint32_t warps_per_block =
        static_cast<uint32_t>(std::max<size_t>(1, std::min<size_t>(kWarpsPerBlock, kSharedLimit / per_warp)));
    const unsigned grid = grid_for(a.units, warps_per_block, multiprocessors);
    ttmc_bcsf_kernel<T, kRegs><<<grid, warps_per_block * 32, warps_per_block * per_warp, stream>>>(a);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

}  // namespace

template <typename T>
cudaError_t launch_hbcsf_ttmc(const DeviceHbcsfRef& x, const T* const* factors_by_mode,
                              const uint32_t* ranks_by_mode, uint32_t width, T* out, int multiprocessors,
                              cudaStream_t stream) {
  const uint32_t order = x.order;
  if (order < 3 || order > kHbcsfMaxOrder || !factors_by_mode || !ranks_by_mode || !out)
    return cudaErrorInvalidValue;
  const uint32_t root = x.mode_order[0];
  if (root >= order) return cudaErrorInvalidValue;
  TtmcArgs<T> a{};
  a.order = order;
  a.positions = order - 1;
  a.width = width;
  a.out = out;
  // Positions: the other modes ascending; strides = the product of the
  // ranks of the earlier positions.
  uint32_t mode_pos[kHbcsfMaxOrder] = {};
  uint64_t stride = 1;
  uint32_t j = 0;
  for (uint32_t m = 0; m < order; ++m) {
    if (m == root) continue;
    const uint32_t r = ranks_by_mode[m];
    if (r == 0 || !factors_by_mode[m]) return cudaErrorInvalidValue;
    mode_pos[m] = j;
    a.F[j] = factors_by_mode[m];
    a.R[j] = r;
    a.inc[j] = static_cast<uint32_t>((32 / stride) % r);
    stride = std::min<uint64_t>(stride * r, uint64_t(1) << 40);
    ++j;
  }
  if (stride != width || width >= (uint32_t(1) << 31)) return cudaErrorInvalidValue;
  if (width == 0) return cudaSuccess;
  for (uint32_t l = 1; l < order; ++l) {
    if (x.mode_order[l] >= order || x.mode_order[l] == root) return cudaErrorInvalidValue;
    a.level_pos[l] = mode_pos[x.mode_order[l]];
  }
  // COO: level 0 is the row, levels 1.. by position.
  a.coo_nnz = x.coo_nnz;
  a.coo_row = x.coo_ind[0];
  a.coo_val = static_cast<const T*>(x.coo_val);
  a.csl_slices = x.csl_slices;
  a.csl_slice_ind = x.csl_slice_ind;
  a.csl_slice_ptr = x.csl_slice_ptr;
  a.csl_val = static_cast<const T*>(x.csl_val);
  for (uint32_t l = 1; l < order; ++l) {
    a.coo_ind[a.level_pos[l]] = x.coo_ind[l];
    a.csl_ind[a.level_pos[l]] = x.csl_ind[l - 1];
  }
  a.units = x.units;
  for (uint32_t l = 0; l < kHbcsfMaxOrder; ++l) {
    a.node_ind[l] = x.node_ind[l];
    a.node_parent[l] = x.node_parent[l];
  }
  a.segment_ptr = x.segment_ptr;
  a.leaf_ind = x.leaf_ind;
  a.bcsf_val = static_cast<const T*>(x.bcsf_val);
  a.unit_row = x.unit_row;
  a.unit_segment_ptr = x.unit_segment_ptr;
  a.unit_split = x.unit_split;
  const uint32_t leaf_mode = x.mode_order[order - 1];
  a.leaf_factor = factors_by_mode[leaf_mode];
  a.leaf_rank = ranks_by_mode[leaf_mode];
  if (a.leaf_rank > kHbcsfTtmcMaxLeafRank) return cudaErrorInvalidValue;
  uint32_t lanes = 1;
  while (lanes < 32 && lanes < a.leaf_rank) lanes *= 2;
  a.leaf_lanes = lanes;
  if (width <= 32 * kRegCols) return launch_groups<T, true>(a, multiprocessors, stream);
  return launch_groups<T, false>(a, multiprocessors, stream);
}

template cudaError_t launch_hbcsf_ttmc<float>(const DeviceHbcsfRef&, const float* const*, const uint32_t*, uint32_t,
                                              float*, int, cudaStream_t);
template cudaError_t launch_hbcsf_ttmc<double>(const DeviceHbcsfRef&, const double* const*, const uint32_t*,
                                               uint32_t, double*, int, cudaStream_t);

}  // namespace spt::cuda
