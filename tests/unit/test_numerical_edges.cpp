// Numerical edge cases (issue 10), with the behaviour docs/numerics.md
// promises: all-zero values, a single nonzero, rank above a mode length,
// duplicate coordinates, and extreme float64 magnitudes (1e-300, 1e300).
// No case may produce a NaN fit: either a finite result with a
// success/warning status or a documented error status with a message.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/format_options.hpp"
#include "common/summaries.hpp"
#include "sptensor/sptensor.h"

namespace {

class NumericalEdges : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(spt_context_create(&ctx_), SPT_OK);
    spt_context_set_threads(ctx_, 2);
    spt_context_set_backend(ctx_, SPT_BACKEND_CPU);
  }
  void TearDown() override {
    spt_ktensor_free(k_);
    spt_context_free(ctx_);
  }

  // A 0-based order-3 tensor from (i, j, k, value) rows.
  spt_coo* tensor(const std::vector<std::vector<double>>& rows, const std::vector<spt_index>& dims,
                  spt_dtype dtype = SPT_FLOAT64) {
    const spt_nnz n = rows.size();
    std::vector<spt_index> ind(3 * n);
    std::vector<double> v64(n);
    std::vector<float> v32(n);
    for (spt_nnz k = 0; k < n; ++k) {
      for (int m = 0; m < 3; ++m) ind[m * n + k] = static_cast<spt_index>(rows[k][m]);
      v64[k] = rows[k][3];
      v32[k] = static_cast<float>(rows[k][3]);
    }
    spt_coo* x = nullptr;
    const void* vals = dtype == SPT_FLOAT64 ? static_cast<const void*>(v64.data()) : v32.data();
    EXPECT_EQ(spt_coo_create_from_arrays(ctx_, dtype, 3, dims.data(), n, ind.data(), n, 0, vals, 0, &x), SPT_OK)
        << spt_last_error(ctx_);
    return x;
  }

  // CP-ALS; returns the status, leaves the model in k_ and its fit in fit_.
  spt_status cpd(const spt_coo* x, spt_index rank, int iters = 30,
                 spt_tensor_format format = SPT_TENSOR_FORMAT_COO) {
    spt_ktensor_free(k_);
    k_ = nullptr;
    spt_cpd_options o;
    spt_cpd_options_init(&o);
    o.rank = rank;
    o.max_iters = iters;
    o.seed = 3;
    o.format = format;
    spt_status s = spt_cpd_als(ctx_, x, &o, &k_);
    fit_ = std::numeric_limits<double>::quiet_NaN();
    if (k_) spt_ktensor_result(k_, &fit_, nullptr, nullptr);
    return s;
  }

  // Every lambda and factor entry finite.
  void expect_model_finite() {
    ASSERT_NE(k_, nullptr);
    const spt_ktensor_summary info = spt_test::info_of(k_);
    const uint32_t order = info.order;
    const spt_index rank = info.rank;
    const spt_dtype dtype = info.dtype;
    void* lambda = nullptr;
    spt_ktensor_lambda(k_, &lambda);
    for (spt_index r = 0; r < rank; ++r) {
      double l = dtype == SPT_FLOAT64 ? static_cast<double*>(lambda)[r] : static_cast<float*>(lambda)[r];
      EXPECT_TRUE(std::isfinite(l)) << "lambda[" << r << "] = " << l;
    }
    for (uint32_t m = 0; m < order; ++m) {
      spt_matrix* f = nullptr;
      spt_ktensor_factor(k_, m, &f);
      const spt_nnz rows = spt_test::info_of(f).rows, cols = spt_test::info_of(f).cols;
      std::vector<double> buf(rows * cols);
      if (dtype == SPT_FLOAT64) {
        spt_matrix_copy_out(f, SPT_ROW_MAJOR, buf.data(), cols);
      } else {
        std::vector<float> b32(rows * cols);
        spt_matrix_copy_out(f, SPT_ROW_MAJOR, b32.data(), cols);
        buf.assign(b32.begin(), b32.end());
      }
      for (double v : buf) ASSERT_TRUE(std::isfinite(v)) << "factor " << m << " has " << v;
    }
  }

  double lambda0() {
    void* lambda = nullptr;
    spt_ktensor_lambda(k_, &lambda);
    return static_cast<double*>(lambda)[0];
  }

  spt_context* ctx_ = nullptr;
  spt_ktensor* k_ = nullptr;
  double fit_ = 0;
};

