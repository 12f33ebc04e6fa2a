// Building, decoding and validating HLS (layout: hls.hpp).
//
// Construction, all parallel and free of atomics:
//  1. one 64-bit sort key per nonzero: its linear tile index above its
//     in-tile cell (sub-tile first, then levels 0, 1, 2, so that key order
//     inside a tile is bitmap order); the key has exactly index_bits bits;
//  2. a stable sort of (key, position) pairs (the parallel LSD radix sort
//     of core/radix_sort.hpp);
//  3. run boundaries of tiles and of cells (distinct keys) by per-thread
//     counts and a prefix sum; a tile is dense when it has at least
//     dense_threshold cells;
//  4. dense tiles: bitmaps and values filled per tile (repeats of a cell are
//     summed in input order, which the stable sort kept);
//  5. sparse nonzeros: packed coordinates radix-sorted again (root level in
//     the highest bits) so each output row's nonzeros are contiguous.
#include "core/hls.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <type_traits>
#include <utility>

#include "core/bits.hpp"
#include "core/coo.hpp"
#include "core/error.hpp"
#include "core/radix_sort.hpp"
#include "core/sort.hpp"

namespace spt::hls {

namespace {

// Static chunk [begin, end) of thread t of nt over n items.
inline void chunk(uint64_t n, int t, int nt, uint64_t& begin, uint64_t& end) {
  begin = n * uint64_t(t) / uint64_t(nt);
  end = n * uint64_t(t + 1) / uint64_t(nt);
}

// Start positions of runs over [0, n): position p starts a run when
// is_start(p) (p = 0 always does), plus a final entry n. Per-thread counts
// and a prefix sum, no atomics.
template <typename F>
buffer<uint64_t> run_starts(uint64_t n, int threads, F is_start) {
  std::vector<uint64_t> count(size_t(threads) + 1, 0);
  buffer<uint64_t> starts;
  int used = 1;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int nt = omp_get_num_threads();
#pragma omp single
    used = nt;
    uint64_t b, e;
    chunk(n, t, nt, b, e);
    uint64_t c = 0;
    for (uint64_t p = b; p < e; ++p)
      if (p == 0 || is_start(p)) ++c;
    count[size_t(t) + 1] = c;
  }
  for (int t = 0; t < used; ++t) count[size_t(t) + 1] += count[size_t(t)];
  starts.resize(count[size_t(used)] + 1);
#pragma omp parallel num_threads(used)
  {
    const int t = omp_get_thread_num();
    const int nt = omp_get_num_threads();
    uint64_t b, e;
    chunk(n, t, nt, b, e);
    uint64_t w = count[size_t(t)];
    for (uint64_t p = b; p < e; ++p)
      if (p == 0 || is_start(p)) starts[w++] = p;
  }
  starts.back() = n;
  return starts;
}

template <typename T>
void build(const spt_coo_s& x, spt_hls_s& h, int threads) {
  const uint64_t n = x.nnz;
  const uint32_t order = h.order();
  const T* val = x.values<T>();
  // Cell key layout: the level-3 in-tile coordinate (order 4) highest, then levels 0, 1, 2.
  std::vector<uint32_t> cell_levels;
  if (order == 4) cell_levels.push_back(3);
  for (uint32_t l = 0; l < 3; ++l) cell_levels.push_back(l);
  std::vector<uint32_t> cell_bits(order);
  uint32_t cell_total = 0;
  for (uint32_t l = 0; l < order; ++l) {
    cell_bits[l] = std::min(h.bits[l], h.shift[l]);
    cell_total += cell_bits[l];
  }
  std::vector<const spt_index*> ind(order);
  for (uint32_t l = 0; l < order; ++l) ind[l] = x.ind[h.modes[l]];
  auto tile_of = [&](uint64_t k) {
    uint64_t t = 0;
    for (uint32_t l = 0; l < order; ++l) t = (t << h.tile_bits[l]) | (uint64_t(ind[l][k]) >> h.shift[l]);
    return t;
  };
  auto packed_of = [&](uint64_t k) {
    uint64_t p = 0;
    for (uint32_t l = 0; l < order; ++l) p = (p << h.bits[l]) | uint64_t(ind[l][k]);
    return p;
  };

  // 1-2. Keys, sorted stably.
  buffer<sorting::KeyPosition> cells(n);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t k = 0; k < int64_t(n); ++k) {
    uint64_t cell = 0;
    for (uint32_t l : cell_levels) cell = (cell << cell_bits[l]) | (uint64_t(ind[l][k]) & ((uint64_t(1) << h.shift[l]) - 1));
    cells[k] = {(cell_total == 64 ? 0 : tile_of(uint64_t(k)) << cell_total) | cell, uint64_t(k)};
  }
  {
    buffer<sorting::KeyPosition> scratch;
    sorting::radix_sort(cells, scratch, 0, static_cast<int>(h.index_bits()), threads);
  }
  auto key_at = [&](uint64_t p) { return cells[p].key; };
  auto pos_at = [&](uint64_t p) { return cells[p].position; };

