// B-CSF / HB-CSF MTTKRP on the GPU (Nisa et al., §IV-V; layout in
// src/core/hbcsf.hpp; the CPU kernel src/kernels/cpu/mttkrp_hbcsf.cpp is
// the executable specification: same tasks, same sums). A fiber segment's
// sum (at most fiber_threshold leaves) is in T; the sums over a slice or a
// chunk are RunningSums (compensated for float32,
// cuda/running_sum.cuh), rounded to T once per store or atomic.
//
// Output scheme: the caller zeroes the output (mttkrp_with_device_operands
// in plugin.cu does), so rows of empty slices are zero without a kernel.
// The three groups own disjoint output rows (the format guarantees it), so
// their kernels never write the same row; within a group:
//  - COO: one nonzero per row -> a plain store;
//  - CSL: one warp per slice (its lane groups over the slice's nonzeros,
//    summed through shuffles) when the mean slice has at least 32 / L
//    nonzeros, else one lane group per slice -> a plain store per row; in
//    the default launch, when the longest slice has kCslChunksFromSlice
//    nonzeros or more, equal chunks of nonzeros per warp instead, with
//    running row sums added atomically (as the B-CSF leaves below);
//  - B-CSF: each warp owns an equal share of consecutive leaves (nonzeros)
//    and keeps segment and running row sums, rows added with atomicAdd
//    when the root row changes.
// All three groups run in one launch (block ranges).
//
// Why leaves and not the paper's slice units (a team of warps per unit,
// units binned by size, one launch per bin): by units the B-CSF group was
// slower than the sorted COO kernel on large and small tensors alike
// (docs/design-measurements.md, "HB-CSF by leaves"): a unit is a chain of
// dependent loads per lane group (segment bounds, leaves, ancestors) and a
// few big units leave most of the GPU idle. Equal chunks of segments were
// slower still: a heavy slice's long fibers piled into a few warps. Equal
// chunks of leaves give every warp the same work, load leaves and segment
// bounds coalesced (passed by shuffles) and need no barrier. The units
// mapping is in the git history; numbers in docs/performance.md.
//
// Lane groups: L consecutive lanes of a warp cover the rank columns in
// vectors of V (4 floats or 2 doubles, one 16-byte access, when the rank is
// a multiple of V; else 1): lane i takes vectors i, i + L, ... (coalesced
// row reads of the factors; L = the rank's vectors rounded up to a power of
// two, at most 32; wider ranks loop over column chunks, each with its own
// register sum). One lane group handles one COO nonzero, one CSL nonzero
// (a warp per slice), or one fiber segment; at rank 16 in float32 a warp
// runs 8 of them at once.
//
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "mttkrp_hbcsf.cuh"
#include "output_copies.cuh"
#include "running_sum.cuh"
#include "vector_pack.cuh"

namespace spt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

template <typename T>
struct HbcsfArgs {
  uint32_t order;
  uint32_t rank;
  uint32_t out_level;  // level of the output mode (0 = root; the non-root kernels use l >= 1)
  OutputCopies<T> out;  // the output, or copies of it (output_copies.cuh)
  const T* F[kHbcsfMaxOrder];  // by level; F[out_level] (the output mode) unused
  // COO group
  uint64_t coo_nnz;
  const uint32_t* coo_ind[kHbcsfMaxOrder];  // by level
  const T* coo_val;
  // CSL group
  uint64_t csl_slices;
  const uint32_t* csl_slice_ind;
  const uint32_t* csl_slice_ptr;
  const uint32_t* csl_ind[kHbcsfMaxOrder];  // [l - 1]
  const T* csl_val;
  // B-CSF group
  const uint32_t* node_ind[kHbcsfMaxOrder];     // [l - 1]
  const uint32_t* node_parent[kHbcsfMaxOrder];  // [l - 2]
  const uint32_t* segment_ptr;
  const uint32_t* leaf_ind;
  const T* bcsf_val;
  // The fused launch (hbcsf_fused_kernel).
  uint64_t segments, bcsf_nnz;
  const uint32_t* segment_row;
  uint64_t leaf_chunk;  // B-CSF leaves per warp, a multiple of 32
  uint64_t csl_nnz, csl_chunk;  // CSL nonzeros, and per warp (a multiple of 32)
  uint32_t coo_blocks, csl_blocks;  // its first blocks: the COO, then the CSL group
};

constexpr uint32_t kNoRow = 0xffffffffu;
constexpr unsigned kFullMask = 0xffffffffu;

template <typename T, int V>
__device__ __forceinline__ Pack<T, V> splat(T v) {
  Pack<T, V> p;
#pragma unroll
  for (int e = 0; e < V; ++e) p.v[e] = v;
  return p;
}

// Columns [u V, u V + V) of row `row` of a rank-column row-major matrix.
template <typename T, int V>
__device__ __forceinline__ Pack<T, V> row_pack(const T* m, uint32_t row, uint32_t rank, uint32_t u) {
  return reinterpret_cast<const Pack<T, V>*>(m + size_t(row) * rank)[u];
}

// Products and sums of packs; A may be a RunningSum of T.
template <typename A, typename T, int V>
__device__ __forceinline__ void mul_into(Pack<A, V>& p, const Pack<T, V>& g) {
#pragma unroll
  for (int e = 0; e < V; ++e) p.v[e] *= g.v[e];
}

template <typename A, typename T, int V>
__device__ __forceinline__ void add_into(Pack<A, V>& p, const Pack<T, V>& g) {
#pragma unroll
  for (int e = 0; e < V; ++e) p.v[e] += g.v[e];
}

template <typename A, typename T, int V>
__device__ __forceinline__ Pack<A, V> convert(const Pack<T, V>& p) {
  Pack<A, V> r;
#pragma unroll
  for (int e = 0; e < V; ++e) r.v[e] = static_cast<A>(p.v[e]);
  return r;
}

// Store (sole writer of the row) or add atomically (rows shared between
// warps), rounding a wider sum to T once.
template <typename T, int V, typename A>
__device__ __forceinline__ void write_pack(T* out, uint32_t row, uint32_t rank, uint32_t u, const Pack<A, V>& p,
                                           bool atomic) {
  T* o = out + size_t(row) * rank + size_t(u) * V;
  const Pack<T, V> x = convert<T>(p);
  if (atomic) atomic_add_pack<T, V>(o, x);
  else *reinterpret_cast<Pack<T, V>*>(o) = x;
}

// COO group: lane group k handles nonzero k (stride: the `blocks` blocks
// running the group; `block` = this block's index among them), a plain
// store.
template <typename T, int V, int L>
__device__ __forceinline__ void hbcsf_coo_body(const HbcsfArgs<T>& a, uint64_t block, uint64_t blocks) {
  const uint32_t lane = threadIdx.x % L;
  const uint32_t units = a.rank / V;
  const uint64_t groups = blocks * (kThreads / L);
  for (uint64_t k = (block * kThreads + threadIdx.x) / L; k < a.coo_nnz; k += groups) {
    const T v = __ldg(a.coo_val + k);
    const uint32_t row = __ldg(a.coo_ind[0] + k);
    for (uint32_t u = lane; u < units; u += L) {
      Pack<T, V> p = splat<T, V>(v);
      for (uint32_t l = 1; l < a.order; ++l) mul_into(p, row_pack<T, V>(a.F[l], __ldg(a.coo_ind[l] + k), a.rank, u));
      write_pack<T, V>(output_copy(a.out), row, a.rank, u, p, false);
    }
  }
}

