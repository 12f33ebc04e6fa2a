// The CP-APR session on the device (cp_apr.cuh says what it holds and why
// its arithmetic is the CPU's).
#include "cp_apr.cuh"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "library_checks.cuh"

namespace spt::cuda {

namespace {

using library_checks::check;
using library_checks::check_launch;
using library_checks::Failure;
using library_checks::text;

constexpr int kThreads = 256;
// Shared memory the Phi kernel uses per block at most (no opt-in needed).
constexpr size_t kPhiSharedLimit = 48 * 1024;
// Doubles of shared memory per row group of the Phi kernel, per unit of rank.
constexpr size_t kPhiRowsPerGroup = 3;
// Nonzeros of one Phi chunk at most: a row with more is split into chunks
// whose partial sums a second kernel adds, so that one heavy row (power-law
// slices) does not run alone on one group of lanes while the GPU idles.
constexpr uint64_t kPhiChunk = 64;
// Blocks of the reductions over the nonzeros: a fixed count (not the
// device's SM count) so that the sums' order, and so the results, are the
// same on every device.
constexpr uint64_t kReduceBlocks = 1024;

size_t saturating_add(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }
size_t saturating_mul(size_t a, size_t b) { return (b != 0 && a > SIZE_MAX / b) ? SIZE_MAX : a * b; }
size_t aligned(size_t n) { return n > SIZE_MAX - 255 ? SIZE_MAX : (n + 255) / 256 * 256; }

// The device arrays of one run, laid out in one allocation (offsets in
// bytes, each 256-aligned).
struct Layout {
  size_t row_ptr0 = 0;                    // mode 0's row pointers (the log-likelihood finds rows by them)
  std::vector<size_t> ind, val;           // per mode
  std::vector<size_t> chunk_ptr, chunk_begin, chunk_row;  // per mode: Phi's chunks (at most max_chunks)
  std::vector<size_t> factor, phi;        // per mode
  size_t chunk_partials = 0;              // one mode's chunk sums at a time
  size_t lambda = 0, norms = 0, colsums = 0, partials = 0, scalars = 0;
  size_t other_ind = 0, other_factors = 0, all_factors = 0;
  size_t total = 0;
};

// Phi chunks of a mode with `rows` rows: every nonempty row has
// ceil(len / kPhiChunk) <= len / kPhiChunk + 1 of them.
size_t max_chunks(uint64_t rows, uint64_t nnz) { return std::min<uint64_t>(nnz, rows + nnz / kPhiChunk); }

// The chunks of one mode from its row pointers: chunk c holds the nonzeros
// [begin[c], begin[c + 1]) of row row[c]; row i's chunks are
// ptr[i] .. ptr[i + 1] - 1 (none for an empty row).
struct PhiChunks {
  std::vector<uint64_t> ptr, begin;
  std::vector<uint32_t> row;
};

PhiChunks phi_chunks(uint32_t rows, const uint64_t* row_ptr) {
  PhiChunks c;
  c.ptr.reserve(size_t(rows) + 1);
  c.ptr.push_back(0);
  for (uint32_t i = 0; i < rows; ++i) {
    for (uint64_t k = row_ptr[i]; k < row_ptr[i + 1]; k += kPhiChunk) {
      c.begin.push_back(k);
      c.row.push_back(i);
    }
    c.ptr.push_back(c.row.size());
  }
  c.begin.push_back(row_ptr[rows]);
  return c;
}

Layout layout(uint32_t order, const uint32_t* dims, uint64_t nnz, uint32_t rank, size_t value_size) {
  Layout l;
  size_t at = 0;
  auto take = [&](size_t bytes) {
    const size_t here = at;
    at = saturating_add(at, aligned(bytes));
    return here;
  };
  const size_t others = order > 0 ? order - 1 : 0;
  size_t most_chunks = 0;
  for (uint32_t n = 0; n < order; ++n) {
    // Only mode 0's row pointers are read on the device (the other modes'
    // rows go by their Phi chunks).
    if (n == 0) l.row_ptr0 = take(saturating_mul(size_t(dims[n]) + 1, sizeof(uint64_t)));
    l.ind.push_back(take(saturating_mul(saturating_mul(nnz, others), sizeof(uint32_t))));
    l.val.push_back(take(saturating_mul(nnz, sizeof(double))));
    const size_t chunks = max_chunks(dims[n], nnz);
    l.chunk_ptr.push_back(take(saturating_mul(size_t(dims[n]) + 1, sizeof(uint64_t))));
    l.chunk_begin.push_back(take(saturating_mul(saturating_add(chunks, 1), sizeof(uint64_t))));
    l.chunk_row.push_back(take(saturating_mul(chunks, sizeof(uint32_t))));
    most_chunks = std::max(most_chunks, chunks);
  }
  l.chunk_partials = take(saturating_mul(saturating_mul(most_chunks, rank), sizeof(double)));
  for (uint32_t n = 0; n < order; ++n) {
    l.factor.push_back(take(saturating_mul(saturating_mul(dims[n], rank), value_size)));
    l.phi.push_back(take(saturating_mul(saturating_mul(dims[n], rank), value_size)));
  }
  l.lambda = take(size_t(rank) * sizeof(double));
  l.norms = take(size_t(rank) * sizeof(double));
  l.colsums = take(size_t(order) * rank * sizeof(double));
  l.partials = take(kReduceBlocks * sizeof(double));
  l.scalars = take(4 * sizeof(double));
  l.other_ind = take(size_t(order) * others * sizeof(void*));
  l.other_factors = take(size_t(order) * others * sizeof(void*));
  l.all_factors = take(size_t(order) * sizeof(void*));
  l.total = at;
  return l;
}

// Phi of one mode: a group of G lanes per output row i (G in {8, 16, 32});
// lane l owns the columns r = l, l + G, ... of the row's rank-long staging
// rows in shared memory (Pi's row widened to double, the accumulator, the
// products A(i,r) Pi(k,r)). The model value is the CPU kernel's four
// interleaved partial sums (lanes 0..3, one sum each; lane 0 adds the tail
// columns), combined as (s0 + s1) + (s2 + s3).
template <typename T, int G>
__global__ void phi_kernel(uint64_t chunks, uint32_t rank, uint32_t others, const uint64_t* __restrict__ chunk_begin,
                           const uint32_t* __restrict__ chunk_row, const uint32_t* const* __restrict__ ind,
                           const double* __restrict__ val, const T* const* __restrict__ other_factors,
                           const T* __restrict__ a, double eps, double* __restrict__ partials) {
  extern __shared__ double staging[];
  const uint32_t lane = threadIdx.x % G;
  const uint32_t group = threadIdx.x / G;
  const uint32_t groups = blockDim.x / G;
  double* pid = staging + size_t(group) * kPhiRowsPerGroup * rank;
  double* acc = pid + rank;
  double* prod = acc + rank;
  const unsigned group_mask = G == 32 ? 0xffffffffu : (((1u << G) - 1u) << ((threadIdx.x % 32) / G * G));
  const uint32_t rank4 = rank / 4 * 4;
  for (uint64_t c = uint64_t(blockIdx.x) * groups + group; c < chunks; c += uint64_t(gridDim.x) * groups) {
    for (uint32_t r = lane; r < rank; r += G) acc[r] = 0.0;
    const T* ai = a + size_t(chunk_row[c]) * rank;
    const uint64_t end = chunk_begin[c + 1];
    for (uint64_t k = chunk_begin[c]; k < end; ++k) {
      for (uint32_t r = lane; r < rank; r += G) {
        T p = other_factors[0][size_t(ind[0][k]) * rank + r];
        for (uint32_t o = 1; o < others; ++o) p *= other_factors[o][size_t(ind[o][k]) * rank + r];
        const double pd = static_cast<double>(p);
        pid[r] = pd;
        prod[r] = __dmul_rn(static_cast<double>(ai[r]), pd);
      }
      __syncwarp(group_mask);
      double s = 0.0;
      if (lane < 4) {
        for (uint32_t r = lane; r < rank4; r += 4) s = __dadd_rn(s, prod[r]);
        if (lane == 0)
          for (uint32_t r = rank4; r < rank; ++r) s = __dadd_rn(s, prod[r]);
      }
      const double s0 = __shfl_sync(group_mask, s, 0, G);
      const double s1 = __shfl_sync(group_mask, s, 1, G);
      const double s2 = __shfl_sync(group_mask, s, 2, G);
      const double s3 = __shfl_sync(group_mask, s, 3, G);
      const double v = __dadd_rn(__dadd_rn(s0, s1), __dadd_rn(s2, s3));
      const double w = val[k] / (v < eps ? eps : v);
      for (uint32_t r = lane; r < rank; r += G) acc[r] = __dadd_rn(acc[r], __dmul_rn(w, pid[r]));
      // Lanes 0..3 read every lane's products: the next nonzero's must wait.
      __syncwarp(group_mask);
    }
    for (uint32_t r = lane; r < rank; r += G) partials[c * rank + r] = acc[r];
  }
}

// Phi(i, r) = the sum of row i's chunk sums in chunk order (0 for an empty
// row); a row of one chunk gets its sum unchanged.
template <typename T>
__global__ void phi_rows(uint64_t entries, uint32_t rank, const uint64_t* __restrict__ chunk_ptr,
                         const double* __restrict__ partials, T* __restrict__ phi) {
  for (uint64_t e = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < entries;
       e += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t i = e / rank, r = e % rank;
    double s = 0.0;
    const uint64_t first = chunk_ptr[i], last = chunk_ptr[i + 1];
    if (first < last) s = partials[first * rank + r];
    for (uint64_t c = first + 1; c < last; ++c) s = __dadd_rn(s, partials[c * rank + r]);
    phi[e] = static_cast<T>(s);
  }
}

// out[r] = sum_i |a(i, r)| (kAbsolute) or sum_i a(i, r), rows in order, in
// double: one thread per column, the CPU's order.
template <typename T, bool kAbsolute>
__global__ void column_sums(uint64_t rows, uint32_t rank, const T* __restrict__ a, double* __restrict__ out) {
  const uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rank) return;
  double s = 0.0;
  for (uint64_t i = 0; i < rows; ++i) {
    const double v = static_cast<double>(a[i * rank + r]);
    s = __dadd_rn(s, kAbsolute ? fabs(v) : v);
  }
  out[r] = s;
}

// Normalise, after column_sums: lambda_r *= norm_r and column r divided by
// it (multiplied by 1 / norm_r, as the CPU) unless it is 0.
template <typename T>
__global__ void scale_columns(uint64_t entries, uint32_t rank, const double* __restrict__ norms, T* __restrict__ a) {
  for (uint64_t e = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < entries; e += uint64_t(gridDim.x) * blockDim.x) {
    const double norm = norms[e % rank];
    if (norm > 0) a[e] = static_cast<T>(__dmul_rn(static_cast<double>(a[e]), 1.0 / norm));
  }
}

__global__ void scale_lambda(uint32_t rank, const double* __restrict__ norms, double* __restrict__ lambda) {
  const uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rank) lambda[r] = __dmul_rn(lambda[r], norms[r]);
}

