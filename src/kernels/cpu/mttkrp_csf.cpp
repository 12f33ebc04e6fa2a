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
// Sums reach double: float32 sums cover at most kFoldEvery terms before
// they are folded into double (a fiber's leaves, the fused sum of fiber
// products, the additions to a private output row; a long fiber's leaves
// in two such sums, added pairwise: long_fiber); sums across nodes and
// root slices, split rows and the atomics' copy are in double; results are
// rounded to T once. So float32 results carry about one rounding per
// output element.
//
// Also the inner product <x, [[lambda; factors]]> on the first tree, in
// double (the CP-ALS fit's exact pass).
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/buffer.hpp"
#include "kernels/cpu/mttkrp_parallel.hpp"
#include "kernels/kernels.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

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

// SIMD register width of this copy of the kernels (GCC vector types map
// onto it; kernels/cpu/variant.hpp).
constexpr int kVectorBytes = SPT_CPU_VECTOR_BYTES;
// Accumulator registers one pass of leaf_sum keeps live.
constexpr int kMaxAccumulators = 8;

// float32 sums cover at most this many terms before they are folded into
// double. float64: no fold.
constexpr spt_nnz kFoldEvery = 64;
// Output at the leaves: while there are at most this many rows per leaf of
// an average fiber, all rows are folded every kFoldEvery fibers instead of
// counting additions per row.
constexpr spt_nnz kFiberRowsPerLeaf = 4;

template <typename T>
constexpr bool kFolds = !std::is_same_v<T, double>;

// End of the run that starts at c in [c, e).
template <typename T>
inline spt_nnz run_end(spt_nnz c, spt_nnz e) {
  if constexpr (kFolds<T>) return e - c > kFoldEvery ? c + kFoldEvery : e;
  else return e;
}

// wide[j*W..] += the lanes of float32 sum[j], widened to double half a
// register at a time (native double vectors; GCC splits wider ones through
// memory).
template <int N, typename Vec>
[[gnu::always_inline]] inline void add_wide(const Vec* sum, double* wide) {
  static_assert(sizeof(sum[0][0]) == sizeof(float), "float32 sums");
  static_assert(sizeof(Vec) == kVectorBytes, "native float32 vectors");
  constexpr int W = kVectorBytes / sizeof(float);
  typedef float Half __attribute__((vector_size(kVectorBytes / 2)));
  typedef double Wide __attribute__((vector_size(kVectorBytes)));
#pragma GCC unroll 16
  for (int j = 0; j < N; ++j) {
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      Half f;
      std::memcpy(&f, reinterpret_cast<const char*>(&sum[j]) + h * sizeof(Half), sizeof(Half));
      Wide w;
      std::memcpy(&w, wide + j * W + h * (W / 2), sizeof(Wide));
      w += __builtin_convertvector(f, Wide);
      std::memcpy(wide + j * W + h * (W / 2), &w, sizeof(Wide));
    }
  }
}

// As add_wide, through a double vector of twice the bytes, which GCC
// splits into native registers: one conversion per half, no shuffles
// through single lanes. For out-of-line loops only: inlined into the
// fused fiber loop, the wider type cost that loop its registers.
template <int N, typename Vec>
[[gnu::always_inline]] inline void add_wide_whole(const Vec* sum, double* wide) {
  static_assert(sizeof(sum[0][0]) == sizeof(float), "float32 sums");
  static_assert(sizeof(Vec) == kVectorBytes, "native float32 vectors");
  constexpr int W = kVectorBytes / sizeof(float);
  typedef double Wide __attribute__((vector_size(2 * kVectorBytes)));
#pragma GCC unroll 16
  for (int j = 0; j < N; ++j) {
    Wide w;
    std::memcpy(&w, wide + j * W, sizeof(Wide));
    w += __builtin_convertvector(sum[j], Wide);
    std::memcpy(wide + j * W, &w, sizeof(Wide));
  }
}

// wide[j*W..] += the lanes of sum[j], then sum[j] = 0 (a float32 run ends).
template <int N, typename Vec>
[[gnu::always_inline]] inline void fold(Vec* sum, double* wide) {
  add_wide<N>(sum, wide);
#pragma GCC unroll 16
  for (int j = 0; j < N; ++j) sum[j] = Vec{};
}

// sum[j] += sum_{c in [b,e)} v[c] * a(f[c], off(j) .. off(j)+W) for j < NV:
// the loop over one run of leaves, its sums in registers.
template <typename T, int NV, typename Vec, typename Off>
[[gnu::always_inline]] inline void add_leaves(const spt_index* __restrict f, const T* __restrict v,
                                              const T* __restrict a, spt_nnz ld, spt_nnz b, spt_nnz e, Off off,
                                              Vec* sum) {
  for (spt_nnz c = b; c < e; ++c) {
    const T* row = a + static_cast<spt_nnz>(f[c]) * ld;
    const T x = v[c];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) {
      Vec r;
      std::memcpy(&r, row + off(j), sizeof(Vec));
      sum[j] += x * r;
    }
  }
}

