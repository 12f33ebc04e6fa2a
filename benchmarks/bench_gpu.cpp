// GPU COO, HiCOO, F-COO and HB-CSF MTTKRP benchmark (needs the CUDA plugin build and a device).
//
//   bench_gpu [--ranks 16,32] [--repeats 20] [--synthetic NNZ] [--json FILE]
//             [--cpd ITERS [--cpd-threads N] [--cpd-only]] TENSOR...
//
// Per tensor, mode and rank (float32): the kernel alone on the copy sorted
// by the mode (what the plugin runs; the one-time sort is reported apart,
// and the kernel on the unsorted copy for comparison), timed with CUDA
// events around the launch (output zeroed outside the timed region), median
// of the repeats after 3 warm-ups; effective bandwidth = (tensor bytes
// (indices + values) + factors read once + output written once) / time, as a
// fraction of 3.0 TB/s (the H100's measured device-to-device copy rate,
// ../shared/TARGETS.md); and the whole spt_mttkrp call with backend CUDA
// (factor copies in, output copy out; the tensor's device copy cached),
// median of 5. The first repeat's output is checked against the CPU kernel
// (relative Frobenius error). One JSON line per measurement to --json
// (spt_bench::Record: nlohmann::json, six significant digits, fits eight).
//
// HiCOO (bench "gpu_mttkrp_hicoo"): the tensor converted with the CPU rule's
// block size (hicoo::from_coo defaults), uploaded once; per mode and rank
// the kernel alone (cuda/mttkrp_hicoo.cu, default window rule, timed as
// above), its bytes = the HiCOO arrays the kernel reads (bptr, block
// indices, the mode's next-dense table, element indices, values) + factors
// read once + output written once; for comparison the shared-memory window
// for every block (a second copy uploaded with window_reuse 1; with and
// without staged factor windows) and no shared memory at all (atomics
// only); the whole spt_mttkrp_hicoo path (backend CUDA), and the error
// against the CPU.
//
// HB-CSF (bench "gpu_mttkrp_hbcsf"; orders 3..8): per mode the HB-CSF
// rooted at that mode (default parameters: fiber_threshold 128,
// slice_split_nnz 512), built once (host conversion timed) and uploaded
// once, and the plain B-CSF of the same mode for comparison; per rank the
// kernel launch alone (cuda/mttkrp_hbcsf.cu: one fused launch, B-CSF by
// leaf chunks), bytes = the format's arrays + factors read once + output
// written once; the whole spt_mttkrp_hbcsf path
// (backend CUDA), and the error against the CPU.
// "One tree plus a second kernel" (bench "gpu_mttkrp_hbcsf_nonroot"): every
// mode but the shortest from the HB-CSF rooted at the shortest mode
// (launch_mttkrp_hbcsf_nonroot: atomic output rows; the plain B-CSF too),
// with the kernel time of the mode's own tree, the one tree's bytes and the
// per-mode trees' bytes summed (storage against time), and the error.
//
// With --cpd ITERS (> 0): per tensor and rank, CP-ALS seconds per iteration
// (median of the sweeps' wall times, float32, tol 0, the same seeded random
// init) on the GPU (backend CUDA: the whole loop on the device, COO) and on
// the CPU (backend CPU, --cpd-threads threads, default 16, format AUTO as
// users get it), and the final fits; also the GPU run on F-COO
// (format "fcoo"); JSON bench "cpd_iter".
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "algo/cp_als.hpp"
#include "bench_common.hpp"
#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/fcoo.hpp"
#include "core/hbcsf.hpp"
#include "core/hicoo.hpp"
#include "core/ktensor.hpp"
#include "core/matrix.hpp"
#include "dispatch/dispatch.hpp"
#include "dispatch/gpu_format.hpp"
#include "kernels/kernels.hpp"
#include "mttkrp.cuh"
#include "fcoo.cuh"
#include "dispatch/plugin_hbcsf.hpp"
#include "hbcsf_abi_view.cuh"
#include "mttkrp_hbcsf.cuh"
#include "mttkrp_hicoo.cuh"

namespace {

using spt_bench::Record;

constexpr double kCopyBandwidth = 3.0e12;  // bytes/s, H100 device-to-device (read + write)

#define CHECK(call)                                                                             \
  do {                                                                                          \
    cudaError_t e_ = (call);                                                                    \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                                             \
    }                                                                                           \
  } while (0)

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::vector<int> parse_list(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p;) {
    out.push_back(std::atoi(p));
    const char* c = std::strchr(p, ',');
    if (!c) break;
    p = c + 1;
  }
  return out;
}

