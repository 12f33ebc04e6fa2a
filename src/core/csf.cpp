// Building CSF trees from a COO tensor (see csf.hpp for the layout).
//
// When the coordinates fit a 64-bit key (the usual case), a tree is built
// from packed keys (core/csf_keyed_build.cpp), also from another tree of
// the handle. Otherwise one tree costs a sort of a permutation (the COO is
// never modified) and two parallel passes over the sorted nonzeros: the
// first finds, for each nonzero, the shallowest level where its coordinates
// differ from the previous nonzero's (it opens a new node on that level and
// every deeper one) and counts nodes per level and chunk; the second writes
// the node indices and child pointers at offsets from the prefix sums of
// the counts.
#include "core/csf.hpp"

#include <omp.h>

#include <algorithm>
#include <numeric>

#include "core/bits.hpp"
#include "core/csf_keyed_build.hpp"
#include "core/exec.hpp"
#include "core/group_starts.hpp"
#include "core/parallel_errors.hpp"
#include "core/sort.hpp"

namespace spt {

uint32_t CsfTree::level_of(uint32_t mode) const {
  for (uint32_t l = 0; l < levels(); ++l)
    if (mode_order[l] == mode) return l;
  fail(SPT_ERR_INTERNAL, "mode ", mode, " is not in the CSF tree");
}

uint64_t CsfTree::bytes() const {
  uint64_t b = 0;
  for (const auto& f : fids) b += f.size() * sizeof(spt_index);
  for (const auto& p : fptr) b += p.size() * sizeof(spt_nnz);
  b += vals.size() * dtype_size(vals.dtype());
  return b;
}

spt_nnz CsfTree::first_leaf(uint32_t level, spt_nnz node) const {
  for (uint32_t l = level; l + 1 < levels(); ++l) node = fptr[l][node];
  return node;
}

}  // namespace spt

uint64_t spt_csf_s::bytes() const {
  uint64_t b = 0;
  for (const auto& t : trees) b += t.bytes();
  return b;
}

namespace spt {

namespace {

// out[k] = the index of the level-l node above leaf k, for every leaf of t
// (a node's leaves are a contiguous range).
void expand_level(const CsfTree& t, uint32_t l, spt_index* out, int threads) {
  const spt_index* fid = t.fids[l].data();
  const spt_nnz nodes = t.nodes(l);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (spt_nnz f = 0; f < nodes; ++f) {
    const spt_nnz end = t.first_leaf(l, f + 1);
    for (spt_nnz k = t.first_leaf(l, f); k < end; ++k) out[k] = fid[f];
  }
}

}  // namespace

spt_coo_s csf_to_coo(const spt_csf_s& x) {
  spt_coo_s y;
  y.init_owned(x.dtype, x.dims, x.nnz);
  if (x.trees.empty() || x.nnz == 0) return y;
  const CsfTree& t = x.trees.front();
  const uint32_t leaf = t.levels() - 1;
  for (uint32_t l = 0; l < leaf; ++l) expand_level(t, l, y.mutable_ind(t.mode_order[l]), 1);
  spt_index* leaf_ind = y.mutable_ind(t.mode_order[leaf]);
  for (spt_nnz k = 0; k < t.nnz(); ++k) leaf_ind[k] = t.fids[leaf][k];
  with_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* v = t.vals.get<T>().data();
    std::copy(v, v + t.nnz(), y.mutable_values<T>());
  });
  return y;
}

spt_coo_s csf_tree_view(const CsfTree& t, const std::vector<spt_index>& dims, std::vector<buffer<spt_index>>& upper,
                        int threads) {
  const uint32_t leaf = t.levels() - 1;
  const spt_nnz n = t.nnz();
  upper.assign(leaf, buffer<spt_index>());
  spt_coo_s v;
  v.dims = dims;
  v.nnz = n;
  v.read_only = true;
  v.own_val.set_dtype(t.vals.dtype());
  v.ind.assign(t.levels(), nullptr);
  for (uint32_t l = 0; l < leaf; ++l) {
    resize_named(upper[l], n, [&] { return cat("CSF view: the indices of mode ", t.mode_order[l], " (nnz)"); });
    expand_level(t, l, upper[l].data(), threads);
    v.ind[t.mode_order[l]] = upper[l].data();
  }
  v.ind[t.mode_order[leaf]] = t.fids[leaf].data();
  v.val = t.vals.data();
  return v;
}

}  // namespace spt

