// Parallel sorting, grouping and duplicate handling for COO tensors.
//
// Lexicographic sorts pack the coordinates into one 64-bit key when their
// bit widths allow it (the common case: fast integer sorts); otherwise they
// compare mode by mode. Z-Morton order compares by the most significant
// differing bit across modes, so it never needs a key wider than 64 bits.
// Every sort orders (key, original position) pairs, which makes it stable
// and deterministic for any thread count.
#include "core/sort.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>

#include "core/bits.hpp"
#include "core/error.hpp"
#include "core/group_starts.hpp"
#include "core/radix_sort.hpp"

namespace spt::sorting {

namespace {

constexpr size_t kParallelSortMin = 1 << 15;  // below this, one std::sort beats the fork/merge

// Number of items taken from `a` among the first p outputs of a stable
// merge of sorted a (na items) and b (nb), ties taken from a first.
template <typename Item, typename Less>
size_t merge_split(const Item* a, size_t na, const Item* b, size_t nb, size_t p, Less less) {
  size_t lo = p > nb ? p - nb : 0, hi = std::min(p, na);
  while (lo < hi) {
    const size_t i = lo + (hi - lo) / 2, j = p - i;
    if (j > 0 && !less(b[j - 1], a[i])) lo = i + 1;  // a[i] still precedes b[j-1]
    else hi = i;
  }
  return lo;
}

// Stable merge of a and b into out, split into equal output ranges across
// threads (merge path), so the last merge of a sort is not single-threaded.
template <typename Item, typename Less>
void parallel_merge(const Item* a, size_t na, const Item* b, size_t nb, Item* out, Less less, int threads) {
  const size_t n = na + nb;
  const int parts = n < kParallelSortMin ? 1 : threads;
#pragma omp parallel for num_threads(parts) schedule(static, 1)
  for (int t = 0; t < parts; ++t) {
    const size_t p0 = n * t / parts, p1 = n * (t + 1) / parts;
    const size_t i0 = merge_split(a, na, b, nb, p0, less), i1 = merge_split(a, na, b, nb, p1, less);
    std::merge(a + i0, a + i1, b + (p0 - i0), b + (p1 - i1), out + p0, less);
  }
}

// Chunked parallel sort: each chunk sorted by one thread, then pairwise
// merges. `less` must be a strict total order that cannot throw.
template <typename Item, typename Less>
void parallel_sort(buffer<Item>& data, Less less, int threads) {
  const size_t n = data.size();
  const int chunks = threads;
  if (chunks <= 1 || n < kParallelSortMin) {
    std::sort(data.begin(), data.end(), less);
    return;
  }
  std::vector<size_t> bound(chunks + 1);
  for (int c = 0; c <= chunks; ++c) bound[c] = n * static_cast<size_t>(c) / chunks;
  buffer<Item> tmp(n);
  Item* src = data.data();
  Item* dst = tmp.data();
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int c = 0; c < chunks; ++c) std::sort(src + bound[c], src + bound[c + 1], less);
  for (int width = 1; width < chunks; width *= 2) {
    for (int c = 0; c < chunks; c += 2 * width) {
      const size_t lo = bound[c], mid = bound[std::min(c + width, chunks)], hi = bound[std::min(c + 2 * width, chunks)];
      parallel_merge(src + lo, mid - lo, src + mid, hi - mid, dst + lo, less, threads);
    }
    std::swap(src, dst);
  }
  if (src != data.data()) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t k = 0; k < n; ++k) data[k] = src[k];
  }
}

int threads_for(const Exec& exec, spt_nnz work) { return threads_for_work(exec.threads, work, 4096); }

}  // namespace

std::vector<uint32_t> natural_order(uint32_t order) {
  std::vector<uint32_t> o(order);
  for (uint32_t m = 0; m < order; ++m) o[m] = m;
  return o;
}

void check_mode_order(uint32_t order, const std::vector<uint32_t>& mode_order) {
  require(mode_order.size() == order, "mode_order must have ", order, " entries, got ", mode_order.size());
  std::vector<bool> seen(order, false);
  for (size_t i = 0; i < mode_order.size(); ++i) {
    uint32_t m = mode_order[i];
    require(m < order, "mode_order[", i, "] = ", m, " is not a mode of an order-", order, " tensor");
    require(!seen[m], "mode_order repeats mode ", m, "; it must be a permutation of 0..", order - 1);
    seen[m] = true;
  }
}

