// The HiCOO sparse tensor (hierarchical coordinates, Li's dissertation ch. 4)
// behind the opaque spt_hicoo handle.
//
// Layout: nonzeros in Z-Morton order, cut into blocks of B^N (B = 2^block_bits
// <= 256). Per block: N 32-bit block indices (coordinate >> block_bits) and a
// 64-bit pointer to its first nonzero; per nonzero: N 8-bit element indices
// (coordinate & (B-1)) and the value. Blocks are grouped into logical
// superblocks of L^N (L = 2^superblock_bits >= B): because Morton order is
// hierarchical, the blocks of one superblock are a contiguous run, so a
// superblock is just a block range (sptr) -- no data is moved for it.
//
// The superblock scheduler (the dissertation's lschr): for each mode n, the
// superblocks are grouped by their mode-n "slab" (superblock coordinate in
// mode n, i.e. output rows [slab*L, slab*L + L)). Superblocks of different
// slabs never write the same MTTKRP output row, so slabs are independent
// tasks; the superblocks of one slab conflict and run one after another.
// Taking the j-th superblock of every slab gives the dissertation's
// conflict-free group ("iteration") j; `iterations` is the number of groups.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/coo.hpp"
#include "core/dtype.hpp"

namespace spt {

// How HiCOO MTTKRP runs in parallel (dissertation §4.3.2).
enum class HicooStrategy {
  automatic = 0,  // the §4.3.3 rule, per mode, for the calling thread count
  direct = 1,     // independent slabs in parallel, no atomics, no copies
  privatized = 2  // equal nonzero ranges in parallel into per-thread output copies, summed at the end
};

const char* hicoo_strategy_name(HicooStrategy s);

// The superblock schedule of one mode.
struct HicooModeSchedule {
  buffer<spt_nnz> slab_ptr;     // n_slabs + 1 offsets into `superblocks`
  buffer<spt_nnz> superblocks;  // superblock ids grouped by slab (Morton order inside a slab);
                                // slabs ordered heaviest first (dynamic scheduling balances better)
  spt_nnz iterations = 0;       // most superblocks in one slab = number of conflict-free groups
  spt_nnz max_slab_nnz = 0;     // nonzeros of the heaviest slab (the direct strategy's critical path)
  spt_nnz slabs() const { return slab_ptr.empty() ? 0 : slab_ptr.size() - 1; }
};

}  // namespace spt

struct spt_hicoo_s {
  std::vector<spt_index> dims;
  spt_nnz nnz = 0;
  uint32_t block_bits = 7;       // B = 2^block_bits, 1..8
  uint32_t superblock_bits = 7;  // L = 2^superblock_bits, block_bits..31
  spt::HicooStrategy strategy = spt::HicooStrategy::automatic;  // caller's MTTKRP choice
  // GPU kernel threshold forced by the tests (spt_plugin_hicoo.window_reuse;
  // 0 = the plugin's); not in the C API. Read at the device upload.
  uint32_t gpu_window_reuse = 0;

  spt::buffer<spt_nnz> bptr;                   // n_b + 1: block b holds nonzeros [bptr[b], bptr[b+1])
  std::vector<spt::buffer<uint32_t>> binds;    // per mode, n_b block indices
  std::vector<spt::buffer<uint8_t>> einds;     // per mode, nnz element indices
  spt::ValueStore val;                         // nnz values (dtype of the source COO)
  spt::buffer<spt_nnz> sptr;                   // n_s + 1: superblock s holds blocks [sptr[s], sptr[s+1])
  std::vector<spt::HicooModeSchedule> schedule;  // per mode

  // Device copies of this tensor, owned by the dispatcher
  // (src/dispatch/device.cpp; opaque here). Filled on first device use,
  // released with the handle; revalidated against nnz, dims, block size and
  // the array pointers (a HiCOO handle is not changed in place: a new one
  // has new arrays).
  mutable std::shared_ptr<void> device_cache;

