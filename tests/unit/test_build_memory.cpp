// Heap high-water marks of building CSF trees (issue 25: peak memory of a
// CP-ALS run). Every heap allocation the library makes goes through
// operator new (see test_alloc_failure.cpp), so this executable replaces the
// global operator new with one that counts live bytes and their maximum
// (common/heap_counter.hpp).
// A build holds, besides the tensor and the trees it returns, only the
// sort's bucket offsets and per-thread scratch for one bucket: the values
// and the keys' low bits (32-bit here) become the tree's own arrays. The
// transient bytes above the trees stay within half a byte per nonzero and a
// small constant, whatever the order. The same holds when the other trees
// are built from the first tree alone (the tensor freed), as
// spt_cpd_als_take does.
//
// The hook is test-only: it lives in this executable, not in the library.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <ostream>

#include "common/heap_counter.hpp"
#include "common/test_util.hpp"
#include "core/csf.hpp"
#include "core/exec.hpp"

namespace spt {
namespace {

struct BuildCase {
  std::vector<spt_index> dims;
  spt_dtype dtype;
  spt_csf_policy policy;
};

void PrintTo(const BuildCase& c, std::ostream* os) {
  *os << "order " << c.dims.size() << ", " << (c.dtype == SPT_FLOAT32 ? "float32" : "float64") << ", policy "
      << csf_policy_name(c.policy);
}

class CsfBuildMemory : public ::testing::TestWithParam<BuildCase> {};

TEST_P(CsfBuildMemory, TransientBytesStayWithinTheBound) {
  const BuildCase& c = GetParam();
  test::RandomTensorSpec spec;
  spec.dims = c.dims;
  spec.nnz = 200000;
  spec.seed = 25;
  const spt_coo_s x = test::random_coo(c.dtype, spec);
  spt_csf_s csf;
  const HeapWatch watch;
  build_csf(Exec{2}, x, c.policy, csf);
  const long long peak_above = watch.peak_above();
  const long long kept = watch.live_above();
  const double bound = static_cast<double>(kept) + 0.5 * double(x.nnz) + 64.0 * 1024.0;
  std::printf("order %u, %s, %u tree(s): trees %lld bytes, peak above the tensor %lld bytes, bound %.0f bytes\n",
              x.order(), c.dtype == SPT_FLOAT32 ? "float32" : "float64", static_cast<unsigned>(csf.trees.size()),
              kept, peak_above, bound);
  // The handle's own estimate matches what the build kept (capacity slack
  // of the allocator aside).
  EXPECT_GE(kept, static_cast<long long>(csf.bytes()));
  EXPECT_LE(kept, static_cast<long long>(csf.bytes()) + 64 * 1024);
  EXPECT_LE(static_cast<double>(peak_above), bound);
}

TEST_P(CsfBuildMemory, FromTheFirstTreeTransientBytesStayWithinTheBound) {
  const BuildCase& c = GetParam();
  if (c.policy == SPT_CSF_ONEMODE) GTEST_SKIP() << "one tree: nothing is built from it";
  test::RandomTensorSpec spec;
  spec.dims = c.dims;
  spec.nnz = 200000;
  spec.seed = 25;
  spt_nnz nnz = 0;
  CsfTree first;
  {
    const spt_coo_s x = test::random_coo(c.dtype, spec);
    nnz = x.nnz;
    first = build_csf_tree(Exec{2}, x, csf_mode_order(x.dims, csf_shortest_mode(x.dims)));
  }
  spt_csf_s csf;
  const HeapWatch watch;
  build_csf_from_first_tree(Exec{2}, spec.dims, c.policy, std::move(first), CsfTreeUse::keep_all, csf);
  const long long peak_above = watch.peak_above();
  const long long kept = watch.live_above();  // the trees after the first
  const double bound = static_cast<double>(kept) + 0.5 * double(nnz) + 64.0 * 1024.0;
  std::printf("order %zu, %u tree(s) from the first: new trees %lld bytes, peak above the first %lld, bound %.0f\n",
              spec.dims.size(), static_cast<unsigned>(csf.trees.size()), kept, peak_above, bound);
  EXPECT_LE(static_cast<double>(peak_above), bound);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CsfBuildMemory,
    ::testing::Values(BuildCase{{300, 400, 500}, SPT_FLOAT32, SPT_CSF_ALLMODE},
                      BuildCase{{300, 400, 500}, SPT_FLOAT64, SPT_CSF_ALLMODE},
                      BuildCase{{300, 400, 500}, SPT_FLOAT32, SPT_CSF_ONEMODE},
                      BuildCase{{60, 70, 80, 90}, SPT_FLOAT32, SPT_CSF_ALLMODE},
                      BuildCase{{60, 70, 80, 90}, SPT_FLOAT64, SPT_CSF_TWOMODE}));

}  // namespace
}  // namespace spt
