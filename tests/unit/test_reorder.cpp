// Index reordering (sptensor/reorder.h, src/reorder): every method returns
// permutations; LEXI-ORDER and BFS-MCS agree with plain re-implementations of
// the dissertation's definitions (ch. 5) and with orderings worked by hand;
// relabelling round-trips exactly; MTTKRP and CP-ALS on a relabelled tensor
// give the caller's results once factors are mapped back; results do not
// depend on the thread count; bad arguments are rejected with messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "core/coo.hpp"
#include "core/ktensor.hpp"
#include "core/radix_sort.hpp"
#include "reorder/bfs_mcs.hpp"
#include "reorder/lexi_order.hpp"
#include "reorder/permutation.hpp"
#include "reorder/random_order.hpp"
#include "sptensor/sptensor.h"

namespace spt::test {
namespace {

struct PermDeleter {
  void operator()(spt_permutation* p) const { spt_permutation_free(p); }
};
struct CooDeleter {
  void operator()(spt_coo* x) const { spt_coo_free(x); }
};
struct MatrixDeleter {
  void operator()(spt_matrix* m) const { spt_matrix_free(m); }
};
struct KtensorDeleter {
  void operator()(spt_ktensor* k) const { spt_ktensor_free(k); }
};
struct ContextDeleter {
  void operator()(spt_context* c) const { spt_context_free(c); }
};
using PermPtr = std::unique_ptr<spt_permutation, PermDeleter>;
using CooPtr = std::unique_ptr<spt_coo, CooDeleter>;
using MatrixPtr = std::unique_ptr<spt_matrix, MatrixDeleter>;
using KtensorPtr = std::unique_ptr<spt_ktensor, KtensorDeleter>;
using ContextPtr = std::unique_ptr<spt_context, ContextDeleter>;
using Perms = std::vector<std::vector<spt_index>>;

ContextPtr make_context(int threads = 2) {
  spt_context* c = nullptr;
  EXPECT_EQ(spt_context_create(&c), SPT_OK);
  EXPECT_EQ(spt_context_set_backend(c, SPT_BACKEND_CPU), SPT_OK);
  EXPECT_EQ(spt_context_set_threads(c, threads), SPT_OK);
  return ContextPtr(c);
}

spt_reorder_options options(spt_reorder_method method, int iterations = 3, uint64_t seed = 0) {
  spt_reorder_options o;
  EXPECT_EQ(spt_reorder_options_init(&o), SPT_OK);
  o.method = method;
  o.iterations = iterations;
  o.seed = seed;
  return o;
}

PermPtr compute(spt_context* ctx, const spt_coo_s& x, const spt_reorder_options& o) {
  spt_permutation* p = nullptr;
  const spt_status st = spt_reorder_compute(ctx, &x, &o, &p);
  EXPECT_EQ(st, SPT_OK) << spt_last_error(ctx);
  return PermPtr(p);
}

Perms extract(const spt_permutation* p) {
  spt_permutation_summary info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(spt_permutation_info(nullptr, p, &info), SPT_OK);
  const uint32_t order = info.order;
  std::vector<spt_index> dims(order);
  EXPECT_EQ(spt_permutation_dims(p, dims.data()), SPT_OK);
  Perms out(order);
  for (uint32_t m = 0; m < order; ++m) {
    out[m].resize(dims[m]);
    EXPECT_EQ(spt_permutation_get(p, m, out[m].data(), dims[m], 0), SPT_OK);
  }
  return out;
}

Perms to_vectors(const std::vector<reorder::Permutation>& p) {
  Perms out;
  for (const auto& q : p) out.emplace_back(q.begin(), q.end());
  return out;
}

bool is_permutation_of_range(const std::vector<spt_index>& p) {
  std::vector<spt_index> sorted(p);
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != i) return false;
  return true;
}

const spt_reorder_method kMethods[] = {SPT_REORDER_LEXI, SPT_REORDER_BFS_MCS, SPT_REORDER_RANDOM};

std::string method_name(spt_reorder_method m) {
  return m == SPT_REORDER_LEXI ? "lexi" : m == SPT_REORDER_BFS_MCS ? "bfs-mcs" : "random";
}

std::string describe(const RandomTensorSpec& s) {
  std::string t = "dims";
  for (auto d : s.dims) t += " " + std::to_string(d);
  return t;
}

// A tensor from explicit coordinates (values 1, 2, 3, ...).
spt_coo_s make_tensor(spt_dtype dtype, const std::vector<spt_index>& dims,
                      const std::vector<std::vector<spt_index>>& coords) {
  spt_coo_s x;
  x.init_owned(dtype, dims, coords.size());
  for (size_t k = 0; k < coords.size(); ++k)
    for (uint32_t m = 0; m < dims.size(); ++m) x.mutable_ind(m)[k] = coords[k][m];
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t k = 0; k < coords.size(); ++k) x.mutable_values<T>()[k] = static_cast<T>(k + 1);
  });
  return x;
}

