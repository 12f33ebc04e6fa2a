// Shared pieces of the libFuzzer targets (tests/fuzz, built with -DSPT_FUZZ=ON
// by scripts/fuzz.sh). Every target feeds bytes to one reader or converter
// and checks only what must hold for ANY input: the call returns a status
// (never crashes, leaks or reads out of bounds; ASan/UBSan watch), and a
// successful result is internally consistent. An invariant violation calls
// __builtin_trap(), which libFuzzer reports as a crash with the input saved.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "sptensor/sptensor.h"

namespace spt_fuzz {

#define FUZZ_CHECK(cond)          \
  do {                            \
    if (!(cond)) __builtin_trap(); \
  } while (0)

// One context for the whole run: one thread (reproducible), CPU backend.
inline spt_context* context() {
  static spt_context* ctx = [] {
    spt_context* c = nullptr;
    spt_context_create(&c);
    spt_context_set_threads(c, 1);
    spt_context_set_backend(c, SPT_BACKEND_CPU);
    return c;
  }();
  return ctx;
}

// The bytes as a file the library can open by path (an in-memory file:
// no disk traffic). The descriptor is reused: truncated and rewritten.
inline std::string as_file(const uint8_t* data, size_t size) {
  static int fd = memfd_create("spt_fuzz_input", 0);
  FUZZ_CHECK(fd >= 0);
  FUZZ_CHECK(ftruncate(fd, 0) == 0);
  size_t done = 0;
  while (done < size) {
    ssize_t w = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    FUZZ_CHECK(w > 0);
    done += static_cast<size_t>(w);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

// A status every public call may return for hostile input; INTERNAL is a
// library bug and fails the run.
inline void check_status(spt_status s) {
  FUZZ_CHECK(s == SPT_OK || s == SPT_WARN_NOT_CONVERGED || s == SPT_ERR_INVALID_ARGUMENT || s == SPT_ERR_IO ||
             s == SPT_ERR_PARSE || s == SPT_ERR_OUT_OF_MEMORY || s == SPT_ERR_UNSUPPORTED ||
             s == SPT_ERR_OVERFLOW || s == SPT_ERR_NUMERICAL);
  // Errors carry a message.
  if (s < 0) FUZZ_CHECK(spt_last_error(context())[0] != '\0');
}

// A tensor a reader returned: indices inside dims, nnz as reported.
inline void check_tensor(const spt_coo* x) {
  spt_coo_summary info;
  info.struct_size = sizeof info;
  FUZZ_CHECK(spt_coo_info(nullptr, x, &info) == SPT_OK);
  const uint32_t order = info.order;
  const spt_nnz nnz = info.nnz;
  FUZZ_CHECK(order >= 1);
  spt_index dims[64];
  if (order > 64) return;
  FUZZ_CHECK(spt_coo_dims(x, dims) == SPT_OK);
  for (uint32_t m = 0; m < order; ++m) {
    FUZZ_CHECK(dims[m] >= 1);
    const spt_index* ind = nullptr;
    FUZZ_CHECK(spt_coo_indices(x, m, &ind) == SPT_OK);
    for (spt_nnz k = 0; k < nnz; ++k) FUZZ_CHECK(ind[k] < dims[m]);
  }
}

// Reads `path` with `opts` and checks the outcome.
inline void read_and_check(const std::string& path, const spt_read_options& opts) {
  spt_coo* x = nullptr;
  spt_status s = spt_read(context(), path.c_str(), &opts, &x);
  check_status(s);
  if (s == SPT_OK) {
    check_tensor(x);
  } else {
    FUZZ_CHECK(x == nullptr);
  }
  spt_coo_free(x);
}

}  // namespace spt_fuzz
