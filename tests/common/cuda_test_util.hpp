// Shared set-up of the GPU tests (tests/unit/test_cuda*.cpp): point the
// plugin loader at the plugin this build made, and skip a test with the
// reason when no CUDA device is usable. Header-only: SPT_CUDA_PLUGIN_FILE is
// defined per test executable (tests/cuda.cmake).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "dispatch/plugin_loader.hpp"

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

}  // namespace spt::test

#define SKIP_WITHOUT_DEVICE()                                                                                      \
  do {                                                                                                             \
    if (!::spt::test::have_device())                                                                               \
      GTEST_SKIP() << "no usable CUDA device: " << ::spt::dispatch::cuda_plugin().reason;                         \
  } while (0)
