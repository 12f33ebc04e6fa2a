// The CUDA backend: plugin discovery and the backend API on any machine
// (a CPU-only machine must see the plugin decline cleanly), and on a machine
// with a GPU the GPU MTTKRP against the reference kernel (float64 oracle) on
// random tensors of orders 2..7 with skewed shapes and heavy slices, ranks
// 1..130 (powers of two and not), every mode, and on the tests/data tensors.
// GPU tests skip with the reason when no device is usable. CP-ALS on the GPU
// against CP-ALS on the CPU from the same initial factors (fit history,
// model, callback, the CUDA/AUTO/out-of-memory behaviour). GPU HiCOO MTTKRP
// against the float64 reference on random tensors of orders 2..8 with
// several block sizes and ranks, on the data tensors, its device-copy cache
// and its CPU fallback. GPU B-CSF / HB-CSF MTTKRP likewise (orders 3..6 and
// pathological shapes, tiny split thresholds, plain B-CSF and HB-CSF).
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "algo/cp_als.hpp"
#include "common/cuda_test_util.hpp"
#include "common/format_invariants.hpp"
#include "common/format_options.hpp"
#include "common/format_references.hpp"
#include "common/test_util.hpp"
#include "core/context.hpp"
#include "core/fcoo.hpp"
#include "core/hbcsf.hpp"
#include "core/hicoo.hpp"
#include "core/sort.hpp"
#include "dispatch/dispatch.hpp"
#include "dispatch/gpu_format.hpp"
#include "dispatch/plugin_loader.hpp"
#include "kernels/kernels.hpp"

namespace spt::test {
namespace {

spt_backend_info backend_info(const spt_context* ctx) {
  spt_backend_info info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(spt_context_backend_info(ctx, &info), SPT_OK) << spt_thread_last_error();
  return info;
}

/* ------------------------- any machine: the plugin ------------------------ */

TEST(CudaPlugin, DiscoveryAndBackendInfo) {
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK) << spt_thread_last_error();
  const spt_backend_info info = backend_info(ctx);
  EXPECT_EQ(info.requested, SPT_BACKEND_AUTO);
  if (plugin_built()) {
#ifdef SPT_CUDA_PLUGIN_FILE
    EXPECT_STREQ(info.plugin_path, SPT_CUDA_PLUGIN_FILE) << info.reason;
#endif
  } else {
    EXPECT_STREQ(info.plugin_path, "");
    // Without the driver the search is not even tried; with it, the search
    // finds no plugin file.
    const char* expected = access("/dev/nvidiactl", F_OK) == 0 ? "no usable CUDA plugin" : "no NVIDIA driver";
    EXPECT_NE(std::string(info.reason).find(expected), std::string::npos) << info.reason;
  }
  if (have_device()) {
    EXPECT_EQ(info.cuda_available, 1);
    EXPECT_EQ(info.backend, SPT_BACKEND_CUDA);
    EXPECT_GE(info.device_count, 1);
    EXPECT_GT(std::strlen(info.device_name), 0u);
    EXPECT_GT(info.device_total_memory, 0u);
    EXPECT_GE(info.compute_capability_major, 3);
    EXPECT_STREQ(info.reason, "");
  } else {
    // AUTO declines quietly to the CPU and says why.
    EXPECT_EQ(info.cuda_available, 0);
    EXPECT_EQ(info.backend, SPT_BACKEND_CPU);
    EXPECT_EQ(info.device_count, 0);
    EXPECT_STREQ(info.device_name, "");
    EXPECT_GT(std::strlen(info.reason), 10u);
    if (plugin_built()) EXPECT_NE(std::string(info.reason).find("no usable device"), std::string::npos) << info.reason;
  }
  std::printf("backend info: backend %d, cuda_available %d, devices %d, device '%s', plugin '%s', reason '%s'\n",
              info.backend, info.cuda_available, info.device_count, info.device_name, info.plugin_path, info.reason);
  spt_context_free(ctx);
}

// Run by the ctest test cuda_plugin_not_loaded_without_driver with
// SPT_PLUGIN_PATH empty (the library's own search): on a machine whose
// NVIDIA driver is missing (no /dev/nvidiactl), the plugin (and with it the
// CUDA libraries) is not loaded at all, and the reason says so.
TEST(CudaPlugin, NotLoadedWithoutADriverDevice) {
  if (!std::getenv("SPT_EXPECT_NO_DRIVER_LOAD"))
    GTEST_SKIP() << "runs under ctest (cuda_plugin_not_loaded_without_driver)";
  if (access("/dev/nvidiactl", F_OK) == 0)
    GTEST_SKIP() << "an NVIDIA driver is present; this checks a machine without one";
  const spt_backend_info info = backend_info(nullptr);
  EXPECT_EQ(info.cuda_available, 0);
  EXPECT_EQ(info.backend, SPT_BACKEND_CPU);
  EXPECT_STREQ(info.plugin_path, "");
  const std::string reason = info.reason;
  EXPECT_NE(reason.find("the CUDA plugin was not loaded: no usable device"), std::string::npos) << reason;
  std::ifstream maps("/proc/self/maps");
  const std::string mapped((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  EXPECT_EQ(mapped.find("libsptensor_cuda"), std::string::npos) << "the plugin is mapped";
  EXPECT_EQ(mapped.find("libcublas"), std::string::npos) << "cuBLAS is mapped";
}

// Run by the ctest test cuda_plugin_version_mismatch with SPT_PLUGIN_PATH at
// a plugin that reports interface version 999 (tests/cuda/fake_plugin.c).
TEST(CudaPlugin, VersionMismatchRefused) {
  if (!std::getenv("SPT_EXPECT_PLUGIN_REFUSED"))
    GTEST_SKIP() << "runs under ctest (cuda_plugin_version_mismatch) with the fake plugin";
  const spt_backend_info info = backend_info(nullptr);
  EXPECT_EQ(info.cuda_available, 0);
  EXPECT_EQ(info.backend, SPT_BACKEND_CPU);
  EXPECT_STREQ(info.plugin_path, "");
  const std::string reason = info.reason;
  EXPECT_NE(reason.find("plugin interface version 999"), std::string::npos) << reason;
  EXPECT_NE(reason.find(std::string("needs version ") + std::to_string(SPT_PLUGIN_ABI_VERSION)), std::string::npos)
      << reason;
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  EXPECT_EQ(spt_context_set_backend(ctx, SPT_BACKEND_CUDA), SPT_ERR_DEVICE);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("interface version 999"), std::string::npos) << spt_last_error(ctx);
  spt_context_free(ctx);
}

// A table of "not compiled" stubs, stamped from the entry lists as a
// plugin without a family would stamp that family.
namespace stub_plugin {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
SPT_PLUGIN_FAMILIES(SPT_PLUGIN_STUB_FAMILY)
#pragma GCC diagnostic pop
const spt_plugin_table table = {SPT_PLUGIN_ABI_VERSION, sizeof(spt_plugin_table), "stubs",
                                SPT_PLUGIN_FAMILIES(SPT_PLUGIN_STUB_FILL_FAMILY)};
}  // namespace stub_plugin

// The table's documented layout (plugin_abi.h): abi_version, struct_size,
// description, then one function pointer per entry of the lists, in list
// order, and nothing else.
TEST(CudaPlugin, TableLayoutFollowsTheEntryLists) {
  std::vector<std::string> names;
  std::vector<size_t> offsets;
#define SPT_TEST_ENTRY(name, params)  \
  names.push_back(#name);             \
  offsets.push_back(offsetof(spt_plugin_table, name));
#define SPT_TEST_FAMILY(family) SPT_PLUGIN_##family##_ENTRIES(SPT_TEST_ENTRY, SPT_TEST_ENTRY)
  SPT_PLUGIN_FAMILIES(SPT_TEST_FAMILY)
#undef SPT_TEST_FAMILY
#undef SPT_TEST_ENTRY
  const size_t header = offsetof(spt_plugin_table, description) + sizeof(const char*);
  EXPECT_EQ(offsetof(spt_plugin_table, abi_version), 0u);
  EXPECT_EQ(offsetof(spt_plugin_table, struct_size), sizeof(uint32_t));
  using Entry = int (*)();
  ASSERT_EQ(names.size(), 72u);
  for (size_t i = 0; i < offsets.size(); ++i) EXPECT_EQ(offsets[i], header + i * sizeof(Entry)) << names[i];
  EXPECT_EQ(sizeof(spt_plugin_table), header + names.size() * sizeof(Entry));
  EXPECT_EQ(names.front(), "device_count");
  EXPECT_EQ(names[2], "coo_upload");
  EXPECT_EQ(names.back(), "cp_group_times");
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
}

// The stubs answer UNSUPPORTED and name the entry (truncated to the
// buffer, always terminated); a release stub ignores its argument.
TEST(CudaPlugin, NotCompiledStubsSayWhich) {
  const spt_plugin_table& t = stub_plugin::table;
  EXPECT_EQ(t.struct_size, sizeof(spt_plugin_table));
  char message[128] = {0};
  int count = 7;
  EXPECT_EQ(t.device_count(&count, message, sizeof message), SPT_ERR_UNSUPPORTED);
  EXPECT_STREQ(message, "device_count is not compiled into this plugin");
  EXPECT_EQ(count, 7);
  EXPECT_EQ(t.mttkrp_hbcsf(nullptr, nullptr, 0, nullptr, message, sizeof message), SPT_ERR_UNSUPPORTED);
  EXPECT_STREQ(message, "mttkrp_hbcsf is not compiled into this plugin");
  char small[8];
  EXPECT_EQ(t.tucker_session_hls(nullptr, 0, nullptr, nullptr, small, sizeof small), SPT_ERR_UNSUPPORTED);
  EXPECT_STREQ(small, "tucker_");
  EXPECT_EQ(t.hls_calibrate(0, 3, 1, 16, 1, nullptr, nullptr, nullptr, 0), SPT_ERR_UNSUPPORTED);
  t.coo_release(nullptr);
}

TEST(CudaPlugin, CpuAndReferenceSayWhyNotCuda) {
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  ASSERT_EQ(spt_context_set_backend(ctx, SPT_BACKEND_CPU), SPT_OK);
  spt_backend_info info = backend_info(ctx);
  EXPECT_EQ(info.backend, SPT_BACKEND_CPU);
  EXPECT_NE(std::string(info.reason).find("backend is CPU"), std::string::npos) << info.reason;
  ASSERT_EQ(spt_context_set_backend(ctx, SPT_BACKEND_REFERENCE), SPT_OK);
  info = backend_info(ctx);
  EXPECT_EQ(info.backend, SPT_BACKEND_REFERENCE);
  spt_context_free(ctx);
}

TEST(CudaPlugin, ForcedCudaWithoutDeviceIsDeviceError) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present; this checks the CPU-only behaviour";
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  EXPECT_EQ(spt_context_set_backend(ctx, SPT_BACKEND_CUDA), SPT_ERR_DEVICE);
  const std::string message = spt_last_error(ctx);
  EXPECT_NE(message.find("CUDA is not usable"), std::string::npos) << message;
  spt_backend backend = SPT_BACKEND_CPU;
  ASSERT_EQ(spt_context_get_backend(ctx, &backend), SPT_OK);
  EXPECT_EQ(backend, SPT_BACKEND_AUTO) << "a refused backend leaves the context unchanged";
  EXPECT_EQ(spt_context_set_device(ctx, 0), SPT_ERR_DEVICE);
  spt_context_free(ctx);
}

TEST(CudaPlugin, EnvBackendCudaWithoutDeviceIsDeviceError) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present; this checks the CPU-only behaviour";
  const char* old = std::getenv("SPT_BACKEND");
  const std::string saved = old ? old : "";
  setenv("SPT_BACKEND", "cuda", 1);
  spt_context* ctx = nullptr;
  EXPECT_EQ(spt_context_create(&ctx), SPT_ERR_DEVICE);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_NE(std::string(spt_thread_last_error()).find("SPT_BACKEND=cuda"), std::string::npos)
      << spt_thread_last_error();
  if (old) setenv("SPT_BACKEND", saved.c_str(), 1);
  else unsetenv("SPT_BACKEND");
}

TEST(CudaPlugin, ArgumentChecks) {
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  EXPECT_EQ(spt_context_set_device(ctx, -1), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_context_set_device(nullptr, 0), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_context_set_device(ctx, 1 << 20), SPT_ERR_DEVICE);
  EXPECT_EQ(spt_context_backend_info(ctx, nullptr), SPT_ERR_INVALID_ARGUMENT);
  spt_backend_info info{};
  info.struct_size = 0;
  EXPECT_EQ(spt_context_backend_info(ctx, &info), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_thread_last_error()).find("struct_size"), std::string::npos);
  // An older, smaller struct is filled up to its size only.
  struct Old {
    size_t struct_size;
    spt_backend requested;
    spt_backend backend;
  };
  unsigned char raw[sizeof(spt_backend_info)];
  std::memset(raw, 0xAB, sizeof raw);
  auto* small = reinterpret_cast<spt_backend_info*>(raw);
  small->struct_size = sizeof(Old);
  EXPECT_EQ(spt_context_backend_info(ctx, small), SPT_OK);
  EXPECT_EQ(small->struct_size, sizeof(Old));
  EXPECT_EQ(small->requested, SPT_BACKEND_AUTO);
  EXPECT_EQ(raw[sizeof(Old)], 0xAB) << "bytes past struct_size must not be written";
  // NULL context: the defaults.
  EXPECT_EQ(backend_info(nullptr).requested, SPT_BACKEND_AUTO);
  spt_context_free(ctx);
}

/* ------------------------- GPU: MTTKRP correctness ------------------------ */

