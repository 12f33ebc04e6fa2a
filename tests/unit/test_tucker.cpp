// Tucker: the one-shot TTM-chain kernel (reference and OpenMP) against a
// dense brute-force computation, and Tucker-HOOI on planted exact
// low-multilinear-rank tensors (both SVD routes, both HOSVD routes, every
// init), fit monotonicity, the C API's accessors and its argument errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "algo/tucker_hooi.hpp"
#include "common/summaries.hpp"
#include "common/test_util.hpp"
#include "core/sort.hpp"
#include "kernels/kernels.hpp"
#include "kernels/ttmc.hpp"
#include "sptensor/tucker.h"

namespace spt::test {
namespace {

namespace ref = spt::kernels::reference;
namespace cpu = spt::kernels::cpu;
using kernels::Exec;

const int kThreadCounts[] = {1, 2, 3};

template <typename T>
std::vector<ConstMatRef<T>> crefs(const std::vector<DenseMatrix<T>>& f) {
  std::vector<ConstMatRef<T>> r;
  for (const auto& m : f) r.push_back(m.cref());
  return r;
}

uint64_t product(const std::vector<spt_index>& v) {
  uint64_t p = 1;
  for (auto x : v) p *= x;
  return p;
}

// Dense tensor of x (duplicates summed), first index fastest.
template <typename T>
std::vector<double> densify(const spt_coo_s& x) {
  std::vector<double> d(product(x.dims), 0.0);
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    uint64_t lin = 0, stride = 1;
    for (uint32_t m = 0; m < x.order(); ++m) {
      lin += stride * x.ind[m][k];
      stride *= x.dims[m];
    }
    d[lin] += static_cast<double>(x.values<T>()[k]);
  }
  return d;
}

// Y(i, c) = sum over every dense index with i_mode = i of
// X(idx) * prod_{m != mode} U_m(idx_m, r_m), with (r_m) decoded from c,
// lowest other mode fastest. Independent of both kernels' Kronecker logic.
template <typename T>
DenseMatrix<double> brute_force_ttmc(const spt_coo_s& x, const std::vector<DenseMatrix<T>>& u, uint32_t mode) {
  const uint32_t order = x.order();
  std::vector<double> dense = densify<T>(x);
  uint64_t p = 1;
  for (uint32_t m = 0; m < order; ++m)
    if (m != mode) p *= u[m].cols;
  DenseMatrix<double> y(x.dims[mode], p);
  std::vector<spt_index> idx(order), r(order);
  for (uint64_t lin = 0; lin < dense.size(); ++lin) {
    if (dense[lin] == 0.0) continue;
    uint64_t rest = lin;
    for (uint32_t m = 0; m < order; ++m) {
      idx[m] = static_cast<spt_index>(rest % x.dims[m]);
      rest /= x.dims[m];
    }
    for (uint64_t c = 0; c < p; ++c) {
      uint64_t cr = c;
      double prod = dense[lin];
      for (uint32_t m = 0; m < order; ++m) {
        if (m == mode) continue;
        r[m] = static_cast<spt_index>(cr % u[m].cols);
        cr /= u[m].cols;
        prod *= static_cast<double>(u[m](idx[m], r[m]));
      }
      y(idx[mode], c) += prod;
    }
  }
  return y;
}

template <typename T>
void expect_close_to(const DenseMatrix<double>& want, const DenseMatrix<T>& got, double tol, const std::string& what) {
  ASSERT_EQ(want.rows, got.rows) << what;
  ASSERT_EQ(want.cols, got.cols) << what;
  for (spt_nnz i = 0; i < want.rows; ++i)
    for (spt_nnz j = 0; j < want.cols; ++j)
      ASSERT_TRUE(close(want(i, j), static_cast<double>(got(i, j)), tol))
          << what << " at (" << i << "," << j << "): want " << want(i, j) << " got " << got(i, j);
}

struct SmallCase {
  std::vector<spt_index> dims;
  std::vector<spt_index> ranks;
  spt_nnz nnz;
  bool duplicates;
};

std::vector<SmallCase> small_cases() {
  return {
      {{12, 7}, {3, 2}, 40, false},
      {{1, 9}, {1, 4}, 6, true},
      {{9, 2, 11}, {2, 1, 3}, 100, true},
      {{30, 3, 4}, {4, 2, 3}, 150, false},
      {{5, 6, 3, 7}, {2, 3, 2, 1}, 200, false},
      {{3, 4, 5, 2, 6}, {2, 1, 3, 2, 2}, 300, true},
  };
}

template <typename T>
void check_ttmc_vs_brute_force() {
  uint64_t seed = 100;
  for (const SmallCase& c : small_cases()) {
    RandomTensorSpec spec;
    spec.dims = c.dims;
    spec.nnz = c.nnz;
    spec.seed = ++seed;
    spec.duplicates = c.duplicates;
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    std::vector<DenseMatrix<T>> u;
    for (size_t m = 0; m < c.dims.size(); ++m) u.push_back(random_matrix<T>(c.dims[m], c.ranks[m], seed * 7 + m));
    const std::vector<ConstMatRef<T>> f = crefs(u);
    for (uint32_t mode = 0; mode < x.order(); ++mode) {
      const DenseMatrix<double> want = brute_force_ttmc<T>(x, u, mode);
      const std::string what = std::string(dtype_name(dtype_of<T>())) + " order " + std::to_string(x.order()) +
                               " mode " + std::to_string(mode);
      const double tol = sizeof(T) == 4 ? 1e-4 : 1e-12;
      DenseMatrix<T> got(want.rows, want.cols);
      std::fill(got.values.begin(), got.values.end(), T(99));  // overwritten, not accumulated
      ref::ttmc(Exec{1}, x, f.data(), mode, got.ref());
      expect_close_to(want, got, tol, "reference " + what);
      // Pre-sorted in the kernel's order: the CPU kernel must then skip its sort.
      spt_coo_s sorted = sorting::permuted_copy(Exec{1}, x,
                                      sorting::sort_permutation(Exec{1}, x, kernels::ttmc_sort_order(x.order(), mode)));
      sorted.sorted_by = kernels::ttmc_sort_order(x.order(), mode);
      for (int threads : kThreadCounts) {
        std::fill(got.values.begin(), got.values.end(), T(99));
        cpu::ttmc(Exec{threads}, x, f.data(), mode, got.ref());
        expect_close_to(want, got, tol, "cpu " + what + " threads " + std::to_string(threads));
        std::fill(got.values.begin(), got.values.end(), T(99));
        cpu::ttmc(Exec{threads}, sorted, f.data(), mode, got.ref());
        expect_close_to(want, got, tol, "cpu presorted " + what + " threads " + std::to_string(threads));
      }
    }
  }
}

TEST(Ttmc, MatchesDenseBruteForceFloat64) { check_ttmc_vs_brute_force<double>(); }
TEST(Ttmc, MatchesDenseBruteForceFloat32) { check_ttmc_vs_brute_force<float>(); }

// The OpenMP kernel against the reference on the standard awkward shapes
// (orders 2..6, skewed, empty and single-nonzero slices, duplicates), with
// ranks that differ per mode.
template <typename T>
void check_ttmc_cpu_vs_reference() {
  for (const RandomTensorSpec& spec : standard_specs()) {
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    std::vector<DenseMatrix<T>> u;
    for (size_t m = 0; m < spec.dims.size(); ++m)
      u.push_back(random_matrix<T>(spec.dims[m], 1 + (m % 3), spec.seed + 5 * m));
    const std::vector<ConstMatRef<T>> f = crefs(u);
    for (uint32_t mode = 0; mode < x.order(); ++mode) {
      const uint64_t p = kernels::ttmc_columns<T>(x.order(), f.data(), mode);
      DenseMatrix<T> want(spec.dims[mode], p), got(spec.dims[mode], p);
      ref::ttmc(Exec{1}, x, f.data(), mode, want.ref());
      DenseMatrix<double> want64(want.rows, want.cols);
      std::copy(want.values.begin(), want.values.end(), want64.values.begin());
      for (int threads : kThreadCounts) {
        cpu::ttmc(Exec{threads}, x, f.data(), mode, got.ref());
        expect_close_to(want64, got, tolerance<T>() * 10,
                        "order " + std::to_string(x.order()) + " mode " + std::to_string(mode));
      }
    }
  }
}

TEST(Ttmc, CpuMatchesReferenceFloat64) { check_ttmc_cpu_vs_reference<double>(); }
TEST(Ttmc, CpuMatchesReferenceFloat32) { check_ttmc_cpu_vs_reference<float>(); }

TEST(Ttmc, RejectsWrongShapes) {
  RandomTensorSpec spec;
  spec.dims = {5, 6, 7};
  spec.nnz = 20;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  std::vector<DenseMatrix<double>> u{random_matrix<double>(5, 2, 1), random_matrix<double>(6, 2, 2),
                                     random_matrix<double>(7, 3, 3)};
  const auto f = crefs(u);
  DenseMatrix<double> wrong(5, 5);  // expects 5 x 6
  EXPECT_THROW(cpu::ttmc(Exec{1}, x, f.data(), 0, wrong.ref()), Error);
  EXPECT_THROW(ref::ttmc(Exec{1}, x, f.data(), 0, wrong.ref()), Error);
  DenseMatrix<double> ok(5, 6);
  EXPECT_THROW(cpu::ttmc(Exec{1}, x, f.data(), 3, ok.ref()), Error);
}

// ---------------------------------------------------------------------------
// HOOI on planted tensors.

// Orthonormal columns by modified Gram-Schmidt on random values.
DenseMatrix<double> random_orthonormal(spt_nnz rows, spt_nnz cols, uint64_t seed) {
  DenseMatrix<double> q = random_matrix<double>(rows, cols, seed);
  for (spt_nnz j = 0; j < cols; ++j) {
    for (spt_nnz k = 0; k < j; ++k) {
      double d = 0;
      for (spt_nnz i = 0; i < rows; ++i) d += q(i, j) * q(i, k);
      for (spt_nnz i = 0; i < rows; ++i) q(i, j) -= d * q(i, k);
    }
    double n = 0;
    for (spt_nnz i = 0; i < rows; ++i) n += q(i, j) * q(i, j);
    n = std::sqrt(n);
    for (spt_nnz i = 0; i < rows; ++i) q(i, j) /= n;
  }
  return q;
}

// Dense X = G x_1 U_1 ... x_N U_N (first index fastest) from a core (first
// index fastest) and row-major factors.
std::vector<double> tucker_full(const std::vector<spt_index>& dims, const std::vector<spt_index>& ranks,
                                const std::vector<double>& core, const std::vector<DenseMatrix<double>>& u) {
  const uint32_t order = static_cast<uint32_t>(dims.size());
  std::vector<double> full(product(dims), 0.0);
  std::vector<spt_index> idx(order), r(order);
  for (uint64_t lin = 0; lin < full.size(); ++lin) {
    uint64_t rest = lin;
    for (uint32_t m = 0; m < order; ++m) {
      idx[m] = static_cast<spt_index>(rest % dims[m]);
      rest /= dims[m];
    }
    double sum = 0.0;
    for (uint64_t c = 0; c < core.size(); ++c) {
      uint64_t cr = c;
      double prod = core[c];
      for (uint32_t m = 0; m < order; ++m) {
        r[m] = static_cast<spt_index>(cr % ranks[m]);
        cr /= ranks[m];
        prod *= u[m](idx[m], r[m]);
      }
      sum += prod;
    }
    full[lin] = sum;
  }
  return full;
}

struct Planted {
  spt_coo_s x;
  std::vector<DenseMatrix<double>> factors;
  std::vector<double> full;
};

// An exact Tucker tensor with the given multilinear ranks; every entry of
// the full product that is not exactly zero becomes a COO nonzero.
Planted planted(spt_dtype dtype, const std::vector<spt_index>& dims, const std::vector<spt_index>& ranks,
                uint64_t seed) {
  Planted p;
  std::vector<double> core(product(ranks));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (double& v : core) v = unit(rng);
  for (size_t m = 0; m < dims.size(); ++m) p.factors.push_back(random_orthonormal(dims[m], ranks[m], seed + 3 + m));
  p.full = tucker_full(dims, ranks, core, p.factors);
  spt_nnz nnz = 0;
  for (double v : p.full) nnz += v != 0.0;
  p.x.init_owned(dtype, dims, nnz);
  spt_nnz k = 0;
  for (uint64_t lin = 0; lin < p.full.size(); ++lin) {
    if (p.full[lin] == 0.0) continue;
    uint64_t rest = lin;
    for (uint32_t m = 0; m < dims.size(); ++m) {
      p.x.mutable_ind(m)[k] = static_cast<spt_index>(rest % dims[m]);
      rest /= dims[m];
    }
    with_dtype(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      p.x.mutable_values<T>()[k] = static_cast<T>(p.full[lin]);
    });
    ++k;
  }
  return p;
}

