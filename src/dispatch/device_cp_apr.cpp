// The dispatcher's side of the GPU CP-APR (make_device_cp_apr_steps,
// cp_apr_steps.hpp): every mode's nonzeros grouped by that mode's index
// (core/mode_groups.hpp, the CPU's COO groups in the same order) handed to
// a plugin session (family CP_APR_STEPS) that holds the run's working set
// on the device, one table call per step, and the failure policy (AUTO: a
// note and the host steps; CUDA forced: an error).
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/mode_groups.hpp"
#include "dispatch/cp_apr_steps.hpp"
#include "dispatch/device.hpp"
#include "dispatch/device_common.hpp"
#include "dispatch/plugin_loader.hpp"

namespace spt::dispatch {

namespace {

constexpr const char* kAlgorithm = "CP-APR";

bool cp_apr_unsupported(const spt_context_s& ctx, const std::string& why) {
  return detail::whole_run_unsupported(ctx, kAlgorithm, why);
}

bool cp_apr_device_failed(const spt_context_s& ctx, int status, const std::string& message) {
  return detail::whole_run_device_failed(ctx, kAlgorithm, status, message, "a smaller problem");
}

// The CP-APR steps on the device: each step is one table call on the
// session, which owns every device array of the run.
template <typename T>
class DeviceCpAprSteps final : public CpAprSteps<T>, private detail::PluginStepCalls {
 public:
  DeviceCpAprSteps(const CudaPlugin& cuda, int device, const spt_coo_s& x, spt_index rank,
                   const std::vector<ModeGroups>& groups)
      : cuda_(cuda) {
    const uint32_t order = x.order();
    // The plugin copies the groups; the views only live for this call.
    std::vector<uint32_t> dims(x.dims.begin(), x.dims.end());
    std::vector<std::vector<const uint32_t*>> ind(order);
    std::vector<spt_plugin_cp_apr_groups> views(order);
    static_assert(sizeof(spt_nnz) == sizeof(uint64_t), "row_ptr is passed as uint64_t");
    static_assert(sizeof(spt_index) == sizeof(uint32_t), "indices are passed as uint32_t");
    for (uint32_t n = 0; n < order; ++n) {
      for (uint32_t m = 0; m < order; ++m) ind[n].push_back(m == n ? nullptr : groups[n].ind[m].data());
      views[n].rows = x.dims[n];
      views[n].row_ptr = reinterpret_cast<const uint64_t*>(groups[n].row_ptr.data());
      views[n].ind = ind[n].data();
      views[n].values = groups[n].val.data();
    }
    const int dtype = x.dtype() == SPT_FLOAT32 ? SPT_PLUGIN_FLOAT32 : SPT_PLUGIN_FLOAT64;
    spt_plugin_cp_apr_session* raw = nullptr;
    check(cuda_.table->cp_apr_session_create(device, dtype, order, dims.data(), x.nnz, static_cast<uint32_t>(rank),
                                             views.data(), &raw, buffer_, sizeof buffer_));
    session_ = raw;
  }
  ~DeviceCpAprSteps() override { cuda_.table->cp_apr_session_release(session_); }
  DeviceCpAprSteps(const DeviceCpAprSteps&) = delete;
  DeviceCpAprSteps& operator=(const DeviceCpAprSteps&) = delete;

  const char* name() const override { return "COO groups, cuda"; }
  void start(spt_ktensor_s& k) override {
    const std::vector<spt_plugin_matrix> factors = detail::plugin_factor_views<T>(k);
    check(cuda_.table->cp_apr_set_factors(session_, factors.data(), buffer_, sizeof buffer_));
  }
  void normalise(uint32_t mode) override {
    check(cuda_.table->cp_apr_normalise(session_, mode, buffer_, sizeof buffer_));
  }
  void scooch(uint32_t mode, double kappa, double kappatol) override {
    check(cuda_.table->cp_apr_scooch(session_, mode, kappa, kappatol, buffer_, sizeof buffer_));
  }
  void redistribute(uint32_t mode) override {
    check(cuda_.table->cp_apr_redistribute(session_, mode, buffer_, sizeof buffer_));
  }
  void phi(uint32_t mode, double eps) override {
    check(cuda_.table->cp_apr_phi(session_, mode, eps, buffer_, sizeof buffer_));
  }
  double kkt_violation(uint32_t mode) override {
    double violation = 0.0;
    check(cuda_.table->cp_apr_kkt_violation(session_, mode, &violation, buffer_, sizeof buffer_));
    return violation;
  }
  void multiply(uint32_t mode) override {
    check(cuda_.table->cp_apr_multiply(session_, mode, buffer_, sizeof buffer_));
  }
  double loglikelihood() override {
    double ll = 0.0;
    check(cuda_.table->cp_apr_loglikelihood(session_, &ll, buffer_, sizeof buffer_));
    return ll;
  }
  void finish(spt_ktensor_s& k, std::vector<double>* lambda) override {
    std::vector<spt_plugin_matrix> factors = detail::plugin_factor_views<T>(k);
    lambda->assign(k.rank, 0.0);
    check(cuda_.table->cp_apr_get_factors(session_, factors.data(), lambda->data(), buffer_, sizeof buffer_));
  }

