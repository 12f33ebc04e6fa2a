// The GPU SpTTM family (cuda/ttm.cuh, cuda/plugin_ttm.cu,
// src/dispatch/device_ttm.cpp): every SpTTM kernel the rule can pick
// (coalesced, rank-blocked, shared-memory) forced through the context's
// test-only gpu_ttm_variant (and checked to be the one that ran) against the
// reference kernel computed in float64, on random tensors of orders 3..6 in
// every mode with ranks 1, 7, 16, 33 and 130, and on pathological shapes
// (one enormous fiber, all-singleton fibers, very short modes with repeated
// coordinates, an empty tensor, a pre-sorted tensor); the output structure
// must equal the CPU kernel's exactly. The variant rule (runs wherever the
// plugin loads, no device needed), the AUTO choice, SsTTM (one and two
// dense modes, grouped and ungrouped fibers), the public API (spt_ttm,
// spt_scoo_ttm, spt_ttm_chain with backend CUDA against CPU), AUTO's small-
// problem rule, out-of-memory and unknown-variant behaviour, and the CPU-only
// behaviour (CUDA forced is SPT_ERR_DEVICE, AUTO runs on the CPU).
// GPU tests skip with the reason when no device is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/cuda_test_util.hpp"
#include "common/test_util.hpp"
#include "core/context.hpp"
#include "core/error.hpp"
#include "core/scoo.hpp"
#include "core/sort.hpp"
#include "dispatch/dispatch.hpp"
#include "dispatch/plugin_abi.h"
#include "dispatch/plugin_loader.hpp"
#include "kernels/kernels.hpp"
#include "sptensor/sptensor.h"

namespace spt::test {
namespace {

using kernels::Exec;

// The kernels the rule picks, by SPT_PLUGIN_TTM_* number.
const std::pair<int, const char*> kVariants[] = {{SPT_PLUGIN_TTM_COALESCED, "coalesced"},
                                                 {SPT_PLUGIN_TTM_RANK_BLOCKED, "rank_blocked"},
                                                 {SPT_PLUGIN_TTM_SHARED, "shared"}};
const spt_nnz kRanks[] = {1, 7, 16, 33, 130};



// The variant number the device SpTTM logged last (-1 if none).
int logged_variant(const std::vector<std::string>& lines) {
  int v = -1;
  for (const std::string& l : lines) {
    const size_t at = l.find("kernel variant ");
    if (at != std::string::npos) v = std::atoi(l.c_str() + at + 15);
  }
  return v;
}

template <typename T>
constexpr double tol() {
  return sizeof(T) == 4 ? 1e-5 : 1e-12;
}

// A float64 copy of x (|values| when absolute).
spt_coo_s coo_as_double(const spt_coo_s& x, bool absolute) {
  spt_coo_s y;
  y.init_owned(SPT_FLOAT64, x.dims, x.nnz);
  for (uint32_t m = 0; m < x.order(); ++m) std::copy(x.ind[m], x.ind[m] + x.nnz, y.mutable_ind(m));
  with_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* v = x.values<T>();
    double* d = y.mutable_values<double>();
    for (spt_nnz k = 0; k < x.nnz; ++k) d[k] = absolute ? std::abs(double(v[k])) : double(v[k]);
  });
  return y;
}

spt_scoo_s scoo_as_double(const spt_scoo_s& y, bool absolute) {
  spt_scoo_s z;
  z.dims = y.dims;
  z.dense_mode = y.dense_mode;
  z.dense_modes = y.dense_modes;
  z.nfibers = y.nfibers;
  z.ind = y.ind;
  z.fiber_order = y.fiber_order;
  z.values.set_dtype(SPT_FLOAT64);
  z.values.resize(y.nfibers * y.block_size());
  double* d = z.values.get<double>().data();
  with_dtype(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* v = y.values.get<T>().data();
    for (size_t i = 0; i < z.values.get<double>().size(); ++i)
      d[i] = absolute ? std::abs(double(v[i])) : double(v[i]);
  });
  return z;
}

template <typename T>
DenseMatrix<double> matrix_as_double(const DenseMatrix<T>& m, bool absolute) {
  DenseMatrix<double> d(m.rows, m.cols);
  for (size_t i = 0; i < m.values.size(); ++i) d.values[i] = absolute ? std::abs(double(m.values[i])) : m.values[i];
  return d;
}

