// Helpers shared by the CUDA plugin's entry files (cuda/plugin*.cu): status
// values, messages, the exception guard, per-device set-up, the free-memory
// check (SPT_CUDA_MEMORY_LIMIT), device-copy release, and the MTTKRP-shaped
// factor/output staging. Everything is inline (one definition across the
// plugin's translation units); nothing here is exported.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "dispatch/plugin_abi.h"
#include "step_failure.cuh"

namespace spt_plugin {

// Status values of sptensor.h (the plugin does not include the public header
// to stay independent of it; the numbers are part of the stable ABI).
constexpr int kOk = 0;
constexpr int kInvalidArgument = -1;
constexpr int kOutOfMemory = -4;
constexpr int kUnsupported = -5;
constexpr int kDevice = -6;

inline void write_message(char* message, size_t len, const std::string& text) {
  if (!message || len == 0) return;
  const size_t n = std::min(len - 1, text.size());
  std::memcpy(message, text.data(), n);
  message[n] = 0;
}

inline std::string describe(cudaError_t err) {
  return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
}

// Map a CUDA error to a status with a message; clears a non-sticky error.
inline int cuda_failure(cudaError_t err, const char* what, char* message, size_t len) {
  cudaGetLastError();
  write_message(message, len, std::string(what) + " failed (" + describe(err) + ")");
  return err == cudaErrorMemoryAllocation ? kOutOfMemory : kDevice;
}

#define SPT_CUDA_TRY(call, what)                                             \
  do {                                                                       \
    cudaError_t err_ = (call);                                               \
    if (err_ != cudaSuccess) return cuda_failure(err_, what, message, message_len); \
  } while (0)

// Run body, turning C++ exceptions into statuses: a failed step of a
// device run (library_checks::Failure) into its own status and message.
template <typename Body>
int guarded(char* message, size_t message_len, Body&& body) noexcept {
  try {
    return body();
  } catch (const spt::cuda::library_checks::Failure& f) {
    write_message(message, message_len, f.message);
    return f.code;
  } catch (const std::bad_alloc&) {
    write_message(message, message_len, "host out of memory in the CUDA plugin");
    return kOutOfMemory;
  } catch (const std::exception& e) {
    write_message(message, message_len, std::string("CUDA plugin internal error: ") + e.what());
    return kDevice;
  } catch (...) {
    write_message(message, message_len, "CUDA plugin internal error");
    return kDevice;
  }
}

// One step of a device run's session s (a session struct: device, order,
// run and kRun, the run's name for messages): checks s and mode, makes s's
// device current and returns body(*s->run); a failed step (a
// library_checks::Failure) becomes its status and message. The steps of a
// run come one after another from one thread, which keeps its device: it
// is selected only when another one is current.
template <typename Session, typename Body>
int session_step(Session* s, uint32_t mode, char* message, size_t message_len, Body&& body) {
  return guarded(message, message_len, [&]() -> int {
    if (!s || !s->run) {
      write_message(message, message_len, std::string(Session::kRun) + " step on a NULL session");
      return kInvalidArgument;
    }
    if (mode >= s->order) {
      write_message(message, message_len,
                    std::string(Session::kRun) + " step on mode " + std::to_string(mode) + " of a tensor of order " +
                        std::to_string(s->order));
      return kInvalidArgument;
    }
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess || current != s->device)
      SPT_CUDA_TRY(cudaSetDevice(s->device), "cudaSetDevice");
    return body(*s->run);
  });
}

inline std::string megabytes(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  return buf;
}

// kOk when lo <= order <= hi, else kUnsupported with "order N is outside
// the GPU <kernels> range lo..hi" (kernels: e.g. "HiCOO kernel's").
inline int check_order(uint32_t order, uint32_t lo, uint32_t hi, const char* kernels, char* message,
                       size_t message_len) {
  if (order >= lo && order <= hi) return kOk;
  write_message(message, message_len,
                "order " + std::to_string(order) + " is outside the GPU " + kernels + " range " + std::to_string(lo) +
                    ".." + std::to_string(hi));
  return kUnsupported;
}

