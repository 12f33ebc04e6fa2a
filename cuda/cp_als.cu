// The CP-ALS steps on the GPU: see cp_als.cuh for what they compute and why
// they match the CPU's. The R x R work (Hadamard product, condition estimate,
// pseudo-inverse) runs in one thread block: R is the rank (tens to a few
// hundred), so these are microsecond kernels; the I x R work (MTTKRP, solve,
// norms, scaling, Grams) is spread over the device.
#include "cp_als.cuh"
#include "library_checks.cuh"

#include <cublas_v2.h>
#include <cusolverDn.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <vector>

namespace spt::cuda {

namespace {

constexpr int kThreads = 256;
// Row blocks of the column reductions (partials are added in block order on
// the device, so the result does not depend on scheduling).
constexpr uint32_t kMaxReduceBlocks = 1024;

// Scalars the host reads back (once per mode, once per sweep). Each step
// writes its own fields, so nothing is reset between steps.
struct Scalars {
  int potrf_info;     // cuSOLVER potrf: 0, or the order of the failed leading minor
  int solve_info;     // potrs (argument errors only)
  int syevd_info;     // syevd: > 0 = did not converge
  int hadamard_bad;   // 1 when the normal-equation matrix has a non-finite entry
  double anorm;       // 1-norm of the normal-equation matrix
  double ainvnorm;    // 1-norm of its inverse (from the Cholesky factor)
  double inner;       // <X, M>
  double inner_error; // one standard deviation of <X, M> from rounding the MTTKRP to T (0 for double)
  double inner_exact; // <X, M> summed in double over the nonzeros (when asked)
  double norm_model;  // ||M||^2
  int norm_bad[kMaxOrder];  // per mode: first component with a non-finite norm (>= rank: none)
};

template <typename T>
struct Eps;
template <>
struct Eps<float> {
  static constexpr float value = 1.1920928955078125e-7f;  // FLT_EPSILON
};
template <>
struct Eps<double> {
  static constexpr double value = 2.220446049250313080847e-16;  // DBL_EPSILON
};

enum class Reduce : int { sum_squares = 0, max_abs = 1, dot = 2, dot_squares = 3 };

__device__ __forceinline__ double nan_max(double a, double b) {
  if (isnan(a) || isnan(b)) return a + b;  // NaN propagates, as in the CPU kernel
  return a > b ? a : b;
}

__device__ __forceinline__ double combine(Reduce kind, double a, double b) {
  return kind == Reduce::max_abs ? nan_max(a, b) : a + b;
}

// Per row block y and column c: the block's partial reduction of column c
// of a (rows x rank, ld = rank), into partials[y * rank + c]. blockDim =
// (W, kThreads / W): W consecutive columns per warp row (coalesced). A
// non-null `reset` is set to INT_MAX (no component flagged) by the first
// thread, ahead of lambda_from_totals's atomicMin on it.
template <typename T>
__global__ void __launch_bounds__(kThreads) column_partials(const T* a, const T* b, uint64_t rows, uint32_t rank,
                                                           uint64_t rows_per_block, Reduce kind, double* partials,
                                                           int* reset = nullptr) {
  __shared__ double shared[kThreads];
  if (reset && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0) *reset = INT_MAX;
  const uint32_t c = blockIdx.x * blockDim.x + threadIdx.x;
  const uint64_t begin = uint64_t(blockIdx.y) * rows_per_block;
  const uint64_t end = min(begin + rows_per_block, rows);
  double acc = 0.0;
  if (c < rank) {
    for (uint64_t i = begin + threadIdx.y; i < end; i += blockDim.y) {
      const double v = static_cast<double>(a[i * rank + c]);
      if (kind == Reduce::sum_squares) acc += v * v;
      else if (kind == Reduce::max_abs) acc = nan_max(acc, fabs(v));
      else if (kind == Reduce::dot) acc += v * static_cast<double>(b[i * rank + c]);
      else {
        const double t = v * static_cast<double>(b[i * rank + c]);
        acc += t * t;
      }
    }
  }
  shared[threadIdx.y * blockDim.x + threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < rank) {
    double total = shared[threadIdx.x];
    for (uint32_t y = 1; y < blockDim.y; ++y) total = combine(kind, total, shared[y * blockDim.x + threadIdx.x]);
    partials[uint64_t(blockIdx.y) * rank + c] = total;
  }
}

// totals[r]: column r's sum of squares (first sweep) or max |entry| (later)
// over the partials of `blocks` row blocks, added in block order. A NaN max
// becomes +inf: a group takes the max over devices next (a max that may
// drop NaN), and lambda_from_totals flags inf as it flags NaN.
__global__ void column_totals_kernel(const double* partials, uint32_t blocks, uint32_t rank, bool first_sweep,
                                     double* totals) {
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < rank; r += gridDim.x * blockDim.x) {
    double acc = 0.0;
    for (uint32_t b = 0; b < blocks; ++b) {
      const double p = partials[uint64_t(b) * rank + r];
      acc = first_sweep ? acc + p : nan_max(acc, p);
    }
    totals[r] = (!first_sweep && isnan(acc)) ? HUGE_VAL : acc;
  }
}

// lambda[r] from the column totals, as the CPU loop: 2-norm in the first
// sweep, max(max |column|, 1) later; the first component with a non-finite
// norm goes to *bad (atomicMin).
template <typename T>
__global__ void lambda_from_totals(const double* totals, uint32_t rank, bool first_sweep, T* lambda, int* bad) {
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < rank; r += gridDim.x * blockDim.x) {
    const double norm = first_sweep ? sqrt(totals[r]) : totals[r];
    if (!isfinite(norm)) atomicMin(bad, int(r));
    const T n = static_cast<T>(norm);
    lambda[r] = first_sweep ? n : (n > T(1) ? n : T(1));
  }
}