spt_tucker_options options(const std::vector<spt_index>& ranks) {
  spt_tucker_options o;
  EXPECT_EQ(spt_tucker_options_init(&o), SPT_OK);
  o.ranks = ranks.data();
  o.ranks_count = static_cast<uint32_t>(ranks.size());
  return o;
}

// max principal-angle sine between span(a) and span(b) (orthonormal,
// same shape): sqrt(1 - sigma_min(a^T b)^2) bounded by ||b - a a^T b||_F.
template <typename T>
double subspace_distance(const DenseMatrix<double>& a, const spt_matrix_s& b) {
  double worst = 0.0;
  for (spt_nnz j = 0; j < b.cols; ++j) {
    std::vector<double> proj(a.rows, 0.0);
    for (spt_nnz k = 0; k < a.cols; ++k) {
      double d = 0;
      for (spt_nnz i = 0; i < a.rows; ++i) d += a(i, k) * b.at<T>(i, j);
      for (spt_nnz i = 0; i < a.rows; ++i) proj[i] += d * a(i, k);
    }
    double res = 0;
    for (spt_nnz i = 0; i < a.rows; ++i) res += std::pow(b.at<T>(i, j) - proj[i], 2);
    worst = std::max(worst, std::sqrt(res));
  }
  return worst;
}

