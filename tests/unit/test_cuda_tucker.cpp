// Tucker-HOOI on the GPU (the driver of src/algo/tucker_hooi.cpp on the steps of
// dispatch::device_tucker_steps) against the CPU Tucker-HOOI from the same
// initial factors: random tensors of orders 3 and 4 whose modes take every
// SVD route (I_n <= P_n: the I_n x I_n Gram; tall Y: the P_n x P_n Gram; a
// rank-deficient tall Y: the SVD fallback; R_n > P_n), a data tensor, float32
// and float64, user and HOSVD initialisation: same iterations and status,
// every sweep's fit, orthonormal factors obeying the sign rule, equal
// factors (subspaces in float32) and core; the TTMc on HLS (orders 3 and 4
// by default), on F-COO and on B-CSF chained TTMs (forced by
// spt_tucker_options.ttmc, or chosen by the cost estimate; orders 3..6); the callback
// stopping the device run; the AUTO size rule; device out-of-memory (AUTO
// falls back, CUDA fails); and on a machine without a GPU, CUDA forced is a
// DEVICE error and AUTO runs the CPU loop. GPU tests skip with the reason
// when no device is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "algo/tucker_hooi.hpp"
#include "common/cuda_test_util.hpp"
#include "common/test_util.hpp"
#include "core/context.hpp"
#include "core/error.hpp"
#include "dispatch/device.hpp"
#include "dispatch/device_tucker.hpp"
#include "sptensor/sptensor.h"
#include "sptensor/tucker.h"

namespace spt::test {
namespace {

using ValueTypes = ::testing::Types<float, double>;


struct TtensorDeleter {
  void operator()(spt_ttensor* t) const { spt_ttensor_free(t); }
};

struct TuckerRun {
  spt_status status = SPT_OK;
  std::string error;
  std::unique_ptr<spt_ttensor, TtensorDeleter> t;
  std::vector<int> callback_iterations;
  std::vector<double> callback_fits;
  std::vector<std::string> log;

