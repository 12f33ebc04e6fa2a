// bench_memo: one CP-ALS sweep of MTTKRPs (modes 0..N-1 in order) with the
// memoized CSF sequence (ADATM) against N independent COO MTTKRPs.
//
//   bench_memo FILE [--rank 16] [--threads 2] [--reps 5] [--dtype float32|float64]
//                   [--budget-mb 0 (= default)]
//
// One JSON line per variant on stdout (bench "mttkrp_sweep", format
// "csf-memo" or "coo"): ms_median / ms_min over --reps sweeps after one
// warm-up sweep, build_ms (tree build for the memoized operand), and the
// plan's modelled vector operations per sweep (each is R multiply-adds)
// with the reduction against unmemoized CSF and COO. Run with
// OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1 on small machines.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "algo/memo_mttkrp.hpp"
#include "bench_common.hpp"
#include "core/context.hpp"
#include "dispatch/dispatch.hpp"
#include "sptensor/sptensor.h"

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

template <typename T>
void run(spt_context* ctx, const spt_coo_s& x, unsigned rank, int reps, uint64_t budget, const std::string& tensor,
         int threads) {
  spt_context_s& c = *ctx;
  const uint32_t n = x.order();
  std::vector<spt::DenseMatrix<T>> factors;
  std::vector<spt::ConstMatRef<T>> refs(n);
  spt_index max_dim = 0;
  for (uint32_t m = 0; m < n; ++m) {
    factors.emplace_back(x.dims[m], rank);
    for (auto& v : factors.back().values) v = T(std::rand()) / T(RAND_MAX);
    refs[m] = {factors[m].values.data(), x.dims[m], rank, rank};
    max_dim = std::max(max_dim, x.dims[m]);
  }
  spt::DenseMatrix<T> out(max_dim, rank);
  const double b0 = now_ms();
  spt::algo::MemoizedCsfOperand<T> memo(c, x, rank, budget);
  const double build_ms = now_ms() - b0;
  auto sweep = [&](bool memoized) {
    const double t0 = now_ms();
    for (uint32_t m = 0; m < n; ++m) {
      spt::MatRef<T> o{out.values.data(), x.dims[m], rank, rank};
      if (memoized) memo.mttkrp(c, refs.data(), m, o);
      else spt::dispatch::kernel_entries::mttkrp::cpu(spt::dispatch::exec_for(c), x, refs.data(), m, o);  // the context's CPU copy
    }
    return now_ms() - t0;
  };
  for (bool memoized : {true, false}) {
    sweep(memoized);
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) ms.push_back(sweep(memoized));
    const spt::algo::MemoPlan& p = memo.plan();
    spt_bench::Record()
        .str("bench", "mttkrp_sweep")
        .str("format", memoized ? "csf-memo" : "coo")
        .str("backend", "cpu")
        .integer("threads", threads)
        .str("tensor", tensor)
        .integer("order", n)
        .integer("nnz", static_cast<long long>(x.nnz))
        .integer("rank", rank)
        .str("dtype", sizeof(T) == 4 ? "float32" : "float64")
        .num("ms_median", median(ms))
        .num("ms_min", *std::min_element(ms.begin(), ms.end()))
        .integer("reps", reps)
        .num("build_ms", memoized ? build_ms : 0.0)
        .num("memo_mib", p.memo_bytes / 1048576.0)
        .integer("ops_memo", static_cast<long long>(p.ops_per_sweep))
        .integer("ops_unmemoized", static_cast<long long>(p.ops_per_sweep_plain))
        .integer("ops_coo", static_cast<long long>(p.ops_per_sweep_coo))
        .print();
    std::fprintf(stderr, "%s\n", p.describe().c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_memo FILE [--rank R] [--threads T] [--reps N] [--dtype float32|float64] [--budget-mb MB]\n");
    return 2;
  }
  std::string path = argv[1];
  unsigned rank = 16;
  int threads = 2, reps = 5;
  uint64_t budget = 0;
  spt_dtype dtype = SPT_FLOAT32;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--rank") rank = static_cast<unsigned>(std::stoul(v));
    else if (a == "--threads") threads = std::stoi(v);
    else if (a == "--reps") reps = std::stoi(v);
    else if (a == "--budget-mb") budget = std::stoull(v) << 20;
    else if (a == "--dtype") dtype = v == "float64" ? SPT_FLOAT64 : SPT_FLOAT32;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  spt_context* ctx = nullptr;
  spt_context_create(&ctx);
  spt_context_set_threads(ctx, threads);
  spt_read_options ro;
  spt_read_options_init(&ro);
  ro.dtype = dtype;
  spt_coo* x = nullptr;
  if (spt_read(ctx, path.c_str(), &ro, &x) != SPT_OK) {
    std::fprintf(stderr, "%s\n", spt_last_error(ctx));
    return 1;
  }
  std::string tensor = path.substr(path.find_last_of('/') + 1);
  tensor = tensor.substr(0, tensor.find('.'));
  if (dtype == SPT_FLOAT32) run<float>(ctx, *x, rank, reps, budget, tensor, threads);
  else run<double>(ctx, *x, rank, reps, budget, tensor, threads);
  spt_coo_free(x);
  spt_context_free(ctx);
  return 0;
}