// Reconstruct the ttensor densely (core first index fastest) and return the
// relative error against `full`.
template <typename T>
double reconstruction_error(const spt_ttensor_s& t, const std::vector<double>& full) {
  std::vector<DenseMatrix<double>> u;
  for (const auto& f : t.factors) {
    DenseMatrix<double> m(f->rows, f->cols);
    for (spt_nnz i = 0; i < f->rows; ++i)
      for (spt_nnz j = 0; j < f->cols; ++j) m(i, j) = f->at<T>(i, j);
    u.push_back(std::move(m));
  }
  std::vector<double> core(t.core.get<T>().begin(), t.core.get<T>().end());
  const std::vector<double> rec = tucker_full(t.dims, t.core_dims, core, u);
  double num = 0, den = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    num += std::pow(rec[i] - full[i], 2);
    den += full[i] * full[i];
  }
  return std::sqrt(num / den);
}

struct PlantedCase {
  std::vector<spt_index> dims, ranks;
};

std::vector<PlantedCase> planted_cases() {
  return {
      {{14, 9, 11}, {3, 2, 4}},    // mostly I_n > prod R: gesdd
      {{6, 7, 5}, {4, 3, 5}},      // I_n <= prod R: Gram eigenvectors
      {{8, 5, 6, 4}, {2, 3, 2, 3}},
      {{20, 3}, {2, 3}},
  };
}

