// ScopedFlushSubnormals (src/core/subnormals.hpp): subnormal float results
// are flushed to zero on every thread of the team while it lives, and each
// thread's own mode is back afterwards; a float32 CP-ALS leaves the
// caller's threads as it found them.
#include <gtest/gtest.h>
#include <omp.h>

#include <cfloat>
#include <vector>

#include "common/test_util.hpp"
#include "core/subnormals.hpp"
#include "sptensor/sptensor.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace spt::test {
namespace {

#if defined(__x86_64__)
constexpr unsigned kFlushBits = 0x8040u;  // FTZ | DAZ

// Per team thread (of `threads`): its FTZ/DAZ bits, and whether half the
// smallest normal float came out as zero.
struct ThreadState {
  unsigned bits = 0;
  bool flushed = false;
};
std::vector<ThreadState> team_state(int threads) {
  std::vector<ThreadState> state(threads);
#pragma omp parallel num_threads(threads)
  {
    volatile float smallest = FLT_MIN;
    volatile float half = smallest * 0.5f;
    state[omp_get_thread_num()] = {_mm_getcsr() & kFlushBits, half == 0.0f};
  }
  return state;
}
// The calling thread outside a region (LLVM's OpenMP puts the master's
// mode back at each join), the others inside one (GCC's does not propagate).
void set_team_bits(int threads, unsigned bits) {
  _mm_setcsr((_mm_getcsr() & ~kFlushBits) | bits);
#pragma omp parallel num_threads(threads)
  _mm_setcsr((_mm_getcsr() & ~kFlushBits) | bits);
}
#endif

TEST(Subnormals, FlushedOnEveryTeamThreadWhileAliveThenRestored) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "MXCSR is x86 only";
#else
  constexpr int threads = 2;
  for (const ThreadState& s : team_state(threads)) {
    ASSERT_EQ(s.bits, 0u) << "the test starts from IEEE subnormals";
    ASSERT_FALSE(s.flushed);
  }
  {
    ScopedFlushSubnormals flush(threads);
    for (const ThreadState& s : team_state(threads)) {
      EXPECT_EQ(s.bits, kFlushBits);
      EXPECT_TRUE(s.flushed);
    }
    // More threads than the guard was made for: their mode is restored
    // too when it goes (they inherit the flushing mode, or not).
    team_state(threads + 1);
  }
  for (const ThreadState& s : team_state(threads + 1)) {
    EXPECT_EQ(s.bits, 0u);
    EXPECT_FALSE(s.flushed);
  }
#endif
}

TEST(Subnormals, ACallerThatFlushesKeepsFlushing) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "MXCSR is x86 only";
#else
  constexpr int threads = 2;
  set_team_bits(threads, kFlushBits);
  { ScopedFlushSubnormals flush(threads); }
  for (const ThreadState& s : team_state(threads)) EXPECT_EQ(s.bits, kFlushBits);
  set_team_bits(threads, 0);
  for (const ThreadState& s : team_state(threads)) EXPECT_EQ(s.bits, 0u);
#endif
}

// A float32 CP-ALS through the C API flushes inside and restores: the
// caller's threads end as they began (IEEE subnormals).
TEST(Subnormals, Float32CpAlsLeavesTheCallersThreadsAsTheyWere) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "MXCSR is x86 only";
#else
  constexpr int threads = 2;
  spt_context* ctx = nullptr;
  ASSERT_EQ(SPT_OK, spt_context_create(&ctx));
  ASSERT_EQ(SPT_OK, spt_context_set_backend(ctx, SPT_BACKEND_CPU));
  ASSERT_EQ(SPT_OK, spt_context_set_threads(ctx, threads));
  spt_coo_s x = random_coo(SPT_FLOAT32, spec_of({40, 30, 20}, 2000, 4));
  spt_cpd_options opts;
  ASSERT_EQ(SPT_OK, spt_cpd_options_init(&opts));
  opts.rank = 4;
  opts.max_iters = 5;
  opts.tol = 0;
  spt_ktensor* k = nullptr;
  ASSERT_EQ(SPT_WARN_NOT_CONVERGED, spt_cpd_als(ctx, &x, &opts, &k)) << spt_last_error(ctx);
  spt_ktensor_free(k);
  spt_context_free(ctx);
  for (const ThreadState& s : team_state(threads)) {
    EXPECT_EQ(s.bits, 0u);
    EXPECT_FALSE(s.flushed);
  }
#endif
}

}  // namespace
}  // namespace spt::test
