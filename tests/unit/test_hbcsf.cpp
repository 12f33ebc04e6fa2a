// B-CSF / HB-CSF: the encoding (hbcsf::validate on every handle built: pointers,
// the group partition, segment and unit limits, bins, parent arrays), exact
// COO round trips, the group statistics on hand-built tensors whose slices are
// known to be COO / CSL / B-CSF, and the MTTKRP (CPU kernel with 1-3 threads,
// and the reference) against the COO reference kernel for orders 3..6,
// float32 and float64, ranks 1, 8 and 33, every root mode, on the paper's
// pathological shapes (one enormous slice, one enormous fiber, all-singleton
// fibers, very short modes, single-nonzero slices) and with thresholds that
// force fiber and slice splits; plus argument validation through the C API
// and the small data tensors in tests/data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/format_invariants.hpp"
#include "common/test_util.hpp"
#include "common/format_options.hpp"
#include "core/coo.hpp"
#include "core/hbcsf.hpp"
#include "core/matrix.hpp"
#include "core/sort.hpp"
#include "kernels/kernels.hpp"
#include "sptensor/sptensor.h"

namespace spt::test {
namespace {

namespace ref = spt::kernels::reference;
namespace cpu = SPT_TEST_CPU_KERNELS;
using kernels::Exec;

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

struct Shape {
  std::string name;
  std::vector<spt_index> dims;
  std::vector<std::vector<spt_index>> coords;
};

std::vector<spt_index> random_coord(std::mt19937_64& rng, const std::vector<spt_index>& dims) {
  std::vector<spt_index> c(dims.size());
  for (size_t m = 0; m < dims.size(); ++m) c[m] = spt_index(rng() % dims[m]);
  return c;
}

// The paper's awkward shapes, for an order-`order` tensor.
std::vector<Shape> pathological_shapes(uint32_t order, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Shape> shapes;
  {  // One enormous slice in every mode: most nonzeros share index 0 of mode 0 ... and also of the others.
    Shape s{"enormous_slice", std::vector<spt_index>(order, 40), {}};
    for (int k = 0; k < 1500; ++k) {
      auto c = random_coord(rng, s.dims);
      if (k % 5 != 0) c[k % 2 == 0 ? 0 : k % order] = 0;  // half of them in slice 0 of mode 0
      s.coords.push_back(c);
    }
    shapes.push_back(s);
  }
  {  // One enormous fiber along the long mode (the leaf level of every other root).
    Shape s{"enormous_fiber", std::vector<spt_index>(order, 6), {}};
    s.dims[order - 1] = 3000;
    for (spt_index i = 0; i < 2000; ++i) {
      std::vector<spt_index> c(order, 1);
      c[order - 1] = i;
      s.coords.push_back(c);
    }
    for (int k = 0; k < 300; ++k) s.coords.push_back(random_coord(rng, s.dims));
    shapes.push_back(s);
  }
  {  // All-singleton fibers: distinct coordinates in big dims (CSL for every root).
    Shape s{"singleton_fibers", std::vector<spt_index>(order, 5000), {}};
    s.dims[0] = 30;  // several nonzeros per slice when mode 0 is the root
    for (spt_index k = 0; k < 1200; ++k) {
      auto c = random_coord(rng, s.dims);
      c[1] = k;  // distinct: with mode 0 as the root, every fiber has one nonzero
      s.coords.push_back(c);
    }
    shapes.push_back(s);
  }
  {  // Very short modes (2 and 3) next to a long one, heavy duplicates of structure.
    Shape s{"short_modes", std::vector<spt_index>(order, 2), {}};
    s.dims[1] = 3;
    s.dims[order - 1] = 700;
    for (int k = 0; k < 2500; ++k) s.coords.push_back(random_coord(rng, s.dims));
    shapes.push_back(s);
  }
  {  // Single-nonzero slices: one nonzero per mode-0 index (COO group), and a few heavy ones.
    Shape s{"single_nonzero_slices", std::vector<spt_index>(order, 60), {}};
    s.dims[0] = 1500;
    for (spt_index i = 0; i < 1400; ++i) {
      auto c = random_coord(rng, s.dims);
      c[0] = i;
      s.coords.push_back(c);
    }
    for (int k = 0; k < 400; ++k) {
      auto c = random_coord(rng, s.dims);
      c[0] = spt_index(1400 + k % 7);
      s.coords.push_back(c);
    }
    shapes.push_back(s);
  }
  std::shuffle(shapes.begin(), shapes.end(), rng);  // order of shapes is irrelevant; nonzeros stay unsorted below
  for (Shape& s : shapes) std::shuffle(s.coords.begin(), s.coords.end(), rng);
  return shapes;
}

spt_coo_s shape_tensor(spt_dtype dtype, const Shape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(s.coords.size());
  for (double& x : v) x = u(rng);
  return make_coo(dtype, s.dims, s.coords, v);
}

// Parameter sets: the defaults, and ones that force fiber and slice splits.
std::vector<hbcsf::Params> param_sets() {
  std::vector<hbcsf::Params> ps;
  ps.push_back({});
  ps.push_back({1, 1, 1, 0});   // every leaf its own segment and its own unit
  ps.push_back({3, 7, 2, 0});   // short segments, small units, many bins
  ps.push_back({16, 40, 4, 0});
  hbcsf::Params plain;
  plain.flags = SPT_HBCSF_PLAIN_BCSF;
  ps.push_back(plain);
  ps.push_back({2, 5, 1, SPT_HBCSF_PLAIN_BCSF});
  return ps;
}

std::string describe(const hbcsf::Params& p) {
  return "threshold " + std::to_string(p.fiber_threshold) + " split " + std::to_string(p.slice_split_nnz) + " bin " +
         std::to_string(p.slice_bin_min_nnz) + (p.flags ? " plain" : " hb");
}

// ---------------------------------------------------------------------------
// Checks

// x stably sorted in `mode_order`: what hbcsf::to_coo must give back.
spt_coo_s sorted_in(const spt_coo_s& x, const std::vector<uint32_t>& mode_order) {
  const buffer<spt_nnz> perm = sorting::sort_permutation(Exec{1}, x, mode_order);
  return sorting::permuted_copy(Exec{1}, x, perm);
}

// to_coo gives exactly `want`, x stably sorted in the handle's level order
// (sorted_in(x, h.mode_order), passed in when the caller has it already).
void expect_round_trip(const spt_coo_s& x, const spt_hbcsf_s& h, const std::string& what,
                       const spt_coo_s* sorted = nullptr) {
  const spt_coo_s y = hbcsf::to_coo(h, 2);
  spt_coo_s own;
  if (!sorted) own = sorted_in(x, h.mode_order);
  const spt_coo_s& want = sorted ? *sorted : own;
  ASSERT_EQ(y.dims, x.dims) << what;
  ASSERT_EQ(y.nnz, x.nnz) << what;
  ASSERT_EQ(y.dtype(), x.dtype()) << what;
  ASSERT_EQ(want.nnz, x.nnz) << what;
  for (uint32_t m = 0; m < x.order(); ++m)
    for (spt_nnz k = 0; k < x.nnz; ++k) ASSERT_EQ(y.ind[m][k], want.ind[m][k]) << what << " mode " << m << " nz " << k;
  const size_t vs = dtype_size(x.dtype());
  ASSERT_EQ(std::memcmp(y.val, want.val, x.nnz * vs), 0) << what << ": values differ";
}

// The factors of one MTTKRP check and the COO reference result for the
// root mode: they depend on x, the root, the rank and the seed only, so
// check_tensor makes them once for all parameter sets of a root.
template <typename T>
struct MttkrpCase {
  std::vector<DenseMatrix<T>> factors;
  DenseMatrix<T> want;
};

template <typename T>
MttkrpCase<T> mttkrp_case(const spt_coo_s& x, uint32_t root, spt_nnz rank, uint64_t seed) {
  MttkrpCase<T> c;
  c.factors = random_factors<T>(x.dims, rank, seed);
  const auto refs = crefs(c.factors);
  c.want = DenseMatrix<T>(x.dims[root], rank);
  ref::mttkrp(Exec{1}, x, refs.data(), root, c.want.ref());
  return c;
}

template <typename T>
void check_mttkrp(const spt_coo_s& x, const spt_hbcsf_s& h, const MttkrpCase<T>& c, const std::string& what) {
  const uint32_t root = h.root();
  const spt_nnz rank = c.want.cols;
  const auto refs = crefs(c.factors);
  const DenseMatrix<T>& want = c.want;
  ASSERT_EQ(want.rows, spt_nnz(x.dims[root])) << what;
  DenseMatrix<T> first;
  for (int threads : {1, 2, 3}) {
    DenseMatrix<T> got(x.dims[root], rank);
    // Poison the output: the kernel must overwrite every row.
    std::fill(got.values.begin(), got.values.end(), T(7));
    cpu::mttkrp_hbcsf(Exec{threads}, h, refs.data(), got.ref());
    expect_matrix_close(want, got, what + " cpu threads " + std::to_string(threads));
    if (threads == 1) first = got;
    else
      ASSERT_TRUE(std::equal(first.values.begin(), first.values.end(), got.values.begin()))
          << what << ": result depends on the thread count";
  }
  DenseMatrix<T> got_ref(x.dims[root], rank);
  ref::mttkrp_hbcsf(Exec{1}, h, refs.data(), got_ref.ref());
  expect_matrix_close(want, got_ref, what + " reference");
}

template <typename T>
void check_mttkrp(const spt_coo_s& x, const spt_hbcsf_s& h, spt_nnz rank, uint64_t seed, const std::string& what) {
  check_mttkrp<T>(x, h, mttkrp_case<T>(x, h.root(), rank, seed), what);
}

// Every root x every parameter set: encoding, round trip, MTTKRP for each
// rank. The factors, the COO reference MTTKRP and the sorted copy of x are
// the same for every parameter set of a root and made once per root (they
// were most of the cost when made per handle; the checks are unchanged).
template <typename T>
void check_tensor(const spt_coo_s& x, const std::string& name, const std::vector<spt_nnz>& ranks) {
  std::vector<std::pair<std::vector<uint32_t>, spt_coo_s>> sorted;  // by mode order
  for (uint32_t root = 0; root < x.order(); ++root) {
    std::vector<MttkrpCase<T>> cases;
    for (spt_nnz rank : ranks) cases.push_back(mttkrp_case<T>(x, root, rank, 100 + rank + root));
    for (const hbcsf::Params& p : param_sets()) {
      const std::string what = name + " order " + std::to_string(x.order()) + " root " + std::to_string(root) + " " +
                               describe(p) + " " + dtype_name(x.dtype());
      const spt_hbcsf_s h = hbcsf::from_coo(x, root, p, 2);
      ASSERT_NO_THROW(hbcsf::validate(h)) << what;
      ASSERT_EQ(h.nnz, x.nnz) << what;
      auto it = std::find_if(sorted.begin(), sorted.end(), [&](const auto& e) { return e.first == h.mode_order; });
      if (it == sorted.end()) {
        sorted.emplace_back(h.mode_order, sorted_in(x, h.mode_order));
        it = sorted.end() - 1;
      }
      expect_round_trip(x, h, what, &it->second);
      for (size_t r = 0; r < ranks.size(); ++r)
        check_mttkrp<T>(x, h, cases[r], what + " rank " + std::to_string(ranks[r]));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// ---------------------------------------------------------------------------
// MTTKRP and round trips

template <typename T>
void run_pathological() {
  for (uint32_t order = 3; order <= 6; ++order)
    for (const Shape& s : pathological_shapes(order, 1000 + order)) {
      const spt_coo_s x = shape_tensor(dtype_of<T>(), s, order);
      check_tensor<T>(x, s.name, {1, 8, 33});
      if (::testing::Test::HasFatalFailure()) return;
    }
}

TEST(HbcsfMttkrp, PathologicalShapesFloat64) { run_pathological<double>(); }
TEST(HbcsfMttkrp, PathologicalShapesFloat32) { run_pathological<float>(); }

template <typename T>
void run_standard() {
  for (const RandomTensorSpec& spec : standard_specs()) {
    if (spec.dims.size() < 3) continue;
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    check_tensor<T>(x, "standard", {1, 8, 33});
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(HbcsfMttkrp, StandardShapesFloat64) { run_standard<double>(); }
TEST(HbcsfMttkrp, StandardShapesFloat32) { run_standard<float>(); }

// Tensors large enough that the CPU kernel really runs on 2 and 3 threads
// (it keeps at least 2048 nonzeros per thread): skewed with duplicates, and
// one dominated by two heavy slices, so split slices are spread over threads.
template <typename T>
void run_large() {
  RandomTensorSpec big;
  big.dims = {300, 40, 2000};
  big.nnz = 40000;
  big.seed = 77;
  big.duplicates = true;
  RandomTensorSpec heavy;
  heavy.dims = {2, 5000, 7, 3};
  heavy.nnz = 20000;
  heavy.seed = 78;
  for (const RandomTensorSpec& spec : {big, heavy}) {
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    check_tensor<T>(x, "large", {8, 33});
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(HbcsfMttkrp, LargeThreadedFloat64) { run_large<double>(); }
TEST(HbcsfMttkrp, LargeThreadedFloat32) { run_large<float>(); }

// An empty tensor: every group empty, output all zero.
TEST(HbcsfMttkrp, EmptyTensor) {
  const spt_coo_s x = make_coo(SPT_FLOAT64, {3, 4, 5}, {}, {});
  const spt_hbcsf_s h = hbcsf::from_coo(x, 1, {}, 1);
  ASSERT_NO_THROW(hbcsf::validate(h));
  EXPECT_EQ(h.units(), 0u);
  check_mttkrp<double>(x, h, 4, 3, "empty");
}

// Data tensors from tests/data (orders 3, 4 and 5).
TEST(HbcsfMttkrp, DataTensors) {
  int found = 0;
  for (const char* name :
       {"nations.tns.xz", "umls.tns.xz", "kinship.tns.xz", "ciao-user-item-category-month.tns.xz", "jf17k-4ary.tns.xz"}) {
    const std::string path = data_file(name);
    if (path.empty()) continue;
    ++found;
    spt_coo* x = nullptr;
    ASSERT_EQ(spt_read(nullptr, path.c_str(), nullptr, &x), SPT_OK) << spt_thread_last_error();
    for (uint32_t root = 0; root < x->order(); ++root) {
      const std::string what = std::string(name) + " root " + std::to_string(root);
      const spt_hbcsf_s h = hbcsf::from_coo(*x, root, {}, 2);
      ASSERT_NO_THROW(hbcsf::validate(h)) << what;
      expect_round_trip(*x, h, what);
      check_mttkrp<double>(*x, h, 8, 5 + root, what);
    }
    spt_coo_free(x);
  }
  if (found == 0) GTEST_SKIP() << "no data tensors found";
}

// ---------------------------------------------------------------------------
// Group statistics on hand-built tensors

spt_hbcsf_summary info_of(const spt_hbcsf_s& h) {
  spt_hbcsf_summary s;
  s.struct_size = sizeof s;
  EXPECT_EQ(spt_hbcsf_info(nullptr, &h, &s), SPT_OK) << spt_thread_last_error();
  return s;
}

// Order 3, root 0 (levels: modes 0, 1, 2): slice 0 has one nonzero (COO);
// slice 1 has three fibers of one nonzero (CSL); slice 2 has a fiber of two
// nonzeros and one of one (B-CSF); slice 3 is empty.
spt_coo_s three_groups_order3() {
  return make_coo(SPT_FLOAT64, {4, 4, 4},
                  {{2, 3, 2}, {1, 0, 0}, {0, 1, 2}, {1, 1, 3}, {2, 0, 1}, {1, 2, 1}, {2, 0, 0}},
                  {1, 2, 3, 4, 5, 6, 7});
}

// The pathological shapes do exercise what they are named after (with the
// default thresholds, mode 0 as the root).
TEST(HbcsfGroups, PathologicalShapesHitEveryPath) {
  for (uint32_t order = 3; order <= 6; ++order)
    for (const Shape& s : pathological_shapes(order, 1000 + order)) {
      const spt_coo_s x = shape_tensor(SPT_FLOAT64, s, order);
      const spt_hbcsf_s h = hbcsf::from_coo(x, 0, {}, 1);
      const std::string what = s.name + " order " + std::to_string(order);
      if (s.name == "enormous_slice") EXPECT_GE(h.split_slices, 1u) << what;
      if (s.name == "enormous_fiber") {
        EXPECT_GE(h.split_fibers, 1u) << what;
        EXPECT_GE(h.split_slices, 1u) << what;
      }
      if (s.name == "singleton_fibers") {
        EXPECT_GE(h.csl_slices(), 25u) << what;
        EXPECT_EQ(h.bcsf_nnz(), 0u) << what;
      }
      if (s.name == "single_nonzero_slices") {
        EXPECT_GE(h.coo_nnz(), 1300u) << what;
        EXPECT_GE(h.bcsf_slices() + h.csl_slices(), 7u) << what;
      }
    }
}

// validate() notices a corrupted handle (so the tests above would too).
TEST(HbcsfGroups, ValidateCatchesCorruption) {
  const spt_coo_s x = three_groups_order3();
  {
    spt_hbcsf_s h = hbcsf::from_coo(x, 0, {1, 1, 1, 0}, 1);
    h.unit_split[1] = 0;
    EXPECT_THROW(hbcsf::validate(h), Error);
  }
  {
    spt_hbcsf_s h = hbcsf::from_coo(x, 0, {}, 1);
    h.csl_slice_ind[0] = 0;  // the COO group's row
    EXPECT_THROW(hbcsf::validate(h), Error);
  }
  {
    spt_hbcsf_s h = hbcsf::from_coo(x, 0, {}, 1);
    h.params.fiber_threshold = 1;  // the 2-leaf segment is now too long
    EXPECT_THROW(hbcsf::validate(h), Error);
  }
}

TEST(HbcsfGroups, HandBuiltOrder3) {
  const spt_coo_s x = three_groups_order3();
  const spt_hbcsf_s h = hbcsf::from_coo(x, 0, {}, 1);
  ASSERT_NO_THROW(hbcsf::validate(h));
  const spt_hbcsf_summary s = info_of(h);
  EXPECT_EQ(s.order, 3u);
  EXPECT_EQ(s.root_mode, 0u);
  EXPECT_EQ(s.nnz, 7u);
  EXPECT_EQ(s.coo_nnz, 1u);
  EXPECT_EQ(s.coo_slices, 1u);
  EXPECT_EQ(s.csl_nnz, 3u);
  EXPECT_EQ(s.csl_slices, 1u);
  EXPECT_EQ(s.bcsf_nnz, 3u);
  EXPECT_EQ(s.bcsf_slices, 1u);
  EXPECT_EQ(s.bcsf_fibers, 2u);
  EXPECT_EQ(s.bcsf_segments, 2u);
  EXPECT_EQ(s.split_fibers, 0u);
  EXPECT_EQ(s.units, 1u);
  EXPECT_EQ(s.split_slices, 0u);
  EXPECT_EQ(s.fiber_threshold, 128u);
  EXPECT_EQ(s.slice_split_nnz, 512u);
  EXPECT_EQ(s.slice_bin_min_nnz, 32u);
  EXPECT_EQ(s.bins, 5u);  // 32, 64, 128, 256, rest
  // The exact arrays.
  EXPECT_EQ(std::vector<uint32_t>(h.coo_ind[0].begin(), h.coo_ind[0].end()), std::vector<uint32_t>({0}));
  EXPECT_EQ(std::vector<uint32_t>(h.csl_slice_ind.begin(), h.csl_slice_ind.end()), std::vector<uint32_t>({1}));
  EXPECT_EQ(std::vector<uint32_t>(h.csl_ind[0].begin(), h.csl_ind[0].end()), std::vector<uint32_t>({0, 1, 2}));
  EXPECT_EQ(std::vector<uint32_t>(h.csl_ind[1].begin(), h.csl_ind[1].end()), std::vector<uint32_t>({0, 3, 1}));
  EXPECT_EQ(std::vector<uint32_t>(h.bcsf_slice_ind.begin(), h.bcsf_slice_ind.end()), std::vector<uint32_t>({2}));
  EXPECT_EQ(std::vector<uint32_t>(h.node_ind[0].begin(), h.node_ind[0].end()), std::vector<uint32_t>({0, 3}));
  EXPECT_EQ(std::vector<uint32_t>(h.segment_ptr.begin(), h.segment_ptr.end()), std::vector<uint32_t>({0, 2, 3}));
  EXPECT_EQ(std::vector<uint32_t>(h.leaf_ind.begin(), h.leaf_ind.end()), std::vector<uint32_t>({0, 1, 2}));
  EXPECT_EQ(h.bcsf_val.get<double>()[0], 7.0);
  // index bytes: COO 3 + CSL (1 + 2 + 6) + B-CSF (1 + 2 + 2 + 3 + 3 leaf) + units (1 + 2) + split flag + bins (6 + 1)
  EXPECT_EQ(s.bytes, (3 + 1 + 2 + 6 + 1 + 2 + 2 + 3 + 3 + 1 + 2 + 6 + 1) * 4u + 1u + 7 * 8u);
  EXPECT_EQ(s.coo_bytes, 7u * (3 * 4 + 8));
}

// Thresholds of 1 split the two-nonzero fiber and the B-CSF slice; the
// CSL-shaped slice (3 nonzeros > slice_split_nnz) moves to B-CSF to be split.
TEST(HbcsfGroups, HandBuiltSplits) {
  const spt_coo_s x = three_groups_order3();
  const spt_hbcsf_s h = hbcsf::from_coo(x, 0, {1, 1, 1, 0}, 1);
  ASSERT_NO_THROW(hbcsf::validate(h));
  const spt_hbcsf_summary s = info_of(h);
  EXPECT_EQ(s.coo_slices, 1u);
  EXPECT_EQ(s.csl_slices, 0u);
  EXPECT_EQ(s.bcsf_slices, 2u);
  EXPECT_EQ(s.bcsf_fibers, 5u);
  EXPECT_EQ(s.bcsf_segments, 6u);
  EXPECT_EQ(s.split_fibers, 1u);
  EXPECT_EQ(s.units, 6u);
  EXPECT_EQ(s.split_slices, 2u);
  EXPECT_EQ(s.bins, 1u);
  EXPECT_EQ(std::vector<uint32_t>(h.node_ind[0].begin(), h.node_ind[0].end()),
            std::vector<uint32_t>({0, 1, 2, 0, 0, 3}));
  EXPECT_EQ(std::vector<uint8_t>(h.unit_split.begin(), h.unit_split.end()), std::vector<uint8_t>(6, 1));
  // With units of 3 the CSL slice stays CSL and the B-CSF slice is one unit.
  const spt_hbcsf_s h3 = hbcsf::from_coo(x, 0, {1, 3, 1, 0}, 1);
  ASSERT_NO_THROW(hbcsf::validate(h3));
  EXPECT_EQ(h3.csl_slices(), 1u);
  EXPECT_EQ(h3.units(), 1u);
  EXPECT_EQ(h3.segments(), 3u);
  EXPECT_EQ(h3.split_slices, 0u);
  check_mttkrp<double>(x, h, 3, 9, "hand-built splits");
}

// Plain B-CSF: every slice in the B-CSF group.
TEST(HbcsfGroups, HandBuiltPlainBcsf) {
  const spt_coo_s x = three_groups_order3();
  hbcsf::Params p;
  p.flags = SPT_HBCSF_PLAIN_BCSF;
  const spt_hbcsf_s h = hbcsf::from_coo(x, 0, p, 1);
  ASSERT_NO_THROW(hbcsf::validate(h));
  const spt_hbcsf_summary s = info_of(h);
  EXPECT_EQ(s.flags, SPT_HBCSF_PLAIN_BCSF);
  EXPECT_EQ(s.coo_nnz, 0u);
  EXPECT_EQ(s.csl_nnz, 0u);
  EXPECT_EQ(s.bcsf_nnz, 7u);
  EXPECT_EQ(s.bcsf_slices, 3u);
  EXPECT_EQ(s.bcsf_fibers, 6u);
  EXPECT_EQ(s.units, 3u);
}

// Order 4, root 2 (levels: mode 2, then 0, 1, 3 by length 3, 3, 5): slice
// 0 CSL, slice 1 B-CSF (fiber (1, *, 2, 2) holds two), slice 2 COO.
TEST(HbcsfGroups, HandBuiltOrder4) {
  const spt_coo_s x = make_coo(SPT_FLOAT32, {3, 3, 3, 5},
                               {{0, 0, 0, 0}, {1, 0, 0, 4}, {2, 2, 1, 0}, {2, 2, 1, 3}, {1, 1, 2, 1}},
                               {1, 2, 3, 4, 5});
  const spt_hbcsf_s h = hbcsf::from_coo(x, 2, {}, 1);
  ASSERT_NO_THROW(hbcsf::validate(h));
  EXPECT_EQ(h.mode_order, std::vector<uint32_t>({2, 0, 1, 3}));
  const spt_hbcsf_summary s = info_of(h);
  EXPECT_EQ(s.coo_slices, 1u);
  EXPECT_EQ(s.csl_slices, 1u);
  EXPECT_EQ(s.csl_nnz, 2u);
  EXPECT_EQ(s.bcsf_slices, 1u);
  EXPECT_EQ(s.bcsf_nnz, 2u);
  EXPECT_EQ(s.bcsf_fibers, 1u);
  EXPECT_EQ(std::vector<uint32_t>(h.coo_ind[0].begin(), h.coo_ind[0].end()), std::vector<uint32_t>({2}));
  EXPECT_EQ(std::vector<uint32_t>(h.csl_slice_ind.begin(), h.csl_slice_ind.end()), std::vector<uint32_t>({0}));
  EXPECT_EQ(std::vector<uint32_t>(h.bcsf_slice_ind.begin(), h.bcsf_slice_ind.end()), std::vector<uint32_t>({1}));
  EXPECT_EQ(std::vector<uint32_t>(h.node_parent[0].begin(), h.node_parent[0].end()), std::vector<uint32_t>({0}));
  check_mttkrp<float>(x, h, 8, 11, "hand-built order 4");
}

// Fiber splitting at the threshold: a 300-nonzero fiber with threshold 128
// gives 3 segments (128, 128, 44); the slice of 300 with units of 200 gives 2.
TEST(HbcsfGroups, SplitCounts) {
  std::vector<std::vector<spt_index>> c;
  for (spt_index i = 0; i < 300; ++i) c.push_back({0, 0, i});
  const spt_coo_s x = make_coo(SPT_FLOAT64, {1, 1, 300}, c, std::vector<double>(300, 1.0));
  const spt_hbcsf_s h = hbcsf::from_coo(x, 0, {128, 200, 32, 0}, 1);
  ASSERT_NO_THROW(hbcsf::validate(h));
  EXPECT_EQ(std::vector<uint32_t>(h.segment_ptr.begin(), h.segment_ptr.end()), std::vector<uint32_t>({0, 128, 256, 300}));
  EXPECT_EQ(std::vector<uint32_t>(h.unit_segment_ptr.begin(), h.unit_segment_ptr.end()), std::vector<uint32_t>({0, 1, 3}));
  const spt_hbcsf_summary s = info_of(h);
  EXPECT_EQ(s.split_fibers, 1u);
  EXPECT_EQ(s.split_slices, 1u);
  EXPECT_EQ(s.bins, 4u);  // 32, 64, 128 (< 200), then the rest
  // Unit 0 has 128 nonzeros (bin 2: <= 128), unit 1 has 172 (the last bin).
  EXPECT_EQ(std::vector<uint32_t>(h.bin_ptr.begin(), h.bin_ptr.end()), std::vector<uint32_t>({0, 0, 0, 1, 2}));
  check_mttkrp<double>(x, h, 33, 2, "split counts");
}

// ---------------------------------------------------------------------------
// C API: round trip, MTTKRP and bad input

struct Matrix {
  spt_matrix* m = nullptr;
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  Matrix(Matrix&& o) noexcept : m(o.m) { o.m = nullptr; }
  Matrix(spt_dtype d, spt_nnz r, spt_nnz c) { EXPECT_EQ(spt_matrix_create(nullptr, d, r, c, SPT_ROW_MAJOR, &m), SPT_OK); }
  ~Matrix() { spt_matrix_free(m); }
};

TEST(HbcsfApi, OptionsInit) {
  spt_hbcsf_options o;
  std::memset(&o, 0xff, sizeof o);
  ASSERT_EQ(spt_hbcsf_options_init(&o), SPT_OK);
  EXPECT_EQ(o.struct_size, sizeof o);
  EXPECT_EQ(o.fiber_threshold, 128u);
  EXPECT_EQ(o.slice_split_nnz, 512u);
  EXPECT_EQ(o.slice_bin_min_nnz, 32u);
  EXPECT_EQ(o.flags, 0u);
  EXPECT_EQ(spt_hbcsf_options_init_size(nullptr, sizeof o), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_hbcsf_options_init_size(&o, 3), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ((spt_hbcsf_options_init)(&o), SPT_OK);
}

TEST(HbcsfApi, RoundTripAndMttkrp) {
  spt_coo_s x = three_groups_order3();
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  for (uint32_t root = 0; root < 3; ++root) {
    spt_hbcsf* h = nullptr;
    ASSERT_EQ(spt_hbcsf_from_coo(ctx, &x, spt::test::HbcsfOptions(root), &h), SPT_OK) << spt_last_error(ctx);
    spt_index dims[3] = {0, 0, 0};
    ASSERT_EQ(spt_hbcsf_dims(h, dims), SPT_OK);
    EXPECT_EQ(dims[2], 4u);
    spt_coo* y = nullptr;
    ASSERT_EQ(spt_hbcsf_to_coo(ctx, h, &y), SPT_OK) << spt_last_error(ctx);
    expect_round_trip(x, *h, "C API");
    EXPECT_EQ(y->nnz, 7u);
    spt_coo_free(y);
    // MTTKRP through the API (column-major output, as a Fortran caller), against the reference.
    const spt_nnz R = 5;
    std::vector<DenseMatrix<double>> f = random_factors<double>(x.dims, R, 4);
    std::vector<Matrix> mats;
    mats.reserve(3);
    std::vector<const spt_matrix*> fp(3, nullptr);
    for (uint32_t m = 0; m < 3; ++m) {
      mats.emplace_back(SPT_FLOAT64, x.dims[m], R);
      for (spt_nnz i = 0; i < x.dims[m]; ++i)
        for (spt_nnz j = 0; j < R; ++j) mats[m].m->at<double>(i, j) = f[m](i, j);
      if (m != root) fp[m] = mats[m].m;
    }
    spt_matrix* out = nullptr;
    ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, x.dims[root], R, SPT_COL_MAJOR, &out), SPT_OK);
    ASSERT_EQ(spt_mttkrp_hbcsf(ctx, h, fp.data(), spt::test::served_mode(h), out), SPT_OK) << spt_last_error(ctx);
    const auto refs = crefs(f);
    DenseMatrix<double> want(x.dims[root], R);
    ref::mttkrp(Exec{1}, x, refs.data(), root, want.ref());
    for (spt_nnz i = 0; i < want.rows; ++i)
      for (spt_nnz j = 0; j < R; ++j) EXPECT_NEAR(out->at<double>(i, j), want(i, j), 1e-12);
    // Bad MTTKRP arguments.
    EXPECT_EQ(spt_mttkrp_hbcsf(ctx, nullptr, fp.data(), 0, out), SPT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(spt_mttkrp_hbcsf(ctx, h, nullptr, spt::test::served_mode(h), out), SPT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(spt_mttkrp_hbcsf(ctx, h, fp.data(), spt::test::served_mode(h), nullptr), SPT_ERR_INVALID_ARGUMENT);
    {
      Matrix wrong_rows(SPT_FLOAT64, x.dims[root] + 1, R);
      EXPECT_EQ(spt_mttkrp_hbcsf(ctx, h, fp.data(), spt::test::served_mode(h), wrong_rows.m), SPT_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(spt_last_error(ctx)).find("out must be dims"), std::string::npos) << spt_last_error(ctx);
      spt_matrix_s rank0;
      init_matrix(rank0, SPT_FLOAT64, x.dims[root], 0, SPT_ROW_MAJOR);
      EXPECT_EQ(spt_mttkrp_hbcsf(ctx, h, fp.data(), spt::test::served_mode(h), &rank0), SPT_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(spt_last_error(ctx)).find("at least one column"), std::string::npos);
      Matrix f32(SPT_FLOAT32, x.dims[root], R);
      EXPECT_EQ(spt_mttkrp_hbcsf(ctx, h, fp.data(), spt::test::served_mode(h), f32.m), SPT_ERR_INVALID_ARGUMENT);
      const uint32_t other = (root + 1) % 3;
      std::vector<const spt_matrix*> bad = fp;
      Matrix wrong_cols(SPT_FLOAT64, x.dims[other], R + 1);
      bad[other] = wrong_cols.m;
      EXPECT_EQ(spt_mttkrp_hbcsf(ctx, h, bad.data(), spt::test::served_mode(h), out), SPT_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(spt_last_error(ctx)).find("factors["), std::string::npos) << spt_last_error(ctx);
      bad[other] = nullptr;
      EXPECT_EQ(spt_mttkrp_hbcsf(ctx, h, bad.data(), spt::test::served_mode(h), out), SPT_ERR_INVALID_ARGUMENT);
      bad[other] = out;
      EXPECT_EQ(spt_mttkrp_hbcsf(ctx, h, bad.data(), spt::test::served_mode(h), out), SPT_ERR_INVALID_ARGUMENT);
      Matrix wrong_dtype(SPT_FLOAT32, x.dims[other], R);
      bad[other] = wrong_dtype.m;
      EXPECT_EQ(spt_mttkrp_hbcsf(ctx, h, bad.data(), spt::test::served_mode(h), out), SPT_ERR_INVALID_ARGUMENT);
    }
    spt_matrix_free(out);
    spt_hbcsf_free(h);
  }
  spt_context_free(ctx);
}

// spt_mttkrp_hbcsf in any mode: every mode from one tree (root and non-root), on
// the CPU backend (3 threads; atomic rows) and REFERENCE (one thread), both
// dtypes, against the COO reference; the root mode equals spt_mttkrp_hbcsf
// bitwise; bad arguments are refused.
template <typename T>
void every_mode_from_one_tree() {
  RandomTensorSpec spec;
  spec.dims = {30, 7, 200, 12};
  spec.nnz = 6000;
  spec.seed = 91;
  spec.duplicates = true;
  const spt_coo_s x = random_coo(dtype_of<T>(), spec);
  const spt_dtype dtype = dtype_of<T>();
  const spt_nnz R = 9;
  const std::vector<DenseMatrix<T>> f = random_factors<T>(x.dims, R, 17);
  const auto refs = crefs(f);
  std::vector<Matrix> mats;
  std::vector<const spt_matrix*> fp(4, nullptr);
  for (uint32_t m = 0; m < 4; ++m) {
    mats.emplace_back(dtype, x.dims[m], R);
    for (spt_nnz i = 0; i < x.dims[m]; ++i)
      for (spt_nnz j = 0; j < R; ++j) mats[m].m->at<T>(i, j) = f[m](i, j);
  }
  for (spt_backend backend : {SPT_BACKEND_CPU, SPT_BACKEND_REFERENCE}) {
    spt_context* ctx = nullptr;
    ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
    ASSERT_EQ(spt_context_set_backend(ctx, backend), SPT_OK);
    ASSERT_EQ(spt_context_set_threads(ctx, 3), SPT_OK);
    for (uint32_t root : {0u, 2u}) {
      spt_hbcsf* h = nullptr;
      ASSERT_EQ(spt_hbcsf_from_coo(ctx, &x, spt::test::HbcsfOptions(root), &h), SPT_OK) << spt_last_error(ctx);
      for (uint32_t mode = 0; mode < 4; ++mode) {
        const std::string what = cat("backend ", int(backend), " root ", root, " mode ", mode);
        for (uint32_t m = 0; m < 4; ++m) fp[m] = m == mode ? nullptr : mats[m].m;
        Matrix out(dtype, x.dims[mode], R);
        ASSERT_EQ(spt_mttkrp_hbcsf(ctx, h, fp.data(), mode, out.m), SPT_OK) << what << ": " << spt_last_error(ctx);
        DenseMatrix<T> want(x.dims[mode], R), got(x.dims[mode], R);
        ref::mttkrp(Exec{1}, x, refs.data(), mode, want.ref());
        for (spt_nnz i = 0; i < want.rows; ++i)
          for (spt_nnz j = 0; j < R; ++j) got(i, j) = out.m->at<T>(i, j);
        expect_matrix_close(want, got, what);
        if (mode == root) {
          Matrix rooted(dtype, x.dims[root], R);
          ASSERT_EQ(spt_mttkrp_hbcsf(ctx, h, fp.data(), spt::test::served_mode(h), rooted.m), SPT_OK) << spt_last_error(ctx);
          for (spt_nnz i = 0; i < x.dims[root]; ++i)
            for (spt_nnz j = 0; j < R; ++j) ASSERT_EQ(out.m->at<T>(i, j), rooted.m->at<T>(i, j)) << what;
        }
      }
      // Bad arguments: mode out of range; a non-root mode needs the root's factor.
      Matrix out(dtype, x.dims[1], R);
      for (uint32_t m = 0; m < 4; ++m) fp[m] = m == 1 ? nullptr : mats[m].m;
      EXPECT_EQ(spt_mttkrp_hbcsf(ctx, h, fp.data(), 4, out.m), SPT_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(spt_last_error(ctx)).find("out of range"), std::string::npos) << spt_last_error(ctx);
      EXPECT_EQ(spt_mttkrp_hbcsf(ctx, nullptr, fp.data(), 1, out.m), SPT_ERR_INVALID_ARGUMENT);
      EXPECT_EQ(spt_mttkrp_hbcsf(ctx, h, nullptr, 1, out.m), SPT_ERR_INVALID_ARGUMENT);
      EXPECT_EQ(spt_mttkrp_hbcsf(ctx, h, fp.data(), 1, nullptr), SPT_ERR_INVALID_ARGUMENT);
      EXPECT_EQ(spt_mttkrp_hbcsf(ctx, h, fp.data(), 0, out.m), SPT_ERR_INVALID_ARGUMENT);  // out is 7 x R
      EXPECT_NE(std::string(spt_last_error(ctx)).find("out must be dims"), std::string::npos) << spt_last_error(ctx);
      if (root != 1) {
        fp[root] = nullptr;
        EXPECT_EQ(spt_mttkrp_hbcsf(ctx, h, fp.data(), 1, out.m), SPT_ERR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(spt_last_error(ctx)).find("factors["), std::string::npos) << spt_last_error(ctx);
      }
      spt_hbcsf_free(h);
    }
    spt_context_free(ctx);
  }
}

TEST(HbcsfApi, EveryModeFromOneTreeFloat64) { every_mode_from_one_tree<double>(); }
TEST(HbcsfApi, EveryModeFromOneTreeFloat32) { every_mode_from_one_tree<float>(); }

TEST(HbcsfApi, BadInput) {
  spt_coo_s x = three_groups_order3();
  spt_hbcsf* h = reinterpret_cast<spt_hbcsf*>(uintptr_t(1));  // must stay untouched on error
  spt_hbcsf* const sentinel = h;
  EXPECT_EQ(spt_hbcsf_from_coo(nullptr, nullptr, spt::test::HbcsfOptions(0), &h), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_hbcsf_from_coo(nullptr, &x, spt::test::HbcsfOptions(0), nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_hbcsf_from_coo(nullptr, &x, spt::test::HbcsfOptions(3), &h), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_thread_last_error()).find("out of range"), std::string::npos) << spt_thread_last_error();
  spt_hbcsf_options o;
  spt_hbcsf_options_init(&o);
  o.slice_bin_min_nnz = 3;
  EXPECT_EQ(spt_hbcsf_from_coo(nullptr, &x, &o, &h), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_thread_last_error()).find("power of two"), std::string::npos);
  spt_hbcsf_options_init(&o);
  o.flags = 6;
  EXPECT_EQ(spt_hbcsf_from_coo(nullptr, &x, &o, &h), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_thread_last_error()).find("flags"), std::string::npos);
  spt_hbcsf_options_init(&o);
  o.struct_size = 0;
  EXPECT_EQ(spt_hbcsf_from_coo(nullptr, &x, &o, &h), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(h, sentinel);
  // Order 2: unsupported, with a message that says what to use instead.
  spt_coo_s m = make_coo(SPT_FLOAT64, {3, 3}, {{0, 1}, {2, 2}}, {1, 2});
  EXPECT_EQ(spt_hbcsf_from_coo(nullptr, &m, spt::test::HbcsfOptions(0), &h), SPT_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(spt_thread_last_error()).find("order >= 3"), std::string::npos) << spt_thread_last_error();
  EXPECT_EQ(h, sentinel);
  // Query functions.
  spt_hbcsf_summary s;
  EXPECT_EQ(spt_hbcsf_info(nullptr, nullptr, &s), SPT_ERR_INVALID_ARGUMENT);
  spt_hbcsf* good = nullptr;
  ASSERT_EQ(spt_hbcsf_from_coo(nullptr, &x, spt::test::HbcsfOptions(0), &good), SPT_OK);
  EXPECT_EQ(spt_hbcsf_info(nullptr, good, nullptr), SPT_ERR_INVALID_ARGUMENT);
  s.struct_size = 0;
  EXPECT_EQ(spt_hbcsf_info(nullptr, good, &s), SPT_ERR_INVALID_ARGUMENT);
  // A struct shorter than this release's is refused; a longer one (a newer
  // caller) gets this release's fields, its own tail untouched.
  s.struct_size = offsetof(spt_hbcsf_summary, order);
  EXPECT_EQ(spt_hbcsf_info(nullptr, good, &s), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_thread_last_error()).find("struct_size"), std::string::npos) << spt_thread_last_error();
  struct {
    spt_hbcsf_summary s;
    char tail[8];
  } longer;
  std::memset(&longer, 0x5a, sizeof longer);
  longer.s.struct_size = sizeof longer;
  ASSERT_EQ(spt_hbcsf_info(nullptr, good, &longer.s), SPT_OK);
  EXPECT_EQ(longer.s.dtype, SPT_FLOAT64);
  EXPECT_EQ(longer.s.order, 3u);
  EXPECT_EQ(longer.s.struct_size, sizeof longer);
  EXPECT_EQ(longer.tail[7], 0x5a);
  EXPECT_EQ(spt_hbcsf_dims(good, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_hbcsf_dims(nullptr, nullptr), SPT_ERR_INVALID_ARGUMENT);
  spt_coo* y = nullptr;
  EXPECT_EQ(spt_hbcsf_to_coo(nullptr, nullptr, &y), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_hbcsf_to_coo(nullptr, good, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_hbcsf_free(good), SPT_OK);
  EXPECT_EQ(spt_hbcsf_free(nullptr), SPT_OK);
}

}  // namespace
}  // namespace spt::test
