// Reference (sequential, obviously correct) dense kernels: the oracles the
// OpenMP versions in kernels/cpu/dense.cpp are tested against.
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/dense.hpp"

namespace spt::kernels::reference {

namespace {

template <typename T, typename U>
void gram_impl(ConstMatRef<T> a, MatRef<U> out) {
  const spt_nnz rank = a.cols;
  for (spt_nnz r = 0; r < rank; ++r)
    for (spt_nnz s = r; s < rank; ++s) {
      double sum = 0.0;
      for (spt_nnz i = 0; i < a.rows; ++i) sum += static_cast<double>(a(i, r)) * static_cast<double>(a(i, s));
      out(r, s) = static_cast<U>(sum);
      out(s, r) = static_cast<U>(sum);
    }
}

// max that lets NaN win, so a NaN anywhere in a column shows in its norm.
inline double nan_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return a > b ? a : b;
}

template <typename T>
void column_norms_impl(ConstMatRef<T> a, ColumnNorm kind, double* norms) {
  for (spt_nnz r = 0; r < a.cols; ++r) {
    double acc = 0.0;
    for (spt_nnz i = 0; i < a.rows; ++i) {
      const double v = a(i, r);
      acc = kind == ColumnNorm::two ? acc + v * v : nan_max(acc, std::abs(v));
    }
    norms[r] = kind == ColumnNorm::two ? std::sqrt(acc) : acc;
  }
}

template <typename T>
void divide_columns_impl(MatRef<T> a, const T* divisors) {
  for (spt_nnz i = 0; i < a.rows; ++i)
    for (spt_nnz r = 0; r < a.cols; ++r)
      if (divisors[r] != T(0)) a(i, r) /= divisors[r];
}

template <typename T>
void column_dots_impl(ConstMatRef<T> a, ConstMatRef<T> b, double* dots) {
  for (spt_nnz r = 0; r < a.cols; ++r) {
    double acc = 0.0;
    for (spt_nnz i = 0; i < a.rows; ++i) acc += static_cast<double>(a(i, r)) * b(i, r);
    dots[r] = acc;
  }
}

template <typename T>
void cholesky_solve_rows_impl(ConstMatRef<T> lower, MatRef<T> rows) {
  // x (L L^T) = b  <=>  L z = b^T, then L^T x^T = z. Column-oriented
  // substitution (each solved entry is eliminated from the rest at once),
  // multiplying by the diagonal's reciprocals (as optimised TRSMs do: a
  // division per entry costs more than all its updates at small R); the
  // cpu kernel does the same operations in the same order.
  const spt_nnz rank = rows.cols;
  std::vector<T> inverse(rank);
  for (spt_nnz r = 0; r < rank; ++r) inverse[r] = T(1) / lower(r, r);
  for (spt_nnz i = 0; i < rows.rows; ++i) {
    T* x = rows.row(i);
    for (spt_nnz r = 0; r < rank; ++r) {
      x[r] *= inverse[r];
      for (spt_nnz j = r + 1; j < rank; ++j) x[j] -= lower(j, r) * x[r];
    }
    for (spt_nnz r = rank; r-- > 0;) {
      x[r] *= inverse[r];
      for (spt_nnz j = 0; j < r; ++j) x[j] -= lower(r, j) * x[r];
    }
  }
}

template <typename T>
void multiply_rows_impl(ConstMatRef<T> s, MatRef<T> rows) {
  const spt_nnz rank = rows.cols;
  std::vector<T> tmp(rank);
  for (spt_nnz i = 0; i < rows.rows; ++i) {
    T* x = rows.row(i);
    for (spt_nnz c = 0; c < rank; ++c) {
      T sum = T(0);
      for (spt_nnz r = 0; r < rank; ++r) sum += x[r] * s(r, c);
      tmp[c] = sum;
    }
    for (spt_nnz c = 0; c < rank; ++c) x[c] = tmp[c];
  }
}

}  // namespace

#define SPT_INSTANTIATE(T)                                                                          \
  void gram(const Exec&, ConstMatRef<T> a, MatRef<T> out) { gram_impl<T, T>(a, out); }              \
  void gram_wide(const Exec&, ConstMatRef<T> a, MatRef<double> out) { gram_impl<T, double>(a, out); } \
  void column_norms(const Exec&, ConstMatRef<T> a, ColumnNorm kind, double* norms) {                \
    column_norms_impl<T>(a, kind, norms);                                                           \
  }                                                                                                 \
  void divide_columns(const Exec&, MatRef<T> a, const T* divisors) { divide_columns_impl<T>(a, divisors); } \
  void column_dots(const Exec&, ConstMatRef<T> a, ConstMatRef<T> b, double* dots) {                 \
    column_dots_impl<T>(a, b, dots);                                                                \
  }                                                                                                 \
  void cholesky_solve_rows(const Exec&, ConstMatRef<T> lower, MatRef<T> rows) {                     \
    cholesky_solve_rows_impl<T>(lower, rows);                                                       \
  }                                                                                                 \
  void multiply_rows(const Exec&, ConstMatRef<T> s, MatRef<T> rows) { multiply_rows_impl<T>(s, rows); }

SPT_INSTANTIATE(float)
SPT_INSTANTIATE(double)
#undef SPT_INSTANTIATE

}  // namespace spt::kernels::reference
