// Allocation failure in the HLS calls (the scheme of test_alloc_failure.cpp,
// issue 10, for spt_hls_*): this executable replaces the global operator new
// with one that fails the k-th allocation (or every one from the k-th on).
// For every k, building an HLS (order 3 and 4, 1 and 2 threads, a threshold
// that gives both a dense and a sparse part), decoding it and running its
// MTTKRP and TTMc must either succeed or return SPT_ERR_OUT_OF_MEMORY, leave
// *out untouched on error and free everything: the live allocation count
// after the call equals the count before. An allocation inside an OpenMP
// parallel region would throw there and terminate the process, so this also
// checks that the HLS code allocates only outside its parallel regions.
//
// The hook is test-only: it lives in this executable, not in the library.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "common/format_options.hpp"
#include "sptensor/sptensor.h"

namespace {

std::atomic<bool> g_armed{false};
std::atomic<bool> g_sticky{false};
std::atomic<long> g_count{0};
std::atomic<long> g_fail_at{0};
std::atomic<long> g_failed{0};
std::atomic<long> g_live{0};

void* allocate(size_t n, size_t align) {
  if (g_armed.load(std::memory_order_relaxed)) {
    const long c = g_count.fetch_add(1) + 1;
    const long k = g_fail_at.load();
    if (g_sticky.load() ? c >= k : c == k) {
      g_failed.fetch_add(1);
      return nullptr;
    }
  }
  void* p = nullptr;
  if (align <= alignof(std::max_align_t)) p = std::malloc(n ? n : 1);
  else if (posix_memalign(&p, align, n ? n : 1) != 0) p = nullptr;
  if (p) g_live.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void release(void* p) {
  if (!p) return;
  g_live.fetch_sub(1, std::memory_order_relaxed);
  std::free(p);
}

}  // namespace

#include "common/replaced_new_delete.hpp"

namespace {

constexpr long kMaxAllocations = 20000;

class HlsAllocFailure : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    ASSERT_EQ(spt_context_create(&ctx_), SPT_OK);
    spt_context_set_backend(ctx_, SPT_BACKEND_CPU);
    spt::record_error(ctx_, std::string(4096, 'x'));  // error strings keep this capacity
    order_ = GetParam();
    // One tile holding 80 distinct cells (dense at threshold 40) plus 30
    // scattered nonzeros (sparse).
    const spt_nnz n = 110;
    std::vector<spt_index> ind(size_t(order_) * n);
    std::vector<double> val;
    for (spt_nnz k = 0; k < n; ++k) {
      for (uint32_t m = 0; m < order_; ++m) {
        spt_index c = k < 80 ? spt_index((k * (m + 3) + m) % 16) : spt_index((k * (2 * m + 7)) % 40);
        if (m == 0 && k < 80) c = spt_index(k % 16);
        if (m == 1 && k < 80) c = spt_index(k / 16);
        if (m == 3 && k < 80) c = spt_index(k % 2);  // one slab of depth 2
        ind[size_t(m) * n + k] = c;
      }
      val.push_back(1.0 + double(k % 7));
    }
    ASSERT_EQ(spt_coo_create_from_arrays(ctx_, SPT_FLOAT64, order_, nullptr, n, ind.data(), n, 0, val.data(), 0, &x_),
              SPT_OK)
        << spt_last_error(ctx_);
  }
  void TearDown() override {
    spt_coo_free(x_);
    spt_context_free(ctx_);
  }

