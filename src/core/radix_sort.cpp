#include "core/radix_sort.hpp"

#include <omp.h>

#include <algorithm>
#include <vector>

namespace spt::sorting {

namespace {

constexpr int kDigitBits = 11;  // 2048 buckets: per-thread histograms stay in L1/L2
constexpr size_t kBuckets = size_t(1) << kDigitBits;
constexpr size_t kMinPerThread = 1 << 14;

struct Digits {
  int low_bit, high_bit;
  size_t operator()(uint64_t key, int pass) const {
    const int shift = low_bit + pass * kDigitBits;
    const int bits = std::min(kDigitBits, high_bit - shift);
    return static_cast<size_t>((key >> shift) & ((uint64_t(1) << bits) - 1));
  }
};

// Turn bucket counts into exclusive offsets; false when one bucket holds
// every key (the pass would move nothing).
bool exclusive_offsets(size_t* counts, size_t n) {
  size_t offset = 0;
  for (size_t b = 0; b < kBuckets; ++b) {
    const size_t here = counts[b];
    if (here == n) return false;
    counts[b] = offset;
    offset += here;
  }
  return true;
}

// One thread: the histograms of all digits come from a single read (a
// digit's histogram does not depend on the order of the keys).
void sort_sequential(buffer<uint64_t>& keys, buffer<uint64_t>& scratch, Digits digit, int passes) {
  const size_t n = keys.size();
  std::vector<size_t> counts(static_cast<size_t>(passes) * kBuckets, 0);
  for (size_t k = 0; k < n; ++k)
    for (int p = 0; p < passes; ++p) ++counts[p * kBuckets + digit(keys[k], p)];
  uint64_t* src = keys.data();
  uint64_t* dst = scratch.data();
  for (int p = 0; p < passes; ++p) {
    size_t* c = counts.data() + static_cast<size_t>(p) * kBuckets;
    if (!exclusive_offsets(c, n)) continue;
    for (size_t k = 0; k < n; ++k) dst[c[digit(src[k], p)]++] = src[k];
    std::swap(src, dst);
  }
  if (src != keys.data()) keys.swap(scratch);
}

// Several threads: each pass counts per chunk of the current order, then
// scatters with offsets over (bucket, thread) so equal digits keep their order.
void sort_parallel(buffer<uint64_t>& keys, buffer<uint64_t>& scratch, Digits digit, int passes, int threads) {
  const size_t n = keys.size();
  std::vector<size_t> counts(static_cast<size_t>(threads) * kBuckets);
  std::vector<size_t> chunk(threads + 1);
  for (int t = 0; t <= threads; ++t) chunk[t] = n * static_cast<size_t>(t) / threads;
  uint64_t* src = keys.data();
  uint64_t* dst = scratch.data();
  for (int p = 0; p < passes; ++p) {
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num();
      size_t* c = counts.data() + static_cast<size_t>(t) * kBuckets;
      std::fill(c, c + kBuckets, 0);
      for (size_t k = chunk[t]; k < chunk[t + 1]; ++k) ++c[digit(src[k], p)];
    }
    size_t offset = 0;
    bool single_bucket = false;
    for (size_t b = 0; b < kBuckets; ++b) {
      size_t in_bucket = 0;
      for (int t = 0; t < threads; ++t) {
        size_t& c = counts[static_cast<size_t>(t) * kBuckets + b];
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
      size_t* c = counts.data() + static_cast<size_t>(t) * kBuckets;
      for (size_t k = chunk[t]; k < chunk[t + 1]; ++k) dst[c[digit(src[k], p)]++] = src[k];
    }
    std::swap(src, dst);
  }
  if (src != keys.data()) keys.swap(scratch);
}

}  // namespace

void radix_sort(buffer<uint64_t>& keys, buffer<uint64_t>& scratch, int low_bit, int high_bit, int threads) {
  const size_t n = keys.size();
  if (n < 2 || low_bit >= high_bit) return;
  threads = static_cast<int>(std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(threads), n / kMinPerThread)));
  const int passes = (high_bit - low_bit + kDigitBits - 1) / kDigitBits;
  scratch.resize(n);
  const Digits digit{low_bit, high_bit};
  if (threads == 1) sort_sequential(keys, scratch, digit, passes);
  else sort_parallel(keys, scratch, digit, passes, threads);
}

}  // namespace spt::sorting
