// bench_reorder: cost of computing each index reordering, and COO MTTKRP time
// per mode before and after relabelling, using only the public C API.
//
//   bench_reorder FILE [--rank 16] [--reps 10] [--order-reps 3] [--iterations 3]
//                      [--dtype float32|float64 (default float32)] [--tensor NAME]
//                      [--methods none,lexi,bfs,random,random+lexi] [--hicoo]
//
// JSON Lines on stdout (keys of ../shared/DESIGN.md "Benchmarks"):
//  - bench "reorder": spt_reorder_compute wall time for `method`
//    (--order-reps runs; the result is the same every run). Extra keys:
//    method, iterations (LEXI only), variant (the --methods entry; "a+b"
//    means method b computed on and applied after method a's relabelling).
//  - bench "mttkrp", format "coo", with key `reorder` = method ("none" = the
//    file's labels): the tensor relabelled (spt_coo_relabeled_copy), then per
//    mode spt_coo_sort with that mode first (the other modes after it in
//    increasing order) and spt_mttkrp, 1 warm-up call and --reps timed calls.
//    Extra key sort_ms (the spt_coo_sort before the calls).
//  - with --hicoo, per method: bench "hicoo_stats" (spt_hicoo_from_coo with
//    default options on the relabelled tensor: build_ms, B, L, n_b, alpha_b,
//    mean and geometric-mean nonzeros per block, c_b, hicoo/coo bytes) and
//    bench "mttkrp", format "hicoo" (spt_mttkrp_hicoo per mode, timed as
//    above).
// Notes go to stderr. Run with OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "sptensor/sptensor.h"

namespace {

using namespace spt_bench;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

std::string cpu_model() {
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (!f) return "unknown";
  char line[512];
  std::string model = "unknown";
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "model name", 10) == 0) {
      const char* colon = std::strchr(line, ':');
      if (colon) {
        model = colon + 2;
        if (!model.empty() && model.back() == '\n') model.pop_back();
      }
      break;
    }
  }
  std::fclose(f);
  return model;
}

struct Options {
  std::string file, tensor, dtype = "float32";
  unsigned rank = 16;
  int reps = 10, order_reps = 3, iterations = 3;
  std::vector<std::string> methods = {"none", "lexi", "bfs", "random", "random+lexi", "random+bfs"};
  bool hicoo = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Failure("missing value after " + a);
      return argv[++i];
    };
    if (a == "--rank") o.rank = static_cast<unsigned>(std::stoul(value()));
    else if (a == "--reps") o.reps = std::stoi(value());
    else if (a == "--order-reps") o.order_reps = std::stoi(value());
    else if (a == "--iterations") o.iterations = std::stoi(value());
    else if (a == "--dtype") o.dtype = value();
    else if (a == "--tensor") o.tensor = value();
    else if (a == "--methods") o.methods = split(value());
    else if (a == "--hicoo") o.hicoo = true;
    else if (!a.empty() && a[0] == '-') throw Failure("unknown option " + a);
    else o.file = a;
  }
  if (o.file.empty()) throw Failure("usage: bench_reorder FILE [--rank R] [--reps N] [--methods none,lexi,bfs,random]");
  if (o.tensor.empty()) {
    std::string stem = o.file.substr(o.file.find_last_of('/') + 1);
    o.tensor = stem.substr(0, stem.find('.'));
  }
  return o;
}

struct Env {
  spt_context* ctx = nullptr;
  int threads = 1;
  std::string device, date, commit;
};

// A record with the keys every line carries.
Record head(const Env& env, const Options& o, const char* bench, uint32_t order, spt_nnz nnz,
            const char* format = "coo") {
  Record r;
  r.str("bench", bench)
      .str("format", format)
      .str("backend", "cpu")
      .str("device", env.device)
      .integer("threads", env.threads)
      .integer("ranks", 1)
      .str("tensor", o.tensor)
      .integer("order", order)
      .integer("nnz", static_cast<long long>(nnz))
      .str("dtype", o.dtype)
      .str("date", env.date)
      .str("commit", env.commit);
  return r;
}

spt_reorder_method method_of(const std::string& m) {
  if (m == "lexi") return SPT_REORDER_LEXI;
  if (m == "bfs") return SPT_REORDER_BFS_MCS;
  if (m == "random") return SPT_REORDER_RANDOM;
  throw Failure("unknown method " + m);
}

double median_ms_of(int reps, const std::function<void()>& call) {
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const double t = now_seconds();
    call();
    ms.push_back((now_seconds() - t) * 1e3);
  }
  return median(ms);
}

