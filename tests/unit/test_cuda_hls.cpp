// GPU HLS (tensor cores): the MTTKRP and TTMc of cuda/hls.cu through the
// dispatcher (DeviceKernels::mttkrp_hls / ttmc_hls) against the float64 COO
// reference kernels and the float64 HLS reference kernels on the same handle
// (tests/common/format_references.hpp), on block-structured tensors (dense 16^3 clusters plus
// scattered nonzeros) and the all-dense (threshold 1) and all-sparse
// (threshold above 4096 D) extremes, orders 3 and 4 (slab depths 1 and 4),
// every root mode, MTTKRP ranks 1, 16, 33 and TTMc ranks {8, 16, 5}, float32
// and float64 tensors, every precision:
//  - EXACT (CUDA cores in the tensor's type): every entry within 1e-5
//    (float32) / 1e-12 (float64) of the reference, relative to max(1, |ref|),
//    on signed data;
//  - FP16 / TF32 / BF16 (tensor cores): SMAPE (mean over the entries of
//    |a - b| / ((|a| + |b|) / 2)) below the paper's 0.17% for FP16 and TF32
//    (11-bit significands, unit roundoff 2^-11) and below 8 x 0.17% = 1.36%
//    for BF16 (8-bit significand, unit roundoff 2^-8 = 0.39%, 8x larger: an
//    entry fed by one dense cell carries the error of three or more rounded
//    inputs, ~0.3% on average, so 0.17% is out of bf16's reach - the looser
//    bf16 bound is deliberate), and the max relative error below 1% (FP16,
//    TF32) / 8% (BF16), on positive data
//    (values and factors in [0.1, 1], like the paper's trajectory and count
//    data: with signed data a near-zero result has an unbounded relative
//    error in any reduced precision). Both are printed and recorded
//    (RecordProperty, worst case per precision and type).
// Also through the C API: the device copy cached on the handle, the CPU
// fallback under AUTO and the error under CUDA (out of memory, no device),
// the precision option and its validation, the dense threshold measured on
// the device (in range, cached per process, reported by spt_hls_info) and
// an explicit threshold winning over it. GPU tests skip without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/cuda_test_util.hpp"
#include "common/format_invariants.hpp"
#include "common/format_options.hpp"
#include "common/format_references.hpp"
#include "common/test_util.hpp"
#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/error.hpp"
#include "core/hls.hpp"
#include "core/matrix.hpp"
#include "dispatch/device.hpp"
#include "dispatch/device_hls.hpp"
#include "dispatch/dispatch.hpp"
#include "kernels/kernels.hpp"
#include "sptensor/sptensor.h"

