#include "dispatch/device.hpp"

#include <algorithm>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "core/scoo.hpp"
#include "dispatch/cp_als_steps.hpp"
#include "dispatch/device_common.hpp"
#include "dispatch/device_streamed.hpp"
#include "dispatch/gpu_format.hpp"
#include "dispatch/multi_device.hpp"
#include "dispatch/plugin_hbcsf.hpp"
#include "dispatch/plugin_loader.hpp"

namespace spt::dispatch {

namespace detail {

std::mutex& device_cache_mutex() {
  static std::mutex m;
  return m;
}

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

bool whole_run_unsupported(const spt_context_s& ctx, const char* algorithm, const std::string& why) {
  if (ctx.backend == SPT_BACKEND_CUDA)
    fail(SPT_ERR_UNSUPPORTED, algorithm, " on the CUDA backend: ", why, "; use backend AUTO or CPU to run it on the CPU");
  log(ctx, 1, cat("note: ", algorithm, " runs on the CPU: ", why));
  return false;
}

bool whole_run_device_failed(const spt_context_s& ctx, const char* algorithm, int status, const std::string& message,
                             const char* memory_hint) {
  const bool memory = status == SPT_ERR_OUT_OF_MEMORY;
  if (ctx.backend == SPT_BACKEND_CUDA) {
    if (memory)
      fail(SPT_ERR_OUT_OF_MEMORY, "CUDA ", algorithm, ": the device is out of memory: ", message,
           "; use backend AUTO (falls back to the CPU) or CPU, or ", memory_hint);
    fail(SPT_ERR_DEVICE, "CUDA ", algorithm, " failed: ", message);
  }
  log(ctx, 1,
      cat("note: ", algorithm, " runs on the CPU: ",
          memory ? "the CUDA device is out of memory" : "the CUDA device failed", " (", message, ")"));
  return false;
}

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

int upload_fcoo_copy(const CudaPlugin& cuda, int device, const spt_fcoo_s& x,
                     std::shared_ptr<spt_plugin_device_fcoo>& out, std::string& message) {
  std::vector<const uint32_t*> ind;
  for (const auto& a : x.product_ind) ind.push_back(a.data());
  spt_plugin_fcoo view{};
  view.order = x.order();
  view.dtype = x.dtype() == SPT_FLOAT32 ? SPT_PLUGIN_FLOAT32 : SPT_PLUGIN_FLOAT64;
  view.nnz = x.nnz;
  view.segments = x.segments;
  view.threadlen = x.threadlen;
  view.num_product_modes = static_cast<uint32_t>(x.product_modes.size());
  view.dims = x.dims.data();
  view.product_modes = x.product_modes.data();
  view.product_ind = ind.data();
  view.values = x.val.data();
  view.bf = x.bf.data();
  view.sf = x.sf.data();
  view.group_first_segment = x.group_first_segment.data();
  const bool rows_per_segment = x.op == SPT_FCOO_MTTKRP;
  view.segment_rows = rows_per_segment ? x.segment_ind[0].data() : nullptr;
  view.output_rows = rows_per_segment ? x.dims[x.mode] : x.segments;
  view.mttkrp_mode = rows_per_segment ? static_cast<int32_t>(x.mode) : -1;
  spt_plugin_device_fcoo* raw = nullptr;
  char buffer[512] = {0};
  const int status = cuda.table->fcoo_upload(device, &view, &raw, buffer, sizeof buffer);
  return detail::own_upload(status, raw, cuda.table->fcoo_release, buffer, out, message);
}

int upload_hbcsf_copy(const CudaPlugin& cuda, int device, const spt_hbcsf_s& h,
                      std::shared_ptr<spt_plugin_device_hbcsf>& out, std::string& message) {
  const PluginHbcsf v = plugin_view_of(h);
  spt_plugin_device_hbcsf* raw = nullptr;
  char buffer[512] = {0};
  const int status = cuda.table->hbcsf_upload(device, &v.view, &raw, buffer, sizeof buffer);
  return detail::own_upload(status, raw, cuda.table->hbcsf_release, buffer, out, message);
}

}  // namespace detail

namespace {

using detail::cached_device_copy;
using detail::device_failed;

using DeviceCoo = std::shared_ptr<spt_plugin_device_coo>;
using DeviceHicoo = std::shared_ptr<spt_plugin_device_hicoo>;
using DeviceFcoo = std::shared_ptr<spt_plugin_device_fcoo>;
using DeviceHbcsf = std::shared_ptr<spt_plugin_device_hbcsf>;

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

  // The GPU format model's choice per mode (dispatch/gpu_format.hpp) for
  // output rows of `row_bytes` (empty until the first device MTTKRP; made
  // again when the row width changes) and, for the F-COO modes, the F-COO
  // built on first use (its own device_cache holds its device copies). The
  // slice counts behind the choice do not depend on the rank: kept.
  std::vector<spt_nnz> slices;
  uint64_t row_bytes = 0;
  std::vector<GpuMttkrpChoice> choices;
  std::vector<std::shared_ptr<spt_fcoo_s>> fcoo;
  std::vector<std::shared_ptr<spt_hbcsf_s>> hbcsf;  // rooted at the mode, for the HB-CSF modes

  explicit DeviceCooCache(const spt_coo_s& x) : nnz(x.nnz), dtype(x.dtype()), dims(x.dims), ind(x.ind), val(x.val) {}
  bool matches(const spt_coo_s& x) const {
    return nnz == x.nnz && dtype == x.dtype() && dims == x.dims && ind == x.ind && val == x.val;
  }
};

// What spt_hicoo_s::device_cache holds, likewise. A HiCOO handle is not
// changed in place, but a struct copy (or a moved-from and refilled handle)
// carries the shared pointer along: the fingerprint keeps such a copy from
// serving another tensor's arrays.
struct DeviceHicooCache {
  spt_nnz nnz = 0;
  spt_dtype dtype = SPT_FLOAT64;
  uint32_t block_bits = 0;
  std::vector<spt_index> dims;
  const void* bptr = nullptr;
  std::vector<const void*> arrays;  // binds and einds per mode
  const void* val = nullptr;
  std::vector<DeviceHicoo> per_device;

