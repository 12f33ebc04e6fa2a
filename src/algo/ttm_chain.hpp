// TTM chains: the materialised chain behind spt_ttm_chain (sort once, SpTTM,
// then SsTTM per mode), and the choice between the two TTMc paths used by
// Tucker-HOOI:
//
//  one_shot: the `ttmc` kernel (kernels/ttmc.hpp): X sorted (n, o_{K-1}, ..,
//            o_0) with the other modes in a FIXED order (the lowest other
//            mode o_0 is the leaf); every nonzero adds into partial
//            Kronecker rows, no semi-sparse intermediate.
//  chain:    the `ttmc_chain` kernel (kernels/ttm_chain.hpp): X sorted
//            (n, c_{K-1}, .., c_0) for a CHOSEN contraction order c (c_0
//            first), whole mode-n slices per task, one dense block per chain
//            level per thread (never an intermediate for the whole tensor).
//
// Cost estimate (multiply-adds). With the tensor sorted by key
// (n, c_{K-1}, .., c_0) and G_j = the number of distinct prefixes
// (n, c_{K-1}, .., c_{j+1}) (level-j groups; one pass over the sorted
// tensor counts them all, like CSF node counts), both kernels do
//   W(c) = nnz R_{c_0} + sum_{j=0}^{K-2} G_j L_{j+1},  L_j = R_{c_0} .. R_{c_j}
// (the CPU one-shot kernel reuses partial Kronecker rows along its sort, so
// its work is W(o), far below the textbook one-shot nnz * P, which is also
// reported as kronecker_row_flops). The paths therefore differ by the
// contraction order, which matters: the best order saved a large share of
// the fixed order's work on the benchmark tensors (docs/design-measurements.md,
// "TTM chain order").
//
// Choosing the chain order. G_j depends only on the SET of modes in the
// prefix, so the distinct counts D({n} + S) of every subset S of the other
// modes (2^K - 2 radix sorts of packed 64-bit keys, no tensor copy) give
// W(c) for every order c exactly (the sets are shared between modes: 2^N -
// N - 2 key sorts per decomposition, e.g. 10 for order 4); for K <= 4
// (order <= 5) all K! orders are
// evaluated and the cheapest taken (ties: the first in lexicographic order,
// which starts with the one-shot order o). Beyond that, or when a packed
// key exceeds 64 bits, a rule is used instead -- contract the modes with
// the most distinct indices first (the CSF "long modes at the leaves"
// rule), ties to the lower mode -- and W(o), W(c) come from one counting
// pass over each path's sorted copy (prefix_group_counts).
// `automatic` takes the chain only when c != o and W(c) < 0.97 W(o) (ties
// keep the one-shot kernel).
//
// Scratch: both kernels keep sum_{j<K-1} L_j values per thread; the sorted
// copy of X (nnz (4 N + sizeof(T)) bytes) is the only tensor-sized memory
// (planning briefly holds 2 nnz 64-bit keys for the subset counts, or a
// second sorted copy on the fallback route).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "core/matrix.hpp"
#include "core/scoo.hpp"
#include "dispatch/dispatch.hpp"

