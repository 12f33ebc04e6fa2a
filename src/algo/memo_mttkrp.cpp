#include "algo/memo_mttkrp.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "dispatch/dispatch.hpp"

namespace spt::algo {

namespace {

// Replays the operand's validity rules over level counts: the R-wide
// vector operations of one steady-state sweep (levels called 0..N-1).
uint64_t simulate_sweep_ops(const std::vector<uint64_t>& m, const std::vector<bool>& keep) {
  const int n = static_cast<int>(m.size());
  std::vector<bool> b_valid(n, false), t_valid(n, false);
  uint64_t ops = 0, first_sweep = 0;
  int last = -1;
  for (int sweep = 0; sweep < 2; ++sweep) {
    for (int k = 0; k < n; ++k) {
      if (last >= 0) {
        for (int l = 0; l < last; ++l) b_valid[l] = false;
        for (int l = last; l < n; ++l) t_valid[l] = false;
      }
      if (k >= 1) {
        int j = k - 1;
        while (j >= 0 && !t_valid[j]) --j;
        for (int l = j + 1; l <= k - 1; ++l) {
          ops += m[l];
          t_valid[l] = true;
        }
      }
      if (k <= n - 2) {
        int j = k;  // lowest valid kept level at or below k (k itself: nothing to do)
        while (j < n - 1 && !(keep[j] && b_valid[j])) ++j;
        for (int l = j - 1; l >= k; --l) {
          ops += m[l + 1];
          b_valid[l] = keep[l];
        }
      }
      ops += m[k];  // combine
      last = k;
    }
    if (sweep == 0) first_sweep = ops;
  }
  return ops - first_sweep;
}

}  // namespace

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t(8) << 30;
}

std::string MemoPlan::describe() const {
  std::ostringstream os;
  os << "memoized CSF, levels (modes)";
  for (size_t l = 0; l < mode_order.size(); ++l) os << (l ? "," : " ") << mode_order[l] << (keep[l] ? "*" : "");
  os << " (* = B kept), " << memo_bytes / (1 << 20) << " MiB memo; vector ops per sweep " << ops_per_sweep
     << " vs " << ops_per_sweep_plain << " unmemoized (" << (ops_per_sweep ? double(ops_per_sweep_plain) / ops_per_sweep : 0)
     << "x) and " << ops_per_sweep_coo << " COO (" << (ops_per_sweep ? double(ops_per_sweep_coo) / ops_per_sweep : 0)
     << "x)";
  return os.str();
}

std::vector<uint64_t> level_sizes(const CsfTree& tree) {
  std::vector<uint64_t> m(tree.levels());
  for (uint32_t l = 0; l < tree.levels(); ++l) m[l] = tree.nodes(l);
  return m;
}

