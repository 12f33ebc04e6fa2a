// COO <-> HiCOO conversion, the superblock scheduler and the parameter rules
// of Li's dissertation §4.3.3.
//
// Conversion speed matters: every HiCOO MTTKRP pays it first (the measured
// conversion times: docs/performance.md, "COO to HiCOO"). When the Morton key of all coordinates fits 64 bits
// (the common case) each nonzero gets its interleaved key through byte
// lookup tables and (key, position) words are sorted by the parallel LSD
// radix sort of core/radix_sort.hpp over the key bits only; coordinates are then decoded from the sorted
// keys (no random gathers of the index arrays). Wider keys fall back to the
// comparison Morton sort of core/sort.hpp on a copy. The input is never
// modified.
#include "core/hicoo.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>

#include "core/bits.hpp"
#include "core/group_starts.hpp"
#include "core/radix_sort.hpp"
#include "core/sort.hpp"

namespace spt {

const char* hicoo_strategy_name(HicooStrategy s) {
  switch (s) {
    case HicooStrategy::direct: return "direct";
    case HicooStrategy::privatized: return "privatized";
    default: return "automatic";
  }
}

}  // namespace spt

namespace spt::hicoo {

namespace {

bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
uint32_t log2_exact(uint64_t v) { return static_cast<uint32_t>(bit_width(v) - 1); }

int threads_for(int threads, spt_nnz work) {
  const spt_nnz useful = work / 4096 + 1;
  return static_cast<int>(std::max<spt_nnz>(1, std::min<spt_nnz>(std::max(threads, 1), useful)));
}

// ----------------------------------------------------------------------------
// Morton keys in 64 bits.

// Bit interleaving as in sorting::morton_permutation: levels from the most
// significant down, mode 0 first within a level; bits above a mode's width
// are always zero and are left out, which keeps the order.
class MortonCodec {
 public:
  explicit MortonCodec(const std::vector<spt_index>& dims) : order_(static_cast<uint32_t>(dims.size())) {
    int max_width = 0;
    for (spt_index d : dims) {
      width_.push_back(bit_width(d - 1));
      total_ += width_.back();
      max_width = std::max(max_width, width_.back());
    }
    if (total_ > 64) return;
    std::vector<std::vector<int>> pos(order_);
    for (uint32_t m = 0; m < order_; ++m) pos[m].assign(width_[m], 0);
    int next = total_;
    for (int level = max_width - 1; level >= 0; --level)
      for (uint32_t m = 0; m < order_; ++m)
        if (level < width_[m]) pos[m][level] = --next;
    enc_.assign(static_cast<size_t>(order_) * 4 * 256, 0);
    key_bytes_ = (total_ + 7) / 8;
    dec_.assign(static_cast<size_t>(std::max(key_bytes_, 1)) * 256 * order_, 0);
    for (uint32_t m = 0; m < order_; ++m)
      for (int bit = 0; bit < width_[m]; ++bit) {
        const int p = pos[m][bit];
        for (uint32_t v = 0; v < 256; ++v) {
          if (v >> (bit % 8) & 1) enc_[(m * 4 + bit / 8) * 256 + v] |= uint64_t(1) << p;
          if (v >> (p % 8) & 1) dec_[((p / 8) * 256 + v) * order_ + m] |= spt_index(1) << bit;
        }
      }
  }
  bool fits() const { return total_ <= 64; }
  int total_bits() const { return total_; }
  // Key bits below level `bits` of every mode (the within-cell part of a
  // 2^bits cell's key).
  int low_bits(uint32_t bits) const {
    int s = 0;
    for (int w : width_) s += std::min<int>(w, static_cast<int>(bits));
    return s;
  }
  uint64_t encode(const spt_index* const* ind, spt_nnz k) const {
    uint64_t key = 0;
    for (uint32_t m = 0; m < order_; ++m) {
      const spt_index i = ind[m][k];
      const uint64_t* t = enc_.data() + static_cast<size_t>(m) * 4 * 256;
      key |= t[i & 255] | t[256 + (i >> 8 & 255)] | t[512 + (i >> 16 & 255)] | t[768 + (i >> 24)];
    }
    return key;
  }
  void decode(uint64_t key, spt_index* c) const {
    for (uint32_t m = 0; m < order_; ++m) c[m] = 0;
    for (int q = 0; q < key_bytes_; ++q) {
      const spt_index* d = dec_.data() + ((static_cast<size_t>(q) * 256 + (key >> (8 * q) & 255)) * order_);
      for (uint32_t m = 0; m < order_; ++m) c[m] |= d[m];
    }
  }

