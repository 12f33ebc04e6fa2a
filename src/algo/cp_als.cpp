// CP-ALS following pyttb.cp_als (Tensor Toolbox cp_als) step by step:
//
//   normX = ||X||; U = initial factors; fit = 0
//   each sweep, for each mode n in 0..N-1:
//     B = MTTKRP(X, U, n);  Y = Hadamard_{m != n} U_m^T U_m;  U_n = B Y^{-1}
//     lambda = column 2-norms (first sweep) or max(max |column|, 1) (later)
//     U_n = U_n ./ lambda
//   fit = 1 - sqrt(|normX^2 + ||P||^2 - 2 <X,P>|) / normX with P = [[lambda; U]]
//     ||P||^2 = lambda^T (Hadamard of all Grams) lambda
//     <X,P>   = sum_r lambda_r sum_i U_{N-1}(i,r) B_{N-1}(i,r)  (last MTTKRP reused)
//   Near fit 1 the three terms cancel: an error e in them moves the fit by
//   about e / (||X - P|| ||X||). So every term is in double: the Grams of
//   the fit are computed in double from the factors, and when the rounding
//   of B to T (float32) gives the fit a noise above kFitNoise (one standard
//   deviation, estimated from B), <X,P> is summed again in double over the
//   nonzeros (one extra pass per sweep, COO or CSF input; in practice only
//   within about 1e-2 of fit 1).
//   stop when |fit - fit_old| < tol after the first sweep, or at max_iters
//   finally arrange (unit 2-norm columns, sorted by decreasing lambda) and
//   fix signs (pyttb ktensor.fixsigns).
//
// This loop (run_cp_als) is the only one, for every backend: it calls the
// steps of a dispatch::CpAlsSteps (MTTKRP, normal matrix, solve, normalise,
// Gram, fit terms), which run where the data lives: on the host
// (HostCpAlsSteps) or, on a COO tensor whose context runs on a device, on
// the device through the plugin (dispatch::make_device_cp_als_steps), the
// data staying there for the whole run.
//
// Differences from pyttb, all deliberate: the solve uses Cholesky with a
// pseudo-inverse fallback instead of numpy.linalg.solve (same result for the
// symmetric positive definite Y the method produces); a zero column norm
// keeps the column at zero with lambda 0 where pyttb would produce NaN;
// sorting keeps ties in their original order.
#include "algo/cp_als.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <type_traits>

#include "algo/format_advice.hpp"
#include "algo/mttkrp_operands.hpp"
#include "algo/normal_equations.hpp"
#include "algo/summed_norm.hpp"
#include "core/random.hpp"
#include "core/subnormals.hpp"
#include "dispatch/cp_als_steps.hpp"
#include "dispatch/dispatch.hpp"
#include "kernels/dense.hpp"

namespace spt {

namespace {

using Clock = std::chrono::steady_clock;
using kernels::ColumnNorm;

// sum_{r,s} lambda_r lambda_s prod_m G_m(r,s), in double, as pyttb's
// ktensor.norm (coefficient matrix lambda lambda^T times each Gram in turn).
template <typename T, typename G>
double kruskal_norm_squared(const T* lambda, const std::vector<DenseMatrix<G>>& grams, spt_index rank) {
  double total = 0.0;
  for (spt_index r = 0; r < rank; ++r)
    for (spt_index s = 0; s < rank; ++s) {
      double v = static_cast<double>(lambda[r]) * static_cast<double>(lambda[s]);
      for (const DenseMatrix<G>& g : grams) v *= static_cast<double>(g(r, s));
      total += v;
    }
  return total;
}

// The largest rounding noise (one standard deviation) the fit may carry
// before <X,P> is recomputed exactly.
constexpr double kFitNoise = 1e-6;

// The fit's change when <X,P> is off by `err` either way (the larger side).
double fit_sensitivity(double norm_x_squared, double norm_p_squared, double inner, double err) {
  const double r2 = norm_x_squared + norm_p_squared - 2.0 * inner;
  const double hi = std::sqrt(std::abs(r2) + 2.0 * err), lo = std::sqrt(std::max(std::abs(r2) - 2.0 * err, 0.0));
  return (hi - lo) / std::sqrt(norm_x_squared);
}

template <typename T>
void initialise_factors(spt_context_s& ctx, const spt_cpd_options& opts, spt_ktensor_s& k) {
  const uint32_t order = k.order();
  if (opts.init == SPT_CPD_INIT_USER) {
    for (uint32_t m = 0; m < order; ++m) {
      const spt_matrix_s& src = *opts.init_factors[m];
      MatRef<T> dst = k.template factor<T>(m);
      for (spt_nnz i = 0; i < dst.rows; ++i)
        for (spt_nnz r = 0; r < dst.cols; ++r) dst(i, r) = src.at<T>(i, r);
    }
    return;
  }
  // Random: uniform [0,1), mode by mode, each factor in row-major order (the
  // order numpy.random.uniform(0, 1, (I, R)) fills, as pyttb init='random').
  const uint64_t seed = opts.seed != 0 ? opts.seed : ctx.seed;
  std::mt19937_64 gen(seed);
  for (uint32_t m = 0; m < order; ++m) {
    MatRef<T> dst = k.template factor<T>(m);
    for (spt_nnz i = 0; i < dst.rows; ++i)
      for (spt_nnz r = 0; r < dst.cols; ++r) dst(i, r) = unit_uniform<T>(gen);
  }
}

// pyttb ktensor.arrange(): normalise every column to unit 2-norm (absorbing
// the norms into lambda; zero columns stay zero), make lambda non-negative
// by flipping mode-0 columns, then sort components by decreasing lambda.
template <typename T>
void arrange(spt_context_s& ctx, spt_ktensor_s& k) {
  const uint32_t order = k.order();
  const spt_index rank = k.rank;
  T* lambda = k.lambda.ptr<T>();
  std::vector<double> norms(rank);
  std::vector<T> divisors(rank);
  for (uint32_t m = 0; m < order; ++m) {
    MatRef<T> u = k.template factor<T>(m);
    SPT_DISPATCH(ctx, column_norms, ConstMatRef<T>{u.data, u.rows, u.cols, u.ld}, ColumnNorm::two, norms.data());
    for (spt_index r = 0; r < rank; ++r) {
      divisors[r] = static_cast<T>(norms[r]);
      lambda[r] *= divisors[r];
    }
    SPT_DISPATCH(ctx, divide_columns, u, divisors.data());
  }
  for (spt_index r = 0; r < rank; ++r) {
    if (lambda[r] < T(0)) {
      lambda[r] = -lambda[r];
      MatRef<T> u0 = k.template factor<T>(0);
      for (spt_nnz i = 0; i < u0.rows; ++i) u0(i, r) = -u0(i, r);
    }
  }
  std::vector<spt_index> perm(rank);
  std::iota(perm.begin(), perm.end(), spt_index(0));
  std::stable_sort(perm.begin(), perm.end(), [&](spt_index a, spt_index b) { return lambda[a] > lambda[b]; });
  bool identity = true;
  for (spt_index r = 0; r < rank; ++r) identity = identity && perm[r] == r;
  if (identity) return;
  std::vector<T> tmp(rank);
  for (spt_index r = 0; r < rank; ++r) tmp[r] = lambda[perm[r]];
  std::copy(tmp.begin(), tmp.end(), lambda);
  for (uint32_t m = 0; m < order; ++m) {
    MatRef<T> u = k.template factor<T>(m);
    for (spt_nnz i = 0; i < u.rows; ++i) {
      T* row = u.row(i);
      for (spt_index r = 0; r < rank; ++r) tmp[r] = row[perm[r]];
      std::copy(tmp.begin(), tmp.end(), row);
    }
  }
}

// pyttb ktensor.fixsigns() without a reference: for each component, find in
// every mode the entry of largest magnitude (first one on ties); if an even
// number of those are negative flip all those columns, if odd flip all but
// the last, so the component itself is unchanged.
template <typename T>
void fix_signs(spt_ktensor_s& k) {
  const uint32_t order = k.order();
  std::vector<uint32_t> negative_modes;
  for (spt_index r = 0; r < k.rank; ++r) {
    negative_modes.clear();
    for (uint32_t m = 0; m < order; ++m) {
      MatRef<T> u = k.template factor<T>(m);
      T best = T(0);
      T best_value = T(0);
      for (spt_nnz i = 0; i < u.rows; ++i) {
        const T v = u(i, r);
        if (std::abs(v) > best) {
          best = std::abs(v);
          best_value = v;
        }
      }
      if (best_value < T(0)) negative_modes.push_back(m);
    }
    const size_t flips = negative_modes.size() / 2 * 2;
    for (size_t f = 0; f < flips; ++f) {
      MatRef<T> u = k.template factor<T>(negative_modes[f]);
      for (spt_nnz i = 0; i < u.rows; ++i) u(i, r) = -u(i, r);
    }
  }
}

// The end of every sweep of run_cp_als: fit = 1 - sqrt(|normX^2 + ||P||^2
// - 2 <X,P>|) / normX, history, convergence (after the first sweep), log,
// progress, callback.
struct SweepTracker {
  const spt_context_s& ctx;
  const spt_cpd_options& opts;
  spt_ktensor_s& k;
  double norm_x_squared;
  double norm_x;
  double fit = 0.0;
  bool converged = false;
  bool stopped_by_callback = false;
  int iteration = 0;  // sweeps done

