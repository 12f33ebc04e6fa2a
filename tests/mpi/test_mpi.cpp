// Tests of libsptensor_mpi, run under mpirun by tests/mpi.cmake:
//
//   test_mpi cpd FILE       distributed CP-ALS (medium-grained with several grids, coarse-grained,
//                           seeded and user initial factors) equals serial spt_cpd_als in float64
//                           (relative fit 1e-10, lambda 1e-8) after a fixed number of sweeps
//   test_mpi synthetic DIR  rank 0 writes .tns files (plain, with comments and blank lines, extended
//                           header; orders 2 to 5); the parallel read equals spt_read (same nonzeros, same order,
//                           same dims); CP-ALS on them equals the serial one; tensor from rank-local arrays
//   test_mpi empty [DIR]    more ranks than slices (dims 2 x 3 x 2, all nonzeros on one rank):
//                           every grid works and equals the serial result; with DIR also a
//                           9-line file read by more ranks than it has lines
//   test_mpi malformed DIR  a bad line in the last rank's byte range, a missing file: every rank
//                           returns the same status and the same message naming the global line
//   test_mpi gpu FILE       CUDA forced on every rank (exit 77, skipped, without a GPU): the
//                           distributed fit equals the serial CPU run's as above; float32 within 1e-5
//
// Uses only the public C API. Every rank checks; the exit status is 0 only
// when no rank saw a failure (agreed with MPI_Allreduce). Rank 0 prints.
#include <mpi.h>

#include <atomic>
#include <cmath>
#include <new>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "sptensor/sptensor.h"
#include "sptensor/sptensor_mpi.h"

// Test hook: when armed, the next C++ allocation of this process (library
// ones included: the library's operator new resolves to this one) throws
// std::bad_alloc, once. Used to make one rank fail in the middle of a
// distributed CP-ALS.
static std::atomic<int> g_fail_next_allocation{0};

