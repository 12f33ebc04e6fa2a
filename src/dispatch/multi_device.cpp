#include "dispatch/multi_device.hpp"

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "dispatch/device_common.hpp"

namespace spt::dispatch {

std::vector<int> context_devices(const spt_context_s& ctx, const CudaPlugin& cuda) {
  if (!ctx.devices.empty()) return ctx.devices;
  std::vector<int> all;
  for (size_t d = 0; d < cuda.devices.size(); ++d) all.push_back(static_cast<int>(d));
  return all;
}

namespace {

// A read-only view of nonzeros [begin, begin + n) of x (x's arrays).
spt_coo_s nonzero_range(const spt_coo_s& x, spt_nnz begin, spt_nnz n) {
  spt_coo_s part;
  part.dims = x.dims;
  part.nnz = n;
  part.read_only = true;
  part.own_val.set_dtype(x.dtype());
  part.ind.resize(x.order());
  for (uint32_t m = 0; m < x.order(); ++m) part.ind[m] = x.ind[m] + begin;
  part.val = static_cast<const char*>(x.val) + begin * dtype_size(x.dtype());
  return part;
}

// The CP-ALS steps on several devices: session i runs on devices_[i] over
// its range of nonzeros; session 0 is the lead (module comment of
// multi_device.hpp). The factors of the other sessions are brought up to
// date (broadcast from the lead) just before they are read: before each
// MTTKRP, and with lambda before the exact inner product.
template <typename T>
class MultiDeviceCpAlsSteps final : public CpAlsSteps<T>, private detail::PluginStepCalls {
 public:
  MultiDeviceCpAlsSteps(const CudaPlugin& cuda, uint32_t order, spt_index rank, std::vector<int> devices)
      : cuda_(cuda), order_(order), rank_(rank), devices_(std::move(devices)), stale_(order, false),
        name_(cat("coo, cuda, ", devices_.size(), " devices")) {}
  ~MultiDeviceCpAlsSteps() override {
    if (group_) cuda_.table->cp_group_release(group_);
    for (spt_plugin_cp_session* s : sessions_) cuda_.table->cp_session_release(s);
  }
  MultiDeviceCpAlsSteps(const MultiDeviceCpAlsSteps&) = delete;
  MultiDeviceCpAlsSteps& operator=(const MultiDeviceCpAlsSteps&) = delete;

  // Session i on devices_[i] over `copies` (kept for the run), then the
  // group; throws DeviceStepFailure.
  void add_session(detail::CpAlsDeviceCopies copies) {
    std::vector<const spt_plugin_device_fcoo*> per_mode(order_, nullptr);
    for (uint32_t m = 0; m < order_ && m < copies.fcoo.size(); ++m) per_mode[m] = copies.fcoo[m].get();
    spt_plugin_cp_session* raw = nullptr;
    check(cuda_.table->cp_session_create(copies.coo.get(), per_mode.data(), order_, static_cast<uint32_t>(rank_),
                                         &raw, buffer_, sizeof buffer_));
    sessions_.push_back(raw);
    copies_.push_back(std::move(copies));
  }
  // Joins the sessions through the NCCL library `nccl_library` ("" = the
  // default search).
  void join(const std::string& nccl_library) {
    spt_plugin_cp_group* raw = nullptr;
    check(cuda_.table->cp_group_create(sessions_.data(), static_cast<uint32_t>(sessions_.size()),
                                       nccl_library.c_str(), &raw, buffer_, sizeof buffer_));
    group_ = raw;
  }

  const char* name() const override { return name_.c_str(); }
  const char* solver_library() const override { return "cuSOLVER"; }

