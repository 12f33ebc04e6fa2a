// CP-APR on the GPU (the one loop of src/algo/cp_apr.cpp on the device steps
// of dispatch::make_device_cp_apr_steps) against the CPU CP-APR on COO
// groups from the same initial factors: random tensors of orders 3 and 4
// with repeated coordinates and empty slices, ranks that take each Phi
// lane-group width (8, 16, 32 lanes, and several columns per lane), a data
// tensor (tests/data), float64 and float32: same status and iteration
// count, the same KKT violation and log-likelihood per outer iteration,
// equal factors and lambda. The device runs the CPU's arithmetic in the
// CPU's order (cuda/cp_apr.cuh), so float64 must agree to 1e-10 relative;
// float32 gets a tolerance (below). Also: format HiCOO forced on CUDA is
// UNSUPPORTED, device out-of-memory (AUTO falls back with a note and the
// CPU's result, CUDA forced fails), the callback stopping a device run, and
// on a machine without a GPU, CUDA forced is a DEVICE error and AUTO runs
// the CPU loop. GPU tests skip with the reason when no device is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "algo/cp_apr.hpp"
#include "common/cuda_test_util.hpp"
#include "common/test_util.hpp"
#include "core/context.hpp"
#include "core/error.hpp"
#include "dispatch/cp_apr_steps.hpp"
#include "sptensor/cp_apr.h"
#include "sptensor/sptensor.h"

namespace spt::test {
namespace {

using ValueTypes = ::testing::Types<float, double>;

struct KtensorDeleter {
  void operator()(spt_ktensor* k) const { spt_ktensor_free(k); }
};

struct AprRun {
  spt_status status = SPT_OK;
  std::string error;
  std::unique_ptr<spt_ktensor, KtensorDeleter> k;
  std::vector<double> logliks, kkts;
  std::vector<std::string> log;
  int stop_after = 0;

