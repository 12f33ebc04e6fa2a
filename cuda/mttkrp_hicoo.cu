// HiCOO MTTKRP on the GPU (Li's dissertation §8.1.5: the COO kernel's fine
// thread granularity, coalesced factor reads and rank blocking, plus shared
// memory for the blocked factor rows and the output rows being updated).
//
// Work split: thread block c (256 threads) owns the nonzeros [c*chunk,
// (c+1)*chunk) -- equal nonzero ranges, so a heavy HiCOO block is shared by
// several thread blocks (their output meets through global atomics) and
// thousands of tiny blocks are one thread block's work. Inside, the threads
// form teams of L lanes (L = rank / V rounded up to a power of two, <= 32;
// V = 4 floats or 2 doubles per 16-byte access when the rank allows); a team
// handles one nonzero at a time and its lanes cover the rank columns
// (coalesced row reads; ranks above 32 V loop over column groups: rank
// blocking without rereading the indices from device memory).
//
// Blocks dense in the output mode (hicoo_block_is_dense: enough nonzeros,
// and at least kHicooWindowReuse = 6144 per touched output row, i.e. a few
// very hot rows; classified at upload per mode, by the full block) run
// block by block with the whole thread block:
//   - their output rows live in shared memory: a B x R window (the block's
//     B output rows), shared-memory atomics per nonzero, one global atomic
//     per touched (row, column) when the block ends (a bitmap of touched
//     rows; B <= 256);
//   - when a block has >= B nonzeros (each staged row is then read at least
//     once on average) and the windows fit, the other modes' B x R factor
//     windows (binds[m][b] * B onward, contiguous rows) are copied into
//     shared memory first, and the nonzeros' 8-bit element indices address
//     them directly.
// Runs of consecutive other blocks (the per-block table next_dense finds a
// run's end in one read) are processed as one flat nonzero range: each team
// takes a contiguous share, tracks its block by a cursor over bptr, keeps a
// running sum per lane while the output row repeats and adds it to the
// output with global atomics (16-byte float4 atomics on sm_90). On the two
// tensors measured this beat the shared window unless a block has
// thousands of nonzeros per output row (see kHicooWindowReuse).
//
// Shared-memory rule: at most 64 KB per thread block (so 3 blocks of 256
// threads fit a multiprocessor's 227 KB on sm_90): the output window (B x R doubles, for
// float32 too) gets it first; the N-1 factor windows (B x R values of T)
// are staged only when window + factor windows fit. With B = 128 (the CPU
// rule's B for order 3) that is: float32 rank 16 order 3 staged (32 KB),
// float32 rank 32 or float64 rank 32 output only, and above B x R x 8 >=
// 64 KB (rank 64 and up) atomics only.
// Staging the factor windows barely changes the window path's time (the
// rows a block reads are L1/L2 hits anyway; docs/design-measurements.md,
// "HiCOO factor windows"); it is kept for blocks with >= B nonzeros, where
// it cannot read more than the direct loads would.
#include <algorithm>
#include <vector>

#include "mttkrp_hicoo.cuh"
#include "output_copies.cuh"
#include "running_sum.cuh"
#include "vector_pack.cuh"

namespace spt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr size_t kSharedBudget = size_t(64) << 10;
constexpr uint32_t kNever = 0xffffffffu;
constexpr size_t kBitmapBytes = 32;  // 256 bits: one per output row of the window

template <typename T>
struct HicooArgs {
  uint64_t nnz;
  uint64_t num_blocks;
  uint64_t chunk;
  const uint64_t* bptr;
  const uint32_t* binds;
  const uint32_t* next_dense;  // the output mode's table
  const uint8_t* einds;
  const T* values;
  OutputCopies<T> out;  // the output, or copies of it (output_copies.cuh)
  uint32_t order;
  uint32_t mode;
  uint32_t rank;
  uint32_t block_bits;
  uint32_t shared_output;    // 0: every block takes the global-atomics path
  uint32_t stage_threshold;  // kNever: no staged factor windows
  uint32_t dims[kHicooMaxOrder];
  const T* factors[kHicooMaxOrder];
};

// Shared-memory layout: the touched-row bitmap, the output window (B x R
// doubles: float32 sums too are kept in double), then the staged factor
// windows (B x R values of T each, other modes in order).
struct SharedTables {
  uint32_t* touched;
  void* out;
  void* windows;
};