// The tensors the reorderings are checked on: the standard kernel-test shapes
// plus an order-7 tensor whose coordinates do not fit one 64-bit key (the
// comparison-sort path of LEXI-ORDER).
std::vector<RandomTensorSpec> specs() {
  std::vector<RandomTensorSpec> s = standard_specs();
  RandomTensorSpec wide;
  wide.dims = {1000, 900, 1000, 700, 1000, 1000, 600};
  wide.nnz = 1500;
  wide.seed = 21;
  wide.duplicates = true;
  s.push_back(wide);
  RandomTensorSpec big;  // large enough for the parallel radix-sort passes
  big.dims = {3000, 200, 5000};
  big.nnz = 60000;
  big.seed = 22;
  s.push_back(big);
  return s;
}

// ---------------------------------------------------------------------------
// Oracles: the dissertation's definitions, written as plainly as possible.
// ---------------------------------------------------------------------------

// LEXI-ORDER: per mode, rows = distinct other-mode tuples in lexicographic
// order; each slice's sorted list of row positions; slices stably sorted so
// that a list with a smaller first difference (an earlier 1) comes first and
// a proper prefix comes after the longer list.
// Returns the permutations after 1, 2, ..., `iterations` sweeps (element
// k-1: k sweeps; after a sweep that changes nothing, the later ones equal
// it), so one run of the oracle serves every iteration count.
std::vector<Perms> reference_lexi(const spt_coo_s& x, int iterations) {
  const uint32_t order = x.order();
  std::vector<std::vector<spt_index>> coords(order);
  for (uint32_t m = 0; m < order; ++m) coords[m].assign(x.ind[m], x.ind[m] + x.nnz);
  Perms perm(order);
  for (uint32_t m = 0; m < order; ++m) {
    perm[m].resize(x.dims[m]);
    std::iota(perm[m].begin(), perm[m].end(), 0);
  }
  std::vector<Perms> sweeps;
  for (int it = 0; it < iterations; ++it) {
    bool changed = false;
    for (uint32_t n = 0; n < order; ++n) {
      auto row_of = [&](spt_nnz k) {
        std::vector<spt_index> t;
        for (uint32_t m = 0; m < order; ++m)
          if (m != n) t.push_back(coords[m][k]);
        return t;
      };
      std::set<std::vector<spt_index>> tuples;
      for (spt_nnz k = 0; k < x.nnz; ++k) tuples.insert(row_of(k));
      std::map<std::vector<spt_index>, size_t> row_id;
      for (const auto& t : tuples) row_id.emplace(t, row_id.size());
      std::vector<std::set<size_t>> rows(x.dims[n]);
      for (spt_nnz k = 0; k < x.nnz; ++k) rows[coords[n][k]].insert(row_id[row_of(k)]);
      std::vector<std::vector<size_t>> lists(x.dims[n]);  // each slice's sorted row positions
      for (spt_index i = 0; i < x.dims[n]; ++i) lists[i].assign(rows[i].begin(), rows[i].end());
      std::vector<spt_index> slices(x.dims[n]);
      std::iota(slices.begin(), slices.end(), 0);
      std::stable_sort(slices.begin(), slices.end(), [&](spt_index a, spt_index b) {
        const std::vector<size_t>& la = lists[a];
        const std::vector<size_t>& lb = lists[b];
        for (size_t i = 0; i < std::min(la.size(), lb.size()); ++i)
          if (la[i] != lb[i]) return la[i] < lb[i];
        return la.size() > lb.size();
      });
      std::vector<spt_index> new_label(x.dims[n]);
      for (spt_index pos = 0; pos < x.dims[n]; ++pos) new_label[slices[pos]] = pos;
      for (spt_index i = 0; i < x.dims[n]; ++i) changed |= new_label[i] != i;
      for (auto& c : coords[n]) c = new_label[c];
      for (auto& l : perm[n]) l = new_label[l];
    }
    sweeps.push_back(perm);
    if (!changed) break;
  }
  while (static_cast<int>(sweeps.size()) < iterations) sweeps.push_back(perm);
  return sweeps;
}

// BFS-MCS (Algorithm 8) with a linear scan for the best index instead of a
// heap: most connections, then fewest nonzeros in the slice, then lowest index.
Perms reference_bfs_mcs(const spt_coo_s& x) {
  const uint32_t order = x.order();
  std::vector<std::vector<std::vector<spt_nnz>>> nonzeros_of(order);
  for (uint32_t m = 0; m < order; ++m) {
    nonzeros_of[m].resize(x.dims[m]);
    for (spt_nnz k = 0; k < x.nnz; ++k) nonzeros_of[m][x.ind[m][k]].push_back(k);
  }
  Perms perm(order);
  for (uint32_t n = 0; n < order; ++n) {
    const spt_index dim = x.dims[n];
    perm[n].assign(dim, 0);
    std::vector<uint64_t> connections(dim, 0);
    std::vector<bool> numbered(dim, false);
    std::vector<std::vector<bool>> visited(order);
    for (uint32_t m = 0; m < order; ++m) visited[m].assign(x.dims[m], false);
    for (spt_index label = 0; label < dim; ++label) {
      spt_index best = dim;
      for (spt_index v = 0; v < dim; ++v) {
        if (numbered[v]) continue;
        if (best == dim || connections[v] > connections[best] ||
            (connections[v] == connections[best] && nonzeros_of[n][v].size() < nonzeros_of[n][best].size()))
          best = v;
      }
      numbered[best] = true;
      perm[n][best] = label;
      for (spt_nnz e : nonzeros_of[n][best])
        for (uint32_t m = 0; m < order; ++m) {
          if (m == n) continue;
          const spt_index u = x.ind[m][e];
          if (visited[m][u]) continue;
          visited[m][u] = true;
          for (spt_nnz f : nonzeros_of[m][u])
            if (f != e && !numbered[x.ind[n][f]]) ++connections[x.ind[n][f]];
        }
    }
  }
  return perm;
}

