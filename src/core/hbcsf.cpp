// Building, decoding and validating B-CSF / HB-CSF (layout: hbcsf.hpp).
//
// Construction sorts a copy of the tensor in the level order (root first,
// then the other modes by increasing length), finds the slice and fiber
// boundaries in parallel, classifies each slice (COO: one nonzero; CSL:
// every fiber one nonzero; B-CSF: the rest) and then appends each slice to
// its group in one sequential pass (the groups' arrays are prefix-ordered,
// so a parallel fill would need a counting pass per group first; the sort
// dominates anyway).
#include "core/hbcsf.hpp"

#include <omp.h>

#include <algorithm>
#include <limits>
#include <new>

#include "core/coo.hpp"
#include "core/csf.hpp"
#include "core/error.hpp"
#include "core/sort.hpp"

namespace spt::hbcsf {

namespace {

enum class Group : uint8_t { coo, csl, bcsf };

template <typename V>
uint64_t vec_bytes(const V& v) {
  return uint64_t(v.size()) * sizeof(typename V::value_type);
}

template <typename T>
struct Builder {
  const spt_coo_s& x;  // sorted in h.mode_order
  spt_hbcsf_s& h;
  int threads;

  uint32_t N() const { return h.order(); }
  uint32_t coord(spt_nnz k, uint32_t level) const { return x.ind[h.mode_order[level]][k]; }

  void run() {
    const spt_nnz n = x.nnz;
    const uint32_t order = N();
    const T* val = x.values<T>();
    // first_change[k]: the first level whose coordinate differs from
    // nonzero k-1 (0 for k = 0, `order` for a repeated coordinate).
    buffer<uint8_t> first_change(n);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t k = 0; k < int64_t(n); ++k) {
      uint32_t l = 0;
      if (k > 0)
        while (l < order && coord(k, l) == coord(k - 1, l)) ++l;
      first_change[k] = static_cast<uint8_t>(l);
    }
    const uint32_t fiber_level = order - 2;  // a change at a level <= this starts a new fiber
    // Slices: [slice_start[s], slice_start[s+1]).
    std::vector<spt_nnz> slice_start;
    for (spt_nnz k = 0; k < n; ++k)
      if (first_change[k] == 0) slice_start.push_back(k);
    slice_start.push_back(n);
    const spt_nnz slices = slice_start.size() - 1;
    std::vector<Group> group(slices);
    const bool plain = (h.params.flags & SPT_HBCSF_PLAIN_BCSF) != 0;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t s = 0; s < int64_t(slices); ++s) {
      const spt_nnz b = slice_start[s], e = slice_start[s + 1];
      bool singleton_fibers = true;
      for (spt_nnz k = b + 1; k < e && singleton_fibers; ++k)
        if (first_change[k] > fiber_level) singleton_fibers = false;
      // A CSL slice is one GPU task; one heavier than a work unit goes to
      // B-CSF instead, where slice splitting spreads it over thread blocks.
      const bool fits_one_task = e - b <= h.params.slice_split_nnz;
      group[s] = plain                                ? Group::bcsf
                 : e - b == 1                         ? Group::coo
                 : singleton_fibers && fits_one_task ? Group::csl
                                                      : Group::bcsf;
    }

    h.coo_ind.assign(order, {});
    h.csl_ind.assign(order - 1, {});
    h.node_ind.assign(order - 2, {});
    h.node_ptr.assign(order - 3, {});
    h.node_parent.assign(order - 3, {});
    auto& coo_val = h.coo_val.get<T>();
    auto& csl_val = h.csl_val.get<T>();
    auto& bcsf_val = h.bcsf_val.get<T>();
    std::vector<spt_nnz> slice_first_segment;  // per B-CSF slice, + 1 at the end

