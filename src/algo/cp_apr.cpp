// CP-APR by multiplicative updates (pyttb cp_apr / tt_cp_apr_mu numerics).
//
// One loop (run_cp_apr) for every backend, on the steps of a
// dispatch::CpAprSteps<T>: the host steps below, or the device steps
// (dispatch/cp_apr_steps.hpp) when the context runs on CUDA, which keep the
// factors, lambda, Phi and the grouped nonzeros on the GPU for the whole
// run. The host steps:
// pyttb forms Pi (nnz x R) once per mode and re-reads it in every inner
// iteration; here each Phi evaluation recomputes Pi's rows from the other
// factors (bitwise the same values: those factors do not change during the
// inner iterations), which reads cache-resident factor rows instead of
// streaming nnz * R values from memory. The nonzeros are grouped by each
// mode's index once at the start (ModeGroups), so every output row of Phi is
// owned by one thread: race-free and independent of the thread count.
// With format HiCOO (or AUTO choosing it), one HiCOO copy of X built at the
// start serves every mode instead (kernel cp_apr_phi_hicoo), also
// thread-count independent.
#include "algo/cp_apr.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <type_traits>

#include <omp.h>

#include "core/error.hpp"
#include "core/hicoo.hpp"
#include "core/random.hpp"
#include "core/subnormals.hpp"
#include "dispatch/cp_apr_steps.hpp"
#include "dispatch/dispatch.hpp"

