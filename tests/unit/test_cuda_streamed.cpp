// Tensors larger than the device memory (plugin family STREAM): with
// SPT_CUDA_MEMORY_LIMIT set so that the tensor's device copy does not fit
// but the factors and output do, MTTKRP through the dispatcher and CP-ALS
// through the C API stream the nonzeros through the GPU in chunks, and
// equal the in-memory GPU result. With the context's device streaming
// ALWAYS (streaming forced) and the limit found by bisection on the logged
// chunk count, 2, 3 and
// many chunks equal the in-memory GPU result and the CPU's (2 chunks need
// the whole tensor in the ring of two buffers, so only forcing reaches
// them). A limit too small even for the factors gives the CPU fallback
// with its note under AUTO and an out-of-memory error under CUDA, never a
// crash. Every device test skips without a usable CUDA device; the chunk
// plan (a host function of the kernel library) is checked on any machine
// where the CUDA plugin is built, the device-streaming option's argument
// checks on any machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/cuda_test_util.hpp"
#include "common/test_util.hpp"
#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/ktensor.hpp"
#include "dispatch/device_streamed.hpp"
#include "dispatch/dispatch.hpp"
#include "kernels/kernels.hpp"

#ifdef SPT_TEST_CUDA_KERNELS
#include "mttkrp_streamed.cuh"
#endif