__device__ __forceinline__ SharedTables shared_tables(unsigned char* raw, uint32_t block_bits, uint32_t rank,
                                                      size_t value_size) {
  SharedTables s;
  s.touched = reinterpret_cast<uint32_t*>(raw);
  s.out = raw + kBitmapBytes;
  s.windows = raw + kBitmapBytes + (size_t(rank) << block_bits) * sizeof(double);
  (void)value_size;
  return s;
}

// Largest b in [lo, hi) with bptr[b] <= k (bptr[lo] <= k < bptr[hi]).
__device__ __forceinline__ uint64_t block_of(const uint64_t* bptr, uint64_t lo, uint64_t hi, uint64_t k) {
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (__ldg(bptr + mid) <= k) lo = mid;
    else hi = mid;
  }
  return lo;
}

// One dense block b, nonzeros [kb, ke) of it, with the whole thread block.
// Called by every thread (uniform); leaves the output window zero and the
// bitmap clear.
template <typename T, int V, int L>
__device__ void dense_block(const HicooArgs<T>& a, const SharedTables& s, const T** row_base, uint64_t b,
                            uint64_t kb, uint64_t ke, bool stage) {
  constexpr int kTeams = kThreads / L;
  const int tid = threadIdx.x, team = tid / L, lane = tid % L;
  const uint32_t bits = a.block_bits, B = 1u << bits;
  const uint32_t units = a.rank / V;
  double* s_out = static_cast<double*>(s.out);
  T* s_win = static_cast<T*>(s.windows);
  // Where each mode's B rows start: a staged window, or the factor itself.
  if (tid < int(a.order)) {
    const uint32_t m = tid;
    const uint64_t row0 = uint64_t(__ldg(a.binds + uint64_t(m) * a.num_blocks + b)) << bits;
    uint32_t j = m < a.mode ? m : m - 1;  // window slot among the other modes
    row_base[m] = (stage && m != a.mode) ? s_win + (size_t(j) << bits) * a.rank : a.factors[m] + row0 * a.rank;
  }
  if (stage) {
    uint32_t j = 0;
    for (uint32_t m = 0; m < a.order; ++m) {
      if (m == a.mode) continue;
      const uint64_t row0 = uint64_t(__ldg(a.binds + uint64_t(m) * a.num_blocks + b)) << bits;
      const uint64_t rows = min(uint64_t(B), uint64_t(a.dims[m]) - row0);
      const Pack<T, V>* g = reinterpret_cast<const Pack<T, V>*>(a.factors[m] + row0 * a.rank);
      Pack<T, V>* w = reinterpret_cast<Pack<T, V>*>(s_win + (size_t(j) << bits) * a.rank);
      for (uint64_t i = tid; i < rows * units; i += kThreads) w[i] = g[i];
      ++j;
    }
  }
  __syncthreads();  // row_base, staged windows and the cleared bitmap are visible

  const uint8_t* out_e = a.einds + uint64_t(a.mode) * a.nnz;
  for (uint64_t k = kb + team; k < ke; k += kTeams) {
    const T v = __ldg(a.values + k);
    const uint32_t e_out = __ldg(out_e + k);
    for (uint32_t u = lane; u < units; u += L) {
      Pack<T, V> p;
#pragma unroll
      for (int e = 0; e < V; ++e) p.v[e] = v;
      for (uint32_t m = 0; m < a.order; ++m) {
        if (m == a.mode) continue;
        const uint32_t em = __ldg(a.einds + uint64_t(m) * a.nnz + k);
        const Pack<T, V> g = *reinterpret_cast<const Pack<T, V>*>(row_base[m] + size_t(em) * a.rank + size_t(u) * V);
#pragma unroll
        for (int e = 0; e < V; ++e) p.v[e] *= g.v[e];
      }
      double* o = s_out + size_t(e_out) * a.rank + size_t(u) * V;
#pragma unroll
      for (int e = 0; e < V; ++e) atomicAdd(o + e, static_cast<double>(p.v[e]));
    }
    if (lane == 0) atomicOr(s.touched + (e_out >> 5), 1u << (e_out & 31));
  }
  __syncthreads();  // the window is complete

  const uint64_t out_row0 = uint64_t(__ldg(a.binds + uint64_t(a.mode) * a.num_blocks + b)) << bits;
  T* g = output_copy(a.out) + out_row0 * a.rank;
  for (uint32_t i = tid; i < B * units; i += kThreads) {
    const uint32_t r = i / units;
    if ((s.touched[r >> 5] >> (r & 31)) & 1u) {
      double* w = s_out + size_t(i) * V;
      Pack<T, V> x;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        x.v[e] = static_cast<T>(w[e]);
        w[e] = 0.0;
      }
      atomic_add_pack<T, V>(g + size_t(i) * V, x);
    }
  }
  __syncthreads();  // the bitmap has been read by all
  if (tid < int(kBitmapBytes / 4)) s.touched[tid] = 0;
  // The next dense block's first barrier orders this clear before its use.
}

