// XXH64 (Yann Collet's 64-bit xxHash, from its published specification):
// fast (well above disk speed per core) and strong enough to catch corrupted or
// truncated binary tensor files. Streaming, so non-contiguous sections can
// be hashed one after another.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace spt::io {

class Xxh64 {
 public:
  explicit Xxh64(uint64_t seed = 0) { reset(seed); }

  void reset(uint64_t seed = 0) {
    lane_[0] = seed + kPrime1 + kPrime2;
    lane_[1] = seed + kPrime2;
    lane_[2] = seed;
    lane_[3] = seed - kPrime1;
    seed_ = seed;
    total_ = 0;
    pending_ = 0;
  }

  void update(const void* data, size_t n) {
    const unsigned char* p = static_cast<const unsigned char*>(data);
    total_ += n;
    if (pending_ + n < 32) {
      if (n) std::memcpy(buf_ + pending_, p, n);
      pending_ += n;
      return;
    }
    if (pending_) {
      size_t fill = 32 - pending_;
      std::memcpy(buf_ + pending_, p, fill);
      consume_stripe(buf_);
      p += fill;
      n -= fill;
      pending_ = 0;
    }
    uint64_t a = lane_[0], b = lane_[1], c = lane_[2], d = lane_[3];
    while (n >= 32) {
      a = round(a, load64(p));
      b = round(b, load64(p + 8));
      c = round(c, load64(p + 16));
      d = round(d, load64(p + 24));
      p += 32;
      n -= 32;
    }
    lane_[0] = a, lane_[1] = b, lane_[2] = c, lane_[3] = d;
    if (n) std::memcpy(buf_, p, n);
    pending_ = n;
  }

  uint64_t digest() const {
    uint64_t h;
    if (total_ >= 32) {
      h = rotl(lane_[0], 1) + rotl(lane_[1], 7) + rotl(lane_[2], 12) + rotl(lane_[3], 18);
      for (uint64_t v : lane_) h = (h ^ round(0, v)) * kPrime1 + kPrime4;
    } else {
      h = seed_ + kPrime5;
    }
    h += total_;
    const unsigned char* p = buf_;
    size_t n = pending_;
    while (n >= 8) {
      h ^= round(0, load64(p));
      h = rotl(h, 27) * kPrime1 + kPrime4;
      p += 8;
      n -= 8;
    }
    if (n >= 4) {
      h ^= static_cast<uint64_t>(load32(p)) * kPrime1;
      h = rotl(h, 23) * kPrime2 + kPrime3;
      p += 4;
      n -= 4;
    }
    while (n > 0) {
      h ^= (*p) * kPrime5;
      h = rotl(h, 11) * kPrime1;
      ++p;
      --n;
    }
    h ^= h >> 33;
    h *= kPrime2;
    h ^= h >> 29;
    h *= kPrime3;
    h ^= h >> 32;
    return h;
  }

  static uint64_t hash(const void* data, size_t n, uint64_t seed = 0) {
    Xxh64 h(seed);
    h.update(data, n);
    return h.digest();
  }

 private:
  static constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
  static constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;
  static constexpr uint64_t kPrime3 = 0x165667B19E3779F9ULL;
  static constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ULL;
  static constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ULL;

  static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  static uint64_t round(uint64_t acc, uint64_t input) { return rotl(acc + input * kPrime2, 31) * kPrime1; }
  // Files are little-endian and so are the hosts we support (checked by the
  // binary readers), so native loads give the specified byte order.
  static uint64_t load64(const unsigned char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  static uint32_t load32(const unsigned char* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  void consume_stripe(const unsigned char* p) {
    lane_[0] = round(lane_[0], load64(p));
    lane_[1] = round(lane_[1], load64(p + 8));
    lane_[2] = round(lane_[2], load64(p + 16));
    lane_[3] = round(lane_[3], load64(p + 24));
  }

  uint64_t lane_[4];
  uint64_t seed_;
  uint64_t total_;
  unsigned char buf_[32];
  size_t pending_;
};

}  // namespace spt::io