void* operator new(std::size_t n) {
  if (g_fail_next_allocation.exchange(0) != 0) throw std::bad_alloc();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return ::operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

int g_rank = 0, g_size = 1;
int g_failures = 0;
int g_checks = 0;

#define CHECK(cond, ...)                                                           \
  do {                                                                             \
    ++g_checks;                                                                    \
    if (!(cond)) {                                                                 \
      ++g_failures;                                                                \
      std::fprintf(stderr, "[rank %d] FAIL %s:%d: %s: ", g_rank, __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                           \
      std::fprintf(stderr, "\n");                                                  \
    }                                                                              \
  } while (0)

#define CHECK_OK(call)                                                                             \
  do {                                                                                             \
    const spt_status st_ = (call);                                                                 \
    CHECK(st_ >= 0, "%s returned %s: %s", #call, spt_status_string(st_), spt_thread_error_text()); \
  } while (0)

spt_context* g_ctx = nullptr;
const char* spt_thread_error_text() { return spt_last_error(g_ctx); }

// The spt_X_info summaries, struct_size set (a failing call is a failed check).
spt_coo_summary coo_info(const spt_coo* x) {
  spt_coo_summary s{};
  s.struct_size = sizeof s;
  CHECK_OK(spt_coo_info(g_ctx, x, &s));
  return s;
}

spt_mpi_tensor_summary tensor_info(const spt_mpi_tensor* x) {
  spt_mpi_tensor_summary s{};
  s.struct_size = sizeof s;
  CHECK_OK(spt_mpi_tensor_info(g_ctx, x, &s));
  return s;
}

void note(const char* fmt, const std::string& a) {
  if (g_rank == 0) {
    std::printf(fmt, a.c_str());
    std::fflush(stdout);
  }
}

double rel(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-300); }

// Grids worth testing for P ranks and `order` modes: automatic, all ranks
// on one mode, 2-D splits and a 3-D split when P has the factors.
std::vector<std::vector<int>> grids_for(int p, uint32_t order) {
  std::vector<std::vector<int>> g;
  g.push_back({});  // automatic
  std::vector<int> one(order, 1);
  one[0] = p;
  g.push_back(one);
  if (order >= 2) {
    std::vector<int> last(order, 1);
    last[order - 1] = p;
    g.push_back(last);
  }
  for (int a = 2; a < p; ++a)
    if (p % a == 0 && order >= 2) {
      std::vector<int> two(order, 1);
      two[0] = a;
      two[1] = p / a;
      g.push_back(two);
      break;
    }
  if (order >= 3)
    for (int a = 2; a < p; ++a)
      for (int b = 2; a * b < p; ++b)
        if (p % (a * b) == 0 && p / (a * b) >= 2) {
          std::vector<int> three(order, 1);
          three[0] = a;
          three[1] = b;
          three[2] = p / (a * b);
          g.push_back(three);
          a = p;
          break;
        }
  return g;
}

std::string grid_name(const std::vector<int>& g) {
  if (g.empty()) return "auto";
  std::string s;
  for (size_t i = 0; i < g.size(); ++i) s += (i ? "x" : "") + std::to_string(g[i]);
  return s;
}

// Serial reference: the whole tensor on every rank (small test tensors).
struct Serial {
  double fit = 0.0;
  std::vector<double> lambda;
};

Serial serial_cpd(const spt_coo* whole, spt_index rank, int iters, uint64_t seed, const spt_matrix* const* init) {
  spt_cpd_options o;
  spt_cpd_options_init(&o);
  o.rank = rank;
  o.max_iters = iters;
  o.tol = 0.0;
  o.seed = seed;
  o.format = SPT_TENSOR_FORMAT_COO;
  if (init) {
    o.init = SPT_CPD_INIT_USER;
    o.init_factors = init;
  }
  spt_ktensor* k = nullptr;
  Serial s;
  CHECK_OK(spt_cpd_als(g_ctx, whole, &o, &k));
  if (!k) return s;
  int it = 0, conv = 0;
  spt_ktensor_result(k, &s.fit, &it, &conv);
  void* lambda = nullptr;
  spt_ktensor_lambda(k, &lambda);
  s.lambda.assign(static_cast<double*>(lambda), static_cast<double*>(lambda) + rank);
  spt_ktensor_free(k);
  return s;
}

// Options for exactly `iters` sweeps (tol 0) of rank `rank` from `seed`.
spt_mpi_cpd_options fixed_sweeps(spt_index rank, int iters, uint64_t seed) {
  spt_mpi_cpd_options o;
  spt_mpi_cpd_options_init(&o);
  o.rank = rank;
  o.max_iters = iters;
  o.tol = 0.0;
  o.seed = seed;
  return o;
}

// Distributed CP-ALS vs serial on the same tensor and initial factors.
void compare_cpd(const spt_mpi_tensor* x, const spt_coo* whole, const std::string& label, spt_index rank, int iters,
                 uint64_t seed, spt_mpi_decomposition decomposition, const std::vector<int>& grid,
                 const spt_matrix* const* init, const Serial& reference,
                 spt_tensor_format format = SPT_TENSOR_FORMAT_COO) {
  spt_mpi_cpd_options o = fixed_sweeps(rank, iters, seed);
  o.format = format;
  o.decomposition = decomposition;
  o.grid = grid.empty() ? nullptr : grid.data();
  if (init) {
    o.init = SPT_CPD_INIT_USER;
    o.init_factors = init;
  }
  spt_mpi_ktensor* k = nullptr;
  const spt_status st = spt_mpi_cpd_als(MPI_COMM_WORLD, g_ctx, x, &o, &k);
  CHECK(st == SPT_WARN_NOT_CONVERGED, "%s: spt_mpi_cpd_als returned %s: %s", label.c_str(), spt_status_string(st),
        spt_last_error(g_ctx));
  if (!k) return;
  spt_ktensor* local = nullptr;
  CHECK_OK(spt_mpi_ktensor_local(k, &local));
  double fit = 0.0;
  int it = 0, conv = 0;
  spt_ktensor_result(local, &fit, &it, &conv);
  CHECK(it == iters, "%s: %d iterations, expected %d", label.c_str(), it, iters);
  CHECK(rel(fit, reference.fit) < 1e-10, "%s: fit %.15g vs serial %.15g (rel %.3g)", label.c_str(), fit,
        reference.fit, rel(fit, reference.fit));
  void* lambda = nullptr;
  spt_ktensor_lambda(local, &lambda);
  for (spt_index r = 0; r < rank; ++r)
    CHECK(rel(static_cast<double*>(lambda)[r], reference.lambda[r]) < 1e-8, "%s: lambda[%u] %.15g vs %.15g",
          label.c_str(), r, static_cast<double*>(lambda)[r], reference.lambda[r]);

  // Owned rows partition every mode; the gathered model has the same fit.
  spt_mpi_cpd_stats s;
  s.struct_size = sizeof(s);
  CHECK_OK(spt_mpi_ktensor_stats(k, &s));
  CHECK(s.ranks == g_size, "%s: stats ranks %d", label.c_str(), s.ranks);
  CHECK(s.nnz_imbalance >= 1.0 - 1e-12, "%s: imbalance %g below 1", label.c_str(), s.nnz_imbalance);
  // Measured reduce + expand bytes equal the partition's connectivity volume.
  CHECK(std::abs(s.bytes_reduce_per_iteration + s.bytes_expand_per_iteration - s.model_bytes_per_iteration) < 0.5,
        "%s: measured %.0f + %.0f bytes vs model %.0f", label.c_str(), s.bytes_reduce_per_iteration,
        s.bytes_expand_per_iteration, s.model_bytes_per_iteration);
  if (g_size == 1) CHECK(s.bytes_per_iteration == 0.0, "%s: one rank sent %.0f bytes", label.c_str(), s.bytes_per_iteration);
  spt_index dims[SPT_MPI_MAX_ORDER];
  uint32_t order = static_cast<uint32_t>(s.order);
  spt_coo_dims(whole, dims);
  for (uint32_t m = 0; m < order; ++m) {
    spt_nnz count = 0, total = 0;
    CHECK_OK(spt_mpi_ktensor_rows(k, m, nullptr, &count));
    MPI_Allreduce(&count, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == dims[m], "%s: mode %u has %llu owned rows in all, dims %u", label.c_str(), m,
          static_cast<unsigned long long>(total), dims[m]);
  }
  spt_ktensor* full = nullptr;
  CHECK_OK(spt_mpi_ktensor_gather(MPI_COMM_WORLD, g_ctx, k, 0, &full));
  if (g_rank == 0) {
    CHECK(full != nullptr, "%s: gather gave no ktensor on the root", label.c_str());
    if (full) {
      double norm = 0.0, inner = 0.0, xnorm = 0.0;
      spt_ktensor_norm(g_ctx, full, &norm);
      spt_inner_ktensor(g_ctx, whole, full, &inner);
      spt_coo_norm(g_ctx, whole, &xnorm);
      const double fit_full = 1.0 - std::sqrt(std::abs(xnorm * xnorm + norm * norm - 2.0 * inner)) / xnorm;
      CHECK(std::abs(fit_full - fit) < 1e-8, "%s: gathered model fit %.15g vs reported %.15g", label.c_str(),
            fit_full, fit);
    }
  } else {
    CHECK(full == nullptr, "%s: non-root got a gathered ktensor", label.c_str());
  }
  spt_ktensor_free(full);
  spt_mpi_ktensor_free(k);
}

// Random user factors (the same on every rank: same generator).
std::vector<spt_matrix*> user_factors(const spt_index* dims, uint32_t order, spt_index rank) {
  std::mt19937_64 gen(12345);
  std::uniform_real_distribution<double> u(0.1, 1.0);
  std::vector<spt_matrix*> f(order, nullptr);
  for (uint32_t m = 0; m < order; ++m) {
    std::vector<double> v(static_cast<size_t>(dims[m]) * rank);
    for (double& e : v) e = u(gen);
    spt_matrix_create_copy(g_ctx, SPT_FLOAT64, dims[m], rank, SPT_ROW_MAJOR, v.data(), rank, &f[m]);
  }
  return f;
}

void cpd_suite(const spt_mpi_tensor* x, const spt_coo* whole, const std::string& name, spt_index rank, int iters) {
  const uint32_t order = coo_info(whole).order;
  const uint64_t seed = 7;
  const Serial ref = serial_cpd(whole, rank, iters, seed, nullptr);
  for (const auto& g : grids_for(g_size, order)) {
    const std::string label = name + " medium grid " + grid_name(g);
    note("  %s\n", label);
    compare_cpd(x, whole, label, rank, iters, seed, SPT_MPI_MEDIUM_GRAINED, g, nullptr, ref);
  }
  // Other local storage formats (same numerics to rounding).
  const spt_tensor_format formats[] = {SPT_TENSOR_FORMAT_CSF, SPT_TENSOR_FORMAT_HICOO, SPT_TENSOR_FORMAT_AUTO};
  const char* format_names[] = {"csf", "hicoo", "auto"};
  for (int f = 0; f < 3; ++f) {
    const std::string label = name + " medium auto grid, local " + format_names[f];
    note("  %s\n", label);
    compare_cpd(x, whole, label, rank, iters, seed, SPT_MPI_MEDIUM_GRAINED, {}, nullptr, ref, formats[f]);
  }
  note("  %s\n", name + " coarse");
  compare_cpd(x, whole, name + " coarse", rank, iters, seed, SPT_MPI_COARSE_GRAINED, {}, nullptr, ref);

  spt_index dims[SPT_MPI_MAX_ORDER];
  spt_coo_dims(whole, dims);
  std::vector<spt_matrix*> init = user_factors(dims, order, rank);
  const Serial ref_user = serial_cpd(whole, rank, iters, 0, init.data());
  note("  %s\n", name + " user init (medium auto, coarse)");
  compare_cpd(x, whole, name + " user init medium", rank, iters, 0, SPT_MPI_MEDIUM_GRAINED, {}, init.data(), ref_user);
  compare_cpd(x, whole, name + " user init coarse", rank, iters, 0, SPT_MPI_COARSE_GRAINED, {}, init.data(), ref_user);
  for (spt_matrix* m : init) spt_matrix_free(m);
}

// Parallel read vs spt_read: same nonzeros in the same order, same dims.
void compare_read(const char* path, const spt_mpi_tensor* x, spt_coo** whole_out) {
  spt_coo* serial = nullptr;
  CHECK_OK(spt_read(g_ctx, path, nullptr, &serial));
  spt_coo* gathered = nullptr;
  CHECK_OK(spt_mpi_tensor_gather(MPI_COMM_WORLD, g_ctx, x, 0, &gathered));
  const spt_mpi_tensor_summary info = tensor_info(x);
  const spt_nnz global = info.global_nnz, local = info.local_nnz, serial_nnz = coo_info(serial).nnz;
  const uint32_t order = info.order;
  CHECK(info.dtype == SPT_FLOAT64 && info.struct_size == sizeof info, "%s: summary dtype %d, struct_size %zu", path,
        static_cast<int>(info.dtype), info.struct_size);
  // The info contract (local, no collective): NULL or a short struct_size
  // is INVALID_ARGUMENT with a message; a longer struct keeps its tail.
  {
    spt_mpi_tensor_summary bad{};
    CHECK(spt_mpi_tensor_info(g_ctx, nullptr, &bad) == SPT_ERR_INVALID_ARGUMENT, "%s: NULL x accepted", path);
    CHECK(spt_mpi_tensor_info(g_ctx, x, nullptr) == SPT_ERR_INVALID_ARGUMENT, "%s: NULL info accepted", path);
    bad.struct_size = 0;
    CHECK(spt_mpi_tensor_info(g_ctx, x, &bad) == SPT_ERR_INVALID_ARGUMENT, "%s: struct_size 0 accepted", path);
    CHECK(std::strstr(spt_last_error(g_ctx), "struct_size") != nullptr, "%s: message '%s'", path,
          spt_last_error(g_ctx));
    bad.struct_size = sizeof bad - 1;
    CHECK(spt_mpi_tensor_info(nullptr, x, &bad) == SPT_ERR_INVALID_ARGUMENT, "%s: short struct accepted", path);
    CHECK(std::strstr(spt_mpi_thread_last_error(), "spt_mpi_tensor_info") != nullptr, "%s: thread message '%s'",
          path, spt_mpi_thread_last_error());
    struct {
      spt_mpi_tensor_summary s;
      unsigned char tail[8];
    } longer;
    std::memset(&longer, 0x5a, sizeof longer);
    longer.s.struct_size = sizeof longer;
    CHECK(spt_mpi_tensor_info(g_ctx, x, &longer.s) == SPT_OK && longer.s.struct_size == sizeof longer &&
              longer.s.global_nnz == global && longer.s.local_nnz == local && longer.tail[7] == 0x5a,
          "%s: a longer summary struct is not filled as this release's", path);
  }
  CHECK(global == serial_nnz, "%s: %llu nonzeros in parallel, %llu serially", path,
        static_cast<unsigned long long>(global), static_cast<unsigned long long>(serial_nnz));
  std::vector<spt_index> d1(order), d2(order);
  spt_mpi_tensor_dims(x, d1.data());
  spt_coo_dims(serial, d2.data());
  CHECK(d1 == d2, "%s: dims differ", path);
  // no rank holds the whole tensor (when there are several ranks and enough nonzeros)
  if (g_size > 1 && serial_nnz >= static_cast<spt_nnz>(4 * g_size))
    CHECK(local < serial_nnz, "%s: rank %d holds all %llu nonzeros", path, g_rank,
          static_cast<unsigned long long>(local));
  if (g_rank == 0 && gathered) {
    bool same = true;
    for (uint32_t m = 0; m < order && same; ++m) {
      const spt_index *a = nullptr, *b = nullptr;
      spt_coo_indices(gathered, m, &a);
      spt_coo_indices(serial, m, &b);
      same = std::memcmp(a, b, sizeof(spt_index) * serial_nnz) == 0;
    }
    const void *va = nullptr, *vb = nullptr;
    spt_coo_values(gathered, &va);
    spt_coo_values(serial, &vb);
    same = same && std::memcmp(va, vb, sizeof(double) * serial_nnz) == 0;
    CHECK(same, "%s: gathered nonzeros differ from spt_read's", path);
  }
  spt_coo_free(gathered);
  *whole_out = serial;
}

void test_cpd_file(const char* path) {
  note("cpd on %s\n", path);
  spt_mpi_tensor* x = nullptr;
  CHECK_OK(spt_mpi_read(MPI_COMM_WORLD, g_ctx, path, nullptr, &x));
  spt_coo* whole = nullptr;
  compare_read(path, x, &whole);
  if (x && whole) cpd_suite(x, whole, path, 4, 12);
  spt_coo_free(whole);
  spt_mpi_tensor_free(x);
}

// GPU ranks: CUDA forced on every rank (false, nothing run, when a rank has
// no usable GPU). float64: medium-grained (local COO and AUTO, which both
// run on the GPU) and coarse-grained equal the serial CPU run (fit 1e-10,
// lambda 1e-8, as the CPU ranks); float32: the fit within 1e-5 of the CPU
// ranks' run.
bool test_gpu(const char* path) {
  const int have = spt_context_set_backend(g_ctx, SPT_BACKEND_CUDA) == SPT_OK ? 1 : 0;
  int all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    note("gpu: skipped (%s)\n", have ? "another rank has no usable GPU" : spt_last_error(g_ctx));
    spt_context_set_backend(g_ctx, SPT_BACKEND_AUTO);
    return false;
  }
  note("gpu ranks on %s\n", path);
  spt_mpi_tensor* x = nullptr;
  spt_coo* whole = nullptr;
  CHECK_OK(spt_mpi_read(MPI_COMM_WORLD, g_ctx, path, nullptr, &x));
  CHECK_OK(spt_read(g_ctx, path, nullptr, &whole));
  if (x && whole) {
    CHECK_OK(spt_context_set_backend(g_ctx, SPT_BACKEND_CPU));
    const Serial ref = serial_cpd(whole, 4, 12, 7, nullptr);
    CHECK_OK(spt_context_set_backend(g_ctx, SPT_BACKEND_CUDA));
    compare_cpd(x, whole, "gpu medium, local coo", 4, 12, 7, SPT_MPI_MEDIUM_GRAINED, {}, nullptr, ref);
    compare_cpd(x, whole, "gpu medium, local auto", 4, 12, 7, SPT_MPI_MEDIUM_GRAINED, {}, nullptr, ref,
                SPT_TENSOR_FORMAT_AUTO);
    compare_cpd(x, whole, "gpu coarse", 4, 12, 7, SPT_MPI_COARSE_GRAINED, {}, nullptr, ref);
  }
  spt_coo_free(whole);
  spt_mpi_tensor_free(x);

  spt_read_options ro;
  spt_read_options_init(&ro);
  ro.dtype = SPT_FLOAT32;
  spt_mpi_tensor* x32 = nullptr;
  CHECK_OK(spt_mpi_read(MPI_COMM_WORLD, g_ctx, path, &ro, &x32));
  double fits[2] = {0.0, 0.0};
  for (int gpu = 0; gpu < 2 && x32; ++gpu) {
    CHECK_OK(spt_context_set_backend(g_ctx, gpu ? SPT_BACKEND_CUDA : SPT_BACKEND_CPU));
    spt_mpi_cpd_options o = fixed_sweeps(4, 12, 7);
    o.format = SPT_TENSOR_FORMAT_COO;
    spt_mpi_ktensor* k = nullptr;
    CHECK_OK(spt_mpi_cpd_als(MPI_COMM_WORLD, g_ctx, x32, &o, &k));
    spt_ktensor* local = nullptr;
    if (k && spt_mpi_ktensor_local(k, &local) == SPT_OK) spt_ktensor_result(local, &fits[gpu], nullptr, nullptr);
    spt_mpi_ktensor_free(k);
  }
  CHECK(std::abs(fits[1] - fits[0]) < 1e-5, "gpu float32: fit %.9g on GPU ranks vs %.9g on CPU ranks", fits[1],
        fits[0]);
  spt_mpi_tensor_free(x32);
  spt_context_set_backend(g_ctx, SPT_BACKEND_AUTO);
  return true;
}

// Synthetic tensor with skewed slices (a few heavy ones), written by rank 0.
void write_synthetic(const std::string& path, uint32_t order, const std::vector<spt_index>& dims, int nnz,
                     bool comments, bool extended) {
  if (g_rank == 0) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::mt19937_64 gen(99 + order);
    if (extended) {
      std::fprintf(f, "%u\n", order);
      for (uint32_t m = 0; m < order; ++m) std::fprintf(f, "%u%s", dims[m], m + 1 < order ? " " : "\n");
    }
    for (int k = 0; k < nnz; ++k) {
      if (comments && k % 97 == 3) std::fprintf(f, "# a comment line\n\n");
      for (uint32_t m = 0; m < order; ++m) {
        // square of a uniform draw: low indices are heavier (skewed slices)
        const double u = std::uniform_real_distribution<double>(0.0, 1.0)(gen);
        spt_index i = static_cast<spt_index>(u * u * dims[m]);
        if (k < static_cast<int>(dims[m])) i = static_cast<spt_index>(k);  // every slice nonempty
        std::fprintf(f, "%u ", i + 1);
      }
      std::fprintf(f, "%.6f\n", 0.5 + std::uniform_real_distribution<double>(0.0, 1.0)(gen));
    }
    std::fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// float32: read as float32, distributed vs serial float32 CP-ALS (both
// round differently, so only 1e-4 relative in fit), medium and coarse.
void test_float32(const std::string& path) {
  note("float32 %s\n", path);
  spt_read_options ro;
  spt_read_options_init(&ro);
  ro.dtype = SPT_FLOAT32;
  spt_mpi_tensor* x = nullptr;
  spt_coo* whole = nullptr;
  CHECK_OK(spt_mpi_read(MPI_COMM_WORLD, g_ctx, path.c_str(), &ro, &x));
  CHECK_OK(spt_read(g_ctx, path.c_str(), &ro, &whole));
  if (!x || !whole) return;
  spt_cpd_options o;
  spt_cpd_options_init(&o);
  o.rank = 3;
  o.max_iters = 6;
  o.tol = 0.0;
  o.seed = 11;
  spt_ktensor* k = nullptr;
  double serial_fit = 0.0;
  CHECK_OK(spt_cpd_als(g_ctx, whole, &o, &k));
  spt_ktensor_result(k, &serial_fit, nullptr, nullptr);
  spt_ktensor_free(k);
  for (int coarse = 0; coarse < 2; ++coarse) {
    spt_mpi_cpd_options mo = fixed_sweeps(3, 6, 11);
    mo.decomposition = coarse ? SPT_MPI_COARSE_GRAINED : SPT_MPI_MEDIUM_GRAINED;
    spt_mpi_ktensor* mk = nullptr;
    CHECK_OK(spt_mpi_cpd_als(MPI_COMM_WORLD, g_ctx, x, &mo, &mk));
    spt_ktensor* local = nullptr;
    double fit = 0.0;
    spt_dtype dtype = SPT_FLOAT64;
    if (mk && spt_mpi_ktensor_local(mk, &local) == SPT_OK) {
      spt_ktensor_summary ks{};
      ks.struct_size = sizeof ks;
      CHECK_OK(spt_ktensor_info(g_ctx, local, &ks));
      fit = ks.fit;
      dtype = ks.dtype;
    }
    CHECK(dtype == SPT_FLOAT32, "float32 run gave a %s model", dtype == SPT_FLOAT64 ? "float64" : "?");
    CHECK(rel(fit, serial_fit) < 1e-4, "float32 %s: fit %.8g vs serial %.8g", coarse ? "coarse" : "medium", fit,
          serial_fit);
    spt_mpi_ktensor_free(mk);
  }
  spt_coo_free(whole);
  spt_mpi_tensor_free(x);
}

// Rank 0 writes `whole` to `path` (format from the extension); all wait.
void write_on_root(const spt_coo* whole, const std::string& path) {
  spt_status st = SPT_OK;
  if (g_rank == 0) st = spt_write(g_ctx, whole, path.c_str(), nullptr);
  MPI_Bcast(&st, 1, MPI_INT, 0, MPI_COMM_WORLD);
  CHECK(st == SPT_OK, "writing %s failed", path.c_str());
}

// The tensor as .sptb and SPLATT .bin: every rank reads its range of the
// nonzeros (and, for .sptb, its checksum blocks); the gathered tensor
// equals spt_read's and the CP-ALS the serial one. Also a float32 read of
// the float64 .sptb (converted per range).
void test_binary_copies(const std::string& tns_path, const spt_coo* whole, const std::string& name) {
  for (const char* ext : {".sptb", ".bin"}) {
    const std::string path = tns_path + ext;
    write_on_root(whole, path);
    note("binary %s\n", path);
    spt_mpi_tensor* x = nullptr;
    CHECK_OK(spt_mpi_read(MPI_COMM_WORLD, g_ctx, path.c_str(), nullptr, &x));
    spt_coo* serial = nullptr;
    if (x) compare_read(path.c_str(), x, &serial);
    if (x && serial) {
      const Serial ref = serial_cpd(serial, 3, 5, 7, nullptr);
      compare_cpd(x, serial, name + ext, 3, 5, 7, SPT_MPI_MEDIUM_GRAINED, {}, nullptr, ref);
    }
    spt_coo_free(serial);
    spt_mpi_tensor_free(x);
  }
  // float32 from the float64 .sptb: each value rounded once, as spt_read does.
  const std::string path = tns_path + ".sptb";
  spt_read_options ro;
  spt_read_options_init(&ro);
  ro.dtype = SPT_FLOAT32;
  spt_mpi_tensor* x = nullptr;
  spt_coo* serial = nullptr;
  CHECK_OK(spt_mpi_read(MPI_COMM_WORLD, g_ctx, path.c_str(), &ro, &x));
  CHECK_OK(spt_read(g_ctx, path.c_str(), &ro, &serial));
  spt_coo* gathered = nullptr;
  if (x) CHECK_OK(spt_mpi_tensor_gather(MPI_COMM_WORLD, g_ctx, x, 0, &gathered));
  if (g_rank == 0 && gathered && serial) {
    const spt_nnz n = coo_info(gathered).nnz, m = coo_info(serial).nnz;
    const void *a = nullptr, *b = nullptr;
    spt_coo_values(gathered, &a);
    spt_coo_values(serial, &b);
    CHECK(n == m && std::memcmp(a, b, sizeof(float) * n) == 0, "%s: float32 values differ from spt_read's",
          path.c_str());
  }
  spt_coo_free(gathered);
  spt_coo_free(serial);
  spt_mpi_tensor_free(x);
}

// Half the nonzeros in the corner block of the first 16 ids of every mode,
// half among the other ids: chunks of contiguous ids cut every mode at about
// id 16, so with two chunks in two modes (4 ranks: grid 2x2x1) one rank
// holds the corner and one holds nothing. The medium-grained distribution
// then takes chunks of shuffled ids; its blocks must be balanced to within
// 30% and the run must equal the serial one.
void test_dense_corner(const std::string& dir) {
  const std::string path = dir + "/" + std::to_string(g_size) + "-corner.tns";
  if (g_rank == 0) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    CHECK(f != nullptr, "cannot write %s", path.c_str());
    std::mt19937_64 gen(2024);
    for (int k = 0; f && k < 6000; ++k) {
      const bool corner = k % 2 == 0;
      for (int m = 0; m < 3; ++m) {
        const unsigned lo = corner ? 0 : 16, span = corner ? 16 : 48;
        std::fprintf(f, "%u ", 1 + lo + static_cast<unsigned>(gen() % span));
      }
      std::fprintf(f, "%.6f\n", 0.5 + static_cast<double>(gen() % 1000) / 1000.0);
    }
    if (f) std::fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  note("dense corner %s\n", path);
  spt_mpi_tensor* x = nullptr;
  CHECK_OK(spt_mpi_read(MPI_COMM_WORLD, g_ctx, path.c_str(), nullptr, &x));
  spt_coo* whole = nullptr;
  compare_read(path.c_str(), x, &whole);
  if (x && whole) {
    spt_coo* summed = nullptr;
    CHECK_OK(spt_coo_copy(g_ctx, whole, &summed));
    CHECK_OK(spt_coo_coalesce(g_ctx, summed, SPT_DUPLICATES_SUM));
    const Serial ref = serial_cpd(summed, 4, 6, 3, nullptr);
    compare_cpd(x, whole, "dense corner medium", 4, 6, 3, SPT_MPI_MEDIUM_GRAINED, {}, nullptr, ref);
    spt_mpi_cpd_options o = fixed_sweeps(4, 1, 3);
    spt_mpi_ktensor* k = nullptr;
    spt_mpi_cpd_als(MPI_COMM_WORLD, g_ctx, x, &o, &k);
    CHECK(k != nullptr, "dense corner: spt_mpi_cpd_als failed: %s", spt_last_error(g_ctx));
    if (k) {
      spt_mpi_cpd_stats s;
      s.struct_size = sizeof(s);
      CHECK_OK(spt_mpi_ktensor_stats(k, &s));
      CHECK(s.nnz_imbalance < 1.3, "dense corner on %d ranks: most nonzeros on a rank %.3f x the mean", g_size,
            s.nnz_imbalance);
    }
    spt_mpi_ktensor_free(k);
    spt_coo_free(summed);
  }
  spt_coo_free(whole);
  spt_mpi_tensor_free(x);
}

void test_synthetic(const std::string& dir) {
  struct Case {
    const char* name;
    uint32_t order;
    std::vector<spt_index> dims;
    int nnz;
    bool comments, extended;
  };
  const Case cases[] = {
      {"syn3.tns", 3, {40, 25, 30}, 3000, false, false},
      {"syn3-comments.tns", 3, {17, 60, 9}, 2000, true, false},
      {"syn4-extended.tns", 4, {12, 9, 20, 7}, 1500, false, true},
      {"syn2.tns", 2, {50, 33}, 700, false, false},
      {"syn5.tns", 5, {6, 7, 5, 8, 4}, 900, false, false},
  };
  for (const Case& c : cases) {
    const std::string path = dir + "/" + std::to_string(g_size) + "-" + c.name;
    write_synthetic(path, c.order, c.dims, c.nnz, c.comments, c.extended);
    note("synthetic %s\n", path);
    spt_mpi_tensor* x = nullptr;
    CHECK_OK(spt_mpi_read(MPI_COMM_WORLD, g_ctx, path.c_str(), nullptr, &x));
    spt_coo* whole = nullptr;
    compare_read(path.c_str(), x, &whole);
    if (x && whole) cpd_suite(x, whole, c.name, 3, 10);

    // The same tensor from rank-local arrays (rank r passes every r-th nonzero).
    if (whole) {
      const spt_nnz n = coo_info(whole).nnz;
      std::vector<spt_index> ind;
      std::vector<double> val;
      const void* vals = nullptr;
      spt_coo_values(whole, &vals);
      std::vector<spt_nnz> mine;
      for (spt_nnz k = static_cast<spt_nnz>(g_rank); k < n; k += static_cast<spt_nnz>(g_size)) mine.push_back(k);
      ind.resize(mine.size() * c.order);
      for (uint32_t m = 0; m < c.order; ++m) {
        const spt_index* src = nullptr;
        spt_coo_indices(whole, m, &src);
        for (size_t j = 0; j < mine.size(); ++j) ind[m * mine.size() + j] = src[mine[j]];
      }
      for (spt_nnz k : mine) val.push_back(static_cast<const double*>(vals)[k]);
      spt_mpi_tensor* y = nullptr;
      CHECK_OK(spt_mpi_tensor_create(MPI_COMM_WORLD, g_ctx, SPT_FLOAT64, c.order, nullptr, mine.size(), ind.data(),
                                     mine.size(), 0, val.data(), 0, &y));
      if (y) {
        const spt_nnz global = tensor_info(y).global_nnz;
        CHECK(global == n, "%s: create gave %llu nonzeros", c.name, static_cast<unsigned long long>(global));
        // The skewed draws repeat coordinates, and ranks get entries of one
        // coordinate apart: the fit is still the summed tensor's.
        spt_coo* summed = nullptr;
        CHECK_OK(spt_coo_copy(g_ctx, whole, &summed));
        CHECK_OK(spt_coo_coalesce(g_ctx, summed, SPT_DUPLICATES_SUM));
        const spt_nnz distinct = coo_info(summed).nnz;
        if (c.order == 5) CHECK(distinct < n, "%s: expected repeated coordinates", c.name);
        const Serial ref = serial_cpd(summed, 3, 6, 5, nullptr);
        compare_cpd(y, whole, std::string(c.name) + " from arrays", 3, 6, 5, SPT_MPI_MEDIUM_GRAINED, {}, nullptr, ref);
        spt_coo_free(summed);
      }
      spt_mpi_tensor_free(y);
    }
    if (whole) test_binary_copies(path, whole, c.name);
    spt_coo_free(whole);
    spt_mpi_tensor_free(x);
  }
  test_float32(dir + "/" + std::to_string(g_size) + "-" + cases[0].name);
  test_dense_corner(dir);
}

void test_empty(const std::string& dir) {
  // dims 2 x 3 x 2, 7 nonzeros, all passed by the last rank: with P > 2
  // most grid blocks and many ranks are empty.
  const spt_index dims[3] = {2, 3, 2};
  const spt_index ind_all[3][7] = {{0, 1, 0, 1, 0, 1, 1}, {0, 0, 1, 2, 2, 1, 2}, {0, 1, 1, 0, 1, 1, 1}};
  const double val_all[7] = {1.0, 2.0, 0.5, 1.5, 3.0, 0.25, 2.5};
  const bool holder = g_rank == g_size - 1;
  std::vector<spt_index> ind;
  for (int m = 0; m < 3; ++m) ind.insert(ind.end(), ind_all[m], ind_all[m] + 7);
  spt_mpi_tensor* x = nullptr;
  CHECK_OK(spt_mpi_tensor_create(MPI_COMM_WORLD, g_ctx, SPT_FLOAT64, 3, dims, holder ? 7 : 0,
                                 holder ? ind.data() : nullptr, 7, 0, holder ? val_all : nullptr, 0, &x));
  spt_coo* whole = nullptr;
  CHECK_OK(spt_coo_create_from_arrays(g_ctx, SPT_FLOAT64, 3, dims, 7, ind.data(), 7, 0, val_all, 0, &whole));
  note("empty ranks: %s\n", std::to_string(g_size) + " ranks, 7 nonzeros");
  if (x && whole) cpd_suite(x, whole, "tiny", 2, 8);
  spt_coo_free(whole);
  spt_mpi_tensor_free(x);

  // The same 7 nonzeros as a 9-line file (a comment, a blank line): with
  // P > 2 most byte ranges hold no line start; the read still equals spt_read.
  if (dir.empty()) return;
  const std::string path = dir + "/" + std::to_string(g_size) + "-tiny.tns";
  if (g_rank == 0) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fprintf(f, "# tiny\n");
    for (int k = 0; k < 7; ++k) {
      if (k == 4) std::fprintf(f, "\n");
      std::fprintf(f, "%u %u %u %g\n", ind_all[0][k] + 1, ind_all[1][k] + 1, ind_all[2][k] + 1, val_all[k]);
    }
    std::fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  note("empty ranks: parallel read of %s\n", path);
  spt_mpi_tensor* y = nullptr;
  CHECK_OK(spt_mpi_read(MPI_COMM_WORLD, g_ctx, path.c_str(), nullptr, &y));
  spt_coo* serial = nullptr;
  if (y) compare_read(path.c_str(), y, &serial);
  if (y && serial) {
    const Serial ref = serial_cpd(serial, 2, 5, 3, nullptr);
    compare_cpd(y, serial, "tiny file", 2, 5, 3, SPT_MPI_MEDIUM_GRAINED, {}, nullptr, ref);
  }
  spt_coo_free(serial);
  spt_mpi_tensor_free(y);
}

// Every rank must return `expected` and the same message as rank 0.
void check_same_error(spt_status st, spt_status expected, const std::string& must_contain, const char* what) {
  std::string msg = spt_last_error(g_ctx);
  CHECK(st == expected, "%s: status %s, expected %s (%s)", what, spt_status_string(st), spt_status_string(expected),
        msg.c_str());
  CHECK(msg.find(must_contain) != std::string::npos, "%s: message '%s' lacks '%s'", what, msg.c_str(),
        must_contain.c_str());
  int len = static_cast<int>(msg.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string root(static_cast<size_t>(len), '\0');
  if (g_rank == 0) root = msg;
  MPI_Bcast(root.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  CHECK(root == msg, "%s: rank %d says '%s', rank 0 '%s'", what, g_rank, msg.c_str(), root.c_str());
}

// Flips bytes of a file at `offset` (rank 0), then all wait.
void corrupt_on_root(const std::string& path, long offset, const unsigned char* bytes, size_t n) {
  if (g_rank == 0) {
    std::FILE* f = std::fopen(path.c_str(), "r+b");
    std::fseek(f, offset, SEEK_SET);
    std::fwrite(bytes, 1, n, f);
    std::fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Binary files read in parallel fail the same way on every rank: a .sptb
// whose last value changed (a block only the last rank hashes) fails the
// checksum; a SPLATT .bin with an index outside the dims in the last
// rank's range names that nonzero's position in the file.
void test_malformed_binary(const std::string& dir) {
  const int n = 300;
  const spt_index dims[3] = {5, 6, 7};
  std::vector<spt_index> ind(3 * n);
  std::vector<double> val(n);
  for (int k = 0; k < n; ++k) {
    for (int m = 0; m < 3; ++m) ind[m * n + k] = static_cast<spt_index>((k * (m + 2)) % dims[m]);
    val[k] = 1.0 + k;
  }
  spt_coo* whole = nullptr;
  CHECK_OK(spt_coo_create_from_arrays(g_ctx, SPT_FLOAT64, 3, dims, n, ind.data(), n, 0, val.data(), 0, &whole));
  const std::string sptb = dir + "/" + std::to_string(g_size) + "-corrupt.sptb";
  write_on_root(whole, sptb);
  std::FILE* f = g_rank == 0 ? std::fopen(sptb.c_str(), "rb") : nullptr;
  long size = 0;
  if (f) {
    std::fseek(f, 0, SEEK_END);
    size = std::ftell(f);
    std::fclose(f);
  }
  MPI_Bcast(&size, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  const double changed = -7.0;
  unsigned char bytes[sizeof(double)];
  std::memcpy(bytes, &changed, sizeof bytes);
  corrupt_on_root(sptb, size - static_cast<long>(sizeof(double)), bytes, sizeof bytes);
  note("malformed %s\n", sptb);
  spt_mpi_tensor* x = nullptr;
  spt_status st = spt_mpi_read(MPI_COMM_WORLD, g_ctx, sptb.c_str(), nullptr, &x);
  check_same_error(st, SPT_ERR_PARSE, "wrong checksum", "corrupt .sptb");
  CHECK(x == nullptr, "corrupt .sptb: a tensor was returned");
  spt_mpi_tensor_free(x);

  // SPLATT .bin (4-byte indices, no checksum): mode-0 index of nonzero n-3 := 99.
  const std::string bin = dir + "/" + std::to_string(g_size) + "-bad-index.bin";
  write_on_root(whole, bin);
  const long header = 20 + 5 * 4;  // magic, widths, then order, 3 dims, nnz as 4-byte integers
  const uint32_t big = 99;
  std::memcpy(bytes, &big, sizeof big);
  corrupt_on_root(bin, header + 4L * (n - 3), bytes, sizeof big);
  note("malformed %s\n", bin);
  x = nullptr;
  st = spt_mpi_read(MPI_COMM_WORLD, g_ctx, bin.c_str(), nullptr, &x);
  check_same_error(st, SPT_ERR_PARSE, "nonzero " + std::to_string(n - 3) + " (0-based, in file order) has index 99",
                   "bad index in .bin");
  CHECK(x == nullptr, "bad .bin: a tensor was returned");
  spt_mpi_tensor_free(x);
  spt_coo_free(whole);
}

// One rank fails in the middle of the sweeps (its next allocation after
// sweep 1, armed from the callback): every rank must return the same
// OUT_OF_MEMORY naming that rank, none may be left waiting (a hang is a
// ctest timeout). Ranks without nonzeros (7 nonzeros on the last rank).
struct ArmOnRank {
  int rank;
};
int arm_after_first_sweep(void* data, const spt_mpi_iteration_info* info) {
  if (info->iteration == 1 && g_rank == static_cast<ArmOnRank*>(data)->rank) g_fail_next_allocation = 1;
  return 0;
}

void test_failure_mid_sweep() {
  const spt_index dims[3] = {2, 3, 2};
  const spt_index ind[21] = {0, 1, 0, 1, 0, 1, 1, 0, 0, 1, 2, 2, 1, 2, 0, 1, 1, 0, 1, 1, 1};
  const double val[7] = {1.0, 2.0, 0.5, 1.5, 3.0, 0.25, 2.5};
  const bool holder = g_rank == g_size - 1;
  spt_mpi_tensor* x = nullptr;
  CHECK_OK(spt_mpi_tensor_create(MPI_COMM_WORLD, g_ctx, SPT_FLOAT64, 3, dims, holder ? 7 : 0, holder ? ind : nullptr,
                                 7, 0, holder ? val : nullptr, 0, &x));
  if (!x) return;
  for (int victim : {0, g_size - 1}) {
    ArmOnRank arm{victim};
    spt_mpi_cpd_options o = fixed_sweeps(2, 4, 5);
    o.callback = arm_after_first_sweep;
    o.callback_data = &arm;
    spt_mpi_ktensor* k = nullptr;
    note("failure mid-sweep on rank %s\n", std::to_string(victim));
    const spt_status st = spt_mpi_cpd_als(MPI_COMM_WORLD, g_ctx, x, &o, &k);
    g_fail_next_allocation = 0;
    check_same_error(st, SPT_ERR_OUT_OF_MEMORY, "out of memory on rank " + std::to_string(victim),
                     "allocation failure in sweep 2");
    CHECK(k == nullptr, "a model was returned after a failed sweep");
    spt_mpi_ktensor_free(k);
  }
  spt_mpi_tensor_free(x);
}

void test_malformed(const std::string& dir) {
  const std::string path = dir + "/" + std::to_string(g_size) + "-malformed.tns";
  const int lines = 400, bad = 390;  // the bad line lies in the last rank's byte range
  if (g_rank == 0) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    for (int k = 1; k <= lines; ++k) {
      if (k == bad) std::fprintf(f, "3 4 x 1.0\n");
      else if (k == bad + 3) std::fprintf(f, "1 2\n");  // a later error must not win
      else std::fprintf(f, "%d %d %d 1.5\n", 1 + k % 7, 1 + k % 5, 1 + k % 3);
    }
    std::fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  note("malformed %s\n", path);
  spt_mpi_tensor* x = nullptr;
  spt_status st = spt_mpi_read(MPI_COMM_WORLD, g_ctx, path.c_str(), nullptr, &x);
  check_same_error(st, SPT_ERR_PARSE, path + ":" + std::to_string(bad) + ":", "malformed line");
  CHECK(x == nullptr, "malformed: a tensor was returned");
  spt_mpi_tensor_free(x);

  test_malformed_binary(dir);
  test_failure_mid_sweep();

  x = nullptr;
  st = spt_mpi_read(MPI_COMM_WORLD, g_ctx, (dir + "/no-such-file.tns").c_str(), nullptr, &x);
  check_same_error(st, SPT_ERR_IO, "no-such-file.tns", "missing file");

  // bad options on every rank: the same INVALID_ARGUMENT everywhere
  const spt_index dims[2] = {3, 3};
  const spt_index ind[2] = {0, 1};
  const double v = 1.0;
  CHECK_OK(spt_mpi_tensor_create(MPI_COMM_WORLD, g_ctx, SPT_FLOAT64, 2, dims, 1, ind, 1, 0, &v, 0, &x));
  spt_mpi_cpd_options o;
  spt_mpi_cpd_options_init(&o);
  o.rank = 2;
  const int wrong_grid[2] = {g_size + 1, 1};
  o.grid = wrong_grid;
  spt_mpi_ktensor* k = nullptr;
  st = spt_mpi_cpd_als(MPI_COMM_WORLD, g_ctx, x, &o, &k);
  check_same_error(st, SPT_ERR_INVALID_ARGUMENT, "opts.grid multiplies to", "bad grid");
  spt_mpi_ktensor_free(k);
  spt_mpi_tensor_free(x);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  spt_context_create(&g_ctx);
  spt_context_set_threads(g_ctx, 1);
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "cpd" && argc > 2) test_cpd_file(argv[2]);
  else if (what == "synthetic" && argc > 2) test_synthetic(argv[2]);
  else if (what == "empty") test_empty(argc > 2 ? argv[2] : "");
  else if (what == "malformed" && argc > 2) test_malformed(argv[2]);
  else if (what == "gpu" && argc > 2) {
    if (!test_gpu(argv[2])) {
      spt_context_free(g_ctx);
      MPI_Finalize();
      return 77;  // skipped (ctest SKIP_RETURN_CODE)
    }
  } else {
    if (g_rank == 0)
      std::fprintf(stderr, "usage: test_mpi cpd FILE | synthetic DIR | empty [DIR] | malformed DIR | gpu FILE\n");
    MPI_Finalize();
    return 2;
  }
  int failures = g_failures, total_failures = 0, checks = g_checks, total_checks = 0;
  MPI_Allreduce(&failures, &total_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&checks, &total_checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("%s on %d ranks: %d checks, %d failures\n", what.c_str(), g_size, total_checks, total_failures);
  spt_context_free(g_ctx);
  MPI_Finalize();
  return total_failures == 0 ? 0 : 1;
}