// got must have exactly cpu's structure (dims, dense modes, fiber order,
// fibers and their coordinates) and values within tol * max(1, scale) of
// want, where want / scale are the float64 reference results on (x, U) and
// (|x|, |U|) (fibers matched by coordinates: the reference sorts them).
template <typename T>
::testing::AssertionResult same_scoo(const spt_scoo_s& cpu, const spt_scoo_s& got, const spt_scoo_s& want,
                                     const spt_scoo_s& scale, double tolerance) {
  if (got.dims != cpu.dims) return ::testing::AssertionFailure() << "dims differ from the CPU kernel's";
  if (got.dense_modes != cpu.dense_modes || got.dense_mode != cpu.dense_mode)
    return ::testing::AssertionFailure() << "dense modes differ from the CPU kernel's";
  if (got.fiber_order != cpu.fiber_order) return ::testing::AssertionFailure() << "fiber_order differs";
  if (got.nfibers != cpu.nfibers || got.nfibers != want.nfibers)
    return ::testing::AssertionFailure() << "fibers: got " << got.nfibers << ", CPU " << cpu.nfibers << ", reference "
                                         << want.nfibers;
  if (got.dtype() != cpu.dtype()) return ::testing::AssertionFailure() << "dtype differs";
  if (got.ind.size() != cpu.ind.size()) return ::testing::AssertionFailure() << "index arrays differ";
  for (uint32_t m = 0; m < got.order(); ++m) {
    if (got.ind[m].size() != cpu.ind[m].size()) return ::testing::AssertionFailure() << "ind[" << m << "] size";
    for (size_t f = 0; f < got.ind[m].size(); ++f)
      if (got.ind[m][f] != cpu.ind[m][f])
        return ::testing::AssertionFailure() << "fiber " << f << " has another coordinate in mode " << m;
  }
  const std::vector<uint32_t> sparse = got.sparse_modes();
  std::map<std::vector<spt_index>, spt_nnz> where;
  std::vector<spt_index> key(sparse.size());
  for (spt_nnz f = 0; f < want.nfibers; ++f) {
    for (size_t j = 0; j < sparse.size(); ++j) key[j] = want.ind[sparse[j]][f];
    where[key] = f;
  }
  const uint64_t block = got.block_size();
  if (got.values.get<T>().size() != got.nfibers * block) return ::testing::AssertionFailure() << "value count";
  const T* g = got.values.get<T>().data();
  const double* w = want.values.get<double>().data();
  const double* s = scale.values.get<double>().data();
  for (spt_nnz f = 0; f < got.nfibers; ++f) {
    for (size_t j = 0; j < sparse.size(); ++j) key[j] = got.ind[sparse[j]][f];
    const auto it = where.find(key);
    if (it == where.end()) return ::testing::AssertionFailure() << "fiber " << f << " is not in the reference";
    for (uint64_t e = 0; e < block; ++e) {
      const double a = g[f * block + e], b = w[it->second * block + e];
      const double bound = tolerance * std::max(1.0, s[it->second * block + e]);
      if (!(std::abs(a - b) <= bound))
        return ::testing::AssertionFailure() << "fiber " << f << " element " << e << ": got " << a << ", want " << b
                                             << " (bound " << bound << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// Oracle of one SpTTM: the CPU kernel's output (structure) and the float64
// reference on (x, U) and (|x|, |U|).
struct TtmOracle {
  spt_scoo_s cpu, want, scale;
};

template <typename T>
TtmOracle ttm_oracle(const spt_coo_s& x, uint32_t mode, const DenseMatrix<T>& u) {
  TtmOracle o;
  kernels::cpu::ttm(Exec{2}, x, mode, u.cref(), o.cpu);
  const spt_coo_s xd = coo_as_double(x, false), xa = coo_as_double(x, true);
  const DenseMatrix<double> ud = matrix_as_double(u, false), ua = matrix_as_double(u, true);
  kernels::reference::ttm(Exec{1}, xd, mode, ud.cref(), o.want);
  kernels::reference::ttm(Exec{1}, xa, mode, ua.cref(), o.scale);
  return o;
}

// SpTTM through the dispatcher with backend CUDA and `variant` forced
// (SPT_PLUGIN_TTM_*; AUTO = the rule); the log (verbosity 2) goes to *log.
template <typename T>
spt_scoo_s gpu_ttm(const spt_coo_s& x, uint32_t mode, const DenseMatrix<T>& u, int variant,
                   std::vector<std::string>* log) {
  spt_context_s ctx;
  ctx.gpu_ttm_variant = variant;
  ctx.backend = SPT_BACKEND_CUDA;
  ctx.threads = 2;
  ctx.verbosity = 2;
  ctx.log = record_log_line;
  ctx.log_data = log;
  spt_scoo_s out;
  SPT_DISPATCH(ctx, ttm, x, mode, u.cref(), out);
  return out;
}

// Every variant on x in every mode at every rank of `ranks`.
template <typename T>
void check_all_variants(const spt_coo_s& x, const std::vector<spt_nnz>& ranks, const std::string& what) {
  for (uint32_t mode = 0; mode < x.order(); ++mode) {
    for (spt_nnz rank : ranks) {
      const DenseMatrix<T> u = random_matrix<T>(x.dims[mode], rank, 100 + mode + 7 * rank);
      const TtmOracle o = ttm_oracle(x, mode, u);
      for (const auto& [variant, name] : kVariants) {
        const std::string label = cat(what, " mode ", mode, " rank ", rank, " variant ", name);
        std::vector<std::string> log;
        const spt_scoo_s got = gpu_ttm(x, mode, u, variant, &log);
        if (o.cpu.nfibers > 0) {
          EXPECT_EQ(logged_variant(log), variant) << label << ": the forced variant did not run";
        }
        ASSERT_TRUE(same_scoo<T>(o.cpu, got, o.want, o.scale, tol<T>())) << label;
      }
    }
  }
}

std::vector<RandomTensorSpec> orders_3_to_6() {
  std::vector<RandomTensorSpec> specs(4);
  specs[0].dims = {60, 40, 30};
  specs[0].nnz = 3000;
  specs[1].dims = {30, 20, 15, 10};
  specs[1].nnz = 3000;
  specs[2].dims = {16, 12, 10, 8, 6};
  specs[2].nnz = 2500;
  specs[3].dims = {10, 8, 7, 6, 5, 4};
  specs[3].nnz = 2500;
  for (size_t i = 0; i < specs.size(); ++i) specs[i].seed = 11 + i;
  return specs;
}

// Order 3, one fiber of `length` nonzeros in mode 2 (coordinates (0, 0, k)),
// plus 100 scattered nonzeros in the other slices.
spt_coo_s enormous_fiber(spt_dtype dtype, spt_nnz length) {
  const spt_nnz n = length + 100;
  spt_coo_s x;
  x.init_owned(dtype, {3, 2, static_cast<spt_index>(length + 10)}, n);
  std::mt19937_64 rng(5);
  for (spt_nnz k = 0; k < n; ++k) {
    const bool big = k < length;
    x.mutable_ind(0)[k] = big ? 0 : 1 + rng() % 2;
    x.mutable_ind(1)[k] = big ? 0 : rng() % 2;
    x.mutable_ind(2)[k] = big ? static_cast<spt_index>(length - 1 - k) : rng() % (length + 10);
  }
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    for (spt_nnz k = 0; k < n; ++k) x.mutable_values<T>()[k] = static_cast<T>(unit(rng));
  });
  return x;
}

/* ------------------------ any machine: the rule ------------------------- */

// The rule through the plugin's entry (host only: runs wherever the plugin
// loads, with or without a device).
TEST(CudaTtmRule, PicksAValidVariantIgnoringTheEnvironment) {
  const dispatch::CudaPlugin& cuda = dispatch::cuda_plugin();
  if (!cuda.table) GTEST_SKIP() << "the CUDA plugin is not loaded: " << cuda.reason;
  ASSERT_NE(cuda.table->ttm_choose_variant, nullptr);
  char message[512] = {0};
  auto choose = [&](uint64_t rank, uint64_t fibers, uint64_t nnz, uint64_t longest) {
    int v = -1;
    EXPECT_EQ(cuda.table->ttm_choose_variant(rank, fibers, nnz, longest, &v, message, sizeof message), SPT_OK)
        << message;
    return v;
  };
  for (uint64_t rank : {1u, 2u, 7u, 8u, 16u, 17u, 33u, 64u, 130u, 4096u})
    for (uint64_t fibers : {0u, 1u, 10u, 100000u})
      for (uint64_t mean : {1u, 2u, 4u, 50u, 5000u}) {
        const uint64_t nnz = fibers * mean;
        for (uint64_t longest : {mean, mean * 100, nnz}) {
          const int v = choose(rank, fibers, nnz, fibers ? longest : 0);
          EXPECT_GE(v, SPT_PLUGIN_TTM_COALESCED) << rank << " " << fibers << " " << mean << " " << longest;
          EXPECT_LE(v, SPT_PLUGIN_TTM_SHARED) << rank << " " << fibers << " " << mean << " " << longest;
        }
      }
  // The regimes of cuda/ttm.cu's rule (docs/design-measurements.md,
  // "choose_ttm_variant").
  EXPECT_EQ(choose(16, 1000, 5000, 4000), SPT_PLUGIN_TTM_SHARED);          // skewed: one fiber of 4000
  EXPECT_EQ(choose(64, 1000, 5000, 4000), SPT_PLUGIN_TTM_SHARED);
  EXPECT_EQ(choose(16, 1000, 5000, 63), SPT_PLUGIN_TTM_RANK_BLOCKED);      // the longest < 64
  EXPECT_EQ(choose(16, 1300000, 2700000, 323), SPT_PLUGIN_TTM_RANK_BLOCKED);  // skewed, > 300,000 fibers
  EXPECT_EQ(choose(32, 1000, 113000, 180), SPT_PLUGIN_TTM_COALESCED);      // long fibers (mean 113)
  EXPECT_EQ(choose(64, 1000, 113000, 180), SPT_PLUGIN_TTM_RANK_BLOCKED);   // ... at a wide rank
  EXPECT_EQ(choose(16, 1000, 15000, 160), SPT_PLUGIN_TTM_COALESCED);       // mean 15 at R <= 16
  EXPECT_EQ(choose(32, 1000, 15000, 160), SPT_PLUGIN_TTM_RANK_BLOCKED);    // ... at R 32
  EXPECT_EQ(choose(16, 1000, 1500, 3), SPT_PLUGIN_TTM_RANK_BLOCKED);       // short fibers
  EXPECT_EQ(choose(130, 1000, 1500, 3), SPT_PLUGIN_TTM_RANK_BLOCKED);
  // The environment does not change the pick: the library reads no tuning
  // variable.
  {
    ScopedEnv old_override("SPT_CUDA_TTM_VARIANT", "naive");
    EXPECT_EQ(choose(16, 1000, 1500, 3), SPT_PLUGIN_TTM_RANK_BLOCKED);
  }
  int v = -1;
  EXPECT_EQ(cuda.table->ttm_choose_variant(16, 10, 10, 1, nullptr, message, sizeof message), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(cuda.table->ttm_choose_variant(0, 10, 10, 1, &v, message, sizeof message), SPT_ERR_INVALID_ARGUMENT);
}

// The plugin entries validate their host arrays before touching a device
// (an index past U's rows would fault in the kernel): runs wherever the
// plugin loads.
TEST(CudaTtmPlugin, EntriesRejectInconsistentInput) {
  const dispatch::CudaPlugin& cuda = dispatch::cuda_plugin();
  if (!cuda.table) GTEST_SKIP() << "the CUDA plugin is not loaded: " << cuda.reason;
  ASSERT_NE(cuda.table->ttm_fibers, nullptr);
  ASSERT_NE(cuda.table->scoo_ttm, nullptr);
  const uint64_t fiber_ptr[] = {0, 2, 3};
  uint32_t ind[] = {0, 3, 1};
  const double val[] = {1, 2, 3};
  std::vector<double> u(4 * 5, 1.0), out(2 * 5, 0.0);
  spt_plugin_ttm_fibers x{};
  x.dtype = SPT_PLUGIN_FLOAT64;
  x.nnz = 3;
  x.nfibers = 2;
  x.fiber_ptr = fiber_ptr;
  x.ind = ind;
  x.values = val;
  spt_plugin_matrix um{u.data(), 4, 5, 5};
  spt_plugin_matrix om{out.data(), 2, 5, 5};
  char message[512] = {0};
  auto run = [&](spt_plugin_ttm_launch* launch) {
    message[0] = 0;
    return cuda.table->ttm_fibers(0, &x, &um, &om, launch, message, sizeof message);
  };
  um.rows = 3;  // index 3 is out of range
  EXPECT_EQ(run(nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(message).find("not below U's rows"), std::string::npos) << message;
  um.rows = 4;
  const uint64_t bad_ptr[] = {0, 2, 2};  // does not end at nnz
  x.fiber_ptr = bad_ptr;
  EXPECT_EQ(run(nullptr), SPT_ERR_INVALID_ARGUMENT);
  const uint64_t decreasing[] = {0, 4, 3};
  x.fiber_ptr = decreasing;
  EXPECT_EQ(run(nullptr), SPT_ERR_INVALID_ARGUMENT);
  x.fiber_ptr = fiber_ptr;
  om.rows = 3;  // not nfibers x R
  EXPECT_EQ(run(nullptr), SPT_ERR_INVALID_ARGUMENT);
  om.rows = 2;
  spt_plugin_ttm_launch launch{};
  launch.variant = 9;
  EXPECT_EQ(run(&launch), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(message).find("unknown SpTTM variant"), std::string::npos) << message;
  for (int removed : {1, 2}) {  // the naive and fine-grained kernels are not built
    launch.variant = removed;
    EXPECT_EQ(run(&launch), SPT_ERR_INVALID_ARGUMENT) << removed;
  }
  spt_plugin_matrix wide{u.data(), 4, uint64_t(1) << 31, uint64_t(1) << 31};
  EXPECT_EQ(cuda.table->ttm_fibers(0, &x, &wide, &om, nullptr, message, sizeof message), SPT_ERR_UNSUPPORTED);
  // A consistent call: runs on a device, else fails as a device error.
  launch.variant = SPT_PLUGIN_TTM_AUTO;
  const int status = run(&launch);
  if (have_device()) {
    ASSERT_EQ(status, SPT_OK) << message;
    EXPECT_GE(launch.variant_used, SPT_PLUGIN_TTM_COALESCED);
    EXPECT_LE(launch.variant_used, SPT_PLUGIN_TTM_SHARED);
    for (int r = 0; r < 5; ++r) {
      EXPECT_DOUBLE_EQ(out[r], 3.0);      // 1 * U(0, r) + 2 * U(3, r)
      EXPECT_DOUBLE_EQ(out[5 + r], 3.0);  // 3 * U(1, r)
    }
  } else {
    EXPECT_EQ(status, SPT_ERR_DEVICE) << message;
  }

  // SsTTM: perm entries and indices are checked too.
  const uint64_t group_ptr[] = {0, 1, 3};
  const uint64_t perm[] = {2, 0, 1};
  uint32_t fiber_ind[] = {0, 1, 2};
  const double blocks[] = {1, 2, 3, 4, 5, 6};  // 3 fibers x (a_len 2 x b_len 1)
  spt_plugin_scoo_groups y{};
  y.dtype = SPT_PLUGIN_FLOAT64;
  y.nfibers = 3;
  y.ngroups = 2;
  y.a_len = 2;
  y.b_len = 1;
  y.group_ptr = group_ptr;
  y.perm = perm;
  y.ind = fiber_ind;
  y.values = blocks;
  std::vector<double> zout(2 * 2 * 5, 0.0);
  spt_plugin_matrix zm{zout.data(), 2, 10, 10};
  spt_plugin_matrix u3{u.data(), 3, 5, 5};
  fiber_ind[1] = 3;  // past U's 3 rows
  EXPECT_EQ(cuda.table->scoo_ttm(0, &y, &u3, &zm, nullptr, message, sizeof message), SPT_ERR_INVALID_ARGUMENT);
  fiber_ind[1] = 1;
  const uint64_t bad_perm[] = {2, 0, 3};
  y.perm = bad_perm;
  EXPECT_EQ(cuda.table->scoo_ttm(0, &y, &u3, &zm, nullptr, message, sizeof message), SPT_ERR_INVALID_ARGUMENT);
  y.perm = perm;
  zm.cols = 9;  // not a_len * R * b_len
  EXPECT_EQ(cuda.table->scoo_ttm(0, &y, &u3, &zm, nullptr, message, sizeof message), SPT_ERR_INVALID_ARGUMENT);
  zm.cols = 10;
  const int scoo_status = cuda.table->scoo_ttm(0, &y, &u3, &zm, nullptr, message, sizeof message);
  if (have_device()) {
    ASSERT_EQ(scoo_status, SPT_OK) << message;
    // Group 0 = fiber 2 (block {5, 6}); group 1 = fibers 0 and 1 ({1+3, 2+4}); U = 1:
    // out[g][a + 2 r] = sum of the group's a-th values.
    for (int r = 0; r < 5; ++r) {
      EXPECT_DOUBLE_EQ(zout[0 + 2 * r], 5.0);
      EXPECT_DOUBLE_EQ(zout[1 + 2 * r], 6.0);
      EXPECT_DOUBLE_EQ(zout[10 + 2 * r], 4.0);
      EXPECT_DOUBLE_EQ(zout[11 + 2 * r], 6.0);
    }
  } else {
    EXPECT_EQ(scoo_status, SPT_ERR_DEVICE) << message;
  }
}

/* ------------------------------ GPU: SpTTM ------------------------------ */

template <typename T>
class CudaTtm : public ::testing::Test {};
using ValueTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CudaTtm, ValueTypes);

TYPED_TEST(CudaTtm, EveryVariantMatchesReferenceOnOrders3To6) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  for (const RandomTensorSpec& spec : orders_3_to_6()) {
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    check_all_variants<T>(x, {std::begin(kRanks), std::end(kRanks)}, cat("order ", spec.dims.size()));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TYPED_TEST(CudaTtm, PathologicalShapes) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  const std::vector<spt_nnz> ranks(std::begin(kRanks), std::end(kRanks));
  // One enormous fiber (mode 2) - and nearly all-singleton fibers in modes 0, 1.
  check_all_variants<T>(enormous_fiber(dtype_of<T>(), 50000), ranks, "one enormous fiber");
  if (::testing::Test::HasFatalFailure()) return;
  // All-singleton fibers: uniform coordinates in large modes.
  RandomTensorSpec singles;
  singles.dims = {900, 800, 700, 600};
  singles.nnz = 3000;
  singles.skewed = false;
  singles.seed = 3;
  check_all_variants<T>(random_coo(dtype_of<T>(), singles), ranks, "singleton fibers");
  if (::testing::Test::HasFatalFailure()) return;
  // Very short modes: many repeated coordinates (several nonzeros per
  // coordinate inside one fiber), a mode of size 1.
  RandomTensorSpec shorts;
  shorts.dims = {2, 1, 3, 2, 2};
  shorts.nnz = 300;
  shorts.seed = 4;
  shorts.empty_slices = false;
  check_all_variants<T>(random_coo(dtype_of<T>(), shorts), ranks, "short modes");
  if (::testing::Test::HasFatalFailure()) return;
  RandomTensorSpec tiny;
  tiny.dims = {1, 1, 1};
  tiny.nnz = 5;
  tiny.empty_slices = false;
  check_all_variants<T>(random_coo(dtype_of<T>(), tiny), ranks, "1x1x1");
  if (::testing::Test::HasFatalFailure()) return;
  // No nonzeros: an empty result with the CPU kernel's shape.
  RandomTensorSpec none;
  none.dims = {5, 4, 3};
  none.nnz = 0;
  check_all_variants<T>(random_coo(dtype_of<T>(), none), {3}, "empty");
}

// A tensor sorted with the mode last in a non-ascending order of the other
// modes (as the TTM chain sorts it): the fibers come out in that order.
TYPED_TEST(CudaTtm, PresortedInputKeepsItsFiberOrder) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  RandomTensorSpec spec;
  spec.dims = {30, 20, 25, 10};
  spec.nnz = 4000;
  spt_coo_s x = random_coo(dtype_of<T>(), spec);
  sorting::sort_in_place(Exec{2}, x, {3, 0, 2, 1});
  const DenseMatrix<T> u = random_matrix<T>(x.dims[1], 16, 9);
  const TtmOracle o = ttm_oracle(x, 1, u);
  ASSERT_EQ(o.cpu.fiber_order, (std::vector<uint32_t>{3, 0, 2}));
  for (const auto& [variant, name] : kVariants) {
    std::vector<std::string> log;
    const spt_scoo_s got = gpu_ttm(x, 1, u, variant, &log);
    ASSERT_TRUE(same_scoo<T>(o.cpu, got, o.want, o.scale, tol<T>())) << name;
  }
}

// The rule's pick (no env) runs, is the one ttm_choose_variant names, and
// is right.
TYPED_TEST(CudaTtm, AutoVariantMatchesReference) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  const dispatch::CudaPlugin& cuda = dispatch::cuda_plugin();
  std::vector<spt_coo_s> tensors;
  for (const RandomTensorSpec& spec : orders_3_to_6()) tensors.push_back(random_coo(dtype_of<T>(), spec));
  tensors.push_back(enormous_fiber(dtype_of<T>(), 20000));
  for (const spt_coo_s& x : tensors) {
    for (uint32_t mode = 0; mode < x.order(); ++mode) {
      for (spt_nnz rank : {spt_nnz(8), spt_nnz(16), spt_nnz(40)}) {
        const DenseMatrix<T> u = random_matrix<T>(x.dims[mode], rank, 3 + mode);
        const TtmOracle o = ttm_oracle(x, mode, u);
        std::vector<std::string> log;
        const spt_scoo_s got = gpu_ttm(x, mode, u, SPT_PLUGIN_TTM_AUTO, &log);
        const std::string label = cat("order ", x.order(), " mode ", mode, " rank ", rank);
        ASSERT_TRUE(same_scoo<T>(o.cpu, got, o.want, o.scale, tol<T>())) << label;
        // The fiber statistics the rule saw.
        spt_nnz longest = 0, nnz = 0;
        {
          const sorting::ModeFibers fibers(Exec{1}, x, mode);
          for (spt_nnz f = 0; f < fibers.count(); ++f)
            longest = std::max(longest, fibers.starts()[f + 1] - fibers.starts()[f]);
          nnz = x.nnz;
        }
        int expected = -1;
        char message[256] = {0};
        ASSERT_EQ(cuda.table->ttm_choose_variant(rank, got.nfibers, nnz, longest, &expected, message, sizeof message),
                  SPT_OK);
        EXPECT_EQ(logged_variant(log), expected) << label;
      }
    }
  }
}