// ---------------------------------------------------------------------------

TEST(Reorder, EveryMethodReturnsOnePermutationPerMode) {
  ContextPtr ctx = make_context();
  for (const auto& spec : specs()) {
    spt_coo_s x = random_coo(SPT_FLOAT64, spec);
    for (spt_reorder_method method : kMethods) {
      PermPtr p = compute(ctx.get(), x, options(method, 2, 9));
      ASSERT_TRUE(p);
      Perms perms = extract(p.get());
      ASSERT_EQ(perms.size(), x.order()) << describe(spec);
      for (uint32_t m = 0; m < x.order(); ++m) {
        ASSERT_EQ(perms[m].size(), x.dims[m]) << describe(spec) << " " << method_name(method) << " mode " << m;
        EXPECT_TRUE(is_permutation_of_range(perms[m]))
            << describe(spec) << " " << method_name(method) << " mode " << m;
      }
    }
  }
}

TEST(Reorder, LexiOrderMatchesTheDefinition) {
  for (const auto& spec : specs()) {
    spt_coo_s x = random_coo(SPT_FLOAT32, spec);
    const std::vector<Perms> sweeps = reference_lexi(x, 3);
    for (int iterations : {1, 2, 3}) {
      const Perms& want = sweeps[iterations - 1];
      for (int threads : {1, 2, 3}) {
        const Perms got = to_vectors(reorder::lexi_order(x, iterations, threads));
        EXPECT_EQ(got, want) << describe(spec) << ", " << iterations << " iterations, " << threads << " threads";
      }
    }
  }
}

TEST(Reorder, BfsMcsMatchesAlgorithm8) {
  for (const auto& spec : specs()) {
    if (spec.nnz > 10000) continue;  // the oracle is quadratic in the mode sizes
    spt_coo_s x = random_coo(SPT_FLOAT64, spec);
    const Perms want = reference_bfs_mcs(x);
    for (int threads : {1, 2, 3})
      EXPECT_EQ(to_vectors(reorder::bfs_mcs_order(x, threads)), want) << describe(spec) << ", " << threads << " threads";
  }
}

// A 4 x 4 matrix worked by hand (see the comments for each step).
//   row 0: columns 1, 3      row 2: column 1
//   row 1: columns 0, 2      row 3: columns 0, 1, 2, 3
TEST(Reorder, HandWorkedMatrix) {
  const spt_coo_s x = make_tensor(SPT_FLOAT64, {4, 4},
                                  {{0, 1}, {0, 3}, {1, 0}, {1, 2}, {2, 1}, {3, 0}, {3, 1}, {3, 2}, {3, 3}});
  // LEXI, mode 0: row vectors 0101, 1010, 0100, 1111 -> order 3, 1, 0, 2.
  // Mode 1 over the new rows (old 3, 1, 0, 2): columns 1100, 1011, 1100, 1010
  // -> order 0, 2 (tie, lower label first), 1, 3. A second sweep changes nothing.
  const Perms lexi = {{2, 1, 3, 0}, {0, 2, 1, 3}};
  EXPECT_EQ(to_vectors(reorder::lexi_order(x, 3, 2)), lexi);
  EXPECT_EQ(to_vectors(reorder::lexi_order(x, 1, 1)), lexi);
  // BFS-MCS, mode 0: start at row 2 (fewest nonzeros); via column 1 rows 0 and 3
  // gain a connection; row 0 wins (fewer nonzeros), reaches row 3 through
  // column 3; then row 3, then row 1. Mode 1: start at column 0 (ties on 2
  // nonzeros, lowest index); rows 1 and 3 give column 2 two connections,
  // columns 1 and 3 one; then column 3 (fewer nonzeros than 1), then 1.
  const Perms bfs = {{1, 3, 0, 2}, {0, 3, 1, 2}};
  EXPECT_EQ(to_vectors(reorder::bfs_mcs_order(x, 2)), bfs);
}