namespace spt::test {
namespace {

namespace ref = spt::kernels::reference;
using kernels::Exec;

constexpr uint32_t kAllSparse = std::numeric_limits<uint32_t>::max();

// ---------------------------------------------------------------------------
// Inputs

// Block-structured coordinates: `clusters` boxes of 16 x 16 x 16 (x depth
// for order 4) aligned to the tile grid, each filled at `fill` density,
// plus `scattered` uniform nonzeros; distinct.
std::vector<std::vector<spt_index>> block_coords(const std::vector<spt_index>& dims, int clusters, double fill,
                                                 spt_index depth, int scattered, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<std::vector<spt_index>> seen;
  std::vector<std::vector<spt_index>> coords;
  auto add = [&](const std::vector<spt_index>& c) {
    if (seen.insert(c).second) coords.push_back(c);
  };
  const size_t order = dims.size();
  for (int b = 0; b < clusters; ++b) {
    std::vector<spt_index> base(order), edge(order, 16);
    if (order == 4) edge[3] = depth;
    // Clusters lie in whole tiles (a cluster cut by the tensor's edge may
    // fall under the threshold); the ragged edges get scattered nonzeros.
    for (size_t m = 0; m < order; ++m)
      base[m] = spt_index(rng() % std::max<spt_index>(dims[m] / edge[m], 1)) * edge[m];
    uint64_t cells = 1;
    for (size_t m = 0; m < order; ++m) cells *= edge[m];
    for (uint64_t k = 0; k < uint64_t(double(cells) * fill); ++k) {
      std::vector<spt_index> c(order);
      bool inside = true;
      for (size_t m = 0; m < order; ++m) {
        c[m] = base[m] + spt_index(rng() % edge[m]);
        inside = inside && c[m] < dims[m];
      }
      if (inside) add(c);
    }
  }
  for (int k = 0; k < scattered; ++k) {
    std::vector<spt_index> c(order);
    for (size_t m = 0; m < order; ++m) c[m] = spt_index(rng() % dims[m]);
    add(c);
  }
  std::shuffle(coords.begin(), coords.end(), rng);
  return coords;
}

// Values: signed in [-1, 1), or positive in [0.1, 1].
double draw(std::mt19937_64& rng, bool positive) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const double v = u(rng);
  return positive ? 0.1 + 0.9 * std::abs(v) : v;
}

spt_coo_s make_coo(spt_dtype dtype, const std::vector<spt_index>& dims,
                   const std::vector<std::vector<spt_index>>& coords, bool positive, uint64_t seed) {
  std::mt19937_64 rng(seed);
  spt_coo_s x;
  x.init_owned(dtype, dims, coords.size());
  for (size_t k = 0; k < coords.size(); ++k) {
    for (size_t m = 0; m < dims.size(); ++m) x.mutable_ind(uint32_t(m))[k] = coords[k][m];
    const double v = draw(rng, positive);
    if (dtype == SPT_FLOAT32) x.mutable_values<float>()[k] = float(v);
    else x.mutable_values<double>()[k] = v;
  }
  return x;
}

// x with float64 values (exactly the same numbers).
spt_coo_s as_float64(const spt_coo_s& x) {
  spt_coo_s y;
  y.init_owned(SPT_FLOAT64, x.dims, x.nnz);
  for (uint32_t m = 0; m < x.order(); ++m) std::copy(x.ind[m], x.ind[m] + x.nnz, y.mutable_ind(m));
  for (spt_nnz k = 0; k < x.nnz; ++k)
    y.mutable_values<double>()[k] =
        x.dtype() == SPT_FLOAT32 ? double(static_cast<const float*>(x.val)[k]) : static_cast<const double*>(x.val)[k];
  return y;
}

template <typename T>
DenseMatrix<T> make_matrix(spt_nnz rows, spt_nnz cols, bool positive, uint64_t seed) {
  std::mt19937_64 rng(seed);
  DenseMatrix<T> a(rows, cols);
  for (T& v : a.values) v = T(draw(rng, positive));
  return a;
}

template <typename T>
DenseMatrix<double> widen(const DenseMatrix<T>& a) {
  DenseMatrix<double> b(a.rows, a.cols);
  for (size_t k = 0; k < a.values.size(); ++k) b.values[k] = double(a.values[k]);
  return b;
}

template <typename T>
std::vector<ConstMatRef<T>> refs_of(const std::vector<DenseMatrix<T>>& f) {
  std::vector<ConstMatRef<T>> r;
  for (const auto& m : f) r.push_back(m.cref());
  return r;
}

hls::Params params(uint32_t root, uint32_t threshold, uint32_t depth) {
  hls::Params p;
  p.root = root;
  p.dense_threshold = threshold;
  p.slab_depth = depth;
  return p;
}

const char* precision_name(spt_hls_precision p) {
  switch (p) {
    case SPT_HLS_PRECISION_FP16: return "fp16";
    case SPT_HLS_PRECISION_BF16: return "bf16";
    case SPT_HLS_PRECISION_TF32: return "tf32";
    case SPT_HLS_PRECISION_EXACT: return "exact";
    default: return "auto";
  }
}

// ---------------------------------------------------------------------------
// Error measures against the float64 reference

struct Errors {
  double smape = 0;         // mean over the entries of |a-b| / ((|a|+|b|)/2), 0/0 = 0
  double max_relative = 0;  // max |a-b| / |b| (b the reference), over entries with b != 0
  double max_scaled = 0;    // max |a-b| / max(1, |b|)
};

template <typename T>
Errors compare(const DenseMatrix<double>& want, const DenseMatrix<T>& got) {
  Errors e;
  double sum = 0;
  for (spt_nnz i = 0; i < want.rows; ++i)
    for (spt_nnz j = 0; j < want.cols; ++j) {
      const double b = want(i, j), a = double(got(i, j));
      const double d = std::abs(a - b);
      const double mean = (std::abs(a) + std::abs(b)) / 2;
      sum += mean > 0 ? d / mean : (d > 0 ? 2.0 : 0.0);
      if (b != 0) e.max_relative = std::max(e.max_relative, d / std::abs(b));
      e.max_scaled = std::max(e.max_scaled, d / std::max(1.0, std::abs(b)));
      if (!std::isfinite(a)) e.max_scaled = e.max_relative = e.smape = std::numeric_limits<double>::infinity();
    }
  const spt_nnz cells = want.rows * want.cols;
  if (std::isfinite(e.smape)) e.smape = cells > 0 ? sum / double(cells) : 0;
  return e;
}

// See the file comment: the paper's 0.17%; bf16 scaled by its unit
// roundoff's ratio to fp16's (2^-8 / 2^-11 = 8).
double smape_bound(spt_hls_precision p) { return p == SPT_HLS_PRECISION_BF16 ? 8 * 0.0017 : 0.0017; }
double max_relative_bound(spt_hls_precision p) { return p == SPT_HLS_PRECISION_BF16 ? 0.08 : 0.01; }

// The worst error per (precision, type) over a test, recorded at its end.
struct Worst {
  std::map<std::string, Errors> by_key;
  void add(const std::string& key, const Errors& e) {
    Errors& w = by_key[key];
    w.smape = std::max(w.smape, e.smape);
    w.max_relative = std::max(w.max_relative, e.max_relative);
    w.max_scaled = std::max(w.max_scaled, e.max_scaled);
  }
  void record() const {
    for (const auto& [key, e] : by_key) {
      ::testing::Test::RecordProperty("smape_" + key, std::to_string(e.smape));
      ::testing::Test::RecordProperty("max_relative_" + key, std::to_string(e.max_relative));
      std::printf("worst %-14s SMAPE %.3e  max relative %.3e  max scaled %.3e\n", key.c_str(), e.smape,
                  e.max_relative, e.max_scaled);
    }
  }
};

// Asserts the error of one product in precision p (see the file comment).
void check_errors(spt_hls_precision p, const Errors& e, bool is_float, const std::string& what) {
  if (p == SPT_HLS_PRECISION_EXACT) {
    const double tol = is_float ? 1e-5 : 1e-12;
    ASSERT_LE(e.max_scaled, tol) << what << ": EXACT differs from the float64 reference (max |a-b|/max(1,|b|))";
  } else {
    std::printf("%s: SMAPE %.3e max relative %.3e\n", what.c_str(), e.smape, e.max_relative);
    ASSERT_LT(e.smape, smape_bound(p)) << what << ": SMAPE over the bound";
    ASSERT_LT(e.max_relative, max_relative_bound(p)) << what << ": max relative error over the bound";
  }
}

spt_context_s cuda_context() {
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CUDA;
  return ctx;
}

const spt_hls_precision kPrecisions[] = {SPT_HLS_PRECISION_EXACT, SPT_HLS_PRECISION_FP16, SPT_HLS_PRECISION_BF16,
                                         SPT_HLS_PRECISION_TF32};

// Every root, threshold (default, 1, all sparse) and precision of one
// shape: the GPU products against the float64 COO reference.
template <typename T>
void check_shape(const std::vector<spt_index>& dims, spt_index depth, int clusters, int scattered, uint64_t seed,
                 Worst& worst) {
  const spt_dtype dt = std::is_same_v<T, float> ? SPT_FLOAT32 : SPT_FLOAT64;
  const uint32_t order = static_cast<uint32_t>(dims.size());
  const auto coords = block_coords(dims, clusters, 0.12, depth, scattered, seed);
  const spt_context_s ctx = cuda_context();
  for (bool positive : {false, true}) {
    const spt_coo_s x = make_coo(dt, dims, coords, positive, seed + 1);
    const spt_coo_s x64 = as_float64(x);
    for (uint32_t root = 0; root < order; ++root)
      for (uint32_t threshold : {0u, 1u, kAllSparse}) {
        spt_hls_s h = hls::from_coo(x, params(root, threshold, order == 4 ? depth : 0), 2);
        ASSERT_NO_THROW(hls::validate(h));
        // (Order 4 rooted at mode 3 tiles the 16 x 16 x 16 x D clusters the
        // other way round: a tile holds D / 16 of a cluster, too few cells
        // to be dense at the default threshold.)
        if (threshold == 0 && !(order == 4 && root == 3)) {
          ASSERT_GT(h.dense_tiles(), 0u) << "the clusters should make dense tiles";
          ASSERT_GT(h.sparse_nnz(), 0u) << "the scattered nonzeros should stay sparse";
        }
        if (threshold == 1) {
          ASSERT_EQ(h.sparse_nnz(), 0u);
        }
        if (threshold == kAllSparse) {
          ASSERT_EQ(h.dense_nnz(), 0u);
        }
        const spt_index I = dims[root];
        // MTTKRP, ranks 1, 16, 33.
        for (spt_nnz rank : {1, 16, 33}) {
          std::vector<DenseMatrix<T>> f;
          for (uint32_t m = 0; m < order; ++m) f.push_back(make_matrix<T>(dims[m], rank, positive, seed + 7 * m + rank));
          std::vector<DenseMatrix<double>> f64;
          for (const auto& a : f) f64.push_back(widen(a));
          const auto r = refs_of(f);
          const auto r64 = refs_of(f64);
          DenseMatrix<double> want(I, rank);
          ref::mttkrp(Exec{1}, x64, r64.data(), root, want.ref());
          const DenseMatrix<double> want_hls = reference_mttkrp_hls(h, f);
          for (spt_hls_precision p : kPrecisions) {
            if (p != SPT_HLS_PRECISION_EXACT && !positive) continue;
            if (p == SPT_HLS_PRECISION_EXACT && positive) continue;
            h.precision = p;
            DenseMatrix<T> got(I, rank);
            std::fill(got.values.begin(), got.values.end(), T(7));  // must be overwritten
            const std::string what = cat("order ", order, " depth ", depth, " root ", root, " threshold ", threshold,
                                         " ", dtype_name(dt), " MTTKRP rank ", rank, " ", precision_name(p));
            ASSERT_TRUE(dispatch::DeviceKernels::mttkrp_hls(ctx, h, r.data(), got.ref())) << what;
            const Errors e = compare(want, got);
            worst.add(cat(precision_name(p), "_", dtype_name(dt)), e);
            check_errors(p, e, dt == SPT_FLOAT32, what);
            check_errors(p, compare(want_hls, got), dt == SPT_FLOAT32, what + " (HLS reference)");
          }
        }
        // TTMc, ranks {8, 16, 5} over the other modes in increasing order.
        const spt_nnz base[] = {8, 16, 5};
        std::vector<spt_nnz> ranks(order, 1);
        spt_nnz cols = 1;
        for (uint32_t m = 0, j = 0; m < order; ++m)
          if (m != root) {
            ranks[m] = base[j++ % 3];
            cols *= ranks[m];
          }
        std::vector<DenseMatrix<T>> u;
        for (uint32_t m = 0; m < order; ++m) u.push_back(make_matrix<T>(dims[m], ranks[m], positive, seed + 11 * m));
        std::vector<DenseMatrix<double>> u64;
        for (const auto& a : u) u64.push_back(widen(a));
        const auto ru = refs_of(u);
        const auto ru64 = refs_of(u64);
        DenseMatrix<double> want(I, cols);
        ref::ttmc(Exec{1}, x64, ru64.data(), root, want.ref());
        const DenseMatrix<double> want_hls = reference_ttmc_hls(h, u);
        for (spt_hls_precision p : kPrecisions) {
          if ((p == SPT_HLS_PRECISION_EXACT) == positive) continue;
          h.precision = p;
          DenseMatrix<T> got(I, cols);
          std::fill(got.values.begin(), got.values.end(), T(7));
          const std::string what = cat("order ", order, " depth ", depth, " root ", root, " threshold ", threshold,
                                       " ", dtype_name(dt), " TTMc ", cols, " columns ", precision_name(p));
          ASSERT_TRUE(dispatch::DeviceKernels::ttmc_hls(ctx, h, ru.data(), got.ref())) << what;
          const Errors e = compare(want, got);
          worst.add(cat(precision_name(p), "_", dtype_name(dt)), e);
          check_errors(p, e, dt == SPT_FLOAT32, what);
          check_errors(p, compare(want_hls, got), dt == SPT_FLOAT32, what + " (HLS reference)");
        }
      }
  }
}

template <typename T>
class CudaHlsProducts : public ::testing::Test {};
using ValueTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CudaHlsProducts, ValueTypes);

