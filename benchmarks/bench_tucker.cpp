// bench_tucker: CPU benchmark of TTMc per mode (both paths: one-shot and
// TTM chain, see src/algo/ttm_chain.hpp) and Tucker-HOOI per iteration.
//
//   bench_tucker FILE [--ranks 8,16] [--reps 5] [--iters 5] [--threads N]
//                     [--dtype float32|float64 (default float32)]
//                     [--only ttmc,hooi,orders] [--hooi-paths auto,one_shot,chain]
//                     [--tensor NAME] [--all-orders]
//
// ("orders" / --all-orders: a diagnostic "ttmc_order" record with the
// estimated work of every chain contraction order of every mode.)
// Records (JSON Lines, keys of ../shared/DESIGN.md "Benchmarks"):
//  - "ttmc", format "one_shot" / "chain": Y_(n) = X_(n) kron_{m != n} U_m
//    with rank min(R, I_m) in every mode m (core_dims), random factors; X sorted once for
//    the path (not timed, as in HOOI); 1 warm-up call then --reps timed
//    calls, median/min. chosen = the path the cost estimate picks;
//    est_flops = that path's estimated multiply-adds (also the gflops
//    numerator), est_one_shot_flops / est_chain_flops / kronecker_row_flops
//    (nnz * P) for comparison; scratch_bytes = the path's per-thread
//    intermediates (all threads); materialised_bytes = the largest
//    semi-sparse intermediate a whole-tensor chain in that order would hold
//    (what the per-slice scheme avoids); input_bytes = COO bytes of X.
//  - "tucker_iter", format "hooi-<path>": tol 0, exactly --iters sweeps,
//    random init (seed 7); median/min of the per-iteration seconds; ms_total
//    includes the per-decomposition sorting and planning. Memory: the counted
//    bytes (sorted copies, largest Y_(n), scratch) next to input_bytes, and
//    maxrss_kb (getrusage high-water mark of the whole process so far,
//    including reading the file).
//
// Run with OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1 on the shared
// 2-core machine.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "algo/ttm_chain.hpp"
#include "algo/tucker_hooi.hpp"
#include "bench_common.hpp"
#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/sort.hpp"
#include "core/ttensor.hpp"
#include "dispatch/dispatch.hpp"
#include "kernels/ttm_chain.hpp"
#include "sptensor/sptensor.h"
#include "sptensor/tucker.h"