  // 3. Tiles and cells.
  auto tile_key = [&](uint64_t p) { return cell_total == 64 ? 0 : key_at(p) >> cell_total; };
  const buffer<uint64_t> tile_start =
      n == 0 ? buffer<uint64_t>(1, 0) : run_starts(n, threads, [&](uint64_t p) { return tile_key(p) != tile_key(p - 1); });
  const buffer<uint64_t> cell_start =
      n == 0 ? buffer<uint64_t>(1, 0) : run_starts(n, threads, [&](uint64_t p) { return key_at(p) != key_at(p - 1); });
  const uint64_t tiles = tile_start.size() - 1;
  h.tiles = tiles;
  // first_cell[t]: index of the tile's first cell in cell_start (cells nest in tiles).
  buffer<uint64_t> first_cell(tiles + 1);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t t = 0; t <= int64_t(tiles); ++t)
    first_cell[t] = uint64_t(std::lower_bound(cell_start.begin(), cell_start.end(), tile_start[t]) - cell_start.begin());
  auto cells_of = [&](uint64_t t) { return first_cell[t + 1] - first_cell[t]; };
  auto is_dense = [&](uint64_t t) { return cells_of(t) >= h.dense_threshold; };

  // Dense tile numbering and value offsets, sparse offsets (sequential
  // prefix over tiles: one pass of O(tiles) integer adds).
  buffer<uint64_t> tile_slot(tiles);  // dense: dense tile number; sparse: first sparse output position
  uint64_t dense_tiles = 0, dense_cells = 0, sparse_nnz = 0;
  h.d_val_ptr.clear();
  for (uint64_t t = 0; t < tiles; ++t) {
    if (is_dense(t)) {
      tile_slot[t] = dense_tiles++;
      dense_cells += cells_of(t);
    } else {
      tile_slot[t] = sparse_nnz;
      sparse_nnz += tile_start[t + 1] - tile_start[t];
    }
  }
  const uint32_t W = h.words_per_tile();
  resize_named(h.d_tile, dense_tiles, [] { return std::string("HLS: the dense tiles' keys (dense tiles)"); });
  resize_named(h.d_val_ptr, dense_tiles + 1, [] { return std::string("HLS: the dense tiles' value offsets"); });
  resize_named(h.d_bitmap, checked_mul(dense_tiles, W, "HLS bitmap words"),
               [] { return std::string("HLS: the dense tiles' bitmaps"); });
  std::fill(h.d_bitmap.begin(), h.d_bitmap.end(), uint64_t(0));
  {
    uint64_t off = 0;
    for (uint64_t t = 0; t < tiles; ++t)
      if (is_dense(t)) {
        h.d_val_ptr[tile_slot[t]] = off;
        off += cells_of(t);
      }
    h.d_val_ptr[dense_tiles] = off;
  }
  resize_named(h.d_val.get<T>(), dense_cells, [] { return std::string("HLS: the dense tiles' values (cells)"); });
  buffer<sorting::KeyPosition> sparse;  // (packed coordinates, source position)
  resize_named(sparse, sparse_nnz, [] { return std::string("HLS: the sparse part's packed coordinates and positions"); });
  T* dval = h.d_val.get<T>().data();

  // 4. Dense tiles (and the sparse nonzeros' packed keys), one tile per iteration.
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16)
  for (int64_t t = 0; t < int64_t(tiles); ++t) {
    const uint64_t b = tile_start[t], e = tile_start[t + 1];
    if (is_dense(uint64_t(t))) {
      const uint64_t d = tile_slot[t];
      h.d_tile[d] = tile_key(b);
      uint64_t* bm = h.d_bitmap.data() + d * W;
      T* v = dval + h.d_val_ptr[d];
      for (uint64_t c = first_cell[t]; c < first_cell[t + 1]; ++c) {
        const uint64_t k0 = pos_at(cell_start[c]);
        uint32_t cell = 0;
        for (uint32_t l = 0; l < 3; ++l) cell = (cell << 4) | (ind[l][k0] & 15u);
        const uint32_t sub = order == 4 ? (ind[3][k0] & (h.slab_depth - 1)) : 0;
        bm[sub * kWordsPerSubtile + cell / 64] |= uint64_t(1) << (cell % 64);
        T sum = val[k0];
        for (uint64_t p = cell_start[c] + 1; p < cell_start[c + 1]; ++p) sum += val[pos_at(p)];
        *v++ = sum;
      }
    } else {
      uint64_t w = tile_slot[t];
      for (uint64_t p = b; p < e; ++p, ++w) {
        sparse[w] = {packed_of(pos_at(p)), pos_at(p)};
      }
    }
  }
  // Root groups of dense tiles.
  uint32_t below_root = 0;
  for (uint32_t l = 1; l < order; ++l) below_root += h.tile_bits[l];
  auto root_tile = [&](uint64_t d) { return below_root == 64 ? 0 : h.d_tile[d] >> below_root; };
  const buffer<uint64_t> groups =
      dense_tiles == 0 ? buffer<uint64_t>(1, 0)
                       : run_starts(dense_tiles, threads, [&](uint64_t d) { return root_tile(d) != root_tile(d - 1); });
  h.d_root_ptr.assign(groups.begin(), groups.end());
  h.d_root_tile.resize(groups.size() - 1);
  for (uint64_t g = 0; g + 1 < groups.size(); ++g) h.d_root_tile[g] = static_cast<uint32_t>(root_tile(groups[g]));

  // 5. Sparse part, sorted by packed coordinates.
  cells = buffer<sorting::KeyPosition>();
  {
    buffer<sorting::KeyPosition> scratch;
    sorting::radix_sort(sparse, scratch, 0, static_cast<int>(h.index_bits()), threads);
  }
  resize_named(h.s_val.get<T>(), sparse_nnz, [] { return std::string("HLS: the sparse part's values"); });
  resize_named(h.s_ind, sparse_nnz, [] { return std::string("HLS: the sparse part's packed coordinates"); });
  T* sval = h.s_val.get<T>().data();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t z = 0; z < int64_t(sparse_nnz); ++z) {
    sval[z] = val[sparse[z].position];
    h.s_ind[z] = sparse[z].key;
  }
  sparse = buffer<sorting::KeyPosition>();
  const buffer<uint64_t> rows =
      sparse_nnz == 0 ? buffer<uint64_t>(1, 0) : run_starts(sparse_nnz, threads, [&](uint64_t z) {
        return h.unpack(h.s_ind[z], 0) != h.unpack(h.s_ind[z - 1], 0);
      });
  h.s_row_ptr.assign(rows.begin(), rows.end());
  h.s_row.resize(rows.size() - 1);
  for (uint64_t r = 0; r + 1 < rows.size(); ++r) h.s_row[r] = h.unpack(h.s_ind[rows[r]], 0);
}

}  // namespace