 private:
  uint32_t order_;
  std::vector<int> width_;
  int total_ = 0;
  int key_bytes_ = 0;
  std::vector<uint64_t> enc_;   // [mode][byte of index][value] -> key bits
  std::vector<spt_index> dec_;  // [byte of key][value][mode] -> index bits
};

// Fill bptr / binds / einds / values from nonzeros in Morton order given by
// `source`: source.block_start(k), source.coords(k, c), source.position(k)
// (where x's value of sorted nonzero k lives).
template <typename T, typename Source>
void fill_blocks(spt_hicoo_s& h, const T* values, const Source& source, int threads) {
  const uint32_t order = h.order(), b = h.block_bits;
  const spt_index mask = (spt_index(1) << b) - 1;
  h.bptr = sorting::collect_starts(h.nnz, threads_for(threads, h.nnz),
                                   [&](spt_nnz k) { return source.block_start(k); });
  const spt_nnz nb = h.num_blocks();
  h.binds.assign(order, {});
  h.einds.assign(order, {});
  for (uint32_t m = 0; m < order; ++m) {
    resize_named(h.binds[m], nb, [&] { return cat("HiCOO: the block indices of mode ", m, " (blocks)"); });
    resize_named(h.einds[m], h.nnz, [&] { return cat("HiCOO: the element indices of mode ", m, " (nnz)"); });
  }
  resize_named(h.val.get<T>(), h.nnz, [] { return std::string("HiCOO: the values (nnz)"); });
  T* out = h.val.get<T>().data();
  const int t = threads_for(threads, h.nnz);
  std::vector<spt_index> coords(static_cast<size_t>(t) * order);  // per-thread scratch, allocated outside the regions
  // Per nonzero (equal ranges: a few huge blocks still split evenly), then
  // per block from its first nonzero.
#pragma omp parallel num_threads(t)
  {
    spt_index* c = coords.data() + static_cast<size_t>(omp_get_thread_num()) * order;
#pragma omp for schedule(static)
    for (spt_nnz k = 0; k < h.nnz; ++k) {
      source.coords(k, c);
      for (uint32_t m = 0; m < order; ++m) h.einds[m][k] = static_cast<uint8_t>(c[m] & mask);
      out[k] = values[source.position(k)];
    }
#pragma omp for schedule(static)
    for (spt_nnz j = 0; j < nb; ++j) {
      source.coords(h.bptr[j], c);
      for (uint32_t m = 0; m < order; ++m) h.binds[m][j] = c[m] >> b;
    }
  }
}

// Sorted (key << pos_bits | pos) words.
struct PackedSource {
  const buffer<uint64_t>* words;
  const MortonCodec* codec;
  int pos_bits;
  int block_low_bits;
  uint64_t key(spt_nnz k) const { return (*words)[k] >> pos_bits; }
  bool block_start(spt_nnz k) const { return (key(k) >> block_low_bits) != (key(k - 1) >> block_low_bits); }
  void coords(spt_nnz k, spt_index* c) const { codec->decode(key(k), c); }
  spt_nnz position(spt_nnz k) const { return (*words)[k] & ((uint64_t(1) << pos_bits) - 1); }
};

// Sorted (key, pos) pairs.
struct PairSource {
  const buffer<sorting::KeyPosition>* items;
  const MortonCodec* codec;
  int block_low_bits;
  bool block_start(spt_nnz k) const {
    return ((*items)[k].key >> block_low_bits) != ((*items)[k - 1].key >> block_low_bits);
  }
  void coords(spt_nnz k, spt_index* c) const { codec->decode((*items)[k].key, c); }
  spt_nnz position(spt_nnz k) const { return (*items)[k].position; }
};

// A Morton-sorted COO copy (keys wider than 64 bits).
struct SortedCooSource {
  const spt_coo_s* x;
  uint32_t block_bits;
  bool block_start(spt_nnz k) const {
    for (uint32_t m = 0; m < x->order(); ++m)
      if ((x->ind[m][k] >> block_bits) != (x->ind[m][k - 1] >> block_bits)) return true;
    return false;
  }
  void coords(spt_nnz k, spt_index* c) const {
    for (uint32_t m = 0; m < x->order(); ++m) c[m] = x->ind[m][k];
  }
  spt_nnz position(spt_nnz k) const { return k; }
};

// ----------------------------------------------------------------------------
// Superblocks and their schedule.

// First block of each superblock of size 2^(block_bits + k), then n_b.
buffer<spt_nnz> superblock_starts(const spt_hicoo_s& h, uint32_t k, int threads) {
  const uint32_t order = h.order();
  return sorting::collect_starts(h.num_blocks(), threads_for(threads, h.num_blocks()), [&](spt_nnz j) {
    for (uint32_t m = 0; m < order; ++m)
      if ((h.binds[m][j] >> k) != (h.binds[m][j - 1] >> k)) return true;
    return false;
  });
}

spt_nnz superblock_nnz(const spt_hicoo_s& h, const buffer<spt_nnz>& sptr, spt_nnz s) {
  return h.bptr[sptr[s + 1]] - h.bptr[sptr[s]];
}

// (slab, superblock) pairs ordered by slab (superblock order kept within a
// slab): counting sort when the slab range is small, else a comparison sort.
std::vector<std::pair<uint32_t, spt_nnz>> slab_pairs(const spt_hicoo_s& h, const buffer<spt_nnz>& sptr, uint32_t mode,
                                                     uint32_t k) {
  const spt_nnz ns = sptr.empty() ? 0 : sptr.size() - 1;
  std::vector<std::pair<uint32_t, spt_nnz>> pairs(ns);
  const uint64_t range = ((uint64_t(h.dims[mode]) - 1) >> (h.block_bits + k)) + 1;
  if (range <= std::max<uint64_t>(4 * ns, uint64_t(1) << 20)) {
    std::vector<spt_nnz> start(range + 1, 0);
    for (spt_nnz s = 0; s < ns; ++s) ++start[(h.binds[mode][sptr[s]] >> k) + 1];
    for (uint64_t i = 0; i < range; ++i) start[i + 1] += start[i];
    for (spt_nnz s = 0; s < ns; ++s) {
      const uint32_t slab = h.binds[mode][sptr[s]] >> k;
      pairs[start[slab]++] = {slab, s};
    }
  } else {
    for (spt_nnz s = 0; s < ns; ++s) pairs[s] = {h.binds[mode][sptr[s]] >> k, s};
    std::sort(pairs.begin(), pairs.end());
  }
  return pairs;
}

ModeCounts counts_for(const spt_hicoo_s& h, const buffer<spt_nnz>& sptr, uint32_t mode, uint32_t k) {
  ModeCounts c;
  const auto pairs = slab_pairs(h, sptr, mode, k);
  for (size_t i = 0; i < pairs.size();) {
    size_t j = i;
    spt_nnz nz = 0;
    while (j < pairs.size() && pairs[j].first == pairs[i].first) nz += superblock_nnz(h, sptr, pairs[j++].second);
    ++c.slabs;
    c.iterations = std::max<spt_nnz>(c.iterations, j - i);
    c.max_slab_nnz = std::max(c.max_slab_nnz, nz);
    i = j;
  }
  return c;
}

HicooModeSchedule build_schedule(const spt_hicoo_s& h, uint32_t mode) {
  HicooModeSchedule sc;
  const uint32_t k = h.superblock_bits - h.block_bits;
  const auto pairs = slab_pairs(h, h.sptr, mode, k);
  struct Run {
    size_t begin, end;
    spt_nnz nnz;
  };
  std::vector<Run> runs;
  for (size_t i = 0; i < pairs.size();) {
    size_t j = i;
    spt_nnz nz = 0;
    while (j < pairs.size() && pairs[j].first == pairs[i].first) nz += superblock_nnz(h, h.sptr, pairs[j++].second);
    runs.push_back({i, j, nz});
    sc.iterations = std::max<spt_nnz>(sc.iterations, j - i);
    sc.max_slab_nnz = std::max(sc.max_slab_nnz, nz);
    i = j;
  }
  // Heaviest slabs first: with dynamic scheduling the long tasks start early.
  std::stable_sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.nnz > b.nnz; });
  sc.slab_ptr.resize(runs.size() + 1);
  sc.superblocks.resize(pairs.size());
  spt_nnz out = 0;
  sc.slab_ptr[0] = 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    for (size_t i = runs[r].begin; i < runs[r].end; ++i) sc.superblocks[out++] = pairs[i].second;
    sc.slab_ptr[r + 1] = out;
  }
  return sc;
}