namespace spt::test {
namespace {

// The chunk count in a "streamed" log line ("... in N chunks of ..." or
// "...; N chunks of ..."), 0 when no line says the run was streamed.
uint64_t logged_chunks(const std::vector<std::string>& lines) {
  for (const std::string& l : lines)
    if (const uint64_t chunks = dispatch::detail::streamed_chunks(l)) return chunks;
  return 0;
}

// Outcome of one run under a memory limit: chunks (0 = not streamed),
// whether it ran on the GPU at all.
struct Probe {
  uint64_t chunks = 0;
  bool on_cpu = false;
};

// The chunk count as a non-increasing function of the limit: in memory
// counts as 1, the CPU fallback as "too many". Bisection finds the
// smallest limit in [lo, hi] whose count is <= target; returns it and its
// probe. probe(limit) runs the operation under that limit.
template <typename ProbeFn>
uint64_t limit_for_chunks(uint64_t target, uint64_t lo, uint64_t hi, ProbeFn&& probe, Probe& found) {
  auto count = [](const Probe& p) { return p.on_cpu ? UINT64_MAX : std::max<uint64_t>(p.chunks, 1); };
  found = probe(hi);
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    const Probe p = probe(mid);
    if (count(p) <= target) {
      hi = mid;
      found = p;
    } else {
      lo = mid + 1;
    }
  }
  if (count(found) > target || found.chunks == 0) found = probe(hi);
  return hi;
}

// sum over the nonzeros of |value| prod |factor entries|, per output entry:
// the scale of the rounding error of any summation order.
template <typename T>
DenseMatrix<double> magnitudes(const spt_coo_s& x, const std::vector<DenseMatrix<T>>& factors, uint32_t mode) {
  const spt_nnz rank = factors[0].cols;
  DenseMatrix<double> out(x.dims[mode], rank);
  const T* values = static_cast<const T*>(x.val);
  for (spt_nnz k = 0; k < x.nnz; ++k)
    for (spt_nnz r = 0; r < rank; ++r) {
      double term = std::abs(static_cast<double>(values[k]));
      for (uint32_t m = 0; m < x.order(); ++m)
        if (m != mode) term *= std::abs(static_cast<double>(factors[m](x.ind[m][k], r)));
      out(x.ind[mode][k], r) += term;
    }
  return out;
}

#ifdef SPT_TEST_CUDA_KERNELS
// The ring's plan: two buffers that fit the ring, chunks covering the
// nonzeros in equal parts within the maximum, no plan when two buffers of
// the minimum chunk do not fit (the caller then reports out of memory).
TEST(StreamPlan, ChunksFitTheRingAndCoverTheNonzeros) {
  using namespace spt::cuda;
  for (uint32_t order : {2u, 3u, 5u})
    for (size_t value_size : {size_t(4), size_t(8)})
      for (uint64_t nnz : {uint64_t(1), uint64_t(1000), uint64_t(123457), uint64_t(1) << 30})
        for (size_t ring : {size_t(0), size_t(1000), size_t(100000), size_t(1) << 20, size_t(3) << 30,
                            size_t(80) << 30}) {
          const StreamPlan p = plan_stream(order, nnz, value_size, ring);
          const std::string what = cat("order ", order, " value ", value_size, " nnz ", nnz, " ring ", ring);
          const uint64_t smallest = std::min<uint64_t>(kStreamMinChunk, nnz);
          if (p.chunk_nnz == 0) {
            // Not even two buffers of the smallest chunk fit.
            EXPECT_GT(kStreamBuffers * stream_buffer_bytes(order, smallest, value_size), ring) << what;
            continue;
          }
          EXPECT_EQ(p.buffers, kStreamBuffers) << what;
          // Equal parts may shorten a chunk, by less than half.
          EXPECT_GE(2 * p.chunk_nnz, smallest) << what;
          EXPECT_LE(p.chunk_nnz, std::min(kStreamMaxChunk, nnz)) << what;
          EXPECT_LE(p.ring_bytes, ring) << what;
          EXPECT_EQ(p.ring_bytes, kStreamBuffers * stream_buffer_bytes(order, p.chunk_nnz, value_size)) << what;
          EXPECT_EQ(p.chunks, (nnz + p.chunk_nnz - 1) / p.chunk_nnz) << what;
          // Equal parts: the last chunk is not much shorter than the others.
          EXPECT_GT(nnz, (p.chunks - 1) * p.chunk_nnz) << what;
          EXPECT_LE(p.chunks * p.chunk_nnz - nnz, p.chunks) << what;
        }
  // Two chunks take a ring that holds the whole tensor; fewer bytes, more chunks.
  const size_t whole = stream_buffer_bytes(3, 50000, 8);
  EXPECT_EQ(plan_stream(3, 100000, 8, 2 * whole).chunks, 2u);
  EXPECT_EQ(plan_stream(3, 100000, 8, 2 * whole - 4000).chunks, 3u);
  EXPECT_GE(plan_stream(3, 100000, 8, 2 * whole / 10).chunks, 10u);
  EXPECT_EQ(plan_stream(3, 0, 8, 2 * whole).chunk_nnz, 0u);
}
#endif

// spt_context_set_device_streaming / _get_device_streaming, on any machine:
// AUTO by default, ALWAYS kept, a NULL context or an unknown value refused
// with the context unchanged.
TEST(DeviceStreamingOption, ArgumentChecks) {
  EXPECT_EQ(spt_context_set_device_streaming(nullptr, SPT_DEVICE_STREAMING_ALWAYS), SPT_ERR_INVALID_ARGUMENT);
  spt_device_streaming got = SPT_DEVICE_STREAMING_ALWAYS;
  EXPECT_EQ(spt_context_get_device_streaming(nullptr, &got), SPT_OK);
  EXPECT_EQ(got, SPT_DEVICE_STREAMING_AUTO);
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  EXPECT_EQ(spt_context_get_device_streaming(ctx, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_context_get_device_streaming(ctx, &got), SPT_OK);
  EXPECT_EQ(got, SPT_DEVICE_STREAMING_AUTO);
  EXPECT_EQ(spt_context_set_device_streaming(ctx, SPT_DEVICE_STREAMING_ALWAYS), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(spt_context_get_device_streaming(ctx, &got), SPT_OK);
  EXPECT_EQ(got, SPT_DEVICE_STREAMING_ALWAYS);
  EXPECT_EQ(spt_context_set_device_streaming(ctx, static_cast<spt_device_streaming>(2)), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("streaming"), std::string::npos) << spt_last_error(ctx);
  EXPECT_EQ(spt_context_set_device_streaming(ctx, static_cast<spt_device_streaming>(42)), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_context_get_device_streaming(ctx, &got), SPT_OK);
  EXPECT_EQ(got, SPT_DEVICE_STREAMING_ALWAYS);
  EXPECT_EQ(spt_context_set_device_streaming(ctx, SPT_DEVICE_STREAMING_AUTO), SPT_OK);
  EXPECT_EQ(spt_context_get_device_streaming(ctx, &got), SPT_OK);
  EXPECT_EQ(got, SPT_DEVICE_STREAMING_AUTO);
  spt_context_free(ctx);
}

template <typename T>
constexpr double stream_tolerance() {
  return sizeof(T) == 4 ? 1e-5 : 1e-12;
}

template <typename T>
void expect_same_mttkrp(const DenseMatrix<T>& got, const DenseMatrix<T>& want, const DenseMatrix<double>& scale,
                        const std::string& what) {
  for (spt_nnz i = 0; i < want.rows; ++i)
    for (spt_nnz j = 0; j < want.cols; ++j) {
      const double w = want(i, j), g = got(i, j);
      ASSERT_LE(std::abs(w - g), stream_tolerance<T>() * std::max(1.0, scale(i, j)))
          << what << " at (" << i << "," << j << "): want " << w << " got " << g;
    }
}

// One MTTKRP through the dispatcher on a fresh copy of x (no device copy
// cached from an earlier run) under `limit` (0: none), with its log.
template <typename T>
Probe mttkrp_under_limit(spt_backend backend, const spt_coo_s& x, const std::vector<DenseMatrix<T>>& factors,
                         uint32_t mode, uint64_t limit, DenseMatrix<T>& out, std::vector<std::string>* log_out = nullptr,
                         spt_device_streaming streaming = SPT_DEVICE_STREAMING_AUTO) {
  const spt_coo_s fresh = copy_coo(x, x.dtype());
  const ScopedMemoryLimit memory(limit);
  std::vector<std::string> lines;
  spt_context_s ctx;
  ctx.backend = backend;
  ctx.device_streaming = streaming;
  ctx.verbosity = 2;
  ctx.log = record_log_line;
  ctx.log_data = &lines;
  const std::vector<ConstMatRef<T>> refs = crefs(factors);
  for (auto& v : out.values) v = T(12345);  // unwritten rows show
  SPT_DISPATCH(ctx, mttkrp, fresh, refs.data(), mode, out.ref());
  Probe p;
  p.chunks = logged_chunks(lines);
  p.on_cpu = logged(lines, "runs on the CPU");
  if (log_out) *log_out = lines;
  return p;
}

template <typename T>
class CudaStreamedMttkrp : public ::testing::Test {};
using ValueTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CudaStreamedMttkrp, ValueTypes);

// Every mode, ranks 16 and 7 (vector and scalar kernels): 2, 3 and many
// chunks equal the in-memory GPU result and the CPU's.
TYPED_TEST(CudaStreamedMttkrp, TwoThreeAndManyChunksEqualInMemoryAndCpu) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  const spt_coo_s x = random_coo(dtype_of<T>(), RandomTensorSpec{{700, 500, 60}, 60000, 5});
  const uint64_t tensor_bytes = x.nnz * (3 * sizeof(uint32_t) + sizeof(T));
  for (spt_nnz rank : {spt_nnz(16), spt_nnz(7)}) {
    const auto factors = random_factors<T>(x.dims, rank, 40 + rank);
    for (uint32_t mode = 0; mode < x.order(); ++mode) {
      const std::string what = cat("rank ", rank, " mode ", mode);
      DenseMatrix<T> in_memory(x.dims[mode], rank), cpu(x.dims[mode], rank), streamed(x.dims[mode], rank);
      const Probe whole = mttkrp_under_limit<T>(SPT_BACKEND_CUDA, x, factors, mode, 0, in_memory);
      EXPECT_EQ(whole.chunks, 0u) << what << ": without a limit the tensor fits";
      mttkrp_under_limit<T>(SPT_BACKEND_CPU, x, factors, mode, 0, cpu);
      const DenseMatrix<double> scale = magnitudes(x, factors, mode);
      expect_same_mttkrp(in_memory, cpu, scale, what + " in memory vs CPU");
      // A limit of a quarter of the tensor (any format's copy is larger): streamed.
      {
        std::vector<std::string> lines;
        const Probe p = mttkrp_under_limit<T>(SPT_BACKEND_CUDA, x, factors, mode, tensor_bytes / 4, streamed, &lines);
        EXPECT_GE(p.chunks, 3u) << what;
        EXPECT_TRUE(logged(lines, "the tensor's device copy does not fit")) << what;
        expect_same_mttkrp(streamed, in_memory, scale, cat(what, ", ", p.chunks, " chunks (a quarter of the tensor)"));
      }
      auto probe = [&](uint64_t limit) {
        return mttkrp_under_limit<T>(SPT_BACKEND_AUTO, x, factors, mode, limit, streamed, nullptr,
                                     SPT_DEVICE_STREAMING_ALWAYS);
      };
      for (uint64_t target : {uint64_t(2), uint64_t(3), uint64_t(12)}) {
        Probe found;
        const uint64_t limit = limit_for_chunks(target, 1, 4 * tensor_bytes, probe, found);
        ASSERT_FALSE(found.on_cpu) << what << ": limit " << limit;
        ASSERT_GE(found.chunks, 2u) << what << ": limit " << limit << " was not streamed";
        if (target <= 3) EXPECT_EQ(found.chunks, target) << what << ": limit " << limit;
        else EXPECT_GE(found.chunks, 8u) << what << ": limit " << limit;
        // The run found last may be another limit's: run the chosen one again.
        std::vector<std::string> lines;
        const Probe p = mttkrp_under_limit<T>(SPT_BACKEND_CUDA, x, factors, mode, limit, streamed, &lines,
                                              SPT_DEVICE_STREAMING_ALWAYS);
        EXPECT_EQ(p.chunks, found.chunks) << what;
        EXPECT_TRUE(logged(lines, "MTTKRP mode " + std::to_string(mode) + " on the GPU, streamed")) << what;
        expect_same_mttkrp(streamed, in_memory, scale, cat(what, ", ", p.chunks, " chunks vs in memory"));
        expect_same_mttkrp(streamed, cpu, scale, cat(what, ", ", p.chunks, " chunks vs CPU"));
      }
    }
  }
}

// A limit that holds the tensor's chunks but not the factors and output:
// AUTO runs the CPU kernel with the note (its result), CUDA forced fails
// with an out-of-memory message.
TEST(CudaStreamedMttkrp, FactorsTooBigFallBackUnderAutoAndFailUnderCuda) {
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {20000, 300, 40};  // the mode-0 output alone is 20000 x 16 doubles
  spec.nnz = 20000;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const auto factors = random_factors<double>(x.dims, 16, 3);
  DenseMatrix<double> cpu(x.dims[0], 16), automatic(x.dims[0], 16);
  mttkrp_under_limit<double>(SPT_BACKEND_CPU, x, factors, 0, 0, cpu);
  const uint64_t limit = 100000;  // above the smallest ring, below the tensor and the output
  std::vector<std::string> lines;
  const Probe p = mttkrp_under_limit<double>(SPT_BACKEND_AUTO, x, factors, 0, limit, automatic, &lines);
  EXPECT_TRUE(p.on_cpu);
  EXPECT_TRUE(logged(lines, "note: MTTKRP (streamed) runs on the CPU: the CUDA device is out of memory"))
      << "AUTO should say why it fell back";
  expect_same_mttkrp(automatic, cpu, magnitudes(x, factors, 0), "CPU fallback");
  try {
    mttkrp_under_limit<double>(SPT_BACKEND_CUDA, x, factors, 0, limit, automatic);
    FAIL() << "MTTKRP with CUDA forced should fail when even the factors do not fit";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_DEVICE) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
}

/* --------------------------------- CP-ALS --------------------------------- */

// CP-ALS through the C API on a fresh copy of x under `limit` (0: none),
// from the given initial factors, tol 0, with the context's device
// streaming `streaming`, on device 0 alone: streaming is one device's path,
// and on a host with several GPUs and NCCL the default device list would
// split a large tensor across them instead.
template <typename T>
CpdRun run_cpd(spt_backend backend, const spt_coo_s& x, const std::vector<DenseMatrix<T>>& init, spt_index rank,
               int iters, uint64_t limit, spt_device_streaming streaming = SPT_DEVICE_STREAMING_AUTO) {
  const spt_coo_s fresh = copy_coo(x, x.dtype());
  const ScopedMemoryLimit memory(limit);
  CpdRun run;
  const ContextPtr ctx = logging_context(backend, 1, &run.log);
  EXPECT_EQ(spt_context_set_device_streaming(ctx.get(), streaming), SPT_OK) << spt_last_error(ctx.get());
  if (backend != SPT_BACKEND_CPU) EXPECT_EQ(spt_context_set_device(ctx.get(), 0), SPT_OK) << spt_last_error(ctx.get());
  run_cpd_als(run, ctx.get(), fresh, init, rank, iters, 0.0);
  return run;
}

// Same sweeps, every fit within `fit_tol` relative, and the models within
// `model_tol` of the largest model value at up to 500 of x's nonzeros
// (permutation-free: near-tied components may come out in another order).
template <typename T>
void expect_same_cpd(const CpdRun& got, const CpdRun& want, const spt_coo_s& x, double fit_tol, double model_tol,
                     const std::string& what) {
  ASSERT_NO_FATAL_FAILURE(expect_same_fits(got, want, fit_tol, 0.0, what));
  expect_same_model_at_nonzeros<T>(*got.k, *want.k, x, model_tol, what);
}

template <typename T>
class CudaStreamedCpAls : public ::testing::Test {};
TYPED_TEST_SUITE(CudaStreamedCpAls, ValueTypes);

// CP-ALS streamed in 2, 3 and many chunks: the in-memory GPU run's sweeps
// and the CPU's, to the GPU/CPU tolerances of the in-memory tests (the
// runs differ in summation order only).
TYPED_TEST(CudaStreamedCpAls, TwoThreeAndManyChunksEqualInMemoryAndCpu) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  const spt_coo_s x = random_coo(dtype_of<T>(), RandomTensorSpec{{900, 700, 50}, 50000, 9});
  const spt_index rank = 8;
  const int iters = 5;
  const auto init = positive_init<T>(x.dims, rank, 17);
  const CpdRun in_memory = run_cpd<T>(SPT_BACKEND_CUDA, x, init, rank, iters, 0);
  ASSERT_GE(in_memory.status, 0) << in_memory.error;
  EXPECT_EQ(logged_chunks(in_memory.log), 0u) << "without a limit the tensor fits";
  const CpdRun cpu = run_cpd<T>(SPT_BACKEND_CPU, x, init, rank, iters, 0);
  // Fits relative, models at the nonzeros relative to their largest value:
  // the tolerances of the in-memory GPU against CPU tests (test_cuda.cpp).
  const double fit_tol = sizeof(T) == 4 ? 1e-4 : 1e-9;
  const double model_tol = sizeof(T) == 4 ? 1e-2 : 1e-7;
  const uint64_t tensor_bytes = x.nnz * (3 * sizeof(uint32_t) + sizeof(T));
  auto probe = [&](uint64_t limit) {
    const CpdRun r = run_cpd<T>(SPT_BACKEND_CUDA, x, init, rank, 1, limit, SPT_DEVICE_STREAMING_ALWAYS);
    Probe p;
    p.chunks = logged_chunks(r.log);
    p.on_cpu = r.status < 0;  // out of memory (CUDA forced: no fallback)
    return p;
  };
  // The session's workspace reserve dominates: search up to it and beyond.
  const uint64_t hi = (uint64_t(256) << 20) + 4 * tensor_bytes;
  for (uint64_t target : {uint64_t(2), uint64_t(3), uint64_t(12)}) {
    Probe found;
    const uint64_t limit = limit_for_chunks(target, 1, hi, probe, found);
    ASSERT_FALSE(found.on_cpu) << "limit " << limit;
    ASSERT_GE(found.chunks, 2u) << "limit " << limit << " was not streamed";
    if (target <= 3) EXPECT_EQ(found.chunks, target) << "limit " << limit;
    else EXPECT_GE(found.chunks, 8u) << "limit " << limit;
    const CpdRun streamed = run_cpd<T>(SPT_BACKEND_CUDA, x, init, rank, iters, limit, SPT_DEVICE_STREAMING_ALWAYS);
    const std::string what = cat(found.chunks, " chunks");
    EXPECT_TRUE(logged(streamed.log, "CP-ALS on the GPU, streamed")) << what;
    EXPECT_EQ(logged_chunks(streamed.log), found.chunks) << what;
    expect_same_cpd<T>(streamed, in_memory, x, fit_tol, model_tol, what + " vs in memory");
    expect_same_cpd<T>(streamed, cpu, x, fit_tol, model_tol, what + " vs CPU");
  }
}

