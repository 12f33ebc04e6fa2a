// CP-APR: the Pi/Phi kernels against a dense brute-force computation
// (orders 3-4, f32/f64, 1-3 threads, thread-count independence), the
// log-likelihood against a direct evaluation, monotone log-likelihood over
// outer iterations, recovery of a planted Poisson low-rank tensor, and the
// C API's argument errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <random>
#include <vector>

#include "algo/cp_apr.hpp"
#include "common/summaries.hpp"
#include "core/error.hpp"
#include "core/hicoo.hpp"
#include "core/ktensor.hpp"
#include "dispatch/cp_apr_steps.hpp"
#include "kernels/kernels.hpp"
#include "common/test_util.hpp"
#include "sptensor/cp_apr.h"

namespace spt::test {
namespace {

using spt::ModeGroups;

template <typename T>
spt_dtype dtype_of_t() {
  return std::is_same_v<T, float> ? SPT_FLOAT32 : SPT_FLOAT64;
}

// Random nonnegative tensor: random_coo with |values| (duplicates kept).
template <typename T>
spt_coo_s nonneg_coo(const std::vector<spt_index>& dims, spt_nnz nnz, uint64_t seed) {
  RandomTensorSpec spec;
  spec.dims = dims;
  spec.nnz = nnz;
  spec.seed = seed;
  spec.duplicates = true;
  spt_coo_s x = random_coo(dtype_of_t<T>(), spec);
  x.make_owned();
  T* v = x.mutable_values<T>();
  for (spt_nnz e = 0; e < x.nnz; ++e) v[e] = std::fabs(v[e]) * T(3);
  return x;
}

template <typename T>
DenseMatrix<T> nonneg_matrix(spt_nnz rows, spt_nnz cols, uint64_t seed) {
  DenseMatrix<T> m = random_matrix<T>(rows, cols, seed);
  for (auto& v : m.values) v = std::fabs(v);
  return m;
}

// Phi by brute force over every dense index: X dense (duplicates summed),
// Phi(i,:) = sum over idx with idx_mode = i and X(idx) != 0 of
// X(idx) / max(<A(i,:), pi(idx)>, eps) * pi(idx), pi(idx) the Hadamard
// product of the other factors' rows.
template <typename T>
std::vector<double> dense_phi(const spt_coo_s& x, uint32_t mode, const std::vector<DenseMatrix<T>>& f, double eps) {
  const uint32_t order = x.order();
  const spt_nnz rank = f[0].cols;
  uint64_t total = 1;
  for (auto d : x.dims) total *= d;
  std::vector<double> dense(total, 0.0);
  for (spt_nnz e = 0; e < x.nnz; ++e) {
    uint64_t lin = 0, stride = 1;
    for (uint32_t m = 0; m < order; ++m) {
      lin += stride * x.ind[m][e];
      stride *= x.dims[m];
    }
    dense[lin] += static_cast<double>(x.values<T>()[e]);
  }
  std::vector<double> phi(static_cast<size_t>(x.dims[mode]) * rank, 0.0);
  std::vector<spt_index> idx(order);
  std::vector<double> pi(rank);
  for (uint64_t lin = 0; lin < total; ++lin) {
    if (dense[lin] == 0) continue;
    uint64_t rest = lin;
    for (uint32_t m = 0; m < order; ++m) {
      idx[m] = static_cast<spt_index>(rest % x.dims[m]);
      rest /= x.dims[m];
    }
    double v = 0;
    for (spt_nnz r = 0; r < rank; ++r) {
      pi[r] = 1;
      for (uint32_t m = 0; m < order; ++m)
        if (m != mode) pi[r] *= static_cast<double>(f[m](idx[m], r));
      v += static_cast<double>(f[mode](idx[mode], r)) * pi[r];
    }
    const double w = dense[lin] / std::max(v, eps);
    for (spt_nnz r = 0; r < rank; ++r) phi[idx[mode] * rank + r] += w * pi[r];
  }
  return phi;
}

template <typename T>
void check_phi_vs_dense() {
  const std::vector<std::vector<spt_index>> shapes = {{7, 5, 6}, {4, 6, 3, 5}, {1, 9, 4}};
  uint64_t seed = 11;
  // Rank 3 runs the generic kernel, 8/16/32 the fixed-rank (unrolled) ones.
  for (const spt_nnz rank : {3, 8, 16, 32})
  for (const auto& dims : shapes) {
    const spt_coo_s x = nonneg_coo<T>(dims, 60, seed++);
    std::vector<DenseMatrix<T>> f;
    for (auto d : dims) f.push_back(nonneg_matrix<T>(d, rank, seed++));
    // One zero row so some model values hit the epsilon clamp.
    for (spt_nnz r = 0; r < rank; ++r) f[0](0, r) = T(0);
    std::vector<ConstMatRef<T>> fr;
    for (auto& m : f) fr.push_back(m.cref());
    for (uint32_t mode = 0; mode < x.order(); ++mode) {
      const std::vector<double> want = dense_phi<T>(x, mode, f, 1e-10);
      const ModeGroups g = spt::group_by_mode(x, mode);
      std::vector<T> first;
      for (int threads : {1, 2, 3}) {
        DenseMatrix<T> phi(dims[mode], rank);
        kernels::cpu::cp_apr_phi(kernels::Exec{threads}, g, mode, fr.data(), 1e-10, phi.ref());
        DenseMatrix<T> ref(dims[mode], rank);
        kernels::reference::cp_apr_phi(kernels::Exec{1}, g, mode, fr.data(), 1e-10, ref.ref());
        double scale = 1;
        for (double w : want) scale = std::max(scale, std::fabs(w));
        for (spt_nnz i = 0; i < phi.rows; ++i)
          for (spt_nnz r = 0; r < rank; ++r)
          for (const DenseMatrix<T>* m : {&phi, &ref})
            ASSERT_NEAR(static_cast<double>((*m)(i, r)), want[i * rank + r], tolerance<T>() * scale)
                << (m == &ref ? "reference" : "cpu") << " rank " << rank << " order " << dims.size() << " mode "
                << mode << " threads " << threads;
        std::vector<T> got(phi.values.begin(), phi.values.end());
        if (first.empty()) first = got;
        else EXPECT_EQ(first, got) << "Phi depends on the thread count";
      }
    }
  }
}

TEST(CpAprPhi, MatchesDenseBruteForceFloat64) { check_phi_vs_dense<double>(); }
TEST(CpAprPhi, MatchesDenseBruteForceFloat32) { check_phi_vs_dense<float>(); }

// Count tensor drawn from a planted nonnegative rank-R Poisson model over
// every dense index (zeros dropped); the planted model returned in `planted`.
spt_coo_s planted_counts(const std::vector<spt_index>& dims, spt_index rank, uint64_t seed, spt_ktensor_s& planted) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(0, 1);
  init_ktensor(planted, SPT_FLOAT64, dims, rank);
  for (uint32_t m = 0; m < dims.size(); ++m) {
    double* a = planted.factors[m]->ptr<double>();
    for (spt_index i = 0; i < dims[m]; ++i)
      for (spt_index r = 0; r < rank; ++r) {
        // Sparse-ish, distinct components: big on a block, small elsewhere.
        const bool block = (i * rank / dims[m]) == r;
        a[i * rank + r] = block ? 1.0 + u(gen) : 0.05 * u(gen);
      }
  }
  for (spt_index r = 0; r < rank; ++r) planted.lambda.ptr<double>()[r] = 1.0;
  // Scale so the mean count is about 0.8 on the blocks.
  std::vector<spt_index> idx(dims.size());
  uint64_t total = 1;
  for (auto d : dims) total *= d;
  std::vector<std::vector<spt_index>> subs(dims.size());
  std::vector<double> vals;
  for (uint64_t lin = 0; lin < total; ++lin) {
    uint64_t rest = lin;
    for (size_t m = 0; m < dims.size(); ++m) {
      idx[m] = static_cast<spt_index>(rest % dims[m]);
      rest /= dims[m];
    }
    double mv = 0;
    for (spt_index r = 0; r < rank; ++r) {
      double p = planted.lambda.ptr<double>()[r];
      for (size_t m = 0; m < dims.size(); ++m) p *= planted.factors[m]->ptr<double>()[idx[m] * rank + r];
      mv += p;
    }
    std::poisson_distribution<int> pois(mv);
    const int c = pois(gen);
    if (c > 0) {
      for (size_t m = 0; m < dims.size(); ++m) subs[m].push_back(idx[m]);
      vals.push_back(c);
    }
  }
  spt_coo_s x;
  x.init_owned(SPT_FLOAT64, dims, vals.size());
  for (size_t m = 0; m < dims.size(); ++m) std::copy(subs[m].begin(), subs[m].end(), x.mutable_ind(m));
  std::copy(vals.begin(), vals.end(), x.mutable_values<double>());
  return x;
}

TEST(CpApr, LogLikelihoodNonDecreasingAndMatchesAccessor) {
  spt_ktensor_s planted;
  const spt_coo_s x = planted_counts({12, 10, 8}, 3, 5, planted);
  spt_cp_apr_options opts;
  ASSERT_EQ(spt_cp_apr_options_init(&opts), SPT_OK);
  opts.rank = 4;
  opts.max_outer_iters = 40;
  opts.tol = 0;  // never converge: exercise every inner iteration
  opts.seed = 3;
  // MU steps never lower the log-likelihood; the kappa shift of
  // inadmissible zeros (pyttb does the same) can, so it is off here.
  opts.kappa = 0;
  spt_ktensor* k = nullptr;
  ASSERT_EQ(spt_cp_apr(nullptr, &x, &opts, &k), SPT_WARN_NOT_CONVERGED);
  int count = 0;
  const double* ll = nullptr;
  ASSERT_EQ(spt_ktensor_history(k, &count, &ll, nullptr), SPT_OK);
  ASSERT_EQ(count, 40);
  for (int i = 1; i < count; ++i) EXPECT_GE(ll[i], ll[i - 1] - 1e-9 * std::fabs(ll[i - 1])) << "iteration " << i + 1;
  double fit = 0, direct = 0;
  int iters = 0, conv = 0;
  ASSERT_EQ(spt_ktensor_result(k, &fit, &iters, &conv), SPT_OK);
  ASSERT_EQ(spt_cp_apr_loglikelihood(nullptr, &x, k, &direct), SPT_OK);
  EXPECT_NEAR(fit, ll[count - 1], 1e-12 * std::fabs(fit));
  EXPECT_NEAR(direct, fit, 1e-10 * std::fabs(fit));
  // Factors are nonnegative with unit 1-norm columns, lambda sorted.
  const spt_index rank = spt_test::info_of(k).rank;
  const double* lambda = k->lambda.ptr<double>();
  for (spt_index r = 1; r < rank; ++r) EXPECT_GE(lambda[r - 1], lambda[r]);
  for (uint32_t m = 0; m < 3; ++m)
    for (spt_index r = 0; r < rank; ++r) {
      double s = 0;
      for (spt_index i = 0; i < k->dims[m]; ++i) {
        const double v = k->factors[m]->ptr<double>()[i * rank + r];
        EXPECT_GE(v, 0.0);
        s += v;
      }
      EXPECT_NEAR(s, 1.0, 1e-12);
    }
  spt_ktensor_free(k);
}

// Factor match score of two models (1-normalised factors, greedy matching
// on the congruence of 2-normalised columns).
double factor_match(const spt_ktensor_s& a, const spt_ktensor_s& b) {
  const spt_index R = a.rank;
  std::vector<bool> used(R, false);
  double total = 0;
  for (spt_index r = 0; r < R; ++r) {
    double best = -1;
    spt_index arg = 0;
    for (spt_index s = 0; s < R; ++s) {
      if (used[s]) continue;
      double score = 1;
      for (uint32_t m = 0; m < a.order(); ++m) {
        double dot = 0, na = 0, nb = 0;
        for (spt_index i = 0; i < a.dims[m]; ++i) {
          const double va = a.factors[m]->ptr<double>()[i * R + r], vb = b.factors[m]->ptr<double>()[i * R + s];
          dot += va * vb;
          na += va * va;
          nb += vb * vb;
        }
        score *= dot / std::sqrt(na * nb);
      }
      if (score > best) best = score, arg = s;
    }
    used[arg] = true;
    total += best;
  }
  return total / R;
}

TEST(CpApr, RecoversPlantedPoissonTensor) {
  spt_ktensor_s planted;
  const spt_coo_s x = planted_counts({30, 24, 20}, 3, 9, planted);
  const double planted_ll = algo::cp_apr_loglikelihood(x, planted, 1);
  spt_cp_apr_options opts;
  spt_cp_apr_options_init(&opts);
  opts.rank = 3;
  opts.max_outer_iters = 300;
  opts.seed = 1;
  spt_ktensor* k = nullptr;
  const spt_status st = spt_cp_apr(nullptr, &x, &opts, &k);
  ASSERT_TRUE(st == SPT_OK || st == SPT_WARN_NOT_CONVERGED);
  double ll = 0;
  spt_ktensor_result(k, &ll, nullptr, nullptr);
  // The maximum-likelihood fit is at least as likely as the planted model
  // (up to the optimisation's tolerance).
  EXPECT_GE(ll, planted_ll - 1e-3 * std::fabs(planted_ll)) << "planted " << planted_ll;
  EXPECT_GT(factor_match(planted, *k), 0.95);
  spt_ktensor_free(k);
}

TEST(CpApr, Float32RunsAndAgreesWithFloat64) {
  spt_ktensor_s planted;
  const spt_coo_s x = planted_counts({10, 9, 8}, 2, 4, planted);
  spt_coo_s xf;
  xf.init_owned(SPT_FLOAT32, x.dims, x.nnz);
  for (uint32_t m = 0; m < 3; ++m) std::copy(x.ind[m], x.ind[m] + x.nnz, xf.mutable_ind(m));
  for (spt_nnz e = 0; e < x.nnz; ++e) xf.mutable_values<float>()[e] = static_cast<float>(x.values<double>()[e]);
  spt_cp_apr_options opts;
  spt_cp_apr_options_init(&opts);
  opts.rank = 2;
  opts.max_outer_iters = 20;
  opts.tol = 0;
  opts.seed = 7;
  spt_ktensor *kd = nullptr, *kf = nullptr;
  spt_cp_apr(nullptr, &x, &opts, &kd);
  spt_cp_apr(nullptr, &xf, &opts, &kf);
  ASSERT_NE(kd, nullptr);
  ASSERT_NE(kf, nullptr);
  double lld = 0, llf = 0;
  spt_ktensor_result(kd, &lld, nullptr, nullptr);
  spt_ktensor_result(kf, &llf, nullptr, nullptr);
  // Random init draws differ per dtype (as CP-ALS), so compare loosely.
  EXPECT_NEAR(llf, lld, 1e-2 * std::fabs(lld));
  spt_ktensor_free(kd);
  spt_ktensor_free(kf);
}

int stop_at_two(void* data, int iteration, double loglik, double kkt, double seconds) {
  auto* seen = static_cast<std::vector<double>*>(data);
  seen->push_back(loglik);
  EXPECT_GE(kkt, 0.0);
  EXPECT_GE(seconds, 0.0);
  return iteration >= 2;
}

TEST(CpApr, CallbackSeesEveryIterationAndCanStop) {
  spt_ktensor_s planted;
  const spt_coo_s x = planted_counts({8, 7, 6}, 2, 3, planted);
  spt_cp_apr_options opts;
  spt_cp_apr_options_init(&opts);
  opts.rank = 2;
  std::vector<double> seen;
  opts.callback = stop_at_two;
  opts.callback_data = &seen;
  spt_ktensor* k = nullptr;
  ASSERT_EQ(spt_cp_apr(nullptr, &x, &opts, &k), SPT_WARN_NOT_CONVERGED);
  int iters = 0, count = 0;
  const double* ll = nullptr;
  spt_ktensor_result(k, nullptr, &iters, nullptr);
  spt_ktensor_history(k, &count, &ll, nullptr);
  EXPECT_EQ(iters, 2);
  ASSERT_EQ(count, 2);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], ll[0]);
  EXPECT_EQ(seen[1], ll[1]);
  spt_ktensor_free(k);
}

