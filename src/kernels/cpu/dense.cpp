// OpenMP dense kernels for the decompositions (see kernels/dense.hpp).
//
// The matrices here are tall and thin (I x R, R = rank), so the work is
// split over row blocks. Reductions (Gram, column norms and dots) give each
// block its own partial result and add the partials in block order; the
// block count depends only on the row count and exec.threads, so results are
// bit-identical from run to run at a fixed thread count. Row-wise kernels
// (solves, scalings) give bit-identical results for any thread count.
//
// These are plain loops rather than OpenBLAS calls on purpose: the OpenBLAS
// linked here is the pthreads build, whose own thread pool ignores the
// context's thread count (it is process-global) and oversubscribes or
// serialises when called from inside OpenMP regions. The Gram is the one
// compute-bound kernel (R^2 / 2 multiply-adds per row): it keeps tiles of
// the sums in registers (gram_rows) and sums in double.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/dense.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

// Number of row blocks: one per thread, but no block smaller than
// `min_rows` rows so that tiny matrices do not pay for a parallel region.
int block_count(spt_nnz rows, int threads, spt_nnz min_rows) {
  const spt_nnz by_size = std::max<spt_nnz>(1, rows / std::max<spt_nnz>(1, min_rows));
  return static_cast<int>(std::min<spt_nnz>(static_cast<spt_nnz>(std::max(1, threads)), by_size));
}

// Rows [begin, end) of block b out of nblocks.
inline spt_nnz block_begin(spt_nnz rows, int b, int nblocks) {
  return rows * static_cast<spt_nnz>(b) / static_cast<spt_nnz>(nblocks);
}

// Rows per block below which a parallel region is not worth it.
constexpr spt_nnz kMinRowsPerBlock = 2048;
// Rows solved together by cholesky_solve_rows: the running sums of one
// entry across them (256 bytes) are eight AVX registers, enough independent
// sums to keep the multiply-adds busy.
template <typename T>
constexpr int kSolveBlock = static_cast<int>(256 / sizeof(T));

inline double nan_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return a > b ? a : b;
}

// Gram tiles: kGramTileRows output rows by kGramTileCols output columns
// held in registers while the rows of a chunk (kGramChunkRows, widened to
// double once into `wide`, which stays in cache) stream past, so each
// product costs one multiply-add and no load or store of the sums. Only
// tiles that reach the upper triangle are computed.
constexpr spt_nnz kGramTileRows = 2;
constexpr spt_nnz kGramTileCols = 8;
constexpr spt_nnz kGramChunkRows = 128;

// p (R x R, double, upper triangle and the tiles' spill below it) += the
// Gram of rows [b, e) of a, in double. wide: kGramChunkRows * R doubles.
template <typename T>
void gram_rows(ConstMatRef<T> a, spt_nnz b, spt_nnz e, double* p, double* wide) {
  const spt_nnz rank = a.cols;
  for (spt_nnz c0 = b; c0 < e; c0 += kGramChunkRows) {
    const spt_nnz rows = std::min(e, c0 + kGramChunkRows) - c0;
    for (spt_nnz i = 0; i < rows; ++i) {
      const T* x = a.row(c0 + i);
      double* w = wide + i * rank;
#pragma omp simd
      for (spt_nnz r = 0; r < rank; ++r) w[r] = static_cast<double>(x[r]);
    }
    for (spt_nnz r0 = 0; r0 < rank; r0 += kGramTileRows) {
      const spt_nnz nr = std::min(kGramTileRows, rank - r0);
      for (spt_nnz s0 = r0 - r0 % kGramTileCols; s0 < rank; s0 += kGramTileCols) {
        const spt_nnz ns = std::min(kGramTileCols, rank - s0);
        double acc[kGramTileRows][kGramTileCols] = {};
        if (nr == kGramTileRows && ns == kGramTileCols) {
          for (spt_nnz i = 0; i < rows; ++i) {
            const double* x = wide + i * rank;
            const double x0 = x[r0], x1 = x[r0 + 1];
#pragma GCC unroll 8
            for (spt_nnz j = 0; j < kGramTileCols; ++j) {
              acc[0][j] += x0 * x[s0 + j];
              acc[1][j] += x1 * x[s0 + j];
            }
          }
        } else {
          for (spt_nnz i = 0; i < rows; ++i) {
            const double* x = wide + i * rank;
            for (spt_nnz q = 0; q < nr; ++q)
              for (spt_nnz j = 0; j < ns; ++j) acc[q][j] += x[r0 + q] * x[s0 + j];
          }
        }
        for (spt_nnz q = 0; q < nr; ++q)
          for (spt_nnz j = 0; j < ns; ++j) p[(r0 + q) * rank + s0 + j] += acc[q][j];
      }
    }
  }
}