// Zipf(alpha = 1) indices per mode with labels randomly permuted (the
// TARGETS.md synthetic tensor's recipe; repeated coordinates are not removed).
// Generated on the benchmark machine, never carried: chunks of 1M nonzeros
// draw from their own generator (seeded by seed, mode and chunk), so the
// tensor is the same for any thread count and 50M+ nonzeros take seconds.
spt_coo_s synthetic_zipf(spt_nnz nnz, const std::vector<spt_index>& dims, uint64_t seed) {
  spt_coo_s x;
  x.init_owned(SPT_FLOAT32, dims, nnz);
  constexpr spt_nnz kChunk = spt_nnz(1) << 20;
  const long long chunks = static_cast<long long>((nnz + kChunk - 1) / kChunk);
  auto chunk_seed = [seed](uint64_t stream, uint64_t chunk) {
    return seed * 0x9E3779B97F4A7C15ull ^ (stream + 1) * 0xBF58476D1CE4E5B9ull ^ (chunk + 1) * 0x94D049BB133111EBull;
  };
  for (uint32_t m = 0; m < dims.size(); ++m) {
    std::vector<double> cdf(dims[m]);
    double sum = 0;
    for (spt_index i = 0; i < dims[m]; ++i) cdf[i] = (sum += 1.0 / (i + 1.0));
    std::vector<spt_index> label(dims[m]);
    for (spt_index i = 0; i < dims[m]; ++i) label[i] = i;
    std::mt19937_64 label_rng(chunk_seed(m, ~0ull));
    std::shuffle(label.begin(), label.end(), label_rng);
    spt_index* ind = x.mutable_ind(m);
#pragma omp parallel for schedule(dynamic, 1)
    for (long long c = 0; c < chunks; ++c) {
      std::mt19937_64 rng(chunk_seed(m, static_cast<uint64_t>(c)));
      std::uniform_real_distribution<double> unit(0.0, 1.0);
      const spt_nnz end = std::min(nnz, static_cast<spt_nnz>(c + 1) * kChunk);
      for (spt_nnz k = static_cast<spt_nnz>(c) * kChunk; k < end; ++k) {
        const double u = unit(rng) * sum;
        const size_t i = std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
        ind[k] = label[std::min<size_t>(i, dims[m] - 1)];
      }
    }
  }
  float* v = x.mutable_values<float>();
#pragma omp parallel for schedule(dynamic, 1)
  for (long long c = 0; c < chunks; ++c) {
    std::mt19937_64 rng(chunk_seed(dims.size(), static_cast<uint64_t>(c)));
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const spt_nnz end = std::min(nnz, static_cast<spt_nnz>(c + 1) * kChunk);
    for (spt_nnz k = static_cast<spt_nnz>(c) * kChunk; k < end; ++k) v[k] = static_cast<float>(unit(rng));
  }
  return x;
}

// An HB-CSF handle on the device (block = its copy), with the pointer
// tables its host view needed.
struct HbcsfDevice {
  void* block = nullptr;
  spt::cuda::DeviceHbcsfRef ref;
};

HbcsfDevice upload_hbcsf(const spt_hbcsf_s& h) {
  const spt::dispatch::PluginHbcsf p = spt::dispatch::plugin_view_of(h);
  const spt::cuda::HostHbcsfView v = spt::cuda::host_view_of(p.view);
  HbcsfDevice d;
  CHECK(cudaMalloc(&d.block, spt::cuda::hbcsf_copy_bytes(v)));
  CHECK(spt::cuda::hbcsf_upload(v, d.block, &d.ref));
  return d;
}

struct Bench {
  int repeats = 20;
  std::vector<int> ranks = {16, 32};
  FILE* json = nullptr;
  int multiprocessors = 132;
  std::string device;
  int cpd_iters = 0;     // --cpd: sweeps per CP-ALS run (0 = no CP-ALS timing)
  int cpd_threads = 16;  // --cpd-threads: CPU threads of the CPU CP-ALS
  bool cpd_only = false; // --cpd-only: skip the MTTKRP measurements
};

// CP-ALS seconds per sweep on one backend: median of the sweeps' times.
struct CpdTiming {
  double seconds_per_iter = 0.0;
  double fit = 0.0;
  double total_seconds = 0.0;
  std::string error;
};

CpdTiming time_cpd(const spt_coo_s& x, spt_backend backend, int threads, int rank, int iters,
                   spt_tensor_format format = SPT_TENSOR_FORMAT_AUTO) {
  spt_context_s ctx;
  ctx.backend = backend;
  ctx.threads = threads;
  spt_cpd_options opts;
  spt_cpd_options_init(&opts);
  opts.rank = static_cast<spt_index>(rank);
  opts.max_iters = iters;
  opts.tol = 0.0;
  opts.seed = 7;
  opts.format = format;
  CpdTiming t;
  spt_ktensor_s k;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    spt::cp_als(ctx, x, opts, k);
  } catch (const std::exception& e) {
    t.error = e.what();
    return t;
  }
  t.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  t.seconds_per_iter = median(k.seconds_history);
  t.fit = k.fit;
  return t;
}

// A "cpd_iter" JSON line (fits with 8 significant digits).
Record cpd_record(const Bench& b, const std::string& name, const spt_coo_s& x, int rank, const CpdTiming& t,
                  const char* backend, const char* format, int threads, const std::string& device) {
  Record r;
  r.str("bench", "cpd_iter")
      .str("tensor", name)
      .integer("order", x.order())
      .integer("nnz", static_cast<long long>(x.nnz))
      .integer("mode", -1)
      .integer("rank", rank)
      .str("dtype", "float32")
      .str("backend", backend)
      .str("format", format)
      .integer("threads", threads)
      .integer("iterations", b.cpd_iters)
      .num("seconds_per_iter_median", t.seconds_per_iter)
      .num("total_seconds", t.total_seconds)
      .num("fit", t.fit, 8)
      .str("device", device);
  return r;
}

// The timing keys of a kernel measurement's JSON line: median and least
// kernel time over `repeats` launches, the bytes a launch moves and the
// bandwidth that gives.
Record add_timing(Record r, double median_ms, double min_ms, int repeats, double bytes) {
  const double bw = bytes / (median_ms * 1e-3);
  r.num("kernel_ms_median", median_ms)
      .num("kernel_ms_min", min_ms)
      .integer("repeats", repeats)
      .integer("bytes", std::llround(bytes))
      .num("gbytes_per_s", bw / 1e9)
      .num("fraction_of_3TBps", bw / kCopyBandwidth);
  return r;
}

// The leading keys of a kernel measurement's JSON line (float32).
Record kernel_record(const char* bench, const std::string& name, uint32_t order, spt_nnz nnz, uint32_t mode,
                     int rank) {
  Record r;
  r.str("bench", bench)
      .str("tensor", name)
      .integer("order", order)
      .integer("nnz", static_cast<long long>(nnz))
      .integer("mode", mode)
      .integer("rank", rank)
      .str("dtype", "float32");
  return r;
}

