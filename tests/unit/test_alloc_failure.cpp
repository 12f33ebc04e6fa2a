// Allocation failure (issue 10): every heap allocation the library makes goes
// through operator new (std::vector, buffer<T>, make_unique; src/ has no
// malloc), so this test executable replaces the global operator new with one
// that can be told to fail the k-th allocation. For every k over a small
// CP-ALS (COO, CSF, HiCOO, F-COO), COO -> HiCOO -> COO, COO -> CSF, CP-APR
// (COO and HiCOO Phi, a rank with no compiled-in kernel), Tucker-HOOI (both
// TTMc paths) and a text read, the call must
// either succeed (k past its last allocation) or return
// SPT_ERR_OUT_OF_MEMORY with a message, write nothing through `out`, and
// free everything it held: the number of live allocations after the call
// equals the number before (and ASan's leak check agrees, see
// scripts/sanitize.sh). Two failure kinds are run: the k-th allocation only
// (the library recovers and later allocations succeed) and every
// allocation from the k-th on (nothing succeeds any more, including the
// error-message strings of the failure path itself).
//
// The hook is test-only: it lives in this executable, not in the library.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "sptensor/cp_apr.h"
#include "common/format_options.hpp"
#include "sptensor/sptensor.h"
#include "sptensor/tucker.h"

namespace {

std::atomic<bool> g_armed{false};
std::atomic<bool> g_sticky{false};   // fail every allocation from the k-th on
std::atomic<long> g_count{0};        // allocations since arming
std::atomic<long> g_fail_at{0};      // k (1-based)
std::atomic<long> g_failed{0};       // allocations refused since arming
std::atomic<long> g_live{0};         // allocations not yet freed (all time)

std::atomic<size_t> g_fail_size{0};  // when not 0: fail every allocation of exactly this many bytes

bool should_fail(size_t n) {
  const size_t size = g_fail_size.load(std::memory_order_relaxed);
  if (size != 0 && n == size) return true;
  if (!g_armed.load(std::memory_order_relaxed)) return false;
  long c = g_count.fetch_add(1) + 1;
  long k = g_fail_at.load(std::memory_order_relaxed);
  bool fail = g_sticky.load(std::memory_order_relaxed) ? c >= k : c == k;
  if (fail) g_failed.fetch_add(1);
  return fail;
}

void* allocate(size_t n, size_t align) {
  if (should_fail(n)) return nullptr;
  void* p = nullptr;
  if (align <= alignof(std::max_align_t)) {
    p = std::malloc(n ? n : 1);
  } else if (posix_memalign(&p, align, n ? n : 1) != 0) {
    p = nullptr;
  }
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

// Largest k tried; the operations below need far fewer allocations.
constexpr long kMaxAllocations = 20000;

struct Outcome {
  long allocations = 0;  // allocations the successful run made
  long failures = 0;     // k for which the call returned OUT_OF_MEMORY
  long recovered = 0;    // k for which the library recovered and succeeded
};

class AllocFailure : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(spt_context_create(&ctx_), SPT_OK);
    spt_context_set_backend(ctx_, SPT_BACKEND_CPU);
    // Error strings keep their capacity: grow them once now so recording a
    // message later does not count as a live allocation.
    spt::record_error(ctx_, std::string(4096, 'x'));
    // A 3-mode tensor with 60 nonzeros (a few duplicates), deterministic.
    std::vector<spt_index> ind;
    std::vector<double> val;
    const spt_nnz n = 60;
    ind.resize(3 * n);
    for (spt_nnz k = 0; k < n; ++k) {
      ind[k] = static_cast<spt_index>((k * 7) % 9);
      ind[n + k] = static_cast<spt_index>((k * 5 + 1) % 11);
      ind[2 * n + k] = static_cast<spt_index>((k * 3 + 2) % 6);
      val.push_back(1.0 + static_cast<double>(k % 5));
    }
    ASSERT_EQ(spt_coo_create_from_arrays(ctx_, SPT_FLOAT64, 3, nullptr, n, ind.data(), n, 0, val.data(), 0, &x_),
              SPT_OK);
  }
  void TearDown() override {
    spt_coo_free(x_);
    spt_context_free(ctx_);
  }

