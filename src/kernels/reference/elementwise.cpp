// Reference elementwise op of two sparse tensors: both patterns accumulated
// into one ordered map (summing repeated coordinates), then the op applied
// over the union (ADD, SUB) or intersection (MUL, DIV) of the patterns.
#include <map>
#include <vector>

#include "kernels/kernels.hpp"

namespace spt::kernels::reference {

namespace {

template <typename T>
struct Pair {
  T x = T(0), y = T(0);
  bool in_x = false, in_y = false;
};

template <typename T>
void elementwise_impl(spt_elementwise_op op, const spt_coo_s& x, const spt_coo_s& y, spt_coo_s& out) {
  const uint32_t order = x.order();
  std::map<std::vector<spt_index>, Pair<T>> entries;
  std::vector<spt_index> key(order);
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    for (uint32_t m = 0; m < order; ++m) key[m] = x.ind[m][k];
    Pair<T>& e = entries[key];
    e.x += x.values<T>()[k];
    e.in_x = true;
  }
  for (spt_nnz k = 0; k < y.nnz; ++k) {
    for (uint32_t m = 0; m < order; ++m) key[m] = y.ind[m][k];
    Pair<T>& e = entries[key];
    e.y += y.values<T>()[k];
    e.in_y = true;
  }
  const bool union_pattern = op == SPT_OP_ADD || op == SPT_OP_SUB;
  std::vector<std::pair<const std::vector<spt_index>*, T>> result;
  for (const auto& [coord, e] : entries) {
    if (!union_pattern && !(e.in_x && e.in_y)) continue;
    T v = op == SPT_OP_ADD ? e.x + e.y : op == SPT_OP_SUB ? e.x - e.y : op == SPT_OP_MUL ? e.x * e.y : e.x / e.y;
    result.emplace_back(&coord, v);
  }
  out.init_owned(x.dtype(), x.dims, result.size());
  for (size_t f = 0; f < result.size(); ++f) {
    for (uint32_t m = 0; m < order; ++m) out.mutable_ind(m)[f] = (*result[f].first)[m];
    out.mutable_values<T>()[f] = result[f].second;
  }
  for (uint32_t m = 0; m < order; ++m) out.sorted_by.push_back(m);
}

}  // namespace

void elementwise(const Exec&, spt_elementwise_op op, const spt_coo_s& x, const spt_coo_s& y, spt_coo_s& out) {
  with_dtype(x.dtype(), [&](auto tag) { elementwise_impl<typename decltype(tag)::type>(op, x, y, out); });
}

}  // namespace spt::kernels::reference
