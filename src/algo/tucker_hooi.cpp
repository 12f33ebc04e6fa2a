// Tucker-HOOI following pyttb.tucker_als (Tensor Toolbox tucker_als):
//
//   normX = ||X||; U_1..U_{N-1} initialised (U_0 is computed first); fit = 0
//   each sweep, for n in 0..N-1:
//     Y_(n) = X_(n) kron_{m != n} U_m            (TTMc: one-shot or chain kernel,
//                                                  chosen per mode by a cost estimate)
//     U_n = leading R_n left singular vectors of Y_(n), signs as pyttb nvecs
//   G = U_{N-1}^T Y_(N-1)                           (the core, reshaped)
//   fit = 1 - sqrt(|normX^2 - ||G||^2|) / normX
//   stop when |fit - fit_old| < tol (also after the first sweep, as pyttb)
//
// Singular vectors, by shape (P = prod_{m != n} R_m): for I_n <= P the
// eigenvectors of the I_n x I_n Gram Y_(n) Y_(n)^T by syevd (pyttb nvecs'
// own route); for a tall Y_(n) (I_n > P) the eigenpairs of the P x P Gram
// Y_(n)^T Y_(n) and u_r = Y_(n) v_r / s_r, with gesdd (economy SVD) as the
// fallback when s_R is too small next to s_1 for that to be accurate.
// gesdd alone took nearly the whole sweep on a tall unfolding
// (docs/design-measurements.md, "Tucker singular vectors"), since it forms
// all P columns of U after a QR of Y_(n). All routes give the same subspace, and the sign rule
// (largest-magnitude entry of each vector positive) makes the vectors equal
// up to rounding wherever the singular values are distinct.
//
// One driver for every backend: the sweeps here call the steps of a
// dispatch::TuckerSteps (ttmc, the singular-vector routes, the core),
// which run on the host (HostTuckerSteps below) or, on a context that runs
// on a device, on the device through the plugin (device_tucker_steps), the
// data staying there for the whole run.
//
// HOSVD initialisation (pyttb init='nvecs'): leading left singular vectors
// of the sparse unfolding X_(n), from the mode-n fibers of X (the columns of
// X_(n)), never densified: the exact Gram X_(n) X_(n)^T summed fiber by
// fiber when I_n and the work are small, else a randomized subspace
// iteration (Halko, Martinsson & Tropp) with sparse products X_(n)^T Q and
// X_(n) Z over the fibers.
#include "algo/tucker_hooi.hpp"

#include <cblas.h>
#include <lapacke.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>

#include "algo/summed_norm.hpp"
#include "algo/ttm_chain.hpp"
#include "core/random.hpp"
#include "core/sort.hpp"
#include "dispatch/dispatch.hpp"
#include "dispatch/tucker_steps.hpp"
#include "kernels/ttmc.hpp"

namespace spt {

namespace {

using Clock = std::chrono::steady_clock;

// Typed LAPACKE / CBLAS entry points (row-major throughout).
// Economy SVD of a (m x n): u is m x min(m,n), vt is min(m,n) x n.
inline lapack_int gesdd(lapack_int m, lapack_int n, float* a, float* s, float* u, float* vt) {
  return LAPACKE_sgesdd(LAPACK_ROW_MAJOR, 'S', m, n, a, n, s, u, std::min(m, n), vt, n);
}
inline lapack_int gesdd(lapack_int m, lapack_int n, double* a, double* s, double* u, double* vt) {
  return LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', m, n, a, n, s, u, std::min(m, n), vt, n);
}
inline lapack_int syevd(lapack_int n, float* a, float* w) {
  return LAPACKE_ssyevd(LAPACK_ROW_MAJOR, 'V', 'U', n, a, n, w);
}
inline lapack_int syevd(lapack_int n, double* a, double* w) {
  return LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', n, a, n, w);
}
// Eigenpairs il..iu (1-based, ascending) of a symmetric n x n matrix; z is
// n x (iu - il + 1) row-major.
inline lapack_int syevr(lapack_int n, float* a, lapack_int il, lapack_int iu, lapack_int* found, float* w, float* z,
                        lapack_int ldz, lapack_int* support) {
  return LAPACKE_ssyevr(LAPACK_ROW_MAJOR, 'V', 'I', 'U', n, a, n, 0.0f, 0.0f, il, iu, 0.0f, found, w, z, ldz, support);
}
inline lapack_int syevr(lapack_int n, double* a, lapack_int il, lapack_int iu, lapack_int* found, double* w,
                        double* z, lapack_int ldz, lapack_int* support) {
  return LAPACKE_dsyevr(LAPACK_ROW_MAJOR, 'V', 'I', 'U', n, a, n, 0.0, 0.0, il, iu, 0.0, found, w, z, ldz, support);
}
inline void syrk_rows(int n, int k, const float* a, float* c) {
  cblas_ssyrk(CblasRowMajor, CblasUpper, CblasNoTrans, n, k, 1.0f, a, k, 0.0f, c, n);
}
inline void syrk_rows(int n, int k, const double* a, double* c) {
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, n, k, 1.0, a, k, 0.0, c, n);
}
// c (n x n, upper triangle) = a^T a with a (k x n).
inline void syrk_cols(int n, int k, const float* a, float* c) {
  cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, n, k, 1.0f, a, n, 0.0f, c, n);
}
inline void syrk_cols(int n, int k, const double* a, double* c) {
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, n, k, 1.0, a, n, 0.0, c, n);
}
// c (m x n, leading dimension ldc) = a b with a (m x k), b (k x n).
inline void gemm_nn(int m, int n, int k, const float* a, const float* b, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, ldc);
}
inline void gemm_nn(int m, int n, int k, const double* a, const double* b, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, k, b, n, 0.0, c, ldc);
}
// c (m x n) = a^T b with a (k x m), b (k x n).
inline void gemm_tn(int m, int n, int k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, n, k, 1.0f, a, m, b, n, 0.0f, c, n);
}
inline void gemm_tn(int m, int n, int k, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, n, k, 1.0, a, m, b, n, 0.0, c, n);
}