// The oracle: the reference kernel in float64 on the same data. With
// `absolute`, on |values| and |factors|: the sum of the terms' magnitudes,
// which bounds the rounding error of any summation order.
template <typename T>
DenseMatrix<double> reference_mttkrp(const spt_coo_s& x, const std::vector<DenseMatrix<T>>& factors, uint32_t mode,
                                     bool absolute = false) {
  spt_coo_s x64 = copy_coo(x, SPT_FLOAT64);
  if (absolute)
    for (spt_nnz k = 0; k < x64.nnz; ++k) x64.mutable_values<double>()[k] = std::abs(x64.values<double>()[k]);
  const spt_nnz rank = factors[0].cols;
  std::vector<DenseMatrix<double>> f64;
  for (const auto& f : factors) {
    DenseMatrix<double> d(f.rows, f.cols);
    for (size_t i = 0; i < f.values.size(); ++i) d.values[i] = absolute ? std::abs(double(f.values[i])) : f.values[i];
    f64.push_back(std::move(d));
  }
  std::vector<ConstMatRef<double>> refs;
  for (const auto& f : f64) refs.push_back(f.cref());
  DenseMatrix<double> out(x.dims[mode], rank);
  kernels::reference::mttkrp(kernels::Exec{1}, x64, refs.data(), mode, out.ref());
  return out;
}

template <typename T>
constexpr double gpu_tolerance() {
  return sizeof(T) == 4 ? 1e-4 : 1e-10;
}

// |got - want| <= tol * max(1, scale) per entry, scale = the sum of the
// terms' magnitudes (reference_mttkrp with absolute = true).
template <typename T>
void expect_close_to_reference(const DenseMatrix<double>& want, const DenseMatrix<double>& scale,
                               const DenseMatrix<T>& got, const std::string& what) {
  for (spt_nnz i = 0; i < want.rows; ++i)
    for (spt_nnz j = 0; j < want.cols; ++j) {
      const double w = want(i, j), g = got(i, j);
      ASSERT_LE(std::abs(w - g), gpu_tolerance<T>() * std::max(1.0, scale(i, j)))
          << what << " at (" << i << "," << j << "): want " << w << " got " << g << " (sum of magnitudes "
          << scale(i, j) << ")";
    }
}

// Heavy slices and dense blocks (200k nonzeros on 3 x 2000 x 700 x 50) and a
// long, skewed third-order tensor (100k nonzeros, mostly short slices).
std::vector<RandomTensorSpec> heavy_and_skewed_specs() {
  RandomTensorSpec heavy;
  heavy.dims = {3, 2000, 700, 50};
  heavy.nnz = 200000;
  heavy.seed = 5;
  RandomTensorSpec skewed;
  skewed.dims = {20000, 40, 3000};
  skewed.nnz = 100000;
  skewed.seed = 6;
  return {heavy, skewed};
}

// GPU MTTKRP through the dispatcher with CUDA forced, every mode, checked
// against the float64 reference: |gpu - ref| <= tol * max(1, sum of the
// terms' magnitudes) per entry (the summation order differs from the CPU's,
// and real tensors cancel: email-eu-day's counts up to 118 against factors
// in [-1, 1]). Poisons the output first so unwritten rows show.
template <typename T>
void check_all_modes(const spt_coo_s& x, spt_nnz rank, uint64_t seed, const std::string& what) {
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CUDA;
  const auto factors = random_factors<T>(x.dims, rank, seed);
  std::vector<ConstMatRef<T>> refs;
  for (const auto& f : factors) refs.push_back(f.cref());
  for (uint32_t mode = 0; mode < x.order(); ++mode) {
    DenseMatrix<T> out(x.dims[mode], rank);
    for (auto& v : out.values) v = T(12345);
    SPT_DISPATCH(ctx, mttkrp, x, refs.data(), mode, out.ref());
    const DenseMatrix<double> want = reference_mttkrp(x, factors, mode);
    const DenseMatrix<double> scale = reference_mttkrp(x, factors, mode, /*absolute=*/true);
    expect_close_to_reference(want, scale, out, cat(what, " rank ", rank, " mode ", mode));
  }
}

template <typename T>
class CudaMttkrp : public ::testing::Test {};
using ValueTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CudaMttkrp, ValueTypes);

const spt_nnz kRanks[] = {1, 3, 8, 16, 20, 32, 33, 64, 100, 130};

TYPED_TEST(CudaMttkrp, RandomTensorsOrders2To7) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  std::vector<RandomTensorSpec> specs = standard_specs();
  RandomTensorSpec seven;
  seven.dims = {3, 5, 7, 2, 11, 4, 6};  // order 7: the any-order kernel
  seven.nnz = 3000;
  seven.seed = 21;
  specs.push_back(seven);
  for (const RandomTensorSpec& spec : specs) {
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    for (spt_nnz rank : kRanks)
      check_all_modes<T>(x, rank, spec.seed * 7 + rank, cat("order ", x.order(), " nnz ", x.nnz));
  }
}

TYPED_TEST(CudaMttkrp, HeavySlicesAndSortedRuns) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  // Skewed: most nonzeros in a few slices of every mode; 200k nonzeros so
  // several warps share a slice; then sorted by each mode in turn (long
  // output runs: the run accumulation and its flushes at chunk ends).
  RandomTensorSpec spec;
  spec.dims = {3, 2000, 700, 50};
  spec.nnz = 200000;
  spec.seed = 5;
  spt_coo_s x = random_coo(dtype_of<T>(), spec);
  for (spt_nnz rank : {spt_nnz(16), spt_nnz(32), spt_nnz(37)}) check_all_modes<T>(x, rank, 99 + rank, "unsorted");
  for (uint32_t first = 0; first < x.order(); ++first) {
    std::vector<uint32_t> order = sorting::natural_order(x.order());
    std::swap(order[0], order[first]);
    sorting::sort_in_place(kernels::Exec{2}, x, order);
    check_all_modes<T>(x, 32, 7 + first, cat("sorted by mode ", first));
  }
}

const char* const kDataTensors[] = {"nations.tns.xz", "umls.tns.xz", "kinship.tns.xz", "jf17k-4ary.tns.xz",
                                    "ciao-user-item-category-month.tns.xz", "email-eu-day.tns.xz"};

TYPED_TEST(CudaMttkrp, DataTensors) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  int checked = 0;
  for (const char* name : kDataTensors) {
    spt_coo_s x;
    if (!read_data_tensor<T>(name, &x)) continue;
    for (spt_nnz rank : {spt_nnz(16), spt_nnz(32)}) check_all_modes<T>(x, rank, 3 + rank, name);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no data tensors found";
}

// The device copy is cached on the handle and dropped when the tensor
// changes; the C API path with a column-major output.
TEST(CudaMttkrpApi, CacheInvalidationAndColumnMajorOutput) {
  SKIP_WITHOUT_DEVICE();
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  ASSERT_EQ(spt_context_set_backend(ctx, SPT_BACKEND_CUDA), SPT_OK) << spt_last_error(ctx);
  RandomTensorSpec spec;
  spec.dims = {40, 30, 20};
  spec.nnz = 5000;
  spt_coo_s base = random_coo(SPT_FLOAT64, spec);
  spt_coo* x = new spt_coo_s(copy_coo(base, SPT_FLOAT64));
  const spt_nnz rank = 24;
  auto factors = random_factors<double>(x->dims, rank, 77);
  std::vector<spt_matrix*> handles;
  for (auto& f : factors) {
    spt_matrix* m = nullptr;
    ASSERT_EQ(spt_matrix_wrap(ctx, SPT_FLOAT64, f.rows, f.cols, SPT_ROW_MAJOR, f.values.data(), f.cols, &m), SPT_OK)
        << spt_last_error(ctx);
    handles.push_back(m);
  }
  auto run_and_check = [&](const char* what) {
    spt_matrix* out = nullptr;
    ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, x->dims[1], rank, SPT_COL_MAJOR, &out), SPT_OK);
    ASSERT_EQ(spt_mttkrp(ctx, x, handles.data(), 1, out), SPT_OK) << spt_last_error(ctx);
    const DenseMatrix<double> want = reference_mttkrp(*x, factors, 1);
    for (spt_nnz i = 0; i < want.rows; ++i)
      for (spt_nnz j = 0; j < want.cols; ++j)
        ASSERT_TRUE(close(want(i, j), out->at<double>(i, j), 1e-10)) << what << " (" << i << "," << j << ")";
    spt_matrix_free(out);
  };
  run_and_check("first call");
  EXPECT_TRUE(x->device_cache != nullptr) << "the device copy should be cached on the handle";
  const std::shared_ptr<void> cached = x->device_cache;
  run_and_check("second call (cached copy)");
  EXPECT_EQ(x->device_cache, cached) << "the cached copy should be reused";
  // Append nonzeros: the cache must not serve the old tensor.
  std::vector<spt_index> coords = {0, 39, 0, 29, 0, 19};  // mode-major (indices[m*ld + k]), two nonzeros
  const double values[] = {5.0, -3.0};
  ASSERT_EQ(spt_coo_append(ctx, x, 2, coords.data(), 2, 0, values, 0), SPT_OK) << spt_last_error(ctx);
  run_and_check("after append");
  x->touched();
  EXPECT_TRUE(x->device_cache == nullptr);
  for (spt_matrix* m : handles) spt_matrix_free(m);
  spt_coo_free(x);
  spt_context_free(ctx);
}

/* ---------------------------- CP-ALS on the GPU --------------------------- */


// CP-ALS through the C API on a context with `backend` (16 threads for the
// CPU part), from the given initial factors (user init) or random (empty
// init); the callback stops after `stop_after` sweeps when > 0.
template <typename T>
CpdRun run_cpd(spt_backend backend, const spt_coo_s& x, const std::vector<DenseMatrix<T>>& init, spt_index rank,
               int iters, double tol, int stop_after = 0, spt_tensor_format format = SPT_TENSOR_FORMAT_AUTO) {
  CpdRun run;
  const ContextPtr ctx = logging_context(backend, 1, &run.log, 16);
  IterationRecorder<CpdRun> recorder{&run, stop_after};
  run_cpd_als(run, ctx.get(), x, init, rank, iters, tol, [&](spt_cpd_options& opts) {
    opts.seed = 42;
    opts.format = format;
    opts.callback = IterationRecorder<CpdRun>::callback;
    opts.callback_data = &recorder;
  });
  return run;
}

template <typename T>
constexpr double fit_tolerance() {
  return sizeof(T) == 4 ? 1e-4 : 1e-9;  // relative, issue 5
}

// GPU and CPU runs agree: same iteration count and status, every sweep's
// fit within fit_tolerance relative, the callback saw each sweep, and the
// models agree at the tensor's nonzeros (up to 500; permutation-free, so
// near-tied lambdas sorted differently do not matter).
template <typename T>
void expect_same_run(const CpdRun& gpu, const CpdRun& cpu, const spt_coo_s& x, const std::string& what) {
  ASSERT_NO_FATAL_FAILURE(expect_same_fits(gpu, cpu, fit_tolerance<T>(), 0.0, what + " (GPU against CPU)"));
  EXPECT_EQ(gpu.status, cpu.status) << what;
  ASSERT_EQ(gpu.k->iterations, cpu.k->iterations) << what;
  EXPECT_EQ(gpu.k->fit, gpu.k->fit_history.back()) << what;
  // The callback saw every sweep, in order, with the recorded fits.
  ASSERT_EQ(gpu.callback_iterations.size(), gpu.k->fit_history.size()) << what;
  for (size_t i = 0; i < gpu.callback_iterations.size(); ++i) {
    EXPECT_EQ(gpu.callback_iterations[i], int(i) + 1) << what;
    EXPECT_EQ(gpu.callback_fits[i], gpu.k->fit_history[i]) << what;
  }
  // The GPU run said so in the log.
  EXPECT_TRUE(gpu.said("coo, cuda")) << what << ": the GPU run's log does not name cuda";
  expect_same_model_at_nonzeros<T>(*gpu.k, *cpu.k, x, sizeof(T) == 4 ? 1e-2 : 1e-7, what);
}

template <typename T>
class CudaCpAls : public ::testing::Test {};
TYPED_TEST_SUITE(CudaCpAls, ValueTypes);

TYPED_TEST(CudaCpAls, MatchesCpuFromSameInitOrders3To5) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  std::vector<RandomTensorSpec> specs(3);
  specs[0].dims = {60, 45, 30};
  specs[0].nnz = 6000;
  specs[0].seed = 11;
  specs[1].dims = {25, 20, 16, 12};
  specs[1].nnz = 6000;
  specs[1].seed = 12;
  specs[2].dims = {12, 11, 10, 9, 8};
  specs[2].nnz = 6000;
  specs[2].seed = 13;
  for (const RandomTensorSpec& spec : specs) {
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    for (spt_index rank : {1u, 8u, 16u, 33u}) {
      const auto init = positive_init<T>(x.dims, rank, 100 + rank);
      const CpdRun gpu = run_cpd<T>(SPT_BACKEND_CUDA, x, init, rank, 10, 0.0);
      const CpdRun cpu = run_cpd<T>(SPT_BACKEND_CPU, x, init, rank, 10, 0.0);
      expect_same_run<T>(gpu, cpu, x, cat("order ", x.order(), " rank ", rank));
    }
  }
}

TYPED_TEST(CudaCpAls, MatchesCpuOnDataTensor) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  for (const char* name : {"nations.tns.xz", "kinship.tns.xz", "umls.tns.xz"}) {
    spt_coo_s x;
    if (!read_data_tensor<T>(name, &x)) continue;
    const auto init = positive_init<T>(x.dims, 16, 5);
    const CpdRun gpu = run_cpd<T>(SPT_BACKEND_CUDA, x, init, 16, 20, 0.0);
    const CpdRun cpu = run_cpd<T>(SPT_BACKEND_CPU, x, init, 16, 20, 0.0);
    expect_same_run<T>(gpu, cpu, x, name);
    // Random init (seeded) and convergence by tol: same stop, same fit.
    const CpdRun gpu_tol = run_cpd<T>(SPT_BACKEND_CUDA, x, {}, 8, 200, 1e-3);
    const CpdRun cpu_tol = run_cpd<T>(SPT_BACKEND_CPU, x, {}, 8, 200, 1e-3);
    expect_same_run<T>(gpu_tol, cpu_tol, x, cat(name, ", random init, tol 1e-3"));
    return;
  }
  GTEST_SKIP() << "no data tensor found";
}

