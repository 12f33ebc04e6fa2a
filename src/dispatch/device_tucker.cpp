// The dispatcher's side of the GPU Tucker-HOOI (device_tucker_steps,
// tucker_steps.hpp): the AUTO size rule, the format of the per-mode TTMc
// copies (HLS for large enough orders-3/4 tensors with dense tiles; else
// chained TTMs on B-CSF / HB-CSF trees or F-COO, whichever the cost estimate
// prefers; spt_tucker_options.ttmc forces one), one copy per mode built and
// uploaded for the run, the plugin session whose steps (cuda/tucker_hooi.cuh)
// the driver calls, and the failure policy (AUTO: a note and the host steps;
// CUDA forced: an error).
//
// Chain or F-COO (issue 6; device_tucker.hpp declares the estimate). The
// F-COO TTMc forms the whole Kronecker row for every nonzero: nnz x P_n
// multiply-adds (P_n = prod_{m != n} R_m). The chained TTMc
// (cuda/ttmc_hbcsf.cuh) works on the HB-CSF rooted at n: per fiber segment
// it first contracts the leaf mode (bcsf_nnz x R_leaf), then forms one
// Kronecker row per segment (segments x P_n); the COO and CSL groups
// (slices of one nonzero, slices of singleton fibers) have no fiber to
// share and pay the F-COO price. Per mode
//   fcoo  = nnz P_n + 4 order nnz                (index bytes streamed)
//   chain = (coo_nnz + csl_nnz) (P_n + 4 order) + bcsf_nnz (R_leaf + 4)
//           + segments (P_n + 4 order)
// (a multiply-add weighted as one byte; the chain's per-segment row update
// counted like an F-COO product row although it is a read-modify-write of
// the output row, or an atomic add for split slices, when P_n > 512), and
// the whole run takes chain when the summed chain estimate is below
// kTuckerChainAdvantage (device_tucker.hpp; fitted on measured sweep
// times, docs/formats/gpu-format-choice.md) of the summed F-COO one: per unit of estimated work the chained
// kernel is slower than F-COO's flat stream, so it needs a 5x smaller
// estimate to win (bench_gpu_tucker records the estimates and each route's
// sweep time).
// The HB-CSF trees are built on the host for the estimate (default
// parameters, one per mode) and uploaded when chain wins; they are dropped
// when F-COO wins (an F-COO per mode is built then, as before).
// Why HLS: its TTMc in EXACT precision is several times faster than the
// F-COO TTMc on tensors with dense tiles (measurements: docs/formats/hls.md).
// EXACT (CUDA cores, no rounding) so that the GPU Tucker still matches the
// CPU's within the F-COO run's tolerances.
#include <algorithm>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/fcoo.hpp"
#include "core/hbcsf.hpp"
#include "core/hls.hpp"
#include "dispatch/device_common.hpp"
#include "dispatch/device_hls.hpp"
#include "dispatch/device_tucker.hpp"
#include "dispatch/device.hpp"
#include "dispatch/plugin_loader.hpp"
#include "dispatch/tucker_steps.hpp"