// Sum a value over the 32 / L lane groups of a warp: afterwards every lane
// holds the sum over the lanes with its index within the group. All 32
// lanes must call it (warp-uniform).
template <typename T, int V, int L>
__device__ __forceinline__ void warp_sum_groups(Pack<T, V>& p) {
#pragma unroll
  for (int offset = L; offset < 32; offset <<= 1)
#pragma unroll
    for (int e = 0; e < V; ++e) p.v[e] += shfl_xor(0xffffffffu, p.v[e], offset);
}

// CSL group, two mappings (launch_fused picks by the mean slice length):
//  - kWarp: warp s handles slice s (grid-stride): its 32 / L lane groups
//    take the slice's nonzeros round robin, the group sums meet through
//    shuffles and the first group stores the row (long slices: short
//    dependent-load chains);
//  - else lane group s handles slice s alone, no shuffles (short slices:
//    no idle groups).
// Each slice's sum (value x the Hadamard product of the N-1 factor rows,
// over its nonzeros) stays in registers; one plain store per row (its only
// writer).
template <typename T, int V, int L, bool kWarp>
__device__ __forceinline__ void hbcsf_csl_body(const HbcsfArgs<T>& a, uint64_t block, uint64_t blocks) {
  constexpr uint32_t kWidth = kWarp ? 32 : L;  // lanes per slice
  constexpr uint32_t kGroups = kWidth / L;     // lane groups per slice
  const uint32_t lane_in_slice = threadIdx.x % kWidth;
  const uint32_t group = lane_in_slice / L, lane = lane_in_slice % L;
  const uint32_t units = a.rank / V;
  const uint64_t tasks = blocks * (kThreads / kWidth);
  // Loops uniform over the lanes of a slice (a whole warp with kWarp).
  for (uint64_t s = (block * kThreads + threadIdx.x) / kWidth; s < a.csl_slices; s += tasks) {
    const uint32_t zb = __ldg(a.csl_slice_ptr + s), ze = __ldg(a.csl_slice_ptr + s + 1);
    const uint32_t row = __ldg(a.csl_slice_ind + s);
    for (uint32_t c0 = 0; c0 < units; c0 += L) {
      const uint32_t u = c0 + lane;
      const bool column = u < units;
      Pack<RunningSum<T>, V> acc = splat<RunningSum<T>, V>(T(0));
      if (column) {
        for (uint32_t z = zb + group; z < ze; z += kGroups) {
          Pack<T, V> p = splat<T, V>(__ldg(a.csl_val + z));
          for (uint32_t l = 1; l < a.order; ++l)
            mul_into(p, row_pack<T, V>(a.F[l], __ldg(a.csl_ind[l - 1] + z), a.rank, u));
          add_into(acc, p);
        }
      }
      if constexpr (kWarp) warp_sum_groups<RunningSum<T>, V, L>(acc);
      if (column && group == 0) write_pack<T, V>(output_copy(a.out), row, a.rank, u, acc, false);
    }
  }
}

// The first segment of the leaf range starting at leaf `z`: the largest g
// < segments with segment_ptr[g] <= z (segment_ptr[0] = 0). A 32-way
// search by the whole warp (every lane gets the answer): about five
// rounds of one coalesced probe per lane for 2^25 segments. All 32 lanes
// must call it.
__device__ __forceinline__ uint64_t warp_find_segment(const uint32_t* segment_ptr, uint64_t segments, uint32_t z) {
  const uint32_t lane = threadIdx.x % 32;
  uint64_t lo = 0, hi = segments;  // invariant: segment_ptr[lo] <= z, the answer is in [lo, hi)
  while (hi - lo > 1) {
    const uint64_t step = (hi - lo + 31) / 32;
    const uint64_t probe = lo + lane * step;
    const bool below = probe < hi && __ldg(segment_ptr + probe) <= z;
    const uint32_t ballot = __ballot_sync(kFullMask, below);  // lane 0 (probe lo) always set
    const uint64_t k = 31 - __clz(ballot);
    lo += k * step;
    hi = min(lo + step, hi);
  }
  return lo;
}

// The window position of the lane's entry z (its segment or slice among the
// 32 of the window, whose ends the lanes hold in my_end, ascending: the
// number of them ending at or before z), or 32 for a lane without an entry.
// All 32 lanes must call it.
__device__ __forceinline__ uint32_t position_in_window(uint32_t my_end, uint64_t z, bool valid) {
  uint32_t offset = 0;
#pragma unroll
  for (uint32_t step = 16; step >= 1; step >>= 1) {
    const uint32_t e = __shfl_sync(kFullMask, my_end, int(offset + step - 1));
    if (e <= uint32_t(z)) offset += step;
  }
  return valid ? offset : 32u;
}

