#include "dispatch/multi_device.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/group_starts.hpp"
#include "dispatch/device_common.hpp"
#include "dispatch/dispatch.hpp"

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


// How the nonzeros go to n devices: device i takes nonzeros [begin[i],
// begin[i + 1]) of *x (the given tensor, or `copy`, which holds them
// grouped by device). With a local mode (cp_group_create's local_mode and
// local_rows) the copy's rows of that mode are renumbered so that device i
// owns [local_rows[i], local_rows[i + 1]) (LocalRows); without one, the
// devices take equal ranges of the given tensor.
struct NonzeroSplit {
  const spt_coo_s* x = nullptr;
  std::vector<spt_nnz> begin;
  int32_t local_mode = -1;
  std::vector<uint64_t> local_rows;
  std::unique_ptr<spt_coo_s> copy;
};

// The local mode's rows are dealt to the n devices in turn (row r to
// device r mod n, where it becomes row local_rows[r mod n] + r / n): heavy
// and light rows mix on every device, so the devices' nonzeros, rows and
// MTTKRP times come out about equal even when the rows' sizes follow a
// power law (contiguous row ranges left the device of the light rows the
// slowest).
struct LocalRows {
  uint64_t devices = 1;
  std::vector<uint64_t> first;  // per device, and dims at the end

  LocalRows(uint64_t rows, uint64_t n) : devices(n) {
    for (uint64_t d = 0; d <= n; ++d) first.push_back(d == 0 ? 0 : first.back() + (rows + n - d) / n);
  }
  uint64_t device_of(uint64_t r) const { return r % devices; }
  uint64_t renumbered(uint64_t r) const { return first[r % devices] + r / devices; }
};

// x's nonzeros into split.copy grouped by device (stable within a device),
// device d's those whose `mode` row rows.device_of() deals to d, that
// row renumbered: a counting pass and a scatter, each over `threads`
// threads.
void group_by_rows(const spt_coo_s& x, uint32_t mode, const LocalRows& rows, int threads, NonzeroSplit& split) {
  const size_t n = rows.devices;
  const uint32_t order = x.order();
  const size_t value_size = dtype_size(x.dtype());
  const spt_index* key = x.ind[mode];
  threads = std::max(1, threads);
  // counts[t * n + d]: nonzeros of thread t's chunk on device d, then where
  // thread t writes its first one of device d.
  std::vector<spt_nnz> counts(size_t(threads) * n, 0);
  auto chunk = [&](int t) {
    return std::make_pair(sorting::chunk_begin(x.nnz, t, threads), sorting::chunk_begin(x.nnz, t + 1, threads));
  };
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int t = 0; t < threads; ++t) {
    const auto [lo, hi] = chunk(t);
    for (spt_nnz k = lo; k < hi; ++k) ++counts[size_t(t) * n + rows.device_of(key[k])];
  }
  split.begin.assign(n + 1, 0);
  spt_nnz at = 0;
  for (size_t d = 0; d < n; ++d) {
    split.begin[d] = at;
    for (int t = 0; t < threads; ++t) {
      const spt_nnz c = counts[size_t(t) * n + d];
      counts[size_t(t) * n + d] = at;
      at += c;
    }
  }
  split.begin[n] = at;
  split.copy = std::make_unique<spt_coo_s>();
  spt_coo_s& copy = *split.copy;
  copy.init_owned(x.dtype(), x.dims, x.nnz);
  std::vector<spt_index*> out_ind(order);
  for (uint32_t m = 0; m < order; ++m) out_ind[m] = copy.mutable_ind(m);
  char* out_val = static_cast<char*>(const_cast<void*>(copy.val));
  const char* in_val = static_cast<const char*>(x.val);
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int t = 0; t < threads; ++t) {
    const auto [lo, hi] = chunk(t);
    spt_nnz* next = &counts[size_t(t) * n];
    for (spt_nnz k = lo; k < hi; ++k) {
      const spt_nnz to = next[rows.device_of(key[k])]++;
      for (uint32_t m = 0; m < order; ++m)
        out_ind[m][to] = m == mode ? static_cast<spt_index>(rows.renumbered(key[k])) : x.ind[m][k];
      std::memcpy(out_val + to * value_size, in_val + k * value_size, value_size);
    }
  }
  split.x = &copy;
}

