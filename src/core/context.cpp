#include "core/context.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <strings.h>

#include "util/printable.hpp"

namespace spt {

namespace {
thread_local spt_context_s default_context;
thread_local std::string thread_last_error;
}  // namespace

spt_context_s& resolve(spt_context* ctx) { return ctx ? *ctx : default_context; }
const spt_context_s& resolve(const spt_context* ctx) { return ctx ? *ctx : default_context; }

int thread_count(const spt_context_s& ctx) {
  if (ctx.threads > 0) return ctx.threads;
  // OpenMP's default follows OMP_NUM_THREADS, which may ask for more
  // threads than the runtime can start (libgomp then crashes or exits the
  // process): never more than the processors we may run on.
  const int n = std::min({omp_get_max_threads(), omp_get_num_procs(), SPT_MAX_THREADS});
  return n > 0 ? n : 1;
}

namespace {

// AVX, AVX2, FMA, BMI1/2 and POPCNT, as variant.hpp compiles for; the compiler's
// runtime also checks that the OS saves the AVX registers.
bool cpu_runs_x86_64_v3() {
#if defined(SPT_HAVE_CPU_X86_64_V3_KERNELS)  // defined for GCC on x86-64 only (cmake/sptensor_layers.cmake)
  static const bool runs = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt");
  }();
  return runs;
#else
  return false;
#endif
}

}  // namespace

bool cpu_isa_available(spt_cpu_isa isa) {
  switch (isa) {
    case SPT_CPU_ISA_AUTO:
    case SPT_CPU_ISA_BASELINE: return true;
    case SPT_CPU_ISA_X86_64_V3: return cpu_runs_x86_64_v3();
    default: return false;
  }
}

CpuIsa cpu_isa(const spt_context_s& ctx) {
  if (ctx.cpu_isa == SPT_CPU_ISA_BASELINE) return CpuIsa::baseline;
  return cpu_runs_x86_64_v3() ? CpuIsa::x86_64_v3 : CpuIsa::baseline;
}

void log(const spt_context_s& ctx, int level, const std::string& message) {
  if (!ctx.log || level > ctx.verbosity) return;
  // One message at a time: the callback need not be reentrant, and a
  // library thread (not only the caller's) may log. A callback that calls
  // the library, which logs again on its thread, is not made to wait for
  // itself.
  static std::mutex mutex;
  thread_local bool in_callback = false;
  if (in_callback) {
    ctx.log(ctx.log_data, level, message.c_str());
    return;
  }
  std::lock_guard<std::mutex> lock(mutex);
  in_callback = true;
  struct Reset {
    ~Reset() { in_callback = false; }
  } reset;
  ctx.log(ctx.log_data, level, message.c_str());
}

void progress(const spt_context_s& ctx, const char* stage, double fraction) {
  if (ctx.progress) ctx.progress(ctx.progress_data, stage, fraction);
}

void record_error(spt_context* ctx, const std::string& message) {
  thread_last_error = util::printable(message);
  if (ctx) ctx->last_error = thread_last_error;
}

void record_out_of_memory(spt_context* ctx) noexcept {
  static constexpr char kMessage[] = "out of memory";
  static_assert(sizeof(kMessage) - 1 < 15, "must fit the inline buffer of every std::string");
  thread_last_error.assign(kMessage, sizeof(kMessage) - 1);
  if (ctx) ctx->last_error.assign(kMessage, sizeof(kMessage) - 1);
}

const char* thread_error() { return thread_last_error.c_str(); }

bool parse_backend(const char* text, spt_backend* out) {
  struct Name {
    const char* name;
    spt_backend value;
  };
  static const Name names[] = {{"auto", SPT_BACKEND_AUTO},
                               {"cpu", SPT_BACKEND_CPU},
                               {"cuda", SPT_BACKEND_CUDA},
                               {"reference", SPT_BACKEND_REFERENCE}};
  for (const Name& n : names) {
    if (strcasecmp(text, n.name) == 0) {
      *out = n.value;
      return true;
    }
  }
  return false;
}

}  // namespace spt
