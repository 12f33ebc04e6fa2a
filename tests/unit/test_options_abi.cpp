// The options-init contract: a caller compiled against an older header has
// a shorter struct, and spt_X_options_init (the header macro) must never
// write past it. Checked for every options struct with the first-release
// size and with a size between fields, plus the exported function symbols.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "sptensor/sptensor.h"

namespace {

constexpr unsigned char kCanary = 0xAB;

// Calls init(buffer, size) on a canary-filled buffer larger than the
// struct and checks: status OK, struct_size == size, nothing written past
// `size` bytes, and the written prefix equals the same bytes of a full init.
template <typename Options, typename SizedInit>
void expect_prefix_only(SizedInit init, size_t size, const char* what) {
  std::vector<unsigned char> buffer(sizeof(Options) + 64, kCanary);
  Options* opts = reinterpret_cast<Options*>(buffer.data());
  ASSERT_EQ(init(opts, size), SPT_OK) << what << " size " << size;
  EXPECT_EQ(opts->struct_size, size) << what;
  for (size_t b = size; b < buffer.size(); ++b)
    ASSERT_EQ(buffer[b], kCanary) << what << ": byte " << b << " written past struct_size " << size;
  Options full;
  std::memset(&full, 0, sizeof full);
  ASSERT_EQ(init(&full, sizeof full), SPT_OK);
  EXPECT_EQ(full.struct_size, sizeof full);
  EXPECT_EQ(std::memcmp(buffer.data() + sizeof(size_t), reinterpret_cast<unsigned char*>(&full) + sizeof(size_t),
                        size - sizeof(size_t)),
            0)
      << what << ": the prefix differs from the full defaults";
}

template <typename Options, typename SizedInit>
void check_struct(SizedInit init, size_t first_release_size, const char* what) {
  expect_prefix_only<Options>(init, first_release_size, what);
  expect_prefix_only<Options>(init, sizeof(Options), what);
  // Too small for any release, and NULL: INVALID_ARGUMENT, nothing written.
  std::vector<unsigned char> buffer(sizeof(Options), kCanary);
  EXPECT_EQ(init(reinterpret_cast<Options*>(buffer.data()), first_release_size - 1), SPT_ERR_INVALID_ARGUMENT) << what;
  for (unsigned char c : buffer) ASSERT_EQ(c, kCanary) << what << ": written on error";
  EXPECT_EQ(init(nullptr, sizeof(Options)), SPT_ERR_INVALID_ARGUMENT) << what;
}

}  // namespace

TEST(OptionsAbi, InitWritesOnlyTheCallersStruct) {
  check_struct<spt_cpd_options>(spt_cpd_options_init_size, offsetof(spt_cpd_options, format), "cpd");
  check_struct<spt_read_options>(spt_read_options_init_size, offsetof(spt_read_options, copy_binary), "read");
  check_struct<spt_write_options>(spt_write_options_init_size, sizeof(spt_write_options), "write");
  check_struct<spt_cp_apr_options>(spt_cp_apr_options_init_size, offsetof(spt_cp_apr_options, format), "cp_apr");
  check_struct<spt_tucker_options>(spt_tucker_options_init_size, sizeof(spt_tucker_options), "tucker");
  check_struct<spt_reorder_options>(spt_reorder_options_init_size, sizeof(spt_reorder_options), "reorder");
  check_struct<spt_hicoo_options>(spt_hicoo_options_init_size, sizeof(spt_hicoo_options), "hicoo");
  check_struct<spt_hbcsf_options>(spt_hbcsf_options_init_size, sizeof(spt_hbcsf_options), "hbcsf");
  check_struct<spt_hls_options>(spt_hls_options_init_size, offsetof(spt_hls_options, precision), "hls");
  check_struct<spt_csf_options>(spt_csf_options_init_size, sizeof(spt_csf_options), "csf");
  check_struct<spt_fcoo_options>(spt_fcoo_options_init_size, sizeof(spt_fcoo_options), "fcoo");
}

TEST(OptionsAbi, MacroAndExportedSymbolAgree) {
  // The macro passes the caller's sizeof; the parenthesised name calls the
  // exported function (what an FFI binds), which writes the whole struct.
  spt_cpd_options by_macro, by_symbol;
  std::memset(&by_macro, 0x5A, sizeof by_macro);
  std::memset(&by_symbol, 0x33, sizeof by_symbol);
  ASSERT_EQ(spt_cpd_options_init(&by_macro), SPT_OK);
  ASSERT_EQ((spt_cpd_options_init)(&by_symbol), SPT_OK);
  EXPECT_EQ(by_macro.struct_size, sizeof(spt_cpd_options));
  EXPECT_EQ(by_macro.rank, by_symbol.rank);
  EXPECT_EQ(by_macro.max_iters, by_symbol.max_iters);
  EXPECT_EQ(by_macro.tol, by_symbol.tol);
  EXPECT_EQ(by_macro.format, by_symbol.format);
  EXPECT_EQ(by_macro.memo_budget_bytes, by_symbol.memo_budget_bytes);
  spt_read_options r;
  ASSERT_EQ((spt_read_options_init)(&r), SPT_OK);
  EXPECT_EQ(r.struct_size, sizeof r);
  EXPECT_EQ(r.index_base, 1);
}

// A consumer given the first-release struct size uses defaults for the
// fields that struct lacks (here CP-ALS's format and memo budget).
TEST(OptionsAbi, FirstReleaseStructRunsWithDefaults) {
  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  const spt_index dims[] = {3, 3, 3};
  const spt_index ind[] = {0, 1, 2, 0, 1, 2, 0, 1, 2, 1, 2, 0};  // 4 nonzeros, mode-major
  const double vals[] = {1.0, 2.0, 3.0, 4.0};
  spt_coo* x = nullptr;
  ASSERT_EQ(spt_coo_create_from_arrays(ctx, SPT_FLOAT64, 3, dims, 4, ind, 4, 0, vals, 0, &x), SPT_OK)
      << spt_last_error(ctx);
  std::vector<unsigned char> buffer(sizeof(spt_cpd_options), kCanary);
  auto* opts = reinterpret_cast<spt_cpd_options*>(buffer.data());
  ASSERT_EQ(spt_cpd_options_init_size(opts, offsetof(spt_cpd_options, format)), SPT_OK);
  opts->rank = 2;
  opts->max_iters = 3;
  spt_ktensor* k = nullptr;
  EXPECT_GE(spt_cpd_als(ctx, x, opts, &k), 0) << spt_last_error(ctx);
  spt_ktensor_free(k);
  spt_coo_free(x);
  spt_context_free(ctx);
}