namespace spt::algo {

template <typename T>
spt_status run_cp_apr(dispatch::CpAprSteps<T>& steps, const spt_cp_apr_options& opts, spt_ktensor_s& k,
                       spt_ktensor_s& out) {
  using clock = std::chrono::steady_clock;
  const uint32_t order = k.order();
  const spt_index rank = k.rank;
  steps.start(k);
  // M = init.copy(); M.normalize(normtype=1).
  for (uint32_t m = 0; m < order; ++m) steps.normalise(m);
  std::vector<double> kkt_mode(order, 0.0);

  bool converged = false;
  for (int iter = 0; iter < opts.max_outer_iters; ++iter) {
    const auto t0 = clock::now();
    bool all_met = true;
    for (uint32_t n = 0; n < order; ++n) {
      // Scooch inadmissible zeros (complementary slackness), from the second
      // outer iteration on, with the Phi of the previous visit to this mode.
      if (iter > 0) steps.scooch(n, opts.kappa, opts.kappatol);
      // Shift the weights into mode n (redistribute).
      steps.redistribute(n);
      for (int inner = 0; inner < opts.max_inner_iters; ++inner) {
        steps.phi(n, opts.epsilon);
        const double viol = steps.kkt_violation(n);
        kkt_mode[n] = viol;
        if (viol < opts.tol) break;
        all_met = false;
        steps.multiply(n);
      }
      steps.normalise(n);
    }
    const double kkt = *std::max_element(kkt_mode.begin(), kkt_mode.end());
    const double ll = steps.loglikelihood();
    const double secs = std::chrono::duration<double>(clock::now() - t0).count();
    if (!std::isfinite(kkt) || std::isnan(ll))
      fail(SPT_ERR_NUMERICAL, "CP-APR produced non-finite values in outer iteration ", iter + 1);
    k.fit_history.push_back(ll);
    k.seconds_history.push_back(secs);
    k.iterations = iter + 1;
    k.fit = ll;
    if (all_met) converged = true;
    if (opts.callback && opts.callback(opts.callback_data, iter + 1, ll, kkt, secs) != 0) break;
    if (converged) break;
  }

  // Final clean-up as pyttb (M.normalize(sort=True, normtype=1)): all modes
  // are already 1-normalised; sort components by decreasing lambda.
  std::vector<double> lambda;
  steps.finish(k, &lambda);
  std::vector<spt_index> p(rank);
  std::iota(p.begin(), p.end(), 0);
  std::stable_sort(p.begin(), p.end(), [&](spt_index a, spt_index b) { return lambda[a] > lambda[b]; });
  std::vector<T> tmp(rank);
  for (spt_index r = 0; r < rank; ++r) k.lambda.ptr<T>()[r] = static_cast<T>(lambda[p[r]]);
  for (uint32_t m = 0; m < order; ++m) {
    MatRef<T> a = k.template factor<T>(m);
    for (spt_nnz i = 0; i < a.rows; ++i) {
      for (spt_index r = 0; r < rank; ++r) tmp[r] = a(i, p[r]);
      for (spt_index r = 0; r < rank; ++r) a(i, r) = tmp[r];
    }
  }
  k.converged = converged ? 1 : 0;
  out = std::move(k);
  return converged ? SPT_OK : SPT_WARN_NOT_CONVERGED;
}

template spt_status run_cp_apr<float>(dispatch::CpAprSteps<float>&, const spt_cp_apr_options&, spt_ktensor_s&,
                                      spt_ktensor_s&);
template spt_status run_cp_apr<double>(dispatch::CpAprSteps<double>&, const spt_cp_apr_options&, spt_ktensor_s&,
                                       spt_ktensor_s&);

namespace {

// Scale the columns of `a` to unit 1-norm, multiplying lambda by the norms
// (pyttb ktensor.normalize(normtype=1, mode=n): zero columns stay zero and
// their lambda becomes 0).
template <typename T>
void normalize_columns(MatRef<T> a, std::vector<double>& lambda) {
  std::vector<double> norms(a.cols, 0.0);
  for (spt_nnz i = 0; i < a.rows; ++i)
    for (spt_nnz r = 0; r < a.cols; ++r) norms[r] += std::fabs(static_cast<double>(a(i, r)));
  for (spt_nnz r = 0; r < a.cols; ++r) {
    if (norms[r] > 0) {
      const double inv = 1.0 / norms[r];
      for (spt_nnz i = 0; i < a.rows; ++i) a(i, r) = static_cast<T>(static_cast<double>(a(i, r)) * inv);
    }
    lambda[r] *= norms[r];
  }
}

// Size of spt_cp_apr_options before `format` was appended.
constexpr size_t kCpAprOptionsSizeNoFormat = offsetof(spt_cp_apr_options, format);

// A copy of the caller's options at the current layout: a caller built
// against the shorter struct gets the appended fields' defaults (0 = AUTO).
spt_cp_apr_options normalized_options(const spt_cp_apr_options& given) {
  require(given.struct_size >= kCpAprOptionsSizeNoFormat,
          "options not initialised (call spt_cp_apr_options_init first)");
  spt_cp_apr_options o{};
  std::memcpy(static_cast<void*>(&o), &given, std::min(given.struct_size, sizeof(o)));
  o.struct_size = sizeof(o);
  return o;
}

void validate_options(const spt_coo_s& x, const spt_cp_apr_options& opts) {
  require(opts.struct_size >= sizeof(spt_cp_apr_options),
          "options not initialised (call spt_cp_apr_options_init first)");
  require(opts.format >= SPT_TENSOR_FORMAT_AUTO && opts.format <= SPT_TENSOR_FORMAT_HLS, "unknown format ",
          static_cast<int>(opts.format), " (an spt_tensor_format value, SPT_TENSOR_FORMAT_AUTO .. _HLS)");
  if (opts.format != SPT_TENSOR_FORMAT_AUTO && opts.format != SPT_TENSOR_FORMAT_COO &&
      opts.format != SPT_TENSOR_FORMAT_HICOO) {
    const char* name = opts.format == SPT_TENSOR_FORMAT_CSF     ? "CSF"
                       : opts.format == SPT_TENSOR_FORMAT_FCOO  ? "F-COO"
                       : opts.format == SPT_TENSOR_FORMAT_HBCSF ? "HB-CSF"
                                                                : "HLS";
    fail(SPT_ERR_UNSUPPORTED, "CP-APR does not run on ", name, "; use SPT_TENSOR_FORMAT_COO, _HICOO or _AUTO");
  }
  require(x.order() >= 2, "CP-APR needs a tensor of order >= 2, got order ", x.order());
  require(x.nnz >= 1, "CP-APR needs a tensor with at least one nonzero");
  require(opts.rank >= 1, "rank must be at least 1, got ", opts.rank);
  {
    // The factors dims[m] x rank must be addressable and fit the machine:
    // checked before anything is allocated.
    const uint64_t r = opts.rank;
    uint64_t factor_bytes = 0;
    for (uint32_t m = 0; m < x.order(); ++m)
      factor_bytes = checked_add(
          factor_bytes, checked_mul(checked_mul(x.dims[m], r, "a factor's size dims[m] * rank"), 8, "a factor's bytes"),
          "the factors' bytes");
    require_fits_memory(factor_bytes, [&] {
      return cat("CP-APR with rank ", r, " (", x.order(), " factor matrices dims[m] x rank)");
    });
  }
  require(opts.max_outer_iters >= 1, "max_outer_iters must be at least 1, got ", opts.max_outer_iters);
  require(opts.max_inner_iters >= 1, "max_inner_iters must be at least 1, got ", opts.max_inner_iters);
  require(std::isfinite(opts.tol) && opts.tol >= 0, "tol must be finite and >= 0, got ", opts.tol);
  require(std::isfinite(opts.kappa) && opts.kappa >= 0, "kappa must be finite and >= 0, got ", opts.kappa);
  require(std::isfinite(opts.kappatol) && opts.kappatol >= 0, "kappatol must be finite and >= 0, got ",
          opts.kappatol);
  require(std::isfinite(opts.epsilon) && opts.epsilon > 0, "epsilon must be finite and > 0, got ", opts.epsilon);
  require(opts.init == SPT_CP_APR_INIT_RANDOM || opts.init == SPT_CP_APR_INIT_USER, "unknown init ",
          static_cast<int>(opts.init));
  if (opts.init == SPT_CP_APR_INIT_USER) {
    require(opts.init_factors != nullptr, "init = SPT_CP_APR_INIT_USER needs init_factors");
    for (uint32_t m = 0; m < x.order(); ++m) {
      const spt_matrix_s* f = opts.init_factors[m];
      require(f != nullptr, "init_factors[", m, "] must not be NULL");
      require(f->rows == x.dims[m] && f->cols == opts.rank, "init_factors[", m, "] must be ", x.dims[m], " x ",
              opts.rank, ", got ", f->rows, " x ", f->cols);
      require(f->dtype() == x.dtype(), "init_factors[", m, "] must have the tensor's dtype");
    }
  }
}

template <typename T>
void init_factors(spt_context_s& ctx, const spt_cp_apr_options& opts, spt_ktensor_s& k) {
  const uint32_t order = k.order();
  if (opts.init == SPT_CP_APR_INIT_USER) {
    for (uint32_t m = 0; m < order; ++m) {
      const spt_matrix_s& src = *opts.init_factors[m];
      MatRef<T> dst = k.template factor<T>(m);
      for (spt_nnz i = 0; i < dst.rows; ++i)
        for (spt_nnz r = 0; r < dst.cols; ++r) {
          const T v = src.at<T>(i, r);
          require(v >= T(0), "init_factors[", m, "](", i, ", ", r, ") = ", static_cast<double>(v),
                  " is negative (CP-APR factors must be nonnegative)");
          dst(i, r) = v;
        }
    }
    return;
  }
  std::mt19937_64 gen(opts.seed != 0 ? opts.seed : ctx.seed);
  for (uint32_t m = 0; m < order; ++m) {
    MatRef<T> dst = k.template factor<T>(m);
    for (spt_nnz i = 0; i < dst.rows; ++i)
      for (spt_nnz r = 0; r < dst.cols; ++r) dst(i, r) = unit_uniform<T>(gen);
  }
}

template <typename T>
double loglikelihood_t(const spt_coo_s& x, const spt_ktensor_s& k, int threads) {
  const uint32_t order = k.order();
  const spt_index rank = k.rank;
  const T* lambda = k.lambda.ptr<T>();
  std::vector<const T*> f(order);
  for (uint32_t m = 0; m < order; ++m) f[m] = k.factors[m]->ptr<T>();
  // Sum of all model entries = sum_r lambda_r prod_n colsum_n(r).
  double total = 0;
  for (spt_index r = 0; r < rank; ++r) {
    double p = static_cast<double>(lambda[r]);
    for (uint32_t m = 0; m < order; ++m) {
      double s = 0;
      for (spt_index i = 0; i < k.dims[m]; ++i) s += static_cast<double>(f[m][static_cast<spt_nnz>(i) * rank + r]);
      p *= s;
    }
    total += p;
  }
  // Per-thread partial sums over fixed static chunks, added in thread order:
  // deterministic for a fixed thread count.
  std::vector<double> partial(static_cast<size_t>(threads), 0.0);
  const T* vals = x.values<T>();
  const spt_nnz nnz = x.nnz;
#pragma omp parallel num_threads(threads)
  {
    int tid = 0, nt = 1;
#ifdef _OPENMP
    tid = omp_get_thread_num();
    nt = omp_get_num_threads();
#endif
    const spt_nnz begin = nnz * tid / nt, end = nnz * (tid + 1) / nt;
    double local = 0;
    for (spt_nnz e = begin; e < end; ++e) {
      double mv = 0;
      for (spt_index r = 0; r < rank; ++r) {
        double p = static_cast<double>(lambda[r]);
        for (uint32_t m = 0; m < order; ++m) p *= static_cast<double>(f[m][static_cast<spt_nnz>(x.ind[m][e]) * rank + r]);
        mv += p;
      }
      const double xv = static_cast<double>(vals[e]);
      if (xv != 0) local += xv * std::log(mv);
    }
    partial[static_cast<size_t>(tid)] = local;
  }
  double sum = 0;
  for (double p : partial) sum += p;
  return sum - total;
}

template <typename T>
void require_nonnegative_t(const spt_coo_s& x) {
  const T* v = x.values<T>();
  for (spt_nnz e = 0; e < x.nnz; ++e) {
    if (!(v[e] >= T(0))) {
      std::string coord;
      for (uint32_t m = 0; m < x.order(); ++m) coord += (m ? ", " : "") + std::to_string(x.ind[m][e]);
      fail(SPT_ERR_INVALID_ARGUMENT, "CP-APR needs nonnegative values (counts); nonzero ", e, " at (", coord,
           ") is ", static_cast<double>(v[e]));
    }
  }
}

// The host steps: the factors in k, lambda in double, Phi per mode in host
// memory, Phi by the dispatcher's kernels on the storage
// cp_apr_choose_format picks (COO groups or one HiCOO copy).
template <typename T>
class HostCpAprSteps final : public dispatch::CpAprSteps<T> {
 public:
  HostCpAprSteps(spt_context_s& ctx, const spt_coo_s& x, const spt_cp_apr_options& opts)
      : ctx_(ctx), x_(x), threads_(thread_count(ctx)) {
    if constexpr (std::is_same_v<T, float>) flush_subnormals_.emplace(threads_);
    std::string why;
    const spt_tensor_format format = cp_apr_choose_format(ctx, x, opts.format, &hicoo_, &why);
    log(ctx, 1, cat("CP-APR: Phi on ", format == SPT_TENSOR_FORMAT_HICOO ? "HiCOO" : "COO", ": ", why));
    if (format == SPT_TENSOR_FORMAT_COO) {
      groups_.resize(x.order());
      for (uint32_t m = 0; m < x.order(); ++m) groups_[m] = group_by_mode(x, m);
    }
    for (uint32_t m = 0; m < x.order(); ++m) phi_.emplace_back(x.dims[m], opts.rank);
  }