/* ------------------------------ GPU: SsTTM ------------------------------ */

template <typename T>
::testing::AssertionResult check_scoo_ttm(const spt_scoo_s& y, uint32_t mode, const DenseMatrix<T>& u,
                                          spt_scoo_s* result = nullptr) {
  spt_scoo_s cpu, want, scale, got;
  kernels::cpu::scoo_ttm(Exec{2}, y, mode, u.cref(), cpu);
  const spt_scoo_s yd = scoo_as_double(y, false), ya = scoo_as_double(y, true);
  const DenseMatrix<double> ud = matrix_as_double(u, false), ua = matrix_as_double(u, true);
  kernels::reference::scoo_ttm(Exec{1}, yd, mode, ud.cref(), want);
  kernels::reference::scoo_ttm(Exec{1}, ya, mode, ua.cref(), scale);
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CUDA;
  SPT_DISPATCH(ctx, scoo_ttm, y, mode, u.cref(), got);
  ::testing::AssertionResult r = same_scoo<T>(cpu, got, want, scale, tol<T>());
  if (result) *result = std::move(got);
  return r;
}

TYPED_TEST(CudaTtm, SemiSparseTtmMatchesReference) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  for (const RandomTensorSpec& spec : orders_3_to_6()) {
    if (spec.dims.size() > 5) continue;
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    const uint32_t order = x.order();
    for (uint32_t first = 0; first < order; ++first) {
      for (spt_nnz rank : {spt_nnz(1), spt_nnz(7), spt_nnz(16), spt_nnz(33)}) {
        spt_scoo_s y;
        kernels::cpu::ttm(Exec{2}, x, first, random_matrix<T>(x.dims[first], rank, 1 + first).cref(), y);
        for (uint32_t second = 0; second < order; ++second) {
          if (second == first) continue;
          const std::string label = cat("order ", order, " modes ", first, ",", second, " rank ", rank);
          const DenseMatrix<T> u2 = random_matrix<T>(x.dims[second], rank, 50 + second);
          spt_scoo_s z;
          // Fibers grouped for `second` only when it is the last of the fiber order.
          ASSERT_TRUE(check_scoo_ttm<T>(y, second, u2, &z)) << label;
          spt_scoo_s unknown = y;  // no recorded fiber order: the permutation path
          unknown.fiber_order.clear();
          ASSERT_TRUE(check_scoo_ttm<T>(unknown, second, u2)) << label << " (unknown fiber order)";
          // Two dense modes in, three out (blocks with both A and B > 1 when
          // the third mode lies between them).
          if (rank <= 16 && order >= 4) {
            for (uint32_t third = 0; third < order; ++third) {
              if (third == first || third == second) continue;
              const DenseMatrix<T> u3 = random_matrix<T>(x.dims[third], rank == 1 ? 3 : rank, 70 + third);
              ASSERT_TRUE(check_scoo_ttm<T>(z, third, u3)) << label << ",third " << third;
            }
          }
        }
      }
    }
  }
}