// a(:, r) /= lambda[r]; a zero lambda leaves its column (as the CPU kernel).
template <typename T>
__global__ void divide_columns(T* a, uint64_t rows, uint32_t rank, const T* lambda) {
  const uint64_t total = rows * rank;
  for (uint64_t e = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += uint64_t(gridDim.x) * blockDim.x) {
    const T d = lambda[e % rank];
    if (d != T(0)) a[e] /= d;
  }
}

// Gram matrices G = U^T U (U rows x rank, row-major) in two passes: row
// blocks (blockIdx.x) write partial sums in double for every (r, s) with r
// <= s, then gram_block_sums adds them in block order (deterministic). Not
// cuBLAS syrk: its float32 syrk of a tall factor was slow and, accumulating
// in float32 along every row, moved the CP-ALS fit measurably from the
// CPU's (docs/design-measurements.md, "GPU Gram matrices"); in double here
// it is both fast and at least as accurate as the CPU kernel.
//
// A block stages kGramTileDoubles of rows in shared memory (as double) and
// each thread owns up to kPairsPerThread entries (r, s) of the R x R
// result, entry p = blockIdx.y * kThreads * kPairsPerThread + k * kThreads
// + threadIdx.x (r = p / R, s = p % R; entries with r > s are skipped).
constexpr int kPairsPerThread = 8;
constexpr uint32_t kGramTileDoubles = 6144;  // 48 KiB of shared memory
static_assert(cp_als_max_rank <= kGramTileDoubles, "a Gram tile must hold one factor row");

uint32_t gram_tile_rows(uint32_t rank) { return std::max<uint32_t>(1, std::min<uint32_t>(32, kGramTileDoubles / rank)); }

// Row blocks of a Gram (partials: blocks x R^2 doubles, at most 32 MiB).
uint32_t gram_blocks_max(uint32_t rank) {
  const uint64_t rr = uint64_t(rank) * rank;
  return static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(256, (uint64_t(1) << 22) / rr)));
}

template <typename T>
__global__ void __launch_bounds__(kThreads) gram_partials(const T* a, uint64_t rows, uint32_t rank,
                                                         uint64_t rows_per_block, uint32_t tile_rows,
                                                         double* partials) {
  __shared__ double tile[kGramTileDoubles];
  const uint64_t rr = uint64_t(rank) * rank;
  const uint64_t begin = uint64_t(blockIdx.x) * rows_per_block;
  const uint64_t end = min(begin + rows_per_block, rows);
  uint32_t r[kPairsPerThread], c[kPairsPerThread];
  bool on[kPairsPerThread];
  double acc[kPairsPerThread];
#pragma unroll
  for (int k = 0; k < kPairsPerThread; ++k) {
    const uint64_t p = uint64_t(blockIdx.y) * kThreads * kPairsPerThread + uint64_t(k) * kThreads + threadIdx.x;
    r[k] = p < rr ? static_cast<uint32_t>(p / rank) : 0;
    c[k] = p < rr ? static_cast<uint32_t>(p % rank) : 0;
    on[k] = p < rr && r[k] <= c[k];
    acc[k] = 0.0;
  }
  for (uint64_t row0 = begin; row0 < end; row0 += tile_rows) {
    const uint32_t n = static_cast<uint32_t>(min(uint64_t(tile_rows), end - row0));
    __syncthreads();
    for (uint32_t e = threadIdx.x; e < n * rank; e += kThreads) tile[e] = static_cast<double>(a[row0 * rank + e]);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kPairsPerThread; ++k) {
      if (!on[k]) continue;
      double sum = acc[k];
      for (uint32_t i = 0; i < n; ++i) sum += tile[i * rank + r[k]] * tile[i * rank + c[k]];
      acc[k] = sum;
    }
  }
#pragma unroll
  for (int k = 0; k < kPairsPerThread; ++k)
    if (on[k]) partials[uint64_t(blockIdx.x) * rr + uint64_t(r[k]) * rank + c[k]] = acc[k];
}

// sums = the row blocks' partials added in block order (both triangles).
__global__ void gram_block_sums(const double* partials, uint32_t blocks, uint32_t rank, double* sums) {
  const uint64_t rr = uint64_t(rank) * rank;
  for (uint64_t p = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < rr; p += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t r = p / rank, c = p % rank;
    if (r > c) continue;
    double sum = 0.0;
    for (uint32_t b = 0; b < blocks; ++b) sum += partials[uint64_t(b) * rr + p];
    sums[p] = sum;
    sums[c * rank + r] = sum;
  }
}

// g: the Gram in T (normal equations); gd: the same in double (the fit's
// ||M||^2, whose terms cancel near fit 1).
template <typename T>
__global__ void gram_from_sums_kernel(const double* sums, uint32_t rank, T* g, double* gd) {
  const uint64_t rr = uint64_t(rank) * rank;
  for (uint64_t p = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < rr; p += uint64_t(gridDim.x) * blockDim.x) {
    g[p] = static_cast<T>(sums[p]);
    gd[p] = sums[p];
  }
}

// Block-wide max of one double per thread (blockDim = kThreads).
__device__ double block_max(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] = nan_max(shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }
  const double out = shared[0];
  __syncthreads();
  return out;
}

__device__ double block_sum(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  const double out = shared[0];
  __syncthreads();
  return out;
}

