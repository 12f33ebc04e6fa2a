#include "io/duplicates.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/error.hpp"

namespace spt::io {

namespace {

// Permutation that sorts the nonzeros lexicographically (mode 0 most
// significant); stable, so equal coordinates keep their file order.
std::vector<spt_nnz> sorted_permutation(const spt_coo_s& x) {
  const spt_nnz n = x.nnz;
  std::vector<spt_nnz> perm(n), next(n);
  std::iota(perm.begin(), perm.end(), spt_nnz(0));
  std::vector<spt_nnz> count(1 << 16);
  // LSD: least significant key (last mode, low 16 bits) first.
  for (uint32_t mm = x.order(); mm-- > 0;) {
    const spt_index* key = x.ind[mm];
    const int passes = x.dims[mm] > (1u << 16) ? 2 : 1;
    for (int pass = 0; pass < passes; ++pass) {
      const int shift = 16 * pass;
      std::fill(count.begin(), count.end(), 0);
      for (spt_nnz k = 0; k < n; ++k) ++count[(key[perm[k]] >> shift) & 0xFFFF];
      spt_nnz sum = 0;
      for (auto& c : count) {
        spt_nnz t = c;
        c = sum;
        sum += t;
      }
      for (spt_nnz k = 0; k < n; ++k) next[count[(key[perm[k]] >> shift) & 0xFFFF]++] = perm[k];
      perm.swap(next);
    }
  }
  return perm;
}

template <typename T>
void permute(spt_coo_s& x, const std::vector<spt_nnz>& perm) {
  const spt_nnz n = x.nnz;
  buffer<spt_index> tmp(n);
  for (uint32_t m = 0; m < x.order(); ++m) {
    const spt_index* src = x.ind[m];
    for (spt_nnz k = 0; k < n; ++k) tmp[k] = src[perm[k]];
    x.own_ind[m].swap(tmp);
  }
  buffer<T> vals(n);
  const T* src = x.values<T>();
  for (spt_nnz k = 0; k < n; ++k) vals[k] = src[perm[k]];
  x.own_val.get<T>().swap(vals);
  x.refresh();
}

bool same_coordinate(const spt_coo_s& x, spt_nnz a, spt_nnz b) {
  for (uint32_t m = 0; m < x.order(); ++m)
    if (x.ind[m][a] != x.ind[m][b]) return false;
  return true;
}

}  // namespace

void apply_duplicate_policy(const spt_context_s& ctx, spt_coo_s& x, spt_duplicates policy,
                            const std::function<std::string(spt_nnz)>& where) {
  if (policy == SPT_DUPLICATES_KEEP || x.nnz < 2) return;
  const std::vector<spt_nnz> perm = sorted_permutation(x);
  with_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    permute<T>(x, perm);
  });
  std::vector<uint32_t> natural(x.order());
  std::iota(natural.begin(), natural.end(), 0u);

  if (policy == SPT_DUPLICATES_REJECT) {
    for (spt_nnz k = 1; k < x.nnz; ++k) {
      if (same_coordinate(x, k - 1, k)) {
        std::string coord;
        for (uint32_t m = 0; m < x.order(); ++m) coord += cat(m ? ", " : "", x.ind[m][k]);
        fail(SPT_ERR_PARSE, where(perm[k]), ": duplicate coordinate (", coord, ") (0-based), first seen at ",
             where(perm[k - 1]), "; read with duplicates = SPT_DUPLICATES_SUM to add them up");
      }
    }
    x.sorted_by = natural;
    return;
  }

  // SUM: accumulate runs of equal coordinates in double.
  with_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* v = x.template mutable_values<T>();
    spt_nnz out = 0;
    for (spt_nnz k = 0; k < x.nnz;) {
      double sum = v[k];
      spt_nnz j = k + 1;
      while (j < x.nnz && same_coordinate(x, k, j)) sum += v[j++];
      for (uint32_t m = 0; m < x.order(); ++m) x.mutable_ind(m)[out] = x.ind[m][k];
      v[out] = static_cast<T>(sum);
      ++out;
      k = j;
    }
    x.resize(out);
  });
  x.sorted_by = natural;
  progress(ctx, "read", 1.0);
}

}  // namespace spt::io
