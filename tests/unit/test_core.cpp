// Core objects through the C API: contexts, errors, COO creation, views,
// append, accessors, matrices, ktensors.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/guard.hpp"
#include "sptensor/sptensor.h"

namespace {

TEST(Version, MatchesHeader) {
  int a = -1, b = -1, c = -1;
  spt_version_numbers(&a, &b, &c);
  EXPECT_EQ(a, SPT_VERSION_MAJOR);
  EXPECT_EQ(b, SPT_VERSION_MINOR);
  EXPECT_EQ(c, SPT_VERSION_PATCH);
  EXPECT_EQ(std::string(spt_version()),
            std::to_string(a) + "." + std::to_string(b) + "." + std::to_string(c));
  EXPECT_STREQ(spt_status_string(SPT_ERR_PARSE), "SPT_ERR_PARSE");
  EXPECT_STREQ(spt_status_string(12345), "SPT_UNKNOWN_STATUS");
}

TEST(Context, SettersValidate) {
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  EXPECT_EQ(spt_context_set_threads(ctx, -1), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("threads"), std::string::npos);
  EXPECT_EQ(spt_context_set_threads(ctx, 3), SPT_OK);
  int t = 0;
  EXPECT_EQ(spt_context_get_threads(ctx, &t), SPT_OK);
  EXPECT_EQ(t, 3);
  // CUDA is accepted only with a usable plugin and device, else SPT_ERR_DEVICE
  // and the context is unchanged (test_cuda.cpp checks both in detail).
  const spt_status cuda = spt_context_set_backend(ctx, SPT_BACKEND_CUDA);
  EXPECT_TRUE(cuda == SPT_OK || cuda == SPT_ERR_DEVICE) << spt_last_error(ctx);
  spt_backend b;
  EXPECT_EQ(spt_context_get_backend(ctx, &b), SPT_OK);
  EXPECT_EQ(b == SPT_BACKEND_CUDA, cuda == SPT_OK);
  EXPECT_EQ(spt_context_set_backend(ctx, (spt_backend)77), SPT_ERR_INVALID_ARGUMENT);
  spt_context_free(ctx);
  EXPECT_EQ(spt_context_create(nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_thread_last_error()).find("out"), std::string::npos);
}

TEST(Context, ThreadCountsAreBounded) {
  // Before the bound, 100000 was accepted and the next kernel crashed inside
  // libgomp (or libgomp exited the process).
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  EXPECT_EQ(spt_context_set_threads(ctx, 100000), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("SPT_MAX_THREADS"), std::string::npos) << spt_last_error(ctx);
  EXPECT_EQ(spt_context_set_threads(ctx, SPT_MAX_THREADS + 1), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_context_set_threads(ctx, SPT_MAX_THREADS), SPT_OK);
  int t = 0;
  EXPECT_EQ(spt_context_get_threads(ctx, &t), SPT_OK);
  EXPECT_EQ(t, SPT_MAX_THREADS);
  // The default follows OpenMP's but never exceeds the processors: an
  // OMP_NUM_THREADS of 100000 (set here through omp_set_num_threads) gives
  // a runnable count, and a kernel runs.
  const int before = omp_get_max_threads();
  omp_set_num_threads(100000);
  EXPECT_EQ(spt_context_set_threads(ctx, 0), SPT_OK);
  EXPECT_EQ(spt_context_get_threads(ctx, &t), SPT_OK);
  EXPECT_GE(t, 1);
  EXPECT_LE(t, omp_get_num_procs());
  const spt_index dims[2] = {3, 2}, ind[4] = {0, 2, 1, 1};
  const double v[2] = {3, 4};
  spt_coo* x = nullptr;
  ASSERT_EQ(spt_coo_create_from_arrays(ctx, SPT_FLOAT64, 2, dims, 2, ind, 2, 0, v, 0, &x), SPT_OK);
  double norm = 0;
  EXPECT_EQ(spt_coo_norm(ctx, x, &norm), SPT_OK);
  EXPECT_EQ(norm, 5.0);
  omp_set_num_threads(before);
  spt_coo_free(x);
  spt_context_free(ctx);
}

TEST(Coo, CreateFromArraysOneBased) {
  // 2 x 3 x 4 tensor, 3 nonzeros, MATLAB-style nnz x order column-major subs.
  const spt_index subs[] = {1, 2, 1, /*mode1*/ 1, 3, 2, /*mode2*/ 4, 1, 2};
  const double vals[] = {1.5, -2.0, 3.0};
  spt_coo* x = nullptr;
  ASSERT_EQ(spt_coo_create_from_arrays(nullptr, SPT_FLOAT64, 3, nullptr, 3, subs, 3, 1, vals, 0, &x), SPT_OK);
  spt_index dims[3];
  ASSERT_EQ(spt_coo_dims(x, dims), SPT_OK);
  EXPECT_EQ(dims[0], 2u);
  EXPECT_EQ(dims[1], 3u);
  EXPECT_EQ(dims[2], 4u);
  const spt_index* i2 = nullptr;
  ASSERT_EQ(spt_coo_indices(x, 2, &i2), SPT_OK);
  EXPECT_EQ(i2[0], 3u);
  EXPECT_EQ(i2[1], 0u);
  spt_nnz nnz = 0;
  uint32_t order = 0;
  spt_dtype dt;
  ASSERT_EQ(spt_coo_info(x, &dt, &order, &nnz), SPT_OK);
  EXPECT_EQ(nnz, 3u);
  EXPECT_EQ(order, 3u);
  EXPECT_EQ(dt, SPT_FLOAT64);
  spt_coo_free(x);
}

TEST(Coo, RejectsBadInput) {
  const spt_index dims[] = {2, 2};
  const spt_index subs[] = {0, 2, 0, 1};
  const float vals[] = {1.f, 2.f};
  spt_coo* x = nullptr;
  EXPECT_EQ(spt_coo_create_from_arrays(nullptr, SPT_FLOAT32, 2, dims, 2, subs, 2, 0, vals, 0, &x),
            SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_thread_last_error()).find("outside dims"), std::string::npos);
  EXPECT_EQ(x, nullptr);
  const spt_index zero_dims[] = {2, 0};
  EXPECT_EQ(spt_coo_create(nullptr, SPT_FLOAT32, 2, zero_dims, &x), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_coo_create(nullptr, SPT_FLOAT32, 0, dims, &x), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_coo_create(nullptr, (spt_dtype)9, 2, dims, &x), SPT_ERR_INVALID_ARGUMENT);
  const spt_index one_based_zero[] = {0, 1, 1, 1};
  EXPECT_EQ(spt_coo_create_from_arrays(nullptr, SPT_FLOAT32, 2, dims, 2, one_based_zero, 2, 1, vals, 0, &x),
            SPT_ERR_INVALID_ARGUMENT);
  const spt_index ok_subs[] = {0, 1, 0, 1};
  const float bad_vals[] = {1.f, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_EQ(spt_coo_create_from_arrays(nullptr, SPT_FLOAT32, 2, dims, 2, ok_subs, 2, 0, bad_vals,
                                       SPT_COO_REJECT_NONFINITE, &x),
            SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_thread_last_error()).find("not finite"), std::string::npos);
  // Without the flag NaN is accepted.
  ASSERT_EQ(spt_coo_create_from_arrays(nullptr, SPT_FLOAT32, 2, dims, 2, ok_subs, 2, 0, bad_vals, 0, &x), SPT_OK);
  spt_coo_free(x);
}

