// Internal helpers shared by the dispatcher's device files
// (src/dispatch/device*.cpp): the per-tensor device-copy cache and the
// failure policy (error under a forced CUDA backend, CPU fallback with a
// note under AUTO).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/error.hpp"
#include "core/fcoo.hpp"
#include "core/hbcsf.hpp"
#include "core/ktensor.hpp"
#include "core/matrix.hpp"
#include "dispatch/cp_als_steps.hpp"
#include "dispatch/plugin_loader.hpp"

namespace spt::dispatch::detail {

// Guards every device_cache: read-only kernels on one tensor may run
// concurrently from several threads (each with its own context).
std::mutex& device_cache_mutex();

// After a plugin failure: with CUDA forced, an error (SPT_ERR_DEVICE with
// the plugin's message); with AUTO, a note in the log and false (the caller
// runs the CPU kernel).
bool device_failed(const spt_context_s& ctx, const char* kernel, int status, const std::string& message);

// A whole decomposition (`algorithm`: "CP-ALS", "Tucker-HOOI") the GPU
// cannot run (format, order, sizes): with CUDA forced an UNSUPPORTED error,
// under AUTO a note and false (the CPU loop runs).
bool whole_run_unsupported(const spt_context_s& ctx, const char* algorithm, const std::string& why);

// A device failure before or during a whole decomposition: with CUDA
// forced an error (OUT_OF_MEMORY with `memory_hint` for memory, else
// DEVICE), under AUTO a note and false (the CPU loop runs).
bool whole_run_device_failed(const spt_context_s& ctx, const char* algorithm, int status, const std::string& message,
                             const char* memory_hint);

// The end of an upload through the plugin: with status OK, *out owns raw
// (freed by `release`, the table's release entry, with the last reference);
// otherwise `message` takes the plugin's message. Returns status.
template <typename Copy>
int own_upload(int status, Copy* raw, void (*release)(Copy*), const char* plugin_message, std::shared_ptr<Copy>& out,
               std::string& message) {
  if (status != SPT_OK) {
    message = plugin_message;
    return status;
  }
  out = std::shared_ptr<Copy>(raw, release);
  return SPT_OK;
}

// Copy the F-COO x to `device` through the plugin's fcoo_upload, not
// cached (device.cpp caches per handle; the GPU Tucker-HOOI holds its
// per-mode copies for one decomposition); *out owns the copy. Returns the
// plugin's status with `message` set on failure.
int upload_fcoo_copy(const CudaPlugin& cuda, int device, const spt_fcoo_s& x,
                     std::shared_ptr<spt_plugin_device_fcoo>& out, std::string& message);

// Copy the B-CSF / HB-CSF h to `device` through the plugin's hbcsf_upload,
// not cached (device.cpp caches per handle; the GPU Tucker-HOOI's chained
// TTMc holds its per-mode copies for one decomposition); *out owns the
// copy. Returns the plugin's status with `message` set on failure.
int upload_hbcsf_copy(const CudaPlugin& cuda, int device, const spt_hbcsf_s& h,
                      std::shared_ptr<spt_plugin_device_hbcsf>& out, std::string& message);

// The device copies a CP-ALS of x reads on one device (formats AUTO and
// COO): the COO copy (cached on x) and, under AUTO, per mode the F-COO copy
// when the GPU format model picks F-COO (or HB-CSF) for that mode (null
// for the modes on COO; a copy that fails leaves its mode on COO, with a
// note).
struct CpAlsDeviceCopies {
  std::shared_ptr<spt_plugin_device_coo> coo;
  std::vector<std::shared_ptr<spt_plugin_device_fcoo>> fcoo;  // per mode
};

// Makes `out` for x on `device` (device.cpp). Returns the plugin's status of
// the COO copy (`message` set on failure).
int cp_als_device_copies(const spt_context_s& ctx, const CudaPlugin& cuda, int device, const spt_coo_s& x,
                         const spt_cpd_options& opts, CpAlsDeviceCopies& out, std::string& message);

// The plugin's view of the host COO x (x's arrays, not copied).
spt_plugin_coo plugin_view(const spt_coo_s& x);

// Plugin views of an MTTKRP's host factors in `mode` (factors[mode] is not
// read: its entry stays empty).
template <typename T>
std::vector<spt_plugin_matrix> plugin_mttkrp_factor_views(const ConstMatRef<T>* factors, uint32_t order,
                                                          uint32_t mode) {
  std::vector<spt_plugin_matrix> f(order);
  for (uint32_t m = 0; m < order; ++m)
    if (m != mode) f[m] = {const_cast<T*>(factors[m].data), factors[m].rows, factors[m].cols, factors[m].ld};
  return f;
}

// What the device steps (CP-ALS on one or several devices, CP-APR) share
// around their session calls: the message buffer each call fills, and
// check(), which turns a failed call into a DeviceStepFailure.
class PluginStepCalls {
 protected:
  void check(int status) const {
    if (status != SPT_OK) throw DeviceStepFailure(status, buffer_);
  }
  mutable char buffer_[1024] = {0};
};

// k's factors as plugin matrices over their host storage (T = k's type),
// for a session's set/get-factors entries.
template <typename T>
std::vector<spt_plugin_matrix> plugin_factor_views(spt_ktensor_s& k) {
  std::vector<spt_plugin_matrix> factors(k.order());
  for (uint32_t m = 0; m < k.order(); ++m) {
    MatRef<T> f = k.template factor<T>(m);
    factors[m] = {f.data, f.rows, f.cols, f.ld};
  }
  return factors;
}

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
