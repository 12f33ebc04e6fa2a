// bench_gpu_multi: CP-ALS seconds per iteration on one GPU against several
// GPUs of one host, on a synthetic Amazon-reviews-shaped tensor generated in
// memory in parallel (no file: a 500M-nonzero text file would take longer to
// write and read than the runs themselves).
//
//   bench_gpu_multi [--nnz 500000000] [--dims 4800000,1800000,1800000]
//                   [--skew 3] [--rank 32] [--iters 10]
//                   [--dtype float32|float64] [--devices "0 0,1 0,1,2,3"]
//                   [--seed 1] [--threads N] [--nccl-library FILE] [--json FILE]
//
// The tensor: every index drawn as floor(dim * u^skew), u uniform in [0, 1),
// independently per mode (power-law slices in every mode, the shape of
// FROSTT's Amazon reviews: users x products x words), values uniform in
// [0.5, 1.5). Each nonzero comes from its own counter-based random stream,
// so the tensor does not depend on the thread count. Repeated coordinates
// (frequent near index 0) are summed by the library as in any tensor; the
// record says how many distinct coordinates remain.
//
// Per device list (space-separated lists, each comma-separated ids, lead
// first): one spt_cpd_als with the CUDA backend forced, tol 0, the same
// initial seed; the record holds the median seconds per iteration (sweep 1
// left out: it includes first launches), the whole call's seconds (set-up
// included), the final fit and the fit difference from the first list's
// run. JSON Lines on stdout (and into --json FILE).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.hpp"

using namespace spt_bench;

namespace {

struct Options {
  spt_nnz nnz = 500000000;
  std::vector<spt_index> dims{4800000, 1800000, 1800000};
  double skew = 3.0;
  spt_index rank = 32;
  int iters = 10;
  spt_dtype dtype = SPT_FLOAT32;
  std::vector<std::vector<int>> device_lists{{0}, {0, 1}};
  uint64_t seed = 1;
  int threads = 0;
  std::string json;
  std::string nccl_library;  // "" = the library's default search
};

template <typename T>
std::vector<T> split_numbers(const std::string& text, char sep) {
  std::vector<T> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, sep))
    if (!item.empty()) out.push_back(static_cast<T>(std::stoull(item)));
  return out;
}

std::vector<std::vector<int>> parse_device_lists(const std::string& text) {
  std::vector<std::vector<int>> lists;
  std::stringstream in(text);
  std::string list;
  while (in >> list) lists.push_back(split_numbers<int>(list, ','));
  return lists;
}

// splitmix64: a counter-based stream, so nonzero k's draws depend on k only.
inline uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
inline double unit(uint64_t bits) { return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0); }

struct Synthetic {
  std::vector<spt_index> indices;  // mode-major: indices[m * nnz + k]
  std::vector<float> values32;
  std::vector<double> values64;
};

Synthetic generate(const Options& o) {
  const size_t order = o.dims.size();
  Synthetic t;
  t.indices.resize(order * o.nnz);
  if (o.dtype == SPT_FLOAT32) t.values32.resize(o.nnz);
  else t.values64.resize(o.nnz);
#pragma omp parallel for schedule(static)
  for (long long k = 0; k < static_cast<long long>(o.nnz); ++k) {
    const uint64_t base = (o.seed * 0x100000001B3ull + static_cast<uint64_t>(k)) * (order + 1);
    for (size_t m = 0; m < order; ++m) {
      double u = std::pow(unit(splitmix(base + m)), o.skew);
      auto i = static_cast<spt_index>(u * o.dims[m]);
      t.indices[m * o.nnz + k] = std::min<spt_index>(i, o.dims[m] - 1);
    }
    double v = 0.5 + unit(splitmix(base + order));
    if (o.dtype == SPT_FLOAT32) t.values32[k] = static_cast<float>(v);
    else t.values64[k] = v;
  }
  return t;
}

struct IterationTimes {
  std::vector<double> seconds;
};

int record_iteration(void* user, int /*iteration*/, double /*fit*/, double /*delta*/, double seconds) {
  static_cast<IterationTimes*>(user)->seconds.push_back(seconds);
  return 0;
}

void log_to_stderr(void*, int, const char* message) { std::fprintf(stderr, "  log: %s\n", message); }

