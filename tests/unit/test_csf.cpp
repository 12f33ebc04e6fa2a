// CSF tensors: tree structure (COO -> CSF -> COO round trip, pointers and
// policies), MTTKRP (every mode, every policy, CPU with 1/2/3 threads and
// each conflict strategy, and the reference walk) against the COO reference
// MTTKRP on the standard random tensors plus hypersparse, dense-block and
// short-mode cases, in float32 and float64; CP-ALS on CSF equal to CP-ALS on
// COO; the C API's argument checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "algo/cp_als.hpp"
#include "algo/mttkrp_operands.hpp"
#include "common/test_util.hpp"
#include "common/format_options.hpp"
#include "core/csf.hpp"
#include "core/csf_keyed_build.hpp"
#include "core/sort.hpp"
#include "kernels/kernels.hpp"
#include "sptensor/sptensor.h"

namespace spt::test {
namespace {

namespace ref = spt::kernels::reference;
namespace cpu = SPT_TEST_CPU_KERNELS;
using kernels::Exec;
using kernels::MttkrpStrategy;

const spt_csf_policy kPolicies[] = {SPT_CSF_ONEMODE, SPT_CSF_TWOMODE, SPT_CSF_ALLMODE, SPT_CSF_AUTO};

std::string describe(const spt_coo_s& x, spt_csf_policy p) {
  std::string s = std::string(dtype_name(x.dtype())) + " " + csf_policy_name(p) + " dims";
  for (auto d : x.dims) s += " " + std::to_string(d);
  return s + " nnz " + std::to_string(x.nnz);
}

// The awkward shapes beyond standard_specs(): hypersparse, a dense block,
// modes of length 1..3, heavy duplicates.
std::vector<RandomTensorSpec> csf_specs() {
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
  add({100000, 80000, 90000}, 300, 21, false, false);  // hypersparse: almost every fiber holds one nonzero
  add({1, 2, 3}, 6, 22, false, false);                  // tiny, short modes
  add({3, 1, 200, 2}, 900, 23, true, true);             // length-1 and -2 modes, duplicates
  add({2, 2, 2, 2, 2, 2}, 40, 24, false, true);
  add({5000, 3}, 4000, 25, true, false);
  return specs;
}

// Fully dense 6 x 7 x 8 block (every fiber full), with values.
spt_coo_s dense_block(spt_dtype dtype) {
  spt_coo_s x;
  const std::vector<spt_index> dims = {6, 7, 8};
  x.init_owned(dtype, dims, 6 * 7 * 8);
  spt_nnz k = 0;
  for (spt_index i = 0; i < 6; ++i)
    for (spt_index j = 0; j < 7; ++j)
      for (spt_index l = 0; l < 8; ++l, ++k) {
        // Reverse order, so the CSF build has to sort.
        const spt_nnz at = x.nnz - 1 - k;
        x.mutable_ind(0)[at] = i;
        x.mutable_ind(1)[at] = j;
        x.mutable_ind(2)[at] = l;
        const double v = 0.25 + 0.01 * static_cast<double>(k % 37);
        if (dtype == SPT_FLOAT32) x.mutable_values<float>()[at] = static_cast<float>(v);
        else x.mutable_values<double>()[at] = v;
      }
  return x;
}

std::vector<spt_coo_s> all_tensors(spt_dtype dtype) {
  std::vector<spt_coo_s> xs;
  for (const auto& s : csf_specs()) xs.push_back(random_coo(dtype, s));
  xs.push_back(dense_block(dtype));
  return xs;
}

// Rebuild the nonzeros (coordinates by mode + values) from a tree's leaves.
template <typename T>
void tree_to_coo(const CsfTree& t, const std::vector<spt_index>& dims, spt_coo_s& out) {
  const uint32_t order = t.levels();
  out.init_owned(dtype_of<T>(), dims, t.nnz());
  std::vector<spt_index> coord(order);
  spt_nnz written = 0;
  std::function<void(uint32_t, spt_nnz)> node = [&](uint32_t l, spt_nnz n) {
    coord[t.mode_order[l]] = t.fids[l][n];
    if (l + 1 == order) {
      for (uint32_t m = 0; m < order; ++m) out.mutable_ind(m)[written] = coord[m];
      out.mutable_values<T>()[written] = t.vals.get<T>()[n];
      ++written;
      return;
    }
    for (spt_nnz c = t.fptr[l][n]; c < t.fptr[l][n + 1]; ++c) node(l + 1, c);
  };
  for (spt_nnz s = 0; s < t.nodes(0); ++s) node(0, s);
  ASSERT_EQ(written, t.nnz());
}

// Sorted (by coordinates, then value) list of (coordinates, value).
template <typename T>
std::vector<std::pair<std::vector<spt_index>, T>> entries(const spt_coo_s& x) {
  std::vector<std::pair<std::vector<spt_index>, T>> e(x.nnz);
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    for (uint32_t m = 0; m < x.order(); ++m) e[k].first.push_back(x.ind[m][k]);
    e[k].second = x.values<T>()[k];
  }
  std::sort(e.begin(), e.end());
  return e;
}

template <typename T>
void check_structure(const spt_coo_s& x, const spt_csf_s& csf, spt_csf_policy asked, const std::string& what) {
  const uint32_t order = x.order();
  ASSERT_EQ(csf.dims, x.dims) << what;
  ASSERT_EQ(csf.nnz, x.nnz) << what;
  ASSERT_NE(csf.policy, SPT_CSF_AUTO) << what;
  const size_t want_trees = csf.policy == SPT_CSF_ONEMODE ? 1 : csf.policy == SPT_CSF_TWOMODE ? 2 : order;
  if (asked == SPT_CSF_AUTO) {
    // AUTO keeps the first tree and those some mode runs on.
    ASSERT_LE(csf.trees.size(), want_trees) << what;
    for (uint32_t t = 1; t < csf.trees.size(); ++t)
      ASSERT_NE(std::find(csf.tree_of_mode.begin(), csf.tree_of_mode.end(), t), csf.tree_of_mode.end())
          << what << ": tree " << t << " serves no mode";
  } else {
    ASSERT_EQ(csf.trees.size(), want_trees) << what;
  }
  const auto want_entries = entries<T>(x);
  for (size_t ti = 0; ti < csf.trees.size(); ++ti) {
    const CsfTree& t = csf.trees[ti];
    const std::string tw = what + " tree " + std::to_string(ti);
    // Mode order: a permutation, non-root modes by increasing length.
    std::vector<uint32_t> sorted_modes = t.mode_order;
    std::sort(sorted_modes.begin(), sorted_modes.end());
    for (uint32_t m = 0; m < order; ++m) ASSERT_EQ(sorted_modes[m], m) << tw;
    for (uint32_t l = 2; l < order; ++l) ASSERT_LE(x.dims[t.mode_order[l - 1]], x.dims[t.mode_order[l]]) << tw;
    // Pointers: monotone, cover the next level exactly, no empty internal node.
    for (uint32_t l = 0; l + 1 < order; ++l) {
      ASSERT_EQ(t.fptr[l].size(), t.nodes(l) + 1) << tw;
      ASSERT_EQ(t.fptr[l][0], 0u) << tw;
      ASSERT_EQ(t.fptr[l][t.nodes(l)], t.nodes(l + 1)) << tw;
      for (spt_nnz n = 0; n < t.nodes(l); ++n) {
        ASSERT_LT(t.fptr[l][n], t.fptr[l][n + 1]) << tw << " level " << l << " node " << n;
        // Siblings strictly increasing in their index (sorted, merged), except
        // at the leaf level where repeats are duplicates.
        for (spt_nnz c = t.fptr[l][n] + 1; c < t.fptr[l][n + 1]; ++c) {
          if (l + 2 == order) ASSERT_LE(t.fids[l + 1][c - 1], t.fids[l + 1][c]) << tw;
          else ASSERT_LT(t.fids[l + 1][c - 1], t.fids[l + 1][c]) << tw;
        }
      }
    }
    for (spt_nnz s = 1; s < t.nodes(0); ++s) ASSERT_LT(t.fids[0][s - 1], t.fids[0][s]) << tw;
    // Round trip: the leaves are exactly x's nonzeros.
    spt_coo_s back;
    tree_to_coo<T>(t, x.dims, back);
    ASSERT_TRUE(entries<T>(back) == want_entries) << tw << ": leaves differ from the COO's nonzeros";
  }
  // Each mode runs on the tree the cost model rates cheapest (built with 2 threads).
  for (uint32_t m = 0; m < order; ++m) {
    const double row_bytes = kCsfModelRank * sizeof(T);
    const double chosen = csf_mttkrp_cost(csf.tree_for_mode(m), x.dims, m, row_bytes, 2);
    for (const auto& t : csf.trees) ASSERT_LE(chosen, csf_mttkrp_cost(t, x.dims, m, row_bytes, 2)) << what;
  }
}

// Every policy's CSF of x against the COO reference MTTKRP, for each rank:
// the reference walk and the CPU kernel with 1/2/3 threads x each conflict
// strategy, every mode. What depends on neither rank nor policy is done once:
// each policy's CSF is built and structure-checked once (not once per rank),
// and the factors and the COO reference MTTKRP once per rank and mode (not
// once per policy) -- the same checks as one call per (policy, rank), at a
// fraction of the cost (the hypersparse tensor's outputs have ~10^5 rows).
template <typename T>
void check_mttkrp(const spt_coo_s& x, const std::vector<spt_nnz>& ranks) {
  std::vector<spt_csf_s> csfs(std::size(kPolicies));
  for (size_t pi = 0; pi < csfs.size(); ++pi) {
    build_csf(Exec{2}, x, kPolicies[pi], csfs[pi]);
    check_structure<T>(x, csfs[pi], kPolicies[pi], describe(x, kPolicies[pi]));
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (spt_nnz rank : ranks) {
    const auto f = random_factors<T>(x.dims, rank, 77);
    const auto refs = crefs(f);
    for (uint32_t mode = 0; mode < x.order(); ++mode) {
      DenseMatrix<T> want(x.dims[mode], rank);
      ref::mttkrp(Exec{1}, x, refs.data(), mode, want.ref());
      for (size_t pi = 0; pi < csfs.size(); ++pi) {
        const spt_csf_s& csf = csfs[pi];
        const std::string what = describe(x, kPolicies[pi]) + " rank " + std::to_string(rank);
        DenseMatrix<T> got(x.dims[mode], rank);
        ref::mttkrp_csf(Exec{1}, csf, refs.data(), mode, got.ref());
        expect_matrix_close(want, got, what + " reference mode " + std::to_string(mode));
        if (::testing::Test::HasFatalFailure()) return;
        for (int threads : {1, 2, 3})
          for (MttkrpStrategy s : {MttkrpStrategy::automatic, MttkrpStrategy::privatized, MttkrpStrategy::atomic}) {
            DenseMatrix<T> out(x.dims[mode], rank);
            std::fill(out.values.begin(), out.values.end(), T(99));  // must be overwritten
            Exec e{threads, s};
            cpu::mttkrp_csf(e, csf, refs.data(), mode, out.ref());
            expect_matrix_close(want, out,
                                what + " cpu mode " + std::to_string(mode) + " threads " + std::to_string(threads) +
                                    " strategy " + std::to_string(static_cast<int>(s)));
            if (::testing::Test::HasFatalFailure()) return;
          }
      }
    }
  }
}

TEST(Csf, MttkrpMatchesCooReferenceFloat64) {
  for (const auto& x : all_tensors(SPT_FLOAT64)) {
    check_mttkrp<double>(x, {16, 5, 37});
    if (HasFatalFailure()) return;
  }
}

TEST(Csf, MttkrpMatchesCooReferenceFloat32) {
  for (const auto& x : all_tensors(SPT_FLOAT32)) {
    check_mttkrp<float>(x, {8, 3, 10});
    if (HasFatalFailure()) return;
  }
}

TEST(Csf, OutputWithLeadingDimension) {
  // An output row stride larger than R must leave the padding alone.
  const spt_coo_s x = random_coo(SPT_FLOAT64, standard_specs()[3]);
  spt_csf_s csf;
  build_csf(Exec{2}, x, SPT_CSF_ONEMODE, csf);
  const spt_nnz rank = 4, ld = 7;
  const auto f = random_factors<double>(x.dims, rank, 5);
  const auto refs = crefs(f);
  for (uint32_t mode = 0; mode < x.order(); ++mode) {
    DenseMatrix<double> want(x.dims[mode], rank);
    ref::mttkrp(Exec{1}, x, refs.data(), mode, want.ref());
    std::vector<double> storage(x.dims[mode] * ld, -5.0);
    cpu::mttkrp_csf(Exec{2}, csf, refs.data(), mode, MatRef<double>{storage.data(), x.dims[mode], rank, ld});
    for (spt_nnz i = 0; i < x.dims[mode]; ++i) {
      for (spt_nnz r = 0; r < rank; ++r) ASSERT_TRUE(close(want(i, r), storage[i * ld + r], 1e-11));
      for (spt_nnz r = rank; r < ld; ++r) ASSERT_EQ(storage[i * ld + r], -5.0);
    }
  }
}

TEST(Csf, EmptyTensorGivesZeros) {
  spt_coo_s x;
  x.init_owned(SPT_FLOAT64, {4, 5, 6}, 0);
  spt_csf_s csf;
  build_csf(Exec{2}, x, SPT_CSF_ALLMODE, csf);
  const auto f = random_factors<double>(x.dims, 3, 1);
  const auto refs = crefs(f);
  for (uint32_t mode = 0; mode < 3; ++mode) {
    DenseMatrix<double> out(x.dims[mode], 3);
    std::fill(out.values.begin(), out.values.end(), 1.0);
    cpu::mttkrp_csf(Exec{2}, csf, refs.data(), mode, out.ref());
    for (double v : out.values) ASSERT_EQ(v, 0.0);
  }
}

TEST(Csf, PoliciesAndModeOrders) {
  spt_coo_s x = random_coo(SPT_FLOAT64, standard_specs()[3]);  // dims 20 3 17 400
  spt_csf_s one, two, all;
  build_csf(Exec{1}, x, SPT_CSF_ONEMODE, one);
  build_csf(Exec{1}, x, SPT_CSF_TWOMODE, two);
  build_csf(Exec{1}, x, SPT_CSF_ALLMODE, all);
  // Hand-checkable case of the cost model: a root costs one per node.
  EXPECT_EQ(csf_mttkrp_cost(one.trees[0], x.dims, 1, 64, 1),
            double(one.trees[0].nodes(0) + one.trees[0].nodes(1) + one.trees[0].nodes(2) + one.trees[0].nodes(3)));
  EXPECT_EQ(one.trees[0].mode_order, (std::vector<uint32_t>{1, 2, 0, 3}));
  EXPECT_EQ(two.trees[1].mode_order, (std::vector<uint32_t>{3, 1, 2, 0}));
  for (uint32_t m = 0; m < 4; ++m) EXPECT_EQ(all.trees[m].mode_order[0], m == 0 ? 1u : m == 1 ? 0u : m);
  EXPECT_GT(all.bytes(), one.bytes());
  // The input is not modified (still unsorted, same first entries).
  spt_coo_s again = random_coo(SPT_FLOAT64, standard_specs()[3]);
  for (uint32_t m = 0; m < 4; ++m)
    for (spt_nnz k = 0; k < x.nnz; ++k) ASSERT_EQ(x.ind[m][k], again.ind[m][k]);
}

// ---------------------------------------------------- tree builds agree

void expect_same_tree(const CsfTree& a, const CsfTree& b, const std::string& what) {
  ASSERT_EQ(a.mode_order, b.mode_order) << what;
  ASSERT_EQ(a.nnz(), b.nnz()) << what;
  EXPECT_EQ(a.leaf_repeats, b.leaf_repeats) << what;
  for (uint32_t l = 0; l < a.levels(); ++l) {
    ASSERT_EQ(a.fids[l].size(), b.fids[l].size()) << what << ", level " << l;
    EXPECT_TRUE(std::equal(a.fids[l].begin(), a.fids[l].end(), b.fids[l].begin())) << what << ", level " << l;
    if (l + 1 < a.levels()) {
      ASSERT_EQ(a.fptr[l].size(), b.fptr[l].size()) << what << ", level " << l;
      EXPECT_TRUE(std::equal(a.fptr[l].begin(), a.fptr[l].end(), b.fptr[l].begin())) << what << ", level " << l;
    }
  }
  ASSERT_EQ(a.vals.dtype(), b.vals.dtype()) << what;
  EXPECT_EQ(std::memcmp(a.vals.data(), b.vals.data(), a.nnz() * dtype_size(a.vals.dtype())), 0) << what;
}

// The keyed build (from the COO, and from the first tree by walking it)
// gives the tree of the sort-permutation build, in every mode order: small
// and hypersparse shapes, modes of length 1, repeated coordinates, keys
// whose low bits need 64-bit words, and 1 to 3 threads.
TEST(CsfKeyedBuild, SameTreesAsTheSortPermutationBuild) {
  struct Case {
    std::vector<spt_index> dims;
    spt_nnz nnz;
    bool duplicates;
  };
  const Case cases[] = {{{20, 3, 17, 400}, 3000, false},     {{300, 400, 500}, 60000, true},
                        {{1, 50, 1, 60}, 500, true},          {{7, 9}, 1, false},
                        {{2, 2, 2}, 2, true},                 {{1u << 20, 1u << 21, 1u << 19}, 40000, false},
                        {{4000000000u, 3000000000u}, 5000, true}, {{60, 70, 80, 90, 5}, 20000, true},
                        // few buckets, some above the radix and the one-at-a-time sizes
                        {{5, 7, 3000000}, 50000, false}};
  for (const Case& c : cases) {
    RandomTensorSpec spec;
    spec.dims = c.dims;
    spec.nnz = c.nnz;
    spec.seed = 77;
    spec.duplicates = c.duplicates;
    for (spt_dtype dtype : {SPT_FLOAT32, SPT_FLOAT64}) {
      const spt_coo_s x = random_coo(dtype, spec);
      ASSERT_TRUE(csf_keyed_build_applies(x.dims, x.nnz));
      const CsfTree first = build_csf_tree_by_permutation(Exec{1}, x, csf_mode_order(x.dims, csf_shortest_mode(x.dims)));
      for (int threads : {1, 2, 3}) {
        for (uint32_t root = 0; root < x.order(); ++root) {
          const std::vector<uint32_t> order = csf_mode_order(x.dims, root);
          const std::string what = describe(x, SPT_CSF_ALLMODE) + ", root " + std::to_string(root) + ", " +
                                   std::to_string(threads) + " thread(s)";
          const CsfTree want = build_csf_tree_by_permutation(Exec{threads}, x, order);
          expect_same_tree(build_csf_tree_keyed(Exec{threads}, x, order), want, what + ", from the COO");
          expect_same_tree(build_csf_tree_keyed(Exec{threads}, first, x.dims, order), want, what + ", from a tree");
        }
      }
    }
  }
}

// A handle built from its first tree alone equals the one built from the
// tensor, for every resolved policy; also where the keys do not fit 64 bits
// (the tree's COO view is used then).
TEST(CsfKeyedBuild, HandleFromTheFirstTreeEqualsTheHandleFromTheTensor) {
  const std::vector<std::vector<spt_index>> shapes = {{30, 20, 25, 6}, {4000000000u, 5, 3000000000u, 7, 100}};
  for (const std::vector<spt_index>& dims : shapes) {
    RandomTensorSpec spec;
    spec.dims = dims;
    spec.nnz = 4000;
    spec.seed = 3;
    spec.duplicates = true;
    const spt_coo_s x = random_coo(SPT_FLOAT32, spec);
    for (spt_csf_policy policy : {SPT_CSF_ONEMODE, SPT_CSF_TWOMODE, SPT_CSF_ALLMODE}) {
      spt_csf_s want, got;
      build_csf(Exec{2}, x, policy, want);
      build_csf_from_first_tree(Exec{2}, x.dims, policy,
                                build_csf_tree(Exec{2}, x, csf_mode_order(x.dims, csf_shortest_mode(x.dims))),
                                CsfTreeUse::keep_all, got);
      ASSERT_EQ(got.trees.size(), want.trees.size());
      EXPECT_EQ(got.tree_of_mode, want.tree_of_mode);
      EXPECT_EQ(got.policy, want.policy);
      for (size_t t = 0; t < want.trees.size(); ++t)
        expect_same_tree(got.trees[t], want.trees[t], describe(x, policy) + ", tree " + std::to_string(t));
    }
  }
}

// AUTO (resolved to ALLMODE) runs every mode on the tree ALLMODE runs it on
// and frees the others but the first: a tensor with one long mode, whose
// cost model puts big factors near the root, runs every mode on the tree
// rooted there (as mathsx-user-tag-week does), so AUTO keeps two trees of
// three; a tensor of equal modes keeps all three.
TEST(CsfKeyedBuild, AutoKeepsOnlyTheTreesSomeModeRunsOn) {
  struct Case {
    std::vector<spt_index> dims;
    size_t want_trees;
  };
  for (const Case& c : {Case{{400000, 1600, 400}, 2}, Case{{300, 300, 300}, 3}}) {
    RandomTensorSpec spec;
    spec.dims = c.dims;
    spec.nnz = 60000;
    spec.seed = 9;
    const spt_coo_s x = random_coo(SPT_FLOAT32, spec);
    spt_csf_s all, autod, from_first;
    build_csf(Exec{2}, x, SPT_CSF_ALLMODE, all);
    build_csf(Exec{2}, x, SPT_CSF_AUTO, autod);
    build_csf_from_first_tree(Exec{2}, x.dims, SPT_CSF_ALLMODE,
                              build_csf_tree(Exec{2}, x, csf_mode_order(x.dims, csf_shortest_mode(x.dims))),
                              CsfTreeUse::drop_unused, from_first);
    ASSERT_EQ(autod.policy, SPT_CSF_ALLMODE);
    EXPECT_EQ(autod.trees.size(), c.want_trees) << describe(x, SPT_CSF_AUTO);
    ASSERT_EQ(from_first.trees.size(), autod.trees.size());
    expect_same_tree(autod.trees[0], all.trees[0], describe(x, SPT_CSF_AUTO) + ", first tree");
    for (uint32_t m = 0; m < x.order(); ++m) {
      const std::string what = describe(x, SPT_CSF_AUTO) + ", mode " + std::to_string(m);
      expect_same_tree(autod.tree_for_mode(m), all.tree_for_mode(m), what);
      expect_same_tree(from_first.tree_for_mode(m), all.tree_for_mode(m), what + ", from the first tree");
    }
  }
}

// The node counts AUTO predicts for a tree before building it (to skip one
// no mode would run on) match the tree built on every level (the trees of
// csf_mode_order: the first tree with one mode moved to the root), with
// repeated coordinates and on every thread count; for another order they
// are lower bounds.
TEST(CsfKeyedBuild, PredictedNodeCountsMatchTheBuiltTree) {
  for (const std::vector<spt_index>& dims : std::vector<std::vector<spt_index>>{
           {400, 90, 700}, {30, 20, 25, 6}, {12, 300, 12, 40, 9}, {50, 50, 50}}) {
    const RandomTensorSpec spec = spec_of(dims, 20000, 41, true);
    const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
    const CsfTree first = build_csf_tree(Exec{2}, x, csf_mode_order(x.dims, csf_shortest_mode(x.dims)));
    for (uint32_t root = 0; root < x.order(); ++root) {
      if (root == first.mode_order[0]) continue;
      const std::vector<uint32_t> order = csf_mode_order(x.dims, root);
      const CsfTree built = build_csf_tree(Exec{2}, x, order);
      for (int threads : {1, 3}) {
        const std::vector<double> nodes = csf_predicted_nodes(Exec{threads}, first, x.dims, order);
        ASSERT_EQ(nodes.size(), built.levels());
        const std::string what = describe(x, SPT_CSF_ALLMODE) + ", root " + std::to_string(root) + ", " +
                                 std::to_string(threads) + " thread(s)";
        for (uint32_t l = 0; l < built.levels(); ++l)
          EXPECT_EQ(nodes[l], double(built.nodes(l))) << what << ", level " << l;
        // The root's order reversed below it: bounds only.
        std::vector<uint32_t> reversed = order;
        std::reverse(reversed.begin() + 1, reversed.end());
        const CsfTree other = build_csf_tree(Exec{2}, x, reversed);
        const std::vector<double> bounds = csf_predicted_nodes(Exec{threads}, first, x.dims, reversed);
        for (uint32_t l = 0; l < other.levels(); ++l) {
          EXPECT_LE(bounds[l], double(other.nodes(l))) << what << ", reversed, level " << l;
          if (l > 0) EXPECT_GE(bounds[l], bounds[l - 1]) << what << ", reversed, level " << l;
        }
        EXPECT_EQ(bounds.back(), double(other.nnz())) << what << ", reversed, leaves";
        for (uint32_t m = 0; m < x.order(); ++m)
          EXPECT_LE(csf_mttkrp_cost(order, nodes, x.nnz, x.dims, m, 64, threads),
                    csf_mttkrp_cost(built, x.dims, m, 64, threads))
              << what << ", mode " << m;
      }
    }
  }
}

// The summed statistics from a CSF tree (repeats summed, as the MPI CP-ALS
// takes them from its block's operand) equal the reference kernel's from
// the COO: with and without repeated coordinates, orders 2-5, any thread
// count; and the CSF operand reports them.
TEST(CsfSummedStats, EqualTheCooReference) {
  for (const std::vector<spt_index>& dims : std::vector<std::vector<spt_index>>{
           {50, 40}, {30, 20, 25}, {12, 9, 14, 5}, {6, 7, 5, 4, 3}}) {
    for (bool duplicates : {false, true}) {
      const RandomTensorSpec spec = spec_of(dims, 3000, 19, duplicates);
      for (spt_dtype dtype : {SPT_FLOAT32, SPT_FLOAT64}) {
        const spt_coo_s x = random_coo(dtype, spec);
        const kernels::SummedStats want = ref::summed_stats(Exec{1}, x);
        if (duplicates) ASSERT_LT(want.distinct, x.nnz) << "the test should have repeated coordinates";
        spt_csf_s h;
        build_csf(Exec{2}, x, SPT_CSF_ONEMODE, h);
        for (int threads : {1, 2, 5}) {
          const std::string what = describe(x, SPT_CSF_ONEMODE) + ", " + std::to_string(threads) + " thread(s)";
          const SummedStats got = csf_summed_stats(Exec{threads}, h.trees[0]);
          EXPECT_EQ(got.distinct, want.distinct) << what;
          EXPECT_NEAR(got.norm_squared, want.norm_squared, 1e-12 * want.norm_squared) << what;
        }
        if (dtype == SPT_FLOAT64) {
          algo::CsfOperand<double> operand(h);
          const std::optional<SummedStats> from_operand = operand.summed_stats(Exec{2});
          ASSERT_TRUE(from_operand.has_value());
          EXPECT_EQ(from_operand->distinct, want.distinct);
        }
      }
    }
  }
}

// Two short modes (as flights-2001 and coads-climatology have): the tree
// rooted at the second-shortest mode is the first tree with its top two
// levels swapped, and its MTTKRP could save at most the first tree's few
// top nodes, so AUTO does not build it: one tree fewer than ALLMODE, that
// mode on the first tree, the same MTTKRPs. With many top nodes (equal
// modes, in the test above) the tree is built.
TEST(CsfKeyedBuild, AutoSkipsTheSwappedTreeOfTwoShortModes) {
  RandomTensorSpec spec;
  spec.dims = {100, 100, 12, 6};
  spec.nnz = 200000;
  spec.seed = 5;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  spt_csf_s autod;
  build_csf(Exec{2}, x, SPT_CSF_AUTO, autod);
  ASSERT_EQ(autod.policy, SPT_CSF_ALLMODE);
  EXPECT_EQ(autod.trees.size(), 3u) << describe(x, SPT_CSF_AUTO);
  EXPECT_EQ(autod.trees[0].mode_order[0], 3u);
  EXPECT_EQ(autod.tree_of_mode[2], 0u) << "mode 2 should run at level 1 of the first tree";
  const auto f = random_factors<double>(x.dims, 8, 31);
  const auto refs = crefs(f);
  for (uint32_t mode = 0; mode < x.order(); ++mode) {
    DenseMatrix<double> want(x.dims[mode], 8), got(x.dims[mode], 8);
    ref::mttkrp(Exec{1}, x, refs.data(), mode, want.ref());
    cpu::mttkrp_csf(Exec{2}, autod, refs.data(), mode, got.ref());
    expect_matrix_close(want, got, "AUTO without the swapped tree, mode " + std::to_string(mode));
  }
}

// ---------------------------------------------------------------- CP-ALS

template <typename T>
void check_cp_als_formats(spt_dtype dtype) {
  RandomTensorSpec spec;
  spec.dims = {30, 20, 25, 6};
  spec.nnz = 2500;
  spec.seed = 5;
  spt_coo_s x = random_coo(dtype, spec);
  spt_context_s ctx;
  ctx.threads = 2;
  spt_cpd_options opts;
  ASSERT_EQ(spt_cpd_options_init(&opts), SPT_OK);
  opts.rank = 5;
  opts.max_iters = 8;
  opts.tol = 0;
  opts.seed = 17;
  opts.format = SPT_TENSOR_FORMAT_COO;
  spt_ktensor_s want;
  cp_als(ctx, x, opts, want);
  std::vector<std::pair<spt_tensor_format, spt_csf_policy>> runs;
  for (spt_tensor_format format : {SPT_TENSOR_FORMAT_CSF, SPT_TENSOR_FORMAT_AUTO})
    for (spt_csf_policy p : kPolicies) runs.emplace_back(format, p);
  // HiCOO and the memoized CSF sequence (ADATM) too.
  runs.emplace_back(SPT_TENSOR_FORMAT_HICOO, SPT_CSF_AUTO);
  runs.emplace_back(SPT_TENSOR_FORMAT_CSF, SPT_CSF_MEMOIZED);
  for (const auto& [format, p] : runs) {
    {
      opts.format = format;
      opts.csf_policy = p;
      spt_ktensor_s got;
      cp_als(ctx, x, opts, got);
      const std::string what = describe(x, p) + (format == SPT_TENSOR_FORMAT_AUTO    ? " format auto"
                                                 : format == SPT_TENSOR_FORMAT_HICOO ? " format hicoo"
                                                                                     : "");
      const double tol = sizeof(T) == 4 ? 2e-3 : 1e-9;
      ASSERT_EQ(got.iterations, want.iterations) << what;
      for (size_t i = 0; i < want.fit_history.size(); ++i)
        ASSERT_NEAR(got.fit_history[i], want.fit_history[i], tol) << what << " iteration " << i;
      for (spt_index r = 0; r < opts.rank; ++r)
        ASSERT_TRUE(close(got.lambda.ptr<T>()[r], want.lambda.ptr<T>()[r], tol)) << what;
      for (uint32_t m = 0; m < x.order(); ++m)
        for (spt_nnz i = 0; i < x.dims[m] * opts.rank; ++i)
          ASSERT_NEAR(got.factors[m]->ptr<T>()[i], want.factors[m]->ptr<T>()[i], tol) << what << " mode " << m;
    }
  }
  // The C entry point on a CSF handle gives the same model.
  spt_csf* handle = nullptr;
  ASSERT_EQ(spt_csf_from_coo(&ctx, &x, spt::test::CsfOptions(SPT_CSF_TWOMODE), &handle), SPT_OK);
  spt_ktensor* k = nullptr;
  EXPECT_EQ(spt_cpd_als_csf(&ctx, handle, &opts, &k), SPT_WARN_NOT_CONVERGED);
  ASSERT_NE(k, nullptr);
  EXPECT_NEAR(k->fit, want.fit, sizeof(T) == 4 ? 2e-3 : 1e-9);
  spt_ktensor_free(k);
  spt_csf_free(handle);
}

TEST(CsfCpAls, SameFactorsAsCooFloat64) { check_cp_als_formats<double>(SPT_FLOAT64); }
TEST(CsfCpAls, SameFactorsAsCooFloat32) { check_cp_als_formats<float>(SPT_FLOAT32); }

TEST(CsfCpAls, OperandNamesAndAutoFormat) {
  spt_coo_s x3 = random_coo(SPT_FLOAT64, standard_specs()[1]);
  spt_coo_s x2 = random_coo(SPT_FLOAT64, standard_specs()[0]);
  spt_context_s ctx;
  spt_cpd_options opts;
  spt_cpd_options_init(&opts);
  // AUTO follows spt_suggest_format: small tensors run on HiCOO.
  EXPECT_STREQ(algo::make_mttkrp_operand<double>(ctx, x3, opts)->name(), "hicoo");
  EXPECT_STREQ(algo::make_mttkrp_operand<double>(ctx, x2, opts)->name(), "hicoo");
  opts.format = SPT_TENSOR_FORMAT_HICOO;
  EXPECT_STREQ(algo::make_mttkrp_operand<double>(ctx, x3, opts)->name(), "hicoo");
  opts.format = SPT_TENSOR_FORMAT_CSF;
  opts.csf_policy = SPT_CSF_MEMOIZED;
  EXPECT_STREQ(algo::make_mttkrp_operand<double>(ctx, x3, opts)->name(), "csf-memo");
  opts.format = SPT_TENSOR_FORMAT_CSF;
  opts.csf_policy = SPT_CSF_TWOMODE;
  EXPECT_STREQ(algo::make_mttkrp_operand<double>(ctx, x3, opts)->name(), "csf-twomode");
  opts.format = SPT_TENSOR_FORMAT_COO;
  EXPECT_STREQ(algo::make_mttkrp_operand<double>(ctx, x3, opts)->name(), "coo");
}

TEST(CsfCpAls, OldOptionsStructSizeGetsDefaults) {
  // A caller built against 0.1 passes the struct without format/csf_policy.
  spt_coo_s x = random_coo(SPT_FLOAT64, standard_specs()[1]);
  spt_cpd_options opts;
  spt_cpd_options_init(&opts);
  opts.rank = 3;
  opts.max_iters = 3;
  opts.format = static_cast<spt_tensor_format>(12345);  // beyond the old size: must be ignored
  opts.struct_size = offsetof(spt_cpd_options, format);
  const spt_cpd_options n = normalized_cpd_options(opts);
  EXPECT_EQ(n.struct_size, sizeof(spt_cpd_options));
  EXPECT_EQ(n.format, SPT_TENSOR_FORMAT_AUTO);
  EXPECT_EQ(n.csf_policy, SPT_CSF_AUTO);
  EXPECT_EQ(n.rank, 3u);
  spt_ktensor* k = nullptr;
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  EXPECT_GE(spt_cpd_als(ctx, &x, &opts, &k), 0) << spt_last_error(ctx);
  spt_ktensor_free(k);
  // The current size with a bad format is rejected.
  opts.struct_size = sizeof(opts);
  k = nullptr;
  EXPECT_EQ(spt_cpd_als(ctx, &x, &opts, &k), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("opts.format"), std::string::npos);
  // Named formats CP-ALS does not run on: UNSUPPORTED, with the reason.
  for (spt_tensor_format f : {SPT_TENSOR_FORMAT_HBCSF, SPT_TENSOR_FORMAT_HLS}) {
    opts.format = f;
    EXPECT_EQ(spt_cpd_als(ctx, &x, &opts, &k), SPT_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(spt_last_error(ctx)).find("CP-ALS does not run on"), std::string::npos)
        << spt_last_error(ctx);
    EXPECT_EQ(k, nullptr);
  }
  opts.format = SPT_TENSOR_FORMAT_CSF;
  opts.csf_policy = static_cast<spt_csf_policy>(9);
  EXPECT_EQ(spt_cpd_als(ctx, &x, &opts, &k), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("csf_policy"), std::string::npos);
  opts.struct_size = 8;
  EXPECT_EQ(spt_cpd_als(ctx, &x, &opts, &k), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(k, nullptr);
  spt_context_free(ctx);
}

// ---------------------------------------------------------------- C API

TEST(CsfApi, CreateInfoMttkrpAndErrors) {
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  spt_coo_s x = random_coo(SPT_FLOAT64, standard_specs()[3]);  // 20 3 17 400
  spt_csf* csf = nullptr;
  EXPECT_EQ(spt_csf_from_coo(ctx, nullptr, spt::test::CsfOptions(SPT_CSF_AUTO), &csf), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_csf_from_coo(ctx, &x, spt::test::CsfOptions(SPT_CSF_AUTO), nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_csf_from_coo(ctx, &x, spt::test::CsfOptions(static_cast<spt_csf_policy>(7)), &csf), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("policy"), std::string::npos);
  EXPECT_EQ(csf, nullptr);
  spt_coo_s vec;
  vec.init_owned(SPT_FLOAT64, {5}, 0);
  EXPECT_EQ(spt_csf_from_coo(ctx, &vec, spt::test::CsfOptions(SPT_CSF_AUTO), &csf), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("order >= 2"), std::string::npos);

  ASSERT_EQ(spt_csf_from_coo(ctx, &x, spt::test::CsfOptions(SPT_CSF_TWOMODE), &csf), SPT_OK);
  spt_csf_summary info;
  info.struct_size = sizeof(info);
  ASSERT_EQ(spt_csf_info(nullptr, csf, &info), SPT_OK);
  EXPECT_EQ(info.order, 4u);
  EXPECT_EQ(info.nnz, x.nnz);
  EXPECT_EQ(info.trees, 2u);
  EXPECT_EQ(info.policy, SPT_CSF_TWOMODE);
  EXPECT_EQ(info.dtype, SPT_FLOAT64);
  EXPECT_EQ(info.bytes, csf->bytes());
  EXPECT_EQ(info.mode_order[0][0], 1u);
  EXPECT_EQ(info.mode_order[1][0], 3u);
  for (uint32_t m = 0; m < 4; ++m) EXPECT_EQ(info.tree_for_mode[m], csf->tree_of_mode[m]);
  info.struct_size = 4;
  EXPECT_EQ(spt_csf_info(nullptr, csf, &info), SPT_ERR_INVALID_ARGUMENT);
  spt_nnz fibers = 0;
  ASSERT_EQ(spt_csf_fibers(csf, 0, 3, &fibers), SPT_OK);
  EXPECT_EQ(fibers, x.nnz);
  EXPECT_EQ(spt_csf_fibers(csf, 2, 0, &fibers), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_csf_fibers(csf, 0, 4, &fibers), SPT_ERR_INVALID_ARGUMENT);

  // Dims and the decode back to COO: the same nonzeros (as a multiset).
  std::vector<spt_index> dims(4, 0);
  ASSERT_EQ(spt_csf_dims(csf, dims.data()), SPT_OK);
  EXPECT_EQ(dims, x.dims);
  EXPECT_EQ(spt_csf_dims(csf, nullptr), SPT_ERR_INVALID_ARGUMENT);
  spt_coo* back = nullptr;
  ASSERT_EQ(spt_csf_to_coo(ctx, csf, &back), SPT_OK) << spt_last_error(ctx);
  ASSERT_EQ(back->nnz, x.nnz);
  EXPECT_EQ(back->dims, x.dims);
  auto entries = [](const spt_coo_s& t) {
    std::vector<std::tuple<spt_index, spt_index, spt_index, spt_index, double>> e;
    for (spt_nnz k = 0; k < t.nnz; ++k)
      e.emplace_back(t.ind[0][k], t.ind[1][k], t.ind[2][k], t.ind[3][k], t.values<double>()[k]);
    std::sort(e.begin(), e.end());
    return e;
  };
  EXPECT_EQ(entries(*back), entries(x));
  spt_coo_free(back);
  EXPECT_EQ(spt_csf_to_coo(ctx, nullptr, &back), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_csf_to_coo(ctx, csf, nullptr), SPT_ERR_INVALID_ARGUMENT);
  // NULL options are the defaults; options shorter than any release are refused.
  spt_csf* by_default = nullptr;
  ASSERT_EQ(spt_csf_from_coo(ctx, &x, nullptr, &by_default), SPT_OK);
  EXPECT_EQ(spt_csf_free(by_default), SPT_OK);
  spt_csf_options short_opts;
  ASSERT_EQ(spt_csf_options_init(&short_opts), SPT_OK);
  EXPECT_EQ(short_opts.policy, SPT_CSF_AUTO);
  short_opts.struct_size = 4;
  EXPECT_EQ(spt_csf_from_coo(ctx, &x, &short_opts, &by_default), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("struct_size"), std::string::npos);
  // A named policy that is no handle layout: UNSUPPORTED, with the reason.
  EXPECT_EQ(spt_csf_from_coo(ctx, &x, spt::test::CsfOptions(SPT_CSF_MEMOIZED), &by_default), SPT_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("CP-ALS strategy"), std::string::npos);

  // MTTKRP through the API (column-major output too) equals the COO one.
  const spt_index rank = 3;
  std::vector<spt_matrix*> f(4, nullptr);
  for (uint32_t m = 0; m < 4; ++m) {
    ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, x.dims[m], rank, SPT_ROW_MAJOR, &f[m]), SPT_OK);
    for (spt_nnz i = 0; i < x.dims[m]; ++i)
      for (spt_nnz r = 0; r < rank; ++r) f[m]->at<double>(i, r) = 0.1 * double((i * 7 + r * 3 + m) % 11) - 0.4;
  }
  for (uint32_t mode = 0; mode < 4; ++mode) {
    spt_matrix *want = nullptr, *got = nullptr;
    ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, x.dims[mode], rank, SPT_ROW_MAJOR, &want), SPT_OK);
    ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, x.dims[mode], rank, SPT_COL_MAJOR, &got), SPT_OK);
    ASSERT_EQ(spt_mttkrp(ctx, &x, f.data(), mode, want), SPT_OK);
    ASSERT_EQ(spt_mttkrp_csf(ctx, csf, f.data(), mode, got), SPT_OK) << spt_last_error(ctx);
    for (spt_nnz i = 0; i < x.dims[mode]; ++i)
      for (spt_nnz r = 0; r < rank; ++r) ASSERT_TRUE(close(want->at<double>(i, r), got->at<double>(i, r), 1e-11));
    spt_matrix_free(want);
    spt_matrix_free(got);
  }

  // Argument errors.
  spt_matrix *out = nullptr, *wrong_rows = nullptr, *f32 = nullptr;
  ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, x.dims[0], rank, SPT_ROW_MAJOR, &out), SPT_OK);
  ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, x.dims[0] + 1, rank, SPT_ROW_MAJOR, &wrong_rows), SPT_OK);
  ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT32, x.dims[0], rank, SPT_ROW_MAJOR, &f32), SPT_OK);
  auto expect_error = [&](spt_status status, const std::string& fragment) {
    EXPECT_EQ(status, SPT_ERR_INVALID_ARGUMENT) << fragment;
    EXPECT_NE(std::string(spt_last_error(ctx)).find(fragment), std::string::npos)
        << "message: " << spt_last_error(ctx) << "\nexpected to contain: " << fragment;
  };
  expect_error(spt_mttkrp_csf(ctx, nullptr, f.data(), 0, out), "x");
  expect_error(spt_mttkrp_csf(ctx, csf, nullptr, 0, out), "factors");
  expect_error(spt_mttkrp_csf(ctx, csf, f.data(), 0, nullptr), "out");
  expect_error(spt_mttkrp_csf(ctx, csf, f.data(), 4, out), "mode 4 out of range");
  expect_error(spt_mttkrp_csf(ctx, csf, f.data(), 0, wrong_rows), "out must be dims[0]");
  expect_error(spt_mttkrp_csf(ctx, csf, f.data(), 0, f32), "float32");
  std::vector<spt_matrix*> bad = f;
  bad[2] = nullptr;
  expect_error(spt_mttkrp_csf(ctx, csf, bad.data(), 0, out), "factors[2] must not be NULL");
  bad[2] = f[3];
  expect_error(spt_mttkrp_csf(ctx, csf, bad.data(), 0, out), "factors[2] must be dims[2]");
  bad = f;
  bad[1] = out;
  expect_error(spt_mttkrp_csf(ctx, csf, bad.data(), 0, out), "out must not be the same matrix");
  bad = f;
  bad[0] = nullptr;  // factors[mode] may be NULL
  EXPECT_EQ(spt_mttkrp_csf(ctx, csf, bad.data(), 0, out), SPT_OK);
  spt_ktensor* k = nullptr;
  expect_error(spt_cpd_als_csf(ctx, csf, nullptr, &k), "opts");
  expect_error(spt_cpd_als_csf(ctx, nullptr, nullptr, &k), "tensor");
  EXPECT_EQ(spt_csf_info(nullptr, nullptr, &info), SPT_ERR_INVALID_ARGUMENT);

  spt_matrix_free(out);
  spt_matrix_free(wrong_rows);
  spt_matrix_free(f32);
  for (auto* m : f) spt_matrix_free(m);
  spt_csf_free(csf);
  spt_csf_free(nullptr);
  spt_context_free(ctx);
}

}  // namespace
}  // namespace spt::test