TEST(CpApr, RejectsBadArguments) {
  spt_coo_s x = nonneg_coo<double>({5, 4, 3}, 20, 2);
  spt_cp_apr_options opts;
  ASSERT_EQ((spt_cp_apr_options_init)(nullptr), SPT_ERR_INVALID_ARGUMENT);
  spt_cp_apr_options_init(&opts);
  opts.rank = 2;
  spt_ktensor* k = nullptr;
  EXPECT_EQ(spt_cp_apr(nullptr, nullptr, &opts, &k), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_cp_apr(nullptr, &x, nullptr, &k), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_cp_apr(nullptr, &x, &opts, nullptr), SPT_ERR_INVALID_ARGUMENT);
  opts.rank = 0;
  EXPECT_EQ(spt_cp_apr(nullptr, &x, &opts, &k), SPT_ERR_INVALID_ARGUMENT);
  opts.rank = 2;
  opts.epsilon = 0;
  EXPECT_EQ(spt_cp_apr(nullptr, &x, &opts, &k), SPT_ERR_INVALID_ARGUMENT);
  opts.epsilon = 1e-10;
  opts.init = SPT_CP_APR_INIT_USER;
  EXPECT_EQ(spt_cp_apr(nullptr, &x, &opts, &k), SPT_ERR_INVALID_ARGUMENT);
  opts.init = SPT_CP_APR_INIT_RANDOM;
  spt_cp_apr_options uninit{};
  EXPECT_EQ(spt_cp_apr(nullptr, &x, &uninit, &k), SPT_ERR_INVALID_ARGUMENT);
  x.mutable_values<double>()[7] = -1.5;
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  EXPECT_EQ(spt_cp_apr(ctx, &x, &opts, &k), SPT_ERR_INVALID_ARGUMENT);
  const char* msg = spt_last_error(ctx);
  ASSERT_NE(msg, nullptr);
  EXPECT_NE(std::strstr(msg, "nonzero 7"), nullptr) << msg;
  EXPECT_NE(std::strstr(msg, "-1.5"), nullptr) << msg;
  spt_context_free(ctx);
  EXPECT_EQ(k, nullptr);
  double ll = 0;
  EXPECT_EQ(spt_cp_apr_loglikelihood(nullptr, &x, nullptr, &ll), SPT_ERR_INVALID_ARGUMENT);
}

