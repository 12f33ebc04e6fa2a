// Output side of file I/O: a byte Sink interface and AtomicFile, which
// writes to "PATH.tmp-XXXXXX" next to the target and renames it over PATH
// only on commit(), so a failed write never leaves a truncated file.
#pragma once

#include <cstddef>
#include <string>

#include "sptensor/sptensor.h"

namespace spt::io {

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void write(const void* data, size_t n) = 0;
  // Flush whatever is buffered (compressors write their trailer here).
  virtual void finish() {}
};

class AtomicFile : public Sink {
 public:
  explicit AtomicFile(const std::string& path);
  ~AtomicFile() override;  // removes the temporary file unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n) override;
  // Close the temporary file and rename it to the target path.
  void commit();

 private:
  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace spt::io
