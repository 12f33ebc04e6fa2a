// float32 you can trust, on the GPU: with the CUDA backend forced, every
// format's MTTKRP (HLS with its exact precision) on the planted tensor and
// on coads must be within 1e-6 (relative, Frobenius) of the exact product
// of the same float32 data, and the float32 GPU CP-ALS of an exact rank-3
// tensor must reach fit >= 0.99999 and converge at tol 1e-4 (its <X,P> is
// summed again over the nonzeros when the MTTKRP's rounding would move the
// fit by more than 1e-6). Skips without a usable device (the CPU
// counterpart is test_float32_accuracy.cpp).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "common/cuda_test_util.hpp"
#include "common/float32_accuracy.hpp"
#include "common/test_util.hpp"
#include "sptensor/sptensor.h"

namespace spt::test {
namespace {

spt_context* cuda_context() {
  spt_context* ctx = nullptr;
  EXPECT_EQ(spt_context_create(&ctx), SPT_OK);
  EXPECT_EQ(spt_context_set_backend(ctx, SPT_BACKEND_CUDA), SPT_OK) << spt_last_error(ctx);
  return ctx;
}

TEST(CudaFloat32Accuracy, EveryFormatOnAPlantedTensor) {
  SKIP_WITHOUT_DEVICE();
  const spt_coo_s x = f32::planted_tensor();
  spt_context* ctx = cuda_context();
  f32::check_every_format(ctx, x, 16, "GPU, planted tensor");
  spt_context_free(ctx);
}

TEST(CudaFloat32Accuracy, EveryFormatOnCoads) {
  SKIP_WITHOUT_DEVICE();
  spt_coo_s x;
  if (!read_data_tensor<float>("coads-climatology.tns.xz", &x)) GTEST_SKIP() << "coads-climatology.tns.xz not found";
  spt_context* ctx = cuda_context();
  // GPU HiCOO and HB-CSF in a non-root mode add into the output with
  // atomics; rows that take many additions go through copies of the
  // output summed in double (cuda/output_copies.cuh).
  f32::check_every_format(ctx, x, 16, "GPU, coads");
  spt_context_free(ctx);
}

// More than 65,536 cells, so the final fit is not recomputed from the dense
// residual (exact_final_fit): every reported fit comes from the sweeps.
TEST(CudaFloat32Accuracy, CpAlsFitOfAnExactRank3Tensor) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<spt_index> dims = {50, 45, 40};
  const spt_index rank = 3;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<std::vector<double>> f(3);
  for (uint32_t m = 0; m < 3; ++m) {
    f[m].resize(size_t(dims[m]) * rank);
    for (double& v : f[m]) v = unit(rng);
  }
  const spt_nnz nnz = spt_nnz(dims[0]) * dims[1] * dims[2];
  std::vector<spt_index> ind(3 * nnz);
  std::vector<float> val(nnz);
  spt_nnz k = 0;
  for (spt_index i = 0; i < dims[0]; ++i)
    for (spt_index j = 0; j < dims[1]; ++j)
      for (spt_index l = 0; l < dims[2]; ++l, ++k) {
        ind[k] = i;
        ind[nnz + k] = j;
        ind[2 * nnz + k] = l;
        double s = 0;
        for (spt_index r = 0; r < rank; ++r) s += f[0][i * rank + r] * f[1][j * rank + r] * f[2][l * rank + r];
        val[k] = static_cast<float>(s);
      }
  spt_coo* x = nullptr;
  ASSERT_EQ(spt_coo_create_from_arrays(nullptr, SPT_FLOAT32, 3, dims.data(), nnz, ind.data(), nnz, 0, val.data(), 0,
                                       &x),
            SPT_OK);
  spt_context* ctx = cuda_context();
  spt_cpd_options opts;
  ASSERT_EQ(spt_cpd_options_init(&opts), SPT_OK);
  opts.rank = rank;
  opts.max_iters = 1000;
  opts.tol = 1e-4;
  opts.seed = 4;  // seed 3 stalls near fit 0.42 (an ALS swamp) on the CPU as well
  spt_ktensor* kt = nullptr;
  ASSERT_GE(spt_cpd_als(ctx, x, &opts, &kt), 0) << spt_last_error(ctx);
  double fit = 0;
  int iters = 0;
  ASSERT_EQ(spt_ktensor_result(kt, &fit, &iters, nullptr), SPT_OK);
  EXPECT_GE(fit, 0.99999) << "after " << iters << " iterations";
  EXPECT_LT(iters, opts.max_iters) << "did not converge at tol 1e-4";
  const double* fits = nullptr;
  int count = 0;
  ASSERT_EQ(spt_ktensor_history(kt, &count, &fits, nullptr), SPT_OK);
  for (int i = 0; i < count; ++i) EXPECT_LE(fits[i], 1.0 + 1e-6) << "iteration " << i;
  spt_ktensor_free(kt);
  spt_context_free(ctx);
  spt_coo_free(x);
}

}  // namespace
}  // namespace spt::test