// ---- Phi on HiCOO and the format option ----

// Phi by the COO reference kernel (the oracle for the HiCOO kernels).
template <typename T>
DenseMatrix<T> reference_phi(const spt_coo_s& x, uint32_t mode, const std::vector<ConstMatRef<T>>& fr, double eps) {
  DenseMatrix<T> out(x.dims[mode], fr[0].cols);
  kernels::reference::cp_apr_phi(kernels::Exec{1}, spt::group_by_mode(x, mode), mode, fr.data(), eps, out.ref());
  return out;
}

template <typename T>
void check_phi_hicoo() {
  const std::vector<std::vector<spt_index>> shapes = {{40, 7, 33}, {9, 20, 6, 11}, {5, 6, 7, 4, 9}, {300, 3, 2}};
  const double tol = sizeof(T) == 8 ? 1e-12 : 2e-5;
  uint64_t seed = 101;
  for (const auto& dims : shapes)
    for (const spt_nnz rank : {3, 8, 16}) {
      const spt_coo_s x = nonneg_coo<T>(dims, 500, seed++);
      std::vector<DenseMatrix<T>> f;
      for (auto d : dims) f.push_back(nonneg_matrix<T>(d, rank, seed++));
      for (spt_nnz r = 0; r < rank; ++r) f[1](0, r) = T(0);  // model values hitting the epsilon clamp
      const std::vector<ConstMatRef<T>> fr = crefs(f);
      for (const uint32_t block : {2u, 4u, 16u, 0u})
        for (const HicooStrategy strategy :
             {HicooStrategy::automatic, HicooStrategy::direct, HicooStrategy::privatized}) {
          hicoo::Params params;
          params.block_size = block;
          params.strategy = strategy;
          const spt_hicoo_s h = hicoo::from_coo(x, params, 2);
          for (uint32_t mode = 0; mode < x.order(); ++mode) {
            const DenseMatrix<T> want = reference_phi<T>(x, mode, fr, 1e-10);
            DenseMatrix<T> ref(dims[mode], rank);
            kernels::reference::cp_apr_phi_hicoo(kernels::Exec{1}, h, mode, fr.data(), 1e-10, ref.ref());
            std::vector<T> first;
            for (int threads : {1, 2, 3}) {
              DenseMatrix<T> got(dims[mode], rank);
              kernels::cpu::cp_apr_phi_hicoo(kernels::Exec{threads}, h, mode, fr.data(), 1e-10, got.ref());
              for (spt_nnz i = 0; i < got.rows; ++i)
                for (spt_nnz r = 0; r < rank; ++r)
                  for (const DenseMatrix<T>* m : {&got, &ref})
                    ASSERT_LE(std::fabs(double((*m)(i, r)) - double(want(i, r))), tol * std::fabs(double(want(i, r))))
                        << (m == &ref ? "reference" : "cpu") << " order " << dims.size() << " rank " << rank
                        << " B " << block << " strategy " << int(strategy) << " mode " << mode << " threads "
                        << threads << " at (" << i << "," << r << ")";
              std::vector<T> v(got.values.begin(), got.values.end());
              if (first.empty()) first = v;
              else EXPECT_EQ(first, v) << "HiCOO Phi depends on the thread count";
            }
          }
        }
    }
}

