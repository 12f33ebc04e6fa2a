// Distributed CP-ALS benchmark (libsptensor_mpi), run under mpirun:
//
//   mpirun -np P bench_mpi (--file FILE | --synthetic NNZ [--dims I,J,K] [--zipf S])
//          [-r R] [--iters N] [--decomposition medium|coarse|both] [--grid AxBxC]
//          [--dtype float64|float32] [--threads T] [--seed S] [--format auto|coo|csf|hicoo]
//          [--backend auto|cpu|cuda]
//
// Rank 0 prints one JSON Lines record per decomposition (bench "cpd_iter",
// backend "mpi"): time per iteration (median and min over the sweeps, the
// slowest rank's time), bytes per iteration measured (all ranks; reduce,
// expand and allreduce parts), the medium-grained model's prediction
// (connectivity-1 volume of the partition) and the dense worst case, the
// load imbalance (max / mean nonzeros per rank), setup time and bytes;
// "local" names where the ranks' local MTTKRPs ran (--backend: cpu, or
// cuda = one GPU per rank).
//
// --synthetic NNZ generates the tensor in parallel (rank r draws its
// NNZ/P nonzeros from seed + r; no rank ever holds the whole tensor): each
// index is Zipf-like (log-uniform: P(i) ~ 1/(i+1)), scattered over the
// mode by a fixed affine permutation so heavy slices are not adjacent;
// values uniform in [0.5, 1.5). Default dims 20M x 10M x 2M for 200M nonzeros,
// scaled linearly with NNZ (--dims I,J,K overrides).
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "sptensor/sptensor_mpi.h"

namespace {

using namespace spt_bench;

int g_rank = 0;

struct Options {
  std::string file;
  uint64_t synthetic_nnz = 0;
  std::vector<spt_index> dims;
  double zipf = 1.0;
  spt_index rank = 16;
  int iters = 10;
  std::string decomposition = "both";
  std::vector<int> grid;
  spt_dtype dtype = SPT_FLOAT64;
  int threads = 0;
  uint64_t seed = 1;
  std::string format = "auto";
  std::string backend = "auto";
  bool verbose = false;  // rank 0 logs at verbosity 1 (formats, trees)
};

std::vector<long long> split_numbers(const std::string& s, char sep) {
  std::vector<long long> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    out.push_back(std::atoll(s.substr(start, end - start).c_str()));
    start = end + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw Failure(a + " needs a value");
      return argv[++i];
    };
    if (a == "--file") o.file = next();
    else if (a == "--synthetic") o.synthetic_nnz = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--dims") for (long long d : split_numbers(next(), ',')) o.dims.push_back(static_cast<spt_index>(d));
    else if (a == "--zipf") o.zipf = std::atof(next().c_str());
    else if (a == "-r" || a == "--rank") o.rank = static_cast<spt_index>(std::atoi(next().c_str()));
    else if (a == "--iters") o.iters = std::atoi(next().c_str());
    else if (a == "--decomposition") o.decomposition = next();
    else if (a == "--grid") for (long long g : split_numbers(next(), 'x')) o.grid.push_back(static_cast<int>(g));
    else if (a == "--dtype") {
      if (!parse_dtype_name(next(), &o.dtype)) throw Failure("--dtype must be float32 or float64");
    } else if (a == "--threads") o.threads = std::atoi(next().c_str());
    else if (a == "--seed") o.seed = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--format") o.format = next();
    else if (a == "--backend") o.backend = next();
    else if (a == "--verbose") o.verbose = true;
    else throw Failure("unknown argument " + a);
  }
  if (o.file.empty() == (o.synthetic_nnz == 0)) throw Failure("give exactly one of --file FILE and --synthetic NNZ");
  if (o.format != "auto" && o.format != "coo" && o.format != "csf" && o.format != "hicoo")
    throw Failure("--format must be auto, coo, csf or hicoo");
  if (o.backend != "auto" && o.backend != "cpu" && o.backend != "cuda")
    throw Failure("--backend must be auto, cpu or cuda");
  if (o.decomposition != "medium" && o.decomposition != "coarse" && o.decomposition != "both")
    throw Failure("--decomposition must be medium, coarse or both");
  if (o.synthetic_nnz && o.dims.empty()) {
    // about 200M nonzeros over 20M x 10M x 2M rows by default (scaled with NNZ)
    const double scale = static_cast<double>(o.synthetic_nnz) / 2e8;
    o.dims = {static_cast<spt_index>(std::max(2.0, 2e7 * scale)), static_cast<spt_index>(std::max(2.0, 1e7 * scale)),
              static_cast<spt_index>(std::max(2.0, 2e6 * scale))};
  }
  return o;
}