// Dense blocks on the diagonal, labels shuffled in every mode: after one
// LEXI-ORDER sweep every block occupies a contiguous label range in every
// mode (its slices have identical patterns, disjoint from other blocks').
TEST(Reorder, LexiOrderRecoversShuffledBlockDiagonal) {
  const std::vector<std::vector<spt_index>> block_dims = {{3, 2, 4}, {2, 3, 1}, {4, 1, 2}, {1, 4, 3}};
  std::vector<spt_index> dims(3, 0);
  std::vector<std::vector<spt_index>> coords;
  std::vector<std::vector<size_t>> block_of(3);  // block of each index, per mode
  for (size_t b = 0; b < block_dims.size(); ++b) {
    const auto& bd = block_dims[b];
    for (spt_index i = 0; i < bd[0]; ++i)
      for (spt_index j = 0; j < bd[1]; ++j)
        for (spt_index k = 0; k < bd[2]; ++k) coords.push_back({dims[0] + i, dims[1] + j, dims[2] + k});
    for (int m = 0; m < 3; ++m) {
      for (spt_index i = 0; i < bd[m]; ++i) block_of[m].push_back(b);
      dims[m] += bd[m];
    }
  }
  std::vector<std::vector<spt_index>> shuffle(3);
  std::mt19937 rng(5);
  for (int m = 0; m < 3; ++m) {
    shuffle[m].resize(dims[m]);
    std::iota(shuffle[m].begin(), shuffle[m].end(), 0);
    std::shuffle(shuffle[m].begin(), shuffle[m].end(), rng);
  }
  std::vector<std::vector<spt_index>> shuffled_coords = coords;
  std::shuffle(shuffled_coords.begin(), shuffled_coords.end(), rng);  // nonzero order too
  std::vector<std::vector<size_t>> shuffled_block(3);
  for (int m = 0; m < 3; ++m) {
    shuffled_block[m].resize(dims[m]);
    for (spt_index i = 0; i < dims[m]; ++i) shuffled_block[m][shuffle[m][i]] = block_of[m][i];
  }
  for (auto& c : shuffled_coords)
    for (int m = 0; m < 3; ++m) c[m] = shuffle[m][c[m]];
  const spt_coo_s x = make_tensor(SPT_FLOAT64, dims, shuffled_coords);

  for (int iterations : {1, 3}) {
    const Perms perm = to_vectors(reorder::lexi_order(x, iterations, 2));
    for (int m = 0; m < 3; ++m) {
      std::vector<size_t> block_at(dims[m]);  // block of each new label
      for (spt_index i = 0; i < dims[m]; ++i) block_at[perm[m][i]] = shuffled_block[m][i];
      std::set<size_t> finished;
      for (spt_index l = 0; l < dims[m]; ++l) {
        if (l > 0 && block_at[l] != block_at[l - 1]) finished.insert(block_at[l - 1]);
        EXPECT_EQ(finished.count(block_at[l]), 0u)
            << "mode " << m << ": block " << block_at[l] << " is split (label " << l << ")";
      }
    }
  }
}

// A fixed point of LEXI-ORDER on a matrix is a doubly lexical ordering: rows
// and columns both in non-increasing lexicographic order.
TEST(Reorder, LexiOrderFixedPointIsDoublyLexical) {
  for (uint64_t seed : {1, 2, 3, 4}) {
    RandomTensorSpec spec;
    spec.dims = {40, 30};
    spec.nnz = 150;
    spec.seed = seed;
    spt_coo_s x = random_coo(SPT_FLOAT64, spec);
    const Perms perm = to_vectors(reorder::lexi_order(x, 100, 2));
    ASSERT_EQ(to_vectors(reorder::lexi_order(x, 101, 2)), perm) << "seed " << seed << ": no fixed point";
    std::vector<std::vector<int>> a(40, std::vector<int>(30, 0));
    for (spt_nnz k = 0; k < x.nnz; ++k) a[perm[0][x.ind[0][k]]][perm[1][x.ind[1][k]]] = 1;
    for (size_t i = 1; i < 40; ++i) EXPECT_GE(a[i - 1], a[i]) << "seed " << seed << ": rows " << i - 1 << ", " << i;
    for (size_t j = 1; j < 30; ++j) {
      std::vector<int> left(40), right(40);
      for (size_t i = 0; i < 40; ++i) left[i] = a[i][j - 1], right[i] = a[i][j];
      EXPECT_GE(left, right) << "seed " << seed << ": columns " << j - 1 << ", " << j;
    }
  }
}

TEST(Reorder, RadixSortIsAStableSortOnABitRange) {
  std::mt19937_64 rng(3);
  for (int bits : {1, 7, 11, 12, 33, 64}) {
    for (int low : {0, 5}) {
      if (low >= bits) continue;
      for (size_t n : {size_t(0), size_t(100), size_t(70000)}) {
        buffer<uint64_t> keys(n);
        for (auto& k : keys) k = bits == 64 ? rng() : rng() & ((uint64_t(1) << bits) - 1);
        std::vector<uint64_t> want(keys.begin(), keys.end());
        std::stable_sort(want.begin(), want.end(), [low](uint64_t a, uint64_t b) { return (a >> low) < (b >> low); });
        for (int threads : {1, 3}) {
          buffer<uint64_t> got = keys, scratch;
          sorting::radix_sort(got, scratch, low, bits, threads);
          EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin(), got.end()))
              << "bits [" << low << ", " << bits << "), " << n << " keys, " << threads << " threads";
        }
      }
    }
  }
}

TEST(Reorder, ResultsDoNotDependOnThreadsOrRuns) {
  for (const auto& spec : specs()) {
    spt_coo_s x = random_coo(SPT_FLOAT64, spec);
    for (spt_reorder_method method : kMethods) {
      Perms first;
      for (int threads : {1, 2, 3, 1}) {
        ContextPtr ctx = make_context(threads);
        const Perms got = extract(compute(ctx.get(), x, options(method, 3, 17)).get());
        if (first.empty()) first = got;
        else EXPECT_EQ(got, first) << describe(spec) << " " << method_name(method) << ", " << threads << " threads";
      }
    }
  }
}

