// CP-ALS: recovery of a planted low-rank tensor, reproducibility, the
// user-initialisation path against an independent hand-rolled ALS, float32,
// argument validation, history and callback, backend agreement, the dense
// kernels behind it, and a tensor whose dense size passes 2^64.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "algo/cp_als.hpp"
#include "algo/normal_equations.hpp"
#include "common/summaries.hpp"
#include "core/context.hpp"
#include "kernels/dense.hpp"
#include "sptensor/sptensor.h"
#include "common/test_util.hpp"

namespace {

// RAII holders for C handles.
struct CooDeleter {
  void operator()(spt_coo* x) const { spt_coo_free(x); }
};
struct KtensorDeleter {
  void operator()(spt_ktensor* k) const { spt_ktensor_free(k); }
};
struct MatrixDeleter {
  void operator()(spt_matrix* m) const { spt_matrix_free(m); }
};
struct ContextDeleter {
  void operator()(spt_context* c) const { spt_context_free(c); }
};
using CooPtr = std::unique_ptr<spt_coo, CooDeleter>;
using KtensorPtr = std::unique_ptr<spt_ktensor, KtensorDeleter>;
using MatrixPtr = std::unique_ptr<spt_matrix, MatrixDeleter>;
using ContextPtr = std::unique_ptr<spt_context, ContextDeleter>;

ContextPtr make_context(spt_backend backend = SPT_BACKEND_CPU, int threads = 2) {
  spt_context* c = nullptr;
  EXPECT_EQ(spt_context_create(&c), SPT_OK);
  EXPECT_EQ(spt_context_set_backend(c, backend), SPT_OK);
  EXPECT_EQ(spt_context_set_threads(c, threads), SPT_OK);
  return ContextPtr(c);
}

// A Kruskal model held as plain arrays: lambda and row-major factors.
struct Model {
  std::vector<spt_index> dims;
  spt_index rank = 0;
  std::vector<double> lambda;
  std::vector<std::vector<double>> factors;  // dims[m] x rank, row-major

  double entry(const std::vector<spt_index>& idx) const {
    double s = 0.0;
    for (spt_index r = 0; r < rank; ++r) {
      double p = lambda[r];
      for (size_t m = 0; m < dims.size(); ++m) p *= factors[m][idx[m] * rank + r];
      s += p;
    }
    return s;
  }
};

// Every coordinate of a small dense grid in row-major order.
std::vector<std::vector<spt_index>> grid(const std::vector<spt_index>& dims) {
  std::vector<std::vector<spt_index>> out;
  std::vector<spt_index> idx(dims.size(), 0);
  while (true) {
    out.push_back(idx);
    size_t m = dims.size();
    while (m > 0) {
      --m;
      if (++idx[m] < dims[m]) break;
      idx[m] = 0;
      if (m == 0) return out;
    }
  }
}

// A planted exact rank-`rank` tensor on a dense grid: positive random
// factors, every grid entry stored as a nonzero.
CooPtr planted_tensor(spt_dtype dtype, const std::vector<spt_index>& dims, spt_index rank, uint64_t seed,
                      Model* model_out = nullptr) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.1, 1.0);
  Model model;
  model.dims = dims;
  model.rank = rank;
  model.lambda.assign(rank, 1.0);
  for (spt_index d : dims) {
    std::vector<double> f(static_cast<size_t>(d) * rank);
    for (double& v : f) v = unit(rng);
    model.factors.push_back(f);
  }
  auto coords = grid(dims);
  const uint32_t order = static_cast<uint32_t>(dims.size());
  const spt_nnz nnz = coords.size();
  std::vector<spt_index> indices(static_cast<size_t>(order) * nnz);
  std::vector<double> v64(nnz);
  std::vector<float> v32(nnz);
  for (spt_nnz k = 0; k < nnz; ++k) {
    for (uint32_t m = 0; m < order; ++m) indices[m * nnz + k] = coords[k][m];
    v64[k] = model.entry(coords[k]);
    v32[k] = static_cast<float>(v64[k]);
  }
  spt_coo* x = nullptr;
  EXPECT_EQ(spt_coo_create_from_arrays(nullptr, dtype, order, dims.data(), nnz, indices.data(), nnz, 0,
                                       dtype == SPT_FLOAT64 ? static_cast<const void*>(v64.data()) : v32.data(), 0,
                                       &x),
            SPT_OK);
  if (model_out) *model_out = model;
  return CooPtr(x);
}

// A random sparse tensor through the public API (values in [-1,1)).
CooPtr random_tensor(spt_dtype dtype, const std::vector<spt_index>& dims, spt_nnz nnz, uint64_t seed) {
  spt::test::RandomTensorSpec spec;
  spec.dims = dims;
  spec.nnz = nnz;
  spec.seed = seed;
  spt_coo_s internal = spt::test::random_coo(dtype, spec);
  return CooPtr(new spt_coo_s(std::move(internal)));
}

// Read back a ktensor into a Model (values converted to double).
Model read_model(spt_ktensor* k) {
  Model model;
  const spt_ktensor_summary info = spt_test::info_of(k);
  const spt_dtype dtype = info.dtype;
  const uint32_t order = info.order;
  const spt_index rank = info.rank;
  model.dims.resize(order);
  EXPECT_EQ(spt_ktensor_dims(k, model.dims.data()), SPT_OK);
  model.rank = rank;
  void* lambda = nullptr;
  EXPECT_EQ(spt_ktensor_lambda(k, &lambda), SPT_OK);
  for (spt_index r = 0; r < rank; ++r)
    model.lambda.push_back(dtype == SPT_FLOAT64 ? static_cast<double*>(lambda)[r] : static_cast<float*>(lambda)[r]);
  for (uint32_t m = 0; m < order; ++m) {
    spt_matrix* f = nullptr;
    EXPECT_EQ(spt_ktensor_factor(k, m, &f), SPT_OK);
    std::vector<double> values(static_cast<size_t>(model.dims[m]) * rank);
    if (dtype == SPT_FLOAT64) {
      EXPECT_EQ(spt_matrix_copy_out(f, SPT_ROW_MAJOR, values.data(), rank), SPT_OK);
    } else {
      std::vector<float> tmp(values.size());
      EXPECT_EQ(spt_matrix_copy_out(f, SPT_ROW_MAJOR, tmp.data(), rank), SPT_OK);
      for (size_t i = 0; i < tmp.size(); ++i) values[i] = tmp[i];
    }
    model.factors.push_back(values);
  }
  return model;
}

// The byte image of a ktensor's lambda and factors (for reproducibility).
std::string ktensor_bytes(spt_ktensor* k) {
  const spt_ktensor_summary info = spt_test::info_of(k);
  const spt_dtype dtype = info.dtype;
  const uint32_t order = info.order;
  const spt_index rank = info.rank;
  const size_t size = dtype == SPT_FLOAT64 ? 8 : 4;
  std::vector<spt_index> dims(order);
  spt_ktensor_dims(k, dims.data());
  void* lambda = nullptr;
  spt_ktensor_lambda(k, &lambda);
  std::string bytes(static_cast<const char*>(lambda), size * rank);
  for (uint32_t m = 0; m < order; ++m) {
    spt_matrix* f = nullptr;
    spt_ktensor_factor(k, m, &f);
    void* data = nullptr;
    spt_matrix_data(f, &data);
    bytes.append(static_cast<const char*>(data), size * dims[m] * rank);
  }
  return bytes;
}

