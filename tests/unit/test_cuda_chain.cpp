// The GPU Tucker TTMc by chained TTMs on B-CSF / HB-CSF fibers (issue 6):
//  - the kernel launch_hbcsf_ttmc (cuda/ttmc_hbcsf.cuh) against the
//    reference one-shot TTMc (kernels::reference::ttmc) on every root mode
//    of tensors of orders 3..6, float32 and float64, with pathological
//    shapes (one enormous split slice, one fiber longer than the fiber
//    split threshold, all-singleton fibers - the CSL and COO groups -, very
//    short modes), ranks such as (3, 5, 7) so that a wrong column order
//    fails, rows up to and above the kernels' register width (512
//    columns), and a leaf rank above 32. Needs a device (skips otherwise)
//    and the kernel library linked (tests/cuda.cmake; without it only the
//    host tests below exist).
//  - the dispatcher's cost estimate (src/dispatch/device_tucker.hpp) on any
//    machine: long fibers prefer the chain, tensors without shared fibers
//    prefer F-COO, and the per-mode numbers follow the documented formulas.
// The Tucker-HOOI runs with SPT_TUCKER_TTMC_CHAIN are in
// test_cuda_tucker.cpp (beside the F-COO and HLS ones).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/cuda_test_util.hpp"
#include "common/test_util.hpp"
#include "core/coo.hpp"
#include "core/error.hpp"
#include "core/hbcsf.hpp"
#include "dispatch/device_tucker.hpp"
#include "kernels/kernels.hpp"

#ifdef SPT_TEST_CUDA_KERNELS
#include <cuda_runtime_api.h>

#include "dispatch/plugin_hbcsf.hpp"
#include "hbcsf_abi_view.cuh"
#include "ttmc_hbcsf.cuh"
#endif

