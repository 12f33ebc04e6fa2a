#include "algo/dense_steps.hpp"

#include "dispatch/dispatch.hpp"
#include "kernels/dense.hpp"

namespace spt::algo {

template <typename T>
void gram(const spt_context_s& ctx, ConstMatRef<T> a, MatRef<T> out) {
  SPT_DISPATCH(ctx, gram, a, out);
}

template <typename T>
void divide_columns(const spt_context_s& ctx, MatRef<T> a, const T* divisors) {
  SPT_DISPATCH(ctx, divide_columns, a, divisors);
}

SummedStats summed_stats(const spt_context_s& ctx, const spt_coo_s& x) { return SPT_DISPATCH(ctx, summed_stats, x); }

template void gram<float>(const spt_context_s&, ConstMatRef<float>, MatRef<float>);
template void gram<double>(const spt_context_s&, ConstMatRef<double>, MatRef<double>);
template void divide_columns<float>(const spt_context_s&, MatRef<float>, const float*);
template void divide_columns<double>(const spt_context_s&, MatRef<double>, const double*);

}  // namespace spt::algo
