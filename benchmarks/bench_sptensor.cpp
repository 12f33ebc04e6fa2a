// bench_sptensor: CPU benchmark of reading, COO MTTKRP and CP-ALS, using only
// the public C API (sptensor/sptensor.h).
//
//   bench_sptensor FILE [--rank 16,32] [--reps 10] [--iters 10] [--threads N]
//                       [--dtype float32|float64 (default float32)] [--read-reps 3]
//                       [--only read,mttkrp,cpd] [--tensor NAME]
//
// Prints one JSON object per line (JSON Lines) on stdout with the keys of
// ../shared/DESIGN.md "Benchmarks": bench, format, backend, device, threads,
// ranks, tensor, order, nnz, mode, rank, dtype, ms_median, ms_min, reps,
// gflops, gbps_effective, date, commit (from env SPT_COMMIT, else "unknown"),
// plus a few bench-specific keys. Notes go to stderr.
//
// What is measured and how it is counted:
//  - "read": spt_read of FILE as given (e.g. .tns.xz), then of the same
//    tensor written as plain .tns text and as .sptb binary to a temporary
//    directory. --read-reps repetitions each, no warm-up (the first read
//    of FILE also warms the page cache for later ones). Extra keys:
//    file_format, file_bytes, mb_per_s (file bytes / median time) and
//    text_mb_per_s (bytes of the equivalent plain .tns text / median time).
//    gbps_effective = file_bytes / median time; gflops is null.
//  - "mttkrp": spt_mttkrp per mode and rank, 1 warm-up call, then --reps
//    timed calls (wall clock); median and min reported.
//      flops = N * nnz * R per call: per nonzero and column, N-1 multiplies
//      (the value times N-1 factor entries) and one add into the output.
//      bytes = nnz * (N * 4 + valbytes)          tensor: N 32-bit indices + value
//            + sum_{m != mode} dims[m] * R * valbytes   factors read once
//            + dims[mode] * R * valbytes          output written once
//      gbps_effective = bytes / median time.
//  - "cpd_iter": spt_cpd_als with tol 0 (exactly --iters sweeps), random
//    init with seed 7; ms_median/ms_min over the per-iteration seconds of
//    the result's history (reps = iterations). flops and bytes are those of
//    the N MTTKRPs of one sweep (the dense R x R work is not counted).
//    Extra keys: fit (final), ms_total (wall time of the whole call).
//
// Run on a shared 2-core machine with OMP_WAIT_POLICY=passive
// OPENBLAS_NUM_THREADS=1 (benchmarks/run_cpu.sh does).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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
  int reps = 10;
  int iters = 10;
  int read_reps = 3;
  int threads = 0;
  spt_dtype dtype = SPT_FLOAT32;
  bool run_read = true, run_mttkrp = true, run_cpd = true;
};

[[noreturn]] void usage(const std::string& message) {
  std::fprintf(stderr,
               "bench_sptensor: %s\n"
               "usage: bench_sptensor FILE [--rank 16,32] [--reps 10] [--iters 10] [--threads N]\n"
               "                      [--dtype float32(default)|float64] [--read-reps 3] [--only read,mttkrp,cpd]\n"
               "                      [--tensor NAME]\n",
               message.c_str());
  std::exit(2);
}

int parse_int(const std::string& opt, const std::string& s, int min) {
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || v < min || v > 1000000) usage(opt + ": expected an integer >= " + std::to_string(min) + ", got '" + s + "'");
  return static_cast<int>(v);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--rank") {
      o.ranks.clear();
      for (auto& r : split(value())) o.ranks.push_back(static_cast<unsigned>(parse_int("--rank", r, 1)));
    } else if (a == "--reps") o.reps = parse_int(a, value(), 1);
    else if (a == "--iters") o.iters = parse_int(a, value(), 1);
    else if (a == "--read-reps") o.read_reps = parse_int(a, value(), 1);
    else if (a == "--threads") o.threads = parse_int(a, value(), 1);
    else if (a == "--tensor") o.tensor = value();
    else if (a == "--dtype") {
      std::string d = value();
      if (!parse_dtype_name(d, &o.dtype)) usage("--dtype: expected float32 or float64, got '" + d + "'");
    } else if (a == "--only") {
      o.run_read = o.run_mttkrp = o.run_cpd = false;
      for (auto& b : split(value())) {
        if (b == "read") o.run_read = true;
        else if (b == "mttkrp") o.run_mttkrp = true;
        else if (b == "cpd") o.run_cpd = true;
        else usage("--only: unknown benchmark '" + b + "'");
      }
    } else if (a == "-h" || a == "--help") usage("benchmark of reading, MTTKRP and CP-ALS");
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