void bench_hicoo(const Env& env, const Options& o, spt_coo* y, const std::vector<const spt_matrix*>& factors,
                 const std::vector<spt_index>& dims, const std::string& method) {
  spt_coo_summary info;
  info.struct_size = sizeof info;
  check(spt_coo_info(env.ctx, y, &info), env.ctx, "info");
  const spt_dtype dtype = info.dtype;
  const uint32_t order = info.order;
  const spt_nnz nnz = info.nnz;
  spt_hicoo* raw = nullptr;
  const double t0 = now_seconds();
  check(spt_hicoo_from_coo(env.ctx, y, nullptr, &raw), env.ctx, "spt_hicoo_from_coo");
  const double build_ms = (now_seconds() - t0) * 1e3;
  std::unique_ptr<spt_hicoo, decltype(&spt_hicoo_free)> h(raw, spt_hicoo_free);
  spt_hicoo_statistics st;
  std::memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  check(spt_hicoo_stats(env.ctx, h.get(), &st), env.ctx, "spt_hicoo_stats");
  head(env, o, "hicoo_stats", order, nnz, "hicoo")
      .integer("mode", -1)
      .integer("rank", 0)
      .str("reorder", method)
      .num("build_ms", build_ms)
      .integer("block_size", st.block_size)
      .integer("superblock_size", st.superblock_size)
      .integer("num_blocks", static_cast<long long>(st.num_blocks))
      .num("block_ratio", st.block_ratio)
      .num("mean_nnz_per_block", st.mean_nnz_per_block)
      .num("geomean_nnz_per_block", st.geomean_nnz_per_block)
      .num("slice_per_block", st.slice_per_block)
      .integer("hicoo_bytes", static_cast<long long>(st.hicoo_bytes))
      .integer("coo_bytes", static_cast<long long>(st.coo_bytes))
      .print();
  for (uint32_t mode = 0; mode < order; ++mode) {
    spt_matrix* out_raw = nullptr;
    check(spt_matrix_create(env.ctx, dtype, dims[mode], o.rank, SPT_ROW_MAJOR, &out_raw), env.ctx, "out");
    std::unique_ptr<spt_matrix, decltype(&spt_matrix_free)> out(out_raw, spt_matrix_free);
    auto call = [&] {
      check(spt_mttkrp_hicoo(env.ctx, h.get(), factors.data(), mode, out.get()), env.ctx, "spt_mttkrp_hicoo");
    };
    call();
    const double med = median_ms_of(o.reps, call);
    head(env, o, "mttkrp", order, nnz, "hicoo")
        .integer("mode", mode)
        .integer("rank", o.rank)
        .str("reorder", method)
        .num("ms_median", med)
        .integer("reps", o.reps)
        .num("gflops", double(order) * double(nnz) * o.rank / (med * 1e-3) / 1e9)
        .null("gbps_effective")
        .print();
  }
}

