// Helpers shared by the benchmark drivers: error checks, timing, medians,
// host description and JSON Lines records (keys of ../shared/DESIGN.md
// "Benchmarks", emitted in insertion order, written by nlohmann::json).
#pragma once

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sptensor/sptensor.h"

namespace spt_bench {

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void check(spt_status st, const spt_context* ctx, const std::string& what) {
  if (st < 0) throw Failure(what + ": " + spt_last_error(ctx));
}

inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

inline double minimum(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

struct CallTiming {
  double median_ms = 0, min_ms = 0;
};

// 2 warm-ups, then `reps` timed calls (wall clock).
inline CallTiming time_calls(int reps, const std::function<void()>& call) {
  for (int w = 0; w < 2; ++w) call();
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_seconds();
    call();
    ms.push_back((now_seconds() - t0) * 1e3);
  }
  return {median(ms), minimum(ms)};
}

inline unsigned long long file_bytes(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<unsigned long long>(st.st_size) : 0;
}

inline std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        size_t start = line.find_first_not_of(' ', colon + 1);
        return start == std::string::npos ? "" : line.substr(start);
      }
    }
  }
  return "unknown CPU";
}

inline std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// File stem without directory and the .tns/.sptb/.bin (+ compression) suffixes.
inline std::string tensor_stem(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  for (const char* suffix : {".xz", ".gz", ".zst", ".tns", ".sptb", ".bin"}) {
    size_t n = std::strlen(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) name.resize(name.size() - n);
  }
  return name;
}

// One JSON Lines record; keys are emitted in insertion order. Measurements
// keep 6 significant digits (plenty for timings, and lines stay short);
// a non-finite number is written as null.
class Record {
 public:
  Record& str(const std::string& k, const std::string& v) { return set(k, v); }
  Record& num(const std::string& k, double v) { return set(k, significant(v, 6)); }
  // A number with `digits` significant digits (a fit, where six are too few).
  Record& num(const std::string& k, double v, int digits) { return set(k, significant(v, digits)); }
  Record& integer(const std::string& k, long long v) { return set(k, v); }
  Record& boolean(const std::string& k, bool v) { return set(k, v); }
  Record& null(const std::string& k) { return set(k, nullptr); }
  // A nested object: `inner`'s keys under k.
  Record& record(const std::string& k, const Record& inner) { return set(k, inner.body_); }
  std::string text() const { return body_.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace); }
  void print(FILE* to = stdout) const {
    std::fprintf(to, "%s\n", text().c_str());
    std::fflush(to);
  }

 private:
  template <typename V>
  Record& set(const std::string& k, V&& v) {
    body_[k] = std::forward<V>(v);
    return *this;
  }
  static double significant(double v, int digits) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    return std::strtod(buf, nullptr);
  }
  nlohmann::ordered_json body_ = nlohmann::ordered_json::object();
};

// Parses "float32" / "float64" into *out; false for anything else.
inline bool parse_dtype_name(const std::string& name, spt_dtype* out) {
  if (name == "float32") *out = SPT_FLOAT32;
  else if (name == "float64") *out = SPT_FLOAT64;
  else return false;
  return true;
}

// Points the plugin loader at the CUDA plugin this build made
// (SPT_CUDA_PLUGIN_FILE, defined for the GPU drivers) unless
// SPT_PLUGIN_PATH already names one.
inline void use_built_cuda_plugin() {
#ifdef SPT_CUDA_PLUGIN_FILE
  setenv("SPT_PLUGIN_PATH", SPT_CUDA_PLUGIN_FILE, /*overwrite=*/0);
#endif
}

