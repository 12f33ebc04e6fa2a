// GPU SpTTM benchmark: for each .tns file, mode and rank, the kernel time of
// each of the GPU SpTTM kernels the rule picks from (cuda/ttm.cuh:
// coalesced, rank_blocked, shared), of the rule's choice (variant "auto",
// key "chosen"), and of the OpenMP CPU SpTTM on the same pre-sorted tensor.
// One JSON line per (tensor, mode, rank, variant); keys of
// ../shared/DESIGN.md "Benchmarks" plus variant, chosen, rule_pick (the
// rule's choice, on every line), nfibers, mean_fiber, max_fiber and
// ms_call_median (a whole plugin call: copies in, kernel, copy out).
//
// GPU times are the plugin's CUDA-event kernel times (ttm_fibers reports
// them; copies excluded), median of --repeats after --warmup calls. The CPU
// time is cpu::ttm on a copy sorted with the mode last (so it skips its
// sort, as the GPU path's kernel time does), wall clock, same repetitions.
// The host preparation (sort, fiber pointers) is not in either number.
//
// Built with every configuration (links only the library; the plugin is
// loaded at run time): SPT_PLUGIN_PATH, else ../libsptensor_cuda.so next to
// this executable's directory (the build tree's layout). Without a usable
// device only the CPU lines are printed (a note on stderr).
//
// Usage: bench_gpu_ttm [--ranks 8,16,32,64] [--repeats 10] [--warmup 2]
//                      [--dtype float32|float64] [--threads N] [--modes 0,2]
//                      FILE.tns...
// On the 2-core development machines run with OMP_WAIT_POLICY=passive.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "core/coo.hpp"
#include "core/scoo.hpp"
#include "core/sort.hpp"
#include "dispatch/plugin_abi.h"
#include "dispatch/plugin_loader.hpp"
#include "kernels/kernels.hpp"

namespace {

using namespace spt_bench;

// The variants timed, by SPT_PLUGIN_TTM_* number, and their names.
const int kVariants[] = {SPT_PLUGIN_TTM_AUTO, SPT_PLUGIN_TTM_COALESCED, SPT_PLUGIN_TTM_RANK_BLOCKED,
                         SPT_PLUGIN_TTM_SHARED};
const char* variant_name(int v) {
  switch (v) {
    case SPT_PLUGIN_TTM_AUTO: return "auto";
    case SPT_PLUGIN_TTM_COALESCED: return "coalesced";
    case SPT_PLUGIN_TTM_RANK_BLOCKED: return "rank_blocked";
    case SPT_PLUGIN_TTM_SHARED: return "shared";
    default: return "?";
  }
}

std::vector<long> parse_list(const char* s) {
  std::vector<long> v;
  for (const char* p = s; *p;) {
    char* end = nullptr;
    v.push_back(std::strtol(p, &end, 10));
    if (end == p) throw Failure(std::string("bad list: ") + s);
    p = *end == ',' ? end + 1 : end;
  }
  return v;
}

// Point the loader at the build tree's plugin unless the caller chose one.
void default_plugin_path() {
  if (const char* env = std::getenv("SPT_PLUGIN_PATH"); env && *env) return;
  char exe[4096] = {0};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  std::string dir(exe, static_cast<size_t>(n));
  dir = dir.substr(0, dir.find_last_of('/'));
  const std::string candidate = dir + "/../" SPT_CUDA_PLUGIN_FILE_NAME;
  if (access(candidate.c_str(), R_OK) == 0) setenv("SPT_PLUGIN_PATH", candidate.c_str(), 0);
}

struct Options {
  std::vector<long> ranks{8, 16, 32, 64};
  std::vector<long> modes;  // empty = all
  int repeats = 10;
  int warmup = 2;
  int threads = 0;
  spt_dtype dtype = SPT_FLOAT32;
  std::vector<std::string> files;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw Failure("missing value after " + a);
      return argv[++i];
    };
    if (a == "--ranks") o.ranks = parse_list(value());
    else if (a == "--modes") o.modes = parse_list(value());
    else if (a == "--repeats") o.repeats = std::max(1, std::atoi(value()));
    else if (a == "--warmup") o.warmup = std::max(0, std::atoi(value()));
    else if (a == "--threads") o.threads = std::atoi(value());
    else if (a == "--dtype") {
      if (!parse_dtype_name(value(), &o.dtype)) throw Failure("--dtype must be float32 or float64");
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: bench_gpu_ttm [--ranks 8,16,32,64] [--repeats 10] [--warmup 2] [--dtype float32|float64]"
                  " [--threads N] [--modes LIST] FILE.tns...\n");
      std::exit(0);
    } else if (!a.empty() && a[0] == '-') {
      throw Failure("unknown option " + a);
    } else {
      o.files.push_back(a);
    }
  }
  if (o.files.empty()) throw Failure("no tensor files given (--help)");
  return o;
}