// Nonzeros [kb, ke) of the sparse blocks [b_first, b_end): each team takes
// a contiguous share, finds its block by a cursor over bptr, and adds each
// product to the output with global atomics. No barriers.
template <typename T, int V, int L>
__device__ void sparse_run(const HicooArgs<T>& a, uint64_t b_first, uint64_t b_end, uint64_t kb, uint64_t ke) {
  constexpr int kTeams = kThreads / L;
  const int tid = threadIdx.x, team = tid / L, lane = tid % L;
  const uint32_t bits = a.block_bits;
  const uint32_t units = a.rank / V;
  const uint64_t share = (ke - kb + kTeams - 1) / kTeams;
  uint64_t k = kb + uint64_t(team) * share;
  const uint64_t k_end = min(k + share, ke);
  if (k >= k_end) return;
  uint64_t blk = block_of(a.bptr, b_first, b_end, k);
  uint64_t next_start = __ldg(a.bptr + blk + 1);
  const uint8_t* out_e = a.einds + uint64_t(a.mode) * a.nnz;
  // One column group per lane (units <= L, ranks up to 32 vectors): a
  // running sum per lane while consecutive nonzeros share the output row,
  // one atomic per row change. Wider ranks: an atomic per nonzero and group.
  // The running sum is a RunningSum (compensated for float32: no
  // float-to-double conversion per term), rounded once per atomic.
  const bool one_group = units <= uint32_t(L);
  Pack<RunningSum<T>, V> acc;
#pragma unroll
  for (int e = 0; e < V; ++e) acc.v[e] = T(0);
  auto narrow = [](const Pack<RunningSum<T>, V>& d) {
    Pack<T, V> x;
#pragma unroll
    for (int e = 0; e < V; ++e) x.v[e] = rounded(d.v[e]);
    return x;
  };
  uint64_t acc_row = ~uint64_t(0);
  for (; k < k_end; ++k) {
    while (k >= next_start) next_start = __ldg(a.bptr + (++blk) + 1);
    const T v = __ldg(a.values + k);
    const uint64_t out_row =
        (uint64_t(__ldg(a.binds + uint64_t(a.mode) * a.num_blocks + blk)) << bits) + __ldg(out_e + k);
    for (uint32_t u = lane; u < units; u += L) {
      Pack<T, V> p;
#pragma unroll
      for (int e = 0; e < V; ++e) p.v[e] = v;
      for (uint32_t m = 0; m < a.order; ++m) {
        if (m == a.mode) continue;
        const uint64_t row = (uint64_t(__ldg(a.binds + uint64_t(m) * a.num_blocks + blk)) << bits) +
                             __ldg(a.einds + uint64_t(m) * a.nnz + k);
        const Pack<T, V> g = reinterpret_cast<const Pack<T, V>*>(a.factors[m] + row * a.rank)[u];
#pragma unroll
        for (int e = 0; e < V; ++e) p.v[e] *= g.v[e];
      }
      if (!one_group) {
        atomic_add_pack<T, V>(output_copy(a.out) + out_row * a.rank + size_t(u) * V, p);
      } else if (out_row == acc_row) {
#pragma unroll
        for (int e = 0; e < V; ++e) acc.v[e] += p.v[e];
      } else {
        if (acc_row != ~uint64_t(0)) atomic_add_pack<T, V>(output_copy(a.out) + acc_row * a.rank + size_t(u) * V, narrow(acc));
#pragma unroll
        for (int e = 0; e < V; ++e) acc.v[e] = p.v[e];
        acc_row = out_row;
      }
    }
  }
  if (one_group && acc_row != ~uint64_t(0) && uint32_t(lane) < units)
    atomic_add_pack<T, V>(output_copy(a.out) + acc_row * a.rank + size_t(lane) * V, narrow(acc));
}