namespace {

using namespace spt_bench;

struct Options {
  std::string path, tensor;
  std::vector<unsigned> ranks = {8, 16};
  int reps = 5, iters = 5, threads = 0;
  spt_dtype dtype = SPT_FLOAT32;
  bool run_ttmc = true, run_hooi = true;
  bool all_orders = false;  // diagnostic: W(c) of every contraction order
  std::vector<std::string> hooi_paths = {"auto"};
};

[[noreturn]] void usage(const std::string& message) {
  std::fprintf(stderr,
               "bench_tucker: %s\n"
               "usage: bench_tucker FILE [--ranks 8,16] [--reps 5] [--iters 5] [--threads N]\n"
               "                    [--dtype float32|float64] [--only ttmc,hooi,orders]\n"
               "                    [--hooi-paths auto,one_shot,chain] [--tensor NAME] [--all-orders]\n",
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

spt::TtmcPath path_of(const std::string& s) {
  if (s == "one_shot") return spt::TtmcPath::one_shot;
  if (s == "chain") return spt::TtmcPath::chain;
  if (s == "auto") return spt::TtmcPath::automatic;
  usage("unknown path '" + s + "' (auto, one_shot, chain)");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value after " + a);
      return argv[++i];
    };
    if (a == "--ranks" || a == "--rank") {
      o.ranks.clear();
      for (auto& r : split(value())) o.ranks.push_back(static_cast<unsigned>(parse_int(a, r, 1)));
    } else if (a == "--reps") o.reps = parse_int(a, value(), 1);
    else if (a == "--iters") o.iters = parse_int(a, value(), 1);
    else if (a == "--threads") o.threads = parse_int(a, value(), 1);
    else if (a == "--tensor") o.tensor = value();
    else if (a == "--all-orders") o.all_orders = true;
    else if (a == "--hooi-paths") {
      o.hooi_paths = split(value());
      for (auto& p : o.hooi_paths) path_of(p);
    } else if (a == "--dtype") {
      std::string d = value();
      if (!parse_dtype_name(d, &o.dtype)) usage("--dtype: expected float32 or float64, got '" + d + "'");
    } else if (a == "--only") {
      o.run_ttmc = o.run_hooi = false;
      for (auto& b : split(value())) {
        if (b == "ttmc") o.run_ttmc = true;
        else if (b == "hooi") o.run_hooi = true;
        else if (b == "orders") o.all_orders = true;
        else usage("--only: unknown benchmark '" + b + "'");
      }
    } else if (a == "-h" || a == "--help") usage("benchmark of TTMc (both paths) and Tucker-HOOI");
    else if (!a.empty() && a[0] == '-') usage("unknown option '" + a + "'");
    else if (o.path.empty()) o.path = a;
    else usage("unexpected argument '" + a + "'");
  }
  if (o.path.empty()) usage("missing FILE");
  if (o.tensor.empty()) o.tensor = tensor_stem(o.path);
  return o;
}

using Env = BenchEnv;

long maxrss_kb() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

Record base_record(const Env& env, const Options& o, const spt_coo_s& x, const char* bench, const std::string& format) {
  Record r;
  r.str("bench", bench).str("format", format).str("backend", "cpu").str("device", env.device);
  r.integer("threads", env.threads).integer("ranks", 1).str("tensor", o.tensor);
  r.integer("order", x.order()).integer("nnz", static_cast<long long>(x.nnz));
  return r;
}

void finish(Record& r, const Env& env) { r.str("date", env.date).str("commit", env.commit).print(); }

double input_bytes(const spt_coo_s& x) {
  return static_cast<double>(x.nnz) * (x.order() * 4.0 + spt::dtype_size(x.dtype()));
}

// R per mode, capped at the mode's dimension (coads-climatology has a
// 7-long mode; a Tucker rank cannot exceed its dimension).
std::vector<spt_index> clamped_ranks(const spt_coo_s& x, unsigned rank) {
  std::vector<spt_index> r(x.order());
  for (uint32_t m = 0; m < x.order(); ++m) r[m] = std::min<spt_index>(rank, x.dims[m]);
  return r;
}

std::string ranks_text(const std::vector<spt_index>& ranks) {
  std::string t;
  for (spt_index r : ranks) t += (t.empty() ? "" : ",") + std::to_string(r);
  return t;
}

template <typename T>
std::vector<spt::DenseMatrix<T>> random_factors(const spt_coo_s& x, const std::vector<spt_index>& ranks) {
  std::vector<spt::DenseMatrix<T>> u;
  uint64_t state = 12345;
  for (uint32_t m = 0; m < x.order(); ++m) {
    u.emplace_back(x.dims[m], ranks[m]);
    for (auto& v : u.back().values) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      v = static_cast<T>(static_cast<double>(state >> 11) * (1.0 / 9007199254740992.0));
    }
  }
  return u;
}

// The largest semi-sparse intermediate a whole-tensor chain in the plan's
// contraction order would materialise: level j has G_j fibers of L_j values
// (+ K-j-... index arrays; counted as 4 bytes per sparse mode per fiber).
double materialised_bytes(const spt::kernels::Exec& exec, const spt_coo_s& sorted, const spt::TtmcPlan& plan,
                          const std::vector<spt_index>& ranks, size_t value_size, bool chain) {
  const std::vector<uint32_t> key = chain ? plan.chain_key : plan.one_shot_key;
  std::vector<uint32_t> leaf_first;
  for (size_t j = key.size(); j-- > 1;) leaf_first.push_back(key[j]);
  const std::vector<spt_nnz> counts = spt::prefix_group_counts(exec, sorted, key);
  const size_t k = leaf_first.size();
  double best = 0, len = 1;
  for (size_t j = 0; j + 1 < k; ++j) {  // after contracting leaf_first[0..j]
    len *= ranks[leaf_first[j]];
    const double fibers = static_cast<double>(counts[k - j - 1]);
    best = std::max(best, fibers * (len * value_size + 4.0 * (k - j)));
  }
  return best;
}

