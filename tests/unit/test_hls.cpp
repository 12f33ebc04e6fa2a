// HLS: the encoding (hls::validate on every handle built: sorted tiles,
// bitmap popcounts against value offsets, the dense/sparse split against the
// threshold, sparse nonzeros outside dense tiles, row tables), exact COO
// round trips (repeats summed only inside dense tiles), statistics on
// hand-built tensors, and the MTTKRP and TTMc (CPU kernel with 1-3 threads,
// and the reference) against the COO reference kernels for orders 3 and 4,
// float32 and float64, every root mode, several slab depths, on
// block-structured tensors (dense 16^3 clusters plus scattered nonzeros) and
// the all-sparse / all-dense extremes; plus argument validation through the
// C API.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/format_invariants.hpp"
#include "common/test_util.hpp"
#include "common/format_options.hpp"
#include "core/coo.hpp"
#include "core/hls.hpp"
#include "core/matrix.hpp"
#include "core/sort.hpp"
#include "kernels/kernels.hpp"
#include "sptensor/sptensor.h"

namespace spt::test {
namespace {

namespace ref = spt::kernels::reference;
namespace cpu = SPT_TEST_CPU_KERNELS;
using kernels::Exec;

constexpr uint32_t kAllSparse = std::numeric_limits<uint32_t>::max();

// ---------------------------------------------------------------------------
// Tensors

spt_coo_s make_coo(spt_dtype dtype, const std::vector<spt_index>& dims,
                   const std::vector<std::vector<spt_index>>& coords, const std::vector<double>& values) {
  spt_coo_s x;
  x.init_owned(dtype, dims, coords.size());
  for (size_t k = 0; k < coords.size(); ++k) {
    for (size_t m = 0; m < dims.size(); ++m) x.mutable_ind(uint32_t(m))[k] = coords[k][m];
    if (dtype == SPT_FLOAT32) x.mutable_values<float>()[k] = float(values[k]);
    else x.mutable_values<double>()[k] = values[k];
  }
  return x;
}

// Block-structured: `clusters` dense boxes of 16 (x 16 x 16, x depth for
// order 4) aligned to the tile grid, each filled at `fill` density, plus
// `scattered` uniform nonzeros. Distinct coordinates unless `repeats`
// (then about every tenth nonzero is repeated once, in a shuffled position).
spt_coo_s block_tensor(spt_dtype dtype, const std::vector<spt_index>& dims, int clusters, double fill,
                       spt_index depth, int scattered, uint64_t seed, bool repeats = false) {
  std::mt19937_64 rng(seed);
  std::set<std::vector<spt_index>> seen;
  std::vector<std::vector<spt_index>> coords;
  auto add = [&](const std::vector<spt_index>& c) {
    if (seen.insert(c).second) coords.push_back(c);
  };
  const size_t order = dims.size();
  for (int b = 0; b < clusters; ++b) {
    std::vector<spt_index> base(order);
    std::vector<spt_index> edge(order, 16);
    if (order == 4) edge[3] = depth;
    for (size_t m = 0; m < order; ++m) base[m] = spt_index(rng() % ((dims[m] + edge[m] - 1) / edge[m])) * edge[m];
    uint64_t cells = 1;
    for (size_t m = 0; m < order; ++m) cells *= edge[m];
    const uint64_t want = uint64_t(double(cells) * fill);
    for (uint64_t k = 0; k < want; ++k) {
      std::vector<spt_index> c(order);
      bool inside = true;
      for (size_t m = 0; m < order; ++m) {
        c[m] = base[m] + spt_index(rng() % edge[m]);
        inside = inside && c[m] < dims[m];
      }
      if (inside) add(c);
    }
  }
  for (int k = 0; k < scattered; ++k) {
    std::vector<spt_index> c(order);
    for (size_t m = 0; m < order; ++m) c[m] = spt_index(rng() % dims[m]);
    add(c);
  }
  if (repeats) {
    const size_t n = coords.size();
    for (size_t k = 0; k < n; k += 10) coords.push_back(coords[k]);
  }
  std::shuffle(coords.begin(), coords.end(), rng);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(coords.size());
  for (double& x : v) x = u(rng);
  return make_coo(dtype, dims, coords, v);
}

hls::Params params(uint32_t root, uint32_t threshold = 0, uint32_t depth = 0) {
  hls::Params p;
  p.root = root;
  p.dense_threshold = threshold;
  p.slab_depth = depth;
  return p;
}

std::string describe(const hls::Params& p) {
  return "root " + std::to_string(p.root) + " threshold " + std::to_string(p.dense_threshold) + " depth " +
         std::to_string(p.slab_depth);
}

// ---------------------------------------------------------------------------
// Checks

// to_coo gives exactly `want` (x, or x with dense-tile repeats summed)
// stably sorted in the handle's level order.
void expect_decodes_to(const spt_coo_s& want_unsorted, const spt_hls_s& h, const std::string& what) {
  const spt_coo_s y = hls::to_coo(h, 2);
  const buffer<spt_nnz> perm = sorting::sort_permutation(Exec{1}, want_unsorted, h.modes);
  const spt_coo_s want = sorting::permuted_copy(Exec{1}, want_unsorted, perm);
  ASSERT_EQ(y.dims, want.dims) << what;
  ASSERT_EQ(y.nnz, want.nnz) << what;
  ASSERT_EQ(y.dtype(), want.dtype()) << what;
  for (uint32_t m = 0; m < want.order(); ++m)
    for (spt_nnz k = 0; k < want.nnz; ++k)
      ASSERT_EQ(y.ind[m][k], want.ind[m][k]) << what << " mode " << m << " nz " << k;
  ASSERT_EQ(std::memcmp(y.val, want.val, want.nnz * dtype_size(want.dtype())), 0) << what << ": values differ";
}

template <typename T>
std::vector<DenseMatrix<T>> factors_with_ranks(const std::vector<spt_index>& dims, const std::vector<spt_nnz>& ranks,
                                               uint64_t seed) {
  std::vector<DenseMatrix<T>> f;
  for (size_t m = 0; m < dims.size(); ++m) f.push_back(random_matrix<T>(dims[m], ranks[m], seed + 17 * m));
  return f;
}

template <typename T>
void check_products(const spt_coo_s& x, const spt_hls_s& h, uint64_t seed, const std::string& what) {
  const uint32_t root = h.root();
  const spt_index I = x.dims[root];
  for (spt_nnz rank : {1, 8, 33}) {
    const auto factors = random_factors<T>(x.dims, rank, seed + rank);
    const auto refs = crefs(factors);
    DenseMatrix<T> want(I, rank);
    ref::mttkrp(Exec{1}, x, refs.data(), root, want.ref());
    DenseMatrix<T> first;
    for (int threads : {1, 2, 3}) {
      DenseMatrix<T> got(I, rank);
      std::fill(got.values.begin(), got.values.end(), T(7));  // the kernel must overwrite every row
      cpu::mttkrp_hls(Exec{threads}, h, refs.data(), got.ref());
      expect_matrix_close(want, got, what + " mttkrp rank " + std::to_string(rank) + " threads " +
                                         std::to_string(threads));
      if (threads == 1) first = got;
      else
        ASSERT_TRUE(std::equal(first.values.begin(), first.values.end(), got.values.begin()))
            << what << ": MTTKRP depends on the thread count";
    }
    DenseMatrix<T> got_ref(I, rank);
    ref::mttkrp_hls(Exec{1}, h, refs.data(), got_ref.ref());
    expect_matrix_close(want, got_ref, what + " mttkrp reference");
    if (::testing::Test::HasFatalFailure()) return;
  }
  // TTMc with distinct ranks per mode (catches a wrong column order).
  for (const std::vector<spt_nnz>& base : {std::vector<spt_nnz>{2, 3, 4, 2}, std::vector<spt_nnz>{5, 1, 3, 2}}) {
    std::vector<spt_nnz> ranks(base.begin(), base.begin() + x.order());
    ranks[root] = 1;
    const auto factors = factors_with_ranks<T>(x.dims, ranks, seed + 5);
    const auto refs = crefs(factors);
    spt_nnz cols = 1;
    for (uint32_t m = 0; m < x.order(); ++m)
      if (m != root) cols *= ranks[m];
    DenseMatrix<T> want(I, cols);
    ref::ttmc(Exec{1}, x, refs.data(), root, want.ref());
    DenseMatrix<T> first;
    for (int threads : {1, 2, 3}) {
      DenseMatrix<T> got(I, cols);
      std::fill(got.values.begin(), got.values.end(), T(7));
      cpu::ttmc_hls(Exec{threads}, h, refs.data(), got.ref());
      expect_matrix_close(want, got, what + " ttmc threads " + std::to_string(threads));
      if (threads == 1) first = got;
      else
        ASSERT_TRUE(std::equal(first.values.begin(), first.values.end(), got.values.begin()))
            << what << ": TTMc depends on the thread count";
    }
    DenseMatrix<T> got_ref(I, cols);
    ref::ttmc_hls(Exec{1}, h, refs.data(), got_ref.ref());
    expect_matrix_close(want, got_ref, what + " ttmc reference");
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Build with p, validate, round trip (x has distinct coordinates), products.
template <typename T>
void check_tensor(const spt_coo_s& x, const hls::Params& p, const std::string& name) {
  const std::string what = name + " order " + std::to_string(x.order()) + " " + describe(p) + " " +
                           dtype_name(x.dtype());
  const spt_hls_s h = hls::from_coo(x, p, 2);
  ASSERT_NO_THROW(hls::validate(h)) << what;
  ASSERT_EQ(h.nnz(), x.nnz) << what;
  ASSERT_EQ(h.input_nnz, x.nnz) << what;
  if (p.dense_threshold == 1) {
    EXPECT_EQ(h.sparse_nnz(), 0u) << what;
    EXPECT_EQ(h.dense_tiles(), h.tiles) << what;
  }
  if (p.dense_threshold == kAllSparse) EXPECT_EQ(h.dense_nnz(), 0u) << what;
  expect_decodes_to(x, h, what);
  if (::testing::Test::HasFatalFailure()) return;
  check_products<T>(x, h, 100 + p.root, what);
}

template <typename T>
void run_order3() {
  const spt_dtype dt = dtype_of<T>();
  // Dims not multiples of 16 (partial edge tiles), one mode shorter than a tile.
  const spt_coo_s x = block_tensor(dt, {70, 50, 9}, 4, 0.12, 1, 400, 3);
  for (uint32_t root = 0; root < 3; ++root)
    for (uint32_t threshold : {0u, 1u, 40u, kAllSparse}) {
      check_tensor<T>(x, params(root, threshold), "blocks");
      if (::testing::Test::HasFatalFailure()) return;
    }
  const spt_coo_s y = block_tensor(dt, {100, 33, 47}, 3, 0.05, 1, 600, 4);
  for (uint32_t root = 0; root < 3; ++root) {
    check_tensor<T>(y, params(root), "blocks2");
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(HlsProducts, Order3Float64) { run_order3<double>(); }
TEST(HlsProducts, Order3Float32) { run_order3<float>(); }

template <typename T>
void run_order4() {
  const spt_dtype dt = dtype_of<T>();
  for (uint32_t depth : {1u, 2u, 4u, 16u}) {
    const spt_coo_s x = block_tensor(dt, {40, 35, 18, 21}, 3, 0.08, depth, 300, 10 + depth);
    for (uint32_t root = 0; root < 4; ++root)
      for (uint32_t threshold : {0u, 1u, 30u, kAllSparse}) {
        check_tensor<T>(x, params(root, threshold, depth), "blocks depth " + std::to_string(depth));
        if (::testing::Test::HasFatalFailure()) return;
      }
  }
}

TEST(HlsProducts, Order4Float64) { run_order4<double>(); }
TEST(HlsProducts, Order4Float32) { run_order4<float>(); }

// Large enough that the kernels run on 2 and 3 threads (2048 nonzeros per
// thread at least), with many dense tiles over several root groups.
template <typename T>
void run_large() {
  const spt_coo_s x = block_tensor(dtype_of<T>(), {200, 64, 90}, 40, 0.04, 1, 8000, 21);
  for (uint32_t root = 0; root < 3; ++root) {
    check_tensor<T>(x, params(root), "large");
    if (::testing::Test::HasFatalFailure()) return;
  }
  const spt_coo_s y = block_tensor(dtype_of<T>(), {50, 40, 30, 64}, 30, 0.03, 4, 6000, 22);
  for (uint32_t root = 0; root < 4; ++root) {
    check_tensor<T>(y, params(root, 0, 4), "large order 4");
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(HlsProducts, LargeThreadedFloat64) { run_large<double>(); }
TEST(HlsProducts, LargeThreadedFloat32) { run_large<float>(); }

// The standard random shapes of the other suites (orders 3 and 4 only),
// which include repeated coordinates: all-sparse keeps them, so the round
// trip is exact; the products are checked with the default split.
TEST(HlsProducts, StandardShapes) {
  for (const RandomTensorSpec& spec : standard_specs()) {
    if (spec.dims.size() != 3 && spec.dims.size() != 4) continue;
    const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
    for (uint32_t root = 0; root < x.order(); ++root) {
      const std::string what = "standard root " + std::to_string(root);
      const spt_hls_s s = hls::from_coo(x, params(root, kAllSparse), 2);
      ASSERT_NO_THROW(hls::validate(s)) << what;
      expect_decodes_to(x, s, what);
      const spt_hls_s h = hls::from_coo(x, params(root, 4), 2);
      ASSERT_NO_THROW(hls::validate(h)) << what;
      check_products<double>(x, h, 7, what);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// Data tensors from tests/data (the order-3 and -4 ones), every root, the
// default split and a low threshold (8 cells) that gives both parts.
TEST(HlsProducts, DataTensors) {
  int found = 0, mixed = 0;
  for (const char* name :
       {"nations.tns.xz", "umls.tns.xz", "kinship.tns.xz", "ciao-user-item-category-month.tns.xz", "jf17k-4ary.tns.xz"}) {
    const std::string path = data_file(name);
    if (path.empty()) continue;
    ++found;
    spt_coo* x = nullptr;
    ASSERT_EQ(spt_read(nullptr, path.c_str(), nullptr, &x), SPT_OK) << spt_thread_last_error();
    if (x->order() != 3 && x->order() != 4) {  // jf17k-4ary has order 5
      spt_coo_free(x);
      continue;
    }
    const spt_coo_s summed = sorting::coalesced_copy(Exec{1}, *x);
    for (uint32_t root = 0; root < x->order(); ++root)
      for (uint32_t threshold : {0u, 8u}) {
        const hls::Params p = params(root, threshold);
        const std::string what = std::string(name) + " " + describe(p);
        const spt_hls_s h = hls::from_coo(*x, p, 2);
        ASSERT_NO_THROW(hls::validate(h)) << what;
        if (threshold == 8 && h.dense_nnz() > 0 && h.sparse_nnz() > 0) ++mixed;
        if (summed.nnz == x->nnz) expect_decodes_to(*x, h, what);
        check_products<double>(*x, h, 5 + root, what);
        if (::testing::Test::HasFatalFailure()) break;
      }
    spt_coo_free(x);
    if (::testing::Test::HasFatalFailure()) return;
  }
  if (found == 0) GTEST_SKIP() << "no data tensors found";
  EXPECT_GT(mixed, 0) << "no data tensor had both a dense and a sparse part";
}

// Repeated coordinates: summed inside dense tiles, kept in the sparse part.
TEST(HlsEncoding, RepeatsSummedInDenseTilesOnly) {
  for (uint32_t order : {3u, 4u}) {
    const std::vector<spt_index> dims = order == 3 ? std::vector<spt_index>{40, 30, 20}
                                                   : std::vector<spt_index>{30, 20, 20, 8};
    const spt_coo_s x = block_tensor(SPT_FLOAT64, dims, 2, 0.1, 4, 200, 5, /*repeats=*/true);
    const std::string what = "repeats order " + std::to_string(order);
    // All sparse: the exact input multiset.
    const spt_hls_s s = hls::from_coo(x, params(1, kAllSparse), 2);
    ASSERT_NO_THROW(hls::validate(s)) << what;
    EXPECT_EQ(s.nnz(), x.nnz);
    expect_decodes_to(x, s, what + " all sparse");
    // All dense: the input with its repeats summed.
    const spt_hls_s d = hls::from_coo(x, params(1, 1), 2);
    ASSERT_NO_THROW(hls::validate(d)) << what;
    const spt_coo_s summed = sorting::coalesced_copy(Exec{1}, x);
    EXPECT_LT(summed.nnz, x.nnz) << what << ": the test tensor must have repeats";
    EXPECT_EQ(d.nnz(), summed.nnz);
    EXPECT_EQ(d.input_nnz, x.nnz);
    expect_decodes_to(summed, d, what + " all dense");
    check_products<double>(x, d, 3, what + " all dense");
    check_products<double>(x, s, 3, what + " all sparse");
  }
}

TEST(HlsEncoding, EmptyTensor) {
  for (uint32_t order : {3u, 4u}) {
    const spt_coo_s x = make_coo(SPT_FLOAT64, std::vector<spt_index>(order, 5), {}, {});
    const spt_hls_s h = hls::from_coo(x, params(1), 1);
    ASSERT_NO_THROW(hls::validate(h));
    EXPECT_EQ(h.tiles, 0u);
    check_products<double>(x, h, 1, "empty");
  }
}

// validate() notices a corrupted handle (so the checks above would too).
TEST(HlsEncoding, ValidateCatchesCorruption) {
  const spt_coo_s x = block_tensor(SPT_FLOAT64, {40, 40, 40}, 2, 0.1, 1, 100, 8);
  {
    spt_hls_s h = hls::from_coo(x, params(0), 1);
    ASSERT_GE(h.dense_tiles(), 1u);
    h.d_bitmap[0] ^= 1;  // one cell more or less than the values
    EXPECT_THROW(hls::validate(h), Error);
  }
  {
    spt_hls_s h = hls::from_coo(x, params(0), 1);
    h.dense_threshold = 5000;  // the dense tiles are now under it
    EXPECT_THROW(hls::validate(h), Error);
  }
  {
    spt_hls_s h = hls::from_coo(x, params(0), 1);
    ASSERT_GE(h.sparse_nnz(), 2u);
    std::swap(h.s_ind[0], h.s_ind[h.sparse_nnz() - 1]);
    EXPECT_THROW(hls::validate(h), Error);
  }
}

// ---------------------------------------------------------------------------
// Statistics and exact arrays on hand-built tensors

spt_hls_summary info_of(const spt_hls_s& h) {
  spt_hls_summary s;
  s.struct_size = sizeof s;
  EXPECT_EQ(spt_hls_info(nullptr, &h, &s), SPT_OK) << spt_thread_last_error();
  return s;
}

// Order 3, dims 40^3, root 0: tile (0,0,0) holds 100 distinct cells (dense
// with the default 78) plus one repeat; tile (1,1,1) holds 5 (sparse);
// tile (2,0,1) holds 78 (dense exactly at the threshold).
TEST(HlsStatistics, HandBuiltOrder3) {
  std::vector<std::vector<spt_index>> c;
  std::vector<double> v;
  for (spt_index k = 0; k < 100; ++k) {
    c.push_back({k % 16, (k / 16) % 16, (k * 7) % 16});
    v.push_back(1.0 + k);
  }
  c.push_back({0, 0, 0});  // repeat of cell (0,0,0) (k = 0): summed
  v.push_back(0.5);
  for (spt_index k = 0; k < 5; ++k) {
    c.push_back({16 + k, 16 + k, 16 + k});
    v.push_back(-1.0);
  }
  for (spt_index k = 0; k < 78; ++k) {
    c.push_back({32 + k % 8, k / 8, 16 + k % 5});
    v.push_back(2.0);
  }
  const spt_coo_s x = make_coo(SPT_FLOAT64, {40, 40, 40}, c, v);
  const spt_hls_s h = hls::from_coo(x, params(0), 1);
  ASSERT_NO_THROW(hls::validate(h));
  const spt_hls_summary s = info_of(h);
  EXPECT_EQ(s.order, 3u);
  EXPECT_EQ(s.root_mode, 0u);
  EXPECT_EQ(s.dense_threshold, 78u);
  EXPECT_EQ(s.slab_depth, 1u);
  EXPECT_EQ(s.index_bits, 18u);
  EXPECT_EQ(s.input_nnz, 184u);
  EXPECT_EQ(s.nnz, 183u);
  EXPECT_EQ(s.tiles, 3u);
  EXPECT_EQ(s.dense_tiles, 2u);
  EXPECT_EQ(s.sparse_tiles, 1u);
  EXPECT_EQ(s.dense_nnz, 178u);
  EXPECT_EQ(s.sparse_nnz, 5u);
  EXPECT_EQ(s.dense_nnz + s.sparse_nnz, s.nnz);
  EXPECT_DOUBLE_EQ(s.dense_fraction, 178.0 / 183.0);
  EXPECT_GE(s.build_seconds, 0.0);
  // Tile indices: 2 tile bits per mode (40 -> 6 bits, 2 above the tile shift).
  EXPECT_EQ(std::vector<uint64_t>(h.d_tile.begin(), h.d_tile.end()), std::vector<uint64_t>({0, (2u << 4) | 1u}));
  EXPECT_EQ(std::vector<uint32_t>(h.d_root_tile.begin(), h.d_root_tile.end()), std::vector<uint32_t>({0, 2}));
  EXPECT_EQ(h.d_val_ptr[1], 100u);
  EXPECT_EQ(h.d_val.get<double>()[0], 1.5);  // cell (0,0,0): 1 + 0.5
  EXPECT_EQ(h.d_bitmap[0] & 1u, 1u);
  // Sparse: rows 16..20, packed (i << 12) | (j << 6) | k.
  ASSERT_EQ(h.s_ind.size(), 5u);
  EXPECT_EQ(h.s_ind[0], (uint64_t(16) << 12) | (16u << 6) | 16u);
  EXPECT_EQ(std::vector<uint32_t>(h.s_row.begin(), h.s_row.end()), std::vector<uint32_t>({16, 17, 18, 19, 20}));
  // bytes: 2 tiles (8 index + 64 * 8 bitmap) + 3 offsets + root groups (2 * 4 + 3 * 8) + 5 sparse (8 + 8)
  // + 5 rows (4) + 6 row offsets (8) + 178 dense values (8).
  EXPECT_EQ(s.bytes, 2u * (8 + 512) + 3 * 8u + 2 * 4u + 3 * 8u + 5 * 16u + 5 * 4u + 6 * 8u + 178 * 8u);
  EXPECT_EQ(s.coo_bytes, 184u * (3 * 4 + 8));
  // Root 2 reads the same tensor through other tiles: the numbers still add up.
  const spt_hls_s h2 = hls::from_coo(x, params(2), 1);
  ASSERT_NO_THROW(hls::validate(h2));
  const spt_hls_summary s2 = info_of(h2);
  EXPECT_EQ(s2.dense_nnz + s2.sparse_nnz, s2.nnz);
  EXPECT_EQ(s2.tiles, s2.dense_tiles + s2.sparse_tiles);
  check_products<double>(x, h, 2, "hand-built order 3");
}

// Order 4, root 0, slab depth 2: a tile is 16^3 x 2. One tile with 40
// cells in each of its two sub-tiles (80 in all) is sparse under the default
// threshold 78 * 2 = 156, and dense with dense_threshold 80, each sub-tile
// with its own bitmap.
TEST(HlsStatistics, HandBuiltOrder4Slabs) {
  std::vector<std::vector<spt_index>> c;
  for (spt_index s = 0; s < 2; ++s)
    for (spt_index k = 0; k < 40; ++k) c.push_back({k % 16, k / 16, s == 0 ? 3u : 5u, 2 + s});
  const spt_coo_s x = make_coo(SPT_FLOAT32, {16, 16, 16, 4}, c, std::vector<double>(c.size(), 1.0));
  {
    const spt_hls_s h = hls::from_coo(x, params(0, 0, 2), 1);
    ASSERT_NO_THROW(hls::validate(h));
    const spt_hls_summary s = info_of(h);
    EXPECT_EQ(s.dense_threshold, 156u);
    EXPECT_EQ(s.slab_depth, 2u);
    EXPECT_EQ(s.tiles, 1u);
    EXPECT_EQ(s.dense_tiles, 0u);
    EXPECT_EQ(s.sparse_nnz, 80u);
  }
  {
    const spt_hls_s h = hls::from_coo(x, params(0, 80, 2), 1);
    ASSERT_NO_THROW(hls::validate(h));
    const spt_hls_summary s = info_of(h);
    EXPECT_EQ(s.dense_tiles, 1u);
    EXPECT_EQ(s.dense_nnz, 80u);
    EXPECT_EQ(s.dense_fraction, 1.0);
    ASSERT_EQ(h.d_bitmap.size(), 128u);  // two sub-tiles of 64 words
    // Sub-tile 0 is slab coordinate 2, sub-tile 1 slab coordinate 3: cell k has i = k % 16, j = k / 16.
    uint64_t pop0 = 0, pop1 = 0;
    for (int w = 0; w < 64; ++w) {
      pop0 += uint64_t(__builtin_popcountll(h.d_bitmap[w]));
      pop1 += uint64_t(__builtin_popcountll(h.d_bitmap[64 + w]));
    }
    EXPECT_EQ(pop0, 40u);
    EXPECT_EQ(pop1, 40u);
    EXPECT_EQ(h.d_tile[0], 1u);  // tile coordinate 1 along the slab mode (4 -> 2 bits, 1 above the shift)
    check_products<float>(x, h, 4, "hand-built order 4");
  }
  {
    // Slab depth 4 (the default): one tile holds both slabs.
    const spt_hls_s h = hls::from_coo(x, params(0), 1);
    ASSERT_NO_THROW(hls::validate(h));
    EXPECT_EQ(h.slab_depth, 4u);
    EXPECT_EQ(h.dense_threshold, 312u);
    EXPECT_EQ(h.tiles, 1u);
  }
}

// ---------------------------------------------------------------------------
// C API: round trip, products and bad input

struct Matrix {
  spt_matrix* m = nullptr;
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  Matrix(Matrix&& o) noexcept : m(o.m) { o.m = nullptr; }
  Matrix(spt_dtype d, spt_nnz r, spt_nnz c, spt_layout layout = SPT_ROW_MAJOR) {
    EXPECT_EQ(spt_matrix_create(nullptr, d, r, c, layout, &m), SPT_OK);
  }
  ~Matrix() { spt_matrix_free(m); }
};

TEST(HlsApi, OptionsInit) {
  spt_hls_options o;
  std::memset(&o, 0xff, sizeof o);
  ASSERT_EQ(spt_hls_options_init(&o), SPT_OK);
  EXPECT_EQ(o.struct_size, sizeof o);
  EXPECT_EQ(o.root_mode, 0u);
  EXPECT_EQ(o.dense_threshold, 0u);
  EXPECT_EQ(o.slab_depth, 0u);
  EXPECT_EQ(spt_hls_options_init_size(nullptr, sizeof o), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_hls_options_init_size(&o, 3), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ((spt_hls_options_init)(&o), SPT_OK);
}

TEST(HlsApi, RoundTripMttkrpTtmc) {
  const spt_coo_s x = block_tensor(SPT_FLOAT64, {40, 30, 20, 12}, 2, 0.1, 4, 200, 6);
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  const uint32_t N = 4;
  const std::vector<spt_nnz> ranks = {3, 2, 4, 2};
  for (uint32_t root = 0; root < N; ++root) {
    spt_hls_options o;
    spt_hls_options_init(&o);
    o.root_mode = root;
    o.dense_threshold = 20;
    o.precision = SPT_HLS_PRECISION_EXACT;  // exact on a GPU context too (the tensor-core precisions round)
    spt_hls* h = nullptr;
    ASSERT_EQ(spt_hls_from_coo(ctx, &x, &o, &h), SPT_OK) << spt_last_error(ctx);
    spt_index dims[4] = {0, 0, 0, 0};
    ASSERT_EQ(spt_hls_dims(h, dims), SPT_OK);
    EXPECT_EQ(dims[3], 12u);
    spt_coo* y = nullptr;
    ASSERT_EQ(spt_hls_to_coo(ctx, h, &y), SPT_OK) << spt_last_error(ctx);
    EXPECT_EQ(y->nnz, x.nnz);
    spt_coo_free(y);
    expect_decodes_to(x, *h, "C API");
    spt_hls_summary s;
    s.struct_size = sizeof s;
    ASSERT_EQ(spt_hls_info(nullptr, h, &s), SPT_OK);
    EXPECT_GT(s.dense_tiles, 0u);
    EXPECT_GT(s.sparse_nnz, 0u);

    // MTTKRP (column-major output, as a Fortran caller) against the COO API.
    const spt_nnz R = 5;
    std::vector<DenseMatrix<double>> f = random_factors<double>(x.dims, R, 4);
    std::vector<Matrix> mats;
    mats.reserve(N);
    std::vector<const spt_matrix*> fp(N, nullptr);
    for (uint32_t m = 0; m < N; ++m) {
      mats.emplace_back(SPT_FLOAT64, x.dims[m], R, SPT_COL_MAJOR);
      for (spt_nnz i = 0; i < x.dims[m]; ++i)
        for (spt_nnz j = 0; j < R; ++j) mats[m].m->at<double>(i, j) = f[m](i, j);
      if (m != root) fp[m] = mats[m].m;
    }
    Matrix out(SPT_FLOAT64, x.dims[root], R, SPT_COL_MAJOR);
    ASSERT_EQ(spt_mttkrp_hls(ctx, h, fp.data(), spt::test::served_mode(h), out.m), SPT_OK) << spt_last_error(ctx);
    Matrix want(SPT_FLOAT64, x.dims[root], R);
    ASSERT_EQ(spt_mttkrp(ctx, &x, fp.data(), root, want.m), SPT_OK) << spt_last_error(ctx);
    for (spt_nnz i = 0; i < x.dims[root]; ++i)
      for (spt_nnz j = 0; j < R; ++j) EXPECT_NEAR(out.m->at<double>(i, j), want.m->at<double>(i, j), 1e-12);

    // TTMc against spt_ttmc_fcoo (the same column convention).
    std::vector<Matrix> tm;
    tm.reserve(N);
    std::vector<const spt_matrix*> tp(N, nullptr);
    spt_nnz cols = 1;
    for (uint32_t m = 0; m < N; ++m) {
      const auto u = random_matrix<double>(x.dims[m], ranks[m], 40 + m);
      tm.emplace_back(SPT_FLOAT64, x.dims[m], ranks[m]);
      for (spt_nnz i = 0; i < x.dims[m]; ++i)
        for (spt_nnz j = 0; j < ranks[m]; ++j) tm[m].m->at<double>(i, j) = u(i, j);
      if (m != root) {
        tp[m] = tm[m].m;
        cols *= ranks[m];
      }
    }
    Matrix yt(SPT_FLOAT64, x.dims[root], cols, SPT_COL_MAJOR);
    ASSERT_EQ(spt_ttmc_hls(ctx, h, tp.data(), yt.m), SPT_OK) << spt_last_error(ctx);
    spt_fcoo* f_coo = nullptr;
    ASSERT_EQ(spt_fcoo_from_coo(ctx, &x, spt::test::FcooOptions(SPT_FCOO_MTTKRP, root, 0), &f_coo), SPT_OK) << spt_last_error(ctx);
    Matrix yf(SPT_FLOAT64, x.dims[root], cols);
    ASSERT_EQ(spt_ttmc_fcoo(ctx, f_coo, tp.data(), yf.m), SPT_OK) << spt_last_error(ctx);
    spt_fcoo_free(f_coo);
    for (spt_nnz i = 0; i < x.dims[root]; ++i)
      for (spt_nnz j = 0; j < cols; ++j) EXPECT_NEAR(yt.m->at<double>(i, j), yf.m->at<double>(i, j), 1e-12);

    // Bad product arguments.
    EXPECT_EQ(spt_mttkrp_hls(ctx, nullptr, fp.data(), 0, out.m), SPT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(spt_mttkrp_hls(ctx, h, nullptr, spt::test::served_mode(h), out.m), SPT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(spt_mttkrp_hls(ctx, h, fp.data(), spt::test::served_mode(h), nullptr), SPT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(spt_ttmc_hls(ctx, nullptr, tp.data(), yt.m), SPT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(spt_ttmc_hls(ctx, h, nullptr, yt.m), SPT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(spt_ttmc_hls(ctx, h, tp.data(), nullptr), SPT_ERR_INVALID_ARGUMENT);
    {
      Matrix wrong_rows(SPT_FLOAT64, x.dims[root] + 1, R);
      EXPECT_EQ(spt_mttkrp_hls(ctx, h, fp.data(), spt::test::served_mode(h), wrong_rows.m), SPT_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(spt_last_error(ctx)).find("out must be dims"), std::string::npos) << spt_last_error(ctx);
      Matrix wrong_cols(SPT_FLOAT64, x.dims[root], cols + 1);
      EXPECT_EQ(spt_ttmc_hls(ctx, h, tp.data(), wrong_cols.m), SPT_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(spt_last_error(ctx)).find("prod_{m != root_mode}"), std::string::npos)
          << spt_last_error(ctx);
      Matrix f32(SPT_FLOAT32, x.dims[root], R);
      EXPECT_EQ(spt_mttkrp_hls(ctx, h, fp.data(), spt::test::served_mode(h), f32.m), SPT_ERR_INVALID_ARGUMENT);
      const uint32_t other = (root + 1) % N;
      std::vector<const spt_matrix*> bad = fp;
      Matrix bad_rank(SPT_FLOAT64, x.dims[other], R + 1);
      bad[other] = bad_rank.m;
      EXPECT_EQ(spt_mttkrp_hls(ctx, h, bad.data(), spt::test::served_mode(h), out.m), SPT_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(spt_last_error(ctx)).find("factors["), std::string::npos) << spt_last_error(ctx);
      bad[other] = nullptr;
      EXPECT_EQ(spt_mttkrp_hls(ctx, h, bad.data(), spt::test::served_mode(h), out.m), SPT_ERR_INVALID_ARGUMENT);
      bad[other] = out.m;
      EXPECT_EQ(spt_mttkrp_hls(ctx, h, bad.data(), spt::test::served_mode(h), out.m), SPT_ERR_INVALID_ARGUMENT);
      std::vector<const spt_matrix*> tbad = tp;
      tbad[other] = nullptr;
      EXPECT_EQ(spt_ttmc_hls(ctx, h, tbad.data(), yt.m), SPT_ERR_INVALID_ARGUMENT);
    }
    spt_hls_free(h);
  }
  spt_context_free(ctx);
}

TEST(HlsApi, BadInput) {
  const spt_coo_s x = block_tensor(SPT_FLOAT64, {20, 20, 20}, 1, 0.05, 1, 30, 9);
  spt_hls* h = reinterpret_cast<spt_hls*>(uintptr_t(1));  // must stay untouched on error
  spt_hls* const sentinel = h;
  auto last = [] { return std::string(spt_thread_last_error()); };
  EXPECT_EQ(spt_hls_from_coo(nullptr, nullptr, nullptr, &h), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_hls_from_coo(nullptr, &x, nullptr, nullptr), SPT_ERR_INVALID_ARGUMENT);
  spt_hls_options o;
  spt_hls_options_init(&o);
  o.root_mode = 3;
  EXPECT_EQ(spt_hls_from_coo(nullptr, &x, &o, &h), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("out of range"), std::string::npos) << last();
  spt_hls_options_init(&o);
  o.slab_depth = 3;
  EXPECT_EQ(spt_hls_from_coo(nullptr, &x, &o, &h), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("slab_depth"), std::string::npos) << last();
  o.slab_depth = 32;
  EXPECT_EQ(spt_hls_from_coo(nullptr, &x, &o, &h), SPT_ERR_INVALID_ARGUMENT);
  spt_hls_options_init(&o);
  o.struct_size = 0;
  EXPECT_EQ(spt_hls_from_coo(nullptr, &x, &o, &h), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("struct_size"), std::string::npos) << last();
  EXPECT_EQ(h, sentinel);
  // Orders 2 and 5: unsupported, naming the limit.
  const spt_coo_s m2 = make_coo(SPT_FLOAT64, {3, 3}, {{0, 1}, {2, 2}}, {1, 2});
  EXPECT_EQ(spt_hls_from_coo(nullptr, &m2, nullptr, &h), SPT_ERR_UNSUPPORTED);
  EXPECT_NE(last().find("order 3 and 4"), std::string::npos) << last();
  const spt_coo_s m5 = make_coo(SPT_FLOAT64, {3, 3, 3, 3, 3}, {{0, 1, 2, 0, 1}}, {1});
  EXPECT_EQ(spt_hls_from_coo(nullptr, &m5, nullptr, &h), SPT_ERR_UNSUPPORTED);
  EXPECT_NE(last().find("order 3 and 4"), std::string::npos) << last();
  // Dims whose coordinates need more than 64 bits together.
  const spt_index big = spt_index(1) << 31;
  const spt_coo_s wide = make_coo(SPT_FLOAT64, {big, big, big}, {{0, 1, 2}}, {1});
  EXPECT_EQ(spt_hls_from_coo(nullptr, &wide, nullptr, &h), SPT_ERR_UNSUPPORTED);
  EXPECT_NE(last().find("64"), std::string::npos) << last();
  EXPECT_EQ(h, sentinel);
  // Query functions.
  spt_hls_summary s;
  EXPECT_EQ(spt_hls_info(nullptr, nullptr, &s), SPT_ERR_INVALID_ARGUMENT);
  spt_hls* good = nullptr;
  ASSERT_EQ(spt_hls_from_coo(nullptr, &x, nullptr, &good), SPT_OK) << last();
  EXPECT_EQ(spt_hls_info(nullptr, good, nullptr), SPT_ERR_INVALID_ARGUMENT);
  s.struct_size = 0;
  EXPECT_EQ(spt_hls_info(nullptr, good, &s), SPT_ERR_INVALID_ARGUMENT);
  // A struct shorter than this release's is refused; a longer one (a newer
  // caller) gets this release's fields, its own tail untouched.
  s.struct_size = offsetof(spt_hls_summary, order);
  EXPECT_EQ(spt_hls_info(nullptr, good, &s), SPT_ERR_INVALID_ARGUMENT);
  struct {
    spt_hls_summary s;
    char tail[8];
  } longer;
  std::memset(&longer, 0x5a, sizeof longer);
  longer.s.struct_size = sizeof longer;
  ASSERT_EQ(spt_hls_info(nullptr, good, &longer.s), SPT_OK);
  EXPECT_EQ(longer.s.dtype, SPT_FLOAT64);
  EXPECT_EQ(longer.s.order, 3u);
  EXPECT_EQ(longer.s.struct_size, sizeof longer);
  EXPECT_EQ(longer.tail[7], 0x5a);
  EXPECT_EQ(spt_hls_dims(good, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_hls_dims(nullptr, nullptr), SPT_ERR_INVALID_ARGUMENT);
  spt_coo* y = nullptr;
  EXPECT_EQ(spt_hls_to_coo(nullptr, nullptr, &y), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_hls_to_coo(nullptr, good, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_hls_free(good), SPT_OK);
  EXPECT_EQ(spt_hls_free(nullptr), SPT_OK);
}

}  // namespace
}  // namespace spt::test
