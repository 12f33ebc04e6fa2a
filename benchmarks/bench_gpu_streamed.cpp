// bench_gpu_streamed: the streamed GPU path (tensors larger than the device
// memory: the nonzeros stream from pinned host memory in chunks, copies
// overlapping the COO kernel) against the in-memory GPU path, on the same
// tensors: MTTKRP per mode through spt_mttkrp and CP-ALS per sweep through
// spt_cpd_als, backend CUDA. The streamed runs set the context's device
// streaming to ALWAYS (the path a tensor that does not fit takes, on a
// tensor that fits, so that both paths run on one tensor); --limit BYTES
// sets SPT_CUDA_MEMORY_LIMIT for them as well (smaller chunks, as on a
// smaller device).
//
//   bench_gpu_streamed FILE... [--rank 32] [--reps 5] [--iters 5]
//                      [--dtype float32|float64 (default float32)]
//                      [--limit BYTES]
//
// Per tensor, first the host link alone: pinning the index and value
// arrays in place (cudaHostRegister: pin_ms) and copying them to the device
// once (copy_ms, h2d_gbps: the link's bandwidth for these arrays). Then one
// JSON line per (tensor, mode) for the MTTKRP (bench "mttkrp_streamed":
// in_memory_ms and streamed_ms = medians of --reps calls after 2 warm-ups,
// wall clock around the call, factors in and output out included; a
// streamed call pins and unpins the arrays itself, so streamed_net_ms =
// streamed_ms - pin_ms; effective_gbps = tensor bytes / streamed_net_ms;
// overlap = (copy_ms + in_memory_ms - streamed_net_ms) / min(copy_ms,
// in_memory_ms): 1 when the copies hide the kernel entirely (or the other
// way round), 0 when they run one after the other; chunks from the log) and
// one line for CP-ALS (bench "cp_als_streamed": per-sweep medians of
// --iters sweeps, tol 0, same seed, for both paths; the streamed run pins
// once per run, outside the sweeps; effective_gbps = order x tensor bytes
// per sweep; the last fits of both, which must agree to rounding).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "core/coo.hpp"
#include "core/dtype.hpp"
#include "core/ktensor.hpp"
#include "dispatch/device_streamed.hpp"
#include "sptensor/sptensor.h"

using namespace spt_bench;

namespace {

struct Options {
  uint32_t rank = 32;
  int reps = 5, iters = 5;
  spt_dtype dtype = SPT_FLOAT32;
  std::string limit;  // SPT_CUDA_MEMORY_LIMIT of the streamed runs ("" = none)
  std::vector<std::string> files;
};

int usage() {
  std::fprintf(stderr,
               "usage: bench_gpu_streamed FILE... [--rank R] [--reps N] [--iters N] [--dtype float32|float64] "
               "[--limit BYTES]\n");
  return 2;
}

// Streams every GPU run of `gpu` (device streaming ALWAYS) under the limit,
// when given, for the scope. Throws Failure.
class StreamedScope {
 public:
  StreamedScope(spt_context* gpu, const std::string& limit) : gpu_(gpu) {
    check(spt_context_set_device_streaming(gpu, SPT_DEVICE_STREAMING_ALWAYS), gpu, "spt_context_set_device_streaming");
    if (!limit.empty()) setenv("SPT_CUDA_MEMORY_LIMIT", limit.c_str(), 1);
  }
  ~StreamedScope() {
    spt_context_set_device_streaming(gpu_, SPT_DEVICE_STREAMING_AUTO);
    unsetenv("SPT_CUDA_MEMORY_LIMIT");
  }
  StreamedScope(const StreamedScope&) = delete;
  StreamedScope& operator=(const StreamedScope&) = delete;