/* ------------------- the GPU format model (per mode) ---------------------- */

// A tensor whose mode 0 has 8 heavy slices (F-COO territory) and whose
// other modes have light ones (COO): 64,000 nonzeros, 8,000 per mode-0
// slice, about 213 and 160 per slice in modes 1 and 2.
// Uniformly spread nonzeros, no empty slices: the slice counts of the
// format-model tests follow from dims and nnz.
spt_coo_s uniform_tensor(spt_dtype dtype, const std::vector<spt_index>& dims, spt_nnz nnz, uint64_t seed) {
  RandomTensorSpec spec;
  spec.dims = dims;
  spec.nnz = nnz;
  spec.seed = seed;
  spec.skewed = false;
  spec.empty_slices = false;
  spec.single_nonzero_slice = false;
  return random_coo(dtype, spec);
}

spt_coo_s mixed_format_tensor(spt_dtype dtype) { return uniform_tensor(dtype, {8, 300, 400}, 64000, 5); }

// An order-4 tensor whose mode 0 has 8 slices (HB-CSF territory at 128-byte
// rows: order 4, at most 16 slices, 2^17+ nonzeros), mode 1 light slices
// (COO) and modes 2-3 heavy ones over more than 16 slices (F-COO).
spt_coo_s hbcsf_format_tensor(spt_dtype dtype) { return uniform_tensor(dtype, {8, 400, 40, 50}, 140000, 6); }

TEST(GpuFormatModel, RuleSlicesAndOverride) {
  using dispatch::GpuMttkrpChoice;
  using dispatch::GpuMttkrpFormat;
  // The rule: F-COO from kGpuFcooMinNnz nonzeros and kGpuFcooMinMeanSlice per non-empty slice.
  EXPECT_EQ(dispatch::gpu_mttkrp_format(dispatch::kGpuFcooMinNnz - 1, 1, 128, 3), GpuMttkrpFormat::coo);
  EXPECT_EQ(dispatch::gpu_mttkrp_format(1000000, 1250, 128, 3), GpuMttkrpFormat::fcoo);  // 800 per slice
  EXPECT_EQ(dispatch::gpu_mttkrp_format(1000000, 1251, 128, 3), GpuMttkrpFormat::coo);
  EXPECT_EQ(dispatch::gpu_mttkrp_format(1000000, 1250, 64, 3), GpuMttkrpFormat::fcoo);
  EXPECT_EQ(dispatch::gpu_mttkrp_format(1000000, 0, 128, 3), GpuMttkrpFormat::coo);
  // Rows of at most 64 bytes on a large tensor: F-COO from 100 per slice.
  const spt_nnz large = dispatch::kGpuFcooLargeNnz;
  EXPECT_EQ(dispatch::gpu_mttkrp_format(large, large / 100, 64, 3), GpuMttkrpFormat::fcoo);
  EXPECT_EQ(dispatch::gpu_mttkrp_format(large, large / 100 + 1, 64, 3), GpuMttkrpFormat::coo);
  EXPECT_EQ(dispatch::gpu_mttkrp_format(large, large / 100, 128, 3), GpuMttkrpFormat::coo);
  EXPECT_EQ(dispatch::gpu_mttkrp_format(large - 1, (large - 1) / 100, 64, 3), GpuMttkrpFormat::coo);
  // HB-CSF instead of F-COO: order 4+, rows of 128+ bytes, at most 16 slices, 2^17+ nonzeros.
  const spt_nnz deep = dispatch::kGpuHbcsfMinNnz;
  const spt_nnz few = dispatch::kGpuHbcsfMaxSlices;
  EXPECT_EQ(dispatch::gpu_mttkrp_format(deep, few, 128, 4), GpuMttkrpFormat::hbcsf);
  EXPECT_EQ(dispatch::gpu_mttkrp_format(deep, 1, 256, 5), GpuMttkrpFormat::hbcsf);
  EXPECT_EQ(dispatch::gpu_mttkrp_format(deep, few + 1, 128, 4), GpuMttkrpFormat::fcoo);
  EXPECT_EQ(dispatch::gpu_mttkrp_format(deep, few, 128, 3), GpuMttkrpFormat::fcoo);
  EXPECT_EQ(dispatch::gpu_mttkrp_format(deep, few, 64, 4), GpuMttkrpFormat::fcoo);
  EXPECT_EQ(dispatch::gpu_mttkrp_format(deep - 1, few, 128, 4), GpuMttkrpFormat::fcoo);
  // Non-empty slices, against a direct count.
  const spt_coo_s x = mixed_format_tensor(SPT_FLOAT64);
  const std::vector<spt_nnz> slices = spt::distinct_indices_per_mode(x, 3);
  ASSERT_EQ(slices.size(), 3u);
  for (uint32_t m = 0; m < 3; ++m) {
    std::vector<char> seen(x.dims[m], 0);
    for (spt_nnz k = 0; k < x.nnz; ++k) seen[x.ind[m][k]] = 1;
    EXPECT_EQ(slices[m], spt_nnz(std::count(seen.begin(), seen.end(), 1))) << "mode " << m;
  }
  // The choices: the format rule per mode and F-COO's threadlen by the
  // threadlen rule with that mode's slice count (rank 16 float64: 128-byte rows).
  auto with = [&](GpuMttkrpFormat a, GpuMttkrpFormat b, GpuMttkrpFormat c) {
    std::vector<GpuMttkrpChoice> want(3);
    const GpuMttkrpFormat formats[3] = {a, b, c};
    for (uint32_t m = 0; m < 3; ++m) {
      want[m].format = formats[m];
      want[m].fcoo_threadlen = fcoo::suggested_threadlen(x.nnz, 128, 132, slices[m]);
    }
    return want;
  };
  {
    // The environment does not change the choice: the library reads no
    // tuning variable.
    ScopedEnv old_override("SPT_CUDA_MTTKRP_FORMAT", "hbcsf");
    EXPECT_EQ(dispatch::gpu_mttkrp_choices(x, slices, 128, 132),
              with(GpuMttkrpFormat::fcoo, GpuMttkrpFormat::coo, GpuMttkrpFormat::coo));
  }
  // The order-4 tensor of the HB-CSF tests: HB-CSF, COO, F-COO, F-COO.
  {
    const spt_coo_s y = hbcsf_format_tensor(SPT_FLOAT64);
    const std::vector<dispatch::GpuMttkrpChoice> got = dispatch::gpu_mttkrp_choices(y, spt::distinct_indices_per_mode(y, 2), 128, 132);
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(got[0].format, GpuMttkrpFormat::hbcsf);
    EXPECT_EQ(got[1].format, GpuMttkrpFormat::coo);
    EXPECT_EQ(got[2].format, GpuMttkrpFormat::fcoo);
    EXPECT_EQ(got[3].format, GpuMttkrpFormat::fcoo);
  }
}

// spt_mttkrp on the GPU (CUDA forced, float64, rank 16: 128-byte rows) on
// x: every mode equals the reference, and the log gives `choice` (the
// model's per-mode formats); for a `redrawn` tensor it gives no choice (the
// COO kernel runs every mode).
void check_per_mode_formats(const spt_coo_s& tensor, const std::string& choice, bool redrawn = false) {
  std::vector<std::string> log;
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  ASSERT_EQ(spt_context_set_backend(ctx, SPT_BACKEND_CUDA), SPT_OK) << spt_last_error(ctx);
  ASSERT_EQ(spt_context_set_verbosity(ctx, 2), SPT_OK);
  ASSERT_EQ(spt_context_set_log(ctx, record_log_line, &log), SPT_OK);
  spt_coo* x = new spt_coo_s(copy_coo(tensor, SPT_FLOAT64));
  x->redrawn = redrawn;
  const spt_nnz rank = 16;
  auto factors = random_factors<double>(x->dims, rank, 9);
  std::vector<spt_matrix*> handles;
  for (auto& f : factors) {
    spt_matrix* m = nullptr;
    ASSERT_EQ(spt_matrix_wrap(ctx, SPT_FLOAT64, f.rows, f.cols, SPT_ROW_MAJOR, f.values.data(), f.cols, &m), SPT_OK);
    handles.push_back(m);
  }
  for (uint32_t mode = 0; mode < x->order(); ++mode) {
    spt_matrix* out = nullptr;
    ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, x->dims[mode], rank, SPT_ROW_MAJOR, &out), SPT_OK);
    ASSERT_EQ(spt_mttkrp(ctx, x, handles.data(), mode, out), SPT_OK) << spt_last_error(ctx);
    const DenseMatrix<double> want = reference_mttkrp(*x, factors, mode);
    for (spt_nnz i = 0; i < want.rows; ++i)
      for (spt_nnz j = 0; j < want.cols; ++j)
        ASSERT_TRUE(close(want(i, j), out->at<double>(i, j), 1e-10)) << "mode " << mode << " (" << i << "," << j << ")";
    spt_matrix_free(out);
  }
  bool said = false, chose = false;
  for (const std::string& line : log) {
    said = said || line.find(choice) != std::string::npos;
    chose = chose || line.find("GPU MTTKRP format per mode") != std::string::npos;
  }
  if (redrawn) EXPECT_FALSE(chose) << "a redrawn tensor should run the COO kernel without a choice";
  else EXPECT_TRUE(said) << "the log should give the per-mode choice: " << choice;
  for (spt_matrix* m : handles) spt_matrix_free(m);
  spt_coo_free(x);
  spt_context_free(ctx);
}

// Mode 0 on F-COO, the others on COO.
TEST(GpuFormatModel, MttkrpPerModeFormatMatchesReference) {
  SKIP_WITHOUT_DEVICE();
  check_per_mode_formats(mixed_format_tensor(SPT_FLOAT64), "mode 0 F-COO (threadlen 8), mode 1 COO, mode 2 COO");
}

// The same tensor redrawn before every use (as GCP-SGD's samples): every
// mode on the COO kernel, no choice made, the same results.
TEST(GpuFormatModel, RedrawnTensorRunsTheCooKernel) {
  SKIP_WITHOUT_DEVICE();
  check_per_mode_formats(mixed_format_tensor(SPT_FLOAT64), "", true);
  check_per_mode_formats(hbcsf_format_tensor(SPT_FLOAT64), "", true);
}

// Mode 0 on HB-CSF (built by the dispatcher, rooted at mode 0), mode 1 on
// COO, modes 2-3 on F-COO.
TEST(GpuFormatModel, MttkrpOnHbcsfWhereChosenMatchesReference) {
  SKIP_WITHOUT_DEVICE();
  check_per_mode_formats(hbcsf_format_tensor(SPT_FLOAT64),
                         "mode 0 HB-CSF, mode 1 COO, mode 2 F-COO (threadlen 16), mode 3 F-COO (threadlen 16)");
}

// CP-ALS with format AUTO on the GPU: the mixed sweep has no HB-CSF path,
// so mode 0 (HB-CSF for spt_mttkrp) runs on F-COO with modes 2-3; equal to
// the CPU run from the same init.
TYPED_TEST(CudaCpAls, HbcsfModesRunOnFcooInTheSweep) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  const spt_coo_s x = hbcsf_format_tensor(dtype_of<T>());
  const spt_index rank = sizeof(T) == 8 ? 16 : 32;  // 128-byte rows either way
  const auto init = positive_init<T>(x.dims, rank, 22);
  const CpdRun gpu = run_cpd<T>(SPT_BACKEND_CUDA, x, init, rank, 5, 0.0);
  const CpdRun cpu = run_cpd<T>(SPT_BACKEND_CPU, x, init, rank, 5, 0.0);
  expect_same_run<T>(gpu, cpu, x, "HB-CSF modes in the sweep");
  bool said = false;
  for (const std::string& line : gpu.log)
    said = said || line.find("MTTKRP on F-COO in modes 0, 2, 3, COO in the others") != std::string::npos;
  EXPECT_TRUE(said) << "the GPU run should say that modes 0, 2 and 3 run on F-COO";
}

// CP-ALS with format AUTO on the GPU runs mode 0's MTTKRP on F-COO and the
// others on COO, and equals the CPU run from the same init.
TYPED_TEST(CudaCpAls, MixedFormatsMatchCpu) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  const spt_coo_s x = mixed_format_tensor(dtype_of<T>());
  const auto init = positive_init<T>(x.dims, 16, 21);
  const CpdRun gpu = run_cpd<T>(SPT_BACKEND_CUDA, x, init, 16, 10, 0.0);
  const CpdRun cpu = run_cpd<T>(SPT_BACKEND_CPU, x, init, 16, 10, 0.0);
  expect_same_run<T>(gpu, cpu, x, "mixed formats");
  bool said = false;
  for (const std::string& line : gpu.log)
    said = said || line.find("MTTKRP on F-COO in modes 0, COO in the others") != std::string::npos;
  EXPECT_TRUE(said) << "the GPU run should say that mode 0 runs on F-COO";
}

TEST(CudaCpAlsApi, CallbackStopsTheDeviceRun) {
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {50, 40, 30};
  spec.nnz = 5000;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const auto init = positive_init<double>(x.dims, 8, 3);
  const CpdRun gpu = run_cpd<double>(SPT_BACKEND_CUDA, x, init, 8, 50, 0.0, /*stop_after=*/3);
  const CpdRun cpu = run_cpd<double>(SPT_BACKEND_CPU, x, init, 8, 50, 0.0, /*stop_after=*/3);
  ASSERT_EQ(gpu.status, SPT_WARN_NOT_CONVERGED) << gpu.error;
  EXPECT_EQ(gpu.k->iterations, 3);
  EXPECT_EQ(gpu.callback_iterations, (std::vector<int>{1, 2, 3}));
  expect_same_run<double>(gpu, cpu, x, "stopped by the callback");
  bool said = false;
  for (const std::string& line : gpu.log) said = said || line.find("stopped by the callback") != std::string::npos;
  EXPECT_TRUE(said);
}

