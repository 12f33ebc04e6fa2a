// The GPU steps of Tucker-HOOI: see tucker_hooi.cuh for what each computes
// and why it matches the CPU's. The dense steps are cuBLAS / cuSOLVER calls
// on the session's stream; the small kernels here move eigenvector columns
// into the factors, fix signs and reduce ||G||^2.
#include "tucker_hooi.cuh"

#include <cublas_v2.h>
#include <cusolverDn.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "cp_als.cuh"  // status values
#include "library_checks.cuh"

namespace spt::cuda {

namespace {

constexpr int kThreads = 256;
// Blocks of the ||G||^2 partial sums (added in block order: deterministic).
constexpr uint32_t kNormBlocks = 256;

// Scalars the host reads back (once per mode, once per sweep).
struct Scalars {
  int info;           // the mode's cuSOLVER devInfo
  int reserved;
  double norm_core;   // ||G||^2
};

// What the host reads, in pinned memory: the scalars and, for the tall
// route, the smallest kept and the largest eigenvalue of Y^T Y.
template <typename T>
struct HostScalars {
  Scalars s;
  T smallest_kept;
  T largest;
};

using namespace library_checks;

size_t align_up(size_t n) { return (n + 255) / 256 * 256; }

dim3 elementwise_grid(uint64_t elements, int multiprocessors) {
  const uint64_t blocks = (elements + kThreads - 1) / kThreads;
  return dim3(static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(blocks, uint64_t(multiprocessors) * 8))));
}

/* ------------------------------ typed library calls ------------------------------ */

// c (m x n, column-major) = op(a) op(b), full precision.
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* a,
                    int lda, const float* b, int ldb, float* c, int ldc) {
  const float one = 1.0f, zero = 0.0f;
  return cublasSgemm(h, ta, tb, m, n, k, &one, a, lda, b, ldb, &zero, c, ldc);
}
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const double* a,
                    int lda, const double* b, int ldb, double* c, int ldc) {
  const double one = 1.0, zero = 0.0;
  return cublasDgemm(h, ta, tb, m, n, k, &one, a, lda, b, ldb, &zero, c, ldc);
}
// c (m x n, column-major, ldc) = a^T with a (n x m, column-major, lda).
cublasStatus_t transpose(cublasHandle_t h, int m, int n, const float* a, int lda, float* c, int ldc) {
  const float one = 1.0f, zero = 0.0f;
  return cublasSgeam(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, a, lda, &zero, c, ldc, c, ldc);
}
cublasStatus_t transpose(cublasHandle_t h, int m, int n, const double* a, int lda, double* c, int ldc) {
  const double one = 1.0, zero = 0.0;
  return cublasDgeam(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, a, lda, &zero, c, ldc, c, ldc);
}

// Eigenpairs il..iu (1-based, ascending) of the symmetric n x n matrix a
// (column-major, lower triangle read): vectors in a's first iu - il + 1
// columns, values in w.
cusolverStatus_t syevdx_size(cusolverDnHandle_t h, int n, const float* a, int il, int iu, const float* w, int* lwork) {
  int found = 0;
  return cusolverDnSsyevdx_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, CUSOLVER_EIG_RANGE_I, CUBLAS_FILL_MODE_LOWER, n, a,
                                      n, 0.0f, 0.0f, il, iu, &found, w, lwork);
}
cusolverStatus_t syevdx_size(cusolverDnHandle_t h, int n, const double* a, int il, int iu, const double* w,
                             int* lwork) {
  int found = 0;
  return cusolverDnDsyevdx_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, CUSOLVER_EIG_RANGE_I, CUBLAS_FILL_MODE_LOWER, n, a,
                                      n, 0.0, 0.0, il, iu, &found, w, lwork);
}
cusolverStatus_t syevdx(cusolverDnHandle_t h, int n, float* a, int il, int iu, int* found, float* w, float* work,
                        int lwork, int* info) {
  return cusolverDnSsyevdx(h, CUSOLVER_EIG_MODE_VECTOR, CUSOLVER_EIG_RANGE_I, CUBLAS_FILL_MODE_LOWER, n, a, n, 0.0f,
                           0.0f, il, iu, found, w, work, lwork, info);
}
cusolverStatus_t syevdx(cusolverDnHandle_t h, int n, double* a, int il, int iu, int* found, double* w, double* work,
                        int lwork, int* info) {
  return cusolverDnDsyevdx(h, CUSOLVER_EIG_MODE_VECTOR, CUSOLVER_EIG_RANGE_I, CUBLAS_FILL_MODE_LOWER, n, a, n, 0.0,
                           0.0, il, iu, found, w, work, lwork, info);
}