__global__ void fill(uint32_t n, double value, double* __restrict__ out) {
  const uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n) out[r] = value;
}

template <typename T>
__global__ void scooch_kernel(uint64_t entries, double kappa, double kappatol, const T* __restrict__ phi,
                              T* __restrict__ a) {
  for (uint64_t e = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < entries; e += uint64_t(gridDim.x) * blockDim.x)
    if (phi[e] > T(0) && static_cast<double>(a[e]) < kappatol)
      a[e] = static_cast<T>(__dadd_rn(static_cast<double>(a[e]), kappa));
}

template <typename T>
__global__ void redistribute_kernel(uint64_t entries, uint32_t rank, const double* __restrict__ lambda,
                                    T* __restrict__ a) {
  for (uint64_t e = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < entries; e += uint64_t(gridDim.x) * blockDim.x)
    a[e] = static_cast<T>(__dmul_rn(static_cast<double>(a[e]), lambda[e % rank]));
}

template <typename T>
__global__ void multiply_kernel(uint64_t entries, const T* __restrict__ phi, T* __restrict__ a) {
  for (uint64_t e = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < entries; e += uint64_t(gridDim.x) * blockDim.x)
    a[e] = a[e] * phi[e];
}

// The block's values in shared memory summed by a fixed tree (or their
// maximum, ignoring NaN as std::max(v, x) does); thread 0 holds the result.
template <bool kMax>
__device__ double block_reduce(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      const double x = shared[threadIdx.x + half];
      const double y = shared[threadIdx.x];
      shared[threadIdx.x] = kMax ? (y < x ? x : y) : __dadd_rn(y, x);
    }
    __syncthreads();
  }
  return shared[0];
}

