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
// On a COO tensor whose context runs on a device, dispatch::DeviceKernels::
// cp_als runs these same sweeps there (cuda/cp_als.cu); the end of each
// sweep (SweepTracker) and arrange / fix signs stay here, shared.
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
#include <numeric>
#include <memory>
#include <random>
#include <type_traits>

#include "algo/mttkrp_operands.hpp"
#include "algo/normal_equations.hpp"
#include "algo/summed_norm.hpp"
#include "core/random.hpp"
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

// The end of every sweep, shared by the CPU loop below and a device run
// (dispatch::DeviceKernels::cp_als), so both compute the fit, stop and
// report identically: fit = 1 - sqrt(|normX^2 + ||P||^2 - 2 <X,P>|) / normX,
// history, convergence (after the first sweep), log, progress, callback.
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

// The sweeps below only see the tensor through `operand` (its MTTKRPs), its
// dims and its squared norm, so every storage format shares them.
template <typename T>
spt_status cp_als_operand(spt_context_s& ctx, algo::MttkrpOperand<T>& operand, const std::vector<spt_index>& dims,
                          double norm_x_squared, const spt_cpd_options& opts, spt_ktensor_s& k,
                          const ExactInner<T>& exact_inner) {
  const uint32_t order = static_cast<uint32_t>(dims.size());
  const spt_index rank = opts.rank;

  prepare<T>(ctx, dims, norm_x_squared, opts, k);

  // Every temporary the sweeps need, allocated once.
  std::vector<MatRef<T>> factors(order);
  std::vector<ConstMatRef<T>> const_factors(order);
  spt_index max_dim = 0;
  for (uint32_t m = 0; m < order; ++m) {
    factors[m] = k.template factor<T>(m);
    const_factors[m] = {factors[m].data, factors[m].rows, factors[m].cols, factors[m].ld};
    max_dim = std::max(max_dim, dims[m]);
  }
  DenseMatrix<T> mttkrp_out(max_dim, rank);
  std::vector<DenseMatrix<T>> grams(order, DenseMatrix<T>(rank, rank));
  DenseMatrix<T> hadamard(rank, rank);
  NormalEquations<T> normal_equations(rank);
  std::vector<double> norms(rank);
  std::vector<double> dots(rank);
  // float32: the fit's Grams in double (factor copies widened to double).
  constexpr bool wide_fit = !std::is_same_v<T, double>;
  std::vector<DenseMatrix<double>> fit_grams(wide_fit ? order : 0, DenseMatrix<double>(rank, rank));
  DenseMatrix<double> widened(wide_fit ? max_dim : 0, wide_fit ? rank : 0);
  T* lambda = k.lambda.ptr<T>();
  k.fit_history.reserve(static_cast<size_t>(opts.max_iters));
  k.seconds_history.reserve(static_cast<size_t>(opts.max_iters));

  for (uint32_t m = 0; m < order; ++m) SPT_DISPATCH(ctx, gram, const_factors[m], grams[m].ref());

  SweepTracker tracker{ctx, opts, k, norm_x_squared, std::sqrt(norm_x_squared)};
  while (tracker.more()) {
    const int iteration = tracker.iteration;
    const Clock::time_point start = Clock::now();
    MatRef<T> last_mttkrp;
    for (uint32_t n = 0; n < order; ++n) {
      MatRef<T> b{mttkrp_out.values.data(), dims[n], rank, rank};
      operand.mttkrp(ctx, const_factors.data(), n, b);
      last_mttkrp = b;

      for (spt_nnz i = 0; i < rank * spt_nnz(rank); ++i) hadamard.values[i] = T(1);
      for (uint32_t m = 0; m < order; ++m) {
        if (m == n) continue;
        for (spt_nnz i = 0; i < rank * spt_nnz(rank); ++i) hadamard.values[i] *= grams[m].values[i];
      }

      for (spt_nnz i = 0; i < rank * spt_nnz(rank); ++i)
        if (!std::isfinite(hadamard.values[i]))
          fail(SPT_ERR_NUMERICAL, "the normal-equation matrix for mode ", n, " became non-finite in iteration ",
               iteration + 1, " (factor Gram matrices overflow ", dtype_name(dtype_of<T>()),
               "); rescale the tensor or the initial factors");

      // U_n is not an input of its own MTTKRP, so it can take the solution.
      std::memcpy(factors[n].data, b.data, sizeof(T) * b.rows * rank);
      try {
        normal_equations.solve(ctx, hadamard.cref(), factors[n]);
      } catch (const Error& e) {
        if (e.code() != SPT_ERR_NUMERICAL) throw;
        fail(SPT_ERR_NUMERICAL, "mode ", n, ", iteration ", iteration + 1, ": ", e.what());
      }

      SPT_DISPATCH(ctx, column_norms, const_factors[n], iteration == 0 ? ColumnNorm::two : ColumnNorm::max_abs,
                   norms.data());
      for (spt_index r = 0; r < rank; ++r) {
        if (!std::isfinite(norms[r]))
          fail(SPT_ERR_NUMERICAL, "non-finite values appeared in the factor of mode ", n, " (component ", r,
               ") in iteration ", iteration + 1, "; the problem may be badly scaled or the rank too high");
        const T norm = static_cast<T>(norms[r]);
        lambda[r] = iteration == 0 ? norm : std::max(norm, T(1));
      }
      SPT_DISPATCH(ctx, divide_columns, factors[n], lambda);
      SPT_DISPATCH(ctx, gram, const_factors[n], grams[n].ref());
    }

    SPT_DISPATCH(ctx, column_dots, const_factors[order - 1],
                 ConstMatRef<T>{last_mttkrp.data, last_mttkrp.rows, last_mttkrp.cols, last_mttkrp.ld}, dots.data());
    double inner = 0.0;
    for (spt_index r = 0; r < rank; ++r) inner += dots[r] * static_cast<double>(lambda[r]);
    double norm_p_squared;
    if constexpr (wide_fit) {
      for (uint32_t m = 0; m < order; ++m) {
        const ConstMatRef<T>& u = const_factors[m];
        for (spt_nnz i = 0; i < u.rows; ++i)
          for (spt_nnz r = 0; r < rank; ++r) widened(i, r) = static_cast<double>(u(i, r));
        SPT_DISPATCH(ctx, gram, ConstMatRef<double>{widened.values.data(), u.rows, spt_nnz(rank), spt_nnz(rank)},
                     fit_grams[m].ref());
      }
      norm_p_squared = kruskal_norm_squared<T>(lambda, fit_grams, rank);
    } else {
      norm_p_squared = kruskal_norm_squared<T>(lambda, grams, rank);
    }
    if (exact_inner) {
      // B holds one rounding to T per element (the MTTKRPs sum in double):
      // independent relative errors, uniform within +-eps/2, so <X,P> is off
      // by about eps/(2 sqrt 3) times the terms' root-sum-square (one
      // standard deviation); the terms may cancel, so that is not bounded by
      // |<X,P>|.
      const ConstMatRef<T>& u = const_factors[order - 1];
      double spread = 0.0;
      for (spt_nnz i = 0; i < u.rows; ++i)
        for (spt_nnz r = 0; r < rank; ++r) {
          const double t = static_cast<double>(lambda[r]) * static_cast<double>(u(i, r)) *
                           static_cast<double>(last_mttkrp(i, r));
          spread += t * t;
        }
      const double err = 0.5 * std::numeric_limits<T>::epsilon() / std::sqrt(3.0) * std::sqrt(spread);
      if (fit_sensitivity(norm_x_squared, norm_p_squared, inner, err) > kFitNoise)
        inner = exact_inner(lambda, const_factors.data());
    }
    tracker.end_sweep(inner, norm_p_squared, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return finish<T>(ctx, tracker, operand.name(), k);
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

spt_status cp_als(spt_context_s& ctx, const spt_coo_s& x, const spt_cpd_options& given, spt_ktensor_s& out) {
  const spt_cpd_options opts = normalized_cpd_options(given);
  validate_cpd_options(x.dims, x.nnz, x.dtype(), opts);
  return with_dtype(x.dtype(), [&](auto tag) -> spt_status {
    using T = typename decltype(tag)::type;
    // Decomposes t (x, or x scaled) with ||t||^2 = norm_squared.
    auto decompose = [&](const spt_coo_s& t, double norm_squared) -> spt_status {
      // The whole decomposition on the device when the context runs there
      // (same sweeps, same end-of-sweep bookkeeping); false = the CPU loop.
      // Under AUTO a small tensor stays on the host altogether.
      const dispatch::SmallCpAlsOnHost small_on_host(ctx, t, opts);
      SweepTracker tracker{ctx, opts, out, norm_squared, std::sqrt(norm_squared)};
      if (dispatch::DeviceKernels::cp_als(
              ctx, t, opts, out, [&] { prepare<T>(ctx, t.dims, norm_squared, opts, out); },
              [&](int, double inner, double norm_p_squared, double inner_error, double seconds) {
                // As the CPU loop: <X,P> again exactly when its rounding
                // noise would move the fit by more than kFitNoise.
                if (inner_error > 0.0 &&
                    fit_sensitivity(norm_squared, norm_p_squared, inner, inner_error) > kFitNoise)
                  return dispatch::SweepNext::exact_inner;
                return tracker.end_sweep(inner, norm_p_squared, seconds) ? dispatch::SweepNext::next_sweep
                                                                         : dispatch::SweepNext::stop;
              })) {
        const spt_status status =
            finish<T>(ctx, tracker, opts.format == SPT_TENSOR_FORMAT_FCOO ? "fcoo, cuda" : "coo, cuda", out);
        exact_final_fit<T>(t, norm_squared, out);
        return status;
      }
      std::unique_ptr<algo::MttkrpOperand<T>> operand = algo::make_mttkrp_operand<T>(ctx, t, opts);
      return cp_als_stable_fit<T>(ctx, *operand, t, norm_squared, opts, out,
                                  [&](const T* lambda, const ConstMatRef<T>* factors) {
                                    return SPT_DISPATCH(ctx, inner_ktensor, t, lambda, factors, opts.rank);
                                  });
    };
    const double norm_x_squared = algo::summed_norm_squared(ctx, x, "CP-ALS");
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
