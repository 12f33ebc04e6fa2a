// GCP-SGD: generalized CP by stochastic gradients (pyttb gcp_opt with its
// Adam solver and stratified GCPSampler); reached through algo::gcp_opt
// with optimizer SPT_GCP_OPTIMIZER_SGD (include/sptensor/gcp.h).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/ktensor.hpp"
#include "sptensor/gcp.h"

namespace spt::algo {

// The nonzeros of a sparse tensor as the stratified sampler needs them:
// linear indices (mode 0 fastest) sorted and distinct (repeated coordinates
// summed, entries that sum to 0 dropped) with their values.
struct GcpSparseData {
  std::vector<spt_index> dims;
  uint64_t entries = 0;  // prod(dims)
  std::vector<uint64_t> linear;
  std::vector<double> values;
  // Bucket index over `linear`: the nonzeros of bucket b (linear indices
  // with index >> bucket_shift == b) are linear[bucket_start[b] ..
  // bucket_start[b + 1]); a zero test then reads one or two cache lines
  // instead of a binary search over every nonzero. Empty: no index.
  std::vector<uint64_t> bucket_start;
  uint32_t bucket_shift = 0;

  uint64_t nnz() const { return linear.size(); }
  uint64_t zeros() const { return entries - linear.size(); }
  bool is_nonzero(uint64_t index) const;
  // Coordinates of linear index `index` into coords[0..order).
  void coordinates(uint64_t index, spt_index* coords) const;
};

// Builds it from x (float64; prod(dims) below 2^63, else UNSUPPORTED).
GcpSparseData gcp_sparse_data(const spt_coo_s& x, int threads);

// Sample sizes in effect: opts' counts, or pyttb's defaults where 0, capped
// as pyttb caps them (nonzeros at nnz, zeros at the zero count).
struct GcpSampleSizes {
  uint64_t gradient_nonzeros = 0, gradient_zeros = 0, function_nonzeros = 0, function_zeros = 0;
};
GcpSampleSizes gcp_sample_sizes(const GcpSparseData& data, const spt_gcp_options& opts);

// A stratified sample: `nonzeros` nonzeros drawn uniformly with replacement
// (all of them, in order, when nonzeros == nnz, as pyttb), weight
// nnz / nonzeros, then `zeros` zero coordinates drawn uniformly (coordinates
// of nonzeros rejected and drawn again), weight zeros / count. coords[n]
// (resized) holds mode n's indices. Draws come from gen in a fixed order, so
// the sample does not depend on the thread count.
struct GcpDrawnSample {
  std::vector<std::vector<spt_index>> coords;
  std::vector<double> values;
  std::vector<double> weights;
  size_t size() const { return values.size(); }
};
void gcp_draw_stratified(const GcpSparseData& data, uint64_t nonzeros, uint64_t zeros, std::mt19937_64& gen,
                         int threads, GcpDrawnSample& out);

// Runs GCP-SGD into `out` (opts validated by gcp_opt except the SGD fields,
// checked here). Returns SPT_OK when it stopped by max_fails or f_est_tol,
// SPT_WARN_NOT_CONVERGED otherwise. Throws spt::Error.
spt_status gcp_sgd(spt_context_s& ctx, const spt_coo_s& x, const spt_gcp_options& opts, spt_ktensor_s& out);

}  // namespace spt::algo