namespace spt::dispatch {

namespace {

using DeviceFcoo = std::shared_ptr<spt_plugin_device_fcoo>;
using DeviceHls = std::shared_ptr<spt_plugin_device_hls>;
using DeviceHbcsf = std::shared_ptr<spt_plugin_device_hbcsf>;

// The chained TTMc's range: the GPU B-CSF kernels' orders and the leaf
// rank the kernels stage in shared memory (cuda/ttmc_hbcsf.cuh,
// kHbcsfTtmcMaxLeafRank).
constexpr uint32_t kChainMinOrder = 3, kChainMaxOrder = 8;
constexpr spt_index kChainMaxLeafRank = 4096;

// Under auto, HLS only pays where it has dense tiles and enough work: it
// won where a good share of the tiles was dense, tied where none was, and
// lost on a small tensor even with every tile dense (the measurements:
// docs/formats/gpu-format-choice.md, "Tucker TTMc").
constexpr double kTuckerHlsMinDenseFraction = 0.05;
constexpr spt_nnz kTuckerHlsMinNnz = 100000;

// hls_if_dense: HLS when the auto rule's size and density allow, else
// by_cost; by_cost: chain or F-COO by the estimate (see the top).
enum class TtmcFormat { fcoo, hls_if_dense, hls, chain, by_cost };

// The format the per-mode TTMc copies take for the requested method
// (spt_tucker_options.ttmc): AUTO: HLS for orders 3 and 4, the HLS
// kernels' range, when the tensor is large and dense enough (see above),
// else, for orders 3..8, chain or F-COO by the cost estimate, F-COO for
// order 2; ONE_SHOT: F-COO; HLS, CHAIN: that format (the caller checked the
// order is in its range).
TtmcFormat tucker_ttmc_format(spt_tucker_ttmc method, uint32_t order) {
  switch (method) {
    case SPT_TUCKER_TTMC_ONE_SHOT: return TtmcFormat::fcoo;
    case SPT_TUCKER_TTMC_HLS: return TtmcFormat::hls;
    case SPT_TUCKER_TTMC_CHAIN: return TtmcFormat::chain;
    default: break;
  }
  if (order == 3 || order == 4) return TtmcFormat::hls_if_dense;
  return order >= kChainMinOrder && order <= kChainMaxOrder ? TtmcFormat::by_cost : TtmcFormat::fcoo;
}

// The HB-CSF trees of x, one rooted at each mode (default parameters).
std::vector<spt_hbcsf_s> hbcsf_per_mode(const spt_coo_s& x, int threads) {
  std::vector<spt_hbcsf_s> trees;
  trees.reserve(x.order());
  for (uint32_t n = 0; n < x.order(); ++n) trees.push_back(hbcsf::from_coo(x, n, hbcsf::Params{}, threads));
  return trees;
}

// Upload trees[n] for every mode (SPT_OK with `copies` filled, or the
// first failure's status with `why`; the copies made so far are freed).
int upload_hbcsf_per_mode(const spt_context_s& ctx, const CudaPlugin& cuda, const std::vector<spt_hbcsf_s>& trees,
                          std::vector<DeviceHbcsf>& copies, std::string& why) {
  copies.assign(trees.size(), nullptr);
  for (size_t n = 0; n < trees.size(); ++n) {
    const int status = detail::upload_hbcsf_copy(cuda, ctx.device, trees[n], copies[n], why);
    if (status != SPT_OK) {
      copies.clear();
      return status;
    }
  }
  return SPT_OK;
}

bool tucker_unsupported(const spt_context_s& ctx, const std::string& why) {
  return detail::whole_run_unsupported(ctx, "Tucker-HOOI", why);
}

bool tucker_device_failed(const spt_context_s& ctx, int status, const std::string& message) {
  return detail::whole_run_device_failed(ctx, "Tucker-HOOI", status, message, "lower the ranks");
}

using DeviceSession = std::unique_ptr<spt_plugin_tucker_session, void (*)(spt_plugin_tucker_session*)>;

// The steps of one run on a plugin session (tucker_steps.hpp). Holds the
// per-mode copies the session's TTMcs read; the session goes first.
template <typename T>
class DeviceTuckerSteps final : public TuckerSteps<T> {
 public:
  DeviceTuckerSteps(const spt_context_s& ctx, const CudaPlugin& cuda, std::vector<std::shared_ptr<void>> copies,
                    DeviceSession session)
      : ctx_(ctx), table_(*cuda.table), copies_(std::move(copies)), session_(std::move(session)) {}

  bool on_device() const override { return true; }
  void set_factor(uint32_t mode, ConstMatRef<T> u) override {
    const spt_plugin_matrix f{const_cast<T*>(u.data), u.rows, u.cols, u.ld};
    check(table_.tucker_set_factor(session_.get(), mode, &f, message_, sizeof message_));
  }
  void get_factor(uint32_t mode, MatRef<T> u) override {
    spt_plugin_matrix f{u.data, u.rows, u.cols, u.ld};
    check(table_.tucker_get_factor(session_.get(), mode, &f, message_, sizeof message_));
  }
  void ttmc(uint32_t mode) override { check(table_.tucker_ttmc(session_.get(), mode, message_, sizeof message_)); }
  void gram_vectors(uint32_t mode) override {
    check(table_.tucker_gram_vectors(session_.get(), mode, message_, sizeof message_));
  }
  void right_gram(uint32_t mode, T& smallest_kept, T& largest) override {
    double smallest = 0.0, large = 0.0;
    check(table_.tucker_right_gram(session_.get(), mode, &smallest, &large, message_, sizeof message_));
    smallest_kept = static_cast<T>(smallest);  // T values widened by the plugin: exact
    largest = static_cast<T>(large);
  }
  void right_vectors(uint32_t mode) override {
    check(table_.tucker_right_vectors(session_.get(), mode, message_, sizeof message_));
  }
  void svd_vectors(uint32_t mode) override {
    check(table_.tucker_svd_vectors(session_.get(), mode, message_, sizeof message_));
  }
  void fix_signs(uint32_t mode) override {
    check(table_.tucker_fix_signs(session_.get(), mode, message_, sizeof message_));
  }
  double core() override {
    double norm_core_squared = 0.0;
    check(table_.tucker_core(session_.get(), &norm_core_squared, message_, sizeof message_));
    return norm_core_squared;
  }
  void get_core(T* core) override { check(table_.tucker_get_core(session_.get(), core, message_, sizeof message_)); }