TEST(CpAprPhiHicoo, MatchesReferenceFloat64) { check_phi_hicoo<double>(); }
TEST(CpAprPhiHicoo, MatchesReferenceFloat32) { check_phi_hicoo<float>(); }

TEST(CpAprPhiHicoo, ForcedPrivatizedMatchesReference) {
  // Exec's privatized request forces the fixed-chunk path on any mode.
  const spt_coo_s x = nonneg_coo<double>({64, 50, 3}, 3000, 77);
  const std::vector<DenseMatrix<double>> f = {nonneg_matrix<double>(64, 8, 1), nonneg_matrix<double>(50, 8, 2),
                                              nonneg_matrix<double>(3, 8, 3)};
  const std::vector<ConstMatRef<double>> fr = crefs(f);
  const spt_hicoo_s h = hicoo::from_coo(x, hicoo::Params{}, 2);
  for (uint32_t mode = 0; mode < 3; ++mode) {
    const DenseMatrix<double> want = reference_phi<double>(x, mode, fr, 1e-10);
    for (int threads : {1, 3}) {
      kernels::Exec exec{threads};
      exec.mttkrp_strategy = kernels::MttkrpStrategy::privatized;
      DenseMatrix<double> got(x.dims[mode], 8);
      kernels::cpu::cp_apr_phi_hicoo(exec, h, mode, fr.data(), 1e-10, got.ref());
      for (size_t i = 0; i < got.values.size(); ++i)
        ASSERT_LE(std::fabs(got.values[i] - want.values[i]), 1e-12 * std::fabs(want.values[i])) << "mode " << mode;
    }
  }
}