 private:
  spt_context* gpu_;
};

void record_log(void* data, int, const char* message) {
  static_cast<std::vector<std::string>*>(data)->push_back(message);
}

// The chunk count of the last "streamed" log line, 0 if none.
long long logged_chunks(const std::vector<std::string>& lines) {
  long long chunks = 0;
  for (const std::string& l : lines)
    if (const uint64_t n = spt::dispatch::detail::streamed_chunks(l)) chunks = static_cast<long long>(n);
  return chunks;
}

void cuda_check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw Failure(std::string(what) + ": " + cudaGetErrorString(err));
}

// Pinning the arrays in place and one copy of them to the device: pin_ms,
// copy_ms (median of 3 copies).
struct LinkTimes {
  double pin_ms = 0, copy_ms = 0;
};

LinkTimes time_link(const spt_coo_s& x) {
  std::vector<std::pair<const void*, size_t>> arrays;
  for (uint32_t m = 0; m < x.order(); ++m) arrays.emplace_back(x.ind[m], x.nnz * sizeof(spt_index));
  arrays.emplace_back(x.val, x.nnz * spt::dtype_size(x.dtype()));
  size_t largest = 0;
  for (const auto& a : arrays) largest = std::max(largest, a.second);
  LinkTimes t;
  const double t0 = now_seconds();
  for (const auto& a : arrays)
    cuda_check(cudaHostRegister(const_cast<void*>(a.first), a.second, cudaHostRegisterDefault), "cudaHostRegister");
  t.pin_ms = (now_seconds() - t0) * 1e3;
  void* device = nullptr;
  cuda_check(cudaMalloc(&device, largest), "cudaMalloc");
  std::vector<double> ms;
  for (int r = 0; r < 3; ++r) {
    const double c0 = now_seconds();
    for (const auto& a : arrays) cuda_check(cudaMemcpy(device, a.first, a.second, cudaMemcpyHostToDevice), "cudaMemcpy");
    ms.push_back((now_seconds() - c0) * 1e3);
  }
  t.copy_ms = median(ms);
  cudaFree(device);
  for (const auto& a : arrays) cudaHostUnregister(const_cast<void*>(a.first));
  return t;
}

struct CpdOutcome {
  double sweep_ms = 0, fit = 0;
  long long chunks = 0;
};