  static std::vector<const void*> arrays_of(const spt_hicoo_s& x) {
    std::vector<const void*> a;
    for (const auto& b : x.binds) a.push_back(b.data());
    for (const auto& e : x.einds) a.push_back(e.data());
    return a;
  }
  explicit DeviceHicooCache(const spt_hicoo_s& x)
      : nnz(x.nnz), dtype(x.dtype()), block_bits(x.block_bits), dims(x.dims), bptr(x.bptr.data()),
        arrays(arrays_of(x)), val(x.val.data()) {}
  bool matches(const spt_hicoo_s& x) const {
    return nnz == x.nnz && dtype == x.dtype() && block_bits == x.block_bits && dims == x.dims &&
           bptr == x.bptr.data() && val == x.val.data() && arrays == arrays_of(x);
  }
};

// What spt_fcoo_s::device_cache holds (an F-COO handle is immutable; the
// fingerprint guards against struct copies, as for HiCOO).
struct DeviceFcooCache {
  spt_nnz nnz = 0;
  const void* val = nullptr;
  const void* bf = nullptr;
  std::vector<DeviceFcoo> per_device;

  explicit DeviceFcooCache(const spt_fcoo_s& x) : nnz(x.nnz), val(x.val.data()), bf(x.bf.data()) {}
  bool matches(const spt_fcoo_s& x) const { return nnz == x.nnz && val == x.val.data() && bf == x.bf.data(); }
};

// What spt_hbcsf_s::device_cache holds (a handle is immutable; the
// fingerprint keeps a struct copy from serving another tensor's arrays, as
// for HiCOO).
struct DeviceHbcsfCache {
  spt_nnz nnz = 0;
  spt_dtype dtype = SPT_FLOAT64;
  std::vector<spt_index> dims;
  std::vector<uint32_t> mode_order;
  std::vector<const void*> arrays;
  std::vector<DeviceHbcsf> per_device;