namespace spt::test {
namespace {

// A COO tensor from explicit coordinates (float64).
spt_coo_s coo_from(const std::vector<spt_index>& dims, const std::vector<std::vector<spt_index>>& coords,
                   uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  spt_coo_s x;
  x.init_owned(SPT_FLOAT64, dims, coords.size());
  for (size_t k = 0; k < coords.size(); ++k) {
    for (size_t m = 0; m < dims.size(); ++m) x.mutable_ind(static_cast<uint32_t>(m))[k] = coords[k][m];
    x.mutable_values<double>()[k] = unit(rng);
  }
  return x;
}

std::vector<spt_index> random_coord(const std::vector<spt_index>& dims, std::mt19937_64& rng) {
  std::vector<spt_index> c(dims.size());
  for (size_t m = 0; m < dims.size(); ++m) c[m] = static_cast<spt_index>(rng() % dims[m]);
  return c;
}

// One slice (mode 0, index 0) holding 5000 of the 5200 nonzeros: split into
// many work units (atomic rows) when rooted at mode 0.
spt_coo_s enormous_slice() {
  const std::vector<spt_index> dims{6, 300, 200};
  std::mt19937_64 rng(11);
  std::vector<std::vector<spt_index>> coords;
  for (int k = 0; k < 5000; ++k) {
    std::vector<spt_index> c = random_coord(dims, rng);
    c[0] = 0;
    coords.push_back(c);
  }
  for (int k = 0; k < 200; ++k) coords.push_back(random_coord(dims, rng));
  return coo_from(dims, coords, 12);
}

// One fiber of 1500 nonzeros along the longest mode (the leaf level of the
// trees rooted at modes 0 and 1), far above the split threshold of 128,
// plus scattered nonzeros.
spt_coo_s enormous_fiber() {
  const std::vector<spt_index> dims{5, 7, 3000};
  std::mt19937_64 rng(13);
  std::vector<std::vector<spt_index>> coords;
  for (spt_index k = 0; k < 1500; ++k) coords.push_back({1, 2, 2 * k});
  for (int k = 0; k < 300; ++k) coords.push_back(random_coord(dims, rng));
  return coo_from(dims, coords, 14);
}

spt_coo_s random_tensor(const std::vector<spt_index>& dims, spt_nnz nnz, uint64_t seed, bool skewed = true) {
  RandomTensorSpec spec;
  spec.dims = dims;
  spec.nnz = nnz;
  spec.seed = seed;
  spec.skewed = skewed;
  return random_coo(SPT_FLOAT64, spec);
}

struct KernelCase {
  std::string name;
  spt_coo_s x;  // float64
  std::vector<spt_index> ranks;
};

std::vector<KernelCase> kernel_cases() {
  std::vector<KernelCase> c;
  c.push_back({"order 3, ranks (3,5,7)", random_tensor({60, 45, 70}, 4000, 1), {3, 5, 7}});
  c.push_back({"order 3, rows above 512 columns", random_tensor({60, 45, 70}, 3000, 2), {23, 29, 31}});
  c.push_back({"order 3, leaf rank 40", random_tensor({40, 50, 300}, 3000, 3), {6, 7, 40}});
  c.push_back({"order 4, ranks (3,5,7,2)", random_tensor({30, 25, 20, 40}, 5000, 4), {3, 5, 7, 2}});
  c.push_back({"order 5, ranks (3,5,7,2,3)", random_tensor({12, 10, 9, 8, 14}, 4000, 5), {3, 5, 7, 2, 3}});
  c.push_back({"order 6, ranks (2,3,5,7,2,3)", random_tensor({8, 7, 6, 9, 5, 10}, 4000, 6), {2, 3, 5, 7, 2, 3}});
  c.push_back({"one enormous slice", enormous_slice(), {3, 5, 7}});
  c.push_back({"one enormous fiber", enormous_fiber(), {3, 5, 7}});
  c.push_back({"all-singleton fibers", random_tensor({40, 3000, 4000}, 2500, 7, false), {3, 5, 7}});
  c.push_back({"very short modes", random_tensor({2, 3, 400, 2}, 1500, 8), {2, 3, 5, 2}});
  c.push_back({"tiny dense cube", random_tensor({2, 2, 2}, 8, 9, false), {2, 1, 2}});
  return c;
}

// What the trees look like (so the cases cover what they claim): summed
// over the roots, COO, CSL and B-CSF nonzeros, split fibers and slices.
struct TreeStats {
  spt_nnz coo = 0, csl = 0, bcsf = 0, split_fibers = 0, split_slices = 0;
};

/* ------------------------------ host: the estimate ------------------------------ */

TEST(TuckerTtmcEstimate, FollowsTheFormulas) {
  const spt_coo_s x = random_tensor({30, 25, 20, 40}, 5000, 4);
  const std::vector<spt_index> ranks{3, 5, 7, 2};
  std::vector<spt_hbcsf_s> trees;
  for (uint32_t n = 0; n < 4; ++n) trees.push_back(hbcsf::from_coo(x, n, hbcsf::Params{}, 2));
  std::vector<const spt_hbcsf_s*> ptrs;
  for (const auto& h : trees) ptrs.push_back(&h);
  const dispatch::TuckerTtmcEstimate e = dispatch::tucker_ttmc_estimate(ptrs, ranks);
  ASSERT_EQ(e.fcoo.size(), 4u);
  ASSERT_EQ(e.chain.size(), 4u);
  double fcoo = 0, chain = 0;
  for (uint32_t n = 0; n < 4; ++n) {
    const spt_hbcsf_s& h = trees[n];
    double p = 1;
    for (uint32_t m = 0; m < 4; ++m)
      if (m != n) p *= ranks[m];
    const double nnz = static_cast<double>(x.nnz);
    EXPECT_DOUBLE_EQ(e.fcoo[n], nnz * (p + 16)) << "mode " << n;
    const double singles = static_cast<double>(h.coo_nnz() + h.csl_nnz());
    const double want = singles * (p + 16) + static_cast<double>(h.bcsf_nnz()) * (ranks[h.mode_order[3]] + 4) +
                        static_cast<double>(h.segments()) * (p + 16);
    EXPECT_DOUBLE_EQ(e.chain[n], want) << "mode " << n;
    fcoo += e.fcoo[n];
    chain += e.chain[n];
  }
  EXPECT_DOUBLE_EQ(e.fcoo_total, fcoo);
  EXPECT_DOUBLE_EQ(e.chain_total, chain);
  EXPECT_EQ(e.prefers_chain(), chain < dispatch::kTuckerChainAdvantage * fcoo);
  // The convenience overload builds the same trees.
  const dispatch::TuckerTtmcEstimate again = dispatch::tucker_ttmc_estimate(x, ranks, 2);
  EXPECT_DOUBLE_EQ(again.chain_total, e.chain_total);
  EXPECT_DOUBLE_EQ(again.fcoo_total, e.fcoo_total);
}

TEST(TuckerTtmcEstimate, LongFibersPreferTheChain) {
  // Dense 20^3: every fiber holds 20 nonzeros; ranks 12 (P_n = 144): the
  // chain's estimate is about 0.15 of F-COO's.
  std::vector<std::vector<spt_index>> coords;
  for (spt_index a = 0; a < 20; ++a)
    for (spt_index b = 0; b < 20; ++b)
      for (spt_index c = 0; c < 20; ++c) coords.push_back({a, b, c});
  const spt_coo_s x = coo_from({20, 20, 20}, coords, 3);
  const dispatch::TuckerTtmcEstimate e = dispatch::tucker_ttmc_estimate(x, {12, 12, 12}, 2);
  EXPECT_TRUE(e.prefers_chain()) << "chain " << e.chain_total << ", F-COO " << e.fcoo_total;
  EXPECT_LT(e.chain_total, dispatch::kTuckerChainAdvantage * e.fcoo_total);
  // Ranks 8 (P_n = 64): about 0.21, just above the advantage required.
  const dispatch::TuckerTtmcEstimate low = dispatch::tucker_ttmc_estimate(x, {8, 8, 8}, 2);
  EXPECT_LT(low.chain_total, low.fcoo_total);
  EXPECT_FALSE(low.prefers_chain()) << "chain " << low.chain_total << ", F-COO " << low.fcoo_total;
}

TEST(TuckerTtmcEstimate, NoSharedFibersPreferFcoo) {
  // A diagonal: every slice holds one nonzero (the COO group), no fiber to
  // share: the chain pays the F-COO price plus nothing saved.
  std::vector<std::vector<spt_index>> coords;
  for (spt_index k = 0; k < 500; ++k) coords.push_back({k, k, k});
  const spt_coo_s x = coo_from({500, 500, 500}, coords, 4);
  const dispatch::TuckerTtmcEstimate e = dispatch::tucker_ttmc_estimate(x, {4, 4, 4}, 2);
  EXPECT_FALSE(e.prefers_chain()) << "chain " << e.chain_total << ", F-COO " << e.fcoo_total;
  EXPECT_DOUBLE_EQ(e.chain_total, e.fcoo_total);
}

TEST(TuckerTtmcEstimate, RejectsTreesOfTheWrongRoot) {
  const spt_coo_s x = random_tensor({10, 12, 14}, 300, 5);
  const spt_hbcsf_s h0 = hbcsf::from_coo(x, 0, hbcsf::Params{}, 1);
  try {
    (void)dispatch::tucker_ttmc_estimate({&h0, &h0, &h0}, {2, 2, 2});
    FAIL() << "trees rooted at mode 0 for modes 1 and 2 should be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_INVALID_ARGUMENT) << e.what();
  }
}

/* ------------------------------ device: the kernel ------------------------------ */

#ifdef SPT_TEST_CUDA_KERNELS

// Frees a device allocation at scope exit.
struct DeviceBuffer {
  void* p = nullptr;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
};

// Uploads h as the plugin does (cuda/plugin.cu plugin_hbcsf_upload).
void upload(const spt_hbcsf_s& h, DeviceBuffer& block, cuda::DeviceHbcsfRef& ref) {
  const dispatch::PluginHbcsf p = dispatch::plugin_view_of(h);
  const cuda::HostHbcsfView v = cuda::host_view_of(p.view);
  const size_t bytes = cuda::hbcsf_copy_bytes(v);
  ASSERT_GT(bytes, 0u);
  ASSERT_EQ(cudaMalloc(&block.p, bytes), cudaSuccess);
  ASSERT_EQ(cuda::hbcsf_upload(v, block.p, &ref), cudaSuccess);
}

template <typename T>
void to_device(const std::vector<T>& host, DeviceBuffer& d) {
  ASSERT_EQ(cudaMalloc(&d.p, std::max<size_t>(1, host.size()) * sizeof(T)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d.p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
}

DenseMatrix<double> absolute(const DenseMatrix<double>& a) {
  DenseMatrix<double> b(a.rows, a.cols);
  for (size_t e = 0; e < a.values.size(); ++e) b.values[e] = std::abs(a.values[e]);
  return b;
}

// launch_hbcsf_ttmc on the tree of x (in T) rooted at `root` against the
// reference TTMc in float64 on the same (T-rounded) values; every entry
// within tol x the TTMc of |x| and |U| (a bound on the rounding of any
// summation order), zero rows exactly zero.
template <typename T>
void check_root(const KernelCase& c, uint32_t root, TreeStats& stats) {
  const std::string what = c.name + ", root " + std::to_string(root);
  const uint32_t order = c.x.order();
  const spt_coo_s xt = copy_coo(c.x, dtype_of<T>());
  const spt_coo_s xd = copy_coo(xt, SPT_FLOAT64);  // the T-rounded values, in double
  spt_coo_s xa = copy_coo(xd, SPT_FLOAT64);
  for (spt_nnz k = 0; k < xa.nnz; ++k) xa.mutable_values<double>()[k] = std::abs(xa.values<double>()[k]);
  const spt_hbcsf_s h = hbcsf::from_coo(xt, root, hbcsf::Params{}, 2);
  ASSERT_EQ(h.root(), root);
  stats.coo += h.coo_nnz();
  stats.csl += h.csl_nnz();
  stats.bcsf += h.bcsf_nnz();
  stats.split_fibers += h.split_fibers;
  stats.split_slices += h.split_slices;
  // Factors: random, rounded to T; kept in double for the reference.
  std::vector<DenseMatrix<double>> fd, fa;
  std::vector<DeviceBuffer> fdev(order);
  std::vector<const T*> fptr(order, nullptr);
  std::vector<uint32_t> ranks(order);
  for (uint32_t m = 0; m < order; ++m) {
    ranks[m] = c.ranks[m];
    DenseMatrix<double> u = random_matrix<double>(c.x.dims[m], c.ranks[m], 100 + 7 * m + root);
    std::vector<T> ut(u.values.size());
    for (size_t e = 0; e < ut.size(); ++e) {
      ut[e] = static_cast<T>(u.values[e]);
      u.values[e] = static_cast<double>(ut[e]);
    }
    fa.push_back(absolute(u));
    fd.push_back(std::move(u));
    if (m == root) continue;  // not read: NULL is allowed
    to_device(ut, fdev[m]);
    fptr[m] = static_cast<const T*>(fdev[m].p);
  }
  uint64_t width = 1;
  for (uint32_t m = 0; m < order; ++m)
    if (m != root) width *= c.ranks[m];
  const spt_index rows = c.x.dims[root];
  DenseMatrix<double> want(rows, width), bound(rows, width);
  kernels::Exec exec;
  const std::vector<ConstMatRef<double>> fd_refs = crefs(fd), fa_refs = crefs(fa);
  kernels::reference::ttmc(exec, xd, fd_refs.data(), root, want.ref());
  kernels::reference::ttmc(exec, xa, fa_refs.data(), root, bound.ref());

  DeviceBuffer block, out;
  cuda::DeviceHbcsfRef ref;
  upload(h, block, ref);
  if (::testing::Test::HasFatalFailure()) return;
  const size_t out_bytes = size_t(rows) * width * sizeof(T);
  ASSERT_EQ(cudaMalloc(&out.p, out_bytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(out.p, 0, out_bytes), cudaSuccess);
  int device = 0, sms = 1;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  ASSERT_EQ(cuda::launch_hbcsf_ttmc<T>(ref, fptr.data(), ranks.data(), static_cast<uint32_t>(width),
                                       static_cast<T*>(out.p), sms, nullptr),
            cudaSuccess)
      << what;
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
  std::vector<T> got(size_t(rows) * width);
  ASSERT_EQ(cudaMemcpy(got.data(), out.p, out_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  const double tol = sizeof(T) == 4 ? 1e-4 : 1e-12;
  int reported = 0;
  for (spt_index i = 0; i < rows; ++i)
    for (uint64_t col = 0; col < width; ++col) {
      const double g = static_cast<double>(got[size_t(i) * width + col]);
      const double diff = std::abs(g - want(i, col));
      if (diff <= tol * bound(i, col) && std::isfinite(g)) continue;
      ADD_FAILURE() << what << ": Y(" << i << ", " << col << ") = " << g << ", want " << want(i, col)
                    << " (bound " << bound(i, col) << ")";
      if (++reported == 5) return;
    }
}

template <typename T>
class CudaChainKernel : public ::testing::Test {};
using ValueTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CudaChainKernel, ValueTypes);

TYPED_TEST(CudaChainKernel, MatchesReferenceTtmcOnEveryRoot) {
  SKIP_WITHOUT_DEVICE();
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    GTEST_SKIP() << "the CUDA runtime linked into the test sees no device";
  }
  for (const KernelCase& c : kernel_cases()) {
    TreeStats stats;
    for (uint32_t root = 0; root < c.x.order(); ++root) {
      check_root<TypeParam>(c, root, stats);
      if (::testing::Test::HasFatalFailure()) return;
    }
    // The pathological cases reach the paths they are named for.
    if (c.name == "one enormous slice") {
      EXPECT_GT(stats.split_slices, 0u) << c.name;
    }
    if (c.name == "one enormous fiber") {
      EXPECT_GT(stats.split_fibers, 0u) << c.name;
    }
    if (c.name == "all-singleton fibers") {
      EXPECT_GT(stats.csl + stats.coo, c.x.nnz) << c.name;
    }
  }
}

// Arguments the launch refuses (cudaErrorInvalidValue, nothing launched).
TEST(CudaChainKernelArgs, RejectsBadWidthOrFactors) {
  SKIP_WITHOUT_DEVICE();
  const spt_coo_s x = copy_coo(random_tensor({10, 12, 14}, 300, 5), SPT_FLOAT32);
  const spt_hbcsf_s h = hbcsf::from_coo(x, 0, hbcsf::Params{}, 1);
  DeviceBuffer block, f1, f2, out;
  cuda::DeviceHbcsfRef ref;
  upload(h, block, ref);
  if (HasFatalFailure()) return;
  to_device(std::vector<float>(12 * 3, 1.0f), f1);
  to_device(std::vector<float>(14 * 4, 1.0f), f2);
  to_device(std::vector<float>(10 * 12, 0.0f), out);
  const float* factors[3] = {nullptr, static_cast<const float*>(f1.p), static_cast<const float*>(f2.p)};
  const uint32_t ranks[3] = {2, 3, 4};
  float* o = static_cast<float*>(out.p);
  EXPECT_EQ(cuda::launch_hbcsf_ttmc<float>(ref, factors, ranks, 11, o, 1, nullptr), cudaErrorInvalidValue);
  const float* missing[3] = {nullptr, nullptr, static_cast<const float*>(f2.p)};
  EXPECT_EQ(cuda::launch_hbcsf_ttmc<float>(ref, missing, ranks, 12, o, 1, nullptr), cudaErrorInvalidValue);
  const uint32_t wide[3] = {2, 3, cuda::kHbcsfTtmcMaxLeafRank + 1};
  const uint32_t leaf = ref.mode_order[2];
  if (leaf == 2) {
    EXPECT_EQ(cuda::launch_hbcsf_ttmc<float>(ref, factors, wide, 3 * (cuda::kHbcsfTtmcMaxLeafRank + 1), o, 1, nullptr),
              cudaErrorInvalidValue);
  }
  EXPECT_EQ(cuda::launch_hbcsf_ttmc<float>(ref, factors, ranks, 12, o, 1, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

#endif  // SPT_TEST_CUDA_KERNELS

}  // namespace
}  // namespace spt::test