  bool more() const { return iteration < opts.max_iters && !converged && !stopped_by_callback; }

  // Records the sweep just done; returns more().
  bool end_sweep(double inner, double norm_p_squared, double seconds) {
    const double fit_old = fit;
    const double residual = std::sqrt(std::abs(norm_x_squared + norm_p_squared - 2.0 * inner));
    fit = 1.0 - residual / norm_x;
    if (!std::isfinite(fit))
      fail(SPT_ERR_NUMERICAL, "the fit became non-finite in iteration ", iteration + 1,
           "; the problem may be badly scaled or the rank too high");
    const double fit_change = std::abs(fit_old - fit);
    ++iteration;
    k.fit_history.push_back(fit);
    k.seconds_history.push_back(seconds);
    converged = iteration > 1 && fit_change < opts.tol;

    log(ctx, 2, cat("CP-ALS iteration ", iteration, ": fit ", fit, ", change ", fit_change, ", ", seconds, " s"));
    progress(ctx, "cpd", static_cast<double>(iteration) / opts.max_iters);
    if (opts.callback && opts.callback(opts.callback_data, iteration, fit, fit_change, seconds) != 0 && !converged)
      stopped_by_callback = true;
    return more();
  }
};

// After the last sweep: arrange, fix signs, record the result and log.
template <typename T>
spt_status finish(spt_context_s& ctx, const SweepTracker& t, const char* storage, spt_ktensor_s& k) {
  arrange<T>(ctx, k);
  fix_signs<T>(k);
  k.fit = t.fit;
  k.iterations = t.iteration;
  k.converged = t.converged ? 1 : 0;
  log(ctx, 1,
      cat("CP-ALS (", storage, ") rank ", k.rank, ": fit ", t.fit, " after ", t.iteration, " iterations (",
          t.converged ? "converged" : (t.stopped_by_callback ? "stopped by the callback" : "iteration limit reached"),
          ")"));
  return t.converged ? SPT_OK : SPT_WARN_NOT_CONVERGED;
}

// The fit identity loses half the digits near 1: ||X||^2 + ||M||^2 - 2<X,M>
// cancels, so its rounding error is about eps ||X||^2 and the fit's about
// sqrt(eps) (1.5e-8 in double), and which side of 1 - 1e-8 it lands on
// depends on the summation order (the thread count). When the model is
// within kExactFitGap of exact and x has at most kExactFitMaxCells cells,
// the final fit is recomputed from the residual itself, cell by cell, which
// is exact to rounding.
constexpr double kExactFitGap = 1e-6;
constexpr double kExactFitMaxCells = 65536;

// `for_each_entry(visit)` calls visit(coord, value) for every stored entry,
// coord indexed by mode; repeated coordinates may come as several entries.
template <typename T, typename ForEachEntry>
void exact_final_fit(const std::vector<spt_index>& dims, ForEachEntry&& for_each_entry, double norm_x_squared,
                     spt_ktensor_s& k) {
  if (!(1.0 - k.fit < kExactFitGap)) return;
  double cells = 1;
  for (spt_index d : dims) cells *= d;
  if (cells > kExactFitMaxCells) return;
  const uint32_t order = static_cast<uint32_t>(dims.size());
  // Cell offsets with mode 0 fastest; repeated coordinates add up.
  std::vector<double> residual(static_cast<size_t>(cells), 0.0);
  for_each_entry([&](const spt_index* coord, T value) {
    size_t cell = 0;
    for (uint32_t m = order; m-- > 0;) cell = cell * dims[m] + coord[m];
    residual[cell] += static_cast<double>(value);
  });
  const T* lambda = k.lambda.ptr<T>();
  std::vector<spt_index> at(order, 0);
  double sum = 0.0;
  for (size_t cell = 0; cell < residual.size(); ++cell) {
    double model = 0.0;
    for (spt_index r = 0; r < k.rank; ++r) {
      double term = static_cast<double>(lambda[r]);
      for (uint32_t m = 0; m < order; ++m) term *= static_cast<double>(k.template factor<T>(m)(at[m], r));
      model += term;
    }
    const double d = residual[cell] - model;
    sum += d * d;
    for (uint32_t m = 0; m < order && ++at[m] == dims[m]; ++m) at[m] = 0;
  }
  k.fit = 1.0 - std::sqrt(sum) / std::sqrt(norm_x_squared);
  if (!k.fit_history.empty()) k.fit_history.back() = k.fit;
}

template <typename T>
void exact_final_fit(const spt_coo_s& x, double norm_x_squared, spt_ktensor_s& k) {
  exact_final_fit<T>(
      x.dims,
      [&](auto&& visit) {
        const T* val = x.values<T>();
        std::vector<spt_index> coord(x.order());
        for (spt_nnz n = 0; n < x.nnz; ++n) {
          for (uint32_t m = 0; m < x.order(); ++m) coord[m] = x.ind[m][n];
          visit(coord.data(), val[n]);
        }
      },
      norm_x_squared, k);
}

// The same on a CSF tensor: the leaves of its first tree.
template <typename T>
void exact_final_fit(const spt_csf_s& x, double norm_x_squared, spt_ktensor_s& k) {
  exact_final_fit<T>(
      x.dims,
      [&](auto&& visit) {
        if (x.trees.empty()) return;
        const CsfTree& tree = x.trees[0];
        const uint32_t leaf = tree.levels() - 1;
        const T* val = tree.vals.get<T>().data();
        std::vector<spt_index> coord(x.order());
        auto walk = [&](auto&& self, uint32_t l, spt_nnz n) -> void {
          coord[tree.mode_order[l]] = tree.fids[l][n];
          if (l == leaf) return visit(coord.data(), val[n]);
          for (spt_nnz c = tree.fptr[l][n]; c < tree.fptr[l][n + 1]; ++c) self(self, l + 1, c);
        };
        for (spt_nnz s = 0; s < tree.nodes(0); ++s) walk(walk, 0, s);
      },
      norm_x_squared, k);
}

// CP-ALS on the host over `operand` with the stable fit, for any storage x
// that has an exact <X,P> kernel and exact_final_fit: the inner product is
// recomputed in double when float32 rounding could move the fit
// (cp_als_operand), and the final fit of a model within kExactFitGap of x
// from the residual itself.
template <typename T, typename Tensor>
spt_status cp_als_stable_fit(spt_context_s& ctx, algo::MttkrpOperand<T>& operand, const Tensor& x,
                             double norm_x_squared, const spt_cpd_options& opts, spt_ktensor_s& out,
                             const ExactInner<T>& exact_inner) {
  const spt_status status = cp_als_operand<T>(ctx, operand, x.dims, norm_x_squared, opts, out, exact_inner);
  exact_final_fit<T>(x, norm_x_squared, out);
  return status;
}

// Checks ||X|| and sets k up with the initial factors (shared by both paths).
template <typename T>
void prepare(spt_context_s& ctx, const std::vector<spt_index>& dims, double norm_x_squared,
             const spt_cpd_options& opts, spt_ktensor_s& k) {
  const double norm_x = std::sqrt(norm_x_squared);
  if (!std::isfinite(norm_x))
    fail(SPT_ERR_INVALID_ARGUMENT, "the tensor's norm is not finite (NaN/Inf values, or values too large); "
                                   "clean the values before CP-ALS");
  require(norm_x > 0.0, "the tensor's nonzeros are all zero (norm 0); CP-ALS needs a nonzero tensor");
  init_ktensor(k, dtype_of<T>(), dims, opts.rank);
  initialise_factors<T>(ctx, opts, k);
}

// Power-of-two exponent that brings x's values into a range where ||X||^2,
// <X, M> and ||M||^2 cannot overflow or underflow (0 = already safe): the
// fit formula squares the values, so float64 values near 1e300 (or 1e-300)
// overflowed (underflowed) it and CP-ALS refused a valid tensor. Scaling by
// a power of two is exact, so the scaled run gives the same factors and fit
// and lambda is scaled back exactly. Non-finite or all-zero values keep 0
// (prepare() reports them).
template <typename T>
int magnitude_shift(const spt_coo_s& x, double norm_x_squared) {
  // Squared norms between these bounds leave the fit's terms far from the
  // type's limits (float32 kernels accumulate in float).
  const double lo = sizeof(T) == 4 ? 0x1p-100 : 0x1p-600;
  const double hi = sizeof(T) == 4 ? 0x1p+100 : 0x1p+600;
  if (std::isfinite(norm_x_squared) && norm_x_squared >= lo && norm_x_squared <= hi) return 0;
  const T* v = x.values<T>();
  double largest = 0;
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    const double a = std::abs(static_cast<double>(v[k]));
    if (!std::isfinite(a)) return 0;
    largest = std::max(largest, a);
  }
  if (largest == 0) return 0;
  return -std::ilogb(largest);  // largest * 2^shift is in [1, 2)
}

}  // namespace

