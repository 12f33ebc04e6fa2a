// OpenMP MTTKRP on a CSF tree (SPLATT's algorithm), for any order >= 2 and
// any level of the output mode.
//
// Operation-count saving: a factor row is multiplied in once per tree node,
// not once per nonzero. Below the output level, subtree sums are formed
// bottom-up (a fiber's leaves are accumulated as sum_k x_k * A(k,:), then
// Hadamard-multiplied by the fiber's own row once); above it, the rows of
// the path from the root are multiplied top-down once per node and reused
// by all the node's descendants.
//
// Parallel work: the children of the root slices (level-1 nodes) are cut
// into ranges holding about equal numbers of nonzeros, so one heavy slice is
// shared by several tasks (power-law tensors have slices with a large share
// of the nonzeros). Conflicts on output rows:
//  - output mode at the root: each root slice is one output row; rows of
//    slices wholly inside a task are stored directly, the (at most two)
//    slices a task shares with its neighbours go to per-task edge rows that
//    are added afterwards: no atomics, no private copies;
//  - deeper levels: per-thread private outputs when they are small next to
//    the work (the same rule as the COO MTTKRP), else atomic adds.
// Which tree (and so which level) a mode runs on is chosen when the CSF is
// built (csf_mttkrp_cost in core/csf.hpp).
//
// Inner loops: common ranks (8, 16, 32, 64) are compile-time constants and
// the two deepest levels of a subtree sum are fused (fiber_sum), with the
// running sums in GCC vector-type registers: a nonzero costs one row load
// and one multiply-add per vector, nothing is stored until the fiber ends.
// Other ranks cover the row with vectors at run-time offsets (RankCover).
//
// Also the inner product <x, [[lambda; factors]]> on the first tree, in
// double (the CP-ALS fit's exact pass).
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/buffer.hpp"
#include "kernels/kernels.hpp"