// B-CSF group, mapped by leaves (the default root kernel): warp w owns the
// leaves (nonzeros) [w chunk, (w + 1) chunk) whatever segments and slices
// they fall in (`warp` = its index among the group's warps), finds the
// segment of its first leaf by a warp search, and walks its leaves 32 at a
// time, as the COO kernel of cuda/mttkrp.cu walks nonzeros:
//  - lane j loads leaf j's value and coordinate, and the bounds, root row
//    and fiber coordinate of segment (window + j), where the window starts
//    at the segment of the batch's first leaf (32 leaves span at most 32
//    segments: a segment is never empty); a search over the lanes'
//    segment ends (shuffles) gives each leaf its segment in the window;
//  - the warp's lane groups (teams of L lanes over the rank columns) each
//    take the leaves held by their own L lanes in order, receiving them by
//    shuffles, and keep a segment sum (value x leaf-factor row); when the
//    segment changes the sum is multiplied by the fiber's factor row and
//    its ancestors' (climbing node_parent for order >= 4) and added to a
//    running row sum, which is added with atomicAdd when the root row
//    changes.
// A segment cut by a chunk or team boundary gives two partial sums, each
// multiplied by the fiber row: the product distributes, so the result is
// the same. Every warp has the same number of leaves: a heavy slice's long
// fibers spread over many warps instead of stalling one.
//
// kNonRoot: the same walk for the output mode at level a.out_level >= 1 of
// the tree (the "one tree plus a second kernel" product): a segment's sum
// is multiplied by the rows of every level but out_level (the root row of
// segment_row included), and the running sum is keyed by the segment's
// out_level coordinate instead of its root row. With the leaves' own mode
// as output (out_level = order - 1) each leaf adds value x the segment's
// product of rows into its own row (one atomic row per leaf).
template <typename T, int V, int L, bool kNonRoot, bool kOneLeafInFlight = false>
__device__ __forceinline__ void hbcsf_bcsf_leaves_body(const HbcsfArgs<T>& a, uint64_t warp) {
  if (warp * a.leaf_chunk >= a.bcsf_nnz) return;  // uniform per warp
  // Leaf and segment positions: they fit 32 bits (nnz < 2^32, checked at
  // upload), which the one-leaf build needs to stay within 64 registers;
  // the other build ran slower with them.
  using Pos = std::conditional_t<kOneLeafInFlight, uint32_t, uint64_t>;
  const Pos begin = Pos(warp * a.leaf_chunk);
  const Pos end = Pos(min(warp * a.leaf_chunk + a.leaf_chunk, a.bcsf_nnz));
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t team_first = lane / L * L, lane_in_team = lane % L;
  const uint32_t units = a.rank / V;
  const uint32_t leaf_level = a.order - 1, fiber_level = a.order - 2;
  const uint32_t out_level = kNonRoot ? a.out_level : 0u;
  T* const out = output_copy(a.out);
  const bool leaf_out = kNonRoot && out_level == leaf_level;
  const T* leaf_factor = a.F[leaf_level];  // null when leaf_out (not read)
  const uint32_t* fiber_ind = a.node_ind[fiber_level - 1];
  const Pos first_segment = Pos(warp_find_segment(a.segment_ptr, a.segments, uint32_t(begin)));
  // Leaves whose factor rows a team loads before using any of them: with
  // short fibers each leaf otherwise waited for its row in turn.
  constexpr int kPrefetch = kNonRoot || kOneLeafInFlight ? 1 : (L < 2 ? L : 2);
  for (uint32_t c0 = 0; c0 < units; c0 += L) {
    const uint32_t u = c0 + lane_in_team;
    const bool column = u < units;
    // seg_sum: one segment (at most fiber_threshold leaves) in T; acc: the
    // segments of one output row, a RunningSum.
    Pack<RunningSum<T>, V> acc = splat<RunningSum<T>, V>(T(0));
    Pack<T, V> seg_sum = splat<T, V>(T(0));
    Pack<T, V> prefix = splat<T, V>(T(1));
    uint32_t acc_row = kNoRow;
    Pos cur_seg = ~Pos(0);  // the segment seg_sum belongs to
    uint32_t cur_row = kNoRow, cur_fiber = 0;
    // The product of the factor rows of the current segment's levels 0..N-2
    // but out_level (level 0 = the root row, read for non-root outputs
    // only) into p; returns the out_level coordinate (the root row for the
    // root kernel).
    auto segment_rows = [&](auto& p) -> uint32_t {
      uint32_t key = cur_row;
      if (fiber_level == out_level) key = cur_fiber;
      else mul_into(p, row_pack<T, V>(a.F[fiber_level], cur_fiber, a.rank, u));
      if (fiber_level >= 2) {  // order >= 4: the levels above the fiber
        uint32_t node = __ldg(a.node_parent[fiber_level - 2] + cur_seg);
        for (uint32_t l = fiber_level - 1; l >= 1; --l) {
          const uint32_t ind = __ldg(a.node_ind[l - 1] + node);
          if (l == out_level) key = ind;
          else mul_into(p, row_pack<T, V>(a.F[l], ind, a.rank, u));
          if (l >= 2) node = __ldg(a.node_parent[l - 2] + node);
        }
      }
      if (kNonRoot) mul_into(p, row_pack<T, V>(a.F[0], cur_row, a.rank, u));
      return key;
    };
    // seg_sum x the segment's rows into the running sum of its output row
    // (flushing it when the row changes); the team's lanes run it together.
    auto finish_segment = [&]() {
      uint32_t key = cur_row;
      if constexpr (kNonRoot) {
        key = segment_rows(seg_sum);
      } else {
        // The root kernel spelled out (through segment_rows it ran slower).
        mul_into(seg_sum, row_pack<T, V>(a.F[fiber_level], cur_fiber, a.rank, u));
        if (fiber_level >= 2) {  // order >= 4: the levels above the fiber
          uint32_t node = __ldg(a.node_parent[fiber_level - 2] + cur_seg);
          for (uint32_t l = fiber_level - 1; l >= 1; --l) {
            mul_into(seg_sum, row_pack<T, V>(a.F[l], __ldg(a.node_ind[l - 1] + node), a.rank, u));
            if (l >= 2) node = __ldg(a.node_parent[l - 2] + node);
          }
        }
      }
      if (key != acc_row) {
        if (acc_row != kNoRow) write_pack<T, V>(out, acc_row, a.rank, u, acc, true);
        acc_row = key;
        acc = convert<RunningSum<T>>(seg_sum);
      } else {
        add_into(acc, seg_sum);
      }
    };
    Pos window = first_segment;
    // (32-bit positions: no base + 32 past end, which could wrap.)
    for (Pos base = begin; base < end; base = kOneLeafInFlight && end - base <= 32 ? end : base + 32) {
      const Pos z = base + lane;
      const bool valid = z < end;
      const T my_val = valid ? __ldg(a.bcsf_val + z) : T(0);
      const uint32_t my_leaf = valid ? __ldg(a.leaf_ind + z) : 0u;
      const Pos g = window + lane;
      const bool in_range = g < a.segments;
      const uint32_t my_end = in_range ? __ldg(a.segment_ptr + g + 1) : 0xffffffffu;
      const uint32_t my_row = in_range ? __ldg(a.segment_row + g) : kNoRow;
      const uint32_t my_fiber = in_range ? __ldg(fiber_ind + g) : 0u;
      const uint32_t offset = position_in_window(my_end, z, valid);  // this leaf's segment
      // The team walks its L leaves kPrefetch at a time: first the shuffles
      // and the leaf rows of all kPrefetch (independent loads, in flight
      // together), then the segment logic in order.
      for (uint32_t s0 = 0; s0 < uint32_t(L); s0 += kPrefetch) {
        uint32_t o[kPrefetch], leaf[kPrefetch], row[kPrefetch], fiber[kPrefetch];
        T v[kPrefetch];
        Pack<T, V> f[kPrefetch];
#pragma unroll
        for (int k = 0; k < kPrefetch; ++k) {  // every lane shuffles each round
          const int src = int(team_first + s0 + k);
          o[k] = __shfl_sync(kFullMask, offset, src);
          v[k] = __shfl_sync(kFullMask, my_val, src);
          leaf[k] = __shfl_sync(kFullMask, my_leaf, src);
          row[k] = __shfl_sync(kFullMask, my_row, int(o[k] & 31));
          fiber[k] = __shfl_sync(kFullMask, my_fiber, int(o[k] & 31));
          f[k] = !leaf_out && column && o[k] != 32u ? row_pack<T, V>(leaf_factor, leaf[k], a.rank, u)
                                                    : splat<T, V>(T(0));
        }
#pragma unroll
        for (int k = 0; k < kPrefetch; ++k) {
          if (o[k] == 32u || !column) continue;
          const Pos seg = window + o[k];
          if (leaf_out) {  // each leaf its own output row
            if (seg != cur_seg) {
              cur_seg = seg;
              cur_row = row[k];
              cur_fiber = fiber[k];
              prefix = splat<T, V>(T(1));
              segment_rows(prefix);
            }
            Pack<T, V> p = splat<T, V>(v[k]);
            mul_into(p, prefix);
            write_pack<T, V>(out, leaf[k], a.rank, u, p, true);
            continue;
          }
          if (seg != cur_seg) {
            if (cur_seg != ~Pos(0)) finish_segment();
            cur_seg = seg;
            cur_row = row[k];
            cur_fiber = fiber[k];
            seg_sum = splat<T, V>(T(0));
          }
#pragma unroll
          for (int e = 0; e < V; ++e) seg_sum.v[e] += v[k] * f[k].v[e];
        }
      }
      // The next batch's window: the segment of its first leaf.
      window += __popc(__ballot_sync(kFullMask, my_end <= uint32_t(base + 32)));
    }
    if (column && !leaf_out && cur_seg != ~Pos(0)) {
      finish_segment();
      write_pack<T, V>(out, acc_row, a.rank, u, acc, true);
    }
  }
}