template <typename T, int V, int L>
__global__ void __launch_bounds__(kThreads, 3) mttkrp_hicoo_kernel(const HicooArgs<T> a) {
  extern __shared__ __align__(16) unsigned char shared_raw[];
  __shared__ const T* row_base[kHicooMaxOrder];
  const bool shared_output = a.shared_output != 0;
  const SharedTables s = shared_tables(shared_raw, a.block_bits, a.rank, sizeof(T));
  if (shared_output) {
    double* s_out = static_cast<double*>(s.out);
    for (uint32_t i = threadIdx.x; i < (a.rank << a.block_bits); i += kThreads) s_out[i] = 0.0;
    if (threadIdx.x < kBitmapBytes / 4) s.touched[threadIdx.x] = 0;
  }
  const uint64_t k0 = uint64_t(blockIdx.x) * a.chunk;
  if (k0 >= a.nnz) return;  // uniform
  const uint64_t k1 = min(k0 + a.chunk, a.nnz);
  uint64_t b = block_of(a.bptr, 0, a.num_blocks, k0);
  uint64_t k = k0;
  while (k < k1) {  // uniform: every thread walks the same blocks
    if (shared_output && __ldg(a.next_dense + b) == b) {
      const uint64_t block_nnz = __ldg(a.bptr + b + 1) - __ldg(a.bptr + b);
      const uint64_t seg_end = min(__ldg(a.bptr + b + 1), k1);
      dense_block<T, V, L>(a, s, row_base, b, k, seg_end, block_nnz >= a.stage_threshold);
      k = seg_end;
      ++b;
    } else {
      const uint64_t run_end = shared_output ? __ldg(a.next_dense + b) : a.num_blocks;
      const uint64_t seg_end = min(__ldg(a.bptr + run_end), k1);
      sparse_run<T, V, L>(a, b, run_end, k, seg_end);
      k = seg_end;
      b = run_end;
    }
  }
}

template <typename T, int V, int L>
cudaError_t launch_one(const HicooArgs<T>& a, unsigned grid, size_t shared_bytes, cudaStream_t stream) {
  auto kernel = mttkrp_hicoo_kernel<T, V, L>;
  if (shared_bytes > (size_t(48) << 10)) {
    const cudaError_t err =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_bytes));
    if (err != cudaSuccess) return err;
  }
  kernel<<<grid, kThreads, shared_bytes, stream>>>(a);
  return cudaGetLastError();
}

template <typename T, int V>
cudaError_t launch_for_lanes(const HicooArgs<T>& a, int lanes, unsigned grid, size_t shared_bytes,
                             cudaStream_t stream) {
  switch (lanes) {
    case 1: return launch_one<T, V, 1>(a, grid, shared_bytes, stream);
    case 2: return launch_one<T, V, 2>(a, grid, shared_bytes, stream);
    case 4: return launch_one<T, V, 4>(a, grid, shared_bytes, stream);
    case 8: return launch_one<T, V, 8>(a, grid, shared_bytes, stream);
    case 16: return launch_one<T, V, 16>(a, grid, shared_bytes, stream);
    case 32: return launch_one<T, V, 32>(a, grid, shared_bytes, stream);
    default: return cudaErrorInvalidValue;
  }
}

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Byte offsets of the parts of a device copy.
struct HicooLayout {
  size_t binds, next_dense, einds, values, total;
};

HicooLayout layout(uint32_t order, uint64_t nnz, uint64_t num_blocks, size_t value_size) {
  HicooLayout l{};
  l.binds = align_up((num_blocks + 1) * sizeof(uint64_t), 256);
  l.next_dense = l.binds + align_up(size_t(order) * num_blocks * sizeof(uint32_t), 256);
  l.einds = l.next_dense + align_up(size_t(order) * num_blocks * sizeof(uint32_t), 256);
  l.values = l.einds + align_up(size_t(order) * nnz, 256);
  l.total = l.values + nnz * value_size;
  return l;
}

}  // namespace

bool hicoo_block_is_dense(uint64_t nnz, uint64_t rows, uint32_t block_bits, uint64_t reuse) {
  return nnz >= std::max<uint64_t>(8, (uint64_t(1) << block_bits) / 4) && nnz >= reuse * rows;
}

size_t hicoo_copy_bytes(uint32_t order, uint64_t nnz, uint64_t num_blocks, size_t value_size) {
  return layout(order, nnz, num_blocks, value_size).total;
}