void run_cpd(const Bench& b, const std::string& name, const spt_coo_s& x) {
  for (int rank : b.ranks) {
    const CpdTiming gpu = time_cpd(x, SPT_BACKEND_CUDA, b.cpd_threads, rank, b.cpd_iters);
    const CpdTiming cpu = time_cpd(x, SPT_BACKEND_CPU, b.cpd_threads, rank, b.cpd_iters);
    // The whole sweep on the device on F-COO (one copy per mode; the
    // timing includes building them once, reported in total_seconds).
    const CpdTiming fcoo = time_cpd(x, SPT_BACKEND_CUDA, b.cpd_threads, rank, b.cpd_iters, SPT_TENSOR_FORMAT_FCOO);
    std::printf("%-24s CP-ALS rank %2d float32  GPU F-COO %8.4f s/iter (fit %.6f, %.2f s total)%s\n", name.c_str(),
                rank, fcoo.seconds_per_iter, fcoo.fit, fcoo.total_seconds,
                fcoo.error.empty() ? "" : ("  error: " + fcoo.error).c_str());
    if (b.json) cpd_record(b, name, x, rank, fcoo, "cuda", "fcoo", 0, b.device).print(b.json);
    std::printf("%-24s CP-ALS rank %2d float32  GPU %8.4f s/iter (fit %.6f, %.2f s total)  CPU %d threads %8.4f "
                "s/iter (fit %.6f, %.2f s total)  speed-up %.1fx%s%s\n",
                name.c_str(), rank, gpu.seconds_per_iter, gpu.fit, gpu.total_seconds, b.cpd_threads,
                cpu.seconds_per_iter, cpu.fit, cpu.total_seconds,
                gpu.seconds_per_iter > 0 ? cpu.seconds_per_iter / gpu.seconds_per_iter : 0.0,
                gpu.error.empty() ? "" : ("  GPU error: " + gpu.error).c_str(),
                cpu.error.empty() ? "" : ("  CPU error: " + cpu.error).c_str());
    if (b.json) {
      for (int gpu_side = 1; gpu_side >= 0; --gpu_side) {
        cpd_record(b, name, x, rank, gpu_side ? gpu : cpu, gpu_side ? "cuda" : "cpu", gpu_side ? "coo" : "auto",
                   gpu_side ? 0 : b.cpd_threads, gpu_side ? b.device : "host")
            .print(b.json);
      }
      std::fflush(b.json);
    }
  }
}

