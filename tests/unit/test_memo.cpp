// Memoized MTTKRP sequence (ADATM on a CSF tree): every MTTKRP of a
// CP-ALS-like sequence (factor of the previous mode replaced between calls)
// equals the reference MTTKRP, for every memory budget, order 2..8, f32/f64,
// 1-3 threads; the executed vector-operation count matches the plan's model;
// the plan search is exact on a hand-checked case; and the flop reduction
// on 5-way and 8-way tensors is reported.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "algo/memo_mttkrp.hpp"
#include "common/test_util.hpp"
#include "core/context.hpp"
#include "kernels/kernels.hpp"

namespace spt {
namespace {

using algo::MemoizedCsfOperand;
using test::RandomTensorSpec;

struct Ctx {
  spt_context* ctx = nullptr;
  explicit Ctx(int threads) {
    spt_context_create(&ctx);
    spt_context_set_threads(ctx, threads);
  }
  ~Ctx() { spt_context_free(ctx); }
};

template <typename T>
void expect_sequence_matches_reference(const spt_coo_s& x, spt_index rank, uint64_t budget, int threads,
                                       const std::string& what) {
  Ctx c(threads);
  MemoizedCsfOperand<T> memo(*c.ctx, x, rank, budget);
  const uint32_t n = x.order();
  std::vector<DenseMatrix<T>> factors;
  for (uint32_t m = 0; m < n; ++m) factors.push_back(test::random_matrix<T>(x.dims[m], rank, 100 + m));
  std::vector<ConstMatRef<T>> refs(n);
  auto refresh = [&] {
    for (uint32_t m = 0; m < n; ++m) refs[m] = {factors[m].values.data(), x.dims[m], rank, rank};
  };
  refresh();
  uint64_t seed = 1000;
  uint64_t ops_before_last_sweep = 0;
  for (int sweep = 0; sweep < 3; ++sweep) {
    if (sweep == 2) ops_before_last_sweep = memo.ops_done();
    for (uint32_t mode = 0; mode < n; ++mode) {
      DenseMatrix<T> got(x.dims[mode], rank), want(x.dims[mode], rank);
      memo.mttkrp(*c.ctx, refs.data(), mode, got.ref());
      kernels::reference::mttkrp(kernels::Exec{1}, x, refs.data(), mode, want.ref());
      for (spt_nnz i = 0; i < x.dims[mode]; ++i)
        for (spt_index r = 0; r < rank; ++r)
          ASSERT_TRUE(test::close(got.values[i * rank + r], want.values[i * rank + r], test::tolerance<T>() * 10))
              << what << " sweep " << sweep << " mode " << mode << " row " << i << " col " << r << ": "
              << got.values[i * rank + r] << " vs " << want.values[i * rank + r];
      // CP-ALS replaces the factor just computed.
      factors[mode] = test::random_matrix<T>(x.dims[mode], rank, seed++);
      refresh();
    }
  }
  EXPECT_EQ(memo.ops_done() - ops_before_last_sweep, memo.plan().ops_per_sweep) << what << ": model vs executed";
}

class MemoVsReference : public ::testing::TestWithParam<uint32_t> {};

TEST_P(MemoVsReference, EveryBudgetThreadsAndDtype) {
  const uint32_t order = GetParam();
  RandomTensorSpec spec;
  for (uint32_t m = 0; m < order; ++m) spec.dims.push_back(m == 1 ? 3 : 9 + 7 * m);  // one short mode
  spec.nnz = 1500;
  spec.seed = order;
  spec.duplicates = true;
  for (spt_dtype dtype : {SPT_FLOAT32, SPT_FLOAT64}) {
    const spt_coo_s x = test::random_coo(dtype, spec);
    for (uint64_t budget : {uint64_t(1), uint64_t(200000), uint64_t(1) << 40}) {
      for (int threads : {1, 2, 3}) {
        for (spt_index rank : {spt_index(1), spt_index(7)}) {
          const std::string what = "order " + std::to_string(order) + " " + (dtype == SPT_FLOAT32 ? "f32" : "f64") +
                                   " budget " + std::to_string(budget) + " threads " + std::to_string(threads) +
                                   " rank " + std::to_string(rank);
          if (dtype == SPT_FLOAT32) expect_sequence_matches_reference<float>(x, rank, budget, threads, what);
          else expect_sequence_matches_reference<double>(x, rank, budget, threads, what);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Orders, MemoVsReference, ::testing::Values(2u, 3u, 4u, 5u, 6u, 8u));

TEST(MemoPlan, HandCountedOperations) {
  // Levels of 2, 4, 8, 16 nodes (16 leaves).
  const std::vector<uint64_t> m{2, 4, 8, 16};
  const std::vector<uint32_t> order{0, 1, 2, 3};
  // Unlimited budget: keep B_1 and B_2. Sweep: level 0 bottom-up 16+8+4 and
  // combine 2; level 1: T_0 (2) + combine 4; level 2: T_1 (4) + combine 8;
  // level 3: T_2 (8) + combine 16.
  const algo::MemoPlan all = algo::plan_memoization(order, m, 4, 8, uint64_t(1) << 40);
  EXPECT_EQ(all.keep, (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(all.ops_per_sweep, 28u + 2 + 6 + 12 + 24);
  // Unmemoized: per level k, top-down sum_{l<k} m_l, bottom-up sum_{l>k} m_l, combine m_k = 30 each.
  EXPECT_EQ(all.ops_per_sweep_plain, 4u * 30);
  EXPECT_EQ(all.ops_per_sweep_coo, 4u * 16 * 3);
  // No room for any kept level: level 1 recomputes 16+8, level 2 recomputes 16.
  const algo::MemoPlan none = algo::plan_memoization(order, m, 4, 8, 1);
  EXPECT_EQ(none.keep, (std::vector<bool>(4, false)));
  EXPECT_EQ(none.ops_per_sweep, all.ops_per_sweep + 24 + 16);
  // Room for one level (B_2 is 8 x 4 x 8 bytes = 256 bytes plus scratch 2 x 16 x 32 = 1024):
  // keeping B_2 saves 16 at level 2 and 16 at level 1; B_1 saves 24 at level 1 only.
  const algo::MemoPlan one = algo::plan_memoization(order, m, 4, 8, 1024 + 256);
  EXPECT_EQ(one.keep, (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(one.ops_per_sweep, all.ops_per_sweep + 8);
}

TEST(MemoPlan, RotationStartsAtShortestMode) {
  EXPECT_EQ(algo::memo_mode_order({50, 40, 3, 70}), (std::vector<uint32_t>{2, 3, 0, 1}));
  EXPECT_EQ(algo::memo_mode_order({5, 40}), (std::vector<uint32_t>{0, 1}));
}

// The flop reduction of the memoized sequence on higher-order tensors
// (reported; the reduction itself must exist).
TEST(MemoPlan, FlopReductionOnFiveAndEightWayTensors) {
  for (uint32_t order : {5u, 8u}) {
    RandomTensorSpec spec;
    for (uint32_t m = 0; m < order; ++m) spec.dims.push_back(20 + 13 * m);
    spec.nnz = 200000;
    spec.seed = 42;
    const spt_coo_s x = test::random_coo(SPT_FLOAT64, spec);
    Ctx c(2);
    MemoizedCsfOperand<double> memo(*c.ctx, x, 16, 0);
    const algo::MemoPlan& p = memo.plan();
    std::printf("order %u, %llu nnz: %s\n", order, static_cast<unsigned long long>(x.nnz), p.describe().c_str());
    EXPECT_LT(p.ops_per_sweep, p.ops_per_sweep_plain);
    EXPECT_LT(p.ops_per_sweep, p.ops_per_sweep_coo);
  }
}

}  // namespace
}  // namespace spt
