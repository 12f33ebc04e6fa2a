// HLS on the device: the handle's device copy (cached on the handle), the
// MTTKRP and TTMc through the plugin's hls_multiply, and the dense
// threshold measured by the plugin's hls_calibrate (device_hls.hpp).
//
// Factors are passed to the plugin by mode (as for every other format); the
// plugin maps them to the kernels' levels.
#include "dispatch/device_hls.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.hpp"
#include "core/hls.hpp"
#include "dispatch/device.hpp"
#include "dispatch/device_common.hpp"
#include "dispatch/plugin_loader.hpp"

namespace spt::dispatch {

int upload_hls_copy(const CudaPlugin& cuda, int device, const spt_hls_s& h,
                    std::shared_ptr<spt_plugin_device_hls>& out, std::string& message) {
  const uint32_t order = h.order();
  std::vector<uint32_t> dims_by_level(order);
  for (uint32_t l = 0; l < order; ++l) dims_by_level[l] = h.dims[h.modes[l]];
  spt_plugin_hls v{};
  v.order = order;
  v.dtype = h.dtype() == SPT_FLOAT32 ? SPT_PLUGIN_FLOAT32 : SPT_PLUGIN_FLOAT64;
  v.slab_depth = h.slab_depth;
  v.dims = dims_by_level.data();
  v.modes = h.modes.data();
  v.bits = h.bits.data();
  v.shift = h.shift.data();
  v.tile_bits = h.tile_bits.data();
  v.dense_tiles = h.dense_tiles();
  v.d_tile = h.d_tile.data();
  v.d_bitmap = h.d_bitmap.data();
  v.d_val_ptr = h.d_val_ptr.data();
  v.d_val = h.d_val.data();
  v.root_groups = h.d_root_tile.size();
  v.d_root_tile = h.d_root_tile.data();
  v.d_root_ptr = h.d_root_ptr.data();
  v.sparse_nnz = h.sparse_nnz();
  v.s_ind = h.s_ind.data();
  v.s_val = h.s_val.data();
  v.sparse_rows = h.s_row.size();
  v.s_row = h.s_row.data();
  v.s_row_ptr = h.s_row_ptr.data();
  spt_plugin_device_hls* raw = nullptr;
  char buffer[512] = {0};
  const int status = cuda.table->hls_upload(device, &v, &raw, buffer, sizeof buffer);
  return detail::own_upload(status, raw, cuda.table->hls_release, buffer, out, message);
}

namespace {

using detail::cached_device_copy;
using detail::device_failed;

using DeviceHls = std::shared_ptr<spt_plugin_device_hls>;

// What spt_hls_s::device_cache holds (a handle is immutable; the
// fingerprint keeps a struct copy from serving another tensor's arrays, as
// for HiCOO and HB-CSF).
struct DeviceHlsCache {
  spt_nnz dense_nnz = 0;
  spt_nnz sparse_nnz = 0;
  spt_dtype dtype = SPT_FLOAT64;
  std::vector<spt_index> dims;
  std::vector<uint32_t> modes;
  uint32_t slab_depth = 1;
  std::vector<const void*> arrays;
  std::vector<DeviceHls> per_device;

