// Core objects through the C API: contexts, errors, COO creation, views,
// append, accessors, matrices, ktensors.
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/guard.hpp"
#include "core/context.hpp"
#include "common/summaries.hpp"
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

// What the log callback below saw: whether two threads were ever inside it
// at once, and the messages.
struct LogCalls {
  spt_context* ctx = nullptr;
  std::atomic<int> threads_inside{0};
  std::atomic<bool> overlapped{false};
  std::vector<std::string> lines;
};
thread_local int log_depth = 0;

void counting_log(void* data, int, const char* message) {
  auto* calls = static_cast<LogCalls*>(data);
  if (log_depth++ == 0 && calls->threads_inside.fetch_add(1) != 0) calls->overlapped = true;
  calls->lines.emplace_back(message);
  // A callback that calls back into the library, which logs on this thread.
  if (std::string(message) == "outer") spt::log(*calls->ctx, 1, "inner");
  if (--log_depth == 0) calls->threads_inside.fetch_sub(1);
}

// The log callback gets one message at a time though several threads log,
// and may call the library, which logs again, without waiting for itself.
TEST(Context, LogCallbackOneMessageAtATime) {
  LogCalls calls;
  ASSERT_EQ(spt_context_create(&calls.ctx), SPT_OK);
  ASSERT_EQ(spt_context_set_verbosity(calls.ctx, 1), SPT_OK);
  ASSERT_EQ(spt_context_set_log(calls.ctx, counting_log, &calls), SPT_OK);
  spt::log(*calls.ctx, 1, "outer");
  ASSERT_EQ(calls.lines.size(), 2u);
  EXPECT_EQ(calls.lines[0], "outer");
  EXPECT_EQ(calls.lines[1], "inner");
  int team = 0;
#pragma omp parallel num_threads(8)
  {
#pragma omp single
    team = omp_get_num_threads();
    for (int k = 0; k < 200; ++k) spt::log(*calls.ctx, 1, "message");
  }
  EXPECT_FALSE(calls.overlapped);
  EXPECT_EQ(calls.lines.size(), 2u + size_t(team) * 200u);
  spt_context_free(calls.ctx);
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
  spt_coo_summary info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(spt_coo_info(nullptr, x, &info), SPT_OK);
  EXPECT_EQ(info.struct_size, sizeof info);
  EXPECT_EQ(info.nnz, 3u);
  EXPECT_EQ(info.order, 3u);
  EXPECT_EQ(info.dtype, SPT_FLOAT64);
  EXPECT_EQ(info.read_only, 0);
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
  EXPECT_EQ(spt_test::info_of(v).read_only, 1);
  const spt_index more[] = {0, 0};
  const double mv[] = {5.0};
  EXPECT_EQ(spt_coo_append(nullptr, v, 1, more, 1, 0, mv, 0), SPT_ERR_READ_ONLY);
  spt_coo* c = nullptr;
  ASSERT_EQ(spt_coo_copy(nullptr, v, &c), SPT_OK);
  const spt_index far[] = {7, 1};
  EXPECT_EQ(spt_coo_append(nullptr, c, 1, far, 1, 0, mv, 0), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_test::info_of(c).nnz, 2u);  // unchanged after the failed append
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
  const spt_matrix_summary shape = spt_test::info_of(f);
  EXPECT_EQ(shape.rows, 6u);
  EXPECT_EQ(shape.cols, 2u);
  EXPECT_EQ(shape.wrapped, 0);
  EXPECT_EQ(spt_ktensor_factor(k, 3, &f), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_ktensor_create(nullptr, SPT_FLOAT32, 3, dims, 0, &k), SPT_ERR_INVALID_ARGUMENT);
  spt_ktensor_free(k);
}

