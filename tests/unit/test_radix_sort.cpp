// The one radix sort of core (core/radix_sort.hpp) against std::stable_sort
// by the same bits: plain keys and (key, position) pairs; bit ranges at the
// bottom, in the middle, at the top and the whole 64 bits; sizes around
// the parallel threshold; 1..7 threads (the result may not depend on
// them); keys whose high digits are all equal (skipped passes); a reused
// scratch buffer. Then its users: the COO lexicographic and Morton sort
// permutations equal a stable comparison sort for any thread count; chunk_of
// against chunk_begin.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "core/coo.hpp"
#include "core/exec.hpp"
#include "core/group_starts.hpp"
#include "core/radix_sort.hpp"
#include "core/sort.hpp"

namespace spt::test {
namespace {

using sorting::KeyPosition;

uint64_t bits_of(uint64_t key, int low, int high) {
  const int width = high - low;
  const uint64_t shifted = key >> low;
  return width >= 64 ? shifted : shifted & ((uint64_t(1) << width) - 1);
}

// n keys: `spread` random bits starting at bit `base` (few distinct values
// when spread is small: many ties), the other bits random noise when
// `noise`, else zero.
buffer<uint64_t> make_keys(size_t n, int base, int spread, bool noise, uint64_t seed) {
  std::mt19937_64 rng(seed);
  buffer<uint64_t> keys(n);
  const uint64_t field_mask = (spread >= 64 ? ~uint64_t(0) : (uint64_t(1) << spread) - 1) << base;
  for (size_t k = 0; k < n; ++k) {
    const uint64_t field = (rng() << base) & field_mask;
    keys[k] = field | (noise ? rng() & ~field_mask : 0);
  }
  return keys;
}

struct Range {
  int low, high;
};

const Range kRanges[] = {{0, 64}, {0, 12}, {5, 17}, {20, 53}, {40, 64}, {63, 64}, {0, 1}, {7, 7}};
const size_t kSizes[] = {0, 1, 2, 3, 1000, (size_t(1) << 14) + 5, 70000};

TEST(RadixSort, KeysEqualStableSortForAnyThreads) {
  for (size_t n : kSizes)
    for (const Range& r : kRanges)
      for (int spread : {3, 20, 64})
        for (bool noise : {false, true}) {
          const int base = std::min(r.low, 63);
          const buffer<uint64_t> keys = make_keys(n, base, std::min(spread, 64 - base), noise, n + spread);
          std::vector<uint64_t> want(keys.begin(), keys.end());
          std::stable_sort(want.begin(), want.end(), [&](uint64_t a, uint64_t b) {
            return bits_of(a, r.low, r.high) < bits_of(b, r.low, r.high);
          });
          buffer<uint64_t> scratch;  // reused across thread counts
          for (int threads : {1, 2, 3, 7}) {
            buffer<uint64_t> got = keys;
            sorting::radix_sort(got, scratch, r.low, r.high, threads);
            ASSERT_TRUE(std::equal(want.begin(), want.end(), got.begin(), got.end()))
                << n << " keys, bits [" << r.low << ", " << r.high << "), spread " << spread << (noise ? " noise" : "")
                << ", " << threads << " threads";
          }
        }
}

TEST(RadixSort, PairsKeepTheirPositionsAndTiesTheirOrder) {
  for (size_t n : kSizes)
    for (const Range& r : kRanges)
      for (int spread : {2, 16, 64}) {
        const int base = std::min(r.low, 63);
        const buffer<uint64_t> keys = make_keys(n, base, std::min(spread, 64 - base), true, 3 * n + spread);
        buffer<KeyPosition> items(n);
        for (size_t k = 0; k < n; ++k) items[k] = {keys[k], k};
        std::vector<KeyPosition> want(items.begin(), items.end());
        std::stable_sort(want.begin(), want.end(), [&](const KeyPosition& a, const KeyPosition& b) {
          return bits_of(a.key, r.low, r.high) < bits_of(b.key, r.low, r.high);
        });
        for (int threads : {1, 2, 5}) {
          buffer<KeyPosition> got = items, scratch;
          sorting::radix_sort(got, scratch, r.low, r.high, threads);
          ASSERT_EQ(got.size(), n);
          for (size_t k = 0; k < n; ++k) {
            ASSERT_EQ(got[k].key, want[k].key) << k << " of " << n << ", bits [" << r.low << ", " << r.high << ")";
            ASSERT_EQ(got[k].position, want[k].position) << "tie order lost at " << k << " of " << n;
            ASSERT_EQ(got[k].key, keys[got[k].position]) << "a position left its key at " << k;
          }
        }
      }
}

TEST(RadixSort, AllEqualDigitsAndEmptyRangeLeaveTheInputAsIs) {
  buffer<uint64_t> keys(50000);
  for (size_t k = 0; k < keys.size(); ++k) keys[k] = (uint64_t(7) << 40) | (keys.size() - k);  // high digits equal
  const buffer<uint64_t> input = keys;
  buffer<uint64_t> scratch;
  sorting::radix_sort(keys, scratch, 40, 64, 4);  // every digit the same: nothing moves
  EXPECT_TRUE(std::equal(input.begin(), input.end(), keys.begin(), keys.end()));
  sorting::radix_sort(keys, scratch, 12, 12, 4);  // empty range
  EXPECT_TRUE(std::equal(input.begin(), input.end(), keys.begin(), keys.end()));
  sorting::radix_sort(keys, scratch, 0, 40, 4);  // now sorted ascending
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
}

// Stable lexicographic permutation of x in mode_order (the definition).
std::vector<spt_nnz> lexicographic(const spt_coo_s& x, const std::vector<uint32_t>& mode_order) {
  std::vector<spt_nnz> p(x.nnz);
  std::iota(p.begin(), p.end(), spt_nnz(0));
  std::stable_sort(p.begin(), p.end(), [&](spt_nnz a, spt_nnz b) {
    for (uint32_t m : mode_order)
      if (x.ind[m][a] != x.ind[m][b]) return x.ind[m][a] < x.ind[m][b];
    return false;
  });
  return p;
}

// Stable Z-Morton permutation: bits interleaved from the top, mode 0 first.
std::vector<spt_nnz> morton(const spt_coo_s& x) {
  std::vector<spt_nnz> p(x.nnz);
  std::iota(p.begin(), p.end(), spt_nnz(0));
  std::stable_sort(p.begin(), p.end(), [&](spt_nnz a, spt_nnz b) {
    for (int bit = 31; bit >= 0; --bit)
      for (uint32_t m = 0; m < x.order(); ++m) {
        const uint32_t ba = (x.ind[m][a] >> bit) & 1u, bb = (x.ind[m][b] >> bit) & 1u;
        if (ba != bb) return ba < bb;
      }
    return false;
  });
  return p;
}

TEST(RadixSort, CooSortPermutationsEqualAStableComparisonSort) {
  std::vector<RandomTensorSpec> specs = standard_specs();
  RandomTensorSpec big;  // above the parallel threshold, with repeated coordinates
  big.dims = {300, 200, 90};
  big.nnz = 60000;
  big.seed = 41;
  big.duplicates = true;
  specs.push_back(big);
  // Coordinates wider than one 64-bit key (77, 93 and 155 bits): sorted
  // by groups of modes, least significant first.
  for (const std::vector<spt_index>& dims : std::vector<std::vector<spt_index>>{
           {4000000000u, 5, 3000000000u, 7, 100},
           {2147483648u, 2147483648u, 2147483648u},
           {2147483648u, 2147483648u, 2147483648u, 2147483648u, 2147483648u}}) {
    specs.push_back(spec_of(dims, 5000, 43, true));
  }
  for (const RandomTensorSpec& spec : specs) {
    const spt_coo_s x = random_coo(SPT_FLOAT64, spec);
    std::vector<uint32_t> reversed = sorting::natural_order(x.order());
    std::reverse(reversed.begin(), reversed.end());
    const std::vector<spt_nnz> want_natural = lexicographic(x, sorting::natural_order(x.order()));
    const std::vector<spt_nnz> want_reversed = lexicographic(x, reversed);
    const std::vector<spt_nnz> want_morton = morton(x);
    for (int threads : {1, 2, 4}) {
      const Exec exec{threads};
      const std::string what = cat("order ", x.order(), " nnz ", x.nnz, ", ", threads, " threads");
      const buffer<spt_nnz> natural = sorting::sort_permutation(exec, x, sorting::natural_order(x.order()));
      ASSERT_TRUE(std::equal(want_natural.begin(), want_natural.end(), natural.begin(), natural.end())) << what;
      const buffer<spt_nnz> rev = sorting::sort_permutation(exec, x, reversed);
      ASSERT_TRUE(std::equal(want_reversed.begin(), want_reversed.end(), rev.begin(), rev.end())) << what;
      const buffer<spt_nnz> z = sorting::morton_permutation(exec, x);
      ASSERT_TRUE(std::equal(want_morton.begin(), want_morton.end(), z.begin(), z.end())) << what << " (Morton)";
    }
  }
}

}  // namespace
}  // namespace spt::test

// chunk_of finds the chunk of chunk_begin's split that holds each position.
TEST(ChunkOf, AgreesWithChunkBegin) {
  using spt::sorting::chunk_begin;
  using spt::sorting::chunk_of;
  for (spt_nnz n : {1, 2, 3, 7, 64, 1000, 4097})
    for (int chunks : {1, 2, 3, 5, 16, 128})
      for (spt_nnz i = 0; i < n; ++i) {
        const int c = chunk_of(i, n, chunks);
        ASSERT_LE(chunk_begin(n, c, chunks), i) << n << " " << chunks << " " << i;
        ASSERT_LT(i, chunk_begin(n, c + 1, chunks)) << n << " " << chunks << " " << i;
      }
}