  static std::vector<const void*> arrays_of(const spt_hbcsf_s& h) {
    return {h.coo_val.data(), h.csl_val.data(), h.bcsf_val.data(), h.csl_slice_ptr.data(), h.segment_ptr.data(),
            h.leaf_ind.data(), h.unit_row.data(), h.unit_segment_ptr.data(),
            h.coo_ind.empty() ? nullptr : h.coo_ind[0].data(), h.node_ind.empty() ? nullptr : h.node_ind[0].data()};
  }
  explicit DeviceHbcsfCache(const spt_hbcsf_s& h)
      : nnz(h.nnz), dtype(h.dtype()), dims(h.dims), mode_order(h.mode_order), arrays(arrays_of(h)) {}
  bool matches(const spt_hbcsf_s& h) const {
    return nnz == h.nnz && dtype == h.dtype() && dims == h.dims && mode_order == h.mode_order &&
           arrays == arrays_of(h);
  }
};

int device_copy(const CudaPlugin& cuda, int device, const spt_coo_s& x, DeviceCoo& out, std::string& message) {
  return cached_device_copy<DeviceCooCache>(x, device, out, message, [&](DeviceCoo& copy, std::string& why) -> int {
    const spt_plugin_coo view = detail::plugin_view(x);
    spt_plugin_device_coo* raw = nullptr;
    char buffer[512] = {0};
    const int status = cuda.table->coo_upload(device, &view, &raw, buffer, sizeof buffer);
    return detail::own_upload(status, raw, cuda.table->coo_release, buffer, copy, why);
  });
}

int device_copy(const CudaPlugin& cuda, int device, const spt_hicoo_s& x, DeviceHicoo& out, std::string& message) {
  return cached_device_copy<DeviceHicooCache>(x, device, out, message, [&](DeviceHicoo& copy, std::string& why) -> int {
    std::vector<const uint32_t*> binds(x.order());
    std::vector<const uint8_t*> einds(x.order());
    for (uint32_t m = 0; m < x.order(); ++m) {
      binds[m] = x.binds[m].data();
      einds[m] = x.einds[m].data();
    }
    spt_plugin_hicoo view{};
    view.order = x.order();
    view.dtype = x.dtype() == SPT_FLOAT32 ? SPT_PLUGIN_FLOAT32 : SPT_PLUGIN_FLOAT64;
    view.nnz = x.nnz;
    view.num_blocks = x.num_blocks();
    view.block_bits = x.block_bits;
    view.window_reuse = x.gpu_window_reuse;
    view.dims = x.dims.data();
    view.bptr = x.bptr.data();
    view.binds = binds.data();
    view.einds = einds.data();
    view.values = x.val.data();
    spt_plugin_device_hicoo* raw = nullptr;
    char buffer[512] = {0};
    const int status = cuda.table->hicoo_upload(device, &view, &raw, buffer, sizeof buffer);
    return detail::own_upload(status, raw, cuda.table->hicoo_release, buffer, copy, why);
  });
}

int device_copy(const CudaPlugin& cuda, int device, const spt_fcoo_s& x, DeviceFcoo& out, std::string& message) {
  return cached_device_copy<DeviceFcooCache>(x, device, out, message, [&](DeviceFcoo& copy, std::string& why) -> int {
    return detail::upload_fcoo_copy(cuda, device, x, copy, why);
  });
}

int device_copy(const CudaPlugin& cuda, int device, const spt_hbcsf_s& h, DeviceHbcsf& out, std::string& message) {
  return cached_device_copy<DeviceHbcsfCache>(h, device, out, message, [&](DeviceHbcsf& copy, std::string& why) -> int {
    return detail::upload_hbcsf_copy(cuda, device, h, copy, why);
  });
}

void call_plugin_mttkrp(const CudaPlugin& cuda, const DeviceCoo& x, const spt_plugin_matrix* f, uint32_t mode,
                        spt_plugin_matrix* out, int& status, char* buffer, size_t len) {
  status = cuda.table->mttkrp(x.get(), f, mode, out, buffer, len);
}

void call_plugin_mttkrp(const CudaPlugin& cuda, const DeviceHicoo& x, const spt_plugin_matrix* f, uint32_t mode,
                        spt_plugin_matrix* out, int& status, char* buffer, size_t len) {
  status = cuda.table->mttkrp_hicoo(x.get(), f, mode, out, buffer, len);
}

void call_plugin_mttkrp(const CudaPlugin& cuda, const DeviceHbcsf& x, const spt_plugin_matrix* f, uint32_t mode,
                        spt_plugin_matrix* out, int& status, char* buffer, size_t len) {
  status = cuda.table->mttkrp_hbcsf(x.get(), f, mode, out, buffer, len);
}

// One MTTKRP on the device for a COO, HiCOO or HB-CSF tensor (Handle = its device
// copy type): the tensor's cached copy, the host factors and output passed
// through the plugin. With `too_big`, a copy that does not fit the device
// sets it and returns false without the failure policy (the caller streams).
template <typename Handle, typename T, typename Tensor>
bool mttkrp_on_device(const spt_context_s& ctx, const char* kernel, const Tensor& x, const ConstMatRef<T>* factors,
                      uint32_t mode, MatRef<T> out, bool* too_big = nullptr) {
  // Order 1 has no factor to gather: the CPU kernel is the right tool.
  if (x.order() < 2) return false;
  const CudaPlugin& cuda = cuda_plugin();
  if (!cuda.usable())
    return device_failed(ctx, kernel, SPT_ERR_DEVICE, cuda.reason);  // unreachable unless forced wrongly
  if (x.nnz == 0) {
    for (spt_nnz i = 0; i < out.rows; ++i)
      for (spt_nnz j = 0; j < out.cols; ++j) out(i, j) = T(0);
    return true;
  }
  std::string message;
  Handle device_x;
  int status = device_copy(cuda, ctx.device, x, device_x, message);
  if (status == SPT_ERR_UNSUPPORTED) {
    // No GPU kernel for this input (e.g. order above the plugin's limit):
    // like any kernel without a device version, it runs on the CPU.
    log(ctx, 2, cat("note: ", kernel, " runs on the CPU: ", message));
    return false;
  }
  if (status == SPT_ERR_OUT_OF_MEMORY && too_big) {
    *too_big = true;
    return false;
  }
  if (status != SPT_OK) return device_failed(ctx, kernel, status, message);
  std::vector<spt_plugin_matrix> f = detail::plugin_mttkrp_factor_views(factors, x.order(), mode);
  spt_plugin_matrix o{out.data, out.rows, out.cols, out.ld};
  char buffer[512] = {0};
  call_plugin_mttkrp(cuda, device_x, f.data(), mode, &o, status, buffer, sizeof buffer);
  if (status != SPT_OK) return device_failed(ctx, kernel, status, buffer);
  return true;
}

// One F-COO product on the device: factors[j] for the product modes in
// order, out shaped as the plugin's output (dims[mode] or segments rows).
// `too_big` as for mttkrp_on_device.
template <typename T>
bool fcoo_on_device(const spt_context_s& ctx, const char* kernel, const spt_fcoo_s& x, int kind,
                    const std::vector<ConstMatRef<T>>& factors, MatRef<T> out, bool* too_big = nullptr) {
  const CudaPlugin& cuda = cuda_plugin();
  if (!cuda.usable()) return device_failed(ctx, kernel, SPT_ERR_DEVICE, cuda.reason);
  if (x.nnz == 0) {
    for (spt_nnz i = 0; i < out.rows; ++i)
      for (spt_nnz j = 0; j < out.cols; ++j) out(i, j) = T(0);
    return true;
  }
  std::string message;
  DeviceFcoo device_x;
  int status = device_copy(cuda, ctx.device, x, device_x, message);
  if (status == SPT_ERR_UNSUPPORTED) {
    log(ctx, 2, cat("note: ", kernel, " runs on the CPU: ", message));
    return false;
  }
  if (status == SPT_ERR_OUT_OF_MEMORY && too_big) {
    *too_big = true;
    return false;
  }
  if (status != SPT_OK) return device_failed(ctx, kernel, status, message);
  std::vector<spt_plugin_matrix> f;
  for (const auto& m : factors) f.push_back({const_cast<T*>(m.data), m.rows, m.cols, m.ld});
  spt_plugin_matrix o{out.data, out.rows, out.cols, out.ld};
  char buffer[512] = {0};
  status = cuda.table->fcoo_multiply(device_x.get(), kind, f.data(), &o, buffer, sizeof buffer);
  if (status == SPT_ERR_UNSUPPORTED) {
    log(ctx, 2, cat("note: ", kernel, " runs on the CPU: ", buffer));
    return false;
  }
  if (status != SPT_OK) return device_failed(ctx, kernel, status, buffer);
  return true;
}


// x's device cache (made here when missing or stale) with the GPU format
// model's choice per mode for rows of `rank` columns (made on the first
// device MTTKRP and again when the row width changes). The caller holds the
// device-cache mutex.
std::shared_ptr<DeviceCooCache> cache_with_choices(const spt_context_s& ctx, const spt_coo_s& x, spt_index rank) {
  auto cache = std::static_pointer_cast<DeviceCooCache>(x.device_cache);
  if (cache && !cache->matches(x)) cache.reset();
  if (!cache) {
    cache = std::make_shared<DeviceCooCache>(x);
    x.device_cache = cache;
  }
  const uint64_t row_bytes = uint64_t(rank) * dtype_size(x.dtype());
  if (cache->choices.empty() || cache->row_bytes != row_bytes) {
    const CudaPlugin& cuda = cuda_plugin();
    const int sms = ctx.device < static_cast<int>(cuda.devices.size()) ? cuda.devices[ctx.device].multiprocessors : 0;
    if (cache->slices.empty()) cache->slices = distinct_indices_per_mode(x, thread_count(ctx));
    cache->choices = gpu_mttkrp_choices(x, cache->slices, row_bytes, sms);
    cache->row_bytes = row_bytes;
    cache->fcoo.resize(x.order());
    cache->hbcsf.resize(x.order());
    std::string choice;
    for (uint32_t m = 0; m < x.order(); ++m) {
      const GpuMttkrpChoice& c = cache->choices[m];
      choice += cat(m ? ", " : "", "mode ", m, " ", gpu_mttkrp_format_name(c.format));
      if (c.format == GpuMttkrpFormat::fcoo) choice += cat(" (threadlen ", c.fcoo_threadlen, ")");
      // An F-COO cut for another threadlen is built again.
      if (cache->fcoo[m] && cache->fcoo[m]->threadlen != c.fcoo_threadlen) cache->fcoo[m].reset();
    }
    log(ctx, 2, cat("GPU MTTKRP format per mode: ", choice));
  }
  return cache;
}

// The F-COO of x for `mode` when the GPU format model picks F-COO for that
// mode, or HB-CSF and `hbcsf_modes_too` (the CP-ALS sweep, which has no
// HB-CSF path), else nullptr. Built on first use and kept in x's device
// cache, so a CP-ALS or a sequence of spt_mttkrp calls converts once.
std::shared_ptr<const spt_fcoo_s> chosen_fcoo(const spt_context_s& ctx, const spt_coo_s& x, uint32_t mode,
                                              spt_index rank, bool hbcsf_modes_too = false) {
  if (x.redrawn || x.order() < 2 || x.order() > 8 || x.nnz >= (spt_nnz(1) << 32)) return nullptr;
  std::lock_guard<std::mutex> lock(detail::device_cache_mutex());
  const std::shared_ptr<DeviceCooCache> cache = cache_with_choices(ctx, x, rank);
  const GpuMttkrpChoice& chosen = cache->choices[mode];
  const bool wanted = chosen.format == GpuMttkrpFormat::fcoo || (hbcsf_modes_too && chosen.format == GpuMttkrpFormat::hbcsf);
  if (!wanted) return nullptr;
  if (!cache->fcoo[mode])
    cache->fcoo[mode] = std::make_shared<spt_fcoo_s>(
        fcoo::from_coo(x, SPT_FCOO_MTTKRP, mode, chosen.fcoo_threadlen, thread_count(ctx)));
  return cache->fcoo[mode];
}

// The HB-CSF of x rooted at `mode` when the GPU format model picks HB-CSF
// for that mode (orders 3-8), else nullptr; cached as chosen_fcoo's.
std::shared_ptr<const spt_hbcsf_s> chosen_hbcsf(const spt_context_s& ctx, const spt_coo_s& x, uint32_t mode,
                                                spt_index rank) {
  if (x.redrawn || x.order() < 3 || x.order() > 8 || x.nnz >= (spt_nnz(1) << 32)) return nullptr;
  std::lock_guard<std::mutex> lock(detail::device_cache_mutex());
  const std::shared_ptr<DeviceCooCache> cache = cache_with_choices(ctx, x, rank);
  if (cache->choices[mode].format != GpuMttkrpFormat::hbcsf) return nullptr;
  if (!cache->hbcsf[mode])
    cache->hbcsf[mode] = std::make_shared<spt_hbcsf_s>(hbcsf::from_coo(x, mode, hbcsf::Params{}, thread_count(ctx)));
  return cache->hbcsf[mode];
}

// spt_mttkrp on the device: F-COO or HB-CSF for the modes the format model
// gives them, the COO kernel otherwise (always for a redrawn tensor); the nonzeros streamed through the
// device when that copy does not fit it (device_streamed.hpp).
template <typename T>
bool coo_mttkrp_on_device(const spt_context_s& ctx, const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode,
                          MatRef<T> out) {
  if (x.order() >= 2 && x.nnz > 0)
    if (const char* why = detail::stream_without_trying(ctx, cuda_plugin(), x))
      return detail::streamed_mttkrp<T>(ctx, x, factors, mode, out, why);
  bool too_big = false;
  bool done = false;
  if (std::shared_ptr<const spt_hbcsf_s> h = chosen_hbcsf(ctx, x, mode, out.cols))
    done = mttkrp_on_device<DeviceHbcsf>(ctx, "MTTKRP (on HB-CSF, chosen for this mode)", *h, factors, mode, out,
                                         &too_big);
  else if (std::shared_ptr<const spt_fcoo_s> f = chosen_fcoo(ctx, x, mode, out.cols))
    done = fcoo_on_device<T>(ctx, "MTTKRP (on F-COO, chosen for this mode)", *f, SPT_PLUGIN_FCOO_HADAMARD,
                             fcoo::product_mode_factors(*f, factors), out, &too_big);
  else
    done = mttkrp_on_device<DeviceCoo>(ctx, "MTTKRP", x, factors, mode, out, &too_big);
  if (done || !too_big) return done;
  return detail::streamed_mttkrp<T>(ctx, x, factors, mode, out, detail::kCopyDoesNotFit);
}

template <typename T>
bool ttm_fcoo_on_device(const spt_context_s& ctx, const spt_fcoo_s& x, ConstMatRef<T> u, spt_scoo_s& out) {
  if (x.op != SPT_FCOO_TTM || u.rows != x.dims[x.mode] || u.cols < 1) return false;  // the CPU kernel explains
  fcoo::ttm_result_shell(x, u.cols, out);
  MatRef<T> o{out.values.get<T>().data(), x.segments, u.cols, u.cols};
  return fcoo_on_device<T>(ctx, "F-COO TTM", x, SPT_PLUGIN_FCOO_HADAMARD, {u}, o);
}

const char* format_name(spt_tensor_format f) {
  switch (f) {
    case SPT_TENSOR_FORMAT_CSF: return "CSF";
    case SPT_TENSOR_FORMAT_HICOO: return "HiCOO";
    case SPT_TENSOR_FORMAT_HBCSF: return "HB-CSF";
    case SPT_TENSOR_FORMAT_HLS: return "HLS";
    default: return "this format";
  }
}

bool cp_als_unsupported(const spt_context_s& ctx, const std::string& why) {
  return detail::whole_run_unsupported(ctx, "CP-ALS", why);
}

bool cp_als_device_failed(const spt_context_s& ctx, int status, const std::string& message) {
  return detail::whole_run_device_failed(ctx, "CP-ALS", status, message, "a smaller problem");
}

}  // namespace

