// Helpers shared by the unit tests: random tensors with the awkward shapes
// the design asks every kernel to survive, data-file lookup, comparisons.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/coo.hpp"
#include "core/context.hpp"
#include "core/matrix.hpp"

// The copy of the CPU kernels a kernel test checks (src/kernels/cpu/variant.hpp):
// the baseline one, or, in the executables built a second time with
// SPT_TEST_CPU_X86_64_V3 (tests/CMakeLists.txt), the x86-64-v3 one, whose
// tests are skipped on a CPU without AVX2, FMA and BMI2.
#if defined(SPT_TEST_CPU_X86_64_V3)
#define SPT_TEST_CPU_KERNELS ::spt::kernels::cpu_x86_64_v3
namespace spt::test {
class NeedsCpuX8664V3 : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!cpu_isa_available(SPT_CPU_ISA_X86_64_V3)) GTEST_SKIP() << "this CPU does not run x86-64-v3 code";
  }
};
inline ::testing::Environment* const kNeedsCpuX8664V3 = ::testing::AddGlobalTestEnvironment(new NeedsCpuX8664V3);
}  // namespace spt::test
#else
#define SPT_TEST_CPU_KERNELS ::spt::kernels::cpu
#endif

namespace spt::test {

struct RandomTensorSpec {
  std::vector<spt_index> dims;
  spt_nnz nnz = 1000;
  uint64_t seed = 1;
  bool skewed = true;          // power-law index distribution (long fibers, big slices)
  bool empty_slices = true;    // leave some indices of every mode unused
  bool duplicates = false;     // repeat some coordinates
  bool single_nonzero_slice = true;  // put exactly one nonzero in the last slice of mode 0
};

// A spec with these fields, the others at their defaults.
RandomTensorSpec spec_of(std::vector<spt_index> dims, spt_nnz nnz, uint64_t seed, bool duplicates = false);

// A random owning COO tensor of dtype T following spec (values in [-1, 1)).
spt_coo_s random_coo(spt_dtype dtype, const RandomTensorSpec& spec);

// A random row-major matrix, values in [-1, 1).
template <typename T>
DenseMatrix<T> random_matrix(spt_nnz rows, spt_nnz cols, uint64_t seed);

// One random matrix per mode (dims[m] x rank), seeds seed + 31 m.
template <typename T>
std::vector<DenseMatrix<T>> random_factors(const std::vector<spt_index>& dims, spt_nnz rank, uint64_t seed) {
  std::vector<DenseMatrix<T>> f;
  for (size_t m = 0; m < dims.size(); ++m) f.push_back(random_matrix<T>(dims[m], rank, seed + 31 * m));
  return f;
}

// Const references to matrices, as kernels take them.
template <typename T>
std::vector<ConstMatRef<T>> crefs(const std::vector<DenseMatrix<T>>& f) {
  std::vector<ConstMatRef<T>> r;
  for (const auto& m : f) r.push_back(m.cref());
  return r;
}

// The standard shapes to test kernels on: orders 2..6, skewed dims.
std::vector<RandomTensorSpec> standard_specs();

// Path of a data file: tests/data/NAME if present, else ../shared/data/NAME;
// empty string if neither exists (tests then GTEST_SKIP()).
std::string data_file(const std::string& name);

// Relative-or-absolute closeness: |a-b| <= tol * max(1, |a|, |b|), written
// as |a-b| <= tol or <= tol|a| or <= tol|b|: the same test for tol >= 0
// (x -> tol * x is monotone, also when rounded), NaN and inf included, without
// std::max's initializer list, which -O1 (the sanitizer build) leaves as a
// call per element.
inline bool close(double a, double b, double tol) {
  const double d = std::abs(a - b);
  return d <= tol || d <= tol * std::abs(a) || d <= tol * std::abs(b);
}

template <typename T>
constexpr double tolerance() {
  return sizeof(T) == 4 ? 1e-4 : 1e-11;
}

// Same shape, every element close (tolerance<T>()).
template <typename T>
void expect_matrix_close(const DenseMatrix<T>& want, const DenseMatrix<T>& got, const std::string& what) {
  ASSERT_EQ(want.rows, got.rows) << what;
  ASSERT_EQ(want.cols, got.cols) << what;
  // A plain loop over the (row-major, unpadded) values finds the first
  // element that is not close; only that one goes through the assertion.
  // Outputs of 10^5..10^6 elements are compared many times in the slowest
  // tests, and under ASan the per-element gtest macro and accessor calls
  // were a third of their time.
  const T* w = want.values.data();
  const T* g = got.values.data();
  const spt_nnz n = want.rows * want.cols;
  for (spt_nnz k = 0; k < n; ++k) {
    if (close(w[k], g[k], tolerance<T>())) continue;
    const spt_nnz i = k / want.cols, j = k % want.cols;
    ASSERT_TRUE(close(want(i, j), got(i, j), tolerance<T>()))
        << what << " at (" << i << "," << j << "): want " << want(i, j) << " got " << got(i, j);
  }
}

}  // namespace spt::test