// The local mode is the largest (the most rows not to exchange); equal
// ranges of x without one when a device would get no nonzero of it.
NonzeroSplit split_nonzeros(const spt_context_s& ctx, const spt_coo_s& x, size_t n) {
  uint32_t mode = 0;
  for (uint32_t m = 1; m < x.order(); ++m)
    if (x.dims[m] > x.dims[mode]) mode = m;
  const auto equal_ranges = [&] {
    NonzeroSplit equal;
    equal.x = &x;
    for (size_t i = 0; i <= n; ++i)  // [nnz * i / n, nnz * (i + 1) / n)
      equal.begin.push_back(sorting::chunk_begin(x.nnz, static_cast<int>(i), static_cast<int>(n)));
    return equal;
  };
  NonzeroSplit s;
  const LocalRows rows(x.dims[mode], n);
  // Without host memory for the grouped copy, equal ranges need none.
  const auto no_copy = [&](const std::string& why) {
    log(ctx, 1, cat("note: the nonzeros are not grouped by device (", why, "); the devices take equal ranges of them"));
    return equal_ranges();
  };
  try {
    group_by_rows(x, mode, rows, exec_for(ctx).threads, s);
  } catch (const std::bad_alloc&) {
    return no_copy("out of host memory");
  } catch (const Error& e) {
    if (e.code() != SPT_ERR_OUT_OF_MEMORY) throw;
    return no_copy(e.what());
  }
  bool every_device = true;
  for (size_t i = 0; i < n; ++i) every_device = every_device && s.begin[i] < s.begin[i + 1];
  if (!every_device) return equal_ranges();
  s.local_mode = static_cast<int32_t>(mode);
  s.local_rows = rows.first;
  return s;
}

// The CP-ALS steps on several devices: session i runs on devices_[i] over
// its range of nonzeros and its share of every mode's rows; every step runs
// on every session (plugin_abi.h, MULTI_DEVICE). A factor's rows reach the
// other sessions (all-gather) just before they are read: before each
// MTTKRP, the Gram's sum and the exact inner product, and before the lead
// hands back the result.
template <typename T>
class MultiDeviceCpAlsSteps final : public CpAlsSteps<T>, private detail::PluginStepCalls {
 public:
  MultiDeviceCpAlsSteps(const spt_context_s& ctx, const CudaPlugin& cuda, uint32_t order, spt_index rank,
                        std::vector<int> devices)
      : ctx_(ctx), cuda_(cuda), order_(order), rank_(rank), devices_(std::move(devices)), stale_(order, false),
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
  // default search); local_mode (-1: none) and local_rows as
  // cp_group_create takes them.
  void join(const std::string& nccl_library, int32_t local_mode, const std::vector<uint64_t>& local_rows) {
    spt_plugin_cp_group* raw = nullptr;
    check(cuda_.table->cp_group_create(sessions_.data(), static_cast<uint32_t>(sessions_.size()),
                                       nccl_library.c_str(), local_mode,
                                       local_mode >= 0 ? local_rows.data() : nullptr, &raw, buffer_, sizeof buffer_));
    group_ = raw;
    local_mode_ = local_mode;
    if (local_mode >= 0) local_rows_ = LocalRows(local_rows.back(), sessions_.size());
  }

  const char* name() const override { return name_.c_str(); }
  const char* solver_library() const override { return "cuSOLVER"; }