bool cp_als_prefers_cpu(const std::vector<spt_index>& dims, spt_nnz nnz, spt_index rank, int threads) {
  uint64_t dim_sum = 0;
  for (spt_index d : dims) dim_sum += d;
  const uint64_t r = rank;
  return dim_sum * r <= (uint64_t(1) << 14) && nnz * r <= (uint64_t(1) << 20) * uint64_t(std::max(threads, 1));
}

SmallCpAlsOnHost::SmallCpAlsOnHost(spt_context_s& ctx, const spt_coo_s& x, const spt_cpd_options& opts)
    : ctx_(ctx), saved_(ctx.backend) {
  if (ctx.backend != SPT_BACKEND_AUTO || effective_backend(ctx) != SPT_BACKEND_CUDA) return;
  if (opts.format != SPT_TENSOR_FORMAT_AUTO && opts.format != SPT_TENSOR_FORMAT_COO) return;
  if (!cp_als_prefers_cpu(x.dims, x.nnz, opts.rank, thread_count(ctx))) return;
  log(ctx, 1,
      cat("note: CP-ALS runs on the CPU: the tensor is small (", x.nnz, " nonzeros, rank ", opts.rank,
          "), a GPU sweep would cost more than the CPU's; backend CUDA forces the GPU"));
  ctx.backend = SPT_BACKEND_CPU;
}