// Per block: max |min(a, 1 - phi)| (NaN ignored, as the CPU's std::max).
template <typename T>
__global__ void kkt_partials(uint64_t entries, const T* __restrict__ a, const T* __restrict__ phi,
                             double* __restrict__ partials) {
  __shared__ double shared[kThreads];
  double viol = 0.0;
  for (uint64_t e = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < entries;
       e += uint64_t(gridDim.x) * blockDim.x) {
    const double av = static_cast<double>(a[e]);
    const double one_minus = 1.0 - static_cast<double>(phi[e]);
    const double x = fabs(one_minus < av ? one_minus : av);
    viol = viol < x ? x : viol;
  }
  const double m = block_reduce<true>(viol, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = m;
}

// out = the sum (or max) of partials[0, count) by one block's fixed tree.
template <bool kMax>
__global__ void reduce_partials(uint32_t count, const double* __restrict__ partials, double* __restrict__ out) {
  __shared__ double shared[kThreads];
  double v = 0.0;
  for (uint32_t b = threadIdx.x; b < count; b += blockDim.x) {
    const double x = partials[b];
    v = kMax ? (v < x ? x : v) : __dadd_rn(v, x);
  }
  const double r = block_reduce<kMax>(v, shared);
  if (threadIdx.x == 0) *out = r;
}

// The model's total: sum_r lambda_r prod_m colsum_m(r), lambda rounded to T
// first (the CPU reads the ktensor's lambda); in the CPU's order.
template <typename T>
__global__ void model_total(uint32_t order, uint32_t rank, const double* __restrict__ lambda,
                            const double* __restrict__ colsums, double* __restrict__ out) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double total = 0.0;
  for (uint32_t r = 0; r < rank; ++r) {
    double p = static_cast<double>(static_cast<T>(lambda[r]));
    for (uint32_t m = 0; m < order; ++m) p = __dmul_rn(p, colsums[size_t(m) * rank + r]);
    total = __dadd_rn(total, p);
  }
  *out = total;
}