  // Runs `op` (which returns its status and frees whatever it created on
  // success) with the k-th allocation failing, for k = 1, 2, ... until a
  // run makes fewer than k allocations.
  Outcome for_every_k(bool sticky, const std::function<spt_status()>& op) {
    Outcome r;
    for (long k = 1; k <= kMaxAllocations; ++k) {
      const long live_before = g_live.load();
      g_count = 0;
      g_failed = 0;
      g_fail_at = k;
      g_sticky = sticky;
      g_armed = true;
      spt_status s = op();
      g_armed = false;
      const long made = g_count.load();
      const long live_after = g_live.load();
      const std::string msg = spt_last_error(ctx_);
      std::string problem;
      if (bad_out_) problem = "*out written on error";
      bad_out_ = false;
      if (live_after != live_before)
        problem += cat_problem(problem, std::to_string(live_after - live_before) + " allocation(s) not freed");
      if (g_failed.load() == 0) {
        // k is past the last allocation: the call ran normally.
        if (s != SPT_OK) problem += cat_problem(problem, "failed without an injected failure: " + msg);
        r.allocations = made;
        EXPECT_TRUE(problem.empty()) << "normal run: " << problem;
        return r;
      }
      // An injected failure either surfaces as OUT_OF_MEMORY with a message,
      // or the library recovered from it (std::stable_sort, for one, falls
      // back to an unbuffered sort when its buffer cannot be had).
      if (s == SPT_ERR_OUT_OF_MEMORY) {
        ++r.failures;
        if (msg.find("out of memory") == std::string::npos)
          problem += cat_problem(problem, "message lacks 'out of memory': " + msg);
      } else if (s == SPT_OK) {
        ++r.recovered;
      } else {
        problem += cat_problem(problem, std::string("status ") + spt_status_string(s) + ": " + msg);
      }
      if (!problem.empty()) {
        ADD_FAILURE() << "allocation " << k << (sticky ? " and later" : "") << " failing: " << problem;
        return r;
      }
    }
    ADD_FAILURE() << "more than " << kMaxAllocations << " allocations";
    return r;
  }

  static std::string cat_problem(const std::string& so_far, const std::string& more) {
    return so_far.empty() ? more : "; " + more;
  }

  void run_both(const char* what, const std::function<spt_status()>& op) {
    ASSERT_EQ(op(), SPT_OK) << spt_last_error(ctx_);  // warm up (plugin lookup, thread pools)
    for (bool sticky : {false, true}) {
      Outcome o = for_every_k(sticky, op);
      std::printf("%-8s (%s): %ld allocations; failing each gave OUT_OF_MEMORY %ld times, recovered %ld times\n",
                  what, sticky ? "k-th and later" : "k-th only", o.allocations, o.failures, o.recovered);
      EXPECT_GT(o.failures, 0);
    }
  }

  spt_context* ctx_ = nullptr;
  spt_coo* x_ = nullptr;
  bool bad_out_ = false;  // set by an operation that wrote *out and failed (checked unarmed)
};

TEST_F(AllocFailure, CooToHicooAndBack) {
  for (int threads : {1, 2}) {
    spt_context_set_threads(ctx_, threads);
    run_both("hicoo", [&] {
      spt_hicoo* h = nullptr;
      spt_status s = spt_hicoo_from_coo(ctx_, x_, nullptr, &h);
      if (s != SPT_OK) {
        bad_out_ |= h != nullptr;
        return s;
      }
      spt_coo* back = nullptr;
      s = spt_hicoo_to_coo(ctx_, h, &back);
      if (s != SPT_OK) bad_out_ |= back != nullptr;
      spt_coo_free(back);
      spt_hicoo_free(h);
      return s;
    });
  }
}

