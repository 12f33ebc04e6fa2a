#include "common/format_invariants.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace spt::fcoo {

void validate(const spt_fcoo_s& f) {
  const uint32_t order = f.order();
  require(order >= 2 && f.mode < order, "F-COO: bad order or mode");
  require(f.threadlen == 8 || f.threadlen == 16 || f.threadlen == 32, "F-COO: bad threadlen ", f.threadlen);
  require(f.index_modes.size() + f.product_modes.size() == order, "F-COO: modes do not add up to the order");
  require(f.product_ind.size() == f.product_modes.size(), "F-COO: one index array per product mode expected");
  require(f.val.size() == f.nnz, "F-COO: ", f.val.size(), " values for ", f.nnz, " nonzeros");
  require(f.bf.size() == (f.nnz + 31) / 32, "F-COO: bit-flag array has the wrong length");
  require(f.sf.size() == (f.partitions() + 31) / 32, "F-COO: start-flag array has the wrong length");
  require(f.group_first_segment.size() == f.groups(), "F-COO: group table has the wrong length");
  require(f.nnz == 0 || f.starts_segment(0), "F-COO: the first nonzero must start a segment");
  spt_nnz starts = 0;
  for (spt_nnz k = 0; k < f.nnz; ++k) starts += f.starts_segment(k) ? 1 : 0;
  require(starts == f.segments, "F-COO: ", starts, " flagged segment starts, ", f.segments, " segments recorded");
  for (spt_nnz p = 0; p < f.partitions(); ++p)
    require(((f.sf[p >> 5] >> (p & 31)) & 1u) == (f.starts_segment(p * f.threadlen) ? 1u : 0u),
            "F-COO: start flag of partition ", p, " disagrees with the bit flags");
  const spt_nnz group_nnz = spt_nnz(f.threadlen) * 32;
  spt_nnz segment = 0;  // segment of nonzero k: starts in (0, k]
  for (spt_nnz k = 0; k < f.nnz; ++k) {
    if (k > 0 && f.starts_segment(k)) ++segment;
    if (k % group_nnz == 0)
      require(f.group_first_segment[k / group_nnz] == segment, "F-COO: group ", k / group_nnz, " records segment ",
              f.group_first_segment[k / group_nnz], ", the flags say ", segment);
  }
  for (size_t j = 0; j < f.product_modes.size(); ++j)
    for (spt_nnz k = 0; k < f.nnz; ++k)
      require(f.product_ind[j][k] < f.dims[f.product_modes[j]], "F-COO: index out of range");
  for (size_t j = 0; j < f.index_modes.size(); ++j) {
    require(f.segment_ind[j].size() == f.segments, "F-COO: segment coordinates have the wrong length");
    for (spt_nnz s = 0; s < f.segments; ++s)
      require(f.segment_ind[j][s] < f.dims[f.index_modes[j]], "F-COO: segment coordinate out of range");
  }
  for (spt_nnz s = 1; s < f.segments; ++s) {
    bool increasing = false;
    for (size_t j = 0; j < f.index_modes.size(); ++j) {
      if (f.segment_ind[j][s] != f.segment_ind[j][s - 1]) {
        increasing = f.segment_ind[j][s] > f.segment_ind[j][s - 1];
        break;
      }
    }
    require(increasing, "F-COO: segment ", s, " does not follow segment ", s - 1, " in sorted order");
  }
}

}  // namespace spt::fcoo

