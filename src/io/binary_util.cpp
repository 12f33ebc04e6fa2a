#include "io/binary_util.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace spt::io {

void check_loaded_tensor(const spt_context_s& ctx, spt_coo_s& x, const ReadOptions& opts, const std::string& path,
                         bool check_indices, uint64_t first_nonzero) {
  const uint32_t order = x.order();
  if (opts.order != 0 && opts.order != order)
    fail(SPT_ERR_PARSE, path, ": the file holds an order-", order, " tensor but the caller expects order ", opts.order);
  if (!opts.dims.empty()) x.dims = opts.dims;
  const int threads = thread_count(ctx);
  const spt_nnz nnz = x.nnz;
  for (uint32_t m = 0; m < order && check_indices; ++m) {
    const spt_index* ind = x.ind[m];
    const spt_index lim = x.dims[m];
    // A max reduction vectorises; the first offender is searched only on failure.
    spt_index mx = 0;
#pragma omp parallel for num_threads(threads) reduction(max : mx)
    for (spt_nnz k = 0; k < nnz; ++k) mx = std::max(mx, ind[k]);
    if (nnz == 0 || mx < lim) continue;
    spt_nnz first_bad = 0;
    while (ind[first_bad] < lim) ++first_bad;
    fail(SPT_ERR_PARSE, path, ": nonzero ", first_nonzero + first_bad, " (0-based, in file order) has index ",
         ind[first_bad], " in mode ", m, ", outside dims[", m, "] = ", lim, " (binary files are 0-based)");
  }
  if (opts.reject_nonfinite) {
    with_dtype(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* v = x.values<T>();
      spt_nnz first_bad = std::numeric_limits<spt_nnz>::max();
#pragma omp parallel for num_threads(threads) reduction(min : first_bad)
      for (spt_nnz k = 0; k < nnz; ++k)
        if (!std::isfinite(v[k]) && k < first_bad) first_bad = k;
      if (first_bad != std::numeric_limits<spt_nnz>::max())
        fail(SPT_ERR_PARSE, path, ": nonzero ", first_nonzero + first_bad, " has the non-finite value ",
             v[first_bad], " (reject_nonfinite is set)");
    });
  }
}

}  // namespace spt::io