  bool logged(const std::string& text) const { return spt::test::logged(log, text); }
};

int record_iteration(void* data, int iteration, double loglik, double kkt, double) {
  auto* run = static_cast<AprRun*>(data);
  run->logliks.push_back(loglik);
  run->kkts.push_back(kkt);
  return run->stop_after > 0 && iteration >= run->stop_after ? 1 : 0;
}

struct AprSettings {
  spt_index rank = 4;
  int outer = 8;
  int inner = 10;
  double tol = 1e-4;
  spt_tensor_format format = SPT_TENSOR_FORMAT_COO;
  int stop_after = 0;
};

// CP-APR through the C API on a context with `backend` (4 threads, verbose
// log recorded) from the user's initial factors.
template <typename T>
AprRun run_cp_apr(spt_backend backend, const spt_coo_s& x, const std::vector<DenseMatrix<T>>& init,
                  const AprSettings& s) {
  AprRun run;
  run.stop_after = s.stop_after;
  const ContextPtr owner = logging_context(backend, 2, &run.log, 4);
  spt_context* ctx = owner.get();
  const WrappedFactors handles(ctx, init);
  spt_cp_apr_options opts;
  EXPECT_EQ(spt_cp_apr_options_init(&opts), SPT_OK);
  opts.rank = s.rank;
  opts.max_outer_iters = s.outer;
  opts.max_inner_iters = s.inner;
  opts.tol = s.tol;
  opts.format = s.format;
  opts.init = SPT_CP_APR_INIT_USER;
  opts.init_factors = handles.data();
  opts.callback = record_iteration;
  opts.callback_data = &run;
  spt_ktensor* k = nullptr;
  run.status = spt_cp_apr(ctx, &x, &opts, &k);
  if (run.status < 0) run.error = spt_last_error(ctx);
  run.k.reset(k);
  return run;
}

// Positive random initial factors (dims[m] x rank), at least 0.05.
template <typename T>
std::vector<DenseMatrix<T>> apr_init(const std::vector<spt_index>& dims, spt_index rank, uint64_t seed) {
  std::vector<DenseMatrix<T>> out;
  for (size_t m = 0; m < dims.size(); ++m) {
    DenseMatrix<T> f = random_matrix<T>(dims[m], rank, seed + 31 * m);
    for (auto& v : f.values) v = std::fabs(v) + T(0.05);
    out.push_back(std::move(f));
  }
  return out;
}

// A nonnegative count tensor with repeated coordinates (kept, not summed)
// and empty slices: random coordinates in [0, dims/2) mapped to even
// indices of dims, so every odd index of every mode has no nonzero.
template <typename T>
spt_coo_s counts_with_gaps(const std::vector<spt_index>& dims, spt_nnz nnz, uint64_t seed) {
  RandomTensorSpec spec;
  for (spt_index d : dims) spec.dims.push_back(d / 2);
  spec.nnz = nnz;
  spec.seed = seed;
  spec.duplicates = true;
  spt_coo_s x = random_coo(dtype_of<T>(), spec);
  x.make_owned();
  x.dims = dims;
  for (uint32_t m = 0; m < x.order(); ++m)
    for (spt_nnz e = 0; e < x.nnz; ++e) x.own_ind[m][e] *= 2;
  T* v = x.template mutable_values<T>();
  for (spt_nnz e = 0; e < x.nnz; ++e) v[e] = std::floor(std::fabs(v[e]) * T(4)) + T(1);
  x.touched();
  return x;
}

// Tolerances of the comparison: relative, a factor entry against its
// column's largest magnitude (columns are 1-normalised; entries CP-APR
// drives towards 0 are compared at the column's scale).
//
// float64: 1e-10 (issue 26). The device repeats the CPU's operations in
// its order except the log-likelihood's sum over the nonzeros (a tree
// instead of per-thread chunks), so the factors are expected bit for bit
// and the log-likelihood to ~1e-15.
// float32: the same holds for the factors (every step rounds to float in
// the CPU's order); a host compiler that fuses multiply-adds in the CPU
// kernel (SPT_NATIVE builds) changes last bits of Phi, which the
// multiplicative updates carry through the iterations: 1e-4 relative
// (about 2^10 float ulps) on factors and lambda, and 1e-6 on the
// log-likelihood (computed in double from the float model), keep such a
// build passing while a wrong column, row or order still fails by far.
template <typename T>
struct Tolerance {
  static constexpr double factors = std::is_same_v<T, double> ? 1e-10 : 1e-4;
  static constexpr double loglik = std::is_same_v<T, double> ? 1e-10 : 1e-6;
};

template <typename T>
void expect_same_run(const AprRun& gpu, const AprRun& cpu, const std::string& what) {
  ASSERT_EQ(gpu.status, cpu.status) << what << ": " << gpu.error << " / " << cpu.error;
  ASSERT_TRUE(gpu.k && cpu.k) << what;
  EXPECT_TRUE(gpu.logged("CP-APR on the GPU")) << what;
  EXPECT_FALSE(cpu.logged("CP-APR on the GPU")) << what;
  const spt_ktensor_s& g = *gpu.k;
  const spt_ktensor_s& c = *cpu.k;
  EXPECT_EQ(g.iterations, c.iterations) << what;
  EXPECT_EQ(g.converged, c.converged) << what;
  ASSERT_EQ(gpu.logliks.size(), cpu.logliks.size()) << what;
  for (size_t i = 0; i < cpu.logliks.size(); ++i) {
    EXPECT_NEAR(gpu.logliks[i], cpu.logliks[i], Tolerance<T>::loglik * std::fabs(cpu.logliks[i]))
        << what << ", outer iteration " << i + 1;
    EXPECT_NEAR(gpu.kkts[i], cpu.kkts[i], Tolerance<T>::factors * std::max(1.0, std::fabs(cpu.kkts[i])))
        << what << ", outer iteration " << i + 1;
  }
  EXPECT_NEAR(g.fit, c.fit, Tolerance<T>::loglik * std::fabs(c.fit)) << what;
  ASSERT_EQ(g.rank, c.rank) << what;
  for (spt_index r = 0; r < c.rank; ++r) {
    const double cl = static_cast<double>(c.lambda.ptr<T>()[r]);
    EXPECT_NEAR(static_cast<double>(g.lambda.ptr<T>()[r]), cl, Tolerance<T>::factors * std::fabs(cl))
        << what << ", lambda " << r;
  }
  for (uint32_t m = 0; m < c.order(); ++m) {
    const spt_matrix_s& gf = *g.factors[m];
    const spt_matrix_s& cf = *c.factors[m];
    ASSERT_EQ(gf.rows, cf.rows);
    ASSERT_EQ(gf.cols, cf.cols);
    int reported = 0;
    for (spt_nnz r = 0; r < cf.cols; ++r) {
      double column_max = 0;
      for (spt_nnz i = 0; i < cf.rows; ++i) column_max = std::max(column_max, std::fabs(double(cf.at<T>(i, r))));
      for (spt_nnz i = 0; i < cf.rows; ++i) {
        const double expected = static_cast<double>(cf.at<T>(i, r));
        const double got = static_cast<double>(gf.at<T>(i, r));
        if (std::fabs(got - expected) > Tolerance<T>::factors * column_max && reported++ < 5)
          ADD_FAILURE() << what << ": factor " << m << " (" << i << ", " << r << ") = " << got << ", CPU "
                        << expected << " (column max " << column_max << ")";
      }
    }
  }
}

template <typename T>
class CudaCpApr : public ::testing::Test {};
TYPED_TEST_SUITE(CudaCpApr, ValueTypes);

// Orders 3 and 4, repeated coordinates and empty slices, ranks taking each
// lane-group width of the Phi kernel (5: 8 lanes with a tail past the four
// partial sums; 16: 16 lanes; 40: 32 lanes, two columns for some lanes).
TYPED_TEST(CudaCpApr, MatchesCpuOnCountsWithRepeatsAndEmptySlices) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  struct Case {
    std::vector<spt_index> dims;
    spt_nnz nnz;
    spt_index rank;
  };
  const Case cases[] = {{{40, 30, 24}, 3000, 5}, {{36, 20, 16, 10}, 2500, 16}, {{60, 50, 44}, 6000, 40}};
  uint64_t seed = 11;
  for (const Case& c : cases) {
    const spt_coo_s x = counts_with_gaps<T>(c.dims, c.nnz, seed++);
    AprSettings s;
    s.rank = c.rank;
    s.outer = 12;
    const auto init = apr_init<T>(x.dims, c.rank, seed * 7);
    const AprRun cpu = run_cp_apr<T>(SPT_BACKEND_CPU, x, init, s);
    const AprRun gpu = run_cp_apr<T>(SPT_BACKEND_CUDA, x, init, s);
    expect_same_run<T>(gpu, cpu, "order " + std::to_string(x.order()) + ", rank " + std::to_string(c.rank));
  }
}

// A data tensor (counts), run to convergence or the iteration limit with a
// tolerance that stops the inner iterations early in some modes (so the
// iteration counts and statuses are compared where they can differ).
TYPED_TEST(CudaCpApr, MatchesCpuOnDataTensor) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  for (const char* name : {"nations.tns.xz", "kinship.tns.xz", "umls.tns.xz"}) {
    spt_coo_s x;
    if (!read_data_tensor<T>(name, &x)) continue;
    AprSettings s;
    s.rank = 8;
    s.outer = 30;
    s.inner = 10;
    s.tol = 1e-3;
    const auto init = apr_init<T>(x.dims, s.rank, 5);
    const AprRun cpu = run_cp_apr<T>(SPT_BACKEND_CPU, x, init, s);
    const AprRun gpu = run_cp_apr<T>(SPT_BACKEND_CUDA, x, init, s);
    expect_same_run<T>(gpu, cpu, name);
    return;
  }
  GTEST_SKIP() << "no data tensor found";
}