CpdOutcome run_cpd(spt_context* gpu, const spt_coo* x, uint32_t rank, int iters) {
  std::vector<std::string> lines;
  check(spt_context_set_log(gpu, record_log, &lines), gpu, "spt_context_set_log");
  spt_cpd_options opts;
  check(spt_cpd_options_init(&opts), gpu, "spt_cpd_options_init");
  opts.rank = rank;
  opts.max_iters = iters;
  opts.tol = 0.0;
  opts.seed = 7;
  spt_ktensor* k = nullptr;
  check(spt_cpd_als(gpu, x, &opts, &k), gpu, "spt_cpd_als");
  CpdOutcome out;
  out.sweep_ms = median(k->seconds_history) * 1e3;
  out.fit = k->fit;
  out.chunks = logged_chunks(lines);
  spt_ktensor_free(k);
  check(spt_context_set_log(gpu, nullptr, nullptr), gpu, "spt_context_set_log");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  use_built_cuda_plugin();
  Options o;
  const bool ok = read_gpu_command_line(argc, argv, o.rank, o.reps, o.dtype, o.files, [&](const std::string& a, auto& value) {
    const char* v = value();
    if (!v) return false;
    if (a == "--iters") o.iters = std::max(1, std::atoi(v));
    else if (a == "--limit") o.limit = v;
    else return false;
    return true;
  });
  if (!ok || o.rank == 0 || o.files.empty()) return usage();
  try {
    BenchEnv env;
    env.open(0);
    spt_backend_info info;
    const ContextPtr gpu_owned = backend_context(SPT_BACKEND_CUDA, &info);
    spt_context* gpu = gpu_owned.get();
    check(spt_context_set_verbosity(gpu, 1), gpu, "spt_context_set_verbosity");
    if (!info.cuda_available) {
      std::fprintf(stderr, "bench_gpu_streamed: no usable CUDA device: %s\n", info.reason);
      return 1;
    }
    for (const std::string& path : o.files) {
      std::unique_ptr<spt_coo, decltype(&spt_coo_free)> x(read_tensor(env.ctx, path, o.dtype), spt_coo_free);
      const spt_coo_s& xs = *x;
      const uint32_t order = xs.order();
      const double tensor_bytes = double(xs.nnz) * (order * sizeof(spt_index) + spt::dtype_size(o.dtype));
      const LinkTimes link = time_link(xs);
      const double h2d_gbps = tensor_bytes / (link.copy_ms * 1e-3) / 1e9;
      auto base = [&](const char* bench) {
        Record r;
        r.str("bench", bench).str("device", info.device_name).str("date", env.date).str("commit", env.commit);
        r.str("tensor", tensor_stem(path)).integer("order", order).integer("nnz", (long long)xs.nnz);
        r.integer("rank", o.rank).str("dtype", o.dtype == SPT_FLOAT32 ? "float32" : "float64");
        r.num("tensor_mb", tensor_bytes / 1e6).str("limit", o.limit.empty() ? "none" : o.limit);
        r.num("pin_ms", link.pin_ms).num("copy_ms", link.copy_ms).num("h2d_gbps", h2d_gbps);
        return r;
      };
      std::vector<MatrixPtr> factors;
      std::vector<const spt_matrix*> views;
      for (uint32_t m = 0; m < order; ++m) {
        factors.push_back(random_factor(env, o.dtype, xs.dims[m], o.rank, 100 + m));
        views.push_back(factors.back().get());
      }
      for (uint32_t mode = 0; mode < order; ++mode) {
        MatrixPtr out = random_factor(env, o.dtype, xs.dims[mode], o.rank, 1);
        auto call = [&] { check(spt_mttkrp(gpu, x.get(), views.data(), mode, out.get()), gpu, "spt_mttkrp"); };
        const double in_memory_ms = time_calls(o.reps, call).median_ms;
        double streamed_ms = 0;
        std::vector<std::string> lines;
        {
          StreamedScope scope(gpu, o.limit);
          check(spt_context_set_log(gpu, record_log, &lines), gpu, "spt_context_set_log");
          streamed_ms = time_calls(o.reps, call).median_ms;
          check(spt_context_set_log(gpu, nullptr, nullptr), gpu, "spt_context_set_log");
        }
        const double net_ms = std::max(streamed_ms - link.pin_ms, 1e-6);
        const double overlap = (link.copy_ms + in_memory_ms - net_ms) / std::min(link.copy_ms, in_memory_ms);
        base("mttkrp_streamed")
            .integer("mode", mode)
            .num("in_memory_ms", in_memory_ms)
            .num("streamed_ms", streamed_ms)
            .num("streamed_net_ms", net_ms)
            .num("effective_gbps", tensor_bytes / (net_ms * 1e-3) / 1e9)
            .num("overlap", overlap)
            .integer("chunks", logged_chunks(lines))
            .print();
      }
      const CpdOutcome in_memory = run_cpd(gpu, x.get(), o.rank, o.iters);
      CpdOutcome streamed;
      {
        StreamedScope scope(gpu, o.limit);
        streamed = run_cpd(gpu, x.get(), o.rank, o.iters);
      }
      base("cp_als_streamed")
          .integer("iters", o.iters)
          .num("in_memory_sweep_ms", in_memory.sweep_ms)
          .num("streamed_sweep_ms", streamed.sweep_ms)
          .num("effective_gbps", order * tensor_bytes / (streamed.sweep_ms * 1e-3) / 1e9)
          .integer("chunks", streamed.chunks)
          .num("in_memory_fit", in_memory.fit, 12)
          .num("streamed_fit", streamed.fit, 12)
          .print();
    }
  } catch (const Failure& f) {
    std::fprintf(stderr, "bench_gpu_streamed: %s\n", f.what());
    return 1;
  }
  return 0;
}