MemoPlan plan_memoization(const std::vector<uint32_t>& mode_order, const std::vector<uint64_t>& m, uint64_t rank,
                          uint64_t value_bytes, uint64_t budget_bytes) {
  const size_t n = m.size();
  MemoPlan plan;
  plan.mode_order = mode_order;
  const uint64_t row = rank * value_bytes;
  const uint64_t scratch = 2 * row * *std::max_element(m.begin(), m.end());  // one B and one T level live
  // Candidate levels 1..N-2 (B_0 feeds the output directly; B_{N-1} is the values).
  const size_t candidates = n >= 3 ? n - 2 : 0;
  std::vector<bool> best_keep(n, false);
  uint64_t best_ops = simulate_sweep_ops(m, best_keep), best_bytes = scratch;
  auto consider = [&](const std::vector<bool>& keep) {
    uint64_t bytes = scratch;
    for (size_t l = 0; l < n; ++l)
      if (keep[l]) bytes += m[l] * row;
    if (bytes > budget_bytes) return;
    const uint64_t ops = simulate_sweep_ops(m, keep);
    if (ops < best_ops || (ops == best_ops && bytes < best_bytes)) {
      best_ops = ops;
      best_bytes = bytes;
      best_keep = keep;
    }
  };
  if (candidates <= 22) {
    for (uint64_t mask = 1; mask < (uint64_t(1) << candidates); ++mask) {
      std::vector<bool> keep(n, false);
      for (size_t c = 0; c < candidates; ++c) keep[c + 1] = (mask >> c) & 1;
      consider(keep);
    }
  } else {
    for (size_t c = 0; c < candidates; ++c) {
      std::vector<bool> keep(n, false);
      keep[c + 1] = true;
      consider(keep);
    }
  }
  plan.keep = best_keep;
  plan.memo_bytes = best_bytes;
  plan.ops_per_sweep = best_ops;
  // Each unmemoized MTTKRP at level k: top-down to k-1, bottom-up to k, combine.
  uint64_t total = 0;
  for (uint64_t v : m) total += v;
  plan.ops_per_sweep_plain = 0;
  for (size_t k = 0; k < n; ++k) {
    uint64_t ops = m[k];
    for (size_t l = 0; l + 1 <= k; ++l) ops += m[l];
    for (size_t l = k; l + 1 < n; ++l) ops += m[l + 1];
    plan.ops_per_sweep_plain += ops;
  }
  plan.ops_per_sweep_coo = n * m.back() * (n - 1);
  (void)total;
  return plan;
}

std::vector<uint32_t> memo_mode_order(const std::vector<spt_index>& dims) {
  const uint32_t n = static_cast<uint32_t>(dims.size());
  uint32_t start = 0;
  for (uint32_t m = 1; m < n; ++m)
    if (dims[m] < dims[start]) start = m;
  std::vector<uint32_t> order(n);
  for (uint32_t l = 0; l < n; ++l) order[l] = (start + l) % n;
  return order;
}

template <typename T>
MemoizedCsfOperand<T>::MemoizedCsfOperand(spt_context_s& ctx, const spt_coo_s& x, uint64_t rank,
                                          uint64_t budget_bytes)
    : order_(x.order()), rank_(rank) {
  require(x.order() >= 2, "the memoized MTTKRP sequence needs order >= 2, got ", x.order());
  require(x.dtype() == dtype_of<T>(), "internal: memoized operand dtype mismatch");
  const std::vector<uint32_t> mode_order = memo_mode_order(x.dims);
  tree_ = build_csf_tree(dispatch::exec_for(ctx), x, mode_order);
  if (budget_bytes == 0) budget_bytes = physical_memory_bytes() / 4;
  plan_ = plan_memoization(mode_order, level_sizes(tree_), rank, sizeof(T), budget_bytes);
  level_of_mode_.assign(order_, 0);
  for (uint32_t l = 0; l < order_; ++l) level_of_mode_[mode_order[l]] = l;
  b_.resize(order_);
  t_.resize(order_);
  reset();
}

template <typename T>
void MemoizedCsfOperand<T>::reset() {
  b_valid_.assign(order_, false);
  t_valid_.assign(order_, false);
  last_level_ = -1;
}