namespace spt {

namespace {

using sorting::chunk_begin;

template <typename T, typename Perm>
void gather_values(const spt_coo_s& x, const buffer<Perm>& perm, ValueStore& out, int threads) {
  out.set_dtype(dtype_of<T>());
  resize_named(out.get<T>(), x.nnz, [] { return std::string("CSF: the values (nnz)"); });
  const T* src = x.values<T>();
  T* dst = out.get<T>().data();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (spt_nnz k = 0; k < x.nnz; ++k) dst[k] = src[perm[k]];
}

// Gathers, in the order of `perm`, x's values and its leaf-level indices
// into the tree t (mode order set, levels sized).
template <typename Perm>
void gather_leaves(const spt_coo_s& x, const buffer<Perm>& perm, CsfTree& t, int threads) {
  const spt_nnz n = x.nnz;
  const uint32_t leaf = x.order() - 1;
  with_dtype(x.dtype(), [&](auto tag) { gather_values<typename decltype(tag)::type>(x, perm, t.vals, threads); });
  resize_named(t.fids[leaf], n, [&] { return cat("CSF: the leaf indices of mode ", t.mode_order[leaf], " (nnz)"); });
  spt_index* dst = t.fids[leaf].data();
  const spt_index* src = x.ind[t.mode_order[leaf]];
#pragma omp parallel for num_threads(threads) schedule(static)
  for (spt_nnz k = 0; k < n; ++k) dst[k] = src[perm[k]];
}

// The upper levels of t (mode order set, values and leaf indices gathered)
// from x in the order of `perm`: the first pass finds, for each nonzero, the
// shallowest level where its coordinates differ from the previous nonzero's
// (it opens a node there and on every deeper level) and counts nodes per
// level and chunk; the second writes the node indices and child pointers at
// offsets from the prefix sums of the counts.
template <typename Perm>
void build_upper_levels(const spt_coo_s& x, const buffer<Perm>& perm, CsfTree& t, int threads) {
  const spt_nnz n = x.nnz;
  const uint32_t leaf = x.order() - 1;
  const std::vector<uint32_t>& mode_order = t.mode_order;
  std::vector<const spt_index*> ind(leaf);
  for (uint32_t l = 0; l < leaf; ++l) ind[l] = x.ind[mode_order[l]];

  // depth[k]: shallowest level where nonzero k differs from k-1 (0 for the
  // first one; `leaf` when only the leaf index differs or k repeats k-1).
  buffer<uint8_t> depth;  // leaf <= SPT_MAX_ORDER - 1 fits a byte
  static_assert(SPT_MAX_ORDER <= 256, "a node depth is stored in a byte");
  resize_named(depth, n, [] { return std::string("CSF: the node depth of each nonzero (nnz)"); });
  // counts[c * leaf + l]: nodes opened on level l by chunk c.
  std::vector<spt_nnz> counts(static_cast<size_t>(threads + 1) * leaf, 0);
  const spt_index* leaf_ind = t.fids[leaf].data();
  std::vector<char> repeats(threads, 0);  // per chunk: a leaf index repeats the one before it in its fiber
  ParallelErrors errors;  // per-chunk buffers below may fail to allocate
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int c = 0; c < threads; ++c) {
    errors.run([&] {
      std::vector<spt_nnz> local(leaf, 0);
      // The upper coordinates of nonzero k-1 and k (each read once).
      std::vector<spt_index> prev(leaf), cur(leaf);
      bool repeat = false;
      // Bounds in locals: the stores below could alias the shared variables
      // the loop would otherwise re-read (and re-divide) on every nonzero.
      const spt_nnz begin = chunk_begin(n, c, threads), end = chunk_begin(n, c + 1, threads);
      if (begin > 0 && begin < end)
        for (uint32_t l = 0; l < leaf; ++l) prev[l] = ind[l][perm[begin - 1]];
      for (spt_nnz k = begin; k < end; ++k) {
        for (uint32_t l = 0; l < leaf; ++l) cur[l] = ind[l][perm[k]];
        uint32_t d = 0;
        if (k > 0)
          while (d < leaf && cur[d] == prev[d]) ++d;
        depth[k] = static_cast<uint8_t>(d);
        repeat = repeat || (k > 0 && d == leaf && leaf_ind[k] == leaf_ind[k - 1]);
        for (uint32_t l = d; l < leaf; ++l) ++local[l];
        prev.swap(cur);
      }
      for (uint32_t l = 0; l < leaf; ++l) counts[static_cast<size_t>(c + 1) * leaf + l] = local[l];
      repeats[c] = repeat;
    });
  }
  errors.rethrow();
  t.leaf_repeats = std::find(repeats.begin(), repeats.end(), 1) != repeats.end();
  size_upper_levels(t, counts, threads);

#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int c = 0; c < threads; ++c) {
    errors.run([&] {
      std::vector<spt_nnz> next(counts.begin() + static_cast<size_t>(c) * leaf,
                                counts.begin() + static_cast<size_t>(c + 1) * leaf);
      const spt_nnz begin = chunk_begin(n, c, threads), end = chunk_begin(n, c + 1, threads);
      for (spt_nnz k = begin; k < end; ++k) {
        for (uint32_t l = depth[k]; l < leaf; ++l) {
          // Read the child level's counter before it advances for this nonzero.
          t.fids[l][next[l]] = ind[l][perm[k]];
          t.fptr[l][next[l]] = l + 1 < leaf ? next[l + 1] : k;
          ++next[l];
        }
      }
    });
  }
  errors.rethrow();
  for (uint32_t l = 0; l < leaf; ++l) t.fptr[l][t.nodes(l)] = l + 1 < leaf ? t.nodes(l + 1) : n;
}

}  // namespace