namespace {

// The CP-ALS steps on the host, on k itself: MTTKRPs through `operand`,
// the dense steps through SPT_DISPATCH, the normal equations by LAPACK.
template <typename T>
class HostCpAlsSteps final : public dispatch::CpAlsSteps<T> {
 public:
  HostCpAlsSteps(spt_context_s& ctx, algo::MttkrpOperand<T>& operand, const std::vector<spt_index>& dims,
                 spt_index rank, const ExactInner<T>& exact_inner)
      : ctx_(ctx),
        operand_(operand),
        dims_(dims),
        order_(static_cast<uint32_t>(dims.size())),
        rank_(rank),
        exact_inner_(exact_inner),
        mttkrp_out_(dims.back(), rank),
        grams_(order_, DenseMatrix<T>(rank, rank)),
        hadamard_(rank, rank),
        normal_equations_(rank),
        norms_(rank),
        dots_(rank),
        fit_grams_(wide_fit ? order_ : 0, DenseMatrix<double>(rank, rank)),
        non_finite_(order_, -1) {
    if constexpr (std::is_same_v<T, float>) flush_subnormals_.emplace(thread_count(ctx));
  }

  const char* name() const override { return operand_.name(); }
  const char* solver_library() const override { return "LAPACK"; }

  void start(spt_ktensor_s& k) override {
    factors_.resize(order_);
    const_factors_.resize(order_);
    for (uint32_t m = 0; m < order_; ++m) {
      factors_[m] = k.template factor<T>(m);
      const_factors_[m] = {factors_[m].data, factors_[m].rows, factors_[m].cols, factors_[m].ld};
    }
    lambda_ = k.lambda.ptr<T>();
    for (uint32_t m = 0; m < order_; ++m) gram(m);
  }

