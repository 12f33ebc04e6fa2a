// Memoized MTTKRP sequence for CP-ALS (ADATM, Li's dissertation ch. 3),
// on one CSF tree whose levels follow the CP-ALS update order.
//
// For a tree with levels 0..N-1 (level l holds mode mode_order[l]):
//   B_l(f) = sum over children c of f: U_{level l+1}(fid(c)) .* B_{l+1}(c),
//            B_{N-1}(leaf) = value   (the semi-sparse intermediates, "vCSF")
//   T_l(p) = T_{l-1}(parent p) .* U_{level l}(fid(p)),  T_0(p) = U_0(fid(p))
// and the MTTKRP in the mode of level k is
//   out(fid(f)) += T_{k-1}(parent f) .* B_k(f)   for every node f of level k.
// CP-ALS updates one factor after each MTTKRP, so B_l stays valid until a
// factor of a deeper level changes and T_l until a factor of a level <= l
// changes. Calling the levels in order 0, 1, ..., N-1 (cyclically), one
// bottom-up pass at level 0 produces every B_l, and each later level costs
// one top-down step plus its own combine: about 3 sum_l M_l vector
// operations per sweep instead of about N sum_l M_l for N independent
// MTTKRPs (M_l = nodes of level l). Which B_l are kept is chosen by an exact
// search over subsets under a memory budget (a level not kept is recomputed
// from the nearest kept level below it).
//
// Relation to the dissertation's model (§3.4.3, eqs. 3.13-3.14): it prices
// a plan by storage s (the CSF tree plus the kept semi-sparse levels, M_l R
// values each) and time t (one R-wide product per tree node visited), and
// searches n_p producer modes and n_i kept intermediates under a memory
// limit. Its partial MTTKRPs recompute the top-down products from the root
// each time, which is why several producers (n_p ~ sqrt(N/2)) pay off
// there. Here the top-down products T_l are memoized too, so one producer
// already gives ~3 sum_l M_l products per sweep (O(N) instead of O(N^1.5));
// what remains to choose is the dissertation's n_i -- which levels to keep
// -- and that is searched exactly, with the same s and t, under the budget.
//
// Contract (internal; CP-ALS satisfies it): between two calls, only the
// factor of the previous call's mode may change. Any call order is correct
// under that contract; the cyclic order is the fast one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algo/mttkrp_operand.hpp"
#include "core/coo.hpp"
#include "core/csf.hpp"

namespace spt::algo {

// Memoization plan for a tree: which B levels are kept, and the model's
// counts of R-wide vector operations per CP-ALS sweep.
struct MemoPlan {
  std::vector<uint32_t> mode_order;     // tree levels (a rotation of 0..N-1)
  std::vector<bool> keep;               // per level: B_l memoized
  uint64_t memo_bytes = 0;              // kept B levels + scratch (values only)
  uint64_t ops_per_sweep = 0;           // memoized sequence, steady state
  uint64_t ops_per_sweep_plain = 0;     // N independent MTTKRPs on the same tree
  uint64_t ops_per_sweep_coo = 0;       // N COO MTTKRPs: nnz * (N - 1) each
  std::string describe() const;         // one line for logs and benchmarks
};

// Physical memory of the machine (the default memoization budget is a quarter).
uint64_t physical_memory_bytes();

// Nodes per level (M_l) of a tree.
std::vector<uint64_t> level_sizes(const CsfTree& tree);

// The fastest plan whose kept levels fit `budget_bytes` (R-wide values of
// `value_bytes` each), by exhaustive search over the 2^(N-2) subsets
// (N <= 24 levels; beyond that only greedy single levels are tried).
MemoPlan plan_memoization(const std::vector<uint32_t>& mode_order, const std::vector<uint64_t>& level_nodes,
                          uint64_t rank, uint64_t value_bytes, uint64_t budget_bytes);

// Tree level order for the memoized sequence of x: the rotation of the
// update order 0..N-1 that starts at the shortest mode (short modes near the
// root compress the most fibers, as in SPLATT).
std::vector<uint32_t> memo_mode_order(const std::vector<spt_index>& dims);

template <typename T>
class MemoizedCsfOperand final : public MttkrpOperand<T> {
 public:
  // Builds the tree for x (x may be freed afterwards). budget_bytes = 0:
  // default budget (a quarter of physical memory).
  MemoizedCsfOperand(spt_context_s& ctx, const spt_coo_s& x, uint64_t rank, uint64_t budget_bytes);
  void mttkrp(spt_context_s& ctx, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) override;
  const char* name() const override { return "csf-memo"; }

  const MemoPlan& plan() const { return plan_; }
  // R-wide vector operations executed so far (each is R multiply-adds).
  uint64_t ops_done() const { return ops_done_; }
  // Forget every memoized intermediate (after factors changed outside the contract).
  void reset();

 private:
  void bottom_up(const ConstMatRef<T>* factors, uint32_t level, int threads);
  void top_down(const ConstMatRef<T>* factors, uint32_t level, int threads);

  CsfTree tree_;
  uint32_t order_ = 0;
  uint64_t rank_ = 0;
  MemoPlan plan_;
  std::vector<uint32_t> level_of_mode_;
  std::vector<buffer<T>> b_;        // B_l per level (kept levels persist; others scratch)
  std::vector<bool> b_valid_;
  std::vector<buffer<T>> t_;        // T_l per level
  std::vector<bool> t_valid_;
  int last_level_ = -1;             // level of the previous call (its factor may have changed)
  uint64_t ops_done_ = 0;
};

}  // namespace spt::algo
