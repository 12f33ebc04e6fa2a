// bench_gpu_tucker: Tucker-HOOI seconds per iteration on the GPU (the whole
// sweep on the device: the driver of src/algo/tucker_hooi.cpp on the device
// steps of cuda/tucker_hooi.cu, backend CUDA) against the CPU (backend CPU,
// --threads threads), for the given tensors and ranks.
//
//   bench_gpu_tucker FILE... [--ranks 8,16] [--iters 5] [--threads 16]
//                            [--dtype float32|float64 (default float32)]
//                            [--routes auto,fcoo,chain,hls (default all)]
//
// Per tensor and rank R (every mode's rank min(R, I_n)): one HOOI run per
// backend with tol 0 and exactly --iters sweeps from the same seeded
// random orthonormal initial factors (seed 7); per run one JSON Lines
// record (keys of ../shared/DESIGN.md "Benchmarks"): bench "tucker_iter",
// format (GPU: "auto" = the TTMc format the dispatcher picks, with key
// auto_route = the one it took (hls, chain or fcoo, read from its log);
// "fcoo", "chain", "hls" = that route forced by spt_tucker_options.ttmc, one
// record each (hls on orders 3 and 4 only); CPU: "auto", the TTMc path its
// cost estimate picks), backend, device (GPU name or CPU model),
// threads, tensor, order, nnz, mode -1, rank, core_dims, dtype, ms_median /
// ms_min over the sweeps (the per-sweep wall times the library records: the
// GPU's include its per-mode host round trips; the first sweep counts like
// the others), reps = sweeps, ms_total (the whole call: initialisation,
// preprocessing - the CPU's sorted copies, the GPU's F-COO build and upload
// - and the sweeps), fit, and the fits' largest difference between the two
// backends (fit_diff_vs_cpu, GPU records). A backend that fails gives a
// record with "error". AUTO's size rule (DeviceKernels::tucker_prefers_cpu)
// does not apply: the GPU run forces backend CUDA. Every GPU record of
// orders 3..8 also carries the dispatcher's chain-or-F-COO cost estimate
// (src/dispatch/device_tucker.hpp): est_chain, est_fcoo (summed over the
// modes), est_prefers ("chain" or "fcoo"), est_chain_modes /
// est_fcoo_modes (per mode, comma-separated) and est_ms (the host time of
// building the trees for it), so that the rule's constants can be fitted
// to the measured sweep times of the forced routes. (The library records
// per-sweep times only, no per-mode TTMc times.)
//
// Run the CPU side with OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1 on a
// shared machine.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "algo/tucker_hooi.hpp"
#include "bench_common.hpp"
#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/ttensor.hpp"
#include "dispatch/device_tucker.hpp"
#include "dispatch/plugin_loader.hpp"
#include "sptensor/sptensor.h"
#include "sptensor/tucker.h"

namespace {

using namespace spt_bench;

// The plugin this build made (a static link of the library looks for it
// beside the executable otherwise), unless the caller chose one.
[[maybe_unused]] const bool plugin_path_set = [] {
#ifdef SPT_CUDA_PLUGIN_FILE
  setenv("SPT_PLUGIN_PATH", SPT_CUDA_PLUGIN_FILE, /*overwrite=*/0);
#endif
  return true;
}();

struct Options {
  std::vector<std::string> files;
  std::vector<unsigned> ranks = {8, 16};
  int iters = 5, threads = 16;
  spt_dtype dtype = SPT_FLOAT32;
  std::vector<std::string> routes = {"auto", "fcoo", "chain", "hls"};
};

[[noreturn]] void usage(const std::string& message) {
  std::fprintf(stderr,
               "bench_gpu_tucker: %s\n"
               "usage: bench_gpu_tucker FILE... [--ranks 8,16] [--iters 5] [--threads 16]\n"
               "                        [--dtype float32|float64] [--routes auto,fcoo,chain,hls]\n",
               message.c_str());
  std::exit(2);
}

int parse_int(const std::string& opt, const std::string& s, int min) {
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || v < min || v > 1000000)
    usage(opt + ": expected an integer >= " + std::to_string(min) + ", got '" + s + "'");
  return static_cast<int>(v);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value after " + a);
      return argv[++i];
    };
    if (a == "--ranks" || a == "--rank") {
      o.ranks.clear();
      std::stringstream in(value());
      std::string item;
      while (std::getline(in, item, ',')) o.ranks.push_back(static_cast<unsigned>(parse_int(a, item, 1)));
      if (o.ranks.empty()) usage("--ranks: no rank given");
    } else if (a == "--iters") o.iters = parse_int(a, value(), 1);
    else if (a == "--threads") o.threads = parse_int(a, value(), 1);
    else if (a == "--dtype") {
      const std::string d = value();
      if (!parse_dtype_name(d, &o.dtype)) usage("--dtype: expected float32 or float64, got '" + d + "'");
    } else if (a == "--routes") {
      o.routes.clear();
      std::stringstream in(value());
      std::string item;
      while (std::getline(in, item, ',')) {
        if (item != "auto" && item != "fcoo" && item != "chain" && item != "hls")
          usage("--routes: expected auto, fcoo, chain or hls, got '" + item + "'");
        o.routes.push_back(item);
      }
      if (o.routes.empty()) usage("--routes: no route given");
    } else if (a == "-h" || a == "--help") usage("Tucker-HOOI per iteration, GPU against CPU");
    else if (!a.empty() && a[0] == '-') usage("unknown option '" + a + "'");
    else o.files.push_back(a);
  }
  if (o.files.empty()) usage("missing FILE");
  return o;
}

