// spt_cpd_als_take (issue 25: peak memory of a CP-ALS run): the same result
// as spt_cpd_als bit for bit, on every format and policy, with the tensor
// freed in every outcome; and, on CSF, a heap high-water mark below
// spt_cpd_als's by at least a third of the COO (the COO is freed before
// the trees after the first are built, which then read a view of the first
// tree holding (order - 1) index words per nonzero instead of the COO's
// order index words and a value).
//
// This executable replaces the global operator new (as test_build_memory)
// to count live heap bytes and their maximum (common/heap_counter.hpp); the
// hook is test-only.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <ostream>

#include "common/c_handles.hpp"
#include "common/heap_counter.hpp"
#include "common/test_util.hpp"
#include "core/coo.hpp"
#include "core/ktensor.hpp"
#include "sptensor/sptensor.h"

namespace {

using spt::test::ContextPtr;
using spt::test::cpu_context;
using spt::test::KtensorPtr;

struct TakeCase {
  std::vector<spt_index> dims;
  spt_dtype dtype;
  spt_tensor_format format;
  spt_csf_policy policy;
  bool duplicates;
};

void PrintTo(const TakeCase& c, std::ostream* os) {
  *os << "order " << c.dims.size() << ", " << (c.dtype == SPT_FLOAT32 ? "float32" : "float64") << ", format "
      << static_cast<int>(c.format) << ", csf policy " << static_cast<int>(c.policy)
      << (c.duplicates ? ", repeated coordinates" : "");
}

spt_coo* new_tensor(const TakeCase& c, spt_nnz nnz) {
  spt::test::RandomTensorSpec spec;
  spec.dims = c.dims;
  spec.nnz = nnz;
  spec.seed = 25;
  spec.duplicates = c.duplicates;
  return new spt_coo_s(spt::test::random_coo(c.dtype, spec));
}

spt_cpd_options options_of(const TakeCase& c) {
  spt_cpd_options opts;
  EXPECT_EQ(spt_cpd_options_init(&opts), SPT_OK);
  opts.rank = 8;
  opts.max_iters = 6;
  opts.tol = 0;
  opts.seed = 7;
  opts.format = c.format;
  opts.csf_policy = c.policy;
  return opts;
}

// Bytes of the model's lambda and factors, for a bitwise comparison.
std::vector<unsigned char> model_bytes(const spt_ktensor_s& k) {
  std::vector<unsigned char> out;
  const size_t value = k.dtype() == SPT_FLOAT32 ? 4 : 8;
  auto append = [&](const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    out.insert(out.end(), b, b + n);
  };
  append(k.lambda.data(), value * k.rank);
  for (uint32_t m = 0; m < k.order(); ++m) append(k.factors[m]->data(), value * k.rank * k.dims[m]);
  return out;
}

// A case's runs: a 2-thread CPU context and the case's options.
class TakeTest : public ::testing::TestWithParam<TakeCase> {
 protected:
  const TakeCase& c = GetParam();
  ContextPtr ctx = cpu_context(2);
  const spt_cpd_options opts = options_of(c);
};

class CpdTake : public TakeTest {};

TEST_P(CpdTake, SameResultAsCpdAlsAndTheTensorIsFreed) {
  // Enough nonzeros for AUTO to advise CSF rather than its small-tensor HiCOO.
  const spt_nnz nnz = 40000;

  std::unique_ptr<spt_coo_s> kept(new_tensor(c, nnz));
  spt_ktensor* raw = nullptr;
  const spt_status expected_status = spt_cpd_als(ctx.get(), kept.get(), &opts, &raw);
  ASSERT_GE(expected_status, 0) << spt_last_error(ctx.get());
  KtensorPtr expected(raw);

  spt_coo* taken = new_tensor(c, nnz);
  raw = nullptr;
  const spt_status status = spt_cpd_als_take(ctx.get(), &taken, &opts, &raw);
  EXPECT_EQ(taken, nullptr);
  ASSERT_EQ(status, expected_status) << spt_last_error(ctx.get());
  KtensorPtr got(raw);

  const spt_ktensor_s& a = *expected;
  const spt_ktensor_s& b = *got;
  EXPECT_EQ(a.fit_history, b.fit_history);
  EXPECT_EQ(a.fit, b.fit);
  EXPECT_EQ(a.iterations, b.iterations);
  EXPECT_EQ(model_bytes(a), model_bytes(b));
}

INSTANTIATE_TEST_SUITE_P(
    Formats, CpdTake,
    ::testing::Values(TakeCase{{300, 400, 500}, SPT_FLOAT32, SPT_TENSOR_FORMAT_AUTO, SPT_CSF_AUTO, false},
                      TakeCase{{300, 400, 500}, SPT_FLOAT64, SPT_TENSOR_FORMAT_AUTO, SPT_CSF_AUTO, true},
                      TakeCase{{300, 400, 500}, SPT_FLOAT32, SPT_TENSOR_FORMAT_CSF, SPT_CSF_ONEMODE, true},
                      TakeCase{{300, 400, 500}, SPT_FLOAT64, SPT_TENSOR_FORMAT_CSF, SPT_CSF_TWOMODE, false},
                      TakeCase{{300, 400, 500}, SPT_FLOAT32, SPT_TENSOR_FORMAT_CSF, SPT_CSF_ALLMODE, true},
                      TakeCase{{60, 70, 80, 90}, SPT_FLOAT32, SPT_TENSOR_FORMAT_CSF, SPT_CSF_ALLMODE, true},
                      TakeCase{{60, 70, 80, 90}, SPT_FLOAT64, SPT_TENSOR_FORMAT_CSF, SPT_CSF_TWOMODE, false},
                      TakeCase{{60, 70, 80, 90}, SPT_FLOAT32, SPT_TENSOR_FORMAT_CSF, SPT_CSF_MEMOIZED, false},
                      TakeCase{{300, 400, 500}, SPT_FLOAT32, SPT_TENSOR_FORMAT_COO, SPT_CSF_AUTO, false},
                      TakeCase{{300, 400, 500}, SPT_FLOAT64, SPT_TENSOR_FORMAT_HICOO, SPT_CSF_AUTO, false}));

// The heap's high-water mark of a run on CSF (the tensor counted as live
// before the call in both runs): at least a third of the COO's bytes lower
// with spt_cpd_als_take, where the last tree's build would otherwise sit
// beside the COO.
class CpdTakeMemory : public TakeTest {};

TEST_P(CpdTakeMemory, PeakIsLowerByAThirdOfTheCoo) {
  const spt_nnz nnz = 200000;
  const double coo_bytes =
      double(nnz) * (double(c.dims.size()) * sizeof(spt_index) + (c.dtype == SPT_FLOAT32 ? 4.0 : 8.0));

  std::unique_ptr<spt_coo_s> kept(new_tensor(c, nnz));
  const HeapWatch kept_run;
  spt_ktensor* raw = nullptr;
  ASSERT_GE(spt_cpd_als(ctx.get(), kept.get(), &opts, &raw), 0) << spt_last_error(ctx.get());
  const long long peak_kept = kept_run.peak_above();
  spt_ktensor_free(raw);
  kept.reset();

  spt_coo* taken = new_tensor(c, nnz);
  const HeapWatch taken_run;
  raw = nullptr;
  ASSERT_GE(spt_cpd_als_take(ctx.get(), &taken, &opts, &raw), 0) << spt_last_error(ctx.get());
  const long long peak_taken = taken_run.peak_above();
  // Everything the call took is gone but the model.
  const long long after = taken_run.live_above();
  spt_ktensor_free(raw);

  std::printf("%s, %zu modes: peak above the tensor %lld bytes (spt_cpd_als) vs %lld (take), COO %.0f bytes, %lld "
              "bytes left after take\n",
              c.dtype == SPT_FLOAT32 ? "float32" : "float64", c.dims.size(), peak_kept, peak_taken, coo_bytes, after);
  EXPECT_LE(static_cast<double>(peak_taken), static_cast<double>(peak_kept) - coo_bytes / 3.0);
  EXPECT_LT(static_cast<double>(after), -0.9 * coo_bytes);
}

INSTANTIATE_TEST_SUITE_P(
    Csf, CpdTakeMemory,
    ::testing::Values(TakeCase{{300, 400, 500}, SPT_FLOAT32, SPT_TENSOR_FORMAT_CSF, SPT_CSF_ALLMODE, false},
                      TakeCase{{300, 400, 500}, SPT_FLOAT64, SPT_TENSOR_FORMAT_AUTO, SPT_CSF_AUTO, false},
                      TakeCase{{60, 70, 80, 90}, SPT_FLOAT32, SPT_TENSOR_FORMAT_CSF, SPT_CSF_ALLMODE, false},
                      TakeCase{{300, 400, 500}, SPT_FLOAT32, SPT_TENSOR_FORMAT_CSF, SPT_CSF_TWOMODE, false}));

TEST(CpdTakeErrors, NullArgumentsAndBadOptions) {
  ContextPtr ctx = cpu_context(1);
  spt_cpd_options opts;
  ASSERT_EQ(spt_cpd_options_init(&opts), SPT_OK);
  spt_ktensor* raw = nullptr;
  EXPECT_EQ(spt_cpd_als_take(ctx.get(), nullptr, &opts, &raw), SPT_ERR_INVALID_ARGUMENT);
  spt_coo* none = nullptr;
  EXPECT_EQ(spt_cpd_als_take(ctx.get(), &none, &opts, &raw), SPT_ERR_INVALID_ARGUMENT);
  // Rank 0 is refused, and the tensor is freed all the same (a leak would
  // show in the sanitizer runs).
  TakeCase c{{30, 40, 50}, SPT_FLOAT64, SPT_TENSOR_FORMAT_AUTO, SPT_CSF_AUTO, false};
  spt_coo* x = new_tensor(c, 1000);
  opts.rank = 0;
  EXPECT_EQ(spt_cpd_als_take(ctx.get(), &x, &opts, &raw), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(x, nullptr);
  EXPECT_EQ(raw, nullptr);
  x = new_tensor(c, 1000);
  EXPECT_EQ(spt_cpd_als_take(ctx.get(), &x, nullptr, &raw), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(x, nullptr);
}

}  // namespace
