// GCP-OPT: the OpenMP GCP kernel against the per-entry reference (every
// loss, orders 2-4, with and without missing entries, thread-count
// independence), its gradient against central finite differences for every
// loss, a hand-computed objective, L-BFGS-B runs (monotone objective,
// recovery of a planted low-rank tensor, CP-WOPT-style recovery with half
// the entries missing, thread-count independence), and the C API's argument
// errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "algo/gcp_opt.hpp"
#include "algo/lbfgsb.hpp"
#include "common/gcp_test_util.hpp"
#include "common/test_util.hpp"
#include "core/coo.hpp"
#include "core/ktensor.hpp"
#include "kernels/gcp.hpp"
#include "sptensor/gcp.h"

namespace spt::test {
namespace {

kernels::GcpLoss loss_with_parameter(spt_gcp_loss kind) { return {kind, 0.3}; }

algo::GcpFullTensor full_tensor(const std::vector<spt_index>& dims, std::vector<double> values,
                                std::vector<double> weights = {}) {
  algo::GcpFullTensor t;
  t.dims = dims;
  t.values = std::move(values);
  t.weights = std::move(weights);
  return t;
}

TEST(GcpKernel, CpuMatchesReferenceForEveryLossAndThreadCount) {
  const std::vector<std::vector<spt_index>> shapes = {{7, 5}, {6, 1, 9}, {3, 4, 5, 2}, {40, 30, 20}};
  for (const auto& dims : shapes)
    for (spt_gcp_loss loss : kAllLosses)
      for (bool with_missing : {false, true}) {
        const uint64_t entries = entry_count(dims);
        std::vector<double> weights;
        if (with_missing) {
          weights.assign(entries, 1.0);
          for (uint64_t e = 0; e < entries; e += 3) weights[e] = 0.0;
        }
        const algo::GcpFullTensor x = full_tensor(dims, data_for(loss, entries, 5 + dims.size()), weights);
        const spt_index rank = 3;
        const auto f = positive_factors(dims, rank, 17);
        const auto refs = crefs(f);
        std::vector<DenseMatrix<double>> want, got1, got3;
        std::vector<MatRef<double>> want_refs, got1_refs, got3_refs;
        for (spt_index d : dims) {
          want.emplace_back(d, rank);
          got1.emplace_back(d, rank);
          got3.emplace_back(d, rank);
        }
        for (size_t n = 0; n < dims.size(); ++n) {
          want_refs.push_back(want[n].ref());
          got1_refs.push_back(got1[n].ref());
          got3_refs.push_back(got3[n].ref());
        }
        const kernels::GcpDense view = x.view();
        const auto kind = loss_with_parameter(loss);
        const double fw = kernels::reference::gcp_value_gradient(kernels::Exec{1}, view, kind, refs.data(),
                                                                 want_refs.data());
        const double f1 = kernels::cpu::gcp_value_gradient(kernels::Exec{1}, view, kind, refs.data(), got1_refs.data());
        const double f3 = kernels::cpu::gcp_value_gradient(kernels::Exec{3}, view, kind, refs.data(), got3_refs.data());
        const double fonly = kernels::cpu::gcp_value_gradient(kernels::Exec{2}, view, kind, refs.data(), nullptr);
        ASSERT_TRUE(std::isfinite(fw)) << "loss " << loss;
        EXPECT_NEAR(f1, fw, 1e-12 * std::fabs(fw)) << "loss " << loss << " order " << dims.size();
        EXPECT_EQ(f1, f3) << "thread-count dependent objective, loss " << loss;
        EXPECT_EQ(f1, fonly) << "objective without gradient differs, loss " << loss;
        for (size_t n = 0; n < dims.size(); ++n) {
          double scale = 0.0;
          for (double v : want[n].values) scale = std::max(scale, std::fabs(v));
          for (size_t i = 0; i < want[n].values.size(); ++i) {
            ASSERT_NEAR(got1[n].values[i], want[n].values[i], 1e-12 * (1 + scale)) << "loss " << loss << " mode " << n;
            ASSERT_EQ(got1[n].values[i], got3[n].values[i]) << "thread-count dependent gradient, loss " << loss;
          }
        }
      }
}

TEST(GcpKernel, GradientMatchesFiniteDifferencesForEveryLoss) {
  const std::vector<spt_index> dims = {4, 3, 5};
  const spt_index rank = 2;
  for (spt_gcp_loss loss : kAllLosses) {
    const algo::GcpFullTensor x = full_tensor(dims, data_for(loss, entry_count(dims), 3));
    auto f = positive_factors(dims, rank, 29);
    std::vector<DenseMatrix<double>> g;
    std::vector<MatRef<double>> grefs;
    for (spt_index d : dims) g.emplace_back(d, rank);
    for (auto& m : g) grefs.push_back(m.ref());
    const auto kind = loss_with_parameter(loss);
    auto refs = crefs(f);
    kernels::reference::gcp_value_gradient(kernels::Exec{1}, x.view(), kind, refs.data(), grefs.data());
    for (size_t n = 0; n < dims.size(); ++n)
      for (spt_nnz i = 0; i < dims[n]; ++i)
        for (spt_index r = 0; r < rank; ++r) {
          const double h = 1e-6, keep = f[n](i, r);
          f[n](i, r) = keep + h;
          const double fp = kernels::reference::gcp_value_gradient(kernels::Exec{1}, x.view(), kind, refs.data(), nullptr);
          f[n](i, r) = keep - h;
          const double fm = kernels::reference::gcp_value_gradient(kernels::Exec{1}, x.view(), kind, refs.data(), nullptr);
          f[n](i, r) = keep;
          const double fd = (fp - fm) / (2 * h);
          EXPECT_NEAR(g[n](i, r), fd, 1e-5 * (1 + std::fabs(fd))) << "loss " << loss << " mode " << n << " (" << i
                                                                  << ", " << r << ")";
        }
  }
}

TEST(GcpKernel, HandComputedObjective) {
  // X (2 x 2) = [[1, 0], [0, 2]], rank-1 model a = (1, 2), b = (1, 1): M = [[1, 1], [2, 2]].
  const std::vector<spt_index> dims = {2, 2};
  const algo::GcpFullTensor x = full_tensor(dims, {1, 0, 0, 2});  // (0,0), (1,0), (0,1), (1,1)
  DenseMatrix<double> a(2, 1), b(2, 1);
  a(0, 0) = 1, a(1, 0) = 2, b(0, 0) = 1, b(1, 0) = 1;
  const ConstMatRef<double> refs[] = {a.cref(), b.cref()};
  // Gaussian: (1-1)^2 + (2-0)^2 + (1-0)^2 + (2-2)^2 = 5.
  EXPECT_DOUBLE_EQ(kernels::cpu::gcp_value_gradient(kernels::Exec{1}, x.view(), {SPT_GCP_LOSS_GAUSSIAN, 0}, refs, nullptr), 5.0);
  // Poisson (identity): sum m - x log(m + eps) = 6 - log(1 + eps) - 2 log(2 + eps).
  const double eps = kernels::kGcpEps;
  EXPECT_NEAR(kernels::cpu::gcp_value_gradient(kernels::Exec{1}, x.view(), {SPT_GCP_LOSS_POISSON, 0}, refs, nullptr),
              6 - std::log(1 + eps) - 2 * std::log(2 + eps), 1e-14);
  // Huber, t = 1.5: |d| = 0, 2, 1, 0 -> 0 + (2*1.5*2 - 2.25) + 1 + 0 = 4.75.
  EXPECT_DOUBLE_EQ(kernels::cpu::gcp_value_gradient(kernels::Exec{1}, x.view(), {SPT_GCP_LOSS_HUBER, 1.5}, refs, nullptr), 4.75);
}

// A GCP-OPT run on a context with `threads` threads; spt_gcp_objective of
// its model must equal the objective it reports.
GcpRun run_gcp(const spt_coo* x, const spt_gcp_options& opts, int threads = 1) {
  spt_context* ctx = nullptr;
  EXPECT_EQ(spt_context_create(&ctx), SPT_OK);
  spt_context_set_threads(ctx, threads);
  GcpRun run = run_gcp_on(ctx, x, opts, true);
  if (run.model) {
    double again = 0.0;
    EXPECT_EQ(spt_gcp_objective(ctx, x, run.model, &opts, &again), SPT_OK) << spt_last_error(ctx);
    EXPECT_NEAR(again, run.objective, 1e-12 * std::fabs(run.objective) + 1e-300);
    spt_ktensor_free(run.model);
    run.model = nullptr;
  }
  spt_context_free(ctx);
  return run;
}

TEST(GcpOpt, EveryLossDecreasesTheObjectiveAndIsThreadCountIndependent) {
  if (!algo::lbfgsb_available()) GTEST_SKIP() << "built without L-BFGS-B";
  const std::vector<spt_index> dims = {6, 5, 4};
  for (spt_gcp_loss loss : kAllLosses) {
    spt_coo* x = random_gcp_coo(loss, dims, 8);
    spt_gcp_options opts = gcp_options(loss, 2);
    opts.seed = 5;
    opts.max_iters = 25;
    const GcpRun one = run_gcp(x, opts, 1), two = run_gcp(x, opts, 2);
    ASSERT_FALSE(one.history.empty()) << "loss " << loss;
    for (size_t i = 1; i < one.history.size(); ++i)
      EXPECT_LE(one.history[i], one.history[i - 1]) << "loss " << loss << " iteration " << i + 1;
    EXPECT_EQ(one.history, two.history) << "loss " << loss;
    EXPECT_EQ(one.factors, two.factors) << "loss " << loss;
    expect_default_lower_bound_holds(one, loss);
    spt_coo_free(x);
  }
}

TEST(GcpOpt, GaussianRecoversAPlantedTensor) {
  if (!algo::lbfgsb_available()) GTEST_SKIP() << "built without L-BFGS-B";
  const std::vector<spt_index> dims = {8, 7, 6};
  const std::vector<double> truth = planted(dims, 2, 3);
  spt_coo* x = coo_from_full(dims, truth);
  const double norm2 = sum_of_squares(truth);
  spt_gcp_options opts = gcp_options(SPT_GCP_LOSS_GAUSSIAN, 2);
  opts.seed = 9;
  opts.pgtol = 1e-10;
  opts.factr = 10;
  const GcpRun run = run_gcp(x, opts);
  // Objective = ||X - M||^2: fit 1 - ||X - M|| / ||X|| above 0.9999.
  EXPECT_GT(1 - std::sqrt(run.objective / norm2), 0.9999) << "objective " << run.objective;
  spt_coo_free(x);
}

TEST(GcpOpt, MissingEntriesCpWoptRecoversAPlantedTensorFromHalfTheEntries) {
  if (!algo::lbfgsb_available()) GTEST_SKIP() << "built without L-BFGS-B";
  const std::vector<spt_index> dims = {10, 9, 8};
  std::vector<double> truth = planted(dims, 2, 41);
  // Every other entry (by a random draw) is missing; its stored value is garbage.
  std::mt19937_64 gen(77);
  std::vector<double> observed = truth, missing_marks(truth.size(), 0.0);
  double observed_norm2 = 0;
  for (size_t e = 0; e < truth.size(); ++e) {
    if (gen() % 2) {
      missing_marks[e] = 1.0;
      observed[e] = 1e6;
    } else {
      observed_norm2 += truth[e] * truth[e];
    }
  }
  spt_coo* x = coo_from_full(dims, observed);
  spt_coo* missing = coo_from_full(dims, missing_marks);
  spt_gcp_options opts = gcp_options(SPT_GCP_LOSS_GAUSSIAN, 2);
  opts.seed = 4;
  opts.pgtol = 1e-10;
  opts.factr = 10;
  opts.missing = missing;
  const GcpRun run = run_gcp(x, opts);
  EXPECT_GT(1 - std::sqrt(run.objective / observed_norm2), 0.9999) << "objective " << run.objective;
  // The missing entries are recovered too (the model is the planted tensor).
  std::vector<spt_index> idx(dims.size());
  double err2 = 0, all2 = 0;
  for (size_t e = 0; e < truth.size(); ++e) {
    uint64_t rest = e;
    for (size_t n = 0; n < dims.size(); ++n) idx[n] = rest % dims[n], rest /= dims[n];
    double m = 0;
    for (spt_index r = 0; r < 2; ++r) {
      double p = 1;
      for (size_t n = 0; n < dims.size(); ++n) p *= run.factors[n][size_t{idx[n]} * 2 + r];
      m += p;
    }
    err2 += (m - truth[e]) * (m - truth[e]);
    all2 += truth[e] * truth[e];
  }
  EXPECT_LT(std::sqrt(err2 / all2), 1e-3);
  spt_coo_free(x);
  spt_coo_free(missing);
}

TEST(GcpOpt, UserFactorsBelowTheBoundAreClippedAndIterationLimitWarns) {
  if (!algo::lbfgsb_available()) GTEST_SKIP() << "built without L-BFGS-B";
  const std::vector<spt_index> dims = {4, 3};
  spt_coo* x = random_gcp_coo(SPT_GCP_LOSS_POISSON, dims, 1);
  std::vector<double> a(4 * 2, -1.0), b(3 * 2, 0.5);
  spt_matrix *ma = nullptr, *mb = nullptr;
  ASSERT_EQ(spt_matrix_wrap(nullptr, SPT_FLOAT64, 4, 2, SPT_ROW_MAJOR, a.data(), 2, &ma), SPT_OK);
  ASSERT_EQ(spt_matrix_wrap(nullptr, SPT_FLOAT64, 3, 2, SPT_ROW_MAJOR, b.data(), 2, &mb), SPT_OK);
  const spt_matrix* init[] = {ma, mb};
  spt_gcp_options opts = gcp_options(SPT_GCP_LOSS_POISSON, 2);
  opts.init = SPT_GCP_INIT_USER;
  opts.init_factors = init;
  opts.max_iters = 2;
  const GcpRun run = run_gcp(x, opts);
  EXPECT_EQ(run.status, SPT_WARN_NOT_CONVERGED);
  EXPECT_EQ(run.iterations, 2);
  for (const auto& f : run.factors)
    for (double v : f) EXPECT_GE(v, 0.0);
  spt_matrix_free(ma);
  spt_matrix_free(mb);
  spt_coo_free(x);
}

TEST(GcpApi, ArgumentErrors) {
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  const std::vector<spt_index> dims = {3, 4};
  std::vector<double> counts = data_for(SPT_GCP_LOSS_POISSON, 12, 2);
  spt_coo* x = coo_from_full(dims, counts);
  spt_gcp_options opts;
  ASSERT_EQ(spt_gcp_options_init(&opts), SPT_OK);
  EXPECT_EQ(opts.rank, 10u);
  EXPECT_TRUE(std::isnan(opts.lower_bound));
  EXPECT_EQ(opts.loss, SPT_GCP_LOSS_GAUSSIAN);
  EXPECT_EQ(opts.max_iters, 1000);
  EXPECT_EQ(opts.pgtol, 1e-5);
  opts.rank = 2;
  spt_ktensor* k = nullptr;
  auto expect = [&](spt_gcp_options o, spt_status want, const char* words, const spt_coo* t = nullptr) {
    EXPECT_EQ(spt_gcp_opt(ctx, t ? t : x, &o, &k), want) << words;
    EXPECT_NE(std::string(spt_last_error(ctx)).find(words), std::string::npos) << spt_last_error(ctx);
    EXPECT_EQ(k, nullptr);
  };
  EXPECT_EQ(spt_gcp_opt(ctx, nullptr, &opts, &k), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_gcp_opt(ctx, x, nullptr, &k), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_gcp_opt(ctx, x, &opts, nullptr), SPT_ERR_INVALID_ARGUMENT);
  spt_gcp_options o = opts;
  o.struct_size = 8;
  expect(o, SPT_ERR_INVALID_ARGUMENT, "not initialised");
  o = opts, o.rank = 0;
  expect(o, SPT_ERR_INVALID_ARGUMENT, "rank");
  o = opts, o.loss = static_cast<spt_gcp_loss>(42);
  expect(o, SPT_ERR_INVALID_ARGUMENT, "unknown loss");
  o = opts, o.optimizer = static_cast<spt_gcp_optimizer>(7);
  expect(o, SPT_ERR_INVALID_ARGUMENT, "unknown optimizer");
  o = opts, o.loss = SPT_GCP_LOSS_HUBER, o.loss_parameter = 0;
  expect(o, SPT_ERR_INVALID_ARGUMENT, "Huber threshold");
  o = opts, o.loss = SPT_GCP_LOSS_POISSON, o.lower_bound = -1;
  expect(o, SPT_ERR_INVALID_ARGUMENT, "needs factors >= 0");
  o = opts, o.lower_bound = std::numeric_limits<double>::infinity();
  expect(o, SPT_ERR_INVALID_ARGUMENT, "lower_bound");
  o = opts, o.max_iters = 0;
  expect(o, SPT_ERR_INVALID_ARGUMENT, "max_iters");
  o = opts, o.memory = 0;
  expect(o, SPT_ERR_INVALID_ARGUMENT, "memory");
  o = opts, o.pgtol = -1;
  expect(o, SPT_ERR_INVALID_ARGUMENT, "pgtol");
  o = opts, o.init = SPT_GCP_INIT_USER;
  expect(o, SPT_ERR_INVALID_ARGUMENT, "init_factors");
  if (algo::lbfgsb_available()) {
    // Data the loss cannot take: counts are not binary; halves are not counts; negatives for Gamma.
    o = opts, o.loss = SPT_GCP_LOSS_BERNOULLI_LOGIT;
    bool has_two = false;
    for (double v : counts) has_two |= v > 1;
    if (has_two) expect(o, SPT_ERR_INVALID_ARGUMENT, "binary");
    std::vector<double> halves(12, 0.5);
    spt_coo* h = coo_from_full(dims, halves);
    o = opts, o.loss = SPT_GCP_LOSS_POISSON;
    expect(o, SPT_ERR_INVALID_ARGUMENT, "count data", h);
    std::vector<double> negative(12, -0.5);
    spt_coo* neg = coo_from_full(dims, negative);
    o = opts, o.loss = SPT_GCP_LOSS_GAMMA;
    expect(o, SPT_ERR_INVALID_ARGUMENT, "nonnegative data", neg);
    spt_coo_free(h);
    spt_coo_free(neg);
    // float32.
    spt_coo* x32 = coo_from_full(dims, counts, SPT_FLOAT32);
    expect(opts, SPT_ERR_UNSUPPORTED, "float64", x32);
    spt_coo_free(x32);
    // Above SPT_GCP_MAX_DENSE_ENTRIES entries.
    const spt_index big[] = {100000, 100000, 2};
    spt_coo* huge = nullptr;
    ASSERT_EQ(spt_coo_create(ctx, SPT_FLOAT64, 3, big, &huge), SPT_OK);
    expect(opts, SPT_ERR_UNSUPPORTED, "SPT_GCP_MAX_DENSE_ENTRIES", huge);
    spt_coo_free(huge);
    // Missing entries of other dims.
    const spt_index other[] = {4, 3};
    spt_coo* wrong = nullptr;
    ASSERT_EQ(spt_coo_create(ctx, SPT_FLOAT64, 2, other, &wrong), SPT_OK);
    o = opts, o.missing = wrong;
    expect(o, SPT_ERR_INVALID_ARGUMENT, "missing");
    spt_coo_free(wrong);
  }
  spt_coo_free(x);
  spt_context_free(ctx);
}

}  // namespace
}  // namespace spt::test