TEST(Coo, ViewIsReadOnlyAndAppendGrows) {
  const spt_index dims[] = {3, 3};
  const spt_index subs[] = {0, 2, 1, 2};
  const double vals[] = {1.0, 2.0};
  spt_coo* v = nullptr;
  ASSERT_EQ(spt_coo_create_view(nullptr, SPT_FLOAT64, 2, dims, 2, subs, 2, vals, &v), SPT_OK);
  const void* pv = nullptr;
  ASSERT_EQ(spt_coo_values(v, &pv), SPT_OK);
  EXPECT_EQ(pv, vals);  // no copy
  const spt_index more[] = {0, 0};
  const double mv[] = {5.0};
  EXPECT_EQ(spt_coo_append(nullptr, v, 1, more, 1, 0, mv, 0), SPT_ERR_READ_ONLY);
  spt_coo* c = nullptr;
  ASSERT_EQ(spt_coo_copy(nullptr, v, &c), SPT_OK);
  const spt_index far[] = {7, 1};
  EXPECT_EQ(spt_coo_append(nullptr, c, 1, far, 1, 0, mv, 0), SPT_ERR_INVALID_ARGUMENT);
  spt_nnz nnz = 0;
  spt_coo_info(c, nullptr, nullptr, &nnz);
  EXPECT_EQ(nnz, 2u);  // unchanged after the failed append
  ASSERT_EQ(spt_coo_append(nullptr, c, 1, far, 1, 0, mv, SPT_COO_GROW_DIMS), SPT_OK);
  spt_index d[2];
  spt_coo_dims(c, d);
  EXPECT_EQ(d[0], 8u);
  EXPECT_EQ(d[1], 3u);
  spt_coo_free(c);
  spt_coo_free(v);
}