TEST(TuckerHooi, RecoversPlantedTensorEveryInitAndRoute) {
  uint64_t seed = 40;
  for (const PlantedCase& c : planted_cases()) {
    const Planted p = planted(SPT_FLOAT64, c.dims, c.ranks, ++seed);
    for (spt_tucker_init init : {SPT_TUCKER_INIT_HOSVD, SPT_TUCKER_INIT_RANDOM}) {
      for (TuckerSvdPath svd : {TuckerSvdPath::automatic, TuckerSvdPath::gesdd, TuckerSvdPath::gram_eig,
                                TuckerSvdPath::right_gram}) {
        for (TuckerHosvdPath hosvd : {TuckerHosvdPath::gram, TuckerHosvdPath::randomized}) {
          if (init != SPT_TUCKER_INIT_HOSVD && hosvd != TuckerHosvdPath::gram) continue;
          spt_tucker_options o = options(c.ranks);
          o.init = init;
          o.seed = 7;
          o.tol = 1e-6;  // the fit of an exact model is 1 only to about sqrt(eps)
          o.max_iters = 30;
          spt_ttensor_s t;
          TuckerInternalOptions internal;
          internal.svd = svd;
          internal.hosvd = hosvd;
          spt_context_s ctx;
          tucker_hooi(ctx, p.x, o, t, internal);
          const std::string what = "order " + std::to_string(c.dims.size()) + " init " + std::to_string(init) +
                                   " svd " + std::to_string(static_cast<int>(svd)) + " hosvd " +
                                   std::to_string(static_cast<int>(hosvd));
          EXPECT_GT(t.fit, 0.9999) << what;
          EXPECT_LT(reconstruction_error<double>(t, p.full), 1e-6) << what;
          for (size_t m = 0; m < c.dims.size(); ++m)
            EXPECT_LT(subspace_distance<double>(p.factors[m], *t.factors[m]), 1e-6) << what << " mode " << m;
          if (init == SPT_TUCKER_INIT_HOSVD) EXPECT_LE(t.iterations, 3) << what;
        }
      }
    }
  }
}