// The keys every record starts with.
Record base_record(const Env& env, const Options& o, const Shape& s, const char* bench) {
  Record r;
  r.str("bench", bench).str("format", "coo").str("backend", "cpu").str("device", env.device);
  r.integer("threads", env.threads).integer("ranks", 1).str("tensor", o.tensor);
  r.integer("order", s.order).integer("nnz", static_cast<long long>(s.nnz));
  return r;
}

void finish_record(Record& r, const Env& env) { r.str("date", env.date).str("commit", env.commit).print(); }

spt_coo* read_file(Env& env, const Options& o, const std::string& path) {
  spt_coo* x = read_tensor(env.ctx, path, o.dtype);
  return x;
}

void bench_read_one(Env& env, const Options& o, const Shape& s, const std::string& path, const char* file_format,
                    unsigned long long text_bytes) {
  std::vector<double> ms;
  for (int rep = 0; rep < o.read_reps; ++rep) {
    double t0 = now_seconds();
    spt_coo* x = read_file(env, o, path);
    ms.push_back((now_seconds() - t0) * 1e3);
    spt_coo_free(x);
  }
  double med = median(ms);
  unsigned long long bytes = file_bytes(path);
  Record r = base_record(env, o, s, "read");
  r.integer("mode", -1).integer("rank", 0).str("dtype", dtype_name(o.dtype));
  r.num("ms_median", med).num("ms_min", minimum(ms)).integer("reps", o.read_reps).null("gflops");
  r.num("gbps_effective", bytes / (med * 1e-3) / 1e9);
  r.str("file_format", file_format).integer("file_bytes", static_cast<long long>(bytes));
  r.num("mb_per_s", bytes / (med * 1e-3) / 1e6);
  if (text_bytes) r.num("text_mb_per_s", text_bytes / (med * 1e-3) / 1e6);
  finish_record(r, env);
}

std::string file_format_of(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  size_t dot = name.find('.');
  return dot == std::string::npos ? "unknown" : name.substr(dot + 1);
}

void bench_read(Env& env, const Options& o, const Shape& s, spt_coo* x) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string pattern = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/bench_sptensor.XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  const char* dir = mkdtemp(buf.data());
  if (!dir) throw Failure("cannot create a temporary directory in " + pattern + " for the read benchmark");
  std::string text = std::string(dir) + "/tensor.tns";
  std::string binary = std::string(dir) + "/tensor.sptb";
  spt_write_options wo;
  check(spt_write_options_init(&wo), env.ctx, "spt_write_options_init");
  check(spt_write(env.ctx, x, text.c_str(), &wo), env.ctx, "writing " + text);
  check(spt_write(env.ctx, x, binary.c_str(), &wo), env.ctx, "writing " + binary);
  unsigned long long text_bytes = file_bytes(text);
  try {
    bench_read_one(env, o, s, o.path, file_format_of(o.path).c_str(), text_bytes);
    bench_read_one(env, o, s, text, "tns", text_bytes);
    bench_read_one(env, o, s, binary, "sptb", text_bytes);
  } catch (...) {
    std::remove(text.c_str());
    std::remove(binary.c_str());
    rmdir(dir);
    throw;
  }
  std::remove(text.c_str());
  std::remove(binary.c_str());
  rmdir(dir);
}

double mttkrp_bytes(const Shape& s, unsigned rank, uint32_t mode, double valbytes) {
  double bytes = static_cast<double>(s.nnz) * (s.order * 4.0 + valbytes);
  for (uint32_t m = 0; m < s.order; ++m)
    if (m != mode) bytes += static_cast<double>(s.dims[m]) * rank * valbytes;
  return bytes + static_cast<double>(s.dims[mode]) * rank * valbytes;
}

double mttkrp_flops(const Shape& s, unsigned rank) {
  return static_cast<double>(s.order) * static_cast<double>(s.nnz) * rank;
}