  void start(spt_ktensor_s& k) override {
    const std::vector<spt_plugin_matrix> factors = detail::plugin_factor_views<T>(k);
    for (spt_plugin_cp_session* s : sessions_)
      check(cuda_.table->cp_set_factors(s, factors.data(), buffer_, sizeof buffer_));
    stale_.assign(order_, false);
    lambda_stale_ = false;
  }
  void mttkrp(uint32_t mode) override {
    bring_up_to_date(false);
    for (spt_plugin_cp_session* s : sessions_) check(cuda_.table->cp_mttkrp(s, mode, buffer_, sizeof buffer_));
    check(cuda_.table->cp_group_reduce_mttkrp(group_, mode, buffer_, sizeof buffer_));
  }
  CpAlsNormalInfo normal_matrix(uint32_t mode) override {
    spt_plugin_cp_normal_info info{};
    check(cuda_.table->cp_normal_matrix(lead(), mode, &info, buffer_, sizeof buffer_));
    return {info.non_finite != 0, info.cholesky_info, info.anorm, info.rcond};
  }
  void solve_cholesky(uint32_t mode) override {
    int eigen_info = 0;
    stale_[mode] = true;
    check(cuda_.table->cp_solve(lead(), mode, SPT_PLUGIN_CP_SOLVE_CHOLESKY, &eigen_info, buffer_, sizeof buffer_));
  }
  int solve_pseudo_inverse(uint32_t mode) override {
    int eigen_info = 0;
    stale_[mode] = true;
    check(cuda_.table->cp_solve(lead(), mode, SPT_PLUGIN_CP_SOLVE_PSEUDO_INVERSE, &eigen_info, buffer_,
                                sizeof buffer_));
    return eigen_info;
  }
  void normalise(uint32_t mode, bool first_sweep) override {
    stale_[mode] = true;
    lambda_stale_ = true;
    check(cuda_.table->cp_normalise(lead(), mode, first_sweep ? 1 : 0, buffer_, sizeof buffer_));
  }
  int non_finite_component(uint32_t mode) override {
    int32_t component = -1;
    check(cuda_.table->cp_non_finite(lead(), mode, &component, buffer_, sizeof buffer_));
    return component;
  }
  void gram(uint32_t mode) override { check(cuda_.table->cp_gram(lead(), mode, buffer_, sizeof buffer_)); }
  CpAlsFitTerms fit_terms() override {
    // The lead's MTTKRP output is the whole tensor's: its <X, M> is too.
    spt_plugin_cp_fit_terms terms{};
    check(cuda_.table->cp_fit_terms(lead(), &terms, buffer_, sizeof buffer_));
    return {terms.inner, terms.norm_model_squared, terms.inner_error};
  }
  std::optional<double> exact_inner() override {
    // Each device sums over its range; the ranges' sums are added in device
    // order (in double).
    bring_up_to_date(true);
    double total = 0.0;
    for (spt_plugin_cp_session* s : sessions_) {
      double inner = 0.0;
      check(cuda_.table->cp_exact_inner(s, &inner, buffer_, sizeof buffer_));
      total += inner;
    }
    return total;
  }
  void finish(spt_ktensor_s& k) override {
    std::vector<spt_plugin_matrix> factors = detail::plugin_factor_views<T>(k);
    check(cuda_.table->cp_get_factors(lead(), factors.data(), k.lambda.ptr<T>(), buffer_, sizeof buffer_));
  }

 private:
  spt_plugin_cp_session* lead() const { return sessions_.front(); }
  // The lead's factors changed since the last broadcast (and, when
  // with_lambda, its lambda) copied to the other sessions.
  void bring_up_to_date(bool with_lambda) {
    bool lambda_pending = with_lambda && lambda_stale_;
    for (uint32_t m = 0; m < order_; ++m) {
      if (!stale_[m]) continue;
      check(cuda_.table->cp_group_broadcast(group_, m, lambda_pending ? 1 : 0, buffer_, sizeof buffer_));
      stale_[m] = false;
      if (lambda_pending) lambda_stale_ = lambda_pending = false;
    }
    if (lambda_pending) {  // lambda alone changed: send it with factor 0
      check(cuda_.table->cp_group_broadcast(group_, 0, 1, buffer_, sizeof buffer_));
      lambda_stale_ = false;
    }
  }