// CSL group of the fused launch, mapped by chunks of nonzeros as the B-CSF
// leaves above (`warp` = this warp's index among the group's warps): the
// warp finds the slice of its first nonzero by a warp search and walks its
// nonzeros 32 at a time with a window of 32 slices (bounds and rows loaded
// by the lanes); each team multiplies its lanes' nonzeros by the N-1 factor
// rows and keeps a running row sum, added atomically when the slice
// changes. Why not a warp or lane group per slice (hbcsf_csl_body, the
// paper's): one slice of thousands of singleton fibers kept one warp busy
// while the rest of the launch idled (docs/design-measurements.md, "HB-CSF
// CSL by chunks").
template <typename T, int V, int L>
__device__ __forceinline__ void hbcsf_csl_chunks_body(const HbcsfArgs<T>& a, uint64_t warp) {
  const uint64_t begin = warp * a.csl_chunk;
  if (begin >= a.csl_nnz) return;  // uniform per warp
  const uint64_t end = min(begin + a.csl_chunk, a.csl_nnz);
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t team_first = lane / L * L, lane_in_team = lane % L;
  const uint32_t units = a.rank / V;
  const uint64_t first_slice = warp_find_segment(a.csl_slice_ptr, a.csl_slices, uint32_t(begin));
  for (uint32_t c0 = 0; c0 < units; c0 += L) {
    const uint32_t u = c0 + lane_in_team;
    const bool column = u < units;
    Pack<RunningSum<T>, V> acc = splat<RunningSum<T>, V>(T(0));
    uint32_t acc_row = kNoRow;
    uint64_t window = first_slice;
    for (uint64_t base = begin; base < end; base += 32) {
      const uint64_t z = base + lane;
      const bool valid = z < end;
      const T my_val = valid ? __ldg(a.csl_val + z) : T(0);
      const uint64_t g = window + lane;
      const bool in_range = g < a.csl_slices;
      const uint32_t my_end = in_range ? __ldg(a.csl_slice_ptr + g + 1) : 0xffffffffu;
      const uint32_t my_row = in_range ? __ldg(a.csl_slice_ind + g) : kNoRow;
      const uint32_t offset = position_in_window(my_end, z, valid);  // this nonzero's slice
      for (uint32_t s = 0; s < uint32_t(L); ++s) {  // every lane shuffles each round
        const int src = int(team_first + s);
        const uint32_t o = __shfl_sync(kFullMask, offset, src);
        const T v = __shfl_sync(kFullMask, my_val, src);
        const uint32_t row = __shfl_sync(kFullMask, my_row, int(o & 31));
        if (o == 32u || !column) continue;
        const uint64_t k = base + uint32_t(src);
        Pack<T, V> p = splat<T, V>(v);
        for (uint32_t l = 1; l < a.order; ++l)
          mul_into(p, row_pack<T, V>(a.F[l], __ldg(a.csl_ind[l - 1] + k), a.rank, u));
        if (row != acc_row) {
          if (acc_row != kNoRow) write_pack<T, V>(output_copy(a.out), acc_row, a.rank, u, acc, true);
          acc_row = row;
          acc = convert<RunningSum<T>>(p);
        } else {
          add_into(acc, p);
        }
      }
      window += __popc(__ballot_sync(kFullMask, my_end <= uint32_t(base + 32)));
    }
    if (column && acc_row != kNoRow) write_pack<T, V>(output_copy(a.out), acc_row, a.rank, u, acc, true);
  }
}

enum CslMapping : int { kCslWarpPerSlice = 0, kCslGroupPerSlice = 1, kCslChunks = 2 };

// The whole HB-CSF MTTKRP in one launch: blocks [0, coo_blocks) run the
// COO group, the next csl_blocks the CSL group, the rest the B-CSF group
// by leaves (the branch is uniform per block; no body uses a barrier).
// One launch instead of three to seven: on small tensors the launches and
// their tails cost more than the work.
// kCsl: how the CSL group is mapped (CslMapping).
// kManyLeaves: the build for launches with many B-CSF leaves (float32
// vectors of 4 columns; hbcsf_fused_many_leaves_kernel): 4 resident blocks
// per SM (64 registers, where the compensated row sums need more) and one
// leaf row in flight per team instead of two. Many waves of blocks gain
// more from the fourth block than from the prefetch; a launch of a wave or
// two loses (kManyLeavesFrom). The other build keeps ptxas's own register
// choice (naming a minimum of one block let ptxas double its registers).
template <typename T, int V, int L, int kCsl, bool kManyLeaves>
__device__ __forceinline__ void hbcsf_fused_body(const HbcsfArgs<T>& a) {
  const uint64_t block = blockIdx.x;
  if (block < a.coo_blocks) {
    hbcsf_coo_body<T, V, L>(a, block, a.coo_blocks);
  } else if (block < uint64_t(a.coo_blocks) + a.csl_blocks) {
    if constexpr (kCsl == kCslChunks)
      hbcsf_csl_chunks_body<T, V, L>(a, (block - a.coo_blocks) * kWarps + threadIdx.x / 32);
    else
      hbcsf_csl_body<T, V, L, kCsl == kCslWarpPerSlice>(a, block - a.coo_blocks, a.csl_blocks);
  } else {
    const uint64_t first = uint64_t(a.coo_blocks) + a.csl_blocks;
    hbcsf_bcsf_leaves_body<T, V, L, false, kManyLeaves>(a, (block - first) * kWarps + threadIdx.x / 32);
  }
}

template <typename T, int V, int L, int kCsl>
__global__ void __launch_bounds__(kThreads) hbcsf_fused_kernel(const HbcsfArgs<T> a) {
  hbcsf_fused_body<T, V, L, kCsl, false>(a);
}

template <typename T, int V, int L, int kCsl>
__global__ void __launch_bounds__(kThreads, 4) hbcsf_fused_many_leaves_kernel(const HbcsfArgs<T> a) {
  hbcsf_fused_body<T, V, L, kCsl, true>(a);
}

// The fused launch maps the CSL group by chunks of nonzeros when its
// longest slice has at least this many nonzeros (CSL slices hold at most
// slice_split_nnz, 512 by default): a lane group or warp per slice then
// runs a long chain of dependent rounds on it while the rest of the launch
// idles. Chunks won on the modes with long CSL slices and lost a little on
// those with short slices only; the threshold sits between them
// (docs/design-measurements.md, "kCslChunksFromSlice").
constexpr uint64_t kCslChunksFromSlice = 64;

// CSL nonzeros per warp of the fused launch: the power of two nearest to
// sqrt(csl_nnz) / 6 within [64, 4096], the B-CSF leaf rule without its
// fiber term (every CSL nonzero is its own fiber).
uint64_t hbcsf_csl_chunk(uint64_t csl_nnz) {
  const double want = std::sqrt(double(std::max<uint64_t>(csl_nnz, 1))) / 6.0;
  const double power = std::round(std::log2(std::max(want, 1.0)));
  return uint64_t(1) << uint32_t(std::min(12.0, std::max(6.0, power)));
}

// Grid for `work` lane groups (COO), warps (CSL) or teams (B-CSF) of `per_block`
// per block: enough blocks for all of it, at most 32 per multiprocessor (the
// kernels loop over the rest).
unsigned grid_for(uint64_t work, uint64_t per_block, int multiprocessors) {
  const uint64_t want = (work + per_block - 1) / per_block;
  const uint64_t cap = uint64_t(std::max(multiprocessors, 1)) * 32;
  return static_cast<unsigned>(std::max<uint64_t>(1, std::min(want, cap)));
}

// The non-root kernels (defined with the non-root launch below).
template <typename T, int V, int L>
__global__ void __launch_bounds__(kThreads) hbcsf_coo_nonroot_kernel(const HbcsfArgs<T> a);
template <typename T, int V, int L, bool kWarp>
__global__ void __launch_bounds__(kThreads) hbcsf_csl_nonroot_kernel(const HbcsfArgs<T> a);