  void start(spt_ktensor_s& k) override {
    std::vector<spt_plugin_matrix> factors = detail::plugin_factor_views<T>(k);
    if (local_mode_ >= 0) {  // the local mode's rows in the devices' numbering
      const MatRef<T> f = k.template factor<T>(static_cast<uint32_t>(local_mode_));
      local_factor_.resize(size_t(f.rows) * f.cols);
      for (spt_nnz r = 0; r < f.rows; ++r)
        std::copy(f.data + r * f.ld, f.data + r * f.ld + f.cols, &local_factor_[local_rows_.renumbered(r) * f.cols]);
      factors[local_mode_] = {local_factor_.data(), f.rows, f.cols, f.cols};
    }
    for (spt_plugin_cp_session* s : sessions_)
      check(cuda_.table->cp_set_factors(s, factors.data(), buffer_, sizeof buffer_));
    stale_.assign(order_, false);
  }
  void mttkrp(uint32_t mode) override {
    bring_up_to_date();
    check(cuda_.table->cp_group_mttkrp(group_, mode, buffer_, sizeof buffer_));
  }
  CpAlsNormalInfo normal_matrix(uint32_t mode) override {
    spt_plugin_cp_normal_info info{};
    check(cuda_.table->cp_group_normal_matrix(group_, mode, &info, buffer_, sizeof buffer_));
    return {info.non_finite != 0, info.cholesky_info, info.anorm, info.rcond};
  }
  void solve_cholesky(uint32_t mode) override {
    int eigen_info = 0;
    stale_[mode] = true;
    check(cuda_.table->cp_group_solve(group_, mode, SPT_PLUGIN_CP_SOLVE_CHOLESKY, &eigen_info, buffer_,
                                      sizeof buffer_));
  }
  int solve_pseudo_inverse(uint32_t mode) override {
    int eigen_info = 0;
    stale_[mode] = true;
    check(cuda_.table->cp_group_solve(group_, mode, SPT_PLUGIN_CP_SOLVE_PSEUDO_INVERSE, &eigen_info, buffer_,
                                      sizeof buffer_));
    return eigen_info;
  }
  void normalise(uint32_t mode, bool first_sweep) override {
    stale_[mode] = true;
    check(cuda_.table->cp_group_normalise(group_, mode, first_sweep ? 1 : 0, buffer_, sizeof buffer_));
  }
  int non_finite_component(uint32_t mode) override {
    // Every session holds the same lambda and so the same flags.
    int32_t component = -1;
    check(cuda_.table->cp_non_finite(lead(), mode, &component, buffer_, sizeof buffer_));
    return component;
  }
  void gram(uint32_t mode) override {
    // The new rows go out first: one communicator's collectives run in the
    // order they are queued, so the Grams' sum queued after the gather
    // overlaps the next MTTKRP instead of delaying the gather it reads.
    bring_up_to_date();
    check(cuda_.table->cp_group_gram(group_, mode, buffer_, sizeof buffer_));
  }
  CpAlsFitTerms fit_terms() override {
    spt_plugin_cp_fit_terms terms{};
    check(cuda_.table->cp_group_fit_terms(group_, &terms, buffer_, sizeof buffer_));
    return {terms.inner, terms.norm_model_squared, terms.inner_error};
  }
  std::optional<double> exact_inner() override {
    // Each device sums over its nonzeros; the sums are added in device
    // order (in double).
    bring_up_to_date();
    double total = 0.0;
    check(cuda_.table->cp_group_exact_inner(group_, &total, buffer_, sizeof buffer_));
    return total;
  }
  void finish(spt_ktensor_s& k) override {
    bring_up_to_date();
    if (local_mode_ >= 0 && stale_[local_mode_]) {  // its rows to the lead
      check(cuda_.table->cp_group_gather(group_, static_cast<uint32_t>(local_mode_), buffer_, sizeof buffer_));
      stale_[local_mode_] = false;
    }
    std::vector<spt_plugin_matrix> factors = detail::plugin_factor_views<T>(k);
    MatRef<T> local{};
    if (local_mode_ >= 0) {
      local = k.template factor<T>(static_cast<uint32_t>(local_mode_));
      local_factor_.resize(size_t(local.rows) * local.cols);
      factors[local_mode_] = {local_factor_.data(), local.rows, local.cols, local.cols};
    }
    check(cuda_.table->cp_get_factors(lead(), factors.data(), k.lambda.ptr<T>(), buffer_, sizeof buffer_));
    for (spt_nnz r = 0; local.data && r < local.rows; ++r) {  // back to the tensor's numbering
      const T* row = &local_factor_[local_rows_.renumbered(r) * local.cols];
      std::copy(row, row + local.cols, local.data + r * local.ld);
    }
    log_times();
  }