TEST_F(AllocFailure, CooToCsf) {
  for (int threads : {1, 2}) {
    spt_context_set_threads(ctx_, threads);
    for (spt_csf_policy p : {SPT_CSF_ONEMODE, SPT_CSF_ALLMODE}) {
      run_both("csf", [&] {
        spt_csf* c = nullptr;
        spt_status s = spt_csf_from_coo(ctx_, x_, spt::test::CsfOptions(p), &c);
        if (s != SPT_OK) bad_out_ |= c != nullptr;
        spt_csf_free(c);
        return s;
      });
    }
  }
}

// A format builder (or the TTM result) whose array cannot be allocated
// says which array and how large: every allocation of exactly that
// array's size fails (a size no earlier allocation of the call has).
TEST_F(AllocFailure, FormatBuildersNameTheArrayThatDidNotFit) {
  const spt_nnz n = 100003;  // n * 4 bytes is no other allocation's size
  std::vector<spt_index> ind(3 * n);
  std::vector<double> val(n, 1.0);
  for (spt_nnz k = 0; k < n; ++k) {
    ind[k] = static_cast<spt_index>(k % 1000);
    ind[n + k] = static_cast<spt_index>(k / 1000);
    ind[2 * n + k] = static_cast<spt_index>(k % 7);
  }
  spt_coo* x = nullptr;
  ASSERT_EQ(spt_coo_create_from_arrays(ctx_, SPT_FLOAT64, 3, nullptr, n, ind.data(), n, 0, val.data(), 0, &x), SPT_OK);
  auto message_when_failing = [&](size_t bytes, const std::function<spt_status()>& op) {
    g_fail_size = bytes;
    const spt_status s = op();
    g_fail_size = 0;
    EXPECT_EQ(s, SPT_ERR_OUT_OF_MEMORY) << spt_last_error(ctx_);
    return std::string(spt_last_error(ctx_));
  };
  for (int threads : {1, 2}) {
    spt_context_set_threads(ctx_, threads);
    std::string m = message_when_failing(n * sizeof(spt_index), [&] {
      spt_csf* c = nullptr;
      const spt_status s = spt_csf_from_coo(ctx_, x, spt::test::CsfOptions(SPT_CSF_ONEMODE), &c);
      spt_csf_free(c);
      return s;
    });
    EXPECT_NE(m.find("out of memory for CSF: the "), std::string::npos) << m;
    EXPECT_NE(m.find("(nnz): 100,003 entries (400.0 kB)"), std::string::npos) << m;
    m = message_when_failing(n * sizeof(uint8_t), [&] {
      spt_hicoo* h = nullptr;
      const spt_status s = spt_hicoo_from_coo(ctx_, x, nullptr, &h);
      spt_hicoo_free(h);
      return s;
    });
    EXPECT_NE(m.find("out of memory for HiCOO: the element indices of mode 0 (nnz): 100,003 entries (100.0 kB)"),
              std::string::npos)
        << m;
    // SpTTM in mode 2: one fiber per (i0, i1), i.e. 100,003 fibers x rank 3.
    spt_matrix* u = nullptr;
    ASSERT_EQ(spt_matrix_create(ctx_, SPT_FLOAT64, 7, 3, SPT_ROW_MAJOR, &u), SPT_OK);
    m = message_when_failing(n * 3 * sizeof(double), [&] {
      spt_scoo* y = nullptr;
      const spt_status s = spt_ttm(ctx_, x, 2, u, &y);
      spt_scoo_free(y);
      return s;
    });
    EXPECT_NE(m.find("out of memory for TTM result: the values (100003 fibers x rank 3): 300,009 entries (2.4 MB)"),
              std::string::npos)
        << m;
    spt_matrix_free(u);
  }
  spt_coo_free(x);
}

TEST_F(AllocFailure, CpAls) {
  for (int threads : {1, 2}) {
    spt_context_set_threads(ctx_, threads);
    for (spt_tensor_format f :
         {SPT_TENSOR_FORMAT_COO, SPT_TENSOR_FORMAT_CSF, SPT_TENSOR_FORMAT_HICOO, SPT_TENSOR_FORMAT_FCOO}) {
      spt_cpd_options o;
      spt_cpd_options_init(&o);
      o.rank = 3;
      o.max_iters = 3;
      o.seed = 7;
      o.format = f;
      run_both("cp-als", [&] {
        spt_ktensor* k = nullptr;
        spt_status s = spt_cpd_als(ctx_, x_, &o, &k);
        if (s < 0) bad_out_ |= k != nullptr;
        spt_ktensor_free(k);
        return s < 0 ? s : SPT_OK;
      });
    }
  }
}

