// CSF trees from packed coordinate keys (see csf_keyed_build.hpp).
#include "core/csf_keyed_build.hpp"

#include <omp.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "core/bits.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/group_starts.hpp"
#include "core/parallel_errors.hpp"
#include "core/radix_sort.hpp"
#include "core/sort.hpp"

namespace spt {

namespace {

using sorting::chunk_begin;
using sorting::chunk_of;

// At most 2^16 buckets (per-thread counts stay in L2), and on average at
// least 2^6 nonzeros per bucket.
constexpr int kMaxBucketBits = 16;
constexpr int kMinBucketLog = 6;
int bucket_bits_for(int key_bits, spt_nnz n) {
  return std::min({key_bits, kMaxBucketBits, std::max(1, bit_width(n) - kMinBucketLog)});
}
// A bucket up to this size is sorted with std::sort, a larger one by radix.
constexpr uint64_t kSmallBucket = 2048;

// The coordinates of a nonzero packed in a tree's mode order: level l's
// index in `width[l]` bits at `shift[l]`, the root in the highest bits, so
// keys compare as the coordinates do lexicographically.
struct KeyLayout {
  std::vector<int> width, shift;
  int bits = 0;
  uint8_t level_of_bit[64] = {};

  KeyLayout(const std::vector<spt_index>& dims, const std::vector<uint32_t>& mode_order) {
    const size_t levels = mode_order.size();
    width.resize(levels);
    shift.resize(levels);
    for (size_t l = 0; l < levels; ++l) bits += width[l] = bit_width(dims[mode_order[l]] - 1);
    int at = bits;
    for (size_t l = 0; l < levels; ++l) {
      at -= width[l];
      shift[l] = at;
      for (int b = at; b < at + width[l]; ++b) level_of_bit[b] = static_cast<uint8_t>(l);
    }
  }
  spt_index coordinate(uint64_t key, uint32_t level) const {
    return width[level] == 0 ? 0 : static_cast<spt_index>((key >> shift[level]) & ((uint64_t(1) << width[level]) - 1));
  }
  // The shallowest level whose coordinate differs between two keys; the
  // leaf level when they are equal.
  uint32_t first_difference(uint64_t a, uint64_t b, uint32_t leaf) const {
    const uint64_t x = a ^ b;
    return x == 0 ? leaf : level_of_bit[63 - __builtin_clzll(x)];
  }
};

// Keys of a COO tensor's nonzeros, in position order.
struct CooKeys {
  std::vector<const spt_index*> ind;  // per level of the tree being built
  std::vector<int> shift;

  CooKeys(const spt_coo_s& x, const std::vector<uint32_t>& mode_order, const KeyLayout& layout)
      : shift(layout.shift) {
    for (uint32_t m : mode_order) ind.push_back(x.ind[m]);
  }
  template <typename Visit>
  void visit(spt_nnz begin, spt_nnz end, Visit&& visit_key) const {
    const size_t levels = ind.size();
    for (spt_nnz k = begin; k < end; ++k) {
      uint64_t key = 0;
      for (size_t l = 0; l < levels; ++l) key |= uint64_t(ind[l][k]) << shift[l];
      visit_key(k, key);
    }
  }
};

// Keys of another tree's nonzeros, in its leaf order, from a walk of it:
// the path of upper nodes above the current leaf advances when the leaf
// leaves its fiber.
struct TreeKeys {
  const CsfTree& source;
  std::vector<int> shift;  // per level of the source: its mode's bit offset in the new layout

