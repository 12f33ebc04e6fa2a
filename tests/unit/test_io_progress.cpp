// Progress of the streamed text reader while a chunk is still being read
// (decompressed): the calling thread reports the input's fraction while it
// waits for the reader thread, not only once per chunk, so a large
// compressed file does not leave a progress bar standing still for seconds.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "io/tns_text_reader.hpp"
#include "sptensor/sptensor.h"

namespace {

struct Reports {
  std::vector<double> fractions;
  bool other_stage = false;
};

void record(void* data, const char* stage, double fraction) {
  auto* r = static_cast<Reports*>(data);
  if (std::string(stage) != "read") r->other_stage = true;
  r->fractions.push_back(fraction);
}

TEST(TextStreamProgress, ReportsWhileAChunkIsBeingRead) {
  // About 4 MiB of text of unknown size: the reader asks for chunks of
  // 64 KiB, 128 KiB, ... (7 chunks). The producer is slow (a few ms per
  // 16 KiB, as a decompressor of a large file is per MiB), so reading takes
  // over a second; one report per chunk would be at most 9 reports.
  std::string text;
  for (int i = 0; text.size() < (size_t(4) << 20); ++i)
    text += std::to_string(i % 1000 + 1) + " " + std::to_string(i % 977 + 1) + " 1.5\n";
  std::atomic<size_t> position{0};
  auto produce = [&](char* dst, size_t n) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const size_t at = position.load();
    const size_t k = std::min({n, size_t(16) << 10, text.size() - at});
    std::memcpy(dst, text.data() + at, k);
    position.store(at + k);
    return k;
  };
  spt::io::StreamHint hint;  // size unknown, as for a compressed file
  hint.fraction = [&] { return static_cast<double>(position.load()) / static_cast<double>(text.size()); };

  spt_context* ctx = nullptr;
  ASSERT_EQ(spt_context_create(&ctx), SPT_OK);
  ASSERT_EQ(spt_context_set_threads(ctx, 1), SPT_OK);
  Reports reports;
  ASSERT_EQ(spt_context_set_progress(ctx, record, &reports), SPT_OK);
  spt::io::ReadOptions opts;
  spt::io::TextLayout layout;
  spt_coo_s x = spt::io::read_tns_text_stream(*ctx, produce, hint, "slow.tns", opts, &layout);
  spt_context_free(ctx);

  EXPECT_GT(x.nnz, 0u);
  EXPECT_FALSE(reports.other_stage);
  ASSERT_FALSE(reports.fractions.empty());
  EXPECT_EQ(reports.fractions.front(), 0.0);
  EXPECT_EQ(reports.fractions.back(), 1.0);
  for (size_t i = 1; i < reports.fractions.size(); ++i)
    EXPECT_GE(reports.fractions[i], reports.fractions[i - 1]) << "report " << i;
  EXPECT_GE(reports.fractions.size(), 12u) << "progress was reported only once per chunk";
}

}  // namespace
