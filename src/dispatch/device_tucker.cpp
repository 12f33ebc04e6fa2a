// The dispatcher's side of the GPU Tucker-HOOI (DeviceKernels::tucker_hooi,
// device.hpp): the AUTO size rule, the format of the per-mode TTMc copies
// (HLS for large enough orders-3/4 tensors with dense tiles, else F-COO;
// env SPT_CUDA_TUCKER_TTMC), one copy
// per mode built and uploaded for the call, the hooks handed to the plugin
// (cuda/tucker_hooi.cu) and the failure policy (AUTO: a note and the CPU
// loop; CUDA forced: an error).
//
// Why HLS: on an H100 (benchmarks/results/gpu-h100-hls-2026-11-26.jsonl)
// the HLS TTMc in EXACT precision took 0.29-0.9 ms per mode against 12 ms
// for the F-COO TTMc on coads-climatology (order 4, dense), 0.56 against
// 0.78 ms on email-eu-day (order 3, 9% dense tiles) and 1.1 against 5.9 ms
// on a block-structured synthetic tensor. EXACT (CUDA cores, no rounding)
// so that the GPU Tucker still matches the CPU's within the F-COO run's
// tolerances.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/fcoo.hpp"
#include "core/hls.hpp"
#include "dispatch/device_common.hpp"
#include "dispatch/device_hls.hpp"
#include "dispatch/device.hpp"
#include "dispatch/plugin_loader.hpp"