// One block. h = chol = Hadamard product over m != mode of the Grams (in
// T, in mode order, from 1 as the CPU loop), inv = identity (right-hand
// side of the condition estimate), s->anorm = ||h||_1, s->hadamard_bad (1
// when an entry is not finite, else 0).
template <typename T>
__global__ void __launch_bounds__(kThreads) hadamard_of_grams(const T* grams, uint32_t order, uint32_t mode,
                                                             uint32_t rank, T* h, T* chol, T* inv, Scalars* s) {
  __shared__ double shared[kThreads];
  const uint64_t rr = uint64_t(rank) * rank;
  int bad = 0;
  for (uint64_t e = threadIdx.x; e < rr; e += kThreads) {
    T v = T(1);
    for (uint32_t m = 0; m < order; ++m)
      if (m != mode) v *= grams[m * rr + e];
    h[e] = v;
    chol[e] = v;
    inv[e] = (e / rank == e % rank) ? T(1) : T(0);
    if (!isfinite(static_cast<double>(v))) bad = 1;
  }
  const int any_bad = __syncthreads_or(bad);
  if (threadIdx.x == 0) s->hadamard_bad = any_bad ? 1 : 0;
  double norm = 0.0;
  for (uint32_t c = threadIdx.x; c < rank; c += kThreads) {
    double sum = 0.0;
    for (uint32_t i = 0; i < rank; ++i) sum += fabs(static_cast<double>(h[uint64_t(i) * rank + c]));
    norm = nan_max(norm, sum);
  }
  norm = block_max(norm, shared);
  if (threadIdx.x == 0) s->anorm = norm;
}

// One block: *out = ||a||_1 (max column sum of |a|, R x R).
template <typename T>
__global__ void __launch_bounds__(kThreads) one_norm(const T* a, uint32_t rank, double* out) {
  __shared__ double shared[kThreads];
  double norm = 0.0;
  for (uint32_t c = threadIdx.x; c < rank; c += kThreads) {
    double sum = 0.0;
    for (uint32_t i = 0; i < rank; ++i) sum += fabs(static_cast<double>(a[uint64_t(i) * rank + c]));
    norm = nan_max(norm, sum);
  }
  norm = block_max(norm, shared);
  if (threadIdx.x == 0) *out = norm;
}

// One block: out = pinv = V diag(1/w) V^T over |w_k| > R eps max|w| (V
// column-major from syevd: eigenvector k at v + k * rank), summed over k in
// increasing order in T, as the CPU fallback.
template <typename T>
__global__ void __launch_bounds__(kThreads) pseudo_inverse(const T* v, const T* w, uint32_t rank, T* out) {
  __shared__ double shared[kThreads];
  double wmax = 0.0;
  for (uint32_t k = threadIdx.x; k < rank; k += kThreads) wmax = nan_max(wmax, fabs(static_cast<double>(w[k])));
  const T cutoff = static_cast<T>(rank) * Eps<T>::value * static_cast<T>(block_max(wmax, shared));
  const uint64_t rr = uint64_t(rank) * rank;
  for (uint64_t e = threadIdx.x; e < rr; e += kThreads) {
    const uint64_t i = e / rank, j = e % rank;
    T sum = T(0);
    for (uint32_t k = 0; k < rank; ++k) {
      const T wk = w[k];
      if (!(fabs(static_cast<double>(wk)) > static_cast<double>(cutoff))) continue;
      const T* vk = v + uint64_t(k) * rank;
      sum += vk[i] * vk[j] / wk;
    }
    out[e] = sum;
  }
}

// One block, after the last mode: dots[r] = sum_i U(i,r) B(i,r) from the
// partials, s->inner = sum_r dots[r] lambda[r] (in r order, as the CPU),
// s->norm_model = sum_{r,s} lambda_r lambda_s prod_m G_m(r,s) in double
// (from the double Grams).
template <typename T>
__global__ void __launch_bounds__(kThreads) fit_terms_kernel(const double* dot_partials, uint32_t blocks, const T* lambda,
                                                     const double* grams, uint32_t order, uint32_t rank, double* dots,
                                                     Scalars* s) {
  __shared__ double shared[kThreads];
  for (uint32_t r = threadIdx.x; r < rank; r += kThreads) {
    double acc = 0.0;
    for (uint32_t b = 0; b < blocks; ++b) acc += dot_partials[uint64_t(b) * rank + r];
    dots[r] = acc;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double inner = 0.0;
    for (uint32_t r = 0; r < rank; ++r) inner += dots[r] * static_cast<double>(lambda[r]);
    s->inner = inner;
    s->inner_error = 0.0;  // float32: inner_error_term follows
  }
  const uint64_t rr = uint64_t(rank) * rank;
  double total = 0.0;
  for (uint64_t e = threadIdx.x; e < rr; e += kThreads) {
    double v = static_cast<double>(lambda[e / rank]) * static_cast<double>(lambda[e % rank]);
    for (uint32_t m = 0; m < order; ++m) v *= grams[m * rr + e];
    total += v;
  }
  total = block_sum(total, shared);
  if (threadIdx.x == 0) s->norm_model = total;
}