// A tensor larger than the limit but not than the session's workspace
// reserve (cp_als_library_reserve) plus a ring: found by bisection (the
// smallest limit that does not fail), then halfway up to the tensor's size.
// Streams without being forced and equals the in-memory GPU run.
TEST(CudaStreamedCpAls, TensorLargerThanTheLimitStreams) {
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {20000, 10000, 500};
  spec.nnz = 6000000;  // 120 MB of indices and values
  spec.seed = 21;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const spt_index rank = 8;
  const auto init = positive_init<double>(x.dims, rank, 23);
  const uint64_t tensor_bytes = x.nnz * (3 * sizeof(uint32_t) + sizeof(double));
  const CpdRun in_memory = run_cpd<double>(SPT_BACKEND_CUDA, x, init, rank, 3, 0);
  ASSERT_GE(in_memory.status, 0) << in_memory.error;
  auto probe = [&](uint64_t limit) {
    const CpdRun r = run_cpd<double>(SPT_BACKEND_CUDA, x, init, rank, 1, limit);
    Probe p;
    p.chunks = logged_chunks(r.log);
    p.on_cpu = r.status < 0;
    return p;
  };
  Probe lowest;
  const uint64_t lowest_limit = limit_for_chunks(UINT64_MAX - 1, 1, tensor_bytes - 1, probe, lowest);
  ASSERT_FALSE(lowest.on_cpu) << "nothing below the tensor's size streams";
  EXPECT_GE(lowest.chunks, 3u) << "limit " << lowest_limit;
  const uint64_t limit = lowest_limit + (tensor_bytes - lowest_limit) / 2;
  const CpdRun streamed = run_cpd<double>(SPT_BACKEND_CUDA, x, init, rank, 3, limit);
  EXPECT_TRUE(logged(streamed.log, "CP-ALS on the GPU, streamed (the tensor's device copy does not fit"));
  EXPECT_GE(logged_chunks(streamed.log), 3u);
  expect_same_cpd<double>(streamed, in_memory, x, 1e-9, 1e-7, cat("limit ", limit));
}

