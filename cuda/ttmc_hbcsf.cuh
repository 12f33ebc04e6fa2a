// TTMc on a B-CSF / HB-CSF tree by chained TTMs, fused per fiber (as
// SPLATT's CSF TTMc; issue 6): the GPU Tucker-HOOI's third TTMc route
// (plugin entry tucker_session_hbcsf, cuda/plugin_tucker.cu).
//
// For the tree x rooted at mode n (level 0 = n, level l = mode
// x.mode_order[l], leaf level order-1; layout in src/core/hbcsf.hpp and
// cuda/mttkrp_hbcsf.cuh):
//
//   Y_(n)(i_n, :) = sum over the nonzeros of slice i_n of
//                   val x kron of the other modes' factor rows.
//
// B-CSF group, per fiber segment g: first the TTM in the leaf mode,
//   t(r) = sum_{leaves z of g} val[z] U_leaf(leaf_ind[z], r)   (R_leaf values)
// then the Kronecker product of t with the factor rows of g's ancestors at
// levels 1..order-2, added into the slice's row: bcsf_nnz x R_leaf +
// segments x P_n multiply-adds instead of bcsf_nnz x P_n. The COO and CSL
// groups (slices of one nonzero, slices of singleton fibers) have no fiber
// to share and take the per-nonzero Kronecker product.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "mttkrp_hbcsf.cuh"

namespace spt::cuda {

// The largest leaf-mode rank the kernels take: t (R_leaf values of T) is
// staged in shared memory, one array per warp (4096 doubles = 32 KB: one
// warp per block still fits the default 48 KB).
constexpr uint32_t kHbcsfTtmcMaxLeafRank = 4096;

// out (dims[n] x width, row-major, ld = width, device, n = x.mode_order[0])
// += the TTMc of x in its root mode:
//   out(i_n, c) += sum over nonzeros v x prod_{m != n} U_m(i_m, digit_m(c)),
//   c = sum_{m != n} digit_m(c) prod_{m' < m, m' != n} R_m'
// (the lowest other mode fastest: the CPU's ttmc, the F-COO and HLS TTMc
// column order, whatever the tree's level order).
//
// factors_by_mode[m] (m < x.order, device, dims[m] x ranks_by_mode[m],
// ld = ranks_by_mode[m]) are indexed BY MODE; factors_by_mode[n] is not
// read. width must equal prod_{m != n} ranks_by_mode[m] (< 2^31).
//
// The caller zeroes out first: rows of COO and CSL slices (one writer each)
// are stored, rows of unsplit B-CSF slices updated by their one warp
// without atomics, rows of split slices (several work units) added with
// atomicAdd. Any order 3..kHbcsfMaxOrder, T = float or double.
// Asynchronous on `stream` (three launches: COO, CSL, B-CSF; empty groups
// launch nothing); `multiprocessors` caps the grids. Returns the first
// launch error, or cudaErrorInvalidValue for a bad order, a NULL factor or
// output, a width that is not the ranks' product, or a leaf rank above
// kHbcsfTtmcMaxLeafRank. Thread safety: as any launch on `stream`.
template <typename T>
cudaError_t launch_hbcsf_ttmc(const DeviceHbcsfRef& x, const T* const* factors_by_mode,
                              const uint32_t* ranks_by_mode, uint32_t width, T* out, int multiprocessors,
                              cudaStream_t stream);

}  // namespace spt::cuda