// Two equal initial columns stay equal, so every normal-equation matrix is
// singular: both backends take the pseudo-inverse (syevd) path every time.
TEST(CudaCpAlsApi, PseudoInverseFallbackMatchesCpu) {
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {40, 35, 30};
  spec.nnz = 4000;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  auto init = positive_init<double>(x.dims, 4, 21);
  for (auto& f : init)
    for (spt_nnz i = 0; i < f.rows; ++i) f(i, 3) = f(i, 2);
  // One sweep: its solves are all exactly singular (equal columns), so both
  // backends take the pseudo-inverse in every mode. Later the columns drift
  // apart by rounding (the GPU's atomics add in no fixed order) and whether
  // a solve counts as singular depends on the condition estimate (LAPACK's
  // on the CPU, exact on the GPU), so longer runs may legitimately branch
  // differently (seen at sweep 6, and once at sweep 3).
  const CpdRun gpu = run_cpd<double>(SPT_BACKEND_CUDA, x, init, 4, 1, 0.0);
  const CpdRun cpu = run_cpd<double>(SPT_BACKEND_CPU, x, init, 4, 1, 0.0);
  expect_same_run<double>(gpu, cpu, x, "singular normal equations");
  for (const CpdRun* run : {&gpu, &cpu}) {
    int fallbacks = 0;
    for (const std::string& line : run->log) fallbacks += line.find("using the pseudo-inverse") != std::string::npos;
    EXPECT_GE(fallbacks, 3) << (run == &gpu ? "GPU" : "CPU") << " run: the pseudo-inverse path was not taken";
  }
}

TEST(CudaCpAlsApi, CsfUnsupportedOnCudaHicooMttkrpsOnTheGpu) {
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {30, 20, 10};
  spec.nnz = 2000;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  // CSF has no GPU kernel: CUDA forced is UNSUPPORTED, AUTO runs on the CPU with a note.
  const CpdRun forced = run_cpd<double>(SPT_BACKEND_CUDA, x, {}, 4, 5, 0.0, 0, SPT_TENSOR_FORMAT_CSF);
  EXPECT_EQ(forced.status, SPT_ERR_UNSUPPORTED);
  EXPECT_NE(forced.error.find("runs on COO, F-COO or HiCOO"), std::string::npos) << forced.error;
  const CpdRun automatic = run_cpd<double>(SPT_BACKEND_AUTO, x, {}, 4, 5, 0.0, 0, SPT_TENSOR_FORMAT_CSF);
  EXPECT_GE(automatic.status, 0) << automatic.error;
  bool noted = false;
  for (const std::string& line : automatic.log) noted = noted || line.find("runs on COO, F-COO or HiCOO") != std::string::npos;
  EXPECT_TRUE(noted);
  // HiCOO under CUDA: the host loop with GPU HiCOO MTTKRPs, the CPU's fits.
  const auto init = positive_init<double>(x.dims, 4, 2);
  const CpdRun hicoo = run_cpd<double>(SPT_BACKEND_CUDA, x, init, 4, 5, 0.0, 0, SPT_TENSOR_FORMAT_HICOO);
  const CpdRun cpu = run_cpd<double>(SPT_BACKEND_CPU, x, init, 4, 5, 0.0, 0, SPT_TENSOR_FORMAT_HICOO);
  ASSERT_GE(hicoo.status, 0) << hicoo.error;
  ASSERT_EQ(hicoo.k->fit_history.size(), cpu.k->fit_history.size());
  for (size_t i = 0; i < cpu.k->fit_history.size(); ++i)
    EXPECT_NEAR(hicoo.k->fit_history[i], cpu.k->fit_history[i], 1e-9 * std::abs(cpu.k->fit_history[i]));
  noted = false;
  for (const std::string& line : hicoo.log) noted = noted || line.find("CP-ALS on HiCOO: the MTTKRPs run on the GPU") != std::string::npos;
  EXPECT_TRUE(noted);
}

// SPT_CUDA_MEMORY_LIMIT makes the working set not fit: AUTO falls back to
// the CPU with a note and the CPU's result; CUDA forced is an
// OUT_OF_MEMORY error. Both for a tensor not yet on the device (the upload
// does not fit) and for one already there (the factors and workspace do
// not fit).
TEST(CudaCpAlsApi, OutOfMemoryFallsBackUnderAutoAndFailsUnderCuda) {
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {3000, 2000, 20};  // above AUTO's small-tensor rule (sum(dims) * R > 2^14)
  spec.nnz = 4000;
  const auto init = positive_init<double>(spec.dims, 8, 9);
  for (bool resident : {false, true}) {
    const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
    const std::string what = resident ? "tensor already on the device" : "tensor not on the device";
    if (resident) {
      const CpdRun first = run_cpd<double>(SPT_BACKEND_CUDA, x, init, 8, 2, 0.0);
      ASSERT_GE(first.status, 0) << first.error;
      ASSERT_TRUE(x.device_cache != nullptr);
    }
    const CpdRun cpu = run_cpd<double>(SPT_BACKEND_CPU, x, init, 8, 6, 0.0);
    ScopedEnv limit("SPT_CUDA_MEMORY_LIMIT", "1000");
    const CpdRun automatic = run_cpd<double>(SPT_BACKEND_AUTO, x, init, 8, 6, 0.0);
    ASSERT_GE(automatic.status, 0) << what << ": " << automatic.error;
    bool noted = false;
    for (const std::string& line : automatic.log)
      noted = noted || line.find("note: CP-ALS runs on the CPU: the CUDA device is out of memory") != std::string::npos;
    EXPECT_TRUE(noted) << what;
    ASSERT_EQ(automatic.k->fit_history.size(), cpu.k->fit_history.size()) << what;
    for (size_t i = 0; i < cpu.k->fit_history.size(); ++i)
      EXPECT_NEAR(automatic.k->fit_history[i], cpu.k->fit_history[i], 1e-12) << what << " sweep " << i + 1;
    EXPECT_EQ(automatic.callback_iterations.size(), cpu.callback_iterations.size()) << what;
    const CpdRun forced = run_cpd<double>(SPT_BACKEND_CUDA, x, init, 8, 6, 0.0);
    EXPECT_EQ(forced.status, SPT_ERR_OUT_OF_MEMORY) << what << ": " << forced.error;
    EXPECT_NE(forced.error.find("out of memory"), std::string::npos) << forced.error;
    EXPECT_TRUE(forced.callback_iterations.empty()) << what;
  }
}

// CPU-only machines (CI): CUDA forced (here set on the internal context:
// spt_context_set_backend already refuses it) is a DEVICE error; AUTO runs
// the CPU loop, the CPU backend's result.
// AUTO's small-tensor rule (cp_als_prefers_cpu): the figures it was fitted
// to, and its effect: a tiny tensor under AUTO runs on the CPU with a note
// (same fits as the CPU), CUDA forced still runs on the GPU.
TEST(CudaCpAlsApi, AutoRunsTinyTensorsOnTheCpu) {
  using dispatch::cp_als_prefers_cpu;
  EXPECT_TRUE(cp_als_prefers_cpu({14, 56, 14}, 1992, 16, 16));            // nations
  EXPECT_TRUE(cp_als_prefers_cpu({180, 90, 12, 7}, 742529, 16, 16));      // coads, rank 16
  EXPECT_FALSE(cp_als_prefers_cpu({180, 90, 12, 7}, 742529, 32, 16));     // coads, rank 32
  EXPECT_FALSE(cp_als_prefers_cpu({979, 979, 804}, 894892, 16, 16));      // email-eu-day
  EXPECT_FALSE(cp_als_prefers_cpu({327, 327, 404}, 61562, 16, 16));       // contact-highschool
  EXPECT_FALSE(cp_als_prefers_cpu({180, 90, 12, 7}, 742529, 16, 2));      // coads on 2 threads
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {30, 20, 10};
  spec.nnz = 2000;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const auto init = positive_init<double>(x.dims, 4, 5);
  const CpdRun automatic = run_cpd<double>(SPT_BACKEND_AUTO, x, init, 4, 5, 0.0);
  const CpdRun cpu = run_cpd<double>(SPT_BACKEND_CPU, x, init, 4, 5, 0.0);
  const CpdRun forced = run_cpd<double>(SPT_BACKEND_CUDA, x, init, 4, 5, 0.0);
  ASSERT_GE(automatic.status, 0) << automatic.error;
  bool noted = false;
  for (const std::string& line : automatic.log) noted = noted || line.find("the tensor is small") != std::string::npos;
  EXPECT_TRUE(noted);
  ASSERT_EQ(automatic.k->fit_history.size(), cpu.k->fit_history.size());
  for (size_t i = 0; i < cpu.k->fit_history.size(); ++i)
    EXPECT_NEAR(automatic.k->fit_history[i], cpu.k->fit_history[i], 1e-12) << "sweep " << i + 1;
  expect_same_run<double>(forced, cpu, x, "tiny tensor, CUDA forced");
}

TEST(CudaCpAlsApi, ForcedCudaWithoutDeviceIsDeviceError) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present; this checks the CPU-only behaviour";
  RandomTensorSpec spec;
  spec.dims = {20, 15, 10};
  spec.nnz = 800;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CUDA;
  spt_cpd_options opts;
  ASSERT_EQ(spt_cpd_options_init(&opts), SPT_OK);
  opts.rank = 3;
  opts.max_iters = 3;
  spt_ktensor_s k;
  try {
    cp_als(ctx, x, opts, k);
    FAIL() << "CP-ALS with CUDA forced and no device should fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_DEVICE) << e.what();
    EXPECT_NE(std::string(e.what()).find("CUDA CP-ALS failed"), std::string::npos) << e.what();
  }
}

TEST(CudaCpAlsApi, AutoWithoutDeviceRunsOnCpu) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present; this checks the CPU-only behaviour";
  RandomTensorSpec spec;
  spec.dims = {30, 25, 20};
  spec.nnz = 3000;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const auto init = positive_init<double>(x.dims, 5, 1);
  const CpdRun automatic = run_cpd<double>(SPT_BACKEND_AUTO, x, init, 5, 8, 0.0);
  const CpdRun cpu = run_cpd<double>(SPT_BACKEND_CPU, x, init, 5, 8, 0.0);
  ASSERT_EQ(automatic.status, SPT_WARN_NOT_CONVERGED) << automatic.error;
  // The same CPU loop; equal to rounding (the CPU MTTKRP may use atomics).
  ASSERT_EQ(automatic.k->fit_history.size(), cpu.k->fit_history.size());
  for (size_t i = 0; i < cpu.k->fit_history.size(); ++i)
    EXPECT_NEAR(automatic.k->fit_history[i], cpu.k->fit_history[i], 1e-12) << "sweep " << i + 1;
  EXPECT_EQ(automatic.callback_iterations.size(), 8u);
  for (const std::string& line : automatic.log) EXPECT_EQ(line.find("cuda"), std::string::npos) << line;
}


/* ------------------------- GPU: HiCOO MTTKRP ----------------------------- */

spt_hicoo_s make_hicoo(const spt_coo_s& x, uint32_t block_size) {
  hicoo::Params p;
  p.block_size = block_size;
  return hicoo::from_coo(x, p, 2);
}

// GPU HiCOO MTTKRP of each of hs (made from x, with different block sizes)
// through the dispatcher with CUDA forced, every mode, against the float64
// HiCOO reference kernel on the same handle and the float64 COO reference
// MTTKRP of x (tolerance as check_all_modes). Poisons the output first so
// unwritten rows show.
template <typename T>
void check_hicoo_all_modes(const std::vector<spt_hicoo_s>& hs, const spt_coo_s& x, spt_nnz rank, uint64_t seed,
                           const std::string& what) {
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CUDA;
  const auto factors = random_factors<T>(x.dims, rank, seed);
  const std::vector<ConstMatRef<T>> refs = crefs(factors);
  for (uint32_t mode = 0; mode < x.order(); ++mode) {
    const DenseMatrix<double> want = reference_mttkrp(x, factors, mode);
    const DenseMatrix<double> scale = reference_mttkrp(x, factors, mode, /*absolute=*/true);
    for (const spt_hicoo_s& h : hs) {
      DenseMatrix<T> out(x.dims[mode], rank);
      for (auto& v : out.values) v = T(12345);
      SPT_DISPATCH(ctx, mttkrp_hicoo, h, refs.data(), mode, out.ref());
      const std::string where = cat(what, " B ", h.block_size(), " rank ", rank, " mode ", mode);
      expect_close_to_reference(reference_mttkrp_hicoo(h, factors, mode),
                                reference_mttkrp_hicoo(h, factors, mode, /*absolute=*/true), out,
                                where + " (HiCOO reference)");
      expect_close_to_reference(want, scale, out, where);
    }
  }
}

// One HiCOO per block size; window_reuse forces the GPU kernel's
// shared-memory window threshold (0 = the plugin's).
std::vector<spt_hicoo_s> make_hicoos(const spt_coo_s& x, std::initializer_list<uint32_t> block_sizes,
                                     uint32_t window_reuse = 0) {
  std::vector<spt_hicoo_s> hs;
  for (uint32_t b : block_sizes) {
    hs.push_back(make_hicoo(x, b));
    hs.back().gpu_window_reuse = window_reuse;
  }
  return hs;
}

template <typename T>
class CudaHicooMttkrp : public ::testing::Test {};
TYPED_TEST_SUITE(CudaHicooMttkrp, ValueTypes);

const spt_nnz kHicooRanks[] = {1, 8, 16, 32, 33, 64};

// Orders 2..6 (the standard skewed shapes) plus orders 7 and 8 (the
// kernel's limit), block sizes 2, 16 and 128, each with the default window
// rule (global atomics with running sums nearly everywhere) and with
// window_reuse 1 (every block with max(8, B/4) nonzeros
// through the shared-memory output window, staged factor windows where
// they fit and the block has >= B nonzeros).
TYPED_TEST(CudaHicooMttkrp, RandomTensorsOrders2To8) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  std::vector<RandomTensorSpec> specs = standard_specs();
  RandomTensorSpec seven;
  seven.dims = {3, 5, 7, 2, 11, 4, 6};
  seven.nnz = 3000;
  seven.seed = 21;
  specs.push_back(seven);
  RandomTensorSpec eight;
  eight.dims = {3, 4, 2, 5, 3, 2, 4, 3};
  eight.nnz = 2500;
  eight.seed = 22;
  specs.push_back(eight);
  for (const RandomTensorSpec& spec : specs) {
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    for (uint32_t reuse : {0u, 1u}) {
      // Default rule (hardly any block hot enough for the window), then
      // the window for every block with enough nonzeros.
      const std::vector<spt_hicoo_s> hs = make_hicoos(x, {2u, 16u, 128u}, reuse);
      for (spt_nnz rank : kHicooRanks)
        check_hicoo_all_modes<T>(hs, x, rank, spec.seed * 7 + rank,
                                 cat("order ", x.order(), " nnz ", x.nnz, reuse ? " window" : ""));
    }
  }
}

