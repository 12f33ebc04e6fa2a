// OpenMP one-shot TTM chain (see kernels/ttmc.hpp for the layout). It runs
// as the TTM-chain kernel (cpu/ttm_chain.cpp) with the other modes in
// ascending order, which performs exactly the steps below.
//
// Race-free by construction: the nonzeros are viewed sorted with `mode`
// first (core/sort.hpp SortedView; no copy when the caller pre-sorted in
// ttmc_sort_order), and threads take whole output rows (runs of equal i_mode)
// with dynamic scheduling, since skewed tensors have very unequal rows.
//
// Within a row the other modes are sorted from the highest (o_{K-1}) down to
// the lowest (o_0), so the nonzeros form nested groups, as in a CSF tree:
// level-j groups share the indices of o_{j+1}..o_{K-1}. acc[j] (length
// L_j = R_{o_0} ... R_{o_j}) sums the current level-j group:
//   every nonzero:             acc[0] += value * U_{o_0}(i_{o_0}, :)
//   a level-j group closes:    acc[j+1] += kron(U_{o_{j+1}}(i_{o_{j+1}}, :), acc[j]); acc[j] = 0
// and acc[K-1] is the output row itself. The Kronecker row is never formed
// per nonzero: the work is nnz R_{o_0} + sum_j (level-j groups) L_{j+1},
// never more than the plain one-shot form's nnz P.
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/ttmc.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

template <typename T>
void ttmc_impl(const Exec& exec, const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) {
  check_ttmc_args(x, factors, mode, out);
  // The one-shot walk is the TTM-chain walk with the other modes contracted
  // in ascending order: ttm_chain_sort_order(mode, ascending) is
  // ttmc_sort_order(mode), and every level inserts a mode above all the
  // dense ones (B = 1), which is the Kronecker update above.
  const std::vector<uint32_t> others = ttmc_other_modes(x.order(), mode);
  ttmc_chain(exec, x, factors, mode, others.data(), out);
}

}  // namespace

void ttmc(const Exec& exec, const spt_coo_s& x, const ConstMatRef<float>* factors, uint32_t mode,
          MatRef<float> out) {
  ttmc_impl(exec, x, factors, mode, out);
}
void ttmc(const Exec& exec, const spt_coo_s& x, const ConstMatRef<double>* factors, uint32_t mode,
          MatRef<double> out) {
  ttmc_impl(exec, x, factors, mode, out);
}

}  // namespace spt::kernels::SPT_CPU_VARIANT
