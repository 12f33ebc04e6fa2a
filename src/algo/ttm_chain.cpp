// TTM chains and the TTMc path choice; see ttm_chain.hpp.
#include "algo/ttm_chain.hpp"

#include <omp.h>

#include <algorithm>
#include <memory>
#include <numeric>

#include "core/radix_sort.hpp"
#include "core/sort.hpp"
#include "kernels/ttm_chain.hpp"
#include "kernels/ttmc.hpp"

namespace spt {

const char* ttmc_path_name(TtmcPath path) {
  switch (path) {
    case TtmcPath::one_shot: return "one_shot";
    case TtmcPath::chain: return "chain";
    default: return "auto";
  }
}

std::vector<uint32_t> ttmc_chain_order(uint32_t mode, const std::vector<spt_nnz>& distinct) {
  std::vector<uint32_t> chain;
  for (uint32_t m = 0; m < distinct.size(); ++m)
    if (m != mode) chain.push_back(m);
  std::stable_sort(chain.begin(), chain.end(), [&](uint32_t a, uint32_t b) { return distinct[a] > distinct[b]; });
  return chain;
}

std::vector<spt_nnz> prefix_group_counts(const kernels::Exec& exec, const spt_coo_s& sorted,
                                         const std::vector<uint32_t>& key) {
  const size_t len = key.size();
  std::vector<spt_nnz> counts(len, 0);
  const spt_nnz n = sorted.nnz;
  if (n == 0) return counts;
  std::vector<const spt_index*> ind(len);
  for (size_t p = 0; p < len; ++p) ind[p] = sorted.ind[key[p]];
  const int threads = std::max(1, exec.threads);
  // new_at[q] = nonzeros whose first differing key position (from the
  // previous nonzero) is q; a change at q starts a new prefix of every
  // length > q.
  std::vector<std::vector<spt_nnz>> partial(threads, std::vector<spt_nnz>(len, 0));
#pragma omp parallel num_threads(threads)
  {
    std::vector<spt_nnz>& mine = partial[omp_get_thread_num()];
#pragma omp for schedule(static)
    for (spt_nnz k = 1; k < n; ++k)
      for (size_t q = 0; q < len; ++q)
        if (ind[q][k] != ind[q][k - 1]) {
          ++mine[q];
          break;
        }
  }
  std::vector<spt_nnz> new_at(len, 0);
  for (const auto& part : partial)
    for (size_t q = 0; q < len; ++q) new_at[q] += part[q];
  spt_nnz running = 1;  // the first nonzero opens one prefix of every length
  for (size_t p = 0; p < len; ++p) {
    running += new_at[p];
    counts[p] = running;
  }
  return counts;
}

double nested_ttmc_flops(spt_nnz nnz, const std::vector<spt_nnz>& counts, const std::vector<uint32_t>& chain,
                         const std::vector<spt_index>& ranks) {
  // counts[p]: prefixes of length p+1 of (n, c_{K-1}, .., c_0); level-j
  // groups G_j are the prefixes of length K - j, i.e. counts[K - j - 1].
  const size_t k = chain.size();
  double work = static_cast<double>(nnz) * ranks[chain[0]];
  double len = ranks[chain[0]];
  for (size_t j = 0; j + 1 < k; ++j) {
    len *= ranks[chain[j + 1]];
    work += static_cast<double>(counts[k - j - 1]) * len;
  }
  return work;
}

uint64_t nested_ttmc_scratch_bytes(const std::vector<uint32_t>& chain, const std::vector<spt_index>& ranks,
                                   int threads, size_t value_size) {
  uint64_t values = 0, len = 1;
  for (size_t j = 0; j + 1 < chain.size(); ++j) {
    len *= ranks[chain[j]];
    values += len;
  }
  return values * static_cast<uint64_t>(std::max(1, threads)) * value_size;
}

namespace {

uint64_t coo_bytes(const spt_coo_s& x) {
  return x.nnz * (static_cast<uint64_t>(x.order()) * sizeof(spt_index) + dtype_size(x.dtype()));
}

// x itself when sorted by key, else a sorted copy appended to `copies`.
const spt_coo_s* sorted_by_key(const kernels::Exec& exec, const spt_coo_s& x, const std::vector<uint32_t>& key,
                               std::vector<std::unique_ptr<spt_coo_s>>& held) {
  if (x.sorted_by == key) return &x;
  auto copy = std::make_unique<spt_coo_s>(sorting::permuted_copy(exec, x, sorting::sort_permutation(exec, x, key)));
  copy->sorted_by = key;
  held.push_back(std::move(copy));
  return held.back().get();
}

}  // namespace

std::vector<spt_nnz> subset_distinct_counts(const kernels::Exec& exec, const spt_coo_s& x) {
  const uint32_t order = x.order();
  if (order < 3 || order - 1 > kMaxExactChainModes) return {};
  std::vector<int> bits(order, 0);
  int total = 0;
  for (uint32_t m = 0; m < order; ++m) {
    while (bits[m] < 32 && (spt_index(1) << bits[m]) < x.dims[m]) ++bits[m];
    total += bits[m];
  }
  if (total > 64) return {};  // a packed key would not fit (the rule is used instead)
  const spt_nnz n = x.nnz;
  const int threads = std::max(1, exec.threads);
  std::vector<spt_nnz> counts(size_t(1) << order, 0);
  buffer<uint64_t> keys(n), scratch;
  for (uint32_t mask = 1; mask + 1 < (1u << order); ++mask) {
    const int members = __builtin_popcount(mask);
    if (members < 2) continue;
    std::vector<uint32_t> modes;
    std::vector<int> shift;
    int used = 0;
    for (uint32_t m = 0; m < order; ++m)
      if (mask & (1u << m)) {
        modes.push_back(m);
        shift.push_back(used);
        used += bits[m];
      }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz e = 0; e < n; ++e) {
      uint64_t key = 0;
      for (size_t q = 0; q < modes.size(); ++q) key |= static_cast<uint64_t>(x.ind[modes[q]][e]) << shift[q];
      keys[e] = key;
    }
    sorting::radix_sort(keys, scratch, 0, used, threads);
    spt_nnz distinct = n > 0 ? 1 : 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : distinct)
    for (spt_nnz e = 1; e < n; ++e) distinct += keys[e] != keys[e - 1];
    counts[mask] = distinct;
  }
  return counts;
}