struct AprRun {
  std::vector<double> loglik;
  std::vector<std::vector<double>> factors;
  std::vector<double> lambda;
};

AprRun run_apr(const spt_coo_s& x, spt_tensor_format format, int threads, int iters, spt_index rank) {
  spt_context* ctx = nullptr;
  EXPECT_EQ(spt_context_create(&ctx), SPT_OK);
  spt_context_set_threads(ctx, threads);
  spt_cp_apr_options opts;
  spt_cp_apr_options_init(&opts);
  opts.rank = rank;
  opts.max_outer_iters = iters;
  opts.tol = 0;
  opts.seed = 11;
  opts.format = format;
  spt_ktensor* k = nullptr;
  EXPECT_EQ(spt_cp_apr(ctx, &x, &opts, &k), SPT_WARN_NOT_CONVERGED) << spt_last_error(ctx);
  AprRun run;
  if (k) {
    int count = 0;
    const double* ll = nullptr;
    spt_ktensor_history(k, &count, &ll, nullptr);
    run.loglik.assign(ll, ll + count);
    for (uint32_t m = 0; m < x.order(); ++m) {
      std::vector<double> v(static_cast<size_t>(x.dims[m]) * rank);
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = x.dtype() == SPT_FLOAT64 ? k->factors[m]->ptr<double>()[i] : k->factors[m]->ptr<float>()[i];
      run.factors.push_back(v);
    }
    for (spt_index r = 0; r < rank; ++r)
      run.lambda.push_back(x.dtype() == SPT_FLOAT64 ? k->lambda.ptr<double>()[r] : k->lambda.ptr<float>()[r]);
  }
  spt_ktensor_free(k);
  spt_context_free(ctx);
  return run;
}

