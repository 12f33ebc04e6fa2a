// Streamed, bounded input: text and compressed files are parsed through a
// fixed buffer; files are read by copy (no signal when a file changes
// under the reader); trailing bytes after a compressed stream and CR-only
// line endings are named. Each case checks the status AND the message.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <new>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/read_fixture.hpp"
#include "common/summaries.hpp"
#include "core/error.hpp"
#include "io/spt_binary.hpp"
#include "sptensor/sptensor.h"

namespace fs = std::filesystem;

// The largest single allocation (operator new, which the library's arrays
// and buffers use) while g_track_allocations is set.
namespace {
std::atomic<bool> g_track_allocations{false};
std::atomic<size_t> g_largest_allocation{0};
}  // namespace

void* operator new(size_t n) {
  if (g_track_allocations.load(std::memory_order_relaxed)) {
    size_t seen = g_largest_allocation.load(std::memory_order_relaxed);
    while (n > seen && !g_largest_allocation.compare_exchange_weak(seen, n)) {
    }
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace {

class IoStream : public spt::test::ReadFixture {
 protected:
  IoStream() : ReadFixture("spt_test_io_stream") {}

  void SetUp() override {
    ReadFixture::SetUp();
    signal(SIGPIPE, SIG_IGN);  // FIFO writers see EPIPE when the reader stops early
  }

  spt_nnz nnz() const {
    return spt_test::info_of(x_).nnz;
  }

  // A FIFO fed by `write_all` on a thread (joined by the returned guard).
  struct Fifo {
    std::string path;
    std::thread writer;
    ~Fifo() {
      if (writer.joinable()) writer.join();
    }
  };
  // Writes `pieces()` into a new FIFO until it returns an empty string or
  // the reader goes away.
  template <typename Producer>
  void fifo(Fifo& f, const std::string& name, Producer pieces) {
    f.path = file(name);
    ASSERT_EQ(mkfifo(f.path.c_str(), 0600), 0) << std::strerror(errno);
    std::string path = f.path;
    f.writer = std::thread([path, pieces]() mutable {
      int fd = ::open(path.c_str(), O_WRONLY);
      if (fd < 0) return;
      for (;;) {
        std::string piece = pieces();
        if (piece.empty()) break;
        size_t done = 0;
        while (done < piece.size()) {
          ssize_t r = ::write(fd, piece.data() + done, piece.size() - done);
          if (r < 0 && errno == EINTR) continue;
          if (r <= 0) {
            ::close(fd);
            return;
          }
          done += static_cast<size_t>(r);
        }
      }
      ::close(fd);
    });
  }
};

// ---------------------------------------------------------------------------
// Trailing data after a compressed stream: one rule for gzip, xz and zstd.
// ---------------------------------------------------------------------------

TEST_F(IoStream, TrailingGarbageAfterEveryCompressorIsAParseErrorNamingTheByte) {
  for (const char* ext : {"gz", "xz", "zst"}) {
    for (const char* inner : {"tns", "sptb"}) {
      const std::string name = std::string("t.") + inner + "." + ext;
      const std::string bytes = slurp(valid_file(name));
      const std::string p = put(std::string("garbage.") + inner + "." + ext, bytes + "garbage after the stream\n");
      EXPECT_EQ(read(p), SPT_ERR_PARSE) << ext << " " << inner << ": " << message_;
      expect_message({"trailing data after the", "at byte " + std::to_string(bytes.size())});
    }
  }
}

TEST_F(IoStream, ConcatenatedStreamsOfEveryCompressorReadAsOne) {
  for (const char* ext : {"gz", "xz", "zst"}) {
    const std::string bytes = slurp(valid_file(std::string("one.tns.") + ext));
    const std::string p = put(std::string("two.tns.") + ext, bytes + bytes);
    ASSERT_EQ(read(p), SPT_OK) << ext << ": " << message_;
    EXPECT_EQ(nnz(), 6u) << ext;
  }
}

TEST_F(IoStream, XzStreamPaddingIsAcceptedButNotAPartialPad) {
  const std::string bytes = slurp(valid_file("p.tns.xz"));
  ASSERT_EQ(read(put("pad4.tns.xz", bytes + std::string(8, '\0'))), SPT_OK) << message_;
  EXPECT_EQ(read(put("pad3.tns.xz", bytes + std::string(3, '\0'))), SPT_ERR_PARSE);
  expect_message({"trailing data after the xz stream at byte " + std::to_string(bytes.size())});
}

TEST_F(IoStream, TruncatedCompressedStreamsAreParseErrors) {
  for (const char* ext : {"gz", "xz", "zst"}) {
    const std::string bytes = slurp(valid_file(std::string("whole.tns.") + ext));
    EXPECT_EQ(read(put(std::string("cut.tns.") + ext, bytes.substr(0, bytes.size() - 5))), SPT_ERR_PARSE) << ext;
    expect_message({"truncated"});
  }
}

// ---------------------------------------------------------------------------
// Messages for input that is not .tns text
// ---------------------------------------------------------------------------

TEST_F(IoStream, CrOnlyLineEndingsAreNamed) {
  EXPECT_EQ(read(put("mac.tns", "1 1 1 1.5\r2 2 2 2.5\r3 3 3 3.5\r")), SPT_ERR_PARSE);
  expect_message({"mac.tns:1", "line endings are CR only", "convert"});
  // CRLF stays valid.
  ASSERT_EQ(read(put("dos.tns", "1 1 1 1.5\r\n2 2 2 2.5\r\n")), SPT_OK) << message_;
  EXPECT_EQ(nnz(), 2u);
}

TEST_F(IoStream, NulBytesFailFastWithTheirOffset) {
  EXPECT_EQ(read(put("nul.tns", std::string("1 1 1.0\n") + std::string(64, '\0'))), SPT_ERR_PARSE);
  expect_message({"NUL byte at byte offset 8"});
}

TEST_F(IoStream, DevZeroFailsAtOnce) {
  if (access("/dev/zero", R_OK) != 0) GTEST_SKIP() << "no /dev/zero";
  EXPECT_EQ(read("/dev/zero"), SPT_ERR_PARSE);
  expect_message({"/dev/zero", "NUL byte at byte offset 0"});
}

TEST_F(IoStream, OverlongLinesFailWithTheirOffsetButCommentsOfAnyLengthAreSkipped) {
  const std::string head = "1 1 1.0\n";
  // An entry line over the 1 MiB limit (leading zeros keep the index valid).
  EXPECT_EQ(read(put("long_entry.tns", head + "2 " + std::string(size_t(2) << 20, '0') + "2 2.0\n")),
            SPT_ERR_PARSE);
  expect_message({"long_entry.tns:2", "byte offset 8", "1048576-byte limit"});
  // A line that never ends.
  EXPECT_EQ(read(put("no_newline.tns", head + std::string(size_t(3) << 20, 'x'))), SPT_ERR_PARSE);
  expect_message({"byte offset 8", "1048576-byte limit"});
  // A 3 MiB comment line is skipped without a limit.
  ASSERT_EQ(read(put("long_comment.tns", head + "# " + std::string(size_t(3) << 20, 'c') + "\n2 2 2.0\n")), SPT_OK)
      << message_;
  EXPECT_EQ(nnz(), 2u);
}

// More text than the read buffer (4 MiB): the chunk seams, comment lines
// across them and an unterminated last line give the in-memory answer.
TEST_F(IoStream, TextLargerThanTheReadBufferParsesAcrossChunks) {
  std::string text;
  text.reserve(size_t(40) << 20);
  double sum = 0.0;
  spt_nnz count = 0;
  for (int i = 0; text.size() < (size_t(40) << 20); ++i) {
    if (i % 1000 == 7) text += "# a comment line between entries, " + std::string(200, 'c') + "\n";
    if (i % 5000 == 11) text += "\n   \n";
    text += std::to_string(i % 997 + 1) + " " + std::to_string(i % 13 + 1) + " " + std::to_string(i % 4) + ".5\n";
    sum += (i % 4) + 0.5;
    ++count;
  }
  text += "5 5 9.5";  // no final newline
  sum += 9.5;
  ++count;
  opts_.duplicates = SPT_DUPLICATES_KEEP;
  for (int threads : {1, 3}) {
    spt_context_set_threads(ctx_, threads);
    ASSERT_EQ(read(put("big.tns", text)), SPT_OK) << message_;
    ASSERT_EQ(nnz(), count);
    double got = 0.0;
    const void* pv = nullptr;
    ASSERT_EQ(spt_coo_values(x_, &pv), SPT_OK);
    const double* v = static_cast<const double*>(pv);
    for (spt_nnz k = 0; k < count; ++k) got += v[k];
    EXPECT_DOUBLE_EQ(got, sum);
    spt_index dims[2];
    ASSERT_EQ(spt_coo_dims(x_, dims), SPT_OK);
    EXPECT_EQ(dims[0], 997u);
    EXPECT_EQ(dims[1], 13u);
  }
}

// ---------------------------------------------------------------------------
// Non-seekable input (FIFO): streamed, bounded, and read by copy.
// ---------------------------------------------------------------------------

TEST_F(IoStream, TextFromAFifoIsStreamed) {
  Fifo f;
  int sent = 0;
  fifo(f, "text.fifo", [&sent]() -> std::string {
    if (sent == 3) return "";
    ++sent;
    std::string s = "# comment block\n";
    for (int i = 1; i <= 1000; ++i) s += std::to_string(i) + " " + std::to_string(sent) + " 1.0\n";
    return s;
  });
  ASSERT_EQ(read(f.path), SPT_OK) << message_;
  EXPECT_EQ(nnz(), 3000u);
}

TEST_F(IoStream, BlankLinesWithoutProgressFailEarly) {
  Fifo f;
  size_t sent = 0;
  fifo(f, "blank.fifo", [&sent]() -> std::string {
    if (sent > (size_t(300) << 20)) return "";
    std::string s = sent == 0 ? "1 1 1.0\n" : "";
    s += std::string(size_t(1) << 20, '\n');
    sent += s.size();
    return s;
  });
  EXPECT_EQ(read(f.path), SPT_ERR_PARSE);
  expect_message({"no progress", "bytes of blank lines", "byte offset"});
}

TEST_F(IoStream, SptbFromAFifoShorterThanItsHeaderSaysIsAParseError) {
  const std::string whole = slurp(valid_file("v.sptb"));
  Fifo f;
  bool done = false;
  fifo(f, "short.fifo", [&]() -> std::string {
    if (done) return "";
    done = true;
    return whole.substr(0, whole.size() - 12);
  });
  EXPECT_EQ(read(f.path), SPT_ERR_PARSE);
  expect_message({"truncated"});
}

TEST_F(IoStream, SptbFromAFifoReadsWhole) {
  const std::string whole = slurp(valid_file("w.sptb"));
  Fifo f;
  bool done = false;
  fifo(f, "whole.fifo", [&]() -> std::string {
    if (done) return "";
    done = true;
    return whole;
  });
  ASSERT_EQ(read(f.path), SPT_OK) << message_;
  EXPECT_EQ(nnz(), 3u);
}

// ---------------------------------------------------------------------------
// Read buffers sized to the input: a small text allocates little (the
// fuzzers read thousands of small inputs a second), a stream's chunks grow,
// and text crossing many small chunks (also a long line) reads the same.
// ---------------------------------------------------------------------------

TEST_F(IoStream, SmallTextAllocatesNoLargeReadBuffers) {
  const std::string p = put("small.tns", "1 1 1.5\n2 3 2.5\n3 2 -1\n");
  Fifo f;
  bool done = false;
  fifo(f, "small.fifo", [&]() -> std::string {
    if (done) return "";
    done = true;
    return "1 1 1.5\n2 3 2.5\n3 2 -1\n";
  });
  // A regular file: buffers of its size. A pipe: the raw input's 1 MiB
  // buffer and a first chunk of 64 KiB.
  for (const auto& [path, limit] : {std::pair<std::string, size_t>{p, size_t(64) << 10},
                                    std::pair<std::string, size_t>{f.path, size_t(2) << 20}}) {
    g_largest_allocation = 0;
    g_track_allocations = true;
    const spt_status s = read(path);
    g_track_allocations = false;
    ASSERT_EQ(s, SPT_OK) << message_;
    EXPECT_EQ(nnz(), 3u);
    EXPECT_LE(g_largest_allocation.load(), limit) << path;
  }
}

TEST_F(IoStream, StreamedTextInGrowingChunksReadsAsTheFile) {
  // About 4 MB: chunks of 64 KiB, 128 KiB, ... up to 4 MiB, lines cut at
  // every chunk end; a skipped comment line longer than kMaxLineBytes and an
  // entry line of almost 1 MiB (leading blanks) carried across chunks.
  std::string text = "# " + std::string(size_t(3) << 20 >> 1, 'c') + "\n";
  const spt_nnz n = 200000;
  for (spt_nnz k = 1; k <= n; ++k) {
    if (k == 150000) text += std::string(1000000, ' ');
    text += std::to_string(k) + " " + std::to_string(k % 5 + 1) + " " + std::to_string(k) + ".5\n";
  }
  text += "# " + std::string(size_t(3) << 20, 'c') + "\n";
  const std::string p = put("grow.tns", text);
  Fifo f;
  size_t at = 0;
  fifo(f, "grow.fifo", [&]() -> std::string {
    const size_t k = std::min<size_t>(100000, text.size() - at);
    std::string piece = text.substr(at, k);
    at += k;
    return piece;
  });
  for (const std::string& path : {p, f.path}) {
    ASSERT_EQ(read(path), SPT_OK) << path << ": " << message_;
    ASSERT_EQ(nnz(), n) << path;
    const spt_index* i0 = nullptr;
    const spt_index* i1 = nullptr;
    const void* v = nullptr;
    ASSERT_EQ(spt_coo_indices(x_, 0, &i0), SPT_OK);
    ASSERT_EQ(spt_coo_indices(x_, 1, &i1), SPT_OK);
    ASSERT_EQ(spt_coo_values(x_, &v), SPT_OK);
    const double* d = static_cast<const double*>(v);
    spt_nnz wrong = 0;
    for (spt_nnz k = 0; k < n; ++k)
      wrong += i0[k] != k || i1[k] != (k + 1) % 5 || d[k] != static_cast<double>(k + 1) + 0.5;
    EXPECT_EQ(wrong, 0u) << path;
  }
}

// ---------------------------------------------------------------------------
// A file truncated while it is read: SPT_ERR_IO, never SIGBUS. The
// progress callback runs inside spt_read after the file was opened and
// sized, so truncating there is a deterministic "truncated during the read".
// ---------------------------------------------------------------------------

struct Truncator {
  std::string path;
  bool done = false;
  bool mapped = false;  // the file showed up in /proc/self/maps during the read
  static void callback(void* self, const char*, double) {
    auto* t = static_cast<Truncator*>(self);
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line))
      if (line.find(t->path) != std::string::npos) t->mapped = true;
    if (!t->done) {
      t->done = true;
      EXPECT_EQ(::truncate(t->path.c_str(), 16), 0);
    }
  }
};

TEST_F(IoStream, TextTruncatedDuringTheReadIsAnIoError) {
  std::string text;
  for (int i = 1; i <= 20000; ++i) text += std::to_string(i) + " 1 2.0\n";
  Truncator t{put("shrinks.tns", text)};
  ASSERT_EQ(spt_context_set_progress(ctx_, Truncator::callback, &t), SPT_OK);
  EXPECT_EQ(read(t.path), SPT_ERR_IO);
  expect_message({"shrinks.tns", "shrank while being read"});
  EXPECT_FALSE(t.mapped) << "text must be read by copy, not mapped";
}

TEST_F(IoStream, SptbTruncatedDuringTheReadIsAnIoError) {
  std::vector<spt_index> ind;
  const spt_nnz n = 200000;
  std::vector<double> v(n, 1.5);
  for (spt_nnz k = 0; k < n; ++k) ind.push_back(static_cast<spt_index>(k));
  for (spt_nnz k = 0; k < n; ++k) ind.push_back(static_cast<spt_index>(k % 7));
  const spt_index dims[] = {static_cast<spt_index>(n), 7};
  spt_coo* t0 = nullptr;
  ASSERT_EQ(spt_coo_create_from_arrays(ctx_, SPT_FLOAT64, 2, dims, n, ind.data(), n, 0, v.data(), 0, &t0), SPT_OK);
  const std::string p = file("shrinks.sptb");
  ASSERT_EQ(spt_write(ctx_, t0, p.c_str(), nullptr), SPT_OK);
  spt_coo_free(t0);
  Truncator t{p};
  ASSERT_EQ(spt_context_set_progress(ctx_, Truncator::callback, &t), SPT_OK);
  const spt_status s = read(p);
  EXPECT_TRUE(s == SPT_ERR_IO || s == SPT_ERR_PARSE) << spt_status_string(s) << ": " << message_;
  EXPECT_NE(s, SPT_OK);
  EXPECT_FALSE(t.mapped) << ".sptb must be read by copy unless map_binary is set";
}


// The parallel (MPI) .sptb reader's pieces: each rank opens the file, reads
// the header, then digests its checksum blocks and reads its nonzeros. A
// file truncated between those steps is SPT_ERR_IO ("shrank while being
// read"), never SIGBUS, and the file is never mapped.
class SptbRangeTruncated : public IoStream {
 protected:
  // Writes an order-2 .sptb of n nonzeros (several checksum blocks).
  std::string write_sptb(const std::string& name, spt_nnz n, spt_dtype dtype) {
    std::vector<spt_index> ind;
    std::vector<double> v(n, 1.5);
    for (spt_nnz k = 0; k < n; ++k) ind.push_back(static_cast<spt_index>(k));
    for (spt_nnz k = 0; k < n; ++k) ind.push_back(static_cast<spt_index>(k % 7));
    const spt_index dims[] = {static_cast<spt_index>(n), 7};
    spt_coo* t0 = nullptr;
    EXPECT_EQ(spt_coo_create_from_arrays(ctx_, SPT_FLOAT64, 2, dims, n, ind.data(), n, 0, v.data(), 0, &t0), SPT_OK);
    spt_coo* t = nullptr;
    EXPECT_EQ(spt_coo_convert_dtype(ctx_, t0, dtype, &t), SPT_OK);
    spt_coo_free(t0);
    const std::string p = file(name);
    EXPECT_EQ(spt_write(ctx_, t, p.c_str(), nullptr), SPT_OK);
    spt_coo_free(t);
    return p;
  }
  bool mapped(const std::string& p) const {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line))
      if (line.find(p) != std::string::npos) return true;
    return false;
  }
  // Runs f, expecting spt::Error SPT_ERR_IO naming the file as shrunk.
  template <typename F>
  void expect_shrank(const std::string& p, F&& f) {
    try {
      f();
      ADD_FAILURE() << "no error after the file shrank";
    } catch (const spt::Error& e) {
      EXPECT_EQ(e.code(), SPT_ERR_IO) << e.what();
      const std::string m = e.what();
      EXPECT_NE(m.find(p), std::string::npos) << m;
      EXPECT_NE(m.find("shrank while being read"), std::string::npos) << m;
    }
  }
};

