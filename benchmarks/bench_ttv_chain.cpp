// bench_ttv_chain: the TTV chain (X times a vector in every mode but one)
// per kept mode through spt_ttv_chain, next to the same result computed by
// N-1 single-mode spt_ttv calls, and the full contraction spt_ttv_all.
//
//   bench_ttv_chain FILE [--reps 10] [--threads N] [--dtype float32|float64] [--tensor NAME]
//
// Prints JSON Lines (keys of ../shared/DESIGN.md "Benchmarks"): bench
// "ttv_chain" (format "coo", mode = kept mode, or -1 for spt_ttv_all) with
// key method "chain", "ttv_all" or "repeated_ttv"; 1 warm-up, then --reps
// timed calls; flops = N * nnz (one multiply per mode and the add).
// Run with OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "sptensor/sptensor.h"

namespace {

using namespace spt_bench;

struct Args {
  std::string file, tensor;
  int reps = 10, threads = 0;
  spt_dtype dtype = SPT_FLOAT32;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Failure(k + " needs a value");
      return argv[++i];
    };
    if (k == "--reps") a.reps = std::stoi(value());
    else if (k == "--threads") a.threads = std::stoi(value());
    else if (k == "--dtype") a.dtype = value() == "float64" ? SPT_FLOAT64 : SPT_FLOAT32;
    else if (k == "--tensor") a.tensor = value();
    else if (!k.empty() && k[0] == '-') throw Failure("unknown option " + k);
    else a.file = k;
  }
  if (a.file.empty()) throw Failure("usage: bench_ttv_chain FILE [options]");
  if (a.tensor.empty()) a.tensor = tensor_stem(a.file);
  return a;
}

template <typename F>
std::vector<double> time_reps(int reps, F&& f) {
  std::vector<double> t;
  for (int rep = 0; rep <= reps; ++rep) {
    const double s = now_seconds();
    f();
    if (rep > 0) t.push_back(now_seconds() - s);
  }
  return t;
}

int run(const Args& a) {
  spt_context* ctx = nullptr;
  check(spt_context_create(&ctx), nullptr, "context");
  if (a.threads > 0) check(spt_context_set_threads(ctx, a.threads), ctx, "threads");
  int threads = 0;
  spt_context_get_threads(ctx, &threads);
  spt_coo* x = read_tensor(ctx, a.file, a.dtype);
  spt_coo_summary info;
  info.struct_size = sizeof info;
  spt_coo_info(ctx, x, &info);
  const uint32_t order = info.order;
  const spt_nnz nnz = info.nnz;
  std::vector<spt_index> dims(order);
  spt_coo_dims(x, dims.data());
  const size_t vsize = a.dtype == SPT_FLOAT32 ? 4 : 8;
  std::mt19937_64 gen(1);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<std::vector<char>> store(order);
  std::vector<const void*> vp(order);
  for (uint32_t m = 0; m < order; ++m) {
    store[m].resize(dims[m] * vsize);
    for (spt_index i = 0; i < dims[m]; ++i) {
      const double v = u(gen);
      if (a.dtype == SPT_FLOAT32) reinterpret_cast<float*>(store[m].data())[i] = static_cast<float>(v);
      else reinterpret_cast<double*>(store[m].data())[i] = v;
    }
    vp[m] = store[m].data();
  }
  const char* commit = std::getenv("SPT_COMMIT");
  auto record = [&](const char* method, int mode, const std::vector<double>& t) {
    Record r;
    r.str("bench", "ttv_chain").str("format", "coo").str("backend", "cpu").str("device", cpu_model());
    r.integer("threads", threads).str("tensor", a.tensor).integer("order", order).integer("nnz", (long long)nnz);
    r.integer("mode", mode).str("method", method).str("dtype", a.dtype == SPT_FLOAT32 ? "float32" : "float64");
    r.num("ms_median", median(t) * 1e3).num("ms_min", minimum(t) * 1e3).integer("reps", a.reps);
    r.num("gflops", double(order) * double(nnz) / median(t) * 1e-9);
    r.str("date", utc_now()).str("commit", commit ? commit : "unknown");
    r.print();
  };
  for (uint32_t keep = 0; keep < order; ++keep) {
    std::vector<char> out(dims[keep] * vsize);
    record("chain", static_cast<int>(keep), time_reps(a.reps, [&] {
             check(spt_ttv_chain(ctx, x, keep, vp.data(), out.data()), ctx, "spt_ttv_chain");
           }));
    record("repeated_ttv", static_cast<int>(keep), time_reps(a.reps, [&] {
             spt_coo* cur = x;
             for (uint32_t m = order; m-- > 0;) {
               if (m == keep) continue;
               spt_coo* next = nullptr;
               check(spt_ttv(ctx, cur, m, vp[m], dims[m], &next), ctx, "spt_ttv");
               if (cur != x) spt_coo_free(cur);
               cur = next;
             }
             if (cur != x) spt_coo_free(cur);
           }));
  }
  double all = 0;
  record("ttv_all", -1, time_reps(a.reps, [&] { check(spt_ttv_all(ctx, x, vp.data(), &all), ctx, "spt_ttv_all"); }));
  spt_coo_free(x);
  spt_context_free(ctx);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_ttv_chain: %s\n", e.what());
    return 1;
  }
}