// LAPACK and CBLAS take 32-bit sizes.
lapack_int lapack_size(uint64_t n, const char* what) {
  if (n > static_cast<uint64_t>(std::numeric_limits<lapack_int>::max()))
    fail(SPT_ERR_OVERFLOW, what, " (", n, ") exceeds the 32-bit sizes LAPACK/BLAS accept; lower the ranks");
  return static_cast<lapack_int>(n);
}

// Fail clearly (instead of thrashing or being killed) when a dense
// temporary cannot fit the machine's physical memory.
void require_fits_memory(uint64_t elements, size_t element_size, const char* what) {
  const uint64_t bytes = checked_mul(elements, element_size, what);
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0 && bytes / static_cast<uint64_t>(page_size) >= static_cast<uint64_t>(pages))
    fail(SPT_ERR_OUT_OF_MEMORY, what, " needs ", bytes, " bytes, more than this machine's physical memory (",
         static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size), " bytes); lower the ranks");
}

// pyttb nvecs sign rule: the entry of largest magnitude of each column (the
// first one on ties) is made positive.
template <typename T>
void fix_column_signs(MatRef<T> u) {
  for (spt_nnz r = 0; r < u.cols; ++r) {
    T best = T(0), best_value = T(0);
    for (spt_nnz i = 0; i < u.rows; ++i)
      if (std::abs(u(i, r)) > best) {
        best = std::abs(u(i, r));
        best_value = u(i, r);
      }
    if (best_value < T(0))
      for (spt_nnz i = 0; i < u.rows; ++i) u(i, r) = -u(i, r);
  }
}

// Eigenvectors of the symmetric n x n `gram` (row-major, upper triangle
// read; destroyed) for the out.cols largest eigenvalues, largest first, into
// out (n x out.cols). syevr computes only the wanted eigenpairs (after the
// n^3 tridiagonal reduction), much less than syevd's full set for n in the
// thousands.
template <typename T>
void leading_eigenvectors(DenseMatrix<T>& gram, MatRef<T> out, uint32_t mode) {
  const lapack_int n = lapack_size(gram.rows, "the Gram matrix order");
  const lapack_int want = lapack_size(out.cols, "the rank");
  std::vector<T> w(gram.rows);
  DenseMatrix<T> z(gram.rows, out.cols);
  std::vector<lapack_int> support(2 * static_cast<size_t>(out.cols));
  lapack_int found = 0;
  const lapack_int info = syevr(n, gram.values.data(), n - want + 1, n, &found, w.data(), z.values.data(), want,
                                support.data());
  if (info < 0) fail(SPT_ERR_INTERNAL, "LAPACKE syevr rejected argument ", -info);
  if (info > 0 || found != want)
    fail(SPT_ERR_NUMERICAL, "the eigen-decomposition for mode ", mode, " did not converge (syevr info ", info,
         "); the tensor may hold non-finite values");
  // Eigenvalues come ascending: the largest is the last column.
  for (spt_nnz i = 0; i < out.rows; ++i)
    for (spt_nnz r = 0; r < out.cols; ++r) out(i, r) = z(i, out.cols - 1 - r);
}

// Economy SVD route: u = the first u.cols left singular vectors of y.
template <typename T>
void left_vectors_by_gesdd(ConstMatRef<T> y, MatRef<T> u, uint32_t mode) {
  const spt_nnz rows = y.rows, cols = y.cols;
  const lapack_int m = lapack_size(rows, "the TTM-chain row count");
  const lapack_int n = lapack_size(cols, "the TTM-chain column count");
  const spt_nnz k = std::min(rows, cols);
  require_fits_memory(checked_mul(rows, cols, "the SVD workspace") * 2, sizeof(T), "the SVD of Y_(n)");
  DenseMatrix<T> a(rows, cols), left(rows, k), right(k, cols);
  for (spt_nnz i = 0; i < rows; ++i) std::copy(y.row(i), y.row(i) + cols, a.values.data() + i * cols);
  std::vector<T> s(k);
  const lapack_int info = gesdd(m, n, a.values.data(), s.data(), left.values.data(), right.values.data());
  if (info < 0) fail(SPT_ERR_INTERNAL, "LAPACKE gesdd rejected argument ", -info);
  if (info > 0)
    fail(SPT_ERR_NUMERICAL, "the SVD for mode ", mode, " did not converge (gesdd info ", info,
         "); the tensor may hold non-finite values");
  for (spt_nnz i = 0; i < rows; ++i)
    for (spt_nnz r = 0; r < u.cols; ++r) u(i, r) = left(i, r);
}