/* -------------------- GPU: API, AUTO rules, failures --------------------- */

// spt_ttm, spt_scoo_ttm and spt_ttm_chain with backend CUDA give the CPU's
// result (structure exactly, values up to rounding).
TYPED_TEST(CudaTtm, ApiWithBackendCudaEqualsCpu) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  RandomTensorSpec spec;
  spec.dims = {50, 40, 30, 20};
  spec.nnz = 20000;
  const spt_coo_s x = random_coo(dtype_of<T>(), spec);
  const spt_nnz rank = 12;
  auto factors = random_factors<T>(x.dims, rank, 21);
  std::vector<spt_matrix*> us;
  spt_context *gpu = nullptr, *cpu = nullptr;
  ASSERT_EQ(spt_context_create(&gpu), SPT_OK);
  ASSERT_EQ(spt_context_create(&cpu), SPT_OK);
  ASSERT_EQ(spt_context_set_backend(gpu, SPT_BACKEND_CUDA), SPT_OK);
  ASSERT_EQ(spt_context_set_backend(cpu, SPT_BACKEND_CPU), SPT_OK);
  for (auto& f : factors) {
    spt_matrix* m = nullptr;
    ASSERT_EQ(spt_matrix_wrap(gpu, dtype_of<T>(), f.rows, f.cols, SPT_ROW_MAJOR, f.values.data(), f.cols, &m), SPT_OK);
    us.push_back(m);
  }
  auto expect_same = [&](const spt_scoo* a, const spt_scoo* b, const std::string& what) {
    const spt_scoo_s want_d = scoo_as_double(*b, false), scale = scoo_as_double(*b, true);
    spt_scoo_s abs_scale = scale;  // |CPU result| as the scale: a loose but non-trivial bound for the check
    EXPECT_TRUE(same_scoo<T>(*b, *a, want_d, abs_scale, sizeof(T) == 4 ? 1e-4 : 1e-10)) << what;
  };
  for (uint32_t mode = 0; mode < x.order(); ++mode) {
    spt_scoo *a = nullptr, *b = nullptr;
    ASSERT_EQ(spt_ttm(gpu, &x, mode, us[mode], &a), SPT_OK) << spt_last_error(gpu);
    ASSERT_EQ(spt_ttm(cpu, &x, mode, us[mode], &b), SPT_OK) << spt_last_error(cpu);
    expect_same(a, b, cat("spt_ttm mode ", mode));
    const uint32_t next = (mode + 1) % x.order();
    spt_scoo *c = nullptr, *d = nullptr;
    ASSERT_EQ(spt_scoo_ttm(gpu, a, next, us[next], &c), SPT_OK) << spt_last_error(gpu);
    ASSERT_EQ(spt_scoo_ttm(cpu, b, next, us[next], &d), SPT_OK) << spt_last_error(cpu);
    expect_same(c, d, cat("spt_scoo_ttm modes ", mode, ",", next));
    for (spt_scoo* h : {a, b, c, d}) spt_scoo_free(h);
  }
  const uint32_t chain[] = {2, 0, 3};
  const spt_matrix* chain_us[] = {us[2], us[0], us[3]};
  spt_scoo *a = nullptr, *b = nullptr;
  ASSERT_EQ(spt_ttm_chain(gpu, &x, 3, chain, chain_us, &a), SPT_OK) << spt_last_error(gpu);
  ASSERT_EQ(spt_ttm_chain(cpu, &x, 3, chain, chain_us, &b), SPT_OK) << spt_last_error(cpu);
  expect_same(a, b, "spt_ttm_chain");
  spt_scoo_free(a);
  spt_scoo_free(b);
  for (spt_matrix* m : us) spt_matrix_free(m);
  spt_context_free(gpu);
  spt_context_free(cpu);
}