// B_l for l = (lowest valid kept level at or below `level` in the tree, or
// the leaves) - 1 up the tree to `level`.
template <typename T>
void MemoizedCsfOperand<T>::bottom_up(const ConstMatRef<T>* factors, uint32_t level, int threads) {
  const uint32_t leaf = order_ - 1;
  uint32_t j = level;  // B_level itself may be memoized and valid
  while (j < leaf && !(plan_.keep[j] && b_valid_[j])) ++j;
  const T* values = tree_.vals.template get<T>().data();
  const spt_nnz r = rank_;
  for (uint32_t l = j; l-- > level;) {
    const spt_nnz nodes = tree_.nodes(l);
    b_[l].resize(nodes * r);
    T* out = b_[l].data();
    const T* below = l + 1 == leaf ? nullptr : b_[l + 1].data();
    const ConstMatRef<T> u = factors[tree_.mode_order[l + 1]];
    const spt_nnz* ptr = tree_.fptr[l].data();
    const spt_index* child_ids = tree_.fids[l + 1].data();
#pragma omp parallel for num_threads(threads) schedule(dynamic, 64)
    for (spt_nnz f = 0; f < nodes; ++f) {
      T* row = out + f * r;
      for (spt_nnz q = 0; q < r; ++q) row[q] = T(0);
      for (spt_nnz c = ptr[f]; c < ptr[f + 1]; ++c) {
        const T* ur = u.row(child_ids[c]);
        if (below) {
          const T* br = below + c * r;
#pragma omp simd
          for (spt_nnz q = 0; q < r; ++q) row[q] += ur[q] * br[q];
        } else {
          const T v = values[c];
#pragma omp simd
          for (spt_nnz q = 0; q < r; ++q) row[q] += v * ur[q];
        }
      }
    }
    ops_done_ += tree_.nodes(l + 1);
    b_valid_[l] = plan_.keep[l];
    // A scratch level below is no longer needed.
    if (l + 1 < leaf && !plan_.keep[l + 1]) buffer<T>().swap(b_[l + 1]);
  }
}

// T_l for l = (highest valid level below `level`) + 1 up to `level`.
template <typename T>
void MemoizedCsfOperand<T>::top_down(const ConstMatRef<T>* factors, uint32_t level, int threads) {
  int j = static_cast<int>(level);
  while (j >= 0 && !t_valid_[j]) --j;
  const spt_nnz r = rank_;
  for (uint32_t l = static_cast<uint32_t>(j + 1); l <= level; ++l) {
    const spt_nnz nodes = tree_.nodes(l);
    t_[l].resize(nodes * r);
    T* out = t_[l].data();
    const ConstMatRef<T> u = factors[tree_.mode_order[l]];
    const spt_index* ids = tree_.fids[l].data();
    if (l == 0) {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (spt_nnz p = 0; p < nodes; ++p) std::memcpy(out + p * r, u.row(ids[p]), sizeof(T) * r);
    } else {
      const T* above = t_[l - 1].data();
      const spt_nnz parents = tree_.nodes(l - 1);
      const spt_nnz* ptr = tree_.fptr[l - 1].data();
#pragma omp parallel for num_threads(threads) schedule(dynamic, 64)
      for (spt_nnz q = 0; q < parents; ++q) {
        const T* a = above + q * r;
        for (spt_nnz p = ptr[q]; p < ptr[q + 1]; ++p) {
          const T* ur = u.row(ids[p]);
          T* row = out + p * r;
#pragma omp simd
          for (spt_nnz c = 0; c < r; ++c) row[c] = a[c] * ur[c];
        }
      }
    }
    ops_done_ += nodes;
    t_valid_[l] = true;
    // Levels above l - 1 are only needed to extend further, which starts from l.
    if (l >= 1) {
      buffer<T>().swap(t_[l - 1]);
      t_valid_[l - 1] = false;
    }
  }
}

