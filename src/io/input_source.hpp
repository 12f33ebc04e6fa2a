// The bytes of an input file, however they are stored: a plain file is
// read with pread (binary formats) or memory-mapped (text); a gzip/xz/zstd
// file (detected by magic bytes, not by extension) is decompressed into one
// buffer first. Open and read failures are SPT_ERR_IO with the path and the
// system's reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/buffer.hpp"
#include "sptensor/sptensor.h"

namespace spt::io {

class InputSource {
 public:
  // Opens `path`; `threads` is used by the xz decoder.
  InputSource(const std::string& path, int threads);
  ~InputSource();
  InputSource(const InputSource&) = delete;
  InputSource& operator=(const InputSource&) = delete;

  const std::string& path() const { return path_; }
  // Size of the (decompressed) content in bytes.
  uint64_t size() const { return size_; }
  spt_compression compression() const { return compression_; }

  // Copy n bytes at `offset` into dst; fails with SPT_ERR_PARSE if the
  // content is shorter ("truncated"). Safe to call from several threads.
  void read_at(uint64_t offset, void* dst, size_t n) const;

  // The whole content in memory (maps a plain file on first use). Valid
  // while this object lives. Not thread safe on the first call.
  const char* bytes();

  // The whole content with shared ownership, for zero-copy loads: the
  // mapping (or decompressed buffer) then lives as long as the last owner,
  // independently of this object. bytes() stays valid too.
  std::shared_ptr<const char> share_bytes();

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  spt_compression compression_ = SPT_COMPRESS_NONE;
  buffer<char> content_;       // decompressed data, or a non-regular file read whole
  bool in_memory_ = false;     // content_ holds the data
  void* map_ = nullptr;        // mmap of a plain file
  std::shared_ptr<const char> shared_;  // set once share_bytes() took over map_/content_
};

}  // namespace spt::io