TYPED_TEST(CudaHlsProducts, Order3AllPrecisions) {
  SKIP_WITHOUT_DEVICE();
  Worst worst;
  // Dims not multiples of 16 (partial edge tiles); one short mode.
  check_shape<TypeParam>({70, 50, 45}, 1, 5, 1500, 3, worst);
  if (this->HasFatalFailure()) return;
  check_shape<TypeParam>({100, 33, 9}, 1, 3, 800, 4, worst);
  worst.record();
}

TYPED_TEST(CudaHlsProducts, Order4AllPrecisions) {
  SKIP_WITHOUT_DEVICE();
  Worst worst;
  for (spt_index depth : {1u, 4u}) {
    check_shape<TypeParam>({40, 35, 18, 21}, depth, 4, 1200, 10 + depth, worst);
    if (this->HasFatalFailure()) return;
  }
  worst.record();
}

// Many root groups and rows with both dense and sparse work (the atomic
// adds), at the benchmark's rank.
TYPED_TEST(CudaHlsProducts, ManyTilesMixedRows) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  const spt_dtype dt = std::is_same_v<T, float> ? SPT_FLOAT32 : SPT_FLOAT64;
  const std::vector<spt_index> dims = {300, 200, 150};
  const auto coords = block_coords(dims, 60, 0.05, 1, 40000, 21);
  const spt_coo_s x = make_coo(dt, dims, coords, true, 22);
  const spt_coo_s x64 = as_float64(x);
  spt_hls_s h = hls::from_coo(x, params(0, 0, 0), 2);
  ASSERT_GT(h.dense_tiles(), 10u);
  const spt_context_s ctx = cuda_context();
  std::vector<DenseMatrix<T>> f;
  for (uint32_t m = 0; m < 3; ++m) f.push_back(make_matrix<T>(dims[m], 16, true, 30 + m));
  std::vector<DenseMatrix<double>> f64;
  for (const auto& a : f) f64.push_back(widen(a));
  const auto r = refs_of(f);
  const auto r64 = refs_of(f64);
  DenseMatrix<double> want(dims[0], 16);
  ref::mttkrp(Exec{1}, x64, r64.data(), 0, want.ref());
  Worst worst;
  for (spt_hls_precision p : kPrecisions) {
    h.precision = p;
    DenseMatrix<T> got(dims[0], 16);
    ASSERT_TRUE(dispatch::DeviceKernels::mttkrp_hls(ctx, h, r.data(), got.ref()));
    const Errors e = compare(want, got);
    worst.add(cat(precision_name(p), "_", dtype_name(dt)), e);
    check_errors(p, e, dt == SPT_FLOAT32, cat("many tiles ", precision_name(p)));
  }
  worst.record();
}