namespace spt {

enum class TtmcPath { automatic, one_shot, chain };
const char* ttmc_path_name(TtmcPath path);

struct TtmcPlan {
  uint32_t mode = 0;
  TtmcPath path = TtmcPath::one_shot;       // chosen (never automatic)
  std::vector<uint32_t> chain;              // chain path: contraction order (leaf first)
  std::vector<uint32_t> one_shot_key;       // sort keys of the two paths
  std::vector<uint32_t> chain_key;
  double one_shot_flops = -1;               // W(o); -1 when not estimated (path forced)
  double chain_flops = -1;                  // W(c); -1 when not estimated
  double kronecker_row_flops = 0;           // nnz * P, the textbook one-shot
  uint64_t one_shot_scratch_bytes = 0;      // per-thread blocks, all threads
  uint64_t chain_scratch_bytes = 0;
  uint64_t sorted_copy_bytes = 0;           // 0 when x was already sorted so
  bool order_search = false;                // chain order from the exact search
};

// Orders with at most this many other modes (order <= 5) get the exact
// contraction-order search.
constexpr size_t kMaxExactChainModes = 4;

// D(S) for every set S of 2..N-1 modes (index = bitmask of modes; other
// entries 0): the distinct coordinates of the nonzeros in those modes, by
// radix-sorting packed keys (2 * nnz 64-bit words of scratch while it runs;
// 2^N - N - 2 sorts, shared by every mode's search). Empty when order < 3,
// order - 1 > kMaxExactChainModes, or the packed key of all modes needs
// more than 64 bits.
std::vector<spt_nnz> subset_distinct_counts(const kernels::Exec& exec, const spt_coo_s& x);

// W(chain) for TTMc in `mode` from those counts.
double chain_flops_from_subsets(spt_nnz nnz, const std::vector<spt_nnz>& counts, uint32_t mode,
                                const std::vector<uint32_t>& chain, const std::vector<spt_index>& ranks);

// The chain's contraction order for TTMc in `mode` (rule above).
std::vector<uint32_t> ttmc_chain_order(uint32_t mode, const std::vector<spt_nnz>& distinct);

// counts[p] = number of distinct prefixes of length p+1 of `key` in a tensor
// sorted by `key` (counts.back() <= nnz).
std::vector<spt_nnz> prefix_group_counts(const kernels::Exec& exec, const spt_coo_s& sorted,
                                         const std::vector<uint32_t>& key);

// W(c) from the prefix counts of key (mode, c_{K-1}, .., c_0).
double nested_ttmc_flops(spt_nnz nnz, const std::vector<spt_nnz>& counts, const std::vector<uint32_t>& chain,
                         const std::vector<spt_index>& ranks);
// Per-thread level blocks of a nested kernel with leaf order `chain`, all threads.
uint64_t nested_ttmc_scratch_bytes(const std::vector<uint32_t>& chain, const std::vector<spt_index>& ranks,
                                   int threads, size_t value_size);

// The sorted operands and plans of every mode's TTMc (HOOI, benchmarks):
// one copy of X per mode, in the chosen path's order (x itself when already
// sorted so), made once and reused across iterations.
struct TtmcOperands {
  std::vector<spt_coo_s> copies;
  std::vector<const spt_coo_s*> operand;  // per mode
  std::vector<TtmcPlan> plans;            // per mode
  uint64_t sorted_bytes = 0;              // all copies
};
void prepare_ttmc_operands(const kernels::Exec& exec, const spt_coo_s& x, const std::vector<spt_index>& ranks,
                           TtmcPath requested, TtmcOperands& out);

// Y_(mode) by the plan's path (out: dims[mode] x prod_{m != mode} R_m).
template <typename T>
void run_ttmc(spt_context_s& ctx, const TtmcPlan& plan, const spt_coo_s& sorted, const ConstMatRef<T>* factors,
              MatRef<T> out) {
  if (plan.path == TtmcPath::chain) SPT_DISPATCH(ctx, ttmc_chain, sorted, factors, plan.mode, plan.chain.data(), out);
  else SPT_DISPATCH(ctx, ttmc, sorted, factors, plan.mode, out);
}

// The materialised chain: out = x x_{modes[0]} us[0]^T x_{modes[1]} us[1]^T ...
// (contracted in that order), semi-sparse, dense in `modes`. Validates every
// argument (count, modes in range and distinct, matrices non-NULL, dtype,
// rows == dims[mode], R >= 1, block size overflow). x is sorted once (a
// copy, unless already sorted so) with key (other modes ascending,
// modes[count-1], .., modes[0]); the SsTTM steps then never sort.
void ttm_chain(spt_context_s& ctx, const spt_coo_s& x, const std::vector<uint32_t>& modes,
               const std::vector<const spt_matrix_s*>& us, spt_scoo_s& out);

}  // namespace spt
