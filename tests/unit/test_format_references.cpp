// The oracles of the GPU tests, checked on the CPU: for every format with a
// device kernel, the reference kernel of that format
// (src/kernels/reference/), run through tests/common/format_references.hpp
// (float64 copy of the handle, float64 factors) exactly as the GPU tests
// run it, against the COO reference kernels on the float64 COO tensor:
// MTTKRP on HiCOO (block sizes 2, 16, 128), F-COO, HB-CSF (root and every
// mode, plain B-CSF and HB-CSF with small split thresholds) and HLS (orders
// 3 and 4, dense and sparse parts); TTM and TTMc on F-COO; TTMc on HLS;
// built from float32 and float64 tensors, with repeated coordinates (but
// for HLS, which sums them). The
// `absolute` variant must equal the COO reference on |values| and
// |factors| (the tolerance scale of the GPU tests).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/format_references.hpp"
#include "common/test_util.hpp"
#include "core/coo.hpp"
#include "core/sort.hpp"
#include "kernels/kernels.hpp"

namespace spt::test {
namespace {

// The float64 copy of x (|values| with `absolute`).
spt_coo_s float64_coo(const spt_coo_s& x, bool absolute) {
  spt_coo_s wide = copy_coo(x, SPT_FLOAT64);
  if (absolute)
    for (spt_nnz k = 0; k < wide.nnz; ++k) wide.mutable_values<double>()[k] = std::abs(wide.values<double>()[k]);
  return wide;
}

template <typename T>
DenseMatrix<double> coo_mttkrp(const spt_coo_s& x, const std::vector<DenseMatrix<T>>& factors, uint32_t mode,
                               bool absolute) {
  const spt_coo_s wide = float64_coo(x, absolute);
  const auto f = float64_matrices(factors, absolute);
  const auto refs = float64_refs(f);
  DenseMatrix<double> out(x.dims[mode], factors[0].cols);
  kernels::reference::mttkrp(kernels::Exec{1}, wide, refs.data(), mode, out.ref());
  return out;
}

template <typename T>
DenseMatrix<double> coo_ttmc(const spt_coo_s& x, const std::vector<DenseMatrix<T>>& factors, uint32_t mode,
                             bool absolute) {
  const spt_coo_s wide = float64_coo(x, absolute);
  const auto f = float64_matrices(factors, absolute);
  const auto refs = float64_refs(f);
  DenseMatrix<double> out(x.dims[mode], ttmc_columns(factors, mode));
  kernels::reference::ttmc(kernels::Exec{1}, wide, refs.data(), mode, out.ref());
  return out;
}

void expect_same(const DenseMatrix<double>& want, const DenseMatrix<double>& got, const std::string& what) {
  ASSERT_EQ(want.rows, got.rows) << what;
  ASSERT_EQ(want.cols, got.cols) << what;
  for (spt_nnz i = 0; i < want.rows; ++i)
    for (spt_nnz j = 0; j < want.cols; ++j)
      ASSERT_TRUE(close(want(i, j), got(i, j), 1e-12))
          << what << " at (" << i << "," << j << "): want " << want(i, j) << " got " << got(i, j);
}

template <typename T>
class FormatReferences : public ::testing::Test {};
using ValueTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(FormatReferences, ValueTypes);

// Standard shapes of orders 3..6 (and 2 where the format takes it).
std::vector<RandomTensorSpec> specs_of_order(uint32_t min_order, uint32_t max_order) {
  std::vector<RandomTensorSpec> out;
  for (const RandomTensorSpec& s : standard_specs())
    if (s.dims.size() >= min_order && s.dims.size() <= max_order) out.push_back(s);
  return out;
}

TYPED_TEST(FormatReferences, HicooMttkrpEqualsCoo) {
  using T = TypeParam;
  for (const RandomTensorSpec& spec : specs_of_order(2, 6)) {
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    const auto factors = random_factors<T>(x.dims, 5, spec.seed);
    for (uint32_t block : {2u, 16u, 128u}) {
      hicoo::Params p;
      p.block_size = block;
      const spt_hicoo_s h = hicoo::from_coo(x, p, 2);
      for (uint32_t mode = 0; mode < x.order(); ++mode)
        for (bool absolute : {false, true})
          expect_same(coo_mttkrp(x, factors, mode, absolute), reference_mttkrp_hicoo(h, factors, mode, absolute),
                      cat("HiCOO B ", block, " order ", x.order(), " mode ", mode, absolute ? " absolute" : ""));
    }
  }
}

TYPED_TEST(FormatReferences, FcooKernelsEqualCoo) {
  using T = TypeParam;
  for (const RandomTensorSpec& spec : specs_of_order(2, 6)) {
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    const auto factors = random_factors<T>(x.dims, 4, spec.seed);
    std::vector<DenseMatrix<T>> narrow;  // TTMc widths 2 and 3
    for (uint32_t m = 0; m < x.order(); ++m) narrow.push_back(random_matrix<T>(x.dims[m], 2 + m % 2, spec.seed + m));
    for (uint32_t mode = 0; mode < x.order(); ++mode) {
      const spt_fcoo_s f = fcoo::from_coo(x, SPT_FCOO_MTTKRP, mode, 8, 2);
      const std::string what = cat("F-COO order ", x.order(), " mode ", mode);
      for (bool absolute : {false, true}) {
        expect_same(coo_mttkrp(x, factors, mode, absolute), reference_mttkrp_fcoo(f, factors, absolute),
                    what + " MTTKRP");
        expect_same(coo_ttmc(x, narrow, mode, absolute), reference_ttmc_fcoo(f, narrow, absolute), what + " TTMc");
      }
      // TTM: the same fibers and values as the COO reference TTM.
      const spt_fcoo_s t = fcoo::from_coo(x, SPT_FCOO_TTM, mode, 16, 2);
      const spt_scoo_s got = reference_ttm_fcoo(t, factors[mode]);
      const spt_coo_s wide = float64_coo(x, false);
      const auto wf = float64_matrices(factors);
      spt_scoo_s want;
      kernels::reference::ttm(kernels::Exec{1}, wide, mode, wf[mode].cref(), want);
      ASSERT_EQ(want.nfibers, got.nfibers) << what;
      ASSERT_EQ(want.values.size(), got.values.size()) << what;
      for (uint32_t m = 0; m < x.order(); ++m)
        if (!want.is_dense(m))
          for (spt_nnz i = 0; i < want.nfibers; ++i) ASSERT_EQ(want.ind[m][i], got.ind[m][i]) << what << " fiber " << i;
      const double* a = want.values.get<double>().data();
      const double* b = got.values.get<double>().data();
      for (size_t i = 0; i < want.values.size(); ++i) ASSERT_TRUE(close(a[i], b[i], 1e-12)) << what << " TTM " << i;
    }
  }
}

TYPED_TEST(FormatReferences, HbcsfMttkrpEqualsCoo) {
  using T = TypeParam;
  hbcsf::Params small;  // every group populated on the small tensors
  small.fiber_threshold = 2;
  small.slice_split_nnz = 8;
  hbcsf::Params plain;
  plain.flags = SPT_HBCSF_PLAIN_BCSF;
  for (const RandomTensorSpec& spec : specs_of_order(3, 6)) {
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    const auto factors = random_factors<T>(x.dims, 6, spec.seed);
    for (uint32_t root = 0; root < x.order(); ++root)
      for (const hbcsf::Params& p : {hbcsf::Params{}, small, plain}) {
        const spt_hbcsf_s h = hbcsf::from_coo(x, root, p, 2);
        const std::string what = cat("HB-CSF order ", x.order(), " root ", root, " flags ", p.flags, " fiber threshold ",
                                     p.fiber_threshold);
        for (bool absolute : {false, true}) {
          expect_same(coo_mttkrp(x, factors, root, absolute), reference_mttkrp_hbcsf(h, factors, absolute), what);
          for (uint32_t mode = 0; mode < x.order(); ++mode)
            expect_same(coo_mttkrp(x, factors, mode, absolute),
                        reference_mttkrp_hbcsf_mode(h, factors, mode, absolute), cat(what, " mode ", mode));
        }
      }
  }
}

TYPED_TEST(FormatReferences, HlsKernelsEqualCoo) {
  using T = TypeParam;
  RandomTensorSpec third;
  third.dims = {70, 40, 90};
  third.nnz = 6000;
  third.seed = 31;
  RandomTensorSpec fourth;
  fourth.dims = {30, 20, 40, 9};
  fourth.nnz = 5000;
  fourth.seed = 32;
  for (const RandomTensorSpec& spec : {third, fourth}) {
    // Repeated coordinates summed first: HLS sums them into one cell in the
    // tensor's type, so neither the float32 sum nor |sum| (the absolute
    // variant) would equal the COO reference's separate terms.
    const spt_coo_s x = sorting::coalesced_copy(Exec{1}, random_coo(dtype_of<T>(), spec));
    const auto factors = random_factors<T>(x.dims, 7, spec.seed);
    std::vector<DenseMatrix<T>> narrow;
    for (uint32_t m = 0; m < x.order(); ++m) narrow.push_back(random_matrix<T>(x.dims[m], 2 + m % 2, spec.seed + m));
    for (uint32_t root = 0; root < x.order(); ++root)
      for (uint32_t threshold : {1u, 4u, 100000u}) {  // all dense, mixed, all sparse
        hls::Params p;
        p.root = root;
        p.dense_threshold = threshold;
        const spt_hls_s h = hls::from_coo(x, p, 2);
        const std::string what = cat("HLS order ", x.order(), " root ", root, " threshold ", threshold);
        for (bool absolute : {false, true}) {
          expect_same(coo_mttkrp(x, factors, root, absolute), reference_mttkrp_hls(h, factors, absolute),
                      what + " MTTKRP");
          expect_same(coo_ttmc(x, narrow, root, absolute), reference_ttmc_hls(h, narrow, absolute), what + " TTMc");
        }
      }
  }
}

}  // namespace
}  // namespace spt::test