buffer<spt_nnz> sort_permutation(const Exec& exec, const spt_coo_s& x, const std::vector<uint32_t>& mode_order) {
  const spt_nnz n = x.nnz;
  const int threads = threads_for(exec, n);
  // The permutation is allocated only once the sort's scratch is gone (or
  // takes over the sorted words' storage), so a sort never holds more than
  // two arrays of n words at once.
  buffer<spt_nnz> perm;
  if (n == 0) return perm;

  int key_bits = 0;
  std::vector<int> widths;
  for (uint32_t m : mode_order) {
    widths.push_back(bit_width(x.dims[m] - 1));
    key_bits += widths.back();
  }
  const int index_bits = bit_width(n - 1);
  const size_t nm = mode_order.size();
  std::vector<const spt_index*> ind(nm);
  for (size_t j = 0; j < nm; ++j) ind[j] = x.ind[mode_order[j]];
  auto make_key = [&](spt_nnz k) {
    uint64_t key = 0;
    for (size_t j = 0; j < nm; ++j) key = (widths[j] ? key << widths[j] : key) | ind[j][k];
    return key;
  };

  if (key_bits + index_bits <= 64 && index_bits < 64) {
    // Coordinates and original position in one word: plain integer sort.
    buffer<uint64_t> words(n);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz k = 0; k < n; ++k) words[k] = (index_bits ? make_key(k) << index_bits : make_key(k)) | k;
    // Built in position order, so a stable sort on the key bits alone
    // leaves ties ordered by position.
    {
      buffer<uint64_t> scratch;
      radix_sort(words, scratch, index_bits, index_bits + key_bits, threads);
    }
    const uint64_t mask = index_bits == 64 ? ~uint64_t(0) : (uint64_t(1) << index_bits) - 1;
    static_assert(std::is_same_v<spt_nnz, uint64_t>, "the sorted words become the permutation in place");
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz k = 0; k < n; ++k) words[k] &= mask;
    perm = std::move(words);
  } else if (key_bits <= 64) {
    buffer<KeyPosition> items(n);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz k = 0; k < n; ++k) items[k] = {make_key(k), k};
    {
      buffer<KeyPosition> scratch;
      radix_sort(items, scratch, 0, key_bits, threads);
    }
    perm.resize(n);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz k = 0; k < n; ++k) perm[k] = items[k].position;
  } else {
    // Coordinates too wide for one key: least significant digit first over
    // groups of whole modes of at most 64 bits each (a mode has at most
    // 32), each pass a stable radix sort of (group key, position) pairs in
    // the order the previous pass left them; the first pass starts in
    // position order, so ties end ordered by position.
    std::vector<std::pair<size_t, size_t>> groups;  // mode ranges [begin, end), least significant first
    for (size_t end = nm; end > 0;) {
      size_t begin = end;
      int bits = 0;
      while (begin > 0 && bits + widths[begin - 1] <= 64) bits += widths[--begin];
      groups.emplace_back(begin, end);
      end = begin;
    }
    buffer<KeyPosition> items(n), scratch;
    bool first = true;
    for (const std::pair<size_t, size_t>& group : groups) {
      const size_t begin = group.first, end = group.second;  // named: lambdas may not capture bindings
      int bits = 0;
      for (size_t j = begin; j < end; ++j) bits += widths[j];
      auto group_key = [&](spt_nnz k) {
        uint64_t key = 0;
        for (size_t j = begin; j < end; ++j) key = (widths[j] ? key << widths[j] : key) | ind[j][k];
        return key;
      };
#pragma omp parallel for num_threads(threads) schedule(static)
      for (spt_nnz i = 0; i < n; ++i) {
        const spt_nnz k = first ? i : items[i].position;
        items[i] = {group_key(k), k};
      }
      if (bits > 0) radix_sort(items, scratch, 0, bits, threads);
      first = false;
    }
    buffer<KeyPosition>().swap(scratch);
    perm.resize(n);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz k = 0; k < n; ++k) perm[k] = items[k].position;
  }
  return perm;
}

