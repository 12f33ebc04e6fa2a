#include "reorder/permutation.hpp"

#include <string>

#include "core/error.hpp"

namespace spt::reorder {

Permutation identity(spt_index n) {
  Permutation p(n);
  for (spt_index i = 0; i < n; ++i) p[i] = i;
  return p;
}

void validate_permutation(const spt_index* p, spt_index n, const char* what, int base) {
  if (n == 0) return;
  require_not_null(p, what);
  const spt_index first = static_cast<spt_index>(base);
  std::vector<bool> seen(n, false);
  for (spt_index i = 0; i < n; ++i) {
    const spt_index label = p[i];
    require(label >= first && label - first < n, what, "[", i, "] = ", label, " is not a label of a mode of size ", n,
            " (labels are ", first, "..", first + (n - 1), ")");
    require(!seen[label - first], what, " gives label ", label, " twice (the second time at [", i,
            "]); a relabelling must be a permutation");
    seen[label - first] = true;
  }
}

Permutation invert(const Permutation& p) {
  Permutation inv(p.size());
  for (size_t i = 0; i < p.size(); ++i) inv[p[i]] = static_cast<spt_index>(i);
  return inv;
}

bool is_identity(const Permutation& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != i) return false;
  return true;
}

void require_matches(const spt_permutation_s& perm, const std::vector<spt_index>& dims, const char* what) {
  require(perm.order() == dims.size(), "the permutation has ", perm.order(), " modes but the ", what, " has ",
          dims.size());
  for (uint32_t m = 0; m < perm.order(); ++m)
    require(perm.dim(m) == dims[m], "the permutation of mode ", m, " has ", perm.dim(m), " labels but the ", what,
            " has dims[", m, "] = ", dims[m]);
}

}  // namespace spt::reorder