  TreeKeys(const CsfTree& src, const std::vector<uint32_t>& mode_order, const KeyLayout& layout) : source(src) {
    for (uint32_t mode : src.mode_order) {
      const size_t level = std::find(mode_order.begin(), mode_order.end(), mode) - mode_order.begin();
      shift.push_back(layout.shift[level]);
    }
  }
  template <typename Visit>
  void visit(spt_nnz begin, spt_nnz end, Visit&& visit_key) const {
    if (begin >= end) return;
    const uint32_t leaf = source.levels() - 1;
    std::vector<spt_nnz> node(leaf);
    spt_nnz child = begin;
    for (uint32_t l = leaf; l-- > 0;) {
      const buffer<spt_nnz>& ptr = source.fptr[l];
      node[l] = static_cast<spt_nnz>(std::upper_bound(ptr.begin(), ptr.end(), child) - ptr.begin()) - 1;
      child = node[l];
    }
    auto upper_key = [&] {
      uint64_t key = 0;
      for (uint32_t l = 0; l < leaf; ++l) key |= uint64_t(source.fids[l][node[l]]) << shift[l];
      return key;
    };
    uint64_t upper = upper_key();
    spt_nnz fiber_end = source.fptr[leaf - 1][node[leaf - 1] + 1];
    const spt_index* leaf_ind = source.fids[leaf].data();
    for (spt_nnz k = begin; k < end; ++k) {
      if (k == fiber_end) {
        // Every node has a child, so the next fiber starts here; a parent
        // changes when its first child is reached.
        uint32_t l = leaf - 1;
        ++node[l];
        while (l > 0 && node[l] == source.fptr[l - 1][node[l - 1] + 1]) ++node[--l];
        upper = upper_key();
        fiber_end = source.fptr[leaf - 1][node[leaf - 1] + 1];
      }
      visit_key(k, upper | (uint64_t(leaf_ind[k]) << shift[leaf]));
    }
  }
};

// The nonzeros sorted by key: bucket b (the key's top bits) holds the
// entries [start[b], start[b+1]); entry i has the key's low bits rest[i] and
// the nonzero's value vals[i]. Ties keep the source's order. The values are
// the tree's, and 32-bit rest words become its leaf indices, so a build
// holds little besides the tree it returns.
template <typename Rest, typename T>
struct SortedKeys {
  int rest_bits = 0;
  buffer<spt_nnz> start;
  buffer<Rest> rest;
  buffer<T> vals;
  // The nodes that the entries of chunk c = [chunk_begin(n, c, chunks),
  // chunk_begin(n, c + 1, chunks)) open on level l above the leaves, at
  // opened[(c + 1) * levels + l] (as size_upper_levels takes them); and
  // whether two adjacent entries have the same key.
  std::vector<spt_nnz> opened;
  bool repeats = false;

