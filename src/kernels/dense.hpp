// Dense linear-algebra kernels used by the decompositions (CP-ALS): Gram
// matrices, column norms and scalings, and applying the solution of the
// small R x R normal equations to the tall I x R right-hand sides. Declared
// once here and stamped into spt::kernels::reference (sequential loops, the
// oracle) and spt::kernels::cpu (OpenMP), exactly like kernels.hpp, so
// SPT_DISPATCH reaches them the same way.
//
// All matrices are row-major MatRefs (I x R with R small, the rank). The
// small R x R factorisations themselves (Cholesky, eigen-decomposition for
// the pseudo-inverse) are not kernels: they live with the algorithm in
// src/algo/normal_equations.*.
#pragma once

#include "kernels/kernels.hpp"

namespace spt::kernels {

// Which norm column_norms computes.
enum class ColumnNorm {
  two,     // sqrt(sum_i a(i,r)^2), squares accumulated in double
  max_abs  // max_i |a(i,r)|
};

// The dense kernel list, in the form of kernels.hpp's lists.
#define SPT_DENSE_TYPED_KERNELS(T, X)                                                                   \
  /* out (R x R, full symmetric) = a^T a for a (I x R), accumulated in double, rounded once */                                               \
  X(HOST, void, gram, (ConstMatRef<T> a, MatRef<T> out))                                                \
  /* out (R x R, full symmetric, double) = a^T a, accumulated and kept in double */                     \
  X(HOST, void, gram_wide, (ConstMatRef<T> a, MatRef<double> out))                                      \
  /* norms[r] = chosen norm of column r of a; NaN/Inf in a give a non-finite norm */                    \
  X(HOST, void, column_norms, (ConstMatRef<T> a, ColumnNorm kind, double* norms))                       \
  /* a(:, r) /= divisors[r]; a zero divisor leaves its column unchanged */                              \
  X(HOST, void, divide_columns, (MatRef<T> a, const T* divisors))                                       \
  /* dots[r] = sum_i a(i,r) * b(i,r) (same shapes), accumulated in double */                            \
  X(HOST, void, column_dots, (ConstMatRef<T> a, ConstMatRef<T> b, double* dots))                        \
  /* rows <- rows * inverse(L L^T), L (R x R) lower triangular with nonzero diagonal (only the lower */ \
  /* triangle of `lower` is read): each row is solved by forward then backward substitution */          \
  X(HOST, void, cholesky_solve_rows, (ConstMatRef<T> lower, MatRef<T> rows))                            \
  /* rows <- rows * s, s is R x R (e.g. a pseudo-inverse) */                                            \
  X(HOST, void, multiply_rows, (ConstMatRef<T> s, MatRef<T> rows))

#define SPT_DECLARE_DENSE_BACKEND(backend)           \
  namespace backend {                                \
  SPT_DENSE_TYPED_KERNELS(float, SPT_DECLARE_KERNEL)  \
  SPT_DENSE_TYPED_KERNELS(double, SPT_DECLARE_KERNEL) \
  }

SPT_DECLARE_DENSE_BACKEND(reference)
SPT_DECLARE_DENSE_BACKEND(cpu)
SPT_DECLARE_DENSE_BACKEND(cpu_x86_64_v3)  // the same kernels for x86-64-v3 (kernels/cpu/variant.hpp)

#undef SPT_DECLARE_DENSE_BACKEND

}  // namespace spt::kernels