  // U_n is not an input of its own MTTKRP, so U_n takes its output and the
  // solution in place, without a copy; only the last mode's B has storage
  // of its own, as fit_terms reads it after U_n is updated.
  void mttkrp(uint32_t mode) override {
    b_in_factor_ = mode + 1 < order_;
    last_b_ = b_in_factor_ ? factors_[mode] : MatRef<T>{mttkrp_out_.values.data(), dims_[mode], rank_, rank_};
    operand_.mttkrp(ctx_, const_factors_.data(), mode, last_b_);
  }

  dispatch::CpAlsNormalInfo normal_matrix(uint32_t mode) override {
    const spt_nnz rr = rank_ * spt_nnz(rank_);
    for (spt_nnz i = 0; i < rr; ++i) hadamard_.values[i] = T(1);
    for (uint32_t m = 0; m < order_; ++m) {
      if (m == mode) continue;
      for (spt_nnz i = 0; i < rr; ++i) hadamard_.values[i] *= grams_[m].values[i];
    }
    dispatch::CpAlsNormalInfo info;
    for (spt_nnz i = 0; i < rr; ++i) info.non_finite = info.non_finite || !std::isfinite(hadamard_.values[i]);
    if (info.non_finite) return info;
    const typename NormalEquations<T>::Factorisation f = normal_equations_.factorise(hadamard_.cref());
    info.cholesky_info = f.cholesky_info;
    info.anorm = static_cast<double>(f.anorm);
    info.rcond = static_cast<double>(f.rcond);
    return info;
  }

  void solve_cholesky(uint32_t mode) override {
    take_b(mode);
    normal_equations_.solve_cholesky(ctx_, factors_[mode]);
  }

  int solve_pseudo_inverse(uint32_t mode) override {
    take_b(mode);
    return normal_equations_.solve_pseudo_inverse(ctx_, hadamard_.cref(), factors_[mode]);
  }

  void normalise(uint32_t mode, bool first_sweep) override {
    SPT_DISPATCH(ctx_, column_norms, const_factors_[mode], first_sweep ? ColumnNorm::two : ColumnNorm::max_abs,
                 norms_.data());
    non_finite_[mode] = -1;
    for (spt_index r = 0; r < rank_; ++r) {
      if (!std::isfinite(norms_[r]) && non_finite_[mode] < 0) non_finite_[mode] = static_cast<int>(r);
      const T norm = static_cast<T>(norms_[r]);
      lambda_[r] = first_sweep ? norm : std::max(norm, T(1));
    }
    SPT_DISPATCH(ctx_, divide_columns, factors_[mode], lambda_);
  }

  int non_finite_component(uint32_t mode) override { return non_finite_[mode]; }

  // float32: the Gram in double (the fit's), rounded once for the normal
  // equations; both follow every update of the factor.
  void gram(uint32_t mode) override {
    if constexpr (wide_fit) {
      SPT_DISPATCH(ctx_, gram_wide, const_factors_[mode], fit_grams_[mode].ref());
      for (size_t e = 0; e < fit_grams_[mode].values.size(); ++e)
        grams_[mode].values[e] = static_cast<T>(fit_grams_[mode].values[e]);
    } else {
      SPT_DISPATCH(ctx_, gram, const_factors_[mode], grams_[mode].ref());
    }
  }

  dispatch::CpAlsFitTerms fit_terms() override {
    const uint32_t last = order_ - 1;
    SPT_DISPATCH(ctx_, column_dots, const_factors_[last],
                 ConstMatRef<T>{last_b_.data, last_b_.rows, last_b_.cols, last_b_.ld}, dots_.data());
    dispatch::CpAlsFitTerms terms;
    for (spt_index r = 0; r < rank_; ++r) terms.inner += dots_[r] * static_cast<double>(lambda_[r]);
    // float32: the Grams in double that gram() keeps (one per factor).
    if constexpr (wide_fit) terms.norm_model_squared = kruskal_norm_squared<T>(lambda_, fit_grams_, rank_);
    else terms.norm_model_squared = kruskal_norm_squared<T>(lambda_, grams_, rank_);
    if (exact_inner_) {
      // B holds one rounding to T per element (the MTTKRPs sum in double):
      // independent relative errors, uniform within +-eps/2, so <X,P> is off
      // by about eps/(2 sqrt 3) times the terms' root-sum-square (one
      // standard deviation); the terms may cancel, so that is not bounded by
      // |<X,P>|.
      const ConstMatRef<T>& u = const_factors_[last];
      double spread = 0.0;
      for (spt_nnz i = 0; i < u.rows; ++i)
        for (spt_nnz r = 0; r < rank_; ++r) {
          const double t = static_cast<double>(lambda_[r]) * static_cast<double>(u(i, r)) *
                           static_cast<double>(last_b_(i, r));
          spread += t * t;
        }
      terms.inner_error = 0.5 * std::numeric_limits<T>::epsilon() / std::sqrt(3.0) * std::sqrt(spread);
    }
    return terms;
  }

