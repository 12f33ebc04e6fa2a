// Internal helpers shared by the dispatcher's device files
// (src/dispatch/device*.cpp): the per-tensor device-copy cache and the
// failure policy (error under a forced CUDA backend, CPU fallback with a
// note under AUTO).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "core/context.hpp"
#include "core/error.hpp"

namespace spt::dispatch::detail {

// Guards every device_cache: read-only kernels on one tensor may run
// concurrently from several threads (each with its own context).
std::mutex& device_cache_mutex();

// After a plugin failure: with CUDA forced, an error (SPT_ERR_DEVICE with
// the plugin's message); with AUTO, a note in the log and false (the caller
// runs the CPU kernel).
bool device_failed(const spt_context_s& ctx, const char* kernel, int status, const std::string& message);

// The device copy of x on `device`, from x's cache (type Cache) or made by
// upload(out, message) (a plugin status) and then cached. Views are cached
// too: their caller promises to keep the arrays unchanged until freed
// (sptensor.h).
template <typename Cache, typename Tensor, typename Handle, typename Upload>
int cached_device_copy(const Tensor& x, int device, Handle& out, std::string& message, Upload&& upload) {
  std::lock_guard<std::mutex> lock(device_cache_mutex());
  auto cache = std::static_pointer_cast<Cache>(x.device_cache);
  if (cache && !cache->matches(x)) cache.reset();
  if (cache && device < static_cast<int>(cache->per_device.size()) && cache->per_device[device]) {
    out = cache->per_device[device];
    return SPT_OK;
  }
  const int status = upload(out, message);
  if (status != SPT_OK) return status;
  if (!cache) cache = std::make_shared<Cache>(x);
  if (static_cast<int>(cache->per_device.size()) <= device) cache->per_device.resize(device + 1);
  cache->per_device[device] = out;
  x.device_cache = cache;
  return SPT_OK;
}

}  // namespace spt::dispatch::detail