// ---------------------------------------------------------------------------
// The C API: cache, fallback, options, calibration

struct Factors {
  std::vector<DenseMatrix<double>> values;
  std::vector<spt_matrix*> handles;
  Factors(spt_context* ctx, const std::vector<spt_index>& dims, spt_nnz rank, uint64_t seed) {
    for (size_t m = 0; m < dims.size(); ++m) values.push_back(make_matrix<double>(dims[m], rank, false, seed + m));
    for (auto& f : values) {
      spt_matrix* h = nullptr;
      EXPECT_EQ(spt_matrix_wrap(ctx, SPT_FLOAT64, f.rows, f.cols, SPT_ROW_MAJOR, f.values.data(), f.cols, &h), SPT_OK);
      handles.push_back(h);
    }
  }
  ~Factors() {
    for (spt_matrix* h : handles) spt_matrix_free(h);
  }
};

spt_hls_summary info_of(const spt_hls* h) {
  spt_hls_summary s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  EXPECT_EQ(spt_hls_info(nullptr, h, &s), SPT_OK);
  return s;
}

// Through the C API (EXACT precision, float64): the device copy is cached
// on the handle, reused, gone with the handle; a struct copy (same cache
// pointer, other arrays) gets its own copy.
TEST(CudaHlsApi, CacheOnTheHandleAndInvalidation) {
  SKIP_WITHOUT_DEVICE();
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  ASSERT_EQ(spt_context_set_backend(ctx, SPT_BACKEND_CUDA), SPT_OK) << spt_last_error(ctx);
  const std::vector<spt_index> dims = {60, 40, 35};
  const spt_nnz rank = 24;
  Factors factors(ctx, dims, rank, 77);
  auto run_and_check = [&](const spt_hls* h, const spt_coo_s& x, const std::string& what) {
    spt_matrix* out = nullptr;
    ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, dims[1], rank, SPT_COL_MAJOR, &out), SPT_OK);
    ASSERT_EQ(spt_mttkrp_hls(ctx, h, factors.handles.data(), spt::test::served_mode(h), out), SPT_OK) << spt_last_error(ctx);
    DenseMatrix<double> want(dims[1], rank);
    const auto r = refs_of(factors.values);
    ref::mttkrp(Exec{1}, x, r.data(), 1, want.ref());
    for (spt_nnz i = 0; i < want.rows; ++i)
      for (spt_nnz j = 0; j < want.cols; ++j)
        ASSERT_TRUE(close(want(i, j), out->at<double>(i, j), 1e-12)) << what << " (" << i << "," << j << ")";
    spt_matrix_free(out);
  };
  for (uint64_t seed : {1u, 2u}) {
    const spt_coo_s x = make_coo(SPT_FLOAT64, dims, block_coords(dims, 3, 0.1, 1, 500, seed), false, seed);
    spt_hls_options o;
    spt_hls_options_init(&o);
    o.root_mode = 1;
    o.dense_threshold = 40;
    o.precision = SPT_HLS_PRECISION_EXACT;
    spt_hls* h = nullptr;
    ASSERT_EQ(spt_hls_from_coo(ctx, &x, &o, &h), SPT_OK) << spt_last_error(ctx);
    EXPECT_TRUE(h->device_cache == nullptr);
    run_and_check(h, x, cat("seed ", seed, " first call"));
    ASSERT_TRUE(h->device_cache != nullptr) << "the device copy should be cached on the handle";
    std::shared_ptr<void> cached = h->device_cache;
    run_and_check(h, x, cat("seed ", seed, " second call"));
    EXPECT_EQ(h->device_cache, cached) << "the cached copy should be reused";
    if (seed == 2) {
      spt_hls_s copy = *h;
      EXPECT_EQ(copy.device_cache, cached);
      run_and_check(&copy, x, "struct copy");
      EXPECT_NE(copy.device_cache, cached) << "a copy with other arrays must get its own device copy";
    }
    const std::weak_ptr<void> watch = cached;
    cached.reset();
    spt_hls_free(h);
    EXPECT_TRUE(watch.expired()) << "the device copy must go with the handle";
  }
  spt_context_free(ctx);
}

