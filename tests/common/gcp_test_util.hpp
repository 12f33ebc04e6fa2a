// Helpers shared by the GCP tests (test_gcp.cpp, test_gcp_sgd.cpp): the
// losses, data each loss accepts, dense data as a COO tensor, planted
// low-rank tensors, and one spt_gcp_opt run with its model copied out.
#pragma once

#include <cstdint>
#include <vector>

#include "core/coo.hpp"
#include "core/matrix.hpp"
#include "sptensor/gcp.h"

namespace spt::test {

// Every loss spt_gcp_opt knows.
inline constexpr spt_gcp_loss kAllLosses[] = {
    SPT_GCP_LOSS_GAUSSIAN, SPT_GCP_LOSS_BERNOULLI_ODDS, SPT_GCP_LOSS_BERNOULLI_LOGIT, SPT_GCP_LOSS_POISSON,
    SPT_GCP_LOSS_POISSON_LOG, SPT_GCP_LOSS_RAYLEIGH, SPT_GCP_LOSS_GAMMA, SPT_GCP_LOSS_HUBER};

// The number of entries of a dense tensor of `dims`.
uint64_t entry_count(const std::vector<spt_index>& dims);

// `entries` values the loss accepts, in linear order (mode 0 fastest), a
// share of about `zero_share` of them zeros.
std::vector<double> data_for(spt_gcp_loss loss, uint64_t entries, uint64_t seed, double zero_share = 0.3);

// Factors in (0.2, 1.2) / sqrt(rank), so that every loss's model values stay
// inside its domain.
std::vector<DenseMatrix<double>> positive_factors(const std::vector<spt_index>& dims, spt_index rank, uint64_t seed);

// The rank-`rank` tensor of positive_factors(dims, rank, seed), dense, in
// linear order.
std::vector<double> planted(const std::vector<spt_index>& dims, spt_index rank, uint64_t seed);

// The sum of the squares of `values`.
double sum_of_squares(const std::vector<double>& values);

// A COO tensor of `dtype` (owned by the caller) holding the nonzeros of
// `full` (linear order).
spt_coo* coo_from_full(const std::vector<spt_index>& dims, const std::vector<double>& full,
                       spt_dtype dtype = SPT_FLOAT64);

// A float64 COO tensor (owned by the caller) of dims holding the nonzeros of
// data_for(loss, entry_count(dims), seed, zero_share).
spt_coo* random_gcp_coo(spt_gcp_loss loss, const std::vector<spt_index>& dims, uint64_t seed,
                        double zero_share = 0.3);

// spt_gcp_options at their defaults but for `loss` and `rank`.
spt_gcp_options gcp_options(spt_gcp_loss loss, spt_index rank);

// One spt_gcp_opt run: its status and the model's objective history, result
// and float64 factors (dims[m] x rank, row-major).
struct GcpRun {
  spt_status status = SPT_OK;
  std::vector<double> history;
  std::vector<std::vector<double>> factors;
  double objective = 0.0;  // GCP-SGD: the kept objective estimate
  int iterations = 0;      // GCP-SGD: epochs
  int converged = 0;
  spt_ktensor* model = nullptr;  // only when kept: the caller frees it
};

// Runs spt_gcp_opt on `ctx` (which must succeed or stop unconverged) and
// copies the model out; the model is then freed, or left in run.model when
// `keep_model`.
GcpRun run_gcp_on(spt_context* ctx, const spt_coo* x, const spt_gcp_options& opts, bool keep_model = false);

// Every factor value of the run at or above the loss's default lower bound.
void expect_default_lower_bound_holds(const GcpRun& run, spt_gcp_loss loss);

}  // namespace spt::test