// One block, float32 only: s->inner_error = the standard deviation of
// <X, M> = sum_{i,r} lambda_r U(i,r) B(i,r) when each B(i,r) carries one
// rounding to float32 (independent, uniform within +-eps/2): eps/(2 sqrt 3)
// times the terms' root-sum-square, from the row blocks' partial sums of
// (U(i,r) B(i,r))^2 (as the CPU loop in src/algo/cp_als.cpp).
template <typename T>
__global__ void __launch_bounds__(kThreads) inner_error_term(const double* square_partials, uint32_t blocks,
                                                            const T* lambda, uint32_t rank, Scalars* s) {
  __shared__ double shared[kThreads];
  double total = 0.0;
  for (uint32_t r = threadIdx.x; r < rank; r += kThreads) {
    double acc = 0.0;
    for (uint32_t b = 0; b < blocks; ++b) acc += square_partials[uint64_t(b) * rank + r];
    const double l = static_cast<double>(lambda[r]);
    total += l * l * acc;
  }
  total = block_sum(total, shared);
  if (threadIdx.x == 0) s->inner_error = 0.5 * static_cast<double>(Eps<T>::value) / sqrt(3.0) * sqrt(total);
}

/* ----------------------------- library calls ----------------------------- */

// C (n x cols, column-major) = A (n x n) B (n x cols).
cublasStatus_t gemm(cublasHandle_t h, int64_t n, int64_t cols, const float* a, const float* b, float* c) {
  const float one = 1.0f, zero = 0.0f;
  return cublasSgemm_64(h, CUBLAS_OP_N, CUBLAS_OP_N, n, cols, n, &one, a, n, b, n, &zero, c, n);
}
cublasStatus_t gemm(cublasHandle_t h, int64_t n, int64_t cols, const double* a, const double* b, double* c) {
  const double one = 1.0, zero = 0.0;
  return cublasDgemm_64(h, CUBLAS_OP_N, CUBLAS_OP_N, n, cols, n, &one, a, n, b, n, &zero, c, n);
}
cusolverStatus_t potrf_size(cusolverDnHandle_t h, int n, float* a, int* lwork) {
  return cusolverDnSpotrf_bufferSize(h, CUBLAS_FILL_MODE_UPPER, n, a, n, lwork);
}
cusolverStatus_t potrf_size(cusolverDnHandle_t h, int n, double* a, int* lwork) {
  return cusolverDnDpotrf_bufferSize(h, CUBLAS_FILL_MODE_UPPER, n, a, n, lwork);
}
cusolverStatus_t potrf(cusolverDnHandle_t h, int n, float* a, float* work, int lwork, int* info) {
  return cusolverDnSpotrf(h, CUBLAS_FILL_MODE_UPPER, n, a, n, work, lwork, info);
}
cusolverStatus_t potrf(cusolverDnHandle_t h, int n, double* a, double* work, int lwork, int* info) {
  return cusolverDnDpotrf(h, CUBLAS_FILL_MODE_UPPER, n, a, n, work, lwork, info);
}
cusolverStatus_t potrs(cusolverDnHandle_t h, int n, int nrhs, const float* a, float* b, int* info) {
  return cusolverDnSpotrs(h, CUBLAS_FILL_MODE_UPPER, n, nrhs, a, n, b, n, info);
}
cusolverStatus_t potrs(cusolverDnHandle_t h, int n, int nrhs, const double* a, double* b, int* info) {
  return cusolverDnDpotrs(h, CUBLAS_FILL_MODE_UPPER, n, nrhs, a, n, b, n, info);
}
cusolverStatus_t syevd_size(cusolverDnHandle_t h, int n, const float* a, const float* w, int* lwork) {
  return cusolverDnSsyevd_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, a, n, w, lwork);
}
cusolverStatus_t syevd_size(cusolverDnHandle_t h, int n, const double* a, const double* w, int* lwork) {
  return cusolverDnDsyevd_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, a, n, w, lwork);
}
cusolverStatus_t syevd(cusolverDnHandle_t h, int n, float* a, float* w, float* work, int lwork, int* info) {
  return cusolverDnSsyevd(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, a, n, w, work, lwork, info);
}
cusolverStatus_t syevd(cusolverDnHandle_t h, int n, double* a, double* w, double* work, int lwork, int* info) {
  return cusolverDnDsyevd(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, a, n, w, work, lwork, info);
}

using namespace library_checks;

size_t align_up(size_t n) { return (n + 255) / 256 * 256; }

// Device-side layout of everything a run allocates, in one block.
struct Layout {
  std::vector<size_t> factor;  // offset of U_m
  size_t mttkrp = 0, grams = 0, grams_wide = 0, h = 0, chol = 0, inv = 0, w = 0, lambda = 0, partials = 0,
         gram_partials = 0, column_totals = 0, gram_sums = 0, dots = 0, scalars = 0,
         work = 0, total = 0;
};

Layout layout_for(uint32_t order, const uint32_t* dims, uint32_t rank, size_t value, size_t work_elements) {
  Layout l;
  size_t at = 0;
  const size_t rr = size_t(rank) * rank;
  // Slack rows for a group's in-place exchanges (cp_als_max_group).
  const size_t slack = cp_als_max_group - 1;
  uint32_t max_dim = 0;
  for (uint32_t m = 0; m < order; ++m) {
    l.factor.push_back(at);
    at += align_up((size_t(dims[m]) + slack) * rank * value);
    max_dim = std::max(max_dim, dims[m]);
  }
  l.mttkrp = at;
  at += align_up((size_t(max_dim) + slack) * rank * value);
  l.grams = at;
  at += align_up(order * rr * value);
  l.grams_wide = at;
  at += align_up(order * rr * sizeof(double));
  l.h = at;
  at += align_up(rr * value);
  l.chol = at;
  at += align_up(rr * value);
  l.inv = at;
  at += align_up(rr * value);
  l.w = at;
  at += align_up(size_t(rank) * value);
  l.lambda = at;
  at += align_up(size_t(rank) * value);
  l.partials = at;
  at += align_up(size_t(kMaxReduceBlocks) * rank * sizeof(double));
  l.gram_partials = at;  // the side stream's (Grams run beside the main chain)
  at += align_up(size_t(gram_blocks_max(rank)) * rank * rank * sizeof(double));
  l.column_totals = at;
  at += align_up(size_t(rank) * sizeof(double));
  l.gram_sums = at;
  at += align_up(rr * sizeof(double));
  l.dots = at;
  at += align_up(size_t(rank) * sizeof(double));
  l.scalars = at;
  at += align_up(sizeof(Scalars));
  l.work = at;
  at += align_up(work_elements * value);
  l.total = at;
  return l;
}