// The info contract (docs/api-conventions.md rule 6) of one core object:
// NULL handle or info, struct_size 0 or smaller than the struct are
// SPT_ERR_INVALID_ARGUMENT with a message (in the context, or the thread's
// slot with ctx NULL); a longer struct (a newer caller's) gets this
// release's fields with its tail untouched and its struct_size kept.
template <typename Summary, typename Handle>
void check_info_contract(spt_status (*info)(spt_context*, const Handle*, Summary*), const Handle* h,
                         const std::string& name) {
  SCOPED_TRACE(name);
  static_assert(offsetof(Summary, struct_size) == 0, "struct_size comes first");
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  auto message_has = [&](const char* part) {
    const std::string m = spt_last_error(ctx);
    EXPECT_NE(m.find(name), std::string::npos) << m;
    EXPECT_NE(m.find(part), std::string::npos) << m << "\n  lacks: " << part;
  };
  Summary want;
  std::memset(&want, 0x11, sizeof want);
  want.struct_size = sizeof want;
  ASSERT_EQ(info(ctx, h, &want), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(want.struct_size, sizeof want);

  Summary s;
  s.struct_size = sizeof s;
  EXPECT_EQ(info(ctx, nullptr, &s), SPT_ERR_INVALID_ARGUMENT);
  message_has("must not be NULL");
  EXPECT_EQ(info(ctx, h, nullptr), SPT_ERR_INVALID_ARGUMENT);
  message_has("info must not be NULL");
  for (size_t bad : {size_t(0), sizeof(size_t), sizeof(Summary) - 1}) {
    std::memset(&s, 0x22, sizeof s);
    s.struct_size = bad;
    EXPECT_EQ(info(ctx, h, &s), SPT_ERR_INVALID_ARGUMENT) << "struct_size " << bad;
    message_has("struct_size");
    EXPECT_EQ(s.struct_size, bad);
    EXPECT_EQ(reinterpret_cast<const unsigned char*>(&s)[sizeof(size_t)], 0x22) << "nothing written";
  }
  // ctx NULL: the message goes to the calling thread's slot only.
  s.struct_size = 0;
  EXPECT_EQ(info(nullptr, h, &s), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_thread_last_error()).find("struct_size"), std::string::npos);

  struct {
    Summary s;
    unsigned char tail[16];
  } longer;
  std::memset(&longer, 0x5a, sizeof longer);
  longer.s.struct_size = sizeof longer;
  ASSERT_EQ(info(ctx, h, &longer.s), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(longer.s.struct_size, sizeof longer);
  EXPECT_EQ(std::memcmp(reinterpret_cast<const char*>(&longer.s) + sizeof(size_t),
                        reinterpret_cast<const char*>(&want) + sizeof(size_t), sizeof(Summary) - sizeof(size_t)),
            0)
      << "a longer struct gets the same fields";
  for (unsigned char c : longer.tail) EXPECT_EQ(c, 0x5a);
  spt_context_free(ctx);
}

TEST(CoreInfo, EveryObjectFollowsTheInfoContract) {
  const spt_index dims[] = {3, 4, 2};
  const spt_index subs[] = {0, 2, 1, 1, 3, 0, 0, 1, 1};  // mode-major, ld 3
  const double vals[] = {1.0, 2.0, 3.0};
  spt_coo* x = nullptr;
  ASSERT_EQ(spt_coo_create_from_arrays(nullptr, SPT_FLOAT64, 3, dims, 3, subs, 3, 0, vals, 0, &x), SPT_OK);
  check_info_contract(spt_coo_info, x, "spt_coo_info");

  spt_matrix* u = nullptr;  // 4 x 2, wrapping caller memory
  double u_data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_EQ(spt_matrix_wrap(nullptr, SPT_FLOAT64, 4, 2, SPT_COL_MAJOR, u_data, 4, &u), SPT_OK);
  check_info_contract(spt_matrix_info, u, "spt_matrix_info");
  const spt_matrix_summary ms = spt_test::info_of(u);
  EXPECT_EQ(ms.dtype, SPT_FLOAT64);
  EXPECT_EQ(ms.layout, SPT_COL_MAJOR);
  EXPECT_EQ(ms.rows, 4u);
  EXPECT_EQ(ms.cols, 2u);
  EXPECT_EQ(ms.ld, 4u);
  EXPECT_EQ(ms.wrapped, 1);

  spt_scoo* y = nullptr;  // x times U^T in mode 1: dense mode 1 of size 2
  ASSERT_EQ(spt_ttm(nullptr, x, 1, u, &y), SPT_OK) << spt_thread_last_error();
  check_info_contract(spt_scoo_info, y, "spt_scoo_info");
  const spt_scoo_summary ys = spt_test::info_of(y);
  EXPECT_EQ(ys.dtype, SPT_FLOAT64);
  EXPECT_EQ(ys.order, 3u);
  EXPECT_EQ(ys.dense_mode, 1u);
  EXPECT_EQ(ys.dense_mode_count, 1u);
  EXPECT_EQ(ys.block_length, 2u);
  EXPECT_GE(ys.nfibers, 1u);

  spt_ktensor* k = nullptr;
  ASSERT_EQ(spt_ktensor_create(nullptr, SPT_FLOAT32, 3, dims, 2, &k), SPT_OK);
  check_info_contract(spt_ktensor_info, k, "spt_ktensor_info");
  const spt_ktensor_summary ks = spt_test::info_of(k);
  EXPECT_EQ(ks.dtype, SPT_FLOAT32);
  EXPECT_EQ(ks.order, 3u);
  EXPECT_EQ(ks.rank, 2u);
  EXPECT_EQ(ks.iterations, 0);
  EXPECT_EQ(ks.fit, 0.0);
  EXPECT_EQ(ks.converged, 0);

  spt_ttensor* t = nullptr;
  const spt_index ranks[] = {1, 1, 1};
  spt_tucker_options to;
  spt_tucker_options_init(&to);
  to.ranks = ranks;
  to.ranks_count = 3;
  const spt_status hooi = spt_tucker_hooi(nullptr, x, &to, &t);
  ASSERT_TRUE(hooi == SPT_OK || hooi == SPT_WARN_NOT_CONVERGED) << spt_thread_last_error();
  check_info_contract(spt_ttensor_info, t, "spt_ttensor_info");
  const spt_ttensor_summary ts = spt_test::info_of(t);
  EXPECT_EQ(ts.dtype, SPT_FLOAT64);
  EXPECT_EQ(ts.order, 3u);
  EXPECT_GE(ts.iterations, 1);
  EXPECT_EQ(ts.converged, hooi == SPT_OK ? 1 : 0);
  double history_fit = 0;
  int count = 0;
  const double* fits = nullptr;
  ASSERT_EQ(spt_ttensor_history(t, &count, &fits, nullptr), SPT_OK);
  ASSERT_GE(count, 1);
  history_fit = fits[count - 1];
  EXPECT_EQ(ts.fit, history_fit);

  spt_dense* d = nullptr;
  ASSERT_EQ(spt_dense_create(nullptr, SPT_FLOAT32, 3, dims, &d), SPT_OK);
  check_info_contract(spt_dense_info, d, "spt_dense_info");
  const spt_dense_summary ds = spt_test::info_of(d);
  EXPECT_EQ(ds.dtype, SPT_FLOAT32);
  EXPECT_EQ(ds.order, 3u);
  EXPECT_EQ(ds.count, 24u);

  spt_permutation* p = nullptr;
  const spt_index p0[] = {2, 0, 1}, p1[] = {0, 1, 2, 3}, p2[] = {1, 0};
  const spt_index* perms[] = {p0, p1, p2};
  ASSERT_EQ(spt_permutation_create(nullptr, 3, dims, perms, 0, &p), SPT_OK) << spt_thread_last_error();
  check_info_contract(spt_permutation_info, p, "spt_permutation_info");
  EXPECT_EQ(spt_test::info_of(p).order, 3u);
  spt_index pdims[3] = {0, 0, 0};
  ASSERT_EQ(spt_permutation_dims(p, pdims), SPT_OK);
  EXPECT_EQ(pdims[0], 3u);
  EXPECT_EQ(pdims[1], 4u);
  EXPECT_EQ(pdims[2], 2u);
  EXPECT_EQ(spt_permutation_dims(p, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_permutation_dims(nullptr, pdims), SPT_ERR_INVALID_ARGUMENT);

  spt_permutation_free(p);
  spt_dense_free(d);
  spt_ttensor_free(t);
  spt_ktensor_free(k);
  spt_scoo_free(y);
  spt_matrix_free(u);
  spt_coo_free(x);
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
