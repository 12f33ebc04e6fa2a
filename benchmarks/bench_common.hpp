// Helpers shared by the benchmark drivers: error checks, timing, medians,
// host description and JSON Lines records (keys of ../shared/DESIGN.md
// "Benchmarks", emitted in insertion order).
#pragma once

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

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

inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

inline std::string json_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// One JSON Lines record; keys are emitted in insertion order.
class Record {
 public:
  Record& str(const std::string& k, const std::string& v) { return raw(k, json_string(v)); }
  Record& num(const std::string& k, double v) { return raw(k, json_number(v)); }
  Record& integer(const std::string& k, long long v) { return raw(k, std::to_string(v)); }
  Record& null(const std::string& k) { return raw(k, "null"); }
  Record& raw(const std::string& k, const std::string& v) {
    body_ += (body_.empty() ? "" : ", ") + json_string(k) + ": " + v;
    return *this;
  }
  void print() const {
    std::printf("{%s}\n", body_.c_str());
    std::fflush(stdout);
  }

 private:
  std::string body_;
};

// Parses "float32" / "float64" into *out; false for anything else.
inline bool parse_dtype_name(const std::string& name, spt_dtype* out) {
  if (name == "float32") *out = SPT_FLOAT32;
  else if (name == "float64") *out = SPT_FLOAT64;
  else return false;
  return true;
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