// Parallel tasks a mode offers under its strategy: slabs (direct), or 4P
// equal nonzero ranges (privatized: with private outputs any split is safe,
// so the task count does not depend on L).
spt_nnz tasks_of(HicooStrategy s, const ModeCounts& c, int threads) {
  return s == HicooStrategy::privatized ? spt_nnz(4) * threads : c.slabs;
}

// Superblock-size rule (§4.3.3): try L = B * 2^k; a mode is content when its
// task count is in [4P, 100P]; take the L that contents most modes (the
// smallest such L on ties, keeping parallel slack).
uint32_t choose_superblock_bits(const spt_hicoo_s& h, int threads, std::string* why) {
  const uint32_t order = h.order(), b = h.block_bits;
  const int p = std::max(threads, 1);
  uint32_t max_dim_bits = 0;
  for (spt_index d : h.dims) max_dim_bits = std::max<uint32_t>(max_dim_bits, bit_width(d - 1));
  const uint32_t last_k = std::max<uint32_t>(std::min(kMaxSuperblockBits, std::max(max_dim_bits, b)), b) - b;
  const int candidates = static_cast<int>(last_k) + 1;
  std::vector<int> content(candidates, 0);
  std::vector<std::string> notes(candidates);
  // Sequential: a few milliseconds even for millions of blocks, and the
  // allocations inside must not throw from a parallel region.
  for (int k = 0; k < candidates; ++k) {
    const buffer<spt_nnz> sptr = superblock_starts(h, k, 1);
    const spt_nnz ns = sptr.size() - 1;
    std::ostringstream os;
    os << "L=" << (uint64_t(1) << (b + k)) << ": " << ns << " superblocks; tasks per mode";
    for (uint32_t m = 0; m < order; ++m) {
      const ModeCounts c = counts_for(h, sptr, m, k);
      const HicooStrategy s = rule_strategy(c, h.nnz, h.dims[m], p, nullptr);
      const spt_nnz tasks = tasks_of(s, c, p);
      content[k] += tasks >= spt_nnz(4) * p && tasks <= spt_nnz(100) * p;
      os << " " << tasks << (s == HicooStrategy::privatized ? "(priv)" : "");
    }
    notes[k] = os.str();
  }
  int best = 0;
  for (int k = 1; k < candidates; ++k)
    if (content[k] > content[best]) best = k;
  if (why) {
    *why += cat("superblock size L = ", uint64_t(1) << (b + best), ": the L = B*2^k whose parallel tasks per mode ",
                "(slabs for direct, 4P nonzero ranges for privatized) fall in [4P, 100P] = [", 4 * p, ", ", 100 * p,
                "] for the most modes (", content[best], " of ", order, "; smallest L on ties):\n");
    for (int k = 0; k < candidates; ++k) *why += cat("    ", notes[k], k == best ? "  <- chosen" : "", "\n");
  }
  return b + static_cast<uint32_t>(best);
}

