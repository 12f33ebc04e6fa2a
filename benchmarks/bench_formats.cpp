// bench_formats: CPU benchmark of MTTKRP per mode and CP-ALS per iteration
// on each storage format, through the public C API.
//
//   bench_formats FILE [--rank 16] [--reps 10] [--iters 10] [--threads N]
//                      [--dtype float32|float64 (default float32)]
//                      [--formats coo,csf-allmode,csf-twomode,csf-onemode,auto]
//                      [--only mttkrp,cpd] [--tensor NAME]
//
// Formats: "coo" (spt_mttkrp / opts.format COO), "hicoo" (spt_hicoo with
// suggested parameters, spt_mttkrp_hicoo / opts.format HICOO), "csf-memo"
// (CP-ALS only: opts.csf_policy MEMOIZED), "csf-<policy>" (a spt_csf
// built once with that policy, spt_mttkrp_csf / opts.format CSF + policy),
// "auto" (CP-ALS with opts.format AUTO; no MTTKRP record). Prints JSON Lines
// with the keys of ../shared/DESIGN.md "Benchmarks" (format = the name
// above), plus build_ms (CSF build time) and format_bytes for CSF records.
//  - "mttkrp": 1 warm-up call, then --reps timed calls; median and min.
//    cpu_ms_median / cpu_ms_min: the same calls timed by the process's CPU
//    time (all threads; passive waiting costs none), which time slices
//    given to other programs do not inflate: the figure to compare on a
//    loaded machine.
//    flops = N * nnz * R (COO count, so formats compare on the same work);
//    bytes = format bytes (for CSF: one tree, the average of the handle's
//    trees) + factors read once + output written once.
//  - "cpd_iter": tol 0 (exactly --iters sweeps), seed 7; median/min of the
//    per-iteration seconds. The CSF build is inside ms_total, not per
//    iteration (as SPLATT reports its iterations).
//
// Run with OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1 on the shared
// 2-core machine.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "sptensor/sptensor.h"

namespace {

using namespace spt_bench;

struct Options {
  std::string path;
  std::string tensor;
  std::vector<unsigned> ranks = {16};
  std::vector<std::string> formats = {"coo", "hicoo", "csf-allmode", "csf-twomode", "csf-onemode", "csf-memo", "auto"};
  int reps = 10;
  int iters = 10;
  int threads = 0;
  spt_dtype dtype = SPT_FLOAT32;
  bool run_mttkrp = true, run_cpd = true;
};

[[noreturn]] void usage(const std::string& message) {
  std::fprintf(stderr,
               "bench_formats: %s\n"
               "usage: bench_formats FILE [--rank 16] [--reps 10] [--iters 10] [--threads N]\n"
               "                     [--dtype float32|float64] [--formats coo,csf-allmode,...,auto]\n"
               "                     [--only mttkrp,cpd] [--tensor NAME]\n",
               message.c_str());
  std::exit(2);
}

int parse_int(const std::string& opt, const std::string& s, int min) {
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || v < min) usage(opt + ": expected an integer >= " + std::to_string(min) + ", got '" + s + "'");
  return static_cast<int>(v);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

bool parse_policy(const std::string& format, spt_csf_policy* policy) {
  if (format == "csf-onemode") *policy = SPT_CSF_ONEMODE;
  else if (format == "csf-twomode") *policy = SPT_CSF_TWOMODE;
  else if (format == "csf-allmode") *policy = SPT_CSF_ALLMODE;
  else if (format == "csf" || format == "csf-auto") *policy = SPT_CSF_AUTO;
  else return false;
  return true;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value after " + a);
      return argv[++i];
    };
    if (a == "--rank") {
      o.ranks.clear();
      for (auto& r : split(value())) o.ranks.push_back(static_cast<unsigned>(parse_int("--rank", r, 1)));
    } else if (a == "--reps") o.reps = parse_int(a, value(), 1);
    else if (a == "--iters") o.iters = parse_int(a, value(), 1);
    else if (a == "--threads") o.threads = parse_int(a, value(), 1);
    else if (a == "--tensor") o.tensor = value();
    else if (a == "--formats") {
      o.formats = split(value());
      spt_csf_policy p;
      for (auto& f : o.formats)
        if (f != "coo" && f != "auto" && f != "hicoo" && f != "csf-memo" && !parse_policy(f, &p)) usage("--formats: unknown format '" + f + "'");
    } else if (a == "--dtype") {
      std::string d = value();
      if (!parse_dtype_name(d, &o.dtype)) usage("--dtype: expected float32 or float64, got '" + d + "'");
    } else if (a == "--only") {
      o.run_mttkrp = o.run_cpd = false;
      for (auto& b : split(value())) {
        if (b == "mttkrp") o.run_mttkrp = true;
        else if (b == "cpd") o.run_cpd = true;
        else usage("--only: unknown benchmark '" + b + "'");
      }
    } else if (a == "-h" || a == "--help") usage("benchmark of MTTKRP and CP-ALS per storage format");
    else if (!a.empty() && a[0] == '-') usage("unknown option '" + a + "'");
    else if (o.path.empty()) o.path = a;
    else usage("unexpected argument '" + a + "'");
  }
  if (o.path.empty()) usage("missing FILE");
  if (o.tensor.empty()) o.tensor = tensor_stem(o.path);
  return o;
}