// out = a^T a in double (U = double) or rounded once to U: one partial per
// row block (gram_rows), added in block order.
template <typename T, typename U>
void gram_impl(const Exec& exec, ConstMatRef<T> a, MatRef<U> out) {
  const spt_nnz rank = a.cols;
  const int nblocks = block_count(a.rows, exec.threads, kMinRowsPerBlock);
  buffer<double> partial, wide;
  partial.assign(static_cast<size_t>(nblocks) * rank * rank, 0.0);
  wide.resize(static_cast<size_t>(nblocks) * kGramChunkRows * rank);
#pragma omp parallel for schedule(static) num_threads(nblocks) if (nblocks > 1)
  for (int b = 0; b < nblocks; ++b)
    gram_rows<T>(a, block_begin(a.rows, b, nblocks), block_begin(a.rows, b + 1, nblocks),
                 partial.data() + static_cast<size_t>(b) * rank * rank,
                 wide.data() + static_cast<size_t>(b) * kGramChunkRows * rank);
  for (spt_nnz r = 0; r < rank; ++r)
    for (spt_nnz s = r; s < rank; ++s) {
      double sum = 0.0;
      for (int b = 0; b < nblocks; ++b) sum += partial[(static_cast<size_t>(b) * rank + r) * rank + s];
      out(r, s) = static_cast<U>(sum);
      out(s, r) = static_cast<U>(sum);
    }
}

template <typename T>
void column_norms_impl(const Exec& exec, ConstMatRef<T> a, ColumnNorm kind, double* norms) {
  const spt_nnz rank = a.cols;
  const int nblocks = block_count(a.rows, exec.threads, kMinRowsPerBlock);
  buffer<double> partial;
  partial.assign(static_cast<size_t>(nblocks) * rank, 0.0);
  const bool two = kind == ColumnNorm::two;
#pragma omp parallel for schedule(static) num_threads(nblocks) if (nblocks > 1)
  for (int b = 0; b < nblocks; ++b) {
    double* p = partial.data() + static_cast<size_t>(b) * rank;
    const spt_nnz end = block_begin(a.rows, b + 1, nblocks);
    for (spt_nnz i = block_begin(a.rows, b, nblocks); i < end; ++i) {
      const T* x = a.row(i);
      if (two) {
        for (spt_nnz r = 0; r < rank; ++r) p[r] += static_cast<double>(x[r]) * x[r];
      } else {
        for (spt_nnz r = 0; r < rank; ++r) p[r] = nan_max(p[r], std::abs(static_cast<double>(x[r])));
      }
    }
  }
  for (spt_nnz r = 0; r < rank; ++r) {
    double acc = 0.0;
    for (int b = 0; b < nblocks; ++b) {
      const double v = partial[static_cast<size_t>(b) * rank + r];
      acc = two ? acc + v : nan_max(acc, v);
    }
    norms[r] = two ? std::sqrt(acc) : acc;
  }
}

template <typename T>
void divide_columns_impl(const Exec& exec, MatRef<T> a, const T* divisors) {
  const spt_nnz rank = a.cols;
  const int threads = block_count(a.rows, exec.threads, kMinRowsPerBlock);
  // A zero divisor leaves its column as it is: dividing by 1 instead (exact)
  // keeps the row loop free of branches, so it vectorises.
  std::vector<T> by(rank);
  for (spt_nnz r = 0; r < rank; ++r) by[r] = divisors[r] != T(0) ? divisors[r] : T(1);
  const T* __restrict d = by.data();
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (spt_nnz i = 0; i < a.rows; ++i) {
    T* __restrict x = a.row(i);
#pragma omp simd
    for (spt_nnz r = 0; r < rank; ++r) x[r] /= d[r];
  }
}

