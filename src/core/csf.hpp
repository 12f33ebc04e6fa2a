// Compressed sparse fiber (CSF) tensors, SPLATT-style, behind the opaque
// spt_csf handle.
//
// A CSF tree stores the nonzeros sorted in a mode order (a permutation of
// the modes, `mode_order[level] = mode`) as a forest: level 0 holds the
// distinct indices of mode_order[0] (the root slices), level l the distinct
// index prefixes of length l+1 (fibers), and the leaf level N-1 one entry per
// nonzero with its index in mode_order[N-1] and its value. Node f of level l
// (l < N-1) owns the children [fptr[l][f], fptr[l][f+1]) of level l+1.
// Repeated coordinates stay separate leaves (MTTKRP sums them, as COO does).
//
// A handle holds one or more trees (the policy): an MTTKRP in mode m runs on
// the tree a cost model rates cheapest for m (tree_for_mode; see
// csf_mttkrp_cost): usually the one rooted at m (race-free output rows),
// but a deeper level of another tree when that keeps large factors near
// the root (their rows are then read in order instead of gathered).
#pragma once

#include <cstdint>
#include <vector>

#include "core/buffer.hpp"
#include "core/coo.hpp"
#include "core/dtype.hpp"

namespace spt {

struct CsfTree {
  std::vector<uint32_t> mode_order;      // level -> mode
  std::vector<buffer<spt_index>> fids;   // per level: node indices in mode_order[level]; leaf level has nnz
  std::vector<buffer<spt_nnz>> fptr;     // per non-leaf level: nodes + 1 child offsets
  ValueStore vals;                       // leaf values (nnz)
  // Some fiber holds a leaf index twice (a repeated coordinate); true
  // unless the builder saw none.
  bool leaf_repeats = true;

  uint32_t levels() const { return static_cast<uint32_t>(mode_order.size()); }
  spt_nnz nodes(uint32_t level) const { return fids[level].size(); }
  spt_nnz nnz() const { return vals.size(); }
  // Level of `mode` in this tree.
  uint32_t level_of(uint32_t mode) const;
  // Bytes of the index, pointer and value arrays.
  uint64_t bytes() const;
  // First leaf under node `node` of `level` (node == nodes(level) gives nnz).
  spt_nnz first_leaf(uint32_t level, spt_nnz node) const;
};

}  // namespace spt

struct spt_csf_s {
  std::vector<spt_index> dims;
  spt_nnz nnz = 0;
  spt_dtype dtype = SPT_FLOAT64;
  spt_csf_policy policy = SPT_CSF_ONEMODE;  // resolved (never AUTO)
  std::vector<spt::CsfTree> trees;
  std::vector<uint32_t> tree_of_mode;  // mode -> index into trees

  uint32_t order() const { return static_cast<uint32_t>(dims.size()); }
  const spt::CsfTree& tree_for_mode(uint32_t mode) const { return trees[tree_of_mode[mode]]; }
  uint64_t bytes() const;
};