  const char* name() const override { return hicoo_ ? "HiCOO" : "COO groups"; }
  void start(spt_ktensor_s& k) override {
    k_ = &k;
    lambda_.assign(k.rank, 1.0);
    for (auto& p : phi_) std::fill(p.values.data(), p.values.data() + p.values.size(), T(0));
    // Views of the factors for the Phi kernels (their storage stays put
    // for the run; the steps change the values in place).
    factors_.clear();
    for (uint32_t m = 0; m < k.order(); ++m) {
      MatRef<T> f = k.template factor<T>(m);
      factors_.push_back({f.data, f.rows, f.cols, f.ld});
    }
  }
  void normalise(uint32_t mode) override { normalize_columns(k_->template factor<T>(mode), lambda_); }
  void scooch(uint32_t mode, double kappa, double kappatol) override {
    MatRef<T> a = k_->template factor<T>(mode);
    MatRef<T> ph = phi_[mode].ref();
    for (spt_nnz i = 0; i < a.rows; ++i)
      for (spt_nnz r = 0; r < a.cols; ++r)
        if (ph(i, r) > T(0) && static_cast<double>(a(i, r)) < kappatol)
          a(i, r) = static_cast<T>(static_cast<double>(a(i, r)) + kappa);
  }
  void redistribute(uint32_t mode) override {
    MatRef<T> a = k_->template factor<T>(mode);
    for (spt_nnz i = 0; i < a.rows; ++i)
      for (spt_nnz r = 0; r < a.cols; ++r) a(i, r) = static_cast<T>(static_cast<double>(a(i, r)) * lambda_[r]);
    std::fill(lambda_.begin(), lambda_.end(), 1.0);
  }
  void phi(uint32_t mode, double eps) override {
    MatRef<T> ph = phi_[mode].ref();
    if (hicoo_) SPT_DISPATCH(ctx_, cp_apr_phi_hicoo, *hicoo_, mode, factors_.data(), eps, ph);
    else SPT_DISPATCH(ctx_, cp_apr_phi, groups_[mode], mode, factors_.data(), eps, ph);
  }
  double kkt_violation(uint32_t mode) override {
    MatRef<T> a = k_->template factor<T>(mode);
    MatRef<T> ph = phi_[mode].ref();
    double viol = 0;
    for (spt_nnz i = 0; i < a.rows; ++i)
      for (spt_nnz r = 0; r < a.cols; ++r)
        viol = std::max(viol, std::fabs(std::min(static_cast<double>(a(i, r)), 1.0 - static_cast<double>(ph(i, r)))));
    return viol;
  }
  void multiply(uint32_t mode) override {
    MatRef<T> a = k_->template factor<T>(mode);
    MatRef<T> ph = phi_[mode].ref();
    for (spt_nnz i = 0; i < a.rows; ++i)
      for (spt_nnz r = 0; r < a.cols; ++r) a(i, r) *= ph(i, r);
  }
  double loglikelihood() override {
    for (spt_index r = 0; r < k_->rank; ++r) k_->lambda.template ptr<T>()[r] = static_cast<T>(lambda_[r]);
    return loglikelihood_t<T>(x_, *k_, threads_);
  }
  void finish(spt_ktensor_s&, std::vector<double>* lambda) override { *lambda = lambda_; }