void build_superblocks(spt_hicoo_s& h, int threads) {
  h.sptr = superblock_starts(h, h.superblock_bits - h.block_bits, threads);
  h.schedule.assign(h.order(), {});
  for (uint32_t m = 0; m < h.order(); ++m) h.schedule[m] = build_schedule(h, m);  // cheap: one pass over superblocks
}

long l1_data_cache_bytes() {
  long s = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  return s > 0 ? s : 32768;
}

}  // namespace

void validate_params(const Params& p) {
  if (p.block_size != 0) {
    require(is_pow2(p.block_size), "block size B must be a power of two, got ", p.block_size);
    require(p.block_size >= 2 && p.block_size <= (1u << kMaxBlockBits),
            "block size B must be in [2, 256] (element indices are 8-bit), got ", p.block_size);
  }
  if (p.superblock_size != 0) {
    require(is_pow2(p.superblock_size), "superblock size L must be a power of two, got ", p.superblock_size);
    require(uint64_t(p.superblock_size) <= (uint64_t(1) << kMaxSuperblockBits), "superblock size L must be <= 2^31, got ",
            p.superblock_size);
    const uint32_t b = p.block_size != 0 ? p.block_size : 2;
    require(p.superblock_size >= b, "superblock size L (", p.superblock_size, ") must be >= the block size B (",
            p.block_size != 0 ? cat(p.block_size) : std::string("2 at least"), ")");
  }
  require(p.strategy == HicooStrategy::automatic || p.strategy == HicooStrategy::direct ||
              p.strategy == HicooStrategy::privatized,
          "strategy must be automatic (0), direct (1) or privatized (2), got ", static_cast<int>(p.strategy));
}