// Right-Gram route for tall y (I >> P): the P x P Gram costs I P^2 / 2
// BLAS-3 flops against gesdd's ~4 I P^2 (QR plus forming U), and only R
// columns of U are formed. First the eigenpairs of y^T y into gram (its
// eigenvectors, P x P) and w (ascending).
template <typename T>
void right_gram_eigenpairs(ConstMatRef<T> y, DenseMatrix<T>& gram, std::vector<T>& w, uint32_t mode) {
  const spt_nnz rows = y.rows, cols = y.cols;
  require_fits_memory(checked_mul(cols, cols, "the Gram matrix Y_(n)^T Y_(n)"), sizeof(T),
                      "the Gram matrix Y_(n)^T Y_(n)");
  const lapack_int m = lapack_size(rows, "the TTM-chain row count");
  const lapack_int n = lapack_size(cols, "the TTM-chain column count");
  gram = DenseMatrix<T>(cols, cols);
  syrk_cols(n, m, y.data, gram.values.data());
  w.assign(cols, T(0));
  const lapack_int info = syevd(n, gram.values.data(), w.data());
  if (info < 0) fail(SPT_ERR_INTERNAL, "LAPACKE syevd rejected argument ", -info);
  if (info > 0)
    fail(SPT_ERR_NUMERICAL, "the eigen-decomposition for mode ", mode, " did not converge (syevd info ", info,
         "); the tensor may hold non-finite values");
}

// Then u = y [v_r / s_r] for the u.cols leading eigenpairs.
template <typename T>
void left_vectors_from_right_gram(ConstMatRef<T> y, const DenseMatrix<T>& gram, const std::vector<T>& w,
                                  MatRef<T> u) {
  const spt_nnz cols = y.cols, rank = u.cols;
  DenseMatrix<T> v(cols, rank);  // leading eigenvectors scaled by 1 / s_r
  for (spt_nnz j = 0; j < cols; ++j)
    for (spt_nnz r = 0; r < rank; ++r) v(j, r) = gram(j, cols - 1 - r) / std::sqrt(w[cols - 1 - r]);
  gemm_nn(lapack_size(y.rows, "the TTM-chain row count"), lapack_size(rank, "R_n"),
          lapack_size(cols, "the TTM-chain column count"), y.data, v.values.data(), u.data, static_cast<int>(u.ld));
}

// I x I Gram route: u = the eigenvectors of y y^T for its u.cols largest
// eigenvalues.
template <typename T>
void left_vectors_by_gram(ConstMatRef<T> y, MatRef<T> u, uint32_t mode) {
  const spt_nnz rows = y.rows, cols = y.cols;
  require_fits_memory(checked_mul(rows, rows, "the Gram matrix Y_(n) Y_(n)^T"), sizeof(T),
                      "the Gram matrix Y_(n) Y_(n)^T");
  DenseMatrix<T> gram(rows, rows);
  syrk_rows(lapack_size(rows, "the TTM-chain row count"), lapack_size(cols, "the TTM-chain column count"), y.data,
            gram.values.data());
  leading_eigenvectors(gram, u, mode);
}

// Orthonormalise the columns of q (m x k, m >= k) in place: Householder QR,
// q <- Q.
void orthonormalize(DenseMatrix<double>& q) {
  const lapack_int m = lapack_size(q.rows, "the basis row count");
  const lapack_int k = lapack_size(q.cols, "the basis column count");
  std::vector<double> tau(q.cols);
  lapack_int info = LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, m, k, q.values.data(), k, tau.data());
  if (info == 0) info = LAPACKE_dorgqr(LAPACK_ROW_MAJOR, m, k, k, q.values.data(), k, tau.data());
  if (info != 0) fail(SPT_ERR_NUMERICAL, "QR orthonormalisation failed (LAPACK info ", info, ")");
}

// Uniform [0,1) from one 64-bit draw (the same on every standard library).