std::vector<uint32_t> csf_mode_order(const std::vector<spt_index>& dims, uint32_t root) {
  std::vector<uint32_t> order;
  order.push_back(root);
  for (uint32_t m = 0; m < dims.size(); ++m)
    if (m != root) order.push_back(m);
  std::stable_sort(order.begin() + 1, order.end(), [&](uint32_t a, uint32_t b) { return dims[a] < dims[b]; });
  return order;
}

uint32_t csf_shortest_mode(const std::vector<spt_index>& dims) {
  return static_cast<uint32_t>(std::min_element(dims.begin(), dims.end()) - dims.begin());
}

CsfTree build_csf_tree(const Exec& exec, const spt_coo_s& x, const std::vector<uint32_t>& mode_order) {
  const uint32_t order = x.order();
  require(order >= 2, "CSF needs a tensor of order >= 2, got order ", order);
  sorting::check_mode_order(order, mode_order);
  if (csf_keyed_build_applies(x.dims, x.nnz)) return build_csf_tree_keyed(exec, x, mode_order);
  return build_csf_tree_by_permutation(exec, x, mode_order);
}

CsfTree build_csf_tree_by_permutation(const Exec& exec, const spt_coo_s& x, const std::vector<uint32_t>& mode_order) {
  const uint32_t order = x.order();
  require(order >= 2, "CSF needs a tensor of order >= 2, got order ", order);
  sorting::check_mode_order(order, mode_order);
  const spt_nnz n = x.nnz;
  const uint32_t leaf = order - 1;
  const int threads = threads_for_work(exec.threads, n, 16384);

  CsfTree t;
  t.mode_order = mode_order;
  t.fids.resize(order);
  t.fptr.resize(leaf);

  // The values and the leaf level's indices are gathered through the
  // permutation (32-bit when nnz allows) straight into the tree; the upper
  // levels' indices are read through it too, so a build holds the
  // permutation, the tree's arrays and a byte per nonzero, and no sorted
  // copy of the coordinates.
  if (n <= spt_nnz(UINT32_MAX)) {
    buffer<uint32_t> perm32;
    {
      buffer<spt_nnz> wide = sorting::sort_permutation(exec, x, mode_order);
      resize_named(perm32, n, [] { return std::string("CSF: the sort permutation (nnz)"); });
#pragma omp parallel for num_threads(threads) schedule(static)
      for (spt_nnz k = 0; k < n; ++k) perm32[k] = static_cast<uint32_t>(wide[k]);
    }
    gather_leaves(x, perm32, t, threads);
    build_upper_levels(x, perm32, t, threads);
  } else {
    const buffer<spt_nnz> perm = sorting::sort_permutation(exec, x, mode_order);
    gather_leaves(x, perm, t, threads);
    build_upper_levels(x, perm, t, threads);
  }
  return t;
}