  // Calls visit(i, key) for i in [begin, end).
  template <typename Visit>
  void visit(spt_nnz begin, spt_nnz end, Visit&& visit_key) const {
    if (begin >= end) return;
    size_t b = static_cast<size_t>(std::upper_bound(start.begin(), start.end(), begin) - start.begin()) - 1;
    for (spt_nnz i = begin; i < end; ++i) {
      while (i == start[b + 1]) ++b;
      visit_key(i, (uint64_t(b) << rest_bits) | uint64_t(rest[i]));
    }
  }
  uint64_t key_at(spt_nnz i) const {
    const size_t b = static_cast<size_t>(std::upper_bound(start.begin(), start.end(), i) - start.begin()) - 1;
    return (uint64_t(b) << rest_bits) | uint64_t(rest[i]);
  }
};

// Per-thread scratch of the bucket sorts.
template <typename T>
struct BucketScratch {
  buffer<uint64_t> words, word_scratch;
  buffer<sorting::KeyPosition> items, item_scratch;
  buffer<T> vals;
};

// Sorts one bucket's entries (in source order) by rest, stably: each key is
// sorted with its index in the bucket, and the values follow those indices.
template <typename Rest, typename T>
void sort_bucket(Rest* rest, T* vals, spt_nnz size, int rest_bits, BucketScratch<T>& w, int threads) {
  // Entries that arrive in order stay as they are (a stable sort's result).
  // That is every bucket of a tree built from another tree whose order of
  // the modes below the new root it keeps (csf_mode_order's trees from the
  // first tree), and of a COO that is sorted already.
  if (std::is_sorted(rest, rest + size)) return;
  w.vals.resize(size);
  if constexpr (sizeof(Rest) <= 4) {
    // Key bits above the index: one word per entry. Indices are unique, so
    // std::sort's order is the stable one, as is a stable radix sort by the
    // key bits alone.
    w.words.resize(size);
    for (spt_nnz j = 0; j < size; ++j) w.words[j] = (uint64_t(rest[j]) << 32) | j;
    if (size <= kSmallBucket) std::sort(w.words.begin(), w.words.end());
    else sorting::radix_sort(w.words, w.word_scratch, 32, 32 + rest_bits, threads);
    for (spt_nnz j = 0; j < size; ++j) {
      rest[j] = static_cast<Rest>(w.words[j] >> 32);
      w.vals[j] = vals[static_cast<uint32_t>(w.words[j])];
    }
  } else {
    w.items.resize(size);
    for (spt_nnz j = 0; j < size; ++j) w.items[j] = {rest[j], j};
    if (size <= kSmallBucket)
      std::sort(w.items.begin(), w.items.end(), [](const sorting::KeyPosition& a, const sorting::KeyPosition& b) {
        return a.key != b.key ? a.key < b.key : a.position < b.position;
      });
    else sorting::radix_sort(w.items, w.item_scratch, 0, rest_bits, threads);
    for (spt_nnz j = 0; j < size; ++j) {
      rest[j] = w.items[j].key;
      w.vals[j] = vals[w.items[j].position];
    }
  }
  std::copy(w.vals.begin(), w.vals.end(), vals);
}

// Counts the nodes that the sorted entries [begin, end) of one bucket open
// on each level above the leaves (an entry opens one on the shallowest
// level where its key differs from the previous entry's, and on every
// deeper level) into opened[(c + 1) * levels + l] for the chunk c of each
// entry; entry `begin - 1` is in the same bucket. Keys of one bucket differ
// only in their rest bits. Returns whether an entry repeats its
// predecessor's key.
template <typename Rest>
bool count_opened_in_bucket(const Rest* rest, spt_nnz begin, spt_nnz end, const KeyLayout& layout, uint32_t levels,
                            spt_nnz n, int chunks, spt_nnz* opened) {
  if (begin >= end) return false;
  int c = chunk_of(begin, n, chunks);
  spt_nnz chunk_end = chunk_begin(n, c + 1, chunks);
  // first_level[d]: entries whose key first differs from the previous one
  // on level d (d = levels: only on the leaves, or not at all), added up
  // into the chunk's counts when the chunk or the range ends.
  spt_nnz first_level[SPT_MAX_ORDER + 1];
  std::fill(first_level, first_level + levels + 1, spt_nnz(0));
  auto add_to_chunk = [&] {
    spt_nnz* count = opened + static_cast<size_t>(c + 1) * levels;
    spt_nnz at_or_above = 0;
    for (uint32_t l = 0; l < levels; ++l) {
      at_or_above += first_level[l];
      count[l] += at_or_above;
    }
    std::fill(first_level, first_level + levels + 1, spt_nnz(0));
  };
  spt_nnz repeats = 0;
  for (spt_nnz i = begin; i < end; ++i) {
    if (i == chunk_end) {
      add_to_chunk();
      ++c;
      chunk_end = chunk_begin(n, c + 1, chunks);
    }
    const uint64_t differs = uint64_t(rest[i]) ^ uint64_t(rest[i - 1]);
    repeats += differs == 0;
    ++first_level[differs == 0 ? levels : layout.level_of_bit[63 - __builtin_clzll(differs | 1)]];
  }
  add_to_chunk();
  return repeats > 0;
}

template <typename Rest, typename T, typename Keys>
SortedKeys<Rest, T> sort_keys(const Keys& keys, const T* values, spt_nnz n, const KeyLayout& layout, uint32_t levels,
                              int threads) {
  const int key_bits = layout.bits;
  const int bucket_bits = bucket_bits_for(key_bits, n);
  const size_t buckets = size_t(1) << bucket_bits;
  SortedKeys<Rest, T> s;
  s.rest_bits = key_bits - bucket_bits;
  const int rest_bits = s.rest_bits;
  const uint64_t rest_mask = rest_bits == 0 ? 0 : ~uint64_t(0) >> (64 - rest_bits);

  // Counting sort by bucket, stable: chunk c's entries of a bucket follow
  // those of chunks before it.
  std::vector<buffer<uint32_t>> next(threads);
  ParallelErrors errors;
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int c = 0; c < threads; ++c) {
    errors.run([&] {
      next[c].assign(buckets, 0);
      uint32_t* count = next[c].data();
      keys.visit(chunk_begin(n, c, threads), chunk_begin(n, c + 1, threads),
                 [&](spt_nnz, uint64_t key) { ++count[key >> rest_bits]; });
    });
  }
  errors.rethrow();
  resize_named(s.start, buckets + 1, [] { return std::string("CSF: the sort's bucket offsets"); });
  spt_nnz total = 0;
  for (size_t b = 0; b < buckets; ++b) {
    s.start[b] = total;
    for (int c = 0; c < threads; ++c) {
      const uint32_t count = next[c][b];
      next[c][b] = static_cast<uint32_t>(total);
      total += count;
    }
  }
  s.start[buckets] = total;
  resize_named(s.vals, n, [] { return std::string("CSF: the values (nnz)"); });
  resize_named(s.rest, n, [] { return std::string("CSF: the sort keys (nnz)"); });
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int c = 0; c < threads; ++c) {
    errors.run([&] {
      uint32_t* at = next[c].data();
      keys.visit(chunk_begin(n, c, threads), chunk_begin(n, c + 1, threads), [&](spt_nnz k, uint64_t key) {
        const uint32_t i = at[key >> rest_bits]++;
        s.vals[i] = values[k];
        s.rest[i] = static_cast<Rest>(key & rest_mask);
      });
    });
  }
  errors.rethrow();
  std::vector<buffer<uint32_t>>().swap(next);

