// Solving the CP-ALS normal equations  X * Y = B  for X, where Y (R x R) is
// the Hadamard product of Gram matrices (symmetric positive semi-definite)
// and B (I x R) the MTTKRP result. Y is factored once per solve (Cholesky,
// LAPACKE ?potrf); when it is not positive definite or is numerically
// singular (reciprocal condition estimate below machine epsilon), X = B *
// pinv(Y) through a symmetric eigen-decomposition (LAPACKE ?syevd) instead,
// and a note goes to the context's log. The tall I x R part of the work runs
// in dense kernels through SPT_DISPATCH.
#pragma once

#include "core/context.hpp"
#include "core/matrix.hpp"
#include "util/internal_api.hpp"

namespace spt {

// The constructor and solve are exported for libsptensor_mpi.so
// (SPT_INTERNAL_API); the split steps below are used inside the library only.
template <typename T>
class NormalEquations {
 public:
  // Workspaces for rank R are allocated here, once, not per solve.
  SPT_INTERNAL_API explicit NormalEquations(spt_index rank);

  // rows <- rows * Y^{-1} (or * pinv(Y)). Y must be R x R symmetric; it is
  // not modified. Returns true when the pseudo-inverse fallback was used.
  // Throws spt::Error (SPT_ERR_NUMERICAL) if LAPACK fails outright.
  SPT_INTERNAL_API bool solve(spt_context_s& ctx, ConstMatRef<T> y, MatRef<T> rows);

  // The parts of solve, for a caller that chooses the branch itself.
  // What factorising Y found: LAPACK potrf's info (0 = factored), ||Y||_1,
  // and the reciprocal condition estimate (?pocon; 0 unless factored with
  // a positive norm).
  struct Factorisation {
    int cholesky_info;
    T anorm;
    T rcond;
  };
  // Cholesky factor of Y (R x R symmetric, not modified) and its condition.
  // Throws SPT_ERR_INTERNAL if LAPACK rejects an argument.
  Factorisation factorise(ConstMatRef<T> y);
  // rows <- rows * Y^{-1} from the last factorise, which succeeded.
  void solve_cholesky(spt_context_s& ctx, MatRef<T> rows);
  // rows <- rows * pinv(Y) (eigenvalues above R eps max|w|); returns LAPACK
  // syevd's info (> 0: did not converge, rows unchanged). Throws
  // SPT_ERR_INTERNAL if LAPACK rejects an argument.
  int solve_pseudo_inverse(spt_context_s& ctx, ConstMatRef<T> y, MatRef<T> rows);

 private:
  spt_index rank_;
  DenseMatrix<T> factor_;   // Cholesky factor / eigenvectors (LAPACK works in place)
  DenseMatrix<T> pinv_;     // pseudo-inverse in the fallback
  buffer<T> eigenvalues_;
};

extern template class NormalEquations<float>;
extern template class NormalEquations<double>;

}  // namespace spt