// Per block: sum of x log(m(x)) over the nonzeros (mode 0's groups), the
// model value in the CPU's order (lambda_r times the factors' entries in
// mode order, summed over r).
template <typename T>
__global__ void loglik_partials(uint64_t nnz, uint64_t rows0, uint32_t order, uint32_t rank,
                                const uint64_t* __restrict__ row_ptr0, const uint32_t* const* __restrict__ ind0,
                                const double* __restrict__ val0, const T* const* __restrict__ factors,
                                const double* __restrict__ lambda, double* __restrict__ partials) {
  __shared__ double shared[kThreads];
  double local = 0.0;
  for (uint64_t k = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < nnz; k += uint64_t(gridDim.x) * blockDim.x) {
    const double xv = val0[k];
    if (xv == 0) continue;
    // The row of k in mode 0: the last i with row_ptr0[i] <= k.
    uint64_t lo = 0, hi = rows0;  // row_ptr0[lo] <= k < row_ptr0[hi]
    while (hi - lo > 1) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (row_ptr0[mid] <= k) lo = mid;
      else hi = mid;
    }
    double mv = 0.0;
    for (uint32_t r = 0; r < rank; ++r) {
      double p = static_cast<double>(static_cast<T>(lambda[r]));
      p = __dmul_rn(p, static_cast<double>(factors[0][lo * rank + r]));
      for (uint32_t m = 1; m < order; ++m)
        p = __dmul_rn(p, static_cast<double>(factors[m][size_t(ind0[m - 1][k]) * rank + r]));
      mv = __dadd_rn(mv, p);
    }
    local = __dadd_rn(local, __dmul_rn(xv, log(mv)));
  }
  const double s = block_reduce<false>(local, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

unsigned blocks_for(uint64_t n, uint64_t cap) {
  return static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>((n + kThreads - 1) / kThreads, cap)));
}