TEST(CpApr, HicooFormatMatchesCoo) {
  for (const std::vector<spt_index>& dims : {std::vector<spt_index>{12, 10, 8}, std::vector<spt_index>{7, 6, 5, 4}}) {
    spt_ktensor_s planted;
    const spt_coo_s x = planted_counts(dims, 3, 21, planted);
    const AprRun coo = run_apr(x, SPT_TENSOR_FORMAT_COO, 2, 25, 3);
    const AprRun hic = run_apr(x, SPT_TENSOR_FORMAT_HICOO, 2, 25, 3);
    ASSERT_EQ(coo.loglik.size(), 25u);
    ASSERT_EQ(hic.loglik.size(), 25u);
    for (size_t i = 0; i < coo.loglik.size(); ++i)
      EXPECT_NEAR(hic.loglik[i], coo.loglik[i], 1e-10 * std::fabs(coo.loglik[i])) << "iteration " << i + 1;
    for (size_t m = 0; m < coo.factors.size(); ++m)
      for (size_t i = 0; i < coo.factors[m].size(); ++i)
        EXPECT_NEAR(hic.factors[m][i], coo.factors[m][i], 1e-8) << "mode " << m;
    // Factors are thread-count independent, bit for bit (the log-likelihood
    // sums per thread, so it may differ in the last bits).
    for (int threads : {1, 3}) {
      const AprRun other = run_apr(x, SPT_TENSOR_FORMAT_HICOO, threads, 25, 3);
      EXPECT_EQ(other.factors, hic.factors) << threads << " threads";
      EXPECT_EQ(other.lambda, hic.lambda) << threads << " threads";
      for (size_t i = 0; i < hic.loglik.size(); ++i)
        EXPECT_NEAR(other.loglik[i], hic.loglik[i], 1e-13 * std::fabs(hic.loglik[i])) << threads << " threads";
    }
  }
}

TEST(CpApr, HicooFormatMatchesCooFloat32) {
  spt_ktensor_s planted;
  const spt_coo_s xd = planted_counts({10, 9, 8}, 2, 4, planted);
  spt_coo_s x = copy_coo(xd, SPT_FLOAT32);
  const AprRun coo = run_apr(x, SPT_TENSOR_FORMAT_COO, 2, 10, 2);
  const AprRun hic = run_apr(x, SPT_TENSOR_FORMAT_HICOO, 2, 10, 2);
  ASSERT_EQ(hic.loglik.size(), coo.loglik.size());
  for (size_t i = 0; i < coo.loglik.size(); ++i)
    EXPECT_NEAR(hic.loglik[i], coo.loglik[i], 1e-5 * std::fabs(coo.loglik[i])) << "iteration " << i + 1;
}

