// Shared set-up of the GPU tests (tests/unit/test_cuda*.cpp): point the
// plugin loader at the plugin this build made, and skip a test with the
// reason when no CUDA device is usable. Header-only: SPT_CUDA_PLUGIN_FILE is
// defined per test executable (tests/cuda.cmake).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "core/coo.hpp"
#include "core/dtype.hpp"
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
