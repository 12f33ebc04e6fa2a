// Shared set-up of the GPU tests (tests/unit/test_cuda*.cpp): point the
// plugin loader at the plugin this build made, and skip a test with the
// reason when no CUDA device is usable. Header-only: SPT_CUDA_PLUGIN_FILE is
// defined per test executable (tests/cuda.cmake).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>

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

}  // namespace spt::test

#define SKIP_WITHOUT_DEVICE()                                                                                      \
  do {                                                                                                             \
    if (!::spt::test::have_device())                                                                               \
      GTEST_SKIP() << "no usable CUDA device: " << ::spt::dispatch::cuda_plugin().reason;                         \
  } while (0)