TEST_F(SptbRangeTruncated, BlockDigestsAfterTruncationAreAnIoError) {
  const std::string p = write_sptb("digests.sptb", 200000, SPT_FLOAT64);
  spt::io::InputSource in(p, 2);
  const spt::io::SptbHeader h = spt::io::read_sptb_header(in);
  ASSERT_GT(h.blocks(), 4u);
  // Intact: the digests of every block give the stored checksum.
  spt::io::verify_sptb_checksum(h, spt::io::sptb_block_digests(*ctx_, in, h, 0, h.blocks()), p);
  ASSERT_EQ(::truncate(p.c_str(), 4096), 0);
  expect_shrank(p, [&] { spt::io::sptb_block_digests(*ctx_, in, h, 1, h.blocks()); });
  EXPECT_FALSE(mapped(p)) << "the parallel reader must read by copy";
}

TEST_F(SptbRangeTruncated, RangeReadAfterTruncationIsAnIoError) {
  for (spt_dtype dtype : {SPT_FLOAT64, SPT_FLOAT32}) {
    for (spt_dtype want : {SPT_FLOAT64, SPT_FLOAT32}) {
      const std::string p = write_sptb("range.sptb", 200000, dtype);
      spt::io::InputSource in(p, 2);
      const spt::io::SptbHeader h = spt::io::read_sptb_header(in);
      spt::io::ReadOptions opts;
      opts.dtype = want;
      // Intact: the second half of the nonzeros, with its values.
      spt_coo_s part = spt::io::read_spt_bin_range(*ctx_, in, h, opts, 100000, 200000);
      ASSERT_EQ(part.nnz, 100000u);
      EXPECT_EQ(part.ind[0][0], 100000u);
      EXPECT_EQ(part.ind[0][99999], 199999u);
      EXPECT_EQ(part.ind[1][5], (100000u + 5) % 7);
      EXPECT_EQ(part.dtype(), want);
      if (want == SPT_FLOAT64)
        EXPECT_EQ(static_cast<const double*>(part.val)[99999], 1.5);
      else
        EXPECT_EQ(static_cast<const float*>(part.val)[99999], 1.5f);
      // Truncated inside the values: the index arrays are still there.
      ASSERT_EQ(::truncate(p.c_str(), static_cast<off_t>(h.section_offsets[3] + 1000)), 0);
      expect_shrank(p, [&] { spt::io::read_spt_bin_range(*ctx_, in, h, opts, 100000, 200000); });
      // Truncated to the header: the index arrays are gone too.
      ASSERT_EQ(::truncate(p.c_str(), 64), 0);
      expect_shrank(p, [&] { spt::io::read_spt_bin_range(*ctx_, in, h, opts, 0, 200000); });
      EXPECT_FALSE(mapped(p)) << "the parallel reader must read by copy";
    }
  }
}

}  // namespace