TEST(Reorder, RandomUsesTheSeedOrTheContextSeed) {
  RandomTensorSpec spec;
  spec.dims = {50, 60, 70};
  spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  ContextPtr ctx = make_context();
  const Perms seeded = extract(compute(ctx.get(), x, options(SPT_REORDER_RANDOM, 3, 42)).get());
  EXPECT_EQ(seeded, to_vectors(reorder::random_order(x.dims, 42)));
  EXPECT_NE(seeded, extract(compute(ctx.get(), x, options(SPT_REORDER_RANDOM, 3, 43)).get()));
  ASSERT_EQ(spt_context_set_seed(ctx.get(), 42), SPT_OK);
  EXPECT_EQ(extract(compute(ctx.get(), x, options(SPT_REORDER_RANDOM, 3, 0)).get()), seeded);
  // Every label is reachable: a mode of 2 is not always left alone.
  std::set<std::vector<spt_index>> seen;
  for (uint64_t s = 1; s <= 40; ++s) seen.insert(to_vectors(reorder::random_order({2}, s))[0]);
  EXPECT_EQ(seen.size(), 2u);
}

template <typename T>
void expect_same_tensor(const spt_coo_s& want, const spt_coo_s& got, const std::string& what) {
  ASSERT_EQ(want.dims, got.dims) << what;
  ASSERT_EQ(want.nnz, got.nnz) << what;
  for (uint32_t m = 0; m < want.order(); ++m)
    for (spt_nnz k = 0; k < want.nnz; ++k) ASSERT_EQ(want.ind[m][k], got.ind[m][k]) << what << " mode " << m << " nz " << k;
  for (spt_nnz k = 0; k < want.nnz; ++k) ASSERT_EQ(want.values<T>()[k], got.values<T>()[k]) << what << " nz " << k;
}

TEST(Reorder, RelabelThenInverseRestoresTheTensorExactly) {
  ContextPtr ctx = make_context();
  for (const auto& spec : specs()) {
    const spt_coo_s x = random_coo(SPT_FLOAT32, spec);
    for (spt_reorder_method method : kMethods) {
      const std::string what = describe(spec) + " " + method_name(method);
      PermPtr p = compute(ctx.get(), x, options(method, 3, 5));
      const Perms perm = extract(p.get());
      spt_coo_s y = copy_coo(x, x.dtype());
      ASSERT_EQ(spt_coo_relabel(ctx.get(), &y, p.get()), SPT_OK) << spt_last_error(ctx.get());
      for (uint32_t m = 0; m < x.order(); ++m)
        for (spt_nnz k = 0; k < x.nnz; ++k) ASSERT_EQ(y.ind[m][k], perm[m][x.ind[m][k]]) << what;
      spt_permutation* inv_raw = nullptr;
      ASSERT_EQ(spt_permutation_inverse(ctx.get(), p.get(), &inv_raw), SPT_OK);
      PermPtr inv(inv_raw);
      ASSERT_EQ(spt_coo_relabel(ctx.get(), &y, inv.get()), SPT_OK);
      expect_same_tensor<float>(x, y, what);
    }
  }
}

TEST(Reorder, RelabeledCopyOfAViewLeavesTheViewAlone) {
  ContextPtr ctx = make_context();
  RandomTensorSpec spec;
  spec.dims = {30, 20, 10};
  spec.nnz = 300;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  std::vector<spt_index> indices;
  for (uint32_t m = 0; m < 3; ++m) indices.insert(indices.end(), x.ind[m], x.ind[m] + x.nnz);
  spt_coo* view_raw = nullptr;
  ASSERT_EQ(spt_coo_create_view(ctx.get(), SPT_FLOAT64, 3, x.dims.data(), x.nnz, indices.data(), x.nnz,
                                x.values<double>(), &view_raw),
            SPT_OK);
  CooPtr view(view_raw);
  PermPtr p = compute(ctx.get(), x, options(SPT_REORDER_LEXI));
  EXPECT_EQ(spt_coo_relabel(ctx.get(), view.get(), p.get()), SPT_ERR_READ_ONLY);
  EXPECT_NE(std::string(spt_last_error(ctx.get())).find("read-only"), std::string::npos);
  spt_coo* copy_raw = nullptr;
  ASSERT_EQ(spt_coo_relabeled_copy(ctx.get(), view.get(), p.get(), &copy_raw), SPT_OK);
  CooPtr copy(copy_raw);
  spt_coo_s want = copy_coo(x, x.dtype());
  ASSERT_EQ(spt_coo_relabel(ctx.get(), &want, p.get()), SPT_OK);
  expect_same_tensor<double>(want, *copy, "relabeled copy");
  expect_same_tensor<double>(x, *view, "view untouched");
}