// Checks the arrange/fixsigns post-conditions on a result: lambda sorted
// non-increasing and >= 0, unit columns (or zero columns), and in every
// component an even number of modes... i.e. at most one mode whose
// largest-magnitude entry is negative.
void expect_arranged(const Model& model, double tol) {
  for (spt_index r = 0; r < model.rank; ++r) {
    EXPECT_GE(model.lambda[r], 0.0);
    if (r > 0) EXPECT_GE(model.lambda[r - 1], model.lambda[r]);
    int negative_modes = 0;
    for (size_t m = 0; m < model.dims.size(); ++m) {
      double norm2 = 0.0, best = 0.0, best_value = 0.0;
      for (spt_index i = 0; i < model.dims[m]; ++i) {
        const double v = model.factors[m][i * model.rank + r];
        norm2 += v * v;
        if (std::abs(v) > best) {
          best = std::abs(v);
          best_value = v;
        }
      }
      if (model.lambda[r] > 0) EXPECT_NEAR(std::sqrt(norm2), 1.0, tol) << "mode " << m << " component " << r;
      if (best_value < 0) ++negative_modes;
    }
    EXPECT_LE(negative_modes, 1) << "component " << r;
  }
}

spt_cpd_options default_options(spt_index rank, int iters, double tol) {
  spt_cpd_options opts;
  EXPECT_EQ(spt_cpd_options_init(&opts), SPT_OK);
  opts.rank = rank;
  opts.max_iters = iters;
  opts.tol = tol;
  return opts;
}

// ---------------------------------------------------------------------------
// An independent, deliberately naive CP-ALS (double, dense loops, Gaussian
// elimination) following pyttb.cp_als, for the user-init comparison.
// ---------------------------------------------------------------------------
struct Nonzeros {
  std::vector<std::vector<spt_index>> coords;
  std::vector<double> values;
};

Nonzeros nonzeros_of(const spt_coo* x) {
  Nonzeros nz;
  const spt_coo_summary info = spt_test::info_of(x);
  const uint32_t order = info.order;
  const spt_nnz nnz = info.nnz;
  const spt_dtype dtype = info.dtype;
  const void* values = nullptr;
  spt_coo_values(x, &values);
  std::vector<const spt_index*> ind(order);
  for (uint32_t m = 0; m < order; ++m) spt_coo_indices(x, m, &ind[m]);
  for (spt_nnz k = 0; k < nnz; ++k) {
    std::vector<spt_index> c(order);
    for (uint32_t m = 0; m < order; ++m) c[m] = ind[m][k];
    nz.coords.push_back(c);
    nz.values.push_back(static_cast<const double*>(values)[k]);
  }
  return nz;
}

// Solve X * Y = B for X (Y: R x R, B: I x R row-major) by Gaussian elimination
// with partial pivoting on Y^T (numpy.linalg.solve(Y.T, B.T).T).
std::vector<double> right_solve(std::vector<double> y, const std::vector<double>& b, size_t rows, size_t rank) {
  // Solve Y^T Z = B^T: A = Y^T, right-hand sides = columns of B^T = rows of B.
  std::vector<double> a(rank * rank);
  for (size_t i = 0; i < rank; ++i)
    for (size_t j = 0; j < rank; ++j) a[i * rank + j] = y[j * rank + i];
  std::vector<double> rhs(rank * rows);  // rank x rows
  for (size_t i = 0; i < rows; ++i)
    for (size_t r = 0; r < rank; ++r) rhs[r * rows + i] = b[i * rank + r];
  for (size_t col = 0; col < rank; ++col) {
    size_t pivot = col;
    for (size_t i = col + 1; i < rank; ++i)
      if (std::abs(a[i * rank + col]) > std::abs(a[pivot * rank + col])) pivot = i;
    if (pivot != col) {
      for (size_t j = 0; j < rank; ++j) std::swap(a[col * rank + j], a[pivot * rank + j]);
      for (size_t j = 0; j < rows; ++j) std::swap(rhs[col * rows + j], rhs[pivot * rows + j]);
    }
    for (size_t i = col + 1; i < rank; ++i) {
      const double f = a[i * rank + col] / a[col * rank + col];
      for (size_t j = col; j < rank; ++j) a[i * rank + j] -= f * a[col * rank + j];
      for (size_t j = 0; j < rows; ++j) rhs[i * rows + j] -= f * rhs[col * rows + j];
    }
  }
  for (size_t col = rank; col-- > 0;) {
    for (size_t j = 0; j < rows; ++j) {
      double s = rhs[col * rows + j];
      for (size_t k = col + 1; k < rank; ++k) s -= a[col * rank + k] * rhs[k * rows + j];
      rhs[col * rows + j] = s / a[col * rank + col];
    }
  }
  std::vector<double> x(rows * rank);
  for (size_t i = 0; i < rows; ++i)
    for (size_t r = 0; r < rank; ++r) x[i * rank + r] = rhs[r * rows + i];
  return x;
}

// Runs `iters` sweeps from `init`; returns the per-iteration fits and leaves
// the final (un-arranged) model in `model`.
std::vector<double> hand_rolled_cp_als(const Nonzeros& nz, Model& model, int iters) {
  const size_t order = model.dims.size();
  const size_t rank = model.rank;
  // ||X|| of the tensor the entries stand for: repeated coordinates summed.
  std::map<std::vector<spt_index>, double> cells;
  for (size_t k = 0; k < nz.values.size(); ++k) cells[nz.coords[k]] += nz.values[k];
  double norm_x2 = 0.0;
  for (const auto& cell : cells) norm_x2 += cell.second * cell.second;
  const double norm_x = std::sqrt(norm_x2);
  std::vector<double> fits;
  double fit = 0.0;
  for (int iter = 0; iter < iters; ++iter) {
    for (size_t n = 0; n < order; ++n) {
      const size_t rows = model.dims[n];
      std::vector<double> b(rows * rank, 0.0);
      for (size_t k = 0; k < nz.values.size(); ++k)
        for (size_t r = 0; r < rank; ++r) {
          double p = nz.values[k];
          for (size_t m = 0; m < order; ++m)
            if (m != n) p *= model.factors[m][nz.coords[k][m] * rank + r];
          b[nz.coords[k][n] * rank + r] += p;
        }
      std::vector<double> y(rank * rank, 1.0);
      for (size_t m = 0; m < order; ++m) {
        if (m == n) continue;
        for (size_t r = 0; r < rank; ++r)
          for (size_t s = 0; s < rank; ++s) {
            double g = 0.0;
            for (size_t i = 0; i < model.dims[m]; ++i)
              g += model.factors[m][i * rank + r] * model.factors[m][i * rank + s];
            y[r * rank + s] *= g;
          }
      }
      std::vector<double> u = right_solve(y, b, rows, rank);
      for (size_t r = 0; r < rank; ++r) {
        double w = 0.0;
        for (size_t i = 0; i < rows; ++i) {
          const double v = u[i * rank + r];
          w = iter == 0 ? w + v * v : std::max(w, std::abs(v));
        }
        w = iter == 0 ? std::sqrt(w) : std::max(w, 1.0);
        model.lambda[r] = w;
        for (size_t i = 0; i < rows; ++i) u[i * rank + r] /= w;
      }
      model.factors[n] = u;
    }
    // Fit from an explicit inner product over the nonzeros (not the
    // MTTKRP shortcut the library uses) and the Gram-based model norm.
    double inner = 0.0;
    for (size_t k = 0; k < nz.values.size(); ++k) inner += nz.values[k] * model.entry(nz.coords[k]);
    double norm_p2 = 0.0;
    for (size_t r = 0; r < rank; ++r)
      for (size_t s = 0; s < rank; ++s) {
        double v = model.lambda[r] * model.lambda[s];
        for (size_t m = 0; m < order; ++m) {
          double g = 0.0;
          for (size_t i = 0; i < model.dims[m]; ++i)
            g += model.factors[m][i * rank + r] * model.factors[m][i * rank + s];
          v *= g;
        }
        norm_p2 += v;
      }
    fit = 1.0 - std::sqrt(std::abs(norm_x2 + norm_p2 - 2.0 * inner)) / norm_x;
    fits.push_back(fit);
  }
  return fits;
}

}  // namespace