void run_tensor(const Bench& b, const std::string& name, const spt_coo_s& x) {
  const uint32_t order = x.order();
  const spt_nnz nnz = x.nnz;
  // Device copy of the tensor: indices mode-major, then values.
  uint32_t* d_ind = nullptr;
  float* d_val = nullptr;
  CHECK(cudaMalloc(reinterpret_cast<void**>(&d_ind), size_t(order) * nnz * sizeof(uint32_t)));
  CHECK(cudaMalloc(reinterpret_cast<void**>(&d_val), nnz * sizeof(float)));
  for (uint32_t m = 0; m < order; ++m)
    CHECK(cudaMemcpy(d_ind + size_t(m) * nnz, x.ind[m], nnz * sizeof(uint32_t), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_val, x.val, nnz * sizeof(float), cudaMemcpyHostToDevice));
  const spt::cuda::DeviceCooRef unsorted{order, nnz, d_ind, d_val};
  // Copies sorted by each mode, as the plugin makes them (timed once).
  std::vector<spt::cuda::DeviceCooRef> sorted(order);
  std::vector<void*> sorted_blocks(order, nullptr);
  std::vector<double> sort_ms(order, 0.0);
  for (uint32_t m = 0; m < order; ++m) {
    CHECK(cudaMalloc(&sorted_blocks[m], spt::cuda::coo_copy_bytes(order, nnz, sizeof(float))));
    cudaEvent_t a, z;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&z));
    CHECK(cudaEventRecord(a));
    CHECK(spt::cuda::sort_coo_by_mode(unsorted, sizeof(float), m, x.dims[m], sorted_blocks[m], &sorted[m], 0));
    CHECK(cudaEventRecord(z));
    CHECK(cudaEventSynchronize(z));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, z));
    sort_ms[m] = ms;
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(z));
  }

  // The HiCOO copy (CPU rule's B), uploaded once.
  const auto hicoo_t0 = std::chrono::steady_clock::now();
  const spt_hicoo_s h = spt::hicoo::from_coo(x, spt::hicoo::Params{}, 16);
  const double hicoo_convert_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - hicoo_t0).count();
  std::vector<const uint32_t*> h_binds(order);
  std::vector<const uint8_t*> h_einds(order);
  for (uint32_t m = 0; m < order; ++m) {
    h_binds[m] = h.binds[m].data();
    h_einds[m] = h.einds[m].data();
  }
  spt::cuda::HostHicooView hview;
  hview.order = order;
  hview.block_bits = h.block_bits;
  hview.nnz = h.nnz;
  hview.num_blocks = h.num_blocks();
  hview.dims = h.dims.data();
  hview.bptr = h.bptr.data();
  hview.binds = h_binds.data();
  hview.einds = h_einds.data();
  hview.values = h.val.data();
  hview.value_size = sizeof(float);
  const bool hicoo_ok = order <= spt::cuda::kHicooMaxOrder && h.num_blocks() < (uint64_t(1) << 32);
  // Two copies: the default window rule, and the window for every block
  // with enough nonzeros (window_reuse 1), for comparison.
  void* d_hicoo = nullptr;
  void* d_hicoo_window = nullptr;
  spt::cuda::DeviceHicooRef hicoo_ref, hicoo_window_ref;
  if (hicoo_ok) {
    const size_t hicoo_bytes = spt::cuda::hicoo_copy_bytes(order, h.nnz, h.num_blocks(), sizeof(float));
    CHECK(cudaMalloc(&d_hicoo, hicoo_bytes));
    CHECK(spt::cuda::hicoo_upload(hview, d_hicoo, &hicoo_ref));
    CHECK(cudaMalloc(&d_hicoo_window, hicoo_bytes));
    CHECK(spt::cuda::hicoo_upload(hview, d_hicoo_window, &hicoo_window_ref, 1));
  }
  const double hicoo_format_bytes = double(h.num_blocks() + 1) * 8 + double(h.num_blocks()) * 4 * (order + 1) +
                                    double(h.nnz) * (order + sizeof(float));
  std::printf("%-24s HiCOO: B = %u, %llu blocks (%.1f nonzeros per block), %.1f MB (COO %.1f MB), converted in %.2f s\n",
              name.c_str(), h.block_size(), (unsigned long long)h.num_blocks(), double(nnz) / std::max<double>(1, h.num_blocks()),
              hicoo_format_bytes / 1e6, double(nnz) * (order * 4 + 4) / 1e6, hicoo_convert_s);

  // F-COO (bench "gpu_mttkrp_fcoo"): per mode the format built once (the
  // rule's threadlen; the host conversion timed), re-cut to threadlen 8, 16
  // and 32 (only the start flags and warp table change) and uploaded, for
  // the threadlen sweep behind the rule.
  struct FcooDevice {
    uint32_t threadlen = 0;
    void* block = nullptr;
    spt::cuda::DeviceFcooRef ref;
    double format_bytes = 0;
  };
  // The rule depends on the rank (row bytes) and the mode's slice count (the
  // format model's choice, below); the sweep times every threadlen.
  const std::vector<spt_nnz> mode_slices = spt::distinct_indices_per_mode(x, 16);
  auto choices_for = [&](int rank) {
    return spt::dispatch::gpu_mttkrp_choices(x, mode_slices, uint64_t(rank) * sizeof(float), b.multiprocessors);
  };
  const bool fcoo_ok = order - 1 <= spt::cuda::kFcooMaxProductModes;
  std::vector<std::vector<FcooDevice>> fcoo_dev(order);
  std::vector<double> fcoo_convert_s(order, 0.0);
  for (uint32_t mode = 0; fcoo_ok && mode < order; ++mode) {
    const auto t0 = std::chrono::steady_clock::now();
    spt_fcoo_s f = spt::fcoo::from_coo(x, SPT_FCOO_MTTKRP, mode, 8, 16);
    fcoo_convert_s[mode] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (uint32_t tl : {8u, 16u, 32u}) {
      spt::fcoo::set_threadlen(f, tl);
      std::vector<const uint32_t*> ind;
      for (const auto& a : f.product_ind) ind.push_back(a.data());
      spt::cuda::HostFcooView v;
      v.nnz = f.nnz;
      v.segments = f.segments;
      v.threadlen = tl;
      v.num_product_modes = order - 1;
      v.product_ind = ind.data();
      v.bf = f.bf.data();
      v.sf = f.sf.data();
      v.group_first_segment = f.group_first_segment.data();
      v.segment_rows = f.segment_ind[0].data();
      v.values = f.val.data();
      v.value_size = sizeof(float);
      FcooDevice d;
      d.threadlen = tl;
      d.format_bytes = double(f.bytes());
      CHECK(cudaMalloc(&d.block, spt::cuda::fcoo_copy_bytes(v)));
      CHECK(spt::cuda::fcoo_upload(v, d.block, &d.ref));
      fcoo_dev[mode].push_back(d);
    }
  }

  // HB-CSF and plain B-CSF per mode (root = the mode), built and uploaded once.
  const bool hbcsf_ok = order >= 3 && order <= spt::cuda::kHbcsfMaxOrder;
  std::vector<spt_hbcsf_s> hbcsf(hbcsf_ok ? order : 0), bcsf(hbcsf_ok ? order : 0);
  std::vector<HbcsfDevice> hbcsf_dev(hbcsf.size()), bcsf_dev(hbcsf.size());
  std::vector<double> hbcsf_convert_s(hbcsf.size(), 0.0);
  for (uint32_t mode = 0; mode < hbcsf.size(); ++mode) {
    const auto t0 = std::chrono::steady_clock::now();
    hbcsf[mode] = spt::hbcsf::from_coo(x, mode, spt::hbcsf::Params{}, 16);
    hbcsf_convert_s[mode] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    spt::hbcsf::Params plain;
    plain.flags = SPT_HBCSF_PLAIN_BCSF;
    bcsf[mode] = spt::hbcsf::from_coo(x, mode, plain, 16);
    hbcsf_dev[mode] = upload_hbcsf(hbcsf[mode]);
    bcsf_dev[mode] = upload_hbcsf(bcsf[mode]);
    const spt_hbcsf_s& h = hbcsf[mode];
    std::printf("%-24s HB-CSF mode %u: COO %llu, CSL %llu, B-CSF %llu nonzeros; %llu segments (%llu fibers split), "
                "%llu units (%llu slices split), %.1f MB, converted in %.2f s\n",
                name.c_str(), mode, (unsigned long long)h.coo_nnz(), (unsigned long long)h.csl_nnz(),
                (unsigned long long)h.bcsf_nnz(), (unsigned long long)h.segments(),
                (unsigned long long)h.split_fibers, (unsigned long long)h.units(),
                (unsigned long long)h.split_slices, h.bytes() / 1e6, hbcsf_convert_s[mode]);
  }
  // "One tree plus a second kernel": the tree rooted at the shortest mode
  // (the first of equals) serves every other mode through the non-root
  // kernels; against it, the trees of every mode (their bytes summed).
  uint32_t tree_root = 0;
  double per_mode_tree_bytes = 0;
  for (uint32_t mode = 0; mode < hbcsf.size(); ++mode) {
    if (x.dims[mode] < x.dims[tree_root]) tree_root = mode;
    per_mode_tree_bytes += double(hbcsf[mode].bytes());
  }

  for (int rank : b.ranks) {
    std::vector<spt::DenseMatrix<float>> factors;
    std::vector<float*> d_factors(order, nullptr);
    std::mt19937_64 rng(42 + rank);
    std::uniform_real_distribution<float> unit(-1.f, 1.f);
    for (uint32_t m = 0; m < order; ++m) {
      factors.emplace_back(x.dims[m], rank);
      for (auto& v : factors.back().values) v = unit(rng);
      CHECK(cudaMalloc(reinterpret_cast<void**>(&d_factors[m]), factors[m].values.size() * sizeof(float)));
      CHECK(cudaMemcpy(d_factors[m], factors[m].values.data(), factors[m].values.size() * sizeof(float),
                       cudaMemcpyHostToDevice));
    }
    std::vector<spt::ConstMatRef<float>> refs;
    for (auto& f : factors) refs.push_back(f.cref());
    // The GPU format model's choice per mode (dispatch/gpu_format.hpp),
    // for benchmarks/format_choice_report.py to hold against the timings.
    const std::vector<spt::dispatch::GpuMttkrpChoice> choice = choices_for(rank);
    // The bench-name suffix of a format (gpu_mttkrp_<key>), for the report.
    auto format_key = [](spt::dispatch::GpuMttkrpFormat f) {
      switch (f) {
        case spt::dispatch::GpuMttkrpFormat::fcoo: return "fcoo";
        case spt::dispatch::GpuMttkrpFormat::hbcsf: return "hbcsf";
        default: return "coo";
      }
    };
    for (uint32_t mode = 0; b.json && mode < order; ++mode)
      Record()
          .str("bench", "gpu_format_choice")
          .str("tensor", name)
          .integer("order", order)
          .integer("nnz", static_cast<long long>(nnz))
          .integer("mode", mode)
          .integer("rank", rank)
          .integer("nonempty_slices", static_cast<long long>(mode_slices[mode]))
          .num("mean_slice_nnz", mode_slices[mode] ? double(nnz) / double(mode_slices[mode]) : 0.0)
          .str("choice", format_key(choice[mode].format))
          .str("device", b.device)
          .print(b.json);
    for (uint32_t mode = 0; mode < order; ++mode) {
      const size_t out_elems = size_t(x.dims[mode]) * rank;
      float* d_out = nullptr;
      CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out), out_elems * sizeof(float)));
      cudaEvent_t start, stop;
      CHECK(cudaEventCreate(&start));
      CHECK(cudaEventCreate(&stop));
      // Kernel times (ms) of `launch` (returns the launch's cudaError_t) on a
      // zeroed output: 3 warm-up runs, then b.repeats timed ones.
      auto time_launch = [&](auto&& launch) {
        std::vector<double> times;
        for (int r = -3; r < b.repeats; ++r) {
          CHECK(cudaMemset(d_out, 0, out_elems * sizeof(float)));
          CHECK(cudaEventRecord(start));
          CHECK(launch());
          CHECK(cudaEventRecord(stop));
          CHECK(cudaEventSynchronize(stop));
          float ms = 0;
          CHECK(cudaEventElapsedTime(&ms, start, stop));
          if (r >= 0) times.push_back(ms);
        }
        return times;
      };
      auto time_kernel = [&](const spt::cuda::DeviceCooRef& ref) {
        return time_launch([&] {
          return spt::cuda::launch_mttkrp_coo<float>(ref, d_factors.data(), mode, rank, d_out, b.multiprocessors, 0);
        });
      };
      const double unsorted_ms = median(time_kernel(unsorted));
      const std::vector<double> times = time_kernel(sorted[mode]);  // last: its output is checked
      // Check the last output against the CPU kernel.
      std::vector<float> gpu(out_elems);
      CHECK(cudaMemcpy(gpu.data(), d_out, out_elems * sizeof(float), cudaMemcpyDeviceToHost));
      spt::DenseMatrix<float> cpu(x.dims[mode], rank);
      spt::kernels::cpu::mttkrp(spt::kernels::Exec{16}, x, refs.data(), mode, cpu.ref());
      double num = 0, den = 0;
      for (size_t i = 0; i < out_elems; ++i) {
        num += double(gpu[i] - cpu.values[i]) * (gpu[i] - cpu.values[i]);
        den += double(cpu.values[i]) * cpu.values[i];
      }
      const double rel_err = std::sqrt(num / std::max(den, 1e-300));
      const auto cpu_reference = cpu.values;
      // Whole API call, backend CUDA (tensor copy cached after the first).
      spt_context_s ctx;
      ctx.backend = SPT_BACKEND_CUDA;
      std::vector<double> api_times;
      for (int r = -1; r < 5; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        SPT_DISPATCH(ctx, mttkrp, x, refs.data(), mode, cpu.ref());
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (r >= 0) api_times.push_back(ms);
      }
      const double ms = median(times);
      double bytes = double(nnz) * (order * sizeof(uint32_t) + sizeof(float));
      for (uint32_t m = 0; m < order; ++m) bytes += double(x.dims[m]) * rank * sizeof(float);  // factors + output
      const double bw = bytes / (ms * 1e-3);
      std::printf("%-24s mode %u rank %2d  sorted %7.3f ms  %6.1f GB/s = %5.1f%% of 3 TB/s  unsorted %7.3f ms  sort %6.3f ms  api %7.3f ms  err %.1e\n",
                  name.c_str(), mode, rank, ms, bw / 1e9, 100 * bw / kCopyBandwidth, unsorted_ms, sort_ms[mode],
                  median(api_times), rel_err);
      if (b.json)
        add_timing(kernel_record("gpu_mttkrp_coo", name, order, nnz, mode, rank),
                   ms, *std::min_element(times.begin(), times.end()), b.repeats, bytes)
            .num("api_ms_median", median(api_times))
            .num("rel_err_vs_cpu", rel_err)
            .num("unsorted_kernel_ms_median", unsorted_ms)
            .num("sort_ms_once", sort_ms[mode])
            .str("device", b.device)
            .print(b.json);
      if (hicoo_ok) {
        auto time_hicoo = [&](const spt::cuda::DeviceHicooRef& ref, spt::cuda::HicooSharedUse use,
                              spt::cuda::HicooLaunchPlan* plan) {
          return time_launch([&] {
            return spt::cuda::launch_mttkrp_hicoo<float>(ref, d_factors.data(), mode, rank, d_out,
                                                         b.multiprocessors, 0, plan, use);
          });
        };
        spt::cuda::HicooLaunchPlan plan;
        using Use = spt::cuda::HicooSharedUse;
        const double atomics_ms = median(time_hicoo(hicoo_ref, Use::atomics_only, nullptr));
        const double window_ms = median(time_hicoo(hicoo_window_ref, Use::automatic, nullptr));
        const double no_staging_ms = median(time_hicoo(hicoo_window_ref, Use::no_staging, nullptr));
        const std::vector<double> htimes = time_hicoo(hicoo_ref, Use::automatic, &plan);  // checked
        std::vector<float> hgpu(out_elems);
        CHECK(cudaMemcpy(hgpu.data(), d_out, out_elems * sizeof(float), cudaMemcpyDeviceToHost));
        double hnum = 0;
        for (size_t i = 0; i < out_elems; ++i)
          hnum += double(hgpu[i] - cpu_reference[i]) * (hgpu[i] - cpu_reference[i]);
        const double hicoo_err = std::sqrt(hnum / std::max(den, 1e-300));
        spt_context_s hctx;
        hctx.backend = SPT_BACKEND_CUDA;
        spt::DenseMatrix<float> hout(x.dims[mode], rank);
        std::vector<double> hapi;
        for (int r = -1; r < 5; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          SPT_DISPATCH(hctx, mttkrp_hicoo, h, refs.data(), mode, hout.ref());
          const double elapsed =
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          if (r >= 0) hapi.push_back(elapsed);
        }
        const double hms = median(htimes);
        double hbytes = hicoo_format_bytes;
        for (uint32_t m = 0; m < order; ++m) hbytes += double(x.dims[m]) * rank * sizeof(float);
        const double hbw = hbytes / (hms * 1e-3);
        std::printf("%-24s mode %u rank %2d  HiCOO  %7.3f ms  %6.1f GB/s = %5.1f%% of 3 TB/s  (COO sorted %7.3f ms)  "
                    "window-all %7.3f ms  output-window-only %7.3f ms  atomics-only %7.3f ms  api %7.3f ms  err %.1e  "
                    "[%s%s, L %u, V %u, %zu B smem, %llu blocks of %llu nnz]\n",
                    name.c_str(), mode, rank, hms, hbw / 1e9, 100 * hbw / kCopyBandwidth, ms, window_ms,
                    no_staging_ms, atomics_ms, median(hapi), hicoo_err, plan.shared_output ? "shared output" : "atomics",
                    plan.staged_factors ? " + staged factors" : "", plan.lanes, plan.vector, plan.shared_bytes,
                    (unsigned long long)plan.thread_blocks, (unsigned long long)plan.chunk);
        if (b.json)
          add_timing(kernel_record("gpu_mttkrp_hicoo", name, order, nnz, mode, rank)
                         .integer("block_size", h.block_size())
                         .integer("num_blocks", static_cast<long long>(h.num_blocks())),
                     hms, *std::min_element(htimes.begin(), htimes.end()), b.repeats, hbytes)
              .num("api_ms_median", median(hapi))
              .num("rel_err_vs_cpu", hicoo_err)
              .num("coo_sorted_kernel_ms_median", ms)
              .num("window_all_blocks_kernel_ms_median", window_ms)
              .num("output_window_only_kernel_ms_median", no_staging_ms)
              .num("atomics_only_kernel_ms_median", atomics_ms)
              .boolean("shared_output", plan.shared_output)
              .boolean("staged_factors", plan.staged_factors)
              .num("convert_s", hicoo_convert_s)
              .str("device", b.device)
              .print(b.json);
      }
      if (fcoo_ok) {
        std::vector<const float*> product_factors;
        for (uint32_t m = 0; m < order; ++m)
          if (m != mode) product_factors.push_back(d_factors[m]);
        std::vector<std::pair<uint32_t, double>> sweep;
        double fcoo_ms = 0, fcoo_min = 0, fcoo_err = 0, fcoo_format_bytes = 0;
        const uint32_t rule_threadlen = choice[mode].fcoo_threadlen;
        for (const FcooDevice& d : fcoo_dev[mode]) {
          const std::vector<double> ftimes = time_launch([&] {
            return spt::cuda::launch_fcoo_hadamard<float>(d.ref, product_factors.data(), rank, d_out,
                                                          b.multiprocessors, 0);
          });
          sweep.emplace_back(d.threadlen, median(ftimes));
          if (d.threadlen != rule_threadlen) continue;
          fcoo_ms = median(ftimes);
          fcoo_min = *std::min_element(ftimes.begin(), ftimes.end());
          fcoo_format_bytes = d.format_bytes;
          std::vector<float> fgpu(out_elems);
          CHECK(cudaMemcpy(fgpu.data(), d_out, out_elems * sizeof(float), cudaMemcpyDeviceToHost));
          double fnum = 0;
          for (size_t i = 0; i < out_elems; ++i)
            fnum += double(fgpu[i] - cpu_reference[i]) * (fgpu[i] - cpu_reference[i]);
          fcoo_err = std::sqrt(fnum / std::max(den, 1e-300));
        }
        double fbytes = fcoo_format_bytes;
        for (uint32_t m = 0; m < order; ++m) fbytes += double(x.dims[m]) * rank * sizeof(float);
        const double fbw = fbytes / (fcoo_ms * 1e-3);
        std::string sweep_text;
        Record sweep_ms;  // threadlen -> kernel ms
        for (const auto& [tl, t] : sweep) {
          sweep_text += " tl" + std::to_string(tl) + " " + std::to_string(t).substr(0, 6);
          sweep_ms.num(std::to_string(tl), t);
        }
        std::printf("%-24s mode %u rank %2d  F-COO  %7.3f ms  %6.1f GB/s = %5.1f%% of 3 TB/s  (COO sorted %7.3f ms)  "
                    "threadlen %u  sweep:%s  err %.1e\n",
                    name.c_str(), mode, rank, fcoo_ms, fbw / 1e9, 100 * fbw / kCopyBandwidth, ms, rule_threadlen,
                    sweep_text.c_str(), fcoo_err);
        if (b.json)
          add_timing(kernel_record("gpu_mttkrp_fcoo", name, order, nnz, mode, rank)
                         .integer("threadlen", rule_threadlen),
                     fcoo_ms, fcoo_min, b.repeats, fbytes)
              .num("rel_err_vs_cpu", fcoo_err)
              .num("coo_sorted_kernel_ms_median", ms)
              .record("threadlen_sweep_ms", sweep_ms)
              .num("convert_s", fcoo_convert_s[mode])
              .str("device", b.device)
              .print(b.json);
      }
      if (hbcsf_ok) {
        const spt_hbcsf_s& h = hbcsf[mode];
        auto time_hbcsf = [&](const HbcsfDevice& d, spt::cuda::HbcsfLaunchPlan* plan) {
          return time_launch([&] {
            return spt::cuda::launch_mttkrp_hbcsf<float>(d.ref, d_factors.data(), rank, d_out, b.multiprocessors, 0,
                                                         plan);
          });
        };
        // Relative error of the last launch's output against the CPU's.
        auto hbcsf_error = [&] {
          std::vector<float> bgpu(out_elems);
          CHECK(cudaMemcpy(bgpu.data(), d_out, out_elems * sizeof(float), cudaMemcpyDeviceToHost));
          double bnum = 0;
          for (size_t i = 0; i < out_elems; ++i)
            bnum += double(bgpu[i] - cpu_reference[i]) * (bgpu[i] - cpu_reference[i]);
          return std::sqrt(bnum / std::max(den, 1e-300));
        };
        const double plain_ms = median(time_hbcsf(bcsf_dev[mode], nullptr));
        spt::cuda::HbcsfLaunchPlan plan;
        const std::vector<double> btimes = time_hbcsf(hbcsf_dev[mode], &plan);  // checked
        const double hbcsf_err = hbcsf_error();
        spt_context_s bctx;
        bctx.backend = SPT_BACKEND_CUDA;
        spt::DenseMatrix<float> bout(x.dims[mode], rank);
        std::vector<double> bapi;
        for (int r = -1; r < 5; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          SPT_DISPATCH(bctx, mttkrp_hbcsf, h, refs.data(), bout.ref());
          const double elapsed =
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          if (r >= 0) bapi.push_back(elapsed);
        }
        const double bms = median(btimes);
        double bbytes = double(h.bytes());
        for (uint32_t m = 0; m < order; ++m) bbytes += double(x.dims[m]) * rank * sizeof(float);
        const double bbw = bbytes / (bms * 1e-3);
        std::printf("%-24s mode %u rank %2d  HB-CSF %7.3f ms  %6.1f GB/s = %5.1f%% of 3 TB/s  (COO sorted %7.3f ms)  "
                    "plain B-CSF %7.3f ms  api %7.3f ms  err %.1e  "
                    "[L %u, %u launches, %llu B-CSF blocks, %llu leaves per warp]\n",
                    name.c_str(), mode, rank, bms, bbw / 1e9, 100 * bbw / kCopyBandwidth, ms, plain_ms,
                    median(bapi), hbcsf_err, plan.lanes, plan.launches, (unsigned long long)plan.bcsf_blocks,
                    (unsigned long long)plan.leaf_chunk);
        if (b.json)
          add_timing(kernel_record("gpu_mttkrp_hbcsf", name, order, nnz, mode, rank),
                     bms, *std::min_element(btimes.begin(), btimes.end()), b.repeats, bbytes)
              .num("api_ms_median", median(bapi))
              .num("rel_err_vs_cpu", hbcsf_err)
              .num("coo_sorted_kernel_ms_median", ms)
              .num("plain_bcsf_kernel_ms_median", plain_ms)
              .integer("coo_nnz", static_cast<long long>(h.coo_nnz()))
              .integer("csl_nnz", static_cast<long long>(h.csl_nnz()))
              .integer("bcsf_nnz", static_cast<long long>(h.bcsf_nnz()))
              .integer("segments", static_cast<long long>(h.segments()))
              .integer("split_fibers", static_cast<long long>(h.split_fibers))
              .integer("units", static_cast<long long>(h.units()))
              .integer("split_slices", static_cast<long long>(h.split_slices))
              .integer("launches", plan.launches)
              .integer("lanes", plan.lanes)
              .integer("leaf_chunk", static_cast<long long>(plan.leaf_chunk))
              .num("convert_s", hbcsf_convert_s[mode])
              .str("device", b.device)
              .print(b.json);
        if (mode != tree_root) {
          // This mode from the one tree rooted at tree_root (atomic rows):
          // plain B-CSF first, then HB-CSF (checked).
          auto time_nonroot = [&](const HbcsfDevice& d, spt::cuda::HbcsfLaunchPlan* nplan) {
            return time_launch([&] {
              return spt::cuda::launch_mttkrp_hbcsf_nonroot<float>(d.ref, d_factors.data(), mode, rank, d_out,
                                                                   b.multiprocessors, 0, nplan);
            });
          };
          const double nplain_ms = median(time_nonroot(bcsf_dev[tree_root], nullptr));
          spt::cuda::HbcsfLaunchPlan nplan;
          const std::vector<double> ntimes = time_nonroot(hbcsf_dev[tree_root], &nplan);  // checked
          std::vector<float> ngpu(out_elems);
          CHECK(cudaMemcpy(ngpu.data(), d_out, out_elems * sizeof(float), cudaMemcpyDeviceToHost));
          double nnum = 0;
          for (size_t i = 0; i < out_elems; ++i)
            nnum += double(ngpu[i] - cpu_reference[i]) * (ngpu[i] - cpu_reference[i]);
          const double nonroot_err = std::sqrt(nnum / std::max(den, 1e-300));
          const double nms = median(ntimes);
          const double tree_bytes = double(hbcsf[tree_root].bytes());
          std::printf("%-24s mode %u rank %2d  HB-CSF non-root (tree of mode %u) %7.3f ms  plain B-CSF %7.3f ms  "
                      "(own tree %7.3f ms)  tree %.1f MB vs per-mode trees %.1f MB  err %.1e  [L %u, %u launches]\n",
                      name.c_str(), mode, rank, tree_root, nms, nplain_ms, bms, tree_bytes / 1e6,
                      per_mode_tree_bytes / 1e6, nonroot_err, nplan.lanes, nplan.launches);
          if (b.json)
            Record()
                .str("bench", "gpu_mttkrp_hbcsf_nonroot")
                .str("tensor", name)
                .integer("order", order)
                .integer("nnz", static_cast<long long>(nnz))
                .integer("mode", mode)
                .integer("tree_root", tree_root)
                .integer("rank", rank)
                .str("dtype", "float32")
                .num("kernel_ms_median", nms)
                .num("kernel_ms_min", *std::min_element(ntimes.begin(), ntimes.end()))
                .integer("repeats", b.repeats)
                .num("plain_bcsf_kernel_ms_median", nplain_ms)
                .num("own_tree_kernel_ms_median", bms)
                .integer("tree_bytes", std::llround(tree_bytes))
                .integer("per_mode_trees_bytes", std::llround(per_mode_tree_bytes))
                .num("rel_err_vs_cpu", nonroot_err)
                .integer("launches", nplan.launches)
                .integer("lanes", nplan.lanes)
                .str("device", b.device)
                .print(b.json);
        }
      }
      CHECK(cudaEventDestroy(start));
      CHECK(cudaEventDestroy(stop));
      CHECK(cudaFree(d_out));
    }
    for (float* f : d_factors) CHECK(cudaFree(f));
  }
  for (void* p : sorted_blocks) CHECK(cudaFree(p));
  if (d_hicoo) CHECK(cudaFree(d_hicoo));
  for (const auto& per_mode : fcoo_dev)
    for (const FcooDevice& d : per_mode) CHECK(cudaFree(d.block));
  if (d_hicoo_window) CHECK(cudaFree(d_hicoo_window));
  for (const HbcsfDevice& d : hbcsf_dev) CHECK(cudaFree(d.block));
  for (const HbcsfDevice& d : bcsf_dev) CHECK(cudaFree(d.block));
  CHECK(cudaFree(d_ind));
  CHECK(cudaFree(d_val));
  if (b.json) std::fflush(b.json);
}

}  // namespace