 private:
  // float32: subnormals flushed for the run (core/subnormals.hpp).
  std::optional<ScopedFlushSubnormals> flush_subnormals_;
  spt_context_s& ctx_;
  const spt_coo_s& x_;
  int threads_;
  spt_ktensor_s* k_ = nullptr;
  std::vector<ConstMatRef<T>> factors_;  // k_'s factors, from start
  std::vector<double> lambda_;
  std::unique_ptr<spt_hicoo_s> hicoo_;
  std::vector<ModeGroups> groups_;
  std::vector<DenseMatrix<T>> phi_;
};

// The initial ktensor: the user's or random factors, lambda 1.
template <typename T>
spt_ktensor_s initial_ktensor(spt_context_s& ctx, const spt_coo_s& x, const spt_cp_apr_options& opts) {
  spt_ktensor_s k;
  init_ktensor(k, x.dtype(), x.dims, opts.rank);
  init_factors<T>(ctx, opts, k);
  return k;
}

template <typename T>
spt_status cp_apr_t(spt_context_s& ctx, const spt_coo_s& x, const spt_cp_apr_options& opts, spt_ktensor_s& out) {
  // The device steps when the context's backend runs on the GPU (nullptr
  // when it does not, or falls back under AUTO with a note); a device
  // failure during the run under AUTO restarts on the host from the same
  // initial factors (the callback then sees the iterations again).
  if (std::unique_ptr<dispatch::CpAprSteps<T>> device = dispatch::make_device_cp_apr_steps<T>(ctx, x, opts)) {
    try {
      spt_ktensor_s k = initial_ktensor<T>(ctx, x, opts);
      log(ctx, 1, cat("CP-APR: Phi on ", device->name()));
      return run_cp_apr<T>(*device, opts, k, out);
    } catch (const dispatch::DeviceStepFailure& f) {
      dispatch::cp_apr_after_device_failure(ctx, f);
    }
  }
  HostCpAprSteps<T> host(ctx, x, opts);
  spt_ktensor_s k = initial_ktensor<T>(ctx, x, opts);
  return run_cp_apr<T>(host, opts, k, out);
}

}  // namespace


double cp_apr_loglikelihood(const spt_coo_s& x, const spt_ktensor_s& k, int threads) {
  require(k.dims == x.dims, "the ktensor's dims must equal the tensor's");
  require(k.dtype() == x.dtype(), "the ktensor's dtype must equal the tensor's");
  return with_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return loglikelihood_t<T>(x, k, std::max(threads, 1));
  });
}