// ---------------------------------------------------------------------------

TEST(CpAls, OptionsDefaults) {
  spt_cpd_options opts;
  std::memset(&opts, 0xff, sizeof opts);
  ASSERT_EQ(spt_cpd_options_init(&opts), SPT_OK);
  EXPECT_EQ(opts.struct_size, sizeof(spt_cpd_options));
  EXPECT_EQ(opts.rank, 10u);
  EXPECT_EQ(opts.max_iters, 50);
  EXPECT_DOUBLE_EQ(opts.tol, 1e-4);
  EXPECT_EQ(opts.init, SPT_CPD_INIT_RANDOM);
  EXPECT_EQ(opts.seed, 0u);
  EXPECT_EQ(opts.init_factors, nullptr);
  EXPECT_EQ(opts.callback, nullptr);
  EXPECT_EQ((spt_cpd_options_init)(nullptr), SPT_ERR_INVALID_ARGUMENT);
}

TEST(CpAls, PlantedRank3IsRecovered) {
  Model planted;
  CooPtr x = planted_tensor(SPT_FLOAT64, {12, 10, 8}, 3, 7, &planted);
  auto ctx = make_context(SPT_BACKEND_CPU, 1);  // tiny problem: no parallel regions
  spt_cpd_options opts = default_options(3, 500, 1e-12);
  opts.seed = 3;
  spt_ktensor* k = nullptr;
  const spt_status status = spt_cpd_als(ctx.get(), x.get(), &opts, &k);
  ASSERT_TRUE(status == SPT_OK || status == SPT_WARN_NOT_CONVERGED) << spt_last_error(ctx.get());
  KtensorPtr holder(k);
  double fit;
  int iterations, converged;
  ASSERT_EQ(spt_ktensor_result(k, &fit, &iterations, &converged), SPT_OK);
  EXPECT_GT(fit, 0.9999);
  EXPECT_EQ(converged, status == SPT_OK ? 1 : 0);

  // The recovered model reproduces every entry of the planted tensor.
  Model got = read_model(k);
  double max_err = 0.0, max_val = 0.0;
  for (const auto& c : grid(planted.dims)) {
    max_err = std::max(max_err, std::abs(got.entry(c) - planted.entry(c)));
    max_val = std::max(max_val, std::abs(planted.entry(c)));
  }
  EXPECT_LT(max_err, 1e-3 * max_val);
  expect_arranged(got, 1e-12);

  // ||K|| from lambda and Grams matches ||X|| for an (almost) exact fit.
  double knorm = 0.0, xnorm = 0.0;
  ASSERT_EQ(spt_ktensor_norm(ctx.get(), k, &knorm), SPT_OK);
  ASSERT_EQ(spt_coo_norm(ctx.get(), x.get(), &xnorm), SPT_OK);
  EXPECT_NEAR(knorm, xnorm, 1e-4 * xnorm);
}

TEST(CpAls, Float32Works) {
  CooPtr x = planted_tensor(SPT_FLOAT32, {12, 10, 8}, 3, 7);
  auto ctx = make_context(SPT_BACKEND_CPU, 1);  // tiny problem: no parallel regions
  spt_cpd_options opts = default_options(3, 300, 1e-9);
  opts.seed = 3;
  spt_ktensor* k = nullptr;
  const spt_status status = spt_cpd_als(ctx.get(), x.get(), &opts, &k);
  ASSERT_GE(status, 0) << spt_last_error(ctx.get());
  KtensorPtr holder(k);
  EXPECT_EQ(spt_test::info_of(k).dtype, SPT_FLOAT32);
  double fit;
  ASSERT_EQ(spt_ktensor_result(k, &fit, nullptr, nullptr), SPT_OK);
  EXPECT_GT(fit, 0.999);
  expect_arranged(read_model(k), 1e-5);
}

TEST(CpAls, BitReproducibleForFixedSeedAndThreads) {
  CooPtr x = random_tensor(SPT_FLOAT64, {40, 30, 20, 10}, 3000, 21);
  // Every storage format, with 3 threads too (private copies must be
  // summed in a fixed order).
  const std::pair<spt_tensor_format, spt_csf_policy> formats[] = {
      {SPT_TENSOR_FORMAT_AUTO, SPT_CSF_AUTO},       {SPT_TENSOR_FORMAT_COO, SPT_CSF_AUTO},
      {SPT_TENSOR_FORMAT_HICOO, SPT_CSF_AUTO},      {SPT_TENSOR_FORMAT_CSF, SPT_CSF_ONEMODE},
      {SPT_TENSOR_FORMAT_CSF, SPT_CSF_ALLMODE},     {SPT_TENSOR_FORMAT_CSF, SPT_CSF_MEMOIZED}};
  for (const auto& [format, policy] : formats) {
    for (int threads : {1, 2, 3}) {
      auto ctx = make_context(SPT_BACKEND_CPU, threads);
      spt_context_set_seed(ctx.get(), 12345);
      spt_cpd_options opts = default_options(5, 15, 0.0);
      opts.format = format;
      opts.csf_policy = policy;
      std::string first;
      for (int run = 0; run < 3; ++run) {
        spt_ktensor* k = nullptr;
        ASSERT_EQ(spt_cpd_als(ctx.get(), x.get(), &opts, &k), SPT_WARN_NOT_CONVERGED) << spt_last_error(ctx.get());
        KtensorPtr holder(k);
        if (run == 0) first = ktensor_bytes(k);
        else EXPECT_EQ(first, ktensor_bytes(k)) << "format " << format << " policy " << policy << " threads " << threads;
      }
    }
  }
  for (int threads : {1, 2}) {
    auto ctx = make_context(SPT_BACKEND_CPU, threads);
    spt_context_set_seed(ctx.get(), 12345);
    spt_cpd_options opts = default_options(5, 15, 0.0);
    std::string first;
    {
      spt_ktensor* k = nullptr;
      ASSERT_EQ(spt_cpd_als(ctx.get(), x.get(), &opts, &k), SPT_WARN_NOT_CONVERGED) << spt_last_error(ctx.get());
      KtensorPtr holder(k);
      first = ktensor_bytes(k);
    }
    // A different seed (opts.seed overrides the context seed) changes the result.
    opts.seed = 999;
    spt_ktensor* k = nullptr;
    ASSERT_GE(spt_cpd_als(ctx.get(), x.get(), &opts, &k), 0);
    KtensorPtr holder(k);
    EXPECT_NE(first, ktensor_bytes(k));
  }
}