// Leading `rank` left singular vectors of the sparse unfolding X_(n), signs
// fixed, into u (dims[n] x rank). See the file comment.
template <typename T>
void hosvd_factor(const kernels::Exec& exec, const spt_coo_s& x, uint32_t n, uint64_t seed, TuckerHosvdPath path,
                  MatRef<T> u) {
  const sorting::ModeFibers fibers(exec, x, n);
  const spt_coo_s& s = fibers.sorted();
  const buffer<spt_nnz>& starts = fibers.starts();
  const spt_nnz count = fibers.count();
  const spt_index* rows = s.ind[n];
  const T* val = s.values<T>();
  const spt_nnz dim = x.dims[n];
  const spt_nnz rank = u.cols;

  double pair_work = 0.0;  // sum of squared fiber lengths: the exact Gram's cost
  for (spt_nnz f = 0; f < count; ++f) {
    const double len = static_cast<double>(starts[f + 1] - starts[f]);
    pair_work += len * len;
  }
  const bool exact = path == TuckerHosvdPath::gram ||
                     (path == TuckerHosvdPath::automatic && dim <= 1024 &&
                      pair_work <= std::max(64.0 * static_cast<double>(x.nnz), 1e8));
  DenseMatrix<double> basis(dim, rank);
  if (exact) {
    // Column c of X_(n) is one fiber; X_(n) X_(n)^T = sum over fibers of
    // v v^T. Repeated coordinates are summed implicitly.
    require_fits_memory(checked_mul(dim, dim, "the Gram matrix X_(n) X_(n)^T"), sizeof(double),
                        "the Gram matrix X_(n) X_(n)^T");
    DenseMatrix<double> gram(dim, dim);
    // Fibers in parallel into per-thread Grams (summed after) when those
    // stay small; one thread otherwise.
    const uint64_t gram_elements = static_cast<uint64_t>(dim) * dim;
    const int threads =
        gram_elements * sizeof(double) * std::max(1, exec.threads) <= (uint64_t(256) << 20) ? std::max(1, exec.threads)
                                                                                             : 1;
    std::vector<DenseMatrix<double>> partial(threads - 1, DenseMatrix<double>(dim, dim));
#pragma omp parallel num_threads(threads)
    {
      const int me = omp_get_thread_num();
      double* g = me == 0 ? gram.values.data() : partial[me - 1].values.data();
#pragma omp for schedule(dynamic, 256)
      for (spt_nnz f = 0; f < count; ++f)
        for (spt_nnz a = starts[f]; a < starts[f + 1]; ++a) {
          const double va = static_cast<double>(val[a]);
          double* grow = g + static_cast<spt_nnz>(rows[a]) * dim;
          for (spt_nnz b = starts[f]; b < starts[f + 1]; ++b) grow[rows[b]] += va * static_cast<double>(val[b]);
        }
    }
    for (const DenseMatrix<double>& part : partial)
      for (uint64_t e = 0; e < gram_elements; ++e) gram.values[e] += part.values[e];
    leading_eigenvectors(gram, basis.ref(), n);
  } else {
    // Randomized subspace iteration on X_(n) X_(n)^T with k = R + 10
    // columns and 4 power steps; Z (fibers x k) holds X_(n)^T Q on the
    // nonempty columns only.
    const spt_nnz k = std::min<spt_nnz>(dim, rank + 10);
    require_fits_memory(checked_mul(count, k, "the randomized HOSVD workspace"), sizeof(double),
                        "the randomized HOSVD workspace");
    DenseMatrix<double> q(dim, k), z(count, k);
    std::mt19937_64 gen(seed + 0x9e3779b97f4a7c15ULL * (n + 1));
    for (double& v : q.values) v = 2.0 * unit_uniform(gen) - 1.0;
    orthonormalize(q);
    auto times_transpose = [&] {  // z = X_(n)^T q
      const int threads = std::max(1, exec.threads);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256)
      for (spt_nnz f = 0; f < count; ++f) {
        double* zf = z.values.data() + f * k;
        std::fill(zf, zf + k, 0.0);
        for (spt_nnz a = starts[f]; a < starts[f + 1]; ++a) {
          const double va = static_cast<double>(val[a]);
          const double* qrow = q.values.data() + static_cast<spt_nnz>(rows[a]) * k;
          for (spt_nnz j = 0; j < k; ++j) zf[j] += va * qrow[j];
        }
      }
    };
    for (int step = 0; step < 4; ++step) {
      times_transpose();
      std::fill(q.values.begin(), q.values.end(), 0.0);  // q = X_(n) z (scatter into rows)
      for (spt_nnz f = 0; f < count; ++f) {
        const double* zf = z.values.data() + f * k;
        for (spt_nnz a = starts[f]; a < starts[f + 1]; ++a) {
          const double va = static_cast<double>(val[a]);
          double* qrow = q.values.data() + static_cast<spt_nnz>(rows[a]) * k;
          for (spt_nnz j = 0; j < k; ++j) qrow[j] += va * zf[j];
        }
      }
      orthonormalize(q);
    }
    // Q^T X X^T Q = Z^T Z (k x k); its leading eigenvectors V give U = Q V.
    times_transpose();
    DenseMatrix<double> small(k, k);
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, static_cast<int>(k), static_cast<int>(count), 1.0,
                z.values.data(), static_cast<int>(k), 0.0, small.values.data(), static_cast<int>(k));
    DenseMatrix<double> v(k, rank);
    leading_eigenvectors(small, v.ref(), n);
    for (spt_nnz i = 0; i < dim; ++i)
      for (spt_nnz r = 0; r < rank; ++r) {
        double sum = 0.0;
        for (spt_nnz j = 0; j < k; ++j) sum += q(i, j) * v(j, r);
        basis(i, r) = sum;
      }
  }
  fix_column_signs(basis.ref());
  for (spt_nnz i = 0; i < dim; ++i)
    for (spt_nnz r = 0; r < rank; ++r) u(i, r) = static_cast<T>(basis(i, r));
}

