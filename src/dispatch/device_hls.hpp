// The HLS dense threshold measured on the GPU (src/dispatch/device_hls.cpp),
// used by spt_hls_from_coo (src/api/api_hls.cpp) when the caller leaves
// dense_threshold at 0 and the context's backend resolves to CUDA.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/context.hpp"
#include "core/hls.hpp"
#include "dispatch/plugin_loader.hpp"
#include "sptensor/hls.h"

namespace spt::dispatch {

struct HlsThreshold {
  uint32_t threshold = 0;    // occupied cells per tile (of D sub-tiles) that make a tile dense
  bool calibrated = false;   // true: measured on the device; false: the default 78 D
  double dense_seconds = 0;  // the measurement (0 when not calibrated): seconds per dense tile
  double sparse_seconds = 0; // and per sparse nonzero
};

// The HLS MTTKRP's calibration rank: the paper's (and the benchmarks') rank.
constexpr uint32_t kHlsCalibrationRank = 16;

// The dense threshold for an HLS build of `order` (3 or 4) with slab depth
// `slab_depth` (resolved: 1 for order 3) whose dense tiles run in
// `precision` (resolved, not AUTO) on the context's device:
// clamp(ceil(seconds per dense tile / seconds per sparse nonzero), 1,
// 4096 * slab_depth), measured by the plugin's hls_calibrate at rank 16.
// Measured once per (device, order, slab depth, precision) per process and
// cached (thread safe: concurrent first callers wait for one measurement).
// When the effective backend is not CUDA, or the plugin or the measurement
// fails (the failure is cached too), returns the default 78 * slab_depth
// with calibrated = false and, for a failure, a note in the context's log.
// Never throws for a device problem.
HlsThreshold hls_dense_threshold(const spt_context_s& ctx, uint32_t order, uint32_t slab_depth,
                                 spt_hls_precision precision);

// Copy h to `device` through the plugin's hls_upload (dims and factors by
// level, as cuda/hls.cuh takes them); *out owns the copy (released with
// the last reference). Not cached: device_hls.cpp caches per handle, the
// GPU Tucker-HOOI holds its per-mode copies for one decomposition. Returns
// the plugin's status with `message` set on failure.
int upload_hls_copy(const CudaPlugin& cuda, int device, const spt_hls_s& h,
                    std::shared_ptr<spt_plugin_device_hls>& out, std::string& message);

// How many times hls_dense_threshold has called the plugin's measurement in
// this process (for tests of the cache).
uint64_t hls_calibration_runs();

}  // namespace spt::dispatch
