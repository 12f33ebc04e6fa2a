#include "core/mode_groups.hpp"

#include "core/dtype.hpp"

namespace spt {

ModeGroups group_by_mode(const spt_coo_s& x, uint32_t mode) {
  ModeGroups g;
  const spt_index dim = x.dims[mode];
  g.row_ptr.assign(static_cast<size_t>(dim) + 1, 0);
  const spt_index* ind = x.ind[mode];
  for (spt_nnz e = 0; e < x.nnz; ++e) ++g.row_ptr[ind[e] + 1];
  for (spt_index i = 0; i < dim; ++i) g.row_ptr[i + 1] += g.row_ptr[i];
  std::vector<spt_nnz> perm(x.nnz);
  std::vector<spt_nnz> next(g.row_ptr.begin(), g.row_ptr.end() - 1);
  for (spt_nnz e = 0; e < x.nnz; ++e) perm[next[ind[e]]++] = e;
  g.ind.assign(x.order(), std::vector<spt_index>(x.nnz));
  g.val.resize(x.nnz);
  with_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* v = x.values<T>();
    for (spt_nnz k = 0; k < x.nnz; ++k) g.val[k] = static_cast<double>(v[perm[k]]);
  });
  for (uint32_t m = 0; m < x.order(); ++m)
    for (spt_nnz k = 0; k < x.nnz; ++k) g.ind[m][k] = x.ind[m][perm[k]];
  return g;
}

}  // namespace spt