// Asking for more components than Y_(n) has (true rank 3, R = 4 in the tall
// mode 0) makes s_4 ~ 0: the right-Gram route must hand over to gesdd and
// still return orthonormal factors and the exact fit.
TEST(TuckerHooi, RightGramFallsBackToGesddOnTinySingularValues) {
  const Planted p = planted(SPT_FLOAT64, {14, 9, 11}, {3, 2, 4}, 21);
  const std::vector<spt_index> ranks{4, 2, 4};
  for (TuckerSvdPath svd : {TuckerSvdPath::automatic, TuckerSvdPath::right_gram}) {
    spt_tucker_options o = options(ranks);
    o.max_iters = 5;
    spt_ttensor_s t;
    TuckerInternalOptions internal;
    internal.svd = svd;
    spt_context_s ctx;
    tucker_hooi(ctx, p.x, o, t, internal);
    EXPECT_GT(t.fit, 0.9999);
    const spt_matrix_s& u0 = *t.factors[0];
    for (spt_nnz a = 0; a < u0.cols; ++a)
      for (spt_nnz b = 0; b < u0.cols; ++b) {
        double d = 0;
        for (spt_nnz i = 0; i < u0.rows; ++i) d += u0.at<double>(i, a) * u0.at<double>(i, b);
        EXPECT_NEAR(d, a == b ? 1.0 : 0.0, 1e-8) << "columns " << a << ", " << b;
      }
  }
}

TEST(TuckerHooi, Float32RecoversPlantedTensor) {
  const Planted p = planted(SPT_FLOAT32, {10, 8, 9}, {2, 3, 2}, 5);
  for (spt_tucker_init init : {SPT_TUCKER_INIT_HOSVD, SPT_TUCKER_INIT_RANDOM}) {
    const std::vector<spt_index> ranks{2, 3, 2};
    spt_tucker_options o = options(ranks);
    o.init = init;
    spt_ttensor* t = nullptr;
    ASSERT_GE(spt_tucker_hooi(nullptr, &p.x, &o, &t), 0) << spt_thread_last_error();
    const spt_ttensor_summary info = spt_test::info_of(t);
    EXPECT_EQ(info.dtype, SPT_FLOAT32);
    EXPECT_GT(info.fit, 0.999);
    EXPECT_LT(reconstruction_error<float>(*t, p.full), 1e-3);
    spt_ttensor_free(t);
  }
}

