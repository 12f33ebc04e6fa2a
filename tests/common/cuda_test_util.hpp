// Shared set-up of the GPU tests (tests/unit/test_cuda*.cpp): point the
// plugin loader at the plugin this build made, skip a test with the reason
// when no CUDA device is usable, and run decompositions through the C API
// on a logging context (each test states only its settings). Header-only:
// SPT_CUDA_PLUGIN_FILE is defined per test executable (tests/cuda.cmake).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "core/coo.hpp"
#include "core/dtype.hpp"
#include "core/ktensor.hpp"
#include "dispatch/plugin_loader.hpp"
#include "sptensor/sptensor.h"

namespace spt::test {

// The tests link the library statically, so the loader's "beside
// libsptensor.so" is the test's own directory: point it at the plugin this
// build made (before anything loads it), unless the caller chose one.
// (static: one copy per test executable, initialised with its globals.)
[[maybe_unused]] static const bool cuda_plugin_path_set = [] {
#ifdef SPT_CUDA_PLUGIN_FILE
  setenv("SPT_PLUGIN_PATH", SPT_CUDA_PLUGIN_FILE, /*overwrite=*/0);
#endif
  return true;
}();

inline bool plugin_built() {
#ifdef SPT_CUDA_PLUGIN_FILE
  return true;
#else
  return false;
#endif
}

inline bool have_device() { return dispatch::cuda_plugin().usable(); }

// Sets (value) or unsets (nullptr) an environment variable for the scope,
// restoring what was there after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_.c_str(), old_.c_str(), 1);
    else unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

// SPT_CUDA_MEMORY_LIMIT = `bytes` for the scope (0: unset, no limit).
class ScopedMemoryLimit {
 public:
  explicit ScopedMemoryLimit(uint64_t bytes)
      : text_(std::to_string(bytes)), env_("SPT_CUDA_MEMORY_LIMIT", bytes ? text_.c_str() : nullptr) {}

 private:
  std::string text_;
  ScopedEnv env_;
};

// A context log callback that appends each message to a
// std::vector<std::string> (data), and a search in such a log.
inline void record_log_line(void* data, int, const char* message) {
  static_cast<std::vector<std::string>*>(data)->push_back(message);
}
inline bool logged(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& l : lines)
    if (l.find(text) != std::string::npos) return true;
  return false;
}

struct ContextDeleter {
  void operator()(spt_context* c) const { spt_context_free(c); }
};
using ContextPtr = std::unique_ptr<spt_context, ContextDeleter>;

// A C API context on `backend` whose log at `verbosity` is appended to *log;
// `threads` 0 keeps the default thread count.
inline ContextPtr logging_context(spt_backend backend, int verbosity, std::vector<std::string>* log, int threads = 0) {
  spt_context* ctx = nullptr;
  EXPECT_EQ(spt_context_create(&ctx), SPT_OK);
  EXPECT_EQ(spt_context_set_backend(ctx, backend), SPT_OK) << spt_last_error(ctx);
  if (threads > 0) EXPECT_EQ(spt_context_set_threads(ctx, threads), SPT_OK);
  EXPECT_EQ(spt_context_set_verbosity(ctx, verbosity), SPT_OK);
  EXPECT_EQ(spt_context_set_log(ctx, record_log_line, log), SPT_OK);
  return ContextPtr(ctx);
}

// Caller factors wrapped (not copied) as spt_matrix handles for an options
// struct's init_factors, from factors[first] on (the handles before it stay
// NULL); the handles are freed with this object, the factors are not.
class WrappedFactors {
 public:
  template <typename T>
  WrappedFactors(spt_context* ctx, const std::vector<DenseMatrix<T>>& factors, size_t first = 0)
      : handles_(factors.size(), nullptr) {
    for (size_t m = first; m < factors.size(); ++m) {
      const DenseMatrix<T>& f = factors[m];
      EXPECT_EQ(spt_matrix_wrap(ctx, dtype_of<T>(), f.rows, f.cols, SPT_ROW_MAJOR, const_cast<T*>(f.values.data()),
                                f.cols, &handles_[m]),
                SPT_OK);
    }
  }
  ~WrappedFactors() {
    for (spt_matrix* m : handles_) spt_matrix_free(m);
  }
  WrappedFactors(const WrappedFactors&) = delete;
  WrappedFactors& operator=(const WrappedFactors&) = delete;
  const spt_matrix* const* data() const { return handles_.data(); }

 private:
  std::vector<spt_matrix*> handles_;
};

// An iteration callback for the decompositions' options (callback_data: an
// IterationRecorder): records each sweep in the run, and stops the run
// after `stop_after` sweeps when that is > 0.
template <typename Run>
struct IterationRecorder {
  Run* run = nullptr;
  int stop_after = 0;

  static int callback(void* data, int iteration, double fit, double, double) {
    auto* self = static_cast<IterationRecorder*>(data);
    self->run->callback_iterations.push_back(iteration);
    self->run->callback_fits.push_back(fit);
    return self->stop_after > 0 && iteration >= self->stop_after ? 1 : 0;
  }
};

/* ---------------------------- CP-ALS runs ---------------------------------- */

// A CP-ALS run through the C API: its status, the context's message on
// error, the context's log, the model (nullptr on error), and each sweep's
// number and fit as the options' callback saw them (IterationRecorder).
struct CpdRun {
  spt_status status = SPT_OK;
  std::string error;
  std::vector<std::string> log;
  std::unique_ptr<spt_ktensor_s> k;
  std::vector<int> callback_iterations;
  std::vector<double> callback_fits;

  bool said(const std::string& text) const { return logged(log, text); }
};