// Integer data and factors keep every MTTKRP sum exact in float32 and
// float64, so the relabelled result must match bit for bit.
template <typename T>
void check_mttkrp_commutes_with_relabelling() {
  ContextPtr ctx = make_context();
  const spt_dtype dtype = dtype_of<T>();
  const spt_index rank = 5;
  for (const auto& spec : specs()) {
    spt_coo_s x = random_coo(dtype, spec);
    for (spt_nnz k = 0; k < x.nnz; ++k) x.mutable_values<T>()[k] = static_cast<T>(static_cast<int>(k % 7) - 3);
    for (spt_reorder_method method : kMethods) {
      PermPtr p = compute(ctx.get(), x, options(method, 3, 11));
      spt_coo_s y = copy_coo(x, dtype);
      ASSERT_EQ(spt_coo_relabel(ctx.get(), &y, p.get()), SPT_OK);
      std::vector<MatrixPtr> factors, permuted;
      std::vector<const spt_matrix*> fp, pp;
      std::mt19937 rng(static_cast<unsigned>(spec.seed));
      for (uint32_t m = 0; m < x.order(); ++m) {
        // Alternate layouts so both row-permutation paths run.
        const spt_layout layout = m % 2 ? SPT_COL_MAJOR : SPT_ROW_MAJOR;
        std::vector<T> data(static_cast<size_t>(x.dims[m]) * rank);
        for (auto& v : data) v = static_cast<T>(static_cast<int>(rng() % 5) - 2);
        const spt_nnz ld = layout == SPT_ROW_MAJOR ? rank : x.dims[m];
        spt_matrix *a = nullptr, *b = nullptr;
        ASSERT_EQ(spt_matrix_create_copy(ctx.get(), dtype, x.dims[m], rank, layout, data.data(), ld, &a), SPT_OK);
        ASSERT_EQ(spt_matrix_create_copy(ctx.get(), dtype, x.dims[m], rank, layout, data.data(), ld, &b), SPT_OK);
        ASSERT_EQ(spt_matrix_permute_rows(ctx.get(), b, p.get(), m), SPT_OK) << spt_last_error(ctx.get());
        factors.emplace_back(a);
        permuted.emplace_back(b);
        fp.push_back(a);
        pp.push_back(b);
      }
      for (uint32_t mode = 0; mode < x.order(); ++mode) {
        const std::string what = describe(spec) + " " + method_name(method) + " mode " + std::to_string(mode);
        spt_matrix *want_raw = nullptr, *got_raw = nullptr;
        ASSERT_EQ(spt_matrix_create(ctx.get(), dtype, x.dims[mode], rank, SPT_ROW_MAJOR, &want_raw), SPT_OK);
        ASSERT_EQ(spt_matrix_create(ctx.get(), dtype, x.dims[mode], rank, SPT_COL_MAJOR, &got_raw), SPT_OK);
        MatrixPtr want(want_raw), got(got_raw);
        ASSERT_EQ(spt_mttkrp(ctx.get(), &x, fp.data(), mode, want.get()), SPT_OK);
        ASSERT_EQ(spt_mttkrp(ctx.get(), &y, pp.data(), mode, got.get()), SPT_OK);
        // The relabelled result is the permuted original ...
        const Perms perm = extract(p.get());
        for (spt_index i = 0; i < x.dims[mode]; ++i)
          for (spt_index r = 0; r < rank; ++r)
            ASSERT_EQ(want->at<T>(i, r), got->at<T>(perm[mode][i], r)) << what << " row " << i;
        // ... and unpermuting maps it back.
        ASSERT_EQ(spt_matrix_unpermute_rows(ctx.get(), got.get(), p.get(), mode), SPT_OK);
        for (spt_index i = 0; i < x.dims[mode]; ++i)
          for (spt_index r = 0; r < rank; ++r) ASSERT_EQ(want->at<T>(i, r), got->at<T>(i, r)) << what << " row " << i;
      }
    }
  }
}

TEST(Reorder, MttkrpCommutesWithRelabellingFloat32) { check_mttkrp_commutes_with_relabelling<float>(); }
TEST(Reorder, MttkrpCommutesWithRelabellingFloat64) { check_mttkrp_commutes_with_relabelling<double>(); }