TEST(CpApr, AutoFormatPicksByBlockRatioAndMatchesThatFormat) {
  // Dense small counts: HiCOO compresses -> HiCOO.
  spt_ktensor_s planted;
  const spt_coo_s dense_counts = planted_counts({12, 10, 8}, 3, 5, planted);
  // Hypersparse: a few nonzeros scattered over a huge index space, one per
  // block (alpha_b = 1) -> COO groups.
  RandomTensorSpec spec;
  spec.dims = {200000, 150000, 100000};
  spec.nnz = 400;
  spec.seed = 8;
  spec.skewed = false;
  const spt_coo_s scattered = random_coo(SPT_FLOAT64, spec);  // values in [-1, 1): made nonnegative below
  spt_coo_s scattered_nonneg = copy_coo(scattered, SPT_FLOAT64);
  for (spt_nnz e = 0; e < scattered_nonneg.nnz; ++e)
    scattered_nonneg.mutable_values<double>()[e] = std::fabs(scattered_nonneg.mutable_values<double>()[e]) + 0.5;
  std::string why;
  spt_context_s& ctx = resolve(static_cast<spt_context*>(nullptr));
  EXPECT_EQ(algo::cp_apr_choose_format(ctx, dense_counts, SPT_TENSOR_FORMAT_AUTO, nullptr, &why),
            SPT_TENSOR_FORMAT_HICOO)
      << why;
  EXPECT_NE(why.find("AUTO"), std::string::npos);
  EXPECT_EQ(algo::cp_apr_choose_format(ctx, scattered_nonneg, SPT_TENSOR_FORMAT_AUTO, nullptr, &why),
            SPT_TENSOR_FORMAT_COO)
      << why;
  const AprRun a1 = run_apr(dense_counts, SPT_TENSOR_FORMAT_AUTO, 2, 5, 3);
  const AprRun h1 = run_apr(dense_counts, SPT_TENSOR_FORMAT_HICOO, 2, 5, 3);
  EXPECT_EQ(a1.loglik, h1.loglik);
  const AprRun a2 = run_apr(scattered_nonneg, SPT_TENSOR_FORMAT_AUTO, 2, 5, 3);
  const AprRun c2 = run_apr(scattered_nonneg, SPT_TENSOR_FORMAT_COO, 2, 5, 3);
  EXPECT_EQ(a2.loglik, c2.loglik);
  EXPECT_EQ(a2.factors, c2.factors);
}

TEST(CpApr, RejectsBadFormatAndAcceptsTheOlderOptionsLayout) {
  spt_ktensor_s planted;
  const spt_coo_s x = planted_counts({8, 7, 6}, 2, 3, planted);
  spt_cp_apr_options opts;
  spt_cp_apr_options_init(&opts);
  EXPECT_EQ(opts.format, SPT_TENSOR_FORMAT_AUTO);
  opts.rank = 2;
  opts.max_outer_iters = 3;
  spt_ktensor* k = nullptr;
  opts.format = static_cast<spt_tensor_format>(42);
  EXPECT_EQ(spt_cp_apr(nullptr, &x, &opts, &k), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_thread_last_error()).find("format"), std::string::npos);
  for (spt_tensor_format f :
       {SPT_TENSOR_FORMAT_CSF, SPT_TENSOR_FORMAT_FCOO, SPT_TENSOR_FORMAT_HBCSF, SPT_TENSOR_FORMAT_HLS}) {
    opts.format = f;
    EXPECT_EQ(spt_cp_apr(nullptr, &x, &opts, &k), SPT_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(spt_thread_last_error()).find("CP-APR does not run on"), std::string::npos);
    EXPECT_EQ(k, nullptr);
  }
  // A caller built before `format` existed passes the shorter size: the
  // garbage after it is not read, format defaults to AUTO.
  opts.format = static_cast<spt_tensor_format>(42);
  opts.struct_size = offsetof(spt_cp_apr_options, format);
  const spt_status st = spt_cp_apr(nullptr, &x, &opts, &k);
  EXPECT_TRUE(st == SPT_OK || st == SPT_WARN_NOT_CONVERGED) << spt_thread_last_error();
  spt_ktensor_free(k);
  opts.struct_size = offsetof(spt_cp_apr_options, format) - 1;
  k = nullptr;
  EXPECT_EQ(spt_cp_apr(nullptr, &x, &opts, &k), SPT_ERR_INVALID_ARGUMENT);
}

// ---- The one loop (run_cp_apr) on scripted steps ----

// Steps that record each call and return scripted KKT violations (then 0)
// and log-likelihoods -9, -8, ...; finish hands back lambda {1, 3, 2}.
class ScriptedAprSteps final : public dispatch::CpAprSteps<double> {
 public:
  std::vector<std::string> calls;
  std::vector<double> kkts;
  size_t next = 0;
  double ll = -10;
  double kappa = 0, kappatol = 0, eps = 0;

  const char* name() const override { return "scripted"; }
  void start(spt_ktensor_s&) override { calls.push_back("start"); }
  void normalise(uint32_t m) override { calls.push_back("normalise " + std::to_string(m)); }
  void scooch(uint32_t m, double k, double kt) override {
    calls.push_back("scooch " + std::to_string(m));
    kappa = k;
    kappatol = kt;
  }
  void redistribute(uint32_t m) override { calls.push_back("redistribute " + std::to_string(m)); }
  void phi(uint32_t m, double e) override {
    calls.push_back("phi " + std::to_string(m));
    eps = e;
  }
  double kkt_violation(uint32_t m) override {
    calls.push_back("kkt " + std::to_string(m));
    return next < kkts.size() ? kkts[next++] : 0.0;
  }
  void multiply(uint32_t m) override { calls.push_back("multiply " + std::to_string(m)); }
  double loglikelihood() override {
    calls.push_back("loglikelihood");
    return ll += 1;
  }
  void finish(spt_ktensor_s&, std::vector<double>* lambda) override {
    calls.push_back("finish");
    *lambda = {1, 3, 2};
  }
};

