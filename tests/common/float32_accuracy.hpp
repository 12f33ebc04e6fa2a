// float32 MTTKRP accuracy on every format, through the C API: the result
// must match the exact product of the same float32 data (computed in
// double) to 1e-6 relative (Frobenius norm). The rounding of the output to
// float32 alone costs ~6e-8; a float32 running sum over thousands of
// nonzeros per row costs ~1e-5, so the check fails unless every format
// accumulates in double. Used by the CPU test (test_float32_accuracy.cpp)
// and, with the CUDA backend forced, by the GPU test (test_cuda_float32.cpp).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "common/format_options.hpp"
#include "core/coo.hpp"
#include "core/matrix.hpp"
#include "kernels/kernels.hpp"
#include "sptensor/csf.h"
#include "sptensor/fcoo.h"
#include "sptensor/hbcsf.h"
#include "sptensor/hicoo.h"
#include "sptensor/hls.h"
#include "sptensor/sptensor.h"

namespace spt::test::f32 {

constexpr double kMaxRelativeError = 1e-6;

// A float32 tensor with long rows in every mode and no repeated
// coordinate: dims 6 x 60 x 2000, each cell present with probability 0.5
// for the first 800 indices of mode 2 (dense HLS tiles) and 0.02 beyond
// (sparse ones); ~150,000 nonzeros, ~25,000 per mode-0 row. Values and
// factors are positive, so no cancellation hides the rounding error.
inline spt_coo_s planted_tensor() {
  const std::vector<spt_index> dims = {6, 60, 2000};
  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::array<spt_index, 3>> coords;
  std::vector<float> vals;
  for (spt_index i = 0; i < dims[0]; ++i)
    for (spt_index j = 0; j < dims[1]; ++j)
      for (spt_index k = 0; k < dims[2]; ++k)
        if (unit(rng) < (k < 800 ? 0.5 : 0.02)) {
          coords.push_back({i, j, k});
          vals.push_back(static_cast<float>(0.25 + unit(rng)));
        }
  // Stored in a shuffled order, as a file would give it.
  std::vector<size_t> perm(coords.size());
  for (size_t p = 0; p < perm.size(); ++p) perm[p] = p;
  std::shuffle(perm.begin(), perm.end(), rng);
  spt_coo_s x;
  x.init_owned(SPT_FLOAT32, dims, coords.size());
  float* v = x.mutable_values<float>();
  for (size_t p = 0; p < perm.size(); ++p) {
    for (uint32_t m = 0; m < 3; ++m) x.mutable_ind(m)[p] = coords[perm[p]][m];
    v[p] = vals[perm[p]];
  }
  return x;
}

// Positive float32 factors, dims[m] x rank.
inline std::vector<DenseMatrix<float>> positive_factors(const spt_coo_s& x, spt_nnz rank, uint64_t seed) {
  std::vector<DenseMatrix<float>> f;
  for (uint32_t m = 0; m < x.order(); ++m) {
    std::mt19937_64 rng(seed + 31 * m);
    std::uniform_real_distribution<double> unit(0.1, 1.0);
    DenseMatrix<float> a(x.dims[m], rank);
    for (auto& v : a.values) v = static_cast<float>(unit(rng));
    f.push_back(std::move(a));
  }
  return f;
}

// The exact MTTKRP of the float32 data, summed in double (products of
// float32 numbers of order <= 5 are exact or nearly so in double).
inline DenseMatrix<double> exact_mttkrp(const spt_coo_s& x, const std::vector<DenseMatrix<float>>& f, uint32_t mode) {
  const spt_nnz rank = f[0].cols;
  DenseMatrix<double> out(x.dims[mode], rank);
  const float* v = x.values<float>();
  std::vector<double> p(rank);
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    for (spt_nnz r = 0; r < rank; ++r) p[r] = v[k];
    for (uint32_t m = 0; m < x.order(); ++m) {
      if (m == mode) continue;
      for (spt_nnz r = 0; r < rank; ++r) p[r] *= double(f[m](x.ind[m][k], r));
    }
    for (spt_nnz r = 0; r < rank; ++r) out(x.ind[mode][k], r) += p[r];
  }
  return out;
}

