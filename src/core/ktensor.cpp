#include "core/ktensor.hpp"

#include <string>

namespace spt {

void init_ktensor(spt_ktensor_s& k, spt_dtype dtype, const std::vector<spt_index>& dims, spt_index rank) {
  require(rank >= 1, "rank must be at least 1");
  k.dims = dims;
  k.rank = rank;
  k.factors.clear();
  for (size_t m = 0; m < dims.size(); ++m) {
    auto f = std::make_unique<spt_matrix_s>();
    const std::string what = cat("the factor matrix of mode ", m, " (dims[", m, "] x rank)");
    init_matrix(*f, dtype, dims[m], rank, SPT_ROW_MAJOR, what.c_str());
    k.factors.push_back(std::move(f));
  }
  // After the factors, which are larger and fail first when memory is short.
  init_matrix(k.lambda, dtype, 1, rank, SPT_ROW_MAJOR, "the weights lambda");
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (spt_index r = 0; r < rank; ++r) k.lambda.ptr<T>()[r] = T(1);
  });
  k.fit = 0.0;
  k.iterations = 0;
  k.converged = 0;
  k.fit_history.clear();
  k.seconds_history.clear();
}

}  // namespace spt
