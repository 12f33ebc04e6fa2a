// TTV chain (X times a vector in every mode but one) and full contraction:
// the reference and OpenMP kernels against a dense brute-force sum over
// every index (orders 2-6, skewed shapes, duplicates, f32/f64, 1-3 threads,
// bitwise thread-count independence), both OpenMP paths (short output
// modes: private chunks; long ones: formed terms scattered in order), the
// C API against repeated single-mode spt_ttv calls, and its argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/summaries.hpp"
#include "common/test_util.hpp"
#include "kernels/kernels.hpp"
#include "sptensor/sptensor.h"

namespace spt::test {
namespace {

template <typename T>
spt_dtype dtype_t() {
  return std::is_same_v<T, float> ? SPT_FLOAT32 : SPT_FLOAT64;
}

template <typename T>
std::vector<std::vector<T>> random_vectors(const std::vector<spt_index>& dims, uint64_t seed) {
  std::vector<std::vector<T>> v;
  for (size_t m = 0; m < dims.size(); ++m) {
    DenseMatrix<T> col = random_matrix<T>(dims[m], 1, seed + 7 * m);
    v.emplace_back(col.values.begin(), col.values.end());
  }
  return v;
}

uint64_t dense_size(const std::vector<spt_index>& dims) {
  uint64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

// Brute force over every dense index (duplicates summed into the dense
// image first): out(i) = sum over idx with idx_keep = i of X(idx) prod v.
// keep = order: full contraction into out[0].
template <typename T>
std::vector<double> brute_force(const spt_coo_s& x, uint32_t keep, const std::vector<std::vector<T>>& v) {
  const uint32_t order = x.order();
  const uint64_t total = dense_size(x.dims);
  std::vector<double> dense(total, 0.0);
  for (spt_nnz e = 0; e < x.nnz; ++e) {
    uint64_t lin = 0, stride = 1;
    for (uint32_t m = 0; m < order; ++m) {
      lin += stride * x.ind[m][e];
      stride *= x.dims[m];
    }
    dense[lin] += static_cast<double>(x.values<T>()[e]);
  }
  std::vector<double> out(keep < order ? x.dims[keep] : 1, 0.0);
  std::vector<spt_index> idx(order);
  for (uint64_t lin = 0; lin < total; ++lin) {
    uint64_t rest = lin;
    for (uint32_t m = 0; m < order; ++m) {
      idx[m] = static_cast<spt_index>(rest % x.dims[m]);
      rest /= x.dims[m];
    }
    double p = dense[lin];
    for (uint32_t m = 0; m < order; ++m)
      if (m != keep) p *= static_cast<double>(v[m][idx[m]]);
    out[keep < order ? idx[keep] : 0] += p;
  }
  return out;
}

// Tolerance relative to the sum of |terms| (cancellation makes entries small).
template <typename T>
std::vector<double> abs_scale(const spt_coo_s& x, uint32_t keep, const std::vector<std::vector<T>>& v) {
  std::vector<double> s(keep < x.order() ? x.dims[keep] : 1, 0.0);
  for (spt_nnz e = 0; e < x.nnz; ++e) {
    double p = std::fabs(static_cast<double>(x.values<T>()[e]));
    for (uint32_t m = 0; m < x.order(); ++m)
      if (m != keep) p *= std::fabs(static_cast<double>(v[m][x.ind[m][e]]));
    s[keep < x.order() ? x.ind[keep][e] : 0] += p;
  }
  return s;
}

std::vector<RandomTensorSpec> specs() {
  std::vector<RandomTensorSpec> s = standard_specs();
  // A short mode under many nonzeros (the private-chunk path for keep 0).
  RandomTensorSpec shortmode;
  shortmode.dims = {4, 50, 60};
  shortmode.nnz = 6000;
  shortmode.seed = 31;
  shortmode.duplicates = true;
  s.push_back(shortmode);
  return s;
}

template <typename T>
void check_kernels() {
  const double tol = sizeof(T) == 8 ? 1e-12 : 1e-5;
  uint64_t seed = 3;
  for (const RandomTensorSpec& spec : specs()) {
    const spt_coo_s x = random_coo(dtype_t<T>(), spec);
    const auto v = random_vectors<T>(x.dims, seed++);
    std::vector<const T*> vp;
    for (auto& w : v) vp.push_back(w.data());
    const bool brute = dense_size(x.dims) <= (uint64_t(1) << 22);
    for (uint32_t keep = 0; keep <= x.order(); ++keep) {
      const std::vector<double> scale = abs_scale<T>(x, keep, v);
      const std::vector<double> want = brute ? brute_force<T>(x, keep, v) : std::vector<double>();
      std::vector<double> got_ref, first;
      if (keep < x.order()) {
        std::vector<T> ref(x.dims[keep]);
        kernels::reference::ttv_chain(kernels::Exec{1}, x, keep, vp.data(), ref.data());
        got_ref.assign(ref.begin(), ref.end());
      } else {
        got_ref = {kernels::reference::ttv_all(kernels::Exec{1}, x, vp.data())};
      }
      for (int threads : {1, 2, 3}) {
        std::vector<double> got;
        if (keep < x.order()) {
          std::vector<T> out(x.dims[keep], T(-7));
          kernels::cpu::ttv_chain(kernels::Exec{threads}, x, keep, vp.data(), out.data());
          got.assign(out.begin(), out.end());
        } else {
          got = {kernels::cpu::ttv_all(kernels::Exec{threads}, x, vp.data())};
        }
        for (size_t i = 0; i < got.size(); ++i) {
          const double t = tol * std::max(scale[i], 1e-300) + 1e-300;
          ASSERT_LE(std::fabs(got[i] - got_ref[i]), t) << "cpu vs reference, order " << x.order() << " keep " << keep
                                                       << " threads " << threads << " entry " << i;
          if (brute)
            ASSERT_LE(std::fabs(got[i] - want[i]), t) << "cpu vs brute force, order " << x.order() << " keep " << keep
                                                      << " entry " << i;
        }
        if (first.empty()) first = got;
        else EXPECT_EQ(first, got) << "depends on the thread count: order " << x.order() << " keep " << keep;
      }
      if (brute)
        for (size_t i = 0; i < got_ref.size(); ++i)
          ASSERT_LE(std::fabs(got_ref[i] - want[i]), tol * scale[i] + 1e-300) << "reference vs brute force";
    }
  }
}

TEST(TtvChain, KernelsMatchBruteForceFloat64) { check_kernels<double>(); }
TEST(TtvChain, KernelsMatchBruteForceFloat32) { check_kernels<float>(); }

// The chain through the C API equals spt_ttv applied mode by mode (highest
// mode first, so the remaining modes keep their numbers).
template <typename T>
void check_against_repeated_ttv() {
  uint64_t seed = 50;
  const double tol = sizeof(T) == 8 ? 1e-11 : 1e-4;
  for (const RandomTensorSpec& spec : specs()) {
    const spt_coo_s x = random_coo(dtype_t<T>(), spec);
    const auto v = random_vectors<T>(x.dims, seed++);
    std::vector<const void*> vp;
    for (auto& w : v) vp.push_back(w.data());
    for (uint32_t keep = 0; keep < x.order(); ++keep) {
      spt_coo* cur = nullptr;
      ASSERT_EQ(spt_coo_copy(nullptr, &x, &cur), SPT_OK);
      for (uint32_t m = x.order(); m-- > 0;) {
        if (m == keep) continue;
        spt_coo* next = nullptr;
        ASSERT_EQ(spt_ttv(nullptr, cur, m, v[m].data(), x.dims[m], &next), SPT_OK) << spt_thread_last_error();
        spt_coo_free(cur);
        cur = next;
      }
      std::vector<double> want(x.dims[keep], 0.0);
      const spt_nnz nnz = spt_test::info_of(cur).nnz;
      const spt_index* ind = nullptr;
      const void* vals = nullptr;
      spt_coo_indices(cur, 0, &ind);
      spt_coo_values(cur, &vals);
      for (spt_nnz e = 0; e < nnz; ++e) want[ind[e]] += static_cast<const T*>(vals)[e];
      spt_coo_free(cur);
      const std::vector<double> scale = abs_scale<T>(x, keep, v);
      for (int threads : {1, 3}) {
        spt_context* ctx = nullptr;
        ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
        spt_context_set_threads(ctx, threads);
        std::vector<T> out(x.dims[keep]);
        ASSERT_EQ(spt_ttv_chain(ctx, &x, keep, vp.data(), out.data()), SPT_OK) << spt_last_error(ctx);
        for (spt_index i = 0; i < x.dims[keep]; ++i)
          ASSERT_LE(std::fabs(double(out[i]) - want[i]), tol * scale[i] + 1e-300)
              << "order " << x.order() << " keep " << keep << " index " << i;
        spt_context_free(ctx);
      }
    }
    // Full contraction = the chain's result times the last vector.
    std::vector<T> chain(x.dims[0]);
    ASSERT_EQ(spt_ttv_chain(nullptr, &x, 0, vp.data(), chain.data()), SPT_OK);
    double want = 0, scale = 0;
    for (spt_index i = 0; i < x.dims[0]; ++i) want += double(chain[i]) * double(v[0][i]);
    for (double s : abs_scale<T>(x, x.order(), v)) scale += s;
    double all = 0;
    ASSERT_EQ(spt_ttv_all(nullptr, &x, vp.data(), &all), SPT_OK);
    EXPECT_LE(std::fabs(all - want), tol * scale + 1e-300);
  }
}

TEST(TtvChain, ApiMatchesRepeatedTtvFloat64) { check_against_repeated_ttv<double>(); }
TEST(TtvChain, ApiMatchesRepeatedTtvFloat32) { check_against_repeated_ttv<float>(); }

TEST(TtvChain, KeepModeVectorMayBeNullAndOrderOneWorks) {
  RandomTensorSpec spec;
  spec.dims = {5, 6, 7};
  spec.nnz = 40;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const auto v = random_vectors<double>(x.dims, 9);
  std::vector<const void*> vp = {v[0].data(), nullptr, v[2].data()};
  std::vector<double> out(6);
  EXPECT_EQ(spt_ttv_chain(nullptr, &x, 1, vp.data(), out.data()), SPT_OK) << spt_thread_last_error();
  // Order 1: the densified vector (duplicates summed).
  const spt_index dims1[] = {4};
  const spt_index ind[] = {2, 0, 2};
  const double vals[] = {1.5, -1, 2};
  spt_coo* y = nullptr;
  ASSERT_EQ(spt_coo_create_from_arrays(nullptr, SPT_FLOAT64, 1, dims1, 3, ind, 3, 0, vals, 0, &y), SPT_OK);
  const void* none[] = {nullptr};
  std::vector<double> o1(4, 99);
  ASSERT_EQ(spt_ttv_chain(nullptr, y, 0, none, o1.data()), SPT_OK) << spt_thread_last_error();
  EXPECT_EQ(o1, (std::vector<double>{-1, 0, 3.5, 0}));
  spt_coo_free(y);
}

TEST(TtvChain, RejectsBadArguments) {
  RandomTensorSpec spec;
  spec.dims = {5, 6, 7};
  spec.nnz = 40;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  auto v = random_vectors<double>(x.dims, 9);
  std::vector<const void*> vp = {v[0].data(), v[1].data(), v[2].data()};
  std::vector<double> out(7);
  double all = 0;
  EXPECT_EQ(spt_ttv_chain(nullptr, nullptr, 0, vp.data(), out.data()), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_ttv_chain(nullptr, &x, 0, nullptr, out.data()), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_ttv_chain(nullptr, &x, 0, vp.data(), nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_ttv_chain(nullptr, &x, 3, vp.data(), out.data()), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_thread_last_error()).find("keep_mode"), std::string::npos);
  vp[1] = nullptr;
  EXPECT_EQ(spt_ttv_chain(nullptr, &x, 2, vp.data(), out.data()), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_thread_last_error()).find("vectors[1]"), std::string::npos);
  EXPECT_EQ(spt_ttv_all(nullptr, &x, vp.data(), &all), SPT_ERR_INVALID_ARGUMENT);
  vp[1] = v[1].data();
  EXPECT_EQ(spt_ttv_all(nullptr, &x, vp.data(), nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_ttv_all(nullptr, &x, nullptr, &all), SPT_ERR_INVALID_ARGUMENT);
  // out overlapping a vector.
  EXPECT_EQ(spt_ttv_chain(nullptr, &x, 2, vp.data(), const_cast<double*>(v[0].data())), SPT_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace spt::test