namespace spt::kernels::cpu {

namespace {

// Private outputs are always used below this many bytes (see also
// csf_mttkrp_cost, which models the same rule).
constexpr double kPrivateBytesAlways = kCsfPrivateBytesAlways;
// Tasks per thread: more than one so the schedule evens out threads slowed
// by other work on the machine.
constexpr int kTasksPerThread = 8;

template <typename T>
struct TreeOperands {
  uint32_t leaf = 0;    // leaf level (order - 1)
  uint32_t target = 0;  // level of the output mode
  spt_nnz rank = 0;
  const T* val = nullptr;
  std::vector<const spt_index*> fid;  // per level
  std::vector<const spt_nnz*> ptr;    // per non-leaf level
  std::vector<const T*> base;         // factor of each level's mode (unused at target)
  std::vector<spt_nnz> ld;
};

// Native SIMD register width of the build target (GCC vector types map
// onto it; wider registers appear with -march=native / SPT_NATIVE).
#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
#elif defined(__AVX__)
constexpr int kVectorBytes = 32;
#else
constexpr int kVectorBytes = 16;
#endif
// Accumulator registers one pass of leaf_sum keeps live.
constexpr int kMaxAccumulators = 8;

// acc[0..RK) = sum_{c in [b,e)} v[c] * a(f[c], :): the hottest loop (one
// iteration per nonzero). The running sums are held in registers (an array
// of native vectors indexed by constants after unrolling), chunk by chunk
// of the rank, so a nonzero costs loads and multiply-adds, no stores.
template <typename T, int RK>
inline void leaf_sum(const spt_index* __restrict f, const T* __restrict v, const T* __restrict a, spt_nnz ld,
                     spt_nnz b, spt_nnz e, T* __restrict acc) {
  constexpr int W = kVectorBytes / sizeof(T);  // elements per register
  static_assert(RK % W == 0 || RK < W, "fixed ranks are multiples of the vector width");
  if constexpr (RK < W) {
    T sum[RK] = {};
    for (spt_nnz c = b; c < e; ++c)
      for (int r = 0; r < RK; ++r) sum[r] += v[c] * a[static_cast<spt_nnz>(f[c]) * ld + r];
    for (int r = 0; r < RK; ++r) acc[r] = sum[r];
  } else {
    typedef T Vec __attribute__((vector_size(kVectorBytes)));
    constexpr int total = RK / W;
    constexpr int per_pass = total < kMaxAccumulators ? total : kMaxAccumulators;
    static_assert(total % per_pass == 0, "rank chunks divide evenly");
    for (int base = 0; base < total; base += per_pass) {
      Vec sum[per_pass];
#pragma GCC unroll 16
      for (int j = 0; j < per_pass; ++j) sum[j] = Vec{};
      for (spt_nnz c = b; c < e; ++c) {
        const T* row = a + static_cast<spt_nnz>(f[c]) * ld + base * W;
        const T x = v[c];
#pragma GCC unroll 16
        for (int j = 0; j < per_pass; ++j) {
          Vec r;
          std::memcpy(&r, row + j * W, sizeof(Vec));
          sum[j] += x * r;
        }
      }
#pragma GCC unroll 16
      for (int j = 0; j < per_pass; ++j) std::memcpy(acc + (base + j) * W, &sum[j], sizeof(Vec));
    }
  }
}

// acc[0..RK) = sum_{c in [b,e)} g(gf[c], :) .* (sum_{k in [p[c], p[c+1])}
// v[k] * a(f[k], :)): the two deepest levels of a subtree sum fused, so both
// the fiber's and the running sums stay in registers (one rank-vector
// multiply per fiber, one multiply-add per nonzero).
template <typename T, int RK>
inline void fiber_sum(const spt_index* __restrict gf, const spt_nnz* __restrict p, const T* __restrict g,
                      spt_nnz gld, const spt_index* __restrict f, const T* __restrict v, const T* __restrict a,
                      spt_nnz ld, spt_nnz b, spt_nnz e, T* __restrict acc) {
  constexpr int W = kVectorBytes / sizeof(T);
  static_assert(RK >= W && RK % W == 0, "fixed ranks of at least one vector");
  typedef T Vec __attribute__((vector_size(kVectorBytes)));
  constexpr int total = RK / W;
  constexpr int half = kMaxAccumulators / 2;
  constexpr int per_pass = total < half ? total : half;
  static_assert(total % per_pass == 0, "rank chunks divide evenly");
  for (int base = 0; base < total; base += per_pass) {
    Vec out[per_pass];
#pragma GCC unroll 16
    for (int j = 0; j < per_pass; ++j) out[j] = Vec{};
    for (spt_nnz c = b; c < e; ++c) {
      Vec sum[per_pass];
#pragma GCC unroll 16
      for (int j = 0; j < per_pass; ++j) sum[j] = Vec{};
      const spt_nnz kend = p[c + 1];
      for (spt_nnz k = p[c]; k < kend; ++k) {
        const T* row = a + static_cast<spt_nnz>(f[k]) * ld + base * W;
        const T x = v[k];
#pragma GCC unroll 16
        for (int j = 0; j < per_pass; ++j) {
          Vec r;
          std::memcpy(&r, row + j * W, sizeof(Vec));
          sum[j] += x * r;
        }
      }
      const T* grow = g + static_cast<spt_nnz>(gf[c]) * gld + base * W;
#pragma GCC unroll 16
      for (int j = 0; j < per_pass; ++j) {
        Vec r;
        std::memcpy(&r, grow + j * W, sizeof(Vec));
        out[j] += sum[j] * r;
      }
    }
#pragma GCC unroll 16
    for (int j = 0; j < per_pass; ++j) std::memcpy(acc + (base + j) * W, &out[j], sizeof(Vec));
  }
}

// Ranks without a fixed-size instantiation (R >= one vector): the rank is
// covered by vectors at offsets 0, W, 2W, ... plus, when W does not divide
// R, one at R - W overlapping the previous one (its shared lanes get the
// same sums, computed by the same operations in the same order). NV vectors
// per pass, a pass per group of offsets.
template <typename T>
struct RankCover {
  static constexpr int W = kVectorBytes / sizeof(T);
  std::vector<spt_nnz> offsets;
  explicit RankCover(spt_nnz rank) {
    for (spt_nnz o = 0; o + W <= rank; o += W) offsets.push_back(o);
    if (rank % W != 0 && rank >= W) offsets.push_back(rank - W);
  }
};

template <typename T, int NV>
inline void leaf_sum_pass(const spt_index* __restrict f, const T* __restrict v, const T* __restrict a, spt_nnz ld,
                          spt_nnz b, spt_nnz e, const spt_nnz* off, T* __restrict acc) {
  typedef T Vec __attribute__((vector_size(kVectorBytes)));
  Vec sum[NV];
#pragma GCC unroll 16
  for (int j = 0; j < NV; ++j) sum[j] = Vec{};
  for (spt_nnz c = b; c < e; ++c) {
    const T* row = a + static_cast<spt_nnz>(f[c]) * ld;
    const T x = v[c];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) {
      Vec r;
      std::memcpy(&r, row + off[j], sizeof(Vec));
      sum[j] += x * r;
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < NV; ++j) std::memcpy(acc + off[j], &sum[j], sizeof(Vec));
}

template <typename T, int NV>
inline void fiber_sum_pass(const spt_index* __restrict gf, const spt_nnz* __restrict p, const T* __restrict g,
                           spt_nnz gld, const spt_index* __restrict f, const T* __restrict v, const T* __restrict a,
                           spt_nnz ld, spt_nnz b, spt_nnz e, const spt_nnz* off, T* __restrict acc) {
  typedef T Vec __attribute__((vector_size(kVectorBytes)));
  Vec out[NV];
#pragma GCC unroll 16
  for (int j = 0; j < NV; ++j) out[j] = Vec{};
  for (spt_nnz c = b; c < e; ++c) {
    Vec sum[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) sum[j] = Vec{};
    const spt_nnz kend = p[c + 1];
    for (spt_nnz k = p[c]; k < kend; ++k) {
      const T* row = a + static_cast<spt_nnz>(f[k]) * ld;
      const T x = v[k];
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) {
        Vec r;
        std::memcpy(&r, row + off[j], sizeof(Vec));
        sum[j] += x * r;
      }
    }
    const T* grow = g + static_cast<spt_nnz>(gf[c]) * gld;
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) {
      Vec r;
      std::memcpy(&r, grow + off[j], sizeof(Vec));
      out[j] += sum[j] * r;
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < NV; ++j) std::memcpy(acc + off[j], &out[j], sizeof(Vec));
}

// Calls pass(integral_constant<NV>, first offset) over the cover's offsets
// in groups of at most MaxNV.
template <int MaxNV, typename Pass>
inline void for_each_pass(const std::vector<spt_nnz>& offsets, Pass&& pass) {
  const size_t n = offsets.size();
  for (size_t i = 0; i < n; i += MaxNV) {
    const spt_nnz* off = offsets.data() + i;
    switch (std::min<size_t>(MaxNV, n - i)) {
      case 1: pass(std::integral_constant<int, 1>{}, off); break;
      case 2: pass(std::integral_constant<int, 2>{}, off); break;
      case 3: pass(std::integral_constant<int, 3>{}, off); break;
      case 4: pass(std::integral_constant<int, 4>{}, off); break;
      case 5: if constexpr (MaxNV >= 5) pass(std::integral_constant<int, 5>{}, off); break;
      case 6: if constexpr (MaxNV >= 6) pass(std::integral_constant<int, 6>{}, off); break;
      case 7: if constexpr (MaxNV >= 7) pass(std::integral_constant<int, 7>{}, off); break;
      default: if constexpr (MaxNV >= 8) pass(std::integral_constant<int, 8>{}, off); break;
    }
  }
}

template <typename T, int RK, bool Atomic>
class TreeWalker {
 public:
  // `cover` is made before the parallel region (it allocates).
  TreeWalker(const TreeOperands<T>& op, const RankCover<T>& cover, T* scratch, T* dst, spt_nnz dst_ld)
      : op_(op), scratch_(scratch), dst_(dst), dst_ld_(dst_ld), cover_(cover) {}