TEST(Matrix, LayoutsAndCopies) {
  const double a[] = {1, 2, 3, 4, 5, 6};  // 2 x 3 column-major: [[1,3,5],[2,4,6]]
  spt_matrix* m = nullptr;
  ASSERT_EQ(spt_matrix_create_copy(nullptr, SPT_FLOAT64, 2, 3, SPT_COL_MAJOR, a, 2, &m), SPT_OK);
  double row[6];
  ASSERT_EQ(spt_matrix_copy_out(m, SPT_ROW_MAJOR, row, 3), SPT_OK);
  EXPECT_EQ(row[0], 1);
  EXPECT_EQ(row[1], 3);
  EXPECT_EQ(row[3], 2);
  EXPECT_EQ(spt_matrix_copy_out(m, SPT_ROW_MAJOR, row, 2), SPT_ERR_INVALID_ARGUMENT);
  spt_matrix_free(m);
  EXPECT_EQ(spt_matrix_create(nullptr, SPT_FLOAT64, UINT64_MAX / 2, 4, SPT_ROW_MAJOR, &m), SPT_ERR_OVERFLOW);
}

TEST(Ktensor, CreateAndAccess) {
  const spt_index dims[] = {4, 5, 6};
  spt_ktensor* k = nullptr;
  ASSERT_EQ(spt_ktensor_create(nullptr, SPT_FLOAT32, 3, dims, 2, &k), SPT_OK);
  void* lambda = nullptr;
  ASSERT_EQ(spt_ktensor_lambda(k, &lambda), SPT_OK);
  EXPECT_EQ(static_cast<float*>(lambda)[1], 1.0f);
  spt_matrix* f = nullptr;
  ASSERT_EQ(spt_ktensor_factor(k, 2, &f), SPT_OK);
  spt_nnz rows = 0, cols = 0;
  spt_matrix_info(f, nullptr, &rows, &cols, nullptr, nullptr);
  EXPECT_EQ(rows, 6u);
  EXPECT_EQ(cols, 2u);
  EXPECT_EQ(spt_ktensor_factor(k, 3, &f), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_ktensor_create(nullptr, SPT_FLOAT32, 3, dims, 0, &k), SPT_ERR_INVALID_ARGUMENT);
  spt_ktensor_free(k);
}

// Sizes derived from arguments that a container or new[] refuses are
// SPT_ERR_OVERFLOW at the C ABI, never SPT_ERR_INTERNAL ("please report").
TEST(Guard, LengthErrorsAreOverflowNotInternal) {
  spt_status s = spt::guarded("probe", [] {
    std::vector<double> v;
    v.resize(v.max_size() + 1);  // std::length_error
  });
  EXPECT_EQ(s, SPT_ERR_OVERFLOW);
  std::string message = spt_thread_last_error();
  EXPECT_NE(message.find("probe: a size derived from the arguments is too large"), std::string::npos) << message;
  EXPECT_EQ(message.find("internal"), std::string::npos) << message;
  s = spt::guarded("probe", [] { throw std::bad_array_new_length(); });
  EXPECT_EQ(s, SPT_ERR_OVERFLOW);
  // Real bugs still say so.
  s = spt::guarded("probe", [] { throw std::out_of_range("bug"); });
  EXPECT_EQ(s, SPT_ERR_INTERNAL);
}

}  // namespace