// The COO and CSL groups' non-root launches (one each); records them in p.
template <typename T, int V, int L>
cudaError_t launch_nonroot_coo_csl(const HbcsfArgs<T>& a, const DeviceHbcsfRef& x, int multiprocessors,
                                   cudaStream_t stream, HbcsfLaunchPlan& p) {
  constexpr uint64_t kGroupsPerBlock = kThreads / L;
  if (a.coo_nnz > 0) {
    const unsigned grid = grid_for(a.coo_nnz, kGroupsPerBlock, multiprocessors);
    hbcsf_coo_nonroot_kernel<T, V, L><<<grid, kThreads, 0, stream>>>(a);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
    p.launches++;
    p.coo_groups = uint64_t(grid) * kGroupsPerBlock;
  }
  if (a.csl_slices > 0) {
    // A warp per slice once the mean slice fills the warp's lane groups.
    const bool warp_per_slice = x.csl_nnz >= x.csl_slices * (32 / L);
    p.csl_warp_per_slice = warp_per_slice;
    const unsigned grid = warp_per_slice ? grid_for(a.csl_slices, kWarps, multiprocessors)
                                         : grid_for(a.csl_slices, kGroupsPerBlock, multiprocessors);
    if (warp_per_slice) hbcsf_csl_nonroot_kernel<T, V, L, true><<<grid, kThreads, 0, stream>>>(a);
    else hbcsf_csl_nonroot_kernel<T, V, L, false><<<grid, kThreads, 0, stream>>>(a);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
    p.launches++;
  }
  return cudaSuccess;
}

// One fused launch for the CSL mapping `csl` (CslMapping); kManyLeaves:
// hbcsf_fused_many_leaves_kernel, built only for float32 vectors of 4
// columns and teams of 4 or more lanes.
template <typename T, int V, int L, bool kManyLeaves>
void launch_fused_kernel(int csl, unsigned grid, cudaStream_t stream, const HbcsfArgs<T>& a) {
  if constexpr (kManyLeaves && sizeof(T) == 4 && V == 4 && L >= 4) {
    if (csl == kCslChunks) hbcsf_fused_many_leaves_kernel<T, V, L, kCslChunks><<<grid, kThreads, 0, stream>>>(a);
    else if (csl == kCslWarpPerSlice)
      hbcsf_fused_many_leaves_kernel<T, V, L, kCslWarpPerSlice><<<grid, kThreads, 0, stream>>>(a);
    else hbcsf_fused_many_leaves_kernel<T, V, L, kCslGroupPerSlice><<<grid, kThreads, 0, stream>>>(a);
  } else {
    if (csl == kCslChunks) hbcsf_fused_kernel<T, V, L, kCslChunks><<<grid, kThreads, 0, stream>>>(a);
    else if (csl == kCslWarpPerSlice) hbcsf_fused_kernel<T, V, L, kCslWarpPerSlice><<<grid, kThreads, 0, stream>>>(a);
    else hbcsf_fused_kernel<T, V, L, kCslGroupPerSlice><<<grid, kThreads, 0, stream>>>(a);
  }
}

// B-CSF leaves from which the fused launch takes its kManyLeaves build:
// between the measured tensors that lost (a few hundred thousand leaves)
// and won (tens of millions) with it (docs/design-measurements.md,
// "HB-CSF fused kernel occupancy").
constexpr uint64_t kManyLeavesFrom = uint64_t(1) << 21;

// The fused launch (hbcsf_fused_kernel): the COO and CSL groups' blocks as
// in launch_nonroot_coo_csl, then enough blocks for the B-CSF leaves in chunks of
// a.leaf_chunk.
template <typename T, int V, int L>
cudaError_t launch_fused(HbcsfArgs<T> a, const DeviceHbcsfRef& x, int multiprocessors, cudaStream_t stream,
                         HbcsfLaunchPlan* plan) {
  HbcsfLaunchPlan p;
  p.lanes = L;
  p.vector = V;
  constexpr uint64_t kGroupsPerBlock = kThreads / L;
  a.coo_blocks = a.coo_nnz > 0 ? grid_for(a.coo_nnz, kGroupsPerBlock, multiprocessors) : 0;
  p.coo_groups = uint64_t(a.coo_blocks) * kGroupsPerBlock;
  // CSL by chunks of nonzeros when one slice would hold a warp for long
  // (see hbcsf_csl_chunks_body); else as the paper, a warp per slice once
  // the mean slice fills the warp's lane groups, or a lane group per slice.
  a.csl_nnz = x.csl_nnz;
  const bool csl_chunks = x.csl_max_slice >= kCslChunksFromSlice;
  const bool warp_per_slice = x.csl_nnz >= x.csl_slices * (32 / L);
  p.csl_warp_per_slice = !csl_chunks && warp_per_slice;
  if (a.csl_nnz == 0) {
    a.csl_blocks = 0;
  } else if (csl_chunks) {
    a.csl_chunk = hbcsf_csl_chunk(x.csl_nnz);
    a.csl_blocks = unsigned(((a.csl_nnz + a.csl_chunk - 1) / a.csl_chunk + kWarps - 1) / kWarps);
  } else {
    a.csl_blocks = warp_per_slice ? grid_for(a.csl_slices, kWarps, multiprocessors)
                                  : grid_for(a.csl_slices, kGroupsPerBlock, multiprocessors);
  }
  a.segments = x.segments;
  a.bcsf_nnz = x.bcsf_nnz;
  a.segment_row = x.segment_row;
  uint64_t bcsf_blocks = 0;
  if (a.bcsf_nnz > 0) {
    const uint64_t warps = (a.bcsf_nnz + a.leaf_chunk - 1) / a.leaf_chunk;
    bcsf_blocks = (warps + kWarps - 1) / kWarps;
    p.leaf_chunk = a.leaf_chunk;
  }
  const uint64_t blocks = uint64_t(a.coo_blocks) + a.csl_blocks + bcsf_blocks;
  if (blocks == 0) {
    if (plan) *plan = p;
    return cudaSuccess;
  }
  if (blocks > 0x7fffffffull) return cudaErrorInvalidConfiguration;
  const unsigned grid = unsigned(blocks);
  const int csl = csl_chunks ? kCslChunks : warp_per_slice ? kCslWarpPerSlice : kCslGroupPerSlice;
  bool many_leaves = false;
  if constexpr (sizeof(T) == 4 && V == 4 && L >= 4) many_leaves = x.bcsf_nnz >= kManyLeavesFrom;
  if (many_leaves) launch_fused_kernel<T, V, L, true>(csl, grid, stream, a);
  else launch_fused_kernel<T, V, L, false>(csl, grid, stream, a);
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  p.launches = 1;
  p.bcsf_blocks = bcsf_blocks;
  if (plan) *plan = p;
  return cudaSuccess;
}

template <typename T, int V>
cudaError_t launch_for_lanes(const HbcsfArgs<T>& a, const DeviceHbcsfRef& x, int lanes, int multiprocessors,
                             cudaStream_t stream, HbcsfLaunchPlan* plan) {
  switch (lanes) {
    case 1: return launch_fused<T, V, 1>(a, x, multiprocessors, stream, plan);
    case 2: return launch_fused<T, V, 2>(a, x, multiprocessors, stream, plan);
    case 4: return launch_fused<T, V, 4>(a, x, multiprocessors, stream, plan);
    case 8: return launch_fused<T, V, 8>(a, x, multiprocessors, stream, plan);
    case 16: return launch_fused<T, V, 16>(a, x, multiprocessors, stream, plan);
    case 32: return launch_fused<T, V, 32>(a, x, multiprocessors, stream, plan);
    default: return cudaErrorInvalidValue;
  }
}

// ---- Non-root modes ("one tree plus a second kernel") ----------------
// MTTKRP in the mode at level out_level >= 1 of a tree rooted elsewhere:
// out(i_l, :) += val * the product of the factor rows of every other level
// (the root's included). Output rows of a non-root mode are shared by many
// nonzeros, slices and groups, so every write is an atomicAdd onto the
// zeroed output; no group owns a row and the three launches (COO, CSL,
// B-CSF) may touch the same rows (they run one after the other on one
// stream; the atomics make even concurrent launches correct).