uint32_t suggest_block_bits(uint32_t order, spt_dtype dtype, std::string* why) {
  const long cache = l1_data_cache_bytes();
  const uint64_t per_row = uint64_t(order) * kAssumedRank * dtype_size(dtype);
  uint32_t bits = 1;
  while (bits < kMaxBlockBits && (uint64_t(1) << (bits + 1)) * per_row <= uint64_t(cache)) ++bits;
  if (why)
    *why += cat("block size B = ", 1u << bits, ": the largest power of two <= 256 with N*B*R*sizeof(value) = ", order,
                "*", 1u << bits, "*", kAssumedRank, "*", dtype_size(dtype), " = ", (uint64_t(1) << bits) * per_row,
                " bytes within the ", cache, "-byte L1 data cache, so the N blocked factor matrices stay cached ",
                "(R = ", kAssumedRank, " assumed)\n");
  return bits;
}

HicooStrategy rule_strategy(const ModeCounts& c, spt_nnz nnz, spt_index dim, int threads,
                            std::string* why) {
  const spt_nnz p = std::max(threads, 1);
  if (p == 1) {
    if (why) *why = "direct: one thread (no write conflicts to resolve)";
    return HicooStrategy::direct;
  }
  // Private copies are only worth it for short modes (the dissertation uses
  // privatization for them alone): (P-1) * I_n rows at most half the
  // nonzeros, the bound the COO kernel uses too.
  const bool copies_cheap = (p - 1) * spt_nnz(dim) * 2 <= nnz;
  // §4.3.3: few independent superblocks (< 4P) and many more iterations
  // (> 20x) -> privatize the iterations.
  if (c.slabs < 4 * p && c.iterations > 20 * c.slabs && copies_cheap) {
    if (why)
      *why = cat("privatized: ", c.slabs, " independent superblocks < 4P = ", 4 * p, " and ", c.iterations,
                 " iterations > 20x that (dissertation rule), and P-1 private copies of ", dim,
                 " rows are cheap next to the work");
    return HicooStrategy::privatized;
  }
  // Extension (not in the dissertation): the direct strategy cannot finish
  // before its heaviest slab does. When that slab holds more than 4/(3P) of
  // the nonzeros, direct parallelism stays below 3/4 of P; privatize when
  // the copies are cheap.
  const bool unbalanced = nnz > 0 && 3 * c.max_slab_nnz * p > 4 * nnz;
  if (unbalanced && copies_cheap) {
    if (why)
      *why = cat("privatized: the heaviest slab holds ", c.max_slab_nnz, " of ", nnz,
                 " nonzeros, so direct would run below 3/4 of P = ", p,
                 " threads, and P-1 private copies of ", dim, " rows are cheap next to the work (balance rule)");
    return HicooStrategy::privatized;
  }
  if (why)
    *why = cat("direct: ", c.slabs, " independent superblocks (slabs), ", c.iterations,
               " iterations; conflict-free without copies");
  return HicooStrategy::direct;
}