using Env = BenchEnv;

struct Shape {
  uint32_t order = 0;
  spt_nnz nnz = 0;
  std::vector<spt_index> dims;
};

const char* dtype_name(spt_dtype d) { return d == SPT_FLOAT32 ? "float32" : "float64"; }

Record base_record(const Env& env, const Options& o, const Shape& s, const char* bench, const std::string& format) {
  Record r;
  r.str("bench", bench).str("format", format).str("backend", "cpu").str("device", env.device);
  r.integer("threads", env.threads).integer("ranks", 1).str("tensor", o.tensor);
  r.integer("order", s.order).integer("nnz", static_cast<long long>(s.nnz));
  return r;
}

void finish_record(Record& r, const Env& env) { r.str("date", env.date).str("commit", env.commit).print(); }

double factor_bytes(const Shape& s, unsigned rank, uint32_t mode, double valbytes) {
  double bytes = 0;
  for (uint32_t m = 0; m < s.order; ++m)
    if (m != mode) bytes += static_cast<double>(s.dims[m]) * rank * valbytes;
  return bytes + static_cast<double>(s.dims[mode]) * rank * valbytes;
}

double mttkrp_flops(const Shape& s, unsigned rank) {
  return static_cast<double>(s.order) * static_cast<double>(s.nnz) * rank;
}

struct CsfDeleter {
  void operator()(spt_csf* x) const { spt_csf_free(x); }
};
using CsfPtr = std::unique_ptr<spt_csf, CsfDeleter>;