// acc[0..RK) = sum_{c in [b,e)} v[c] * a(f[c], :): the hottest loop (one
// iteration per nonzero). The running sums are held in registers (an array
// of native vectors indexed by constants after unrolling), chunk by chunk
// of the rank, so a nonzero costs loads and multiply-adds, no stores.
template <typename T, int RK>
inline void leaf_sum(const spt_index* __restrict f, const T* __restrict v, const T* __restrict a, spt_nnz ld,
                     spt_nnz b, spt_nnz e, double* __restrict acc) {
  constexpr int W = kVectorBytes / sizeof(T);  // elements per register
  static_assert(RK % W == 0 || RK < W, "fixed ranks are multiples of the vector width");
  if constexpr (RK < W) {
    double wide[RK] = {};
    for (spt_nnz cb = b; cb < e;) {
      const spt_nnz ce = run_end<T>(cb, e);
      T sum[RK] = {};
      for (spt_nnz c = cb; c < ce; ++c)
        for (int r = 0; r < RK; ++r) sum[r] += v[c] * a[static_cast<spt_nnz>(f[c]) * ld + r];
      for (int r = 0; r < RK; ++r) wide[r] += sum[r];
      cb = ce;
    }
    for (int r = 0; r < RK; ++r) acc[r] = wide[r];
  } else {
    typedef T Vec __attribute__((vector_size(kVectorBytes)));
    constexpr int total = RK / W;
    constexpr int per_pass = total < kMaxAccumulators ? total : kMaxAccumulators;
    static_assert(total % per_pass == 0, "rank chunks divide evenly");
    for (int base = 0; base < total; base += per_pass) {
      Vec sum[per_pass];
#pragma GCC unroll 16
      for (int j = 0; j < per_pass; ++j) sum[j] = Vec{};
      // A fiber longer than one run folds into acc (most fibers are short).
      bool folded = false;
      for (spt_nnz cb = b; cb < e;) {
        const spt_nnz ce = run_end<T>(cb, e);
        add_leaves<T, per_pass>(f, v, a, ld, cb, ce, [base](int j) { return static_cast<spt_nnz>((base + j) * W); },
                                sum);
        if constexpr (kFolds<T>) {
          if (ce < e) {
            if (!folded) std::fill(acc + base * W, acc + (base + per_pass) * W, 0.0);
            folded = true;
            fold<per_pass>(sum, acc + base * W);
          }
        }
        cb = ce;
      }
      if constexpr (kFolds<T>) {
#pragma GCC unroll 16
        for (int j = 0; j < per_pass; ++j)
          for (int i = 0; i < W; ++i) {
            double* d = acc + (base + j) * W + i;
            *d = (folded ? *d : 0.0) + sum[j][i];
          }
      } else {
#pragma GCC unroll 16
        for (int j = 0; j < per_pass; ++j) std::memcpy(acc + (base + j) * W, &sum[j], sizeof(Vec));
      }
    }
  }
}

// acc[0..RK) = sum_{c in [b,e)} g(gf[c], :) .* (sum_{k in [p[c], p[c+1])}
// v[k] * a(f[k], :)): the two deepest levels of a subtree sum fused, so both
// the fiber's and the running sums stay in registers (one rank-vector
// multiply per fiber, one multiply-add per nonzero). float64 only (float32:
// fiber_sum_folded).
template <typename T, int RK>
inline void fiber_sum(const spt_index* __restrict gf, const spt_nnz* __restrict p, const T* __restrict g,
                      spt_nnz gld, const spt_index* __restrict f, const T* __restrict v, const T* __restrict a,
                      spt_nnz ld, spt_nnz b, spt_nnz e, double* __restrict acc) {
  static_assert(std::is_same_v<T, double>, "fused sums are float64");
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
                          spt_nnz b, spt_nnz e, const spt_nnz* off, double* __restrict acc) {
  typedef T Vec __attribute__((vector_size(kVectorBytes)));
  constexpr int W = kVectorBytes / sizeof(T);
  Vec sum[NV];
#pragma GCC unroll 16
  for (int j = 0; j < NV; ++j) sum[j] = Vec{};
  // Folded sums per vector (overlapping vectors are stored, not added, at the end).
  double wide[kFolds<T> ? NV * W : 1] = {};
  for (spt_nnz cb = b; cb < e;) {
    const spt_nnz ce = run_end<T>(cb, e);
    add_leaves<T, NV>(f, v, a, ld, cb, ce, [off](int j) { return off[j]; }, sum);
    if constexpr (kFolds<T>) fold<NV>(sum, wide);
    cb = ce;
  }
#pragma GCC unroll 16
  for (int j = 0; j < NV; ++j) {
    if constexpr (kFolds<T>) std::memcpy(acc + off[j], wide + j * W, W * sizeof(double));
    else std::memcpy(acc + off[j], &sum[j], sizeof(Vec));
  }
}