// CP-ALS from the same (permuted) initial factors on the relabelled tensor
// gives the same fit, lambda and, after spt_ktensor_unpermute, factors.
template <typename T>
void check_cp_als_commutes_with_relabelling(double tol) {
  ContextPtr ctx = make_context();
  const spt_dtype dtype = dtype_of<T>();
  const spt_index rank = 4;
  for (const auto& spec : {standard_specs()[1], standard_specs()[3], standard_specs()[5]}) {
    spt_coo_s x = random_coo(dtype, spec);
    for (spt_nnz k = 0; k < x.nnz; ++k) x.mutable_values<T>()[k] = std::abs(x.values<T>()[k]) + T(0.5);
    for (spt_reorder_method method : kMethods) {
      const std::string what = describe(spec) + " " + method_name(method);
      PermPtr p = compute(ctx.get(), x, options(method, 3, 3));
      spt_coo* y_raw = nullptr;
      ASSERT_EQ(spt_coo_relabeled_copy(ctx.get(), &x, p.get(), &y_raw), SPT_OK);
      CooPtr y(y_raw);
      std::vector<MatrixPtr> init, permuted_init;
      std::vector<const spt_matrix*> ip, pp;
      for (uint32_t m = 0; m < x.order(); ++m) {
        DenseMatrix<T> r = random_matrix<T>(x.dims[m], rank, 100 + m);
        for (auto& v : r.values) v = std::abs(v) + T(0.1);
        spt_matrix *a = nullptr, *b = nullptr;
        ASSERT_EQ(spt_matrix_create_copy(ctx.get(), dtype, x.dims[m], rank, SPT_ROW_MAJOR, r.values.data(), rank, &a),
                  SPT_OK);
        ASSERT_EQ(spt_matrix_create_copy(ctx.get(), dtype, x.dims[m], rank, SPT_ROW_MAJOR, r.values.data(), rank, &b),
                  SPT_OK);
        ASSERT_EQ(spt_matrix_permute_rows(ctx.get(), b, p.get(), m), SPT_OK);
        init.emplace_back(a);
        permuted_init.emplace_back(b);
        ip.push_back(a);
        pp.push_back(b);
      }
      spt_cpd_options o;
      ASSERT_EQ(spt_cpd_options_init(&o), SPT_OK);
      o.rank = rank;
      o.max_iters = 8;
      o.tol = 0;
      o.init = SPT_CPD_INIT_USER;
      o.init_factors = ip.data();
      spt_ktensor *a_raw = nullptr, *b_raw = nullptr;
      ASSERT_GE(spt_cpd_als(ctx.get(), &x, &o, &a_raw), 0) << spt_last_error(ctx.get());
      KtensorPtr a(a_raw);
      o.init_factors = pp.data();
      ASSERT_GE(spt_cpd_als(ctx.get(), y.get(), &o, &b_raw), 0) << spt_last_error(ctx.get());
      KtensorPtr b(b_raw);
      ASSERT_EQ(spt_ktensor_unpermute(ctx.get(), b.get(), p.get()), SPT_OK) << spt_last_error(ctx.get());
      double fa = 0, fb = 0;
      ASSERT_EQ(spt_ktensor_result(a.get(), &fa, nullptr, nullptr), SPT_OK);
      ASSERT_EQ(spt_ktensor_result(b.get(), &fb, nullptr, nullptr), SPT_OK);
      EXPECT_TRUE(close(fa, fb, tol)) << what << ": fit " << fa << " vs " << fb;
      for (spt_index r = 0; r < rank; ++r)
        EXPECT_TRUE(close(a->lambda.ptr<T>()[r], b->lambda.ptr<T>()[r], tol)) << what << " lambda " << r;
      for (uint32_t m = 0; m < x.order(); ++m)
        for (spt_index i = 0; i < x.dims[m]; ++i)
          for (spt_index r = 0; r < rank; ++r)
            ASSERT_TRUE(close(a->factors[m]->at<T>(i, r), b->factors[m]->at<T>(i, r), tol))
                << what << " factor " << m << " (" << i << ", " << r << "): " << a->factors[m]->at<T>(i, r) << " vs "
                << b->factors[m]->at<T>(i, r);
    }
  }
}

TEST(Reorder, CpAlsCommutesWithRelabellingFloat64) { check_cp_als_commutes_with_relabelling<double>(1e-9); }
TEST(Reorder, CpAlsCommutesWithRelabellingFloat32) { check_cp_als_commutes_with_relabelling<float>(2e-3); }

TEST(Reorder, PermutationsFromCallerArrays) {
  ContextPtr ctx = make_context();
  const spt_index dims[2] = {3, 4};
  const spt_index p0[3] = {3, 1, 2}, p1[4] = {2, 4, 1, 3};  // 1-based
  const spt_index* perms[2] = {p0, p1};
  spt_permutation* raw = nullptr;
  ASSERT_EQ(spt_permutation_create(ctx.get(), 2, dims, perms, 1, &raw), SPT_OK) << spt_last_error(ctx.get());
  PermPtr p(raw);
  EXPECT_EQ(extract(p.get()), (Perms{{2, 0, 1}, {1, 3, 0, 2}}));
  spt_index one_based[4];
  ASSERT_EQ(spt_permutation_get(p.get(), 1, one_based, 4, 1), SPT_OK);
  EXPECT_EQ(std::vector<spt_index>(one_based, one_based + 4), std::vector<spt_index>(p1, p1 + 4));
  spt_permutation* inv_raw = nullptr;
  ASSERT_EQ(spt_permutation_inverse(ctx.get(), p.get(), &inv_raw), SPT_OK);
  PermPtr inv(inv_raw);
  EXPECT_EQ(extract(inv.get()), (Perms{{1, 2, 0}, {2, 0, 3, 1}}));
}

