#include "test_util.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

namespace spt::test {

spt_coo_s random_coo(spt_dtype dtype, const RandomTensorSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const uint32_t order = static_cast<uint32_t>(spec.dims.size());
  spt_coo_s x;
  x.init_owned(dtype, spec.dims, spec.nnz);
  auto pick = [&](spt_index dim) -> spt_index {
    // Leave the top index of each mode with >= 4 slots unused ("empty slice"),
    // except that the single-nonzero slice may use it.
    spt_index usable = (spec.empty_slices && dim >= 4) ? dim - 1 : dim;
    double u = unit(rng);
    if (spec.skewed) u = u * u * u;  // mass near index 0: long fibers, big slices
    spt_index i = static_cast<spt_index>(u * usable);
    return std::min<spt_index>(i, usable - 1);
  };
  for (spt_nnz k = 0; k < spec.nnz; ++k) {
    for (uint32_t m = 0; m < order; ++m) x.mutable_ind(m)[k] = pick(spec.dims[m]);
  }
  if (spec.duplicates && spec.nnz >= 4) {
    for (spt_nnz k = 1; k < spec.nnz; k += 3)
      for (uint32_t m = 0; m < order; ++m) x.mutable_ind(m)[k] = x.ind[m][k - 1];
  }
  if (spec.single_nonzero_slice && spec.nnz >= 1 && spec.dims[0] >= 2) {
    // The last slice of mode 0 holds exactly nonzero 0 (no other nonzero uses it).
    x.mutable_ind(0)[0] = spec.dims[0] - 1;
    for (spt_nnz k = 1; k < spec.nnz; ++k)
      if (x.ind[0][k] == spec.dims[0] - 1) x.mutable_ind(0)[k] = 0;
  }
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* v = x.mutable_values<T>();
    for (spt_nnz k = 0; k < spec.nnz; ++k) v[k] = static_cast<T>(2.0 * unit(rng) - 1.0);
  });
  return x;
}

template <typename T>
DenseMatrix<T> random_matrix(spt_nnz rows, spt_nnz cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  DenseMatrix<T> m(rows, cols);
  for (auto& v : m.values) v = static_cast<T>(unit(rng));
  return m;
}
template DenseMatrix<float> random_matrix<float>(spt_nnz, spt_nnz, uint64_t);
template DenseMatrix<double> random_matrix<double>(spt_nnz, spt_nnz, uint64_t);

RandomTensorSpec spec_of(std::vector<spt_index> dims, spt_nnz nnz, uint64_t seed, bool duplicates) {
  RandomTensorSpec s;
  s.dims = std::move(dims);
  s.nnz = nnz;
  s.seed = seed;
  s.duplicates = duplicates;
  return s;
}

std::vector<RandomTensorSpec> standard_specs() {
  std::vector<RandomTensorSpec> specs;
  auto add = [&](std::vector<spt_index> dims, spt_nnz nnz, uint64_t seed, bool dup) {
    specs.push_back(spec_of(std::move(dims), nnz, seed, dup));
  };
  add({50, 7}, 200, 11, false);
  add({300, 2, 40}, 2000, 12, false);
  add({9, 1000, 5}, 1500, 13, true);
  add({20, 3, 17, 400}, 3000, 14, false);
  add({1, 30, 30, 2}, 500, 15, true);
  add({6, 5, 40, 3, 90}, 2500, 16, false);
  add({4, 9, 2, 31, 3, 12}, 2000, 17, true);
  return specs;
}

std::string data_file(const std::string& name) {
  namespace fs = std::filesystem;
  for (const std::string& dir : {std::string(SPT_TEST_DATA_DIR), std::string(SPT_SHARED_DATA_DIR)}) {
    fs::path p = fs::path(dir) / name;
    if (fs::exists(p)) return p.string();
  }
  return {};
}

}  // namespace spt::test