template <typename T>
void bench_ttmc(Env& env, const Options& o, const spt_coo_s& x, unsigned rank) {
  spt_context_s& ctx = spt::resolve(env.ctx);
  const spt::kernels::Exec exec = spt::dispatch::exec_for(ctx);
  const std::vector<spt_index> ranks = clamped_ranks(x, rank);
  auto u = random_factors<T>(x, ranks);
  std::vector<spt::ConstMatRef<T>> f;
  for (auto& m : u) f.push_back(m.cref());
  spt::TtmcOperands automatic;
  spt::prepare_ttmc_operands(exec, x, ranks, spt::TtmcPath::automatic, automatic);
  for (spt::TtmcPath path : {spt::TtmcPath::one_shot, spt::TtmcPath::chain}) {
    spt::TtmcOperands ops;
    spt::prepare_ttmc_operands(exec, x, ranks, path, ops);
    for (uint32_t mode = 0; mode < x.order(); ++mode) {
      const spt::TtmcPlan& plan = ops.plans[mode];
      const spt::TtmcPlan& est = automatic.plans[mode];
      uint64_t p = 1;
      for (uint32_t m = 0; m < x.order(); ++m)
        if (m != mode) p *= ranks[m];
      spt::DenseMatrix<T> y(x.dims[mode], p);
      spt::run_ttmc<T>(ctx, plan, *ops.operand[mode], f.data(), y.ref());
      std::vector<double> ms;
      for (int rep = 0; rep < o.reps; ++rep) {
        const double t0 = now_seconds();
        spt::run_ttmc<T>(ctx, plan, *ops.operand[mode], f.data(), y.ref());
        ms.push_back((now_seconds() - t0) * 1e3);
      }
      const bool chain = path == spt::TtmcPath::chain;
      const double flops = chain ? est.chain_flops : est.one_shot_flops;
      const double scratch = static_cast<double>(chain ? plan.chain_scratch_bytes : plan.one_shot_scratch_bytes);
      const double med = median(ms);
      Record r = base_record(env, o, x, "ttmc", spt::ttmc_path_name(path));
      r.integer("mode", mode).integer("rank", rank).str("core_dims", ranks_text(ranks));
      r.str("dtype", spt::dtype_name(x.dtype()));
      r.num("ms_median", med).num("ms_min", minimum(ms)).integer("reps", o.reps);
      r.num("gflops", 2.0 * flops / (med * 1e-3) / 1e9);
      r.str("chosen", spt::ttmc_path_name(est.path));
      r.num("est_flops", flops).num("est_one_shot_flops", est.one_shot_flops).num("est_chain_flops", est.chain_flops);
      r.num("kronecker_row_flops", est.kronecker_row_flops);
      std::string order_text;
      for (uint32_t m : chain ? plan.chain_key : plan.one_shot_key) order_text += std::to_string(m);
      r.str("sort_key", order_text);
      r.num("scratch_bytes", scratch).num("y_bytes", static_cast<double>(y.values.size() * sizeof(T)));
      r.num("materialised_bytes",
            materialised_bytes(exec, *ops.operand[mode], plan, ranks, sizeof(T), chain));
      r.num("input_bytes", input_bytes(x)).integer("maxrss_kb", maxrss_kb());
      finish(r, env);
    }
  }
}

// Diagnostic (--all-orders): the estimated work W(c) of every contraction
// order of every mode (one sort each), to check the chain-order rule.
void all_orders(Env& env, const Options& o, const spt_coo_s& x, unsigned rank) {
  const spt::kernels::Exec exec = spt::dispatch::exec_for(spt::resolve(env.ctx));
  const std::vector<spt_index> ranks = clamped_ranks(x, rank);
  const std::vector<spt_nnz> distinct = spt::distinct_indices_per_mode(x, exec.threads);
  for (uint32_t mode = 0; mode < x.order(); ++mode) {
    std::vector<uint32_t> chain;
    for (uint32_t m = 0; m < x.order(); ++m)
      if (m != mode) chain.push_back(m);
    const std::vector<uint32_t> chosen = spt::ttmc_chain_order(mode, distinct);
    do {
      const std::vector<uint32_t> key = spt::kernels::ttm_chain_sort_order(mode, chain);
      spt_coo_s s = spt::sorting::permuted_copy(exec, x, spt::sorting::sort_permutation(exec, x, key));
      const double w = spt::nested_ttmc_flops(x.nnz, spt::prefix_group_counts(exec, s, key), chain, ranks);
      std::string text;
      for (uint32_t m : chain) text += std::to_string(m);
      Record r = base_record(env, o, x, "ttmc_order", "chain");
      r.integer("mode", mode).integer("rank", rank).str("chain", text).num("est_flops", w);
      r.boolean("rule_choice", chain == chosen);
      finish(r, env);
    } while (std::next_permutation(chain.begin(), chain.end()));
  }
}