  uint32_t order() const { return static_cast<uint32_t>(dims.size()); }
  spt_dtype dtype() const { return val.dtype(); }
  spt_nnz num_blocks() const { return bptr.empty() ? 0 : bptr.size() - 1; }
  spt_nnz num_superblocks() const { return sptr.empty() ? 0 : sptr.size() - 1; }
  uint32_t block_size() const { return 1u << block_bits; }
  template <typename T>
  const T* values() const {
    return val.get<T>().data();
  }
};

namespace spt::hicoo {

constexpr uint32_t kMaxBlockBits = 8;        // 8-bit element indices
constexpr uint32_t kMaxSuperblockBits = 31;  // 32-bit coordinates
constexpr uint32_t kAssumedRank = 16;        // rank the block-size rule assumes (dissertation's R)

// Requested parameters; 0 = the suggested value.
struct Params {
  uint32_t block_size = 0;       // B: power of two in [2, 256]
  uint32_t superblock_size = 0;  // L: power of two, B <= L <= 2^31
  HicooStrategy strategy = HicooStrategy::automatic;
};

// Throws INVALID_ARGUMENT with a sentence for bad B/L/strategy.
void validate_params(const Params& p);

// Block-size rule (§4.3.3): the largest B <= 256 with N*B*R*sizeof(value)
// within the L1 data cache (R = kAssumedRank). Appends why to *why if given.
uint32_t suggest_block_bits(uint32_t order, spt_dtype dtype, std::string* why);

// COO -> HiCOO. x is not modified (it may be a view). Runs on `threads`
// threads. Unset parameters are chosen by the dissertation's rules.
spt_hicoo_s from_coo(const spt_coo_s& x, const Params& p, int threads);

// HiCOO -> owning COO (Morton order, so sorted_by is empty).
spt_coo_s to_coo(const spt_hicoo_s& h, int threads);

// Per-mode scheduling figures for a superblock size (2^superblock_bits)
// without building the tables: what the L rule compares.
struct ModeCounts {
  spt_nnz slabs = 0;         // independent superblocks (non-empty slabs)
  spt_nnz iterations = 0;    // most superblocks in one slab
  spt_nnz max_slab_nnz = 0;  // nonzeros in the heaviest slab
};

// The strategy rule for one mode with P threads (§4.3.3, plus a balance
// check, see hicoo.cpp). `why` (optional) receives one sentence.
HicooStrategy rule_strategy(const ModeCounts& c, spt_nnz nnz, spt_index dim, int threads, std::string* why);

// Counts for mode `mode` of h's current superblocks.
ModeCounts mode_counts(const spt_hicoo_s& h, uint32_t mode);

// The strategy MTTKRP uses in `mode` with `threads` threads: h.strategy
// unless automatic, else the rule.
HicooStrategy effective_strategy(const spt_hicoo_s& h, uint32_t mode, int threads);

// Statistics of §4.2.3 and the suggestions of §4.3.3.
struct Stats {
  spt_nnz num_blocks = 0;
  spt_nnz num_superblocks = 0;
  double block_ratio = 0;            // alpha_b = n_b / nnz
  double block_ratio_threshold = 0;  // eq. (4.11): HiCOO smaller than COO below it
  double mean_nnz_per_block = 0;     // nnz / n_b
  double geomean_nnz_per_block = 0;  // \bar M_b
  double slice_per_block = 0;        // \bar c_b = \bar M_b / B
  uint64_t hicoo_bytes = 0;          // bptr + binds + einds + values + superblock tables
  uint64_t coo_bytes = 0;            // N 32-bit indices + value per nonzero
  uint32_t suggested_block_size = 0;
  uint32_t suggested_superblock_size = 0;
  std::vector<ModeCounts> modes;
  std::vector<HicooStrategy> suggested_strategy;  // per mode, for `threads`
  std::string reason;                             // multi-line explanation
};

Stats compute_stats(const spt_hicoo_s& h, int threads);

// Bytes of the format: block pointers and indices, element indices, values,
// superblock pointers and the per-mode schedules (Stats::hicoo_bytes).
uint64_t storage_bytes(const spt_hicoo_s& h);

}  // namespace spt::hicoo