cusolverStatus_t gesvd_size(cusolverDnHandle_t h, int m, int n, float*, int* lwork) {
  return cusolverDnSgesvd_bufferSize(h, m, n, lwork);
}
cusolverStatus_t gesvd_size(cusolverDnHandle_t h, int m, int n, double*, int* lwork) {
  return cusolverDnDgesvd_bufferSize(h, m, n, lwork);
}
// Economy SVD of a (m x n, column-major, m >= n): the left singular vectors
// into u (m x n, ld m), singular values descending into s; a is destroyed;
// vt (n x n) is not computed (a placeholder of that size).
cusolverStatus_t gesvd(cusolverDnHandle_t h, int m, int n, float* a, float* s, float* u, float* vt, float* work,
                       int lwork, int* info) {
  return cusolverDnSgesvd(h, 'S', 'N', m, n, a, m, s, u, m, vt, n, work, lwork, nullptr, info);
}
cusolverStatus_t gesvd(cusolverDnHandle_t h, int m, int n, double* a, double* s, double* u, double* vt, double* work,
                       int lwork, int* info) {
  return cusolverDnDgesvd(h, 'S', 'N', m, n, a, m, s, u, m, vt, n, work, lwork, nullptr, info);
}

/* ------------------------------------ kernels ------------------------------------ */

// u (rows x rank, row-major) takes columns of z (column-major, leading
// dimension ld): u(i, r) = z(i, reversed ? rank - 1 - r : r). The
// eigen-solvers return ascending eigenvalues (the largest last), gesvd
// descending singular values.
template <typename T>
__global__ void gather_columns(const T* z, uint64_t ld, uint64_t rows, uint32_t rank, bool reversed, T* u) {
  const uint64_t total = rows * rank;
  for (uint64_t e = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t i = e / rank;
    const uint32_t r = static_cast<uint32_t>(e % rank);
    const uint64_t c = reversed ? rank - 1 - r : r;
    u[e] = z[i + c * ld];
  }
}

// The tall route's right vectors scaled by 1 / s_r, largest first, as the
// CPU: vs(j, r) = z(j, c) / sqrt(w[c]) with c = rank - 1 - r, in T (vs:
// cols x rank, row-major; z: the eigenvectors, column-major, ld).
template <typename T>
__global__ void scaled_eigenvectors(const T* z, uint64_t ld, const T* w, uint64_t cols, uint32_t rank, T* vs) {
  const uint64_t total = cols * rank;
  for (uint64_t e = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t j = e / rank;
    const uint32_t c = rank - 1 - static_cast<uint32_t>(e % rank);
    vs[e] = z[j + c * ld] / sqrt(w[c]);
  }
}

