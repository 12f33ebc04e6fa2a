// bench_gpu_tucker: Tucker-HOOI seconds per iteration on the GPU (the whole
// sweep on the device: cuda/tucker_hooi.cu, backend CUDA) against the CPU
// (backend CPU, --threads threads), for the given tensors and ranks.
//
//   bench_gpu_tucker FILE... [--ranks 8,16] [--iters 5] [--threads 16]
//                            [--dtype float32|float64 (default float32)]
//
// Per tensor and rank R (every mode's rank min(R, I_n)): one HOOI run per
// backend with tol 0 and exactly --iters sweeps from the same seeded
// random orthonormal initial factors (seed 7); per run one JSON Lines
// record (keys of ../shared/DESIGN.md "Benchmarks"): bench "tucker_iter",
// format "auto" (GPU: the TTMc on HLS or F-COO, as the dispatcher picks;
// CPU: the TTMc path its cost estimate picks), backend, device (GPU name or CPU model),
// threads, tensor, order, nnz, mode -1, rank, core_dims, dtype, ms_median /
// ms_min over the sweeps (the per-sweep wall times the library records: the
// GPU's include its per-mode host round trips; the first sweep counts like
// the others), reps = sweeps, ms_total (the whole call: initialisation,
// preprocessing - the CPU's sorted copies, the GPU's F-COO build and upload
// - and the sweeps), fit, and the fits' largest difference between the two
// backends (fit_diff_vs_cpu, GPU records). A backend that fails gives a
// record with "error". AUTO's size rule (DeviceKernels::tucker_prefers_cpu)
// does not apply: the GPU run forces backend CUDA.
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
};

[[noreturn]] void usage(const std::string& message) {
  std::fprintf(stderr,
               "bench_gpu_tucker: %s\n"
               "usage: bench_gpu_tucker FILE... [--ranks 8,16] [--iters 5] [--threads 16]\n"
               "                        [--dtype float32|float64]\n",
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
};

Timing time_hooi(const spt_coo_s& x, spt_backend backend, int threads, const std::vector<spt_index>& ranks,
                 int iters) {
  spt_context_s ctx;
  ctx.backend = backend;
  ctx.threads = threads;
  spt_tucker_options opts;
  spt_tucker_options_init(&opts);
  opts.ranks = ranks.data();
  opts.ranks_count = static_cast<uint32_t>(ranks.size());
  opts.max_iters = iters;
  opts.tol = 0.0;
  opts.init = SPT_TUCKER_INIT_RANDOM;
  opts.seed = 7;
  Timing t;
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

void emit(const Timing& t, bool gpu, const std::string& device, int threads, const std::string& tensor,
          const spt_coo_s& x, unsigned rank, const std::vector<spt_index>& ranks, const Options& o,
          const std::string& date, const std::string& commit, const Timing* cpu) {
  Record r;
  r.str("bench", "tucker_iter")
      .str("format", "auto")
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
      emit(cpu, false, cpu_name, o.threads, tensor, x, rank, ranks, o, date, commit, nullptr);
      if (!cuda.usable()) continue;
      const Timing gpu = time_hooi(x, SPT_BACKEND_CUDA, o.threads, ranks, o.iters);
      emit(gpu, true, gpu_name, o.threads, tensor, x, rank, ranks, o, date, commit, &cpu);
    }
    spt_coo_free(raw);
  }
  return 0;
}