template <typename T>
void initialise_factors(spt_context_s& ctx, const spt_coo_s& x, const spt_tucker_options& opts,
                        const TuckerInternalOptions& internal, std::vector<DenseMatrix<T>>& u) {
  const uint32_t order = x.order();
  const uint64_t seed = opts.seed != 0 ? opts.seed : ctx.seed;
  // As pyttb: mode 0 is computed before it is read, so only modes 1.. start.
  for (uint32_t m = 1; m < order; ++m) {
    MatRef<T> dst = u[m].ref();
    switch (opts.init) {
      case SPT_TUCKER_INIT_USER: {
        const spt_matrix_s& src = *opts.init_factors[m];
        for (spt_nnz i = 0; i < dst.rows; ++i)
          for (spt_nnz r = 0; r < dst.cols; ++r) dst(i, r) = src.at<T>(i, r);
        break;
      }
      case SPT_TUCKER_INIT_RANDOM: {
        // Uniform [0,1) per mode from (seed, mode), row by row, then QR.
        std::mt19937_64 gen(seed + 0x9e3779b97f4a7c15ULL * m);
        DenseMatrix<double> q(dst.rows, dst.cols);
        for (double& v : q.values) v = unit_uniform(gen);
        orthonormalize(q);
        for (spt_nnz i = 0; i < dst.rows; ++i)
          for (spt_nnz r = 0; r < dst.cols; ++r) dst(i, r) = static_cast<T>(q(i, r));
        break;
      }
      default:
        hosvd_factor<T>(dispatch::exec_for(ctx), x, m, seed, internal.hosvd, dst);
        break;
    }
  }
}

// The steps on the host (dispatch/tucker_steps.hpp): the CPU kernels and
// LAPACK / CBLAS, on one copy of X sorted for each mode's TTMc (the
// dissertation's "N preprocessed tensors", §7.5), in the order of the TTMc
// path the cost estimate picks for that mode (algo/ttm_chain.hpp); made once
// per decomposition, so the kernels never sort. Every route works for any
// shape (the tests force each one).
template <typename T>
class HostTuckerSteps final : public dispatch::TuckerSteps<T> {
 public:
  HostTuckerSteps(spt_context_s& ctx, const spt_coo_s& x, const std::vector<spt_index>& ranks, TtmcPath requested,
                  uint64_t y_max, uint64_t core_size, std::vector<TtmcPlan>* plans_out)
      : ctx_(ctx), y_values_(y_max), core_(core_size) {
    const uint32_t order = x.order();
    for (uint32_t m = 0; m < order; ++m) {
      u_.emplace_back(x.dims[m], ranks[m]);
      uint64_t p = 1;
      for (uint32_t k = 0; k < order; ++k)
        if (k != m) p *= ranks[k];
      columns_.push_back(p);
    }
    factors_.resize(order);
    for (uint32_t m = 0; m < order; ++m) factors_[m] = u_[m].cref();
    prepare_ttmc_operands(dispatch::exec_for(ctx), x, ranks, requested, operands_);
    for (const TtmcPlan& plan : operands_.plans)
      log(ctx, 2, cat("Tucker-HOOI mode ", plan.mode, ": TTMc path ", ttmc_path_name(plan.path), " (estimated ",
                      plan.one_shot_flops, " one-shot vs ", plan.chain_flops, " chain multiply-adds)"));
    if (plans_out) *plans_out = operands_.plans;
  }

  bool on_device() const override { return false; }
  void set_factor(uint32_t mode, ConstMatRef<T> u) override {
    for (spt_nnz i = 0; i < u.rows; ++i) std::copy(u.row(i), u.row(i) + u.cols, u_[mode].values.data() + i * u.cols);
  }
  void get_factor(uint32_t mode, MatRef<T> u) override {
    for (spt_nnz i = 0; i < u.rows; ++i)
      std::copy(u_[mode].values.data() + i * u.cols, u_[mode].values.data() + (i + 1) * u.cols, u.data + i * u.ld);
  }
  void ttmc(uint32_t mode) override {
    MatRef<T> y{y_values_.data(), u_[mode].rows, columns_[mode], columns_[mode]};
    run_ttmc<T>(ctx_, operands_.plans[mode], *operands_.operand[mode], factors_.data(), y);
  }
  void gram_vectors(uint32_t mode) override { left_vectors_by_gram(y(mode), u_[mode].ref(), mode); }
  void right_gram(uint32_t mode, T& smallest_kept, T& largest) override {
    right_gram_eigenpairs(y(mode), gram_, w_, mode);
    const spt_nnz cols = w_.size(), rank = u_[mode].cols;
    largest = w_[cols - 1];
    smallest_kept = w_[cols - rank];
  }
  void right_vectors(uint32_t mode) override { left_vectors_from_right_gram(y(mode), gram_, w_, u_[mode].ref()); }
  void svd_vectors(uint32_t mode) override { left_vectors_by_gesdd(y(mode), u_[mode].ref(), mode); }
  void fix_signs(uint32_t mode) override { fix_column_signs(u_[mode].ref()); }
  // G = U_{N-1}^T Y_(N-1): row-major R_{N-1} x P, i.e. the core with the
  // first index fastest (Y's columns are the other modes, lowest fastest).
  double core() override {
    const uint32_t last = static_cast<uint32_t>(u_.size()) - 1;
    gemm_tn(lapack_size(u_[last].cols, "R_N"), lapack_size(columns_[last], "prod R_m"),
            lapack_size(u_[last].rows, "I_N"), u_[last].values.data(), y_values_.data(), core_.data());
    double norm_core_squared = 0.0;
    for (uint64_t i = 0; i < core_.size(); ++i) norm_core_squared += static_cast<double>(core_[i]) * core_[i];
    return norm_core_squared;
  }
  void get_core(T* core) override { std::copy(core_.begin(), core_.end(), core); }

