// Dense tensors (spt_dense): creation (zero fill, copies, overflow and
// argument errors), the documented first-index-fastest layout, norm,
// COO -> dense (duplicates summed, size limit) and dense -> COO (exact
// zeros dropped, round trip), and the Tucker core as a dense tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/summaries.hpp"
#include "common/test_util.hpp"
#include "sptensor/sptensor.h"

namespace spt::test {
namespace {

template <typename T>
spt_dtype dtype_t() {
  return std::is_same_v<T, float> ? SPT_FLOAT32 : SPT_FLOAT64;
}

TEST(Dense, CreateIsZeroFilledAndReportsShape) {
  const spt_index dims[] = {3, 1, 4, 2};
  spt_dense* t = nullptr;
  ASSERT_EQ(spt_dense_create(nullptr, SPT_FLOAT32, 4, dims, &t), SPT_OK) << spt_thread_last_error();
  spt_dense_summary info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(spt_dense_info(nullptr, t, &info), SPT_OK);
  EXPECT_EQ(info.dtype, SPT_FLOAT32);
  EXPECT_EQ(info.order, 4u);
  EXPECT_EQ(info.count, 24u);
  spt_index got[4];
  ASSERT_EQ(spt_dense_dims(t, got), SPT_OK);
  for (int m = 0; m < 4; ++m) EXPECT_EQ(got[m], dims[m]);
  const void* data = nullptr;
  ASSERT_EQ(spt_dense_data_const(t, &data), SPT_OK);
  for (spt_nnz i = 0; i < info.count; ++i) EXPECT_EQ(static_cast<const float*>(data)[i], 0.0f);
  double norm = -1;
  ASSERT_EQ(spt_dense_norm(nullptr, t, &norm), SPT_OK);
  EXPECT_EQ(norm, 0.0);
  spt_dense_free(t);
  EXPECT_EQ(spt_dense_free(nullptr), SPT_OK);
}

TEST(Dense, ArgumentErrorsAndOverflow) {
  spt_dense* t = nullptr;
  const spt_index dims[] = {2, 3};
  EXPECT_EQ(spt_dense_create(nullptr, SPT_FLOAT64, 0, dims, &t), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_dense_create(nullptr, SPT_FLOAT64, 2, nullptr, &t), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_dense_create(nullptr, SPT_FLOAT64, 2, dims, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_dense_create(nullptr, static_cast<spt_dtype>(7), 2, dims, &t), SPT_ERR_INVALID_ARGUMENT);
  const spt_index zero[] = {2, 0};
  EXPECT_EQ(spt_dense_create(nullptr, SPT_FLOAT64, 2, zero, &t), SPT_ERR_INVALID_ARGUMENT);
  // 2^32-1 cubed overflows 64 bits; 2^63 elements fit, but not their bytes.
  const spt_index huge[] = {0xffffffffu, 0xffffffffu, 0xffffffffu};
  EXPECT_EQ(spt_dense_create(nullptr, SPT_FLOAT64, 3, huge, &t), SPT_ERR_OVERFLOW);
  const spt_index bytes_overflow[] = {1u << 31, 1u << 31, 2};
  EXPECT_EQ(spt_dense_create(nullptr, SPT_FLOAT64, 3, bytes_overflow, &t), SPT_ERR_OVERFLOW);
  EXPECT_EQ(t, nullptr);
  EXPECT_EQ(spt_dense_create_copy(nullptr, SPT_FLOAT64, 2, dims, nullptr, &t), SPT_ERR_INVALID_ARGUMENT);
  spt_dense_summary info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(spt_dense_info(nullptr, nullptr, &info), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_dense_data(nullptr, nullptr), SPT_ERR_INVALID_ARGUMENT);
  double norm;
  EXPECT_EQ(spt_dense_norm(nullptr, nullptr, &norm), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_dense_from_coo(nullptr, nullptr, 0, &t), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_dense_to_coo(nullptr, nullptr, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_ttensor_core_dense(nullptr, nullptr, &t), SPT_ERR_INVALID_ARGUMENT);
}

template <typename T>
void check_layout_and_round_trip() {
  // A 2 x 3 x 2 tensor with value = 100 i + 10 j + k at (i, j, k) and a
  // couple of exact zeros; linear offset i + 2 (j + 3 k).
  const spt_index dims[] = {2, 3, 2};
  std::vector<T> vals(12);
  for (spt_index k = 0; k < 2; ++k)
    for (spt_index j = 0; j < 3; ++j)
      for (spt_index i = 0; i < 2; ++i) vals[i + 2 * (j + 3 * k)] = T(100 * i + 10 * j + k);
  vals[5] = T(0);  // (1, 2, 0)
  spt_dense* t = nullptr;
  ASSERT_EQ(spt_dense_create_copy(nullptr, dtype_t<T>(), 3, dims, vals.data(), &t), SPT_OK);
  void* data = nullptr;
  ASSERT_EQ(spt_dense_data(t, &data), SPT_OK);
  EXPECT_EQ(std::memcmp(data, vals.data(), vals.size() * sizeof(T)), 0);
  EXPECT_NE(data, static_cast<void*>(vals.data()));  // a copy
  double norm = 0, want = 0;
  for (T v : vals) want += double(v) * double(v);
  ASSERT_EQ(spt_dense_norm(nullptr, t, &norm), SPT_OK);
  EXPECT_NEAR(norm, std::sqrt(want), 1e-12 * std::sqrt(want));

  spt_coo* x = nullptr;
  ASSERT_EQ(spt_dense_to_coo(nullptr, t, &x), SPT_OK) << spt_thread_last_error();
  const spt_nnz nnz = spt_test::info_of(x).nnz;
  EXPECT_EQ(nnz, 10u);  // (0,0,0) = 0 and (1,2,0) set to 0 are dropped
  const spt_index* ind[3];
  for (uint32_t m = 0; m < 3; ++m) ASSERT_EQ(spt_coo_indices(x, m, &ind[m]), SPT_OK);
  const void* xv = nullptr;
  ASSERT_EQ(spt_coo_values(x, &xv), SPT_OK);
  spt_nnz prev_lin = 0;
  for (spt_nnz e = 0; e < nnz; ++e) {
    const spt_nnz lin = ind[0][e] + 2 * (ind[1][e] + 3 * ind[2][e]);
    EXPECT_EQ(static_cast<const T*>(xv)[e], vals[lin]);
    EXPECT_NE(vals[lin], T(0));
    if (e > 0) EXPECT_GT(lin, prev_lin);  // ordered by linear offset
    prev_lin = lin;
  }
  // And back: the same dense image.
  spt_dense* back = nullptr;
  ASSERT_EQ(spt_dense_from_coo(nullptr, x, 0, &back), SPT_OK) << spt_thread_last_error();
  const void* bd = nullptr;
  ASSERT_EQ(spt_dense_data_const(back, &bd), SPT_OK);
  EXPECT_EQ(std::memcmp(bd, vals.data(), vals.size() * sizeof(T)), 0);
  spt_dense_free(back);
  spt_coo_free(x);
  spt_dense_free(t);
}

TEST(Dense, LayoutNormAndRoundTripF32) { check_layout_and_round_trip<float>(); }
TEST(Dense, LayoutNormAndRoundTripF64) { check_layout_and_round_trip<double>(); }

template <typename T>
void check_densify_random() {
  for (const RandomTensorSpec& base : standard_specs()) {
    RandomTensorSpec spec = base;
    spec.duplicates = true;
    spec.nnz = 200;
    uint64_t total = 1;
    for (auto d : spec.dims) total *= d;
    if (total > (uint64_t(1) << 22)) continue;
    const spt_coo_s x = random_coo(dtype_t<T>(), spec);
    std::vector<double> want(total, 0.0);
    for (spt_nnz e = 0; e < x.nnz; ++e) {
      uint64_t lin = 0, stride = 1;
      for (uint32_t m = 0; m < x.order(); ++m) {
        lin += stride * x.ind[m][e];
        stride *= x.dims[m];
      }
      want[lin] += static_cast<double>(x.values<T>()[e]);
    }
    spt_dense* t = nullptr;
    ASSERT_EQ(spt_dense_from_coo(nullptr, &x, 0, &t), SPT_OK) << spt_thread_last_error();
    const void* data = nullptr;
    ASSERT_EQ(spt_dense_data_const(t, &data), SPT_OK);
    ASSERT_EQ(spt_test::info_of(t).count, total);
    for (uint64_t i = 0; i < total; ++i)
      ASSERT_TRUE(close(want[i], static_cast<const T*>(data)[i], tolerance<T>())) << "offset " << i;
    // A limit one byte short of the size is refused, with nothing written.
    spt_dense* refused = nullptr;
    EXPECT_EQ(spt_dense_from_coo(nullptr, &x, total * sizeof(T) - 1, &refused), SPT_ERR_OUT_OF_MEMORY);
    EXPECT_EQ(refused, nullptr);
    EXPECT_EQ(spt_dense_from_coo(nullptr, &x, total * sizeof(T), &refused), SPT_OK);
    spt_dense_free(refused);
    spt_dense_free(t);
  }
}

TEST(Dense, FromCooSumsDuplicatesAndHonoursTheLimitF32) { check_densify_random<float>(); }
TEST(Dense, FromCooSumsDuplicatesAndHonoursTheLimitF64) { check_densify_random<double>(); }

TEST(Dense, FromCooDefaultCapRefusesHugeTensors) {
  const spt_index dims[] = {100000, 100000, 100};
  spt_coo* x = nullptr;
  ASSERT_EQ(spt_coo_create(nullptr, SPT_FLOAT64, 3, dims, &x), SPT_OK);
  spt_dense* t = nullptr;
  EXPECT_EQ(spt_dense_from_coo(nullptr, x, 0, &t), SPT_ERR_OUT_OF_MEMORY);
  EXPECT_NE(std::string(spt_thread_last_error()).find("max_bytes"), std::string::npos);
  EXPECT_EQ(t, nullptr);
  spt_coo_free(x);
}

TEST(Dense, TuckerCoreAsDense) {
  RandomTensorSpec spec;
  spec.dims = {9, 7, 8};
  spec.nnz = 150;
  spec.seed = 5;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const spt_index ranks[] = {3, 2, 4};
  spt_tucker_options o;
  ASSERT_EQ(spt_tucker_options_init(&o), SPT_OK);
  o.ranks = ranks;
  o.ranks_count = 3;
  o.max_iters = 2;
  spt_ttensor* tt = nullptr;
  ASSERT_GE(spt_tucker_hooi(nullptr, &x, &o, &tt), 0) << spt_thread_last_error();
  spt_dense* core = nullptr;
  ASSERT_EQ(spt_ttensor_core_dense(nullptr, tt, &core), SPT_OK) << spt_thread_last_error();
  const spt_dense_summary info = spt_test::info_of(core);
  EXPECT_EQ(info.dtype, SPT_FLOAT64);
  EXPECT_EQ(info.order, 3u);
  EXPECT_EQ(info.count, 24u);
  spt_index cd[3];
  ASSERT_EQ(spt_dense_dims(core, cd), SPT_OK);
  for (int m = 0; m < 3; ++m) EXPECT_EQ(cd[m], ranks[m]);
  const void* borrowed = nullptr;
  const void* copied = nullptr;
  ASSERT_EQ(spt_ttensor_core(tt, &borrowed), SPT_OK);
  ASSERT_EQ(spt_dense_data_const(core, &copied), SPT_OK);
  EXPECT_NE(borrowed, copied);
  EXPECT_EQ(std::memcmp(borrowed, copied, 24 * sizeof(double)), 0);
  spt_ttensor_free(tt);  // the copy outlives the ttensor
  double norm = 0;
  EXPECT_EQ(spt_dense_norm(nullptr, core, &norm), SPT_OK);
  EXPECT_GT(norm, 0.0);
  spt_dense_free(core);
}

}  // namespace
}  // namespace spt::test