SmallCpAlsOnHost::~SmallCpAlsOnHost() { ctx_.backend = saved_; }

DeviceOfRank::DeviceOfRank(spt_context_s& ctx, int local_rank)
    : ctx_(ctx), saved_backend_(ctx.backend), saved_device_(ctx.device) {
  if (ctx.backend == SPT_BACKEND_AUTO) {
    log(ctx, 2, "distributed run: backend AUTO runs the ranks on the CPU (backend CUDA puts each rank on a GPU)");
    ctx.backend = SPT_BACKEND_CPU;
    return;
  }
  if (ctx.backend != SPT_BACKEND_CUDA) return;
  if (!ctx.devices.empty()) {
    device_ = ctx.device;
    return;
  }
  const int visible = static_cast<int>(cuda_plugin().devices.size());
  if (visible <= 0) return;
  const int device = std::max(local_rank, 0) % visible;
  log(ctx, 2, cat("distributed run: this rank (", local_rank, " on its host) uses device ", device, " of ", visible));
  device_ = device;
  ctx.device = device;
}

DeviceOfRank::~DeviceOfRank() {
  ctx_.backend = saved_backend_;
  ctx_.device = saved_device_;
}

bool local_mttkrp_on_device(const spt_context_s& ctx, const spt_cpd_options& opts) {
  if (ctx.backend != SPT_BACKEND_CUDA) return false;
  return opts.format == SPT_TENSOR_FORMAT_AUTO || opts.format == SPT_TENSOR_FORMAT_COO;
}

namespace {

// The CP-ALS steps on the device: a plugin session (table family CP_STEPS)
// holds the working set; each step is one table call. The tensor's device
// copies are held here for as long as the session.
template <typename T>
class DeviceCpAlsSteps final : public CpAlsSteps<T>, private detail::PluginStepCalls {
 public:
  DeviceCpAlsSteps(const CudaPlugin& cuda, uint32_t order, spt_index rank, const char* name, DeviceCoo coo,
                   std::vector<DeviceFcoo> fcoo)
      : cuda_(cuda), name_(name), coo_(std::move(coo)), fcoo_(std::move(fcoo)) {
    std::vector<const spt_plugin_device_fcoo*> per_mode(order, nullptr);
    for (uint32_t m = 0; m < order && m < fcoo_.size(); ++m) per_mode[m] = fcoo_[m].get();
    spt_plugin_cp_session* raw = nullptr;
    check(cuda_.table->cp_session_create(coo_.get(), per_mode.data(), order, static_cast<uint32_t>(rank), &raw,
                                         buffer_, sizeof buffer_));
    session_ = raw;
    exact_inner_ = coo_ != nullptr;
  }
  // Takes over a session made elsewhere (the streamed one: it sums <X, M>
  // over the streamed nonzeros, so exact_inner works without a COO copy).
  DeviceCpAlsSteps(const CudaPlugin& cuda, const char* name, spt_plugin_cp_session* session)
      : cuda_(cuda), name_(name), session_(session), exact_inner_(true) {}
  ~DeviceCpAlsSteps() override { cuda_.table->cp_session_release(session_); }
  DeviceCpAlsSteps(const DeviceCpAlsSteps&) = delete;
  DeviceCpAlsSteps& operator=(const DeviceCpAlsSteps&) = delete;

  const char* name() const override { return name_; }
  const char* solver_library() const override { return "cuSOLVER"; }