TEST(Reorder, InvalidArgumentsAreRejected) {
  ContextPtr ctx = make_context();
  spt_context* c = ctx.get();
  RandomTensorSpec spec;
  spec.dims = {5, 6, 7};
  spec.nnz = 50;
  spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  spt_permutation* out = nullptr;
  auto expect_invalid = [&](spt_status st, const std::string& fragment, int line) {
    EXPECT_EQ(st, SPT_ERR_INVALID_ARGUMENT) << "line " << line;
    EXPECT_NE(std::string(spt_last_error(c)).find(fragment), std::string::npos)
        << "line " << line << ": message '" << spt_last_error(c) << "' lacks '" << fragment << "'";
  };

  spt_reorder_options o = options(SPT_REORDER_LEXI);
  expect_invalid(spt_reorder_compute(c, nullptr, &o, &out), "tensor", __LINE__);
  expect_invalid(spt_reorder_compute(c, &x, &o, nullptr), "out", __LINE__);
  spt_reorder_options bad = o;
  bad.struct_size = 4;
  expect_invalid(spt_reorder_compute(c, &x, &bad, &out), "struct_size", __LINE__);
  bad = o;
  bad.method = static_cast<spt_reorder_method>(7);
  expect_invalid(spt_reorder_compute(c, &x, &bad, &out), "method", __LINE__);
  bad = o;
  bad.iterations = 0;
  expect_invalid(spt_reorder_compute(c, &x, &bad, &out), "iterations", __LINE__);
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ((spt_reorder_options_init)(nullptr), SPT_ERR_INVALID_ARGUMENT);

  // Default options with opts NULL.
  ASSERT_EQ(spt_reorder_compute(c, &x, nullptr, &out), SPT_OK);
  PermPtr p(out);
  out = nullptr;

  const spt_index dims[2] = {3, 3};
  const spt_index repeated[3] = {0, 2, 0}, outside[3] = {0, 1, 3}, fine[3] = {2, 0, 1};
  const spt_index* with_repeat[2] = {fine, repeated};
  const spt_index* with_outside[2] = {outside, fine};
  const spt_index* good[2] = {fine, fine};
  const spt_index* with_null[2] = {fine, nullptr};
  expect_invalid(spt_permutation_create(c, 2, dims, with_repeat, 0, &out), "perms[1] gives label 0 twice", __LINE__);
  expect_invalid(spt_permutation_create(c, 2, dims, with_outside, 0, &out), "perms[0][2] = 3", __LINE__);
  expect_invalid(spt_permutation_create(c, 2, dims, good, 1, &out), "perms[0][1] = 0 is not a label", __LINE__);
  expect_invalid(spt_permutation_create(c, 2, dims, good, 2, &out), "index_base", __LINE__);
  expect_invalid(spt_permutation_create(c, 2, dims, with_null, 0, &out), "perms[1]", __LINE__);
  expect_invalid(spt_permutation_create(c, 2, nullptr, good, 0, &out), "dims", __LINE__);
  expect_invalid(spt_permutation_create(c, 0, dims, good, 0, &out), "order", __LINE__);
  EXPECT_EQ(out, nullptr);
  ASSERT_EQ(spt_permutation_create(c, 2, dims, good, 0, &out), SPT_OK);
  PermPtr small(out);

  spt_index buf[7];
  EXPECT_EQ(spt_permutation_get(p.get(), 3, buf, 7, 0), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_permutation_get(p.get(), 2, buf, 6, 0), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_permutation_get(p.get(), 2, nullptr, 7, 0), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_permutation_get(nullptr, 0, buf, 7, 0), SPT_ERR_INVALID_ARGUMENT);
  spt_permutation_summary info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(spt_permutation_info(nullptr, nullptr, &info), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_permutation_info(nullptr, p.get(), nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_permutation_dims(nullptr, buf), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_permutation_dims(p.get(), nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_permutation_free(nullptr), SPT_OK);

  // Shape mismatches leave the tensor untouched.
  spt_coo_s before = copy_coo(x, x.dtype());
  expect_invalid(spt_coo_relabel(c, &x, small.get()), "modes", __LINE__);
  expect_same_tensor<double>(before, x, "after a rejected relabel");
  const spt_index dims3[3] = {5, 6, 8};
  std::vector<spt_index> a(5), b(6), d(8);
  std::iota(a.begin(), a.end(), 0);
  std::iota(b.begin(), b.end(), 0);
  std::iota(d.begin(), d.end(), 0);
  const spt_index* three[3] = {a.data(), b.data(), d.data()};
  ASSERT_EQ(spt_permutation_create(c, 3, dims3, three, 0, &out), SPT_OK);
  PermPtr wrong_dims(out);
  expect_invalid(spt_coo_relabel(c, &x, wrong_dims.get()), "dims[2] = 7", __LINE__);
  expect_invalid(spt_coo_relabel(c, nullptr, p.get()), "tensor", __LINE__);
  expect_invalid(spt_coo_relabel(c, &x, nullptr), "perm", __LINE__);
  spt_coo* copy = nullptr;
  expect_invalid(spt_coo_relabeled_copy(c, &x, wrong_dims.get(), &copy), "dims[2] = 7", __LINE__);
  EXPECT_EQ(copy, nullptr);

  spt_matrix* raw = nullptr;
  ASSERT_EQ(spt_matrix_create(c, SPT_FLOAT64, 6, 2, SPT_ROW_MAJOR, &raw), SPT_OK);
  MatrixPtr m(raw);
  expect_invalid(spt_matrix_unpermute_rows(c, m.get(), p.get(), 0), "rows", __LINE__);
  expect_invalid(spt_matrix_permute_rows(c, m.get(), p.get(), 3), "mode 3", __LINE__);
  expect_invalid(spt_matrix_permute_rows(c, nullptr, p.get(), 1), "factor", __LINE__);
  EXPECT_EQ(spt_matrix_permute_rows(c, m.get(), p.get(), 1), SPT_OK);

  spt_ktensor* k_raw = nullptr;
  const spt_index kdims[3] = {5, 6, 7};
  ASSERT_EQ(spt_ktensor_create(c, SPT_FLOAT64, 3, kdims, 2, &k_raw), SPT_OK);
  KtensorPtr k(k_raw);
  expect_invalid(spt_ktensor_unpermute(c, k.get(), small.get()), "modes", __LINE__);
  EXPECT_EQ(spt_ktensor_unpermute(c, k.get(), p.get()), SPT_OK);
}

}  // namespace
}  // namespace spt::test