namespace spt::dispatch {

namespace {

using DeviceFcoo = std::shared_ptr<spt_plugin_device_fcoo>;
using DeviceHls = std::shared_ptr<spt_plugin_device_hls>;

// Under auto, HLS only pays where it has dense tiles and enough work: on
// the H100 (benchmarks/results/gpu-h100-hls-2026-11-26*.jsonl, TTMc in
// EXACT precision against F-COO) it won 1.4x at a dense fraction of 0.11
// (email-eu-day) and 3-60x at 0.74-1.0 (flights, coads, a block-structured
// tensor), tied at 0 (fb15k237, mathsx, contact) and lost 0.6-0.9x on the
// 61,282-nonzero aminoacids although all its tiles are dense.
constexpr double kTuckerHlsMinDenseFraction = 0.05;
constexpr spt_nnz kTuckerHlsMinNnz = 100000;

enum class TtmcFormat { fcoo, hls_if_dense, hls };

// The format the per-mode TTMc copies take: env SPT_CUDA_TUCKER_TTMC =
// hls | fcoo | auto (unset or auto: HLS for orders 3 and 4, the HLS
// kernels' range, when the tensor is large and dense enough, see above;
// F-COO otherwise). hls forced on another order runs on F-COO with a note;
// an unknown value is auto with a note.
TtmcFormat tucker_ttmc_format(const spt_context_s& ctx, uint32_t order) {
  const bool hls_order = order == 3 || order == 4;
  const TtmcFormat automatic = hls_order ? TtmcFormat::hls_if_dense : TtmcFormat::fcoo;
  const char* env = std::getenv("SPT_CUDA_TUCKER_TTMC");
  if (!env || !*env || std::strcmp(env, "auto") == 0) return automatic;
  if (std::strcmp(env, "fcoo") == 0) return TtmcFormat::fcoo;
  if (std::strcmp(env, "hls") == 0) {
    if (!hls_order)
      log(ctx, 1,
          cat("note: SPT_CUDA_TUCKER_TTMC=hls ignored: order ", order,
              " is outside the GPU HLS kernels' range 3..4; the Tucker TTMc runs on F-COO"));
    return hls_order ? TtmcFormat::hls : TtmcFormat::fcoo;
  }
  log(ctx, 1, cat("note: SPT_CUDA_TUCKER_TTMC=", env, " is not hls, fcoo or auto; using auto"));
  return automatic;
}

// What the plugin's hooks reach: the core's sweep hook, the context for
// notes, and an error thrown by the hook (rethrown after the plugin
// returns: nothing is thrown through the C table).
struct TuckerHookState {
  const DeviceKernels::TuckerSweepHook* on_sweep = nullptr;
  const spt_context_s* ctx = nullptr;
  std::exception_ptr error;
};

int tucker_on_sweep(void* data, int iteration, double norm_core_squared, double seconds) {
  auto* state = static_cast<TuckerHookState*>(data);
  try {
    return (*state->on_sweep)(iteration, norm_core_squared, seconds) ? SPT_PLUGIN_CONTINUE : SPT_PLUGIN_STOP;
  } catch (...) {
    state->error = std::current_exception();
    return SPT_PLUGIN_ABORT;
  }
}

void tucker_note(void* data, int level, const char* message) {
  auto* state = static_cast<TuckerHookState*>(data);
  try {
    log(*state->ctx, level, message ? message : "");
  } catch (...) {
  }
}

bool tucker_unsupported(const spt_context_s& ctx, const std::string& why) {
  return detail::whole_run_unsupported(ctx, "Tucker-HOOI", why);
}

bool tucker_device_failed(const spt_context_s& ctx, int status, const std::string& message) {
  return detail::whole_run_device_failed(ctx, "Tucker-HOOI", status, message, "lower the ranks");
}


// The HLS copies of x, one rooted at each mode (default dense threshold and
// slab depth, precision EXACT), uploaded to ctx.device. Returns SPT_OK with
// `copies` filled; or, when the TTMc must run on F-COO instead, a status
// with `why` set: UNSUPPORTED (the coordinates do not fit HLS's 64-bit
// index, the plugin refuses) or OUT_OF_MEMORY (the copies do not fit the
// device); any other upload failure's status (the caller's device
// failure). With require_dense, a tensor below the auto rule's size or
// dense fraction (judged on the copy rooted at mode 0) returns SPT_OK with
// no copies and `why` saying so. `bytes` receives the host size of the
// copies.
int upload_hls_per_mode(const spt_context_s& ctx, const CudaPlugin& cuda, const spt_coo_s& x, bool require_dense,
                        std::vector<DeviceHls>& copies, uint64_t& bytes, std::string& why) {
  const uint32_t order = x.order();
  copies.assign(order, nullptr);
  bytes = 0;
  for (uint32_t n = 0; n < order; ++n) {
    hls::Params params;
    params.root = n;  // threshold and slab depth 0: the library defaults
    spt_hls_s h;
    try {
      h = hls::from_coo(x, params, thread_count(ctx));
    } catch (const Error& e) {
      if (e.code() != SPT_ERR_UNSUPPORTED) throw;
      why = e.what();
      return SPT_ERR_UNSUPPORTED;
    }
    if (require_dense && n == 0) {
      const double dense = h.nnz() ? double(h.dense_nnz()) / double(h.nnz()) : 0.0;
      if (x.nnz < kTuckerHlsMinNnz || dense < kTuckerHlsMinDenseFraction) {
        why = cat(x.nnz, " nonzeros, dense-tile fraction ", dense, " (HLS from ", kTuckerHlsMinNnz,
                  " nonzeros and a fraction of ", kTuckerHlsMinDenseFraction, ")");
        copies.clear();
        return SPT_OK;  // no copies: the caller runs F-COO
      }
    }
    h.precision = SPT_HLS_PRECISION_EXACT;  // what the plugin's tucker_hooi_hls runs
    bytes += h.bytes();
    const int status = upload_hls_copy(cuda, ctx.device, h, copies[n], why);
    if (status != SPT_OK) {
      copies.clear();  // frees the device memory before the F-COO copies are made
      return status;
    }
  }
  return SPT_OK;
}

template <typename T>
bool tucker_on_device(const spt_context_s& ctx, const spt_coo_s& x, const std::vector<spt_index>& ranks,
                      int max_iters, const std::vector<MatRef<T>>& factors, T* core,
                      const DeviceKernels::TuckerSweepHook& on_sweep) {
  if (effective_backend(ctx) != SPT_BACKEND_CUDA) return false;
  const uint32_t order = x.order();
  if (ctx.backend == SPT_BACKEND_AUTO && DeviceKernels::tucker_prefers_cpu(x.dims, x.nnz, ranks, thread_count(ctx))) {
    log(ctx, 1,
        cat("note: Tucker-HOOI runs on the CPU: the problem is small (", x.nnz,
            " nonzeros), a GPU sweep would cost more than the CPU's; backend CUDA forces the GPU"));
    return false;
  }
  const CudaPlugin& cuda = cuda_plugin();
  if (!cuda.usable()) return tucker_device_failed(ctx, SPT_ERR_DEVICE, cuda.reason);
  if (cuda.table->tucker_hooi_fcoo == nullptr)
    return tucker_device_failed(ctx, SPT_ERR_DEVICE, "the plugin has no tucker_hooi_fcoo");
  if (order < 2 || order > 8)
    return tucker_unsupported(ctx, cat("order ", order, " is outside the GPU F-COO range 2..8"));
  if (x.nnz >= (spt_nnz(1) << 32)) return tucker_unsupported(ctx, "F-COO holds fewer than 2^32 nonzeros");
  // The TTMc output Y_(n) has P_n = prod_{m != n} R_m columns; cuBLAS and
  // cuSOLVER take 32-bit sizes (the plugin checks again).
  std::vector<uint64_t> columns(order, 1);
  for (uint32_t n = 0; n < order; ++n) {
    for (uint32_t m = 0; m < order; ++m)
      if (m != n) columns[n] = std::min<uint64_t>(columns[n] * ranks[m], uint64_t(1) << 40);
    if (columns[n] >= (uint64_t(1) << 31) || x.dims[n] >= (spt_index(1) << 31))
      return tucker_unsupported(ctx, cat("mode ", n, ": I_n = ", x.dims[n], " or prod_{m != n} R_m = ", columns[n],
                                         " reaches 2^31, the limit of cuBLAS / cuSOLVER sizes"));
  }
  // The TTMc copies: HLS rooted at each mode (orders 3 and 4, unless the
  // env says fcoo), else or on an HLS failure listed in
  // upload_hls_per_mode one F-COO per mode.
  std::vector<DeviceHls> hls_copies;
  std::vector<const spt_plugin_device_hls*> hls_raw;
  const TtmcFormat ttmc_format = tucker_ttmc_format(ctx, order);
  if (ttmc_format != TtmcFormat::fcoo) {
    if (cuda.table->tucker_hooi_hls == nullptr || cuda.table->hls_upload == nullptr) {
      log(ctx, 1, "note: the Tucker TTMc runs on F-COO: the plugin has no tucker_hooi_hls");
    } else {
      uint64_t bytes = 0;
      std::string why;
      const int status =
          upload_hls_per_mode(ctx, cuda, x, ttmc_format == TtmcFormat::hls_if_dense, hls_copies, bytes, why);
      if (status == SPT_OK && hls_copies.empty()) {
        log(ctx, 1, cat("the Tucker TTMc runs on F-COO: ", why));
      } else if (status == SPT_OK) {
        for (const DeviceHls& c : hls_copies) hls_raw.push_back(c.get());
        log(ctx, 1, cat("Tucker-HOOI on HLS on the GPU (TTMc in EXACT precision, one copy per mode, ", bytes,
                        " bytes)"));
      } else if (status == SPT_ERR_UNSUPPORTED || status == SPT_ERR_OUT_OF_MEMORY) {
        log(ctx, 1,
            cat("note: the Tucker TTMc runs on F-COO: ",
                status == SPT_ERR_OUT_OF_MEMORY ? "the HLS copies do not fit the CUDA device" : "HLS cannot hold it",
                " (", why, ")"));
      } else {
        return tucker_device_failed(ctx, status, why);
      }
    }
  }
  // Else one F-COO per mode, partitions cut by the threadlen rule for that
  // mode's output row (P_n values).
  std::vector<DeviceFcoo> copies;
  std::vector<const spt_plugin_device_fcoo*> raw;
  if (hls_raw.empty()) {
    const int sms = ctx.device < static_cast<int>(cuda.devices.size()) ? cuda.devices[ctx.device].multiprocessors : 0;
    copies.resize(order);
    raw.resize(order);
    uint64_t bytes = 0;
    for (uint32_t m = 0; m < order; ++m) {
      const uint32_t threadlen = fcoo::suggested_threadlen(x.nnz, columns[m] * sizeof(T), sms);
      const spt_fcoo_s f = fcoo::from_coo(x, SPT_FCOO_MTTKRP, m, threadlen, thread_count(ctx));
      bytes += f.bytes();
      std::string message;
      const int status = detail::upload_fcoo_copy(cuda, ctx.device, f, copies[m], message);
      if (status == SPT_ERR_UNSUPPORTED) return tucker_unsupported(ctx, message);
      if (status != SPT_OK) return tucker_device_failed(ctx, status, message);
      raw[m] = copies[m].get();
    }
    log(ctx, 1, cat("Tucker-HOOI on F-COO on the GPU (one copy per mode, ", bytes, " bytes)"));
  }
  std::vector<spt_plugin_matrix> f(order);
  for (uint32_t m = 0; m < order; ++m) f[m] = {factors[m].data, factors[m].rows, factors[m].cols, factors[m].ld};
  TuckerHookState state;
  state.on_sweep = &on_sweep;
  state.ctx = &ctx;
  const std::vector<uint32_t> plugin_ranks(ranks.begin(), ranks.end());
  spt_plugin_tucker_args args{};
  args.ranks = plugin_ranks.data();
  args.max_iters = max_iters;
  args.factors = f.data();
  args.core = core;
  args.hook_data = &state;
  args.on_sweep = tucker_on_sweep;
  args.note = tucker_note;
  char buffer[1024] = {0};
  const int status = !hls_raw.empty()
                         ? cuda.table->tucker_hooi_hls(hls_raw.data(), order, &args, buffer, sizeof buffer)
                         : cuda.table->tucker_hooi_fcoo(raw.data(), order, &args, buffer, sizeof buffer);
  if (state.error) std::rethrow_exception(state.error);
  if (status == SPT_OK) return true;
  if (status == SPT_ERR_NUMERICAL) fail(SPT_ERR_NUMERICAL, buffer);
  if (status == SPT_ERR_UNSUPPORTED) return tucker_unsupported(ctx, buffer);
  if (status == SPT_ERR_INVALID_ARGUMENT)
    fail(SPT_ERR_INTERNAL, "the CUDA plugin rejected Tucker-HOOI arguments: ", buffer);
  return tucker_device_failed(ctx, status, buffer);
}

}  // namespace

bool DeviceKernels::tucker_prefers_cpu(const std::vector<spt_index>& dims, spt_nnz nnz,
                                       const std::vector<spt_index>& ranks, int threads) {
  const size_t order = dims.size();
  double work = 0.0;
  for (size_t n = 0; n < order; ++n) {
    double p = 1.0;
    for (size_t m = 0; m < order; ++m)
      if (m != n) p *= static_cast<double>(ranks[m]);
    const double i = static_cast<double>(dims[n]);
    work += static_cast<double>(nnz) * p + std::min(i, p) * std::min(i, p) * std::max(i, p);
  }
  return work <= 8388608.0 * std::max(threads, 1);  // 2^23 per thread
}

bool DeviceKernels::tucker_hooi(const spt_context_s& ctx, const spt_coo_s& x, const std::vector<spt_index>& ranks,
                                int max_iters, const std::vector<MatRef<float>>& factors, float* core,
                                const TuckerSweepHook& on_sweep) {
  return tucker_on_device<float>(ctx, x, ranks, max_iters, factors, core, on_sweep);
}

bool DeviceKernels::tucker_hooi(const spt_context_s& ctx, const spt_coo_s& x, const std::vector<spt_index>& ranks,
                                int max_iters, const std::vector<MatRef<double>>& factors, double* core,
                                const TuckerSweepHook& on_sweep) {
  return tucker_on_device<double>(ctx, x, ranks, max_iters, factors, core, on_sweep);
}

}  // namespace spt::dispatch
