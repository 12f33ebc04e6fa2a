// CP-ALS on several GPUs of one host (src/dispatch/multi_device.hpp,
// cuda/plugin_multi.cu). Any machine: the device-list option's argument
// checks. With two or more GPUs (and NCCL; the test skips with the reason
// without it): CP-ALS on two devices (three and four where there are)
// against the same run on one device, from the same initial factors, per
// sweep fit and the final model, with and without a mode whose rows follow
// the nonzeros; a
// device list of one device runs the single-GPU path; NCCL missing
// (spt_context_set_nccl_library naming a missing file) runs the single-GPU
// path with a note.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/cuda_test_util.hpp"
#include "common/test_util.hpp"
#include "core/context.hpp"
#include "core/ktensor.hpp"
#include "dispatch/multi_device.hpp"
#include "dispatch/plugin_loader.hpp"

namespace spt::test {
namespace {

int device_count() { return have_device() ? static_cast<int>(dispatch::cuda_plugin().devices.size()) : 0; }

// The NCCL file the multi-GPU runs here load: $SPT_TEST_NCCL_LIBRARY (a
// test-only variable, e.g. the nvidia-nccl Python package's copy on a GPU
// machine whose Python environment is not active), else "" (the library's
// default search).
const char* test_nccl_library() {
  const char* path = std::getenv("SPT_TEST_NCCL_LIBRARY");
  return path ? path : "";
}

bool nccl_available(std::string& why) {
  char buffer[1024] = {0};
  const int status =
      dispatch::cuda_plugin().table->collectives_available(test_nccl_library(), buffer, sizeof buffer);
  why = buffer;
  return status == SPT_OK;
}

#define SKIP_WITHOUT_TWO_DEVICES()                                                                  \
  do {                                                                                              \
    if (device_count() < 2) GTEST_SKIP() << "fewer than 2 usable CUDA devices (" << device_count() << ")"; \
  } while (0)

/* --------------------------- any machine --------------------------------- */

TEST(MultiDeviceOption, ArgumentChecks) {
  EXPECT_EQ(spt_context_set_devices(nullptr, nullptr, 0), SPT_ERR_INVALID_ARGUMENT);
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  EXPECT_EQ(spt_context_set_devices(ctx, nullptr, -1), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_context_set_devices(ctx, nullptr, SPT_MAX_DEVICES + 1), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_context_set_devices(ctx, nullptr, 2), SPT_ERR_INVALID_ARGUMENT);
  const int negative[] = {0, -1};
  EXPECT_EQ(spt_context_set_devices(ctx, negative, 2), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("ids[1]"), std::string::npos) << spt_last_error(ctx);
  const int repeated[] = {0, 0};
  EXPECT_EQ(spt_context_set_devices(ctx, repeated, 2), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("twice"), std::string::npos) << spt_last_error(ctx);
  // Nothing changed by the refused calls; count 0 restores the default.
  EXPECT_TRUE(resolve(ctx).devices.empty());
  EXPECT_EQ(spt_context_set_devices(ctx, nullptr, 0), SPT_OK);
  EXPECT_TRUE(resolve(ctx).devices.empty());
  const int first[] = {0};
  const int beyond[] = {device_count()};  // one past the last device
  EXPECT_EQ(spt_context_set_devices(ctx, beyond, 1), SPT_ERR_DEVICE);
  EXPECT_TRUE(resolve(ctx).devices.empty());
  if (have_device()) {
    EXPECT_EQ(spt_context_set_devices(ctx, first, 1), SPT_OK) << spt_last_error(ctx);
    EXPECT_EQ(resolve(ctx).devices, std::vector<int>{0});
    EXPECT_EQ(resolve(ctx).device, 0);
    EXPECT_EQ(spt_context_set_devices(ctx, nullptr, 0), SPT_OK);
    // The default list is every device.
    EXPECT_EQ(dispatch::context_devices(resolve(ctx), dispatch::cuda_plugin()).size(), size_t(device_count()));
    // One device chosen with spt_context_set_device limits runs to it.
    EXPECT_EQ(spt_context_set_device(ctx, 0), SPT_OK);
    EXPECT_EQ(resolve(ctx).devices, std::vector<int>{0});
  } else {
    EXPECT_EQ(spt_context_set_devices(ctx, first, 1), SPT_ERR_DEVICE);
  }
  if (device_count() >= 2) {
    const int two[] = {1, 0};
    EXPECT_EQ(spt_context_set_devices(ctx, two, 2), SPT_OK) << spt_last_error(ctx);
    EXPECT_EQ(resolve(ctx).device, 1);  // the lead
    EXPECT_EQ(resolve(ctx).devices, (std::vector<int>{1, 0}));
  }
  spt_context_free(ctx);
}

// New contexts take every device whatever the environment: the device
// list is an option (spt_context_set_devices), not a variable; CUDA's own
// CUDA_VISIBLE_DEVICES hides devices from the whole process.
TEST(MultiDeviceOption, NotReadFromTheEnvironment) {
  ScopedEnv env("SPT_DEVICES", "0,x");
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK) << spt_thread_last_error();
  EXPECT_TRUE(resolve(ctx).devices.empty());
  spt_context_free(ctx);
}

constexpr const char* kMissingNccl = "/nonexistent/libnccl-for-a-test.so.2";

// spt_context_set_nccl_library, on any machine: the path is copied, NULL
// or "" restores the default search, a path longer than the maximum is
// refused and leaves the context unchanged.
TEST(MultiDeviceOption, NcclLibraryOptionArgumentChecks) {
  EXPECT_EQ(spt_context_set_nccl_library(nullptr, kMissingNccl), SPT_ERR_INVALID_ARGUMENT);
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK) << spt_thread_last_error();
  EXPECT_EQ(resolve(ctx).nccl_library, "");
  std::string path = kMissingNccl;
  EXPECT_EQ(spt_context_set_nccl_library(ctx, path.c_str()), SPT_OK) << spt_last_error(ctx);
  path[0] = 'x';
  EXPECT_EQ(resolve(ctx).nccl_library, kMissingNccl);
  const std::string too_long(SPT_MAX_NCCL_LIBRARY_PATH + 1, 'a');
  EXPECT_EQ(spt_context_set_nccl_library(ctx, too_long.c_str()), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(resolve(ctx).nccl_library, kMissingNccl);
  EXPECT_EQ(spt_context_set_nccl_library(ctx, nullptr), SPT_OK);
  EXPECT_EQ(resolve(ctx).nccl_library, "");
  spt_context_free(ctx);
}

// The NCCL loader, wherever the plugin loads (no device needed): a missing
// library is UNSUPPORTED with its name and the way out in the message.
TEST(MultiDeviceOption, MissingNcclIsUnsupportedWithTheReason) {
  const spt_plugin_table* table = dispatch::cuda_plugin().table;
  if (!table) GTEST_SKIP() << "the CUDA plugin did not load: " << dispatch::cuda_plugin().reason;
  char buffer[1024] = {0};
  EXPECT_EQ(table->collectives_available(kMissingNccl, buffer, sizeof buffer), SPT_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(buffer).find("libnccl-for-a-test.so.2"), std::string::npos) << buffer;
  EXPECT_NE(std::string(buffer).find("spt_context_set_nccl_library"), std::string::npos) << buffer;
  // A group cannot be made without NCCL either (and takes no sessions here).
  spt_plugin_cp_group* group = nullptr;
  EXPECT_EQ(table->cp_group_create(nullptr, 2, kMissingNccl, -1, nullptr, &group, buffer, sizeof buffer),
            SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(group, nullptr);
  table->cp_group_release(nullptr);  // ignored
}

/* ------------------------- two or more GPUs ------------------------------ */

// CP-ALS through the C API with the CUDA backend on `devices`, from `init`.
template <typename T>
CpdRun run_cpd(const std::vector<int>& devices, const spt_coo_s& x, const std::vector<DenseMatrix<T>>& init,
               spt_index rank, int iters, const char* nccl_library = nullptr) {
  CpdRun run;
  const ContextPtr ctx = logging_context(SPT_BACKEND_CUDA, 2, &run.log);
  EXPECT_EQ(spt_context_set_devices(ctx.get(), devices.data(), static_cast<int>(devices.size())), SPT_OK)
      << spt_last_error(ctx.get());
  EXPECT_EQ(spt_context_set_nccl_library(ctx.get(), nccl_library ? nccl_library : test_nccl_library()), SPT_OK)
      << spt_last_error(ctx.get());
  run_cpd_als(run, ctx.get(), x, init, rank, iters, 0.0);
  return run;
}

// Per-sweep fit tolerance between a run on several devices and
// on one. float64: the runs differ only in the order the MTTKRP's terms are
// added (each device sums its range, NCCL adds the ranges; one device adds
// in the order of its atomics), a few units of 1e-16 per entry, which the
// fit sees at second order (absolute for the fits below 1 of random
// tensors, relative above). float32: the same in float32 rounding (about
// 6e-8 per entry), which the fit sees through the MTTKRP's inner product;
// 1e-6 is the bar for one against four GPUs.
template <typename T>
constexpr double fit_tolerance() {
  return sizeof(T) == 4 ? 1e-6 : 1e-12;
}
// The factors (after normalisation) see the rounding above at first
// order, times the conditioning of the normal equations over a few sweeps
// (well-conditioned signed initial factors keep it small); relative to the
// factor's largest entry. A range lost or counted twice changes them at
// order 1.
template <typename T>
constexpr double factor_tolerance() {
  return sizeof(T) == 4 ? 1e-2 : 1e-10;
}

template <typename T>
void expect_same(const CpdRun& multi, const CpdRun& one, const std::string& what) {
  ASSERT_NO_FATAL_FAILURE(expect_same_fits(multi, one, fit_tolerance<T>(), 1.0, what + " (several GPUs against one)"));
  const spt_ktensor_s& a = *multi.k;
  const spt_ktensor_s& b = *one.k;
  for (spt_index r = 0; r < a.rank; ++r) {
    const double la = static_cast<double>(a.lambda.ptr<T>()[r]), lb = static_cast<double>(b.lambda.ptr<T>()[r]);
    EXPECT_LE(std::abs(la - lb), factor_tolerance<T>() * std::max(1.0, std::abs(lb))) << what << " lambda " << r;
  }
  for (uint32_t m = 0; m < a.order(); ++m) {
    const T* fa = a.factors[m]->ptr<T>();
    const T* fb = b.factors[m]->ptr<T>();
    double worst = 0.0, scale = 0.0;
    for (size_t e = 0; e < size_t(a.dims[m]) * a.rank; ++e) {
      worst = std::max(worst, std::abs(static_cast<double>(fa[e]) - static_cast<double>(fb[e])));
      scale = std::max(scale, std::abs(static_cast<double>(fb[e])));
    }
    EXPECT_LE(worst, factor_tolerance<T>() * std::max(scale, 1e-300)) << what << " factor " << m;
  }
}

template <typename T>
class MultiDeviceCpAls : public ::testing::Test {};
using MultiDeviceTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(MultiDeviceCpAls, MultiDeviceTypes);

TYPED_TEST(MultiDeviceCpAls, TwoDevicesMatchOne) {
  SKIP_WITHOUT_TWO_DEVICES();
  std::string why;
  if (!nccl_available(why)) GTEST_SKIP() << "NCCL is not available: " << why;
  using T = TypeParam;
  std::vector<RandomTensorSpec> specs(4);
  specs[0].dims = {300, 200, 150};  // modes on COO
  specs[0].nnz = 40000;
  specs[0].seed = 21;
  specs[1].dims = {8, 300, 400};  // mode 0 heavy: F-COO under AUTO
  specs[1].nnz = 64000;
  specs[1].seed = 22;
  specs[1].skewed = false;
  specs[2].dims = {40, 30, 20, 10};
  specs[2].nnz = 30000;
  specs[2].seed = 23;
  // Fewer rows in mode 0 than devices from three on: a device owns no row
  // of it.
  specs[3].dims = {2, 50, 60};
  specs[3].nnz = 3000;
  specs[3].seed = 24;
  for (const RandomTensorSpec& spec : specs) {
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    for (spt_index rank : {1u, 8u, 32u}) {
      const auto init = random_factors<T>(x.dims, rank, 300 + rank);
      const std::string what = cat("order ", x.order(), " dims[0] ", x.dims[0], " rank ", rank);
      const CpdRun one = run_cpd<T>({0}, x, init, rank, 6);
      const CpdRun two = run_cpd<T>({0, 1}, x, init, rank, 6);
      EXPECT_TRUE(two.said("CP-ALS on 2 GPUs (devices 0, 1")) << what;
      EXPECT_TRUE(two.said("seconds in MTTKRPs / in exchanges per device: device 0 ")) << what;
      EXPECT_FALSE(one.said("GPUs (devices")) << what;
      expect_same<T>(two, one, what);
      if (device_count() >= 3) {
        const CpdRun three = run_cpd<T>({2, 0, 1}, x, init, rank, 6);
        EXPECT_TRUE(three.said("CP-ALS on 3 GPUs (devices 2, 0, 1")) << what;
        expect_same<T>(three, one, what + ", 3 devices");
      }
      if (device_count() >= 4) {
        const CpdRun four = run_cpd<T>({0, 1, 2, 3}, x, init, rank, 6);
        EXPECT_TRUE(four.said("CP-ALS on 4 GPUs (devices 0, 1, 2, 3")) << what;
        expect_same<T>(four, one, what + ", 4 devices");
      }
    }
  }
}

// x's nonzeros in a new tensor, ordered by their mode-0 index (stable);
// sorted_by is left empty, so the split finds the order itself.
template <typename T>
spt_coo_s sorted_by_mode0(const spt_coo_s& x) {
  std::vector<spt_nnz> order(x.nnz);
  for (spt_nnz k = 0; k < x.nnz; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](spt_nnz a, spt_nnz b) { return x.ind[0][a] < x.ind[0][b]; });
  spt_coo_s out;
  out.init_owned(x.dtype(), x.dims, x.nnz);
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    for (uint32_t m = 0; m < x.order(); ++m) out.mutable_ind(m)[k] = x.ind[m][order[k]];
    out.template mutable_values<T>()[k] = x.template values<T>()[order[k]];
  }
  return out;
}

