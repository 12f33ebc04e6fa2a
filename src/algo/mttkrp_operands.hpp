// The MttkrpOperand implementations CP-ALS can run on, and the factory that
// picks one from spt_cpd_options::format / csf_policy.
#pragma once

#include <memory>

#include "algo/mttkrp_operand.hpp"
#include "core/coo.hpp"
#include "core/csf.hpp"
#include "core/fcoo.hpp"
#include "util/internal_api.hpp"

namespace spt::algo {

// MTTKRPs on a COO tensor the caller keeps alive (no copy).
template <typename T>
class CooOperand final : public MttkrpOperand<T> {
 public:
  explicit CooOperand(const spt_coo_s& x) : x_(x) {}
  void mttkrp(spt_context_s& ctx, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) override;
  const char* name() const override { return "coo"; }

 private:
  const spt_coo_s& x_;
};

// MTTKRPs on a CSF tensor: either built and owned by the operand, or a
// caller's handle (not owned; kept alive by the caller).
template <typename T>
class CsfOperand final : public MttkrpOperand<T> {
 public:
  explicit CsfOperand(std::unique_ptr<spt_csf_s> owned);
  explicit CsfOperand(const spt_csf_s& borrowed);
  void mttkrp(spt_context_s& ctx, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) override;
  const char* name() const override { return name_; }
  std::optional<SummedStats> summed_stats(const Exec& exec) const override;
  const spt_csf_s& tensor() const { return *x_; }

 private:
  std::unique_ptr<spt_csf_s> owned_;
  const spt_csf_s* x_;
  const char* name_;
};

// MTTKRPs on F-COO: one F-COO (op MTTKRP) per mode, built from x with the
// suggested threadlen; each MTTKRP goes through the dispatcher (the GPU
// F-COO kernel when the context runs on CUDA, else the CPU one).
template <typename T>
class FcooOperand final : public MttkrpOperand<T> {
 public:
  // threadlen by the GPU format model's rule for `rank` columns.
  FcooOperand(spt_context_s& ctx, const spt_coo_s& x, spt_index rank);
  void mttkrp(spt_context_s& ctx, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) override;
  const char* name() const override { return "fcoo"; }
  uint32_t threadlen() const { return per_mode_.empty() ? 0 : per_mode_[0]->threadlen; }
  uint64_t bytes() const;

 private:
  std::vector<std::unique_ptr<spt_fcoo_s>> per_mode_;
};

// Build the operand for x (kept alive by the caller) from opts.format,
// opts.csf_policy and opts.memo_budget_bytes (validated). AUTO asks
// advise_format (src/algo/format_advice.hpp) and logs its reason at
// verbosity 1; a HiCOO built for the advice is reused.
template <typename T>
SPT_INTERNAL_API std::unique_ptr<MttkrpOperand<T>> make_mttkrp_operand(spt_context_s& ctx, const spt_coo_s& x,
                                                       const spt_cpd_options& opts);

// The operand of one rank's block in a distributed CP-ALS: the device COO
// MTTKRP (the block's device copy made on first use) when
// dispatch::local_mttkrp_on_device says the block runs on the context's
// GPU, else make_mttkrp_operand's. x must outlive the operand.
template <typename T>
SPT_INTERNAL_API std::unique_ptr<MttkrpOperand<T>> make_distributed_mttkrp_operand(spt_context_s& ctx,
                                                                                   const spt_coo_s& x,
                                                                                   const spt_cpd_options& opts);

struct FormatAdvice;  // algo/format_advice.hpp

// The same with AUTO's advice already taken (advise_format(ctx, x,
// opts.rank), its reason logged by the caller): builds what it says,
// reusing its HiCOO or first CSF tree.
template <typename T>
std::unique_ptr<MttkrpOperand<T>> make_mttkrp_operand_advised(spt_context_s& ctx, const spt_coo_s& x,
                                                              const spt_cpd_options& opts, FormatAdvice&& advice);

}  // namespace spt::algo
