// GCP-SGD: the sampled-entries kernel (OpenMP against the reference, thread
// counts), the nonzero table (duplicates summed, zeros dropped, sorted), the
// stratified sampler (zeros are zeros, weights, the whole nonzero set when
// asked, an unbiased objective estimate), and whole runs: the same seed
// gives the same run, the kept objective estimate never rises, a planted
// tensor is recovered, the loss reached is close to GCP-OPT's, a tensor
// above GCP-OPT's dense limit runs, the stopping rules, and argument errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "algo/gcp_opt.hpp"
#include "algo/gcp_sgd.hpp"
#include "algo/lbfgsb.hpp"
#include "common/gcp_test_util.hpp"
#include "core/coo.hpp"
#include "core/ktensor.hpp"
#include "kernels/gcp.hpp"
#include "sptensor/gcp.h"

namespace spt::test {
namespace {

// A GCP-SGD run on a context with `threads` threads.
GcpRun run_sgd(const spt_coo* x, spt_gcp_options opts, int threads = 1, bool keep_model = false) {
  opts.optimizer = SPT_GCP_OPTIMIZER_SGD;
  spt_context* ctx = nullptr;
  EXPECT_EQ(spt_context_create(&ctx), SPT_OK);
  spt_context_set_threads(ctx, threads);
  GcpRun run = run_gcp_on(ctx, x, opts, keep_model);
  spt_context_free(ctx);
  return run;
}

double exact_objective(const spt_coo* x, const spt_ktensor* k, const spt_gcp_options& opts) {
  double f = 0.0;
  EXPECT_EQ(spt_gcp_objective(nullptr, x, k, &opts, &f), SPT_OK) << spt_last_error(nullptr);
  return f;
}

TEST(GcpSampleKernel, CpuMatchesReferenceForEveryLossAndIsThreadCountIndependent) {
  const std::vector<std::vector<spt_index>> shapes = {{7, 5}, {30, 20, 10}, {4, 5, 6, 3}};
  for (const auto& dims : shapes)
    for (spt_gcp_loss loss : kAllLosses) {
      const uint32_t order = static_cast<uint32_t>(dims.size());
      const spt_index rank = 3;
      std::mt19937_64 gen(11 + order);
      std::uniform_real_distribution<double> u(0.2, 1.2);
      std::vector<std::vector<double>> f(order);
      std::vector<ConstMatRef<double>> refs(order);
      for (uint32_t n = 0; n < order; ++n) {
        f[n].resize(size_t{dims[n]} * rank);
        for (double& v : f[n]) v = u(gen) / std::sqrt(3.0);
        refs[n] = {f[n].data(), dims[n], rank, rank};
      }
      const size_t count = 9000;  // several chunks
      const std::vector<double> values = data_for(loss, count, 3);
      std::vector<std::vector<spt_index>> coords(order, std::vector<spt_index>(count));
      std::vector<const spt_index*> ind(order);
      for (uint32_t n = 0; n < order; ++n) {
        for (auto& c : coords[n]) c = static_cast<spt_index>(gen() % dims[n]);
        ind[n] = coords[n].data();
      }
      std::vector<double> weights(count);
      for (double& w : weights) w = 0.5 + u(gen);
      kernels::GcpSample s;
      s.order = order;
      s.ind = ind.data();
      s.values = values.data();
      s.weights = weights.data();
      s.count = count;
      const kernels::GcpLoss l{loss, 0.3};
      std::vector<double> want(count), one(count), three(count);
      const double f_want = kernels::reference::gcp_sample_value_derivative(kernels::Exec{1}, s, l, refs.data(), want.data());
      const double f_one = kernels::cpu::gcp_sample_value_derivative(kernels::Exec{1}, s, l, refs.data(), one.data());
      const double f_three = kernels::cpu::gcp_sample_value_derivative(kernels::Exec{3}, s, l, refs.data(), three.data());
      EXPECT_NEAR(f_one, f_want, 1e-11 * std::fabs(f_want)) << "loss " << loss;
      EXPECT_EQ(f_one, f_three) << "loss " << loss;
      EXPECT_EQ(one, three) << "loss " << loss;
      for (size_t e = 0; e < count; ++e) ASSERT_NEAR(one[e], want[e], 1e-12 * (1 + std::fabs(want[e]))) << e;
      // Without derivatives: the same objective.
      EXPECT_EQ(kernels::cpu::gcp_sample_value_derivative(kernels::Exec{2}, s, l, refs.data(), nullptr), f_one);
    }
}

TEST(GcpSampler, NonzeroTableSumsDuplicatesDropsZerosAndSorts) {
  // Coordinates (0-based) (2,1), (0,0), (2,1) again, (1,2) with +3 and -3 (sums to zero).
  const spt_index dims[] = {3, 4};
  const spt_index ind[] = {2, 0, 2, 1, 1, /* mode 1 */ 1, 0, 1, 2, 2};
  const double vals[] = {1.5, 2.0, 0.5, 3.0, -3.0};
  spt_coo* x = nullptr;
  ASSERT_EQ(spt_coo_create_from_arrays(nullptr, SPT_FLOAT64, 2, dims, 5, ind, 5, 0, vals, 0, &x), SPT_OK);
  const algo::GcpSparseData d = algo::gcp_sparse_data(*x, 2);
  EXPECT_EQ(d.entries, 12u);
  ASSERT_EQ(d.nnz(), 2u);
  EXPECT_EQ(d.zeros(), 10u);
  EXPECT_EQ(d.linear, (std::vector<uint64_t>{0, 2 + 3 * 1}));
  EXPECT_EQ(d.values, (std::vector<double>{2.0, 2.0}));
  EXPECT_TRUE(d.is_nonzero(5));
  EXPECT_FALSE(d.is_nonzero(1 + 3 * 2));
  spt_index c[2];
  d.coordinates(5, c);
  EXPECT_EQ(c[0], 2u);
  EXPECT_EQ(c[1], 1u);
  spt_coo_free(x);
}

TEST(GcpSampler, StratifiedSampleHasTheRightStrataAndWeights) {
  const std::vector<spt_index> dims = {9, 8, 7};
  const std::vector<double> full = data_for(SPT_GCP_LOSS_POISSON, entry_count(dims), 21, 0.8);
  spt_coo* x = coo_from_full(dims, full);
  const algo::GcpSparseData d = algo::gcp_sparse_data(*x, 1);
  const uint64_t nnz = d.nnz(), zeros = d.zeros();
  ASSERT_GT(nnz, 50u);
  std::mt19937_64 gen(3);
  algo::GcpDrawnSample s;
  algo::gcp_draw_stratified(d, 40, 70, gen, 3, s);
  ASSERT_EQ(s.size(), 110u);
  for (size_t e = 0; e < s.size(); ++e) {
    const uint64_t linear = s.coords[0][e] + 9ull * (s.coords[1][e] + 8ull * s.coords[2][e]);
    if (e < 40) {
      EXPECT_EQ(s.values[e], full[linear]);
      EXPECT_NE(s.values[e], 0.0);
      EXPECT_DOUBLE_EQ(s.weights[e], double(nnz) / 40);
    } else {
      EXPECT_EQ(full[linear], 0.0) << "a sampled zero is a nonzero";
      EXPECT_EQ(s.values[e], 0.0);
      EXPECT_DOUBLE_EQ(s.weights[e], double(zeros) / 70);
    }
  }
  // Every nonzero, in order, when the whole set is asked for.
  algo::gcp_draw_stratified(d, nnz, 0, gen, 1, s);
  ASSERT_EQ(s.size(), nnz);
  for (size_t e = 0; e < nnz; ++e) {
    EXPECT_EQ(s.coords[0][e] + 9ull * (s.coords[1][e] + 8ull * s.coords[2][e]), d.linear[e]);
    EXPECT_EQ(s.weights[e], 1.0);
  }
  // The bucket index answers as a binary search over every nonzero.
  for (uint64_t idx = 0; idx < d.entries; ++idx)
    ASSERT_EQ(d.is_nonzero(idx), std::binary_search(d.linear.begin(), d.linear.end(), idx)) << idx;
  // The same generator state gives the same sample for any thread count.
  std::mt19937_64 g1(8), g2(8);
  algo::GcpDrawnSample s1, s2;
  algo::gcp_draw_stratified(d, 30, 5000, g1, 1, s1);
  algo::gcp_draw_stratified(d, 30, 5000, g2, 4, s2);
  EXPECT_EQ(s1.coords, s2.coords);
  EXPECT_EQ(s1.values, s2.values);
  spt_coo_free(x);
}

TEST(GcpSampler, ObjectiveEstimateIsUnbiased) {
  // The mean of many stratified estimates is the exact objective (sampling
  // error of the mean about 0.3% here; the bound is 2%).
  const std::vector<spt_index> dims = {12, 10, 8};
  const std::vector<double> full = data_for(SPT_GCP_LOSS_POISSON, entry_count(dims), 5, 0.7);
  spt_coo* x = coo_from_full(dims, full);
  const algo::GcpSparseData d = algo::gcp_sparse_data(*x, 1);
  const spt_index rank = 2;
  std::vector<std::vector<double>> f;
  std::vector<ConstMatRef<double>> refs;
  std::mt19937_64 gen(4);
  for (spt_index n : dims) {
    std::vector<double> m(size_t{n} * rank);
    for (double& v : m) v = 0.3 + 0.5 * double(gen() % 1000) / 1000;
    f.push_back(std::move(m));
  }
  for (size_t n = 0; n < dims.size(); ++n) refs.push_back({f[n].data(), dims[n], rank, rank});
  const algo::GcpFullTensor dense = algo::gcp_full_tensor(*x, nullptr);
  const kernels::GcpLoss loss{SPT_GCP_LOSS_POISSON, 0};
  const double exact = kernels::reference::gcp_value_gradient(kernels::Exec{1}, dense.view(), loss, refs.data(), nullptr);
  double mean = 0;
  const int draws = 400;
  algo::GcpDrawnSample s;
  for (int t = 0; t < draws; ++t) {
    algo::gcp_draw_stratified(d, 20, 20, gen, 1, s);
    std::vector<const spt_index*> ind = {s.coords[0].data(), s.coords[1].data(), s.coords[2].data()};
    kernels::GcpSample view{3, ind.data(), s.values.data(), s.weights.data(), s.size()};
    mean += kernels::cpu::gcp_sample_value_derivative(kernels::Exec{1}, view, loss, refs.data(), nullptr) / draws;
  }
  EXPECT_NEAR(mean, exact, 0.02 * std::fabs(exact)) << "exact " << exact;
  spt_coo_free(x);
}

TEST(GcpSampler, DefaultSampleSizesArePyttbs) {
  algo::GcpSparseData d;
  d.dims = {1000, 1000, 1000};
  d.entries = 1000000000ull;
  d.linear.resize(2000000);
  spt_gcp_options opts;
  spt_gcp_options_init(&opts);
  algo::GcpSampleSizes s = algo::gcp_sample_sizes(d, opts);
  EXPECT_EQ(s.gradient_nonzeros, 6000u);  // max(1000, ceil(3 nnz / 1000))
  EXPECT_EQ(s.gradient_zeros, 6000u);
  EXPECT_EQ(s.function_nonzeros, 100000u);  // max(ceil(nnz / 100), 1e5)
  EXPECT_EQ(s.function_zeros, 100000u);
  d.linear.resize(500);
  d.entries = 800;
  s = algo::gcp_sample_sizes(d, opts);
  EXPECT_EQ(s.gradient_nonzeros, 500u);  // capped at nnz
  EXPECT_EQ(s.gradient_zeros, 300u);     // capped at the zero count
  EXPECT_EQ(s.function_nonzeros, 500u);
  EXPECT_EQ(s.function_zeros, 300u);
  opts.gradient_nonzeros = 7, opts.gradient_zeros = 9, opts.function_nonzeros = 11, opts.function_zeros = 13;
  s = algo::gcp_sample_sizes(d, opts);
  EXPECT_EQ(s.gradient_nonzeros, 7u);
  EXPECT_EQ(s.gradient_zeros, 9u);
  EXPECT_EQ(s.function_nonzeros, 11u);
  EXPECT_EQ(s.function_zeros, 13u);
}

TEST(GcpSgd, SameSeedSameRunKeptEstimateNeverRisesAndBoundsHold) {
  const std::vector<spt_index> dims = {15, 12, 10};
  for (spt_gcp_loss loss : kAllLosses) {
    spt_coo* x = random_gcp_coo(loss, dims, 8, 0.6);
    spt_gcp_options opts = gcp_options(loss, 3);
    opts.seed = 5;
    opts.max_iters = 12;
    opts.epoch_iters = 20;
    opts.rate = 0.02;
    opts.gradient_nonzeros = opts.gradient_zeros = 100;
    const GcpRun a = run_sgd(x, opts, 2), b = run_sgd(x, opts, 2);
    ASSERT_FALSE(a.history.empty()) << "loss " << loss;
    EXPECT_EQ(a.history, b.history) << "loss " << loss;
    EXPECT_EQ(a.factors, b.factors) << "loss " << loss;
    EXPECT_EQ(a.iterations, static_cast<int>(a.history.size()));
    EXPECT_EQ(a.objective, a.history.back());
    for (size_t i = 1; i < a.history.size(); ++i) EXPECT_LE(a.history[i], a.history[i - 1]) << "loss " << loss;
    expect_default_lower_bound_holds(a, loss);
    // One thread: the same samples; the objective agrees to rounding.
    const GcpRun one = run_sgd(x, opts, 1);
    EXPECT_EQ(one.iterations, a.iterations) << "loss " << loss;
    EXPECT_NEAR(one.objective, a.objective, 1e-6 * std::fabs(a.objective)) << "loss " << loss;
    // Another seed: another run.
    opts.seed = 6;
    EXPECT_NE(run_sgd(x, opts, 2).factors, a.factors) << "loss " << loss;
    spt_coo_free(x);
  }
}

TEST(GcpSgd, GaussianRecoversAPlantedTensor) {
  // Every entry a nonzero (no zeros to sample): SGD on the full data.
  const std::vector<spt_index> dims = {10, 9, 8};
  const std::vector<double> truth = planted(dims, 2, 3);
  spt_coo* x = coo_from_full(dims, truth);
  const double norm2 = sum_of_squares(truth);
  spt_gcp_options opts = gcp_options(SPT_GCP_LOSS_GAUSSIAN, 2);
  opts.seed = 9;
  opts.rate = 0.01;
  opts.epoch_iters = 100;
  opts.max_iters = 200;
  opts.max_fails = 4;
  opts.gradient_nonzeros = 200;
  GcpRun run = run_sgd(x, opts, 1, true);
  ASSERT_NE(run.model, nullptr);
  const double f = exact_objective(x, run.model, opts);
  EXPECT_GT(1 - std::sqrt(f / norm2), 0.99) << "objective " << f << " after " << run.iterations << " epochs";
  spt_ktensor_free(run.model);
  spt_coo_free(x);
}

TEST(GcpSgd, LossReachedIsCloseToGcpOptsForSparseCounts) {
  if (!algo::lbfgsb_available()) GTEST_SKIP() << "built without L-BFGS-B";
  const std::vector<spt_index> dims = {20, 15, 12};
  spt_coo* x = random_gcp_coo(SPT_GCP_LOSS_POISSON, dims, 13, 0.85);
  spt_gcp_options opts = gcp_options(SPT_GCP_LOSS_POISSON, 3);
  opts.seed = 2;
  spt_ktensor* k = nullptr;
  ASSERT_GE(spt_gcp_opt(nullptr, x, &opts, &k), 0) << spt_last_error(nullptr);
  const double f_opt = exact_objective(x, k, opts);
  spt_ktensor_free(k);
  opts.rate = 0.01;
  opts.epoch_iters = 100;
  opts.max_iters = 100;
  opts.max_fails = 3;
  opts.gradient_nonzeros = opts.gradient_zeros = 300;
  GcpRun run = run_sgd(x, opts, 2, true);
  ASSERT_NE(run.model, nullptr);
  const double f_sgd = exact_objective(x, run.model, opts);
  // Poisson objectives here are negative; the SGD model is within 2% of the optimum's.
  EXPECT_NEAR(f_sgd, f_opt, 0.02 * std::fabs(f_opt)) << "SGD " << f_sgd << ", L-BFGS-B " << f_opt;
  EXPECT_GE(f_sgd, f_opt - 1e-9 * std::fabs(f_opt)) << "SGD below the L-BFGS-B optimum";
  spt_ktensor_free(run.model);
  spt_coo_free(x);
}

TEST(GcpSgd, RunsOnATensorAboveTheDenseLimit) {
  const spt_index dims[] = {100000, 100000, 30};  // 3e11 entries: GCP-OPT refuses it
  const spt_nnz nnz = 3000;
  std::vector<spt_index> ind(3 * nnz);
  std::vector<double> vals(nnz);
  std::mt19937_64 gen(1);
  for (spt_nnz k = 0; k < nnz; ++k) {
    ind[k] = gen() % 100, ind[nnz + k] = gen() % 100, ind[2 * nnz + k] = gen() % 30;
    vals[k] = 1 + double(gen() % 5);
  }
  spt_coo* x = nullptr;
  ASSERT_EQ(spt_coo_create_from_arrays(nullptr, SPT_FLOAT64, 3, dims, nnz, ind.data(), nnz, 0, vals.data(), 0, &x),
            SPT_OK);
  spt_gcp_options opts = gcp_options(SPT_GCP_LOSS_POISSON, 2);
  opts.epoch_iters = 5;
  opts.max_iters = 3;
  opts.seed = 3;
  spt_ktensor* k = nullptr;
  EXPECT_EQ(spt_gcp_opt(nullptr, x, &opts, &k), SPT_ERR_UNSUPPORTED);  // L-BFGS-B: dense limit
  const GcpRun run = run_sgd(x, opts, 2);
  EXPECT_EQ(run.iterations, 3);
  EXPECT_TRUE(std::isfinite(run.objective));
  EXPECT_LE(run.history.back(), run.history.front());
  spt_coo_free(x);
}

int stop_after_two(void* data, int epoch, double, double rate, double) {
  auto* rates = static_cast<std::vector<double>*>(data);
  rates->push_back(rate);
  return epoch >= 2;
}

TEST(GcpSgd, StoppingRules) {
  const std::vector<spt_index> dims = {8, 7, 6};
  spt_coo* x = random_gcp_coo(SPT_GCP_LOSS_POISSON, dims, 4, 0.5);
  spt_gcp_options opts = gcp_options(SPT_GCP_LOSS_POISSON, 2);
  opts.epoch_iters = 10;
  opts.max_iters = 50;
  // f_est_tol above any estimate: one epoch, converged.
  opts.f_est_tol = 1e300;
  GcpRun run = run_sgd(x, opts);
  EXPECT_EQ(run.status, SPT_OK);
  EXPECT_EQ(run.iterations, 1);
  EXPECT_EQ(run.converged, 1);
  // The epoch limit: not converged.
  opts.f_est_tol = -std::numeric_limits<double>::infinity();
  opts.max_iters = 2;
  run = run_sgd(x, opts);
  EXPECT_EQ(run.status, SPT_WARN_NOT_CONVERGED);
  EXPECT_EQ(run.iterations, 2);
  EXPECT_EQ(run.converged, 0);
  // A huge rate fails the first epoch, which is undone (the start is
  // kept: an epoch at a tiny rate estimates nearly the same objective);
  // max_fails = 0 stops at that first failure.
  opts.max_iters = 50;
  opts.max_fails = 0;
  opts.rate = 1e-12;
  opts.f_est_tol = 1e300;
  const GcpRun still = run_sgd(x, opts);
  opts.f_est_tol = -std::numeric_limits<double>::infinity();
  opts.rate = 50;
  run = run_sgd(x, opts);
  EXPECT_EQ(run.status, SPT_OK);
  EXPECT_EQ(run.iterations, 1);
  ASSERT_EQ(run.history.size(), 1u);
  EXPECT_NEAR(run.history[0], still.history[0], 1e-6 * std::fabs(still.history[0]));
  EXPECT_EQ(run.factors.size(), still.factors.size());
  // The callback sees the rate per epoch and stops the run.
  std::vector<double> rates;
  opts.rate = 1e-3;
  opts.max_fails = 1;
  opts.callback = stop_after_two;
  opts.callback_data = &rates;
  run = run_sgd(x, opts);
  EXPECT_EQ(run.status, SPT_WARN_NOT_CONVERGED);
  EXPECT_EQ(run.iterations, 2);
  ASSERT_EQ(rates.size(), 2u);
  EXPECT_TRUE(rates[1] == 1e-3 || rates[1] == 1e-4);
  spt_coo_free(x);
}

TEST(GcpSgd, ArgumentErrors) {
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  const std::vector<spt_index> dims = {3, 4};
  spt_coo* x = random_gcp_coo(SPT_GCP_LOSS_POISSON, dims, 2);
  spt_gcp_options opts;
  ASSERT_EQ(spt_gcp_options_init(&opts), SPT_OK);
  EXPECT_EQ(opts.rate, 1e-3);
  EXPECT_EQ(opts.decay, 0.1);
  EXPECT_EQ(opts.max_fails, 1);
  EXPECT_EQ(opts.epoch_iters, 1000);
  EXPECT_EQ(opts.f_est_tol, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(opts.beta1, 0.9);
  EXPECT_EQ(opts.beta2, 0.999);
  EXPECT_EQ(opts.epsilon, 1e-8);
  EXPECT_EQ(opts.gradient_nonzeros, 0u);
  EXPECT_EQ(opts.function_zeros, 0u);
  opts.rank = 2;
  opts.optimizer = SPT_GCP_OPTIMIZER_SGD;
  spt_ktensor* k = nullptr;
  auto expect = [&](spt_gcp_options o, spt_status want, const char* words, const spt_coo* t = nullptr) {
    EXPECT_EQ(spt_gcp_opt(ctx, t ? t : x, &o, &k), want) << words;
    EXPECT_NE(std::string(spt_last_error(ctx)).find(words), std::string::npos) << spt_last_error(ctx);
    EXPECT_EQ(k, nullptr);
  };
  spt_gcp_options o = opts;
  o.rate = 0;
  expect(o, SPT_ERR_INVALID_ARGUMENT, "rate");
  o = opts, o.decay = 1.5;
  expect(o, SPT_ERR_INVALID_ARGUMENT, "decay");
  o = opts, o.max_fails = -1;
  expect(o, SPT_ERR_INVALID_ARGUMENT, "max_fails");
  o = opts, o.epoch_iters = 0;
  expect(o, SPT_ERR_INVALID_ARGUMENT, "epoch_iters");
  o = opts, o.beta1 = 1;
  expect(o, SPT_ERR_INVALID_ARGUMENT, "beta1");
  o = opts, o.beta2 = -0.1;
  expect(o, SPT_ERR_INVALID_ARGUMENT, "beta2");
  o = opts, o.epsilon = 0;
  expect(o, SPT_ERR_INVALID_ARGUMENT, "epsilon");
  o = opts, o.f_est_tol = std::nan("");
  expect(o, SPT_ERR_INVALID_ARGUMENT, "f_est_tol");
  o = opts, o.missing = x;
  expect(o, SPT_ERR_UNSUPPORTED, "missing entries");
  o = opts, o.loss = SPT_GCP_LOSS_BERNOULLI_LOGIT;
  expect(o, SPT_ERR_INVALID_ARGUMENT, "binary");
  spt_coo* empty = nullptr;
  ASSERT_EQ(spt_coo_create(ctx, SPT_FLOAT64, 2, dims.data(), &empty), SPT_OK);
  expect(opts, SPT_ERR_INVALID_ARGUMENT, "none", empty);
  spt_coo_free(empty);
  const spt_index huge[] = {4000000000u, 4000000000u, 4000000000u};
  spt_coo* big = nullptr;
  ASSERT_EQ(spt_coo_create(ctx, SPT_FLOAT64, 3, huge, &big), SPT_OK);
  expect(opts, SPT_ERR_UNSUPPORTED, "2^63", big);
  spt_coo_free(big);
  spt_coo_free(x);
  spt_context_free(ctx);
}

}  // namespace
}  // namespace spt::test