// Heavy slices and dense blocks: 200k nonzeros on a 3 x 2000 x 700 x 50
// skewed tensor (a few blocks of thousands of nonzeros, shared by several
// thread blocks), and a long, skewed third-order tensor (mostly sparse
// blocks). Block sizes 8, 64, 256 (at 256 and rank 64 in float64 the output
// window does not fit shared memory: the atomics-only path).
TYPED_TEST(CudaHicooMttkrp, HeavySlicesAndBlockSizes) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  for (const RandomTensorSpec& spec : heavy_and_skewed_specs()) {
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    for (uint32_t reuse : {0u, 1u}) {
      const std::vector<spt_hicoo_s> hs = make_hicoos(x, {8u, 64u, 256u}, reuse);
      for (spt_nnz rank : kHicooRanks)
        check_hicoo_all_modes<T>(hs, x, rank, 99 + rank,
                                 cat("dims ", x.dims[0], "x", x.dims[1], "...", reuse ? " window" : ""));
    }
  }
}

TYPED_TEST(CudaHicooMttkrp, DataTensors) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  int checked = 0;
  for (const char* name : kDataTensors) {
    spt_coo_s x;
    if (!read_data_tensor<T>(name, &x)) continue;
    const std::vector<spt_hicoo_s> hs = make_hicoos(x, {0u, 32u});  // 0 = the CPU rule's B
    for (spt_nnz rank : {spt_nnz(16), spt_nnz(32)}) check_hicoo_all_modes<T>(hs, x, rank, 3 + rank, name);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no data tensors found";
}

// spt_mttkrp_hbcsf in any mode with CUDA forced: every mode from one tree (the
// root by the root kernel, the others by the non-root kernel, one device
// copy cached on the handle) against the reference, order 4, both dtypes.
template <typename T>
void every_mode_through_the_api() {
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  ASSERT_EQ(spt_context_set_backend(ctx, SPT_BACKEND_CUDA), SPT_OK) << spt_last_error(ctx);
  RandomTensorSpec spec;
  spec.dims = {50, 6, 300, 20};
  spec.nnz = 20000;
  spec.seed = 12;
  const spt_coo_s x = random_coo(dtype_of<T>(), spec);
  const spt_nnz rank = 20;
  auto factors = random_factors<T>(spec.dims, rank, 78);
  std::vector<spt_matrix*> handles;
  for (auto& f : factors) {
    spt_matrix* m = nullptr;
    ASSERT_EQ(spt_matrix_wrap(ctx, dtype_of<T>(), f.rows, f.cols, SPT_ROW_MAJOR, f.values.data(), f.cols, &m), SPT_OK);
    handles.push_back(m);
  }
  spt_hbcsf* h = nullptr;
  ASSERT_EQ(spt_hbcsf_from_coo(ctx, &x, spt::test::HbcsfOptions(2), &h), SPT_OK) << spt_last_error(ctx);
  const double tol = sizeof(T) == 4 ? 1e-4 : 1e-10;
  for (uint32_t mode = 0; mode < 4; ++mode) {
    spt_matrix* out = nullptr;
    ASSERT_EQ(spt_matrix_create(ctx, dtype_of<T>(), x.dims[mode], rank, SPT_ROW_MAJOR, &out), SPT_OK);
    ASSERT_EQ(spt_mttkrp_hbcsf(ctx, h, handles.data(), mode, out), SPT_OK) << spt_last_error(ctx);
    const DenseMatrix<double> want = reference_mttkrp(x, factors, mode);
    double scale = 1.0;
    for (double v : want.values) scale = std::max(scale, std::abs(v));
    for (spt_nnz i = 0; i < want.rows; ++i)
      for (spt_nnz j = 0; j < want.cols; ++j)
        ASSERT_NEAR(want(i, j), double(out->at<T>(i, j)), tol * scale) << "mode " << mode << " (" << i << "," << j << ")";
    spt_matrix_free(out);
  }
  EXPECT_TRUE(h->device_cache != nullptr) << "the device copy should be cached on the handle";
  spt_hbcsf_free(h);
  for (spt_matrix* m : handles) spt_matrix_free(m);
  spt_context_free(ctx);
}

TEST(CudaHbcsfApi, EveryModeFromOneTreeFloat64) {
  SKIP_WITHOUT_DEVICE();
  every_mode_through_the_api<double>();
}

TEST(CudaHbcsfApi, EveryModeFromOneTreeFloat32) {
  SKIP_WITHOUT_DEVICE();
  every_mode_through_the_api<float>();
}

// Through the C API: the device copy is cached on the handle, reused, gone
// with the handle; a new handle (another tensor) gets its own copy; a
// struct copy of a handle (same cache pointer, other arrays) is not served
// the original's copy.
TEST(CudaHicooApi, CacheOnTheHandleAndInvalidation) {
  SKIP_WITHOUT_DEVICE();
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  ASSERT_EQ(spt_context_set_backend(ctx, SPT_BACKEND_CUDA), SPT_OK) << spt_last_error(ctx);
  RandomTensorSpec spec;
  spec.dims = {40, 30, 20};
  spec.nnz = 5000;
  const spt_nnz rank = 24;
  auto factors = random_factors<double>(spec.dims, rank, 77);
  std::vector<spt_matrix*> handles;
  for (auto& f : factors) {
    spt_matrix* m = nullptr;
    ASSERT_EQ(spt_matrix_wrap(ctx, SPT_FLOAT64, f.rows, f.cols, SPT_ROW_MAJOR, f.values.data(), f.cols, &m), SPT_OK);
    handles.push_back(m);
  }
  auto run_and_check = [&](const spt_hicoo* h, const spt_coo_s& x, const std::string& what) {
    spt_matrix* out = nullptr;
    ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, x.dims[1], rank, SPT_COL_MAJOR, &out), SPT_OK);
    ASSERT_EQ(spt_mttkrp_hicoo(ctx, h, handles.data(), 1, out), SPT_OK) << spt_last_error(ctx);
    const DenseMatrix<double> want = reference_mttkrp(x, factors, 1);
    for (spt_nnz i = 0; i < want.rows; ++i)
      for (spt_nnz j = 0; j < want.cols; ++j)
        ASSERT_TRUE(close(want(i, j), out->at<double>(i, j), 1e-10)) << what << " (" << i << "," << j << ")";
    spt_matrix_free(out);
  };
  for (uint64_t seed : {1u, 2u}) {  // free and recreate: the second handle is another tensor
    spec.seed = seed;
    const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
    spt_hicoo* h = nullptr;
    ASSERT_EQ(spt_hicoo_from_coo(ctx, &x, nullptr, &h), SPT_OK) << spt_last_error(ctx);
    EXPECT_TRUE(h->device_cache == nullptr);
    run_and_check(h, x, cat("seed ", seed, " first call"));
    ASSERT_TRUE(h->device_cache != nullptr) << "the device copy should be cached on the handle";
    std::shared_ptr<void> cached = h->device_cache;
    run_and_check(h, x, cat("seed ", seed, " second call"));
    EXPECT_EQ(h->device_cache, cached) << "the cached copy should be reused";
    if (seed == 2) {
      // A struct copy shares the cache pointer but has its own arrays.
      spt_hicoo_s copy = *h;
      EXPECT_EQ(copy.device_cache, cached);
      run_and_check(&copy, x, "struct copy");
      EXPECT_NE(copy.device_cache, cached) << "a copy with other arrays must get its own device copy";
    }
    const std::weak_ptr<void> watch = cached;
    cached.reset();
    spt_hicoo_free(h);
    EXPECT_TRUE(watch.expired()) << "the device copy must go with the handle";
  }
  for (spt_matrix* m : handles) spt_matrix_free(m);
  spt_context_free(ctx);
}

void record_log_line(void* data, int, const char* message) {
  static_cast<std::vector<std::string>*>(data)->push_back(message);
}

// SPT_CUDA_MEMORY_LIMIT makes the upload not fit: AUTO runs the CPU kernel
// with a note (its result), CUDA forced is a DEVICE error naming the memory.
TEST(CudaHicooApi, OutOfMemoryFallsBackUnderAutoAndFailsUnderCuda) {
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {40, 30, 20};
  spec.nnz = 4000;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const spt_hicoo_s h = make_hicoo(x, 0);
  const spt_nnz rank = 8;
  const auto factors = random_factors<double>(x.dims, rank, 4);
  const std::vector<ConstMatRef<double>> refs = crefs(factors);
  ScopedEnv limit("SPT_CUDA_MEMORY_LIMIT", "1000");
  std::vector<std::string> log_lines;
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_AUTO;
  ctx.verbosity = 1;
  ctx.log = record_log_line;
  ctx.log_data = &log_lines;
  DenseMatrix<double> out(x.dims[0], rank);
  SPT_DISPATCH(ctx, mttkrp_hicoo, h, refs.data(), 0, out.ref());
  const DenseMatrix<double> want = reference_mttkrp(x, factors, 0);
  for (spt_nnz i = 0; i < want.rows; ++i)
    for (spt_nnz j = 0; j < want.cols; ++j) ASSERT_TRUE(close(want(i, j), out(i, j), 1e-12));
  bool noted = false;
  for (const std::string& line : log_lines)
    noted = noted || line.find("note: HiCOO MTTKRP runs on the CPU: the CUDA device is out of memory") !=
                         std::string::npos;
  EXPECT_TRUE(noted) << "AUTO should say why it fell back";
  EXPECT_TRUE(h.device_cache == nullptr);
  ctx.backend = SPT_BACKEND_CUDA;
  try {
    SPT_DISPATCH(ctx, mttkrp_hicoo, h, refs.data(), 0, out.ref());
    FAIL() << "HiCOO MTTKRP with CUDA forced should fail when the tensor does not fit";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_DEVICE) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
}

// CPU-only machines (CI): CUDA forced on the internal context is a DEVICE
// error; AUTO runs the CPU kernel.
TEST(CudaHicooApi, WithoutDeviceForcedFailsAndAutoRunsOnCpu) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present; this checks the CPU-only behaviour";
  RandomTensorSpec spec;
  spec.dims = {20, 15, 10};
  spec.nnz = 800;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const spt_hicoo_s h = make_hicoo(x, 0);
  const auto factors = random_factors<double>(x.dims, 4, 2);
  const std::vector<ConstMatRef<double>> refs = crefs(factors);
  DenseMatrix<double> out(x.dims[2], 4);
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CUDA;
  try {
    SPT_DISPATCH(ctx, mttkrp_hicoo, h, refs.data(), 2, out.ref());
    FAIL() << "HiCOO MTTKRP with CUDA forced and no device should fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_DEVICE) << e.what();
  }
  ctx.backend = SPT_BACKEND_AUTO;
  SPT_DISPATCH(ctx, mttkrp_hicoo, h, refs.data(), 2, out.ref());
  const DenseMatrix<double> want = reference_mttkrp(x, factors, 2);
  for (spt_nnz i = 0; i < want.rows; ++i)
    for (spt_nnz j = 0; j < want.cols; ++j) ASSERT_TRUE(close(want(i, j), out(i, j), 1e-12));
  EXPECT_TRUE(h.device_cache == nullptr);
}

/* ------------------------------ GPU F-COO ------------------------------- */

