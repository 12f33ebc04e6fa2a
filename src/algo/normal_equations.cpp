#include "algo/normal_equations.hpp"

#include <lapacke.h>

#include <cmath>
#include <limits>

#include "dispatch/dispatch.hpp"
#include "kernels/dense.hpp"

namespace spt {

namespace {

// Typed LAPACKE entry points.
inline lapack_int potrf(lapack_int n, float* a) { return LAPACKE_spotrf(LAPACK_COL_MAJOR, 'U', n, a, n); }
inline lapack_int potrf(lapack_int n, double* a) { return LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', n, a, n); }
inline lapack_int pocon(lapack_int n, const float* a, float anorm, float* rcond) {
  return LAPACKE_spocon(LAPACK_COL_MAJOR, 'U', n, a, n, anorm, rcond);
}
inline lapack_int pocon(lapack_int n, const double* a, double anorm, double* rcond) {
  return LAPACKE_dpocon(LAPACK_COL_MAJOR, 'U', n, a, n, anorm, rcond);
}
inline lapack_int syevd(lapack_int n, float* a, float* w) {
  return LAPACKE_ssyevd(LAPACK_COL_MAJOR, 'V', 'U', n, a, n, w);
}
inline lapack_int syevd(lapack_int n, double* a, double* w) {
  return LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'U', n, a, n, w);
}

}  // namespace

template <typename T>
NormalEquations<T>::NormalEquations(spt_index rank)
    : rank_(rank), factor_(rank, rank), pinv_(rank, rank), eigenvalues_(rank) {}

template <typename T>
typename NormalEquations<T>::Factorisation NormalEquations<T>::factorise(ConstMatRef<T> y) {
  const spt_nnz n = rank_;
  const lapack_int ln = static_cast<lapack_int>(rank_);
  for (spt_nnz i = 0; i < n; ++i)
    for (spt_nnz j = 0; j < n; ++j) factor_(i, j) = y(i, j);

  // Y is symmetric, so its row-major storage is also its column-major
  // storage. LAPACK's column-major upper factor U (Y = U^T U) read back
  // row-major is the lower factor L = U^T with Y = L L^T, which is what
  // cholesky_solve_rows takes.
  T anorm = T(0);  // 1-norm of Y, for the condition estimate
  for (spt_nnz j = 0; j < n; ++j) {
    T col = T(0);
    for (spt_nnz i = 0; i < n; ++i) col += std::abs(y(i, j));
    anorm = std::max(anorm, col);
  }
  const lapack_int info = potrf(ln, factor_.values.data());
  if (info < 0) fail(SPT_ERR_INTERNAL, "LAPACKE potrf rejected argument ", -info);
  T rcond = T(0);
  if (info == 0 && anorm > T(0)) {
    lapack_int cinfo = pocon(ln, factor_.values.data(), anorm, &rcond);
    if (cinfo < 0) fail(SPT_ERR_INTERNAL, "LAPACKE pocon rejected argument ", -cinfo);
  }
  return {static_cast<int>(info), anorm, rcond};
}

template <typename T>
void NormalEquations<T>::solve_cholesky(spt_context_s& ctx, MatRef<T> rows) {
  SPT_DISPATCH(ctx, cholesky_solve_rows, factor_.cref(), rows);
}

template <typename T>
int NormalEquations<T>::solve_pseudo_inverse(spt_context_s& ctx, ConstMatRef<T> y, MatRef<T> rows) {
  const spt_nnz n = rank_;
  const lapack_int ln = static_cast<lapack_int>(rank_);
  const T eps = std::numeric_limits<T>::epsilon();
  // pinv(Y) = V diag(1/w) V^T over eigenvalues with |w| above R * eps *
  // max|w| (the usual pseudo-inverse cut-off).
  for (spt_nnz i = 0; i < n; ++i)
    for (spt_nnz j = 0; j < n; ++j) factor_(i, j) = y(i, j);
  const lapack_int info = syevd(ln, factor_.values.data(), eigenvalues_.data());
  if (info < 0) fail(SPT_ERR_INTERNAL, "LAPACKE syevd rejected argument ", -info);
  if (info > 0) return static_cast<int>(info);
  T wmax = T(0);
  for (spt_nnz k = 0; k < n; ++k) wmax = std::max(wmax, std::abs(eigenvalues_[k]));
  const T cutoff = static_cast<T>(n) * eps * wmax;
  // Column k of V (column-major) is row k of factor_ read row-major.
  for (spt_nnz i = 0; i < n; ++i)
    for (spt_nnz j = 0; j < n; ++j) pinv_(i, j) = T(0);
  for (spt_nnz k = 0; k < n; ++k) {
    const T w = eigenvalues_[k];
    if (!(std::abs(w) > cutoff)) continue;
    const T* v = &factor_(k, 0);
    for (spt_nnz i = 0; i < n; ++i)
      for (spt_nnz j = 0; j < n; ++j) pinv_(i, j) += v[i] * v[j] / w;
  }
  SPT_DISPATCH(ctx, multiply_rows, pinv_.cref(), rows);
  return 0;
}

template <typename T>
bool NormalEquations<T>::solve(spt_context_s& ctx, ConstMatRef<T> y, MatRef<T> rows) {
  const spt_nnz n = rank_;
  const Factorisation f = factorise(y);
  if (f.cholesky_info == 0 && f.anorm > T(0) && f.rcond >= std::numeric_limits<T>::epsilon()) {
    solve_cholesky(ctx, rows);
    return false;
  }
  log(ctx, 1,
      f.cholesky_info > 0
          ? cat("CP-ALS: the ", n, " x ", n, " normal-equation matrix is not positive definite (Cholesky pivot ",
                f.cholesky_info, " failed); using the pseudo-inverse")
          : cat("CP-ALS: the ", n, " x ", n, " normal-equation matrix is numerically singular (reciprocal "
                "condition ", f.rcond, "); using the pseudo-inverse"));
  const int info = solve_pseudo_inverse(ctx, y, rows);
  if (info > 0)
    fail(SPT_ERR_NUMERICAL, "the eigen-decomposition of the ", n, " x ", n,
         " normal-equation matrix did not converge (LAPACK info ", info, ")");
  return true;
}

template class NormalEquations<float>;
template class NormalEquations<double>;

}  // namespace spt