 private:
  spt_plugin_cp_session* lead() const { return sessions_.front(); }
  // Every factor changed since its last gather goes to every session (but
  // that of the local mode, whose rows no other session reads).
  void bring_up_to_date() {
    for (uint32_t m = 0; m < order_; ++m) {
      if (!stale_[m] || static_cast<int32_t>(m) == local_mode_) continue;
      check(cuda_.table->cp_group_gather(group_, m, buffer_, sizeof buffer_));
      stale_[m] = false;
    }
  }
  // Where the devices' time went (verbosity 1): each one's MTTKRPs and its
  // exchanges (waiting for the slowest device included), over the run.
  void log_times() {
    const size_t n = sessions_.size();
    std::vector<double> mttkrp(n), exchange(n);
    check(cuda_.table->cp_group_times(group_, mttkrp.data(), exchange.data(), static_cast<uint32_t>(n), buffer_,
                                      sizeof buffer_));
    std::string text;
    for (size_t i = 0; i < n; ++i) {
      char times[64];
      std::snprintf(times, sizeof times, " %.3f / %.3f", mttkrp[i], exchange[i]);
      text += cat(i ? "; " : "", "device ", devices_[i], times);
    }
    log(ctx_, 1, cat("CP-ALS on ", n, " GPUs, seconds in MTTKRPs / in exchanges per device: ", text));
  }

  const spt_context_s& ctx_;
  const CudaPlugin& cuda_;
  uint32_t order_;
  spt_index rank_;
  std::vector<int> devices_;
  std::vector<bool> stale_;  // per mode: some session's rows of the factor are not yet on the others
  std::string name_;
  std::vector<detail::CpAlsDeviceCopies> copies_;  // per session
  std::vector<spt_plugin_cp_session*> sessions_;
  spt_plugin_cp_group* group_ = nullptr;
  int32_t local_mode_ = -1;
  LocalRows local_rows_{1, 1};
  std::vector<T> local_factor_;  // the local mode's factor, rows renumbered (host)
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
    auto steps = std::make_unique<MultiDeviceCpAlsSteps<T>>(ctx, cuda, x.order(), opts.rank, devices);
    std::string ranges;
    const size_t n = devices.size();
    // Each device's copies are made from its share; a grouped host copy
    // (split.copy) goes when the shares are on the devices.
    const NonzeroSplit split = split_nonzeros(ctx, x, n);
    for (size_t i = 0; i < n; ++i) {
      const spt_nnz begin = split.begin[i], end = split.begin[i + 1];
      const spt_coo_s part = nonzero_range(*split.x, begin, end - begin);
      detail::CpAlsDeviceCopies copies;
      std::string message;
      if (const int status = detail::cp_als_device_copies(ctx, cuda, devices[i], part, opts, copies, message);
          status != SPT_OK)
        return one_device(cat("device ", devices[i], ": ", message));
      steps->add_session(std::move(copies));
      ranges += cat(i ? " / " : "", end - begin);
    }
    steps->join(ctx.nccl_library, split.local_mode, split.local_rows);
    log(ctx, 1,
        cat("CP-ALS on ", n, " GPUs (devices ", device_list(devices), "; ", collectives, "), nonzeros per device ",
            ranges,
            split.local_mode >= 0 ? cat("; mode ", split.local_mode, "'s rows split with the nonzeros")
                                  : std::string()));
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