double chain_flops_from_subsets(spt_nnz nnz, const std::vector<spt_nnz>& counts, uint32_t mode,
                                const std::vector<uint32_t>& chain, const std::vector<spt_index>& ranks) {
  // G_j = D({mode} + {chain[j+1..K-1]}); bit m of a mask = mode m.
  const size_t k = chain.size();
  double work = static_cast<double>(nnz) * ranks[chain[0]];
  double len = ranks[chain[0]];
  for (size_t j = 0; j + 1 < k; ++j) {
    len *= ranks[chain[j + 1]];
    uint32_t mask = 1u << mode;
    for (size_t i = j + 1; i < k; ++i) mask |= 1u << chain[i];
    work += static_cast<double>(counts[mask]) * len;
  }
  return work;
}

void prepare_ttmc_operands(const kernels::Exec& exec, const spt_coo_s& x, const std::vector<spt_index>& ranks_in,
                           TtmcPath requested, TtmcOperands& out) {
  const uint32_t order = x.order();
  require(ranks_in.size() == order, "one rank per mode expected");
  const std::vector<spt_nnz> distinct = distinct_indices_per_mode(x, exec.threads);
  const size_t value_size = dtype_size(x.dtype());
  const int threads = std::max(1, exec.threads);
  // Distinct counts of every mode subset, shared by all modes' searches.
  const std::vector<spt_nnz> subsets =
      requested == TtmcPath::one_shot ? std::vector<spt_nnz>{} : subset_distinct_counts(exec, x);
  out.copies.clear();
  out.copies.reserve(order);
  out.operand.assign(order, nullptr);
  out.plans.assign(order, {});
  out.sorted_bytes = 0;
  for (uint32_t n = 0; n < order; ++n) {
    TtmcPlan& plan = out.plans[n];
    plan.mode = n;
    const std::vector<uint32_t> others = kernels::ttmc_other_modes(order, n);  // the one-shot leaf order
    plan.one_shot_key = kernels::ttmc_sort_order(order, n);
    double p = 1;
    for (uint32_t m : others) p *= ranks_in[m];
    plan.kronecker_row_flops = static_cast<double>(x.nnz) * p;

    // Exact search: W of every contraction order from the distinct counts
    // of every key subset (first minimum in lexicographic order, which
    // starts with the one-shot order, so ties keep it).
    if (!subsets.empty()) {
      plan.order_search = true;
      std::vector<uint32_t> c = others;
      do {
        const double w = chain_flops_from_subsets(x.nnz, subsets, n, c, ranks_in);
        if (plan.chain.empty() || w < plan.chain_flops) {
          plan.chain = c;
          plan.chain_flops = w;
        }
      } while (std::next_permutation(c.begin(), c.end()));
      plan.one_shot_flops = chain_flops_from_subsets(x.nnz, subsets, n, others, ranks_in);
    } else {
      plan.chain = ttmc_chain_order(n, distinct);
    }
    plan.chain_key = kernels::ttm_chain_sort_order(n, plan.chain);
    plan.one_shot_scratch_bytes = nested_ttmc_scratch_bytes(others, ranks_in, threads, value_size);
    plan.chain_scratch_bytes = nested_ttmc_scratch_bytes(plan.chain, ranks_in, threads, value_size);

    std::vector<std::unique_ptr<spt_coo_s>> held;
    const spt_coo_s* chosen = nullptr;
    if (requested == TtmcPath::one_shot) {
      chosen = sorted_by_key(exec, x, plan.one_shot_key, held);
      plan.one_shot_flops = nested_ttmc_flops(x.nnz, prefix_group_counts(exec, *chosen, plan.one_shot_key), others,
                                              ranks_in);
      plan.path = TtmcPath::one_shot;
    } else if (requested == TtmcPath::chain) {
      chosen = sorted_by_key(exec, x, plan.chain_key, held);
      plan.chain_flops =
          nested_ttmc_flops(x.nnz, prefix_group_counts(exec, *chosen, plan.chain_key), plan.chain, ranks_in);
      plan.path = TtmcPath::chain;
    } else if (plan.order_search) {
      // Estimates known without sorting: sort only for the winner.
      plan.path = plan.chain_key != plan.one_shot_key && plan.chain_flops < 0.97 * plan.one_shot_flops
                      ? TtmcPath::chain
                      : TtmcPath::one_shot;
      chosen = sorted_by_key(exec, x, plan.path == TtmcPath::chain ? plan.chain_key : plan.one_shot_key, held);
    } else {
      // No exact search (order > 5 or keys wider than 64 bits): count the
      // groups of each path's order in one pass over its sorted copy.
      const spt_coo_s* s = sorted_by_key(exec, x, plan.one_shot_key, held);
      plan.one_shot_flops =
          nested_ttmc_flops(x.nnz, prefix_group_counts(exec, *s, plan.one_shot_key), others, ranks_in);
      plan.path = TtmcPath::one_shot;
      chosen = s;
      if (plan.chain_key == plan.one_shot_key) {
        plan.chain_flops = plan.one_shot_flops;  // the same computation
      } else {
        const spt_coo_s* c = sorted_by_key(exec, x, plan.chain_key, held);
        plan.chain_flops =
            nested_ttmc_flops(x.nnz, prefix_group_counts(exec, *c, plan.chain_key), plan.chain, ranks_in);
        if (plan.chain_flops < 0.97 * plan.one_shot_flops) {
          plan.path = TtmcPath::chain;
          chosen = c;
        }
      }
    }
    // Keep only the chosen operand's copy (if it is one).
    if (chosen == &x) {
      out.operand[n] = &x;
    } else {
      for (auto& h : held)
        if (h.get() == chosen) {
          out.copies.push_back(std::move(*h));
          out.operand[n] = &out.copies.back();
          plan.sorted_copy_bytes = coo_bytes(x);
          out.sorted_bytes += plan.sorted_copy_bytes;
        }
    }
  }
}