ModeCounts mode_counts(const spt_hicoo_s& h, uint32_t mode) {
  ModeCounts c;
  const HicooModeSchedule& s = h.schedule[mode];
  c.slabs = s.slabs();
  c.iterations = s.iterations;
  c.max_slab_nnz = s.max_slab_nnz;
  return c;
}

HicooStrategy effective_strategy(const spt_hicoo_s& h, uint32_t mode, int threads) {
  if (h.strategy != HicooStrategy::automatic) return h.strategy;
  return rule_strategy(mode_counts(h, mode), h.nnz, h.dims[mode], threads, nullptr);
}

spt_hicoo_s from_coo(const spt_coo_s& x, const Params& p, int threads) {
  validate_params(p);
  const uint32_t order = x.order();
  require(order >= 2, "HiCOO needs a tensor of order >= 2, got order ", order);
  threads = std::max(threads, 1);
  spt_hicoo_s h;
  h.dims = x.dims;
  h.nnz = x.nnz;
  h.strategy = p.strategy;
  h.block_bits = p.block_size ? log2_exact(p.block_size) : suggest_block_bits(order, x.dtype(), nullptr);
  h.val.set_dtype(x.dtype());

  const MortonCodec codec(x.dims);
  const spt_nnz n = x.nnz;
  with_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* values = x.values<T>();
    const int t = threads_for(threads, n);
    const int block_low = codec.fits() ? codec.low_bits(h.block_bits) : 0;
    const int pos_bits = bit_width(n > 0 ? n - 1 : 0);
    if (codec.fits() && codec.total_bits() + pos_bits <= 64) {
      buffer<uint64_t> words(n);
      const spt_index* const* ind = x.ind.data();
#pragma omp parallel for num_threads(t) schedule(static)
      for (spt_nnz k = 0; k < n; ++k) words[k] = codec.encode(ind, k) << pos_bits | k;
      {
        buffer<uint64_t> scratch;  // freed before fill_blocks allocates (its pages are reused)
        sorting::radix_sort(words, scratch, pos_bits, pos_bits + codec.total_bits(), threads);
      }
      fill_blocks<T>(h, values, PackedSource{&words, &codec, pos_bits, block_low}, threads);
    } else if (codec.fits()) {
      buffer<sorting::KeyPosition> items(n);
      const spt_index* const* ind = x.ind.data();
#pragma omp parallel for num_threads(t) schedule(static)
      for (spt_nnz k = 0; k < n; ++k) items[k] = {codec.encode(ind, k), k};
      {
        buffer<sorting::KeyPosition> scratch;
        sorting::radix_sort(items, scratch, 0, codec.total_bits(), threads);
      }
      fill_blocks<T>(h, values, PairSource{&items, &codec, block_low}, threads);
    } else {
      const Exec exec{threads};
      const spt_coo_s sorted = sorting::permuted_copy(exec, x, sorting::morton_permutation(exec, x));
      fill_blocks<T>(h, sorted.values<T>(), SortedCooSource{&sorted, h.block_bits}, threads);
    }
  });

  h.superblock_bits = p.superblock_size ? log2_exact(p.superblock_size) : choose_superblock_bits(h, threads, nullptr);
  require(h.superblock_bits >= h.block_bits, "superblock size L (", uint64_t(1) << h.superblock_bits,
          ") must be >= the block size B (", h.block_size(), ")");
  build_superblocks(h, threads);
  return h;
}

spt_coo_s to_coo(const spt_hicoo_s& h, int threads) {
  spt_coo_s x;
  x.init_owned(h.dtype(), h.dims, h.nnz);
  const uint32_t order = h.order(), b = h.block_bits;
  const spt_nnz nb = h.num_blocks();
  with_dtype(h.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = h.values<T>();
    T* dst = x.mutable_values<T>();
#pragma omp parallel for num_threads(threads_for(threads, h.nnz)) schedule(dynamic, 512)
    for (spt_nnz j = 0; j < nb; ++j) {
      for (uint32_t m = 0; m < order; ++m) {
        const spt_index base = h.binds[m][j] << b;
        spt_index* out = x.mutable_ind(m);
        for (spt_nnz k = h.bptr[j]; k < h.bptr[j + 1]; ++k) out[k] = base | h.einds[m][k];
      }
      for (spt_nnz k = h.bptr[j]; k < h.bptr[j + 1]; ++k) dst[k] = src[k];
    }
  });
  return x;
}

