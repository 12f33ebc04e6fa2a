#include "core/ktensor.hpp"

namespace spt {

void init_ktensor(spt_ktensor_s& k, spt_dtype dtype, const std::vector<spt_index>& dims, spt_index rank) {
  require(rank >= 1, "rank must be at least 1");
  k.dims = dims;
  k.rank = rank;
  init_matrix(k.lambda, dtype, 1, rank, SPT_ROW_MAJOR);
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (spt_index r = 0; r < rank; ++r) k.lambda.ptr<T>()[r] = T(1);
  });
  k.factors.clear();
  for (spt_index d : dims) {
    auto f = std::make_unique<spt_matrix_s>();
    init_matrix(*f, dtype, d, rank, SPT_ROW_MAJOR);
    k.factors.push_back(std::move(f));
  }
  k.fit = 0.0;
  k.iterations = 0;
  k.converged = 0;
  k.fit_history.clear();
  k.seconds_history.clear();
}

}  // namespace spt
