// GPU F-COO kernels: one-shot segmented products (fcoo.cuh).
//
// Mapping (the paper's): thread = partition of `threadlen` consecutive
// nonzeros, warp = 32 consecutive partitions, 256-thread blocks; gridDim.y
// splits the output columns when there are too few warps to fill the GPU.
// Each lane walks its partition once per chunk of CW output columns (32
// bytes: 8 floats or 4 doubles, one memory sector per factor row read):
//
//  1. sequential segmented sum over its nonzeros: a segment that starts and
//     ends inside the partition is added to its output row directly (no
//     other thread touches it); the part before the first segment start
//     ("head") and the open part at the end ("tail") are kept;
//  2. a segmented inclusive scan over the warp's lanes (5 shuffle steps;
//     the segment heads come from one ballot) gives every lane the carry of
//     the segment that was open when its partition began;
//  3. a lane that closes a segment begun in an earlier lane of the warp
//     adds carry + head to it directly; a segment begun before the warp
//     (or going on after it: lane 31's tail) is added with atomics. So
//     atomics happen only at warp boundaries, never per nonzero.
//
// Segment numbers come from the per-warp table plus a warp prefix count of
// the flag bits, so no global scan runs at all. Every sum here is short: a
// lane's run adds at most threadlen (<= 32) products and the warp scan at
// most log2(32) partition sums, in T; each store or atomic rounds one
// segment piece into the output.
#include <algorithm>
#include <cstring>
#include <vector>

#include "fcoo.cuh"
#include "vector_pack.cuh"