  spt_nnz rank() const { return RK > 0 ? RK : op_.rank; }

  // acc = sum over nodes c in [b, e) of level l of A_l(fid_l[c],:) .* (sum
  // of c's subtree), where a leaf's subtree sum is its value.
  void sum_nodes(uint32_t l, spt_nnz b, spt_nnz e, T* __restrict acc) const {
    const spt_nnz R = rank();
    const spt_index* __restrict f = op_.fid[l];
    const T* __restrict a = op_.base[l];
    const spt_nnz ld = op_.ld[l];
    if (l == op_.leaf) {
      const T* __restrict v = op_.val;
      if constexpr (RK > 0) {
        leaf_sum<T, RK>(f, v, a, ld, b, e, acc);
      } else if (!cover_.offsets.empty()) {
        for_each_pass<kMaxAccumulators>(cover_.offsets, [&](auto nv, const spt_nnz* off) {
          leaf_sum_pass<T, decltype(nv)::value>(f, v, a, ld, b, e, off, acc);
        });
      } else {
        for (spt_nnz r = 0; r < R; ++r) acc[r] = T(0);
        for (spt_nnz c = b; c < e; ++c) {
          const T* __restrict row = a + static_cast<spt_nnz>(f[c]) * ld;
          const T x = v[c];
#pragma omp simd
          for (spt_nnz r = 0; r < R; ++r) acc[r] += x * row[r];
        }
      }
      return;
    }
    const spt_nnz* __restrict p = op_.ptr[l];
    if constexpr (RK >= kVectorBytes / static_cast<int>(sizeof(T))) {
      if (l + 1 == op_.leaf) {
        fiber_sum<T, RK>(f, p, a, ld, op_.fid[op_.leaf], op_.val, op_.base[op_.leaf], op_.ld[op_.leaf], b, e, acc);
        return;
      }
    } else if constexpr (RK == 0) {
      if (l + 1 == op_.leaf && !cover_.offsets.empty()) {
        for_each_pass<kMaxAccumulators / 2>(cover_.offsets, [&](auto nv, const spt_nnz* off) {
          fiber_sum_pass<T, decltype(nv)::value>(f, p, a, ld, op_.fid[op_.leaf], op_.val, op_.base[op_.leaf],
                                                 op_.ld[op_.leaf], b, e, off, acc);
        });
        return;
      }
    }
    T* __restrict child = scratch_ + static_cast<spt_nnz>(l) * R;
    for (spt_nnz r = 0; r < R; ++r) acc[r] = T(0);
    for (spt_nnz c = b; c < e; ++c) {
      sum_nodes(l + 1, p[c], p[c + 1], child);
      const T* __restrict row = a + static_cast<spt_nnz>(f[c]) * ld;
#pragma omp simd
      for (spt_nnz r = 0; r < R; ++r) acc[r] += child[r] * row[r];
    }
  }