namespace spt::hls {

void validate(const spt_hls_s& h) {
  const uint32_t order = h.order();
  require(order == 3 || order == 4, "order must be 3 or 4");
  require(h.modes.size() == order && h.bits.size() == order && h.tile_bits.size() == order, "level arrays");
  const uint32_t W = h.words_per_tile();
  const uint64_t dt = h.dense_tiles();
  require(h.d_bitmap.size() == dt * W, "d_bitmap size");
  require(h.d_val_ptr.size() == dt + 1 && h.d_val_ptr[0] == 0 && h.d_val_ptr[dt] == h.dense_nnz(), "d_val_ptr ends");
  for (uint64_t d = 0; d < dt; ++d) {
    if (d > 0) require(h.d_tile[d - 1] < h.d_tile[d], "dense tiles not strictly sorted at ", d);
    uint64_t pop = 0;
    for (uint32_t w = 0; w < W; ++w) pop += uint64_t(__builtin_popcountll(h.d_bitmap[d * W + w]));
    require(h.d_val_ptr[d + 1] - h.d_val_ptr[d] == pop, "dense tile ", d, ": ", pop, " bits set, ",
            h.d_val_ptr[d + 1] - h.d_val_ptr[d], " values");
    require(pop >= h.dense_threshold, "dense tile ", d, " has ", pop, " cells, under the threshold ",
            h.dense_threshold);
    for (uint32_t l = 0; l < order; ++l)
      require((uint64_t(h.unpack_tile(h.d_tile[d], l)) << h.shift[l]) < h.dims[h.modes[l]], "dense tile ", d,
              " out of range");
  }
  require(h.d_root_ptr.size() == h.d_root_tile.size() + 1 && h.d_root_ptr.front() == 0 && h.d_root_ptr.back() == dt,
          "d_root_ptr");
  uint32_t below_root = 0;
  for (uint32_t l = 1; l < order; ++l) below_root += h.tile_bits[l];
  for (uint64_t g = 0; g < h.d_root_tile.size(); ++g) {
    require(h.d_root_ptr[g] < h.d_root_ptr[g + 1], "empty root group ", g);
    for (uint64_t d = h.d_root_ptr[g]; d < h.d_root_ptr[g + 1]; ++d)
      require((below_root == 64 ? 0 : h.d_tile[d] >> below_root) == h.d_root_tile[g], "root group ", g, " mixes tiles");
  }
  // Sparse part: sorted, in range, outside dense tiles, in tiles under the threshold.
  std::vector<uint64_t> sparse_tile(h.sparse_nnz());
  std::vector<uint64_t> sparse_cell(h.sparse_nnz());
  for (uint64_t z = 0; z < h.sparse_nnz(); ++z) {
    if (z > 0) require(h.s_ind[z - 1] <= h.s_ind[z], "sparse part not sorted at ", z);
    uint64_t t = 0;
    for (uint32_t l = 0; l < order; ++l) {
      const uint32_t c = h.unpack(h.s_ind[z], l);
      require(c < h.dims[h.modes[l]], "sparse nonzero ", z, " out of range");
      t = (t << h.tile_bits[l]) | (c >> h.shift[l]);
    }
    require(!std::binary_search(h.d_tile.begin(), h.d_tile.end(), t), "sparse nonzero ", z, " lies in a dense tile");
    sparse_tile[z] = t;
    sparse_cell[z] = h.s_ind[z];
  }
  std::vector<std::pair<uint64_t, uint64_t>> tc(h.sparse_nnz());
  for (uint64_t z = 0; z < tc.size(); ++z) tc[z] = {sparse_tile[z], sparse_cell[z]};
  std::sort(tc.begin(), tc.end());
  tc.erase(std::unique(tc.begin(), tc.end()), tc.end());
  uint64_t sparse_tiles = 0;
  for (uint64_t i = 0; i < tc.size();) {
    uint64_t j = i;
    while (j < tc.size() && tc[j].first == tc[i].first) ++j;
    require(j - i < h.dense_threshold, "a sparse tile has ", j - i, " cells, at or over the threshold");
    ++sparse_tiles;
    i = j;
  }
  require(sparse_tiles + dt == h.tiles, "tile count: ", sparse_tiles, " sparse + ", dt, " dense != ", h.tiles);
  require(h.s_row_ptr.size() == h.s_row.size() + 1 && h.s_row_ptr.front() == 0 &&
              h.s_row_ptr.back() == h.sparse_nnz(),
          "s_row_ptr");
  for (uint64_t r = 0; r < h.s_row.size(); ++r) {
    require(h.s_row_ptr[r] < h.s_row_ptr[r + 1], "empty sparse row ", r);
    if (r > 0) require(h.s_row[r - 1] < h.s_row[r], "sparse rows not sorted");
    for (uint64_t z = h.s_row_ptr[r]; z < h.s_row_ptr[r + 1]; ++z)
      require(h.unpack(h.s_ind[z], 0) == h.s_row[r], "sparse row ", r, " holds a nonzero of another row");
  }
}

}  // namespace spt::hls