// SPT_CUDA_MEMORY_LIMIT makes the upload not fit: AUTO runs the CPU kernel
// (exact) with a note, CUDA forced is a DEVICE error naming the memory.
TEST(CudaHlsApi, OutOfMemoryFallsBackUnderAutoAndFailsUnderCuda) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<spt_index> dims = {40, 30, 20};
  const spt_coo_s x = make_coo(SPT_FLOAT64, dims, block_coords(dims, 2, 0.1, 1, 300, 5), false, 5);
  spt_hls_s h = hls::from_coo(x, params(0, 30, 0), 1);
  h.precision = SPT_HLS_PRECISION_FP16;  // the CPU fallback is exact whatever the precision
  const spt_nnz rank = 8;
  std::vector<DenseMatrix<double>> f;
  for (uint32_t m = 0; m < 3; ++m) f.push_back(make_matrix<double>(dims[m], rank, false, 4 + m));
  const auto refs = refs_of(f);
  ScopedEnv limit("SPT_CUDA_MEMORY_LIMIT", "1000");
  std::vector<std::string> log_lines;
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_AUTO;
  ctx.verbosity = 1;
  ctx.log = record_log_line;
  ctx.log_data = &log_lines;
  DenseMatrix<double> out(dims[0], rank);
  SPT_DISPATCH(ctx, mttkrp_hls, h, refs.data(), out.ref());
  DenseMatrix<double> want(dims[0], rank);
  ref::mttkrp(Exec{1}, x, refs.data(), 0, want.ref());
  for (spt_nnz i = 0; i < want.rows; ++i)
    for (spt_nnz j = 0; j < want.cols; ++j) ASSERT_TRUE(close(want(i, j), out(i, j), 1e-12));
  EXPECT_TRUE(logged(log_lines, "note: HLS MTTKRP runs on the CPU: the CUDA device is out of memory"))
      << "AUTO should say why it fell back";
  EXPECT_TRUE(h.device_cache == nullptr);
  ctx.backend = SPT_BACKEND_CUDA;
  DenseMatrix<double> y(dims[0], rank * rank);
  try {
    SPT_DISPATCH(ctx, ttmc_hls, h, refs.data(), y.ref());
    FAIL() << "HLS TTMc with CUDA forced should fail when the tensor does not fit";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_DEVICE) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
}