  // Then each bucket by the rest of its keys (none left when the buckets
  // are the keys): the large ones one at a time on all threads, the others
  // in parallel. The nodes each entry but a bucket's first opens are
  // counted right after its bucket is sorted, while the bucket is in cache
  // (tree_from_sorted_keys needs them before it writes the tree).
  const size_t per_thread = static_cast<size_t>(threads + 1) * levels;
  std::vector<spt_nnz> thread_opened(static_cast<size_t>(threads) * per_thread, 0);
  std::vector<char> thread_repeats(threads, 0);
  const spt_nnz large = std::max<spt_nnz>(kSmallBucket, n / (4 * spt_nnz(threads)));
  std::vector<size_t> large_buckets;
  for (size_t b = 0; b < buckets; ++b)
    if (s.start[b + 1] - s.start[b] > large && threads > 1) large_buckets.push_back(b);
#pragma omp parallel num_threads(threads)
  {
    BucketScratch<T> scratch;
    const int me = omp_get_thread_num();
    spt_nnz* opened = thread_opened.data() + static_cast<size_t>(me) * per_thread;
    bool repeat = false;
#pragma omp for schedule(dynamic, 16)
    for (size_t b = 0; b < buckets; ++b) {
      const spt_nnz size = s.start[b + 1] - s.start[b];
      if (size < 2 || (size > large && threads > 1)) continue;
      errors.run([&] {
        if (rest_bits > 0)
          sort_bucket(s.rest.data() + s.start[b], s.vals.data() + s.start[b], size, rest_bits, scratch, 1);
        repeat = count_opened_in_bucket(s.rest.data(), s.start[b] + 1, s.start[b + 1], layout, levels, n, threads,
                                        opened) ||
                 repeat;
      });
    }
    thread_repeats[me] = repeat;
  }
  errors.rethrow();
  BucketScratch<T> scratch;
  for (size_t b : large_buckets) {
    const spt_nnz begin = s.start[b], size = s.start[b + 1] - begin;
    if (rest_bits > 0) sort_bucket(s.rest.data() + begin, s.vals.data() + begin, size, rest_bits, scratch, threads);
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int c = 0; c < threads; ++c) {
      const spt_nnz from = begin + 1 + chunk_begin(size - 1, c, threads);
      const spt_nnz to = begin + 1 + chunk_begin(size - 1, c + 1, threads);
      if (count_opened_in_bucket(s.rest.data(), from, to, layout, levels, n, threads,
                                 thread_opened.data() + static_cast<size_t>(c) * per_thread))
        thread_repeats[c] = 1;
    }
  }
  s.opened.assign(per_thread, 0);
  for (int t = 0; t < threads; ++t)
    for (size_t j = 0; j < per_thread; ++j) s.opened[j] += thread_opened[static_cast<size_t>(t) * per_thread + j];
  s.repeats = std::find(thread_repeats.begin(), thread_repeats.end(), 1) != thread_repeats.end();
  // Each bucket's first entry, against the last entry of the bucket before
  // it (keys of different buckets differ; the first entry opens every level).
  uint64_t last = 0;
  int c = 0;
  for (size_t b = 0; b < buckets; ++b) {
    const spt_nnz i = s.start[b];
    if (i == s.start[b + 1]) continue;
    const uint64_t key = (uint64_t(b) << rest_bits) | uint64_t(s.rest[i]);
    const uint32_t d = i == 0 ? 0 : layout.first_difference(key, last, levels);
    while (chunk_begin(n, c + 1, threads) <= i) ++c;
    for (uint32_t l = d; l < levels; ++l) ++s.opened[static_cast<size_t>(c + 1) * levels + l];
    last = (uint64_t(b) << rest_bits) | uint64_t(s.rest[s.start[b + 1] - 1]);
  }
  return s;
}

