// bench_cp_apr: CP-APR's Phi kernel per mode on COO (mode-grouped copies)
// and on HiCOO (one copy for every mode), the storage build times and
// bytes, and optionally whole CP-APR outer iterations per format.
//
//   bench_cp_apr FILE [--rank 16] [--reps 10] [--threads N]
//                     [--dtype float32|float64] [--iters K] [--tensor NAME]
//                     [--strategy auto|direct|privatized] (HiCOO Phi strategy)
//                     [--backend cpu|cuda|both] [--no-phi]
//
// Prints JSON Lines on stdout (keys of ../shared/DESIGN.md "Benchmarks"):
//  - bench "cp_apr_storage", format "coo"/"hicoo": build seconds
//    (ms_median of one build: all N mode groups, or one HiCOO) and bytes;
//    hicoo adds block, superblock, alpha_b, c_b.
//  - bench "cp_apr_phi", format "coo"/"hicoo", one line per mode: 1 warm-up,
//    then --reps timed calls of the CPU kernel on the same random
//    nonnegative factors; flops = nnz * R * (N + 3) (Pi: (N-2) R products,
//    model value 2R, update 2R, plus the division); key max_rel_diff = the
//    largest relative difference of the HiCOO Phi from the COO one.
//  - with --iters K > 0, bench "cp_apr_iter", format "coo"/"hicoo": a
//    K-outer-iteration spt_cp_apr (tol 0) per format, ms per outer
//    iteration (median over iterations) and the final log-likelihood.
//    --backend cuda (or both) adds format "coo" with backend "cuda": the
//    same run with the whole loop on the GPU (CUDA forced; device = the
//    GPU's name), with max_rel_diff = the largest relative difference of
//    its per-iteration log-likelihoods from the CPU COO run's; --backend
//    cuda runs the CPU on COO only (the reference), both on COO and HiCOO.
//  - --no-phi skips the storage and per-mode Phi lines (CPU kernels).
// Run with OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "core/context.hpp"
#include "core/hicoo.hpp"
#include "core/mode_groups.hpp"
#include "kernels/kernels.hpp"
#include "sptensor/sptensor.h"

namespace {

using namespace spt_bench;

struct Args {
  std::string file, tensor;
  int rank = 16, reps = 10, threads = 0, iters = 0;
  spt_dtype dtype = SPT_FLOAT32;
  std::string strategy = "auto";
  std::string backend = "cpu";  // cpu, cuda or both (for --iters)
  bool phi = true;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Failure(k + " needs a value");
      return argv[++i];
    };
    if (k == "--rank") a.rank = std::stoi(value());
    else if (k == "--reps") a.reps = std::stoi(value());
    else if (k == "--threads") a.threads = std::stoi(value());
    else if (k == "--iters") a.iters = std::stoi(value());
    else if (k == "--dtype") a.dtype = value() == "float64" ? SPT_FLOAT64 : SPT_FLOAT32;
    else if (k == "--tensor") a.tensor = value();
    else if (k == "--strategy") a.strategy = value();
    else if (k == "--backend") a.backend = value();
    else if (k == "--no-phi") a.phi = false;
    else if (!k.empty() && k[0] == '-') throw Failure("unknown option " + k);
    else a.file = k;
  }
  if (a.file.empty()) throw Failure("usage: bench_cp_apr FILE [options]");
  if (a.tensor.empty()) a.tensor = tensor_stem(a.file);
  if (a.backend != "cpu" && a.backend != "cuda" && a.backend != "both")
    throw Failure("--backend must be cpu, cuda or both");
  return a;
}

Record base_record(const Args& a, const char* bench, const char* format, int threads, uint32_t order, spt_nnz nnz,
                   const char* backend = "cpu", const std::string& device = cpu_model()) {
  const char* commit = std::getenv("SPT_COMMIT");
  Record r;
  r.str("bench", bench).str("format", format).str("backend", backend).str("device", device);
  r.integer("threads", threads).str("tensor", a.tensor).integer("order", order).integer("nnz", (long long)nnz);
  r.str("dtype", a.dtype == SPT_FLOAT32 ? "float32" : "float64");
  r.str("date", utc_now()).str("commit", commit ? commit : "unknown");
  return r;
}