TEST_F(NumericalEdges, AllZeroValuesCpdIsInvalidArgument) {
  for (spt_dtype dt : {SPT_FLOAT64, SPT_FLOAT32}) {
    spt_coo* x = tensor({{0, 0, 0, 0.0}, {1, 2, 1, 0.0}, {2, 1, 0, -0.0}}, {3, 3, 2}, dt);
    EXPECT_EQ(cpd(x, 2), SPT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(spt_last_error(ctx_)).find("all zero"), std::string::npos) << spt_last_error(ctx_);
    EXPECT_EQ(k_, nullptr);
    double norm = -1;
    EXPECT_EQ(spt_coo_norm(ctx_, x, &norm), SPT_OK);
    EXPECT_EQ(norm, 0.0);
    spt_coo_free(x);
  }
}

TEST_F(NumericalEdges, AllZeroValuesKernelsGiveZeros) {
  spt_coo* x = tensor({{0, 0, 0, 0.0}, {1, 2, 1, 0.0}}, {3, 3, 2});
  const spt_index dims[] = {3, 3, 2};
  spt_matrix* f[3];
  for (int m = 0; m < 3; ++m) {
    std::vector<double> ones(dims[m] * 2, 1.0);
    spt_matrix_create_copy(ctx_, SPT_FLOAT64, dims[m], 2, SPT_ROW_MAJOR, ones.data(), 2, &f[m]);
  }
  spt_matrix* out = nullptr;
  spt_matrix_create(ctx_, SPT_FLOAT64, 3, 2, SPT_ROW_MAJOR, &out);
  ASSERT_EQ(spt_mttkrp(ctx_, x, f, 0, out), SPT_OK);
  double got[6];
  spt_matrix_copy_out(out, SPT_ROW_MAJOR, got, 2);
  for (double g : got) EXPECT_EQ(g, 0.0);
  spt_hicoo* h = nullptr;
  EXPECT_EQ(spt_hicoo_from_coo(ctx_, x, nullptr, &h), SPT_OK);
  spt_hicoo_free(h);
  spt_matrix_free(out);
  for (auto* m : f) spt_matrix_free(m);
  spt_coo_free(x);
}

TEST_F(NumericalEdges, OneNonzeroIsFitExactlyByRankOne) {
  for (spt_tensor_format fmt : {SPT_TENSOR_FORMAT_COO, SPT_TENSOR_FORMAT_CSF, SPT_TENSOR_FORMAT_HICOO}) {
    spt_coo* x = tensor({{2, 0, 1, -3.5}}, {4, 5, 3});
    spt_status s = cpd(x, 1, 30, fmt);
    EXPECT_GE(s, 0) << spt_last_error(ctx_);
    expect_model_finite();
    EXPECT_NEAR(fit_, 1.0, 1e-12) << "format " << fmt;
    EXPECT_NEAR(lambda0(), 3.5, 1e-12);
    spt_coo_free(x);
  }
}

TEST_F(NumericalEdges, OneNonzeroWithRankAboveEveryModeLength) {
  // rank 5 > every dim and > the product of dims (1 x 1 x 2 = 2).
  spt_coo* x = tensor({{0, 0, 1, 2.0}}, {1, 1, 2});
  spt_status s = cpd(x, 5);
  EXPECT_TRUE(s == SPT_OK || s == SPT_WARN_NOT_CONVERGED) << spt_status_string(s) << ": " << spt_last_error(ctx_);
  expect_model_finite();
  EXPECT_TRUE(std::isfinite(fit_));
  EXPECT_NEAR(fit_, 1.0, 1e-8);
  spt_coo_free(x);
}

TEST_F(NumericalEdges, RankLargerThanAModeLength) {
  std::vector<std::vector<double>> rows;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 6; ++j)
      for (int k = 0; k < 5; ++k)
        if ((i + j + k) % 2 == 0) rows.push_back({double(i), double(j), double(k), 1.0 + i + 0.5 * j - 0.25 * k});
  spt_coo* x = tensor(rows, {2, 6, 5});
  for (spt_tensor_format fmt : {SPT_TENSOR_FORMAT_COO, SPT_TENSOR_FORMAT_CSF, SPT_TENSOR_FORMAT_HICOO}) {
    spt_status s = cpd(x, 4, 20, fmt);  // rank 4 > dims[0] = 2
    EXPECT_TRUE(s == SPT_OK || s == SPT_WARN_NOT_CONVERGED) << spt_status_string(s) << ": " << spt_last_error(ctx_);
    expect_model_finite();
    EXPECT_TRUE(std::isfinite(fit_));
    EXPECT_GT(fit_, 0.3);
    EXPECT_LE(fit_, 1.0 + 1e-9);
  }
  spt_coo_free(x);
}