namespace spt {

struct Exec;         // core/exec.hpp
struct SummedStats;  // core/exec.hpp

// Mode order of a tree rooted at `root`: root first, then the other modes
// by increasing length (ties by mode number), as SPLATT's default
// (short modes near the root compress the most fibers).
std::vector<uint32_t> csf_mode_order(const std::vector<spt_index>& dims, uint32_t root);

// The shortest mode (ties: lowest number); the root of the ONEMODE tree.
uint32_t csf_shortest_mode(const std::vector<spt_index>& dims);

// Build one tree of x (order >= 2; any dtype; x is not modified) in
// `mode_order` (a permutation of the modes). From packed keys when they fit
// (csf_keyed_build.hpp), else build_csf_tree_by_permutation.
CsfTree build_csf_tree(const Exec& exec, const spt_coo_s& x, const std::vector<uint32_t>& mode_order);
// The same tree through a full sort permutation of x (any coordinates).
CsfTree build_csf_tree_by_permutation(const Exec& exec, const spt_coo_s& x, const std::vector<uint32_t>& mode_order);

// Which of a policy's trees a handle keeps: all of them (the policy as
// asked for), or only those some mode's MTTKRP runs on, plus the first
// (what AUTO keeps: the same MTTKRPs and fits in less memory).
enum class CsfTreeUse { keep_all, drop_unused };

// Build a CSF handle with `policy`. AUTO keeps one tree per mode (ALLMODE:
// every MTTKRP at a root, race-free and cheapest) when the trees are
// estimated to fit in kAutoAllmodeBudget x the COO's bytes, else ONEMODE,
// and frees the trees no mode runs on (CsfTreeUse::drop_unused); it does
// not build the tree rooted at the mode of the first tree's level 1 (the
// first tree with its top two levels swapped) when the first tree serves
// that mode within kCsfSwappedTreeGain of it, nor a tree that the cost
// model of its predicted node counts (csf_predicted_nodes) shows no mode
// would run on.
// Throws INVALID_ARGUMENT for order < 2 or an unknown policy.
constexpr double kAutoAllmodeBudget = 4.0;
void build_csf(const Exec& exec, const spt_coo_s& x, spt_csf_policy policy, spt_csf_s& out);
// The same, taking over `first` as the ONEMODE tree (shortest mode at the
// root) when it has that mode order (e.g. built earlier for format advice);
// `use` for a resolved policy that AUTO chose (drop_unused), as AUTO does.
void build_csf(const Exec& exec, const spt_coo_s& x, spt_csf_policy policy, spt_csf_s& out, CsfTree&& first,
               CsfTreeUse use);

// The handle of a resolved `policy` (not AUTO) from its first tree (the
// ONEMODE tree: shortest mode at the root) alone, taken over: the other
// trees are built from it, by a walk of it when the coordinates fit a 64-bit
// key, else from its csf_tree_view. The same handle as build_csf from the
// tensor the tree came from; lets a caller free that tensor first.
void build_csf_from_first_tree(const Exec& exec, const std::vector<spt_index>& dims, spt_csf_policy policy,
                               CsfTree&& first, CsfTreeUse use, spt_csf_s& out);

// A read-only COO view of `tree`'s nonzeros in the tree's order (the same
// nonzeros, repeats kept and in the relative order the tree has them): the
// leaf level's indices and the values are the tree's own arrays; the indices
// of each upper level are expanded into `upper` (one array of nnz per level
// above the leaf), which must outlive the view, as must the tree's arrays.
// A tree built from the view (build_csf_tree) equals one built from the COO
// the tree came from, since ties keep that order. Lets the other trees of a
// handle be built after the COO is freed.
spt_coo_s csf_tree_view(const CsfTree& tree, const std::vector<spt_index>& dims, std::vector<buffer<spt_index>>& upper,
                        int threads);

// Decode the handle's first tree into a new owning COO: the same dims,
// dtype and nonzeros (repeats kept), in that tree's mode order.
spt_coo_s csf_to_coo(const spt_csf_s& x);

// Estimated bytes of the ALLMODE trees from the ONEMODE tree (other roots
// compress about as well, so N times it), and whether AUTO picks ALLMODE
// for it (within kAutoAllmodeBudget x the COO's bytes).
double csf_allmode_bytes_estimate(const CsfTree& onemode, uint32_t order);
bool csf_auto_picks_allmode(const spt_coo_s& x, const CsfTree& onemode);

// Which tree an MTTKRP in a mode runs on: a cost model in units of one
// rank-vector operation on cached data, summed over the tree's levels:
// one per node, kCsfMissCost per node whose factor row (or output row, at
// the output level) comes from a matrix larger than kCsfCachedFactorBytes
// (random gathers from beyond L2), except at the root where rows are taken
// in increasing order; below the root an output row update (read, add,
// write) costs kCsfOutputCost, plus the private copies (zeroed and summed),
// or kCsfAtomicCost per node with atomics. Calibrated on
// mathsx-user-tag-week (176k x 1.6k x 388: big factors belong near the
// root, so its user-rooted tree wins in every mode) and flights-2001 (all
// factors cached: the tree rooted at the mode wins).
// build_csf evaluates it for kCsfModelRank (the usual CP rank).
constexpr double kCsfCachedFactorBytes = 512.0 * 1024;
constexpr double kCsfMissCost = 3.0;
constexpr double kCsfOutputCost = 1.5;
constexpr double kCsfAtomicCost = 10.0;
constexpr double kCsfPrivateBytesAlways = 8.0 * 1024 * 1024;  // as the CPU MTTKRP's rule
constexpr double kCsfModelRank = 16;
// The cost of the levels from `first_level` down only (0: the whole tree).
double csf_mttkrp_cost(const CsfTree& tree, const std::vector<spt_index>& dims, uint32_t mode, double row_bytes,
                       int threads, uint32_t first_level = 0);
// The same for a tree of `mode_order` with `nodes[l]` nodes on level l and
// `nnz` leaves. The cost grows with every node count, so counts that are
// lower bounds give a lower bound.
double csf_mttkrp_cost(const std::vector<uint32_t>& mode_order, const std::vector<double>& nodes, spt_nnz nnz,
                       const std::vector<spt_index>& dims, uint32_t mode, double row_bytes, int threads,
                       uint32_t first_level = 0);

// Node counts per level of the tree of `mode_order` that would be built
// from `first` (the handle's first tree), without building it. Exact on
// every level when the new tree is `first` with one mode moved to the root
// (as csf_mode_order's trees are): counted with one 32-bit mark per index
// of that mode and thread (fewer threads, or none, above half the first
// tree's bytes), at most one pass
// over the mode's level of `first` per level above it. Otherwise, and
// where the marks do not fit, lower bounds (every node has a child; a level
// of `first` over a subset of a level's modes has at most as many nodes).
std::vector<double> csf_predicted_nodes(const Exec& exec, const CsfTree& first, const std::vector<spt_index>& dims,
                                        const std::vector<uint32_t>& mode_order);
// The largest share of a mode's cost on the first tree that a tree with its
// top two levels swapped could save before AUTO builds that tree (see
// assemble_csf in csf.cpp).
constexpr double kCsfSwappedTreeGain = 0.03;

// Name of a resolved policy for logs: "onemode", "twomode", "allmode".
const char* csf_policy_name(spt_csf_policy policy);

// Squared norm of the tensor with repeated coordinates summed (double
// accumulation).
double csf_norm_squared(const spt_csf_s& x);
// The squared norm and the distinct coordinates of `tree`'s nonzeros with
// repeated coordinates summed (repeats are adjacent leaves of one fiber),
// on exec.threads threads (the norm's rounding follows the split).
SummedStats csf_summed_stats(const Exec& exec, const CsfTree& tree);

}  // namespace spt