template <typename T>
void bench_phi(const Args& a, const spt_coo_s& x, int threads) {
  const uint32_t order = x.order();
  const spt_nnz rank = static_cast<spt_nnz>(a.rank);
  std::mt19937_64 gen(1);
  std::uniform_real_distribution<double> u(0.1, 1.0);
  std::vector<spt::DenseMatrix<T>> f;
  for (uint32_t m = 0; m < order; ++m) {
    f.emplace_back(x.dims[m], rank);
    for (auto& v : f.back().values) v = static_cast<T>(u(gen));
  }
  std::vector<spt::ConstMatRef<T>> fr;
  for (auto& m : f) fr.push_back(m.cref());
  const spt::kernels::Exec exec{threads};

  // Storage builds.
  double t0 = now_seconds();
  std::vector<spt::ModeGroups> groups(order);
  for (uint32_t m = 0; m < order; ++m) groups[m] = spt::group_by_mode(x, m);
  const double coo_build = now_seconds() - t0;
  uint64_t coo_bytes = 0;
  for (auto& g : groups) coo_bytes += g.row_ptr.size() * 8 + g.val.size() * 8 + uint64_t(order) * x.nnz * 4;
  t0 = now_seconds();
  spt::hicoo::Params params;
  params.strategy = a.strategy == "direct"       ? spt::HicooStrategy::direct
                    : a.strategy == "privatized" ? spt::HicooStrategy::privatized
                                                 : spt::HicooStrategy::automatic;
  const spt_hicoo_s h = spt::hicoo::from_coo(x, params, threads);
  const double hicoo_build = now_seconds() - t0;
  const spt::hicoo::Stats st = spt::hicoo::compute_stats(h, threads);
  base_record(a, "cp_apr_storage", "coo", threads, order, x.nnz)
      .num("ms_median", coo_build * 1e3)
      .integer("bytes", (long long)coo_bytes)
      .print();
  base_record(a, "cp_apr_storage", "hicoo", threads, order, x.nnz)
      .num("ms_median", hicoo_build * 1e3)
      .integer("bytes", (long long)st.hicoo_bytes)
      .integer("block", h.block_size())
      .integer("superblock", 1ll << h.superblock_bits)
      .num("alpha_b", st.block_ratio)
      .num("c_b", st.slice_per_block)
      .print();

  const double flops = double(x.nnz) * double(rank) * double(order + 3);
  for (uint32_t mode = 0; mode < order; ++mode) {
    spt::DenseMatrix<T> phi_coo(x.dims[mode], rank), phi_hicoo(x.dims[mode], rank);
    std::vector<double> tc, th;
    for (int rep = 0; rep <= a.reps; ++rep) {
      double s = now_seconds();
      spt::kernels::cpu::cp_apr_phi(exec, groups[mode], mode, fr.data(), 1e-10, phi_coo.ref());
      if (rep > 0) tc.push_back(now_seconds() - s);
      s = now_seconds();
      spt::kernels::cpu::cp_apr_phi_hicoo(exec, h, mode, fr.data(), 1e-10, phi_hicoo.ref());
      if (rep > 0) th.push_back(now_seconds() - s);
    }
    double max_rel = 0;
    for (size_t i = 0; i < phi_coo.values.size(); ++i) {
      const double c = phi_coo.values[i], d = phi_hicoo.values[i];
      if (c != 0) max_rel = std::max(max_rel, std::fabs(d - c) / std::fabs(c));
      else if (d != 0) max_rel = std::max(max_rel, 1.0);
    }
    for (int which = 0; which < 2; ++which) {
      const std::vector<double>& t = which == 0 ? tc : th;
      Record r = base_record(a, "cp_apr_phi", which == 0 ? "coo" : "hicoo", threads, order, x.nnz);
      r.integer("mode", mode).integer("rank", (long long)rank).num("ms_median", median(t) * 1e3);
      r.num("ms_min", minimum(t) * 1e3).integer("reps", a.reps).num("gflops", flops / median(t) * 1e-9);
      if (which == 1) r.str("strategy", a.strategy).num("max_rel_diff", max_rel);
      r.print();
    }
  }
}