void validate_params(const Params& p, uint32_t order) {
  require(p.root < order, "root_mode ", p.root, " is out of range for an order-", order, " tensor (0..", order - 1,
          ")");
  const uint32_t d = p.slab_depth;
  require(d == 0 || d == 1 || d == 2 || d == 4 || d == 8 || d == 16, "slab_depth must be 0 (default ",
          kDefaultSlabDepth, "), 1, 2, 4, 8 or 16, got ", d);
}

spt_hls_s from_coo(const spt_coo_s& x, const Params& params, int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  const uint32_t order = x.order();
  if (order != 3 && order != 4)
    fail(SPT_ERR_UNSUPPORTED, "HLS supports tensors of order 3 and 4 only (16x16x16 tiles; order 4 adds a slab ",
         "depth along the fourth mode), got order ", order);
  validate_params(params, order);
  threads = std::max(threads, 1);
  spt_hls_s h;
  h.dims = x.dims;
  h.input_nnz = x.nnz;
  h.modes.push_back(params.root);
  for (uint32_t m = 0; m < order; ++m)
    if (m != params.root) h.modes.push_back(m);
  h.slab_depth = order == 4 ? (params.slab_depth ? params.slab_depth : kDefaultSlabDepth) : 1;
  h.dense_threshold = params.dense_threshold ? params.dense_threshold : kDefaultThreshold * h.slab_depth;
  uint32_t total = 0;
  for (uint32_t l = 0; l < order; ++l) {
    const spt_index dim = x.dims[h.modes[l]];
    h.bits.push_back(dim <= 1 ? 0u : static_cast<uint32_t>(bit_width(uint64_t(dim) - 1)));
    h.shift.push_back(l < 3 ? kTileShift : static_cast<uint32_t>(bit_width(h.slab_depth) - 1));
    h.tile_bits.push_back(h.bits[l] > h.shift[l] ? h.bits[l] - h.shift[l] : 0);
    total += h.bits[l];
  }
  if (total > 64)
    fail(SPT_ERR_UNSUPPORTED, "HLS packs all coordinates into one 64-bit index: the dims need ", total,
         " bits (sum over the modes of the bits of dims[m]-1), at most 64 are supported");
  h.d_val.set_dtype(x.dtype());
  h.s_val.set_dtype(x.dtype());
  with_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    build<T>(x, h, threads);
  });
  h.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return h;
}