// The rank of a device run (`entry` names the caller, `run` the
// decomposition in messages): kInvalidArgument for 0, kUnsupported above
// max_rank.
inline int check_rank(uint32_t rank, uint32_t max_rank, const char* entry, const char* run, char* message,
                      size_t message_len) {
  if (rank == 0) {
    write_message(message, message_len, std::string(entry) + ": rank must be at least 1");
    return kInvalidArgument;
  }
  if (rank > max_rank) {
    write_message(message, message_len,
                  "rank " + std::to_string(rank) + " is above the GPU " + run + "'s limit of " +
                      std::to_string(max_rank));
    return kUnsupported;
  }
  return kOk;
}

inline size_t dtype_bytes(int dtype) { return dtype == SPT_PLUGIN_FLOAT32 ? sizeof(float) : sizeof(double); }

inline size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Per-device one-time setup: keep freed pool memory cached (the default
// release threshold of 0 would hand it back at every synchronisation, making
// each MTTKRP's temporaries a fresh cudaMalloc), and read the SM count.
struct DeviceSetup {
  bool done = false;
  int multiprocessors = 1;
};
inline std::mutex setup_mutex;
inline std::vector<DeviceSetup> setups;

inline int device_setup(int device, DeviceSetup& out, char* message, size_t message_len) {
  std::lock_guard<std::mutex> lock(setup_mutex);
  if (static_cast<int>(setups.size()) <= device) setups.resize(device + 1);
  DeviceSetup& s = setups[device];
  if (!s.done) {
    SPT_CUDA_TRY(cudaDeviceGetAttribute(&s.multiprocessors, cudaDevAttrMultiProcessorCount, device),
                 "cudaDeviceGetAttribute");
    cudaMemPool_t pool = nullptr;
    SPT_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    uint64_t threshold = UINT64_MAX;
    SPT_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
                 "cudaMemPoolSetAttribute");
    s.done = true;
  }
  out = s;
  return kOk;
}

// Env SPT_CUDA_MEMORY_LIMIT: the most device memory (bytes; a plain
// decimal number) the plugin takes to be free at any check (tensor upload,
// sorted copies, CP-ALS working set), whatever the device reports. Unset,
// empty, 0 or unparsable = no limit. Makes the out-of-memory paths (CPU
// fallback under AUTO, the error under CUDA) testable, and keeps room on a
// device shared with other programs. Read at every check.
inline uint64_t memory_limit() {
  const char* env = std::getenv("SPT_CUDA_MEMORY_LIMIT");
  if (!env || !*env) return 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(env, &end, 10);
  return (end && *end == 0) ? v : 0;
}

// Free memory on the current device after trimming our cached pool memory
// (capped by SPT_CUDA_MEMORY_LIMIT).
inline size_t free_memory(int device) {
  cudaMemPool_t pool = nullptr;
  if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) cudaMemPoolTrimTo(pool, 0);
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  const uint64_t limit = memory_limit();
  if (limit > 0 && limit < free_bytes) free_bytes = static_cast<size_t>(limit);
  return free_bytes;
}

// kOk when `needed` bytes fit the free memory of `device` (the current
// device), else kOutOfMemory with "<what> need(s) X MB on CUDA device D
// <purpose>, Y MB are free" (`purpose` may be empty, else starts with a
// space: " for the factors").
inline int check_free_memory(int device, size_t needed, const std::string& what, const char* verb,
                             const char* purpose, char* message, size_t message_len) {
  const size_t available = free_memory(device);
  if (needed <= available) return kOk;
  write_message(message, message_len,
                what + " " + verb + " " + megabytes(needed) + " on CUDA device " + std::to_string(device) + purpose +
                    ", " + megabytes(available) + " are free");
  return kOutOfMemory;
}

