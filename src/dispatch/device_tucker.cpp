// The dispatcher's side of the GPU Tucker-HOOI (DeviceKernels::tucker_hooi,
// device.hpp): the AUTO size rule, one op-MTTKRP F-COO per mode built and
// uploaded for the call, the hooks handed to the plugin (cuda/tucker_hooi.cu)
// and the failure policy (AUTO: a note and the CPU loop; CUDA forced: an
// error).
#include <algorithm>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/fcoo.hpp"
#include "dispatch/device.hpp"
#include "dispatch/plugin_loader.hpp"

namespace spt::dispatch {

namespace {

using DeviceFcoo = std::shared_ptr<spt_plugin_device_fcoo>;

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

// The GPU cannot run this Tucker-HOOI (order, sizes): with CUDA forced an
// UNSUPPORTED error, under AUTO a note and the CPU.
bool tucker_unsupported(const spt_context_s& ctx, const std::string& why) {
  if (ctx.backend == SPT_BACKEND_CUDA)
    fail(SPT_ERR_UNSUPPORTED, "Tucker-HOOI on the CUDA backend: ", why,
         "; use backend AUTO or CPU to run it on the CPU");
  log(ctx, 1, cat("note: Tucker-HOOI runs on the CPU: ", why));
  return false;
}

// A device failure before or during the run: with CUDA forced an error
// (OUT_OF_MEMORY for memory, else DEVICE), under AUTO a note and the CPU.
bool tucker_device_failed(const spt_context_s& ctx, int status, const std::string& message) {
  const bool memory = status == SPT_ERR_OUT_OF_MEMORY;
  if (ctx.backend == SPT_BACKEND_CUDA) {
    if (memory)
      fail(SPT_ERR_OUT_OF_MEMORY, "CUDA Tucker-HOOI: the device is out of memory: ", message,
           "; use backend AUTO (falls back to the CPU) or CPU, or lower the ranks");
    fail(SPT_ERR_DEVICE, "CUDA Tucker-HOOI failed: ", message);
  }
  log(ctx, 1,
      cat("note: Tucker-HOOI runs on the CPU: ",
          memory ? "the CUDA device is out of memory" : "the CUDA device failed", " (", message, ")"));
  return false;
}

// Upload one F-COO (op MTTKRP) to `device`; the shared pointer releases it.
int upload_fcoo(const CudaPlugin& cuda, int device, const spt_fcoo_s& x, DeviceFcoo& out, std::string& message) {
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
  view.segment_rows = x.segment_ind[0].data();  // op MTTKRP: one index mode, the output row per segment
  view.output_rows = x.dims[x.mode];
  view.mttkrp_mode = static_cast<int32_t>(x.mode);
  spt_plugin_device_fcoo* raw = nullptr;
  char buffer[512] = {0};
  const int status = cuda.table->fcoo_upload(device, &view, &raw, buffer, sizeof buffer);
  if (status != SPT_OK) {
    message = buffer;
    return status;
  }
  const spt_plugin_table* table = cuda.table;
  out = DeviceFcoo(raw, [table](spt_plugin_device_fcoo* p) { table->fcoo_release(p); });
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
  // One F-COO per mode, partitions cut by the threadlen rule for that
  // mode's output row (P_n values).
  const int sms = ctx.device < static_cast<int>(cuda.devices.size()) ? cuda.devices[ctx.device].multiprocessors : 0;
  std::vector<DeviceFcoo> copies(order);
  std::vector<const spt_plugin_device_fcoo*> raw(order);
  uint64_t bytes = 0;
  for (uint32_t m = 0; m < order; ++m) {
    const uint32_t threadlen = fcoo::suggested_threadlen(x.nnz, columns[m] * sizeof(T), sms);
    const spt_fcoo_s f = fcoo::from_coo(x, SPT_FCOO_MTTKRP, m, threadlen, thread_count(ctx));
    bytes += f.bytes();
    std::string message;
    const int status = upload_fcoo(cuda, ctx.device, f, copies[m], message);
    if (status == SPT_ERR_UNSUPPORTED) return tucker_unsupported(ctx, message);
    if (status != SPT_OK) return tucker_device_failed(ctx, status, message);
    raw[m] = copies[m].get();
  }
  log(ctx, 1, cat("Tucker-HOOI on F-COO on the GPU (one copy per mode, ", bytes, " bytes)"));
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
  const int status = cuda.table->tucker_hooi_fcoo(raw.data(), order, &args, buffer, sizeof buffer);
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