double csf_mttkrp_cost(const std::vector<uint32_t>& mode_order, const std::vector<double>& nodes, spt_nnz nnz,
                       const std::vector<spt_index>& dims, uint32_t mode, double row_bytes, int threads,
                       uint32_t first_level) {
  const uint32_t levels = static_cast<uint32_t>(mode_order.size());
  const uint32_t target = static_cast<uint32_t>(std::find(mode_order.begin(), mode_order.end(), mode) - mode_order.begin());
  require(target < levels, "mode ", mode, " is not in the CSF tree");
  const auto fits = [&](uint32_t m) { return double(dims[m]) * row_bytes <= kCsfCachedFactorBytes; };
  double cost = 0;
  for (uint32_t l = first_level; l < levels; ++l) {
    if (l == 0) {
      // Root rows (factor reads, or output rows) go in increasing order.
      cost += nodes[l];
    } else if (l == target) {
      const double out_rows = dims[mode];
      const double private_elems = double(threads - 1) * out_rows * (row_bytes / 4);
      const bool privatized = private_elems * 4 <= kCsfPrivateBytesAlways ||
                              private_elems <= double(nnz) * (row_bytes / 4) / 2;
      if (privatized) cost += nodes[l] * (fits(mode) ? kCsfOutputCost : kCsfMissCost) + 2.0 * (threads - 1) * out_rows;
      else cost += nodes[l] * kCsfAtomicCost;
    } else {
      cost += nodes[l] * (fits(mode_order[l]) ? 1.0 : kCsfMissCost);
    }
  }
  return cost;
}

double csf_mttkrp_cost(const CsfTree& tree, const std::vector<spt_index>& dims, uint32_t mode, double row_bytes,
                       int threads, uint32_t first_level) {
  std::vector<double> nodes(tree.levels());
  for (uint32_t l = 0; l < tree.levels(); ++l) nodes[l] = static_cast<double>(tree.nodes(l));
  return csf_mttkrp_cost(tree.mode_order, nodes, tree.nnz(), dims, mode, row_bytes, threads, first_level);
}

const char* csf_policy_name(spt_csf_policy policy) {
  switch (policy) {
    case SPT_CSF_ONEMODE: return "onemode";
    case SPT_CSF_TWOMODE: return "twomode";
    case SPT_CSF_ALLMODE: return "allmode";
    default: return "auto";
  }
}

double csf_allmode_bytes_estimate(const CsfTree& onemode, uint32_t order) {
  return double(onemode.bytes()) * order;
}

bool csf_auto_picks_allmode(const spt_coo_s& x, const CsfTree& onemode) {
  const uint64_t coo_bytes = x.nnz * (uint64_t(x.order()) * sizeof(spt_index) + dtype_size(x.dtype()));
  return csf_allmode_bytes_estimate(onemode, x.order()) <= kAutoAllmodeBudget * double(coo_bytes);
}

void build_csf(const Exec& exec, const spt_coo_s& x, spt_csf_policy policy, spt_csf_s& out) {
  CsfTree none;  // build the first tree here
  build_csf(exec, x, policy, out, std::move(none), CsfTreeUse::keep_all);
}