// A limit too small for the factors and workspace: AUTO runs the CPU loop
// with the note (the CPU's fits), CUDA forced is OUT_OF_MEMORY.
TEST(CudaStreamedCpAls, WorkspaceTooBigFallsBackUnderAutoAndFailsUnderCuda) {
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {3000, 2000, 20};
  spec.nnz = 40000;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const auto init = positive_init<double>(x.dims, 8, 9);
  const uint64_t limit = 500000;  // below the tensor, room for chunks, not for the workspace reserve
  const CpdRun cpu = run_cpd<double>(SPT_BACKEND_CPU, x, init, 8, 4, 0);
  const CpdRun automatic = run_cpd<double>(SPT_BACKEND_AUTO, x, init, 8, 4, limit);
  ASSERT_GE(automatic.status, 0) << automatic.error;
  EXPECT_TRUE(logged(automatic.log, "note: CP-ALS runs on the CPU: the CUDA device is out of memory"));
  EXPECT_FALSE(logged(automatic.log, "CP-ALS on the GPU, streamed"));
  ASSERT_EQ(automatic.k->fit_history.size(), cpu.k->fit_history.size());
  for (size_t i = 0; i < cpu.k->fit_history.size(); ++i)
    EXPECT_NEAR(automatic.k->fit_history[i], cpu.k->fit_history[i], 1e-12) << "sweep " << i + 1;
  const CpdRun forced = run_cpd<double>(SPT_BACKEND_CUDA, x, init, 8, 4, limit);
  EXPECT_EQ(forced.status, SPT_ERR_OUT_OF_MEMORY) << forced.error;
  EXPECT_NE(forced.error.find("out of memory"), std::string::npos) << forced.error;
}

}  // namespace
}  // namespace spt::test