// COO group: lane group k handles nonzero k (grid-stride).
template <typename T, int V, int L>
__global__ void __launch_bounds__(kThreads) hbcsf_coo_nonroot_kernel(const HbcsfArgs<T> a) {
  const uint32_t lane = threadIdx.x % L;
  const uint32_t units = a.rank / V;
  const uint64_t groups = uint64_t(gridDim.x) * (kThreads / L);
  for (uint64_t k = (uint64_t(blockIdx.x) * kThreads + threadIdx.x) / L; k < a.coo_nnz; k += groups) {
    const T v = __ldg(a.coo_val + k);
    const uint32_t row = __ldg(a.coo_ind[a.out_level] + k);
    for (uint32_t u = lane; u < units; u += L) {
      Pack<T, V> p = splat<T, V>(v);
      for (uint32_t l = 0; l < a.order; ++l)
        if (l != a.out_level) mul_into(p, row_pack<T, V>(a.F[l], __ldg(a.coo_ind[l] + k), a.rank, u));
      write_pack<T, V>(output_copy(a.out), row, a.rank, u, p, true);
    }
  }
}

// CSL group: kWarp as in hbcsf_csl_kernel (a warp per slice, its lane
// groups over the slice's nonzeros round robin; else a lane group per
// slice). Per nonzero: value x the root factor row of the slice x the rows
// of the other levels, added atomically into the row of its out_level
// coordinate. No shuffles or barriers: lanes are independent.
template <typename T, int V, int L, bool kWarp>
__global__ void __launch_bounds__(kThreads) hbcsf_csl_nonroot_kernel(const HbcsfArgs<T> a) {
  constexpr uint32_t kWidth = kWarp ? 32 : L;  // lanes per slice
  constexpr uint32_t kGroups = kWidth / L;     // lane groups per slice
  const uint32_t lane_in_slice = threadIdx.x % kWidth;
  const uint32_t group = lane_in_slice / L, lane = lane_in_slice % L;
  const uint32_t units = a.rank / V;
  const uint64_t tasks = uint64_t(gridDim.x) * (kThreads / kWidth);
  const uint32_t out_ind = a.out_level - 1;  // csl_ind is indexed by level - 1
  for (uint64_t s = (uint64_t(blockIdx.x) * kThreads + threadIdx.x) / kWidth; s < a.csl_slices; s += tasks) {
    const uint32_t zb = __ldg(a.csl_slice_ptr + s), ze = __ldg(a.csl_slice_ptr + s + 1);
    const uint32_t slice_row = __ldg(a.csl_slice_ind + s);
    for (uint32_t u = lane; u < units; u += L) {
      const Pack<T, V> root = row_pack<T, V>(a.F[0], slice_row, a.rank, u);
      for (uint32_t z = zb + group; z < ze; z += kGroups) {
        Pack<T, V> p = splat<T, V>(__ldg(a.csl_val + z));
        mul_into(p, root);
        for (uint32_t l = 1; l < a.order; ++l)
          if (l != a.out_level) mul_into(p, row_pack<T, V>(a.F[l], __ldg(a.csl_ind[l - 1] + z), a.rank, u));
        write_pack<T, V>(output_copy(a.out), __ldg(a.csl_ind[out_ind] + z), a.rank, u, p, true);
      }
    }
  }
}

// B-CSF group: hbcsf_bcsf_leaves_body with kNonRoot (equal chunks of
// leaves per warp, as the root kernel). Against the previous mapping (a
// warp per slice unit, its lane groups over the unit's segments) it was
// faster on the knowledge-graph tensors, about the same on most others and
// slower on a few modes; kept for one mapping in both kernels and the
// small tensors. A leaf-mode output (per-leaf atomic rows) stays slow on
// skewed tensors (docs/design-measurements.md, "HB-CSF non-root by
// leaves").
template <typename T, int V, int L>
__global__ void __launch_bounds__(kThreads) hbcsf_bcsf_nonroot_kernel(const HbcsfArgs<T> a) {
  hbcsf_bcsf_leaves_body<T, V, L, true>(a, uint64_t(blockIdx.x) * kWarps + threadIdx.x / 32);
}

template <typename T, int V, int L>
cudaError_t launch_nonroot_all(HbcsfArgs<T> a, const DeviceHbcsfRef& x, int multiprocessors, cudaStream_t stream,
                               HbcsfLaunchPlan* plan) {
  HbcsfLaunchPlan p;
  p.lanes = L;
  p.vector = V;
  if (cudaError_t err = launch_nonroot_coo_csl<T, V, L>(a, x, multiprocessors, stream, p); err != cudaSuccess)
    return err;
  if (a.bcsf_nnz > 0) {
    const uint64_t warps = (a.bcsf_nnz + a.leaf_chunk - 1) / a.leaf_chunk;
    const uint64_t grid = (warps + kWarps - 1) / kWarps;
    if (grid > 0x7fffffffull) return cudaErrorInvalidConfiguration;
    hbcsf_bcsf_nonroot_kernel<T, V, L><<<unsigned(grid), kThreads, 0, stream>>>(a);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
    p.launches++;
    p.bcsf_blocks = grid;
    p.leaf_chunk = a.leaf_chunk;
  }
  if (plan) *plan = p;
  return cudaSuccess;
}

template <typename T, int V>
cudaError_t launch_nonroot_for_lanes(const HbcsfArgs<T>& a, const DeviceHbcsfRef& x, int lanes, int multiprocessors,
                                     cudaStream_t stream, HbcsfLaunchPlan* plan) {
  switch (lanes) {
    case 1: return launch_nonroot_all<T, V, 1>(a, x, multiprocessors, stream, plan);
    case 2: return launch_nonroot_all<T, V, 2>(a, x, multiprocessors, stream, plan);
    case 4: return launch_nonroot_all<T, V, 4>(a, x, multiprocessors, stream, plan);
    case 8: return launch_nonroot_all<T, V, 8>(a, x, multiprocessors, stream, plan);
    case 16: return launch_nonroot_all<T, V, 16>(a, x, multiprocessors, stream, plan);
    case 32: return launch_nonroot_all<T, V, 32>(a, x, multiprocessors, stream, plan);
    default: return cudaErrorInvalidValue;
  }
}

// The kernel arguments of x for output level out_level (F by level; the
// output level's factor left null), or cudaErrorInvalidValue for a bad
// order, rank, output or missing factor.
template <typename T>
cudaError_t make_args(const DeviceHbcsfRef& x, const T* const* factors, uint32_t out_level, uint32_t rank, T* out,
                      HbcsfArgs<T>& a) {
  if (x.order < 3 || x.order > kHbcsfMaxOrder || rank == 0 || !out || !factors || out_level >= x.order)
    return cudaErrorInvalidValue;
  a = HbcsfArgs<T>{};
  a.order = x.order;
  a.rank = rank;
  a.out_level = out_level;
  a.out.base = out;
  for (uint32_t l = 0; l < x.order; ++l) {
    if (l == out_level) continue;
    a.F[l] = factors[x.mode_order[l]];
    if (!a.F[l]) return cudaErrorInvalidValue;
  }
  a.coo_nnz = x.coo_nnz;
  for (uint32_t l = 0; l < x.order; ++l) a.coo_ind[l] = x.coo_ind[l];
  a.coo_val = static_cast<const T*>(x.coo_val);
  a.csl_slices = x.csl_slices;
  a.csl_slice_ind = x.csl_slice_ind;
  a.csl_slice_ptr = x.csl_slice_ptr;
  for (uint32_t l = 0; l < kHbcsfMaxOrder; ++l) {
    a.csl_ind[l] = x.csl_ind[l];
    a.node_ind[l] = x.node_ind[l];
    a.node_parent[l] = x.node_parent[l];
  }
  a.csl_val = static_cast<const T*>(x.csl_val);
  a.segment_ptr = x.segment_ptr;
  a.leaf_ind = x.leaf_ind;
  a.bcsf_val = static_cast<const T*>(x.bcsf_val);
  return cudaSuccess;
}