namespace {

void check_csf_policy(spt_csf_policy policy) {
  require(policy == SPT_CSF_AUTO || policy == SPT_CSF_ONEMODE || policy == SPT_CSF_TWOMODE ||
              policy == SPT_CSF_ALLMODE,
          "policy must be SPT_CSF_AUTO, _ONEMODE, _TWOMODE or _ALLMODE, got ", static_cast<int>(policy));
}

// The handle of `policy` (resolved) whose first tree is `first` (the
// ONEMODE tree, with the shortest mode at the root); make_tree(root_tree,
// mode_order) builds each other tree. Each mode runs on the tree the cost
// model rates cheapest (the first of equals). With CsfTreeUse::drop_unused
// a tree no mode runs on is freed: as soon as it is built when it is not
// cheaper for any mode than the trees before it, else once every tree is
// built. The first tree is always kept (the fit's inner product walks it).
template <typename MakeTree>
void assemble_csf(const Exec& exec, const std::vector<spt_index>& dims, spt_dtype dtype, spt_csf_policy policy,
                  CsfTree&& first, MakeTree&& make_tree, CsfTreeUse use, spt_csf_s& out) {
  const uint32_t order = static_cast<uint32_t>(dims.size());
  spt_csf_s result;
  result.dims = dims;
  result.nnz = first.nnz();
  result.dtype = dtype;
  result.policy = policy;
  result.trees.reserve(order);  // make_tree reads trees[0] while others are added
  result.trees.push_back(std::move(first));
  const double row_bytes = kCsfModelRank * dtype_size(dtype);
  const int threads = std::max(1, exec.threads);
  // best[m]: the cheapest cost of mode m so far, on tree tree_of_mode[m].
  std::vector<double> best(order);
  result.tree_of_mode.assign(order, 0);
  for (uint32_t m = 0; m < order; ++m) best[m] = csf_mttkrp_cost(result.trees[0], dims, m, row_bytes, threads);
  auto add_tree = [&](uint32_t root) {
    const std::vector<uint32_t> mode_order = csf_mode_order(dims, root);
    if (use == CsfTreeUse::drop_unused) {
      // A tree cheaper for no mode is freed as soon as it is built; when
      // the cost of lower bounds on its node counts already shows that, it
      // is not built (its build costs about as much as the first tree's).
      const std::vector<double> nodes = csf_predicted_nodes(exec, result.trees[0], dims, mode_order);
      bool may_be_used = false;
      for (uint32_t m = 0; m < order && !may_be_used; ++m)
        may_be_used = csf_mttkrp_cost(mode_order, nodes, result.nnz, dims, m, row_bytes, threads) < best[m];
      if (!may_be_used) return;
    }
    result.trees.push_back(make_tree(result.trees[0], mode_order));
    const uint32_t t = static_cast<uint32_t>(result.trees.size() - 1);
    bool used = false;
    for (uint32_t m = 0; m < order; ++m) {
      const double cost = csf_mttkrp_cost(result.trees[t], dims, m, row_bytes, threads);
      if (cost < best[m]) {
        best[m] = cost;
        result.tree_of_mode[m] = t;
        used = true;
      }
    }
    if (!used && use == CsfTreeUse::drop_unused) result.trees.pop_back();
  };
  if (policy == SPT_CSF_TWOMODE) {
    add_tree(result.trees[0].mode_order.back());
  } else if (policy == SPT_CSF_ALLMODE) {
    const uint32_t shortest = result.trees[0].mode_order.front();
    std::vector<uint32_t> swapped = result.trees[0].mode_order;
    std::swap(swapped[0], swapped[1]);
    for (uint32_t m = 0; m < order; ++m) {
      if (m == shortest) continue;
      // The tree rooted at the mode at level 1 of the first tree is the
      // first with its top two levels swapped (csf_mode_order), so the two
      // share every level below and that mode's MTTKRP can cost at most
      // the first tree's top two levels less on it. When those are a small
      // share of its cost, the tree (another copy of every value and leaf
      // index) is not worth building.
      if (use == CsfTreeUse::drop_unused && csf_mode_order(dims, m) == swapped) {
        const double whole = csf_mttkrp_cost(result.trees[0], dims, m, row_bytes, threads);
        const double below = csf_mttkrp_cost(result.trees[0], dims, m, row_bytes, threads, 2);
        if (whole - below <= kCsfSwappedTreeGain * whole) continue;
      }
      add_tree(m);
    }
  }
  if (use == CsfTreeUse::drop_unused) {
    // Trees that later ones replaced in every mode.
    std::vector<uint32_t> new_index(result.trees.size(), 0);
    std::vector<bool> runs(result.trees.size(), false);
    runs[0] = true;
    for (uint32_t m = 0; m < order; ++m) runs[result.tree_of_mode[m]] = true;
    std::vector<CsfTree> kept;
    for (size_t t = 0; t < result.trees.size(); ++t) {
      if (!runs[t]) continue;
      new_index[t] = static_cast<uint32_t>(kept.size());
      kept.push_back(std::move(result.trees[t]));
    }
    result.trees = std::move(kept);
    for (uint32_t m = 0; m < order; ++m) result.tree_of_mode[m] = new_index[result.tree_of_mode[m]];
  }
  out = std::move(result);
}

// The other trees from the first: by a walk of it when the keys fit, else
// from a COO view of it (upper levels expanded).
CsfTree tree_from_first(const Exec& exec, const CsfTree& first, const std::vector<spt_index>& dims,
                        const std::vector<uint32_t>& mode_order) {
  if (csf_keyed_build_applies(dims, first.nnz())) return build_csf_tree_keyed(exec, first, dims, mode_order);
  std::vector<buffer<spt_index>> upper;
  const spt_coo_s view = csf_tree_view(first, dims, upper, std::max(1, exec.threads));
  return build_csf_tree_by_permutation(exec, view, mode_order);
}

}  // namespace