 private:
  const CudaPlugin& cuda_;
  spt_plugin_cp_apr_session* session_ = nullptr;
};

}  // namespace

void cp_apr_after_device_failure(const spt_context_s& ctx, const DeviceStepFailure& failure) {
  const int status = failure.status();
  if (status == SPT_ERR_UNSUPPORTED) {
    cp_apr_unsupported(ctx, failure.what());
    return;
  }
  if (status == SPT_ERR_INVALID_ARGUMENT)
    fail(SPT_ERR_INTERNAL, "the CUDA plugin rejected CP-APR arguments: ", failure.what());
  cp_apr_device_failed(ctx, status, failure.what());
}

bool cp_apr_prefers_cpu(const std::vector<spt_index>& dims, spt_nnz nnz, spt_index rank, int threads) {
  return cp_als_prefers_cpu(dims, nnz, rank, threads);
}

template <typename T>
std::unique_ptr<CpAprSteps<T>> make_device_cp_apr_steps(const spt_context_s& ctx, const spt_coo_s& x,
                                                        const spt_cp_apr_options& opts) {
  if (effective_backend(ctx) != SPT_BACKEND_CUDA) return nullptr;
  if (opts.format == SPT_TENSOR_FORMAT_HICOO) {
    cp_apr_unsupported(ctx, "the GPU CP-APR runs Phi on COO groups, and opts.format asks for HiCOO "
                            "(use SPT_TENSOR_FORMAT_COO or _AUTO)");
    return nullptr;
  }
  if (ctx.backend == SPT_BACKEND_AUTO && cp_apr_prefers_cpu(x.dims, x.nnz, opts.rank, thread_count(ctx))) {
    log(ctx, 1,
        cat("note: CP-APR runs on the CPU: the tensor is small (", x.nnz, " nonzeros, rank ", opts.rank,
            "), a GPU iteration would cost more than the CPU's; backend CUDA forces the GPU"));
    return nullptr;
  }
  const CudaPlugin& cuda = cuda_plugin();
  if (!cuda.usable()) return cp_apr_device_failed(ctx, SPT_ERR_DEVICE, cuda.reason), nullptr;
  const uint32_t order = x.order();
  // The grouped copies the CPU's COO path makes too (same order of the
  // nonzeros within a row, so the device Phi sums in the CPU's order).
  std::vector<ModeGroups> groups(order);
  for (uint32_t m = 0; m < order; ++m) groups[m] = group_by_mode(x, m);
  log(ctx, 1, cat("CP-APR on the GPU: Phi on COO groups (", order, " copies of ", x.nnz, " nonzeros)"));
  try {
    return std::make_unique<DeviceCpAprSteps<T>>(cuda, ctx.device, x, opts.rank, groups);
  } catch (const DeviceStepFailure& f) {
    cp_apr_after_device_failure(ctx, f);
    return nullptr;
  }
}

template std::unique_ptr<CpAprSteps<float>> make_device_cp_apr_steps<float>(const spt_context_s&, const spt_coo_s&,
                                                                            const spt_cp_apr_options&);
template std::unique_ptr<CpAprSteps<double>> make_device_cp_apr_steps<double>(const spt_context_s&,
                                                                              const spt_coo_s&,
                                                                              const spt_cp_apr_options&);

}  // namespace spt::dispatch
