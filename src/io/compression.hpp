// gzip / xz / zstd: detection by magic bytes, streaming decompression for
// reading, and streaming compression sinks for writing. Each library is
// optional at build time (SPT_HAVE_ZLIB, SPT_HAVE_LZMA, SPT_HAVE_ZSTD);
// without it the calls fail with SPT_ERR_UNSUPPORTED naming the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "io/output_file.hpp"
#include "util/internal_api.hpp"

namespace spt::io {

// Compression of a byte prefix (at least the first 6 bytes when available):
// SPT_COMPRESS_GZIP, _XZ, _ZSTD, or SPT_COMPRESS_NONE.
SPT_INTERNAL_API spt_compression detect_compression(const unsigned char* head, size_t n);

const char* compression_name(spt_compression c);

constexpr uint64_t kUnknownSize = ~uint64_t(0);

// Sequential reader of a file's raw bytes (regular file, pipe or device)
// through a fixed 1 MiB buffer; never maps the file. When the size at open
// is known (`expected_size`, else kUnknownSize), reaching the end earlier
// is SPT_ERR_IO ("shrank while being read").
class RawInput {
 public:
  RawInput(int fd, const std::string& path, uint64_t expected_size);
  // Over bytes in memory (valid while this object lives).
  RawInput(const unsigned char* data, size_t size, const std::string& path);
  // Make at least `want` (at most the buffer size) unread bytes available;
  // fewer only at the end of the file. Returns the count available.
  size_t ensure(size_t want);
  const unsigned char* data() const { return buf_.data() + pos_; }
  size_t avail() const { return end_ - pos_; }
  void consume(size_t n) { pos_ += n; }
  bool at_eof() const { return eof_; }         // nothing beyond avail() is left
  uint64_t offset() const { return base_ + pos_; }  // file offset of data()

 private:
  int fd_ = -1;
  const unsigned char* mem_ = nullptr;  // memory source (fd_ < 0)
  size_t mem_size_ = 0, mem_pos_ = 0;
  std::string path_;
  uint64_t expected_;
  std::vector<unsigned char> buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t base_ = 0;  // file offset of buf_[0]
  bool eof_ = false;
};

// Streaming decompression of everything `raw` holds. Concatenated streams
// (gzip members, xz streams with their padding, zstd and skippable frames)
// decode as one, as the gzip/xz/zstd tools do; any other bytes after the
// last stream fail with SPT_ERR_PARSE "trailing data after the ... stream
// at byte N". Corrupt or truncated input fails with SPT_ERR_PARSE. `path`
// is used in messages only.
class Decoder {
 public:
  virtual ~Decoder() = default;
  // Up to n decompressed bytes into dst; fewer only at the end (0 = done).
  virtual size_t read(char* dst, size_t n) = 0;
};
std::unique_ptr<Decoder> make_decoder(spt_compression kind, RawInput& raw, int threads, const std::string& path);

// Decompress a whole compressed image in memory (same rules as Decoder).
buffer<char> decompress(spt_compression kind, const unsigned char* data, size_t size, int threads,
                        const std::string& path);

// A sink that compresses everything written to it into `out`. finish()
// flushes the compressor (it does not commit `out`).
std::unique_ptr<Sink> make_compressing_sink(spt_compression kind, Sink& out, int threads, const std::string& path);

}  // namespace spt::io
