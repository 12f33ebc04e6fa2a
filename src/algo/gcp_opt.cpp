// GCP-OPT: the full tensor is formed once, then L-BFGS-B (algo/lbfgsb.*)
// minimises F over the factor entries, each evaluation one pass of the GCP
// kernel (kernels/gcp.hpp) over every entry. The variables are ordered as
// pyttb's ktensor.tovec(False) (factor by factor, each column-major), so the
// optimiser sees the same vector as in pyttb.
#include "algo/gcp_opt.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <algorithm>

#include "algo/gcp_sgd.hpp"
#include "algo/lbfgsb.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/random.hpp"
#include "dispatch/dispatch_gcp.hpp"

namespace spt::algo {

namespace {

// Size of spt_gcp_options in its first release (every field up to `function_zeros`).
constexpr size_t kGcpOptionsFirstSize = sizeof(spt_gcp_options);

void require_known_loss(spt_gcp_loss loss) {
  require(loss >= SPT_GCP_LOSS_GAUSSIAN && loss <= SPT_GCP_LOSS_HUBER, "unknown loss ", static_cast<int>(loss),
          " (an spt_gcp_loss value, SPT_GCP_LOSS_GAUSSIAN .. SPT_GCP_LOSS_HUBER)");
}

kernels::GcpLoss loss_of(const spt_gcp_options& opts) {
  require_known_loss(opts.loss);
  if (opts.loss == SPT_GCP_LOSS_HUBER)
    require(std::isfinite(opts.loss_parameter) && opts.loss_parameter > 0,
            "the Huber threshold loss_parameter must be finite and > 0, got ", opts.loss_parameter);
  return {opts.loss, opts.loss_parameter};
}

void require_initialised(const spt_gcp_options& opts) {
  require(opts.struct_size >= kGcpOptionsFirstSize, "options not initialised (call spt_gcp_options_init first)");
}

double effective_lower_bound(const spt_gcp_options& opts) {
  const double own = gcp_default_lower_bound(opts.loss);
  if (std::isnan(opts.lower_bound)) return own;
  require(opts.lower_bound < std::numeric_limits<double>::infinity(), "lower_bound must be below +inf");
  require(opts.lower_bound >= own, "the ", gcp_loss_name(opts.loss), " loss needs factors >= ", own,
          "; lower_bound ", opts.lower_bound, " is below that");
  return opts.lower_bound;
}

// Offsets of each factor's variables in the L-BFGS-B vector.
std::vector<size_t> variable_offsets(const std::vector<spt_index>& dims, spt_index rank) {
  std::vector<size_t> offsets(dims.size() + 1, 0);
  for (size_t n = 0; n < dims.size(); ++n) offsets[n + 1] = offsets[n] + size_t{dims[n]} * rank;
  return offsets;
}

// Factor matrices (row-major) <-> the vector (each factor column-major).
void factors_to_vector(const std::vector<std::vector<double>>& factors, const std::vector<spt_index>& dims,
                       spt_index rank, double* v) {
  for (size_t n = 0; n < dims.size(); ++n)
    for (spt_index r = 0; r < rank; ++r)
      for (spt_index i = 0; i < dims[n]; ++i) *v++ = factors[n][size_t{i} * rank + r];
}

void vector_to_factors(const double* v, const std::vector<spt_index>& dims, spt_index rank,
                       std::vector<std::vector<double>>& factors) {
  for (size_t n = 0; n < dims.size(); ++n)
    for (spt_index r = 0; r < rank; ++r)
      for (spt_index i = 0; i < dims[n]; ++i) factors[n][size_t{i} * rank + r] = *v++;
}

// Frobenius norm of the Kruskal tensor [factors] (weights 1):
// sqrt(sum_{r,s} prod_n (A_n^T A_n)(r,s)).
double kruskal_norm(const std::vector<std::vector<double>>& factors, const std::vector<spt_index>& dims, spt_index rank) {
  std::vector<double> product(size_t{rank} * rank, 1.0);
  for (size_t n = 0; n < dims.size(); ++n)
    for (spt_index r = 0; r < rank; ++r)
      for (spt_index q = 0; q < rank; ++q) {
        double dot = 0.0;
        for (spt_index i = 0; i < dims[n]; ++i) dot += factors[n][size_t{i} * rank + r] * factors[n][size_t{i} * rank + q];
        product[size_t{r} * rank + q] *= dot;
      }
  double sum = 0.0;
  for (double v : product) sum += v;
  return std::sqrt(std::max(sum, 0.0));
}

// pyttb ktensor.normalize("all"), which gcp_opt applies to its start: each
// column to unit 2-norm (the norms multiply into the weights, a zero column
// stays), a negative weight flips factor 0's column, then every factor's
// column r is scaled by weight_r^(1 / order) (the weights become 1).
void normalize_all(std::vector<std::vector<double>>& factors, const std::vector<spt_index>& dims, spt_index rank,
                   std::vector<double> weights) {
  const size_t order = dims.size();
  for (size_t n = 0; n < order; ++n)
    for (spt_index r = 0; r < rank; ++r) {
      double sq = 0.0;
      for (spt_index i = 0; i < dims[n]; ++i) sq += factors[n][size_t{i} * rank + r] * factors[n][size_t{i} * rank + r];
      const double norm = std::sqrt(sq);
      if (norm > 0) {
        const double inverse = 1.0 / norm;
        for (spt_index i = 0; i < dims[n]; ++i) factors[n][size_t{i} * rank + r] *= inverse;
      }
      weights[r] *= norm;
    }
  for (spt_index r = 0; r < rank; ++r)
    if (weights[r] < 0) {
      weights[r] = -weights[r];
      for (spt_index i = 0; i < dims[0]; ++i) factors[0][size_t{i} * rank + r] = -factors[0][size_t{i} * rank + r];
    }
  for (spt_index r = 0; r < rank; ++r) {
    const double scale = std::pow(weights[r], 1.0 / static_cast<double>(order));
    for (size_t n = 0; n < order; ++n)
      for (spt_index i = 0; i < dims[n]; ++i) factors[n][size_t{i} * rank + r] *= scale;
  }
}

void validate_options(const spt_coo_s& x, const spt_gcp_options& opts) {
  require_initialised(opts);
  require(opts.optimizer == SPT_GCP_OPTIMIZER_LBFGSB || opts.optimizer == SPT_GCP_OPTIMIZER_SGD,
          "unknown optimizer ", static_cast<int>(opts.optimizer), " (SPT_GCP_OPTIMIZER_LBFGSB or _SGD)");
  require(x.order() >= 2, "GCP needs a tensor of order >= 2, got order ", x.order());
  require(opts.rank >= 1, "rank must be at least 1, got ", opts.rank);
  loss_of(opts);
  effective_lower_bound(opts);
  require(opts.max_iters >= 1, "max_iters must be at least 1, got ", opts.max_iters);
  require(opts.max_fun_evals >= 1, "max_fun_evals must be at least 1, got ", opts.max_fun_evals);
  require(opts.memory >= 1, "memory must be at least 1, got ", opts.memory);
  require(std::isfinite(opts.factr) && opts.factr >= 0, "factr must be finite and >= 0, got ", opts.factr);
  require(std::isfinite(opts.pgtol) && opts.pgtol >= 0, "pgtol must be finite and >= 0, got ", opts.pgtol);
  require(opts.init == SPT_GCP_INIT_RANDOM || opts.init == SPT_GCP_INIT_USER, "unknown init ",
          static_cast<int>(opts.init));
  if (opts.init == SPT_GCP_INIT_USER) {
    require(opts.init_factors != nullptr, "init = SPT_GCP_INIT_USER needs init_factors");
    for (uint32_t m = 0; m < x.order(); ++m) {
      const spt_matrix_s* f = opts.init_factors[m];
      require(f != nullptr, "init_factors[", m, "] must not be NULL");
      require(f->rows == x.dims[m] && f->cols == opts.rank, "init_factors[", m, "] must be ", x.dims[m], " x ",
              opts.rank, ", got ", f->rows, " x ", f->cols);
      require(f->dtype() == SPT_FLOAT64, "init_factors[", m, "] must be float64");
    }
  }
}

}  // namespace

const char* gcp_loss_name(spt_gcp_loss loss) {
  switch (loss) {
    case SPT_GCP_LOSS_GAUSSIAN: return "Gaussian";
    case SPT_GCP_LOSS_BERNOULLI_ODDS: return "Bernoulli (odds link)";
    case SPT_GCP_LOSS_BERNOULLI_LOGIT: return "Bernoulli (logit link)";
    case SPT_GCP_LOSS_POISSON: return "Poisson (identity link)";
    case SPT_GCP_LOSS_POISSON_LOG: return "Poisson (log link)";
    case SPT_GCP_LOSS_RAYLEIGH: return "Rayleigh";
    case SPT_GCP_LOSS_GAMMA: return "Gamma";
    case SPT_GCP_LOSS_HUBER: return "Huber";
    default: return "unknown";
  }
}

kernels::GcpDense GcpFullTensor::view() const {
  kernels::GcpDense d;
  d.dims = dims;
  d.values = values.data();
  d.weights = weights.empty() ? nullptr : weights.data();
  d.entries = values.size();
  return d;
}

double gcp_default_lower_bound(spt_gcp_loss loss) {
  switch (loss) {
    case SPT_GCP_LOSS_BERNOULLI_ODDS:
    case SPT_GCP_LOSS_POISSON:
    case SPT_GCP_LOSS_RAYLEIGH:
    case SPT_GCP_LOSS_GAMMA: return 0.0;
    default: return -std::numeric_limits<double>::infinity();
  }
}

GcpFullTensor gcp_full_tensor(const spt_coo_s& x, const spt_coo_s* missing) {
  if (x.dtype() != SPT_FLOAT64)
    fail(SPT_ERR_UNSUPPORTED, "GCP runs in float64 only; convert the float32 tensor (spt_coo_convert_dtype)");
  uint64_t entries = 1;
  for (spt_index d : x.dims) {
    entries = checked_mul(entries, d, "the tensor's entry count");
    if (entries > SPT_GCP_MAX_DENSE_ENTRIES)
      fail(SPT_ERR_UNSUPPORTED, "GCP-OPT visits every entry of the full tensor and takes at most ",
           SPT_GCP_MAX_DENSE_ENTRIES, " entries (SPT_GCP_MAX_DENSE_ENTRIES); this tensor has more. "
           "GCP-SGD (optimizer SPT_GCP_OPTIMIZER_SGD), which samples the zeros, takes it");
  }
  require(entries >= 1, "GCP needs a tensor with at least one entry (a dimension is 0)");
  if (missing) {
    require(missing->dims == x.dims, "the missing-entries tensor must have the tensor's dims");
  }
  require_fits_memory(entries * 8 * (missing ? 2 : 1), [] { return std::string("GCP-OPT's full tensor"); });
  GcpFullTensor full;
  full.dims = x.dims;
  full.values.assign(entries, 0.0);
  const uint32_t order = x.order();
  auto linear = [&](const spt_coo_s& t, spt_nnz e) {
    uint64_t idx = 0, stride = 1;
    for (uint32_t n = 0; n < order; ++n) {
      idx += stride * t.ind[n][e];
      stride *= t.dims[n];
    }
    return idx;
  };
  const double* v = static_cast<const double*>(x.val);
  for (spt_nnz e = 0; e < x.nnz; ++e) full.values[linear(x, e)] += v[e];
  if (missing) {
    full.weights.assign(entries, 1.0);
    for (spt_nnz e = 0; e < missing->nnz; ++e) {
      const uint64_t idx = linear(*missing, e);
      full.weights[idx] = 0.0;
      full.values[idx] = 0.0;
    }
  }
  return full;
}

void gcp_require_valid_value(spt_gcp_loss loss, double v, const std::vector<spt_index>& dims, uint64_t index) {
  bool ok = std::isfinite(v);
  const char* needs = "finite values";
  if (ok) switch (loss) {
      case SPT_GCP_LOSS_BERNOULLI_ODDS:
      case SPT_GCP_LOSS_BERNOULLI_LOGIT:
        ok = v == 1.0;
        needs = "binary (0/1) data (repeated coordinates are summed)";
        break;
      case SPT_GCP_LOSS_POISSON:
      case SPT_GCP_LOSS_POISSON_LOG:
        ok = v > 0 && v == std::floor(v);
        needs = "count data (nonnegative integers)";
        break;
      case SPT_GCP_LOSS_RAYLEIGH:
      case SPT_GCP_LOSS_GAMMA:
        ok = v > 0;
        needs = "nonnegative data";
        break;
      default: break;
    }
  if (ok) return;
  // The message is formed only on failure.
  std::string where = "(";
  for (size_t n = 0; n < dims.size(); ++n) {
    where += cat(n ? ", " : "", index % dims[n]);
    index /= dims[n];
  }
  fail(SPT_ERR_INVALID_ARGUMENT, "the ", gcp_loss_name(loss), " loss needs ", needs, "; the entry at ", where,
       ") (0-based) is ", v);
}

void gcp_require_valid_data(const GcpFullTensor& x, spt_gcp_loss loss) {
  for (size_t e = 0; e < x.values.size(); ++e)
    if (x.values[e] != 0.0) gcp_require_valid_value(loss, x.values[e], x.dims, e);
}

double gcp_value_gradient(const spt_context_s& ctx, const GcpFullTensor& x, const kernels::GcpLoss& loss,
                          const ConstMatRef<double>* factors, const MatRef<double>* gradients) {
  const kernels::GcpDense view = x.view();
  return SPT_DISPATCH(ctx, gcp_value_gradient, view, loss, factors, gradients);
}

std::vector<std::vector<double>> gcp_initial_factors(const spt_context_s& ctx, const std::vector<spt_index>& dims,
                                                     const spt_gcp_options& opts, double data_norm) {
  const size_t order = dims.size();
  const spt_index rank = opts.rank;
  std::vector<std::vector<double>> factors(order);
  for (size_t n = 0; n < order; ++n) factors[n].assign(size_t{dims[n]} * rank, 0.0);
  if (opts.init == SPT_GCP_INIT_USER) {
    for (size_t n = 0; n < order; ++n)
      for (spt_index i = 0; i < dims[n]; ++i)
        for (spt_index r = 0; r < rank; ++r) factors[n][size_t{i} * rank + r] = opts.init_factors[n]->at<double>(i, r);
  } else {
    std::mt19937_64 gen(opts.seed != 0 ? opts.seed : ctx.seed);
    for (size_t n = 0; n < order; ++n)
      for (double& v : factors[n]) v = unit_uniform<double>(gen);
  }
  std::vector<double> start_weights(rank, 1.0);
  if (opts.init == SPT_GCP_INIT_RANDOM) {
    // pyttb: M0 *= norm(X) / norm(M0) (the weights carry the scale).
    const double model_norm = kruskal_norm(factors, dims, rank);
    if (model_norm > 0)
      for (double& w : start_weights) w = data_norm / model_norm;
  }
  normalize_all(factors, dims, rank, start_weights);
  return factors;
}

kernels::GcpLoss gcp_loss_of(const spt_gcp_options& opts) { return loss_of(opts); }

double gcp_lower_bound_of(const spt_gcp_options& opts) { return effective_lower_bound(opts); }

spt_status gcp_opt(spt_context_s& ctx, const spt_coo_s& x, const spt_gcp_options& opts, spt_ktensor_s& out) {
  using clock = std::chrono::steady_clock;
  validate_options(x, opts);
  if (opts.optimizer == SPT_GCP_OPTIMIZER_SGD) return gcp_sgd(ctx, x, opts, out);
  if (!lbfgsb_available())
    fail(SPT_ERR_UNSUPPORTED, "this libsptensor was built without L-BFGS-B (Debian package liblbfgsb-dev); "
                              "GCP-OPT needs it: install it and rebuild");
  const GcpFullTensor full = gcp_full_tensor(x, opts.missing);
  gcp_require_valid_data(full, opts.loss);
  const kernels::GcpLoss loss = loss_of(opts);
  const double lower = effective_lower_bound(opts);
  const uint32_t order = x.order();
  const spt_index rank = opts.rank;
  const std::vector<size_t> offsets = variable_offsets(x.dims, rank);
  log(ctx, 1, cat("GCP-OPT: ", gcp_loss_name(opts.loss), " loss, rank ", rank, ", ", full.values.size(),
                  " entries, lower bound ", lower, ", L-BFGS-B over ", offsets[order], " variables"));

  // Initial factors (row-major), then the L-BFGS-B vector.
  double data_norm2 = 0.0;
  for (double v : full.values) data_norm2 += v * v;
  std::vector<std::vector<double>> factors = gcp_initial_factors(ctx, x.dims, opts, std::sqrt(data_norm2));
  std::vector<double> variables(offsets[order]);
  factors_to_vector(factors, x.dims, rank, variables.data());

  // Row-major work matrices the kernel reads and writes.
  std::vector<std::vector<double>> gradient_rows(order);
  for (uint32_t n = 0; n < order; ++n) gradient_rows[n].assign(factors[n].size(), 0.0);
  std::vector<ConstMatRef<double>> factor_refs(order);
  std::vector<MatRef<double>> gradient_refs(order);
  for (uint32_t n = 0; n < order; ++n) {
    factor_refs[n] = {factors[n].data(), x.dims[n], rank, rank};
    gradient_refs[n] = {gradient_rows[n].data(), x.dims[n], rank, rank};
  }

  LbfgsbSettings settings;
  settings.memory = opts.memory;
  settings.factr = opts.factr;
  settings.pgtol = opts.pgtol;
  settings.max_iters = opts.max_iters;
  settings.max_fun_evals = opts.max_fun_evals;
  const auto start = clock::now();
  std::vector<double> history, seconds;
  bool numerical_failure = false;
  auto objective = [&](const double* v, double* g) {
    vector_to_factors(v, x.dims, rank, factors);
    const double f = gcp_value_gradient(ctx, full, loss, factor_refs.data(), gradient_refs.data());
    factors_to_vector(gradient_rows, x.dims, rank, g);
    return f;
  };
  auto progress = [&](int iteration, double f, double pg_norm) {
    const double secs = std::chrono::duration<double>(clock::now() - start).count();
    history.push_back(f);
    seconds.push_back(secs);
    if (std::isnan(f)) {
      numerical_failure = true;
      return true;
    }
    return opts.callback && opts.callback(opts.callback_data, iteration, f, pg_norm, secs) != 0;
  };
  const LbfgsbOutcome outcome = lbfgsb_minimize(variables, lower, settings, objective, progress);
  if (numerical_failure || std::isnan(outcome.f))
    fail(SPT_ERR_NUMERICAL, "the GCP objective became NaN (", gcp_loss_name(opts.loss),
         " loss); check the data and lower bound, or start from other factors");
  log(ctx, 1, cat("GCP-OPT: ", outcome.message, " after ", outcome.iterations, " iterations and ", outcome.evaluations,
                  " evaluations, objective ", outcome.f));

  vector_to_factors(variables.data(), x.dims, rank, factors);
  spt_ktensor_s k;
  init_ktensor(k, SPT_FLOAT64, x.dims, rank);
  for (uint32_t n = 0; n < order; ++n) std::memcpy(k.factors[n]->ptr<double>(), factors[n].data(), factors[n].size() * 8);
  k.fit = outcome.f;
  k.iterations = outcome.iterations;
  k.converged = outcome.converged ? 1 : 0;
  k.fit_history = std::move(history);
  k.seconds_history = std::move(seconds);
  out = std::move(k);
  return outcome.converged ? SPT_OK : SPT_WARN_NOT_CONVERGED;
}

double gcp_objective(spt_context_s& ctx, const spt_coo_s& x, const spt_ktensor_s& k, const spt_gcp_options& opts) {
  require_initialised(opts);
  const kernels::GcpLoss loss = loss_of(opts);
  require(k.dims == x.dims, "the model's dims differ from the tensor's");
  require(k.dtype() == SPT_FLOAT64, "the model must be float64");
  const GcpFullTensor full = gcp_full_tensor(x, opts.missing);
  const spt_index rank = k.rank;
  // Row-major copies (any layout in k), lambda folded into factor 0's columns.
  const double* lambda = k.lambda.ptr<double>();
  std::vector<std::vector<double>> copies(x.order());
  std::vector<ConstMatRef<double>> refs(x.order());
  for (uint32_t n = 0; n < x.order(); ++n) {
    copies[n].resize(size_t{x.dims[n]} * rank);
    for (spt_index i = 0; i < x.dims[n]; ++i)
      for (spt_index r = 0; r < rank; ++r)
        copies[n][size_t{i} * rank + r] = k.factors[n]->at<double>(i, r) * (n == 0 ? lambda[r] : 1.0);
    refs[n] = {copies[n].data(), x.dims[n], rank, rank};
  }
  return gcp_value_gradient(ctx, full, loss, refs.data(), nullptr);
}

}  // namespace spt::algo
