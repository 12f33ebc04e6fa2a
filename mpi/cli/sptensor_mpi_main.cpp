// `sptensor-mpi`: command-line front end of libsptensor_mpi, run under mpirun.
//
//   mpirun -np P sptensor-mpi cpd FILE -r R [--iters N] [--tol T] [--grid 2x2x1]
//          [--coarse] [--seed S] [--format coo|csf|hicoo|auto] [--dtype float32|float64]
//          [--threads N] [--backend auto|cpu|cuda] [--quiet]
//
// Rank 0 prints; every rank exits with the same status: 0 success, 1 runtime
// error (unreadable file, library error), 2 usage error. Errors are one line
// on stderr (from rank 0; a --backend a rank cannot take, from that rank).
#include <mpi.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sptensor/sptensor.h"
#include "sptensor/sptensor_mpi.h"
#include "util/printable.hpp"

namespace {

using spt::util::printable;

int g_rank = 0;

struct UsageError {
  std::string message;
};

void print_usage(std::FILE* out) {
  std::fprintf(out,
               "Usage: mpirun -np P sptensor-mpi cpd FILE -r R [options]\n\n"
               "Distributed CP-ALS of a .tns file (libsptensor_mpi %s).\n\n"
               "Options:\n"
               "  -r, --rank R          number of components (required)\n"
               "  --iters N             maximum iterations (default 50)\n"
               "  --tol T               stop when the fit changes less than T (default 1e-4; 0 = run all)\n"
               "  --grid AxBxC          process grid, one size per mode, product = P (default: chosen\n"
               "                        from the dims as SPLATT does)\n"
               "  --coarse              coarse-grained decomposition (default medium-grained)\n"
               "  --seed S              random initialisation seed (default 1)\n"
               "  --format F            local storage: auto (default), coo, csf, hicoo, fcoo (hbcsf and\n"
               "                        hls are refused: CP-ALS does not run on them)\n"
               "  --dtype D             float64 (default) or float32\n"
               "  --threads N           OpenMP threads per rank (default: OpenMP's)\n"
               "  --backend B           auto (default), cpu, or cuda: each rank's local MTTKRPs on a\n"
               "                        GPU, the ranks of a host spread over its GPUs (an error\n"
               "                        where a rank has no GPU)\n"
               "  --quiet               only the summary lines, no per-iteration lines\n"
               "  -h, --help            this text\n\n"
               "Prints per iteration: fit, change, time, bytes sent by all ranks; then the final fit,\n"
               "time per iteration, bytes per iteration (measured, medium-grained model, dense bound)\n"
               "and the load imbalance (max / mean nonzeros per rank).\n"
               "Exit status: 0 success, 1 runtime error, 2 usage error.\n",
               spt_version());
}

long long parse_integer(const std::string& opt, const char* text, long long lo, long long hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (errno || end == text || *end != '\0' || v < lo || v > hi)
    throw UsageError{opt + " expects an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got '" +
                     text + "'"};
  return v;
}

double parse_double(const std::string& opt, const char* text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (errno || end == text || *end != '\0' || !(v >= 0.0))
    throw UsageError{opt + " expects a number >= 0, got '" + text + "'"};
  return v;
}

std::vector<int> parse_grid(const char* text) {
  std::vector<int> g;
  std::string s(text);
  size_t start = 0;
  while (true) {
    const size_t x = s.find('x', start);
    const std::string part = s.substr(start, x == std::string::npos ? std::string::npos : x - start);
    g.push_back(static_cast<int>(parse_integer("--grid", part.c_str(), 1, 1 << 20)));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return g;
}

struct Args {
  std::string file;
  spt_index rank = 0;
  int iters = 50;
  double tol = 1e-4;
  std::vector<int> grid;
  bool coarse = false;
  uint64_t seed = 1;
  spt_tensor_format format = SPT_TENSOR_FORMAT_AUTO;
  spt_dtype dtype = SPT_FLOAT64;
  int threads = 0;
  spt_backend backend = SPT_BACKEND_AUTO;
  bool quiet = false;
  bool help = false;
};

Args parse_args(int argc, char** argv) {
  Args a;
  if (argc < 2) throw UsageError{"missing command; usage: sptensor-mpi cpd FILE -r R (see --help)"};
  std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    a.help = true;
    return a;
  }
  if (cmd != "cpd") throw UsageError{"unknown command '" + cmd + "'; the only command is 'cpd' (see --help)"};
  for (int i = 2; i < argc; ++i) {
    const std::string opt = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw UsageError{opt + " needs a value"};
      return argv[++i];
    };
    if (opt == "-h" || opt == "--help") a.help = true;
    else if (opt == "-r" || opt == "--rank") a.rank = static_cast<spt_index>(parse_integer(opt, value(), 1, 1 << 20));
    else if (opt == "--iters") a.iters = static_cast<int>(parse_integer(opt, value(), 1, 1 << 30));
    else if (opt == "--tol") a.tol = parse_double(opt, value());
    else if (opt == "--grid") a.grid = parse_grid(value());
    else if (opt == "--coarse") a.coarse = true;
    else if (opt == "--seed") a.seed = static_cast<uint64_t>(parse_integer(opt, value(), 0, INT64_MAX));
    else if (opt == "--threads") a.threads = static_cast<int>(parse_integer(opt, value(), 1, 4096));
    else if (opt == "--quiet") a.quiet = true;
    else if (opt == "--backend") {
      const std::string b = value();
      if (b == "auto") a.backend = SPT_BACKEND_AUTO;
      else if (b == "cpu") a.backend = SPT_BACKEND_CPU;
      else if (b == "cuda") a.backend = SPT_BACKEND_CUDA;
      else throw UsageError{"--backend must be auto, cpu or cuda, got '" + b + "'"};
    }
    else if (opt == "--format") {
      const std::string f = value();
      if (f == "coo") a.format = SPT_TENSOR_FORMAT_COO;
      else if (f == "csf") a.format = SPT_TENSOR_FORMAT_CSF;
      else if (f == "hicoo") a.format = SPT_TENSOR_FORMAT_HICOO;
      else if (f == "fcoo") a.format = SPT_TENSOR_FORMAT_FCOO;
      else if (f == "hbcsf") a.format = SPT_TENSOR_FORMAT_HBCSF;
      else if (f == "hls") a.format = SPT_TENSOR_FORMAT_HLS;
      else if (f == "auto") a.format = SPT_TENSOR_FORMAT_AUTO;
      else throw UsageError{"--format must be auto, coo, csf, hicoo, fcoo, hbcsf or hls, got '" + f + "'"};
    } else if (opt == "--dtype") {
      const std::string d = value();
      if (d == "float64") a.dtype = SPT_FLOAT64;
      else if (d == "float32") a.dtype = SPT_FLOAT32;
      else throw UsageError{"--dtype must be float32 or float64, got '" + d + "'"};
    } else if (!opt.empty() && opt[0] == '-') {
      throw UsageError{"unknown option '" + opt + "' (see --help)"};
    } else if (a.file.empty()) {
      a.file = opt;
    } else {
      throw UsageError{"unexpected argument '" + opt + "' (one FILE only)"};
    }
  }
  if (a.help) return a;
  if (a.file.empty()) throw UsageError{"missing FILE; usage: sptensor-mpi cpd FILE -r R"};
  if (a.rank == 0) throw UsageError{"missing -r R (the number of components)"};
  if (a.coarse && !a.grid.empty()) throw UsageError{"--grid applies to the medium-grained decomposition, not --coarse"};
  return a;
}