// AUTO keeps problems below 2^16 multiply-adds on the CPU (a verbose note);
// CUDA forced runs them on the device.
TEST(CudaTtmApi, SmallProblemsStayOnTheCpuUnderAuto) {
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {20, 15, 10};
  spec.nnz = 500;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const DenseMatrix<double> u = random_matrix<double>(x.dims[1], 8, 2);  // 4000 multiply-adds
  std::vector<std::string> log;
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_AUTO;
  ctx.verbosity = 2;
  ctx.log = record_log_line;
  ctx.log_data = &log;
  spt_scoo_s got;
  SPT_DISPATCH(ctx, ttm, x, 1, u.cref(), got);
  EXPECT_TRUE(logged(log, "note: SpTTM runs on the CPU: a small problem")) << "AUTO should keep it on the CPU";
  EXPECT_EQ(logged_variant(log), -1);
  const TtmOracle o = ttm_oracle(x, 1, u);
  EXPECT_TRUE(same_scoo<double>(o.cpu, got, o.want, o.scale, 1e-12));
  log.clear();
  ctx.backend = SPT_BACKEND_CUDA;
  spt_scoo_s forced;
  SPT_DISPATCH(ctx, ttm, x, 1, u.cref(), forced);
  EXPECT_GE(logged_variant(log), 1) << "CUDA forced should run the device kernel";
  EXPECT_TRUE(same_scoo<double>(o.cpu, forced, o.want, o.scale, 1e-12));
}