// Owns what a run creates; frees it in any case.
struct Resources {
  cudaStream_t main = nullptr, side = nullptr;
  cudaEvent_t factor_ready = nullptr, gram_ready = nullptr;
  cublasHandle_t blas_main = nullptr;
  cusolverDnHandle_t solver = nullptr;
  void* block = nullptr;
  Scalars* host = nullptr;  // pinned
  ~Resources() {
    if (main) cudaStreamSynchronize(main);
    if (side) cudaStreamSynchronize(side);
    if (solver) cusolverDnDestroy(solver);
    if (blas_main) cublasDestroy(blas_main);
    if (block) cudaFree(block);
    if (host) cudaFreeHost(host);
    if (factor_ready) cudaEventDestroy(factor_ready);
    if (gram_ready) cudaEventDestroy(gram_ready);
    if (main) cudaStreamDestroy(main);
    if (side) cudaStreamDestroy(side);
    cudaGetLastError();
  }
};

// Grid for the column reductions of a rows x rank matrix.
struct ReduceShape {
  dim3 grid, block;
  uint64_t rows_per_block;
  uint32_t blocks;
};

ReduceShape reduce_shape(uint64_t rows, uint32_t rank) {
  uint32_t width = 1;
  while (width < 32 && width < rank) width *= 2;
  ReduceShape s;
  s.block = dim3(width, kThreads / width);
  const uint64_t wanted = std::max<uint64_t>(1, (rows + 4 * s.block.y - 1) / (4 * s.block.y));
  s.blocks = static_cast<uint32_t>(std::min<uint64_t>(kMaxReduceBlocks, wanted));
  s.rows_per_block = (rows + s.blocks - 1) / s.blocks;
  s.grid = dim3((rank + width - 1) / width, s.blocks);
  return s;
}

dim3 elementwise_grid(uint64_t elements, int multiprocessors) {
  const uint64_t blocks = (elements + kThreads - 1) / kThreads;
  return dim3(static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(blocks, uint64_t(multiprocessors) * 8))));
}

template <typename T>
class DeviceCpAlsSession final : public CpAlsSession {
 public:
  DeviceCpAlsSession(uint32_t order, const uint32_t* dims, uint32_t rank, int multiprocessors,
                     MttkrpLauncher<T> mttkrp, ExactInnerLauncher<T> exact_inner)
      : mttkrp_(std::move(mttkrp)),
        exact_inner_(std::move(exact_inner)),
        dims_(dims, dims + order),
        rank_(rank),
        order_(order),
        sms_(multiprocessors),
        rows_first_(order, 0),
        rows_count_(dims, dims + order) {
    setup();
  }

  void set_factors(const spt_plugin_matrix* factors) override {
    for (uint32_t m = 0; m < order_; ++m) {
      const spt_plugin_matrix& f = factors[m];
      check(cudaMemcpy2DAsync(factor(m), rank_ * sizeof(T), f.data, f.ld * sizeof(T), rank_ * sizeof(T), f.rows,
                              cudaMemcpyHostToDevice, r_.main),
            "copying the initial factors to the device");
    }
    check(cudaEventRecord(r_.factor_ready, r_.main), "cudaEventRecord");
    check(cudaStreamWaitEvent(r_.side, r_.factor_ready, 0), "cudaStreamWaitEvent");
    // Every session computes the whole first Grams itself.
    for (uint32_t m = 0; m < order_; ++m) {
      launch_gram_sums(m, 0, dims_[m]);
      gram_from_sums(m);
    }
  }

  void set_rows(uint32_t mode, uint64_t first, uint64_t count) override {
    if (mode >= order_ || first > dims_[mode] || count > dims_[mode] - first)
      throw Failure{status::invalid_argument, "set_rows: rows outside the mode"};
    rows_first_[mode] = first;
    rows_count_[mode] = count;
  }

  void get_factors(spt_plugin_matrix* factors, void* lambda) override {
    for (uint32_t m = 0; m < order_; ++m) {
      const spt_plugin_matrix& f = factors[m];
      check(cudaMemcpy2DAsync(f.data, f.ld * sizeof(T), factor(m), rank_ * sizeof(T), rank_ * sizeof(T), f.rows,
                              cudaMemcpyDeviceToHost, r_.main),
            "copying the factors to the host");
    }
    check(cudaMemcpyAsync(lambda, at(layout_.lambda), rank_ * sizeof(T), cudaMemcpyDeviceToHost, r_.main),
          "copying lambda to the host");
    check(cudaStreamSynchronize(r_.main), "copying the results to the host");
  }

  void mttkrp(uint32_t mode) override {
    T* out = at(layout_.mttkrp);
    check(cudaMemsetAsync(out, 0, uint64_t(dims_[mode]) * rank_ * sizeof(T), r_.main), "zeroing the MTTKRP output");
    check(mttkrp_(mode, factor_pointers_.data(), rank_, out, r_.main), "launching the MTTKRP kernel");
  }