// Format AUTO under CUDA runs the device steps too (Phi on COO groups) and
// matches the CPU on COO groups.
TEST(CudaCpAprApi, FormatAutoRunsOnTheGpu) {
  SKIP_WITHOUT_DEVICE();
  const spt_coo_s x = counts_with_gaps<double>({30, 26, 22}, 2000, 3);
  AprSettings s;
  s.rank = 6;
  const auto init = apr_init<double>(x.dims, s.rank, 9);
  const AprRun cpu = run_cp_apr<double>(SPT_BACKEND_CPU, x, init, s);
  s.format = SPT_TENSOR_FORMAT_AUTO;
  const AprRun gpu = run_cp_apr<double>(SPT_BACKEND_CUDA, x, init, s);
  expect_same_run<double>(gpu, cpu, "format AUTO");
}

// HiCOO forced with CUDA forced: the GPU has no HiCOO Phi.
TEST(CudaCpAprApi, HicooForcedOnCudaIsUnsupported) {
  SKIP_WITHOUT_DEVICE();
  const spt_coo_s x = counts_with_gaps<double>({20, 18, 16}, 800, 4);
  AprSettings s;
  s.format = SPT_TENSOR_FORMAT_HICOO;
  const auto init = apr_init<double>(x.dims, s.rank, 2);
  const AprRun gpu = run_cp_apr<double>(SPT_BACKEND_CUDA, x, init, s);
  EXPECT_EQ(gpu.status, SPT_ERR_UNSUPPORTED) << gpu.error;
  EXPECT_NE(gpu.error.find("HiCOO"), std::string::npos) << gpu.error;
  EXPECT_TRUE(gpu.logliks.empty());
}