TEST(CpAls, UserInitMatchesHandRolledAls) {
  const std::vector<spt_index> dims = {7, 6, 5};
  CooPtr x = random_tensor(SPT_FLOAT64, dims, 120, 5);
  const spt_index rank = 3;
  const int iters = 8;
  Model init;
  init.dims = dims;
  init.rank = rank;
  init.lambda.assign(rank, 1.0);
  std::vector<MatrixPtr> matrices;
  std::vector<const spt_matrix*> factor_ptrs;
  std::mt19937_64 rng(77);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (size_t m = 0; m < dims.size(); ++m) {
    std::vector<double> f(dims[m] * rank);
    for (double& v : f) v = unit(rng);
    init.factors.push_back(f);
    // Pass mode 1 column-major to exercise layouts.
    const spt_layout layout = m == 1 ? SPT_COL_MAJOR : SPT_ROW_MAJOR;
    std::vector<double> stored(f.size());
    for (spt_index i = 0; i < dims[m]; ++i)
      for (spt_index r = 0; r < rank; ++r)
        stored[layout == SPT_ROW_MAJOR ? i * rank + r : r * dims[m] + i] = f[i * rank + r];
    spt_matrix* mat = nullptr;
    ASSERT_EQ(spt_matrix_create_copy(nullptr, SPT_FLOAT64, dims[m], rank, layout, stored.data(),
                                     layout == SPT_ROW_MAJOR ? rank : dims[m], &mat),
              SPT_OK);
    matrices.emplace_back(mat);
    factor_ptrs.push_back(mat);
  }
  auto ctx = make_context();
  spt_cpd_options opts = default_options(rank, iters, 0.0);
  opts.init = SPT_CPD_INIT_USER;
  opts.init_factors = factor_ptrs.data();
  spt_ktensor* k = nullptr;
  ASSERT_EQ(spt_cpd_als(ctx.get(), x.get(), &opts, &k), SPT_WARN_NOT_CONVERGED) << spt_last_error(ctx.get());
  KtensorPtr holder(k);

  Model expected = init;
  std::vector<double> expected_fits = hand_rolled_cp_als(nonzeros_of(x.get()), expected, iters);
  int count = 0;
  const double* fits = nullptr;
  const double* seconds = nullptr;
  ASSERT_EQ(spt_ktensor_history(k, &count, &fits, &seconds), SPT_OK);
  ASSERT_EQ(count, iters);
  for (int i = 0; i < iters; ++i) {
    EXPECT_NEAR(fits[i], expected_fits[i], 1e-10) << "iteration " << i + 1;
    EXPECT_GE(seconds[i], 0.0);
  }
  // Arrangement and signs differ by construction, the model may not: compare
  // every entry of the reconstructed tensors.
  Model got = read_model(k);
  for (const auto& c : grid(dims)) EXPECT_NEAR(got.entry(c), expected.entry(c), 1e-9);
  expect_arranged(got, 1e-12);
}

TEST(CpAls, HistoryLengthEqualsIterations) {
  CooPtr x = random_tensor(SPT_FLOAT64, {30, 20, 10}, 1000, 8);
  auto ctx = make_context();
  {
    spt_cpd_options opts = default_options(4, 7, 0.0);  // tol 0: run every iteration
    spt_ktensor* k = nullptr;
    ASSERT_EQ(spt_cpd_als(ctx.get(), x.get(), &opts, &k), SPT_WARN_NOT_CONVERGED);
    KtensorPtr holder(k);
    double fit;
    int iterations, converged, count;
    const double* fits;
    ASSERT_EQ(spt_ktensor_result(k, &fit, &iterations, &converged), SPT_OK);
    ASSERT_EQ(spt_ktensor_history(k, &count, &fits, nullptr), SPT_OK);
    EXPECT_EQ(iterations, 7);
    EXPECT_EQ(count, 7);
    EXPECT_EQ(converged, 0);
    EXPECT_EQ(fit, fits[count - 1]);
  }
  {
    // A loose tolerance converges at the second sweep (never the first).
    spt_cpd_options opts = default_options(4, 50, 10.0);
    spt_ktensor* k = nullptr;
    ASSERT_EQ(spt_cpd_als(ctx.get(), x.get(), &opts, &k), SPT_OK);
    KtensorPtr holder(k);
    int iterations, converged, count;
    ASSERT_EQ(spt_ktensor_result(k, nullptr, &iterations, &converged), SPT_OK);
    ASSERT_EQ(spt_ktensor_history(k, &count, nullptr, nullptr), SPT_OK);
    EXPECT_EQ(iterations, 2);
    EXPECT_EQ(count, 2);
    EXPECT_EQ(converged, 1);
  }
}

namespace {
struct CallbackLog {
  std::vector<int> iterations;
  std::vector<double> fits;
  std::vector<double> deltas;
  int stop_at = 3;
};
int record_and_stop(void* data, int iteration, double fit, double delta, double seconds) {
  auto* log = static_cast<CallbackLog*>(data);
  log->iterations.push_back(iteration);
  log->fits.push_back(fit);
  log->deltas.push_back(delta);
  return iteration >= log->stop_at ? 1 : 0;
}
}  // namespace

TEST(CpAls, CallbackCanStopEarly) {
  CooPtr x = random_tensor(SPT_FLOAT64, {30, 20, 10}, 1000, 9);
  auto ctx = make_context();
  CallbackLog log;
  spt_cpd_options opts = default_options(4, 40, 0.0);
  opts.callback = record_and_stop;
  opts.callback_data = &log;
  spt_ktensor* k = nullptr;
  ASSERT_EQ(spt_cpd_als(ctx.get(), x.get(), &opts, &k), SPT_WARN_NOT_CONVERGED);
  KtensorPtr holder(k);
  int iterations, converged, count;
  const double* fits;
  ASSERT_EQ(spt_ktensor_result(k, nullptr, &iterations, &converged), SPT_OK);
  ASSERT_EQ(spt_ktensor_history(k, &count, &fits, nullptr), SPT_OK);
  EXPECT_EQ(iterations, 3);
  EXPECT_EQ(count, 3);
  EXPECT_EQ(converged, 0);
  ASSERT_EQ(log.iterations, (std::vector<int>{1, 2, 3}));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(log.fits[i], fits[i]);
  EXPECT_DOUBLE_EQ(log.deltas[0], std::abs(fits[0]));
  EXPECT_DOUBLE_EQ(log.deltas[2], std::abs(fits[2] - fits[1]));
}

TEST(CpAls, ReferenceAndCpuBackendsAgree) {
  CooPtr x = random_tensor(SPT_FLOAT64, {60, 25, 12, 30}, 5000, 31);
  std::vector<std::vector<double>> fit_runs;
  for (spt_backend backend : {SPT_BACKEND_REFERENCE, SPT_BACKEND_CPU}) {
    auto ctx = make_context(backend, 2);
    spt_cpd_options opts = default_options(6, 12, 0.0);
    opts.seed = 2024;
    spt_ktensor* k = nullptr;
    ASSERT_EQ(spt_cpd_als(ctx.get(), x.get(), &opts, &k), SPT_WARN_NOT_CONVERGED) << spt_last_error(ctx.get());
    KtensorPtr holder(k);
    int count;
    const double* fits;
    ASSERT_EQ(spt_ktensor_history(k, &count, &fits, nullptr), SPT_OK);
    fit_runs.emplace_back(fits, fits + count);
  }
  ASSERT_EQ(fit_runs[0].size(), fit_runs[1].size());
  for (size_t i = 0; i < fit_runs[0].size(); ++i) EXPECT_NEAR(fit_runs[0][i], fit_runs[1][i], 1e-10) << i;
}