    for (spt_nnz s = 0; s < slices; ++s) {
      const spt_nnz b = slice_start[s], e = slice_start[s + 1];
      if (group[s] == Group::coo) {
        for (uint32_t l = 0; l < order; ++l) h.coo_ind[l].push_back(coord(b, l));
        coo_val.push_back(val[b]);
      } else if (group[s] == Group::csl) {
        h.csl_slice_ind.push_back(coord(b, 0));
        h.csl_slice_ptr.push_back(static_cast<uint32_t>(csl_val.size()));
        for (spt_nnz k = b; k < e; ++k) {
          for (uint32_t l = 1; l < order; ++l) h.csl_ind[l - 1].push_back(coord(k, l));
          csl_val.push_back(val[k]);
        }
      } else {
        append_bcsf_slice(b, e, first_change, val, bcsf_val, slice_first_segment);
      }
    }
    h.csl_slice_ptr.push_back(static_cast<uint32_t>(csl_val.size()));
    h.bcsf_slice_ptr.push_back(static_cast<uint32_t>(h.node_ind[0].size()));
    for (uint32_t l = 1; l + 2 < order; ++l) h.node_ptr[l - 1].push_back(static_cast<uint32_t>(h.node_ind[l].size()));
    h.segment_ptr.push_back(static_cast<uint32_t>(bcsf_val.size()));
    slice_first_segment.push_back(h.segments());
    make_units(slice_first_segment);
  }

  // Append the nonzeros [b, e) (one slice) to the B-CSF group.
  void append_bcsf_slice(spt_nnz b, spt_nnz e, const buffer<uint8_t>& first_change, const T* val,
                         buffer<T>& bcsf_val, std::vector<spt_nnz>& slice_first_segment) {
    const uint32_t order = N();
    const uint32_t fiber_level = order - 2;
    const uint32_t threshold = h.params.fiber_threshold;
    h.bcsf_slice_ind.push_back(coord(b, 0));
    h.bcsf_slice_ptr.push_back(static_cast<uint32_t>(h.node_ind[0].size()));
    slice_first_segment.push_back(h.segment_ptr.size());  // segments opened so far
    uint32_t segment_length = 0;
    bool fiber_split = false;
    for (spt_nnz k = b; k < e; ++k) {
      const uint32_t d = k == b ? 1 : std::max<uint32_t>(first_change[k], 1);
      if (d <= fiber_level) {
        // New nodes at levels d..N-2 (a new fiber and its new ancestors).
        for (uint32_t l = d; l <= fiber_level; ++l) open_node(l, coord(k, l));
        h.bcsf_fibers++;
        segment_length = 0;
        fiber_split = false;
      } else if (segment_length == threshold) {
        // Same fiber, segment full: a new segment of the same fiber (same coordinate, same parent).
        open_node(fiber_level, coord(k, fiber_level));
        segment_length = 0;
        if (!fiber_split) h.split_fibers++;
        fiber_split = true;
      }
      h.leaf_ind.push_back(coord(k, order - 1));
      bcsf_val.push_back(val[k]);
      ++segment_length;
    }
  }

  // Append a node with coordinate c at `level` (1..N-2) under the last node of level-1.
  void open_node(uint32_t level, uint32_t c) {
    const uint32_t order = N();
    h.node_ind[level - 1].push_back(c);
    if (level + 2 < order) h.node_ptr[level - 1].push_back(static_cast<uint32_t>(h.node_ind[level].size()));
    if (level >= 2) h.node_parent[level - 2].push_back(static_cast<uint32_t>(h.node_ind[level - 2].size() - 1));
    if (level == order - 2) h.segment_ptr.push_back(static_cast<uint32_t>(h.bcsf_val.size()));
  }