// HOOI never decreases the fit (each step maximises ||G|| over one factor).
TEST(TuckerHooi, FitIsMonotone) {
  for (spt_dtype dtype : {SPT_FLOAT64, SPT_FLOAT32}) {
    RandomTensorSpec spec;
    spec.dims = {30, 20, 25, 6};
    spec.nnz = 1500;
    spec.seed = 3;
    spec.duplicates = true;
    const spt_coo_s x = random_coo(dtype, spec);
    for (spt_tucker_init init : {SPT_TUCKER_INIT_RANDOM, SPT_TUCKER_INIT_HOSVD}) {
      const std::vector<spt_index> ranks{4, 3, 5, 2};
      spt_tucker_options o = options(ranks);
      o.init = init;
      o.tol = 0;
      o.max_iters = 12;
      spt_ttensor* t = nullptr;
      ASSERT_EQ(spt_tucker_hooi(nullptr, &x, &o, &t), SPT_WARN_NOT_CONVERGED) << spt_thread_last_error();
      int count = 0;
      const double* fits = nullptr;
      ASSERT_EQ(spt_ttensor_history(t, &count, &fits, nullptr), SPT_OK);
      ASSERT_EQ(count, 12);
      const double slack = dtype == SPT_FLOAT32 ? 1e-5 : 1e-12;
      for (int i = 1; i < count; ++i) EXPECT_GE(fits[i], fits[i - 1] - slack) << "iteration " << i + 1;
      EXPECT_GT(fits[0], 0.0);
      spt_ttensor_free(t);
    }
  }
}

// Every route gives the same fits from the same start (user factors).
TEST(TuckerHooi, RoutesAgreeFromUserInit) {
  RandomTensorSpec spec;
  spec.dims = {40, 6, 9};
  spec.nnz = 600;
  spec.seed = 8;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const std::vector<spt_index> ranks{3, 2, 4};
  std::vector<std::unique_ptr<spt_matrix_s>> init;
  std::vector<const spt_matrix*> init_ptrs;
  for (size_t m = 0; m < 3; ++m) {
    auto f = std::make_unique<spt_matrix_s>();
    init_matrix(*f, SPT_FLOAT64, spec.dims[m], ranks[m], SPT_COL_MAJOR);  // any layout is accepted
    DenseMatrix<double> q = random_orthonormal(spec.dims[m], ranks[m], 90 + m);
    for (spt_nnz i = 0; i < q.rows; ++i)
      for (spt_nnz j = 0; j < q.cols; ++j) f->at<double>(i, j) = q(i, j);
    init_ptrs.push_back(f.get());
    init.push_back(std::move(f));
  }
  init_ptrs[0] = nullptr;  // not read
  std::vector<std::vector<double>> histories;
  for (TuckerSvdPath svd :
       {TuckerSvdPath::gesdd, TuckerSvdPath::gram_eig, TuckerSvdPath::right_gram, TuckerSvdPath::automatic}) {
    spt_tucker_options o = options(ranks);
    o.init = SPT_TUCKER_INIT_USER;
    o.init_factors = init_ptrs.data();
    o.tol = 0;
    o.max_iters = 6;
    spt_ttensor_s t;
    TuckerInternalOptions internal;
    internal.svd = svd;
    spt_context_s ctx;
    EXPECT_EQ(tucker_hooi(ctx, x, o, t, internal), SPT_WARN_NOT_CONVERGED);
    histories.push_back(t.fit_history);
  }
  for (size_t h = 1; h < histories.size(); ++h)
    for (size_t i = 0; i < histories[0].size(); ++i) EXPECT_NEAR(histories[0][i], histories[h][i], 1e-10);
  // The reference backend gives the same fits too.
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  ASSERT_EQ(spt_context_set_backend(ctx, SPT_BACKEND_REFERENCE), SPT_OK);
  spt_tucker_options o = options(ranks);
  o.init = SPT_TUCKER_INIT_USER;
  o.init_factors = init_ptrs.data();
  o.tol = 0;
  o.max_iters = 6;
  spt_ttensor* t = nullptr;
  ASSERT_EQ(spt_tucker_hooi(ctx, &x, &o, &t), SPT_WARN_NOT_CONVERGED) << spt_last_error(ctx);
  for (size_t i = 0; i < histories[0].size(); ++i) EXPECT_NEAR(histories[0][i], t->fit_history[i], 1e-10);
  spt_ttensor_free(t);
  spt_context_free(ctx);
}