namespace {

// Z-Morton keys when all modes' bits fit one 64-bit word: bit b of mode m
// goes to its place in the interleaving (level by level from the top, lower
// modes first within a level; modes shorter than a level are skipped since
// their bit is always 0 there). Spread through per-byte lookup tables, so a
// key costs 4 lookups per mode. Returns false when the key needs > 64 bits.
bool morton_keys(const spt_coo_s& x, int threads, buffer<KeyPosition>& items, int& key_bits) {
  const uint32_t order = x.order();
  std::vector<int> width(order);
  int total = 0, levels = 0;
  for (uint32_t m = 0; m < order; ++m) {
    width[m] = bit_width(x.dims[m] - 1);
    total += width[m];
    levels = std::max(levels, width[m]);
  }
  if (total > 64) return false;
  // position[m][b]: key bit of bit b of mode m.
  std::vector<std::array<int, 32>> position(order);
  int next = total;
  for (int level = levels - 1; level >= 0; --level)
    for (uint32_t m = 0; m < order; ++m)
      if (width[m] > level) position[m][level] = --next;
  // spread[m][byte][v]: the key bits of byte `byte` of mode m's index = v.
  std::vector<uint64_t> spread(static_cast<size_t>(order) * 4 * 256, 0);
  for (uint32_t m = 0; m < order; ++m)
    for (int byte = 0; byte < 4; ++byte)
      for (int v = 0; v < 256; ++v) {
        uint64_t k = 0;
        for (int b = 0; b < 8; ++b)
          if ((v >> b) & 1) {
            const int bit = byte * 8 + b;
            if (bit < width[m]) k |= uint64_t(1) << position[m][bit];
          }
        spread[(static_cast<size_t>(m) * 4 + byte) * 256 + v] = k;
      }
  const spt_nnz n = x.nnz;
  items.resize(n);
  const uint64_t* table = spread.data();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (spt_nnz k = 0; k < n; ++k) {
    uint64_t key = 0;
    for (uint32_t m = 0; m < order; ++m) {
      const spt_index i = x.ind[m][k];
      const uint64_t* t = table + static_cast<size_t>(m) * 1024;
      key |= t[i & 0xFF] | t[256 + ((i >> 8) & 0xFF)] | t[512 + ((i >> 16) & 0xFF)] | t[768 + (i >> 24)];
    }
    items[k] = {key, k};
  }
  key_bits = total;
  return true;
}

}  // namespace

buffer<spt_nnz> morton_permutation(const Exec& exec, const spt_coo_s& x) {
  const spt_nnz n = x.nnz;
  const int threads = threads_for(exec, n);
  buffer<spt_nnz> perm(n);
  buffer<KeyPosition> items;
  int key_bits = 0;
  if (morton_keys(x, threads, items, key_bits)) {
    {
      buffer<KeyPosition> scratch;
      radix_sort(items, scratch, 0, key_bits, threads);
    }
    perm.resize(n);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz k = 0; k < n; ++k) perm[k] = items[k].position;
    return perm;
  }
  // Wider than 64 bits: compare pairs by their most significant differing bit.
#pragma omp parallel for num_threads(threads) schedule(static)
  for (spt_nnz k = 0; k < n; ++k) perm[k] = k;
  const spt_index* const* in = x.ind.data();
  const uint32_t order = x.order();
  // The interleaved keys of a and b first differ in the highest set bit of
  // (a_m xor b_m) over all modes m; at equal bit positions the lower mode is
  // more significant, so a later mode only wins with a strictly higher msb.
  parallel_sort(
      perm,
      [in, order](spt_nnz a, spt_nnz b) {
        int best = -1;
        spt_index best_xor = 0;
        for (uint32_t m = 0; m < order; ++m) {
          const spt_index y = in[m][a] ^ in[m][b];
          if (best_xor < y && best_xor < (best_xor ^ y)) {
            best = static_cast<int>(m);
            best_xor = y;
          }
        }
        if (best < 0) return a < b;
        return in[best][a] < in[best][b];
      },
      threads);
  return perm;
}

spt_coo_s permuted_copy(const Exec& exec, const spt_coo_s& x, const buffer<spt_nnz>& perm) {
  const spt_nnz n = x.nnz;
  const int threads = threads_for(exec, n);
  spt_coo_s y;
  y.init_owned(x.dtype(), x.dims, n);
  for (uint32_t m = 0; m < x.order(); ++m) {
    const spt_index* src = x.ind[m];
    spt_index* dst = y.mutable_ind(m);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz k = 0; k < n; ++k) dst[k] = src[perm[k]];
  }
  with_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.values<T>();
    T* dst = y.mutable_values<T>();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz k = 0; k < n; ++k) dst[k] = src[perm[k]];
  });
  return y;
}