  // Cut each B-CSF slice into units of whole segments of at most
  // slice_split_nnz leaves (at least one segment each), and bin them.
  void make_units(const std::vector<spt_nnz>& slice_first_segment) {
    const spt_nnz limit = h.params.slice_split_nnz;
    h.unit_segment_ptr.clear();
    for (spt_nnz s = 0; s + 1 < slice_first_segment.size(); ++s) {
      const spt_nnz first = slice_first_segment[s], last = slice_first_segment[s + 1];
      const size_t units_before = h.unit_row.size();
      spt_nnz unit_begin = first;
      for (spt_nnz g = first; g < last; ++g) {
        const spt_nnz with_g = h.segment_ptr[g + 1] - h.segment_ptr[unit_begin];
        if (g > unit_begin && with_g > limit) {
          h.unit_row.push_back(h.bcsf_slice_ind[s]);
          h.unit_segment_ptr.push_back(static_cast<uint32_t>(unit_begin));
          unit_begin = g;
        }
      }
      h.unit_row.push_back(h.bcsf_slice_ind[s]);
      h.unit_segment_ptr.push_back(static_cast<uint32_t>(unit_begin));
      const bool split = h.unit_row.size() - units_before > 1;
      if (split) h.split_slices++;
      h.unit_split.resize(h.unit_row.size(), split ? 1 : 0);
    }
    h.unit_segment_ptr.push_back(static_cast<uint32_t>(h.segments()));

    // Bins: limits min, 2 min, 4 min, ... below slice_split_nnz, then the rest.
    std::vector<uint64_t> limits;
    for (uint64_t lim = h.params.slice_bin_min_nnz; lim < limit; lim *= 2) limits.push_back(lim);
    const uint32_t bins = static_cast<uint32_t>(limits.size() + 1);
    const spt_nnz units = h.unit_row.size();
    std::vector<uint32_t> bin_of(units);
    std::vector<uint32_t> count(bins, 0);
    for (spt_nnz u = 0; u < units; ++u) {
      const uint64_t nz = h.segment_ptr[h.unit_segment_ptr[u + 1]] - h.segment_ptr[h.unit_segment_ptr[u]];
      const uint32_t bin =
          static_cast<uint32_t>(std::lower_bound(limits.begin(), limits.end(), nz) - limits.begin());
      bin_of[u] = bin;
      count[bin]++;
    }
    h.bin_ptr.assign(bins + 1, 0);
    for (uint32_t b = 0; b < bins; ++b) h.bin_ptr[b + 1] = h.bin_ptr[b] + count[b];
    h.bin_units.resize(units);
    std::vector<uint32_t> fill(h.bin_ptr.begin(), h.bin_ptr.end() - 1);
    for (spt_nnz u = 0; u < units; ++u) h.bin_units[fill[bin_of[u]]++] = static_cast<uint32_t>(u);
  }

};

}  // namespace

void validate_params(const Params& p) {
  require(p.fiber_threshold >= 1, "fiber_threshold must be >= 1");
  require(p.slice_split_nnz >= 1, "slice_split_nnz must be >= 1");
  require(p.slice_bin_min_nnz >= 1 && (p.slice_bin_min_nnz & (p.slice_bin_min_nnz - 1)) == 0,
          "slice_bin_min_nnz must be a power of two, got ", p.slice_bin_min_nnz);
  require((p.flags & ~uint32_t(SPT_HBCSF_PLAIN_BCSF)) == 0, "flags has unknown bits set: ", p.flags,
          " (only SPT_HBCSF_PLAIN_BCSF = 1 is defined)");
}

spt_hbcsf_s from_coo(const spt_coo_s& x, uint32_t root, const Params& params, int threads) {
  const uint32_t order = x.order();
  if (order < 3)
    fail(SPT_ERR_UNSUPPORTED, "B-CSF / HB-CSF needs a tensor of order >= 3, got order ", order,
         " (use spt_csf or spt_hicoo for matrices)");
  require(root < order, "mode ", root, " is out of range for an order-", order, " tensor (0..", order - 1, ")");
  if (x.nnz >= (spt_nnz(1) << 32))
    fail(SPT_ERR_UNSUPPORTED, "B-CSF / HB-CSF uses 32-bit offsets: the tensor has ", x.nnz,
         " nonzeros (at most 2^32 - 1 are supported)");
  if (order > 255) fail(SPT_ERR_UNSUPPORTED, "B-CSF / HB-CSF supports orders up to 255, got ", order);
  validate_params(params);
  const Exec exec{std::max(threads, 1)};
  spt_hbcsf_s h;
  h.dims = x.dims;
  h.nnz = x.nnz;
  h.params = params;
  h.mode_order = csf_mode_order(x.dims, root);
  h.coo_val.set_dtype(x.dtype());
  h.csl_val.set_dtype(x.dtype());
  h.bcsf_val.set_dtype(x.dtype());
  const sorting::SortedView sorted(exec, x, h.mode_order);
  // The groups' arrays grow as the slices are classified (their sizes are
  // not known up front): a failed allocation names the structure and what
  // its arrays hold in all.
  try {
    with_dtype(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Builder<T>{sorted.get(), h, exec.threads}.run();
    });
  } catch (const std::bad_alloc&) {
    fail(SPT_ERR_OUT_OF_MEMORY, "out of memory for HB-CSF: the index and value arrays of ", grouped(x.nnz),
         " nonzeros (about ", human_bytes(double(x.nnz) * (4.0 * order + dtype_size(x.dtype()))),
         "); free memory or use a smaller problem");
  }
  h.coo_val.shrink_to_fit();
  h.csl_val.shrink_to_fit();
  h.bcsf_val.shrink_to_fit();
  return h;
}