TEST_F(NumericalEdges, RepeatedCoordinatesMeanTheirSumEverywhere) {
  // (0,1,1) appears twice with 1.5 and 2.5: the tensor holds 4.0 there
  // (docs/numerics.md). Norm, distinct count, CP-ALS on every format and on
  // a CSF handle, and Tucker give the summed tensor's results.
  spt_coo* dup = tensor({{0, 1, 1, 1.5}, {2, 0, 0, 1.0}, {0, 1, 1, 2.5}, {1, 1, 0, -2.0}}, {3, 2, 2});
  spt_coo* sum = tensor({{0, 1, 1, 4.0}, {2, 0, 0, 1.0}, {1, 1, 0, -2.0}}, {3, 2, 2});
  double norm_dup = 0, norm_sum = 0;
  ASSERT_EQ(spt_coo_norm(ctx_, dup, &norm_dup), SPT_OK);
  ASSERT_EQ(spt_coo_norm(ctx_, sum, &norm_sum), SPT_OK);
  EXPECT_NEAR(norm_dup, std::sqrt(16.0 + 1 + 4), 1e-12);
  EXPECT_NEAR(norm_sum, std::sqrt(16.0 + 1 + 4), 1e-12);
  spt_nnz distinct = 0;
  ASSERT_EQ(spt_coo_count_distinct(ctx_, dup, &distinct), SPT_OK);
  EXPECT_EQ(distinct, 3u);
  for (spt_tensor_format fmt : {SPT_TENSOR_FORMAT_COO, SPT_TENSOR_FORMAT_CSF, SPT_TENSOR_FORMAT_HICOO}) {
    ASSERT_GE(cpd(sum, 2, 10, fmt), 0) << spt_last_error(ctx_);
    const double fit_sum = fit_;
    const double lambda_sum = lambda0();
    ASSERT_GE(cpd(dup, 2, 10, fmt), 0) << spt_last_error(ctx_);
    expect_model_finite();
    EXPECT_NEAR(fit_, fit_sum, 1e-9) << "format " << fmt;
    EXPECT_NEAR(lambda0(), lambda_sum, 1e-9 * std::abs(lambda_sum)) << "format " << fmt;
  }
  // The same on CSF handles built from each.
  double csf_fit[2];
  for (int i = 0; i < 2; ++i) {
    spt_csf* c = nullptr;
    ASSERT_EQ(spt_csf_from_coo(ctx_, i ? dup : sum, spt::test::CsfOptions(SPT_CSF_ALLMODE), &c), SPT_OK) << spt_last_error(ctx_);
    spt_cpd_options o;
    spt_cpd_options_init(&o);
    o.rank = 2;
    o.max_iters = 10;
    o.seed = 3;
    spt_ktensor_free(k_);
    k_ = nullptr;
    ASSERT_GE(spt_cpd_als_csf(ctx_, c, &o, &k_), 0) << spt_last_error(ctx_);
    spt_ktensor_result(k_, &csf_fit[i], nullptr, nullptr);
    spt_csf_free(c);
  }
  EXPECT_NEAR(csf_fit[1], csf_fit[0], 1e-9);
  // Tucker-HOOI.
  double tucker_fit[2];
  for (int i = 0; i < 2; ++i) {
    spt_tucker_options o;
    spt_tucker_options_init(&o);
    const spt_index ranks[3] = {2, 2, 2};
    o.ranks = ranks;
    o.ranks_count = 3;
    o.max_iters = 5;
    spt_ttensor* t = nullptr;
    ASSERT_GE(spt_tucker_hooi(ctx_, i ? dup : sum, &o, &t), 0) << spt_last_error(ctx_);
    tucker_fit[i] = spt_test::info_of(t).fit;
    spt_ttensor_free(t);
  }
  EXPECT_NEAR(tucker_fit[1], tucker_fit[0], 1e-9);
  spt_coo_free(dup);
  spt_coo_free(sum);
}