// The callback stops the device run after two outer iterations, as on the
// CPU.
TEST(CudaCpAprApi, CallbackStopsTheDeviceRun) {
  SKIP_WITHOUT_DEVICE();
  const spt_coo_s x = counts_with_gaps<double>({30, 20, 24}, 2000, 8);
  AprSettings s;
  s.outer = 20;
  s.stop_after = 2;
  const auto init = apr_init<double>(x.dims, s.rank, 4);
  const AprRun cpu = run_cp_apr<double>(SPT_BACKEND_CPU, x, init, s);
  const AprRun gpu = run_cp_apr<double>(SPT_BACKEND_CUDA, x, init, s);
  EXPECT_EQ(gpu.logliks.size(), 2u);
  expect_same_run<double>(gpu, cpu, "stopped by the callback");
}

// SPT_CUDA_MEMORY_LIMIT makes the working set not fit: AUTO falls back to
// the CPU with a note and the CPU's result; CUDA forced is an
// OUT_OF_MEMORY error before any iteration.
TEST(CudaCpAprApi, OutOfMemoryFallsBackUnderAutoAndFailsUnderCuda) {
  SKIP_WITHOUT_DEVICE();
  const spt_coo_s x = counts_with_gaps<double>({3000, 2000, 40}, 20000, 6);
  AprSettings s;
  s.outer = 4;
  ASSERT_FALSE(dispatch::cp_apr_prefers_cpu(x.dims, x.nnz, s.rank, 4)) << "AUTO would not use the GPU";
  const auto init = apr_init<double>(x.dims, s.rank, 3);
  const AprRun cpu = run_cp_apr<double>(SPT_BACKEND_CPU, x, init, s);
  ASSERT_GE(cpu.status, 0) << cpu.error;
  ScopedEnv limit("SPT_CUDA_MEMORY_LIMIT", "1000");
  const AprRun automatic = run_cp_apr<double>(SPT_BACKEND_AUTO, x, init, s);
  ASSERT_GE(automatic.status, 0) << automatic.error;
  EXPECT_TRUE(automatic.logged("note: CP-APR runs on the CPU: the CUDA device is out of memory"));
  ASSERT_EQ(automatic.logliks.size(), cpu.logliks.size());
  for (size_t i = 0; i < cpu.logliks.size(); ++i) EXPECT_EQ(automatic.logliks[i], cpu.logliks[i]) << i;
  const AprRun forced = run_cp_apr<double>(SPT_BACKEND_CUDA, x, init, s);
  EXPECT_EQ(forced.status, SPT_ERR_OUT_OF_MEMORY) << forced.error;
  EXPECT_NE(forced.error.find("out of memory"), std::string::npos) << forced.error;
  EXPECT_TRUE(forced.logliks.empty());
}