  bool logged(const std::string& text) const { return spt::test::logged(log, text); }
  // The dispatcher's line for a device run, any TTMc format.
  bool ran_on_gpu() const {
    return logged("Tucker-HOOI on HLS on the GPU") || logged("Tucker-HOOI on F-COO on the GPU") ||
           logged("Tucker-HOOI on B-CSF chained TTMs on the GPU");
  }
};

// Tucker-HOOI through the C API on a context with `backend` (4 threads,
// verbose log recorded), from the given initial factors (user init; init[0]
// is not passed) or HOSVD (empty init); the callback stops after
// `stop_after` sweeps when > 0.
template <typename T>
TuckerRun run_tucker(spt_backend backend, const spt_coo_s& x, const std::vector<spt_index>& ranks,
                     const std::vector<DenseMatrix<T>>& init, int iters, double tol, int stop_after = 0,
                     spt_tucker_ttmc ttmc = SPT_TUCKER_TTMC_AUTO) {
  TuckerRun run;
  const ContextPtr owner = logging_context(backend, 2, &run.log, 4);
  spt_context* ctx = owner.get();
  const WrappedFactors handles(ctx, init, 1);
  spt_tucker_options opts;
  EXPECT_EQ(spt_tucker_options_init(&opts), SPT_OK);
  opts.ranks = ranks.data();
  opts.ranks_count = static_cast<uint32_t>(ranks.size());
  opts.max_iters = iters;
  opts.tol = tol;
  opts.seed = 7;
  opts.ttmc = ttmc;
  if (!init.empty()) {
    opts.init = SPT_TUCKER_INIT_USER;
    opts.init_factors = handles.data();
  } else {
    opts.init = SPT_TUCKER_INIT_HOSVD;
  }
  IterationRecorder<TuckerRun> recorder{&run, stop_after};
  opts.callback = IterationRecorder<TuckerRun>::callback;
  opts.callback_data = &recorder;
  spt_ttensor* t = nullptr;
  run.status = spt_tucker_hooi(ctx, &x, &opts, &t);
  if (run.status < 0) run.error = spt_last_error(ctx);
  run.t.reset(t);
  return run;
}

// Orthonormal random factors (modified Gram-Schmidt in double), dims[m] x
// ranks[m], as a user would pass them.
template <typename T>
std::vector<DenseMatrix<T>> orthonormal_init(const std::vector<spt_index>& dims, const std::vector<spt_index>& ranks,
                                             uint64_t seed) {
  std::vector<DenseMatrix<T>> out;
  for (size_t m = 0; m < dims.size(); ++m) {
    DenseMatrix<double> q = random_matrix<double>(dims[m], ranks[m], seed + 17 * m);
    for (spt_nnz j = 0; j < q.cols; ++j) {
      for (spt_nnz k = 0; k < j; ++k) {
        double d = 0;
        for (spt_nnz i = 0; i < q.rows; ++i) d += q(i, j) * q(i, k);
        for (spt_nnz i = 0; i < q.rows; ++i) q(i, j) -= d * q(i, k);
      }
      double n = 0;
      for (spt_nnz i = 0; i < q.rows; ++i) n += q(i, j) * q(i, j);
      for (spt_nnz i = 0; i < q.rows; ++i) q(i, j) /= std::sqrt(n);
    }
    DenseMatrix<T> f(q.rows, q.cols);
    for (size_t e = 0; e < q.values.size(); ++e) f.values[e] = static_cast<T>(q.values[e]);
    out.push_back(std::move(f));
  }
  return out;
}

template <typename T>
double at(const spt_matrix_s& f, spt_nnz i, spt_nnz j) {
  return static_cast<double>(f.at<T>(i, j));
}

// max principal-angle sine between span(a) and span(b) (same shape, both
// orthonormal): the largest residual of b's columns off span(a).
template <typename T>
double subspace_distance(const spt_matrix_s& a, const spt_matrix_s& b) {
  double worst = 0.0;
  for (spt_nnz j = 0; j < b.cols; ++j) {
    std::vector<double> residual(b.rows);
    for (spt_nnz i = 0; i < b.rows; ++i) residual[i] = at<T>(b, i, j);
    for (spt_nnz k = 0; k < a.cols; ++k) {
      double d = 0;
      for (spt_nnz i = 0; i < a.rows; ++i) d += at<T>(a, i, k) * at<T>(b, i, j);
      for (spt_nnz i = 0; i < a.rows; ++i) residual[i] -= d * at<T>(a, i, k);
    }
    double norm = 0;
    for (double v : residual) norm += v * v;
    worst = std::max(worst, std::sqrt(norm));
  }
  return worst;
}

template <typename T>
constexpr double fit_tolerance() {
  return sizeof(T) == 4 ? 1e-4 : 1e-8;  // absolute (fits lie in [0, 1])
}

// The factor's columns are orthonormal and obey the sign rule (the first
// entry of largest magnitude is positive; checked exactly, on the factor's
// own values).
template <typename T>
void expect_orthonormal_with_sign_rule(const spt_matrix_s& u, const std::string& what) {
  const double tol = sizeof(T) == 4 ? 1e-4 : 1e-10;
  for (spt_nnz a = 0; a < u.cols; ++a) {
    for (spt_nnz b = a; b < u.cols; ++b) {
      double d = 0;
      for (spt_nnz i = 0; i < u.rows; ++i) d += at<T>(u, i, a) * at<T>(u, i, b);
      EXPECT_NEAR(d, a == b ? 1.0 : 0.0, tol) << what << ": columns " << a << ", " << b;
    }
    T best = T(0), best_value = T(0);
    for (spt_nnz i = 0; i < u.rows; ++i)
      if (std::abs(u.at<T>(i, a)) > best) {
        best = std::abs(u.at<T>(i, a));
        best_value = u.at<T>(i, a);
      }
    EXPECT_GE(best_value, T(0)) << what << ": column " << a << " breaks the sign rule";
  }
}

// GPU and CPU runs agree: status, iterations, every sweep's fit, the
// callback saw each sweep; the GPU factors are orthonormal with the sign
// rule; the factors span the same subspaces; with `exact_vectors` (tensors
// with distinct singular values) the vectors and the core are equal to
// rounding as well. (The CPU's own routes - gesdd, I x I Gram, P x P Gram -
// agree on these tensors to 2e-14 (float64) and 2e-5 (float32) in every
// vector entry and core element, with the same signs: the tolerances below
// leave a wide margin for the GPU's different summation orders.)
template <typename T>
void expect_same_run(const TuckerRun& gpu, const TuckerRun& cpu, bool exact_vectors, const std::string& what) {
  ASSERT_GE(gpu.status, 0) << what << ": " << gpu.error;
  ASSERT_GE(cpu.status, 0) << what << ": " << cpu.error;
  EXPECT_EQ(gpu.status, cpu.status) << what;
  EXPECT_TRUE(gpu.ran_on_gpu()) << what << ": the GPU run did not run on the GPU";
  EXPECT_TRUE(gpu.logged("Tucker-HOOI (cuda): fit")) << what;
  EXPECT_FALSE(cpu.logged("on the GPU")) << what;
  const spt_ttensor_s& g = *gpu.t;
  const spt_ttensor_s& c = *cpu.t;
  ASSERT_EQ(g.iterations, c.iterations) << what;
  ASSERT_EQ(g.fit_history.size(), c.fit_history.size()) << what;
  for (size_t i = 0; i < c.fit_history.size(); ++i)
    EXPECT_NEAR(g.fit_history[i], c.fit_history[i], fit_tolerance<T>()) << what << " sweep " << i + 1;
  EXPECT_EQ(g.fit, g.fit_history.back()) << what;
  EXPECT_EQ(g.converged, c.converged) << what;
  ASSERT_EQ(gpu.callback_iterations.size(), g.fit_history.size()) << what;
  for (size_t i = 0; i < gpu.callback_iterations.size(); ++i) {
    EXPECT_EQ(gpu.callback_iterations[i], int(i) + 1) << what;
    EXPECT_EQ(gpu.callback_fits[i], g.fit_history[i]) << what;
  }
  EXPECT_EQ(g.dims, c.dims) << what;
  EXPECT_EQ(g.core_dims, c.core_dims) << what;
  ASSERT_EQ(g.factors.size(), c.factors.size()) << what;
  const uint32_t order = static_cast<uint32_t>(c.factors.size());
  std::vector<std::vector<double>> signs(order);
  for (uint32_t m = 0; m < order; ++m) {
    const spt_matrix_s& gu = *g.factors[m];
    const spt_matrix_s& cu = *c.factors[m];
    ASSERT_EQ(gu.rows, cu.rows) << what;
    ASSERT_EQ(gu.cols, cu.cols) << what;
    const std::string mode = what + " mode " + std::to_string(m);
    expect_orthonormal_with_sign_rule<T>(gu, "GPU factor, " + mode);
    EXPECT_LE(subspace_distance<T>(cu, gu), sizeof(T) == 4 ? 1e-3 : 1e-6) << mode;
    for (spt_nnz r = 0; r < cu.cols; ++r) {
      double dot = 0;
      for (spt_nnz i = 0; i < cu.rows; ++i) dot += at<T>(gu, i, r) * at<T>(cu, i, r);
      signs[m].push_back(dot < 0 ? -1.0 : 1.0);
      if (!exact_vectors) continue;
      EXPECT_GT(dot, 0.0) << mode << " column " << r << ": the sign rule chose differently";
      double worst = 0;
      for (spt_nnz i = 0; i < cu.rows; ++i)
        worst = std::max(worst, std::abs(at<T>(gu, i, r) - signs[m][r] * at<T>(cu, i, r)));
      EXPECT_LE(worst, sizeof(T) == 4 ? 1e-3 : 1e-6) << mode << " column " << r;
    }
  }
  if (!exact_vectors) return;
  // The core (first index fastest), signs of the factors' columns aligned.
  const auto& gc = g.core.get<T>();
  const auto& cc = c.core.get<T>();
  ASSERT_EQ(gc.size(), cc.size()) << what;
  double scale = 0, worst = 0;
  for (size_t e = 0; e < cc.size(); ++e) {
    size_t rest = e;
    double sign = 1.0;
    for (uint32_t m = 0; m < order; ++m) {
      sign *= signs[m][rest % c.core_dims[m]];
      rest /= c.core_dims[m];
    }
    scale = std::max(scale, std::abs(static_cast<double>(cc[e])));
    worst = std::max(worst, std::abs(static_cast<double>(gc[e]) - sign * static_cast<double>(cc[e])));
  }
  EXPECT_LE(worst, (sizeof(T) == 4 ? 1e-3 : 1e-6) * std::max(scale, 1e-12))
      << what << ": cores differ by " << worst << " (largest " << scale << ")";
}

struct Case {
  std::vector<spt_index> dims, ranks;
  spt_nnz nnz;
  const char* routes;  // which SVD route each mode takes (P_n = prod_{m != n} R_m)
};

std::vector<Case> cases() {
  return {
      {{60, 45, 30}, {4, 4, 4}, 6000, "all tall (I_n > P_n = 16): P x P Gram"},
      {{20, 18, 16}, {6, 5, 5}, 3000, "all I_n <= P_n: I x I Gram"},
      {{200, 12, 10}, {5, 4, 3}, 5000, "mixed: tall mode 0, Gram modes 1, 2"},
      {{25, 20, 16, 12}, {2, 3, 3, 2}, 6000, "order 4: tall modes 0..2, Gram mode 3"},
  };
}

template <typename T>
class CudaTucker : public ::testing::Test {};
TYPED_TEST_SUITE(CudaTucker, ValueTypes);

TYPED_TEST(CudaTucker, MatchesCpuFromUserInit) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  uint64_t seed = 30;
  for (const Case& c : cases()) {
    RandomTensorSpec spec;
    spec.dims = c.dims;
    spec.nnz = c.nnz;
    spec.seed = ++seed;
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    const auto init = orthonormal_init<T>(c.dims, c.ranks, seed * 7);
    const TuckerRun gpu = run_tucker<T>(SPT_BACKEND_CUDA, x, c.ranks, init, 8, 0.0);
    const TuckerRun cpu = run_tucker<T>(SPT_BACKEND_CPU, x, c.ranks, init, 8, 0.0);
    EXPECT_EQ(gpu.status, SPT_WARN_NOT_CONVERGED) << c.routes << ": " << gpu.error;
    expect_same_run<T>(gpu, cpu, true, c.routes);
  }
}

// HOSVD initialisation (computed on the host in both runs) and convergence
// by tol: the same stop at the same sweep.
TYPED_TEST(CudaTucker, MatchesCpuFromHosvdInitWithTol) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  RandomTensorSpec spec;
  spec.dims = {60, 45, 30, 8};
  spec.nnz = 8000;
  spec.seed = 5;
  spec.duplicates = true;
  const spt_coo_s x = random_coo(dtype_of<T>(), spec);
  const std::vector<spt_index> ranks{5, 4, 3, 2};
  const double tol = sizeof(T) == 4 ? 1e-3 : 1e-6;
  const TuckerRun gpu = run_tucker<T>(SPT_BACKEND_CUDA, x, ranks, {}, 100, tol);
  const TuckerRun cpu = run_tucker<T>(SPT_BACKEND_CPU, x, ranks, {}, 100, tol);
  expect_same_run<T>(gpu, cpu, true, "HOSVD init, tol");
}