void build_csf(const Exec& exec, const spt_coo_s& x, spt_csf_policy policy, spt_csf_s& out, CsfTree&& first,
               CsfTreeUse use) {
  const uint32_t order = x.order();
  require(order >= 2, "CSF needs a tensor of order >= 2, got order ", order);
  check_csf_policy(policy);
  // The ONEMODE tree (shortest mode at the root) is also the ALLMODE tree
  // rooted at that mode, so every policy starts with it.
  const std::vector<uint32_t> first_order = csf_mode_order(x.dims, csf_shortest_mode(x.dims));
  CsfTree root_tree = first.mode_order == first_order && first.nnz() == x.nnz ? std::move(first)
                                                                               : build_csf_tree(exec, x, first_order);
  if (policy == SPT_CSF_AUTO) {
    policy = csf_auto_picks_allmode(x, root_tree) ? SPT_CSF_ALLMODE : SPT_CSF_ONEMODE;
    use = CsfTreeUse::drop_unused;
  }
  assemble_csf(exec, x.dims, x.dtype(), policy, std::move(root_tree),
               [&](const CsfTree&, const std::vector<uint32_t>& mode_order) {
                 return build_csf_tree(exec, x, mode_order);
               },
               use, out);
}

void build_csf_from_first_tree(const Exec& exec, const std::vector<spt_index>& dims, spt_csf_policy policy,
                               CsfTree&& first, CsfTreeUse use, spt_csf_s& out) {
  require(dims.size() >= 2, "CSF needs a tensor of order >= 2, got order ", dims.size());
  check_csf_policy(policy);
  require(policy != SPT_CSF_AUTO, "build_csf_from_first_tree needs a resolved policy");
  require(first.mode_order == csf_mode_order(dims, csf_shortest_mode(dims)),
          "build_csf_from_first_tree needs the tree rooted at the shortest mode");
  const spt_dtype dtype = first.vals.dtype();
  assemble_csf(exec, dims, dtype, policy, std::move(first),
               [&](const CsfTree& root_tree, const std::vector<uint32_t>& mode_order) {
                 return tree_from_first(exec, root_tree, dims, mode_order);
               },
               use, out);
}

SummedStats csf_summed_stats(const Exec& exec, const CsfTree& t) {
  SummedStats stats;
  const spt_nnz n = t.nnz();
  if (n == 0 || t.levels() < 2) return stats;
  const uint32_t leaf = t.levels() - 1;
  const spt_index* fid = t.fids[leaf].data();
  const spt_nnz* fptr = t.fptr[leaf - 1].data();
  const spt_nnz fibers = t.nodes(leaf - 1);
  const int chunks = threads_for_work(std::max(1, exec.threads), n, 1 << 16);
  std::vector<double> squares(chunks, 0.0);
  std::vector<spt_nnz> runs(chunks, 0);
  with_dtype(t.vals.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* v = t.vals.get<T>().data();
#pragma omp parallel for num_threads(chunks) schedule(static, 1) if (chunks > 1)
    for (int c = 0; c < chunks; ++c) {
      double s = 0.0;
      spt_nnz count = 0;
      if (!t.leaf_repeats) {
        for (spt_nnz k = sorting::chunk_begin(n, c, chunks); k < sorting::chunk_begin(n, c + 1, chunks); ++k) s += double(v[k]) * v[k];
        count = sorting::chunk_begin(n, c + 1, chunks) - sorting::chunk_begin(n, c, chunks);
      } else {
        // Repeats of a coordinate are adjacent leaves of one fiber: summed first.
        for (spt_nnz f = sorting::chunk_begin(fibers, c, chunks); f < sorting::chunk_begin(fibers, c + 1, chunks); ++f) {
          for (spt_nnz k = fptr[f]; k < fptr[f + 1];) {
            double sum = v[k];
            spt_nnz j = k + 1;
            for (; j < fptr[f + 1] && fid[j] == fid[k]; ++j) sum += v[j];
            s += sum * sum;
            ++count;
            k = j;
          }
        }
      }
      squares[c] = s;
      runs[c] = count;
    }
  });
  for (int c = 0; c < chunks; ++c) {
    stats.norm_squared += squares[c];
    stats.distinct += runs[c];
  }
  return stats;
}

double csf_norm_squared(const spt_csf_s& x) {
  // One chunk: summed in the tree's order, whatever the thread count.
  return x.trees.empty() ? 0.0 : csf_summed_stats(Exec{1}, x.trees[0]).norm_squared;
}

}  // namespace spt
