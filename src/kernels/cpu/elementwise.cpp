// OpenMP elementwise op of two sparse tensors: coalesce (sort + sum repeats)
// both, then merge the sorted lists. The merge is split into ranges of x
// with the matching ranges of y found by binary search; each range is merged
// twice (count, then write) so the output needs no locking.
#include <algorithm>

#include "core/group_starts.hpp"
#include "core/sort.hpp"
#include "kernels/kernels.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

// -1, 0, 1 comparing a[i] and b[j] lexicographically (modes 0..N-1).
inline int compare_coords(const spt_coo_s& a, spt_nnz i, const spt_coo_s& b, spt_nnz j) {
  for (uint32_t m = 0; m < a.order(); ++m) {
    const spt_index p = a.ind[m][i], q = b.ind[m][j];
    if (p != q) return p < q ? -1 : 1;
  }
  return 0;
}

template <typename T>
void elementwise_impl(const Exec& exec, spt_elementwise_op op, const spt_coo_s& x_in, const spt_coo_s& y_in,
                      spt_coo_s& out) {
  require(op == SPT_OP_ADD || op == SPT_OP_SUB || op == SPT_OP_MUL || op == SPT_OP_DIV,
          "unknown elementwise op ", static_cast<int>(op));
  const spt_coo_s x = sorting::coalesced_copy(exec, x_in);
  const spt_coo_s y = sorting::coalesced_copy(exec, y_in);
  const bool union_pattern = op == SPT_OP_ADD || op == SPT_OP_SUB;
  const int chunks = std::max(1, exec.threads) * 4;
  std::vector<spt_nnz> px(chunks + 1), py(chunks + 1);
  for (int c = 0; c <= chunks; ++c) {
    px[c] = sorting::chunk_begin(x.nnz, c, chunks);
    if (px[c] == x.nnz) {
      py[c] = y.nnz;
      continue;
    }
    // First y entry not below x[px[c]].
    spt_nnz lo = 0, hi = y.nnz;
    while (lo < hi) {
      spt_nnz mid = lo + (hi - lo) / 2;
      if (compare_coords(y, mid, x, px[c]) < 0) lo = mid + 1;
      else hi = mid;
    }
    py[c] = lo;
  }
  py[0] = 0;
  const T* xv = x.values<T>();
  const T* yv = y.values<T>();
  auto combine = [op](T a, T b) {
    switch (op) {
      case SPT_OP_ADD: return a + b;
      case SPT_OP_SUB: return a - b;
      case SPT_OP_MUL: return a * b;
      default: return a / b;
    }
  };
  // emit(source tensor, position in it, value)
  auto merge_chunk = [&](int c, auto&& emit) {
    spt_nnz i = px[c], j = py[c];
    const spt_nnz ie = px[c + 1], je = py[c + 1];
    while (i < ie || j < je) {
      const int cmp = i >= ie ? 1 : j >= je ? -1 : compare_coords(x, i, y, j);
      if (cmp < 0) {
        if (union_pattern) emit(x, i, xv[i]);
        ++i;
      } else if (cmp > 0) {
        if (union_pattern) emit(y, j, op == SPT_OP_ADD ? yv[j] : -yv[j]);
        ++j;
      } else {
        emit(x, i, combine(xv[i], yv[j]));
        ++i;
        ++j;
      }
    }
  };
  std::vector<spt_nnz> offset(chunks + 1, 0);
  const int threads = std::max(1, exec.threads);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int c = 0; c < chunks; ++c) {
    spt_nnz count = 0;
    merge_chunk(c, [&](const spt_coo_s&, spt_nnz, T) { ++count; });
    offset[c + 1] = count;
  }
  for (int c = 0; c < chunks; ++c) offset[c + 1] += offset[c];
  out.init_owned(x.dtype(), x.dims, offset[chunks]);
  const uint32_t order = x.order();
  std::vector<spt_index*> oi(order);
  for (uint32_t m = 0; m < order; ++m) oi[m] = out.mutable_ind(m);
  T* ov = out.mutable_values<T>();
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int c = 0; c < chunks; ++c) {
    spt_nnz pos = offset[c];
    merge_chunk(c, [&](const spt_coo_s& src, spt_nnz k, T v) {
      for (uint32_t m = 0; m < order; ++m) oi[m][pos] = src.ind[m][k];
      ov[pos++] = v;
    });
  }
  out.sorted_by = sorting::natural_order(order);
}

}  // namespace

void elementwise(const Exec& exec, spt_elementwise_op op, const spt_coo_s& x, const spt_coo_s& y, spt_coo_s& out) {
  with_dtype(x.dtype(), [&](auto tag) { elementwise_impl<typename decltype(tag)::type>(exec, op, x, y, out); });
}

}  // namespace spt::kernels::SPT_CPU_VARIANT