  std::optional<double> exact_inner() override {
    if (!exact_inner_) return std::nullopt;
    return exact_inner_(lambda_, const_factors_.data());
  }

  void finish(spt_ktensor_s&) override {}  // the factors and lambda are k's already

 private:
  static constexpr bool wide_fit = !std::is_same_v<T, double>;

  // U_n = B before the solve (already so unless B has storage of its own).
  void take_b(uint32_t mode) {
    if (!b_in_factor_) std::memcpy(factors_[mode].data, last_b_.data, sizeof(T) * last_b_.rows * rank_);
  }

  // float32: subnormals flushed for the run (core/subnormals.hpp).
  std::optional<ScopedFlushSubnormals> flush_subnormals_;
  spt_context_s& ctx_;
  algo::MttkrpOperand<T>& operand_;
  const std::vector<spt_index>& dims_;
  uint32_t order_;
  spt_index rank_;
  const ExactInner<T>& exact_inner_;
  // Every temporary the sweeps need, allocated once.
  DenseMatrix<T> mttkrp_out_;
  MatRef<T> last_b_;
  bool b_in_factor_ = false;  // last_b_ is U_n itself
  std::vector<DenseMatrix<T>> grams_;
  DenseMatrix<T> hadamard_;
  NormalEquations<T> normal_equations_;
  std::vector<double> norms_;
  std::vector<double> dots_;
  std::vector<DenseMatrix<double>> fit_grams_;  // float32: the Grams in double (gram())
  std::vector<int> non_finite_;
  std::vector<MatRef<T>> factors_;
  std::vector<ConstMatRef<T>> const_factors_;
  T* lambda_ = nullptr;
};

// A factor column whose norm was not finite in mode n's normalisation.
template <typename T>
void check_normalised(dispatch::CpAlsSteps<T>& steps, uint32_t n, int iteration) {
  const int component = steps.non_finite_component(n);
  if (component >= 0)
    fail(SPT_ERR_NUMERICAL, "non-finite values appeared in the factor of mode ", n, " (component ", component,
         ") in iteration ", iteration + 1, "; the problem may be badly scaled or the rank too high");
}

}  // namespace

// The one CP-ALS loop (see the top of this file); `steps` decides nothing:
// everything numerical that is chosen (solve branch, normalisation rule,
// fit, when to sum <X,P> exactly, convergence) is chosen here.
template <typename T>
spt_status run_cp_als(spt_context_s& ctx, dispatch::CpAlsSteps<T>& steps, const std::vector<spt_index>& dims,
                      double norm_x_squared, const spt_cpd_options& opts, spt_ktensor_s& k) {
  const uint32_t order = static_cast<uint32_t>(dims.size());
  const spt_index rank = opts.rank;
  const T eps = std::numeric_limits<T>::epsilon();
  prepare<T>(ctx, dims, norm_x_squared, opts, k);
  k.fit_history.reserve(static_cast<size_t>(opts.max_iters));
  k.seconds_history.reserve(static_cast<size_t>(opts.max_iters));
  steps.start(k);

  SweepTracker tracker{ctx, opts, k, norm_x_squared, std::sqrt(norm_x_squared)};
  while (tracker.more()) {
    const int iteration = tracker.iteration;
    const Clock::time_point start = Clock::now();
    for (uint32_t n = 0; n < order; ++n) {
      steps.mttkrp(n);
      const dispatch::CpAlsNormalInfo info = steps.normal_matrix(n);
      if (n > 0) check_normalised(steps, n - 1, iteration);
      if (info.non_finite)
        fail(SPT_ERR_NUMERICAL, "the normal-equation matrix for mode ", n, " became non-finite in iteration ",
             iteration + 1, " (factor Gram matrices overflow ", dtype_name(dtype_of<T>()),
             "); rescale the tensor or the initial factors");
      // Cholesky unless Y is not positive definite or numerically singular
      // (reciprocal condition below machine epsilon): then the
      // pseudo-inverse.
      const T rcond = static_cast<T>(info.rcond);
      if (info.cholesky_info == 0 && info.anorm > 0.0 && rcond >= eps) {
        steps.solve_cholesky(n);
      } else {
        log(ctx, 1,
            info.cholesky_info > 0
                ? cat("CP-ALS: the ", rank, " x ", rank, " normal-equation matrix is not positive definite "
                      "(Cholesky pivot ", info.cholesky_info, " failed); using the pseudo-inverse")
                : cat("CP-ALS: the ", rank, " x ", rank, " normal-equation matrix is numerically singular "
                      "(reciprocal condition ", rcond, "); using the pseudo-inverse"));
        if (const int eigen_info = steps.solve_pseudo_inverse(n); eigen_info > 0)
          fail(SPT_ERR_NUMERICAL, "mode ", n, ", iteration ", iteration + 1, ": the eigen-decomposition of the ",
               rank, " x ", rank, " normal-equation matrix did not converge (", steps.solver_library(), " info ",
               eigen_info, ")");
      }
      steps.normalise(n, iteration == 0);
      steps.gram(n);
    }
    const dispatch::CpAlsFitTerms terms = steps.fit_terms();
    check_normalised(steps, order - 1, iteration);
    double inner = terms.inner;
    // <X,P> again exactly when its rounding noise would move the fit by
    // more than kFitNoise.
    if (terms.inner_error > 0.0 &&
        fit_sensitivity(norm_x_squared, terms.norm_model_squared, inner, terms.inner_error) > kFitNoise) {
      if (const std::optional<double> exact = steps.exact_inner())
        inner = *exact;
      else
        log(ctx, 2, "CP-ALS: no COO copy on the device for an exact <X, M>; the fit keeps the MTTKRP's rounding noise");
    }
    tracker.end_sweep(inner, terms.norm_model_squared, std::chrono::duration<double>(Clock::now() - start).count());
  }
  steps.finish(k);
  return finish<T>(ctx, tracker, steps.name(), k);
}