 private:
  // A failed step: NUMERICAL as the CPU's error; a rejected argument is
  // the dispatcher's bug; anything else the failure policy (AUTO: a note and
  // TuckerStepsFellBack; CUDA forced: an error).
  void check(int status) const {
    if (status == SPT_OK) return;
    if (status == SPT_ERR_NUMERICAL) fail(SPT_ERR_NUMERICAL, message_);
    if (status == SPT_ERR_INVALID_ARGUMENT)
      fail(SPT_ERR_INTERNAL, "the CUDA plugin rejected Tucker-HOOI arguments: ", message_);
    if (status == SPT_ERR_UNSUPPORTED) tucker_unsupported(ctx_, message_);
    else tucker_device_failed(ctx_, status, message_);
    throw TuckerStepsFellBack{};
  }

  const spt_context_s& ctx_;
  const spt_plugin_table& table_;
  std::vector<std::shared_ptr<void>> copies_;
  DeviceSession session_;
  mutable char message_[1024] = {0};
};


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
        return SPT_OK;  // no copies: the caller picks chain or F-COO
      }
    }
    h.precision = SPT_HLS_PRECISION_EXACT;  // what the plugin's tucker_session_hls runs
    bytes += h.bytes();
    const int status = upload_hls_copy(cuda, ctx.device, h, copies[n], why);
    if (status != SPT_OK) {
      copies.clear();  // frees the device memory before the F-COO copies are made
      return status;
    }
  }
  return SPT_OK;
}

