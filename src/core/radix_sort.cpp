#include "core/radix_sort.hpp"

#include <omp.h>

#include <algorithm>
#include <vector>

namespace spt::sorting {

namespace {

constexpr int kMaxDigitBits = 11;
// Fewer keys per thread than this are not worth a thread's histogram.
constexpr size_t kMinPerThread = size_t(1) << 14;

inline uint64_t key_of(uint64_t key) { return key; }
inline uint64_t key_of(const KeyPosition& item) { return item.key; }

// The digits of the bit range: `passes` digits of `bits` bits each (the
// last one may be narrower), lowest first; digit p of a key is
// (key >> shift[p]) & mask[p].
struct Digits {
  int bits, passes;
  std::vector<int> shift;
  std::vector<uint64_t> mask;
  Digits(int low_bit, int high_bit) {
    passes = (high_bit - low_bit + kMaxDigitBits - 1) / kMaxDigitBits;
    bits = (high_bit - low_bit + passes - 1) / passes;
    for (int p = 0; p < passes; ++p) {
      shift.push_back(low_bit + p * bits);
      mask.push_back((uint64_t(1) << std::min(bits, high_bit - shift.back())) - 1);
    }
  }
  size_t buckets() const { return size_t(1) << bits; }
};

// Turns bucket counts into exclusive offsets; false when one bucket holds
// every key (the pass would move nothing).
bool exclusive_offsets(size_t* counts, size_t buckets, size_t n) {
  size_t offset = 0;
  for (size_t b = 0; b < buckets; ++b) {
    const size_t here = counts[b];
    if (here == n) return false;
    counts[b] = offset;
    offset += here;
  }
  return true;
}

// One thread: the histograms of all digits come from a single read (a
// digit's histogram does not depend on the order of the keys).
template <typename Item>
void sort_sequential(buffer<Item>& items, buffer<Item>& scratch, const Digits& digit) {
  const size_t n = items.size(), buckets = digit.buckets();
  std::vector<size_t> counts(static_cast<size_t>(digit.passes) * buckets, 0);
  const int* shift = digit.shift.data();
  const uint64_t* mask = digit.mask.data();
  for (size_t k = 0; k < n; ++k) {
    const uint64_t key = key_of(items[k]);
    for (int p = 0; p < digit.passes; ++p) ++counts[p * buckets + ((key >> shift[p]) & mask[p])];
  }
  Item* src = items.data();
  Item* dst = scratch.data();
  for (int p = 0; p < digit.passes; ++p) {
    size_t* c = counts.data() + static_cast<size_t>(p) * buckets;
    if (!exclusive_offsets(c, buckets, n)) continue;
    const int s = shift[p];
    const uint64_t m = mask[p];
    for (size_t k = 0; k < n; ++k) dst[c[(key_of(src[k]) >> s) & m]++] = src[k];
    std::swap(src, dst);
  }
  if (src != items.data()) items.swap(scratch);
}

// Several threads: each pass counts per contiguous chunk of the current
// order, one prefix sum in (digit, thread) order gives every thread its own
// output ranges, and each thread scatters its chunk in order, so equal
// digits keep their order. No atomics.
template <typename Item>
void sort_parallel(buffer<Item>& items, buffer<Item>& scratch, const Digits& digit, int threads) {
  const size_t n = items.size(), buckets = digit.buckets();
  std::vector<size_t> counts(static_cast<size_t>(threads) * buckets);
  std::vector<size_t> chunk(threads + 1);
  for (int t = 0; t <= threads; ++t) chunk[t] = n * static_cast<size_t>(t) / threads;
  Item* src = items.data();
  Item* dst = scratch.data();
  for (int p = 0; p < digit.passes; ++p) {
    const int s = digit.shift[p];
    const uint64_t m = digit.mask[p];
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num();
      size_t* c = counts.data() + static_cast<size_t>(t) * buckets;
      std::fill(c, c + buckets, size_t(0));
      for (size_t k = chunk[t]; k < chunk[t + 1]; ++k) ++c[(key_of(src[k]) >> s) & m];
    }
    size_t offset = 0;
    bool single_bucket = false;
    for (size_t b = 0; b < buckets; ++b) {
      size_t in_bucket = 0;
      for (int t = 0; t < threads; ++t) {
        size_t& c = counts[static_cast<size_t>(t) * buckets + b];
        const size_t here = c;
        c = offset;
        offset += here;
        in_bucket += here;
      }
      single_bucket = single_bucket || in_bucket == n;
    }
    if (single_bucket) continue;
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num();
      size_t* c = counts.data() + static_cast<size_t>(t) * buckets;
      for (size_t k = chunk[t]; k < chunk[t + 1]; ++k) dst[c[(key_of(src[k]) >> s) & m]++] = src[k];
    }
    std::swap(src, dst);
  }
  if (src != items.data()) items.swap(scratch);
}

template <typename Item>
void sort_items(buffer<Item>& items, buffer<Item>& scratch, int low_bit, int high_bit, int threads) {
  const size_t n = items.size();
  low_bit = std::max(low_bit, 0);
  high_bit = std::min(high_bit, 64);
  if (n < 2 || low_bit >= high_bit) return;
  threads = static_cast<int>(std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(threads, 1)),
                                                                  n / kMinPerThread)));
  scratch.resize(n);
  const Digits digit(low_bit, high_bit);
  if (threads == 1) sort_sequential(items, scratch, digit);
  else sort_parallel(items, scratch, digit, threads);
}

}  // namespace

void radix_sort(buffer<uint64_t>& keys, buffer<uint64_t>& scratch, int low_bit, int high_bit, int threads) {
  sort_items(keys, scratch, low_bit, high_bit, threads);
}

void radix_sort(buffer<KeyPosition>& items, buffer<KeyPosition>& scratch, int low_bit, int high_bit, int threads) {
  sort_items(items, scratch, low_bit, high_bit, threads);
}

}  // namespace spt::sorting