template spt_status run_cp_als<float>(spt_context_s&, dispatch::CpAlsSteps<float>&, const std::vector<spt_index>&,
                                      double, const spt_cpd_options&, spt_ktensor_s&);
template spt_status run_cp_als<double>(spt_context_s&, dispatch::CpAlsSteps<double>&, const std::vector<spt_index>&,
                                       double, const spt_cpd_options&, spt_ktensor_s&);

// The sweeps only see the tensor through `operand` (its MTTKRPs), its dims
// and its squared norm, so every storage format shares them.
template <typename T>
spt_status cp_als_operand(spt_context_s& ctx, algo::MttkrpOperand<T>& operand, const std::vector<spt_index>& dims,
                          double norm_x_squared, const spt_cpd_options& opts, spt_ktensor_s& k,
                          const ExactInner<T>& exact_inner) {
  HostCpAlsSteps<T> steps(ctx, operand, dims, opts.rank, exact_inner);
  return run_cp_als<T>(ctx, steps, dims, norm_x_squared, opts, k);
}

template spt_status cp_als_operand<float>(spt_context_s&, algo::MttkrpOperand<float>&, const std::vector<spt_index>&,
                                         double, const spt_cpd_options&, spt_ktensor_s&, const ExactInner<float>&);
template spt_status cp_als_operand<double>(spt_context_s&, algo::MttkrpOperand<double>&,
                                          const std::vector<spt_index>&, double, const spt_cpd_options&,
                                          spt_ktensor_s&, const ExactInner<double>&);

spt_cpd_options normalized_cpd_options(const spt_cpd_options& given) {
  require(given.struct_size >= kCpdOptionsSize01, "opts.struct_size is ", given.struct_size,
          ", smaller than any released spt_cpd_options (", kCpdOptionsSize01,
          " bytes); initialise the options with spt_cpd_options_init()");
  // Fields the caller's (older) struct lacks keep their defaults (0 = AUTO).
  spt_cpd_options o{};
  std::memcpy(&o, &given, std::min(given.struct_size, sizeof(o)));
  o.struct_size = sizeof(o);
  return o;
}

void validate_cpd_options(const std::vector<spt_index>& dims, spt_nnz nnz, spt_dtype dtype,
                          const spt_cpd_options& opts) {
  require(opts.struct_size == sizeof(spt_cpd_options), "opts.struct_size is ", opts.struct_size, ", expected ",
          sizeof(spt_cpd_options), " (pass the options through normalized_cpd_options first)");
  require(opts.format == SPT_TENSOR_FORMAT_AUTO || opts.format == SPT_TENSOR_FORMAT_COO ||
              opts.format == SPT_TENSOR_FORMAT_CSF || opts.format == SPT_TENSOR_FORMAT_HICOO ||
              opts.format == SPT_TENSOR_FORMAT_FCOO || opts.format == SPT_TENSOR_FORMAT_HBCSF ||
              opts.format == SPT_TENSOR_FORMAT_HLS,
          "opts.format must be an spt_tensor_format value (SPT_TENSOR_FORMAT_AUTO .. _HLS), got ",
          static_cast<int>(opts.format));
  if (opts.format == SPT_TENSOR_FORMAT_HBCSF || opts.format == SPT_TENSOR_FORMAT_HLS)
    fail(SPT_ERR_UNSUPPORTED, "CP-ALS does not run on ",
         opts.format == SPT_TENSOR_FORMAT_HBCSF ? "HB-CSF" : "HLS",
         " (a handle serves one root mode; CP-ALS needs every mode): use SPT_TENSOR_FORMAT_AUTO, _COO, _CSF, "
         "_HICOO or _FCOO, or build one handle per mode and call spt_mttkrp_",
         opts.format == SPT_TENSOR_FORMAT_HBCSF ? "hbcsf" : "hls", " in your own loop");
  require(opts.csf_policy == SPT_CSF_AUTO || opts.csf_policy == SPT_CSF_ONEMODE ||
              opts.csf_policy == SPT_CSF_TWOMODE || opts.csf_policy == SPT_CSF_ALLMODE ||
              opts.csf_policy == SPT_CSF_MEMOIZED,
          "opts.csf_policy must be SPT_CSF_AUTO, _ONEMODE, _TWOMODE, _ALLMODE or _MEMOIZED, got ",
          static_cast<int>(opts.csf_policy));
  require(opts.rank >= 1, "opts.rank must be at least 1, got ", opts.rank);
  require(opts.max_iters >= 1, "opts.max_iters must be at least 1, got ", opts.max_iters);
  require(std::isfinite(opts.tol) && opts.tol >= 0.0, "opts.tol must be a finite number >= 0, got ", opts.tol);
  require(opts.init == SPT_CPD_INIT_RANDOM || opts.init == SPT_CPD_INIT_USER,
          "opts.init must be SPT_CPD_INIT_RANDOM (0) or SPT_CPD_INIT_USER (1), got ", static_cast<int>(opts.init));
  require(nnz >= 1, "the tensor has no nonzeros; CP-ALS needs at least one");
  const uint32_t order = static_cast<uint32_t>(dims.size());
  // Factor storage dims[m] x rank and the rank x rank Gram matrices must be
  // addressable and fit the machine: checked before anything is allocated,
  // so a huge rank fails at once with the sizes instead of paging for hours.
  const uint64_t r = opts.rank;
  uint64_t factor_bytes = 0;
  for (uint32_t m = 0; m < order; ++m)
    factor_bytes = checked_add(
        factor_bytes, checked_mul(checked_mul(dims[m], r, "a factor's size dims[m] * rank"), 8, "a factor's bytes"),
        "the factors' bytes");
  const uint64_t gram_bytes =
      checked_mul(checked_mul(checked_mul(r, r, "a Gram matrix's size rank * rank"), 8, "a Gram matrix's bytes"),
                  order + 1, "the Gram matrices' bytes");
  require_fits_memory(checked_add(factor_bytes, gram_bytes, "CP-ALS's working set"), [&] {
    return cat("CP-ALS with rank ", r, " (", order, " factor matrices dims[m] x rank: ", human_bytes(double(factor_bytes)),
               "; ", order + 1, " Gram matrices rank x rank: ", human_bytes(double(gram_bytes)), ")");
  });
  if (opts.init != SPT_CPD_INIT_USER) return;
  require(opts.init_factors != nullptr,
          "opts.init is SPT_CPD_INIT_USER but opts.init_factors is NULL; pass ", order, " factor matrices");
  for (uint32_t m = 0; m < order; ++m) {
    const spt_matrix_s* f = opts.init_factors[m];
    require(f != nullptr, "opts.init_factors[", m, "] is NULL");
    require(f->dtype() == dtype, "opts.init_factors[", m, "] is ", dtype_name(f->dtype()), " but the tensor is ",
            dtype_name(dtype), "; convert one of them");
    require(f->rows == dims[m] && f->cols == opts.rank, "opts.init_factors[", m, "] is ", f->rows, " x ", f->cols,
            ", expected dims[", m, "] x rank = ", dims[m], " x ", opts.rank);
    with_dtype(f->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (spt_nnz i = 0; i < f->rows; ++i)
        for (spt_nnz j = 0; j < f->cols; ++j)
          require(std::isfinite(f->at<T>(i, j)), "opts.init_factors[", m, "] has a non-finite value at (", i, ", ",
                  j, ")");
    });
  }
}