namespace spt::cuda {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kBlockThreads = 256;

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

struct Layout {
  size_t ind = 0, bf = 0, sf = 0, groups = 0, rows = 0, values = 0, total = 0;
};

Layout layout_of(const HostFcooView& v) {
  const uint64_t partitions = (v.nnz + v.threadlen - 1) / v.threadlen;
  Layout l;
  size_t at = 0;
  l.ind = at;
  at = align_up(at + size_t(v.num_product_modes) * v.nnz * 4, 256);
  l.bf = at;
  at = align_up(at + size_t((v.nnz + 31) / 32) * 4, 256);
  l.sf = at;
  at = align_up(at + size_t((partitions + 31) / 32) * 4, 256);
  l.groups = at;
  at = align_up(at + size_t((partitions + 31) / 32) * 4, 256);
  l.rows = at;
  if (v.segment_rows) at = align_up(at + size_t(v.segments) * 4, 256);
  l.values = at;
  at += size_t(v.nnz) * v.value_size;
  l.total = std::max<size_t>(at, 1);
  return l;
}

template <typename T>
struct FcooArgs {
  DeviceFcooRef x;
  const T* values;
  T* out;
  uint32_t width;       // output columns
  uint32_t chunks;      // ceil(width / CW)
  uint32_t chunks_per_y;
  bool vector_rows;     // width a multiple of 16 bytes: rows and chunks are 16-byte aligned
  const T* factors[kFcooMaxProductModes];
  uint32_t cols[kFcooMaxProductModes];  // Kronecker: columns of each factor
};

// The flag-derived facts of one lane's partition, shared by every chunk.
// A warp holds PW = 32 / LP partitions; the LP lanes of a team share one
// partition (same flags) and take different column chunks.
struct LaneFlags {
  uint64_t begin;        // first nonzero of the partition
  uint32_t count;        // its nonzeros (0 for partitions past the end)
  uint32_t bits;         // segment-start bits of its nonzeros, bit j = nonzero begin + j
  uint32_t open_before;  // segment open just before its first nonzero
  bool has_start;        // some nonzero of the partition starts a segment
  bool prefix_has_start; // some earlier partition of the warp has a start
  bool skip_close;       // first partition of the warp, starting a segment: nothing open to close
  uint32_t scan_steps;   // bit i: add the value 2^i partitions up in scan step i
};

template <int LP>
__device__ __forceinline__ LaneFlags lane_flags(const DeviceFcooRef& x, uint64_t warp, int lane) {
  constexpr int PW = 32 / LP;
  const int q = lane / LP;  // partition within the warp
  LaneFlags f;
  const uint32_t tl = x.threadlen;
  const uint64_t part = warp * PW + q;
  f.begin = part * tl;
  f.count = f.begin < x.nnz ? (x.nnz - f.begin < tl ? uint32_t(x.nnz - f.begin) : tl) : 0u;
  uint32_t bits = 0;
  if (f.count) {
    const uint32_t word = __ldg(x.bf + (f.begin >> 5));
    bits = tl == 32 ? word : (word >> (f.begin & 31)) & ((1u << tl) - 1u);
    if (f.count < 32) bits &= (1u << f.count) - 1u;
    // The start flag of the partition is the bit of its first nonzero (the
    // encoder guarantees it); read it as the format defines it.
    const uint32_t sf = (__ldg(x.sf + (part >> 5)) >> (part & 31)) & 1u;
    bits = (bits & ~1u) | sf;
  }
  f.bits = bits;
  f.has_start = bits != 0;
  // Segment of the warp's first nonzero: the table holds it for each group
  // of 32 partitions; add the starts between the group's first nonzero and
  // the warp's (whole 32-bit words; at most 31 of them, one per lane).
  const uint64_t first_partition = warp * PW;
  const uint64_t group = first_partition / 32;
  const uint64_t group_word = group * tl;  // (group * 32 partitions * tl nonzeros) / 32
  const uint64_t warp_word = first_partition * tl / 32;
  uint32_t between = 0;
  if (group_word + lane < warp_word) between = __popc(__ldg(x.bf + group_word + lane));
  between = __reduce_add_sync(kFullMask, between);
  const uint32_t group_bit = warp_word > group_word ? (__ldg(x.bf + group_word) & 1u) : 0u;
  const uint32_t warp_first_bit = __shfl_sync(kFullMask, bits & 1u, 0);
  const uint32_t warp_first_segment =
      __ldg(x.group_first_segment + group) + between - group_bit + (warp_word > group_word ? warp_first_bit : 0u);
  // Starts in earlier partitions of the warp (exclusive scan over teams).
  const uint32_t starts = __popc(bits);
  uint32_t inclusive = starts;
#pragma unroll
  for (int d = 1; d < PW; d <<= 1) {
    const uint32_t up = __shfl_up_sync(kFullMask, inclusive, d * LP);
    if (q >= d) inclusive += up;
  }
  // Minus one when the warp's first nonzero starts that segment. (Wraps for
  // the very first segment; never used as a row then: skip_close.)
  f.open_before = warp_first_segment - warp_first_bit + (inclusive - starts);
  const uint32_t heads = __ballot_sync(kFullMask, f.has_start && lane % LP == 0);  // bit q * LP per partition
  f.prefix_has_start = (heads & uint32_t((uint64_t(1) << (q * LP)) - 1)) != 0;
  f.skip_close = q == 0 && (bits & 1u);
  // Segmented scan: before step d a partition's flag covers partitions (q-d, q].
  uint32_t steps = 0;
  for (int i = 0, d = 1; d < PW; ++i, d <<= 1) {
    if (q < d) continue;
    const uint32_t window = uint32_t(((uint64_t(1) << (d * LP)) - 1) << ((q - d + 1) * LP));
    if ((heads & window) == 0) steps |= 1u << i;
  }
  f.scan_steps = steps;
  return f;
}

// 16-byte vectors of T.
template <typename T>
constexpr int kVec = 16 / sizeof(T);

template <typename T>
__device__ __forceinline__ Pack<T, kVec<T>> load_vector(const T* p) {
  Pack<T, kVec<T>> r;
  if constexpr (sizeof(T) == 4) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(p));
    r.v[0] = v.x, r.v[1] = v.y, r.v[2] = v.z, r.v[3] = v.w;
  } else {
    const double2 v = __ldg(reinterpret_cast<const double2*>(p));
    r.v[0] = v.x, r.v[1] = v.y;
  }
  return r;
}

// dst[c] += v[c] for the chunk's columns below width (atomically when asked;
// 16-byte vectors when the rows allow: float4 atomics on sm_90).
template <typename T, int CW>
__device__ __forceinline__ void add_row(T* dst, const T (&v)[CW], uint32_t c0, uint32_t width, bool atomic,
                                        bool vector_rows) {
  constexpr int V = kVec<T>;
  if (vector_rows && c0 + CW <= width) {
#pragma unroll
    for (int q = 0; q < CW / V; ++q) {
      Pack<T, V> x;
#pragma unroll
      for (int e = 0; e < V; ++e) x.v[e] = v[q * V + e];
      auto* p = reinterpret_cast<Pack<T, V>*>(dst + q * V);
      if (atomic) {
        atomic_add_pack<T, V>(dst + q * V, x);
      } else {
        Pack<T, V> y = *p;
#pragma unroll
        for (int e = 0; e < V; ++e) y.v[e] += x.v[e];
        *p = y;
      }
    }
    return;
  }
#pragma unroll
  for (int c = 0; c < CW; ++c) {
    if (c0 + c >= width) break;
    if (atomic) atomicAdd(dst + c, v[c]);
    else dst[c] += v[c];
  }
}