template <typename T, int NV>
inline void fiber_sum_pass(const spt_index* __restrict gf, const spt_nnz* __restrict p, const T* __restrict g,
                           spt_nnz gld, const spt_index* __restrict f, const T* __restrict v, const T* __restrict a,
                           spt_nnz ld, spt_nnz b, spt_nnz e, const spt_nnz* off, double* __restrict acc) {
  static_assert(std::is_same_v<T, double>, "fused sums are float64");
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

// NV native vectors of T, returned by value.
template <typename T, int NV>
struct Vectors {
  typedef T Vec __attribute__((vector_size(kVectorBytes)));
  Vec v[NV];
};

// float32, a fiber of more than kFoldEvery leaves [kb, ke): its product
// grow[off(j)..] .* (sum of v[k] * a(f[k], off(j)..)). The leaves go in
// chunks of up to 2 * kFoldEvery, each summed by two float32 sums that take
// alternate leaves (at most kFoldEvery terms each) and are then added, so
// a chunk's error bound is that of a sum of kFoldEvery + 1 terms, and a
// chunk is one loop with one exit (runs of kFoldEvery leaves, each its own
// loop and its own conversion to double, made long fibers the slow part of
// tensors whose fibers are mostly a little over kFoldEvery). The two
// independent sums also halve the chain of dependent additions per leaf. A
// fiber of one chunk returns its product in float32 (the caller adds it as
// one fiber's, no conversion); a longer one adds each chunk's product to
// wide in double and returns zeros. Out of line, so the short-fiber loop of
// fiber_sum_folded keeps its registers.
template <typename T, int NV, typename Off>
[[gnu::noinline]] Vectors<T, NV> long_fiber(
    const T* __restrict grow, const spt_index* __restrict f, const T* __restrict v, const T* __restrict a,
    spt_nnz ld, spt_nnz kb, spt_nnz ke, Off off, double* __restrict wide) {
  typedef T Vec __attribute__((vector_size(kVectorBytes)));
  typedef std::conditional_t<sizeof(T) == 4, int32_t, int64_t> Lane;
  typedef Lane Bits __attribute__((vector_size(kVectorBytes)));
  Vectors<T, NV> product;
  for (spt_nnz rb = kb; rb < ke;) {
    const spt_nnz re = ke - rb > 2 * kFoldEvery ? rb + 2 * kFoldEvery : ke;
    // An odd count: the first leaf starts the first sum, its product kept
    // by an all-ones mask (all-zeros for an even count: no branch on the
    // parity, and no 0 * inf).
    const spt_nnz odd = (re - rb) & 1;
    const T* row0 = a + static_cast<spt_nnz>(f[rb]) * ld;
    const T x0 = v[rb];
    const Bits keep = Bits{} - static_cast<Lane>(odd);
    Vec first[NV], second[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) {
      Vec r;
      std::memcpy(&r, row0 + off(j), sizeof(Vec));
      first[j] = reinterpret_cast<Vec>(reinterpret_cast<Bits>(x0 * r) & keep);
      second[j] = Vec{};
    }
    for (spt_nnz c = rb + odd; c < re; c += 2) {
      const T* row1 = a + static_cast<spt_nnz>(f[c]) * ld;
      const T* row2 = a + static_cast<spt_nnz>(f[c + 1]) * ld;
      const T x1 = v[c], x2 = v[c + 1];
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) {
        Vec r1, r2;
        std::memcpy(&r1, row1 + off(j), sizeof(Vec));
        std::memcpy(&r2, row2 + off(j), sizeof(Vec));
        first[j] += x1 * r1;
        second[j] += x2 * r2;
      }
    }
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) {
      Vec r;
      std::memcpy(&r, grow + off(j), sizeof(Vec));
      product.v[j] = (first[j] + second[j]) * r;
    }
    if (rb == kb && re == ke) return product;
    add_wide_whole<NV>(product.v, wide);
    rb = re;
  }
#pragma GCC unroll 16
  for (int j = 0; j < NV; ++j) product.v[j] = Vec{};
  return product;
}