// CPU time of the process, all threads (seconds).
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void bench_mttkrp(Env& env, const Options& o, const Shape& s, spt_coo* x, const std::string& format, unsigned rank) {
  if (format == "csf-memo") return;  // a sweep-level strategy: measured by cpd_iter only
  spt_csf_policy policy = SPT_CSF_AUTO;
  const bool csf = parse_policy(format, &policy);
  const bool hicoo = format == "hicoo";
  CsfPtr tree;
  spt_hicoo* hicoo_handle = nullptr;
  double build_ms = 0, format_bytes = static_cast<double>(s.nnz) * (s.order * 4.0 + (o.dtype == SPT_FLOAT32 ? 4 : 8));
  if (csf) {
    spt_csf* raw = nullptr;
    double t0 = now_seconds();
#ifdef SPT_BENCH_CSF_CREATE  // trees before the options struct (cpu_f32_before_after.sh's base side)
    check(spt_csf_create(env.ctx, x, policy, &raw), env.ctx, "spt_csf_create");
#else
    spt_csf_options csf_opts;
    spt_csf_options_init(&csf_opts);
    csf_opts.policy = policy;
    check(spt_csf_from_coo(env.ctx, x, &csf_opts, &raw), env.ctx, "spt_csf_from_coo");
#endif
    build_ms = (now_seconds() - t0) * 1e3;
    tree.reset(raw);
    spt_csf_summary info;
    info.struct_size = sizeof(info);
#ifdef SPT_BENCH_CSF_CREATE
    check(spt_csf_info(raw, &info), env.ctx, "spt_csf_info");
#else
    check(spt_csf_info(env.ctx, raw, &info), env.ctx, "spt_csf_info");
#endif
    // An MTTKRP reads one tree: count the average tree, not all of them.
    format_bytes = static_cast<double>(info.bytes) / std::max<uint32_t>(1, info.trees);
  }
  if (hicoo) {
    double t0 = now_seconds();
    check(spt_hicoo_from_coo(env.ctx, x, nullptr, &hicoo_handle), env.ctx, "spt_hicoo_from_coo");
    build_ms = (now_seconds() - t0) * 1e3;
    spt_hicoo_statistics st;
    std::memset(&st, 0, sizeof(st));
    st.struct_size = sizeof(st);
    check(spt_hicoo_stats(env.ctx, hicoo_handle, &st), env.ctx, "spt_hicoo_stats");
    format_bytes = static_cast<double>(st.hicoo_bytes);
  }
  std::vector<MatrixPtr> factors;
  std::vector<const spt_matrix*> pointers;
  for (uint32_t m = 0; m < s.order; ++m) {
    factors.push_back(random_factor(env, o.dtype, s.dims[m], rank, 100 + m));
    pointers.push_back(factors.back().get());
  }
  const double valbytes = o.dtype == SPT_FLOAT32 ? 4 : 8;
  auto call = [&](uint32_t mode, spt_matrix* out) {
    if (csf) check(spt_mttkrp_csf(env.ctx, tree.get(), pointers.data(), mode, out), env.ctx, "spt_mttkrp_csf");
    else if (hicoo)
      check(spt_mttkrp_hicoo(env.ctx, hicoo_handle, pointers.data(), mode, out), env.ctx, "spt_mttkrp_hicoo");
    else check(spt_mttkrp(env.ctx, x, pointers.data(), mode, out), env.ctx, "spt_mttkrp");
  };
  for (uint32_t mode = 0; mode < s.order; ++mode) {
    spt_matrix* out_raw = nullptr;
    check(spt_matrix_create(env.ctx, o.dtype, s.dims[mode], rank, SPT_ROW_MAJOR, &out_raw), env.ctx,
          "spt_matrix_create");
    MatrixPtr out(out_raw);
    call(mode, out.get());
    std::vector<double> ms, cpu_ms;
    for (int rep = 0; rep < o.reps; ++rep) {
      const double c0 = process_cpu_seconds(), t0 = now_seconds();
      call(mode, out.get());
      const double t1 = now_seconds(), c1 = process_cpu_seconds();
      ms.push_back((t1 - t0) * 1e3);
      cpu_ms.push_back((c1 - c0) * 1e3);
    }
    double med = median(ms);
    Record r = base_record(env, o, s, "mttkrp", format);
    r.integer("mode", mode).integer("rank", rank).str("dtype", dtype_name(o.dtype));
    r.num("ms_median", med).num("ms_min", minimum(ms)).integer("reps", o.reps);
    r.num("cpu_ms_median", median(cpu_ms)).num("cpu_ms_min", minimum(cpu_ms));
    r.num("gflops", mttkrp_flops(s, rank) / (med * 1e-3) / 1e9);
    r.num("gbps_effective", (format_bytes + factor_bytes(s, rank, mode, valbytes)) / (med * 1e-3) / 1e9);
    if (csf || hicoo) r.num("build_ms", build_ms).num("format_bytes", format_bytes);
    finish_record(r, env);
  }
  spt_hicoo_free(hicoo_handle);
}

