// HiCOO: conversion (every Morton key path), structure and superblock
// schedule invariants, MTTKRP (cpu strategies and the reference) against the
// COO reference MTTKRP on random tensors of orders 2..6 in float32/float64
// with 1-3 threads and several B and L, exact COO round trips, statistics on
// a hand-made tensor, and argument validation through the C API.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "algo/cp_als.hpp"
#include "algo/hicoo_operand.hpp"
#include "common/test_util.hpp"
#include "core/context.hpp"
#include "core/ktensor.hpp"
#include "core/hicoo.hpp"
#include "core/sort.hpp"
#include "kernels/kernels.hpp"
#include "sptensor/sptensor.h"

namespace spt::test {
namespace {

namespace ref = spt::kernels::reference;
namespace cpu = SPT_TEST_CPU_KERNELS;
using kernels::Exec;

const int kThreadCounts[] = {1, 2, 3};

// Standard shapes plus the cases HiCOO finds awkward: hypersparse (one
// nonzero per block), a dense block, keys that need (key, position) pairs
// (more than 64 bits with the position) and keys wider than 64 bits (the
// comparison-sort fallback).
std::vector<RandomTensorSpec> hicoo_specs() {
  std::vector<RandomTensorSpec> specs = standard_specs();
  auto add = [&](std::vector<spt_index> dims, spt_nnz nnz, uint64_t seed, bool skewed, bool dup) {
    RandomTensorSpec s;
    s.dims = std::move(dims);
    s.nnz = nnz;
    s.seed = seed;
    s.skewed = skewed;
    s.duplicates = dup;
    specs.push_back(s);
  };
  add({20000, 9000, 15000}, 1500, 21, false, false);            // hypersparse
  add({16, 16, 16}, 6000, 22, false, true);                      // dense block (duplicates too)
  add({3, 30000, 2, 25000}, 2500, 23, true, false);              // short and long modes
  add({1024, 1024, 1024, 1024, 1024, 1024}, 3000, 24, true, false);  // 60 key bits + 12 position bits
  add({8192, 8192, 8192, 8192, 8192}, 2000, 25, true, true);     // 65 key bits: comparison-sort fallback
  add({2, 3, 1, 2, 3, 2}, 300, 26, false, true);                 // order 6, every mode length 1-3
  return specs;
}

std::string label(const RandomTensorSpec& s, spt_dtype d) {
  std::string t = std::string(dtype_name(d)) + " dims";
  for (auto x : s.dims) t += " " + std::to_string(x);
  return t;
}

// Coordinates and value of every nonzero, sorted: the tensor as a multiset.
template <typename T>
std::vector<std::pair<std::vector<spt_index>, T>> multiset(const spt_coo_s& x) {
  std::vector<std::pair<std::vector<spt_index>, T>> v(x.nnz);
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    for (uint32_t m = 0; m < x.order(); ++m) v[k].first.push_back(x.ind[m][k]);
    v[k].second = x.values<T>()[k];
  }
  std::sort(v.begin(), v.end());
  return v;
}

// Blocks hold their nonzeros, element indices fit B, superblocks tile the
// blocks, and each mode's schedule lists every superblock once, grouped by
// slab, with distinct slabs and the right counts.
void expect_valid_structure(const spt_hicoo_s& h, const std::string& what) {
  const uint32_t order = h.order();
  ASSERT_EQ(h.bptr.front(), 0u) << what;
  ASSERT_EQ(h.bptr.back(), h.nnz) << what;
  for (spt_nnz b = 0; b < h.num_blocks(); ++b) ASSERT_LT(h.bptr[b], h.bptr[b + 1]) << what << " empty block " << b;
  for (uint32_t m = 0; m < order; ++m)
    for (spt_nnz k = 0; k < h.nnz; ++k) ASSERT_LT(h.einds[m][k], h.block_size()) << what;
  ASSERT_EQ(h.sptr.front(), 0u) << what;
  ASSERT_EQ(h.sptr.back(), h.num_blocks()) << what;
  const uint32_t k = h.superblock_bits - h.block_bits;
  for (spt_nnz s = 0; s < h.num_superblocks(); ++s) {
    ASSERT_LT(h.sptr[s], h.sptr[s + 1]) << what;
    for (spt_nnz b = h.sptr[s]; b < h.sptr[s + 1]; ++b)
      for (uint32_t m = 0; m < order; ++m)
        ASSERT_EQ(h.binds[m][b] >> k, h.binds[m][h.sptr[s]] >> k) << what << ": block " << b << " outside superblock";
  }
  ASSERT_EQ(h.schedule.size(), order) << what;
  for (uint32_t m = 0; m < order; ++m) {
    const HicooModeSchedule& sc = h.schedule[m];
    std::vector<int> seen(h.num_superblocks(), 0);
    std::set<uint32_t> slabs;
    spt_nnz iterations = 0, max_nnz = 0;
    for (spt_nnz i = 0; i < sc.slabs(); ++i) {
      const uint32_t slab = h.binds[m][h.sptr[sc.superblocks[sc.slab_ptr[i]]]] >> k;
      ASSERT_TRUE(slabs.insert(slab).second) << what << ": slab listed twice in mode " << m;
      spt_nnz nz = 0;
      for (spt_nnz q = sc.slab_ptr[i]; q < sc.slab_ptr[i + 1]; ++q) {
        const spt_nnz s = sc.superblocks[q];
        ++seen[s];
        ASSERT_EQ(h.binds[m][h.sptr[s]] >> k, slab) << what << ": superblock in the wrong slab";
        nz += h.bptr[h.sptr[s + 1]] - h.bptr[h.sptr[s]];
      }
      iterations = std::max(iterations, sc.slab_ptr[i + 1] - sc.slab_ptr[i]);
      max_nnz = std::max(max_nnz, nz);
    }
    for (spt_nnz s = 0; s < h.num_superblocks(); ++s) ASSERT_EQ(seen[s], 1) << what << " mode " << m;
    ASSERT_EQ(sc.iterations, iterations) << what;
    ASSERT_EQ(sc.max_slab_nnz, max_nnz) << what;
  }
}

class HicooVsReference : public ::testing::TestWithParam<std::tuple<size_t, spt_dtype>> {
 protected:
  RandomTensorSpec spec() const { return hicoo_specs()[std::get<0>(GetParam())]; }
  spt_dtype dtype() const { return std::get<1>(GetParam()); }
  template <typename F>
  void typed(F&& f) {
    if (dtype() == SPT_FLOAT32) f(type_tag<float>{});
    else f(type_tag<double>{});
  }
};

TEST_P(HicooVsReference, ConversionRoundTripAndMortonOrder) {
  const RandomTensorSpec s = spec();
  const spt_coo_s x = random_coo(dtype(), s);
  const spt_coo_s before = copy_coo(x, x.dtype());
  typed([&](auto tag) {
    using T = typename decltype(tag)::type;
    // Morton order as the comparison sort of core/sort.hpp defines it.
    const spt_coo_s morton = sorting::permuted_copy(Exec{1}, x, sorting::morton_permutation(Exec{1}, x));
    for (uint32_t block : {2u, 8u, 256u})
      for (int threads : kThreadCounts) {
        const std::string what = label(s, dtype()) + " B=" + std::to_string(block) + " t=" + std::to_string(threads);
        hicoo::Params p;
        p.block_size = block;
        const spt_hicoo_s h = hicoo::from_coo(x, p, threads);
        expect_valid_structure(h, what);
        const spt_coo_s back = hicoo::to_coo(h, threads);
        ASSERT_EQ(back.dims, x.dims) << what;
        ASSERT_EQ(back.nnz, x.nnz) << what;
        // Same nonzeros in exactly the comparison sort's (stable) order.
        for (uint32_t m = 0; m < x.order(); ++m)
          for (spt_nnz k = 0; k < x.nnz; ++k) ASSERT_EQ(back.ind[m][k], morton.ind[m][k]) << what << " k=" << k;
        for (spt_nnz k = 0; k < x.nnz; ++k) ASSERT_EQ(back.values<T>()[k], morton.values<T>()[k]) << what;
        ASSERT_TRUE(multiset<T>(back) == multiset<T>(x)) << what;
      }
    // The input is never modified.
    for (uint32_t m = 0; m < x.order(); ++m)
      ASSERT_TRUE(std::equal(x.ind[m], x.ind[m] + x.nnz, before.ind[m]));
    ASSERT_TRUE(std::equal(x.values<T>(), x.values<T>() + x.nnz, before.values<T>()));
  });
}

TEST_P(HicooVsReference, MttkrpEveryModeStrategyBlockAndSuperblock) {
  const RandomTensorSpec s = spec();
  const spt_coo_s x = random_coo(dtype(), s);
  typed([&](auto tag) {
    using T = typename decltype(tag)::type;
    struct Sizes {
      uint32_t block, superblock;
    };
    const Sizes sizes[] = {{2, 2}, {4, 32}, {8, 1u << 12}, {128, 128}, {0, 0}};  // {0,0}: suggested
    for (spt_nnz rank : {spt_nnz(16), spt_nnz(5)}) {
      auto factors = random_factors<T>(s.dims, rank, 7);
      auto f = crefs(factors);
      std::vector<DenseMatrix<T>> want;
      for (uint32_t mode = 0; mode < x.order(); ++mode) {
        want.emplace_back(s.dims[mode], rank);
        ref::mttkrp(Exec{1}, x, f.data(), mode, want.back().ref());
      }
      for (const Sizes& sz : sizes) {
        hicoo::Params p;
        p.block_size = sz.block;
        p.superblock_size = sz.superblock;
        spt_hicoo_s h = hicoo::from_coo(x, p, 2);
        for (uint32_t mode = 0; mode < x.order(); ++mode) {
          const std::string base = label(s, dtype()) + " B=" + std::to_string(h.block_size()) +
                                   " L=" + std::to_string(1u << h.superblock_bits) + " R=" + std::to_string(rank) +
                                   " mode " + std::to_string(mode);
          DenseMatrix<T> got(s.dims[mode], rank);
          ref::mttkrp_hicoo(Exec{1}, h, f.data(), mode, got.ref());
          expect_matrix_close(want[mode], got, base + " reference");
          for (HicooStrategy st : {HicooStrategy::automatic, HicooStrategy::direct, HicooStrategy::privatized}) {
            h.strategy = st;
            for (int threads : kThreadCounts) {
              DenseMatrix<T> out(s.dims[mode], rank);
              for (auto& v : out.values) v = T(99);  // must be overwritten
              cpu::mttkrp_hicoo(Exec{threads}, h, f.data(), mode, out.ref());
              expect_matrix_close(want[mode], out,
                                  base + " " + hicoo_strategy_name(st) + " t=" + std::to_string(threads));
            }
          }
        }
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, HicooVsReference,
                         ::testing::Combine(::testing::Range<size_t>(0, hicoo_specs().size()),
                                            ::testing::Values(SPT_FLOAT32, SPT_FLOAT64)));

// A larger skewed tensor so that the parallel sort, the dynamic schedules
// and the privatized reduction run with real work on every thread.
TEST(Hicoo, LargerTensorAllStrategiesMatchCoo) {
  RandomTensorSpec s;
  s.dims = {5000, 40, 3000, 7};
  s.nnz = 120000;
  s.seed = 5;
  const spt_coo_s x = random_coo(SPT_FLOAT64, s);
  auto factors = random_factors<double>(s.dims, 16, 3);
  auto f = crefs(factors);
  spt_hicoo_s h = hicoo::from_coo(x, hicoo::Params{}, 2);
  expect_valid_structure(h, "larger");
  for (uint32_t mode = 0; mode < x.order(); ++mode) {
    DenseMatrix<double> want(s.dims[mode], 16);
    ref::mttkrp(Exec{1}, x, f.data(), mode, want.ref());
    for (HicooStrategy st : {HicooStrategy::automatic, HicooStrategy::direct, HicooStrategy::privatized}) {
      h.strategy = st;
      DenseMatrix<double> got(s.dims[mode], 16);
      cpu::mttkrp_hicoo(Exec{3}, h, f.data(), mode, got.ref());
      expect_matrix_close(want, got, std::string("mode ") + std::to_string(mode) + " " + hicoo_strategy_name(st));
    }
  }
}

// The CP-ALS hook: the operand's MTTKRPs equal the COO reference.
TEST(Hicoo, OperandMatchesCooReference) {
  RandomTensorSpec s;
  s.dims = {400, 30, 250};
  s.nnz = 8000;
  const spt_coo_s x = random_coo(SPT_FLOAT32, s);
  spt_context_s ctx;
  ctx.threads = 2;
  auto op = algo::make_hicoo_operand<float>(ctx, x);
  EXPECT_STREQ(op->name(), "hicoo");
  auto factors = random_factors<float>(s.dims, 8, 11);
  auto f = crefs(factors);
  for (uint32_t mode = 0; mode < 3; ++mode) {
    DenseMatrix<float> want(s.dims[mode], 8), got(s.dims[mode], 8);
    ref::mttkrp(Exec{1}, x, f.data(), mode, want.ref());
    op->mttkrp(ctx, f.data(), mode, got.ref());
    expect_matrix_close(want, got, "operand mode " + std::to_string(mode));
  }
  EXPECT_THROW(algo::make_hicoo_operand<double>(ctx, x), Error);  // dtype mismatch
}

// CP-ALS through the format-neutral core on the HiCOO operand follows the
// COO run from the same start.
TEST(Hicoo, CpAlsOnHicooOperandMatchesCoo) {
  RandomTensorSpec s;
  s.dims = {60, 45, 30};
  s.nnz = 4000;
  const spt_coo_s x = random_coo(SPT_FLOAT64, s);
  spt_context_s ctx;
  ctx.threads = 2;
  spt_cpd_options o;
  spt_cpd_options_init(&o);
  o.rank = 4;
  o.max_iters = 6;
  o.tol = 0;
  o.seed = 3;
  o.format = SPT_TENSOR_FORMAT_COO;
  spt_ktensor_s on_coo, on_hicoo;
  cp_als(ctx, x, o, on_coo);
  auto op = algo::make_hicoo_operand<double>(ctx, x);
  cp_als_operand<double>(ctx, *op, x.dims, ref::summed_stats(Exec{1}, x).norm_squared, o, on_hicoo);
  EXPECT_EQ(on_coo.iterations, on_hicoo.iterations);
  EXPECT_NEAR(on_coo.fit, on_hicoo.fit, 1e-9);
  ASSERT_EQ(on_coo.fit_history.size(), on_hicoo.fit_history.size());
  for (size_t i = 0; i < on_coo.fit_history.size(); ++i)
    EXPECT_NEAR(on_coo.fit_history[i], on_hicoo.fit_history[i], 1e-9) << i;
}

TEST(Hicoo, SameStructureForAnyThreadCount) {
  RandomTensorSpec s;
  s.dims = {700, 900, 50};
  s.nnz = 40000;
  const spt_coo_s x = random_coo(SPT_FLOAT32, s);
  hicoo::Params p;
  p.block_size = 16;
  p.superblock_size = 64;
  const spt_hicoo_s a = hicoo::from_coo(x, p, 1), b = hicoo::from_coo(x, p, 3);
  EXPECT_TRUE(a.bptr == b.bptr);
  EXPECT_TRUE(a.sptr == b.sptr);
  for (uint32_t m = 0; m < 3; ++m) {
    EXPECT_TRUE(a.binds[m] == b.binds[m]);
    EXPECT_TRUE(a.einds[m] == b.einds[m]);
    EXPECT_TRUE(a.schedule[m].superblocks == b.schedule[m].superblocks);
  }
  EXPECT_TRUE(a.val.get<float>() == b.val.get<float>());
}

TEST(Hicoo, EmptyTensor) {
  spt_coo_s x;
  x.init_owned(SPT_FLOAT64, {5, 6, 7}, 0);
  const spt_hicoo_s h = hicoo::from_coo(x, hicoo::Params{}, 2);
  EXPECT_EQ(h.num_blocks(), 0u);
  EXPECT_EQ(h.num_superblocks(), 0u);
  DenseMatrix<double> f0(5, 4), f1(6, 4), f2(7, 4), out(6, 4);
  for (auto& v : out.values) v = 1.0;
  std::vector<ConstMatRef<double>> f{f0.cref(), f1.cref(), f2.cref()};
  cpu::mttkrp_hicoo(Exec{2}, h, f.data(), 1, out.ref());
  for (double v : out.values) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(hicoo::to_coo(h, 2).nnz, 0u);
}

// ----------------------------------------------------------------------------
// Statistics on a hand-made 4 x 4 x 3 tensor with B = 2 (after Fig. 4.2 of
// the dissertation): blocks (0,0,0) with 3 nonzeros, (0,0,1) with 1,
// (1,1,0) with 2 and (1,0,1) with 2.

spt_coo_s tiny_tensor() {
  const spt_index coords[8][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 1}, {0, 0, 2},
                                  {2, 2, 0}, {3, 3, 1}, {2, 0, 2}, {3, 1, 2}};
  spt_coo_s x;
  x.init_owned(SPT_FLOAT32, {4, 4, 3}, 8);
  for (int k = 0; k < 8; ++k) {
    for (int m = 0; m < 3; ++m) x.mutable_ind(m)[k] = coords[k][m];
    x.mutable_values<float>()[k] = float(k + 1);
  }
  return x;
}

TEST(HicooStats, HandMadeTensor) {
  const spt_coo_s x = tiny_tensor();
  hicoo::Params p;
  p.block_size = 2;
  p.superblock_size = 2;
  const spt_hicoo_s h = hicoo::from_coo(x, p, 2);
  expect_valid_structure(h, "tiny");
  const hicoo::Stats s = hicoo::compute_stats(h, 2);
  EXPECT_EQ(s.num_blocks, 4u);
  EXPECT_EQ(s.num_superblocks, 4u);
  EXPECT_DOUBLE_EQ(s.block_ratio, 0.5);
  EXPECT_NEAR(s.block_ratio_threshold, 24.0 / (32.0 + 64.0 / 3.0), 1e-12);  // 0.45 for N = 3
  EXPECT_DOUBLE_EQ(s.mean_nnz_per_block, 2.0);
  EXPECT_NEAR(s.geomean_nnz_per_block, std::pow(12.0, 0.25), 1e-12);  // (3*1*2*2)^(1/4) = 1.86
  EXPECT_NEAR(s.slice_per_block, std::pow(12.0, 0.25) / 2, 1e-12);
  EXPECT_EQ(s.coo_bytes, 8u * (3 * 4 + 4));
  // bptr 5*8 + binds 3*4*4 + einds 3*8 + values 8*4 + sptr 5*8 + schedules
  // 3 modes * ((2 slabs + 1) + 4 superblocks) * 8.
  EXPECT_EQ(s.hicoo_bytes, 40u + 48 + 24 + 32 + 40 + 3 * 7 * 8);
  // Block order (Morton): (0,0,0), (0,0,1), (1,0,1), (1,1,0).
  EXPECT_TRUE((h.bptr == buffer<spt_nnz>{0, 3, 4, 6, 8}));
  // Slabs: mode 0 {A,B | D,C}, mode 1 {A,B,D | C}, mode 2 {A,C | B,D}.
  for (uint32_t m = 0; m < 3; ++m) EXPECT_EQ(hicoo::mode_counts(h, m).slabs, 2u) << m;
  EXPECT_EQ(hicoo::mode_counts(h, 0).iterations, 2u);
  EXPECT_EQ(hicoo::mode_counts(h, 1).iterations, 3u);
  EXPECT_EQ(hicoo::mode_counts(h, 2).iterations, 2u);
  EXPECT_EQ(hicoo::mode_counts(h, 0).max_slab_nnz, 4u);
  EXPECT_EQ(hicoo::mode_counts(h, 1).max_slab_nnz, 6u);
  EXPECT_EQ(hicoo::mode_counts(h, 2).max_slab_nnz, 5u);
  // 2 slabs < 4P = 8, but 2-3 iterations (not > 20x): the dissertation rule
  // keeps direct. Mode 1's heaviest slab (6 of 8 > 4/(3P)) with cheap
  // 4-row copies ((P-1)*4*2 <= 8) makes it privatized by the balance rule.
  EXPECT_EQ(s.suggested_strategy[0], HicooStrategy::direct);
  EXPECT_EQ(s.suggested_strategy[1], HicooStrategy::privatized);
  EXPECT_EQ(s.suggested_strategy[2], HicooStrategy::direct);
  EXPECT_NE(s.reason.find("block size B ="), std::string::npos);
  EXPECT_NE(s.reason.find("superblock size L ="), std::string::npos);
  EXPECT_NE(s.reason.find("mode 2"), std::string::npos);
  // Deterministic.
  const hicoo::Stats again = hicoo::compute_stats(hicoo::from_coo(x, p, 1), 2);
  EXPECT_EQ(again.reason, s.reason);
  EXPECT_EQ(again.hicoo_bytes, s.hicoo_bytes);
}

TEST(HicooStats, DissertationStrategyRule) {
  hicoo::ModeCounts c;
  c.slabs = 2;
  c.iterations = 22475;  // choa, mode 3, L = 512
  c.max_slab_nnz = 100;
  EXPECT_EQ(hicoo::rule_strategy(c, 1000000, 1000, 4, nullptr), HicooStrategy::privatized);
  // Same counts on a mode too long for cheap private copies: direct.
  EXPECT_EQ(hicoo::rule_strategy(c, 1000000, 1000000, 4, nullptr), HicooStrategy::direct);
  c.slabs = 64;
  c.iterations = 30;
  EXPECT_EQ(hicoo::rule_strategy(c, 1000000, 100000, 4, nullptr), HicooStrategy::direct);
  c.slabs = 10;  // >= 4P
  c.iterations = 1000;
  EXPECT_EQ(hicoo::rule_strategy(c, 1000000, 100000, 2, nullptr), HicooStrategy::direct);
  EXPECT_EQ(hicoo::rule_strategy(c, 1000000, 100000, 1, nullptr), HicooStrategy::direct);
}

TEST(HicooStats, SuggestedBlockSizeFollowsCacheRule) {
  // N*B*R*sizeof <= L1 for the suggestion, and B is a power of two <= 256.
  for (uint32_t order : {2u, 3u, 4u, 6u})
    for (spt_dtype d : {SPT_FLOAT32, SPT_FLOAT64}) {
      const uint32_t bits = hicoo::suggest_block_bits(order, d, nullptr);
      EXPECT_GE(bits, 1u);
      EXPECT_LE(bits, 8u);
    }
  EXPECT_GE(hicoo::suggest_block_bits(3, SPT_FLOAT32, nullptr), hicoo::suggest_block_bits(6, SPT_FLOAT64, nullptr));
}

// ----------------------------------------------------------------------------
// C API.

TEST(HicooApi, InvalidOptionsRejected) {
  spt_coo_s x = tiny_tensor();
  spt_hicoo* h = nullptr;
  spt_hicoo_options o;
  ASSERT_EQ(spt_hicoo_options_init(&o), SPT_OK);
  EXPECT_EQ((spt_hicoo_options_init)(nullptr), SPT_ERR_INVALID_ARGUMENT);
  auto expect_rejected = [&](spt_hicoo_options opts, const char* fragment) {
    spt_hicoo* out = nullptr;
    EXPECT_EQ(spt_hicoo_from_coo(nullptr, &x, &opts, &out), SPT_ERR_INVALID_ARGUMENT) << fragment;
    EXPECT_EQ(out, nullptr);
    EXPECT_NE(std::string(spt_thread_last_error()).find(fragment), std::string::npos) << spt_thread_last_error();
  };
  spt_hicoo_options bad = o;
  bad.block_size = 3;
  expect_rejected(bad, "power of two");
  bad = o;
  bad.block_size = 512;
  expect_rejected(bad, "[2, 256]");
  bad = o;
  bad.block_size = 1;
  expect_rejected(bad, "[2, 256]");
  bad = o;
  bad.block_size = 16;
  bad.superblock_size = 8;
  expect_rejected(bad, "must be >= the block size");
  bad = o;
  bad.superblock_size = 48;
  expect_rejected(bad, "power of two");
  bad = o;
  bad.strategy = static_cast<spt_hicoo_strategy>(7);
  expect_rejected(bad, "strategy");
  bad = o;
  bad.struct_size = 0;
  expect_rejected(bad, "struct_size");
  EXPECT_EQ(spt_hicoo_from_coo(nullptr, nullptr, &o, &h), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_hicoo_from_coo(nullptr, &x, &o, nullptr), SPT_ERR_INVALID_ARGUMENT);
  spt_coo_s order1;
  order1.init_owned(SPT_FLOAT32, {5}, 1);
  order1.mutable_ind(0)[0] = 1;
  order1.mutable_values<float>()[0] = 1;
  EXPECT_EQ(spt_hicoo_from_coo(nullptr, &order1, nullptr, &h), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_hicoo_to_coo(nullptr, nullptr, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_hicoo_free(nullptr), SPT_OK);
  spt_hicoo_statistics st{};
  EXPECT_EQ(spt_hicoo_stats(nullptr, nullptr, &st), SPT_ERR_INVALID_ARGUMENT);
}

TEST(HicooApi, StatsAndMttkrpThroughTheCApi) {
  RandomTensorSpec s;
  s.dims = {300, 40, 2, 900};
  s.nnz = 5000;
  spt_coo_s x = random_coo(SPT_FLOAT64, s);
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  ASSERT_EQ(spt_context_set_threads(ctx, 2), SPT_OK);
  spt_hicoo_options o;
  spt_hicoo_options_init(&o);
  o.block_size = 8;
  spt_hicoo* h = nullptr;
  ASSERT_EQ(spt_hicoo_from_coo(ctx, &x, &o, &h), SPT_OK) << spt_last_error(ctx);

  spt_hicoo_summary info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(spt_hicoo_info(ctx, h, &info), SPT_OK);
  EXPECT_EQ(info.order, 4u);
  EXPECT_EQ(info.nnz, x.nnz);
  EXPECT_EQ(info.dtype, SPT_FLOAT64);
  EXPECT_EQ(info.block_size, 8u);
  EXPECT_GE(info.superblock_size, 8u);
  EXPECT_GT(info.bytes, 0u);
  info.struct_size = 0;
  EXPECT_EQ(spt_hicoo_info(ctx, h, &info), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("struct_size"), std::string::npos);
  std::vector<spt_index> dims(4);
  ASSERT_EQ(spt_hicoo_dims(h, dims.data()), SPT_OK);
  EXPECT_EQ(dims, s.dims);

  char text[8192];
  spt_hicoo_statistics st{};
  st.struct_size = sizeof(st);
  st.reason = text;
  st.reason_capacity = sizeof(text);
  ASSERT_EQ(spt_hicoo_stats(ctx, h, &st), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(st.struct_size, sizeof(st));
  EXPECT_EQ(st.threads, 2);
  EXPECT_EQ(st.nnz, x.nnz);
  EXPECT_EQ(st.block_size, 8u);
  EXPECT_GT(st.num_blocks, 0u);
  EXPECT_DOUBLE_EQ(st.block_ratio, double(st.num_blocks) / double(x.nnz));
  EXPECT_EQ(st.coo_bytes, x.nnz * (4 * 4 + 8));
  EXPECT_EQ(std::string(text).size(), std::min(st.reason_length, sizeof(text) - 1));
  EXPECT_NE(std::string(text).find("mode 3"), std::string::npos);
  st.reason_capacity = 10;  // truncated, NUL-terminated
  ASSERT_EQ(spt_hicoo_stats(ctx, h, &st), SPT_OK);
  EXPECT_EQ(std::string(text).size(), 9u);
  st.reason = nullptr;
  EXPECT_EQ(spt_hicoo_stats(ctx, h, &st), SPT_ERR_INVALID_ARGUMENT);
  st.reason_capacity = 0;
  EXPECT_EQ(spt_hicoo_stats(ctx, h, &st), SPT_OK);

  spt_hicoo_mode_statistics ms{};
  ms.struct_size = sizeof(ms);
  ASSERT_EQ(spt_hicoo_mode_stats(ctx, h, 2, &ms), SPT_OK);
  EXPECT_EQ(ms.slabs, 1u);  // mode of length 2 < L: one slab
  EXPECT_EQ(spt_hicoo_mode_stats(ctx, h, 4, &ms), SPT_ERR_INVALID_ARGUMENT);

  // MTTKRP against spt_mttkrp on the COO, with a column-major output.
  const spt_nnz rank = 6;
  std::vector<spt_matrix*> f(4, nullptr);
  for (uint32_t m = 0; m < 4; ++m) {
    DenseMatrix<double> a = random_matrix<double>(s.dims[m], rank, 40 + m);
    ASSERT_EQ(spt_matrix_create_copy(ctx, SPT_FLOAT64, s.dims[m], rank, SPT_ROW_MAJOR, a.values.data(), rank, &f[m]),
              SPT_OK);
  }
  for (uint32_t mode = 0; mode < 4; ++mode) {
    spt_matrix *want = nullptr, *got = nullptr;
    ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, s.dims[mode], rank, SPT_ROW_MAJOR, &want), SPT_OK);
    ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, s.dims[mode], rank, SPT_COL_MAJOR, &got), SPT_OK);
    ASSERT_EQ(spt_mttkrp(ctx, &x, f.data(), mode, want), SPT_OK);
    ASSERT_EQ(spt_mttkrp_hicoo(ctx, h, f.data(), mode, got), SPT_OK) << spt_last_error(ctx);
    for (spt_nnz i = 0; i < s.dims[mode]; ++i)
      for (spt_nnz r = 0; r < rank; ++r)
        ASSERT_TRUE(close(want->at<double>(i, r), got->at<double>(i, r), 1e-11)) << mode << " " << i << " " << r;
    // Validation mirrors spt_mttkrp.
    EXPECT_EQ(spt_mttkrp_hicoo(ctx, h, f.data(), 4, got), SPT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(spt_mttkrp_hicoo(ctx, h, f.data(), mode, f[(mode + 1) % 4]), SPT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(spt_mttkrp_hicoo(ctx, h, nullptr, mode, got), SPT_ERR_INVALID_ARGUMENT);
    spt_matrix* wrong = nullptr;
    ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT32, s.dims[mode], rank, SPT_ROW_MAJOR, &wrong), SPT_OK);
    EXPECT_EQ(spt_mttkrp_hicoo(ctx, h, f.data(), mode, wrong), SPT_ERR_INVALID_ARGUMENT);
    spt_matrix_free(wrong);
    spt_matrix_free(want);
    spt_matrix_free(got);
  }
  std::vector<spt_matrix*> missing = f;
  missing[(0 + 1) % 4] = nullptr;
  spt_matrix* out0 = nullptr;
  ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, s.dims[0], rank, SPT_ROW_MAJOR, &out0), SPT_OK);
  EXPECT_EQ(spt_mttkrp_hicoo(ctx, h, missing.data(), 0, out0), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("factors[1]"), std::string::npos);
  spt_matrix_free(out0);

  // Round trip through the API.
  spt_coo* back = nullptr;
  ASSERT_EQ(spt_hicoo_to_coo(ctx, h, &back), SPT_OK);
  EXPECT_TRUE(multiset<double>(*back) == multiset<double>(x));
  spt_coo_free(back);
  for (auto* m : f) spt_matrix_free(m);
  spt_hicoo_free(h);
  spt_context_free(ctx);
}

}  // namespace
}  // namespace spt::test
