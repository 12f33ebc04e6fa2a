#include "gcp_test_util.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "algo/gcp_opt.hpp"
#include "core/ktensor.hpp"

namespace spt::test {

uint64_t entry_count(const std::vector<spt_index>& dims) {
  uint64_t n = 1;
  for (spt_index d : dims) n *= d;
  return n;
}

std::vector<double> data_for(spt_gcp_loss loss, uint64_t entries, uint64_t seed, double zero_share) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> v(entries);
  for (double& x : v) {
    const bool zero = u(gen) < zero_share;
    switch (loss) {
      case SPT_GCP_LOSS_BERNOULLI_ODDS:
      case SPT_GCP_LOSS_BERNOULLI_LOGIT: x = zero ? 0.0 : 1.0; break;
      case SPT_GCP_LOSS_POISSON:
      case SPT_GCP_LOSS_POISSON_LOG: x = zero ? 0.0 : std::floor(1 + 4 * u(gen)); break;
      case SPT_GCP_LOSS_RAYLEIGH:
      case SPT_GCP_LOSS_GAMMA: x = zero ? 0.0 : 0.1 + 2 * u(gen); break;
      default: x = zero ? 0.0 : 4 * u(gen) - 2; break;
    }
  }
  return v;
}

std::vector<DenseMatrix<double>> positive_factors(const std::vector<spt_index>& dims, spt_index rank, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(0.2, 1.2);
  std::vector<DenseMatrix<double>> f;
  for (spt_index d : dims) {
    DenseMatrix<double> m(d, rank);
    for (auto& v : m.values) v = u(gen) / std::sqrt(double(rank));
    f.push_back(std::move(m));
  }
  return f;
}

std::vector<double> planted(const std::vector<spt_index>& dims, spt_index rank, uint64_t seed) {
  const auto f = positive_factors(dims, rank, seed);
  std::vector<double> v(entry_count(dims));
  std::vector<spt_index> idx(dims.size());
  for (uint64_t e = 0; e < v.size(); ++e) {
    uint64_t rest = e;
    for (size_t n = 0; n < dims.size(); ++n) idx[n] = rest % dims[n], rest /= dims[n];
    double m = 0;
    for (spt_index r = 0; r < rank; ++r) {
      double p = 1;
      for (size_t n = 0; n < dims.size(); ++n) p *= f[n](idx[n], r);
      m += p;
    }
    v[e] = m;
  }
  return v;
}

double sum_of_squares(const std::vector<double>& values) {
  double s = 0;
  for (double v : values) s += v * v;
  return s;
}

spt_coo* coo_from_full(const std::vector<spt_index>& dims, const std::vector<double>& full, spt_dtype dtype) {
  const uint32_t order = static_cast<uint32_t>(dims.size());
  std::vector<uint64_t> linear;
  for (uint64_t e = 0; e < full.size(); ++e)
    if (full[e] != 0.0) linear.push_back(e);
  const spt_nnz nnz = linear.size();
  std::vector<spt_index> ind(static_cast<size_t>(nnz) * order);
  std::vector<double> vals(nnz);
  std::vector<float> vals32(nnz);
  for (spt_nnz k = 0; k < nnz; ++k) {
    uint64_t rest = linear[k];
    for (uint32_t m = 0; m < order; ++m) {
      ind[m * nnz + k] = static_cast<spt_index>(rest % dims[m]);
      rest /= dims[m];
    }
    vals[k] = full[linear[k]];
    vals32[k] = static_cast<float>(vals[k]);
  }
  spt_coo* x = nullptr;
  const void* values = dtype == SPT_FLOAT64 ? static_cast<const void*>(vals.data()) : vals32.data();
  EXPECT_EQ(spt_coo_create_from_arrays(nullptr, dtype, order, dims.data(), nnz, ind.data(), nnz, 0, values, 0, &x),
            SPT_OK);
  return x;
}

spt_coo* random_gcp_coo(spt_gcp_loss loss, const std::vector<spt_index>& dims, uint64_t seed, double zero_share) {
  return coo_from_full(dims, data_for(loss, entry_count(dims), seed, zero_share));
}

spt_gcp_options gcp_options(spt_gcp_loss loss, spt_index rank) {
  spt_gcp_options opts;
  spt_gcp_options_init(&opts);
  opts.loss = loss;
  opts.rank = rank;
  return opts;
}

GcpRun run_gcp_on(spt_context* ctx, const spt_coo* x, const spt_gcp_options& opts, bool keep_model) {
  GcpRun run;
  spt_ktensor* k = nullptr;
  run.status = spt_gcp_opt(ctx, x, &opts, &k);
  EXPECT_TRUE(run.status == SPT_OK || run.status == SPT_WARN_NOT_CONVERGED) << spt_last_error(ctx);
  if (!k) return run;
  int count = 0;
  const double* fits = nullptr;
  spt_ktensor_history(k, &count, &fits, nullptr);
  run.history.assign(fits, fits + count);
  spt_ktensor_result(k, &run.objective, &run.iterations, &run.converged);
  for (uint32_t m = 0; m < k->order(); ++m) {
    const double* f = k->factors[m]->ptr<double>();
    run.factors.emplace_back(f, f + size_t{k->dims[m]} * k->rank);
  }
  if (keep_model) run.model = k;
  else spt_ktensor_free(k);
  return run;
}

void expect_default_lower_bound_holds(const GcpRun& run, spt_gcp_loss loss) {
  const double bound = algo::gcp_default_lower_bound(loss);
  for (const auto& f : run.factors)
    for (double v : f) EXPECT_GE(v, bound) << "loss " << loss;
}

}  // namespace spt::test