void validate_cpd_options(const spt_coo_s& x, const spt_cpd_options& opts) {
  validate_cpd_options(x.dims, x.nnz, x.dtype(), normalized_cpd_options(opts));
}

namespace {

// ||X||^2 as CP-ALS takes it on `operand`: a CSF operand's own, summed in
// its first tree's order (cp_als_take takes it there without sorting the
// COO, so both entry points give the same fits), else the COO's.
template <typename T>
double operand_norm_squared(const spt_context_s& ctx, const algo::MttkrpOperand<T>& operand, double coo_norm_squared) {
  const std::optional<SummedStats> own = operand.summed_stats(dispatch::exec_for(ctx));
  return own ? own->norm_squared : coo_norm_squared;
}

// cp_als after ||x||^2 (summed_norm_squared, its notes logged), with opts
// normalised and validated.
template <typename T>
spt_status cp_als_normed(spt_context_s& ctx, const spt_coo_s& x, double norm_x_squared, const spt_cpd_options& opts,
                         spt_ktensor_s& out) {
  {
    // Decomposes t (x, or x scaled) with ||t||^2 = norm_squared.
    auto decompose = [&](const spt_coo_s& t, double norm_squared) -> spt_status {
      // The steps on the device when the context runs there (the data stays
      // there for the whole run); nullptr = the host steps. Under AUTO a
      // small tensor stays on the host altogether, and a device failure
      // starts again on the host.
      const dispatch::SmallCpAlsOnHost small_on_host(ctx, t, opts);
      if (std::unique_ptr<dispatch::CpAlsSteps<T>> device = dispatch::make_device_cp_als_steps<T>(ctx, t, opts)) {
        try {
          const spt_status status = run_cp_als<T>(ctx, *device, t.dims, norm_squared, opts, out);
          exact_final_fit<T>(t, norm_squared, out);
          return status;
        } catch (const dispatch::DeviceStepFailure& failure) {
          dispatch::cp_als_after_device_failure(ctx, failure);
        }
      }
      std::unique_ptr<algo::MttkrpOperand<T>> operand = algo::make_mttkrp_operand<T>(ctx, t, opts);
      norm_squared = operand_norm_squared(ctx, *operand, norm_squared);
      return cp_als_stable_fit<T>(ctx, *operand, t, norm_squared, opts, out,
                                  [&](const T* lambda, const ConstMatRef<T>* factors) {
                                    return SPT_DISPATCH(ctx, inner_ktensor, t, lambda, factors, opts.rank);
                                  });
    };
    const int shift = magnitude_shift<T>(x, norm_x_squared);
    if (shift == 0) return decompose(x, norm_x_squared);
    // Decompose x * 2^shift (an exact copy), then scale lambda back. Its
    // norm is taken again (x's left the range), without a second note on
    // repeated coordinates.
    spt_coo_s scaled = copy_coo(x, x.dtype());
    T* v = scaled.template mutable_values<T>();
    for (spt_nnz k = 0; k < scaled.nnz; ++k) v[k] = std::ldexp(v[k], shift);
    log(ctx, 1, cat("CP-ALS: values scaled by 2^", shift, " so that the fit's squared norms stay in range"));
    const spt_status status = decompose(scaled, SPT_DISPATCH(ctx, summed_stats, scaled).norm_squared);
    for (spt_index r = 0; r < out.rank; ++r) out.lambda.at<T>(0, r) = std::ldexp(out.lambda.at<T>(0, r), -shift);
    return status;
  }
}

}  // namespace

spt_status cp_als(spt_context_s& ctx, const spt_coo_s& x, const spt_cpd_options& given, spt_ktensor_s& out) {
  const spt_cpd_options opts = normalized_cpd_options(given);
  validate_cpd_options(x.dims, x.nnz, x.dtype(), opts);
  return with_dtype(x.dtype(), [&](auto tag) -> spt_status {
    using T = typename decltype(tag)::type;
    return cp_als_normed<T>(ctx, x, algo::summed_norm_squared(ctx, x, "CP-ALS"), opts, out);
  });
}

