// The GPU SpTTM family as the dispatcher sees it (DeviceKernels::ttm and
// ::scoo_ttm, declared from the kernel list in device.hpp): the host prepares exactly
// what the CPU kernels prepare (src/kernels/cpu/ttm.cpp, ttm_chain.cpp) -
// the mode-n fibers (sorted copy unless pre-sorted) or the SsTTM groups,
// and the output shell (same fibers, order, dims, dense modes,
// fiber_order) - and the plugin computes the values (ttm_fibers /
// scoo_ttm, family TTM of plugin_abi.h). Operands are copied per call; nothing
// is cached on the tensors (an SpTTM reads each nonzero once, so a cached
// copy would only pay off across repeated TTMs of one tensor in one mode).
//
// AUTO's size rule: a problem with fewer than 2^16 multiply-adds (nnz * R
// for SpTTM, nfibers * block * R for SsTTM) runs on the CPU (a verbose
// note): a GPU call costs a few copies, launches and a synchronisation
// (tens of microseconds) while the CPU does 2^16 multiply-adds in about as
// long. Backend CUDA forced always runs on the device.
#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/scoo.hpp"
#include "dispatch/device.hpp"
#include "dispatch/device_common.hpp"
#include "dispatch/dispatch.hpp"
#include "dispatch/plugin_loader.hpp"
#include "core/sort.hpp"
#include "kernels/ttm_fibers.hpp"
#include "kernels/ttm_chain.hpp"