 private:
  ConstMatRef<T> y(uint32_t mode) const {
    return ConstMatRef<T>{y_values_.data(), u_[mode].rows, columns_[mode], columns_[mode]};
  }

  spt_context_s& ctx_;
  std::vector<DenseMatrix<T>> u_;
  std::vector<ConstMatRef<T>> factors_;
  std::vector<uint64_t> columns_;
  TtmcOperands operands_;
  buffer<T> y_values_;
  buffer<T> core_;
  DenseMatrix<T> gram_{0, 0};  // right_gram's eigenvectors
  std::vector<T> w_;           // and eigenvalues, ascending
};

// The end of every sweep: fit = 1 - sqrt(|normX^2 - ||G||^2|) / normX,
// history, convergence (|fit change| < tol, also after the first sweep, as
// pyttb), log, progress, callback.
template <typename T>
struct TuckerSweeps {
  const spt_context_s& ctx;
  const spt_tucker_options& opts;
  spt_ttensor_s& out;
  double norm_x_squared;
  double norm_x;
  double fit = 0.0;
  bool converged = false;
  bool stopped_by_callback = false;
  int iteration = 0;  // sweeps done

  bool more() const { return iteration < opts.max_iters && !converged && !stopped_by_callback; }

  // Forget the sweeps recorded so far (device steps that gave up midway).
  void restart() {
    fit = 0.0;
    converged = stopped_by_callback = false;
    iteration = 0;
    out.fit_history.clear();
    out.seconds_history.clear();
  }

  // Records the sweep just done; returns more().
  bool end_sweep(double norm_core_squared, double seconds) {
    const double fit_old = fit;
    fit = 1.0 - std::sqrt(std::abs(norm_x_squared - norm_core_squared)) / norm_x;
    if (!std::isfinite(fit))
      fail(SPT_ERR_NUMERICAL, "the fit became non-finite in iteration ", iteration + 1,
           "; the tensor may hold values too large for ", dtype_name(dtype_of<T>()));
    const double fit_change = std::abs(fit - fit_old);
    ++iteration;
    out.fit_history.push_back(fit);
    out.seconds_history.push_back(seconds);
    converged = fit_change < opts.tol;
    log(ctx, 2, cat("Tucker-HOOI iteration ", iteration, ": fit ", fit, ", change ", fit_change, ", ", seconds, " s"));
    progress(ctx, "tucker", static_cast<double>(iteration) / opts.max_iters);
    if (opts.callback && opts.callback(opts.callback_data, iteration, fit, fit_change, seconds) != 0 && !converged)
      stopped_by_callback = true;
    return more();
  }
};

// U_n = the leading R_n left singular vectors of Y_(n) (I_n x P_n, made by
// steps.ttmc(n)), signs fixed (pyttb nvecs rule). The route by shape unless
// `path` forces one: I_n <= P_n the I x I Gram; tall Y the P x P Gram and
// u_r = Y v_r / s_r, unless s_R^2 < 1e4 eps s_1^2 (dividing by a singular
// value that small would amplify the Gram's rounding): then the SVD.
template <typename T>
void leading_left_singular_vectors(dispatch::TuckerSteps<T>& steps, uint32_t n, spt_index rows, uint64_t cols,
                                   spt_index rank, TuckerSvdPath path, int iteration, const spt_context_s& ctx) {
  if (path == TuckerSvdPath::automatic) path = rows > cols ? TuckerSvdPath::right_gram : TuckerSvdPath::gram_eig;
  // The economy SVD and the right Gram see only min(I, P) directions; more
  // vectors (Y_(n) rank-deficient by shape) need the I x I Gram.
  if (rank > std::min<uint64_t>(rows, cols)) path = TuckerSvdPath::gram_eig;
  if (path == TuckerSvdPath::right_gram) {
    T smallest_kept = T(0), largest = T(0);
    steps.right_gram(n, smallest_kept, largest);
    if (largest > T(0) && smallest_kept > T(1e4) * std::numeric_limits<T>::epsilon() * largest) {
      steps.right_vectors(n);
    } else {
      log(ctx, 2, cat("Tucker-HOOI mode ", n, ", iteration ", iteration, ": s_R^2 = ", smallest_kept,
                      " is too small next to s_1^2 = ", largest, " for the P x P Gram route; SVD of Y_(n) (",
                      steps.on_device() ? "gesvd" : "gesdd", ")"));
      path = TuckerSvdPath::gesdd;
    }
  }
  if (path == TuckerSvdPath::gesdd) steps.svd_vectors(n);
  else if (path == TuckerSvdPath::gram_eig) steps.gram_vectors(n);
  steps.fix_signs(n);
}