TEST_F(NumericalEdges, RankOneTensorWithASplitValueFitsExactly) {
  // x = a o b o c with a = (1, 2), b = (1, 3), c = (2, 1); the entry at
  // (1,1,0) = 12 is given as 5 + 7. Rank 1 must fit it exactly.
  std::vector<std::vector<double>> rows;
  const double a[2] = {1, 2}, b[2] = {1, 3}, c[2] = {2, 1};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k)
        if (!(i == 1 && j == 1 && k == 0)) rows.push_back({double(i), double(j), double(k), a[i] * b[j] * c[k]});
  rows.push_back({1, 1, 0, 5.0});
  rows.insert(rows.begin(), {1, 1, 0, 7.0});
  spt_coo* x = tensor(rows, {2, 2, 2});
  for (spt_tensor_format fmt : {SPT_TENSOR_FORMAT_COO, SPT_TENSOR_FORMAT_CSF, SPT_TENSOR_FORMAT_HICOO}) {
    ASSERT_GE(cpd(x, 1, 20, fmt), 0) << spt_last_error(ctx_);
    EXPECT_NEAR(fit_, 1.0, 1e-9) << "format " << fmt;
    EXPECT_NEAR(lambda0(), std::sqrt(5.0) * std::sqrt(10.0) * std::sqrt(5.0), 1e-9) << "format " << fmt;
  }
  spt_coo_free(x);
}

TEST_F(NumericalEdges, TinyMagnitudesFloat64) {
  // Squares of 1e-300 underflow to 0; the model must still be found (fit
  // as for the same tensor scaled to 1), not rejected as an all-zero tensor.
  std::vector<std::vector<double>> unit = {{0, 0, 0, 1.0}, {1, 1, 0, 2.0}, {2, 0, 1, -1.0}, {0, 1, 1, 0.5}};
  std::vector<std::vector<double>> tiny = unit;
  for (auto& r : tiny) r[3] *= 1e-300;
  spt_coo* xu = tensor(unit, {3, 2, 2});
  spt_coo* xt = tensor(tiny, {3, 2, 2});
  double norm = 0;
  ASSERT_EQ(spt_coo_norm(ctx_, xt, &norm), SPT_OK);
  EXPECT_NEAR(norm / 1e-300, std::sqrt(1 + 4 + 1 + 0.25), 1e-12);
  ASSERT_GE(cpd(xu, 2, 10), 0);
  const double fit_unit = fit_;
  const double lambda_unit = lambda0();
  spt_status s = cpd(xt, 2, 10);
  ASSERT_GE(s, 0) << spt_status_string(s) << ": " << spt_last_error(ctx_);
  expect_model_finite();
  EXPECT_NEAR(fit_, fit_unit, 1e-9);
  EXPECT_NEAR(lambda0() / 1e-300, lambda_unit, 1e-9 * lambda_unit);
  spt_coo_free(xu);
  spt_coo_free(xt);
}

// CP-ALS notes repeated coordinates once, also when it rescales the values
// (1e-300: the squared norm underflows) and takes the norm of the copy.
TEST_F(NumericalEdges, RepeatNoteLoggedOnceWhenValuesAreRescaled) {
  std::vector<std::string> messages;
  spt_context_set_verbosity(ctx_, 1);
  spt_context_set_log(
      ctx_, [](void* data, int, const char* m) { static_cast<std::vector<std::string>*>(data)->push_back(m); },
      &messages);
  for (double scale : {1.0, 1e-300, 1e300}) {
    messages.clear();
    spt_coo* x = tensor({{0, 1, 1, 1.5 * scale}, {2, 0, 0, scale}, {0, 1, 1, 2.5 * scale}, {1, 1, 0, -2.0 * scale}},
                        {3, 2, 2});
    ASSERT_GE(cpd(x, 2, 5), 0) << spt_last_error(ctx_);
    int notes = 0, rescaled = 0;
    for (const std::string& m : messages) {
      notes += m.find("repeat a coordinate") != std::string::npos;
      rescaled += m.find("values scaled by 2^") != std::string::npos;
    }
    EXPECT_EQ(notes, 1) << "scale " << scale;
    EXPECT_EQ(rescaled, scale == 1.0 ? 0 : 1) << "scale " << scale;
    spt_coo_free(x);
  }
  spt_context_set_log(ctx_, nullptr, nullptr);
}

