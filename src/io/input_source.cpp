#include "io/input_source.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace spt::io {

namespace {

// Read up to n bytes at offset; returns the count (short only at end of file).
size_t pread_full(int fd, void* dst, size_t n, uint64_t offset, const std::string& path) {
  char* p = static_cast<char*>(dst);
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, p + done, std::min<size_t>(n - done, size_t(1) << 30), static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(SPT_ERR_IO, "reading '", path, "' failed: ", std::strerror(errno));
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

[[noreturn]] void shrank(const std::string& path, uint64_t expected, uint64_t got) {
  fail(SPT_ERR_IO, "'", path, "' shrank while being read: ", expected, " bytes when opened, ", got,
       " now; read it again once nothing writes to it");
}

}  // namespace

InputSource::InputSource(const std::string& path, int threads) : path_(path), threads_(threads) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail(SPT_ERR_IO, "cannot open '", path, "': ", std::strerror(errno));
  struct stat st;
  if (fstat(fd_, &st) != 0) fail(SPT_ERR_IO, "cannot stat '", path, "': ", std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(SPT_ERR_IO, "'", path, "' is a directory, not a tensor file");
  regular_ = S_ISREG(st.st_mode);
  if (regular_) {
    file_size_ = static_cast<uint64_t>(st.st_size);
    unsigned char head[8] = {};
    const size_t got = pread_full(fd_, head, sizeof(head), 0, path_);
    compression_ = detect_compression(head, got);
    if (compression_ == SPT_COMPRESS_NONE) {
      random_access_ = true;
      size_ = file_size_;
      return;
    }
    raw_ = std::make_unique<RawInput>(fd_, path_, file_size_);
  } else {
    raw_ = std::make_unique<RawInput>(fd_, path_, kUnknownSize);
    const size_t got = raw_->ensure(8);
    compression_ = detect_compression(raw_->data(), got);
  }
  if (compression_ != SPT_COMPRESS_NONE) decoder_ = make_decoder(compression_, *raw_, threads_, path_);
}

InputSource::~InputSource() {
  if (map_ && !shared_) munmap(map_, size_);
  if (fd_ >= 0) ::close(fd_);
}

size_t InputSource::read_source(char* dst, size_t n) {
  if (random_access_) {
    if (read_pos_ >= size_) return 0;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(n, size_ - read_pos_));
    const size_t got = pread_full(fd_, dst, want, read_pos_, path_);
    read_pos_ += got;
    if (got < want) shrank(path_, size_, read_pos_);
    return got;
  }
  if (decoder_) return decoder_->read(dst, n);
  size_t out = 0;
  while (out < n) {
    const size_t a = raw_->ensure(1);
    if (a == 0) break;
    const size_t take = std::min(a, n - out);
    std::memcpy(dst + out, raw_->data(), take);
    raw_->consume(take);
    out += take;
  }
  return out;
}

size_t InputSource::peek(void* dst, size_t n) {
  if (n > (size_t(1) << 20)) fail(SPT_ERR_INTERNAL, "InputSource::peek of ", n, " bytes");
  if (in_memory_) {
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n, size_));
    std::memcpy(dst, content_.data(), k);
    return k;
  }
  if (head_pos_ != 0) fail(SPT_ERR_INTERNAL, "InputSource::peek after read");
  while (head_.size() < n) {
    const size_t have = head_.size();
    head_.resize(n);
    const size_t got = read_source(head_.data() + have, n - have);
    head_.resize(have + got);
    if (got == 0) break;
  }
  const size_t k = std::min(n, head_.size());
  std::memcpy(dst, head_.data(), k);
  return k;
}

size_t InputSource::read(char* dst, size_t n) {
  size_t out = 0;
  if (head_pos_ < head_.size()) {
    out = std::min(n, head_.size() - head_pos_);
    std::memcpy(dst, head_.data() + head_pos_, out);
    head_pos_ += out;
  }
  while (out < n) {
    const size_t got = read_source(dst + out, n - out);
    if (got == 0) break;
    out += got;
  }
  return out;
}