// CPU-only machines (CI): CUDA forced is a DEVICE error; AUTO runs the
// (exact) CPU kernels and leaves no device cache; the threshold falls back
// to the default with a note under CUDA and quietly under AUTO.
TEST(CudaHlsApi, WithoutDeviceForcedFailsAndAutoRunsOnCpu) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present; this checks the CPU-only behaviour";
  const std::vector<spt_index> dims = {20, 15, 18, 10};
  const spt_coo_s x = make_coo(SPT_FLOAT64, dims, block_coords(dims, 2, 0.2, 4, 200, 6), false, 6);
  spt_hls_s h = hls::from_coo(x, params(2, 10, 4), 1);
  h.precision = SPT_HLS_PRECISION_BF16;
  std::vector<DenseMatrix<double>> f;
  for (uint32_t m = 0; m < 4; ++m) f.push_back(make_matrix<double>(dims[m], 4, false, 2 + m));
  const auto refs = refs_of(f);
  DenseMatrix<double> out(dims[2], 4);
  std::vector<std::string> log_lines;
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CUDA;
  ctx.verbosity = 1;
  ctx.log = record_log_line;
  ctx.log_data = &log_lines;
  try {
    SPT_DISPATCH(ctx, mttkrp_hls, h, refs.data(), out.ref());
    FAIL() << "HLS MTTKRP with CUDA forced and no device should fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_DEVICE) << e.what();
  }
  const dispatch::HlsThreshold t = dispatch::hls_dense_threshold(ctx, 4, 4, SPT_HLS_PRECISION_FP16);
  EXPECT_EQ(t.threshold, hls::kDefaultThreshold * 4);
  EXPECT_FALSE(t.calibrated);
  EXPECT_TRUE(logged(log_lines, "the HLS dense threshold could not be measured on the GPU"))
      << "a forced CUDA backend without a device should say why the threshold is the default";
  ctx.backend = SPT_BACKEND_AUTO;
  log_lines.clear();
  SPT_DISPATCH(ctx, mttkrp_hls, h, refs.data(), out.ref());
  DenseMatrix<double> want(dims[2], 4);
  ref::mttkrp(Exec{1}, x, refs.data(), 2, want.ref());
  for (spt_nnz i = 0; i < want.rows; ++i)
    for (spt_nnz j = 0; j < want.cols; ++j) ASSERT_TRUE(close(want(i, j), out(i, j), 1e-12));
  EXPECT_TRUE(h.device_cache == nullptr);
  const dispatch::HlsThreshold a = dispatch::hls_dense_threshold(ctx, 3, 1, SPT_HLS_PRECISION_FP16);
  EXPECT_EQ(a.threshold, hls::kDefaultThreshold);
  EXPECT_FALSE(a.calibrated);
  EXPECT_TRUE(log_lines.empty()) << "AUTO on the CPU needs no note: " << (log_lines.empty() ? "" : log_lines[0]);
  // Through the C API: the default threshold, not measured.
  spt_hls* hh = nullptr;
  ASSERT_EQ(spt_hls_from_coo(nullptr, &x, nullptr, &hh), SPT_OK) << spt_thread_last_error();
  const spt_hls_summary s = info_of(hh);
  EXPECT_EQ(s.dense_threshold, hls::kDefaultThreshold * hls::kDefaultSlabDepth);
  EXPECT_EQ(s.threshold_calibrated, 0u);
  spt_hls_free(hh);
}