struct Timing {
  std::vector<double> sweeps;  // seconds
  std::vector<double> fits;
  double total_seconds = 0.0;
  double fit = 0.0;
  std::string error;
  std::vector<std::string> log;  // the context's log (verbosity 1)
};

void record_log(void* data, int, const char* message) {
  static_cast<std::vector<std::string>*>(data)->push_back(message ? message : "");
}

// The TTMc route a GPU run took, from the dispatcher's log line.
std::string route_taken(const Timing& t) {
  for (const std::string& line : t.log) {
    if (line.find("Tucker-HOOI on HLS on the GPU") != std::string::npos) return "hls";
    if (line.find("Tucker-HOOI on B-CSF chained TTMs on the GPU") != std::string::npos) return "chain";
    if (line.find("Tucker-HOOI on F-COO on the GPU") != std::string::npos) return "fcoo";
  }
  return "none";
}

// The spt_tucker_options.ttmc of a --routes name.
spt_tucker_ttmc ttmc_method(const std::string& route) {
  if (route == "fcoo") return SPT_TUCKER_TTMC_ONE_SHOT;
  if (route == "chain") return SPT_TUCKER_TTMC_CHAIN;
  if (route == "hls") return SPT_TUCKER_TTMC_HLS;
  return SPT_TUCKER_TTMC_AUTO;
}

struct Estimate {
  bool valid = false;
  spt::dispatch::TuckerTtmcEstimate e;
  double ms = 0.0;
  std::string error;
};

Timing time_hooi(const spt_coo_s& x, spt_backend backend, int threads, const std::vector<spt_index>& ranks,
                 int iters, spt_tucker_ttmc ttmc = SPT_TUCKER_TTMC_AUTO) {
  Timing t;
  spt_context_s ctx;
  ctx.backend = backend;
  ctx.threads = threads;
  ctx.verbosity = 1;
  ctx.log = record_log;
  ctx.log_data = &t.log;
  spt_tucker_options opts;
  spt_tucker_options_init(&opts);
  opts.ranks = ranks.data();
  opts.ranks_count = static_cast<uint32_t>(ranks.size());
  opts.max_iters = iters;
  opts.tol = 0.0;
  opts.init = SPT_TUCKER_INIT_RANDOM;
  opts.seed = 7;
  opts.ttmc = ttmc;
  spt_ttensor_s out;
  const auto start = std::chrono::steady_clock::now();
  try {
    spt::tucker_hooi(ctx, x, opts, out);
  } catch (const std::exception& e) {
    t.error = e.what();
    return t;
  }
  t.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  t.sweeps = out.seconds_history;
  t.fits = out.fit_history;
  t.fit = out.fit;
  return t;
}

std::string join(const std::vector<spt_index>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string join_numbers(const std::vector<double>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v[i]);
    s += (i ? "," : "") + std::string(buf);
  }
  return s;
}