template <typename T>
void column_dots_impl(const Exec& exec, ConstMatRef<T> a, ConstMatRef<T> b_mat, double* dots) {
  const spt_nnz rank = a.cols;
  const int nblocks = block_count(a.rows, exec.threads, kMinRowsPerBlock);
  buffer<double> partial;
  partial.assign(static_cast<size_t>(nblocks) * rank, 0.0);
#pragma omp parallel for schedule(static) num_threads(nblocks) if (nblocks > 1)
  for (int b = 0; b < nblocks; ++b) {
    double* p = partial.data() + static_cast<size_t>(b) * rank;
    const spt_nnz end = block_begin(a.rows, b + 1, nblocks);
    for (spt_nnz i = block_begin(a.rows, b, nblocks); i < end; ++i) {
      const T* x = a.row(i);
      const T* y = b_mat.row(i);
      for (spt_nnz r = 0; r < rank; ++r) p[r] += static_cast<double>(x[r]) * y[r];
    }
  }
  for (spt_nnz r = 0; r < rank; ++r) {
    double acc = 0.0;
    for (int b = 0; b < nblocks; ++b) acc += partial[static_cast<size_t>(b) * rank + r];
    dots[r] = acc;
  }
}

template <typename T>
void cholesky_solve_rows_impl(const Exec& exec, ConstMatRef<T> lower, MatRef<T> rows) {
  // Same operations, in the same order, as the reference kernel, arranged so
  // the inner updates are contiguous (vectorisable) and each row is
  // independent: the result does not depend on the thread count.
  const spt_nnz rank = rows.cols;
  buffer<T> upper;  // L^T row-major, so column r of L is contiguous
  upper.assign(rank * rank, T(0));
  for (spt_nnz r = 0; r < rank; ++r)
    for (spt_nnz j = 0; j <= r; ++j) upper[j * rank + r] = lower(r, j);
  const T* lt = upper.data();
  std::vector<T> inverse(rank);  // of the diagonal, as the reference kernel
  for (spt_nnz r = 0; r < rank; ++r) inverse[r] = T(1) / lower(r, r);
  // Rows go kSolveBlock<T> at a time through a transposed scratch block, so
  // every step of the substitution is one vector operation across the
  // block's rows instead of a short, dependent scalar chain per row (much
  // faster at small R: docs/design-measurements.md, "Blocked triangular
  // solve"); each row still sees exactly the operations
  // above, in the same order. A last partial block runs row by row.
  const spt_nnz blocks = rows.rows / kSolveBlock<T>;
  const int threads = block_count(rows.rows, exec.threads, kMinRowsPerBlock / 4);
  buffer<T> scratch;
  scratch.assign(static_cast<size_t>(std::max(1, threads)) * rank * kSolveBlock<T>, T(0));
  auto solve_row = [&](T* x) {
    for (spt_nnz r = 0; r < rank; ++r) {
      const T xr = x[r] * inverse[r];
      x[r] = xr;
      const T* col = lt + r * rank;
#pragma omp simd
      for (spt_nnz j = r + 1; j < rank; ++j) x[j] -= col[j] * xr;
    }
    for (spt_nnz r = rank; r-- > 0;) {
      const T xr = x[r] * inverse[r];
      x[r] = xr;
      const T* row = lower.row(r);
#pragma omp simd
      for (spt_nnz j = 0; j < r; ++j) x[j] -= row[j] * xr;
    }
  };
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    T* t = scratch.data() + static_cast<size_t>(omp_get_thread_num()) * rank * kSolveBlock<T>;
#pragma omp for schedule(static)
    for (spt_nnz blk = 0; blk < blocks; ++blk) {
      const spt_nnz i0 = blk * kSolveBlock<T>;
      for (int q = 0; q < kSolveBlock<T>; ++q) {
        const T* x = rows.row(i0 + q);
        for (spt_nnz r = 0; r < rank; ++r) t[r * kSolveBlock<T> + q] = x[r];
      }
      // Each entry is finished in turn (left-looking): its updates, in the
      // order the substitution above applies them, summed in registers,
      // then its scaling by the reciprocal; so the block is stored once per entry rather
      // than once per update.
      T acc[kSolveBlock<T>];
      for (spt_nnz j = 0; j < rank; ++j) {
        const T* lj = lower.row(j);
#pragma omp simd
        for (int q = 0; q < kSolveBlock<T>; ++q) acc[q] = t[j * kSolveBlock<T> + q];
        for (spt_nnz r = 0; r < j; ++r) {
          const T* __restrict xr = t + r * kSolveBlock<T>;
          const T c = lj[r];
#pragma omp simd
          for (int q = 0; q < kSolveBlock<T>; ++q) acc[q] -= c * xr[q];
        }
        const T d = inverse[j];
#pragma omp simd
        for (int q = 0; q < kSolveBlock<T>; ++q) t[j * kSolveBlock<T> + q] = acc[q] * d;
      }
      for (spt_nnz j = rank; j-- > 0;) {
        const T* cj = lt + j * rank;  // column j of L
#pragma omp simd
        for (int q = 0; q < kSolveBlock<T>; ++q) acc[q] = t[j * kSolveBlock<T> + q];
        for (spt_nnz r = rank; r-- > j + 1;) {
          const T* __restrict xr = t + r * kSolveBlock<T>;
          const T c = cj[r];
#pragma omp simd
          for (int q = 0; q < kSolveBlock<T>; ++q) acc[q] -= c * xr[q];
        }
        const T d = inverse[j];
#pragma omp simd
        for (int q = 0; q < kSolveBlock<T>; ++q) t[j * kSolveBlock<T> + q] = acc[q] * d;
      }
      for (int q = 0; q < kSolveBlock<T>; ++q) {
        T* x = rows.row(i0 + q);
        for (spt_nnz r = 0; r < rank; ++r) x[r] = t[r * kSolveBlock<T> + q];
      }
    }
  }
  for (spt_nnz i = blocks * kSolveBlock<T>; i < rows.rows; ++i) solve_row(rows.row(i));
}

