// Shared pieces of the semi-sparse TTM (SsTTM) and TTM-chain kernels
// declared in kernels.hpp (scoo_ttm, ttmc_chain).
//
// Block layout (src/core/scoo.hpp): dense modes ascending, lowest fastest.
// Making mode c dense with factor U (dims[c] x R) turns an input block of
// A*B values (A = product of the dense dims below c, B = above c), index
// a + A b, into an output block of A*R*B values, index a + A (r + R b):
//   out[a + A r + A R b] += in[a + A b] * U(i_c, r).
// That one "insert a mode" update is all SsTTM and every level of the
// chain do; insert_mode_axpy below is its inner loop.
//
// TTMc by the chain (ttmc_chain): for TTMc in mode n with the other modes
// contracted in the order chain[0], chain[1], ..., chain[K-1], the tensor is
// sorted with key (n, chain[K-1], ..., chain[1], chain[0]), so that every
// step's groups are contiguous: level-j groups share the coordinates of
// n, chain[K-1], ..., chain[j+1]. A thread takes a whole mode-n slice and
// walks it once, keeping one block per level (level j: dense in
// chain[0..j], L_j = R_{chain[0]} ... R_{chain[j]} values):
//   every nonzero:           acc[0] += value * U_{chain[0]}(i, :)
//   a level-j group closes:  acc[j+1] += insert(acc[j], U_{chain[j+1]}(i, :)); acc[j] = 0
// acc[K-1] is the output row (dense in all other modes: Kolda's column
// order, as the one-shot ttmc). Work: nnz R_{chain[0]} + sum_j G_j L_{j+1}
// (G_j = level-j groups); intermediates: one block per level per thread,
// never a semi-sparse tensor for the whole input.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/buffer.hpp"
#include "core/matrix.hpp"
#include "core/dtype.hpp"
#include "core/scoo.hpp"

namespace spt::kernels {

// Sort key for TTMc in `mode` by the chain `chain` (K = order-1 modes,
// contraction order): mode, chain[K-1], ..., chain[0].
inline std::vector<uint32_t> ttm_chain_sort_order(uint32_t mode, const std::vector<uint32_t>& chain) {
  std::vector<uint32_t> key{mode};
  for (size_t j = chain.size(); j-- > 0;) key.push_back(chain[j]);
  return key;
}

// Throws INVALID_ARGUMENT unless chain[0..order-2] is a permutation of the
// modes other than `mode`.
inline void check_ttmc_chain(uint32_t order, uint32_t mode, const uint32_t* chain) {
  require(chain != nullptr, "the TTM-chain mode order must not be NULL");
  std::vector<bool> seen(order, false);
  seen[mode] = true;
  for (uint32_t j = 0; j + 1 < order; ++j) {
    require(chain[j] < order, "TTM-chain mode ", chain[j], " out of range for an order-", order, " tensor");
    require(!seen[chain[j]], "TTM-chain mode ", chain[j], chain[j] == mode ? " is the output mode" : " is repeated",
            "; the chain must list every mode except ", mode, " once");
    seen[chain[j]] = true;
  }
}

// dst (A*R*B) += insert(src (A*B), urow (R)) in the layout above (`scale`
// multiplies src; 1 for blocks).
template <typename T>
inline void insert_mode_axpy(T* __restrict dst, const T* __restrict src, const T* __restrict urow, uint64_t a_len,
                             uint64_t r_len, uint64_t b_len) {
  if (a_len == 1) {
    for (uint64_t b = 0; b < b_len; ++b) {
      const T s = src[b];
      T* __restrict d = dst + b * r_len;
#pragma omp simd
      for (uint64_t r = 0; r < r_len; ++r) d[r] += s * urow[r];
    }
    return;
  }
  for (uint64_t b = 0; b < b_len; ++b) {
    const T* __restrict s = src + b * a_len;
    T* __restrict dblock = dst + b * a_len * r_len;
    for (uint64_t r = 0; r < r_len; ++r) {
      const T w = urow[r];
      T* __restrict d = dblock + r * a_len;
#pragma omp simd
      for (uint64_t a = 0; a < a_len; ++a) d[a] += w * s[a];
    }
  }
}

// The (A, B) split of a block with dense modes `dense` (ascending) around a
// new mode c: A = product of dims[d] for d < c, B = for d > c.
inline void split_around(const std::vector<spt_index>& dims, const std::vector<uint32_t>& dense, uint32_t c,
                         uint64_t& a_len, uint64_t& b_len) {
  a_len = 1;
  b_len = 1;
  for (uint32_t d : dense) (d < c ? a_len : b_len) *= dims[d];
}

// Output shape of SsTTM (dims, dense modes, block sizes) after argument
// checks shared by both backends.
struct ScooTtmShape {
  std::vector<spt_index> dims;
  std::vector<uint32_t> dense;  // ascending, includes mode
  uint64_t in_block = 1, out_block = 1, a_len = 1, b_len = 1, rank = 1;
};
template <typename T>
ScooTtmShape scoo_ttm_shape(const spt_scoo_s& y, uint32_t mode, ConstMatRef<T> u) {
  const uint32_t order = y.order();
  require(mode < order, "mode ", mode, " out of range for an order-", order, " semi-sparse tensor");
  require(!y.is_dense(mode), "mode ", mode, " is already dense in the semi-sparse tensor; SsTTM needs a sparse mode");
  require(y.dtype() == dtype_of<T>(), "the semi-sparse tensor's dtype does not match the matrix");
  require(u.rows == y.dims[mode] && u.cols >= 1, "u must be dims[", mode, "] x R = ", y.dims[mode],
          " x R with R >= 1, got ", u.rows, " x ", u.cols);
  if (u.cols > UINT32_MAX) fail(SPT_ERR_OVERFLOW, "u has ", u.cols, " columns; a dense mode must fit 32 bits");
  ScooTtmShape s;
  s.dims = y.dims;
  s.dims[mode] = static_cast<spt_index>(u.cols);
  s.dense = y.dense_modes;
  s.dense.insert(std::upper_bound(s.dense.begin(), s.dense.end(), mode), mode);
  s.in_block = scoo_block_size(y.dims, y.dense_modes);
  s.out_block = scoo_block_size(s.dims, s.dense);
  s.rank = u.cols;
  split_around(y.dims, y.dense_modes, mode, s.a_len, s.b_len);
  return s;
}

}  // namespace spt::kernels