  void enqueue_normal_matrix(uint32_t mode) override {
    const int n_rank = static_cast<int>(rank_);
    T* chol = at(layout_.chol);
    T* inv = at(layout_.inv);
    // The Hadamard product needs every Gram, the last one from the side stream.
    check(cudaStreamWaitEvent(r_.main, r_.gram_ready, 0), "cudaStreamWaitEvent");
    hadamard_of_grams<T><<<1, kThreads, 0, r_.main>>>(at(layout_.grams), order_, mode, rank_, at(layout_.h), chol,
                                                      inv, scalars());
    check_launch("the Hadamard product of the Gram matrices");
    check(potrf(r_.solver, n_rank, chol, at(layout_.work), work_elements_, &scalars()->potrf_info), "potrf");
    // ||Y^-1||_1 from the factor (meaningless, and unused, when potrf failed).
    check(potrs(r_.solver, n_rank, n_rank, chol, inv, &scalars()->solve_info), "potrs (condition)");
    one_norm<T><<<1, kThreads, 0, r_.main>>>(inv, rank_, &scalars()->ainvnorm);
    check_launch("the inverse's norm");
    enqueue_scalars();
  }

  spt_plugin_cp_normal_info read_normal_matrix() override {
    wait_scalars();
    const Scalars& s = *r_.host;
    spt_plugin_cp_normal_info info{};
    info.non_finite = s.hadamard_bad;
    info.cholesky_info = s.potrf_info;
    info.anorm = s.anorm;
    // Reciprocal condition number in the 1-norm, as LAPACK ?pocon
    // estimates it on the CPU (here from the exact inverse).
    if (s.potrf_info == 0 && s.anorm > 0.0 && std::isfinite(s.ainvnorm) && s.ainvnorm > 0.0)
      info.rcond = 1.0 / (s.anorm * s.ainvnorm);
    return info;
  }

  int solve(uint32_t mode, int method) override {
    const uint64_t rows = rows_count_[mode];
    const int n_rank = static_cast<int>(rank_);
    T* mttkrp_out = at(layout_.mttkrp) + rows_first_[mode] * rank_;
    T* chol = at(layout_.chol);
    T* inv = at(layout_.inv);
    T* u = factor(mode) + rows_first_[mode] * rank_;
    if (method == SPT_PLUGIN_CP_SOLVE_CHOLESKY) {
      if (rows == 0) return 0;
      // U_n^T = Y^-1 B^T: B (row-major I x R) is column-major R x I.
      check(cudaMemcpyAsync(u, mttkrp_out, rows * rank_ * sizeof(T), cudaMemcpyDeviceToDevice, r_.main),
            "copying the MTTKRP result");
      constexpr uint64_t kChunk = uint64_t(1) << 30;  // potrs takes an int column count
      for (uint64_t first = 0; first < rows; first += kChunk) {
        const int cols = static_cast<int>(std::min<uint64_t>(kChunk, rows - first));
        check(potrs(r_.solver, n_rank, cols, chol, u + first * rank_, &scalars()->solve_info), "potrs");
      }
      return 0;
    }
    const uint64_t rr = uint64_t(rank_) * rank_;
    check(cudaMemcpyAsync(chol, at(layout_.h), rr * sizeof(T), cudaMemcpyDeviceToDevice, r_.main), "cudaMemcpyAsync");
    check(syevd(r_.solver, n_rank, chol, at(layout_.w), at(layout_.work), work_elements_, &scalars()->syevd_info),
          "syevd");
    read_scalars();
    if (r_.host->syevd_info > 0) return r_.host->syevd_info;
    pseudo_inverse<T><<<1, kThreads, 0, r_.main>>>(chol, at(layout_.w), rank_, inv);
    check_launch("the pseudo-inverse");
    if (rows == 0) return 0;
    // Row-major U = B P is column-major U^T = P^T B^T.
    check(gemm(r_.blas_main, rank_, rows, inv, mttkrp_out, u), "gemm (pseudo-inverse)");
    return 0;
  }

  void column_totals(uint32_t mode, bool first_sweep) override {
    const uint64_t rows = rows_count_[mode];
    const T* u = factor(mode) + rows_first_[mode] * rank_;
    const ReduceShape shape = reduce_shape(rows, rank_);
    column_partials<T><<<shape.grid, shape.block, 0, r_.main>>>(
        u, nullptr, rows, rank_, shape.rows_per_block, first_sweep ? Reduce::sum_squares : Reduce::max_abs,
        partials(), &scalars()->norm_bad[mode]);
    check_launch("the column norms");
    column_totals_kernel<<<(rank_ + kThreads - 1) / kThreads, kThreads, 0, r_.main>>>(
        partials(), shape.blocks, rank_, first_sweep, column_totals_buffer());
    check_launch("the column norms");
  }

  void normalise_from_totals(uint32_t mode, bool first_sweep) override {
    const uint64_t rows = rows_count_[mode];
    T* u = factor(mode) + rows_first_[mode] * rank_;
    T* lambda = at(layout_.lambda);
    lambda_from_totals<T><<<(rank_ + kThreads - 1) / kThreads, kThreads, 0, r_.main>>>(
        column_totals_buffer(), rank_, first_sweep, lambda, &scalars()->norm_bad[mode]);
    check_launch("lambda");
    divide_columns<T><<<elementwise_grid(rows * rank_, sms_), kThreads, 0, r_.main>>>(u, rows, rank_, lambda);
    check_launch("scaling the factor's columns");
    unread_flags_[mode] = true;
  }