// The CPU's sign rule (pyttb nvecs): in each column r of u (rows x rank,
// row-major; one block per column) the entry of largest magnitude, the
// first one on ties, is made positive. NaNs never win (as the CPU's
// comparison), and an all-zero column stays as it is.
template <typename T>
__global__ void __launch_bounds__(kThreads) fix_column_signs(T* u, uint64_t rows, uint32_t rank) {
  __shared__ T best_abs[kThreads];
  __shared__ uint64_t best_row[kThreads];
  const uint32_t r = blockIdx.x;
  T best = T(0);
  uint64_t at = ~uint64_t(0);
  // Each thread visits its rows in increasing order, keeping the first of
  // its largest; the tree below keeps the smaller row on equal magnitudes.
  for (uint64_t i = threadIdx.x; i < rows; i += kThreads) {
    const T a = fabs(u[i * rank + r]);
    if (a > best) {
      best = a;
      at = i;
    }
  }
  best_abs[threadIdx.x] = best;
  best_row[threadIdx.x] = at;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      const T other = best_abs[threadIdx.x + s];
      const uint64_t other_row = best_row[threadIdx.x + s];
      if (other > best_abs[threadIdx.x] || (other == best_abs[threadIdx.x] && other_row < best_row[threadIdx.x])) {
        best_abs[threadIdx.x] = other;
        best_row[threadIdx.x] = other_row;
      }
    }
    __syncthreads();
  }
  const uint64_t row = best_row[0];
  const bool flip = row != ~uint64_t(0) && u[row * rank + r] < T(0);
  __syncthreads();  // every thread has read the deciding entry before any flips it
  if (!flip) return;
  for (uint64_t i = threadIdx.x; i < rows; i += kThreads) u[i * rank + r] = -u[i * rank + r];
}

__device__ double block_sum(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  return shared[0];
}