TEST(TuckerHooi, AccessorsAndCallback) {
  const std::vector<spt_index> ranks{2, 3, 2};
  const Planted p = planted(SPT_FLOAT64, {7, 8, 6}, ranks, 77);
  spt_tucker_options o = options(ranks);
  int calls = 0;
  o.callback = [](void* data, int iteration, double fit, double, double seconds) -> int {
    int* n = static_cast<int*>(data);
    ++*n;
    EXPECT_EQ(iteration, *n);
    EXPECT_GE(seconds, 0.0);
    EXPECT_TRUE(std::isfinite(fit));
    return 1;  // stop after the first sweep
  };
  o.callback_data = &calls;
  o.tol = 0;
  spt_ttensor* t = nullptr;
  ASSERT_EQ(spt_tucker_hooi(nullptr, &p.x, &o, &t), SPT_WARN_NOT_CONVERGED);
  EXPECT_EQ(calls, 1);
  spt_ttensor_summary info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(spt_ttensor_info(nullptr, t, &info), SPT_OK);
  EXPECT_EQ(info.order, 3u);
  EXPECT_EQ(info.iterations, 1);
  EXPECT_EQ(info.converged, 0);  // stopped by the callback
  spt_index core_dims[3], full_dims[3];
  ASSERT_EQ(spt_ttensor_core_dims(t, core_dims, full_dims), SPT_OK);
  EXPECT_EQ(std::vector<spt_index>(core_dims, core_dims + 3), ranks);
  EXPECT_EQ(full_dims[1], 8u);
  const void* core = nullptr;
  ASSERT_EQ(spt_ttensor_core(t, &core), SPT_OK);
  // ||G|| = ||X|| for an exact fit (orthonormal factors).
  double g2 = 0;
  for (int i = 0; i < 12; ++i) g2 += std::pow(static_cast<const double*>(core)[i], 2);
  double x2 = 0;
  for (double v : p.full) x2 += v * v;
  EXPECT_NEAR(g2, x2, 1e-9 * x2);
  const spt_matrix* f = nullptr;
  ASSERT_EQ(spt_ttensor_factor(t, 2, &f), SPT_OK);
  spt_matrix_summary shape{};
  shape.struct_size = sizeof shape;
  ASSERT_EQ(spt_matrix_info(nullptr, f, &shape), SPT_OK);
  EXPECT_EQ(shape.rows, 6u);
  EXPECT_EQ(shape.cols, 2u);
  EXPECT_EQ(spt_ttensor_factor(t, 3, &f), SPT_ERR_INVALID_ARGUMENT);
  // Signs: the largest-magnitude entry of every column is positive.
  for (uint32_t m = 0; m < 3; ++m) {
    ASSERT_EQ(spt_ttensor_factor(t, m, &f), SPT_OK);
    for (spt_nnz j = 0; j < f->cols; ++j) {
      double best = 0, best_value = 0;
      for (spt_nnz i = 0; i < f->rows; ++i)
        if (std::abs(f->at<double>(i, j)) > best) {
          best = std::abs(f->at<double>(i, j));
          best_value = f->at<double>(i, j);
        }
      EXPECT_GT(best_value, 0.0);
    }
  }
  spt_ttensor_free(t);
  EXPECT_EQ(spt_ttensor_free(nullptr), SPT_OK);
}