  void start(spt_ktensor_s& k) override {
    const std::vector<spt_plugin_matrix> factors = detail::plugin_factor_views<T>(k);
    check(cuda_.table->cp_set_factors(session_, factors.data(), buffer_, sizeof buffer_));
  }
  void mttkrp(uint32_t mode) override { check(cuda_.table->cp_mttkrp(session_, mode, buffer_, sizeof buffer_)); }
  CpAlsNormalInfo normal_matrix(uint32_t mode) override {
    spt_plugin_cp_normal_info info{};
    check(cuda_.table->cp_normal_matrix(session_, mode, &info, buffer_, sizeof buffer_));
    return {info.non_finite != 0, info.cholesky_info, info.anorm, info.rcond};
  }
  void solve_cholesky(uint32_t mode) override {
    int eigen_info = 0;
    check(cuda_.table->cp_solve(session_, mode, SPT_PLUGIN_CP_SOLVE_CHOLESKY, &eigen_info, buffer_, sizeof buffer_));
  }
  int solve_pseudo_inverse(uint32_t mode) override {
    int eigen_info = 0;
    check(cuda_.table->cp_solve(session_, mode, SPT_PLUGIN_CP_SOLVE_PSEUDO_INVERSE, &eigen_info, buffer_,
                                sizeof buffer_));
    return eigen_info;
  }
  void normalise(uint32_t mode, bool first_sweep) override {
    check(cuda_.table->cp_normalise(session_, mode, first_sweep ? 1 : 0, buffer_, sizeof buffer_));
  }
  int non_finite_component(uint32_t mode) override {
    int32_t component = -1;
    check(cuda_.table->cp_non_finite(session_, mode, &component, buffer_, sizeof buffer_));
    return component;
  }
  void gram(uint32_t mode) override { check(cuda_.table->cp_gram(session_, mode, buffer_, sizeof buffer_)); }
  CpAlsFitTerms fit_terms() override {
    spt_plugin_cp_fit_terms terms{};
    check(cuda_.table->cp_fit_terms(session_, &terms, buffer_, sizeof buffer_));
    return {terms.inner, terms.norm_model_squared, terms.inner_error};
  }
  std::optional<double> exact_inner() override {
    if (!exact_inner_) return std::nullopt;  // F-COO only: no COO copy to sum over
    double inner = 0.0;
    check(cuda_.table->cp_exact_inner(session_, &inner, buffer_, sizeof buffer_));
    return inner;
  }
  void finish(spt_ktensor_s& k) override {
    std::vector<spt_plugin_matrix> factors = detail::plugin_factor_views<T>(k);
    check(cuda_.table->cp_get_factors(session_, factors.data(), k.lambda.ptr<T>(), buffer_, sizeof buffer_));
  }

 private:
  const CudaPlugin& cuda_;
  const char* name_;
  DeviceCoo coo_;                // may be null (F-COO only)
  std::vector<DeviceFcoo> fcoo_; // per mode, may be null
  spt_plugin_cp_session* session_ = nullptr;
  bool exact_inner_ = false;  // the session can sum <X, M> over the nonzeros
};

// Creates the device steps; a failure goes through the CP-ALS failure
// policy (nullptr under AUTO).
template <typename T>
std::unique_ptr<CpAlsSteps<T>> device_steps(const spt_context_s& ctx, const CudaPlugin& cuda, uint32_t order,
                                            spt_index rank, const char* name, DeviceCoo coo,
                                            std::vector<DeviceFcoo> fcoo) {
  try {
    return std::make_unique<DeviceCpAlsSteps<T>>(cuda, order, rank, name, std::move(coo), std::move(fcoo));
  } catch (const DeviceStepFailure& f) {
    cp_als_after_device_failure(ctx, f);
    return nullptr;
  }
}

// CP-ALS with the nonzeros streamed through the device (`why`: the
// tensor's COO copy does not fit, or streaming is forced): every mode's
// MTTKRP on the streamed COO chunks. When
// even the factors and workspace do not fit beside the smallest chunks, the
// CP-ALS failure policy (a note and the CPU loop under AUTO).
template <typename T>
std::unique_ptr<CpAlsSteps<T>> cp_als_streamed(const spt_context_s& ctx, const CudaPlugin& cuda, const spt_coo_s& x,
                                               const spt_cpd_options& opts, const char* why) {
  spt_plugin_cp_session* session = nullptr;
  std::string message;
  const int status = detail::open_streamed_cp_session(ctx, cuda, x, opts.rank, why, &session, message);
  if (status == SPT_ERR_UNSUPPORTED) return cp_als_unsupported(ctx, message), nullptr;
  if (status != SPT_OK) return cp_als_device_failed(ctx, status, message), nullptr;
  return std::make_unique<DeviceCpAlsSteps<T>>(cuda, "coo streamed, cuda", session);
}

// CP-ALS on F-COO on the device: one F-COO per mode (built here, threadlen
// by the rule for this rank and device), uploaded, every MTTKRP on them.
template <typename T>
std::unique_ptr<CpAlsSteps<T>> cp_als_fcoo_on_device(const spt_context_s& ctx, const spt_coo_s& x,
                                                     const spt_cpd_options& opts) {
  const CudaPlugin& cuda = cuda_plugin();
  if (!cuda.usable()) return cp_als_device_failed(ctx, SPT_ERR_DEVICE, cuda.reason), nullptr;
  const uint32_t order = x.order();
  if (order < 2 || order > 8) {
    cp_als_unsupported(ctx, cat("order ", order, " is outside the GPU F-COO range 2..8"));
    return nullptr;
  }
  if (x.nnz >= (spt_nnz(1) << 32)) return cp_als_unsupported(ctx, "F-COO holds fewer than 2^32 nonzeros"), nullptr;
  const int sms = ctx.device < static_cast<int>(cuda.devices.size()) ? cuda.devices[ctx.device].multiprocessors : 0;
  // The threadlen per mode, by the rule with that mode's slice count.
  const std::vector<spt_nnz> slices = distinct_indices_per_mode(x, thread_count(ctx));
  std::vector<spt_fcoo_s> per_mode;
  uint64_t bytes = 0;
  std::string threadlens;
  for (uint32_t m = 0; m < order; ++m) {
    const uint32_t threadlen = fcoo::suggested_threadlen(x.nnz, uint64_t(opts.rank) * sizeof(T), sms, slices[m]);
    per_mode.push_back(fcoo::from_coo(x, SPT_FCOO_MTTKRP, m, threadlen, thread_count(ctx)));
    bytes += per_mode.back().bytes();
    threadlens += cat(m ? "/" : "", threadlen);
  }
  log(ctx, 1, cat("CP-ALS on F-COO on the GPU (one copy per mode, threadlen ", threadlens, ", ", bytes, " bytes)"));
  std::vector<DeviceFcoo> copies(order);
  for (uint32_t m = 0; m < order; ++m) {
    std::string message;
    const int status = device_copy(cuda, ctx.device, per_mode[m], copies[m], message);
    if (status == SPT_ERR_UNSUPPORTED) return cp_als_unsupported(ctx, message), nullptr;
    if (status != SPT_OK) return cp_als_device_failed(ctx, status, message), nullptr;
  }
  return device_steps<T>(ctx, cuda, order, opts.rank, "fcoo, cuda", nullptr, std::move(copies));
}

template <typename T>
std::unique_ptr<CpAlsSteps<T>> cp_als_on_device(const spt_context_s& ctx, const spt_coo_s& x,
                                                const spt_cpd_options& opts) {
  if (effective_backend(ctx) != SPT_BACKEND_CUDA) return nullptr;
  if (opts.format == SPT_TENSOR_FORMAT_FCOO) return cp_als_fcoo_on_device<T>(ctx, x, opts);
  if (opts.format == SPT_TENSOR_FORMAT_HICOO) {
    // No device steps on HiCOO: the host steps run and each MTTKRP goes
    // to the GPU HiCOO kernel (factors copied per call).
    log(ctx, 1, "note: CP-ALS on HiCOO: the MTTKRPs run on the GPU, the rest of each sweep on the host");
    return nullptr;
  }
  if (opts.format != SPT_TENSOR_FORMAT_AUTO && opts.format != SPT_TENSOR_FORMAT_COO) {
    cp_als_unsupported(ctx, cat("the GPU CP-ALS runs on COO, F-COO or HiCOO, and opts.format asks for ",
                                format_name(opts.format), " (use SPT_TENSOR_FORMAT_COO, _FCOO, _HICOO or _AUTO)"));
    return nullptr;
  }
  const CudaPlugin& cuda = cuda_plugin();
  if (!cuda.usable()) return cp_als_device_failed(ctx, SPT_ERR_DEVICE, cuda.reason), nullptr;
  // Several devices when the context has them (multi_device.hpp); nullptr
  // = this one.
  if (std::unique_ptr<CpAlsSteps<T>> multi = make_multi_device_cp_als_steps<T>(ctx, x, opts)) return multi;
  std::string message;
  // A tensor whose copy does not fit streams through the device.
  if (x.nnz > 0)
    if (const char* why = detail::stream_without_trying(ctx, cuda, x))
      return cp_als_streamed<T>(ctx, cuda, x, opts, why);
  detail::CpAlsDeviceCopies copies;
  const int status = detail::cp_als_device_copies(ctx, cuda, ctx.device, x, opts, copies, message);
  if (status == SPT_ERR_UNSUPPORTED) return cp_als_unsupported(ctx, message), nullptr;
  if (status == SPT_ERR_OUT_OF_MEMORY && x.nnz > 0)
    return cp_als_streamed<T>(ctx, cuda, x, opts, detail::kCopyDoesNotFit);
  if (status != SPT_OK) return cp_als_device_failed(ctx, status, message), nullptr;
  try {
    return std::make_unique<DeviceCpAlsSteps<T>>(cuda, x.order(), opts.rank, "coo, cuda", std::move(copies.coo),
                                                 std::move(copies.fcoo));
  } catch (const DeviceStepFailure& f) {
    if (f.status() != SPT_ERR_OUT_OF_MEMORY) {
      cp_als_after_device_failure(ctx, f);
      return nullptr;
    }
  }
  // The tensor's copies fit but the factors and workspace do not fit
  // beside them: drop the cached copies (the failed session released its
  // references) and stream the nonzeros instead.
  {
    std::lock_guard<std::mutex> lock(detail::device_cache_mutex());
    x.device_cache.reset();
  }
  return cp_als_streamed<T>(ctx, cuda, x, opts, "the factors and workspace do not fit beside the tensor's device copy");
}

}  // namespace