// partials[block] = sum of a[e]^2 (in double) over the block's elements.
template <typename T>
__global__ void __launch_bounds__(kThreads) sum_squares_partials(const T* a, uint64_t n, double* partials) {
  __shared__ double shared[kThreads];
  double acc = 0.0;
  for (uint64_t e = uint64_t(blockIdx.x) * kThreads + threadIdx.x; e < n; e += uint64_t(gridDim.x) * kThreads) {
    const double v = static_cast<double>(a[e]);
    acc += v * v;
  }
  const double total = block_sum(acc, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// One block: *out = the sum of count partials.
__global__ void __launch_bounds__(kThreads) sum_partials(const double* partials, uint32_t count, double* out) {
  __shared__ double shared[kThreads];
  double acc = 0.0;
  for (uint32_t b = threadIdx.x; b < count; b += kThreads) acc += partials[b];
  const double total = block_sum(acc, shared);
  if (threadIdx.x == 0) *out = total;
}

/* ------------------------------------ the run ------------------------------------ */

enum class Route { gram_eig, right_gram };

// One mode's shapes and SVD route (the CPU's TuckerSvdPath::automatic).
struct ModePlan {
  uint64_t rows = 0;  // I_n
  uint64_t cols = 0;  // P_n = prod_{m != n} R_m
  uint32_t rank = 0;  // R_n
  Route route = Route::gram_eig;
  uint64_t gram_order = 0;  // I_n (gram_eig) or P_n (right_gram)
};

std::vector<ModePlan> plan_modes(uint32_t order, const uint32_t* dims, const uint32_t* ranks) {
  std::vector<ModePlan> plans(order);
  for (uint32_t n = 0; n < order; ++n) {
    ModePlan& p = plans[n];
    p.rows = dims[n];
    p.cols = 1;
    for (uint32_t m = 0; m < order; ++m)
      if (m != n) p.cols *= ranks[m];
    p.rank = ranks[n];
    p.route = p.rows > p.cols ? Route::right_gram : Route::gram_eig;
    // The right Gram sees only min(I, P) directions; more vectors need the
    // I x I Gram (as the CPU).
    if (p.rank > std::min(p.rows, p.cols)) p.route = Route::gram_eig;
    p.gram_order = p.route == Route::gram_eig ? p.rows : p.cols;
  }
  return plans;
}

// Device-side layout of the run's main block.
struct Layout {
  std::vector<size_t> factor;  // offset of U_m
  size_t y = 0, gram = 0, w = 0, vs = 0, core = 0, partials = 0, scalars = 0, total = 0;
  uint64_t core_size = 1;
  uint64_t max_gram_order = 1;
};

Layout layout_for(const std::vector<ModePlan>& plans, size_t value) {
  Layout l;
  size_t at = 0;
  uint64_t y_max = 1, gram_max = 1, vs_max = 1;
  for (const ModePlan& p : plans) {
    l.factor.push_back(at);
    at += align_up(size_t(p.rows) * p.rank * value);
    y_max = std::max<uint64_t>(y_max, p.rows * p.cols);
    gram_max = std::max<uint64_t>(gram_max, p.gram_order * p.gram_order);
    l.max_gram_order = std::max<uint64_t>(l.max_gram_order, p.gram_order);
    if (p.route == Route::right_gram) vs_max = std::max<uint64_t>(vs_max, p.cols * p.rank);
  }
  l.core_size = plans.back().cols * plans.back().rank;
  l.y = at;
  at += align_up(size_t(y_max) * value);
  l.gram = at;
  at += align_up(size_t(gram_max) * value);
  l.w = at;
  at += align_up(size_t(l.max_gram_order) * value);
  l.vs = at;
  at += align_up(size_t(vs_max) * value);
  l.core = at;
  at += align_up(size_t(l.core_size) * value);
  l.partials = at;
  at += align_up(size_t(kNormBlocks) * sizeof(double));
  l.scalars = at;
  at += align_up(sizeof(Scalars));
  l.total = at;
  return l;
}

// Owns what a run creates; frees it in any case.
struct Resources {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cusolverDnHandle_t solver = nullptr;
  void* block = nullptr;
  void* work = nullptr;
  void* host = nullptr;  // pinned HostScalars<T>
  ~Resources() {
    if (stream) cudaStreamSynchronize(stream);
    if (solver) cusolverDnDestroy(solver);
    if (blas) cublasDestroy(blas);
    if (block) cudaFree(block);
    if (work) cudaFree(work);
    if (host) cudaFreeHost(host);
    if (stream) cudaStreamDestroy(stream);
    cudaGetLastError();
  }
};

// A temporary from the stream's pool, released on the stream at scope exit.
struct PoolBlock {
  void* p = nullptr;
  cudaStream_t stream = nullptr;
  ~PoolBlock() {
    if (p) cudaFreeAsync(p, stream);
    cudaGetLastError();
  }
};

template <typename T>
class DeviceTuckerSession final : public TuckerSession {
 public:
  DeviceTuckerSession(uint32_t order, const uint32_t* dims, const uint32_t* ranks, TtmcLauncher<T> ttmc,
                      int multiprocessors)
      : order_(order), sms_(std::max(1, multiprocessors)), plans_(plan_modes(order, dims, ranks)),
        ttmc_(std::move(ttmc)) {
    setup();
  }

  void set_factor(uint32_t mode, const spt_plugin_matrix& f) override {
    const size_t row = size_t(check_factor(mode, f)) * sizeof(T);
    check(cudaMemcpy2DAsync(factor(mode), row, f.data, f.ld * sizeof(T), row, f.rows, cudaMemcpyHostToDevice,
                            r_.stream),
          "copying the initial factors to the device");
    // The host buffer may change once this returns.
    check(cudaStreamSynchronize(r_.stream), "copying the initial factors to the device");
  }

  void get_factor(uint32_t mode, const spt_plugin_matrix& f) override {
    const size_t row = size_t(check_factor(mode, f)) * sizeof(T);
    check(cudaMemcpy2DAsync(f.data, f.ld * sizeof(T), factor(mode), row, row, f.rows, cudaMemcpyDeviceToHost,
                            r_.stream),
          "copying the factors to the host");
    check(cudaStreamSynchronize(r_.stream), "copying the results to the host");
  }

  void get_core(void* core) override {
    check(cudaMemcpyAsync(core, at(layout_.core), size_t(layout_.core_size) * sizeof(T), cudaMemcpyDeviceToHost,
                          r_.stream),
          "copying the core to the host");
    check(cudaStreamSynchronize(r_.stream), "copying the results to the host");
  }

  void ttmc(uint32_t mode) override {
    const ModePlan& p = plan(mode);
    T* y = at(layout_.y);
    check(cudaMemsetAsync(y, 0, size_t(p.rows) * p.cols * sizeof(T), r_.stream), "zeroing Y_(n)");
    check(ttmc_(mode, factor_pointers_.data(), y, r_.stream), "launching the TTMc kernel");
    check_launch("the F-COO TTMc kernel");
    y_mode_ = mode;
    right_gram_mode_ = ~0u;  // eigenpairs of the previous Y
  }

  // The eigenvectors of the I x I Gram Y Y^T for its R largest eigenvalues.
  void gram_vectors(uint32_t mode) override {
    const ModePlan& p = plan_with_y(mode);
    require_route(p, Route::gram_eig, mode);
    const int rows = static_cast<int>(p.rows), cols = static_cast<int>(p.cols), rank = static_cast<int>(p.rank);
    T* y = at(layout_.y);
    T* gram = at(layout_.gram);
    // Row-major Y (I x P) is column-major Y^T (P x I, ld P): Y Y^T = (Y^T)^T Y^T.
    check(gemm(r_.blas, CUBLAS_OP_T, CUBLAS_OP_N, rows, rows, cols, y, cols, y, cols, gram, rows),
          "gemm (Gram matrix Y_(n) Y_(n)^T)");
    int found = 0;
    check(syevdx(r_.solver, rows, gram, rows - rank + 1, rows, &found, at(layout_.w), work(), work_elements_,
                 &scalars()->info),
          "syevdx");
    read_scalars();
    solver_info("syevdx", "eigen-decomposition", mode);
    gather_columns<T><<<elementwise_grid(p.rows * p.rank, sms_), kThreads, 0, r_.stream>>>(gram, p.rows, p.rows,
                                                                                            p.rank, true, factor(mode));
    check_launch("copying the eigenvectors");
  }

  // Tall Y: the R leading eigenpairs (v_r, s_r^2) of the P x P Gram Y^T Y;
  // s_R^2 and s_1^2 go back for the caller's choice of route.
  void right_gram(uint32_t mode, double* smallest_kept, double* largest) override {
    const ModePlan& p = plan_with_y(mode);
    require_route(p, Route::right_gram, mode);
    const int rows = static_cast<int>(p.rows), cols = static_cast<int>(p.cols), rank = static_cast<int>(p.rank);
    T* y = at(layout_.y);
    T* gram = at(layout_.gram);
    T* w = at(layout_.w);
    // Column-major Y^T (P x I): Y^T Y = Y^T (Y^T)^T.
    check(gemm(r_.blas, CUBLAS_OP_N, CUBLAS_OP_T, cols, cols, rows, y, cols, y, cols, gram, cols),
          "gemm (Gram matrix Y_(n)^T Y_(n))");
    int found = 0;
    check(syevdx(r_.solver, cols, gram, cols - rank + 1, cols, &found, w, work(), work_elements_, &scalars()->info),
          "syevdx");
    // Ascending: w[0] = s_R^2, w[R-1] = s_1^2.
    check(cudaMemcpyAsync(&host()->smallest_kept, w, sizeof(T), cudaMemcpyDeviceToHost, r_.stream),
          "copying eigenvalues to the host");
    check(cudaMemcpyAsync(&host()->largest, w + (rank - 1), sizeof(T), cudaMemcpyDeviceToHost, r_.stream),
          "copying eigenvalues to the host");
    read_scalars();
    solver_info("syevdx", "eigen-decomposition", mode);
    *smallest_kept = static_cast<double>(host()->smallest_kept);
    *largest = static_cast<double>(host()->largest);
    right_gram_mode_ = mode;
  }

  // U = Y [v_r / s_r] from right_gram's eigenpairs of the same Y.
  void right_vectors(uint32_t mode) override {
    const ModePlan& p = plan_with_y(mode);
    if (right_gram_mode_ != mode)
      throw Failure{status::invalid_argument, text("tucker_right_vectors: no right Gram of mode ", mode)};
    const int rows = static_cast<int>(p.rows), cols = static_cast<int>(p.cols), rank = static_cast<int>(p.rank);
    T* y = at(layout_.y);
    T* vs = at(layout_.vs);
    scaled_eigenvectors<T><<<elementwise_grid(p.cols * p.rank, sms_), kThreads, 0, r_.stream>>>(
        at(layout_.gram), p.cols, at(layout_.w), p.cols, p.rank, vs);
    check_launch("scaling the eigenvectors");
    // Row-major U (I x R) = Y Vs is column-major U^T = Vs^T Y^T, and
    // row-major Vs (P x R) is column-major Vs^T (R x P, ld R).
    check(gemm(r_.blas, CUBLAS_OP_N, CUBLAS_OP_N, rank, rows, cols, vs, rank, y, cols, factor(mode), rank),
          "gemm (U = Y V / s)");
  }

  // Economy SVD of tall Y (I > P): gesvd of its column-major copy.
  void svd_vectors(uint32_t mode) override {
    const ModePlan& p = plan_with_y(mode);
    require_route(p, Route::right_gram, mode);
    const int rows = static_cast<int>(p.rows), cols = static_cast<int>(p.cols);
    int lwork = 0;
    check(gesvd_size(r_.solver, rows, cols, static_cast<T*>(nullptr), &lwork), "gesvd_bufferSize");
    const size_t matrix = align_up(size_t(p.rows) * p.cols * sizeof(T));
    const size_t small = align_up(size_t(p.cols) * p.cols * sizeof(T)) + align_up(size_t(p.cols) * sizeof(T));
    const size_t bytes = 2 * matrix + small + align_up(size_t(std::max(lwork, 1)) * sizeof(T));
    PoolBlock temp;
    temp.stream = r_.stream;
    if (cudaError_t err = cudaMallocAsync(&temp.p, bytes, r_.stream); err != cudaSuccess) {
      temp.p = nullptr;
      cudaGetLastError();
      throw Failure{err == cudaErrorMemoryAllocation ? status::out_of_memory : status::device,
                    text("the SVD of Y_(", mode, ") (", p.rows, " x ", p.cols, ") needs ", bytes,
                         " bytes of device memory (", cudaGetErrorName(err), ")")};
    }
    char* base = static_cast<char*>(temp.p);
    T* a = reinterpret_cast<T*>(base);
    T* u = reinterpret_cast<T*>(base + matrix);
    T* vt = reinterpret_cast<T*>(base + 2 * matrix);
    T* s = reinterpret_cast<T*>(base + 2 * matrix + align_up(size_t(p.cols) * p.cols * sizeof(T)));
    T* svd_work = reinterpret_cast<T*>(base + 2 * matrix + small);
    // Row-major Y is column-major Y^T (P x I, ld P); a = (Y^T)^T, I x P.
    check(transpose(r_.blas, rows, cols, at(layout_.y), cols, a, rows), "geam (transposing Y_(n))");
    check(gesvd(r_.solver, rows, cols, a, s, u, vt, svd_work, std::max(lwork, 1), &scalars()->info), "gesvd");
    read_scalars();
    solver_info("gesvd", "SVD", mode);
    gather_columns<T><<<elementwise_grid(p.rows * p.rank, sms_), kThreads, 0, r_.stream>>>(u, p.rows, p.rows, p.rank,
                                                                                            false, factor(mode));
    check_launch("copying the singular vectors");
    // The copy finishes before the pool block goes back: cudaFreeAsync runs
    // after the kernel on r_.stream.
  }

  void fix_signs(uint32_t mode) override {
    const ModePlan& p = plan(mode);
    fix_column_signs<T><<<p.rank, kThreads, 0, r_.stream>>>(factor(mode), p.rows, p.rank);
    check_launch("fixing the factor's signs");
  }

  // G = U_{N-1}^T Y_(N-1): row-major R x P is column-major G^T (P x R) =
  // Y^T U with Y^T column-major (P x I, ld P) and row-major U (I x R)
  // column-major U^T (R x I, ld R); ||G||^2 summed in double.
  double core() override {
    const uint32_t last = order_ - 1;
    const ModePlan& p = plan_with_y(last);
    const int rows = static_cast<int>(p.rows), cols = static_cast<int>(p.cols), rank = static_cast<int>(p.rank);
    T* core = at(layout_.core);
    check(gemm(r_.blas, CUBLAS_OP_N, CUBLAS_OP_T, cols, rank, rows, at(layout_.y), cols, factor(last), rank, core,
               cols),
          "gemm (the core)");
    const uint64_t blocks =
        std::min<uint64_t>(kNormBlocks, std::max<uint64_t>(1, (layout_.core_size + kThreads - 1) / kThreads));
    sum_squares_partials<T><<<static_cast<unsigned>(blocks), kThreads, 0, r_.stream>>>(core, layout_.core_size,
                                                                                        partials());
    check_launch("the core's norm");
    sum_partials<<<1, kThreads, 0, r_.stream>>>(partials(), static_cast<uint32_t>(blocks), &scalars()->norm_core);
    check_launch("the core's norm");
    read_scalars();
    return host()->s.norm_core;
  }

 private:
  T* at(size_t offset) { return reinterpret_cast<T*>(static_cast<char*>(r_.block) + offset); }
  T* factor(uint32_t m) { return at(layout_.factor[m]); }
  Scalars* scalars() { return reinterpret_cast<Scalars*>(static_cast<char*>(r_.block) + layout_.scalars); }
  double* partials() { return reinterpret_cast<double*>(static_cast<char*>(r_.block) + layout_.partials); }
  HostScalars<T>* host() { return static_cast<HostScalars<T>*>(r_.host); }
  T* work() { return static_cast<T*>(r_.work); }

  const ModePlan& plan(uint32_t mode) const {
    if (mode >= order_)
      throw Failure{status::invalid_argument, text("mode ", mode, " is not below the order ", order_)};
    return plans_[mode];
  }
  // The plan of `mode`, whose Y_(n) the last ttmc must have made.
  const ModePlan& plan_with_y(uint32_t mode) const {
    const ModePlan& p = plan(mode);
    if (y_mode_ != mode)
      throw Failure{status::invalid_argument, text("Y holds no TTMc of mode ", mode, " (tucker_ttmc first)")};
    return p;
  }
  // The Gram workspace is sized for each mode's route by shape.
  static void require_route(const ModePlan& p, Route route, uint32_t mode) {
    if (p.route != route)
      throw Failure{status::invalid_argument,
                    text("mode ", mode, " takes the ", p.route == Route::gram_eig ? "I x I" : "P x P",
                         " Gram route by its shape; its workspace holds no other")};
  }
  // The factor's columns (= R_mode) after checking f's shape.
  uint32_t check_factor(uint32_t mode, const spt_plugin_matrix& f) const {
    const ModePlan& p = plan(mode);
    if (!f.data || f.rows != p.rows || f.cols != p.rank || f.ld < f.cols)
      throw Failure{status::invalid_argument, text("factor ", mode, " has the wrong shape")};
    return p.rank;
  }

  void setup() {
    check(cudaStreamCreateWithFlags(&r_.stream, cudaStreamNonBlocking), "creating a stream");
    check(cublasCreate(&r_.blas), "cublasCreate");
    check(cublasSetStream(r_.blas, r_.stream), "cublasSetStream");
    // Full-precision arithmetic only (no TF32, whatever
    // NVIDIA_TF32_OVERRIDE says): the fit must agree with the CPU's.
    check(cublasSetMathMode(r_.blas, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
    check(cusolverDnCreate(&r_.solver), "cusolverDnCreate");
    check(cusolverDnSetStream(r_.solver, r_.stream), "cusolverDnSetStream");
    layout_ = layout_for(plans_, sizeof(T));
    check(cudaMalloc(&r_.block, layout_.total), "allocating the Tucker-HOOI factors and workspace");
    // The solver's workspace: the largest over the modes' eigenproblems.
    int work_elements = 1;
    for (const ModePlan& p : plans_) {
      const int n = static_cast<int>(p.gram_order);
      int lwork = 0;
      check(syevdx_size(r_.solver, n, at(layout_.gram), n - static_cast<int>(p.rank) + 1, n, at(layout_.w), &lwork),
            "syevdx_bufferSize");
      work_elements = std::max(work_elements, lwork);
    }
    work_elements_ = work_elements;
    check(cudaMalloc(&r_.work, size_t(work_elements_) * sizeof(T)), "allocating the cuSOLVER workspace");
    check(cudaMallocHost(&r_.host, sizeof(HostScalars<T>)), "allocating pinned host memory");
    factor_pointers_.resize(order_);
    for (uint32_t m = 0; m < order_; ++m) factor_pointers_[m] = factor(m);
  }

  void read_scalars() {
    check(cudaMemcpyAsync(&host()->s, scalars(), sizeof(Scalars), cudaMemcpyDeviceToHost, r_.stream),
          "copying scalars to the host");
    check(cudaStreamSynchronize(r_.stream), "running a Tucker-HOOI sweep");
  }

  // The CPU's messages for a solver that did not converge.
  void solver_info(const char* routine, const char* what, uint32_t n) {
    const int info = host()->s.info;
    if (info == 0) return;
    if (info < 0) throw Failure{status::device, text("cuSOLVER ", routine, " rejected argument ", -info)};
    throw Failure{status::numerical, text("the ", what, " for mode ", n, " did not converge (cuSOLVER ", routine,
                                          " info ", info, "); the tensor may hold non-finite values")};
  }

  uint32_t order_;
  int sms_;
  std::vector<ModePlan> plans_;
  TtmcLauncher<T> ttmc_;
  Layout layout_;
  Resources r_;
  int work_elements_ = 1;
  std::vector<const T*> factor_pointers_;
  uint32_t y_mode_ = ~0u;           // the mode whose Y_(n) the workspace holds
  uint32_t right_gram_mode_ = ~0u;  // the mode whose right-Gram eigenpairs it holds
};

}  // namespace

size_t tucker_device_bytes(uint32_t order, const uint32_t* dims, const uint32_t* ranks, size_t value_size) {
  const Layout l = layout_for(plan_modes(order, dims, ranks), value_size);
  const uint64_t n = l.max_gram_order;
  return l.total + align_up(size_t(1 + 6 * n + 2 * n * n) * value_size);
}

template <typename T>
std::unique_ptr<TuckerSession> make_tucker_session(uint32_t order, const uint32_t* dims, const uint32_t* ranks,
                                                   TtmcLauncher<T> ttmc, int multiprocessors) {
  return std::make_unique<DeviceTuckerSession<T>>(order, dims, ranks, std::move(ttmc), multiprocessors);
}

template std::unique_ptr<TuckerSession> make_tucker_session<float>(uint32_t, const uint32_t*, const uint32_t*,
                                                                   TtmcLauncher<float>, int);
template std::unique_ptr<TuckerSession> make_tucker_session<double>(uint32_t, const uint32_t*, const uint32_t*,
                                                                    TtmcLauncher<double>, int);

}  // namespace spt::cuda
