// Concurrency (issue 10): the header's thread-safety statements, checked.
//  - "distinct handles may be used concurrently from different threads":
//    four threads each read, convert (HiCOO, CSF), run MTTKRPs and a CP-ALS
//    with their own context and handles; every result is bitwise equal to
//    the same work done serially first.
//  - "read-only functions on a tensor may run concurrently with each other
//    when each call uses its own context": the same, on one shared tensor.
//  - last-error messages are per context and per thread: threads that fail
//    on purpose, interleaved, each read back their own message.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/format_options.hpp"
#include "sptensor/sptensor.h"

namespace {

constexpr int kThreads = 4;

// Everything one worker computes, as raw bytes for bitwise comparison.
struct Results {
  std::vector<double> values;
  std::string error;
  bool operator==(const Results& o) const {
    return values.size() == o.values.size() &&
           std::memcmp(values.data(), o.values.data(), values.size() * sizeof(double)) == 0;
  }
};

// Fails the calling test thread-safely: gtest assertions are thread safe
// on POSIX, but keep the failing worker's first message for the report.
#define WORK_CHECK(cond, what)         \
  do {                                 \
    if (!(cond)) {                     \
      r.error = what;                  \
      return r;                        \
    }                                  \
  } while (0)

void append_matrix(Results& r, spt_matrix* m) {
  spt_matrix_summary info;
  info.struct_size = sizeof info;
  spt_matrix_info(nullptr, m, &info);
  const spt_nnz rows = info.rows, cols = info.cols;
  std::vector<double> buf(rows * cols);
  spt_matrix_copy_out(m, SPT_ROW_MAJOR, buf.data(), cols);
  r.values.insert(r.values.end(), buf.begin(), buf.end());
}

// The work of one thread on tensor `x` (read from `path` when x is NULL).
Results work(const std::string& path, const spt_coo* shared, int threads_per_call) {
  Results r;
  spt_context* ctx = nullptr;
  WORK_CHECK(spt_context_create(&ctx) == SPT_OK, "context");
  spt_context_set_threads(ctx, threads_per_call);
  spt_context_set_backend(ctx, SPT_BACKEND_CPU);
  spt_coo* own = nullptr;
  const spt_coo* x = shared;
  if (!x) {
    WORK_CHECK(spt_read(ctx, path.c_str(), nullptr, &own) == SPT_OK, spt_last_error(ctx));
    x = own;
  }
  spt_coo_summary info;
  info.struct_size = sizeof info;
  WORK_CHECK(spt_coo_info(ctx, x, &info) == SPT_OK, spt_last_error(ctx));
  const uint32_t order = info.order;
  std::vector<spt_index> dims(order);
  spt_coo_dims(x, dims.data());
  double norm = 0;
  spt_coo_norm(ctx, x, &norm);
  r.values.push_back(norm);

  // Factors: deterministic values.
  const spt_index rank = 4;
  std::vector<spt_matrix*> f(order, nullptr);
  for (uint32_t m = 0; m < order; ++m) {
    std::vector<double> v(static_cast<size_t>(dims[m]) * rank);
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.25 + static_cast<double>((i * 37 + m) % 101) / 101.0;
    spt_matrix_create_copy(ctx, SPT_FLOAT64, dims[m], rank, SPT_ROW_MAJOR, v.data(), rank, &f[m]);
  }
  spt_hicoo* h = nullptr;
  spt_csf* c = nullptr;
  WORK_CHECK(spt_hicoo_from_coo(ctx, x, nullptr, &h) == SPT_OK, spt_last_error(ctx));
  WORK_CHECK(spt_csf_from_coo(ctx, x, spt::test::CsfOptions(SPT_CSF_ALLMODE), &c) == SPT_OK, spt_last_error(ctx));
  spt_coo* back = nullptr;
  WORK_CHECK(spt_hicoo_to_coo(ctx, h, &back) == SPT_OK, spt_last_error(ctx));
  WORK_CHECK(spt_coo_info(ctx, back, &info) == SPT_OK, spt_last_error(ctx));
  r.values.push_back(static_cast<double>(info.nnz));
  spt_coo_free(back);

  for (uint32_t mode = 0; mode < order; ++mode) {
    spt_matrix* out = nullptr;
    spt_matrix_create(ctx, SPT_FLOAT64, dims[mode], rank, SPT_ROW_MAJOR, &out);
    WORK_CHECK(spt_mttkrp(ctx, x, f.data(), mode, out) == SPT_OK, spt_last_error(ctx));
    append_matrix(r, out);
    WORK_CHECK(spt_mttkrp_csf(ctx, c, f.data(), mode, out) == SPT_OK, spt_last_error(ctx));
    append_matrix(r, out);
    WORK_CHECK(spt_mttkrp_hicoo(ctx, h, f.data(), mode, out) == SPT_OK, spt_last_error(ctx));
    append_matrix(r, out);
    spt_matrix_free(out);
  }

  for (spt_tensor_format fmt : {SPT_TENSOR_FORMAT_COO, SPT_TENSOR_FORMAT_CSF, SPT_TENSOR_FORMAT_HICOO}) {
    spt_cpd_options o;
    spt_cpd_options_init(&o);
    o.rank = 3;
    o.max_iters = 4;
    o.tol = 0;
    o.seed = 11;
    o.format = fmt;
    spt_ktensor* k = nullptr;
    spt_status s = spt_cpd_als(ctx, x, &o, &k);
    WORK_CHECK(s >= 0, spt_last_error(ctx));
    double fit = 0;
    spt_ktensor_result(k, &fit, nullptr, nullptr);
    r.values.push_back(fit);
    for (uint32_t m = 0; m < order; ++m) {
      spt_matrix* fm = nullptr;
      spt_ktensor_factor(k, m, &fm);
      append_matrix(r, fm);
    }
    spt_ktensor_free(k);
  }

  for (spt_matrix* m : f) spt_matrix_free(m);
  spt_hicoo_free(h);
  spt_csf_free(c);
  spt_coo_free(own);
  spt_context_free(ctx);
  return r;
}

class Concurrency : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/spt_test_concurrency_XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/x.tns";
    // A skewed 3-mode tensor of 3000 nonzeros (some duplicates), written
    // as text so every worker parses it.
    std::ofstream f(path_);
    uint64_t s = 12345;
    for (int k = 0; k < 3000; ++k) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      unsigned a = static_cast<unsigned>(s >> 33);
      f << (a % 37 + 1) << ' ' << ((a >> 7) % 53 % (1 + k % 53) + 1) << ' ' << ((a >> 13) % 29 + 1) << ' '
        << (static_cast<double>(a % 1000) / 250.0 - 2.0) << '\n';
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_, path_;
};