  static std::vector<const void*> arrays_of(const spt_hls_s& h) {
    return {h.d_tile.data(),     h.d_bitmap.data(), h.d_val_ptr.data(), h.d_val.data(), h.d_root_tile.data(),
            h.d_root_ptr.data(), h.s_ind.data(),    h.s_val.data(),      h.s_row.data(), h.s_row_ptr.data()};
  }
  explicit DeviceHlsCache(const spt_hls_s& h)
      : dense_nnz(h.dense_nnz()), sparse_nnz(h.sparse_nnz()), dtype(h.dtype()), dims(h.dims), modes(h.modes),
        slab_depth(h.slab_depth), arrays(arrays_of(h)) {}
  bool matches(const spt_hls_s& h) const {
    return dense_nnz == h.dense_nnz() && sparse_nnz == h.sparse_nnz() && dtype == h.dtype() && dims == h.dims &&
           modes == h.modes && slab_depth == h.slab_depth && arrays == arrays_of(h);
  }
};

int device_copy(const CudaPlugin& cuda, int device, const spt_hls_s& h, DeviceHls& out, std::string& message) {
  return cached_device_copy<DeviceHlsCache>(h, device, out, message, [&](DeviceHls& copy, std::string& why) -> int {
    return upload_hls_copy(cuda, device, h, copy, why);
  });
}

int plugin_precision(spt_hls_precision p) {
  switch (p) {
    case SPT_HLS_PRECISION_BF16: return SPT_PLUGIN_HLS_BF16;
    case SPT_HLS_PRECISION_TF32: return SPT_PLUGIN_HLS_TF32;
    case SPT_HLS_PRECISION_EXACT: return SPT_PLUGIN_HLS_EXACT;
    case SPT_HLS_PRECISION_FP16: return SPT_PLUGIN_HLS_FP16;
    case SPT_HLS_PRECISION_AUTO: break;
  }
  return plugin_precision(hls::kAutoPrecision);
}

const char* precision_name(spt_hls_precision p) {
  switch (p) {
    case SPT_HLS_PRECISION_FP16: return "fp16";
    case SPT_HLS_PRECISION_BF16: return "bf16";
    case SPT_HLS_PRECISION_TF32: return "tf32";
    case SPT_HLS_PRECISION_EXACT: return "exact";
    case SPT_HLS_PRECISION_AUTO: break;
  }
  return "auto";
}

// One HLS product on the device (kind SPT_PLUGIN_HLS_MTTKRP or _TTMC):
// the handle's cached copy, the host factors (by mode) and output passed
// through the plugin.
template <typename T>
bool hls_on_device(const spt_context_s& ctx, const char* kernel, int kind, const spt_hls_s& h,
                   const ConstMatRef<T>* factors, MatRef<T> out) {
  const CudaPlugin& cuda = cuda_plugin();
  if (!cuda.usable()) return device_failed(ctx, kernel, SPT_ERR_DEVICE, cuda.reason);
  if (cuda.table->hls_upload == nullptr || cuda.table->hls_multiply == nullptr)
    return device_failed(ctx, kernel, SPT_ERR_DEVICE, "the CUDA plugin has no HLS entries");
  if (out.cols >= (spt_nnz(1) << 31)) {
    log(ctx, 2, cat("note: ", kernel, " runs on the CPU: the output has ", out.cols,
                    " columns, the GPU HLS kernels take fewer than 2^31"));
    return false;
  }
  if (h.nnz() == 0) {
    for (spt_nnz i = 0; i < out.rows; ++i)
      for (spt_nnz j = 0; j < out.cols; ++j) out(i, j) = T(0);
    return true;
  }
  std::string message;
  DeviceHls device_h;
  int status = device_copy(cuda, ctx.device, h, device_h, message);
  if (status == SPT_ERR_UNSUPPORTED) {
    log(ctx, 2, cat("note: ", kernel, " runs on the CPU: ", message));
    return false;
  }
  if (status != SPT_OK) return device_failed(ctx, kernel, status, message);
  std::vector<spt_plugin_matrix> f(h.order());
  for (uint32_t m = 0; m < h.order(); ++m) {
    if (m == h.root()) continue;
    f[m] = {const_cast<T*>(factors[m].data), factors[m].rows, factors[m].cols, factors[m].ld};
  }
  spt_plugin_matrix o{out.data, out.rows, out.cols, out.ld};
  char buffer[512] = {0};
  status = cuda.table->hls_multiply(device_h.get(), kind, plugin_precision(h.precision), f.data(), &o, buffer,
                                    sizeof buffer);
  if (status == SPT_ERR_UNSUPPORTED) {
    log(ctx, 2, cat("note: ", kernel, " runs on the CPU: ", buffer));
    return false;
  }
  if (status != SPT_OK) return device_failed(ctx, kernel, status, buffer);
  return true;
}

// The calibration cache: one entry per (device, order, slab depth,
// precision), a measurement or a failure (message), for the process.
struct CalibrationEntry {
  HlsThreshold result;
  std::string failure;  // empty = measured
};

std::mutex& calibration_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::tuple<int, uint32_t, uint32_t, int>, CalibrationEntry>& calibrations() {
  static std::map<std::tuple<int, uint32_t, uint32_t, int>, CalibrationEntry> c;
  return c;
}

uint64_t calibration_runs = 0;  // guarded by calibration_mutex()

CalibrationEntry measure(const CudaPlugin& cuda, int device, uint32_t order, uint32_t slab_depth,
                         spt_hls_precision precision) {
  CalibrationEntry e;
  e.result.threshold = hls::kDefaultThreshold * slab_depth;
  if (cuda.table->hls_calibrate == nullptr) {
    e.failure = "the CUDA plugin has no hls_calibrate";
    return e;
  }
  ++calibration_runs;
  double dense = 0, sparse = 0;
  char buffer[512] = {0};
  const int status = cuda.table->hls_calibrate(device, order, slab_depth, kHlsCalibrationRank,
                                               plugin_precision(precision), &dense, &sparse, buffer, sizeof buffer);
  if (status != SPT_OK) {
    e.failure = buffer[0] ? buffer : "hls_calibrate failed";
    return e;
  }
  if (!(dense > 0) || !(sparse > 0) || !std::isfinite(dense) || !std::isfinite(sparse)) {
    e.failure = cat("hls_calibrate reported ", dense, " s per dense tile and ", sparse, " s per sparse nonzero");
    return e;
  }
  const double cap = double(hls::kCellsPerSubtile) * slab_depth;
  const double ratio = std::ceil(dense / sparse);
  e.result.threshold = static_cast<uint32_t>(std::clamp(ratio, 1.0, cap));
  e.result.calibrated = true;
  e.result.dense_seconds = dense;
  e.result.sparse_seconds = sparse;
  return e;
}

}  // namespace

HlsThreshold hls_dense_threshold(const spt_context_s& ctx, uint32_t order, uint32_t slab_depth,
                                 spt_hls_precision precision) {
  if (slab_depth == 0) slab_depth = 1;
  HlsThreshold fallback;
  fallback.threshold = hls::kDefaultThreshold * slab_depth;
  if (effective_backend(ctx) != SPT_BACKEND_CUDA) return fallback;
  if (precision == SPT_HLS_PRECISION_AUTO) precision = hls::kAutoPrecision;
  const CudaPlugin& cuda = cuda_plugin();
  CalibrationEntry entry;
  if (!cuda.usable() || ctx.device < 0 || ctx.device >= static_cast<int>(cuda.devices.size())) {
    entry.result = fallback;
    entry.failure = cuda.usable() ? cat("no CUDA device ", ctx.device) : cuda.reason;
  } else {
    std::lock_guard<std::mutex> lock(calibration_mutex());
    const auto key = std::make_tuple(ctx.device, order, slab_depth, static_cast<int>(precision));
    auto it = calibrations().find(key);
    if (it == calibrations().end()) it = calibrations().emplace(key, measure(cuda, ctx.device, order, slab_depth, precision)).first;
    entry = it->second;
  }
  if (!entry.failure.empty()) {
    log(ctx, 1,
        cat("note: the HLS dense threshold could not be measured on the GPU (", entry.failure,
            "); using the default ", fallback.threshold));
    return fallback;
  }
  log(ctx, 2,
      cat("HLS dense threshold measured on CUDA device ", ctx.device, " (order ", order, ", slab depth ", slab_depth,
          ", ", precision_name(precision), "): ", entry.result.dense_seconds, " s per dense tile, ",
          entry.result.sparse_seconds, " s per sparse nonzero -> ", entry.result.threshold, " cells"));
  return entry.result;
}

uint64_t hls_calibration_runs() {
  std::lock_guard<std::mutex> lock(calibration_mutex());
  return calibration_runs;
}

bool DeviceKernels::mttkrp_hls(const spt_context_s& ctx, const spt_hls_s& h, const ConstMatRef<float>* factors,
                               MatRef<float> out) {
  return hls_on_device<float>(ctx, "HLS MTTKRP", SPT_PLUGIN_HLS_MTTKRP, h, factors, out);
}

bool DeviceKernels::mttkrp_hls(const spt_context_s& ctx, const spt_hls_s& h, const ConstMatRef<double>* factors,
                               MatRef<double> out) {
  return hls_on_device<double>(ctx, "HLS MTTKRP", SPT_PLUGIN_HLS_MTTKRP, h, factors, out);
}

bool DeviceKernels::ttmc_hls(const spt_context_s& ctx, const spt_hls_s& h, const ConstMatRef<float>* factors,
                             MatRef<float> out) {
  return hls_on_device<float>(ctx, "HLS TTMc", SPT_PLUGIN_HLS_TTMC, h, factors, out);
}

bool DeviceKernels::ttmc_hls(const spt_context_s& ctx, const spt_hls_s& h, const ConstMatRef<double>* factors,
                             MatRef<double> out) {
  return hls_on_device<double>(ctx, "HLS TTMc", SPT_PLUGIN_HLS_TTMC, h, factors, out);
}

}  // namespace spt::dispatch
