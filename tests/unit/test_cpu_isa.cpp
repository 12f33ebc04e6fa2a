// The choice of CPU kernel copy (spt_context_set_cpu_isa, src/kernels/cpu/variant.hpp):
// the setting's validation, what spt_context_backend_info reports, that the
// dispatcher runs the copy the context resolves to, and that a CP-ALS gives
// the same fit on either copy.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/test_util.hpp"
#include "dispatch/dispatch.hpp"
#include "sptensor/sptensor.h"

namespace spt::test {
namespace {

struct ContextHandle {
  spt_context* ctx = nullptr;
  ContextHandle() { EXPECT_EQ(SPT_OK, spt_context_create(&ctx)); }
  ~ContextHandle() { spt_context_free(ctx); }
};

spt_cpu_isa reported_isa(spt_context* ctx) {
  spt_backend_info info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(SPT_OK, spt_context_backend_info(ctx, &info));
  return info.cpu_isa;
}

TEST(CpuIsa, SettingIsValidatedAndReported) {
  ContextHandle h;
  const bool v3 = cpu_isa_available(SPT_CPU_ISA_X86_64_V3);
  spt_cpu_isa isa = SPT_CPU_ISA_MAX_ENUM;
  ASSERT_EQ(SPT_OK, spt_context_get_cpu_isa(h.ctx, &isa));
  EXPECT_EQ(SPT_CPU_ISA_AUTO, isa);
  EXPECT_EQ(v3 ? SPT_CPU_ISA_X86_64_V3 : SPT_CPU_ISA_BASELINE, reported_isa(h.ctx));
  EXPECT_EQ(v3 ? SPT_CPU_ISA_X86_64_V3 : SPT_CPU_ISA_BASELINE, reported_isa(nullptr));

  ASSERT_EQ(SPT_OK, spt_context_set_cpu_isa(h.ctx, SPT_CPU_ISA_BASELINE));
  ASSERT_EQ(SPT_OK, spt_context_get_cpu_isa(h.ctx, &isa));
  EXPECT_EQ(SPT_CPU_ISA_BASELINE, isa);
  EXPECT_EQ(SPT_CPU_ISA_BASELINE, reported_isa(h.ctx));

  const spt_status forced = spt_context_set_cpu_isa(h.ctx, SPT_CPU_ISA_X86_64_V3);
  if (v3) {
    EXPECT_EQ(SPT_OK, forced);
    EXPECT_EQ(SPT_CPU_ISA_X86_64_V3, reported_isa(h.ctx));
  } else {
    EXPECT_EQ(SPT_ERR_UNSUPPORTED, forced);
    EXPECT_NE(nullptr, std::strstr(spt_last_error(h.ctx), "x86-64-v3"));
    EXPECT_EQ(SPT_CPU_ISA_BASELINE, reported_isa(h.ctx));  // unchanged
  }

  const spt_cpu_isa before = v3 ? SPT_CPU_ISA_X86_64_V3 : SPT_CPU_ISA_BASELINE;
  EXPECT_EQ(SPT_ERR_INVALID_ARGUMENT, spt_context_set_cpu_isa(h.ctx, static_cast<spt_cpu_isa>(3)));
  EXPECT_EQ(SPT_ERR_INVALID_ARGUMENT, spt_context_set_cpu_isa(h.ctx, SPT_CPU_ISA_MAX_ENUM));
  EXPECT_EQ(before, reported_isa(h.ctx));
  EXPECT_EQ(SPT_ERR_INVALID_ARGUMENT, spt_context_set_cpu_isa(nullptr, SPT_CPU_ISA_AUTO));
  EXPECT_EQ(SPT_ERR_INVALID_ARGUMENT, spt_context_get_cpu_isa(h.ctx, nullptr));
  ASSERT_EQ(SPT_OK, spt_context_get_cpu_isa(nullptr, &isa));
  EXPECT_EQ(SPT_CPU_ISA_AUTO, isa);
}

// A float32 solve whose fused multiply-adds round differently from the
// baseline's separate ones, so the two copies' results tell them apart.
struct Solve {
  DenseMatrix<float> lower{16, 16};
  DenseMatrix<float> rows = random_matrix<float>(4099, 16, 5);
  Solve() {
    for (spt_nnz r = 0; r < 16; ++r)
      for (spt_nnz s = 0; s <= r; ++s) lower(r, s) = r == s ? 1.5f + 0.1f * r : 0.3f * float((r * 7 + s) % 5) - 0.55f;
  }
};

TEST(CpuIsa, DispatcherRunsTheChosenCopy) {
#if !defined(SPT_HAVE_CPU_X86_64_V3_KERNELS)
  GTEST_SKIP() << "built without the x86-64-v3 copy";
#else
  if (!cpu_isa_available(SPT_CPU_ISA_X86_64_V3)) GTEST_SKIP() << "this CPU does not run x86-64-v3 code";
  Solve base, wide, via_baseline, via_auto;
  kernels::cpu::cholesky_solve_rows(Exec{2}, base.lower.cref(), base.rows.ref());
  kernels::cpu_x86_64_v3::cholesky_solve_rows(Exec{2}, wide.lower.cref(), wide.rows.ref());
  ASSERT_NE(0, std::memcmp(base.rows.values.data(), wide.rows.values.data(), sizeof(float) * base.rows.values.size()))
      << "the two copies gave identical bits: this input no longer tells them apart";
  ContextHandle h;
  ASSERT_EQ(SPT_OK, spt_context_set_threads(h.ctx, 2));
  ASSERT_EQ(SPT_OK, spt_context_set_backend(h.ctx, SPT_BACKEND_CPU));
  ASSERT_EQ(SPT_OK, spt_context_set_cpu_isa(h.ctx, SPT_CPU_ISA_BASELINE));
  SPT_DISPATCH(*h.ctx, cholesky_solve_rows, via_baseline.lower.cref(), via_baseline.rows.ref());
  ASSERT_EQ(SPT_OK, spt_context_set_cpu_isa(h.ctx, SPT_CPU_ISA_AUTO));
  SPT_DISPATCH(*h.ctx, cholesky_solve_rows, via_auto.lower.cref(), via_auto.rows.ref());
  EXPECT_EQ(base.rows.values, via_baseline.rows.values);
  EXPECT_EQ(wide.rows.values, via_auto.rows.values);
  for (size_t k = 0; k < base.rows.values.size(); ++k)
    ASSERT_NEAR(base.rows.values[k], wide.rows.values[k], 1e-4 * (1 + std::abs(base.rows.values[k]))) << k;
#endif
}

// CP-ALS through the C API on each copy: the same fit up to rounding.
TEST(CpuIsa, CpAlsFitsAgree) {
  RandomTensorSpec spec;
  spec.dims = {60, 45, 30};
  spec.nnz = 4000;
  spec.seed = 11;
  for (spt_dtype dtype : {SPT_FLOAT64, SPT_FLOAT32}) {
    std::vector<double> fits;
    for (spt_cpu_isa isa : {SPT_CPU_ISA_BASELINE, SPT_CPU_ISA_AUTO}) {
      ContextHandle h;
      ASSERT_EQ(SPT_OK, spt_context_set_backend(h.ctx, SPT_BACKEND_CPU));
      ASSERT_EQ(SPT_OK, spt_context_set_cpu_isa(h.ctx, isa));
      spt_coo_s x = random_coo(dtype, spec);
      spt_cpd_options opts;
      ASSERT_EQ(SPT_OK, spt_cpd_options_init(&opts));
      opts.rank = 8;
      opts.max_iters = 15;
      opts.tol = 0;
      spt_ktensor* k = nullptr;
      ASSERT_EQ(SPT_WARN_NOT_CONVERGED, spt_cpd_als(h.ctx, &x, &opts, &k)) << spt_last_error(h.ctx);  // tol 0
      double fit = 0.0;
      ASSERT_EQ(SPT_OK, spt_ktensor_result(k, &fit, nullptr, nullptr));
      fits.push_back(fit);
      spt_ktensor_free(k);
    }
    EXPECT_GT(fits[0], 0.0);
    EXPECT_NEAR(fits[0], fits[1], dtype == SPT_FLOAT64 ? 1e-9 : 1e-4) << dtype_name(dtype);
  }
}

}  // namespace
}  // namespace spt::test