spt_coo_s to_coo(const spt_hbcsf_s& h, int threads) {
  const uint32_t order = h.order();
  spt_coo_s y;
  y.init_owned(h.dtype(), h.dims, h.nnz);
  with_dtype(h.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* v = y.mutable_values<T>();
    auto put = [&](spt_nnz k, uint32_t level, uint32_t c) { y.mutable_ind(h.mode_order[level])[k] = c; };
    spt_nnz k = 0;
    for (spt_nnz z = 0; z < h.coo_nnz(); ++z, ++k) {
      for (uint32_t l = 0; l < order; ++l) put(k, l, h.coo_ind[l][z]);
      v[k] = h.coo_val.get<T>()[z];
    }
    for (spt_nnz s = 0; s < h.csl_slices(); ++s)
      for (spt_nnz z = h.csl_slice_ptr[s]; z < h.csl_slice_ptr[s + 1]; ++z, ++k) {
        put(k, 0, h.csl_slice_ind[s]);
        for (uint32_t l = 1; l < order; ++l) put(k, l, h.csl_ind[l - 1][z]);
        v[k] = h.csl_val.get<T>()[z];
      }
    // B-CSF: walk units -> segments -> leaves, climbing the parent arrays
    // exactly as a GPU warp does.
    for (spt_nnz u = 0; u < h.units(); ++u)
      for (spt_nnz g = h.unit_segment_ptr[u]; g < h.unit_segment_ptr[u + 1]; ++g)
        for (spt_nnz z = h.segment_ptr[g]; z < h.segment_ptr[g + 1]; ++z, ++k) {
          put(k, 0, h.unit_row[u]);
          spt_nnz node = g;
          for (uint32_t l = order - 2; l >= 1; --l) {
            put(k, l, h.node_ind[l - 1][node]);
            if (l >= 2) node = h.node_parent[l - 2][node];
          }
          put(k, order - 1, h.leaf_ind[z]);
          v[k] = h.bcsf_val.get<T>()[z];
        }
    require(k == h.nnz, "internal: HB-CSF decoded ", k, " nonzeros, expected ", h.nnz);
  });
  sorting::sort_in_place(Exec{std::max(threads, 1)}, y, h.mode_order);
  return y;
}

}  // namespace spt::hbcsf

uint64_t spt_hbcsf_s::bytes() const {
  using spt::hbcsf::vec_bytes;
  uint64_t b = 0;
  for (const auto& a : coo_ind) b += vec_bytes(a);
  for (const auto& a : csl_ind) b += vec_bytes(a);
  for (const auto& a : node_ind) b += vec_bytes(a);
  for (const auto& a : node_ptr) b += vec_bytes(a);
  for (const auto& a : node_parent) b += vec_bytes(a);
  b += vec_bytes(csl_slice_ind) + vec_bytes(csl_slice_ptr) + vec_bytes(bcsf_slice_ind) + vec_bytes(bcsf_slice_ptr) +
       vec_bytes(segment_ptr) + vec_bytes(leaf_ind) + vec_bytes(unit_row) + vec_bytes(unit_segment_ptr) +
       vec_bytes(unit_split) + vec_bytes(bin_ptr) + vec_bytes(bin_units);
  const uint64_t value_size = dtype() == SPT_FLOAT32 ? 4 : 8;
  b += value_size * (coo_val.size() + csl_val.size() + bcsf_val.size());
  return b;
}