// AUTO's size rule on any machine, and its effect on a machine with a GPU:
// a tiny problem under AUTO runs on the CPU with a note (the CPU's
// result), CUDA forced still runs on the GPU.
TEST(CudaCpAprApi, AutoRunsSmallProblemsOnTheCpu) {
  EXPECT_TRUE(dispatch::cp_apr_prefers_cpu({14, 14, 56}, 1992, 8, 1));             // nations
  EXPECT_FALSE(dispatch::cp_apr_prefers_cpu({979, 979, 804}, 894892, 16, 16));     // email-eu-day
  EXPECT_FALSE(dispatch::cp_apr_prefers_cpu({3000, 2000, 40}, 20000, 4, 4));
  SKIP_WITHOUT_DEVICE();
  const spt_coo_s x = counts_with_gaps<double>({30, 20, 10}, 1500, 5);
  AprSettings s;
  const auto init = apr_init<double>(x.dims, s.rank, 5);
  const AprRun automatic = run_cp_apr<double>(SPT_BACKEND_AUTO, x, init, s);
  const AprRun cpu = run_cp_apr<double>(SPT_BACKEND_CPU, x, init, s);
  const AprRun forced = run_cp_apr<double>(SPT_BACKEND_CUDA, x, init, s);
  ASSERT_GE(automatic.status, 0) << automatic.error;
  EXPECT_TRUE(automatic.logged("the tensor is small"));
  EXPECT_FALSE(automatic.logged("CP-APR on the GPU"));
  ASSERT_EQ(automatic.logliks.size(), cpu.logliks.size());
  for (size_t i = 0; i < cpu.logliks.size(); ++i) EXPECT_EQ(automatic.logliks[i], cpu.logliks[i]) << i;
  expect_same_run<double>(forced, cpu, "tiny tensor, CUDA forced");
}

// CPU-only machines (CI): CUDA forced (set on the internal context:
// spt_context_set_backend already refuses it) is a DEVICE error before any
// iteration; AUTO runs the CPU loop, the CPU backend's result.
TEST(CudaCpAprApi, ForcedCudaWithoutDeviceIsDeviceError) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present; this checks the CPU-only behaviour";
  const spt_coo_s x = counts_with_gaps<double>({20, 16, 12}, 600, 2);
  const auto init = apr_init<double>(x.dims, 3, 1);
  std::vector<spt_matrix_s> handles(init.size());
  std::vector<const spt_matrix_s*> init_ptrs;
  for (size_t m = 0; m < init.size(); ++m) {
    handles[m].rows = init[m].rows;
    handles[m].cols = init[m].cols;
    handles[m].ld = init[m].cols;
    handles[m].wrapped = const_cast<double*>(init[m].values.data());
    handles[m].wrapped_dtype = SPT_FLOAT64;
    init_ptrs.push_back(&handles[m]);
  }
  spt_cp_apr_options opts;
  ASSERT_EQ(spt_cp_apr_options_init(&opts), SPT_OK);
  opts.rank = 3;
  opts.max_outer_iters = 4;
  opts.init = SPT_CP_APR_INIT_USER;
  opts.init_factors = init_ptrs.data();
  int calls = 0;
  opts.callback = [](void* data, int, double, double, double) -> int {
    ++*static_cast<int*>(data);
    return 0;
  };
  opts.callback_data = &calls;
  spt_context_s forced;
  forced.backend = SPT_BACKEND_CUDA;
  spt_ktensor_s k;
  try {
    algo::cp_apr(forced, x, opts, k);
    FAIL() << "CP-APR with CUDA forced and no device should fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_DEVICE) << e.what();
    EXPECT_NE(std::string(e.what()).find("CUDA CP-APR failed"), std::string::npos) << e.what();
  }
  EXPECT_EQ(calls, 0);
  spt_context_s automatic, cpu;
  automatic.backend = SPT_BACKEND_AUTO;
  cpu.backend = SPT_BACKEND_CPU;
  spt_ktensor_s ka, kc;
  const spt_status sa = algo::cp_apr(automatic, x, opts, ka);
  const spt_status sc = algo::cp_apr(cpu, x, opts, kc);
  EXPECT_EQ(sa, sc);
  EXPECT_EQ(calls, 8);
  ASSERT_EQ(ka.fit_history.size(), kc.fit_history.size());
  for (size_t i = 0; i < kc.fit_history.size(); ++i) EXPECT_EQ(ka.fit_history[i], kc.fit_history[i]) << i;
}

}  // namespace
}  // namespace spt::test