spt_coo_s to_coo(const spt_hls_s& h, int threads) {
  threads = std::max(threads, 1);
  const uint32_t order = h.order();
  spt_coo_s y;
  y.init_owned(h.dtype(), h.dims, h.nnz());
  const uint32_t W = h.words_per_tile();
  const uint64_t dense_nnz = h.dense_nnz();
  with_dtype(h.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* v = y.mutable_values<T>();
    std::vector<spt_index*> out(order);
    for (uint32_t l = 0; l < order; ++l) out[l] = y.mutable_ind(h.modes[l]);
    const T* dval = h.d_val.get<T>().data();
    const T* sval = h.s_val.get<T>().data();
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16)
    for (int64_t d = 0; d < int64_t(h.dense_tiles()); ++d) {
      uint32_t base[4] = {0, 0, 0, 0};
      for (uint32_t l = 0; l < order; ++l) base[l] = h.unpack_tile(h.d_tile[d], l) << h.shift[l];
      uint64_t k = h.d_val_ptr[d];
      const uint64_t* bm = h.d_bitmap.data() + uint64_t(d) * W;
      for (uint32_t wi = 0; wi < W; ++wi)
        for (uint64_t word = bm[wi]; word; word &= word - 1) {
          const uint32_t bit = wi * 64 + uint32_t(__builtin_ctzll(word));
          const uint32_t cell = bit % kCellsPerSubtile;
          out[0][k] = base[0] + (cell >> 8);
          out[1][k] = base[1] + ((cell >> 4) & 15u);
          out[2][k] = base[2] + (cell & 15u);
          if (order == 4) out[3][k] = base[3] + bit / kCellsPerSubtile;
          v[k] = dval[k];
          ++k;
        }
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t z = 0; z < int64_t(h.sparse_nnz()); ++z) {
      for (uint32_t l = 0; l < order; ++l) out[l][dense_nnz + z] = h.unpack(h.s_ind[z], l);
      v[dense_nnz + z] = sval[z];
    }
  });
  sorting::sort_in_place(Exec{threads}, y, h.modes);
  return y;
}

}  // namespace spt::hls

uint64_t spt_hls_s::bytes() const {
  auto vb = [](const auto& v) { return uint64_t(v.size()) * sizeof(typename std::decay_t<decltype(v)>::value_type); };
  const uint64_t value_size = dtype() == SPT_FLOAT32 ? 4 : 8;
  return vb(d_tile) + vb(d_bitmap) + vb(d_val_ptr) + vb(d_root_tile) + vb(d_root_ptr) + vb(s_ind) + vb(s_row) +
         vb(s_row_ptr) + value_size * (d_val.size() + s_val.size());
}