// prod[c] = v * prod_j factors[j](ind_j[k], c0 + c).
template <typename T, int CW>
struct Hadamard {
  __device__ __forceinline__ static void product(const FcooArgs<T>& a, uint64_t k, uint32_t c0, T (&prod)[CW]) {
    const T v = __ldg(a.values + k);
#pragma unroll
    for (int c = 0; c < CW; ++c) prod[c] = v;
    const bool full = c0 + CW <= a.width;
    for (uint32_t j = 0; j < a.x.num_product_modes; ++j) {
      const uint32_t i = __ldg(a.x.product_ind + uint64_t(j) * a.x.nnz + k);
      const T* row = a.factors[j] + uint64_t(i) * a.width + c0;
      if (full && a.vector_rows) {
        constexpr int V = kVec<T>;
#pragma unroll
        for (int q = 0; q < CW / V; ++q) {
          const Pack<T, V> g = load_vector<T>(row + q * V);
#pragma unroll
          for (int e = 0; e < V; ++e) prod[q * V + e] *= g.v[e];
        }
      } else if (full) {
#pragma unroll
        for (int c = 0; c < CW; ++c) prod[c] *= __ldg(row + c);
      } else {
#pragma unroll
        for (int c = 0; c < CW; ++c)
          if (c0 + c < a.width) prod[c] *= __ldg(row + c);
      }
    }
  }
};

// prod[c] = v * prod_j factors[j](ind_j[k], digit_j(c0 + c)), the first
// product mode's digit fastest.
template <typename T, int CW>
struct Kronecker {
  __device__ __forceinline__ static void product(const FcooArgs<T>& a, uint64_t k, uint32_t c0, T (&prod)[CW]) {
    const T v = __ldg(a.values + k);
#pragma unroll
    for (int c = 0; c < CW; ++c) prod[c] = c0 + c < a.width ? v : T(0);
    const uint32_t p = a.x.num_product_modes;
    uint32_t stride = 1;
    for (uint32_t j = 0; j < p; ++j) {
      const uint32_t i = __ldg(a.x.product_ind + uint64_t(j) * a.x.nnz + k);
      const uint32_t cols = a.cols[j];
      const T* row = a.factors[j] + uint64_t(i) * cols;
#pragma unroll
      for (int c = 0; c < CW; ++c) {
        const uint32_t digit = ((c0 + c) / stride) % cols;
        prod[c] *= __ldg(row + digit);
      }
      stride *= cols;
    }
  }
};