uint64_t gcd(uint64_t a, uint64_t b) { return b ? gcd(b, a % b) : a; }

spt_mpi_tensor* synthetic(const Options& o, spt_context* ctx, int size) {
  const uint32_t order = static_cast<uint32_t>(o.dims.size());
  const uint64_t b = o.synthetic_nnz * static_cast<uint64_t>(g_rank) / static_cast<uint64_t>(size);
  const uint64_t e = o.synthetic_nnz * static_cast<uint64_t>(g_rank + 1) / static_cast<uint64_t>(size);
  const uint64_t n = e - b;
  std::vector<spt_index> ind(n * order);
  std::vector<double> val(n);
  std::mt19937_64 gen(o.seed * 1000003ull + static_cast<uint64_t>(g_rank));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (uint32_t m = 0; m < order; ++m) {
    const uint64_t dim = o.dims[m];
    uint64_t mult = 2654435761ull % dim;
    while (dim > 1 && (mult == 0 || gcd(mult, dim) != 1)) mult = (mult + 1) % dim;
    const double log_range = std::log(static_cast<double>(dim) + 1.0);
    for (uint64_t k = 0; k < n; ++k) {
      // log-uniform (Zipf exponent 1); --zipf s sharpens (s > 1) or flattens it
      const double x = std::pow(u(gen), o.zipf);
      uint64_t i = static_cast<uint64_t>(std::exp(x * log_range)) - 1;
      if (i >= dim) i = dim - 1;
      ind[m * n + k] = static_cast<spt_index>(dim > 1 ? (i * mult + 12345) % dim : 0);
    }
  }
  for (uint64_t k = 0; k < n; ++k) val[k] = 0.5 + u(gen);
  spt_mpi_tensor* x = nullptr;
  if (o.dtype == SPT_FLOAT32) {
    std::vector<float> f(val.begin(), val.end());
    check(spt_mpi_tensor_create(MPI_COMM_WORLD, ctx, SPT_FLOAT32, order, o.dims.data(), n, ind.data(), n, 0, f.data(),
                                0, &x),
          ctx, "spt_mpi_tensor_create");
  } else {
    check(spt_mpi_tensor_create(MPI_COMM_WORLD, ctx, SPT_FLOAT64, order, o.dims.data(), n, ind.data(), n, 0,
                                val.data(), 0, &x),
          ctx, "spt_mpi_tensor_create");
  }
  return x;
}