TEST(CpAls, ArgumentValidation) {
  CooPtr x = random_tensor(SPT_FLOAT64, {6, 5, 4}, 50, 3);
  auto ctx = make_context();
  spt_ktensor* k = nullptr;
  auto expect_invalid = [&](const spt_cpd_options& opts, const std::string& fragment, const spt_coo* tensor) {
    k = nullptr;
    EXPECT_EQ(spt_cpd_als(ctx.get(), tensor, &opts, &k), SPT_ERR_INVALID_ARGUMENT) << fragment;
    EXPECT_EQ(k, nullptr);
    EXPECT_NE(std::string(spt_last_error(ctx.get())).find(fragment), std::string::npos)
        << "message: " << spt_last_error(ctx.get()) << "\nexpected to contain: " << fragment;
  };
  spt_cpd_options opts = default_options(0, 10, 1e-4);
  expect_invalid(opts, "rank must be at least 1", x.get());
  opts = default_options(2, 0, 1e-4);
  expect_invalid(opts, "max_iters", x.get());
  opts = default_options(2, 10, -1.0);
  expect_invalid(opts, "tol", x.get());
  opts = default_options(2, 10, std::nan(""));
  expect_invalid(opts, "tol", x.get());
  opts = default_options(2, 10, 1e-4);
  opts.struct_size = 0;
  expect_invalid(opts, "spt_cpd_options_init", x.get());
  opts = default_options(2, 10, 1e-4);
  opts.init = static_cast<spt_cpd_init>(7);
  expect_invalid(opts, "opts.init", x.get());

  // NULL arguments.
  opts = default_options(2, 10, 1e-4);
  EXPECT_EQ(spt_cpd_als(ctx.get(), nullptr, &opts, &k), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx.get())).find("tensor must not be NULL"), std::string::npos);
  EXPECT_EQ(spt_cpd_als(ctx.get(), x.get(), nullptr, &k), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_cpd_als(ctx.get(), x.get(), &opts, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx.get())).find("out must not be NULL"), std::string::npos);
  // With a NULL context the message goes to the thread slot.
  EXPECT_EQ(spt_cpd_als(nullptr, x.get(), &opts, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_thread_last_error()).find("spt_cpd_als"), std::string::npos);

  // Empty tensor, and an all-zero one.
  const spt_index dims[3] = {6, 5, 4};
  spt_coo* empty = nullptr;
  ASSERT_EQ(spt_coo_create(nullptr, SPT_FLOAT64, 3, dims, &empty), SPT_OK);
  CooPtr empty_holder(empty);
  expect_invalid(opts, "no nonzeros", empty);
  const spt_index zero_idx[3] = {1, 2, 3};
  const double zero_value = 0.0;
  spt_coo* zero = nullptr;
  ASSERT_EQ(spt_coo_create_from_arrays(nullptr, SPT_FLOAT64, 3, dims, 1, zero_idx, 1, 0, &zero_value, 0, &zero),
            SPT_OK);
  CooPtr zero_holder(zero);
  expect_invalid(opts, "norm 0", zero);
  const double inf_value = INFINITY;
  spt_coo* inf = nullptr;
  ASSERT_EQ(spt_coo_create_from_arrays(nullptr, SPT_FLOAT64, 3, dims, 1, zero_idx, 1, 0, &inf_value, 0, &inf),
            SPT_OK);
  CooPtr inf_holder(inf);
  expect_invalid(opts, "not finite", inf);

  // User init: missing, wrong shape, wrong dtype, non-finite.
  opts.init = SPT_CPD_INIT_USER;
  expect_invalid(opts, "init_factors is NULL", x.get());
  std::vector<MatrixPtr> good;
  std::vector<const spt_matrix*> ptrs;
  for (int m = 0; m < 3; ++m) {
    spt_matrix* mat = nullptr;
    ASSERT_EQ(spt_matrix_create(nullptr, SPT_FLOAT64, dims[m], 2, SPT_ROW_MAJOR, &mat), SPT_OK);
    good.emplace_back(mat);
    ptrs.push_back(mat);
  }
  spt_matrix* wrong_shape = nullptr;
  ASSERT_EQ(spt_matrix_create(nullptr, SPT_FLOAT64, 4, 2, SPT_ROW_MAJOR, &wrong_shape), SPT_OK);
  MatrixPtr wrong_shape_holder(wrong_shape);
  opts.init_factors = ptrs.data();
  ptrs[1] = wrong_shape;
  expect_invalid(opts, "init_factors[1] is 4 x 2, expected dims[1] x rank = 5 x 2", x.get());
  spt_matrix* wrong_dtype = nullptr;
  ASSERT_EQ(spt_matrix_create(nullptr, SPT_FLOAT32, 5, 2, SPT_ROW_MAJOR, &wrong_dtype), SPT_OK);
  MatrixPtr wrong_dtype_holder(wrong_dtype);
  ptrs[1] = wrong_dtype;
  expect_invalid(opts, "init_factors[1] is float32", x.get());
  ptrs[1] = nullptr;
  expect_invalid(opts, "init_factors[1] is NULL", x.get());
  ptrs[1] = good[1].get();
  void* data = nullptr;
  ASSERT_EQ(spt_matrix_data(good[2].get(), &data), SPT_OK);
  static_cast<double*>(data)[3] = NAN;
  expect_invalid(opts, "init_factors[2] has a non-finite value at (1, 1)", x.get());
}

TEST(CpAls, NonFiniteFactorsAreANumericalError) {
  // Huge float32 initial factors overflow the Gram matrices to Inf.
  CooPtr x = random_tensor(SPT_FLOAT32, {6, 5, 4}, 50, 3);
  const spt_index dims[3] = {6, 5, 4};
  std::vector<MatrixPtr> holders;
  std::vector<const spt_matrix*> ptrs;
  for (int m = 0; m < 3; ++m) {
    std::vector<float> values(dims[m] * 2, 1e30f);
    spt_matrix* mat = nullptr;
    ASSERT_EQ(spt_matrix_create_copy(nullptr, SPT_FLOAT32, dims[m], 2, SPT_ROW_MAJOR, values.data(), 2, &mat),
              SPT_OK);
    holders.emplace_back(mat);
    ptrs.push_back(mat);
  }
  auto ctx = make_context();
  spt_cpd_options opts = default_options(2, 5, 0.0);
  opts.init = SPT_CPD_INIT_USER;
  opts.init_factors = ptrs.data();
  spt_ktensor* k = nullptr;
  EXPECT_EQ(spt_cpd_als(ctx.get(), x.get(), &opts, &k), SPT_ERR_NUMERICAL);
  EXPECT_EQ(k, nullptr);
  const std::string message = spt_last_error(ctx.get());
  EXPECT_NE(message.find("iteration 1"), std::string::npos) << message;
  EXPECT_NE(message.find("mode 0"), std::string::npos) << message;
}

namespace {
void collect_log(void* data, int level, const char* message) {
  static_cast<std::vector<std::string>*>(data)->push_back(message);
}
}  // namespace