  // Visit nodes [b, e) of level l (1 <= l <= target); `prefix` is the
  // Hadamard product of the factor rows on the path above level l.
  void visit(uint32_t l, spt_nnz b, spt_nnz e, const T* __restrict prefix) const {
    const spt_nnz R = rank();
    const spt_index* __restrict f = op_.fid[l];
    if (l == op_.target) {
      if (l == op_.leaf) {
        const T* __restrict v = op_.val;
        for (spt_nnz c = b; c < e; ++c) add_row(f[c], v[c], prefix);
      } else {
        const spt_nnz* __restrict p = op_.ptr[l];
        T* __restrict below = sum_slot(l);
        for (spt_nnz c = b; c < e; ++c) {
          sum_nodes(l + 1, p[c], p[c + 1], below);
#pragma omp simd
          for (spt_nnz r = 0; r < R; ++r) below[r] *= prefix[r];
          add_row(f[c], T(1), below);
        }
      }
      return;
    }
    const T* __restrict a = op_.base[l];
    const spt_nnz ld = op_.ld[l];
    const spt_nnz* __restrict p = op_.ptr[l];
    T* __restrict mine = prefix_slot(l);
    for (spt_nnz c = b; c < e; ++c) {
      const T* __restrict row = a + static_cast<spt_nnz>(f[c]) * ld;
#pragma omp simd
      for (spt_nnz r = 0; r < R; ++r) mine[r] = prefix[r] * row[r];
      visit(l + 1, p[c], p[c + 1], mine);
    }
  }