// The tree from the sorted keys: the values are taken over, the leaf
// indices and upper levels decoded from the keys. sort_keys counted the
// nodes each chunk opens per level; one pass writes node indices and child
// pointers from the counts' prefix, and the leaf indices (over the keys
// when those are 32-bit words).
template <typename Rest, typename T>
CsfTree tree_from_sorted_keys(SortedKeys<Rest, T>& s, const KeyLayout& layout,
                              const std::vector<uint32_t>& mode_order, spt_nnz n, int threads) {
  const uint32_t leaf = static_cast<uint32_t>(mode_order.size()) - 1;
  CsfTree t;
  t.mode_order = mode_order;
  t.fids.resize(leaf + 1);
  t.fptr.resize(leaf);
  t.vals.set_dtype(dtype_of<T>());
  t.vals.get<T>() = std::move(s.vals);
  std::vector<spt_nnz>& counts = s.opened;
  t.leaf_repeats = s.repeats;
  size_upper_levels(t, counts, threads);

  // The pass also writes the leaf indices: over the 32-bit keys
  // where they lie (each word is read before it is written, so the key
  // before each chunk is taken first), else into an array of their own.
  buffer<spt_index> own_leaf_ind;
  spt_index* out = nullptr;
  if constexpr (std::is_same_v<Rest, spt_index>) {
    out = s.rest.data();
  } else {
    resize_named(own_leaf_ind, n, [&] { return cat("CSF: the leaf indices of mode ", mode_order[leaf], " (nnz)"); });
    out = own_leaf_ind.data();
  }
  std::vector<uint64_t> key_before(threads, 0);
  for (int c = 0; c < threads; ++c) {
    const spt_nnz begin = chunk_begin(n, c, threads);
    if (begin > 0 && begin < chunk_begin(n, c + 1, threads)) key_before[c] = s.key_at(begin - 1);
  }
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int c = 0; c < threads; ++c) {
    uint64_t prev = key_before[c];
    spt_nnz* next = counts.data() + static_cast<size_t>(c) * leaf;
    s.visit(chunk_begin(n, c, threads), chunk_begin(n, c + 1, threads), [&](spt_nnz i, uint64_t key) {
      const uint32_t d = i == 0 ? 0 : layout.first_difference(key, prev, leaf);
      for (uint32_t l = d; l < leaf; ++l) {
        // Read the child level's counter before it advances for this nonzero.
        t.fids[l][next[l]] = layout.coordinate(key, l);
        t.fptr[l][next[l]] = l + 1 < leaf ? next[l + 1] : i;
        ++next[l];
      }
      out[i] = layout.coordinate(key, leaf);
      prev = key;
    });
  }
  for (uint32_t l = 0; l < leaf; ++l) t.fptr[l][t.nodes(l)] = l + 1 < leaf ? t.nodes(l + 1) : n;
  if constexpr (std::is_same_v<Rest, spt_index>) t.fids[leaf] = std::move(s.rest);
  else t.fids[leaf] = std::move(own_leaf_ind);
  return t;
}