TEST(CpAls, RankAboveTensorRankUsesPseudoInverse) {
  // A 2 x 2 x 2 tensor with one nonzero: rank 4 makes the normal equations
  // singular; the pseudo-inverse fallback must keep everything finite, and
  // say so in the log.
  const spt_index dims[3] = {2, 2, 2};
  const spt_index idx[3] = {0, 1, 1};
  const double value = 3.0;
  spt_coo* raw = nullptr;
  ASSERT_EQ(spt_coo_create_from_arrays(nullptr, SPT_FLOAT64, 3, dims, 1, idx, 1, 0, &value, 0, &raw), SPT_OK);
  CooPtr x(raw);
  auto ctx = make_context();
  std::vector<std::string> messages;
  spt_context_set_verbosity(ctx.get(), 1);
  spt_context_set_log(ctx.get(), collect_log, &messages);
  spt_cpd_options opts = default_options(4, 5, 0.0);
  spt_ktensor* k = nullptr;
  ASSERT_EQ(spt_cpd_als(ctx.get(), x.get(), &opts, &k), SPT_WARN_NOT_CONVERGED) << spt_last_error(ctx.get());
  KtensorPtr holder(k);
  double fit;
  ASSERT_EQ(spt_ktensor_result(k, &fit, nullptr, nullptr), SPT_OK);
  EXPECT_TRUE(std::isfinite(fit));
  EXPECT_GT(fit, 0.999);  // a single nonzero is rank 1
  bool noted = false;
  for (const auto& m : messages) noted = noted || m.find("pseudo-inverse") != std::string::npos;
  EXPECT_TRUE(noted);
  Model got = read_model(k);
  for (const auto& f : got.factors)
    for (double v : f) EXPECT_TRUE(std::isfinite(v));
}

TEST(CpAls, KtensorNormMatchesDenseReconstruction) {
  const spt_index dims[3] = {5, 4, 3};
  spt_ktensor* raw = nullptr;
  ASSERT_EQ(spt_ktensor_create(nullptr, SPT_FLOAT64, 3, dims, 2, &raw), SPT_OK);
  KtensorPtr k(raw);
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  void* lambda = nullptr;
  spt_ktensor_lambda(raw, &lambda);
  static_cast<double*>(lambda)[0] = 2.5;
  static_cast<double*>(lambda)[1] = -0.5;
  for (uint32_t m = 0; m < 3; ++m) {
    spt_matrix* f = nullptr;
    spt_ktensor_factor(raw, m, &f);
    void* data = nullptr;
    spt_matrix_data(f, &data);
    for (spt_index i = 0; i < dims[m] * 2; ++i) static_cast<double*>(data)[i] = unit(rng);
  }
  Model model = read_model(raw);
  double dense = 0.0;
  for (const auto& c : grid(model.dims)) dense += model.entry(c) * model.entry(c);
  for (spt_backend backend : {SPT_BACKEND_REFERENCE, SPT_BACKEND_CPU}) {
    auto ctx = make_context(backend, 2);
    double norm = 0.0;
    ASSERT_EQ(spt_ktensor_norm(ctx.get(), raw, &norm), SPT_OK);
    EXPECT_NEAR(norm, std::sqrt(dense), 1e-12 * std::sqrt(dense));
  }
  double norm;
  EXPECT_EQ(spt_ktensor_norm(nullptr, nullptr, &norm), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_ktensor_norm(nullptr, raw, nullptr), SPT_ERR_INVALID_ARGUMENT);
}

TEST(CpAls, NoDensificationOrder8) {
  // Dims whose product (~6.6e43) is far beyond 2^64 while the factors stay
  // small (8 x 300000 x 4 doubles = 77 MB): nothing may size by the product.
  const uint32_t order = 8;
  const std::vector<spt_index> dims(order, 300000);
  double log2_product = 0.0;
  for (spt_index d : dims) log2_product += std::log2(static_cast<double>(d));
  ASSERT_GT(log2_product, 64.0);
  spt::test::RandomTensorSpec spec;
  spec.dims = dims;
  spec.nnz = 3000;
  spec.seed = 99;
  spec.skewed = false;
  CooPtr x(new spt_coo_s(spt::test::random_coo(SPT_FLOAT64, spec)));
  auto ctx = make_context();
  spt_cpd_options opts = default_options(4, 3, 0.0);
  spt_ktensor* k = nullptr;
  ASSERT_EQ(spt_cpd_als(ctx.get(), x.get(), &opts, &k), SPT_WARN_NOT_CONVERGED) << spt_last_error(ctx.get());
  KtensorPtr holder(k);
  double fit;
  int iterations;
  ASSERT_EQ(spt_ktensor_result(k, &fit, &iterations, nullptr), SPT_OK);
  EXPECT_EQ(iterations, 3);
  EXPECT_TRUE(std::isfinite(fit));
  EXPECT_LE(fit, 1.0);
  // The model's norm, from Grams only, is consistent with the fit:
  // 1 - fit = ||X - K|| / ||X|| >= | ||X|| - ||K|| | / ||X||.
  double knorm = 0.0, xnorm = 0.0;
  ASSERT_EQ(spt_ktensor_norm(ctx.get(), k, &knorm), SPT_OK);
  ASSERT_EQ(spt_coo_norm(ctx.get(), x.get(), &xnorm), SPT_OK);
  EXPECT_GE(1.0 - fit + 1e-12, std::abs(xnorm - knorm) / xnorm);
}

// ---------------------------------------------------------------------------
// Dense kernels: OpenMP against reference, and the normal-equation solver.
// ---------------------------------------------------------------------------

template <typename T>
class DenseKernels : public ::testing::Test {};
using DenseTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(DenseKernels, DenseTypes);