TEST(TuckerHooi, RejectsBadArguments) {
  RandomTensorSpec spec;
  spec.dims = {5, 6, 7};
  spec.nnz = 50;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  spt_ttensor* t = nullptr;
  auto run = [&](const spt_tucker_options& o) { return spt_tucker_hooi(nullptr, &x, &o, &t); };
  const std::vector<spt_index> good{2, 2, 2};
  spt_tucker_options o = options(good);
  EXPECT_EQ(spt_tucker_hooi(nullptr, nullptr, &o, &t), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_tucker_hooi(nullptr, &x, nullptr, &t), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_tucker_hooi(nullptr, &x, &o, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ((spt_tucker_options_init)(nullptr), SPT_ERR_INVALID_ARGUMENT);

  const std::vector<spt_index> zero{2, 0, 2};
  o = options(zero);
  EXPECT_EQ(run(o), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_thread_last_error()).find("ranks[1] is 0"), std::string::npos) << spt_thread_last_error();
  const std::vector<spt_index> too_big{2, 2, 8};
  o = options(too_big);
  EXPECT_EQ(run(o), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_thread_last_error()).find("exceeds dims[2]"), std::string::npos)
      << spt_thread_last_error();
  o = options(good);
  o.ranks_count = 2;
  EXPECT_EQ(run(o), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_thread_last_error()).find("ranks_count"), std::string::npos);
  o = options(good);
  o.ranks = nullptr;
  EXPECT_EQ(run(o), SPT_ERR_INVALID_ARGUMENT);
  o = options(good);
  o.max_iters = 0;
  EXPECT_EQ(run(o), SPT_ERR_INVALID_ARGUMENT);
  o = options(good);
  o.tol = -1;
  EXPECT_EQ(run(o), SPT_ERR_INVALID_ARGUMENT);
  o = options(good);
  {
    const int bad_init = 9;  // as a C caller could store it
    std::memcpy(&o.init, &bad_init, sizeof(bad_init));
  }
  EXPECT_EQ(run(o), SPT_ERR_INVALID_ARGUMENT);
  o = options(good);
  o.init = SPT_TUCKER_INIT_USER;
  EXPECT_EQ(run(o), SPT_ERR_INVALID_ARGUMENT);  // init_factors NULL
  spt_matrix_s wrong;
  init_matrix(wrong, SPT_FLOAT64, 6, 3, SPT_ROW_MAJOR);
  const spt_matrix* factors[3] = {nullptr, &wrong, &wrong};
  o.init_factors = factors;
  EXPECT_EQ(run(o), SPT_ERR_INVALID_ARGUMENT);  // 6 x 3, expected 6 x 2
  o = options(good);
  o.struct_size = 0;
  EXPECT_EQ(run(o), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(t, nullptr);  // nothing written on error

  // Order 1 and all-zero tensors.
  spt_coo_s vec;
  vec.init_owned(SPT_FLOAT64, {5}, 1);
  vec.mutable_ind(0)[0] = 1;
  vec.mutable_values<double>()[0] = 1.0;
  const std::vector<spt_index> one{1};
  o = options(one);
  EXPECT_EQ(spt_tucker_hooi(nullptr, &vec, &o, &t), SPT_ERR_INVALID_ARGUMENT);
  spt_coo_s zeros = copy_coo(x, SPT_FLOAT64);
  std::fill(zeros.mutable_values<double>(), zeros.mutable_values<double>() + zeros.nnz, 0.0);
  o = options(good);
  EXPECT_EQ(spt_tucker_hooi(nullptr, &zeros, &o, &t), SPT_ERR_INVALID_ARGUMENT);

  // Accessors.
  spt_ttensor_summary info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(spt_ttensor_info(nullptr, nullptr, &info), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_ttensor_core(nullptr, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_ttensor_core_dims(nullptr, nullptr, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_ttensor_factor(nullptr, 0, nullptr), SPT_ERR_INVALID_ARGUMENT);
}

// A TTM-chain result that cannot fit memory fails clearly before work.
TEST(TuckerHooi, RejectsHugeChainResult) {
  spt_coo_s x;
  const std::vector<spt_index> dims{4000000000u, 4000000000u, 4000000000u};
  x.init_owned(SPT_FLOAT64, dims, 1);
  for (uint32_t m = 0; m < 3; ++m) x.mutable_ind(m)[0] = 0;
  x.mutable_values<double>()[0] = 1.0;
  const std::vector<spt_index> ranks{1000, 1000, 1000};  // Y_(n): 4e9 x 1e6 values
  spt_tucker_options o = options(ranks);
  spt_ttensor* t = nullptr;
  const spt_status st = spt_tucker_hooi(nullptr, &x, &o, &t);
  EXPECT_TRUE(st == SPT_ERR_OUT_OF_MEMORY || st == SPT_ERR_OVERFLOW) << st;
  EXPECT_NE(std::string(spt_thread_last_error()).find("lower the ranks"), std::string::npos)
      << spt_thread_last_error();
}

}  // namespace
}  // namespace spt::test
