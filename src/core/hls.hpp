// HLS hybrid linear storage (paper: hls-tensor-core-sptmcm, §V) behind the
// opaque spt_hls handle, orders 3 and 4 (public description: sptensor/hls.h,
// design notes: docs/formats/hls.md).
//
// Levels: level 0 = the root mode, then the other modes by increasing mode
// number (`modes`). Every coordinate is packed into one uint64 with
// bits[l] bits for level l (bits of dims[mode]-1), level 0 highest:
//   packed = c_0 << (bits_1 + .. + bits_{N-1}) | ... | c_{N-1}.
// Tiles: edge 16 (shift 4) along levels 0, 1, 2 and slab_depth D (shift
// log2 D) along level 3 (order 4). A tile's linear index packs the tile
// coordinates (c_l >> shift_l) the same way with tile_bits[l] =
// max(bits[l] - shift_l, 0) bits.
//
// HLS-D (dense part), tiles sorted by linear index (so by root tile first):
//   d_tile[t]                  linear tile index
//   d_bitmap[t * W .. +W)      W = 64 * D words; sub-tile s (level-3 in-tile
//                              coordinate; 0 for order 3) is words
//                              [64 s, 64 s + 64); bit c of a sub-tile = cell
//                              c = 256 i + 16 j + k (in-tile coordinates of
//                              levels 0, 1, 2), bit c%64 of word c/64
//   d_val_ptr[t .. t+1]        the tile's values, in bitmap order
//                              (sub-tile, then cell)
//   d_root_tile[g], d_root_ptr[g .. g+1]: groups of tiles sharing their root
//                              tile (16 output rows): the kernels' tasks
// HLS-S (sparse part), sorted by packed index (stable: repeats keep input order):
//   s_ind[z] packed coordinates, s_val[z]
//   s_row[r], s_row_ptr[r .. r+1]: nonzeros of output row s_row[r]
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer.hpp"
#include "core/dtype.hpp"
#include "sptensor/hls.h"

struct spt_coo_s;

namespace spt::hls {

constexpr uint32_t kTileShift = 4;           // 16 coordinates per tile edge
constexpr uint32_t kCellsPerSubtile = 4096;  // 16^3
constexpr uint32_t kWordsPerSubtile = kCellsPerSubtile / 64;
constexpr uint32_t kDefaultThreshold = 78;   // the paper's tuned MTTKRP value per 16^3 (1.9%)
constexpr uint32_t kDefaultSlabDepth = 4;
// What SPT_HLS_PRECISION_AUTO resolves to: tf32. fp16 was slightly faster
// and as accurate (both keep 10 mantissa bits; bf16 was far less
// accurate), but half overflows above 65504 in a tile value, a factor
// entry or a TTMc partial product; tf32 keeps float32's range
// (measurements: docs/design-measurements.md, "HLS AUTO precision").
constexpr spt_hls_precision kAutoPrecision = SPT_HLS_PRECISION_TF32;

struct Params {
  uint32_t root = 0;
  uint32_t dense_threshold = 0;  // 0 = kDefaultThreshold * slab_depth
  uint32_t slab_depth = 0;       // 0 = kDefaultSlabDepth (order 4); order 3 resolves to 1
};

}  // namespace spt::hls

struct spt_hls_s {
  std::vector<spt_index> dims;
  std::vector<uint32_t> modes;      // level -> mode; modes[0] = root
  std::vector<uint32_t> bits;       // per level
  std::vector<uint32_t> shift;      // per level: in-tile coordinate bits (4, or log2 D for level 3)
  std::vector<uint32_t> tile_bits;  // per level
  uint32_t slab_depth = 1;
  uint32_t dense_threshold = 0;  // resolved
  bool threshold_calibrated = false;  // dense_threshold was measured on the GPU (src/dispatch/device_hls.cpp)
  spt_hls_precision precision = spt::hls::kAutoPrecision;  // GPU dense-tile arithmetic, resolved (never AUTO)
  spt_nnz input_nnz = 0;
  spt_nnz tiles = 0;  // non-empty tiles (dense and sparse)
  double build_seconds = 0;

  // HLS-D.
  spt::buffer<uint64_t> d_tile;
  spt::buffer<uint64_t> d_bitmap;
  spt::buffer<uint64_t> d_val_ptr;  // dense tiles + 1
  spt::ValueStore d_val;
  spt::buffer<uint32_t> d_root_tile;
  spt::buffer<uint64_t> d_root_ptr;  // root groups + 1

  // HLS-S.
  spt::buffer<uint64_t> s_ind;
  spt::ValueStore s_val;
  spt::buffer<uint32_t> s_row;
  spt::buffer<uint64_t> s_row_ptr;  // rows + 1

  // Device copies of this handle, owned by the dispatcher
  // (src/dispatch/device_hls.cpp; opaque here). Filled on the first GPU
  // MTTKRP / TTMc, released with the handle (the shared pointer's deleter
  // calls the plugin); revalidated against the shape and the array pointers
  // (a handle is immutable: a new one has new arrays; a struct copy carries
  // the pointer but not the arrays).
  mutable std::shared_ptr<void> device_cache;

  spt_dtype dtype() const { return s_val.dtype(); }
  uint32_t order() const { return static_cast<uint32_t>(dims.size()); }
  uint32_t root() const { return modes[0]; }
  spt_nnz dense_tiles() const { return d_tile.size(); }
  spt_nnz dense_nnz() const { return d_val.size(); }
  spt_nnz sparse_nnz() const { return s_val.size(); }
  spt_nnz nnz() const { return dense_nnz() + sparse_nnz(); }
  uint32_t words_per_tile() const { return spt::hls::kWordsPerSubtile * slab_depth; }
  uint32_t index_bits() const {
    uint32_t b = 0;
    for (uint32_t x : bits) b += x;
    return b;
  }
  // Coordinate of level l in a packed index.
  uint32_t unpack(uint64_t packed, uint32_t level) const {
    uint32_t below = 0;
    for (uint32_t l = level + 1; l < bits.size(); ++l) below += bits[l];
    const uint64_t mask = bits[level] == 0 ? 0 : (~uint64_t(0) >> (64 - bits[level]));
    return static_cast<uint32_t>((packed >> below) & mask);
  }
  // Tile coordinate of level l in a linear tile index.
  uint32_t unpack_tile(uint64_t tile, uint32_t level) const {
    uint32_t below = 0;
    for (uint32_t l = level + 1; l < tile_bits.size(); ++l) below += tile_bits[l];
    const uint64_t mask = tile_bits[level] == 0 ? 0 : (~uint64_t(0) >> (64 - tile_bits[level]));
    return static_cast<uint32_t>((tile >> below) & mask);
  }
  uint64_t bytes() const;
};

namespace spt::hls {

// Throws INVALID_ARGUMENT for a bad parameter (root out of range, slab depth).
void validate_params(const Params& p, uint32_t order);

// Build the HLS of x. x is not modified. Throws UNSUPPORTED (order not 3 or
// 4, index bits over 64), INVALID_ARGUMENT (params) and OUT_OF_MEMORY.
spt_hls_s from_coo(const spt_coo_s& x, const Params& params, int threads);

// The COO the handle encodes (dense cells, then sparse nonzeros), sorted
// lexicographically in level order (stable).
spt_coo_s to_coo(const spt_hls_s& h, int threads);

}  // namespace spt::hls