int detail::cp_als_device_copies(const spt_context_s& ctx, const CudaPlugin& cuda, int device, const spt_coo_s& x,
                                 const spt_cpd_options& opts, CpAlsDeviceCopies& out, std::string& message) {
  out = {};
  if (const int status = device_copy(cuda, device, x, out.coo, message); status != SPT_OK) return status;
  // Format AUTO: the modes the GPU format model gives to F-COO run on
  // their F-COO copies (a copy that does not fit leaves its mode on COO).
  const uint32_t order = x.order();
  out.fcoo.assign(order, nullptr);
  if (opts.format != SPT_TENSOR_FORMAT_AUTO) return SPT_OK;
  std::string on_fcoo;
  for (uint32_t m = 0; m < order; ++m) {
    const std::shared_ptr<const spt_fcoo_s> f = chosen_fcoo(ctx, x, m, opts.rank, true);
    if (!f) continue;
    std::string why;
    if (const int st = device_copy(cuda, device, *f, out.fcoo[m], why); st != SPT_OK) {
      log(ctx, 1, cat("note: CP-ALS mode ", m, " stays on COO on GPU ", device, ": its F-COO copy failed (", why, ")"));
      out.fcoo[m].reset();
      continue;
    }
    on_fcoo += cat(on_fcoo.empty() ? "" : ", ", m);
  }
  if (!on_fcoo.empty())
    log(ctx, 1, cat("CP-ALS on GPU ", device, ": MTTKRP on F-COO in modes ", on_fcoo, ", COO in the others"));
  return SPT_OK;
}

void cp_als_after_device_failure(const spt_context_s& ctx, const DeviceStepFailure& failure) {
  const int status = failure.status();
  if (status == SPT_ERR_UNSUPPORTED) {
    cp_als_unsupported(ctx, failure.what());
    return;
  }
  if (status == SPT_ERR_INVALID_ARGUMENT)
    fail(SPT_ERR_INTERNAL, "the CUDA plugin rejected CP-ALS arguments: ", failure.what());
  cp_als_device_failed(ctx, status, failure.what());
}

