// GPU SpTTM family (dissertation ch. 7): the SpTTM kernels of §7.3 that the
// rule picks (coalesced, rank-blocked, shared-memory) and the semi-sparse
// TTM (SsTTM, §7.4), float32 and float64, any rank R >= 1.
// Called by the plugin (cuda/plugin_ttm.cu); the host prepares the inputs
// (src/dispatch/device_ttm.cpp).
//
// SpTTM input ("fibers"): the nonzeros of a COO tensor sorted so that every
// mode-n fiber is contiguous; fiber f is the nonzero range
// [fiber_ptr[f], fiber_ptr[f+1]), ind[k] its mode-n index (a row of U) and
// val[k] its value. Output: Y (nfibers x R, row-major, leading dimension
// ldy), row f = sum_{k in fiber f} val[k] * U(ind[k], :). Every variant
// writes every row (no zeroing needed) and sums each fiber in nonzero order,
// as the CPU kernel does.
//
// Device layout of U and Y: row-major with a padded leading dimension
// ttm_padded_ld(R) (a multiple of kTtmRankBlock) so that the rank-blocked
// kernel's vector loads are aligned; the padding columns of U must be zero
// (the padding columns of Y then come out zero and are not copied back).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace spt::cuda {

// The SpTTM kernels. The numbers are the plugin ABI's SPT_PLUGIN_TTM_*
// (src/dispatch/plugin_abi.h).
enum class TtmVariant : int {
  coalesced = 3,     // lanes over columns, sub-warp per fiber: coalesced U rows (§7.3.3)
  rank_blocked = 4,  // a thread owns kTtmRankBlock consecutive columns, vector loads (§7.3.4)
  shared = 5,        // a block stages its fibers' (index, value) in shared memory (§7.3.5)
};

// Columns per thread of the rank-blocked kernel (16 bytes of float, 32 of
// double), and the multiple the device leading dimensions are padded to.
constexpr uint32_t kTtmRankBlock = 4;

// The rule that picks a kernel for a problem (reasoning in ttm.cu, from the
// dissertation's §7.6.3 measurements): rank R, number of fibers, their mean
// and maximum length. Pure.
TtmVariant choose_ttm_variant(uint64_t rank, uint64_t nfibers, double mean_fiber_length, uint64_t max_fiber_length);


// Leading dimension of U and Y on the device for rank R.
inline uint64_t ttm_padded_ld(uint64_t rank) { return (rank + kTtmRankBlock - 1) / kTtmRankBlock * kTtmRankBlock; }

// Device arrays of the SpTTM input.
struct DeviceTtmFibersRef {
  uint64_t nfibers = 0;
  const uint64_t* fiber_ptr = nullptr;  // nfibers + 1
  const uint32_t* ind = nullptr;        // nnz
  const void* values = nullptr;         // nnz of T
};

// Y (nfibers x rank, ld = ldy) = the SpTTM of x with U (ld = ldu) by
// kernel `variant`. ldu and ldy must equal ttm_padded_ld(rank) (the
// rank-blocked kernel reads and writes whole blocks of columns), device
// pointers 16-byte aligned. Asynchronous on `stream`; returns the launch
// error, if any (cudaErrorInvalidValue for an unknown variant).
template <typename T>
cudaError_t launch_ttm(TtmVariant variant, const DeviceTtmFibersRef& x, const T* u, uint64_t ldu, uint32_t rank, T* y,
                       uint64_t ldy, int multiprocessors, cudaStream_t stream);

// Device arrays of the SsTTM input: a semi-sparse tensor whose fibers
// (blocks of a_len * b_len values, layout src/core/scoo.hpp) are grouped:
// group g is positions [group_ptr[g], group_ptr[g+1]), position k holds
// fiber perm[k] (perm NULL = fiber k); ind[f] is fiber f's coordinate in
// the contracted mode (a row of U).
struct DeviceScooGroupsRef {
  uint64_t nfibers = 0;
  uint64_t ngroups = 0;
  uint64_t a_len = 1;  // product of the input's dense dims below the contracted mode
  uint64_t b_len = 1;  // ... above it
  const uint64_t* group_ptr = nullptr;  // ngroups + 1
  const uint64_t* perm = nullptr;       // nfibers, or nullptr
  const uint32_t* ind = nullptr;        // nfibers
  const void* values = nullptr;         // nfibers * a_len * b_len of T
};

// out (ngroups blocks of a_len * rank * b_len values, contiguous) =
// for group g, a < a_len, r < rank, b < b_len:
//   out[g][a + a_len (r + rank b)] = sum_{k in group g} in[f_k][a + a_len b] * U(ind[f_k], r)
// (the block layout of src/core/scoo.hpp: the new dense mode inserted
// between the dense modes below and above it). U has leading dimension ldu.
// Every output value is written. Asynchronous; returns the launch error.
template <typename T>
cudaError_t launch_scoo_ttm(const DeviceScooGroupsRef& y, const T* u, uint64_t ldu, uint32_t rank, T* out,
                            int multiprocessors, cudaStream_t stream);

}  // namespace spt::cuda