int print_iteration(void* quiet, const spt_mpi_iteration_info* info) {
  if (g_rank == 0 && !*static_cast<bool*>(quiet))
    std::printf("iter %4d  fit %.10f  delta %.3e  time %.4f s  bytes %.0f\n", info->iteration, info->fit, info->delta,
                info->seconds, info->bytes);
  return 0;
}

std::string grid_text(const int* grid, uint32_t order) {
  std::string s;
  for (uint32_t m = 0; m < order; ++m) s += (m ? "x" : "") + std::to_string(grid[m]);
  return s;
}

// Run the decomposition; returns the exit status (same on every rank).
int run(const Args& a) {
  spt_context* ctx = nullptr;
  spt_context_create(&ctx);
  if (a.threads > 0) spt_context_set_threads(ctx, a.threads);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto error = [&](const char* what) {
    if (g_rank == 0) std::fprintf(stderr, "sptensor-mpi: %s: %s\n", what, spt_last_error(ctx));
    spt_context_free(ctx);
    return 1;
  };
  // Every rank must take the backend, or none goes on (no rank left waiting).
  const int backend_ok = spt_context_set_backend(ctx, a.backend) == SPT_OK ? 1 : 0;
  int all_ok = 0;
  MPI_Allreduce(&backend_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok) {
    if (!backend_ok) std::fprintf(stderr, "sptensor-mpi: rank %d: --backend: %s\n", g_rank, spt_last_error(ctx));
    spt_context_free(ctx);
    return 1;
  }

  spt_read_options ro;
  spt_read_options_init(&ro);
  ro.dtype = a.dtype;
  spt_mpi_tensor* x = nullptr;
  const double t0 = MPI_Wtime();
  if (spt_mpi_read(MPI_COMM_WORLD, ctx, a.file.c_str(), &ro, &x) < 0) return error("reading failed");
  const double read_seconds = MPI_Wtime() - t0;
  spt_mpi_tensor_summary info;
  info.struct_size = sizeof info;
  spt_mpi_tensor_info(ctx, x, &info);  // local; cannot fail for a handle spt_mpi_read returned
  const uint32_t order = info.order;
  const spt_nnz nnz = info.global_nnz;
  std::vector<spt_index> dims(order);
  spt_mpi_tensor_dims(x, dims.data());

  spt_mpi_cpd_options o;
  spt_mpi_cpd_options_init(&o);
  o.rank = a.rank;
  o.max_iters = a.iters;
  o.tol = a.tol;
  o.seed = a.seed;
  o.format = a.format;
  o.decomposition = a.coarse ? SPT_MPI_COARSE_GRAINED : SPT_MPI_MEDIUM_GRAINED;
  if (!a.grid.empty()) {
    if (a.grid.size() != order) {
      if (g_rank == 0)
        std::fprintf(stderr, "sptensor-mpi: --grid has %zu sizes but the tensor has order %u\n", a.grid.size(), order);
      spt_mpi_tensor_free(x);
      spt_context_free(ctx);
      return 2;
    }
    o.grid = a.grid.data();
  }
  bool quiet = a.quiet;
  o.callback = print_iteration;
  o.callback_data = &quiet;
  if (g_rank == 0) {
    std::printf("tensor %s: order %u, dims", printable(a.file).c_str(), order);
    for (uint32_t m = 0; m < order; ++m) std::printf("%s%u", m ? " x " : " ", dims[m]);
    std::printf(", nnz %llu; read in %.3f s on %d ranks\n", static_cast<unsigned long long>(nnz), read_seconds, size);
    std::fflush(stdout);
  }
  spt_mpi_ktensor* k = nullptr;
  const spt_status st = spt_mpi_cpd_als(MPI_COMM_WORLD, ctx, x, &o, &k);
  spt_mpi_tensor_free(x);
  if (st < 0) return error("CP-ALS failed");

  spt_mpi_cpd_stats s;
  s.struct_size = sizeof(s);
  spt_mpi_ktensor_stats(k, &s);
  spt_ktensor* local = nullptr;
  spt_mpi_ktensor_local(k, &local);
  double fit = 0.0;
  int iterations = 0, converged = 0;
  spt_ktensor_result(local, &fit, &iterations, &converged);
  if (g_rank == 0) {
    if (a.coarse)
      std::printf("MPI CP-ALS: %d ranks, coarse-grained (%d slice chunks per mode), rank %u\n", s.ranks, s.ranks,
                  a.rank);
    else
      std::printf("MPI CP-ALS: %d ranks, medium-grained, grid %s, rank %u\n", s.ranks,
                  grid_text(s.grid, s.order).c_str(), a.rank);
    std::printf("final fit %.10f after %d iterations (%s)\n", fit, iterations,
                converged ? "converged" : "iteration limit reached");
    std::printf("time per iteration %.6f s (mttkrp %.6f, exchange %.6f, allreduce %.6f; setup %.3f s)\n",
                s.seconds_per_iteration, s.mttkrp_seconds_per_iteration, s.exchange_seconds_per_iteration,
                s.allreduce_seconds_per_iteration, s.setup_seconds);
    std::printf("bytes per iteration %.0f (reduce %.0f, expand %.0f, allreduce %.0f; busiest rank %.0f)\n",
                s.bytes_per_iteration, s.bytes_reduce_per_iteration, s.bytes_expand_per_iteration,
                s.bytes_allreduce_per_iteration, s.max_rank_bytes_per_iteration);
    std::printf("model bytes per iteration %.0f (reduce + expand; dense bound %.0f); setup bytes %llu\n",
                s.model_bytes_per_iteration, s.dense_bound_bytes_per_iteration,
                static_cast<unsigned long long>(s.setup_bytes));
    std::printf("imbalance %.4f (nnz per rank min %llu, max %llu)\n", s.nnz_imbalance,
                static_cast<unsigned long long>(s.nnz_min), static_cast<unsigned long long>(s.nnz_max));
  }
  spt_mpi_ktensor_free(k);
  spt_context_free(ctx);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  int rc = 0;
  try {
    Args a = parse_args(argc, argv);
    if (a.help) {
      if (g_rank == 0) print_usage(stdout);
    } else {
      rc = run(a);
    }
  } catch (const UsageError& e) {
    if (g_rank == 0) std::fprintf(stderr, "sptensor-mpi: %s\n", printable(e.message).c_str());
    rc = 2;
  }
  std::fflush(stdout);
  MPI_Finalize();
  return rc;
}