// F-COO MTTKRP / TTMc / TTM with CUDA forced against the float64 F-COO
// reference kernels on the same handles and the COO reference kernels (as
// check_all_modes), every mode and threadlen; the output is poisoned first
// so unwritten rows show.
template <typename T>
void check_fcoo_all_modes(const spt_coo_s& x, spt_nnz rank, uint64_t seed, const std::string& what,
                          bool with_ttm = true) {
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CUDA;
  const auto factors = random_factors<T>(x.dims, rank, seed);
  const std::vector<ConstMatRef<T>> refs = crefs(factors);
  for (uint32_t mode = 0; mode < x.order(); ++mode) {
    const DenseMatrix<double> want = reference_mttkrp(x, factors, mode);
    const DenseMatrix<double> scale = reference_mttkrp(x, factors, mode, /*absolute=*/true);
    for (uint32_t threadlen : {8u, 16u, 32u}) {
      const spt_fcoo_s f = fcoo::from_coo(x, SPT_FCOO_MTTKRP, mode, threadlen, 4);
      DenseMatrix<T> out(x.dims[mode], rank);
      for (auto& v : out.values) v = T(12345);
      SPT_DISPATCH(ctx, mttkrp_fcoo, f, refs.data(), out.ref());
      const std::string where = cat(what, " F-COO MTTKRP threadlen ", threadlen, " rank ", rank, " mode ", mode);
      expect_close_to_reference(reference_mttkrp_fcoo(f, factors), reference_mttkrp_fcoo(f, factors, true), out,
                                where + " (F-COO reference)");
      expect_close_to_reference(want, scale, out, where);
      if (!with_ttm || threadlen != 16) continue;
      // TTM in this mode: fibers and values against the CPU reference.
      const spt_fcoo_s t = fcoo::from_coo(x, SPT_FCOO_TTM, mode, threadlen, 4);
      spt_scoo_s want_t, got_t;
      kernels::reference::ttm(kernels::Exec{1}, x, mode, refs[mode], want_t);
      SPT_DISPATCH(ctx, ttm_fcoo, t, refs[mode], got_t);
      ASSERT_EQ(want_t.nfibers, got_t.nfibers) << what;
      const T* a = want_t.values.template get<T>().data();
      const T* b = got_t.values.template get<T>().data();
      for (spt_nnz i = 0; i < want_t.nfibers * rank; ++i)
        ASSERT_LE(std::abs(double(a[i]) - double(b[i])), 10 * gpu_tolerance<T>() * std::max(1.0, std::abs(double(a[i]))))
            << what << " F-COO TTM mode " << mode << " rank " << rank << " value " << i;
      // ... and against the F-COO reference TTM on the same handle, in
      // float64: the same fibers, values within the sum of magnitudes.
      const spt_scoo_s own_t = reference_ttm_fcoo(t, factors[mode]);
      const spt_scoo_s own_scale = reference_ttm_fcoo(t, factors[mode], /*absolute=*/true);
      ASSERT_EQ(own_t.nfibers, got_t.nfibers) << what;
      for (uint32_t m = 0; m < x.order(); ++m)
        if (!own_t.is_dense(m))
          for (spt_nnz i = 0; i < own_t.nfibers; ++i)
            ASSERT_EQ(own_t.ind[m][i], got_t.ind[m][i]) << what << " F-COO TTM mode " << mode << " fiber " << i;
      const double* own = own_t.values.get<double>().data();
      const double* own_mag = own_scale.values.get<double>().data();
      for (spt_nnz i = 0; i < own_t.nfibers * rank; ++i)
        ASSERT_LE(std::abs(own[i] - double(b[i])), gpu_tolerance<T>() * std::max(1.0, own_mag[i]))
            << what << " F-COO TTM (F-COO reference) mode " << mode << " rank " << rank << " value " << i;
      // TTMc with small ranks per mode (2 or 3) when the width stays small.
      std::vector<DenseMatrix<T>> us;
      uint64_t cols = 1;
      for (uint32_t m = 0; m < x.order(); ++m) {
        us.push_back(random_matrix<T>(x.dims[m], 2 + (m % 2), seed + m));
        if (m != mode) cols *= us[m].cols;
      }
      if (cols > 200) continue;
      const auto urefs = crefs(us);
      DenseMatrix<T> want_c(x.dims[mode], cols), got_c(x.dims[mode], cols);
      kernels::reference::ttmc(kernels::Exec{1}, x, urefs.data(), mode, want_c.ref());
      for (auto& v : got_c.values) v = T(12345);
      SPT_DISPATCH(ctx, ttmc_fcoo, f, urefs.data(), got_c.ref());
      expect_close_to_reference(reference_ttmc_fcoo(f, us), reference_ttmc_fcoo(f, us, true), got_c,
                                cat(what, " F-COO TTMc (F-COO reference) mode ", mode));
      for (size_t i = 0; i < want_c.values.size(); ++i)
        ASSERT_LE(std::abs(double(want_c.values[i]) - double(got_c.values[i])),
                  100 * gpu_tolerance<T>() * std::max(1.0, std::abs(double(want_c.values[i]))))
            << what << " F-COO TTMc mode " << mode << " entry " << i;
    }
  }
}

template <typename T>
class CudaFcoo : public ::testing::Test {};
TYPED_TEST_SUITE(CudaFcoo, ValueTypes);

// Orders 2..8 (7 product modes: the kernels' limit), skewed shapes, ranks
// 1..64 including non-multiples of the 32-byte column chunk.
TYPED_TEST(CudaFcoo, RandomTensorsOrders2To8) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  std::vector<RandomTensorSpec> specs = standard_specs();
  RandomTensorSpec eight;
  eight.dims = {3, 4, 2, 5, 3, 2, 4, 3};
  eight.nnz = 2500;
  eight.seed = 22;
  specs.push_back(eight);
  for (const RandomTensorSpec& spec : specs) {
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    for (spt_nnz rank : {spt_nnz(1), spt_nnz(8), spt_nnz(16), spt_nnz(33), spt_nnz(64)})
      check_fcoo_all_modes<T>(x, rank, spec.seed * 7 + rank, cat("order ", x.order(), " nnz ", x.nnz), rank <= 16);
  }
}

// Heavy slices (a 3 x 2000 x 700 x 50 tensor with 200k nonzeros: segments
// spanning many warps) and a long skewed third-order tensor (many short
// segments per partition).
TYPED_TEST(CudaFcoo, HeavySlicesAndLongTensors) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  for (const RandomTensorSpec& spec : heavy_and_skewed_specs()) {
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    for (spt_nnz rank : {spt_nnz(16), spt_nnz(32)}) check_fcoo_all_modes<T>(x, rank, 99 + rank, "heavy/skewed");
  }
}

TYPED_TEST(CudaFcoo, DataTensors) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  int checked = 0;
  for (const char* name : kDataTensors) {
    spt_coo_s x;
    if (!read_data_tensor<T>(name, &x)) continue;
    check_fcoo_all_modes<T>(x, 32, 3, name, false);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no data tensors found";
}

// CP-ALS with opts.format = FCOO under CUDA (the whole sweep on the device,
// MTTKRPs on the F-COO kernel) equals the CPU COO run from the same init;
// orders 3 and 4, ranks 8, 16 and 33.
TYPED_TEST(CudaFcoo, CpAlsOnFcooMatchesCpu) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  RandomTensorSpec four;
  four.dims = {60, 45, 30, 8};
  four.nnz = 8000;
  four.seed = 17;
  RandomTensorSpec three;
  three.dims = {300, 20, 500};
  three.nnz = 20000;
  three.seed = 18;
  for (const RandomTensorSpec& spec : {four, three}) {
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    for (spt_index rank : {8u, 16u, 33u}) {
      const auto init = positive_init<T>(x.dims, rank, 300 + rank);
      const CpdRun gpu = run_cpd<T>(SPT_BACKEND_CUDA, x, init, rank, 10, 0.0, 0, SPT_TENSOR_FORMAT_FCOO);
      const CpdRun cpu = run_cpd<T>(SPT_BACKEND_CPU, x, init, rank, 10, 0.0, 0, SPT_TENSOR_FORMAT_COO);
      expect_same_run<T>(gpu, cpu, x, cat("F-COO order ", x.order(), " rank ", rank));
      bool noted = false;
      for (const std::string& line : gpu.log) noted = noted || line.find("CP-ALS on F-COO on the GPU") != std::string::npos;
      EXPECT_TRUE(noted);
    }
  }
}

// Without a device: F-COO with CUDA forced is a DEVICE error; AUTO runs on the CPU.
TEST(CudaFcooApi, WithoutDeviceForcedFailsAndAutoRunsOnCpu) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present; this checks the CPU-only behaviour";
  RandomTensorSpec spec;
  spec.dims = {10, 12, 14};
  spec.nnz = 300;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const spt_fcoo_s f = fcoo::from_coo(x, SPT_FCOO_MTTKRP, 0, 8, 1);
  const auto factors = random_factors<double>(x.dims, 4, 1);
  const auto refs = crefs(factors);
  DenseMatrix<double> out(10, 4);
  spt_context_s forced;
  forced.backend = SPT_BACKEND_CUDA;
  try {
    SPT_DISPATCH(forced, mttkrp_fcoo, f, refs.data(), out.ref());
    ADD_FAILURE() << "forced CUDA without a device must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_DEVICE);
  }
  spt_context_s automatic;
  automatic.backend = SPT_BACKEND_AUTO;
  SPT_DISPATCH(automatic, mttkrp_fcoo, f, refs.data(), out.ref());
  const DenseMatrix<double> want = reference_mttkrp(x, factors, 0);
  for (spt_nnz i = 0; i < 10; ++i)
    for (spt_nnz r = 0; r < 4; ++r) EXPECT_NEAR(out(i, r), want(i, r), 1e-12);
}

/* --------------------------- GPU B-CSF / HB-CSF -------------------------- */

// One set of B-CSF / HB-CSF build parameters.
struct HbcsfConfig {
  uint32_t fiber_threshold;
  uint32_t slice_split_nnz;
  uint32_t slice_bin_min_nnz;
};

// Tiny thresholds (every long fiber and most slices split; many bins of
// one-warp teams), the defaults (teams of 1..4 warps), and a large
// slice_split_nnz (the last bin's teams of 8 warps).
const HbcsfConfig kHbcsfConfigs[] = {{2, 8, 1}, {4, 8, 2}, {3, 16, 4}, {128, 512, 32}, {16, 4096, 32}};

spt_hbcsf_s make_hbcsf(const spt_coo_s& x, uint32_t root, const HbcsfConfig& c, uint32_t flags) {
  hbcsf::Params p;
  p.fiber_threshold = c.fiber_threshold;
  p.slice_split_nnz = c.slice_split_nnz;
  p.slice_bin_min_nnz = c.slice_bin_min_nnz;
  p.flags = flags;
  spt_hbcsf_s h = hbcsf::from_coo(x, root, p, 2);
  hbcsf::validate(h);
  return h;
}

// GPU MTTKRP (CUDA forced, through the dispatcher) of the HB-CSF and plain
// B-CSF of x rooted at each of `roots` (every mode when empty), for every
// configuration, against the float64 HB-CSF reference kernel on the same
// handle and the float64 COO reference (tolerance as check_all_modes). The output is poisoned first so unwritten rows (empty
// slices, missed groups) show. Returns the handles' split statistics
// summed (so callers can check that their shape forced splits).
struct HbcsfSplits {
  spt_nnz split_fibers = 0, split_slices = 0, coo_nnz = 0, csl_nnz = 0;
};

template <typename T>
HbcsfSplits check_hbcsf_modes(const spt_coo_s& x, spt_nnz rank, uint64_t seed, const std::string& what,
                              std::vector<uint32_t> roots = {}) {
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CUDA;
  const auto factors = random_factors<T>(x.dims, rank, seed);
  const std::vector<ConstMatRef<T>> refs = crefs(factors);
  if (roots.empty())
    for (uint32_t m = 0; m < x.order(); ++m) roots.push_back(m);
  HbcsfSplits splits;
  for (uint32_t root : roots) {
    const DenseMatrix<double> want = reference_mttkrp(x, factors, root);
    const DenseMatrix<double> scale = reference_mttkrp(x, factors, root, /*absolute=*/true);
    for (const HbcsfConfig& c : kHbcsfConfigs)
      for (uint32_t flags : {0u, uint32_t(SPT_HBCSF_PLAIN_BCSF)}) {
        const spt_hbcsf_s h = make_hbcsf(x, root, c, flags);
        splits.split_fibers += h.split_fibers;
        splits.split_slices += h.split_slices;
        splits.coo_nnz += h.coo_nnz();
        splits.csl_nnz += h.csl_nnz();
        DenseMatrix<T> out(x.dims[root], rank);
        for (auto& v : out.values) v = T(12345);
        SPT_DISPATCH(ctx, mttkrp_hbcsf, h, refs.data(), out.ref());
        const std::string where = cat(what, flags ? " B-CSF" : " HB-CSF", " fiber ", c.fiber_threshold, " split ",
                                      c.slice_split_nnz, " bin ", c.slice_bin_min_nnz, " rank ", rank, " root ", root);
        expect_close_to_reference(reference_mttkrp_hbcsf(h, factors), reference_mttkrp_hbcsf(h, factors, true), out,
                                  where + " (HB-CSF reference)");
        expect_close_to_reference(want, scale, out, where);
        if (::testing::Test::HasFatalFailure()) return splits;
      }
  }
  return splits;
}

// A COO tensor from explicit coordinates, values in [-1, 1).
template <typename T>
spt_coo_s coo_from_coords(const std::vector<spt_index>& dims, const std::vector<std::vector<spt_index>>& coords,
                          uint64_t seed) {
  spt_coo_s x;
  x.init_owned(dtype_of<T>(), dims, coords.size());
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (size_t k = 0; k < coords.size(); ++k) {
    for (uint32_t m = 0; m < dims.size(); ++m) x.mutable_ind(m)[k] = coords[k][m];
    x.template mutable_values<T>()[k] = T(unit(rng));
  }
  return x;
}

template <typename T>
class CudaHbcsfMttkrp : public ::testing::Test {};
TYPED_TEST_SUITE(CudaHbcsfMttkrp, ValueTypes);

const spt_nnz kHbcsfRanks[] = {1, 16, 33, 64};

// Orders 3..6 (the standard skewed shapes with empty slices, a
// single-nonzero slice, repeated coordinates), every root.
TYPED_TEST(CudaHbcsfMttkrp, RandomTensorsOrders3To6) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  HbcsfSplits total;
  for (const RandomTensorSpec& spec : standard_specs()) {
    if (spec.dims.size() < 3) continue;
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    for (spt_nnz rank : kHbcsfRanks) {
      const HbcsfSplits s = check_hbcsf_modes<T>(x, rank, spec.seed * 7 + rank, cat("order ", x.order(), " nnz ", x.nnz));
      if (::testing::Test::HasFatalFailure()) return;
      total.split_fibers += s.split_fibers;
      total.split_slices += s.split_slices;
      total.coo_nnz += s.coo_nnz;
      total.csl_nnz += s.csl_nnz;
    }
  }
  // The shapes must have exercised every path.
  EXPECT_GT(total.split_fibers, 0u);
  EXPECT_GT(total.split_slices, 0u);
  EXPECT_GT(total.coo_nnz, 0u);
  EXPECT_GT(total.csl_nnz, 0u);
}

// The paper's pathological shapes, shared by the root and non-root tests.
// One slice holding nearly every nonzero (mode 0 of length 3: slice 0 with
// 20000 nonzeros, slice 1 empty, slice 2 a single nonzero).
template <typename T>
spt_coo_s one_enormous_slice() {
  std::mt19937_64 rng(31);
  std::vector<std::vector<spt_index>> coords;
  for (int k = 0; k < 20000; ++k) coords.push_back({0, spt_index(rng() % 200), spt_index(rng() % 300)});
  coords.push_back({2, 5, 7});
  return coo_from_coords<T>({3, 200, 300}, coords, 32);
}

