// Small helpers shared by the binary formats (SPLATT .bin and our .sptb).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/error.hpp"

namespace spt::io {

// Both binary formats are little-endian on disk; libsptensor reads and
// writes them on little-endian hosts only (every supported platform).
inline void require_little_endian_host(const char* what) {
  const uint16_t probe = 1;
  unsigned char first;
  std::memcpy(&first, &probe, 1);
  if (first != 1) fail(SPT_ERR_UNSUPPORTED, what, " files are little-endian; this big-endian host cannot use them");
}

template <typename T>
T load_le(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
void store_le(unsigned char* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

}  // namespace spt::io

#include <string>

#include "core/context.hpp"
#include "core/coo.hpp"
#include "io/io.hpp"

namespace spt::io {

// Checks shared by the binary readers once the arrays are loaded: the
// caller's order and dims (which then become the tensor's dims), every
// index inside the dims, and finite values when asked. Problems are
// SPT_ERR_PARSE naming the file and the nonzero. check_indices = false
// skips the index scan when the caller has already verified the indices.
// first_nonzero: the file position of x's first nonzero (x holds a range
// of the file's nonzeros), so that messages name positions in the file.
void check_loaded_tensor(const spt_context_s& ctx, spt_coo_s& x, const ReadOptions& opts, const std::string& path,
                         bool check_indices = true, uint64_t first_nonzero = 0);

}  // namespace spt::io
