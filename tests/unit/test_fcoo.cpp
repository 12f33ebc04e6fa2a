// F-COO: the encoding (bit flags, start flags, per-warp segment table,
// per-segment coordinates; checked by fcoo::validate and a hand-made
// example), exact COO round trips, and the MTTKRP / TTM / TTMc kernels (CPU
// with 1-3 threads, and the reference) against the COO reference kernels on
// random tensors of orders 2..6 (skewed, heavy slices, duplicates) in
// float32 and float64, every mode and threadlen; plus the threadlen rule and
// argument validation through the C API.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "common/format_invariants.hpp"
#include "common/test_util.hpp"
#include "common/format_options.hpp"
#include "core/coo.hpp"
#include "core/fcoo.hpp"
#include "core/scoo.hpp"
#include "core/sort.hpp"
#include "kernels/kernels.hpp"
#include "sptensor/sptensor.h"

namespace spt::test {
namespace {

namespace ref = spt::kernels::reference;
namespace cpu = SPT_TEST_CPU_KERNELS;
using kernels::Exec;

const int kThreadCounts[] = {1, 2, 3};
const uint32_t kThreadlens[] = {8, 16, 32};

// Standard shapes plus a tensor long enough for several warp groups and
// CPU threads (40k nonzeros), and one with a single heavy slice.
std::vector<RandomTensorSpec> fcoo_specs() {
  std::vector<RandomTensorSpec> specs = standard_specs();
  RandomTensorSpec big;
  big.dims = {300, 40, 2000};
  big.nnz = 40000;
  big.seed = 77;
  big.duplicates = true;
  specs.push_back(big);
  RandomTensorSpec heavy;
  heavy.dims = {2, 5000, 7};
  heavy.nnz = 20000;
  heavy.seed = 78;
  specs.push_back(heavy);
  return specs;
}

template <typename T>
DenseMatrix<T> run_mttkrp(const spt_coo_s& x, const std::vector<DenseMatrix<T>>& f, uint32_t mode, spt_nnz rank) {
  DenseMatrix<T> out(x.dims[mode], rank);
  const auto refs = crefs(f);
  ref::mttkrp(Exec{1}, x, refs.data(), mode, out.ref());
  return out;
}

template <typename T>
void check_spec(const RandomTensorSpec& spec) {
  const spt_coo_s x = random_coo(dtype_of<T>(), spec);
  const uint32_t order = x.order();
  const spt_nnz rank = 5;
  const auto factors = random_factors<T>(x.dims, rank, spec.seed + 3);
  const auto refs = crefs(factors);
  for (uint32_t mode = 0; mode < order; ++mode) {
    const DenseMatrix<T> want = run_mttkrp(x, factors, mode, rank);
    for (uint32_t threadlen : kThreadlens) {
      const std::string what = "order " + std::to_string(order) + " mode " + std::to_string(mode) + " threadlen " +
                               std::to_string(threadlen);
      const spt_fcoo_s f = fcoo::from_coo(x, SPT_FCOO_MTTKRP, mode, threadlen, 2);
      ASSERT_NO_THROW(fcoo::validate(f)) << what;
      EXPECT_EQ(f.nnz, x.nnz);
      ASSERT_EQ(f.product_modes.size(), order - 1u);
      for (int threads : kThreadCounts) {
        DenseMatrix<T> got(x.dims[mode], rank);
        cpu::mttkrp_fcoo(Exec{threads}, f, refs.data(), got.ref());
        expect_matrix_close(want, got, "cpu MTTKRP " + what + " threads " + std::to_string(threads));
      }
      DenseMatrix<T> got_ref(x.dims[mode], rank);
      ref::mttkrp_fcoo(Exec{1}, f, refs.data(), got_ref.ref());
      expect_matrix_close(want, got_ref, "reference MTTKRP " + what);
      if (threadlen != 16) continue;  // the TTM/TTMc checks do not depend on the partition length

      // TTMc in the same F-COO (ranks differing per mode).
      std::vector<DenseMatrix<T>> us;
      for (uint32_t m = 0; m < order; ++m) us.push_back(random_matrix<T>(x.dims[m], 2 + (m % 2), spec.seed + m));
      const auto urefs = crefs(us);
      uint64_t cols = 1;
      for (uint32_t m = 0; m < order; ++m)
        if (m != mode) cols *= us[m].cols;
      if (cols <= 64) {
        DenseMatrix<T> want_c(x.dims[mode], cols), got_c(x.dims[mode], cols);
        ref::ttmc(Exec{1}, x, urefs.data(), mode, want_c.ref());
        cpu::ttmc_fcoo(Exec{2}, f, urefs.data(), got_c.ref());
        expect_matrix_close(want_c, got_c, "cpu TTMc " + what);
      }

      // TTM: fibers equal spt_ttm's (same order, same coordinates, same values).
      const spt_fcoo_s t = fcoo::from_coo(x, SPT_FCOO_TTM, mode, threadlen, 2);
      ASSERT_NO_THROW(fcoo::validate(t)) << what;
      const DenseMatrix<T> u = random_matrix<T>(x.dims[mode], 3, spec.seed + 9);
      spt_scoo_s want_t, got_t;
      ref::ttm(Exec{1}, x, mode, u.cref(), want_t);
      cpu::ttm_fcoo(Exec{3}, t, u.cref(), got_t);
      ASSERT_EQ(want_t.nfibers, got_t.nfibers) << what;
      EXPECT_EQ(t.segments, want_t.nfibers) << what;
      ASSERT_EQ(got_t.dense_modes, std::vector<uint32_t>{mode});
      EXPECT_EQ(want_t.dims, got_t.dims);
      for (uint32_t m = 0; m < order; ++m) {
        if (m == mode) continue;
        for (spt_nnz s = 0; s < want_t.nfibers; ++s) ASSERT_EQ(want_t.ind[m][s], got_t.ind[m][s]) << what;
      }
      const T* a = want_t.values.get<T>().data();
      const T* b = got_t.values.get<T>().data();
      for (spt_nnz i = 0; i < want_t.nfibers * 3; ++i)
        ASSERT_TRUE(close(a[i], b[i], tolerance<T>())) << what << " TTM value " << i;
    }
  }
}

TEST(Fcoo, KernelsMatchCooReferenceFloat64) {
  for (const auto& spec : fcoo_specs()) check_spec<double>(spec);
}

TEST(Fcoo, KernelsMatchCooReferenceFloat32) {
  for (const auto& spec : fcoo_specs()) check_spec<float>(spec);
}

TEST(Fcoo, RoundTripIsTheSortedTensor) {
  for (const auto& spec : fcoo_specs()) {
    const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
    for (uint32_t mode = 0; mode < x.order(); ++mode) {
      for (spt_fcoo_operation op : {SPT_FCOO_MTTKRP, SPT_FCOO_TTM}) {
        const spt_fcoo_s f = fcoo::from_coo(x, op, mode, 8, 2);
        const spt_coo_s back = fcoo::to_coo(f, 1);
        std::vector<uint32_t> order = f.index_modes;
        order.insert(order.end(), f.product_modes.begin(), f.product_modes.end());
        const spt_coo_s sorted = sorting::permuted_copy(Exec{1}, x, sorting::sort_permutation(Exec{1}, x, order));
        ASSERT_EQ(back.nnz, sorted.nnz);
        for (uint32_t m = 0; m < x.order(); ++m)
          for (spt_nnz k = 0; k < x.nnz; ++k) ASSERT_EQ(back.ind[m][k], sorted.ind[m][k]) << "mode " << m;
        for (spt_nnz k = 0; k < x.nnz; ++k) ASSERT_EQ(back.values<double>()[k], sorted.values<double>()[k]);
      }
    }
  }
}

// A hand-made 3-way tensor: MTTKRP on mode 0 with threadlen 8 (two
// partitions, one warp group) - the flags are known exactly.
TEST(Fcoo, HandMadeEncoding) {
  spt_coo_s x;
  x.init_owned(SPT_FLOAT64, {4, 3, 3}, 10);
  // Rows of mode 0: 0 x3, 2 x6, 3 x1 (row 1 empty).
  const spt_index i0[] = {0, 0, 0, 2, 2, 2, 2, 2, 2, 3};
  const spt_index i1[] = {0, 1, 2, 0, 0, 1, 1, 2, 2, 0};
  const spt_index i2[] = {1, 0, 2, 0, 2, 1, 0, 0, 2, 1};
  for (spt_nnz k = 0; k < 10; ++k) {
    x.mutable_ind(0)[k] = i0[k];
    x.mutable_ind(1)[k] = i1[k];
    x.mutable_ind(2)[k] = i2[k];
    x.mutable_values<double>()[k] = double(k + 1);
  }
  const spt_fcoo_s f = fcoo::from_coo(x, SPT_FCOO_MTTKRP, 0, 8, 1);
  EXPECT_EQ(f.segments, 3u);
  ASSERT_EQ(f.bf.size(), 1u);
  EXPECT_EQ(f.bf[0], (1u << 0) | (1u << 3) | (1u << 9));  // rows change at nonzeros 0, 3, 9
  ASSERT_EQ(f.sf.size(), 1u);
  EXPECT_EQ(f.sf[0], 1u);  // partition 0 starts row 0; partition 1 (nonzeros 8, 9) continues row 2
  ASSERT_EQ(f.group_first_segment.size(), 1u);
  EXPECT_EQ(f.group_first_segment[0], 0u);
  EXPECT_EQ(std::vector<spt_index>(f.segment_ind[0].begin(), f.segment_ind[0].end()),
            (std::vector<spt_index>{0, 2, 3}));
  EXPECT_EQ(f.segment_of(8), 1u);
  EXPECT_EQ(f.segment_of(9), 2u);
  // Storage: 2 index arrays + values per nonzero, 1 flag word each, 3 segment rows.
  EXPECT_EQ(f.bytes(), 10u * (2 * 4 + 8) + 3u * 4 + 3u * 4);
}

TEST(Fcoo, ThreadlenRule) {
  // 132 SMs: one wave = 8448 warps. Rank 16 float32 = 64-byte rows = 2
  // lanes per partition (threadlen 8); rank 32 = 4 lanes (16 when that
  // leaves a wave of warps).
  EXPECT_EQ(fcoo::lanes_per_partition(64), 2u);
  EXPECT_EQ(fcoo::lanes_per_partition(128), 4u);
  EXPECT_EQ(fcoo::lanes_per_partition(4096), 8u);
  EXPECT_EQ(fcoo::lanes_per_partition(4), 1u);
  EXPECT_EQ(fcoo::suggested_threadlen(1000, 64, 132), 8u);
  EXPECT_EQ(fcoo::suggested_threadlen(16'000'000, 64, 132), 8u);
  EXPECT_EQ(fcoo::suggested_threadlen(16'000'000, 128, 132), 16u);
  EXPECT_EQ(fcoo::suggested_threadlen(2'000'000, 128, 132), 16u);  // 15625 warps at 16
  EXPECT_EQ(fcoo::suggested_threadlen(1'000'000, 128, 132), 8u);   // 7812 warps at 16
  // Few output rows (at most kFewSlices, from kFewSlicesMinNnz nonzeros): 16 at 4+ lanes.
  const spt_nnz few_min = fcoo::kFewSlicesMinNnz;
  EXPECT_EQ(fcoo::suggested_threadlen(few_min, 128, 132, fcoo::kFewSlices), 16u);
  EXPECT_EQ(fcoo::suggested_threadlen(few_min, 128, 132, 1), 16u);
  EXPECT_EQ(fcoo::suggested_threadlen(few_min, 128, 132, fcoo::kFewSlices + 1), 8u);
  EXPECT_EQ(fcoo::suggested_threadlen(few_min - 1, 128, 132, fcoo::kFewSlices), 8u);
  EXPECT_EQ(fcoo::suggested_threadlen(few_min, 64, 132, fcoo::kFewSlices), 8u);  // 2 lanes
  EXPECT_EQ(fcoo::suggested_threadlen(few_min, 128, 132, 0), 8u);                // unknown
  auto suggest = [](spt_nnz nnz, spt_index rank, spt_dtype dtype, int sms) {
    uint32_t t = 0;
    EXPECT_EQ(spt_fcoo_suggest_threadlen(nnz, rank, dtype, sms, &t), SPT_OK) << spt_thread_last_error();
    return t;
  };
  EXPECT_EQ(suggest(50'000'000, 32, SPT_FLOAT32, 1000), 16u);
  EXPECT_EQ(suggest(50'000'000, 32, SPT_FLOAT32, 10000), 8u);
  EXPECT_EQ(suggest(16'000'000, 0, SPT_FLOAT32, 0), 8u);
  EXPECT_EQ(suggest(16'000'000, 16, SPT_FLOAT64, 0), 16u);
  uint32_t t = 0;
  EXPECT_EQ(spt_fcoo_suggest_threadlen(1000, 16, SPT_FLOAT64, 0, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_fcoo_suggest_threadlen(1000, 16, static_cast<spt_dtype>(7), 0, &t), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_fcoo_suggest_threadlen(1000, 16, SPT_FLOAT64, -1, &t), SPT_ERR_INVALID_ARGUMENT);
}

TEST(Fcoo, EmptyTensor) {
  spt_coo_s x;
  x.init_owned(SPT_FLOAT32, {3, 4, 5}, 0);
  const spt_fcoo_s f = fcoo::from_coo(x, SPT_FCOO_MTTKRP, 1, 0, 1);
  EXPECT_NO_THROW(fcoo::validate(f));
  EXPECT_EQ(f.segments, 0u);
  const auto factors = random_factors<float>(x.dims, 4, 1);
  const auto refs = crefs(factors);
  DenseMatrix<float> out(4, 4);
  out.values.assign(16, 7.0f);
  cpu::mttkrp_fcoo(Exec{2}, f, refs.data(), out.ref());
  for (float v : out.values) EXPECT_EQ(v, 0.0f);
}

// The C API: creation errors, wrong operation, shapes, dtype; and the
// public path gives the COO answer.
TEST(Fcoo, CApi) {
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  RandomTensorSpec spec;
  spec.dims = {20, 30, 40};
  spec.nnz = 500;
  spt_coo_s* x = new spt_coo_s(random_coo(SPT_FLOAT64, spec));
  spt_fcoo* f = nullptr;
  EXPECT_EQ(spt_fcoo_from_coo(ctx, x, spt::test::FcooOptions(SPT_FCOO_MTTKRP, 3, 0), &f), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("mode 3 out of range"), std::string::npos);
  EXPECT_EQ(spt_fcoo_from_coo(ctx, x, spt::test::FcooOptions(SPT_FCOO_MTTKRP, 0, 12), &f), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("threadlen"), std::string::npos);
  EXPECT_EQ(spt_fcoo_from_coo(ctx, x, spt::test::FcooOptions(static_cast<spt_fcoo_operation>(5), 0, 0), &f), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_fcoo_from_coo(ctx, nullptr, spt::test::FcooOptions(SPT_FCOO_MTTKRP, 0, 0), &f), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(f, nullptr);
  ASSERT_EQ(spt_fcoo_from_coo(ctx, x, spt::test::FcooOptions(SPT_FCOO_MTTKRP, 1, 0), &f), SPT_OK);
  spt_fcoo_summary info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(spt_fcoo_info(ctx, f, &info), SPT_OK);
  EXPECT_EQ(info.struct_size, sizeof info);
  EXPECT_EQ(info.dtype, SPT_FLOAT64);
  EXPECT_EQ(info.order, 3u);
  EXPECT_EQ(info.nnz, 500u);
  EXPECT_EQ(info.operation, SPT_FCOO_MTTKRP);
  EXPECT_EQ(info.mode, 1u);
  EXPECT_EQ(info.threadlen, 8u);  // 500 nonzeros
  EXPECT_GT(info.segments, 0u);
  EXPECT_GT(info.bytes, 0u);
  info.struct_size = sizeof(size_t);
  EXPECT_EQ(spt_fcoo_info(ctx, f, &info), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("struct_size"), std::string::npos);
  EXPECT_EQ(spt_fcoo_info(ctx, nullptr, &info), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_fcoo_info(ctx, f, nullptr), SPT_ERR_INVALID_ARGUMENT);
  // NULL options: MTTKRP in mode 0; options shorter than any release refused.
  spt_fcoo* f0 = nullptr;
  ASSERT_EQ(spt_fcoo_from_coo(ctx, x, nullptr, &f0), SPT_OK);
  EXPECT_EQ(spt::test::served_mode(f0), 0u);
  EXPECT_EQ(spt_fcoo_free(f0), SPT_OK);
  spt_fcoo_options short_opts;
  spt_fcoo_options_init(&short_opts);
  short_opts.struct_size = 4;
  EXPECT_EQ(spt_fcoo_from_coo(ctx, x, &short_opts, &f0), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("struct_size"), std::string::npos);

  std::vector<spt_matrix*> factors(3, nullptr);
  for (uint32_t m = 0; m < 3; ++m) ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, spec.dims[m], 4, SPT_COL_MAJOR, &factors[m]), SPT_OK);
  for (uint32_t m = 0; m < 3; ++m)
    for (spt_nnz i = 0; i < spec.dims[m]; ++i)
      for (spt_nnz r = 0; r < 4; ++r) factors[m]->at<double>(i, r) = std::sin(double(i * 7 + r * 3 + m));
  spt_matrix* out = nullptr;
  spt_matrix* want = nullptr;
  ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, 30, 4, SPT_ROW_MAJOR, &out), SPT_OK);
  ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, 30, 4, SPT_ROW_MAJOR, &want), SPT_OK);
  ASSERT_EQ(spt_mttkrp(ctx, x, factors.data(), 1, want), SPT_OK);
  ASSERT_EQ(spt_mttkrp_fcoo(ctx, f, factors.data(), spt::test::served_mode(f), out), SPT_OK);
  for (spt_nnz i = 0; i < 30; ++i)
    for (spt_nnz r = 0; r < 4; ++r) EXPECT_NEAR(out->at<double>(i, r), want->at<double>(i, r), 1e-12);

  // One entry point, the handle's mode only.
  EXPECT_EQ(spt_mttkrp_fcoo(ctx, f, factors.data(), 0, out), SPT_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("mode 1"), std::string::npos) << spt_last_error(ctx);
  EXPECT_EQ(spt_mttkrp_fcoo(ctx, f, factors.data(), 3, out), SPT_ERR_INVALID_ARGUMENT);

  spt_scoo* y = nullptr;
  EXPECT_EQ(spt_ttm_fcoo(ctx, f, factors[1], &y), SPT_ERR_INVALID_ARGUMENT);  // built for MTTKRP
  EXPECT_NE(std::string(spt_last_error(ctx)).find("SPT_FCOO_TTM"), std::string::npos);
  spt_matrix* wrong = nullptr;
  ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, 30, 5, SPT_ROW_MAJOR, &wrong), SPT_OK);
  EXPECT_EQ(spt_mttkrp_fcoo(ctx, f, factors.data(), spt::test::served_mode(f), wrong), SPT_ERR_INVALID_ARGUMENT);
  spt_matrix* single = nullptr;
  ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT32, 30, 4, SPT_ROW_MAJOR, &single), SPT_OK);
  EXPECT_EQ(spt_mttkrp_fcoo(ctx, f, factors.data(), spt::test::served_mode(f), single), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("float32"), std::string::npos);

  spt_fcoo* t = nullptr;
  ASSERT_EQ(spt_fcoo_from_coo(ctx, x, spt::test::FcooOptions(SPT_FCOO_TTM, 2, 16), &t), SPT_OK);
  ASSERT_EQ(spt_ttm_fcoo(ctx, t, factors[2], &y), SPT_OK);
  spt_scoo* y_coo = nullptr;
  ASSERT_EQ(spt_ttm(ctx, x, 2, factors[2], &y_coo), SPT_OK);
  EXPECT_EQ(y->nfibers, y_coo->nfibers);
  spt_coo* back = nullptr;
  ASSERT_EQ(spt_fcoo_to_coo(ctx, t, &back), SPT_OK);
  EXPECT_EQ(back->nnz, 500u);

  spt_coo_free(back);
  spt_scoo_free(y);
  spt_scoo_free(y_coo);
  spt_fcoo_free(t);
  spt_matrix_free(single);
  spt_matrix_free(wrong);
  spt_matrix_free(out);
  spt_matrix_free(want);
  for (auto* m : factors) spt_matrix_free(m);
  spt_fcoo_free(f);
  EXPECT_EQ(spt_fcoo_free(nullptr), SPT_OK);
  spt_coo_free(x);
  spt_context_free(ctx);
}

}  // namespace
}  // namespace spt::test