// The body of device_tucker_steps; false (with `steps` empty) = the host.
template <typename T>
bool tucker_on_device(const spt_context_s& ctx, const spt_coo_s& x, const std::vector<spt_index>& ranks,
                      spt_tucker_ttmc method, std::unique_ptr<TuckerSteps<T>>& steps) {
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
  if (cuda.table->tucker_session_fcoo == nullptr)
    return tucker_device_failed(ctx, SPT_ERR_DEVICE, "the plugin has no tucker_session_fcoo");
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
  // env says otherwise); else, or on an HLS failure listed in
  // upload_hls_per_mode, chain (forced, or preferred by the estimate under
  // auto) or one F-COO per mode.
  std::vector<DeviceHls> hls_copies;
  std::vector<const spt_plugin_device_hls*> hls_raw;
  if (method == SPT_TUCKER_TTMC_HLS && order != 3 && order != 4)
    return tucker_unsupported(
        ctx, cat("SPT_TUCKER_TTMC_HLS: order ", order, " is outside the GPU HLS kernels' range 3..4"));
  if (method == SPT_TUCKER_TTMC_CHAIN && (order < kChainMinOrder || order > kChainMaxOrder))
    return tucker_unsupported(ctx, cat("SPT_TUCKER_TTMC_CHAIN: order ", order,
                                       " is outside the GPU B-CSF kernels' range ", kChainMinOrder, "..",
                                       kChainMaxOrder));
  TtmcFormat ttmc_format = tucker_ttmc_format(method, order);
  if (ttmc_format == TtmcFormat::hls_if_dense || ttmc_format == TtmcFormat::hls) {
    const bool automatic = ttmc_format == TtmcFormat::hls_if_dense;
    // Unless HLS runs: F-COO after a failure, the estimate when auto
    // declines HLS.
    ttmc_format = TtmcFormat::fcoo;
    if (cuda.table->tucker_session_hls == nullptr || cuda.table->hls_upload == nullptr) {
      if (automatic) {
        log(ctx, 1, "note: the Tucker TTMc does not run on HLS: the plugin has no tucker_session_hls");
        ttmc_format = TtmcFormat::by_cost;
      } else {
        log(ctx, 1, "note: the Tucker TTMc runs on F-COO: the plugin has no tucker_session_hls");
      }
    } else {
      uint64_t bytes = 0;
      std::string why;
      const int status = upload_hls_per_mode(ctx, cuda, x, automatic, hls_copies, bytes, why);
      if (status == SPT_OK && hls_copies.empty()) {
        log(ctx, 1, cat("the Tucker TTMc does not run on HLS: ", why));
        ttmc_format = TtmcFormat::by_cost;
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
  // Chain: the HB-CSF rooted at each mode, built here (for the estimate
  // too) and uploaded when chain runs; F-COO on an upload failure listed in
  // the policy above (unsupported, out of memory).
  std::vector<DeviceHbcsf> chain_copies;
  std::vector<const spt_plugin_device_hbcsf*> chain_raw;
  if (hls_raw.empty() && (ttmc_format == TtmcFormat::chain || ttmc_format == TtmcFormat::by_cost)) {
    const bool forced = ttmc_format == TtmcFormat::chain;
    if (cuda.table->tucker_session_hbcsf == nullptr || cuda.table->hbcsf_upload == nullptr) {
      log(ctx, 1, "note: the Tucker TTMc runs on F-COO: the plugin has no tucker_session_hbcsf");
    } else {
      std::vector<spt_hbcsf_s> trees;
      std::string why;
      try {
        trees = hbcsf_per_mode(x, thread_count(ctx));
      } catch (const Error& e) {
        if (e.code() != SPT_ERR_UNSUPPORTED) throw;
        why = e.what();
      }
      if (trees.empty()) {
        log(ctx, 1, cat("note: the Tucker TTMc runs on F-COO: B-CSF cannot hold the tensor (", why, ")"));
      } else {
        std::vector<const spt_hbcsf_s*> tree_ptrs;
        spt_index leaf_rank = 0;
        uint32_t leaf_mode = 0;
        uint64_t bytes = 0;
        for (const spt_hbcsf_s& h : trees) {
          tree_ptrs.push_back(&h);
          bytes += h.bytes();
          const uint32_t leaf = h.mode_order.back();
          if (ranks[leaf] > leaf_rank) {
            leaf_rank = ranks[leaf];
            leaf_mode = leaf;
          }
        }
        const TuckerTtmcEstimate estimate = tucker_ttmc_estimate(tree_ptrs, ranks);
        const std::string numbers = cat("estimated work per sweep: chain ", estimate.chain_total, ", F-COO ",
                                        estimate.fcoo_total);
        if (leaf_rank > kChainMaxLeafRank) {
          log(ctx, 1,
              cat("note: the Tucker TTMc runs on F-COO: the rank of leaf mode ", leaf_mode, " (", leaf_rank,
                  ") is above the chained TTMc's limit of ", kChainMaxLeafRank));
        } else if (!forced && !estimate.prefers_chain()) {
          log(ctx, 1, cat("the Tucker TTMc runs on F-COO: the cost estimate prefers it (", numbers, ")"));
        } else {
          const int status = upload_hbcsf_per_mode(ctx, cuda, trees, chain_copies, why);
          if (status == SPT_OK) {
            for (const DeviceHbcsf& c : chain_copies) chain_raw.push_back(c.get());
            log(ctx, 1,
                cat("Tucker-HOOI on B-CSF chained TTMs on the GPU (one HB-CSF per mode, ", bytes, " bytes; ",
                    forced ? "forced by SPT_TUCKER_TTMC_CHAIN; " : "", numbers, ")"));
          } else if (status == SPT_ERR_UNSUPPORTED || status == SPT_ERR_OUT_OF_MEMORY) {
            log(ctx, 1,
                cat("note: the Tucker TTMc runs on F-COO: ",
                    status == SPT_ERR_OUT_OF_MEMORY ? "the HB-CSF copies do not fit the CUDA device"
                                                    : "the GPU B-CSF kernels cannot hold it",
                    " (", why, ")"));
          } else {
            return tucker_device_failed(ctx, status, why);
          }
        }
      }
    }
  }
  // Else one F-COO per mode, partitions cut by the threadlen rule for that
  // mode's output row (P_n values).
  std::vector<DeviceFcoo> copies;
  std::vector<const spt_plugin_device_fcoo*> raw;
  if (hls_raw.empty() && chain_raw.empty()) {
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
  const std::vector<uint32_t> plugin_ranks(ranks.begin(), ranks.end());
  spt_plugin_tucker_session* raw_session = nullptr;
  char buffer[1024] = {0};
  const int status =
      !hls_raw.empty()
          ? cuda.table->tucker_session_hls(hls_raw.data(), order, plugin_ranks.data(), &raw_session, buffer,
                                           sizeof buffer)
      : !chain_raw.empty()
          ? cuda.table->tucker_session_hbcsf(chain_raw.data(), order, plugin_ranks.data(), &raw_session, buffer,
                                             sizeof buffer)
          : cuda.table->tucker_session_fcoo(raw.data(), order, plugin_ranks.data(), &raw_session, buffer,
                                            sizeof buffer);
  if (status == SPT_ERR_NUMERICAL) fail(SPT_ERR_NUMERICAL, buffer);
  if (status == SPT_ERR_UNSUPPORTED) return tucker_unsupported(ctx, buffer);
  if (status == SPT_ERR_INVALID_ARGUMENT)
    fail(SPT_ERR_INTERNAL, "the CUDA plugin rejected Tucker-HOOI arguments: ", buffer);
  if (status != SPT_OK) return tucker_device_failed(ctx, status, buffer);
  DeviceSession session(raw_session, cuda.table->tucker_session_release);
  // The session's TTMcs read these copies: they live as long as the steps.
  std::vector<std::shared_ptr<void>> held;
  for (const DeviceHls& c : hls_copies) held.push_back(c);
  for (const DeviceHbcsf& c : chain_copies) held.push_back(c);
  for (const DeviceFcoo& c : copies) held.push_back(c);
  steps = std::make_unique<DeviceTuckerSteps<T>>(ctx, cuda, std::move(held), std::move(session));
  return true;
}

}  // namespace

TuckerTtmcEstimate tucker_ttmc_estimate(const std::vector<const spt_hbcsf_s*>& trees,
                                        const std::vector<spt_index>& ranks) {
  const size_t order = trees.size();
  require(order >= 3 && ranks.size() == order, "the Tucker TTMc estimate needs one HB-CSF per mode (order >= 3) and ",
          "a rank per mode, got ", order, " trees and ", ranks.size(), " ranks");
  TuckerTtmcEstimate e;
  e.fcoo.assign(order, 0.0);
  e.chain.assign(order, 0.0);
  for (size_t n = 0; n < order; ++n) {
    const spt_hbcsf_s* h = trees[n];
    require(h && h->order() == order && h->root() == n && h->nnz == trees[0]->nnz,
            "the Tucker TTMc estimate: tree ", n, " is not the HB-CSF rooted at mode ", n, " of the same tensor");
    double p = 1.0;
    for (size_t m = 0; m < order; ++m)
      if (m != n) p *= static_cast<double>(ranks[m]);
    const double index_bytes = 4.0 * static_cast<double>(order);
    const double nnz = static_cast<double>(h->nnz);
    const double singles = static_cast<double>(h->coo_nnz() + h->csl_nnz());
    const double leaves = static_cast<double>(h->bcsf_nnz());
    const double segments = static_cast<double>(h->segments());
    const double leaf_rank = static_cast<double>(ranks[h->mode_order.back()]);
    e.fcoo[n] = nnz * (p + index_bytes);
    e.chain[n] = singles * (p + index_bytes) + leaves * (leaf_rank + 4.0) + segments * (p + index_bytes);
    e.fcoo_total += e.fcoo[n];
    e.chain_total += e.chain[n];
  }
  return e;
}

TuckerTtmcEstimate tucker_ttmc_estimate(const spt_coo_s& x, const std::vector<spt_index>& ranks, int threads) {
  const std::vector<spt_hbcsf_s> trees = hbcsf_per_mode(x, threads);
  std::vector<const spt_hbcsf_s*> ptrs;
  for (const spt_hbcsf_s& h : trees) ptrs.push_back(&h);
  return tucker_ttmc_estimate(ptrs, ranks);
}

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

template <typename T>
std::unique_ptr<TuckerSteps<T>> device_tucker_steps(const spt_context_s& ctx, const spt_coo_s& x,
                                                    const std::vector<spt_index>& ranks, spt_tucker_ttmc method) {
  std::unique_ptr<TuckerSteps<T>> steps;
  if (!tucker_on_device<T>(ctx, x, ranks, method, steps)) steps.reset();
  return steps;
}

template std::unique_ptr<TuckerSteps<float>> device_tucker_steps<float>(const spt_context_s&, const spt_coo_s&,
                                                                        const std::vector<spt_index>&,
                                                                        spt_tucker_ttmc);
template std::unique_ptr<TuckerSteps<double>> device_tucker_steps<double>(const spt_context_s&, const spt_coo_s&,
                                                                          const std::vector<spt_index>&,
                                                                          spt_tucker_ttmc);

}  // namespace spt::dispatch