// One K-outer-iteration spt_cp_apr (tol 0, seed 1) on ctx in `format`: its
// line, and its per-iteration log-likelihoods in *logliks.
void bench_iteration_run(const Args& a, spt_context* ctx, const spt_coo* x, spt_tensor_format format, int threads,
                         uint32_t order, spt_nnz nnz, const char* backend, const std::string& device,
                         const std::vector<double>* reference, std::vector<double>* logliks) {
  spt_cp_apr_options o;
  spt_cp_apr_options_init(&o);
  o.rank = static_cast<spt_index>(a.rank);
  o.max_outer_iters = a.iters;
  o.tol = 0;
  o.seed = 1;
  o.format = format;
  spt_ktensor* k = nullptr;
  const double t0 = now_seconds();
  check(spt_cp_apr(ctx, x, &o, &k), ctx, "spt_cp_apr");
  const double total = now_seconds() - t0;
  int count = 0;
  const double *ll = nullptr, *secs = nullptr;
  spt_ktensor_history(k, &count, &ll, &secs);
  Record r = base_record(a, "cp_apr_iter", format == SPT_TENSOR_FORMAT_COO ? "coo" : "hicoo", threads, order, nnz,
                         backend, device);
  r.integer("mode", -1).integer("rank", a.rank).num("ms_median", median(std::vector<double>(secs, secs + count)) * 1e3);
  r.num("ms_min", minimum(std::vector<double>(secs, secs + count)) * 1e3).integer("reps", count);
  r.num("total_s", total).num("loglik", count ? ll[count - 1] : 0.0);
  if (reference && reference->size() == size_t(count)) {
    double max_rel = 0;
    for (int i = 0; i < count; ++i)
      max_rel = std::max(max_rel, std::fabs(ll[i] - (*reference)[i]) / std::max(std::fabs((*reference)[i]), 1e-300));
    r.num("max_rel_diff", max_rel);
  }
  r.print();
  if (logliks) logliks->assign(ll, ll + count);
  spt_ktensor_free(k);
}

void bench_iterations(const Args& a, spt_context* ctx, const spt_coo* x, int threads, uint32_t order, spt_nnz nnz) {
  check(spt_context_set_backend(ctx, SPT_BACKEND_CPU), ctx, "backend CPU");
  std::vector<double> cpu_logliks;
  bench_iteration_run(a, ctx, x, SPT_TENSOR_FORMAT_COO, threads, order, nnz, "cpu", cpu_model(), nullptr,
                      &cpu_logliks);
  if (a.backend != "cuda")
    bench_iteration_run(a, ctx, x, SPT_TENSOR_FORMAT_HICOO, threads, order, nnz, "cpu", cpu_model(), nullptr,
                        nullptr);
  if (a.backend == "cpu") return;
  check(spt_context_set_backend(ctx, SPT_BACKEND_CUDA), ctx, "backend CUDA");
  spt_backend_info info{};
  info.struct_size = sizeof info;
  check(spt_context_backend_info(ctx, &info), ctx, "backend info");
  bench_iteration_run(a, ctx, x, SPT_TENSOR_FORMAT_COO, threads, order, nnz, "cuda", info.device_name, &cpu_logliks,
                      nullptr);
}

int run(const Args& a) {
  spt_context* ctx = nullptr;
  check(spt_context_create(&ctx), nullptr, "context");
  if (a.threads > 0) check(spt_context_set_threads(ctx, a.threads), ctx, "threads");
  int threads = 0;
  spt_context_get_threads(ctx, &threads);
  spt_coo* x = read_tensor(ctx, a.file, a.dtype);
  // CP-APR needs nonnegative values: take absolute values (a copy).
  spt_coo_s xs = spt::copy_coo(*x, a.dtype);
  spt::with_dtype(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* v = xs.mutable_values<T>();
    for (spt_nnz e = 0; e < xs.nnz; ++e) v[e] = std::fabs(v[e]);
    if (a.phi) bench_phi<T>(a, xs, threads);
  });
  if (a.iters > 0) bench_iterations(a, ctx, &xs, threads, xs.order(), xs.nnz);
  spt_coo_free(x);
  spt_context_free(ctx);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cp_apr: %s\n", e.what());
    return 1;
  }
}