// Lanes per group for `rank` columns in vectors of `wide` (see
// launch_mttkrp_hbcsf).
int lanes_for(uint32_t rank, int wide, bool& vectorised) {
  vectorised = rank % wide == 0;
  const uint32_t units = vectorised ? rank / wide : rank;
  int lanes = 1;
  while (lanes < 32 && uint32_t(lanes) < units) lanes *= 2;
  return lanes;
}

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// The device copy's parts, in order, each at a 256-byte aligned offset.
struct Part {
  const void* src;
  size_t bytes;
  size_t offset;
};

struct Layout {
  std::vector<Part> parts;
  size_t total = 0;
  size_t add(const void* src, size_t bytes) {
    const size_t offset = total;
    parts.push_back({src, bytes, offset});
    total = align_up(offset + bytes, 256);
    return offset;
  }
};

// Offsets of every array of the copy (order must be in range).
struct Offsets {
  size_t coo_ind[kHbcsfMaxOrder], coo_val;
  size_t csl_slice_ind, csl_slice_ptr, csl_ind[kHbcsfMaxOrder], csl_val;
  size_t node_ind[kHbcsfMaxOrder], node_parent[kHbcsfMaxOrder];
  size_t segment_ptr, leaf_ind, bcsf_val, unit_row, unit_segment_ptr, unit_split, segment_row;
};

// The root row of each fiber segment (DeviceHbcsfRef::segment_row), from
// the units (each covers a contiguous range of segments of one slice).
// Empty when the units do not cover the segments exactly.
std::vector<uint32_t> segment_rows_of(const HostHbcsfView& x) {
  std::vector<uint32_t> rows;
  if (x.units == 0 || !x.unit_segment_ptr || !x.unit_row || x.unit_segment_ptr[0] != 0 ||
      x.unit_segment_ptr[x.units] != x.segments)
    return rows;
  rows.resize(x.segments);
  for (uint64_t u = 0; u < x.units; ++u) {
    const uint32_t b = x.unit_segment_ptr[u], e = x.unit_segment_ptr[u + 1];
    if (e < b || e > x.segments) return {};
    std::fill(rows.begin() + b, rows.begin() + e, x.unit_row[u]);
  }
  return rows;
}

Layout make_layout(const HostHbcsfView& x, Offsets& o) {
  Layout l;
  const size_t u4 = sizeof(uint32_t), vs = x.value_size;
  for (uint32_t v = 0; v < x.order; ++v) o.coo_ind[v] = l.add(x.coo_ind[v], x.coo_nnz * u4);
  o.coo_val = l.add(x.coo_val, x.coo_nnz * vs);
  o.csl_slice_ind = l.add(x.csl_slice_ind, x.csl_slices * u4);
  o.csl_slice_ptr = l.add(x.csl_slice_ptr, (x.csl_slices + 1) * u4);
  for (uint32_t v = 1; v < x.order; ++v) o.csl_ind[v - 1] = l.add(x.csl_ind[v - 1], x.csl_nnz * u4);
  o.csl_val = l.add(x.csl_val, x.csl_nnz * vs);
  for (uint32_t v = 1; v + 1 < x.order; ++v) o.node_ind[v - 1] = l.add(x.node_ind[v - 1], x.node_count[v - 1] * u4);
  for (uint32_t v = 2; v + 1 < x.order; ++v)
    o.node_parent[v - 2] = l.add(x.node_parent[v - 2], x.node_count[v - 1] * u4);
  o.segment_ptr = l.add(x.segment_ptr, (x.segments + 1) * u4);
  o.leaf_ind = l.add(x.leaf_ind, x.bcsf_nnz * u4);
  o.bcsf_val = l.add(x.bcsf_val, x.bcsf_nnz * vs);
  o.unit_row = l.add(x.unit_row, x.units * u4);
  o.unit_segment_ptr = l.add(x.unit_segment_ptr, (x.units + 1) * u4);
  o.unit_split = l.add(x.unit_split, x.units);
  o.segment_row = l.add(nullptr, x.segments * u4);  // filled by hbcsf_upload
  l.total = std::max<size_t>(l.total, 1);
  return l;
}

}  // namespace

size_t hbcsf_copy_bytes(const HostHbcsfView& x) {
  if (x.order < 3 || x.order > kHbcsfMaxOrder) return 0;
  Offsets o{};
  return make_layout(x, o).total;
}

cudaError_t hbcsf_upload(const HostHbcsfView& x, void* block, DeviceHbcsfRef* out) {
  if (x.order < 3 || x.order > kHbcsfMaxOrder || !out || !block || !x.node_count ||
      x.segments != x.node_count[x.order - 3])
    return cudaErrorInvalidValue;
  Offsets o{};
  const Layout l = make_layout(x, o);
  const std::vector<uint32_t> segment_rows = segment_rows_of(x);
  if (segment_rows.size() != x.segments) return cudaErrorInvalidValue;
  char* base = static_cast<char*>(block);
  for (Part p : l.parts) {
    if (p.bytes == 0) continue;
    if (p.offset == o.segment_row) p.src = segment_rows.data();
    if (!p.src) return cudaErrorInvalidValue;
    if (cudaError_t err = cudaMemcpy(base + p.offset, p.src, p.bytes, cudaMemcpyHostToDevice); err != cudaSuccess)
      return err;
  }
  auto u32 = [&](size_t offset) { return reinterpret_cast<const uint32_t*>(base + offset); };
  DeviceHbcsfRef r;
  r.order = x.order;
  for (uint32_t v = 0; v < x.order; ++v) {
    r.mode_order[v] = x.mode_order[v];
    r.dims[v] = x.dims[v];
  }
  r.coo_nnz = x.coo_nnz;
  r.csl_slices = x.csl_slices;
  r.csl_nnz = x.csl_nnz;
  r.segments = x.segments;
  r.bcsf_nnz = x.bcsf_nnz;
  r.units = x.units;
  for (uint32_t v = 0; v < x.order; ++v) r.coo_ind[v] = u32(o.coo_ind[v]);
  r.coo_val = base + o.coo_val;
  r.csl_slice_ind = u32(o.csl_slice_ind);
  r.csl_slice_ptr = u32(o.csl_slice_ptr);
  for (uint32_t v = 1; v < x.order; ++v) r.csl_ind[v - 1] = u32(o.csl_ind[v - 1]);
  r.csl_val = base + o.csl_val;
  for (uint32_t v = 1; v + 1 < x.order; ++v) r.node_ind[v - 1] = u32(o.node_ind[v - 1]);
  for (uint32_t v = 2; v + 1 < x.order; ++v) r.node_parent[v - 2] = u32(o.node_parent[v - 2]);
  r.segment_ptr = u32(o.segment_ptr);
  r.leaf_ind = u32(o.leaf_ind);
  r.bcsf_val = base + o.bcsf_val;
  r.unit_row = u32(o.unit_row);
  r.unit_segment_ptr = u32(o.unit_segment_ptr);
  r.unit_split = reinterpret_cast<const uint8_t*>(base + o.unit_split);
  r.segment_row = u32(o.segment_row);
  for (uint64_t k = 0; k < x.csl_slices; ++k)
    r.csl_max_slice = std::max<uint64_t>(r.csl_max_slice, x.csl_slice_ptr[k + 1] - x.csl_slice_ptr[k]);
  *out = std::move(r);
  return cudaSuccess;
}

