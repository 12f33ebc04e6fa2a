#include "io/input_source.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "io/compression.hpp"

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

// Read a non-seekable file (pipe, character device) to its end.
buffer<char> read_stream(int fd, const std::string& path) {
  buffer<char> data(size_t(1) << 20);
  size_t used = 0;
  for (;;) {
    if (used == data.size()) data.resize(data.size() * 2);
    ssize_t r = ::read(fd, data.data() + used, data.size() - used);
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(SPT_ERR_IO, "reading '", path, "' failed: ", std::strerror(errno));
    }
    if (r == 0) break;
    used += static_cast<size_t>(r);
  }
  data.resize(used);
  return data;
}

}  // namespace

InputSource::InputSource(const std::string& path, int threads) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail(SPT_ERR_IO, "cannot open '", path, "': ", std::strerror(errno));
  struct stat st;
  if (fstat(fd_, &st) != 0) fail(SPT_ERR_IO, "cannot stat '", path, "': ", std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(SPT_ERR_IO, "'", path, "' is a directory, not a tensor file");

  if (S_ISREG(st.st_mode)) {
    size_ = static_cast<uint64_t>(st.st_size);
    unsigned char head[8] = {};
    size_t got = pread_full(fd_, head, sizeof(head), 0, path_);
    compression_ = detect_compression(head, got);
    if (compression_ != SPT_COMPRESS_NONE) {
      // Decompress from a mapping of the compressed file.
      void* m = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd_, 0);
      if (m == MAP_FAILED) fail(SPT_ERR_IO, "cannot map '", path, "': ", std::strerror(errno));
      try {
        content_ = decompress(compression_, static_cast<const unsigned char*>(m), size_, threads, path_);
      } catch (...) {
        munmap(m, size_);
        throw;
      }
      munmap(m, size_);
      in_memory_ = true;
    }
  } else {
    content_ = read_stream(fd_, path_);
    compression_ = detect_compression(reinterpret_cast<const unsigned char*>(content_.data()), content_.size());
    if (compression_ != SPT_COMPRESS_NONE)
      content_ = decompress(compression_, reinterpret_cast<const unsigned char*>(content_.data()), content_.size(),
                            threads, path_);
    in_memory_ = true;
  }
  if (in_memory_) {
    size_ = content_.size();
    ::close(fd_);
    fd_ = -1;
  }
}

InputSource::~InputSource() {
  if (map_ && !shared_) munmap(map_, size_);
  if (fd_ >= 0) ::close(fd_);
}

void InputSource::read_at(uint64_t offset, void* dst, size_t n) const {
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
    fail(SPT_ERR_PARSE, "'", path_, "' is truncated (it shrank while being read)");
  }
}

const char* InputSource::bytes() {
  if (shared_) return shared_.get();
  if (in_memory_) return content_.data();
  if (!map_ && size_ > 0) {
    void* m = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd_, 0);
    if (m == MAP_FAILED) fail(SPT_ERR_IO, "cannot map '", path_, "': ", std::strerror(errno));
    madvise(m, size_, MADV_SEQUENTIAL);
    map_ = m;
  }
  return static_cast<const char*>(map_);
}

}  // namespace spt::io

namespace spt::io {

std::shared_ptr<const char> InputSource::share_bytes() {
  if (shared_) return shared_;
  if (in_memory_) {
    // Move the buffer into the owner; read_at keeps working through it.
    auto owner = std::make_shared<buffer<char>>(std::move(content_));
    shared_ = std::shared_ptr<const char>(owner, owner->data());
    return shared_;
  }
  if (!map_ && size_ > 0) {
    // No MAP_POPULATE here: the zero-copy reader's threads fault the pages
    // in parallel while hashing them, which measured 35% faster than
    // populating on one thread first (14-43 MB files, 2 threads).
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