void bench_cpd(Env& env, const Options& o, const Shape& s, spt_coo* x, const std::string& format, unsigned rank) {
  spt_cpd_options opts;
  check(spt_cpd_options_init(&opts), env.ctx, "spt_cpd_options_init");
  opts.rank = rank;
  opts.max_iters = o.iters;
  opts.tol = 0;
  opts.seed = 7;
  spt_csf_policy policy = SPT_CSF_AUTO;
  if (format == "coo") opts.format = SPT_TENSOR_FORMAT_COO;
  else if (format == "auto") opts.format = SPT_TENSOR_FORMAT_AUTO;
  else if (format == "hicoo") opts.format = SPT_TENSOR_FORMAT_HICOO;
  else if (format == "csf-memo") {
    opts.format = SPT_TENSOR_FORMAT_CSF;
    opts.csf_policy = SPT_CSF_MEMOIZED;
  } else if (parse_policy(format, &policy)) {
    opts.format = SPT_TENSOR_FORMAT_CSF;
    opts.csf_policy = policy;
  }
  spt_ktensor* k = nullptr;
  double t0 = now_seconds();
  check(spt_cpd_als(env.ctx, x, &opts, &k), env.ctx, "spt_cpd_als");
  double total_ms = (now_seconds() - t0) * 1e3;
  double fit = 0;
  int count = 0;
  const double* seconds = nullptr;
  spt_status st = spt_ktensor_result(k, &fit, nullptr, nullptr);
  if (st >= 0) st = spt_ktensor_history(k, &count, nullptr, &seconds);
  std::vector<double> ms;
  for (int i = 0; st >= 0 && i < count; ++i) ms.push_back(seconds[i] * 1e3);
  spt_ktensor_free(k);
  check(st, env.ctx, "reading the CP-ALS result");
  double med = median(ms);
  Record r = base_record(env, o, s, "cpd_iter", format);
  r.integer("mode", -1).integer("rank", rank).str("dtype", dtype_name(o.dtype));
  r.num("ms_median", med).num("ms_min", minimum(ms)).integer("reps", count);
  r.num("gflops", med > 0 ? s.order * mttkrp_flops(s, rank) / (med * 1e-3) / 1e9 : 0);
  r.num("fit", fit).num("ms_total", total_ms).integer("iters", o.iters);
  finish_record(r, env);
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  Env env;
  try {
    env.open(o.threads);

    spt_coo* x = read_tensor(env.ctx, o.path, o.dtype);
    std::unique_ptr<spt_coo, spt_status (*)(spt_coo*)> tensor(x, spt_coo_free);
    Shape s;
#ifdef SPT_BENCH_OLD_COO_INFO  // trees before the summary structs (cpu_f32_before_after.sh's base side)
    spt_dtype stored_dtype;
    check(spt_coo_info(x, &stored_dtype, &s.order, &s.nnz), env.ctx, "spt_coo_info");
#else
    spt_coo_summary info;
    info.struct_size = sizeof info;
    check(spt_coo_info(env.ctx, x, &info), env.ctx, "spt_coo_info");
    s.order = info.order;
    s.nnz = info.nnz;
#endif
    s.dims.resize(s.order);
    check(spt_coo_dims(x, s.dims.data()), env.ctx, "spt_coo_dims");
    std::fprintf(stderr, "bench_formats: %s order %u nnz %llu (%s, %d threads)\n", o.tensor.c_str(), s.order,
                 static_cast<unsigned long long>(s.nnz), dtype_name(o.dtype), env.threads);
    for (unsigned rank : o.ranks)
      for (const std::string& format : o.formats) {
        if (o.run_mttkrp && format != "auto") bench_mttkrp(env, o, s, x, format, rank);
        if (o.run_cpd) bench_cpd(env, o, s, x, format, rank);
      }
  } catch (const Failure& e) {
    std::fprintf(stderr, "bench_formats: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