 private:
  // Scratch layout per thread: [child sums per level | prefixes per level | target sum].
  T* prefix_slot(uint32_t l) const { return scratch_ + static_cast<spt_nnz>(op_.leaf + 1 + l) * rank(); }
  T* sum_slot(uint32_t) const { return scratch_ + static_cast<spt_nnz>(2 * (op_.leaf + 1)) * rank(); }

  void add_row(spt_index i, T scale, const T* __restrict src) const {
    T* __restrict o = dst_ + static_cast<spt_nnz>(i) * dst_ld_;
    if constexpr (Atomic) {
      for (spt_nnz r = 0; r < rank(); ++r) {
#pragma omp atomic
        o[r] += scale * src[r];
      }
    } else {
#pragma omp simd
      for (spt_nnz r = 0; r < rank(); ++r) o[r] += scale * src[r];
    }
  }

  const TreeOperands<T>& op_;
  T* scratch_;
  T* dst_;
  spt_nnz dst_ld_;
  const RankCover<T>& cover_;  // vector offsets for a run-time rank (empty for R < W)
};

// Bounds of the level-1 node ranges of the tasks, about nnz / tasks leaves each.
std::vector<spt_nnz> task_bounds(const CsfTree& tree, int tasks) {
  const spt_nnz nodes = tree.nodes(1), n = tree.nnz();
  std::vector<spt_nnz> bound(tasks + 1, 0);
  bound[tasks] = nodes;
  for (int j = 1; j < tasks; ++j) {
    const spt_nnz want = static_cast<spt_nnz>((static_cast<unsigned __int128>(n) * j) / tasks);
    spt_nnz lo = bound[j - 1], hi = nodes;  // first node whose first leaf >= want
    while (lo < hi) {
      const spt_nnz mid = lo + (hi - lo) / 2;
      if (tree.first_leaf(1, mid) < want) lo = mid + 1;
      else hi = mid;
    }
    bound[j] = lo;
  }
  return bound;
}

// First root slice whose children reach past level-1 node `c`.
inline spt_nnz slice_of(const spt_nnz* ptr0, spt_nnz slices, spt_nnz c) {
  return static_cast<spt_nnz>(std::upper_bound(ptr0, ptr0 + slices + 1, c) - ptr0) - 1;
}

template <typename T>
void zero_out(MatRef<T> out, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (spt_nnz i = 0; i < out.rows; ++i) std::fill(out.row(i), out.row(i) + out.cols, T(0));
}

template <typename T, int RK>
void root_mttkrp(const TreeOperands<T>& op, const CsfTree& tree, MatRef<T> out, int threads) {
  const spt_nnz R = op.rank;
  const int tasks = threads * kTasksPerThread;
  const std::vector<spt_nnz> bound = task_bounds(tree, tasks);
  const spt_nnz* ptr0 = op.ptr[0];
  const spt_index* fid0 = op.fid[0];
  const spt_nnz slices = tree.nodes(0);
  buffer<T> scratch(static_cast<size_t>(threads) * (2 * (op.leaf + 1) + 2) * R);
  buffer<T> edge(static_cast<size_t>(tasks) * 2 * R);
  const RankCover<T> cover(RK > 0 ? 0 : R);
  std::vector<spt_index> edge_row(2 * static_cast<size_t>(tasks));
  std::vector<char> edge_used(2 * static_cast<size_t>(tasks), 0);
  zero_out(out, threads);
#pragma omp parallel num_threads(threads)
  {
    T* mine = scratch.data() + static_cast<size_t>(omp_get_thread_num()) * (2 * (op.leaf + 1) + 2) * R;
    TreeWalker<T, RK, false> walk(op, cover, mine, nullptr, 0);
#pragma omp for schedule(dynamic, 1)
    for (int j = 0; j < tasks; ++j) {
      const spt_nnz cb = bound[j], ce = bound[j + 1];
      if (cb >= ce) continue;
      for (spt_nnz s = slice_of(ptr0, slices, cb); s < slices && ptr0[s] < ce; ++s) {
        const spt_nnz b = std::max(ptr0[s], cb), e = std::min(ptr0[s + 1], ce);
        const bool shared = ptr0[s] < cb || ptr0[s + 1] > ce;
        T* o = out.row(fid0[s]);
        if (shared) {
          const size_t slot = 2 * static_cast<size_t>(j) + (ptr0[s] < cb ? 0 : 1);
          o = edge.data() + slot * R;
          edge_row[slot] = fid0[s];
          edge_used[slot] = 1;
        }
        walk.sum_nodes(1, b, e, o);
      }
    }
  }
  for (size_t slot = 0; slot < edge_used.size(); ++slot) {
    if (!edge_used[slot]) continue;
    T* o = out.row(edge_row[slot]);
    const T* e = edge.data() + slot * R;
    for (spt_nnz r = 0; r < R; ++r) o[r] += e[r];
  }
}

template <typename T, int RK, bool Atomic>
void deep_mttkrp(const TreeOperands<T>& op, const CsfTree& tree, MatRef<T> out, int threads) {
  const spt_nnz R = op.rank;
  const int tasks = threads * kTasksPerThread;
  const std::vector<spt_nnz> bound = task_bounds(tree, tasks);
  const spt_nnz* ptr0 = op.ptr[0];
  const spt_index* fid0 = op.fid[0];
  const T* a0 = op.base[0];
  const spt_nnz ld0 = op.ld[0];
  const spt_nnz slices = tree.nodes(0);
  const spt_nnz rows = out.rows, slab = rows * R;
  const size_t per_thread = (2 * (op.leaf + 1) + 2) * R;
  buffer<T> scratch(static_cast<size_t>(threads) * per_thread);
  const RankCover<T> cover(RK > 0 ? 0 : R);
  buffer<T> priv(Atomic ? 0 : checked_mul(static_cast<uint64_t>(threads - 1), slab, "MTTKRP private buffers"));
  int team = 1;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
#pragma omp single
    team = omp_get_num_threads();
#pragma omp for schedule(static)
    for (spt_nnz i = 0; i < rows; ++i) std::fill(out.row(i), out.row(i) + R, T(0));
    if (!Atomic) {
#pragma omp for schedule(static)
      for (spt_nnz e = 0; e < static_cast<spt_nnz>(team - 1) * slab; ++e) priv[e] = T(0);
    }
    T* dst = Atomic || t == 0 ? out.data : priv.data() + (t - 1) * slab;
    const spt_nnz dst_ld = Atomic || t == 0 ? out.ld : R;
    TreeWalker<T, RK, Atomic> walk(op, cover, scratch.data() + t * per_thread, dst, dst_ld);
    // Round-robin, not dynamic: which thread's private output a task adds
    // into decides the rounding, and results must repeat bit for bit for a
    // fixed thread count.
#pragma omp for schedule(static, 1)
    for (int j = 0; j < tasks; ++j) {
      const spt_nnz cb = bound[j], ce = bound[j + 1];
      if (cb >= ce) continue;
      for (spt_nnz s = slice_of(ptr0, slices, cb); s < slices && ptr0[s] < ce; ++s) {
        const spt_nnz b = std::max(ptr0[s], cb), e = std::min(ptr0[s + 1], ce);
        walk.visit(1, b, e, a0 + static_cast<spt_nnz>(fid0[s]) * ld0);
      }
    }
    if (!Atomic && team > 1) {
#pragma omp for schedule(static)
      for (spt_nnz i = 0; i < rows; ++i) {
        T* __restrict o = out.row(i);
        for (int q = 0; q + 1 < team; ++q) {
          const T* __restrict s = priv.data() + q * slab + i * R;
#pragma omp simd
          for (spt_nnz r = 0; r < R; ++r) o[r] += s[r];
        }
      }
    }
  }
}

