// spt_suggest_format: the rule's three outcomes on tensors built to hit
// them, determinism, the reason text and its truncation, and argument
// errors.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "common/test_util.hpp"
#include "sptensor/sptensor.h"

namespace {

struct Ctx {
  spt_context* ctx = nullptr;
  Ctx() {
    spt_context_create(&ctx);
    spt_context_set_threads(ctx, 2);
  }
  ~Ctx() { spt_context_free(ctx); }
};

spt_coo_s uniform(std::vector<spt_index> dims, spt_nnz nnz, uint64_t seed) {
  spt::test::RandomTensorSpec s;
  s.dims = std::move(dims);
  s.nnz = nnz;
  s.seed = seed;
  s.skewed = false;
  return spt::test::random_coo(SPT_FLOAT32, s);
}

spt_format_advice advise(spt_context* ctx, const spt_coo_s& x, char* buf, size_t cap, spt_status expect = SPT_OK) {
  spt_format_advice a;
  std::memset(&a, 0, sizeof(a));
  a.struct_size = sizeof(a);
  a.reason = buf;
  a.reason_capacity = cap;
  EXPECT_EQ(spt_suggest_format(ctx, &x, 16, &a), expect) << spt_last_error(ctx);
  return a;
}

TEST(FormatAdvice, SmallTensorUsesHicooOrderOneCoo) {
  Ctx c;
  const spt_coo_s x = uniform({50, 60, 70}, 2000, 1);
  char buf[512];
  const spt_format_advice a = advise(c.ctx, x, buf, sizeof(buf));
  EXPECT_EQ(a.format, SPT_TENSOR_FORMAT_HICOO);
  EXPECT_NE(std::string(buf).find("2000 nonzeros"), std::string::npos) << buf;
  EXPECT_GT(a.block_ratio, 0.0);
  const spt_coo_s v = uniform({1000}, 300, 2);
  const spt_format_advice b = advise(c.ctx, v, buf, sizeof(buf));
  EXPECT_EQ(b.format, SPT_TENSOR_FORMAT_COO) << buf;
}

TEST(FormatAdvice, CompressibleFibersChooseCsfAllmode) {
  Ctx c;
  const spt_coo_s x = uniform({64, 64, 64}, 60000, 2);  // ~23% dense: long fibers
  char buf[2048];
  const spt_format_advice a = advise(c.ctx, x, buf, sizeof(buf));
  EXPECT_EQ(a.format, SPT_TENSOR_FORMAT_CSF) << buf;
  EXPECT_EQ(a.csf_policy, SPT_CSF_ALLMODE) << buf;
  EXPECT_EQ(a.block_ratio, 0.0) << "HiCOO statistics are not needed here";
  EXPECT_EQ(a.reason_length, std::strlen(buf));
}

TEST(FormatAdvice, ShortModesOfHighOrderChooseHicoo) {
  Ctx c;
  // Order 6 with modes of 16: the fibers hardly compress (ALLMODE would
  // not fit 4x the COO), but every block of 16^6 is dense.
  const spt_coo_s x = uniform({16, 16, 16, 16, 16, 16}, 60000, 7);
  char buf[2048];
  const spt_format_advice a = advise(c.ctx, x, buf, sizeof(buf));
  EXPECT_EQ(a.format, SPT_TENSOR_FORMAT_HICOO) << buf;
  EXPECT_GT(a.slice_per_block, 0.01) << buf;
  EXPECT_GT(a.block_ratio, 0.0);
}

TEST(FormatAdvice, HypersparseChoosesCsfMemoizedFromOrderFour) {
  Ctx c;
  const spt_index big = spt_index(1) << 30;
  const spt_coo_s x3 = uniform({big, big, big}, 40000, 3);
  const spt_coo_s x4 = uniform({big, big, big, big}, 40000, 4);
  char buf[2048];
  const spt_format_advice a3 = advise(c.ctx, x3, buf, sizeof(buf));
  EXPECT_EQ(a3.format, SPT_TENSOR_FORMAT_CSF) << buf;
  EXPECT_EQ(a3.csf_policy, SPT_CSF_ONEMODE);
  EXPECT_LT(a3.slice_per_block, 0.01);
  const spt_format_advice a4 = advise(c.ctx, x4, buf, sizeof(buf));
  EXPECT_EQ(a4.format, SPT_TENSOR_FORMAT_CSF) << buf;
  EXPECT_EQ(a4.csf_policy, SPT_CSF_MEMOIZED) << buf;
  EXPECT_NE(std::string(buf).find("memoized"), std::string::npos) << buf;
}

TEST(FormatAdvice, DeterministicAndTruncatesReason) {
  Ctx c;
  const spt_coo_s x = uniform({300, 200, 100}, 50000, 5);
  char full[4096], again[4096], tiny[16];
  const spt_format_advice a = advise(c.ctx, x, full, sizeof(full));
  const spt_format_advice b = advise(c.ctx, x, again, sizeof(again));
  EXPECT_EQ(a.format, b.format);
  EXPECT_EQ(a.block_ratio, b.block_ratio);
  EXPECT_STREQ(full, again);
  const spt_format_advice t = advise(c.ctx, x, tiny, sizeof(tiny));
  EXPECT_EQ(t.reason_length, a.reason_length);
  EXPECT_EQ(std::strlen(tiny), sizeof(tiny) - 1);
  EXPECT_EQ(0, std::strncmp(tiny, full, sizeof(tiny) - 1));
  const spt_format_advice none = advise(c.ctx, x, nullptr, 0);  // no text wanted
  EXPECT_EQ(none.format, a.format);
}

TEST(FormatAdvice, RejectsBadArguments) {
  Ctx c;
  const spt_coo_s x = uniform({10, 10}, 20, 6);
  spt_format_advice a;
  std::memset(&a, 0, sizeof(a));
  EXPECT_EQ(spt_suggest_format(c.ctx, &x, 16, &a), SPT_ERR_INVALID_ARGUMENT);  // struct_size 0
  a.struct_size = sizeof(a);
  EXPECT_EQ(spt_suggest_format(c.ctx, nullptr, 16, &a), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_suggest_format(c.ctx, &x, 16, nullptr), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_suggest_format(c.ctx, &x, 0, &a), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(spt_last_error(c.ctx)).find("rank"), std::string::npos);
  a.reason_capacity = 10;
  EXPECT_EQ(spt_suggest_format(c.ctx, &x, 16, &a), SPT_ERR_INVALID_ARGUMENT);
}

}  // namespace