template <typename T>
void bench_hooi(Env& env, const Options& o, const spt_coo_s& x, unsigned rank, const std::string& path_name) {
  spt_context_s& ctx = spt::resolve(env.ctx);
  const std::vector<spt_index> ranks = clamped_ranks(x, rank);
  spt_tucker_options opts;
  spt_tucker_options_init(&opts);
  opts.ranks = ranks.data();
  opts.ranks_count = x.order();
  opts.max_iters = o.iters;
  opts.tol = 0;
  opts.init = SPT_TUCKER_INIT_RANDOM;
  opts.seed = 7;
  spt::TuckerInternalOptions internal;
  internal.ttmc = path_of(path_name);
  std::vector<spt::TtmcPlan> plans;
  internal.plans_out = &plans;
  spt_ttensor_s t;
  const double t0 = now_seconds();
  spt::tucker_hooi(ctx, x, opts, t, internal);
  const double total_ms = (now_seconds() - t0) * 1e3;
  std::vector<double> ms;
  for (double s : t.seconds_history) ms.push_back(s * 1e3);
  double sorted = 0, scratch = 0, y_bytes = 0;
  std::string paths;
  for (const auto& plan : plans) {
    sorted += static_cast<double>(plan.sorted_copy_bytes);
    scratch = std::max(scratch, static_cast<double>(plan.path == spt::TtmcPath::chain ? plan.chain_scratch_bytes
                                                                                        : plan.one_shot_scratch_bytes));
    uint64_t p = 1;
    for (uint32_t m = 0; m < x.order(); ++m)
      if (m != plan.mode) p *= ranks[m];
    y_bytes = std::max(y_bytes, static_cast<double>(x.dims[plan.mode]) * p * sizeof(T));
    paths += std::string(paths.empty() ? "" : ",") + spt::ttmc_path_name(plan.path);
  }
  Record r = base_record(env, o, x, "tucker_iter", "hooi-" + path_name);
  r.integer("mode", -1).integer("rank", rank).str("core_dims", ranks_text(ranks));
  r.str("dtype", spt::dtype_name(x.dtype()));
  r.num("ms_median", median(ms)).num("ms_min", minimum(ms)).integer("reps", static_cast<long long>(ms.size()));
  r.num("fit", t.fit).num("ms_total", total_ms).integer("iters", t.iterations).str("ttmc_paths", paths);
  r.num("sorted_copies_bytes", sorted).num("y_bytes", y_bytes).num("scratch_bytes", scratch);
  r.num("input_bytes", input_bytes(x)).integer("maxrss_kb", maxrss_kb());
  finish(r, env);
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  Env env;
  try {
    env.open(o.threads);
    check(spt_context_set_backend(env.ctx, SPT_BACKEND_CPU), env.ctx, "spt_context_set_backend");

    spt_coo* raw = read_tensor(env.ctx, o.path, o.dtype);
    std::unique_ptr<spt_coo, spt_status (*)(spt_coo*)> tensor(raw, spt_coo_free);
    const spt_coo_s& x = *raw;
    std::fprintf(stderr, "bench_tucker: %s order %u nnz %llu (%s, %d threads)\n", o.tensor.c_str(), x.order(),
                 static_cast<unsigned long long>(x.nnz), spt::dtype_name(x.dtype()), env.threads);
    spt::with_dtype(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (unsigned rank : o.ranks) {
        if (o.all_orders) all_orders(env, o, x, rank);
        if (o.run_ttmc) bench_ttmc<T>(env, o, x, rank);
        if (o.run_hooi)
          for (const auto& p : o.hooi_paths) bench_hooi<T>(env, o, x, rank, p);
      }
    });
  } catch (const Failure& e) {
    std::fprintf(stderr, "bench_tucker: error: %s\n", e.what());
    return 1;
  } catch (const spt::Error& e) {
    std::fprintf(stderr, "bench_tucker: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