void emit(const Timing& t, bool gpu, const std::string& route, const std::string& device, int threads,
          const std::string& tensor, const spt_coo_s& x, unsigned rank, const std::vector<spt_index>& ranks,
          const Options& o, const std::string& date, const std::string& commit, const Timing* cpu,
          const Estimate* estimate) {
  Record r;
  r.str("bench", "tucker_iter")
      .str("format", route)
      .str("backend", gpu ? "cuda" : "cpu")
      .str("device", device)
      .integer("threads", gpu ? 0 : threads)
      .str("tensor", tensor)
      .integer("order", x.order())
      .integer("nnz", static_cast<long long>(x.nnz))
      .integer("mode", -1)
      .integer("rank", rank)
      .str("core_dims", join(ranks))
      .str("dtype", o.dtype == SPT_FLOAT32 ? "float32" : "float64");
  if (!t.error.empty()) {
    r.str("error", t.error);
  } else {
    r.num("ms_median", median(t.sweeps) * 1e3)
        .num("ms_min", minimum(t.sweeps) * 1e3)
        .integer("reps", static_cast<long long>(t.sweeps.size()))
        .num("ms_total", t.total_seconds * 1e3)
        .num("fit", t.fit);
    if (cpu && cpu->error.empty() && cpu->fits.size() == t.fits.size()) {
      double diff = 0.0;
      for (size_t i = 0; i < t.fits.size(); ++i) diff = std::max(diff, std::abs(t.fits[i] - cpu->fits[i]));
      r.num("fit_diff_vs_cpu", diff);
    }
    if (gpu) r.str(route == "auto" ? "auto_route" : "ttmc_route", route_taken(t));
  }
  if (gpu && estimate && estimate->valid) {
    r.num("est_chain", estimate->e.chain_total)
        .num("est_fcoo", estimate->e.fcoo_total)
        .str("est_prefers", estimate->e.prefers_chain() ? "chain" : "fcoo")
        .str("est_chain_modes", join_numbers(estimate->e.chain))
        .str("est_fcoo_modes", join_numbers(estimate->e.fcoo))
        .num("est_ms", estimate->ms);
  } else if (gpu && estimate && !estimate->error.empty()) {
    r.str("est_error", estimate->error);
  }
  r.str("date", date).str("commit", commit).print();
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const spt::dispatch::CudaPlugin& cuda = spt::dispatch::cuda_plugin();
  const std::string gpu_name = cuda.usable() ? cuda.devices[0].name : "";
  if (!cuda.usable()) std::fprintf(stderr, "bench_gpu_tucker: no usable CUDA device (%s)\n", cuda.reason.c_str());
  const std::string cpu_name = cpu_model();
  const std::string date = utc_now();
  const char* c = std::getenv("SPT_COMMIT");
  const std::string commit = c && *c ? c : "unknown";
  for (const std::string& file : o.files) {
    spt_coo* raw = nullptr;
    spt_read_options ro;
    spt_read_options_init(&ro);
    ro.dtype = o.dtype;
    if (spt_read(nullptr, file.c_str(), &ro, &raw) != SPT_OK) {
      std::fprintf(stderr, "bench_gpu_tucker: cannot read %s: %s\n", file.c_str(), spt_thread_last_error());
      return 1;
    }
    const spt_coo_s& x = *raw;
    const std::string tensor = tensor_stem(file);
    for (unsigned rank : o.ranks) {
      std::vector<spt_index> ranks;
      for (spt_index d : x.dims) ranks.push_back(std::min<spt_index>(d, rank));
      const Timing cpu = time_hooi(x, SPT_BACKEND_CPU, o.threads, ranks, o.iters);
      emit(cpu, false, "auto", cpu_name, o.threads, tensor, x, rank, ranks, o, date, commit, nullptr, nullptr);
      if (!cuda.usable()) continue;
      // The dispatcher's chain-or-F-COO estimate (orders 3..8).
      Estimate estimate;
      if (x.order() >= 3 && x.order() <= 8) {
        const auto start = std::chrono::steady_clock::now();
        try {
          estimate.e = spt::dispatch::tucker_ttmc_estimate(x, ranks, o.threads);
          estimate.valid = true;
        } catch (const std::exception& e) {
          estimate.error = e.what();
        }
        estimate.ms = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1e3;
      }
      for (const std::string& route : o.routes) {
        if (route == "hls" && x.order() != 3 && x.order() != 4) continue;
        if (route == "chain" && (x.order() < 3 || x.order() > 8)) continue;
        const Timing gpu = time_hooi(x, SPT_BACKEND_CUDA, o.threads, ranks, o.iters, ttmc_method(route));
        emit(gpu, true, route, gpu_name, o.threads, tensor, x, rank, ranks, o, date, commit, &cpu, &estimate);
      }
    }
    spt_coo_free(raw);
  }
  return 0;
}