template <typename T>
std::unique_ptr<CpAlsSteps<T>> make_device_cp_als_steps(const spt_context_s& ctx, const spt_coo_s& x,
                                                        const spt_cpd_options& opts) {
  return cp_als_on_device<T>(ctx, x, opts);
}

template std::unique_ptr<CpAlsSteps<float>> make_device_cp_als_steps<float>(const spt_context_s&, const spt_coo_s&,
                                                                            const spt_cpd_options&);
template std::unique_ptr<CpAlsSteps<double>> make_device_cp_als_steps<double>(const spt_context_s&,
                                                                              const spt_coo_s&,
                                                                              const spt_cpd_options&);

bool DeviceKernels::mttkrp(const spt_context_s& ctx, const spt_coo_s& x, const ConstMatRef<float>* factors,
                           uint32_t mode, MatRef<float> out) {
  return coo_mttkrp_on_device<float>(ctx, x, factors, mode, out);
}

bool DeviceKernels::mttkrp(const spt_context_s& ctx, const spt_coo_s& x, const ConstMatRef<double>* factors,
                           uint32_t mode, MatRef<double> out) {
  return coo_mttkrp_on_device<double>(ctx, x, factors, mode, out);
}

bool DeviceKernels::mttkrp_hicoo(const spt_context_s& ctx, const spt_hicoo_s& x, const ConstMatRef<float>* factors,
                                 uint32_t mode, MatRef<float> out) {
  return mttkrp_on_device<DeviceHicoo>(ctx, "HiCOO MTTKRP", x, factors, mode, out);
}

bool DeviceKernels::mttkrp_hicoo(const spt_context_s& ctx, const spt_hicoo_s& x, const ConstMatRef<double>* factors,
                                 uint32_t mode, MatRef<double> out) {
  return mttkrp_on_device<DeviceHicoo>(ctx, "HiCOO MTTKRP", x, factors, mode, out);
}

bool DeviceKernels::mttkrp_hbcsf(const spt_context_s& ctx, const spt_hbcsf_s& h, const ConstMatRef<float>* factors,
                                 MatRef<float> out) {
  return mttkrp_on_device<DeviceHbcsf>(ctx, "HB-CSF MTTKRP", h, factors, h.root(), out);
}

bool DeviceKernels::mttkrp_hbcsf(const spt_context_s& ctx, const spt_hbcsf_s& h, const ConstMatRef<double>* factors,
                                 MatRef<double> out) {
  return mttkrp_on_device<DeviceHbcsf>(ctx, "HB-CSF MTTKRP", h, factors, h.root(), out);
}

bool DeviceKernels::mttkrp_hbcsf_mode(const spt_context_s& ctx, const spt_hbcsf_s& h,
                                      const ConstMatRef<float>* factors, uint32_t mode, MatRef<float> out) {
  if (mode >= h.order())
    fail(SPT_ERR_INVALID_ARGUMENT, "HB-CSF MTTKRP: mode ", mode, " is out of range (order ", h.order(), ")");
  return mttkrp_on_device<DeviceHbcsf>(ctx, "HB-CSF MTTKRP", h, factors, mode, out);
}

bool DeviceKernels::mttkrp_hbcsf_mode(const spt_context_s& ctx, const spt_hbcsf_s& h,
                                      const ConstMatRef<double>* factors, uint32_t mode, MatRef<double> out) {
  if (mode >= h.order())
    fail(SPT_ERR_INVALID_ARGUMENT, "HB-CSF MTTKRP: mode ", mode, " is out of range (order ", h.order(), ")");
  return mttkrp_on_device<DeviceHbcsf>(ctx, "HB-CSF MTTKRP", h, factors, mode, out);
}

bool DeviceKernels::mttkrp_fcoo(const spt_context_s& ctx, const spt_fcoo_s& x, const ConstMatRef<float>* factors,
                                MatRef<float> out) {
  if (x.op != SPT_FCOO_MTTKRP) return false;  // the CPU kernel explains
  return fcoo_on_device<float>(ctx, "F-COO MTTKRP", x, SPT_PLUGIN_FCOO_HADAMARD, fcoo::product_mode_factors(x, factors), out);
}

bool DeviceKernels::mttkrp_fcoo(const spt_context_s& ctx, const spt_fcoo_s& x, const ConstMatRef<double>* factors,
                                MatRef<double> out) {
  if (x.op != SPT_FCOO_MTTKRP) return false;
  return fcoo_on_device<double>(ctx, "F-COO MTTKRP", x, SPT_PLUGIN_FCOO_HADAMARD, fcoo::product_mode_factors(x, factors),
                                out);
}

bool DeviceKernels::ttmc_fcoo(const spt_context_s& ctx, const spt_fcoo_s& x, const ConstMatRef<float>* factors,
                              MatRef<float> out) {
  if (x.op != SPT_FCOO_MTTKRP) return false;
  return fcoo_on_device<float>(ctx, "F-COO TTMc", x, SPT_PLUGIN_FCOO_KRONECKER, fcoo::product_mode_factors(x, factors), out);
}

bool DeviceKernels::ttmc_fcoo(const spt_context_s& ctx, const spt_fcoo_s& x, const ConstMatRef<double>* factors,
                              MatRef<double> out) {
  if (x.op != SPT_FCOO_MTTKRP) return false;
  return fcoo_on_device<double>(ctx, "F-COO TTMc", x, SPT_PLUGIN_FCOO_KRONECKER, fcoo::product_mode_factors(x, factors),
                                out);
}

bool DeviceKernels::ttm_fcoo(const spt_context_s& ctx, const spt_fcoo_s& x, ConstMatRef<float> u, spt_scoo_s& out) {
  return ttm_fcoo_on_device<float>(ctx, x, u, out);
}

bool DeviceKernels::ttm_fcoo(const spt_context_s& ctx, const spt_fcoo_s& x, ConstMatRef<double> u, spt_scoo_s& out) {
  return ttm_fcoo_on_device<double>(ctx, x, u, out);
}

}  // namespace spt::dispatch