int main(int argc, char** argv) {
  Bench b;
  std::vector<std::string> files;
  std::vector<spt_nnz> synthetic;  // --synthetic N1,N2,...: generated Zipf tensors
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--repeats" && i + 1 < argc) b.repeats = std::atoi(argv[++i]);
    else if (a == "--ranks" && i + 1 < argc) b.ranks = parse_list(argv[++i]);
    else if (a == "--synthetic" && i + 1 < argc)
      for (int n : parse_list(argv[++i])) synthetic.push_back(static_cast<spt_nnz>(n));
    else if (a == "--json" && i + 1 < argc) b.json = std::fopen(argv[++i], "a");
    else if (a == "--cpd" && i + 1 < argc) b.cpd_iters = std::atoi(argv[++i]);
    else if (a == "--cpd-threads" && i + 1 < argc) b.cpd_threads = std::atoi(argv[++i]);
    else if (a == "--cpd-only") b.cpd_only = true;
    else files.push_back(a);
  }
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  b.multiprocessors = prop.multiProcessorCount;
  b.device = prop.name;
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  for (const std::string& f : files) {
    spt_coo* raw = nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    if (spt_read(nullptr, f.c_str(), nullptr, &raw) != SPT_OK) {
      std::fprintf(stderr, "cannot read %s: %s\n", f.c_str(), spt_thread_last_error());
      return 1;
    }
    const spt_coo_s x = spt::copy_coo(*raw, SPT_FLOAT32);
    spt_coo_free(raw);
    std::printf("%s: order %u, nnz %llu, read in %.2f s\n", f.c_str(), x.order(), (unsigned long long)x.nnz,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::string name = f.substr(f.rfind('/') + 1);
    name = name.substr(0, name.find('.'));
    if (!b.cpd_only) run_tensor(b, name, x);
    if (b.cpd_iters > 0) run_cpd(b, name, x);
  }
  for (spt_nnz n : synthetic) {
    const auto t0 = std::chrono::steady_clock::now();
    const spt_coo_s x = synthetic_zipf(n, {1000000, 800000, 600000}, 1);
    std::printf("synthetic Zipf tensor: nnz %llu, generated in %.2f s\n", (unsigned long long)n,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    const std::string name = "synthetic-zipf-" + std::to_string(n);
    if (!b.cpd_only) run_tensor(b, name, x);
    if (b.cpd_iters > 0) run_cpd(b, name, x);
  }
  if (b.json) std::fclose(b.json);
  return 0;
}