// One fiber of 5000 nonzeros (order 3 or 4), plus a few short ones.
template <typename T>
spt_coo_s one_enormous_fiber(uint32_t order) {
  std::vector<std::vector<spt_index>> coords;
  std::vector<spt_index> dims = order == 3 ? std::vector<spt_index>{4, 3, 5000} : std::vector<spt_index>{4, 3, 2, 5000};
  for (spt_index k = 0; k < 5000; ++k) {
    std::vector<spt_index> c(order, 1);
    c[order - 1] = k;
    coords.push_back(c);
  }
  for (spt_index k = 0; k < 10; ++k) {
    std::vector<spt_index> c(order, 0);
    c[order - 1] = k * 7;
    c[0] = k % 4;
    coords.push_back(c);
  }
  return coo_from_coords<T>(dims, coords, 33 + order);
}

// Every fiber (i, j) holds exactly one nonzero, every third slice empty.
template <typename T>
spt_coo_s all_singleton_fibers() {
  std::mt19937_64 rng(34);
  std::vector<std::vector<spt_index>> coords;
  for (spt_index i = 0; i < 60; ++i) {
    if (i % 3 == 2) continue;
    const spt_index fibers = 1 + spt_index(rng() % 40);
    for (spt_index j = 0; j < fibers; ++j) coords.push_back({i, j, spt_index(rng() % 70)});
  }
  return coo_from_coords<T>({60, 40, 70}, coords, 35);
}

// One slice holding nearly every nonzero, every root.
TYPED_TEST(CudaHbcsfMttkrp, OneEnormousSlice) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  const spt_coo_s x = one_enormous_slice<T>();
  for (spt_nnz rank : kHbcsfRanks) {
    const HbcsfSplits s = check_hbcsf_modes<T>(x, rank, 40 + rank, "one enormous slice");
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_GT(s.split_slices, 0u);
  }
}

// One fiber of 5000 nonzeros (order 3 and order 4), plus a few short ones.
TYPED_TEST(CudaHbcsfMttkrp, OneEnormousFiber) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  for (uint32_t order : {3u, 4u}) {
    const spt_coo_s x = one_enormous_fiber<T>(order);
    for (spt_nnz rank : kHbcsfRanks) {
      const HbcsfSplits s = check_hbcsf_modes<T>(x, rank, 50 + rank, cat("one enormous fiber, order ", order));
      if (::testing::Test::HasFatalFailure()) return;
      EXPECT_GT(s.split_fibers, 0u);
    }
  }
}

// Every fiber holds exactly one nonzero (CSL slices under HB-CSF, or B-CSF
// slices of singleton segments cut into units), every third slice empty.
TYPED_TEST(CudaHbcsfMttkrp, AllSingletonFibers) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  const spt_coo_s x = all_singleton_fibers<T>();
  for (spt_nnz rank : kHbcsfRanks) {
    const HbcsfSplits s = check_hbcsf_modes<T>(x, rank, 60 + rank, "all singleton fibers", {0});
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_GT(s.csl_nnz, 0u);
    EXPECT_GT(s.split_slices, 0u);
  }
}

