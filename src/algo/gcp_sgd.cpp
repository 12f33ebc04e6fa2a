// GCP-SGD (pyttb gcp_opt with the Adam solver and the stratified
// GCPSampler). Each Adam step draws a stratified sample of nonzeros and
// zeros, evaluates the loss derivative at the sampled entries (the GCP
// sample kernel, kernels/gcp.hpp) and forms the gradient of each factor as
// the MTTKRP of the sampled derivative tensor (a small COO) with the other
// factors, through the dispatcher's COO MTTKRP so that any backend with that
// kernel runs it. The objective is estimated after each epoch from one fixed
// stratified sample drawn at the start.
#include "algo/gcp_sgd.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "algo/gcp_opt.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "dispatch/dispatch_gcp.hpp"

namespace spt::algo {

namespace {

// pyttb GCPSampler defaults: gradient samples per stratum
// max(1000, ceil(3 nnz / max_iters)) with its max_iters = 1000, function
// samples max(ceil(nnz / 100), 100000).
constexpr uint64_t kSamplerIters = 1000;
constexpr uint64_t kMinGradientSamples = 1000;
constexpr uint64_t kMinFunctionSamples = 100000;
// Zero draws give up after this many times the expected number of draws
// (plus a constant), keeping the zeros found (only reachable when almost
// every entry is a nonzero).
constexpr double kZeroDrawSlack = 100.0;
// Element-wise loops over the factors go parallel from this many entries.
constexpr size_t kParallelEntries = 32768;
// A step's parallel regions (sampling, the sample kernel, the MTTKRPs) pay
// only with enough samples per thread; smaller runs use fewer threads.
constexpr uint64_t kSamplesPerThread = 16384;

// Sets the context's thread count and backend for the scope (the run's
// kernels read them), restoring both after.
class ScopedRunSettings {
 public:
  ScopedRunSettings(spt_context_s& ctx, int threads, spt_backend backend)
      : ctx_(ctx), saved_threads_(ctx.threads), saved_backend_(ctx.backend) {
    ctx.threads = threads;
    ctx.backend = backend;
  }
  ~ScopedRunSettings() {
    ctx_.threads = saved_threads_;
    ctx_.backend = saved_backend_;
  }
  ScopedRunSettings(const ScopedRunSettings&) = delete;
  ScopedRunSettings& operator=(const ScopedRunSettings&) = delete;

 private:
  spt_context_s& ctx_;
  int saved_threads_;
  spt_backend saved_backend_;
};

// Uniform integer in [0, n) from one 64-bit draw (multiply-shift).
inline uint64_t uniform_below(std::mt19937_64& gen, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(gen()) * n) >> 64);
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

void validate_sgd_options(const spt_gcp_options& opts) {
  if (opts.missing)
    fail(SPT_ERR_UNSUPPORTED, "missing entries are not supported with GCP-SGD (as in pyttb); use the L-BFGS-B "
                              "optimizer (GCP-OPT) for CP with missing entries");
  require(std::isfinite(opts.rate) && opts.rate > 0, "rate must be finite and > 0, got ", opts.rate);
  require(opts.decay > 0 && opts.decay <= 1, "decay must be in (0, 1], got ", opts.decay);
  require(opts.max_fails >= 0, "max_fails must be >= 0, got ", opts.max_fails);
  require(opts.epoch_iters >= 1, "epoch_iters must be at least 1, got ", opts.epoch_iters);
  require(!std::isnan(opts.f_est_tol), "f_est_tol must not be NaN");
  require(opts.beta1 >= 0 && opts.beta1 < 1, "beta1 must be in [0, 1), got ", opts.beta1);
  require(opts.beta2 >= 0 && opts.beta2 < 1, "beta2 must be in [0, 1), got ", opts.beta2);
  require(std::isfinite(opts.epsilon) && opts.epsilon > 0, "epsilon must be finite and > 0, got ", opts.epsilon);
}

// INVALID_ARGUMENT naming the first nonzero the loss cannot take.
void require_valid_nonzeros(const GcpSparseData& data, spt_gcp_loss loss) {
  for (uint64_t e = 0; e < data.nnz(); ++e) gcp_require_valid_value(loss, data.values[e], data.dims, data.linear[e]);
}

}  // namespace