// spt_cpd_als of x on ctx into run: `rank` components, at most `iters`
// sweeps, tolerance `tol`, from `init` (user init; empty: the default
// random init), then `adjust` (when given) sets the other options.
template <typename T>
void run_cpd_als(CpdRun& run, spt_context* ctx, const spt_coo_s& x, const std::vector<DenseMatrix<T>>& init,
                 spt_index rank, int iters, double tol,
                 const std::function<void(spt_cpd_options&)>& adjust = nullptr) {
  const WrappedFactors handles(ctx, init);
  spt_cpd_options opts;
  EXPECT_EQ(spt_cpd_options_init(&opts), SPT_OK);
  opts.rank = rank;
  opts.max_iters = iters;
  opts.tol = tol;
  if (!init.empty()) {
    opts.init = SPT_CPD_INIT_USER;
    opts.init_factors = handles.data();
  }
  if (adjust) adjust(opts);
  spt_ktensor* k = nullptr;
  run.status = spt_cpd_als(ctx, &x, &opts, &k);
  if (run.status < 0) run.error = spt_last_error(ctx);
  run.k.reset(k);
}

// Both runs succeeded with the same number of sweeps, and each sweep's fit
// is within `tol` x max(|want's fit|, `floor`) of want's (floor 0: relative).
// Fatal failures return from here only: call it in ASSERT_NO_FATAL_FAILURE.
inline void expect_same_fits(const CpdRun& got, const CpdRun& want, double tol, double floor, const std::string& what) {
  ASSERT_GE(got.status, 0) << what << ": " << got.error;
  ASSERT_GE(want.status, 0) << what << ": " << want.error;
  ASSERT_EQ(got.k->fit_history.size(), want.k->fit_history.size()) << what;
  for (size_t i = 0; i < want.k->fit_history.size(); ++i) {
    const double w = want.k->fit_history[i], g = got.k->fit_history[i];
    EXPECT_LE(std::abs(w - g), tol * std::max(std::abs(w), floor))
        << what << " sweep " << i + 1 << ": want " << w << ", got " << g;
  }
}

// Random factors in [0, 1) (uniform, like the random init), dims[m] x rank.
template <typename T>
std::vector<DenseMatrix<T>> positive_init(const std::vector<spt_index>& dims, spt_index rank, uint64_t seed) {
  auto f = random_factors<T>(dims, rank, seed);
  for (auto& m : f)
    for (auto& v : m.values) v = std::abs(v);
  return f;
}

// Model value sum_r lambda_r prod_m U_m(c_m, r) of a ktensor.
template <typename T>
double model_value(const spt_ktensor_s& k, const std::vector<spt_index>& c) {
  double total = 0.0;
  for (spt_index r = 0; r < k.rank; ++r) {
    double v = static_cast<double>(k.lambda.ptr<T>()[r]);
    for (uint32_t m = 0; m < k.order(); ++m) v *= static_cast<double>(k.factors[m]->ptr<T>()[c[m] * k.rank + r]);
    total += v;
  }
  return total;
}

// Two CP models agree at up to 500 of x's nonzeros (evenly spaced) within
// `tol` of the largest |value| of `want` there: permutation-free, so
// near-tied components may come out in another order.
template <typename T>
void expect_same_model_at_nonzeros(const spt_ktensor_s& got, const spt_ktensor_s& want, const spt_coo_s& x,
                                   double tol, const std::string& what) {
  double scale = 0.0, worst = 0.0;
  const spt_nnz samples = std::min<spt_nnz>(x.nnz, 500);
  std::vector<spt_index> c(x.order());
  for (spt_nnz e = 0; e < samples; ++e) {
    for (uint32_t m = 0; m < x.order(); ++m) c[m] = x.ind[m][e * (x.nnz / samples)];
    const double w = model_value<T>(want, c), g = model_value<T>(got, c);
    scale = std::max(scale, std::abs(w));
    worst = std::max(worst, std::abs(w - g));
  }
  EXPECT_LE(worst, tol * std::max(scale, 1e-12))
      << what << ": models differ by " << worst << " at the nonzeros (largest value " << scale << ")";
}

// Read data tensor `name` (tests/data or ../shared/data) into *out as T;
// false when it is not there. A build without liblzma (the GPU machine's)
// reads the copy benchmarks/gpu_formats.sh unpacks into
// $SPT_TEST_DATA_PLAIN.
template <typename T>
bool read_data_tensor(const char* name, spt_coo_s* out) {
  const std::string path = data_file(name);
  if (path.empty()) return false;
  spt_coo* raw = nullptr;
  spt_status status = spt_read(nullptr, path.c_str(), nullptr, &raw);
  if (status == SPT_ERR_UNSUPPORTED) {
    const char* plain = std::getenv("SPT_TEST_DATA_PLAIN");
    if (!plain) return false;
    std::string unpacked = std::string(plain) + "/" + name;
    unpacked.resize(unpacked.size() - 3);  // drop ".xz"
    status = spt_read(nullptr, unpacked.c_str(), nullptr, &raw);
  }
  EXPECT_EQ(status, SPT_OK) << name << ": " << spt_thread_last_error();
  if (status != SPT_OK) return false;
  *out = copy_coo(*raw, dtype_of<T>());
  spt_coo_free(raw);
  return true;
}

}  // namespace spt::test

#define SKIP_WITHOUT_DEVICE()                                                                                      \
  do {                                                                                                             \
    if (!::spt::test::have_device())                                                                               \
      GTEST_SKIP() << "no usable CUDA device: " << ::spt::dispatch::cuda_plugin().reason;                         \
  } while (0)