void require_nonnegative(const spt_coo_s& x) {
  with_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    require_nonnegative_t<T>(x);
  });
}

spt_tensor_format cp_apr_choose_format(spt_context_s& ctx, const spt_coo_s& x, spt_tensor_format requested,
                                       std::unique_ptr<spt_hicoo_s>* hicoo, std::string* why) {
  if (requested == SPT_TENSOR_FORMAT_COO) {
    if (why) *why = "format COO requested";
    return SPT_TENSOR_FORMAT_COO;
  }
  const int threads = thread_count(ctx);
  auto h = std::make_unique<spt_hicoo_s>(hicoo::from_coo(x, hicoo::Params{}, threads));
  spt_tensor_format chosen = SPT_TENSOR_FORMAT_HICOO;
  if (requested == SPT_TENSOR_FORMAT_HICOO) {
    if (why) *why = "format HiCOO requested";
  } else {
    // AUTO: HiCOO when it compresses (block ratio alpha_b below eq. 4.11's
    // break-even, i.e. blocks hold several nonzeros each), else COO. With
    // several nonzeros per block the HiCOO Phi reads cached blocked factor
    // rows: in bench_cp_apr it beat the COO groups on modes whose other
    // factors do not fit in cache and was about even elsewhere, in one copy
    // instead of N (docs/design-measurements.md, "CP-APR format choice").
    // With about one nonzero per block it
    // is COO plus per-block overhead. (The c_b >= 0.01 test of the MTTKRP
    // advice is not used: it passes one-nonzero blocks whenever B <= 64.)
    const hicoo::Stats st = hicoo::compute_stats(*h, threads);
    const bool compresses = st.block_ratio < st.block_ratio_threshold;
    if (!compresses) chosen = SPT_TENSOR_FORMAT_COO;
    if (why)
      *why = cat("AUTO: HiCOO block ratio alpha_b = ", st.block_ratio, compresses ? " < " : " >= ",
                 "the storage break-even ", st.block_ratio_threshold, " (", st.mean_nnz_per_block,
                 " nonzeros per block) -> ", chosen == SPT_TENSOR_FORMAT_HICOO ? "HiCOO" : "COO groups");
  }
  if (hicoo) *hicoo = chosen == SPT_TENSOR_FORMAT_HICOO ? std::move(h) : nullptr;
  return chosen;
}

spt_status cp_apr(spt_context_s& ctx, const spt_coo_s& x, const spt_cp_apr_options& given, spt_ktensor_s& out) {
  const spt_cp_apr_options opts = normalized_options(given);
  validate_options(x, opts);
  require_nonnegative(x);
  return with_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return cp_apr_t<T>(ctx, x, opts, out);
  });
}

}  // namespace spt::algo