cudaError_t hicoo_upload(const HostHicooView& x, void* block, DeviceHicooRef* out, uint64_t window_reuse) {
  if (x.order < 2 || x.order > kHicooMaxOrder || x.num_blocks >= (uint64_t(1) << 32) || x.block_bits < 1 ||
      x.block_bits > 8 || !out)
    return cudaErrorInvalidValue;
  const HicooLayout l = layout(x.order, x.nnz, x.num_blocks, x.value_size);
  char* base = static_cast<char*>(block);
  // Per mode, next_dense[n][b]: the first block >= b dense in mode n (a
  // 256-bit set of the block's mode-n element indices counts its rows).
  std::vector<uint32_t> next_dense(size_t(x.order) * x.num_blocks);
  uint64_t dense_blocks[kHicooMaxOrder] = {};
  for (uint32_t n = 0; n < x.order; ++n) {
    uint32_t next = static_cast<uint32_t>(x.num_blocks);
    for (uint64_t b = x.num_blocks; b-- > 0;) {
      uint64_t seen[4] = {0, 0, 0, 0};
      for (uint64_t k = x.bptr[b]; k < x.bptr[b + 1]; ++k) {
        const uint8_t e = x.einds[n][k];
        seen[e >> 6] |= uint64_t(1) << (e & 63);
      }
      const uint64_t rows = __builtin_popcountll(seen[0]) + __builtin_popcountll(seen[1]) +
                            __builtin_popcountll(seen[2]) + __builtin_popcountll(seen[3]);
      if (hicoo_block_is_dense(x.bptr[b + 1] - x.bptr[b], rows, x.block_bits, window_reuse)) {
        next = static_cast<uint32_t>(b);
        ++dense_blocks[n];
      }
      next_dense[size_t(n) * x.num_blocks + b] = next;
    }
  }
  cudaError_t err = cudaMemcpy(base, x.bptr, (x.num_blocks + 1) * sizeof(uint64_t), cudaMemcpyHostToDevice);
  for (uint32_t m = 0; m < x.order && err == cudaSuccess; ++m)
    err = cudaMemcpy(base + l.binds + size_t(m) * x.num_blocks * sizeof(uint32_t), x.binds[m],
                     x.num_blocks * sizeof(uint32_t), cudaMemcpyHostToDevice);
  if (err == cudaSuccess)
    err = cudaMemcpy(base + l.next_dense, next_dense.data(), next_dense.size() * sizeof(uint32_t),
                     cudaMemcpyHostToDevice);
  for (uint32_t m = 0; m < x.order && err == cudaSuccess; ++m)
    err = cudaMemcpy(base + l.einds + size_t(m) * x.nnz, x.einds[m], x.nnz, cudaMemcpyHostToDevice);
  if (err == cudaSuccess)
    err = cudaMemcpy(base + l.values, x.values, x.nnz * x.value_size, cudaMemcpyHostToDevice);
  if (err != cudaSuccess) return err;
  DeviceHicooRef r;
  r.order = x.order;
  r.block_bits = x.block_bits;
  r.nnz = x.nnz;
  r.num_blocks = x.num_blocks;
  for (uint32_t m = 0; m < x.order; ++m) {
    r.dims[m] = x.dims[m];
    r.dense_blocks[m] = dense_blocks[m];
  }
  r.bptr = reinterpret_cast<const uint64_t*>(base);
  r.binds = reinterpret_cast<const uint32_t*>(base + l.binds);
  r.next_dense = reinterpret_cast<const uint32_t*>(base + l.next_dense);
  r.einds = reinterpret_cast<const uint8_t*>(base + l.einds);
  r.values = base + l.values;
  *out = r;
  return cudaSuccess;
}

namespace {

// Nonzeros per thread block: about 4 waves of the blocks resident with
// `shared_bytes` of shared memory each; at least 256 nonzeros.
uint64_t hicoo_chunk(uint64_t nnz, int multiprocessors, size_t shared_bytes) {
  const int resident_per_sm = shared_bytes == 0 ? 8 : std::max<int>(1, int((227u << 10) / (shared_bytes + 1024)));
  const uint64_t target = uint64_t(std::max(multiprocessors, 1)) * std::min(resident_per_sm, 8) * 4;
  return std::max<uint64_t>(256, (nnz + target - 1) / target);
}

}  // namespace