double InputSource::fraction() const {
  if (!regular_ || file_size_ == 0) return -1.0;
  const uint64_t at = random_access_ ? read_pos_ : raw_->offset();
  return std::min(1.0, static_cast<double>(at) / static_cast<double>(file_size_));
}

void InputSource::load(uint64_t limit) {
  if (random_access_ || in_memory_) return;
  const uint64_t cap = limit == kUnknownSize ? limit : limit + 1;
  size_t used = 0;
  content_.resize(static_cast<size_t>(std::min<uint64_t>(cap, size_t(1) << 20)));
  for (;;) {
    if (used == content_.size()) {
      if (used >= cap) break;
      // Grow by doubling up to the cap: memory follows the decoded bytes.
      buffer<char> bigger;
      bigger.resize(static_cast<size_t>(std::min<uint64_t>(cap, uint64_t(used) * 2)));
      std::memcpy(bigger.data(), content_.data(), used);
      content_.swap(bigger);
    }
    // In pieces, so that load_progress_ is called every few MiB.
    const size_t got = read(content_.data() + used, std::min(content_.size() - used, size_t(4) << 20));
    if (got == 0) break;
    used += got;
    if (load_progress_) {
      // The decoded share of the size the header declares when there is one
      // (exact; a decoder may read its input well ahead), else the share of
      // the raw file consumed.
      const double f = limit != kUnknownSize && limit > 0
                           ? std::min(1.0, static_cast<double>(used) / static_cast<double>(limit))
                           : fraction();
      if (f >= 0.0) load_progress_(f);
    }
  }
  content_.resize(used);
  size_ = used;
  in_memory_ = true;
  head_ = {};
  decoder_.reset();
  raw_.reset();
  ::close(fd_);
  fd_ = -1;
}

void InputSource::read_at(uint64_t offset, void* dst, size_t n) const {
  if (size_ == kUnknownSize) fail(SPT_ERR_INTERNAL, "InputSource::read_at on a stream that was not loaded");
  if (offset > size_ || n > size_ - offset)
    fail(SPT_ERR_PARSE, "'", path_, "' is truncated: needs ", offset + n, " bytes, has ", size_);
  if (n == 0) return;
  if (shared_) {
    std::memcpy(dst, shared_.get() + offset, n);
  } else if (in_memory_) {
    std::memcpy(dst, content_.data() + offset, n);
  } else if (map_) {
    std::memcpy(dst, static_cast<const char*>(map_) + offset, n);
  } else if (pread_full(fd_, dst, n, offset, path_) != n) {
    shrank(path_, size_, offset);
  }
}

const char* InputSource::bytes() {
  if (shared_) return shared_.get();
  if (!random_access_ && !in_memory_) load(kUnknownSize);
  if (in_memory_) return content_.data();
  if (!map_ && size_ > 0) {
    void* m = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd_, 0);
    if (m == MAP_FAILED) fail(SPT_ERR_IO, "cannot map '", path_, "': ", std::strerror(errno));
    madvise(m, size_, MADV_SEQUENTIAL);
    map_ = m;
  }
  return static_cast<const char*>(map_);
}

std::shared_ptr<const char> InputSource::share_bytes() {
  if (shared_) return shared_;
  if (!random_access_ && !in_memory_) load(kUnknownSize);
  if (in_memory_) {
    // Move the buffer into the owner; read_at keeps working through it.
    auto owner = std::make_shared<buffer<char>>(std::move(content_));
    shared_ = std::shared_ptr<const char>(owner, owner->data());
    return shared_;
  }
  if (!map_ && size_ > 0) {
    // No MAP_POPULATE here: the zero-copy reader's threads fault the pages
    // in parallel while hashing them, which measured faster than
    // populating on one thread first (docs/design-measurements.md,
    // "Streamed text reader").
    void* m = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (m == MAP_FAILED) fail(SPT_ERR_IO, "cannot map '", path_, "': ", std::strerror(errno));
    map_ = m;
  }
  const char* p = static_cast<const char*>(map_);
  const uint64_t n = size_;
  void* map = map_;
  shared_ = std::shared_ptr<const char>(p, [map, n](const char*) {
    if (map) munmap(map, n);
  });
  return shared_;
}

}  // namespace spt::io