  void gram_sums(uint32_t mode) override {
    // On the side stream, overlapping the next mode's MTTKRP (in a group,
    // the sum over the devices that follows is ordered with the group's
    // other collectives, so the core queues the factor's gather first:
    // src/dispatch/multi_device.cpp).
    check(cudaEventRecord(r_.factor_ready, r_.main), "cudaEventRecord");
    check(cudaStreamWaitEvent(r_.side, r_.factor_ready, 0), "cudaStreamWaitEvent");
    launch_gram_sums(mode, rows_first_[mode], rows_count_[mode]);
  }

  void gram_from_sums(uint32_t mode) override {
    const uint64_t rr = uint64_t(rank_) * rank_;
    gram_from_sums_kernel<T><<<elementwise_grid(rr, sms_), kThreads, 0, r_.side>>>(gram_sums_buffer(), rank_,
                                                                                   gram_of(mode), gram_wide(mode));
    check_launch("the Gram matrix");
    check(cudaEventRecord(r_.gram_ready, r_.side), "cudaEventRecord");
  }

  void enqueue_fit_terms() override {
    // <X, M> from the last MTTKRP (of the last mode, over the owned rows)
    // and ||M||^2 from the Grams.
    const uint32_t last = order_ - 1;
    const uint64_t rows = rows_count_[last];
    const T* mttkrp_out = at(layout_.mttkrp) + rows_first_[last] * rank_;
    const T* u = factor(last) + rows_first_[last] * rank_;
    T* lambda = at(layout_.lambda);
    const ReduceShape shape = reduce_shape(rows, rank_);
    column_partials<T><<<shape.grid, shape.block, 0, r_.main>>>(u, mttkrp_out, rows, rank_, shape.rows_per_block,
                                                                Reduce::dot, partials());
    check_launch("the fit's inner product");
    check(cudaStreamWaitEvent(r_.main, r_.gram_ready, 0), "cudaStreamWaitEvent");
    fit_terms_kernel<T><<<1, kThreads, 0, r_.main>>>(partials(), shape.blocks, lambda, gram_wide(0), order_, rank_,
                                                     dots(), scalars());
    check_launch("the fit terms");
    if constexpr (sizeof(T) == 4) {
      column_partials<T><<<shape.grid, shape.block, 0, r_.main>>>(u, mttkrp_out, rows, rank_, shape.rows_per_block,
                                                                  Reduce::dot_squares, partials());
      check_launch("the fit's rounding noise");
      inner_error_term<T><<<1, kThreads, 0, r_.main>>>(partials(), shape.blocks, lambda, rank_, scalars());
      check_launch("the fit's rounding noise");
    }
    enqueue_scalars();
  }

  spt_plugin_cp_fit_terms read_fit_terms() override {
    wait_scalars();
    return {r_.host->inner, r_.host->norm_model, r_.host->inner_error};
  }

  bool has_exact_inner() const override { return static_cast<bool>(exact_inner_); }

  // <X, M> summed in double over the nonzeros, from the current factors.
  void enqueue_exact_inner() override {
    double* out = &scalars()->inner_exact;
    check(cudaMemsetAsync(out, 0, sizeof(double), r_.main), "zeroing the exact inner product");
    check(exact_inner_(factor_pointers_.data(), at(layout_.lambda), rank_, out, r_.main),
          "launching the exact inner product");
    enqueue_scalars();
  }
  double read_exact_inner() override {
    wait_scalars();
    return r_.host->inner_exact;
  }

  int32_t non_finite(uint32_t mode) override {
    if (unread_flags_[mode]) read_scalars();
    const int bad = r_.host->norm_bad[mode];
    return bad < int(rank_) ? bad : -1;
  }

  CpAlsBuffers buffers() override {
    CpAlsBuffers b;
    for (uint32_t m = 0; m < order_; ++m) b.factors.push_back(factor(m));
    b.mttkrp = at(layout_.mttkrp);
    b.column_totals = column_totals_buffer();
    b.gram_sums = gram_sums_buffer();
    b.stream = r_.main;
    b.side = r_.side;
    b.dims = dims_;
    b.rank = rank_;
    b.value_size = sizeof(T);
    return b;
  }

 private:
  T* at(size_t offset) { return reinterpret_cast<T*>(static_cast<char*>(r_.block) + offset); }
  T* factor(uint32_t m) { return at(layout_.factor[m]); }
  T* gram_of(uint32_t m) { return at(layout_.grams) + size_t(m) * rank_ * rank_; }
  double* gram_wide(uint32_t m) {
    return reinterpret_cast<double*>(static_cast<char*>(r_.block) + layout_.grams_wide) + size_t(m) * rank_ * rank_;
  }
  Scalars* scalars() { return reinterpret_cast<Scalars*>(static_cast<char*>(r_.block) + layout_.scalars); }
  double* partials() { return reinterpret_cast<double*>(static_cast<char*>(r_.block) + layout_.partials); }
  double* dots() { return reinterpret_cast<double*>(static_cast<char*>(r_.block) + layout_.dots); }
  double* column_totals_buffer() {
    return reinterpret_cast<double*>(static_cast<char*>(r_.block) + layout_.column_totals);
  }
  double* gram_sums_buffer() { return reinterpret_cast<double*>(static_cast<char*>(r_.block) + layout_.gram_sums); }

