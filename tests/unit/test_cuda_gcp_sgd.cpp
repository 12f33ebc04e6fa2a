// GCP-SGD under the CUDA backend: the sampled MTTKRPs run on the GPU (the
// sampling, the sample kernel and the Adam steps on the host), so a run
// from the same seed draws the same samples as on the CPU and agrees with
// it to rounding. Under AUTO the run stays on the CPU (the same result as
// the CPU backend, bit for bit). Skipped without a usable CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/cuda_test_util.hpp"
#include "core/ktensor.hpp"
#include "sptensor/gcp.h"

namespace spt::test {
namespace {

struct SgdRun {
  spt_status status = SPT_OK;
  double estimate = 0;
  int epochs = 0;
  std::vector<double> history;
  std::vector<std::vector<double>> factors;
};

SgdRun run_sgd(spt_backend backend, const spt_coo* x, const spt_gcp_options& opts) {
  spt_context* ctx = nullptr;
  EXPECT_EQ(spt_context_create(&ctx), SPT_OK);
  EXPECT_EQ(spt_context_set_backend(ctx, backend), SPT_OK) << spt_last_error(ctx);
  spt_context_set_threads(ctx, 2);
  spt_ktensor* k = nullptr;
  SgdRun r;
  r.status = spt_gcp_opt(ctx, x, &opts, &k);
  EXPECT_TRUE(r.status == SPT_OK || r.status == SPT_WARN_NOT_CONVERGED) << spt_last_error(ctx);
  if (k) {
    int count = 0, converged = 0;
    const double* fits = nullptr;
    spt_ktensor_history(k, &count, &fits, nullptr);
    r.history.assign(fits, fits + count);
    spt_ktensor_result(k, &r.estimate, &r.epochs, &converged);
    for (uint32_t m = 0; m < k->order(); ++m)
      r.factors.emplace_back(k->factors[m]->ptr<double>(), k->factors[m]->ptr<double>() + size_t{k->dims[m]} * k->rank);
    spt_ktensor_free(k);
  }
  spt_context_free(ctx);
  return r;
}

// A random count tensor with `nnz` stored entries (coordinates may repeat).
spt_coo* random_counts(const std::vector<spt_index>& dims, spt_nnz nnz, uint64_t seed) {
  std::mt19937_64 gen(seed);
  const uint32_t order = static_cast<uint32_t>(dims.size());
  std::vector<spt_index> ind(static_cast<size_t>(nnz) * order);
  std::vector<double> vals(nnz);
  for (spt_nnz k = 0; k < nnz; ++k) {
    for (uint32_t m = 0; m < order; ++m) ind[m * nnz + k] = static_cast<spt_index>(gen() % dims[m]);
    vals[k] = 1 + double(gen() % 4);
  }
  spt_coo* x = nullptr;
  EXPECT_EQ(spt_coo_create_from_arrays(nullptr, SPT_FLOAT64, order, dims.data(), nnz, ind.data(), nnz, 0, vals.data(),
                                       0, &x),
            SPT_OK);
  return x;
}

// GCP-SGD options with the Poisson loss, `rank` and `seed`; the rest the defaults.
spt_gcp_options poisson_sgd_options(spt_index rank, uint64_t seed) {
  spt_gcp_options opts;
  spt_gcp_options_init(&opts);
  opts.rank = rank;
  opts.loss = SPT_GCP_LOSS_POISSON;
  opts.optimizer = SPT_GCP_OPTIMIZER_SGD;
  opts.seed = seed;
  return opts;
}

TEST(CudaGcpSgd, ForcedCudaAgreesWithTheCpu) {
  if (!have_device()) GTEST_SKIP() << "no usable CUDA device";
  // Small (a few thousand samples per step) and larger (the MTTKRPs of
  // 2 x 40000 samples), 3-way and 4-way.
  struct Case {
    std::vector<spt_index> dims;
    spt_nnz nnz;
    spt_nnz samples;
  };
  const Case cases[] = {{{200, 150, 100}, 20000, 2000}, {{3000, 2000, 500}, 400000, 40000}, {{60, 50, 40, 30}, 50000, 5000}};
  for (const Case& c : cases) {
    spt_coo* x = random_counts(c.dims, c.nnz, 7 + c.nnz);
    spt_gcp_options opts = poisson_sgd_options(8, 5);
    opts.rate = 1e-2;
    opts.epoch_iters = 5;
    opts.max_iters = 2;
    opts.gradient_nonzeros = opts.gradient_zeros = c.samples;
    const SgdRun gpu = run_sgd(SPT_BACKEND_CUDA, x, opts);
    const SgdRun cpu = run_sgd(SPT_BACKEND_CPU, x, opts);
    ASSERT_EQ(gpu.epochs, cpu.epochs);
    ASSERT_EQ(gpu.factors.size(), cpu.factors.size());
    EXPECT_NEAR(gpu.estimate, cpu.estimate, 1e-8 * std::fabs(cpu.estimate)) << "nnz " << c.nnz;
    for (size_t n = 0; n < cpu.factors.size(); ++n) {
      double worst = 0, scale = 0;
      for (size_t e = 0; e < cpu.factors[n].size(); ++e) {
        worst = std::max(worst, std::fabs(gpu.factors[n][e] - cpu.factors[n][e]));
        scale = std::max(scale, std::fabs(cpu.factors[n][e]));
      }
      EXPECT_LE(worst, 1e-8 * scale) << "nnz " << c.nnz << " mode " << n;
    }
    spt_coo_free(x);
  }
}

TEST(CudaGcpSgd, AutoRunsOnTheCpu) {
  if (!have_device()) GTEST_SKIP() << "no usable CUDA device";
  spt_coo* x = random_counts({100, 80, 60}, 5000, 3);
  spt_gcp_options opts = poisson_sgd_options(4, 2);
  opts.epoch_iters = 10;
  opts.max_iters = 2;
  const SgdRun automatic = run_sgd(SPT_BACKEND_AUTO, x, opts);
  const SgdRun cpu = run_sgd(SPT_BACKEND_CPU, x, opts);
  EXPECT_EQ(automatic.history, cpu.history);
  EXPECT_EQ(automatic.factors, cpu.factors);
  spt_coo_free(x);
}

}  // namespace
}  // namespace spt::test
