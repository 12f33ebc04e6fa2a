// MttkrpOperand implementations for COO and CSF, and the operand factory
// (COO, CSF with any policy incl. memoized, HiCOO; AUTO by advise_format).
#include "algo/mttkrp_operands.hpp"

#include "algo/format_advice.hpp"
#include "algo/hicoo_operand.hpp"
#include "algo/memo_mttkrp.hpp"
#include "dispatch/dispatch.hpp"

namespace spt::algo {

namespace {

const char* csf_operand_name(spt_csf_policy policy) {
  switch (policy) {
    case SPT_CSF_ONEMODE: return "csf-onemode";
    case SPT_CSF_TWOMODE: return "csf-twomode";
    case SPT_CSF_ALLMODE: return "csf-allmode";
    default: return "csf";
  }
}

}  // namespace

template <typename T>
void CooOperand<T>::mttkrp(spt_context_s& ctx, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) {
  SPT_DISPATCH(ctx, mttkrp, x_, factors, mode, out);
}

template <typename T>
CsfOperand<T>::CsfOperand(std::unique_ptr<spt_csf_s> owned)
    : owned_(std::move(owned)), x_(owned_.get()), name_(csf_operand_name(x_->policy)) {}

template <typename T>
CsfOperand<T>::CsfOperand(const spt_csf_s& borrowed) : x_(&borrowed), name_(csf_operand_name(borrowed.policy)) {}

template <typename T>
std::optional<SummedStats> CsfOperand<T>::summed_stats(const Exec& exec) const {
  if (x_->trees.empty()) return std::nullopt;
  return csf_summed_stats(exec, x_->trees[0]);
}

template <typename T>
void CsfOperand<T>::mttkrp(spt_context_s& ctx, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) {
  SPT_DISPATCH(ctx, mttkrp_csf, *x_, factors, mode, out);
}

template <typename T>
FcooOperand<T>::FcooOperand(spt_context_s& ctx, const spt_coo_s& x, spt_index rank) {
  const int threads = dispatch::exec_for(ctx).threads;
  const uint32_t threadlen = fcoo::suggested_threadlen(x.nnz, uint64_t(rank) * sizeof(T), 0);
  for (uint32_t m = 0; m < x.order(); ++m)
    per_mode_.push_back(std::make_unique<spt_fcoo_s>(fcoo::from_coo(x, SPT_FCOO_MTTKRP, m, threadlen, threads)));
}

template <typename T>
void FcooOperand<T>::mttkrp(spt_context_s& ctx, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) {
  SPT_DISPATCH(ctx, mttkrp_fcoo, *per_mode_[mode], factors, out);
}

template <typename T>
uint64_t FcooOperand<T>::bytes() const {
  uint64_t b = 0;
  for (const auto& f : per_mode_) b += f->bytes();
  return b;
}

namespace {

// The operand of `format` (AUTO resolved); the advice's HiCOO or first CSF
// tree, when given, is reused.
template <typename T>
std::unique_ptr<MttkrpOperand<T>> operand_of_format(spt_context_s& ctx, const spt_coo_s& x, const spt_cpd_options& opts,
                                                    spt_tensor_format format, spt_csf_policy policy,
                                                    std::unique_ptr<spt_hicoo_s> advised_hicoo, CsfTree advised_tree) {
  switch (format) {
    case SPT_TENSOR_FORMAT_COO: return std::make_unique<CooOperand<T>>(x);
    case SPT_TENSOR_FORMAT_CSF: {
      if (policy == SPT_CSF_MEMOIZED) {
        auto memo = std::make_unique<MemoizedCsfOperand<T>>(ctx, x, opts.rank, opts.memo_budget_bytes);
        log(ctx, 1, cat("CP-ALS on ", memo->plan().describe()));
        return memo;
      }
      auto csf = std::make_unique<spt_csf_s>();
      // AUTO policy: ALLMODE when it fits kAutoAllmodeBudget x the COO's bytes
      // (every MTTKRP at a root), else ONEMODE, keeping only the trees some
      // mode runs on (see build_csf); also when the advice resolved it.
      build_csf(dispatch::exec_for(ctx), x, policy, *csf, std::move(advised_tree),
                opts.csf_policy == SPT_CSF_AUTO ? CsfTreeUse::drop_unused : CsfTreeUse::keep_all);
      log(ctx, 1,
          cat("CP-ALS on CSF (", csf_policy_name(csf->policy), ", ", csf->trees.size(), " tree(s), ", csf->bytes(),
              " bytes)"));
      return std::make_unique<CsfOperand<T>>(std::move(csf));
    }
    case SPT_TENSOR_FORMAT_FCOO: {
      require(x.order() >= 2, "F-COO needs a tensor of order >= 2, got order ", x.order());
      auto op = std::make_unique<FcooOperand<T>>(ctx, x, opts.rank);
      log(ctx, 1, cat("CP-ALS on F-COO (one copy per mode, threadlen ", op->threadlen(), ", ", op->bytes(), " bytes)"));
      return op;
    }
    case SPT_TENSOR_FORMAT_HICOO:
      if (advised_hicoo) return std::make_unique<HicooOperand<T>>(std::move(advised_hicoo));
      return make_hicoo_operand<T>(ctx, x);
    case SPT_TENSOR_FORMAT_HBCSF:
    case SPT_TENSOR_FORMAT_HLS:
      fail(SPT_ERR_UNSUPPORTED, "CP-ALS does not run on ",
           opts.format == SPT_TENSOR_FORMAT_HBCSF ? "HB-CSF" : "HLS",
           " (a handle serves one root mode): use SPT_TENSOR_FORMAT_AUTO, _COO, _CSF, _HICOO or _FCOO");
    default:
      fail(SPT_ERR_INVALID_ARGUMENT, "opts.format must be an spt_tensor_format value (SPT_TENSOR_FORMAT_AUTO .. _HLS), got ",
           static_cast<int>(opts.format));
  }
}

}  // namespace

template <typename T>
std::unique_ptr<MttkrpOperand<T>> make_mttkrp_operand_advised(spt_context_s& ctx, const spt_coo_s& x,
                                                              const spt_cpd_options& opts, FormatAdvice&& advice) {
  spt_csf_policy policy = opts.csf_policy;
  if (advice.format == SPT_TENSOR_FORMAT_CSF && policy == SPT_CSF_AUTO) policy = advice.csf_policy;
  return operand_of_format<T>(ctx, x, opts, advice.format, policy, std::move(advice.hicoo),
                              std::move(advice.csf_first_tree));
}

template <typename T>
std::unique_ptr<MttkrpOperand<T>> make_mttkrp_operand(spt_context_s& ctx, const spt_coo_s& x,
                                                       const spt_cpd_options& opts) {
  // AUTO's advice builds a HiCOO or the first CSF tree; reuse them.
  if (opts.format == SPT_TENSOR_FORMAT_AUTO) {
    FormatAdvice advice = advise_format(ctx, x, opts.rank);
    log(ctx, 1, cat("format auto: ", advice.reason));
    return make_mttkrp_operand_advised<T>(ctx, x, opts, std::move(advice));
  }
  return operand_of_format<T>(ctx, x, opts, opts.format, opts.csf_policy, nullptr, CsfTree());
}

template <typename T>
std::unique_ptr<MttkrpOperand<T>> make_distributed_mttkrp_operand(spt_context_s& ctx, const spt_coo_s& x,
                                                                  const spt_cpd_options& opts) {
  if (dispatch::local_mttkrp_on_device(ctx, opts)) {
    log(ctx, 1, cat("local MTTKRPs on device ", ctx.device, " (", x.nnz, " nonzeros)"));
    return std::make_unique<CooOperand<T>>(x);
  }
  return make_mttkrp_operand<T>(ctx, x, opts);
}

template class CooOperand<float>;
template class CooOperand<double>;
template class CsfOperand<float>;
template class CsfOperand<double>;
template class FcooOperand<float>;
template class FcooOperand<double>;
template std::unique_ptr<MttkrpOperand<float>> make_mttkrp_operand<float>(spt_context_s&, const spt_coo_s&,
                                                                          const spt_cpd_options&);
template std::unique_ptr<MttkrpOperand<double>> make_mttkrp_operand<double>(spt_context_s&, const spt_coo_s&,
                                                                            const spt_cpd_options&);
template std::unique_ptr<MttkrpOperand<float>> make_distributed_mttkrp_operand<float>(spt_context_s&,
                                                                                      const spt_coo_s&,
                                                                                      const spt_cpd_options&);
template std::unique_ptr<MttkrpOperand<double>> make_distributed_mttkrp_operand<double>(spt_context_s&,
                                                                                        const spt_coo_s&,
                                                                                        const spt_cpd_options&);
template std::unique_ptr<MttkrpOperand<float>> make_mttkrp_operand_advised<float>(spt_context_s&, const spt_coo_s&,
                                                                                  const spt_cpd_options&,
                                                                                  FormatAdvice&&);
template std::unique_ptr<MttkrpOperand<double>> make_mttkrp_operand_advised<double>(spt_context_s&, const spt_coo_s&,
                                                                                    const spt_cpd_options&,
                                                                                    FormatAdvice&&);

}  // namespace spt::algo