// The sweeps on `steps` from the initial factors u (u[0] is not read), the
// results into u and core. Returns false when device steps fell back to the
// host (TuckerStepsFellBack: the sweeps so far are forgotten).
template <typename T>
bool run_sweeps(dispatch::TuckerSteps<T>& steps, const spt_context_s& ctx, const std::vector<spt_index>& dims,
                const std::vector<spt_index>& ranks, const std::vector<uint64_t>& columns, TuckerSvdPath svd,
                std::vector<DenseMatrix<T>>& u, buffer<T>& core, TuckerSweeps<T>& sweeps) {
  const uint32_t order = static_cast<uint32_t>(dims.size());
  try {
    for (uint32_t m = 0; m < order; ++m) steps.set_factor(m, u[m].cref());
    while (sweeps.more()) {
      const Clock::time_point start = Clock::now();
      for (uint32_t n = 0; n < order; ++n) {
        steps.ttmc(n);
        leading_left_singular_vectors<T>(steps, n, dims[n], columns[n], ranks[n], svd, sweeps.iteration + 1, ctx);
      }
      const double norm_core_squared = steps.core();
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      sweeps.end_sweep(norm_core_squared, seconds);
    }
    // Into copies: u stays the host's start if a download fails.
    std::vector<DenseMatrix<T>> result(u);
    for (uint32_t m = 0; m < order; ++m) steps.get_factor(m, result[m].ref());
    steps.get_core(core.data());
    u = std::move(result);
  } catch (const dispatch::TuckerStepsFellBack&) {
    sweeps.restart();
    return false;
  }
  return true;
}

template <typename T>
spt_status hooi_typed(spt_context_s& ctx, const spt_coo_s& x, const spt_tucker_options& opts,
                      const TuckerInternalOptions& internal, spt_ttensor_s& out) {
  const uint32_t order = x.order();
  const std::vector<spt_index>& dims = x.dims;
  const std::vector<spt_index> ranks(opts.ranks, opts.ranks + order);

  const double norm_x_squared = algo::summed_norm_squared(ctx, x, "Tucker-HOOI");
  const double norm_x = std::sqrt(norm_x_squared);
  if (!std::isfinite(norm_x))
    fail(SPT_ERR_INVALID_ARGUMENT, "the tensor's norm is not finite (NaN/Inf values, or values too large); "
                                   "clean the values before Tucker-HOOI");
  require(norm_x > 0.0, "the tensor's nonzeros are all zero (norm 0); Tucker-HOOI needs a nonzero tensor");

  // Sizes: every Y_(n) (I_n x prod_{m != n} R_m) and the core must fit.
  uint64_t y_max = 0;
  std::vector<uint64_t> columns(order, 1);
  for (uint32_t n = 0; n < order; ++n) {
    for (uint32_t m = 0; m < order; ++m)
      if (m != n) columns[n] = checked_mul(columns[n], ranks[m], "prod_{m != n} R_m");
    y_max = std::max(y_max, checked_mul(dims[n], columns[n], "the TTM-chain result I_n x prod_{m != n} R_m"));
  }
  require_fits_memory(y_max, sizeof(T), "the TTM-chain result I_n x prod_{m != n} R_m");
  const uint64_t core_size = checked_mul(columns[order - 1], ranks[order - 1], "the core size prod R_n");

  std::vector<DenseMatrix<T>> u;
  for (uint32_t m = 0; m < order; ++m) u.emplace_back(dims[m], ranks[m]);
  initialise_factors<T>(ctx, x, opts, internal, u);

  buffer<T> core(core_size);
  out.fit_history.clear();
  out.seconds_history.clear();
  TuckerSweeps<T> sweeps{ctx, opts, out, norm_x_squared, norm_x};

  // Device steps when the context runs on a device (the same sweeps from
  // the same initial factors); else, or when they fall back midway, the
  // host's. The internal knobs (a forced SVD route or TTMc path, the TTMc
  // plans) describe the host steps: asking for one keeps the run there.
  bool on_device = false;
  if (internal.svd == TuckerSvdPath::automatic && internal.ttmc == TtmcPath::automatic && !internal.plans_out) {
    if (std::unique_ptr<dispatch::TuckerSteps<T>> steps = dispatch::device_tucker_steps<T>(ctx, x, ranks, opts.ttmc))
      on_device = run_sweeps<T>(*steps, ctx, dims, ranks, columns, internal.svd, u, core, sweeps);
  }
  if (!on_device) {
    if (opts.ttmc == SPT_TUCKER_TTMC_HLS && internal.ttmc == TtmcPath::automatic)
      fail(SPT_ERR_UNSUPPORTED,
           "opts.ttmc = SPT_TUCKER_TTMC_HLS runs on the GPU only (orders 3-4, a CUDA device); this run is on "
           "the CPU: use SPT_TUCKER_TTMC_AUTO, SPT_TUCKER_TTMC_ONE_SHOT or SPT_TUCKER_TTMC_CHAIN");
    TtmcPath requested = internal.ttmc;
    if (requested == TtmcPath::automatic && opts.ttmc == SPT_TUCKER_TTMC_ONE_SHOT) requested = TtmcPath::one_shot;
    if (requested == TtmcPath::automatic && opts.ttmc == SPT_TUCKER_TTMC_CHAIN) requested = TtmcPath::chain;
    HostTuckerSteps<T> steps(ctx, x, ranks, requested, y_max, core_size, internal.plans_out);
    run_sweeps<T>(steps, ctx, dims, ranks, columns, internal.svd, u, core, sweeps);
  }

  out.dims = dims;
  out.core_dims = ranks;
  out.core.set_dtype(dtype_of<T>());
  out.core.resize(core_size);
  std::copy(core.begin(), core.end(), out.core.get<T>().begin());
  out.factors.clear();
  for (uint32_t m = 0; m < order; ++m) {
    auto f = std::make_unique<spt_matrix_s>();
    init_matrix(*f, dtype_of<T>(), dims[m], ranks[m], SPT_ROW_MAJOR);
    std::copy(u[m].values.begin(), u[m].values.end(), f->ptr<T>());
    out.factors.push_back(std::move(f));
  }
  out.fit = sweeps.fit;
  out.iterations = sweeps.iteration;
  out.converged = sweeps.converged ? 1 : 0;
  log(ctx, 1,
      cat("Tucker-HOOI", on_device ? " (cuda)" : "", ": fit ", sweeps.fit, " after ", sweeps.iteration,
          " iterations (",
          sweeps.converged ? "converged"
                           : (sweeps.stopped_by_callback ? "stopped by the callback" : "iteration limit reached"),
          ")"));
  return sweeps.converged ? SPT_OK : SPT_WARN_NOT_CONVERGED;
}

}  // namespace