TYPED_TEST(DenseKernels, CpuMatchesReference) {
  using T = TypeParam;
  namespace ref = spt::kernels::reference;
  namespace cpu = spt::kernels::cpu;
  using spt::kernels::ColumnNorm;
  const double tol = spt::test::tolerance<T>() * 10;
  const spt::kernels::Exec seq{1}, par{2};
  for (spt_nnz rows : {spt_nnz(0), spt_nnz(1), spt_nnz(37), spt_nnz(9000)}) {
    // 19 and 33: partial Gram tiles at the edges (2 x 8 tiles in cpu::gram).
    for (spt_nnz rank : {spt_nnz(1), spt_nnz(5), spt_nnz(16), spt_nnz(19), spt_nnz(33)}) {
      auto a = spt::test::random_matrix<T>(rows, rank, rows * 31 + rank);
      auto b = spt::test::random_matrix<T>(rows, rank, rows * 17 + rank + 1);
      spt::DenseMatrix<T> g_ref(rank, rank), g_cpu(rank, rank);
      ref::gram(seq, a.cref(), g_ref.ref());
      cpu::gram(par, a.cref(), g_cpu.ref());
      for (spt_nnz i = 0; i < rank * rank; ++i)
        EXPECT_TRUE(spt::test::close(g_ref.values[i], g_cpu.values[i], tol * std::max<double>(1, rows)));
      for (spt_nnz r = 0; r < rank; ++r)
        for (spt_nnz s = 0; s < rank; ++s) {
          double exact = 0.0;
          for (spt_nnz i = 0; i < rows; ++i) exact += double(a(i, r)) * a(i, s);
          EXPECT_TRUE(spt::test::close(g_ref(r, s), exact, tol * std::max<double>(1, rows)));
          EXPECT_EQ(g_cpu(r, s), g_cpu(s, r));
        }
      // gram_wide: the sums in double, kept in double; gram: the same sums
      // rounded once to T (within half an ulp of T, plus double rounding).
      spt::DenseMatrix<double> w_ref(rank, rank), w_cpu(rank, rank);
      ref::gram_wide(seq, a.cref(), w_ref.ref());
      cpu::gram_wide(par, a.cref(), w_cpu.ref());
      for (spt_nnz r = 0; r < rank; ++r)
        for (spt_nnz s = 0; s < rank; ++s) {
          double exact = 0.0, magnitude = 0.0;
          for (spt_nnz i = 0; i < rows; ++i) {
            exact += double(a(i, r)) * a(i, s);
            magnitude += std::abs(double(a(i, r)) * a(i, s));
          }
          const double slack = 1e-13 * magnitude;
          EXPECT_NEAR(w_ref(r, s), exact, slack) << rows << " x " << rank << " (" << r << ", " << s << ")";
          EXPECT_NEAR(w_cpu(r, s), exact, slack) << rows << " x " << rank << " (" << r << ", " << s << ")";
          EXPECT_NEAR(double(g_cpu(r, s)), exact, std::numeric_limits<T>::epsilon() * std::abs(exact) + slack)
              << rows << " x " << rank << " (" << r << ", " << s << ")";
        }
      for (ColumnNorm kind : {ColumnNorm::two, ColumnNorm::max_abs}) {
        std::vector<double> n_ref(rank), n_cpu(rank);
        ref::column_norms(seq, a.cref(), kind, n_ref.data());
        cpu::column_norms(par, a.cref(), kind, n_cpu.data());
        for (spt_nnz r = 0; r < rank; ++r) EXPECT_NEAR(n_ref[r], n_cpu[r], 1e-12 * std::max(1.0, n_ref[r]));
      }
      std::vector<double> d_ref(rank), d_cpu(rank);
      ref::column_dots(seq, a.cref(), b.cref(), d_ref.data());
      cpu::column_dots(par, a.cref(), b.cref(), d_cpu.data());
      for (spt_nnz r = 0; r < rank; ++r) EXPECT_NEAR(d_ref[r], d_cpu[r], 1e-12 * std::max(1.0, std::abs(d_ref[r])));

      // SPD system: L from a well-conditioned Gram-like matrix.
      spt::DenseMatrix<T> lower(rank, rank);
      for (spt_nnz r = 0; r < rank; ++r)
        for (spt_nnz s = 0; s <= r; ++s) lower(r, s) = r == s ? T(2) + T(r % 3) : T(0.25) * T((r + s) % 3) - T(0.2);
      auto x_ref = a, x_cpu = a;
      ref::cholesky_solve_rows(seq, lower.cref(), x_ref.ref());
      cpu::cholesky_solve_rows(par, lower.cref(), x_cpu.ref());
      if (rows * rank > 0)  // empty matrices have no data pointer to compare
        EXPECT_EQ(0, std::memcmp(x_ref.values.data(), x_cpu.values.data(), sizeof(T) * rows * rank));
      // x * L * L^T must give back a.
      for (spt_nnz i = 0; i < rows; i += 97)
        for (spt_nnz c = 0; c < rank; ++c) {
          double back = 0.0;
          for (spt_nnz r = 0; r < rank; ++r) {
            double llt = 0.0;  // (L L^T)(r, c)
            for (spt_nnz j = 0; j <= std::min(r, c); ++j) llt += double(lower(r, j)) * lower(c, j);
            back += double(x_ref(i, r)) * llt;
          }
          EXPECT_NEAR(back, a(i, c), 100 * tol);
        }

      auto m_ref = a, m_cpu = a;
      ref::multiply_rows(seq, g_ref.cref(), m_ref.ref());
      cpu::multiply_rows(par, g_ref.cref(), m_cpu.ref());
      for (spt_nnz i = 0; i < rows * rank; ++i)
        EXPECT_TRUE(spt::test::close(m_ref.values[i], m_cpu.values[i], tol * std::max<double>(1, rows)));

      std::vector<T> divisors(rank);
      for (spt_nnz r = 0; r < rank; ++r) divisors[r] = r == 1 ? T(0) : T(r + 2);
      auto s_ref = a, s_cpu = a;
      ref::divide_columns(seq, s_ref.ref(), divisors.data());
      cpu::divide_columns(par, s_cpu.ref(), divisors.data());
      if (rows * rank > 0)
        EXPECT_EQ(0, std::memcmp(s_ref.values.data(), s_cpu.values.data(), sizeof(T) * rows * rank));
      for (spt_nnz i = 0; i < rows; ++i)
        for (spt_nnz r = 0; r < rank; ++r) EXPECT_EQ(s_ref(i, r), r == 1 ? a(i, r) : a(i, r) / T(r + 2));
    }
  }
}

TYPED_TEST(DenseKernels, ColumnNormsPropagateNaN) {
  using T = TypeParam;
  auto a = spt::test::random_matrix<T>(10000, 3, 5);
  a(7000, 1) = std::numeric_limits<T>::quiet_NaN();
  for (auto kind : {spt::kernels::ColumnNorm::two, spt::kernels::ColumnNorm::max_abs}) {
    std::vector<double> n(3);
    spt::kernels::cpu::column_norms(spt::kernels::Exec{2}, a.cref(), kind, n.data());
    EXPECT_TRUE(std::isfinite(n[0]));
    EXPECT_TRUE(std::isnan(n[1]));
    spt::kernels::reference::column_norms(spt::kernels::Exec{1}, a.cref(), kind, n.data());
    EXPECT_TRUE(std::isnan(n[1]));
  }
}

TEST(NormalEquations, CholeskyAndPseudoInverse) {
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CPU;
  // SPD: Y = A^T A + I for random A; check X Y = B.
  const spt_index rank = 4;
  auto a = spt::test::random_matrix<double>(10, rank, 1);
  spt::DenseMatrix<double> y(rank, rank);
  spt::kernels::reference::gram(spt::kernels::Exec{1}, a.cref(), y.ref());
  for (spt_index r = 0; r < rank; ++r) y(r, r) += 1.0;
  auto b = spt::test::random_matrix<double>(50, rank, 2);
  auto x = b;
  spt::NormalEquations<double> solver(rank);
  EXPECT_FALSE(solver.solve(ctx, y.cref(), x.ref()));
  for (spt_nnz i = 0; i < 50; ++i)
    for (spt_index c = 0; c < rank; ++c) {
      double s = 0.0;
      for (spt_index r = 0; r < rank; ++r) s += x(i, r) * y(r, c);
      EXPECT_NEAR(s, b(i, c), 1e-12);
    }
  // Singular PSD: Y = v v^T (rank 1). pinv(Y) = v v^T / |v|^4, so
  // X = B v v^T / |v|^4.
  const double v[rank] = {1.0, 2.0, -1.0, 0.5};
  double v2 = 0.0;
  for (double e : v) v2 += e * e;
  for (spt_index r = 0; r < rank; ++r)
    for (spt_index s = 0; s < rank; ++s) y(r, s) = v[r] * v[s];
  x = b;
  EXPECT_TRUE(solver.solve(ctx, y.cref(), x.ref()));
  for (spt_nnz i = 0; i < 50; ++i) {
    double bv = 0.0;
    for (spt_index r = 0; r < rank; ++r) bv += b(i, r) * v[r];
    for (spt_index c = 0; c < rank; ++c) EXPECT_NEAR(x(i, c), bv * v[c] / (v2 * v2), 1e-12);
  }
  // All-zero Y (pyttb: zero solution).
  for (auto& e : y.values) e = 0.0;
  x = b;
  EXPECT_TRUE(solver.solve(ctx, y.cref(), x.ref()));
  for (double e : x.values) EXPECT_EQ(e, 0.0);
}

// The one CP-ALS loop (spt::run_cp_als) over scripted steps: it calls the
// steps in the documented order, chooses the solve branch and the
// normalisation rule, computes the fit from the steps' terms, asks for the
// exact <X, M> only when its noise matters, and reports breakdowns with
// the mode, the iteration and the steps' solver library. No backend runs.
namespace {

struct ScriptedSteps final : spt::dispatch::CpAlsSteps<double> {
  std::vector<std::string> calls;
  spt::dispatch::CpAlsNormalInfo info_mode1{false, 0, 1.0, 1.0};  // mode 1's normal_matrix answer
  int eigen_info = 0;                  // what solve_pseudo_inverse answers
  int bad_component_mode0 = -1;        // what non_finite_component(0) answers
  spt::dispatch::CpAlsFitTerms terms{2.0, 1.0, 0.0};
  std::optional<double> exact;         // what exact_inner answers