void bench_mttkrp(Env& env, const Options& o, const Shape& s, spt_coo* x, unsigned rank) {
  std::vector<MatrixPtr> factors;
  std::vector<const spt_matrix*> pointers;
  for (uint32_t m = 0; m < s.order; ++m) {
    factors.push_back(random_factor(env, o.dtype, s.dims[m], rank, 100 + m));
    pointers.push_back(factors.back().get());
  }
  double valbytes = o.dtype == SPT_FLOAT32 ? 4 : 8;
  for (uint32_t mode = 0; mode < s.order; ++mode) {
    spt_matrix* out_raw = nullptr;
    check(spt_matrix_create(env.ctx, o.dtype, s.dims[mode], rank, SPT_ROW_MAJOR, &out_raw), env.ctx,
          "spt_matrix_create");
    MatrixPtr out(out_raw);
    check(spt_mttkrp(env.ctx, x, pointers.data(), mode, out.get()), env.ctx, "spt_mttkrp (warm-up)");
    std::vector<double> ms;
    for (int rep = 0; rep < o.reps; ++rep) {
      double t0 = now_seconds();
      check(spt_mttkrp(env.ctx, x, pointers.data(), mode, out.get()), env.ctx, "spt_mttkrp");
      ms.push_back((now_seconds() - t0) * 1e3);
    }
    double med = median(ms);
    Record r = base_record(env, o, s, "mttkrp");
    r.integer("mode", mode).integer("rank", rank).str("dtype", dtype_name(o.dtype));
    r.num("ms_median", med).num("ms_min", minimum(ms)).integer("reps", o.reps);
    r.num("gflops", mttkrp_flops(s, rank) / (med * 1e-3) / 1e9);
    r.num("gbps_effective", mttkrp_bytes(s, rank, mode, valbytes) / (med * 1e-3) / 1e9);
    finish_record(r, env);
  }
}

void bench_cpd(Env& env, const Options& o, const Shape& s, spt_coo* x, unsigned rank) {
  spt_cpd_options opts;
  check(spt_cpd_options_init(&opts), env.ctx, "spt_cpd_options_init");
  opts.rank = rank;
  opts.max_iters = o.iters;
  opts.tol = 0;
  opts.seed = 7;
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

  double valbytes = o.dtype == SPT_FLOAT32 ? 4 : 8;
  double bytes = 0;
  for (uint32_t mode = 0; mode < s.order; ++mode) bytes += mttkrp_bytes(s, rank, mode, valbytes);
  double med = median(ms);
  Record r = base_record(env, o, s, "cpd_iter");
  r.integer("mode", -1).integer("rank", rank).str("dtype", dtype_name(o.dtype));
  r.num("ms_median", med).num("ms_min", minimum(ms)).integer("reps", count);
  r.num("gflops", med > 0 ? s.order * mttkrp_flops(s, rank) / (med * 1e-3) / 1e9 : 0);
  r.num("gbps_effective", med > 0 ? bytes / (med * 1e-3) / 1e9 : 0);
  r.num("fit", fit).num("ms_total", total_ms).integer("iters", o.iters);
  finish_record(r, env);
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  Env env;
  try {
    env.open(o.threads);

    std::fprintf(stderr, "bench_sptensor: %s (%s, %d threads)\n", o.path.c_str(), dtype_name(o.dtype), env.threads);
    double t0 = now_seconds();
    spt_coo* x = read_file(env, o, o.path);
    std::unique_ptr<spt_coo, spt_status (*)(spt_coo*)> tensor(x, spt_coo_free);
    Shape s;
    spt_coo_summary info;
    info.struct_size = sizeof info;
    check(spt_coo_info(env.ctx, x, &info), env.ctx, "spt_coo_info");
    s.order = info.order;
    s.nnz = info.nnz;
    s.dims.resize(s.order);
    check(spt_coo_dims(x, s.dims.data()), env.ctx, "spt_coo_dims");
    std::fprintf(stderr, "bench_sptensor: loaded order %u, nnz %llu in %.2f s\n", s.order,
                 static_cast<unsigned long long>(s.nnz), now_seconds() - t0);

    if (o.run_read) bench_read(env, o, s, x);
    for (unsigned rank : o.ranks) {
      if (o.run_mttkrp) bench_mttkrp(env, o, s, x, rank);
      if (o.run_cpd) bench_cpd(env, o, s, x, rank);
    }
  } catch (const Failure& e) {
    std::fprintf(stderr, "bench_sptensor: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