template <typename T>
cudaError_t launch_mttkrp_hicoo(const DeviceHicooRef& x, const T* const* factors, uint32_t mode, uint32_t rank,
                                T* out, int multiprocessors, cudaStream_t stream, HicooLaunchPlan* plan,
                                HicooSharedUse use) {
  if (x.order < 2 || x.order > kHicooMaxOrder || mode >= x.order || rank == 0) return cudaErrorInvalidValue;
  if (x.nnz == 0 || x.num_blocks == 0) return cudaSuccess;
  HicooArgs<T> a{};
  a.nnz = x.nnz;
  a.num_blocks = x.num_blocks;
  a.bptr = x.bptr;
  a.binds = x.binds;
  a.next_dense = x.next_dense + uint64_t(mode) * x.num_blocks;
  a.einds = x.einds;
  a.values = static_cast<const T*>(x.values);
  a.order = x.order;
  a.mode = mode;
  a.rank = rank;
  a.block_bits = x.block_bits;
  for (uint32_t m = 0; m < x.order; ++m) {
    a.dims[m] = x.dims[m];
    a.factors[m] = factors[m];
  }

  // Vectors and teams as in the COO kernel (rows stay 16-byte aligned: they
  // start at multiples of rank elements of 256-byte aligned allocations).
  const int wide = sizeof(T) == 4 ? 4 : 2;
  const int vector = rank % wide == 0 ? wide : 1;
  const uint32_t units = rank / vector;
  int lanes = 1;
  while (lanes < 32 && uint32_t(lanes) < units) lanes *= 2;

  // The shared-memory rule (top of the file).
  const size_t window = (size_t(rank) << x.block_bits) * sizeof(T);
  const size_t with_output = kBitmapBytes + (size_t(rank) << x.block_bits) * sizeof(double);
  const size_t with_factors = with_output + size_t(x.order - 1) * window;
  // No block dense in this mode: no window, and no shared memory to hold
  // one (it would cost resident blocks and the grid sized from them).
  // Rows that take enough additions for output copies (float32, short
  // modes) meet little contention once spread over the copies, and the
  // window's staging then costs more than it saves: atomics, unless the
  // caller asks for the window.
  const uint64_t rows = x.dims[mode];
  const uint64_t plain_chunk = hicoo_chunk(x.nnz, multiprocessors, 0);
  const uint64_t plain_grid = (x.nnz + plain_chunk - 1) / plain_chunk;
  const bool copies_spread_rows =
      use == HicooSharedUse::automatic && output_copy_count(x.nnz, rows, sizeof(T), plain_grid) > 1;
  const bool shared_output = use != HicooSharedUse::atomics_only && !copies_spread_rows &&
                             x.dense_blocks[mode] > 0 && with_output <= kSharedBudget;
  const bool staged = shared_output && use == HicooSharedUse::automatic && with_factors <= kSharedBudget;
  a.shared_output = shared_output ? 1u : 0u;
  a.stage_threshold = staged ? (1u << x.block_bits) : kNever;
  const size_t shared_bytes = staged ? with_factors : shared_output ? with_output : 0;

  const uint64_t chunk = hicoo_chunk(x.nnz, multiprocessors, shared_bytes);
  const uint64_t grid = (x.nnz + chunk - 1) / chunk;
  if (grid > 0x7fffffffull) return cudaErrorInvalidConfiguration;
  a.chunk = chunk;
  if (plan) {
    plan->shared_output = shared_output;
    plan->staged_factors = staged;
    plan->vector = vector;
    plan->lanes = lanes;
    plan->shared_bytes = shared_bytes;
    plan->thread_blocks = grid;
    plan->chunk = chunk;
  }
  // float32 rows that take many atomic additions: copies of the output.
  const uint32_t copies = output_copy_count(x.nnz, rows, sizeof(T), grid);
  if (plan) plan->output_copies = copies;
  return run_with_output_copies<T>(out, rows, rank, copies, stream, &a.out, [&] {
    if (vector == wide) {
      if constexpr (sizeof(T) == 4) return launch_for_lanes<T, 4>(a, lanes, unsigned(grid), shared_bytes, stream);
      else return launch_for_lanes<T, 2>(a, lanes, unsigned(grid), shared_bytes, stream);
    }
    return launch_for_lanes<T, 1>(a, lanes, unsigned(grid), shared_bytes, stream);
  });
}

template cudaError_t launch_mttkrp_hicoo<float>(const DeviceHicooRef&, const float* const*, uint32_t, uint32_t,
                                                float*, int, cudaStream_t, HicooLaunchPlan*, HicooSharedUse);
template cudaError_t launch_mttkrp_hicoo<double>(const DeviceHicooRef&, const double* const*, uint32_t, uint32_t,
                                                 double*, int, cudaStream_t, HicooLaunchPlan*, HicooSharedUse);

}  // namespace spt::cuda