template <typename T>
class CpAprSessionImpl final : public CpAprSession {
 public:
  CpAprSessionImpl(uint32_t order, const uint32_t* dims, uint64_t nnz, uint32_t rank,
                   const spt_plugin_cp_apr_groups* per_mode, int multiprocessors)
      : order_(order), dims_(dims, dims + order), nnz_(nnz), rank_(rank),
        sms_(std::max(multiprocessors, 1)), layout_(layout(order, dims, nnz, rank, sizeof(T))) {
    check(cudaStreamCreateWithFlags(&owned_stream_.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(cudaMalloc(&owned_block_.pointer, layout_.total), "allocating the CP-APR working set");
    const uint32_t others = order - 1;
    std::vector<const uint32_t*> other_ind(size_t(order) * others);
    std::vector<const T*> other_factors(size_t(order) * others);
    std::vector<const T*> all_factors(order);
    for (uint32_t n = 0; n < order; ++n) {
      const spt_plugin_cp_apr_groups& g = per_mode[n];
      if (n == 0)
        check(cudaMemcpyAsync(at(layout_.row_ptr0), g.row_ptr, (size_t(dims[n]) + 1) * sizeof(uint64_t),
                              cudaMemcpyHostToDevice, stream()),
              "copying the row pointers to the device");
      uint32_t j = 0;
      for (uint32_t m = 0; m < order; ++m) {
        if (m == n) continue;
        uint32_t* dst = reinterpret_cast<uint32_t*>(at(layout_.ind[n])) + size_t(j) * nnz;
        if (nnz > 0)
          check(cudaMemcpyAsync(dst, g.ind[m], nnz * sizeof(uint32_t), cudaMemcpyHostToDevice, stream()),
                "copying the indices to the device");
        other_ind[size_t(n) * others + j] = dst;
        other_factors[size_t(n) * others + j] = factor(m);
        ++j;
      }
      if (nnz > 0)
        check(cudaMemcpyAsync(at(layout_.val[n]), g.values, nnz * sizeof(double), cudaMemcpyHostToDevice, stream()),
              "copying the values to the device");
      const PhiChunks c = phi_chunks(dims[n], g.row_ptr);
      chunks_.push_back(c.row.size());
      check(cudaMemcpyAsync(at(layout_.chunk_ptr[n]), c.ptr.data(), c.ptr.size() * sizeof(uint64_t),
                            cudaMemcpyHostToDevice, stream()),
            "copying the Phi chunks to the device");
      check(cudaMemcpyAsync(at(layout_.chunk_begin[n]), c.begin.data(), c.begin.size() * sizeof(uint64_t),
                            cudaMemcpyHostToDevice, stream()),
            "copying the Phi chunks to the device");
      if (!c.row.empty())
        check(cudaMemcpyAsync(at(layout_.chunk_row[n]), c.row.data(), c.row.size() * sizeof(uint32_t),
                              cudaMemcpyHostToDevice, stream()),
              "copying the Phi chunks to the device");
      // The copies read pageable host memory: done before `c` goes.
      check(cudaStreamSynchronize(stream()), "uploading the CP-APR tensor");
      all_factors[n] = factor(n);
    }
    check(cudaMemcpyAsync(at(layout_.other_ind), other_ind.data(), other_ind.size() * sizeof(void*),
                          cudaMemcpyHostToDevice, stream()),
          "copying the index table to the device");
    check(cudaMemcpyAsync(at(layout_.other_factors), other_factors.data(), other_factors.size() * sizeof(void*),
                          cudaMemcpyHostToDevice, stream()),
          "copying the factor table to the device");
    check(cudaMemcpyAsync(at(layout_.all_factors), all_factors.data(), all_factors.size() * sizeof(void*),
                          cudaMemcpyHostToDevice, stream()),
          "copying the factor table to the device");
    // The host vectors above are pageable: the copies are done when the
    // stream is.
    check(cudaStreamSynchronize(stream()), "uploading the CP-APR tensor");
  }

  ~CpAprSessionImpl() override {
    if (owned_stream_.stream) cudaStreamSynchronize(owned_stream_.stream);
    cudaGetLastError();
  }
  CpAprSessionImpl(const CpAprSessionImpl&) = delete;
  CpAprSessionImpl& operator=(const CpAprSessionImpl&) = delete;

  void set_factors(const spt_plugin_matrix* factors) override {
    for (uint32_t m = 0; m < order_; ++m) {
      const spt_plugin_matrix& f = factors[m];
      if (!f.data || f.rows != dims_[m] || f.cols != rank_ || f.ld < rank_)
        throw Failure{status::invalid_argument, text("cp_apr_set_factors: factor ", m, " has the wrong shape")};
      check(cudaMemcpy2DAsync(factor(m), rank_ * sizeof(T), f.data, f.ld * sizeof(T), rank_ * sizeof(T), f.rows,
                              cudaMemcpyHostToDevice, stream()),
            "copying a factor matrix to the device");
      check(cudaMemsetAsync(phi_of(m), 0, entries(m) * sizeof(T), stream()), "zeroing Phi");
    }
    fill<<<blocks_for(rank_, 64), kThreads, 0, stream()>>>(rank_, 1.0, lambda());
    check_launch("launching the lambda fill");
    check(cudaStreamSynchronize(stream()), "copying the factors to the device");
  }

  void get_factors(spt_plugin_matrix* factors, double* lambda_out) override {
    for (uint32_t m = 0; m < order_; ++m) {
      spt_plugin_matrix& f = factors[m];
      if (!f.data || f.rows != dims_[m] || f.cols != rank_ || f.ld < rank_)
        throw Failure{status::invalid_argument, text("cp_apr_get_factors: factor ", m, " has the wrong shape")};
      check(cudaMemcpy2DAsync(f.data, f.ld * sizeof(T), factor(m), rank_ * sizeof(T), rank_ * sizeof(T), f.rows,
                              cudaMemcpyDeviceToHost, stream()),
            "copying a factor matrix to the host");
    }
    check(cudaMemcpyAsync(lambda_out, lambda(), rank_ * sizeof(double), cudaMemcpyDeviceToHost, stream()),
          "copying lambda to the host");
    check(cudaStreamSynchronize(stream()), "copying the factors to the host");
  }

  void normalise(uint32_t mode) override {
    column_sums<T, true><<<blocks_for(rank_, 1u << 20), kThreads, 0, stream()>>>(dims_[mode], rank_, factor(mode),
                                                                                norms());
    check_launch("launching the column norms");
    scale_columns<T><<<elementwise_blocks(mode), kThreads, 0, stream()>>>(entries(mode), rank_, norms(),
                                                                         factor(mode));
    check_launch("launching the column scaling");
    scale_lambda<<<blocks_for(rank_, 1u << 20), kThreads, 0, stream()>>>(rank_, norms(), lambda());
    check_launch("launching the lambda scaling");
  }

  void scooch(uint32_t mode, double kappa, double kappatol) override {
    scooch_kernel<T><<<elementwise_blocks(mode), kThreads, 0, stream()>>>(entries(mode), kappa, kappatol,
                                                                         phi_of(mode), factor(mode));
    check_launch("launching the scooch");
  }

  void redistribute(uint32_t mode) override {
    redistribute_kernel<T><<<elementwise_blocks(mode), kThreads, 0, stream()>>>(entries(mode), rank_, lambda(),
                                                                               factor(mode));
    check_launch("launching the redistribution");
    fill<<<blocks_for(rank_, 1u << 20), kThreads, 0, stream()>>>(rank_, 1.0, lambda());
    check_launch("launching the lambda fill");
  }

  void phi(uint32_t mode, double eps) override {
    const int lanes = rank_ <= 8 ? 8 : rank_ <= 16 ? 16 : 32;
    const size_t group_bytes = kPhiRowsPerGroup * rank_ * sizeof(double);
    const uint32_t groups =
        static_cast<uint32_t>(std::max<size_t>(1, std::min<size_t>(kThreads / lanes, kPhiSharedLimit / group_bytes)));
    const uint64_t chunks = chunks_[mode];
    const unsigned grid = static_cast<unsigned>(
        std::max<uint64_t>(1, std::min<uint64_t>((chunks + groups - 1) / groups, uint64_t(sms_) * 64)));
    const unsigned threads = groups * static_cast<unsigned>(lanes);
    const size_t shared = groups * group_bytes;
    const uint32_t others = order_ - 1;
    const uint64_t* chunk_begin = reinterpret_cast<const uint64_t*>(at(layout_.chunk_begin[mode]));
    const uint32_t* chunk_row = reinterpret_cast<const uint32_t*>(at(layout_.chunk_row[mode]));
    double* partials = reinterpret_cast<double*>(at(layout_.chunk_partials));
    const uint32_t* const* ind = reinterpret_cast<const uint32_t* const*>(at(layout_.other_ind)) + size_t(mode) * others;
    const double* val = reinterpret_cast<const double*>(at(layout_.val[mode]));
    const T* const* other = reinterpret_cast<const T* const*>(at(layout_.other_factors)) + size_t(mode) * others;
    switch (lanes) {
      case 8:
        phi_kernel<T, 8><<<grid, threads, shared, stream()>>>(chunks, rank_, others, chunk_begin, chunk_row, ind,
                                                             val, other, factor(mode), eps, partials);
        break;
      case 16:
        phi_kernel<T, 16><<<grid, threads, shared, stream()>>>(chunks, rank_, others, chunk_begin, chunk_row, ind,
                                                              val, other, factor(mode), eps, partials);
        break;
      default:
        phi_kernel<T, 32><<<grid, threads, shared, stream()>>>(chunks, rank_, others, chunk_begin, chunk_row, ind,
                                                              val, other, factor(mode), eps, partials);
        break;
    }
    check_launch("launching the Phi kernel");
    phi_rows<T><<<elementwise_blocks(mode), kThreads, 0, stream()>>>(
        entries(mode), rank_, reinterpret_cast<const uint64_t*>(at(layout_.chunk_ptr[mode])), partials, phi_of(mode));
    check_launch("launching the Phi row sums");
  }

  double kkt_violation(uint32_t mode) override {
    const unsigned blocks = blocks_for(entries(mode), kReduceBlocks);
    kkt_partials<T><<<blocks, kThreads, 0, stream()>>>(entries(mode), factor(mode), phi_of(mode), partials());
    check_launch("launching the KKT violation");
    reduce_partials<true><<<1, kThreads, 0, stream()>>>(blocks, partials(), scalars());
    check_launch("launching the KKT reduction");
    double viol = 0.0;
    check(cudaMemcpyAsync(&viol, scalars(), sizeof(double), cudaMemcpyDeviceToHost, stream()),
          "copying the KKT violation to the host");
    check(cudaStreamSynchronize(stream()), "running the CP-APR inner iteration");
    return viol;
  }

  void multiply(uint32_t mode) override {
    multiply_kernel<T><<<elementwise_blocks(mode), kThreads, 0, stream()>>>(entries(mode), phi_of(mode),
                                                                           factor(mode));
    check_launch("launching the multiplicative update");
  }

  double loglikelihood() override {
    for (uint32_t m = 0; m < order_; ++m) {
      column_sums<T, false><<<blocks_for(rank_, 1u << 20), kThreads, 0, stream()>>>(dims_[m], rank_, factor(m),
                                                                                   colsums() + size_t(m) * rank_);
      check_launch("launching the column sums");
    }
    model_total<T><<<1, 1, 0, stream()>>>(order_, rank_, lambda(), colsums(), scalars() + 1);
    check_launch("launching the model total");
    const unsigned blocks = blocks_for(nnz_, kReduceBlocks);
    loglik_partials<T><<<blocks, kThreads, 0, stream()>>>(
        nnz_, dims_[0], order_, rank_, reinterpret_cast<const uint64_t*>(at(layout_.row_ptr0)),
        reinterpret_cast<const uint32_t* const*>(at(layout_.other_ind)),
        reinterpret_cast<const double*>(at(layout_.val[0])), reinterpret_cast<const T* const*>(at(layout_.all_factors)),
        lambda(), partials());
    check_launch("launching the log-likelihood");
    reduce_partials<false><<<1, kThreads, 0, stream()>>>(blocks, partials(), scalars());
    check_launch("launching the log-likelihood reduction");
    double sums[2] = {0.0, 0.0};
    check(cudaMemcpyAsync(sums, scalars(), 2 * sizeof(double), cudaMemcpyDeviceToHost, stream()),
          "copying the log-likelihood to the host");
    check(cudaStreamSynchronize(stream()), "running the CP-APR outer iteration");
    return sums[0] - sums[1];
  }

 private:
  cudaStream_t stream() const { return owned_stream_.stream; }
  char* at(size_t offset) const { return static_cast<char*>(owned_block_.pointer) + offset; }
  T* factor(uint32_t m) const { return reinterpret_cast<T*>(at(layout_.factor[m])); }
  T* phi_of(uint32_t m) const { return reinterpret_cast<T*>(at(layout_.phi[m])); }
  double* lambda() const { return reinterpret_cast<double*>(at(layout_.lambda)); }
  double* norms() const { return reinterpret_cast<double*>(at(layout_.norms)); }
  double* colsums() const { return reinterpret_cast<double*>(at(layout_.colsums)); }
  double* partials() const { return reinterpret_cast<double*>(at(layout_.partials)); }
  double* scalars() const { return reinterpret_cast<double*>(at(layout_.scalars)); }
  uint64_t entries(uint32_t m) const { return uint64_t(dims_[m]) * rank_; }
  unsigned elementwise_blocks(uint32_t m) const { return blocks_for(entries(m), uint64_t(sms_) * 32); }

  uint32_t order_;
  std::vector<uint32_t> dims_;
  uint64_t nnz_;
  uint32_t rank_;
  int sms_;
  Layout layout_;
  std::vector<uint64_t> chunks_;  // Phi chunks per mode
  // Owners of the stream and the working set (members, so that a
  // constructor that throws part way frees what it made).
  struct OwnedStream {
    cudaStream_t stream = nullptr;
    ~OwnedStream() {
      if (stream) cudaStreamDestroy(stream);
      cudaGetLastError();
    }
  } owned_stream_;
  struct OwnedBlock {
    void* pointer = nullptr;
    ~OwnedBlock() {
      if (pointer) cudaFree(pointer);
      cudaGetLastError();
    }
  } owned_block_;
};

}  // namespace

size_t cp_apr_device_bytes(uint32_t order, const uint32_t* dims, uint64_t nnz, uint32_t rank, size_t value_size) {
  return layout(order, dims, nnz, rank, value_size).total;
}

template <typename T>
std::unique_ptr<CpAprSession> make_cp_apr_session(uint32_t order, const uint32_t* dims, uint64_t nnz, uint32_t rank,
                                                  const spt_plugin_cp_apr_groups* per_mode, int multiprocessors) {
  return std::make_unique<CpAprSessionImpl<T>>(order, dims, nnz, rank, per_mode, multiprocessors);
}

template std::unique_ptr<CpAprSession> make_cp_apr_session<float>(uint32_t, const uint32_t*, uint64_t, uint32_t,
                                                                  const spt_plugin_cp_apr_groups*, int);
template std::unique_ptr<CpAprSession> make_cp_apr_session<double>(uint32_t, const uint32_t*, uint64_t, uint32_t,
                                                                   const spt_plugin_cp_apr_groups*, int);

}  // namespace spt::cuda
