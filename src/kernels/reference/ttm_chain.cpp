// Reference semi-sparse TTM (SsTTM) and TTMc by the TTM chain: plain
// sequential loops, obviously right. SsTTM accumulates one output block per
// distinct coordinate of the remaining sparse modes in an ordered map (the
// fibers come out sorted by those modes ascending). The chain TTMc
// materialises the whole chain (reference SpTTM, then SsTTM per mode) and
// scatters the final blocks into the rows of out.
#include <algorithm>
#include <map>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/ttm_chain.hpp"
#include "kernels/ttmc.hpp"

namespace spt::kernels::reference {

namespace {

template <typename T>
void scoo_ttm_impl(const spt_scoo_s& y, uint32_t mode, ConstMatRef<T> u, spt_scoo_s& out) {
  const ScooTtmShape shape = scoo_ttm_shape(y, mode, u);
  const uint32_t order = y.order();
  const std::vector<uint32_t> sparse_out = [&] {
    std::vector<uint32_t> s;
    for (uint32_t m : y.sparse_modes())
      if (m != mode) s.push_back(m);
    return s;
  }();
  std::map<std::vector<spt_index>, std::vector<T>> blocks;
  std::vector<spt_index> key(sparse_out.size());
  const T* in = y.values.get<T>().data();
  for (spt_nnz f = 0; f < y.nfibers; ++f) {
    for (size_t j = 0; j < sparse_out.size(); ++j) key[j] = y.ind[sparse_out[j]][f];
    std::vector<T>& block = blocks[key];
    block.resize(shape.out_block, T(0));
    const spt_index i = y.ind[mode][f];
    for (uint64_t b = 0; b < shape.b_len; ++b)
      for (uint64_t r = 0; r < shape.rank; ++r)
        for (uint64_t a = 0; a < shape.a_len; ++a)
          block[a + shape.a_len * (r + shape.rank * b)] += in[f * shape.in_block + a + shape.a_len * b] * u(i, r);
  }
  out.dims = shape.dims;
  out.dense_modes = shape.dense;
  out.dense_mode = shape.dense[0];
  out.fiber_order = sparse_out;
  out.nfibers = blocks.size();
  out.ind.assign(order, {});
  for (uint32_t m : sparse_out) out.ind[m].resize(out.nfibers);
  out.values.set_dtype(y.dtype());
  out.values.resize(checked_mul(out.nfibers, shape.out_block, "semi-sparse value count"));
  T* dst = out.values.get<T>().data();
  spt_nnz f = 0;
  for (const auto& [coord, block] : blocks) {
    for (size_t j = 0; j < sparse_out.size(); ++j) out.ind[sparse_out[j]][f] = coord[j];
    std::copy(block.begin(), block.end(), dst + f * shape.out_block);
    ++f;
  }
}

template <typename T>
void ttmc_chain_impl(const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode, const uint32_t* chain,
                     MatRef<T> out) {
  check_ttmc_args(x, factors, mode, out);
  const uint32_t order = x.order();
  check_ttmc_chain(order, mode, chain);
  for (spt_nnz i = 0; i < out.rows; ++i) std::fill(out.row(i), out.row(i) + out.cols, T(0));
  spt_scoo_s y;
  ttm(Exec{1}, x, chain[0], factors[chain[0]], y);
  for (uint32_t j = 1; j + 1 < order; ++j) {
    spt_scoo_s z;
    scoo_ttm_impl<T>(y, chain[j], factors[chain[j]], z);
    y = std::move(z);
  }
  // Only `mode` is sparse now; the block is dense in all other modes,
  // lowest fastest: Kolda's column order.
  const T* v = y.values.get<T>().data();
  for (spt_nnz f = 0; f < y.nfibers; ++f) {
    T* row = out.row(y.ind[mode][f]);
    for (uint64_t c = 0; c < out.cols; ++c) row[c] += v[f * out.cols + c];
  }
}

}  // namespace

void scoo_ttm(const Exec&, const spt_scoo_s& y, uint32_t mode, ConstMatRef<float> u, spt_scoo_s& out) {
  scoo_ttm_impl(y, mode, u, out);
}
void scoo_ttm(const Exec&, const spt_scoo_s& y, uint32_t mode, ConstMatRef<double> u, spt_scoo_s& out) {
  scoo_ttm_impl(y, mode, u, out);
}
void ttmc_chain(const Exec&, const spt_coo_s& x, const ConstMatRef<float>* factors, uint32_t mode,
                const uint32_t* chain, MatRef<float> out) {
  ttmc_chain_impl(x, factors, mode, chain, out);
}
void ttmc_chain(const Exec&, const spt_coo_s& x, const ConstMatRef<double>* factors, uint32_t mode,
                const uint32_t* chain, MatRef<double> out) {
  ttmc_chain_impl(x, factors, mode, chain, out);
}

}  // namespace spt::kernels::reference