// Checks out and the factors (m != mode) against the tensor's shape.
inline int check_mttkrp_shapes(uint32_t order, const uint32_t* dims, const spt_plugin_matrix* factors, uint32_t mode,
                        const spt_plugin_matrix& out, char* message, size_t message_len) {
  const uint64_t rank = out.cols;
  if (rank == 0 || rank > 0xffffffffull) {
    write_message(message, message_len, "rank out of range");
    return kInvalidArgument;
  }
  if (out.rows != dims[mode] || out.ld < rank) return kInvalidArgument;
  for (uint32_t m = 0; m < order; ++m) {
    if (m == mode) continue;
    if (!factors[m].data || factors[m].rows != dims[m] || factors[m].cols != rank || factors[m].ld < rank) {
      write_message(message, message_len, "factor " + std::to_string(m) + " has the wrong shape");
      return kInvalidArgument;
    }
  }
  return kOk;
}

// The block mttkrp_with_device_operands takes for an MTTKRP in `mode`: the
// factors (m != mode; offset[m], 256-byte aligned) then the output (at
// *out_offset). Returns the block's bytes; offset and out_offset may be
// NULL.
inline size_t mttkrp_operand_layout(uint32_t order, const uint32_t* dims, uint32_t mode, uint64_t rank,
                                    size_t value_size, std::vector<size_t>* offset, size_t* out_offset) {
  if (offset) offset->assign(order, 0);
  size_t bytes = 0;
  for (uint32_t m = 0; m < order; ++m) {
    if (m == mode) continue;
    if (offset) (*offset)[m] = bytes;
    bytes += align_up(size_t(dims[m]) * rank * value_size, 256);
  }
  if (out_offset) *out_offset = bytes;
  return bytes + size_t(dims[mode]) * rank * value_size;
}

// The part every MTTKRP entry shares: copy the factors (m != mode) into one
// temporary block from the stream's pool, zero the output after them, call
// launch(device_factors, device_out) (returns the launch's cudaError_t),
// copy the output back (overwriting out) and synchronise. The current
// device must be `device`; shapes checked by check_mttkrp_shapes.
template <typename T, typename Launch>
int mttkrp_with_device_operands(int device, uint32_t order, const uint32_t* dims, const spt_plugin_matrix* factors,
                                uint32_t mode, spt_plugin_matrix& out, cudaStream_t stream, Launch&& launch,
                                char* message, size_t message_len) {
  const uint64_t rank = out.cols;
  std::vector<size_t> offset;
  size_t out_offset = 0;
  const size_t bytes = mttkrp_operand_layout(order, dims, mode, rank, sizeof(T), &offset, &out_offset);
  void* block = nullptr;
  if (cudaError_t err = cudaMallocAsync(&block, bytes, stream); err != cudaSuccess) {
    cudaGetLastError();
    write_message(message, message_len,
                  "the factor matrices and output need " + megabytes(bytes) + " on CUDA device " +
                      std::to_string(device) + " (" + describe(err) + ")");
    return err == cudaErrorMemoryAllocation ? kOutOfMemory : kDevice;
  }
  char* base = static_cast<char*>(block);
  std::vector<const T*> device_factors(order, nullptr);
  T* device_out = reinterpret_cast<T*>(base + out_offset);
  cudaError_t err = cudaSuccess;
  const char* step = "";
  for (uint32_t m = 0; m < order && err == cudaSuccess; ++m) {
    if (m == mode) continue;
    T* dst = reinterpret_cast<T*>(base + offset[m]);
    device_factors[m] = dst;
    step = "copying a factor matrix to the device";
    err = cudaMemcpy2DAsync(dst, rank * sizeof(T), factors[m].data, factors[m].ld * sizeof(T), rank * sizeof(T),
                            factors[m].rows, cudaMemcpyHostToDevice, stream);
  }
  if (err == cudaSuccess) {
    step = "zeroing the output";
    err = cudaMemsetAsync(device_out, 0, size_t(dims[mode]) * rank * sizeof(T), stream);
  }
  if (err == cudaSuccess) {
    step = "launching the MTTKRP kernel";
    err = launch(static_cast<const T* const*>(device_factors.data()), device_out);
  }
  if (err == cudaSuccess) {
    step = "copying the output to the host";
    err = cudaMemcpy2DAsync(out.data, out.ld * sizeof(T), device_out, rank * sizeof(T), rank * sizeof(T), out.rows,
                            cudaMemcpyDeviceToHost, stream);
  }
  cudaFreeAsync(block, stream);
  const cudaError_t sync = cudaStreamSynchronize(stream);
  if (err == cudaSuccess && sync != cudaSuccess) {
    err = sync;
    step = "running the MTTKRP kernel";
  }
  if (err != cudaSuccess) return cuda_failure(err, step, message, message_len);
  return kOk;
}