  // op returns its status (and frees what it created); for every k the
  // call succeeds, or fails cleanly with OUT_OF_MEMORY.
  void for_every_k(const char* what, const std::function<spt_status()>& op) {
    ASSERT_EQ(op(), SPT_OK) << what << ": " << spt_last_error(ctx_);
    for (bool sticky : {false, true}) {
      long failures = 0;
      bool finished = false;
      for (long k = 1; k <= kMaxAllocations && !finished; ++k) {
        const long live_before = g_live.load();
        g_count = 0;
        g_failed = 0;
        g_fail_at = k;
        g_sticky = sticky;
        g_armed = true;
        const spt_status s = op();
        g_armed = false;
        const long live_after = g_live.load();  // before the message string below allocates
        const std::string msg = spt_last_error(ctx_);
        ASSERT_FALSE(bad_out_) << what << " k " << k << ": *out written on error";
        ASSERT_EQ(live_after, live_before) << what << " k " << k << (sticky ? " sticky" : "") << ": leak";
        if (g_failed.load() == 0) {
          ASSERT_EQ(s, SPT_OK) << what << ": failed without an injected failure: " << msg;
          finished = true;
        } else if (s == SPT_ERR_OUT_OF_MEMORY) {
          ++failures;
          EXPECT_NE(msg.find("out of memory"), std::string::npos) << what << " k " << k << ": " << msg;
        } else {
          ASSERT_EQ(s, SPT_OK) << what << " k " << k << ": " << spt_status_string(s) << ": " << msg;
        }
      }
      EXPECT_TRUE(finished) << what << ": more than " << kMaxAllocations << " allocations";
      EXPECT_GT(failures, 0) << what;
    }
  }

  spt_context* ctx_ = nullptr;
  spt_coo* x_ = nullptr;
  uint32_t order_ = 3;
  bool bad_out_ = false;
};

TEST_P(HlsAllocFailure, BuildDecodeAndProducts) {
  for (int threads : {1, 2}) {
    spt_context_set_threads(ctx_, threads);
    // Handles built unarmed for the product runs.
    spt_hls_options o;
    spt_hls_options_init(&o);
    o.root_mode = 1;
    o.dense_threshold = 40;
    o.slab_depth = 2;
    for_every_k("build + decode", [&] {
      spt_hls* h = nullptr;
      spt_status s = spt_hls_from_coo(ctx_, x_, &o, &h);
      if (s != SPT_OK) {
        bad_out_ |= h != nullptr;
        return s;
      }
      spt_coo* back = nullptr;
      s = spt_hls_to_coo(ctx_, h, &back);
      if (s != SPT_OK) bad_out_ |= back != nullptr;
      spt_coo_free(back);
      spt_hls_free(h);
      return s;
    });
    spt_hls* h = nullptr;
    ASSERT_EQ(spt_hls_from_coo(ctx_, x_, &o, &h), SPT_OK) << spt_last_error(ctx_);
    spt_hls_summary st;
    st.struct_size = sizeof st;
    ASSERT_EQ(spt_hls_info(nullptr, h, &st), SPT_OK);
    EXPECT_GT(st.dense_nnz, 0u);
    EXPECT_GT(st.sparse_nnz, 0u);
    spt_index dims[4];
    ASSERT_EQ(spt_hls_dims(h, dims), SPT_OK);
    std::vector<spt_matrix*> f(order_, nullptr);
    std::vector<const spt_matrix*> fp(order_, nullptr);
    spt_nnz cols = 1;
    for (uint32_t m = 0; m < order_; ++m) {
      ASSERT_EQ(spt_matrix_create(ctx_, SPT_FLOAT64, dims[m], 2, SPT_ROW_MAJOR, &f[m]), SPT_OK);
      if (m != o.root_mode) {
        fp[m] = f[m];
        cols *= 2;
      }
    }
    spt_matrix* out = nullptr;
    spt_matrix* y = nullptr;
    ASSERT_EQ(spt_matrix_create(ctx_, SPT_FLOAT64, dims[o.root_mode], 2, SPT_ROW_MAJOR, &out), SPT_OK);
    ASSERT_EQ(spt_matrix_create(ctx_, SPT_FLOAT64, dims[o.root_mode], cols, SPT_COL_MAJOR, &y), SPT_OK);
    for_every_k("mttkrp", [&] { return spt_mttkrp_hls(ctx_, h, fp.data(), spt::test::served_mode(h), out); });
    for_every_k("ttmc", [&] { return spt_ttmc_hls(ctx_, h, fp.data(), y); });
    for (spt_matrix* m : f) spt_matrix_free(m);
    spt_matrix_free(out);
    spt_matrix_free(y);
    spt_hls_free(h);
  }
}

INSTANTIATE_TEST_SUITE_P(Orders, HlsAllocFailure, ::testing::Values(3u, 4u));

}  // namespace