template <typename F>
void with_rank(spt_nnz rank, F&& f) {
  switch (rank) {
    case 8: f(std::integral_constant<int, 8>{}); break;
    case 16: f(std::integral_constant<int, 16>{}); break;
    case 32: f(std::integral_constant<int, 32>{}); break;
    case 64: f(std::integral_constant<int, 64>{}); break;
    default: f(std::integral_constant<int, 0>{}); break;
  }
}

template <typename T>
void mttkrp_csf_impl(const Exec& exec, const spt_csf_s& x, const ConstMatRef<T>* factors, uint32_t mode,
                     MatRef<T> out) {
  if (out.cols == 0) return;
  const int threads = std::max(1, exec.threads);
  const CsfTree& tree = x.tree_for_mode(mode);
  TreeOperands<T> op;
  op.leaf = tree.levels() - 1;
  op.target = tree.level_of(mode);
  op.rank = out.cols;
  op.val = tree.vals.get<T>().data();
  for (uint32_t l = 0; l < tree.levels(); ++l) {
    const uint32_t m = tree.mode_order[l];
    op.fid.push_back(tree.fids[l].data());
    op.ptr.push_back(l < op.leaf ? tree.fptr[l].data() : nullptr);
    op.base.push_back(m == mode ? nullptr : factors[m].data);
    op.ld.push_back(m == mode ? 0 : factors[m].ld);
  }
  if (op.target == 0) {
    with_rank(op.rank, [&](auto rk) { root_mttkrp<T, decltype(rk)::value>(op, tree, out, threads); });
    return;
  }
  MttkrpStrategy strategy = exec.mttkrp_strategy;
  if (strategy != MttkrpStrategy::privatized && strategy != MttkrpStrategy::atomic) {
    const double private_elems = double(threads - 1) * double(out.rows) * double(op.rank);
    strategy = private_elems * sizeof(T) <= double(kPrivateBytesAlways) ||
                       private_elems <= double(x.nnz) * double(op.rank) / 2
                   ? MttkrpStrategy::privatized
                   : MttkrpStrategy::atomic;
  }
  with_rank(op.rank, [&](auto rk) {
    constexpr int RK = decltype(rk)::value;
    if (strategy == MttkrpStrategy::atomic) deep_mttkrp<T, RK, true>(op, tree, out, threads);
    else deep_mttkrp<T, RK, false>(op, tree, out, threads);
  });
}