void apply_permutation(const Exec& exec, spt_coo_s& x, const buffer<spt_nnz>& perm) {
  spt_coo_s y = permuted_copy(exec, x, perm);
  x.own_ind = std::move(y.own_ind);
  x.own_val = std::move(y.own_val);
  x.refresh();
  x.touched();
}

void sort_in_place(const Exec& exec, spt_coo_s& x, const std::vector<uint32_t>& mode_order) {
  check_mode_order(x.order(), mode_order);
  if (x.sorted_by == mode_order) return;
  apply_permutation(exec, x, sort_permutation(exec, x, mode_order));
  x.sorted_by = mode_order;
}

void sort_morton_in_place(const Exec& exec, spt_coo_s& x) {
  apply_permutation(exec, x, morton_permutation(exec, x));
  x.sorted_by.clear();
}

SortedView::SortedView(const Exec& exec, const spt_coo_s& x, const std::vector<uint32_t>& mode_order) {
  if (x.sorted_by == mode_order) {
    tensor_ = &x;
    return;
  }
  copy_ = permuted_copy(exec, x, sort_permutation(exec, x, mode_order));
  copy_.sorted_by = mode_order;
  tensor_ = &copy_;
}

buffer<spt_nnz> group_starts(const Exec& exec, const spt_coo_s& x, const std::vector<uint32_t>& modes) {
  const size_t nm = modes.size();
  std::vector<const spt_index*> ind(nm);
  for (size_t j = 0; j < nm; ++j) ind[j] = x.ind[modes[j]];
  return collect_starts(x.nnz, threads_for(exec, x.nnz), [&](spt_nnz k) {
    for (size_t j = 0; j < nm; ++j)
      if (ind[j][k] != ind[j][k - 1]) return true;
    return false;
  });
}

namespace {

// One entry per group of a sorted tensor: the group's coordinates and the
// sum of its values (summed in storage order, in double).
spt_coo_s sum_groups(const Exec& exec, const spt_coo_s& sorted, const buffer<spt_nnz>& starts) {
  const spt_nnz groups = starts.size() - 1;
  const int threads = threads_for(exec, sorted.nnz);
  spt_coo_s y;
  y.init_owned(sorted.dtype(), sorted.dims, groups);
  for (uint32_t m = 0; m < sorted.order(); ++m) {
    const spt_index* src = sorted.ind[m];
    spt_index* dst = y.mutable_ind(m);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz g = 0; g < groups; ++g) dst[g] = src[starts[g]];
  }
  with_dtype(sorted.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = sorted.values<T>();
    T* dst = y.mutable_values<T>();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz g = 0; g < groups; ++g) {
      double s = src[starts[g]];
      for (spt_nnz k = starts[g] + 1; k < starts[g + 1]; ++k) s += src[k];
      dst[g] = static_cast<T>(s);
    }
  });
  return y;
}

std::string coordinate_text(const spt_coo_s& x, spt_nnz k) {
  std::string s = "(";
  for (uint32_t m = 0; m < x.order(); ++m) s += cat(m ? ", " : "", x.ind[m][k]);
  return s + ")";
}

}  // namespace

void coalesce(const Exec& exec, spt_coo_s& x, spt_duplicates policy) {
  require(policy == SPT_DUPLICATES_KEEP || policy == SPT_DUPLICATES_SUM || policy == SPT_DUPLICATES_REJECT,
          "duplicates policy must be SPT_DUPLICATES_KEEP, _SUM or _REJECT, got ", static_cast<int>(policy));
  if (policy == SPT_DUPLICATES_KEEP) return;
  const std::vector<uint32_t> natural = natural_order(x.order());
  // Work on a sorted copy so that REJECT can leave x exactly as it was.
  SortedView view(exec, x, natural);
  const spt_coo_s& sorted = view.get();
  buffer<spt_nnz> starts = group_starts(exec, sorted, natural);
  const spt_nnz groups = starts.size() - 1;
  if (policy == SPT_DUPLICATES_REJECT) {
    if (groups != sorted.nnz) {
      spt_nnz first = 0;
      while (starts[first + 1] - starts[first] == 1) ++first;
      fail(SPT_ERR_INVALID_ARGUMENT, "coordinate ", coordinate_text(sorted, starts[first]),
           " (0-based) appears ", starts[first + 1] - starts[first],
           " times; use SPT_DUPLICATES_SUM to add repeated entries");
    }
    if (view.is_copy()) {
      spt_coo_s moved = view.release();
      x.own_ind = std::move(moved.own_ind);
      x.own_val = std::move(moved.own_val);
      x.refresh();
    }
    x.sorted_by = natural;
    return;
  }
  if (groups == sorted.nnz && !view.is_copy()) return;  // already sorted, nothing repeated
  spt_coo_s merged = groups == sorted.nnz ? view.release() : sum_groups(exec, sorted, starts);
  x.own_ind = std::move(merged.own_ind);
  x.own_val = std::move(merged.own_val);
  x.nnz = groups;
  x.refresh();
  x.sorted_by = natural;
}