template <typename T, int CW, int LP, typename Product>
__global__ void __launch_bounds__(kBlockThreads) fcoo_kernel(const FcooArgs<T> a) {
  constexpr int PW = 32 / LP;
  const int lane = threadIdx.x & 31;
  const int q = lane / LP, sub = lane % LP;
  const uint64_t warp = (uint64_t(blockIdx.x) * kBlockThreads + threadIdx.x) >> 5;
  if (warp * PW * a.x.threadlen >= a.x.nnz) return;  // uniform per warp
  const LaneFlags f = lane_flags<LP>(a.x, warp, lane);
  const uint32_t chunk_begin = blockIdx.y * a.chunks_per_y;
  const uint32_t chunk_end = min(a.chunks, chunk_begin + a.chunks_per_y);
  auto row_of = [&](uint32_t segment) -> T* {
    const uint32_t r = a.x.segment_rows ? __ldg(a.x.segment_rows + segment) : segment;
    return a.out + uint64_t(r) * a.width;
  };

  // The team's lanes take consecutive chunks (one 32-byte sector each of
  // the same factor row: coalesced); every lane runs the same number of
  // rounds so the shuffles stay converged.
  for (uint32_t base = chunk_begin; base < chunk_end; base += LP) {
    const uint32_t chunk = base + sub;
    const bool valid = chunk < chunk_end;
    const uint32_t c0 = chunk * CW;
    T head[CW], run[CW], prod[CW];
#pragma unroll
    for (int c = 0; c < CW; ++c) head[c] = run[c] = T(0);
    bool in_head = true;
    uint32_t segment = f.open_before;
    for (uint32_t j = 0; j < f.count; ++j) {
      if ((f.bits >> j) & 1u) {
        if (in_head) {
#pragma unroll
          for (int c = 0; c < CW; ++c) head[c] = run[c];
          in_head = false;
        } else if (valid) {
          add_row<T, CW>(row_of(segment) + c0, run, c0, a.width, false, a.vector_rows);  // begun and ended here
        }
#pragma unroll
        for (int c = 0; c < CW; ++c) run[c] = T(0);
        ++segment;
      }
      if (valid) {
        Product::product(a, f.begin + j, c0, prod);
#pragma unroll
        for (int c = 0; c < CW; ++c) run[c] += prod[c];
      }
    }
    if (in_head) {
#pragma unroll
      for (int c = 0; c < CW; ++c) {
        head[c] = run[c];
        run[c] = T(0);
      }
    }
    // Segmented inclusive scan of (has_start ? tail : head) over the warp's
    // partitions (lanes LP apart hold the same chunk).
    T scan[CW];
#pragma unroll
    for (int c = 0; c < CW; ++c) scan[c] = f.has_start ? run[c] : head[c];
#pragma unroll
    for (int i = 0; (1 << i) < PW; ++i) {
      const bool add = (f.scan_steps >> i) & 1u;
#pragma unroll
      for (int c = 0; c < CW; ++c) {
        const T up = __shfl_up_sync(kFullMask, scan[c], (1 << i) * LP);
        if (add) scan[c] += up;
      }
    }
    T carry[CW];
#pragma unroll
    for (int c = 0; c < CW; ++c) {
      carry[c] = __shfl_up_sync(kFullMask, scan[c], LP);
      if (q == 0) carry[c] = T(0);
    }
    if (!valid) continue;
    if (f.has_start && !f.skip_close) {
      // Close the segment that was open when the partition began.
#pragma unroll
      for (int c = 0; c < CW; ++c) head[c] += carry[c];
      add_row<T, CW>(row_of(f.open_before) + c0, head, c0, a.width, !f.prefix_has_start, a.vector_rows);
    }
    if (q == PW - 1) add_row<T, CW>(row_of(segment) + c0, scan, c0, a.width, true, a.vector_rows);  // may go on in the next warp
  }
}

template <typename T, template <typename, int> class Product>
cudaError_t launch(FcooArgs<T>& a, int multiprocessors, cudaStream_t stream) {
  constexpr int CW = 32 / sizeof(T);
  if (a.x.nnz == 0 || a.width == 0) return cudaSuccess;
  if (a.x.threadlen != 8 && a.x.threadlen != 16 && a.x.threadlen != 32) return cudaErrorInvalidValue;
  if (a.x.num_product_modes == 0 || a.x.num_product_modes > kFcooMaxProductModes) return cudaErrorInvalidValue;
  a.chunks = (a.width + CW - 1) / CW;
  // Lanes per partition: enough to cover the chunks (at most 8, so a warp
  // still holds 4 partitions).
  int lp = 1;
  while (lp < 8 && uint32_t(lp) < a.chunks) lp *= 2;
  const uint64_t partitions = (a.x.nnz + a.x.threadlen - 1) / a.x.threadlen;
  const uint64_t per_warp = 32 / lp;
  const uint64_t warps = (partitions + per_warp - 1) / per_warp;
  const uint64_t blocks = (warps * 32 + kBlockThreads - 1) / kBlockThreads;
  // Split the remaining chunk rounds over gridDim.y until about 4 waves of
  // warps exist.
  const uint64_t rounds = (a.chunks + lp - 1) / lp;
  const uint64_t target = uint64_t(std::max(multiprocessors, 1)) * 64 * 4;
  uint64_t ys = std::min<uint64_t>(rounds, std::max<uint64_t>(1, (target + warps - 1) / warps));
  ys = std::min<uint64_t>(ys, 65535);
  a.chunks_per_y = uint32_t(((rounds + ys - 1) / ys) * lp);
  ys = (a.chunks + a.chunks_per_y - 1) / a.chunks_per_y;
  if (blocks > 0x7fffffffull) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(ys));
  switch (lp) {
    case 1: fcoo_kernel<T, CW, 1, Product<T, CW>><<<grid, kBlockThreads, 0, stream>>>(a); break;
    case 2: fcoo_kernel<T, CW, 2, Product<T, CW>><<<grid, kBlockThreads, 0, stream>>>(a); break;
    case 4: fcoo_kernel<T, CW, 4, Product<T, CW>><<<grid, kBlockThreads, 0, stream>>>(a); break;
    default: fcoo_kernel<T, CW, 8, Product<T, CW>><<<grid, kBlockThreads, 0, stream>>>(a); break;
  }
  return cudaGetLastError();
}

}  // namespace

size_t fcoo_copy_bytes(const HostFcooView& view) { return layout_of(view).total; }

