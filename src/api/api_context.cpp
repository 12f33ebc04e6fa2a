// C ABI: version, status strings, context and error reporting.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api/guard.hpp"
#include "dispatch/plugin_loader.hpp"

using namespace spt;

namespace {

// Throw SPT_ERR_DEVICE unless the CUDA plugin is usable and has `device`.
void require_cuda_device(int device, const std::string& what) {
  const dispatch::CudaPlugin& cuda = dispatch::cuda_plugin();
  if (!cuda.usable()) fail(SPT_ERR_DEVICE, what, ": CUDA is not usable: ", cuda.reason);
  if (device >= static_cast<int>(cuda.devices.size()))
    fail(SPT_ERR_DEVICE, what, ": CUDA device ", device, " does not exist (", cuda.devices.size(),
         " device(s) found, ordinals start at 0)");
}

void copy_text(char* dst, size_t size, const std::string& text) {
  const size_t n = std::min(size - 1, text.size());
  std::memcpy(dst, text.data(), n);
  dst[n] = 0;
}

}  // namespace

extern "C" {

SPT_API const char* spt_version(void) {
#define SPT_STR2(x) #x
#define SPT_STR(x) SPT_STR2(x)
  return SPT_STR(SPT_VERSION_MAJOR) "." SPT_STR(SPT_VERSION_MINOR) "." SPT_STR(SPT_VERSION_PATCH);
#undef SPT_STR
#undef SPT_STR2
}

SPT_API void spt_version_numbers(int* major, int* minor, int* patch) {
  if (major) *major = SPT_VERSION_MAJOR;
  if (minor) *minor = SPT_VERSION_MINOR;
  if (patch) *patch = SPT_VERSION_PATCH;
}

SPT_API const char* spt_status_string(spt_status status) {
  switch (status) {
    case SPT_OK: return "SPT_OK";
    case SPT_WARN_NOT_CONVERGED: return "SPT_WARN_NOT_CONVERGED";
    case SPT_ERR_INVALID_ARGUMENT: return "SPT_ERR_INVALID_ARGUMENT";
    case SPT_ERR_IO: return "SPT_ERR_IO";
    case SPT_ERR_PARSE: return "SPT_ERR_PARSE";
    case SPT_ERR_OUT_OF_MEMORY: return "SPT_ERR_OUT_OF_MEMORY";
    case SPT_ERR_UNSUPPORTED: return "SPT_ERR_UNSUPPORTED";
    case SPT_ERR_DEVICE: return "SPT_ERR_DEVICE";
    case SPT_ERR_MPI: return "SPT_ERR_MPI";
    case SPT_ERR_NUMERICAL: return "SPT_ERR_NUMERICAL";
    case SPT_ERR_OVERFLOW: return "SPT_ERR_OVERFLOW";
    case SPT_ERR_READ_ONLY: return "SPT_ERR_READ_ONLY";
    case SPT_ERR_INTERNAL: return "SPT_ERR_INTERNAL";
    default: return "SPT_UNKNOWN_STATUS";
  }
}

SPT_API spt_status spt_context_create(spt_context** out) {
  return guarded("spt_context_create", [&] {
    require_not_null(out, "out");
    spt_backend backend = SPT_BACKEND_AUTO;
    if (const char* env = std::getenv("SPT_BACKEND"); env && *env) {
      if (!parse_backend(env, &backend))
        fail(SPT_ERR_INVALID_ARGUMENT, "environment variable SPT_BACKEND=", env,
             " is not one of auto, cpu, cuda, reference");
      if (backend == SPT_BACKEND_CUDA) require_cuda_device(0, "SPT_BACKEND=cuda");
    }
    auto* ctx = new spt_context_s();
    ctx->backend = backend;
    *out = ctx;
  });
}

SPT_API spt_status spt_context_free(spt_context* ctx) {
  delete ctx;
  return SPT_OK;
}

SPT_API spt_status spt_context_set_threads(spt_context* ctx, int threads) {
  return guarded(ctx, "spt_context_set_threads", [&] {
    require_not_null(ctx, "ctx");
    require(threads >= 0 && threads <= SPT_MAX_THREADS, "threads must be 0 (the default) to SPT_MAX_THREADS (",
            SPT_MAX_THREADS, "), got ", threads);
    ctx->threads = threads;
  });
}

SPT_API spt_status spt_context_get_threads(const spt_context* ctx, int* threads) {
  return guarded("spt_context_get_threads", [&] {
    require_not_null(threads, "threads");
    *threads = thread_count(resolve(ctx));
  });
}

SPT_API spt_status spt_context_set_backend(spt_context* ctx, spt_backend backend) {
  return guarded(ctx, "spt_context_set_backend", [&] {
    require_not_null(ctx, "ctx");
    switch (backend) {
      case SPT_BACKEND_AUTO:
      case SPT_BACKEND_CPU:
      case SPT_BACKEND_REFERENCE: ctx->backend = backend; return;
      case SPT_BACKEND_CUDA:
        require_cuda_device(ctx->device, "SPT_BACKEND_CUDA");
        ctx->backend = backend;
        return;
      default: fail(SPT_ERR_INVALID_ARGUMENT, "unknown backend ", static_cast<int>(backend));
    }
  });
}

SPT_API spt_status spt_context_get_backend(const spt_context* ctx, spt_backend* backend) {
  return guarded("spt_context_get_backend", [&] {
    require_not_null(backend, "backend");
    *backend = resolve(ctx).backend;
  });
}

SPT_API spt_status spt_context_set_device(spt_context* ctx, int device) {
  return guarded(ctx, "spt_context_set_device", [&] {
    require_not_null(ctx, "ctx");
    require(device >= 0, "device must be >= 0 (a CUDA device ordinal), got ", device);
    require_cuda_device(device, "device");
    ctx->device = device;
    ctx->devices.assign(1, device);
  });
}

SPT_API spt_status spt_context_set_devices(spt_context* ctx, const int* ids, int count) {
  return guarded(ctx, "spt_context_set_devices", [&] {
    require_not_null(ctx, "ctx");
    require(count >= 0 && count <= SPT_MAX_DEVICES, "count must be 0 (every device) to SPT_MAX_DEVICES (",
            SPT_MAX_DEVICES, "), got ", count);
    if (count == 0) {
      ctx->devices.clear();
      return;
    }
    require_not_null(ids, "ids");
    std::vector<int> chosen(ids, ids + count);
    for (int i = 0; i < count; ++i) {
      require(chosen[i] >= 0, "ids[", i, "] must be >= 0 (a CUDA device ordinal), got ", chosen[i]);
      require(std::find(chosen.begin(), chosen.begin() + i, chosen[i]) == chosen.begin() + i, "ids[", i, "] = ",
              chosen[i], " appears twice");
    }
    for (int i = 0; i < count; ++i) require_cuda_device(chosen[i], "ids[" + std::to_string(i) + "]");
    ctx->device = chosen[0];
    ctx->devices = std::move(chosen);
  });
}

SPT_API spt_status spt_context_set_nccl_library(spt_context* ctx, const char* path) {
  return guarded(ctx, "spt_context_set_nccl_library", [&] {
    require_not_null(ctx, "ctx");
    const size_t length = path ? std::strlen(path) : 0;
    require(length <= SPT_MAX_NCCL_LIBRARY_PATH, "path must be at most SPT_MAX_NCCL_LIBRARY_PATH (",
            SPT_MAX_NCCL_LIBRARY_PATH, ") bytes, got ", length);
    ctx->nccl_library.assign(path ? path : "", length);
  });
}

SPT_API spt_status spt_context_set_device_streaming(spt_context* ctx, spt_device_streaming streaming) {
  return guarded(ctx, "spt_context_set_device_streaming", [&] {
    require_not_null(ctx, "ctx");
    require(streaming == SPT_DEVICE_STREAMING_AUTO || streaming == SPT_DEVICE_STREAMING_ALWAYS,
            "streaming must be SPT_DEVICE_STREAMING_AUTO (0) or SPT_DEVICE_STREAMING_ALWAYS (1), got ",
            static_cast<int>(streaming));
    ctx->device_streaming = streaming;
  });
}

SPT_API spt_status spt_context_get_device_streaming(const spt_context* ctx, spt_device_streaming* streaming) {
  return guarded("spt_context_get_device_streaming", [&] {
    require_not_null(streaming, "streaming");
    *streaming = resolve(ctx).device_streaming;
  });
}

SPT_API spt_status spt_context_set_cpu_isa(spt_context* ctx, spt_cpu_isa isa) {
  return guarded(ctx, "spt_context_set_cpu_isa", [&] {
    require_not_null(ctx, "ctx");
    require(isa == SPT_CPU_ISA_AUTO || isa == SPT_CPU_ISA_BASELINE || isa == SPT_CPU_ISA_X86_64_V3,
            "isa must be SPT_CPU_ISA_AUTO (0), SPT_CPU_ISA_BASELINE (1) or SPT_CPU_ISA_X86_64_V3 (2), got ",
            static_cast<int>(isa));
    if (!cpu_isa_available(isa))
      fail(SPT_ERR_UNSUPPORTED,
           "SPT_CPU_ISA_X86_64_V3: this library has no x86-64-v3 build of its CPU kernels (not x86-64, not built "
           "with GCC, or built with SPT_NATIVE or without SPT_CPU_DISPATCH) or this CPU lacks AVX2, FMA or BMI2");
    ctx->cpu_isa = isa;
  });
}

SPT_API spt_status spt_context_get_cpu_isa(const spt_context* ctx, spt_cpu_isa* isa) {
  return guarded("spt_context_get_cpu_isa", [&] {
    require_not_null(isa, "isa");
    *isa = resolve(ctx).cpu_isa;
  });
}

SPT_API spt_status spt_context_backend_info(const spt_context* ctx, spt_backend_info* info) {
  return guarded("spt_context_backend_info", [&] {
    require_not_null(info, "info");
    const size_t minimum = offsetof(spt_backend_info, requested) + sizeof(spt_backend);
    require(info->struct_size >= minimum, "info->struct_size is ", info->struct_size,
            "; set it to sizeof(spt_backend_info) before the call");
    const spt_context_s& c = resolve(ctx);
    const dispatch::CudaPlugin& cuda = dispatch::cuda_plugin();
    spt_backend_info full{};
    full.struct_size = info->struct_size;
    full.requested = c.backend;
    full.backend = dispatch::effective_backend(c);
    full.cuda_available = cuda.usable() ? 1 : 0;
    full.device = c.device;
    full.device_count = static_cast<int>(cuda.devices.size());
    if (c.device < full.device_count) {
      const spt_plugin_device_info& d = cuda.devices[c.device];
      copy_text(full.device_name, sizeof full.device_name, d.name);
      full.device_total_memory = d.total_memory;
      full.compute_capability_major = d.compute_capability_major;
      full.compute_capability_minor = d.compute_capability_minor;
    }
    copy_text(full.plugin_path, sizeof full.plugin_path, cuda.path);
    std::string reason;
    if (full.backend != SPT_BACKEND_CUDA) {
      if (c.backend == SPT_BACKEND_CPU || c.backend == SPT_BACKEND_REFERENCE)
        reason = cat("the context's backend is ", c.backend == SPT_BACKEND_CPU ? "CPU" : "REFERENCE",
                     " (set with spt_context_set_backend or env SPT_BACKEND)");
      else if (!cuda.usable())
        reason = cuda.reason;
      else
        reason = cat("the context's device ", c.device, " does not exist (", cuda.devices.size(), " found)");
    }
    copy_text(full.reason, sizeof full.reason, reason);
    full.cpu_isa = cpu_isa(c) == CpuIsa::x86_64_v3 ? SPT_CPU_ISA_X86_64_V3 : SPT_CPU_ISA_BASELINE;
    std::memcpy(reinterpret_cast<char*>(info) + sizeof(size_t), reinterpret_cast<const char*>(&full) + sizeof(size_t),
                std::min(info->struct_size, sizeof full) - sizeof(size_t));
  });
}

SPT_API spt_status spt_context_set_seed(spt_context* ctx, uint64_t seed) {
  return guarded(ctx, "spt_context_set_seed", [&] {
    require_not_null(ctx, "ctx");
    ctx->seed = seed;
  });
}

SPT_API spt_status spt_context_set_verbosity(spt_context* ctx, int level) {
  return guarded(ctx, "spt_context_set_verbosity", [&] {
    require_not_null(ctx, "ctx");
    require(level >= 0, "verbosity must be >= 0, got ", level);
    ctx->verbosity = level;
  });
}

SPT_API spt_status spt_context_set_progress(spt_context* ctx, spt_progress_fn fn, void* user_data) {
  return guarded(ctx, "spt_context_set_progress", [&] {
    require_not_null(ctx, "ctx");
    ctx->progress = fn;
    ctx->progress_data = user_data;
  });
}

SPT_API spt_status spt_context_set_log(spt_context* ctx, spt_log_fn fn, void* user_data) {
  return guarded(ctx, "spt_context_set_log", [&] {
    require_not_null(ctx, "ctx");
    ctx->log = fn;
    ctx->log_data = user_data;
  });
}

SPT_API const char* spt_last_error(const spt_context* ctx) {
  return ctx ? ctx->last_error.c_str() : thread_error();
}

SPT_API const char* spt_thread_last_error(void) { return thread_error(); }

}  // extern "C"