// ||got - want||_F / ||want||_F.
inline double relative_error(const DenseMatrix<double>& want, const spt_matrix* got) {
  double num = 0, den = 0;
  for (spt_nnz i = 0; i < want.rows; ++i)
    for (spt_nnz j = 0; j < want.cols; ++j) {
      const double d = double(got->at<float>(i, j)) - want(i, j);
      num += d * d;
      den += want(i, j) * want(i, j);
    }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Runs every format's MTTKRP in every mode (HLS: order 3-4) on x with ctx's
// backend, checks each against the exact product (kMaxRelativeError) and
// prints the largest error per format. `what` names the case.
inline void check_every_format(spt_context* ctx, const spt_coo_s& x, spt_nnz rank, const std::string& what,
                               bool with_hls = true) {
  const uint32_t order = x.order();
  const auto factors = positive_factors(x, rank, 99);
  std::vector<spt_matrix*> handles;
  for (const auto& f : factors) {
    spt_matrix* m = nullptr;
    ASSERT_EQ(spt_matrix_wrap(ctx, SPT_FLOAT32, f.rows, f.cols, SPT_ROW_MAJOR, const_cast<float*>(f.values.data()),
                              f.cols, &m),
              SPT_OK);
    handles.push_back(m);
  }
  const spt_matrix* const* fac = handles.data();
  std::vector<DenseMatrix<double>> want;
  for (uint32_t m = 0; m < order; ++m) want.push_back(exact_mttkrp(x, factors, m));

  std::map<std::string, double> worst;  // reported at the end
  auto check = [&](const std::string& format, uint32_t mode, auto&& run) {
    spt_matrix* out = nullptr;
    ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT32, x.dims[mode], rank, SPT_ROW_MAJOR, &out), SPT_OK);
    const spt_status st = run(out);
    EXPECT_EQ(st, SPT_OK) << what << " " << format << " mode " << mode << ": " << spt_last_error(ctx);
    if (st == SPT_OK) {
      const double err = relative_error(want[mode], out);
      worst[format] = std::max(worst[format], err);
      EXPECT_LE(err, kMaxRelativeError)
          << what << ": " << format << " MTTKRP mode " << mode << " relative error " << err;
    }
    spt_matrix_free(out);
  };

  for (uint32_t mode = 0; mode < order; ++mode)
    check("COO", mode, [&](spt_matrix* out) { return spt_mttkrp(ctx, &x, fac, mode, out); });
  {
    // COO sorted with the output mode first (the sorted-rows kernel).
    spt_coo_s sorted = copy_coo(x, SPT_FLOAT32);
    for (uint32_t mode = 0; mode < order; ++mode) {
      std::vector<uint32_t> mode_order = {mode};
      for (uint32_t m = 0; m < order; ++m)
        if (m != mode) mode_order.push_back(m);
      ASSERT_EQ(spt_coo_sort(ctx, &sorted, mode_order.data()), SPT_OK) << spt_last_error(ctx);
      check("COO sorted", mode, [&](spt_matrix* out) { return spt_mttkrp(ctx, &sorted, fac, mode, out); });
    }
  }
  for (spt_csf_policy policy : {SPT_CSF_ALLMODE, SPT_CSF_ONEMODE}) {
    spt_csf* c = nullptr;
    ASSERT_EQ(spt_csf_from_coo(ctx, &x, spt::test::CsfOptions(policy), &c), SPT_OK) << spt_last_error(ctx);
    for (uint32_t mode = 0; mode < order; ++mode)
      check(policy == SPT_CSF_ALLMODE ? "CSF all-mode" : "CSF one-mode", mode,
            [&](spt_matrix* out) { return spt_mttkrp_csf(ctx, c, fac, mode, out); });
    spt_csf_free(c);
  }
  {
    spt_hicoo* h = nullptr;
    ASSERT_EQ(spt_hicoo_from_coo(ctx, &x, nullptr, &h), SPT_OK) << spt_last_error(ctx);
    for (uint32_t mode = 0; mode < order; ++mode)
      check("HiCOO", mode, [&](spt_matrix* out) { return spt_mttkrp_hicoo(ctx, h, fac, mode, out); });
    spt_hicoo_free(h);
  }
  for (uint32_t mode = 0; mode < order; ++mode) {
    spt_fcoo* f = nullptr;
    ASSERT_EQ(spt_fcoo_from_coo(ctx, &x, spt::test::FcooOptions(SPT_FCOO_MTTKRP, mode, 0), &f), SPT_OK) << spt_last_error(ctx);
    check("F-COO", mode, [&](spt_matrix* out) { return spt_mttkrp_fcoo(ctx, f, fac, spt::test::served_mode(f), out); });
    spt_fcoo_free(f);
  }
  for (uint32_t root = 0; root < order; ++root) {
    spt_hbcsf* h = nullptr;
    ASSERT_EQ(spt_hbcsf_from_coo(ctx, &x, spt::test::HbcsfOptions(root), &h), SPT_OK) << spt_last_error(ctx);
    check("HB-CSF", root, [&](spt_matrix* out) { return spt_mttkrp_hbcsf(ctx, h, fac, spt::test::served_mode(h), out); });
    if (root == 0)
      for (uint32_t mode = 1; mode < order; ++mode)
        check("HB-CSF (non-root mode)", mode,
              [&](spt_matrix* out) { return spt_mttkrp_hbcsf(ctx, h, fac, mode, out); });
    spt_hbcsf_free(h);
  }
  if (with_hls && (order == 3 || order == 4)) {
    for (uint32_t root = 0; root < order; ++root) {
      spt_hls_options o;
      spt_hls_options_init(&o);
      o.root_mode = root;
      // Tensor-core precisions round the inputs (documented); the exact
      // path is the one that must keep float32's accuracy.
      o.precision = SPT_HLS_PRECISION_EXACT;
      spt_hls* h = nullptr;
      ASSERT_EQ(spt_hls_from_coo(ctx, &x, &o, &h), SPT_OK) << spt_last_error(ctx);
      check("HLS", root, [&](spt_matrix* out) { return spt_mttkrp_hls(ctx, h, fac, spt::test::served_mode(h), out); });
      spt_hls_free(h);
    }
  }
  for (spt_matrix* m : handles) spt_matrix_free(m);
  std::string report = what + ": largest relative error per format:";
  for (const auto& [format, err] : worst) {
    char number[32];
    std::snprintf(number, sizeof number, " %.2e;", err);
    report += " " + format + number;
  }
  std::printf("%s\n", report.c_str());
}

}  // namespace spt::test::f32