  void setup() {
    check(cudaStreamCreateWithFlags(&r_.main, cudaStreamNonBlocking), "creating a stream");
    check(cudaStreamCreateWithFlags(&r_.side, cudaStreamNonBlocking), "creating a stream");
    check(cudaEventCreateWithFlags(&r_.factor_ready, cudaEventDisableTiming), "creating an event");
    check(cudaEventCreateWithFlags(&r_.gram_ready, cudaEventDisableTiming), "creating an event");
    check(cublasCreate(&r_.blas_main), "cublasCreate");
    check(cublasSetStream(r_.blas_main, r_.main), "cublasSetStream");
    // Full-precision arithmetic only (no TF32 or other reduced-precision
    // shortcuts, whatever NVIDIA_TF32_OVERRIDE says): the fit must agree
    // with the CPU's.
    check(cublasSetMathMode(r_.blas_main, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
    check(cusolverDnCreate(&r_.solver), "cusolverDnCreate");
    check(cusolverDnSetStream(r_.solver, r_.main), "cusolverDnSetStream");
    // Workspace sizes depend on R only; query with null matrices.
    const int n = static_cast<int>(rank_);
    int potrf_work = 0, syevd_work = 0;
    check(potrf_size(r_.solver, n, static_cast<T*>(nullptr), &potrf_work), "potrf_bufferSize");
    check(syevd_size(r_.solver, n, static_cast<const T*>(nullptr), static_cast<const T*>(nullptr), &syevd_work),
          "syevd_bufferSize");
    work_elements_ = std::max(1, std::max(potrf_work, syevd_work));
    layout_ = layout_for(order_, dims_.data(), rank_, sizeof(T), static_cast<size_t>(work_elements_));
    check(cudaMalloc(&r_.block, layout_.total), "allocating the CP-ALS factors and workspace");
    check(cudaMallocHost(reinterpret_cast<void**>(&r_.host), sizeof(Scalars)), "allocating pinned host memory");
    // No component flagged before the first normalisation.
    check(cudaMemsetAsync(scalars(), 0, sizeof(Scalars), r_.main), "cudaMemsetAsync");
    check(cudaMemsetAsync(scalars()->norm_bad, 0x7f, sizeof(Scalars::norm_bad), r_.main), "cudaMemsetAsync");
    read_scalars();
    factor_pointers_.resize(order_);
    for (uint32_t m = 0; m < order_; ++m) factor_pointers_[m] = factor(m);
  }

  // The Gram of rows [first, first + count) of U_m, summed in double into
  // gram_sums_buffer(), on the side stream (after the main stream's
  // factor_ready).
  void launch_gram_sums(uint32_t m, uint64_t first, uint64_t rows) {
    const uint64_t rr = uint64_t(rank_) * rank_;
    const uint32_t tile = gram_tile_rows(rank_);
    // About 2 blocks per multiprocessor, at least 4 tiles of rows each.
    const uint64_t wanted = std::max<uint64_t>(1, std::min<uint64_t>(uint64_t(sms_) * 2, rows / (4 * tile)));
    const uint32_t blocks = static_cast<uint32_t>(std::min<uint64_t>(wanted, gram_blocks_max(rank_)));
    const uint64_t rows_per_block = (rows + blocks - 1) / blocks;
    const uint64_t passes = (rr + kThreads * kPairsPerThread - 1) / (kThreads * kPairsPerThread);
    double* partials = reinterpret_cast<double*>(static_cast<char*>(r_.block) + layout_.gram_partials);
    gram_partials<T><<<dim3(blocks, static_cast<unsigned>(passes)), kThreads, 0, r_.side>>>(
        factor(m) + first * rank_, rows, rank_, rows_per_block, tile, partials);
    check_launch("the Gram matrix");
    gram_block_sums<<<elementwise_grid(rr, sms_), kThreads, 0, r_.side>>>(partials, blocks, rank_,
                                                                           gram_sums_buffer());
    check_launch("the Gram matrix");
  }

  // Brings the scalars back; every normalisation's flag is then read.
  void read_scalars() {
    enqueue_scalars();
    wait_scalars();
  }
  void enqueue_scalars() {
    check(cudaMemcpyAsync(r_.host, scalars(), sizeof(Scalars), cudaMemcpyDeviceToHost, r_.main),
          "copying scalars to the host");
  }
  void wait_scalars() {
    check(cudaStreamSynchronize(r_.main), "running a CP-ALS step");
    unread_flags_.fill(false);
  }

  MttkrpLauncher<T> mttkrp_;
  ExactInnerLauncher<T> exact_inner_;
  std::vector<uint32_t> dims_;
  uint32_t rank_;
  uint32_t order_;
  int sms_;
  int work_elements_ = 1;
  Layout layout_;
  Resources r_;
  std::vector<const T*> factor_pointers_;
  std::vector<uint64_t> rows_first_, rows_count_;  // per mode: the rows this session owns
  // Per mode: normalised since the scalars last came back.
  std::array<bool, kMaxOrder> unread_flags_{};
};

}  // namespace

size_t cp_als_device_bytes(uint32_t order, const uint32_t* dims, uint32_t rank, size_t value_size) {
  return layout_for(order, dims, rank, value_size, 0).total;
}

template <typename T>
std::unique_ptr<CpAlsSession> make_cp_als_session(uint32_t order, const uint32_t* dims, uint32_t rank,
                                                  int multiprocessors, MttkrpLauncher<T> mttkrp,
                                                  ExactInnerLauncher<T> exact_inner) {
  return std::make_unique<DeviceCpAlsSession<T>>(order, dims, rank, multiprocessors, std::move(mttkrp),
                                                 std::move(exact_inner));
}

template std::unique_ptr<CpAlsSession> make_cp_als_session<float>(uint32_t, const uint32_t*, uint32_t, int,
                                                                  MttkrpLauncher<float>, ExactInnerLauncher<float>);
template std::unique_ptr<CpAlsSession> make_cp_als_session<double>(uint32_t, const uint32_t*, uint32_t, int,
                                                                   MttkrpLauncher<double>, ExactInnerLauncher<double>);

}  // namespace spt::cuda