// <x, [[lambda; factors]]> on the first tree, in double: the path's
// Hadamard product lambda .* A_0(i_0,:) .* ... is formed top-down once per
// node, each fiber's leaves are summed as sum_k x_k A_leaf(i_k,:), and the
// two meet in one dot product per fiber. Tasks as the MTTKRP's (level-1
// ranges of about equal nonzeros); each task's sum has its own slot, added
// in task order, so the result repeats bit for bit for a thread count.
template <typename T>
class InnerWalker {
 public:
  InnerWalker(const CsfTree& tree, const ConstMatRef<T>* factors, spt_nnz rank, double* scratch)
      : tree_(tree), factors_(factors), rank_(rank), scratch_(scratch) {}

  // Sum over the nodes [b, e) of level l >= 1 under the path product `prefix`.
  double visit(uint32_t l, spt_nnz b, spt_nnz e, const double* __restrict prefix) const {
    const uint32_t leaf = tree_.levels() - 1;
    const spt_index* __restrict f = tree_.fids[l].data();
    const ConstMatRef<T>& a = factors_[tree_.mode_order[l]];
    if (l == leaf) {
      double* __restrict sum = scratch_ + static_cast<spt_nnz>(l) * rank_;
      std::fill(sum, sum + rank_, 0.0);
      const T* __restrict v = tree_.vals.get<T>().data();
      for (spt_nnz c = b; c < e; ++c) {
        const T* __restrict row = a.row(f[c]);
        const double x = v[c];
#pragma omp simd
        for (spt_nnz r = 0; r < rank_; ++r) sum[r] += x * static_cast<double>(row[r]);
      }
      double dot = 0.0;
      for (spt_nnz r = 0; r < rank_; ++r) dot += prefix[r] * sum[r];
      return dot;
    }
    const spt_nnz* __restrict p = tree_.fptr[l].data();
    double* __restrict mine = scratch_ + static_cast<spt_nnz>(l) * rank_;
    double total = 0.0;
    for (spt_nnz c = b; c < e; ++c) {
      const T* __restrict row = a.row(f[c]);
#pragma omp simd
      for (spt_nnz r = 0; r < rank_; ++r) mine[r] = prefix[r] * static_cast<double>(row[r]);
      total += visit(l + 1, p[c], p[c + 1], mine);
    }
    return total;
  }