namespace spt::hbcsf {

void validate(const spt_hbcsf_s& h) {
  const uint32_t order = h.order();
  require(order >= 3 && h.mode_order.size() == order, "order/mode_order mismatch");
  const spt_index root_dim = h.dims[h.root()];
  auto check_ptr = [](const buffer<uint32_t>& p, spt_nnz entries, spt_nnz target, const char* what) {
    require(p.size() == entries + 1, what, ": ", p.size(), " pointers for ", entries, " entries");
    require(p.front() == 0 && p.back() == target, what, ": must run from 0 to ", target);
    for (size_t i = 0; i + 1 < p.size(); ++i) require(p[i] <= p[i + 1], what, ": not monotone at ", i);
  };
  auto check_ind = [&](const buffer<uint32_t>& ind, uint32_t level, const char* what) {
    for (uint32_t c : ind) require(c < h.dims[h.mode_order[level]], what, ": index ", c, " out of range");
  };
  require(h.coo_nnz() + h.csl_nnz() + h.bcsf_nnz() == h.nnz, "group nonzeros do not add up to nnz");
  std::vector<uint8_t> row_used(root_dim, 0);
  auto claim_row = [&](uint32_t r, const char* what) {
    require(r < root_dim, what, ": row ", r, " out of range");
    require(!row_used[r], what, ": row ", r, " is in two slices");
    row_used[r] = 1;
  };
  // COO.
  for (uint32_t l = 0; l < order; ++l) {
    require(h.coo_ind[l].size() == h.coo_nnz(), "coo_ind size");
    check_ind(h.coo_ind[l], l, "coo_ind");
  }
  for (uint32_t r : h.coo_ind[0]) claim_row(r, "COO group");
  // CSL.
  check_ptr(h.csl_slice_ptr, h.csl_slices(), h.csl_nnz(), "csl_slice_ptr");
  for (spt_nnz s = 0; s < h.csl_slices(); ++s) {
    claim_row(h.csl_slice_ind[s], "CSL group");
    require(h.csl_slice_ptr[s + 1] - h.csl_slice_ptr[s] >= 2, "CSL slice ", s, " has fewer than 2 nonzeros");
    require(h.csl_slice_ptr[s + 1] - h.csl_slice_ptr[s] <= h.params.slice_split_nnz, "CSL slice ", s,
            " is heavier than slice_split_nnz (belongs in B-CSF)");
  }
  for (uint32_t l = 1; l < order; ++l) check_ind(h.csl_ind[l - 1], l, "csl_ind");
  // B-CSF.
  check_ptr(h.bcsf_slice_ptr, h.bcsf_slices(), h.node_ind[0].size(), "bcsf_slice_ptr");
  for (uint32_t r : h.bcsf_slice_ind) claim_row(r, "B-CSF group");
  for (uint32_t l = 1; l <= order - 2; ++l) check_ind(h.node_ind[l - 1], l, "node_ind");
  for (uint32_t l = 1; l + 2 < order; ++l)
    check_ptr(h.node_ptr[l - 1], h.node_ind[l - 1].size(), h.node_ind[l].size(), "node_ptr");
  for (uint32_t l = 2; l <= order - 2; ++l) {
    require(h.node_parent[l - 2].size() == h.node_ind[l - 1].size(), "node_parent size");
    // The parent array must agree with the child pointers of the level above.
    for (spt_nnz p = 0; p < h.node_ind[l - 2].size(); ++p)
      for (spt_nnz c = h.node_ptr[l - 2][p]; c < h.node_ptr[l - 2][p + 1]; ++c)
        require(h.node_parent[l - 2][c] == p, "node_parent disagrees with node_ptr at level ", l);
  }
  check_ptr(h.segment_ptr, h.node_ind[order - 3].size(), h.bcsf_nnz(), "segment_ptr");
  check_ind(h.leaf_ind, order - 1, "leaf_ind");
  for (spt_nnz g = 0; g < h.segments(); ++g) {
    const uint32_t len = h.segment_ptr[g + 1] - h.segment_ptr[g];
    require(len >= 1 && len <= h.params.fiber_threshold, "segment ", g, " has ", len, " leaves (threshold ",
            h.params.fiber_threshold, ")");
  }
  // Units: consecutive ranges of segments within one slice.
  check_ptr(h.unit_segment_ptr, h.units(), h.segments(), "unit_segment_ptr");
  require(h.unit_split.size() == h.units(), "unit_split size");
  // The slice of each segment, from the tree.
  std::vector<uint32_t> segment_slice(h.segments());
  {
    std::vector<uint32_t> level_slice(h.node_ind[0].size());
    for (spt_nnz s = 0; s < h.bcsf_slices(); ++s)
      for (spt_nnz n = h.bcsf_slice_ptr[s]; n < h.bcsf_slice_ptr[s + 1]; ++n) level_slice[n] = uint32_t(s);
    for (uint32_t l = 2; l <= order - 2; ++l) {
      std::vector<uint32_t> next(h.node_ind[l - 1].size());
      for (spt_nnz n = 0; n < next.size(); ++n) next[n] = level_slice[h.node_parent[l - 2][n]];
      level_slice.swap(next);
    }
    segment_slice.assign(level_slice.begin(), level_slice.end());
  }
  for (spt_nnz u = 0; u < h.units(); ++u) {
    const uint32_t b = h.unit_segment_ptr[u], e = h.unit_segment_ptr[u + 1];
    require(e > b, "unit ", u, " is empty");
    for (uint32_t g = b; g < e; ++g)
      require(h.bcsf_slice_ind[segment_slice[g]] == h.unit_row[u], "unit ", u, " crosses a slice boundary");
    const uint32_t nz = h.segment_ptr[e] - h.segment_ptr[b];
    require(e - b == 1 || nz <= h.params.slice_split_nnz, "unit ", u, " has ", nz, " nonzeros over the limit");
    const bool shares = (u > 0 && h.unit_row[u - 1] == h.unit_row[u]) ||
                        (u + 1 < h.units() && h.unit_row[u + 1] == h.unit_row[u]);
    require(h.unit_split[u] == (shares ? 1 : 0), "unit_split[", u, "] is wrong");
  }
  require(h.bins() >= 1, "no bins");
  check_ptr(h.bin_ptr, h.bins(), h.units(), "bin_ptr");
  std::vector<uint8_t> seen(h.units(), 0);
  for (uint32_t u : h.bin_units) {
    require(u < h.units() && !seen[u], "bin_units is not a permutation");
    seen[u] = 1;
  }
  // HB partition: every slice in the right group.
  if (!(h.params.flags & SPT_HBCSF_PLAIN_BCSF)) {
    // A B-CSF slice must have a fiber with >= 2 leaves: some segment of it
    // has >= 2 leaves, or a fiber was split (consecutive segments with the
    // same coordinate and parent).
    std::vector<uint8_t> has_long(h.bcsf_slices(), 0);
    for (spt_nnz g = 0; g < h.segments(); ++g)
      if (h.segment_ptr[g + 1] - h.segment_ptr[g] >= 2) has_long[segment_slice[g]] = 1;
    for (spt_nnz g = 1; g < h.segments(); ++g) {
      const uint32_t fl = order - 3;
      const bool same_parent = order == 3 ? segment_slice[g] == segment_slice[g - 1]
                                          : h.node_parent[order - 4][g] == h.node_parent[order - 4][g - 1];
      if (same_parent && h.node_ind[fl][g] == h.node_ind[fl][g - 1]) has_long[segment_slice[g]] = 1;
    }
    std::vector<spt_nnz> slice_nnz(h.bcsf_slices(), 0);
    for (spt_nnz g = 0; g < h.segments(); ++g) slice_nnz[segment_slice[g]] += h.segment_ptr[g + 1] - h.segment_ptr[g];
    for (spt_nnz s = 0; s < h.bcsf_slices(); ++s)
      require(has_long[s] || slice_nnz[s] > h.params.slice_split_nnz, "B-CSF slice ", s,
              " has only singleton fibers and fits one unit (belongs in COO or CSL)");
  }
}

}  // namespace spt::hbcsf