// CP-APR: rank 3 has no compiled-in Phi kernel (8, 16 and 32 do), so the
// COO Phi runs its run-time-rank path, whose per-thread rows are allocated
// before its parallel region (an allocation inside it would terminate).
TEST_F(AllocFailure, CpApr) {
  for (int threads : {1, 2}) {
    spt_context_set_threads(ctx_, threads);
    for (spt_tensor_format f : {SPT_TENSOR_FORMAT_COO, SPT_TENSOR_FORMAT_HICOO}) {
      spt_cp_apr_options o;
      spt_cp_apr_options_init(&o);
      o.rank = 3;
      o.max_outer_iters = 2;
      o.max_inner_iters = 2;
      o.seed = 7;
      o.format = f;
      run_both("cp-apr", [&] {
        spt_ktensor* k = nullptr;
        spt_status s = spt_cp_apr(ctx_, x_, &o, &k);
        if (s < 0) bad_out_ |= k != nullptr;
        spt_ktensor_free(k);
        return s < 0 ? s : SPT_OK;
      });
    }
  }
}

// Tucker-HOOI on each TTMc path (spt_tucker_options.ttmc forces one): the
// chain kernel's per-thread blocks are allocated before its parallel region.
TEST_F(AllocFailure, TuckerHooi) {
  const spt_index ranks[3] = {2, 3, 2};
  for (const spt_tucker_ttmc method : {SPT_TUCKER_TTMC_CHAIN, SPT_TUCKER_TTMC_ONE_SHOT}) {
    const char* path = method == SPT_TUCKER_TTMC_CHAIN ? "chain" : "one_shot";
    for (int threads : {1, 2}) {
      spt_context_set_threads(ctx_, threads);
      spt_tucker_options o;
      spt_tucker_options_init(&o);
      o.ranks = ranks;
      o.ranks_count = 3;
      o.max_iters = 2;
      o.seed = 7;
      o.ttmc = method;
      run_both(path, [&] {
        spt_ttensor* t = nullptr;
        spt_status s = spt_tucker_hooi(ctx_, x_, &o, &t);
        if (s < 0) bad_out_ |= t != nullptr;
        spt_ttensor_free(t);
        return s < 0 ? s : SPT_OK;
      });
    }
  }
}

TEST_F(AllocFailure, ReadText) {
  namespace fs = std::filesystem;
  std::string path = (fs::temp_directory_path() / ("spt_alloc_failure_" + std::to_string(getpid()) + ".tns")).string();
  {
    std::ofstream f(path);
    f << "# small\n";
    for (int k = 0; k < 40; ++k) f << (k % 5 + 1) << ' ' << (k % 7 + 1) << ' ' << (k % 3 + 1) << ' ' << k << "\n";
  }
  spt_context_set_threads(ctx_, 2);
  run_both("read", [&] {
    spt_coo* y = nullptr;
    spt_status s = spt_read(ctx_, path.c_str(), nullptr, &y);
    if (s != SPT_OK) bad_out_ |= y != nullptr;
    spt_coo_free(y);
    return s;
  });
  fs::remove(path);
}

// std::bad_alloc thrown from inside the library is mapped to
// SPT_ERR_OUT_OF_MEMORY by the guard, also without a context (the thread's
// slot gets the message).
TEST_F(AllocFailure, BadAllocWithoutContext) {
  g_count = 0;
  g_failed = 0;
  g_fail_at = 1;
  g_sticky = false;
  g_armed = true;
  spt_coo* copy = nullptr;
  spt_status s = spt_coo_copy(nullptr, x_, &copy);
  g_armed = false;
  EXPECT_EQ(s, SPT_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(copy, nullptr);
  EXPECT_NE(std::string(spt_thread_last_error()).find("out of memory"), std::string::npos) << spt_thread_last_error();
}

}  // namespace