// SPT_CUDA_MEMORY_LIMIT makes the operands not fit: AUTO runs the CPU
// kernel with a note, CUDA forced is a DEVICE error naming the memory; a
// variant the plugin does not know likewise falls back / fails naming it.
TEST(CudaTtmApi, OutOfMemoryAndUnknownVariantFallBackUnderAutoAndFailUnderCuda) {
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {40, 30, 20};
  spec.nnz = 8000;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const DenseMatrix<double> u = random_matrix<double>(x.dims[0], 16, 4);
  const TtmOracle o = ttm_oracle(x, 0, u);
  for (int which = 0; which < 2; ++which) {
    ScopedEnv limit("SPT_CUDA_MEMORY_LIMIT", which == 0 ? "1000" : nullptr);
    const std::string expected = which == 0 ? "the CUDA device is out of memory" : "unknown SpTTM variant 99";
    std::vector<std::string> log;
    spt_context_s ctx;
    ctx.gpu_ttm_variant = which == 1 ? 99 : SPT_PLUGIN_TTM_AUTO;
    ctx.backend = SPT_BACKEND_AUTO;
    ctx.verbosity = 1;
    ctx.log = record_log_line;
    ctx.log_data = &log;
    spt_scoo_s got;
    SPT_DISPATCH(ctx, ttm, x, 0, u.cref(), got);
    EXPECT_TRUE(same_scoo<double>(o.cpu, got, o.want, o.scale, 1e-12));
    EXPECT_TRUE(logged(log, "note: SpTTM runs on the CPU")) << expected;
    EXPECT_TRUE(logged(log, expected)) << expected;
    ctx.backend = SPT_BACKEND_CUDA;
    try {
      spt_scoo_s forced;
      SPT_DISPATCH(ctx, ttm, x, 0, u.cref(), forced);
      ADD_FAILURE() << "SpTTM with CUDA forced should fail: " << expected;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), SPT_ERR_DEVICE) << e.what();
      EXPECT_NE(std::string(e.what()).find(which == 0 ? "out of memory" : "unknown SpTTM variant"), std::string::npos)
          << e.what();
    }
  }
}