// The loop's order of steps (scooch from the second outer iteration on,
// inner iterations stopping at tol or max_inner_iters), the KKT reported
// per outer iteration (the largest mode's), convergence, and the final
// sort of the components by decreasing lambda.
TEST(CpAprLoop, CallsTheStepsInOrderAndSortsByLambda) {
  spt_ktensor_s k;
  init_ktensor(k, SPT_FLOAT64, {2, 3}, 3);
  for (uint32_t m = 0; m < 2; ++m)
    for (spt_nnz i = 0; i < k.dims[m]; ++i)
      for (spt_nnz r = 0; r < 3; ++r) k.factors[m]->at<double>(i, r) = double(10 * r + i);
  spt_cp_apr_options opts;
  ASSERT_EQ(spt_cp_apr_options_init(&opts), SPT_OK);
  opts.rank = 3;
  opts.max_outer_iters = 5;
  opts.max_inner_iters = 2;
  opts.tol = 1e-4;
  std::vector<double> reported;
  opts.callback = [](void* data, int, double, double kkt, double) -> int {
    static_cast<std::vector<double>*>(data)->push_back(kkt);
    return 0;
  };
  opts.callback_data = &reported;
  ScriptedAprSteps steps;
  // Outer 1: mode 0 updates twice (inner limit), mode 1 meets tol at once;
  // outer 2: both meet tol, so the run converges.
  steps.kkts = {0.5, 0.25, 1e-5, 1e-5, 2e-5};
  spt_ktensor_s out;
  EXPECT_EQ(algo::run_cp_apr<double>(steps, opts, k, out), SPT_OK);
  const std::vector<std::string> expected = {
      "start", "normalise 0", "normalise 1",
      "redistribute 0", "phi 0", "kkt 0", "multiply 0", "phi 0", "kkt 0", "multiply 0", "normalise 0",
      "redistribute 1", "phi 1", "kkt 1", "normalise 1", "loglikelihood",
      "scooch 0", "redistribute 0", "phi 0", "kkt 0", "normalise 0",
      "scooch 1", "redistribute 1", "phi 1", "kkt 1", "normalise 1", "loglikelihood", "finish"};
  EXPECT_EQ(steps.calls, expected);
  EXPECT_EQ(steps.kappa, opts.kappa);
  EXPECT_EQ(steps.kappatol, opts.kappatol);
  EXPECT_EQ(steps.eps, opts.epsilon);
  EXPECT_EQ(out.iterations, 2);
  EXPECT_EQ(out.converged, 1);
  EXPECT_EQ(out.fit_history, (std::vector<double>{-9, -8}));
  EXPECT_EQ(reported, (std::vector<double>{0.25, 2e-5}));
  // lambda {1, 3, 2} sorted: components 1, 2, 0.
  EXPECT_EQ(out.lambda.ptr<double>()[0], 3);
  EXPECT_EQ(out.lambda.ptr<double>()[1], 2);
  EXPECT_EQ(out.lambda.ptr<double>()[2], 1);
  for (uint32_t m = 0; m < 2; ++m)
    for (spt_nnz i = 0; i < out.dims[m]; ++i) {
      EXPECT_EQ(out.factors[m]->at<double>(i, 0), double(10 + i));
      EXPECT_EQ(out.factors[m]->at<double>(i, 1), double(20 + i));
      EXPECT_EQ(out.factors[m]->at<double>(i, 2), double(i));
    }
}

// A non-finite KKT violation is SPT_ERR_NUMERICAL naming the outer
// iteration; a run that never meets tol ends not converged.
TEST(CpAprLoop, NonFiniteIsNumericalAndTheLimitIsNotConverged) {
  spt_cp_apr_options opts;
  ASSERT_EQ(spt_cp_apr_options_init(&opts), SPT_OK);
  opts.rank = 3;
  opts.max_outer_iters = 2;
  opts.max_inner_iters = 1;
  {
    spt_ktensor_s k, out;
    init_ktensor(k, SPT_FLOAT64, {2, 3}, 3);
    ScriptedAprSteps steps;
    steps.kkts = {1.0, std::numeric_limits<double>::infinity()};
    try {
      algo::run_cp_apr<double>(steps, opts, k, out);
      FAIL() << "a non-finite KKT violation must fail";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), SPT_ERR_NUMERICAL);
      EXPECT_NE(std::string(e.what()).find("outer iteration 1"), std::string::npos) << e.what();
    }
  }
  spt_ktensor_s k, out;
  init_ktensor(k, SPT_FLOAT64, {2, 3}, 3);
  ScriptedAprSteps steps;
  steps.kkts = {1.0, 1.0, 1.0, 1.0};
  EXPECT_EQ(algo::run_cp_apr<double>(steps, opts, k, out), SPT_WARN_NOT_CONVERGED);
  EXPECT_EQ(out.iterations, 2);
  EXPECT_EQ(out.converged, 0);
}

}  // namespace
}  // namespace spt::test