namespace {

// cp_als_take on CSF: the first tree is built from x (or taken from AUTO's
// advice), x is freed, and the other trees are built from the first (a
// walk of it), so the COO and the trees of the policy are never held at
// once.
// The trees and the kernels are those cp_als builds, so the result is the
// same. The norm is taken from the first tree (repeated coordinates are
// adjacent leaves there), which spares the COO's own sorted pass; values
// that need scaling go to cp_als's scaled copy of the COO instead.
template <typename T>
spt_status cp_als_csf_taking(spt_context_s& ctx, std::unique_ptr<spt_coo_s>& x, const spt_cpd_options& opts,
                             spt_csf_policy policy, CsfTree first, spt_ktensor_s& out) {
  const Exec exec = dispatch::exec_for(ctx);
  const std::vector<spt_index> dims = x->dims;
  const std::vector<uint32_t> first_order = csf_mode_order(dims, csf_shortest_mode(dims));
  if (first.mode_order != first_order || first.nnz() != x->nnz) first = build_csf_tree(exec, *x, first_order);
  const SummedStats stats = csf_summed_stats(exec, first);
  algo::note_repeats(ctx, "CP-ALS", x->nnz, stats.distinct);
  const double norm_x_squared = stats.norm_squared;
  if (magnitude_shift<T>(*x, norm_x_squared) != 0) {
    first = CsfTree();
    return cp_als_normed<T>(ctx, *x, norm_x_squared, opts, out);
  }
  if (policy == SPT_CSF_AUTO) policy = csf_auto_picks_allmode(*x, first) ? SPT_CSF_ALLMODE : SPT_CSF_ONEMODE;
  x.reset();
  auto csf = std::make_unique<spt_csf_s>();
  build_csf_from_first_tree(exec, dims, policy, std::move(first),
                            opts.csf_policy == SPT_CSF_AUTO ? CsfTreeUse::drop_unused : CsfTreeUse::keep_all, *csf);
  log(ctx, 1,
      cat("CP-ALS on CSF (", csf_policy_name(csf->policy), ", ", csf->trees.size(), " tree(s), ", csf->bytes(),
          " bytes; the COO freed before the trees after the first were built)"));
  const spt_csf_s& tensor = *csf;
  algo::CsfOperand<T> operand(std::move(csf));
  return cp_als_stable_fit<T>(ctx, operand, tensor, norm_x_squared, opts, out,
                              [&](const T* lambda, const ConstMatRef<T>* factors) {
                                return SPT_DISPATCH(ctx, inner_ktensor_csf, tensor, lambda, factors, opts.rank);
                              });
}

}  // namespace

spt_status cp_als_take(spt_context_s& ctx, std::unique_ptr<spt_coo_s> x, const spt_cpd_options& given,
                       spt_ktensor_s& out) {
  const spt_cpd_options opts = normalized_cpd_options(given);
  validate_cpd_options(x->dims, x->nnz, x->dtype(), opts);
  // Only a CPU run on CSF (asked for, or AUTO's choice) differs from
  // cp_als: the device, COO, HiCOO, F-COO and memoized CSF runs need the COO
  // (or build from it) for the whole run.
  const bool cpu = dispatch::effective_backend(ctx) == SPT_BACKEND_CPU;
  const bool csf = opts.format == SPT_TENSOR_FORMAT_CSF && opts.csf_policy != SPT_CSF_MEMOIZED;
  const bool advised = opts.format == SPT_TENSOR_FORMAT_AUTO && x->nnz >= algo::kAdviceSmallNnz;
  if (!cpu || x->order() < 2 || !(csf || advised)) return cp_als(ctx, *x, opts, out);
  return with_dtype(x->dtype(), [&](auto tag) -> spt_status {
    using T = typename decltype(tag)::type;
    if (csf) return cp_als_csf_taking<T>(ctx, x, opts, opts.csf_policy, CsfTree(), out);
    algo::FormatAdvice advice = algo::advise_format(ctx, *x, opts.rank);
    log(ctx, 1, cat("format auto: ", advice.reason));
    if (advice.format == SPT_TENSOR_FORMAT_CSF && advice.csf_policy != SPT_CSF_MEMOIZED) {
      const spt_csf_policy policy = opts.csf_policy == SPT_CSF_AUTO ? advice.csf_policy : opts.csf_policy;
      if (policy != SPT_CSF_MEMOIZED)
        return cp_als_csf_taking<T>(ctx, x, opts, policy, std::move(advice.csf_first_tree), out);
    }
    double norm_x_squared = algo::summed_norm_squared(ctx, *x, "CP-ALS");
    // Values that need scaling: cp_als's scaled copy of the COO.
    if (magnitude_shift<T>(*x, norm_x_squared) != 0) return cp_als_normed<T>(ctx, *x, norm_x_squared, opts, out);
    // Another format: as cp_als, with the advice already taken.
    std::unique_ptr<algo::MttkrpOperand<T>> operand =
        algo::make_mttkrp_operand_advised<T>(ctx, *x, opts, std::move(advice));
    norm_x_squared = operand_norm_squared(ctx, *operand, norm_x_squared);
    const spt_coo_s& t = *x;
    return cp_als_stable_fit<T>(ctx, *operand, t, norm_x_squared, opts, out,
                                [&](const T* lambda, const ConstMatRef<T>* factors) {
                                  return SPT_DISPATCH(ctx, inner_ktensor, t, lambda, factors, opts.rank);
                                });
  });
}

spt_status cp_als_csf(spt_context_s& ctx, const spt_csf_s& x, const spt_cpd_options& given, spt_ktensor_s& out) {
  const spt_cpd_options opts = normalized_cpd_options(given);
  validate_cpd_options(x.dims, x.nnz, x.dtype, opts);
  return with_dtype(x.dtype, [&](auto tag) -> spt_status {
    using T = typename decltype(tag)::type;
    algo::CsfOperand<T> operand(x);
    return cp_als_stable_fit<T>(ctx, operand, x, csf_norm_squared(x), opts, out,
                                [&](const T* lambda, const ConstMatRef<T>* factors) {
                                  return SPT_DISPATCH(ctx, inner_ktensor_csf, x, lambda, factors, opts.rank);
                                });
  });
}

double ktensor_norm_squared(spt_context_s& ctx, const spt_ktensor_s& k) {
  return with_dtype(k.dtype(), [&](auto tag) -> double {
    using T = typename decltype(tag)::type;
    std::vector<DenseMatrix<T>> grams;
    grams.reserve(k.order());
    for (uint32_t m = 0; m < k.order(); ++m) {
      // Factors of a ktensor are row-major; RowMajor also copes otherwise.
      RowMajor<T> view(const_cast<spt_matrix_s&>(*k.factors[m]));
      grams.emplace_back(k.rank, k.rank);
      SPT_DISPATCH(ctx, gram, view.cref(), grams.back().ref());
    }
    return std::abs(kruskal_norm_squared<T>(k.lambda.ptr<T>(), grams, k.rank));
  });
}

}  // namespace spt
