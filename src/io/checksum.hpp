// XXH64 (64-bit xxHash) from the system's libxxhash (xxhash.h): fast and
// strong enough to catch corrupted or truncated binary tensor files.
// Streaming, so non-contiguous sections can be hashed one after another.
//
// Inlined from the header (XXH_INLINE_ALL), so the state lives in the
// object, not on the heap: the binary readers hash blocks inside OpenMP
// regions, where nothing may allocate or fail, and xxhash.h allows a state
// object only when the code is compiled in rather than taken from the
// shared library. See docs/architecture.md, Dependencies.
#pragma once

#include <cstddef>
#include <cstdint>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace spt::io {

class Xxh64 {
 public:
  explicit Xxh64(uint64_t seed = 0) { reset(seed); }

  void reset(uint64_t seed = 0) { XXH64_reset(&state_, seed); }
  void update(const void* data, size_t n) { XXH64_update(&state_, data, n); }
  uint64_t digest() const { return XXH64_digest(&state_); }

  static uint64_t hash(const void* data, size_t n, uint64_t seed = 0) { return XXH64(data, n, seed); }

 private:
  XXH64_state_t state_;
};

}  // namespace spt::io