template <typename Keys>
CsfTree keyed_build(const Keys& keys, const KeyLayout& layout, const std::vector<uint32_t>& mode_order,
                    spt_dtype dtype, const void* values, spt_nnz n, int threads) {
  return with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* v = static_cast<const T*>(values);
    const uint32_t levels = static_cast<uint32_t>(mode_order.size()) - 1;  // above the leaves
    if (layout.bits - bucket_bits_for(layout.bits, n) <= 32) {
      SortedKeys<spt_index, T> s = sort_keys<spt_index>(keys, v, n, layout, levels, threads);
      return tree_from_sorted_keys(s, layout, mode_order, n, threads);
    }
    SortedKeys<uint64_t, T> s = sort_keys<uint64_t>(keys, v, n, layout, levels, threads);
    return tree_from_sorted_keys(s, layout, mode_order, n, threads);
  });
}

// As the sort-permutation build (core/csf.cpp).
int build_threads(const Exec& exec, spt_nnz n) { return threads_for_work(exec.threads, n, 16384); }

}  // namespace

void size_upper_levels(CsfTree& t, std::vector<spt_nnz>& counts, int threads) {
  const uint32_t leaf = t.levels() - 1;
  for (int c = 0; c < threads; ++c)
    for (uint32_t l = 0; l < leaf; ++l)
      counts[static_cast<size_t>(c + 1) * leaf + l] += counts[static_cast<size_t>(c) * leaf + l];
  for (uint32_t l = 0; l < leaf; ++l) {
    const spt_nnz nodes = counts[static_cast<size_t>(threads) * leaf + l];
    resize_named(t.fids[l], nodes,
                 [&] { return cat("CSF: the node indices of level ", l, " (mode ", t.mode_order[l], ")"); });
    resize_named(t.fptr[l], nodes + 1,
                 [&] { return cat("CSF: the child pointers of level ", l, " (mode ", t.mode_order[l], ")"); });
  }
}

bool csf_keyed_build_applies(const std::vector<spt_index>& dims, spt_nnz nnz) {
  int bits = 0;
  for (spt_index d : dims) bits += bit_width(d - 1);
  return nnz > 0 && nnz <= spt_nnz(UINT32_MAX) && bits <= 64 && dims.size() >= 2;
}

CsfTree build_csf_tree_keyed(const Exec& exec, const spt_coo_s& x, const std::vector<uint32_t>& mode_order) {
  require(csf_keyed_build_applies(x.dims, x.nnz), "CSF: the keyed build does not apply to this tensor");
  const KeyLayout layout(x.dims, mode_order);
  return keyed_build(CooKeys(x, mode_order, layout), layout, mode_order, x.dtype(), x.val, x.nnz,
                     build_threads(exec, x.nnz));
}

CsfTree build_csf_tree_keyed(const Exec& exec, const CsfTree& source, const std::vector<spt_index>& dims,
                             const std::vector<uint32_t>& mode_order) {
  require(csf_keyed_build_applies(dims, source.nnz()), "CSF: the keyed build does not apply to this tree");
  const KeyLayout layout(dims, mode_order);
  return keyed_build(TreeKeys(source, mode_order, layout), layout, mode_order, source.vals.dtype(),
                     source.vals.data(), source.nnz(), build_threads(exec, source.nnz()));
}

}  // namespace spt