TYPED_TEST(CudaTucker, MatchesCpuOnDataTensor) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  for (const char* name : {"kinship.tns.xz", "umls.tns.xz", "nations.tns.xz"}) {
    spt_coo_s x;
    if (!read_data_tensor<T>(name, &x)) continue;
    // kinship 104 x 25 x 104 at rank 8: P_n = 64, so modes 0 and 2 are tall
    // (P x P Gram) and mode 1 takes the I x I Gram.
    const std::vector<spt_index> ranks(x.order(), 8);
    const TuckerRun gpu = run_tucker<T>(SPT_BACKEND_CUDA, x, ranks, {}, 10, 0.0);
    const TuckerRun cpu = run_tucker<T>(SPT_BACKEND_CPU, x, ranks, {}, 10, 0.0);
    expect_same_run<T>(gpu, cpu, true, name);
    return;
  }
  GTEST_SKIP() << "no data tensor found";
}

// X = G x_1 U_1 x_2 U_2 x_3 U_3 (exact multilinear rank `ranks`), stored
// densely as COO (every entry), float64.
spt_coo_s planted_tensor(const std::vector<spt_index>& dims, const std::vector<spt_index>& ranks, uint64_t seed) {
  const std::vector<DenseMatrix<double>> u = orthonormal_init<double>(dims, ranks, seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<double> core(size_t(ranks[0]) * ranks[1] * ranks[2]);
  for (double& v : core) v = unit(rng);
  spt_coo_s x;
  const spt_nnz cells = spt_nnz(dims[0]) * dims[1] * dims[2];
  x.init_owned(SPT_FLOAT64, dims, cells);
  spt_nnz k = 0;
  for (spt_index c = 0; c < dims[2]; ++c)
    for (spt_index b = 0; b < dims[1]; ++b)
      for (spt_index a = 0; a < dims[0]; ++a, ++k) {
        double v = 0;
        for (spt_index r2 = 0; r2 < ranks[2]; ++r2)
          for (spt_index r1 = 0; r1 < ranks[1]; ++r1)
            for (spt_index r0 = 0; r0 < ranks[0]; ++r0)
              v += core[r0 + ranks[0] * (r1 + size_t(ranks[1]) * r2)] * u[0](a, r0) * u[1](b, r1) * u[2](c, r2);
        x.mutable_ind(0)[k] = a;
        x.mutable_ind(1)[k] = b;
        x.mutable_ind(2)[k] = c;
        x.mutable_values<double>()[k] = v;
      }
  return x;
}

// Asking for more components than Y_(0) has (true rank 3, R_0 = 4, Y_(0)
// tall: 14 x 8) makes s_4 ~ 0: the device must leave the P x P Gram route
// for the SVD of Y_(0) (a verbose note says so), as the CPU leaves it for
// gesdd, and still return orthonormal factors and the CPU's exact fit.
TEST(CudaTuckerApi, RankDeficientTallModeTakesTheSvdFallback) {
  SKIP_WITHOUT_DEVICE();
  const spt_coo_s x = planted_tensor({14, 9, 11}, {3, 2, 4}, 21);
  const std::vector<spt_index> ranks{4, 2, 4};
  const auto init = orthonormal_init<double>(x.dims, ranks, 3);
  const TuckerRun gpu = run_tucker<double>(SPT_BACKEND_CUDA, x, ranks, init, 5, 0.0);
  const TuckerRun cpu = run_tucker<double>(SPT_BACKEND_CPU, x, ranks, init, 5, 0.0);
  ASSERT_GE(gpu.status, 0) << gpu.error;
  ASSERT_GE(cpu.status, 0) << cpu.error;
  EXPECT_TRUE(gpu.logged("SVD of Y_(n) (gesvd)")) << "the device did not take the SVD fallback";
  EXPECT_GT(gpu.t->fit, 0.9999);
  ASSERT_EQ(gpu.t->fit_history.size(), cpu.t->fit_history.size());
  // The fit of an exact model is 1 only to about sqrt(eps) (the residual is
  // the square root of a difference of nearly equal squared norms).
  for (size_t i = 0; i < cpu.t->fit_history.size(); ++i)
    EXPECT_NEAR(gpu.t->fit_history[i], cpu.t->fit_history[i], 1e-6) << "sweep " << i + 1;
  for (uint32_t m = 0; m < 3; ++m)
    expect_orthonormal_with_sign_rule<double>(*gpu.t->factors[m], "mode " + std::to_string(m));
  // Modes 1 and 2 have distinct singular values: the same subspaces.
  for (uint32_t m = 1; m < 3; ++m)
    EXPECT_LE(subspace_distance<double>(*cpu.t->factors[m], *gpu.t->factors[m]), 1e-6) << "mode " << m;
}

TEST(CudaTuckerApi, CallbackStopsTheDeviceRun) {
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {50, 40, 30};
  spec.nnz = 5000;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const std::vector<spt_index> ranks{4, 3, 5};
  const auto init = orthonormal_init<double>(x.dims, ranks, 3);
  const TuckerRun gpu = run_tucker<double>(SPT_BACKEND_CUDA, x, ranks, init, 50, 0.0, /*stop_after=*/3);
  const TuckerRun cpu = run_tucker<double>(SPT_BACKEND_CPU, x, ranks, init, 50, 0.0, /*stop_after=*/3);
  ASSERT_EQ(gpu.status, SPT_WARN_NOT_CONVERGED) << gpu.error;
  EXPECT_EQ(gpu.t->iterations, 3);
  EXPECT_EQ(gpu.callback_iterations, (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(gpu.logged("stopped by the callback"));
  expect_same_run<double>(gpu, cpu, true, "stopped by the callback");
}

// R_0 = 10 > P_0 = 6 on a tall mode: the I x I Gram (as the CPU). Y_(0)
// has rank <= 6, so 4 of U_0's columns are any orthonormal basis of a null
// space and later modes depend on that choice: no comparison with the CPU,
// but orthonormal factors obeying the sign rule and a non-decreasing fit
// (each HOOI step maximises ||G||).
TEST(CudaTuckerApi, RankAboveTheOtherModesProduct) {
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {40, 4, 3};
  spec.nnz = 300;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const std::vector<spt_index> ranks{10, 3, 2};
  const auto init = orthonormal_init<double>(x.dims, ranks, 4);
  const TuckerRun gpu = run_tucker<double>(SPT_BACKEND_CUDA, x, ranks, init, 6, 0.0);
  ASSERT_GE(gpu.status, 0) << gpu.error;
  EXPECT_TRUE(gpu.ran_on_gpu());
  for (uint32_t m = 0; m < 3; ++m)
    expect_orthonormal_with_sign_rule<double>(*gpu.t->factors[m], "mode " + std::to_string(m));
  const std::vector<double>& fits = gpu.t->fit_history;
  ASSERT_EQ(fits.size(), 6u);
  EXPECT_GT(fits[0], 0.0);
  EXPECT_LE(fits.back(), 1.0);
  for (size_t i = 1; i < fits.size(); ++i) EXPECT_GE(fits[i], fits[i - 1] - 1e-10) << "sweep " << i + 1;
}

// spt_tucker_options.ttmc forces the TTMc's format: ONE_SHOT (F-COO), HLS
// and CHAIN each run on the device (the log names the format) and equal
// the CPU run, on an order-3 and an order-4 tensor (float64 and float32);
// AUTO takes HLS for orders 3 and 4 when large and dense enough, else
// chain or F-COO as the cost estimate says; HLS forced on order 5 (outside
// the HLS kernels) is SPT_ERR_UNSUPPORTED.
TEST(CudaTuckerApi, TtmcMethodForcedMatchesCpu) {
  SKIP_WITHOUT_DEVICE();
  // MatchesCpuFromUserInit's order-3 and order-4 cases with their seeds
  // (tensors with distinct singular values: vectors compared exactly).
  const std::vector<std::pair<Case, uint64_t>> shapes{
      {{{60, 45, 30}, {4, 4, 4}, 6000, "order 3"}, 31},
      {{{25, 20, 16, 12}, {2, 3, 3, 2}, 6000, "order 4"}, 34},
  };
  for (const auto& [c, seed] : shapes) {
    RandomTensorSpec spec;
    spec.dims = c.dims;
    spec.nnz = c.nnz;
    spec.seed = seed;
    const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
    const auto init = orthonormal_init<double>(c.dims, c.ranks, seed * 7);
    const TuckerRun cpu = run_tucker<double>(SPT_BACKEND_CPU, x, c.ranks, init, 8, 0.0);
    const spt_coo_s x32 = random_coo(SPT_FLOAT32, spec);
    const auto init32 = orthonormal_init<float>(c.dims, c.ranks, seed * 7);
    const TuckerRun cpu32 = run_tucker<float>(SPT_BACKEND_CPU, x32, c.ranks, init32, 8, 0.0);
    // Unset = auto: these tensors are too small for HLS (6,000 nonzeros);
    // chain or F-COO by the estimate.
    const bool auto_chain = dispatch::tucker_ttmc_estimate(x, c.ranks, 4).prefers_chain();
    for (const spt_tucker_ttmc method :
         {SPT_TUCKER_TTMC_ONE_SHOT, SPT_TUCKER_TTMC_HLS, SPT_TUCKER_TTMC_CHAIN, SPT_TUCKER_TTMC_AUTO}) {
      const std::string what = std::string(c.routes) + ", ttmc method " + std::to_string(int(method));
      const bool hls = method == SPT_TUCKER_TTMC_HLS;
      const bool chain = method == SPT_TUCKER_TTMC_AUTO ? auto_chain : method == SPT_TUCKER_TTMC_CHAIN;
      const TuckerRun gpu = run_tucker<double>(SPT_BACKEND_CUDA, x, c.ranks, init, 8, 0.0, 0, method);
      expect_same_run<double>(gpu, cpu, true, what);
      EXPECT_EQ(gpu.logged("Tucker-HOOI on F-COO on the GPU"), !hls && !chain) << what;
      EXPECT_EQ(gpu.logged("Tucker-HOOI on B-CSF chained TTMs on the GPU"), chain) << what;
      if (method == SPT_TUCKER_TTMC_AUTO) {
        EXPECT_TRUE(gpu.logged("the Tucker TTMc does not run on HLS: ")) << what;
        EXPECT_TRUE(gpu.logged(auto_chain ? "estimated work per sweep: chain" : "the cost estimate prefers it"))
            << what;
      }
      EXPECT_EQ(gpu.logged("Tucker-HOOI on HLS on the GPU (TTMc in EXACT precision"), hls) << what;
      const TuckerRun gpu32 = run_tucker<float>(SPT_BACKEND_CUDA, x32, c.ranks, init32, 8, 0.0, 0, method);
      expect_same_run<float>(gpu32, cpu32, true, what + ", float32");
      EXPECT_EQ(gpu32.logged("Tucker-HOOI on HLS on the GPU"), hls) << what << ", float32";
      EXPECT_EQ(gpu32.logged("Tucker-HOOI on B-CSF chained TTMs on the GPU"), chain) << what << ", float32";
    }
  }
  {
    // Auto on a large tensor with dense tiles (150,000 nonzeros in 64^3,
    // 57% dense): HLS; on the small ones above it said why not.
    RandomTensorSpec dense_spec;
    dense_spec.dims = {64, 64, 64};
    dense_spec.nnz = 150000;
    dense_spec.seed = 5;
    dense_spec.skewed = false;
    const spt_coo_s xd = random_coo(SPT_FLOAT64, dense_spec);
    const std::vector<spt_index> ranks{4, 5, 3};
    const auto init = orthonormal_init<double>(xd.dims, ranks, 13);
    const TuckerRun cpu = run_tucker<double>(SPT_BACKEND_CPU, xd, ranks, init, 5, 0.0);
    const TuckerRun gpu = run_tucker<double>(SPT_BACKEND_CUDA, xd, ranks, init, 5, 0.0);
    expect_same_run<double>(gpu, cpu, false, "auto, 150,000 nonzeros in 64^3");
    EXPECT_TRUE(gpu.logged("Tucker-HOOI on HLS on the GPU")) << "auto should pick HLS for a dense tensor";
  }
  // Order 5: HLS cannot run it; forcing it is unsupported, on the GPU and
  // (AUTO backend, falling back) on the CPU alike.
  RandomTensorSpec spec;
  spec.dims = {12, 10, 9, 8, 7};
  spec.nnz = 4000;
  spec.seed = 77;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const std::vector<spt_index> ranks{2, 2, 2, 2, 2};
  const auto init = orthonormal_init<double>(x.dims, ranks, 11);
  const TuckerRun gpu = run_tucker<double>(SPT_BACKEND_CUDA, x, ranks, init, 4, 0.0, 0, SPT_TUCKER_TTMC_HLS);
  EXPECT_EQ(gpu.status, SPT_ERR_UNSUPPORTED) << gpu.error;
  EXPECT_NE(gpu.error.find("order 5 is outside the GPU HLS kernels' range 3..4"), std::string::npos) << gpu.error;
  const TuckerRun automatic = run_tucker<double>(SPT_BACKEND_AUTO, x, ranks, init, 4, 0.0, 0, SPT_TUCKER_TTMC_HLS);
  EXPECT_EQ(automatic.status, SPT_ERR_UNSUPPORTED) << automatic.error;
}

// The chained TTMc (SPT_TUCKER_TTMC_CHAIN: B-CSF / HB-CSF trees, one
// per mode) equals the CPU run from the same initial factors on orders 3..6,
// including a tensor with long fibers (the chain's case), one whose slices
// hold one nonzero each (COO group only) and ranks (3, 5, 7, ...) so that a
// wrong column order of Y_(n) would show; vectors and core compared
// exactly where the singular values are distinct (orders 3, 4), subspaces
// and fits everywhere.
TYPED_TEST(CudaTucker, ChainTtmcMatchesCpu) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  struct ChainCase {
    std::vector<spt_index> dims, ranks;
    spt_nnz nnz;
    bool skewed, exact;
    const char* what;
  };
  const std::vector<ChainCase> chain_cases{
      {{60, 45, 30}, {3, 5, 7}, 6000, true, true, "order 3, ranks (3,5,7)"},
      {{30, 30, 30}, {4, 3, 5}, 12000, false, true, "order 3, long fibers (44% dense)"},
      {{500, 400, 600}, {3, 2, 4}, 1500, false, false, "order 3, nearly every slice one nonzero"},
      {{25, 20, 16, 12}, {2, 3, 5, 3}, 6000, true, true, "order 4, ranks (2,3,5,3)"},
      {{12, 10, 9, 8, 14}, {3, 5, 2, 2, 3}, 5000, true, false, "order 5"},
      {{8, 7, 6, 9, 5, 10}, {2, 3, 2, 3, 2, 3}, 5000, true, false, "order 6"},
  };
  uint64_t seed = 60;
  for (const ChainCase& c : chain_cases) {
    RandomTensorSpec spec;
    spec.dims = c.dims;
    spec.nnz = c.nnz;
    spec.seed = ++seed;
    spec.skewed = c.skewed;
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    const auto init = orthonormal_init<T>(c.dims, c.ranks, seed * 7);
    const TuckerRun gpu = run_tucker<T>(SPT_BACKEND_CUDA, x, c.ranks, init, 6, 0.0, 0, SPT_TUCKER_TTMC_CHAIN);
    const TuckerRun cpu = run_tucker<T>(SPT_BACKEND_CPU, x, c.ranks, init, 6, 0.0);
    expect_same_run<T>(gpu, cpu, c.exact, c.what);
    EXPECT_TRUE(gpu.logged("Tucker-HOOI on B-CSF chained TTMs on the GPU (one HB-CSF per mode")) << c.what;
    EXPECT_TRUE(gpu.logged("forced by SPT_TUCKER_TTMC_CHAIN")) << c.what;
  }
}

// Auto without HLS (below its size rule): the estimate decides. Long fibers
// (30,000 nonzeros in 40^3): chain; a diagonal (no fiber holds two
// nonzeros): F-COO, with the estimate in the log. Chain forced on order 2
// (outside the B-CSF kernels): SPT_ERR_UNSUPPORTED.
TEST(CudaTuckerApi, AutoPicksChainOrFcooByTheEstimate) {
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {40, 40, 40};
  spec.nnz = 30000;
  spec.seed = 8;
  spec.skewed = false;
  const spt_coo_s dense = random_coo(SPT_FLOAT64, spec);
  const std::vector<spt_index> ranks{10, 12, 8};  // P_n 80..120: the chain's estimate well below F-COO's
  ASSERT_TRUE(dispatch::tucker_ttmc_estimate(dense, ranks, 4).prefers_chain());
  const auto init = orthonormal_init<double>(dense.dims, ranks, 17);
  const TuckerRun gpu = run_tucker<double>(SPT_BACKEND_CUDA, dense, ranks, init, 5, 0.0);
  const TuckerRun cpu = run_tucker<double>(SPT_BACKEND_CPU, dense, ranks, init, 5, 0.0);
  expect_same_run<double>(gpu, cpu, true, "auto, long fibers");
  EXPECT_TRUE(gpu.logged("the Tucker TTMc does not run on HLS: 30000 nonzeros"));
  EXPECT_TRUE(gpu.logged("Tucker-HOOI on B-CSF chained TTMs on the GPU"));
  EXPECT_FALSE(gpu.logged("forced by SPT_TUCKER_TTMC_CHAIN"));

  spt_coo_s diagonal;
  diagonal.init_owned(SPT_FLOAT64, {300, 300, 300}, 300);
  for (spt_index k = 0; k < 300; ++k) {
    for (uint32_t m = 0; m < 3; ++m) diagonal.mutable_ind(m)[k] = k;
    diagonal.mutable_values<double>()[k] = 1.0 + 0.01 * k;
  }
  const std::vector<spt_index> small_ranks{3, 3, 3};
  ASSERT_FALSE(dispatch::tucker_ttmc_estimate(diagonal, small_ranks, 4).prefers_chain());
  const auto init_d = orthonormal_init<double>(diagonal.dims, small_ranks, 19);
  const TuckerRun gpu_d = run_tucker<double>(SPT_BACKEND_CUDA, diagonal, small_ranks, init_d, 3, 0.0);
  ASSERT_GE(gpu_d.status, 0) << gpu_d.error;
  EXPECT_TRUE(gpu_d.logged("the Tucker TTMc runs on F-COO: the cost estimate prefers it (estimated work per sweep"));
  EXPECT_TRUE(gpu_d.logged("Tucker-HOOI on F-COO on the GPU"));

  RandomTensorSpec spec2;
  spec2.dims = {300, 200};
  spec2.nnz = 3000;
  const spt_coo_s matrix = random_coo(SPT_FLOAT64, spec2);
  const std::vector<spt_index> ranks2{3, 3};  // equal: R_0 > R_1 leaves U_0 a null-space column, arbitrary
  const auto init2 = orthonormal_init<double>(matrix.dims, ranks2, 23);
  const TuckerRun gpu2 = run_tucker<double>(SPT_BACKEND_CUDA, matrix, ranks2, init2, 3, 0.0, 0, SPT_TUCKER_TTMC_CHAIN);
  EXPECT_EQ(gpu2.status, SPT_ERR_UNSUPPORTED) << gpu2.error;
  EXPECT_NE(gpu2.error.find("order 2 is outside the GPU B-CSF kernels' range"), std::string::npos) << gpu2.error;
}

// SPT_CUDA_MEMORY_LIMIT makes the device copies not fit: AUTO falls back to
// the CPU with a note and the CPU's result; CUDA forced is an
// OUT_OF_MEMORY error before any sweep.
TEST(CudaTuckerApi, OutOfMemoryFallsBackUnderAutoAndFailsUnderCuda) {
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {3000, 2000, 40};
  spec.nnz = 20000;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const std::vector<spt_index> ranks{16, 16, 8};
  ASSERT_FALSE(dispatch::DeviceKernels::tucker_prefers_cpu(x.dims, x.nnz, ranks, 4)) << "AUTO would not use the GPU";
  const auto init = orthonormal_init<double>(x.dims, ranks, 9);
  const TuckerRun cpu = run_tucker<double>(SPT_BACKEND_CPU, x, ranks, init, 3, 0.0);
  ASSERT_GE(cpu.status, 0) << cpu.error;
  ScopedEnv limit("SPT_CUDA_MEMORY_LIMIT", "1000");
  const TuckerRun automatic = run_tucker<double>(SPT_BACKEND_AUTO, x, ranks, init, 3, 0.0);
  ASSERT_GE(automatic.status, 0) << automatic.error;
  // The device copies do not fit: the CPU.
  EXPECT_TRUE(automatic.logged("note: Tucker-HOOI runs on the CPU: the CUDA device is out of memory"));
  ASSERT_EQ(automatic.t->fit_history.size(), cpu.t->fit_history.size());
  for (size_t i = 0; i < cpu.t->fit_history.size(); ++i)
    EXPECT_NEAR(automatic.t->fit_history[i], cpu.t->fit_history[i], 1e-12) << "sweep " << i + 1;
  EXPECT_EQ(automatic.callback_iterations.size(), cpu.callback_iterations.size());
  const TuckerRun forced = run_tucker<double>(SPT_BACKEND_CUDA, x, ranks, init, 3, 0.0);
  EXPECT_EQ(forced.status, SPT_ERR_OUT_OF_MEMORY) << forced.error;
  EXPECT_NE(forced.error.find("out of memory"), std::string::npos) << forced.error;
  EXPECT_TRUE(forced.callback_iterations.empty());
}

// AUTO's size rule (tucker_prefers_cpu) on any machine, and its effect on a
// machine with a GPU: a tiny problem under AUTO runs on the CPU with a note
// (the CPU's fits), CUDA forced still runs on the GPU.
TEST(CudaTuckerApi, AutoRunsSmallProblemsOnTheCpu) {
  using dispatch::DeviceKernels;
  EXPECT_TRUE(DeviceKernels::tucker_prefers_cpu({14, 55, 14}, 1992, {4, 4, 4}, 16));          // nations
  EXPECT_TRUE(DeviceKernels::tucker_prefers_cpu({30, 20, 25, 6}, 1500, {4, 3, 5, 2}, 1));
  EXPECT_FALSE(DeviceKernels::tucker_prefers_cpu({979, 979, 804}, 894892, {16, 16, 16}, 16));  // email-eu-day
  EXPECT_FALSE(DeviceKernels::tucker_prefers_cpu({3000, 2000, 40}, 20000, {16, 16, 8}, 4));
  // More threads make the CPU win more often, never less.
  EXPECT_FALSE(DeviceKernels::tucker_prefers_cpu({200, 200, 200}, 100000, {8, 8, 8}, 1));
  EXPECT_TRUE(DeviceKernels::tucker_prefers_cpu({200, 200, 200}, 100000, {8, 8, 8}, 64));
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {30, 20, 10};
  spec.nnz = 2000;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const std::vector<spt_index> ranks{3, 4, 2};
  const auto init = orthonormal_init<double>(x.dims, ranks, 5);
  const TuckerRun automatic = run_tucker<double>(SPT_BACKEND_AUTO, x, ranks, init, 5, 0.0);
  const TuckerRun cpu = run_tucker<double>(SPT_BACKEND_CPU, x, ranks, init, 5, 0.0);
  const TuckerRun forced = run_tucker<double>(SPT_BACKEND_CUDA, x, ranks, init, 5, 0.0);
  ASSERT_GE(automatic.status, 0) << automatic.error;
  EXPECT_TRUE(automatic.logged("the problem is small"));
  EXPECT_FALSE(automatic.logged("on the GPU"));
  ASSERT_EQ(automatic.t->fit_history.size(), cpu.t->fit_history.size());
  for (size_t i = 0; i < cpu.t->fit_history.size(); ++i)
    EXPECT_NEAR(automatic.t->fit_history[i], cpu.t->fit_history[i], 1e-12) << "sweep " << i + 1;
  expect_same_run<double>(forced, cpu, true, "tiny tensor, CUDA forced");
}

// CPU-only machines (CI): CUDA forced (set on the internal context:
// spt_context_set_backend already refuses it) is a DEVICE error; AUTO runs
// the CPU loop, the CPU backend's result.
TEST(CudaTuckerApi, ForcedCudaWithoutDeviceIsDeviceError) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present; this checks the CPU-only behaviour";
  RandomTensorSpec spec;
  spec.dims = {20, 15, 10};
  spec.nnz = 800;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CUDA;
  const std::vector<spt_index> ranks{3, 3, 2};
  spt_tucker_options opts;
  ASSERT_EQ(spt_tucker_options_init(&opts), SPT_OK);
  opts.ranks = ranks.data();
  opts.ranks_count = 3;
  opts.max_iters = 3;
  int calls = 0;
  opts.callback = [](void* data, int, double, double, double) -> int {
    ++*static_cast<int*>(data);
    return 0;
  };
  opts.callback_data = &calls;
  spt_ttensor_s t;
  try {
    tucker_hooi(ctx, x, opts, t);
    FAIL() << "Tucker-HOOI with CUDA forced and no device should fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_DEVICE) << e.what();
    EXPECT_NE(std::string(e.what()).find("CUDA Tucker-HOOI failed"), std::string::npos) << e.what();
  }
  EXPECT_EQ(calls, 0);
}

TEST(CudaTuckerApi, AutoWithoutDeviceRunsOnCpu) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present; this checks the CPU-only behaviour";
  RandomTensorSpec spec;
  spec.dims = {3000, 2000, 40};  // above the size rule: only the missing device keeps it on the CPU
  spec.nnz = 20000;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const std::vector<spt_index> ranks{16, 16, 8};
  ASSERT_FALSE(dispatch::DeviceKernels::tucker_prefers_cpu(x.dims, x.nnz, ranks, 4));
  const auto init = orthonormal_init<double>(x.dims, ranks, 1);
  const TuckerRun automatic = run_tucker<double>(SPT_BACKEND_AUTO, x, ranks, init, 4, 0.0);
  const TuckerRun cpu = run_tucker<double>(SPT_BACKEND_CPU, x, ranks, init, 4, 0.0);
  ASSERT_EQ(automatic.status, SPT_WARN_NOT_CONVERGED) << automatic.error;
  ASSERT_EQ(automatic.t->fit_history.size(), cpu.t->fit_history.size());
  for (size_t i = 0; i < cpu.t->fit_history.size(); ++i)
    EXPECT_NEAR(automatic.t->fit_history[i], cpu.t->fit_history[i], 1e-12) << "sweep " << i + 1;
  EXPECT_EQ(automatic.callback_iterations.size(), 4u);
  for (const std::string& line : automatic.log) EXPECT_EQ(line.find("cuda"), std::string::npos) << line;
  for (const std::string& line : automatic.log) EXPECT_EQ(line.find("GPU"), std::string::npos) << line;
}

}  // namespace
}  // namespace spt::test