void run(const Options& o) {
  Env env;
  check(spt_context_create(&env.ctx), nullptr, "spt_context_create");
  std::unique_ptr<spt_context, decltype(&spt_context_free)> ctx_guard(env.ctx, spt_context_free);
  check(spt_context_get_threads(env.ctx, &env.threads), env.ctx, "threads");
  env.device = cpu_model();
  const char* commit = std::getenv("SPT_COMMIT");
  env.commit = commit ? commit : "unknown";
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  env.date = date;

  spt_coo* raw = read_tensor(env.ctx, o.file, o.dtype == "float64" ? SPT_FLOAT64 : SPT_FLOAT32);
  std::unique_ptr<spt_coo, decltype(&spt_coo_free)> x(raw, spt_coo_free);
  spt_coo_summary info;
  info.struct_size = sizeof info;
  check(spt_coo_info(env.ctx, x.get(), &info), env.ctx, "info");
  const uint32_t order = info.order;
  const spt_nnz nnz = info.nnz;
  const spt_dtype dtype = info.dtype;
  std::vector<spt_index> dims(order);
  check(spt_coo_dims(x.get(), dims.data()), env.ctx, "dims");
  std::fprintf(stderr, "%s: order %u, nnz %llu, %d threads\n", o.tensor.c_str(), order,
               static_cast<unsigned long long>(nnz), env.threads);

  // Factors: uniform [0,1) from a fixed seed, same values for every variant
  // (row i of the original labels moves with its index).
  std::vector<std::unique_ptr<spt_matrix, decltype(&spt_matrix_free)>> factors;
  for (uint32_t m = 0; m < order; ++m) {
    spt_matrix* f = nullptr;
    check(spt_matrix_create(env.ctx, dtype, dims[m], o.rank, SPT_ROW_MAJOR, &f), env.ctx, "factor");
    factors.emplace_back(f, spt_matrix_free);
    void* data = nullptr;
    check(spt_matrix_data(f, &data), env.ctx, "factor data");
    uint64_t state = 12345 + m;
    for (spt_nnz k = 0; k < spt_nnz(dims[m]) * o.rank; ++k) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const double v = static_cast<double>(state >> 11) * 0x1.0p-53;
      if (dtype == SPT_FLOAT32) static_cast<float*>(data)[k] = static_cast<float>(v);
      else static_cast<double*>(data)[k] = v;
    }
  }

  for (const std::string& method : o.methods) {
    // The tensor and factors in the labels of this variant. "a+b" applies
    // method a, then method b to a's result (e.g. random+lexi: how much of
    // a lost order LEXI-ORDER recovers).
    spt_coo* y_raw = nullptr;
    check(spt_coo_copy(env.ctx, x.get(), &y_raw), env.ctx, "copy");
    std::unique_ptr<spt_coo, decltype(&spt_coo_free)> y(y_raw, spt_coo_free);
    std::vector<std::unique_ptr<spt_matrix, decltype(&spt_matrix_free)>> moved;
    std::vector<const spt_matrix*> pointers;
    for (uint32_t m = 0; m < order; ++m) {
      spt_matrix* f = nullptr;
      void* data = nullptr;
      check(spt_matrix_data(factors[m].get(), &data), env.ctx, "factor data");
      check(spt_matrix_create_copy(env.ctx, dtype, dims[m], o.rank, SPT_ROW_MAJOR, data, o.rank, &f), env.ctx, "copy");
      moved.emplace_back(f, spt_matrix_free);
      pointers.push_back(f);
    }
    std::string step;
    std::stringstream steps(method);
    while (std::getline(steps, step, '+')) {
      if (step == "none") continue;
      spt_reorder_options opts;
      check(spt_reorder_options_init(&opts), env.ctx, "reorder options");
      opts.method = method_of(step);
      opts.iterations = o.iterations;
      opts.seed = 1;
      std::unique_ptr<spt_permutation, decltype(&spt_permutation_free)> perm(nullptr, spt_permutation_free);
      std::vector<double> ms;
      for (int r = 0; r < o.order_reps; ++r) {
        spt_permutation* p = nullptr;
        const double t0 = now_seconds();
        check(spt_reorder_compute(env.ctx, y.get(), &opts, &p), env.ctx, "spt_reorder_compute");
        ms.push_back((now_seconds() - t0) * 1e3);
        perm.reset(p);
      }
      head(env, o, "reorder", order, nnz)
          .integer("mode", -1)
          .integer("rank", 0)
          .str("method", step)
          .str("variant", method)
          .integer("iterations", step == "lexi" ? o.iterations : 0)
          .num("ms_median", median(ms))
          .num("ms_min", minimum(ms))
          .integer("reps", o.order_reps)
          .null("gflops")
          .null("gbps_effective")
          .print();
      check(spt_coo_relabel(env.ctx, y.get(), perm.get()), env.ctx, "relabel");
      for (uint32_t m = 0; m < order; ++m)
        check(spt_matrix_permute_rows(env.ctx, moved[m].get(), perm.get(), m), env.ctx, "permute rows");
    }
    for (uint32_t mode = 0; mode < order; ++mode) {
      std::vector<uint32_t> mode_order = {mode};
      for (uint32_t m = 0; m < order; ++m)
        if (m != mode) mode_order.push_back(m);
      const double t0 = now_seconds();
      check(spt_coo_sort(env.ctx, y.get(), mode_order.data()), env.ctx, "spt_coo_sort");
      const double sort_ms = (now_seconds() - t0) * 1e3;
      spt_matrix* out_raw = nullptr;
      check(spt_matrix_create(env.ctx, dtype, dims[mode], o.rank, SPT_ROW_MAJOR, &out_raw), env.ctx, "out");
      std::unique_ptr<spt_matrix, decltype(&spt_matrix_free)> out(out_raw, spt_matrix_free);
      check(spt_mttkrp(env.ctx, y.get(), pointers.data(), mode, out.get()), env.ctx, "spt_mttkrp");
      std::vector<double> ms;
      for (int r = 0; r < o.reps; ++r) {
        const double t1 = now_seconds();
        check(spt_mttkrp(env.ctx, y.get(), pointers.data(), mode, out.get()), env.ctx, "spt_mttkrp");
        ms.push_back((now_seconds() - t1) * 1e3);
      }
      const double med = median(ms);
      const double flops = double(order) * double(nnz) * o.rank;
      head(env, o, "mttkrp", order, nnz)
          .integer("mode", mode)
          .integer("rank", o.rank)
          .str("reorder", method)
          .num("ms_median", med)
          .num("ms_min", minimum(ms))
          .integer("reps", o.reps)
          .num("gflops", flops / (med * 1e-3) / 1e9)
          .null("gbps_effective")
          .num("sort_ms", sort_ms)
          .print();
    }
    if (o.hicoo) bench_hicoo(env, o, y.get(), pointers, dims, method);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_reorder: %s\n", e.what());
    return 1;
  }
  return 0;
}