cudaError_t fcoo_upload(const HostFcooView& v, void* block, DeviceFcooRef* out) {
  const Layout l = layout_of(v);
  char* base = static_cast<char*>(block);
  const uint64_t partitions = (v.nnz + v.threadlen - 1) / v.threadlen;
  cudaError_t err = cudaSuccess;
  auto copy = [&](size_t offset, const void* src, size_t bytes) {
    if (err == cudaSuccess && bytes) err = cudaMemcpy(base + offset, src, bytes, cudaMemcpyHostToDevice);
  };
  for (uint32_t j = 0; j < v.num_product_modes; ++j) copy(l.ind + size_t(j) * v.nnz * 4, v.product_ind[j], v.nnz * 4);
  copy(l.bf, v.bf, size_t((v.nnz + 31) / 32) * 4);
  copy(l.sf, v.sf, size_t((partitions + 31) / 32) * 4);
  copy(l.groups, v.group_first_segment, size_t((partitions + 31) / 32) * 4);
  if (v.segment_rows) copy(l.rows, v.segment_rows, size_t(v.segments) * 4);
  copy(l.values, v.values, size_t(v.nnz) * v.value_size);
  if (err != cudaSuccess) return err;
  DeviceFcooRef r;
  r.nnz = v.nnz;
  r.segments = v.segments;
  r.threadlen = v.threadlen;
  r.num_product_modes = v.num_product_modes;
  r.product_ind = reinterpret_cast<const uint32_t*>(base + l.ind);
  r.bf = reinterpret_cast<const uint32_t*>(base + l.bf);
  r.sf = reinterpret_cast<const uint32_t*>(base + l.sf);
  r.group_first_segment = reinterpret_cast<const uint32_t*>(base + l.groups);
  r.segment_rows = v.segment_rows ? reinterpret_cast<const uint32_t*>(base + l.rows) : nullptr;
  r.values = base + l.values;
  *out = r;
  return cudaSuccess;
}

namespace {

// The launch arguments of either product (cols = nullptr: every factor has
// `width` columns).
template <typename T>
FcooArgs<T> make_args(const DeviceFcooRef& x, const T* const* factors, const uint32_t* cols, uint32_t width, T* out) {
  FcooArgs<T> a{};
  a.x = x;
  a.values = static_cast<const T*>(x.values);
  a.out = out;
  a.width = width;
  for (uint32_t j = 0; j < x.num_product_modes && j < kFcooMaxProductModes; ++j) {
    a.factors[j] = factors[j];
    a.cols[j] = cols ? cols[j] : width;
  }
  // Output rows (and Hadamard factor rows) start 16-byte aligned when the
  // width is a multiple of 16 bytes (device blocks are 256-byte aligned).
  a.vector_rows = (uint64_t(width) * sizeof(T)) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
  for (uint32_t j = 0; j < x.num_product_modes && j < kFcooMaxProductModes; ++j)
    a.vector_rows = a.vector_rows && reinterpret_cast<uintptr_t>(factors[j]) % 16 == 0;
  return a;
}

}  // namespace

template <typename T>
cudaError_t launch_fcoo_hadamard(const DeviceFcooRef& x, const T* const* factors, uint32_t width, T* out,
                                 int multiprocessors, cudaStream_t stream) {
  FcooArgs<T> a = make_args<T>(x, factors, nullptr, width, out);
  return launch<T, Hadamard>(a, multiprocessors, stream);
}

template <typename T>
cudaError_t launch_fcoo_kronecker(const DeviceFcooRef& x, const T* const* factors, const uint32_t* cols,
                                  uint32_t width, T* out, int multiprocessors, cudaStream_t stream) {
  FcooArgs<T> a = make_args<T>(x, factors, cols, width, out);
  return launch<T, Kronecker>(a, multiprocessors, stream);
}

template cudaError_t launch_fcoo_hadamard<float>(const DeviceFcooRef&, const float* const*, uint32_t, float*, int,
                                                 cudaStream_t);
template cudaError_t launch_fcoo_hadamard<double>(const DeviceFcooRef&, const double* const*, uint32_t, double*,
                                                  int, cudaStream_t);
template cudaError_t launch_fcoo_kronecker<float>(const DeviceFcooRef&, const float* const*, const uint32_t*,
                                                  uint32_t, float*, int, cudaStream_t);
template cudaError_t launch_fcoo_kronecker<double>(const DeviceFcooRef&, const double* const*, const uint32_t*,
                                                   uint32_t, double*, int, cudaStream_t);

}  // namespace spt::cuda