// float32 (the fused sums of float64 are fiber_sum / fiber_sum_pass):
// acc[off(j) .. off(j)+W) for j < NV = sum_{c in [b,e)} g(gf[c], :) .*
// (sum_{k in [p[c], p[c+1])} v[k] * a(f[k], :)), both levels fused in
// float32 registers as fiber_sum. The fibers go in blocks of at most
// kFoldEvery, the running sum over a block's fibers folded into double
// after it, so the loop over a block's fibers is fiber_sum's with one more
// (predictable) test per fiber: most fibers are short, and a count of runs
// or a cut of every fiber into runs costs a short fiber about as much as
// its leaves. A fiber of more than kFoldEvery leaves goes to long_fiber.
// Out of line: inlined into a caller, its loop loses
// registers to the caller's values.
template <typename T, int NV, typename Off>
[[gnu::noinline]] void fiber_sum_folded(const spt_index* __restrict gf, const spt_nnz* __restrict p, const T* __restrict g,
                             spt_nnz gld, const spt_index* __restrict f, const T* __restrict v,
                             const T* __restrict a, spt_nnz ld, spt_nnz b, spt_nnz e, Off off,
                             double* __restrict acc) {
  typedef T Vec __attribute__((vector_size(kVectorBytes)));
  constexpr int W = kVectorBytes / sizeof(T);
  double wide[NV * W] = {};
  Vec out[NV];
#pragma GCC unroll 16
  for (int j = 0; j < NV; ++j) out[j] = Vec{};
  for (spt_nnz cb = b; cb < e;) {
    const spt_nnz ce = e - cb > kFoldEvery ? cb + kFoldEvery : e;
    spt_nnz kb = p[cb];
    for (spt_nnz c = cb; c < ce; ++c) {
      const spt_nnz ke = p[c + 1];
      if (__builtin_expect(ke - kb > kFoldEvery, 0)) {
        const auto product = long_fiber<T, NV>(g + static_cast<spt_nnz>(gf[c]) * gld, f, v, a, ld, kb, ke, off, wide);
#pragma GCC unroll 16
        for (int j = 0; j < NV; ++j) out[j] += product.v[j];
      } else {
        Vec sum[NV];
#pragma GCC unroll 16
        for (int j = 0; j < NV; ++j) sum[j] = Vec{};
        add_leaves<T, NV>(f, v, a, ld, kb, ke, off, sum);
        const T* grow = g + static_cast<spt_nnz>(gf[c]) * gld;
#pragma GCC unroll 16
        for (int j = 0; j < NV; ++j) {
          Vec r;
          std::memcpy(&r, grow + off(j), sizeof(Vec));
          out[j] += sum[j] * r;
        }
      }
      kb = ke;
    }
    fold<NV>(out, wide);
    cb = ce;
  }
#pragma GCC unroll 16
  for (int j = 0; j < NV; ++j) std::memcpy(acc + off(j), wide + j * W, W * sizeof(double));
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

// Walks the tree for one thread. Subtree sums are in double (with float32
// runs inside, see above); output rows in double, or float32 rows folded
// into them (fold_rows); path products (prefixes) in T.
template <typename T, int RK, bool Atomic>
class TreeWalker {
 public:
  // Per-thread scratch: `sums` holds sum_rows(levels) rows of rank doubles,
  // `prefixes` levels rows of rank T. `cover` is made before the parallel
  // region (it allocates). dst: the double rows the output sums go to.
  static spt_nnz sum_rows(uint32_t levels) { return levels + 1; }
  TreeWalker(const TreeOperands<T>& op, const RankCover<T>& cover, double* sums, T* prefixes, double* dst,
             spt_nnz dst_ld)
      : op_(op), sums_(sums), prefixes_(prefixes), dst_(dst), dst_ld_(dst_ld), cover_(cover) {}

  spt_nnz rank() const { return RK > 0 ? RK : op_.rank; }

  // float32 private copies: the output rows (`rows` of them) are summed in
  // `part` (rank T per row) for at most kFoldEvery additions per row, then
  // folded into dst's double rows. `left` holds per row the additions left
  // before the next fold (kFoldEvery to start with): a count down, so each
  // addition costs one decrement and a test for zero. With `by_fiber`
  // (output at the leaves of a tree without repeated coordinates only) the
  // leaves count fibers instead: a fiber adds to each row at most once, so
  // every row is folded each kFoldEvery fibers and a leaf costs no count.
  void fold_rows(T* part, uint16_t* left, spt_nnz rows, bool by_fiber) {
    part_ = part;
    left_ = left;
    rows_ = rows;
    by_fiber_ = by_fiber;
  }

  // acc = sum over nodes c in [b, e) of level l of A_l(fid_l[c],:) .* (sum
  // of c's subtree), where a leaf's subtree sum is its value.
  void sum_nodes(uint32_t l, spt_nnz b, spt_nnz e, double* __restrict acc) const {
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
        for (spt_nnz r = 0; r < R; ++r) acc[r] = 0.0;
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
    constexpr int W = kVectorBytes / static_cast<int>(sizeof(T));
    if constexpr (RK >= W) {
      if (l + 1 == op_.leaf) {
        const spt_index* lf = op_.fid[op_.leaf];
        if constexpr (kFolds<T>) {
          constexpr int total = RK / W, nv = total < kMaxAccumulators ? total : kMaxAccumulators;
          for (int base = 0; base < total; base += nv)
            fiber_sum_folded<T, nv>(f, p, a, ld, lf, op_.val, op_.base[op_.leaf], op_.ld[op_.leaf], b, e,
                                    [base](int j) { return static_cast<spt_nnz>((base + j) * W); }, acc);
        } else {
          fiber_sum<T, RK>(f, p, a, ld, lf, op_.val, op_.base[op_.leaf], op_.ld[op_.leaf], b, e, acc);
        }
        return;
      }
    } else if constexpr (RK == 0) {
      if (l + 1 == op_.leaf && !cover_.offsets.empty()) {
        for_each_pass<kMaxAccumulators / 2>(cover_.offsets, [&](auto nv, const spt_nnz* off) {
          constexpr int NV = decltype(nv)::value;
          if constexpr (kFolds<T>)
            fiber_sum_folded<T, NV>(f, p, a, ld, op_.fid[op_.leaf], op_.val, op_.base[op_.leaf], op_.ld[op_.leaf],
                                    b, e, [off](int j) { return off[j]; }, acc);
          else
            fiber_sum_pass<T, NV>(f, p, a, ld, op_.fid[op_.leaf], op_.val, op_.base[op_.leaf], op_.ld[op_.leaf],
                                  b, e, off, acc);
        });
        return;
      }
    }
    double* __restrict child = sums_ + static_cast<spt_nnz>(l) * R;
    for (spt_nnz r = 0; r < R; ++r) acc[r] = 0.0;
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
        if constexpr (kFolds<T> && !Atomic) {
          if (part_ != nullptr) {
            leaves_to_rows(b, e, prefix);
            return;
          }
        }
        const T* __restrict v = op_.val;
        for (spt_nnz c = b; c < e; ++c) add_row(f[c], v[c], prefix);
      } else {
        if constexpr (kFolds<T> && !Atomic && RK >= kVectorBytes / static_cast<int>(sizeof(T))) {
          if (l + 1 == op_.leaf && part_ != nullptr) {
            fibers_to_rows(l, b, e, prefix);
            return;
          }
        }
        const spt_nnz* __restrict p = op_.ptr[l];
        double* __restrict below = sums_ + static_cast<spt_nnz>(op_.leaf + 1) * R;
        for (spt_nnz c = b; c < e; ++c) {
          sum_nodes(l + 1, p[c], p[c + 1], below);
#pragma omp simd
          for (spt_nnz r = 0; r < R; ++r) below[r] *= prefix[r];
          add_row(f[c], 1.0, below);
        }
      }
      return;
    }
    if constexpr (kFolds<T> && !Atomic && RK >= kVectorBytes / static_cast<int>(sizeof(T))) {
      if (l + 1 == op_.leaf && op_.target == op_.leaf && part_ != nullptr) {
        fibers_to_leaf_rows(l, b, e, prefix);
        return;
      }
    }
    const T* __restrict a = op_.base[l];
    const spt_nnz ld = op_.ld[l];
    const spt_nnz* __restrict p = op_.ptr[l];
    T* __restrict mine = prefixes_ + static_cast<spt_nnz>(l) * R;
    for (spt_nnz c = b; c < e; ++c) {
      const T* __restrict row = a + static_cast<spt_nnz>(f[c]) * ld;
#pragma omp simd
      for (spt_nnz r = 0; r < R; ++r) mine[r] = prefix[r] * row[r];
      visit(l + 1, p[c], p[c + 1], mine);
    }
  }

 private:
  // float32, output level just above the leaves, private rows: each fiber
  // of at most kFoldEvery leaves is summed in float32 registers (one run),
  // multiplied by the prefix and added to its float32 row, as add_row
  // would, with no pass through double; a longer fiber takes the double
  // path (sum_nodes, then add_row).
  void fibers_to_rows(uint32_t l, spt_nnz b, spt_nnz e, const T* __restrict prefix) const {
    constexpr int W = kVectorBytes / static_cast<int>(sizeof(T));
    static_assert(RK >= W && RK % W == 0, "fixed ranks of at least one vector");
    typedef T Vec __attribute__((vector_size(kVectorBytes)));
    constexpr int total = RK / W;
    constexpr int per_pass = total < kMaxAccumulators ? total : kMaxAccumulators;
    const spt_index* __restrict f = op_.fid[l];
    const spt_nnz* __restrict p = op_.ptr[l];
    const spt_index* __restrict lf = op_.fid[op_.leaf];
    const T* __restrict v = op_.val;
    const T* __restrict a = op_.base[op_.leaf];
    const spt_nnz ld = op_.ld[op_.leaf];
    T* __restrict part = part_;
    uint16_t* __restrict left = left_;
    for (spt_nnz c = b; c < e; ++c) {
      const spt_nnz kb = p[c], ke = p[c + 1];
      const spt_index i = f[c];
      if (ke - kb > kFoldEvery) {
        double* __restrict below = sums_ + static_cast<spt_nnz>(op_.leaf + 1) * RK;
        sum_nodes(l + 1, kb, ke, below);
#pragma omp simd
        for (spt_nnz r = 0; r < RK; ++r) below[r] *= prefix[r];
        add_row(i, 1.0, below);
        continue;
      }
      T* __restrict o = part + static_cast<spt_nnz>(i) * RK;
#pragma GCC unroll 4
      for (int base = 0; base < total; base += per_pass) {
        Vec sum[per_pass];
#pragma GCC unroll 16
        for (int j = 0; j < per_pass; ++j) sum[j] = Vec{};
        add_leaves<T, per_pass>(lf, v, a, ld, kb, ke, [base](int j) { return static_cast<spt_nnz>((base + j) * W); },
                                sum);
#pragma GCC unroll 16
        for (int j = 0; j < per_pass; ++j) {
          Vec pr, acc;
          std::memcpy(&pr, prefix + (base + j) * W, sizeof(Vec));
          std::memcpy(&acc, o + (base + j) * W, sizeof(Vec));
          acc += sum[j] * pr;
          std::memcpy(o + (base + j) * W, &acc, sizeof(Vec));
        }
      }
      if (__builtin_expect(--left[i] == 0, 0)) fold_part_row_call(i);
    }
  }

  // float32 private rows, output at the leaves, one fiber: row f[c] +=
  // v[c] * prefix for each leaf c in [b, e).
  void leaves_to_rows(spt_nnz b, spt_nnz e, const T* __restrict prefix) const {
    const spt_nnz R = rank();
    T* __restrict part = part_;
    const auto add = [&](spt_index i, T x) {
      T* __restrict w = part + static_cast<spt_nnz>(i) * R;
#pragma omp simd
      for (spt_nnz r = 0; r < R; ++r) w[r] += x * prefix[r];
    };
    if (by_fiber_) {
      spt_nnz fibers = fibers_;
      leaves_by_fiber(b, e, fibers, add);
      fibers_ = fibers;
    } else {
      leaves_counted(b, e, left_, add);
    }
  }

  // float32 private rows, output at the leaves, level l = leaf - 1 (fixed
  // ranks of at least one vector): nodes [b, e) are fibers; a fiber's
  // prefix (prefix .* its factor row) is formed in registers and each of
  // its leaves adds v * that prefix to its row, so neither the prefix nor
  // the walk through the leaf level goes through memory.
  void fibers_to_leaf_rows(uint32_t l, spt_nnz b, spt_nnz e, const T* __restrict prefix) const {
    constexpr int W = kVectorBytes / static_cast<int>(sizeof(T));
    static_assert(RK >= W && RK % W == 0, "fixed ranks of at least one vector");
    typedef T Vec __attribute__((vector_size(kVectorBytes)));
    constexpr int NV = RK / W;
    const spt_index* __restrict f = op_.fid[l];
    const spt_nnz* __restrict p = op_.ptr[l];
    const T* __restrict a = op_.base[l];
    const spt_nnz ld = op_.ld[l];
    T* __restrict part = part_;
    Vec above[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) std::memcpy(&above[j], prefix + j * W, sizeof(Vec));
    // Calls leaves(first leaf, end, add) per fiber, add(i, x) adding x * the
    // fiber's prefix to row i (aligned rows: deep_mttkrp).
    const auto each_fiber = [&](auto&& leaves) {
      for (spt_nnz c = b; c < e; ++c) {
        const T* __restrict row = a + static_cast<spt_nnz>(f[c]) * ld;
        Vec pre[NV];
#pragma GCC unroll 16
        for (int j = 0; j < NV; ++j) {
          std::memcpy(&pre[j], row + j * W, sizeof(Vec));
          pre[j] *= above[j];
        }
        leaves(p[c], p[c + 1], [&](spt_index i, T x) {
          Vec* __restrict w = reinterpret_cast<Vec*>(part + static_cast<spt_nnz>(i) * RK);
#pragma GCC unroll 16
          for (int j = 0; j < NV; ++j) w[j] += x * pre[j];
        });
      }
    };
    if (by_fiber_) {
      spt_nnz fibers = fibers_;
      each_fiber([&](spt_nnz kb, spt_nnz ke, auto&& add) { leaves_by_fiber(kb, ke, fibers, add); });
      fibers_ = fibers;
    } else {
      uint16_t* __restrict left = left_;
      each_fiber([&](spt_nnz kb, spt_nnz ke, auto&& add) { leaves_counted(kb, ke, left, add); });
    }
  }

  // The leaves [b, e) of one fiber, add(f[c], v[c]) each (it adds v[c]
  // times the fiber's prefix to float32 row f[c]), every row folded first
  // once `fibers` counts kFoldEvery fibers (fold_rows, by_fiber). Inlined,
  // so the caller's prefix stays in registers.
  template <typename Add>
  [[gnu::always_inline]] void leaves_by_fiber(spt_nnz b, spt_nnz e, spt_nnz& fibers, Add&& add) const {
    const spt_index* __restrict f = op_.fid[op_.leaf];
    const T* __restrict v = op_.val;
    if (__builtin_expect(++fibers > kFoldEvery, 0)) {
      fold_every_row();
      fibers = 1;
    }
    for (spt_nnz c = b; c < e; ++c) add(f[c], v[c]);
  }

  // As leaves_by_fiber, each row folded when its count down `left` ends.
  template <typename Add>
  [[gnu::always_inline]] void leaves_counted(spt_nnz b, spt_nnz e, uint16_t* __restrict left, Add&& add) const {
    const spt_index* __restrict f = op_.fid[op_.leaf];
    const T* __restrict v = op_.val;
    for (spt_nnz c = b; c < e; ++c) {
      const spt_index i = f[c];
      add(i, v[c]);
      if (__builtin_expect(--left[i] == 0, 0)) fold_part_row(i);
    }
  }

  [[gnu::noinline]] void fold_every_row() const {
    for (spt_nnz i = 0; i < rows_; ++i) fold_part_row(static_cast<spt_index>(i));
  }

  // The float32 row i of part_ into dst's double row; zeroed, its count
  // down restarted.
  [[gnu::always_inline]] void fold_part_row(spt_index i) const {
    T* __restrict w = part_ + static_cast<spt_nnz>(i) * rank();
    double* __restrict o = dst_ + static_cast<spt_nnz>(i) * dst_ld_;
#pragma omp simd
    for (spt_nnz r = 0; r < rank(); ++r) {
      o[r] += w[r];
      w[r] = T(0);
    }
    left_[i] = static_cast<uint16_t>(kFoldEvery);
  }

  // fold_part_row out of line, for loops that keep other values in registers.
  [[gnu::noinline]] void fold_part_row_call(spt_index i) const { fold_part_row(i); }

  // dst row i += scale * src (the product in S, the sum in double).
  template <typename S>
  void add_row(spt_index i, S scale, const S* __restrict src) const {
    double* __restrict o = dst_ + static_cast<spt_nnz>(i) * dst_ld_;
    if constexpr (Atomic) {
      for (spt_nnz r = 0; r < rank(); ++r) {
        const double add = scale * src[r];
#pragma omp atomic
        o[r] += add;
      }
    } else if (part_ != nullptr) {
      T* __restrict w = part_ + static_cast<spt_nnz>(i) * rank();
#pragma omp simd
      for (spt_nnz r = 0; r < rank(); ++r) w[r] += static_cast<T>(scale * src[r]);
      if (__builtin_expect(--left_[i] == 0, 0)) fold_part_row_call(i);
    } else {
#pragma omp simd
      for (spt_nnz r = 0; r < rank(); ++r) o[r] += scale * src[r];
    }
  }

  const TreeOperands<T>& op_;
  double* sums_;  // [child sums per level | target sum]
  T* prefixes_;   // prefix per level
  double* dst_;
  spt_nnz dst_ld_;
  const RankCover<T>& cover_;  // vector offsets for a run-time rank (empty for R < W)
  T* part_ = nullptr;          // fold_rows
  uint16_t* left_ = nullptr;
  spt_nnz rows_ = 0;
  bool by_fiber_ = false;
  mutable spt_nnz fibers_ = 0;  // by_fiber: fibers since every row was folded
};