bool GcpSparseData::is_nonzero(uint64_t index) const {
  if (bucket_start.empty()) return std::binary_search(linear.begin(), linear.end(), index);
  const uint64_t b = index >> bucket_shift;
  const uint64_t first = bucket_start[b], last = bucket_start[b + 1];
  return first != last && std::binary_search(linear.begin() + static_cast<std::ptrdiff_t>(first),
                                             linear.begin() + static_cast<std::ptrdiff_t>(last), index);
}

void GcpSparseData::coordinates(uint64_t index, spt_index* coords) const {
  for (size_t n = 0; n < dims.size(); ++n) {
    coords[n] = static_cast<spt_index>(index % dims[n]);
    index /= dims[n];
  }
}

GcpSparseData gcp_sparse_data(const spt_coo_s& x, int threads) {
  if (x.dtype() != SPT_FLOAT64)
    fail(SPT_ERR_UNSUPPORTED, "GCP runs in float64 only; convert the float32 tensor (spt_coo_convert_dtype)");
  GcpSparseData data;
  data.dims = x.dims;
  uint64_t entries = 1;
  for (spt_index d : x.dims) {
    const bool overflow = d != 0 && entries > (uint64_t{1} << 63) / d;
    if (overflow || entries * d >= (uint64_t{1} << 63))
      fail(SPT_ERR_UNSUPPORTED, "GCP-SGD numbers the entries of the full tensor with 63-bit linear indices; this "
                                "tensor has 2^63 entries or more");
    entries *= d;
  }
  require(entries >= 1, "GCP needs a tensor with at least one entry (a dimension is 0)");
  data.entries = entries;
  const uint32_t order = x.order();
  const spt_nnz nnz = x.nnz;
  require_fits_memory(nnz * 36, [] { return std::string("GCP-SGD's sorted copy of the nonzeros"); });
  std::vector<std::pair<uint64_t, double>> entries_sorted(nnz);
  const double* v = x.values<double>();
#pragma omp parallel for schedule(static) num_threads(std::max(1, threads)) if (threads > 1 && nnz > 65536)
  for (spt_nnz e = 0; e < nnz; ++e) {
    uint64_t idx = 0, stride = 1;
    for (uint32_t n = 0; n < order; ++n) {
      idx += stride * x.ind[n][e];
      stride *= x.dims[n];
    }
    entries_sorted[e] = {idx, v[e]};
  }
  std::sort(entries_sorted.begin(), entries_sorted.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  data.linear.reserve(nnz);
  data.values.reserve(nnz);
  for (spt_nnz e = 0; e < nnz;) {
    const uint64_t idx = entries_sorted[e].first;
    double sum = 0.0;
    for (; e < nnz && entries_sorted[e].first == idx; ++e) sum += entries_sorted[e].second;
    if (sum == 0.0) continue;  // a zero is sampled as a zero
    data.linear.push_back(idx);
    data.values.push_back(sum);
  }
  // About one bucket per two nonzeros (8 bytes each).
  const uint64_t target = std::max<uint64_t>(1, data.linear.size() / 2);
  while (((entries - 1) >> data.bucket_shift) >= target) ++data.bucket_shift;
  const uint64_t buckets = ((entries - 1) >> data.bucket_shift) + 1;
  data.bucket_start.assign(buckets + 1, 0);
  for (uint64_t idx : data.linear) ++data.bucket_start[(idx >> data.bucket_shift) + 1];
  for (uint64_t b = 0; b < buckets; ++b) data.bucket_start[b + 1] += data.bucket_start[b];
  return data;
}

GcpSampleSizes gcp_sample_sizes(const GcpSparseData& data, const spt_gcp_options& opts) {
  const uint64_t nnz = data.nnz(), zeros = data.zeros();
  const uint64_t gradient_default = std::max(kMinGradientSamples, ceil_div(3 * nnz, kSamplerIters));
  const uint64_t function_default = std::max(ceil_div(nnz, 100), kMinFunctionSamples);
  GcpSampleSizes s;
  s.gradient_nonzeros = opts.gradient_nonzeros ? opts.gradient_nonzeros : std::min(gradient_default, nnz);
  s.gradient_zeros = opts.gradient_zeros ? opts.gradient_zeros : std::min({gradient_default, nnz, zeros});
  s.function_nonzeros = opts.function_nonzeros ? opts.function_nonzeros : std::min(function_default, nnz);
  s.function_zeros = opts.function_zeros ? opts.function_zeros : std::min({function_default, nnz, zeros});
  if (zeros == 0) s.gradient_zeros = s.function_zeros = 0;
  return s;
}

void gcp_draw_stratified(const GcpSparseData& data, uint64_t nonzeros, uint64_t zeros, std::mt19937_64& gen,
                         int threads, GcpDrawnSample& out) {
  const size_t order = data.dims.size();
  const uint64_t nnz = data.nnz();
  out.coords.resize(order);
  for (auto& c : out.coords) c.clear();
  out.values.clear();
  out.weights.clear();
  std::vector<spt_index> c(order);
  auto push = [&](uint64_t index, double value, double weight) {
    data.coordinates(index, c.data());
    for (size_t n = 0; n < order; ++n) out.coords[n].push_back(c[n]);
    out.values.push_back(value);
    out.weights.push_back(weight);
  };
  // Nonzeros: all of them in order when the whole set is asked for (pyttb).
  if (nonzeros > 0 && nnz > 0) {
    const double weight = static_cast<double>(nnz) / static_cast<double>(nonzeros);
    for (uint64_t s = 0; s < nonzeros; ++s) {
      const uint64_t k = nonzeros == nnz ? s : uniform_below(gen, nnz);
      push(data.linear[k], data.values[k], weight);
    }
  }
  if (zeros == 0 || data.zeros() == 0) return;
  // Zeros: draw candidates in rounds (sequentially from gen), test them
  // against the nonzeros in parallel, keep the zeros in draw order.
  const double expected_draws = static_cast<double>(zeros) * static_cast<double>(data.entries) /
                                static_cast<double>(data.zeros());
  const double max_draws = kZeroDrawSlack * expected_draws + 1000.0;
  std::vector<uint64_t> candidates;
  std::vector<unsigned char> hit;
  std::vector<uint64_t> found;
  found.reserve(zeros);
  double draws = 0.0;
  while (found.size() < zeros && draws < max_draws) {
    const uint64_t want = zeros - found.size();
    candidates.resize(want);
    hit.assign(want, 0);
    for (uint64_t s = 0; s < want; ++s) {
      uint64_t idx = 0, stride = 1;
      for (size_t n = 0; n < order; ++n) {
        idx += stride * uniform_below(gen, data.dims[n]);
        stride *= data.dims[n];
      }
      candidates[s] = idx;
    }
    draws += static_cast<double>(want);
    const int64_t count = static_cast<int64_t>(want);
#pragma omp parallel for schedule(static) num_threads(std::max(1, threads)) if (threads > 1 && count > 4096)
    for (int64_t s = 0; s < count; ++s) hit[s] = data.is_nonzero(candidates[s]) ? 1 : 0;
    for (uint64_t s = 0; s < want; ++s)
      if (!hit[s]) found.push_back(candidates[s]);
  }
  if (found.empty()) return;
  const double weight = static_cast<double>(data.zeros()) / static_cast<double>(found.size());
  for (uint64_t idx : found) push(idx, 0.0, weight);
}

spt_status gcp_sgd(spt_context_s& ctx, const spt_coo_s& x, const spt_gcp_options& opts, spt_ktensor_s& out) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  validate_sgd_options(opts);
  const GcpSparseData data = gcp_sparse_data(x, thread_count(ctx));
  require(data.nnz() >= 1, "GCP-SGD samples the nonzeros and needs at least one; this tensor has none");
  require_valid_nonzeros(data, opts.loss);
  const kernels::GcpLoss loss = gcp_loss_of(opts);
  const double lower = gcp_lower_bound_of(opts);
  const uint32_t order = x.order();
  const spt_index rank = opts.rank;
  const GcpSampleSizes sizes = gcp_sample_sizes(data, opts);
  const uint64_t step_samples = sizes.gradient_nonzeros + sizes.gradient_zeros;
  const int threads = static_cast<int>(
      std::min<uint64_t>(static_cast<uint64_t>(thread_count(ctx)), std::max<uint64_t>(1, step_samples / kSamplesPerThread)));
  // The sampled MTTKRPs go to the GPU only under a forced CUDA backend:
  // each step's sample and factors are copied there and back, which AUTO
  // does not choose for a run of many small steps.
  spt_backend backend = ctx.backend;
  if (backend == SPT_BACKEND_AUTO && dispatch::effective_backend(ctx) == SPT_BACKEND_CUDA) {
    log(ctx, 1, "note: GCP-SGD runs on the CPU under the AUTO backend; backend CUDA sends its sampled MTTKRPs to the GPU");
    backend = SPT_BACKEND_CPU;
  }
  const ScopedRunSettings scoped_settings(ctx, threads, backend);
  log(ctx, 1, cat("GCP-SGD: ", gcp_loss_name(opts.loss), " loss, rank ", rank, ", ", data.nnz(), " nonzeros of ",
                  data.entries, " entries; per step ", sizes.gradient_nonzeros, " nonzeros + ", sizes.gradient_zeros,
                  " zeros sampled, objective estimate from ", sizes.function_nonzeros, " + ", sizes.function_zeros,
                  "; Adam rate ", opts.rate, ", ", opts.epoch_iters, " steps per epoch, ", threads, " threads"));

  double data_norm2 = 0.0;
  for (double v : data.values) data_norm2 += v * v;
  std::vector<std::vector<double>> factors = gcp_initial_factors(ctx, x.dims, opts, std::sqrt(data_norm2));

  // The sampler's generator: the seed's second stream (the first drew the start).
  const uint64_t seed = opts.seed != 0 ? opts.seed : ctx.seed;
  std::seed_seq sampler_seed{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), 2u};
  std::mt19937_64 gen(sampler_seed);

  // The fixed objective sample, then the model estimate F~ on it.
  GcpDrawnSample function_sample;
  gcp_draw_stratified(data, sizes.function_nonzeros, sizes.function_zeros, gen, threads, function_sample);
  std::vector<const spt_index*> function_ind(order);
  for (uint32_t n = 0; n < order; ++n) function_ind[n] = function_sample.coords[n].data();
  kernels::GcpSample function_view;
  function_view.order = order;
  function_view.ind = function_ind.data();
  function_view.values = function_sample.values.data();
  function_view.weights = function_sample.weights.data();
  function_view.count = function_sample.size();

  std::vector<ConstMatRef<double>> factor_refs(order);
  for (uint32_t n = 0; n < order; ++n) factor_refs[n] = {factors[n].data(), x.dims[n], rank, rank};
  auto estimate = [&] {
    return SPT_DISPATCH(ctx, gcp_sample_value_derivative, function_view, loss, factor_refs.data(),
                        static_cast<double*>(nullptr));
  };

  // The sampled derivative tensor, a COO the MTTKRP reads; gradients.
  spt_coo_s derivatives;
  derivatives.init_owned(SPT_FLOAT64, x.dims, sizes.gradient_nonzeros + sizes.gradient_zeros);
  derivatives.redrawn = true;  // a new sample every step: no GPU format choice per step
  std::vector<std::vector<double>> gradient_rows(order), first_moment(order), second_moment(order);
  std::vector<MatRef<double>> gradient_refs(order);
  for (uint32_t n = 0; n < order; ++n) {
    gradient_rows[n].assign(factors[n].size(), 0.0);
    first_moment[n].assign(factors[n].size(), 0.0);
    second_moment[n].assign(factors[n].size(), 0.0);
    gradient_refs[n] = {gradient_rows[n].data(), x.dims[n], rank, rank};
  }
  GcpDrawnSample gradient_sample;
  const double beta1 = opts.beta1, beta2 = opts.beta2, epsilon = opts.epsilon;
  uint64_t steps = 0;  // Adam's step count t (bias correction)

  auto adam_step = [&](double rate) {
    gcp_draw_stratified(data, sizes.gradient_nonzeros, sizes.gradient_zeros, gen, threads, gradient_sample);
    const spt_nnz count = gradient_sample.size();
    if (count != derivatives.nnz) derivatives.resize(count);
    for (uint32_t n = 0; n < order; ++n)
      std::memcpy(derivatives.mutable_ind(n), gradient_sample.coords[n].data(), count * sizeof(spt_index));
    derivatives.touched();
    kernels::GcpSample view;
    view.order = order;
    view.ind = derivatives.ind.data();
    view.values = gradient_sample.values.data();
    view.weights = gradient_sample.weights.data();
    view.count = count;
    SPT_DISPATCH(ctx, gcp_sample_value_derivative, view, loss, factor_refs.data(),
                 derivatives.mutable_values<double>());
    const spt_coo_s& y = derivatives;
    for (uint32_t n = 0; n < order; ++n) SPT_DISPATCH(ctx, mttkrp, y, factor_refs.data(), n, gradient_refs[n]);
    ++steps;
    const double correction1 = 1.0 - std::pow(beta1, static_cast<double>(steps));
    const double correction2 = 1.0 - std::pow(beta2, static_cast<double>(steps));
    bool finite = true;
    for (uint32_t n = 0; n < order; ++n) {
      double* a = factors[n].data();
      const double* g = gradient_rows[n].data();
      double* m = first_moment[n].data();
      double* v = second_moment[n].data();
      const int64_t size = static_cast<int64_t>(factors[n].size());
      bool mode_finite = true;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && size_t(size) >= kParallelEntries) \
    reduction(&& : mode_finite)
      for (int64_t e = 0; e < size; ++e) {
        mode_finite = mode_finite && std::isfinite(g[e]);
        m[e] = beta1 * m[e] + (1 - beta1) * g[e];
        v[e] = beta2 * v[e] + (1 - beta2) * g[e] * g[e];
        const double mhat = m[e] / correction1, vhat = v[e] / correction2;
        a[e] = std::max(lower, a[e] - rate * mhat / (std::sqrt(vhat) + epsilon));
      }
      finite = finite && mode_finite;
    }
    if (!finite)
      fail(SPT_ERR_NUMERICAL, "GCP-SGD met an infinite or NaN gradient (", gcp_loss_name(opts.loss),
           " loss, step ", steps, "); lower the rate or check the data");
  };

  double f_kept = estimate();
  if (!std::isfinite(f_kept))
    fail(SPT_ERR_NUMERICAL, "the estimated GCP objective of the start is ", f_kept, " (", gcp_loss_name(opts.loss),
         " loss); check the data and lower bound, or start from other factors");
  log(ctx, 2, cat("GCP-SGD: initial objective estimate ", f_kept));
  std::vector<std::vector<double>> kept_factors = factors, kept_first = first_moment, kept_second = second_moment;
  uint64_t kept_steps = 0;
  int fails = 0, epochs = 0;
  bool converged = false;
  std::vector<double> history, seconds;
  for (int epoch = 0; epoch < opts.max_iters; ++epoch) {
    const double rate = opts.rate * std::pow(opts.decay, fails);
    for (int step = 0; step < opts.epoch_iters; ++step) adam_step(rate);
    const double f = estimate();
    epochs = epoch + 1;
    const bool failed = !(f <= f_kept);  // a NaN estimate fails too
    if (failed) {
      ++fails;
      factors = kept_factors;
      first_moment = kept_first;
      second_moment = kept_second;
      steps = kept_steps;
      for (uint32_t n = 0; n < order; ++n) factor_refs[n].data = factors[n].data();
    } else {
      kept_factors = factors;
      kept_first = first_moment;
      kept_second = second_moment;
      kept_steps = steps;
      f_kept = f;
    }
    const double secs = std::chrono::duration<double>(clock::now() - start).count();
    history.push_back(f_kept);
    seconds.push_back(secs);
    log(ctx, 2, cat("GCP-SGD: epoch ", epochs, ", objective estimate ", f, failed ? " (failed, undone)" : "",
                    ", rate ", rate));
    const bool done = fails > opts.max_fails || f_kept < opts.f_est_tol;
    if (done) {
      converged = true;
      break;
    }
    if (opts.callback && opts.callback(opts.callback_data, epochs, f_kept, rate, secs) != 0) break;
  }
  log(ctx, 1, cat("GCP-SGD: ", converged ? "stopped" : "not converged", " after ", epochs, " epochs (", fails,
                  " failed), objective estimate ", f_kept));

  spt_ktensor_s k;
  init_ktensor(k, SPT_FLOAT64, x.dims, rank);
  for (uint32_t n = 0; n < order; ++n)
    std::memcpy(k.factors[n]->ptr<double>(), kept_factors[n].data(), kept_factors[n].size() * sizeof(double));
  k.fit = f_kept;
  k.iterations = epochs;
  k.converged = converged ? 1 : 0;
  k.fit_history = std::move(history);
  k.seconds_history = std::move(seconds);
  out = std::move(k);
  return converged ? SPT_OK : SPT_WARN_NOT_CONVERGED;
}

}  // namespace spt::algo