// Leaves per warp: the power of two nearest to max(sqrt(leaves) / 6,
// 4 x the mean segment length), within [64, 4096], fitted to a sweep of
// chunks (the sweep is in the git history of benchmarks/bench_gpu.cpp):
// the best chunk grew with the tensor (per-warp costs, the segment search,
// the window loads and the row flushes, against too few warps to hide
// latency) and with the fibers; a rule by the number of resident warps alone missed both ends
// (docs/design-measurements.md, "hbcsf_leaf_chunk").
uint64_t hbcsf_leaf_chunk(const DeviceHbcsfRef& x, int multiprocessors) {
  (void)multiprocessors;  // the fit did not need it (one GPU model measured)
  if (x.bcsf_nnz == 0) return 64;
  const double mean_segment = x.segments ? double(x.bcsf_nnz) / double(x.segments) : 1.0;
  const double want = std::max(std::sqrt(double(x.bcsf_nnz)) / 6.0, 4.0 * mean_segment);
  const double power = std::round(std::log2(std::max(want, 1.0)));
  return uint64_t(1) << uint32_t(std::min(12.0, std::max(6.0, power)));
}

namespace {

// Root-kernel row flushes a row of one output copy may take (see
// launch_root_mttkrp): about six float32 roundings of a row's partial sums.
constexpr uint64_t kRootFlushesPerCopy = 32;

// Runs launch() with a.out on copies of `out` when the float32 rows of
// `mode` take many atomic additions (output_copies.cuh), then sums them
// into out. Root rows of split slices and every non-root row are added
// atomically; a row stored whole goes to its block's copy alone.
// `additions` bounds the atomic additions, `per_copy` as in
// output_copy_count.
template <typename T, typename Launch>
cudaError_t with_output_copies(const DeviceHbcsfRef& x, uint32_t mode, uint32_t rank, T* out, int multiprocessors,
                               cudaStream_t stream, HbcsfArgs<T>& a, uint64_t additions, uint64_t per_copy,
                               Launch&& launch) {
  const uint64_t rows = x.dims[mode];
  const uint32_t copies = output_copy_count(additions, rows, sizeof(T), uint64_t(multiprocessors) * 32, per_copy);
  return run_with_output_copies<T>(out, rows, rank, copies, stream, &a.out, launch);
}

template <typename T>
cudaError_t launch_root_mttkrp(const DeviceHbcsfRef& x, const T* const* factors, uint32_t rank, T* out,
                               int multiprocessors, cudaStream_t stream, HbcsfLaunchPlan* plan) {
  HbcsfArgs<T> a;
  if (cudaError_t err = make_args<T>(x, factors, 0, rank, out, a); err != cudaSuccess) return err;
  a.leaf_chunk = hbcsf_leaf_chunk(x, multiprocessors);
  if (x.segments > 0 && !x.segment_row) return cudaErrorInvalidValue;
  // Vectors and lane groups as in the COO and HiCOO kernels: V = 4 floats
  // or 2 doubles (one 16-byte access) when the rank allows (rows stay
  // 16-byte aligned: they start at multiples of rank elements of 256-byte
  // aligned allocations), L = the rank's vectors rounded up to a power of
  // two, at most 32.
  constexpr int wide = sizeof(T) == 4 ? 4 : 2;
  bool vectorised = false;
  const int lanes = lanes_for(rank, wide, vectorised);
  // The root kernel adds a row atomically only where a chunk of leaves (or
  // of CSL nonzeros) ends or its root row changes, each addition a
  // compensated running sum: at most one per chunk plus one per row. Such
  // sums are long, so a copy takes few of them (kRootFlushesPerCopy).
  uint64_t flushes = x.dims[x.mode_order[0]];
  if (x.bcsf_nnz > 0) flushes += (x.bcsf_nnz + a.leaf_chunk - 1) / a.leaf_chunk;
  if (x.csl_nnz > 0 && x.csl_max_slice >= kCslChunksFromSlice) {
    const uint64_t csl_chunk = hbcsf_csl_chunk(x.csl_nnz);
    flushes += (x.csl_nnz + csl_chunk - 1) / csl_chunk;
  }
  return with_output_copies<T>(x, x.mode_order[0], rank, out, multiprocessors, stream, a, flushes,
                               kRootFlushesPerCopy, [&] {
    return vectorised ? launch_for_lanes<T, wide>(a, x, lanes, multiprocessors, stream, plan)
                      : launch_for_lanes<T, 1>(a, x, lanes, multiprocessors, stream, plan);
  });
}

}  // namespace

template <typename T>
cudaError_t launch_mttkrp_hbcsf(const DeviceHbcsfRef& x, const T* const* factors, uint32_t rank, T* out,
                                int multiprocessors, cudaStream_t stream, HbcsfLaunchPlan* plan) {
  return launch_root_mttkrp<T>(x, factors, rank, out, multiprocessors, stream, plan);
}

template <typename T>
cudaError_t launch_mttkrp_hbcsf_nonroot(const DeviceHbcsfRef& x, const T* const* factors, uint32_t mode,
                                        uint32_t rank, T* out, int multiprocessors, cudaStream_t stream,
                                        HbcsfLaunchPlan* plan) {
  if (x.order < 3 || x.order > kHbcsfMaxOrder) return cudaErrorInvalidValue;
  uint32_t level = x.order;
  for (uint32_t l = 0; l < x.order; ++l)
    if (x.mode_order[l] == mode) level = l;
  if (level >= x.order) return cudaErrorInvalidValue;
  if (level == 0) return launch_mttkrp_hbcsf<T>(x, factors, rank, out, multiprocessors, stream, plan);
  HbcsfArgs<T> a;
  if (cudaError_t err = make_args<T>(x, factors, level, rank, out, a); err != cudaSuccess) return err;
  if (x.segments > 0 && !x.segment_row) return cudaErrorInvalidValue;
  a.segments = x.segments;
  a.bcsf_nnz = x.bcsf_nnz;
  a.segment_row = x.segment_row;
  a.leaf_chunk = hbcsf_leaf_chunk(x, multiprocessors);
  constexpr int wide = sizeof(T) == 4 ? 4 : 2;
  bool vectorised = false;
  const int lanes = lanes_for(rank, wide, vectorised);
  return with_output_copies<T>(x, mode, rank, out, multiprocessors, stream, a, x.coo_nnz + x.csl_nnz + x.bcsf_nnz,
                               kAdditionsPerCopy, [&] {
    return vectorised ? launch_nonroot_for_lanes<T, wide>(a, x, lanes, multiprocessors, stream, plan)
                      : launch_nonroot_for_lanes<T, 1>(a, x, lanes, multiprocessors, stream, plan);
  });
}

template cudaError_t launch_mttkrp_hbcsf_nonroot<float>(const DeviceHbcsfRef&, const float* const*, uint32_t,
                                                        uint32_t, float*, int, cudaStream_t, HbcsfLaunchPlan*);
template cudaError_t launch_mttkrp_hbcsf_nonroot<double>(const DeviceHbcsfRef&, const double* const*, uint32_t,
                                                         uint32_t, double*, int, cudaStream_t, HbcsfLaunchPlan*);

template cudaError_t launch_mttkrp_hbcsf<float>(const DeviceHbcsfRef&, const float* const*, uint32_t, float*, int,
                                                cudaStream_t, HbcsfLaunchPlan*);
template cudaError_t launch_mttkrp_hbcsf<double>(const DeviceHbcsfRef&, const double* const*, uint32_t, double*,
                                                 int, cudaStream_t, HbcsfLaunchPlan*);

}  // namespace spt::cuda