 private:
  const CsfTree& tree_;
  const ConstMatRef<T>* factors_;
  spt_nnz rank_;
  double* scratch_;  // one rank row per level
};

template <typename T>
double inner_csf_impl(const Exec& exec, const spt_csf_s& x, const T* lambda, const ConstMatRef<T>* factors,
                      spt_index rank) {
  if (x.trees.empty() || rank == 0) return 0.0;
  const int threads = std::max(1, exec.threads);
  const CsfTree& tree = x.trees[0];
  const int tasks = threads * kTasksPerThread;
  const std::vector<spt_nnz> bound = task_bounds(tree, tasks);
  const spt_nnz* ptr0 = tree.fptr[0].data();
  const spt_index* fid0 = tree.fids[0].data();
  const spt_nnz slices = tree.nodes(0);
  const ConstMatRef<T>& a0 = factors[tree.mode_order[0]];
  const size_t per_thread = static_cast<size_t>(tree.levels()) * rank;
  buffer<double> scratch(static_cast<size_t>(threads) * per_thread);
  std::vector<double> part(static_cast<size_t>(tasks), 0.0);
#pragma omp parallel num_threads(threads)
  {
    double* mine = scratch.data() + static_cast<size_t>(omp_get_thread_num()) * per_thread;
    InnerWalker<T> walk(tree, factors, rank, mine);
#pragma omp for schedule(dynamic, 1)
    for (int j = 0; j < tasks; ++j) {
      const spt_nnz cb = bound[j], ce = bound[j + 1];
      double sum = 0.0;
      for (spt_nnz s = cb < ce ? slice_of(ptr0, slices, cb) : slices; s < slices && ptr0[s] < ce; ++s) {
        const T* row = a0.row(fid0[s]);
        for (spt_index r = 0; r < rank; ++r) mine[r] = static_cast<double>(lambda[r]) * static_cast<double>(row[r]);
        sum += walk.visit(1, std::max(ptr0[s], cb), std::min(ptr0[s + 1], ce), mine);
      }
      part[j] = sum;
    }
  }
  double total = 0.0;
  for (double v : part) total += v;
  return total;
}

}  // namespace

#define SPT_INSTANTIATE(T)                                                                                     \
  void mttkrp_csf(const Exec& exec, const spt_csf_s& x, const ConstMatRef<T>* factors, uint32_t mode,         \
                  MatRef<T> out) {                                                                             \
    mttkrp_csf_impl<T>(exec, x, factors, mode, out);                                                           \
  }                                                                                                            \
  double inner_ktensor_csf(const Exec& exec, const spt_csf_s& x, const T* lambda, const ConstMatRef<T>* factors, \
                           spt_index rank) {                                                                   \
    return inner_csf_impl<T>(exec, x, lambda, factors, rank);                                                  \
  }

SPT_INSTANTIATE(float)
SPT_INSTANTIATE(double)
#undef SPT_INSTANTIATE

}  // namespace spt::kernels::cpu