template <typename T>
void MemoizedCsfOperand<T>::mttkrp(spt_context_s& ctx, const ConstMatRef<T>* factors, uint32_t mode,
                                    MatRef<T> out) {
  const uint32_t k = level_of_mode_[mode];
  const uint32_t leaf = order_ - 1;
  const spt_nnz r = rank_;
  const int threads = dispatch::exec_for(ctx).threads;
  // The previous call's factor may have changed since.
  if (last_level_ >= 0) {
    for (int l = 0; l < last_level_; ++l) b_valid_[l] = false;
    for (uint32_t l = static_cast<uint32_t>(last_level_); l < order_; ++l) t_valid_[l] = false;
  }
  last_level_ = static_cast<int>(k);
  if (k >= 1) top_down(factors, k - 1, threads);
  if (k < leaf) bottom_up(factors, k, threads);

  for (spt_nnz i = 0; i < out.rows; ++i) std::memset(out.row(i), 0, sizeof(T) * r);
  const spt_nnz nodes = tree_.nodes(k);
  const spt_index* ids = tree_.fids[k].data();
  const T* values = tree_.vals.template get<T>().data();
  const T* bk = k < leaf ? b_[k].data() : nullptr;
  if (k == 0) {  // root ids are distinct: no conflicts
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz f = 0; f < nodes; ++f) std::memcpy(out.row(ids[f]), bk + f * r, sizeof(T) * r);
  } else {
    const T* tk = t_[k - 1].data();
    const spt_nnz parents = tree_.nodes(k - 1);
    const spt_nnz* ptr = tree_.fptr[k - 1].data();
    // Rows repeat across subtrees: per-thread private outputs when they are
    // small next to the work, else atomic updates (not bit-reproducible).
    const uint64_t private_bytes = uint64_t(threads) * out.rows * r * sizeof(T);
    const bool privatize = threads > 1 && private_bytes <= std::max<uint64_t>(uint64_t(nodes) * r * sizeof(T), 64u << 20);
    auto contribution = [&](spt_nnz q, spt_nnz f, T* dst) {
      const T* a = tk + q * r;
      if (bk) {
        const T* b = bk + f * r;
#pragma omp simd
        for (spt_nnz c = 0; c < r; ++c) dst[c] += a[c] * b[c];
      } else {
        const T v = values[f];
#pragma omp simd
        for (spt_nnz c = 0; c < r; ++c) dst[c] += v * a[c];
      }
    };
    if (threads == 1) {
      for (spt_nnz q = 0; q < parents; ++q)
        for (spt_nnz f = ptr[q]; f < ptr[q + 1]; ++f) contribution(q, f, out.row(ids[f]));
    } else if (privatize) {
      buffer<T> priv(static_cast<size_t>(threads) * out.rows * r);
#pragma omp parallel num_threads(threads)
      {
        const int t = omp_get_thread_num();
        T* mine = priv.data() + static_cast<size_t>(t) * out.rows * r;
        std::memset(mine, 0, sizeof(T) * out.rows * r);
        // Static chunks: each private copy sums the same nodes in the same
        // order every call (bit-reproducible for a fixed thread count).
#pragma omp for schedule(static, 64)
        for (spt_nnz q = 0; q < parents; ++q)
          for (spt_nnz f = ptr[q]; f < ptr[q + 1]; ++f) contribution(q, f, mine + spt_nnz(ids[f]) * r);
        const int nt = omp_get_num_threads();
#pragma omp for schedule(static)
        for (spt_nnz i = 0; i < out.rows; ++i) {
          T* dst = out.row(i);
          for (int u = 0; u < nt; ++u) {
            const T* src = priv.data() + (static_cast<size_t>(u) * out.rows + i) * r;
#pragma omp simd
            for (spt_nnz c = 0; c < r; ++c) dst[c] += src[c];
          }
        }
      }
    } else {
      // One accumulator row per thread (cache-line strides), allocated here:
      // an allocation failure inside the parallel region could not be
      // reported, it would terminate the process.
      const size_t stride = (static_cast<size_t>(r) * sizeof(T) + 63) / 64 * (64 / sizeof(T));
      buffer<T> accs(static_cast<size_t>(threads) * stride);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 64)
      for (spt_nnz q = 0; q < parents; ++q) {
        T* acc = accs.data() + static_cast<size_t>(omp_get_thread_num()) * stride;
        for (spt_nnz f = ptr[q]; f < ptr[q + 1]; ++f) {
          std::fill(acc, acc + r, T(0));
          contribution(q, f, acc);
          T* dst = out.row(ids[f]);
          for (spt_nnz c = 0; c < r; ++c) {
#pragma omp atomic
            dst[c] += acc[c];
          }
        }
      }
    }
  }
  ops_done_ += nodes;
  // A scratch B level is not kept past its use.
  if (k < leaf && !plan_.keep[k]) buffer<T>().swap(b_[k]);
}

template class MemoizedCsfOperand<float>;
template class MemoizedCsfOperand<double>;

}  // namespace spt::algo
