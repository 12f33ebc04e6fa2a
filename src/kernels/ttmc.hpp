// Shared pieces of the one-shot TTM-chain (TTMc) kernel declared in
// kernels.hpp:
//
//   Y_(n) = X_(n) (U_{N-1} kron ... kron U_{n+1} kron U_{n-1} kron ... kron U_0)
//
// Y_(n) is dense, dims[n] x P with P = prod_{m != n} R_m (R_m = columns of
// U_m). Column c of a row is the index of the core-shaped fiber entry
// (r_m)_{m != n} with the LOWEST other mode fastest (Kolda's unfolding):
// c = r_{o_0} + R_{o_0} (r_{o_1} + R_{o_1} (...)) for the other modes
// o_0 < o_1 < ... . Each nonzero adds value * kron(U_{o_k}(i,:), ..,
// U_{o_0}(i,:)) to row i_n: no semi-sparse intermediate is formed.
#pragma once

#include <vector>

#include "core/buffer.hpp"
#include "core/matrix.hpp"

namespace spt::kernels {

// The other modes of `mode`, ascending (o_0 < o_1 < ...).
inline std::vector<uint32_t> ttmc_other_modes(uint32_t order, uint32_t mode) {
  std::vector<uint32_t> others;
  for (uint32_t m = 0; m < order; ++m)
    if (m != mode) others.push_back(m);
  return others;
}

// The sort order the CPU kernel works in: `mode` first (race-free rows),
// then the other modes from the highest down, so that nonzeros sharing the
// slowest Kronecker factors are adjacent (their partial Kronecker row is
// reused) and fibers along the lowest other mode (the fastest column
// index) are contiguous. Callers that run many TTMcs (HOOI) sort copies in
// this order once; the kernel then skips its own sort.
inline std::vector<uint32_t> ttmc_sort_order(uint32_t order, uint32_t mode) {
  std::vector<uint32_t> sort_order{mode};
  for (uint32_t m = order; m-- > 0;)
    if (m != mode) sort_order.push_back(m);
  return sort_order;
}

// P = prod_{m != mode} factors[m].cols, failing with OVERFLOW when it does
// not fit 64 bits.
template <typename T>
uint64_t ttmc_columns(uint32_t order, const ConstMatRef<T>* factors, uint32_t mode) {
  uint64_t p = 1;
  for (uint32_t m = 0; m < order; ++m)
    if (m != mode) p = checked_mul(p, factors[m].cols, "the TTM-chain column count prod_{m != n} R_m");
  return p;
}

// Argument checks shared by both backends (shapes of factors and out).
template <typename T>
void check_ttmc_args(const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) {
  const uint32_t order = x.order();
  require(order >= 2, "the TTM chain needs a tensor of order >= 2, got order ", order);
  require(mode < order, "mode ", mode, " out of range for an order-", order, " tensor");
  require(x.dtype() == dtype_of<T>(), "tensor dtype does not match the factors");
  for (uint32_t m = 0; m < order; ++m) {
    if (m == mode) continue;
    require(factors[m].rows == x.dims[m], "factor ", m, " has ", factors[m].rows, " rows, expected dims[", m,
            "] = ", x.dims[m]);
    require(factors[m].cols >= 1, "factor ", m, " has no columns");
  }
  const uint64_t p = ttmc_columns(order, factors, mode);
  require(out.rows == x.dims[mode] && out.cols == p, "TTM-chain output is ", out.rows, " x ", out.cols,
          ", expected dims[", mode, "] x prod R = ", x.dims[mode], " x ", p);
}

}  // namespace spt::kernels