// Frees a device copy (HiCOO, F-COO: one `block` on `device`); NULL ignored.
template <typename Copy>
void release_device_copy(Copy* x) {
  if (!x) return;
  if (cudaSetDevice(x->device) == cudaSuccess && x->block) cudaFree(x->block);
  cudaGetLastError();  // at process exit the runtime may be gone already
  delete x;
}

// Frees a copy's block when its upload fails (the copy is still owned here).
template <typename Copy>
struct BlockGuard {
  std::unique_ptr<Copy>& copy;
  ~BlockGuard() {
    if (copy && copy->block) cudaFree(copy->block);
  }
};

// The MTTKRP of a tensor already copied to the device (HiCOO, HB-CSF: any
// copy with device, dims and ref.order): shape checks, device setup, and
// the factors and output moved around launch(device_factors, device_out,
// rank, multiprocessors, stream).
template <typename T, typename Copy, typename Launch>
int mttkrp_on_device_copy(const Copy& x, const spt_plugin_matrix* factors, uint32_t mode, spt_plugin_matrix& out,
                          char* message, size_t message_len, Launch&& launch) {
  if (int status = check_mttkrp_shapes(x.ref.order, x.dims.data(), factors, mode, out, message, message_len);
      status != kOk)
    return status;
  SPT_CUDA_TRY(cudaSetDevice(x.device), "cudaSetDevice");
  DeviceSetup setup;
  if (int status = device_setup(x.device, setup, message, message_len); status != kOk) return status;
  const uint32_t rank = static_cast<uint32_t>(out.cols);
  cudaStream_t stream = cudaStreamPerThread;
  return mttkrp_with_device_operands<T>(
      x.device, x.ref.order, x.dims.data(), factors, mode, out, stream,
      [&](const T* const* device_factors, T* device_out) {
        return launch(device_factors, device_out, rank, setup.multiprocessors, stream);
      },
      message, message_len);
}

// The end of a product entry that computed rows x width values at
// device_out (ld = width) inside the call's temporary `block`: unless a
// step failed already (err, step), copy them to out when copy_out, free
// the block, synchronise, and map a failure to a status with the step's
// name (`running` names the kernel for an asynchronous failure).
template <typename T>
int finish_product(cudaError_t err, const char* step, bool copy_out, spt_plugin_matrix& out, const T* device_out,
                   uint64_t width, void* block, cudaStream_t stream, const char* running, char* message,
                   size_t message_len) {
  if (err == cudaSuccess && copy_out) {
    step = "copying the output to the host";
    err = cudaMemcpy2DAsync(out.data, out.ld * sizeof(T), device_out, width * sizeof(T), width * sizeof(T), out.rows,
                            cudaMemcpyDeviceToHost, stream);
  }
  cudaFreeAsync(block, stream);
  const cudaError_t sync = cudaStreamSynchronize(stream);
  if (err == cudaSuccess && sync != cudaSuccess) {
    err = sync;
    step = running;
  }
  if (err != cudaSuccess) return cuda_failure(err, step, message, message_len);
  return kOk;
}

}  // namespace spt_plugin