void run_one(const Options& o, BenchEnv& env, spt_mpi_tensor* x, const std::string& name, double read_seconds,
             spt_mpi_decomposition decomposition) {
  spt_mpi_cpd_options co;
  spt_mpi_cpd_options_init(&co);
  co.rank = o.rank;
  co.max_iters = o.iters;
  co.tol = 0.0;
  co.seed = o.seed;
  co.decomposition = decomposition;
  co.format = o.format == "coo"     ? SPT_TENSOR_FORMAT_COO
              : o.format == "csf"   ? SPT_TENSOR_FORMAT_CSF
              : o.format == "hicoo" ? SPT_TENSOR_FORMAT_HICOO
                                    : SPT_TENSOR_FORMAT_AUTO;
  co.grid = decomposition == SPT_MPI_MEDIUM_GRAINED && !o.grid.empty() ? o.grid.data() : nullptr;
  spt_mpi_ktensor* k = nullptr;
  check(spt_mpi_cpd_als(MPI_COMM_WORLD, env.ctx, x, &co, &k), env.ctx, "spt_mpi_cpd_als");
  spt_mpi_cpd_stats s;
  s.struct_size = sizeof(s);
  check(spt_mpi_ktensor_stats(k, &s), env.ctx, "spt_mpi_ktensor_stats");
  spt_ktensor* local = nullptr;
  spt_mpi_ktensor_local(k, &local);
  int count = 0;
  const double *fits = nullptr, *seconds = nullptr;
  spt_ktensor_history(local, &count, &fits, &seconds);
  std::vector<double> ms;
  for (int i = 0; i < count; ++i) ms.push_back(seconds[i] * 1e3);
  spt_mpi_tensor_summary info;
  info.struct_size = sizeof info;
  spt_mpi_tensor_info(env.ctx, x, &info);
  const uint32_t order = info.order;
  const spt_nnz nnz = info.global_nnz;
  if (g_rank == 0) {
    std::string grid;
    for (uint32_t m = 0; m < order; ++m) grid += (m ? "x" : "") + std::to_string(s.grid[m]);
    Record r;
    r.str("bench", "cpd_iter").str("format", o.format).str("backend", "mpi").str("local", o.backend)
        .str("device", env.device)
        .integer("threads", env.threads).integer("ranks", s.ranks).str("tensor", name).integer("order", order)
        .integer("nnz", static_cast<long long>(nnz)).integer("mode", -1).integer("rank", o.rank)
        .str("dtype", o.dtype == SPT_FLOAT32 ? "float32" : "float64")
        .str("decomposition", decomposition == SPT_MPI_MEDIUM_GRAINED ? "medium" : "coarse").str("grid", grid)
        .num("ms_median", median(ms)).num("ms_min", minimum(ms)).integer("reps", count)
        .num("ms_mttkrp", s.mttkrp_seconds_per_iteration * 1e3)
        .num("ms_exchange", s.exchange_seconds_per_iteration * 1e3)
        .num("ms_allreduce", s.allreduce_seconds_per_iteration * 1e3)
        .num("bytes_per_iter", s.bytes_per_iteration).num("bytes_reduce_per_iter", s.bytes_reduce_per_iteration)
        .num("bytes_expand_per_iter", s.bytes_expand_per_iteration)
        .num("bytes_allreduce_per_iter", s.bytes_allreduce_per_iteration)
        .num("model_bytes_per_iter", s.model_bytes_per_iteration)
        .num("dense_bound_bytes_per_iter", s.dense_bound_bytes_per_iteration)
        .num("max_rank_bytes_per_iter", s.max_rank_bytes_per_iteration).num("imbalance", s.nnz_imbalance)
        .integer("nnz_max_rank", static_cast<long long>(s.nnz_max))
        .integer("nnz_min_rank", static_cast<long long>(s.nnz_min)).num("setup_s", s.setup_seconds)
        .num("setup_bytes", static_cast<double>(s.setup_bytes)).num("read_s", read_seconds)
        .num("fit", count ? fits[count - 1] : 0.0).str("date", env.date).str("commit", env.commit);
    r.print();
  }
  spt_mpi_ktensor_free(k);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int rc = 0;
  try {
    Options o = parse(argc, argv);
    BenchEnv env;
    env.open(o.threads);
    if (o.verbose && g_rank == 0) {
      spt_context_set_verbosity(env.ctx, 1);
      spt_context_set_log(env.ctx, [](void*, int, const char* text) { std::fprintf(stderr, "log: %s\n", text); }, nullptr);
    }
    const spt_backend backend = o.backend == "cuda" ? SPT_BACKEND_CUDA : o.backend == "cpu" ? SPT_BACKEND_CPU
                                                                                        : SPT_BACKEND_AUTO;
    // Every rank must take the backend, or none goes on (no rank left waiting).
    const int took = spt_context_set_backend(env.ctx, backend) == SPT_OK ? 1 : 0;
    int all_took = 0;
    MPI_Allreduce(&took, &all_took, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!took)
      std::fprintf(stderr, "bench_mpi: rank %d: --backend %s: %s\n", g_rank, o.backend.c_str(),
                   spt_last_error(env.ctx));
    if (!all_took) throw Failure("--backend " + o.backend + " failed on some rank");
    spt_mpi_tensor* x = nullptr;
    std::string name;
    const double t0 = MPI_Wtime();
    if (!o.file.empty()) {
      spt_read_options ro;
      spt_read_options_init(&ro);
      ro.dtype = o.dtype;
      check(spt_mpi_read(MPI_COMM_WORLD, env.ctx, o.file.c_str(), &ro, &x), env.ctx, "reading " + o.file);
      name = tensor_stem(o.file);
    } else {
      x = synthetic(o, env.ctx, size);
      name = "synthetic-zipf-" + std::to_string(o.synthetic_nnz);
      for (size_t m = 0; m < o.dims.size(); ++m) name += (m ? "x" : "-") + std::to_string(o.dims[m]);
    }
    const double read_seconds = MPI_Wtime() - t0;
    if (o.decomposition != "coarse") run_one(o, env, x, name, read_seconds, SPT_MPI_MEDIUM_GRAINED);
    if (o.decomposition != "medium") run_one(o, env, x, name, read_seconds, SPT_MPI_COARSE_GRAINED);
    spt_mpi_tensor_free(x);
  } catch (const Failure& e) {
    if (g_rank == 0) std::fprintf(stderr, "bench_mpi: %s\n", e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