// The command line of a GPU driver. The options every driver takes go into
// the fields: --rank R, --reps N (at least 1), --dtype float32|float64; an
// argument without a leading '-' is a file; any other option goes to
// other(name, value), where value() takes the next argument as the
// option's value (nullptr when there is none), and which returns false for
// an unknown option or a bad value. False when an argument is bad.
template <typename Other>
bool read_gpu_command_line(int argc, char** argv, uint32_t& rank, int& reps, spt_dtype& dtype,
                           std::vector<std::string>& files, Other&& other) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--rank" || a == "--reps" || a == "--dtype") {
      const char* v = value();
      if (!v) return false;
      if (a == "--rank") rank = uint32_t(std::strtoul(v, nullptr, 10));
      else if (a == "--reps") reps = std::max(1, std::atoi(v));
      else if (!parse_dtype_name(v, &dtype)) return false;
    } else if (a.empty() || a[0] != '-') {
      files.push_back(a);
    } else if (!other(a, value)) {
      return false;
    }
  }
  return true;
}

struct ContextDeleter {
  void operator()(spt_context* c) const { spt_context_free(c); }
};
using ContextPtr = std::unique_ptr<spt_context, ContextDeleter>;

// A new context on `backend`, and in *info what it resolves to (device
// name, whether CUDA is usable and why not). Throws Failure.
inline ContextPtr backend_context(spt_backend backend, spt_backend_info* info) {
  spt_context* raw = nullptr;
  check(spt_context_create(&raw), nullptr, "spt_context_create");
  ContextPtr ctx(raw);
  check(spt_context_set_backend(raw, backend), raw, "spt_context_set_backend");
  *info = spt_backend_info{};
  info->struct_size = sizeof *info;
  check(spt_context_backend_info(raw, info), raw, "spt_context_backend_info");
  return ctx;
}

// The context a driver runs with and the host fields every record carries.
struct BenchEnv {
  spt_context* ctx = nullptr;
  std::string device, date, commit;
  int threads = 1;

  BenchEnv() = default;
  BenchEnv(const BenchEnv&) = delete;
  BenchEnv& operator=(const BenchEnv&) = delete;
  ~BenchEnv() { spt_context_free(ctx); }

  // Creates the context (threads_wanted 0 = the library default) and fills
  // the host fields (commit from $SPT_COMMIT). Throws Failure.
  void open(int threads_wanted) {
    check(spt_context_create(&ctx), nullptr, "spt_context_create");
    if (threads_wanted > 0) check(spt_context_set_threads(ctx, threads_wanted), ctx, "spt_context_set_threads");
    check(spt_context_get_threads(ctx, &threads), ctx, "spt_context_get_threads");
    device = cpu_model();
    date = utc_now();
    const char* c = std::getenv("SPT_COMMIT");
    commit = c && *c ? c : "unknown";
  }
};

struct MatrixDeleter {
  void operator()(spt_matrix* m) const { spt_matrix_free(m); }
};
using MatrixPtr = std::unique_ptr<spt_matrix, MatrixDeleter>;

// Deterministic factor values in [0, 1) (a small LCG; quality is irrelevant).
inline MatrixPtr random_factor(const BenchEnv& env, spt_dtype dtype, spt_nnz rows, spt_nnz cols, uint64_t seed) {
  spt_matrix* m = nullptr;
  check(spt_matrix_create(env.ctx, dtype, rows, cols, SPT_ROW_MAJOR, &m), env.ctx, "spt_matrix_create");
  MatrixPtr owned(m);
  void* data = nullptr;
  check(spt_matrix_data(m, &data), env.ctx, "spt_matrix_data");
  uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (spt_nnz i = 0; i < rows * cols; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double v = static_cast<double>(state >> 11) * (1.0 / 9007199254740992.0);
    if (dtype == SPT_FLOAT32) static_cast<float*>(data)[i] = static_cast<float>(v);
    else static_cast<double*>(data)[i] = v;
  }
  return owned;
}

// Reads `path` with the given value type; the caller frees the tensor.
// Throws Failure with the library's message.
inline spt_coo* read_tensor(spt_context* ctx, const std::string& path, spt_dtype dtype) {
  spt_read_options ro;
  check(spt_read_options_init(&ro), ctx, "spt_read_options_init");
  ro.dtype = dtype;
  spt_coo* x = nullptr;
  check(spt_read(ctx, path.c_str(), &ro, &x), ctx, "reading " + path);
  return x;
}

}  // namespace spt_bench