  const CudaPlugin& cuda_;
  uint32_t order_;
  spt_index rank_;
  std::vector<int> devices_;
  std::vector<bool> stale_;  // per mode: the lead's factor differs from the others'
  bool lambda_stale_ = false;
  std::string name_;
  std::vector<detail::CpAlsDeviceCopies> copies_;  // per session
  std::vector<spt_plugin_cp_session*> sessions_;
  spt_plugin_cp_group* group_ = nullptr;
};

std::string device_list(const std::vector<int>& devices) {
  std::string s;
  for (int d : devices) s += cat(s.empty() ? "" : ", ", d);
  return s;
}

}  // namespace

template <typename T>
std::unique_ptr<CpAlsSteps<T>> make_multi_device_cp_als_steps(const spt_context_s& ctx, const spt_coo_s& x,
                                                              const spt_cpd_options& opts) {
  const CudaPlugin& cuda = cuda_plugin();
  std::vector<int> devices = context_devices(ctx, cuda);
  if (devices.size() < 2) return nullptr;
  const auto one_device = [&](const std::string& why) {
    log(ctx, 1, cat("note: CP-ALS runs on one GPU (device ", ctx.device, "): ", why));
    return nullptr;
  };
  if (opts.format != SPT_TENSOR_FORMAT_AUTO && opts.format != SPT_TENSOR_FORMAT_COO)
    return one_device("several GPUs run opts.format AUTO and COO only");
  if (x.nnz < devices.size()) return one_device(cat("the tensor has fewer nonzeros (", x.nnz, ") than devices"));
  if (ctx.devices.empty() && x.nnz < kMultiDeviceMinNnzPerDevice * devices.size()) {
    log(ctx, 2,
        cat("CP-ALS runs on one GPU: ", x.nnz, " nonzeros are too few to share among ", devices.size(),
            " devices (spt_context_set_devices chooses the devices)"));
    return nullptr;
  }
  for (int d : devices)
    if (d < 0 || d >= static_cast<int>(cuda.devices.size()))
      return one_device(cat("device ", d, " of the context's list does not exist"));
  char buffer[1024] = {0};
  if (cuda.table->collectives_available(ctx.nccl_library.c_str(), buffer, sizeof buffer) != SPT_OK)
    return one_device(buffer);
  const std::string collectives = buffer;
  try {
    auto steps = std::make_unique<MultiDeviceCpAlsSteps<T>>(cuda, x.order(), opts.rank, devices);
    std::string ranges;
    const size_t n = devices.size();
    for (size_t i = 0; i < n; ++i) {
      // Equal shares: nonzeros [nnz * i / n, nnz * (i + 1) / n).
      const spt_nnz begin = static_cast<spt_nnz>((static_cast<unsigned __int128>(x.nnz) * i) / n);
      const spt_nnz end = static_cast<spt_nnz>((static_cast<unsigned __int128>(x.nnz) * (i + 1)) / n);
      const spt_coo_s part = nonzero_range(x, begin, end - begin);
      detail::CpAlsDeviceCopies copies;
      std::string message;
      if (const int status = detail::cp_als_device_copies(ctx, cuda, devices[i], part, opts, copies, message);
          status != SPT_OK)
        return one_device(cat("device ", devices[i], ": ", message));
      steps->add_session(std::move(copies));
      ranges += cat(i ? " / " : "", end - begin);
    }
    steps->join(ctx.nccl_library);
    log(ctx, 1,
        cat("CP-ALS on ", n, " GPUs (devices ", device_list(devices), "; ", collectives, "), nonzeros per device ",
            ranges));
    return steps;
  } catch (const DeviceStepFailure& f) {
    return one_device(f.what());
  }
}

template std::unique_ptr<CpAlsSteps<float>> make_multi_device_cp_als_steps<float>(const spt_context_s&,
                                                                                  const spt_coo_s&,
                                                                                  const spt_cpd_options&);
template std::unique_ptr<CpAlsSteps<double>> make_multi_device_cp_als_steps<double>(const spt_context_s&,
                                                                                    const spt_coo_s&,
                                                                                    const spt_cpd_options&);

}  // namespace spt::dispatch
