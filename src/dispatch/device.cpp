#include "dispatch/device.hpp"

#include <memory>
#include <mutex>
#include <vector>

#include "core/error.hpp"
#include "dispatch/plugin_loader.hpp"

namespace spt::dispatch {

namespace {

using DeviceCoo = std::shared_ptr<spt_plugin_device_coo>;

// What spt_coo_s::device_cache holds: the device copies of one tensor (one
// per device ordinal) and the host state they were made from. A copy is
// reused only while the tensor still has that state; touched() drops the
// whole cache, and the fingerprint catches changes that do not call it
// (resize, refresh after a reallocation, struct copies).
struct DeviceCooCache {
  spt_nnz nnz = 0;
  spt_dtype dtype = SPT_FLOAT64;
  std::vector<spt_index> dims;
  std::vector<const spt_index*> ind;
  const void* val = nullptr;
  std::vector<DeviceCoo> per_device;

  bool matches(const spt_coo_s& x) const {
    return nnz == x.nnz && dtype == x.dtype() && dims == x.dims && ind == x.ind && val == x.val;
  }
};

// Guards every spt_coo_s::device_cache: read-only kernels on one tensor may
// run concurrently from several threads (each with its own context).
std::mutex cache_mutex;

spt_plugin_coo plugin_view(const spt_coo_s& x) {
  spt_plugin_coo v{};
  v.order = x.order();
  v.dtype = x.dtype() == SPT_FLOAT32 ? SPT_PLUGIN_FLOAT32 : SPT_PLUGIN_FLOAT64;
  v.nnz = x.nnz;
  v.dims = x.dims.data();
  v.ind = x.ind.data();
  v.values = x.val;
  return v;
}

// Upload x to `device`; on failure returns the plugin's status and message.
int upload(const CudaPlugin& cuda, int device, const spt_coo_s& x, DeviceCoo& out, std::string& message) {
  const spt_plugin_coo view = plugin_view(x);
  spt_plugin_device_coo* raw = nullptr;
  char buffer[512] = {0};
  const int status = cuda.table->coo_upload(device, &view, &raw, buffer, sizeof buffer);
  if (status != SPT_OK) {
    message = buffer;
    return status;
  }
  const spt_plugin_table* table = cuda.table;
  out = DeviceCoo(raw, [table](spt_plugin_device_coo* p) { table->coo_release(p); });
  return SPT_OK;
}

// The device copy of x on `device`, from x's cache or freshly uploaded (and
// then cached). Views are cached too: their caller promises to keep the
// arrays unchanged until spt_coo_free (sptensor.h).
int device_copy(const CudaPlugin& cuda, int device, const spt_coo_s& x, DeviceCoo& out, std::string& message) {
  std::lock_guard<std::mutex> lock(cache_mutex);
  auto cache = std::static_pointer_cast<DeviceCooCache>(x.device_cache);
  if (cache && !cache->matches(x)) cache.reset();
  if (cache && device < static_cast<int>(cache->per_device.size()) && cache->per_device[device]) {
    out = cache->per_device[device];
    return SPT_OK;
  }
  const int status = upload(cuda, device, x, out, message);
  if (status != SPT_OK) return status;
  if (!cache) {
    cache = std::make_shared<DeviceCooCache>();
    cache->nnz = x.nnz;
    cache->dtype = x.dtype();
    cache->dims = x.dims;
    cache->ind = x.ind;
    cache->val = x.val;
  }
  if (static_cast<int>(cache->per_device.size()) <= device) cache->per_device.resize(device + 1);
  cache->per_device[device] = out;
  x.device_cache = cache;
  return SPT_OK;
}

// After a plugin failure: with CUDA forced, an error; with AUTO, a note in
// the log and false (the caller runs the CPU kernel).
bool device_failed(const spt_context_s& ctx, const char* kernel, int status, const std::string& message) {
  if (ctx.backend == SPT_BACKEND_CUDA)
    fail(SPT_ERR_DEVICE, "CUDA ", kernel, " failed",
         status == SPT_ERR_OUT_OF_MEMORY ? " (device out of memory)" : "", ": ", message,
         status == SPT_ERR_OUT_OF_MEMORY ? "; use backend AUTO or CPU, or a smaller problem" : "");
  log(ctx, 1,
      cat("note: ", kernel, " runs on the CPU: ",
          status == SPT_ERR_OUT_OF_MEMORY ? "the CUDA device is out of memory" : "the CUDA device failed", " (",
          message, ")"));
  return false;
}

template <typename T>
bool mttkrp_on_device(const spt_context_s& ctx, const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode,
                      MatRef<T> out) {
  // Order 1 has no factor to gather: the CPU kernel is the right tool.
  if (x.order() < 2) return false;
  const CudaPlugin& cuda = cuda_plugin();
  if (!cuda.usable())
    return device_failed(ctx, "MTTKRP", SPT_ERR_DEVICE, cuda.reason);  // unreachable unless forced wrongly
  if (x.nnz == 0) {
    for (spt_nnz i = 0; i < out.rows; ++i)
      for (spt_nnz j = 0; j < out.cols; ++j) out(i, j) = T(0);
    return true;
  }
  std::string message;
  DeviceCoo device_x;
  int status = device_copy(cuda, ctx.device, x, device_x, message);
  if (status == SPT_ERR_UNSUPPORTED) {
    // No GPU kernel for this input (e.g. order above the plugin's limit):
    // like any kernel without a device version, it runs on the CPU.
    log(ctx, 2, cat("note: MTTKRP runs on the CPU: ", message));
    return false;
  }
  if (status != SPT_OK) return device_failed(ctx, "MTTKRP", status, message);
  std::vector<spt_plugin_matrix> f(x.order());
  for (uint32_t m = 0; m < x.order(); ++m) {
    if (m == mode) continue;
    f[m] = {const_cast<T*>(factors[m].data), factors[m].rows, factors[m].cols, factors[m].ld};
  }
  spt_plugin_matrix o{out.data, out.rows, out.cols, out.ld};
  char buffer[512] = {0};
  status = cuda.table->mttkrp(device_x.get(), f.data(), mode, &o, buffer, sizeof buffer);
  if (status != SPT_OK) return device_failed(ctx, "MTTKRP", status, buffer);
  return true;
}

}  // namespace

bool DeviceKernels::mttkrp(const spt_context_s& ctx, const spt_coo_s& x, const ConstMatRef<float>* factors,
                           uint32_t mode, MatRef<float> out) {
  return mttkrp_on_device(ctx, x, factors, mode, out);
}

bool DeviceKernels::mttkrp(const spt_context_s& ctx, const spt_coo_s& x, const ConstMatRef<double>* factors,
                           uint32_t mode, MatRef<double> out) {
  return mttkrp_on_device(ctx, x, factors, mode, out);
}

}  // namespace spt::dispatch