// CPU-only machines (CI): CUDA forced is a DEVICE error (dispatcher and
// public API, SpTTM and SsTTM); AUTO runs on the CPU.
TEST(CudaTtmApi, WithoutDeviceForcedFailsAndAutoRunsOnCpu) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present; this checks the CPU-only behaviour";
  RandomTensorSpec spec;
  spec.dims = {30, 20, 10};
  spec.nnz = 3000;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const DenseMatrix<double> u0 = random_matrix<double>(x.dims[0], 16, 1);
  const DenseMatrix<double> u2 = random_matrix<double>(x.dims[2], 16, 2);
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CUDA;
  spt_scoo_s y;
  try {
    SPT_DISPATCH(ctx, ttm, x, 0, u0.cref(), y);
    FAIL() << "SpTTM with CUDA forced and no device should fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_DEVICE) << e.what();
  }
  ctx.backend = SPT_BACKEND_AUTO;
  SPT_DISPATCH(ctx, ttm, x, 0, u0.cref(), y);
  const TtmOracle o = ttm_oracle(x, 0, u0);
  EXPECT_TRUE(same_scoo<double>(o.cpu, y, o.want, o.scale, 1e-12));
  ctx.backend = SPT_BACKEND_CUDA;
  try {
    spt_scoo_s z;
    SPT_DISPATCH(ctx, scoo_ttm, y, 2, u2.cref(), z);
    FAIL() << "SsTTM with CUDA forced and no device should fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_DEVICE) << e.what();
  }
  ctx.backend = SPT_BACKEND_AUTO;
  spt_scoo_s z, zc;
  SPT_DISPATCH(ctx, scoo_ttm, y, 2, u2.cref(), z);
  kernels::cpu::scoo_ttm(Exec{1}, y, 2, u2.cref(), zc);
  EXPECT_EQ(z.nfibers, zc.nfibers);
  EXPECT_EQ(z.values.get<double>().size(), zc.values.get<double>().size());
  for (size_t i = 0; i < zc.values.get<double>().size(); ++i)
    ASSERT_TRUE(close(z.values.get<double>()[i], zc.values.get<double>()[i], 1e-12)) << i;

  // The public API: backend CUDA is refused up front (SPT_ERR_DEVICE);
  // spt_ttm under AUTO runs on the CPU.
  spt_context* c = nullptr;
  ASSERT_EQ(spt_context_create(&c), SPT_OK);
  EXPECT_EQ(spt_context_set_backend(c, SPT_BACKEND_CUDA), SPT_ERR_DEVICE);
  spt_matrix* um = nullptr;
  ASSERT_EQ(spt_matrix_wrap(c, SPT_FLOAT64, u0.rows, u0.cols, SPT_ROW_MAJOR, const_cast<double*>(u0.values.data()),
                            u0.cols, &um),
            SPT_OK);
  spt_scoo* out = nullptr;
  EXPECT_EQ(spt_ttm(c, &x, 0, um, &out), SPT_OK) << spt_last_error(c);
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(same_scoo<double>(o.cpu, *out, o.want, o.scale, 1e-12));
  spt_scoo_free(out);
  spt_matrix_free(um);
  spt_context_free(c);
}

}  // namespace
}  // namespace spt::test