// Bounds of the level-1 node ranges of the tasks, about nnz / tasks leaves each.
std::vector<spt_nnz> task_bounds(const CsfTree& tree, int tasks) {
  const spt_nnz nodes = tree.nodes(1), n = tree.nnz();
  std::vector<spt_nnz> bound(tasks + 1, 0);
  bound[tasks] = nodes;
  for (int j = 1; j < tasks; ++j) {
    const spt_nnz want = chunk_begin(n, j, tasks);
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
  using Walker = TreeWalker<T, RK, false>;
  const spt_nnz R = op.rank;
  const int tasks = threads * kTasksPerThread;
  const std::vector<spt_nnz> bound = task_bounds(tree, tasks);
  const spt_nnz* ptr0 = op.ptr[0];
  const spt_index* fid0 = op.fid[0];
  const spt_nnz slices = tree.nodes(0);
  // Per thread: the walker's sums and one row for a slice's sum.
  const size_t per_thread = static_cast<size_t>(Walker::sum_rows(op.leaf + 1) + 1) * R;
  buffer<double> scratch(static_cast<size_t>(threads) * per_thread);
  buffer<double> edge(static_cast<size_t>(tasks) * 2 * R);
  const RankCover<T> cover(RK > 0 ? 0 : R);
  std::vector<spt_index> edge_row(2 * static_cast<size_t>(tasks));
  std::vector<char> edge_used(2 * static_cast<size_t>(tasks), 0);
  zero_out(out, threads);
#pragma omp parallel num_threads(threads)
  {
    double* mine = scratch.data() + static_cast<size_t>(omp_get_thread_num()) * per_thread;
    double* slice_sum = mine + per_thread - R;
    Walker walk(op, cover, mine, nullptr, nullptr, 0);
#pragma omp for schedule(dynamic, 1)
    for (int j = 0; j < tasks; ++j) {
      const spt_nnz cb = bound[j], ce = bound[j + 1];
      if (cb >= ce) continue;
      for (spt_nnz s = slice_of(ptr0, slices, cb); s < slices && ptr0[s] < ce; ++s) {
        const spt_nnz b = std::max(ptr0[s], cb), e = std::min(ptr0[s + 1], ce);
        if (ptr0[s] < cb || ptr0[s + 1] > ce) {  // shared with a neighbour
          const size_t slot = 2 * static_cast<size_t>(j) + (ptr0[s] < cb ? 0 : 1);
          edge_row[slot] = fid0[s];
          edge_used[slot] = 1;
          walk.sum_nodes(1, b, e, edge.data() + slot * R);
        } else {
          walk.sum_nodes(1, b, e, slice_sum);
          T* o = out.row(fid0[s]);
          for (spt_nnz r = 0; r < R; ++r) o[r] = static_cast<T>(slice_sum[r]);
        }
      }
    }
  }
  // Shared slices: slices ascend with the tasks and no task stored them.
  store_edge_rows(edge.data(), edge_row, edge_used, out);
}

// Output sums in double: float64 sums straight into `out` (thread 0's
// share, or all of them with atomics), the rest into double copies of
// dims[mode] x R (float32: every thread's, each with a float32 copy whose
// rows are folded into it every kFoldEvery additions, or one shared copy
// with atomics), added and rounded at the end.
template <typename T, int RK, bool Atomic>
void deep_mttkrp(const TreeOperands<T>& op, const CsfTree& tree, MatRef<T> out, int threads) {
  using Walker = TreeWalker<T, RK, Atomic>;
  constexpr bool direct = std::is_same_v<T, double>;
  const spt_nnz R = op.rank;
  const int tasks = threads * kTasksPerThread;
  const std::vector<spt_nnz> bound = task_bounds(tree, tasks);
  const spt_nnz* ptr0 = op.ptr[0];
  const spt_index* fid0 = op.fid[0];
  const T* a0 = op.base[0];
  const spt_nnz ld0 = op.ld[0];
  const spt_nnz slices = tree.nodes(0);
  const spt_nnz rows = out.rows, slab = rows * R;
  const uint32_t levels = op.leaf + 1;
  const size_t sums_per_thread = static_cast<size_t>(Walker::sum_rows(levels)) * R;
  const size_t prefixes_per_thread = static_cast<size_t>(levels) * R;
  // Every thread's arrays on their own cache lines (see CacheLineSlabs);
  // float32 rows so at vector alignment too (the leaf loops load and add
  // them as vectors).
  static_assert(kVectorBytes <= CacheLineSlabs<T>::kLine, "cache-line slabs are vector aligned");
  CacheLineSlabs<double> sums(threads, sums_per_thread, "MTTKRP running sums");
  CacheLineSlabs<T> prefixes(threads, prefixes_per_thread, "MTTKRP prefix rows");
  const RankCover<T> cover(RK > 0 ? 0 : R);
  const int copies = Atomic ? (direct ? 0 : 1) : (direct ? threads - 1 : threads);
  CacheLineSlabs<double> wide(copies, slab, "MTTKRP private buffers");
  constexpr bool folded = !direct && !Atomic;
  CacheLineSlabs<T> part(folded ? copies : 0, slab, "MTTKRP private buffers");
  CacheLineSlabs<uint16_t> count(folded ? copies : 0, rows, "MTTKRP fold counts");
  // Output at the leaves: folding every row each kFoldEvery fibers costs
  // rows / (kFoldEvery * leaves per fiber) row folds per leaf, the counts a
  // decrement and test per leaf and a branch mispredicted per fold; fibers
  // are cheaper while a fiber has at least about a quarter as many leaves
  // as there are rows. Repeated coordinates (two additions to a row in one
  // fiber) take the counts.
  const bool by_fiber = op.target == op.leaf && !tree.leaf_repeats &&
                        rows <= kFiberRowsPerLeaf * (tree.nnz() / std::max<spt_nnz>(1, tree.nodes(op.leaf - 1)));
  parallel_team(threads, [&](int t, int team) {
    // Copies in use: a smaller team than asked leaves some out.
    const spt_nnz used = Atomic ? copies : (direct ? team - 1 : team);
#pragma omp for schedule(static)
    for (spt_nnz i = 0; i < rows; ++i) std::fill(out.row(i), out.row(i) + R, T(0));
    zero_rows_in_team(wide, used, rows, R);
    if constexpr (folded) zero_rows_in_team(part, used, rows, R);
    double* dst = nullptr;
    spt_nnz dst_ld = R;
    if constexpr (direct) {
      if (Atomic || t == 0) {
        dst = out.data;
        dst_ld = out.ld;
      } else {
        dst = wide[t - 1];
      }
    } else {
      dst = wide[Atomic ? 0 : t];
    }
    Walker walk(op, cover, sums[t], prefixes[t], dst, dst_ld);
    if constexpr (folded) {
      uint16_t* const left = count[t];
      std::fill(left, left + rows, static_cast<uint16_t>(kFoldEvery));
      walk.fold_rows(part[t], left, rows, by_fiber);
    }
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
    if (used > 0) {
      reduce_copies_in_team<RK>(
          out, used, [&](spt_nnz i, spt_nnz r) { return static_cast<double>(out.row(i)[r]); },
          [&](double& sum, spt_nnz q, spt_nnz i, spt_nnz r) {
            sum += wide[q][i * R + r];
            if constexpr (folded) sum += static_cast<double>(part[q][i * R + r]);
          });
    }
  });
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

}  // namespace spt::kernels::SPT_CPU_VARIANT