void validate_tucker_options(const spt_coo_s& x, const spt_tucker_options& opts) {
  require(opts.struct_size >= kTuckerOptionsSize01, "opts.struct_size is ", opts.struct_size,
          ", smaller than spt_tucker_options (", kTuckerOptionsSize01,
          " bytes); initialise the options with spt_tucker_options_init()");
  const uint32_t order = x.order();
  require(order >= 2, "Tucker-HOOI needs a tensor of order >= 2, got order ", order);
  require(x.nnz >= 1, "the tensor has no nonzeros; Tucker-HOOI needs at least one");
  require(opts.ranks != nullptr, "opts.ranks is NULL; pass one rank per mode (", order, " values)");
  require(opts.ranks_count == order, "opts.ranks_count is ", opts.ranks_count, " but the tensor has order ", order,
          "; pass one rank per mode");
  for (uint32_t m = 0; m < order; ++m) {
    require(opts.ranks[m] >= 1, "opts.ranks[", m, "] is 0; every rank must be at least 1");
    require(opts.ranks[m] <= x.dims[m], "opts.ranks[", m, "] = ", opts.ranks[m], " exceeds dims[", m,
            "] = ", x.dims[m], "; a Tucker rank cannot exceed its dimension");
  }
  require(opts.max_iters >= 1, "opts.max_iters must be at least 1, got ", opts.max_iters);
  require(std::isfinite(opts.tol) && opts.tol >= 0.0, "opts.tol must be a finite number >= 0, got ", opts.tol);
  // A C caller may store any int in the enum field; read it as an int (an
  // out-of-range enum value is undefined in C++).
  int init_value = 0;
  static_assert(sizeof(init_value) == sizeof(opts.init), "spt_tucker_init is int-sized");
  std::memcpy(&init_value, &opts.init, sizeof(init_value));
  require(init_value == SPT_TUCKER_INIT_HOSVD || init_value == SPT_TUCKER_INIT_RANDOM ||
              init_value == SPT_TUCKER_INIT_USER,
          "opts.init must be SPT_TUCKER_INIT_HOSVD (0), _RANDOM (1) or _USER (2), got ", init_value);
  int ttmc_value = 0;
  static_assert(sizeof(ttmc_value) == sizeof(opts.ttmc), "spt_tucker_ttmc is int-sized");
  std::memcpy(&ttmc_value, &opts.ttmc, sizeof(ttmc_value));
  require(ttmc_value >= SPT_TUCKER_TTMC_AUTO && ttmc_value <= SPT_TUCKER_TTMC_HLS,
          "opts.ttmc must be SPT_TUCKER_TTMC_AUTO (0), _ONE_SHOT (1), _CHAIN (2) or _HLS (3), got ", ttmc_value);
  if (opts.init != SPT_TUCKER_INIT_USER) return;
  require(opts.init_factors != nullptr, "opts.init is SPT_TUCKER_INIT_USER but opts.init_factors is NULL; pass ",
          order, " factor matrices (the first may be NULL)");
  for (uint32_t m = 1; m < order; ++m) {
    const spt_matrix_s* f = opts.init_factors[m];
    require(f != nullptr, "opts.init_factors[", m, "] is NULL");
    require(f->dtype() == x.dtype(), "opts.init_factors[", m, "] is ", dtype_name(f->dtype()), " but the tensor is ",
            dtype_name(x.dtype()), "; convert one of them");
    require(f->rows == x.dims[m] && f->cols == opts.ranks[m], "opts.init_factors[", m, "] is ", f->rows, " x ",
            f->cols, ", expected dims[", m, "] x ranks[", m, "] = ", x.dims[m], " x ", opts.ranks[m]);
    with_dtype(f->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (spt_nnz i = 0; i < f->rows; ++i)
        for (spt_nnz j = 0; j < f->cols; ++j)
          require(std::isfinite(f->at<T>(i, j)), "opts.init_factors[", m, "] has a non-finite value at (", i, ", ",
                  j, ")");
    });
  }
}

spt_status tucker_hooi(spt_context_s& ctx, const spt_coo_s& x, const spt_tucker_options& opts, spt_ttensor_s& out,
                       const TuckerInternalOptions& internal) {
  validate_tucker_options(x, opts);
  return with_dtype(x.dtype(), [&](auto tag) -> spt_status {
    using T = typename decltype(tag)::type;
    return hooi_typed<T>(ctx, x, opts, internal, out);
  });
}

}  // namespace spt