namespace spt::dispatch {

namespace {

using detail::device_failed;

constexpr uint64_t kSmallTtmWork = uint64_t(1) << 16;

template <typename T>
int plugin_dtype() {
  return sizeof(T) == sizeof(float) ? SPT_PLUGIN_FLOAT32 : SPT_PLUGIN_FLOAT64;
}

// Saturating a * b (the rule only compares against a small bound).
uint64_t work_of(uint64_t a, uint64_t b) {
  uint64_t w = 0;
  return __builtin_mul_overflow(a, b, &w) ? UINT64_MAX : w;
}

// The plugin's answer: OK = ran; UNSUPPORTED = no GPU kernel for this
// input (CPU, verbose note, as any kernel without a device version);
// anything else = device_failed's policy.
bool plugin_outcome(const spt_context_s& ctx, const char* kernel, int status, const char* message) {
  if (status == SPT_OK) return true;
  if (status == SPT_ERR_UNSUPPORTED) {
    log(ctx, 2, cat("note: ", kernel, " runs on the CPU: ", message));
    return false;
  }
  return device_failed(ctx, kernel, status, message);
}

template <typename T>
bool ttm_on_device(const spt_context_s& ctx, const spt_coo_s& x, uint32_t mode, ConstMatRef<T> u, spt_scoo_s& out) {
  const char* kernel = "SpTTM";
  const uint32_t order = x.order();
  // Arguments the CPU kernel would take differently are its to handle.
  if (mode >= order || x.dtype() != dtype_of<T>() || u.rows != x.dims[mode] || u.cols == 0 ||
      u.cols > UINT32_MAX)
    return false;
  const spt_nnz rank = u.cols;
  if (ctx.backend == SPT_BACKEND_AUTO && work_of(x.nnz, rank) < kSmallTtmWork) {
    log(ctx, 2,
        cat("note: ", kernel, " runs on the CPU: a small problem (", x.nnz, " nonzeros x rank ", rank,
            " < 2^16 multiply-adds); backend CUDA forces the GPU"));
    return false;
  }
  const CudaPlugin& cuda = cuda_plugin();
  if (!cuda.usable()) return device_failed(ctx, kernel, SPT_ERR_DEVICE, cuda.reason);
  if (!cuda.table->ttm_fibers) return device_failed(ctx, kernel, SPT_ERR_DEVICE, "the CUDA plugin has no ttm_fibers");

  // The fibers exactly as the CPU kernel finds them (src/kernels/ttm_fibers.hpp).
  const kernels::Exec exec = exec_for(ctx);
  const kernels::TtmFibers grouped(exec, x, mode);
  kernels::ttm_result_shell(exec, grouped, x, mode, rank, out);
  const spt_coo_s& s = grouped.sorted();
  const buffer<spt_nnz>& fiber_ptr = grouped.starts();
  const spt_nnz fibers = grouped.count();
  if (fibers == 0) return true;

  spt_plugin_ttm_fibers view{};
  view.dtype = plugin_dtype<T>();
  view.nnz = s.nnz;
  view.nfibers = fibers;
  view.fiber_ptr = fiber_ptr.data();
  view.ind = s.ind[mode];
  view.values = s.val;
  const spt_plugin_matrix um{const_cast<T*>(u.data), u.rows, u.cols, u.ld};
  spt_plugin_matrix om{out.values.get<T>().data(), fibers, rank, rank};
  spt_plugin_ttm_launch launch{};
  launch.variant = ctx.gpu_ttm_variant;
  char buffer[512] = {0};
  const int status = cuda.table->ttm_fibers(ctx.device, &view, &um, &om, &launch, buffer, sizeof buffer);
  if (status == SPT_OK)
    log(ctx, 2, cat("SpTTM in mode ", mode, " on the GPU: ", fibers, " fibers, rank ", rank, ", kernel variant ",
                    launch.variant_used));
  return plugin_outcome(ctx, kernel, status, buffer);
}

template <typename T>
bool scoo_ttm_on_device(const spt_context_s& ctx, const spt_scoo_s& y, uint32_t mode, ConstMatRef<T> u,
                        spt_scoo_s& out) {
  const char* kernel = "SsTTM";
  // Same checks (and errors) as the CPU kernel.
  const kernels::ScooTtmShape shape = kernels::scoo_ttm_shape(y, mode, u);
  const spt_nnz n = y.nfibers;
  if (ctx.backend == SPT_BACKEND_AUTO && work_of(work_of(n, shape.in_block), shape.rank) < kSmallTtmWork) {
    log(ctx, 2,
        cat("note: ", kernel, " runs on the CPU: a small problem (", n, " fibers of ", shape.in_block,
            " values x rank ", shape.rank, " < 2^16 multiply-adds); backend CUDA forces the GPU"));
    return false;
  }
  const CudaPlugin& cuda = cuda_plugin();
  if (!cuda.usable()) return device_failed(ctx, kernel, SPT_ERR_DEVICE, cuda.reason);
  if (!cuda.table->scoo_ttm) return device_failed(ctx, kernel, SPT_ERR_DEVICE, "the CUDA plugin has no scoo_ttm");

  // The groups exactly as the CPU kernel finds them (src/kernels/ttm_fibers.hpp).
  const kernels::Exec exec = exec_for(ctx);
  const kernels::ScooTtmGroups grouped = kernels::scoo_ttm_groups(exec, y, mode);
  kernels::scoo_ttm_result_shell(exec, grouped, y, shape, out);
  const spt_nnz groups = grouped.count();
  const buffer<spt_nnz>& starts = grouped.starts;
  if (groups == 0) return true;

  spt_plugin_scoo_groups view{};
  view.dtype = plugin_dtype<T>();
  view.nfibers = n;
  view.ngroups = groups;
  view.a_len = shape.a_len;
  view.b_len = shape.b_len;
  view.group_ptr = starts.data();
  view.perm = grouped.perm.empty() ? nullptr : grouped.perm.data();
  view.ind = y.ind[mode].data();
  view.values = y.values.get<T>().data();
  const spt_plugin_matrix um{const_cast<T*>(u.data), u.rows, u.cols, u.ld};
  spt_plugin_matrix om{out.values.get<T>().data(), groups, shape.out_block, shape.out_block};
  char buffer[512] = {0};
  const int status = cuda.table->scoo_ttm(ctx.device, &view, &um, &om, nullptr, buffer, sizeof buffer);
  return plugin_outcome(ctx, kernel, status, buffer);
}

}  // namespace

bool DeviceKernels::ttm(const spt_context_s& ctx, const spt_coo_s& x, uint32_t mode, ConstMatRef<float> u,
                        spt_scoo_s& out) {
  return ttm_on_device<float>(ctx, x, mode, u, out);
}

bool DeviceKernels::ttm(const spt_context_s& ctx, const spt_coo_s& x, uint32_t mode, ConstMatRef<double> u,
                        spt_scoo_s& out) {
  return ttm_on_device<double>(ctx, x, mode, u, out);
}

bool DeviceKernels::scoo_ttm(const spt_context_s& ctx, const spt_scoo_s& y, uint32_t mode, ConstMatRef<float> u,
                             spt_scoo_s& out) {
  return scoo_ttm_on_device<float>(ctx, y, mode, u, out);
}

bool DeviceKernels::scoo_ttm(const spt_context_s& ctx, const spt_scoo_s& y, uint32_t mode, ConstMatRef<double> u,
                             spt_scoo_s& out) {
  return scoo_ttm_on_device<double>(ctx, y, mode, u, out);
}

}  // namespace spt::dispatch