// The precision option: stored on the handle, AUTO resolved, reported by
// spt_hls_info, validated; an older caller's struct (ending before
// `precision`) means AUTO. Any machine.
TEST(CudaHlsApi, PrecisionOption) {
  const std::vector<spt_index> dims = {30, 20, 25};
  const spt_coo_s x = make_coo(SPT_FLOAT32, dims, block_coords(dims, 2, 0.1, 1, 100, 8), false, 8);
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  ASSERT_EQ(spt_context_set_backend(ctx, SPT_BACKEND_CPU), SPT_OK);
  spt_hls_options o;
  std::memset(&o, 0x7f, sizeof o);
  ASSERT_EQ(spt_hls_options_init(&o), SPT_OK);
  EXPECT_EQ(o.precision, uint64_t(SPT_HLS_PRECISION_AUTO));
  for (spt_hls_precision p : {SPT_HLS_PRECISION_AUTO, SPT_HLS_PRECISION_FP16, SPT_HLS_PRECISION_BF16,
                              SPT_HLS_PRECISION_TF32, SPT_HLS_PRECISION_EXACT}) {
    o.precision = p;
    spt_hls* h = nullptr;
    ASSERT_EQ(spt_hls_from_coo(ctx, &x, &o, &h), SPT_OK) << spt_last_error(ctx);
    const spt_hls_summary s = info_of(h);
    EXPECT_EQ(s.precision, p == SPT_HLS_PRECISION_AUTO ? hls::kAutoPrecision : p) << precision_name(p);
    EXPECT_EQ(h->precision, s.precision);
    EXPECT_EQ(s.threshold_calibrated, 0u) << "a CPU context measures nothing";
    EXPECT_EQ(s.dense_threshold, hls::kDefaultThreshold);
    spt_hls_free(h);
  }
  for (int bad : {-1, 5, 1000}) {
    o.precision = static_cast<uint64_t>(static_cast<int64_t>(bad));
    spt_hls* h = nullptr;
    EXPECT_EQ(spt_hls_from_coo(ctx, &x, &o, &h), SPT_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_EQ(h, nullptr);
    EXPECT_NE(std::string(spt_last_error(ctx)).find("precision"), std::string::npos) << spt_last_error(ctx);
  }
  // A caller whose struct ends before `precision`: whatever lies beyond
  // its struct_size is not read (AUTO).
  o.precision = 99;
  o.struct_size = offsetof(spt_hls_options, precision);
  spt_hls* h = nullptr;
  ASSERT_EQ(spt_hls_from_coo(ctx, &x, &o, &h), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(info_of(h).precision, hls::kAutoPrecision);
  spt_hls_free(h);
  // A summary struct shorter than this release's (ending before
  // `precision`) is refused and not written.
  std::vector<unsigned char> buffer(sizeof(spt_hls_summary) + 16, 0xCD);
  auto* s = reinterpret_cast<spt_hls_summary*>(buffer.data());
  s->struct_size = offsetof(spt_hls_summary, precision);
  ASSERT_EQ(spt_hls_from_coo(ctx, &x, nullptr, &h), SPT_OK);
  EXPECT_EQ(spt_hls_info(nullptr, h, s), SPT_ERR_INVALID_ARGUMENT);
  for (size_t b = sizeof(size_t); b < buffer.size(); ++b) ASSERT_EQ(buffer[b], 0xCD) << b;
  spt_hls_free(h);
  spt_context_free(ctx);
}

// The dense threshold measured on the device: in range, measured once per
// (device, order, slab depth, precision) and cached, reported by
// spt_hls_info; an explicit threshold wins and measures nothing.
TEST(CudaHlsCalibration, ThresholdInRangeCachedAndExplicitWins) {
  SKIP_WITHOUT_DEVICE();
  std::vector<std::string> log_lines;
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CUDA;
  ctx.verbosity = 2;
  ctx.log = record_log_line;
  ctx.log_data = &log_lines;
  struct Case {
    uint32_t order, depth;
    spt_hls_precision precision;
  };
  for (const Case& c : {Case{3, 1, SPT_HLS_PRECISION_FP16}, Case{4, 4, SPT_HLS_PRECISION_FP16},
                        Case{3, 1, SPT_HLS_PRECISION_EXACT}}) {
    const dispatch::HlsThreshold first = dispatch::hls_dense_threshold(ctx, c.order, c.depth, c.precision);
    const uint64_t runs = dispatch::hls_calibration_runs();
    ASSERT_TRUE(first.calibrated) << "order " << c.order << ": " << (log_lines.empty() ? "" : log_lines.back());
    EXPECT_GE(first.threshold, 1u);
    EXPECT_LE(first.threshold, 4096u * c.depth);
    EXPECT_GT(first.dense_seconds, 0.0);
    EXPECT_GT(first.sparse_seconds, 0.0);
    const double ratio = std::ceil(first.dense_seconds / first.sparse_seconds);
    EXPECT_EQ(first.threshold, static_cast<uint32_t>(std::clamp(ratio, 1.0, 4096.0 * c.depth)));
    const dispatch::HlsThreshold again = dispatch::hls_dense_threshold(ctx, c.order, c.depth, c.precision);
    EXPECT_EQ(dispatch::hls_calibration_runs(), runs) << "the measurement should be cached";
    EXPECT_EQ(again.threshold, first.threshold);
    EXPECT_EQ(again.dense_seconds, first.dense_seconds);
    std::printf("calibrated HLS threshold: order %u depth %u %s: %u cells (%.3e s per dense tile, %.3e s per sparse "
                "nonzero)\n",
                c.order, c.depth, precision_name(c.precision), first.threshold, first.dense_seconds,
                first.sparse_seconds);
    ::testing::Test::RecordProperty(cat("threshold_order", c.order, "_depth", c.depth, "_", precision_name(c.precision)),
                                    std::to_string(first.threshold));
  }
  // Through the C API.
  const std::vector<spt_index> dims = {70, 50, 45};
  const spt_coo_s x = make_coo(SPT_FLOAT32, dims, block_coords(dims, 3, 0.1, 1, 300, 9), false, 9);
  spt_context* c = nullptr;
  ASSERT_EQ(spt_context_create(&c), SPT_OK);
  ASSERT_EQ(spt_context_set_backend(c, SPT_BACKEND_CUDA), SPT_OK);
  spt_hls_options o;
  spt_hls_options_init(&o);
  o.precision = SPT_HLS_PRECISION_FP16;
  spt_hls* h = nullptr;
  ASSERT_EQ(spt_hls_from_coo(c, &x, &o, &h), SPT_OK) << spt_last_error(c);
  spt_hls_summary s = info_of(h);
  EXPECT_EQ(s.threshold_calibrated, 1u);
  EXPECT_EQ(s.dense_threshold, dispatch::hls_dense_threshold(ctx, 3, 1, SPT_HLS_PRECISION_FP16).threshold);
  EXPECT_EQ(h->dense_threshold, s.dense_threshold);
  spt_hls_free(h);
  const uint64_t runs = dispatch::hls_calibration_runs();
  o.dense_threshold = 5;
  o.precision = SPT_HLS_PRECISION_BF16;  // not measured yet: an explicit threshold must not measure it
  ASSERT_EQ(spt_hls_from_coo(c, &x, &o, &h), SPT_OK) << spt_last_error(c);
  s = info_of(h);
  EXPECT_EQ(s.dense_threshold, 5u);
  EXPECT_EQ(s.threshold_calibrated, 0u);
  EXPECT_EQ(dispatch::hls_calibration_runs(), runs) << "an explicit threshold must not run the measurement";
  spt_hls_free(h);
  // A CPU context does not measure either.
  ASSERT_EQ(spt_context_set_backend(c, SPT_BACKEND_CPU), SPT_OK);
  o.dense_threshold = 0;
  ASSERT_EQ(spt_hls_from_coo(c, &x, &o, &h), SPT_OK) << spt_last_error(c);
  s = info_of(h);
  EXPECT_EQ(s.dense_threshold, hls::kDefaultThreshold);
  EXPECT_EQ(s.threshold_calibrated, 0u);
  EXPECT_EQ(dispatch::hls_calibration_runs(), runs);
  spt_hls_free(h);
  spt_context_free(c);
}

}  // namespace
}  // namespace spt::test