  const char* name() const override { return "scripted"; }
  const char* solver_library() const override { return "ScriptLib"; }
  void start(spt_ktensor_s&) override { calls.push_back("start"); }
  void mttkrp(uint32_t m) override { calls.push_back("mttkrp" + std::to_string(m)); }
  spt::dispatch::CpAlsNormalInfo normal_matrix(uint32_t m) override {
    calls.push_back("normal" + std::to_string(m));
    return m == 1 ? info_mode1 : spt::dispatch::CpAlsNormalInfo{false, 0, 1.0, 1.0};
  }
  void solve_cholesky(uint32_t m) override { calls.push_back("cholesky" + std::to_string(m)); }
  int solve_pseudo_inverse(uint32_t m) override {
    calls.push_back("pinv" + std::to_string(m));
    return eigen_info;
  }
  void normalise(uint32_t m, bool first) override {
    calls.push_back("normalise" + std::to_string(m) + (first ? "first" : ""));
  }
  int non_finite_component(uint32_t m) override { return m == 0 ? bad_component_mode0 : -1; }
  void gram(uint32_t m) override { calls.push_back("gram" + std::to_string(m)); }
  spt::dispatch::CpAlsFitTerms fit_terms() override {
    calls.push_back("fit");
    return terms;
  }
  std::optional<double> exact_inner() override {
    calls.push_back("exact");
    return exact;
  }
  void finish(spt_ktensor_s&) override { calls.push_back("finish"); }
};

spt_cpd_options scripted_options(int max_iters) {
  spt_cpd_options opts;
  spt_cpd_options_init(&opts);
  opts.rank = 1;
  opts.max_iters = max_iters;
  opts.tol = 1e-4;
  return opts;
}

std::string joined(const std::vector<std::string>& calls) {
  std::string out;
  for (const std::string& c : calls) out += (out.empty() ? "" : " ") + c;
  return out;
}

}  // namespace

TEST(CpAlsLoop, CallsTheStepsInOrderAndComputesTheFit) {
  spt_context_s ctx;
  std::vector<std::string> messages;
  ctx.verbosity = 1;
  ctx.log = collect_log;
  ctx.log_data = &messages;
  ScriptedSteps steps;
  steps.info_mode1 = {false, 2, 1.0, 0.0};  // mode 1 not positive definite: the pseudo-inverse
  spt_ktensor_s k;
  // ||X||^2 = 4, <X,M> = 2, ||M||^2 = 1: fit = 1 - sqrt(4 + 1 - 4) / 2 = 0.5
  // in every sweep, so the second sweep converges.
  const spt_status status = spt::run_cp_als<double>(ctx, steps, {3, 4}, 4.0, scripted_options(5), k);
  EXPECT_EQ(status, SPT_OK);
  const std::string sweep1 = "mttkrp0 normal0 cholesky0 normalise0first gram0 mttkrp1 normal1 pinv1 normalise1first gram1 fit";
  const std::string sweep2 = "mttkrp0 normal0 cholesky0 normalise0 gram0 mttkrp1 normal1 pinv1 normalise1 gram1 fit";
  EXPECT_EQ(joined(steps.calls), "start " + sweep1 + " " + sweep2 + " finish");
  ASSERT_EQ(k.fit_history.size(), 2u);
  EXPECT_DOUBLE_EQ(k.fit_history[0], 0.5);
  EXPECT_DOUBLE_EQ(k.fit, 0.5);
  EXPECT_EQ(k.iterations, 2);
  EXPECT_EQ(k.converged, 1);
  int notes = 0;
  for (const std::string& m : messages) notes += m.find("not positive definite (Cholesky pivot 2 failed)") != std::string::npos;
  EXPECT_EQ(notes, 2);  // once per sweep
}

TEST(CpAlsLoop, SingularMatrixTakesThePseudoInverseAndAFailedEigenSolverIsNumerical) {
  spt_context_s ctx;
  ScriptedSteps steps;
  steps.info_mode1 = {false, 0, 1.0, 1e-20};  // factored, but rcond below eps
  steps.eigen_info = 3;
  spt_ktensor_s k;
  try {
    spt::run_cp_als<double>(ctx, steps, {3, 4}, 4.0, scripted_options(5), k);
    FAIL() << "a failed eigen-solver must stop CP-ALS";
  } catch (const spt::Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_NUMERICAL);
    EXPECT_NE(std::string(e.what()).find("mode 1, iteration 1: the eigen-decomposition of the 1 x 1"),
              std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(ScriptLib info 3)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(steps.calls.back(), "pinv1");
}

TEST(CpAlsLoop, NonFiniteNormalMatrixAndFactorColumnsAreNumerical) {
  spt_context_s ctx;
  ScriptedSteps steps;
  steps.bad_component_mode0 = 0;
  spt_ktensor_s k;
  try {
    spt::run_cp_als<double>(ctx, steps, {3, 4}, 4.0, scripted_options(5), k);
    FAIL() << "a non-finite factor column must stop CP-ALS";
  } catch (const spt::Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_NUMERICAL);
    EXPECT_NE(std::string(e.what()).find("factor of mode 0 (component 0) in iteration 1"), std::string::npos)
        << e.what();
  }
  // Checked after the next step that returns scalars (normal1), before the solve.
  EXPECT_EQ(steps.calls.back(), "normal1");
  ScriptedSteps overflow;
  overflow.info_mode1 = {true, 0, 0.0, 0.0};
  try {
    spt::run_cp_als<double>(ctx, overflow, {3, 4}, 4.0, scripted_options(5), k);
    FAIL() << "a non-finite normal-equation matrix must stop CP-ALS";
  } catch (const spt::Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_NUMERICAL);
    EXPECT_NE(std::string(e.what()).find("normal-equation matrix for mode 1 became non-finite in iteration 1"),
              std::string::npos) << e.what();
  }
}

TEST(CpAlsLoop, ExactInnerOnlyWhenItsNoiseMovesTheFit) {
  spt_context_s ctx;
  ScriptedSteps quiet;
  quiet.terms.inner_error = 1e-12;  // moves the fit by about 1e-12: ignored
  spt_ktensor_s k;
  spt::run_cp_als<double>(ctx, quiet, {3, 4}, 4.0, scripted_options(2), k);
  for (const std::string& c : quiet.calls) EXPECT_NE(c, "exact");
  ScriptedSteps noisy;
  noisy.terms.inner_error = 1e-3;
  noisy.exact = 1.5;  // fit = 1 - sqrt(4 + 1 - 3) / 2
  spt::run_cp_als<double>(ctx, noisy, {3, 4}, 4.0, scripted_options(2), k);
  int exact_calls = 0;
  for (const std::string& c : noisy.calls) exact_calls += c == "exact";
  EXPECT_EQ(exact_calls, 2);  // once per sweep
  ASSERT_EQ(k.fit_history.size(), 2u);
  EXPECT_DOUBLE_EQ(k.fit_history[0], 1.0 - std::sqrt(2.0) / 2.0);
  // Steps that cannot sum exactly keep the fit from their terms.
  ScriptedSteps unable;
  unable.terms.inner_error = 1e-3;
  spt::run_cp_als<double>(ctx, unable, {3, 4}, 4.0, scripted_options(1), k);
  EXPECT_DOUBLE_EQ(k.fit_history[0], 0.5);
}
