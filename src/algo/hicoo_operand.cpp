// MttkrpOperand over a HiCOO tensor (see hicoo_operand.hpp).
#include "algo/hicoo_operand.hpp"

#include "dispatch/dispatch.hpp"

namespace spt::algo {

template <typename T>
HicooOperand<T>::HicooOperand(std::unique_ptr<spt_hicoo_s> owned) : owned_(std::move(owned)), x_(owned_.get()) {
  require(x_->dtype() == dtype_of<T>(), "HiCOO operand: the tensor is ", dtype_name(x_->dtype()), ", expected ",
          dtype_name(dtype_of<T>()));
}

template <typename T>
HicooOperand<T>::HicooOperand(const spt_hicoo_s& borrowed) : x_(&borrowed) {
  require(x_->dtype() == dtype_of<T>(), "HiCOO operand: the tensor is ", dtype_name(x_->dtype()), ", expected ",
          dtype_name(dtype_of<T>()));
}

template <typename T>
void HicooOperand<T>::mttkrp(spt_context_s& ctx, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) {
  SPT_DISPATCH(ctx, mttkrp_hicoo, *x_, factors, mode, out);
}

template <typename T>
std::unique_ptr<MttkrpOperand<T>> make_hicoo_operand(spt_context_s& ctx, const spt_coo_s& x) {
  require(x.dtype() == dtype_of<T>(), "HiCOO operand: the tensor is ", dtype_name(x.dtype()), ", expected ",
          dtype_name(dtype_of<T>()));
  require(x.order() >= 2, "HiCOO needs a tensor of order >= 2, got order ", x.order());
  auto h = std::make_unique<spt_hicoo_s>(hicoo::from_coo(x, hicoo::Params{}, dispatch::exec_for(ctx).threads));
  log(ctx, 1,
      cat("CP-ALS on HiCOO (B = ", h->block_size(), ", L = ", uint64_t(1) << h->superblock_bits, ", ",
          h->num_blocks(), " blocks, ", h->num_superblocks(), " superblocks)"));
  return std::make_unique<HicooOperand<T>>(std::move(h));
}

template class HicooOperand<float>;
template class HicooOperand<double>;
template std::unique_ptr<MttkrpOperand<float>> make_hicoo_operand<float>(spt_context_s&, const spt_coo_s&);
template std::unique_ptr<MttkrpOperand<double>> make_hicoo_operand<double>(spt_context_s&, const spt_coo_s&);

}  // namespace spt::algo