TEST_F(NumericalEdges, HugeMagnitudesFloat64) {
  // Squares of 1e300 overflow; the same: scale-invariant result.
  std::vector<std::vector<double>> unit = {{0, 0, 0, 1.0}, {1, 1, 0, 2.0}, {2, 0, 1, -1.0}, {0, 1, 1, 0.5}};
  std::vector<std::vector<double>> huge = unit;
  for (auto& r : huge) r[3] *= 1e300;
  spt_coo* xu = tensor(unit, {3, 2, 2});
  spt_coo* xh = tensor(huge, {3, 2, 2});
  double norm = 0;
  ASSERT_EQ(spt_coo_norm(ctx_, xh, &norm), SPT_OK);
  EXPECT_NEAR(norm / 1e300, std::sqrt(1 + 4 + 1 + 0.25), 1e-12);
  ASSERT_GE(cpd(xu, 2, 10), 0);
  const double fit_unit = fit_;
  const double lambda_unit = lambda0();
  spt_status s = cpd(xh, 2, 10);
  ASSERT_GE(s, 0) << spt_status_string(s) << ": " << spt_last_error(ctx_);
  expect_model_finite();
  EXPECT_NEAR(fit_, fit_unit, 1e-9);
  EXPECT_NEAR(lambda0() / 1e300, lambda_unit, 1e-9 * lambda_unit);
  spt_coo_free(xu);
  spt_coo_free(xh);
}

TEST_F(NumericalEdges, MixedExtremeMagnitudes) {
  // 1e300 next to 1e-300 in one tensor: the tiny entry is negligible; the
  // result is finite and as for the tensor without it (to rounding).
  spt_coo* x = tensor({{0, 0, 0, 1e300}, {1, 1, 1, 1e-300}, {1, 0, 1, 3e299}}, {2, 2, 2});
  spt_status s = cpd(x, 2, 10);
  ASSERT_GE(s, 0) << spt_status_string(s) << ": " << spt_last_error(ctx_);
  expect_model_finite();
  EXPECT_TRUE(std::isfinite(fit_));
  EXPECT_GT(fit_, 0.99);
  spt_coo_free(x);
}

TEST_F(NumericalEdges, ValueLargerThanFloat32RangeIsAnOverflowInFloat32) {
  // 1e300 has no float32 value: the conversion fails (it used to give Inf
  // silently), naming the value; a float32 tensor holding Inf is still
  // refused by CP-ALS (non-finite values are INVALID_ARGUMENT).
  spt_coo* x = tensor({{0, 0, 0, 1.0}, {1, 1, 1, 2.0}}, {2, 2, 2});
  const spt_index ind[] = {1, 0, 0};
  const double big[] = {1e300};
  spt_coo* y = nullptr;
  ASSERT_EQ(spt_coo_append(ctx_, x, 1, ind, 1, 0, big, 0), SPT_OK);
  EXPECT_EQ(spt_coo_convert_dtype(ctx_, x, SPT_FLOAT32, &y), SPT_ERR_OVERFLOW);
  EXPECT_NE(std::string(spt_last_error(ctx_)).find("1e+300"), std::string::npos) << spt_last_error(ctx_);
  EXPECT_EQ(y, nullptr);
  spt_coo* inf = tensor({{0, 0, 0, 1.0}, {1, 0, 0, HUGE_VAL}}, {2, 2, 2}, SPT_FLOAT32);
  EXPECT_EQ(cpd(inf, 1), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx_)).find("not finite"), std::string::npos) << spt_last_error(ctx_);
  spt_coo_free(inf);
  spt_coo_free(x);
}

TEST_F(NumericalEdges, SubnormalValues) {
  const double sub = std::numeric_limits<double>::denorm_min() * 1000;
  spt_coo* x = tensor({{0, 0, 0, sub}, {1, 1, 1, 2 * sub}}, {2, 2, 2});
  spt_status s = cpd(x, 2, 10);
  ASSERT_GE(s, 0) << spt_status_string(s) << ": " << spt_last_error(ctx_);
  expect_model_finite();
  EXPECT_NEAR(fit_, 1.0, 1e-6);
  spt_coo_free(x);
}

}  // namespace