std::string list_text(const std::vector<int>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  use_built_cuda_plugin();
  Options o;
  int reps_unused = 1;
  std::vector<std::string> files;
  bool ok = false;
  try {
    ok = read_gpu_command_line(argc, argv, o.rank, reps_unused, o.dtype, files,
                               [&](const std::string& a, auto&& value) {
                                 const char* v = value();
                                 if (!v) return false;
                                 if (a == "--nnz") o.nnz = std::stoull(v);
                                 else if (a == "--dims") o.dims = split_numbers<spt_index>(v, ',');
                                 else if (a == "--skew") o.skew = std::stod(v);
                                 else if (a == "--iters") o.iters = std::stoi(v);
                                 else if (a == "--devices") o.device_lists = parse_device_lists(v);
                                 else if (a == "--seed") o.seed = std::stoull(v);
                                 else if (a == "--threads") o.threads = std::stoi(v);
                                 else if (a == "--json") o.json = v;
                                 else if (a == "--nccl-library") o.nccl_library = v;
                                 else return false;
                                 return true;
                               });
  } catch (const std::exception&) {
    ok = false;  // a number that does not parse
  }
  if (!ok || !files.empty() || o.dims.empty() || o.nnz == 0 || o.device_lists.empty() || o.iters < 2) {
    std::fprintf(stderr, "usage: bench_gpu_multi [--nnz N] [--dims D0,D1,...] [--skew S] [--rank R] [--iters K >= 2] "
                         "[--dtype float32|float64] [--devices \"0 0,1 ...\"] [--seed S] [--threads N] [--nccl-library FILE] [--json FILE]\n");
    return 2;
  }
  FILE* json = o.json.empty() ? nullptr : std::fopen(o.json.c_str(), "w");
  try {
    BenchEnv env;
    env.open(o.threads);
    check(spt_context_set_backend(env.ctx, SPT_BACKEND_CUDA), env.ctx, "spt_context_set_backend(CUDA)");
    check(spt_context_set_verbosity(env.ctx, 1), env.ctx, "spt_context_set_verbosity");
    check(spt_context_set_log(env.ctx, log_to_stderr, nullptr), env.ctx, "spt_context_set_log");
    check(spt_context_set_nccl_library(env.ctx, o.nccl_library.c_str()), env.ctx, "spt_context_set_nccl_library");
    spt_backend_info info{};
    info.struct_size = sizeof info;
    check(spt_context_backend_info(env.ctx, &info), env.ctx, "spt_context_backend_info");

    double t0 = now_seconds();
    Synthetic t = generate(o);
    const double generate_s = now_seconds() - t0;
    t0 = now_seconds();
    spt_coo* x = nullptr;
    const void* values = o.dtype == SPT_FLOAT32 ? static_cast<const void*>(t.values32.data())
                                                : static_cast<const void*>(t.values64.data());
    check(spt_coo_create_view(env.ctx, o.dtype, static_cast<uint32_t>(o.dims.size()), o.dims.data(), o.nnz,
                              t.indices.data(), o.nnz, values, &x),
          env.ctx, "spt_coo_create_view");
    const double view_s = now_seconds() - t0;
    std::fprintf(stderr, "generated %llu nonzeros in %.1f s (view %.1f s)\n",
                 static_cast<unsigned long long>(o.nnz), generate_s, view_s);

    double first_fit = NAN;
    for (const std::vector<int>& ids : o.device_lists) {
      check(spt_context_set_devices(env.ctx, ids.data(), static_cast<int>(ids.size())), env.ctx,
            "spt_context_set_devices");
      spt_cpd_options opts;
      check(spt_cpd_options_init(&opts), env.ctx, "spt_cpd_options_init");
      opts.rank = o.rank;
      opts.max_iters = o.iters;
      opts.tol = 0;
      opts.seed = o.seed;
      opts.format = SPT_TENSOR_FORMAT_COO;
      IterationTimes times;
      opts.callback = record_iteration;
      opts.callback_data = &times;
      spt_ktensor* k = nullptr;
      t0 = now_seconds();
      spt_status st = spt_cpd_als(env.ctx, x, &opts, &k);
      const double call_s = now_seconds() - t0;
      if (st != SPT_OK && st != SPT_WARN_NOT_CONVERGED) check(st, env.ctx, "spt_cpd_als on " + list_text(ids));
      double fit = NAN;
      int iterations = 0, converged = 0;
      spt_ktensor_result(k, &fit, &iterations, &converged);
      spt_ktensor_free(k);
      if (std::isnan(first_fit)) first_fit = fit;
      std::vector<double> later(times.seconds.begin() + (times.seconds.size() > 1 ? 1 : 0), times.seconds.end());
      Record r;
      r.str("bench", "gpu_multi_cp_als").str("device", info.device_name).str("devices", list_text(ids))
          .integer("device_count", static_cast<long long>(ids.size())).str("tensor", "amazon-shaped-synthetic")
          .integer("nnz_generated", static_cast<long long>(o.nnz)).num("skew", o.skew)
          .str("dtype", o.dtype == SPT_FLOAT32 ? "float32" : "float64").integer("rank", o.rank)
          .integer("iters", static_cast<long long>(times.seconds.size())).num("s_per_iter_median", median(later))
          .num("s_per_iter_min", minimum(later)).num("call_s", call_s).num("generate_s", generate_s)
          .num("fit", fit, 10).num("fit_diff_from_first", fit - first_fit, 3).integer("threads", env.threads)
          .str("date", env.date).str("commit", env.commit);
      std::string dims;
      for (size_t m = 0; m < o.dims.size(); ++m) dims += (m ? "x" : "") + std::to_string(o.dims[m]);
      r.str("dims", dims);
      r.print();
      if (json) r.print(json);
    }
    spt_coo_free(x);
  } catch (const Failure& f) {
    std::fprintf(stderr, "bench_gpu_multi: %s\n", f.what());
    if (json) std::fclose(json);
    return 1;
  }
  if (json) std::fclose(json);
  return 0;
}