template <typename T>
void multiply_rows_impl(const Exec& exec, ConstMatRef<T> s, MatRef<T> rows) {
  const spt_nnz rank = rows.cols;
  const int threads = block_count(rows.rows, exec.threads, kMinRowsPerBlock / 4);
  // One scratch row per thread, allocated before the parallel region.
  buffer<T> scratch;
  scratch.assign(static_cast<size_t>(std::max(1, threads)) * rank, T(0));
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    T* tmp = scratch.data() + static_cast<size_t>(omp_get_thread_num()) * rank;
#pragma omp for schedule(static)
    for (spt_nnz i = 0; i < rows.rows; ++i) {
      T* x = rows.row(i);
      for (spt_nnz c = 0; c < rank; ++c) tmp[c] = T(0);
      for (spt_nnz r = 0; r < rank; ++r) {
        const T xr = x[r];
        const T* sr = s.row(r);
#pragma omp simd
        for (spt_nnz c = 0; c < rank; ++c) tmp[c] += xr * sr[c];
      }
      for (spt_nnz c = 0; c < rank; ++c) x[c] = tmp[c];
    }
  }
}

}  // namespace

#define SPT_INSTANTIATE(T)                                                                                   \
  void gram(const Exec& exec, ConstMatRef<T> a, MatRef<T> out) { gram_impl<T, T>(exec, a, out); }           \
  void gram_wide(const Exec& exec, ConstMatRef<T> a, MatRef<double> out) { gram_impl<T, double>(exec, a, out); } \
  void column_norms(const Exec& exec, ConstMatRef<T> a, ColumnNorm kind, double* norms) {                   \
    column_norms_impl<T>(exec, a, kind, norms);                                                              \
  }                                                                                                          \
  void divide_columns(const Exec& exec, MatRef<T> a, const T* divisors) {                                   \
    divide_columns_impl<T>(exec, a, divisors);                                                               \
  }                                                                                                          \
  void column_dots(const Exec& exec, ConstMatRef<T> a, ConstMatRef<T> b, double* dots) {                    \
    column_dots_impl<T>(exec, a, b, dots);                                                                   \
  }                                                                                                          \
  void cholesky_solve_rows(const Exec& exec, ConstMatRef<T> lower, MatRef<T> rows) {                        \
    cholesky_solve_rows_impl<T>(exec, lower, rows);                                                          \
  }                                                                                                          \
  void multiply_rows(const Exec& exec, ConstMatRef<T> s, MatRef<T> rows) { multiply_rows_impl<T>(exec, s, rows); }

SPT_INSTANTIATE(float)
SPT_INSTANTIATE(double)
#undef SPT_INSTANTIATE

}  // namespace spt::kernels::SPT_CPU_VARIANT
