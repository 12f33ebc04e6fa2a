// The context: backend choice, thread count, seed, callbacks and the last
// error message. A NULL context from the caller resolves to per-thread
// defaults (see resolve()).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/exec.hpp"
#include "sptensor/sptensor.h"
#include "util/internal_api.hpp"

struct spt_context_s {
  int threads = 0;  // 0 = default (thread_count: OpenMP's, capped at the processors)
  spt_backend backend = SPT_BACKEND_AUTO;
  int device = 0;  // CUDA device ordinal used when the backend resolves to CUDA
  // The CUDA devices a multi-device run may use, lead first (its first is
  // `device`); empty = every device (spt_context_set_devices).
  std::vector<int> devices;
  // When GPU runs stream a COO tensor from host memory (spt_context_set_device_streaming).
  spt_device_streaming device_streaming = SPT_DEVICE_STREAMING_AUTO;
  // The NCCL library multi-GPU runs load ("" = the default search;
  // spt_context_set_nccl_library).
  std::string nccl_library;
  // The build of the CPU kernels (spt_context_set_cpu_isa; cpu_isa() resolves AUTO).
  spt_cpu_isa cpu_isa = SPT_CPU_ISA_AUTO;
  uint64_t seed = 0;
  int verbosity = 0;
  spt_progress_fn progress = nullptr;
  void* progress_data = nullptr;
  spt_log_fn log = nullptr;
  void* log_data = nullptr;
  std::string last_error;
  // The GPU SpTTM kernel forced by the tests (an SPT_PLUGIN_TTM_* value of
  // src/dispatch/plugin_abi.h; 0 = the plugin's rule). Not in the C API.
  int gpu_ttm_variant = 0;
};

namespace spt {

// The caller's context, or a per-thread default one when ctx is NULL.
SPT_INTERNAL_API spt_context_s& resolve(spt_context* ctx);
SPT_INTERNAL_API const spt_context_s& resolve(const spt_context* ctx);

// Threads kernels should use for this context (>= 1).
SPT_INTERNAL_API int thread_count(const spt_context_s& ctx);

// Whether this build holds the CPU kernels of `isa` (BASELINE or
// X86_64_V3; kernels/cpu/variant.hpp) and this CPU and OS run them.
bool cpu_isa_available(spt_cpu_isa isa);

// The build of the CPU kernels the context's runs use: its setting, AUTO
// resolved to x86-64-v3 where available.
CpuIsa cpu_isa(const spt_context_s& ctx);

// Send a message to the log callback when `level` <= verbosity.
SPT_INTERNAL_API void log(const spt_context_s& ctx, int level, const std::string& message);

// Report progress in [0,1] for `stage` to the progress callback, if any.
SPT_INTERNAL_API void progress(const spt_context_s& ctx, const char* stage, double fraction);

// Record an error message on the context (if any) and the calling thread.
SPT_INTERNAL_API void record_error(spt_context* ctx, const std::string& message);

// Record "out of memory" without allocating, for when recording a message
// itself ran out of memory (the text fits std::string's inline buffer).
SPT_INTERNAL_API void record_out_of_memory(spt_context* ctx) noexcept;

SPT_INTERNAL_API const char* thread_error();

// Parse an SPT_BACKEND value ("auto", "cpu", "cuda", "reference").
bool parse_backend(const char* text, spt_backend* out);

}  // namespace spt