TEST_F(Concurrency, DistinctContextsAndHandlesMatchSerial) {
  for (int per_call : {1, 2}) {
    Results serial = work(path_, nullptr, per_call);
    ASSERT_TRUE(serial.error.empty()) << serial.error;
    ASSERT_GT(serial.values.size(), 1000u);
    std::vector<Results> got(kThreads);
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; ++t) pool.emplace_back([&, t] { got[t] = work(path_, nullptr, per_call); });
    for (auto& th : pool) th.join();
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_TRUE(got[t].error.empty()) << "thread " << t << ": " << got[t].error;
      EXPECT_TRUE(got[t] == serial) << "thread " << t << " differs from the serial run (" << per_call
                                    << " threads per call)";
    }
  }
}

TEST_F(Concurrency, SharedReadOnlyTensorMatchesSerial) {
  spt_coo* x = nullptr;
  ASSERT_EQ(spt_read(nullptr, path_.c_str(), nullptr, &x), SPT_OK) << spt_thread_last_error();
  Results serial = work("", x, 2);
  ASSERT_TRUE(serial.error.empty()) << serial.error;
  std::vector<Results> got(kThreads);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) pool.emplace_back([&, t] { got[t] = work("", x, 2); });
  for (auto& th : pool) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(got[t].error.empty()) << "thread " << t << ": " << got[t].error;
    EXPECT_TRUE(got[t] == serial) << "thread " << t << " differs from the serial run";
  }
  spt_coo_free(x);
}

// Each thread fails on purpose with a message naming its own number, many
// times, interleaved with the others; its context and its thread slot must
// always hold its own message. Calls without a context write only the
// thread slot.
TEST(ConcurrencyErrors, LastErrorIsPerContextAndPerThread) {
  std::atomic<int> mismatches{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      spt_context* ctx = nullptr;
      if (spt_context_create(&ctx) != SPT_OK) {
        ++mismatches;
        return;
      }
      while (!go) std::this_thread::yield();
      const spt_index dims[] = {3};
      for (int i = 0; i < 2000; ++i) {
        spt_coo* out = nullptr;
        const int base = 100 + t;  // invalid: index_base must be 0 or 1
        spt_index ind[] = {5};
        double v[] = {1};
        spt_status s = spt_coo_create_from_arrays(ctx, SPT_FLOAT64, 1, dims, 1, ind, 1, base, v, 0, &out);
        std::string want = "got " + std::to_string(base);
        if (s != SPT_ERR_INVALID_ARGUMENT || std::string(spt_last_error(ctx)).find(want) == std::string::npos ||
            std::string(spt_thread_last_error()).find(want) == std::string::npos)
          ++mismatches;
        // Without a context: only the thread slot changes.
        s = spt_context_set_threads(nullptr, 1);
        if (s != SPT_ERR_INVALID_ARGUMENT || std::string(spt_last_error(ctx)).find(want) == std::string::npos ||
            std::string(spt_thread_last_error()).find("spt_context_set_threads") == std::string::npos)
          ++mismatches;
      }
      spt_context_free(ctx);
    });
  }
  go = true;
  for (auto& th : pool) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// Contexts are independent: settings made on one are not seen by another
// used at the same time.
TEST(ConcurrencyErrors, ContextSettingsAreIndependent) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      spt_context* ctx = nullptr;
      spt_context_create(&ctx);
      for (int i = 0; i < 5000; ++i) {
        spt_context_set_threads(ctx, t + 1);
        int got = 0;
        spt_context_get_threads(ctx, &got);
        if (got != t + 1) ++wrong;
      }
      spt_context_free(ctx);
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
