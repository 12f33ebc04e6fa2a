// The bytes of an input file, however they are stored. A plain (regular,
// uncompressed) file is read by copy: pread for random access, sequential
// reads for streaming; it is mapped only when a caller asks for bytes() or
// share_bytes() (an opt-in: a mapped file that is truncated while in use
// raises SIGBUS). A gzip/xz/zstd file (detected by magic bytes, not by
// extension) and a non-regular file (FIFO, character device) are streams:
// read() decompresses them piece by piece through fixed buffers, and only
// load() holds them whole, up to a limit the caller derives from the
// format's header. Open and read failures are SPT_ERR_IO with the path and
// the system's reason; a regular file that ends before the size it had at
// open is SPT_ERR_IO ("shrank while being read").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/buffer.hpp"
#include "io/compression.hpp"
#include "sptensor/sptensor.h"
#include "util/internal_api.hpp"

namespace spt::io {

class SPT_INTERNAL_API InputSource {
 public:
  // Opens `path`; `threads` is used by the xz decoder.
  InputSource(const std::string& path, int threads);
  ~InputSource();
  InputSource(const InputSource&) = delete;
  InputSource& operator=(const InputSource&) = delete;

  const std::string& path() const { return path_; }
  spt_compression compression() const { return compression_; }
  // A regular uncompressed file: size() and read_at() work without load().
  bool random_access() const { return random_access_; }
  // A regular file (compressed or not): it can be opened and read again.
  bool rereadable() const { return regular_; }
  // Size of the (decompressed) content in bytes: the file's size for a
  // random-access file, the loaded size after load(), else kUnknownSize.
  uint64_t size() const { return size_; }

  // Sequential reading of the (decompressed) content from its start, for
  // any source: up to n bytes into dst, fewer only at the end (0 = end).
  // Not thread safe.
  size_t read(char* dst, size_t n);
  // Copies the first n bytes of the content (fewer if it is shorter) into
  // dst without consuming them for read(); n at most 1 MiB.
  size_t peek(void* dst, size_t n);
  // Share of the raw file consumed by read() so far, in [0, 1], or -1 when
  // the file's size is unknown (a pipe): for progress reports.
  double fraction() const;

  // A stream (compressed or non-regular file): reads the whole content into
  // memory, decoding at most limit + 1 bytes (the memory follows the bytes
  // actually decoded, never a size claimed by the file), so that size()
  // > limit tells the caller there was more than it expected. No-op for a
  // random-access file. Call before any read().
  void load(uint64_t limit);
  // Called by load() after each piece it decoded (on the thread that calls
  // load) with the decoded share of its limit, or fraction() without one:
  // progress while a compressed stream is held whole, which takes seconds
  // for a large file.
  void set_load_progress(std::function<void(double)> on_progress) { load_progress_ = std::move(on_progress); }

  // Copy n bytes at `offset` into dst; fails with SPT_ERR_PARSE if the
  // content is shorter ("truncated"), SPT_ERR_IO if a file shrank after it
  // was opened. Random-access files and loaded streams. Safe to call from
  // several threads.
  void read_at(uint64_t offset, void* dst, size_t n) const;

  // The whole content in memory: a loaded stream's buffer, or a mapping of
  // a random-access file (see the SIGBUS note above); a stream that was not
  // loaded is loaded without a limit first. Valid while this object lives.
  // Not thread safe on the first call.
  const char* bytes();

  // The whole content with shared ownership, for zero-copy loads: the
  // mapping (or loaded buffer) then lives as long as the last owner,
  // independently of this object. bytes() stays valid too.
  std::shared_ptr<const char> share_bytes();

 private:
  size_t read_source(char* dst, size_t n);

  std::string path_;
  int threads_ = 1;
  int fd_ = -1;
  bool regular_ = false;
  bool random_access_ = false;
  uint64_t file_size_ = 0;     // regular files: st_size at open
  uint64_t size_ = kUnknownSize;
  spt_compression compression_ = SPT_COMPRESS_NONE;
  std::unique_ptr<RawInput> raw_;       // streams: the raw bytes
  std::unique_ptr<Decoder> decoder_;    // compressed streams
  uint64_t read_pos_ = 0;               // random access: next read() offset
  buffer<char> head_;                   // peeked bytes not yet returned by read()
  size_t head_pos_ = 0;
  buffer<char> content_;       // a loaded stream
  bool in_memory_ = false;     // content_ holds the data
  void* map_ = nullptr;        // mmap of a plain file
  std::shared_ptr<const char> shared_;  // set once share_bytes() took over map_/content_
  std::function<void(double)> load_progress_;
};

}  // namespace spt::io