spt_coo_s coalesced_copy(const Exec& exec, const spt_coo_s& x) {
  const std::vector<uint32_t> natural = natural_order(x.order());
  SortedView view(exec, x, natural);
  spt_coo_s y = sum_groups(exec, view.get(), group_starts(exec, view.get(), natural));
  y.sorted_by = natural;
  return y;
}

namespace {

// Whether every nonzero's coordinate is >= its predecessor's, compared
// lexicographically in `mode_order` (a full permutation of the modes).
bool is_sorted_in(const Exec& exec, const spt_coo_s& x, const std::vector<uint32_t>& mode_order) {
  const spt_nnz n = x.nnz;
  const int chunks = threads_for(exec, n);
  std::vector<const spt_index*> ind;
  for (uint32_t m : mode_order) ind.push_back(x.ind[m]);
  std::vector<char> sorted(chunks, 1);
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    for (spt_nnz k = std::max<spt_nnz>(1, chunk_begin(n, c, chunks)); k < chunk_begin(n, c + 1, chunks); ++k) {
      size_t j = 0;
      while (j < ind.size() && ind[j][k] == ind[j][k - 1]) ++j;
      if (j < ind.size() && ind[j][k] < ind[j][k - 1]) {
        sorted[c] = 0;
        break;
      }
    }
  }
  return std::all_of(sorted.begin(), sorted.end(), [](char s) { return s != 0; });
}

// The statistics of the summed tensor when entry `at(k)` is the k-th in an
// order that puts repeated coordinates next to each other. Chunk c handles
// the runs that start inside it (a run may extend past the chunk's end).
template <typename T, typename At>
SummedStats stats_of_runs(const Exec& exec, const spt_coo_s& x, At at) {
  const spt_nnz n = x.nnz;
  const int chunks = threads_for(exec, n);
  const T* val = x.values<T>();
  auto same = [&](spt_nnz a, spt_nnz b) {
    for (uint32_t m = 0; m < x.order(); ++m)
      if (x.ind[m][a] != x.ind[m][b]) return false;
    return true;
  };
  std::vector<double> squares(chunks, 0.0);
  std::vector<spt_nnz> runs(chunks, 0);
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    const spt_nnz end = chunk_begin(n, c + 1, chunks);
    spt_nnz k = chunk_begin(n, c, chunks);
    while (k > 0 && k < end && same(at(k - 1), at(k))) ++k;  // that run belongs to an earlier chunk
    double s2 = 0.0;
    spt_nnz count = 0;
    while (k < end) {
      double sum = val[at(k)];
      spt_nnz j = k + 1;
      for (; j < n && same(at(k), at(j)); ++j) sum += val[at(j)];
      s2 += sum * sum;
      ++count;
      k = j;
    }
    squares[c] = s2;
    runs[c] = count;
  }
  SummedStats stats;
  for (int c = 0; c < chunks; ++c) {
    stats.norm_squared += squares[c];
    stats.distinct += runs[c];
  }
  return stats;
}

}  // namespace

SummedStats summed_stats(const Exec& exec, const spt_coo_s& x) {
  if (x.nnz == 0) return {};
  return with_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Repeated coordinates are adjacent in any full lexicographic order:
    // use the order x is known (or found) to be in, else sort positions.
    std::vector<uint32_t> order = x.sorted_by;
    if (order.size() != x.order()) order = natural_order(x.order());
    if (order == x.sorted_by || is_sorted_in(exec, x, order))
      return stats_of_runs<T>(exec, x, [](spt_nnz k) { return k; });
    const buffer<spt_nnz> perm = sort_permutation(exec, x, order);
    return stats_of_runs<T>(exec, x, [&perm](spt_nnz k) { return perm[k]; });
  });
}

}  // namespace spt::sorting