// Nonzeros in the even rows of the largest mode (0) only: dealt to two
// devices in turn, its rows would leave device 1 without a nonzero, so the
// devices take equal ranges and every mode is exchanged.
template <typename T>
spt_coo_s even_rows_only() {
  const std::vector<spt_index> dims{30, 25, 20};
  const spt_nnz nnz = 3000;
  spt_coo_s x;
  x.init_owned(dtype_of<T>(), dims, nnz);
  uint64_t state = 7;
  auto next = [&] { return (state = state * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
  for (spt_nnz k = 0; k < nnz; ++k) {
    x.mutable_ind(0)[k] = static_cast<spt_index>(2 * (next() % 15));
    for (uint32_t m = 1; m < 3; ++m) x.mutable_ind(m)[k] = static_cast<spt_index>(next() % dims[m]);
    x.template mutable_values<T>()[k] = static_cast<T>(0.5 + (next() % 1000) / 1000.0);
  }
  return x;
}

// The rows of the largest mode follow the nonzeros (dealt to the devices
// in turn, whatever order the nonzeros come in), or none when a device
// would get no nonzero; the results equal one device's in each case.
TYPED_TEST(MultiDeviceCpAls, RowSharesFollowTheNonzerosOrAreEqual) {
  SKIP_WITHOUT_TWO_DEVICES();
  std::string why;
  if (!nccl_available(why)) GTEST_SKIP() << "NCCL is not available: " << why;
  using T = TypeParam;
  RandomTensorSpec spec;
  spec.dims = {60, 300, 200};
  spec.nnz = 40000;
  spec.seed = 31;
  spec.duplicates = true;
  const spt_coo_s unsorted = random_coo(dtype_of<T>(), spec);
  const spt_coo_s sorted = sorted_by_mode0<T>(unsorted);
  const spt_coo_s even = even_rows_only<T>();
  struct Case {
    const spt_coo_s* x;
    const char* name;
    const char* said;  // nullptr: no local mode
  };
  for (const Case& c : {Case{&unsorted, "unsorted", "mode 1's rows split with the nonzeros"},
                        Case{&sorted, "sorted by mode 0", "mode 1's rows split with the nonzeros"},
                        Case{&even, "nonzeros in even rows only", nullptr}}) {
    const spt_index rank = 8;
    const auto init = random_factors<T>(c.x->dims, rank, 77);
    const CpdRun one = run_cpd<T>({0}, *c.x, init, rank, 6);
    const CpdRun two = run_cpd<T>({0, 1}, *c.x, init, rank, 6);
    ASSERT_TRUE(two.said("CP-ALS on 2 GPUs (devices 0, 1")) << c.name;
    if (c.said)
      EXPECT_TRUE(two.said(c.said)) << c.name;
    else
      EXPECT_FALSE(two.said("rows split with the nonzeros")) << c.name;
    expect_same<T>(two, one, c.name);
    if (device_count() >= 3) {
      const CpdRun three = run_cpd<T>({0, 1, 2}, *c.x, init, rank, 6);
      expect_same<T>(three, one, std::string(c.name) + ", 3 devices");
    }
  }
}

TEST(MultiDeviceCpAlsPaths, OneDeviceListRunsTheSingleGpuPath) {
  SKIP_WITHOUT_DEVICE();
  const int device = device_count() - 1;
  spt_coo_s x = random_coo(SPT_FLOAT64, RandomTensorSpec{{100, 80, 60}, 20000, 31});
  const auto init = random_factors<double>(x.dims, 8, 5);
  const CpdRun run = run_cpd<double>({device}, x, init, 8, 3);
  ASSERT_GE(run.status, 0) << run.error;
  EXPECT_FALSE(run.said("GPUs (devices"));
  EXPECT_FALSE(run.said("devices")) << "the steps' name says how many devices ran";
  EXPECT_TRUE(run.said("coo, cuda")) << "the run was on the GPU";
}

TEST(MultiDeviceCpAlsPaths, DefaultListLeavesSmallTensorsOnOneDevice) {
  SKIP_WITHOUT_TWO_DEVICES();
  spt_coo_s x = random_coo(SPT_FLOAT64, RandomTensorSpec{{100, 80, 60}, 20000, 32});
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  std::vector<std::string> log;
  ASSERT_EQ(spt_context_set_backend(ctx, SPT_BACKEND_CUDA), SPT_OK);
  ASSERT_EQ(spt_context_set_verbosity(ctx, 2), SPT_OK);
  ASSERT_EQ(spt_context_set_log(ctx, record_log_line, &log), SPT_OK);
  spt_cpd_options opts;
  ASSERT_EQ(spt_cpd_options_init(&opts), SPT_OK);
  opts.rank = 4;
  opts.max_iters = 2;
  spt_ktensor* k = nullptr;
  ASSERT_GE(spt_cpd_als(ctx, &x, &opts, &k), 0) << spt_last_error(ctx);
  bool too_few = false;
  for (const std::string& line : log) too_few = too_few || line.find("too few to share") != std::string::npos;
  EXPECT_TRUE(too_few);
  spt_ktensor_free(k);
  spt_context_free(ctx);
}

TEST(MultiDeviceCpAlsPaths, MissingNcclRunsOneGpuWithANote) {
  SKIP_WITHOUT_TWO_DEVICES();
  spt_coo_s x = random_coo(SPT_FLOAT64, RandomTensorSpec{{100, 80, 60}, 20000, 33});
  const auto init = random_factors<double>(x.dims, 8, 6);
  const CpdRun without = run_cpd<double>({0, 1}, x, init, 8, 4, kMissingNccl);
  ASSERT_GE(without.status, 0) << without.error;
  EXPECT_TRUE(without.said("note: CP-ALS runs on one GPU (device 0)"));
  EXPECT_TRUE(without.said("libnccl-for-a-test.so.2")) << "the note says which library was missing";
  EXPECT_FALSE(without.said("GPUs (devices"));
  const CpdRun one = run_cpd<double>({0}, x, init, 8, 4);
  expect_same<double>(without, one, "NCCL missing");
}

}  // namespace
}  // namespace spt::test