template <typename T>
void run_tensor(const Options& o, BenchEnv& env, const spt::dispatch::CudaPlugin& cuda, const std::string& path) {
  spt_coo* handle = read_tensor(env.ctx, path, o.dtype);
  const spt_coo_s& x = *handle;
  const uint32_t order = x.order();
  const spt::kernels::Exec exec{env.threads};
  const bool gpu = cuda.usable() && cuda.table->ttm_fibers != nullptr;
  const std::string gpu_name = gpu ? cuda.devices[0].name : "";
  const char* dtype_name = sizeof(T) == 4 ? "float32" : "float64";
  for (uint32_t mode = 0; mode < order; ++mode) {
    if (!o.modes.empty() && std::find(o.modes.begin(), o.modes.end(), long(mode)) == o.modes.end()) continue;
    // The tensor sorted with `mode` last (others ascending), and its fibers.
    std::vector<uint32_t> key;
    for (uint32_t m = 0; m < order; ++m)
      if (m != mode) key.push_back(m);
    key.push_back(mode);
    spt_coo_s sorted = spt::sorting::permuted_copy(exec, x, spt::sorting::sort_permutation(exec, x, key));
    sorted.sorted_by = key;
    const spt::buffer<spt_nnz> ptr =
        spt::sorting::group_starts(exec, sorted, std::vector<uint32_t>(key.begin(), key.end() - 1));
    const uint64_t fibers = ptr.size() - 1;
    uint64_t longest = 0;
    for (uint64_t f = 0; f < fibers; ++f) longest = std::max<uint64_t>(longest, ptr[f + 1] - ptr[f]);
    const double mean = fibers ? double(x.nnz) / double(fibers) : 0.0;

    for (long rank_l : o.ranks) {
      const uint64_t rank = static_cast<uint64_t>(rank_l);
      MatrixPtr u = random_factor(env, o.dtype, x.dims[mode], rank, 7 + mode);
      void* u_data = nullptr;
      check(spt_matrix_data(u.get(), &u_data), env.ctx, "spt_matrix_data");
      const spt::ConstMatRef<T> uref{static_cast<const T*>(u_data), x.dims[mode], rank, rank};
      const double flops = 2.0 * double(x.nnz) * double(rank);
      const double bytes = double(x.nnz) * (sizeof(uint32_t) + sizeof(T)) + double(fibers + 1) * 8 +
                           double(x.dims[mode]) * rank * sizeof(T) + double(fibers) * rank * sizeof(T);
      std::string rule_pick = "none";  // the rule needs the plugin, not a device
      if (cuda.table && cuda.table->ttm_choose_variant) {
        int v = 0;
        char message[512] = {0};
        if (cuda.table->ttm_choose_variant(rank, fibers, x.nnz, longest, &v, message, sizeof message) == SPT_OK)
          rule_pick = variant_name(v);
      }
      auto emit = [&](const std::string& backend, const std::string& variant, const std::string& chosen,
                      const std::vector<double>& ms, const std::vector<double>& call_ms) {
        const double med = median(ms);
        Record r;
        r.str("bench", "ttm").str("format", "coo").str("backend", backend);
        r.str("device", backend == "cuda" ? gpu_name : env.device).integer("threads", env.threads);
        r.str("tensor", tensor_stem(path)).integer("order", order).integer("nnz", static_cast<long long>(x.nnz));
        r.integer("mode", mode).integer("rank", static_cast<long long>(rank)).str("dtype", dtype_name);
        r.str("variant", variant).str("chosen", chosen).str("rule_pick", rule_pick);
        r.integer("nfibers", static_cast<long long>(fibers)).num("mean_fiber", mean);
        r.integer("max_fiber", static_cast<long long>(longest));
        r.num("ms_median", med).num("ms_min", minimum(ms)).integer("reps", static_cast<long long>(ms.size()));
        if (!call_ms.empty()) r.num("ms_call_median", median(call_ms));
        r.num("gflops", med > 0 ? flops / (med * 1e6) : 0).num("gbps_effective", med > 0 ? bytes / (med * 1e6) : 0);
        r.str("date", env.date).str("commit", env.commit);
        r.print();
      };

      // CPU: the OpenMP kernel on the pre-sorted copy.
      {
        std::vector<double> ms;
        for (int i = 0; i < o.warmup + o.repeats; ++i) {
          spt_scoo_s out;
          const double t0 = now_seconds();
          spt::kernels::cpu::ttm(exec, sorted, mode, uref, out);
          const double t1 = now_seconds();
          if (i >= o.warmup) ms.push_back((t1 - t0) * 1e3);
        }
        emit("cpu", "openmp", "", ms, {});
      }
      if (!gpu) continue;

      spt_plugin_ttm_fibers view{};
      view.dtype = sizeof(T) == 4 ? SPT_PLUGIN_FLOAT32 : SPT_PLUGIN_FLOAT64;
      view.nnz = sorted.nnz;
      view.nfibers = fibers;
      view.fiber_ptr = ptr.data();
      view.ind = sorted.ind[mode];
      view.values = sorted.val;
      std::vector<T> out(std::max<uint64_t>(fibers * rank, 1));
      const spt_plugin_matrix um{u_data, x.dims[mode], rank, rank};
      spt_plugin_matrix om{out.data(), fibers, rank, rank};
      for (const int variant : kVariants) {
        std::vector<double> ms, call_ms;
        std::string chosen;
        bool failed = false;
        for (int i = 0; i < o.warmup + o.repeats && !failed; ++i) {
          spt_plugin_ttm_launch launch{};
          launch.variant = variant;
          char message[512] = {0};
          const double t0 = now_seconds();
          const int status = cuda.table->ttm_fibers(0, &view, &um, &om, &launch, message, sizeof message);
          const double t1 = now_seconds();
          if (status != SPT_OK) {
            std::fprintf(stderr, "bench_gpu_ttm: %s mode %u rank %llu variant %s: %s\n", path.c_str(), mode,
                         static_cast<unsigned long long>(rank), variant_name(variant), message);
            failed = true;
            break;
          }
          chosen = variant_name(launch.variant_used);
          if (i >= o.warmup) {
            ms.push_back(launch.kernel_ms);
            call_ms.push_back((t1 - t0) * 1e3);
          }
        }
        if (!failed) emit("cuda", variant_name(variant), chosen, ms, call_ms);
      }
    }
  }
  spt_coo_free(handle);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    default_plugin_path();
    BenchEnv env;
    env.open(o.threads);
    const spt::dispatch::CudaPlugin& cuda = spt::dispatch::cuda_plugin();
    if (!cuda.usable()) std::fprintf(stderr, "bench_gpu_ttm: no GPU lines: %s\n", cuda.reason.c_str());
    for (const std::string& f : o.files) {
      if (o.dtype == SPT_FLOAT32) run_tensor<float>(o, env, cuda, f);
      else run_tensor<double>(o, env, cuda, f);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu_ttm: %s\n", e.what());
    return 1;
  }
}