uint64_t storage_bytes(const spt_hicoo_s& h) {
  const uint64_t order = h.order();
  const uint64_t blocks = h.num_blocks();
  uint64_t sched = 0;
  for (const auto& sc : h.schedule) sched += (sc.slab_ptr.size() + sc.superblocks.size()) * sizeof(spt_nnz);
  return (blocks + 1) * sizeof(spt_nnz) + order * blocks * sizeof(uint32_t) + order * h.nnz +
         h.nnz * dtype_size(h.dtype()) + (h.num_superblocks() + 1) * sizeof(spt_nnz) + sched;
}

Stats compute_stats(const spt_hicoo_s& h, int threads) {
  Stats s;
  const uint32_t order = h.order();
  const int p = std::max(threads, 1);
  const size_t vbytes = dtype_size(h.dtype());
  s.num_blocks = h.num_blocks();
  s.num_superblocks = h.num_superblocks();
  s.block_ratio = h.nnz ? double(s.num_blocks) / double(h.nnz) : 0.0;
  s.block_ratio_threshold = (32.0 - 8.0) / (32.0 + 64.0 / order);
  s.mean_nnz_per_block = s.num_blocks ? double(h.nnz) / double(s.num_blocks) : 0.0;
  double log_sum = 0.0;
  for (spt_nnz j = 0; j < s.num_blocks; ++j) log_sum += std::log(double(h.bptr[j + 1] - h.bptr[j]));
  s.geomean_nnz_per_block = s.num_blocks ? std::exp(log_sum / double(s.num_blocks)) : 0.0;
  s.slice_per_block = s.geomean_nnz_per_block / double(h.block_size());
  s.coo_bytes = h.nnz * (uint64_t(order) * sizeof(spt_index) + vbytes);
  s.hicoo_bytes = storage_bytes(h);

  std::string why;
  s.suggested_block_size = 1u << suggest_block_bits(order, h.dtype(), &why);
  if (s.suggested_block_size != h.block_size())
    why += cat("  (this handle uses B = ", h.block_size(), "; the L suggestion below is for its blocks)\n");
  s.suggested_superblock_size = 1u << choose_superblock_bits(h, p, &why);
  if (s.suggested_superblock_size != (1u << h.superblock_bits))
    why += cat("  (this handle uses L = ", 1u << h.superblock_bits, "; strategies below are for its superblocks)\n");
  why += cat("parallel strategy per mode with P = ", p, " threads (rule: privatize when independent superblocks < 4P ",
             "and iterations > 20x independent superblocks, or when one slab would serialise the direct strategy; ",
             "only when P-1 output copies take at most half as many rows as there are nonzeros):\n");
  for (uint32_t m = 0; m < order; ++m) {
    const ModeCounts c = mode_counts(h, m);
    std::string rule;
    const HicooStrategy st = rule_strategy(c, h.nnz, h.dims[m], p, &rule);
    s.modes.push_back(c);
    s.suggested_strategy.push_back(st);
    why += cat("  mode ", m, " (", h.dims[m], " rows): ", rule, "\n");
  }
  why += cat("storage: alpha_b = n_b/nnz = ", s.block_ratio, (s.block_ratio < s.block_ratio_threshold ? " < " : " >= "),
             s.block_ratio_threshold, " (eq. 4.11), so HiCOO is ",
             (s.block_ratio < s.block_ratio_threshold ? "smaller" : "not smaller"),
             " than COO in indices; bytes HiCOO ", s.hicoo_bytes, " vs COO ", s.coo_bytes, "\n");
  why += cat("performance: c_b = ", s.slice_per_block,
             (s.slice_per_block < 0.01 ? " < 0.01: blocks are too sparse for factor reuse; CSF is likely faster"
                                       : " >= 0.01: blocks reuse factor rows; HiCOO MTTKRP is competitive"),
             "\n");
  s.reason = std::move(why);
  return s;
}

}  // namespace spt::hicoo
