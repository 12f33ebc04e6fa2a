#include "io/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/error.hpp"

namespace spt::io {

namespace {

// The process umask, read without changing it (umask() would race with
// other threads); 022 when /proc is unavailable.
mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
  }
  return 022;
}

}  // namespace

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  std::vector<char> tmpl(path.begin(), path.end());
  const char suffix[] = ".tmp-XXXXXX";
  tmpl.insert(tmpl.end(), suffix, suffix + sizeof(suffix));  // includes the NUL
  fd_ = mkstemp(tmpl.data());
  if (fd_ < 0)
    fail(SPT_ERR_IO, "cannot create '", path, ".tmp-XXXXXX' to write '", path, "': ", std::strerror(errno),
         " (check that the directory exists and is writable)");
  tmp_path_ = tmpl.data();
  // mkstemp creates mode 0600; give the file the permissions a plain
  // creat() would have.
  fchmod(fd_, 0666 & ~current_umask());
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) close(fd_);
  if (!committed_ && !tmp_path_.empty()) unlink(tmp_path_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail(SPT_ERR_IO, "writing '", path_, "' failed: ", std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void AtomicFile::commit() {
  int fd = fd_;
  fd_ = -1;
  if (close(fd) != 0) fail(SPT_ERR_IO, "writing '", path_, "' failed on close: ", std::strerror(errno));
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0)
    fail(SPT_ERR_IO, "cannot rename '", tmp_path_, "' to '", path_, "': ", std::strerror(errno));
  committed_ = true;
}

}  // namespace spt::io