void ttm_chain(spt_context_s& ctx, const spt_coo_s& x, const std::vector<uint32_t>& modes,
               const std::vector<const spt_matrix_s*>& us, spt_scoo_s& out) {
  const uint32_t order = x.order();
  const size_t count = modes.size();
  require(count >= 1, "the TTM chain needs at least one mode (count = 0)");
  require(count <= order, "the TTM chain has ", count, " modes but the tensor has order ", order);
  require(us.size() == count, "one matrix per chain mode expected");
  std::vector<bool> seen(order, false);
  std::vector<spt_index> dims_after = x.dims;
  for (size_t j = 0; j < count; ++j) {
    const uint32_t m = modes[j];
    require(m < order, "modes[", j, "] = ", m, " is out of range for an order-", order, " tensor (modes are 0-based)");
    require(!seen[m], "modes[", j, "] = ", m, " appears twice; each mode may be contracted once");
    seen[m] = true;
    const spt_matrix_s* u = us[j];
    require(u != nullptr, "us[", j, "] must not be NULL");
    require(u->dtype() == x.dtype(), "us[", j, "] is ", dtype_name(u->dtype()), " but the tensor is ",
            dtype_name(x.dtype()), "; convert one of them so the dtypes match");
    require(u->rows == x.dims[m] && u->cols >= 1, "us[", j, "] must be dims[", m, "] x R = ", x.dims[m],
            " x R with R >= 1, got ", u->rows, " x ", u->cols);
    if (u->cols > UINT32_MAX) fail(SPT_ERR_OVERFLOW, "us[", j, "] has ", u->cols, " columns; a dense mode must fit 32 bits");
    dims_after[m] = static_cast<spt_index>(u->cols);
  }
  // The final block (and so every step's block) must fit 64 bits.
  std::vector<uint32_t> dense_final(modes.begin(), modes.end());
  std::sort(dense_final.begin(), dense_final.end());
  scoo_block_size(dims_after, dense_final);

  // Sort once: other modes ascending, then modes[count-1], .., modes[0], so
  // that step j's groups (all sparse modes but modes[j]) are contiguous.
  std::vector<uint32_t> key;
  for (uint32_t m = 0; m < order; ++m)
    if (!seen[m]) key.push_back(m);
  for (size_t j = count; j-- > 0;) key.push_back(modes[j]);
  const kernels::Exec exec = dispatch::exec_for(ctx);
  std::vector<std::unique_ptr<spt_coo_s>> held;
  const spt_coo_s& sorted = *sorted_by_key(exec, x, key, held);

  with_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<std::unique_ptr<RowMajor<T>>> rows;
    for (size_t j = 0; j < count; ++j) rows.push_back(std::make_unique<RowMajor<T>>(const_cast<spt_matrix_s&>(*us[j])));
    spt_scoo_s y;
    SPT_DISPATCH(ctx, ttm, sorted, modes[0], rows[0]->cref(), y);
    held.clear();  // the sorted copy is no longer needed
    for (size_t j = 1; j < count; ++j) {
      spt_scoo_s z;
      SPT_DISPATCH(ctx, scoo_ttm, y, modes[j], rows[j]->cref(), z);
      y = std::move(z);
    }
    out = std::move(y);
  });
}

}  // namespace spt
