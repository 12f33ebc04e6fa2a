// CP-ALS on HiCOO: an MttkrpOperand whose MTTKRPs run on a HiCOO copy of the
// tensor, built once with the suggested block size B, superblock size L and
// per-mode strategies (Li's dissertation §4.3.3) for the context's threads.
#pragma once

#include <memory>

#include "algo/mttkrp_operand.hpp"
#include "core/coo.hpp"
#include "core/hicoo.hpp"

namespace spt::algo {

template <typename T>
class HicooOperand final : public MttkrpOperand<T> {
 public:
  // Takes ownership of a built HiCOO tensor (its dtype must be T's).
  explicit HicooOperand(std::unique_ptr<spt_hicoo_s> owned);
  // Uses a caller's HiCOO tensor, kept alive by the caller.
  explicit HicooOperand(const spt_hicoo_s& borrowed);
  void mttkrp(spt_context_s& ctx, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) override;
  const char* name() const override { return "hicoo"; }
  const spt_hicoo_s& tensor() const { return *x_; }

 private:
  std::unique_ptr<spt_hicoo_s> owned_;
  const spt_hicoo_s* x_;
};

// Build a HiCOO copy of x (x is not modified and may be freed afterwards)
// with the suggested parameters and wrap it. Logs the chosen B and L at
// verbosity 1. Throws INVALID_ARGUMENT when x's dtype is not T's or its
// order is below 2.
template <typename T>
std::unique_ptr<MttkrpOperand<T>> make_hicoo_operand(spt_context_s& ctx, const spt_coo_s& x);

}  // namespace spt::algo