// CSL slices long enough for the fused launch's chunk mapping of the CSL
// group (slices of 500 and 300 singleton fibers, so that chunks and the
// slice windows cross slice boundaries), beside short CSL slices,
// a single-nonzero slice (COO group) and a slice with shared fibers
// (B-CSF group); orders 3 and 4.
TYPED_TEST(CudaHbcsfMttkrp, LongSlicesOfSingletonFibers) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  std::mt19937_64 rng(36);
  for (uint32_t order : {3u, 4u}) {
    std::vector<std::vector<spt_index>> coords;
    // Modes 1 and 2 both distinct within a CSL slice: its fibers are
    // singletons whatever level order the format gives the modes.
    auto add = [&](spt_index i, spt_index j, spt_index k) {
      std::vector<spt_index> c{i, j, k};
      if (order == 4) c.push_back(spt_index(rng() % 3));
      coords.push_back(c);
    };
    for (spt_index j = 0; j < 500; ++j) add(0, j, j);  // CSL, 500 nonzeros
    for (spt_index j = 0; j < 300; ++j) add(1, 2 * j, (2 * j + 7) % 3000);  // CSL, 300
    add(2, 5, 9);  // COO
    for (spt_index j = 0; j < 5; ++j) add(3, j, 10 + j);  // CSL, short
    for (spt_index i = 4; i < 8; ++i)  // B-CSF: 10 x 10 blocks, fibers of 10 leaves
      for (spt_index j = 0; j < 10; ++j)
        for (spt_index k = 0; k < 10; ++k) add(i, j, k);
    std::vector<spt_index> dims{8, 3000, 3000};
    if (order == 4) dims.push_back(3);
    const spt_coo_s x = coo_from_coords<T>(dims, coords, 37);
    const spt_hbcsf_s h = make_hbcsf(x, 0, {128, 512, 32}, 0);
    spt_nnz longest = 0;
    for (size_t k = 0; k + 1 < h.csl_slice_ptr.size(); ++k)
      longest = std::max<spt_nnz>(longest, h.csl_slice_ptr[k + 1] - h.csl_slice_ptr[k]);
    ASSERT_GE(longest, 500u) << "the CSL group must hold the long slices";
    for (spt_nnz rank : kHbcsfRanks) {
      check_hbcsf_modes<T>(x, rank, 70 + rank, cat("long CSL slices, order ", order), {0});
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// Very short modes (lengths 1 and 2), and a root with almost every slice
// empty; order 5 with short modes too.
TYPED_TEST(CudaHbcsfMttkrp, ShortModesAndEmptySlices) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  RandomTensorSpec shortm;
  shortm.dims = {2, 1, 500, 2};
  shortm.nnz = 800;
  shortm.seed = 36;
  RandomTensorSpec sparse;
  sparse.dims = {5000, 10, 12};
  sparse.nnz = 300;
  sparse.seed = 37;
  RandomTensorSpec five;
  five.dims = {1, 2, 30, 2, 40};
  five.nnz = 1200;
  five.seed = 38;
  five.duplicates = true;
  for (const RandomTensorSpec& spec : {shortm, sparse, five}) {
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    for (spt_nnz rank : kHbcsfRanks) {
      check_hbcsf_modes<T>(x, rank, spec.seed + rank, cat("dims ", x.dims[0], "x", x.dims[1], "x..."));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// Orders 7 and 8 (the plugin's limit) run on the GPU; order 9 runs on the
// CPU with a verbose note, also with CUDA forced.
TYPED_TEST(CudaHbcsfMttkrp, OrderLimit) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  RandomTensorSpec eight;
  eight.dims = {3, 4, 2, 5, 3, 2, 4, 3};
  eight.nnz = 2500;
  eight.seed = 22;
  const spt_coo_s x8 = random_coo(dtype_of<T>(), eight);
  check_hbcsf_modes<T>(x8, 16, 5, "order 8", {0, 3, 7});
  if (::testing::Test::HasFatalFailure()) return;
  RandomTensorSpec nine;
  nine.dims = {3, 2, 2, 3, 2, 2, 3, 2, 4};
  nine.nnz = 600;
  nine.seed = 23;
  const spt_coo_s x9 = random_coo(dtype_of<T>(), nine);
  std::vector<std::string> log_lines;
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CUDA;
  ctx.verbosity = 2;
  ctx.log = record_log_line;
  ctx.log_data = &log_lines;
  const auto factors = random_factors<T>(x9.dims, 8, 9);
  const auto refs = crefs(factors);
  const spt_hbcsf_s h = make_hbcsf(x9, 1, {2, 8, 1}, 0);
  DenseMatrix<T> out(x9.dims[1], 8);
  SPT_DISPATCH(ctx, mttkrp_hbcsf, h, refs.data(), out.ref());
  expect_close_to_reference(reference_mttkrp(x9, factors, 1), reference_mttkrp(x9, factors, 1, true), out, "order 9");
  bool noted = false;
  for (const std::string& line : log_lines)
    noted = noted || line.find("note: HB-CSF MTTKRP runs on the CPU") != std::string::npos;
  EXPECT_TRUE(noted) << "order 9 should say it runs on the CPU";
  EXPECT_TRUE(h.device_cache == nullptr);
}

TYPED_TEST(CudaHbcsfMttkrp, DataTensors) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  int checked = 0;
  for (const char* name : kDataTensors) {
    spt_coo_s x;
    if (!read_data_tensor<T>(name, &x) || x.order() < 3) continue;
    for (spt_nnz rank : {spt_nnz(16), spt_nnz(32)}) {
      check_hbcsf_modes<T>(x, rank, 3 + rank, name);
      if (::testing::Test::HasFatalFailure()) return;
    }
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no data tensors found";
}

// "One tree plus a second kernel": the GPU MTTKRP in every mode of the
// HB-CSF and plain B-CSF of x rooted at each of `roots` (every mode when
// empty), through DeviceKernels::mttkrp_hbcsf_mode (CUDA forced), against
// the float64 HB-CSF reference kernel (mttkrp_hbcsf_mode) on the same handle
// and the float64 COO reference in that mode, for every configuration. The
// root mode is checked too (it runs the root kernels). The output is
// poisoned first: the non-root kernels add onto a zeroed output, so a
// missing zeroing or a missed group shows. Returns how many non-root
// products were checked and the handles' group sizes.
template <typename T>
HbcsfSplits check_hbcsf_nonroot(const spt_coo_s& x, spt_nnz rank, uint64_t seed, const std::string& what,
                                std::vector<uint32_t> roots, int& nonroot_checked) {
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CUDA;
  const auto factors = random_factors<T>(x.dims, rank, seed);
  const std::vector<ConstMatRef<T>> refs = crefs(factors);
  if (roots.empty())
    for (uint32_t m = 0; m < x.order(); ++m) roots.push_back(m);
  std::vector<DenseMatrix<double>> want, scale;
  for (uint32_t m = 0; m < x.order(); ++m) {
    want.push_back(reference_mttkrp(x, factors, m));
    scale.push_back(reference_mttkrp(x, factors, m, /*absolute=*/true));
  }
  HbcsfSplits splits;
  for (uint32_t root : roots)
    for (const HbcsfConfig& c : kHbcsfConfigs)
      for (uint32_t flags : {0u, uint32_t(SPT_HBCSF_PLAIN_BCSF)}) {
        const spt_hbcsf_s h = make_hbcsf(x, root, c, flags);
        splits.split_fibers += h.split_fibers;
        splits.split_slices += h.split_slices;
        splits.coo_nnz += h.coo_nnz();
        splits.csl_nnz += h.csl_nnz();
        for (uint32_t mode = 0; mode < x.order(); ++mode) {
          DenseMatrix<T> out(x.dims[mode], rank);
          for (auto& v : out.values) v = T(12345);
          const bool ran = dispatch::DeviceKernels::mttkrp_hbcsf_mode(ctx, h, refs.data(), mode, out.ref());
          EXPECT_TRUE(ran) << what << ": the GPU kernel did not run (order " << x.order() << ")";
          if (!ran) return splits;
          const std::string where = cat(what, flags ? " B-CSF" : " HB-CSF", " fiber ", c.fiber_threshold, " split ",
                                        c.slice_split_nnz, " bin ", c.slice_bin_min_nnz, " rank ", rank, " root ",
                                        root, " mode ", mode);
          expect_close_to_reference(reference_mttkrp_hbcsf_mode(h, factors, mode),
                                    reference_mttkrp_hbcsf_mode(h, factors, mode, /*absolute=*/true), out,
                                    where + " (HB-CSF reference)");
          expect_close_to_reference(want[mode], scale[mode], out, where);
          if (::testing::Test::HasFailure()) return splits;
          if (mode != root) ++nonroot_checked;
        }
      }
  return splits;
}

// Every non-root mode of trees rooted at every mode (and the root through
// the same entry), on the random tensors of orders 3..6, the pathological
// shapes of the tests above (one enormous slice, one enormous fiber, all
// singleton fibers, short modes with empty slices) and order 8.
TYPED_TEST(CudaHbcsfMttkrp, NonRootModesMatchReference) {
  SKIP_WITHOUT_DEVICE();
  using T = TypeParam;
  std::vector<std::pair<std::string, spt_coo_s>> tensors;
  for (const RandomTensorSpec& spec : standard_specs())
    if (spec.dims.size() >= 3) tensors.emplace_back(cat("random order ", spec.dims.size()), random_coo(dtype_of<T>(), spec));
  tensors.emplace_back("one enormous slice", one_enormous_slice<T>());
  for (uint32_t order : {3u, 4u})
    tensors.emplace_back(cat("one enormous fiber, order ", order), one_enormous_fiber<T>(order));
  tensors.emplace_back("all singleton fibers", all_singleton_fibers<T>());
  {
    RandomTensorSpec shortm;
    shortm.dims = {2, 1, 500, 2};
    shortm.nnz = 800;
    shortm.seed = 36;
    RandomTensorSpec sparse;
    sparse.dims = {5000, 10, 12};
    sparse.nnz = 300;
    sparse.seed = 37;
    RandomTensorSpec five;
    five.dims = {1, 2, 30, 2, 40};
    five.nnz = 1200;
    five.seed = 38;
    five.duplicates = true;
    for (const RandomTensorSpec& spec : {shortm, sparse, five})
      tensors.emplace_back(cat("short modes, order ", spec.dims.size()), random_coo(dtype_of<T>(), spec));
  }
  int nonroot_checked = 0;
  HbcsfSplits total;
  for (const auto& [what, x] : tensors)
    for (spt_nnz rank : kHbcsfRanks) {
      const HbcsfSplits s = check_hbcsf_nonroot<T>(x, rank, 70 + rank, what, {}, nonroot_checked);
      if (::testing::Test::HasFailure()) return;
      total.split_fibers += s.split_fibers;
      total.split_slices += s.split_slices;
      total.coo_nnz += s.coo_nnz;
      total.csl_nnz += s.csl_nnz;
    }
  RandomTensorSpec eight;
  eight.dims = {3, 4, 2, 5, 3, 2, 4, 3};
  eight.nnz = 2500;
  eight.seed = 22;
  const spt_coo_s x8 = random_coo(dtype_of<T>(), eight);
  check_hbcsf_nonroot<T>(x8, 16, 5, "order 8", {0, 7}, nonroot_checked);
  if (::testing::Test::HasFailure()) return;
  // Every group's non-root path ran.
  EXPECT_GT(nonroot_checked, 0);
  EXPECT_GT(total.split_fibers, 0u);
  EXPECT_GT(total.split_slices, 0u);
  EXPECT_GT(total.coo_nnz, 0u);
  EXPECT_GT(total.csl_nnz, 0u);
}

// The CPU counterpart of the non-root kernels (same tree walk), on any
// machine: every mode of trees rooted at every mode, HB-CSF and plain
// B-CSF, every configuration, 1 and 3 threads, against the float64 COO
// reference; the output is poisoned first (the kernel must overwrite it).
TYPED_TEST(CudaHbcsfMttkrp, CpuModeKernelMatchesReference) {
  using T = TypeParam;
  int nonroot = 0;
  for (const RandomTensorSpec& spec : standard_specs()) {
    if (spec.dims.size() < 3) continue;
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    for (spt_nnz rank : {spt_nnz(1), spt_nnz(16), spt_nnz(33)}) {
      const auto factors = random_factors<T>(x.dims, rank, 80 + rank);
      const std::vector<ConstMatRef<T>> refs = crefs(factors);
      std::vector<DenseMatrix<double>> want, scale;
      for (uint32_t m = 0; m < x.order(); ++m) {
        want.push_back(reference_mttkrp(x, factors, m));
        scale.push_back(reference_mttkrp(x, factors, m, /*absolute=*/true));
      }
      for (uint32_t root = 0; root < x.order(); ++root)
        for (const HbcsfConfig& c : kHbcsfConfigs)
          for (uint32_t flags : {0u, uint32_t(SPT_HBCSF_PLAIN_BCSF)}) {
            const spt_hbcsf_s h = make_hbcsf(x, root, c, flags);
            for (uint32_t mode = 0; mode < x.order(); ++mode)
              for (int threads : {1, 3}) {
                DenseMatrix<T> out(x.dims[mode], rank);
                for (auto& v : out.values) v = T(12345);
                kernels::cpu::mttkrp_hbcsf_mode(kernels::Exec{threads}, h, refs.data(), mode, out.ref());
                expect_close_to_reference(want[mode], scale[mode], out,
                                          cat("CPU order ", x.order(), flags ? " B-CSF" : " HB-CSF", " fiber ",
                                              c.fiber_threshold, " split ", c.slice_split_nnz, " rank ", rank,
                                              " root ", root, " mode ", mode, " threads ", threads));
                if (::testing::Test::HasFailure()) return;
                if (mode != root) ++nonroot;
              }
          }
    }
  }
  EXPECT_GT(nonroot, 0);
  spt_hbcsf_s h;
  {
    RandomTensorSpec spec;
    spec.dims = {6, 7, 8};
    spec.nnz = 100;
    spec.seed = 43;
    h = make_hbcsf(random_coo(dtype_of<T>(), spec), 2, {4, 8, 2}, 0);
  }
  const auto factors = random_factors<T>(h.dims, 2, 44);
  const auto refs = crefs(factors);
  DenseMatrix<T> out(6, 2);
  try {
    kernels::cpu::mttkrp_hbcsf_mode(kernels::Exec{1}, h, refs.data(), 3, out.ref());
    ADD_FAILURE() << "mode 3 of an order-3 tensor should be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_INVALID_ARGUMENT);
  }
}

// spt_mttkrp_hbcsf's kernel for any mode (mttkrp_hbcsf_mode) through the
// dispatcher on each backend: the reference kernel (REFERENCE: the tree
// decoded to COO) against the float64 COO reference, then the OpenMP kernel
// (CPU) and, when a device is present, the GPU kernel (CUDA forced) against
// the reference kernel's output. Every mode of trees rooted at every mode,
// HB-CSF and plain B-CSF; outputs are poisoned first.
TYPED_TEST(CudaHbcsfMttkrp, ModeKernelEveryBackendMatchesReferenceKernel) {
  using T = TypeParam;
  spt_context_s reference_ctx, cpu_ctx, cuda_ctx;
  reference_ctx.backend = SPT_BACKEND_REFERENCE;
  cpu_ctx.backend = SPT_BACKEND_CPU;
  cpu_ctx.threads = 3;
  cuda_ctx.backend = SPT_BACKEND_CUDA;
  const bool device = have_device();
  int checked = 0;
  for (const RandomTensorSpec& spec : standard_specs()) {
    if (spec.dims.size() < 3 || spec.dims.size() > 6) continue;
    const spt_coo_s x = random_coo(dtype_of<T>(), spec);
    const spt_nnz rank = 7;
    const auto factors = random_factors<T>(x.dims, rank, 90 + spec.seed);
    const std::vector<ConstMatRef<T>> refs = crefs(factors);
    for (uint32_t root = 0; root < x.order(); ++root)
      for (uint32_t flags : {0u, uint32_t(SPT_HBCSF_PLAIN_BCSF)}) {
        const spt_hbcsf_s h = make_hbcsf(x, root, kHbcsfConfigs[1], flags);
        for (uint32_t mode = 0; mode < x.order(); ++mode) {
          const std::string what =
              cat("order ", x.order(), flags ? " B-CSF" : " HB-CSF", " root ", root, " mode ", mode);
          const DenseMatrix<double> scale = reference_mttkrp(x, factors, mode, /*absolute=*/true);
          DenseMatrix<T> reference(x.dims[mode], rank);
          for (auto& v : reference.values) v = T(12345);
          SPT_DISPATCH(reference_ctx, mttkrp_hbcsf_mode, h, refs.data(), mode, reference.ref());
          expect_close_to_reference(reference_mttkrp(x, factors, mode), scale, reference, what + " reference");
          DenseMatrix<double> want(x.dims[mode], rank);
          for (size_t i = 0; i < want.values.size(); ++i) want.values[i] = double(reference.values[i]);
          std::vector<spt_context_s*> backends{&cpu_ctx};
          if (device) backends.push_back(&cuda_ctx);
          for (spt_context_s* ctx : backends) {
            DenseMatrix<T> out(x.dims[mode], rank);
            for (auto& v : out.values) v = T(12345);
            SPT_DISPATCH(*ctx, mttkrp_hbcsf_mode, h, refs.data(), mode, out.ref());
            expect_close_to_reference(want, scale, out,
                                      what + (ctx == &cuda_ctx ? " CUDA" : " CPU") + " against the reference kernel");
          }
          if (::testing::Test::HasFailure()) return;
          ++checked;
        }
      }
  }
  EXPECT_GT(checked, 0);
}

// A mode out of range is refused before any work (no device needed).
TEST(CudaHbcsfApi, NonRootModeOutOfRangeIsRefused) {
  RandomTensorSpec spec;
  spec.dims = {6, 7, 8};
  spec.nnz = 100;
  spec.seed = 41;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const spt_hbcsf_s h = make_hbcsf(x, 1, {4, 8, 2}, 0);
  const auto factors = random_factors<double>(x.dims, 4, 42);
  const auto refs = crefs(factors);
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CUDA;
  DenseMatrix<double> out(8, 4);
  try {
    dispatch::DeviceKernels::mttkrp_hbcsf_mode(ctx, h, refs.data(), 3, out.ref());
    ADD_FAILURE() << "mode 3 of an order-3 tensor should be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_INVALID_ARGUMENT);
  }
}

// Through the C API: the device copy is cached on the handle, reused, gone
// with the handle; a struct copy (same cache pointer, other arrays) gets
// its own copy.
TEST(CudaHbcsfApi, CacheOnTheHandleAndInvalidation) {
  SKIP_WITHOUT_DEVICE();
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  ASSERT_EQ(spt_context_set_backend(ctx, SPT_BACKEND_CUDA), SPT_OK) << spt_last_error(ctx);
  RandomTensorSpec spec;
  spec.dims = {40, 30, 20};
  spec.nnz = 5000;
  const spt_nnz rank = 24;
  auto factors = random_factors<double>(spec.dims, rank, 77);
  std::vector<spt_matrix*> handles;
  for (auto& f : factors) {
    spt_matrix* m = nullptr;
    ASSERT_EQ(spt_matrix_wrap(ctx, SPT_FLOAT64, f.rows, f.cols, SPT_ROW_MAJOR, f.values.data(), f.cols, &m), SPT_OK);
    handles.push_back(m);
  }
  auto run_and_check = [&](const spt_hbcsf* h, const spt_coo_s& x, const std::string& what) {
    spt_matrix* out = nullptr;
    ASSERT_EQ(spt_matrix_create(ctx, SPT_FLOAT64, x.dims[1], rank, SPT_COL_MAJOR, &out), SPT_OK);
    ASSERT_EQ(spt_mttkrp_hbcsf(ctx, h, handles.data(), spt::test::served_mode(h), out), SPT_OK) << spt_last_error(ctx);
    const DenseMatrix<double> want = reference_mttkrp(x, factors, 1);
    for (spt_nnz i = 0; i < want.rows; ++i)
      for (spt_nnz j = 0; j < want.cols; ++j)
        ASSERT_TRUE(close(want(i, j), out->at<double>(i, j), 1e-10)) << what << " (" << i << "," << j << ")";
    spt_matrix_free(out);
  };
  for (uint64_t seed : {1u, 2u}) {
    spec.seed = seed;
    const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
    spt_hbcsf* h = nullptr;
    ASSERT_EQ(spt_hbcsf_from_coo(ctx, &x, spt::test::HbcsfOptions(1), &h), SPT_OK) << spt_last_error(ctx);
    EXPECT_TRUE(h->device_cache == nullptr);
    run_and_check(h, x, cat("seed ", seed, " first call"));
    ASSERT_TRUE(h->device_cache != nullptr) << "the device copy should be cached on the handle";
    std::shared_ptr<void> cached = h->device_cache;
    run_and_check(h, x, cat("seed ", seed, " second call"));
    EXPECT_EQ(h->device_cache, cached) << "the cached copy should be reused";
    if (seed == 2) {
      spt_hbcsf_s copy = *h;
      EXPECT_EQ(copy.device_cache, cached);
      run_and_check(&copy, x, "struct copy");
      EXPECT_NE(copy.device_cache, cached) << "a copy with other arrays must get its own device copy";
    }
    const std::weak_ptr<void> watch = cached;
    cached.reset();
    spt_hbcsf_free(h);
    EXPECT_TRUE(watch.expired()) << "the device copy must go with the handle";
  }
  for (spt_matrix* m : handles) spt_matrix_free(m);
  spt_context_free(ctx);
}

// SPT_CUDA_MEMORY_LIMIT makes the upload not fit: AUTO runs the CPU kernel
// with a note, CUDA forced is a DEVICE error naming the memory.
TEST(CudaHbcsfApi, OutOfMemoryFallsBackUnderAutoAndFailsUnderCuda) {
  SKIP_WITHOUT_DEVICE();
  RandomTensorSpec spec;
  spec.dims = {40, 30, 20};
  spec.nnz = 4000;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const spt_hbcsf_s h = make_hbcsf(x, 0, {4, 8, 2}, 0);
  const spt_nnz rank = 8;
  const auto factors = random_factors<double>(x.dims, rank, 4);
  const std::vector<ConstMatRef<double>> refs = crefs(factors);
  ScopedEnv limit("SPT_CUDA_MEMORY_LIMIT", "1000");
  std::vector<std::string> log_lines;
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_AUTO;
  ctx.verbosity = 1;
  ctx.log = record_log_line;
  ctx.log_data = &log_lines;
  DenseMatrix<double> out(x.dims[0], rank);
  SPT_DISPATCH(ctx, mttkrp_hbcsf, h, refs.data(), out.ref());
  const DenseMatrix<double> want = reference_mttkrp(x, factors, 0);
  for (spt_nnz i = 0; i < want.rows; ++i)
    for (spt_nnz j = 0; j < want.cols; ++j) ASSERT_TRUE(close(want(i, j), out(i, j), 1e-12));
  bool noted = false;
  for (const std::string& line : log_lines)
    noted = noted || line.find("note: HB-CSF MTTKRP runs on the CPU: the CUDA device is out of memory") !=
                         std::string::npos;
  EXPECT_TRUE(noted) << "AUTO should say why it fell back";
  EXPECT_TRUE(h.device_cache == nullptr);
  ctx.backend = SPT_BACKEND_CUDA;
  try {
    SPT_DISPATCH(ctx, mttkrp_hbcsf, h, refs.data(), out.ref());
    FAIL() << "HB-CSF MTTKRP with CUDA forced should fail when the tensor does not fit";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_DEVICE) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
}

// CPU-only machines (CI): CUDA forced is a DEVICE error; AUTO runs the CPU
// kernel (and leaves no device cache).
TEST(CudaHbcsfApi, WithoutDeviceForcedFailsAndAutoRunsOnCpu) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present; this checks the CPU-only behaviour";
  RandomTensorSpec spec;
  spec.dims = {20, 15, 10};
  spec.nnz = 800;
  const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
  const spt_hbcsf_s h = make_hbcsf(x, 2, {4, 8, 2}, 0);
  const auto factors = random_factors<double>(x.dims, 4, 2);
  const std::vector<ConstMatRef<double>> refs = crefs(factors);
  DenseMatrix<double> out(x.dims[2], 4);
  spt_context_s ctx;
  ctx.backend = SPT_BACKEND_CUDA;
  try {
    SPT_DISPATCH(ctx, mttkrp_hbcsf, h, refs.data(), out.ref());
    FAIL() << "HB-CSF MTTKRP with CUDA forced and no device should fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), SPT_ERR_DEVICE) << e.what();
  }
  ctx.backend = SPT_BACKEND_AUTO;
  SPT_DISPATCH(ctx, mttkrp_hbcsf, h, refs.data(), out.ref());
  const DenseMatrix<double> want = reference_mttkrp(x, factors, 2);
  for (spt_nnz i = 0; i < want.rows; ++i)
    for (spt_nnz j = 0; j < want.cols; ++j) ASSERT_TRUE(close(want(i, j), out(i, j), 1e-12));
  EXPECT_TRUE(h.device_cache == nullptr);
}

}  // namespace
}  // namespace spt::test
